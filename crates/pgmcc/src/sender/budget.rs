//! The repair budget and the per-source NAK limit (`docs/core.md`, "Repair budget"): NCFs
//! and repairs together send at most a share of the session's rate, and one address's NAKs
//! may queue at most a share of it.

use std::net::IpAddr;

use pgm_wire::Tsi;

use super::rate::RateLimiter;
use crate::cc::Metrics;
use crate::time::{Duration, Instant};

/// The RTT the repair budget assumes for a window-based controller before any is measured.
const BUDGET_RTT_DEFAULT: Duration = Duration::from_secs(1);

/// Buckets of the per-source NAK limit ([`SenderConfig::nak_source_share`]): NAK sources hash
/// into these, so its memory is bounded whatever the number of addresses.
///
/// [`SenderConfig::nak_source_share`]: super::SenderConfig::nak_source_share
pub const NAK_SOURCE_BUCKETS: usize = 256;

/// The per-source NAK limit's burst, at least: one full NAK list and its first sequence
/// number, so one receiver's burst loss is asked for at once.
const NAK_SOURCE_MIN_BURST: f64 = 64.0;

/// The per-source NAK limit's bucket for `from` (an FNV-1a hash of the address, keyed by the
/// session's TSI so that sessions spread the same addresses differently).
fn nak_source_bucket(from: IpAddr, tsi: &Tsi) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    };
    tsi.gsi.0.iter().for_each(|b| eat(*b));
    tsi.sport.to_be_bytes().iter().for_each(|b| eat(*b));
    match from {
        IpAddr::V4(a) => a.octets().iter().for_each(|b| eat(*b)),
        IpAddr::V6(a) => a.octets().iter().for_each(|b| eat(*b)),
    }
    (h % NAK_SOURCE_BUCKETS as u64) as usize
}

/// What the budget's rates follow.
pub(super) struct Inputs {
    /// The repair budget's share of the session rate (`SenderConfig::repair_budget`).
    pub repair_share: Option<f64>,
    /// One address's share (`SenderConfig::nak_source_share`).
    pub source_share: Option<f64>,
    /// The controller's metrics, when one runs.
    pub metrics: Option<Metrics>,
    /// The group RTT, once measured.
    pub grtt: Option<Duration>,
    /// The largest packet.
    pub max_tpdu: usize,
}

/// The repair budget's bucket and the per-source NAK limit's buckets.
#[derive(Debug)]
pub(super) struct RepairBudget {
    /// NCF and RDATA bytes, when a controller runs.
    bucket: Option<RateLimiter>,
    /// The last repair or NCF waited for `bucket` (counts each wait once).
    blocked: bool,
    /// The per-source NAK limit's buckets ([`NAK_SOURCE_BUCKETS`], made on first use), and
    /// their rate and burst in bytes, set with the repair budget's.
    sources: Vec<Option<RateLimiter>>,
    source_rate: Option<(u64, u64)>,
    /// ODATA bytes sent since the instant: the measured data rate's current interval.
    odata_meter: (Instant, u64),
    /// ODATA bytes per second over the last full interval (one group RTT, at least 100 ms).
    odata_rate: f64,
}

impl RepairBudget {
    pub(super) fn new(now: Instant) -> RepairBudget {
        RepairBudget {
            bucket: None,
            blocked: false,
            sources: Vec::new(),
            source_rate: None,
            odata_meter: (now, 0),
            odata_rate: 0.0,
        }
    }

    /// Sets the rates from the controller's current rate and the group RTT.
    pub(super) fn refresh(&mut self, now: Instant, s: &Inputs) {
        self.source_rate = None;
        let (Some(share), Some(m)) = (s.repair_share, s.metrics.as_ref()) else {
            self.bucket = None;
            return;
        };
        let rtt = s.grtt.unwrap_or(BUDGET_RTT_DEFAULT).as_secs_f64().max(1e-3);
        let pps = match (m.rate, m.window) {
            (Some(r), _) => r.pps,
            (None, Some(w)) => w / rtt,
            (None, None) => {
                self.bucket = None;
                return;
            }
        };
        // The window per group RTT understates a window-based controller's rate when the
        // acker is nearer than the farthest receiver: what it actually let out counts too.
        let (since, bytes) = self.odata_meter;
        let elapsed = now.saturating_duration_since(since).as_secs_f64();
        if elapsed >= rtt.max(0.1) {
            self.odata_rate = bytes as f64 / elapsed;
            self.odata_meter = (now, 0);
        }
        let tpdu = s.max_tpdu as f64;
        let session = (pps * tpdu).max(self.odata_rate);
        let rate = (share.max(0.0) * session).clamp(1.0, 1e12);
        // Repairs leave at most a congestion window at once: a group RTT's worth at twice the
        // session's rate is many of the acker's windows when the farthest receiver is far, and
        // such a burst overflows the very queue that lost the packets.
        let window = m.window.map_or(f64::INFINITY, |w| w.max(1.0) * tpdu);
        let burst = (rate * rtt).min(window).max(4.0 * tpdu).min(1e12) as u64;
        self.source_rate = s.source_share.map(|f| {
            let r = (f.max(0.0) * session).clamp(1.0, 1e12);
            (
                r as u64,
                (r * rtt).max(NAK_SOURCE_MIN_BURST * tpdu).min(1e12) as u64,
            )
        });
        match &mut self.bucket {
            Some(b) => b.set_rate(now, rate as u64, burst),
            None => self.bucket = Some(RateLimiter::new(rate as u64, burst, now)),
        }
    }

    /// How many of `wanted` repairs of `len` bytes each `from`'s share lets it queue now,
    /// charged: all of them, or as many as the share holds. A request larger than what the
    /// share holds is granted in part rather than refused, or a transmission group that
    /// needs most of the share's burst in one parity request would wait forever behind the
    /// same address's small ones.
    pub(super) fn source_grants(
        &mut self,
        now: Instant,
        from: IpAddr,
        tsi: &Tsi,
        wanted: usize,
        len: usize,
    ) -> usize {
        let Some((rate, burst)) = self.source_rate else {
            return wanted;
        };
        if self.sources.is_empty() {
            self.sources = vec![None; NAK_SOURCE_BUCKETS];
        }
        let Some(slot) = self.sources.get_mut(nak_source_bucket(from, tsi)) else {
            return wanted;
        };
        let b = slot.get_or_insert_with(|| RateLimiter::new(rate, burst, now));
        b.set_rate(now, rate, burst);
        let fits = usize::try_from(b.available(now) / len.max(1) as u64).unwrap_or(usize::MAX);
        let granted = wanted.min(fits);
        b.charge(now, granted.saturating_mul(len));
        granted
    }

    /// Whether the budget lets `len` bytes of NCF or repair go now, and whether this is a
    /// new wait (the last one did go).
    pub(super) fn allows(&mut self, now: Instant, len: usize) -> (bool, bool) {
        let ok = self.bucket.as_mut().is_none_or(|b| b.allows(now, len));
        let new_wait = !ok && !self.blocked;
        self.blocked = !ok;
        (ok, new_wait)
    }

    /// When the budget lets `len` bytes go (`Instant::ZERO`: now).
    pub(super) fn ready_at(&self, len: usize) -> Instant {
        self.bucket
            .as_ref()
            .map_or(Instant::ZERO, |b| b.ready_at(len))
    }

    /// An NCF or repair of `len` bytes left.
    pub(super) fn charge(&mut self, now: Instant, len: usize) {
        if let Some(b) = &mut self.bucket {
            b.charge(now, len);
        }
    }

    /// An ODATA of `len` bytes left (the measured data rate).
    pub(super) fn odata_sent(&mut self, len: usize) {
        self.odata_meter.1 += len as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcStats;

    use super::super::test_tsi as tsi;

    /// A budget whose per-source share is 10 packets of 1,000 bytes a second, with a burst
    /// of [`NAK_SOURCE_MIN_BURST`] packets.
    fn budget(now: Instant) -> RepairBudget {
        let mut b = RepairBudget::new(now);
        let metrics = Metrics {
            acker: None,
            acker_report: None,
            window: Some(10.0),
            rate: None,
            srtt_secs: None,
            tokens: 0,
            stats: CcStats::default(),
        };
        b.refresh(
            now,
            &Inputs {
                repair_share: Some(2.0),
                source_share: Some(1.0),
                metrics: Some(metrics),
                grtt: Some(Duration::from_secs(1)),
                max_tpdu: 1000,
            },
        );
        b
    }

    #[test]
    fn a_request_larger_than_the_share_holds_is_granted_in_part() {
        let t0 = Instant::ZERO;
        let mut b = budget(t0);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        // A full share: 40 of a group's parity, then the 24 left of a second request of 40.
        assert_eq!(b.source_grants(t0, a, &tsi(), 40, 1000), 40);
        assert_eq!(b.source_grants(t0, a, &tsi(), 40, 1000), 24);
        assert_eq!(b.source_grants(t0, a, &tsi(), 1, 1000), 0);
        // Refilled at the share's rate: half a second later, 5 more.
        let later = t0 + Duration::from_millis(500);
        assert_eq!(b.source_grants(later, a, &tsi(), 60, 1000), 5);
        // Another address has its own share.
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(b.source_grants(later, other, &tsi(), 60, 1000), 60);
    }

    /// Repairs in a burst of at most the congestion window (4 packets at least), however far
    /// the farthest receiver: 2 packets a second for a 10 s group RTT would otherwise be 20.
    #[test]
    fn repairs_leave_at_most_a_window_at_once() {
        let t0 = Instant::ZERO;
        let burst_of = |window: f64| {
            let mut b = RepairBudget::new(t0);
            let metrics = Metrics {
                acker: None,
                acker_report: None,
                window: Some(window),
                rate: None,
                srtt_secs: None,
                tokens: 0,
                stats: CcStats::default(),
            };
            let inputs = Inputs {
                repair_share: Some(2.0),
                source_share: Some(1.0),
                metrics: Some(metrics),
                grtt: Some(Duration::from_secs(10)),
                max_tpdu: 1000,
            };
            b.refresh(t0, &inputs);
            let mut sent = 0;
            while b.allows(t0, 1000).0 {
                b.charge(t0, 1000);
                sent += 1;
            }
            sent
        };
        assert_eq!(burst_of(10.0), 10);
        assert_eq!(burst_of(6.0), 6);
        assert_eq!(burst_of(1.0), 4);
    }
}
