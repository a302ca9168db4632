//! Helpers the research commands share: generated doc sections, parallel runs, summary
//! statistics, names.

use netsim::scenario::FlowKind;

/// Start and end markers of a generated section of the doc.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Markers {
    pub(crate) begin: &'static str,
    pub(crate) end: &'static str,
}

/// The dumbbell grid's section.
pub(crate) const GRID: Markers = Markers {
    begin: "<!-- fairness-grid:begin (written by `make grid`) -->",
    end: "<!-- fairness-grid:end -->",
};

/// The receiver sweep's section (`pgmcc grid --receivers`).
pub(crate) const SWEEP: Markers = Markers {
    begin: "<!-- receiver-sweep:begin (written by `make grid`) -->",
    end: "<!-- receiver-sweep:end -->",
};

/// More seeds for the grid's cells whose three-seed mean left the band: measured with the
/// commands the section gives, written by hand; `make grid` and `make reproduce` keep it.
pub(crate) const MORE_SEEDS: Markers = Markers {
    begin: "<!-- grid-more-seeds:begin (measured with the commands below; kept by `make grid` and `make reproduce`) -->",
    end: "<!-- grid-more-seeds:end -->",
};

/// Runs `f` on every task on `jobs` threads; results in task order.
pub(crate) fn par_map<T: Sync, R: Send>(
    tasks: &[T],
    jobs: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(t) = tasks.get(k) else {
                    break;
                };
                let r = f(t);
                if let Ok(mut v) = results.lock() {
                    v.push((k, r));
                }
            });
        }
    });
    let mut v = results.into_inner().unwrap_or_else(|e| e.into_inner());
    v.sort_by_key(|(k, _)| *k);
    v.into_iter().map(|(_, r)| r).collect()
}

/// Mean, standard deviation, min and max.
pub(crate) fn stats(v: &[f64]) -> (f64, f64, f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, sd, min, max)
}

/// `old` with its section between `m`'s markers replaced by `section` (appended if it has
/// none).
pub(crate) fn splice(old: &str, section: &str, m: Markers) -> String {
    match (old.find(m.begin), old.find(m.end)) {
        (Some(b), Some(e)) if e > b => {
            format!("{}{section}{}", &old[..b], &old[e + m.end.len()..])
        }
        _ => {
            let mut s = old.trim_end().to_string();
            if !s.is_empty() {
                s.push_str("\n\n");
            }
            s.push_str(section);
            s.push('\n');
            s
        }
    }
}

/// The section of `doc` between `m`'s markers, markers included, if it has one.
pub(crate) fn section_of(doc: &str, m: Markers) -> Option<&str> {
    let b = doc.find(m.begin)?;
    let e = doc.find(m.end)?;
    (e > b).then(|| &doc[b..e + m.end.len()])
}

/// Parallel runs: `jobs`, or the available cores.
pub(crate) fn jobs(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// The short name of a TCP variant in tables.
pub(crate) fn short(kind: FlowKind) -> &'static str {
    match kind {
        FlowKind::TcpSack => "SACK",
        FlowKind::TcpNewReno => "NewReno",
        FlowKind::TcpReno => "Reno",
        _ => "?",
    }
}
