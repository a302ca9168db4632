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
const TCP_FLOW_PY: &str = include_str!("../../../../scripts/tcp-flow.py");

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
    "cc",
    "fec",
    "rate_limit",
    "rate_floor",
    "rate_ceiling",
];
const TCP_KEYS: &[&str] = &["to"];

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
            How::Pgm { .. } => vec![3100 + 2 * id, 3101 + 2 * id],
            How::Tcp { .. } => vec![5000 + id],
        }
    }

    /// What the emulator matches the flow's datagrams by.
    pub(super) fn matcher(&self) -> FlowMatch {
        FlowMatch {
            id: self.id,
            protocol: match self.how {
                How::Pgm { .. } => 17,
                How::Tcp { .. } => 6,
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
        let kind_keys = if info.kind.is_tcp() {
            TCP_KEYS
        } else {
            PGM_KEYS
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
        let how = if info.kind.is_tcp() {
            let Some(&(sink, ..)) = receivers.first() else {
                bail!("flow `{}`: a TCP flow needs `to`", info.name);
            };
            How::Tcp {
                to: addr(sink),
                linux_cc: tcp.unwrap_or("reno").to_string(),
                sack: info.kind == FlowKind::TcpSack,
            }
        } else {
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
            if let Some(n) = raw.get("fec").and_then(|v| v.as_integer()) {
                flags.push("--fec".into());
                flags.push(n.to_string());
            }
            let group = match text("group") {
                Some(g) => g
                    .parse()
                    .with_context(|| format!("flow `{}`: group `{g}`", info.name))?,
                None => Ipv4Addr::new(239, 192, 0, (info.id % 250) as u8),
            };
            let silent = match raw.get("receiver") {
                Some(toml::Value::Array(rs)) => rs
                    .iter()
                    .map(|r| r.get("reports").and_then(|v| v.as_bool()) == Some(false))
                    .collect(),
                _ => Vec::new(),
            };
            How::Pgm {
                send_flags: flags,
                silent,
                bytes: raw
                    .get("bytes")
                    .and_then(|v| v.as_integer())
                    .and_then(|b| u64::try_from(b).ok()),
                group,
            }
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

/// A scenario rate (`500kbit/s`, ...) as `pgmcc send` reads one: bits per second.
fn bps(rate: &str) -> Result<String> {
    let b = netsim::units::rate(rate).map_err(|e| anyhow::anyhow!("`{rate}`: {e}"))?;
    Ok(format!("{b}bps"))
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
    let ns = |node: &str| format!("{prefix}-{node}");
    let mut procs: Vec<Proc> = Vec::new();
    let mut actions: Vec<(f64, Action)> = Vec::new();
    let add = |procs: &mut Vec<Proc>, flow: u32, role: String, log: PathBuf| {
        procs.push(Proc {
            flow,
            role,
            log,
            child: None,
            feeder: None,
            done: None,
        });
        procs.len() - 1
    };
    for f in &flows {
        let ports = f.ports();
        match &f.how {
            How::Pgm {
                send_flags,
                bytes,
                group,
                silent,
            } => {
                let group = format!("{group}:7500");
                let udp = format!("{},{}", ports[0], ports[1]);
                for (j, (_, node, join, leave)) in f.receivers.iter().enumerate() {
                    let log = dir.join(format!("flow{}-recv-{node}.log", f.id));
                    let mut c = Command::new("ip");
                    c.args(["netns", "exec", &ns(node)])
                        .arg(&pgmcc)
                        .args(["recv", "--group", &group, "--udp-ports", &udp, "-q"])
                        .args(["--allow-partial-start", "--idle-timeout", "1h"])
                        .args(["--out", "-"]);
                    if silent.get(j).copied().unwrap_or(false) {
                        c.arg("--no-pgmcc");
                    }
                    let i = add(&mut procs, f.id, format!("receiver {node}"), log);
                    actions.push((*join, Action::Spawn(i, Box::new(c), None)));
                    if let Some(t) = leave {
                        actions.push((*t, Action::Stop(i)));
                    }
                }
                let stats = dir.join(format!("flow{}-send.json", f.id));
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns(&f.from.1)])
                    .arg(&pgmcc)
                    .args(["send", "--group", &group, "--udp-ports", &udp, "-q"])
                    .args(["--linger", "1s", "--feedback-timeout", "0", "--stats"])
                    .arg(&stats)
                    .args(send_flags);
                let input_ends = match bytes {
                    Some(n) => {
                        let file = dir.join(format!("flow{}.bin", f.id));
                        write_input(&file, *n)?;
                        c.arg(&file);
                        None
                    }
                    None => {
                        c.arg("-");
                        Some(f.stop.unwrap_or(end))
                    }
                };
                let log = dir.join(format!("flow{}-send.log", f.id));
                let i = add(&mut procs, f.id, "sender".into(), log);
                actions.push((f.start, Action::Spawn(i, Box::new(c), input_ends)));
            }
            How::Tcp { to, linux_cc, sack } => {
                let (_, sink_node, ..) = &f.receivers[0];
                let port = ports[0].to_string();
                let count = dir.join(format!("flow{}-tcp.count", f.id));
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns(sink_node), "python3"])
                    .arg(&script)
                    .args(["sink", "0.0.0.0", &port])
                    .arg(&count);
                let log = dir.join(format!("flow{}-sink.log", f.id));
                let i = add(&mut procs, f.id, format!("tcp sink {sink_node}"), log);
                actions.push((0.0, Action::Spawn(i, Box::new(c), None)));
                let seconds = f.stop.unwrap_or(end) - f.start;
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns(&f.from.1), "sh", "-c"]).arg(format!(
                    "sysctl -q -w net.ipv4.tcp_sack={} && exec python3 {} send {to} {port} {seconds:.3} {linux_cc}",
                    u8::from(*sack),
                    script.display()
                ));
                let log = dir.join(format!("flow{}-tcp.log", f.id));
                let i = add(&mut procs, f.id, "tcp sender".into(), log);
                actions.push((f.start, Action::Spawn(i, Box::new(c), None)));
            }
        }
    }
    actions.sort_by(|a, b| a.0.total_cmp(&b.0));
    std::thread::Builder::new()
        .name("flows".into())
        .spawn(move || schedule(procs, actions, origin, end, &stop))
        .context("starting the flow scheduler")
}

fn schedule(
    mut procs: Vec<Proc>,
    actions: Vec<(f64, Action)>,
    origin: Instant,
    end: f64,
    stop: &AtomicBool,
) -> Vec<Outcome> {
    let wait_until = |t: f64| {
        while origin.elapsed().as_secs_f64() < t && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    for (t, action) in actions {
        if t >= end {
            break;
        }
        wait_until(t);
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
    wait_until(end);
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
        })
        .collect()
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
