//! The emulator proper: a scenario's network ([`netsim::Sim`], no agents of its own) run on
//! the wall clock, with a TAP device per node whose other end is that node's `eth0` in its
//! namespace. A frame a host sends is read by the node's reader thread, handed to the model
//! at the time it was read, and follows the scenario's links (queue, rate, delay, loss,
//! unicast by shortest path, multicast along the source tree to the nodes that joined by
//! IGMP); what arrives at a node is written to its TAP by a [`Port`] agent.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread;

use netsim::agents::report::AgentReport;
use netsim::scenario::NetworkOnly;
use netsim::{Agent, Ctx, Dest, NodeId, Packet, Payload, Sim};
use pgmcc::{Duration, Instant};
use serde::Serialize;
use tun_rs::{DeviceBuilder, Layer, SyncDevice};

use crate::frame::{self, Incoming, Membership};
use crate::ns::{self, Namespaces};
use crate::EmuError;

/// Frames read from the hosts and not yet taken by the model: a bounded queue, as a NIC's
/// ring is; a frame that finds it full is dropped and counted (`input_overflow`).
const INPUT_QUEUE: usize = 8192;
/// The longest the loop sleeps without an event due (to notice a stop request).
const MAX_IDLE: Duration = Duration::from_millis(20);
/// How long before an event the loop stops sleeping and polls instead.
const SPIN: Duration = Duration::from_micros(150);
/// The hosts' MTU: a full Ethernet frame's datagram, as the simulator's 1500-byte packets.
const MTU: u16 = 1500;

/// A node's TAP device (the emulator's end of the node's `eth0`).
struct Tap(SyncDevice);

impl Tap {
    fn send(&self, frame: &[u8]) -> std::io::Result<usize> {
        self.0.send(frame)
    }

    fn recv(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.recv(buf)
    }
}

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tap")
    }
}

/// A frame a host sent, as its reader thread read it.
#[derive(Debug)]
struct Input {
    host: usize,
    frame: Vec<u8>,
    read_at: std::time::Instant,
}

/// Which datagrams belong to a measured flow: one transport protocol and a set of ports,
/// matched as source or destination port (so a flow's data and its feedback both count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowMatch {
    /// The flow's id (1, 2, ...; 0 is "no flow").
    pub id: u32,
    /// IP protocol: 6 (TCP) or 17 (UDP).
    pub protocol: u8,
    /// Ports that mark the flow.
    pub ports: Vec<u16>,
}

/// IP protocol, source and destination port and transport payload length of a datagram
/// (ports 0 when it has none or is a later fragment).
fn transport(datagram: &[u8]) -> (u8, u16, u16, usize) {
    let ihl = usize::from(datagram.first().map_or(0, |b| b & 0x0f)) * 4;
    let protocol = datagram.get(9).copied().unwrap_or(0);
    let later_fragment = datagram
        .get(6..8)
        .is_some_and(|b| u16::from_be_bytes([b[0], b[1]]) & 0x1fff != 0);
    let l4 = datagram.get(ihl..).unwrap_or_default();
    if later_fragment || l4.len() < 4 {
        return (protocol, 0, 0, l4.len());
    }
    let sport = u16::from_be_bytes([l4[0], l4[1]]);
    let dport = u16::from_be_bytes([l4[2], l4[3]]);
    let header = match protocol {
        6 => l4.get(12).map_or(20, |b| usize::from(b >> 4) * 4),
        17 => 8,
        _ => 0,
    };
    (protocol, sport, dport, l4.len().saturating_sub(header))
}

/// A node's network interface, on the model's side: writes what the network delivers to the
/// node into its TAP.
#[derive(Debug)]
struct Port {
    addr: Ipv4Addr,
    tap: Arc<Tap>,
    frames: u64,
    bytes: u64,
    write_errors: u64,
    /// Transport payload bytes delivered here, by flow (flows 1...; index 0 unused).
    by_flow: Vec<u64>,
}

impl Agent for Port {
    fn flow(&self) -> u32 {
        u32::MAX
    }

    fn wants(&self, p: &Packet) -> bool {
        matches!(p.payload, Payload::Frame(_))
    }

    fn start(&mut self, _now: Instant, _ctx: &mut Ctx<'_>) {}

    fn on_packet(&mut self, _now: Instant, p: &Packet, _ctx: &mut Ctx<'_>) {
        let (Payload::Frame(d), IpAddr::V4(src)) = (&p.payload, p.src) else {
            return;
        };
        let dst = match p.dst {
            Dest::Unicast(IpAddr::V4(a)) | Dest::Group(IpAddr::V4(a)) => a,
            _ => return,
        };
        let f = frame::to_host(self.addr, src, dst, d);
        match self.tap.send(&f) {
            Ok(_) => {
                self.frames += 1;
                self.bytes += d.len() as u64;
                if p.flow != 0 {
                    let f = p.flow as usize;
                    if self.by_flow.len() <= f {
                        self.by_flow.resize(f + 1, 0);
                    }
                    self.by_flow[f] += transport(d).3 as u64;
                }
            }
            Err(e) => {
                self.write_errors += 1;
                tracing::debug!("write to {}'s TAP: {e}", self.addr);
            }
        }
    }

    fn on_timer(&mut self, _now: Instant, _ctx: &mut Ctx<'_>) {}

    fn next_timer(&self) -> Option<Instant> {
        None
    }

    fn goodput_bytes(&self) -> u64 {
        self.bytes
    }

    fn report(&self) -> AgentReport {
        AgentReport::Other
    }
}

/// One emulated host: a node of the scenario with a namespace and a TAP.
#[derive(Debug)]
struct Host {
    name: String,
    node: NodeId,
    addr: Ipv4Addr,
    namespace: String,
    tap: Arc<Tap>,
    port: netsim::AgentId,
    frames_in: u64,
    bytes_in: u64,
    arp_replies: u64,
    /// Transport payload bytes this host sent, by flow (index 0 unused).
    sent_by_flow: Vec<u64>,
    /// Datagrams this host sent, by flow (index 0 unused).
    datagrams_by_flow: Vec<u64>,
}

/// What an emulation measured, for `--stats` and the summary printed at the end.
#[derive(Debug, Clone, Serialize)]
pub struct EmuReport {
    /// Wall-clock seconds the network ran.
    pub seconds: f64,
    /// Per link, in the scenario's order (a duplex link is two entries).
    pub links: Vec<LinkReport>,
    /// Per host.
    pub hosts: Vec<HostReport>,
    /// Frames the emulator does not carry, by reason.
    pub ignored: BTreeMap<String, u64>,
    /// Frames dropped because the model fell behind the hosts (input queue full).
    pub input_overflow: u64,
}

/// One link's counters.
#[derive(Debug, Clone, Serialize)]
pub struct LinkReport {
    /// Tail node.
    pub from: String,
    /// Head node.
    pub to: String,
    /// Packets serialised.
    pub packets: u64,
    /// Bytes serialised (IP datagrams).
    pub bytes: u64,
    /// Packets dropped at the full queue.
    pub queue_drops: u64,
    /// Packets lost to the link's random loss.
    pub random_losses: u64,
    /// Queue drops by flow id (see [`Emulator::measure`]; 0 = traffic of no measured flow).
    pub queue_drops_by_flow: Vec<(u32, u64)>,
    /// Seconds the link spent transmitting.
    pub busy_s: f64,
}

/// One host's counters.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    /// Node name.
    pub name: String,
    /// Its address (in its namespace, on `eth0`).
    pub addr: Ipv4Addr,
    /// Its namespace.
    pub namespace: String,
    /// Datagrams it sent into the network.
    pub datagrams_sent: u64,
    /// Bytes of them.
    pub bytes_sent: u64,
    /// Datagrams the network delivered to it.
    pub datagrams_received: u64,
    /// Bytes of them.
    pub bytes_received: u64,
    /// ARP requests answered.
    pub arp_replies: u64,
    /// Frames that could not be written to its TAP.
    pub write_errors: u64,
    /// Datagrams it sent in each measured flow, as (flow id, count), flows it sent in only.
    pub datagrams_sent_by_flow: Vec<(u32, u64)>,
}

/// A scenario's network running between real hosts.
#[derive(Debug)]
pub struct Emulator {
    sim: Sim,
    hosts: Vec<Host>,
    link_names: Vec<(String, String)>,
    rx: Receiver<Input>,
    overflow: Arc<AtomicU64>,
    ignored: BTreeMap<&'static str, u64>,
    origin: std::time::Instant,
    namespaces: Namespaces,
    flows: Vec<FlowMatch>,
    samples: Vec<Sample>,
}

/// Cumulative per-flow counters at one instant (see [`Emulator::measure`]).
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the emulation started.
    pub t: f64,
    /// `sent[node][flow]`: transport payload bytes node `node` sent in flow `flow`.
    pub sent: Vec<Vec<u64>>,
    /// `delivered[node][flow]`: transport payload bytes of flow `flow` delivered to `node`.
    pub delivered: Vec<Vec<u64>>,
    /// `queue_drops[flow]`: the flow's packets dropped by full queues on every link so far.
    pub queue_drops: Vec<u64>,
}

impl Emulator {
    /// Creates the namespaces (`PREFIX` for the emulator, `PREFIX-NODE` per node), a TAP per
    /// node, and configures each node's `eth0` with its scenario address. Moves the calling
    /// thread into `PREFIX` first, so no device ever appears in the caller's namespace: call
    /// it from a thread that does nothing else on the network. Needs root.
    pub fn new(net: NetworkOnly, prefix: &str) -> Result<Emulator, EmuError> {
        let NetworkOnly {
            mut sim,
            node_names,
            link_names,
            ..
        } = net;
        let namespaces = Namespaces::create(prefix, &node_names)?;
        ns::enter(namespaces.emulator())?;
        let (tx, rx) = mpsc::sync_channel(INPUT_QUEUE);
        let overflow = Arc::new(AtomicU64::new(0));
        let mut hosts = Vec::new();
        for (node, name) in node_names.iter().enumerate() {
            let IpAddr::V4(addr) = sim.addr(node) else {
                return Err(EmuError::Setup(format!("node {name} has no IPv4 address")));
            };
            let namespace = namespaces.host(name);
            let tap = Arc::new(make_tap(node, addr, &namespace)?);
            let port = sim.add_agent(
                node,
                Box::new(Port {
                    addr,
                    tap: Arc::clone(&tap),
                    frames: 0,
                    bytes: 0,
                    write_errors: 0,
                    by_flow: Vec::new(),
                }),
                Instant::ZERO,
                None,
            );
            spawn_reader(
                hosts.len(),
                Arc::clone(&tap),
                tx.clone(),
                Arc::clone(&overflow),
            )?;
            hosts.push(Host {
                name: name.clone(),
                node,
                addr,
                namespace,
                tap,
                port,
                frames_in: 0,
                bytes_in: 0,
                arp_replies: 0,
                sent_by_flow: Vec::new(),
                datagrams_by_flow: Vec::new(),
            });
        }
        Ok(Emulator {
            sim,
            hosts,
            link_names,
            rx,
            overflow,
            ignored: BTreeMap::new(),
            origin: std::time::Instant::now(),
            namespaces,
            flows: Vec::new(),
            samples: Vec::new(),
        })
    }

    /// Measures these flows: their datagrams carry the flow's id through the model (so the
    /// links count their queue drops by flow), and every host counts the transport payload
    /// it sends and receives in each. Call before [`Emulator::run`].
    pub fn measure(&mut self, flows: Vec<FlowMatch>) {
        let n = flows.iter().map(|f| f.id as usize + 1).max().unwrap_or(0);
        for h in &mut self.hosts {
            h.sent_by_flow = vec![0; n];
            h.datagrams_by_flow = vec![0; n];
        }
        self.flows = flows;
    }

    /// The samples taken so far (one per `sample` interval of [`Emulator::run`]).
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    fn take_sample(&mut self, t: Instant) {
        let sent = self.hosts.iter().map(|h| h.sent_by_flow.clone()).collect();
        let delivered = self
            .hosts
            .iter()
            .map(|h| {
                let mut v = self
                    .sim
                    .agent_as::<Port>(h.port)
                    .map_or_else(Vec::new, |p| p.by_flow.clone());
                v.resize(h.sent_by_flow.len().max(v.len()), 0);
                v
            })
            .collect();
        let flows = self.hosts.first().map_or(0, |h| h.sent_by_flow.len());
        let queue_drops = (0..flows)
            .map(|f| self.sim.flow_queue_drops(f as u32))
            .collect();
        self.samples.push(Sample {
            t: t.as_nanos() as f64 / 1e9,
            sent,
            delivered,
            queue_drops,
        });
    }

    /// The flow a datagram belongs to (0: none).
    fn flow_of(&self, protocol: u8, sport: u16, dport: u16) -> u32 {
        self.flows
            .iter()
            .find(|f| {
                f.protocol == protocol && (f.ports.contains(&sport) || f.ports.contains(&dport))
            })
            .map_or(0, |f| f.id)
    }

    /// The hosts as (node name, namespace, address), in node order.
    pub fn hosts(&self) -> impl Iterator<Item = (&str, &str, Ipv4Addr)> {
        self.hosts
            .iter()
            .map(|h| (h.name.as_str(), h.namespace.as_str(), h.addr))
    }

    /// Model time now: the wall clock since the emulator started.
    fn now(&self) -> Instant {
        self.at(std::time::Instant::now())
    }

    fn at(&self, t: std::time::Instant) -> Instant {
        let ns = t.saturating_duration_since(self.origin).as_nanos();
        Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// Runs the network until `stop` is set or `limit` has passed (if given).
    /// Every `sample` (if given) the per-flow counters are recorded ([`Emulator::samples`]).
    pub fn run(
        &mut self,
        limit: Option<std::time::Duration>,
        sample: Option<std::time::Duration>,
        stop: &AtomicBool,
    ) {
        // Linux lets a sleeping thread wake up to 50 us late by default (timer slack), and
        // every packet waits once per link: ask for 1 us.
        if let Err(e) = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1000)) {
            tracing::debug!("timer slack unchanged: {e}");
        }
        let end = limit.map(|l| Instant::ZERO + l);
        let mut next_sample = sample.map(|s| Instant::ZERO + s);
        loop {
            let now = self.now();
            self.sim.advance(now);
            while let (Some(t), Some(s)) = (next_sample, sample) {
                if t > now {
                    break;
                }
                self.take_sample(t);
                next_sample = Some(t + s);
            }
            if stop.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) {
                break;
            }
            let mut wait = self
                .sim
                .next_event_at()
                .map_or(MAX_IDLE, |t| t.saturating_duration_since(now))
                .min(MAX_IDLE);
            for t in [end, next_sample].into_iter().flatten() {
                wait = wait.min(t.saturating_duration_since(now));
            }
            // A sleeping thread wakes ~0.1 ms late on this kind of machine (measured: docs/
            // emulation.md), and a packet waits once per link: sleep until shortly before the
            // event, then poll the input until it is due.
            let input = if wait > SPIN {
                self.rx.recv_timeout(wait - SPIN)
            } else {
                let due = std::time::Instant::now() + wait;
                loop {
                    match self.rx.try_recv() {
                        Ok(i) => break Ok(i),
                        Err(mpsc::TryRecvError::Disconnected) => {
                            break Err(RecvTimeoutError::Disconnected)
                        }
                        Err(mpsc::TryRecvError::Empty) => {}
                    }
                    if std::time::Instant::now() >= due {
                        break Err(RecvTimeoutError::Timeout);
                    }
                    std::hint::spin_loop();
                }
            };
            match input {
                Ok(input) => {
                    self.take(input);
                    while let Ok(more) = self.rx.try_recv() {
                        self.take(more);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    /// Hands one frame to the model, at the time it was read (or now, if the model has
    /// already moved past that instant).
    fn take(&mut self, input: Input) {
        let at = self.at(input.read_at).max(self.sim.now());
        self.sim.advance(at);
        let host = &mut self.hosts[input.host];
        match frame::classify(&input.frame) {
            Incoming::ArpRequest { sender, target } => {
                if target == host.addr || self.sim.node_of(IpAddr::V4(target)).is_none() {
                    *self
                        .ignored
                        .entry("ARP for an address outside the network")
                        .or_default() += 1;
                    return;
                }
                if host.tap.send(&frame::arp_reply(sender, target)).is_ok() {
                    host.arp_replies += 1;
                }
            }
            Incoming::Igmp(changes) => {
                for c in changes {
                    match c {
                        Membership::Join(g) => {
                            if !self.sim.is_member(host.node, IpAddr::V4(g)) {
                                self.sim.join(host.node, IpAddr::V4(g), at, None);
                            }
                        }
                        Membership::Leave(g) => self.sim.leave(host.node, IpAddr::V4(g), at),
                    }
                }
            }
            Incoming::Ipv4 { src, dst, datagram } => {
                if src != host.addr {
                    *self
                        .ignored
                        .entry("source address not the host's")
                        .or_default() += 1;
                    return;
                }
                let dst = if dst.is_multicast() {
                    Dest::Group(IpAddr::V4(dst))
                } else if self.sim.node_of(IpAddr::V4(dst)).is_some() {
                    Dest::Unicast(IpAddr::V4(dst))
                } else {
                    *self
                        .ignored
                        .entry("unicast outside the network")
                        .or_default() += 1;
                    return;
                };
                host.frames_in += 1;
                host.bytes_in += datagram.len() as u64;
                let (protocol, sport, dport, payload) = transport(datagram);
                let flow = self.flow_of(protocol, sport, dport);
                let host = &mut self.hosts[input.host];
                if let Some(n) = host.sent_by_flow.get_mut(flow as usize) {
                    *n += payload as u64;
                }
                if let Some(n) = host.datagrams_by_flow.get_mut(flow as usize) {
                    *n += 1;
                }
                let p = Packet {
                    src: IpAddr::V4(src),
                    dst,
                    size: u32::try_from(datagram.len()).unwrap_or(u32::MAX),
                    flow,
                    payload: Payload::Frame(Arc::from(datagram)),
                };
                let node = host.node;
                self.sim.inject(node, p);
            }
            Incoming::Ignored(why) => *self.ignored.entry(why).or_default() += 1,
        }
    }

    /// What the emulation measured so far.
    pub fn report(&self) -> EmuReport {
        let links = self
            .link_names
            .iter()
            .enumerate()
            .map(|(l, (from, to))| {
                let s = &self.sim.link(l).stats;
                LinkReport {
                    from: from.clone(),
                    to: to.clone(),
                    packets: s.packets,
                    bytes: s.bytes,
                    queue_drops: s.queue_drops,
                    random_losses: s.random_losses,
                    queue_drops_by_flow: s.queue_drops_by_flow.clone(),
                    busy_s: s.busy_ns as f64 / 1e9,
                }
            })
            .collect();
        let hosts = self
            .hosts
            .iter()
            .map(|h| {
                let port = self.sim.agent_as::<Port>(h.port);
                HostReport {
                    name: h.name.clone(),
                    addr: h.addr,
                    namespace: h.namespace.clone(),
                    datagrams_sent: h.frames_in,
                    bytes_sent: h.bytes_in,
                    datagrams_received: port.map_or(0, |p| p.frames),
                    bytes_received: port.map_or(0, |p| p.bytes),
                    arp_replies: h.arp_replies,
                    write_errors: port.map_or(0, |p| p.write_errors),
                    datagrams_sent_by_flow: h
                        .datagrams_by_flow
                        .iter()
                        .enumerate()
                        .skip(1)
                        .filter(|&(_, &n)| n > 0)
                        .map(|(f, &n)| (f as u32, n))
                        .collect(),
                }
            })
            .collect();
        EmuReport {
            seconds: self.origin.elapsed().as_secs_f64(),
            links,
            hosts,
            ignored: self
                .ignored
                .iter()
                .map(|(k, v)| ((*k).to_string(), *v))
                .collect(),
            input_overflow: self.overflow.load(Ordering::Relaxed),
        }
    }

    /// Stops every process left in the namespaces and deletes them.
    pub fn tear_down(&mut self) {
        self.namespaces.remove();
    }
}

/// Creates node `node`'s TAP in the emulator's namespace, moves it into `namespace` as
/// `eth0` with `addr`/8 and the MAC the emulator answers ARP with, IPv6 off (the emulator
/// carries IPv4 only; router solicitations would be noise) and a route for every group.
fn make_tap(node: NodeId, addr: Ipv4Addr, namespace: &str) -> Result<Tap, EmuError> {
    let tap_name = format!("emu{node}");
    let tap = DeviceBuilder::new()
        .name(&tap_name)
        .layer(Layer::L2)
        .packet_information(false)
        .mtu(MTU)
        .enable(false)
        .build_sync()
        .map_err(|e| EmuError::Setup(format!("TAP {tap_name}: {e}")))?;
    let mac = frame::mac_of(addr);
    let mac = format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]
    );
    let cidr = format!("{addr}/8");
    ns::ip(&["link", "set", &tap_name, "netns", namespace])?;
    ns::run(
        "ip",
        &[
            "netns",
            "exec",
            namespace,
            "sysctl",
            "-q",
            "-w",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ],
    )?;
    let n = namespace;
    ns::ip(&["-n", n, "link", "set", &tap_name, "name", "eth0"])?;
    ns::ip(&["-n", n, "link", "set", "eth0", "address", &mac])?;
    ns::ip(&["-n", n, "addr", "add", &cidr, "dev", "eth0"])?;
    ns::ip(&["-n", n, "link", "set", "lo", "up"])?;
    ns::ip(&["-n", n, "link", "set", "eth0", "up"])?;
    ns::ip(&["-n", n, "route", "add", "224.0.0.0/4", "dev", "eth0"])?;
    Ok(Tap(tap))
}

/// A thread that reads one TAP and queues its frames for the model.
fn spawn_reader(
    host: usize,
    tap: Arc<Tap>,
    tx: SyncSender<Input>,
    overflow: Arc<AtomicU64>,
) -> Result<(), EmuError> {
    thread::Builder::new()
        .name(format!("emu-tap{host}"))
        .spawn(move || {
            let mut buf = vec![0u8; usize::from(MTU) + 64];
            loop {
                let n = match tap.recv(&mut buf) {
                    Ok(n) => n,
                    Err(e) => {
                        tracing::debug!("TAP of host {host}: {e}");
                        return;
                    }
                };
                let input = Input {
                    host,
                    frame: buf[..n].to_vec(),
                    read_at: std::time::Instant::now(),
                };
                match tx.try_send(input) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        overflow.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
        })
        .map(|_| ())
        .map_err(|e| EmuError::Setup(format!("reader thread: {e}")))
}
