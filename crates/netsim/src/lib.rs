//! `netsim`: a deterministic discrete-event network simulator.
//!
//! Integer-nanosecond virtual time, one event queue with deterministic tie-breaking, one
//! seeded random generator per component: the same network, agents and seed give the same
//! run. Links are unidirectional pipes (rate, propagation delay, drop-tail queue in packets
//! or bytes, Bernoulli or Gilbert-Elliott loss); unicast follows shortest paths by delay,
//! multicast follows the source tree (one copy per link); a router may run a
//! [`router::RouterHook`] on what it forwards, such as the real PGM network element
//! ([`agents::ne`]). Agents wrap the real `pgmcc` core, so the simulator runs exactly the
//! code that runs over UDP.
//!
//! TCP Reno, NewReno and SACK models with a sink sit beside the pgmcc agents
//! ([`agents::tcp`]); [`scenario`] reads experiments from TOML files, [`run`] runs and
//! measures them into a [`summary::Summary`], and [`report`] draws SVG plots and a
//! self-contained HTML report. [`reproduce`] compares a run with a published result;
//! [`compare`] runs the same topologies under each congestion controller.
//!
//! Imports between those modules go one way, so there is no cycle: `summary` imports none
//! of them; `reproduce` and `report` import `summary`; `scenario` imports `reproduce` (a
//! scenario carries its [`reproduce::Reproduce`] row) but never `run`; `run` imports
//! `scenario` and `summary` but not the reproduction measurement; `compare` sits on top.
//! The engine ([`sim`]) imports the hook boundary ([`router`]) and no hook; the network
//! element ([`agents::ne`]) imports both to install itself on a node.

pub mod agent;
pub mod agents;
pub mod compare;
pub mod fairness;
pub mod grid;
pub mod link;
pub mod packet;
mod queue;
pub mod report;
pub mod reproduce;
pub mod router;
pub mod run;
pub mod scenario;
pub mod sim;
pub mod summary;
pub mod sweep;
pub mod units;

pub use agent::{Agent, Ctx};
pub use agents::report::AgentReport;
pub use link::{LinkConfig, LinkId, LossModel, NodeId, QueueLimit};
pub use packet::{Dest, Packet, Payload, TcpSegment};
pub use sim::{AgentId, Sim};

/// Bytes of IPv4 + UDP headers added to every PGM datagram on the simulated wire (UDP
/// encapsulation, as OpenPGM runs it).
pub const UDP_IP_OVERHEAD: u32 = 28;
