//! Endpoints attached to nodes: the pgmcc core wrapped as agents, TCP models, sinks.

use std::any::Any;
use std::net::IpAddr;

use pgmcc::Instant;

use crate::agents::report::AgentReport;
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
pub trait Agent: std::fmt::Debug + AsAny + Send {
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
    /// What the agent measured so far, for the run's time series and `summary.json`.
    fn report(&self) -> AgentReport;
}

/// Any agent as [`Any`], for callers that know its concrete type (tests reading a TCP
/// sender's state). Implemented for every `'static` type, so agents never write it.
pub trait AsAny {
    /// `self` as `Any`.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}
