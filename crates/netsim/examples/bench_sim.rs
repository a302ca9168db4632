//! `make bench-sim`: simulator speed and memory on the pgmcc paper's Fig. 7 setup.
//!
//! One pgmcc sender; receivers each behind their own 1% lossy link (1 Mbit/s, 50 ms, 30 KB
//! queue: the paper does not give these, we pick a loss-limited path); a TCP Reno flow on an
//! identical link. 10% of the receivers start at 0 s, the rest join at half time (Fig. 7: 10
//! then +90). Prints events per wall second, the ratio of simulated to wall time, and the peak
//! resident memory.
//!
//! Usage: bench_sim [RECEIVERS] [SECONDS] [reliable|unreliable]   (defaults 100, 600, reliable)
//!
//! `unreliable` runs pgmcc without repairs (paper §3.9). At thousands of receivers with
//! independent loss every packet is lost somewhere, and multicast repairs of everyone's
//! losses would swamp every link (the paper, §4.5: such tests "cannot be run with simple
//! retransmission-based repairs"), so `make bench-sim` runs its 10,000-receiver case that way.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant as Wall;

use netsim::agents::pgm::{PgmReceiverAgent, PgmSenderAgent};
use netsim::agents::tcp::{TcpConfig, TcpSender, TcpSink, TcpVariant};
use netsim::Sim;
use pgm_wire::{Gsi, Tsi};
use pgmcc::cc::pgmcc::PgmccConfig;
use pgmcc::cc::CcConfig;
use pgmcc::{Duration, Instant, ReceiverConfig, SenderConfig};

mod common;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let secs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(600);
    let reliable = !matches!(args.next().as_deref(), Some("unreliable"));
    let group = IpAddr::V4(Ipv4Addr::new(239, 7, 7, 7));
    let (fast, lossy) = (common::FAST, common::LOSSY);
    let mut sim = Sim::new(7);
    let threads = common::threads();
    sim.set_threads(threads);
    let s = sim.add_node("S");
    let r = sim.add_node("R");
    sim.add_duplex(s, r, fast);
    let at = |t: u64| Instant::ZERO + Duration::from_secs(t);
    let tsi = Tsi {
        gsi: Gsi([7, 7, 7, 7, 7, 7]),
        sport: 7,
    };
    let mut cfg = SenderConfig::new(tsi, IpAddr::V4(Ipv4Addr::UNSPECIFIED), group);
    cfg.cc = CcConfig::Pgmcc(PgmccConfig::default());
    // 1400-byte payloads, in whole packets.
    cfg.whole_packets_of(1400);
    cfg.repairs = reliable;
    let tx = sim.add_agent(
        s,
        Box::new(PgmSenderAgent::new(1, group, cfg, None)),
        at(0),
        None,
    );
    let first = (n / 10).max(1);
    let mut rx = Vec::new();
    for i in 0..n {
        let node = sim.add_node(&format!("PR{i}"));
        sim.add_link(r, node, lossy);
        sim.add_link(node, r, fast);
        let join = if i < first { 0 } else { secs / 2 };
        let mut rc = ReceiverConfig::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), group, i as u64 + 1);
        rc.reliable = reliable;
        rx.push(sim.add_agent(node, Box::new(PgmReceiverAgent::new(1, rc)), at(join), None));
        sim.join(node, group, at(join), None);
    }
    let ts = sim.add_node("TS");
    let tr = sim.add_node("TR");
    sim.add_duplex(ts, r, fast);
    sim.add_link(r, tr, lossy);
    sim.add_link(tr, r, fast);
    let tcp = sim.add_agent(
        ts,
        Box::new(TcpSender::new(
            2,
            sim.addr(tr),
            TcpVariant::Reno,
            TcpConfig::default(),
        )),
        at(0),
        None,
    );
    sim.add_agent(tr, Box::new(TcpSink::new(2)), at(0), None);

    let wall = Wall::now();
    let mut half = (0u64, 0u64);
    sim.run_until(at(secs), Duration::from_secs(1), |sim| {
        if sim.now() == at(secs / 2) {
            half = (
                sim.agent(tx).goodput_bytes(),
                sim.agent(tcp).goodput_bytes(),
            );
        }
    });
    let wall = wall.elapsed().as_secs_f64();
    let kbps = |bytes: u64, s: u64| bytes as f64 * 8.0 / 1000.0 / s as f64;
    let (pgm_end, tcp_end) = (
        sim.agent(tx).goodput_bytes(),
        sim.agent(tcp).goodput_bytes(),
    );
    println!(
        "fig7-like: {n} receivers ({first} from 0 s, {} from {} s), {secs} s simulated",
        n - first,
        secs / 2
    );
    common::print_speed(secs as f64, wall, threads);
    println!(
        "  events              {} ({:.2} M events per wall second)",
        sim.events_processed,
        sim.events_processed as f64 / wall / 1e6
    );
    if let Some(m) = common::peak_rss_mib() {
        println!("  peak memory         {m:.0} MiB");
    }
    println!(
        "  pgmcc kbit/s        first half {:.0}, second half {:.0}",
        kbps(half.0, secs / 2),
        kbps(pgm_end - half.0, secs - secs / 2)
    );
    println!(
        "  tcp kbit/s          first half {:.0}, second half {:.0}",
        kbps(half.1, secs / 2),
        kbps(tcp_end - half.1, secs - secs / 2)
    );
    let delivered: u64 = rx
        .iter()
        .map(|&a| sim.agent(a).goodput_bytes())
        .min()
        .unwrap_or(0);
    println!("  slowest receiver    {delivered} bytes delivered");
}
