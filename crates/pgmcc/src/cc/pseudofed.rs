//! Pseudofed: representative-based multicast congestion control (DeLucia and Obraczka,
//! "Congestion Control Performance of a Reliable Multicast Protocol"), issue 10.
//!
//! The sender keeps a small, dynamic set of *representatives* (receivers standing for the
//! congested subtrees), measures a group round-trip time (GRTT) from their feedback, and
//! adjusts a sending *rate* through an *acceleration*:
//!
//! * slow start: the rate starts at `rate_min` and grows by half every `I * GRTT` (I = 4);
//!   it ends at the first congestion indication (CI) with queueing, or the first congestion
//!   clear (CC) showing more than β packets queued, halving the rate;
//! * queueing from the RTT (TCP Vegas' idea, paper eq. 1): `queued = (rtt - rtt_min) * rate`
//!   packets, with `rtt_min` kept per receiver;
//! * a CI with queueing sets `accel = -rate / (I * GRTT)` (eq. 2); a CI without queueing is an
//!   *uncorrelated* loss and leaves the rate alone;
//! * a CC with less than α packets queued moves the acceleration towards
//!   `δ * rate / GRTT` by `1 / representatives` (eq. 3); one with more than β sets
//!   `accel = -I * δ * rate / GRTT` (eq. 4); in between the acceleration is zeroed (hold);
//! * the rate never falls below `rate_min`.
//!
//! Representatives: any receiver that reports while the set is not full joins it; when full,
//! only a CI from a non-representative qualifies, and it replaces the representative whose
//! last CI is oldest (LRU), among those that have served at least 4 GRTT. The set, the GRTT,
//! the receivers' timer fractions and the latest CI heard go to receivers in OPT_PSEUDOFED on
//! every ODATA; receivers then switch to Pseudofed feedback on their own (`cc/feedback/pseudofed.rs`).
//! Wire layout and the paper-to-code table: `docs/pseudofed.md`.

use std::net::{IpAddr, Ipv4Addr};

use pgm_wire::{
    Options, PgmccData, PgmccFeedback, Pseudofed as PfOpt, RepList, MAX_REPRESENTATIVES, PF_CI,
    PF_FULL, PF_HAVE_CI,
};
use serde::Serialize;

use super::pacing::PacingBucket;
use super::throughput::Operating;
use super::{Ack, CcEvent, CcStats, CongestionControl, Events, Metrics, Nak, Rate, RttSample};
use crate::grtt::GroupRtt;
use crate::sqn;
use crate::time::{Duration, Instant};

/// Knobs of the Pseudofed sender. Rates are in packets per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PseudofedConfig {
    /// Size of the representative set (1..=8, the most OPT_PSEUDOFED carries).
    pub representatives: usize,
    /// `rate_min`: the starting rate and the floor (paper: administratively set).
    pub rate_min: f64,
    /// `I`: slow start grows by half, and a CI halves the rate, over `I * GRTT` (paper: 4).
    pub interval_grtts: f64,
    /// α, packets queued below which CCs raise the rate (paper: 1).
    pub alpha: f64,
    /// β, packets queued above which CCs lower the rate (paper: 3).
    pub beta: f64,
    /// δ_ratemax: the fraction of the rate CCs may add per GRTT (eq. 3, 4; the paper gives
    /// no value).
    pub delta_rate: f64,
    /// GRTT before any measurement (paper: feedback timers start at 1 s).
    pub initial_grtt: Duration,
    /// How long an entry stays in the GRTT table of longest RTTs.
    pub grtt_expiry: Duration,
    /// Receivers' deterministic wait before a non-representative report, fraction of GRTT.
    pub wait: f64,
    /// Receivers' random suppression interval after the wait, fraction of GRTT.
    pub suppression: f64,
    /// Minimum time a representative serves before it may be ejected, in GRTTs (paper: 4).
    pub min_lifetime_grtts: f64,
    /// A representative silent this many GRTTs (at least 1 s) leaves the set (ours: the
    /// paper does not say how departed representatives go).
    pub silence_grtts: f64,
    /// Burst allowance of the pacer, in packets.
    pub burst: f64,
}

impl Default for PseudofedConfig {
    fn default() -> PseudofedConfig {
        PseudofedConfig {
            representatives: 4,
            rate_min: 2.0,
            interval_grtts: 4.0,
            alpha: 1.0,
            beta: 3.0,
            delta_rate: 0.05,
            initial_grtt: Duration::from_secs(1),
            grtt_expiry: Duration::from_secs(5),
            wait: 0.5,
            suppression: 1.0,
            min_lifetime_grtts: 4.0,
            silence_grtts: 20.0,
            burst: 2.0,
        }
    }
}

/// The most bytes OPT_PSEUDOFED takes on an ODATA under `cfg`: the 3-byte option header, 12
/// fixed bytes, and 18 per representative (IPv6, the larger address family).
pub fn option_room(cfg: &PseudofedConfig) -> usize {
    3 + 12 + 18 * cfg.representatives.clamp(1, MAX_REPRESENTATIVES)
}

/// Pseudofed-specific counters (beyond [`CcStats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PseudofedStats {
    /// CC reports processed.
    pub ccs: u64,
    /// CI reports processed.
    pub cis: u64,
    /// CIs from representatives without queueing: uncorrelated losses, no rate change.
    pub uncorrelated: u64,
    /// CCs from representatives showing more than β packets queued.
    pub queueing: u64,
    /// Representatives added to a set that was not full.
    pub reps_added: u64,
    /// Representatives ejected (LRU) for a new one.
    pub reps_ejected: u64,
    /// Representatives dropped after [`PseudofedConfig::silence_grtts`] of silence.
    pub reps_expired: u64,
    /// CIs from non-representatives refused because no representative had served its
    /// minimum lifetime.
    pub ejections_refused: u64,
}

#[derive(Debug, Clone, Copy)]
struct Rep {
    addr: IpAddr,
    joined: Instant,
    last_ci: Option<Instant>,
    last_heard: Instant,
}

/// Smallest RTT seen per receiver (bounded table).
const RTT_MIN_ENTRIES: usize = 64;
/// Entries of the GRTT table.
const GRTT_ENTRIES: usize = 32;

/// The Pseudofed sender controller.
#[derive(Debug)]
pub struct Pseudofed {
    cfg: PseudofedConfig,
    rate: f64,
    accel: f64,
    tokens: PacingBucket,
    refilled: Instant,
    rate_updated: Instant,
    slow_start: bool,
    next_step: Instant,
    reps: Vec<Rep>,
    /// The longest recent RTTs.
    grtt_table: GroupRtt,
    /// (receiver, smallest RTT seen in s).
    rtt_min: Vec<(IpAddr, f64)>,
    ci_sqn: Option<u32>,
    last_sent: Option<u32>,
    last_queued: f64,
    events: Events,
    stats: CcStats,
    pf: PseudofedStats,
}

impl Pseudofed {
    /// A sender at `rate_min`, in slow start, with no representatives.
    pub fn new(cfg: PseudofedConfig, now: Instant) -> Pseudofed {
        let mut cfg = cfg;
        cfg.representatives = cfg.representatives.clamp(1, MAX_REPRESENTATIVES);
        cfg.rate_min = cfg.rate_min.max(1e-3);
        let mut p = Pseudofed {
            rate: cfg.rate_min,
            accel: 0.0,
            tokens: PacingBucket::new(),
            refilled: now,
            rate_updated: now,
            slow_start: true,
            next_step: now,
            reps: Vec::new(),
            grtt_table: GroupRtt::new(GRTT_ENTRIES, cfg.grtt_expiry),
            rtt_min: Vec::new(),
            ci_sqn: None,
            last_sent: None,
            last_queued: 0.0,
            events: Events::new(),
            stats: CcStats::default(),
            pf: PseudofedStats::default(),
            cfg,
        };
        p.next_step = now + p.step();
        p
    }

    /// The sending rate, packets per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The acceleration, packets per second per second.
    pub fn acceleration(&self) -> f64 {
        self.accel
    }

    /// True until the first congestion signal.
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    /// The current representatives, oldest first.
    pub fn representatives(&self) -> Vec<IpAddr> {
        self.reps.iter().map(|r| r.addr).collect()
    }

    /// Packets queued by the latest representative report (paper eq. 1).
    pub fn queued(&self) -> f64 {
        self.last_queued
    }

    /// Pseudofed-specific counters.
    pub fn pseudofed_stats(&self) -> PseudofedStats {
        self.pf
    }

    /// The group RTT: the largest unexpired entry of the GRTT table, seconds.
    pub fn grtt(&self, now: Instant) -> f64 {
        self.grtt_table
            .secs(now)
            .unwrap_or(self.cfg.initial_grtt.as_secs_f64())
    }

    fn grtt_latest(&self) -> f64 {
        self.grtt(self.rate_updated.max(self.refilled))
    }

    fn step(&self) -> Duration {
        Duration::from_secs_f64((self.cfg.interval_grtts * self.grtt_latest()).clamp(1e-3, 3600.0))
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.refilled = now;
        if let Some(tokens) = self.tokens.refill(dt, self.rate, self.cfg.burst.max(1.0)) {
            self.events.push(CcEvent::TokensAvailable { tokens });
        }
    }

    /// Advances the rate to `now`: slow-start steps, or the acceleration integrated.
    fn advance(&mut self, now: Instant) {
        self.refill(now);
        let dt = now
            .saturating_duration_since(self.rate_updated)
            .as_secs_f64();
        self.rate_updated = now;
        if self.slow_start {
            while now >= self.next_step {
                self.rate *= 1.5;
                self.next_step += self.step();
            }
        } else {
            self.rate += self.accel * dt;
        }
        self.clamp_rate();
    }

    fn clamp_rate(&mut self) {
        if !self.rate.is_finite() {
            self.rate = self.cfg.rate_min;
        }
        self.rate = self.rate.clamp(self.cfg.rate_min, 1e7);
    }

    fn note_rtt_min(&mut self, addr: IpAddr, rtt: f64) -> f64 {
        if let Some(e) = self.rtt_min.iter_mut().find(|e| e.0 == addr) {
            e.1 = e.1.min(rtt);
            return e.1;
        }
        if self.rtt_min.len() >= RTT_MIN_ENTRIES {
            self.rtt_min.remove(0);
        }
        self.rtt_min.push((addr, rtt));
        rtt
    }

    /// Representative selection (paper §2.2). Returns true when `addr` is (now) one.
    fn select(&mut self, now: Instant, addr: IpAddr, ci: bool) -> bool {
        if let Some(r) = self.reps.iter_mut().find(|r| r.addr == addr) {
            r.last_heard = now;
            if ci {
                r.last_ci = Some(now);
            }
            return true;
        }
        let new = Rep {
            addr,
            joined: now,
            last_ci: ci.then_some(now),
            last_heard: now,
        };
        if self.reps.len() < self.cfg.representatives {
            self.reps.push(new);
            self.pf.reps_added += 1;
            self.events.push(CcEvent::AckerChanged {
                from: None,
                to: addr,
            });
            return true;
        }
        if !ci {
            return false;
        }
        // Full: a CI qualifies; eject the representative whose last CI is oldest (LRU), among
        // those that served the minimum lifetime.
        let life = self.cfg.min_lifetime_grtts * self.grtt(now);
        let victim = self
            .reps
            .iter()
            .enumerate()
            .filter(|(_, r)| now.saturating_duration_since(r.joined).as_secs_f64() >= life)
            .min_by_key(|(_, r)| r.last_ci.unwrap_or(r.joined))
            .map(|(i, _)| i);
        let Some(i) = victim else {
            self.pf.ejections_refused += 1;
            return false;
        };
        let old = self.reps[i].addr;
        self.reps[i] = new;
        self.pf.reps_ejected += 1;
        self.stats.acker_switches += 1;
        self.events.push(CcEvent::AckerChanged {
            from: Some(old),
            to: addr,
        });
        true
    }

    /// One receiver report: a CI (`lost` = first sequence number found lost, if known) or a
    /// CC.
    fn on_feedback(
        &mut self,
        now: Instant,
        fb: &PgmccFeedback,
        sample: RttSample,
        ci: bool,
        lost: Option<u32>,
    ) {
        self.advance(now);
        self.stats.reports += 1;
        let addr = fb.rx;
        let rtt = sample.secs();
        self.grtt_table.note(now, addr, rtt);
        let rtt_min = self.note_rtt_min(addr, rtt);
        if ci {
            self.pf.cis += 1;
            if let Some(s) = lost {
                if self.ci_sqn.is_none_or(|c| sqn::gt(s, c)) {
                    self.ci_sqn = Some(s);
                }
            }
        } else {
            self.pf.ccs += 1;
        }
        if !self.select(now, addr, ci) {
            return;
        }
        self.stats.acks += 1;
        let grtt = self.grtt(now);
        let queued = (rtt - rtt_min).max(0.0) * self.rate;
        self.last_queued = queued;
        let i = self.cfg.interval_grtts;
        let n = self.reps.len().max(1) as f64;
        if ci {
            if queued <= self.cfg.alpha {
                // Loss without measurable queueing: uncorrelated, no rate change.
                self.pf.uncorrelated += 1;
                return;
            }
            if self.slow_start {
                // Slow start ends with the rate halved.
                self.congestion(now);
                return;
            }
            self.congestion(now);
            // Eq. 2: halve the rate over the next I * GRTT.
            self.accel = -self.rate / (i * grtt);
        } else if queued > self.cfg.beta {
            self.pf.queueing += 1;
            if self.slow_start {
                self.congestion(now);
            }
            // Eq. 4: decrease, but less sharply than after a CI.
            self.accel = -i * self.cfg.delta_rate * self.rate / grtt;
        } else if queued < self.cfg.alpha {
            if !self.slow_start {
                // Eq. 3: raise by δ_rate within a GRTT only if every representative agrees.
                self.accel += (self.cfg.delta_rate * self.rate / grtt - self.accel) / n;
            }
        } else if !self.slow_start {
            // α..β packets queued: hold the rate.
            self.accel = 0.0;
        }
    }

    /// A congestion signal: slow start ends with the rate halved.
    fn congestion(&mut self, now: Instant) {
        let _ = now;
        self.stats.loss_events += 1;
        if self.slow_start {
            self.slow_start = false;
            self.rate /= 2.0;
            self.accel = 0.0;
            self.clamp_rate();
        }
        self.events.push(CcEvent::Congestion {
            window: self.rate * self.grtt_latest(),
        });
    }

    fn silence_limit(&self, now: Instant) -> Duration {
        Duration::from_secs_f64((self.cfg.silence_grtts * self.grtt(now)).clamp(1.0, 3600.0))
    }

    fn next_silence_check(&self, now: Instant) -> Option<Instant> {
        let limit = self.silence_limit(now);
        self.reps.iter().map(|r| r.last_heard + limit).min()
    }
}

impl Pseudofed {
    /// The OPT_PSEUDOFED every ODATA carries (at `now`): the representatives, "full", the
    /// latest CI heard, the GRTT and the receivers' timer fractions.
    pub fn advertisement(&self, now: Instant) -> PfOpt {
        let mut flags = 0;
        if self.reps.len() >= self.cfg.representatives {
            flags |= PF_FULL;
        }
        if self.ci_sqn.is_some() {
            flags |= PF_HAVE_CI;
        }
        let mut reps = RepList::new();
        for r in &self.reps {
            // At most 8 by construction (`representatives` is clamped).
            let _ = reps.push(r.addr);
        }
        let pct = |f: f64| (f * 100.0).round().clamp(0.0, 255.0) as u8;
        PfOpt {
            flags,
            grtt_ms: (self.grtt(now) * 1000.0).round().clamp(1.0, 600_000.0) as u32,
            wait_pct: pct(self.cfg.wait),
            supp_pct: pct(self.cfg.suppression),
            ci_sqn: self.ci_sqn.unwrap_or(0),
            reps,
        }
    }
}

impl CongestionControl for Pseudofed {
    fn can_send(&self) -> bool {
        self.tokens.ready()
    }

    fn on_data_sent(&mut self, now: Instant, sqn: u32, opts: &mut Options<'_>) {
        self.advance(now);
        self.tokens.spend();
        self.last_sent = Some(sqn);
        opts.pgmcc_data = Some(PgmccData {
            tstamp: now.as_millis_u32(),
            // Receivers that only know pgmcc see the first representative as their acker
            // and ACK every packet, a usable fallback (docs/pseudofed.md).
            acker: self
                .reps
                .first()
                .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |r| r.addr),
        });
        opts.pseudofed = Some(self.advertisement(now));
    }

    fn on_ack(&mut self, now: Instant, a: &Ack<'_>) {
        let Some((fb, sample)) = a
            .options
            .pgmcc_feedback
            .zip(a.rtt)
            .filter(|f| f.0.rx == a.from)
        else {
            self.stats.acks_ignored += 1;
            return;
        };
        // An ACK without OPT_PSEUDOFED (a pgmcc-only receiver acting as acker): a CC.
        let (ci, lost) = match a.options.pseudofed {
            Some(p) if p.flags & PF_CI != 0 => (true, Some(p.ci_sqn)),
            _ => (false, None),
        };
        self.on_feedback(now, &fb, sample, ci, lost);
    }

    fn on_nak(&mut self, now: Instant, n: &Nak<'_>) {
        // Pseudofed receivers send no report on NAKs; one that does knows only pgmcc: its
        // NAK is a CI (the paper's lost-packet report).
        if let (Some(fb), Some(sample)) = (n.options.pgmcc_feedback, n.rtt) {
            self.on_feedback(now, &fb, sample, true, None);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let mut t = None;
        if let Some(wait) = self.tokens.wait_secs(self.rate).filter(|_| self.rate > 0.0) {
            let wait = Duration::from_secs_f64(wait);
            t = Some(self.refilled + wait);
        }
        let check = self.next_silence_check(self.refilled);
        match (t, check) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        self.advance(now);
        let limit = self.silence_limit(now);
        let before = self.reps.len();
        self.reps
            .retain(|r| now.saturating_duration_since(r.last_heard) < limit);
        let gone = before - self.reps.len();
        if gone > 0 {
            self.pf.reps_expired += gone as u64;
            if self.reps.is_empty() {
                // Nobody reports any more: halve and stop accelerating until someone does.
                self.rate /= 2.0;
                self.accel = self.accel.min(0.0);
                self.clamp_rate();
                self.stats.stalls += 1;
                self.events.push(CcEvent::Stalled { stalls_in_a_row: 1 });
            }
        }
    }

    fn poll_event(&mut self) -> Option<CcEvent> {
        self.events.pop()
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            acker: self.reps.first().map(|r| r.addr),
            acker_report: self.reps.first().map(|_| Operating {
                rtt: (self.grtt_latest() * 1000.0).round() as u32,
                loss: 0,
            }),
            window: None,
            rate: Some(Rate {
                pps: self.rate,
                rtt_secs: self.grtt_latest(),
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
    use crate::cc::drive::{ack as ack_with, nak, send};
    use pgm_wire::AckRepr;

    fn ms(t: u64) -> Instant {
        Instant::from_nanos(t * 1_000_000)
    }

    fn addr(i: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, i])
    }

    /// A report from receiver `i` at `now` whose echo makes its RTT `rtt_ms`.
    fn fb(i: u8, now: u64, rtt_ms: u64) -> PgmccFeedback {
        PgmccFeedback {
            tstamp: (now as u32).wrapping_sub(rtt_ms as u32),
            loss_rate: 0,
            rx: addr(i),
        }
    }

    fn ack_opts(f: PgmccFeedback, ci: Option<u32>) -> Options<'static> {
        Options {
            pgmcc_feedback: Some(f),
            pseudofed: ci.map(|s| PfOpt {
                flags: PF_CI,
                ci_sqn: s,
                ..PfOpt::default()
            }),
            ..Options::default()
        }
    }

    fn ack() -> AckRepr {
        AckRepr {
            rx_max: 0,
            bitmap: 1,
        }
    }

    fn cc(c: &mut Pseudofed, i: u8, now: u64, rtt: u64) {
        ack_with(
            c,
            ms(now),
            addr(i),
            &ack(),
            &ack_opts(fb(i, now, rtt), None),
        );
    }

    fn ci(c: &mut Pseudofed, i: u8, now: u64, rtt: u64, lost: u32) {
        ack_with(
            c,
            ms(now),
            addr(i),
            &ack(),
            &ack_opts(fb(i, now, rtt), Some(lost)),
        );
    }

    fn started(cfg: PseudofedConfig) -> Pseudofed {
        let mut c = Pseudofed::new(cfg, ms(0));
        send(&mut c, ms(0), 0);
        c
    }

    #[test]
    fn slow_start_grows_by_half_every_i_grtt_from_rate_min() {
        let cfg = PseudofedConfig {
            rate_min: 10.0,
            ..PseudofedConfig::default()
        };
        let mut c = started(cfg);
        assert_eq!(c.rate(), 10.0);
        // One CC fixes the GRTT at 100 ms: a step is I * GRTT = 400 ms.
        cc(&mut c, 1, 50, 100);
        // The first step was scheduled with the initial GRTT (1 s -> 4 s); later ones are
        // 400 ms apart.
        c.on_timeout(ms(3999));
        assert_eq!(c.rate(), 10.0);
        c.on_timeout(ms(4000));
        assert!((c.rate() - 15.0).abs() < 1e-9, "{}", c.rate());
        c.on_timeout(ms(4400));
        assert!((c.rate() - 22.5).abs() < 1e-9, "{}", c.rate());
        assert!(c.in_slow_start());
    }

    #[test]
    fn ci_with_queueing_halves_slow_start_then_sets_eq2_acceleration() {
        let mut c = started(PseudofedConfig {
            rate_min: 64.0,
            initial_grtt: Duration::from_millis(100),
            ..PseudofedConfig::default()
        });
        cc(&mut c, 1, 350, 100); // rtt_min 100 ms, GRTT 100 ms
        c.on_timeout(ms(400));
        c.on_timeout(ms(800));
        assert!((c.rate() - 144.0).abs() < 1e-9, "{}", c.rate());
        // A CI with RTT 150 ms: 0.05 s x 144 pkt/s = 7.2 packets queued > alpha.
        ci(&mut c, 1, 850, 150, 7);
        assert!(!c.in_slow_start());
        assert!((c.rate() - 72.0).abs() < 1e-9, "{}", c.rate());
        assert_eq!(c.metrics().stats.loss_events, 1);
        // In congestion avoidance a second CI sets accel = -rate / (I x GRTT) (eq. 2), with
        // the GRTT now 150 ms (the table keeps the longest RTT): -72 / 0.6 = -120.
        ci(&mut c, 1, 900, 150, 9);
        assert!(
            (c.acceleration() + 120.0).abs() < 1e-6,
            "{}",
            c.acceleration()
        );
        // The rate falls with it as packets go out: 72 - 120 x 0.05 = 66, then to the floor.
        send(&mut c, ms(950), 1);
        assert!((c.rate() - 66.0).abs() < 1e-6, "{}", c.rate());
        send(&mut c, ms(1200), 2);
        assert_eq!(c.rate(), 64.0);
    }

    #[test]
    fn ci_without_queueing_is_an_uncorrelated_loss() {
        let mut c = started(PseudofedConfig {
            rate_min: 100.0,
            ..PseudofedConfig::default()
        });
        cc(&mut c, 1, 100, 100);
        // Same RTT as the minimum: no queueing, the loss is uncorrelated.
        ci(&mut c, 1, 200, 100, 3);
        assert!(c.in_slow_start());
        assert_eq!(c.rate(), 100.0);
        assert_eq!(c.pseudofed_stats().uncorrelated, 1);
        assert_eq!(c.metrics().stats.loss_events, 0);
    }

    #[test]
    fn ccs_follow_eq3_and_eq4() {
        let mut c = started(PseudofedConfig {
            rate_min: 64.0,
            initial_grtt: Duration::from_millis(100),
            representatives: 2,
            ..PseudofedConfig::default()
        });
        cc(&mut c, 1, 350, 100);
        cc(&mut c, 2, 350, 100);
        c.on_timeout(ms(400));
        c.on_timeout(ms(800));
        // Leave slow start: a CC with 0.2 s x 144 pkt/s = 28.8 > beta packets queued.
        cc(&mut c, 1, 850, 300);
        assert!(!c.in_slow_start());
        assert!((c.rate() - 72.0).abs() < 1e-9, "{}", c.rate());
        assert_eq!(c.pseudofed_stats().queueing, 1);
        // Eq. 4 with GRTT 300 ms: accel = -I x delta x rate / GRTT = -4 x 0.05 x 72 / 0.3.
        assert!(
            (c.acceleration() + 48.0).abs() < 1e-9,
            "{}",
            c.acceleration()
        );
        // Eq. 3: a CC without queueing moves accel 1/2 (two representatives) of the way to
        // delta x rate / GRTT = 12: -48 + (12 + 48) / 2 = -18.
        cc(&mut c, 2, 850, 100);
        assert!(
            (c.acceleration() + 18.0).abs() < 1e-9,
            "{}",
            c.acceleration()
        );
        // Between alpha and beta (0.03 s x 72 pkt/s = 2.16 packets): hold.
        cc(&mut c, 2, 850, 130);
        assert_eq!(c.acceleration(), 0.0);
    }

    #[test]
    fn rate_never_falls_below_rate_min() {
        let mut c = started(PseudofedConfig {
            rate_min: 5.0,
            initial_grtt: Duration::from_millis(100),
            ..PseudofedConfig::default()
        });
        cc(&mut c, 1, 350, 100);
        c.on_timeout(ms(400));
        assert!((c.rate() - 7.5).abs() < 1e-9);
        ci(&mut c, 1, 450, 2000, 1); // leave slow start: 7.5 halved, floored at 5
        assert_eq!(c.rate(), 5.0);
        ci(&mut c, 1, 500, 2000, 2); // accel negative
        assert!(c.acceleration() < 0.0);
        send(&mut c, ms(60_000), 1);
        assert_eq!(c.rate(), 5.0);
    }

    #[test]
    fn representatives_fill_then_only_cis_eject_the_lru_after_min_lifetime() {
        let cfg = PseudofedConfig {
            representatives: 2,
            rate_min: 10.0,
            ..PseudofedConfig::default()
        };
        let mut c = started(cfg);
        cc(&mut c, 1, 100, 100);
        cc(&mut c, 2, 100, 100);
        assert_eq!(c.representatives(), vec![addr(1), addr(2)]);
        // Full: a CC from 3 does not qualify.
        cc(&mut c, 3, 150, 100);
        assert_eq!(c.representatives(), vec![addr(1), addr(2)]);
        // A CI from 3 before anyone served 4 GRTT (4 x 100 ms): refused.
        ci(&mut c, 3, 300, 100, 5);
        assert_eq!(c.representatives(), vec![addr(1), addr(2)]);
        assert_eq!(c.pseudofed_stats().ejections_refused, 1);
        // 1 reports a CI at 400 ms: 2 is now the least recently congested.
        ci(&mut c, 1, 400, 100, 6);
        ci(&mut c, 3, 600, 100, 8);
        assert_eq!(c.representatives(), vec![addr(1), addr(3)]);
        assert_eq!(c.metrics().stats.acker_switches, 1);
        assert_eq!(c.pseudofed_stats().reps_ejected, 1);
        // The advertisement on data names them, says "full" and the latest CI.
        let p = c.advertisement(ms(700));
        assert_eq!(p.reps.as_slice(), &[addr(1), addr(3)]);
        assert_eq!(p.flags & (PF_FULL | PF_HAVE_CI), PF_FULL | PF_HAVE_CI);
        assert_eq!(p.ci_sqn, 8);
        assert_eq!((p.wait_pct, p.supp_pct, p.grtt_ms), (50, 100, 100));
    }

    #[test]
    fn option_room_covers_the_largest_advertisement() {
        // Eight IPv6 representatives: the largest OPT_PSEUDOFED; the sender's max TSDU leaves
        // room for it so a full ODATA stays within max_tpdu.
        let six = IpAddr::from([0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        let o = Options {
            pseudofed: Some(PfOpt {
                reps: RepList::from_slice(&[six; 8]).unwrap(),
                ..PfOpt::default()
            }),
            ..Options::default()
        };
        let cfg = PseudofedConfig {
            representatives: 8,
            ..PseudofedConfig::default()
        };
        // buffer_len counts OPT_LENGTH's 4 bytes, which DATA_OVERHEAD already holds.
        assert_eq!(o.buffer_len() - 4, option_room(&cfg));
        assert_eq!(option_room(&cfg), 159);
        let cc = super::super::CcConfig::Pseudofed(cfg);
        assert_eq!(cc.data_option_room(), 159);
        assert_eq!(super::super::CcConfig::None.data_option_room(), 0);
    }

    #[test]
    fn grtt_is_the_longest_unexpired_rtt() {
        let mut c = started(PseudofedConfig::default());
        assert_eq!(c.grtt(ms(0)), 1.0, "initial GRTT");
        cc(&mut c, 1, 1000, 300);
        cc(&mut c, 2, 1000, 100);
        assert!((c.grtt(ms(1000)) - 0.3).abs() < 1e-9);
        // A shorter RTT from 1 does not lower its entry before it expires (5 s).
        cc(&mut c, 1, 2000, 50);
        assert!((c.grtt(ms(2000)) - 0.3).abs() < 1e-9);
        // After expiry, 1's entry is gone until refreshed; 2 refreshed at 5.5 s remains.
        cc(&mut c, 2, 5500, 100);
        assert!(
            (c.grtt(ms(6001)) - 0.1).abs() < 1e-9,
            "{}",
            c.grtt(ms(6001))
        );
    }

    #[test]
    fn silent_representatives_leave_and_an_empty_set_halves_the_rate() {
        let mut c = started(PseudofedConfig {
            rate_min: 1.0,
            ..PseudofedConfig::default()
        });
        for t in [100, 1000, 2000, 3000, 4000] {
            cc(&mut c, 1, t, 100);
        }
        // Silence limit: max(20 GRTT, 1 s) = 2 s after the last report (4 s).
        let at = c.poll_timeout().unwrap();
        assert!(at <= ms(6000), "{at:?}");
        c.on_timeout(ms(5999));
        assert_eq!(c.representatives(), vec![addr(1)]);
        let r = c.rate();
        assert!(r > 1.0, "{r}");
        // At 6.1 s one slow-start step (x1.5, due at 6.0 s) and the halving: 0.75 r.
        c.on_timeout(ms(6100));
        assert!(c.representatives().is_empty());
        assert_eq!(c.pseudofed_stats().reps_expired, 1);
        assert_eq!(c.metrics().stats.stalls, 1);
        assert!((c.rate() - 0.75 * r).abs() < 1e-9, "{} vs {r}", c.rate());
    }

    #[test]
    fn paces_at_the_rate_and_rejects_bogus_acks() {
        let mut c = Pseudofed::new(
            PseudofedConfig {
                rate_min: 4.0,
                ..PseudofedConfig::default()
            },
            ms(0),
        );
        assert!(c.can_send());
        send(&mut c, ms(0), 0);
        assert!(!c.can_send());
        assert_eq!(c.poll_timeout(), Some(ms(250)));
        c.on_timeout(ms(250));
        assert!(c.can_send());
        // Feedback naming someone else than the sender of the ACK is ignored.
        ack_with(
            &mut c,
            ms(300),
            addr(2),
            &ack(),
            &ack_opts(fb(1, 300, 10), None),
        );
        assert_eq!(c.metrics().stats.acks_ignored, 1);
        assert!(c.representatives().is_empty());
        // A NAK report (a pgmcc-only receiver) is a CI.
        nak(&mut c, ms(300), &[], Some(&fb(3, 300, 10)));
        assert_eq!(c.pseudofed_stats().cis, 1);
        assert_eq!(c.representatives(), vec![addr(3)]);
    }
}
