//! The RFC 6675 SACK scoreboard: every sent, not yet cumulatively acknowledged segment,
//! which of them SACK blocks cover, `IsLost`, `pipe`, and the holes `NextSeg` picks from.
//! Reno and NewReno keep it too (it is where segment lengths live) but never mark it.
//! With RACK ([`Scoreboard::with_rack`]) segments are marked lost by [`Rack`] instead of
//! `IsLost`, and `pipe` and `NextSeg` follow those marks as Linux does.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use pgmcc::{Duration, Instant};

use super::rack::Rack;

/// One sent, not yet cumulatively acknowledged segment.
#[derive(Debug, Clone, Copy)]
struct Seg {
    len: u32,
    /// Covered by a SACK block.
    sacked: bool,
    /// Retransmitted during the current SACK recovery (counts in `pipe`).
    rexmit_in_recovery: bool,
    /// When it was last sent.
    xmit: Instant,
    /// Sent more than once.
    retransmitted: bool,
}

/// Outstanding segments by sequence number.
///
/// Work per ACK stays proportional to what the ACK changes, not to the window: at 100
/// Mbit/s x 400 ms a window holds thousands of segments, and re-marking every segment of
/// every SACK block and re-deciding `IsLost` for the whole window on every ACK took most of
/// a run's time. `IsLost` is monotone (the SACKed data above a segment only grows going
/// down), so it is kept as one boundary ([`Scoreboard::lost_below`]), and the bytes SACK
/// blocks already covered are kept as ranges, so a block only marks what is new.
#[derive(Debug, Clone, Default)]
pub(super) struct Scoreboard {
    segs: BTreeMap<u64, Seg>,
    /// Highest byte covered by a SACK block (exclusive).
    high_sacked: u64,
    /// Byte ranges SACK blocks have covered since the last timeout, `start -> end`,
    /// disjoint and not adjacent, none below the cumulative ACK.
    covered: BTreeMap<u64, u64>,
    /// `IsLost` per RFC 6675 (SACK variant only): an unSACKed segment is lost when it
    /// starts below this.
    lost_below: u64,
    /// RACK loss detection in place of `IsLost`, if on.
    rack: Option<Rack>,
}

impl Scoreboard {
    /// A scoreboard whose losses RACK marks (RFC 8985) instead of RFC 6675's `IsLost`.
    pub(super) fn with_rack() -> Scoreboard {
        Scoreboard {
            rack: Some(Rack::default()),
            ..Scoreboard::default()
        }
    }

    /// The segment `[seq, seq + len)` was sent at `now`; a retransmission during SACK
    /// recovery (`rexmit_in_recovery`) counts in `pipe` until recovery ends.
    pub(super) fn sent(&mut self, seq: u64, len: u32, rexmit_in_recovery: bool, now: Instant) {
        let (before, seg) = match self.segs.entry(seq) {
            Entry::Vacant(v) => (
                None,
                v.insert(Seg {
                    len,
                    sacked: false,
                    rexmit_in_recovery: false,
                    xmit: now,
                    retransmitted: false,
                }),
            ),
            Entry::Occupied(o) => {
                let seg = o.into_mut();
                seg.retransmitted = true;
                (Some(seg.xmit), seg)
            }
        };
        seg.rexmit_in_recovery |= rexmit_in_recovery;
        seg.xmit = now;
        if let Some(r) = self.rack.as_mut() {
            if !seg.sacked {
                r.on_sent(seq, before, now);
            }
        }
    }

    /// Everything below `ack` is cumulatively acknowledged, as seen at `now`.
    pub(super) fn acked(&mut self, ack: u64, now: Instant) {
        let keep = self.segs.split_off(&ack);
        let gone = std::mem::replace(&mut self.segs, keep);
        if let Some(r) = self.rack.as_mut() {
            for (seq, s) in gone {
                if s.sacked {
                    r.on_sacked_acked();
                } else {
                    let end = seq + u64::from(s.len);
                    r.on_delivered(seq, end, s.xmit, s.retransmitted, false, now);
                }
            }
        }
        self.high_sacked = self.high_sacked.max(ack);
        let mut covered = self.covered.split_off(&ack);
        if let Some((_, &e)) = self.covered.iter().next_back() {
            if e > ack {
                covered.insert(ack, e);
            }
        }
        self.covered = covered;
    }

    /// Applies the SACK blocks of an ACK received at `now` (clipped to
    /// `snd_una..snd_max`), then `IsLost` (without RACK).
    pub(super) fn apply_sack(
        &mut self,
        sack: &[(u64, u64)],
        snd_una: u64,
        snd_max: u64,
        dupack_threshold: u32,
        mss: u32,
        now: Instant,
    ) {
        // In order of sequence (the sink puts the most recent block first), as Linux sorts
        // them: RACK takes a block below one already applied for reordering.
        let mut blocks = sack.to_vec();
        blocks.sort_unstable();
        for (s, e) in blocks {
            let s = s.max(snd_una);
            if e <= s {
                continue;
            }
            for (gs, ge) in self.cover(s, e) {
                for (&seq, seg) in self.segs.range_mut(gs..ge) {
                    let end = seq + u64::from(seg.len);
                    if end <= e && !seg.sacked {
                        seg.sacked = true;
                        if let Some(r) = self.rack.as_mut() {
                            r.on_delivered(seq, end, seg.xmit, seg.retransmitted, true, now);
                        }
                    }
                }
            }
            self.high_sacked = self.high_sacked.max(e.min(snd_max));
        }
        if self.rack.is_none() {
            self.update_lost(dupack_threshold, mss);
        }
    }

    /// RACK loss detection at `now` (see [`Rack::detect_loss`]), with the reordering
    /// window for a sender `recovering` or not and the smoothed RTT `srtt`. Returns how
    /// long until the next segment would be lost; nothing without RACK.
    pub(super) fn rack_detect(
        &mut self,
        now: Instant,
        recovering: bool,
        dupack_threshold: u32,
        srtt: Option<Duration>,
    ) -> Option<Duration> {
        let r = self.rack.as_mut()?;
        let reo_wnd = r.reo_wnd(recovering, dupack_threshold, srtt);
        let segs = &self.segs;
        r.detect_loss(now, reo_wnd, |seq| {
            segs.get(&seq)
                .map_or((seq, false), |s| (seq + u64::from(s.len), s.retransmitted))
        })
    }

    /// Whether RACK has marked a segment lost that was not sent since.
    pub(super) fn rack_has_lost(&self) -> bool {
        self.rack.as_ref().is_some_and(Rack::has_lost)
    }

    /// Retransmissions RACK marked lost (Linux's `TCPLostRetransmit`).
    pub(super) fn lost_retransmits(&self) -> u64 {
        self.rack.as_ref().map_or(0, Rack::lost_retransmits)
    }

    /// The highest outstanding segment.
    pub(super) fn last(&self) -> Option<u64> {
        self.segs.last_key_value().map(|(&seq, _)| seq)
    }

    /// Adds `[s, e)` to the covered ranges; returns the parts of it that were not covered.
    fn cover(&mut self, mut s: u64, mut e: u64) -> Vec<(u64, u64)> {
        let mut gaps = Vec::new();
        let mut at = s;
        if let Some((&ps, &pe)) = self.covered.range(..=s).next_back() {
            if pe >= s {
                at = at.max(pe);
                s = ps;
                e = e.max(pe);
                self.covered.remove(&ps);
            }
        }
        while let Some((&ns, &ne)) = self.covered.range(s..).next() {
            if ns > e {
                break;
            }
            if ns > at {
                gaps.push((at, ns));
            }
            at = at.max(ne);
            e = e.max(ne);
            self.covered.remove(&ns);
        }
        if e > at {
            gaps.push((at, e));
        }
        self.covered.insert(s, e);
        gaps
    }

    /// RFC 6675 `IsLost`: an unSACKed segment is lost when more than `(DupThresh - 1) *
    /// SMSS` bytes or at least `DupThresh` segments above it are SACKed. Walking down from
    /// the highest SACKed byte, the first unSACKed segment that qualifies sets
    /// [`Scoreboard::lost_below`]: every unSACKed segment below it qualifies too.
    fn update_lost(&mut self, dupack_threshold: u32, mss: u32) {
        let dup = u64::from(dupack_threshold.max(1));
        let limit = (dup - 1) * u64::from(mss);
        let mut sacked_bytes = 0u64;
        let mut sacked_segs = 0u64;
        self.lost_below = 0;
        for (&seq, seg) in self.segs.range(..self.high_sacked).rev() {
            if seg.sacked {
                sacked_bytes += u64::from(seg.len);
                sacked_segs += 1;
            } else if sacked_bytes > limit || sacked_segs >= dup {
                self.lost_below = seq + 1;
                break;
            }
        }
    }

    /// Whether the segment at `seq` is considered lost.
    pub(super) fn is_lost(&self, seq: u64) -> bool {
        if let Some(r) = &self.rack {
            return r.is_lost(seq);
        }
        seq < self.lost_below && self.segs.get(&seq).is_some_and(|s| !s.sacked)
    }

    /// RFC 6675 `SetPipe`; with RACK, Linux's `packets_in_flight`: every segment neither
    /// SACKed nor marked lost since it was last sent.
    pub(super) fn pipe(&self) -> u64 {
        if let Some(r) = &self.rack {
            let out: u64 = self
                .segs
                .values()
                .filter(|s| !s.sacked)
                .map(|s| u64::from(s.len))
                .sum();
            let lost: u64 = r
                .lost()
                .filter_map(|seq| self.segs.get(&seq))
                .map(|s| u64::from(s.len))
                .sum();
            return out.saturating_sub(lost);
        }
        let mut pipe = 0u64;
        for (&seq, seg) in self.segs.iter().filter(|(_, s)| !s.sacked) {
            if seq >= self.lost_below {
                pipe += u64::from(seg.len);
            }
            if seg.rexmit_in_recovery {
                pipe += u64::from(seg.len);
            }
        }
        pipe
    }

    /// `NextSeg` rule (1): the first lost segment not yet retransmitted in this recovery
    /// (with RACK: not sent since RACK marked it lost).
    pub(super) fn first_lost(&self) -> Option<u64> {
        if let Some(r) = &self.rack {
            return r.first_to_resend();
        }
        self.segs
            .range(..self.lost_below)
            .find(|(_, s)| !s.sacked && !s.rexmit_in_recovery)
            .map(|(&seq, _)| seq)
    }

    /// `NextSeg` rule (3): the first unSACKed hole below the highest SACKed byte, not yet
    /// retransmitted in this recovery. None with RACK: Linux resends only what is marked
    /// lost.
    pub(super) fn first_hole(&self) -> Option<u64> {
        if self.rack.is_some() {
            return None;
        }
        self.segs
            .iter()
            .find(|(&seq, s)| !s.sacked && !s.rexmit_in_recovery && seq < self.high_sacked)
            .map(|(&seq, _)| seq)
    }

    /// Recovery ended: retransmissions no longer count twice in `pipe`.
    pub(super) fn end_recovery(&mut self) {
        for s in self.segs.values_mut() {
            s.rexmit_in_recovery = false;
        }
    }

    /// A retransmission timeout: forget all SACK information (RFC 2018 §8: the receiver
    /// may have reneged); `snd_una` is the highest byte known received.
    pub(super) fn forget(&mut self, snd_una: u64) {
        for s in self.segs.values_mut() {
            s.sacked = false;
            s.rexmit_in_recovery = false;
        }
        self.high_sacked = snd_una;
        self.covered.clear();
        self.lost_below = 0;
        if let Some(r) = self.rack.as_mut() {
            r.forget(snd_una);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgmcc::rng::Rng;
    use std::collections::BTreeSet;

    /// RFC 6675 the slow way: SACKed segments in a set, `IsLost` decided for every segment
    /// from the SACKed data above it, `pipe` and `NextSeg` by a walk over everything.
    #[derive(Default)]
    struct Reference {
        segs: BTreeMap<u64, (u32, bool)>,
        sacked: BTreeSet<u64>,
        high_sacked: u64,
    }

    impl Reference {
        fn lost(&self, seq: u64, dup: u64, mss: u64) -> bool {
            if self.sacked.contains(&seq) {
                return false;
            }
            let above = self.sacked.range(seq + 1..);
            let segs = above.clone().count() as u64;
            let bytes: u64 = above.map(|s| u64::from(self.segs[s].0)).sum();
            bytes > (dup - 1) * mss || segs >= dup
        }

        fn pipe(&self, dup: u64, mss: u64) -> u64 {
            let mut pipe = 0;
            for (&seq, &(len, rexmit)) in &self.segs {
                if self.sacked.contains(&seq) {
                    continue;
                }
                if !self.lost(seq, dup, mss) {
                    pipe += u64::from(len);
                }
                if rexmit {
                    pipe += u64::from(len);
                }
            }
            pipe
        }
    }

    /// The boundary and the covered ranges give what deciding every segment on every ACK
    /// gave, over random windows, losses, SACK blocks, cumulative ACKs and timeouts.
    #[test]
    fn matches_a_walk_over_every_segment() {
        const MSS: u32 = 1000;
        let (dup, mss) = (3u64, u64::from(MSS));
        let mut rng = Rng::new(11);
        for round in 0..200 {
            let mut sb = Scoreboard::default();
            let mut r = Reference::default();
            let (mut una, mut max) = (0u64, 0u64);
            for step in 0..200 {
                match rng.below(10) {
                    0..=3 => {
                        // Send new segments, some retransmitted in recovery.
                        for _ in 0..rng.below(8) {
                            sb.sent(max, MSS, false, Instant::ZERO);
                            r.segs.insert(max, (MSS, false));
                            max += mss;
                        }
                        if max > una && rng.below(4) == 0 {
                            let seq = una + rng.below((max - una) / mss) * mss;
                            sb.sent(seq, MSS, true, Instant::ZERO);
                            r.segs.entry(seq).or_insert((MSS, false)).1 = true;
                        }
                    }
                    4..=7 if max > una => {
                        // A SACK block of whole segments somewhere in the window.
                        let n = (max - una) / mss;
                        let s = una + rng.below(n) * mss;
                        let e = (s + (1 + rng.below(6)) * mss).min(max);
                        sb.apply_sack(&[(s, e)], una, max, dup as u32, MSS, Instant::ZERO);
                        for seq in (s..e).step_by(MSS as usize) {
                            if r.segs.contains_key(&seq) {
                                r.sacked.insert(seq);
                            }
                        }
                        r.high_sacked = r.high_sacked.max(e);
                    }
                    8 if max > una => {
                        una += rng.below((max - una) / mss + 1) * mss;
                        sb.acked(una, Instant::ZERO);
                        r.segs = r.segs.split_off(&una);
                        r.sacked = r.sacked.split_off(&una);
                        r.high_sacked = r.high_sacked.max(una);
                    }
                    9 if rng.below(5) == 0 => {
                        sb.forget(una);
                        r.sacked.clear();
                        r.high_sacked = una;
                        for v in r.segs.values_mut() {
                            v.1 = false;
                        }
                    }
                    _ => {}
                }
                let at = format!("round {round}, step {step}");
                for &seq in r.segs.keys() {
                    assert_eq!(sb.is_lost(seq), r.lost(seq, dup, mss), "{at}, {seq}");
                }
                assert_eq!(sb.pipe(), r.pipe(dup, mss), "{at}");
                let first_lost = r
                    .segs
                    .iter()
                    .find(|(&s, v)| !v.1 && r.lost(s, dup, mss))
                    .map(|(&s, _)| s);
                assert_eq!(sb.first_lost(), first_lost, "{at}");
                let first_hole = r
                    .segs
                    .iter()
                    .find(|(&s, v)| !v.1 && !r.sacked.contains(&s) && s < r.high_sacked)
                    .map(|(&s, _)| s);
                assert_eq!(sb.first_hole(), first_hole, "{at}");
            }
        }
    }
}
