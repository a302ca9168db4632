//! Counting the receivers with general polls (RFC 3208 Appendix D): the source asks every
//! receiver to reply with probability `P = 2^-B` and estimates the group as replies / P. The
//! group size it advertises in OPT_GRTT sets how late its receivers' NAK back-offs lean
//! (`docs/core.md`, "Group size"); counting only the receivers that NAK or ACK undercounts
//! a quiet group (16 of 100 behind one shared loss).
//!
//! A poll starts with a low probability and doubles it twice per round until enough replies
//! came (or every receiver was asked); rounds of one POLL_SQN count only receivers that saw
//! its round 0 (§14.3.1), so late joiners cannot flood a later round. Each round's expected
//! replies are at most four times the previous round's, which stayed below the target; a
//! round that still gets far more (the group grew since the last poll) is cut short by a
//! new POLL that asks nobody, which cancels the replies still waiting.

use std::net::IpAddr;

use pgm_wire::poll::POLL_GENERAL;
use pgm_wire::{PollRepr, Tsi};

use crate::rng::Rng;
use crate::time::{Duration, Instant};

/// Replies a round aims for: enough for an estimate within about a quarter (1/sqrt(16)).
pub(super) const TARGET_REPLIES: usize = 16;
/// Replies that end a round at once: the group grew past what the round was set for.
pub(super) const ABORT_REPLIES: usize = 8 * TARGET_REPLIES;
/// Mask bits of a first poll: one reply expected from 2^16 receivers.
pub(super) const FIRST_BITS: u32 = 16;
/// Bits a round drops when the previous one got too few replies (probability x4).
const STEP_BITS: u32 = 2;
/// A round that gets no reply where at least this many were expected is asked again.
const MIN_EXPECTED: u64 = 4;
/// Times one poll asks again at the same probability.
const MAX_REPEATS: u32 = 2;
/// How often a source without a group RTT looks again.
const NO_GRTT_RETRY: Duration = Duration::from_secs(1);
/// Shortest reply back-off a poll asks for.
const MIN_BO_IVL: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The next poll starts at this time (or once the group RTT is known).
    Idle(Instant),
    /// A round is out; its replies are counted until this time.
    Collecting(Instant),
}

/// The source's polls and its estimate of the group size.
#[derive(Debug)]
pub(super) struct GroupPoll {
    ivl: Duration,
    rng: Rng,
    sqn: u32,
    round: u16,
    bits: u32,
    rand: [u8; 4],
    bo_ivl: Duration,
    phase: Phase,
    /// A POLL to send: the round just started, or the cancelling poll of an aborted one.
    pending: Option<PollRepr>,
    /// Addresses that replied to the current round (at most [`ABORT_REPLIES`]).
    replies: Vec<IpAddr>,
    /// The latest estimate and when it was made.
    estimate: Option<(u64, Instant)>,
    /// Bits the next poll's first round starts with.
    next_bits: u32,
    /// Rounds of this poll asked again at the same probability.
    repeats: u32,
}

impl GroupPoll {
    /// Polls every `ivl`, the first once the group RTT is known. The POLL_RAND strings come
    /// from a generator seeded with the TSI (which the runtime draws at random).
    pub(super) fn new(ivl: Duration, tsi: &Tsi, now: Instant) -> GroupPoll {
        let seed = tsi
            .gsi
            .0
            .iter()
            .chain(tsi.sport.to_be_bytes().iter())
            .fold(0x504f_4c4c_u64, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        GroupPoll {
            ivl,
            rng: Rng::new(seed),
            sqn: 0,
            round: 0,
            bits: FIRST_BITS,
            rand: [0; 4],
            bo_ivl: MIN_BO_IVL,
            phase: Phase::Idle(now),
            pending: None,
            replies: Vec::new(),
            estimate: None,
            next_bits: FIRST_BITS,
            repeats: 0,
        }
    }

    /// The estimated number of receivers, while no older than three poll intervals.
    pub(super) fn estimate(&self, now: Instant) -> Option<u64> {
        self.estimate
            .filter(|&(_, at)| now.saturating_duration_since(at) < self.ivl * 3)
            .map(|(n, _)| n)
    }

    /// When [`GroupPoll::on_timeout`] next has something to do.
    pub(super) fn deadline(&self) -> Instant {
        if self.pending.is_some() {
            return Instant::ZERO;
        }
        match self.phase {
            Phase::Idle(t) | Phase::Collecting(t) => t,
        }
    }

    /// Starts or ends rounds that are due; `grtt` is the group RTT (no poll before one is
    /// known: the back-off and collection times scale with it).
    pub(super) fn on_timeout(&mut self, now: Instant, grtt: Option<Duration>, nla: IpAddr) {
        match self.phase {
            Phase::Idle(t) if now >= t => match grtt {
                Some(g) => {
                    self.sqn = self.sqn.wrapping_add(1);
                    self.round = 0;
                    self.bits = self.next_bits;
                    self.start_round(now, g, nla);
                }
                // Not yet measured (or no controller measures it): look again later.
                None => self.phase = Phase::Idle(now + NO_GRTT_RETRY),
            },
            Phase::Collecting(t) if now >= t => self.end_round(now, grtt, nla),
            _ => {}
        }
    }

    fn start_round(&mut self, now: Instant, g: Duration, nla: IpAddr) {
        self.rand = (self.rng.below(1 << 32) as u32).to_be_bytes();
        self.bo_ivl = (g * 2).max(MIN_BO_IVL);
        self.replies.clear();
        // The POLL's trip, the longest back-off, the POLR's trip, and a group RTT of queue.
        self.phase = Phase::Collecting(now + self.bo_ivl + g * 2);
        self.pending = Some(self.poll(nla, mask(self.bits)));
    }

    fn poll(&self, nla: IpAddr, mask: u32) -> PollRepr {
        PollRepr {
            sqn: self.sqn,
            round: self.round,
            s_type: POLL_GENERAL,
            path_nla: nla,
            bo_ivl: u32::try_from(self.bo_ivl.as_micros()).unwrap_or(u32::MAX),
            rand: self.rand,
            mask,
        }
    }

    fn end_round(&mut self, now: Instant, grtt: Option<Duration>, nla: IpAddr) {
        let n = self.replies.len();
        if n < TARGET_REPLIES && self.bits > 0 {
            if let Some(g) = grtt {
                // No reply where the last estimate expected several: the POLL was most
                // likely lost on a shared link (every receiver misses it at once). Ask
                // again at the same probability rather than four times higher.
                let expected = self.estimate.map_or(0, |(e, _)| e >> self.bits);
                if n == 0 && expected >= MIN_EXPECTED && self.repeats < MAX_REPEATS {
                    self.repeats += 1;
                } else {
                    self.bits = self.bits.saturating_sub(STEP_BITS);
                }
                self.round = self.round.wrapping_add(1);
                self.start_round(now, g, nla);
                return;
            }
        }
        self.finish(now, (n as u64) << self.bits, false);
    }

    /// The poll is over with estimate `est` (`lower`: a lower bound only, from an aborted
    /// round). No reply at all tells nothing (the round-0 POLL may have been lost, which
    /// freezes every receiver out of the later rounds): the previous estimate stands until
    /// it expires. The next poll starts where this one would have expected a quarter of the
    /// target.
    fn finish(&mut self, now: Instant, est: u64, lower: bool) {
        let prev = self.estimate.map(|(e, _)| e);
        let est = if lower {
            est.max(prev.unwrap_or(0))
        } else {
            est
        };
        if est > 0 {
            self.estimate = Some((est, now));
        }
        let base = if est > 0 { est } else { prev.unwrap_or(0) };
        let per_target = (base / TARGET_REPLIES as u64).max(1);
        let bits = 63 - per_target.leading_zeros();
        self.next_bits = (bits + STEP_BITS).min(FIRST_BITS);
        self.repeats = 0;
        self.phase = Phase::Idle(now + self.ivl);
    }

    /// A POLR from `from` (its POLR_SQN and POLR_ROUND); true when it counted (a first reply
    /// to the round being collected).
    pub(super) fn on_polr(
        &mut self,
        now: Instant,
        from: IpAddr,
        sqn: u32,
        round: u16,
        nla: IpAddr,
    ) -> bool {
        let Phase::Collecting(_) = self.phase else {
            return false;
        };
        if sqn != self.sqn || round != self.round || self.replies.contains(&from) {
            return false;
        }
        self.replies.push(from);
        if self.replies.len() >= ABORT_REPLIES {
            // Far more than the round was set for: a lower bound is estimate enough, and a
            // new POLL_SQN asking nobody cancels the replies still waiting.
            let est = (self.replies.len() as u64) << self.bits;
            self.sqn = self.sqn.wrapping_add(1);
            self.round = 0;
            self.pending = Some(self.poll(nla, u32::MAX));
            self.finish(now, est, true);
        }
        true
    }

    /// The POLL to send now, if any.
    pub(super) fn take_pending(&mut self) -> Option<PollRepr> {
        self.pending.take()
    }
}

/// A POLL_MASK of `bits` low bits: reply probability 2^-bits.
fn mask(bits: u32) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    use super::super::test_tsi as tsi;

    fn addr(i: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i))
    }

    /// Runs one poll over `ids` (the receivers' RAND_NODE_IDs): every matching receiver
    /// replies within the round. Returns the estimate and the rounds it took.
    fn run_poll(p: &mut GroupPoll, ids: &[u32], now: &mut Instant) -> (u64, u32) {
        let (g, nla) = (Duration::from_millis(100), addr(0));
        let mut rounds = 0;
        loop {
            p.on_timeout(*now, Some(g), nla);
            if let Some(poll) = p.take_pending() {
                rounds += 1;
                for (i, &id) in ids.iter().enumerate() {
                    if poll.matches(id) {
                        p.on_polr(*now, addr(i as u32 + 1), poll.sqn, poll.round, nla);
                    }
                }
                // An aborting poll would ask nobody.
                if let Some(cancel) = p.take_pending() {
                    assert_eq!(cancel.mask, u32::MAX);
                }
            }
            if let Phase::Idle(t) = p.phase {
                *now = t;
                return (p.estimate.map_or(0, |(n, _)| n), rounds);
            }
            *now = p.deadline();
        }
    }

    #[test]
    fn polls_count_a_group_within_a_quarter_and_the_next_poll_starts_near_the_count() {
        for n in [1u32, 5, 100, 3000, 40_000] {
            let mut rng = Rng::new(u64::from(n));
            let ids: Vec<u32> = (0..n).map(|_| rng.below(1 << 32) as u32).collect();
            let mut now = Instant::ZERO;
            let mut p = GroupPoll::new(Duration::from_secs(30), &tsi(), now);
            let (first, rounds) = run_poll(&mut p, &ids, &mut now);
            let err = (first as f64 - f64::from(n)).abs() / f64::from(n);
            assert!(err <= 0.5, "n = {n}: estimate {first}");
            if n < TARGET_REPLIES as u32 {
                // Too few to reach the target before every receiver is asked: exact.
                assert_eq!(first, u64::from(n));
            }
            assert!(rounds <= 1 + FIRST_BITS / STEP_BITS, "{rounds} rounds");
            // The next poll starts two steps above the estimate: a round or two.
            let (second, rounds) = run_poll(&mut p, &ids, &mut now);
            assert!(rounds <= 3, "n = {n}: {rounds} rounds the second time");
            let err = (second as f64 - f64::from(n)).abs() / f64::from(n);
            assert!(err <= 0.5, "n = {n}: second estimate {second}");
        }
    }

    #[test]
    fn a_lost_poll_is_asked_again_and_no_reply_keeps_the_last_estimate() {
        let (g, nla) = (Duration::from_millis(100), addr(0));
        let mut now = Instant::ZERO;
        let mut p = GroupPoll::new(Duration::from_secs(30), &tsi(), now);
        p.finish(now, 300, false);
        now += Duration::from_secs(30);
        // 300 receivers: round 0 asks with 6 bits (about 5 replies expected).
        p.on_timeout(now, Some(g), nla);
        assert_eq!(p.take_pending().map(|q| q.mask), Some(0x3f));
        // It reaches nobody: the same probability again, twice, then four times higher.
        for mask in [0x3f, 0x3f, 0x0f, 0x03, 0] {
            now = p.deadline();
            p.on_timeout(now, Some(g), nla);
            assert_eq!(p.take_pending().map(|q| q.mask), Some(mask));
        }
        // Nobody answered even the deterministic round: the estimate stands.
        now = p.deadline();
        p.on_timeout(now, Some(g), nla);
        assert_eq!(p.take_pending(), None);
        assert_eq!(p.estimate(now), Some(300));
    }

    #[test]
    fn a_round_flooded_with_replies_ends_and_cancels_the_rest() {
        let mut now = Instant::ZERO;
        let mut p = GroupPoll::new(Duration::from_secs(30), &tsi(), now);
        // As if the last poll had counted 16 receivers: the next asks with 2 + 0 bits.
        p.finish(now, 16, false);
        now += Duration::from_secs(30);
        p.on_timeout(now, Some(Duration::from_millis(100)), addr(0));
        let poll = p.take_pending().expect("a poll");
        assert_eq!(poll.mask, 0b11);
        for i in 0..ABORT_REPLIES as u32 {
            assert!(p.on_polr(now, addr(i + 1), poll.sqn, poll.round, addr(0)));
        }
        let cancel = p.take_pending().expect("a cancelling poll");
        assert_eq!((cancel.sqn, cancel.mask), (poll.sqn + 1, u32::MAX));
        assert_eq!(p.estimate(now), Some((ABORT_REPLIES as u64) << 2));
        // Late replies to the aborted poll are not counted.
        assert!(!p.on_polr(now, addr(999), poll.sqn, poll.round, addr(0)));
    }
}
