//! Time as the core sees it: an opaque, monotonic [`Instant`] handed in by the driver.
//!
//! The core never reads a clock. Real drivers map their monotonic clock onto nanoseconds
//! since an arbitrary epoch; the simulator uses virtual time. The core cannot tell which.
//! Time must never go backwards between calls.

use core::ops::{Add, AddAssign, Sub};
pub use core::time::Duration;

/// A point in time, in nanoseconds since an epoch the driver chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);

    /// An instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Instant {
        Instant(nanos)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Milliseconds since the epoch, truncated to 32 bits: the pgmcc timestamp unit
    /// (OPT_PGMCC_DATA / OPT_PGMCC_FEEDBACK carry milliseconds, as OpenPGM does).
    pub const fn as_millis_u32(self) -> u32 {
        (self.0 / 1_000_000) as u32
    }

    /// Time elapsed since `earlier`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(nanos(d)))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_nanos(5);
        assert_eq!(t - Instant::from_nanos(9), Duration::ZERO);
        assert_eq!((t + Duration::from_millis(3)).as_nanos(), 3_000_005);
        assert_eq!(
            Instant::from_nanos(u64::MAX) + Duration::from_secs(1),
            Instant::from_nanos(u64::MAX)
        );
        assert_eq!(Instant::from_nanos(2_500_000_000).as_millis_u32(), 2500);
    }
}
