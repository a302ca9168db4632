//! pgmcc congestion control (Rizzo, SIGCOMM 2000), one mechanism per file as the paper
//! names them:
//!
//! * [`ack_tracker`]: ACK bitmaps merged, lost/duplicate/reordered ACKs, dupack loss detection (§3.3).
//! * [`loss_filter`]: receiver loss measurement (§3.2.2).
//! * [`window`]: the window and token controller (§3.4).
//! * [`throughput`]: the TCP throughput models that rank receivers for acker election (§3.5).

pub mod ack_tracker;
pub mod loss_filter;
pub mod throughput;
pub mod window;
