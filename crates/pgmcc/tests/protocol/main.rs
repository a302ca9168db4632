//! The protocol core's integration tests: one module per subject, built as one test binary
//! (one link instead of twelve). Run one subject with `cargo test -p pgmcc --test protocol
//! MODULE::` (e.g. `ne::`).

mod common;

mod ack_coalescing;
mod controller;
mod lowweight_receiver;
mod ne;
mod openpgm_source;
mod pseudofed_receiver;
mod robustness;
mod sans_io;
mod state_machines;
mod tfmcc_receiver;
mod transfer;
