//! Token-bucket rate limiter: RFC 3208's TXW_MAX_RTE, the ceiling on the session's total
//! transmit rate (ODATA, RDATA and control packets alike).

use crate::time::{Duration, Instant};

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// A token bucket in bytes. Tokens are kept in byte-nanoseconds so integer arithmetic is
/// exact at any rate.
#[derive(Debug, Clone)]
pub(crate) struct RateLimiter {
    rate: u64,
    burst: u64,
    /// Tokens in byte·ns (bytes × 1e9); may go negative by charged control traffic.
    tokens: i128,
    last: Instant,
}

impl RateLimiter {
    /// A full bucket of `burst` bytes refilled at `rate` bytes per second.
    pub(crate) fn new(rate: u64, burst: u64, now: Instant) -> RateLimiter {
        RateLimiter {
            rate: rate.max(1),
            burst,
            tokens: i128::from(burst) * NANOS_PER_SEC as i128,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = u128::from(now.saturating_duration_since(self.last).as_nanos() as u64);
        self.last = self.last.max(now);
        let cap = i128::from(self.burst) * NANOS_PER_SEC as i128;
        let add = (dt * u128::from(self.rate)).min(cap as u128 * 2) as i128;
        self.tokens = (self.tokens + add).min(cap);
    }

    /// Changes the refill rate and the burst from `now` on (tokens earned so far at the old
    /// rate are kept, up to the new burst).
    pub(crate) fn set_rate(&mut self, now: Instant, rate: u64, burst: u64) {
        self.refill(now);
        self.rate = rate.max(1);
        self.burst = burst;
        self.tokens = self.tokens.min(i128::from(burst) * NANOS_PER_SEC as i128);
    }

    /// True when `bytes` may be sent now.
    pub(crate) fn allows(&mut self, now: Instant, bytes: usize) -> bool {
        self.refill(now);
        self.tokens >= bytes as i128 * NANOS_PER_SEC as i128
    }

    /// Whole bytes that may be sent now (0 while the bucket is empty or negative).
    pub(crate) fn available(&mut self, now: Instant) -> u64 {
        self.refill(now);
        u64::try_from(self.tokens / NANOS_PER_SEC as i128).unwrap_or(0)
    }

    /// Spends `bytes` (control packets may drive the bucket negative).
    pub(crate) fn charge(&mut self, now: Instant, bytes: usize) {
        self.refill(now);
        self.tokens -= bytes as i128 * NANOS_PER_SEC as i128;
    }

    /// When `bytes` will be allowed.
    pub(crate) fn ready_at(&self, bytes: usize) -> Instant {
        let need = bytes as i128 * NANOS_PER_SEC as i128 - self.tokens;
        if need <= 0 {
            return self.last;
        }
        let ns = (need as u128).div_ceil(u128::from(self.rate));
        self.last + Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paces_at_rate() {
        let t0 = Instant::ZERO;
        let mut r = RateLimiter::new(1000, 1000, t0);
        assert!(r.allows(t0, 1000));
        r.charge(t0, 1000);
        assert!(!r.allows(t0, 500));
        assert_eq!(r.ready_at(500), t0 + Duration::from_millis(500));
        assert!(r.allows(t0 + Duration::from_millis(500), 500));
        // The bucket never holds more than the burst.
        assert!(!r.allows(t0 + Duration::from_secs(100), 1001));
    }
}
