//! The engine's own tests: a run with deliveries on worker threads is the run on one thread.

use super::*;
use crate::agents::pgm::{PgmReceiverAgent, PgmSenderAgent};
use crate::link::{LossModel, QueueLimit};
use pgm_wire::{Gsi, Tsi};
use pgmcc::cc::Controller;
use pgmcc::{ReceiverConfig, SenderConfig};

/// Everything a run leaves behind that a difference in event order would change.
fn run(threads: usize) -> (Sim, Vec<String>) {
    let group = IpAddr::V4(Ipv4Addr::new(239, 1, 1, 1));
    let fast = LinkConfig {
        rate_bps: 1_000_000_000,
        delay: Duration::from_millis(1),
        queue: QueueLimit::Packets(1000),
        loss: LossModel::None,
    };
    let lossy = LinkConfig {
        rate_bps: 1_000_000,
        delay: Duration::from_millis(50),
        queue: QueueLimit::Bytes(30_000),
        loss: LossModel::Bernoulli { p: 0.01 },
    };
    let mut sim = Sim::new(11);
    sim.set_threads(threads);
    let (s, r) = (sim.add_node("S"), sim.add_node("R"));
    sim.add_duplex(s, r, fast);
    let tsi = Tsi {
        gsi: Gsi([1, 2, 3, 4, 5, 6]),
        sport: 9,
    };
    let mut cfg = SenderConfig::new(tsi, IpAddr::V4(Ipv4Addr::UNSPECIFIED), group);
    cfg.cc = Controller::Pgmcc.config();
    sim.add_agent(
        s,
        Box::new(PgmSenderAgent::new(1, group, cfg, None)),
        Instant::ZERO,
        None,
    );
    for i in 0..150 {
        let node = sim.add_node(&format!("PR{i}"));
        sim.add_link(r, node, lossy);
        sim.add_link(node, r, fast);
        // Some hosts delay what they send: their NAKs go through the jitter's events.
        if i % 3 == 0 {
            sim.set_host_jitter(node, Duration::from_millis(2));
        }
        let rc = ReceiverConfig::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), group, i + 1);
        let start = Instant::ZERO + Duration::from_millis(i * 7);
        sim.add_agent(node, Box::new(PgmReceiverAgent::new(1, rc)), start, None);
        sim.join(node, group, start, None);
    }
    let mut seen = Vec::new();
    let end = Instant::ZERO + Duration::from_secs(8);
    sim.run_until(end, Duration::from_millis(500), |sim| {
        seen.push(format!("{:?} {}", sim.now(), sim.agent(1).goodput_bytes()));
    });
    for a in 0..sim.agent_count() {
        seen.push(format!("{:?}", sim.agent(a).report()));
    }
    for l in 0..sim.link_count() {
        seen.push(format!("{:?}", sim.link(l).stats));
    }
    seen.push(format!(
        "{} events, {} spins",
        sim.events_processed, sim.spins
    ));
    (sim, seen)
}

/// A batch of deliveries run on two threads leaves the same run, event for event, as one
/// thread: the same agents' reports, link counters, samples and event count.
#[test]
fn deliveries_on_two_threads_give_the_same_run_as_on_one() {
    let (one, a) = run(1);
    let (two, b) = run(2);
    assert_eq!(one.parallel_deliveries, 0);
    assert!(
        two.parallel_deliveries > 10_000,
        "batches ran on threads: {}",
        two.parallel_deliveries
    );
    assert!(a.len() > 300);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y);
    }
    assert_eq!(a.len(), b.len());
}
