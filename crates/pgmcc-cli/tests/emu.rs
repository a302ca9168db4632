//! `pgmcc emu` validated against what its scenario says (issue 23 item 1): delay, random
//! loss, rate, and multicast along the source tree, each measured by probes running in the
//! emulated hosts (`scripts/emu-probe.py`). Needs root; without it each test returns early
//! and reports itself skipped (`skip` in tests/common). Every packet stays inside the
//! namespaces the emulator creates; every probe is bounded in packets and seconds.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::*;

/// A running `pgmcc emu --for SECONDS` on a scenario, its namespaces `PREFIX-NODE`.
struct Emu {
    child: Option<Child>,
    prefix: String,
    stats: PathBuf,
    _dir: tempfile::TempDir,
}

impl Emu {
    /// Starts the emulation and waits for its "ready" line; `None` (test skipped) without root.
    fn start(name: &str, scenario: &str, seconds: u32) -> Option<Emu> {
        if !is_root() {
            skip(
                &current_test(name),
                "needs root to create network namespaces (CI runs as root)",
            );
            return None;
        }
        let prefix = format!("pgmcc-emutest-{name}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("scenario.toml");
        std::fs::write(&file, scenario).unwrap();
        let stats = dir.path().join("stats.json");
        let mut child = Command::new(pgmcc())
            .arg("emu")
            .arg(&file)
            .args(["--prefix", &prefix, "--for", &format!("{seconds}s")])
            .arg("--stats")
            .arg(&stats)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        loop {
            match lines.next() {
                Some(Ok(l)) if l.starts_with("ready:") => break,
                Some(Ok(_)) => {}
                _ => panic!("pgmcc emu ended before it was ready: {:?}", child.wait()),
            }
        }
        // The rest of its output (the final counters) goes to the test's log.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(|l| eprintln!("{l}")));
        Some(Emu {
            child: Some(child),
            prefix,
            stats,
            _dir: dir,
        })
    }

    /// `emu-probe.py ARGS` in node `node`'s namespace.
    fn probe(&self, node: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            &format!("{}-{node}", self.prefix),
            "python3",
        ])
        .arg(repo().join("scripts/emu-probe.py"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        c
    }

    /// Starts a counting probe and waits until it listens (its group joined).
    fn counter(&self, node: &str, spec: &str, seconds: u32) -> Child {
        let mut c = self
            .probe(node, &["count", spec, &seconds.to_string()])
            .spawn()
            .unwrap();
        let mut first = String::new();
        let mut out = BufReader::new(c.stdout.as_mut().unwrap());
        out.read_line(&mut first).unwrap();
        assert!(first.contains("listening"), "count probe: {first}");
        c
    }

    /// Stops the emulation (SIGTERM, as Ctrl-C would) and reads its counters.
    fn finish(mut self, limit: Duration) -> serde_json::Value {
        let child = self.child.take().unwrap();
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        finish_ok(child, limit, "pgmcc emu");
        stats(&self.stats)
    }
}

impl Drop for Emu {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SIGTERM lets it remove its namespaces; SIGKILL after 5 s if it does not.
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let end = Instant::now() + Duration::from_secs(5);
            while Instant::now() < end && c.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        // Whatever is left (a killed emulator) goes too.
        let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
        for ns in String::from_utf8_lossy(&list.stdout).lines() {
            let ns = ns.split_whitespace().next().unwrap_or("");
            if ns == self.prefix || ns.starts_with(&format!("{}-", self.prefix)) {
                let _ = Command::new("ip").args(["netns", "del", ns]).status();
            }
        }
    }
}

fn last_json(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The link `from -> to` in the emulator's counters.
fn link<'a>(stats: &'a serde_json::Value, from: &str, to: &str) -> &'a serde_json::Value {
    stats["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["from"] == from && l["to"] == to)
        .unwrap()
}

/// Serialisation time of `bytes` at `bps`, in milliseconds.
fn tx_ms(bytes: f64, bps: f64) -> f64 {
    bytes * 8.0 / bps * 1e3
}

#[test]
fn configured_delays_give_the_measured_rtt() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Four separate pairs measured at once: one-way 0 ms is the control (what the hosts' stacks,
    // the TAP devices and the Python prober add by themselves), then 5, 100 and 400 ms.
    let delays = [0.0, 5.0, 100.0, 400.0];
    let mut scenario = String::from("duration = \"20s\"\n");
    for (i, d) in delays.iter().enumerate() {
        scenario += &format!(
            "[[node]]\nname = \"a{i}\"\n[[node]]\nname = \"b{i}\"\n[[link]]\nfrom = \"a{i}\"\nto = \"b{i}\"\nrate = \"100Mbit/s\"\ndelay = \"{d}ms\"\nqueue = \"100p\"\n"
        );
    }
    let Some(emu) = Emu::start("rtt", &scenario, 14) else {
        return;
    };
    let echoes: Vec<Child> = (0..delays.len())
        .map(|i| {
            emu.probe(&format!("b{i}"), &["echo", "9000", "11"])
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // 0 and 5 ms: 100 samples; 100 ms: 20; 400 ms: 8 (every run under 10 s).
    let counts = [100, 100, 20, 8];
    let clients: Vec<Child> = (0..delays.len())
        .map(|i| {
            let addr = format!("10.0.0.{}", 2 * i + 2);
            emu.probe(
                &format!("a{i}"),
                &["rtt", &addr, "9000", &counts[i].to_string(), "20"],
            )
            .spawn()
            .unwrap()
        })
        .collect();
    let mut control = None;
    for ((d, client), n) in delays.iter().zip(clients).zip(counts) {
        let r = last_json(&finish_ok(client, Duration::from_secs(12), "rtt probe"));
        // A 12-byte payload: a 40-byte datagram serialised once each way.
        let want = 2.0 * (d + tx_ms(40.0, 100e6));
        let median = r["median_ms"].as_f64().unwrap();
        let min = r["min_ms"].as_f64().unwrap();
        eprintln!(
            "one-way {d} ms: RTT median {median:.3} ms, min {min:.3} ms, model {want:.3} ms ({} samples)",
            r["samples"]
        );
        assert_eq!(r["samples"], n, "every echo came back: {r}");
        assert!(min >= want - 0.01, "faster than the model: {r}");
        // The control's median (0.26-0.48 ms in debug builds on this machine) is the hosts'
        // share; what a delayed link adds beyond it is the emulator's, and the emulator must
        // hold the configured delay to 2% + 0.5 ms.
        let base = *control.get_or_insert(median);
        assert!(
            base <= 1.0,
            "a zero-delay link's median RTT is {base} ms: {r}"
        );
        assert!(
            median - base <= want * 1.02 + 0.5,
            "median RTT {median} ms, less the control's {base} ms, beyond 2% + 0.5 ms of {want} ms"
        );
    }
    for e in echoes {
        finish(e, Duration::from_secs(10));
    }
    emu.finish(Duration::from_secs(10));
}

#[test]
fn random_loss_matches_the_configured_rate_over_100k_packets() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Bernoulli 1% on a -> b; Gilbert-Elliott on c -> d with the same mean (p_gb / (p_gb +
    // p_bg) = 0.01 in bursts of two on average, every packet lost in the bad state).
    let scenario = r#"
duration = "20s"
seed = 7
[[node]]
name = "a"
[[node]]
name = "b"
[[node]]
name = "c"
[[node]]
name = "d"
[[link]]
from = "a"
to = "b"
rate = "100Mbit/s"
delay = "1ms"
queue = "1000p"
loss = 0.01
[[link]]
from = "c"
to = "d"
rate = "100Mbit/s"
delay = "1ms"
queue = "1000p"
[link.gilbert]
p_gb = 0.00505050505
p_bg = 0.5
loss_good = 0.0
loss_bad = 1.0
"#;
    let Some(emu) = Emu::start("loss", scenario, 16) else {
        return;
    };
    let counters = [emu.counter("b", "9000", 12), emu.counter("d", "9000", 12)];
    // 100,000 datagrams of 64 bytes each way, paced at 20,000 a second (5 s).
    let blasts = [
        emu.probe("a", &["blast", "10.0.0.2", "9000", "100000", "20000", "64"])
            .spawn()
            .unwrap(),
        emu.probe("c", &["blast", "10.0.0.4", "9000", "100000", "20000", "64"])
            .spawn()
            .unwrap(),
    ];
    for b in blasts {
        finish_ok(b, Duration::from_secs(15), "blast");
    }
    let got: Vec<serde_json::Value> = counters
        .into_iter()
        .map(|c| last_json(&finish_ok(c, Duration::from_secs(15), "count")))
        .collect();
    let stats = emu.finish(Duration::from_secs(20));
    for ((from, to), r) in [("a", "b"), ("c", "d")].into_iter().zip(&got) {
        let l = link(&stats, from, to);
        let (packets, lost, dropped) = (
            l["packets"].as_u64().unwrap(),
            l["random_losses"].as_u64().unwrap(),
            l["queue_drops"].as_u64().unwrap(),
        );
        let received = r["received"].as_u64().unwrap();
        let rate = (100_000 - received) as f64 / 100_000.0;
        eprintln!(
            "{from} -> {to}: {received} of 100000 received, loss {:.3}% (model drew {lost}, queue dropped {dropped})",
            rate * 100.0
        );
        assert_eq!(packets, 100_000, "every datagram crossed the link");
        assert_eq!(dropped, 0, "the queue never filled");
        assert_eq!(received + lost, 100_000, "no loss but the model's");
        assert!(
            (0.009..=0.011).contains(&rate),
            "loss {rate} not within 10% of 1%"
        );
    }
    assert_eq!(stats["input_overflow"], 0, "the emulator kept up");
}

#[test]
fn the_link_serialises_at_its_rate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let scenario = r#"
duration = "20s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
from = "a"
to = "b"
rate = "10Mbit/s"
delay = "20ms"
queue = "3000p"
"#;
    let Some(emu) = Emu::start("rate", scenario, 14) else {
        return;
    };
    let counter = emu.counter("b", "9000", 10);
    // 3000 full-size datagrams (1500 bytes on the wire) offered at 18 Mbit/s: the queue
    // fills and the link drains it at its own rate for 3.6 s.
    finish_ok(
        emu.probe("a", &["blast", "10.0.0.2", "9000", "3000", "1500", "1472"])
            .spawn()
            .unwrap(),
        Duration::from_secs(10),
        "blast",
    );
    let r = last_json(&finish_ok(counter, Duration::from_secs(12), "count"));
    let received = r["received"].as_f64().unwrap();
    let span = r["first_to_last_s"].as_f64().unwrap();
    // The first datagram's arrival starts the clock: the rest took span seconds.
    let mbit = (received - 1.0) * 1500.0 * 8.0 / span / 1e6;
    eprintln!("{received} datagrams in {span:.3} s: {mbit:.3} Mbit/s on a 10 Mbit/s link");
    assert_eq!(received, 3000.0, "nothing lost: {r}");
    assert!(
        (mbit - 10.0).abs() <= 0.3,
        "measured {mbit} Mbit/s, not within 3% of 10"
    );
    let stats = emu.finish(Duration::from_secs(20));
    assert_eq!(link(&stats, "a", "b")["bytes"], 3000 * 1500);
}

#[test]
fn multicast_goes_along_the_tree_to_members_only() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // s -- r -- {m1, m2, x}: m1 and m2 join the group, x does not.
    let scenario = r#"
duration = "20s"
[[node]]
name = "s"
[[node]]
name = "r"
[[node]]
name = "m1"
[[node]]
name = "m2"
[[node]]
name = "x"
[[link]]
from = "s"
to = "r"
rate = "10Mbit/s"
delay = "5ms"
queue = "100p"
[[link]]
from = "r"
to = "m1"
rate = "10Mbit/s"
delay = "5ms"
queue = "100p"
[[link]]
from = "r"
to = "m2"
rate = "10Mbit/s"
delay = "10ms"
queue = "100p"
[[link]]
from = "r"
to = "x"
rate = "10Mbit/s"
delay = "5ms"
queue = "100p"
"#;
    let Some(emu) = Emu::start("mcast", scenario, 12) else {
        return;
    };
    let members = [
        emu.counter("m1", "239.9.0.1:9000", 8),
        emu.counter("m2", "239.9.0.1:9000", 8),
    ];
    let outsider = emu.counter("x", "9000", 8);
    finish_ok(
        emu.probe("s", &["blast", "239.9.0.1", "9000", "1000", "500", "200"])
            .spawn()
            .unwrap(),
        Duration::from_secs(10),
        "blast",
    );
    for m in members {
        let r = last_json(&finish_ok(m, Duration::from_secs(10), "member count"));
        assert_eq!(r["received"], 1000, "a member got every datagram: {r}");
        assert_eq!(r["duplicates"], 0, "once each: {r}");
    }
    let r = last_json(&finish_ok(
        outsider,
        Duration::from_secs(10),
        "outsider count",
    ));
    assert_eq!(r["received"], 0, "a non-member got nothing: {r}");
    let stats = emu.finish(Duration::from_secs(20));
    // One copy per link of the tree, none towards x.
    for (from, to, want) in [
        ("s", "r", 1000),
        ("r", "m1", 1000),
        ("r", "m2", 1000),
        ("r", "x", 0),
    ] {
        assert_eq!(
            link(&stats, from, to)["packets"],
            want,
            "{from} -> {to}: {}",
            link(&stats, from, to)
        );
    }
}

/// A dumbbell with a 100 ms RTT and 1% random loss on the shared 10 Mbit/s link: pgmcc's
/// source PS with receivers PR1 and PR2, a Linux TCP flow from TS to TR (issue 23 item 4).
const LOSSY_DUMBBELL: &str = r#"
duration = "60s"
seed = 3
[[node]]
name = "PS"
[[node]]
name = "TS"
[[node]]
name = "R"
[[node]]
name = "B"
[[node]]
name = "PR1"
[[node]]
name = "PR2"
[[node]]
name = "TR"
[[link]]
from = "PS"
to = "R"
rate = "100Mbit/s"
delay = "1ms"
queue = "100p"
[[link]]
from = "TS"
to = "R"
rate = "100Mbit/s"
delay = "1ms"
queue = "100p"
[[link]]
from = "R"
to = "B"
rate = "10Mbit/s"
delay = "48ms"
queue = "83p"
loss = 0.01
[[link]]
from = "B"
to = "PR1"
rate = "100Mbit/s"
delay = "1ms"
queue = "100p"
[[link]]
from = "B"
to = "PR2"
rate = "100Mbit/s"
delay = "1ms"
queue = "100p"
[[link]]
from = "B"
to = "TR"
rate = "100Mbit/s"
delay = "1ms"
queue = "100p"
"#;

#[test]
#[ignore = "a 25 s real-stack share measurement; make emulate runs it"]
fn pgmcc_and_linux_tcp_share_an_emulated_lossy_path() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(emu) = Emu::start("share", LOSSY_DUMBBELL, 80) else {
        return;
    };
    let node = |n: &str| {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &format!("{}-{n}", emu.prefix)]);
        c
    };
    // The path's RTT first: PS -> PR1 crosses 100 + 10 + 100 Mbit/s, 50 ms each way.
    let echo = emu.probe("PR1", &["echo", "9000", "4"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let r = last_json(&finish_ok(
        emu.probe("PS", &["rtt", "10.0.0.5", "9000", "10", "50"])
            .spawn()
            .unwrap(),
        Duration::from_secs(40),
        "rtt probe",
    ));
    finish(echo, Duration::from_secs(10));
    let want = 2.0 * (50.0 + 2.0 * tx_ms(40.0, 100e6) + tx_ms(40.0, 10e6));
    let median = r["median_ms"].as_f64().unwrap();
    eprintln!("RTT PS-PR1: median {median:.3} ms, model {want:.3} ms: {r}");
    // An echo lost to the 1% loss counts as lost, not as a sample.
    assert!(r["samples"].as_u64().unwrap() >= 8, "{r}");
    assert!(r["min_ms"].as_f64().unwrap() >= want - 0.01, "{r}");
    assert!(
        median <= want * 1.02 + 0.5,
        "median {median} against {want}"
    );

    let dir = tempfile::tempdir().unwrap();
    let (input, want_sha) = random_file(dir.path(), 3_000_000);
    let count = dir.path().join("tcp.count");
    let sink = tcp_sink(node("TR"), &count);
    // Reno: the TCP pgmcc's equation models. It outlasts the transfer and is stopped after.
    let mut tcp = tcp_send(node("TS"), "10.0.0.7", 60, "reno");
    std::thread::sleep(Duration::from_secs(2));
    let outs = [dir.path().join("r1.bin"), dir.path().join("r2.bin")];
    let rx: Vec<Child> = ["PR1", "PR2"]
        .iter()
        .zip(&outs)
        .map(|(n, o)| {
            node(n)
                .arg(pgmcc())
                .args(["recv", "--group", GROUP, "-q", "--idle-timeout", "20s"])
                .arg("--out")
                .arg(o)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (t0, b0) = *tcp_log(&count).last().unwrap();
    let stats_path = dir.path().join("send.json");
    let tx = node("PS")
        .arg(pgmcc())
        .args(["send", "--group", GROUP, "-q", "--linger", "2s", "--stats"])
        .arg(&stats_path)
        .arg(&input)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish_ok(tx, Duration::from_secs(60), "the sender");
    let s = stats(&stats_path);
    let secs = s["sending_seconds"].as_f64().unwrap();
    let (t1, b1) = tcp_at(&tcp_log(&count), t0 + secs);
    let _ = tcp.kill();
    let _ = tcp.wait();
    for (child, out) in rx.into_iter().zip(&outs) {
        finish_ok(child, Duration::from_secs(30), "a receiver");
        assert_eq!(sha_of(out), want_sha, "{}", out.display());
    }
    finish(sink, Duration::from_secs(10));
    let pgmcc_mbit = 3e6 * 8.0 / secs / 1e6;
    let tcp_mbit = (b1 - b0) * 8.0 / (t1 - t0) / 1e6;
    let f = tcp_mbit / pgmcc_mbit;
    eprintln!(
        "100 ms RTT, 1% loss: pgmcc {pgmcc_mbit:.2} Mbit/s over {secs:.1} s, Linux TCP Reno {tcp_mbit:.2} Mbit/s; TCP/pgmcc = {f:.2}; acker {}, {} acker switches, {} repairs",
        s["status"]["acker"],
        s["status"]["cc"]["acker_switches"],
        s["status"]["stats"]["rdata_packets"]
    );
    assert!(t1 - t0 > secs - 0.5, "TCP ran through the transfer");
    // A coexistence check, not the share measurement (docs/fairness.md has that, on 20
    // emulated scenarios, 3 seeds each): the 3 MB take 16-23 s, about 20 loss events per
    // flow at 1% loss, and f read 1.06 and 2.14 in two runs of one build on this machine.
    // The band catches either flow starving the other.
    assert!((0.4..=2.5).contains(&f), "TCP/pgmcc = {f:.2}");
    let stats = emu.finish(Duration::from_secs(10));
    assert!(link(&stats, "R", "B")["random_losses"].as_u64().unwrap() > 0);
}

/// A two-flow scenario for `pgmcc emu` to run whole: pgmcc (1 MB) and TCP SACK over one
/// 10 Mbit/s, 40 ms RTT bottleneck.
const TWO_FLOWS: &str = r#"
name = "two-flows"
duration = "14s"
[[node]]
name = "S"
[[node]]
name = "T"
[[node]]
name = "R"
[[node]]
name = "P1"
[[node]]
name = "U"
[[link]]
from = "S"
to = "R"
rate = "100Mbit/s"
delay = "1ms"
queue = "100p"
[[link]]
from = "T"
to = "R"
rate = "100Mbit/s"
delay = "1ms"
queue = "100p"
[[link]]
from = "R"
to = "P1"
rate = "10Mbit/s"
delay = "18ms"
queue = "33p"
[[link]]
from = "R"
to = "U"
rate = "10Mbit/s"
delay = "18ms"
queue = "33p"
[[flow]]
name = "multicast"
kind = "pgmcc"
from = "S"
bytes = 1000000
[[flow.receiver]]
node = "P1"
[[flow]]
name = "tcp"
kind = "tcp-sack"
from = "T"
to = "U"
start = "1s"
stop = "11s"
"#;

/// `text` written as `name` into a new temporary directory, for a test that needs root:
/// `None` (and the test reported skipped) without it.
fn scenario_as_root(test: &str, name: &str, text: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    if !is_root() {
        skip(test, "needs root");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(name);
    std::fs::write(&file, text).unwrap();
    Some((dir, file))
}

#[test]
fn pgmcc_emu_runs_a_scenarios_flows_into_the_simulators_files() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some((dir, file)) = scenario_as_root(
        "pgmcc_emu_runs_a_scenarios_flows_into_the_simulators_files",
        "two-flows.toml",
        TWO_FLOWS,
    ) else {
        return;
    };
    let out = dir.path().join("out");
    let o = finish_ok(
        Command::new(pgmcc())
            .arg("emu")
            .arg(&file)
            .args(["--prefix", "pgmcc-emutest-flows", "--out"])
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(60),
        "pgmcc emu",
    );
    let text = String::from_utf8_lossy(&o.stdout);
    eprintln!("{text}");
    assert!(out.join("report.html").exists());
    let s = stats(&out.join("summary.json"));
    let flows = s["flows"].as_array().unwrap();
    let (mc, tcp) = (&flows[0], &flows[1]);
    // Every byte of the file reached P1 (PGM headers and repairs come on top).
    let got = mc["receivers"][0]["bytes"].as_u64().unwrap();
    assert!(got >= 1_000_000, "P1 received {got} bytes");
    let sent = stats(&out.join("logs/flow1-send.json"));
    assert_eq!(sent["bytes"], 1_000_000, "{sent}");
    assert_eq!(sent["status"]["finished"], true, "{sent}");
    // TCP ran its 10 s at a rate a 10 Mbit/s link allows.
    let tcp_kbps = tcp["mean_kbps"].as_f64().unwrap();
    assert!(
        (2000.0..10_500.0).contains(&tcp_kbps),
        "TCP {tcp_kbps} kbit/s"
    );
    assert_eq!(
        s["times"].as_array().unwrap().len(),
        14,
        "a sample per second"
    );
    // Nothing is left behind.
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&list.stdout).contains("pgmcc-emutest-flows"),
        "namespaces removed"
    );
}

#[test]
fn a_scenario_key_the_real_programs_lack_is_refused_by_name() {
    // A controller knob has no counterpart; Linux's RTO floor is 200 ms and it always uses
    // limited transmit, so those values run and others cannot. Checked before anything is
    // created, so this needs no root.
    let dir = tempfile::tempdir().unwrap();
    for (at, added, said) in [
        (
            "bytes = 1000000",
            "c = 0.75",
            "flow `multicast`: key `c` has no counterpart",
        ),
        (
            "stop = \"11s\"",
            "min_rto = \"1s\"",
            "flow `tcp`: `min_rto`: Linux",
        ),
        (
            "stop = \"11s\"",
            "rto = \"rfc6298\"",
            "flow `tcp`: `rto`: Linux",
        ),
        (
            "stop = \"11s\"",
            "limited_transmit = false",
            "flow `tcp`: `limited_transmit`: Linux",
        ),
    ] {
        let file = dir.path().join("knob.toml");
        std::fs::write(&file, TWO_FLOWS.replace(at, &format!("{at}\n{added}"))).unwrap();
        let o = Command::new(pgmcc())
            .arg("emu")
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(said), "{added}: {err}");
    }
}

/// A generated-scenario job in emulation (`pgmcc fairness run --emulate`): the subject
/// (pgmcc) and one competing Linux TCP flow, as `pgmcc fairness plan --emulate` writes
/// them, measured into the result file `pgmcc fairness report` merges.
#[test]
fn a_fairness_job_runs_in_emulation_and_measures_its_flows() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let scenario = TWO_FLOWS
        .replace("duration = \"14s\"", "duration = \"10s\"")
        .replace("name = \"multicast\"", "name = \"subject\"")
        .replace("bytes = 1000000\n", "txw_sqns = 16384\n")
        .replace("name = \"tcp\"", "name = \"tcp0\"")
        .replace(
            "stop = \"11s\"",
            "timestamps = true\nmin_rto = \"200ms\"\nrto = \"linux\"\nlimited_transmit = true",
        );
    let Some((dir, file)) = scenario_as_root(
        "a_fairness_job_runs_in_emulation_and_measures_its_flows",
        "g7-pgmcc.toml",
        &scenario,
    ) else {
        return;
    };
    let job = |result: &std::path::Path| {
        Command::new(pgmcc())
            .arg("fairness")
            .arg("run")
            .arg(&file)
            .args(["--seed", "1", "--id", "7", "--slot", "pgmcc"])
            .args(["--window", "3-10", "--emulate", "reno", "--result"])
            .arg(result)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // Stopped half-way (SIGTERM, as `parallel` stops a job): no result, no namespace left.
    let cut = dir.path().join("results/g7-pgmcc-s2.json");
    let child = job(&cut);
    std::thread::sleep(Duration::from_secs(4));
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let o = finish(child, Duration::from_secs(30));
    assert!(!o.status.success(), "a cut emulation is not a result");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no result written"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!cut.exists());
    let result = dir.path().join("results/g7-pgmcc-s1.json");
    finish_ok(
        job(&result),
        Duration::from_secs(60),
        "pgmcc fairness run --emulate",
    );
    let r = stats(&result);
    let subject = r["subject"]["kbps"].as_f64().unwrap();
    let tcp = r["competitors"][0]["kbps"].as_f64().unwrap();
    eprintln!("{r}");
    // Each ran at about what its own 10 Mbit/s link allows (pgmcc's receiver and the TCP
    // sink sit behind links of their own).
    assert!(
        (1000.0..10_500.0).contains(&subject),
        "pgmcc {subject} kbit/s"
    );
    assert!((1000.0..10_500.0).contains(&tcp), "TCP {tcp} kbit/s");
    // The emulated summary counts each flow's queue drops per sample, as the simulator's
    // does: the series adds up to the run's total, less what fell after the last sample.
    let summary = stats(&dir.path().join("results/g7-pgmcc-s1.emu/summary.json"));
    for f in summary["flows"].as_array().unwrap() {
        let series: u64 = f["drops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .sum();
        let total = f["queue_drops"].as_u64().unwrap();
        assert!(
            series <= total && series * 2 >= total,
            "{}: {series} of {total}",
            f["name"]
        );
    }
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&list.stdout).contains("pgf7p1"),
        "namespaces removed"
    );
}

/// The other implementations as flows (issue 23 item 2): OpenPGM at a fixed rate, uftp with
/// TFMCC and NORM with NORM-CC, each sending a 300 kB file to two receivers at once over
/// the two-flow network.
const PEER_FLOWS: &str = r#"
[[flow]]
name = "openpgm"
kind = "openpgm"
from = "S"
bytes = 300000
rate_limit = "2Mbit/s"
[[flow.receiver]]
node = "P1"
[[flow.receiver]]
node = "U"
[[flow]]
name = "uftp"
kind = "uftp"
from = "S"
bytes = 300000
[[flow.receiver]]
node = "P1"
[[flow.receiver]]
node = "U"
[[flow]]
name = "norm"
kind = "norm"
from = "S"
bytes = 300000
[[flow.receiver]]
node = "P1"
[[flow.receiver]]
node = "U"
"#;

#[test]
fn openpgm_uftp_and_norm_run_as_flows_and_complete() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let test = "openpgm_uftp_and_norm_run_as_flows_and_complete";
    if !is_root() {
        skip(test, "needs root");
        return;
    }
    for (pkg, what) in [("openpgm-5.3", "libpgm-dev"), ("norm", "libnorm-dev")] {
        let have = Command::new("pkg-config")
            .args(["--exists", pkg])
            .status()
            .is_ok_and(|s| s.success());
        if !have {
            skip(
                test,
                &format!("{what} is not installed; scripts/install-deps installs it"),
            );
            return;
        }
    }
    if Command::new("uftp").arg("-h").output().is_err() {
        skip(
            test,
            "uftp is not installed; scripts/install-deps installs it",
        );
        return;
    }
    build_interop();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("peers.toml");
    // TWO_FLOWS's network (T unused), these flows.
    let network = &TWO_FLOWS[..TWO_FLOWS.find("[[flow]]").unwrap()];
    let scenario = network.replace(
        "name = \"two-flows\"\nduration = \"14s\"",
        "name = \"peers\"\nduration = \"12s\"",
    ) + PEER_FLOWS;
    assert!(scenario.contains("duration = \"12s\""), "{scenario}");
    std::fs::write(&file, scenario).unwrap();
    let out = dir.path().join("out");
    let o = finish_ok(
        Command::new(pgmcc())
            .arg("emu")
            .arg(&file)
            .args(["--prefix", "pgmcc-emutest-peers", "-q", "--out"])
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(70),
        "pgmcc emu",
    );
    eprintln!("{}", String::from_utf8_lossy(&o.stdout));
    let flows = stats(&out.join("flows.json"));
    for f in flows.as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        for r in f["receivers"].as_array().unwrap() {
            let t = r["completed_after_s"].as_f64();
            // 300 kB at 2 Mbit/s or more takes about a second; the protocols' start-up
            // (uftp's announce, NORM-CC's slow start) a few more.
            assert!(
                t.is_some_and(|t| t > 0.5 && t < 11.0),
                "{name}: receiver {} completed after {t:?} s (logs in {})",
                r["node"],
                out.join("logs").display()
            );
        }
        let (data, feedback) = (
            f["source_datagrams"].as_u64().unwrap(),
            f["feedback_datagrams"].as_u64().unwrap(),
        );
        assert!(
            data >= 300_000 / 1500,
            "{name}: {data} datagrams from the source"
        );
        // uftp's and NORM's receivers always answer (registration, CC feedback, status);
        // OpenPGM's only NAK what they lost, possibly nothing here.
        if name != "openpgm" {
            assert!(feedback > 0, "{name}: no feedback seen");
        }
        assert!(
            feedback < data,
            "{name}: {feedback} feedback for {data} data"
        );
    }
    // uftp's receivers hold the file, byte for byte.
    let sent = std::fs::read(out.join("logs/flow2.bin")).unwrap();
    for node in ["P1", "U"] {
        let got =
            std::fs::read(out.join(format!("logs/flow2-uftpd-{node}/dest/flow2.bin"))).unwrap();
        assert!(got == sent, "uftp's copy at {node} differs");
    }
}
