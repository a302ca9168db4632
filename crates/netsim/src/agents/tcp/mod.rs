//! TCP models in the ns-2 style: packet-level senders and a sink that exchange
//! [`TcpSegment`](crate::TcpSegment)s (byte sequence numbers, no byte encoding).
//!
//! [`TcpSender`] is a bulk sender (unlimited data or a byte count) with one of three loss
//! recovery algorithms ([`TcpVariant`]):
//!
//! * **Reno** (RFC 5681): slow start, congestion avoidance, fast retransmit on the third
//!   duplicate ACK and fast recovery with window inflation; the first ACK of new data ends
//!   recovery, so several losses in one window usually end in a retransmission timeout.
//! * **NewReno** (RFC 6582): as Reno, but a partial ACK retransmits the next hole and keeps
//!   the sender in fast recovery until everything outstanding at the loss is acknowledged
//!   (partial window deflation; the retransmission timer is reset on the first partial ACK
//!   only, the "impatient" variant).
//! * **SACK** (RFC 6675): a scoreboard built from the sink's SACK blocks, `IsLost`, `pipe`
//!   and `NextSeg`; cwnd is set to ssthresh at the start of recovery and not inflated.
//!
//! All three share the RFC 6298 retransmission timer (SRTT/RTTVAR, minimum RTO, Karn's
//! rule, exponential backoff; one segment is timed per round trip, as in BSD and ns-2, and
//! never one sent during recovery or followed by a retransmission). With
//! [`TcpConfig::timestamps`] the sender instead takes an RTT sample from every ACK of new
//! data through the echoed timestamp (RFC 7323 §4, as Linux does), retransmitted data
//! included, so the first ACK after a timeout ends the backoff. After a timeout the
//! window restarts from one segment and sending goes back to the first unacknowledged byte
//! (go-back-N, as ns-2's one-way TCPs do); ssthresh is not reduced again when the same
//! segment times out again or when the timeout ends a fast recovery that already reduced
//! it. After a timeout no fast retransmit starts until everything sent before it is
//! acknowledged (RFC 6582's `recover` check, applied to all three variants so that the
//! duplicates go-back-N provokes do not trigger spurious fast retransmits). NewReno and
//! SACK also set their recovery point at each fast retransmit; Reno does not, so it may
//! halve again in the same window, as RFC 5681 allows.
//!
//! [`TcpSink`] acknowledges cumulatively with up to three SACK blocks, most recent first
//! (RFC 2018), optionally delaying ACKs (every second segment or a timer; out-of-order
//! segments and segments filling a hole are acknowledged at once, RFC 5681 §4.2), and
//! echoes the sender's timestamps by the rules of RFC 7323 §4.3.
//!
//! Segments are `mss` bytes (the last one of a finite transfer may be shorter) and take
//! `mss + header_bytes` on the wire; ACKs take `ack_bytes`.
//!
//! Files: `sender.rs` (the sender and [`TcpConfig`]), `sink.rs` (the sink and
//! [`TcpSinkConfig`]), `rto.rs` (the RFC 6298 estimator) and `scoreboard.rs` (the RFC 6675
//! SACK scoreboard).

mod rack;
mod rto;
mod scoreboard;
mod sender;
mod sink;

pub use rto::RtoRule;
pub use sender::{TcpConfig, TcpSender, TcpVariant};
pub use sink::{TcpSink, TcpSinkConfig};
