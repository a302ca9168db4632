//! The TFMCC-style baseline (issue 10) on Fig. 5's topology: it shares L2 with TCP Reno, and
//! its current limiting receiver (CLR) moves to PR1, the worse receiver, when PR1 joins.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

use netsim::run::{mean_between, run};
use netsim::scenario::load;

#[test]
fn tfmcc_fig5_shares_with_tcp_and_clr_moves() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/compare/fig5-tfmcc.toml");
    let mut sc = load(&path, None).unwrap();
    let s = run(&mut sc, |_| {});
    let tf = &s.flows[0];
    let tcp = &s.flows[1];
    let phase = |f: &netsim::run::FlowResult, a, b| mean_between(&s, &f.series_kbps, a, b);
    let (p1, p2, p3, p4) = (
        phase(tf, 10.0, 60.0),
        phase(tf, 70.0, 120.0),
        phase(tf, 130.0, 240.0),
        phase(tf, 250.0, 300.0),
    );
    let t3 = phase(tcp, 130.0, 240.0);
    let f = t3 / p3;
    let switches: Vec<(f64, String)> = tf
        .acker_switches
        .iter()
        .map(|a| (a.t, a.to.clone()))
        .collect();
    eprintln!(
        "tfmcc {p1:.0} {p2:.0} {p3:.0} {p4:.0}  tcp {t3:.0}  f = TCP/TFMCC = {f:.2}  CLR changes {switches:?}"
    );
    // Both get a measured share of L2 while they compete.
    assert!(p3 > 50.0 && t3 > 50.0, "tfmcc {p3}, tcp {t3}");
    assert!((0.2..=5.0).contains(&f), "f = {f}");
    // The first CLR is PR2, the only receiver before 60 s; it moves to PR1 (behind the
    // slower L1) soon after PR1 joins.
    let first = &tf.acker_switches.first().unwrap().to;
    assert!(
        tf.acker_switches
            .iter()
            .any(|a| a.t > 60.0 && a.t < 75.0 && &a.to != first),
        "no CLR change to PR1 after it joined: {switches:?}"
    );
    // And the session then stays within L1's capacity (380 kbit/s of payload).
    assert!(p2 < 400.0, "{p2}");
}

#[test]
fn cc_key_rejects_unknown_controllers_and_non_pgm_flows() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/compare/fig5-tfmcc.toml");
    // The file names the published preset; each test chooses its own controller.
    let src = std::fs::read_to_string(&path)
        .unwrap()
        .replace("cc = \"pgmcc-paper\"\n", "");
    let bad = src.replace("cc = \"tfmcc\"", "cc = \"tfrc\"");
    let e = netsim::scenario::parse("bad.toml", &bad, "x", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("use pgmcc, pgmcc-paper, tfmcc"), "{e}");
    let on_tcp = src.replace("kind = \"tcp-reno\"", "kind = \"tcp-reno\"\ncc = \"tfmcc\"");
    let e = netsim::scenario::parse("bad.toml", &on_tcp, "x", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("only for PGM flows"), "{e}");
    let knob = src.replace("cc = \"tfmcc\"", "cc = \"tfmcc\"\nc = 0.75");
    assert!(netsim::scenario::parse("bad.toml", &knob, "x", None).is_err());
    let explicit = src.replace("cc = \"tfmcc\"", "cc = \"pgmcc\"");
    assert!(netsim::scenario::parse("ok.toml", &explicit, "x", None).is_ok());
}
