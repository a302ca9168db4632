//! PGM network elements inside the simulator: NAKs from a subtree are eliminated at the
//! router, repairs go only where they were asked for, and every receiver still gets
//! everything.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use netsim::run::run;
use netsim::scenario::parse;

/// `fec`: the flow's `fec` key (0: selective repairs, which the NE eliminates and
/// constrains; 64: on-demand parity, which it passes through).
fn scenario(ne: bool, fec: u32) -> String {
    let mut s = format!(
        r#"
duration = "120s"
seed = 5

[[node]]
name = "S"
[[node]]
name = "R"
ne = {ne}
"#
    );
    for i in 0..8 {
        s += &format!("[[node]]\nname = \"A{i}\"\n");
    }
    // Loss shared by the whole subtree happens upstream of the router.
    s += r#"
[[link]]
from = "S"
to = "R"
rate = "2Mbit"
delay = "20ms"
queue = "100p"
loss = 0.03
"#;
    for i in 0..8 {
        s += &format!("[[link]]\nfrom = \"R\"\nto = \"A{i}\"\nrate = \"10Mbit\"\ndelay = \"5ms\"\nqueue = \"100p\"\n");
    }
    s += r#"
[[flow]]
name = "pgm"
kind = "pgm"
from = "S"
rate_limit = "500kbit"
bytes = 5000000
"#;
    s += &format!("fec = {fec}\n");
    for i in 0..8 {
        s += &format!("[[flow.receiver]]\nnode = \"A{i}\"\n");
    }
    s
}

fn counter(f: &netsim::run::FlowResult, k: &str) -> f64 {
    f.report
        .counters()
        .iter()
        .find(|(n, _)| *n == k)
        .map(|(_, v)| *v)
        .unwrap()
}

#[test]
fn a_network_element_eliminates_duplicate_naks_from_its_subtree() {
    let mut with = parse("ne.toml", &scenario(true, 0), "ne", None).unwrap();
    let mut without = parse("no-ne.toml", &scenario(false, 0), "no-ne", None).unwrap();
    let (w, wo) = (run(&mut with, |_| {}), run(&mut without, |_| {}));
    let naks_with = counter(&w.flows[0], "naks_received");
    let naks_without = counter(&wo.flows[0], "naks_received");
    let ne = with.sim.ne(1).unwrap().stats().clone();
    eprintln!("source NAKs with NE {naks_with}, without {naks_without}; NE {ne:?}");
    for r in w.flows[0].receivers.iter().chain(&wo.flows[0].receivers) {
        let lost = r
            .report
            .counters()
            .iter()
            .find(|(n, _)| *n == "unrecoverable_sqns")
            .unwrap()
            .1;
        assert_eq!(
            r.bytes, 5_000_000,
            "{} got {} bytes, {lost} sqns lost",
            r.node, r.bytes
        );
    }
    // Eight receivers lose the same packets; the NE forwards one NAK per sequence number.
    assert!(ne.nak_sqns_eliminated > 0 && ne.ncfs_sent > 0, "{ne:?}");
    assert!(
        naks_with < 0.5 * naks_without,
        "{naks_with} vs {naks_without}"
    );
    assert!(ne.rdata_forwarded > 0);
}

/// On-demand parity passes through the NE (no repair state for it): parity NAKs go up,
/// parity NCFs and parity packets come down, and every receiver still gets everything.
#[test]
fn on_demand_parity_passes_through_a_network_element() {
    let mut sc = parse("ne-fec.toml", &scenario(true, 64), "ne-fec", None).unwrap();
    let w = run(&mut sc, |_| {});
    let ne = sc.sim.ne(1).unwrap().stats().clone();
    let parity = counter(&w.flows[0], "parity_packets");
    eprintln!("parity packets {parity}; NE {ne:?}");
    for r in &w.flows[0].receivers {
        assert_eq!(r.bytes, 5_000_000, "{} got {} bytes", r.node, r.bytes);
    }
    assert!(
        parity > 0.0 && ne.ncfs_sent > 0 && ne.nak_sqns_forwarded > 0,
        "{ne:?}"
    );
}
