//! `pgmcc reproduce`: run every scenario that carries a `[reproduce]` table over several
//! seeds, compute the fairness metric f = TCP throughput / pgmcc throughput, and write the
//! comparison with the published values (`docs/reproduction.md`) and an HTML report. Then
//! the comparison matrix (`scenarios/compare/matrix.toml`, issue 10): the same topologies
//! under each congestion controller, with f, feedback per data packet and responsiveness.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant as WallClock;

use super::shared::{jobs, par_map, stats};
use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use netsim::compare::{self, Matrix, Metrics};
use netsim::run::Summary;
use netsim::scenario::{self, Reproduce};
use netsim::{report, run};
use pgmcc::cc::Controller;

/// Arguments of `pgmcc reproduce`.
#[derive(Debug, ClapArgs)]
pub(crate) struct Args {
    /// Directory of scenario files; those with a [reproduce] table are run.
    #[arg(long, value_name = "DIR", default_value = "scenarios")]
    scenarios: PathBuf,
    /// Seeds per experiment (1..=N).
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// Where plots and report.html go.
    #[arg(long, value_name = "DIR", default_value = "out/reproduce")]
    out: PathBuf,
    /// The Markdown comparison to write.
    #[arg(long, value_name = "FILE", default_value = "docs/reproduction.md")]
    doc: PathBuf,
    /// Parallel runs (default: available cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// The controller comparison matrix [default: <scenarios>/compare/matrix.toml, when it
    /// exists].
    #[arg(long, value_name = "FILE")]
    compare: Option<PathBuf>,
    /// Skip the controller comparison.
    #[arg(long, conflicts_with = "compare")]
    no_compare: bool,
}

/// One (topology, controller) of the comparison over all seeds.
struct CompareRow {
    topology: usize,
    controller: String,
    runs: Vec<Metrics>,
}

/// One experiment's results over all seeds.
struct Row {
    name: String,
    file: PathBuf,
    rep: Reproduce,
    f: Vec<f64>,
    pgm_kbps: Vec<f64>,
    tcp_kbps: Vec<f64>,
    switches: Vec<usize>,
    /// f per seed under our recommended `pgmcc` (the scenario's pgmcc flows switched to it).
    f_recommended: Vec<f64>,
    first: Summary,
}

/// One run of a row: as the file says (`recommended` false: the published `pgmcc-paper`
/// where the file asks for it) or with its pgmcc flows under our recommended `pgmcc`.
fn run_one(path: &Path, seed: u64, recommended: bool) -> Result<(Summary, Reproduce)> {
    let sc = if recommended {
        scenario::load_with_pgmcc(path, Some(seed), Controller::Pgmcc)
    } else {
        scenario::load(path, Some(seed))
    };
    let mut sc = sc.map_err(|e| anyhow::anyhow!("{e}"))?;
    let rep = sc.reproduce.clone().context("no [reproduce] table")?;
    Ok((run::run(&mut sc, |_| {}), rep))
}

/// Runs the subcommand.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let wall = WallClock::now();
    let chosen = experiments(&args.scenarios)?;
    let jobs = jobs(args.jobs);
    let tasks: Vec<(usize, u64, bool)> = (0..chosen.len())
        .flat_map(|i| (1..=args.seeds.max(1)).map(move |s| (i, s)))
        .flat_map(|(i, s)| [(i, s, false), (i, s, true)])
        .collect();
    eprintln!(
        "reproduce: {} experiments x {} seeds on {jobs} threads",
        chosen.len(),
        args.seeds
    );
    let results = par_map(&tasks, jobs, |&(i, seed, rec)| {
        (i, seed, rec, run_one(&chosen[i], seed, rec))
    });
    let mut rows: Vec<Row> = Vec::new();
    for (i, seed, rec, r) in results {
        let (summary, rep) = r.with_context(|| format!("{} seed {seed}", chosen[i].display()))?;
        let m = rep.measure(&summary);
        if rec {
            if let Some(row) = rows.last_mut() {
                row.f_recommended.push(m.f);
            }
            continue;
        }
        let sw = summary.flows[rep.pgm].acker_switches.len();
        if rows.last().is_none_or(|r| r.file != chosen[i]) {
            let name = summary.scenario.clone();
            rows.push(Row {
                name,
                file: chosen[i].clone(),
                rep,
                f: Vec::new(),
                pgm_kbps: Vec::new(),
                tcp_kbps: Vec::new(),
                switches: Vec::new(),
                f_recommended: Vec::new(),
                first: summary,
            });
        }
        if let Some(row) = rows.last_mut() {
            row.f.push(m.f);
            row.pgm_kbps.push(m.pgm_kbps);
            row.tcp_kbps.push(m.tcp_kbps);
            row.switches.push(sw);
        }
    }
    let matrix_path = match (&args.compare, args.no_compare) {
        (_, true) => None,
        (Some(p), false) => Some(p.clone()),
        (None, false) => {
            Some(args.scenarios.join("compare").join("matrix.toml")).filter(|p| p.is_file())
        }
    };
    let comparison = match &matrix_path {
        Some(p) => Some(run_compare(p, args.seeds.max(1), jobs)?),
        None => None,
    };
    let wall = wall.elapsed().as_secs_f64();
    for row in &rows {
        let dir = args.out.join(&row.name);
        run::write(&row.first, &dir).with_context(|| format!("writing {}", dir.display()))?;
        report::write_report(&row.first, &dir)
            .with_context(|| format!("writing {}", dir.display()))?;
    }
    let mut doc = markdown(&rows, args, wall);
    if let (Some((matrix, crows)), Some(p)) = (&comparison, &matrix_path) {
        doc.push_str(&compare_markdown(matrix, crows, p, args.seeds.max(1)));
    }
    if let Some(parent) = args.doc.parent() {
        std::fs::create_dir_all(parent)?;
    }
    // The fairness grid's sections belong to `make grid` (and its more-seeds section to
    // whoever measured it): keep them.
    let old = std::fs::read_to_string(&args.doc).unwrap_or_default();
    for m in [
        super::shared::GRID,
        super::shared::MORE_SEEDS,
        super::shared::SWEEP,
    ] {
        if let Some(section) = super::shared::section_of(&old, m) {
            doc = super::shared::splice(&doc, section, m);
        }
    }
    std::fs::write(&args.doc, &doc).with_context(|| format!("writing {}", args.doc.display()))?;
    let mut page = html(&rows, args);
    if let Some((matrix, crows)) = &comparison {
        page = page.replace("</body></html>", &compare_html(matrix, crows));
        page.push_str("</body></html>\n");
    }
    std::fs::write(args.out.join("report.html"), page)?;
    print_summary(&rows, comparison.as_ref());
    println!(
        "wrote {} and {} in {wall:.0} s",
        args.doc.display(),
        args.out.join("report.html").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The scenario files in `dir` that declare what they reproduce (a `[reproduce]` table), in
/// name order; a file that does not parse is an error.
fn experiments(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut chosen = Vec::new();
    for f in files {
        match scenario::load(&f, Some(1)) {
            Ok(sc) if sc.reproduce.is_some() => chosen.push(f),
            Ok(_) => {}
            Err(e) => bail!("{e}"),
        }
    }
    if chosen.is_empty() {
        bail!("no scenario in {} has a [reproduce] table", dir.display());
    }
    Ok(chosen)
}

/// One line per row and per comparison on the terminal.
fn print_summary(rows: &[Row], comparison: Option<&(Matrix, Vec<CompareRow>)>) {
    for row in rows {
        let (f, sd, ..) = stats(&row.f);
        let publ = row
            .rep
            .published_f
            .map_or("-".to_string(), |p| format!("{:.0}%", p * 100.0));
        let (fr, sdr, ..) = stats(&row.f_recommended);
        println!(
            "{:<34} pgmcc-paper f = {:>4.0}% +- {:>2.0} (published {publ}); pgmcc f = {:>4.0}% +- {:>2.0}",
            row.rep.experiment,
            f * 100.0,
            sd * 100.0,
            fr * 100.0,
            sdr * 100.0
        );
    }
    if let Some((matrix, crows)) = comparison {
        for r in crows {
            let f = mean(r.runs.iter().map(|m| m.f));
            let fb = mean(r.runs.iter().map(|m| m.feedback_per_data));
            println!(
                "{:<34} {:<14} f = {:>4.0}%  feedback/data = {fb:.3}  settle = {}",
                matrix.topologies[r.topology].label,
                r.controller,
                f * 100.0,
                settle_text(&r.runs)
            );
        }
    }
}

fn markdown(rows: &[Row], args: &Args, wall: f64) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "# Reproducing the papers\n\nGenerated by `make reproduce` (`pgmcc reproduce --seeds {}`): every scenario in \
         `{}` with a `[reproduce]` table, run with seeds 1..={} on the deterministic simulator. \
         Wall time of the run that wrote this file: {wall:.0} s on this 2-core machine.\n\n\
         f = TCP throughput / pgmcc throughput (sender side, payload bytes, measured from the \
         row's start-up cut to the end). Mean over seeds, with the standard deviation and the \
         range. Plots of seed 1: `out/reproduce/<scenario>/report.html`.\n\n\
         The scenarios in `scenarios/` set `jitter = \"auto\"`: every host delays each packet \
         by a random time up to one packet time at the slowest link (Floyd and Jacobson's \
         remedy for drop-tail phase effects), so the seeds sample the phase. Without it the \
         seeds of a loss-free scenario would repeat one trajectory (+- 0) and a change anywhere \
         would move its f by tens of points (docs/pgmcc.md, \"Heartbeat SPMs and the drop-tail \
         phase\").\n",
        args.seeds,
        args.scenarios.display(),
        args.seeds
    );
    m.push_str("| experiment | source | published | ours, as published (`pgmcc-paper`): f mean +- sd (min..max) | pgmcc kbit/s | TCP kbit/s | acker changes (incl. re-elections) | recommended `pgmcc`: f mean +- sd (min..max) | scenario |\n|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let (f, sd, lo, hi) = stats(&r.f);
        let (p, ..) = stats(&r.pgm_kbps);
        let (t, ..) = stats(&r.tcp_kbps);
        let sw = r.switches.iter().sum::<usize>() as f64 / r.switches.len().max(1) as f64;
        let publ = match (&r.rep.published_f, &r.rep.expectation) {
            (Some(p), _) => format!("f = {:.0}%", p * 100.0),
            (None, Some(e)) => e.clone(),
            (None, None) => "-".into(),
        };
        let (fr, sdr, lor, hir) = stats(&r.f_recommended);
        let _ = writeln!(
            m,
            "| {} | {} | {} | {:.0}% +- {:.0} ({:.0}..{:.0}) | {:.0} | {:.0} | {:.1} | {:.0}% +- {:.0} ({:.0}..{:.0}) | `{}` |",
            r.rep.experiment,
            r.rep.source,
            publ,
            f * 100.0,
            sd * 100.0,
            lo * 100.0,
            hi * 100.0,
            p,
            t,
            sw,
            fr * 100.0,
            sdr * 100.0,
            lor * 100.0,
            hir * 100.0,
            r.file.display()
        );
    }
    m.push_str("\n## Row by row\n\n");
    for r in rows {
        let _ = writeln!(
            m,
            "**{}.** {}\n",
            r.rep.experiment,
            r.rep
                .explanation
                .as_deref()
                .unwrap_or("Not analysed yet: the numbers above are measured, the explanation is still to be written.")
        );
    }
    m
}

fn html(rows: &[Row], args: &Args) -> String {
    let mut h = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>pgmcc: reproduction</title>\
         <style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:4px 8px}th{background:#f4f4f4}</style></head><body>\
         <h1>Reproducing the papers</h1><table><tr><th>experiment</th><th>published</th><th>ours (f, mean of seeds)</th></tr>",
    );
    for r in rows {
        let (f, sd, ..) = stats(&r.f);
        let publ = r
            .rep
            .published_f
            .map(|p| format!("f = {:.0}%", p * 100.0))
            .or_else(|| r.rep.expectation.clone())
            .unwrap_or_default();
        let _ = write!(
            h,
            "<tr><td><a href=\"{n}/report.html\">{e}</a></td><td>{publ}</td><td>{:.0}% &plusmn; {:.0}</td></tr>",
            f * 100.0,
            sd * 100.0,
            n = r.name,
            e = r.rep.experiment
        );
    }
    h.push_str("</table>");
    for r in rows {
        let svg = std::fs::read_to_string(args.out.join(&r.name).join("throughput.svg"))
            .unwrap_or_default();
        let _ = write!(
            h,
            "<h2>{}</h2><p>{}</p>{svg}",
            r.rep.experiment, r.rep.source
        );
    }
    h.push_str("</body></html>\n");
    h
}

/// Mean of the finite values (NaN when there are none).
fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = v.filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// "12 s" (mean over the seeds that settled), with "(k of n)" when some never did.
fn settle_text(runs: &[Metrics]) -> String {
    let settled: Vec<f64> = runs.iter().filter_map(|m| m.settle_s).collect();
    if runs.iter().all(|m| m.settle_s.is_none()) {
        return if runs.is_empty() {
            "-".into()
        } else {
            "never".into()
        };
    }
    let m = settled.iter().sum::<f64>() / settled.len() as f64;
    if settled.len() == runs.len() {
        format!("{m:.0} s")
    } else {
        format!("{m:.0} s ({} of {})", settled.len(), runs.len())
    }
}

fn run_compare(path: &Path, seeds: u64, jobs: usize) -> Result<(Matrix, Vec<CompareRow>)> {
    let matrix = compare::load_matrix(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    // Every (topology, controller) must build before anything runs.
    for t in &matrix.topologies {
        for c in &matrix.controllers {
            compare::build(t, c, 1).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
    }
    let mut tasks = Vec::new();
    for ti in 0..matrix.topologies.len() {
        for c in &matrix.controllers {
            for seed in 1..=seeds {
                tasks.push((ti, c.clone(), seed));
            }
        }
    }
    eprintln!(
        "reproduce: comparison, {} topologies x {} controllers x {seeds} seeds",
        matrix.topologies.len(),
        matrix.controllers.len()
    );
    let results = par_map(&tasks, jobs, |(ti, c, seed)| {
        let topo = &matrix.topologies[*ti];
        compare::build(topo, c, *seed)
            .map(|mut sc| compare::measure(&run::run(&mut sc, |_| {}), topo))
    });
    let mut rows: Vec<CompareRow> = Vec::new();
    for ((ti, c, seed), r) in tasks.iter().zip(results) {
        let m = r.map_err(|e| anyhow::anyhow!("{e} (seed {seed})"))?;
        if rows
            .last()
            .is_none_or(|r| r.topology != *ti || &r.controller != c)
        {
            rows.push(CompareRow {
                topology: *ti,
                controller: c.clone(),
                runs: Vec::new(),
            });
        }
        if let Some(row) = rows.last_mut() {
            row.runs.push(m);
        }
    }
    Ok((matrix, rows))
}

fn compare_markdown(matrix: &Matrix, rows: &[CompareRow], path: &Path, seeds: u64) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "\n## The controllers compared on the same topologies\n\n\
         Generated from `{}`: each topology's base scenario with every PGM flow it names under \
         each controller (`cc = ...`; pgmcc-only knobs of the base apply to the pgmcc rows \
         only; `pgmcc` is our recommended pgmcc, `pgmcc-paper` the published one), seeds \
         1..={seeds}, mean over seeds. The numbers are measured; what they mean for each \
         controller is discussed in its document (docs/tfmcc.md, docs/pseudofed.md, \
         docs/lowweight.md).\n\n\
         - **f** = TCP / controlled flow (per flow when several), over the topology's window.\n\
         - **feedback/data**: NAKs + ACKs sent by the receivers per ODATA sent, whole run.\n\
         - **settle**: seconds after the step change until the controlled flows' total rate, \
         smoothed over {:.0} s, first comes within +-{:.0}% of its mean over the second half of \
         the phase, to one sample interval (`never` when it does not; `k of n` when only k \
         seeds did). Where the step is 0 s this is the start-up: how long the controller takes \
         to reach its long-run rate.\n",
        path.display(),
        compare::SETTLE_SMOOTHING_S,
        compare::SETTLE_BAND * 100.0
    );
    m.push_str("| topology | controller | f | controlled kbit/s | TCP kbit/s | feedback/data | settle | step |\n|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        let t = &matrix.topologies[r.topology];
        let f = mean(r.runs.iter().map(|m| m.f));
        let step = t.step.map_or("-".to_string(), |(s, u)| {
            format!("{s:.0} s (phase to {u:.0} s)")
        });
        let _ = writeln!(
            m,
            "| {} | {} | {} | {:.0} | {} | {:.3} | {} | {step} |",
            t.label,
            r.controller,
            percent_or_dash(f),
            mean(r.runs.iter().map(|m| m.ctl_kbps)),
            {
                let x = mean(r.runs.iter().map(|m| m.tcp_kbps));
                if x.is_finite() {
                    format!("{x:.0}")
                } else {
                    "-".into()
                }
            },
            mean(r.runs.iter().map(|m| m.feedback_per_data)),
            settle_text(&r.runs)
        );
    }
    m
}

/// `f` as a whole percentage, `-` when it is not a number (nothing measured).
fn percent_or_dash(f: f64) -> String {
    if f.is_finite() {
        format!("{:.0}%", f * 100.0)
    } else {
        "-".into()
    }
}

fn compare_html(matrix: &Matrix, rows: &[CompareRow]) -> String {
    let mut h = String::from(
        "<h1>The controllers compared on the same topologies</h1><table><tr><th>topology</th>\
         <th>controller</th><th>f</th><th>kbit/s</th><th>feedback/data</th><th>settle</th></tr>",
    );
    for r in rows {
        let f = mean(r.runs.iter().map(|m| m.f));
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{:.3}</td><td>{}</td></tr>",
            matrix.topologies[r.topology].label,
            r.controller,
            percent_or_dash(f),
            mean(r.runs.iter().map(|m| m.ctl_kbps)),
            mean(r.runs.iter().map(|m| m.feedback_per_data)),
            settle_text(&r.runs)
        );
    }
    h.push_str("</table>");
    h
}
