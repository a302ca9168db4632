//! pgmcc congestion control (Rizzo, SIGCOMM 2000), one mechanism per file as the paper
//! names them:
//!
//! * [`loss_filter`]: receiver loss measurement (§3.2.2).
//! * [`throughput`]: the TCP throughput models that rank receivers for acker election (§3.5).

pub mod loss_filter;
pub mod throughput;
