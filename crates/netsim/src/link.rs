//! A unidirectional link: drop-tail queue, serialisation at a rate, propagation delay, and
//! optional random loss (Bernoulli or Gilbert-Elliott) applied to packets leaving the wire.

use std::collections::VecDeque;

use pgmcc::rng::Rng;
use pgmcc::{Duration, Instant};
use serde::Serialize;

use crate::packet::Packet;

/// Index of a node.
pub type NodeId = usize;
/// Index of a link.
pub type LinkId = usize;

/// Drop-tail queue capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum QueueLimit {
    /// At most this many packets waiting (not counting the one on the wire).
    Packets(usize),
    /// At most this many bytes waiting.
    Bytes(usize),
}

/// Random loss on a link.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum LossModel {
    /// No random loss.
    None,
    /// Each packet lost independently with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Two-state Gilbert-Elliott channel.
    GilbertElliott {
        /// Probability of moving good -> bad per packet.
        p_gb: f64,
        /// Probability of moving bad -> good per packet.
        p_bg: f64,
        /// Loss probability in the good state.
        loss_good: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
    },
}

/// Link parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkConfig {
    /// Bits per second.
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Queue capacity.
    pub queue: QueueLimit,
    /// Random loss.
    pub loss: LossModel,
}

/// Counters of a link.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LinkStats {
    /// Packets that finished serialisation.
    pub packets: u64,
    /// Bytes that finished serialisation.
    pub bytes: u64,
    /// Packets dropped because the queue was full.
    pub queue_drops: u64,
    /// The same drops by flow: `(flow id, drops)`, one entry per flow that lost a packet
    /// here (a scenario has few flows, so a short list scanned on each drop).
    pub queue_drops_by_flow: Vec<(u32, u64)>,
    /// Packets lost to the random loss model.
    pub random_losses: u64,
    /// Nanoseconds the link spent transmitting.
    pub busy_ns: u64,
}

/// A link and its state.
#[derive(Debug)]
pub struct Link {
    /// Tail node.
    pub from: NodeId,
    /// Head node.
    pub to: NodeId,
    /// Parameters.
    pub config: LinkConfig,
    queue: VecDeque<Packet>,
    queued_bytes: usize,
    /// Packet on the wire, if any.
    busy: bool,
    bad_state: bool,
    rng: Rng,
    /// Counters.
    pub stats: LinkStats,
}

impl Link {
    /// A link between two nodes with its own seeded loss generator.
    pub fn new(from: NodeId, to: NodeId, config: LinkConfig, seed: u64) -> Link {
        Link {
            from,
            to,
            config,
            queue: VecDeque::new(),
            queued_bytes: 0,
            busy: false,
            bad_state: false,
            rng: Rng::new(seed),
            stats: LinkStats::default(),
        }
    }

    /// Serialisation time of `bytes` at the link rate.
    pub fn tx_time(&self, bytes: u32) -> Duration {
        let rate = self.config.rate_bps.max(1);
        // In 64 bits whenever it fits (any packet of up to 2 GB): a 128-bit division costs
        // more than the rest of a packet's transmission.
        let ns = match u64::from(bytes).checked_mul(8_000_000_000) {
            Some(bits_ns) => bits_ns / rate,
            None => {
                let ns = u128::from(bytes) * 8_000_000_000 / u128::from(rate);
                u64::try_from(ns).unwrap_or(u64::MAX)
            }
        };
        Duration::from_nanos(ns)
    }

    /// Offers a packet. Returns `Some(finish time)` if it went straight onto the wire,
    /// `None` if it was queued or dropped (drop counted).
    pub fn enqueue(&mut self, now: Instant, p: Packet) -> Option<(Instant, Packet)> {
        if !self.busy {
            self.busy = true;
            let t = self.tx_time(p.size);
            self.stats.busy_ns += t.as_nanos() as u64;
            return Some((now + t, p));
        }
        let fits = match self.config.queue {
            QueueLimit::Packets(n) => self.queue.len() < n,
            QueueLimit::Bytes(b) => self.queued_bytes + p.size as usize <= b,
        };
        if fits {
            self.queued_bytes += p.size as usize;
            self.queue.push_back(p);
        } else {
            self.stats.queue_drops += 1;
            match self
                .stats
                .queue_drops_by_flow
                .iter_mut()
                .find(|(f, _)| *f == p.flow)
            {
                Some((_, n)) => *n += 1,
                None => self.stats.queue_drops_by_flow.push((p.flow, 1)),
            }
        }
        None
    }

    /// The packet on the wire finished: count it, decide whether the loss model kills it,
    /// and start the next one. Returns `(survived, next on the wire with its finish time)`.
    pub fn finish(&mut self, now: Instant, p: &Packet) -> (bool, Option<(Instant, Packet)>) {
        self.stats.packets += 1;
        self.stats.bytes += u64::from(p.size);
        let lost = self.draw_loss();
        if lost {
            self.stats.random_losses += 1;
        }
        let next = match self.queue.pop_front() {
            Some(n) => {
                self.queued_bytes -= n.size as usize;
                let t = self.tx_time(n.size);
                self.stats.busy_ns += t.as_nanos() as u64;
                Some((now + t, n))
            }
            None => {
                self.busy = false;
                None
            }
        };
        (!lost, next)
    }

    fn draw_loss(&mut self) -> bool {
        match self.config.loss {
            LossModel::None => false,
            LossModel::Bernoulli { p } => self.rng.unit() < p,
            LossModel::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                let flip = if self.bad_state { p_bg } else { p_gb };
                if self.rng.unit() < flip {
                    self.bad_state = !self.bad_state;
                }
                let p = if self.bad_state { loss_bad } else { loss_good };
                self.rng.unit() < p
            }
        }
    }

    /// Packets waiting.
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }
}
