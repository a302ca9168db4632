//! The engine's own tests: a run with deliveries on worker threads is the run on one
//! thread, and a router hook is called, obeyed and timed as [`RouterHook`] says.

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

/// A router hook that lets odd packets through and keeps even ones, asks for a timer 1 ms
/// after the first packet it sees, and on it sends one packet back to `reply_to`.
#[derive(Debug)]
struct Alternate {
    reply_to: IpAddr,
    seen: Vec<Option<LinkId>>,
    downstream: Vec<Vec<LinkId>>,
    deadline: Option<Instant>,
    fired: u32,
}

impl RouterHook for Alternate {
    fn sees(&self, p: &Packet) -> bool {
        p.flow == 7
    }

    fn on_packet(
        &mut self,
        now: Instant,
        in_iface: Option<LinkId>,
        _p: &Packet,
        downstream: &[LinkId],
        _ctx: &mut HookCtx<'_>,
    ) -> Verdict {
        self.seen.push(in_iface);
        self.downstream.push(downstream.to_vec());
        if self.seen.len() == 1 {
            self.deadline = Some(now + Duration::from_millis(1));
        }
        if self.seen.len() % 2 == 0 {
            Verdict::Consume
        } else {
            Verdict::Forward
        }
    }

    fn on_timer(&mut self, _now: Instant, ctx: &mut HookCtx<'_>) {
        self.fired += 1;
        self.deadline = None;
        ctx.send(frame(ctx.addr, self.reply_to, 7));
    }

    fn next_timer(&self) -> Option<Instant> {
        self.deadline
    }
}

fn frame(src: IpAddr, dst: IpAddr, flow: u32) -> Packet {
    Packet {
        src,
        dst: Dest::Unicast(dst),
        size: 100,
        flow,
        payload: crate::packet::Payload::Frame(std::sync::Arc::from([0u8; 4].as_slice())),
    }
}

/// The router hands a hook the packets it sees with the interface they came in on, routes
/// those it lets through, drops those it keeps, routes what it sends, and calls it on its
/// timer; packets it does not see pass untouched.
#[test]
fn a_router_hook_sees_forwards_consumes_and_sends() {
    let link = LinkConfig {
        rate_bps: 10_000_000,
        delay: Duration::from_millis(1),
        queue: QueueLimit::Packets(100),
        loss: LossModel::None,
    };
    let mut sim = Sim::new(3);
    let (s, r, d) = (sim.add_node("S"), sim.add_node("R"), sim.add_node("D"));
    let (_, r_to_s) = sim.add_duplex(s, r, link);
    let (r_to_d, _) = sim.add_duplex(r, d, link);
    let hook = Alternate {
        reply_to: sim.addr(s),
        seen: Vec::new(),
        downstream: Vec::new(),
        deadline: None,
        fired: 0,
    };
    sim.set_router_hook(r, Box::new(hook));
    for flow in [7, 7, 7, 7, 8] {
        sim.inject(s, frame(sim.addr(s), sim.addr(d), flow));
    }
    sim.run_until(
        Instant::ZERO + Duration::from_secs(1),
        Duration::from_secs(1),
        |_| {},
    );
    let Some(hook) = sim.router_hook_as::<Alternate>(r) else {
        panic!("R runs the hook it was given");
    };
    // Packets from S came in on R's interface towards S; unicast has no downstream.
    assert_eq!(hook.seen, vec![Some(r_to_s); 4]);
    assert!(hook.downstream.iter().all(Vec::is_empty));
    assert_eq!(hook.fired, 1);
    // Two of flow 7 let through, the one of flow 8 unseen; the timer's packet goes to S.
    assert_eq!(sim.link(r_to_d).stats.packets, 3);
    assert_eq!(sim.link(r_to_s).stats.packets, 1);
    assert!(sim.router_hook_as::<Alternate>(s).is_none());
}
