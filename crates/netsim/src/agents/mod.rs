//! Agents: the pgmcc core and (later) TCP models attached to simulated nodes.

pub mod pgm;
