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
                drops: vec![0; times.len()],
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
