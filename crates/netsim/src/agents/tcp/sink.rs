//! [`TcpSink`]: the receiving end of a TCP flow, cumulative ACKs with up to three SACK
//! blocks (RFC 2018), optionally delayed (RFC 5681 §4.2), echoing the sender's timestamps
//! (RFC 7323 §4.3) when its segments carry them, and its knobs [`TcpSinkConfig`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::IpAddr;

use pgmcc::{Duration, Instant};

use crate::agent::{Agent, Ctx};
use crate::agents::report::{AgentReport, TcpSinkReport};
use crate::packet::{Dest, Packet, Payload, TcpSegment};

/// Knobs of a [`TcpSink`]. `TcpSinkConfig::default()` gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSinkConfig {
    /// Delay ACKs: acknowledge every second in-order segment, or after `delack_timeout`.
    /// Default `false` (one ACK per segment, like ns-2's `TCPSink`).
    pub delayed_ack: bool,
    /// Delayed-ACK timer. Default 200 ms.
    pub delack_timeout: Duration,
    /// Send SACK blocks (senders that do not use them ignore them). Default `true`.
    pub sack: bool,
    /// Size of an ACK on the wire. Default 40 bytes.
    pub ack_bytes: u32,
}

impl Default for TcpSinkConfig {
    fn default() -> TcpSinkConfig {
        TcpSinkConfig {
            delayed_ack: false,
            delack_timeout: Duration::from_millis(200),
            sack: true,
            ack_bytes: 40,
        }
    }
}

/// Entries of [`TcpSink::recent`] allowed beyond twice the out-of-order blocks before it is
/// pruned.
const RECENT_SLACK: usize = 64;

/// A TCP receiver: cumulative ACKs with SACK blocks, counting in-order delivered bytes.
#[derive(Debug)]
pub struct TcpSink {
    flow: u32,
    config: TcpSinkConfig,
    /// Next byte expected.
    rcv_nxt: u64,
    /// Out-of-order blocks `start -> end` above `rcv_nxt`, disjoint and not adjacent.
    ooo: BTreeMap<u64, u64>,
    /// Sequence numbers of recently received out-of-order segments, most recent first
    /// (each names the block that contains it). Entries whose block was delivered, or
    /// that name the same block as an earlier entry, never matter again (blocks only grow
    /// and merge) and are dropped lazily: [`TcpSink::sack_blocks`] drops those it walks
    /// past, and [`TcpSink::prune_recent`] bounds the rest.
    recent: VecDeque<u64>,
    /// Where ACKs go (the source of the data).
    peer: Option<IpAddr>,
    /// RFC 7323 `TS.Recent`: the TSval the next ACK echoes, once a segment carried one.
    ts_recent: Option<Instant>,
    /// RFC 7323 `Last.ACK.sent`: the cumulative ACK last sent (the left edge).
    last_ack_sent: u64,
    /// An in-order segment is waiting for its delayed ACK.
    pending: bool,
    delack_deadline: Option<Instant>,
    segments_received: u64,
    duplicate_segments: u64,
    out_of_order_segments: u64,
    acks_sent: u64,
}

impl TcpSink {
    /// A sink for flow `flow` with default knobs.
    pub fn new(flow: u32) -> TcpSink {
        TcpSink::with_config(flow, TcpSinkConfig::default())
    }

    /// A sink for flow `flow`.
    pub fn with_config(flow: u32, config: TcpSinkConfig) -> TcpSink {
        TcpSink {
            flow,
            config,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            recent: VecDeque::new(),
            peer: None,
            ts_recent: None,
            last_ack_sent: 0,
            pending: false,
            delack_deadline: None,
            segments_received: 0,
            duplicate_segments: 0,
            out_of_order_segments: 0,
            acks_sent: 0,
        }
    }

    /// Bytes delivered in order (the next byte expected).
    pub fn delivered(&self) -> u64 {
        self.rcv_nxt
    }

    /// Data segments received, duplicates included.
    pub fn segments_received(&self) -> u64 {
        self.segments_received
    }

    /// ACKs sent.
    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }

    /// The out-of-order block containing `seq`, if any.
    fn block_of(&self, seq: u64) -> Option<(u64, u64)> {
        self.ooo
            .range(..=seq)
            .next_back()
            .filter(|(_, &e)| e > seq)
            .map(|(&s, &e)| (s, e))
    }

    /// Up to three SACK blocks, the most recently changed first (RFC 2018 §4): the blocks
    /// of the first entries of `recent` that name distinct blocks. Walks `recent` only until
    /// it has three and drops the entries it walked past; a walk over every entry on every
    /// ACK cost time quadratic in the number of holes (three quarters of a run's time at
    /// 100 Mbit/s x 400 ms, after a slow-start overshoot left thousands).
    fn sack_blocks(&mut self) -> Vec<(u64, u64)> {
        let mut blocks: Vec<(u64, u64)> = Vec::with_capacity(3);
        let mut kept: Vec<u64> = Vec::with_capacity(3);
        while blocks.len() < 3 {
            let Some(s) = self.recent.pop_front() else {
                break;
            };
            if let Some(b) = self.block_of(s) {
                if !blocks.contains(&b) {
                    blocks.push(b);
                    kept.push(s);
                }
            }
        }
        for &s in kept.iter().rev() {
            self.recent.push_front(s);
        }
        blocks
    }

    /// Keeps `recent` within [`RECENT_SLACK`] plus twice the out-of-order blocks: drops
    /// every entry whose block was delivered or is named by an earlier entry.
    fn prune_recent(&mut self) {
        if self.recent.len() <= 2 * self.ooo.len() + RECENT_SLACK {
            return;
        }
        let mut named = BTreeSet::new();
        let mut kept = VecDeque::with_capacity(self.ooo.len());
        for &s in &self.recent {
            if let Some((b, _)) = self.block_of(s) {
                if named.insert(b) {
                    kept.push_back(s);
                }
            }
        }
        self.recent = kept;
    }

    fn send_ack(&mut self, ctx: &mut Ctx<'_>) {
        let Some(peer) = self.peer else {
            self.pending = false;
            self.delack_deadline = None;
            return;
        };
        let ack = self.ack_segment();
        self.acks_sent += 1;
        ctx.send(Packet {
            src: ctx.addr,
            dst: Dest::Unicast(peer),
            size: self.config.ack_bytes,
            flow: self.flow,
            payload: Payload::Tcp(ack),
        });
    }

    /// The ACK to send now: cumulative ACK, SACK blocks and TSecr = `TS.Recent`; records the
    /// ACK as `Last.ACK.sent` and ends any delayed-ACK wait.
    fn ack_segment(&mut self) -> TcpSegment {
        self.pending = false;
        self.delack_deadline = None;
        let sack = if self.config.sack {
            self.sack_blocks()
        } else {
            Vec::new()
        };
        self.last_ack_sent = self.rcv_nxt;
        TcpSegment {
            seq: 0,
            len: 0,
            ack: self.rcv_nxt,
            sack,
            is_ack: true,
            tsval: None,
            tsecr: self.ts_recent,
        }
    }

    /// Adds `[s, e)` above `rcv_nxt` to the out-of-order blocks, merging neighbours.
    fn insert_block(&mut self, mut s: u64, mut e: u64) {
        if let Some((ps, pe)) = self.ooo.range(..=s).next_back().map(|(&a, &b)| (a, b)) {
            if pe >= s {
                s = ps;
                e = e.max(pe);
                self.ooo.remove(&ps);
            }
        }
        while let Some((ns, ne)) = self.ooo.range(s..).next().map(|(&a, &b)| (a, b)) {
            if ns > e {
                break;
            }
            e = e.max(ne);
            self.ooo.remove(&ns);
        }
        self.ooo.insert(s, e);
    }

    fn on_data(
        &mut self,
        now: Instant,
        seq: u64,
        len: u32,
        tsval: Option<Instant>,
        ctx: &mut Ctx<'_>,
    ) {
        if self.receive(now, seq, len, tsval) {
            self.send_ack(ctx);
        }
    }

    /// Takes in the segment `[seq, seq + len)` sent at `tsval`; true when it is to be
    /// acknowledged now.
    fn receive(&mut self, now: Instant, seq: u64, len: u32, tsval: Option<Instant>) -> bool {
        self.segments_received += 1;
        // RFC 7323 §4.3: a segment at or below the left edge last acknowledged (in
        // order, filling the hole, or a duplicate) sets TS.Recent, if its TSval is not older;
        // an out-of-order segment does not. With delayed ACKs the echo is thus the send time
        // of the earliest segment the ACK covers; the ACKs of out-of-order segments echo the
        // last segment that advanced the left edge (§4.3 case C: better to overestimate), and
        // the ACK of the segment that fills the hole echoes that segment's own TSval.
        if let Some(ts) = tsval {
            if seq <= self.last_ack_sent && self.ts_recent.is_none_or(|r| ts >= r) {
                self.ts_recent = Some(ts);
            }
        }
        let end = seq.saturating_add(u64::from(len));
        if end <= self.rcv_nxt {
            // Duplicate: acknowledge at once so the sender learns where we are.
            self.duplicate_segments += 1;
            true
        } else if seq <= self.rcv_nxt {
            let filled_hole = !self.ooo.is_empty();
            self.rcv_nxt = end;
            while let Some((s, e)) = self.ooo.first_key_value().map(|(&a, &b)| (a, b)) {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.ooo.remove(&s);
            }
            if filled_hole || !self.config.delayed_ack || self.pending {
                true
            } else {
                self.pending = true;
                self.delack_deadline = Some(now + self.config.delack_timeout);
                false
            }
        } else {
            self.out_of_order_segments += 1;
            self.insert_block(seq, end);
            // An older entry for `seq` names the same block and is dropped later.
            self.recent.push_front(seq);
            self.prune_recent();
            true
        }
    }
}

impl Agent for TcpSink {
    fn flow(&self) -> u32 {
        self.flow
    }

    fn wants(&self, p: &Packet) -> bool {
        p.flow == self.flow && matches!(&p.payload, Payload::Tcp(s) if !s.is_ack)
    }

    fn start(&mut self, _now: Instant, _ctx: &mut Ctx<'_>) {}

    fn on_packet(&mut self, now: Instant, p: &Packet, ctx: &mut Ctx<'_>) {
        if let Payload::Tcp(seg) = &p.payload {
            if !seg.is_ack {
                self.peer = Some(p.src);
                self.on_data(now, seg.seq, seg.len, seg.tsval, ctx);
            }
        }
    }

    fn on_timer(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        if self.pending && self.delack_deadline.is_some_and(|t| now >= t) {
            self.send_ack(ctx);
        } else {
            self.delack_deadline = None;
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        self.delack_deadline
    }

    fn goodput_bytes(&self) -> u64 {
        self.rcv_nxt
    }

    fn report(&self) -> AgentReport {
        AgentReport::TcpSink(TcpSinkReport {
            bytes_delivered: self.rcv_nxt,
            segments_received: self.segments_received,
            duplicate_segments: self.duplicate_segments,
            out_of_order_segments: self.out_of_order_segments,
            acks_sent: self.acks_sent,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgmcc::rng::Rng;

    /// RFC 2018 §4 the slow way: every received segment kept; the blocks are the maximal
    /// runs of received bytes above the cumulative point, ordered by the most recent
    /// out-of-order arrival inside each.
    #[derive(Default)]
    struct Reference {
        got: BTreeSet<u64>,
        arrivals: Vec<u64>,
    }

    impl Reference {
        fn receive(&mut self, seq: u64, rcv_nxt: u64) {
            if seq > rcv_nxt {
                self.arrivals.insert(0, seq);
            }
            self.got.insert(seq);
        }

        fn blocks(&self, rcv_nxt: u64, mss: u64) -> Vec<(u64, u64)> {
            let mut out: Vec<(u64, u64)> = Vec::new();
            for &a in &self.arrivals {
                if a < rcv_nxt {
                    continue;
                }
                let mut s = a;
                while s >= mss && s - mss >= rcv_nxt && self.got.contains(&(s - mss)) {
                    s -= mss;
                }
                let mut e = a + mss;
                while self.got.contains(&e) {
                    e += mss;
                }
                if s > rcv_nxt && !out.contains(&(s, e)) {
                    out.push((s, e));
                }
                if out.len() == 3 {
                    break;
                }
            }
            out
        }
    }

    /// The lazily pruned list gives the blocks the full walk gave, in the same order, over
    /// random arrival orders with losses and duplicates, and stays bounded.
    #[test]
    fn sack_blocks_match_a_full_walk_and_recent_stays_bounded() {
        const MSS: u64 = 1000;
        let mut rng = Rng::new(7);
        for round in 0..20 {
            let mut sink = TcpSink::new(1);
            let mut reference = Reference::default();
            let (mut longest, mut most_blocks) = (0, 0);
            for i in 0..3000u64 {
                // Mostly in order, with holes that are filled later and some duplicates.
                let seq = if rng.below(10) < 7 {
                    (i + rng.below(40)) * MSS
                } else {
                    rng.below(i + 1) * MSS
                };
                let before = sink.rcv_nxt;
                sink.receive(Instant::from_nanos(i), seq, MSS as u32, None);
                reference.receive(seq, before);
                assert_eq!(
                    sink.sack_blocks(),
                    reference.blocks(sink.rcv_nxt, MSS),
                    "round {round}, arrival {i}"
                );
                // Bounded by the most blocks it has had to remember (the list is pruned
                // when an out-of-order segment arrives, not when a hole fills).
                most_blocks = most_blocks.max(sink.ooo.len());
                longest = longest.max(sink.recent.len());
                assert!(sink.recent.len() <= 2 * most_blocks + RECENT_SLACK + 1);
            }
            assert!(longest > 3, "the test exercised pruning: {longest}");
        }
    }

    /// Takes in the 100-byte segment at `seq` sent at `tsval_ms` (if any) and returns the
    /// (cumulative ACK, TSecr in ms) of the ACK it triggers, if it triggers one.
    fn deliver(sink: &mut TcpSink, seq: u64, tsval_ms: Option<u64>) -> Option<(u64, Option<u64>)> {
        let ms = |t: u64| Instant::from_nanos(t * 1_000_000);
        let tsval = tsval_ms.map(ms);
        let now = ms(1000 + seq);
        sink.receive(now, seq, 100, tsval).then(|| {
            let a = sink.ack_segment();
            assert!(a.is_ack && a.tsval.is_none());
            (a.ack, a.tsecr.map(|t| t.as_nanos() / 1_000_000))
        })
    }

    /// RFC 7323 §4.3: a segment at the left edge last acknowledged sets TS.Recent; an
    /// out-of-order one does not; the retransmission that fills the hole does; every ACK
    /// echoes TS.Recent.
    #[test]
    fn timestamps_echo_the_segment_at_the_left_edge() {
        let mut sink = TcpSink::new(1);
        assert_eq!(deliver(&mut sink, 0, Some(1)), Some((100, Some(1))));
        assert_eq!(deliver(&mut sink, 100, Some(2)), Some((200, Some(2))));
        // 200 is lost: 300 and 400 arrive out of order and echo the last in-order segment.
        assert_eq!(deliver(&mut sink, 300, Some(4)), Some((200, Some(2))));
        assert_eq!(deliver(&mut sink, 400, Some(5)), Some((200, Some(2))));
        // The retransmission of 200, sent at 9, fills the hole: its TSval is echoed.
        assert_eq!(deliver(&mut sink, 200, Some(9)), Some((500, Some(9))));
        // In order again.
        assert_eq!(deliver(&mut sink, 500, Some(10)), Some((600, Some(10))));
        // A duplicate (at or below the left edge) sets TS.Recent too, an older TSval does not.
        assert_eq!(deliver(&mut sink, 400, Some(11)), Some((600, Some(11))));
        assert_eq!(deliver(&mut sink, 600, Some(3)), Some((700, Some(11))));
    }

    /// With delayed ACKs the echo is the earliest unacknowledged segment's TSval; segments
    /// without TSval get ACKs without TSecr.
    #[test]
    fn a_delayed_ack_echoes_the_earliest_segment_it_covers() {
        let mut sink = TcpSink::with_config(
            1,
            TcpSinkConfig {
                delayed_ack: true,
                ..TcpSinkConfig::default()
            },
        );
        assert_eq!(deliver(&mut sink, 0, Some(1)), None);
        assert_eq!(deliver(&mut sink, 100, Some(2)), Some((200, Some(1))));
        assert_eq!(deliver(&mut sink, 200, Some(3)), None);
        assert_eq!(deliver(&mut sink, 300, Some(4)), Some((400, Some(3))));
        let mut plain = TcpSink::new(1);
        assert_eq!(deliver(&mut plain, 0, None), Some((100, None)));
        assert_eq!(deliver(&mut plain, 200, None), Some((100, None)));
    }
}
