//! `pgmcc`: the sans-IO protocol core.
//!
//! A PGM source ([`Sender`]) and receiver ([`Receiver`]) as pure state machines (RFC 3208
//! reliability): they take `(now, from, datagram)` and give datagrams, deadlines and events.
//! Nothing here reads a clock, a socket or a random source it was not handed (receivers take
//! a seed). The same code runs over real UDP (`pgmcc-net`), in the simulator (`netsim`) and
//! in tests.
//!
//! [`ne::NetworkElement`] is what a PGM router does for a session (RFC 3208 §7).
//!
//! Congestion control lives in [`cc`]: pgmcc (the paper's controller) and the controllers it
//! is compared with (TFMCC, Pseudofed, low-weight, ACK-less pgmcc), each behind one boundary
//! on the source ([`cc::CongestionControl`]) and one on receivers, named by [`cc::Controller`].
//! `docs/architecture.md` maps the crates and follows one packet through them.

pub mod cc;
pub mod fec;
pub(crate) mod grtt;
pub(crate) mod nak_timing;
pub mod ne;
pub mod receiver;
pub mod rng;
pub mod sender;
pub mod signed;
pub mod sqn;
pub mod time;
pub mod transmit;

pub use ne::{
    NakSuppression, NeConfig, NeDestination, NeStats, NeTransmit, NetworkElement, Verdict,
};
pub use receiver::{JoinPolicy, Receiver, ReceiverConfig, ReceiverEvent, ReceiverStats};
pub use sender::{
    AbandonReason, EndPolicy, Expect, RateLimit, SendError, Sender, SenderConfig, SenderStats,
    SessionEnd,
};
pub use time::{Duration, Instant};
pub use transmit::{Destination, Endpoint, Transmit};
