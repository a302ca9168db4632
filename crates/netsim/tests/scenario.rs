//! Scenario files: parsing, errors that name file/line/key, runs, and determinism.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use netsim::run::{mean_between, run, write};
use netsim::scenario::parse;

const TWO_PATHS: &str = r#"
name = "two-paths"
description = "pgmcc with receivers behind 500 and 400 kbit/s"
seed = 3
duration = "90s"
sample = "1s"

[[node]]
name = "S"
[[node]]
name = "R"
[[node]]
name = "A"
[[node]]
name = "B"

[[link]]
from = "S"
to = "R"
rate = "10Mbit"
delay = "1ms"
queue = "100p"

[[link]]
from = "R"
to = "A"
rate = "400kbit"
delay = "50ms"
queue = "20KB"

[[link]]
from = "R"
to = "B"
rate = "500kbit"
delay = "50ms"
queue = "30p"

[[flow]]
name = "pgm"
kind = "pgmcc"
from = "S"
[[flow.receiver]]
node = "B"
[[flow.receiver]]
node = "A"
join = "30s"
"#;

#[test]
fn a_scenario_runs_and_measures_the_acker_move() {
    let mut sc = parse("two-paths.toml", TWO_PATHS, "x", None).unwrap();
    let s = run(&mut sc, |_| {});
    let f = &s.flows[0];
    let before = mean_between(&s, &f.series_kbps, 5.0, 30.0);
    let after = mean_between(&s, &f.series_kbps, 40.0, 90.0);
    eprintln!(
        "before {before:.0} after {after:.0} switches {:?}",
        f.acker_switches
    );
    assert!(before > 400.0, "{before}");
    assert!((300.0..=385.0).contains(&after), "{after}");
    assert!(!f.acker_switches.is_empty());
    assert_eq!(s.times.len(), 90);
    assert_eq!(s.spins, 0, "the livelock guard fired");
    let b = &f.receivers[0];
    assert_eq!(b.node, "B");
    assert!(b.bytes > 4_000_000);
    // A's 400 kbit/s link is busy from its join at 30 s: about 60 of 90 seconds.
    assert!(s
        .links
        .iter()
        .any(|l| l.from == "R" && l.to == "A" && l.utilisation > 0.6));
    // Queue drops are attributed to the flow whose packet was dropped: the one flow here
    // lost every packet the queues dropped, and its per-sample series adds up to its total.
    let link_drops: u64 = s.links.iter().map(|l| l.queue_drops).sum();
    assert!(link_drops > 0, "the 400 and 500 kbit/s queues overflow");
    assert_eq!(f.queue_drops, link_drops);
    assert_eq!(f.drops.iter().sum::<u64>(), link_drops);
    for l in &s.links {
        let by_flow: u64 = l.queue_drops_by_flow.values().sum();
        assert_eq!(by_flow, l.queue_drops, "{} -> {}", l.from, l.to);
    }
}

#[test]
fn same_scenario_and_seed_give_byte_identical_outputs() {
    let dir = std::env::temp_dir().join(format!("netsim-det-{}", std::process::id()));
    let mut files = Vec::new();
    for k in 0..2 {
        let mut sc = parse("two-paths.toml", TWO_PATHS, "x", None).unwrap();
        let s = run(&mut sc, |_| {});
        let d = dir.join(k.to_string());
        write(&s, &d).unwrap();
        files.push((
            std::fs::read(d.join("summary.json")).unwrap(),
            std::fs::read(d.join("timeseries.csv")).unwrap(),
        ));
    }
    assert!(
        files[0] == files[1],
        "outputs differ between identical runs"
    );
    // A different seed gives a different run.
    let mut sc = parse("two-paths.toml", TWO_PATHS, "x", Some(99)).unwrap();
    let s = run(&mut sc, |_| {});
    let d = dir.join("other");
    write(&s, &d).unwrap();
    assert_ne!(std::fs::read(d.join("summary.json")).unwrap(), files[0].0);
}

fn error_of(src: &str) -> String {
    parse("bad.toml", src, "x", None).unwrap_err().to_string()
}

/// Asserts that `src` is refused with a message containing every one of `words`.
fn assert_refused(src: &str, words: &[&str]) {
    let e = error_of(src);
    assert!(words.iter().all(|w| e.contains(w)), "{e}");
}

/// 1-based line of the first occurrence of `needle`.
fn line_of(src: &str, needle: &str) -> usize {
    src[..src.find(needle).unwrap()].matches('\n').count() + 1
}

#[test]
fn errors_name_file_line_and_key() {
    let unknown_key = TWO_PATHS.replace("sample = \"1s\"", "sample = \"1s\"\nspeed = 3");
    let e = error_of(&unknown_key);
    let at = format!("bad.toml:{}:", line_of(&unknown_key, "speed"));
    assert!(e.starts_with(&at) && e.contains("speed"), "{e}");

    let bad_rate = TWO_PATHS.replace("rate = \"400kbit\"", "rate = \"400 furlongs\"");
    let e = error_of(&bad_rate);
    let at = format!("bad.toml:{}: link.rate:", line_of(&bad_rate, "furlongs"));
    assert!(e.starts_with(&at), "{e}");

    let bad_node = TWO_PATHS.replace("node = \"A\"", "node = \"Z\"");
    let e = error_of(&bad_node);
    assert!(
        e.contains("flow.receiver.node") && e.contains("no node named `Z`"),
        "{e}"
    );
    let at = format!("bad.toml:{}:", line_of(&bad_node, "\"Z\""));
    assert!(e.starts_with(&at), "{e}");

    let bad_kind = TWO_PATHS.replace("kind = \"pgmcc\"", "kind = \"quic\"");
    assert!(error_of(&bad_kind).contains("flow.kind"));

    // Other implementations' programs are flows only `pgmcc emu` runs.
    for kind in ["uftp", "norm", "openpgm"] {
        let real = TWO_PATHS.replace("kind = \"pgmcc\"", &format!("kind = \"{kind}\""));
        let e = error_of(&real);
        assert!(
            e.contains("flow.kind") && e.contains("run this file with `pgmcc emu`"),
            "{e}"
        );
    }

    let bad_c = TWO_PATHS.replace("kind = \"pgmcc\"", "kind = \"pgmcc\"\nc = 1.5");
    assert!(error_of(&bad_c).contains("flow.c"));

    let e = error_of("duration = 5");
    assert!(e.starts_with("bad.toml:1:"), "{e}");
}

#[test]
fn pgmcc_is_pgmcc_paper_with_its_knobs_and_none_is_kind_pgm() {
    // The preset and the knob spelled out run the same controller: the same summary, byte
    // for byte.
    let summary = |src: &str| {
        let mut sc = parse("two-paths.toml", src, "x", None).unwrap();
        serde_json::to_string(&run(&mut sc, |_| {})).unwrap()
    };
    let with = |cc: &str| TWO_PATHS.replace("kind = \"pgmcc\"", &format!("kind = \"pgmcc\"\n{cc}"));
    let recommended = with("cc = \"pgmcc\"");
    assert_eq!(
        summary(TWO_PATHS),
        summary(&recommended),
        "pgmcc is the default"
    );
    let paper_piped =
        with("cc = \"pgmcc-paper\"\naccounting = \"pipe\"\nrecovery = \"hold\"\nreport_bar = true\nslow_start = \"adaptive\"\nelection = \"like-with-like\"\nadaptive_timeout = \"linux\"\nrtt_unit = \"ms\"");
    assert_eq!(summary(&recommended), summary(&paper_piped));
    // ... and not the paper's token rule (an acker switch at 30 s).
    let paper = with("cc = \"pgmcc-paper\"");
    assert_ne!(summary(&paper), summary(&recommended));
    assert_eq!(
        summary(&paper),
        summary(&with(
            "accounting = \"tokens\"\nrecovery = \"grow\"\nreport_bar = false\nslow_start = \"fixed\"\nloss_report = \"filter\"\nelection = \"paper\"\nadaptive_timeout = false\nrtt_unit = \"packets\""
        ))
    );

    let e = error_of(&with("accounting = \"credit\""));
    assert!(e.contains("flow.accounting") && e.contains("tokens"), "{e}");
    let e = error_of(&with("recovery = \"freeze\""));
    assert!(e.contains("flow.recovery") && e.contains("hold"), "{e}");
    let e = error_of(&with("slow_start = \"tcp\""));
    assert!(
        e.contains("flow.slow_start") && e.contains("adaptive"),
        "{e}"
    );
    // Receivers asked for their loss intervals report differently: a different run.
    assert_ne!(
        summary(&with("loss_report = \"intervals\"")),
        summary(&recommended)
    );
    assert_eq!(
        summary(&with("loss_report = \"filter\"")),
        summary(&recommended)
    );
    let e = error_of(&with("loss_report = \"soon\""));
    assert!(
        e.contains("flow.loss_report") && e.contains("intervals"),
        "{e}"
    );
    let e = error_of(&with("election = \"worst\""));
    assert!(
        e.contains("flow.election") && e.contains("like-with-like"),
        "{e}"
    );
    let e = error_of(&with("acker_reports = \"maybe\""));
    assert!(
        e.contains("flow.acker_reports") && e.contains("check"),
        "{e}"
    );
    let e = error_of(&with("cc = \"tfmcc\"\nacker_reports = \"check\""));
    assert!(
        e.contains("flow.acker_reports") && e.contains("tfmcc"),
        "{e}"
    );
    // Repairs in the window: off in both presets, a knob that changes the run when on.
    assert_eq!(
        summary(&with("repair_accounting = \"outside\"")),
        summary(&recommended)
    );
    assert_ne!(
        summary(&with("repair_accounting = \"in-window\"")),
        summary(&recommended)
    );
    assert_refused(
        &with("repair_accounting = \"free\""),
        &["flow.repair_accounting", "in-window"],
    );
    assert_refused(
        &with("cc = \"tfmcc\"\nrepair_accounting = \"in-window\""),
        &["flow.repair_accounting", "tfmcc"],
    );
    // Under the token rule nothing counts packets in flight: refused, not ignored.
    assert_refused(
        &with("cc = \"pgmcc-paper\"\nrepair_accounting = \"in-window\""),
        &["flow.repair_accounting", "pipe"],
    );
    assert_refused(
        &with("accounting = \"tokens\"\nrepair_accounting = \"in-window\""),
        &["flow.repair_accounting", "pipe"],
    );
    let liar = TWO_PATHS.replacen("node = \"A\"", "node = \"A\"\nclaim_loss = 1.5", 1);
    let e = error_of(&liar);
    assert!(
        e.contains("flow.receiver.claim_loss") && e.contains("0 to 1"),
        "{e}"
    );
    let e = error_of(&with("repair_budget = 0.0"));
    assert!(e.contains("flow.repair_budget") && e.contains("inf"), "{e}");
    let e = error_of(&with("repair_budget = nan"));
    assert!(e.contains("flow.repair_budget"), "{e}");
    let e = error_of(&with("nak_source_share = -1.0"));
    assert!(
        e.contains("flow.nak_source_share") && e.contains("inf"),
        "{e}"
    );
    let e = error_of(&with("fec = 48"));
    assert!(e.contains("flow.fec") && e.contains("power of two"), "{e}");
    assert_refused(&with("txw_sqns = 0"), &["flow.txw_sqns", "1 to 1048576"]);
    assert_refused(&with("txw_sqns = 2000000"), &["flow.txw_sqns"]);
    assert_refused(&with("hold_for_naks = 1"), &["expected a boolean"]);
    assert_refused(&with("nak_backoff = \"soon\""), &["flow.nak_backoff"]);
    // A fixed NAK back-off is accepted and reaches the receivers: it changes this run.
    assert_ne!(
        summary(&recommended),
        summary(&with("cc = \"pgmcc\"\nnak_backoff = \"30ms\""))
    );
    assert_refused(
        &with("proactive_parity = 80"),
        &["flow.proactive_parity", "group size (64)"],
    );
    assert_refused(
        &with("fec = 0\nproactive_parity = 2"),
        &["flow.proactive_parity", "set `fec`"],
    );
    let e = error_of(&with("report_bar = 1"));
    assert!(e.contains("expected a boolean"), "{e}");
    // FEC is on by default (groups of 64); `fec = 0` turns it off, and changes this run.
    assert_eq!(
        summary(&recommended),
        summary(&with("cc = \"pgmcc\"\nfec = 64"))
    );
    assert_ne!(
        summary(&recommended),
        summary(&with("cc = \"pgmcc\"\nfec = 0"))
    );
    // A budget of inf is none at all: here the default budget only spaces the repairs (at
    // most a window at once), so without it the run differs by their timing and nothing else.
    let outcome = |src: &str| {
        let mut sc = parse("two-paths.toml", src, "x", None).unwrap();
        let s = run(&mut sc, |_| {});
        let f = &s.flows[0];
        (
            f.bytes,
            f.receivers.iter().map(|r| r.bytes).collect::<Vec<_>>(),
        )
    };
    let unbudgeted = with("cc = \"pgmcc\"\nrepair_budget = inf");
    assert_ne!(summary(&recommended), summary(&unbudgeted));
    assert_eq!(outcome(&recommended), outcome(&unbudgeted));
    // The stall timeout: `true` names the benchmark's rule, `false` the fixed 3 s, and
    // "draft" (every ACK of new data restarts the timer) a third, "linux" (the draft's,
    // bounded as Linux bounds TCP's RTO; `pgmcc`'s own) a fourth, refused misspelt. (Which rule each value selects on each preset: the unit test
    // `adaptive_timeout_names_the_same_rule_under_both_presets`.)
    assert_eq!(
        summary(&with("adaptive_timeout = true")),
        summary(&with("adaptive_timeout = \"benchmark\""))
    );
    assert_eq!(
        summary(&recommended),
        summary(&with("cc = \"pgmcc\"\nadaptive_timeout = \"linux\""))
    );
    assert_refused(
        &with("adaptive_timeout = \"rfc\""),
        &["flow.adaptive_timeout", "\"draft\""],
    );
    let e = error_of(&with("realign_tokens = true"));
    assert!(
        e.contains("flow.realign_tokens") && e.contains("retired"),
        "{e}"
    );

    let none = with("cc = \"none\"");
    let e = error_of(&none);
    assert!(e.contains("flow.cc") && e.contains("kind = \"pgm\""), "{e}");

    let unknown = with("cc = \"tfrc\"");
    let e = error_of(&unknown);
    assert!(e.contains("use pgmcc, pgmcc-paper, tfmcc"), "{e}");
}

#[test]
fn host_jitter_is_a_named_key_off_by_default_and_changes_the_run() {
    let e =
        error_of(&TWO_PATHS.replace("sample = \"1s\"", "sample = \"1s\"\njitter = \"5 parsecs\""));
    assert!(e.contains("jitter"), "{e}");
    let mean = |src: &str| {
        let mut sc = parse("j.toml", src, "x", None).unwrap();
        let s = run(&mut sc, |_| {});
        mean_between(&s, &s.flows[0].series_kbps, 30.0, 90.0)
    };
    let off = mean(TWO_PATHS);
    let explicit_off =
        mean(&TWO_PATHS.replace("sample = \"1s\"", "sample = \"1s\"\njitter = \"off\""));
    assert_eq!(off, explicit_off, "the default is off");
    let auto = mean(&TWO_PATHS.replace("sample = \"1s\"", "sample = \"1s\"\njitter = \"auto\""));
    assert_ne!(off, auto, "jitter moves packets in time");
    // Same controller, same bottleneck: the rate stays within 15% of the unjittered run.
    assert!(
        (auto / off - 1.0).abs() < 0.15,
        "off {off:.0} auto {auto:.0}"
    );
}

/// The emulator's network (`load_network`) delays what real hosts send by the file's host
/// jitter, as the simulator delays its agents' packets: without it an emulated drop-tail
/// queue keeps the phase effects the key is there to break.
#[test]
fn the_emulated_network_carries_the_files_host_jitter() {
    use netsim::packet::{Dest, Packet, Payload};
    use pgmcc::{Duration, Instant};
    let dir = std::env::temp_dir().join(format!("netsim-jitter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Frames injected at once at S, counted as they finish crossing S->R (1 Gbit/s: 1 us
    // each): all of them within 1 ms unless the host holds them back.
    let crossed_by_1ms = |jitter: &str| {
        let path = dir.join(format!("j-{jitter}.toml"));
        let src = TWO_PATHS
            .replace("rate = \"10Mbit\"", "rate = \"1Gbit\"")
            .replace(
                "sample = \"1s\"",
                &format!("sample = \"1s\"\njitter = \"{jitter}\""),
            );
        std::fs::write(&path, src).unwrap();
        let mut net = netsim::scenario::load_network(&path, Some(1)).unwrap();
        let (s, b) = (0, 3);
        let (from, to) = (net.sim.addr(s), net.sim.addr(b));
        for _ in 0..20 {
            net.sim.inject(
                s,
                Packet {
                    src: from,
                    dst: Dest::Unicast(to),
                    size: 100,
                    flow: 1,
                    payload: Payload::Frame(std::sync::Arc::from([0u8; 4].as_slice())),
                },
            );
        }
        net.sim.advance(Instant::ZERO + Duration::from_millis(1));
        net.sim.link(0).stats.packets
    };
    assert_eq!(crossed_by_1ms("off"), 20);
    // Uniform in [0, 5 ms] and in order: a fifth of them by 1 ms, give or take.
    let held = crossed_by_1ms("5ms");
    assert!((1..=10).contains(&held), "{held} of 20 crossed by 1 ms");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_tcp_model_keys_of_ns2_are_checked_and_only_for_tcp() {
    let keys = [
        "rwnd",
        "initial_window",
        "partial_ack_restarts_timer",
        "fast_retransmit_restarts_timer",
    ];
    // The file sets them already: start from it without them.
    let base: String = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/fairness-set1-newreno.toml"),
    )
    .unwrap()
    .lines()
    .filter(|l| !keys.iter().any(|k| l.starts_with(&format!("{k} = "))))
    .map(|l| format!("{l}\n"))
    .collect();
    let tcp = |extra: &str| {
        base.replacen(
            "kind = \"tcp-newreno\"\n",
            &format!("kind = \"tcp-newreno\"\n{extra}\n"),
            1,
        )
    };
    parse(
        "ok.toml",
        &tcp(
            "rwnd = 20\ninitial_window = 2\npartial_ack_restarts_timer = true\n\
              fast_retransmit_restarts_timer = true",
        ),
        "x",
        None,
    )
    .unwrap();
    assert_refused(&tcp("rwnd = 0"), &["flow.rwnd", "1 to 1000000"]);
    assert_refused(&tcp("initial_window = 0"), &["flow.initial_window"]);
    let sack = base.replacen("kind = \"tcp-newreno\"", "kind = \"tcp-sack\"", 1);
    let sack = sack.replacen(
        "kind = \"tcp-sack\"\n",
        "kind = \"tcp-sack\"\npartial_ack_restarts_timer = true\n",
        1,
    );
    assert_refused(&sack, &["flow.partial_ack_restarts_timer", "tcp-newreno"]);
    let pgm = base.replacen(
        "cc = \"pgmcc-paper\"\n",
        "cc = \"pgmcc-paper\"\nrwnd = 20\n",
        1,
    );
    assert_ne!(pgm, base);
    assert_refused(&pgm, &["flow.rwnd", "only for TCP flows"]);
}

#[test]
fn timestamps_is_a_key_of_tcp_flows_only() {
    let base = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/fairness-set1-sack.toml"),
    )
    .unwrap();
    let with = |after: &str| base.replacen(after, &format!("{after}timestamps = true\n"), 1);
    let tcp = with("kind = \"tcp-sack\"\n");
    assert_ne!(tcp, base);
    let sc = parse("ok.toml", &tcp, "x", None).unwrap();
    let on = |sc: &netsim::scenario::Scenario| {
        sc.flows
            .iter()
            .filter_map(|f| {
                let a = sc.sim.agent(f.sender).as_any();
                a.downcast_ref::<netsim::agents::tcp::TcpSender>()
            })
            .map(|tx| tx.config().timestamps)
            .collect::<Vec<_>>()
    };
    assert_eq!(on(&sc), [true]);
    let plain = parse("ok.toml", &base, "x", None).unwrap();
    assert_eq!(on(&plain), [false], "off by default");
    let pgm = with("cc = \"pgmcc-paper\"\n");
    assert_ne!(pgm, base);
    assert_refused(&pgm, &["flow.timestamps", "only for TCP flows"]);
}

/// docs/pgmcc.md, "Several TCP flows at one queue": beside two TCP SACK flows at a
/// packet-counted drop-tail queue, pgmcc's share follows its wire size, and a TCP flow given
/// pgmcc's 1532-byte packets takes the same excess share (f = mean TCP / subject, 300-600 s,
/// seed 1: 0.65 and 0.61; 1.15, 1.03, 1.03 at equal sizes, seeds 1-3).
#[test]
fn beside_several_tcp_flows_the_share_follows_the_packet_size() {
    let f_seed = |file: &str, seed: u64| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/dumbbell")
            .join(file);
        let mut sc = netsim::scenario::load(&path, Some(seed)).expect(file);
        let s = run(&mut sc, |_| {});
        let rate = |name: &str| {
            let fl = s.flows.iter().find(|f| f.name == name).expect(name);
            mean_between(&s, &fl.series_kbps, 300.0, 600.0)
        };
        (rate("tcp1") + rate("tcp2")) / 2.0 / rate("pgm")
    };
    let f = |file: &str| f_seed(file, 1);
    let big = f("two-tcp-pgmcc-1532B.toml");
    let control = f("two-tcp-control-1532B.toml");
    assert!((0.6..0.7).contains(&big), "pgmcc 1532 B: f = {big}");
    assert!((0.56..0.66).contains(&control), "TCP 1532 B: f = {control}");
    // Equal sizes give exact ties at the queue, and the order they break in moves f by
    // seed (1.15, 1.03, 1.03 for seeds 1-3): judged on the mean.
    let equal: Vec<f64> = (1..=3)
        .map(|seed| f_seed("two-tcp-pgmcc-1500B.toml", seed))
        .collect();
    let mean = equal.iter().sum::<f64>() / 3.0;
    assert!(
        (1.0..1.1).contains(&mean) && equal.iter().all(|f| (0.95..1.2).contains(f)),
        "pgmcc 1500 B: f = {equal:?}"
    );
}

#[test]
fn repairs_that_wait_for_the_window_never_spin_the_source() {
    // 3% loss on B's path: repairs queue behind a full window all run long. While they wait,
    // the source must sleep until the controller makes room (its ACKs), not ask to be woken
    // at once again and again (the livelock guard counts such wake-ups).
    let text = TWO_PATHS
        .replace(
            "from = \"S\"\n[[flow.receiver]]",
            "from = \"S\"\nrepair_accounting = \"wait\"\n[[flow.receiver]]",
        )
        .replace("queue = \"30p\"", "queue = \"30p\"\nloss = 0.03")
        .replace("duration = \"90s\"", "duration = \"30s\"");
    assert!(text.contains("repair_accounting = \"wait\"") && text.contains("loss = 0.03"));
    let mut sc = parse("two-paths-wait.toml", &text, "x", None).unwrap();
    let s = run(&mut sc, |_| {});
    assert_eq!(s.spins, 0, "the livelock guard fired");
    let counters = s.flows[0].report.counters();
    let get = |k: &str| counters.iter().find(|c| c.0 == k).map_or(0.0, |c| c.1);
    let (odata, rdata) = (get("odata_packets"), get("rdata_packets"));
    eprintln!("odata {odata} rdata {rdata} events {}", s.events);
    assert!(
        rdata > 0.02 * odata,
        "{rdata} repairs for {odata} data packets"
    );
    assert!(s.flows[0].receivers[0].bytes > 800_000);
}
