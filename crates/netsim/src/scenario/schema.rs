//! The scenario file as serde reads it: one struct per TOML table, every key as written
//! (with its span, for errors, where a value can be wrong). Unknown keys are refused here
//! (`deny_unknown_fields`); what the values mean is checked in `validate`.

use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    pub(super) name: Option<String>,
    pub(super) description: Option<String>,
    pub(super) seed: Option<u64>,
    pub(super) duration: Spanned<String>,
    pub(super) sample: Option<Spanned<String>>,
    pub(super) jitter: Option<Spanned<String>>,
    #[serde(default, rename = "node")]
    pub(super) nodes: Vec<NodeSpec>,
    #[serde(default, rename = "link")]
    pub(super) links: Vec<LinkSpec>,
    #[serde(default, rename = "flow")]
    pub(super) flows: Vec<FlowSpec>,
    pub(super) reproduce: Option<ReproduceSpec>,
}

/// `[reproduce]`: the published result the scenario reproduces.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReproduceSpec {
    pub(super) experiment: String,
    pub(super) source: String,
    pub(super) tcp: Spanned<String>,
    pub(super) pgm: Spanned<String>,
    pub(super) from: Option<Spanned<String>>,
    pub(super) to: Option<Spanned<String>>,
    pub(super) published_f: Option<f64>,
    pub(super) expectation: Option<String>,
    pub(super) explanation: Option<String>,
}

/// `[[node]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NodeSpec {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) ne: bool,
    pub(super) suppression: Option<Spanned<String>>,
}

/// `[link.gilbert]`: Gilbert-Elliott loss.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GilbertSpec {
    pub(super) p_gb: f64,
    pub(super) p_bg: f64,
    pub(super) loss_good: f64,
    pub(super) loss_bad: f64,
}

/// `[[link]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LinkSpec {
    pub(super) from: Spanned<String>,
    pub(super) to: Spanned<String>,
    pub(super) rate: Spanned<String>,
    pub(super) delay: Spanned<String>,
    pub(super) queue: Spanned<String>,
    pub(super) loss: Option<Spanned<f64>>,
    pub(super) gilbert: Option<GilbertSpec>,
    pub(super) duplex: Option<bool>,
}

/// `[[flow.receiver]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReceiverSpec {
    pub(super) node: Spanned<String>,
    pub(super) join: Option<Spanned<String>>,
    pub(super) leave: Option<Spanned<String>>,
    pub(super) reports: Option<bool>,
    pub(super) claim_loss: Option<Spanned<f64>>,
    pub(super) claim_rtt: Option<Spanned<String>>,
}

/// `[[flow]]`: every key of every kind and controller; `validate` refuses the ones that do
/// not apply to the flow's kind and `cc`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FlowSpec {
    pub(super) name: Spanned<String>,
    pub(super) kind: Spanned<String>,
    pub(super) from: Spanned<String>,
    pub(super) to: Option<Spanned<String>>,
    pub(super) group: Option<Spanned<String>>,
    #[serde(default, rename = "receiver")]
    pub(super) receivers: Vec<ReceiverSpec>,
    pub(super) start: Option<Spanned<String>>,
    pub(super) start_jitter: Option<Spanned<String>>,
    pub(super) stop: Option<Spanned<String>>,
    pub(super) bytes: Option<u64>,
    pub(super) payload: Option<Spanned<u32>>,
    pub(super) c: Option<Spanned<f64>>,
    pub(super) model: Option<Spanned<String>>,
    pub(super) rtt_unit: Option<Spanned<String>>,
    pub(super) adaptive_timeout: Option<Spanned<BoolOrName>>,
    pub(super) stall_min: Option<Spanned<String>>,
    pub(super) rate_limit: Option<Spanned<String>>,
    pub(super) delayed_ack: Option<bool>,
    pub(super) min_rto: Option<Spanned<String>>,
    pub(super) rto: Option<Spanned<String>>,
    pub(super) limited_transmit: Option<bool>,
    pub(super) rwnd: Option<Spanned<u32>>,
    pub(super) initial_window: Option<Spanned<u32>>,
    pub(super) partial_ack_restarts_timer: Option<bool>,
    pub(super) fast_retransmit_restarts_timer: Option<bool>,
    pub(super) timestamps: Option<bool>,
    pub(super) rack: Option<bool>,
    pub(super) repairs: Option<bool>,
    pub(super) repair_budget: Option<Spanned<f64>>,
    pub(super) nak_source_share: Option<Spanned<f64>>,
    pub(super) repair_holdoff: Option<bool>,
    pub(super) fec: Option<Spanned<u32>>,
    pub(super) txw_sqns: Option<Spanned<u32>>,
    pub(super) proactive_parity: Option<Spanned<u32>>,
    pub(super) hold_for_naks: Option<bool>,
    pub(super) nak_backoff: Option<Spanned<String>>,
    pub(super) realign_tokens: Option<bool>,
    pub(super) accounting: Option<Spanned<String>>,
    pub(super) recovery: Option<Spanned<String>>,
    pub(super) loss_detection: Option<Spanned<String>>,
    pub(super) report_bar: Option<bool>,
    pub(super) slow_start: Option<Spanned<String>>,
    pub(super) loss_report: Option<Spanned<String>>,
    pub(super) election: Option<Spanned<String>>,
    pub(super) silent_receivers: Option<Spanned<String>>,
    pub(super) acker_reports: Option<Spanned<String>>,
    pub(super) repair_accounting: Option<Spanned<String>>,
    pub(super) cc: Option<Spanned<String>>,
    /// Pseudofed knobs (`cc = "pseudofed"`, docs/pseudofed.md).
    pub(super) representatives: Option<Spanned<u32>>,
    pub(super) rate_min: Option<Spanned<String>>,
    pub(super) delta_rate: Option<Spanned<f64>>,
    pub(super) wait: Option<Spanned<f64>>,
    pub(super) suppression: Option<Spanned<f64>>,
    /// Low-weight knobs (`cc = "lowweight"`, docs/lowweight.md).
    pub(super) rate_floor: Option<Spanned<String>>,
    pub(super) rate_ceiling: Option<Spanned<String>>,
}

/// A key that takes `true` / `false` or a variant's name (`adaptive_timeout`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum BoolOrName {
    /// `true` or `false`.
    Bool(bool),
    /// A name, checked where the key is read.
    Name(String),
}

/// Which kind of flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowKind {
    /// PGM with pgmcc congestion control.
    Pgmcc,
    /// PGM with only a rate limiter.
    Pgm,
    /// TCP Reno.
    TcpReno,
    /// TCP NewReno.
    TcpNewReno,
    /// TCP SACK.
    TcpSack,
    /// OpenPGM 5.3 at a fixed rate (`interop/pgm-send`, `pgm-recv`): emulation only.
    OpenPgm,
    /// uftp with TFMCC (Debian `uftp`, `-C tfmcc`): emulation only.
    Uftp,
    /// NORM with NORM-CC (`interop/norm-peer`, Debian `libnorm-dev`): emulation only.
    Norm,
}

impl FlowKind {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            FlowKind::Pgmcc => "pgmcc",
            FlowKind::Pgm => "pgm",
            FlowKind::TcpReno => "tcp-reno",
            FlowKind::TcpNewReno => "tcp-newreno",
            FlowKind::TcpSack => "tcp-sack",
            FlowKind::OpenPgm => "openpgm",
            FlowKind::Uftp => "uftp",
            FlowKind::Norm => "norm",
        }
    }

    /// True for the kinds that are other implementations' real programs, which only
    /// `pgmcc emu` runs (the simulator has no model of them).
    pub fn is_external(self) -> bool {
        matches!(self, FlowKind::OpenPgm | FlowKind::Uftp | FlowKind::Norm)
    }

    /// True for the TCP kinds.
    pub fn is_tcp(self) -> bool {
        matches!(
            self,
            FlowKind::TcpReno | FlowKind::TcpNewReno | FlowKind::TcpSack
        )
    }
}
