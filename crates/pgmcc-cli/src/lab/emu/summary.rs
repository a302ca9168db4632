//! The emulator's samples as the `Summary` that `pgmcc sim` writes, so `summary.json` and
//! `report.html` read the same for both. What differs is said in `docs/emulation.md`: rates
//! are transport payload as the emulator saw it (a flow's rate is what its source host sent,
//! retransmissions and repairs included; a receiver's is what reached it), and the agents'
//! own counters (windows, NAKs, acker switches) are absent: the real programs report theirs
//! in the files beside it.

use std::collections::BTreeMap;

use netemu::{EmuReport, Sample};
use netsim::agents::report::AgentReport;
use netsim::scenario::Scenario;
use netsim::summary::{FlowResult, LinkResult, ReceiverResult, Summary};

use super::flows::Planned;

/// Builds the summary of an emulation of `sc` that ran `flows`.
pub(super) fn build(
    sc: &Scenario,
    flows: &[Planned],
    samples: &[Sample],
    report: &EmuReport,
) -> Summary {
    let sample_s = sc.sample.as_secs_f64();
    let times: Vec<f64> = samples.iter().map(|s| s.t).collect();
    let duration = times.last().copied().unwrap_or(0.0);
    // Cumulative bytes -> kbit/s per interval.
    let series = |cum: &[u64]| -> Vec<f64> {
        let mut prev = 0;
        cum.iter()
            .map(|&c| {
                let d = c.saturating_sub(prev);
                prev = c;
                d as f64 * 8.0 / sample_s / 1e3
            })
            .collect()
    };
    let mean = |bytes: u64, from: f64, to: f64| {
        let span = (to.min(duration) - from).max(1e-9);
        bytes as f64 * 8.0 / span / 1e3
    };
    let flow_results = flows
        .iter()
        .map(|f| {
            let id = f.id as usize;
            let at = |v: &Vec<Vec<u64>>, node: usize| -> u64 {
                v.get(node).and_then(|n| n.get(id)).copied().unwrap_or(0)
            };
            let sent: Vec<u64> = samples.iter().map(|s| at(&s.sent, f.from.0)).collect();
            let bytes = sent.last().copied().unwrap_or(0);
            let receivers = f
                .receivers
                .iter()
                .map(|(node, name, join, leave)| {
                    let got: Vec<u64> = samples.iter().map(|s| at(&s.delivered, *node)).collect();
                    let total = got.last().copied().unwrap_or(0);
                    ReceiverResult {
                        node: name.clone(),
                        bytes: total,
                        // Over the time it was a member while the flow ran.
                        mean_kbps: mean(
                            total,
                            join.max(f.start),
                            leave.unwrap_or(duration).min(f.stop.unwrap_or(duration)),
                        ),
                        series_kbps: series(&got),
                        report: AgentReport::Other,
                    }
                })
                .collect();
            let queue_drops = report
                .links
                .iter()
                .flat_map(|l| l.queue_drops_by_flow.iter())
                .filter(|(flow, _)| *flow == f.id)
                .map(|(_, n)| n)
                .sum();
            FlowResult {
                name: f.name.clone(),
                kind: f.kind.name().to_string(),
                bytes,
                mean_kbps: mean(bytes, f.start, f.stop.unwrap_or(duration)),
                series_kbps: series(&sent),
                sequence_bytes: sent,
                window: Vec::new(),
                naks: vec![0; times.len()],
                // Per interval, from the cumulative counts of each sample.
                drops: samples
                    .iter()
                    .scan(0u64, |prev, s| {
                        let c = s.queue_drops.get(id).copied().unwrap_or(0);
                        let d = c.saturating_sub(*prev);
                        *prev = c;
                        Some(d)
                    })
                    .collect(),
                queue_drops,
                acker_switches: Vec::new(),
                receivers,
                report: AgentReport::Other,
            }
        })
        .collect();
    let flow_name: BTreeMap<u32, &str> = flows.iter().map(|f| (f.id, f.name.as_str())).collect();
    let links = report
        .links
        .iter()
        .filter(|l| l.packets > 0 || l.queue_drops > 0)
        .map(|l| LinkResult {
            from: l.from.clone(),
            to: l.to.clone(),
            utilisation: l.busy_s / report.seconds.max(1e-9),
            packets: l.packets,
            queue_drops: l.queue_drops,
            queue_drops_by_flow: l
                .queue_drops_by_flow
                .iter()
                .map(|(f, n)| {
                    let name = flow_name.get(f).map_or("other traffic", |n| n);
                    (name.to_string(), *n)
                })
                .collect(),
            random_losses: l.random_losses,
        })
        .collect();
    Summary {
        scenario: sc.name.clone(),
        description: sc.description.clone(),
        seed: sc.seed,
        duration_s: duration,
        sample_s,
        times,
        events: 0,
        spins: 0,
        flows: flow_results,
        links,
    }
}

/// What `flows.json` holds for one flow: the numbers a comparison of transports needs that
/// `summary.json` (shared with `pgmcc sim`) has no place for.
#[derive(Debug, serde::Serialize)]
pub(super) struct FlowOutcome {
    /// Name from the file.
    pub(super) name: String,
    /// Kind from the file.
    pub(super) kind: String,
    /// When it started (s since the run began).
    pub(super) start_s: f64,
    /// When it was over (s): its last receiver completed, else its stop, else the run's end.
    pub(super) end_s: f64,
    /// The file's size for a fixed-size transfer.
    pub(super) file_bytes: Option<u64>,
    /// Datagrams its source host sent in it (data, repairs and the source's control).
    pub(super) source_datagrams: u64,
    /// Datagrams its receivers (TCP: the sink) sent in it: feedback.
    pub(super) feedback_datagrams: u64,
    /// Transport payload delivered to its receivers, mean per receiver, kbit/s over
    /// [start_s, end_s].
    pub(super) delivered_kbps: f64,
    /// Per receiver: completion time after the flow's start (s), `None` if it did not.
    pub(super) receivers: Vec<ReceiverOutcome>,
    /// Per other flow: this flow's delivered rate (kbit/s, mean per receiver) while that
    /// flow was active, for ratios such as TCP / multicast over the same interval.
    pub(super) kbps_during: BTreeMap<String, f64>,
}

/// One receiver in `flows.json`.
#[derive(Debug, serde::Serialize)]
pub(super) struct ReceiverOutcome {
    /// Its node.
    pub(super) node: String,
    /// Seconds from the flow's start to completion, if it completed.
    pub(super) completed_after_s: Option<f64>,
    /// Its exit status if it ended by itself ("exit status: 0", ...).
    pub(super) exit: Option<String>,
}

/// Cumulative bytes of `flow` delivered to `node` at `t`, interpolated between samples.
fn delivered_at(samples: &[Sample], node: usize, flow: usize, t: f64) -> f64 {
    let at = |s: &Sample| {
        s.delivered
            .get(node)
            .and_then(|v| v.get(flow))
            .copied()
            .unwrap_or(0) as f64
    };
    let i = samples.partition_point(|s| s.t < t);
    match (i.checked_sub(1).map(|j| &samples[j]), samples.get(i)) {
        (_, None) => samples.last().map_or(0.0, at),
        (None, Some(b)) => at(b) * (t / b.t.max(1e-9)).clamp(0.0, 1.0),
        (Some(a), Some(b)) => {
            let w = ((t - a.t) / (b.t - a.t).max(1e-9)).clamp(0.0, 1.0);
            at(a) + w * (at(b) - at(a))
        }
    }
}

/// The per-flow outcomes of an emulation (`flows.json`).
pub(super) fn outcomes(
    flows: &[Planned],
    procs: &[super::flows::Outcome],
    samples: &[Sample],
    report: &EmuReport,
) -> Vec<FlowOutcome> {
    let duration = samples.last().map_or(0.0, |s| s.t);
    let datagrams = |node: usize, flow: u32| -> u64 {
        report.hosts.get(node).map_or(0, |h| {
            h.datagrams_sent_by_flow
                .iter()
                .filter(|(f, _)| *f == flow)
                .map(|(_, n)| n)
                .sum()
        })
    };
    let mut spans = Vec::new();
    let mut out: Vec<FlowOutcome> = flows
        .iter()
        .map(|f| {
            let bytes = f.file_bytes();
            let receivers: Vec<ReceiverOutcome> = f
                .receivers
                .iter()
                .map(|(_, node, ..)| {
                    let p = procs
                        .iter()
                        .find(|p| p.flow == f.id && p.receiver.as_deref() == Some(node));
                    ReceiverOutcome {
                        node: node.clone(),
                        completed_after_s: p.and_then(|p| p.completed_at).map(|t| t - f.start),
                        exit: p.and_then(|p| p.status).map(|s| s.to_string()),
                    }
                })
                .collect();
            let all_done = !receivers.is_empty()
                && bytes.is_some()
                && receivers.iter().all(|r| r.completed_after_s.is_some());
            let end = if all_done {
                f.start
                    + receivers
                        .iter()
                        .filter_map(|r| r.completed_after_s)
                        .fold(0.0, f64::max)
            } else {
                f.stop.unwrap_or(duration).min(duration)
            };
            spans.push((f.name.clone(), f.start, end));
            FlowOutcome {
                name: f.name.clone(),
                kind: f.kind.name().to_string(),
                start_s: f.start,
                end_s: end,
                file_bytes: bytes,
                source_datagrams: datagrams(f.from.0, f.id),
                feedback_datagrams: f.receivers.iter().map(|r| datagrams(r.0, f.id)).sum(),
                delivered_kbps: 0.0,
                receivers,
                kbps_during: BTreeMap::new(),
            }
        })
        .collect();
    let rate = |f: &Planned, a: f64, b: f64| -> f64 {
        if b <= a || f.receivers.is_empty() {
            return 0.0;
        }
        let total: f64 = f
            .receivers
            .iter()
            .map(|r| {
                delivered_at(samples, r.0, f.id as usize, b)
                    - delivered_at(samples, r.0, f.id as usize, a)
            })
            .sum();
        total / f.receivers.len() as f64 * 8.0 / (b - a) / 1e3
    };
    for (o, f) in out.iter_mut().zip(flows) {
        o.delivered_kbps = rate(f, o.start_s, o.end_s);
        for (name, a, b) in &spans {
            if *name != f.name {
                o.kbps_during.insert(name.clone(), rate(f, *a, *b));
            }
        }
    }
    out
}
