//! What runs on simulated nodes: agents (the pgmcc core and TCP models) at endpoints, and
//! the PGM network element as a router hook.

pub mod ne;
pub mod pgm;
pub mod report;
pub mod tcp;
