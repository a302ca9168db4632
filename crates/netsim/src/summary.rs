//! What a run measured: per flow its rate series and counters, per receiver its goodput,
//! per link its load and losses. [`crate::run`] fills a [`Summary`] and writes it as
//! `summary.json`; [`crate::report`], [`crate::reproduce`] and [`crate::compare`] read it.
//! The types here are plain data; of the simulator they use only the agents' typed
//! [`AgentReport`].

use serde::Serialize;

use crate::agents::report::AgentReport;

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
    /// What the receiving agent measured (`"counters"` in `summary.json`).
    #[serde(flatten)]
    pub report: AgentReport,
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
    /// Congestion window per sample, in packets: pgmcc's W, TCP's cwnd in segments (empty
    /// for other kinds).
    pub window: Vec<f64>,
    /// NAKs received by the source per sample (PGM only).
    pub naks: Vec<u64>,
    /// Queue drops of this flow's packets (data, ACKs, NAKs, ...) on any link per sample:
    /// which flow a full queue hit, and when.
    pub drops: Vec<u64>,
    /// The same drops over the whole run.
    pub queue_drops: u64,
    /// Acker switches (pgmcc only).
    pub acker_switches: Vec<AckerSwitch>,
    /// Receivers (PGM) or the sink (TCP).
    pub receivers: Vec<ReceiverResult>,
    /// What the sending agent measured (`"counters"` and `"notes"`, e.g. the final acker,
    /// in `summary.json`).
    #[serde(flatten)]
    pub report: AgentReport,
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
    /// The same drops by flow name (flows that lost nothing here are left out).
    pub queue_drops_by_flow: std::collections::BTreeMap<String, u64>,
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
    /// Agent wake-ups the simulator's livelock guard pushed 1 µs ahead because the agent
    /// asked again for an instant already due without acting ([`crate::Sim::spins`]). 0 in
    /// a healthy run; anything else is a timer bug in an agent or the core it wraps.
    pub spins: u64,
    /// Flows in file order.
    pub flows: Vec<FlowResult>,
    /// Links with traffic.
    pub links: Vec<LinkResult>,
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
