//! `pgmcc grid --receivers N,...`: the many-receiver part of the fairness grid (issue 19,
//! item 5; `netsim::sweep`). Runs one multicast session to N heterogeneous receivers against
//! one TCP flow on the slowest receiver's path, for each N, TCP variant and seed, and writes
//! its table into `docs/reproduction.md` between its own markers.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant as WallClock;

use anyhow::{bail, Context, Result};
use netsim::scenario::FlowKind;
use netsim::sweep::{self, Sweep, SweepOutcome};

use netsim::fairness::BAND;
use pgmcc::cc::Controller;

use super::shared::{jobs, par_map, short, splice, stats, SWEEP};

/// What `pgmcc grid --receivers` asks of the sweep.
pub(crate) struct Plan<'a> {
    /// Seeds per size and TCP variant (1..=N).
    pub(crate) seeds: u64,
    /// The controller in the multicast slot.
    pub(crate) cc: Controller,
    /// The TCP variants as the user named them.
    pub(crate) tcp_names: &'a [String],
    /// Parallel runs (default: available cores).
    pub(crate) jobs: Option<usize>,
    /// The Markdown file whose sweep section is (re)written.
    pub(crate) doc: &'a std::path::Path,
    /// Where sweep.csv and the scenario files go.
    pub(crate) out: &'a std::path::Path,
}

/// One run to do.
struct Task {
    size: usize,
    tcp: FlowKind,
    seed: u64,
}

/// Runs the sweep for `sizes` (receiver counts) against `tcps`.
pub(crate) fn run(args: &Plan<'_>, sizes: &[usize], tcps: &[FlowKind]) -> Result<ExitCode> {
    if let Some(&n) = sizes.iter().find(|&&n| n == 0 || n > 10_000) {
        bail!("--receivers: {n} is not a receiver count from 1 to 10000");
    }
    let jobs = jobs(args.jobs);
    let mut tasks = Vec::new();
    // Largest first: the long runs start while the short ones fill the other threads.
    let mut order = sizes.to_vec();
    order.sort_unstable_by(|a, b| b.cmp(a));
    for &size in &order {
        for seed in 1..=args.seeds {
            for &tcp in tcps {
                tasks.push(Task { size, tcp, seed });
            }
        }
    }
    let dir = args.out.join("scenarios");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for &size in sizes {
        let sw = Sweep { receivers: size };
        for &tcp in tcps {
            let p = dir.join(format!("{}-{}-vs-{}.toml", sw.stem(), args.cc, tcp.name()));
            std::fs::write(&p, sw.scenario(tcp, args.cc))
                .with_context(|| format!("writing {}", p.display()))?;
        }
    }
    eprintln!(
        "receiver sweep: {:?} receivers x {} seeds, {} runs on {jobs} threads (scenario files in {})",
        sizes,
        args.seeds,
        tasks.len(),
        dir.display()
    );
    let wall = WallClock::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let results = par_map(&tasks, jobs, |t| -> Result<SweepOutcome> {
        let sw = Sweep { receivers: t.size };
        let text = sw.scenario(t.tcp, args.cc);
        let o = sw.run(&text, t.seed).map_err(|e| anyhow::anyhow!("{e}"))?;
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        eprintln!(
            "[{n}/{}] {:>5} receivers vs {:<11} seed {}: f = {:.2}, {:.0} kbit/s, {} unrecoverable ({:.0} s)",
            tasks.len(),
            t.size,
            t.tcp.name(),
            t.seed,
            o.f,
            o.multicast_kbps,
            o.unrecoverable,
            wall.elapsed().as_secs_f64()
        );
        Ok(o)
    });
    let results: Vec<SweepOutcome> = results.into_iter().collect::<Result<_>>()?;
    let wall = wall.elapsed().as_secs_f64();

    let mut csv = String::from(
        "receivers,tcp,seed,f,tcp_kbps,multicast_kbps,unrecoverable,acker_changes,slowest_acker_share\n",
    );
    for (t, o) in tasks.iter().zip(&results) {
        let _ = writeln!(
            csv,
            "{},{},{},{:.4},{:.1},{:.1},{},{},{:.3}",
            t.size,
            t.tcp.name(),
            t.seed,
            o.f,
            o.tcp_kbps,
            o.multicast_kbps,
            o.unrecoverable,
            o.acker_changes,
            o.slowest_acker_share
        );
    }
    std::fs::write(args.out.join("sweep.csv"), csv)?;
    let section = markdown(args, sizes, tcps, &tasks, &results, wall);
    let old = std::fs::read_to_string(args.doc).unwrap_or_default();
    std::fs::write(args.doc, splice(&old, &section, SWEEP))
        .with_context(|| format!("writing {}", args.doc.display()))?;
    println!(
        "wrote the receiver sweep section of {} and {} in {wall:.0} s",
        args.doc.display(),
        args.out.join("sweep.csv").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Who wrote the sweep section: `make grid` for its own run, otherwise the `pgmcc grid`
/// command line that was run.
fn made_by(args: &Plan<'_>, sizes: &[usize]) -> String {
    let sizes: Vec<String> = sizes.iter().map(usize::to_string).collect();
    let cmd = format!(
        "pgmcc grid --seeds {} --cc {} --tcp {} --receivers {}",
        args.seeds,
        args.cc,
        args.tcp_names.join(","),
        sizes.join(","),
    );
    if cmd == "pgmcc grid --seeds 3 --cc pgmcc --tcp sack,newreno --receivers 1,10,100,1000" {
        format!("`make grid` (`{cmd}`)")
    } else {
        format!("`{cmd}`")
    }
}

fn markdown(
    args: &Plan<'_>,
    sizes: &[usize],
    tcps: &[FlowKind],
    tasks: &[Task],
    results: &[SweepOutcome],
    wall: f64,
) -> String {
    let pick = |size: usize, tcp: Option<FlowKind>| -> Vec<&SweepOutcome> {
        tasks
            .iter()
            .zip(results)
            .filter(|(t, _)| t.size == size && tcp.is_none_or(|k| k == t.tcp))
            .map(|(_, o)| o)
            .collect()
    };
    let mean = |v: &[&SweepOutcome], f: fn(&SweepOutcome) -> f64| -> f64 {
        v.iter().map(|o| f(o)).sum::<f64>() / v.len().max(1) as f64
    };
    let mut m = String::new();
    let _ = writeln!(m, "{}", SWEEP.begin);
    let _ = writeln!(
        m,
        "## Receiver sweep: `{cc}` to 1-1000 heterogeneous receivers, TCP on the slowest path\n\n\
         Generated by {made_by} in {wall:.0} s on this 2-core machine; every run is in `out/grid/sweep.csv` and every \
         size's scenario in `out/grid/scenarios/sweep-*`. Each receiver has its own link behind \
         a shared 10 Mbit/s bottleneck, with a one-way delay drawn from {dmin}-{dmax} ms and a \
         random loss from {pmin}-{pmax}%; receiver PR0 is the slowest by the TCP equation \
         ({dmax} ms, {pmax}%), and one TCP flow (with limited transmit) runs on a link like PR0's \
         (`crates/netsim/src/sweep.rs` says why). f = TCP goodput / `{cc}` goodput over \
         {from:.0}-{to:.0} s, mean (min-max) over seeds 1-{seeds}, in percent; **bold** = outside \
         [{lo:.0}, {hi:.0}]%. Rate = `{cc}`'s goodput, and its ratio to the rate with 10 \
         receivers (target: at least 0.9 at 1000). Slowest acker = the share of the \
         measurement during which PR0 was the acker. Unrecoverable = sequence numbers any \
         receiver gave up, summed (reliable mode: target 0).\n",
        cc = args.cc,
        seeds = args.seeds,
        made_by = made_by(args, sizes),
        dmin = sweep::MIN_DELAY_MS,
        dmax = sweep::SLOWEST_DELAY_MS,
        pmin = sweep::MIN_LOSS * 100.0,
        pmax = sweep::SLOWEST_LOSS * 100.0,
        from = sweep::WARMUP_S,
        to = sweep::WARMUP_S + sweep::MEASURE_S,
        lo = BAND.0 * 100.0,
        hi = BAND.1 * 100.0,
    );
    let mut head = String::from("| receivers |");
    let mut rule = String::from("|---|");
    for &t in tcps {
        let _ = write!(head, " f vs {} |", short(t));
        rule.push_str("---|");
    }
    head.push_str(
        " rate kbit/s | rate / rate at 10 | slowest acker | acker changes | unrecoverable |",
    );
    rule.push_str("---|---|---|---|---|");
    let _ = writeln!(m, "{head}\n{rule}");
    let at10 = sizes
        .contains(&10)
        .then(|| mean(&pick(10, None), |o| o.multicast_kbps));
    for &size in sizes {
        let _ = write!(m, "| {size} |");
        for &t in tcps {
            let f: Vec<f64> = pick(size, Some(t)).iter().map(|o| o.f).collect();
            let (mu, _, lo, hi) = stats(&f);
            let s = format!("{:.0} ({:.0}-{:.0})", mu * 100.0, lo * 100.0, hi * 100.0);
            let judge = t != FlowKind::TcpReno && !(BAND.0..=BAND.1).contains(&mu);
            let _ = write!(m, " {} |", if judge { format!("**{s}**") } else { s });
        }
        let all = pick(size, None);
        let rate = mean(&all, |o| o.multicast_kbps);
        let ratio = at10.map_or("-".to_string(), |r| format!("{:.2}", rate / r));
        let unrecoverable: u64 = all.iter().map(|o| o.unrecoverable).sum();
        let _ = writeln!(
            m,
            " {rate:.0} | {ratio} | {:.0}% | {:.1} | {unrecoverable} |",
            mean(&all, |o| o.slowest_acker_share) * 100.0,
            mean(&all, |o| o.acker_changes as f64),
        );
    }
    let _ = write!(m, "\n{}", SWEEP.end);
    m
}
