//! On-demand parity in the receive window (RFC 3208 §11.5): parity NAKs by count for whole
//! transmission groups, parity packets held until the group can be rebuilt, and the copies
//! of already delivered packets that rebuilding needs.

use std::collections::BTreeMap;

use pgm_wire::Fragment;

use super::{Phase, ReceiveWindow, Slot};
use crate::fec::{self, Layout, Original};
use crate::sqn;
use crate::time::{Duration, Instant};

/// A transmission group's parity packets held while it misses data.
#[derive(Debug)]
struct Held {
    layout: Layout,
    shards: Vec<(u32, Vec<u8>)>,
}

/// The parity state of a window whose source offers on-demand parity.
#[derive(Debug)]
pub(crate) struct ParityWindow {
    k: u32,
    held: BTreeMap<u32, Held>,
    /// Copies of the received packets of groups not yet wholly delivered: rebuilding a group
    /// needs its packets that already went up to the application.
    copies: BTreeMap<u32, Vec<Option<(Vec<u8>, Option<Fragment>)>>>,
    /// When the window's lead last moved: while data flows, a gap in the group still being
    /// sent waits for the group to complete instead of NAKing selectively.
    pub(super) lead_moved: Instant,
}

/// What a parity packet did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParityInsert {
    /// Kept: the group still misses more than the parity held.
    Held,
    /// The group was rebuilt: these packets (sequence number, payload, OPT_FRAGMENT).
    Rebuilt(Vec<(u32, Vec<u8>, Option<Fragment>)>),
    /// The group misses nothing, is behind the window, or already has this parity index.
    Duplicate,
    /// Inconsistent with the group's other parity or data (length, layout): dropped.
    Malformed,
}

impl ParityWindow {
    pub(super) fn new(k: u32, now: Instant) -> ParityWindow {
        ParityWindow {
            k,
            held: BTreeMap::new(),
            copies: BTreeMap::new(),
            lead_moved: now,
        }
    }
}

impl ReceiveWindow {
    /// The source offers on-demand parity over groups of `k` (`None`: it stopped).
    pub(crate) fn set_parity(&mut self, k: Option<u32>, now: Instant) {
        match (k, &self.parity) {
            (Some(k), Some(p)) if p.k == k => {}
            (Some(k), _) => self.parity = Some(ParityWindow::new(k, now)),
            (None, _) => self.parity = None,
        }
    }

    /// The transmission group size, when the source offers parity.
    pub(crate) fn parity_k(&self) -> Option<u32> {
        self.parity.as_ref().map(|p| p.k)
    }

    /// Keeps a copy of a packet just inserted, for rebuilding its group later.
    pub(super) fn keep_copy(&mut self, s: u32, data: &[u8], fragment: Option<Fragment>) {
        let Some(p) = self.parity.as_mut() else {
            return;
        };
        let tg = fec::tg_sqn(s, p.k);
        let k = p.k as usize;
        let group = p.copies.entry(tg).or_insert_with(|| vec![None; k]);
        group[sqn::distance(tg, s) as usize] = Some((data.to_vec(), fragment));
    }

    /// Forgets copies and parity of the groups wholly delivered.
    pub(super) fn prune_parity(&mut self) {
        let base = self.base;
        let Some(p) = self.parity.as_mut() else {
            return;
        };
        let k = p.k;
        let done = |tg: &u32| sqn::le(tg.wrapping_add(k), base);
        p.copies.retain(|tg, _| !done(tg));
        p.held.retain(|tg, _| !done(tg));
    }

    /// Data packet `s`, if received: from the window, or from the copies once delivered.
    fn original(&self, s: u32) -> Option<Original<'_>> {
        if !sqn::lt(s, self.base) {
            return match self.slots.get(self.index(s)?)? {
                Slot::Have { data, fragment } => Some(Original {
                    payload: data,
                    fragment: *fragment,
                }),
                _ => None,
            };
        }
        let p = self.parity.as_ref()?;
        let tg = fec::tg_sqn(s, p.k);
        let (data, fragment) = p.copies.get(&tg)?[sqn::distance(tg, s) as usize].as_ref()?;
        Some(Original {
            payload: data,
            fragment: *fragment,
        })
    }

    /// Packets group `tg` still needs before it can be rebuilt: `k` less its data received
    /// and parity held.
    fn needed(&self, tg: u32) -> u32 {
        let Some(p) = self.parity.as_ref() else {
            return 0;
        };
        let have = (0..p.k)
            .filter(|&i| self.original(tg.wrapping_add(i)).is_some())
            .count() as u32;
        let parity = p.held.get(&tg).map_or(0, |h| h.shards.len() as u32);
        p.k.saturating_sub(have + parity)
    }

    /// True when the group holding `s` may be asked for parity: its last packet exists
    /// (the lead reached it), so every loss in it is known.
    fn group_complete(&self, s: u32) -> Option<u32> {
        let k = self.parity.as_ref()?.k;
        let tg = fec::tg_sqn(s, k);
        (!sqn::lt(self.lead(), tg.wrapping_add(k - 1))).then_some(tg)
    }

    /// Splits the sequence numbers whose NAK back-off expired (`due`, in order) into
    /// selective NAKs (left in `due`) and parity NAKs (`TG_SQN | (count - 1)`, into
    /// `parity`). A gap in a complete group asks for parity for the whole group, and every
    /// missing packet of it then waits for the NCF. A gap in the group still being sent waits
    /// (backing off again) while the lead keeps moving; once the data pauses it is NAKed
    /// selectively, as RFC 3208 §11.5 allows for a partial group.
    pub(super) fn split_parity_naks(
        &mut self,
        now: Instant,
        due: &mut Vec<u32>,
        parity: &mut Vec<u32>,
        rpt_ivl: Duration,
        defer_until: Instant,
        pause: Duration,
    ) {
        let Some(p) = self.parity.as_ref() else {
            return;
        };
        let flowing = now.saturating_duration_since(p.lead_moved) < pause;
        let mut selective = Vec::new();
        let mut groups: Vec<u32> = Vec::new();
        for &s in due.iter() {
            match self.group_complete(s) {
                Some(tg) => {
                    if groups.last() != Some(&tg) {
                        groups.push(tg);
                    }
                }
                None if flowing => self.set_phase(s, Phase::BackOff, defer_until),
                None => selective.push(s),
            }
        }
        *due = selective;
        let k = self.parity.as_ref().map_or(1, |p| p.k);
        for tg in groups {
            let needed = self.needed(tg);
            for i in 0..k {
                let s = tg.wrapping_add(i);
                if needed > 0 {
                    self.set_phase(s, Phase::WaitNcf, now + rpt_ivl);
                } else {
                    self.set_phase(s, Phase::WaitData, now + rpt_ivl);
                }
            }
            if needed > 0 {
                parity.push(tg.wrapping_add(needed.min(k) - 1));
            }
        }
    }

    /// Moves a missing slot to `phase` until `deadline` (nothing if it is not missing).
    fn set_phase(&mut self, s: u32, phase: Phase, deadline: Instant) {
        if let Some(Slot::Missing(st)) = self.index(s).and_then(|i| self.slots.get_mut(i)) {
            st.phase = phase;
            st.deadline = deadline;
        }
    }

    /// A parity NCF, or another receiver's parity NAK, for `count` packets of group `tg`:
    /// when it covers what this receiver needs, its missing packets of the group wait for
    /// data (suppressing a NAK still backing off; `peer` NAKs only do that). Returns the
    /// number of NAKs suppressed.
    pub(crate) fn on_parity_ncf(
        &mut self,
        tg: u32,
        count: u32,
        now: Instant,
        rdata_ivl: Duration,
        peer: bool,
    ) -> u32 {
        let Some(k) = self.parity_k() else {
            return 0;
        };
        if fec::tg_sqn(tg, k) != tg || self.needed(tg) > count {
            return 0;
        }
        let mut suppressed = 0;
        for i in 0..k {
            let s = tg.wrapping_add(i);
            let Some(Slot::Missing(st)) = self.index(s).and_then(|i| self.slots.get_mut(i)) else {
                continue;
            };
            if st.phase == Phase::BackOff {
                suppressed += 1;
            } else if peer {
                continue;
            }
            st.phase = Phase::WaitData;
            st.deadline = now + rdata_ivl;
        }
        suppressed
    }

    /// A parity packet: index `j` of group `tg`, `shard` its payload followed by its encoded
    /// OPT_FRAGMENT body when `layout.frag`. Rebuilds the group when it can.
    pub(crate) fn insert_parity(
        &mut self,
        tg: u32,
        j: u32,
        layout: Layout,
        shard: Vec<u8>,
    ) -> ParityInsert {
        let Some(k) = self.parity_k() else {
            return ParityInsert::Duplicate;
        };
        let behind = sqn::le(tg.wrapping_add(k), self.base);
        if behind || j >= k || self.needed(tg) == 0 {
            return ParityInsert::Duplicate;
        }
        if shard.len() != layout.shard_len() {
            return ParityInsert::Malformed;
        }
        let Some(p) = self.parity.as_mut() else {
            return ParityInsert::Duplicate;
        };
        let held = p.held.entry(tg).or_insert_with(|| Held {
            layout,
            shards: Vec::new(),
        });
        if held.layout != layout {
            return ParityInsert::Malformed;
        }
        if held.shards.iter().any(|(i, _)| *i == j) {
            return ParityInsert::Duplicate;
        }
        held.shards.push((j, shard));
        if self.needed(tg) > 0 {
            return ParityInsert::Held;
        }
        self.rebuild(tg)
    }

    /// Rebuilds group `tg` from its data and parity; the parity is dropped either way.
    fn rebuild(&mut self, tg: u32) -> ParityInsert {
        let Some(k) = self.parity_k() else {
            return ParityInsert::Duplicate;
        };
        let Some(held) = self.parity.as_mut().and_then(|p| p.held.remove(&tg)) else {
            return ParityInsert::Duplicate;
        };
        let layout = held.layout;
        let data: Option<Vec<Option<Vec<u8>>>> = (0..k)
            .map(|i| match self.original(tg.wrapping_add(i)) {
                Some(o) => layout.shard(&o).map(Some),
                None => Some(None),
            })
            .collect();
        let Some(data) = data else {
            // A received packet does not fit the parity's layout: the parity is wrong.
            return ParityInsert::Malformed;
        };
        let rebuilt = fec::decode(k as usize, layout.shard_len(), data, &held.shards);
        let Some(rebuilt) = rebuilt else {
            return ParityInsert::Malformed;
        };
        let mut out = Vec::with_capacity(rebuilt.len());
        for (i, shard) in rebuilt {
            let Some((payload, fragment)) = layout.unshard(&shard) else {
                return ParityInsert::Malformed;
            };
            out.push((tg.wrapping_add(i as u32), payload, fragment));
        }
        ParityInsert::Rebuilt(out)
    }
}
