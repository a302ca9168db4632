//! `pgmcc grid`: the fairness grid (issue 19, item 5). Runs one multicast receiver against
//! one TCP flow on every dumbbell of `netsim::grid::standard()` (or the subset the flags
//! pick), for each TCP variant and seed, with a TCP-against-TCP control, and writes the table
//! into `docs/reproduction.md` between two markers that `pgmcc reproduce` keeps.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant as WallClock;

use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use netsim::grid::{self, Access, Cell, Contender, Outcome};
use netsim::run;
use netsim::scenario::{self, FlowKind};
use pgmcc::cc::Controller;

use super::shared::{jobs, par_map, short, splice, stats, GRID};
use netsim::fairness::BAND;

/// The TCP variants `--tcp` runs against by default.
const DEFAULT_TCP: &str = "sack,newreno,reno";

/// Arguments of `pgmcc grid`.
#[derive(Debug, ClapArgs)]
pub(crate) struct Args {
    /// Seeds per cell and TCP variant (1..=N).
    #[arg(long, default_value_t = 3)]
    pub(crate) seeds: u64,
    /// The controller in the multicast slot (a registry name: pgmcc, pgmcc-paper, tfmcc, ...).
    #[arg(long, default_value = "pgmcc")]
    pub(crate) cc: Controller,
    /// TCP variants to run against, comma-separated: sack, newreno, reno.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_TCP)]
    pub(crate) tcp: Vec<String>,
    /// Bottleneck rates in Mbit/s, comma-separated (default: 1,10,100).
    #[arg(long, value_delimiter = ',')]
    pub(crate) rates: Vec<u64>,
    /// Round-trip times in ms, comma-separated (default: 20,100,400).
    #[arg(long, value_delimiter = ',')]
    pub(crate) rtts: Vec<u32>,
    /// Queue sizes in bandwidth-delay products, comma-separated (default: 0.5,1,2).
    #[arg(long, value_delimiter = ',')]
    pub(crate) queues: Vec<f64>,
    /// Senders' access links, comma-separated: fast (10x the bottleneck), slow (0.75x).
    #[arg(long, value_delimiter = ',')]
    pub(crate) access: Vec<String>,
    /// Skip the control (TCP SACK against TCP SACK on the same cell).
    #[arg(long)]
    pub(crate) no_control: bool,
    /// Millions of packets a run may cost for its cell to be measured in steady state
    /// (5 sawtooth cycles of warm-up, then at least 8, and 24 where a run stays within 15
    /// million packets or this budget, if smaller); cells that need more are measured over
    /// 200 RTTs after start-up and marked *start-up*. The default keeps runs to about
    /// a minute; 250 measures every cell in steady state (the 100 Mbit/s x 400 ms cells
    /// then take 8-28 minutes a run).
    #[arg(long, value_name = "MPACKETS", default_value_t = grid::STEADY_BUDGET / 1e6)]
    pub(crate) steady_budget: f64,
    /// Parallel runs (default: available cores).
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    /// The Markdown file whose grid section is (re)written.
    #[arg(long, value_name = "FILE", default_value = "docs/reproduction.md")]
    pub(crate) doc: PathBuf,
    /// Run the receiver sweep instead of the dumbbells: one session to each of these numbers
    /// of receivers with heterogeneous RTT and loss, comma-separated (e.g. 1,10,100,1000),
    /// against one TCP flow on the slowest receiver's path.
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub(crate) receivers: Vec<usize>,
    /// Where grid.csv (every run) and the cells' scenario files go.
    #[arg(long, value_name = "DIR", default_value = "out/grid")]
    pub(crate) out: PathBuf,
}

fn tcp_kind(name: &str) -> Result<FlowKind> {
    Ok(match name {
        "sack" => FlowKind::TcpSack,
        "newreno" => FlowKind::TcpNewReno,
        "reno" => FlowKind::TcpReno,
        other => bail!("--tcp: `{other}` is not a TCP variant (use sack, newreno, reno)"),
    })
}

fn cells(args: &Args) -> Result<Vec<Cell>> {
    let access: Vec<Access> = args
        .access
        .iter()
        .map(|a| match a.as_str() {
            "fast" => Ok(Access::Faster),
            "slow" => Ok(Access::Slower),
            other => bail!("--access: `{other}` (use fast or slow)"),
        })
        .collect::<Result<_>>()?;
    let v: Vec<Cell> = grid::standard()
        .into_iter()
        .filter(|c| args.rates.is_empty() || args.rates.contains(&(c.rate_bps / 1_000_000)))
        .filter(|c| args.rtts.is_empty() || args.rtts.contains(&c.rtt_ms))
        .filter(|c| args.queues.is_empty() || args.queues.contains(&c.queue_bdp))
        .filter(|c| access.is_empty() || access.contains(&c.access))
        .collect();
    if v.is_empty() {
        bail!("no cell of the grid matches --rates/--rtts/--queues/--access");
    }
    if !(args.steady_budget.is_finite() && args.steady_budget >= 0.0) {
        bail!(
            "--steady-budget: `{}` is not a number of millions of packets",
            args.steady_budget
        );
    }
    let budget = args.steady_budget * 1e6;
    Ok(distinct(v)
        .into_iter()
        .map(|c| Cell {
            steady_budget: budget,
            ..c
        })
        .collect())
}

/// `cells` without repeats: queue sizes that round to the same packet count (the 4-packet
/// floor) make the same scenario, run once.
fn distinct(cells: Vec<Cell>) -> Vec<Cell> {
    let mut unique: Vec<Cell> = Vec::new();
    for c in cells {
        if !unique.iter().any(|u| u.scenario_eq(&c)) {
            unique.push(c);
        }
    }
    unique
}

/// The queue column of `c`: every standard queue size that gives its packet count.
fn queue_label(c: &Cell) -> String {
    let sizes: Vec<String> = grid::standard()
        .iter()
        .filter(|o| o.scenario_eq(c))
        .map(|o| o.queue_bdp.to_string())
        .collect();
    format!("{} BDP ({}p)", sizes.join(", "), c.queue_packets())
}

/// One run to do.
struct Task {
    cell: usize,
    tcp: FlowKind,
    contender: Contender,
    seed: u64,
}

pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let tcps: Vec<FlowKind> = args
        .tcp
        .iter()
        .map(|t| tcp_kind(t))
        .collect::<Result<_>>()?;
    if args.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    if !args.receivers.is_empty() {
        let plan = super::sweep::Plan {
            seeds: args.seeds,
            cc: args.cc,
            tcp_names: &args.tcp,
            jobs: args.jobs,
            doc: &args.doc,
            out: &args.out,
        };
        return super::sweep::run(&plan, &args.receivers, &tcps);
    }
    let cells = cells(args)?;
    let jobs = jobs(args.jobs);
    let mut tasks = Vec::new();
    for (i, _) in cells.iter().enumerate() {
        for seed in 1..=args.seeds {
            for &tcp in &tcps {
                tasks.push(Task {
                    cell: i,
                    tcp,
                    contender: Contender::Pgm(args.cc),
                    seed,
                });
            }
            if !args.no_control {
                tasks.push(Task {
                    cell: i,
                    tcp: FlowKind::TcpSack,
                    contender: Contender::Tcp(FlowKind::TcpSack),
                    seed,
                });
            }
        }
    }
    let dir = args.out.join("scenarios");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for c in &cells {
        for &tcp in &tcps {
            let p = dir.join(format!("{}-{}-vs-{}.toml", c.stem(), args.cc, tcp.name()));
            std::fs::write(&p, c.scenario(tcp, Contender::Pgm(args.cc)))
                .with_context(|| format!("writing {}", p.display()))?;
        }
    }
    eprintln!(
        "grid: {} cells x {} seeds, {} runs on {jobs} threads (scenario files in {})",
        cells.len(),
        args.seeds,
        tasks.len(),
        dir.display()
    );
    let wall = WallClock::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    // Longest runs first (packets at the bottleneck), so that the last ones to finish are
    // short and no core idles while one long run ends.
    let cost = |t: &Task| {
        let c = &cells[t.cell];
        (c.warmup_s() + c.measure_s()) * c.packet_rate()
    };
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by(|&a, &b| cost(&tasks[b]).total_cmp(&cost(&tasks[a])));
    let by_cost = par_map(&order, jobs, |&k| -> Result<Outcome> {
        let t = &tasks[k];
        let c = &cells[t.cell];
        let text = c.scenario(t.tcp, t.contender);
        let mut sc = scenario::parse(&format!("{}.toml", c.stem()), &text, "grid", Some(t.seed))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let summary = run::run(&mut sc, |_| {});
        let o = c.measure(&summary);
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let who = match t.contender {
            Contender::Pgm(cc) => cc.to_string(),
            Contender::Tcp(k) => format!("control {}", k.name()),
        };
        eprintln!(
            "[{n}/{}] {:<34} {:<20} vs {:<11} seed {}: f = {:.2} ({:.0} s)",
            tasks.len(),
            c.label(),
            who,
            t.tcp.name(),
            t.seed,
            o.f,
            wall.elapsed().as_secs_f64()
        );
        Ok(o)
    });
    let mut results = vec![None; tasks.len()];
    for (&k, r) in order.iter().zip(by_cost) {
        results[k] = Some(r?);
    }
    let results: Vec<Outcome> = results.into_iter().flatten().collect();
    let wall = wall.elapsed().as_secs_f64();

    let mut csv = String::from("cell,rate_mbit,rtt_ms,queue_bdp,queue_p,access,contender,tcp,seed,f,tcp_kbps,multicast_kbps,cycles,unrecoverable\n");
    for (t, o) in tasks.iter().zip(&results) {
        let c = &cells[t.cell];
        let who = match t.contender {
            Contender::Pgm(cc) => cc.to_string(),
            Contender::Tcp(k) => k.name().to_string(),
        };
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{who},{},{},{:.4},{:.1},{:.1},{:.2},{}",
            c.stem(),
            c.rate_bps / 1_000_000,
            c.rtt_ms,
            c.queue_bdp,
            c.queue_packets(),
            c.access.name(),
            t.tcp.name(),
            t.seed,
            o.f,
            o.tcp_kbps,
            o.multicast_kbps,
            o.cycles,
            o.unrecoverable
        );
    }
    std::fs::write(args.out.join("grid.csv"), csv)?;

    let section = markdown(args, &cells, &tcps, &tasks, &results, wall);
    let old = std::fs::read_to_string(&args.doc).unwrap_or_default();
    std::fs::write(&args.doc, splice(&old, &section, GRID))
        .with_context(|| format!("writing {}", args.doc.display()))?;
    println!(
        "wrote the grid section of {} and {} in {wall:.0} s",
        args.doc.display(),
        args.out.join("grid.csv").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Who wrote the grid section: `make grid` for its own run, otherwise the `pgmcc grid`
/// command line that was run, so a reader can rerun exactly what the table shows.
fn made_by(args: &Args, cells: usize) -> String {
    fn list<T: std::fmt::Display>(flag: &str, v: &[T]) -> String {
        let v: Vec<String> = v.iter().map(T::to_string).collect();
        if v.is_empty() {
            String::new()
        } else {
            format!(" --{flag} {}", v.join(","))
        }
    }
    let mut cmd = format!("pgmcc grid --seeds {} --cc {}", args.seeds, args.cc);
    if args.tcp.join(",") != DEFAULT_TCP {
        cmd.push_str(&list("tcp", &args.tcp));
    }
    cmd.push_str(&list("rates", &args.rates));
    cmd.push_str(&list("rtts", &args.rtts));
    cmd.push_str(&list("queues", &args.queues));
    cmd.push_str(&list("access", &args.access));
    if args.no_control {
        cmd.push_str(" --no-control");
    }
    if args.steady_budget != grid::STEADY_BUDGET / 1e6 {
        cmd.push_str(&format!(" --steady-budget {}", args.steady_budget));
    }
    let all = distinct(grid::standard()).len();
    if cells == all && cmd == "pgmcc grid --seeds 3 --cc pgmcc" {
        format!("`make grid` (`{cmd}`)")
    } else {
        format!("`{cmd}` ({cells} of the grid's {all} distinct cells)")
    }
}

/// The grid section's heading and the paragraph that says how its table was measured.
fn intro(args: &Args, cells: usize, wall: f64) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "## Fairness grid: `{cc}` against TCP on a dumbbell\n\n\
         Generated by {made_by} in {wall:.0} s \
         on this 2-core machine; every run is in `out/grid/grid.csv` and every cell's scenario \
         in `out/grid/scenarios/` (rerun one with `pgmcc sim FILE --seed N`). One `{cc}` \
         receiver and one TCP flow (with limited transmit, RFC 3042, as RFC 5681 §3.2 asks) \
         share a drop-tail bottleneck; both send 1500-byte \
         datagrams, start at a seed-dependent instant in the first second, every host has \
         `jitter = \"auto\"`, and only the bottleneck drops (`crates/netsim/src/grid.rs` \
         says why). Access = the senders' links, 10x (fast) or 0.75x (slow) the bottleneck. \
         f = TCP goodput / `{cc}` goodput after a warm-up of {conv:.0} TCP sawtooth cycles \
         (the time two window-based flows take to converge from start-up), as mean \
         (min-max) over seeds {seeds_list}, in percent; **bold** = the mean is outside \
         [{lo:.0}, {hi:.0}]%. Control = TCP SACK against TCP SACK on the same cell: what the \
         simulator's TCP itself gets, the floor for any other column. Cycles = TCP sawtooth \
         periods the measurement spans: at least {min_cycles:.0}, and {precise:.0} where a run \
         of that length fits the budget, because f over a few cycles is noisy, the \
         control's too (`PRECISE_CYCLES` in `crates/netsim/src/grid.rs`). *start-up* = a \
         cell whose cycles are too long to simulate to steady state within the grid's budget (more than {budget:.0} million \
         packets per run): it is measured over 50 RTTs of warm-up and at least 200 RTTs, \
         where f mostly reflects which flow left slow start ahead, the control included; \
         such cells are counted apart.\n",
        cc = args.cc,
        min_cycles = grid::MIN_CYCLES,
        precise = grid::PRECISE_CYCLES,
        made_by = made_by(args, cells),
        seeds_list = format_args!("1-{}", args.seeds),
        lo = BAND.0 * 100.0,
        hi = BAND.1 * 100.0,
        conv = grid::CONVERGE_CYCLES,
        budget = args.steady_budget,
    );
    m
}

fn markdown(
    args: &Args,
    cells: &[Cell],
    tcps: &[FlowKind],
    tasks: &[Task],
    results: &[Outcome],
    wall: f64,
) -> String {
    let pick = |cell: usize, tcp: FlowKind, control: bool| -> Vec<&Outcome> {
        tasks
            .iter()
            .zip(results)
            .filter(|(t, _)| {
                t.cell == cell
                    && t.tcp == tcp
                    && matches!(t.contender, Contender::Tcp(_)) == control
            })
            .map(|(_, o)| o)
            .collect()
    };
    let mut m = String::new();
    let _ = writeln!(m, "{}", GRID.begin);
    m.push_str(&intro(args, cells.len(), wall));
    let mut head = String::from("| bottleneck | RTT | queue | access |");
    let mut rule = String::from("|---|---|---|---|");
    for &t in tcps {
        let _ = write!(head, " vs {} |", short(t));
        rule.push_str("---|");
    }
    if !args.no_control {
        head.push_str(" control |");
        rule.push_str("---|");
    }
    head.push_str(" cycles |");
    rule.push_str("---|");
    let _ = writeln!(m, "{head}\n{rule}");
    // "mean (min-max)" in percent, bold when `judge` and the mean is outside the band;
    // and whether it is inside.
    let fmt = |v: &[&Outcome], judge: bool| -> (String, bool) {
        let f: Vec<f64> = v.iter().map(|o| o.f).collect();
        let (mean, _, lo, hi) = stats(&f);
        let inside = (BAND.0..=BAND.1).contains(&mean);
        let s = format!("{:.0} ({:.0}-{:.0})", mean * 100.0, lo * 100.0, hi * 100.0);
        (
            if judge && !inside {
                format!("**{s}**")
            } else {
                s
            },
            inside,
        )
    };
    // Cells in band, among the steady-state cells and among the start-up ones.
    let mut in_band = vec![[0usize; 2]; tcps.len()];
    let steady = cells.iter().filter(|c| c.steady()).count();
    for (i, c) in cells.iter().enumerate() {
        let kind = usize::from(!c.steady());
        let _ = write!(
            m,
            "| {} Mbit/s | {} ms | {} | {} |",
            c.rate_bps / 1_000_000,
            c.rtt_ms,
            queue_label(c),
            c.access.name()
        );
        let mut cycles = 0.0;
        for (k, &t) in tcps.iter().enumerate() {
            let v = pick(i, t, false);
            let judge = t != FlowKind::TcpReno && c.steady();
            let (text, inside) = fmt(&v, judge);
            in_band[k][kind] += usize::from(inside);
            cycles = v.first().map_or(0.0, |o| o.cycles);
            let _ = write!(m, " {text} |");
        }
        if !args.no_control {
            let _ = write!(m, " {} |", fmt(&pick(i, FlowKind::TcpSack, true), false).0);
        }
        if c.steady() {
            let _ = writeln!(m, " {cycles:.1} |");
        } else {
            let _ = writeln!(m, " {cycles:.1}, *start-up* |");
        }
    }
    let _ = writeln!(m);
    for (k, &t) in tcps.iter().enumerate() {
        let _ = write!(
            m,
            "- against {}: {} of {steady} steady-state cells with mean f in [{:.0}, {:.0}]%",
            short(t),
            in_band[k][0],
            BAND.0 * 100.0,
            BAND.1 * 100.0
        );
        if steady < cells.len() {
            let _ = write!(
                m,
                " ({} of the {} start-up cells)",
                in_band[k][1],
                cells.len() - steady
            );
        }
        let _ = writeln!(m);
    }
    // Reliable delivery: what the multicast receiver gave up, over every run.
    let lost: Vec<(String, u64)> = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let n = tasks
                .iter()
                .zip(results)
                .filter(|(t, _)| t.cell == i && matches!(t.contender, Contender::Pgm(_)))
                .map(|(_, o)| o.unrecoverable)
                .sum::<u64>();
            (c.label(), n)
        })
        .filter(|&(_, n)| n > 0)
        .collect();
    if lost.is_empty() {
        let _ = writeln!(
            m,
            "- sequence numbers the `{}` receiver gave up (reliable mode): none, in any run",
            args.cc
        );
    } else {
        let list: Vec<String> = lost.iter().map(|(l, n)| format!("{l}: {n}")).collect();
        let _ = writeln!(
            m,
            "- sequence numbers the `{}` receiver gave up (reliable mode), summed over a \
             cell's runs: {}",
            args.cc,
            list.join("; ")
        );
    }
    let _ = write!(m, "\n{}", GRID.end);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::shared::{section_of, Markers, SWEEP};

    fn section(m: Markers, body: &str) -> String {
        format!("{}\n{body}\n{}", m.begin, m.end)
    }

    #[test]
    fn queue_sizes_that_give_the_same_packet_count_are_one_cell() {
        // 1 Mbit/s at 20 ms: 0.5, 1 and 2 BDP are all the 4-packet floor (fast and slow).
        let cells = distinct(grid::standard());
        assert_eq!(cells.len(), 54 - 4);
        let small = cells
            .iter()
            .find(|c| c.rate_bps == 1_000_000 && c.rtt_ms == 20)
            .expect("the standard grid has 1 Mbit/s, 20 ms cells");
        assert_eq!(queue_label(small), "0.5, 1, 2 BDP (4p)");
    }

    #[test]
    fn each_generated_section_is_replaced_alone_and_appended_when_missing() {
        let doc = format!("# Doc\n\ntext\n\n{}\n\nmore\n", section(GRID, "old grid"));
        let with_sweep = splice(&doc, &section(SWEEP, "sweep 1"), SWEEP);
        assert!(
            with_sweep.contains("old grid") && with_sweep.ends_with(&format!("{}\n", SWEEP.end))
        );
        let regrid = splice(&with_sweep, &section(GRID, "new grid"), GRID);
        assert!(regrid.contains("new grid") && !regrid.contains("old grid"));
        assert!(regrid.contains("sweep 1") && regrid.contains("\nmore\n"));
        assert_eq!(
            section_of(&regrid, SWEEP),
            Some(section(SWEEP, "sweep 1").as_str())
        );
        assert_eq!(section_of("no markers", GRID), None);
    }

    fn parse(cmd: &str) -> Args {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        <Cli as clap::Parser>::try_parse_from(cmd.split(' '))
            .expect("a valid grid command line")
            .args
    }

    #[test]
    fn the_header_names_make_grid_only_for_its_own_run() {
        let full = distinct(grid::standard()).len();
        assert_eq!(
            made_by(&parse("grid --seeds 3"), full),
            "`make grid` (`pgmcc grid --seeds 3 --cc pgmcc`)"
        );
        let a = parse(
            "grid --seeds 3 --rates 100 --rtts 400 --queues 1 --access fast --tcp newreno \
             --no-control --steady-budget 250",
        );
        let cells = cells(&a).expect("a valid selection");
        assert_eq!(
            made_by(&a, cells.len()),
            format!(
                "`pgmcc grid --seeds 3 --cc pgmcc --tcp newreno --rates 100 --rtts 400 \
                 --queues 1 --access fast --no-control --steady-budget 250` (1 of the grid's \
                 {full} distinct cells)"
            )
        );
        // The whole grid against one TCP is not what `make grid` runs.
        assert!(!made_by(&parse("grid --seeds 3 --tcp sack"), full).contains("make grid"));
    }
}
