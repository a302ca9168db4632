//! The bundled demo scenario (pgmcc paper Fig. 5) keeps telling the paper's story: the
//! session takes 500 kbit/s, drops to 400 when PR1 joins behind L1, to ~220 while TCP shares
//! L2, and back to L1's 400 when TCP stops, the acker moving each time.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

use netsim::run::{mean_between, run};
use netsim::scenario::load;

#[test]
fn fig5_tracks_500_400_220_400() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fig5.toml");
    let mut sc = load(&path, None).unwrap();
    let s = run(&mut sc, |_| {});
    let pgm = &s.flows[0];
    let tcp = &s.flows[1];
    let phase = |f: &netsim::run::FlowResult, a, b| mean_between(&s, &f.series_kbps, a, b);
    let (p1, p2, p3, p4) = (
        phase(pgm, 10.0, 60.0),
        phase(pgm, 70.0, 120.0),
        phase(pgm, 130.0, 240.0),
        phase(pgm, 250.0, 300.0),
    );
    let t3 = phase(tcp, 130.0, 240.0);
    eprintln!(
        "pgmcc {p1:.0} {p2:.0} {p3:.0} {p4:.0}  tcp {t3:.0}  switches {:?}",
        pgm.acker_switches
    );
    // Payload ceilings: 475 kbit/s on L2, 380 on L1 (1400-byte payloads in 1472-byte packets).
    assert!((430.0..=480.0).contains(&p1), "{p1}");
    assert!((340.0..=385.0).contains(&p2), "{p2}");
    assert!(
        (180.0..=280.0).contains(&p3),
        "{p3}: the paper reports ~220"
    );
    assert!((180.0..=300.0).contains(&t3), "{t3}: TCP's share of L2");
    assert!((340.0..=385.0).contains(&p4), "{p4}");
    // The acker moves to PR1 when it joins, to PR2 when TCP congests L2, back after.
    let times: Vec<f64> = pgm.acker_switches.iter().map(|a| a.t).collect();
    for expected in [60.0, 120.0, 240.0] {
        assert!(
            times.iter().any(|&t| t > expected && t < expected + 10.0),
            "no switch after {expected}: {times:?}"
        );
    }
}
