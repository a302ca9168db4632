//! The RFC 6298 retransmission timer: SRTT and RTTVAR from RTT samples, the RTO with its
//! bounds, and exponential backoff. One segment is timed per round trip, as in BSD and
//! ns-2; a retransmission abandons the measurement (Karn's rule, RFC 6298 §3), so a hole
//! never inflates a sample. With TCP timestamps (RFC 7323 §4) the sender instead takes a
//! sample from the echoed send time on every ACK of new data ([`RtoEstimator::on_echo`]),
//! retransmitted data included, and does not time segments.
//!
//! [`RtoRule::Linux`] computes the timeout as Linux's `tcp_rtt_estimator` does: the
//! variance term added to SRTT is at least the minimum RTO, and it falls towards the
//! largest deviation seen in the last round trip by a quarter per round trip, so per-ACK
//! samples do not shrink it to nothing (RFC 6298's gains assume one sample per round trip;
//! RFC 7323 Appendix G).

use pgmcc::cc::rtt::SmoothedRtt;
use pgmcc::{Duration, Instant};

/// How the retransmission timeout follows the RTT samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RtoRule {
    /// RFC 6298: `RTO = SRTT + max(G, 4·RTTVAR)`, at least the minimum RTO.
    #[default]
    Rfc6298,
    /// Linux's: `RTO = SRTT + RTTVAR'`, where `RTTVAR'` (four mean deviations) is at least
    /// the minimum RTO and decays towards the largest deviation of the last round trip by a
    /// quarter per round trip; the first sample `m` gives `m + max(2m, min)`.
    Linux,
}

/// Linux's variance state ([`RtoRule::Linux`]), in nanoseconds: `mdev`, `mdev_max` and
/// `rttvar` are four mean deviations, as Linux keeps them.
#[derive(Debug, Clone, Copy)]
struct LinuxVar {
    srtt: i64,
    mdev: i64,
    mdev_max: i64,
    rttvar: i64,
    /// The round trip ends when the cumulative ACK passes this byte (`snd_nxt` when the
    /// last one ended).
    rtt_seq: u64,
}

/// RTT estimate and retransmission timeout of one sender.
#[derive(Debug, Clone)]
pub(super) struct RtoEstimator {
    /// SRTT and RTTVAR (the core's RFC 6298 estimator, as pgmcc's acker timer uses).
    est: SmoothedRtt,
    /// RTO before backoff.
    base: Duration,
    backoff: u32,
    /// Lower bound on the RTO (RFC 6298 §2.4).
    min: Duration,
    /// Upper bound on the RTO, backoff included.
    max: Duration,
    /// Clock granularity `G` in `RTO = SRTT + max(G, 4·RTTVAR)`.
    granularity: Duration,
    /// The segment being timed: (its end, when it was sent). Started only on new data
    /// outside recovery.
    timed: Option<(u64, Instant)>,
    samples: u64,
    rule: RtoRule,
    linux: Option<LinuxVar>,
}

impl RtoEstimator {
    /// No sample yet: the RTO is `initial` (RFC 6298 §2.1), within `min..=max`.
    pub(super) fn new(
        initial: Duration,
        min: Duration,
        max: Duration,
        granularity: Duration,
        rule: RtoRule,
    ) -> RtoEstimator {
        RtoEstimator {
            est: SmoothedRtt::new(),
            base: initial.clamp(min, max.max(min)),
            backoff: 0,
            min,
            max,
            granularity,
            timed: None,
            samples: 0,
            rule,
            linux: None,
        }
    }

    /// Smoothed RTT, once there is a sample.
    pub(super) fn srtt(&self) -> Option<Duration> {
        self.est.srtt()
    }

    /// RTT samples taken.
    pub(super) fn samples(&self) -> u64 {
        self.samples
    }

    /// Current retransmission timeout, backoff included.
    pub(super) fn rto(&self) -> Duration {
        let factor = 1u32.checked_shl(self.backoff).unwrap_or(u32::MAX);
        self.base
            .checked_mul(factor)
            .unwrap_or(self.max)
            .min(self.max)
    }

    /// A segment ending at `end` left at `now`: a retransmission (`again`) abandons the
    /// timed segment (Karn's rule); new data outside recovery starts timing if nothing is
    /// timed.
    pub(super) fn on_transmit(&mut self, end: u64, now: Instant, again: bool, in_recovery: bool) {
        if again {
            self.timed = None;
        } else if self.timed.is_none() && !in_recovery {
            self.timed = Some((end, now));
        }
    }

    /// A cumulative ACK up to `ack` at `now` (`snd_nxt` the next byte to send): a sample
    /// when it covers the timed segment.
    pub(super) fn on_ack(&mut self, ack: u64, snd_nxt: u64, now: Instant) {
        if let Some((_, sent)) = self.timed.filter(|&(end, _)| ack >= end) {
            self.timed = None;
            self.sample(now - sent, ack, snd_nxt);
        }
    }

    /// An ACK of new data up to `ack` at `now` echoing the send time `tsecr` (RFC 7323
    /// §4.1): a sample `now - tsecr`, valid even when the data acknowledged was
    /// retransmitted, since the echo names the transmission that reached the sink.
    pub(super) fn on_echo(&mut self, now: Instant, tsecr: Instant, ack: u64, snd_nxt: u64) {
        self.sample(now.saturating_duration_since(tsecr), ack, snd_nxt);
    }

    /// A retransmission timeout: the RTO doubles (up to 2^16 times).
    pub(super) fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
    }

    /// A sample `r` taken at an ACK up to `ack` (`snd_nxt` the next byte to send): RFC
    /// 6298 §2.2-2.3 (`SRTT`, `RTTVAR` and `RTO = SRTT + max(G, 4·RTTVAR)`) or Linux's rule.
    fn sample(&mut self, r: Duration, ack: u64, snd_nxt: u64) {
        self.samples += 1;
        self.est.sample(r);
        self.base = match self.rule {
            RtoRule::Rfc6298 => {
                let rto = self.est.rto(self.granularity).unwrap_or(r);
                rto.clamp(self.min, self.max.max(self.min))
            }
            RtoRule::Linux => self.linux_sample(r, ack, snd_nxt),
        };
        // A valid sample ends the backoff (RFC 6298 §5.7).
        self.backoff = 0;
    }

    /// Linux's `tcp_rtt_estimator` and `__tcp_set_rto` on sample `r`: the new base RTO.
    fn linux_sample(&mut self, r: Duration, ack: u64, snd_nxt: u64) -> Duration {
        let ns = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        let (m, floor) = (ns(r), ns(self.min));
        let v = match self.linux {
            None => {
                let rttvar = (2 * m).max(floor);
                LinuxVar {
                    srtt: m,
                    mdev: 2 * m,
                    mdev_max: rttvar,
                    rttvar,
                    rtt_seq: snd_nxt,
                }
            }
            Some(mut v) => {
                let err = m - v.srtt;
                v.srtt += err / 8;
                // The deviation grows at once and shrinks slowly; a sample below SRTT moves
                // it with an eighth of the gain (Linux's variant of an Eifel finding).
                let mut e = err.abs() - v.mdev / 4;
                if err < 0 && e > 0 {
                    e /= 8;
                }
                v.mdev += e;
                if v.mdev > v.mdev_max {
                    v.mdev_max = v.mdev;
                    v.rttvar = v.rttvar.max(v.mdev_max);
                }
                if ack > v.rtt_seq {
                    // A round trip ended: RTTVAR falls a quarter of the way to this round
                    // trip's largest deviation, which restarts from the minimum RTO.
                    if v.mdev_max < v.rttvar {
                        v.rttvar -= (v.rttvar - v.mdev_max) / 4;
                    }
                    v.rtt_seq = snd_nxt;
                    v.mdev_max = floor;
                }
                v
            }
        };
        self.linux = Some(v);
        let rto = u64::try_from((v.srtt + v.rttvar).max(0)).unwrap_or(0);
        Duration::from_nanos(rto).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Per-ACK samples of a steady 300 ms path, `n` round trips of 10 ACKs each, under
    /// `rule` with a 200 ms minimum RTO: the RTO afterwards.
    fn steady(rule: RtoRule, n: u64) -> Duration {
        let mut e = RtoEstimator::new(ms(1000), ms(200), ms(60_000), ms(1), rule);
        let mut seq = 0;
        for _ in 0..n {
            for _ in 0..10 {
                seq += 1460;
                e.sample(ms(300), seq, seq + 10 * 1460);
            }
        }
        e.rto()
    }

    #[test]
    fn linux_keeps_the_minimum_rto_above_srtt_where_rfc6298_collapses_to_srtt() {
        // RFC 6298's RTTVAR decays to nothing under identical per-ACK samples: the RTO ends
        // 1 ms (the clock granularity) above SRTT, and a little queueing delay then times
        // out. Linux's variance term stays at the minimum RTO: SRTT + 200 ms.
        assert_eq!(steady(RtoRule::Rfc6298, 50), ms(301));
        let linux = steady(RtoRule::Linux, 50);
        assert!((ms(500)..ms(501)).contains(&linux), "{linux:?}");
        // The first sample m gives m + max(2m, min), as Linux's "rto = 3*rtt".
        assert_eq!(
            steady(RtoRule::Linux, 0),
            ms(1000),
            "no sample: the initial RTO"
        );
        let mut e = RtoEstimator::new(ms(1000), ms(200), ms(60_000), ms(1), RtoRule::Linux);
        e.sample(ms(300), 1460, 14600);
        assert_eq!(e.rto(), ms(900));
        let mut e = RtoEstimator::new(ms(1000), ms(200), ms(60_000), ms(1), RtoRule::Linux);
        e.sample(ms(20), 1460, 14600);
        assert_eq!(e.rto(), ms(220));
    }

    #[test]
    fn linux_lets_a_larger_deviation_in_at_once_and_out_a_quarter_per_round_trip() {
        let mut e = RtoEstimator::new(ms(1000), ms(200), ms(60_000), ms(1), RtoRule::Linux);
        let mut seq = 0;
        let mut round = |e: &mut RtoEstimator, r: u64| {
            for _ in 0..10 {
                seq += 1460;
                e.sample(ms(r), seq, seq + 10 * 1460);
            }
        };
        for _ in 0..50 {
            round(&mut e, 300);
        }
        round(&mut e, 700); // the queue grows: the deviation jumps
        let after_jump = e.rto();
        assert!(after_jump >= ms(900), "{after_jump:?}");
        for _ in 0..3 {
            round(&mut e, 300);
        }
        let later = e.rto();
        assert!(later < after_jump && later > ms(500), "{later:?}");
    }
}
