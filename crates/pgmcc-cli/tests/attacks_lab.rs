//! Issue 21's attacks against the real `pgmcc send` / `pgmcc recv` in the namespace lab
//! (`scripts/netns-lab`: the sender in `s` at 10.77.0.1, receivers behind a 40 Mbit/s tbf
//! bottleneck). The attacker is a lab node of its own (the last receiver namespace, so it has
//! its own address on the receivers' segment): this test binary, run again there with
//! `PGMCC_ATTACKER` set (see [`attacker_process`]). It reads the session off the wire as a
//! host on the segment would and forges packets with valid checksums.
//!
//! Each test is one attack and asserts what it measured: the sha256 of every output against
//! the input, the exit statuses, the receiver's peak resident memory (VmHWM of the `pgmcc
//! recv` process, sampled from /proc while it runs), and the bytes the source put on the wire
//! per byte of the attacker's NAKs. `docs/robustness.md` ("Attacks on the real binaries in the
//! namespace lab") has the table of what they measured.
//!
//! Needs root (without it each test returns early and reports itself skipped: `skip` in
//! tests/common, which `scripts/test-summary` counts). Nothing is sent outside the
//! namespaces the test creates: the attacker refuses to run in the test's own network
//! namespace or from an address that is not a lab receiver's, and every attack is bounded in
//! datagrams ([`MAX_PACKETS`]) and seconds ([`MAX_SECS`]); the forged-list flood, which needs
//! a higher rate, by bounds of its own ([`LIST_FLOOD_MAX_PACKETS`], [`LIST_FLOOD_MAX_SECS`]).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::{BTreeMap, VecDeque};
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pgm_wire::{Body, DataRepr, Gsi, NakRepr, Options, Repr, SpmRepr, Tsi};
use serde_json::{json, Value};
use socket2::{Domain, Protocol, Socket, Type};

mod common;
use common::*;

/// The lab's source (`scripts/netns-lab addr s`).
const SOURCE: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// [`common::GROUP`]'s address and PGM data-destination port.
const GROUP_ADDR: Ipv4Addr = Ipv4Addr::new(239, 192, 0, 1);
const DPORT: u16 = 7500;
/// `--udp-ports`' defaults: NAKs and ACKs to the source on the first, data to the group on
/// the second.
const UCAST_PORT: u16 = 3055;
const MCAST_PORT: u16 = 3056;
/// Set (to the attack's JSON description) when this binary runs as the attacker.
const ATTACKER_ENV: &str = "PGMCC_ATTACKER";
/// Every attack stops after this many datagrams...
const MAX_PACKETS: u64 = 20_000;
/// ...or this many seconds, whichever comes first.
const MAX_SECS: f64 = 20.0;
/// The forged-list flood ([`attack_list_flood`], 20,000 datagrams a second) stops after this
/// many datagrams...
const LIST_FLOOD_MAX_PACKETS: u64 = 60_000;
/// ...or this many seconds, whichever comes first.
const LIST_FLOOD_MAX_SECS: f64 = 10.0;
/// Payload of every forged data packet, so the attacker never mistakes its own for the source's.
const FORGED: &[u8] = b"FORGED by the attacker node";

// ---------------------------------------------------------------------------------------------
// The test side: receivers, the sender, the attacker process, measurements.

/// A lab node's address (`scripts/netns-lab addr`).
fn node_addr(node: &str) -> Ipv4Addr {
    if node == "s" {
        return SOURCE;
    }
    let i: u8 = node.trim_start_matches('r').parse().unwrap();
    Ipv4Addr::new(10, 77, 0, 10 + i)
}

/// A `pgmcc recv` running in a lab node, its peak resident set sampled as it runs.
struct Rx {
    child: Child,
    out: PathBuf,
    stats: PathBuf,
    sampler: std::thread::JoinHandle<(Vec<(f64, u64)>, u64)>,
}

/// How a `pgmcc recv` ended.
struct RxEnd {
    code: Option<i32>,
    stderr: String,
    /// The output's sha256, if it wrote one.
    sha: Option<String>,
    stats: Value,
    /// The process's peak resident set (VmHWM), KiB, last sampled before it exited.
    peak_kib: u64,
    /// VmHWM samples: (Unix time, seconds; KiB).
    samples: Vec<(f64, u64)>,
    /// The CPU time the process had used (user and system), seconds, last sampled before it
    /// exited (at most 20 ms before).
    cpu_secs: f64,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// `pgmcc recv` in `node`, writing `node.bin` and `node.json` (its `--stats`) in `dir`.
fn recv(lab: &Lab, node: &str, dir: &Path, extra: &[&str]) -> Rx {
    recv_idle(lab, node, dir, extra, "6s")
}

/// [`recv`] giving up after `idle` without a word from the source.
fn recv_idle(lab: &Lab, node: &str, dir: &Path, extra: &[&str], idle: &str) -> Rx {
    recv_timeouts(lab, node, dir, extra, idle, "30s")
}

/// [`recv_idle`] giving up, too, when no session started `join` after it joined.
fn recv_timeouts(lab: &Lab, node: &str, dir: &Path, extra: &[&str], idle: &str, join: &str) -> Rx {
    let out = dir.join(format!("{node}.bin"));
    let stats = dir.join(format!("{node}.json"));
    let child = lab
        .cmd(node)
        .arg(pgmcc())
        .args(["recv", "--group", GROUP, "-q", "--idle-timeout", idle])
        .args(["--join-timeout", join, "--stats"])
        .arg(&stats)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sampler = sample_hwm(child.id());
    Rx {
        child,
        out,
        stats,
        sampler,
    }
}

/// The peak resident set of process `pid` (VmHWM in /proc/PID/status), KiB.
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The CPU time process `pid` has used, user and system (utime + stime in /proc/PID/stat),
/// in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's closing parenthesis, from the third (state) on.
    let f: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Clock ticks per second (`getconf CLK_TCK`), for [`cpu_ticks`].
fn clock_ticks_per_sec() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Samples process `pid`'s VmHWM every 20 ms until it exits, and returns the samples with
/// the CPU time (clock ticks) it had used at the last of them. `ip netns exec` execs the
/// command, so the spawned child's pid is `pgmcc recv`'s own: samples are taken only while
/// /proc/PID/exe is the pgmcc binary (after the exec; a zombie has no exe and no VmHWM).
fn sample_hwm(pid: u32) -> std::thread::JoinHandle<(Vec<(f64, u64)>, u64)> {
    let exe = std::fs::canonicalize(pgmcc()).unwrap();
    std::thread::spawn(move || {
        let started = Instant::now();
        let mut samples = Vec::new();
        let mut cpu = 0;
        loop {
            let is_pgmcc = std::fs::read_link(format!("/proc/{pid}/exe")).ok() == Some(exe.clone());
            let ticks = cpu_ticks(pid);
            match vm_hwm_kib(pid).filter(|_| is_pgmcc) {
                Some(kib) => {
                    samples.push((unix_now(), kib));
                    cpu = ticks.unwrap_or(cpu);
                }
                None if !samples.is_empty() => break,
                None if started.elapsed() > Duration::from_secs(5) => break,
                None => {}
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        (samples, cpu)
    })
}

impl Rx {
    /// Waits (at most `limit`) for the receiver to exit.
    fn wait(self, limit: Duration) -> RxEnd {
        let out = finish(self.child, limit);
        let (samples, cpu) = self.sampler.join().unwrap();
        assert!(
            !samples.is_empty(),
            "never saw pgmcc recv's own /proc entry (did `ip netns exec` fork?)"
        );
        let stats = std::fs::read_to_string(&self.stats)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or(Value::Null);
        RxEnd {
            code: out.status.code(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            sha: self.out.exists().then(|| sha_of(&self.out)),
            stats,
            peak_kib: samples.iter().map(|s| s.1).max().unwrap_or(0),
            samples,
            cpu_secs: cpu as f64 / clock_ticks_per_sec(),
        }
    }

    /// Kills the receiver (SIGKILL).
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.sampler.join().unwrap();
    }
}

impl RxEnd {
    /// A receiver counter (`--stats` `status.stats.NAME`), 0 if absent.
    fn stat(&self, name: &str) -> u64 {
        self.stats["status"]["stats"][name].as_u64().unwrap_or(0)
    }

    /// Exit 0, "complete", and the output is the input: the honest outcome.
    fn assert_complete(&self, want: &str, who: &str) {
        assert_eq!(self.code, Some(0), "{who}: {}", self.stderr);
        assert_eq!(self.stats["outcome"], "complete", "{who}: {}", self.stderr);
        assert_eq!(
            self.sha.as_deref(),
            Some(want),
            "{who}: the output is not the input: {}",
            self.stderr
        );
    }
}

/// `pgmcc send` in the source's namespace, with a short linger, a short wait for the
/// reports of receivers heard from (an attacker that NAKs never reports) and a duration cap.
fn send(lab: &Lab, input: &Path, stats: &Path, extra: &[&str]) -> Child {
    lab.cmd("s")
        .arg(pgmcc())
        .args(["send", "--group", GROUP, "-q", "--linger", "500ms"])
        .args(["--report-wait", "2s"])
        .args(["--max-duration", "40s", "--stats"])
        .arg(stats)
        .args(extra)
        .arg(input)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A sender counter (`--stats` `status.stats.NAME`).
fn sstat(s: &Value, name: &str) -> u64 {
    s["status"]["stats"][name].as_u64().unwrap()
}

/// A network interface's byte counter in a lab node (`tx_bytes`, `rx_bytes`).
fn iface_bytes(lab: &Lab, node: &str, counter: &str) -> u64 {
    let out = lab
        .cmd(node)
        .arg("cat")
        .arg(format!("/sys/class/net/eth0/statistics/{counter}"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// The attacker: this test binary run as [`attacker_process`] in a lab node.
struct Evil {
    child: Child,
    stop: PathBuf,
    report: PathBuf,
}

impl Evil {
    /// Starts attack `spec` (a JSON object with at least `mode`) from `node`; files in `dir`.
    fn start(lab: &Lab, node: &str, dir: &Path, mut spec: Value) -> Evil {
        assert_eq!(
            GROUP,
            format!("{GROUP_ADDR}:{DPORT}"),
            "the lab's group moved"
        );
        let stop = dir.join("attacker.stop");
        let report = dir.join("attacker.json");
        spec["me"] = json!(node_addr(node).to_string());
        spec["host_netns"] = json!(netns().unwrap());
        spec["stop"] = json!(stop);
        spec["report"] = json!(report);
        let child = lab
            .cmd(node)
            .arg(std::env::current_exe().unwrap())
            .args(["attacker_process", "--exact", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(ATTACKER_ENV, spec.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Evil {
            child,
            stop,
            report,
        }
    }

    /// Tells the attacker to stop, waits for it and returns its report.
    fn finish(self) -> Value {
        std::fs::write(&self.stop, b"").unwrap();
        let out = finish(self.child, Duration::from_secs_f64(MAX_SECS + 10.0));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "the attacker failed: {err}");
        serde_json::from_str(&std::fs::read_to_string(&self.report).unwrap())
            .unwrap_or_else(|e| panic!("attacker report: {e}: {err}"))
    }
}

/// A report counter.
fn n(v: &Value, name: &str) -> u64 {
    v[name].as_u64().unwrap_or(0)
}

/// Waits for the sender; returns its exit code, standard error and `--stats`.
fn sender_done(tx: Child, stats: &Path) -> (Option<i32>, String, Value) {
    let out = finish(tx, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let s = std::fs::read_to_string(stats)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    (out.status.code(), err, s)
}

/// Sends `input` with `extra` flags while `evil` runs, then waits for the receiver (30 s at
/// most) and stops the attacker: the sender's exit code, stderr and stats, the receiver's
/// end, and what the attacker reported.
fn attacked_transfer(
    lab: &Lab,
    dir: &Path,
    input: &Path,
    extra: &[&str],
    rx: Rx,
    evil: Evil,
) -> (Option<i32>, String, Value, RxEnd, Value) {
    let stats = dir.join("send.json");
    let (code, err, s) = sender_done(send(lab, input, &stats, extra), &stats);
    let r = rx.wait(Duration::from_secs(30));
    (code, err, s, r, evil.finish())
}

/// The labs of this file: a test that measures rates, times or memory has the machine to
/// itself ([`lock`]); the others, which check outcomes only (a transfer's bytes, exit
/// statuses, counters) with generous deadlines, run two at a time ([`shared`]), each in its
/// own namespaces.
static LABS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// The machine to this test alone.
fn lock() -> std::sync::RwLockWriteGuard<'static, ()> {
    LABS.write().unwrap_or_else(|e| e.into_inner())
}

/// The machine shared with the other outcome-only tests.
fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    LABS.read().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------
// The attacks, one test each.

/// Issue 21: "one spoofed SPM with OPT_FIN from any address makes receivers commit an 11 MB
/// prefix of a 20 MB file, exit 0". A stranger reads the session off the wire and, every 20
/// of the source's packets, sends an SPM with OPT_FIN at the current lead (with a forged
/// manifest) and three ODATA past the lead.
#[test]
fn lab_spoofed_end_of_session_from_a_stranger_is_refused() {
    let _serial = shared();
    let Some(lab) = Lab::up("a1", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 3_000_000);
    let rx = recv(&lab, "r1", dir.path(), &[]);
    let evil = Evil::start(&lab, "r2", dir.path(), json!({"mode": "fin"}));
    std::thread::sleep(Duration::from_millis(500));
    let (code, err, s, r, a) = attacked_transfer(&lab, dir.path(), &input, &[], rx, evil);
    eprintln!(
        "spoofed FIN: attacker sent {} packets ({} FIN SPMs, {} ODATA past the lead); recv exit {:?}, {} packets dropped as wrong_source, sha256 {}; send exit {code:?}",
        n(&a, "sent"),
        n(&a["kinds"], "fin_spm"),
        n(&a["kinds"], "odata_past_lead"),
        r.code,
        r.stat("wrong_source"),
        if r.sha.as_deref() == Some(want.as_str()) { "= input" } else { "WRONG" },
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(n(&a["kinds"], "fin_spm") >= 5, "attack too small: {a}");
    r.assert_complete(&want, "receiver");
    // The forgeries reached the receiver and were refused for their address.
    assert!(r.stat("wrong_source") >= 5, "{}", r.stats);
    assert!(r
        .stderr
        .contains("not from the address each session started from"));
    assert_eq!(sstat(&s, "odata_bytes"), 3_000_000);
}

/// Issue 21: "spoofed SPMs redirect NAKs; spoofed NCFs suppress them". With every 20th data
/// packet withheld by the source (so receivers must NAK; selective repairs, `--fec 0`, so the
/// NCFs match the NAKs exactly), a stranger sends SPMs naming itself as the path for NAKs,
/// and NCFs for every sequence number it saw missing and the next 62 ahead.
#[test]
fn lab_spoofed_spms_and_ncfs_from_a_stranger_neither_redirect_nor_suppress_naks() {
    let _serial = shared();
    let Some(lab) = Lab::up("a2", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 3_000_000);
    let rx = recv(&lab, "r1", dir.path(), &[]);
    let evil = Evil::start(&lab, "r2", dir.path(), json!({"mode": "redirect"}));
    std::thread::sleep(Duration::from_millis(500));
    let stats = dir.path().join("send.json");
    let extra = ["--drop-every", "20", "--fec", "0"];
    let (code, err, s) = sender_done(send(&lab, &input, &stats, &extra), &stats);
    let r = rx.wait(Duration::from_secs(30));
    let a = evil.finish();
    eprintln!(
        "NAK redirection + NCF suppression: attacker sent {} SPMs naming itself and {} NCFs ({} sqns); NAKs that reached the attacker: {}; recv sent {} NAKs, got {} repairs, {} dropped as wrong_source, exit {:?}; source withheld {}, sent {} RDATA",
        n(&a["kinds"], "redirect_spm"),
        n(&a["kinds"], "ncf"),
        n(&a, "ncf_sqns"),
        n(&a, "upstream_heard"),
        r.stat("naks_sent"),
        r.stat("rdata_packets"),
        r.stat("wrong_source"),
        r.code,
        s["status"]["injected_drops"],
        sstat(&s, "rdata_packets"),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        n(&a["kinds"], "redirect_spm") >= 10,
        "attack too small: {a}"
    );
    assert!(n(&a, "ncf_sqns") >= 100, "attack too small: {a}");
    r.assert_complete(&want, "receiver");
    // The losses were real and were repaired through the source, not the attacker.
    assert!(s["status"]["injected_drops"].as_u64().unwrap() >= 50);
    assert!(r.stat("naks_sent") > 0 && sstat(&s, "rdata_packets") >= 50);
    assert_eq!(n(&a, "upstream_heard"), 0, "NAKs were redirected: {a}");
    assert!(r.stat("wrong_source") >= 10, "{}", r.stats);
}

/// Issue 21: "SPM trail/lead/sqn jumps end the transfer". With every 20th data packet withheld
/// (repairs needed), a stranger sends, in turn, SPMs with the trail beyond the lead, the lead
/// a million ahead, the SPM sequence number 2^31 ahead, and the trail moved up to the lead
/// (which would give up every packet still missing).
#[test]
fn lab_spm_window_and_sequence_jumps_from_a_stranger_do_not_end_the_transfer() {
    let _serial = shared();
    let Some(lab) = Lab::up("a3", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 3_000_000);
    let rx = recv(&lab, "r1", dir.path(), &[]);
    let evil = Evil::start(&lab, "r2", dir.path(), json!({"mode": "jumps"}));
    std::thread::sleep(Duration::from_millis(500));
    let (code, err, _s, r, a) =
        attacked_transfer(&lab, dir.path(), &input, &["--drop-every", "20"], rx, evil);
    let k = &a["kinds"];
    eprintln!(
        "SPM jumps: attacker sent {} SPMs (trail beyond lead {}, lead +1e6 {}, SPM sqn +2^31 {}, trail up to lead {}); recv exit {:?}, {} dropped as wrong_source, {} as implausible, {} unrecoverable",
        n(&a, "sent"),
        n(k, "trail_beyond_lead"),
        n(k, "lead_jump"),
        n(k, "sqn_jump"),
        n(k, "trail_to_lead"),
        r.code,
        r.stat("wrong_source"),
        r.stat("implausible_spms"),
        r.stat("unrecoverable_sqns"),
    );
    assert_eq!(code, Some(0), "{err}");
    for kind in [
        "trail_beyond_lead",
        "lead_jump",
        "sqn_jump",
        "trail_to_lead",
    ] {
        assert!(n(k, kind) >= 3, "attack too small: {a}");
    }
    r.assert_complete(&want, "receiver");
    assert_eq!(r.stat("unrecoverable_sqns"), 0);
    assert!(r.stat("wrong_source") >= 12, "{}", r.stats);
}

/// The same jumps, those no source could send (trail beyond the lead, a lead a million
/// ahead, an SPM sequence number 2^31 ahead), from the source's own address (raw socket,
/// IP_HDRINCL): source binding cannot refuse them, the plausibility check must.
#[test]
fn lab_implausible_spm_jumps_from_the_sources_own_address_are_dropped() {
    let _serial = shared();
    let Some(lab) = Lab::up("ad", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 3_000_000);
    let rx = recv(&lab, "r1", dir.path(), &[]);
    let evil = Evil::start(
        &lab,
        "r2",
        dir.path(),
        json!({"mode": "jumps", "spoof": true}),
    );
    std::thread::sleep(Duration::from_millis(500));
    let (code, err, _s, r, a) =
        attacked_transfer(&lab, dir.path(), &input, &["--drop-every", "20"], rx, evil);
    let k = &a["kinds"];
    eprintln!(
        "spoofed SPM jumps: attacker sent {} SPMs from {} (trail beyond lead {}, lead +1e6 {}, SPM sqn +2^31 {}); recv exit {:?}, {} dropped as implausible, {} as wrong_source, {} unrecoverable",
        n(&a, "sent"),
        SOURCE,
        n(k, "trail_beyond_lead"),
        n(k, "lead_jump"),
        n(k, "sqn_jump"),
        r.code,
        r.stat("implausible_spms"),
        r.stat("wrong_source"),
        r.stat("unrecoverable_sqns"),
    );
    assert_eq!(code, Some(0), "{err}");
    for kind in ["trail_beyond_lead", "lead_jump", "sqn_jump"] {
        assert!(n(k, kind) >= 3, "attack too small: {a}");
    }
    r.assert_complete(&want, "receiver");
    assert_eq!(r.stat("unrecoverable_sqns"), 0);
    // They passed source binding and were dropped for what they said.
    assert_eq!(r.stat("wrong_source"), 0);
    assert!(r.stat("implausible_spms") >= 9, "{}", r.stats);
}

/// Issue 57 item 3: "one spoofed SPM (192 bytes) turns every receiver into a NAK flood
/// against any third host". With every 20th data packet withheld by the source (so the
/// receivers must NAK), the attacker, spoofing the source's address, sends SPMs naming
/// another lab host as the path for NAKs: every 10 of the source's packets, in turn, one
/// that follows the source's SPM sequence and one 1,000 ahead of it (the issue's, after which
/// every real SPM looked old). The other host (r3) only counts what reaches its NAK port. Two
/// receivers, as in the issue.
#[test]
fn lab_a_spoofed_spm_cannot_aim_the_receivers_naks_at_another_host() {
    let _serial = shared();
    let Some(lab) = Lab::up("ae", 4) else { return };
    let dir = tempfile::tempdir().unwrap();
    let victim_dir = dir.path().join("victim");
    std::fs::create_dir(&victim_dir).unwrap();
    let (input, want) = random_file(dir.path(), 3_000_000);
    let rx1 = recv(&lab, "r1", dir.path(), &[]);
    let rx2 = recv(&lab, "r2", dir.path(), &[]);
    let victim = Evil::start(&lab, "r3", &victim_dir, json!({"mode": "sink"}));
    let evil = Evil::start(
        &lab,
        "r4",
        dir.path(),
        json!({"mode": "reflect", "spoof": true, "path": node_addr("r3").to_string()}),
    );
    std::thread::sleep(Duration::from_millis(500));
    let stats = dir.path().join("send.json");
    let (code, err, s) = sender_done(
        send(&lab, &input, &stats, &["--drop-every", "20", "--fec", "0"]),
        &stats,
    );
    let ends = [
        rx1.wait(Duration::from_secs(30)),
        rx2.wait(Duration::from_secs(30)),
    ];
    let a = evil.finish();
    let v = victim.finish();
    let k = &a["kinds"];
    eprintln!(
        "NAK reflection: attacker sent {} SPMs from {} naming {} (in sequence {}, 1,000 ahead {}); NAKs that reached {}: {}; recv r1/r2 sent {}/{} NAKs, dropped {}/{} SPMs as implausible, {}/{} NAKs held back unanswered, exit {:?}/{:?}; source: {} NAKs received, {} withheld, {} RDATA",
        n(&a, "sent"),
        SOURCE,
        node_addr("r3"),
        n(k, "spm_in_sequence"),
        n(k, "spm_sqn_jump"),
        node_addr("r3"),
        n(&v, "upstream_heard"),
        ends[0].stat("naks_sent"),
        ends[1].stat("naks_sent"),
        ends[0].stat("implausible_spms"),
        ends[1].stat("implausible_spms"),
        ends[0].stat("naks_rate_limited"),
        ends[1].stat("naks_rate_limited"),
        ends[0].code,
        ends[1].code,
        sstat(&s, "naks_received"),
        s["status"]["injected_drops"],
        sstat(&s, "rdata_packets"),
    );
    assert_eq!(code, Some(0), "{err}");
    for kind in ["spm_in_sequence", "spm_sqn_jump"] {
        assert!(n(k, kind) >= 3, "attack too small: {a}");
    }
    for (r, who) in ends.iter().zip(["r1", "r2"]) {
        r.assert_complete(&want, who);
        // The spoofed SPMs passed source binding; the ones 1,000 ahead were dropped for it.
        assert_eq!(r.stat("wrong_source"), 0, "{who}: {}", r.stats);
        assert!(r.stat("implausible_spms") >= 3, "{who}: {}", r.stats);
        assert!(
            r.stat("naks_sent") > 0,
            "{who}: no loss to NAK: {}",
            r.stats
        );
    }
    // Every NAK went to the source, none to the host the SPMs named.
    assert_eq!(n(&v, "upstream_heard"), 0, "NAKs were reflected: {v}");
    assert!(s["status"]["injected_drops"].as_u64().unwrap() >= 50, "{s}");
    assert!(sstat(&s, "rdata_packets") >= 50, "{s}");
}

/// Issue 57 item 9: a 3 MB transfer, signed when `signed`, while the attacker, spoofing the
/// source's address, sends every 10 of the source's packets, in turn: ODATA at the lead with
/// the trail 100 beyond it, ODATA 100,000 past the lead, and RDATA at the lead with the trail
/// 100 beyond it (the same edges an SPM may not carry).
fn data_edge_transfer(name: &str, signed: bool) -> Option<Spoofed> {
    attacked_by_the_sources_address(name, signed, json!({"mode": "data_jumps", "spoof": true}))
}

/// Checks and prints what [`data_edge_transfer`] measured.
fn assert_data_edges_dropped(m: &Spoofed, mode: &str) {
    let (r, a, k) = (&m.r, &m.a, &m.a["kinds"]);
    eprintln!(
        "{mode}, data window edges from {}: attacker sent {} packets (ODATA trail +100 {}, ODATA sqn +100,000 {}, RDATA trail +100 {}); recv exit {:?}, {} dropped as implausible_data, {} as wrong_source, {} unrecoverable, output {}",
        SOURCE,
        n(a, "sent"),
        n(k, "odata_trail_beyond_lead"),
        n(k, "odata_sqn_jump"),
        n(k, "rdata_trail_beyond_lead"),
        r.code,
        r.stat("implausible_data"),
        r.stat("wrong_source"),
        r.stat("unrecoverable_sqns"),
        match r.sha.as_deref() {
            None => "none",
            Some(s) if s == m.want => "= input",
            Some(_) => "WRONG",
        },
    );
    assert_eq!(m.send_code, Some(0), "{}", m.send_err);
    for kind in [
        "odata_trail_beyond_lead",
        "odata_sqn_jump",
        "rdata_trail_beyond_lead",
    ] {
        assert!(n(k, kind) >= 3, "attack too small: {a}");
    }
    r.assert_complete(&m.want, "receiver");
    assert_eq!(r.stat("unrecoverable_sqns"), 0, "{}", r.stats);
    // They passed source binding and were dropped for what they said.
    assert_eq!(r.stat("wrong_source"), 0, "{}", r.stats);
    assert!(r.stat("implausible_data") >= 9, "{}", r.stats);
    assert!(
        r.stderr
            .contains("data packets whose window edges no source could send"),
        "{}",
        r.stderr
    );
}

#[test]
fn lab_data_window_edge_jumps_from_the_sources_own_address_are_dropped() {
    let _serial = shared();
    let Some(m) = data_edge_transfer("af", false) else {
        return;
    };
    assert_data_edges_dropped(&m, "plain");
}

#[test]
fn lab_data_window_edge_jumps_from_the_sources_own_address_are_dropped_when_signed() {
    let _serial = shared();
    let Some(m) = data_edge_transfer("ag", true) else {
        return;
    };
    assert_data_edges_dropped(&m, "signed");
}

/// Issue 21: "2 fake sessions of 60 KB datagrams held 884 MB of memory in each receiver".
/// During a real transfer a stranger starts fake sessions (distinct TSIs, first packet with
/// OPT_SYN so each is admitted) whose sequence number 1 never comes, so nothing after it can
/// be delivered: first 2 sessions of 60,000-byte datagrams (the issue's attack), then 2 of
/// 8,900-byte ones (the largest a receiver accepts, `max_tpdu` 9,000), 4,000 packets each,
/// more than the per-session budget holds.
#[test]
fn lab_fake_sessions_of_large_datagrams_keep_recv_memory_bounded() {
    let _serial = lock();
    let Some(lab) = Lab::up("a4", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 5_000_000);
    let rx = recv(&lab, "r1", dir.path(), &[]);
    let evil = Evil::start(
        &lab,
        "r2",
        dir.path(),
        json!({"mode": "memory", "huge_sessions": 2, "huge_packets": 100, "huge_len": 60_000,
               "big_sessions": 2, "big_packets": 4_000, "big_len": 8_900, "per_ms": 4}),
    );
    std::thread::sleep(Duration::from_millis(500));
    let stats = dir.path().join("send.json");
    // 5 MB at 10 Mbit/s: the transfer lasts about 4 s, the attack runs inside it.
    let (code, err, _s) = sender_done(
        send(&lab, &input, &stats, &["--rate-max", "10Mbit"]),
        &stats,
    );
    let r = rx.wait(Duration::from_secs(30));
    let a = evil.finish();
    let started = a["first_send_secs"].as_f64().unwrap_or(0.0);
    // The receiver's peak before the attack: its last sample before the attacker's first
    // datagram (the real session already under way).
    let first_unix = a["first_send_unix"].as_f64().unwrap();
    let before = r
        .samples
        .iter()
        .filter(|s| s.0 < first_unix)
        .map(|s| s.1)
        .max()
        .unwrap();
    let sessions = r.stats["status"]["sessions"].as_array().map_or(0, Vec::len);
    eprintln!(
        "memory: attacker sent {} datagrams ({:.1} MB, about {} IP fragments) in {:.1} s from {:.1} s after it started: {} of {} B, {} of {} B; recv peak RSS {:.1} MiB (before the attack {:.1} MiB), {} oversized, {} over_budget, {} sessions tracked at the end, exit {:?}",
        n(&a, "sent"),
        n(&a, "sent_bytes") as f64 / 1e6,
        n(&a, "frames"),
        a["last_send_secs"].as_f64().unwrap_or(0.0) - started,
        started,
        n(&a["kinds"], "huge_data"),
        a["huge_len"],
        n(&a["kinds"], "big_data"),
        a["big_len"],
        r.peak_kib as f64 / 1024.0,
        before as f64 / 1024.0,
        r.stat("oversized"),
        r.stat("over_budget"),
        sessions,
        r.code,
    );
    assert_eq!(code, Some(0), "{err}");
    r.assert_complete(&want, "receiver");
    // The attack happened during the transfer and reached the receiver.
    assert!(n(&a, "source_odata_at_start") > 0, "{a}");
    assert!(!a["source_fin_at_flood_end"].as_bool().unwrap(), "{a}");
    assert!(n(&a["kinds"], "big_data") >= 8_000, "{a}");
    // Every 60 KB datagram was refused on arrival (max_tpdu); the 8.9 KB ones filled their
    // sessions' budgets and then were refused too.
    assert!(r.stat("oversized") >= 190, "{}", r.stats);
    assert!(r.stat("over_budget") >= 200, "{}", r.stats);
    // The bound (docs/robustness.md, "Resource bounds"): each session may hold
    // `session_bytes` (32 MiB), counted as window span x largest payload, and all together
    // `total_bytes` (256 MiB), so S fake sessions hold at most min(S x 32, 256) MiB: 64 MiB
    // here (no parity: the fake sessions announce no FEC). The real session's window is a few
    // packets. Allow the process's own footprint as measured before the attack, and 32 MiB for
    // the allocator and the socket's buffers on top.
    let bound = before as f64 / 1024.0 + 64.0 + 32.0;
    assert!(
        (r.peak_kib as f64 / 1024.0) < bound,
        "recv peaked at {:.1} MiB, bound {bound:.1} MiB",
        r.peak_kib as f64 / 1024.0
    );
}

/// Issue 21: "one fake SPM before the real source ... locks receivers out of the real one".
/// One SPM of a fake session, sent once before the real source starts.
#[test]
fn lab_one_fake_spm_before_the_source_does_not_lock_recv_out() {
    let _serial = shared();
    let Some(lab) = Lab::up("a5", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 2_000_000);
    let rx = recv(&lab, "r1", dir.path(), &[]);
    std::thread::sleep(Duration::from_millis(300));
    let evil = Evil::start(
        &lab,
        "r2",
        dir.path(),
        json!({"mode": "spm_sessions", "sessions": 1, "rounds": 1}),
    );
    std::thread::sleep(Duration::from_millis(700));
    let (code, err, s, r, a) = attacked_transfer(&lab, dir.path(), &input, &[], rx, evil);
    eprintln!(
        "one fake SPM: attacker sent {} SPM ({} of the source's packets seen before it); recv followed {}, the source's {}, exit {:?}",
        n(&a, "sent"),
        n(&a, "source_odata_at_first_send"),
        r.stats["tsi"],
        s["tsi"],
        r.code,
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(n(&a, "sent"), 1, "{a}");
    assert_eq!(
        n(&a, "source_odata_at_first_send"),
        0,
        "not before the source"
    );
    r.assert_complete(&want, "receiver");
    assert_eq!(r.stats["tsi"], s["tsi"], "followed another session");
}

/// Issue 21: "... or 70 fake sessions, lock receivers out of the real one". 70 fake sessions
/// known only by their SPMs (more than the 64 a receiver tracks), started before the real
/// source and kept alive with an SPM each every 200 ms through the transfer.
#[test]
fn lab_seventy_fake_spm_only_sessions_do_not_lock_recv_out() {
    let _serial = shared();
    let Some(lab) = Lab::up("a6", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 2_000_000);
    let rx = recv(&lab, "r1", dir.path(), &[]);
    std::thread::sleep(Duration::from_millis(300));
    let evil = Evil::start(
        &lab,
        "r2",
        dir.path(),
        json!({"mode": "spm_sessions", "sessions": 70, "rounds": 100, "every_ms": 200}),
    );
    std::thread::sleep(Duration::from_millis(700));
    let (code, err, s, r, a) = attacked_transfer(&lab, dir.path(), &input, &[], rx, evil);
    eprintln!(
        "70 fake SPM-only sessions: attacker sent {} SPMs ({} rounds before the source's first packet); recv followed {}, the source's {}, {} sessions rejected, {} evicted, exit {:?}",
        n(&a, "sent"),
        n(&a, "rounds_before_source"),
        r.stats["tsi"],
        s["tsi"],
        r.stat("sessions_rejected"),
        r.stat("sessions_evicted"),
        r.code,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        n(&a, "rounds_before_source") >= 2,
        "not before the source: {a}"
    );
    assert!(n(&a, "sent") >= 70 * 5, "{a}");
    r.assert_complete(&want, "receiver");
    assert_eq!(r.stats["tsi"], s["tsi"], "followed another session");
}

/// Issue 21: "a forged session started 1 s before the real one is followed by every
/// receiver". A stranger runs a whole fake session (OPT_SYN data, SPMs, forged payload)
/// from 1 s before the real source; the receiver is given the source's address (`--source`,
/// the documented defence in plain mode: without it the first session heard is followed).
#[test]
fn lab_a_fake_session_started_first_is_refused_by_recv_source() {
    let _serial = shared();
    let Some(lab) = Lab::up("a7", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 2_000_000);
    let source = SOURCE.to_string();
    let rx = recv(&lab, "r1", dir.path(), &["--source", &source]);
    std::thread::sleep(Duration::from_millis(300));
    let evil = Evil::start(&lab, "r2", dir.path(), json!({"mode": "fake_session"}));
    std::thread::sleep(Duration::from_millis(1000));
    let (code, err, s, r, a) = attacked_transfer(&lab, dir.path(), &input, &[], rx, evil);
    eprintln!(
        "fake session first: attacker sent {} packets of its own session ({} before the source's first), recv followed {}, the source's {}, {} dropped as wrong_source, exit {:?}",
        n(&a, "sent"),
        n(&a, "sent_before_source"),
        r.stats["tsi"],
        s["tsi"],
        r.stat("wrong_source"),
        r.code,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        n(&a, "sent_before_source") >= 20,
        "not before the source: {a}"
    );
    r.assert_complete(&want, "receiver");
    assert_eq!(r.stats["tsi"], s["tsi"], "followed another session");
    assert!(r.stat("wrong_source") >= 20, "{}", r.stats);
}

/// Issue 21: "A NAK storm is amplified ~290x in bytes". The attacker, on its own address,
/// NAKs 63 sequence numbers of the source's transmit window (learned from the wire: TSI,
/// trail, lead; valid checksum) every millisecond while the data goes out. The same transfer
/// without the attacker, in the same lab just before, is the baseline: what the source sent
/// beyond it, per byte of NAKs, is the amplification.
#[test]
fn lab_a_nak_storm_buys_at_most_the_repair_budget() {
    let _serial = lock();
    let Some(lab) = Lab::up("a8", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 4_000_000);
    // Baseline.
    let base_dir = tempfile::tempdir().unwrap();
    let rx = recv(&lab, "r1", base_dir.path(), &[]);
    std::thread::sleep(Duration::from_millis(300));
    let base_stats = dir.path().join("base.json");
    let tx0 = iface_bytes(&lab, "s", "tx_bytes");
    let (code, err, base) = sender_done(send(&lab, &input, &base_stats, &[]), &base_stats);
    let base_wire = iface_bytes(&lab, "s", "tx_bytes") - tx0;
    assert_eq!(code, Some(0), "{err}");
    rx.wait(Duration::from_secs(30))
        .assert_complete(&want, "baseline receiver");
    // Attacked.
    let rx = recv(&lab, "r1", dir.path(), &[]);
    let evil = Evil::start(
        &lab,
        "r2",
        dir.path(),
        json!({"mode": "nak_storm", "every_us": 1000, "sqns": 63}),
    );
    std::thread::sleep(Duration::from_millis(300));
    let stats = dir.path().join("send.json");
    let tx1 = iface_bytes(&lab, "s", "tx_bytes");
    let evil_tx = iface_bytes(&lab, "r2", "tx_bytes");
    let (code, err, s) = sender_done(send(&lab, &input, &stats, &[]), &stats);
    let wire = iface_bytes(&lab, "s", "tx_bytes") - tx1;
    let r = rx.wait(Duration::from_secs(30));
    let a = evil.finish();
    let evil_wire = iface_bytes(&lab, "r2", "tx_bytes") - evil_tx;
    let nak_bytes = n(&a, "sent_bytes");
    let (sent, base_sent) = (sstat(&s, "bytes_sent"), sstat(&base, "bytes_sent"));
    let extra = sent.saturating_sub(base_sent);
    eprintln!(
        "NAK storm: attacker sent {} NAKs ({} sqns, {} B of PGM, {} B on its interface) over {:.2} s; source: {} B sent (baseline {} B, so {} B more: {:.2}x the transfer's own, {:.2}x of it in all; the budget allows {:.0} B more), {} RDATA (baseline {}), {} NCFs, {} requests refused by the per-source share, {} by the budget; {:.2} B more per NAK byte ({:.2} per wire byte of the attacker); interface: {} B (baseline {} B); sending took {:.2} s (baseline {:.2} s), {:.2} s with the linger, window at the end {} packets (baseline {}), silent-receiver caps {}; recv exit {:?}",
        n(&a, "sent"),
        n(&a, "nak_sqns"),
        nak_bytes,
        evil_wire,
        a["last_send_secs"].as_f64().unwrap_or(0.0) - a["first_send_secs"].as_f64().unwrap_or(0.0),
        sent,
        base_sent,
        extra,
        extra as f64 / base_sent as f64,
        sent as f64 / base_sent as f64,
        2.0 * base_sent as f64 / s["sending_seconds"].as_f64().unwrap() * s["seconds"].as_f64().unwrap(),
        sstat(&s, "rdata_packets"),
        sstat(&base, "rdata_packets"),
        sstat(&s, "ncf_packets"),
        sstat(&s, "nak_sqns_source_limited"),
        sstat(&s, "repairs_budget_limited"),
        extra as f64 / nak_bytes as f64,
        wire.saturating_sub(base_wire) as f64 / evil_wire as f64,
        wire,
        base_wire,
        s["sending_seconds"].as_f64().unwrap(),
        base["sending_seconds"].as_f64().unwrap(),
        s["seconds"].as_f64().unwrap(),
        s["status"]["window"],
        base["status"]["window"],
        s["status"]["cc"]["silent_caps"],
        r.code,
    );
    // The attacker NAKed and never reported: the transfer is unconfirmed (exit 3), not
    // failed; the honest receiver's report says complete.
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("1 receiver confirmed the stream"), "{err}");
    r.assert_complete(&want, "receiver");
    assert!(n(&a, "sent") >= 300, "attack too small: {a}");
    // The storm was heard and it asked for more than one NAKer may have: the share bound.
    assert!(sstat(&s, "naks_received") >= n(&a, "sent") / 2, "{s}");
    assert!(sstat(&s, "nak_sqns_source_limited") > 0, "{s}");
    // The documented bound (docs/core.md, "Repair budget"): repairs at most `repair_budget`
    // (2.0) times the congestion-controlled rate on top of the data, three times the rate in
    // all, whatever the NAKs ask for (without the budget each NAK of 63 sequence numbers
    // bought 63 packets, ~300 bytes per NAK byte). The rate: the transfer's own bytes (the
    // baseline's) over the time the attacked source took to send them; the budget accrues
    // for the whole session, linger included.
    let rate = base_sent as f64 / s["sending_seconds"].as_f64().unwrap();
    let allowed = 2.0 * rate * s["seconds"].as_f64().unwrap();
    assert!(
        (extra as f64) <= allowed,
        "the storm bought {extra} B ({:.1} B per NAK byte), the budget allows {allowed:.0} B",
        extra as f64 / nak_bytes as f64
    );
}

/// Issue 21 item 1: keyed mode. The attacker reads the TSI and the key's id from the
/// envelopes' clear header and, every 10 of the source's datagrams, forges data (OPT_SYN on
/// sequence number 0), RDATA, NCFs and an SPM with OPT_FIN, near the source's position: in
/// plain PGM, sealed under a key of its own, and sealed under its own key but labelled with
/// the group key's id.
#[test]
fn lab_keyed_transfer_is_untouched_by_plain_and_sealed_forgeries() {
    let _serial = shared();
    let Some(lab) = Lab::up("a9", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let key = group_key(dir.path());
    let key = key.to_str().unwrap();
    let (input, want) = random_file(dir.path(), 3_000_000);
    let rx = recv(&lab, "r1", dir.path(), &["--key", key]);
    let evil = Evil::start(&lab, "r2", dir.path(), json!({"mode": "keyed"}));
    std::thread::sleep(Duration::from_millis(500));
    let (code, err, s, r, a) =
        attacked_transfer(&lab, dir.path(), &input, &["--key", key], rx, evil);
    let k = &r.stats["status"]["keyed"];
    let kinds = &a["kinds"];
    eprintln!(
        "keyed: attacker sent {} packets ({} plain, {} sealed under its own key, {} under its own key with the group key's id); recv: opened {}, refused not_sealed {}, other_key {}, forged {}; core malformed {}, exit {:?}",
        n(&a, "sent"),
        n(kinds, "plain"),
        n(kinds, "own_key"),
        n(kinds, "relabelled"),
        k["opened"],
        k["not_sealed"],
        k["other_key"],
        k["forged"],
        r.stat("malformed"),
        r.code,
    );
    assert_eq!(code, Some(0), "{err}");
    for kind in ["plain", "own_key", "relabelled"] {
        assert!(n(kinds, kind) >= 50, "attack too small: {a}");
    }
    r.assert_complete(&want, "receiver");
    // Each kind of forgery was refused at the envelope, none reached the core.
    assert!(n(k, "not_sealed") >= 50, "{k}");
    assert!(n(k, "other_key") >= 50, "{k}");
    assert!(n(k, "forged") >= 50, "{k}");
    assert_eq!(r.stat("malformed"), 0);
    assert_eq!(r.stat("wrong_source"), 0, "forgeries reached the core");
    assert!(s["status"]["keyed"].is_object());
}

/// What [`attacked_by_the_sources_address`] measured.
struct Spoofed {
    send_code: Option<i32>,
    send_err: String,
    r: RxEnd,
    a: Value,
    want: String,
}

/// A 3 MB transfer, signed when `signed`, while the attacker spoofs the source's own IP
/// address (raw socket, IP_HDRINCL, so source binding cannot tell it apart) and forges, every
/// 20 of the source's packets, data past the lead, RDATA for the last three sequence numbers
/// and an SPM with OPT_FIN and another manifest.
fn spoofed_transfer(name: &str, signed: bool) -> Option<Spoofed> {
    attacked_by_the_sources_address(name, signed, json!({"mode": "spoof"}))
}

/// A 3 MB transfer to r1, signed when `signed`, while r2 runs `attack` (an attacker
/// spoofing the source's address); the source gives up after 3 s without feedback, since a
/// receiver fooled into leaving early leaves it without any.
fn attacked_by_the_sources_address(name: &str, signed: bool, attack: Value) -> Option<Spoofed> {
    let lab = Lab::up(name, 2)?;
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = signing_key(dir.path());
    let (key, public) = (key.to_str().unwrap(), public.to_str().unwrap());
    let (input, want) = random_file(dir.path(), 3_000_000);
    let trust: &[&str] = if signed { &["--trust", public] } else { &[] };
    let rx = recv(&lab, "r1", dir.path(), trust);
    let evil = Evil::start(&lab, "r2", dir.path(), attack);
    std::thread::sleep(Duration::from_millis(500));
    let stats = dir.path().join("send.json");
    let mut extra = vec!["--feedback-timeout", "3s"];
    if signed {
        extra.extend(["--sign", key]);
    }
    let (send_code, send_err, _s) = sender_done(send(&lab, &input, &stats, &extra), &stats);
    let r = rx.wait(Duration::from_secs(30));
    let a = evil.finish();
    Some(Spoofed {
        send_code,
        send_err,
        r,
        a,
        want,
    })
}

/// Issue 21 item 2: signed mode against the strongest stranger on the segment, one that
/// spoofs the source's address.
#[test]
fn lab_signed_transfer_is_untouched_by_forgeries_from_the_sources_address() {
    let _serial = shared();
    let Some(Spoofed {
        send_code,
        send_err,
        r,
        a,
        want,
    }) = spoofed_transfer("aa", true)
    else {
        return;
    };
    let signed = &r.stats["status"]["stats"]["signed"];
    eprintln!(
        "signed, spoofed source address: attacker sent {} packets from {} ({} FIN SPMs, {} ODATA past the lead, {} RDATA); recv: forged {}, reasked {}, wrong_source {}, exit {:?}",
        n(&a, "sent"),
        SOURCE,
        n(&a["kinds"], "fin_spm"),
        n(&a["kinds"], "odata_past_lead"),
        n(&a["kinds"], "rdata"),
        signed["forged"],
        signed["reasked"],
        r.stat("wrong_source"),
        r.code,
    );
    assert_eq!(send_code, Some(0), "{send_err}");
    assert!(n(&a["kinds"], "fin_spm") >= 5, "attack too small: {a}");
    r.assert_complete(&want, "receiver");
    // The spoofed packets passed source binding (wrong_source 0) and reached the window,
    // where their signed digests caught them.
    assert_eq!(r.stat("wrong_source"), 0);
    assert!(n(signed, "forged") + n(signed, "reasked") >= 20, "{signed}");
    assert!(
        r.stderr
            .contains("sha256 matches the source's signed manifest"),
        "{}",
        r.stderr
    );
}

/// The control for the test above: the same spoofing attack on an unsigned transfer gets
/// through plain mode's source binding (docs/security.md says so): the receiver does not
/// deliver the source's file. It shows the attack works in the lab, so the signed result is
/// the signatures' doing.
#[test]
fn lab_unsigned_control_the_same_spoofing_defeats_plain_mode() {
    let _serial = shared();
    let Some(Spoofed {
        send_code,
        r,
        a,
        want,
        ..
    }) = spoofed_transfer("ac", false)
    else {
        return;
    };
    let bytes = r.stats["bytes"].as_u64().unwrap_or(0);
    eprintln!(
        "unsigned control, spoofed source address: attacker sent {} packets; recv exit {:?}, outcome {}, {} bytes of 3000000, output {}, wrong_source {}; send exit {:?}; recv said: {}",
        n(&a, "sent"),
        r.code,
        r.stats["outcome"],
        bytes,
        match r.sha.as_deref() {
            None => "none",
            Some(s) if s == want => "= input",
            Some(_) => "WRONG",
        },
        r.stat("wrong_source"),
        send_code,
        r.stderr.trim(),
    );
    assert!(n(&a["kinds"], "fin_spm") >= 1, "attack too small: {a}");
    assert_ne!(
        r.sha.as_deref(),
        Some(want.as_str()),
        "the attack did nothing"
    );
    assert_eq!(r.stat("wrong_source"), 0);
}

/// One signed transfer of [`lab_lists_forged_where_the_next_list_will_be_cost_a_digest_each`]:
/// the receiver's end, its time from the sender's start to its own exit (seconds), the
/// sender's exit code, standard error and stats, and the Unix time the sender started.
struct Timed {
    r: RxEnd,
    secs: f64,
    code: Option<i32>,
    err: String,
    send: Value,
    t0: f64,
}

/// `input` sent signed with `key` to a receiver on r1 trusting `public`, files in `dir`;
/// `evil` runs meanwhile, if any.
fn timed_signed_transfer(
    lab: &Lab,
    dir: &Path,
    input: &Path,
    (key, public): (&str, &str),
    evil: Option<Value>,
) -> (Timed, Option<Value>) {
    let rx = recv(lab, "r1", dir, &["--trust", public]);
    let evil = evil.map(|spec| Evil::start(lab, "r2", dir, spec));
    std::thread::sleep(Duration::from_millis(500));
    let stats = dir.join("send.json");
    let t0 = unix_now();
    let (code, err, send) = sender_done(send(lab, input, &stats, &["--sign", key]), &stats);
    let r = rx.wait(Duration::from_secs(30));
    let secs = r.samples.last().unwrap().0 - t0;
    let a = evil.map(Evil::finish);
    let t = Timed {
        r,
        secs,
        code,
        err,
        send,
        t0,
    };
    (t, a)
}

/// How many times the control's duration a signed transfer may take under
/// [`lab_lists_forged_where_the_next_list_will_be_cost_a_digest_each`]'s flood.
const LIST_FLOOD_SLOWDOWN: f64 = 1.5;

/// Issue 57 item 8: "Signed mode costs a receiver ~45 us per spoofed list-shaped packet
/// carrying a copied, well-formed signature (junk costs ~6 us): 20,000/s doubled a 60 MB
/// transfer; a replayed real list at 9.6k/s made it 2.9x slower". A 12 MB signed transfer
/// (the control), then the same in the same lab while the attacker, spoofing the source's
/// address, floods the place where the next list will be, learned from the genuine lists it
/// hears, 20,000 a second ([`attack_list_flood`]: the genuine list replayed there, and the
/// genuine list with its key and commitment changed, both with the source's signature).
/// Lists are chained: where a verified list says the next one is, a candidate whose key
/// does not match the verified list's commitment is refused with one digest, before any
/// signature check, so the budget of failed checks (`unchecked`) is never reached.
///
/// A list lost at the bottleneck (the source's first burst loses every other packet here)
/// leaves the next list and the forgeries after it beyond the verified lists' reach: they
/// are held unverified, and the receiver acknowledges a held packet only once its list
/// verifies it. Acknowledged at once, the forgeries ahead of the source carried the ACKs'
/// RX_MAX past the source's lead, the source rejected every ACK as acknowledging data never
/// sent and stalled at a window of 1 (12 of 15 runs, 40 s, recv failing). Measured since, 6
/// runs: attacked 2.92-2.94 s against 2.94-3.12 s for the control (0.93-1.00x), 52,206-52,798
/// forgeries at 102-105 places, every one refused with a digest (`forged`, `unchecked` 0),
/// 0 ACKs rejected, recv CPU 0.42-0.44 s against 0.26-0.27 s (2.9-3.4 us per forgery).
#[test]
fn lab_lists_forged_where_the_next_list_will_be_cost_a_digest_each() {
    let _serial = lock();
    let Some(lab) = Lab::up("ah", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = signing_key(dir.path());
    let keys = (key.to_str().unwrap(), public.to_str().unwrap());
    let (input, want) = random_file(dir.path(), 12_000_000);
    let control_dir = tempfile::tempdir().unwrap();
    let (c, _) = timed_signed_transfer(&lab, control_dir.path(), &input, keys, None);
    assert_eq!(c.code, Some(0), "control: {}", c.err);
    c.r.assert_complete(&want, "control receiver");
    let spec = json!({"mode": "list_flood", "spoof": true, "per_sec": 20_000});
    let (t, a) = timed_signed_transfer(&lab, dir.path(), &input, keys, Some(spec));
    let a = a.unwrap();
    let (k, sent) = (&a["kinds"], n(&a, "sent"));
    let first = a["first_send_unix"].as_f64().unwrap_or(0.0);
    let span = a["last_send_unix"].as_f64().unwrap_or(0.0) - first;
    let (cs, ts) = (
        &c.r.stats["status"]["stats"]["signed"],
        &t.r.stats["status"]["stats"]["signed"],
    );
    // The receiver's CPU time per forgery it refused, microseconds.
    let us_per_forgery = (t.r.cpu_secs - c.r.cpu_secs) * 1e6 / n(ts, "forged").max(1) as f64;
    eprintln!(
        "forged lists at the next list's place: attacker sent {sent} from {SOURCE} ({} replayed, {} rekeyed) at {:.0}/s from {:.2} s to {:.2} s into the transfer, at {} places ({} then filled by the source's next list, {} not); control: {:.2} s, recv CPU {:.2} s, lists {}, forged {}, unchecked {}; attacked: {:.2} s ({:.2}x), recv CPU {:.2} s ({:.2}x, {us_per_forgery:.1} us per forgery refused), lists {}, forged {}, unchecked {}, reasked {}, unverifiable {}, {} NAKs for {} sqns (control {} for {}), outcome {}, exit {:?}; source: {} data packets, {} ACKs rejected (control {}), {} NAKed sqns outside its window, window at the end {}, sending took {:.2} s (control {:.2} s), exit {:?}",
        n(k, "replayed_list"),
        n(k, "rekeyed_list"),
        sent as f64 / span.max(1e-9),
        first - t.t0,
        first + span - t.t0,
        n(&a, "places"),
        n(&a, "hits"),
        n(&a, "misses"),
        c.secs,
        c.r.cpu_secs,
        cs["lists"],
        cs["forged"],
        cs["unchecked"],
        t.secs,
        t.secs / c.secs,
        t.r.cpu_secs,
        t.r.cpu_secs / c.r.cpu_secs.max(0.01),
        ts["lists"],
        ts["forged"],
        ts["unchecked"],
        ts["reasked"],
        ts["unverifiable"],
        t.r.stat("naks_sent"),
        t.r.stat("nak_sqns_sent"),
        c.r.stat("naks_sent"),
        c.r.stat("nak_sqns_sent"),
        t.r.stats["outcome"],
        t.r.code,
        t.send["status"]["stats"]["odata_packets"],
        t.send["status"]["stats"]["acks_rejected"],
        c.send["status"]["stats"]["acks_rejected"],
        t.send["status"]["stats"]["naks_outside_window"],
        t.send["status"]["window"],
        t.send["sending_seconds"].as_f64().unwrap_or(0.0),
        c.send["sending_seconds"].as_f64().unwrap_or(0.0),
        t.code,
    );
    // The attack ran, aimed right, at the rate asked for, inside the transfer.
    assert!(sent >= 20_000, "attack too small: {a}");
    assert!(
        n(k, "replayed_list") >= 10_000 && n(k, "rekeyed_list") >= 10_000,
        "{a}"
    );
    assert!(n(&a, "places") >= 50, "{a}");
    assert!(
        n(&a, "hits") >= n(&a, "places") * 9 / 10,
        "aimed wrong: {a}"
    );
    assert!(sent as f64 / span >= 10_000.0, "attack too slow: {a}");
    assert!(first > t.t0 && first + span <= t.t0 + t.secs + 0.1, "{a}");
    assert_eq!(t.code, Some(0), "{}", t.err);
    t.r.assert_complete(&want, "receiver");
    // The forgeries reached the receiver and were refused by the chain, never by a
    // signature check over budget: each cost far less than one (about 45 us).
    assert!(n(ts, "forged") > 0, "{ts}");
    assert_eq!(n(ts, "unchecked"), 0, "{ts}");
    assert!(us_per_forgery < 20.0, "{us_per_forgery:.1} us per forgery");
    assert!(
        t.secs <= c.secs * LIST_FLOOD_SLOWDOWN,
        "the flood made the transfer {:.2}x slower ({:.2} s against {:.2} s)",
        t.secs / c.secs,
        t.secs,
        c.secs
    );
}

/// Issue 21 item 5: "the sender never gives up". Every receiver is killed 1 s into a
/// transfer paced to last about 4 s; the sender must exit 1 once `--feedback-timeout` (3 s)
/// has passed without a word from any receiver.
#[test]
fn lab_sender_gives_up_when_every_receiver_is_gone() {
    let _serial = lock();
    let Some(lab) = Lab::up("ab", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = random_file(dir.path(), 4_000_000);
    let rxs = [
        recv(&lab, "r1", dir.path(), &[]),
        recv(&lab, "r2", dir.path(), &[]),
    ];
    std::thread::sleep(Duration::from_millis(400));
    let stats = dir.path().join("send.json");
    let extra = ["--rate-max", "8Mbit", "--feedback-timeout", "3s"];
    let mut tx = send(&lab, &input, &stats, &extra);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(tx.try_wait().unwrap().is_none(), "sent 4 MB in 1 s?");
    for rx in rxs {
        rx.kill();
    }
    let killed = Instant::now();
    let (code, err, s) = sender_done(tx, &stats);
    let after = killed.elapsed().as_secs_f64();
    let odata = s["status"]["stats"]["odata_bytes"].as_u64().unwrap_or(0);
    eprintln!(
        "liveness: receivers killed 1 s in; send exited {code:?} {after:.2} s later, having sent {odata} of 4000000 bytes: {}",
        err.trim()
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--feedback-timeout"), "{err}");
    // Not before the timeout (the last feedback came just before the kill), and within it
    // plus 2 s of margin (a debug build on 2 cores).
    assert!((2.7..5.0).contains(&after), "gave up {after:.2} s after");
    assert!(odata < 4_000_000, "everything was sent anyway");
}

/// The honest receiver's own link in the acker-hijack test: a tbf on its port of the lab's
/// switch (`r1` in the `sw` namespace), 4 Mbit/s with a queue of 15,000 bytes (about 10
/// packets, 30 ms). Alone on it, `pgmcc send` (either preset) moved 2 MB at 3.6-3.7 Mbit/s
/// with no stall; with a 3,000- or 6,000-byte queue its windows were so small that it
/// stalled (3 s each) 11 to 16 times.
const HONEST_TBF: [&str; 6] = ["rate", "4mbit", "burst", "3000", "limit", "15000"];
/// That link's rate, Mbit/s.
const HONEST_MBIT: f64 = 4.0;
/// The liar's reports: all but certain loss (65535 / 65536, the most a report can claim: no
/// honest receiver's real loss can read higher, so the trusted control cannot lose the role
/// to one)...
const LIAR_LOSS: u16 = 65535;
/// ...and a round trip 100 ms longer than its own (see the test).
const LIAR_CLAIMED_RTT_MS: u64 = 100;
/// The source's rate cap in the acker-hijack and sniffer tests (PGM bytes, repairs
/// included): 5 times the honest link, below the lab's 40 Mbit/s bottleneck, so that the
/// attacker's own path never drops (its ACKs then show no loss at all, the simulator's case).
const HIJACK_RATE_CAP: &str = "20Mbit";

/// One transfer of the acker-hijack test: what the source, the honest receiver, the liar
/// and the honest receiver's link measured.
struct Hijack {
    send_code: Option<i32>,
    send_err: String,
    s: Value,
    /// The source's rate: the file's bytes over the time until the last one left as ODATA.
    mbit: f64,
    /// That time, seconds.
    data_secs: f64,
    r: RxEnd,
    /// Seconds from the source's start until the honest receiver exited.
    r_secs: f64,
    a: Value,
    /// Packets the honest receiver's link sent and dropped during the run.
    link: (u64, u64),
}

impl Hijack {
    fn cc(&self, name: &str) -> u64 {
        self.s["status"]["cc"][name].as_u64().unwrap()
    }

    /// How long the liar was named acker: from the first to the last ODATA that named it
    /// (as it received them), milliseconds.
    fn liar_ms(&self) -> f64 {
        let t = |k: &str| self.a[k]["unix"].as_f64().unwrap_or(0.0);
        (t("last_named") - t("first_named")) * 1000.0
    }
}

/// Packets sent and dropped so far by the qdisc on `dev` in the lab's switch.
fn qdisc_counts(lab: &Lab, dev: &str) -> (u64, u64) {
    let out = lab
        .cmd("sw")
        .args(["tc", "-s", "qdisc", "show", "dev", dev])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // " Sent 3299366 bytes 2364 pkt (dropped 684, overlimits 7373 requeues 0)"
    let after = |word: &str| -> u64 {
        let w: Vec<&str> = text.split_whitespace().collect();
        let i = w.iter().position(|x| *x == word).unwrap();
        w[i + 1].trim_end_matches(',').parse().unwrap()
    };
    let pkts = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .find(|w| w[1] == "pkt")
        .map(|w| w[0].parse().unwrap())
        .unwrap();
    (pkts, after("(dropped"))
}

/// A transfer of `input` to the honest receiver on r1 under `--cc cc`, with attack `attack`
/// (an [`Evil::start`] spec) run from r2, or none; the source gives up after `max_duration`,
/// the receiver `idle` after the source went silent.
fn hijack_run(
    lab: &Lab,
    input: &Path,
    cc: &str,
    max_duration: &str,
    idle: &str,
    attack: Option<Value>,
) -> Hijack {
    let dir = tempfile::tempdir().unwrap();
    let link0 = qdisc_counts(lab, "r1");
    let rx = recv_idle(lab, "r1", dir.path(), &[], idle);
    let evil = attack.map(|spec| Evil::start(lab, "r2", dir.path(), spec));
    std::thread::sleep(Duration::from_millis(500));
    let stats = dir.path().join("send.json");
    let started = Instant::now();
    let tx = lab
        .cmd("s")
        .arg(pgmcc())
        .args([
            "send", "--group", GROUP, "-q", "--linger", "500ms", "--cc", cc,
        ])
        .args([
            "--rate-max",
            HIJACK_RATE_CAP,
            "--max-duration",
            max_duration,
        ])
        .arg("--stats")
        .arg(&stats)
        .arg(input)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (send_code, send_err, s) = sender_done(tx, &stats);
    let r = rx.wait(Duration::from_secs(30));
    let r_secs = started.elapsed().as_secs_f64();
    let a = evil.map_or(Value::Null, Evil::finish);
    let link1 = qdisc_counts(lab, "r1");
    // `sending_seconds` is the whole session when it ends at `--max-duration` (still
    // lingering for repairs): the time the last byte left as ODATA is `data_sent_secs`.
    let secs = s["status"]["data_sent_secs"]
        .as_f64()
        .or(s["sending_seconds"].as_f64())
        .unwrap();
    let mbit = s["bytes"].as_f64().unwrap() * 8.0 / secs / 1e6;
    Hijack {
        send_code,
        send_err,
        s,
        mbit,
        data_secs: secs,
        r,
        r_secs,
        a,
        link: (link1.0 - link0.0, link1.1 - link0.1),
    }
}

/// Issue 21: "a false loss report wins the acker election and ACKs then drive the source at
/// 1.3-3.2x the bottleneck" (`scenarios/acker-hijack.toml` in the simulator). The honest
/// receiver (r1) sits behind a 4 Mbit/s link of its own; the liar (r2, [`attack_liar`]) has
/// the lab's whole 40 Mbit/s path (the source is capped at 20 Mbit/s: [`HIJACK_RATE_CAP`]),
/// answers the first election request at once, ACKs what it is named for with valid proofs
/// of receipt, and claims all but certain loss in every report (50% until a CI run in which
/// the honest receiver's real loss, 52%, won the trusted role back after 603 packets). Two
/// transfers of the same 2 MB, one after the other: the recommended controller (`--cc pgmcc`), which checks the acker's reports
/// against its ACKs, then the paper's (`--cc pgmcc-paper`), which trusts them: the control
/// that shows the attack works here.
///
/// The liar also claims a round trip 100 ms longer than its own; without that the control
/// showed nothing. The lab has no propagation delay (no netem on this kernel), so round trips
/// are queueing alone, and the honest receiver's includes its own link's queue (up to 30 ms)
/// on top of every queue the liar's does. The election compares `RTT x sqrt(loss)`, the
/// round trip counted in data packets sent during it: a liar claiming 50% with its real round
/// trip (4 packets) lost the role to the honest receiver's real loss (33-34%, 52 packets)
/// after 120-125 packets, 50 ms, in both trusted runs measured, and the source averaged
/// 2.3 Mbit/s. A liar really farther away, holding each ACK back 40 or 60 ms (on the wire:
/// 60.6 ms against the honest receiver's 32 ms at most), did not keep the role either: the
/// source sends each window in a burst, so a longer round trip does not count more packets.
/// In 7 trusted runs with such holds (and no rate cap) it lost the role before the end of the data in 3 (its
/// round trip 5-24 packets against the honest receiver's 20-30, at 63-68% loss), and the
/// source averaged 1.3-6.1 Mbit/s (the paper's window opens by one packet per round trip).
/// A claimed round trip counts every packet sent since the time it claims, several windows,
/// as the round trip of a receiver that far away on a paced path would (the simulator's liar
/// has 100 ms of delay each way). Claimed round trips are not checked (`docs/security.md`);
/// the check still discredits the liar, because what makes it the slowest receiver is the
/// loss it claims: once that counts as what its ACKs show (none), its throughput reads
/// unbounded whatever its round trip, and the honest receiver's next report wins.
/// A 2-receiver lab whose r1, the honest receiver, sits behind a slow link of its own
/// ([`HONEST_TBF`] on its bridge port); `None` without root.
fn honest_behind_a_slow_link(name: &str) -> Option<Lab> {
    let lab = Lab::up(name, 2)?;
    let st = lab
        .cmd("sw")
        .args(["tc", "qdisc", "add", "dev", "r1", "root", "tbf"])
        .args(HONEST_TBF)
        .status()
        .unwrap();
    assert!(st.success(), "shaping the honest receiver's link");
    Some(lab)
}

#[test]
fn lab_a_receiver_lying_about_its_loss_cannot_clock_the_source() {
    let _serial = lock();
    let Some(lab) = honest_behind_a_slow_link("ae") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 2_000_000);
    let liar = node_addr("r2").to_string();
    let honest = node_addr("r1").to_string();
    // The control's source keeps repairing for as long as the honest receiver NAKs: it is
    // cut at 6 s (all its data left within 1.5 s in every run measured), and the honest
    // receiver gives up 2 s after the source went silent.
    let liar_spec =
        || Some(json!({"mode": "liar", "claim": LIAR_LOSS, "claim_rtt_ms": LIAR_CLAIMED_RTT_MS}));
    let check = hijack_run(&lab, &input, "pgmcc", "20s", "6s", liar_spec());
    let trust = hijack_run(&lab, &input, "pgmcc-paper", "6s", "2s", liar_spec());
    for (what, h) in [
        ("checked (--cc pgmcc)", &check),
        ("trusted (--cc pgmcc-paper)", &trust),
    ] {
        let odata = h.s["status"]["stats"]["odata_packets"].as_u64().unwrap();
        eprintln!(
            "acker hijack, {what}: source {:.2} Mbit/s ({} B in {:.2} s; {} B sent in all, {:.1} s with the linger), send exit {:?}; acker at the end {}, reports_discredited {}, acker switches {}, stalls {}, ACK proofs failed {}; liar: named acker on {} of {} ODATA over {:.0} ms (sqn {}..{}), sent {} ACKs and {} election answer(s), {} ODATA lost on its path; honest receiver: exit {:?}, {}, {} of 2000000 B, {}, {} repairs, {} NAKs, exited {:.1} s after the source started; its link sent {} packets and dropped {}",
            h.mbit,
            h.s["bytes"],
            h.data_secs,
            sstat(&h.s, "bytes_sent"),
            h.s["seconds"].as_f64().unwrap(),
            h.send_code,
            h.s["status"]["acker"],
            h.cc("reports_discredited"),
            h.cc("acker_switches"),
            h.cc("stalls"),
            sstat(&h.s, "acks_proof_failed"),
            n(&h.a, "named"),
            odata,
            h.liar_ms(),
            h.a["first_named"]["sqn"],
            h.a["last_named"]["sqn"],
            n(&h.a["kinds"], "ack"),
            n(&h.a["kinds"], "election_answer"),
            n(&h.a, "odata_missed"),
            h.r.code,
            h.r.stats["outcome"],
            h.r.stats["bytes"],
            match h.r.sha.as_deref() {
                None => "no output",
                Some(x) if x == want => "sha256 = input",
                Some(_) => "WRONG sha256",
            },
            h.r.stat("rdata_packets") + h.r.stat("parity_packets"),
            h.r.stat("naks_sent"),
            h.r_secs,
            h.link.0,
            h.link.1,
        );
        // The attack was staged as intended: the liar was elected, its ACKs carried valid
        // proofs of receipt (none refused), and its path lost nothing (it had no loss to
        // report).
        assert!(
            n(&h.a, "named") >= 100,
            "{what}: the liar was never acker: {}",
            h.a
        );
        assert_eq!(sstat(&h.s, "acks_proof_failed"), 0, "{what}: {}", h.s);
        assert_eq!(n(&h.a, "unprovable"), 0, "{what}: {}", h.a);
        assert_eq!(n(&h.a, "odata_missed"), 0, "{what}: {}", h.a);
    }
    // Checked: the liar is found out, the honest receiver is the acker and gets the file,
    // and the source ran at the honest link's pace. The band: that link carries 4 Mbit/s on
    // the wire (3.6-3.7 Mbit/s of payload measured alone); the packets the liar clocked
    // before it was discredited went faster, and while they are at most a fifth of the file
    // the average is at most 1.25 times the link's rate, however fast they went.
    let odata = sstat(&check.s, "odata_packets");
    // The liar never reports: the transfer is unconfirmed (exit 3), not failed.
    assert_eq!(check.send_code, Some(3), "{}", check.send_err);
    assert!(
        check.send_err.contains("1 receiver confirmed the stream"),
        "{}",
        check.send_err
    );
    check
        .r
        .assert_complete(&want, "the honest receiver (checked)");
    assert!(check.cc("reports_discredited") >= 1, "{}", check.s);
    assert_eq!(check.s["status"]["acker"], honest.as_str(), "{}", check.s);
    assert!(n(&check.a, "named") * 5 <= odata, "{}", check.a);
    assert!(
        check.mbit <= 1.25 * HONEST_MBIT,
        "checked: the source ran at {:.2} Mbit/s",
        check.mbit
    );
    // Trusted (the control): the liar is never found out, stays acker for the whole file,
    // and clocks the source at well over the honest receiver's link.
    assert_eq!(trust.cc("reports_discredited"), 0, "{}", trust.s);
    assert_eq!(trust.s["status"]["acker"], liar.as_str(), "{}", trust.s);
    let odata = sstat(&trust.s, "odata_packets");
    assert!(n(&trust.a, "named") * 100 >= odata * 95, "{}", trust.a);
    assert!(
        trust.mbit >= 2.0 * HONEST_MBIT,
        "trusted: the source ran at {:.2} Mbit/s only",
        trust.mbit
    );
}

/// Keyed mode, `send --expect r1,r2`: r2 is killed 1.5 s into a 10 MB transfer, and a host
/// without the key on the receivers' segment (r3, [`attack_replay_reports`]) replays r1's
/// sealed delivery reports, byte for byte, from r2's address. For it to hear unicast between
/// other hosts the receivers' bridge is made a hub (`ageing_time 0`: it forgets every address
/// at once and floods unicast as it floods multicast). The report names its reporter inside
/// the seal, and the source files a report only under the address it names: the replay is
/// refused (`reports_refused`), r2 is never confirmed and the source exits 1.
#[test]
fn lab_a_sealed_report_replayed_from_another_receivers_address_is_refused() {
    let _serial = lock();
    let Some(lab) = Lab::up("af", 3) else { return };
    let hub = lab
        .cmd("sw")
        .args(["ip", "link", "set", "br-down"])
        .args(["type", "bridge", "ageing_time", "0"])
        .status()
        .unwrap();
    assert!(hub.success(), "making the receivers' bridge a hub");
    let dir = tempfile::tempdir().unwrap();
    let key = group_key(dir.path());
    let key = key.to_str().unwrap();
    let (input, want) = random_file(dir.path(), 10_000_000);
    let (r1, r2) = (node_addr("r1").to_string(), node_addr("r2").to_string());
    let rx1 = recv(&lab, "r1", dir.path(), &["--key", key]);
    let rx2 = recv(&lab, "r2", dir.path(), &["--key", key]);
    let evil = Evil::start(
        &lab,
        "r3",
        dir.path(),
        json!({"mode": "replay_reports", "spoof": true, "reporter": r1, "as": r2}),
    );
    std::thread::sleep(Duration::from_millis(500));
    let stats = dir.path().join("send.json");
    let expect = format!("{r1},{r2}");
    let extra = ["--key", key, "--expect", &expect, "--expect-timeout", "5s"];
    let tx = send(&lab, &input, &stats, &extra);
    std::thread::sleep(Duration::from_millis(1500));
    rx2.kill();
    let (code, err, s) = sender_done(tx, &stats);
    let r = rx1.wait(Duration::from_secs(30));
    let a = evil.finish();
    let data_secs = s["status"]["data_sent_secs"].as_f64().unwrap_or(0.0);
    let reports = s["status"]["reports"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let report_of = |ip: &str| reports.iter().find(|x| x["receiver"] == ip).cloned();
    let replayed = n(&a["kinds"], "replayed_report");
    eprintln!(
        "replayed sealed reports: r2 killed 1.5 s into the transfer, the data all sent after {data_secs:.2} s; attacker captured {} datagrams from r1 to the source ({} sealed, lengths {}), replayed {replayed} of the report's length ({} B) from r2's address; source: reports received {}, refused {}, reports filed {}; send exit {code:?}: {}; r1: exit {:?}, sha256 {}, reports sent {}",
        n(&a, "captured"),
        n(&a, "captured_sealed"),
        a["captured_lengths"],
        a["report_len"],
        sstat(&s, "reports_received"),
        sstat(&s, "reports_refused"),
        json!(reports),
        err.trim().replace('\n', " | "),
        r.code,
        if r.sha.as_deref() == Some(want.as_str()) { "= input" } else { "WRONG" },
        r.stat("reports_sent"),
    );
    // r2 was killed while the data was still going out (else it may have reported itself).
    assert!(data_secs > 1.5, "all the data had left after {data_secs} s");
    r.assert_complete(&want, "r1");
    let r1_report = report_of(&r1).unwrap_or_else(|| panic!("no report from r1: {s}"));
    assert_eq!(r1_report["status"], "complete", "{r1_report}");
    assert_eq!(r1_report["sha256"], want.as_str(), "{r1_report}");
    // The attack happened: r1's sealed reports were heard through the hub and replayed.
    assert!(replayed >= 1, "nothing replayed: {a}");
    // ...and every one refused: r2 has no report, the source says so and exits 1.
    assert_eq!(
        sstat(&s, "reports_refused"),
        replayed,
        "{}",
        s["status"]["stats"]
    );
    assert_eq!(report_of(&r2), None, "a report filed for r2: {s}");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("they did not"), "{err}");
}

/// Plain mode: a sniffer on a faster path than the acker's proves receipt in the acker's name.
/// The honest receiver (r1) sits behind a 4 Mbit/s link of its own ([`HONEST_TBF`]); the
/// sniffer (r2, [`attack_liar`] with `as`) hears each ODATA before r1 does and, from r1's
/// address, ACKs at once every one that names r1 as acker (or asks for an election), with
/// everything it received in the bitmap, the right proof of receipt (the nonces travel in
/// clear) and a report of no loss. r1 keeps ACKing too, behind the sniffer and with its own
/// link's losses: the source sees two streams of ACKs in one name and discredits the name
/// (`ackers_discredited`), holding it to `unproven_window`. Two transfers of the same 2 MB in
/// the same lab, under the same 20 Mbit/s cap ([`HIJACK_RATE_CAP`]): without the sniffer
/// (the control), then with it.
///
/// What plain mode cannot prevent (`docs/security.md`): a host that both hears the session
/// and spoofs a receiver's address is that receiver as far as the source can tell. The
/// discredited name's window cap is no rate bound when the sniffer's round trip is short, and
/// r1's own ACKs show its losses only in packets the sniffer acknowledged first, so the
/// controller sees none. Measured in 5 runs: control 3.06-3.77 Mbit/s, 1.09-1.12x the file
/// on the wire; sniffed 4.48-4.96 Mbit/s, 5.01-5.15x the file, r1's link dropping ~5,500
/// packets, r1's file intact every time. The test asserts what plain mode does guarantee: the
/// name is discredited, r1 still gets every byte, and the bytes on the wire stay below
/// [`SNIFFER_BOUND`] times the file (a guard against this getting worse, not a claim that
/// plain mode bounds it). The control ran once per run while measuring; it is not rerun
/// here (an honest lossy acker is never discredited:
/// `honest_ackers_prove_receipt_through_a_lossy_transfer`). Keyed mode prevents the attack:
/// a keyless host cannot seal an ACK
/// ([`lab_keyed_transfer_is_untouched_by_plain_and_sealed_forgeries`]).
#[test]
fn lab_a_sniffer_proving_receipt_in_the_ackers_name_is_discredited_but_not_bounded() {
    let _serial = lock();
    let Some(lab) = honest_behind_a_slow_link("ag") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 2_000_000);
    let honest = node_addr("r1").to_string();
    let sniffer = json!({"mode": "sniffer", "spoof": true, "as": honest, "claim": 0});
    let sniffed = hijack_run(&lab, &input, "pgmcc", "20s", "6s", Some(sniffer));
    {
        let (what, h) = ("sniffed", &sniffed);
        eprintln!(
            "sniffer in the acker's name, {what}: source {:.2} Mbit/s ({:.2} s), {} B sent in all ({:.2}x the file) over {:.1} s, {} RDATA ({} B), {} NAKs for {} sqns, budget waits {}, odata held {}, window at the end {}, send exit {:?}; acker at the end {}, ackers_discredited {}, acks unproven {}, ACK proofs failed {}, cc acks {} ignored {} loss events {} stalls {}; sniffer: named acker on {} ODATA, sent {} ACKs and {} election answers, {} unprovable, {} ODATA lost on its path; r1: exit {:?}, {}, {} repairs, {} NAKs; its link sent {} packets and dropped {}",
            h.mbit,
            h.data_secs,
            sstat(&h.s, "bytes_sent"),
            sstat(&h.s, "bytes_sent") as f64 / 2e6,
            h.s["seconds"].as_f64().unwrap(),
            sstat(&h.s, "rdata_packets"),
            sstat(&h.s, "rdata_bytes"),
            sstat(&h.s, "naks_received"),
            sstat(&h.s, "nak_sqns_received"),
            sstat(&h.s, "repairs_budget_limited"),
            sstat(&h.s, "odata_held"),
            h.s["status"]["window"],
            h.send_code,
            h.s["status"]["acker"],
            sstat(&h.s, "ackers_discredited"),
            sstat(&h.s, "acks_unproven"),
            sstat(&h.s, "acks_proof_failed"),
            h.cc("acks"),
            h.cc("acks_ignored"),
            h.cc("loss_events"),
            h.cc("stalls"),
            n(&h.a, "named"),
            n(&h.a["kinds"], "ack"),
            n(&h.a["kinds"], "election_answer"),
            n(&h.a, "unprovable"),
            n(&h.a, "odata_missed"),
            h.r.code,
            match h.r.sha.as_deref() {
                None => "no output",
                Some(x) if x == want => "sha256 = input",
                Some(_) => "WRONG sha256",
            },
            h.r.stat("rdata_packets") + h.r.stat("parity_packets"),
            h.r.stat("naks_sent"),
            h.link.0,
            h.link.1,
        );
        assert_eq!(h.send_code, Some(0), "{what}: {}", h.send_err);
        h.r.assert_complete(&want, what);
        assert_eq!(sstat(&h.s, "acks_proof_failed"), 0, "{what}: {}", h.s);
    }
    // The attack was staged as intended: the sniffer ACKed in r1's name, every ACK with a
    // valid proof, and lost nothing on its path.
    assert!(n(&sniffed.a["kinds"], "ack") >= 100, "{}", sniffed.a);
    assert_eq!(n(&sniffed.a, "odata_missed"), 0, "{}", sniffed.a);
    // Found out: r1's name is discredited...
    assert!(
        sstat(&sniffed.s, "ackers_discredited") >= 1,
        "{}",
        sniffed.s
    );
    // ...which plain mode cannot turn into a rate bound: the guard against worse.
    let bytes = sstat(&sniffed.s, "bytes_sent");
    assert!(
        bytes as f64 <= SNIFFER_BOUND * 2e6,
        "the source sent {bytes} B for a 2 MB file"
    );
}

/// How many times the file's bytes the source may put on the wire with the sniffer in
/// [`lab_a_sniffer_proving_receipt_in_the_ackers_name_is_discredited_but_not_bounded`]
/// (measured 5.0-5.2x; 1.09-1.12x without the sniffer): a guard against worse, since plain
/// mode cannot bound it.
const SNIFFER_BOUND: f64 = 7.0;

/// How long before a replay's victims started the session they are played may have begun
/// (`pgmcc recv --start-slack`) in
/// [`lab_a_recorded_session_played_back_after_recv_started_is_refused`].
const REPLAY_SLACK: &str = "2s";
/// ...and how long after the recording began they start: a second past the slack.
const REPLAY_VICTIMS_AFTER: f64 = 3.0;

/// What [`replay_run`] measured in one mode.
struct Replayed {
    /// The victims' start less the first recorded datagram's arrival, seconds.
    gap: f64,
    a: Value,
    /// The victims: without --source, and with it.
    plain: RxEnd,
    bound: RxEnd,
}

/// Issue 57 item 5: a keyed or signed session recorded off the wire and played back, within
/// the clocks' 5 minutes, to receivers started after it. In each mode, in one lab: a real
/// 1.5 MB transfer to two receivers (`--start-slack 2s`, one with `--source`: the positive
/// control, started before the sender) while the attacker (r3) records every datagram the
/// source sends to the group; then, 3 s after the recording began and once the sender has
/// exited, two new receivers with the same flags in the same nodes, and the attacker plays
/// the recording to the group byte for byte from the source's address and port (raw socket,
/// IP_HDRINCL). Neither may take it for a current session.
#[test]
fn lab_a_recorded_session_played_back_after_recv_started_is_refused() {
    let _serial = lock();
    let Some(lab) = Lab::up("ai", 3) else { return };
    let keyed = replay_run(&lab, false);
    let signed = replay_run(&lab, true);
    for (mode, m) in [("keyed", &keyed), ("signed", &signed)] {
        let a = &m.a;
        assert!(
            m.gap > REPLAY_VICTIMS_AFTER - 0.1,
            "{mode}: the victims started {:.2} s after the recording began",
            m.gap
        );
        // The replay happened, all of it: the whole file's worth and more, from the source.
        assert_eq!(n(a, "too_large"), 0, "{mode}: {a}");
        assert_eq!(
            n(a, "sent"),
            n(a, "recorded"),
            "{mode}: replay cut short: {a}"
        );
        assert!(
            n(a, "sent_bytes") >= 1_500_000,
            "{mode}: replay too small: {a}"
        );
        for (who, r) in [("recv", &m.plain), ("recv --source", &m.bound)] {
            let what = format!("{mode}, {who}: {}", r.stderr);
            assert_ne!(r.code, Some(0), "{what}");
            assert_ne!(r.stats["outcome"], "complete", "{what}");
            assert_eq!(r.sha, None, "{what}: wrote the replayed file");
            let refused = if mode == "keyed" {
                n(&r.stats["status"]["keyed"], "before_start")
            } else {
                n(&r.stats["status"]["stats"]["signed"], "before_start")
            };
            assert!(refused > 0, "{what}: {}", r.stats["status"]);
            assert!(
                r.stderr
                    .contains("a recording of an earlier session played back")
                    && r.stderr.contains("2 s before this receiver started"),
                "{what}"
            );
            // The error itself names the refusal, not only the warning before it.
            let error = r
                .stderr
                .lines()
                .find(|l| l.contains("error:"))
                .unwrap_or("");
            assert!(
                error.contains("refused as recordings played back"),
                "{what}"
            );
        }
    }
    assert_eq!(n(&keyed.plain.stats["status"]["keyed"], "opened"), 0);
    assert_eq!(n(&keyed.bound.stats["status"]["keyed"], "opened"), 0);
    for r in [&signed.plain, &signed.bound] {
        assert_eq!(
            n(&r.stats["status"]["stats"]["signed"], "lists"),
            0,
            "{}",
            r.stats
        );
    }
}

/// One mode of [`lab_a_recorded_session_played_back_after_recv_started_is_refused`]: the
/// recorded transfer and its positive control, then the replay.
fn replay_run(lab: &Lab, signed: bool) -> Replayed {
    let mode = if signed { "signed" } else { "keyed" };
    let dir = tempfile::tempdir().unwrap();
    let (secret, public) = signing_key(dir.path());
    let group_key = group_key(dir.path());
    let (secret, public, group_key) = (
        secret.to_str().unwrap(),
        public.to_str().unwrap(),
        group_key.to_str().unwrap(),
    );
    let (rx_flags, tx_flags) = if signed {
        (vec!["--trust", public], vec!["--sign", secret])
    } else {
        (vec!["--key", group_key], vec!["--key", group_key])
    };
    let source = SOURCE.to_string();
    let mut bound_flags = rx_flags.clone();
    bound_flags.extend(["--start-slack", REPLAY_SLACK]);
    let plain_flags = bound_flags.clone();
    bound_flags.extend(["--source", &source]);
    let (input, want) = random_file(dir.path(), 1_500_000);
    let (honest, victims) = (dir.path().join("honest"), dir.path().join("victims"));
    std::fs::create_dir(&honest).unwrap();
    std::fs::create_dir(&victims).unwrap();
    let (go, heard) = (dir.path().join("go"), dir.path().join("heard"));
    let evil = Evil::start(
        lab,
        "r3",
        dir.path(),
        json!({"mode": "replay", "spoof": true, "go": go, "heard": heard}),
    );
    // The positive control: the same flags, started before the sender.
    let rx1 = recv(lab, "r1", &honest, &plain_flags);
    let rx2 = recv(lab, "r2", &honest, &bound_flags);
    std::thread::sleep(Duration::from_millis(300));
    let stats = dir.path().join("send.json");
    let (code, err, _s) = sender_done(send(lab, &input, &stats, &tx_flags), &stats);
    assert_eq!(code, Some(0), "{mode} sender: {err}");
    rx1.wait(Duration::from_secs(10))
        .assert_complete(&want, &format!("{mode}, r1 started before the sender"));
    rx2.wait(Duration::from_secs(10)).assert_complete(
        &want,
        &format!("{mode}, r2 (--source) started before the sender"),
    );
    // The victims start a second past the slack after the first datagram was recorded.
    let began: f64 = std::fs::read_to_string(&heard)
        .unwrap_or_else(|e| panic!("{mode}: the attacker recorded nothing: {e}"))
        .trim()
        .parse()
        .unwrap();
    let wait = began + REPLAY_VICTIMS_AFTER - unix_now();
    if wait > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(wait));
    }
    let gap = unix_now() - began;
    // Short timeouts: a keyed victim never opens a session (it gives up at the join
    // timeout), a signed one hears data but no session it can verify (the idle timeout).
    let v1 = recv_timeouts(lab, "r1", &victims, &plain_flags, "1s", "1500ms");
    let v2 = recv_timeouts(lab, "r2", &victims, &bound_flags, "1s", "1500ms");
    let joined = Instant::now();
    while !(in_group(lab, "r1") && in_group(lab, "r2")) {
        assert!(
            joined.elapsed() < Duration::from_secs(5),
            "{mode}: victims never joined"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::write(&go, b"").unwrap();
    let plain = v1.wait(Duration::from_secs(15));
    let bound = v2.wait(Duration::from_secs(15));
    let a = evil.finish();
    eprintln!(
        "{mode} replay: {}\n{mode} replay: recorded {} datagrams ({} B, {} sealed) from {}:{}, victims started {gap:.2} s after the first; replayed {} ({} B) in {:.2} s; recv: exit {:?}, {}, {}; recv --source: exit {:?}, {}, {}",
        plain
            .stderr
            .lines()
            .find(|l| l.contains("played back"))
            .unwrap_or("(no hint)"),
        n(&a, "recorded"),
        n(&a, "recorded_bytes"),
        n(&a, "recorded_sealed"),
        SOURCE,
        a["source_port"],
        n(&a, "sent"),
        n(&a, "sent_bytes"),
        a["last_send_secs"].as_f64().unwrap_or(0.0) - a["first_send_secs"].as_f64().unwrap_or(0.0),
        plain.code,
        refusals(&plain, signed),
        plain.stats["detail"],
        bound.code,
        refusals(&bound, signed),
        bound.stats["detail"],
    );
    Replayed {
        gap,
        a,
        plain,
        bound,
    }
}

/// Whether a socket in lab node `node` has joined the group ([`GROUP_ADDR`] in
/// /proc/net/igmp, which is per network namespace): from then on what is sent to the group
/// waits in its buffer.
fn in_group(lab: &Lab, node: &str) -> bool {
    let out = lab
        .cmd(node)
        .args(["cat", "/proc/net/igmp"])
        .output()
        .unwrap();
    let group = format!("{:08X}", u32::from_le_bytes(GROUP_ADDR.octets()));
    String::from_utf8_lossy(&out.stdout).contains(&group)
}

/// A replay victim's refusal counters, for the log.
fn refusals(r: &RxEnd, signed: bool) -> String {
    if signed {
        let s = &r.stats["status"]["stats"]["signed"];
        format!(
            "signed lists {}, before_start {}, forged {}, data packets {}",
            s["lists"],
            s["before_start"],
            s["forged"],
            r.stat("odata_packets")
        )
    } else {
        let k = &r.stats["status"]["keyed"];
        format!(
            "keyed opened {}, before_start {}",
            k["opened"], k["before_start"]
        )
    }
}

// ---------------------------------------------------------------------------------------------
// The attacker process.

/// The attacker's entry point: with `PGMCC_ATTACKER` set (by [`Evil::start`], in a lab
/// node), runs the attack it describes. Without it, checks the guard that keeps the attacker
/// out of the test's own network (the host's): it must refuse to run here.
#[test]
fn attacker_process() {
    match std::env::var(ATTACKER_ENV) {
        Ok(spec) => run_attacker(&serde_json::from_str(&spec).unwrap()),
        Err(_) => {
            let here = lab_guard(Ipv4Addr::new(10, 77, 0, 12), &netns().unwrap());
            assert!(
                here.is_err(),
                "the attacker would run in the test's own network namespace"
            );
        }
    }
}

/// This process's network namespace, as /proc names it (`net:[inode]`).
fn netns() -> Result<String, String> {
    std::fs::read_link("/proc/self/ns/net")
        .map(|p| p.to_string_lossy().into_owned())
        .map_err(|e| format!("/proc/self/ns/net: {e}"))
}

/// Ok only inside a lab node whose address is `me`: a network namespace other than the
/// test's own (`host`, as [`netns`] names it), with `me` (10.77.0.x, not the source)
/// configured.
fn lab_guard(me: Ipv4Addr, host: &str) -> Result<(), String> {
    if netns()? == host {
        return Err(format!("in the test's own network namespace {host}"));
    }
    let o = me.octets();
    if o[..3] != [10, 77, 0] || me == SOURCE {
        return Err(format!("{me} is not a lab receiver's address"));
    }
    UdpSocket::bind((me, 0)).map_err(|e| format!("{me} is not configured here: {e}"))?;
    Ok(())
}

fn run_attacker(spec: &Value) {
    let me: Ipv4Addr = spec["me"].as_str().unwrap().parse().unwrap();
    lab_guard(me, spec["host_netns"].as_str().unwrap()).unwrap();
    let mut a = Attacker::new(spec, me);
    match spec["mode"].as_str().unwrap() {
        "fin" => attack_fin(&mut a, false),
        "spoof" => attack_fin(&mut a, true),
        "redirect" => attack_redirect(&mut a),
        "jumps" => attack_jumps(&mut a),
        "reflect" => attack_reflect(&mut a),
        "data_jumps" => attack_data_jumps(&mut a),
        "sink" => attack_sink(&mut a),
        "memory" => attack_memory(&mut a),
        "spm_sessions" => attack_spm_sessions(&mut a),
        "fake_session" => attack_fake_session(&mut a),
        "nak_storm" => attack_nak_storm(&mut a),
        "keyed" => attack_keyed(&mut a),
        "liar" => attack_liar(&mut a),
        "sniffer" => attack_liar(&mut a),
        "replay_reports" => attack_replay_reports(&mut a),
        "list_flood" => attack_list_flood(&mut a),
        "replay" => attack_replay(&mut a),
        m => panic!("unknown attack {m}"),
    }
    a.write_report();
}

/// What the attacker knows, its sockets and what it sent.
struct Attacker {
    spec: Value,
    me: Ipv4Addr,
    /// Hears the group, as any host on the segment can.
    listen: UdpSocket,
    /// Sends from the attacker's own address.
    tx: UdpSocket,
    /// Hears upstream packets (NAKs) sent to the attacker's address on the source's port.
    upstream: UdpSocket,
    /// Raw IPv4 (IP_HDRINCL), for packets with the source's address; only when spoofing.
    raw: Option<Socket>,
    started: Instant,
    /// The attack's bound in datagrams ([`MAX_PACKETS`], or the flood's own).
    max_packets: u64,
    deadline: Instant,
    stop: PathBuf,
    next_stop_check: Instant,
    stopped: bool,
    // Learned from the source's packets.
    tsi: Option<Tsi>,
    source_port: u16,
    lead: Option<u32>,
    trail: u32,
    spm_sqn: u32,
    odata: u64,
    fin: bool,
    missing: VecDeque<u32>,
    sealed: u64,
    key_id: Option<[u8; 4]>,
    /// The source's digest lists heard (ODATA with a list's shape), by sequence number, not
    /// yet taken; kept only in the forged-list flood.
    lists_heard: Vec<(u32, Vec<u8>)>,
    // What it did.
    sent: u64,
    sent_bytes: u64,
    frames: u64,
    kinds: BTreeMap<String, u64>,
    upstream_heard: u64,
    first_send: Option<f64>,
    first_send_unix: Option<f64>,
    last_send: f64,
    last_send_unix: f64,
    extra: serde_json::Map<String, Value>,
}

impl Attacker {
    fn new(spec: &Value, me: Ipv4Addr) -> Attacker {
        let listen = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        listen.set_reuse_address(true).unwrap();
        listen
            .bind(&SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, MCAST_PORT).into())
            .unwrap();
        listen.join_multicast_v4(&GROUP_ADDR, &me).unwrap();
        listen.set_recv_buffer_size(4 << 20).unwrap();
        let listen: UdpSocket = listen.into();
        listen.set_nonblocking(true).unwrap();
        let tx = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
        tx.bind(&SocketAddrV4::new(me, 0).into()).unwrap();
        tx.set_multicast_if_v4(&me).unwrap();
        tx.set_multicast_ttl_v4(1).unwrap();
        tx.set_multicast_loop_v4(false).unwrap();
        tx.set_send_buffer_size(4 << 20).unwrap();
        let upstream = UdpSocket::bind((me, UCAST_PORT)).unwrap();
        upstream.set_nonblocking(true).unwrap();
        let spoofing = spec["mode"] == "spoof" || spec["spoof"] == true;
        let raw = spoofing.then(|| {
            // IPPROTO_RAW: the packet's IP header is ours (IP_HDRINCL).
            let s = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(255))).unwrap();
            s.set_multicast_loop_v4(false).unwrap();
            s
        });
        let started = Instant::now();
        let (max_packets, max_secs) = if spec["mode"] == "list_flood" {
            (LIST_FLOOD_MAX_PACKETS, LIST_FLOOD_MAX_SECS)
        } else {
            (MAX_PACKETS, MAX_SECS)
        };
        let max_secs = spec["max_secs"].as_f64().unwrap_or(max_secs).min(max_secs);
        Attacker {
            spec: spec.clone(),
            me,
            listen,
            tx: tx.into(),
            upstream,
            raw,
            started,
            max_packets,
            deadline: started + Duration::from_secs_f64(max_secs),
            stop: PathBuf::from(spec["stop"].as_str().unwrap()),
            next_stop_check: started,
            stopped: false,
            tsi: None,
            source_port: 0,
            lead: None,
            trail: 0,
            spm_sqn: 0,
            odata: 0,
            fin: false,
            missing: VecDeque::new(),
            sealed: 0,
            key_id: None,
            lists_heard: Vec::new(),
            sent: 0,
            sent_bytes: 0,
            frames: 0,
            kinds: BTreeMap::new(),
            upstream_heard: 0,
            first_send: None,
            first_send_unix: None,
            last_send: 0.0,
            last_send_unix: 0.0,
            extra: serde_json::Map::new(),
        }
    }

    fn secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Out of packets or time, or told to stop.
    fn done(&mut self) -> bool {
        if self.stopped || self.sent >= self.max_packets || Instant::now() >= self.deadline {
            return true;
        }
        if Instant::now() >= self.next_stop_check {
            self.next_stop_check = Instant::now() + Duration::from_millis(10);
            self.stopped = self.stop.exists();
        }
        self.stopped
    }

    /// Reads everything waiting on the group and on the upstream port; learns the session
    /// from the source's packets.
    fn poll(&mut self) {
        let mut buf = [0u8; 65536];
        loop {
            match self.listen.recv_from(&mut buf) {
                Ok((len, from)) => self.learn(&buf[..len], from),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("listening: {e}"),
            }
        }
        while self.upstream.recv_from(&mut buf).is_ok() {
            self.upstream_heard += 1;
        }
    }

    fn learn(&mut self, d: &[u8], from: SocketAddr) {
        if from.ip() != IpAddr::V4(SOURCE) {
            return;
        }
        self.source_port = from.port();
        if d.starts_with(&pgmcc_net::keyed::MAGIC) && d.len() > 42 {
            self.sealed += 1;
            self.key_id = Some(d[6..10].try_into().unwrap());
            let mut gsi = [0u8; 6];
            gsi.copy_from_slice(&d[10..16]);
            self.tsi = Some(Tsi {
                gsi: Gsi(gsi),
                sport: u16::from_be_bytes([d[16], d[17]]),
            });
            return;
        }
        let Ok(p) = Repr::parse(d) else { return };
        if p.payload.starts_with(FORGED) {
            return;
        }
        match p.body {
            Body::Odata(o) => {
                self.tsi = Some(p.tsi());
                self.odata += 1;
                self.trail = o.trail;
                if let Some(lead) = self.lead {
                    for q in lead.wrapping_add(1)..o.sqn {
                        self.missing.push_back(q);
                        if self.missing.len() > 62 {
                            self.missing.pop_front();
                        }
                    }
                }
                self.lead = Some(self.lead.map_or(o.sqn, |l| l.max(o.sqn)));
                if self.spec["mode"] == "list_flood"
                    && p.options.fragment.is_none()
                    && pgmcc::signed::looks_like_list(p.payload)
                {
                    self.lists_heard.push((o.sqn, p.payload.to_vec()));
                }
            }
            Body::Spm(s) => {
                self.tsi = Some(p.tsi());
                self.spm_sqn = self.spm_sqn.max(s.sqn);
                self.fin |= p.options.fin;
            }
            _ => {}
        }
    }

    /// Sends `pgm` to `to` from the attacker's own address (or, when spoofing, the source's),
    /// counting it under `kind`. False when the attack is over.
    fn send(&mut self, kind: &str, pgm: &[u8], to: SocketAddrV4) -> bool {
        let from = self
            .raw
            .is_some()
            .then(|| SocketAddrV4::new(SOURCE, self.source_port));
        self.send_as(kind, pgm, to, from)
    }

    /// [`Attacker::send`] from `from`, another lab host's address and port (raw socket: only
    /// when spoofing), or from the attacker's own address when `None`.
    fn send_as(
        &mut self,
        kind: &str,
        pgm: &[u8],
        to: SocketAddrV4,
        from: Option<SocketAddrV4>,
    ) -> bool {
        if self.done() {
            return false;
        }
        let r = match (from, &self.raw) {
            (Some(from), Some(raw)) => {
                assert_eq!(from.ip().octets()[..3], [10, 77, 0], "spoofing {from}");
                raw.send_to(
                    &ipv4_udp(from, to, pgm),
                    &SocketAddrV4::new(*to.ip(), 0).into(),
                )
            }
            (Some(from), None) => panic!("spoofing {from} needs `spoof` in the attack's spec"),
            (None, _) => self.tx.send_to(pgm, to),
        };
        match r {
            Ok(_) => {}
            // A full socket buffer: this packet is lost, as on a congested host.
            Err(e) if e.raw_os_error() == Some(105) => return true, // ENOBUFS
            Err(e) => panic!("sending {kind}: {e}"),
        }
        let t = self.secs();
        self.first_send.get_or_insert(t);
        self.first_send_unix.get_or_insert_with(unix_now);
        self.last_send = t;
        self.last_send_unix = unix_now();
        self.sent += 1;
        self.sent_bytes += pgm.len() as u64;
        // IPv4 fragments of 1,480 bytes of payload each (MTU 1,500), UDP header included.
        self.frames += (pgm.len() as u64 + 8).div_ceil(1480);
        *self.kinds.entry(kind.to_owned()).or_default() += 1;
        true
    }

    fn multicast(&mut self, kind: &str, pgm: &[u8]) -> bool {
        self.send(kind, pgm, SocketAddrV4::new(GROUP_ADDR, MCAST_PORT))
    }

    fn note(&mut self, name: &str, v: impl Into<Value>) {
        self.extra.insert(name.to_owned(), v.into());
    }

    fn write_report(&mut self) {
        let mut r = json!({
            "sent": self.sent,
            "sent_bytes": self.sent_bytes,
            "frames": self.frames,
            "kinds": self.kinds,
            "upstream_heard": self.upstream_heard,
            "first_send_secs": self.first_send,
            "first_send_unix": self.first_send_unix,
            "last_send_unix": self.last_send_unix,
            "last_send_secs": self.last_send,
            "source_odata_seen": self.odata,
            "source_sealed_seen": self.sealed,
            "source_fin_at_end": self.fin,
            "tsi": self.tsi.map(|t| t.to_string()),
            "me": self.me.to_string(),
        });
        for (k, v) in &self.extra {
            r[k] = v.clone();
        }
        std::fs::write(self.spec["report"].as_str().unwrap(), r.to_string()).unwrap();
    }

    /// Polls, then sleeps a little if nothing is due.
    fn idle(&mut self) {
        self.poll();
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// An IPv4 + UDP datagram from `from` to `to` carrying `payload`, for a raw socket.
fn ipv4_udp(from: SocketAddrV4, to: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let udp_len = 8 + payload.len();
    let total = 20 + udp_len;
    let mut p = Vec::with_capacity(total);
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&(total as u16).to_be_bytes());
    // Identification 0 (the kernel fills it in), don't fragment, TTL 1, UDP, checksum later.
    p.extend_from_slice(&[0, 0, 0x40, 0, 1, 17, 0, 0]);
    p.extend_from_slice(&from.ip().octets());
    p.extend_from_slice(&to.ip().octets());
    let sum = inet_checksum(&[&p[..20]]);
    p[10..12].copy_from_slice(&sum.to_be_bytes());
    p.extend_from_slice(&from.port().to_be_bytes());
    p.extend_from_slice(&to.port().to_be_bytes());
    p.extend_from_slice(&(udp_len as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    let mut pseudo = Vec::with_capacity(12);
    pseudo.extend_from_slice(&from.ip().octets());
    pseudo.extend_from_slice(&to.ip().octets());
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&(udp_len as u16).to_be_bytes());
    let sum = match inet_checksum(&[&pseudo, &p[20..]]) {
        0 => 0xffff,
        s => s,
    };
    p[26..28].copy_from_slice(&sum.to_be_bytes());
    p
}

/// The Internet checksum of the concatenation of `parts` (each of even length but the last).
fn inet_checksum(parts: &[&[u8]]) -> u16 {
    let mut sum = 0u32;
    for part in parts {
        for c in part.chunks(2) {
            let w = u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]);
            sum += u32::from(w);
        }
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn spm(tsi: Tsi, sqn: u32, trail: u32, lead: u32, nla: Ipv4Addr) -> Repr<'static> {
    Repr::downstream(
        tsi,
        DPORT,
        Body::Spm(SpmRepr {
            sqn,
            trail,
            lead,
            path_nla: IpAddr::V4(nla),
        }),
    )
}

fn odata(tsi: Tsi, sqn: u32, payload: &[u8]) -> Vec<u8> {
    Repr::downstream(tsi, DPORT, Body::Odata(DataRepr { sqn, trail: 0 }))
        .with_options(Options {
            syn: sqn == 0,
            ..Options::default()
        })
        .with_payload(payload)
        .to_vec()
        .unwrap()
}

/// An NCF (downstream) or a NAK (upstream) for `sqns` (at most 63).
fn nak_like(tsi: Tsi, sqns: &[u32], ncf: bool) -> Vec<u8> {
    let n = NakRepr {
        sqn: sqns[0],
        source: IpAddr::V4(SOURCE),
        group: IpAddr::V4(GROUP_ADDR),
    };
    let r = if ncf {
        Repr::downstream(tsi, DPORT, Body::Ncf(n))
    } else {
        Repr::upstream(tsi, DPORT, Body::Nak(n))
    };
    r.with_options(Options::nak(&sqns[1..], None))
        .to_vec()
        .unwrap()
}

/// Spoofed end of session (attack 1, and attack 8 when `spoofed`): after 100 of the source's
/// packets, every 20 more: an SPM with OPT_FIN at the lead and a forged manifest, three ODATA
/// past the lead, and (spoofing) RDATA for the last three sequence numbers.
fn attack_fin(a: &mut Attacker, spoofed: bool) {
    let mut next = 100;
    while !a.done() {
        a.poll();
        let (Some(t), Some(lead)) = (a.tsi, a.lead) else {
            a.idle();
            continue;
        };
        if a.odata < next {
            a.idle();
            continue;
        }
        next = a.odata + 20;
        let me = if spoofed { SOURCE } else { a.me };
        a.spm_sqn += 1;
        let fin = spm(t, a.spm_sqn, a.trail, lead, me)
            .with_options(Options {
                fin: true,
                manifest: Some(pgm_wire::Manifest {
                    size: Some(u64::from(lead) * 1400),
                    sha256: Some([0xee; 32]),
                    name: "evil".into(),
                    ..pgm_wire::Manifest::default()
                }),
                ..Options::default()
            })
            .to_vec()
            .unwrap();
        a.multicast("fin_spm", &fin);
        for q in lead + 1..lead + 4 {
            a.multicast("odata_past_lead", &odata(t, q, FORGED));
        }
        if spoofed {
            for q in lead.saturating_sub(2)..=lead {
                let p = Repr::downstream(t, DPORT, Body::Rdata(DataRepr { sqn: q, trail: 0 }))
                    .with_payload(FORGED)
                    .to_vec()
                    .unwrap();
                a.multicast("rdata", &p);
            }
        }
    }
}

/// NAK redirection and NCF suppression (attack 2): every 10 of the source's packets, an SPM
/// naming the attacker as the path for NAKs, and NCFs for the sequence numbers it saw missing
/// and the 62 after the lead.
fn attack_redirect(a: &mut Attacker) {
    let mut next = 10;
    let mut ncf_sqns = 0u64;
    while !a.done() {
        a.poll();
        let (Some(t), Some(lead)) = (a.tsi, a.lead) else {
            a.idle();
            continue;
        };
        if a.odata < next {
            a.idle();
            continue;
        }
        next = a.odata + 10;
        a.spm_sqn += 1;
        let p = spm(t, a.spm_sqn, a.trail, lead, a.me).to_vec().unwrap();
        a.multicast("redirect_spm", &p);
        let missing: Vec<u32> = a.missing.iter().copied().collect();
        if !missing.is_empty() && a.multicast("ncf", &nak_like(t, &missing, true)) {
            ncf_sqns += missing.len() as u64;
        }
        let ahead: Vec<u32> = (lead + 1..lead + 63).collect();
        if a.multicast("ncf", &nak_like(t, &ahead, true)) {
            ncf_sqns += ahead.len() as u64;
        }
    }
    a.note("ncf_sqns", ncf_sqns);
}

/// Window-edge and SPM-sequence jumps (attack 3), every 10 of the source's packets, in turn.
/// Spoofing the source's address, only the three no source could send (moving the trail up
/// to the lead is something a source may do, and then it works: docs/security.md).
fn attack_jumps(a: &mut Attacker) {
    let mut next = 10;
    let mut round = 0u32;
    let (nla, kinds) = match a.raw {
        Some(_) => (SOURCE, 3),
        None => (a.me, 4),
    };
    while !a.done() {
        a.poll();
        let (Some(t), Some(lead)) = (a.tsi, a.lead) else {
            a.idle();
            continue;
        };
        if a.odata < next {
            a.idle();
            continue;
        }
        next = a.odata + 10;
        let (kind, p) = match round % kinds {
            0 => (
                "trail_beyond_lead",
                spm(t, a.spm_sqn + 1, lead + 1000, lead, nla),
            ),
            1 => (
                "lead_jump",
                spm(t, a.spm_sqn + 1, a.trail, lead + 1_000_000, nla),
            ),
            2 => (
                "sqn_jump",
                spm(t, a.spm_sqn.wrapping_add(1 << 31), a.trail, lead, nla),
            ),
            _ => ("trail_to_lead", spm(t, a.spm_sqn + 1, lead, lead, nla)),
        };
        round += 1;
        a.multicast(kind, &p.to_vec().unwrap());
    }
}

/// SPMs naming another host (`spec.path`) as the path for NAKs (issue 57 item 3), every 10 of
/// the source's packets, in turn: one following the source's SPM sequence and one 1,000
/// ahead of it.
fn attack_reflect(a: &mut Attacker) {
    let path: Ipv4Addr = a.spec["path"].as_str().unwrap().parse().unwrap();
    let mut next = 10;
    let mut round = 0u32;
    while !a.done() {
        a.poll();
        let (Some(t), Some(lead)) = (a.tsi, a.lead) else {
            a.idle();
            continue;
        };
        if a.odata < next {
            a.idle();
            continue;
        }
        next = a.odata + 10;
        let (kind, sqn) = match round % 2 {
            0 => ("spm_in_sequence", a.spm_sqn.wrapping_add(1)),
            _ => ("spm_sqn_jump", a.spm_sqn.wrapping_add(1000)),
        };
        round += 1;
        let p = spm(t, sqn, a.trail, lead, path).to_vec().unwrap();
        a.multicast(kind, &p);
    }
}

/// Data packets with window edges no source sends (issue 57 item 9), every 10 of the
/// source's packets, in turn: ODATA at the lead with the trail 100 beyond it, ODATA 100,000
/// past the lead, RDATA at the lead with the trail 100 beyond it.
fn attack_data_jumps(a: &mut Attacker) {
    let mut next = 10;
    let mut round = 0u32;
    while !a.done() {
        a.poll();
        let (Some(t), Some(lead)) = (a.tsi, a.lead) else {
            a.idle();
            continue;
        };
        if a.odata < next {
            a.idle();
            continue;
        }
        next = a.odata + 10;
        let beyond = lead.wrapping_add(100);
        let (kind, body) = match round % 3 {
            0 => (
                "odata_trail_beyond_lead",
                Body::Odata(DataRepr {
                    sqn: lead,
                    trail: beyond,
                }),
            ),
            1 => (
                "odata_sqn_jump",
                Body::Odata(DataRepr {
                    sqn: lead.wrapping_add(100_000),
                    trail: a.trail,
                }),
            ),
            _ => (
                "rdata_trail_beyond_lead",
                Body::Rdata(DataRepr {
                    sqn: lead,
                    trail: beyond,
                }),
            ),
        };
        round += 1;
        let p = Repr::downstream(t, DPORT, body)
            .with_payload(FORGED)
            .to_vec()
            .unwrap();
        a.multicast(kind, &p);
    }
}

/// Forged digest lists where the next list will be (issue 57 item 8), from the source's
/// (spoofed) address. A genuine list heard at `h` (an ODATA whose payload has a list's shape)
/// covering `n` packets, not the end, says the next list is at `h + n + 1`; until the
/// source's list there is heard, the attacker sends list-shaped ODATA there, `per_sec` a
/// second, in turn: the genuine list replayed byte for byte (`replayed_list`) and the genuine
/// list with its key and its commitment to the next key changed, a counter in each
/// (`rekeyed_list`). Both carry a real, well-formed signature, the source's, made for another
/// place or other bytes: each would cost a receiver an Ed25519 check to refuse. Reports how
/// many places it flooded and how many of them the source's next list then filled (`hits`:
/// it aimed right).
fn attack_list_flood(a: &mut Attacker) {
    let per_sec = a.spec["per_sec"].as_f64().unwrap_or(20_000.0);
    // Where the next list will be, and the genuine list heard before it.
    let mut place: Option<u32> = None;
    let mut genuine: Vec<u8> = Vec::new();
    let (mut places, mut hits, mut misses, mut end) = (0u64, 0u64, 0u64, false);
    let mut tokens = 0.0f64;
    let mut last = Instant::now();
    let mut i = 0u64;
    while !a.done() {
        a.poll();
        for (h, list) in std::mem::take(&mut a.lists_heard) {
            if list == genuine {
                continue; // its own replay, heard back (multicast loop is off: never seen)
            }
            match place {
                Some(q) if q == h => hits += 1,
                Some(_) => misses += 1,
                None => {}
            }
            if list[5] & pgmcc::signed::LIST_END != 0 {
                end = true;
                place = None;
                continue;
            }
            let n = u32::from(u16::from_be_bytes([list[6], list[7]]));
            place = Some(h.wrapping_add(n + 1));
            places += 1;
            genuine = list;
        }
        let now = Instant::now();
        let dt = now.duration_since(last).as_secs_f64();
        last = now;
        let (Some(t), Some(q)) = (a.tsi, place) else {
            tokens = 0.0;
            a.idle();
            continue;
        };
        tokens = (tokens + per_sec * dt).min(64.0);
        while tokens >= 1.0 {
            tokens -= 1.0;
            i += 1;
            let mut payload = genuine.clone();
            let kind = if i % 2 == 0 {
                "replayed_list"
            } else {
                // The key (bytes 20..36) and the commitment to the next (36..52).
                payload[20..28].copy_from_slice(&i.to_be_bytes());
                payload[36..44].copy_from_slice(&(!i).to_be_bytes());
                "rekeyed_list"
            };
            let p = Repr::downstream(
                t,
                DPORT,
                Body::Odata(DataRepr {
                    sqn: q,
                    trail: a.trail,
                }),
            )
            .with_payload(&payload)
            .to_vec()
            .unwrap();
            if !a.multicast(kind, &p) {
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    a.note("places", places);
    a.note("hits", hits);
    a.note("misses", misses);
    a.note("end_heard", end);
}

/// A host that only listens (issue 57 item 3's third host): counts the datagrams reaching
/// its NAK port (`upstream_heard`) until told to stop.
fn attack_sink(a: &mut Attacker) {
    while !a.done() {
        a.idle();
    }
}

/// Fake sessions that never fill their first gap (attack 4): once the real transfer is
/// under way, `huge_sessions` sessions of `huge_packets` datagrams of `huge_len` payload
/// bytes, then `big_sessions` of `big_packets` of `big_len`, interleaved, `per_ms` datagrams
/// per millisecond. Each session sends sequence number 0 (OPT_SYN: it proves itself) and
/// then 2, 3, ...: 1 never comes.
fn attack_memory(a: &mut Attacker) {
    while !a.done() && a.odata < 50 {
        a.idle();
    }
    a.note("source_odata_at_start", a.odata);
    let per_ms = a.spec["per_ms"].as_u64().unwrap();
    let s = a.spec.clone();
    let num = |k: &str| s[k].as_u64().unwrap();
    fake_sessions(
        a,
        per_ms,
        [num("huge_sessions"), num("huge_packets"), num("huge_len")],
        "huge_data",
        1,
    );
    fake_sessions(
        a,
        per_ms,
        [num("big_sessions"), num("big_packets"), num("big_len")],
        "big_data",
        2,
    );
    a.poll();
    a.note("source_fin_at_flood_end", a.fin);
    a.note("huge_len", num("huge_len"));
    a.note("big_len", num("big_len"));
    while !a.done() {
        a.idle();
    }
}

/// `[sessions, packets, len]`: `sessions` fake sessions, interleaved, of `packets` data
/// packets of `len` payload bytes each: sequence number 0 (OPT_SYN), then 2, 3, ...; `id`
/// tells the sessions of one call from another's. `per_ms` datagrams per millisecond.
fn fake_sessions(
    a: &mut Attacker,
    per_ms: u64,
    [sessions, packets, len]: [u64; 3],
    kind: &str,
    id: u8,
) {
    let payload = vec![0x5a; len as usize];
    let tsis: Vec<Tsi> = (0..sessions)
        .map(|i| Tsi {
            gsi: Gsi([0xfa, 0x4e, 0, 0, id, i as u8]),
            sport: 5000 + u16::from(id) * 100 + i as u16,
        })
        .collect();
    let mut burst = 0;
    for k in 0..packets {
        let sqn = if k == 0 { 0 } else { k as u32 + 1 };
        for &t in &tsis {
            if !a.multicast(kind, &odata(t, sqn, &payload)) {
                return;
            }
            burst += 1;
            if burst == per_ms {
                burst = 0;
                a.poll();
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// SPM-only fake sessions (attack 5): `rounds` rounds, `every_ms` apart, of one SPM for each
/// of `sessions` fake TSIs.
fn attack_spm_sessions(a: &mut Attacker) {
    let sessions = a.spec["sessions"].as_u64().unwrap();
    let rounds = a.spec["rounds"].as_u64().unwrap();
    let every = Duration::from_millis(a.spec["every_ms"].as_u64().unwrap_or(0));
    let mut before = 0u64;
    a.poll();
    a.note("source_odata_at_first_send", a.odata);
    for round in 0..rounds {
        let at = Instant::now();
        a.poll();
        if a.odata == 0 {
            before += 1;
        }
        for i in 0..sessions {
            let t = Tsi {
                gsi: Gsi([0x5b, 0x4d, 0, 0, 0, i as u8]),
                sport: 6000 + i as u16,
            };
            let p = spm(t, round as u32, 0, 100, a.me).to_vec().unwrap();
            if !a.multicast("spm", &p) {
                break;
            }
        }
        while !a.done() && at.elapsed() < every {
            a.idle();
        }
        if a.done() {
            break;
        }
    }
    a.note("rounds_before_source", before);
    while !a.done() {
        a.idle();
    }
}

/// A whole fake session from the attacker's address (attack 5, the `--source` variant):
/// OPT_SYN data, then a data packet every 10 ms and an SPM every 100 ms.
fn attack_fake_session(a: &mut Attacker) {
    let t = Tsi {
        gsi: Gsi([0x6c, 0x4e, 1, 2, 3, 4]),
        sport: 7001,
    };
    let mut sqn = 0u32;
    let mut before = 0u64;
    while !a.done() {
        a.poll();
        if sqn % 10 == 0 {
            a.multicast("spm", &spm(t, sqn / 10, 0, sqn, a.me).to_vec().unwrap());
        }
        if a.multicast("odata", &odata(t, sqn, FORGED)) && a.odata == 0 {
            before += 1;
        }
        sqn += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    a.note("sent_before_source", before);
}

/// A NAK storm to the source (attack 6): every `every_us`, one NAK for `sqns` sequence
/// numbers of the transmit window, cycling through it, from the attacker's own address,
/// until the source announces its end.
fn attack_nak_storm(a: &mut Attacker) {
    let every = Duration::from_micros(a.spec["every_us"].as_u64().unwrap());
    let count = a.spec["sqns"].as_u64().unwrap() as u32;
    let mut next = Instant::now();
    let mut cursor = 0u32;
    let mut nak_sqns = 0u64;
    let to = SocketAddrV4::new(SOURCE, UCAST_PORT);
    while !a.done() {
        a.poll();
        let (Some(t), Some(lead)) = (a.tsi, a.lead) else {
            a.idle();
            continue;
        };
        if a.fin || a.odata < 20 {
            a.idle();
            continue;
        }
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(Duration::from_micros(200)));
            continue;
        }
        next += every;
        let span = lead.wrapping_sub(a.trail).wrapping_add(1).max(1);
        let sqns: Vec<u32> = (0..count.min(span))
            .map(|i| a.trail.wrapping_add((cursor + i) % span))
            .collect();
        cursor = cursor.wrapping_add(count);
        if a.send("nak", &nak_like(t, &sqns, false), to) {
            nak_sqns += sqns.len() as u64;
        }
    }
    a.note("nak_sqns", nak_sqns);
}

/// Forgeries against a keyed session (attack 7): every 10 of the source's sealed datagrams,
/// data, RDATA, NCFs and an SPM with OPT_FIN near the source's position (estimated from the
/// datagrams seen), in plain PGM, sealed under the attacker's own key, and sealed under its
/// own key with the group key's id written in the envelope.
fn attack_keyed(a: &mut Attacker) {
    use pgmcc_net::keyed::{Direction, Key, Sealer};
    let mut own = Sealer::new(Key::from_bytes([0x66; 32]), Direction::Down).unwrap();
    let mut next = 10;
    let mut first = true;
    while !a.done() {
        a.poll();
        let (Some(t), Some(real_id)) = (a.tsi, a.key_id) else {
            a.idle();
            continue;
        };
        if a.sealed < next {
            a.idle();
            continue;
        }
        next = a.sealed + 10;
        let g = a.sealed as u32;
        let mut packets = vec![odata(t, g + 2, FORGED), odata(t, g + 3, FORGED)];
        if first {
            packets.push(odata(t, 0, FORGED));
            first = false;
        }
        packets.push(
            Repr::downstream(
                t,
                DPORT,
                Body::Rdata(DataRepr {
                    sqn: g.saturating_sub(3),
                    trail: 0,
                }),
            )
            .with_payload(FORGED)
            .to_vec()
            .unwrap(),
        );
        let near: Vec<u32> = (g.saturating_sub(8)..g + 8).collect();
        packets.push(nak_like(t, &near, true));
        packets.push(
            spm(t, g, 0, g, a.me)
                .with_options(Options {
                    fin: true,
                    ..Options::default()
                })
                .to_vec()
                .unwrap(),
        );
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        for p in packets {
            a.multicast("plain", &p);
            let mut sealed = Vec::new();
            own.seal(unix_ms, &p, &mut sealed).unwrap();
            a.multicast("own_key", &sealed);
            sealed[6..10].copy_from_slice(&real_id);
            a.multicast("relabelled", &sealed);
        }
    }
}

/// What the liar received: the receive bitmap of the latest 32 data sequence numbers (bit 0 =
/// the highest), as an ACK reports it, and the source's nonce (OPT_ACK_PROOF) of each, by
/// sequence number modulo 64, as `pgmcc recv` keeps them (`pgmcc::cc::feedback::report`).
#[derive(Default)]
struct LiarBitmap {
    max: Option<u32>,
    bits: u32,
    /// Bits of the packets whose nonce is held.
    proven: u32,
    nonces: Vec<(u32, u32)>,
}

impl LiarBitmap {
    /// Data packet `s` arrived with `nonce`; false for a copy already marked (or one older
    /// than the bitmap).
    fn mark(&mut self, s: u32, nonce: Option<u32>) -> bool {
        let bit = match self.max {
            None => {
                self.max = Some(s);
                0
            }
            Some(m) if (s.wrapping_sub(m) as i32) > 0 => {
                let shift = s.wrapping_sub(m);
                self.bits = self.bits.checked_shl(shift).unwrap_or(0);
                self.proven = self.proven.checked_shl(shift).unwrap_or(0);
                self.max = Some(s);
                0
            }
            Some(m) => match m.wrapping_sub(s) {
                back if back < 32 => back,
                _ => return false,
            },
        };
        if self.bits & (1 << bit) != 0 {
            return false;
        }
        self.bits |= 1 << bit;
        if let Some(n) = nonce {
            if self.nonces.is_empty() {
                self.nonces = vec![(0, 0); 64];
            }
            self.nonces[s as usize % 64] = (s, n);
            self.proven |= 1 << bit;
        }
        true
    }

    fn nonce(&self, s: u32) -> Option<u32> {
        self.nonces
            .get(s as usize % 64)
            .filter(|e| e.0 == s)
            .map(|e| e.1)
    }

    /// RX_MAX, the bitmap of the packets whose nonce is held, and the proof: the XOR of the
    /// nonces of RX_MAX and of every packet the bitmap reports (docs/wire.md). `None` until
    /// RX_MAX's own nonce is held.
    fn ack(&self) -> Option<(pgm_wire::AckRepr, u32)> {
        let rx_max = self.max?;
        let bitmap = self.bits & self.proven;
        if bitmap & 1 == 0 {
            return None;
        }
        let proof = (0..32u32)
            .filter(|k| bitmap & (1 << k) != 0)
            .try_fold(0, |x, k| self.nonce(rx_max.wrapping_sub(k)).map(|n| x ^ n))?;
        Some((pgm_wire::AckRepr { rx_max, bitmap }, proof))
    }
}

/// The acker hijack (issue 21, "a false loss report wins the acker election"): a minimal
/// pgmcc receiver that never NAKs. Like `pgmcc recv` it keeps the receive bitmap of the data
/// it gets (ODATA and RDATA, not parity) and each packet's nonce, and ACKs every ODATA whose
/// OPT_PGMCC_DATA names it as acker at once, with RX_MAX, the bitmap, a valid proof of
/// receipt (OPT_ACK_PROOF) and a report (OPT_PGMCC_FEEDBACK) naming its own address; ACKs go
/// unicast to the source's address on the UDP port for upstream packets, from the attacker's
/// own address, as `pgmcc recv` sends them. Unlike `pgmcc recv` it answers an election
/// request (acker 0.0.0.0) at once instead of after a random wait, every report claims loss
/// rate `claim` (65535: all but certain loss) whatever it received, and its echo (the
/// packet's timestamp plus the time it held it) is moved back by `claim_rtt_ms`: it claims
/// to be that much farther from the source than it is (why: the test). Reports what it saw:
/// the data, the packets that named it and when.
///
/// With `as` (a lab receiver's address; mode `sniffer`) it ACKs in that receiver's name
/// instead: what it ACKs for is what names `as`, its reports name `as`, and each ACK leaves
/// from `as`'s address (raw socket, IP_HDRINCL) and UDP port [`UCAST_PORT`].
fn attack_liar(a: &mut Attacker) {
    use pgm_wire::{AckProof, PgmccFeedback, OPT_PARITY};
    let claim = a.spec["claim"].as_u64().unwrap() as u16;
    let claim_rtt = a.spec["claim_rtt_ms"].as_u64().unwrap_or(0) as u32;
    let to = SocketAddrV4::new(SOURCE, UCAST_PORT);
    let spoofed: Option<Ipv4Addr> = a.spec["as"].as_str().map(|x| x.parse().unwrap());
    let ack_from = spoofed.map(|ip| SocketAddrV4::new(ip, UCAST_PORT));
    let me = IpAddr::V4(spoofed.unwrap_or(a.me));
    let mut got = LiarBitmap::default();
    let (mut odata, mut named, mut unprovable) = (0u64, 0u64, 0u64);
    // (sequence number, Unix time) of the first and the last ODATA that named the liar.
    let mut first_named: Option<(u32, f64)> = None;
    let mut last_named: Option<(u32, f64)> = None;
    let mut odata_span: Option<(u32, u32)> = None;
    let mut buf = vec![0u8; 65536];
    while !a.done() {
        let (len, from) = match a.listen.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_micros(100));
                continue;
            }
            Err(e) => panic!("listening: {e}"),
        };
        let arrived = Instant::now();
        let d = &buf[..len];
        a.learn(d, from);
        if from.ip() != IpAddr::V4(SOURCE) {
            continue;
        }
        let Ok(p) = Repr::parse(d) else { continue };
        let (sqn, is_odata) = match p.body {
            Body::Odata(o) => (o.sqn, true),
            Body::Rdata(o) if p.header_flags & OPT_PARITY == 0 => (o.sqn, false),
            _ => continue,
        };
        if !got.mark(sqn, p.options.ack_proof.map(|x| x.value)) || !is_odata {
            continue;
        }
        odata += 1;
        odata_span = Some(match odata_span {
            None => (sqn, sqn),
            Some((lo, hi)) => (
                lo,
                if (sqn.wrapping_sub(hi) as i32) > 0 {
                    sqn
                } else {
                    hi
                },
            ),
        });
        let Some(pd) = p.options.pgmcc_data else {
            continue;
        };
        let kind = if pd.acker == me {
            named += 1;
            let t = unix_now();
            first_named.get_or_insert((sqn, t));
            last_named = Some((sqn, t));
            "ack"
        } else if pd.acker.is_unspecified() {
            "election_answer"
        } else {
            continue;
        };
        let Some((ack, proof)) = got.ack() else {
            unprovable += 1;
            continue;
        };
        let hold = arrived.elapsed().as_millis() as u32;
        let pkt = Repr::upstream(p.tsi(), DPORT, Body::Ack(ack))
            .with_options(Options {
                pgmcc_feedback: Some(PgmccFeedback {
                    tstamp: pd.tstamp.wrapping_add(hold).wrapping_sub(claim_rtt),
                    loss_rate: claim,
                    rx: me,
                }),
                ack_proof: Some(AckProof { value: proof }),
                ..Options::default()
            })
            .to_vec()
            .unwrap();
        a.send_as(kind, &pkt, to, ack_from);
    }
    let at = |x: Option<(u32, f64)>| x.map(|(s, t)| json!({"sqn": s, "unix": t}));
    a.note("odata_received", odata);
    a.note("named", named);
    a.note("unprovable", unprovable);
    a.note("first_named", at(first_named));
    a.note("last_named", at(last_named));
    // ODATA lost on the liar's own path: the span of sequence numbers it saw less those it
    // got (a lost packet shows in its ACKs, as loss the source sees first hand).
    a.note(
        "odata_missed",
        odata_span.map_or(0, |(lo, hi)| u64::from(hi.wrapping_sub(lo)) + 1 - odata),
    );
}

/// Replayed delivery reports (keyed mode), by a host without the key on a segment that floods
/// unicast (the test makes the receivers' switch a hub): it captures every IPv4 packet through
/// its interface (AF_PACKET, whoever it is for), and sends each sealed datagram that
/// `reporter` sends to the source's upstream port with the length of a sealed report of a
/// complete transfer (a POLR with OPT_OUTCOME and no reason: every other field has a fixed
/// size, so the length is public) again, byte for byte, from `as`'s address (raw socket,
/// IP_HDRINCL) and the same UDP port. Reports what it captured and replayed.
fn attack_replay_reports(a: &mut Attacker) {
    use pgm_wire::{Outcome, PolrRepr, OUTCOME_COMPLETE};
    use std::io::Read;
    let reporter: Ipv4Addr = a.spec["reporter"].as_str().unwrap().parse().unwrap();
    let victim: Ipv4Addr = a.spec["as"].as_str().unwrap().parse().unwrap();
    let outcome = Outcome {
        status: OUTCOME_COMPLETE,
        bytes: 0,
        sha256: [0; 32],
        reason: String::new(),
        reporter: Some(IpAddr::V4(reporter)),
    };
    let any = Tsi {
        gsi: Gsi([0; 6]),
        sport: 0,
    };
    let report_len = Repr::upstream(any, DPORT, Body::Polr(PolrRepr { sqn: 0, round: 0 }))
        .with_options(Options {
            outcome: Some(outcome),
            ..Options::default()
        })
        .to_vec()
        .unwrap()
        .len()
        + pgmcc_net::keyed::SEAL_OVERHEAD;
    // ETH_P_IP, in network byte order; DGRAM: without the link-layer header.
    let eth_p_ip = i32::from(0x0800u16.to_be());
    let cap = Socket::new(Domain::PACKET, Type::DGRAM, Some(Protocol::from(eth_p_ip))).unwrap();
    cap.set_nonblocking(true).unwrap();
    let to = SocketAddrV4::new(SOURCE, UCAST_PORT);
    let (mut captured, mut sealed) = (0u64, 0u64);
    let mut lengths = BTreeMap::<String, u64>::new();
    let mut buf = vec![0u8; 65536];
    while !a.done() {
        a.poll();
        let len = match (&cap).read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_micros(200));
                continue;
            }
            Err(e) => panic!("capturing: {e}"),
        };
        let Some((from, dst, d)) = udp_of(&buf[..len]) else {
            continue;
        };
        if *from.ip() != reporter || dst != to {
            continue;
        }
        captured += 1;
        if !d.starts_with(&pgmcc_net::keyed::MAGIC) {
            continue;
        }
        sealed += 1;
        *lengths.entry(d.len().to_string()).or_default() += 1;
        if d.len() == report_len {
            let replay_from = SocketAddrV4::new(victim, from.port());
            a.send_as("replayed_report", d, to, Some(replay_from));
        }
    }
    a.note("report_len", report_len);
    a.note("captured", captured);
    a.note("captured_sealed", sealed);
    a.note("captured_lengths", json!(lengths));
}

/// The source, the destination and the payload of an unfragmented IPv4 UDP datagram.
fn udp_of(p: &[u8]) -> Option<(SocketAddrV4, SocketAddrV4, &[u8])> {
    let ihl = usize::from(p.first()? & 0x0f) * 4;
    let unfragmented = |p: &[u8]| u16::from_be_bytes([p[6], p[7]]) & 0x3fff == 0;
    if p[0] >> 4 != 4 || ihl < 20 || p.len() < ihl + 8 || p[9] != 17 || !unfragmented(p) {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([p[2], p[3]])).min(p.len());
    let addr = |i: usize| Ipv4Addr::new(p[i], p[i + 1], p[i + 2], p[i + 3]);
    let u = p.get(ihl..total).filter(|u| u.len() >= 8)?;
    let be = |i: usize| u16::from_be_bytes([u[i], u[i + 1]]);
    let end = usize::from(be(4)).clamp(8, u.len());
    Some((
        SocketAddrV4::new(addr(12), be(0)),
        SocketAddrV4::new(addr(16), be(2)),
        &u[8..end],
    ))
}

/// A session recorded and played back ([`lab_a_recorded_session_played_back_after_recv_started_is_refused`]):
/// records every datagram the source sends to the group, as any host on the segment hears
/// them (its address and port, the UDP payload: sealed or signed, whole), writing the Unix
/// time of the first to `heard`; once the file `go` exists, plays them all back to the group
/// in order, byte for byte, from the address and port each came from (raw socket,
/// IP_HDRINCL), about 10,000 a second. Bounded by [`MAX_PACKETS`] and [`MAX_SECS`], recording
/// included.
fn attack_replay(a: &mut Attacker) {
    let go = PathBuf::from(a.spec["go"].as_str().unwrap());
    let heard = PathBuf::from(a.spec["heard"].as_str().unwrap());
    let mut recorded: Vec<(SocketAddrV4, Vec<u8>)> = Vec::new();
    let mut buf = vec![0u8; 65536];
    while !go.exists() && !a.done() {
        loop {
            match a.listen.recv_from(&mut buf) {
                Ok((len, SocketAddr::V4(from))) if *from.ip() == SOURCE => {
                    if recorded.is_empty() {
                        std::fs::write(&heard, unix_now().to_string()).unwrap();
                    }
                    recorded.push((from, buf[..len].to_vec()));
                }
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("recording: {e}"),
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let sealed = recorded
        .iter()
        .filter(|(_, d)| d.starts_with(&pgmcc_net::keyed::MAGIC))
        .count();
    a.note("recorded", recorded.len());
    a.note("recorded_sealed", sealed);
    a.note(
        "recorded_bytes",
        recorded.iter().map(|(_, d)| d.len()).sum::<usize>(),
    );
    a.note("source_port", recorded.first().map_or(0, |(f, _)| f.port()));
    let group = SocketAddrV4::new(GROUP_ADDR, MCAST_PORT);
    let mut too_large = 0u64;
    for (from, d) in &recorded {
        // Unfragmented only (the raw packet says don't fragment): 1,500 bytes of IP.
        if d.len() + 28 > 1500 {
            too_large += 1;
            continue;
        }
        if !a.send_as("replayed", d, group, Some(*from)) {
            break;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    a.note("too_large", too_large);
}
