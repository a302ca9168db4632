//! On-demand parity at the source (RFC 3208 §11.4): parity NAKs ask for a number of parity
//! packets of a transmission group; the source confirms them with a parity NCF and sends that
//! many new parity packets, consolidating requests for the same group.

use std::collections::{HashMap, VecDeque};

use crate::fec::{self, Layout, Original};
use crate::sqn;
use crate::time::{Duration, Instant};

use super::txw::TransmitWindow;

/// One transmission group's repair state.
#[derive(Debug, Default)]
struct Group {
    /// Parity packets still to send.
    pending: u32,
    /// Parity index the next packet gets (modulo the group size).
    next: u32,
    /// Encoded parity waiting to go: index and shard.
    ready: VecDeque<(u32, Vec<u8>)>,
    /// Parity shards `0..encoded.len()` of the group, kept while it is in the window: the
    /// encoder computes every shard up to the highest index asked for, so a group repaired
    /// a few packets at a time (a request granted in part) would otherwise encode the same
    /// shards again for each part. Grown by doubling; at most `k` shards, as the window's
    /// own copy of the group.
    encoded: Vec<Vec<u8>>,
    layout: Option<Layout>,
    /// When the latest parity packet of the group went out, and how many went in that burst
    /// (the repair hold-off's clock).
    sent_at: Option<Instant>,
    burst: u32,
    /// Parity NAKs received for the group (saturating).
    naks: u16,
}

/// What a parity NAK for one group comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Queue the group (first request since its last burst) and confirm `count` packets.
    Queue { count: u32 },
    /// Already queued; confirm `count` packets (the pending count, raised if asked for more).
    Confirm { count: u32, raised: bool },
    /// Within the hold-off of a burst at least as large: sent before that burst arrived.
    HeldOff,
    /// The group is not wholly sent, or no longer in the window.
    OutsideWindow,
}

/// The parity packet [`ParityRepairs::next`] hands out.
#[derive(Debug)]
pub(super) struct ParityPacket {
    pub(super) sqn: u32,
    pub(super) layout: Layout,
    pub(super) shard: Vec<u8>,
}

/// Parity repair state of the groups in the transmit window.
#[derive(Debug)]
pub(super) struct ParityRepairs {
    k: u32,
    groups: HashMap<u32, Group>,
}

impl ParityRepairs {
    pub(super) fn new(k: u32) -> ParityRepairs {
        ParityRepairs {
            k,
            groups: HashMap::new(),
        }
    }

    /// The transmission group size.
    pub(super) fn tg_size(&self) -> u32 {
        self.k
    }

    /// A parity NAK `TG_SQN | (count - 1)` arrived; `holdoff` as for selective repairs.
    /// Returns the verdict and whether this is the group's first or second NAK (for the
    /// suppression counters).
    pub(super) fn on_nak(
        &mut self,
        now: Instant,
        nak_sqn: u32,
        txw: &TransmitWindow,
        holdoff: Option<Duration>,
    ) -> (Verdict, u16) {
        let tg = fec::tg_sqn(nak_sqn, self.k);
        let count = nak_sqn.wrapping_sub(tg) + 1;
        let last = tg.wrapping_add(self.k - 1);
        if txw.get_sent(tg).is_none() || txw.get_sent(last).is_none() {
            return (Verdict::OutsideWindow, 0);
        }
        let g = self.groups.entry(tg).or_default();
        g.naks = g.naks.saturating_add(1);
        let naks = g.naks;
        if let (Some(h), Some(t)) = (holdoff, g.sent_at) {
            if g.pending == 0 && now < t + h && count <= g.burst {
                return (Verdict::HeldOff, naks);
            }
        }
        if g.pending == 0 {
            g.pending = count;
            g.burst = 0;
            return (Verdict::Queue { count }, naks);
        }
        let raised = count > g.pending;
        g.pending = g.pending.max(count);
        (
            Verdict::Confirm {
                count: g.pending,
                raised,
            },
            naks,
        )
    }

    /// Group `tg` has just been sent in full: `h` pro-active parity packets are to follow
    /// (RFC 3208 §11.4), with the group's first parity indices. Returns whether the group
    /// must be queued (it had nothing pending).
    pub(super) fn proactive(&mut self, tg: u32, h: u32) -> bool {
        let h = h.min(self.k);
        if h == 0 {
            return false;
        }
        let g = self.groups.entry(tg).or_default();
        let queue = g.pending == 0;
        g.pending += h;
        g.burst = 0;
        queue
    }

    /// Bytes of the next parity packet's payload of `tg` (an estimate before it is encoded).
    pub(super) fn next_len(&self, tg: u32, max: usize) -> usize {
        self.groups
            .get(&tg)
            .and_then(|g| g.layout)
            .map_or(max, |l| l.parity_payload_len())
    }

    /// The next parity packet of `tg`, encoding the pending ones on first use. `None` (and
    /// the group forgotten) when it can no longer be encoded. The second value says whether
    /// more are pending after this one.
    pub(super) fn next(&mut self, tg: u32, txw: &TransmitWindow) -> Option<(ParityPacket, bool)> {
        let k = self.k;
        let g = self.groups.get_mut(&tg)?;
        if g.pending == 0 {
            return None;
        }
        if g.ready.is_empty() {
            let indices: Vec<u32> = (0..g.pending.min(k)).map(|i| (g.next + i) % k).collect();
            let top = indices.iter().map(|&j| j as usize + 1).max().unwrap_or(0);
            if g.encoded.len() < top {
                let upto = top.max(2 * g.encoded.len()).min(k as usize) as u32;
                let packets: Option<Vec<Original<'_>>> = (0..k)
                    .map(|i| {
                        txw.get_sent(tg.wrapping_add(i)).map(|p| Original {
                            payload: &p.data,
                            fragment: p.fragment,
                        })
                    })
                    .collect();
                let all: Vec<u32> = (0..upto).collect();
                let encoded = packets.and_then(|p| fec::encode(&p, &all));
                let Some((layout, shards)) = encoded else {
                    self.groups.remove(&tg);
                    return None;
                };
                g.layout = Some(layout);
                g.encoded = shards;
            }
            let shards: Option<Vec<(u32, Vec<u8>)>> = indices
                .into_iter()
                .map(|j| g.encoded.get(j as usize).map(|sh| (j, sh.clone())))
                .collect();
            let Some(shards) = shards else {
                self.groups.remove(&tg);
                return None;
            };
            g.ready = shards.into();
        }
        let (index, shard) = g.ready.pop_front()?;
        let layout = g.layout?;
        Some((
            ParityPacket {
                sqn: tg.wrapping_add(index),
                layout,
                shard,
            },
            g.pending > 1,
        ))
    }

    /// The parity packet `next` handed out has gone.
    pub(super) fn sent(&mut self, now: Instant, tg: u32) {
        if let Some(g) = self.groups.get_mut(&tg) {
            g.pending = g.pending.saturating_sub(1);
            g.next = (g.next + 1) % self.k;
            g.sent_at = Some(now);
            g.burst += 1;
            if g.pending == 0 {
                g.ready.clear();
            }
        }
    }

    /// Forgets the groups whose first packet left the window (no parity for them).
    pub(super) fn forget_before(&mut self, trail: u32) -> bool {
        let before = self.groups.len();
        self.groups.retain(|&tg, _| !sqn::lt(tg, trail));
        self.groups.len() != before
    }

    /// True when `tg` still has parity to send.
    pub(super) fn is_pending(&self, tg: u32) -> bool {
        self.groups.get(&tg).is_some_and(|g| g.pending > 0)
    }
}
