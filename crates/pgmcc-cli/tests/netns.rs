//! `pgmcc send` / `pgmcc recv` on real sockets, in network namespaces built by
//! `scripts/netns-lab` (a sender, receivers behind a tbf bottleneck). Needs root; without it
//! each test returns early and reports itself skipped (`skip` in tests/common). Nothing is sent outside the namespaces.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

mod common;
use common::*;

#[test]
fn a_20_mb_file_reaches_5_receivers_byte_identical_through_a_bottleneck() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = Lab::up("f", 5) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 20_000_000);
    let outs: Vec<PathBuf> = (1..=5)
        .map(|i| dir.path().join(format!("r{i}.bin")))
        .collect();
    let rx: Vec<Child> = outs
        .iter()
        .enumerate()
        .map(|(i, o)| lab.recv(&format!("r{}", i + 1), o))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let stats_path = dir.path().join("send.json");
    finish_ok(
        lab.send(&input, &stats_path),
        Duration::from_secs(120),
        "the sender",
    );
    for (i, (child, out)) in rx.into_iter().zip(&outs).enumerate() {
        let o = finish_ok(
            child,
            Duration::from_secs(60),
            format!("receiver {}", i + 1),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(sha_of(out), want, "receiver {}", i + 1);
        assert!(err.contains(&want), "receiver prints the sha256: {err}");
    }
    let s = stats(&stats_path);
    let secs = s["sending_seconds"].as_f64().unwrap();
    let mbit = 20e6 * 8.0 / secs / 1e6;
    eprintln!(
        "20 MB to 5 receivers in {secs:.1} s = {mbit:.1} Mbit/s through a {RATE_MBIT} Mbit/s bottleneck; acker {}, {} repairs, cc {}",
        s["status"]["acker"], s["status"]["stats"]["rdata_packets"], s["status"]["cc"]
    );
    assert!(mbit < RATE_MBIT * 1.05, "faster than the bottleneck?");
    assert!(s["status"]["acker"].is_string(), "pgmcc elected an acker");
}

#[test]
fn real_linux_tcp_and_pgmcc_share_the_bottleneck() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = Lab::up("t", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 20_000_000);
    let count = dir.path().join("tcp.count");
    let sink = tcp_sink(lab.cmd("r1"), &count);
    // CUBIC, most distributions' default (this host defaults to BBR); Reno and BBR
    // measurements are in docs/runtime.md. It outlasts the pgmcc transfer and is stopped once
    // that is over, so both rates cover the same interval.
    let tcp = tcp_send(lab.cmd("s"), "10.77.0.11", 90, "cubic");
    // Let TCP take the link first.
    std::thread::sleep(Duration::from_secs(2));
    let outs = [dir.path().join("r1.bin"), dir.path().join("r2.bin")];
    let rx: Vec<Child> = outs
        .iter()
        .enumerate()
        .map(|(i, o)| lab.recv(&format!("r{}", i + 1), o))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (t0, b0) = *tcp_log(&count).last().unwrap();
    let stats_path = dir.path().join("send.json");
    let started = Instant::now();
    let tx = lab.send(&input, &stats_path);
    // The pgmcc transfer ends when its sender has handed over the last byte; sample TCP's
    // count then (the sender goes on lingering for repairs).
    finish_ok(tx, Duration::from_secs(120), "the sender");
    let s = stats(&stats_path);
    let secs = s["sending_seconds"].as_f64().unwrap();
    assert!(started.elapsed().as_secs_f64() >= secs);
    // TCP's share while pgmcc was sending (not while it lingered for repairs).
    let (t1, b1) = tcp_at(&tcp_log(&count), t0 + secs);
    let mut tcp = tcp;
    let _ = tcp.kill();
    assert!(
        t1 - t0 > secs - 0.5,
        "TCP stopped {:.1} s into a {secs:.1} s pgmcc transfer",
        t1 - t0
    );
    for (child, out) in rx.into_iter().zip(&outs) {
        finish_ok(child, Duration::from_secs(60), "a receiver");
        assert_eq!(sha_of(out), want);
    }
    finish(tcp, Duration::from_secs(60));
    finish(sink, Duration::from_secs(10));
    let pgmcc_mbit = 20e6 * 8.0 / secs / 1e6;
    let tcp_mbit = (b1 - b0) * 8.0 / (t1 - t0) / 1e6;
    eprintln!(
        "bottleneck {RATE_MBIT} Mbit/s: pgmcc {pgmcc_mbit:.1} Mbit/s over {secs:.1} s, Linux TCP CUBIC {tcp_mbit:.1} Mbit/s over {:.1} s; TCP/pgmcc = {:.2}; pgmcc {}",
        t1 - t0,
        tcp_mbit / pgmcc_mbit,
        s["status"]["cc"]
    );
    assert!(
        pgmcc_mbit > RATE_MBIT * 0.15,
        "pgmcc starved: {pgmcc_mbit:.1}"
    );
    assert!(tcp_mbit > RATE_MBIT * 0.15, "TCP starved: {tcp_mbit:.1}");
    assert!(pgmcc_mbit + tcp_mbit < RATE_MBIT * 1.1);
}

#[test]
fn a_receiver_killed_and_restarted_mid_transfer_reports_its_missing_start() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = Lab::up("k", 3) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 20_000_000);
    let outs: Vec<PathBuf> = (1..=3)
        .map(|i| dir.path().join(format!("r{i}.bin")))
        .collect();
    let mut rx: Vec<Child> = outs
        .iter()
        .enumerate()
        .map(|(i, o)| lab.recv(&format!("r{}", i + 1), o))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let stats_path = dir.path().join("send.json");
    let tx = lab.send(&input, &stats_path);
    // About a quarter of the way in (20 MB at 40 Mbit/s take about 4 s), kill receiver 3
    // and start it again.
    std::thread::sleep(Duration::from_millis(1000));
    let mut victim = rx.pop().unwrap();
    victim.kill().unwrap();
    let _ = victim.wait();
    assert!(!outs[2].exists(), "a killed receiver leaves no output file");
    let again = lab.recv("r3", &outs[2]);
    // The restarted receiver's failure report makes the sender's exit status 1.
    let sent = finish_with(tx, Duration::from_secs(120), 1, "the sender");
    let said = String::from_utf8_lossy(&sent.stderr);
    assert!(
        said.contains("error: some receivers report a failed or partial transfer"),
        "{said}"
    );
    for (i, (child, out)) in rx.into_iter().zip(&outs).enumerate() {
        finish_ok(
            child,
            Duration::from_secs(60),
            format!("receiver {}", i + 1),
        );
        assert_eq!(sha_of(out), want);
    }
    let o = finish(again, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    eprintln!("restarted receiver said: {err}");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no packet marked as the stream's start"),
        "{err}"
    );
    assert!(!outs[2].exists(), "no partial file is left behind");
    let s = stats(&stats_path);
    eprintln!(
        "sender: acker {}, cc {}",
        s["status"]["acker"], s["status"]["cc"]
    );
}

#[test]
fn raw_ip_protocol_113_carries_a_session_with_repairs() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = Lab::up("r", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), 3_000_000);
    let outs = [dir.path().join("r1.bin"), dir.path().join("r2.bin")];
    let rx: Vec<Child> = outs
        .iter()
        .enumerate()
        .map(|(i, o)| lab.recv_with(&format!("r{}", i + 1), o, &["--raw-ip"]))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let stats_path = dir.path().join("send.json");
    let tx = lab.send_with(&input, &stats_path, &["--raw-ip", "--drop-every", "25"]);
    finish_ok(tx, Duration::from_secs(60), "the sender");
    for (child, out) in rx.into_iter().zip(&outs) {
        finish_ok(child, Duration::from_secs(60), "a receiver");
        assert_eq!(sha_of(out), want);
    }
    let s = stats(&stats_path);
    assert!(s["status"]["injected_drops"].as_u64().unwrap() > 50);
    assert!(s["status"]["stats"]["rdata_packets"].as_u64().unwrap() > 50);
}
