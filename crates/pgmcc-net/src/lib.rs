//! `pgmcc-net`: the real-socket runtime.
//!
//! It drives the sans-IO core ([`pgmcc`]) over UDP encapsulation, framed as OpenPGM frames
//! it (the PGM packet is the whole UDP payload; downstream packets to the group on port
//! 3056, upstream packets to the source on port 3055), or over raw IP protocol 113 when
//! running as root. Sockets are set up with socket2 (group join, interface, TTL, loop);
//! tokio runs the event loop. The core never sees a clock or a socket: this crate owns both.
//!
//! * async: [`Sender`] / [`Receiver`] (inside a tokio runtime);
//! * blocking: [`blocking::Sender`] / [`blocking::Receiver`];
//! * [`zmq::ZmqDecoder`]: ZeroMQ's framing inside PGM, to subscribe to `epgm://` publishers.
//!
//! IPv4 only so far. The default multicast TTL is 1: a session stays on the local link
//! unless the application raises it.

/// Chainable setters for an options struct's public fields:
/// `SenderOptions::new(group, port).ttl(4).rate_limit(Some(2_000_000))`.
macro_rules! setters {
    ($t:ident { $($name:ident : $ty:ty),* $(,)? }) => {
        impl $t {
            $(
                #[doc = concat!("Sets [`", stringify!($t), "::", stringify!($name), "`].")]
                #[must_use]
                pub fn $name(mut self, $name: $ty) -> $t {
                    self.$name = $name;
                    self
                }
            )*
        }
    };
}

/// Lower-case hex, as sha256sum prints a digest.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

mod batch;
pub mod blocking;
mod clock;
mod driver;
mod error;
pub mod faults;
pub mod keyed;
mod receiver;
mod sender;
pub mod signing;
pub mod socket;
pub mod transfer;
mod wire;
pub mod zmq;

pub use error::Error;
pub use keyed::{Key, KeyError, KeyId, KeyedStats};
pub use receiver::{
    Event, Receiver, ReceiverOptions, ReceiverStatus, ReceiverStatusWatch, SessionStatus,
};
pub use sender::{
    Aborter, DeliveryReport, DeliveryStatus, Sender, SenderOptions, SenderStatus, StatusWatch,
};
pub use signing::{SourceKey, TrustedKey};
pub use socket::{
    local_addr_for, Encapsulation, Interface, DEFAULT_UDP_MCAST_PORT, DEFAULT_UDP_UCAST_PORT,
};

/// Re-exported so users can pick a congestion controller and join policy without depending
/// on the core crate directly.
pub use pgmcc::cc::lowweight::{AcklessConfig, LowWeightConfig};
pub use pgmcc::cc::pgmcc::PgmccConfig;
pub use pgmcc::cc::pseudofed::PseudofedConfig;
pub use pgmcc::cc::tfmcc::TfmccConfig;
pub use pgmcc::cc::{CcConfig, Controller};
pub use pgmcc::JoinPolicy;
pub use pgmcc::{AbandonReason, EndPolicy, Expect};
