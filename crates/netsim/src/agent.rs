//! Endpoints attached to nodes: the pgmcc core wrapped as agents, TCP models, sinks.

use std::net::IpAddr;

use pgmcc::Instant;

use crate::packet::Packet;

/// What an agent can do when it runs: send packets from its node.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The node's address.
    pub addr: IpAddr,
    pub(crate) out: &'a mut Vec<Packet>,
}

impl Ctx<'_> {
    /// Sends a packet from this node.
    pub fn send(&mut self, p: Packet) {
        self.out.push(p);
    }
}

/// An endpoint. The simulator calls `on_packet` for every packet delivered to the agent's
/// node that carries its flow id (or is multicast to a group it joined), and `on_timer` when
/// `next_timer` passes. After either call it reads `next_timer` again.
pub trait Agent: std::fmt::Debug {
    /// The flow id this agent sends and receives.
    fn flow(&self) -> u32;
    /// Whether a packet delivered to this agent's node is for it (default: same flow id).
    fn wants(&self, p: &Packet) -> bool {
        p.flow == self.flow()
    }
    /// Called once at the agent's start time.
    fn start(&mut self, now: Instant, ctx: &mut Ctx<'_>);
    /// A packet arrived.
    fn on_packet(&mut self, now: Instant, p: &Packet, ctx: &mut Ctx<'_>);
    /// The agent's timer expired (`now >= next_timer()`).
    fn on_timer(&mut self, now: Instant, ctx: &mut Ctx<'_>);
    /// When the agent next wants `on_timer`.
    fn next_timer(&self) -> Option<Instant>;
    /// Called at the agent's stop time: it must stop sending new data.
    fn stop(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        let _ = (now, ctx);
    }
    /// Application bytes delivered so far (receivers) or acknowledged (senders).
    fn goodput_bytes(&self) -> u64;
    /// A serialisable summary for `summary.json`.
    fn summary(&self) -> serde_json_value::Value;
    /// The agent as `Any`, for callers that know its concrete type.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Minimal JSON value type for summaries, so the simulator does not depend on a JSON crate
/// in its core API.
pub mod serde_json_value {
    use serde::Serialize;

    /// A summary: named numbers and strings.
    #[derive(Debug, Clone, Default, PartialEq, Serialize)]
    pub struct Value {
        /// Agent kind (e.g. "pgm-sender", "tcp-reno").
        pub kind: String,
        /// Named counters.
        pub counters: Vec<(String, f64)>,
        /// Named notes (e.g. final acker).
        pub notes: Vec<(String, String)>,
    }
}
