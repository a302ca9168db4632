//! The PGM network element (`pgmcc::ne`, RFC 3208 §7) as a router hook: it sees the PGM
//! packets crossing its node, answers NAKs with NCFs, forwards or eliminates them, copies
//! SPMs and steers RDATA. [`Sim::enable_ne`] installs one on a node.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use pgmcc::ne::{Iface, NeConfig, NeDestination, NetworkElement, Verdict as NeVerdict};
use pgmcc::Instant;

use crate::link::{LinkId, NodeId};
use crate::packet::{Dest, Packet, Payload};
use crate::router::{HookCtx, RouterHook, Verdict};
use crate::sim::Sim;
use crate::UDP_IP_OVERHEAD;

/// Largest datagram the network element emits.
const MAX_DATAGRAM: usize = 65536;

/// A [`NetworkElement`] on a node: its interfaces are the node's outgoing links, numbered by
/// link id.
#[derive(Debug)]
pub struct PgmNeHook {
    ne: NetworkElement,
    /// Reused datagram buffer: the element's output is drained after every PGM packet it sees.
    buf: Vec<u8>,
}

impl PgmNeHook {
    /// A network element with `config`.
    pub fn new(config: NeConfig) -> PgmNeHook {
        PgmNeHook {
            ne: NetworkElement::new(config),
            buf: vec![0; MAX_DATAGRAM],
        }
    }

    /// The network element, for its counters.
    pub fn ne(&self) -> &NetworkElement {
        &self.ne
    }

    /// Sends what the element queued because of `trigger` (`None`: on its timer). Multicast
    /// it makes (NCFs, SPM copies, RDATA) goes out from the trigger's source to its group
    /// ([`multicast_origin`], found once), or from the node to no group on a timer; unicast
    /// (NAKs) from the node. Both carry the trigger's flow (0 on a timer).
    fn drain(&mut self, trigger: Option<&Packet>, ctx: &mut HookCtx<'_>) {
        let addr = ctx.addr;
        let flow = trigger.map_or(0, |p| p.flow);
        let mut origin = None;
        while let Some(t) = self.ne.poll_transmit(&mut self.buf) {
            let payload = Payload::Pgm(Arc::from(&self.buf[..t.len]));
            let size = t.len as u32 + UDP_IP_OVERHEAD;
            match t.dst {
                NeDestination::Multicast(iface) => {
                    let (src, group) = *origin.get_or_insert_with(|| {
                        trigger.map_or((addr, UNSPECIFIED), multicast_origin)
                    });
                    let p = Packet {
                        src,
                        dst: Dest::Group(group),
                        size,
                        flow,
                        payload,
                    };
                    ctx.send_on(iface as LinkId, p);
                }
                NeDestination::Unicast(to) => {
                    let p = Packet {
                        src: addr,
                        dst: Dest::Unicast(to),
                        size,
                        flow,
                        payload,
                    };
                    ctx.send(p);
                }
            }
        }
    }
}

/// The group of multicast the element makes on a timer, with no packet to take one from.
const UNSPECIFIED: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

/// Source and group of multicast the element sends because of `trigger`: a multicast
/// packet's own; for a NAK, the source and group NLAs it names (RFC 3208 §7.2: NCFs carry the
/// ODATA source's address).
fn multicast_origin(trigger: &Packet) -> (IpAddr, IpAddr) {
    if let Dest::Group(g) = trigger.dst {
        return (trigger.src, g);
    }
    if let Payload::Pgm(b) = &trigger.payload {
        if let Ok(pgm_wire::Repr {
            body: pgm_wire::Body::Nak(n),
            ..
        }) = pgm_wire::Repr::parse(b)
        {
            return (n.source, n.group);
        }
    }
    (trigger.src, UNSPECIFIED)
}

impl RouterHook for PgmNeHook {
    fn sees(&self, p: &Packet) -> bool {
        matches!(p.payload, Payload::Pgm(_))
    }

    /// PGM addressed to the node itself is the element's, whatever it made of it.
    fn on_packet(
        &mut self,
        now: Instant,
        in_iface: Option<LinkId>,
        p: &Packet,
        downstream: &[LinkId],
        ctx: &mut HookCtx<'_>,
    ) -> Verdict {
        let Payload::Pgm(bytes) = &p.payload else {
            return Verdict::Forward;
        };
        let in_iface = in_iface.map_or(Iface::MAX, |l| l as Iface);
        let downstream: Vec<Iface> = downstream.iter().map(|&l| l as Iface).collect();
        let verdict = self.ne.handle(now, in_iface, p.src, bytes, &downstream);
        self.drain(Some(p), ctx);
        if verdict == NeVerdict::Consumed || p.dst == Dest::Unicast(ctx.addr) {
            Verdict::Consume
        } else {
            Verdict::Forward
        }
    }

    /// Repeats pending NAKs and expires repair state. Multicast it makes here has the node
    /// as its source and no group.
    fn on_timer(&mut self, now: Instant, ctx: &mut HookCtx<'_>) {
        self.ne.handle_timeout(now);
        self.drain(None, ctx);
    }

    fn next_timer(&self) -> Option<Instant> {
        self.ne.poll_timeout()
    }
}

impl Sim {
    /// Makes node `n` a PGM network element: installs a [`PgmNeHook`] whose interfaces are
    /// the node's outgoing links so far, each with the node's address, and whose random
    /// source is `config.seed` mixed with the run's seed and the node.
    pub fn enable_ne(&mut self, n: NodeId, mut config: NeConfig) {
        let addr = self.addr(n);
        config.iface_addrs = self
            .out_links(n)
            .iter()
            .map(|&l| (l as Iface, addr))
            .collect();
        config.seed ^= self.seed().wrapping_add(n as u64);
        self.set_router_hook(n, Box::new(PgmNeHook::new(config)));
    }

    /// The network element of node `n`, if it runs one.
    pub fn ne(&self, n: NodeId) -> Option<&NetworkElement> {
        self.router_hook_as::<PgmNeHook>(n).map(PgmNeHook::ne)
    }
}
