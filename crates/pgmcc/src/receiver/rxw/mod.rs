//! The receive window of one session (RFC 3208 §3 "RXW") and the per-sequence-number NAK
//! state machine of §5.3:
//!
//! ```text
//!  gap found ──► BACK-OFF ──(NAK_RB_IVL expires: send NAK)──► WAIT-NCF ──(NCF)──► WAIT-DATA
//!                   ▲  │ NCF or matching NAK heard (suppress)     │ NAK_RPT_IVL      │ NAK_RDATA_IVL
//!                   │  └──────────────────────────────────────────┼──────────────────►│
//!                   └──────── retry (counted) ◄────────────────────┴──────────────────┘
//!  any state ──(data arrives)──► received;  retries exhausted or trail passes ──► lost
//! ```

mod parity;
mod signed;

use std::collections::VecDeque;

use pgm_wire::Fragment;

use crate::rng::Rng;
use crate::sqn;
use crate::time::{Duration, Instant};
use tracing::debug;

pub(crate) use parity::ParityInsert;
use parity::ParityWindow;
pub(crate) use signed::SignedWindow;

/// NAK timers and the give-up time (see [`ReceiverConfig`](super::ReceiverConfig)).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NakTimers {
    /// Longest NAK back-off.
    pub(crate) bo_ivl: Duration,
    /// `None`: the back-off is uniform in `[0, bo_ivl]` (RFC 3208). `Some(λ)`: NORM's
    /// truncated exponential over the same span.
    pub(crate) bo_lambda: Option<f64>,
    pub(crate) rpt_ivl: Duration,
    pub(crate) rdata_ivl: Duration,
    /// How long a sequence number may stay missing before it is given up.
    pub(crate) give_up: Duration,
    /// Back-off span in group RTTs, once the source advertises one; `None`: the back-off
    /// stays as configured.
    pub(crate) bo_grtts: Option<f64>,
}

#[cfg(test)]
use crate::nak_timing::MIN_SCALED_WAIT;

impl NakTimers {
    /// The timers for a session whose source advertised `grtt` and `gsize` receivers
    /// (`docs/core.md`, "NAK timers").
    pub(crate) fn scaled(&self, grtt: Duration, gsize: u32) -> NakTimers {
        let wait = crate::nak_timing::scaled_wait(grtt);
        let (bo_ivl, bo_lambda) = match self.bo_grtts {
            Some(k) => (
                Duration::from_secs_f64(grtt.as_secs_f64() * k.clamp(0.0, 100.0)),
                Some(f64::from(gsize.max(1)).ln() + 1.0),
            ),
            None => (self.bo_ivl, self.bo_lambda),
        };
        NakTimers {
            bo_ivl,
            bo_lambda,
            rpt_ivl: wait,
            rdata_ivl: wait,
            give_up: self.give_up.max(grtt * 20),
            bo_grtts: self.bo_grtts,
        }
    }

    /// The timers for a session whose source advertises no group RTT (OpenPGM, ZeroMQ) but
    /// whose NCFs answered this receiver's NAKs after `rtt` (smoothed, with mean deviation
    /// `var`): the NCF and RDATA waits become `max(2·rtt, rtt + 4·var)`, at least
    /// [`MIN_SCALED_WAIT`](crate::nak_timing::MIN_SCALED_WAIT) and never longer than
    /// configured. With OpenPGM's fixed 2 s a lost repair was asked for again only after the
    /// source's trail had passed it; the back-off and the give-up time stay as configured.
    pub(crate) fn measured(&self, rtt: Duration, var: Duration) -> NakTimers {
        let wait = (rtt * 2)
            .max(rtt + var * 4)
            .max(crate::nak_timing::MIN_SCALED_WAIT);
        NakTimers {
            rpt_ivl: wait.min(self.rpt_ivl),
            rdata_ivl: wait.min(self.rdata_ivl),
            ..*self
        }
    }

    /// The same timers with no back-off at all (a controller's quick NAK).
    pub(crate) fn without_backoff(&self) -> NakTimers {
        NakTimers {
            bo_ivl: Duration::ZERO,
            bo_lambda: None,
            ..*self
        }
    }

    /// A random NAK back-off.
    pub(crate) fn backoff(&self, rng: &mut Rng) -> Duration {
        match self.bo_lambda {
            None => rng.duration_up_to(self.bo_ivl),
            Some(l) => {
                // Inverse of the CDF (e^(λx/T) - 1) / (e^λ - 1) on [0, T].
                let x = (((l.exp() - 1.0) * rng.unit() + 1.0).ln() / l).clamp(0.0, 1.0);
                Duration::from_secs_f64(self.bo_ivl.as_secs_f64() * x)
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    BackOff,
    WaitNcf,
    WaitData,
}

#[derive(Debug, Clone)]
pub(crate) struct NakState {
    pub(crate) phase: Phase,
    pub(crate) deadline: Instant,
    /// When the sequence number was found missing (the give-up clock).
    since: Instant,
    /// The longest give-up time that applied while it was missing: a group RTT that shrank
    /// (a queue drained) does not shorten the wait for a packet whose NAKs and repairs went
    /// at the longer one's pace.
    patience: Duration,
    /// Signed mode: times it was asked for again after reaching the front unverified.
    reverify: u8,
    /// The source confirmed (NCF) a NAK for it since its last NAK round ended.
    confirmed: bool,
    /// NAK rounds it was kept past its patience because the source confirmed them.
    confirmed_rounds: u16,
    /// When this receiver's latest NAK for it went out, until an NCF answered it (a NAK
    /// round-trip sample, [`NakRtt`]).
    asked_at: Option<Instant>,
}

/// NAK rounds a receiver keeps asking past its patience for a packet whose NAKs the source
/// still confirms (RFC 3208's NAK_DATA_RETRIES; OpenPGM's examples set 50), and at least
/// until twice its patience has passed. A source that confirms is still repairing, paced by
/// its controller and its repair budget, and its repairs may be lost at the same queue as the
/// data: at 400 ms a NAK round is about 4 s, and two rounds whose repairs are lost used to
/// exhaust the patience rule's quarter.
const NAK_DATA_RETRIES: u16 = 50;

/// The round trip from this receiver's NAK to the source's NCF, smoothed as TCP smooths its
/// RTT (RFC 6298: gains 1/8 and 1/4), for sources that advertise no group RTT.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NakRtt {
    /// Smoothed round trip and mean deviation, once sampled.
    est: Option<(Duration, Duration)>,
}

impl NakRtt {
    fn sample(&mut self, d: Duration) {
        self.est = Some(match self.est {
            None => (d, d / 2),
            Some((srtt, var)) => {
                let dev = d.abs_diff(srtt);
                ((srtt * 7 + d) / 8, (var * 3 + dev) / 4)
            }
        });
    }

    /// The smoothed round trip and its mean deviation.
    pub(crate) fn get(&self) -> Option<(Duration, Duration)> {
        self.est
    }
}

/// Signed mode: what is known of a received packet (`signed.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// Not a signed session, or checked against its list's digest.
    Verified,
    /// Its list has not verified yet; asked for again `n` times so far.
    Unverified(u8),
    /// A digest list whose signature verified: delivered as nothing.
    List,
}

#[derive(Debug, Clone)]
pub(crate) enum Slot {
    Missing(NakState),
    Have {
        data: Vec<u8>,
        fragment: Option<Fragment>,
        check: Check,
    },
    Lost,
}

/// What the window hands up after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Output {
    /// A complete APDU, with the sequence number of its first packet.
    Apdu { first_sqn: u32, data: Vec<u8> },
    /// Sequence numbers `first..=last` will never be delivered.
    Lost { first: u32, last: u32 },
}

/// Outcome of inserting a data packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Insert {
    /// Filled a slot that was waiting for data (or had been given up).
    New,
    /// Already had it, or it is behind the window.
    Duplicate,
    /// Signed mode: it does not match its list (or is not the list expected there); the
    /// slot still waits for the genuine packet.
    Forged,
}

/// The receive window: slot `i` holds sequence number `base + i`.
#[derive(Debug)]
pub(crate) struct ReceiveWindow {
    base: u32,
    slots: VecDeque<Slot>,
    /// Sender's advertised trailing edge: nothing before it can be repaired.
    trail: u32,
    max_sqns: u32,
    max_apdu: usize,
    /// Outputs already decided when the window skipped far ahead (see `skip_to`); `drain`
    /// hands them out first.
    carry: Vec<Output>,
    /// On-demand parity, when the source offers it (`parity.rs`).
    parity: Option<ParityWindow>,
    /// The first sequence number the window wanted: packets before it were never asked for,
    /// so the group holding it cannot be rebuilt from parity.
    origin: u32,
    /// Signed mode: the source's verified digest lists (`signed.rs`).
    signed: Option<SignedWindow>,
    /// A data packet was taken (in signed mode this proves nothing: see `proven`).
    received: bool,
    /// Why missing sequence numbers were given up, since the last `take_give_ups`.
    give_ups: GiveUps,
    /// The earliest time found missing among the slots filled since the last NAK round
    /// (repairs, parity, late data).
    filled_since: Option<Instant>,
    /// Recent fills: when a NAK round saw them, and the earliest time their slots were
    /// found missing (at most [`RECENT_FILLS`]).
    recent_fills: VecDeque<(Instant, Instant)>,
    /// NAK-to-NCF round trips measured in this session.
    nak_rtt: NakRtt,
    /// No missing slot's NAK deadline is earlier than this (`None`: no slot is missing):
    /// lowered wherever a deadline is set, made exact by the scans of [`Self::due`] and
    /// [`Self::on_timeout`], so that a receiver asking when its next timer runs does not scan
    /// the window for every packet.
    earliest: Option<Instant>,
}

/// Lowers `earliest` to `d`.
fn lower(earliest: &mut Option<Instant>, d: Instant) {
    *earliest = Some(earliest.map_or(d, |e| e.min(d)));
}

/// Fill records a window keeps for its patience rule.
const RECENT_FILLS: usize = 1024;

/// Why a reliable receive window gave up missing sequence numbers: counts of slots that were
/// still missing (being NAKed) when they became lost. Sequence numbers a jump skips without
/// ever having had a slot are not counted here (they are in the receiver's
/// `unrecoverable_sqns`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GiveUps {
    /// The source's advertised trail passed them: it no longer holds them for repair.
    pub(crate) trail: u64,
    /// Their NAKs went unanswered for the whole give-up time (NAK_RPT/RDATA waits,
    /// retries included), and no packet missing as long was filled for the last quarter
    /// of it.
    pub(crate) patience: u64,
    /// The window outgrew its size and dropped its oldest slots.
    pub(crate) overflow: u64,
}

impl ReceiveWindow {
    /// A window whose first wanted sequence number is `base`.
    pub(crate) fn new(base: u32, trail: u32, max_sqns: u32, max_apdu: usize) -> ReceiveWindow {
        ReceiveWindow {
            base,
            slots: VecDeque::new(),
            trail,
            max_sqns: max_sqns.max(1),
            max_apdu,
            carry: Vec::new(),
            parity: None,
            origin: base,
            signed: None,
            received: false,
            give_ups: GiveUps::default(),
            filled_since: None,
            recent_fills: VecDeque::new(),
            nak_rtt: NakRtt::default(),
            earliest: None,
        }
    }

    /// The NAK-to-NCF round trip measured so far (smoothed, mean deviation).
    pub(crate) fn nak_rtt(&self) -> Option<(Duration, Duration)> {
        self.nak_rtt.get()
    }

    /// Payload bytes held: received packets waiting for delivery, parity copies and parity
    /// held (a walk over the window: for diagnostics and tests).
    pub(crate) fn bytes_held(&self) -> u64 {
        let slots: u64 = self
            .slots
            .iter()
            .map(|s| match s {
                Slot::Have { data, .. } => data.len() as u64,
                _ => 0,
            })
            .sum();
        slots + self.parity_bytes_held()
    }

    /// Slots held: from the next to deliver to the lead.
    pub(crate) fn span(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The first sequence number the window wanted.
    pub(crate) fn origin(&self) -> u32 {
        self.origin
    }

    /// The session proved itself: data arrived, or in signed mode a digest list verified.
    pub(crate) fn proven(&self) -> bool {
        match &self.signed {
            Some(_) => self.has_verified_list(),
            None => self.received,
        }
    }

    /// The next sequence number to deliver.
    pub(crate) fn base(&self) -> u32 {
        self.base
    }

    /// The highest sequence number known to exist (`base - 1` when empty).
    pub(crate) fn lead(&self) -> u32 {
        self.base
            .wrapping_add(self.slots.len() as u32)
            .wrapping_sub(1)
    }

    /// A packet found missing at `since` was filled, or came nearer to being rebuilt: the
    /// source is still working through the losses that old (see `on_timeout`'s patience).
    fn progress(&mut self, since: Instant) {
        self.filled_since = Some(self.filled_since.map_or(since, |f| f.min(since)));
    }

    /// The earliest time found missing among the `n` slots from `first`.
    fn oldest_missing(&self, first: u32, n: u32) -> Option<Instant> {
        (0..n)
            .filter_map(|i| self.index(first.wrapping_add(i)))
            .filter_map(|i| match self.slots.get(i) {
                Some(Slot::Missing(st)) => Some(st.since),
                _ => None,
            })
            .min()
    }

    fn index(&self, s: u32) -> Option<usize> {
        if sqn::lt(s, self.base) {
            return None;
        }
        let i = sqn::distance(self.base, s) as usize;
        (i < self.slots.len()).then_some(i)
    }

    /// Extends the window so that `up_to` exists; new slots start NAK back-off. Gaps found
    /// together share one random back-off so a burst loss leaves as one NAK carrying
    /// OPT_NAK_LIST. A jump past the window size gives up the oldest slots (they become lost).
    pub(crate) fn extend_to(&mut self, up_to: u32, now: Instant, t: &NakTimers, rng: &mut Rng) {
        if let Some(sw) = self.signed.as_mut() {
            // The packet about to be inserted arrived now (the budget of failed checks runs
            // on it).
            sw.clock = now;
        }
        // Nothing exists past a signed end: no slot to wait for, nothing to NAK.
        let up_to = match self.signed_end() {
            Some(end) if sqn::gt(up_to, end) => end,
            _ => up_to,
        };
        if !sqn::gt(up_to, self.lead()) {
            return;
        }
        let span = u64::from(sqn::distance(self.base, up_to)) + 1;
        if span > u64::from(self.max_sqns) {
            // Keep only the newest max_sqns sequence numbers' worth of slots.
            let drop = (span - u64::from(self.max_sqns)) as u32;
            let new_base = self.base.wrapping_add(drop);
            self.give_ups.overflow += self.missing_before(new_base);
            self.give_up_before(new_base);
        }
        let deadline = now + t.backoff(rng);
        if let Some(p) = self.parity.as_mut() {
            p.lead_moved = now;
        }
        lower(&mut self.earliest, deadline);
        while sqn::lt(self.lead(), up_to) {
            self.slots.push_back(Slot::Missing(NakState {
                phase: Phase::BackOff,
                deadline,
                since: now,
                patience: t.give_up,
                reverify: 0,
                confirmed: false,
                confirmed_rounds: 0,
                asked_at: None,
            }));
        }
    }

    /// Why missing sequence numbers were given up since the last call.
    pub(crate) fn take_give_ups(&mut self) -> GiveUps {
        std::mem::take(&mut self.give_ups)
    }

    /// Missing slots before `s`.
    fn missing_before(&self, s: u32) -> u64 {
        let n = if sqn::gt(s, self.base) {
            sqn::distance(self.base, s) as usize
        } else {
            0
        };
        self.slots
            .iter()
            .take(n)
            .filter(|slot| matches!(slot, Slot::Missing(_)))
            .count() as u64
    }

    /// Marks every slot before `s` lost, extending the window if `s` is beyond it.
    fn give_up_before(&mut self, s: u32) {
        if sqn::gt(s, self.lead().wrapping_add(1)) {
            self.skip_to(s);
            return;
        }
        let mut cur = self.base;
        let mut i = 0usize;
        while sqn::lt(cur, s) {
            match self.slots.get_mut(i) {
                Some(slot) => {
                    if !matches!(slot, Slot::Have { .. }) {
                        *slot = Slot::Lost;
                    }
                }
                None => self.slots.push_back(Slot::Lost),
            }
            cur = cur.wrapping_add(1);
            i += 1;
        }
        // Data already held before `s` stays: `drain` delivers it, or discards it with its
        // APDU, in order.
    }

    /// Moves the window to start at `s`, beyond its lead: every missing slot and everything
    /// between the lead and `s` is lost. The outcome (the APDUs held, then one lost range) is
    /// decided now and kept in `carry`, so a jump of up to 2^31 sequence numbers (a hostile or
    /// corrupt lead or trail) costs no more memory than the window already holds.
    fn skip_to(&mut self, s: u32) {
        for slot in self.slots.iter_mut() {
            if matches!(slot, Slot::Missing(_)) {
                *slot = Slot::Lost;
            }
        }
        // One lost slot after the lead ends any APDU still being assembled there.
        self.slots.push_back(Slot::Lost);
        let mut carry = std::mem::take(&mut self.carry);
        self.drain_slots(&mut carry);
        if !self.slots.is_empty() {
            // Unreachable (the trailing lost slot settles every APDU), but never silent.
            let n = self.slots.len() as u32;
            push_lost(&mut carry, self.base, self.base.wrapping_add(n - 1));
            self.base = self.base.wrapping_add(n);
            self.slots.clear();
        }
        if sqn::lt(self.base, s) {
            push_lost(&mut carry, self.base, s.wrapping_sub(1));
        }
        self.base = s;
        self.carry = carry;
    }

    /// Gives up on every missing sequence number from `first` to `last` (unreliable mode).
    pub(crate) fn give_up(&mut self, first: u32, last: u32) {
        let mut cur = self.base;
        for slot in self.slots.iter_mut() {
            if sqn::le(first, cur) && sqn::le(cur, last) && matches!(slot, Slot::Missing(_)) {
                *slot = Slot::Lost;
            }
            cur = cur.wrapping_add(1);
        }
    }

    /// Records the sender's trailing edge: missing data before it is lost.
    pub(crate) fn set_trail(&mut self, trail: u32) {
        if sqn::gt(trail, self.trail) {
            self.trail = trail;
        }
        let mut cur = self.base;
        for slot in self.slots.iter_mut() {
            if !sqn::lt(cur, self.trail) {
                break;
            }
            if matches!(slot, Slot::Missing(_)) {
                *slot = Slot::Lost;
                self.give_ups.trail += 1;
            }
            cur = cur.wrapping_add(1);
        }
        // A trail beyond the whole window means everything up to it is gone.
        if sqn::gt(self.trail, self.lead().wrapping_add(1)) && sqn::gt(self.trail, self.base) {
            self.skip_to(self.trail);
        }
    }

    /// Inserts a data packet (caller extended the window to `s` first). In signed mode the
    /// packet is checked first (`signed.rs`).
    pub(crate) fn insert(&mut self, s: u32, data: &[u8], fragment: Option<Fragment>) -> Insert {
        let Some(i) = self.index(s) else {
            return Insert::Duplicate;
        };
        let (reverify, missing_since) = match &self.slots[i] {
            Slot::Have { .. } => return Insert::Duplicate,
            Slot::Missing(st) => (st.reverify, Some(st.since)),
            Slot::Lost => (0, None),
        };
        let mut list = None;
        let check = match self.signed.as_mut() {
            None => Check::Verified,
            Some(sw) => match sw.check(s, data, fragment, reverify) {
                signed::Verdict::Forged | signed::Verdict::Unchecked => return Insert::Forged,
                signed::Verdict::Data(check) => check,
                signed::Verdict::List(l) => {
                    list = Some(l);
                    Check::List
                }
            },
        };
        self.slots[i] = Slot::Have {
            data: data.to_vec(),
            fragment,
            check,
        };
        self.keep_copy(s, data, fragment);
        self.received = true;
        if let Some(since) = missing_since {
            self.progress(since);
        }
        if let Some(l) = list {
            self.apply_list(s, l);
        }
        Insert::New
    }

    /// The source's NCF for `s` answered this receiver's NAK: a NAK round-trip sample (call
    /// before [`on_ncf`](Self::on_ncf), so its wait already follows the sample).
    pub(crate) fn sample_nak_rtt(&mut self, s: u32, now: Instant) {
        let Some(i) = self.index(s) else {
            return;
        };
        if let Slot::Missing(st) = &mut self.slots[i] {
            if let (Phase::WaitNcf, Some(at)) = (st.phase, st.asked_at.take()) {
                self.nak_rtt.sample(now.saturating_duration_since(at));
            }
        }
    }

    /// An NCF for `s` was heard. With `suppress` false, a NAK still backing off is left to
    /// go out (its report must reach the source).
    pub(crate) fn on_ncf(&mut self, s: u32, now: Instant, t: &NakTimers, suppress: bool) -> bool {
        let Some(i) = self.index(s) else {
            return false;
        };
        if let Slot::Missing(st) = &mut self.slots[i] {
            let suppressed = st.phase == Phase::BackOff;
            if suppressed && !suppress {
                return false;
            }
            st.phase = Phase::WaitData;
            st.deadline = now + t.rdata_ivl;
            lower(&mut self.earliest, st.deadline);
            st.confirmed = true;
            return suppressed;
        }
        false
    }

    /// Another receiver's NAK was heard: suppress our own if still backing off (§5.3).
    pub(crate) fn on_peer_nak(&mut self, s: u32, now: Instant, t: &NakTimers) -> bool {
        let Some(i) = self.index(s) else {
            return false;
        };
        if let Slot::Missing(st) = &mut self.slots[i] {
            if st.phase == Phase::BackOff {
                st.phase = Phase::WaitData;
                st.deadline = now + t.rdata_ivl;
                lower(&mut self.earliest, st.deadline);
                return true;
            }
        }
        false
    }

    /// Runs expired NAK timers. Sequence numbers whose NAK is due are appended to `nak`,
    /// and parity NAKs for whole groups (`TG_SQN | (count - 1)`) to `parity_nak` when given
    /// and the source offers parity. With `can_nak` false (no source path known yet), due NAKs back
    /// off again uncounted.
    pub(crate) fn on_timeout(
        &mut self,
        now: Instant,
        t: &NakTimers,
        rng: &mut Rng,
        can_nak: bool,
        nak: &mut Vec<u32>,
        parity_nak: Option<&mut Vec<u32>>,
    ) {
        let first_due = nak.len();
        // One back-off draw per expiry round, shared, so retries batch like first NAKs do.
        let retry_at = now + t.backoff(rng);
        self.arm_reasked(now, retry_at);
        // A source still working through a backlog of this window's losses (paced by its
        // controller and the per-receiver share) is not given up on: a packet's patience
        // runs out only once no packet missing at least as long was filled for a quarter
        // of the give-up time. Packets that stay missing while newer ones are repaired
        // (their repairs lost where others' arrived, say) are given up as before, and the
        // trail passing still gives up at once.
        if let Some(since) = self.filled_since.take() {
            self.recent_fills.push_back((now, since));
            if self.recent_fills.len() > RECENT_FILLS {
                self.recent_fills.pop_front();
            }
        }
        let horizon = t.give_up / 4;
        while self
            .recent_fills
            .front()
            .is_some_and(|&(at, _)| now.saturating_duration_since(at) >= horizon)
        {
            self.recent_fills.pop_front();
        }
        let oldest_filled = self.recent_fills.iter().map(|&(_, since)| since).min();
        let mut cur = self.base;
        let give_ups = &mut self.give_ups;
        for slot in self.slots.iter_mut() {
            let s = cur;
            cur = cur.wrapping_add(1);
            let Slot::Missing(st) = slot else {
                continue;
            };
            if st.deadline > now {
                continue;
            }
            st.patience = st.patience.max(t.give_up);
            match st.phase {
                Phase::BackOff => {
                    if can_nak {
                        nak.push(s);
                        st.phase = Phase::WaitNcf;
                        st.deadline = now + t.rpt_ivl;
                        st.asked_at = Some(now);
                    } else if now.saturating_duration_since(st.since) >= st.patience {
                        // No SPM ever told us where to NAK.
                        *slot = Slot::Lost;
                        give_ups.patience += 1;
                    } else {
                        st.deadline = retry_at.max(now + t.bo_ivl / 2);
                    }
                }
                Phase::WaitNcf | Phase::WaitData => {
                    let progressing = oldest_filled.is_some_and(|f| f <= st.since);
                    let confirmed = std::mem::take(&mut st.confirmed);
                    let out_of_patience =
                        now.saturating_duration_since(st.since) >= st.patience && !progressing;
                    // Rounds bound the extra wait where rounds are slow; where measured NAK
                    // waits make them fast, another whole patience does.
                    let rounds_left = st.confirmed_rounds < NAK_DATA_RETRIES
                        || now.saturating_duration_since(st.since) < st.patience * 2;
                    if out_of_patience && confirmed && rounds_left {
                        // The source still confirms it: ask again.
                        st.confirmed_rounds += 1;
                        st.phase = Phase::BackOff;
                        st.deadline = retry_at;
                    } else if out_of_patience {
                        debug!(
                            target: "pgmcc::give_up",
                            sqn = s,
                            at_ms = now.as_nanos() / 1_000_000,
                            missing_since_ms = st.since.as_nanos() / 1_000_000,
                            patience_ms = st.patience.as_millis() as u64,
                            "gave up a missing packet: NAKed for its whole patience"
                        );
                        *slot = Slot::Lost;
                        give_ups.patience += 1;
                    } else {
                        st.phase = Phase::BackOff;
                        st.deadline = retry_at;
                    }
                }
            }
        }
        if let Some(parity_nak) = parity_nak.filter(|_| self.parity.is_some()) {
            if nak.len() > first_due {
                let mut due = nak.split_off(first_due);
                self.split_parity_naks(now, &mut due, parity_nak, t, retry_at);
                nak.append(&mut due);
            }
        }
        self.earliest = self.scan_deadlines();
    }

    /// Brings every armed NAK timer to at most `limit` from `now`: a wait armed under the
    /// default timers (2 s) must not outlive the source learning the group RTT, or a
    /// receiver re-NAKs after a source that lingers a few group RTTs is gone.
    pub(crate) fn tighten(&mut self, now: Instant, limit: Duration) {
        let cap = now + limit;
        for slot in self.slots.iter_mut() {
            if let Slot::Missing(st) = slot {
                st.deadline = st.deadline.min(cap);
            }
        }
        self.earliest = self.scan_deadlines();
    }

    /// When a NAK timer may next be due: no missing slot's deadline is earlier (a slot
    /// filled since can leave it early; [`Self::due`] says whether one is due).
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        debug_assert!(
            self.scan_deadlines()
                .is_none_or(|d| self.earliest.is_some_and(|e| e <= d)),
            "the earliest deadline kept is later than a slot's"
        );
        self.earliest
    }

    /// Whether a NAK timer is due at `now` (then [`Self::on_timeout`] has work).
    pub(crate) fn due(&mut self, now: Instant) -> bool {
        if self.earliest.is_none_or(|e| e > now) {
            return false;
        }
        self.earliest = self.scan_deadlines();
        self.earliest.is_some_and(|e| e <= now)
    }

    /// The earliest NAK deadline, found by looking at every slot.
    fn scan_deadlines(&self) -> Option<Instant> {
        self.slots
            .iter()
            .filter_map(|s| match s {
                Slot::Missing(st) => Some(st.deadline),
                _ => None,
            })
            .min()
    }

    /// Number of slots waiting for data.
    pub(crate) fn missing(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s, Slot::Missing(_)))
            .count()
    }

    /// Delivers what can be delivered in order: complete APDUs and runs of lost sequence
    /// numbers (a lost fragment takes its whole APDU with it).
    pub(crate) fn drain(&mut self, out: &mut Vec<Output>) {
        for o in self.carry.drain(..) {
            match o {
                Output::Lost { first, last } => push_lost(out, first, last),
                o => out.push(o),
            }
        }
        self.drain_slots(out);
        self.prune_parity();
        self.prune_lists();
    }

    fn drain_slots(&mut self, out: &mut Vec<Output>) {
        loop {
            let Some(front) = self.slots.front() else {
                return;
            };
            match front {
                Slot::Missing(_) => return,
                Slot::Lost => {
                    let first = self.base;
                    let mut n = 0u32;
                    while let Some(Slot::Lost) = self.slots.front() {
                        self.slots.pop_front();
                        n += 1;
                    }
                    // Fragments of an APDU that began in the lost run are lost with it.
                    n += self.pop_orphan_fragments(first.wrapping_add(n));
                    self.base = self.base.wrapping_add(n);
                    push_lost(out, first, first.wrapping_add(n - 1));
                }
                Slot::Have {
                    check: Check::Unverified(tries),
                    ..
                } => {
                    let tries = *tries;
                    if self.settle_unverified(tries) {
                        return;
                    }
                }
                Slot::Have {
                    check: Check::List, ..
                } => {
                    self.slots.pop_front();
                    self.base = self.base.wrapping_add(1);
                }
                Slot::Have { fragment: None, .. } => {
                    if let Some(Slot::Have { data, .. }) = self.slots.pop_front() {
                        out.push(Output::Apdu {
                            first_sqn: self.base,
                            data,
                        });
                    }
                    self.base = self.base.wrapping_add(1);
                }
                Slot::Have {
                    fragment: Some(f), ..
                } => {
                    let f = *f;
                    match self.assemble(f) {
                        Assembly::Incomplete => return,
                        Assembly::Done(n, data) => {
                            out.push(Output::Apdu {
                                first_sqn: self.base,
                                data,
                            });
                            self.base = self.base.wrapping_add(n);
                        }
                        Assembly::Broken(n) => {
                            let first = self.base;
                            for _ in 0..n {
                                self.slots.pop_front();
                            }
                            self.base = self.base.wrapping_add(n);
                            push_lost(out, first, first.wrapping_add(n - 1));
                        }
                    }
                }
            }
        }
    }

    /// Pops packets at the front that are non-first fragments of an APDU starting before
    /// `from` (its head is gone). Returns how many.
    fn pop_orphan_fragments(&mut self, from: u32) -> u32 {
        let mut n = 0;
        while let Some(Slot::Have {
            fragment: Some(f), ..
        }) = self.slots.front()
        {
            if sqn::lt(f.first_sqn, from) {
                self.slots.pop_front();
                n += 1;
            } else {
                break;
            }
        }
        n
    }

    /// Tries to assemble the APDU whose first fragment is at the front.
    fn assemble(&mut self, head: Fragment) -> Assembly {
        let apdu_len = head.apdu_len as usize;
        if head.first_sqn != self.base || head.offset != 0 || apdu_len > self.max_apdu {
            // The head of this APDU is not here (joined mid-APDU) or it is malformed.
            let n = 1 + self.count_following_fragments(head.first_sqn);
            return Assembly::Broken(n);
        }
        let mut have = 0usize;
        let mut n = 0u32;
        for slot in self.slots.iter() {
            match slot {
                Slot::Missing(_) => return Assembly::Incomplete,
                Slot::Lost => {
                    // Lost fragment: the APDU is lost, up to and including this run.
                    return Assembly::Broken(n.max(1));
                }
                Slot::Have {
                    check: Check::Unverified(_),
                    ..
                } => {
                    // Cannot be: a block never splits an APDU, so the head's list checked
                    // its fragments. Never delivered unchecked all the same.
                    return Assembly::Broken(n.max(1));
                }
                Slot::Have { data, fragment, .. } => match fragment {
                    Some(f) if f.first_sqn == head.first_sqn && f.offset as usize == have => {
                        have += data.len();
                        n += 1;
                        if have >= apdu_len {
                            break;
                        }
                    }
                    _ => return Assembly::Broken(n.max(1)),
                },
            }
        }
        if have < apdu_len {
            return Assembly::Incomplete;
        }
        if have != apdu_len {
            return Assembly::Broken(n);
        }
        let mut data = Vec::with_capacity(apdu_len);
        for _ in 0..n {
            if let Some(Slot::Have { data: d, .. }) = self.slots.pop_front() {
                data.extend_from_slice(&d);
            }
        }
        Assembly::Done(n, data)
    }

    fn count_following_fragments(&self, first_sqn: u32) -> u32 {
        self.slots
            .iter()
            .skip(1)
            .take_while(
                |s| matches!(s, Slot::Have { fragment: Some(f), .. } if f.first_sqn == first_sqn),
            )
            .count() as u32
    }
}

enum Assembly {
    Incomplete,
    Done(u32, Vec<u8>),
    Broken(u32),
}

fn push_lost(out: &mut Vec<Output>, first: u32, last: u32) {
    if let Some(Output::Lost { last: prev, .. }) = out.last_mut() {
        if prev.wrapping_add(1) == first {
            *prev = last;
            return;
        }
    }
    out.push(Output::Lost { first, last });
}

/// True when an OPT_FRAGMENT fits the `len`-byte TSDU of packet `s` it came with, in a
/// window taking APDUs of at most `max_apdu` bytes.
pub(crate) fn fragment_is_sane(f: &Fragment, len: usize, s: u32, max_apdu: usize) -> bool {
    let len = len as u64;
    !(f.apdu_len as usize > max_apdu
        || u64::from(f.offset) + len > u64::from(f.apdu_len)
        || sqn::gt(f.first_sqn, s)
        || (len == 0 && f.apdu_len > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> NakTimers {
        NakTimers {
            bo_ivl: Duration::from_millis(50),
            bo_lambda: None,
            rpt_ivl: Duration::from_secs(2),
            rdata_ivl: Duration::from_secs(2),
            give_up: Duration::from_secs(30),
            bo_grtts: Some(4.0),
        }
    }

    /// Mean back-off over many draws, as a fraction of the span.
    fn mean_fraction(t: &NakTimers) -> f64 {
        let mut rng = Rng::new(5);
        let n = 20_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let b = t.backoff(&mut rng);
            assert!(b <= t.bo_ivl, "{b:?} beyond {:?}", t.bo_ivl);
            sum += b.as_secs_f64();
        }
        sum / f64::from(n) / t.bo_ivl.as_secs_f64()
    }

    #[test]
    fn grtt_scales_the_timers_and_the_backoff_leans_late_for_large_groups() {
        let t = base().scaled(Duration::from_millis(100), 100);
        assert_eq!(t.bo_ivl, Duration::from_millis(400));
        assert_eq!(
            (t.rpt_ivl, t.rdata_ivl),
            (Duration::from_millis(200), Duration::from_millis(200))
        );
        assert_eq!(t.give_up, Duration::from_secs(30));
        assert_eq!(
            base().scaled(Duration::from_secs(3), 1).give_up,
            Duration::from_secs(60)
        );
        assert_eq!(
            base().scaled(Duration::from_micros(50), 1).rpt_ivl,
            MIN_SCALED_WAIT
        );
        // Uniform: mean half the span. Truncated exponential with λ = ln(100) + 1: mean
        // 1 - 1/λ + 1/(e^λ - 1) of the span (≈ 0.82): most receivers wait long, so the few
        // that NAK early silence them.
        assert!((mean_fraction(&base()) - 0.5).abs() < 0.01);
        let l = 100f64.ln() + 1.0;
        let want = 1.0 - 1.0 / l + 1.0 / (l.exp() - 1.0);
        assert!(
            (mean_fraction(&t) - want).abs() < 0.01,
            "{}",
            mean_fraction(&t)
        );
        assert_eq!(
            t.without_backoff().backoff(&mut Rng::new(1)),
            Duration::ZERO
        );
    }

    #[test]
    fn without_a_back_off_span_in_group_rtts_the_back_off_stays_as_configured() {
        let fixed = NakTimers {
            bo_ivl: Duration::from_millis(30),
            bo_grtts: None,
            ..base()
        };
        let t = fixed.scaled(Duration::from_millis(800), 3);
        assert_eq!((t.bo_ivl, t.bo_lambda), (Duration::from_millis(30), None));
        // The waits and the give-up time still follow the group RTT.
        assert_eq!(
            (t.rpt_ivl, t.rdata_ivl),
            (Duration::from_millis(1600), Duration::from_millis(1600))
        );
        assert!((mean_fraction(&t) - 0.5).abs() < 0.01);
    }

    /// Runs the window's timers at `at` seconds; returns how many sequence numbers are
    /// still missing.
    fn expire(w: &mut ReceiveWindow, at: f64, t: &NakTimers, rng: &mut Rng) -> usize {
        let now = Instant::ZERO + Duration::from_secs_f64(at);
        let (mut nak, mut parity) = (Vec::new(), Vec::new());
        w.on_timeout(now, t, rng, true, &mut nak, Some(&mut parity));
        w.missing()
    }

    #[test]
    fn a_shrinking_group_rtt_does_not_shorten_the_wait_for_a_packet_already_missing() {
        let mut rng = Rng::new(3);
        let mut w = ReceiveWindow::new(0, 0, 64, 65535);
        // Found missing at 0 while the source advertised G = 4.5 s: 90 s of patience.
        let slow = base().scaled(Duration::from_millis(4500), 1);
        assert_eq!(slow.give_up, Duration::from_secs(90));
        w.extend_to(2, Instant::ZERO, &slow, &mut rng);
        assert_eq!(expire(&mut w, 20.0, &slow, &mut rng), 3);
        // The queue drained: G = 1 s now, whose own give-up time (30 s) has passed, but
        // this packet's NAKs went at the slow pace; it waits out the 90 s.
        let fast = base().scaled(Duration::from_secs(1), 1);
        assert_eq!(fast.give_up, Duration::from_secs(30));
        for at in [31.0, 50.0, 89.0] {
            assert_eq!(expire(&mut w, at, &fast, &mut rng), 3, "given up at {at} s");
        }
        // Checked when a wait ends: the NAK at 120 s, its NCF wait over at 125 s.
        assert_eq!(expire(&mut w, 120.0, &fast, &mut rng), 3);
        assert_eq!(expire(&mut w, 125.0, &fast, &mut rng), 0);
        // A packet found missing under the short G alone gets the short wait.
        w.extend_to(3, Instant::ZERO + Duration::from_secs(125), &fast, &mut rng);
        assert_eq!(expire(&mut w, 140.0, &fast, &mut rng), 1);
        assert_eq!(expire(&mut w, 160.0, &fast, &mut rng), 0);
        // All four gave up waiting for answers.
        let g = w.take_give_ups();
        assert_eq!((g.patience, g.trail, g.overflow), (4, 0, 0));
        assert_eq!(w.take_give_ups(), GiveUps::default());
    }

    /// The next deadline is kept, not searched for on every call: a slot filled before its
    /// timer leaves an early bound, which the first check at that time corrects.
    #[test]
    fn a_filled_gap_leaves_an_early_bound_that_the_first_check_corrects() {
        let mut rng = Rng::new(7);
        let t = base();
        let mut w = ReceiveWindow::new(0, 0, 64, 65535);
        w.extend_to(1, Instant::ZERO, &t, &mut rng);
        assert_eq!(w.insert(1, b"x", None), Insert::New);
        let bound = w.next_deadline().expect("0 is missing");
        assert!(!w.due(Instant::ZERO), "armed with a back-off");
        // 0 arrives before its NAK would have left: the bound stays until checked.
        assert_eq!(w.insert(0, b"x", None), Insert::New);
        assert_eq!(w.next_deadline(), Some(bound));
        assert!(!w.due(bound));
        assert_eq!(w.next_deadline(), None);
        // A new gap is due at its own back-off.
        w.extend_to(3, bound, &t, &mut rng);
        let next = w.next_deadline().expect("2 is missing");
        assert!(next > bound && w.due(next));
    }

    #[test]
    fn each_give_up_is_counted_under_its_reason() {
        let mut rng = Rng::new(4);
        let t = base();
        let mut w = ReceiveWindow::new(0, 0, 8, 65535);
        // 0..=3 missing; the trail passes 0 and 1.
        w.extend_to(3, Instant::ZERO, &t, &mut rng);
        w.set_trail(2);
        // A lead 6 beyond the window's size drops the oldest slots still missing (2, 3).
        w.extend_to(11, Instant::ZERO, &t, &mut rng);
        let g = w.take_give_ups();
        assert_eq!((g.trail, g.patience, g.overflow), (2, 0, 2));
    }

    /// A source working through a backlog of repairs (paced by its controller and the
    /// per-receiver share) keeps its receiver waiting past the give-up time; once no missing
    /// packet is filled for a quarter of it, patience runs out as before.
    #[test]
    fn patience_lasts_while_repairs_keep_filling_the_window() {
        let mut rng = Rng::new(6);
        let t = base();
        let mut w = ReceiveWindow::new(0, 0, 256, 65535);
        // 100 packets lost at once; the source repairs one every second from 5 s.
        w.extend_to(99, Instant::ZERO, &t, &mut rng);
        let mut left = 100;
        for s in 0..60u32 {
            let at = 5.0 + f64::from(s);
            assert_eq!(w.insert(s, b"r", None), Insert::New);
            left -= 1;
            assert_eq!(expire(&mut w, at + 0.5, &t, &mut rng), left, "at {at} s");
        }
        assert_eq!(
            w.take_give_ups(),
            GiveUps::default(),
            "nothing given up by 65 s"
        );
        // The repairs stop at 64 s: the rest is given up once 7.5 s pass without a fill.
        assert_eq!(expire(&mut w, 71.0, &t, &mut rng), 40);
        assert_eq!(expire(&mut w, 73.0, &t, &mut rng), 0);
        assert_eq!(w.take_give_ups().patience, 40);
    }

    /// Repairs of newer losses do not keep an older one waiting: its own repair may never
    /// come (lost where the others' arrived), and its NAKs would go on until the trail.
    #[test]
    fn repairs_of_newer_losses_do_not_extend_an_older_ones_patience() {
        let mut rng = Rng::new(7);
        let t = base();
        let mut w = ReceiveWindow::new(0, 0, 256, 65535);
        w.extend_to(0, Instant::ZERO, &t, &mut rng);
        // From 1 s, one new loss a second, each repaired half a second later.
        for s in 1..40u32 {
            let at = f64::from(s);
            w.extend_to(s, Instant::ZERO + Duration::from_secs_f64(at), &t, &mut rng);
            expire(&mut w, at + 0.25, &t, &mut rng);
            assert_eq!(w.insert(s, b"d", None), Insert::New);
            expire(&mut w, at + 0.5, &t, &mut rng);
        }
        let g = w.take_give_ups();
        assert_eq!(g.patience, 1, "packet 0 given up at its patience: {g:?}");
    }

    /// A source that confirms every NAK for a packet (it is still repairing, and its
    /// repairs are lost on the way) keeps the receiver asking past its patience, up to
    /// [`NAK_DATA_RETRIES`] rounds; without confirmations it is given up at its patience.
    #[test]
    fn a_source_that_confirms_keeps_the_receiver_asking() {
        let t = base();
        for confirm in [false, true] {
            let mut rng = Rng::new(8);
            let mut w = ReceiveWindow::new(0, 0, 64, 65535);
            w.extend_to(0, Instant::ZERO, &t, &mut rng);
            let mut at = 0.0;
            let mut given_up_at = None;
            while at < 400.0 && given_up_at.is_none() {
                at += 0.5;
                let now = Instant::ZERO + Duration::from_secs_f64(at);
                let (mut nak, mut parity) = (Vec::new(), Vec::new());
                w.on_timeout(now, &t, &mut rng, true, &mut nak, Some(&mut parity));
                if confirm && nak.contains(&0) {
                    w.on_ncf(0, now, &t, true);
                }
                if w.missing() == 0 {
                    given_up_at = Some(at);
                }
            }
            let at = given_up_at.expect("given up within 400 s");
            if confirm {
                // 30 s of patience, then 50 confirmed rounds of 2.5 s (the 2 s wait for data
                // after each NCF, the back-off, this loop's 0.5 s steps): 155 s.
                assert!((145.0..165.0).contains(&at), "{at}");
            } else {
                assert!((30.0..36.0).contains(&at), "{at}");
            }
            assert_eq!(w.take_give_ups().patience, 1);
        }
    }
}
