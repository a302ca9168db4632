//! The receiver's one transmit queue (NAKs, SPMRs, feedback ACKs, in the order the events
//! that caused them happened) and how each entry becomes a packet.

use std::collections::VecDeque;
use std::net::IpAddr;

use pgm_wire::{Body, NakRepr, Options, Repr, Tsi, OPT_PARITY};

use super::session::Peer;
use crate::cc::feedback::FeedbackAck;
use crate::sqn;
use crate::transmit::Destination;

/// A packet waiting for `poll_transmit`.
#[derive(Debug)]
pub(super) enum Pending {
    /// Sequence numbers for one NAK packet (at most 63: one in the header, 62 listed).
    Nak(Vec<u32>),
    /// Parity requests (`TG_SQN | (count - 1)`) for one parity NAK packet (header
    /// OPT_PARITY), at most 63.
    ParityNak(Vec<u32>),
    /// An SPMR to this address.
    Spmr(IpAddr),
    /// A feedback ACK with the receive state and report as they were when it was queued
    /// (several datagrams may be handled before `poll_transmit`). `since` is the RX_MAX of
    /// the oldest ACK this one replaced (coalescing), or its own.
    Ack { fb: FeedbackAck, since: u32 },
    /// A delivery report for the source (OPT_OUTCOME on a POLR; `Receiver::report`).
    Report(Box<pgm_wire::Outcome>),
    /// A reply to the source's general poll (RFC 3208 §14.5).
    Polr(super::poll::PollReply),
}

/// Packets queued for a driver that does not poll them: beyond this the oldest go (a NAK's
/// timer sends it again). A full receive window of gaps in each of 64 sessions fits.
pub(super) const MAX_QUEUED: usize = 16_384;

/// Queued packets of every session, at most [`MAX_QUEUED`].
#[derive(Debug, Default)]
pub(super) struct Outbox {
    queue: VecDeque<(Tsi, Pending)>,
    /// Packets dropped because the queue was full.
    pub(super) dropped: u64,
}

impl Outbox {
    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub(super) fn push(&mut self, tsi: Tsi, p: Pending) {
        if self.queue.len() >= MAX_QUEUED {
            self.queue.pop_front();
            self.dropped += 1;
        }
        self.queue.push_back((tsi, p));
    }

    pub(super) fn pop(&mut self) -> Option<(Tsi, Pending)> {
        self.queue.pop_front()
    }

    /// Drops everything queued for `tsi` (its session was evicted).
    pub(super) fn forget(&mut self, tsi: Tsi) {
        self.queue.retain(|(t, _)| *t != tsi);
    }

    /// Queues a feedback ACK. With `coalesce`, an acker's ACK replaces the newest queued
    /// transmit when that is an unsent plain ACK of the same session whose packets this one
    /// still covers; returns true when it did.
    pub(super) fn push_ack(&mut self, tsi: Tsi, fb: FeedbackAck, coalesce: bool) -> bool {
        if coalesce && fb.coalesce {
            if let Some((t, Pending::Ack { fb: a, since })) = self.queue.back_mut() {
                // RX_MAX only moves forward and received packets stay marked, so the new
                // bitmap holds every packet the queued ACKs reported while the oldest of
                // their RX_MAXes is within its 32 bits.
                if *t == tsi
                    && a.replaceable()
                    && !sqn::lt(fb.ack.rx_max, *since)
                    && sqn::distance(*since, fb.ack.rx_max) < 32
                {
                    *a = fb;
                    return true;
                }
            }
        }
        let since = fb.ack.rx_max;
        self.push(tsi, Pending::Ack { fb, since });
        false
    }
}

impl Pending {
    /// The packet and where it goes, or `None` when the session cannot send it yet (no
    /// source address or SPM path known). `group` and `dport` are the receiver's; a NAK
    /// carries `report`.
    pub(super) fn packet(
        &self,
        peer: &Peer,
        tsi: Tsi,
        dport: u16,
        group: IpAddr,
        report: Option<pgm_wire::PgmccFeedback>,
    ) -> Option<(Repr<'static>, Destination)> {
        match self {
            Pending::Nak(list) | Pending::ParityNak(list) => {
                let (Some(path), Some(source)) = (peer.path, peer.data_from) else {
                    return None;
                };
                let (&first, rest) = list.split_first()?;
                let body = Body::Nak(NakRepr {
                    sqn: first,
                    source,
                    group,
                });
                let mut repr =
                    Repr::upstream(tsi, dport, body).with_options(Options::nak(rest, report));
                if matches!(self, Pending::ParityNak(_)) {
                    repr.header_flags |= OPT_PARITY;
                }
                // NAKs go hop by hop: to the SPM path (the nearest PGM network element).
                Some((repr, Destination::Unicast(path)))
            }
            Pending::Ack { fb, .. } => {
                let source = peer.data_from?;
                let repr = Repr::upstream(tsi, dport, Body::Ack(fb.ack)).with_options(fb.options());
                // ACKs go straight to the source, not through network elements.
                Some((repr, Destination::Unicast(source)))
            }
            Pending::Report(outcome) => {
                let source = peer.data_from?;
                let lead = peer.rxw.as_ref().map_or(0, |w| w.base().wrapping_sub(1));
                let body = Body::Polr(pgm_wire::PolrRepr {
                    sqn: lead,
                    round: 0,
                });
                let opts = Options {
                    outcome: Some(outcome.as_ref().clone()),
                    ..Options::default()
                };
                // Straight to the source, as ACKs go.
                Some((
                    Repr::upstream(tsi, dport, body).with_options(opts),
                    Destination::Unicast(source),
                ))
            }
            Pending::Polr(r) => {
                let body = Body::Polr(pgm_wire::PolrRepr {
                    sqn: r.sqn,
                    round: r.round,
                });
                // To the interface the POLL came from (its path NLA).
                Some((Repr::upstream(tsi, dport, body), Destination::Unicast(r.to)))
            }
            Pending::Spmr(to) => Some((
                Repr::upstream(tsi, dport, Body::Spmr),
                Destination::Unicast(*to),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgm_wire::Gsi;

    #[test]
    fn an_unpolled_queue_keeps_the_newest_and_counts_the_rest() {
        let tsi = Tsi {
            gsi: Gsi([1; 6]),
            sport: 1,
        };
        let mut o = Outbox::default();
        for s in 0..(MAX_QUEUED as u32 + 3) {
            o.push(tsi, Pending::Nak(vec![s]));
        }
        assert_eq!(o.dropped, 3);
        assert!(matches!(o.pop(), Some((_, Pending::Nak(l))) if l == [3]));
    }
}
