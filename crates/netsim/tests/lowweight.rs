//! The low-weight multi-sender controller and the ACK-less pgmcc variant (issue 10,
//! docs/lowweight.md) on the 4-sender whiteboard and on Fig. 5's topology.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

use netsim::run::{mean_between, run, FlowResult, Summary};
use netsim::scenario::parse;

fn counter(c: &[(&str, f64)], key: &str) -> f64 {
    c.iter()
        .find(|(k, _)| *k == key)
        .map_or(f64::NAN, |(_, v)| *v)
}

/// `base` (a file under scenarios/) with `extra` set on every PGM flow, run for `duration`.
fn run_with(base: &str, extra: &str, duration: &str) -> Summary {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(base);
    // The file names the published preset; each test chooses its own controller.
    let src = std::fs::read_to_string(&path)
        .unwrap()
        .replace("cc = \"pgmcc-paper\"\n", "");
    let src = src
        .replace("kind = \"pgmcc\"", &format!("kind = \"pgmcc\"\n{extra}"))
        .replace("duration = \"300s\"", &format!("duration = \"{duration}\""));
    let mut sc = parse(&path.display().to_string(), &src, "x", None).unwrap();
    let s = run(&mut sc, |_| {});
    assert_eq!(s.spins, 0, "{base} {extra}: the livelock guard fired");
    for f in &s.flows {
        eprintln!(
            "{} {:.1} kbit/s {:?}",
            f.name,
            f.mean_kbps,
            f.report.counters()
        );
        for r in &f.receivers {
            eprintln!("  {} {:?}", r.node, r.report.counters());
        }
    }
    s
}

fn no_acks_anywhere(s: &Summary) {
    for f in s.flows.iter().filter(|f| f.kind == "pgmcc") {
        for r in &f.receivers {
            assert_eq!(
                counter(&r.report.counters(), "acks_sent"),
                0.0,
                "{} {}",
                f.name,
                r.node
            );
        }
        assert_eq!(counter(&f.report.counters(), "acks"), 0.0, "{}", f.name);
        assert!(
            counter(&f.report.counters(), "loss_events") > 0.0,
            "{}",
            f.name
        );
    }
}

#[test]
fn whiteboard_four_low_weight_senders_share_with_tcp_and_never_ack() {
    let s = run_with("compare/whiteboard.toml", "cc = \"lowweight\"", "200s");
    no_acks_anywhere(&s);
    let phase = |f: &FlowResult| mean_between(&s, &f.series_kbps, 70.0, 200.0);
    let senders: Vec<f64> = s.flows[..4].iter().map(phase).collect();
    let tcp = phase(&s.flows[4]);
    let mean = senders.iter().sum::<f64>() / 4.0;
    eprintln!("senders {senders:?} tcp {tcp:.0} f = {:.2}", tcp / mean);
    // Each sender reacts on its own and they end up alike (measured 48-68 kbit/s, seed 1).
    for &x in &senders {
        assert!(x > 0.5 * mean && x < 1.6 * mean, "{senders:?}");
    }
    // TCP-friendly to the Reno flow: measured f = 1.6; neither side starves.
    assert!(
        tcp / mean > 0.5 && tcp / mean < 3.0,
        "tcp {tcp}, senders {senders:?}"
    );
    // The worst receivers NAKed as quick NAKers.
    let quick: f64 = s.flows[..4]
        .iter()
        .flat_map(|f| &f.receivers)
        .map(|r| counter(&r.report.counters(), "quick_nak_gaps"))
        .sum();
    assert!(quick > 100.0, "{quick}");
}

#[test]
fn fig5_low_weight_and_ackless_follow_the_bottleneck_without_acks() {
    for cc in ["lowweight", "pgmcc-ackless"] {
        let s = run_with("fig5.toml", &format!("cc = \"{cc}\""), "300s");
        no_acks_anywhere(&s);
        let (ctl, tcp) = (&s.flows[0], &s.flows[1]);
        let phase = |f: &FlowResult, a, b| mean_between(&s, &f.series_kbps, a, b);
        let (p1, p2, p3, p4) = (
            phase(ctl, 10.0, 60.0),
            phase(ctl, 70.0, 120.0),
            phase(ctl, 130.0, 240.0),
            phase(ctl, 250.0, 300.0),
        );
        let t3 = phase(tcp, 130.0, 240.0);
        eprintln!(
            "{cc}: {p1:.0} {p2:.0} {p3:.0} {p4:.0} tcp {t3:.0} f {:.2}",
            t3 / p3
        );
        // Alone on L2 (500 kbit/s), then on L1 (400) once PR1 joins; measured 425/347 and
        // 371/318 (payload rates).
        assert!((300.0..=500.0).contains(&p1), "{cc} {p1}");
        assert!((220.0..=400.0).contains(&p2), "{cc} {p2}");
        assert!((220.0..=400.0).contains(&p4), "{cc} {p4}");
        // With TCP on L2: measured f = 1.60 and 1.80.
        assert!((0.7..=3.0).contains(&(t3 / p3)), "{cc}: pgm {p3}, tcp {t3}");
    }
}

#[test]
fn floor_and_ceiling_hold_the_session_rate() {
    let s = run_with(
        "fig5.toml",
        "cc = \"lowweight\"\nrate_ceiling = \"200kbit\"",
        "300s",
    );
    let ctl = &s.flows[0];
    let p1 = mean_between(&s, &ctl.series_kbps, 10.0, 60.0);
    // 200 kbit/s of payload when the network would give 400-500.
    assert!((180.0..=205.0).contains(&p1), "{p1}");
    let s = run_with(
        "fig5.toml",
        "cc = \"lowweight\"\nrate_floor = \"300kbit\"",
        "300s",
    );
    let (ctl, tcp) = (&s.flows[0], &s.flows[1]);
    let p3 = mean_between(&s, &ctl.series_kbps, 130.0, 240.0);
    let t3 = mean_between(&s, &tcp.series_kbps, 130.0, 240.0);
    // Against TCP it would drop to ~180; the floor keeps data and repairs at 300 kbit/s of
    // payload (measured 284 of data).
    assert!(p3 > 250.0 && t3 < p3, "pgm {p3}, tcp {t3}");
}

#[test]
fn low_weight_knobs_are_checked() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fig5.toml");
    // The file names the published preset; each test chooses its own controller.
    let src = std::fs::read_to_string(&path)
        .unwrap()
        .replace("cc = \"pgmcc-paper\"\n", "");
    let with = |extra: &str| {
        parse(
            "x.toml",
            &src.replace("kind = \"pgmcc\"", &format!("kind = \"pgmcc\"\n{extra}")),
            "x",
            None,
        )
        .err()
        .map(|e| e.to_string())
    };
    assert!(
        with("cc = \"lowweight\"\nrate_floor = \"10kbit\"\nrate_ceiling = \"1Mbit\"").is_none()
    );
    // fig5.toml sets pgmcc's switch bias c = 0.75: the worst-receiver selection takes it.
    assert!(with("cc = \"pgmcc-ackless\"").is_none());
    let e = parse(
        "x.toml",
        &src.replace("kind = \"pgmcc\"", "kind = \"pgmcc\"\ncc = \"lowweight\"")
            .replace("c = 0.75", "c = 1.5"),
        "x",
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("flow.c"), "{e}");
    let e = with("cc = \"pgmcc\"\nrate_floor = \"10kbit\"").unwrap();
    assert!(e.contains("only for cc = \"lowweight\""), "{e}");
    let e = with("cc = \"lowweight\"\nrate_floor = \"1Mbit\"\nrate_ceiling = \"10kbit\"").unwrap();
    assert!(e.contains("above rate_ceiling"), "{e}");
    let e = with("cc = \"lowweight\"\nrate_ceiling = \"fast\"").unwrap();
    assert!(e.contains("flow.rate_ceiling"), "{e}");
    let e = with("cc = \"pgmcc-ackless\"\naccounting = \"pipe\"").unwrap();
    assert!(e.contains("not for cc = \"pgmcc-ackless\""), "{e}");
    let e = with("cc = \"lowweight\"\nrate_floor = \"1bit\"").unwrap();
    assert!(e.contains("packets per second"), "{e}");
    let e = with("cc = \"lowish\"").unwrap();
    assert!(e.contains("lowweight"), "{e}");
}
