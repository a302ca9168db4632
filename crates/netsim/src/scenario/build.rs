//! Turning a scenario file into a ready-to-run [`Sim`]: nodes, links and network elements,
//! then one sender and its receivers per flow, then the `[reproduce]` row's flows by name.
//! Every key is read through `validate`, in file order, so the first bad key is the one
//! reported.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use pgm_wire::{Gsi, Tsi};
use pgmcc::cc::Controller;
use pgmcc::ne::NeConfig;
use pgmcc::{Duration, Instant, ReceiverConfig, SenderConfig};
use toml::Spanned;

use super::schema::{File, FlowKind, FlowSpec, ReproduceSpec};
use super::validate::{self, Ctx, ScenarioError};
use crate::agents::pgm::{PgmReceiverAgent, PgmSenderAgent};
use crate::agents::tcp::{RtoRule, TcpConfig, TcpSender, TcpSink, TcpSinkConfig, TcpVariant};
use crate::link::{LinkConfig, LossModel, NodeId, QueueLimit};
use crate::reproduce::Reproduce;
use crate::sim::{AgentId, Sim};
use crate::units;

/// One flow as built: its agents.
#[derive(Debug, Clone)]
pub struct FlowInfo {
    /// Name from the file.
    pub name: String,
    /// Kind.
    pub kind: FlowKind,
    /// Flow id in the simulator.
    pub id: u32,
    /// The sending agent.
    pub sender: AgentId,
    /// Receiving agents: agent, node name, join time, leave time.
    pub receivers: Vec<(AgentId, String, Instant, Option<Instant>)>,
    /// Start and stop times.
    pub start: Instant,
    /// Stop time, if any.
    pub stop: Option<Instant>,
}

/// A scenario turned into a ready-to-run simulator.
#[derive(Debug)]
pub struct Scenario {
    /// Name (file stem if the file gives none).
    pub name: String,
    /// Description.
    pub description: String,
    /// Seed used.
    pub seed: u64,
    /// How long to run.
    pub duration: Duration,
    /// Sampling interval of time series.
    pub sample: Duration,
    /// The network, agents scheduled.
    pub sim: Sim,
    /// Flows in file order.
    pub flows: Vec<FlowInfo>,
    /// Node names by id.
    pub node_names: Vec<String>,
    /// Links as (from name, to name), by id.
    pub link_names: Vec<(String, String)>,
    /// Present when the scenario is part of `pgmcc reproduce`.
    pub reproduce: Option<Reproduce>,
}

/// Resolves a node name from the file (with its span, for errors) to its id.
type NodeLookup<'a> = dyn Fn(&Spanned<String>, &str) -> Result<NodeId, ScenarioError> + 'a;

/// Reads and builds a scenario file; `seed` overrides the file's seed.
pub fn load(path: &Path, seed: Option<u64>) -> Result<Scenario, ScenarioError> {
    let (file, src) = ScenarioError::read(path)?;
    parse(&file, &src, &file_stem(path), seed)
}

/// A file's stem, the default scenario name.
fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads and builds a scenario file for emulation: as [`load`], but flows of the external
/// kinds ([`FlowKind::is_external`]: other implementations' programs) are accepted. Their
/// agents in the returned simulator are stand-ins (plain PGM senders and receivers) that
/// only give the flow its schedule; `pgmcc emu` runs the real programs instead.
pub fn load_for_emulation(path: &Path, seed: Option<u64>) -> Result<Scenario, ScenarioError> {
    let (file, src) = ScenarioError::read(path)?;
    let cx = Ctx {
        file: &file,
        src: &src,
        emulation: true,
    };
    build(&cx, &file_stem(path), seed)
}

/// Reads and builds a scenario file with every pgmcc flow (`kind = "pgmcc"` under `pgmcc`
/// or `pgmcc-paper`, the file's choice or the default) run by `preset` instead, and its
/// `accounting` and `recovery` knobs dropped: the reproduction's second column, the same experiment under
/// our recommended controller. Flows under other controllers are left alone.
pub fn load_with_pgmcc(
    path: &Path,
    seed: Option<u64>,
    preset: Controller,
) -> Result<Scenario, ScenarioError> {
    let (file, src) = ScenarioError::read(path)?;
    let fail = |message: String| ScenarioError {
        file: file.clone(),
        line: 0,
        key: "flow.cc".into(),
        message,
    };
    let mut table: toml::Table = src
        .parse()
        .map_err(|e: toml::de::Error| fail(e.message().to_string()))?;
    set_pgm_cc(
        &mut table,
        preset,
        |fl| {
            fl.get("cc")
                .and_then(|c| c.as_str())
                .is_none_or(|c| c.parse::<Controller>().is_ok_and(Controller::is_pgmcc))
        },
        &[super::PRESET_KNOBS, &["fec"]].concat(),
    );
    let text = toml::to_string(&table).map_err(|e| fail(e.to_string()))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    parse(&format!("{file} (cc = \"{preset}\")"), &text, &stem, seed)
}

/// Sets `cc = ctl` on the `kind = "pgmcc"` flows of a scenario file's table that `select`
/// picks, and removes the `drop` keys from them; returns how many flows it changed. The
/// reproduction's recommended column and the comparison matrix rewrite files this way.
pub fn set_pgm_cc(
    table: &mut toml::Table,
    ctl: Controller,
    select: impl Fn(&toml::Table) -> bool,
    drop: &[&str],
) -> usize {
    let Some(toml::Value::Array(flows)) = table.get_mut("flow") else {
        return 0;
    };
    let mut changed = 0;
    for fl in flows.iter_mut().filter_map(|f| f.as_table_mut()) {
        if fl.get("kind").and_then(|k| k.as_str()) != Some("pgmcc") || !select(fl) {
            continue;
        }
        fl.insert("cc".into(), toml::Value::String(ctl.name().into()));
        for k in drop {
            fl.remove(*k);
        }
        changed += 1;
    }
    changed
}

/// Parses and builds a scenario from text (`file` names it in errors).
pub fn parse(
    file: &str,
    src: &str,
    default_name: &str,
    seed: Option<u64>,
) -> Result<Scenario, ScenarioError> {
    let cx = Ctx {
        file,
        src,
        emulation: false,
    };
    build(&cx, default_name, seed)
}

/// Builds a parsed scenario (`cx` says whether external flow kinds are accepted).
fn build(cx: &Ctx<'_>, default_name: &str, seed: Option<u64>) -> Result<Scenario, ScenarioError> {
    let f: File = cx.parse()?;
    let seed = seed.or(f.seed).unwrap_or(1);
    let duration = cx.dur(&f.duration, "duration")?;
    let sample = match &f.sample {
        Some(s) => cx.dur(s, "sample")?,
        None => Duration::from_secs(1),
    };
    if sample.is_zero() {
        return cx.err(
            f.sample.as_ref().map_or(0..0, |s| s.span()),
            "sample",
            "must be positive",
        );
    }
    let Network {
        mut sim,
        nodes,
        node_names,
        link_names,
    } = build_network(&f, cx, seed)?;
    let node = |s: &Spanned<String>, key: &str| -> Result<NodeId, ScenarioError> {
        match nodes.get(s.get_ref()) {
            Some(&n) => Ok(n),
            None => cx.err(s.span(), key, format!("no node named `{}`", s.get_ref())),
        }
    };
    // Receivers send NAKs to these network elements when an SPM names one as its path.
    let nes: Vec<IpAddr> = nodes
        .values()
        .filter(|&&n| sim.ne(n).is_some())
        .map(|&n| sim.addr(n))
        .collect();
    let mut flows = Vec::new();
    for (i, fl) in f.flows.iter().enumerate() {
        let id = i as u32 + 1;
        let kind = validate::flow_kind(fl, cx)?;
        let from = node(&fl.from, "flow.from")?;
        let mut start = cx.time(&fl.start, "flow.start")?.unwrap_or(Instant::ZERO);
        if let Some(j) = &fl.start_jitter {
            // A seed-dependent start offset in [0, jitter]: runs with different seeds differ
            // in phase even on loss-free drop-tail paths.
            let max = cx.dur(j, "flow.start_jitter")?;
            let mut rng = pgmcc::rng::Rng::new(seed ^ (0x5eed_0000 + u64::from(id)));
            start += rng.duration_up_to(max);
        }
        let stop = cx.time(&fl.stop, "flow.stop")?;
        let at = FlowAt {
            fl,
            kind,
            id,
            from,
            start,
            stop,
            nes: &nes,
        };
        let info = if kind.is_tcp() {
            build_tcp(cx, &mut sim, at, &node)?
        } else if kind.is_external() {
            // A stand-in that parses the flow's receivers and times; never run.
            let pgm = FlowAt {
                kind: FlowKind::Pgm,
                ..at
            };
            let mut info = build_pgm(cx, &mut sim, pgm, &node)?;
            info.kind = kind;
            info
        } else {
            build_pgm(cx, &mut sim, at, &node)?
        };
        flows.push(info);
    }
    let reproduce = match &f.reproduce {
        None => None,
        Some(r) => Some(reproduce_row(r, &flows, cx)?),
    };
    Ok(Scenario {
        reproduce,
        name: f.name.unwrap_or_else(|| default_name.to_string()),
        description: f.description.unwrap_or_default(),
        seed,
        duration,
        sample,
        sim,
        flows,
        node_names,
        link_names,
    })
}

/// A scenario's network as built: nodes, links and network elements, no agents.
struct Network {
    sim: Sim,
    nodes: BTreeMap<String, NodeId>,
    node_names: Vec<String>,
    link_names: Vec<(String, String)>,
}

/// Builds the `[[node]]` and `[[link]]` tables into a simulator with no agent.
fn build_network(f: &File, cx: &Ctx<'_>, seed: u64) -> Result<Network, ScenarioError> {
    let mut sim = Sim::new(seed);
    let mut nodes: BTreeMap<String, NodeId> = BTreeMap::new();
    let mut node_names = Vec::new();
    for n in &f.nodes {
        let name = n.name.get_ref().clone();
        if nodes.contains_key(&name) {
            return cx.err(
                n.name.span(),
                "node.name",
                format!("node `{name}` defined twice"),
            );
        }
        let id = sim.add_node(&name);
        nodes.insert(name.clone(), id);
        node_names.push(name);
    }
    let node = |s: &Spanned<String>, key: &str| -> Result<NodeId, ScenarioError> {
        match nodes.get(s.get_ref()) {
            Some(&n) => Ok(n),
            None => cx.err(s.span(), key, format!("no node named `{}`", s.get_ref())),
        }
    };
    let mut link_names = Vec::new();
    for l in &f.links {
        let from = node(&l.from, "link.from")?;
        let to = node(&l.to, "link.to")?;
        let rate =
            units::rate(l.rate.get_ref()).or_else(|m| cx.err(l.rate.span(), "link.rate", m))?;
        let delay = cx.dur(&l.delay, "link.delay")?;
        let queue =
            units::queue(l.queue.get_ref()).or_else(|m| cx.err(l.queue.span(), "link.queue", m))?;
        let loss = validate::loss_model(l, cx)?;
        let cfg = LinkConfig {
            rate_bps: rate,
            delay,
            queue,
            loss,
        };
        sim.add_link(from, to, cfg);
        link_names.push((l.from.get_ref().clone(), l.to.get_ref().clone()));
        if l.duplex.unwrap_or(true) {
            // The reverse direction carries feedback: same rate and delay, ample queue, no loss.
            let rev = LinkConfig {
                queue: QueueLimit::Packets(1000),
                loss: LossModel::None,
                ..cfg
            };
            sim.add_link(to, from, rev);
            link_names.push((l.to.get_ref().clone(), l.from.get_ref().clone()));
        }
    }
    for n in &f.nodes {
        if !n.ne {
            if let Some(s) = &n.suppression {
                return cx.err(
                    s.span(),
                    "node.suppression",
                    "only meaningful with ne = true",
                );
            }
            continue;
        }
        let mut cfg = NeConfig::new(Vec::new());
        if let Some(policy) = validate::ne_suppression(n, cx)? {
            cfg.suppression = policy;
        }
        let id = nodes[n.name.get_ref()];
        sim.enable_ne(id, cfg);
    }
    // Every host's sends wait the file's jitter, the simulated agents' and, in emulation,
    // the real programs' alike: a real host's own timing varies by microseconds, far below
    // a packet time, so without it an emulated drop-tail queue keeps the phase effects
    // the jitter is there to break.
    let jitter = host_jitter(f, cx)?;
    for id in 0..node_names.len() {
        sim.set_host_jitter(id, jitter);
    }
    Ok(Network {
        sim,
        nodes,
        node_names,
        link_names,
    })
}

/// A scenario's network alone: what `pgmcc emu` runs on the wall clock, with real hosts in
/// place of the flows' agents.
#[derive(Debug)]
pub struct NetworkOnly {
    /// Name (file stem if the file gives none).
    pub name: String,
    /// Seed used (random loss draws).
    pub seed: u64,
    /// The scenario's duration.
    pub duration: Duration,
    /// Nodes and links with the file's host jitter (`jitter`), no agent.
    pub sim: Sim,
    /// Node names by id.
    pub node_names: Vec<String>,
    /// Links as (from name, to name), by id.
    pub link_names: Vec<(String, String)>,
}

/// Reads a scenario file and builds its network only. The whole file is checked first, as
/// [`load`] does, so a bad flow is reported here too.
pub fn load_network(path: &Path, seed: Option<u64>) -> Result<NetworkOnly, ScenarioError> {
    let full = load_for_emulation(path, seed)?;
    let (file, src) = ScenarioError::read(path)?;
    let cx = Ctx {
        file: &file,
        src: &src,
        emulation: true,
    };
    let f: File = cx.parse()?;
    let net = build_network(&f, &cx, full.seed)?;
    Ok(NetworkOnly {
        name: full.name,
        seed: full.seed,
        duration: full.duration,
        sim: net.sim,
        node_names: net.node_names,
        link_names: net.link_names,
    })
}

/// Packet size that sets the automatic host jitter: a full Ethernet frame's IP packet.
const JITTER_PACKET_BYTES: u64 = 1500;

/// The `jitter` key: `off` (default: the published setups ran without), `auto` (the time the
/// slowest link takes to serialise a 1500-byte packet, Floyd and Jacobson's scale for the
/// randomisation that breaks drop-tail phase effects; `Sim::set_host_jitter`) or a duration.
fn host_jitter(f: &File, cx: &Ctx<'_>) -> Result<Duration, ScenarioError> {
    let auto = || {
        let slowest = f
            .links
            .iter()
            .filter_map(|l| units::rate(l.rate.get_ref()).ok())
            .min()
            .unwrap_or(0);
        if slowest == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(JITTER_PACKET_BYTES * 8 * 1_000_000_000 / slowest)
    };
    match &f.jitter {
        None => Ok(Duration::ZERO),
        Some(j) => match j.get_ref().trim() {
            "auto" => Ok(auto()),
            "off" => Ok(Duration::ZERO),
            _ => cx.dur(j, "jitter"),
        },
    }
}

/// The `[reproduce]` row, its flows found by name.
fn reproduce_row(
    r: &ReproduceSpec,
    flows: &[FlowInfo],
    cx: &Ctx<'_>,
) -> Result<Reproduce, ScenarioError> {
    let find = |s: &Spanned<String>, key: &str| -> Result<usize, ScenarioError> {
        match flows.iter().position(|fl| &fl.name == s.get_ref()) {
            Some(i) => Ok(i),
            None => cx.err(s.span(), key, format!("no flow named `{}`", s.get_ref())),
        }
    };
    let tcp = find(&r.tcp, "reproduce.tcp")?;
    let pgm = find(&r.pgm, "reproduce.pgm")?;
    let from_s = match &r.from {
        Some(t) => cx.dur(t, "reproduce.from")?.as_secs_f64(),
        None => 0.0,
    };
    let to_s = match &r.to {
        Some(t) => Some(cx.dur(t, "reproduce.to")?.as_secs_f64()),
        None => None,
    };
    Ok(Reproduce {
        to_s,
        experiment: r.experiment.clone(),
        source: r.source.clone(),
        tcp,
        pgm,
        from_s,
        published_f: r.published_f,
        expectation: r.expectation.clone(),
        explanation: r.explanation.clone(),
    })
}

/// PGM payload bytes when a flow sets none: a pgmcc data packet (OPT_PGMCC_DATA with an
/// IPv4 acker) then fills a 1500-byte IPv4 datagram, as Linux TCP's segments do at that MTU.
const DEFAULT_PGM_PAYLOAD: u32 = 1428;

/// One flow of the file, placed: its spec, kind, id, sending node and times, and the
/// addresses of the network's PGM network elements.
#[derive(Clone, Copy)]
struct FlowAt<'a> {
    fl: &'a FlowSpec,
    kind: FlowKind,
    id: u32,
    from: NodeId,
    start: Instant,
    stop: Option<Instant>,
    nes: &'a [IpAddr],
}

fn build_pgm(
    cx: &Ctx<'_>,
    sim: &mut Sim,
    at: FlowAt<'_>,
    node: &NodeLookup<'_>,
) -> Result<FlowInfo, ScenarioError> {
    let FlowAt {
        fl,
        kind,
        id,
        from,
        start,
        stop,
        nes,
    } = at;
    validate::pgm_receivers(fl, cx)?;
    let group = validate::group(fl, id, cx)?;
    let tsi = Tsi {
        gsi: Gsi([0, 0, 0, 0, (id >> 8) as u8, id as u8]),
        sport: 1000 + id as u16,
    };
    let mut cfg = SenderConfig::new(tsi, IpAddr::V4(Ipv4Addr::UNSPECIFIED), group);
    let payload = validate::payload(fl, DEFAULT_PGM_PAYLOAD, cx)?;
    if let Some(limit) = validate::rate_limit(fl, cx)? {
        cfg.rate_limit = Some(limit);
    }
    cfg.cc = super::knobs::pgm_cc(fl, kind, payload, cx)?;
    validate::refuse_tcp_knobs(fl, cx)?;
    // Unreliable PGM (pgmcc paper §3.9): no NCF/RDATA; receivers report gaps at once.
    let reliable = fl.repairs.unwrap_or(true);
    cfg.repairs = reliable;
    if let Some(b) = validate::repair_budget(fl, cx)? {
        cfg.repair_budget = b;
    }
    if let Some(s) = validate::nak_source_share(fl, cx)? {
        cfg.nak_source_share = s;
    }
    if let Some(h) = fl.repair_holdoff {
        cfg.repair_holdoff = h;
    }
    if let Some(k) = validate::fec(fl, cx)? {
        cfg.fec = k;
    }
    cfg.proactive_parity = validate::proactive_parity(fl, cfg.fec, cx)?;
    if let Some(n) = validate::txw_sqns(fl, cx)? {
        cfg.txw_sqns = n;
    }
    if let Some(h) = fl.hold_for_naks {
        cfg.hold_for_naks = h;
    }
    // `payload` is what each whole data packet carries (the stream's first, with OPT_SYN,
    // 4 bytes less), as `pgmcc send` fills its packets: max_tpdu is the payload plus the
    // headers and options a packet carries, and the session never fragments.
    cfg.whole_packets_of(payload as usize);
    // What the controller asks of its receivers' configuration (TFMCC: the loss event rate).
    let loss_events = cfg.cc.receiver_loss_events();
    let txw_sqns = cfg.txw_sqns;
    let nak_backoff = fl
        .nak_backoff
        .as_ref()
        .map(|b| cx.dur(b, "flow.nak_backoff"))
        .transpose()?;
    let sender = sim.add_agent(
        from,
        Box::new(PgmSenderAgent::new(id, group, cfg, fl.bytes)),
        start,
        stop,
    );
    let mut receivers = Vec::new();
    for (j, r) in fl.receivers.iter().enumerate() {
        let n = node(&r.node, "flow.receiver.node")?;
        let join = cx.time(&r.join, "flow.receiver.join")?.unwrap_or(start);
        let leave = cx.time(&r.leave, "flow.receiver.leave")?;
        let mut rcfg = ReceiverConfig::new(
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            group,
            u64::from(id) << 32 | j as u64,
        );
        rcfg.reliable = reliable;
        rcfg.network_elements = nes.to_vec();
        // A receiver holds what it has from its oldest missing packet to the lead, which the
        // source's transmit window bounds: a larger `txw_sqns` gets receive windows (and
        // buffer budgets) as large.
        rcfg.rxw_sqns = rcfg.rxw_sqns.max(txw_sqns);
        let span_bytes = u64::from(rcfg.rxw_sqns) * u64::from(payload);
        rcfg.session_bytes = rcfg.session_bytes.max(span_bytes);
        rcfg.total_bytes = rcfg.total_bytes.max(span_bytes);
        if let Some(rtt) = loss_events {
            rcfg.loss_events = Some(rtt);
        }
        // `nak_backoff`: RFC 3208's fixed NAK_BO_IVL instead of the group-RTT back-off.
        if let Some(b) = nak_backoff {
            rcfg.nak_bo_ivl = b;
            rcfg.nak_bo_grtts = None;
        }
        // `reports = false`: a receiver that NAKs without pgmcc reports and never ACKs, as
        // OpenPGM's do (`pgmcc recv --no-pgmcc`).
        if r.reports == Some(false) {
            rcfg.pgmcc = false;
        }
        let mut agent = PgmReceiverAgent::new(id, rcfg);
        // `claim_loss = P`: a misbehaving receiver whose every report claims loss rate P
        // (issue 21's attacker on a fast path).
        if let Some(p) = &r.claim_loss {
            if !(0.0..=1.0).contains(p.get_ref()) {
                return cx.err(
                    p.span(),
                    "flow.receiver.claim_loss",
                    format!("{} is not a loss rate: use 0 to 1", p.get_ref()),
                );
            }
            agent = agent.claiming_loss(*p.get_ref());
        }
        // `claim_rtt = "2s"`: its reports claim a round trip that much longer.
        if let Some(d) = &r.claim_rtt {
            agent = agent.claiming_rtt(cx.dur(d, "flow.receiver.claim_rtt")?);
        }
        let a = sim.add_agent(n, Box::new(agent), join, leave);
        sim.join(n, group, join, leave);
        receivers.push((a, r.node.get_ref().clone(), join, leave));
    }
    Ok(FlowInfo {
        name: fl.name.get_ref().clone(),
        kind,
        id,
        sender,
        receivers,
        start,
        stop,
    })
}

fn build_tcp(
    cx: &Ctx<'_>,
    sim: &mut Sim,
    at: FlowAt<'_>,
    node: &NodeLookup<'_>,
) -> Result<FlowInfo, ScenarioError> {
    let FlowAt {
        fl,
        kind,
        id,
        from,
        start,
        stop,
        ..
    } = at;
    let to_spec = validate::tcp_to(fl, cx)?;
    let to = node(to_spec, "flow.to")?;
    validate::refuse_pgm_knobs(fl, cx)?;
    let variant = match kind {
        FlowKind::TcpNewReno => TcpVariant::NewReno,
        FlowKind::TcpSack => TcpVariant::Sack,
        _ => TcpVariant::Reno,
    };
    let mut cfg = TcpConfig {
        bytes: fl.bytes,
        mss: validate::payload(fl, TcpConfig::default().mss, cx)?,
        ..TcpConfig::default()
    };
    if let Some(r) = &fl.min_rto {
        cfg.min_rto = cx.dur(r, "flow.min_rto")?;
    }
    if let Some(r) = &fl.rto {
        cfg.rto_rule = match r.get_ref().as_str() {
            "rfc6298" => RtoRule::Rfc6298,
            "linux" => RtoRule::Linux,
            other => {
                return cx.err(
                    r.span(),
                    "flow.rto",
                    format!(
                        "`{other}`: use \"rfc6298\" (SRTT + 4 RTTVAR, at least min_rto) or \
                         \"linux\" (SRTT + a variance term of at least min_rto, as Linux)"
                    ),
                )
            }
        };
    }
    if let Some(lt) = fl.limited_transmit {
        cfg.limited_transmit = lt;
    }
    if let Some(ts) = fl.timestamps {
        cfg.timestamps = ts;
    }
    if let Some(rack) = fl.rack {
        if variant != TcpVariant::Sack {
            return cx.err(
                fl.kind.span(),
                "flow.rack",
                "only for tcp-sack (RACK-TLP needs SACK, as in Linux)",
            );
        }
        cfg.rack = rack;
    }
    if let Some(w) = validate::rwnd(fl, cx)? {
        cfg.max_window = u64::from(w) * u64::from(cfg.mss);
    }
    if let Some(w) = validate::initial_window(fl, cx)? {
        cfg.initial_cwnd = w;
    }
    if let Some(p) = fl.partial_ack_restarts_timer {
        if variant != TcpVariant::NewReno {
            return cx.err(
                fl.kind.span(),
                "flow.partial_ack_restarts_timer",
                "only for tcp-newreno",
            );
        }
        cfg.partial_ack_restarts_timer = p;
    }
    if let Some(f) = fl.fast_retransmit_restarts_timer {
        cfg.fast_retransmit_restarts_timer = f;
    }
    let dst = sim.addr(to);
    let sender = sim.add_agent(
        from,
        Box::new(TcpSender::new(id, dst, variant, cfg)),
        start,
        stop,
    );
    let sink_cfg = TcpSinkConfig {
        delayed_ack: fl.delayed_ack.unwrap_or(false),
        ..TcpSinkConfig::default()
    };
    let sink = sim.add_agent(
        to,
        Box::new(TcpSink::with_config(id, sink_cfg)),
        start,
        None,
    );
    Ok(FlowInfo {
        name: fl.name.get_ref().clone(),
        kind,
        id,
        sender,
        receivers: vec![(sink, to_spec.get_ref().clone(), start, None)],
        start,
        stop,
    })
}
