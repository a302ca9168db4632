//! pgmcc congestion control (Rizzo, SIGCOMM 2000), one mechanism per file as the paper
//! names them:
//!
//! * [`loss_filter`]: receiver loss measurement (§3.2.2).
//! * [`ack_tracker`]: ACK bitmaps merged, lost/duplicate/reordered ACKs, dupack loss
//!   detection (§3.3).
//! * [`window`]: the window and token controller (§3.4).
//! * [`throughput`]: the TCP throughput models that rank receivers (§3.5).
//! * [`tfmcc`]: a TFMCC-style equation-based rate controller (RFC 4654), the baseline.
//! * [`pseudofed`]: Pseudofed's representative-based rate controller (DeLucia and
//!   Obraczka, `docs/pseudofed.md`).
//! * [`lowweight`]: the low-weight multi-sender controller (Scholl and Parnes) and an
//!   ACK-less pgmcc variant, both driven by the worst receiver's quick NAKs
//!   (`docs/lowweight.md`).
//! * [`report_check`]: the acker's loss reports checked against its own ACKs (ours).
//! * [`pgmcc`]: acker election and tracking, RTT measurement, stalls, tying it together
//!   (§3.4-3.6).
//!
//! Every controller plugs in behind one boundary on each side: [`CongestionControl`] on the
//! source (with [`Ack`], [`Nak`], [`RttSample`], [`Metrics`] and the bounded [`Events`]
//! queue), and on receivers the feedback roles of `feedback/` (one file per controller:
//! pgmcc's acker and elections, TFMCC's rounds, Pseudofed's representatives, the low-weight
//! quick NAKer). The [`registry`] names them and builds their configurations ([`CcConfig`]);
//! nothing outside `cc/` knows which controller runs. [`drive`] drives a controller by hand
//! for tests. `docs/architecture.md` shows how to add one.

pub(crate) mod ack_tracker;
mod controller;
pub mod drive;
mod events;
pub(crate) mod feedback;
pub mod loss_filter;
pub mod lowweight;
mod pacing;
pub mod pgmcc;
pub mod pseudofed;
pub mod registry;
pub(crate) mod report_check;
pub mod rtt;
pub(crate) mod silent;
pub mod tfmcc;
pub mod throughput;
pub(crate) mod window;

pub use controller::{Ack, CcStats, CongestionControl, Metrics, Nak, Rate, Repaired, SourceLimits};
pub use events::{CcEvent, Events, MAX_EVENTS};
pub use registry::{CcConfig, Controller, UnknownController};
pub use rtt::RttSample;
