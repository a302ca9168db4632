//! The RFC 6298 retransmission timer: SRTT and RTTVAR from RTT samples, the RTO with its
//! bounds, and exponential backoff. One segment is timed per round trip, as in BSD and
//! ns-2; a retransmission abandons the measurement (Karn's rule, RFC 6298 §3), so a hole
//! never inflates a sample. With TCP timestamps (RFC 7323 §4) the sender instead takes a
//! sample from the echoed send time on every ACK of new data ([`RtoEstimator::on_echo`]),
//! retransmitted data included, and does not time segments.

use pgmcc::cc::rtt::SmoothedRtt;
use pgmcc::{Duration, Instant};

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
}

impl RtoEstimator {
    /// No sample yet: the RTO is `initial` (RFC 6298 §2.1), within `min..=max`.
    pub(super) fn new(
        initial: Duration,
        min: Duration,
        max: Duration,
        granularity: Duration,
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

    /// A cumulative ACK up to `ack` at `now`: a sample when it covers the timed segment.
    pub(super) fn on_ack(&mut self, ack: u64, now: Instant) {
        if let Some((_, sent)) = self.timed.filter(|&(end, _)| ack >= end) {
            self.timed = None;
            self.sample(now - sent);
        }
    }

    /// An ACK of new data at `now` echoing the send time `tsecr` (RFC 7323 §4.1): a sample
    /// `now - tsecr`, valid even when the data acknowledged was retransmitted, since the
    /// echo names the transmission that reached the sink.
    pub(super) fn on_echo(&mut self, now: Instant, tsecr: Instant) {
        self.sample(now.saturating_duration_since(tsecr));
    }

    /// A retransmission timeout: the RTO doubles (up to 2^16 times).
    pub(super) fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
    }

    /// RFC 6298 §2.2-2.3: `SRTT`, `RTTVAR` and `RTO = SRTT + max(G, 4·RTTVAR)`.
    fn sample(&mut self, r: Duration) {
        self.samples += 1;
        self.est.sample(r);
        let rto = self.est.rto(self.granularity).unwrap_or(r);
        self.base = rto.clamp(self.min, self.max.max(self.min));
        // A valid sample ends the backoff (RFC 6298 §5.7).
        self.backoff = 0;
    }
}
