//! What a receiver takes from the packets of a session that nothing authenticates (plain
//! mode, and signed mode's control plane): window edges and SPM sequence numbers only as far
//! as a real source could have moved them, and NAKs only at a rate the answers bound.
//!
//! A packet that passes source binding may still be forged from the source's address. The
//! checks here drop, before anything moves, packets whose edges no source sends: the trail
//! beyond the lead + 1 (RFC 3208 §6.1: an empty window has trail = lead + 1), a lead more
//! than a receive window ahead of the receiver's, an SPM sequence number further ahead of the
//! last one taken than the time since allows.

use super::session::Peer;
use crate::sqn;
use crate::time::{Duration, Instant};

/// SPM sequence numbers an SPM may lead the last one taken by, whatever the time since: SPMs
/// lost in a row, and a burst answering several SPMRs at once.
pub(super) const SPM_SQN_SLACK: u32 = 64;

/// SPMs per second a source is taken to send at most, on top of [`SPM_SQN_SLACK`]. Ours
/// sends heartbeats at most every `ihb_min` (100 ms) and group-RTT updates as often, an
/// ambient SPM every 30 s, and one per SPMR; OpenPGM's sources no more. A receiver that was
/// cut off for a while takes the next SPM once the time since its last one allows the jump.
pub(super) const MAX_SPM_RATE: u32 = 100;

/// A session from which nothing could be taken for this long may have moved anywhere (a
/// receiver cut off for longer than its window lasts): its next data packet is taken however
/// far ahead of the window it lies.
pub(super) const RESYNC_SILENCE: Duration = Duration::from_secs(1);

/// NAK packets a session may send in a burst with no answer (NCF or repair) from its
/// source.
pub(super) const NAK_BURST: u32 = 64;

/// NAK packets per second a session may send on top of the answers it gets: each NCF or
/// repair of the session heard lets one more go.
pub(super) const NAK_RATE: u32 = 50;

/// Whether an SPM with sequence number `spm_sqn` arriving at `now` may be `peer`'s source's:
/// ahead of the last SPM taken by at most [`SPM_SQN_SLACK`] plus [`MAX_SPM_RATE`] per second
/// since. One forged SPM far ahead would make every later real one look old.
pub(super) fn spm_sqn_plausible(peer: &Peer, spm_sqn: u32, now: Instant) -> bool {
    let Some(old) = peer.spm_sqn else {
        return true;
    };
    if !sqn::gt(spm_sqn, old) {
        // Old or duplicate: dropped as such, not counted here.
        return true;
    }
    let secs = now.saturating_duration_since(peer.spm_at).as_secs_f64();
    let allowed = f64::from(SPM_SQN_SLACK) + f64::from(MAX_SPM_RATE) * secs;
    f64::from(sqn::distance(old, spm_sqn)) <= allowed
}

/// Whether a packet showing the source's leading edge at `lead` may be `peer`'s source's:
/// at most `rxw_sqns` ahead of the receiver's window. With `resync` (data packets), any lead
/// is taken once the session was silent for [`RESYNC_SILENCE`].
pub(super) fn lead_plausible(
    peer: &Peer,
    lead: u32,
    rxw_sqns: u32,
    now: Instant,
    resync: bool,
) -> bool {
    let Some(w) = peer.rxw.as_ref() else {
        return true;
    };
    if !sqn::gt(lead, w.lead()) || sqn::distance(w.lead(), lead) <= rxw_sqns {
        return true;
    }
    resync && now.saturating_duration_since(peer.last_heard) >= RESYNC_SILENCE
}

/// Whether a data packet at `s` may carry `trail`: a source's trail is at most one past its
/// lead, and its lead is at least `s` and at least the lead the receiver knows (an RDATA
/// repairs an old packet while the source is further on).
pub(super) fn data_trail_plausible(peer: Option<&Peer>, s: u32, trail: u32) -> bool {
    let lead = peer
        .and_then(|p| p.rxw.as_ref())
        .map_or(s, |w| sqn::max(s, w.lead()));
    !sqn::gt(trail, lead.wrapping_add(1))
}

/// An SPM may carry `trail` with `lead` (RFC 3208 §6.1).
pub(super) fn spm_edges_plausible(trail: u32, lead: u32) -> bool {
    !sqn::gt(trail, lead.wrapping_add(1))
}

/// A token bucket: `burst` at once, refilled at `rate` per second.
#[derive(Debug, Clone)]
pub(crate) struct TokenBucket {
    tokens: f64,
    at: Instant,
    burst: f64,
    rate: f64,
}

impl TokenBucket {
    /// A full bucket at `now`.
    pub(crate) fn new(now: Instant, burst: u32, rate: u32) -> TokenBucket {
        TokenBucket {
            tokens: f64::from(burst),
            at: now,
            burst: f64::from(burst),
            rate: f64::from(rate),
        }
    }

    fn refill(&mut self, now: Instant) {
        let secs = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + secs * self.rate).min(self.burst);
        self.at = self.at.max(now);
    }

    /// Whether a token is left at `now` (none is taken).
    pub(crate) fn has(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= 1.0
    }

    /// Takes one token at `now`; false when none is left.
    pub(crate) fn take(&mut self, now: Instant) -> bool {
        let ok = self.has(now);
        if ok {
            self.tokens -= 1.0;
        }
        ok
    }

    /// One token back, up to the burst.
    pub(crate) fn give(&mut self) {
        self.tokens = (self.tokens + 1.0).min(self.burst);
    }
}

/// The NAKs a session may send without answers: a token bucket of [`NAK_BURST`] NAK packets,
/// refilled at [`NAK_RATE`] per second and by one for each NCF or repair heard
/// ([`TokenBucket::give`]). A NAK not sent for it is retried at the NAK timers' pace, as a
/// NAK lost on the way would be; so whatever a forged SPM or data packet makes a receiver
/// believe is missing, the NAKs it sends toward one address without answers stay within
/// this rate.
pub(super) fn nak_budget(now: Instant) -> TokenBucket {
    TokenBucket::new(now, NAK_BURST, NAK_RATE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(n)
    }

    #[test]
    fn the_nak_budget_allows_a_burst_then_its_rate_and_one_per_answer() {
        let mut b = nak_budget(ms(0));
        let burst = (0..1000).filter(|_| b.take(ms(0))).count();
        assert_eq!(burst, NAK_BURST as usize);
        // Ten seconds of trying every millisecond: the rate, not the attempts.
        let later = (1..=10_000).filter(|&t| b.take(ms(t))).count();
        assert_eq!(later, NAK_RATE as usize * 10);
        // Each answer lets one more go at once.
        for _ in 0..3 {
            b.give();
        }
        let answered = (0..10).filter(|_| b.take(ms(10_000))).count();
        assert_eq!(answered, 3);
    }
}
