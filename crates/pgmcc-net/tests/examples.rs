//! Runs the library's examples (`crates/pgmcc-net/examples/`, built by `cargo test`) as a
//! user would, on this host only: loopback addresses, multicast TTL 0.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The built example `name`: `target/<profile>/examples/`, beside this test's `deps/`.
/// `cargo test` builds the examples with the tests; a run of this test alone
/// (`--test examples`) does not, so it builds them first.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let path = dir.join("examples").join(name);
    if !path.exists() {
        let built = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "pgmcc-net", "--examples"])
            .status()
            .unwrap();
        assert!(built.success(), "building the examples");
    }
    path
}

/// Waits for `child` at most `limit`, killing it then.
fn finish(mut child: std::process::Child, limit: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn the_send_and_recv_examples_talk_to_each_other() {
    let (group, port) = ("239.255.77.62", "7562");
    let recv = Command::new(example("recv"))
        .args([group, port, "127.0.0.2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let send = Command::new(example("send"))
        .args([group, port, "127.0.0.1", "0", "500"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let r = finish(recv, Duration::from_secs(30));
    let s = finish(send, Duration::from_secs(45));
    assert!(r.status.success(), "recv: {}", text(&r));
    assert!(
        String::from_utf8_lossy(&r.stdout).contains("500 messages"),
        "recv: {}",
        text(&r)
    );
    assert!(s.status.success(), "send: {}", text(&s));
    // The receiver's delivery report reached the source.
    assert!(
        String::from_utf8_lossy(&s.stdout).contains("127.0.0.2: Complete"),
        "send: {}",
        text(&s)
    );
}

/// Runs example `name` (one that needs no arguments); asserts it succeeded and printed
/// `want`.
fn run_alone(name: &str, want: &str) {
    let o = finish(
        Command::new(example(name))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(30),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(want),
        "{}",
        text(&o)
    );
}

#[test]
fn the_blocking_example_delivers_every_line() {
    run_alone("blocking", "100 lines received");
}

#[test]
fn the_keyed_example_opens_what_it_sealed() {
    run_alone("keyed", "sealed with the group key");
}
