//! Running a scenario and measuring it: time series per flow and receiver, link counters,
//! acker switches; written as `summary.json` and `timeseries.csv`. Nothing here depends on
//! the wall clock, so the same scenario and seed give byte-identical files.

use std::fmt::Write as _;
use std::path::Path;

use pgmcc::Instant;

use crate::agents::report::AgentReport;
use crate::scenario::{FlowKind, Scenario};
/// The result types live in [`crate::summary`]; re-exported so that `netsim::run::Summary`
/// and friends keep working.
pub use crate::summary::{
    mean_between, AckerSwitch, FlowResult, LinkResult, ReceiverResult, Summary,
};

fn kbps(bytes: u64, secs: f64) -> f64 {
    if secs <= 0.0 {
        0.0
    } else {
        bytes as f64 * 8.0 / 1000.0 / secs
    }
}

/// Runs the scenario to its end, calling `progress(fraction)` every sample.
pub fn run(sc: &mut Scenario, mut progress: impl FnMut(f64)) -> Summary {
    let n_flows = sc.flows.len();
    let mut times = Vec::new();
    let mut seq: Vec<Vec<u64>> = vec![Vec::new(); n_flows];
    let mut rx_seq: Vec<Vec<Vec<u64>>> = sc
        .flows
        .iter()
        .map(|f| vec![Vec::new(); f.receivers.len()])
        .collect();
    let mut window: Vec<Vec<f64>> = vec![Vec::new(); n_flows];
    let mut naks: Vec<Vec<u64>> = vec![Vec::new(); n_flows];
    let mut drops: Vec<Vec<u64>> = vec![Vec::new(); n_flows];
    let flows = sc.flows.clone();
    let end = Instant::ZERO + sc.duration;
    let total = sc.duration.as_secs_f64();
    sc.sim.run_until(end, sc.sample, |sim| {
        let t = (sim.now() - Instant::ZERO).as_secs_f64();
        times.push(t);
        for (i, f) in flows.iter().enumerate() {
            let agent = sim.agent(f.sender);
            seq[i].push(agent.goodput_bytes());
            for (j, (r, ..)) in f.receivers.iter().enumerate() {
                rx_seq[i][j].push(sim.agent(*r).goodput_bytes());
            }
            let (w, n) = match agent.report() {
                AgentReport::PgmSender(Some(r)) => (r.window, r.naks_received),
                AgentReport::TcpSender(r) => (r.cwnd_segments, 0),
                _ => (0.0, 0),
            };
            window[i].push(w);
            naks[i].push(n);
            drops[i].push(sim.flow_queue_drops(f.id));
        }
        progress(t / total);
    });
    let deltas = |v: &[u64]| -> Vec<u64> {
        let mut prev = 0;
        v.iter()
            .map(|&x| {
                let d = x.saturating_sub(prev);
                prev = x;
                d
            })
            .collect()
    };
    let sample = sc.sample.as_secs_f64();
    let mut out_flows = Vec::new();
    for (i, f) in sc.flows.iter().enumerate() {
        let agent = sc.sim.agent(f.sender);
        let report = agent.report();
        let active_from = (f.start - Instant::ZERO).as_secs_f64();
        let active_to = f
            .stop
            .map_or(total, |t| (t - Instant::ZERO).as_secs_f64().min(total));
        let active = (active_to - active_from).max(0.0);
        let bytes = agent.goodput_bytes();
        let mut receivers = Vec::new();
        for (j, (r, node, join, leave)) in f.receivers.iter().enumerate() {
            let ra = sc.sim.agent(*r);
            // A receiver's mean covers its own membership within the flow's active time.
            let from = (*join - Instant::ZERO).as_secs_f64().max(active_from);
            let to = leave.map_or(active_to, |t| {
                (t - Instant::ZERO).as_secs_f64().min(active_to)
            });
            receivers.push(ReceiverResult {
                node: node.clone(),
                bytes: ra.goodput_bytes(),
                mean_kbps: kbps(ra.goodput_bytes(), (to - from).max(0.0)),
                series_kbps: deltas(&rx_seq[i][j])
                    .iter()
                    .map(|&d| kbps(d, sample))
                    .collect(),
                report: ra.report(),
            });
        }
        let acker_switches = if f.kind == FlowKind::Pgmcc {
            report
                .acker_changes()
                .iter()
                .map(|(t, to)| AckerSwitch {
                    t: (*t - Instant::ZERO).as_secs_f64(),
                    to: to.to_string(),
                })
                .collect()
        } else {
            Vec::new()
        };
        out_flows.push(FlowResult {
            name: f.name.clone(),
            kind: f.kind.name().to_string(),
            bytes,
            mean_kbps: kbps(bytes, active),
            series_kbps: deltas(&seq[i]).iter().map(|&d| kbps(d, sample)).collect(),
            sequence_bytes: seq[i].clone(),
            window: if f.kind == FlowKind::Pgmcc || f.kind.is_tcp() {
                window[i].clone()
            } else {
                Vec::new()
            },
            naks: deltas(&naks[i]),
            drops: deltas(&drops[i]),
            queue_drops: sc.sim.flow_queue_drops(f.id),
            acker_switches,
            receivers,
            report,
        });
    }
    let mut links = Vec::new();
    for l in 0..sc.sim.link_count() {
        let link = sc.sim.link(l);
        if link.stats.packets == 0 && link.stats.queue_drops == 0 {
            continue;
        }
        let (from, to) = sc.link_names.get(l).cloned().unwrap_or_default();
        links.push(LinkResult {
            from,
            to,
            utilisation: link.stats.busy_ns as f64 / 1e9 / total.max(1e-9),
            packets: link.stats.packets,
            queue_drops: link.stats.queue_drops,
            queue_drops_by_flow: link
                .stats
                .queue_drops_by_flow
                .iter()
                .map(|(id, n)| {
                    let name = sc
                        .flows
                        .iter()
                        .find(|f| f.id == *id)
                        .map_or_else(|| format!("flow {id}"), |f| f.name.clone());
                    (name, *n)
                })
                .collect(),
            random_losses: link.stats.random_losses,
        });
    }
    Summary {
        scenario: sc.name.clone(),
        description: sc.description.clone(),
        seed: sc.seed,
        duration_s: total,
        sample_s: sample,
        times,
        events: sc.sim.events_processed,
        spins: sc.sim.spins,
        flows: out_flows,
        links,
    }
}

/// Writes `summary.json` and `timeseries.csv` into `dir` (created if needed).
pub fn write(summary: &Summary, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(summary).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("summary.json"), json + "\n")?;
    let mut csv = String::from("t_s");
    for f in &summary.flows {
        let _ = write!(csv, ",{}_kbps", f.name);
        for r in &f.receivers {
            let _ = write!(csv, ",{}@{}_kbps", f.name, r.node);
        }
        if !f.window.is_empty() {
            let _ = write!(csv, ",{}_window", f.name);
        }
        let _ = write!(csv, ",{}_drops", f.name);
    }
    csv.push('\n');
    for (k, t) in summary.times.iter().enumerate() {
        let _ = write!(csv, "{t:.3}");
        for f in &summary.flows {
            let _ = write!(csv, ",{:.1}", f.series_kbps.get(k).copied().unwrap_or(0.0));
            for r in &f.receivers {
                let _ = write!(csv, ",{:.1}", r.series_kbps.get(k).copied().unwrap_or(0.0));
            }
            if !f.window.is_empty() {
                let _ = write!(csv, ",{:.2}", f.window.get(k).copied().unwrap_or(0.0));
            }
            let _ = write!(csv, ",{}", f.drops.get(k).copied().unwrap_or(0));
        }
        csv.push('\n');
    }
    std::fs::write(dir.join("timeseries.csv"), csv)?;
    Ok(())
}
