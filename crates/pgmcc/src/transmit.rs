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

/// What every driver does with a protocol endpoint ([`crate::Sender`], [`crate::Receiver`]):
/// datagrams and time in, datagrams and a deadline out. The socket runtime and the
/// simulator's agents drive both through it, so they run the same protocol.
pub trait Endpoint {
    /// A datagram (the PGM packet, nothing around it) from `from`, at `now`.
    fn handle(&mut self, now: crate::Instant, from: IpAddr, datagram: &[u8]);
    /// The next datagram to send at `now`, written into `buf`, if one is due.
    fn poll_transmit(&mut self, now: crate::Instant, buf: &mut [u8]) -> Option<Transmit>;
    /// When the endpoint next needs [`Endpoint::handle_timeout`].
    fn poll_timeout(&self) -> Option<crate::Instant>;
    /// Runs the timers due at `now`.
    fn handle_timeout(&mut self, now: crate::Instant);
}

/// Implements [`Endpoint`] by the type's own methods of the same names.
macro_rules! endpoint {
    ($t:ty) => {
        impl Endpoint for $t {
            fn handle(&mut self, now: crate::Instant, from: IpAddr, datagram: &[u8]) {
                <$t>::handle(self, now, from, datagram);
            }
            fn poll_transmit(&mut self, now: crate::Instant, buf: &mut [u8]) -> Option<Transmit> {
                <$t>::poll_transmit(self, now, buf)
            }
            fn poll_timeout(&self) -> Option<crate::Instant> {
                <$t>::poll_timeout(self)
            }
            fn handle_timeout(&mut self, now: crate::Instant) {
                <$t>::handle_timeout(self, now);
            }
        }
    };
}

endpoint!(crate::Sender);
endpoint!(crate::Receiver);
