//! `pgmcc emu`: a scenario's network on the wall clock, between network namespaces.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use netemu::{EmuReport, Emulator};
use netsim::scenario;

use crate::net::args::parse_duration;
use crate::out::outln;

/// Arguments of `pgmcc emu`.
#[derive(Debug, ClapArgs)]
pub(crate) struct Args {
    /// Scenario file (TOML): its nodes and links are emulated (docs/scenarios.md).
    #[arg(value_name = "SCENARIO")]
    scenario: PathBuf,
    /// Emulate the network only: every node becomes a namespace PREFIX-NODE with its
    /// scenario address on eth0, and you run programs there (`ip netns exec PREFIX-NODE
    /// CMD`). Required when the scenario has flows: running them is not built yet.
    #[arg(long)]
    net_only: bool,
    /// Prefix of the namespaces: PREFIX for the emulator, PREFIX-NODE for each node.
    #[arg(long, value_name = "PREFIX", default_value = "pgmcc-emu")]
    prefix: String,
    /// Stop after this long (e.g. 60s, 10m) [default: at Ctrl-C].
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
    run_for: Option<Duration>,
    /// Seed of the links' random loss; overrides the file's `seed` (default 1).
    #[arg(long)]
    seed: Option<u64>,
    /// Write per-link and per-host counters as JSON to FILE at the end.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
}

/// Runs `pgmcc emu`.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let flows = scenario::load(&args.scenario, args.seed)?.flows.len();
    if flows > 0 && !args.net_only {
        bail!(
            "{} has {flows} flow(s), and running a scenario's flows in emulation is not built \
             yet: pass --net-only to emulate its network and start programs in the namespaces \
             yourself",
            args.scenario.display()
        );
    }
    if !rustix::process::geteuid().is_root() {
        bail!("pgmcc emu needs root (it creates network namespaces and TAP devices)");
    }
    let net = scenario::load_network(&args.scenario, args.seed)?;
    let (nodes, links) = (net.node_names.len(), net.link_names.len());
    let stop = Arc::new(AtomicBool::new(false));
    watch_signals(Arc::clone(&stop))?;
    // The emulator moves this thread into its own namespace: from here on, nothing this
    // process does touches the caller's network.
    let mut emu = Emulator::new(net, &args.prefix).context("setting up the emulation")?;
    for (name, ns, addr) in emu.hosts() {
        outln!("node {name}: namespace {ns}, address {addr} on eth0");
    }
    outln!(
        "ready: {nodes} nodes, {links} links; run programs with `ip netns exec {}-NODE ...`; {}",
        args.prefix,
        match args.run_for {
            Some(d) => format!("stops after {} s", d.as_secs_f64()),
            None => "Ctrl-C stops".to_string(),
        }
    );
    emu.run(args.run_for, &stop);
    let report = emu.report();
    print_report(&report);
    emu.tear_down();
    if let Some(path) = &args.stats {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
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
