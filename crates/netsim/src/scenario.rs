//! Scenario files (TOML): what an experiment is. The format is documented in
//! `docs/scenarios.md`. Unknown keys and bad values are errors naming the file, the line and
//! the key.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use pgm_wire::{Gsi, Tsi};
use pgmcc::cc::lowweight::{self, AcklessConfig, LowWeightConfig};
use pgmcc::cc::pgmcc::{PgmccConfig, RttUnit};
use pgmcc::cc::pseudofed::PseudofedConfig;
use pgmcc::cc::tfmcc::TfmccConfig;
use pgmcc::cc::throughput::{SwitchBias, ThroughputModel};
use pgmcc::cc::CcConfig;
use pgmcc::ne::{NakSuppression, NeConfig};
use pgmcc::{Duration, Instant, RateLimit, ReceiverConfig, SenderConfig};
use serde::Deserialize;
use thiserror::Error;
use toml::Spanned;

use crate::agents::pgm::{PgmReceiverAgent, PgmSenderAgent};
use crate::agents::tcp::{TcpConfig, TcpSender, TcpSink, TcpSinkConfig, TcpVariant};
use crate::link::{LinkConfig, LossModel, NodeId, QueueLimit};
use crate::sim::{AgentId, Sim};
use crate::units;

/// A scenario that cannot be used, with where and why.
#[derive(Debug, Error)]
#[error("{file}:{line}: {key}: {message}")]
pub struct ScenarioError {
    /// The scenario file.
    pub file: String,
    /// 1-based line (0 when unknown).
    pub line: usize,
    /// The key at fault.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Option<String>,
    description: Option<String>,
    seed: Option<u64>,
    duration: Spanned<String>,
    sample: Option<Spanned<String>>,
    #[serde(default, rename = "node")]
    nodes: Vec<NodeSpec>,
    #[serde(default, rename = "link")]
    links: Vec<LinkSpec>,
    #[serde(default, rename = "flow")]
    flows: Vec<FlowSpec>,
    reproduce: Option<ReproduceSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReproduceSpec {
    experiment: String,
    source: String,
    tcp: Spanned<String>,
    pgm: Spanned<String>,
    from: Option<Spanned<String>>,
    to: Option<Spanned<String>>,
    published_f: Option<f64>,
    expectation: Option<String>,
    explanation: Option<String>,
}

/// What a scenario reproduces from a paper, for `pgmcc reproduce`.
#[derive(Debug, Clone)]
pub struct Reproduce {
    /// Row label, e.g. "Set 1, TCP Reno, fixed timeout".
    pub experiment: String,
    /// Where the published value comes from (paper, figure).
    pub source: String,
    /// Index of the TCP flow in `Scenario::flows`.
    pub tcp: usize,
    /// Index of the pgmcc flow.
    pub pgm: usize,
    /// Measure from this time on (seconds), skipping start-up.
    pub from_s: f64,
    /// Measure up to this time (seconds; `None` = the end of the run).
    pub to_s: Option<f64>,
    /// The published fairness f = TCP / pgmcc, if the paper gives one.
    pub published_f: Option<f64>,
    /// The paper's qualitative statement, when it gives no number.
    pub expectation: Option<String>,
    /// Our explanation of the comparison, written after measuring.
    pub explanation: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeSpec {
    name: Spanned<String>,
    #[serde(default)]
    ne: bool,
    suppression: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GilbertSpec {
    p_gb: f64,
    p_bg: f64,
    loss_good: f64,
    loss_bad: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkSpec {
    from: Spanned<String>,
    to: Spanned<String>,
    rate: Spanned<String>,
    delay: Spanned<String>,
    queue: Spanned<String>,
    loss: Option<Spanned<f64>>,
    gilbert: Option<GilbertSpec>,
    duplex: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReceiverSpec {
    node: Spanned<String>,
    join: Option<Spanned<String>>,
    leave: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowSpec {
    name: Spanned<String>,
    kind: Spanned<String>,
    from: Spanned<String>,
    to: Option<Spanned<String>>,
    group: Option<Spanned<String>>,
    #[serde(default, rename = "receiver")]
    receivers: Vec<ReceiverSpec>,
    start: Option<Spanned<String>>,
    start_jitter: Option<Spanned<String>>,
    stop: Option<Spanned<String>>,
    bytes: Option<u64>,
    payload: Option<Spanned<u32>>,
    c: Option<Spanned<f64>>,
    model: Option<Spanned<String>>,
    rtt_unit: Option<Spanned<String>>,
    adaptive_timeout: Option<bool>,
    rate_limit: Option<Spanned<String>>,
    delayed_ack: Option<bool>,
    min_rto: Option<Spanned<String>>,
    repairs: Option<bool>,
    realign_tokens: Option<bool>,
    cc: Option<Spanned<String>>,
    /// Pseudofed knobs (`cc = "pseudofed"`, docs/pseudofed.md).
    representatives: Option<Spanned<u32>>,
    rate_min: Option<Spanned<String>>,
    delta_rate: Option<Spanned<f64>>,
    wait: Option<Spanned<f64>>,
    suppression: Option<Spanned<f64>>,
    /// Low-weight knobs (`cc = "lowweight"`, docs/lowweight.md).
    rate_floor: Option<Spanned<String>>,
    rate_ceiling: Option<Spanned<String>>,
}

/// Which kind of flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowKind {
    /// PGM with pgmcc congestion control.
    Pgmcc,
    /// PGM with only a rate limiter.
    Pgm,
    /// TCP Reno.
    TcpReno,
    /// TCP NewReno.
    TcpNewReno,
    /// TCP SACK.
    TcpSack,
}

impl FlowKind {
    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            FlowKind::Pgmcc => "pgmcc",
            FlowKind::Pgm => "pgm",
            FlowKind::TcpReno => "tcp-reno",
            FlowKind::TcpNewReno => "tcp-newreno",
            FlowKind::TcpSack => "tcp-sack",
        }
    }

    /// True for the TCP kinds.
    pub fn is_tcp(self) -> bool {
        matches!(
            self,
            FlowKind::TcpReno | FlowKind::TcpNewReno | FlowKind::TcpSack
        )
    }
}

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

/// A reproduction row measured on one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Mean TCP rate over the row's window, kbit/s.
    pub tcp_kbps: f64,
    /// Mean pgmcc rate over the row's window, kbit/s.
    pub pgm_kbps: f64,
    /// f = TCP / pgmcc (NaN when pgmcc sent nothing).
    pub f: f64,
}

impl Reproduce {
    /// The row's rates and fairness f in a run of its scenario.
    pub fn measure(&self, s: &crate::run::Summary) -> Measured {
        let end = self.to_s.unwrap_or(s.duration_s);
        let mean = |flow: usize| {
            s.flows.get(flow).map_or(0.0, |f| {
                crate::run::mean_between(s, &f.series_kbps, self.from_s, end)
            })
        };
        let (tcp_kbps, pgm_kbps) = (mean(self.tcp), mean(self.pgm));
        let f = if pgm_kbps > 0.0 {
            tcp_kbps / pgm_kbps
        } else {
            f64::NAN
        };
        Measured {
            tcp_kbps,
            pgm_kbps,
            f,
        }
    }
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

struct Ctx<'a> {
    file: &'a str,
    src: &'a str,
}

/// Resolves a node name from the file (with its span, for errors) to its id.
type NodeLookup<'a> = dyn Fn(&Spanned<String>, &str) -> Result<NodeId, ScenarioError> + 'a;

impl Ctx<'_> {
    fn err<T>(
        &self,
        span: std::ops::Range<usize>,
        key: &str,
        msg: impl Into<String>,
    ) -> Result<T, ScenarioError> {
        let line = self.src[..span.start.min(self.src.len())]
            .matches('\n')
            .count()
            + 1;
        Err(ScenarioError {
            file: self.file.to_string(),
            line,
            key: key.to_string(),
            message: msg.into(),
        })
    }

    fn dur(&self, s: &Spanned<String>, key: &str) -> Result<Duration, ScenarioError> {
        units::duration(s.get_ref()).or_else(|m| self.err(s.span(), key, m))
    }

    fn time(
        &self,
        s: &Option<Spanned<String>>,
        key: &str,
    ) -> Result<Option<Instant>, ScenarioError> {
        s.as_ref()
            .map(|s| self.dur(s, key).map(|d| Instant::ZERO + d))
            .transpose()
    }
}

/// Reads and builds a scenario file; `seed` overrides the file's seed.
pub fn load(path: &Path, seed: Option<u64>) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let src = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: file.clone(),
        line: 0,
        key: "-".into(),
        message: format!("cannot read: {e}"),
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    parse(&file, &src, &stem, seed)
}

/// Parses and builds a scenario from text (`file` names it in errors).
pub fn parse(
    file: &str,
    src: &str,
    default_name: &str,
    seed: Option<u64>,
) -> Result<Scenario, ScenarioError> {
    let cx = Ctx { file, src };
    let f: File = toml::from_str(src).map_err(|e| {
        let line = e.span().map_or(0, |s| {
            src[..s.start.min(src.len())].matches('\n').count() + 1
        });
        ScenarioError {
            file: file.to_string(),
            line,
            key: "toml".into(),
            message: e.message().to_string(),
        }
    })?;
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
        let loss = match (&l.loss, &l.gilbert) {
            (Some(_), Some(_)) => {
                return cx.err(
                    l.from.span(),
                    "link.loss",
                    "give either loss or gilbert, not both",
                )
            }
            (Some(p), None) => {
                let v = *p.get_ref();
                if !(0.0..=1.0).contains(&v) {
                    return cx.err(
                        p.span(),
                        "link.loss",
                        format!("{v} is not a probability (0..1)"),
                    );
                }
                LossModel::Bernoulli { p: v }
            }
            (None, Some(g)) => {
                for (k, v) in [
                    ("p_gb", g.p_gb),
                    ("p_bg", g.p_bg),
                    ("loss_good", g.loss_good),
                    ("loss_bad", g.loss_bad),
                ] {
                    if !(0.0..=1.0).contains(&v) {
                        return cx.err(
                            l.from.span(),
                            &format!("link.gilbert.{k}"),
                            format!("{v} is not a probability"),
                        );
                    }
                }
                LossModel::GilbertElliott {
                    p_gb: g.p_gb,
                    p_bg: g.p_bg,
                    loss_good: g.loss_good,
                    loss_bad: g.loss_bad,
                }
            }
            (None, None) => LossModel::None,
        };
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
        if let Some(s) = &n.suppression {
            cfg.suppression = match s.get_ref().as_str() {
                "always" => NakSuppression::Always,
                "loss-aware" => NakSuppression::LossAware,
                other => match other
                    .strip_prefix("probabilistic:")
                    .and_then(|p| p.parse::<f64>().ok())
                {
                    Some(p) if (0.0..=1.0).contains(&p) => {
                        NakSuppression::Probabilistic { forward: p }
                    }
                    _ => {
                        return cx.err(
                            s.span(),
                            "node.suppression",
                            format!(
                            "`{other}`: use always, loss-aware or probabilistic:P (0 <= P <= 1)"
                        ),
                        )
                    }
                },
            };
        }
        let id = nodes[n.name.get_ref()];
        sim.enable_ne(id, cfg);
    }
    let mut flows = Vec::new();
    for (i, fl) in f.flows.iter().enumerate() {
        let id = i as u32 + 1;
        let kind = match fl.kind.get_ref().as_str() {
            "pgmcc" => FlowKind::Pgmcc,
            "pgm" => FlowKind::Pgm,
            "tcp-reno" | "reno" => FlowKind::TcpReno,
            "tcp-newreno" | "newreno" => FlowKind::TcpNewReno,
            "tcp-sack" | "sack" => FlowKind::TcpSack,
            other => {
                return cx.err(
                    fl.kind.span(),
                    "flow.kind",
                    format!("`{other}`: use pgmcc, pgm, tcp-reno, tcp-newreno or tcp-sack"),
                )
            }
        };
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
        let info = if kind.is_tcp() {
            build_tcp(&cx, &mut sim, fl, kind, id, from, start, stop, &node)?
        } else {
            build_pgm(&cx, &mut sim, fl, kind, id, from, start, stop, &node)?
        };
        flows.push(info);
    }
    let reproduce = match &f.reproduce {
        None => None,
        Some(r) => {
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
            Some(Reproduce {
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

/// Refuses pgmcc's own knobs on a flow run by controller `ctl`; `c` is refused only when
/// `allow_c` is false (the low-weight controllers take it as their switch bias).
fn refuse_pgmcc_knobs(
    fl: &FlowSpec,
    ctl: &str,
    allow_c: bool,
    cx: &Ctx<'_>,
) -> Result<(), ScenarioError> {
    for (k, present) in [
        ("c", fl.c.is_some() && !allow_c),
        ("model", fl.model.is_some()),
        ("rtt_unit", fl.rtt_unit.is_some()),
        ("adaptive_timeout", fl.adaptive_timeout.is_some()),
        ("realign_tokens", fl.realign_tokens.is_some()),
    ] {
        if present {
            return cx.err(
                fl.kind.span(),
                &format!("flow.{k}"),
                format!("a pgmcc knob: not for cc = \"{ctl}\""),
            );
        }
    }
    Ok(())
}

/// The flow's switch bias `c`, checked to lie in (0, 1].
fn switch_bias(fl: &FlowSpec, cx: &Ctx<'_>) -> Result<Option<SwitchBias>, ScenarioError> {
    let Some(c) = &fl.c else {
        return Ok(None);
    };
    let v = *c.get_ref();
    if !(v > 0.0 && v <= 1.0) {
        return cx.err(
            c.span(),
            "flow.c",
            format!("{v}: the switch bias is in (0, 1]"),
        );
    }
    Ok(Some(SwitchBias {
        num: (v * 1000.0).round() as u32,
        den: 1000,
    }))
}

/// A rate key given as a rate of payload, in packets per second of `payload`-byte packets.
fn payload_pps(
    r: &Spanned<String>,
    key: &str,
    payload: u32,
    cx: &Ctx<'_>,
) -> Result<f64, ScenarioError> {
    let bps = units::rate(r.get_ref()).or_else(|m| cx.err(r.span(), key, m))?;
    Ok(bps as f64 / 8.0 / f64::from(payload.max(1)))
}

/// The Pseudofed knobs of a `cc = "pseudofed"` flow (`docs/scenarios.md`); pgmcc's own
/// knobs are refused.
fn pseudofed_config(
    fl: &FlowSpec,
    payload: u32,
    cx: &Ctx<'_>,
) -> Result<PseudofedConfig, ScenarioError> {
    refuse_pgmcc_knobs(fl, "pseudofed", false, cx)?;
    let mut pc = PseudofedConfig::default();
    if let Some(n) = &fl.representatives {
        let v = *n.get_ref();
        if !(1..=pgm_wire::MAX_REPRESENTATIVES as u32).contains(&v) {
            return cx.err(n.span(), "flow.representatives", format!("{v}: use 1..=8"));
        }
        pc.representatives = v as usize;
    }
    if let Some(r) = &fl.rate_min {
        let pps = payload_pps(r, "flow.rate_min", payload, cx)?;
        if pps <= 0.0 {
            return cx.err(r.span(), "flow.rate_min", "must be above 0");
        }
        pc.rate_min = pps;
    }
    for (k, slot, v) in [
        ("delta_rate", &mut pc.delta_rate, &fl.delta_rate),
        ("wait", &mut pc.wait, &fl.wait),
        ("suppression", &mut pc.suppression, &fl.suppression),
    ] {
        if let Some(v) = v {
            let x = *v.get_ref();
            if !(0.0..=2.55).contains(&x) {
                return cx.err(
                    v.span(),
                    &format!("flow.{k}"),
                    format!("{x}: a fraction in 0..=2.55"),
                );
            }
            *slot = x;
        }
    }
    Ok(pc)
}

#[allow(clippy::too_many_arguments)]
fn build_pgm(
    cx: &Ctx<'_>,
    sim: &mut Sim,
    fl: &FlowSpec,
    kind: FlowKind,
    id: u32,
    from: NodeId,
    start: Instant,
    stop: Option<Instant>,
    node: &NodeLookup<'_>,
) -> Result<FlowInfo, ScenarioError> {
    if let Some(to) = &fl.to {
        return cx.err(
            to.span(),
            "flow.to",
            "PGM flows name receivers with [[flow.receiver]], not `to`",
        );
    }
    if fl.receivers.is_empty() {
        return cx.err(
            fl.name.span(),
            "flow.receiver",
            "a PGM flow needs at least one [[flow.receiver]]",
        );
    }
    let group = match &fl.group {
        Some(g) => match g.get_ref().parse::<IpAddr>() {
            Ok(a) if a.is_multicast() => a,
            _ => {
                return cx.err(
                    g.span(),
                    "flow.group",
                    format!("`{}` is not a multicast address", g.get_ref()),
                )
            }
        },
        None => IpAddr::V4(Ipv4Addr::new(239, 1, 1, id as u8)),
    };
    let tsi = Tsi {
        gsi: Gsi([0, 0, 0, 0, (id >> 8) as u8, id as u8]),
        sport: 1000 + id as u16,
    };
    let mut cfg = SenderConfig::new(tsi, IpAddr::V4(Ipv4Addr::UNSPECIFIED), group);
    let payload = fl.payload.as_ref().map_or(1400, |p| *p.get_ref());
    if !(1..=9000).contains(&payload) {
        let span = fl.payload.as_ref().map_or(0..0, |p| p.span());
        return cx.err(
            span,
            "flow.payload",
            format!("{payload} bytes: use 1..9000"),
        );
    }
    // max_tsdu = max_tpdu - 84 bytes of worst-case headers and options.
    cfg.max_tpdu = payload as usize + 84;
    if let Some(r) = &fl.rate_limit {
        let bps = units::rate(r.get_ref()).or_else(|m| cx.err(r.span(), "flow.rate_limit", m))?;
        cfg.rate_limit = Some(RateLimit {
            bytes_per_sec: bps / 8,
            burst: (bps / 8 / 10).max(3000),
        });
    }
    let ctl = match &fl.cc {
        None => "pgmcc",
        Some(c) if kind != FlowKind::Pgmcc => {
            return cx.err(c.span(), "flow.cc", "only for kind = \"pgmcc\"");
        }
        Some(c) => match c.get_ref().as_str() {
            n @ ("pgmcc" | "tfmcc" | "pseudofed" | "lowweight" | "pgmcc-ackless") => n,
            other => {
                return cx.err(
                    c.span(),
                    "flow.cc",
                    format!("`{other}`: use pgmcc, tfmcc, pseudofed, lowweight or pgmcc-ackless"),
                )
            }
        },
    };
    let tfmcc = ctl == "tfmcc";
    let pseudofed = ctl == "pseudofed";
    let low_weight = ctl == "lowweight" || ctl == "pgmcc-ackless";
    if ctl != "lowweight" {
        for (k, present) in [
            ("rate_floor", fl.rate_floor.is_some()),
            ("rate_ceiling", fl.rate_ceiling.is_some()),
        ] {
            if present {
                return cx.err(
                    fl.kind.span(),
                    &format!("flow.{k}"),
                    "only for cc = \"lowweight\"",
                );
            }
        }
    }
    if !pseudofed {
        for (k, present) in [
            ("representatives", fl.representatives.is_some()),
            ("rate_min", fl.rate_min.is_some()),
            ("delta_rate", fl.delta_rate.is_some()),
            ("wait", fl.wait.is_some()),
            ("suppression", fl.suppression.is_some()),
        ] {
            if present {
                return cx.err(
                    fl.kind.span(),
                    &format!("flow.{k}"),
                    "only for cc = \"pseudofed\"",
                );
            }
        }
    }
    if low_weight {
        refuse_pgmcc_knobs(fl, ctl, true, cx)?;
        let bias = switch_bias(fl, cx)?;
        let pps = |r: &Option<Spanned<String>>, key: &str| -> Result<Option<f64>, ScenarioError> {
            let Some(r) = r else { return Ok(None) };
            let v = payload_pps(r, key, payload, cx)?;
            if v < lowweight::MIN_RATE {
                return cx.err(
                    r.span(),
                    key,
                    format!("below {} packets per second", lowweight::MIN_RATE),
                );
            }
            Ok(Some(v))
        };
        if ctl == "lowweight" {
            let mut lc = LowWeightConfig {
                floor: pps(&fl.rate_floor, "flow.rate_floor")?,
                ceiling: pps(&fl.rate_ceiling, "flow.rate_ceiling")?,
                ..LowWeightConfig::default()
            };
            if let (Some(f), Some(c), Some(r)) = (lc.floor, lc.ceiling, &fl.rate_floor) {
                if f > c {
                    return cx.err(r.span(), "flow.rate_floor", "above rate_ceiling");
                }
            }
            if let Some(b) = bias {
                lc.worst.switch_bias = b;
            }
            cfg.cc = CcConfig::LowWeight(lc);
        } else {
            let mut ac = AcklessConfig::default();
            if let Some(b) = bias {
                ac.worst.switch_bias = b;
            }
            cfg.cc = CcConfig::PgmccAckless(ac);
        }
    } else if tfmcc {
        refuse_pgmcc_knobs(fl, "tfmcc", false, cx)?;
        cfg.cc = CcConfig::Tfmcc(TfmccConfig::default());
    } else if pseudofed {
        cfg.cc = CcConfig::Pseudofed(pseudofed_config(fl, payload, cx)?);
    } else if kind == FlowKind::Pgmcc {
        let mut pc = PgmccConfig::default();
        if let Some(b) = switch_bias(fl, cx)? {
            pc.switch_bias = b;
        }
        if let Some(m) = &fl.model {
            pc.model = match m.get_ref().as_str() {
                "simple" => ThroughputModel::Simple,
                "pftk" => ThroughputModel::Pftk,
                other => {
                    return cx.err(
                        m.span(),
                        "flow.model",
                        format!("`{other}`: use simple or pftk"),
                    )
                }
            };
        }
        if let Some(u) = &fl.rtt_unit {
            pc.rtt_unit = match u.get_ref().as_str() {
                "packets" => RttUnit::Packets,
                "ms" | "millis" => RttUnit::Millis,
                other => {
                    return cx.err(
                        u.span(),
                        "flow.rtt_unit",
                        format!("`{other}`: use packets or ms"),
                    )
                }
            };
        }
        if fl.adaptive_timeout.unwrap_or(false) {
            pc = pc.with_adaptive_timeout();
        }
        pc.realign_tokens = fl.realign_tokens.unwrap_or(false);
        cfg.cc = CcConfig::Pgmcc(pc);
    } else {
        for (k, present) in [
            ("c", fl.c.is_some()),
            ("model", fl.model.is_some()),
            ("adaptive_timeout", fl.adaptive_timeout.is_some()),
        ] {
            if present {
                return cx.err(
                    fl.kind.span(),
                    &format!("flow.{k}"),
                    "only for kind = \"pgmcc\"",
                );
            }
        }
    }
    // Keep `payload` exact: the controller's own data option (OPT_TFMCC_DATA, OPT_PSEUDOFED,
    // OPT_LOWWEIGHT) comes on top of the 84 bytes.
    cfg.max_tpdu += cfg.cc.data_option_room();
    for (k, present) in [
        ("delayed_ack", fl.delayed_ack.is_some()),
        ("min_rto", fl.min_rto.is_some()),
    ] {
        if present {
            return cx.err(fl.kind.span(), &format!("flow.{k}"), "only for TCP flows");
        }
    }
    // Unreliable PGM (pgmcc paper §3.9): no NCF/RDATA; receivers report gaps at once.
    let reliable = fl.repairs.unwrap_or(true);
    cfg.repairs = reliable;
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
        if tfmcc {
            // TFMCC receivers report the loss event rate; without an RTT measurement of
            // their own they merge losses over RFC 4654's initial RTT (docs/tfmcc.md).
            rcfg.loss_events = Some(TfmccConfig::default().initial_rtt);
        }
        let a = sim.add_agent(n, Box::new(PgmReceiverAgent::new(id, rcfg)), join, leave);
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

#[allow(clippy::too_many_arguments)]
fn build_tcp(
    cx: &Ctx<'_>,
    sim: &mut Sim,
    fl: &FlowSpec,
    kind: FlowKind,
    id: u32,
    from: NodeId,
    start: Instant,
    stop: Option<Instant>,
    node: &NodeLookup<'_>,
) -> Result<FlowInfo, ScenarioError> {
    let Some(to_spec) = &fl.to else {
        return cx.err(
            fl.name.span(),
            "flow.to",
            "a TCP flow needs `to` (the receiving node)",
        );
    };
    let to = node(to_spec, "flow.to")?;
    if let Some(r) = fl.receivers.first() {
        return cx.err(
            r.node.span(),
            "flow.receiver",
            "TCP flows have one receiver, given by `to`",
        );
    }
    for (k, present) in [
        ("group", fl.group.is_some()),
        ("rate_limit", fl.rate_limit.is_some()),
        ("c", fl.c.is_some()),
        ("model", fl.model.is_some()),
        ("rtt_unit", fl.rtt_unit.is_some()),
        ("adaptive_timeout", fl.adaptive_timeout.is_some()),
        ("repairs", fl.repairs.is_some()),
        ("cc", fl.cc.is_some()),
    ] {
        if present {
            return cx.err(fl.kind.span(), &format!("flow.{k}"), "only for PGM flows");
        }
    }
    let variant = match kind {
        FlowKind::TcpNewReno => TcpVariant::NewReno,
        FlowKind::TcpSack => TcpVariant::Sack,
        _ => TcpVariant::Reno,
    };
    let mut cfg = TcpConfig {
        bytes: fl.bytes,
        ..TcpConfig::default()
    };
    if let Some(p) = &fl.payload {
        let v = *p.get_ref();
        if !(1..=9000).contains(&v) {
            return cx.err(p.span(), "flow.payload", format!("{v} bytes: use 1..9000"));
        }
        cfg.mss = v;
    }
    if let Some(r) = &fl.min_rto {
        cfg.min_rto = cx.dur(r, "flow.min_rto")?;
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
