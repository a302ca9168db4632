//! What an agent measured, typed: [`Agent::report`](crate::Agent::report) returns an
//! [`AgentReport`], [`crate::run`] reads its fields, and `summary.json` shows it as named
//! counters (`"counters": [["odata_bytes", 1400.0], ...]`) and, for senders, notes
//! (`"notes": [["acker", "10.0.0.5"]]`), in the order [`AgentReport::counters`] lists them.

use std::net::IpAddr;

use pgmcc::{Duration, Instant};
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// One agent's measurements.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentReport {
    /// A PGM source; `None` before it starts (no core sender exists yet).
    PgmSender(Option<PgmSenderReport>),
    /// A PGM receiver; `None` before it joins.
    PgmReceiver(Option<PgmReceiverReport>),
    /// A TCP sender.
    TcpSender(TcpSenderReport),
    /// A TCP sink.
    TcpSink(TcpSinkReport),
    /// An agent that measures nothing (e.g. a test's scripted agent).
    Other,
}

/// A PGM source's counters: the core sender's and its congestion controller's.
#[derive(Debug, Clone, PartialEq)]
pub struct PgmSenderReport {
    /// ODATA payload bytes sent.
    pub odata_bytes: u64,
    /// ODATA packets sent.
    pub odata_packets: u64,
    /// RDATA packets sent.
    pub rdata_packets: u64,
    /// Parity packets sent (on-demand FEC; also in `rdata_packets`).
    pub parity_packets: u64,
    /// Pro-active parity packets sent (ODATA; `SenderConfig::proactive_parity`).
    pub proactive_parity_packets: u64,
    /// NAK packets received.
    pub naks_received: u64,
    /// Repairs NAKs asked for beyond their source's share (`SenderConfig::nak_source_share`).
    pub nak_sqns_source_limited: u64,
    /// Times new data waited for the transmit window's NAK horizon
    /// (`SenderConfig::hold_for_naks`).
    pub odata_held: u64,
    /// ACKs from the acker processed.
    pub acks: u64,
    /// Acker switches, as the controller counts them (not the first election).
    pub acker_switches: u64,
    /// Window halvings (rate cuts for the rate-based controllers).
    pub loss_events: u64,
    /// Stall timeouts.
    pub stalls: u64,
    /// Ackers whose loss reports claimed far more loss than their ACKs showed.
    pub reports_discredited: u64,
    /// The controller's window (0 without a controller).
    pub window: f64,
    /// The current acker, if any.
    pub acker: Option<IpAddr>,
    /// Every acker change the controller announced, with its time (for plots; not a
    /// counter).
    pub acker_changes: Vec<(Instant, IpAddr)>,
}

/// A PGM receiver's counters.
#[derive(Debug, Clone, PartialEq)]
pub struct PgmReceiverReport {
    /// Application bytes delivered in order.
    pub bytes_delivered: u64,
    /// Sequence numbers reported unrecoverable.
    pub unrecoverable_sqns: u64,
    /// NAK packets sent.
    pub naks_sent: u64,
    /// ACKs sent (pgmcc ACKs and TFMCC reports).
    pub acks_sent: u64,
    /// Gaps NAKed at once by a worst receiver (low-weight controllers).
    pub quick_nak_gaps: u64,
    /// Missing sequence numbers given up because the source's trail passed them, because
    /// their NAKs went unanswered for the give-up time, or because the receive window
    /// overflowed (`ReceiverStats::given_up_*`).
    pub given_up: [u64; 3],
}

/// A TCP sender's counters and state at the time of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpSenderReport {
    /// Bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// Payload bytes transmitted, retransmissions included.
    pub bytes_sent: u64,
    /// Segments transmitted, retransmissions included.
    pub segments_sent: u64,
    /// Segments retransmitted.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Fast retransmits (entries into fast recovery).
    pub fast_retransmits: u64,
    /// New segments sent on the first two duplicate ACKs (RFC 3042).
    pub limited_transmits: u64,
    /// Tail loss probes sent (RACK-TLP).
    pub loss_probes: u64,
    /// Probes that resent the last segment and repaired its loss (cwnd halved).
    pub probe_recoveries: u64,
    /// Retransmissions RACK found lost.
    pub lost_retransmits: u64,
    /// Congestion window, bytes.
    pub cwnd_bytes: f64,
    /// Congestion window, segments.
    pub cwnd_segments: f64,
    /// Slow-start threshold, bytes.
    pub ssthresh_bytes: f64,
    /// Smoothed RTT, once there is a sample.
    pub srtt: Option<Duration>,
    /// Retransmission timeout, backoff included.
    pub rto: Duration,
    /// RTT samples taken.
    pub rtt_samples: u64,
    /// ACKs received.
    pub acks_received: u64,
    /// The sink's address.
    pub dst: IpAddr,
}

/// A TCP sink's counters.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpSinkReport {
    /// Bytes delivered in order.
    pub bytes_delivered: u64,
    /// Data segments received, duplicates included.
    pub segments_received: u64,
    /// Segments entirely below the next byte expected.
    pub duplicate_segments: u64,
    /// Segments above a hole.
    pub out_of_order_segments: u64,
    /// ACKs sent.
    pub acks_sent: u64,
}

impl AgentReport {
    /// The counters by name, in the order `summary.json` lists them.
    pub fn counters(&self) -> Vec<(&'static str, f64)> {
        match self {
            AgentReport::PgmSender(Some(r)) => vec![
                ("odata_bytes", r.odata_bytes as f64),
                ("odata_packets", r.odata_packets as f64),
                ("rdata_packets", r.rdata_packets as f64),
                ("parity_packets", r.parity_packets as f64),
                (
                    "proactive_parity_packets",
                    r.proactive_parity_packets as f64,
                ),
                ("naks_received", r.naks_received as f64),
                ("nak_sqns_source_limited", r.nak_sqns_source_limited as f64),
                ("odata_held", r.odata_held as f64),
                ("acks", r.acks as f64),
                ("acker_switches", r.acker_switches as f64),
                ("loss_events", r.loss_events as f64),
                ("stalls", r.stalls as f64),
                ("reports_discredited", r.reports_discredited as f64),
                ("window", r.window),
            ],
            AgentReport::PgmReceiver(Some(r)) => vec![
                ("bytes_delivered", r.bytes_delivered as f64),
                ("unrecoverable_sqns", r.unrecoverable_sqns as f64),
                ("naks_sent", r.naks_sent as f64),
                ("acks_sent", r.acks_sent as f64),
                ("quick_nak_gaps", r.quick_nak_gaps as f64),
                ("given_up_trail", r.given_up[0] as f64),
                ("given_up_patience", r.given_up[1] as f64),
                ("given_up_overflow", r.given_up[2] as f64),
            ],
            AgentReport::TcpSender(r) => {
                let ms = |d: Duration| d.as_secs_f64() * 1e3;
                vec![
                    ("bytes_acked", r.bytes_acked as f64),
                    ("bytes_sent", r.bytes_sent as f64),
                    ("segments_sent", r.segments_sent as f64),
                    ("retransmits", r.retransmits as f64),
                    ("timeouts", r.timeouts as f64),
                    ("fast_retransmits", r.fast_retransmits as f64),
                    ("limited_transmits", r.limited_transmits as f64),
                    ("loss_probes", r.loss_probes as f64),
                    ("probe_recoveries", r.probe_recoveries as f64),
                    ("lost_retransmits", r.lost_retransmits as f64),
                    ("cwnd_bytes", r.cwnd_bytes),
                    ("cwnd_segments", r.cwnd_segments),
                    ("ssthresh_bytes", r.ssthresh_bytes),
                    ("srtt_ms", r.srtt.map_or(0.0, ms)),
                    ("rto_ms", ms(r.rto)),
                    ("rtt_samples", r.rtt_samples as f64),
                    ("acks_received", r.acks_received as f64),
                ]
            }
            AgentReport::TcpSink(r) => vec![
                ("bytes_delivered", r.bytes_delivered as f64),
                ("segments_received", r.segments_received as f64),
                ("duplicate_segments", r.duplicate_segments as f64),
                ("out_of_order_segments", r.out_of_order_segments as f64),
                ("acks_sent", r.acks_sent as f64),
            ],
            AgentReport::PgmSender(None) | AgentReport::PgmReceiver(None) | AgentReport::Other => {
                Vec::new()
            }
        }
    }

    /// Notes by name: the PGM source's acker, the TCP sender's destination.
    pub fn notes(&self) -> Vec<(&'static str, String)> {
        match self {
            AgentReport::PgmSender(Some(PgmSenderReport { acker: Some(a), .. })) => {
                vec![("acker", a.to_string())]
            }
            AgentReport::TcpSender(r) => vec![("dst", r.dst.to_string())],
            _ => Vec::new(),
        }
    }

    /// The acker changes of a PGM source (empty for other agents).
    pub fn acker_changes(&self) -> &[(Instant, IpAddr)] {
        match self {
            AgentReport::PgmSender(Some(r)) => &r.acker_changes,
            _ => &[],
        }
    }

    /// Whether the agent sends a flow (its notes are part of `summary.json`).
    fn is_sender(&self) -> bool {
        matches!(self, AgentReport::PgmSender(_) | AgentReport::TcpSender(_))
    }
}

/// `{"counters": [[name, value], ...]}`, plus `"notes": [[name, text], ...]` for senders:
/// the shape `summary.json` has always had (flattened into a flow or a receiver).
impl Serialize for AgentReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let sender = self.is_sender();
        let mut s = serializer.serialize_struct("AgentReport", 1 + usize::from(sender))?;
        s.serialize_field("counters", &self.counters())?;
        if sender {
            s.serialize_field("notes", &self.notes())?;
        }
        s.end()
    }
}
