//! pgmcc's receiver role (paper §3.3, §3.5; draft §2.5): the receiver an ODATA names as
//! acker ACKs it at once; when an ODATA asks for an election (acker unspecified), every
//! receiver answers with an ACK after a random wait in `[0, ack_bo_ivl]` (OpenPGM's
//! `ack_bo_ivl`) unless the packets that follow name an acker first.

use std::net::IpAddr;

use crate::rng::Rng;
use crate::time::{Duration, Instant};

/// The acker role of one receiver for one session.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Acker {
    /// When this receiver answers the pending election request.
    election: Option<Instant>,
    /// The latest ODATA named this receiver as acker.
    named: bool,
}

impl Acker {
    /// An ODATA naming `acker` arrived at a receiver whose NLA is `nla`. Returns true when
    /// this receiver must ACK it now; `due` is false when the controller's cadence holds the
    /// named acker's ACK back (TFMCC's CLR reports once per interval).
    pub(crate) fn on_odata(
        &mut self,
        acker: IpAddr,
        nla: IpAddr,
        due: bool,
        now: Instant,
        rng: &mut Rng,
        ack_bo_ivl: Duration,
    ) -> bool {
        self.named = acker == nla;
        if acker == nla {
            self.election = None;
            due
        } else if acker.is_unspecified() {
            if self.election.is_none() {
                self.election = Some(now + rng.duration_up_to(ack_bo_ivl));
            }
            false
        } else {
            // Someone else is the acker: any pending answer to an election is moot.
            self.election = None;
            false
        }
    }

    /// True when the latest ODATA named this receiver as acker.
    pub(crate) fn named(&self) -> bool {
        self.named
    }

    /// Drops a pending election answer (controllers that send no ACKs).
    pub(crate) fn cancel(&mut self) {
        self.election = None;
    }

    /// When the pending election answer is due.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.election
    }

    /// True when the election answer is due at `now` (it is then no longer pending).
    pub(crate) fn on_timeout(&mut self, now: Instant) -> bool {
        if self.election.is_some_and(|t| t <= now) {
            self.election = None;
            return true;
        }
        false
    }
}
