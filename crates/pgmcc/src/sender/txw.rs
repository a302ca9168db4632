//! The transmit window (RFC 3208 §3 "TXW"): every ODATA packet from the trailing edge to the
//! leading edge, kept for repair, plus the packets queued but not yet sent.

use std::collections::VecDeque;

use pgm_wire::Fragment;

use crate::sqn;
use crate::time::{Duration, Instant};

/// One TPDU's worth of application data and how it sits in its APDU.
#[derive(Debug, Clone)]
pub(crate) struct TxPacket {
    pub(crate) sqn: u32,
    pub(crate) data: Vec<u8>,
    pub(crate) fragment: Option<Fragment>,
    /// First transmission time; `None` while queued.
    pub(crate) sent_at: Option<Instant>,
    /// When the latest RDATA of it went out (the repair hold-off's clock).
    pub(crate) repaired_at: Option<Instant>,
    /// When the latest repair a NAK asked for went out for it (its RDATA, or parity for its
    /// transmission group): the NAK horizon restarts there ([`TransmitWindow::held_until`]).
    pub(crate) hold_from: Option<Instant>,
    /// NAKs received for it (saturating).
    pub(crate) naks: u16,
}

/// A packet repaired is held at most this many NAK horizons after it was first sent
/// ([`TransmitWindow::held_until`]).
pub(crate) const MAX_HOLD_HORIZONS: u32 = 4;

/// Window bounds; whichever is reached first evicts the oldest sent packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) sqns: u32,
    pub(crate) bytes: Option<usize>,
    pub(crate) age: Option<Duration>,
}

/// Sent packets `[trail, lead]` followed by queued ones `[lead+1, next_sqn)`.
#[derive(Debug)]
pub(crate) struct TransmitWindow {
    packets: VecDeque<TxPacket>,
    /// Sequence number of `packets[0]`, or of the next packet when empty.
    front: u32,
    /// Number of packets at the front that have been sent.
    sent: usize,
    sent_bytes: usize,
    bounds: Bounds,
}

impl TransmitWindow {
    pub(crate) fn new(initial_sqn: u32, bounds: Bounds) -> TransmitWindow {
        TransmitWindow {
            packets: VecDeque::new(),
            front: initial_sqn,
            sent: 0,
            sent_bytes: 0,
            bounds,
        }
    }

    /// Sequence number the next queued packet will get.
    pub(crate) fn next_sqn(&self) -> u32 {
        self.front.wrapping_add(self.packets.len() as u32)
    }

    /// Trailing edge: oldest sequence number still available for repair (RFC: TXW_TRAIL).
    pub(crate) fn trail(&self) -> u32 {
        self.front
    }

    /// Leading edge: the last sequence number sent (TXW_LEAD = trail - 1 when empty).
    pub(crate) fn lead(&self) -> u32 {
        self.front.wrapping_add(self.sent as u32).wrapping_sub(1)
    }

    /// Packets queued and not yet sent.
    pub(crate) fn queued(&self) -> usize {
        self.packets.len() - self.sent
    }

    /// Queues a packet (its sequence number must be `next_sqn()`).
    pub(crate) fn push(&mut self, p: TxPacket) {
        debug_assert_eq!(p.sqn, self.next_sqn());
        self.packets.push_back(p);
    }

    /// The next queued packet, if any.
    pub(crate) fn peek_unsent(&self) -> Option<&TxPacket> {
        self.packets.get(self.sent)
    }

    /// Marks the next queued packet sent at `now`, then evicts what the bounds require.
    /// Returns the sequence numbers evicted (oldest first) as a range `(first, count)`.
    pub(crate) fn mark_sent(&mut self, now: Instant, hold: Duration) -> (u32, u32) {
        if let Some(p) = self.packets.get_mut(self.sent) {
            p.sent_at = Some(now);
            self.sent_bytes += p.data.len();
            self.sent += 1;
        }
        self.evict(now, hold)
    }

    /// When the next queued packet may be sent without evicting a packet still held
    /// ([`TransmitWindow::held_until`]): `None` when there is room within the count and byte
    /// bounds (or nothing is queued), else when the oldest sent packet's hold ends.
    pub(crate) fn hold_release(&self, hold: Duration) -> Option<Instant> {
        let next = self.peek_unsent()?;
        let full_sqns = self.sent as u64 >= u64::from(self.bounds.sqns);
        let full_bytes = self
            .bounds
            .bytes
            .is_some_and(|b| self.sent > 0 && self.sent_bytes + next.data.len() > b);
        if !(full_sqns || full_bytes) {
            return None;
        }
        Self::held_until(self.packets.front()?, hold)
    }

    /// Until when the count and byte bounds may not evict `p`: one `hold` (the NAK horizon)
    /// after it was sent, and one after its latest repair, for at most
    /// [`MAX_HOLD_HORIZONS`] after it was sent. A repair lost on the way (in the source's
    /// own full queue, say) leaves the receiver a whole NAK round to ask again, and the
    /// packet is still there to answer; a receiver that keeps asking pins it for a bounded
    /// time only. `None` while unsent.
    pub(crate) fn held_until(p: &TxPacket, hold: Duration) -> Option<Instant> {
        let sent = p.sent_at?;
        let from = p.hold_from.map_or(sent, |r| r.max(sent));
        Some((from + hold).min(sent + hold * MAX_HOLD_HORIZONS))
    }

    /// A repair for sent packets `first ..= first + count - 1` (those still held) went out
    /// at `now` (parity for their transmission group).
    pub(crate) fn note_repair(&mut self, first: u32, count: u32, now: Instant) {
        for i in 0..count {
            if let Some(p) = self.get_sent_mut(first.wrapping_add(i)) {
                p.hold_from = Some(now);
            }
        }
    }

    /// Evicts sent packets beyond the window bounds, but never one still held
    /// ([`TransmitWindow::held_until`]) by the count or byte bound (the sender holds new data
    /// back instead, [`TransmitWindow::hold_release`]). Returns `(first evicted, count)`.
    pub(crate) fn evict(&mut self, now: Instant, hold: Duration) -> (u32, u32) {
        let first = self.front;
        let mut n = 0u32;
        while self.sent > 0 {
            let Some(oldest) = self.packets.front() else {
                break;
            };
            let over_sqns = self.sent as u64 > u64::from(self.bounds.sqns);
            let over_bytes = self
                .bounds
                .bytes
                .is_some_and(|b| self.sent_bytes > b && self.sent > 1);
            let too_old = match (self.bounds.age, oldest.sent_at) {
                (Some(age), Some(t)) => now.saturating_duration_since(t) > age && self.sent > 1,
                _ => false,
            };
            let young = Self::held_until(oldest, hold).is_some_and(|t| now < t);
            if !(too_old || (over_sqns || over_bytes) && !young) {
                break;
            }
            self.sent_bytes -= oldest.data.len();
            self.packets.pop_front();
            self.sent -= 1;
            self.front = self.front.wrapping_add(1);
            n += 1;
        }
        (first, n)
    }

    /// When the oldest sent packet becomes too old to keep (only while more than one packet
    /// is held: the newest always stays).
    pub(crate) fn next_age_eviction(&self) -> Option<Instant> {
        let age = self.bounds.age?;
        if self.sent < 2 {
            return None;
        }
        let t = self.packets.front()?.sent_at?;
        Some(t + age + Duration::from_nanos(1))
    }

    /// Index of sent packet `sqn` in `packets`, if still in the window.
    fn index_sent(&self, sqn: u32) -> Option<usize> {
        if sqn::lt(sqn, self.front) {
            return None;
        }
        let i = sqn::distance(self.front, sqn) as usize;
        (i < self.sent).then_some(i)
    }

    /// A sent packet still in the window, for repair.
    pub(crate) fn get_sent(&self, sqn: u32) -> Option<&TxPacket> {
        self.index_sent(sqn).and_then(|i| self.packets.get(i))
    }

    /// [`TransmitWindow::get_sent`], mutable.
    pub(crate) fn get_sent_mut(&mut self, sqn: u32) -> Option<&mut TxPacket> {
        self.index_sent(sqn).and_then(|i| self.packets.get_mut(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(sqn: u32, len: usize) -> TxPacket {
        TxPacket {
            sqn,
            data: vec![0; len],
            fragment: None,
            sent_at: None,
            repaired_at: None,
            hold_from: None,
            naks: 0,
        }
    }

    #[test]
    fn window_edges_and_eviction_by_count() {
        let bounds = Bounds {
            sqns: 3,
            bytes: None,
            age: None,
        };
        let mut w = TransmitWindow::new(u32::MAX - 1, bounds);
        assert_eq!(w.lead(), u32::MAX - 2, "empty window: lead = trail - 1");
        for _ in 0..5 {
            let s = w.next_sqn();
            w.push(pkt(s, 10));
        }
        assert_eq!(w.queued(), 5);
        for _ in 0..4 {
            w.mark_sent(Instant::ZERO, Duration::ZERO);
        }
        // Sent u32::MAX-1, u32::MAX, 0, 1; window of 3 keeps u32::MAX..=1.
        assert_eq!(w.trail(), u32::MAX);
        assert_eq!(w.lead(), 1);
        assert!(w.get_sent(u32::MAX - 1).is_none());
        assert!(w.get_sent(0).is_some());
        assert!(w.get_sent(2).is_none(), "queued, not sent");
        assert_eq!(w.queued(), 1);
    }

    #[test]
    fn eviction_by_bytes_and_age() {
        let bounds = Bounds {
            sqns: 100,
            bytes: Some(25),
            age: Some(Duration::from_secs(1)),
        };
        let mut w = TransmitWindow::new(0, bounds);
        for i in 0..3 {
            w.push(pkt(i, 10));
        }
        w.mark_sent(Instant::ZERO, Duration::ZERO);
        w.mark_sent(Instant::ZERO, Duration::ZERO);
        assert_eq!(
            w.mark_sent(Instant::ZERO, Duration::ZERO),
            (0, 1),
            "30 bytes > 25: oldest goes"
        );
        let (_, n) = w.evict(Instant::ZERO + Duration::from_secs(2), Duration::ZERO);
        assert_eq!(n, 1, "older than 1 s, but the newest packet always stays");
        assert_eq!(w.trail(), 2);
    }

    #[test]
    fn a_packet_younger_than_the_hold_is_never_evicted_by_count_or_bytes() {
        let bounds = Bounds {
            sqns: 3,
            bytes: Some(35),
            age: None,
        };
        let hold = Duration::from_secs(1);
        let t = |ms: u64| Instant::ZERO + Duration::from_millis(ms);
        let mut w = TransmitWindow::new(0, bounds);
        for i in 0..6 {
            w.push(pkt(i, 10));
        }
        for i in 0..3 {
            assert_eq!(w.hold_release(hold), None, "room for packet {i}");
            w.mark_sent(t(100 * i as u64), hold);
        }
        // Full (3 packets, and a fourth would make 40 bytes): the next waits until the
        // oldest, sent at 0, has been held for 1 s.
        assert_eq!(w.hold_release(hold), Some(t(1000)));
        assert_eq!(w.evict(t(999), hold), (0, 0), "still young: kept");
        assert_eq!(w.trail(), 0);
        // Once released, sending evicts exactly the oldest.
        assert_eq!(w.mark_sent(t(1000), hold), (0, 1));
        assert_eq!((w.trail(), w.lead()), (1, 3));
        assert_eq!(w.hold_release(hold), Some(t(1100)));
        // Without a hold the bounds evict at once, as before.
        assert_eq!(w.mark_sent(t(1000), Duration::ZERO), (1, 1));
    }

    #[test]
    fn a_repaired_packet_is_held_one_horizon_after_its_latest_repair_up_to_four_after_sending() {
        let bounds = Bounds {
            sqns: 2,
            bytes: None,
            age: None,
        };
        let hold = Duration::from_secs(1);
        let t = |ms: u64| Instant::ZERO + Duration::from_millis(ms);
        let mut w = TransmitWindow::new(0, bounds);
        for i in 0..4 {
            w.push(pkt(i, 10));
        }
        w.mark_sent(t(0), hold);
        w.mark_sent(t(100), hold);
        assert_eq!(
            w.hold_release(hold),
            Some(t(1000)),
            "not repaired: one horizon"
        );
        // Repaired at 0.8 s (say, its parity group): held until 1.8 s.
        w.note_repair(0, 2, t(800));
        assert_eq!(w.hold_release(hold), Some(t(1800)));
        assert_eq!(w.evict(t(1799), hold), (0, 0));
        // Repaired again and again: never beyond four horizons after it was sent.
        for ms in [1700, 2600, 3500] {
            w.note_repair(0, 1, t(ms));
        }
        assert_eq!(w.hold_release(hold), Some(t(4000)));
        assert_eq!(w.mark_sent(t(4000), hold), (0, 1));
        // The next one was repaired only at 0.8 s.
        assert_eq!(w.hold_release(hold), Some(t(1800)));
        // A repair of a packet no longer held is ignored.
        w.note_repair(0, 1, t(4100));
        assert_eq!(w.trail(), 1);
    }
}
