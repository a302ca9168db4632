//! `pgmcc emu`: a scenario's network on the wall clock, between network namespaces, with
//! its flows run as real processes ([`flows`]) and measured into the files `pgmcc sim`
//! writes ([`summary`]).

mod flows;
mod summary;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use indicatif::{ProgressBar, ProgressStyle};
use netemu::{EmuReport, Emulator};
use netsim::{report, run, scenario};

use crate::net::args::parse_duration;
use crate::out::outln;

/// Arguments of `pgmcc emu`.
#[derive(Debug, ClapArgs)]
pub(crate) struct Args {
    /// Scenario file (TOML): its nodes and links are emulated (docs/scenarios.md).
    #[arg(value_name = "SCENARIO")]
    scenario: PathBuf,
    /// Emulate the network only, not the scenario's flows: every node becomes a namespace
    /// PREFIX-NODE with its scenario address on eth0, and you run programs there (`ip netns
    /// exec PREFIX-NODE CMD`) until --for passes or Ctrl-C.
    #[arg(long)]
    net_only: bool,
    /// Linux congestion control for every TCP flow (reno, cubic, bbr) [default: reno, with
    /// SACK for tcp-sack flows and without for tcp-reno and tcp-newreno].
    #[arg(long, value_name = "CC")]
    tcp: Option<String>,
    /// Output directory for summary.json, report.html and the programs' logs [default:
    /// out/emu/<scenario name>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Prefix of the namespaces: PREFIX for the emulator, PREFIX-NODE for each node.
    #[arg(long, value_name = "PREFIX", default_value = "pgmcc-emu")]
    prefix: String,
    /// Stop after this long (e.g. 60s, 10m) [default: the scenario's duration; with
    /// --net-only or a scenario without flows, at Ctrl-C].
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
    run_for: Option<Duration>,
    /// Seed of the links' random loss; overrides the file's `seed` (default 1).
    #[arg(long)]
    seed: Option<u64>,
    /// No progress (a bar on a terminal, otherwise a line every 10 s on standard error).
    #[arg(long, short)]
    quiet: bool,
    /// Write per-link and per-host counters as JSON to FILE at the end.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
}

impl Args {
    /// The arguments that emulate `scenario`'s flows once, quietly, for another command
    /// (`pgmcc fairness run --emu`): loss seed `seed`, Linux congestion control `tcp` for
    /// every TCP flow, output in `out`, namespaces named from `prefix`.
    pub(crate) fn flows_once(
        scenario: PathBuf,
        seed: u64,
        tcp: Option<String>,
        out: PathBuf,
        prefix: String,
    ) -> Args {
        Args {
            scenario,
            net_only: false,
            tcp,
            out: Some(out),
            prefix,
            run_for: None,
            seed: Some(seed),
            quiet: true,
            stats: None,
        }
    }
}

/// Runs `pgmcc emu`.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    emulate(args)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs the emulation `args` ask for; returns what it measured (`None` with `--net-only` or
/// a scenario without flows), also written to the output directory.
pub(crate) fn emulate(args: &Args) -> Result<Option<netsim::summary::Summary>> {
    let sc = scenario::load_for_emulation(&args.scenario, args.seed)?;
    if let Some(cc) = &args.tcp {
        if !["reno", "cubic", "bbr"].contains(&cc.as_str()) {
            bail!("--tcp {cc}: this kernel offers reno, cubic and bbr");
        }
    }
    // A scenario without flows is a network to run programs in.
    let net_only = args.net_only || sc.flows.is_empty();
    let planned = if net_only {
        Vec::new()
    } else {
        flows::plan(&args.scenario, &sc, args.tcp.as_deref())?
    };
    if !rustix::process::geteuid().is_root() {
        bail!("pgmcc emu needs root (it creates network namespaces and TAP devices)");
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out/emu").join(&sc.name));
    let logs = out.join("logs");
    if !net_only {
        std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    }
    let net = scenario::load_network(&args.scenario, args.seed)?;
    let (nodes, links) = (net.node_names.len(), net.link_names.len());
    let stop = Arc::new(AtomicBool::new(false));
    watch_signals(Arc::clone(&stop))?;
    // The emulator moves this thread into its own namespace: from here on, nothing this
    // process does touches the caller's network.
    let mut emu = Emulator::new(net, &args.prefix).context("setting up the emulation")?;
    emu.measure(planned.iter().map(flows::Planned::matcher).collect());
    for (name, ns, addr) in emu.hosts() {
        outln!("node {name}: namespace {ns}, address {addr} on eth0");
    }
    let run_for = match (args.run_for, net_only) {
        (Some(d), _) => Some(d),
        (None, true) => None,
        (None, false) => Some(sc.duration),
    };
    let scheduler = if net_only {
        outln!(
            "ready: {nodes} nodes, {links} links; run programs with `ip netns exec {}-NODE ...`; {}",
            args.prefix,
            match run_for {
                Some(d) => format!("stops after {} s", d.as_secs_f64()),
                None => "Ctrl-C stops".to_string(),
            }
        );
        None
    } else {
        let end = run_for.map_or(f64::MAX, |d| d.as_secs_f64());
        outln!(
            "ready: {nodes} nodes, {links} links, {} flows; running for {end:.0} s (Ctrl-C stops)",
            planned.len()
        );
        Some(flows::run(
            planned.clone(),
            args.prefix.clone(),
            logs.clone(),
            std::time::Instant::now(),
            end,
            Arc::clone(&stop),
        )?)
    };
    let sample = (!net_only).then_some(sc.sample);
    let progress = match (run_for, args.quiet) {
        (Some(d), false) => Some(show_progress(&sc.name, d, Arc::clone(&stop))?),
        _ => None,
    };
    emu.run(run_for, sample, &stop);
    stop.store(true, Ordering::Relaxed);
    if let Some(p) = progress {
        let _ = p.join();
    }
    let outcomes = scheduler
        .map(|s| s.join().unwrap_or_default())
        .unwrap_or_default();
    let report = emu.report();
    print_report(&report);
    let measured = if !net_only {
        let summary = summary::build(&sc, &planned, emu.samples(), &report);
        let per_flow = summary::outcomes(&planned, &outcomes, emu.samples(), &report);
        emu.tear_down();
        run::write(&summary, &out).with_context(|| format!("writing {}", out.display()))?;
        report::write_report(&summary, &out)
            .with_context(|| format!("writing the report to {}", out.display()))?;
        for f in &summary.flows {
            let rx: Vec<String> = f
                .receivers
                .iter()
                .take(8)
                .map(|r| format!("{} {:.0}", r.node, r.mean_kbps))
                .collect();
            outln!(
                "  {:<12} {:<11} {:>8.1} kbit/s mean  receivers: {}",
                f.name,
                f.kind,
                f.mean_kbps,
                rx.join(", ")
            );
        }
        for f in per_flow.iter().filter(|f| f.file_bytes.is_some()) {
            let done: Vec<String> = f
                .receivers
                .iter()
                .take(8)
                .map(|r| match r.completed_after_s {
                    Some(t) => format!("{} {t:.1} s", r.node),
                    None => format!("{} not complete", r.node),
                })
                .collect();
            outln!("  {:<12} completed: {}", f.name, done.join(", "));
        }
        let json = serde_json::to_string_pretty(&per_flow)?;
        let path = out.join("flows.json");
        std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
        for o in outcomes
            .iter()
            .filter(|o| o.status.is_some_and(|s| !s.success()))
        {
            outln!(
                "  flow {} {} failed ({}): see {}",
                o.flow,
                o.role,
                o.status.map_or(String::new(), |s| s.to_string()),
                o.log.display()
            );
        }
        outln!("report: {}", out.join("report.html").display());
        Some(summary)
    } else {
        emu.tear_down();
        None
    };
    if let Some(path) = &args.stats {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(measured)
}

/// Shows how far the emulation is until `stop`: a bar on a terminal, otherwise a line on
/// standard error every 10 s (an emulation runs as long as its scenario says).
fn show_progress(
    name: &str,
    length: Duration,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>> {
    use std::io::IsTerminal;
    let total = length.as_secs();
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(total);
        b.set_style(
            ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} s emulated")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        b.set_prefix(name.to_string());
        b
    });
    let start = std::time::Instant::now();
    std::thread::Builder::new()
        .name("progress".into())
        .spawn(move || {
            let mut last_line = start;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let done = start.elapsed().as_secs().min(total);
                match &bar {
                    Some(b) => b.set_position(done),
                    None if last_line.elapsed() >= Duration::from_secs(10) => {
                        last_line = std::time::Instant::now();
                        eprintln!("pgmcc emu: {done} of {total} s emulated");
                    }
                    None => {}
                }
            }
            if let Some(b) = bar {
                b.finish_and_clear();
            }
        })
        .context("starting the progress display")
}

/// Sets `stop` at SIGINT or SIGTERM (a thread of its own with a small runtime).
fn watch_signals(stop: Arc<AtomicBool>) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("starting the signal watcher")?;
    let mut signals = rt.block_on(async { crate::net::Signals::new() })?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            rt.block_on(signals.recv());
            stop.store(true, Ordering::Relaxed);
        })
        .context("starting the signal watcher")?;
    Ok(())
}

fn print_report(r: &EmuReport) {
    outln!("emulated for {:.1} s", r.seconds);
    outln!("link                      packets        bytes  queue drops  random losses");
    for l in &r.links {
        let name = format!("{} -> {}", l.from, l.to);
        outln!(
            "{name:<20} {:>12} {:>12} {:>12} {:>14}",
            l.packets,
            l.bytes,
            l.queue_drops,
            l.random_losses
        );
    }
    for (why, n) in &r.ignored {
        outln!("not carried: {n} frames ({why})");
    }
    if r.input_overflow > 0 {
        outln!(
            "warning: {} frames dropped because the emulator fell behind the hosts",
            r.input_overflow
        );
    }
}
