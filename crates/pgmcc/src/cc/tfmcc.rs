//! A TFMCC-style equation-based rate controller (RFC 4654 essentials), the well-known
//! baseline to compare pgmcc with (issue 10).
//!
//! What this slice implements, and on which feedback (see `docs/tfmcc.md`):
//!
//! * [`tcp_rate`]: the TCP throughput equation of RFC 4654 (b = 1, t_RTO = 4 R).
//! * [`LossEvents`]: the TFRC weighted-average-loss-interval estimator of the loss event
//!   rate (RFC 4654, RFC 5348), run by receivers when `ReceiverConfig::loss_events` is set.
//! * [`Tfmcc`]: the sender. It paces data at a rate (tokens refilled over time, deadline
//!   through `poll_timeout`), selects the current limiting receiver (CLR) as the receiver with
//!   the lowest calculated rate, follows the CLR's rate at once downwards and at most one
//!   packet per RTT per RTT upwards, runs slow start capped at twice the CLR's receive rate,
//!   and halves the rate when the CLR is silent for [`TfmccConfig::no_feedback_rtts`] RTTs.
//!
//! Feedback rides on the existing OPT_PGMCC_FEEDBACK (timestamp echo, loss, identity), on
//! ACKs; the CLR is named in OPT_PGMCC_DATA's acker field. With
//! [`TfmccConfig::feedback_rounds`] (the default) each ODATA also carries our experimental
//! OPT_TFMCC_DATA: the feedback round, its duration, R_max, the CLR's report interval (its
//! RTT), the lowest rate reported this round (for suppression) and the sending rate. The CLR
//! then reports once per RTT, and the other receivers whose calculated rate is below the
//! sending rate report once per round after a random timer, unless the echoed rate shows that
//! a receiver at least as slow already did (receiver side in `receiver/mod.rs`). Without
//! rounds the CLR ACKs every ODATA and other receivers report only on NAKs. The sender
//! computes each receiver's rate from the echoed RTT and the reported loss event rate.

use std::collections::VecDeque;
use std::net::IpAddr;

use pgm_wire::{Options, PgmccData, PgmccFeedback, TfmccData};
use serde::Serialize;

use super::pacing::PacingBucket;
use super::throughput::Operating;
use super::{Ack, CcEvent, CcStats, CongestionControl, Events, Metrics, Nak, Rate, RttSample};
use crate::sqn;
use crate::time::{Duration, Instant};

/// The TCP throughput equation of RFC 4654 with b = 1 and t_RTO = 4 R: the rate, in
/// packets per second, of a TCP flow with round-trip time `rtt_s` seconds and loss event rate
/// `p`. Infinite when `p <= 0` (no loss: the equation gives no bound); `rtt_s` is taken as at
/// least 1 microsecond.
pub fn tcp_rate(rtt_s: f64, p: f64) -> f64 {
    if p <= 0.0 || p.is_nan() {
        return f64::INFINITY;
    }
    let p = p.min(1.0);
    let r = rtt_s.max(1e-6);
    let t_rto = 4.0 * r;
    let denom = r * (2.0 * p / 3.0).sqrt()
        + t_rto * (3.0 * (3.0 * p / 8.0).sqrt()) * p * (1.0 + 32.0 * p * p);
    1.0 / denom
}

/// Weights of the last eight loss intervals (RFC 5348, used by RFC 4654).
const WEIGHTS: [f64; 8] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

/// The TFRC loss event rate estimator: packets between the starts of consecutive loss events,
/// the last eight closed intervals averaged with `WEIGHTS`, the open interval counted only
/// when it raises the average (RFC 5348). Losses closer together than one RTT after the
/// start of an event belong to that event.
#[derive(Debug, Clone, Default)]
pub struct LossEvents {
    /// Closed intervals, newest first (at most 8).
    closed: VecDeque<u32>,
    /// Packets since the start of the latest loss event (the open interval I_0).
    open: u32,
    /// Start of the latest loss event.
    last_event: Option<Instant>,
}

impl LossEvents {
    /// No loss seen yet.
    pub fn new() -> LossEvents {
        LossEvents::default()
    }

    /// `n` packets arrived (or were lost: a loss event interval counts every packet).
    pub fn on_packets(&mut self, n: u32) {
        self.open = self.open.saturating_add(n);
    }

    /// A packet was found lost at `now`; the receiver's RTT estimate is `rtt`. Returns true
    /// when this loss starts a new loss event.
    pub fn on_loss(&mut self, now: Instant, rtt: Duration) -> bool {
        if let Some(t) = self.last_event {
            if now < t + rtt {
                return false;
            }
        }
        if self.last_event.is_some() {
            self.closed.push_front(self.open.max(1));
            self.closed.truncate(WEIGHTS.len());
        }
        // The first event has no interval before it (RFC 5348 synthesises one from
        // the receive rate; we start with the packets seen so far).
        else if self.open > 0 {
            self.closed.push_front(self.open);
        }
        self.open = 0;
        self.last_event = Some(now);
        true
    }

    /// The average loss interval in packets, `None` before the first loss event.
    pub fn mean_interval(&self) -> Option<f64> {
        if self.closed.is_empty() {
            return None;
        }
        let n = self.closed.len();
        let mut tot0 = 0.0;
        let mut tot1 = 0.0;
        let mut w_tot = 0.0;
        // I_tot1 over the closed intervals I_1..I_n; I_tot0 over I_0..I_{n-1}.
        for (i, w) in WEIGHTS.iter().take(n).enumerate() {
            tot1 += self.closed[i] as f64 * w;
            let i0 = if i == 0 {
                f64::from(self.open)
            } else {
                f64::from(self.closed[i - 1])
            };
            tot0 += i0 * w;
            w_tot += w;
        }
        Some(tot0.max(tot1) / w_tot)
    }

    /// The loss event rate `p = 1 / mean interval`; 0 before the first loss event.
    pub fn loss_event_rate(&self) -> f64 {
        match self.mean_interval() {
            Some(m) if m > 0.0 => (1.0 / m).min(1.0),
            _ => 0.0,
        }
    }
}

/// Knobs of the TFMCC sender.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TfmccConfig {
    /// Initial rate in packets per second (our reading of RFC 4654: one packet per RTT with
    /// an initial RTT of 500 ms, i.e. 2).
    pub initial_rate: f64,
    /// Lowest rate in packets per second (one packet per 64 s in TFRC; we keep a floor that
    /// still measures something).
    pub min_rate: f64,
    /// RTT assumed before the first measurement (RFC 4654 as we read it: 500 ms).
    pub initial_rtt: Duration,
    /// Halve the rate when the CLR is silent for this many RTTs (our reading of RFC 4654: 10),
    /// with a lower bound of [`TfmccConfig::min_no_feedback`].
    pub no_feedback_rtts: u32,
    /// Lower bound of the no-feedback timeout.
    pub min_no_feedback: Duration,
    /// Burst allowance of the pacer, in packets.
    pub burst: f64,
    /// Halvings in a row without CLR feedback after which the next data packet asks for a new
    /// election (the CLR may have left).
    pub silences_before_election: u32,
    /// Run feedback rounds with suppression (OPT_TFMCC_DATA on ODATA; the CLR reports once
    /// per RTT). Off: the CLR ACKs every ODATA, others report on NAKs only.
    pub feedback_rounds: bool,
    /// Duration of a feedback round in units of R_max (our choice: 4).
    pub round_rtts: f64,
}

impl Default for TfmccConfig {
    fn default() -> TfmccConfig {
        TfmccConfig {
            initial_rate: 2.0,
            min_rate: 0.1,
            initial_rtt: Duration::from_millis(500),
            no_feedback_rtts: 10,
            min_no_feedback: Duration::from_millis(500),
            burst: 2.0,
            silences_before_election: 2,
            feedback_rounds: true,
            round_rtts: 4.0,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Clr {
    addr: IpAddr,
    /// Smoothed RTT, seconds.
    rtt: f64,
    /// Latest reported loss rate (0..=1).
    p: f64,
    /// RX_MAX and time at the start of the receive-rate measurement.
    recv_from: Option<(u32, Instant)>,
    /// Receive rate measured over the latest RTT, packets per second.
    x_recv: Option<f64>,
    last_heard: Instant,
}

/// The TFMCC sender controller.
#[derive(Debug)]
pub struct Tfmcc {
    cfg: TfmccConfig,
    /// Sending rate, packets per second.
    rate: f64,
    tokens: PacingBucket,
    refilled: Instant,
    slow_start: bool,
    /// Last time the rate was raised (slow start doubles once per RTT, congestion avoidance
    /// raises linearly with elapsed time).
    raised: Instant,
    clr: Option<Clr>,
    elect: bool,
    last_sent: Option<u32>,
    silences_in_a_row: u32,
    /// Deadline of the no-feedback timer.
    no_feedback_at: Instant,
    /// Feedback round number and start.
    round: u16,
    round_start: Instant,
    /// Lowest rate (packets/s, computed with R_max as receivers do) reported this round.
    supp: Option<f64>,
    /// R_max, seconds: the largest RTT measured in the previous round (at least the CLR's).
    r_max: f64,
    /// The largest RTT measured in the current round, seconds.
    r_max_round: f64,
    events: Events,
    stats: CcStats,
}

impl Tfmcc {
    /// A sender starting at `now` at [`TfmccConfig::initial_rate`], in slow start; the first
    /// data packet asks for an election of the first CLR.
    pub fn new(cfg: TfmccConfig, now: Instant) -> Tfmcc {
        Tfmcc {
            rate: cfg.initial_rate.max(cfg.min_rate),
            tokens: PacingBucket::new(),
            refilled: now,
            slow_start: true,
            raised: now,
            clr: None,
            elect: true,
            last_sent: None,
            silences_in_a_row: 0,
            no_feedback_at: now + Self::no_feedback_for(&cfg, cfg.initial_rtt.as_secs_f64()),
            round: 0,
            round_start: now,
            supp: None,
            r_max: cfg.initial_rtt.as_secs_f64(),
            r_max_round: 0.0,
            events: Events::new(),
            stats: CcStats::default(),
            cfg,
        }
    }

    /// The sending rate, packets per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// True until the first report of a loss.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    fn no_feedback_for(cfg: &TfmccConfig, rtt_s: f64) -> Duration {
        let d = Duration::from_secs_f64((rtt_s * f64::from(cfg.no_feedback_rtts)).min(3600.0));
        d.max(cfg.min_no_feedback)
    }

    fn rtt_s(&self) -> f64 {
        self.clr
            .map_or(self.cfg.initial_rtt.as_secs_f64(), |c| c.rtt)
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.refilled = now;
        if let Some(tokens) = self.tokens.refill(dt, self.rate, self.cfg.burst.max(1.0)) {
            self.events.push(CcEvent::TokensAvailable { tokens });
        }
    }

    fn set_rate(&mut self, rate: f64) {
        let r = rate.max(self.cfg.min_rate);
        if r.is_finite() {
            self.rate = r;
        }
    }

    fn switch_to(&mut self, now: Instant, addr: IpAddr, rtt: f64, p: f64) {
        let from = self.clr.map(|c| c.addr);
        if from.is_some() {
            self.stats.acker_switches += 1;
        }
        self.clr = Some(Clr {
            addr,
            rtt,
            p,
            recv_from: None,
            x_recv: None,
            last_heard: now,
        });
        self.elect = false;
        self.silences_in_a_row = 0;
        self.no_feedback_at = now + Self::no_feedback_for(&self.cfg, rtt);
        self.events.push(CcEvent::AckerChanged { from, to: addr });
    }

    /// The round duration, seconds.
    fn round_s(&self) -> f64 {
        (self.cfg.round_rtts * self.r_max).clamp(0.01, 60.0)
    }

    /// Starts a new feedback round when the current one is over.
    fn advance_round(&mut self, now: Instant) {
        if now
            .saturating_duration_since(self.round_start)
            .as_secs_f64()
            < self.round_s()
        {
            return;
        }
        self.round = self.round.wrapping_add(1);
        self.round_start = now;
        self.supp = None;
        let clr_rtt = self.clr.map_or(0.0, |c| c.rtt);
        let measured = self.r_max_round.max(clr_rtt);
        if measured > 0.0 {
            self.r_max = measured;
        }
        self.r_max_round = 0.0;
    }

    /// One receiver report: `rx_max` when it came on an ACK.
    fn on_report(
        &mut self,
        now: Instant,
        fb: &PgmccFeedback,
        sample: RttSample,
        rx_max: Option<u32>,
    ) {
        self.stats.reports += 1;
        self.refill(now);
        let rtt = sample.secs();
        let p = f64::from(fb.loss_rate) / 65535.0;
        self.r_max_round = self.r_max_round.max(rtt);
        let Some(mut clr) = self.clr else {
            self.switch_to(now, fb.rx, rtt, p);
            return;
        };
        if clr.addr != fb.rx {
            // Feedback suppression: echo the lowest rate reported this round, computed as
            // the receivers compute theirs (with R_max).
            let x_rmax = tcp_rate(self.r_max, p);
            if x_rmax.is_finite() {
                self.supp = Some(self.supp.map_or(x_rmax, |s| s.min(x_rmax)));
            }
            // CLR selection: the receiver with the lowest calculated rate (RFC 4654).
            let x = tcp_rate(rtt, p);
            if x < tcp_rate(clr.rtt, clr.p) {
                self.switch_to(now, fb.rx, rtt, p);
                self.follow(now, x);
            }
            return;
        }
        clr.rtt = 0.75 * clr.rtt + 0.25 * rtt;
        clr.p = p;
        clr.last_heard = now;
        if let Some(m) = rx_max {
            // The CLR's receive rate: how far its RX_MAX moved over at least one RTT.
            match clr.recv_from {
                Some((m0, t0)) => {
                    let span = now.saturating_duration_since(t0).as_secs_f64();
                    if span >= clr.rtt && span > 0.0 {
                        clr.x_recv = Some(f64::from(sqn::distance(m0, m)) / span);
                        clr.recv_from = Some((m, now));
                    }
                }
                None => clr.recv_from = Some((m, now)),
            }
        }
        self.clr = Some(clr);
        self.silences_in_a_row = 0;
        self.no_feedback_at = now + Self::no_feedback_for(&self.cfg, clr.rtt);
        self.follow(now, tcp_rate(clr.rtt, clr.p));
    }

    /// The OPT_TFMCC_DATA the next data packet carries (`None` without feedback rounds).
    pub fn tfmcc_data(&self) -> Option<TfmccData> {
        if !self.cfg.feedback_rounds {
            return None;
        }
        let ms = |s: f64| (s * 1000.0).round().clamp(1.0, f64::from(u16::MAX)) as u16;
        let milli = |x: f64| {
            (x * 1000.0)
                .round()
                .clamp(0.0, f64::from(TfmccData::NO_RATE - 1)) as u32
        };
        Some(TfmccData {
            round: self.round,
            round_ms: ms(self.round_s()),
            r_max_ms: ms(self.r_max),
            clr_ivl_ms: ms(self.clr.map_or(self.r_max, |c| c.rtt)),
            supp_rate: self.supp.map_or(TfmccData::NO_RATE, milli),
            send_rate: milli(self.rate),
        })
    }

    /// Moves the rate towards the CLR's calculated rate `x_calc` (RFC 4654).
    fn follow(&mut self, now: Instant, x_calc: f64) {
        let Some(clr) = self.clr else { return };
        let since = now.saturating_duration_since(self.raised).as_secs_f64();
        if self.slow_start {
            if x_calc.is_finite() {
                // First loss: leave slow start at the calculated rate (at most the current
                // one: no loss report raises the rate).
                self.slow_start = false;
                self.set_rate(x_calc.min(self.rate));
                self.raised = now;
                self.stats.loss_events += 1;
                return;
            }
            // Double once per RTT, capped at twice the CLR's receive rate.
            if since >= clr.rtt {
                let cap = clr.x_recv.map_or(f64::INFINITY, |x| 2.0 * x);
                let target = (2.0 * self.rate).min(cap).max(self.rate);
                self.set_rate(target);
                self.raised = now;
            }
            return;
        }
        if x_calc < self.rate {
            self.set_rate(x_calc);
            self.raised = now;
            self.stats.loss_events += 1;
            self.events.push(CcEvent::Congestion {
                window: self.rate * clr.rtt,
            });
        } else if since > 0.0 {
            // Increase at most one packet per RTT per RTT (TCP's additive increase), and never
            // beyond twice the receive rate.
            let limit = self.rate + since / (clr.rtt * clr.rtt);
            let cap = clr.x_recv.map_or(f64::INFINITY, |x| 2.0 * x.max(1.0));
            let target = x_calc.min(limit).min(cap.max(self.rate));
            if target > self.rate {
                self.set_rate(target);
            }
            self.raised = now;
        }
    }
}

impl CongestionControl for Tfmcc {
    fn can_send(&self) -> bool {
        self.tokens.ready()
    }

    fn on_data_sent(&mut self, now: Instant, sqn: u32, opts: &mut Options<'_>) {
        self.refill(now);
        self.advance_round(now);
        self.tokens.spend();
        self.last_sent = Some(sqn);
        let acker = match (self.elect, self.clr) {
            (false, Some(c)) => c.addr,
            _ => {
                self.stats.election_requests += 1;
                IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
            }
        };
        opts.pgmcc_data = Some(PgmccData {
            tstamp: now.as_millis_u32(),
            acker,
        });
        opts.tfmcc_data = self.tfmcc_data();
    }

    fn on_ack(&mut self, now: Instant, a: &Ack<'_>) {
        let from = a.from;
        let Some((fb, sample)) = a
            .options
            .pgmcc_feedback
            .zip(a.rtt)
            .filter(|f| f.0.rx == from)
        else {
            self.stats.acks_ignored += 1;
            return;
        };
        if self.clr.is_some_and(|c| c.addr == from) {
            self.stats.acks += 1;
        }
        self.on_report(now, &fb, sample, Some(a.ack.rx_max));
    }

    fn on_nak(&mut self, now: Instant, n: &Nak<'_>) {
        if let (Some(fb), Some(sample)) = (n.options.pgmcc_feedback, n.rtt) {
            self.on_report(now, &fb, sample, None);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let mut t = self.no_feedback_at;
        if let Some(wait) = self.tokens.wait_secs(self.rate).filter(|_| self.rate > 0.0) {
            let wait = Duration::from_secs_f64(wait);
            t = t.min(self.refilled + wait);
        }
        Some(t)
    }

    fn on_timeout(&mut self, now: Instant) {
        self.refill(now);
        if now >= self.no_feedback_at {
            // No feedback from the CLR: halve the rate (RFC 4654).
            self.set_rate(self.rate / 2.0);
            self.stats.stalls += 1;
            self.silences_in_a_row += 1;
            self.events.push(CcEvent::Stalled {
                stalls_in_a_row: self.silences_in_a_row,
            });
            if self.silences_in_a_row >= self.cfg.silences_before_election {
                self.elect = true;
            }
            let rtt = self.rtt_s();
            self.no_feedback_at = now + Self::no_feedback_for(&self.cfg, rtt);
        }
    }

    fn poll_event(&mut self) -> Option<CcEvent> {
        self.events.pop()
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            acker: self.clr.map(|c| c.addr),
            acker_report: self.clr.map(|c| Operating {
                rtt: (c.rtt * 1000.0).round() as u32,
                loss: (c.p * 65536.0).round() as u32,
            }),
            window: None,
            rate: Some(Rate {
                pps: self.rate,
                rtt_secs: self.rtt_s(),
            }),
            srtt_secs: None,
            tokens: self.tokens.whole(),
            stats: self.stats.clone(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::cc::drive::{data, nak, send};

    #[test]
    fn equation_matches_hand_computed_values() {
        // R = 100 ms, p = 1%: 0.1*sqrt(0.02/3) = 0.00816497;
        // 0.4 * 3*sqrt(0.00375) * 0.01 * 1.0032 = 0.00073720; X = 1/0.00890217 = 112.33.
        let x = tcp_rate(0.1, 0.01);
        assert!((x - 112.33).abs() < 0.01, "{x}");
        // R = 50 ms, p = 10%: 0.05*0.2581989 = 0.01290994;
        // 0.2 * 3*sqrt(0.0375) * 0.1 * 1.32 = 0.01533622; X = 1/0.02824697 = 35.402.
        let x = tcp_rate(0.05, 0.1);
        assert!((x - 35.402).abs() < 0.01, "{x}");
        assert!(tcp_rate(0.1, 0.0).is_infinite());
    }

    #[test]
    fn loss_events_weighted_average() {
        let mut l = LossEvents::new();
        let t = |ms: u64| Instant::from_nanos(ms * 1_000_000);
        let rtt = Duration::from_millis(100);
        assert_eq!(l.loss_event_rate(), 0.0);
        l.on_packets(100);
        assert!(l.on_loss(t(0), rtt));
        // A second loss within the RTT is the same event.
        l.on_packets(5);
        assert!(!l.on_loss(t(50), rtt));
        // Intervals: 100 then 50 closed by events at 1 s and 2 s.
        l.on_packets(45);
        assert!(l.on_loss(t(1000), rtt));
        l.on_packets(50);
        assert!(l.on_loss(t(2000), rtt));
        // closed (newest first) = [50, 50, 100], open = 0:
        // tot1 = 50 + 50 + 100 = 200, tot0 = 0 + 50 + 50 = 100, w = 3 -> mean 66.67.
        assert!((l.mean_interval().unwrap() - 200.0 / 3.0).abs() < 1e-9);
        // A long open interval raises the average: open = 400 -> tot0 = 500, mean 166.67.
        l.on_packets(400);
        assert!((l.mean_interval().unwrap() - 500.0 / 3.0).abs() < 1e-9);
        assert!((l.loss_event_rate() - 3.0 / 500.0).abs() < 1e-12);
    }

    #[test]
    fn loss_events_keep_eight_weighted_intervals() {
        let mut l = LossEvents::new();
        let rtt = Duration::from_millis(10);
        // Nine events 100 packets apart, then a tenth after 20: intervals newest first
        // [20, 100 x 7] (the oldest dropped beyond eight).
        for i in 0..10u64 {
            l.on_packets(if i == 9 { 20 } else { 100 });
            l.on_loss(Instant::from_nanos(i * 1_000_000_000), rtt);
        }
        // tot1 = 20*1 + 100*(1+1+1+0.8+0.6+0.4+0.2) = 20 + 500 = 520, w = 6;
        // tot0 = 0 + 20 + 100*(1+1+0.8+0.6+0.4+0.2) = 420 -> mean = 520/6.
        assert!((l.mean_interval().unwrap() - 520.0 / 6.0).abs() < 1e-9);
    }

    fn ms(t: u64) -> Instant {
        Instant::from_nanos(t * 1_000_000)
    }

    fn fb(rx: [u8; 4], echo: Instant, loss: f64) -> PgmccFeedback {
        PgmccFeedback {
            tstamp: echo.as_millis_u32(),
            loss_rate: (loss * 65535.0).round() as u16,
            rx: IpAddr::from(rx),
        }
    }

    #[test]
    fn paces_at_the_rate_and_halves_without_feedback() {
        let cfg = TfmccConfig::default();
        let mut c = Tfmcc::new(cfg, ms(0));
        assert!(c.can_send());
        let d = data(&mut c, ms(0), 0).unwrap();
        assert!(d.acker.is_unspecified(), "the first packet asks for a CLR");
        assert!(!c.can_send());
        // 2 packets/s: the next token is due 500 ms later.
        assert_eq!(c.poll_timeout(), Some(ms(500)));
        c.on_timeout(ms(500));
        assert!(c.can_send());
        // No CLR ever answers: after max(10 x 500 ms, 500 ms) = 5 s the rate halves.
        c.on_timeout(ms(5000));
        assert!((c.rate() - 1.0).abs() < 1e-9, "{}", c.rate());
        assert_eq!(c.metrics().stats.stalls, 1);
    }

    #[test]
    fn clr_is_the_lowest_calculated_rate() {
        let mut c = Tfmcc::new(TfmccConfig::default(), ms(0));
        send(&mut c, ms(0), 0);
        let a = [10, 0, 0, 1];
        let b = [10, 0, 0, 2];
        // A answers the election: CLR. A loss report from A ends slow start at the rate.
        nak(&mut c, ms(100), &[], Some(&fb(a, ms(0), 0.0)));
        assert_eq!(c.metrics().acker, Some(IpAddr::from(a)));
        nak(&mut c, ms(200), &[], Some(&fb(a, ms(100), 0.01)));
        assert!(!c.in_slow_start());
        // B: same loss, longer RTT (400 ms vs ~100 ms): lower X_calc, B takes over and the
        // rate drops to B's equation rate at once.
        nak(&mut c, ms(700), &[], Some(&fb(b, ms(300), 0.01)));
        assert_eq!(c.metrics().acker, Some(IpAddr::from(b)));
        assert!(c.rate() <= tcp_rate(0.4, 0.01) + 1e-9, "{}", c.rate());
        // A reports again with its better path: no switch back.
        nak(&mut c, ms(900), &[], Some(&fb(a, ms(800), 0.01)));
        assert_eq!(c.metrics().acker, Some(IpAddr::from(b)));
        assert_eq!(c.metrics().stats.acker_switches, 1);
    }

    #[test]
    fn rounds_advance_every_four_r_max_and_echo_the_lowest_report() {
        let mut c = Tfmcc::new(TfmccConfig::default(), ms(0));
        send(&mut c, ms(0), 0);
        let d = c.tfmcc_data().unwrap();
        // Before any RTT sample R_max is the initial 500 ms: rounds of 2 s.
        assert_eq!((d.round, d.round_ms, d.r_max_ms), (0, 2000, 500));
        assert_eq!(d.supp_rate, TfmccData::NO_RATE);
        let (a, b, e) = ([10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 0, 3]);
        // A is the first CLR (RTT 100 ms). Two reports from others follow: the echo is the
        // lower of their rates computed with R_max, as the receivers compute theirs.
        nak(&mut c, ms(100), &[], Some(&fb(a, ms(0), 0.01)));
        nak(&mut c, ms(300), &[], Some(&fb(b, ms(100), 0.02))); // RTT 200 ms
        nak(&mut c, ms(400), &[], Some(&fb(e, ms(300), 0.05)));
        send(&mut c, ms(500), 1);
        let d = c.tfmcc_data().unwrap();
        // (Loss travels in 1/65535 steps.)
        let milli = |l: f64| {
            let p = (l * 65535.0f64).round() / 65535.0;
            (tcp_rate(0.5, p) * 1000.0).round() as u32
        };
        assert_eq!(d.supp_rate, milli(0.05).min(milli(0.02)));
        assert_eq!(d.round, 0);
        // At 2 s a new round starts: the echo is cleared and R_max is the largest RTT of
        // the last round (200 ms), so rounds now last 800 ms.
        send(&mut c, ms(2000), 2);
        let d = c.tfmcc_data().unwrap();
        assert_eq!((d.round, d.r_max_ms, d.round_ms), (1, 200, 800));
        assert_eq!(d.supp_rate, TfmccData::NO_RATE);
        // B's report (2% at 200 ms: 36.6 packets/s against E's 36.8 and A's 112) made it
        // the CLR; the CLR's report interval is its RTT.
        assert_eq!(c.metrics().acker, Some(IpAddr::from(b)));
        assert_eq!(d.clr_ivl_ms, 200);
        // Without rounds there is no option (the CLR ACKs every packet).
        let off = Tfmcc::new(
            TfmccConfig {
                feedback_rounds: false,
                ..TfmccConfig::default()
            },
            ms(0),
        );
        assert_eq!(off.tfmcc_data(), None);
    }
}
