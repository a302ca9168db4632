//! RACK loss detection (RFC 8985 §6), as Linux runs it since 4.18 in place of RFC 6675's
//! duplicate-ACK threshold: a segment is lost when a segment sent after it has been
//! delivered and more than one RTT plus a reordering window has passed since it was sent.
//! Time, not a count of duplicate ACKs, decides, so a window of two or three segments
//! recovers a loss without a timeout and a lost retransmission is detected the same way
//! (Linux's `TCPLostRetransmit`).
//!
//! The [`Scoreboard`](super::scoreboard::Scoreboard) owns the segments and calls the
//! hooks here; [`Rack`] keeps RACK's variables and the two indexes loss detection needs:
//! the candidates in send order and the segments marked lost and not yet sent again.

use std::collections::BTreeSet;

use pgmcc::{Duration, Instant};

/// RACK's state (RFC 8985 §6.1) and its indexes over the scoreboard.
#[derive(Debug, Clone, Default)]
pub(super) struct Rack {
    /// `RACK.xmit_ts` and `RACK.end_seq`: the send time and end of the segment sent last
    /// among those known delivered.
    latest: Option<(Instant, u64)>,
    /// `RACK.rtt`: the RTT of the segment `latest` names.
    rtt: Duration,
    /// The least RTT seen on a segment never retransmitted.
    min_rtt: Option<Duration>,
    /// `RACK.fack`: the highest end of a delivered segment.
    fack: u64,
    /// `RACK.reord`: a segment never retransmitted was delivered below `fack`.
    reord: bool,
    /// Candidates for loss, `(send time, seq)`: sent, neither SACKed nor cumulatively
    /// acknowledged, and not marked lost since they were last sent.
    by_time: BTreeSet<(Instant, u64)>,
    /// Segments marked lost and not sent since.
    to_resend: BTreeSet<u64>,
    /// Segments SACKed and not yet cumulatively acknowledged.
    sacked: u64,
    /// Retransmissions marked lost.
    lost_retransmits: u64,
}

/// `RACK_sent_after`: whether `(t1, end1)` was sent after `(t2, end2)`; segments sent at
/// the same instant are ordered by sequence number.
fn sent_after(t1: Instant, end1: u64, t2: Instant, end2: u64) -> bool {
    t1 > t2 || (t1 == t2 && end1 > end2)
}

impl Rack {
    /// The segment at `seq` was sent at `now`, previously at `before` (if it was).
    pub(super) fn on_sent(&mut self, seq: u64, before: Option<Instant>, now: Instant) {
        if let Some(t) = before {
            self.by_time.remove(&(t, seq));
        }
        self.to_resend.remove(&seq);
        self.by_time.insert((now, seq));
    }

    /// The segment `[seq, end)`, last sent at `xmit`, was delivered (newly SACKed when
    /// `sacked`, else cumulatively acknowledged without having been SACKed) as seen at `now`
    /// (RFC 8985 §6.2 steps 2 and 3).
    pub(super) fn on_delivered(
        &mut self,
        seq: u64,
        end: u64,
        xmit: Instant,
        retransmitted: bool,
        sacked: bool,
        now: Instant,
    ) {
        self.by_time.remove(&(xmit, seq));
        self.to_resend.remove(&seq);
        if sacked {
            self.sacked += 1;
        }
        if end > self.fack {
            self.fack = end;
        } else if !retransmitted {
            self.reord = true;
        }
        let rtt = now - xmit;
        // A retransmitted segment delivered sooner than any RTT seen was the original's
        // delivery, not this transmission's (Linux's `tcp_rack_advance`).
        if retransmitted && self.min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        if !retransmitted {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        // RACK.rtt goes with RACK.xmit_ts: the RTT of the segment sent last among those
        // delivered, whatever order an ACK's SACK blocks come in.
        if self.latest.is_none_or(|(t, e)| sent_after(xmit, end, t, e)) {
            self.latest = Some((xmit, end));
            self.rtt = rtt;
        }
    }

    /// A SACKed segment left the scoreboard with the cumulative ACK.
    pub(super) fn on_sacked_acked(&mut self) {
        self.sacked = self.sacked.saturating_sub(1);
    }

    /// `RACK.reo_wnd` (RFC 8985 §6.2 step 4, without DSACK-driven growth): none while
    /// recovering or once `dupack_threshold` segments are SACKed, unless reordering was
    /// seen; otherwise a quarter of the least RTT, at most `srtt`.
    pub(super) fn reo_wnd(
        &self,
        recovering: bool,
        dupack_threshold: u32,
        srtt: Option<Duration>,
    ) -> Duration {
        if !self.reord && (recovering || self.sacked >= u64::from(dupack_threshold)) {
            return Duration::ZERO;
        }
        let quarter = self.min_rtt.unwrap_or(Duration::ZERO) / 4;
        srtt.map_or(quarter, |s| quarter.min(s))
    }

    /// `RACK_detect_loss` (RFC 8985 §6.2 step 5): marks lost every candidate sent before
    /// the latest delivered segment more than `RACK.rtt + reo_wnd` ago. `seg` gives a
    /// candidate's end and whether it was ever retransmitted. Returns how long until the
    /// next candidate would be lost (the reordering timer), if one is waiting.
    pub(super) fn detect_loss(
        &mut self,
        now: Instant,
        reo_wnd: Duration,
        seg: impl Fn(u64) -> (u64, bool),
    ) -> Option<Duration> {
        let (rack_ts, rack_end) = self.latest?;
        let mut wait: Option<Duration> = None;
        let mut lost = Vec::new();
        for &(t, seq) in &self.by_time {
            let (end, retransmitted) = seg(seq);
            if !sent_after(rack_ts, rack_end, t, end) {
                break;
            }
            let deadline = t + self.rtt + reo_wnd;
            if deadline <= now {
                lost.push((t, seq));
                if retransmitted {
                    self.lost_retransmits += 1;
                }
            } else {
                let left = deadline - now;
                wait = Some(wait.map_or(left, |w| w.max(left)));
            }
        }
        for (t, seq) in lost {
            self.by_time.remove(&(t, seq));
            self.to_resend.insert(seq);
        }
        wait
    }

    /// Whether the segment at `seq` is marked lost and not sent since.
    pub(super) fn is_lost(&self, seq: u64) -> bool {
        self.to_resend.contains(&seq)
    }

    /// The segments marked lost and not sent since, in order.
    pub(super) fn lost(&self) -> impl Iterator<Item = u64> + '_ {
        self.to_resend.iter().copied()
    }

    /// The first segment marked lost and not sent since.
    pub(super) fn first_to_resend(&self) -> Option<u64> {
        self.to_resend.first().copied()
    }

    /// Whether any segment is marked lost and not sent since.
    pub(super) fn has_lost(&self) -> bool {
        !self.to_resend.is_empty()
    }

    /// Retransmissions marked lost so far.
    pub(super) fn lost_retransmits(&self) -> u64 {
        self.lost_retransmits
    }

    /// A retransmission timeout: no segment is a candidate or marked lost until sent
    /// again, and SACK information is forgotten; `snd_una` becomes the highest delivered
    /// byte, so data the cumulative ACK later covers is not taken for reordering.
    pub(super) fn forget(&mut self, snd_una: u64) {
        self.by_time.clear();
        self.to_resend.clear();
        self.sacked = 0;
        self.fack = snd_una;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    /// Segments of 1000 bytes sent 1 ms apart; the third is delivered 50 ms after it left:
    /// the first two, sent before it, are lost once 50 ms plus the reordering window have
    /// passed since each was sent, and not before.
    #[test]
    fn a_segment_sent_before_a_delivered_one_is_lost_after_one_rtt_and_the_window() {
        let mut r = Rack::default();
        for k in 0..4u64 {
            r.on_sent(k * 1000, None, at(k));
        }
        r.on_delivered(2000, 3000, at(2), false, true, at(52));
        let seg = |s: u64| (s + 1000, false);
        let reo = r.reo_wnd(false, 3, None);
        assert_eq!(
            reo,
            Duration::from_micros(12_500),
            "a quarter of the 50 ms RTT"
        );
        let wait = r.detect_loss(at(52), reo, seg);
        assert!(!r.has_lost());
        assert_eq!(
            wait,
            Some(Duration::from_micros(11_500)),
            "segment 1 at 63.5 ms"
        );
        let wait = r.detect_loss(at(63), reo, seg);
        assert_eq!(r.lost().collect::<Vec<_>>(), [0]);
        assert_eq!(wait, Some(Duration::from_micros(500)));
        let wait = r.detect_loss(at(64), reo, seg);
        assert_eq!(r.lost().collect::<Vec<_>>(), [0, 1000]);
        assert_eq!(wait, None, "segment 3 was sent after the delivered one");
        assert_eq!(r.first_to_resend(), Some(0));
        // Sent again, it is a candidate once more, not a segment to resend.
        r.on_sent(0, Some(at(0)), at(70));
        assert_eq!(r.first_to_resend(), Some(1000));
        assert!(!r.reord);
    }

    /// While recovering, or with a duplicate-ACK threshold of segments SACKed, the window
    /// is zero unless reordering was seen; a segment never retransmitted delivered below
    /// the highest delivered one is reordering.
    #[test]
    fn the_window_closes_in_recovery_until_reordering_is_seen() {
        let mut r = Rack::default();
        for k in 0..5u64 {
            r.on_sent(k * 1000, None, at(k));
        }
        r.on_delivered(4000, 5000, at(4), false, true, at(44));
        assert_eq!(r.reo_wnd(true, 3, None), Duration::ZERO);
        assert_eq!(r.reo_wnd(false, 3, None), Duration::from_millis(10));
        assert_eq!(
            r.reo_wnd(false, 3, Some(Duration::from_millis(8))),
            Duration::from_millis(8),
            "at most SRTT"
        );
        r.on_delivered(3000, 4000, at(3), false, true, at(45));
        r.on_delivered(2000, 3000, at(2), false, true, at(46));
        assert!(r.reord, "delivered below fack, never retransmitted");
        assert_eq!(r.reo_wnd(true, 3, None), Duration::from_millis(10));
    }

    /// A retransmission delivered sooner than the least RTT is the original's delivery:
    /// it neither moves RACK's latest segment nor its RTT.
    #[test]
    fn an_ambiguous_retransmission_gives_no_rtt() {
        let mut r = Rack::default();
        r.on_sent(0, None, at(0));
        r.on_sent(1000, None, at(1));
        r.on_delivered(1000, 2000, at(1), false, true, at(41));
        r.on_sent(0, Some(at(0)), at(60));
        r.on_delivered(0, 1000, at(60), true, false, at(61));
        assert_eq!(r.rtt, Duration::from_millis(40));
        assert_eq!(r.latest, Some((at(1), 2000)));
    }
}
