//! The discrete-event engine: integer-nanosecond virtual time, one event queue with ties
//! broken by insertion order (a binary heap that holds a run of simultaneous events as one
//! entry, `queue.rs`), one seeded random generator per component. The same topology, agents
//! and seed give the same run, event for event.
//!
//! The engine moves packets between nodes over links and hands them to agents; a node's
//! router may run a [`RouterHook`] on the packets it forwards (the PGM network element is
//! one), which sees them before they are routed and sends packets of its own.

mod routing;
mod slab;
#[cfg(test)]
mod tests;

use slab::Slab;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::net::{IpAddr, Ipv4Addr};

use pgmcc::{Duration, Instant};

use crate::agent::{Agent, Ctx};
use crate::link::{Link, LinkConfig, LinkId, NodeId};
use crate::packet::{Dest, Packet};
use crate::queue::EventQueue;
use crate::router::{HookCtx, HookSend, RouterHook, Verdict};
use pgmcc::rng::Rng;

/// Index of an agent.
pub type AgentId = usize;

/// Multicast forwarding state of one (source, group): outgoing links indexed by node.
type McastTree = ((NodeId, IpAddr), Vec<Vec<LinkId>>);

#[derive(Debug)]
struct Node {
    name: String,
    addr: IpAddr,
    out_links: Vec<LinkId>,
    in_links: Vec<LinkId>,
    agents: Vec<AgentId>,
    /// Groups joined by agents on this node.
    groups: BTreeSet<IpAddr>,
    /// What the node's router runs on the packets it forwards ([`Sim::set_router_hook`]).
    hook: Option<Box<dyn RouterHook>>,
    /// Host jitter: each packet an agent here sends waits a random time in `[0, max]` before
    /// it enters the network, in order (see [`Sim::set_host_jitter`]).
    jitter: Option<HostJitter>,
}

/// A host's send jitter and the state that keeps its packets in order.
#[derive(Debug)]
struct HostJitter {
    max: Duration,
    rng: Rng,
    /// When the last delayed packet leaves: the next one never leaves before it.
    last_release: Instant,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum EventKind {
    /// A link finished serialising its head packet.
    TxDone(LinkId),
    /// A packet reached the head of a link.
    Arrive(LinkId, usize),
    /// An agent's timer (with the generation that scheduled it).
    AgentTimer(AgentId, u64),
    /// A router hook's timer (with the generation that scheduled it).
    HookTimer(NodeId, u64),
    /// Scheduled start / stop / join / leave.
    Start(AgentId),
    /// Stop an agent.
    Stop(AgentId),
    /// A packet an agent sent leaves its host after the host jitter.
    Emit(NodeId, usize),
    /// A node joins a group.
    Join(NodeId, IpAddr),
    /// A node leaves a group.
    Leave(NodeId, IpAddr),
}

/// The queue key of an event: (time, class, insertion order) packed into 128 bits, earliest
/// first (ordering events is what the simulator does most). Time in the top 64 bits, class
/// in bit 63, insertion order below.
fn event_key(t: Instant, class: u8, seq: u64) -> u128 {
    (u128::from(t.as_nanos()) << 64)
        | (u128::from(class & 1) << 63)
        | u128::from(seq & (u64::MAX >> 1))
}

/// The time of an event key.
fn key_time(key: u128) -> Instant {
    Instant::from_nanos((key >> 64) as u64)
}

/// The simulator.
#[derive(Debug)]
pub struct Sim {
    now: Instant,
    seq: u64,
    /// Events by (time, class, insertion order): at one instant, group membership changes
    /// come first (class 0), then everything else (class 1) in the order it was scheduled.
    events: EventQueue<EventKind>,
    nodes: Vec<Node>,
    links: Vec<Link>,
    /// Packets in propagation (or held by a host's jitter), by id: a slab, as every
    /// multicast copy on every link passes through it.
    in_flight: Slab<Packet>,
    /// The packet each link is serialising, by link.
    on_wire: Vec<Option<Packet>>,
    agents: Vec<(NodeId, Box<dyn Agent>)>,
    agent_gen: Vec<u64>,
    /// When each agent's live timer event fires (the one carrying its current generation).
    /// An agent asks for its next timer after every packet; pushing an event each time left
    /// one live and thousands of stale ones per receiver in the heap (a 1000-receiver run
    /// spent most of its time ordering them), so a new one goes in only when it must fire
    /// earlier than the live one; a live one that fires early re-arms itself.
    agent_timer: Vec<Option<Instant>>,
    /// Generation of each node's hook timer: only the latest one scheduled fires.
    hook_gen: Vec<u64>,
    /// First link towards a destination, indexed by destination (computed on first use).
    toward: Vec<Option<Vec<Option<LinkId>>>>,
    /// Shortest-path tree from a source (parent link per node), per source.
    tree: HashMap<NodeId, Vec<Option<LinkId>>>,
    /// Multicast forwarding per (source, group): outgoing links indexed by node. Few groups
    /// exist, so a short list searched linearly beats hashing on every hop.
    mcast_trees: Vec<McastTree>,
    addr_to_node: BTreeMap<IpAddr, NodeId>,
    seed: u64,
    last_wake: Option<(AgentId, Instant)>,
    /// Agent wake-ups pushed 1 µs ahead by the livelock guard: after running at instant t,
    /// the agent's `next_timer()` was t (or earlier) again, and the previous wake-up was
    /// already this agent at t. Reported in `summary.json`; 0 in a healthy run.
    pub spins: u64,
    /// Reused buffer for what router hooks send.
    hook_out: Vec<HookSend>,
    /// Events processed.
    pub events_processed: u64,
    /// Worker threads for a batch of deliveries ([`Sim::set_threads`]).
    threads: usize,
    /// Deliveries that ran on worker threads (0 with one thread).
    pub parallel_deliveries: u64,
    /// Multicast deliveries to leaf nodes at the current instant, not yet run: agents'
    /// handling of them is independent, so a batch runs on `threads` threads and its
    /// effects are applied in order ([`Sim::flush_deliveries`]).
    deferred: Vec<(NodeId, Packet)>,
    /// Whether a node has a delivery in `deferred` (a second one flushes the first).
    node_deferred: Vec<bool>,
    /// The instant of the deferred deliveries (the clock may have moved on when they run).
    deferred_at: Instant,
}

/// What one agent's handling of a deferred delivery produced.
#[derive(Default)]
struct Delivered {
    /// The agent wanted the packet and ran.
    ran: bool,
    out: Vec<Packet>,
    timer: Option<Instant>,
}

/// Below this many deliveries a batch runs on the calling thread: starting threads costs
/// more than it saves.
const PARALLEL_MIN: usize = 64;

impl Sim {
    /// An empty network; `seed` derives every component's random generator.
    pub fn new(seed: u64) -> Sim {
        Sim {
            now: Instant::ZERO,
            seq: 0,
            events: EventQueue::default(),
            nodes: Vec::new(),
            links: Vec::new(),
            in_flight: Slab::default(),
            on_wire: Vec::new(),
            agents: Vec::new(),
            agent_gen: Vec::new(),
            agent_timer: Vec::new(),
            hook_gen: Vec::new(),
            toward: Vec::new(),
            tree: HashMap::new(),
            mcast_trees: Vec::new(),
            addr_to_node: BTreeMap::new(),
            seed,
            last_wake: None,
            spins: 0,
            hook_out: Vec::new(),
            events_processed: 0,
            threads: 1,
            parallel_deliveries: 0,
            deferred: Vec::new(),
            node_deferred: Vec::new(),
            deferred_at: Instant::ZERO,
        }
    }

    /// Runs agents' handling of a multicast packet reaching many leaf nodes at one instant
    /// on up to `n` threads (default 1). The run is the same, event for event, whatever
    /// `n`: agents' handling of one packet is independent, and what they send and the
    /// timers they ask for are applied in delivery order afterwards.
    pub fn set_threads(&mut self, n: usize) {
        self.threads = n.max(1);
    }

    /// Current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Adds a node; its address is 10.x.y.z from its index.
    pub fn add_node(&mut self, name: &str) -> NodeId {
        let id = self.nodes.len();
        let n = id as u32 + 1;
        let addr = IpAddr::V4(Ipv4Addr::new(10, (n >> 16) as u8, (n >> 8) as u8, n as u8));
        self.addr_to_node.insert(addr, id);
        self.nodes.push(Node {
            name: name.to_string(),
            addr,
            out_links: Vec::new(),
            in_links: Vec::new(),
            agents: Vec::new(),
            groups: BTreeSet::new(),
            hook: None,
            jitter: None,
        });
        self.hook_gen.push(0);
        self.node_deferred.push(false);
        self.routes_changed();
        id
    }

    /// A node's address.
    pub fn addr(&self, n: NodeId) -> IpAddr {
        self.nodes[n].addr
    }

    /// A node's name.
    pub fn node_name(&self, n: NodeId) -> &str {
        &self.nodes[n].name
    }

    /// Adds a unidirectional link.
    pub fn add_link(&mut self, from: NodeId, to: NodeId, config: LinkConfig) -> LinkId {
        let id = self.links.len();
        let seed = self.seed ^ (0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(id as u64 + 1));
        self.links.push(Link::new(from, to, config, seed));
        self.on_wire.push(None);
        self.nodes[from].out_links.push(id);
        self.nodes[to].in_links.push(id);
        self.routes_changed();
        id
    }

    /// Adds a link in each direction with the same parameters; returns (forward, reverse).
    pub fn add_duplex(&mut self, a: NodeId, b: NodeId, config: LinkConfig) -> (LinkId, LinkId) {
        (self.add_link(a, b, config), self.add_link(b, a, config))
    }

    /// A link, for its statistics.
    pub fn link(&self, l: LinkId) -> &Link {
        &self.links[l]
    }

    /// Queue drops of one flow's packets (either direction) on all links so far.
    pub fn flow_queue_drops(&self, flow: u32) -> u64 {
        self.links
            .iter()
            .flat_map(|l| &l.stats.queue_drops_by_flow)
            .filter(|(f, _)| *f == flow)
            .map(|(_, n)| n)
            .sum()
    }

    /// Number of links.
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// A node's outgoing links, in the order they were added.
    pub fn out_links(&self, n: NodeId) -> &[LinkId] {
        &self.nodes[n].out_links
    }

    /// The seed the run's random generators derive from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Makes `hook` what node `n`'s router runs on the packets it forwards, in place of any
    /// earlier one. The router first reads its timer after the first packet it consumes.
    pub fn set_router_hook(&mut self, n: NodeId, hook: Box<dyn RouterHook>) {
        self.nodes[n].hook = Some(hook);
    }

    /// Node `n`'s router hook as its concrete type, if it has one of that type.
    pub fn router_hook_as<T: 'static>(&self, n: NodeId) -> Option<&T> {
        self.nodes
            .get(n)
            .and_then(|node| node.hook.as_deref())
            .and_then(|h| h.as_any().downcast_ref::<T>())
    }

    /// Host jitter on node `n`: every packet its agents send waits a random time, uniform in
    /// `[0, max]`, before it enters the network, and never overtakes an earlier one. A
    /// deterministic simulator with drop-tail queues otherwise has *phase effects* (Floyd and
    /// Jacobson, "On traffic phase effects in packet-switched gateways", 1992): ACK-clocked
    /// flows arrive at a full queue in the same order every round trip, so which flow loses
    /// depends on packet sizes and timing, not on its congestion control (docs/scenarios.md,
    /// `jitter`). ns-2's TCP `overhead_` is the same device. `Duration::ZERO` turns it off.
    pub fn set_host_jitter(&mut self, n: NodeId, max: Duration) {
        self.nodes[n].jitter = (max > Duration::ZERO).then(|| HostJitter {
            max,
            rng: Rng::new(self.seed ^ 0x6a09_e667_f3bc_c908_u64.wrapping_mul(n as u64 + 1)),
            last_release: Instant::ZERO,
        });
    }

    /// Attaches an agent to a node, started at `start` and stopped at `stop`.
    pub fn add_agent(
        &mut self,
        node: NodeId,
        agent: Box<dyn Agent>,
        start: Instant,
        stop: Option<Instant>,
    ) -> AgentId {
        let id = self.agents.len();
        self.agents.push((node, agent));
        self.agent_gen.push(0);
        self.agent_timer.push(None);
        self.nodes[node].agents.push(id);
        self.schedule(start, EventKind::Start(id));
        if let Some(t) = stop {
            self.schedule(t, EventKind::Stop(id));
        }
        id
    }

    /// An agent.
    pub fn agent(&self, a: AgentId) -> &dyn Agent {
        self.agents[a].1.as_ref()
    }

    /// An agent as its concrete type, if it is one (for callers that know it, e.g. tests).
    pub fn agent_as<T: 'static>(&self, a: AgentId) -> Option<&T> {
        self.agents
            .get(a)
            .and_then(|(_, ag)| ag.as_ref().as_any().downcast_ref::<T>())
    }

    /// Number of agents.
    pub fn agent_count(&self) -> usize {
        self.agents.len()
    }

    /// The node an agent sits on.
    pub fn agent_node(&self, a: AgentId) -> NodeId {
        self.agents[a].0
    }

    /// Node `n` joins `group` at `at` (and leaves at `until`, if given).
    pub fn join(&mut self, n: NodeId, group: IpAddr, at: Instant, until: Option<Instant>) {
        self.schedule(at, EventKind::Join(n, group));
        if let Some(t) = until {
            self.schedule(t, EventKind::Leave(n, group));
        }
    }

    /// Node `n` leaves `group` at `at`.
    pub fn leave(&mut self, n: NodeId, group: IpAddr, at: Instant) {
        self.schedule(at, EventKind::Leave(n, group));
    }

    fn schedule(&mut self, t: Instant, kind: EventKind) {
        self.seq += 1;
        let class = u8::from(!matches!(kind, EventKind::Join(..) | EventKind::Leave(..)));
        self.events.push(event_key(t, class, self.seq), kind);
    }

    /// Sends `p` out of node `at` on link `l`.
    fn transmit(&mut self, l: LinkId, p: Packet) {
        if let Some((t, p)) = self.links[l].enqueue(self.now, p) {
            self.on_wire[l] = Some(p);
            self.schedule(t, EventKind::TxDone(l));
        }
    }

    /// Routes a packet that is at node `at` (just sent or just arrived over `in_link`).
    fn forward(&mut self, at: NodeId, p: Packet, in_link: Option<LinkId>) {
        if self.run_hook(at, &p, in_link) == Verdict::Consume {
            return;
        }
        match p.dst {
            Dest::Unicast(addr) => {
                self.flush_deliveries();
                let Some(&dst) = self.addr_to_node.get(&addr) else {
                    return;
                };
                if dst == at {
                    if in_link.is_some() {
                        self.deliver(at, &p);
                    }
                    return;
                }
                if let Some(l) = self.next_hop(at, dst) {
                    self.transmit(l, p);
                }
            }
            Dest::Group(g) => {
                let member = in_link.is_some() && self.nodes[at].groups.contains(&g);
                // By index, not a copy of the list: a hub forwards each packet onto
                // thousands of links. Transmitting never changes the trees. No tree
                // without a known source: delivery only.
                let src = self.addr_to_node.get(&p.src).copied();
                let t = src.map(|src| self.mcast_tree(src, g));
                let n = t.map_or(0, |t| self.mcast_trees[t].1.get(at).map_or(0, Vec::len));
                if member && n == 0 && self.threads > 1 {
                    // A leaf: delivery is all that happens here.
                    if self.node_deferred[at] {
                        self.flush_deliveries();
                    }
                    self.node_deferred[at] = true;
                    self.deferred_at = self.now;
                    self.deferred.push((at, p));
                    return;
                }
                self.flush_deliveries();
                if member {
                    self.deliver(at, &p);
                }
                let Some(t) = t else {
                    return;
                };
                for i in 0..n {
                    let l = self.mcast_trees[t].1[at][i];
                    self.transmit(l, p.clone());
                }
            }
        }
    }

    /// Hands a packet that arrived at `at` over `in_link` to the node's router hook, if it
    /// has one that sees it, and sends what the hook sent. A packet a node sends itself
    /// (`in_link` is `None`) is not the hook's.
    fn run_hook(&mut self, at: NodeId, p: &Packet, in_link: Option<LinkId>) -> Verdict {
        let sees = self.nodes[at].hook.as_ref().is_some_and(|h| h.sees(p));
        let Some(in_link) = in_link.filter(|_| sees) else {
            return Verdict::Forward;
        };
        let src_node = self.addr_to_node.get(&p.src).copied();
        let downstream = match (p.dst, src_node) {
            (Dest::Group(g), Some(s)) => self.mcast_links(at, s, g),
            _ => Vec::new(),
        };
        // An interface is the link pair to a neighbour, named by its outgoing link: a
        // packet that arrived on A -> R came in on R's interface R -> A.
        let in_iface = self.reverse_link(in_link);
        let now = self.now;
        let addr = self.nodes[at].addr;
        let mut out = std::mem::take(&mut self.hook_out);
        let verdict = self.nodes[at].hook.as_mut().map_or(Verdict::Forward, |h| {
            let mut ctx = HookCtx {
                addr,
                out: &mut out,
            };
            h.on_packet(now, in_iface, p, &downstream, &mut ctx)
        });
        self.send_hook_output(at, &mut out);
        self.hook_out = out;
        if verdict == Verdict::Consume {
            self.arm_hook(at);
        }
        verdict
    }

    /// Sends, in order, what the router hook at `at` sent.
    fn send_hook_output(&mut self, at: NodeId, out: &mut Vec<HookSend>) {
        for send in out.drain(..) {
            match send {
                HookSend::Link(l, p) => {
                    if l < self.links.len() {
                        self.transmit(l, p);
                    }
                }
                HookSend::Route(p) => self.forward(at, p, None),
            }
        }
    }

    /// Runs the router hook at `n` on its timer and sends what it sent.
    fn run_hook_timer(&mut self, n: NodeId) {
        let now = self.now;
        let addr = self.nodes[n].addr;
        let mut out = std::mem::take(&mut self.hook_out);
        if let Some(h) = self.nodes[n].hook.as_mut() {
            h.on_timer(
                now,
                &mut HookCtx {
                    addr,
                    out: &mut out,
                },
            );
        }
        self.send_hook_output(n, &mut out);
        self.hook_out = out;
        self.arm_hook(n);
    }

    /// Runs the deferred deliveries: agents' handling on up to `threads` threads, then, in
    /// delivery order, what they sent and the timers they asked for, exactly as if each had
    /// run in turn (an agent's packets never reach another agent at the same instant: they
    /// go onto a link, or wait out the host's jitter).
    fn flush_deliveries(&mut self) {
        if self.deferred.is_empty() {
            return;
        }
        let deferred = std::mem::take(&mut self.deferred);
        // They run at their own instant: the clock may be at the event that flushes them.
        let resume = std::mem::replace(&mut self.now, self.deferred_at);
        // One task per agent on each node, in delivery order.
        let mut tasks: Vec<(AgentId, usize)> = Vec::with_capacity(deferred.len());
        for (i, (node, _)) in deferred.iter().enumerate() {
            self.node_deferred[*node] = false;
            tasks.extend(self.nodes[*node].agents.iter().map(|&a| (a, i)));
        }
        let now = self.now;
        // Disjoint borrows of the agents, carved in id order (each agent is on one node,
        // and a node is deferred at most once).
        let mut order: Vec<usize> = (0..tasks.len()).collect();
        order.sort_unstable_by_key(|&t| tasks[t].0);
        let mut jobs = Vec::with_capacity(tasks.len());
        let mut rest: &mut [(NodeId, Box<dyn Agent>)] = &mut self.agents;
        let mut base = 0;
        for &t in &order {
            let a = tasks[t].0;
            let Some((agent, tail)) = std::mem::take(&mut rest)
                .get_mut(a - base..)
                .and_then(<[_]>::split_first_mut)
            else {
                break;
            };
            let (node, i) = (agent.0, tasks[t].1);
            jobs.push((t, agent.1.as_mut(), self.nodes[node].addr, &deferred[i].1));
            rest = tail;
            base = a + 1;
        }
        // A small batch on this thread alone: starting threads would cost more.
        let workers = if jobs.len() < PARALLEL_MIN {
            1
        } else {
            self.threads
        };
        if workers > 1 {
            self.parallel_deliveries += jobs.len() as u64;
        }
        let per = jobs.len().div_ceil(workers).max(1);
        let results: Vec<Vec<(usize, Delivered)>> = std::thread::scope(|scope| {
            let mut chunks = jobs.chunks_mut(per);
            let first = chunks.next();
            let handles: Vec<_> = chunks
                .map(|c| scope.spawn(move || run_chunk(c, now)))
                .collect();
            let mut all = vec![first.map(|c| run_chunk(c, now)).unwrap_or_default()];
            for h in handles {
                // A panicking agent is a bug in the simulator: pass it on.
                all.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
            all
        });
        drop(jobs);
        let mut done: Vec<Delivered> = Vec::with_capacity(tasks.len());
        done.resize_with(tasks.len(), Delivered::default);
        for (t, d) in results.into_iter().flatten() {
            done[t] = d;
        }
        for (&(a, _), d) in tasks.iter().zip(done) {
            if d.ran {
                self.after_run(a, d.out, d.timer);
            }
        }
        self.now = resume;
    }

    fn deliver(&mut self, at: NodeId, p: &Packet) {
        // By index: agents are only added before the run, and a copy of the list per
        // delivered packet was an allocation per receiver per packet.
        for i in 0..self.nodes[at].agents.len() {
            let a = self.nodes[at].agents[i];
            if self.agents[a].1.wants(p) {
                self.run_agent(a, |agent, now, ctx| agent.on_packet(now, p, ctx));
            }
        }
    }

    fn run_agent<F>(&mut self, a: AgentId, f: F)
    where
        F: FnOnce(&mut dyn Agent, Instant, &mut Ctx<'_>),
    {
        let addr = self.nodes[self.agents[a].0].addr;
        let (out, timer) = run_detached(self.agents[a].1.as_mut(), self.now, addr, f);
        self.after_run(a, out, timer);
    }

    /// What follows an agent's run: its packets go out, its next timer is armed.
    fn after_run(&mut self, a: AgentId, out: Vec<Packet>, timer: Option<Instant>) {
        let node = self.agents[a].0;
        for p in out {
            self.emit(node, p);
        }
        if let Some(t) = timer {
            // An agent that keeps asking for the past without acting would spin forever at
            // one instant; such wake-ups are pushed 1 µs ahead and counted.
            let t = if t <= self.now && self.last_wake == Some((a, self.now)) {
                self.spins += 1;
                self.now + Duration::from_micros(1)
            } else {
                t.max(self.now)
            };
            self.last_wake = Some((a, self.now));
            self.arm_agent(a, t);
        }
    }

    /// Makes sure agent `a` is woken at `t` or earlier (see `agent_timer`).
    fn arm_agent(&mut self, a: AgentId, t: Instant) {
        if self.agent_timer[a].is_some_and(|live| live <= t) {
            return;
        }
        self.agent_gen[a] += 1;
        self.agent_timer[a] = Some(t);
        let g = self.agent_gen[a];
        self.schedule(t, EventKind::AgentTimer(a, g));
    }

    /// A packet an agent on `node` sent: into the network now, or after the host's jitter.
    fn emit(&mut self, node: NodeId, p: Packet) {
        let now = self.now;
        let Some(j) = self.nodes[node].jitter.as_mut() else {
            self.forward(node, p, None);
            return;
        };
        let at = (now + j.rng.duration_up_to(j.max)).max(j.last_release);
        j.last_release = at;
        let id = self.in_flight.insert(p);
        self.schedule(at, EventKind::Emit(node, id));
    }

    /// Schedules the router hook at `n` for its next deadline, if it has one; any earlier
    /// hook timer of the node is void.
    fn arm_hook(&mut self, n: NodeId) {
        self.hook_gen[n] += 1;
        if let Some(t) = self.nodes[n].hook.as_ref().and_then(|h| h.next_timer()) {
            let g = self.hook_gen[n];
            self.schedule(t.max(self.now), EventKind::HookTimer(n, g));
        }
    }

    /// Sends `p` from node `n` at the current time, as an agent there would: the emulator's
    /// way in for packets from real hosts (with the node's jitter, if it has any).
    pub fn inject(&mut self, n: NodeId, p: Packet) {
        self.flush_deliveries();
        self.emit(n, p);
    }

    /// The node with address `addr`, if any.
    pub fn node_of(&self, addr: IpAddr) -> Option<NodeId> {
        self.addr_to_node.get(&addr).copied()
    }

    /// Whether node `n` is a member of `group` now.
    pub fn is_member(&self, n: NodeId, group: IpAddr) -> bool {
        self.nodes[n].groups.contains(&group)
    }

    /// When the next event is due, if any: the emulator sleeps until then.
    pub fn next_event_at(&self) -> Option<Instant> {
        self.events.peek_key().map(key_time)
    }

    /// The key of the next event, once deferred deliveries that must run before it have
    /// run: everything they cause is at their instant or later, so they run before the
    /// clock leaves their instant.
    fn next_key(&mut self) -> Option<u128> {
        let key = self.events.peek_key();
        if self.deferred.is_empty() || key.is_some_and(|k| key_time(k) <= self.deferred_at) {
            return key;
        }
        self.flush_deliveries();
        self.events.peek_key()
    }

    /// Takes the next event and handles it at its time; false when none is left.
    fn step(&mut self) -> bool {
        let Some((key, kind)) = self.events.pop() else {
            return false;
        };
        self.now = key_time(key);
        self.events_processed += 1;
        self.handle(kind);
        true
    }

    /// Processes every event due at or before `end` and sets the clock to `end` (never
    /// backwards): the emulator's step, called with the wall clock's time.
    pub fn advance(&mut self, end: Instant) {
        while let Some(key) = self.next_key() {
            if key_time(key) > end {
                break;
            }
            if !self.step() {
                break;
            }
        }
        self.flush_deliveries();
        self.now = self.now.max(end);
    }

    /// Runs until virtual time `end` (events at `end` included), calling `tick` at every
    /// multiple of `tick_every` (for progress and sampling).
    pub fn run_until<F: FnMut(&Sim)>(&mut self, end: Instant, tick_every: Duration, mut tick: F) {
        let mut next_tick = self.now + tick_every;
        while let Some(key) = self.next_key() {
            let t = key_time(key);
            if t > end {
                break;
            }
            while next_tick <= t && next_tick <= end {
                self.flush_deliveries();
                let saved = self.now;
                self.now = next_tick;
                tick(self);
                self.now = saved;
                next_tick += tick_every;
            }
            if !self.step() {
                break;
            }
        }
        self.flush_deliveries();
        while next_tick <= end {
            self.now = next_tick;
            tick(self);
            next_tick += tick_every;
        }
        self.now = end;
    }

    fn handle(&mut self, kind: EventKind) {
        // Deferred deliveries come before anything that is not another delivery to a leaf.
        if !self.deferred.is_empty() {
            let may_defer = matches!(kind, EventKind::Arrive(l, _)
                if self.nodes[self.links[l].to].hook.is_none());
            if !may_defer {
                self.flush_deliveries();
            }
        }
        match kind {
            EventKind::TxDone(l) => {
                let Some(p) = self.on_wire[l].take() else {
                    return;
                };
                let (survived, next) = self.links[l].finish(self.now, &p);
                if let Some((t, n)) = next {
                    self.on_wire[l] = Some(n);
                    self.schedule(t, EventKind::TxDone(l));
                }
                if survived {
                    let id = self.in_flight.insert(p);
                    let arrive = self.now + self.links[l].config.delay;
                    self.schedule(arrive, EventKind::Arrive(l, id));
                }
            }
            EventKind::Emit(n, id) => {
                if let Some(p) = self.in_flight.remove(id) {
                    self.forward(n, p, None);
                }
            }
            EventKind::Arrive(l, id) => {
                if let Some(p) = self.in_flight.remove(id) {
                    let to = self.links[l].to;
                    self.forward(to, p, Some(l));
                }
            }
            EventKind::AgentTimer(a, g) => {
                if self.agent_gen[a] != g {
                    return;
                }
                self.agent_timer[a] = None;
                match self.agents[a].1.next_timer() {
                    Some(t) if t <= self.now => {
                        self.run_agent(a, |agent, now, ctx| agent.on_timer(now, ctx));
                    }
                    // Armed for an earlier deadline that has since moved: re-arm.
                    Some(t) => self.arm_agent(a, t),
                    None => {}
                }
            }
            EventKind::HookTimer(n, g) => {
                if self.hook_gen[n] == g {
                    self.run_hook_timer(n);
                }
            }
            EventKind::Start(a) => self.run_agent(a, |agent, now, ctx| agent.start(now, ctx)),
            EventKind::Stop(a) => self.run_agent(a, |agent, now, ctx| agent.stop(now, ctx)),
            EventKind::Join(n, g) => {
                self.nodes[n].groups.insert(g);
                self.mcast_trees.retain(|((_, group), _)| *group != g);
            }
            EventKind::Leave(n, g) => {
                self.nodes[n].groups.remove(&g);
                self.mcast_trees.retain(|((_, group), _)| *group != g);
            }
        }
    }
}

/// One agent's handling of a delivered packet, as `Sim::deliver` and `Sim::run_agent` do it,
/// with what it sends and its next timer kept for later.
fn run_deferred(agent: &mut dyn Agent, now: Instant, addr: IpAddr, p: &Packet) -> Delivered {
    if !agent.wants(p) {
        return Delivered::default();
    }
    let (out, timer) = run_detached(agent, now, addr, |agent, now, ctx| {
        agent.on_packet(now, p, ctx)
    });
    Delivered {
        ran: true,
        out,
        timer,
    }
}

/// Runs `f` on an agent of the node at `addr`: what it sent, and the timer it asks for next.
/// Touches nothing but the agent, so it can run on any thread.
fn run_detached<F>(
    agent: &mut dyn Agent,
    now: Instant,
    addr: IpAddr,
    f: F,
) -> (Vec<Packet>, Option<Instant>)
where
    F: FnOnce(&mut dyn Agent, Instant, &mut Ctx<'_>),
{
    let mut out = Vec::new();
    f(
        agent,
        now,
        &mut Ctx {
            addr,
            out: &mut out,
        },
    );
    (out, agent.next_timer())
}

/// A worker's share of a batch: `(task, agent, node address, packet)`.
fn run_chunk(
    jobs: &mut [(usize, &mut (dyn Agent + 'static), IpAddr, &Packet)],
    now: Instant,
) -> Vec<(usize, Delivered)> {
    jobs.iter_mut()
        .map(|(t, agent, addr, p)| (*t, run_deferred(&mut **agent, now, *addr, p)))
        .collect()
}
