//! `pgmcc`: the sans-IO protocol core.
//!
//! What will live here (see `docs/architecture.md` in the repository and issues 4 and 5):
//! the PGM source (transmit window, SPM heartbeat, NAK to NCF to RDATA, rate limiter), the
//! PGM receiver (receive window, NAK back-off and suppression, loss filter, acker role), the
//! network element (NAK forwarding and elimination), and the pgmcc congestion controller
//! behind one `CongestionControl` trait. It never reads a clock, a socket or a random source
//! it was not handed: drivers feed `(now, from, datagram)` and drain `poll_*` outputs.
//!
//! Nothing is implemented yet; the crate exists so the workspace has its final shape.
