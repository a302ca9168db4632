//! Receivers that NAK without reporting: OpenPGM's (their NAKs carry no OPT_PGMCC_FEEDBACK,
//! with or without PGMCC, and their ACKs report loss 0) and ours run with `--no-pgmcc`. The
//! election never hears their loss, so a group that includes one behind a slower or lossier
//! path than every reporting receiver would be driven at the reporting receivers' rate, and
//! that receiver's path overrun (issue 24: one such receiver lost 3,312 packets of 50 MB while
//! the window sat at 268).
//!
//! A NAK still says which packets a receiver lost. The source groups them into loss events
//! as TCP and TFRC do (losses within one window of packets after an event's first loss are
//! that event: a burst is one congestion signal) and reads the receiver's loss event rate `p`
//! from the last eight intervals between events, weighted as RFC 5348 §5.4 weights them.
//! A TCP flow on that receiver's path would keep `sqrt(1.5 / p)` packets in flight (Mathis
//! et al.'s window, `sqrt(3 / 2p)`); the source measures how many it keeps in flight to that
//! receiver, in packets as the pgmcc paper measures RTTs: the packets sent between a lost
//! packet and the NAK for it (the smallest of the last eight such samples, so that the NAK's
//! random back-off counts as little as it can; queueing on the receiver's path counts, as it
//! does for TCP). When that exceeds TCP's window, pgmcc's window is cut by the same ratio,
//! so the silent receiver sees the TCP-fair rate however the acker's RTT compares with its
//! own. A parity NAK says how many packets of a group are missing, not which: its group's
//! first packets stand for them.
//!
//! NAK suppression hides losses a silent receiver shares with others (it hears their NCF and
//! keeps quiet): those losses are seen by the reporting receivers too, so the acker covers
//! them; losses of its own path are NAKed by it alone and counted. Everything is bounded: at
//! most [`MAX_RECEIVERS`] receivers (the one heard least recently leaves first), nine event
//! starts each, forgotten after [`FORGET`] of silence. A forged NAK can only make the source
//! slower than it could be (keyed mode authenticates NAKs).

use std::collections::VecDeque;
use std::net::IpAddr;

use crate::sqn;
use crate::time::{Duration, Instant};

/// Silent receivers tracked at once.
pub(crate) const MAX_RECEIVERS: usize = 16;
/// Packets that must have been sent since a silent receiver was first heard before its loss
/// rate bounds the window (fewer give too coarse an estimate).
pub(crate) const MIN_SPAN: u32 = 100;
/// A silent receiver not heard from for this long no longer bounds the window.
pub(crate) const FORGET: Duration = Duration::from_secs(30);
/// NAKs whose in-flight samples are kept.
const FLIGHT_SAMPLES: usize = 8;
/// Weights of the last eight loss intervals (RFC 5348 §5.4).
const WEIGHTS: [f64; 8] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

#[derive(Debug, Clone)]
struct Silent {
    addr: IpAddr,
    /// The source's lead when this receiver was first heard: the start of what it observed.
    since: u32,
    /// First lost packet of each of its latest loss events, newest first (at most nine:
    /// eight closed intervals between them and the one before).
    events: VecDeque<u32>,
    /// Packets sent between a lost packet and the first NAK for it, and the source's window
    /// then, for the latest eight NAKs of new losses.
    flight: VecDeque<(u32, u32)>,
    /// The newest packet it has NAKed (a NAK repeated for an older one is no sample).
    newest: Option<u32>,
    last_heard: Instant,
}

impl Silent {
    /// The loss event rate with `lead` the last packet sent; `None` before `MIN_SPAN`
    /// packets were observed.
    fn loss_event_rate(&self, lead: u32) -> Option<f64> {
        if sqn::distance(self.since, lead) < MIN_SPAN {
            return None;
        }
        let Some(&newest) = self.events.front() else {
            return Some(0.0);
        };
        // Closed intervals between event starts, newest first; the first event's interval
        // is what was observed before it.
        let mut closed: Vec<f64> = self
            .events
            .iter()
            .zip(self.events.iter().skip(1))
            .map(|(&a, &b)| f64::from(sqn::distance(b, a).max(1)))
            .collect();
        if self.events.len() <= WEIGHTS.len() {
            if let Some(&oldest) = self.events.back() {
                closed.push(f64::from(sqn::distance(self.since, oldest).max(1)));
            }
        }
        closed.truncate(WEIGHTS.len());
        let open = f64::from(sqn::distance(newest, lead));
        let (mut tot0, mut tot1, mut w_tot) = (0.0, 0.0, 0.0);
        for (i, w) in WEIGHTS.iter().take(closed.len()).enumerate() {
            tot1 += closed[i] * w;
            tot0 += if i == 0 { open } else { closed[i - 1] } * w;
            w_tot += w;
        }
        let mean = tot0.max(tot1) / w_tot;
        Some((1.0 / mean.max(1.0)).min(1.0))
    }
}

/// The silent receivers a source has heard.
#[derive(Debug, Clone, Default)]
pub(crate) struct SilentReceivers {
    entries: Vec<Silent>,
}

impl SilentReceivers {
    /// A NAK without report from `from` says `lost` were lost and covers the packets up to
    /// `covers` ([`crate::cc::Nak::covers`]); `lead` is the last data packet sent and
    /// `window` the source's window in packets.
    pub(crate) fn on_nak(
        &mut self,
        now: Instant,
        from: IpAddr,
        lost: &[u32],
        covers: Option<u32>,
        lead: u32,
        window: u32,
    ) {
        let i = match self.entries.iter().position(|e| e.addr == from) {
            Some(i) => i,
            None => {
                if self.entries.len() >= MAX_RECEIVERS {
                    let oldest = self
                        .entries
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, e)| e.last_heard)
                        .map_or(0, |(i, _)| i);
                    self.entries.swap_remove(oldest);
                }
                self.entries.push(Silent {
                    addr: from,
                    since: lead,
                    events: VecDeque::new(),
                    flight: VecDeque::new(),
                    newest: None,
                    last_heard: now,
                });
                self.entries.len() - 1
            }
        };
        let e = &mut self.entries[i];
        e.last_heard = now;
        let mut lost: Vec<u32> = lost
            .iter()
            .copied()
            // Only packets sent since it was first heard (a NAK for a packet never sent,
            // or from before, says nothing about the path now).
            .filter(|&s| !sqn::gt(s, lead) && sqn::gt(s, e.since))
            .collect();
        lost.sort_by(|&a, &b| {
            if sqn::lt(a, b) {
                std::cmp::Ordering::Less
            } else if a == b {
                std::cmp::Ordering::Equal
            } else {
                std::cmp::Ordering::Greater
            }
        });
        // The packets sent after the last one the NAK covers are what this receiver had in
        // flight (plus its NAK back-off), when it first NAKs a loss.
        if let Some(newest) = covers.filter(|&c| !sqn::gt(c, lead)) {
            if e.newest.is_none_or(|n| sqn::gt(newest, n)) {
                e.newest = Some(newest);
                e.flight
                    .push_front((sqn::distance(newest, lead), window.max(1)));
                e.flight.truncate(FLIGHT_SAMPLES);
            }
        }
        // One loss event spans one round trip of this receiver in packets (at least the
        // source's window).
        let span = e
            .flight
            .iter()
            .map(|&(pkts, _)| pkts)
            .min()
            .unwrap_or(0)
            .max(window.max(1));
        for s in lost {
            let new_event = match e.events.front() {
                None => true,
                Some(&start) => sqn::gt(s, start.wrapping_add(span)),
            };
            if new_event {
                e.events.push_front(s);
                e.events.truncate(WEIGHTS.len() + 1);
            }
        }
    }

    /// The highest loss event rate among the silent receivers heard within [`FORGET`] and
    /// observed for at least [`MIN_SPAN`] packets, with the receiver.
    pub(crate) fn worst(&self, now: Instant, lead: u32) -> Option<(IpAddr, f64)> {
        self.live(now)
            .filter_map(|e| e.loss_event_rate(lead).map(|p| (e.addr, p)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    fn live(&self, now: Instant) -> impl Iterator<Item = &Silent> {
        self.entries
            .iter()
            .filter(move |e| now.saturating_duration_since(e.last_heard) < FORGET)
    }

    /// The window bound the silent receivers set, in packets: for each, TCP's window at its
    /// loss event rate `p`, `sqrt(1.5 / p)`, scaled by the acker's round trip over its own
    /// (the least ratio of packets in flight to it over the source's window among its last
    /// NAKs); the smallest, at least 1 (in packets, fractions kept). `None` when none has
    /// had a loss event.
    pub(crate) fn window_cap(&self, now: Instant, lead: u32) -> Option<f64> {
        self.live(now)
            .filter_map(|e| {
                let p = e.loss_event_rate(lead)?;
                let ratio = e
                    .flight
                    .iter()
                    .map(|&(pkts, w)| f64::from(pkts) / f64::from(w))
                    .reduce(f64::min)?;
                (p > 0.0).then(|| (1.5 / p).sqrt() / ratio.max(1e-3))
            })
            .reduce(f64::min)
            .map(|c| c.max(1.0))
    }

    /// Receivers tracked.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when none is tracked.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn addr(i: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, i))
    }

    #[test]
    fn losses_within_a_window_are_one_event_and_the_rate_is_tfrcs() {
        let mut s = SilentReceivers::default();
        let t = Instant::from_nanos(1);
        s.on_nak(t, addr(1), &[], None, 0, 10);
        // Too few packets observed: no bound yet.
        s.on_nak(t, addr(1), &[50, 51, 52], Some(52), 58, 10);
        assert_eq!(s.worst(t, 60), None);
        // A loss event every 100 packets, each a burst of three NAKed twice: the events
        // start at 50, 150, ..., 950.
        for k in 1..10u32 {
            let first = 50 + 100 * k;
            s.on_nak(
                t,
                addr(1),
                &[first, first + 2, first + 5],
                Some(first + 5),
                first + 13,
                10,
            );
            // A retry: not a new sample of the packets in flight.
            s.on_nak(t, addr(1), &[first + 2], Some(first + 2), first + 60, 10);
        }
        let (who, p) = s.worst(t, 1000).expect("tracked");
        assert_eq!(who, addr(1));
        // Eight closed intervals of 100; the open one (50) does not raise the mean.
        assert!((p - 0.01).abs() < 1e-9, "{p}");
        // TCP's window at a 1% loss event rate is sqrt(1.5 / 0.01) = 12.2 packets; the NAKs
        // came 8 packets after their newest loss with a window of 10: this receiver's round
        // trip is 0.8 of the acker's, so the source's window may be 12.2 / 0.8 = 15.3 (the
        // fraction kept: at a window of 2.9, rounding down would take a third).
        let cap = s.window_cap(t, 1000).expect("a bound");
        assert!((cap - 1.5f64.sqrt() * 10.0 / 0.8).abs() < 1e-9, "{cap}");
        // Had they come 20 packets after, its round trip would be twice the acker's: half of
        // TCP's window.
        let mut far = s.clone();
        far.entries[0].flight = VecDeque::from(vec![(20, 10); 8]);
        let cap = far.window_cap(t, 1000).expect("a bound");
        assert!((cap - 1.5f64.sqrt() * 10.0 / 2.0).abs() < 1e-9, "{cap}");
        // A long loss-free stretch opens the newest interval: the rate falls.
        let (_, later) = s.worst(t, 3000).expect("tracked");
        assert!(later < 0.01 / 2.0, "{later}");
        // Silence for FORGET: forgotten.
        assert_eq!(far.window_cap(t + FORGET, 1000), None);
    }

    #[test]
    fn unsent_packets_do_not_count_and_the_table_is_bounded() {
        let mut s = SilentReceivers::default();
        let t = Instant::from_nanos(1);
        s.on_nak(t, addr(1), &[], None, 0, 10);
        // NAKs for packets never sent (ahead of the lead) are not losses.
        s.on_nak(t, addr(1), &[5000, 6000], Some(6000), 500, 10);
        assert_eq!(s.worst(t, 500).map(|w| w.1), Some(0.0));
        for i in 0..(MAX_RECEIVERS as u8 + 10) {
            s.on_nak(
                t + Duration::from_millis(u64::from(i)),
                addr(i),
                &[400],
                Some(400),
                500,
                10,
            );
        }
        assert_eq!(s.len(), MAX_RECEIVERS);
        // Sequence numbers wrap: one event 490 packets in, 411 packets before the lead.
        let mut w = SilentReceivers::default();
        w.on_nak(t, addr(9), &[], None, u32::MAX - 500, 10);
        w.on_nak(
            t,
            addr(9),
            &[u32::MAX - 10, u32::MAX - 8],
            Some(u32::MAX - 8),
            400,
            10,
        );
        let (_, p) = w.worst(t, 400).expect("tracked");
        assert!((p - 1.0 / 490.0).abs() < 1e-9, "{p}");
    }
}
