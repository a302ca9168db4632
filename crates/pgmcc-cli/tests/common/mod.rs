//! The namespace lab and helpers shared by the real-socket test files.

#![allow(dead_code, clippy::unwrap_used)] // each test file uses a subset; test code

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// The tests share the machine's two cores: one lab at a time.
pub(crate) static SERIAL: Mutex<()> = Mutex::new(());

pub(crate) const GROUP: &str = "239.192.0.1:7500";
pub(crate) const RATE_MBIT: f64 = 40.0;

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub(crate) fn pgmcc() -> &'static str {
    env!("CARGO_BIN_EXE_pgmcc")
}

/// Runs `pgmcc keygen ARGS KEY`; panics with its error if it fails.
fn keygen(args: &[&str], key: &Path) {
    let made = Command::new(pgmcc())
        .arg("keygen")
        .args(args)
        .arg(key)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
}

/// A group key (keyed mode) made by `pgmcc keygen` in `dir`: `group.key`.
#[allow(dead_code)] // not every test binary runs keyed mode
pub(crate) fn group_key(dir: &Path) -> PathBuf {
    let key = dir.join("group.key");
    keygen(&[], &key);
    key
}

/// A signed mode key pair made by `pgmcc keygen --sign` in `dir`: the secret key file and
/// its public half (`.pub`).
pub(crate) fn signing_key(dir: &Path) -> (PathBuf, PathBuf) {
    let key = dir.join("source.key");
    keygen(&["--sign"], &key);
    (key, dir.join("source.key.pub"))
}

/// Builds the C programs in `interop/` (`make -C interop`: those whose libraries are
/// installed); panics if the build fails.
#[allow(dead_code)] // not every test binary builds them
pub(crate) fn build_interop() {
    let st = std::process::Command::new("make")
        .args(["-s", "-C"])
        .arg(repo().join("interop"))
        .status()
        .unwrap();
    assert!(st.success(), "building interop/ failed");
}

/// Says that `test` did not run because `reason` (no root, a program or library missing):
/// `SKIPPED test: reason` on standard error and, when `PGMCC_TEST_SKIPS` names a file, the
/// line `test<TAB>reason` appended to it. The test then returns, which libtest counts as
/// passed; `scripts/test-summary` reads the file and counts it as skipped instead.
pub(crate) fn skip(test: &str, reason: &str) {
    eprintln!("SKIPPED {test}: {reason}");
    if let Some(file) = std::env::var_os("PGMCC_TEST_SKIPS") {
        // One write of the whole line, so that concurrent tests' lines do not interleave.
        let line = format!("{test}\t{reason}\n");
        let _ = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    }
}

/// The running test's name, for helpers that skip on its behalf: libtest names each test's
/// thread after the test; `fallback` when the thread has no such name.
pub(crate) fn current_test(fallback: &str) -> String {
    match std::thread::current().name() {
        Some(name) if name != "main" => name.to_owned(),
        _ => fallback.to_owned(),
    }
}

pub(crate) fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A lab of namespaces, removed on drop (also when the test fails).
pub(crate) struct Lab {
    prefix: String,
}

impl Lab {
    pub(crate) fn up(name: &str, receivers: usize) -> Option<Lab> {
        if !is_root() {
            skip(
                &current_test(name),
                "needs root to create network namespaces (CI runs as root)",
            );
            return None;
        }
        let prefix = format!("pgt{}{name}", std::process::id() % 10000);
        let st = Command::new(repo().join("scripts/netns-lab"))
            .args(["up", "-p", &prefix, "-n", &receivers.to_string()])
            .args(["-r", &format!("{RATE_MBIT}mbit")])
            .status()
            .unwrap();
        assert!(st.success(), "netns-lab up failed");
        Some(Lab { prefix })
    }

    pub(crate) fn cmd(&self, node: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &format!("{}-{node}", self.prefix)]);
        c
    }

    pub(crate) fn recv(&self, node: &str, out: &Path) -> Child {
        self.recv_with(node, out, &[])
    }

    pub(crate) fn recv_with(&self, node: &str, out: &Path, extra: &[&str]) -> Child {
        self.cmd(node)
            .arg(pgmcc())
            .args([
                "recv",
                "--group",
                GROUP,
                "-q",
                "--idle-timeout",
                "20s",
                "--out",
            ])
            .arg(out)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    pub(crate) fn send(&self, input: &Path, stats: &Path) -> Child {
        self.send_with(input, stats, &[])
    }

    pub(crate) fn send_with(&self, input: &Path, stats: &Path, extra: &[&str]) -> Child {
        self.cmd("s")
            .arg(pgmcc())
            .args(["send", "--group", GROUP, "-q", "--linger", "2s", "--stats"])
            .arg(stats)
            .args(extra)
            .arg(input)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("scripts/netns-lab"))
            .args(["down", "-p", &self.prefix])
            .status();
    }
}

/// Waits for a child, killing it after `limit`.
pub(crate) fn finish(mut child: Child, limit: Duration) -> Output {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    panic!(
        "timed out after {limit:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// [`finish`], then requires exit status 0; a failure shows `what` and both output streams.
pub(crate) fn finish_ok(child: Child, limit: Duration, what: impl std::fmt::Display) -> Output {
    let out = finish(child, limit);
    assert!(
        out.status.success(),
        "{what} failed ({}): {} {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// [`finish`], then requires exit status `code`; a failure shows `what` and both output
/// streams.
#[allow(dead_code)] // not every test binary expects another status
pub(crate) fn finish_with(
    child: Child,
    limit: Duration,
    code: i32,
    what: impl std::fmt::Display,
) -> Output {
    let out = finish(child, limit);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what} ended with {}, not {code}: {} {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `pgmcc send`'s exit status when it sent the whole stream but no delivery report confirms
/// it for every receiver heard from (OpenPGM and ZeroMQ receivers send none).
#[allow(dead_code)] // not every test binary sends to such receivers
pub(crate) const SEND_UNCONFIRMED: i32 = 3;

pub(crate) fn random_file(dir: &Path, len: usize) -> (PathBuf, String) {
    // Deterministic but incompressible enough: a hash chain.
    let mut data = Vec::with_capacity(len + 32);
    let mut block = Sha256::digest(b"pgmcc netns test");
    while data.len() < len {
        data.extend_from_slice(&block);
        block = Sha256::digest(block);
    }
    data.truncate(len);
    let path = dir.join("input.bin");
    std::fs::write(&path, &data).unwrap();
    (path, hex(&Sha256::digest(&data)))
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(crate) fn sha_of(path: &Path) -> String {
    hex(&Sha256::digest(std::fs::read(path).unwrap()))
}

pub(crate) fn stats(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// TCP's byte count as the sink logged it: `(time, bytes)` samples every 50 ms.
pub(crate) fn tcp_log(path: &Path) -> Vec<(f64, f64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (t, b) = l.split_once(' ')?;
            Some((t.parse().ok()?, b.parse().ok()?))
        })
        .collect()
}

/// The last sample at or before `t`.
pub(crate) fn tcp_at(log: &[(f64, f64)], t: f64) -> (f64, f64) {
    log.iter()
        .copied()
        .take_while(|&(x, _)| x <= t)
        .last()
        .unwrap()
}

/// `scripts/tcp-flow.py sink` on port 5001 in `host` (a command that runs in a namespace),
/// logging its byte count to `count`; waits 300 ms for it to listen.
pub(crate) fn tcp_sink(mut host: Command, count: &Path) -> Child {
    let child = host
        .arg("python3")
        .arg(repo().join("scripts/tcp-flow.py"))
        .args(["sink", "0.0.0.0", "5001"])
        .arg(count)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    child
}

/// `scripts/tcp-flow.py send` from `host` to `addr`:5001 for `seconds` under Linux's
/// congestion control `cc`.
pub(crate) fn tcp_send(mut host: Command, addr: &str, seconds: u32, cc: &str) -> Child {
    host.arg("python3")
        .arg(repo().join("scripts/tcp-flow.py"))
        .args(["send", addr, "5001", &seconds.to_string(), cc])
        .spawn()
        .unwrap()
}
