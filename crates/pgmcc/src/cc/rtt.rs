//! Round-trip time from a report's timestamp echo (draft §2.5.1): the source stamps each
//! ODATA's OPT_PGMCC_DATA with its clock in milliseconds; a receiver's OPT_PGMCC_FEEDBACK
//! echoes the latest stamp plus the time it held it. The [`Sender`](crate::Sender) measures
//! every report once, here, and hands the sample to the controller with the ACK or NAK.
//!
//! Smoothing stays with each controller, because each smooths a different thing by its own
//! paper's rule: pgmcc an RFC 6298 estimator over the acker's ACKs ([`SmoothedRtt`], the
//! fairness benchmark's adaptive timeout; the simulator's TCP uses the same one), TFMCC the
//! CLR's RTT with gain 1/4, Pseudofed the largest recent RTT over all receivers (its GRTT),
//! the low-weight controllers the worst receiver's RTT with gain 1/8.

use crate::time::{Duration, Instant};

/// Largest RTT a sample is taken to be, in milliseconds (10 minutes): anything larger is a
/// stale or forged echo.
pub const MAX_RTT_MS: u32 = 600_000;

/// One RTT measurement: `now` against an echoed timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttSample {
    echo: u32,
    ms: u32,
}

impl RttSample {
    /// The sample of echo `echo` (milliseconds of the source's clock) arriving at `now`.
    pub fn new(now: Instant, echo: u32) -> RttSample {
        RttSample {
            echo,
            ms: now.as_millis_u32().wrapping_sub(echo),
        }
    }

    /// The echoed timestamp.
    pub fn echo(&self) -> u32 {
        self.echo
    }

    /// This sample arriving at `now`, its echo taken as `floor` if it is older (an RTT no
    /// longer than since `floor`, in milliseconds of the source's clock; wrapping).
    pub fn no_older_than(self, now: Instant, floor: u32) -> RttSample {
        if (floor.wrapping_sub(self.echo) as i32) > 0 {
            RttSample::new(now, floor)
        } else {
            self
        }
    }

    /// Milliseconds since the echoed timestamp, unbounded (wrapping arithmetic: an echo from
    /// the future reads as a huge value).
    pub fn raw_millis(&self) -> u32 {
        self.ms
    }

    /// Milliseconds, in `1..=MAX_RTT_MS`.
    pub fn millis(&self) -> u32 {
        self.ms.clamp(1, MAX_RTT_MS)
    }

    /// Seconds, in `0.001..=600`.
    pub fn secs(&self) -> f64 {
        f64::from(self.millis()) / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_bounded_whatever_the_echo() {
        let now = Instant::from_nanos(5_000_000_000);
        assert_eq!(RttSample::new(now, 4_900).millis(), 100);
        assert_eq!(RttSample::new(now, 5_000).millis(), 1);
        assert_eq!(RttSample::new(now, 6_000).millis(), MAX_RTT_MS);
        assert_eq!(RttSample::new(now, 6_000).raw_millis(), u32::MAX - 999);
        assert_eq!(RttSample::new(now, 4_900).secs(), 0.1);
        // An echo older than a floor is taken as the floor; a newer one stays.
        assert_eq!(
            RttSample::new(now, 3_000)
                .no_older_than(now, 4_900)
                .millis(),
            100
        );
        assert_eq!(
            RttSample::new(now, 4_950)
                .no_older_than(now, 4_900)
                .millis(),
            50
        );
    }
}

/// The smoothed round trip of RFC 6298 §2.2-2.3: SRTT and RTTVAR from samples, and the
/// timeout `SRTT + max(G, 4·RTTVAR)` before bounds and backoff, which each user applies by
/// its own rule (pgmcc's stall timeout, the simulator's TCP).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SmoothedRtt {
    srtt: Option<Duration>,
    rttvar: Duration,
}

impl SmoothedRtt {
    /// No sample yet.
    pub fn new() -> SmoothedRtt {
        SmoothedRtt::default()
    }

    /// Takes RTT sample `r`: the first sets SRTT = R, RTTVAR = R/2; later ones
    /// RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|, then SRTT = 7/8 SRTT + 1/8 R.
    pub fn sample(&mut self, r: Duration) {
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
    }

    /// SRTT, once there is a sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// `SRTT + max(G, 4·RTTVAR)` for clock granularity `granularity`, once there is a
    /// sample.
    pub fn rto(&self, granularity: Duration) -> Option<Duration> {
        self.srtt.map(|s| s + granularity.max(self.rttvar * 4))
    }
}

#[cfg(test)]
mod smoothed_tests {
    use super::*;

    #[test]
    fn follows_rfc_6298() {
        let ms = Duration::from_millis;
        let mut e = SmoothedRtt::new();
        assert_eq!(e.rto(ms(1)), None);
        e.sample(ms(100));
        assert_eq!((e.srtt(), e.rto(ms(1))), (Some(ms(100)), Some(ms(300))));
        e.sample(ms(200));
        // RTTVAR = 3/4 * 50 + 1/4 * 100 = 62.5; SRTT = 7/8 * 100 + 1/8 * 200 = 112.5.
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rto(ms(1)), Some(Duration::from_micros(362_500)));
        // The granularity is a floor on the variance term.
        assert_eq!(e.rto(ms(500)), Some(Duration::from_micros(612_500)));
    }
}
