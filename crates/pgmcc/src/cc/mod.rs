//! pgmcc congestion control (Rizzo, SIGCOMM 2000), one mechanism per file as the paper
//! names them:
//!
//! * [`loss_filter`]: receiver loss measurement (§3.2.2).
//! * [`ack_tracker`]: ACK bitmaps merged, lost/duplicate/reordered ACKs, dupack loss
//!   detection (§3.3).
//! * [`window`]: the window and token controller (§3.4).
//! * [`throughput`]: the TCP throughput models that rank receivers (§3.5).
//! * [`tfmcc`]: a TFMCC-style equation-based rate controller (RFC 4654), the baseline.
//! * [`pseudofed`]: Pseudofed's representative-based rate controller (DeLucia and
//!   Obraczka), with its receiver side in the receiver module (`docs/pseudofed.md`).
//! * [`lowweight`]: the low-weight multi-sender controller (Scholl and Parnes) and an
//!   ACK-less pgmcc variant, both driven by the worst receiver's quick NAKs
//!   (`docs/lowweight.md`).
//! * [`pgmcc`]: acker election and tracking, RTT measurement, stalls, tying it together
//!   (§3.4-3.6), behind the [`CongestionControl`] trait.

pub mod ack_tracker;
pub(crate) mod feedback;
pub mod loss_filter;
pub mod lowweight;
pub mod pgmcc;
pub mod pseudofed;
pub mod registry;
pub mod tfmcc;
pub mod throughput;
pub mod window;

use std::net::IpAddr;

use pgm_wire::{AckRepr, Options, PgmccData, PgmccFeedback};
use serde::Serialize;

use crate::time::Instant;
pub use registry::{Controller, UnknownController};
use throughput::Operating;

/// Something the controller tells the application (or the trace).
#[derive(Debug, Clone, PartialEq)]
pub enum CcEvent {
    /// A new acker was elected; `from` is `None` at the first election. A switch is a move
    /// of the acker, not a congestion signal (§3.5).
    AckerChanged {
        /// Previous acker.
        from: Option<IpAddr>,
        /// New acker.
        to: IpAddr,
    },
    /// A loss was detected and the window halved.
    Congestion {
        /// The window after halving, in packets.
        window: f64,
    },
    /// No ACKs for a timeout while blocked: the window restarted at 1.
    Stalled {
        /// Consecutive stalls.
        stalls_in_a_row: u32,
    },
    /// Tokens became available after the sender had none (§3.9: unreliable senders can
    /// generate data on the fly).
    TokensAvailable {
        /// Whole tokens now available.
        tokens: u32,
    },
}

/// Counters of a controller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CcStats {
    /// ACKs from the acker processed.
    pub acks: u64,
    /// ACKs from receivers that are not the acker (counted, otherwise ignored).
    pub acks_ignored: u64,
    /// ACKs acknowledging data never sent (rejected).
    pub acks_rejected: u64,
    /// Receiver reports seen (NAKs and ACKs carrying OPT_PGMCC_FEEDBACK).
    pub reports: u64,
    /// Acker switches (not counting the first election).
    pub acker_switches: u64,
    /// Window halvings.
    pub loss_events: u64,
    /// Stall timeouts.
    pub stalls: u64,
    /// Data packets sent asking for an election.
    pub election_requests: u64,
    /// Tokens granted by the rate floor ([`pgmcc::PgmccConfig::min_interval`]).
    pub floor_tokens: u64,
}

/// A congestion controller for the PGM sender, in the style of quinn's `Controller`: the
/// sender reports what happens, the controller grants permission to send.
pub trait CongestionControl: std::fmt::Debug + Send {
    /// May one data packet (ODATA) be sent now? Repairs are not regulated (§3.8).
    fn can_send(&self) -> bool;
    /// Data packet `sqn` went out; returns the OPT_PGMCC_DATA it must carry.
    fn on_data_sent(&mut self, now: Instant, sqn: u32) -> PgmccData;
    /// Repair `sqn` (RDATA) went out. Repairs are never held back (§3.8); controllers that
    /// count them against their budget (the low-weight ones) do it here. Default: nothing.
    fn on_repair_sent(&mut self, now: Instant, sqn: u32) {
        let _ = (now, sqn);
    }
    /// An ACK arrived from `from`, with its OPT_PGMCC_FEEDBACK if present.
    fn on_ack(&mut self, now: Instant, from: IpAddr, ack: &AckRepr, fb: Option<&PgmccFeedback>);
    /// An ACK arrived with all its options; controllers that define their own options
    /// (Pseudofed) read them here. The default hands OPT_PGMCC_FEEDBACK to
    /// [`CongestionControl::on_ack`].
    fn on_ack_options(&mut self, now: Instant, from: IpAddr, ack: &AckRepr, opts: &Options<'_>) {
        self.on_ack(now, from, ack, opts.pgmcc_feedback.as_ref());
    }
    /// Adds this controller's own options to the ODATA being sent (after
    /// [`CongestionControl::on_data_sent`]); the default adds none.
    fn data_options(&mut self, now: Instant, opts: &mut Options<'_>) {
        let _ = (now, opts);
    }
    /// A NAK carrying a receiver report arrived.
    fn on_nak_report(&mut self, now: Instant, fb: &PgmccFeedback);
    /// A NAK of this session arrived, naming `sqns` (empty for parity NAKs), with its
    /// report if it carries one. Controllers that read loss from NAKs (the low-weight ones)
    /// use the sequence numbers; the default hands the report to
    /// [`CongestionControl::on_nak_report`].
    fn on_nak(&mut self, now: Instant, sqns: &[u32], fb: Option<&PgmccFeedback>) {
        let _ = sqns;
        if let Some(fb) = fb {
            self.on_nak_report(now, fb);
        }
    }
    /// When `on_timeout` next has work.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Runs expired timers.
    fn on_timeout(&mut self, now: Instant);
    /// The current acker.
    fn acker(&self) -> Option<IpAddr>;
    /// The current acker's latest operating point (RTT, loss), for applications (§3.9).
    fn acker_report(&self) -> Option<Operating>;
    /// The window, in packets.
    fn window(&self) -> f64;
    /// Whole tokens available.
    fn tokens(&self) -> u32;
    /// The next event.
    fn poll_event(&mut self) -> Option<CcEvent>;
    /// Counters.
    fn stats(&self) -> CcStats;
}

/// Which controller a sender runs; the factory for [`CongestionControl`] objects.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub enum CcConfig {
    /// No congestion control: the PGM rate limiter alone paces the session.
    #[default]
    None,
    /// pgmcc with the given knobs.
    Pgmcc(pgmcc::PgmccConfig),
    /// A TFMCC-style rate controller (RFC 4654 essentials), the comparison baseline.
    Tfmcc(tfmcc::TfmccConfig),
    /// Pseudofed's representative-based rate controller (`docs/pseudofed.md`).
    Pseudofed(pseudofed::PseudofedConfig),
    /// The low-weight multi-sender rate controller: no ACKs, quick NAKs from the worst
    /// receiver, rate floor and ceiling (`docs/lowweight.md`).
    LowWeight(lowweight::LowWeightConfig),
    /// pgmcc's window driven by the worst receiver's quick NAKs instead of ACKs
    /// (`docs/lowweight.md`).
    PgmccAckless(lowweight::AcklessConfig),
}

impl CcConfig {
    /// Builds the controller, or `None` for [`CcConfig::None`].
    pub fn build(&self, now: Instant) -> Option<Box<dyn CongestionControl>> {
        match self {
            CcConfig::None => None,
            CcConfig::Pgmcc(c) => Some(Box::new(pgmcc::Pgmcc::new(*c, now))),
            CcConfig::Tfmcc(c) => Some(Box::new(tfmcc::Tfmcc::new(*c, now))),
            CcConfig::Pseudofed(c) => Some(Box::new(pseudofed::Pseudofed::new(*c, now))),
            CcConfig::LowWeight(c) => Some(Box::new(lowweight::LowWeight::new(*c, now))),
            CcConfig::PgmccAckless(c) => Some(Box::new(lowweight::AcklessPgmcc::new(*c, now))),
        }
    }

    /// Bytes a data packet must keep free for the controller's own options beyond
    /// OPT_PGMCC_DATA (OPT_PSEUDOFED, OPT_TFMCC_DATA, OPT_LOWWEIGHT); 0 for pgmcc.
    pub fn data_option_room(&self) -> usize {
        match self {
            CcConfig::Pseudofed(c) => pseudofed::option_room(c),
            // OPT_TFMCC_DATA.
            CcConfig::Tfmcc(t) if t.feedback_rounds => 20,
            CcConfig::LowWeight(_) | CcConfig::PgmccAckless(_) => lowweight::OPTION_ROOM,
            _ => 0,
        }
    }
}
