//! What travels through the simulated network.

use std::net::IpAddr;
use std::sync::Arc;

use pgmcc::Instant;

/// Where a packet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dest {
    /// One node, by address.
    Unicast(IpAddr),
    /// Every member of a multicast group, along the source's tree.
    Group(IpAddr),
}

/// A TCP segment as the TCP models exchange it (no byte-level encoding: the models are not
/// the object of study, their behaviour is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSegment {
    /// Sequence number of the first payload byte (data) or 0 (pure ACK).
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Cumulative ACK: next byte expected (ACKs only).
    pub ack: u64,
    /// SACK blocks `[start, end)` (at most 3), ACKs only.
    pub sack: Vec<(u64, u64)>,
    /// True for ACK segments.
    pub is_ack: bool,
    /// Timestamp value TSval (RFC 7323 §3.2): when a data segment left its sender. Set only
    /// by senders with timestamps on; `None` otherwise and on ACKs.
    pub tsval: Option<Instant>,
    /// Timestamp echo reply TSecr (RFC 7323 §3.2): on an ACK, the TSval the sink echoes
    /// (its `TS.Recent`, RFC 7323 §4.3); `None` on data and on ACKs of a flow whose
    /// segments carry no TSval.
    pub tsecr: Option<Instant>,
}

/// The payload of a simulated packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// A real PGM datagram, as the pgmcc core emitted it. Shared: a multicast packet is
    /// copied onto every link of its tree, and the copies share one buffer.
    Pgm(Arc<[u8]>),
    /// A TCP segment.
    Tcp(TcpSegment),
    /// An IPv4 datagram from a real host (header included), carried through the model by the
    /// emulator (`netemu`): its links queue, serialise, delay and lose it like any packet.
    Frame(Arc<[u8]>),
}

/// A packet in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// Sender's address.
    pub src: IpAddr,
    /// Destination.
    pub dst: Dest,
    /// Size on the wire in bytes (headers included): what links serialise and queues count.
    pub size: u32,
    /// The flow it belongs to (for delivery to agents and for measurement).
    pub flow: u32,
    /// Contents.
    pub payload: Payload,
}
