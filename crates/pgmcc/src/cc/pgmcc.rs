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

use pgm_wire::{Options, PgmccData, PgmccFeedback};
use serde::Serialize;

use super::ack_tracker::AckTracker;
use super::rtt::MAX_RTT_MS;
use super::throughput::{Operating, SwitchBias, ThroughputModel};
use super::window::Window;
use super::{Ack, CcEvent, CcStats, CongestionControl, Events, Metrics, Nak, RttSample};
use crate::sqn;
use crate::time::{Duration, Instant};

/// How receivers' RTTs are expressed for comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum RttUnit {
    /// Data packets sent during one RTT (the paper, §3.2.1).
    #[default]
    Packets,
    /// Milliseconds.
    Millis,
}

/// When the sender gives up waiting for ACKs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TimeoutPolicy {
    /// A fixed stall timeout (the paper; OpenPGM uses 3 s).
    Fixed(Duration),
    /// The fairness benchmark's fix (Set 1): an RFC 6298 estimator on ACK RTTs, reset only
    /// when the ACK bitmap shows no hole; after an acker switch `fixed` applies until the new
    /// acker's first RTT sample.
    Adaptive {
        /// Lower bound of the RTO (RFC 6298: 1 s).
        min: Duration,
        /// Upper bound of the RTO.
        max: Duration,
        /// Timeout used before any sample of the current acker exists.
        fixed: Duration,
    },
}

/// Every knob of the controller; defaults are the paper's values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PgmccConfig {
    /// Fixed slow-start threshold in packets (§3.4: 6).
    pub ssthresh: u32,
    /// Later ACKs that declare a hole lost (§3.4: 3).
    pub dupack_threshold: u32,
    /// Switch bias `c`: a report replaces the acker only if `T(new) < c T(acker)` (§3.5: 0.75).
    pub switch_bias: SwitchBias,
    /// Throughput model for election (§3.5: the simple formula).
    pub model: ThroughputModel,
    /// RTT unit for election (§3.2.1: packets).
    pub rtt_unit: RttUnit,
    /// Stall handling (paper: fixed; OpenPGM's 3 s).
    pub timeout: TimeoutPolicy,
    /// Stalls in a row after which the next data packet asks for a new election (§3.6: "a
    /// couple": 2).
    pub stalls_before_election: u32,
    /// Keep the tokens at least at `W - packets in flight` (ours; default off = the paper's
    /// literal token rule). The literal rule leaks tokens (lost packets never return theirs,
    /// ignored ACKs may be the last in flight), so with small windows the pipe can empty and
    /// wait for a stall timeout: see `docs/pgmcc.md`. Recommended on outside reproductions.
    pub realign_tokens: bool,
    /// Rate floor (ours; default none = the paper): while the window holds the sender back,
    /// one packet may still leave every `min_interval`, whatever the acker says or does not
    /// say. With `max_tpdu` bytes per packet the session never drops below
    /// `max_tpdu / min_interval`, so a receiver that wins the election with absurd loss and
    /// then withholds ACKs cannot starve the session. The window itself is not changed. Choose
    /// it well below the normal packet interval, or it overrides congestion control.
    pub min_interval: Option<Duration>,
}

impl Default for PgmccConfig {
    fn default() -> PgmccConfig {
        PgmccConfig {
            ssthresh: 6,
            dupack_threshold: 3,
            switch_bias: SwitchBias::PAPER,
            model: ThroughputModel::Simple,
            rtt_unit: RttUnit::Packets,
            timeout: TimeoutPolicy::Fixed(Duration::from_secs(3)),
            stalls_before_election: 2,
            realign_tokens: false,
            min_interval: None,
        }
    }
}

impl PgmccConfig {
    /// The fairness benchmark's adaptive timeout with RFC 6298 bounds.
    pub fn with_adaptive_timeout(mut self) -> PgmccConfig {
        self.timeout = TimeoutPolicy::Adaptive {
            min: Duration::from_secs(1),
            max: Duration::from_secs(60),
            fixed: Duration::from_secs(3),
        };
        self
    }
}

#[derive(Debug, Clone, Copy)]
struct AckerState {
    addr: IpAddr,
    op: Operating,
}

/// RFC 6298 estimator.
#[derive(Debug, Clone, Copy)]
struct Rto {
    srtt: Option<Duration>,
    rttvar: Duration,
    backoff: u32,
}

impl Rto {
    fn new() -> Rto {
        Rto {
            srtt: None,
            rttvar: Duration::ZERO,
            backoff: 0,
        }
    }

    fn sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let diff = s.abs_diff(r);
                self.rttvar = self.rttvar * 3 / 4 + diff / 4;
                self.srtt = Some(s * 7 / 8 + r / 8);
            }
        }
        self.backoff = 0;
    }

    fn rto(&self, min: Duration, max: Duration, fixed: Duration) -> Duration {
        let base = match self.srtt {
            None => fixed,
            Some(s) => (s + (self.rttvar * 4).max(Duration::from_millis(1))).max(min),
        };
        (base * (1u32 << self.backoff.min(6))).min(max)
    }
}

/// The pgmcc controller.
#[derive(Debug)]
pub struct Pgmcc {
    cfg: PgmccConfig,
    window: Window,
    tracker: AckTracker,
    acker: Option<AckerState>,
    /// Former ackers whose ACKs for the packets that named them still return tokens
    /// (bounded: the most recent [`FORMER_ACKERS`]).
    previous: VecDeque<(IpAddr, AckTracker)>,
    /// First sequence number that named the current acker.
    acker_since: u32,
    /// Send-time history of data packets: (ms, sqn).
    history: VecDeque<(u32, u32)>,
    last_sent: Option<u32>,
    /// When the last data packet left (for the rate floor).
    last_sent_at: Instant,
    /// The next data packet asks for an election.
    elect: bool,
    /// First data packet sent asking for the current election: the winner's ACKs count
    /// from there.
    elect_since: Option<u32>,
    stalls_in_a_row: u32,
    /// When the timeout was last reset, and the RTO state.
    timer_from: Instant,
    rto: Rto,
    events: Events,
    stats: CcStats,
}

/// Data packets remembered for RTT-in-packets lookups.
const HISTORY: usize = 8192;

/// Former ackers remembered for token credit.
const FORMER_ACKERS: usize = 8;

impl Pgmcc {
    /// A controller starting a session at `now`: `W = T = 1`, and the first data packet asks
    /// for an election.
    pub fn new(cfg: PgmccConfig, now: Instant) -> Pgmcc {
        Pgmcc {
            window: Window::new(cfg.ssthresh),
            tracker: AckTracker::new(0, cfg.dupack_threshold),
            acker: None,
            previous: VecDeque::new(),
            acker_since: 0,
            history: VecDeque::new(),
            last_sent: None,
            last_sent_at: now,
            elect: true,
            elect_since: None,
            stalls_in_a_row: 0,
            timer_from: now,
            rto: Rto::new(),
            events: Events::new(),
            stats: CcStats::default(),
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
                    match self.history.partition_point(|&(t, _)| pred(t)) {
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
            TimeoutPolicy::Adaptive { min, max, fixed } => self.rto.rto(min, max, fixed),
        }
    }

    fn switch_to(&mut self, addr: IpAddr, op: Operating) {
        let from = self.acker.map(|a| a.addr);
        // After an election request the winner answers for the packets that asked; after a
        // switch the new acker is named from the next packet on.
        let next = self.last_sent.map_or(0, |s| s.wrapping_add(1));
        let first = self.elect_since.take().unwrap_or(next);
        if let Some(prev) = from {
            // ACKs for packets that named the previous acker still count for tokens, from
            // the first one it had not yet acknowledged up to the switch.
            let from_sqn = if sqn::lt(self.acker_since, self.tracker.next_expected()) {
                self.tracker.next_expected()
            } else {
                self.acker_since
            };
            self.previous.retain(|(a, _)| *a != prev);
            self.previous
                .push_back((prev, AckTracker::bounded(from_sqn, first)));
            if self.previous.len() > FORMER_ACKERS {
                self.previous.pop_front();
            }
            self.stats.acker_switches += 1;
        }
        self.previous.retain(|(a, _)| *a != addr);
        self.acker_since = first;
        self.tracker.reset(first);
        self.acker = Some(AckerState { addr, op });
        self.elect = false;
        if let TimeoutPolicy::Adaptive { .. } = self.cfg.timeout {
            // Fixed timeout until the new acker's first sample (fairness benchmark Set 1).
            self.rto = Rto::new();
        }
        self.push_event(CcEvent::AckerChanged { from, to: addr });
    }

    fn on_report(&mut self, fb: &PgmccFeedback, sample: RttSample) {
        let rtt = self.rtt(sample);
        self.on_operating_point(fb.rx, rtt, fb.loss_rate);
    }

    /// One receiver report: elect, update the acker, or switch (§3.5).
    fn on_operating_point(&mut self, rx: IpAddr, rtt: u32, loss: u16) {
        let op = Operating {
            rtt,
            loss: u32::from(loss),
        };
        self.stats.reports += 1;
        match self.acker {
            None => self.switch_to(rx, op),
            Some(cur) if cur.addr == rx => {
                // The acker reports on every ACK: smooth its RTT (gain 1/4) so one sample
                // taken in a burst does not make it look faster than it is.
                let rtt = (3 * u64::from(cur.op.rtt) + u64::from(op.rtt)).div_ceil(4) as u32;
                let op = Operating { rtt, ..op };
                self.acker = Some(AckerState { addr: cur.addr, op });
            }
            Some(cur) => {
                if self
                    .cfg
                    .model
                    .should_switch(op, cur.op, self.cfg.switch_bias)
                {
                    self.switch_to(rx, op);
                }
            }
        }
    }
}

impl CongestionControl for Pgmcc {
    fn can_send(&self) -> bool {
        self.window.can_send()
    }

    fn on_data_sent(&mut self, now: Instant, sqn: u32, opts: &mut Options<'_>) {
        self.window.on_transmit();
        if self.last_sent.is_none() {
            self.tracker.reset(sqn);
        }
        self.last_sent = Some(sqn);
        self.last_sent_at = now;
        let ms = Self::now_ms(now);
        self.history.push_back((ms, sqn));
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
                self.on_report(fb, sample);
            }
        }
        let is_acker = self.acker.is_some_and(|a| a.addr == from);
        if !is_acker {
            if let Some(i) = self.previous.iter().position(|(a, _)| *a == from) {
                // Tokens only, for packets that named this former acker.
                let o = self.previous[i].1.on_ack(ack.rx_max, ack.bitmap);
                self.window.on_ack(o.newly_acked);
                if self.previous[i].1.finished() {
                    self.previous.remove(i);
                }
                return;
            }
            self.stats.acks_ignored += 1;
            return;
        }
        self.stats.acks += 1;
        let out = self.tracker.on_ack(ack.rx_max, ack.bitmap);
        if let Some((_, sample)) = fb {
            let r = Duration::from_millis(u64::from(sample.raw_millis().min(MAX_RTT_MS)));
            self.rto.sample(r);
        }
        if !out.lost.is_empty() {
            let in_flight = sqn::distance(ack.rx_max, lead);
            if self.window.on_loss(out.lost[0], in_flight, lead) {
                self.stats.loss_events += 1;
                self.push_event(CcEvent::Congestion {
                    window: self.window.window(),
                });
            }
        }
        let had_tokens = self.window.can_send();
        self.window.on_ack(out.newly_acked);
        if self.cfg.realign_tokens {
            // Packets not yet settled (acknowledged or declared lost), an upper bound on the
            // packets in flight.
            let in_flight = sqn::distance(self.tracker.next_expected(), lead.wrapping_add(1));
            self.window.realign_tokens(in_flight);
        }
        if !had_tokens && self.window.can_send() {
            self.push_event(CcEvent::TokensAvailable {
                tokens: self.window.tokens(),
            });
        }
        if out.newly_acked > 0 {
            self.stalls_in_a_row = 0;
            let reset = match self.cfg.timeout {
                TimeoutPolicy::Fixed(_) => true,
                TimeoutPolicy::Adaptive { .. } => self.tracker.no_holes(),
            };
            if reset {
                self.timer_from = now;
            }
        }
    }

    fn on_nak(&mut self, _now: Instant, n: &Nak<'_>) {
        if let (Some(fb), Some(sample)) = (n.options.pgmcc_feedback, n.rtt) {
            self.on_report(&fb, sample);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // The stall timer only runs while we are blocked waiting for ACKs.
        if self.window.can_send() || self.last_sent.is_none() {
            return None;
        }
        let stall = self.timer_from + self.fixed_timeout();
        Some(match self.cfg.min_interval {
            Some(floor) => stall.min(self.last_sent_at + floor),
            None => stall,
        })
    }

    fn on_timeout(&mut self, now: Instant) {
        if self.window.can_send() || self.last_sent.is_none() {
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
                self.window.grant_one();
            }
            return;
        }
        // Stall (§3.4, 3.6): restart W = T = 1; after a couple in a row, ask for an election.
        self.window.restart();
        self.stats.stalls += 1;
        self.stalls_in_a_row += 1;
        self.rto.backoff += 1;
        self.timer_from = now;
        if let Some(lead) = self.last_sent {
            self.tracker.reset(lead.wrapping_add(1));
        }
        if self.stalls_in_a_row >= self.cfg.stalls_before_election {
            self.elect = true;
            self.acker = None;
            self.previous.clear();
        }
        self.push_event(CcEvent::Stalled {
            stalls_in_a_row: self.stalls_in_a_row,
        });
    }

    fn poll_event(&mut self) -> Option<CcEvent> {
        self.events.pop()
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            acker: self.acker.map(|a| a.addr),
            acker_report: self.acker.map(|a| a.op),
            window: Some(self.window.window()),
            rate: None,
            tokens: self.window.tokens(),
            stats: self.stats.clone(),
        }
    }
}
