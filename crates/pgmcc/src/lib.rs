//! `pgmcc`: the sans-IO protocol core.
//!
//! A PGM source ([`Sender`]) and receiver ([`Receiver`]) as pure state machines (RFC 3208
//! reliability): they take `(now, from, datagram)` and give datagrams, deadlines and events.
//! Nothing here reads a clock, a socket or a random source it was not handed (receivers take
//! a seed). The same code runs over real UDP (`pgmcc-net`), in the simulator (`netsim`) and
//! in tests.
//!
//! Still to come (issues 4 and 5): the network element and the pgmcc congestion controller.

pub mod receiver;
pub mod rng;
pub mod sender;
pub mod sqn;
pub mod time;
pub mod transmit;

pub use receiver::{JoinPolicy, Receiver, ReceiverConfig, ReceiverEvent, ReceiverStats};
pub use sender::{RateLimit, SendError, Sender, SenderConfig, SenderStats};
pub use time::{Duration, Instant};
pub use transmit::{Destination, Transmit};
