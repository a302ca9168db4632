//! The file-transfer protocol on top of a session, without sockets, files or clocks.
//!
//! A PGM session carries a byte stream; a *transfer* is what an application makes of it:
//! the stream written to an output, verified against the SHA-256 its source announces,
//! possibly put together from several sessions of the same source (`passes`: a receiver
//! that joined late or lost data for good keeps what it has and takes the rest from the
//! source's next pass), and each receiver's delivery report back to the source.
//!
//! * [`receive::TransferReceiver`]: one receiver's transfer, fed the session's events;
//!   it says where each byte goes and how the transfer ended, with a typed reason.
//! * [`send::TransferSender`]: the source's side over its passes: which receivers still
//!   wait, whether another pass follows, and whether the reports meet what was expected.
//!
//! Both are plain state machines: `pgmcc send` and `pgmcc recv` drive them with sockets,
//! files and timers, and the unit tests next to them drive them with nothing at all.

mod ranges;
pub mod receive;
pub mod send;

pub use ranges::Ranges;
