//! Answering the source's general polls (RFC 3208 Appendix D, §14.5): the source counts its
//! receivers by asking each to reply with a probability it sets, and scales its receivers'
//! NAK back-off to the count (`docs/core.md`, "Group size").

use std::net::IpAddr;

use pgm_wire::poll::POLL_GENERAL;
use pgm_wire::PollRepr;

use crate::rng::Rng;
use crate::time::{Duration, Instant};

/// The longest back-off a POLL may ask for before its reply: a source waits at least this
/// long for replies, and a receiver never holds a reply longer (the field is 32 bits of
/// microseconds, over an hour).
pub(crate) const MAX_POLL_BO_IVL: Duration = Duration::from_secs(10);

/// A reply waiting for its back-off: when it goes, its POLR_SQN and POLR_ROUND, and the
/// poll's path NLA (where it goes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PollReply {
    pub(super) at: Instant,
    pub(super) sqn: u32,
    pub(super) round: u16,
    pub(super) to: IpAddr,
}

/// One session's poll state.
#[derive(Debug, Default)]
pub(super) struct PollState {
    /// POLL_SQN of the latest poll heard, and whether its round 0 was.
    sqn: Option<(u32, bool)>,
    /// A reply waiting for its back-off.
    pub(super) reply: Option<PollReply>,
}

impl PollState {
    /// A POLL of the session arrived. `node_id` is this receiver's RAND_NODE_ID; `rng` draws
    /// the back-off. Returns whether the receiver will reply.
    pub(super) fn on_poll(
        &mut self,
        now: Instant,
        poll: &PollRepr,
        node_id: u32,
        rng: &mut Rng,
    ) -> bool {
        // A poll of another kind (a DLR poll) is not for receivers: ignored (§14.3.2).
        if poll.s_type != POLL_GENERAL {
            return false;
        }
        // A new POLL_SQN cancels any reply still waiting (§14.3.1).
        let seen_round0 = match self.sqn {
            Some((sqn, seen)) if sqn == poll.sqn => seen,
            _ => {
                self.reply = None;
                false
            }
        };
        let seen_round0 = seen_round0 || poll.round == 0;
        self.sqn = Some((poll.sqn, seen_round0));
        // Later rounds "freeze" the population: only receivers that saw round 0 answer.
        if !seen_round0 {
            return false;
        }
        if !poll.matches(node_id) {
            return false;
        }
        let bo_ivl = Duration::from_micros(u64::from(poll.bo_ivl)).min(MAX_POLL_BO_IVL);
        self.reply = Some(PollReply {
            at: now + rng.duration_up_to(bo_ivl),
            sqn: poll.sqn,
            round: poll.round,
            to: poll.path_nla,
        });
        true
    }

    /// The reply due at `now`, taken.
    pub(super) fn take_due(&mut self, now: Instant) -> Option<PollReply> {
        match self.reply {
            Some(r) if r.at <= now => self.reply.take(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn poll(sqn: u32, round: u16, mask: u32) -> PollRepr {
        PollRepr {
            sqn,
            round,
            s_type: POLL_GENERAL,
            path_nla: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            bo_ivl: 100_000,
            rand: 0x0000_00a5u32.to_be_bytes(),
            mask,
        }
    }

    #[test]
    fn a_receiver_replies_when_its_id_matches_the_masked_bits_within_the_back_off() {
        let (mut s, mut rng, now) = (PollState::default(), Rng::new(1), Instant::ZERO);
        // Low four bits 0x5: matches 0x...5 under mask 0xf, not 0x...4.
        assert!(!s.on_poll(now, &poll(1, 0, 0xf), 0x1234, &mut rng));
        assert!(s.on_poll(now, &poll(1, 0, 0xf), 0x1235, &mut rng));
        let r = s.reply.expect("a reply waits");
        assert!(r.at <= now + Duration::from_millis(100));
        assert_eq!((r.sqn, r.round), (1, 0));
        assert_eq!(s.take_due(now + Duration::from_millis(100)), Some(r));
        assert_eq!(s.take_due(now + Duration::from_millis(200)), None);
        // An all-zero mask is a deterministic poll: everyone replies.
        assert!(s.on_poll(now, &poll(2, 0, 0), 0x1234, &mut rng));
    }

    #[test]
    fn later_rounds_count_only_receivers_that_saw_round_zero_and_a_new_poll_cancels() {
        let (mut rng, now) = (Rng::new(1), Instant::ZERO);
        let mut late = PollState::default();
        assert!(!late.on_poll(now, &poll(7, 1, 0), 0, &mut rng));
        let mut s = PollState::default();
        assert!(!s.on_poll(now, &poll(7, 0, 0xff), 0, &mut rng));
        assert!(s.on_poll(now, &poll(7, 1, 0), 0, &mut rng));
        assert_eq!(s.reply.map(|r| r.round), Some(1));
        // A poll with another POLL_SQN cancels the waiting reply.
        assert!(!s.on_poll(now, &poll(8, 0, 0xff), 0, &mut rng));
        assert_eq!(s.reply, None);
        // A DLR poll is not for receivers.
        let dlr = PollRepr {
            s_type: pgm_wire::poll::POLL_DLR,
            ..poll(9, 0, 0)
        };
        assert!(!s.on_poll(now, &dlr, 0, &mut rng));
    }
}
