//! On-demand parity in the receive window (RFC 3208 §11.5): parity NAKs by count for whole
//! transmission groups, parity packets held until the group can be rebuilt, and the copies
//! of already delivered packets that rebuilding needs.

use std::collections::{BTreeMap, BTreeSet};

use pgm_wire::Fragment;

use super::{NakTimers, Phase, ReceiveWindow, Slot};
use crate::fec::{self, Layout, Original};
use crate::sqn;
use crate::time::{Duration, Instant};

/// Signed mode: parity NAKs a group is sent with neither an NCF nor a parity packet from the
/// source before its gaps are asked for selectively. Unverified packets (forgeries among
/// them) can push a signed window's lead past the source's, so that a group the receiver
/// takes for complete is not (the session's last, partial one): the source cannot answer
/// its parity NAKs, but answers selective ones. (In plain mode every packet is taken as the
/// source's, and a source that holds back NCFs, its per-source share spent, is asked again
/// as before.)
const PARITY_NAK_TRIES: u8 = 3;

/// A transmission group's parity packets held while it misses data.
#[derive(Debug)]
struct Held {
    layout: Layout,
    shards: Vec<(u32, Vec<u8>)>,
    /// A parity index already held came again while the group still missed packets: the
    /// source's indices have wrapped (a parity packet's sequence number numbers it modulo
    /// `k`, RFC 3208 §11.2; we do not send OPT_PARITY_GRP, which OpenPGM defines but does
    /// not read), so more parity may repeat what is held. The group's next NAK asks
    /// selectively instead.
    wrapped: bool,
}

/// A received data packet: payload and OPT_FRAGMENT.
type Received = (Vec<u8>, Option<Fragment>);

/// The parity state of a window whose source offers on-demand parity.
#[derive(Debug)]
pub(crate) struct ParityWindow {
    k: u32,
    held: BTreeMap<u32, Held>,
    /// Copies of the received packets of groups not yet wholly delivered: rebuilding a group
    /// needs its packets that already went up to the application.
    copies: BTreeMap<u32, Vec<Option<Received>>>,
    /// Groups whose rebuild failed: a packet held in them is not the source's (in signed
    /// mode, a forgery waiting unverified for its list, which may be the packet missing), so
    /// parity cannot rebuild them. Their gaps are asked for selectively from then on.
    poisoned: BTreeSet<u32>,
    /// Parity NAKs sent for each group not yet rebuilt since the source last confirmed one
    /// ([`PARITY_NAK_TRIES`]).
    asked: BTreeMap<u32, u8>,
    /// When the window's lead last moved: while data flows, a gap in the group still being
    /// sent waits for the group to complete instead of NAKing selectively.
    pub(super) lead_moved: Instant,
}

/// How a gap is asked for.
enum Group {
    /// Its group is complete: parity for the group starting here.
    Complete(u32),
    /// Its group is still being sent.
    Partial,
    /// Selectively: its group began before the window did.
    Selective,
}

/// What a parity packet did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParityInsert {
    /// Kept: the group still misses more than the parity held.
    Held,
    /// The group was rebuilt: these sequence numbers were filled, and `malformed` rebuilt
    /// packets were dropped (an OPT_FRAGMENT that does not fit its packet).
    Rebuilt { filled: Vec<u32>, malformed: u32 },
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
            poisoned: BTreeSet::new(),
            asked: BTreeMap::new(),
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

    /// Forgets the copy of `s` (signed mode: it failed verification).
    pub(super) fn forget_copy(&mut self, s: u32) {
        let Some(p) = self.parity.as_mut() else {
            return;
        };
        let tg = fec::tg_sqn(s, p.k);
        if let Some(slot) = p
            .copies
            .get_mut(&tg)
            .and_then(|g| g.get_mut(sqn::distance(tg, s) as usize))
        {
            *slot = None;
        }
    }

    /// Bytes of parity copies and held parity packets.
    pub(super) fn parity_bytes_held(&self) -> u64 {
        let Some(p) = self.parity.as_ref() else {
            return 0;
        };
        let copies: u64 = p
            .copies
            .values()
            .flatten()
            .flatten()
            .map(|(d, _)| d.len() as u64)
            .sum();
        let held: u64 = p
            .held
            .values()
            .flat_map(|h| h.shards.iter())
            .map(|(_, d)| d.len() as u64)
            .sum();
        copies + held
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
        p.poisoned.retain(|tg| !done(tg));
        p.asked.retain(|tg, _| !done(tg));
    }

    /// Data packet `s`, if received: from the window, or from the copies once delivered.
    fn original(&self, s: u32) -> Option<Original<'_>> {
        if !sqn::lt(s, self.base) {
            return match self.slots.get(self.index(s)?)? {
                Slot::Have { data, fragment, .. } => Some(Original {
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

    /// How a gap at `s` is asked for.
    fn group_of(&self, s: u32) -> Group {
        let Some(k) = self.parity_k() else {
            return Group::Selective;
        };
        let tg = fec::tg_sqn(s, k);
        let poisoned = self
            .parity
            .as_ref()
            .is_some_and(|p| p.poisoned.contains(&tg));
        if sqn::lt(tg, self.origin) || poisoned {
            // The group began before this receiver joined (it cannot have its other
            // packets), or parity failed to rebuild it.
            Group::Selective
        } else if sqn::lt(self.lead(), tg.wrapping_add(k - 1)) {
            Group::Partial
        } else {
            // Its last packet exists (the lead reached it): every loss in it is known.
            Group::Complete(tg)
        }
    }

    /// Splits the sequence numbers whose NAK back-off expired (`due`, in order) into
    /// selective NAKs (left in `due`) and parity NAKs (`TG_SQN | (count - 1)`, into
    /// `parity`). A gap in a complete group asks for parity for the whole group, and every
    /// missing packet of it then waits for the NCF. A gap in the group still being sent waits
    /// (backing off again) while the lead keeps moving, for at most `max_wait` since it was
    /// found; once the data pauses, or a slow session would keep it waiting longer, it is
    /// NAKed selectively, as RFC 3208 §11.5 allows for a partial group. A complete group
    /// whose parity indices have wrapped ([`Held`]) asks selectively for as many of its
    /// missing packets as it needs, the first ones: the source has sent every index it can
    /// number, so more parity may only repeat what is held, while each data packet counts.
    pub(super) fn split_parity_naks(
        &mut self,
        now: Instant,
        due: &mut Vec<u32>,
        parity: &mut Vec<u32>,
        t: &NakTimers,
        defer_until: Instant,
    ) {
        // Data pauses when the lead stood still for one NCF wait; a gap waits for its group
        // at most two (four group RTTs).
        let (rpt_ivl, pause, max_wait) = (t.rpt_ivl, t.rpt_ivl, t.rpt_ivl * 2);
        let Some(p) = self.parity.as_ref() else {
            return;
        };
        let flowing = now.saturating_duration_since(p.lead_moved) < pause;
        let mut selective = Vec::new();
        let mut groups: Vec<u32> = Vec::new();
        for &s in due.iter() {
            match self.group_of(s) {
                Group::Complete(tg) => {
                    if groups.last() != Some(&tg) {
                        groups.push(tg);
                    }
                }
                Group::Partial if flowing && self.missing_for(s, now) < max_wait => {
                    self.set_phase(s, Phase::BackOff, defer_until)
                }
                Group::Partial | Group::Selective => selective.push(s),
            }
        }
        let k = self.parity.as_ref().map_or(1, |p| p.k);
        for tg in groups {
            let needed = self.needed(tg);
            let wrapped = self.wrapped(tg);
            let mut ask = if wrapped { needed } else { 0 };
            for i in 0..k {
                let s = tg.wrapping_add(i);
                if ask > 0 && self.is_missing(s) {
                    // The first `needed` missing packets, selectively: any `needed` of them
                    // complete the group.
                    ask -= 1;
                    selective.push(s);
                    self.set_phase(s, Phase::WaitNcf, now + rpt_ivl);
                } else if needed > 0 && !wrapped {
                    self.set_phase(s, Phase::WaitNcf, now + rpt_ivl);
                } else {
                    self.set_phase(s, Phase::WaitData, now + rpt_ivl);
                }
            }
            if needed > 0 && !wrapped {
                parity.push(tg.wrapping_add(needed.min(k) - 1));
                let signed = self.signed.is_some();
                if let Some(p) = self.parity.as_mut().filter(|_| signed) {
                    let tries = p.asked.entry(tg).or_insert(0);
                    *tries = tries.saturating_add(1);
                    if *tries >= PARITY_NAK_TRIES {
                        // Its next NAK is selective.
                        p.poisoned.insert(tg);
                    }
                }
            }
        }
        let base = self.base;
        selective.sort_by_key(|&s| s.wrapping_sub(base));
        selective.dedup();
        *due = selective;
    }

    /// Whether group `tg`'s parity indices have wrapped at this receiver (see [`Held`]).
    fn wrapped(&self, tg: u32) -> bool {
        self.parity
            .as_ref()
            .and_then(|p| p.held.get(&tg))
            .is_some_and(|h| h.wrapped)
    }

    /// How long slot `s` has been missing (zero if it is not).
    fn missing_for(&self, s: u32, now: Instant) -> Duration {
        match self.index(s).and_then(|i| self.slots.get(i)) {
            Some(Slot::Missing(st)) => now.saturating_duration_since(st.since),
            _ => Duration::ZERO,
        }
    }

    /// Whether slot `s` is missing.
    fn is_missing(&self, s: u32) -> bool {
        matches!(
            self.index(s).and_then(|i| self.slots.get(i)),
            Some(Slot::Missing(_))
        )
    }

    /// Moves a missing slot to `phase` until `deadline` (nothing if it is not missing).
    fn set_phase(&mut self, s: u32, phase: Phase, deadline: Instant) {
        if let Some(Slot::Missing(st)) = self.index(s).and_then(|i| self.slots.get_mut(i)) {
            st.phase = phase;
            st.deadline = deadline;
            super::lower(&mut self.earliest, deadline);
        }
    }

    /// A parity NCF, or another receiver's parity NAK, for `count` packets of group `tg`:
    /// when it covers what this receiver needs, its missing packets of the group wait for
    /// data (suppressing a NAK still backing off, unless `suppress` is false; `peer` NAKs
    /// only suppress). Returns the number of NAKs suppressed.
    pub(crate) fn on_parity_ncf(
        &mut self,
        tg: u32,
        count: u32,
        now: Instant,
        rdata_ivl: Duration,
        peer: bool,
        suppress: bool,
    ) -> u32 {
        let Some(k) = self.parity_k() else {
            return 0;
        };
        if fec::tg_sqn(tg, k) != tg {
            return 0;
        }
        if !peer {
            // The source answers this group's parity NAKs, if only in part: it is still
            // repairing the group.
            if let Some(p) = self.parity.as_mut() {
                p.asked.remove(&tg);
            }
            for i in 0..k {
                let s = tg.wrapping_add(i);
                if let Some(Slot::Missing(st)) = self.index(s).and_then(|i| self.slots.get_mut(i)) {
                    st.confirmed = true;
                }
            }
        }
        if self.needed(tg) > count {
            return 0;
        }
        let mut suppressed = 0;
        for i in 0..k {
            let s = tg.wrapping_add(i);
            let Some(Slot::Missing(st)) = self.index(s).and_then(|i| self.slots.get_mut(i)) else {
                continue;
            };
            if st.phase == Phase::BackOff {
                if !suppress {
                    continue;
                }
                suppressed += 1;
            } else if peer {
                continue;
            }
            st.phase = Phase::WaitData;
            st.deadline = now + rdata_ivl;
            super::lower(&mut self.earliest, st.deadline);
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
        // The source answers this group's parity NAKs.
        p.asked.remove(&tg);
        let held = p.held.entry(tg).or_insert_with(|| Held {
            layout,
            shards: Vec::new(),
            wrapped: false,
        });
        if held.layout != layout {
            return ParityInsert::Malformed;
        }
        if held.shards.iter().any(|(i, _)| *i == j) {
            held.wrapped = true;
            return ParityInsert::Duplicate;
        }
        held.shards.push((j, shard));
        if self.needed(tg) > 0 {
            // A group that lost many packets fills all at once, when its last parity packet
            // arrives; each one held before is progress on its oldest gap, or a receiver
            // working through a large backlog group by group would give up on the groups
            // still collecting parity while smaller, newer ones are rebuilt.
            if let Some(since) = self.oldest_missing(tg, k) {
                self.progress(since);
            }
            return ParityInsert::Held;
        }
        self.rebuild(tg)
    }

    /// Rebuilds the group of data packet `s` if parity is held for it and it has become
    /// complete enough (a repair or late packet arrived after the parity).
    pub(crate) fn rebuild_if_ready(&mut self, s: u32) -> Option<ParityInsert> {
        let k = self.parity_k()?;
        let tg = fec::tg_sqn(s, k);
        let held = self.parity.as_ref()?.held.contains_key(&tg);
        (held && self.needed(tg) == 0).then(|| self.rebuild(tg))
    }

    /// Rebuilds group `tg` from its data and parity and fills its missing slots; the
    /// parity is dropped either way. A rebuild that yields packets that do not fit, or that
    /// signed mode refuses, poisons the group: a packet held in it is not the source's.
    fn rebuild(&mut self, tg: u32) -> ParityInsert {
        let (r, refused) = self.try_rebuild(tg);
        let failed = refused
            || match &r {
                ParityInsert::Malformed => true,
                ParityInsert::Rebuilt { malformed, .. } => *malformed > 0,
                _ => false,
            };
        if failed {
            if let Some(p) = self.parity.as_mut() {
                p.poisoned.insert(tg);
            }
        }
        r
    }

    /// [`ReceiveWindow::rebuild`]'s work; also says whether signed mode refused a rebuilt
    /// packet.
    fn try_rebuild(&mut self, tg: u32) -> (ParityInsert, bool) {
        let Some(k) = self.parity_k() else {
            return (ParityInsert::Duplicate, false);
        };
        let Some(held) = self.parity.as_mut().and_then(|p| p.held.remove(&tg)) else {
            return (ParityInsert::Duplicate, false);
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
            return (ParityInsert::Malformed, false);
        };
        let rebuilt = fec::decode(k as usize, layout.shard_len(), data, &held.shards);
        let Some(rebuilt) = rebuilt else {
            return (ParityInsert::Malformed, false);
        };
        let mut out = Vec::with_capacity(rebuilt.len());
        for (i, shard) in rebuilt {
            let Some(packet) = layout.unshard(&shard) else {
                return (ParityInsert::Malformed, false);
            };
            out.push((tg.wrapping_add(i as u32), packet));
        }
        let (mut filled, mut malformed, mut refused) = (Vec::with_capacity(out.len()), 0, false);
        for (q, (payload, fragment)) in out {
            let sane = fragment
                .is_none_or(|f| super::fragment_is_sane(&f, payload.len(), q, self.max_apdu));
            if !sane {
                malformed += 1;
            } else {
                match self.insert(q, &payload, fragment) {
                    super::Insert::New => filled.push(q),
                    super::Insert::Forged => refused = true,
                    super::Insert::Duplicate => {}
                }
            }
        }
        (ParityInsert::Rebuilt { filled, malformed }, refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receiver::rxw::Output;
    use crate::rng::Rng;

    fn timers() -> NakTimers {
        NakTimers {
            bo_ivl: Duration::from_millis(50),
            bo_lambda: None,
            rpt_ivl: Duration::from_millis(200),
            rdata_ivl: Duration::from_millis(200),
            give_up: Duration::from_secs(30),
            bo_grtts: Some(4.0),
        }
    }

    fn payload(i: u32) -> Vec<u8> {
        (0..100 + 10 * i).map(|b| (b * 3 + i * 7) as u8).collect()
    }

    /// An empty window of groups of 4 with parity, and parity index 1 of group 0..4.
    fn group_of_four() -> (ReceiveWindow, Layout, Vec<u8>) {
        let mut w = ReceiveWindow::new(0, 0, 64, 65535);
        w.set_parity(Some(4), Instant::ZERO);
        let data: Vec<Vec<u8>> = (0..4).map(payload).collect();
        let group: Vec<Original<'_>> = data
            .iter()
            .map(|p| Original {
                payload: p,
                fragment: None,
            })
            .collect();
        let (layout, mut parity) = fec::encode(&group, &[1]).unwrap();
        (w, layout, parity.remove(0))
    }

    /// Group 0..4 with packets 1 and 2 lost, parity index 1 of it.
    fn setup() -> (ReceiveWindow, Layout, Vec<u8>, Instant) {
        let now = Instant::ZERO;
        let (mut w, layout, parity) = group_of_four();
        let (t, mut rng) = (timers(), Rng::new(1));
        for s in [0u32, 3] {
            w.extend_to(s, now, &t, &mut rng);
            assert_eq!(w.insert(s, &payload(s), None), super::super::Insert::New);
        }
        (w, layout, parity, now)
    }

    fn delivered(w: &mut ReceiveWindow) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        w.drain(&mut out);
        out.into_iter()
            .map(|o| match o {
                Output::Apdu { data, .. } => data,
                Output::Lost { .. } => panic!("lost"),
            })
            .collect()
    }

    /// With packets 0 and 3 and one parity packet held, a repair of packet 1 rebuilds
    /// packet 2 and the whole group goes up.
    fn repair_1_completes_the_group(w: &mut ReceiveWindow) {
        assert_eq!(w.insert(1, &payload(1), None), super::super::Insert::New);
        assert_eq!(
            w.rebuild_if_ready(1),
            Some(ParityInsert::Rebuilt {
                filled: vec![2],
                malformed: 0
            })
        );
        assert_eq!(delivered(w), (0..4).map(payload).collect::<Vec<_>>());
    }

    /// Runs the window's NAK rounds every 100 ms from `from` to `to` seconds.
    fn rounds(w: &mut ReceiveWindow, from: f64, to: f64, rng: &mut Rng) {
        let t = timers();
        let mut at = from;
        while at <= to {
            let (mut nak, mut parity) = (Vec::new(), Vec::new());
            let now = Instant::ZERO + Duration::from_secs_f64(at);
            w.on_timeout(now, &t, rng, true, &mut nak, Some(&mut parity));
            at += 0.1;
        }
    }

    #[test]
    fn parity_held_for_a_group_is_progress_on_its_oldest_gap() {
        // Packets 1 and 2 of group 0..4 missing since 0 s; a group further on (4..8) lost
        // packet 5 at 20 s and gets it repaired at 24 s, which is no progress on the older
        // gaps.
        let (mut w, layout, parity, _) = setup();
        let mut rng = Rng::new(3);
        let t = timers();
        let at = |s: f64| Instant::ZERO + Duration::from_secs_f64(s);
        rounds(&mut w, 0.1, 19.9, &mut rng);
        for s in [4u32, 6, 7] {
            w.extend_to(s, at(20.0), &t, &mut rng);
            assert_eq!(w.insert(s, &payload(s), None), super::super::Insert::New);
        }
        rounds(&mut w, 20.0, 23.9, &mut rng);
        assert_eq!(w.insert(5, &payload(5), None), super::super::Insert::New);
        // One of the two parity packets group 0 needs arrives at 25 s.
        rounds(&mut w, 24.0, 24.9, &mut rng);
        assert_eq!(w.insert_parity(0, 1, layout, parity), ParityInsert::Held);
        // Past its 30 s of patience, the group still collects parity: not given up.
        rounds(&mut w, 25.0, 32.0, &mut rng);
        assert_eq!(w.take_give_ups().patience, 0);
        // No more parity: given up once a quarter of the give-up time passes without any.
        rounds(&mut w, 32.1, 33.0, &mut rng);
        assert_eq!(w.take_give_ups().patience, 2);
    }

    #[test]
    fn a_complete_group_asks_for_what_it_misses_and_parity_rebuilds_it() {
        let (mut w, layout, parity, now) = setup();
        let (t, mut rng) = (timers(), Rng::new(1));
        assert_eq!(w.needed(0), 2);
        // Both gaps are due: one parity NAK for group 0, count 2 (sequence 0 | 1).
        let later = now + Duration::from_secs(1);
        let (mut nak, mut parity_nak) = (Vec::new(), Vec::new());
        w.on_timeout(later, &t, &mut rng, true, &mut nak, Some(&mut parity_nak));
        assert!(nak.is_empty());
        assert_eq!(parity_nak, vec![1]);
        // One parity packet is not enough; a selective repair of packet 1 then is.
        assert_eq!(w.insert_parity(0, 1, layout, parity), ParityInsert::Held);
        repair_1_completes_the_group(&mut w);
    }

    /// Runs NAK timers from `from` in 10 ms steps until a NAK of either kind is due.
    fn next_naks(w: &mut ReceiveWindow, from: Instant) -> (Vec<u32>, Vec<u32>, Instant) {
        let (t, mut rng) = (timers(), Rng::new(2));
        let mut now = from;
        for _ in 0..1000 {
            now += Duration::from_millis(10);
            let (mut nak, mut parity_nak) = (Vec::new(), Vec::new());
            w.on_timeout(now, &t, &mut rng, true, &mut nak, Some(&mut parity_nak));
            if !nak.is_empty() || !parity_nak.is_empty() {
                return (nak, parity_nak, now);
            }
        }
        panic!("no NAK in 10 s");
    }

    #[test]
    fn once_parity_indices_repeat_a_group_asks_selectively_for_what_it_needs() {
        let (mut w, layout, parity, now) = setup();
        // Packets 1 and 2 missing: a parity NAK for two.
        let (nak, parity_nak, now) = next_naks(&mut w, now);
        assert_eq!((nak, parity_nak), (vec![], vec![1]));
        assert_eq!(
            w.insert_parity(0, 1, layout, parity.clone()),
            ParityInsert::Held
        );
        // Still one short: parity again, for one.
        let (nak, parity_nak, now) = next_naks(&mut w, now);
        assert_eq!((nak, parity_nak), (vec![], vec![0]));
        // The source's indices wrapped: index 1 again is no use, and more parity could
        // repeat it again; the next NAK asks for one of the missing packets instead.
        assert_eq!(
            w.insert_parity(0, 1, layout, parity),
            ParityInsert::Duplicate
        );
        let (nak, parity_nak, _) = next_naks(&mut w, now);
        assert_eq!((nak, parity_nak), (vec![1], vec![]));
        repair_1_completes_the_group(&mut w);
    }

    #[test]
    fn a_group_parity_cannot_rebuild_asks_selectively_from_then_on() {
        let now = Instant::ZERO;
        let (mut w, layout, parity) = group_of_four();
        let (t, mut rng) = (timers(), Rng::new(1));
        // Packet 1 lost; in 2's place a packet the source did not send (forged from its
        // address, or in signed mode waiting unverified for its list), longer than any of
        // the group's.
        for (s, p) in [(0u32, payload(0)), (2, vec![0xee; 200]), (3, payload(3))] {
            w.extend_to(s, now, &t, &mut rng);
            assert_eq!(w.insert(s, &p, None), super::super::Insert::New);
        }
        let (nak, parity_nak, now) = next_naks(&mut w, now);
        assert_eq!((nak, parity_nak), (vec![], vec![0]));
        // The parity cannot rebuild the group with that packet in it...
        assert_eq!(
            w.insert_parity(0, 1, layout, parity),
            ParityInsert::Malformed
        );
        // ...so more parity would fail the same way: packet 1 is asked for itself.
        let (nak, parity_nak, _) = next_naks(&mut w, now);
        assert_eq!((nak, parity_nak), (vec![1], vec![]));
    }

    /// Signed mode: a group whose parity NAKs the source neither confirms nor answers (it is
    /// not complete at the source: forgeries pushed this window's lead past the session's
    /// last, partial group) is asked for selectively after [`PARITY_NAK_TRIES`] rounds. In
    /// plain mode it is asked for by parity still.
    #[test]
    fn a_signed_group_whose_parity_naks_go_unanswered_is_asked_for_selectively() {
        let tsi = pgm_wire::Tsi {
            gsi: pgm_wire::Gsi([1; 6]),
            sport: 1,
        };
        let key = ed25519_dalek::SigningKey::from_bytes(&[3; 32]);
        for signed in [false, true] {
            let now = Instant::ZERO;
            let (mut w, _, _) = group_of_four();
            if signed {
                w.set_verifier(std::sync::Arc::new(key.verifying_key()), tsi);
            }
            let (t, mut rng) = (timers(), Rng::new(1));
            // 0 and 1 arrive (unverified in signed mode: no list), 2 is missing, a forgery at
            // 3 makes the group look complete.
            for s in [0u32, 1, 3] {
                w.extend_to(s, now, &t, &mut rng);
                assert_eq!(w.insert(s, &payload(s), None), super::super::Insert::New);
            }
            let mut now = now;
            let mut kinds = Vec::new();
            for _ in 0..5 {
                let (nak, parity_nak, at) = next_naks(&mut w, now);
                kinds.push(if parity_nak.is_empty() {
                    "selective"
                } else {
                    "parity"
                });
                assert!(nak.len() + parity_nak.len() == 1, "{nak:?} {parity_nak:?}");
                now = at;
            }
            let want = if signed {
                ["parity", "parity", "parity", "selective", "selective"]
            } else {
                ["parity"; 5]
            };
            assert_eq!(kinds, want, "signed {signed}");
        }
    }

    #[test]
    fn parity_that_disagrees_with_the_group_is_refused() {
        let (mut w, layout, parity, _) = setup();
        let short = parity[..parity.len() - 1].to_vec();
        assert_eq!(
            w.insert_parity(0, 1, layout, short),
            ParityInsert::Malformed
        );
        // Beyond the group size, or for a group already whole, it is a duplicate.
        assert_eq!(
            w.insert_parity(0, 4, layout, parity.clone()),
            ParityInsert::Duplicate
        );
        assert_eq!(w.insert_parity(0, 1, layout, parity), ParityInsert::Held);
    }
}
