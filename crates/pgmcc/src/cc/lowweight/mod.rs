//! Low-weight multi-sender congestion control (Scholl and Parnes, MMNS 2002) and, for
//! comparison, an ACK-less pgmcc variant (`docs/lowweight.md`).
//!
//! Both controllers get by on the NAKs that reliability sends anyway; no receiver ever sends
//! an ACK, so the scheme works where unicast back to the sender is scarce (reflectors, NAT)
//! and costs no extra feedback per sender in a session with many senders.
//!
//! * **Worst receiver** ([`WorstReceiver`]): receivers attach their report (timestamp echo,
//!   loss rate, identity: OPT_PGMCC_FEEDBACK) to NAKs. The first receiver to report becomes
//!   the worst receiver; its reports update its operating point; another receiver replaces it
//!   when its TCP throughput `1 / (RTT sqrt(p))` is worse than the stored one (the paper's
//!   §4.2, rules a and b). The worst receiver is named in every data packet (OPT_PGMCC_DATA's
//!   acker field) so that each receiver knows whether it is the worst.
//! * **Quick NAKer**: every ODATA also carries OPT_LOWWEIGHT with [`LW_NO_ACKS`] and
//!   [`LW_QUICK_NAK`]. A receiver named worst by the packet in hand NAKs a gap at once
//!   (back-off 0); the others keep their random back-off (§4.1). No receiver ACKs, not even
//!   the named one, and no receiver answers an election request.
//! * **Loss events**: a NAK from the worst receiver for a packet sent after the last
//!   reaction is a loss event; one reaction per round trip, as TCP's NewReno recovery point.
//!
//! [`LowWeight`] turns this into a rate: TCP's AIMD expressed per second (slow start doubles
//! the rate each RTT up to pgmcc's threshold of 6 packets per RTT, then the rate grows by one
//! packet per RTT per RTT; each loss event halves the rate the lost packet was sent at), paced by a token bucket, and held between the floor and
//! ceiling the session owner sets (§4.3). [`AcklessPgmcc`] keeps pgmcc's window and tokens
//! (§3.4 of the pgmcc paper) and replaces the acker's ACK stream by an implicit one: a packet
//! counts as acknowledged 1.25 worst-receiver RTTs after it left, unless the worst receiver
//! NAKed it first.
//!
//! The worst receiver's RTT comes from the timestamp echo on its NAKs, smoothed with gain
//! 1/8; before the first sample [`LowWeightConfig::initial_rtt`] stands in.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use pgm_wire::{
    LowWeight as LowWeightOpt, Options, PgmccData, PgmccFeedback, LW_NO_ACKS, LW_QUICK_NAK,
};
use serde::Serialize;

use super::pacing::PacingBucket;
use super::throughput::{Operating, SwitchBias, ThroughputModel};
use super::window::Window;
use super::{
    Ack, CcEvent, CcStats, CongestionControl, Events, Metrics, Nak, Rate, Repaired, RttSample,
    SourceLimits,
};
use crate::sqn;
use crate::time::{Duration, Instant};

mod ackless;

pub use ackless::{AcklessConfig, AcklessPgmcc};

/// Bytes OPT_LOWWEIGHT takes in each ODATA (option header 3 + body 6).
pub const OPTION_ROOM: usize = 9;

/// The rate never goes below this many packets per second, floor or not: a technical
/// minimum so that a long run of loss events cannot make the next packet wait for hours.
pub const MIN_RATE: f64 = 0.1;

/// Data packets [`LowWeight`] remembers the sending rate of.
const HISTORY: usize = 8192;

/// Knobs of [`LowWeight`]; defaults follow the paper where it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LowWeightConfig {
    /// Rate floor in packets per second, set by the session owner (§4.3): the sender never
    /// paces slower, whatever the computed rate. Default none.
    pub floor: Option<f64>,
    /// Rate ceiling in packets per second, set by the session owner (§4.3): the sender never
    /// paces faster, and the computed rate does not grow past it. Default none.
    pub ceiling: Option<f64>,
    /// Rate of the first packets, packets per second. Default 2 (one packet per initial RTT).
    pub initial_rate: f64,
    /// RTT assumed before the worst receiver's first report. Default 500 ms (RFC 4654's).
    pub initial_rtt: Duration,
    /// Slow start ends at this many packets per RTT, as pgmcc's fixed threshold (§3.4: 6):
    /// above it the rate grows additively only. The paper gives only the additive increase;
    /// an open-loop rate doubling further overshoots by the whole feedback delay (no ACK
    /// clock holds it back), which on a 1-s queue is ten times the bottleneck.
    pub ssthresh: f64,
    /// Tokens the pacing bucket holds at most (packets sent back to back after a pause).
    /// Default 2.
    pub burst: f64,
    /// Worst-receiver selection knobs.
    pub worst: WorstConfig,
}

impl Default for LowWeightConfig {
    fn default() -> LowWeightConfig {
        LowWeightConfig {
            floor: None,
            ceiling: None,
            initial_rate: 2.0,
            initial_rtt: Duration::from_millis(500),
            ssthresh: 6.0,
            burst: 2.0,
            worst: WorstConfig::default(),
        }
    }
}

/// How the worst receiver is chosen, shared by both controllers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WorstConfig {
    /// A report replaces the worst receiver when its throughput is below `c` times the
    /// worst's. The paper's rule b ("worse than this stored value"): `c = 1`.
    pub switch_bias: SwitchBias,
    /// Throughput model. Default the simple formula, the paper's (2).
    pub model: ThroughputModel,
    /// A worst receiver silent this long is forgotten, and the next reporter takes its place
    /// (ours: the paper keeps it forever, which a receiver that left would abuse). Default
    /// 30 s.
    pub expiry: Duration,
    /// Ask the worst receiver to NAK without back-off (the quick NAKer, §4.1). Default true;
    /// false only to measure what quick NAKs are worth.
    pub quick_nak: bool,
}

impl Default for WorstConfig {
    fn default() -> WorstConfig {
        WorstConfig {
            switch_bias: SwitchBias { num: 1, den: 1 },
            model: ThroughputModel::Simple,
            expiry: Duration::from_secs(30),
            quick_nak: true,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Worst {
    addr: IpAddr,
    op: Operating,
    heard: Instant,
}

/// The worst receiver, chosen from the reports on NAKs (§4.2), its smoothed RTT, and the
/// recovery point that makes loss events one per round trip.
#[derive(Debug)]
pub struct WorstReceiver {
    cfg: WorstConfig,
    worst: Option<Worst>,
    /// Smoothed RTT of the current worst receiver, seconds.
    srtt: Option<f64>,
    /// Losses of packets up to here were already reacted to.
    recover: Option<u32>,
}

/// What a NAK meant to the [`WorstReceiver`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NakVerdict {
    /// The worst receiver changed (from, to).
    pub switched: Option<(Option<IpAddr>, IpAddr)>,
    /// The NAK came from the worst receiver and names a packet sent after the last loss
    /// event: the first such sequence number.
    pub loss_event: Option<u32>,
}

impl WorstReceiver {
    /// No worst receiver yet.
    pub fn new(cfg: WorstConfig) -> WorstReceiver {
        WorstReceiver {
            cfg,
            worst: None,
            srtt: None,
            recover: None,
        }
    }

    /// The current worst receiver.
    pub fn addr(&self) -> Option<IpAddr> {
        self.worst.map(|w| w.addr)
    }

    /// Its latest operating point (RTT in ms, loss in 1/65536).
    pub fn operating(&self) -> Option<Operating> {
        self.worst.map(|w| w.op)
    }

    /// Its smoothed RTT in seconds, if it reported.
    pub fn srtt(&self) -> Option<f64> {
        self.srtt
    }

    /// Forgets a worst receiver silent for longer than the expiry.
    pub fn expire(&mut self, now: Instant) {
        if let Some(w) = self.worst {
            if now.saturating_duration_since(w.heard) > self.cfg.expiry {
                self.worst = None;
                self.srtt = None;
            }
        }
    }

    /// When [`WorstReceiver::expire`] next has work.
    pub fn expiry_at(&self) -> Option<Instant> {
        self.worst
            .map(|w| w.heard + self.cfg.expiry + Duration::from_millis(1))
    }

    /// A NAK for `sqns` with report `fb` (RTT `sample`) arrived; `last_sent` is the newest
    /// packet sent.
    pub fn on_nak(
        &mut self,
        now: Instant,
        sqns: &[u32],
        fb: &PgmccFeedback,
        sample: RttSample,
        last_sent: Option<u32>,
    ) -> NakVerdict {
        self.expire(now);
        let rtt_ms = sample.millis();
        let op = Operating {
            rtt: rtt_ms,
            loss: u32::from(fb.loss_rate),
        };
        let mut verdict = NakVerdict {
            switched: None,
            loss_event: None,
        };
        let sample = f64::from(rtt_ms) / 1000.0;
        match self.worst {
            Some(w) if w.addr == fb.rx => {
                self.worst = Some(Worst {
                    op,
                    heard: now,
                    ..w
                });
                self.srtt = Some(self.srtt.map_or(sample, |s| s * 7.0 / 8.0 + sample / 8.0));
            }
            Some(w) if !self.cfg.model.should_switch(op, w.op, self.cfg.switch_bias) => {}
            prev => {
                // First reporter, or worse than the stored worst: it moves there. A move is
                // not a loss event; the new worst's RTT replaces the old one's.
                self.worst = Some(Worst {
                    addr: fb.rx,
                    op,
                    heard: now,
                });
                self.srtt = Some(sample);
                verdict.switched = Some((prev.map(|w| w.addr), fb.rx));
            }
        }
        if self.addr() != Some(fb.rx) {
            return verdict;
        }
        let Some(lead) = last_sent else {
            return verdict;
        };
        let fresh = sqns
            .iter()
            .copied()
            .filter(|&s| sqn::le(s, lead) && self.recover.is_none_or(|r| sqn::gt(s, r)))
            .min_by(|&a, &b| {
                if sqn::lt(a, b) {
                    std::cmp::Ordering::Less
                } else {
                    std::cmp::Ordering::Greater
                }
            });
        if let Some(first) = fresh {
            self.recover = Some(lead);
            verdict.loss_event = Some(first);
        }
        verdict
    }

    fn option(&self, rate: f64) -> LowWeightOpt {
        let mut flags = LW_NO_ACKS;
        if self.cfg.quick_nak {
            flags |= LW_QUICK_NAK;
        }
        LowWeightOpt {
            flags,
            rate: (rate * 1000.0).clamp(0.0, f64::from(u32::MAX)) as u32,
        }
    }

    fn data(&self, now: Instant) -> PgmccData {
        PgmccData {
            tstamp: now.as_millis_u32(),
            // Unspecified until someone reports; our receivers never answer it with an ACK.
            acker: self
                .addr()
                .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)),
        }
    }
}

/// Shared bookkeeping of both controllers.
#[derive(Debug)]
struct Common {
    worst: WorstReceiver,
    last_sent: Option<u32>,
    events: Events,
    stats: CcStats,
}

impl Common {
    fn new(cfg: WorstConfig) -> Common {
        Common {
            worst: WorstReceiver::new(cfg),
            last_sent: None,
            events: Events::new(),
            stats: CcStats::default(),
        }
    }

    fn push_event(&mut self, ev: CcEvent) {
        self.events.push(ev);
    }

    /// Runs a NAK through the worst-receiver logic; returns the loss event, if any.
    fn on_nak(&mut self, now: Instant, n: &Nak<'_>) -> Option<u32> {
        let (fb, sample) = n.options.pgmcc_feedback.zip(n.rtt)?;
        self.stats.reports += 1;
        let v = self.worst.on_nak(now, n.sqns, &fb, sample, self.last_sent);
        if let Some((from, to)) = v.switched {
            if from.is_some() {
                self.stats.acker_switches += 1;
            }
            self.push_event(CcEvent::AckerChanged { from, to });
        }
        if v.loss_event.is_some() {
            self.stats.loss_events += 1;
        }
        v.loss_event
    }

    fn on_ack(&mut self) {
        // Nobody should ACK: receivers that do (not ours, or told otherwise) are ignored.
        self.stats.acks_ignored += 1;
    }

    /// The metrics both controllers share: the worst receiver and the counters.
    fn metrics(&self, window: Option<f64>, rate: Option<Rate>, tokens: u32) -> Metrics {
        Metrics {
            acker: self.worst.addr(),
            acker_report: self.worst.operating(),
            window,
            rate,
            srtt_secs: None,
            tokens,
            stats: self.stats.clone(),
        }
    }
}

/// The low-weight rate controller (Scholl and Parnes, `docs/lowweight.md`).
#[derive(Debug)]
pub struct LowWeight {
    cfg: LowWeightConfig,
    common: Common,
    /// The computed rate, packets per second (before floor and ceiling).
    rate: f64,
    slow_start: bool,
    tokens: PacingBucket,
    refilled: Instant,
    /// The computed rate each recent data packet left at: (sqn, rate), oldest first. A loss
    /// event halves the rate the lost packet was sent at, not the rate grown since (TCP
    /// halves the window that overflowed the queue, not a later one).
    sent: VecDeque<(u32, f64)>,
}

impl LowWeight {
    /// A controller starting at `now` at the initial rate, in slow start.
    pub fn new(cfg: LowWeightConfig, now: Instant) -> LowWeight {
        let mut cfg = cfg;
        cfg.burst = cfg.burst.max(1.0);
        LowWeight {
            rate: cfg.initial_rate.max(MIN_RATE),
            cfg,
            common: Common::new(cfg.worst),
            slow_start: true,
            tokens: PacingBucket::new(),
            refilled: now,
            sent: VecDeque::new(),
        }
    }

    /// The computed rate when `s` was sent, if still remembered.
    fn rate_at(&self, s: u32) -> Option<f64> {
        let i = self.sent.partition_point(|&(x, _)| sqn::lt(x, s));
        self.sent.get(i).filter(|&&(x, _)| x == s).map(|&(_, r)| r)
    }

    /// The computed rate, packets per second, before the floor and ceiling apply.
    pub fn computed_rate(&self) -> f64 {
        self.rate
    }

    /// The rate data is paced at, packets per second.
    pub fn send_rate(&self) -> f64 {
        let mut r = self.rate;
        if let Some(f) = self.cfg.floor {
            r = r.max(f);
        }
        if let Some(c) = self.cfg.ceiling {
            r = r.min(c);
        }
        r.max(MIN_RATE)
    }

    /// True while no loss event has been seen (below [`LowWeightConfig::ssthresh`] packets
    /// per RTT the rate doubles every RTT).
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    fn rtt(&self) -> f64 {
        self.common
            .worst
            .srtt()
            .unwrap_or(self.cfg.initial_rtt.as_secs_f64())
            .max(0.001)
    }

    /// Brings tokens and the computed rate up to `now`.
    fn advance(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.refilled).as_secs_f64();
        if dt <= 0.0 {
            return;
        }
        self.refilled = now;
        // Only a sender that spends its tokens earns more rate: once the bucket is full the
        // application is the limit, and growing the rate would only store up a burst.
        let limited = self.tokens.below(self.cfg.burst);
        if let Some(tokens) = self.tokens.refill(dt, self.send_rate(), self.cfg.burst) {
            self.common.push_event(CcEvent::TokensAvailable { tokens });
        }
        if limited {
            let rtt = self.rtt();
            // Cap each step at a few RTTs' worth, so one long idle gap does not explode it.
            let dt = dt.min(4.0 * rtt);
            if self.slow_start && self.rate * rtt < self.cfg.ssthresh {
                self.rate = (self.rate * (dt / rtt).exp2()).min(self.cfg.ssthresh / rtt);
            } else {
                self.rate += dt / (rtt * rtt);
            }
        }
        let cap = self.cfg.ceiling.unwrap_or(f64::MAX).max(MIN_RATE);
        self.rate = self.rate.clamp(MIN_RATE, cap);
    }
}

impl LowWeight {
    /// The OPT_LOWWEIGHT every ODATA carries: no ACKs, quick NAKs, the send rate.
    pub fn lowweight_option(&self) -> LowWeightOpt {
        self.common.worst.option(self.send_rate())
    }
}

impl CongestionControl for LowWeight {
    fn can_send(&self) -> bool {
        self.tokens.ready()
    }

    fn on_data_sent(&mut self, now: Instant, sqn: u32, opts: &mut Options<'_>) {
        self.advance(now);
        self.tokens.spend();
        self.common.last_sent = Some(sqn);
        self.sent.push_back((sqn, self.rate));
        if self.sent.len() > HISTORY {
            self.sent.pop_front();
        }
        opts.pgmcc_data = Some(self.common.worst.data(now));
        opts.lowweight = Some(self.lowweight_option());
    }

    fn on_repair_sent(&mut self, now: Instant, _sqn: u32, _: Repaired) {
        // Repairs leave at once but are paid for: the next data packets wait, so that data
        // and repairs together keep to the rate. The debt is capped at one RTT's worth.
        self.advance(now);
        let cap = self.cfg.burst + self.send_rate() * self.rtt();
        self.tokens.owe(cap);
    }

    fn on_ack(&mut self, _: Instant, _: &Ack<'_>) {
        self.common.on_ack();
    }

    fn on_nak(&mut self, now: Instant, n: &Nak<'_>) {
        self.advance(now);
        if let Some(lost) = self.common.on_nak(now, n) {
            self.slow_start = false;
            let base = self.rate_at(lost).map_or(self.rate, |r| r.min(self.rate));
            self.rate = (base / 2.0).max(MIN_RATE);
            self.common
                .push_event(CcEvent::Congestion { window: self.rate });
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.common.worst.expiry_at();
        if let Some(wait) = self.tokens.wait_secs(self.send_rate()) {
            // Rounded up, so that the token is whole when the timer fires (a deadline
            // rounded down to the nanosecond would fire again and again short of it).
            let at = self.refilled + Duration::from_nanos((wait * 1e9).ceil() as u64 + 1);
            t = Some(t.map_or(at, |x| x.min(at)));
        }
        t
    }

    fn on_timeout(&mut self, now: Instant) {
        self.advance(now);
        self.common.worst.expire(now);
    }

    fn poll_event(&mut self) -> Option<CcEvent> {
        self.common.events.pop()
    }

    fn metrics(&self) -> Metrics {
        // The rate in packets per second and the worst receiver's RTT: their product is the
        // window a TCP flow at this rate would have.
        let rate = Rate {
            pps: self.send_rate(),
            rtt_secs: self.rtt(),
        };
        self.common.metrics(None, Some(rate), self.tokens.whole())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::drive::{ack_fb, data, nak, send};
    use pgm_wire::AckRepr;
    use std::net::Ipv4Addr;

    /// [`WorstReceiver::on_nak`] with the report's RTT sample taken as the Sender does.
    fn wnak(
        w: &mut WorstReceiver,
        now: Instant,
        sqns: &[u32],
        fb: &PgmccFeedback,
        last_sent: Option<u32>,
    ) -> NakVerdict {
        w.on_nak(now, sqns, fb, RttSample::new(now, fb.tstamp), last_sent)
    }

    fn ms(n: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(n)
    }

    fn rx(n: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, n))
    }

    /// A report from `n` at `now` whose echo makes its RTT `rtt_ms`, with loss `loss`.
    fn fb(n: u8, now: Instant, rtt_ms: u32, loss: u16) -> PgmccFeedback {
        PgmccFeedback {
            tstamp: now.as_millis_u32().wrapping_sub(rtt_ms),
            loss_rate: loss,
            rx: rx(n),
        }
    }

    /// Sends every packet the controller allows up to `until`, 1 ms apart; returns the
    /// next sequence number.
    fn send_until(cc: &mut dyn CongestionControl, from: u64, until: u64, mut sqn: u32) -> u32 {
        for t in from..until {
            cc.on_timeout(ms(t));
            while cc.can_send() {
                send(cc, ms(t), sqn);
                sqn += 1;
            }
        }
        sqn
    }

    #[test]
    fn first_reporter_is_worst_until_a_worse_one_reports() {
        let mut w = WorstReceiver::new(WorstConfig::default());
        let t = ms(1000);
        let v = wnak(&mut w, t, &[], &fb(1, t, 100, 1000), Some(10));
        assert_eq!(v.switched, Some((None, rx(1))));
        // Better (less loss): stays.
        let v = wnak(&mut w, t, &[], &fb(2, t, 100, 500), Some(10));
        assert_eq!((v.switched, w.addr()), (None, Some(rx(1))));
        // Worse: replaces at once (c = 1, rule b).
        let v = wnak(&mut w, t, &[], &fb(3, t, 100, 1001), Some(10));
        assert_eq!(v.switched, Some((Some(rx(1)), rx(3))));
        // The worst's own report updates it, even when it improves.
        wnak(&mut w, t, &[], &fb(3, t, 50, 10), Some(10));
        assert_eq!(w.operating().unwrap().rtt, 50);
        assert_eq!(w.addr(), Some(rx(3)));
    }

    #[test]
    fn loss_events_only_from_the_worst_and_once_per_round_trip() {
        let mut w = WorstReceiver::new(WorstConfig::default());
        let t = ms(1000);
        // The first reporter is the worst at once: its NAK is a loss event.
        assert_eq!(
            wnak(&mut w, t, &[5], &fb(1, t, 100, 1000), Some(10)).loss_event,
            Some(5)
        );
        // More of the same window (up to 10, sent before the reaction): no new event.
        assert_eq!(
            wnak(&mut w, t, &[8, 9], &fb(1, t, 100, 1000), Some(12)).loss_event,
            None
        );
        // Another receiver's NAK for a later packet: not the worst, no event.
        assert_eq!(
            wnak(&mut w, t, &[11], &fb(2, t, 100, 10), Some(12)).loss_event,
            None
        );
        // The worst's NAK for a packet sent after the reaction: an event.
        assert_eq!(
            wnak(&mut w, t, &[12, 11], &fb(1, t, 100, 1000), Some(20)).loss_event,
            Some(11)
        );
        // A NAK naming packets never sent is no event (forged or foreign).
        assert_eq!(
            wnak(&mut w, t, &[99], &fb(1, t, 100, 1000), Some(30)).loss_event,
            None
        );
    }

    #[test]
    fn a_silent_worst_expires() {
        let mut w = WorstReceiver::new(WorstConfig::default());
        wnak(&mut w, ms(0), &[], &fb(1, ms(0), 100, 60000), None);
        w.expire(ms(29_000));
        assert_eq!(w.addr(), Some(rx(1)));
        w.expire(ms(31_000));
        assert_eq!(w.addr(), None);
        // The next reporter takes the place, however good.
        let v = wnak(&mut w, ms(31_000), &[], &fb(2, ms(31_000), 10, 1), None);
        assert_eq!(v.switched, Some((None, rx(2))));
    }

    #[test]
    fn data_packets_name_the_worst_and_forbid_acks() {
        let mut cc = LowWeight::new(LowWeightConfig::default(), ms(0));
        let d = data(&mut cc, ms(0), 0).unwrap();
        assert!(d.acker.is_unspecified());
        nak(&mut cc, ms(100), &[0], Some(&fb(7, ms(100), 100, 100)));
        cc.on_timeout(ms(2000));
        let d = data(&mut cc, ms(2000), 1).unwrap();
        assert_eq!(d.acker, rx(7));
        let l = cc.lowweight_option();
        assert_eq!(l.flags, LW_NO_ACKS | LW_QUICK_NAK);
        assert!(l.rate > 0);
        let mut o = Options::default();
        o.emit(&mut [0u8; 64]).unwrap();
        o.lowweight = Some(cc.lowweight_option());
        let mut buf = [0u8; 64];
        assert_eq!(
            o.emit(&mut buf).unwrap(),
            4 + OPTION_ROOM,
            "OPTION_ROOM is what the option takes"
        );
    }

    #[test]
    fn slow_start_stops_at_the_threshold() {
        // No report: RTT 500 ms, threshold 6 packets per RTT = 12 pkt/s.
        let mut cc = LowWeight::new(LowWeightConfig::default(), ms(0));
        send_until(&mut cc, 0, 5000, 0);
        assert!(cc.in_slow_start(), "no loss event yet");
        let r = cc.computed_rate();
        // 2 pkt/s doubles to 12 in 1.3 s, then +4 pkt/s per second for ~3.7 s.
        assert!(r > 20.0 && r < 35.0, "{r}");
    }

    #[test]
    fn slow_start_doubles_per_rtt_then_aimd() {
        let mut cc = LowWeight::new(LowWeightConfig::default(), ms(0));
        // One report sets the RTT to 100 ms (and is a loss event: leave it out).
        let mut sqn = send_until(&mut cc, 0, 10, 0);
        nak(&mut cc, ms(10), &[], Some(&fb(1, ms(10), 100, 100)));
        let r0 = cc.computed_rate();
        sqn = send_until(&mut cc, 10, 310, sqn);
        let r1 = cc.computed_rate();
        assert!(cc.in_slow_start());
        assert!((r1 / r0 - 8.0).abs() < 0.5, "3 RTTs: x8, got {r0} -> {r1}");
        // A loss event halves the rate and ends slow start.
        nak(
            &mut cc,
            ms(310),
            &[sqn - 1],
            Some(&fb(1, ms(310), 100, 100)),
        );
        let r2 = cc.computed_rate();
        assert!((r2 - r1 / 2.0).abs() < 0.5, "{r1} -> {r2}");
        assert!(!cc.in_slow_start());
        // Congestion avoidance: +1 packet per RTT per RTT = +10 pkt/s per 100 ms at 100 ms.
        send_until(&mut cc, 310, 1310, sqn);
        let r3 = cc.computed_rate();
        assert!((r3 - r2 - 100.0).abs() < 5.0, "{r2} -> {r3}");
        assert_eq!(
            cc.metrics().stats.loss_events,
            1,
            "a report naming no packet is no event"
        );
    }

    #[test]
    fn the_rate_does_not_grow_while_the_application_is_idle() {
        let mut cc = LowWeight::new(LowWeightConfig::default(), ms(0));
        let sqn = send_until(&mut cc, 0, 1000, 0);
        let r = cc.computed_rate();
        // Idle for 10 s: nothing sent, the bucket fills, the rate stays.
        for t in (1000..11_000).step_by(100) {
            cc.on_timeout(ms(t));
        }
        assert!(
            cc.computed_rate() < r * 1.5,
            "{r} -> {}",
            cc.computed_rate()
        );
        assert!(sqn > 0);
    }

    #[test]
    fn floor_and_ceiling_bound_the_send_rate() {
        let cfg = LowWeightConfig {
            floor: Some(20.0),
            ceiling: Some(50.0),
            ..LowWeightConfig::default()
        };
        let mut cc = LowWeight::new(cfg, ms(0));
        assert_eq!(cc.send_rate(), 20.0, "the floor applies from the start");
        let mut sqn = send_until(&mut cc, 0, 20_000, 0);
        assert_eq!(cc.send_rate(), 50.0);
        assert!(cc.computed_rate() <= 50.0, "no growth past the ceiling");
        // 20 s at <= 50 pkt/s (plus the burst).
        assert!(sqn <= 1002, "{sqn}");
        // Loss events push the computed rate below the floor; the send rate stays at it.
        for i in 0..20u64 {
            let t = 20_000 + i * 100;
            sqn = send_until(&mut cc, t, t + 100, sqn);
            nak(
                &mut cc,
                ms(t + 100),
                &[sqn - 1],
                Some(&fb(1, ms(t + 100), 100, 100)),
            );
        }
        assert!(cc.computed_rate() < 20.0, "{}", cc.computed_rate());
        assert_eq!(cc.send_rate(), 20.0);
    }

    #[test]
    fn acks_are_ignored() {
        let mut cc = LowWeight::new(LowWeightConfig::default(), ms(0));
        send(&mut cc, ms(0), 0);
        let ack = AckRepr {
            rx_max: 0,
            bitmap: 1,
        };
        ack_fb(&mut cc, ms(1), rx(1), &ack, Some(&fb(1, ms(1), 1, 0)));
        let s = cc.metrics().stats;
        assert_eq!((s.acks, s.acks_ignored, s.reports), (0, 1, 0));
        assert_eq!(cc.metrics().acker, None, "an ACK's report does not elect");
    }

    #[test]
    fn ackless_window_opens_on_implicit_acks_and_halves_on_worst_naks() {
        let mut cc = AcklessPgmcc::new(AcklessConfig::default(), ms(0));
        // RTT 100 ms from the first report.
        nak(&mut cc, ms(0), &[], Some(&fb(1, ms(0), 100, 100)));
        assert_eq!(cc.metrics().packets_per_rtt().unwrap(), 1.0);
        let mut sqn = send_until(&mut cc, 0, 124, 0);
        assert_eq!(sqn, 1, "W = 1: one packet per RTT");
        sqn = send_until(&mut cc, 124, 126, sqn);
        assert_eq!(
            cc.metrics().packets_per_rtt().unwrap(),
            2.0,
            "implicit ACK after 1.25 RTT"
        );
        sqn = send_until(&mut cc, 101, 1001, sqn);
        let w = cc.metrics().packets_per_rtt().unwrap();
        assert!(w > 6.0, "{w}");
        // The worst NAKs the newest packet: halved, and that packet returns no token.
        let flight = cc.in_flight();
        nak(
            &mut cc,
            ms(1001),
            &[sqn - 1],
            Some(&fb(1, ms(1001), 100, 100)),
        );
        assert!(
            (cc.metrics().packets_per_rtt().unwrap() - (w / 2.0).max(1.0)).abs() < 1.0,
            "{w} -> {}",
            cc.metrics().packets_per_rtt().unwrap()
        );
        assert_eq!(cc.in_flight(), flight - 1);
        // The same NAK again (a retry), and NAKs for packets never sent or long gone: no
        // further change.
        nak(
            &mut cc,
            ms(1001),
            &[sqn - 1, sqn + 5, 0],
            Some(&fb(1, ms(1001), 100, 100)),
        );
        assert_eq!(cc.in_flight(), flight - 1);
        assert_eq!(cc.metrics().stats.loss_events, 1);
        // Another receiver's NAK does nothing to the window.
        let w2 = cc.metrics().packets_per_rtt().unwrap();
        nak(
            &mut cc,
            ms(1002),
            &[sqn - 1],
            Some(&fb(2, ms(1002), 100, 1)),
        );
        assert_eq!(cc.metrics().packets_per_rtt().unwrap(), w2);
    }

    #[test]
    fn ackless_never_waits_for_acks() {
        // No report at all: implicit ACKs at the initial RTT keep the window moving.
        let mut cc = AcklessPgmcc::new(AcklessConfig::default(), ms(0));
        let sqn = send_until(&mut cc, 0, 5000, 0);
        assert!(sqn > 20, "{sqn}");
        assert_eq!(cc.metrics().stats.stalls, 0);
    }
}
