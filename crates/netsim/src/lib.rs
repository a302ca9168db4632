//! `netsim`: a deterministic discrete-event network simulator.
//!
//! What will live here (issue 6): integer-nanosecond virtual time, links with rate, delay,
//! drop-tail queues and loss models, multicast source trees, PGM network elements, agents
//! wrapping the real `pgmcc` core and TCP Reno/NewReno/SACK models, TOML scenarios, and the
//! plots and HTML report. Nothing is implemented yet.
