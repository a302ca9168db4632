//! Pseudofed's representative-based controller (issue 10) on Fig. 5's topology and on the
//! paper's own two-node 128 kbit/s experiment.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

use netsim::run::{mean_between, run, FlowResult, Summary};
use netsim::scenario::load;

fn counter(f: &FlowResult, key: &str) -> f64 {
    f.counters
        .iter()
        .find(|(k, _)| k == key)
        .map_or(f64::NAN, |(_, v)| *v)
}

fn show(s: &Summary) {
    for f in &s.flows {
        eprintln!(
            "{} mean {:.1} kbit/s bytes {} counters {:?}",
            f.name, f.mean_kbps, f.bytes, f.counters
        );
        for r in &f.receivers {
            eprintln!(
                "  rx {} {:.1} kbit/s {} B {:?}",
                r.node, r.mean_kbps, r.bytes, r.counters
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
    eprintln!(
        "pseudofed {p1:.0} {p2:.0} {p3:.0} {p4:.0} tcp {t3:.0} f = {:.2}",
        t3 / p3
    );
    let _ = counter(pf, "x");
}
