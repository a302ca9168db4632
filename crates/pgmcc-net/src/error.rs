//! Errors of the runtime.

use std::io;
use std::net::Ipv4Addr;

use thiserror::Error;

/// What can go wrong setting up or running a session.
#[derive(Debug, Error)]
pub enum Error {
    /// A system call failed. The operating system's error is the source (printed after the
    /// context by `{:#}` and error reporters), not repeated in the message.
    #[error("{context}")]
    Io {
        /// What we were doing.
        context: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The routing table has no way to the group and no interface was named.
    #[error(
        "no route to multicast group {group}: name an interface (--iface) or add a multicast route"
    )]
    NoRoute {
        /// The group.
        group: Ipv4Addr,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The named interface cannot be used.
    #[error("interface {name}: {reason}")]
    Interface {
        /// Interface as given.
        name: String,
        /// Why not.
        reason: String,
    },
    /// The group address is not a multicast address.
    #[error("{0} is not an IPv4 multicast address (224.0.0.0/4)")]
    NotMulticast(Ipv4Addr),
    /// Something this runtime does not do yet.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// The APDU is larger than the session allows.
    #[error("message of {len} bytes exceeds the {max}-byte maximum APDU")]
    TooLarge {
        /// Message length.
        len: usize,
        /// Maximum.
        max: usize,
    },
    /// The session's task ended (after `close`, or because it failed).
    #[error("the session has ended")]
    Closed,
    /// The source gave up ([`pgmcc::EndPolicy`]: no receiver answered for its feedback
    /// timeout, or its longest run passed). What it did until then is in `status`.
    #[error("{reason}")]
    Abandoned {
        /// Why.
        reason: pgmcc::AbandonReason,
        /// The source's final status.
        status: Box<crate::SenderStatus>,
    },
}
