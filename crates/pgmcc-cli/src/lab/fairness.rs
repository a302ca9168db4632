//! `pgmcc fairness`: the generated fairness yardstick (issue 51). `plan` draws scenarios
//! from generator seeds (`netsim::fairness::Spec`) and writes each twice (pgmcc in the
//! subject slot, and a TCP control in its place) with a job file of one command line per
//! run; `run` is one such line (one simulation, one small result file); `report` merges the
//! result files into a table, a histogram and the summary against the issue's targets, in
//! `docs/fairness.md` between two markers. The job file runs under GNU `parallel` here, on
//! many machines with `parallel --sshloginfile`, or as a Slurm job array (docs/fairness.md).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args as ClapArgs, Subcommand};
use netsim::fairness::{self, RunResult, Slot, Spec, BAND};
use netsim::{run, scenario};
use pgmcc::cc::Controller;
use serde::{Deserialize, Serialize};

use super::shared::{splice, stats, Markers};

/// The generated section of docs/fairness.md.
const SECTION: Markers = Markers {
    begin: "<!-- fairness:begin (written by `pgmcc fairness report`) -->",
    end: "<!-- fairness:end -->",
};

/// Arguments of `pgmcc fairness`.
#[derive(Debug, ClapArgs)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Draw scenarios from generator seeds and write them, both variants, with a job file.
    ///
    /// Writes DIR/plan.json (what was drawn), DIR/scenarios/gID-pgmcc.toml and
    /// gID-control.toml (ordinary scenario files: `pgmcc sim` runs them), and DIR/jobs.txt,
    /// one `pgmcc fairness run ...` command line per run (scenario x variant x seed). Run
    /// the job file with `parallel -j N < DIR/jobs.txt` (or on many machines, see
    /// docs/fairness.md), then `pgmcc fairness report DIR`.
    ///
    /// Generator seeds from 1000000 on are the report range, which docs/fairness.md reports
    /// on and which nobody tunes against; develop and trace with ids below (--first 1).
    Plan(PlanArgs),
    /// Run one job: one scenario file with one seed, its result written as JSON.
    Run(RunArgs),
    /// Merge DIR's result files into the share-ratio table and histogram.
    ///
    /// Prints the summary against the targets and (re)writes the generated section of the
    /// doc. Runs whose result file is missing are listed and left out; the exit status is 1
    /// when any is missing.
    Report(ReportArgs),
}

/// The generated section of docs/fairness.md for emulated runs.
const EMU_SECTION: Markers = Markers {
    begin: "<!-- fairness-emu:begin (written by `pgmcc fairness report` on an emulated plan) -->",
    end: "<!-- fairness-emu:end -->",
};

/// `--max-rate` when emulating: the emulator's comfortable range (docs/emulation.md).
const EMU_MAX_RATE_MBIT: f64 = 20.0;
/// `--max-receivers` when emulating: each receiver is a namespace and a `pgmcc recv`.
const EMU_MAX_RECEIVERS: usize = 10;

/// `pgmcc fairness plan`.
#[derive(Debug, ClapArgs)]
struct PlanArgs {
    /// First generator seed (scenario id). The report range starts at 1000000; below it is
    /// the development range.
    #[arg(long, default_value_t = fairness::REPORT_FIRST)]
    first: u64,
    /// Scenarios to keep (ids that --max-rate or --max-receivers reject are skipped and do
    /// not count).
    #[arg(long, default_value_t = 200)]
    count: usize,
    /// Seeds per scenario and variant (1..=N).
    #[arg(long, default_value_t = 3)]
    seeds: u64,
    /// Keep only scenarios whose bottleneck is at most this many Mbit/s [default with
    /// --emulate: 20].
    #[arg(long, value_name = "MBIT")]
    max_rate: Option<f64>,
    /// Keep only scenarios with at most this many multicast receivers [default with
    /// --emulate: 10].
    #[arg(long, value_name = "N")]
    max_receivers: Option<usize>,
    /// Run the jobs in `pgmcc emu` instead of the simulator: real `pgmcc send`/`recv` and
    /// Linux TCP under congestion control CC (reno, cubic, bbr; `--emulate` alone: reno)
    /// in network namespaces, on the wall clock. Needs root; run the job file with
    /// `parallel -j 1` (each run takes its scenario's duration).
    #[arg(long, value_name = "CC", num_args = 0..=1, default_missing_value = "reno")]
    emulate: Option<String>,
    /// Millions of bottleneck packets a run may cost; runs are never shorter than 50 RTTs
    /// of warm-up and 200 RTTs of measurement.
    #[arg(long, value_name = "MPACKETS", default_value_t = fairness::DEFAULT_BUDGET / 1e6)]
    budget: f64,
    /// The controller in the subject slot.
    #[arg(long, default_value = "pgmcc")]
    cc: Controller,
    /// How every TCP flow (control, competitors, reverse) times retransmissions: `linux`
    /// (an RTT sample from every ACK, timestamps, and a 200 ms floor: the TCP pgmcc shares
    /// real links with, and the one `--emulate` runs) or `rfc6298` (the simulator's TCP
    /// default: a 1 s floor, one segment timed per round trip, none across a
    /// retransmission). The scenarios are the same otherwise (docs/fairness.md).
    #[arg(long, value_enum, default_value = "linux")]
    tcp_model: TcpModelArg,
    /// The program the job lines call [default: this executable's path].
    #[arg(long, value_name = "PATH")]
    bin: Option<PathBuf>,
    /// Output directory.
    #[arg(long, value_name = "DIR", default_value = "out/fairness")]
    out: PathBuf,
}

/// `--tcp-model`: [`fairness::TcpModel`] by name.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum TcpModelArg {
    /// RFC 6298 as the simulated TCP implements it.
    Rfc6298,
    /// As Linux: timestamps and a 200 ms floor (the default).
    Linux,
}

impl From<TcpModelArg> for fairness::TcpModel {
    fn from(m: TcpModelArg) -> fairness::TcpModel {
        match m {
            TcpModelArg::Rfc6298 => fairness::TcpModel::Rfc6298,
            TcpModelArg::Linux => fairness::TcpModel::Linux,
        }
    }
}

/// `pgmcc fairness run`.
#[derive(Debug, ClapArgs)]
struct RunArgs {
    /// Scenario file written by `plan`.
    #[arg(value_name = "SCENARIO")]
    scenario: PathBuf,
    /// Run seed.
    #[arg(long)]
    seed: u64,
    /// Scenario id (generator seed).
    #[arg(long)]
    id: u64,
    /// What the subject slot holds: pgmcc or control.
    #[arg(long, value_parser = parse_slot)]
    slot: Slot,
    /// Measurement window, s: FROM-TO.
    #[arg(long, value_name = "FROM-TO", value_parser = parse_window)]
    window: (f64, f64),
    /// Result file (JSON), written whole or not at all.
    #[arg(long, value_name = "FILE")]
    result: PathBuf,
    /// Emulate instead of simulating (`pgmcc emu`), with Linux TCP under congestion control
    /// CC; its output goes beside the result file (RESULT without `.json`, `.emu/`).
    #[arg(long, value_name = "CC")]
    emulate: Option<String>,
}

/// `pgmcc fairness report`.
#[derive(Debug, ClapArgs)]
struct ReportArgs {
    /// The directory `plan` wrote.
    #[arg(value_name = "DIR", default_value = "out/fairness")]
    dir: PathBuf,
    /// The Markdown file whose generated section is (re)written.
    #[arg(long, value_name = "FILE", default_value = "docs/fairness.md")]
    doc: PathBuf,
    /// Only print the summary; leave the doc alone.
    #[arg(long)]
    no_doc: bool,
    /// A simulated plan of the same scenarios: adds how far the emulated share ratios are
    /// from the simulated ones (for an emulated DIR).
    #[arg(long, value_name = "SIMDIR")]
    sim: Option<PathBuf>,
}

fn parse_slot(s: &str) -> Result<Slot, String> {
    match s {
        "pgmcc" => Ok(Slot::Pgmcc),
        "control" => Ok(Slot::Control),
        other => Err(format!("`{other}`: use pgmcc or control")),
    }
}

fn parse_window(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s
        .split_once('-')
        .ok_or_else(|| format!("`{s}`: a window is FROM-TO in seconds, e.g. 60-360"))?;
    let num = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("`{x}` is not a number of seconds"))
    };
    let (a, b) = (num(a)?, num(b)?);
    if a >= b {
        return Err(format!("`{s}`: FROM must be before TO"));
    }
    Ok((a, b))
}

/// What `plan` drew: read back by `report`.
#[derive(Debug, Serialize, Deserialize)]
struct Plan {
    /// The command line that made it.
    command: String,
    /// Run seeds per scenario and variant.
    seeds: u64,
    /// The subject's controller.
    cc: String,
    /// Emulated with Linux TCP under this congestion control (`None`: simulated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    emulate: Option<String>,
    /// The scenarios.
    specs: Vec<Spec>,
}

/// Result file of one run.
fn result_path(dir: &Path, id: u64, slot: Slot, seed: u64) -> PathBuf {
    dir.join("results")
        .join(format!("g{id}-{}-s{seed}.json", slot.name()))
}

pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    match &args.command {
        Command::Plan(a) => plan(a),
        Command::Run(a) => run_one(a),
        Command::Report(a) => report(a),
    }
}

/// The command line as typed, for headers.
fn command_line() -> String {
    let mut v: Vec<String> = std::env::args().collect();
    if let Some(first) = v.first_mut() {
        *first = "pgmcc".into();
    }
    v.join(" ")
}

fn plan(a: &PlanArgs) -> Result<ExitCode> {
    if a.seeds == 0 || a.count == 0 {
        bail!("--seeds and --count must be at least 1");
    }
    if !(a.budget.is_finite() && a.budget > 0.0) {
        bail!(
            "--budget: `{}` is not a number of millions of packets",
            a.budget
        );
    }
    if let Some(cc) = &a.emulate {
        if !["reno", "cubic", "bbr"].contains(&cc.as_str()) {
            bail!("--emulate {cc}: this kernel offers reno, cubic and bbr");
        }
    }
    let emulating = a.emulate.is_some();
    if emulating && matches!(a.tcp_model, TcpModelArg::Rfc6298) {
        bail!(
            "--emulate runs Linux's TCP, which times retransmissions as --tcp-model linux \
             describes, not as rfc6298 does"
        );
    }
    let max_rate = a.max_rate.or(emulating.then_some(EMU_MAX_RATE_MBIT));
    let max_receivers = a.max_receivers.or(emulating.then_some(EMU_MAX_RECEIVERS));
    let bin = match &a.bin {
        Some(b) => b.clone(),
        None => std::env::current_exe().context("locating this executable for --bin")?,
    };
    let mut specs = Vec::new();
    let mut id = a.first;
    // Rejections are bounded: a filter nothing passes is an error, not a hang.
    let limit = a.first.saturating_add(1000 * a.count as u64 + 10_000);
    while specs.len() < a.count {
        if id >= limit {
            bail!(
                "--max-rate/--max-receivers: only {} of ids {}..{} pass",
                specs.len(),
                a.first,
                limit
            );
        }
        let spec = Spec::generate(id, a.budget * 1e6);
        id += 1;
        if max_rate.is_some_and(|m| spec.rate_bps as f64 > m * 1e6)
            || max_receivers.is_some_and(|m| spec.receivers() > m)
        {
            continue;
        }
        specs.push(spec);
    }
    let scen = a.out.join("scenarios");
    let results = a.out.join("results");
    for d in [&scen, &results] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let mut jobs = String::new();
    let mut cost = 0.0;
    for spec in &specs {
        for slot in [Slot::Pgmcc, Slot::Control] {
            let file = scen.join(format!("{}-{}.toml", spec.stem(), slot.name()));
            let text = spec.scenario_for(slot, a.cc, a.tcp_model.into());
            // Never hand out a file the simulator would refuse.
            scenario::parse(&file.display().to_string(), &text, "g", Some(1))
                .map_err(|e| anyhow::anyhow!("generated scenario {}: {e}", spec.id))?;
            std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
            let (from, to) = spec.window();
            let emu = a
                .emulate
                .as_ref()
                .map_or(String::new(), |cc| format!(" --emulate {cc}"));
            for seed in 1..=a.seeds {
                let _ = writeln!(
                    jobs,
                    "{} fairness run {} --seed {seed} --id {} --slot {} --window {from}-{to} --result {}{emu}",
                    bin.display(),
                    file.display(),
                    spec.id,
                    slot.name(),
                    result_path(&a.out, spec.id, slot, seed).display()
                );
                cost += spec.cost();
            }
        }
    }
    let jobs_file = a.out.join("jobs.txt");
    std::fs::write(&jobs_file, &jobs)
        .with_context(|| format!("writing {}", jobs_file.display()))?;
    let p = Plan {
        command: command_line(),
        seeds: a.seeds,
        cc: a.cc.to_string(),
        emulate: a.emulate.clone(),
        specs,
    };
    let plan_file = a.out.join("plan.json");
    std::fs::write(&plan_file, serde_json::to_string_pretty(&p)?)
        .with_context(|| format!("writing {}", plan_file.display()))?;
    let (work, j) = if emulating {
        let secs: f64 = p.specs.iter().map(Spec::duration_s).sum::<f64>() * 2.0 * a.seeds as f64;
        (
            format!("about {:.1} hours of emulation, as root", secs / 3600.0),
            // Time for an interrupted emulation to remove its namespaces.
            "1 --termseq TERM,20000,KILL,25",
        )
    } else {
        (
            format!(
                "about {:.0} million packets and receptions to simulate",
                cost / 1e6
            ),
            "N",
        )
    };
    println!(
        "{} scenarios (ids {}..{}), {} runs in {} ({work}); next: parallel -j {j} < {} && \
         pgmcc fairness report {}",
        p.specs.len(),
        a.first,
        id - 1,
        jobs.lines().count(),
        jobs_file.display(),
        jobs_file.display(),
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn run_one(a: &RunArgs) -> Result<ExitCode> {
    let mut sc = match scenario::load(&a.scenario, Some(a.seed)) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("pgmcc: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    if a.window.1 > sc.duration.as_secs_f64() + 1e-9 {
        bail!(
            "--window {}-{}: the scenario runs only {} s",
            a.window.0,
            a.window.1,
            sc.duration.as_secs_f64()
        );
    }
    let summary = match &a.emulate {
        None => run::run(&mut sc, |_| {}),
        Some(cc) => {
            // Namespaces named after the job, so that jobs on one machine never collide.
            let prefix = format!("pgf{}{}{}", a.id, &a.slot.name()[..1], a.seed);
            let emu = super::emu::Args::flows_once(
                a.scenario.clone(),
                a.seed,
                Some(cc.clone()),
                a.result.with_extension("emu"),
                prefix,
            );
            let s = super::emu::emulate(&emu)?.context("the emulation measured no flows")?;
            // Stopped early (a signal): the window was not all measured, so no result.
            if s.duration_s + 0.5 < a.window.1 {
                bail!(
                    "the emulation stopped at {:.0} s, before the end of --window ({} s): no result written",
                    s.duration_s,
                    a.window.1
                );
            }
            s
        }
    };
    let r = fairness::measure(a.id, a.slot, a.seed, a.window, &summary);
    if let Some(dir) = a.result.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // Written whole or not at all: a run stopped half-way leaves no result to merge.
    let tmp = a.result.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string(&r)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &a.result).with_context(|| format!("writing {}", a.result.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// One scenario's merged results.
struct Row<'a> {
    spec: &'a Spec,
    /// pgmcc's goodput over the control's, summed over the seeds both have.
    share: f64,
    /// The least and largest per-seed share ratio.
    seed_range: (f64, f64),
    /// pgmcc / mean competitor in the pgmcc runs; control / mean competitor in the control
    /// runs.
    vs_tcp: (f64, f64),
    /// Drops per delivered packet: pgmcc, its competitors; control, its competitors. `None`
    /// when a run did not count them.
    drops: Option<[f64; 4]>,
    unrecoverable: u64,
}

/// How many share ratios lie in [`BAND`].
fn in_band(v: &[f64]) -> usize {
    v.iter().filter(|s| (BAND.0..=BAND.1).contains(*s)).count()
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

fn read_result(path: &Path) -> Result<Option<RunResult>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(
            serde_json::from_str(&t).with_context(|| format!("reading {}", path.display()))?,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn row<'a>(spec: &'a Spec, runs: &[(RunResult, RunResult)]) -> Row<'a> {
    let secs = spec.measure_s;
    let comp_mean = |r: &RunResult| mean(&r.competitors.iter().map(|c| c.kbps).collect::<Vec<_>>());
    let comp_drops = |r: &RunResult| {
        mean(
            &r.competitors
                .iter()
                .map(|c| c.drop_rate(secs, netsim::grid::TCP_PAYLOAD))
                .collect::<Vec<_>>(),
        )
    };
    let sum = |f: &dyn Fn(&(RunResult, RunResult)) -> f64| runs.iter().map(f).sum::<f64>();
    let mean_of =
        |f: &dyn Fn(&(RunResult, RunResult)) -> f64| mean(&runs.iter().map(f).collect::<Vec<_>>());
    let (p, c) = (sum(&|r| r.0.subject.kbps), sum(&|r| r.1.subject.kbps));
    let per_seed: Vec<f64> = runs
        .iter()
        .map(|(p, c)| p.subject.kbps / c.subject.kbps.max(1e-9))
        .collect();
    let (_, _, lo, hi) = stats(&per_seed);
    Row {
        spec,
        share: if c > 0.0 { p / c } else { f64::INFINITY },
        seed_range: (lo, hi),
        vs_tcp: (
            p / sum(&|r| comp_mean(&r.0)).max(1e-9),
            c / sum(&|r| comp_mean(&r.1)).max(1e-9),
        ),
        drops: runs
            .iter()
            .all(|r| r.0.drops_counted && r.1.drops_counted)
            .then(|| {
                [
                    mean_of(&|r| r.0.subject.drop_rate(secs, netsim::grid::PGM_PAYLOAD)),
                    mean_of(&|r| comp_drops(&r.0)),
                    mean_of(&|r| r.1.subject.drop_rate(secs, netsim::grid::TCP_PAYLOAD)),
                    mean_of(&|r| comp_drops(&r.1)),
                ]
            }),
        unrecoverable: runs.iter().map(|r| r.0.unrecoverable).sum(),
    }
}

/// Reads the plan `pgmcc fairness plan` wrote into `dir`.
fn read_plan(dir: &Path) -> Result<Plan> {
    let plan_file = dir.join("plan.json");
    serde_json::from_str(&std::fs::read_to_string(&plan_file).with_context(|| {
        format!(
            "reading {} (run `pgmcc fairness plan` first)",
            plan_file.display()
        )
    })?)
    .with_context(|| format!("reading {}", plan_file.display()))
}

/// The rows of the scenarios in `plan` (written into `dir`) that have results, and the
/// result files still missing.
fn rows_of<'a>(dir: &Path, plan: &'a Plan) -> Result<(Vec<Row<'a>>, Vec<PathBuf>)> {
    let mut missing = Vec::new();
    let mut rows = Vec::new();
    for spec in &plan.specs {
        let mut runs = Vec::new();
        for seed in 1..=plan.seeds {
            let pp = result_path(dir, spec.id, Slot::Pgmcc, seed);
            let cp = result_path(dir, spec.id, Slot::Control, seed);
            match (read_result(&pp)?, read_result(&cp)?) {
                (Some(mut p), Some(mut c)) => {
                    // The simulator has always counted drops; only emulated results may not.
                    if plan.emulate.is_none() {
                        p.drops_counted = true;
                        c.drops_counted = true;
                    }
                    runs.push((p, c));
                }
                (p, c) => {
                    if p.is_none() {
                        missing.push(pp);
                    }
                    if c.is_none() {
                        missing.push(cp);
                    }
                }
            }
        }
        if !runs.is_empty() {
            rows.push(row(spec, &runs));
        }
    }
    Ok((rows, missing))
}

fn report(a: &ReportArgs) -> Result<ExitCode> {
    let plan = read_plan(&a.dir)?;
    let (rows, missing) = rows_of(&a.dir, &plan)?;
    let sim_plan = a.sim.as_deref().map(read_plan).transpose()?;
    if let (Some(_), None) = (&sim_plan, &plan.emulate) {
        bail!(
            "--sim: {} is a simulated plan; --sim compares an emulated plan with a simulated one",
            a.dir.display()
        );
    }
    let sim_rows = match (&a.sim, &sim_plan) {
        (Some(dir), Some(p)) => Some(rows_of(dir, p)?.0),
        _ => None,
    };
    let mut text = render(&plan, &rows, missing.len());
    let mut summary = summary_lines(&rows, plan.emulate.is_some());
    if let Some(sim) = &sim_rows {
        let (lines, table) = agreement(&rows, sim);
        summary.push_str(&lines);
        let end = text.rfind(EMU_SECTION.end).unwrap_or(text.len());
        text.insert_str(end, &format!("\n{lines}\n{table}"));
    }
    print!("{summary}");
    for m in &missing {
        eprintln!("pgmcc: missing result {}", m.display());
    }
    if !a.no_doc {
        let markers = if plan.emulate.is_some() {
            EMU_SECTION
        } else {
            SECTION
        };
        write_section(&a.doc, markers, &text)?;
        println!("wrote {}", a.doc.display());
    }
    std::fs::write(a.dir.join("fairness.csv"), csv(&rows))
        .with_context(|| format!("writing {}", a.dir.join("fairness.csv").display()))?;
    Ok(if missing.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("pgmcc: {} runs have no result yet", missing.len());
        ExitCode::from(1)
    })
}

/// How far apart the emulated share ratios (`emu`) and the simulated ones (`sim`) of the
/// same scenarios are: summary lines and a table.
fn agreement(emu: &[Row], sim: &[Row]) -> (String, String) {
    let mut table = String::from(
        "Simulated and emulated share ratios of the same scenarios (the simulated plan's \
         seeds pooled as above), emulated over simulated, and each control over its mean \
         competing TCP flow:\n\n\
         | id | scenario | simulated | emulated | emulated / simulated | control/TCP sim, emu |\n\
         |---|---|---|---|---|---|\n",
    );
    let mut ratios = Vec::new();
    for e in emu {
        let Some(s) = sim.iter().find(|s| s.spec.id == e.spec.id) else {
            continue;
        };
        let q = e.share / s.share;
        ratios.push(q);
        let flag = if (q - 1.0).abs() <= AGREE { "" } else { " *" };
        let _ = writeln!(
            table,
            "| {} | {} | {:.2} | {:.2} | {q:.2}{flag} | {:.2}, {:.2} |",
            e.spec.id,
            e.spec.label(),
            s.share,
            e.share,
            s.vs_tcp.1,
            e.vs_tcp.1
        );
    }
    let within = ratios.iter().filter(|q| (*q - 1.0).abs() <= AGREE).count();
    let lines = format!(
        "- simulated and emulated share ratios within {:.0}% of each other: {within} of {} \
         scenarios (target all); emulated / simulated median {:.2}\n",
        AGREE * 100.0,
        ratios.len(),
        median(&ratios)
    );
    (lines, table)
}

/// How far an emulated share ratio may be from the simulated one (issue 51: 15%).
const AGREE: f64 = 0.15;

/// The summary against issue 51's targets.
fn summary_lines(rows: &[Row], emulated: bool) -> String {
    let shares: Vec<f64> = rows.iter().map(|r| r.share).collect();
    let n = shares.len().max(1) as f64;
    let inside = in_band(&shares);
    let wild = shares.iter().filter(|s| **s < 0.5 || **s > 2.0).count();
    let lost: u64 = rows.iter().map(|r| r.unrecoverable).sum();
    let lost_in = rows.iter().filter(|r| r.unrecoverable > 0).count();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "- scenarios: {}; share ratio in [{}, {}]: {} ({:.0}%; target at least 90%)",
        shares.len(),
        BAND.0,
        BAND.1,
        inside,
        100.0 * inside as f64 / n
    );
    let (_, _, lo, hi) = stats(&shares);
    let _ = writeln!(
        s,
        "- median {:.2} (target 0.9-1.1); least {:.2}, largest {:.2}; below 0.5 or above 2: {} (target none)",
        median(&shares),
        lo,
        hi,
        wild
    );
    if emulated {
        s.push_str("- sequence numbers given up: not measured in emulation\n");
    } else {
        let _ = writeln!(
            s,
            "- sequence numbers given up by pgmcc receivers: {lost} in {lost_in} scenarios (target none)"
        );
    }
    s
}

fn histogram(rows: &[Row]) -> String {
    // Buckets of 0.1 from 0 to 3, and beyond.
    let mut counts = [0usize; 31];
    for r in rows {
        let k = ((r.share * 10.0).floor().max(0.0) as usize).min(30);
        counts[k] += 1;
    }
    let first = counts.iter().position(|&c| c > 0).unwrap_or(0);
    let last = counts.iter().rposition(|&c| c > 0).unwrap_or(0);
    let mut s = String::from("```text\nshare ratio   scenarios\n");
    for (k, &c) in counts.iter().enumerate().take(last + 1).skip(first) {
        let label = if k == 30 {
            "3.0 and more".to_string()
        } else {
            format!("{:.1}-{:.1}", k as f64 / 10.0, (k + 1) as f64 / 10.0)
        };
        let mark = if (8..=12).contains(&k) { '#' } else { '=' };
        let _ = writeln!(s, "{label:<13} {c:>4} {}", mark.to_string().repeat(c));
    }
    s.push_str("```\n(`#`: inside the band [0.8, 1.25] up to the bucket's rounding)\n");
    s
}

/// Share-ratio statistics over the rows `keep` selects, for the breakdown table.
fn breakdown_line(label: &str, rows: &[Row], keep: impl Fn(&Spec) -> bool) -> Option<String> {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| keep(r.spec))
        .map(|r| r.share)
        .collect();
    if v.is_empty() {
        return None;
    }
    let inside = in_band(&v);
    let ctl: Vec<f64> = rows
        .iter()
        .filter(|r| keep(r.spec))
        .map(|r| r.vs_tcp.1)
        .collect();
    let (_, _, lo, hi) = stats(&v);
    Some(format!(
        "| {label} | {} | {} | {:.2} | {lo:.2}-{hi:.2} | {:.2} |",
        v.len(),
        inside,
        median(&v),
        median(&ctl),
    ))
}

fn render(plan: &Plan, rows: &[Row], missing: usize) -> String {
    let mut s = String::new();
    let markers = if plan.emulate.is_some() {
        &EMU_SECTION
    } else {
        &SECTION
    };
    let _ = writeln!(s, "{}", markers.begin);
    let _ = writeln!(
        s,
        "Generated by `pgmcc fairness report` from the runs of `{}` ({} seeds each, subject \
         `{}`{}){}.\n",
        plan.command,
        plan.seeds,
        plan.cc,
        match &plan.emulate {
            Some(cc) =>
                format!("; emulated: real `pgmcc send`/`recv` and Linux TCP ({cc}) in `pgmcc emu`"),
            None => String::new(),
        },
        if missing > 0 {
            format!("; **{missing} runs had no result and are left out**")
        } else {
            String::new()
        }
    );
    s.push_str(&summary_lines(rows, plan.emulate.is_some()));
    s.push('\n');
    s.push_str(&histogram(rows));
    s.push_str(
        "\nBy family: scenarios, in band, median share ratio, range, and the control's median \
         rate over the mean competing TCP flow's (how the TCP in pgmcc's place fared against \
         the others: 1 when the simulated TCPs share evenly; below 1 where they have longer \
         RTTs than the subject's path, above where the control's path is the shortest).\n\n\
         | family | n | in band | median | range | control / TCP |\n|---|---|---|---|---|---|\n",
    );
    type Keep = Box<dyn Fn(&Spec) -> bool>;
    let fams: Vec<(&str, Keep)> = vec![
        ("all", Box::new(|_| true)),
        ("1 TCP flow", Box::new(|s| s.competitors.len() == 1)),
        (
            "2-3 TCP flows",
            Box::new(|s| (2..=3).contains(&s.competitors.len())),
        ),
        (
            "4-7 TCP flows",
            Box::new(|s| (4..=7).contains(&s.competitors.len())),
        ),
        ("8-16 TCP flows", Box::new(|s| s.competitors.len() >= 8)),
        (
            "fair window < 2 packets",
            Box::new(|s| s.fair_window() < 2.0),
        ),
        (
            "fair window 2-8",
            Box::new(|s| (2.0..8.0).contains(&s.fair_window())),
        ),
        (
            "fair window 8-64",
            Box::new(|s| (8.0..64.0).contains(&s.fair_window())),
        ),
        ("fair window >= 64", Box::new(|s| s.fair_window() >= 64.0)),
        ("several receivers", Box::new(|s| !s.others.is_empty())),
        ("random loss", Box::new(|s| s.loss.mean() > 0.0)),
        ("no random loss", Box::new(|s| s.loss.mean() == 0.0)),
        ("reverse TCP", Box::new(|s| s.reverse > 0)),
        (
            "arriving/leaving",
            Box::new(|s| {
                s.competitors
                    .iter()
                    .any(|c| c.start_frac > 0.0 || c.stop_frac.is_some())
            }),
        ),
        ("jitter on", Box::new(|s| s.jitter)),
        ("jitter off", Box::new(|s| !s.jitter)),
        ("queue < 1 BDP", Box::new(|s| s.queue_bdp < 1.0)),
        ("queue >= 1 BDP", Box::new(|s| s.queue_bdp >= 1.0)),
        ("fast access", Box::new(|s| s.access > 1.0)),
        ("slow access", Box::new(|s| s.access < 1.0)),
        ("TCP SACK", Box::new(|s| s.tcp == fairness::Tcp::Sack)),
        ("TCP NewReno", Box::new(|s| s.tcp == fairness::Tcp::NewReno)),
    ];
    for (label, keep) in &fams {
        if let Some(l) = breakdown_line(label, rows, keep) {
            let _ = writeln!(s, "{l}");
        }
    }
    s.push_str(
        "\nEvery scenario: share ratio = pgmcc's goodput at the slowest receiver over the \
         control's (sums over the seeds), its per-seed range, pgmcc and the control each over \
         the mean competing TCP flow in their own runs, drops per delivered packet (queue \
         drops of the flow's packets) of pgmcc, its competitors, the control and its \
         competitors, and sequence numbers given up. Rerun a row: `pgmcc fairness plan \
         --first ID --count 1 --out DIR` writes its two files; `pgmcc sim \
         DIR/scenarios/gID-pgmcc.toml --seed N --phases FROM-TO` runs one.\n\n\
         | id | scenario | window s | share | per seed | pgmcc/TCP | control/TCP | drops pgmcc, TCP | drops control, TCP | lost |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let flag = if (BAND.0..=BAND.1).contains(&r.share) {
            ""
        } else {
            " *"
        };
        let (lo, hi) = r.seed_range;
        let (from, to) = r.spec.window();
        let drops = r.drops.map_or_else(
            || "-, - | -, -".to_string(),
            |d| {
                format!(
                    "{:.2}%, {:.2}% | {:.2}%, {:.2}%",
                    100.0 * d[0],
                    100.0 * d[1],
                    100.0 * d[2],
                    100.0 * d[3]
                )
            },
        );
        // Real receivers do not report what they gave up: that column is the simulator's.
        let lost = if plan.emulate.is_some() {
            "-".to_string()
        } else {
            r.unrecoverable.to_string()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {from}-{to} | {:.2}{flag} | {lo:.2}-{hi:.2} | {:.2} | {:.2} | {drops} | {lost} |",
            r.spec.id,
            r.spec.label(),
            r.share,
            r.vs_tcp.0,
            r.vs_tcp.1,
        );
    }
    let _ = writeln!(s, "{}", markers.end);
    s
}

fn csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "id,rate_mbit,rtt_ms,queue_bdp,queue_packets,fair_window,queue_bytes,access,tcp,competitors,reverse,loss,receivers,jitter,warmup_s,measure_s,share,share_min,share_max,pgmcc_vs_tcp,control_vs_tcp,drops_pgmcc,drops_pgmcc_tcp,drops_control,drops_control_tcp,unrecoverable\n",
    );
    for r in rows {
        let sp = r.spec;
        // Empty fields where the runs did not count drops.
        let drops = r.drops.map_or_else(
            || ",,,".to_string(),
            |d| format!("{:.5},{:.5},{:.5},{:.5}", d[0], d[1], d[2], d[3]),
        );
        let _ = writeln!(
            s,
            "{},{},{},{},{},{:.2},{},{},{},{},{},{},{},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{},{}",
            sp.id,
            sp.rate_bps as f64 / 1e6,
            sp.rtt_ms,
            sp.queue_bdp,
            sp.queue_packets(),
            sp.fair_window(),
            sp.queue_bytes,
            sp.access,
            sp.tcp.name(),
            sp.competitors.len(),
            sp.reverse,
            sp.loss.mean(),
            sp.receivers(),
            sp.jitter,
            sp.warmup_s,
            sp.measure_s,
            r.share,
            r.seed_range.0,
            r.seed_range.1,
            r.vs_tcp.0,
            r.vs_tcp.1,
            drops,
            r.unrecoverable
        );
    }
    s
}

/// Replaces the section of `doc` between `markers` (or appends it when they are absent).
fn write_section(doc: &Path, markers: Markers, section: &str) -> Result<()> {
    let old = std::fs::read_to_string(doc).unwrap_or_default();
    let new = splice(&old, section.trim_end(), markers);
    std::fs::write(doc, new).with_context(|| format!("writing {}", doc.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_and_slots_parse_or_say_why() {
        assert_eq!(parse_window("60-360"), Ok((60.0, 360.0)));
        assert!(parse_window("360-60").unwrap_err().contains("before"));
        assert!(parse_window("x-60").unwrap_err().contains("`x`"));
        assert_eq!(parse_slot("control"), Ok(Slot::Control));
        assert!(parse_slot("tcp").is_err());
    }

    #[test]
    fn emulated_shares_are_compared_with_the_simulated_ones_of_the_same_ids() {
        let specs = [
            Spec::generate(1, fairness::DEFAULT_BUDGET),
            Spec::generate(2, fairness::DEFAULT_BUDGET),
        ];
        let row = |spec, share| Row {
            spec,
            share,
            seed_range: (share, share),
            vs_tcp: (1.0, 1.0),
            drops: Some([0.0; 4]),
            unrecoverable: 0,
        };
        let sim = [row(&specs[0], 1.0), row(&specs[1], 0.8)];
        let emu = [row(&specs[1], 1.2), row(&specs[0], 1.1)];
        let (lines, table) = agreement(&emu, &sim);
        assert!(
            lines.contains("within 15% of each other: 1 of 2"),
            "{lines}"
        );
        assert!(table.contains("| 0.80 | 1.20 | 1.50 * |"), "{table}");
        assert!(table.contains("| 1.00 | 1.10 | 1.10 |"), "{table}");
    }

    /// An emulated result file that does not say it counted drops gives its row no drop
    /// figures, rather than zeros that read as measured.
    #[test]
    fn drops_not_counted_are_not_reported_as_zero() {
        let spec = Spec::generate(1, fairness::DEFAULT_BUDGET);
        let run = |slot: &str, counted: bool| -> RunResult {
            let mut v = serde_json::json!({
                "id": 1, "slot": slot, "seed": 1, "window": [20.0, 320.0],
                "subject": {"kbps": 1000.0, "drops": 0},
                "competitors": [{"kbps": 1000.0, "drops": 0}],
                "unrecoverable": 0
            });
            if counted {
                v["drops_counted"] = serde_json::Value::Bool(true);
            }
            serde_json::from_value(v).unwrap()
        };
        let old = row(&spec, &[(run("pgmcc", false), run("control", false))]);
        assert!(old.drops.is_none());
        assert!(csv(&[old]).lines().nth(1).unwrap().ends_with(",,,,0"));
        let new = row(&spec, &[(run("pgmcc", true), run("control", true))]);
        assert_eq!(new.drops, Some([0.0; 4]));
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
        assert_eq!(median(&[2.0]), 2.0);
        assert!(median(&[]).is_nan());
    }
}
