//! `pgmcc send` / `pgmcc recv` behaviour that needs no traffic: bad flags are named, and an
//! interrupted receiver leaves no file behind. Loopback only (nothing is sent).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::process::{Command, Stdio};

mod common;
use std::time::Duration;

fn pgmcc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pgmcc"))
}

#[test]
fn a_unicast_group_is_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x");
    std::fs::write(&f, b"x").unwrap();
    let o = pgmcc()
        .args(["send", "--group", "10.0.0.1:7500"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not a multicast address"), "{err}");
}

#[test]
fn proactive_parity_without_parity_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x");
    std::fs::write(&f, b"x").unwrap();
    for fec in [["--fec", "0"], ["--fec", "16"]] {
        let o = pgmcc()
            .args([
                "send",
                "--group",
                "239.1.1.1:7500",
                "--proactive-parity",
                "32",
            ])
            .args(fec)
            .arg(&f)
            .output()
            .unwrap();
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("--proactive-parity 32: needs --fec and at most its group size"),
            "{err}"
        );
    }
}

#[test]
fn bad_ports_and_missing_files_name_the_problem() {
    let o = pgmcc()
        .args(["recv", "--group", "239.1.1.1:7500", "--udp-ports", "3055"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("UCAST,MCAST"));
    let o = pgmcc()
        .args(["send", "--group", "239.1.1.1:7500", "/nonexistent/file"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/file"));
}

#[test]
fn an_interrupted_receiver_exits_130_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.bin");
    let child = pgmcc()
        .args([
            "recv",
            "--group",
            "239.255.77.9:7500",
            "--iface",
            "127.0.0.2",
        ])
        .args(["--udp-ports", "41090,41091", "-q", "--out"])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
}

#[test]
fn rate_floor_and_ceiling_are_checked_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x");
    std::fs::write(&f, b"x").unwrap();
    let run = |args: &[&str]| {
        let o = pgmcc()
            .args(["send", "--group", "239.1.1.1:7500"])
            .args(args)
            .arg(&f)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--rate-floor", "1Mbit"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("for --cc lowweight"), "{err}");
    let (code, err) = run(&[
        "--cc",
        "lowweight",
        "--rate-floor",
        "2Mbit",
        "--rate-ceiling",
        "1Mbit",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--rate-floor is above --rate-ceiling"),
        "{err}"
    );
    let (code, err) = run(&["--cc", "lowweight", "--rate-ceiling", "fast"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--rate-ceiling"), "{err}");
}

#[test]
fn keygen_writes_a_private_key_once_and_bad_key_files_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("group.key");
    let o = pgmcc().arg("keygen").arg(&key).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let text = std::fs::read_to_string(&key).unwrap();
    assert!(text.contains("pgmcc-key-v1 "), "{text}");
    // Never overwritten: the first key stays.
    let o = pgmcc().arg("keygen").arg(&key).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&key).unwrap(), text);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("File exists").count(), 1, "said once: {err}");

    // --key with ZeroMQ framing is refused before anything is joined.
    let o = pgmcc()
        .args(["recv", "--group", "239.1.1.1:7500", "--zmq", "--key"])
        .arg(&key)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--zmq"));

    // A key others can read, a missing one and a file that is not a key are refused by name.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let junk = dir.path().join("junk");
    std::fs::write(&junk, "hello").unwrap();
    std::fs::set_permissions(&junk, std::fs::Permissions::from_mode(0o600)).unwrap();
    for (file, says) in [
        (key.clone(), "chmod 600"),
        (dir.path().join("missing"), "missing"),
        (junk, "must start with `pgmcc-key-v1`"),
    ] {
        let o = pgmcc()
            .args(["recv", "--group", "239.1.1.1:7500", "--key"])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{says}: {err}");
    }
}

/// `pgmcc send` to a group on loopback with multicast TTL 0 (nothing leaves the host), on
/// ports of its own, then `args`, then `file`: its output.
fn send_on_loopback(args: &[&str], file: &std::path::Path) -> std::process::Output {
    pgmcc()
        .args([
            "send",
            "--group",
            "239.255.77.51:7500",
            "--iface",
            "127.0.0.1",
        ])
        .args(["--ttl", "0", "--udp-ports", "41551,41552", "-q"])
        .args(args)
        .arg(file)
        .output()
        .unwrap()
}

/// A source with nobody listening stops by itself and says so (loopback, multicast TTL 0:
/// nothing leaves the host).
#[test]
fn a_sender_nobody_answers_gives_up_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    std::fs::write(&f, vec![7u8; 2_000_000]).unwrap();
    let started = std::time::Instant::now();
    let o = send_on_loopback(&["--feedback-timeout", "2s"], &f);
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("no receiver answered in 2s"), "{err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");

    // Without a controller there is no feedback to wait for: --max-duration bounds the run.
    let o = send_on_loopback(
        &[
            "--cc",
            "none",
            "--rate-max",
            "1Mbit",
            "--max-duration",
            "1s",
        ],
        &f,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--max-duration"), "{err}");

    // A transfer that completes without a word from the group says so, and where NAKs
    // would have been heard (silent receivers that lost packets got no repairs), and nothing
    // confirms it: exit status 3.
    let small = dir.path().join("small");
    std::fs::write(&small, vec![7u8; 100_000]).unwrap();
    let o = send_on_loopback(
        &["--cc", "none", "--rate-max", "20Mbit", "--linger", "200ms"],
        &small,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("heard nothing from the group") && err.contains("on UDP port 41551"),
        "{err}"
    );
    assert!(
        err.contains("the whole stream was sent, but no receiver was heard from"),
        "{err}"
    );
}

#[test]
fn recv_never_overwrites_or_writes_into_a_directory_without_being_told() {
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("old.bin");
    std::fs::write(&existing, b"keep me").unwrap();
    for (out, says) in [
        (existing.clone(), "pass --force"),
        (dir.path().to_path_buf(), "is a directory"),
    ] {
        let o = pgmcc()
            .args(["recv", "--group", "239.1.1.1:7500", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{says}: {err}");
    }
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");
    // A bare number is not a rate.
    let o = pgmcc()
        .args(["send", "--group", "239.1.1.1:7500", "--rate-max", "20"])
        .arg(&existing)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give a unit"));
}

/// A live stream that pauses longer than --idle-timeout is not dead while its source sends
/// heartbeats (loopback, TTL 0). Before, the timeout counted delivered data only.
#[test]
fn a_paused_live_stream_is_not_declared_dead() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stream.bin");
    let group = "239.255.77.52:7500";
    let ports = "41561,41562";
    let recv = pgmcc()
        .args([
            "recv",
            "--group",
            group,
            "--iface",
            "127.0.0.7",
            "--udp-ports",
            ports,
        ])
        .args(["--idle-timeout", "5s", "-q", "--out"])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mut send = pgmcc()
        .args([
            "send",
            "--group",
            group,
            "--iface",
            "127.0.0.1",
            "--udp-ports",
            ports,
        ])
        .args(["--ttl", "0", "--linger", "500ms", "-q", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = send.stdin.take().unwrap();
    input.write_all(&[1u8; 100_000]).unwrap();
    input.flush().unwrap();
    // Longer than --idle-timeout, with no data at all.
    std::thread::sleep(Duration::from_secs(7));
    input.write_all(&[2u8; 100_000]).unwrap();
    drop(input);
    received_ok(send);
    let r = recv.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(0), "{err}");
    let got = std::fs::read(&out).unwrap();
    assert_eq!(got.len(), 200_000);
    assert!(got[..100_000].iter().all(|b| *b == 1) && got[100_000..].iter().all(|b| *b == 2));
}

/// No session at all: --join-timeout says so.
#[test]
fn recv_gives_up_when_no_session_starts_within_the_join_timeout() {
    let o = pgmcc()
        .args([
            "recv",
            "--group",
            "239.255.77.53:7500",
            "--iface",
            "127.0.0.8",
        ])
        .args([
            "--udp-ports",
            "41571,41572",
            "--join-timeout",
            "1s",
            "--out",
            "-",
            "-q",
        ])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--join-timeout"), "{err}");
    // The hint names both peers' flags.
    assert!(
        err.contains("An OpenPGM source needs --peer openpgm, a ZeroMQ publisher --peer zeromq"),
        "{err}"
    );
}

/// A session on loopback (multicast TTL 0: nothing leaves the host): a group and its
/// UCAST,MCAST ports, distinct per test so that tests running in parallel never meet.
#[derive(Clone, Copy)]
struct Loopback {
    group: &'static str,
    ports: &'static str,
}

impl Loopback {
    /// `pgmcc recv` on `iface` (127.0.0.x) with `extra` flags (an `--out` among them),
    /// standard error captured.
    fn recv(self, iface: &str, extra: &[&std::ffi::OsStr]) -> std::process::Child {
        pgmcc()
            .args(["recv", "--group", self.group, "--iface", iface])
            .args(["--udp-ports", self.ports, "-q", "--idle-timeout", "5s"])
            .args(["--join-timeout", "20s"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Sends `data` (see [`Loopback::send`]) and asserts the sender exited 0.
    fn send_ok(self, data: &std::path::Path, extra: &[&str]) {
        let s = self.send(data, extra).output().unwrap();
        assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    }

    /// Sends `data` (see [`Loopback::send`]) and asserts the sender exited 1 because a
    /// receiver reported a failed or partial transfer.
    fn send_failing(self, data: &std::path::Path, extra: &[&str]) {
        let s = self.send(data, extra).output().unwrap();
        let err = String::from_utf8_lossy(&s.stderr);
        assert_eq!(s.status.code(), Some(1), "{err}");
        assert!(
            err.contains("error: some receivers report a failed or partial transfer"),
            "{err}"
        );
    }

    /// `pgmcc send` from 127.0.0.1 of `data` with `extra` flags (a rate limit among them).
    fn send(self, data: &std::path::Path, extra: &[&str]) -> Command {
        let mut c = pgmcc();
        c.args([
            "send",
            "--group",
            self.group,
            "--iface",
            "127.0.0.1",
            "--ttl",
            "0",
        ])
        .args(["--udp-ports", self.ports, "-q", "--linger", "300ms"])
        .args(extra)
        .arg(data)
        .stderr(Stdio::piped());
        c
    }
}

/// Waits for a receiver, asserts it exited 0, and returns what it said.
fn received_ok(child: std::process::Child) -> String {
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    err
}

/// One loopback transfer of `data`, the sender and the receiver given extra flags; returns
/// the receiver's exit code and standard error.
fn loopback_pair(
    data: &std::path::Path,
    ports: &'static str,
    iface: &str,
    send_flags: &[&str],
    recv_flags: &[&std::ffi::OsStr],
) -> (Option<i32>, String) {
    let lo = Loopback {
        group: "239.255.77.54:7500",
        ports,
    };
    let out = std::ffi::OsStr::new("--out");
    let stdout = std::ffi::OsStr::new("-");
    let recv = lo.recv(iface, &[&[out, stdout][..], recv_flags].concat());
    std::thread::sleep(Duration::from_millis(300));
    let _ = lo
        .send(
            data,
            &[
                &["--feedback-timeout", "3s", "--rate-max", "20Mbit"][..],
                send_flags,
            ]
            .concat(),
        )
        .output()
        .unwrap();
    let recv = recv.wait_with_output().unwrap();
    (
        recv.status.code(),
        String::from_utf8_lossy(&recv.stderr).into_owned(),
    )
}

/// Signed mode's key pair, and each side of a mismatch saying what to do about it.
#[test]
fn signed_mode_mismatches_fail_and_name_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("source.key");
    let o = pgmcc()
        .args(["keygen", "--sign"])
        .arg(&key)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{said}");
    let public = dir.path().join("source.key.pub");
    assert!(
        said.contains("--trust") && said.contains("source.key.pub"),
        "{said}"
    );
    let text = std::fs::read_to_string(&public).unwrap();
    assert!(text.contains("pgmcc-public-key-v1 "), "{text}");
    // The secret key where the public one belongs is named as such.
    let o = pgmcc()
        .args(["recv", "--group", "239.1.1.1:7500", "--trust"])
        .arg(&key)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains(".pub file"));

    let data = dir.path().join("data");
    std::fs::write(&data, vec![5u8; 300_000]).unwrap();
    let trust = std::ffi::OsStr::new("--trust");
    // A signed source, a receiver that does not verify: no signature reaches the output.
    let key_arg = key.to_str().unwrap();
    let (code, err) = loopback_pair(&data, "41565,41566", "127.0.0.9", &["--sign", key_arg], &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("pass --trust"), "{err}");
    // A receiver that verifies, a source that does not sign: nothing is delivered.
    let (code, err) = loopback_pair(
        &data,
        "41567,41568",
        "127.0.0.10",
        &[],
        &[trust, public.as_os_str()],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is the sender running with --sign"), "{err}");
}

/// Issue 22: every receiver reports how its transfer ended, and `send --expect` turns the
/// reports into the exit status: 0 when every expected receiver confirmed the sha256, 1 when
/// one failed (a late joiner here, named in the table with its reason) or never reported.
#[test]
fn the_sender_collects_delivery_reports_and_expect_sets_its_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::write(
        &data,
        (0..2_000_000u32)
            .map(|i| (i % 253) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let lo = Loopback {
        group: "239.255.77.55:7500",
        ports: "41575,41576",
    };
    let recv = |iface: &str, out: &str| {
        let out = dir.path().join(out);
        lo.recv(iface, &[std::ffi::OsStr::new("--out"), out.as_os_str()])
    };
    let send = |expect: &str, rate: &str| {
        lo.send(
            &data,
            &[
                "--rate-max",
                rate,
                "--expect",
                expect,
                "--expect-timeout",
                "3s",
            ],
        )
        .spawn()
        .unwrap()
    };
    // Both on time: both confirm, exit 0.
    let (a, b) = (recv("127.0.0.31", "a1"), recv("127.0.0.32", "b1"));
    std::thread::sleep(Duration::from_millis(400));
    let s = send("2", "40Mbit").wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&s.stderr);
    assert_eq!(s.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("complete, sha256 matches").count(), 2, "{err}");
    for r in [a, b] {
        assert!(r.wait_with_output().unwrap().status.success());
    }
    // One joins late and fails: named with its reason, exit 1.
    let a = recv("127.0.0.31", "a2");
    std::thread::sleep(Duration::from_millis(400));
    let s = send("127.0.0.31,127.0.0.33", "8Mbit");
    std::thread::sleep(Duration::from_millis(700));
    let late = recv("127.0.0.33", "c2");
    let s = s.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&s.stderr);
    assert_eq!(s.status.code(), Some(1), "{err}");
    assert!(
        err.contains("127.0.0.31") && err.contains("complete, sha256 matches"),
        "{err}"
    );
    assert!(
        err.contains("127.0.0.33") && err.contains("FAILED: "),
        "{err}"
    );
    assert!(
        err.contains("no packet marked as the stream's start"),
        "the late joiner's reason: {err}"
    );
    assert!(a.wait_with_output().unwrap().status.success());
    assert_eq!(late.wait_with_output().unwrap().status.code(), Some(1));
}

/// Issue 22: Ctrl-C on the sender used to be silent, and receivers waited out their 30 s idle
/// timeout. Now the sender says what it sent, exits 130, and its OPT_RST ends the receivers'
/// wait at once (loopback, multicast TTL 0).
#[test]
fn an_interrupted_sender_tells_its_receivers_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![3u8; 20_000_000]).unwrap();
    let lo = Loopback {
        group: "239.255.77.56:7500",
        ports: "41577,41578",
    };
    let out = dir.path().join("out");
    let recv = lo.recv(
        "127.0.0.34",
        &[std::ffi::OsStr::new("--out"), out.as_os_str()],
    );
    std::thread::sleep(Duration::from_millis(400));
    // 20 MB at 8 Mbit/s: 20 s of sending, interrupted after 1.5 s. (The receiver's 5-s idle
    // timeout is longer than the 3 s it may take.)
    let send = lo.send(&data, &["--rate-max", "8Mbit"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let interrupted = std::time::Instant::now();
    assert!(Command::new("kill")
        .args(["-INT", &send.id().to_string()])
        .status()
        .unwrap()
        .success());
    let s = send.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&s.stderr);
    assert_eq!(s.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted after") && err.contains("OPT_RST"),
        "{err}"
    );
    let r = recv.wait_with_output().unwrap();
    let rerr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{rerr}");
    assert!(rerr.contains("the source aborted session"), "{rerr}");
    assert!(
        interrupted.elapsed() < Duration::from_secs(3),
        "the receiver took {:?} to give up",
        interrupted.elapsed()
    );
}

/// Issue 22: the source announces the file (OPT_MANIFEST on its SPMs: name, size, mode,
/// mtime, and with the end its sha256). A receiver checks the whole stream against it (or
/// against --expect-sha256) and gives the file the source's modification time; a wrong
/// --expect-sha256 fails and leaves no file.
#[test]
fn receivers_verify_the_announced_sha256_and_keep_the_mtime() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.bin");
    std::fs::write(
        &data,
        (0..1_500_000u32)
            .map(|i| (i % 241) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let mtime = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    std::fs::File::options()
        .write(true)
        .open(&data)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let lo = Loopback {
        group: "239.255.77.57:7500",
        ports: "41579,41580",
    };
    let recv = |iface: &str, out: &std::path::Path, extra: &[&str]| {
        let mut args = vec![std::ffi::OsStr::new("--out"), out.as_os_str()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        lo.recv(iface, &args)
    };
    let (good, bad) = (dir.path().join("good"), dir.path().join("bad"));
    let a = recv("127.0.0.35", &good, &[]);
    let b = recv("127.0.0.36", &bad, &["--expect-sha256", &"ab".repeat(32)]);
    std::thread::sleep(Duration::from_millis(400));
    // One receiver expected another sha256: its failure is the sender's.
    lo.send_failing(&data, &["--rate-max", "40Mbit"]);
    let err = received_ok(a);
    assert!(
        err.contains("sha256 matches the source's manifest"),
        "{err}"
    );
    assert_eq!(std::fs::read(&good).unwrap(), std::fs::read(&data).unwrap());
    assert_eq!(std::fs::metadata(&good).unwrap().modified().unwrap(), mtime);
    let b = b.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&b.stderr);
    assert_eq!(b.status.code(), Some(1), "{err}");
    assert!(err.contains("is not the --expect-sha256"), "{err}");
    assert!(!bad.exists());
}

/// Issue 22: a late joiner used to receive everything and fail at the end (134 MB discarded
/// after 29 s). It now fails at its first data, naming the cause.
#[test]
fn a_late_joiner_fails_at_once_not_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![9u8; 8_000_000]).unwrap();
    let lo = Loopback {
        group: "239.255.77.58:7500",
        ports: "41581,41582",
    };
    // 8 MB at 8 Mbit/s: 8 s of sending (no congestion control: nobody is there to ACK at
    // first); the receiver joins after 1 s.
    let mut send = lo
        .send(&data, &["--rate-max", "8Mbit", "--cc", "none"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let joined = std::time::Instant::now();
    let out = dir.path().join("out");
    let late = lo.recv(
        "127.0.0.37",
        &[std::ffi::OsStr::new("--out"), out.as_os_str()],
    );
    let r = late.wait_with_output().unwrap();
    let took = joined.elapsed();
    let _ = send.kill();
    let _ = send.wait();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("joined late or lost the start"), "{err}");
    assert!(took < Duration::from_secs(3), "failed after {took:?}");
    assert!(!out.exists());
}

/// Issue 22 item 5: with `send --passes`, a late joiner keeps the tail of the first pass and
/// takes the beginning from the second, and the sender stops once every receiver has it;
/// one that cannot hold parts (standard output) with `--allow-partial-start` is reported
/// PARTIAL, with the byte range, never "complete".
#[test]
fn a_late_joiner_completes_from_the_next_pass() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let body: Vec<u8> = (0..4_000_000u32).map(|k| (k * 7 % 251) as u8).collect();
    std::fs::write(&data, &body).unwrap();
    let lo = Loopback {
        group: "239.255.77.63:7500",
        ports: "41593,41594",
    };
    // 4 MB at 8 Mbit/s: 4 s a pass (no congestion control: nobody ACKs at first); the
    // receivers join after 1 s, about a quarter of the first pass missed.
    let send = lo
        .send(
            &data,
            &["--rate-max", "8Mbit", "--cc", "none", "--passes", "3"],
        )
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let out = dir.path().join("out");
    let late = lo.recv("127.0.0.43", &["--out".as_ref(), out.as_os_str()]);
    let piped = lo.recv(
        "127.0.0.44",
        &[
            "--out".as_ref(),
            "-".as_ref(),
            "--allow-partial-start".as_ref(),
        ],
    );
    let err = received_ok(late);
    assert!(err.contains("joined late"), "{err}");
    assert!(err.contains("waiting for the source's next pass"), "{err}");
    assert!(err.contains("complete from 2 passes"), "{err}");
    assert!(
        err.contains("sha256 matches the source's manifest"),
        "{err}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), body);
    let err = received_ok(piped);
    assert!(err.contains("PARTIAL (bytes "), "{err}");
    assert!(err.contains("of 4000000"), "{err}");
    assert!(!err.contains("complete"), "{err}");
    let s = send.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&s.stderr);
    // The piped receiver kept part of the stream: not every receiver got all of it.
    assert_eq!(s.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: some receivers report a failed or partial transfer"),
        "{err}"
    );
    assert!(
        err.contains("pass 1 of 3 done; 1 receiver holds part of it and waits: pass 2 follows"),
        "{err}"
    );
    assert!(
        err.contains("no receiver waits for another pass after pass 2 of 3: no more passes"),
        "{err}"
    );
    assert!(
        err.contains("127.0.0.43") && err.contains("complete, sha256 matches"),
        "{err}"
    );
    assert!(
        err.contains("127.0.0.44") && err.contains("PARTIAL: "),
        "{err}"
    );
    assert!(!err.contains("pass 3 of 3"), "{err}");
}

/// Issue 22's "Why": when standard error is not a terminal, both sides print a progress
/// line now and then (every 10 s): the receiver with size, percentage and time left, the
/// sender counting what left as data, not what it queued (the whole file at once); and the
/// output file's mode follows the umask (it used to be 0600 whatever the umask).
#[test]
fn piped_progress_counts_what_left_and_the_output_follows_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let body: Vec<u8> = (0..2_000_000u32).map(|k| (k % 241) as u8).collect();
    std::fs::write(&data, &body).unwrap();
    let out = dir.path().join("out");
    // 2 MB at 1 Mbit/s: about 16 s, so one line from each side at 10 s.
    let recv = Command::new("sh")
        .args(["-c", "umask 027 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_pgmcc"))
        .args([
            "recv",
            "--group",
            "239.255.77.64:7500",
            "--iface",
            "127.0.0.45",
        ])
        .args([
            "--udp-ports",
            "41595,41596",
            "--idle-timeout",
            "5s",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let s = pgmcc()
        .args([
            "send",
            "--group",
            "239.255.77.64:7500",
            "--iface",
            "127.0.0.1",
        ])
        .args([
            "--ttl",
            "0",
            "--udp-ports",
            "41595,41596",
            "--linger",
            "300ms",
        ])
        .args(["--rate-max", "1Mbit"])
        .arg(&data)
        .output()
        .unwrap();
    let sent = String::from_utf8_lossy(&s.stderr);
    assert!(s.status.success(), "{sent}");
    let got = received_ok(recv);
    assert_eq!(std::fs::read(&out).unwrap(), body);
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "0666 less the umask 027");
    // "pgmcc recv: 62% (1.2 of 2.0 MB), 0.12 MB/s, about 6 s left"
    let line = got
        .lines()
        .find(|l| l.starts_with("pgmcc recv: ") && l.contains("% ("))
        .unwrap_or_else(|| panic!("no progress line: {got}"));
    assert!(
        line.contains("of 2.0 MB") && line.contains("left"),
        "{line}"
    );
    let line = sent
        .lines()
        .find(|l| l.starts_with("pgmcc send: ") && l.contains("% ("))
        .unwrap_or_else(|| panic!("no progress line: {sent}"));
    let pct: u32 = line
        .trim_start_matches("pgmcc send: ")
        .split('%')
        .next()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    // About 60% had left at 10 s; the queue held all of it from the start.
    assert!((40..=80).contains(&pct), "{line}");
}

/// Issue 22's "Why": two senders on one host collided on the UDP port with an error that did
/// not name --udp-ports, and OS errors printed twice. Also: `recv` refuses to write binary
/// to a terminal.
#[test]
fn a_port_collision_names_udp_ports_once_and_recv_spares_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![1u8; 1_000_000]).unwrap();
    let send = |limit: &str| {
        pgmcc()
            .args([
                "send",
                "--group",
                "239.255.77.65:7500",
                "--iface",
                "127.0.0.1",
            ])
            .args(["--ttl", "0", "--udp-ports", "41597,41598", "-q"])
            .args([
                "--rate-max",
                "1Mbit",
                "--cc",
                "none",
                "--max-duration",
                limit,
            ])
            .arg(&data)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut first = send("5s");
    std::thread::sleep(Duration::from_millis(500));
    let second = send("1s").wait_with_output().unwrap();
    let _ = first.kill();
    let _ = first.wait();
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(err.contains("--udp-ports UCAST,MCAST"), "{err}");
    assert_eq!(err.matches("Address already in use").count(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "one line, one prefix: {err}");
    // `script` gives recv a terminal for standard output.
    let o = Command::new("script")
        .args(["-qec"])
        .arg(format!(
            "{} recv --group 239.255.77.65:7500 --udp-ports 41599,41600",
            env!("CARGO_BIN_EXE_pgmcc")
        ))
        .arg("/dev/null")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(said.contains("standard output is a terminal"), "{said}");
}

/// Issue 22 item 2: `pgmcc send DIR` sends the tree as one archive and `pgmcc recv -D OUT`
/// writes it out (contents, modes, times), verified by the manifest's sha256; a receiver given
/// `--out FILE` for a tree fails naming -D; a single file sent to `-D` lands under its name.
#[test]
fn a_directory_tree_arrives_whole_with_recv_dir() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(site.join("img/icons")).unwrap();
    std::fs::create_dir(site.join("empty")).unwrap();
    let mut files = Vec::new();
    for (i, name) in ["index.html", "img/a.png", "img/icons/b.png", "run.sh"]
        .iter()
        .enumerate()
    {
        let body: Vec<u8> = (0..300_000u32 * (i as u32 + 1))
            .map(|k| (k % (200 + i as u32)) as u8)
            .collect();
        std::fs::write(site.join(name), &body).unwrap();
        files.push((*name, body));
    }
    std::fs::set_permissions(site.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mtime = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    std::fs::File::options()
        .write(true)
        .open(site.join("index.html"))
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let lo = Loopback {
        group: "239.255.77.59:7500",
        ports: "41583,41584",
    };
    let out = dir.path().join("received");
    let wrong = dir.path().join("wrong.bin");
    let a = lo.recv("127.0.0.37", &["-D".as_ref(), out.as_os_str()]);
    let b = lo.recv("127.0.0.38", &["--out".as_ref(), wrong.as_os_str()]);
    std::thread::sleep(Duration::from_millis(400));
    // The receiver given --out for a tree fails, and so the transfer.
    lo.send_failing(&site, &["--rate-max", "60Mbit"]);
    let err = received_ok(a);
    assert!(
        err.contains("sha256 matches the source's manifest"),
        "{err}"
    );
    assert!(err.contains("wrote 4 files, 4 directories into"), "{err}");
    for (name, body) in &files {
        assert_eq!(
            &std::fs::read(out.join("site").join(name)).unwrap(),
            body,
            "{name}"
        );
    }
    assert!(out.join("site/empty").is_dir());
    let mode = std::fs::metadata(out.join("site/run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o100, 0o100, "executable stays executable");
    let got = std::fs::metadata(out.join("site/index.html"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(got, mtime);
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers,
        vec![std::ffi::OsString::from("site")],
        "no temporary file left"
    );
    let b = b.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&b.stderr);
    assert_eq!(b.status.code(), Some(1), "{err}");
    assert!(err.contains("receive it with -D DIR"), "{err}");
    assert!(!wrong.exists());

    // One file to -D: written under the source's name; not over an existing one.
    let single = dir.path().join("notes.txt");
    std::fs::write(&single, b"plain file\n").unwrap();
    let lo = Loopback {
        group: "239.255.77.60:7500",
        ports: "41585,41586",
    };
    let a = lo.recv("127.0.0.39", &["-D".as_ref(), out.as_os_str()]);
    std::thread::sleep(Duration::from_millis(400));
    lo.send_ok(&single, &["--rate-max", "20Mbit"]);
    received_ok(a);
    assert_eq!(
        std::fs::read(out.join("notes.txt")).unwrap(),
        b"plain file\n"
    );
}

/// Issue 22 item 4: `recv --daemon -D DIR` receives one session after another, logs a line
/// per transfer, and stops cleanly (exit 0) on SIGTERM between transfers.
#[test]
fn a_receive_daemon_takes_one_session_after_another() {
    let dir = tempfile::tempdir().unwrap();
    let lo = Loopback {
        group: "239.255.77.61:7500",
        ports: "41587,41588",
    };
    let out = dir.path().join("inbox");
    let daemon = lo.recv(
        "127.0.0.40",
        &["-D".as_ref(), out.as_os_str(), "--daemon".as_ref()],
    );
    std::thread::sleep(Duration::from_millis(400));
    let mut sent = Vec::new();
    for (i, name) in ["first.bin", "second.bin", "third.bin"].iter().enumerate() {
        let p = dir.path().join(name);
        let body: Vec<u8> = (0..200_000u32)
            .map(|k| (k % (97 + i as u32)) as u8)
            .collect();
        std::fs::write(&p, &body).unwrap();
        lo.send_ok(&p, &["--rate-max", "40Mbit"]);
        sent.push((name, body));
    }
    std::thread::sleep(Duration::from_millis(300));
    let st = Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = daemon.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(err.matches(": complete, 200000 bytes").count(), 3, "{err}");
    assert!(
        err.contains("stopped by a signal after 3 transfers"),
        "{err}"
    );
    for (name, body) in &sent {
        assert_eq!(&std::fs::read(out.join(name)).unwrap(), body, "{name}");
    }
    // --daemon needs a directory to put things in.
    let e = pgmcc()
        .args(["recv", "--group", "239.255.77.61:7500", "--daemon"])
        .output()
        .unwrap();
    assert!(!e.status.success());
    assert!(String::from_utf8_lossy(&e.stderr).contains("--dir"));
}

/// Issue 21/22: in signed mode the receiver takes the tree's name, kind and hash from the
/// manifest the source signed with its end list, not from the SPMs.
#[test]
fn a_signed_tree_is_written_from_its_signed_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = common::signing_key(dir.path());
    let tree = dir.path().join("docs");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("a.txt"), vec![b'a'; 700_000]).unwrap();
    std::fs::write(tree.join("sub/b.txt"), vec![b'b'; 300_000]).unwrap();
    let lo = Loopback {
        group: "239.255.77.62:7500",
        ports: "41589,41590",
    };
    let out = dir.path().join("got");
    let r = lo.recv(
        "127.0.0.41",
        &[
            "--trust".as_ref(),
            public.as_os_str(),
            "-D".as_ref(),
            out.as_os_str(),
        ],
    );
    std::thread::sleep(Duration::from_millis(400));
    let key_arg = key.to_str().unwrap();
    lo.send_ok(&tree, &["--rate-max", "40Mbit", "--sign", key_arg]);
    let err = received_ok(r);
    assert!(
        err.contains("sha256 matches the source's signed manifest"),
        "{err}"
    );
    assert!(err.contains("wrote 2 files, 2 directories"), "{err}");
    assert_eq!(
        std::fs::read(out.join("docs/sub/b.txt")).unwrap(),
        vec![b'b'; 300_000]
    );
}

/// A rate-capped transfer on a sub-millisecond path with loss used to crawl: the window
/// limit (what the transmit window keeps per round trip) read the LAN's round trip as 0 ms
/// and held the window to one packet, so each loss, with no later packet to reveal it,
/// cost a 3 s stall (5 MB at `--rate-max 8Mbit` with every 40th packet lost: 14 s, 3 stalls,
/// against 5.2 s without loss). The limit now counts at least 1 ms and four packets.
#[test]
fn a_rate_capped_transfer_with_loss_on_a_lan_does_not_stall() {
    let dir = tempfile::tempdir().unwrap();
    let (data, want) = common::random_file(dir.path(), 5_000_000);
    let lo = Loopback {
        group: "239.255.77.66:7500",
        ports: "41601,41602",
    };
    let out = dir.path().join("out.bin");
    let rx = lo.recv(
        "127.0.0.41",
        &[std::ffi::OsStr::new("--out"), out.as_os_str()],
    );
    std::thread::sleep(Duration::from_millis(300));
    let stats = dir.path().join("send.json");
    let stats_arg = stats.to_string_lossy().into_owned();
    lo.send_ok(
        &data,
        &[
            "--rate-max",
            "8Mbit",
            "--fec",
            "0",
            "--drop-every",
            "40",
            "--stats",
            &stats_arg,
        ],
    );
    received_ok(rx);
    assert_eq!(common::sha_of(&out), want);
    let s = common::stats(&stats);
    let cc = &s["status"]["cc"];
    assert!(cc["loss_events"].as_u64().unwrap() > 10, "{cc}");
    assert_eq!(cc["stalls"].as_u64(), Some(0), "{cc}");
    // 5 MB at 8 Mbit/s is 5 s; one stall alone would add 3.
    let secs = s["sending_seconds"].as_f64().unwrap();
    assert!(secs < 7.5, "{secs} s");
}

/// A receiver whose disk fills up part way fails the transfer, removes what it wrote and
/// tells the source so: the sender's table names the reason, `--expect` fails. The receiver
/// writes into a 1 MiB tmpfs of its own mount namespace (root only), the file is 3 MB.
#[test]
fn a_full_disk_fails_the_transfer_and_the_source_hears_why() {
    const TEST: &str = "a_full_disk_fails_the_transfer_and_the_source_hears_why";
    if !common::is_root() {
        common::skip(TEST, "needs root (a tmpfs in a mount namespace of its own)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::write(
        &data,
        (0..3_000_000u32)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let lo = Loopback {
        group: "239.255.77.57:7500",
        ports: "41577,41578",
    };
    // `unshare --mount` gives the receiver a mount namespace of its own: the tmpfs is gone
    // with it, whatever happens.
    let script = format!(
        "mount -t tmpfs -o size=1m tmpfs {d} && exec {pgmcc} recv --group {g} --iface 127.0.0.41 --udp-ports {p} -q --idle-timeout 5s --join-timeout 20s --out {d}/out.bin",
        d = small.display(),
        pgmcc = env!("CARGO_BIN_EXE_pgmcc"),
        g = lo.group,
        p = lo.ports,
    );
    let recv = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let s = lo
        .send(
            &data,
            &[
                "--rate-max",
                "40Mbit",
                "--expect",
                "1",
                "--expect-timeout",
                "3s",
            ],
        )
        .output()
        .unwrap();
    let r = recv.wait_with_output().unwrap();
    let (serr, rerr) = (
        String::from_utf8_lossy(&s.stderr),
        String::from_utf8_lossy(&r.stderr),
    );
    assert_eq!(r.status.code(), Some(1), "{rerr}");
    assert!(rerr.contains("No space left on device"), "{rerr}");
    assert!(rerr.contains("no output file was written"), "{rerr}");
    assert_eq!(s.status.code(), Some(1), "{serr}");
    assert!(
        serr.contains("127.0.0.41") && serr.contains("FAILED: ") && serr.contains("No space left"),
        "{serr}"
    );
}

/// `GET /metrics` from `addr`: the HTTP status line and the body.
fn scrape(addr: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// The value of the sample `name` (with its labels) in an OpenMetrics exposition.
fn sample(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in:\n{body}"))
        .parse()
        .unwrap()
}

/// `--metrics`: the source's endpoint counts the transfer while it runs, the daemon's
/// counts the transfers it finished, and both end as OpenMetrics requires (loopback,
/// multicast TTL 0).
#[test]
fn metrics_endpoints_count_a_transfer_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![5u8; 1_200_000]).unwrap();
    let into = dir.path().join("in");
    std::fs::create_dir(&into).unwrap();
    let lo = Loopback {
        group: "239.255.77.67:7500",
        ports: "41670,41671",
    };
    let (send_at, recv_at) = ("127.0.0.1:41672", "127.0.0.1:41673");
    let os = std::ffi::OsStr::new;
    /// The daemon, killed however the test ends.
    struct Daemon(std::process::Child);
    impl Drop for Daemon {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut recv = Daemon(lo.recv(
        "127.0.0.1",
        &[
            os("--daemon"),
            os("-D"),
            into.as_os_str(),
            os("--metrics"),
            os(recv_at),
        ],
    ));
    std::thread::sleep(Duration::from_millis(400));
    let send = lo
        .send(&data, &["--rate-max", "4Mbit", "--metrics", send_at])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let (status, body) = scrape(send_at);
    assert_eq!(status, "HTTP/1.1 200 OK");
    let sent = sample(&body, "pgmcc_send_data_bytes_total");
    assert!(
        sent > 100_000.0 && sent < 1_200_000.0,
        "mid-transfer: {body}"
    );
    assert_eq!(sample(&body, "pgmcc_send_sessions_total"), 1.0);
    assert!(
        body.contains("pgmcc_send_acker_info{address=\"127.0.0.1\"} 1"),
        "{body}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    let s = send.wait_with_output().unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));

    // The daemon commits the file after the source's end (the source does not wait for it
    // here: no --expect).
    let complete = "pgmcc_recv_transfers_total{outcome=\"complete\"}";
    let started = std::time::Instant::now();
    let body = loop {
        let (_, body) = scrape(recv_at);
        if sample(&body, complete) >= 1.0 || started.elapsed() > Duration::from_secs(10) {
            break body;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(sample(&body, complete), 1.0, "{body}");
    assert_eq!(
        sample(&body, "pgmcc_recv_delivered_bytes_total"),
        1_200_000.0
    );
    assert_eq!(
        sample(&body, "pgmcc_recv_dropped_total{reason=\"malformed\"}"),
        0.0
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert!(Command::new("kill")
        .args(["-INT", &recv.0.id().to_string()])
        .status()
        .unwrap()
        .success());
    assert!(recv.0.wait().unwrap().success());
}
