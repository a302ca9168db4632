//! Agents: the pgmcc core and TCP models attached to simulated nodes.

pub mod pgm;
pub mod report;
pub mod tcp;
