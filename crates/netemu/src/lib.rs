//! `netemu`: a scenario's network on the wall clock, between real hosts.
//!
//! This kernel has no netem, so links with delay and random loss cannot be made with `tc`.
//! Instead every node of a scenario becomes a network namespace whose `eth0` is a TAP
//! device, and one process carries the frames between them through the simulator's own link
//! model ([`netsim::Sim`], driven by the wall clock instead of virtual time): the same
//! drop-tail queues, rates, propagation delays, Bernoulli and Gilbert-Elliott loss, shortest-
//! path unicast and source-tree multicast, read from the same scenario files. What runs in
//! the namespaces is real: the Linux TCP stack, `pgmcc`, OpenPGM, anything.
//!
//! * [`frame`]: what a host's Ethernet frame asks for (ARP, IGMP, an IPv4 datagram) and the
//!   frames written back;
//! * [`ns`]: the namespaces, created with `ip` and removed on drop;
//! * [`emulator`]: the TAPs, the reader threads and the wall-clock loop.
//!
//! Linux only, and root only (namespaces, TAP devices). `docs/emulation.md` says how it is
//! validated and what it costs.

pub mod emulator;
pub mod frame;
pub mod ns;

pub use emulator::{EmuReport, Emulator, FlowMatch, HostReport, LinkReport, Sample};

/// Why an emulation could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// A node name or prefix that cannot name a namespace.
    #[error("`{0}` cannot name a network namespace (letters, digits, '-', '_', '.'; at most 64)")]
    Name(String),
    /// A namespace of this emulation exists already.
    #[error("network namespace {0} exists already (another emulation with this prefix, or one that did not end cleanly: `ip netns del {0}`)")]
    Exists(String),
    /// A command failed.
    #[error("`{0}` failed: {1}")]
    Tool(String, String),
    /// Anything else in the setup.
    #[error("{0}")]
    Setup(String),
}
