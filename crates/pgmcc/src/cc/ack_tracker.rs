//! ACK bookkeeping between the sender and the acker (pgmcc paper §3.3).
//!
//! Each ACK carries RX_MAX (the acker's highest sequence number) and a bitmap of the latest
//! 32 (bit 0 = RX_MAX). ACKs are not sent reliably, so each one repeats the recent history:
//! the tracker merges every bitmap into its own view, counts each packet acknowledged
//! exactly once however many ACKs report it, in whatever order they arrive, and declares a
//! packet lost once `dupack_threshold` later packets are acknowledged while it is not
//! (or it falls out of the 32-packet history unacknowledged).

use crate::sqn;

/// Bits in an ACK bitmap.
const BITS: u32 = 32;

/// What one ACK told us.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AckOutcome {
    /// Packets acknowledged for the first time.
    pub(crate) newly_acked: u32,
    /// Packets now considered lost, oldest first.
    pub(crate) lost: Vec<u32>,
}

/// Merged view of the acker's reports.
#[derive(Debug, Clone)]
pub(crate) struct AckTracker {
    /// Lowest sequence number neither acknowledged nor declared lost.
    next: u32,
    /// First sequence number tracked since the last reset.
    origin: u32,
    /// Highest RX_MAX seen, and the merged bitmap relative to it.
    max: Option<u32>,
    bits: u32,
    dupack_threshold: u32,
    /// Only sequence numbers before this one count (a former acker's range).
    end: Option<u32>,
    /// A bounded tracker that still declares losses in its range.
    judge: bool,
}

impl AckTracker {
    /// Tracks packets from `first` on.
    pub(crate) fn new(first: u32, dupack_threshold: u32) -> AckTracker {
        AckTracker {
            next: first,
            origin: first,
            max: None,
            bits: 0,
            dupack_threshold: dupack_threshold.max(1),
            end: None,
            judge: true,
        }
    }

    /// A tracker for a former acker: counts acknowledgements of `first..end` only (the
    /// packets that named it) and never declares losses.
    #[cfg(test)]
    pub(crate) fn bounded(first: u32, end: u32) -> AckTracker {
        AckTracker {
            end: Some(end),
            judge: false,
            ..AckTracker::new(first, u32::MAX)
        }
    }

    /// This tracker, from now on limited to the packets before `end` (those that named this
    /// acker before a switch): it keeps what it already merged and goes on declaring losses
    /// in its range, so that a loss across a switch is still seen.
    pub(crate) fn bounded_to(&self, end: u32) -> AckTracker {
        AckTracker {
            end: Some(end),
            ..self.clone()
        }
    }

    /// Packets in `next..upto` (and before the range's end, if bounded) neither acknowledged
    /// nor declared lost: this acker's share of the packets in flight.
    pub(crate) fn unsettled(&self, upto: u32) -> u32 {
        let stop = match self.end {
            Some(e) if sqn::lt(e, upto) => e,
            _ => upto,
        };
        if !sqn::lt(self.next, stop) {
            return 0;
        }
        let acked = match self.max {
            None => 0,
            Some(max) => (0..BITS)
                .map(|back| max.wrapping_sub(back))
                .filter(|&s| sqn::le(self.next, s) && sqn::lt(s, stop) && self.acked(s))
                .count() as u32,
        };
        sqn::distance(self.next, stop).saturating_sub(acked)
    }

    /// True once every packet of a bounded tracker's range is settled.
    pub(crate) fn finished(&self) -> bool {
        self.end.is_some_and(|e| !sqn::lt(self.next, e))
    }

    /// Forgets everything before `first` (after an acker change or a restart).
    pub(crate) fn reset(&mut self, first: u32) {
        self.next = first;
        self.origin = first;
        self.max = None;
        self.bits = 0;
    }

    /// Lowest sequence number still awaiting an ACK.
    pub(crate) fn next_expected(&self) -> u32 {
        self.next
    }

    /// Highest RX_MAX seen.
    pub(crate) fn rx_max(&self) -> Option<u32> {
        self.max
    }

    /// True when the merged bitmap shows every tracked packet of the last 32 up to RX_MAX as
    /// received: the condition under which the fairness benchmark's adaptive timeout may be
    /// reset (Set 1).
    pub(crate) fn no_holes(&self) -> bool {
        match self.max {
            None => true,
            Some(max) => {
                let span = (sqn::distance(self.origin, max) + 1).min(BITS);
                let mask = if span == BITS {
                    u32::MAX
                } else {
                    (1u32 << span) - 1
                };
                self.bits & mask == mask
            }
        }
    }

    /// Whether packet `s` reached the receiver as far as its ACKs tell: `Some(true)` or
    /// `Some(false)` while `s` is within the last 32 up to RX_MAX, `None` for packets ahead
    /// of RX_MAX or older than that (the caller remembers what was declared lost).
    pub(crate) fn received(&self, s: u32) -> Option<bool> {
        let max = self.max?;
        (sqn::le(s, max) && sqn::distance(s, max) < BITS).then(|| self.acked(s))
    }

    fn acked(&self, s: u32) -> bool {
        match self.max {
            Some(max) if sqn::le(s, max) => {
                let back = sqn::distance(s, max);
                back < BITS && self.bits & (1 << back) != 0
            }
            _ => false,
        }
    }

    /// Settles packets from the oldest unsettled one up to, not including, `upto` (a packet
    /// the acker has acknowledged): acknowledged ones, and unacknowledged ones `expired` says
    /// are lost (returned oldest first); stops at the first unacknowledged one that has not
    /// expired. Time-based loss detection ([`super::pgmcc::LossDetection::Rack`]); a former
    /// acker's tracker that does not judge losses settles nothing.
    pub(crate) fn settle_before(
        &mut self,
        upto: u32,
        mut expired: impl FnMut(u32) -> bool,
    ) -> Vec<u32> {
        let mut lost = Vec::new();
        let Some(max) = self.max else {
            return lost;
        };
        if !self.judge {
            return lost;
        }
        while sqn::lt(self.next, upto)
            && sqn::le(self.next, max)
            && self.end.is_none_or(|e| sqn::lt(self.next, e))
        {
            let back = sqn::distance(self.next, max);
            if back < BITS && self.acked(self.next) {
                // settled
            } else if back >= BITS || expired(self.next) {
                lost.push(self.next);
            } else {
                break;
            }
            self.next = self.next.wrapping_add(1);
        }
        lost
    }

    /// Merges one ACK. The caller has checked that `rx_max` was actually sent.
    pub(crate) fn on_ack(&mut self, rx_max: u32, bitmap: u32) -> AckOutcome {
        let mut out = AckOutcome::default();
        // Align the incoming bitmap with the merged one and find the bits that are new.
        let new_bits = match self.max {
            None => {
                self.max = Some(rx_max);
                self.bits = bitmap;
                bitmap
            }
            Some(max) if sqn::gt(rx_max, max) => {
                let shift = sqn::distance(max, rx_max);
                let old = if shift >= BITS { 0 } else { self.bits << shift };
                self.max = Some(rx_max);
                self.bits = old | bitmap;
                bitmap & !old
            }
            Some(max) => {
                let shift = sqn::distance(rx_max, max);
                let aligned = if shift >= BITS { 0 } else { bitmap << shift };
                let fresh = aligned & !self.bits;
                self.bits |= aligned;
                fresh
            }
        };
        // Count only packets at or after `next` (earlier ones were settled already).
        let max = self.max.unwrap_or(rx_max);
        for back in 0..BITS {
            if new_bits & (1 << back) != 0 {
                let s = max.wrapping_sub(back);
                if sqn::le(self.next, s) && self.end.is_none_or(|e| sqn::lt(s, e)) {
                    out.newly_acked += 1;
                }
            }
        }
        if let (Some(end), false) = (self.end, self.judge) {
            // A former acker: advance past what it acknowledged, never judge losses.
            while sqn::lt(self.next, end) && sqn::le(self.next, max) && self.acked(self.next) {
                self.next = self.next.wrapping_add(1);
            }
            if sqn::gt(max, end) || sqn::distance(self.next, max) >= BITS {
                // Its reports have moved past its range: whatever is left will not come.
                self.next = end;
            }
            return out;
        }
        // Settle packets from `next` upwards: acknowledged, lost, or still open.
        while sqn::le(self.next, max) && self.end.is_none_or(|e| sqn::lt(self.next, e)) {
            let back = sqn::distance(self.next, max);
            if back >= BITS {
                // Fell out of the history without an ACK.
                out.lost.push(self.next);
            } else if self.acked(self.next) {
                // settled
            } else {
                let later = if back == 0 {
                    0
                } else {
                    (self.bits & ((1u32 << back) - 1)).count_ones()
                };
                if later >= self.dupack_threshold {
                    out.lost.push(self.next);
                } else {
                    break;
                }
            }
            self.next = self.next.wrapping_add(1);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bitmap an acker with these received sequence numbers would send.
    fn bitmap(rx_max: u32, received: &[u32]) -> u32 {
        received
            .iter()
            .filter(|&&s| s <= rx_max && rx_max - s < 32)
            .fold(0, |b, &s| b | 1 << (rx_max - s))
    }

    #[test]
    fn in_order_acks_count_once_each() {
        let mut t = AckTracker::new(0, 3);
        let mut got = Vec::new();
        for s in 0..10 {
            got.push(s);
            let o = t.on_ack(s, bitmap(s, &got));
            assert_eq!(
                o,
                AckOutcome {
                    newly_acked: 1,
                    lost: vec![]
                }
            );
        }
        assert_eq!(t.next_expected(), 10);
        assert!(t.no_holes());
    }

    #[test]
    fn lost_ack_is_recovered_from_the_next_bitmap() {
        let mut t = AckTracker::new(0, 3);
        t.on_ack(0, bitmap(0, &[0]));
        // ACKs for 1 and 2 are lost; the ACK for 3 reports all of them.
        let o = t.on_ack(3, bitmap(3, &[0, 1, 2, 3]));
        assert_eq!(o.newly_acked, 3);
        assert!(o.lost.is_empty());
    }

    #[test]
    fn duplicate_and_reordered_acks_add_nothing() {
        let mut t = AckTracker::new(0, 3);
        let all: Vec<u32> = (0..6).collect();
        assert_eq!(t.on_ack(5, bitmap(5, &all)).newly_acked, 6);
        assert_eq!(t.on_ack(5, bitmap(5, &all)).newly_acked, 0, "duplicate");
        assert_eq!(
            t.on_ack(3, bitmap(3, &all)).newly_acked,
            0,
            "late, reordered"
        );
    }

    #[test]
    fn a_hole_is_a_loss_after_three_later_acks() {
        let mut t = AckTracker::new(0, 3);
        let got = [0, 1, 3, 4];
        assert!(
            t.on_ack(4, bitmap(4, &got)).lost.is_empty(),
            "two later ACKs: not yet"
        );
        let got = [0, 1, 3, 4, 5];
        let o = t.on_ack(5, bitmap(5, &got));
        assert_eq!(o.lost, vec![2]);
        assert_eq!(t.next_expected(), 6);
        assert!(!t.no_holes(), "the hole at 2 is still in the bitmap");
    }

    #[test]
    fn a_late_ack_filling_a_hole_before_the_threshold_is_no_loss() {
        let mut t = AckTracker::new(0, 3);
        t.on_ack(3, bitmap(3, &[0, 1, 3]));
        // The acker got 2 after all (reordering on the path).
        let o = t.on_ack(4, bitmap(4, &[0, 1, 2, 3, 4]));
        assert!(o.lost.is_empty());
        assert_eq!(o.newly_acked, 2);
    }

    #[test]
    fn unacknowledged_packets_falling_out_of_the_history_are_lost() {
        let mut t = AckTracker::new(0, 3);
        let o = t.on_ack(40, bitmap(40, &[40]));
        assert_eq!(
            o.lost,
            (0..9).collect::<Vec<_>>(),
            "0..=8 are older than 32 behind RX_MAX"
        );
        assert!(t.next_expected() <= 40);
    }

    #[test]
    fn a_bounded_tracker_counts_only_its_range() {
        let mut t = AckTracker::bounded(10, 14);
        // The former acker received 8..=20 but was named only for 10..=13.
        let o = t.on_ack(20, bitmap(20, &(8..=20).collect::<Vec<_>>()));
        assert_eq!(o.newly_acked, 4);
        assert!(o.lost.is_empty());
        assert!(t.finished());
    }

    #[test]
    fn wraps_around_the_sequence_space() {
        let start = u32::MAX - 2;
        let mut t = AckTracker::new(start, 3);
        let got: Vec<u32> = (0..6).map(|i| start.wrapping_add(i)).collect();
        let max = start.wrapping_add(5);
        let bm = got.iter().fold(0u32, |b, &s| b | 1 << max.wrapping_sub(s));
        assert_eq!(t.on_ack(max, bm).newly_acked, 6);
        assert_eq!(t.next_expected(), start.wrapping_add(6));
    }
}
