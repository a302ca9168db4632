//! The controller comparison (`scenarios/compare/matrix.toml`, issue 10): every topology
//! builds under every controller, a shortened Fig. 5 run gives sane metrics, and bad matrix
//! files are rejected with the key at fault.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use netsim::compare::{build, load_matrix, measure};
use netsim::run::run;

fn matrix_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/compare/matrix.toml")
}

#[test]
fn every_topology_builds_under_every_controller() {
    let m = load_matrix(&matrix_path()).unwrap();
    assert!(m.controllers.iter().any(|c| c == "pgmcc"));
    assert!(m.topologies.len() >= 5, "{}", m.topologies.len());
    for t in &m.topologies {
        for c in &m.controllers {
            let sc = build(t, c, 1).unwrap_or_else(|e| panic!("{} / {c}: {e}", t.label));
            assert!(sc.reproduce.is_none());
            assert!(sc.name.ends_with(c.as_str()));
        }
    }
}

#[test]
fn fig5_shortened_gives_sane_metrics_for_pgmcc_and_tfmcc() {
    let m = load_matrix(&matrix_path()).unwrap();
    let mut t = m
        .topologies
        .iter()
        .find(|t| t.label.starts_with("Fig. 5"))
        .unwrap()
        .clone();
    // TCP from 120 s to 240 s; measure 130-240 s of a 240-s run, the step phase to 240 s.
    // Not shorter: with host jitter, TCP Reno's first loss episode sometimes times out, pgmcc
    // then overruns L1 and PR1 is the acker for 10-20 s (docs/pgmcc.md), so a 50-s window
    // can be all excursion.
    t.duration = Some("240s".into());
    t.to_s = Some(240.0);
    t.step = Some((120.0, 240.0));
    for cc in ["pgmcc", "tfmcc"] {
        let mut fs = Vec::new();
        for seed in 1..=SEEDS {
            let mut sc = build(&t, cc, seed).unwrap();
            let s = run(&mut sc, |_| {});
            let m = measure(&s, &t);
            eprintln!("{cc} seed {seed}: {m:?}, {} spins", s.spins);
            fs.push(m.f);
            // Not for tfmcc: its sender's token deadline, (1 - tokens) / rate converted to whole
            // nanoseconds, can land a fraction of a nanosecond before the token is complete, so
            // poll_timeout() returns the current instant again (about 4000 times in 300 s of
            // Fig. 5); the guard sends that packet 1 µs late. Pseudofed shares the rounding.
            if cc == "pgmcc" {
                assert_eq!(s.spins, 0, "{cc}: the livelock guard fired");
            }
            // pgmcc's acker ACKs every data packet in the simulator: about one feedback packet
            // per data packet, plus NAKs. TFMCC's CLR reports once per RTT and the others once
            // per feedback round at most: a fraction of that.
            let fb = m.feedback_per_data;
            match cc {
                "pgmcc" => assert!(fb > 0.9 && fb < 1.5, "{cc}: {m:?}"),
                _ => assert!(fb > 0.01 && fb < 0.5, "{cc}: {m:?}"),
            }
            // Both find their share of L2 within the phase.
            assert!(m.settle_s.is_some_and(|s| s < 60.0), "{cc}: {m:?}");
        }
        // Both are TCP-friendly on L2 on average: f within a factor of two. One seed is not
        // enough: each TCP Reno timeout at L2's 30-slot queue lets the multicast flow take
        // more of L2 (pgmcc, seed 1: 13 timeouts in the run, f = 0.37; seed 5: 3, f = 1.04).
        let mean = fs.iter().sum::<f64>() / fs.len() as f64;
        assert!(mean > 0.5 && mean < 2.0, "{cc}: f per seed {fs:?}");
    }
}

/// Seeds per controller in `fig5_shortened_gives_sane_metrics_for_pgmcc_and_tfmcc`.
const SEEDS: u64 = 5;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn bad_matrices_name_the_key_at_fault() {
    let dir = std::env::temp_dir().join(format!("netsim-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/fig5.toml"),
    )
    .unwrap();
    write(&dir, "fig5.toml", &base);
    let topo = "[[topology]]\nlabel = \"x\"\nbase = \"fig5.toml\"\nfrom = \"10s\"\n";
    let cases = [
        ("controllers = []\n".to_string() + topo, "controllers"),
        (
            "controllers = [\"pgmcc\"]\n[[topology]]\nlabel = \"x\"\nbase = \"nope.toml\"\nfrom = \"1s\"\n"
                .to_string(),
            "topology.base",
        ),
        (
            "controllers = [\"pgmcc\"]\n".to_string() + topo + "step = \"5s\"\n",
            "topology.settle_until",
        ),
        (
            "controllers = [\"pgmcc\"]\n".to_string() + topo + "step = \"5s\"\nsettle_until = \"2s\"\n",
            "topology.settle_until",
        ),
        (
            "controllers = [\"pgmcc\"]\n".to_string() + topo + "from = \"soon\"\n",
            "toml",
        ),
        ("controllers = [\"pgmcc\"]\n".to_string() + &topo.replace("10s", "soon"), "topology.from"),
        ("controllers = [\"pgmcc\"]\nbogus = 1\n".to_string() + topo, "toml"),
    ];
    for (i, (text, key)) in cases.iter().enumerate() {
        let p = write(&dir, &format!("m{i}.toml"), text);
        let e = load_matrix(&p).unwrap_err();
        assert_eq!(e.key, *key, "case {i}: {e}");
    }
    // A controller that does not exist fails when the scenario is built, naming flow.cc.
    let p = write(
        &dir,
        "ok.toml",
        &("controllers = [\"nonsense\"]\n".to_string() + topo),
    );
    let m = load_matrix(&p).unwrap();
    let e = build(&m.topologies[0], "nonsense", 1).unwrap_err();
    assert_eq!(e.key, "flow.cc", "{e}");
    assert!(e.message.contains("nonsense"), "{e}");
    // Naming a flow that is not there is an error, not a silent no-op.
    let mut t = m.topologies[0].clone();
    t.flows = vec!["no-such-flow".into()];
    assert_eq!(build(&t, "pgmcc", 1).unwrap_err().key, "flow");
    std::fs::remove_dir_all(&dir).ok();
}
