//! `pgmcc reproduce`: run every scenario that carries a `[reproduce]` table over several
//! seeds, compute the fairness metric f = TCP throughput / pgmcc throughput, and write the
//! comparison with the published values (`docs/reproduction.md`) and an HTML report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant as WallClock;

use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use netsim::run::Summary;
use netsim::scenario::{self, Reproduce};
use netsim::{report, run};

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
    first: Summary,
}

fn stats(v: &[f64]) -> (f64, f64, f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, sd, min, max)
}

fn run_one(path: &Path, seed: u64) -> Result<(Summary, Reproduce)> {
    let mut sc = scenario::load(path, Some(seed)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let rep = sc.reproduce.clone().context("no [reproduce] table")?;
    Ok((run::run(&mut sc, |_| {}), rep))
}

/// Runs the subcommand.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let wall = WallClock::now();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&args.scenarios)
        .with_context(|| format!("reading {}", args.scenarios.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    // Keep only scenarios that declare what they reproduce (parse errors are reported).
    let mut chosen = Vec::new();
    for f in files {
        match scenario::load(&f, Some(1)) {
            Ok(sc) if sc.reproduce.is_some() => chosen.push(f),
            Ok(_) => {}
            Err(e) => bail!("{e}"),
        }
    }
    if chosen.is_empty() {
        bail!(
            "no scenario in {} has a [reproduce] table",
            args.scenarios.display()
        );
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let tasks: Vec<(usize, u64)> = (0..chosen.len())
        .flat_map(|i| (1..=args.seeds.max(1)).map(move |s| (i, s)))
        .collect();
    eprintln!(
        "reproduce: {} experiments x {} seeds on {jobs} threads",
        chosen.len(),
        args.seeds
    );
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(i, seed)) = tasks.get(k) else {
                    break;
                };
                let r = run_one(&chosen[i], seed);
                if let Ok(mut v) = results.lock() {
                    v.push((i, seed, r));
                }
            });
        }
    });
    let mut results = results
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a worker panicked"))?;
    results.sort_by_key(|(i, s, _)| (*i, *s));
    let mut rows: Vec<Row> = Vec::new();
    for (i, seed, r) in results {
        let (summary, rep) = r.with_context(|| format!("{} seed {seed}", chosen[i].display()))?;
        let m = rep.measure(&summary);
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
    let wall = wall.elapsed().as_secs_f64();
    for row in &rows {
        let dir = args.out.join(&row.name);
        run::write(&row.first, &dir).with_context(|| format!("writing {}", dir.display()))?;
        report::write_report(&row.first, &dir)
            .with_context(|| format!("writing {}", dir.display()))?;
    }
    let doc = markdown(&rows, args, wall);
    if let Some(parent) = args.doc.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&args.doc, &doc).with_context(|| format!("writing {}", args.doc.display()))?;
    std::fs::write(args.out.join("report.html"), html(&rows, args))?;
    for row in &rows {
        let (f, sd, ..) = stats(&row.f);
        let publ = row
            .rep
            .published_f
            .map_or("-".to_string(), |p| format!("{:.0}%", p * 100.0));
        println!(
            "{:<34} f = {:>4.0}% +- {:>2.0} (published {publ})",
            row.rep.experiment,
            f * 100.0,
            sd * 100.0
        );
    }
    println!(
        "wrote {} and {} in {wall:.0} s",
        args.doc.display(),
        args.out.join("report.html").display()
    );
    Ok(ExitCode::SUCCESS)
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
         range. Plots of seed 1: `out/reproduce/<scenario>/report.html`.\n",
        args.seeds,
        args.scenarios.display(),
        args.seeds
    );
    m.push_str("| experiment | source | published | ours: f mean +- sd (min..max) | pgmcc kbit/s | TCP kbit/s | acker changes (incl. re-elections) | scenario |\n|---|---|---|---|---|---|---|---|\n");
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
        let _ = writeln!(
            m,
            "| {} | {} | {} | {:.0}% +- {:.0} ({:.0}..{:.0}) | {:.0} | {:.0} | {:.1} | `{}` |",
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
