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
    /// `IsLost` per RFC 6675 (SACK variant only).
    lost: bool,
    /// Retransmitted during the current SACK recovery (counts in `pipe`).
    rexmit_in_recovery: bool,
}

/// Outstanding segments by sequence number.
#[derive(Debug, Clone, Default)]
pub(super) struct Scoreboard {
    segs: BTreeMap<u64, Seg>,
    /// Highest byte covered by a SACK block (exclusive).
    high_sacked: u64,
}

impl Scoreboard {
    /// The segment `[seq, seq + len)` was sent; a retransmission during SACK recovery
    /// (`rexmit_in_recovery`) counts in `pipe` until recovery ends.
    pub(super) fn sent(&mut self, seq: u64, len: u32, rexmit_in_recovery: bool) {
        let seg = self.segs.entry(seq).or_insert(Seg {
            len,
            sacked: false,
            lost: false,
            rexmit_in_recovery: false,
        });
        seg.rexmit_in_recovery |= rexmit_in_recovery;
    }

    /// Everything below `ack` is cumulatively acknowledged.
    pub(super) fn acked(&mut self, ack: u64) {
        let keep = self.segs.split_off(&ack);
        self.segs = keep;
        self.high_sacked = self.high_sacked.max(ack);
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
            for (&seq, seg) in self.segs.range_mut(s..e) {
                if seq + u64::from(seg.len) <= e {
                    seg.sacked = true;
                }
            }
            self.high_sacked = self.high_sacked.max(e.min(snd_max));
        }
        self.update_lost(dupack_threshold, mss);
    }

    /// RFC 6675 `IsLost` for every unSACKed segment, walking down from the top.
    fn update_lost(&mut self, dupack_threshold: u32, mss: u32) {
        let dup = u64::from(dupack_threshold.max(1));
        let limit = (dup - 1) * u64::from(mss);
        let mut sacked_bytes = 0u64;
        let mut sacked_segs = 0u64;
        for seg in self.segs.values_mut().rev() {
            if seg.sacked {
                sacked_bytes += u64::from(seg.len);
                sacked_segs += 1;
                seg.lost = false;
            } else {
                seg.lost = sacked_bytes > limit || sacked_segs >= dup;
            }
        }
    }

    /// Whether the segment at `seq` is considered lost.
    pub(super) fn is_lost(&self, seq: u64) -> bool {
        self.segs.get(&seq).is_some_and(|s| s.lost)
    }

    /// RFC 6675 `SetPipe`.
    pub(super) fn pipe(&self) -> u64 {
        let mut pipe = 0u64;
        for seg in self.segs.values().filter(|s| !s.sacked) {
            if !seg.lost {
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
            .iter()
            .find(|(_, s)| !s.sacked && s.lost && !s.rexmit_in_recovery)
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
            s.lost = false;
            s.rexmit_in_recovery = false;
        }
        self.high_sacked = snd_una;
    }
}
