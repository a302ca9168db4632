//! The simulator's integration tests: one module per subject, built as one test binary (one
//! link instead of ten, and one pool of test threads for all of them). Run one subject with
//! `cargo test -p netsim --test sim MODULE::` (e.g. `compare::`).

mod compare;
mod fig5;
mod lowweight;
mod network_element;
mod pgmcc_bottleneck;
mod pseudofed;
mod reproduce_smoke;
mod scenario;
mod tcp;
mod tfmcc;
