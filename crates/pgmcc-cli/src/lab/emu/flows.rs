//! A scenario's flows as real processes in the emulated hosts: what each flow runs (the
//! plan, checked before anything is created) and when (the schedule, run by a thread beside
//! the emulator's loop).
//!
//! - `kind = "pgmcc"`: `pgmcc send --cc CC` on the flow's node, `pgmcc recv` on each
//!   receiver's node from its join time to its leave time;
//! - `kind = "pgm"`: the same with `--cc none --rate-max` at the flow's `rate_limit`;
//! - TCP kinds: Linux TCP (`scripts/tcp-flow.py`, built into this binary) from the flow's
//!   node to a sink on its `to` node. Linux has no plain Reno and no NewReno without SACK
//!   in name: `tcp-reno` and `tcp-newreno` run Linux `reno` with SACK off in the sender's
//!   namespace, `tcp-sack` Linux `reno` with SACK; `--tcp CC` runs every TCP flow under
//!   another Linux congestion control (`cubic`, `bbr`) instead.
//!
//! - `kind = "openpgm"`: OpenPGM 5.3 at the fixed rate `rate_limit`, `interop/pgm-send` and
//!   `pgm-recv` (`make -C interop`);
//! - `kind = "uftp"`: Debian's `uftp` with TFMCC (`-C tfmcc`) and `uftpd` receivers;
//! - `kind = "norm"`: NORM with NORM-CC, `interop/norm-peer` (libnorm, `make -C interop`).
//!
//! A receiver has *completed* when its program says the transfer is whole: it exits with
//! status 0 (`pgmcc recv`, `pgm-recv`, `norm-peer`) or, for `uftpd`, which keeps running,
//! the file appears in its destination directory (it receives into a temporary one).
//!
//! A key the real programs have no counterpart for (a controller knob such as `c`, TCP's
//! `delayed_ack`, ...) is refused, naming it: an emulation that silently differs from the
//! scenario would be compared with the simulation as if it were the same experiment.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use netemu::FlowMatch;
use netsim::scenario::{FlowKind, Scenario};

/// The TCP flow program, written into the output directory at run time.
const TCP_FLOW_PY: &str = include_str!("../../../../../scripts/tcp-flow.py");

/// Keys every flow may have; the per-kind ones are below.
const COMMON_KEYS: &[&str] = &[
    "name",
    "kind",
    "from",
    "receiver",
    "start",
    "start_jitter",
    "stop",
    "payload",
];
const PGM_KEYS: &[&str] = &[
    "group",
    "bytes",
    "txw_sqns",
    "cc",
    "fec",
    "rate_limit",
    "rate_floor",
    "rate_ceiling",
];
const TCP_KEYS: &[&str] = &["to", "limited_transmit", "timestamps", "min_rto", "rto"];
const OPENPGM_KEYS: &[&str] = &["group", "bytes", "rate_limit"];
const UFTP_KEYS: &[&str] = &["group", "bytes", "rate_floor", "rate_ceiling"];
const NORM_KEYS: &[&str] = &["group", "bytes", "rate_floor", "rate_ceiling"];

/// How a flow runs.
#[derive(Debug, Clone)]
enum How {
    /// A PGM session: `pgmcc send` and `pgmcc recv`.
    Pgm {
        /// `send` flags for the controller, rate limits and parity.
        send_flags: Vec<String>,
        /// Bytes to send; `None` streams until the flow stops or the run ends.
        bytes: Option<u64>,
        group: Ipv4Addr,
        /// Per receiver, in order: `reports = false` (run with `--no-pgmcc`).
        silent: Vec<bool>,
    },
    /// Linux TCP from the flow's node to a sink at `to`.
    Tcp {
        to: Ipv4Addr,
        linux_cc: String,
        sack: bool,
        /// RFC 7323 timestamps (`net.ipv4.tcp_timestamps` in the sender's namespace).
        timestamps: bool,
    },
    /// OpenPGM at a fixed rate: `pgm-send`, `pgm-recv`.
    OpenPgm {
        group: Ipv4Addr,
        bytes: u64,
        /// `pgm-send --rate`: bytes per second including IP and UDP headers.
        rate_bytes: u64,
        send: PathBuf,
        recv: PathBuf,
        /// Every node's address, by node (libpgm names interfaces by address).
        addrs: Vec<Ipv4Addr>,
    },
    /// uftp with TFMCC: `uftp`, `uftpd`.
    Uftp {
        group: Ipv4Addr,
        bytes: u64,
        /// `-C` argument (`tfmcc`, with bounds in kbit/s when given).
        cc: String,
    },
    /// NORM with NORM-CC: `norm-peer`.
    Norm {
        group: Ipv4Addr,
        bytes: Option<u64>,
        /// Rate bound flags for the sender.
        send_flags: Vec<String>,
        program: PathBuf,
    },
}

/// One flow as the emulation runs it.
#[derive(Debug, Clone)]
pub(super) struct Planned {
    /// Flow id (1, 2, ... in file order), as the emulator marks its datagrams.
    pub(super) id: u32,
    /// Name from the file.
    pub(super) name: String,
    /// Kind from the file.
    pub(super) kind: FlowKind,
    /// Its source node (index) and the namespace suffix.
    pub(super) from: (usize, String),
    /// Receivers (PGM) or the sink (TCP): node index, name, join and leave times (s).
    pub(super) receivers: Vec<(usize, String, f64, Option<f64>)>,
    /// Start and stop (s).
    pub(super) start: f64,
    pub(super) stop: Option<f64>,
    how: How,
}

impl Planned {
    /// UDP encapsulation ports (unicast, multicast) of a PGM flow, or the TCP port.
    fn ports(&self) -> Vec<u16> {
        let id = self.id as u16;
        match self.how {
            How::Tcp { .. } => vec![5000 + id],
            _ => vec![3100 + 2 * id, 3101 + 2 * id],
        }
    }

    /// The size of the file a fixed-size transfer sends (`None`: a stream, or TCP).
    pub(super) fn file_bytes(&self) -> Option<u64> {
        match &self.how {
            How::Pgm { bytes, .. } | How::Norm { bytes, .. } => *bytes,
            How::OpenPgm { bytes, .. } | How::Uftp { bytes, .. } => Some(*bytes),
            How::Tcp { .. } => None,
        }
    }

    /// What the emulator matches the flow's datagrams by.
    pub(super) fn matcher(&self) -> FlowMatch {
        FlowMatch {
            id: self.id,
            protocol: match self.how {
                How::Tcp { .. } => 6,
                _ => 17,
            },
            ports: self.ports(),
        }
    }
}

/// Reads the flows of `sc` (loaded from `path`) into what the emulation runs; refuses what
/// it cannot run. `tcp` overrides Linux's congestion control for every TCP flow.
pub(super) fn plan(path: &Path, sc: &Scenario, tcp: Option<&str>) -> Result<Vec<Planned>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("{}", path.display()))?;
    let raw: Vec<&toml::Table> = match table.get("flow") {
        Some(toml::Value::Array(a)) => a.iter().filter_map(|v| v.as_table()).collect(),
        _ => Vec::new(),
    };
    let node_index = |name: &str| sc.node_names.iter().position(|n| n == name);
    let addr = |i: usize| match sc.sim.addr(i) {
        IpAddr::V4(a) => a,
        IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
    };
    let secs = |t: pgmcc::Instant| t.as_nanos() as f64 / 1e9;
    let mut out = Vec::new();
    for (info, raw) in sc.flows.iter().zip(raw) {
        let kind_keys = match info.kind {
            FlowKind::OpenPgm => OPENPGM_KEYS,
            FlowKind::Uftp => UFTP_KEYS,
            FlowKind::Norm => NORM_KEYS,
            k if k.is_tcp() => TCP_KEYS,
            _ => PGM_KEYS,
        };
        if let Some(k) = raw
            .keys()
            .find(|k| !COMMON_KEYS.contains(&k.as_str()) && !kind_keys.contains(&k.as_str()))
        {
            bail!(
                "{}: flow `{}`: key `{k}` has no counterpart in the real programs, so pgmcc emu \
                 cannot honour it (remove it from a copy of the file, or run the scenario \
                 with pgmcc sim)",
                path.display(),
                info.name
            );
        }
        let from_name = raw.get("from").and_then(|v| v.as_str()).unwrap_or_default();
        let from = node_index(from_name)
            .with_context(|| format!("flow `{}`: no node `{from_name}`", info.name))?;
        let receivers = info
            .receivers
            .iter()
            .filter_map(|(_, node, join, leave)| {
                node_index(node).map(|i| (i, node.clone(), secs(*join), leave.map(secs)))
            })
            .collect::<Vec<_>>();
        let text = |k: &str| raw.get(k).and_then(|v| v.as_str());
        let bytes = raw
            .get("bytes")
            .and_then(|v| v.as_integer())
            .and_then(|b| u64::try_from(b).ok());
        let group = match text("group") {
            Some(g) => g
                .parse()
                .with_context(|| format!("flow `{}`: group `{g}`", info.name))?,
            None => Ipv4Addr::new(239, 192, 0, (info.id % 250) as u8),
        };
        let need_bytes = || {
            bytes.with_context(|| {
                format!(
                    "flow `{}`: a `{}` flow needs `bytes` (the program sends a file)",
                    info.name,
                    info.kind.name()
                )
            })
        };
        let how = if info.kind == FlowKind::OpenPgm {
            let Some(limit) = text("rate_limit") else {
                bail!(
                    "flow `{}`: an `openpgm` flow needs `rate_limit` (it runs at a fixed rate)",
                    info.name
                );
            };
            let bits = rate_bits(limit)?;
            How::OpenPgm {
                group,
                bytes: need_bytes()?,
                rate_bytes: bits / 8,
                send: interop_program("pgm-send", "libpgm-dev")?,
                recv: interop_program("pgm-recv", "libpgm-dev")?,
                addrs: (0..sc.node_names.len()).map(addr).collect(),
            }
        } else if info.kind == FlowKind::Uftp {
            which("uftp")?;
            which("uftpd")?;
            let mut cc = String::from("tfmcc");
            for (key, name) in [("rate_floor", "min"), ("rate_ceiling", "max")] {
                if let Some(r) = text(key) {
                    let bits = rate_bits(r)?;
                    cc.push_str(&format!(":{name}={}", (bits / 1000).max(1)));
                }
            }
            How::Uftp {
                group,
                bytes: need_bytes()?,
                cc,
            }
        } else if info.kind == FlowKind::Norm {
            let mut send_flags = Vec::new();
            for (key, flag) in [("rate_floor", "--rate-min"), ("rate_ceiling", "--rate-max")] {
                if let Some(r) = text(key) {
                    let bits = rate_bits(r)?;
                    send_flags.push(flag.to_string());
                    send_flags.push(bits.to_string());
                }
            }
            How::Norm {
                group,
                bytes,
                send_flags,
                program: interop_program("norm-peer", "libnorm-dev")?,
            }
        } else if info.kind.is_tcp() {
            let Some(&(sink, ..)) = receivers.first() else {
                bail!("flow `{}`: a TCP flow needs `to`", info.name);
            };
            How::Tcp {
                to: addr(sink),
                linux_cc: tcp.unwrap_or("reno").to_string(),
                sack: info.kind == FlowKind::TcpSack,
                timestamps: linux_tcp_keys(path, &info.name, raw)?,
            }
        } else {
            pgm_how(info, raw, group, bytes)?
        };
        out.push(Planned {
            id: info.id,
            name: info.name.clone(),
            kind: info.kind,
            from: (from, from_name.to_string()),
            receivers,
            start: secs(info.start),
            stop: info.stop.map(secs),
            how,
        });
    }
    Ok(out)
}

/// The TCP keys Linux has a counterpart for: `limited_transmit = true` (Linux always
/// sends on the first duplicate ACKs, RFC 3042), `min_rto = "200ms"` (Linux's floor),
/// `rto = "linux"` (Linux's own estimator), and
/// `timestamps` (a per-namespace sysctl; Linux's default is on, so a file without the key
/// runs with them, as Linux does). Returns whether timestamps are on; refuses other values.
fn linux_tcp_keys(path: &Path, flow: &str, raw: &toml::Table) -> Result<bool> {
    let refuse = |key: &str, why: &str| {
        anyhow::anyhow!(
            "{}: flow `{flow}`: `{key}`: {why}, so pgmcc emu cannot honour it (run the \
             scenario with pgmcc sim)",
            path.display()
        )
    };
    if let Some(v) = raw.get("limited_transmit") {
        if v.as_bool() != Some(true) {
            return Err(refuse(
                "limited_transmit",
                "Linux TCP always uses limited transmit",
            ));
        }
    }
    if let Some(v) = raw.get("rto") {
        if v.as_str() != Some("linux") {
            return Err(refuse(
                "rto",
                "Linux TCP computes its RTO as `rto = \"linux\"` says",
            ));
        }
    }
    if let Some(v) = raw.get("min_rto") {
        let floor = v.as_str().map(netsim::units::duration);
        if !matches!(floor, Some(Ok(d)) if d == Duration::from_millis(200)) {
            return Err(refuse(
                "min_rto",
                "Linux TCP's retransmission timer floor is 200ms",
            ));
        }
    }
    match raw.get("timestamps") {
        None => Ok(true),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| refuse("timestamps", "it is true or false")),
    }
}

/// How a `pgmcc` or `pgm` flow runs: `pgmcc send` with the flags the file's keys ask for.
fn pgm_how(
    info: &netsim::scenario::FlowInfo,
    raw: &toml::Table,
    group: Ipv4Addr,
    bytes: Option<u64>,
) -> Result<How> {
    let text = |k: &str| raw.get(k).and_then(|v| v.as_str());
    let mut flags = Vec::new();
    match info.kind {
        FlowKind::Pgm => {
            let Some(limit) = text("rate_limit") else {
                bail!(
                    "flow `{}`: a `pgm` flow needs `rate_limit` in emulation (the real \
                     sender without congestion control needs a ceiling)",
                    info.name
                );
            };
            flags.push("--cc".into());
            flags.push("none".into());
            flags.push("--rate-max".into());
            flags.push(bps(limit)?);
        }
        _ => {
            flags.push("--cc".into());
            flags.push(text("cc").unwrap_or("pgmcc").to_string());
            if let Some(limit) = text("rate_limit") {
                flags.push("--rate-max".into());
                flags.push(bps(limit)?);
            }
        }
    }
    for (key, flag) in [
        ("rate_floor", "--rate-floor"),
        ("rate_ceiling", "--rate-ceiling"),
    ] {
        if let Some(r) = text(key) {
            flags.push(flag.into());
            flags.push(bps(r)?);
        }
    }
    if let Some(n) = raw.get("txw_sqns").and_then(|v| v.as_integer()) {
        flags.push("--txw".into());
        flags.push(n.to_string());
    }
    if let Some(n) = raw.get("fec").and_then(|v| v.as_integer()) {
        flags.push("--fec".into());
        flags.push(n.to_string());
    }
    let silent = match raw.get("receiver") {
        Some(toml::Value::Array(rs)) => rs
            .iter()
            .map(|r| r.get("reports").and_then(|v| v.as_bool()) == Some(false))
            .collect(),
        _ => Vec::new(),
    };
    Ok(How::Pgm {
        send_flags: flags,
        silent,
        bytes,
        group,
    })
}

/// Finds one of the programs built in `interop/` (`make -C interop`): beside the source
/// tree this binary was built in (`target/*/pgmcc` -> `interop/`), or in the current
/// directory's `interop/`. `PGMCC_INTEROP_DIR` overrides both.
fn interop_program(name: &str, package: &str) -> Result<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("PGMCC_INTEROP_DIR") {
        dirs.push(PathBuf::from(d));
    } else {
        if let Ok(exe) = std::env::current_exe() {
            dirs.extend(exe.ancestors().skip(1).take(4).map(|a| a.join("interop")));
        }
        dirs.push(PathBuf::from("interop"));
    }
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .map(|p| p.canonicalize().unwrap_or(p))
        .with_context(|| {
            format!(
                "interop/{name} not found (looked in {}): build it with `make -C interop` \
                 (needs Debian's {package}; scripts/install-deps installs it)",
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// Checks that `program` is on the PATH.
fn which(program: &str) -> Result<()> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false);
    if !found {
        bail!(
            "`{program}` not found on the PATH: install Debian's uftp (scripts/install-deps does)"
        );
    }
    Ok(())
}

/// A scenario rate (`500kbit/s`, ...) in bits per second.
fn rate_bits(rate: &str) -> Result<u64> {
    netsim::units::rate(rate).map_err(|e| anyhow::anyhow!("`{rate}`: {e}"))
}

/// A scenario rate as `pgmcc send` reads one: bits per second.
fn bps(rate: &str) -> Result<String> {
    Ok(format!("{}bps", rate_bits(rate)?))
}

/// How long before its sender a receiver that joins at the flow's start is started: a
/// program takes ~0.1 s to start and join its group, and a sender started at the same
/// instant sends its first packets to no one (seen: the first ODATA lost every time).
const LEAD: f64 = 0.5;

/// When a flow's sender starts: at its start, but not before [`LEAD`] (its receivers, or
/// TCP's sink, start first).
fn sender_start(f: &Planned) -> f64 {
    f.start.max(LEAD)
}

/// What happened to one process of a flow.
#[derive(Debug)]
pub(super) struct Outcome {
    /// The flow's id.
    pub(super) flow: u32,
    /// What it was ("sender", "receiver PR1", "tcp sink", ...).
    pub(super) role: String,
    /// Its exit status, if it ended by itself before the run ended.
    pub(super) status: Option<std::process::ExitStatus>,
    /// Where its standard error went.
    pub(super) log: PathBuf,
    /// A receiver's node name (`None` for senders and TCP).
    pub(super) receiver: Option<String>,
    /// When a receiver completed (seconds since the run began): see the module's doc.
    pub(super) completed_at: Option<f64>,
}

/// One process of the schedule.
struct Proc {
    flow: u32,
    role: String,
    log: PathBuf,
    child: Option<Child>,
    /// The streamed input of an endless PGM flow, and when it ends.
    feeder: Option<JoinHandle<()>>,
    done: Option<std::process::ExitStatus>,
    /// A receiver's node.
    receiver: Option<String>,
    /// A receiver that keeps running has completed when this file exists.
    done_when: Option<PathBuf>,
    completed_at: Option<f64>,
}

enum Action {
    /// Run a command (the index of its [`Proc`]).
    Spawn(usize, Box<Command>, Option<f64>),
    /// Stop a process (SIGTERM).
    Stop(usize),
}

/// Runs the flows' processes on schedule until `end` seconds after `origin` or until `stop`;
/// then stops whatever still runs and returns what happened. `dir` receives logs, input
/// files and `--stats` files.
pub(super) fn run(
    flows: Vec<Planned>,
    prefix: String,
    dir: PathBuf,
    origin: Instant,
    end: f64,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<Vec<Outcome>>> {
    let pgmcc = std::env::current_exe().context("finding this program")?;
    let script = dir.join("tcp-flow.py");
    std::fs::write(&script, TCP_FLOW_PY).context("writing tcp-flow.py")?;
    let mut l = Launcher {
        prefix,
        dir,
        pgmcc,
        script,
        end,
        procs: Vec::new(),
        actions: Vec::new(),
    };
    for f in &flows {
        match &f.how {
            How::Pgm { .. } => l.pgm(f)?,
            How::Tcp { .. } => l.tcp(f)?,
            How::OpenPgm { .. } => l.openpgm(f)?,
            How::Uftp { .. } => l.uftp(f)?,
            How::Norm { .. } => l.norm(f)?,
        }
    }
    let Launcher {
        procs, mut actions, ..
    } = l;
    actions.sort_by(|a, b| a.0.total_cmp(&b.0));
    std::thread::Builder::new()
        .name("flows".into())
        .spawn(move || schedule(procs, actions, origin, end, &stop))
        .context("starting the flow scheduler")
}

/// The processes of every flow and when to start and stop each, as they are planned.
struct Launcher {
    /// Namespaces are `{prefix}-{node}`.
    prefix: String,
    /// Logs, input files and `--stats` files.
    dir: PathBuf,
    /// This program (`pgmcc send`, `pgmcc recv`).
    pgmcc: PathBuf,
    /// `tcp-flow.py`, written into `dir`.
    script: PathBuf,
    /// Seconds after the origin when the run ends.
    end: f64,
    procs: Vec<Proc>,
    actions: Vec<(f64, Action)>,
}

impl Launcher {
    fn ns(&self, node: &str) -> String {
        format!("{}-{node}", self.prefix)
    }

    /// A process of flow `flow` in the role `role`, logging to `log`: its index.
    fn add(&mut self, flow: u32, role: String, log: PathBuf) -> usize {
        self.procs.push(Proc {
            flow,
            role,
            log,
            child: None,
            feeder: None,
            done: None,
            receiver: None,
            done_when: None,
            completed_at: None,
        });
        self.procs.len() - 1
    }

    /// A receiver of flow `f` on `node`, run from `join` to `leave`.
    fn add_receiver(
        &mut self,
        f: &Planned,
        node: &str,
        (join, leave): (f64, Option<f64>),
        c: Command,
    ) -> usize {
        let log = self.dir.join(format!("flow{}-recv-{node}.log", f.id));
        let i = self.add(f.id, format!("receiver {node}"), log);
        self.procs[i].receiver = Some(node.to_string());
        // A receiver there from the start is listening before its sender sends.
        let at = if join <= f.start {
            (join - LEAD).max(0.0)
        } else {
            join
        };
        self.actions.push((at, Action::Spawn(i, Box::new(c), None)));
        if let Some(t) = leave {
            self.actions.push((t, Action::Stop(i)));
        }
        i
    }

    /// The sender of flow `f` (its log `flowN-send.log`), started at `sender_start`; an
    /// endless PGM flow's input is fed until `input_ends`.
    fn add_sender(&mut self, f: &Planned, c: Command, input_ends: Option<f64>) {
        let log = self.dir.join(format!("flow{}-send.log", f.id));
        let i = self.add(f.id, "sender".into(), log);
        self.actions
            .push((sender_start(f), Action::Spawn(i, Box::new(c), input_ends)));
    }

    /// A `pgmcc` or `pgm` flow: `pgmcc recv` at each receiver, `pgmcc send` at the source.
    fn pgm(&mut self, f: &Planned) -> Result<()> {
        let How::Pgm {
            send_flags,
            bytes,
            group,
            silent,
        } = &f.how
        else {
            return Ok(());
        };
        let ports = f.ports();
        let group = format!("{group}:7500");
        let udp = format!("{},{}", ports[0], ports[1]);
        for (j, (_, node, join, leave)) in f.receivers.iter().enumerate() {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &self.ns(node)])
                .arg(&self.pgmcc)
                .args(["recv", "--group", &group, "--udp-ports", &udp, "-q"])
                .args(["--idle-timeout", "1h", "--out", "-"]);
            // A receiver there from the start gets the whole stream (repairs
            // included); one that joins later takes it from where it joined.
            if *join > f.start {
                c.arg("--allow-partial-start");
            }
            if silent.get(j).copied().unwrap_or(false) {
                c.arg("--no-pgmcc");
            }
            self.add_receiver(f, node, (*join, *leave), c);
        }
        let stats = self.dir.join(format!("flow{}-send.json", f.id));
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(&f.from.1)])
            .arg(&self.pgmcc)
            .args(["send", "--group", &group, "--udp-ports", &udp, "-q"])
            .args(["--linger", "1s", "--feedback-timeout", "0", "--stats"])
            .arg(&stats)
            .args(send_flags);
        let input_ends = match bytes {
            Some(n) => {
                let file = self.dir.join(format!("flow{}.bin", f.id));
                write_input(&file, *n)?;
                c.arg(&file);
                None
            }
            None => {
                c.arg("-");
                Some(f.stop.unwrap_or(self.end))
            }
        };
        self.add_sender(f, c, input_ends);
        Ok(())
    }

    /// A TCP flow: the sink at its receiver, the sender (Linux TCP, its congestion control and
    /// SACK as asked) at the source.
    fn tcp(&mut self, f: &Planned) -> Result<()> {
        let How::Tcp {
            to,
            linux_cc,
            sack,
            timestamps,
        } = &f.how
        else {
            return Ok(());
        };
        let ports = f.ports();
        let (_, sink_node, ..) = &f.receivers[0];
        let port = ports[0].to_string();
        let count = self.dir.join(format!("flow{}-tcp.count", f.id));
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(sink_node), "python3"])
            .arg(&self.script)
            .args(["sink", "0.0.0.0", &port])
            .arg(&count);
        let log = self.dir.join(format!("flow{}-sink.log", f.id));
        let i = self.add(f.id, format!("tcp sink {sink_node}"), log);
        self.actions
            .push((0.0, Action::Spawn(i, Box::new(c), None)));
        let seconds = f.stop.unwrap_or(self.end) - f.start;
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(&f.from.1), "sh", "-c"]).arg(format!(
            "sysctl -q -w net.ipv4.tcp_sack={} net.ipv4.tcp_timestamps={} && exec python3 {} send {to} {port} {seconds:.3} {linux_cc}",
            u8::from(*sack),
            u8::from(*timestamps),
            self.script.display()
        ));
        let log = self.dir.join(format!("flow{}-tcp.log", f.id));
        let i = self.add(f.id, "tcp sender".into(), log);
        self.actions
            .push((sender_start(f), Action::Spawn(i, Box::new(c), None)));
        Ok(())
    }

    /// An OpenPGM flow: `interop/pgm-recv` at each receiver, `interop/pgm-send` at the source.
    fn openpgm(&mut self, f: &Planned) -> Result<()> {
        let How::OpenPgm {
            group,
            bytes,
            rate_bytes,
            send,
            recv,
            addrs,
        } = &f.how
        else {
            return Ok(());
        };
        let ports = f.ports();
        let network = |node: usize| format!("{};{group}", addrs[node]);
        let port = ports[0].to_string();
        for (n, node, join, leave) in &f.receivers {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &self.ns(node)]).arg(recv).args([
                "-n",
                &network(*n),
                "--port",
                &port,
                "--timeout",
                "3600",
            ]);
            self.add_receiver(f, node, (*join, *leave), c);
        }
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(&f.from.1)])
            .arg(send)
            .args([
                "-n",
                &network(f.from.0),
                "--port",
                &port,
                "--msg-size",
                "1400",
            ])
            .args(["--bytes", &bytes.to_string()])
            .args(["--rate", &rate_bytes.to_string(), "--linger", "3600"]);
        self.add_sender(f, c, None);
        Ok(())
    }

    /// A uftp flow: `uftpd` at each receiver (done when the file lands), `uftp` with TFMCC at
    /// the source.
    fn uftp(&mut self, f: &Planned) -> Result<()> {
        let How::Uftp { group, bytes, cc } = &f.how else {
            return Ok(());
        };
        let ports = f.ports();
        let name = format!("flow{}.bin", f.id);
        let file = self.dir.join(&name);
        write_input(&file, *bytes)?;
        let port = ports[0].to_string();
        let group = group.to_string();
        for (_, node, join, leave) in &f.receivers {
            // Received into `tmp`, moved to `dest` when the session completes.
            let base = self.dir.join(format!("flow{}-uftpd-{node}", f.id));
            let (dest, tmp) = (base.join("dest"), base.join("tmp"));
            for d in [&dest, &tmp] {
                std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            }
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &self.ns(node), "uftpd", "-d", "-q"])
                .args(["-M", &group, "-p", &port, "-I", "eth0", "-D"])
                .arg(&dest)
                .arg("-T")
                .arg(&tmp);
            let i = self.add_receiver(f, node, (*join, *leave), c);
            self.procs[i].done_when = Some(dest.join(&name));
        }
        // The data goes to a private group beside the public one.
        let octets = Ipv4Addr::new(239, 193, 0, (f.id % 250) as u8).to_string();
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            &self.ns(&f.from.1),
            "uftp",
            "-I",
            "eth0",
            "-Y",
            "none",
        ])
        .args(["-M", &group, "-P", &octets, "-p", &port])
        .args(["-u", &ports[1].to_string(), "-C", cc])
        .arg(&file);
        self.add_sender(f, c, None);
        Ok(())
    }

    /// A NORM flow: `interop/norm-peer` receiving at each receiver and sending at the source.
    fn norm(&mut self, f: &Planned) -> Result<()> {
        let How::Norm {
            group,
            bytes,
            send_flags,
            program,
        } = &f.how
        else {
            return Ok(());
        };
        let ports = f.ports();
        let addr = group.to_string();
        let port = ports[0].to_string();
        for (_, node, join, leave) in &f.receivers {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &self.ns(node)])
                .arg(program)
                .args(["recv", "--addr", &addr, "--port", &port, "--iface", "eth0"]);
            if let Some(n) = bytes {
                c.args(["--bytes", &n.to_string()]);
            }
            self.add_receiver(f, node, (*join, *leave), c);
        }
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(&f.from.1)])
            .arg(program)
            .args(["send", "--addr", &addr, "--port", &port, "--iface", "eth0"])
            .args(["--linger", "3600"])
            .args(send_flags);
        match bytes {
            Some(n) => c.args(["--bytes", &n.to_string()]),
            None => c.args([
                "--seconds",
                &format!("{:.3}", f.stop.unwrap_or(self.end) - f.start),
            ]),
        };
        self.add_sender(f, c, None);
        Ok(())
    }
}

fn schedule(
    mut procs: Vec<Proc>,
    actions: Vec<(f64, Action)>,
    origin: Instant,
    end: f64,
    stop: &AtomicBool,
) -> Vec<Outcome> {
    // Waits, noting when receivers complete (to within the 20-ms poll).
    let wait_until = |procs: &mut Vec<Proc>, t: f64| {
        let mut polled = Instant::now();
        while origin.elapsed().as_secs_f64() < t && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
            if polled.elapsed() >= Duration::from_millis(20) {
                polled = Instant::now();
                note_completions(procs, origin);
            }
        }
    };
    for (t, action) in actions {
        if t >= end {
            break;
        }
        wait_until(&mut procs, t);
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match action {
            Action::Spawn(i, mut cmd, input_ends) => {
                let p = &mut procs[i];
                let log = std::fs::File::create(&p.log).ok();
                cmd.stdout(Stdio::null())
                    .stderr(log.map_or_else(Stdio::null, Stdio::from))
                    .stdin(if input_ends.is_some() {
                        Stdio::piped()
                    } else {
                        Stdio::null()
                    });
                match cmd.spawn() {
                    Ok(mut child) => {
                        if let (Some(until), Some(stdin)) = (input_ends, child.stdin.take()) {
                            p.feeder = Some(feed(stdin, origin, until));
                        }
                        p.child = Some(child);
                    }
                    Err(e) => tracing::warn!("{} of flow {}: {e}", p.role, p.flow),
                }
            }
            Action::Stop(i) => terminate(&mut procs[i]),
        }
    }
    wait_until(&mut procs, end);
    note_completions(&mut procs, origin);
    for p in &mut procs {
        terminate(p);
    }
    procs
        .into_iter()
        .map(|p| Outcome {
            flow: p.flow,
            role: p.role,
            status: p.done,
            log: p.log,
            receiver: p.receiver,
            completed_at: p.completed_at,
        })
        .collect()
}

/// Notes the receivers that completed since the last call: exited with status 0, or their
/// `done_when` file appeared. Records senders' and sinks' exits too.
fn note_completions(procs: &mut [Proc], origin: Instant) {
    let now = origin.elapsed().as_secs_f64();
    for p in procs.iter_mut() {
        if let Some(c) = &mut p.child {
            if let Ok(Some(status)) = c.try_wait() {
                p.done = Some(status);
                p.child = None;
                if status.success() && p.receiver.is_some() && p.done_when.is_none() {
                    p.completed_at.get_or_insert(now);
                }
            }
        }
        if p.completed_at.is_none() && p.child.is_some() {
            if let Some(f) = &p.done_when {
                if f.exists() {
                    p.completed_at = Some(now);
                }
            }
        }
    }
}

/// Stops a process: SIGTERM (receivers and senders end cleanly on it), SIGKILL after 2 s.
fn terminate(p: &mut Proc) {
    let Some(mut c) = p.child.take() else {
        return;
    };
    if let Ok(Some(status)) = c.try_wait() {
        p.done = Some(status);
        return;
    }
    // `ip netns exec` hands the signal's target to the program it runs (it execs).
    let _ = Command::new("kill")
        .args(["-TERM", &c.id().to_string()])
        .stderr(Stdio::null())
        .status();
    let give_up = Instant::now() + Duration::from_secs(2);
    while Instant::now() < give_up {
        if let Ok(Some(_)) = c.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = c.kill();
    let _ = c.wait();
}

/// Writes an endless PGM flow's input until `until` seconds after `origin`, as fast as the
/// sender takes it (the pipe's back-pressure paces it), then closes it: the sender then
/// announces the end.
fn feed(mut stdin: ChildStdin, origin: Instant, until: f64) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let chunk = vec![0x5au8; 64 * 1024];
        while origin.elapsed().as_secs_f64() < until {
            if stdin.write_all(&chunk).is_err() {
                return;
            }
        }
    })
}

/// A file of `len` bytes that no compression would shrink (a counter hashed).
fn write_input(path: &Path, len: u64) -> Result<()> {
    use sha2::{Digest, Sha256};
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("{}", path.display()))?,
    );
    let mut left = len;
    let mut i: u64 = 0;
    while left > 0 {
        let block = Sha256::digest(i.to_le_bytes());
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n])?;
        left -= n as u64;
        i += 1;
    }
    f.flush()?;
    Ok(())
}
