//! The pgmcc sender controller: window and tokens (§3.4) run against one acker, elected and
//! tracked from receiver reports (§3.5), restarted after stalls (§3.6).
//!
//! RTT. OpenPGM's wire carries an explicit millisecond timestamp in OPT_PGMCC_DATA, echoed
//! (plus the receiver's hold time) in OPT_PGMCC_FEEDBACK; there is no field for the
//! receiver's `rxw_lead` on a NAK. The paper measures RTT in packets (`latest sqn sent -
//! rxw_lead`). We get the same quantity from the echo: the number of data packets sent since
//! the echoed time, looked up in a short send-time history (the draft's "implicit
//! timestamp", §2.5.2). [`RttUnit::Millis`] compares receivers by time instead.
//!
//! A change of acker is a move, never a congestion signal: the window is untouched, the ACK
//! tracker restarts at the first packet naming the new acker, and ACKs still arriving from
//! the previous acker for packets that named it keep regenerating tokens.

use std::collections::VecDeque;
use std::net::IpAddr;

use pgm_wire::{Options, PgmccData, PgmccFeedback, ReportBar};

use super::ack_tracker::AckTracker;
use super::report_check::{ReportCheck, Verdict};
use super::rtt::{SmoothedRtt, MAX_RTT_MS};
use super::silent::SilentReceivers;
use super::throughput::Operating;
use super::window::Window;
use super::{
    Ack, CcEvent, CcStats, CongestionControl, Events, Metrics, Nak, Repaired, RttSample,
    SourceLimits,
};
use crate::sqn;
use crate::time::{Duration, Instant};

mod config;
mod election;
mod former;

use former::{Discredited, Former, ACKER_LOSSES, FORMER_ACKERS, INFLATED_ACKS, INFLATION_MS};

pub use config::{
    Accounting, Election, LossDetection, LossReport, PgmccConfig, Recovery, Repairs, RtoFloor,
    RtoRestart, RttUnit, SlowStart, TimeoutPolicy,
};

#[derive(Debug, Clone, Copy)]
struct AckerState {
    addr: IpAddr,
    /// What the election compares candidates against (smoothed RTT; loss per
    /// [`PgmccConfig::election`]).
    op: Operating,
    /// The loss rate of the acker's latest report.
    reported: u32,
}

/// The acker's RFC 6298 estimator (a 1 ms granularity) and the stall timeout's backoff.
#[derive(Debug, Clone, Copy)]
struct Rto {
    est: SmoothedRtt,
    backoff: u32,
}

/// Clock granularity of the acker's RTT estimator.
const RTO_GRANULARITY: Duration = Duration::from_millis(1);

impl Rto {
    fn new() -> Rto {
        Rto {
            est: SmoothedRtt::new(),
            backoff: 0,
        }
    }

    fn srtt(&self) -> Option<Duration> {
        self.est.srtt()
    }

    fn sample(&mut self, r: Duration) {
        self.est.sample(r);
        self.backoff = 0;
    }

    /// The unbounded timeout, `fixed` before any sample.
    fn base(&self, fixed: Duration) -> Duration {
        self.est.rto(RTO_GRANULARITY).unwrap_or(fixed)
    }

    fn rto(&self, min: Duration, floor: RtoFloor, max: Duration, fixed: Duration) -> Duration {
        let base = match (self.est.rto(RTO_GRANULARITY), floor) {
            (None, _) => fixed,
            (Some(b), RtoFloor::Total) => b.max(min),
            (Some(b), RtoFloor::Variance) => {
                let srtt = self.est.srtt().unwrap_or_default();
                srtt + min.max(b.saturating_sub(srtt))
            }
        };
        (base * (1u32 << self.backoff.min(6))).min(max)
    }
}

/// The pgmcc controller.
#[derive(Debug)]
pub struct Pgmcc {
    /// What the source's transmit window keeps repairable (`set_source_limits`).
    limits: SourceLimits,
    cfg: PgmccConfig,
    window: Window,
    tracker: AckTracker,
    acker: Option<AckerState>,
    /// Former ackers and the packets that named them ([`Accounting::Pipe`]; bounded: the
    /// most recent [`FORMER_ACKERS`]).
    previous: VecDeque<Former>,
    /// Send-time history of data packets: (when sent, sqn), consecutive sequence numbers.
    history: VecDeque<(Instant, u32)>,
    /// [`LossDetection::Rack`]: the newest packet the acker acknowledged and its round
    /// trip, the least round trip seen, when the oldest unsettled packet below it counts
    /// as lost, and the tail probe sent and not yet passed.
    rack: Option<(u32, Duration)>,
    min_rtt: Option<Duration>,
    reo_deadline: Option<Instant>,
    probe: Option<u32>,
    last_sent: Option<u32>,
    /// When the last data packet left (for the rate floor).
    last_sent_at: Instant,
    /// The next data packet asks for an election.
    elect: bool,
    /// First data packet sent asking for the current election: the winner's ACKs count
    /// from there.
    elect_since: Option<u32>,
    stalls_in_a_row: u32,
    /// One transmission granted by the rate floor ([`Accounting::Pipe`]).
    floor_credit: bool,
    /// When the timeout was last reset, and the RTO state.
    timer_from: Instant,
    rto: Rto,
    events: Events,
    stats: CcStats,
    /// Receivers that NAK without reports ([`PgmccConfig::cap_for_silent`]).
    silent: SilentReceivers,
    /// Packets the acker's ACKs declared lost, latest [`ACKER_LOSSES`]: a silent receiver's
    /// loss the acker shared is already in the acker's reports.
    acker_lost: VecDeque<u32>,
    /// The current acker's reports against its ACKs ([`PgmccConfig::check_reports`]), and
    /// the window when it became acker.
    check: Option<ReportCheck>,
    window_at_switch: f64,
    /// Receivers whose reports were discredited, with what their ACKs showed: what their
    /// reports count as from then on (latest [`DISCREDITED`]).
    discredited: VecDeque<Discredited>,
    /// The current acker's ACK reports in a row whose RTT its ACKs showed to be inflated,
    /// and the longest RTT those ACKs showed, in ms.
    inflated: (u32, u32),
    /// Repairs counted in flight ([`PgmccConfig::repairs`]): when each stops
    /// counting, oldest first (bounded: [`HISTORY`]).
    repairs: VecDeque<Instant>,
    /// Repairs counted in flight until an ACK of the acker answers them
    /// ([`Repairs::Acked`]): their OPT_PGMCC_DATA timestamps, oldest first (bounded:
    /// [`HISTORY`]).
    held: VecDeque<u32>,
    /// The last packet sent was a repair counted in flight ([`Repairs::Wait`]).
    repair_last: bool,
}

/// Data packets remembered for RTT-in-packets lookups.
const HISTORY: usize = 8192;

/// What TCP's TLP adds to two SRTTs with one packet in flight: the longest a delayed ACK
/// may take (RFC 8985's `WCDelAckT`).
const PROBE_DELAYED_ACK: Duration = Duration::from_millis(200);
/// What Linux adds otherwise: two ticks (`TCP_TIMEOUT_MIN`).
const PROBE_TICKS: Duration = Duration::from_millis(2);

/// When packet `s` was sent, if the history still holds it.
fn sent_time(history: &VecDeque<(Instant, u32)>, s: u32) -> Option<Instant> {
    let &(_, first) = history.front()?;
    history
        .get(s.wrapping_sub(first) as usize)
        .filter(|&&(_, q)| q == s)
        .map(|&(sent, _)| sent)
}

impl Pgmcc {
    /// A controller starting a session at `now`: `W = T = 1`, and the first data packet asks
    /// for an election.
    pub fn new(cfg: PgmccConfig, now: Instant) -> Pgmcc {
        let mut window = Window::new(cfg.ssthresh);
        if cfg.slow_start == SlowStart::Adaptive {
            window.set_adaptive_ssthresh();
        }
        window.set_hold_in_recovery(cfg.recovery == Recovery::Hold);
        Pgmcc {
            limits: SourceLimits::NONE,
            window,
            tracker: AckTracker::new(0, cfg.dupack_threshold),
            acker: None,
            previous: VecDeque::new(),
            history: VecDeque::new(),
            rack: None,
            min_rtt: None,
            reo_deadline: None,
            probe: None,
            last_sent: None,
            last_sent_at: now,
            elect: true,
            elect_since: None,
            stalls_in_a_row: 0,
            floor_credit: false,
            timer_from: now,
            rto: Rto::new(),
            events: Events::new(),
            stats: CcStats::default(),
            silent: SilentReceivers::default(),
            acker_lost: VecDeque::new(),
            check: None,
            window_at_switch: 1.0,
            discredited: VecDeque::new(),
            inflated: (0, 0),
            repairs: VecDeque::new(),
            held: VecDeque::new(),
            repair_last: false,
            cfg,
        }
    }

    /// The window in packets.
    pub fn window(&self) -> f64 {
        self.window.window()
    }

    /// How many entries the controller holds (send-time history, former ackers, the acker,
    /// queued events). Every part has a constant bound, whatever the number of receivers
    /// reporting: tests check that hostile reporters cannot grow it.
    pub fn tracked_entries(&self) -> usize {
        self.history.len()
            + self.previous.len()
            + usize::from(self.acker.is_some())
            + self.events.len()
            + self.silent.len()
            + self.discredited.len()
    }

    fn push_event(&mut self, ev: CcEvent) {
        self.events.push(ev);
    }

    fn now_ms(now: Instant) -> u32 {
        now.as_millis_u32()
    }

    /// RTT of a report, in the configured unit.
    fn rtt(&self, sample: RttSample) -> u32 {
        let echo = sample.echo();
        match self.cfg.rtt_unit {
            RttUnit::Millis => sample.raw_millis().min(i32::MAX as u32),
            RttUnit::Packets => {
                // Packets sent after the echoed time. Several packets may share one
                // millisecond, so the receiver's lead lies between the last packet sent
                // before that millisecond and the last sent during it: take the middle.
                let Some(lead) = self.last_sent else {
                    return 1;
                };
                let last_sent_while = |pred: &dyn Fn(u32) -> bool| -> u32 {
                    match self
                        .history
                        .partition_point(|&(t, _)| pred(Self::now_ms(t)))
                    {
                        0 => self
                            .history
                            .front()
                            .map_or(lead, |&(_, s)| s.wrapping_sub(1)),
                        i => self.history[i - 1].1,
                    }
                };
                let through = last_sent_while(&|t| !sqn::gt(t, echo));
                let before = last_sent_while(&|t| sqn::lt(t, echo));
                let mid = before.wrapping_add(sqn::distance(before, through) / 2);
                sqn::distance(mid, lead).max(1)
            }
        }
    }

    fn fixed_timeout(&self) -> Duration {
        match self.cfg.timeout {
            TimeoutPolicy::Fixed(d) => d,
            TimeoutPolicy::Adaptive {
                min,
                floor,
                max,
                fixed,
                ..
            } => self.rto.rto(min, floor, max, fixed),
        }
    }
}

impl Pgmcc {
    /// Packets in flight ([`Accounting::Pipe`]): sent, and not yet acknowledged or declared
    /// lost by the acker they named.
    pub fn in_flight(&self) -> u32 {
        let Some(lead) = self.last_sent else {
            return 0;
        };
        let upto = lead.wrapping_add(1);
        self.previous
            .iter()
            .filter(|p| !p.expired)
            .map(|p| p.tracker.unsettled(upto))
            .fold(self.tracker.unsettled(upto), u32::saturating_add)
            .saturating_add(self.repairs.len() as u32)
            .saturating_add(self.held.len() as u32)
    }

    /// Held repairs ([`Repairs::Acked`]) sent no later than the packet an ACK of the acker
    /// answers (`echo`, its OPT_PGMCC_FEEDBACK timestamp) leave the count in flight: the
    /// repair's own ACK, or that of data sent after it, which would have come after the
    /// repair's. Returns whether any left.
    fn release_held(&mut self, echo: Option<u32>) -> bool {
        let Some(echo) = echo else {
            return false;
        };
        let before = self.held.len();
        while self.held.front().is_some_and(|&t| sqn::le(t, echo)) {
            self.held.pop_front();
        }
        self.held.len() != before
    }

    /// Repairs sent one smoothed acker RTT ago or earlier leave the count in flight.
    fn expire_repairs(&mut self, now: Instant) {
        while self.repairs.front().is_some_and(|&t| t <= now) {
            self.repairs.pop_front();
        }
    }

    /// Announces room in the window if there was none before (`had_room`) and there is
    /// now; returns whether there is.
    fn note_room(&mut self, had_room: bool) -> bool {
        let open = self.window_open();
        if open && !had_room {
            self.push_event(CcEvent::TokensAvailable {
                tokens: self.metrics_tokens(),
            });
        }
        open
    }

    /// Whole packets the window still lets out: the tokens, or `W - in flight`.
    fn metrics_tokens(&self) -> u32 {
        match self.cfg.accounting {
            Accounting::Tokens => self.window.tokens(),
            Accounting::Pipe => {
                (self.window.window() - f64::from(self.in_flight())).max(0.0) as u32
            }
        }
    }

    fn window_open(&self) -> bool {
        match self.cfg.accounting {
            Accounting::Tokens => self.window.can_send(),
            Accounting::Pipe => {
                self.floor_credit || f64::from(self.in_flight()) + 1.0 <= self.window.window()
            }
        }
    }

    /// Packets the acker's ACKs declared lost (oldest first), the acker's RX_MAX then and
    /// the newest packet sent: the window reacts to the first, and they are remembered for
    /// [`PgmccConfig::cap_for_silent`].
    fn acker_losses(&mut self, lost: &[u32], rx_max: u32, lead: u32) {
        if let Some(&l) = lost.first() {
            self.on_lost(l, rx_max, lead);
        }
        if self.cfg.cap_for_silent || matches!(self.cfg.repairs, Repairs::Wait | Repairs::Acked) {
            self.acker_lost.extend(lost.iter().copied());
            while self.acker_lost.len() > ACKER_LOSSES {
                self.acker_lost.pop_front();
            }
        }
    }

    /// Whether a repair of `repaired` waits for room and counts in flight
    /// ([`Repairs::Wait`]): it repairs a packet the acker's ACKs declared lost, as TCP's
    /// retransmissions repair its receiver's losses. Repairs only other receivers need
    /// leave as the paper's do.
    fn repairs_wait(&self, repaired: Repaired) -> bool {
        matches!(self.cfg.repairs, Repairs::Wait | Repairs::Acked)
            && self.cfg.accounting == Accounting::Pipe
            && self.acker_lost.iter().any(|&s| repaired.contains(s))
    }

    fn rack_on(&self) -> bool {
        self.cfg.loss_detection == LossDetection::Rack
    }

    /// RACK's round trip: that of the newest packet the acker has acknowledged, taken when
    /// an ACK first reports it (`rx_max`); and the least round trip.
    fn rack_sample(&mut self, now: Instant, rx_max: u32) {
        if self.rack.is_some_and(|(s, _)| !sqn::gt(rx_max, s)) {
            return;
        }
        if let Some(sent) = sent_time(&self.history, rx_max) {
            let rtt = now - sent;
            self.rack = Some((rx_max, rtt));
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
    }

    /// RACK's loss detection ([`LossDetection::Rack`]): every unsettled packet sent before
    /// the newest acknowledged one is lost once that one's round trip plus the reordering
    /// window has passed since it was sent (none in the round trip after a loss reaction,
    /// else a quarter of the least round trip, at most SRTT). Returns the packets declared
    /// lost and sets the timer for the next one.
    fn detect_by_time(&mut self, now: Instant) -> Vec<u32> {
        self.reo_deadline = None;
        let Some((latest, rtt)) = self.rack else {
            return Vec::new();
        };
        let reo = if self.window.in_recovery(self.tracker.next_expected()) {
            Duration::ZERO
        } else {
            let quarter = self.min_rtt.unwrap_or_default() / 4;
            self.rto.srtt().map_or(quarter, |s| quarter.min(s))
        };
        let history = &self.history;
        let mut wait = None;
        let lost = self.tracker.settle_before(latest, |s| {
            match sent_time(history, s) {
                Some(sent) if sent + rtt + reo > now => {
                    wait = Some(sent + rtt + reo);
                    false
                }
                // Sent long enough ago, or too long ago to be remembered.
                _ => true,
            }
        });
        self.reo_deadline = wait;
        self.stats.time_losses += lost.len() as u64;
        lost
    }

    /// When the tail probe is due ([`LossDetection::Rack`]), while none is out: two smoothed
    /// RTTs after the last ACK of new data or the last packet sent, whichever is later (plus
    /// the 200 ms a delayed ACK may take when one packet is in flight, as TCP's TLP), never
    /// after the stall timeout.
    fn probe_deadline(&self) -> Option<Instant> {
        if !self.rack_on() || self.probe.is_some() {
            return None;
        }
        let srtt = self.rto.srtt()?;
        let in_flight = self.in_flight();
        if in_flight == 0 {
            return None;
        }
        let extra = if in_flight == 1 {
            PROBE_DELAYED_ACK
        } else {
            PROBE_TICKS
        };
        let from = self.timer_from.max(self.last_sent_at);
        Some((from + 2 * srtt + extra).min(self.timer_from + self.fixed_timeout()))
    }

    /// A loss among the packets in flight: one reaction per RTT (the window's own rule).
    fn on_lost(&mut self, lost: u32, rx_max: u32, lead: u32) {
        let in_flight = sqn::distance(rx_max, lead);
        if self.window.on_loss(lost, in_flight, lead) {
            self.stats.loss_events += 1;
            self.push_event(CcEvent::Congestion {
                window: self.window.window(),
            });
        }
    }

    /// Whether the acker received packet `s`, as far as its ACKs tell (false when they do
    /// not tell yet).
    fn acker_received(&self, s: u32) -> bool {
        match self.tracker.received(s) {
            Some(r) => r,
            None => {
                let settled = sqn::lt(s, self.tracker.next_expected())
                    && self.tracker.rx_max().is_some_and(|m| sqn::le(s, m));
                settled && !self.acker_lost.contains(&s)
            }
        }
    }

    /// Keeps the window within TCP's at the loss rate of the worst receiver that NAKs
    /// without reports ([`PgmccConfig::cap_for_silent`]).
    fn cap_for_silent(&mut self, now: Instant, lead: u32) {
        if self.silent.is_empty() {
            return;
        }
        if let Some(cap) = self.silent.window_cap(now, lead) {
            tracing::trace!(t_ns = now.as_nanos(), lead, cap, w = self.window.window(), worst = ?self.silent.worst(now, lead), "silent cap");
            if self.window.window() > cap {
                self.stats.silent_caps += 1;
                self.window.cap_fraction(cap);
            }
        }
    }

    /// An ACK's report RTT, no longer than the ACK itself shows ([`PgmccConfig::check_reports`]):
    /// the ACK says packet `rx_max` had arrived when it left, so the round trip is at most
    /// the time since `rx_max` was sent. An honest receiver echoes the stamp of the packet
    /// it acknowledges plus the time it held it, which is never older; one that echoes an
    /// older stamp, to look farther away than it is, reads as the ACK shows.
    ///
    /// When the acker's ACKs show this [`INFLATED_ACKS`] times in a row, its RTT reports are
    /// discredited: from then on they count at most twice the round trip its ACKs showed, in
    /// its NAKs too.
    fn bounded_by_ack(
        &mut self,
        now: Instant,
        from: IpAddr,
        sample: RttSample,
        rx_max: u32,
    ) -> RttSample {
        let is_acker = self.acker.is_some_and(|a| a.addr == from);
        let sent = sent_time(&self.history, rx_max).map(Self::now_ms);
        let Some(sent) = sent else {
            return sample;
        };
        let held = sent.wrapping_sub(sample.echo()) as i32;
        if held <= 0 {
            if is_acker {
                self.inflated = (0, 0);
            }
            return sample;
        }
        self.stats.report_rtts_bounded += 1;
        let shown = Self::now_ms(now).wrapping_sub(sent);
        if is_acker {
            if held as u32 > INFLATION_MS.max(shown / 4) {
                self.inflated = (self.inflated.0 + 1, self.inflated.1.max(shown));
            } else {
                self.inflated = (0, 0);
            }
            if self.inflated.0 == INFLATED_ACKS {
                let rtt_ms = self.inflated.1.max(1);
                self.stats.reports_discredited += 1;
                tracing::warn!(
                    t_ns = now.as_nanos(),
                    acker = %from,
                    shown_rtt_ms = rtt_ms,
                    "the acker's reports claim a longer round trip than its ACKs show: they \
                     count at most twice what its ACKs show from now on"
                );
                self.remember(from).rtt_ms = Some(rtt_ms);
            }
        }
        sample.no_older_than(now, sent)
    }
}

impl CongestionControl for Pgmcc {
    fn can_send(&self) -> bool {
        self.window_open()
    }

    fn set_source_limits(&mut self, limits: SourceLimits) {
        self.limits = limits;
        self.window.set_max(limits.max_window(self.rto.srtt()));
    }

    /// A discredited receiver's round trip counts at most twice what its ACKs showed.
    fn credible_rtt(&self, now: Instant, from: IpAddr, sample: RttSample) -> RttSample {
        match self.discredited.iter().find(|d| d.addr == from) {
            Some(Discredited {
                rtt_ms: Some(c), ..
            }) => {
                let floor = Self::now_ms(now).wrapping_sub(c.saturating_mul(2));
                sample.no_older_than(now, floor)
            }
            _ => sample,
        }
    }

    fn can_send_repair(&self, repaired: Repaired) -> bool {
        if !self.repairs_wait(repaired) {
            return true;
        }
        // Room in the window itself: the one packet the tail probe or the rate floor lets
        // out beyond it is data, whose ACK tells what was lost. And data in flight, or data
        // the last packet sent: the acker ACKs no repair, so repairs alone in the window
        // would stop the ACKs that make room (TCP's retransmissions are ACKed; ours are
        // not), and in a window of one packet data and repairs take turns.
        let in_flight = self.in_flight();
        let data = in_flight.saturating_sub((self.repairs.len() + self.held.len()) as u32);
        (data > 0 || !self.repair_last) && f64::from(in_flight) + 1.0 <= self.window.window()
    }

    fn on_repair_sent(&mut self, now: Instant, _sqn: u32, repaired: Repaired) {
        let counted = match self.cfg.repairs {
            Repairs::Outside => false,
            Repairs::InWindow => true,
            Repairs::Wait | Repairs::Acked => self.repairs_wait(repaired),
        };
        if !counted || self.cfg.accounting != Accounting::Pipe {
            return;
        }
        self.expire_repairs(now);
        self.repair_last = true;
        if self.cfg.repairs == Repairs::Acked {
            self.held.push_back(Self::now_ms(now));
            if self.held.len() > HISTORY {
                self.held.pop_front();
            }
            return;
        }
        // Before the acker's first RTT sample: RFC 6298's initial RTO, 1 s.
        let rtt = self.rto.srtt().unwrap_or(Duration::from_secs(1));
        self.repairs.push_back(now + rtt);
        if self.repairs.len() > HISTORY {
            self.repairs.pop_front();
        }
    }

    fn repair_options(
        &mut self,
        now: Instant,
        _sqn: u32,
        repaired: Repaired,
        opts: &mut Options<'_>,
    ) {
        if self.cfg.repairs != Repairs::Acked || !self.repairs_wait(repaired) {
            return;
        }
        if let (false, Some(a)) = (self.elect, self.acker) {
            opts.pgmcc_data = Some(PgmccData {
                tstamp: Self::now_ms(now),
                acker: a.addr,
            });
        }
    }

    fn on_data_sent(&mut self, now: Instant, sqn: u32, opts: &mut Options<'_>) {
        self.window.on_transmit();
        self.repair_last = false;
        self.floor_credit = false;
        if self.last_sent.is_none() {
            self.tracker.reset(sqn);
        }
        self.last_sent = Some(sqn);
        self.last_sent_at = now;
        let ms = Self::now_ms(now);
        self.history.push_back((now, sqn));
        if self.history.len() > HISTORY {
            self.history.pop_front();
        }
        let acker = match (self.elect, self.acker) {
            (false, Some(a)) => a.addr,
            _ => {
                self.stats.election_requests += 1;
                self.elect_since.get_or_insert(sqn);
                IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
            }
        };
        opts.pgmcc_data = Some(PgmccData { tstamp: ms, acker });
    }

    fn on_ack(&mut self, now: Instant, a: &Ack<'_>) {
        let (from, ack) = (a.from, &a.ack);
        let fb = a.options.pgmcc_feedback.as_ref().zip(a.rtt);
        // The Sender refused ACKs ahead of its lead; a controller installed mid-session has
        // no packet of its own to account for yet.
        let Some(lead) = self.last_sent else {
            return;
        };
        // An ACK is a report like a NAK's, measured the same way so that acker and
        // candidates compare fairly. (RX_MAX alone would give `lead - RX_MAX`, the paper's
        // formula, but ACKs that arrive bunched, with no transmission between them, drive
        // it to 1: ACK compression.)
        if let Some((fb, sample)) = fb {
            if fb.rx == from {
                let sample = if self.cfg.check_reports {
                    self.bounded_by_ack(now, from, sample, ack.rx_max)
                } else {
                    sample
                };
                self.on_report(now, fb, sample);
            }
        }
        let is_acker = self.acker.is_some_and(|a| a.addr == from);
        let pipe = self.cfg.accounting == Accounting::Pipe;
        let had_room = self.window_open();
        self.expire_repairs(now);
        if pipe && self.on_former_ack(from, ack.rx_max, ack.bitmap, lead) && !is_acker {
            self.note_room(had_room);
            return;
        }
        if !is_acker {
            self.stats.acks_ignored += 1;
            return;
        }
        self.stats.acks += 1;
        let answered = self.release_held(a.options.pgmcc_feedback.map(|f| f.tstamp));
        let out = self.tracker.on_ack(ack.rx_max, ack.bitmap);
        if let (Some(check), Some((fb, _))) = (self.check.as_mut(), fb.filter(|f| f.0.rx == from)) {
            if let Verdict::Discredited { shown } =
                check.on_ack(ack.rx_max, ack.bitmap, fb.loss_rate)
            {
                self.discredit(now, from, shown);
            }
        }
        if let Some((_, sample)) = fb {
            let r = Duration::from_millis(u64::from(sample.raw_millis().min(MAX_RTT_MS)));
            self.rto.sample(r);
            self.window.set_max(self.limits.max_window(self.rto.srtt()));
        }
        let mut lost = out.lost;
        if self.rack_on() {
            self.rack_sample(now, ack.rx_max);
            if self.probe.is_some_and(|p| sqn::le(p, ack.rx_max)) {
                self.probe = None;
            }
            lost.extend(self.detect_by_time(now));
        }
        self.acker_losses(&lost, ack.rx_max, lead);
        self.window.on_ack_through(out.newly_acked, ack.rx_max);
        if !a.proven {
            self.window.cap(self.cfg.unproven_window);
        }
        self.cap_for_silent(now, lead);
        if pipe {
            self.expire_former(now);
        }
        self.note_room(had_room);
        if answered {
            // An answered repair is acknowledged data, as a TCP retransmission's ACK.
            self.stalls_in_a_row = 0;
            self.timer_from = now;
        }
        if out.newly_acked > 0 {
            self.stalls_in_a_row = 0;
            let reset = match self.cfg.timeout {
                TimeoutPolicy::Fixed(_)
                | TimeoutPolicy::Adaptive {
                    restart: RtoRestart::NewData,
                    ..
                } => true,
                TimeoutPolicy::Adaptive {
                    restart: RtoRestart::CleanBitmap,
                    ..
                } => self.tracker.no_holes(),
            };
            if reset {
                self.timer_from = now;
            }
        }
    }

    fn on_nak(&mut self, now: Instant, n: &Nak<'_>) {
        if let (Some(fb), Some(sample)) = (n.options.pgmcc_feedback, n.rtt) {
            self.on_report(now, &fb, sample);
        } else if self.cfg.cap_for_silent && !n.lost.is_empty() {
            // Only losses of the silent receiver's own path: a packet the acker lost too is
            // already in the acker's reports (and a test that withholds packets from
            // everyone is no reason to slow down twice).
            let own: Vec<u32> = n
                .lost
                .iter()
                .copied()
                .filter(|&s| self.acker_received(s))
                .collect();
            if let (Some(lead), false) = (self.last_sent, own.is_empty()) {
                let window = self.window.window().max(1.0) as u32;
                self.silent
                    .on_nak(now, n.from, &own, n.covers, lead, window);
                self.cap_for_silent(now, lead);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // The stall timer only runs while we are blocked waiting for ACKs.
        if self.window_open() || self.last_sent.is_none() {
            return None;
        }
        let stall = self.timer_from + self.fixed_timeout();
        let stall = self.reo_deadline.map_or(stall, |d| d.min(stall));
        let stall = self.probe_deadline().map_or(stall, |d| d.min(stall));
        let stall = self.next_expiry().map_or(stall, |e| e.min(stall));
        let stall = self.repairs.front().map_or(stall, |&e| e.min(stall));
        Some(match self.cfg.min_interval {
            Some(floor) => stall.min(self.last_sent_at + floor),
            None => stall,
        })
    }

    fn on_timeout(&mut self, now: Instant) {
        if self.window_open() || self.last_sent.is_none() {
            return;
        }
        self.expire_former(now);
        self.expire_repairs(now);
        if self.reo_deadline.is_some_and(|d| now >= d) {
            if let (Some(lead), Some(rx_max)) = (self.last_sent, self.tracker.rx_max()) {
                let lost = self.detect_by_time(now);
                self.acker_losses(&lost, rx_max, lead);
            }
        }
        if self.note_room(false) {
            return;
        }
        if self.probe_deadline().is_some_and(|d| now >= d) {
            // TLP: one packet beyond the window; the stall timer runs again from here.
            self.probe = self.last_sent.map(|l| l.wrapping_add(1));
            self.stats.probes += 1;
            self.timer_from = now;
            match self.cfg.accounting {
                Accounting::Tokens => self.window.grant_one(),
                Accounting::Pipe => self.floor_credit = true,
            }
            self.note_room(false);
            return;
        }
        let deadline = self.timer_from + self.fixed_timeout();
        if now < deadline {
            if self
                .cfg
                .min_interval
                .is_some_and(|floor| now >= self.last_sent_at + floor)
            {
                self.stats.floor_tokens += 1;
                match self.cfg.accounting {
                    Accounting::Tokens => self.window.grant_one(),
                    Accounting::Pipe => self.floor_credit = true,
                }
            }
            return;
        }
        // Stall (§3.4, 3.6): restart W = T = 1; after a couple in a row, ask for an election.
        tracing::debug!(
            target: "pgmcc::stall",
            t_ns = now.as_nanos(),
            w = self.window.window(),
            in_flight = self.in_flight(),
            lead = ?self.last_sent,
            since_ack_ms = (now - self.timer_from).as_millis() as u64,
            tracker = ?self.tracker,
            "stall"
        );
        self.window.restart();
        self.stats.stalls += 1;
        self.stalls_in_a_row += 1;
        self.rto.backoff += 1;
        self.timer_from = now;
        if let Some(lead) = self.last_sent {
            self.tracker.reset(lead.wrapping_add(1));
        }
        // A restart forgets every packet in flight (W = T = 1, the paper).
        self.probe = None;
        self.reo_deadline = None;
        self.previous.clear();
        self.repairs.clear();
        self.held.clear();
        if self.stalls_in_a_row >= self.cfg.stalls_before_election {
            self.elect = true;
            self.acker = None;
        }
        self.push_event(CcEvent::Stalled {
            stalls_in_a_row: self.stalls_in_a_row,
        });
    }

    fn poll_event(&mut self) -> Option<CcEvent> {
        self.events.pop()
    }

    fn control_options(&self, opts: &mut Options<'_>) {
        let bar = self
            .acker
            .filter(|_| self.cfg.advertise_report_bar)
            .map(|a| {
                let c = self.cfg.switch_bias.as_f64().clamp(0.01, 1.0);
                let bar = f64::from(a.op.loss) / (c * c);
                bar.min(f64::from(u16::MAX)) as u16
            });
        let intervals = self.cfg.loss_report == LossReport::Intervals;
        if bar.is_some() || intervals {
            opts.report_bar = Some(ReportBar {
                loss: bar.unwrap_or(ReportBar::NONE),
                intervals,
            });
        }
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            acker: self.acker.map(|a| a.addr),
            acker_report: self.acker.map(|a| Operating {
                loss: a.reported,
                ..a.op
            }),
            window: Some(self.window.window()),
            rate: None,
            srtt_secs: self.rto.srtt().map(|d| d.as_secs_f64()),
            tokens: self.metrics_tokens(),
            stats: self.stats.clone(),
        }
    }
}

#[cfg(test)]
mod rto_tests {
    use super::*;

    #[test]
    fn a_variance_floor_keeps_the_stall_timeout_that_far_above_srtt() {
        let ms = Duration::from_millis;
        let mut r = Rto::new();
        // A steady 300 ms path sampled at every ACK: RTTVAR decays to almost nothing.
        for _ in 0..500 {
            r.sample(ms(300));
        }
        let (min, max, fixed) = (ms(200), ms(60_000), ms(3000));
        assert_eq!(r.rto(min, RtoFloor::Total, max, fixed), ms(301));
        assert_eq!(r.rto(min, RtoFloor::Variance, max, fixed), ms(500));
        // A short path: both at the floor's reach, the variance floor SRTT above it.
        let mut r = Rto::new();
        for _ in 0..500 {
            r.sample(ms(10));
        }
        assert_eq!(r.rto(min, RtoFloor::Total, max, fixed), ms(200));
        assert_eq!(r.rto(min, RtoFloor::Variance, max, fixed), ms(210));
        assert_eq!(Rto::new().rto(min, RtoFloor::Variance, max, fixed), fixed);
    }
}
