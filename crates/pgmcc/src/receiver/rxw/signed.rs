//! Signed mode in the receive window (`crate::signed` has the format and the reasoning):
//! every packet is checked against its block's signed digest list before it can be
//! delivered; a packet that fails goes back to missing and is NAKed again.

use std::collections::VecDeque;
use std::sync::Arc;

use pgm_wire::{Fragment, Tsi};

use super::{Check, NakState, Phase, ReceiveWindow, Slot};
use crate::signed::{self, Digest, List, SignedCounts, Verifier, REVERIFY_TRIES};
use crate::sqn;
use crate::time::{Duration, Instant};

/// What a packet arriving at a sequence number turned out to be.
pub(super) enum Verdict {
    Forged,
    Data(Check),
    List(List),
}

/// What the verified lists say a sequence number holds.
enum Expect {
    Data(Digest),
    List,
    /// Beyond the signed end of the session.
    Nothing,
    Unknown,
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
                return if l.end { Expect::Nothing } else { Expect::List };
            }
            if l.end && sqn::gt(s, last) {
                return Expect::Nothing;
            }
        }
        Expect::Unknown
    }

    fn digest(&self, s: u32, fragment: Option<Fragment>, data: &[u8]) -> Digest {
        signed::packet_digest(|p| self.verifier.digest(p), s, fragment, data)
    }

    /// Checks a packet arriving at `s` (asked for again `tries` times so far).
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
            Expect::List => match self.open(s, data, fragment) {
                Some(l) => Verdict::List(l),
                None => Verdict::Forged,
            },
            Expect::Unknown => match self.open(s, data, fragment) {
                Some(l) => Verdict::List(l),
                None => Verdict::Data(Check::Unverified(tries)),
            },
        };
        // The first list of a session must be recent: a replayed recording is not a session.
        let verdict = match verdict {
            Verdict::List(l) if self.lists.is_empty() && !self.verifier.fresh(l.unix_ms) => {
                self.counts.stale += 1;
                Verdict::Forged
            }
            v => v,
        };
        match verdict {
            Verdict::Forged => self.counts.forged += 1,
            Verdict::List(_) => self.counts.lists += 1,
            Verdict::Data(_) => {}
        }
        verdict
    }

    fn open(&self, s: u32, data: &[u8], fragment: Option<Fragment>) -> Option<List> {
        if fragment.is_some() || !signed::looks_like_list(data) {
            return None;
        }
        signed::open_list(self.verifier.as_ref(), self.tsi, s, data)
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
    /// what sits where the next list should be.
    pub(super) fn apply_list(&mut self, h: u32, list: List) {
        let Some(sw) = self.signed.as_ref() else {
            return;
        };
        let c = list.digests.len() as u32;
        let mut reask = Vec::new();
        for i in 0..=c {
            let t = h.wrapping_add(1 + i);
            let Some(idx) = self.index(t) else {
                continue;
            };
            let Slot::Have {
                data,
                fragment,
                check: Check::Unverified(tries),
            } = &self.slots[idx]
            else {
                continue;
            };
            let genuine = i < c && sw.digest(t, *fragment, data) == list.digests[i as usize];
            if genuine {
                if let Slot::Have { check, .. } = &mut self.slots[idx] {
                    *check = Check::Verified;
                }
            } else if i < c || !list.end {
                reask.push((idx, *tries));
            }
        }
        for (idx, tries) in reask {
            self.reask(idx, tries);
        }
        let Some(sw) = self.signed.as_mut() else {
            return;
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
        sw.lists.insert(at, (h, list));
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
        });
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
