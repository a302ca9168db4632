//! `make bench-sim`: how loss recovery scales (issue 20), on the simulator.
//!
//! Usage: repair_scale independent [RECEIVERS] [SECONDS]   (defaults 100, 300)
//!        repair_scale shared [RECEIVERS] [SECONDS] [MIN_RTT_MS] [MAX_RTT_MS]
//!                                                         (defaults 100, 300, 100, 500)
//!        either with `--fec K`: on-demand parity over groups of K packets (default: none),
//!        and `--proactive H` with it: H pro-active parity packets after every group;
//!        `--threads N`: threads for the receivers' handling of a multicast packet (default:
//!        every processor; the run is the same, only its wall time changes);
//!        `--poll-ivl S`: the source polls its receivers every S seconds for the group size
//!        (default: the source's default; 0: no polls)
//!
//! `independent`: one `pgmcc` source; every receiver behind its own link with 1% random loss
//! (1 Mbit/s, 50 ms, 30 KB queue: RTT ~100 ms), all from 0 s, reliable. Prints RDATA per
//! ODATA against its lower bound: the expected fraction of ODATA lost by at least one
//! receiver, 1 - prod(1 - p_i), with p_i each receiver link's measured drop rate (random and
//! queue). Every packet that somebody lost needs at least one repair.
//!
//! `shared`: the receivers sit behind one shared link with 1% random loss (1 Mbit/s, 30 KB
//! queue), each on its own loss-free branch whose delay spreads their RTTs evenly from
//! MIN_RTT_MS to MAX_RTT_MS. Every loss is shared by all receivers, so it measures NAK
//! suppression: the fraction of NAKed sequence numbers that more than one NAK reached the
//! source for.
//!
//! Both print the wall time, the simulated/wall ratio and the peak memory, and whether
//! every receiver delivered the whole stream.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant as Wall;

use netsim::agents::pgm::{PgmReceiverAgent, PgmSenderAgent};
use netsim::{LinkConfig, Sim};
use pgm_wire::{Gsi, Tsi};
use pgmcc::cc::Controller;
use pgmcc::{Duration, Instant, ReceiverConfig, SenderConfig};

mod common;

fn usage() -> ! {
    eprintln!(
        "usage: repair_scale independent [RECEIVERS] [SECONDS] [--fec K [--proactive H]] [--threads N] [--poll-ivl S]\n       \
         repair_scale shared [RECEIVERS] [SECONDS] [MIN_RTT_MS] [MAX_RTT_MS] \
         [--fec K [--proactive H]] [--threads N] [--poll-ivl S]"
    );
    std::process::exit(2)
}

/// Removes `name` and the number after it from `args` and returns the number (usage on a
/// missing or bad one); `None` when `name` is absent.
fn take_flag(args: &mut Vec<String>, name: &str) -> Option<u32> {
    let i = args.iter().position(|a| a == name)?;
    let v = args
        .get(i + 1)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| usage());
    args.drain(i..i + 2);
    Some(v)
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let fec = take_flag(&mut args, "--fec");
    if fec.is_some_and(|k| !pgmcc::fec::valid_tg_size(k)) {
        eprintln!("--fec: a power of two from 2 to 128");
        std::process::exit(2);
    }
    let proactive = take_flag(&mut args, "--proactive").unwrap_or(0);
    let poll_ivl = take_flag(&mut args, "--poll-ivl");
    let threads = take_flag(&mut args, "--threads").map_or_else(common::threads, |n| n as usize);
    if proactive > 0 && fec.is_none_or(|k| proactive > k) {
        eprintln!("--proactive: at most the --fec group size, and only with --fec");
        std::process::exit(2);
    }
    let num = |i: usize, default: u64| -> u64 {
        match args.get(i) {
            None => default,
            Some(a) => a.parse().unwrap_or_else(|_| usage()),
        }
    };
    let shared = match args.first().map(String::as_str) {
        Some("independent") => false,
        Some("shared") => true,
        _ => usage(),
    };
    let n = num(1, 100).max(1) as usize;
    let secs = num(2, 300).max(1);
    let (min_rtt, max_rtt) = (num(3, 100), num(4, 500).max(num(3, 100)));

    let group = IpAddr::V4(Ipv4Addr::new(239, 7, 7, 7));
    let (fast, lossy) = (common::FAST, common::LOSSY);
    let mut sim = Sim::new(7);
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
    cfg.cc = Controller::Pgmcc.config();
    // 1400-byte payloads, in whole packets.
    cfg.whole_packets_of(1400);
    cfg.fec = fec;
    cfg.proactive_parity = proactive;
    if let Some(s) = poll_ivl {
        cfg.group_poll_ivl = (s > 0).then(|| Duration::from_secs(u64::from(s)));
    }
    let tx = sim.add_agent(
        s,
        Box::new(PgmSenderAgent::new(1, group, cfg, None)),
        at(0),
        None,
    );
    // In `shared` mode: R -> B over the lossy link, then a loss-free branch per receiver.
    let hub = if shared {
        let b = sim.add_node("B");
        sim.add_link(
            r,
            b,
            LinkConfig {
                delay: Duration::from_millis(1),
                ..lossy
            },
        );
        sim.add_link(b, r, fast);
        Some(b)
    } else {
        None
    };
    let mut rx = Vec::new();
    let mut rx_links = Vec::new();
    for i in 0..n {
        let node = sim.add_node(&format!("PR{i}"));
        match hub {
            None => {
                rx_links.push(sim.add_link(r, node, lossy));
                sim.add_link(node, r, fast);
            }
            Some(b) => {
                // One-way delay so that the RTTs spread from min_rtt to max_rtt (the fast
                // links and the shared link take ~4 ms of it).
                let frac = if n > 1 {
                    i as f64 / (n - 1) as f64
                } else {
                    0.0
                };
                let rtt_ms = min_rtt as f64 + frac * (max_rtt - min_rtt) as f64;
                let one_way = Duration::from_secs_f64(((rtt_ms - 4.0) / 2.0).max(0.0) / 1000.0);
                let branch = LinkConfig {
                    delay: one_way,
                    ..fast
                };
                sim.add_link(b, node, branch);
                sim.add_link(node, b, branch);
            }
        }
        let rc = ReceiverConfig::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), group, i as u64 + 1);
        rx.push(sim.add_agent(node, Box::new(PgmReceiverAgent::new(1, rc)), at(0), None));
        sim.join(node, group, at(0), None);
    }

    let wall = Wall::now();
    sim.run_until(at(secs), Duration::from_secs(1), |_| {});
    let wall = wall.elapsed().as_secs_f64();

    let Some(sender) = sim
        .agent_as::<PgmSenderAgent>(tx)
        .and_then(PgmSenderAgent::sender)
    else {
        eprintln!("the sender never started");
        std::process::exit(1)
    };
    let st = sender.stats().clone();
    let odata = st.odata_packets.max(1) as f64;
    if shared {
        println!(
            "shared loss: {n} receivers behind one 1% lossy link, RTT {min_rtt}..{max_rtt} ms, \
             {secs} s simulated"
        );
    } else {
        println!("independent loss: {n} receivers each behind a 1% lossy link, {secs} s simulated");
    }
    common::print_speed(secs as f64, wall, threads);
    if let Some(m) = common::peak_rss_mib() {
        println!("  peak memory         {m:.0} MiB");
    }
    println!(
        "  pgmcc kbit/s        {:.0}",
        st.odata_bytes as f64 * 8.0 / 1000.0 / secs as f64
    );
    println!(
        "  ODATA {}  RDATA {}  NCF {}  NAKs {}",
        st.odata_packets, st.rdata_packets, st.ncf_packets, st.naks_received
    );
    println!(
        "  RDATA/ODATA         {:.3}",
        st.rdata_packets as f64 / odata
    );
    if let Some(k) = fec {
        println!(
            "  parity (k = {k})      {} parity packets ({:.3} per ODATA), {} parity NAKs, \
             {} groups asked ({:.1}% more than once)",
            st.parity_packets,
            st.parity_packets as f64 / odata,
            st.parity_naks_received,
            st.tgs_naked,
            100.0 * st.tgs_naked_again as f64 / st.tgs_naked.max(1) as f64
        );
        if proactive > 0 {
            println!(
                "  pro-active parity   {} packets ({:.3} per ODATA); repair packets in all \
                 {:.3} per ODATA",
                st.proactive_parity_packets,
                st.proactive_parity_packets as f64 / odata,
                (st.rdata_packets + st.proactive_parity_packets) as f64 / odata
            );
        }
    }
    if !shared {
        // Expected fraction of ODATA lost by at least one receiver. Random loss strikes
        // after the queue, independently per link; the identical links see the same
        // multicast arrivals, so their queues overflow on the same packets: queue drops are
        // common to all, counted once.
        let mut keep_all = 1.0f64;
        let mut queue = 0.0f64;
        for &l in &rx_links {
            let ls = &sim.link(l).stats;
            let offered = (ls.packets + ls.queue_drops).max(1) as f64;
            queue = queue.max(ls.queue_drops as f64 / offered);
            keep_all *= 1.0 - ls.random_losses as f64 / ls.packets.max(1) as f64;
        }
        keep_all *= 1.0 - queue;
        println!(
            "  queue drops         {:.2}% of packets on every receiver link",
            100.0 * queue
        );
        let bound = 1.0 - keep_all;
        println!(
            "  lower bound         {bound:.3} (RDATA/ODATA = {:.2}x the bound)",
            st.rdata_packets as f64 / odata / bound.max(1e-9)
        );
    }
    println!(
        "  NAKed sqns          {} ({:.1}% NAKed more than once), {} NAKs held off",
        st.sqns_naked,
        100.0 * st.sqns_naked_again as f64 / st.sqns_naked.max(1) as f64,
        st.naks_held_off
    );
    if let Some(g) = sender.grtt(sim.now()) {
        println!(
            "  group RTT           {:.0} ms, group size {}",
            g.as_secs_f64() * 1000.0,
            sender.group_size(sim.now())
        );
    }
    let mut incomplete = 0;
    let mut unrecoverable = 0;
    for &a in &rx {
        let Some(rs) = sim
            .agent_as::<PgmReceiverAgent>(a)
            .and_then(PgmReceiverAgent::receiver)
            .map(|r| r.stats().clone())
        else {
            incomplete += 1;
            continue;
        };
        unrecoverable += rs.unrecoverable_sqns;
        // Delivered up to within a second's worth of the end (data still in flight).
        if rs.unrecoverable_sqns > 0 || (rs.odata_packets + rs.rdata_packets) == 0 {
            incomplete += 1;
        }
    }
    println!(
        "  receivers complete  {} of {n} ({unrecoverable} sequence numbers unrecoverable)",
        n - incomplete
    );
}
