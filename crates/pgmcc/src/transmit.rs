//! What the core asks a driver to send.

use std::net::IpAddr;

/// Where a datagram goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Destination {
    /// The session's multicast group (downstream: ODATA, RDATA, SPM, NCF).
    Group,
    /// One host, by network address (upstream: NAK, SPMR, ACK to the source or a PGM
    /// network element).
    Unicast(IpAddr),
}

/// One datagram the driver must send: the first `len` bytes of the buffer it passed to
/// `poll_transmit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Destination.
    pub dst: Destination,
    /// Bytes written to the buffer.
    pub len: usize,
}
