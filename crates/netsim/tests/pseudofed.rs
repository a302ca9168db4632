//! Pseudofed's representative-based controller (issue 10) on Fig. 5's topology and on the
//! paper's own two-node 128 kbit/s experiment.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

use netsim::run::{mean_between, run, FlowResult, Summary};
use netsim::scenario::load;

fn counter(c: &[(&str, f64)], key: &str) -> f64 {
    c.iter()
        .find(|(k, _)| *k == key)
        .map_or(f64::NAN, |(_, v)| *v)
}

fn link_drops(s: &Summary, from: &str, to: &str) -> u64 {
    s.links
        .iter()
        .find(|l| l.from == from && l.to == to)
        .map(|l| l.queue_drops)
        .unwrap()
}

fn show(s: &Summary) {
    for f in &s.flows {
        eprintln!(
            "{} mean {:.1} kbit/s bytes {} counters {:?}",
            f.name,
            f.mean_kbps,
            f.bytes,
            f.report.counters()
        );
        for r in &f.receivers {
            eprintln!(
                "  rx {} {:.1} kbit/s {} B {:?}",
                r.node,
                r.mean_kbps,
                r.bytes,
                r.report.counters()
            );
        }
        let sw: Vec<(f64, &str)> = f
            .acker_switches
            .iter()
            .map(|a| (a.t, a.to.as_str()))
            .collect();
        eprintln!("  switches {sw:?}");
    }
    for l in &s.links {
        eprintln!(
            "link {}->{} util {:.2} drops {}",
            l.from, l.to, l.utilisation, l.queue_drops
        );
    }
}

#[test]
fn pseudofed_fig5_shares_with_tcp_and_representatives_follow_congestion() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/compare/fig5-pseudofed.toml");
    let mut sc = load(&path, None).unwrap();
    let s = run(&mut sc, |_| {});
    show(&s);
    let pf = &s.flows[0];
    let tcp = &s.flows[1];
    let phase = |f: &FlowResult, a, b| mean_between(&s, &f.series_kbps, a, b);
    let (p1, p2, p3, p4) = (
        phase(pf, 10.0, 60.0),
        phase(pf, 70.0, 120.0),
        phase(pf, 130.0, 240.0),
        phase(pf, 250.0, 300.0),
    );
    let t3 = phase(tcp, 130.0, 240.0);
    let f = t3 / p3;
    eprintln!("pseudofed {p1:.0} {p2:.0} {p3:.0} {p4:.0} tcp {t3:.0} f = TCP/Pseudofed = {f:.2}");
    // Alone it finds L2's capacity (475 kbit/s of payload), then L1's (380) once PR1 joins.
    assert!((350.0..=500.0).contains(&p1), "{p1}");
    assert!((250.0..=400.0).contains(&p2), "{p2}");
    assert!((250.0..=400.0).contains(&p4), "{p4}");
    // Against TCP Reno this delay-based controller yields most of L2 but is not starved:
    // measured f = 7.05 (seed 1); the bound is 1 <= f <= 15 with Pseudofed above 20 kbit/s.
    assert!(p3 > 20.0 && t3 > 200.0, "pseudofed {p3}, tcp {t3}");
    assert!((1.0..=15.0).contains(&f), "f = {f}");
    // Representatives: PR2 (10.0.0.6), the only receiver, first; PR1 (10.0.0.5, behind the
    // slower L1) joins the set through a CI soon after it joins the group at 60 s.
    let reps: Vec<(f64, &str)> = pf
        .acker_switches
        .iter()
        .map(|a| (a.t, a.to.as_str()))
        .collect();
    assert!(
        reps.first().is_some_and(|r| r.0 < 5.0 && r.1 == "10.0.0.6"),
        "{reps:?}"
    );
    assert!(
        reps.iter()
            .any(|r| r.0 > 60.0 && r.0 < 75.0 && r.1 == "10.0.0.5"),
        "{reps:?}"
    );
    // Reliable delivery: nothing unrecoverable, PR2 has everything but the last packets in
    // flight.
    for r in &pf.receivers {
        assert_eq!(
            counter(&r.report.counters(), "unrecoverable_sqns"),
            0.0,
            "{}",
            r.node
        );
        assert!(r.bytes > 0, "{}", r.node);
    }
    assert!(pf.receivers[0].bytes as f64 >= 0.99 * pf.bytes as f64);
}

/// The paper's two-node experiment (§4.2, Fig. 3, Table 1): one 128 kbit/s link, Pseudofed
/// alone, TCP alone, and both together. Link delay, queue and packet size are not given in
/// the paper: ours are 20 ms, 15 packets, 512-byte payloads.
fn two_node(pseudofed: bool, tcp: bool) -> Summary {
    let mut src = String::from(
        r#"
name = "pseudofed-two-node"
seed = 1
duration = "300s"
sample = "1s"
[[node]]
name = "S"
[[node]]
name = "D"
[[link]]
from = "S"
to = "D"
rate = "128kbit"
delay = "20ms"
queue = "15p"
"#,
    );
    if pseudofed {
        src.push_str(
            r#"
[[flow]]
name = "pseudofed"
kind = "pgmcc"
cc = "pseudofed"
rate_min = "8kbit"
from = "S"
payload = 512
[[flow.receiver]]
node = "D"
join = "0s"
"#,
        );
    }
    if tcp {
        src.push_str(
            r#"
[[flow]]
name = "tcp"
kind = "tcp-reno"
from = "S"
to = "D"
payload = 512
"#,
        );
    }
    let mut sc = netsim::scenario::parse("two-node.toml", &src, "two-node", None).unwrap();
    run(&mut sc, |_| {})
}

#[test]
fn pseudofed_two_node_table1() {
    let alone = two_node(true, false);
    let tcp_alone = two_node(false, true);
    let both = two_node(true, true);
    show(&alone);
    show(&both);
    let pf_alone = alone.flows[0].mean_kbps;
    let tcp_only = tcp_alone.flows[0].mean_kbps;
    let (pf_both, tcp_both) = (both.flows[0].mean_kbps, both.flows[1].mean_kbps);
    eprintln!("two-node: pseudofed alone {pf_alone:.1}, tcp alone {tcp_only:.1}, combined pseudofed {pf_both:.1} tcp {tcp_both:.1} kbit/s");
    // Table 1, alone: close to the link (paper 123 of 128 kbit/s) with no drop at all. Ours:
    // 100 kbit/s of payload, 0 drops (the rate stays where 1..3 packets are queued).
    assert!(pf_alone > 85.0, "{pf_alone}");
    assert_eq!(link_drops(&alone, "S", "D"), 0);
    assert!(tcp_only > 100.0, "{tcp_only}");
    // Combined: Pseudofed relinquishes bandwidth and TCP takes the larger share (paper:
    // 48.7 against 83.7 kbit/s; ours 25.7 against 81.8), without starving either.
    assert!(pf_both < 0.5 * pf_alone, "{pf_both}");
    assert!(pf_both > 10.0, "{pf_both}");
    assert!(tcp_both > pf_both, "{tcp_both} vs {pf_both}");
    assert!(pf_both + tcp_both > 90.0, "{pf_both} + {tcp_both}");
    // Reliable delivery: nothing given up, and the receiver has all the data sent but what
    // still waits for a repair when the run ends: at ~14 kbit/s, 5 s of data is 2% (one
    // repair cycle on this ~0.4 s path is a NAK back-off of up to four group RTTs plus the
    // repair; measured: 16 packets short, 1.5%).
    let rx = &both.flows[0].receivers[0];
    assert_eq!(counter(&rx.report.counters(), "unrecoverable_sqns"), 0.0);
    let pf = &both.flows[0];
    let short = pf.bytes as f64 - rx.bytes as f64;
    assert!(
        short <= pf.mean_kbps * 1000.0 / 8.0 * 5.0,
        "{} of {}",
        rx.bytes,
        pf.bytes
    );
}

#[test]
fn pseudofed_knobs_are_checked() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/compare/fig5-pseudofed.toml");
    // The file names the published preset; each test chooses its own controller.
    let src = std::fs::read_to_string(&path)
        .unwrap()
        .replace("cc = \"pgmcc-paper\"\n", "");
    let parse = |s: &str| {
        netsim::scenario::parse("x.toml", s, "x", None)
            .err()
            .map(|e| e.to_string())
    };
    assert!(parse(&src).is_none());
    let e = parse(&src.replace("representatives = 2", "representatives = 9")).unwrap();
    assert!(e.contains("flow.representatives"), "{e}");
    let e = parse(&src.replace("representatives = 2", "wait = 3.0")).unwrap();
    assert!(e.contains("flow.wait"), "{e}");
    let e = parse(&src.replace("representatives = 2", "c = 0.75")).unwrap();
    assert!(e.contains("not for cc = \"pseudofed\""), "{e}");
    // Pseudofed knobs on another controller, or on TCP.
    let e = parse(&src.replace("cc = \"pseudofed\"", "cc = \"pgmcc\"")).unwrap();
    assert!(e.contains("only for cc = \"pseudofed\""), "{e}");
    assert!(parse(&src.replace(
        "representatives = 2",
        "rate_min = \"16kbit\"\ndelta_rate = 0.1\nsuppression = 0.5"
    ))
    .is_none());
}
