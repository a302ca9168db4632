//! Smoke versions of the reproduction rows (`make reproduce`, docs/reproduction.md): every
//! scenario with a `[reproduce]` table runs here once, with seed 1 and a shortened timeline,
//! and each test asserts the qualitative result the paper states. Where we knowingly
//! disagree with the paper (the row's `explanation` says why), the test asserts what we
//! measure instead, and says so, so that a change in behaviour shows up either way.
//!
//! Fig. 5's acker moves (to PR1 when it joins, to PR2 while TCP runs, back after) are pinned
//! by `tests/fig5.rs`; here only its `[reproduce]` row (pgmcc and TCP sharing L2) is checked.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use netsim::run::{mean_between, run, Summary};
use netsim::scenario::parse;

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

/// Seeds each smoke row runs (1..=SEEDS). The scenarios have host jitter, so each seed is a
/// different drop-tail phase, and one seed's f can sit tens of points from the mean.
const SEEDS: u64 = 3;

/// Shortened runs of a reproduction row, seeds 1..=[`SEEDS`].
struct Smoke {
    /// f = TCP / pgmcc over the shortened measuring window, mean over the seeds.
    f: f64,
    /// Mean over the seeds.
    pgm_kbps: f64,
    /// Mean over the seeds.
    tcp_kbps: f64,
    /// One summary per seed.
    summaries: Vec<Summary>,
    /// Node name -> address, to read the acker switches.
    addrs: Vec<(String, String)>,
    pgm: usize,
    from_s: f64,
}

impl Smoke {
    /// Share of [from, end] during which `node` was the pgmcc acker, mean over the seeds.
    fn acker_share(&self, node: &str) -> f64 {
        let addr = &self.addrs.iter().find(|(n, _)| n == node).unwrap().1;
        let share = |summary: &Summary| {
            let end = summary.duration_s;
            let sw = &summary.flows[self.pgm].acker_switches;
            let mut held = 0.0;
            for (i, a) in sw.iter().enumerate() {
                let t0 = a.t.max(self.from_s);
                let t1 = sw.get(i + 1).map_or(end, |b| b.t).min(end);
                if &a.to == addr && t1 > t0 {
                    held += t1 - t0;
                }
            }
            held / (end - self.from_s)
        };
        self.summaries.iter().map(share).sum::<f64>() / self.summaries.len() as f64
    }

    /// Distinct receivers that held the acker role at some time, fewest over the seeds.
    fn ackers(&self) -> usize {
        self.summaries
            .iter()
            .map(|s| {
                s.flows[self.pgm]
                    .acker_switches
                    .iter()
                    .map(|a| a.to.as_str())
                    .collect::<BTreeSet<_>>()
                    .len()
            })
            .min()
            .unwrap_or(0)
    }

    /// Acker switches, mean over the seeds.
    fn acker_switches(&self) -> f64 {
        let n: usize = self
            .summaries
            .iter()
            .map(|s| s.flows[self.pgm].acker_switches.len())
            .sum();
        n as f64 / self.summaries.len() as f64
    }

    /// Mean pgmcc throughput between two times, mean over the seeds.
    fn pgm_between(&self, a: f64, b: f64) -> f64 {
        let one = |s: &Summary| mean_between(s, &s.flows[self.pgm].series_kbps, a, b);
        self.summaries.iter().map(one).sum::<f64>() / self.summaries.len() as f64
    }
}

/// Switches a reproduction file's pgmcc flows from the published preset to our
/// recommended `pgmcc` (the second column of `make reproduce`).
const RECOMMENDED: (&str, &str) = ("cc = \"pgmcc-paper\"", "cc = \"pgmcc\"");

/// Runs `file` with seeds 1..=[`SEEDS`] for `duration` seconds, measuring from `from_s`,
/// after replacing each `(old, new)` text in the file (each must occur, so a changed file
/// fails loudly).
fn smoke(file: &str, duration: u64, from_s: f64, edits: &[(&str, &str)]) -> Smoke {
    let path = scenarios_dir().join(file);
    let mut src = std::fs::read_to_string(&path).unwrap();
    let dur_line = src
        .lines()
        .find(|l| l.starts_with("duration = "))
        .unwrap()
        .to_string();
    src = src.replacen(&dur_line, &format!("duration = \"{duration}s\""), 1);
    for (old, new) in edits {
        assert!(src.contains(old), "{file}: `{old}` not found");
        src = src.replace(old, new);
    }
    let stem = file.trim_end_matches(".toml");
    let (mut f, mut pgm_kbps, mut tcp_kbps) = (0.0, 0.0, 0.0);
    let (mut summaries, mut addrs, mut pgm) = (Vec::new(), Vec::new(), 0);
    for seed in 1..=SEEDS {
        let mut sc = parse(file, &src, stem, Some(seed)).unwrap();
        let mut rep = sc.reproduce.clone().unwrap();
        rep.from_s = from_s;
        rep.to_s = rep.to_s.map(|t| t.min(duration as f64));
        addrs = sc
            .node_names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), sc.sim.addr(i).to_string()))
            .collect();
        let summary = run(&mut sc, |_| {});
        assert_eq!(summary.spins, 0, "{stem}: the livelock guard fired");
        let m = rep.measure(&summary);
        eprintln!(
            "{stem} seed {seed}: f {:.2} (pgmcc {:.0}, tcp {:.0} kbit/s), acker switches {}",
            m.f,
            m.pgm_kbps,
            m.tcp_kbps,
            summary.flows[rep.pgm].acker_switches.len()
        );
        f += m.f / SEEDS as f64;
        pgm_kbps += m.pgm_kbps / SEEDS as f64;
        tcp_kbps += m.tcp_kbps / SEEDS as f64;
        pgm = rep.pgm;
        summaries.push(summary);
    }
    eprintln!("{stem} {edits:?}: mean f {f:.3} over seeds 1..={SEEDS}");
    Smoke {
        f,
        pgm_kbps,
        tcp_kbps,
        summaries,
        addrs,
        pgm,
        from_s,
    }
}

/// Every scenario with a `[reproduce]` table in `scenarios/` (the files `make reproduce`
/// runs; subdirectories such as `compare/` have their own tests) has a smoke test here.
#[test]
fn every_reproduction_row_has_a_smoke_test() {
    let this = include_str!("reproduce_smoke.rs");
    let mut missing = Vec::new();
    for e in std::fs::read_dir(scenarios_dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if text.contains("\n[reproduce]") && !this.contains(&format!("\"{name}\"")) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "rows without a smoke test: {missing:?}");
}

// Fairness benchmark Set 1 (3000 s in the paper; 1000 s here, from 100 s). The benchmark
// notes that at 300 s the unfairness "was not clear", so this one stays longer. With host
// jitter and ns-2's TCP of the benchmark's era (receiver window 20, initial window 2,
// limited transmit, timer restarts) f against Reno is 62% here (published 74%), NewReno 73%
// and SACK 84% (published 92% each). The adaptive timeout makes pgmcc slower than TCP
// (f = 102%; published 96%): its timer restarts only once a repair has crossed the full
// queue (docs/reproduction.md). Asserted as measured, within 0.06: a change of 4 bytes in
// the stream's first packet alone moves these by up to 0.08 (to 64%, 75%, 81% and 110%),
// the spread of 3 seeds of a chaotic system.
#[test]
fn set1_pgmcc_is_close_to_fair_to_reno_and_the_adaptive_timeout_stalls() {
    let reno = smoke("fairness-set1-reno.toml", 1000, 100.0, &[]).f;
    let adaptive = smoke("fairness-set1-reno-adaptive.toml", 1000, 100.0, &[]).f;
    let newreno = smoke("fairness-set1-newreno.toml", 1000, 100.0, &[]).f;
    let sack = smoke("fairness-set1-sack.toml", 1000, 100.0, &[]).f;
    eprintln!("Set 1: Reno {reno:.2} NewReno {newreno:.2} SACK {sack:.2} adaptive {adaptive:.2}");
    assert!((0.56..0.68).contains(&reno), "{reno}");
    assert!((0.67..0.79).contains(&newreno), "{newreno}");
    assert!((0.78..0.90).contains(&sack), "{sack}");
    assert!((0.96..1.16).contains(&adaptive), "{adaptive}");
}

// Set 2, high loss: pgmcc is close to fair to TCP1 (f1 = 78%) and unfair to TCP2 on the 8%
// loss path (f2 = 54%; we measure 48% here). TCP2 gets about half of TCP1 (RTO
// timeouts at 8% loss), so no pgmcc rate is fair to both: the recommended `pgmcc` (TCP's
// slow-start threshold) sits nearer TCP2, the slowest receiver's TCP, than `pgmcc-paper`
// does (docs/pgmcc.md, "Slow start"). (f1 was 1.12 before it compared RTTs in
// milliseconds, docs/pgmcc.md difference 2.)
#[test]
fn set2_high_loss_pgmcc_is_unfair_to_the_high_loss_tcp() {
    let f1 = smoke("fairness-set2-high-f1.toml", 1000, 100.0, &[]).f;
    let f2 = smoke("fairness-set2-high-f2.toml", 1000, 100.0, &[]).f;
    assert!((0.6..1.1).contains(&f1), "{f1}");
    assert!(f2 < 0.7 && f2 < f1 - 0.2, "{f2} vs {f1}");
    let r1 = smoke("fairness-set2-high-f1.toml", 1000, 100.0, &[RECOMMENDED]).f;
    let r2 = smoke("fairness-set2-high-f2.toml", 1000, 100.0, &[RECOMMENDED]).f;
    eprintln!("pgmcc-paper f1 {f1:.2} f2 {f2:.2}; pgmcc f1 {r1:.2} f2 {r2:.2}");
    assert!(r2 > f2 + 0.1 && r2 < 1.0, "recommended f2 {r2} vs {f2}");
    // Measured 1.11 with the stall timeout bounded as Linux bounds TCP's RTO (the 1 s
    // floor gave about 1.01; the difference is not traced).
    assert!((0.96..1.16).contains(&r1), "recommended f1 {r1}");
}

// Set 2, low loss: the benchmark has f1 = 82%, f2 = 85%. We knowingly disagree with the
// paper's token rule: the acker flaps between the two equal receivers and pgmcc gets less
// than either TCP (f1 = 110%, f2 = 123% here, with ns-2's TCP of the era; 140% and 117%
// with ours); under our recommended `pgmcc` (pipe accounting across switches) f1 is 96%.
// Asserted: what we measure.
#[test]
fn set2_low_loss_acker_flapping_costs_pgmcc_paper_not_pgmcc() {
    let f1 = smoke("fairness-set2-low-f1.toml", 1000, 100.0, &[]);
    let f2 = smoke("fairness-set2-low-f2.toml", 1000, 100.0, &[]).f;
    let realign = smoke("fairness-set2-low-f1.toml", 1000, 100.0, &[RECOMMENDED]).f;
    eprintln!(
        "Set 2 low: f1 {:.2} f2 {f2:.2} switches {} recommended f1 {realign:.2}",
        f1.f,
        f1.acker_switches()
    );
    assert!(
        f1.f > 1.0,
        "disagreement with the paper's 82% changed: {}",
        f1.f
    );
    // Since former ackers' ACKs return no tokens under `pgmcc-paper` (issue 19) f2 is 1.15.
    assert!(f2 > 1.05, "disagreement with the paper's 85% changed: {f2}");
    assert!(f1.acker_switches() > 20.0);
    assert!((0.75..1.3).contains(&realign), "{realign}");
}

// Set 3 as first reconstructed (30-packet bottleneck queue). The benchmark: with NAK
// elimination pgmcc gets much more than TCP (f = 23%), and its proposed fixes (random
// suppression; the pgmcc paper's loss-aware rule) should be fairer. We measure pgmcc a little
// ahead of TCP Reno in every variant (f = 77% without an NE, as the benchmark's "similar to
// experiment 1"; 75% with elimination, where the benchmark has 23%; 72% loss-aware and 90%
// probabilistic): MR3 is too little slower than MR1 to hold the acker role throughout (rows'
// explanations), so hiding its NAKs changes little. Asserted: what we measure; no fix
// brings pgmcc below TCP's rate.
#[test]
fn set3_first_reconstruction_pgmcc_is_ahead_in_every_variant() {
    let none = smoke("fairness-set3-no-ne.toml", 1000, 100.0, &[]);
    let supp = smoke("fairness-set3-suppression.toml", 1000, 100.0, &[]);
    let aware = smoke("fairness-set3-loss-aware.toml", 1000, 100.0, &[]).f;
    let prob = smoke("fairness-set3-probabilistic.toml", 1000, 100.0, &[]).f;
    eprintln!(
        "Set 3: none {:.2} (MR3 {:.2}) elimination {:.2} aware {aware:.2} probabilistic {prob:.2}",
        none.f,
        none.acker_share("MR3"),
        supp.f
    );
    // Disagreement: pgmcc is only a little ahead under elimination (published 23%), about as
    // without an NE, and the fixes change that by less than a fifth.
    assert!((0.7..0.85).contains(&supp.f), "{}", supp.f);
    assert!((0.7..0.85).contains(&none.f), "{}", none.f);
    for fix in [aware, prob] {
        assert!(
            fix < 1.0 && (fix - supp.f).abs() < 0.2,
            "{fix} vs {}",
            supp.f
        );
    }
    // MR3 is not clearly the slowest here: even without elimination it holds the acker only
    // part of the time.
    assert!(none.acker_share("MR3") < 0.8, "{}", none.acker_share("MR3"));
}

// Set 3b (5-packet bottleneck queue): MR3 is clearly the slowest receiver. We measure MR3
// as the acker almost throughout with every policy: one NAK of MR3 that escapes elimination
// elects it, and its ACKs (never eliminated) keep it there, so elimination changes nothing
// and neither do the fixes. pgmcc still gets 1.7-2 times TCP's rate (f = 51-59%), through
// Reno's timeouts behind the small queue. Asserted: what we measure (the benchmark expected the acker to
// stay on MR1/MR2 under elimination, and fairness with the fixes).
#[test]
fn set3b_mr3_is_elected_despite_elimination_and_the_fixes_change_nothing() {
    let none = smoke("fairness-set3b-no-ne.toml", 300, 50.0, &[]);
    let supp = smoke("fairness-set3b-suppression.toml", 300, 50.0, &[]);
    let aware = smoke("fairness-set3b-loss-aware.toml", 300, 50.0, &[]);
    let prob = smoke("fairness-set3b-probabilistic.toml", 300, 50.0, &[]);
    for r in [&none, &supp, &aware, &prob] {
        eprintln!("Set 3b: f {:.2} MR3 {:.2}", r.f, r.acker_share("MR3"));
        assert!(r.acker_share("MR3") > 0.9, "{}", r.acker_share("MR3"));
        assert!(r.f < 0.65, "{}", r.f);
    }
    for r in [&aware, &prob] {
        assert!((r.f - supp.f).abs() < 0.08, "{} vs {}", r.f, supp.f);
    }
}

// Set 4: with 200 ms to MR3 the acker switches between far and near receivers and pgmcc's
// throughput becomes "too low", TCP's "much higher" (164% in the Fig. 10 caption). With
// host jitter and ns-2's TCP of the era (receiver window 20) we measure `pgmcc-paper` ahead
// of TCP (f = 0.67) and our recommended `pgmcc` about as much (0.64): the switching penalty
// is not reproduced. Asserted as measured.
#[test]
fn set4_acker_switching_costs_pgmcc_paper_not_pgmcc() {
    let sw = smoke("fairness-set4-switching.toml", 1000, 100.0, &[]);
    let realign = smoke("fairness-set4-switching.toml", 1000, 100.0, &[RECOMMENDED]).f;
    eprintln!(
        "Set 4: pgmcc-paper {:.2} ackers {} pgmcc {realign:.2}",
        sw.f,
        sw.ackers()
    );
    // Without host jitter this run was one phase-locked trajectory where the stalling
    // `pgmcc-paper` got *more* than TCP (f = 0.52); asserted as measured so any change shows.
    assert!((0.6..0.75).contains(&sw.f), "{}", sw.f);
    assert!(sw.ackers() >= 2);
    assert!((0.56..0.72).contains(&realign), "{realign}");
}

// pgmcc paper Fig. 5 (full 300 s: the row measures 120-240 s). While TCP shares L2 the two
// get similar rates (~220 kbit/s each). The acker moves are pinned in tests/fig5.rs.
#[test]
fn fig5_pgmcc_and_tcp_share_l2() {
    let r = smoke("fig5.toml", 300, 120.0, &[]);
    assert!((0.7..1.4).contains(&r.f), "{}", r.f);
    assert!((180.0..300.0).contains(&r.pgm_kbps), "{}", r.pgm_kbps);
}

// pgmcc paper Fig. 3: two pgmcc sessions share a non-lossy bottleneck evenly; on a lossy one
// each rate is set by the loss and the second session does not take from the first. The
// non-lossy run keeps its full 600 s (it is cheap). With host jitter the second session,
// started at 100 s, holds about a quarter more than the first with `pgmcc-paper` (f = 1.25
// over seeds 1-3 here, 1.29 over 5 in the reproduction) and an even share with our
// recommended `pgmcc`; asserted as measured.
#[test]
fn fig3_two_pgmcc_sessions_are_fair_to_each_other() {
    let nonlossy = smoke("paper-fig3-nonlossy.toml", 600, 150.0, &[]).f;
    let recommended = smoke("paper-fig3-nonlossy.toml", 600, 150.0, &[RECOMMENDED]).f;
    let lossy = smoke("paper-fig3-lossy.toml", 400, 150.0, &[]).f;
    assert!((0.8..1.45).contains(&nonlossy), "{nonlossy}");
    assert!((0.8..1.25).contains(&recommended), "{recommended}");
    assert!((0.75..1.3).contains(&lossy), "{lossy}");
}

// pgmcc paper Fig. 4: pgmcc and TCP Reno get approximately the same rate. On the lossy link
// we measure pgmcc somewhat ahead (74% over 5 seeds, Set 1's direction); on the non-lossy
// one the seeds spread widely (86..118%).
#[test]
fn fig4_pgmcc_and_tcp_get_similar_rates() {
    let nonlossy = smoke("paper-fig4-nonlossy.toml", 300, 120.0, &[]).f;
    let lossy = smoke("paper-fig4-lossy.toml", 300, 120.0, &[]).f;
    assert!((0.6..1.6).contains(&nonlossy), "{nonlossy}");
    assert!((0.6..1.2).contains(&lossy), "{lossy}");
}

// pgmcc paper Fig. 6: with receivers at diverse RTTs there is no single TCP-fair rate and
// the acker is one of the receivers, not necessarily the farthest: "in presence of
// suppression ... the selected acker will likely be one of the receivers with the shortest
// RTTs" (paper §4.4). With host jitter we measure pgmcc a little *behind* TCP Reno (f = 107%
// with `pgmcc-paper` and 154% with `pgmcc` over seeds 1-3); without it the same
// scenario had pgmcc at twice TCP's rate (30-37%): which receiver holds the acker role, and
// so the rate, depends on the phase. Open in issue 19; asserted as measured.
#[test]
fn fig6_acker_moves_among_diverse_receivers() {
    let plain = smoke("paper-fig6.toml", 300, 60.0, &[]);
    let realign = smoke("paper-fig6.toml", 300, 60.0, &[RECOMMENDED]);
    assert!(plain.ackers() >= 2 && realign.ackers() >= 2);
    assert!((0.95..1.45).contains(&plain.f), "{}", plain.f);
    assert!((1.15..1.65).contains(&realign.f), "{}", realign.f);
}

// pgmcc paper Fig. 7: 90 more receivers (joining at 300 s in the file, at 150 s here) do not
// change pgmcc's throughput appreciably. That holds under our recommended `pgmcc`. With the
// paper's token rule we knowingly disagree: pgmcc falls far below TCP (f = 390% without
// repairs, 301% with them, over 5 seeds), asserted as measured.
#[test]
fn fig7_ninety_more_receivers_do_not_change_recommended_pgmcc() {
    let join = [("join = \"300s\"", "join = \"150s\"")];
    let realign = smoke(
        "paper-fig7-unreliable.toml",
        300,
        170.0,
        &[join[0], RECOMMENDED],
    );
    let before = realign.pgm_between(50.0, 150.0);
    let after = realign.pgm_between(170.0, 300.0);
    eprintln!("fig7 realign: pgmcc {before:.0} kbit/s with 10, {after:.0} with 100 receivers");
    assert!((after / before - 1.0).abs() < 0.25, "{before} -> {after}");
    assert!((0.8..1.25).contains(&realign.f), "{}", realign.f);
    let unreliable = smoke("paper-fig7-unreliable.toml", 300, 170.0, &join);
    let repairs = smoke("paper-fig7.toml", 300, 170.0, &join);
    assert!(unreliable.f > 2.0, "{}", unreliable.f);
    assert!(repairs.f > 2.0, "{}", repairs.f);
    assert!(unreliable.tcp_kbps > 600.0, "{}", unreliable.tcp_kbps);
}

// pgmcc paper Fig. 6: receivers at 104-502 ms of base RTT and a TCP at 202 ms behind one
// bottleneck, every loss at the bottleneck. With no network element suppressing NAKs the
// slowest receiver by the TCP equation is the farthest (all see the same loss), and the
// recommended `pgmcc` keeps it as the acker; pgmcc then runs at the TCP-equivalent rate of
// a path 0.3 s longer than TCP's, so TCP gets more (f = 1.48 here, 1.58 over seeds 1-5 in
// the reproduction; the RTT ratio with TCP's SRTT of 0.5-0.8 s predicts about 1.4).
#[test]
fn fig6_the_farthest_receiver_clocks_the_session() {
    let r = smoke("paper-fig6.toml", 600, 60.0, &[RECOMMENDED]);
    eprintln!(
        "Fig. 6, pgmcc: f {:.2}, PR4 acker {:.2}",
        r.f,
        r.acker_share("PR4")
    );
    assert!(r.acker_share("PR4") > 0.95, "{}", r.acker_share("PR4"));
    assert!((1.3..1.9).contains(&r.f), "{}", r.f);
}
