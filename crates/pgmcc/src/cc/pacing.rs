//! The pacing bucket of the rate-based controllers (TFMCC, Pseudofed, the low-weight
//! scheme): tokens in packets, earned at the controller's rate up to a burst, one spent per
//! data packet. (The session's byte-exact rate limit and repair budget are
//! `sender/rate.rs`'s, in bytes.)

/// Packets a rate-based controller may send now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PacingBucket {
    tokens: f64,
}

impl PacingBucket {
    /// One token: the first packet may go at once.
    pub(crate) fn new() -> PacingBucket {
        PacingBucket { tokens: 1.0 }
    }

    /// Earns `dt` seconds at `rate` packets per second, up to `burst` tokens. Returns the
    /// tokens when a whole one became available (there was none before).
    pub(crate) fn refill(&mut self, dt: f64, rate: f64, burst: f64) -> Option<u32> {
        let had = self.ready();
        self.tokens = (self.tokens + dt * rate).min(burst);
        (!had && self.ready()).then_some(self.tokens as u32)
    }

    /// A whole token is there.
    pub(crate) fn ready(&self) -> bool {
        self.tokens >= 1.0
    }

    /// A data packet left.
    pub(crate) fn spend(&mut self) {
        self.tokens -= 1.0;
    }

    /// A packet paid for after it left (a repair): the debt goes down to `-cap` at most.
    pub(crate) fn owe(&mut self, cap: f64) {
        self.tokens = (self.tokens - 1.0).max(-cap);
    }

    /// Seconds until a whole token at `rate` (at most an hour), when none is there.
    pub(crate) fn wait_secs(&self, rate: f64) -> Option<f64> {
        (!self.ready()).then(|| ((1.0 - self.tokens) / rate).min(3600.0))
    }

    /// Whole tokens, for the metrics.
    pub(crate) fn whole(&self) -> u32 {
        self.tokens.max(0.0) as u32
    }

    /// Below `level` tokens.
    pub(crate) fn below(&self, level: f64) -> bool {
        self.tokens < level
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earns_at_the_rate_up_to_the_burst_and_says_when_a_token_arrives() {
        let mut b = PacingBucket::new();
        assert!(b.ready());
        b.spend();
        assert_eq!(b.wait_secs(10.0), Some(0.1));
        assert_eq!(b.refill(0.05, 10.0, 4.0), None);
        assert_eq!(b.refill(0.05, 10.0, 4.0), Some(1));
        assert_eq!(b.refill(10.0, 10.0, 4.0), None);
        assert_eq!(b.whole(), 4);
        for _ in 0..4 {
            b.spend();
        }
        b.owe(0.5);
        assert_eq!(b.whole(), 0);
        assert!(b.below(0.0));
        assert_eq!(b.wait_secs(1.0), Some(1.5));
    }
}
