//! The receiver side of congestion control, behind one interface: the receiver calls the
//! hooks of [`Feedback`] and never knows which controller the source runs.
//!
//! Every controller here rides on pgmcc's wire (OPT_PGMCC_DATA on ODATA, OPT_PGMCC_FEEDBACK
//! on NAKs and ACKs), so every receiver measures the same [`report::Report`] (loss, timestamp
//! echo, receive bitmap) and plays pgmcc's [`pgmcc::Acker`] role; a controller's own option on
//! the ODATA switches the receiver into that controller's role, one file each:
//!
//! * [`pgmcc`]: ACK when named acker, answer election requests (no option of its own);
//! * [`tfmcc`]: TFMCC feedback rounds (OPT_TFMCC_DATA);
//! * [`pseudofed`]: Pseudofed representatives' reports (OPT_PSEUDOFED);
//! * [`lowweight`]: the low-weight quick NAKer, no ACKs (OPT_LOWWEIGHT).
//!
//! Hooks, in the order the receiver calls them for one ODATA: [`Feedback::nak_backoff`]
//! before the window grows, [`Feedback::on_packet`] when it holds a new packet,
//! [`Feedback::on_gap`] and [`Feedback::on_lead`] when the lead moves, then
//! [`Feedback::on_odata`]; SPMs that move the lead call [`Feedback::on_gap`]; timers run in
//! [`Feedback::on_timeout`] by [`Feedback::next_deadline`]. What a hook wants sent is taken
//! with [`Feedback::poll_transmit`] right after it, so the receiver's one transmit queue keeps
//! the order of events. NAKs ask [`Feedback::nak_report`] for the report they carry.
//!
//! Adding a controller's receiver side: a file here, a [`Role`] variant if it keeps state,
//! and its branch in [`Feedback::on_odata`] (and the timer hooks if it has timers).

mod lowweight;
mod pgmcc;
mod pseudofed;
mod report;
mod tfmcc;

use std::collections::VecDeque;
use std::net::IpAddr;

use pgm_wire::{AckRepr, Options, PgmccFeedback, Pseudofed, ReportBar};
use serde::Serialize;

use crate::rng::Rng;
use crate::time::{Duration, Instant};
use report::Report;

/// What the receiver's configuration says about feedback.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FeedbackConfig {
    /// This receiver's unicast NLA (its identity in reports).
    pub(crate) nla: IpAddr,
    /// Loss filter weight `W` in 1/65536.
    pub(crate) loss_filter_w: u32,
    /// Upper bound of the random wait before answering an election request.
    pub(crate) ack_bo_ivl: Duration,
    /// Report TFRC's loss event rate, merging losses within this interval.
    pub(crate) loss_events: Option<Duration>,
}

/// Counters of the controller-specific feedback a receiver sent or held back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FeedbackStats {
    /// TFMCC round reports sent by a receiver that is not the CLR (also counted in the
    /// receiver's `acks_sent`: they travel as ACKs).
    pub tfmcc_reports_sent: u64,
    /// TFMCC round reports cancelled because the source echoed a rate at most ours.
    pub tfmcc_reports_suppressed: u64,
    /// Pseudofed reports (CC or CI on an ACK with OPT_PSEUDOFED) sent.
    pub pseudofed_reports: u64,
    /// Gaps this receiver NAKed without back-off as the low-weight quick NAKer.
    pub quick_nak_gaps: u64,
    /// Pseudofed reports of a non-representative cancelled by suppression.
    pub pseudofed_suppressed: u64,
    /// ACKs of repairs (RDATA) that named this receiver acker. Only a source that puts
    /// OPT_PGMCC_DATA on its repairs elicits them (OpenPGM's does, ours does not); also
    /// counted in the receiver's `acks_sent`.
    pub repair_acks: u64,
}

/// An ACK a feedback role wants sent to the source (ACKs go straight to it, not through
/// network elements).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FeedbackAck {
    /// RX_MAX and the receive bitmap, as the packet that elicited the ACK left them.
    pub(crate) ack: AckRepr,
    /// The receiver report (OPT_PGMCC_FEEDBACK).
    pub(crate) report: PgmccFeedback,
    /// A Pseudofed CC or CI (OPT_PSEUDOFED).
    pseudofed: Option<Pseudofed>,
    /// An acker's per-packet ACK: a newer one may replace it while still unsent.
    pub(crate) coalesce: bool,
    /// Its proof of receipt (OPT_ACK_PROOF), taken when it was queued.
    proof: Option<u32>,
}

impl FeedbackAck {
    fn plain((ack, report): (AckRepr, PgmccFeedback), coalesce: bool) -> FeedbackAck {
        FeedbackAck {
            ack,
            report,
            pseudofed: None,
            coalesce,
            proof: None,
        }
    }

    /// A representative's ACK carrying its Pseudofed CC or CI.
    fn pseudofed((ack, report): (AckRepr, PgmccFeedback), opt: Pseudofed) -> FeedbackAck {
        FeedbackAck {
            pseudofed: Some(opt),
            ..FeedbackAck::plain((ack, report), false)
        }
    }

    /// True when a newer coalescing ACK may take this one's place: it carries nothing but
    /// the receive state and the report.
    pub(crate) fn replaceable(&self) -> bool {
        self.pseudofed.is_none()
    }

    /// The options the ACK carries.
    pub(crate) fn options(&self) -> Options<'static> {
        Options {
            pgmcc_feedback: Some(self.report),
            pseudofed: self.pseudofed,
            ack_proof: self.proof.map(|value| pgm_wire::AckProof { value }),
            ..Options::default()
        }
    }

    /// Counts the ACK as sent.
    pub(crate) fn count_sent(&self, stats: &mut FeedbackStats) {
        if self.pseudofed.is_some() {
            stats.pseudofed_reports += 1;
        }
    }
}

/// The controller role a session's receiver plays beyond pgmcc's, set by the controller's
/// option on ODATA.
#[derive(Debug, Clone, Copy)]
enum Role {
    /// pgmcc's role only (also the low-weight controllers', which keep no state).
    Pgmcc,
    /// TFMCC feedback rounds.
    Tfmcc(tfmcc::Rounds),
    /// Pseudofed representatives.
    Pseudofed(pseudofed::Representative),
}

/// Feedback state of one receiver for one session.
#[derive(Debug, Clone)]
pub(crate) struct Feedback {
    report: Report,
    acker: pgmcc::Acker,
    role: Role,
    /// ACKs waiting for [`Feedback::poll_transmit`]; a hook queues at most two.
    out: VecDeque<FeedbackAck>,
    /// The loss rate above which this receiver's reports must reach the source, as the
    /// source last advertised it (OPT_REPORT_BAR).
    report_bar: Option<u16>,
    /// Signed mode: packets received but not yet verified, with their nonces
    /// ([`Feedback::on_held`]).
    held: VecDeque<(u32, Option<u32>)>,
}

/// Unverified packets whose nonces a receiver keeps until their list verifies: two of the
/// largest blocks (`signed::MAX_BLOCK`).
const HELD: usize = 256;

/// ACKs one hook call may queue (the receiver drains them after each call).
const MAX_OUT: usize = 4;

impl Feedback {
    /// Nothing heard yet.
    pub(crate) fn new(cfg: &FeedbackConfig) -> Feedback {
        Feedback {
            report: Report::new(cfg.nla, cfg.loss_filter_w, cfg.loss_events),
            acker: pgmcc::Acker::default(),
            role: Role::Pgmcc,
            out: VecDeque::new(),
            report_bar: None,
            held: VecDeque::new(),
        }
    }

    fn push(&mut self, mut a: FeedbackAck) {
        // The proof is taken now, while the nonces of the packets it covers are held: an ACK
        // may wait behind a batch of newer packets before it is sent.
        a.proof = self.report.proof(&a.ack);
        if self.out.len() >= MAX_OUT {
            self.out.pop_front();
        }
        self.out.push_back(a);
    }

    /// The NAK back-off for the gaps this ODATA reveals, when the controller sets one
    /// instead of NAK_BO_IVL (the low-weight quick NAKer: zero).
    pub(crate) fn nak_backoff(&self, opts: &Options<'_>, cfg: &FeedbackConfig) -> Option<Duration> {
        lowweight::quick_naker(opts, cfg.nla).then_some(Duration::ZERO)
    }

    /// Data packet `s` arrived for the first time (ODATA or RDATA), with its nonce
    /// (OPT_ACK_PROOF) if it carried one.
    pub(crate) fn on_packet(&mut self, s: u32, nonce: Option<u32>) {
        self.report.on_packet(s, nonce);
    }

    /// Signed mode: data packet `s` arrived but waits unverified for its list. It is not
    /// acknowledged yet: a forgery ahead of the source would carry the ACKs' RX_MAX past
    /// the source's lead, and the source refuses ACKs for data it never sent. Its nonce is
    /// kept for [`Feedback::on_verified`] (the latest [`HELD`] at most).
    pub(crate) fn on_held(&mut self, s: u32, nonce: Option<u32>) {
        if self.held.len() >= HELD {
            self.held.pop_front();
        }
        self.held.push_back((s, nonce));
    }

    /// Signed mode: held packets `sqns` verified. They are acknowledged now, in one ACK
    /// when this receiver is the acker (the ODATA that would have carried their ACKs came
    /// while they waited).
    pub(crate) fn on_verified(&mut self, now: Instant, sqns: &[u32]) {
        let mut any = false;
        for &s in sqns {
            if let Some(i) = self.held.iter().position(|&(h, _)| h == s) {
                if let Some((_, nonce)) = self.held.remove(i) {
                    self.report.on_packet(s, nonce);
                    any = true;
                }
            }
        }
        if any && self.acker.named() && matches!(self.role, Role::Pgmcc) {
            if let Some(a) = self.report.ack(now) {
                self.push(FeedbackAck::plain(a, true));
            }
        }
    }

    /// `n` sequence numbers were found missing at `now`.
    pub(crate) fn on_gap(&mut self, now: Instant, n: u32) {
        self.report.on_gap(now, n);
    }

    /// The ODATA that extended the lead arrived.
    pub(crate) fn on_lead(&mut self) {
        self.report.on_lead();
    }

    /// True once a report can be built (the source's timestamp was heard).
    pub(crate) fn can_report(&self) -> bool {
        self.report.can_report()
    }

    /// An NCF or SPM from the source arrived with options `opts`: the report bar and the
    /// loss estimate the source asks for; `grtt` is the group RTT it advertised, over which
    /// loss events merge.
    pub(crate) fn on_control(&mut self, opts: &Options<'_>, grtt: Option<Duration>) {
        let Some(bar) = opts.report_bar else {
            return;
        };
        self.report_bar = (bar.loss != ReportBar::NONE).then_some(bar.loss);
        if !matches!(self.role, Role::Pgmcc) {
            return;
        }
        match (bar.intervals, grtt) {
            (true, Some(g)) => self.report.use_loss_events(g),
            // Without a group RTT there is nothing to merge losses over: keep the filter.
            (true, None) => {}
            (false, _) => self.report.use_filter(),
        }
    }

    /// True when this receiver's loss rate is above the report bar the source last
    /// advertised: it may be a worse receiver than the acker, so its NAKs, which carry
    /// its report, go out whatever NCFs, peer NAKs or FEC parity would have spared
    /// (`docs/pgmcc.md`, "Reports despite suppression"). Never without the advertisement.
    pub(crate) fn must_report(&self, now: Instant) -> bool {
        let Some(acker) = self.report_bar else {
            return false;
        };
        matches!(self.role, Role::Pgmcc)
            && self
                .report
                .feedback(now)
                .is_some_and(|f| f.loss_rate > acker)
    }

    /// The report a NAK carries now, if any.
    pub(crate) fn nak_report(&self, now: Instant) -> Option<PgmccFeedback> {
        match self.role {
            // Pseudofed receivers report on ACKs only (their NAKs are for repairs).
            Role::Pseudofed(_) => None,
            _ => self.report.feedback(now),
        }
    }

    /// An ODATA with options `opts` arrived at `now`; `lost_first` is the first sequence
    /// number of the gap it revealed.
    pub(crate) fn on_odata(
        &mut self,
        now: Instant,
        opts: &Options<'_>,
        lost_first: Option<u32>,
        cfg: &FeedbackConfig,
        rng: &mut Rng,
        stats: &mut FeedbackStats,
    ) {
        if lost_first.is_some() && lowweight::quick_naker(opts, cfg.nla) {
            stats.quick_nak_gaps += 1;
        }
        let mut ack = None;
        if let Some(d) = opts.pgmcc_data {
            self.report.stamp(d.tstamp, now);
            let is_clr = d.acker == cfg.nla;
            if let Some(t) = opts.tfmcc_data {
                if !matches!(self.role, Role::Tfmcc(_)) {
                    self.role = Role::Tfmcc(tfmcc::Rounds::new(t));
                }
                if let Role::Tfmcc(r) = &mut self.role {
                    r.on_data(&mut self.report, t, is_clr, now, rng, stats);
                }
            }
            let due = match &self.role {
                Role::Tfmcc(r) => r.clr_due(now, opts.tfmcc_data),
                _ => true,
            };
            if self
                .acker
                .on_odata(d.acker, cfg.nla, due, now, rng, cfg.ack_bo_ivl)
            {
                // The ACK describes the receive state as this ODATA left it.
                ack = self.report.ack(now);
                if let Role::Tfmcc(r) = &mut self.role {
                    r.clr_acked(now);
                }
            }
        }
        // The low-weight and Pseudofed roles cancel what pgmcc's role just decided. When the
        // packet asked for an election, pgmcc's role has already drawn its random wait, so
        // these receivers draw a number they never use; dropping the draw would change the
        // random stream and every seeded result of those controllers (left for a session
        // that may change them).
        if lowweight::silences_acks(opts) {
            ack = None;
            self.acker.cancel();
        }
        if let Some(adv) = opts.pseudofed {
            // Pseudofed's own reports replace pgmcc's acker ACKs and elections.
            ack = None;
            self.acker.cancel();
            if !matches!(self.role, Role::Pseudofed(_)) {
                self.role = Role::Pseudofed(pseudofed::Representative::new(adv, now));
            }
            if let Role::Pseudofed(p) = &mut self.role {
                if let Some((ack, report, opt)) =
                    p.on_data(&self.report, adv, cfg.nla, now, lost_first, rng, stats)
                {
                    self.push(FeedbackAck::pseudofed((ack, report), opt));
                }
            }
        }
        if let Some(a) = ack {
            self.push(FeedbackAck::plain(a, true));
        }
    }

    /// A repair (RDATA) with options `opts` filled a gap at `now`. A source that puts
    /// OPT_PGMCC_DATA on its repairs counts the acker's ACKs of them as returned tokens
    /// (OpenPGM's `pgm_on_ack`: every newly acknowledged bit is a token, and its receiver
    /// ACKs ODATA and RDATA alike); without those ACKs the tokens its repairs took never
    /// come back and its window closes. So when the repair names this receiver acker, it
    /// is ACKed as OpenPGM's receiver does, with the receive state as the repair left it.
    /// Our source puts the option on ODATA only: its sessions never come here.
    pub(crate) fn on_rdata(
        &mut self,
        now: Instant,
        opts: &Options<'_>,
        cfg: &FeedbackConfig,
        stats: &mut FeedbackStats,
    ) {
        let Some(d) = opts.pgmcc_data else {
            return;
        };
        if d.acker != cfg.nla
            || !matches!(self.role, Role::Pgmcc)
            || lowweight::silences_acks(opts)
            || opts.pseudofed.is_some()
        {
            return;
        }
        // The echo answers this repair, as an ODATA's ACK answers the ODATA.
        self.report.stamp(d.tstamp, now);
        if let Some(a) = self.report.ack(now) {
            stats.repair_acks += 1;
            self.push(FeedbackAck::plain(a, true));
        }
    }

    /// Runs the feedback timers due at `now`.
    pub(crate) fn on_timeout(&mut self, now: Instant, stats: &mut FeedbackStats) {
        if let Role::Tfmcc(r) = &mut self.role {
            if r.on_timeout(now) {
                if let Some(a) = self.report.ack(now) {
                    stats.tfmcc_reports_sent += 1;
                    self.push(FeedbackAck::plain(a, false));
                }
            }
        }
        if self.acker.on_timeout(now) {
            if let Some(a) = self.report.ack(now) {
                self.push(FeedbackAck::plain(a, false));
            }
        }
        if let Role::Pseudofed(p) = &mut self.role {
            if let Some(opt) = p.on_timeout(now) {
                if let Some(a) = self.report.ack(now) {
                    self.push(FeedbackAck::pseudofed(a, opt));
                }
            }
        }
    }

    /// When [`Feedback::on_timeout`] next has work.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        let role = match &self.role {
            Role::Pgmcc => None,
            Role::Tfmcc(r) => r.deadline(),
            Role::Pseudofed(p) => p.deadline(),
        };
        [self.acker.deadline(), role].into_iter().flatten().min()
    }

    /// The next ACK to send.
    pub(crate) fn poll_transmit(&mut self) -> Option<FeedbackAck> {
        self.out.pop_front()
    }
}
