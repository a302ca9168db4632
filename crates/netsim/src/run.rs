//! Running a scenario and measuring it: time series per flow and receiver, link counters,
//! acker switches; written as `summary.json` and `timeseries.csv`. Nothing here depends on
//! the wall clock, so the same scenario and seed give byte-identical files.

use std::fmt::Write as _;
use std::path::Path;

use pgmcc::Instant;
use serde::Serialize;

use crate::agents::pgm::PgmSenderAgent;
use crate::scenario::{FlowKind, Scenario};

/// One receiver's measurements.
#[derive(Debug, Clone, Serialize)]
pub struct ReceiverResult {
    /// Node name.
    pub node: String,
    /// Application bytes delivered.
    pub bytes: u64,
    /// Mean goodput over the flow's active time, kbit/s.
    pub mean_kbps: f64,
    /// Goodput per sample interval, kbit/s.
    pub series_kbps: Vec<f64>,
    /// The agent's own counters.
    pub counters: Vec<(String, f64)>,
}

/// An acker switch.
#[derive(Debug, Clone, Serialize)]
pub struct AckerSwitch {
    /// Seconds since the start.
    pub t: f64,
    /// The new acker's address.
    pub to: String,
}

/// One flow's measurements.
#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    /// Name.
    pub name: String,
    /// Kind (`pgmcc`, `tcp-reno`, ...).
    pub kind: String,
    /// Payload bytes sent (PGM: ODATA payload; TCP: bytes acknowledged).
    pub bytes: u64,
    /// Mean sending rate over the flow's active time, kbit/s.
    pub mean_kbps: f64,
    /// Sending rate per sample interval, kbit/s.
    pub series_kbps: Vec<f64>,
    /// Cumulative payload bytes at each sample (time-sequence plots).
    pub sequence_bytes: Vec<u64>,
    /// pgmcc window per sample (empty for other kinds).
    pub window: Vec<f64>,
    /// NAKs received by the source per sample (PGM only).
    pub naks: Vec<u64>,
    /// Acker switches (pgmcc only).
    pub acker_switches: Vec<AckerSwitch>,
    /// Receivers (PGM) or the sink (TCP).
    pub receivers: Vec<ReceiverResult>,
    /// The sending agent's own counters.
    pub counters: Vec<(String, f64)>,
    /// Final notes (e.g. the acker).
    pub notes: Vec<(String, String)>,
}

/// One link's measurements.
#[derive(Debug, Clone, Serialize)]
pub struct LinkResult {
    /// Tail node.
    pub from: String,
    /// Head node.
    pub to: String,
    /// Fraction of the run the link was transmitting.
    pub utilisation: f64,
    /// Packets that crossed it.
    pub packets: u64,
    /// Queue (drop-tail) drops.
    pub queue_drops: u64,
    /// Random losses.
    pub random_losses: u64,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Description from the file.
    pub description: String,
    /// Seed.
    pub seed: u64,
    /// Simulated seconds.
    pub duration_s: f64,
    /// Sample interval, seconds.
    pub sample_s: f64,
    /// Sample times, seconds (end of each interval).
    pub times: Vec<f64>,
    /// Events processed.
    pub events: u64,
    /// Flows in file order.
    pub flows: Vec<FlowResult>,
    /// Links with traffic.
    pub links: Vec<LinkResult>,
}

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
            let s = agent.summary();
            let get = |k: &str| s.counters.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
            window[i].push(get("window").unwrap_or(0.0));
            naks[i].push(get("naks_received").unwrap_or(0.0) as u64);
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
        let s = agent.summary();
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
                counters: ra.summary().counters,
            });
        }
        let acker_switches = if f.kind == FlowKind::Pgmcc {
            acker_changes(sc, f.sender)
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
            window: if f.kind == FlowKind::Pgmcc {
                window[i].clone()
            } else {
                Vec::new()
            },
            naks: deltas(&naks[i]),
            acker_switches,
            receivers,
            counters: s.counters,
            notes: s.notes,
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
        flows: out_flows,
        links,
    }
}

fn acker_changes(sc: &Scenario, sender: usize) -> Vec<AckerSwitch> {
    sc.sim
        .agent_as::<PgmSenderAgent>(sender)
        .map(|a| {
            a.acker_changes
                .iter()
                .map(|(t, to)| AckerSwitch {
                    t: (*t - Instant::ZERO).as_secs_f64(),
                    to: to.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
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
        }
        csv.push('\n');
    }
    std::fs::write(dir.join("timeseries.csv"), csv)?;
    Ok(())
}

/// Mean of a series between two times (seconds), for tests and reports.
pub fn mean_between(summary: &Summary, series: &[f64], from: f64, to: f64) -> f64 {
    let v: Vec<f64> = summary
        .times
        .iter()
        .zip(series)
        .filter(|(t, _)| **t > from && **t <= to)
        .map(|(_, x)| *x)
        .collect();
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}
