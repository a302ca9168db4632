//! Interoperability with OpenPGM (libpgm 5.3, Debian libpgm-dev) in both directions, in the
//! namespace lab: libpgm's sender to our receiver and our sender to libpgm's receiver, 5 MB
//! each with induced loss so NAKs, NCFs and RDATA cross implementations, sha256 checked; and
//! the libpgm self-test script, which captures everything libpgm sends and checks that our
//! decoder parses every packet. Needs root and libpgm-dev (both present in CI; otherwise each
//! test says it was skipped and passes). The C peers are in interop/.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::*;

/// OpenPGM sources hear NAKs on their multicast port only: one UDP port both ways.
const ONE_PORT: &str = "3056,3056";
const LEN: usize = 5_000_000;

/// Builds interop/pgm-send and interop/pgm-recv; false (with a message) when libpgm is absent.
fn libpgm_tools(test: &str) -> bool {
    let have = Command::new("pkg-config")
        .args(["--exists", "openpgm-5.3"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        eprintln!("SKIPPED {test}: libpgm-dev (openpgm-5.3) is not installed; scripts/install-deps installs it");
        return false;
    }
    build_interop();
    true
}

fn tool(name: &str) -> PathBuf {
    repo().join("interop").join(name)
}

#[test]
fn libpgm_sender_to_our_receivers_with_loss() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !libpgm_tools("libpgm_sender_to_our_receivers_with_loss") {
        return;
    }
    let Some(lab) = Lab::up("i", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), LEN);
    let outs = [dir.path().join("r1.bin"), dir.path().join("r2.bin")];
    // libpgm marks no packet OPT_SYN, so our receivers cannot prove they saw the start:
    // --allow-partial-start. Each drops every 30th datagram (different phases), so both
    // NAK and libpgm repairs.
    let rx: Vec<_> = outs
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let drop = (30 + i).to_string();
            lab.recv_with(
                &format!("r{}", i + 1),
                o,
                &[
                    // One port both ways and no start marker: what --peer openpgm sets.
                    "--peer",
                    "openpgm",
                    "--drop-every",
                    &drop,
                    "--stats",
                    dir.path()
                        .join(format!("r{}.json", i + 1))
                        .to_str()
                        .unwrap(),
                ],
            )
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let tx = lab
        .cmd("s")
        .arg(tool("pgm-send"))
        .args([
            "--network",
            "10.77.0.1;239.192.0.1",
            "--raw",
            "--rate",
            "5000000",
        ])
        // Without OPT_GRTT from libpgm our receivers wait OpenPGM's own 2 s for an NCF or a
        // repair: linger over a few such rounds (pgm-send's default, 10 s), as a libpgm
        // receiver with its defaults would need too.
        .args(["--linger", "10", "--file"])
        .arg(&input)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish_ok(tx, Duration::from_secs(60), "the sender");
    for (i, (child, out)) in rx.into_iter().zip(&outs).enumerate() {
        finish_ok(
            child,
            Duration::from_secs(60),
            format!("receiver {}", i + 1),
        );
        assert_eq!(sha_of(out), want, "receiver {}", i + 1);
        let s = stats(&dir.path().join(format!("r{}.json", i + 1)));
        let st = &s["status"]["stats"];
        eprintln!(
            "our receiver {} from libpgm: {} NAKs sent, {} RDATA, {} NCFs, {} malformed",
            i + 1,
            st["naks_sent"],
            st["rdata_packets"],
            st["ncf_packets"],
            st["malformed"]
        );
        assert!(
            st["rdata_packets"].as_u64().unwrap() > 50,
            "libpgm repaired"
        );
        assert!(
            st["ncf_packets"].as_u64().unwrap() > 0,
            "libpgm confirmed NAKs"
        );
        assert_eq!(
            st["malformed"].as_u64(),
            Some(0),
            "every libpgm packet parsed"
        );
    }
}

#[test]
fn our_sender_to_libpgm_receivers_with_loss() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !libpgm_tools("our_sender_to_libpgm_receivers_with_loss") {
        return;
    }
    let Some(lab) = Lab::up("o", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), LEN);
    let outs = [dir.path().join("r1.bin"), dir.path().join("r2.bin")];
    let rx: Vec<_> = outs
        .iter()
        .enumerate()
        .map(|(i, o)| {
            lab.cmd(&format!("r{}", i + 1))
                .arg(tool("pgm-recv"))
                .args(["--network", &format!("10.77.0.{};239.192.0.1", 11 + i)])
                .args(["--raw", "--bytes", &LEN.to_string(), "--timeout", "15"])
                .arg("--out")
                .arg(o)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // libpgm receivers never ACK (its PGMCC is broken, docs/interop.md), so our source runs
    // without congestion control here, paced below the lab's bottleneck; every 25th data
    // packet stays off the wire so libpgm must NAK and take our NCFs and RDATA.
    let stats_path = dir.path().join("send.json");
    let tx = lab.send_with(
        &input,
        &stats_path,
        &[
            // One port both ways, no congestion control, no parity: --peer openpgm.
            "--peer",
            "openpgm",
            "--rate-max",
            "30Mbit",
            "--drop-every",
            "25",
        ],
    );
    finish_ok(tx, Duration::from_secs(60), "the sender");
    for (i, (child, out)) in rx.into_iter().zip(&outs).enumerate() {
        finish_ok(
            child,
            Duration::from_secs(60),
            format!("receiver {}", i + 1),
        );
        assert_eq!(sha_of(out), want, "libpgm receiver {}", i + 1);
    }
    let s = stats(&stats_path);
    let st = &s["status"]["stats"];
    eprintln!(
        "our sender to libpgm: {} withheld, {} NAKs from libpgm, {} NCFs, {} RDATA, {} malformed",
        s["status"]["injected_drops"],
        st["naks_received"],
        st["ncf_packets"],
        st["rdata_packets"],
        st["malformed"]
    );
    assert!(st["naks_received"].as_u64().unwrap() > 20, "libpgm NAKed");
    assert!(st["rdata_packets"].as_u64().unwrap() > 50, "we repaired");
    assert_eq!(st["malformed"].as_u64(), Some(0), "every libpgm NAK parsed");
}

#[test]
fn our_decoder_parses_every_packet_libpgm_sends() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !libpgm_tools("our_decoder_parses_every_packet_libpgm_sends") {
        return;
    }
    if !is_root() {
        eprintln!("SKIPPED our_decoder_parses_every_packet_libpgm_sends: needs root");
        return;
    }
    // libpgm to libpgm with random loss, captured with tcpdump; every packet then goes
    // through `pgmcc decode` (scripts/interop-libpgm-selftest says what it checks).
    let out = Command::new(repo().join("scripts/interop-libpgm-selftest"))
        .env("PGMCC_BIN", pgmcc())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "self-test failed");
}

#[test]
fn zeromq_epgm_publisher_to_our_receiver() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !libpgm_tools("zeromq_epgm_publisher_to_our_receiver") {
        return;
    }
    if !tool("zmq-pub").exists() {
        eprintln!("SKIPPED zeromq_epgm_publisher_to_our_receiver: libzmq3-dev is not installed; scripts/install-deps installs it");
        return;
    }
    let Some(lab) = Lab::up("z", 1) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("messages.txt");
    // ZeroMQ's epgm uses the endpoint's port as PGM port and as UDP port both ways.
    let rx = lab
        .cmd("r1")
        .arg(pgmcc())
        .args([
            "recv",
            "--group",
            "239.192.0.1:5555",
            // The endpoint's port both ways, ZeroMQ's framing: --peer zeromq.
            "--peer",
            "zeromq",
        ])
        .args(["--drop-every", "50", "-q", "--idle-timeout", "20s", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    const COUNT: usize = 5000;
    let tx = lab
        .cmd("s")
        .arg(tool("zmq-pub"))
        .args([
            "epgm://10.77.0.1;239.192.0.1:5555",
            &COUNT.to_string(),
            "5000",
            "3",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish_ok(tx, Duration::from_secs(60), "the sender");
    let o = finish(rx, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    eprintln!("{err}");
    assert!(o.status.success(), "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), COUNT);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(*l, format!("message {i}"));
    }
}

#[test]
fn our_sender_to_a_zeromq_epgm_subscriber() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !libpgm_tools("our_sender_to_a_zeromq_epgm_subscriber") {
        return;
    }
    if !tool("zmq-sub").exists() {
        eprintln!("SKIPPED our_sender_to_a_zeromq_epgm_subscriber: libzmq3-dev is not installed; scripts/install-deps installs it");
        return;
    }
    let Some(lab) = Lab::up("q", 1) else { return };
    let dir = tempfile::tempdir().unwrap();
    const BYTES: usize = 2_000_000;
    let (input, want) = random_file(dir.path(), BYTES);
    let out = dir.path().join("zmq.bin");
    let rx = lab
        .cmd("r1")
        .arg(tool("zmq-sub"))
        .arg("epgm://10.77.0.11;239.192.0.1:5555")
        .arg(&out)
        // ZMQ_RATE 20 Mbit/s: libzmq sizes a SUB's receive window from it (ZMQ_RATE x
        // ZMQ_RECOVERY_IVL); at its default of 100 kbit/s the window is ~83 packets and
        // repairs at 20 Mbit/s arrive after it moved on (seen: 3 packets lost for good).
        .args([&BYTES.to_string(), "10", "20000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // Every 40th data packet dropped at the source: the subscriber's libpgm NAKs, we repair.
    let tx = lab
        .cmd("s")
        .arg(pgmcc())
        .args(["send", "--group", "239.192.0.1:5555", "--peer", "zeromq"])
        .args([
            "--rate-max",
            "20Mbit",
            "--drop-every",
            "40",
            "-q",
            "--linger",
            "3s",
        ])
        .arg(&input)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish_ok(tx, Duration::from_secs(60), "pgmcc send --peer zeromq");
    eprintln!("{}", String::from_utf8_lossy(&o.stderr));
    let o = finish(rx, Duration::from_secs(30));
    let said = String::from_utf8_lossy(&o.stdout);
    eprintln!("{said}{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "the subscriber stopped short: {said}");
    // Each packet was one message: the subscriber's messages, concatenated, are the file.
    assert_eq!(sha_of(&out), want);
    assert!(said.contains(&format!("received {BYTES} bytes")), "{said}");
}

#[test]
fn pgmcc_with_a_mixed_group_our_acker_and_a_libpgm_receiver() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !libpgm_tools("pgmcc_with_a_mixed_group_our_acker_and_a_libpgm_receiver") {
        return;
    }
    let Some(lab) = Lab::up("m", 2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (input, want) = random_file(dir.path(), LEN);
    let lib_out = dir.path().join("lib.bin");
    let ours_out = dir.path().join("ours.bin");
    let lib = lab
        .cmd("r1")
        .arg(tool("pgm-recv"))
        .args(["--network", "10.77.0.11;239.192.0.1", "--raw"])
        .args(["--bytes", &LEN.to_string(), "--timeout", "15", "--out"])
        .arg(&lib_out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ours = lab.recv_with("r2", &ours_out, &["--udp-ports", ONE_PORT]);
    std::thread::sleep(Duration::from_millis(500));
    // pgmcc on: our receiver is the only one that can ACK, so it becomes the acker and the
    // libpgm receiver follows the session (pgmcc paper §3.1).
    let stats_path = dir.path().join("send.json");
    let tx = lab.send_with(
        &input,
        &stats_path,
        &["--udp-ports", ONE_PORT, "--drop-every", "40"],
    );
    finish_ok(tx, Duration::from_secs(60), "the sender");
    finish_ok(lib, Duration::from_secs(60), "the libpgm receiver");
    finish_ok(ours, Duration::from_secs(60), "our receiver");
    assert_eq!(sha_of(&lib_out), want);
    assert_eq!(sha_of(&ours_out), want);
    let s = stats(&stats_path);
    assert_eq!(s["status"]["acker"].as_str(), Some("10.77.0.12"));
    let secs = s["sending_seconds"].as_f64().unwrap();
    eprintln!(
        "mixed group with pgmcc: 5 MB in {secs:.1} s, acker {}, cc {}",
        s["status"]["acker"], s["status"]["cc"]
    );
    assert!(secs < 10.0, "the session did not crawl");
}
