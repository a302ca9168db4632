//! `pgmcc sim`: run a scenario file and write its report.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant as WallClock;

use crate::out::outln;
use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use indicatif::{ProgressBar, ProgressStyle};
use netsim::{report, run, scenario};

/// Arguments of `pgmcc sim`.
#[derive(Debug, ClapArgs)]
pub(crate) struct Args {
    /// Scenario file (TOML), e.g. scenarios/fig5.toml.
    #[arg(value_name = "SCENARIO")]
    scenario: PathBuf,
    /// Seed for every random choice in the run; overrides the file's `seed` (default 1).
    #[arg(long)]
    seed: Option<u64>,
    /// Output directory [default: out/<scenario name>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
    /// Also print each flow's mean rate over these intervals, in seconds: e.g.
    /// `--phases 10-60,70-120` (a phase covers samples ending in (from, to]).
    #[arg(long, value_name = "FROM-TO,...", value_parser = parse_phases)]
    phases: Option<Phases>,
}

/// Time intervals (seconds) to report mean rates over.
#[derive(Debug, Clone)]
struct Phases(Vec<(f64, f64)>);

fn parse_phases(s: &str) -> Result<Phases, String> {
    s.split(',')
        .map(|p| {
            let (a, b) = p
                .split_once('-')
                .ok_or_else(|| format!("`{p}`: a phase is FROM-TO in seconds, e.g. 10-60"))?;
            let a: f64 = a
                .trim()
                .parse()
                .map_err(|_| format!("`{a}` is not a number of seconds"))?;
            let b: f64 = b
                .trim()
                .parse()
                .map_err(|_| format!("`{b}` is not a number of seconds"))?;
            if a >= b {
                return Err(format!("`{p}`: FROM must be before TO"));
            }
            Ok((a, b))
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Phases)
}

/// Runs the subcommand.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let mut sc = match scenario::load(&args.scenario, args.seed) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("pgmcc: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(&sc.name));
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::new(1000);
        b.set_style(
            ProgressStyle::with_template(
                "{prefix} [{bar:40}] {percent:>3}% simulated, {elapsed} wall, eta {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b.set_prefix(sc.name.clone());
        b
    };
    let wall = WallClock::now();
    let summary = run::run(&mut sc, |f| bar.set_position((f * 1000.0) as u64));
    bar.finish_and_clear();
    let wall = wall.elapsed().as_secs_f64();
    run::write(&summary, &out).with_context(|| format!("writing results to {}", out.display()))?;
    report::write_report(&summary, &out)
        .with_context(|| format!("writing the report to {}", out.display()))?;
    outln!(
        "{}: {:.0} s simulated in {:.1} s ({:.0}x real time, {} events)",
        summary.scenario,
        summary.duration_s,
        wall,
        summary.duration_s / wall.max(1e-9),
        summary.events
    );
    for f in &summary.flows {
        let mut rx: Vec<String> = f
            .receivers
            .iter()
            .take(8)
            .map(|r| format!("{} {:.0}", r.node, r.mean_kbps))
            .collect();
        if f.receivers.len() > 8 {
            rx.push(format!(
                "... and {} more (summary.json)",
                f.receivers.len() - 8
            ));
        }
        outln!(
            "  {:<12} {:<11} {:>8.1} kbit/s mean  acker switches {:<3} receivers: {}",
            f.name,
            f.kind,
            f.mean_kbps,
            f.acker_switches.len(),
            rx.join(", ")
        );
    }
    if let Some(phases) = &args.phases {
        for f in &summary.flows {
            let means: Vec<String> = phases
                .0
                .iter()
                .map(|&(a, b)| {
                    format!(
                        "{a:.0}-{b:.0}s: {:.0}",
                        run::mean_between(&summary, &f.series_kbps, a, b)
                    )
                })
                .collect();
            outln!("  {:<12} kbit/s by phase  {}", f.name, means.join("  "));
        }
    }
    outln!("report: {}", out.join("report.html").display());
    Ok(ExitCode::SUCCESS)
}
