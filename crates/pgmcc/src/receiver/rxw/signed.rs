//! Signed mode in the receive window (`crate::signed` has the format and the reasoning):
//! every packet is checked against its block's signed digest list before it can be
//! delivered; a packet that fails goes back to missing and is NAKed again.

use std::collections::VecDeque;
use std::sync::Arc;

use pgm_wire::{Fragment, Tsi};

use super::{Check, NakState, Phase, ReceiveWindow, Slot};
use crate::receiver::guard::TokenBucket;
use crate::signed::{
    self, Digest, Freshness, List, SignedCounts, Verifier, REVERIFY_TRIES, VERIFY_FAIL_BURST,
    VERIFY_FAIL_RATE,
};
use crate::sqn;
use crate::time::{Duration, Instant};

/// What a packet arriving at a sequence number turned out to be.
pub(super) enum Verdict {
    Forged,
    /// List-shaped where a list may be, but the session's budget of failed signature checks
    /// is spent: dropped unchecked, the sequence number stays missing.
    Unchecked,
    Data(Check),
    List(List),
}

/// What the verified lists say a sequence number holds.
enum Expect {
    Data(Digest),
    /// Where the verified lists say a list is: the next one after a block (its key must
    /// match this commitment), or one a list names as its previous.
    List(Link),
    /// Beyond the signed end of the session.
    Nothing,
    Unknown,
}

/// A verified list and its sequence number.
type Placed = (u32, List);

/// What a list must carry to be the one the verified lists expect at a place.
#[derive(Debug, Clone, Copy)]
enum Link {
    /// The next list: a key whose commitment is this.
    Key(signed::ChainKey),
    /// The previous list: this commitment (to the key of the list after it).
    Commits(signed::ChainKey),
}

/// The packet in `slot` if it waits unverified for its list: payload, OPT_FRAGMENT and the
/// times it was asked for again.
fn unverified(slot: &Slot) -> Option<(&[u8], Option<Fragment>, u8)> {
    match slot {
        Slot::Have {
            data,
            fragment,
            check: Check::Unverified(tries),
        } => Some((data, *fragment, *tries)),
        _ => None,
    }
}

/// A signed session's state in its window.
#[derive(Debug)]
pub(crate) struct SignedWindow {
    verifier: Arc<dyn Verifier>,
    tsi: Tsi,
    /// Verified lists still covering the window, by sequence number (oldest first).
    lists: VecDeque<(u32, List)>,
    /// The last sequence number of the session, from its signed end.
    end: Option<u32>,
    /// The manifest the signed end carried.
    manifest: Option<pgm_wire::Manifest>,
    /// Slots turned back to missing whose NAK timers are not armed yet.
    pending: Vec<u32>,
    /// Counters since the receiver last took them.
    counts: SignedCounts,
    /// The session's budget of failed signature checks ([`VERIFY_FAIL_RATE`]).
    fails: TokenBucket,
    /// Packets that waited unverified and verified since the receiver last took them.
    verified: Vec<u32>,
    /// The time of the last packet or timeout the window saw.
    pub(super) clock: Instant,
}

impl SignedWindow {
    pub(crate) fn new(verifier: Arc<dyn Verifier>, tsi: Tsi) -> SignedWindow {
        SignedWindow {
            verifier,
            tsi,
            lists: VecDeque::new(),
            end: None,
            manifest: None,
            pending: Vec::new(),
            counts: SignedCounts::default(),
            fails: TokenBucket::new(Instant::ZERO, VERIFY_FAIL_BURST, VERIFY_FAIL_RATE),
            verified: Vec::new(),
            clock: Instant::ZERO,
        }
    }

    fn expect(&self, s: u32) -> Expect {
        for (h, l) in &self.lists {
            let c = l.digests.len() as u32;
            let last = h.wrapping_add(c);
            if sqn::lt(*h, s) && sqn::le(s, last) {
                return Expect::Data(l.digests[sqn::distance(*h, s) as usize - 1]);
            }
            if s == last.wrapping_add(1) {
                return if l.end {
                    Expect::Nothing
                } else {
                    Expect::List(Link::Key(l.next))
                };
            }
            if l.end && sqn::gt(s, last) {
                return Expect::Nothing;
            }
        }
        if let Some((_, l)) = self.lists.iter().find(|(h, l)| l.prev == s && l.prev != *h) {
            let c = signed::commitment(|p| self.verifier.digest(p), &l.key);
            return Expect::List(Link::Commits(c));
        }
        Expect::Unknown
    }

    /// Whether list-shaped `data` carries what `link` asks (a digest, no signature check).
    fn linked(&self, data: &[u8], link: Link) -> bool {
        let Some((key, next)) = signed::list_links(data) else {
            return false;
        };
        match link {
            Link::Key(c) => signed::commitment(|p| self.verifier.digest(p), &key) == c,
            Link::Commits(c) => next == c,
        }
    }

    fn digest(&self, s: u32, fragment: Option<Fragment>, data: &[u8]) -> Digest {
        signed::packet_digest(|p| self.verifier.digest(p), s, fragment, data)
    }

    /// Checks a packet arriving at `s` (asked for again `tries` times so far).
    ///
    /// A signature is checked only where a list may be: where the verified lists say one
    /// is, or anywhere while the session has none yet. Elsewhere a list-shaped packet is
    /// held like data whose list has not come (a forgery costs a digest at most, when its
    /// block's list verifies). Failed checks draw on the session's budget; past it, a
    /// list-shaped packet is dropped unchecked.
    pub(super) fn check(
        &mut self,
        s: u32,
        data: &[u8],
        fragment: Option<Fragment>,
        tries: u8,
    ) -> Verdict {
        let verdict = match self.expect(s) {
            Expect::Data(d) if self.digest(s, fragment, data) == d => {
                Verdict::Data(Check::Verified)
            }
            Expect::Data(_) | Expect::Nothing => Verdict::Forged,
            Expect::List(link) if self.linked(data, link) => {
                self.open(s, data, fragment).unwrap_or(Verdict::Forged)
            }
            Expect::List(_) => Verdict::Forged,
            Expect::Unknown if self.lists.is_empty() => self
                .open(s, data, fragment)
                .unwrap_or(Verdict::Data(Check::Unverified(tries))),
            Expect::Unknown => Verdict::Data(Check::Unverified(tries)),
        };
        self.count(verdict)
    }

    /// Counts `verdict`, first turning a list that would start the session but is not
    /// fresh ([`Verifier::fresh`]) into a forgery: a replayed recording is not a session.
    fn count(&mut self, verdict: Verdict) -> Verdict {
        let verdict = match verdict {
            Verdict::List(l) if self.lists.is_empty() => match self.verifier.fresh(l.unix_ms) {
                Freshness::Fresh => Verdict::List(l),
                Freshness::Skewed => {
                    self.counts.stale += 1;
                    Verdict::Forged
                }
                Freshness::BeforeStart => {
                    self.counts.before_start += 1;
                    Verdict::Forged
                }
            },
            v => v,
        };
        match verdict {
            Verdict::Forged => self.counts.forged += 1,
            Verdict::Unchecked => self.counts.unchecked += 1,
            Verdict::List(_) => self.counts.lists += 1,
            Verdict::Data(_) => {}
        }
        verdict
    }

    /// The list in a list-shaped packet at `s`, if its signature verifies within the
    /// session's budget of failed checks: `Some(List)`, `Some(Unchecked)` when the budget is
    /// spent, `None` when it is not a list.
    fn open(&mut self, s: u32, data: &[u8], fragment: Option<Fragment>) -> Option<Verdict> {
        if fragment.is_some() || !signed::looks_like_list(data) {
            return None;
        }
        if !self.fails.has(self.clock) {
            return Some(Verdict::Unchecked);
        }
        match signed::open_list(self.verifier.as_ref(), self.tsi, s, data) {
            Some(l) => Some(Verdict::List(l)),
            None => {
                self.fails.take(self.clock);
                None
            }
        }
    }

    /// The list held unverified at `s`, now that the verified lists say one is there:
    /// linked as they expect, then checked once, outside the budget (one check per place a
    /// list verifies).
    fn open_held(&mut self, s: u32, data: &[u8], link: Link) -> Option<List> {
        if !self.linked(data, link) {
            self.counts.forged += 1;
            return None;
        }
        let l = signed::open_list(self.verifier.as_ref(), self.tsi, s, data);
        match self.count(l.map_or(Verdict::Forged, Verdict::List)) {
            Verdict::List(l) => Some(l),
            _ => None,
        }
    }

    /// True when `s` cannot belong to any block this window can verify: the first list
    /// after it is the session's first, or its previous list lies before `origin`.
    fn before_first_block(&self, s: u32, origin: u32) -> bool {
        self.lists
            .iter()
            .find(|(h, _)| sqn::lt(s, *h))
            .is_some_and(|(h, l)| l.prev == *h || sqn::lt(l.prev, origin))
    }
}

impl ReceiveWindow {
    /// Turns this window's session into a signed one: nothing is delivered that does not
    /// verify under `verifier`.
    pub(crate) fn set_verifier(&mut self, verifier: Arc<dyn Verifier>, tsi: Tsi) {
        self.signed = Some(SignedWindow::new(verifier, tsi));
    }

    /// Signed mode: whether a packet ahead of the window's lead is refused by what the
    /// verified lists say of its place (its digest, the next list's key, the signed end),
    /// before it may move the window. A digest at most, never a signature check.
    pub(crate) fn refuses_ahead(
        &mut self,
        s: u32,
        data: &[u8],
        fragment: Option<Fragment>,
    ) -> bool {
        if !sqn::gt(s, self.lead()) {
            return false;
        }
        let Some(sw) = self.signed.as_mut() else {
            return false;
        };
        let refused = match sw.expect(s) {
            Expect::Data(d) => sw.digest(s, fragment, data) != d,
            Expect::List(link) => fragment.is_some() || !sw.linked(data, link),
            Expect::Nothing => true,
            Expect::Unknown => false,
        };
        if refused {
            sw.counts.forged += 1;
        }
        refused
    }

    /// Signed mode: whether `s` holds a packet waiting unverified for its list.
    pub(crate) fn is_unverified(&self, s: u32) -> bool {
        self.index(s)
            .is_some_and(|i| unverified(&self.slots[i]).is_some())
    }

    /// Signed mode: the packets that waited unverified and verified since the last call.
    pub(crate) fn take_verified(&mut self) -> Vec<u32> {
        self.signed
            .as_mut()
            .map(|s| std::mem::take(&mut s.verified))
            .unwrap_or_default()
    }

    /// Signed mode: the session's last sequence number, once its signed end verified.
    pub(crate) fn signed_end(&self) -> Option<u32> {
        self.signed.as_ref().and_then(|s| s.end)
    }

    /// Signed mode: the manifest the session's signed end carried, once it verified.
    pub(crate) fn signed_manifest(&self) -> Option<&pgm_wire::Manifest> {
        self.signed.as_ref().and_then(|s| s.manifest.as_ref())
    }

    /// Signed mode: a digest list of the session verified.
    pub(super) fn has_verified_list(&self) -> bool {
        self.signed.as_ref().is_some_and(|s| !s.lists.is_empty())
    }

    /// True in a signed session.
    pub(crate) fn is_signed(&self) -> bool {
        self.signed.is_some()
    }

    /// Signed-mode counters since the last call.
    pub(crate) fn take_signed_counts(&mut self) -> SignedCounts {
        self.signed
            .as_mut()
            .map(|s| std::mem::take(&mut s.counts))
            .unwrap_or_default()
    }

    /// A list at `h` verified: checks the packets it covers that arrived before it, and
    /// what sits where the lists it names (the next, the previous) should be; a list held
    /// there verifies in turn.
    pub(super) fn apply_list(&mut self, h: u32, list: List) {
        let mut verified = vec![(h, list)];
        while let Some((h, list)) = verified.pop() {
            let (next, prev) = self.apply_one(h, list);
            verified.extend(next);
            verified.extend(prev);
        }
    }

    /// [`ReceiveWindow::apply_list`] for one list: the lists held unverified at the next
    /// and the previous list's places, if they verify there.
    fn apply_one(&mut self, h: u32, list: List) -> (Option<Placed>, Option<Placed>) {
        let c = list.digests.len() as u32;
        let mut reask = Vec::new();
        let mut next = None;
        for i in 0..=c {
            let t = h.wrapping_add(1 + i);
            let Some(idx) = self.index(t) else {
                continue;
            };
            let Some((data, fragment, tries)) = unverified(&self.slots[idx]) else {
                continue;
            };
            let Some(sw) = self.signed.as_mut() else {
                return (None, None);
            };
            if i < c {
                if sw.digest(t, fragment, data) == list.digests[i as usize] {
                    sw.verified.push(t);
                    if let Slot::Have { check, .. } = &mut self.slots[idx] {
                        *check = Check::Verified;
                    }
                } else {
                    reask.push((idx, tries));
                }
            } else if !list.end {
                let link = Link::Key(list.next);
                match fragment
                    .is_none()
                    .then(|| sw.open_held(t, data, link))
                    .flatten()
                {
                    Some(l) => next = Some((t, l)),
                    None => reask.push((idx, tries)),
                }
            }
        }
        let prev = (list.prev != h)
            .then(|| self.held_list(list.prev, &list.key))
            .flatten();
        for (idx, tries) in reask {
            self.reask(idx, tries);
        }
        for (t, _) in next.iter().chain(prev.iter()) {
            if let Some(idx) = self.index(*t) {
                if let Slot::Have { check, .. } = &mut self.slots[idx] {
                    *check = Check::List;
                }
            }
        }
        let Some(sw) = self.signed.as_mut() else {
            return (None, None);
        };
        if list.end {
            sw.end = Some(h.wrapping_add(c));
            sw.manifest.clone_from(&list.manifest);
        }
        let at = sw
            .lists
            .iter()
            .position(|(x, _)| sqn::gt(*x, h))
            .unwrap_or(sw.lists.len());
        let end = list.end.then_some(h.wrapping_add(c));
        sw.lists.insert(at, (h, list));
        // What forgeries made the window hold past the end was never sent: dropped, or its
        // NAKs would go on, unanswerable.
        if let Some(i) = end.and_then(|e| self.index(e)) {
            self.slots.truncate(i + 1);
        }
        (next, prev)
    }

    /// The list held unverified at `p`, where a verified list says its previous one is, if
    /// it verifies. A packet there that does not is asked for again.
    fn held_list(&mut self, p: u32, key: &signed::ChainKey) -> Option<Placed> {
        let idx = self.index(p)?;
        let (data, fragment, tries) = unverified(&self.slots[idx])?;
        let sw = self.signed.as_mut()?;
        let link = Link::Commits(signed::commitment(|d| sw.verifier.digest(d), key));
        match fragment
            .is_none()
            .then(|| sw.open_held(p, data, link))
            .flatten()
        {
            Some(l) => Some((p, l)),
            None => {
                self.reask(idx, tries);
                None
            }
        }
    }

    /// Slot `idx` held a packet that failed: it is missing again, its NAK timers armed at
    /// the next timeout ([`ReceiveWindow::arm_reasked`]).
    fn reask(&mut self, idx: usize, tries: u8) {
        let s = self.base.wrapping_add(idx as u32);
        self.slots[idx] = Slot::Missing(NakState {
            phase: Phase::BackOff,
            deadline: Instant::ZERO,
            since: Instant::ZERO,
            patience: Duration::ZERO,
            reverify: tries,
            confirmed: false,
            confirmed_rounds: 0,
            asked_at: None,
        });
        super::lower(&mut self.earliest, Instant::ZERO);
        self.forget_copy(s);
        if let Some(sw) = self.signed.as_mut() {
            sw.pending.push(s);
            sw.counts.reasked += 1;
        }
    }

    /// The packet at the front of the window is unverified. Returns true when it was
    /// turned back to missing (delivery stops there), false when it was given up.
    pub(super) fn settle_unverified(&mut self, tries: u8) -> bool {
        let s = self.base;
        let Some(sw) = self.signed.as_mut() else {
            return false;
        };
        let hopeless = tries >= REVERIFY_TRIES
            || sqn::lt(s, self.trail)
            || sw.before_first_block(s, self.origin);
        if hopeless {
            sw.counts.unverifiable += 1;
            self.slots[0] = Slot::Lost;
            return false;
        }
        self.reask(0, tries + 1);
        true
    }

    /// Arms the NAK timers of the slots turned back to missing since the last call.
    pub(super) fn arm_reasked(&mut self, now: Instant, deadline: Instant) {
        let Some(sw) = self.signed.as_mut() else {
            return;
        };
        let pending = std::mem::take(&mut sw.pending);
        for s in pending {
            if let Some(i) = self.index(s) {
                if let Slot::Missing(st) = &mut self.slots[i] {
                    if st.since == Instant::ZERO {
                        st.since = now;
                        st.deadline = deadline;
                        super::lower(&mut self.earliest, deadline);
                    }
                }
            }
        }
    }

    /// Forgets the lists whose blocks (and the next list's place) are all behind the window.
    pub(super) fn prune_lists(&mut self) {
        let base = self.base;
        if let Some(sw) = self.signed.as_mut() {
            while let Some((h, l)) = sw.lists.front() {
                let next = h.wrapping_add(l.digests.len() as u32 + 1);
                // Keep the newest: it tells where the next list is.
                if sw.lists.len() > 1 && sqn::lt(next, base) {
                    sw.lists.pop_front();
                } else {
                    break;
                }
            }
        }
    }
}
