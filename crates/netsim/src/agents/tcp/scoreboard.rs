//! The RFC 6675 SACK scoreboard: every sent, not yet cumulatively acknowledged segment,
//! which of them SACK blocks cover, `IsLost`, `pipe`, and the holes `NextSeg` picks from.
//! Reno and NewReno keep it too (it is where segment lengths live) but never mark it.

use std::collections::BTreeMap;

/// One sent, not yet cumulatively acknowledged segment.
#[derive(Debug, Clone, Copy)]
struct Seg {
    len: u32,
    /// Covered by a SACK block.
    sacked: bool,
    /// Retransmitted during the current SACK recovery (counts in `pipe`).
    rexmit_in_recovery: bool,
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
}

impl Scoreboard {
    /// The segment `[seq, seq + len)` was sent; a retransmission during SACK recovery
    /// (`rexmit_in_recovery`) counts in `pipe` until recovery ends.
    pub(super) fn sent(&mut self, seq: u64, len: u32, rexmit_in_recovery: bool) {
        let seg = self.segs.entry(seq).or_insert(Seg {
            len,
            sacked: false,
            rexmit_in_recovery: false,
        });
        seg.rexmit_in_recovery |= rexmit_in_recovery;
    }

    /// Everything below `ack` is cumulatively acknowledged.
    pub(super) fn acked(&mut self, ack: u64) {
        let keep = self.segs.split_off(&ack);
        self.segs = keep;
        self.high_sacked = self.high_sacked.max(ack);
        let mut covered = self.covered.split_off(&ack);
        if let Some((_, &e)) = self.covered.iter().next_back() {
            if e > ack {
                covered.insert(ack, e);
            }
        }
        self.covered = covered;
    }

    /// Applies the SACK blocks of an ACK (clipped to `snd_una..snd_max`), then `IsLost`.
    pub(super) fn apply_sack(
        &mut self,
        sack: &[(u64, u64)],
        snd_una: u64,
        snd_max: u64,
        dupack_threshold: u32,
        mss: u32,
    ) {
        for &(s, e) in sack {
            let s = s.max(snd_una);
            if e <= s {
                continue;
            }
            for (gs, ge) in self.cover(s, e) {
                for (&seq, seg) in self.segs.range_mut(gs..ge) {
                    if seq + u64::from(seg.len) <= e {
                        seg.sacked = true;
                    }
                }
            }
            self.high_sacked = self.high_sacked.max(e.min(snd_max));
        }
        self.update_lost(dupack_threshold, mss);
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
        seq < self.lost_below && self.segs.get(&seq).is_some_and(|s| !s.sacked)
    }

    /// RFC 6675 `SetPipe`.
    pub(super) fn pipe(&self) -> u64 {
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

    /// `NextSeg` rule (1): the first lost segment not yet retransmitted in this recovery.
    pub(super) fn first_lost(&self) -> Option<u64> {
        self.segs
            .range(..self.lost_below)
            .find(|(_, s)| !s.sacked && !s.rexmit_in_recovery)
            .map(|(&seq, _)| seq)
    }

    /// `NextSeg` rule (3): the first unSACKed hole below the highest SACKed byte, not yet
    /// retransmitted in this recovery.
    pub(super) fn first_hole(&self) -> Option<u64> {
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
                            sb.sent(max, MSS, false);
                            r.segs.insert(max, (MSS, false));
                            max += mss;
                        }
                        if max > una && rng.below(4) == 0 {
                            let seq = una + rng.below((max - una) / mss) * mss;
                            sb.sent(seq, MSS, true);
                            r.segs.entry(seq).or_insert((MSS, false)).1 = true;
                        }
                    }
                    4..=7 if max > una => {
                        // A SACK block of whole segments somewhere in the window.
                        let n = (max - una) / mss;
                        let s = una + rng.below(n) * mss;
                        let e = (s + (1 + rng.below(6)) * mss).min(max);
                        sb.apply_sack(&[(s, e)], una, max, dup as u32, MSS);
                        for seq in (s..e).step_by(MSS as usize) {
                            if r.segs.contains_key(&seq) {
                                r.sacked.insert(seq);
                            }
                        }
                        r.high_sacked = r.high_sacked.max(e);
                    }
                    8 if max > una => {
                        una += rng.below((max - una) / mss + 1) * mss;
                        sb.acked(una);
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
