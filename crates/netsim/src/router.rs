//! The boundary between a node's router and what runs inside it: a [`RouterHook`] sees the
//! packets the router forwards, may keep them, and sends packets of its own. The engine
//! knows packets, links and deadlines; what a hook does with them (the PGM network element,
//! [`crate::agents::ne`]) is the hook's business.
//!
//! Hooks are sans-IO, like agents: the router calls them with the time and a [`HookCtx`] to
//! send through, and reads [`RouterHook::next_timer`] to know when to call them again.

use std::net::IpAddr;

use pgmcc::Instant;

use crate::agent::AsAny;
use crate::link::LinkId;
use crate::packet::Packet;

/// What the router does with a packet after its hook saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Route it as usual: towards its unicast destination (delivered to the node's agents if
    /// it is this node) or down its multicast tree.
    Forward,
    /// The hook kept it: the router neither routes nor delivers it.
    Consume,
}

/// A packet a hook sends, in the order it sent them.
#[derive(Debug)]
pub(crate) enum HookSend {
    /// Onto one outgoing link of the node, whatever its destination.
    Link(LinkId, Packet),
    /// Routed from the node, as a packet an agent there sends.
    Route(Packet),
}

/// What a hook can do when it runs: send packets from its node.
#[derive(Debug)]
pub struct HookCtx<'a> {
    /// The node's address.
    pub addr: IpAddr,
    pub(crate) out: &'a mut Vec<HookSend>,
}

impl HookCtx<'_> {
    /// Puts `p` onto the node's outgoing link `link` (an interface, see [`RouterHook`]),
    /// whatever its destination: a copy down one branch of a multicast tree, say. A link that
    /// does not exist is ignored.
    pub fn send_on(&mut self, link: LinkId, p: Packet) {
        self.out.push(HookSend::Link(link, p));
    }

    /// Routes `p` from the node, as a packet one of its agents sends (it does not come back
    /// to the hook).
    pub fn send(&mut self, p: Packet) {
        self.out.push(HookSend::Route(p));
    }
}

/// Something a router runs on the packets it forwards, at most one per node.
///
/// An interface is the link pair between the node and a neighbour, named by the node's
/// outgoing link to it: a packet that arrived over A -> R came in on R's interface R -> A.
///
/// The router hands the hook every packet arriving from a link that [`RouterHook::sees`]
/// (never those the node's agents or the hook itself send), before it routes it, and sends
/// what the hook sent, in order, before it routes the packet on. It reads
/// [`RouterHook::next_timer`] after [`RouterHook::on_timer`] and after a packet the hook
/// consumed; a packet the hook lets through leaves the deadline it had.
pub trait RouterHook: std::fmt::Debug + AsAny + Send {
    /// Whether the hook sees a packet arriving at the node (the router routes the others
    /// without asking).
    fn sees(&self, p: &Packet) -> bool;

    /// A packet arrived at `now` on interface `in_iface` (`None` if the link it came over
    /// has no link back). `downstream` lists the interfaces a multicast packet from its
    /// source to its group leaves this node on (empty for unicast, or a source the network
    /// does not know).
    fn on_packet(
        &mut self,
        now: Instant,
        in_iface: Option<LinkId>,
        p: &Packet,
        downstream: &[LinkId],
        ctx: &mut HookCtx<'_>,
    ) -> Verdict;

    /// The deadline of [`RouterHook::next_timer`] came (`now` is at or after it).
    fn on_timer(&mut self, now: Instant, ctx: &mut HookCtx<'_>);

    /// When the hook next wants [`RouterHook::on_timer`].
    fn next_timer(&self) -> Option<Instant>;
}
