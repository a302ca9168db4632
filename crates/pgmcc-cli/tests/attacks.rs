//! Attacks on `pgmcc recv` with the real binaries, on loopback (multicast TTL 0: nothing leaves
//! the host), bounded in time. An attacker on another address listens to the group, learns the
//! session (TSI, sequence numbers, SPM sequence numbers) from the source's own packets, and
//! forges an end of session (an SPM with OPT_FIN at the current lead) and data past the lead.
//! When issue 21 was filed this made receivers commit a prefix of the file and exit 0.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pgm_wire::{Body, DataRepr, Options, Repr, SpmRepr};
use socket2::{Domain, Protocol, Socket, Type};

mod common;

const GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 77, 61);
const EVIL: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 66);

fn pgmcc() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pgmcc"))
}

/// The attacker's sockets: one that hears the group on `mcast_port` (shared with the real
/// receiver, reads time out after `poll`), one that sends from address `from` (TTL 0): its
/// own, or the source's to play an attacker who spoofs it.
fn attacker_sockets(
    mcast_port: u16,
    poll: Duration,
    from: Ipv4Addr,
) -> (std::net::UdpSocket, std::net::UdpSocket) {
    let listen = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
    listen.set_reuse_address(true).unwrap();
    listen
        .bind(&SocketAddrV4::new(GROUP, mcast_port).into())
        .unwrap();
    listen
        .join_multicast_v4(&GROUP, &Ipv4Addr::LOCALHOST)
        .unwrap();
    let listen: std::net::UdpSocket = listen.into();
    listen.set_read_timeout(Some(poll)).unwrap();
    let evil = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
    evil.bind(&SocketAddrV4::new(from, 0).into()).unwrap();
    evil.set_multicast_ttl_v4(0).unwrap();
    evil.set_multicast_loop_v4(true).unwrap();
    evil.set_multicast_if_v4(&Ipv4Addr::LOCALHOST).unwrap();
    (listen, evil.into())
}

/// What [`attacker`] forges besides the end of session at the current lead.
#[derive(Clone, Copy)]
struct Forge {
    /// A manifest on the forged end (another hash, name and kind than the source's).
    manifest: bool,
    /// Data beyond the lead.
    data: bool,
}

impl Forge {
    const ALL: Forge = Forge {
        manifest: true,
        data: true,
    };
}

/// Listens to the group and forges the session's end (and what `forge` says) from address
/// `from`, until `stop`; counts forgeries in `sent`.
fn attacker(
    mcast_port: u16,
    from: Ipv4Addr,
    forge: Forge,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU32>,
) {
    let (listen, evil) = attacker_sockets(mcast_port, Duration::from_millis(50), from);
    let to = SocketAddrV4::new(GROUP, mcast_port);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut buf = vec![0u8; 65536];
    let (mut tsi, mut lead, mut spm_sqn, mut odata) = (None, 0u32, 0u32, 0u32);
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        if let Ok((n, _)) = listen.recv_from(&mut buf) {
            if let Ok(r) = Repr::parse(&buf[..n]) {
                match r.body {
                    Body::Odata(d) => {
                        tsi = Some((r.tsi(), r.dport));
                        lead = lead.max(d.sqn);
                        odata += 1;
                    }
                    Body::Spm(s) => spm_sqn = spm_sqn.max(s.sqn),
                    _ => {}
                }
            }
        }
        // Once the transfer is under way, end it early, every few packets.
        let Some((t, dport)) = tsi.filter(|_| odata >= 100 && odata % 20 == 0) else {
            continue;
        };
        let fin = Repr::downstream(
            t,
            dport,
            Body::Spm(SpmRepr {
                sqn: spm_sqn + 1,
                trail: 0,
                lead,
                path_nla: IpAddr::V4(from),
            }),
        )
        .with_options(Options {
            fin: true,
            manifest: forge.manifest.then(|| pgm_wire::Manifest {
                size: Some(u64::from(lead) * 1400),
                sha256: Some([0xee; 32]),
                name: "evil".into(),
                tree: true,
                ..pgm_wire::Manifest::default()
            }),
            ..Options::default()
        })
        .to_vec()
        .unwrap();
        evil.send_to(&fin, to).unwrap();
        for sqn in (lead + 1..lead + 4).filter(|_| forge.data) {
            let p = Repr::downstream(t, dport, Body::Odata(DataRepr { sqn, trail: 0 }))
                .with_payload(b"FORGED")
                .to_vec()
                .unwrap();
            evil.send_to(&p, to).unwrap();
        }
        sent.fetch_add(4, Ordering::Relaxed);
        odata += 1;
    }
}

#[test]
fn a_spoofed_end_of_session_does_not_make_recv_commit_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.bin");
    let output = dir.path().join("out.bin");
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 + i / 509) as u8).collect();
    std::fs::write(&input, &data).unwrap();
    let (ucast, mcast) = (41610u16, 41611u16);
    let ports = format!("{ucast},{mcast}");
    let group = format!("{GROUP}:7500");

    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU32::new(0));
    let evil = {
        let (stop, sent) = (stop.clone(), sent.clone());
        std::thread::spawn(move || attacker(mcast, EVIL, Forge::ALL, stop, sent))
    };
    let recv = pgmcc()
        .args([
            "recv",
            "--group",
            &group,
            "--iface",
            "127.0.0.5",
            "--udp-ports",
            &ports,
        ])
        .args(["--idle-timeout", "10s", "-q", "--out"])
        .arg(&output)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let send = pgmcc()
        .args([
            "send",
            "--group",
            &group,
            "--iface",
            "127.0.0.1",
            "--udp-ports",
            &ports,
        ])
        .args([
            "--ttl",
            "0",
            "--rate-max",
            "24Mbit",
            "--linger",
            "500ms",
            "-q",
        ])
        .arg(&input)
        .output()
        .unwrap();
    let recv = recv.wait_with_output().unwrap();
    stop.store(true, Ordering::Relaxed);
    evil.join().unwrap();
    let err = String::from_utf8_lossy(&recv.stderr);
    assert!(
        send.status.success(),
        "{}",
        String::from_utf8_lossy(&send.stderr)
    );
    assert!(
        sent.load(Ordering::Relaxed) > 20,
        "the attacker forged only {} packets",
        sent.load(Ordering::Relaxed)
    );
    assert_eq!(recv.status.code(), Some(0), "{err}");
    assert!(
        std::fs::read(&output).unwrap() == data,
        "the output is not the input"
    );
    assert!(
        err.contains("not from the address each session started from"),
        "{err}"
    );
}

/// In keyed mode the attacker sees only envelopes: it reads the TSI from their clear header
/// and forges the session's start, data and end in plain PGM, from its own address and (in
/// the receiver's eyes, the worst case) without any key. Nothing of it is committed.
#[test]
fn a_keyed_transfer_is_untouched_by_forged_packets() {
    let dir = tempfile::tempdir().unwrap();
    let key = common::group_key(dir.path());
    let with_key = [std::ffi::OsStr::new("--key"), key.as_os_str()];
    let r = attacked_transfer(
        dir.path(),
        (41620, 41621),
        "127.0.0.6",
        &with_key,
        &with_key,
        keyed_attacker,
    );
    assert!(r.send_ok, "{}", r.send_stderr);
    assert_eq!(r.recv_code, Some(0), "{}", r.stderr);
    assert!(r.intact, "the output is not the input");
    let refused = r.stats["status"]["keyed"]["not_sealed"].as_u64().unwrap();
    assert!(refused > 20, "forgeries refused at the envelope: {refused}");
    assert_eq!(r.stats["status"]["stats"]["malformed"].as_u64(), Some(0));
}

/// Learns the TSI from sealed packets' clear headers and forges plain PGM for it.
fn keyed_attacker(mcast_port: u16, stop: Arc<AtomicBool>, sent: Arc<AtomicU32>) {
    let (listen, evil) = attacker_sockets(mcast_port, Duration::from_millis(20), EVIL);
    let to = SocketAddrV4::new(GROUP, mcast_port);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut buf = vec![0u8; 65536];
    let mut tsi = None;
    let mut round = 0u32;
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        if let Ok((n, _)) = listen.recv_from(&mut buf) {
            if n > 18 && buf.starts_with(b"PGMK") {
                let mut gsi = [0u8; 6];
                gsi.copy_from_slice(&buf[10..16]);
                tsi = Some(pgm_wire::Tsi {
                    gsi: pgm_wire::Gsi(gsi),
                    sport: u16::from_be_bytes([buf[16], buf[17]]),
                });
            }
        }
        let Some(t) = tsi else {
            continue;
        };
        round += 1;
        let base = (round * 16) % 2000;
        for sqn in base..base + 16 {
            let p = Repr::downstream(t, 7500, Body::Odata(DataRepr { sqn, trail: 0 }))
                .with_options(Options {
                    syn: sqn == 0,
                    ..Options::default()
                })
                .with_payload(b"FORGED")
                .to_vec()
                .unwrap();
            evil.send_to(&p, to).unwrap();
        }
        let fin = Repr::downstream(
            t,
            7500,
            Body::Spm(SpmRepr {
                sqn: round,
                trail: 0,
                lead: base,
                path_nla: IpAddr::V4(EVIL),
            }),
        )
        .with_options(Options {
            fin: true,
            ..Options::default()
        })
        .to_vec()
        .unwrap();
        evil.send_to(&fin, to).unwrap();
        sent.fetch_add(17, Ordering::Relaxed);
    }
}

/// What a transfer under attack ended with.
struct Attacked {
    send_ok: bool,
    send_stderr: String,
    recv_code: Option<i32>,
    intact: bool,
    stderr: String,
    stats: serde_json::Value,
}

/// A 3 MB transfer on loopback (multicast TTL 0, files in `dir`) from 127.0.0.1 to a
/// receiver on `iface`, each given its extra flags, while `attack` runs (it gets the
/// multicast port, a stop flag and a counter of its forgeries; it must forge more than 20).
fn attacked_transfer(
    dir: &std::path::Path,
    ports: (u16, u16),
    iface: &str,
    send_extra: &[&std::ffi::OsStr],
    recv_extra: &[&std::ffi::OsStr],
    attack: impl FnOnce(u16, Arc<AtomicBool>, Arc<AtomicU32>) + Send + 'static,
) -> Attacked {
    let input = dir.join("in.bin");
    let output = dir.join("out.bin");
    let stats = dir.join("stats.json");
    let data: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i * 11 + i / 211) as u8)
        .collect();
    std::fs::write(&input, &data).unwrap();
    let (ucast, mcast) = ports;
    let ports = format!("{ucast},{mcast}");
    let group = format!("{GROUP}:7500");
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU32::new(0));
    let evil = {
        let (stop, sent) = (stop.clone(), sent.clone());
        std::thread::spawn(move || attack(mcast, stop, sent))
    };
    let recv = pgmcc()
        .args(["recv", "--group", &group, "--iface", iface])
        .args(["--udp-ports", &ports, "--idle-timeout", "10s", "-q"])
        .arg("--stats")
        .arg(&stats)
        .arg("--out")
        .arg(&output)
        .args(recv_extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let send = pgmcc()
        .args(["send", "--group", &group, "--iface", "127.0.0.1"])
        .args(["--udp-ports", &ports, "--ttl", "0", "--rate-max", "24Mbit"])
        .args(["--linger", "500ms", "-q"])
        .args(send_extra)
        .arg(&input)
        .output()
        .unwrap();
    let recv = recv.wait_with_output().unwrap();
    stop.store(true, Ordering::Relaxed);
    evil.join().unwrap();
    // At least one round of forgeries (an end of session and 3 packets beyond the lead):
    // the attack ran. How many more depends on timing: a receiver fooled by the first
    // round quits, and the source's data, which paces the attacker, then slows to a
    // trickle (runs have seen 4 and 5 rounds).
    assert!(
        sent.load(Ordering::Relaxed) >= 4,
        "the attacker forged only {} packets",
        sent.load(Ordering::Relaxed)
    );
    Attacked {
        send_ok: send.status.success(),
        send_stderr: String::from_utf8_lossy(&send.stderr).into_owned(),
        recv_code: recv.status.code(),
        intact: std::fs::read(&output).is_ok_and(|o| o == data),
        stderr: String::from_utf8_lossy(&recv.stderr).into_owned(),
        stats: serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap(),
    }
}

/// [`attacked_transfer`] with an attacker spoofing the source's own address (it sends from
/// 127.0.0.1, the source's interface, so source binding cannot tell it apart) that forges
/// data beyond the lead and an end of session; signed with a fresh key pair when `signed`.
fn spoofed_transfer(signed: bool, ports: (u16, u16), iface: &str) -> Attacked {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = if signed {
        common::signing_key(dir.path())
    } else {
        (PathBuf::new(), PathBuf::new())
    };
    let os = std::ffi::OsStr::new;
    // A receiver fooled into ending early leaves the source without feedback.
    let mut send_extra = vec![os("--feedback-timeout"), os("5s")];
    let mut recv_extra = Vec::new();
    if signed {
        send_extra.extend([os("--sign"), key.as_os_str()]);
        recv_extra.extend([os("--trust"), public.as_os_str()]);
    }
    let r = attacked_transfer(
        dir.path(),
        ports,
        iface,
        &send_extra,
        &recv_extra,
        |port, stop, sent| attacker(port, Ipv4Addr::LOCALHOST, Forge::ALL, stop, sent),
    );
    assert!(r.send_ok || !signed, "{}", r.send_stderr);
    r
}

/// Signed mode against the strongest attacker on the segment: the receiver trusting the
/// source's public key commits exactly the source's bytes and exits 0.
#[test]
fn a_signed_transfer_is_untouched_by_forgeries_from_the_sources_own_address() {
    let r = spoofed_transfer(true, (41630, 41631), "127.0.0.7");
    assert_eq!(r.recv_code, Some(0), "{}", r.stderr);
    assert!(r.intact, "the output is not the input");
    let signed = &r.stats["status"]["stats"]["signed"];
    let caught = signed["forged"].as_u64().unwrap() + signed["reasked"].as_u64().unwrap();
    assert!(caught > 20, "forgeries caught: {signed}");
    assert_eq!(r.stats["status"]["stats"]["wrong_source"].as_u64(), Some(0));
    assert!(
        r.stderr.contains("forging this session's data"),
        "{}",
        r.stderr
    );
    // The forged SPM manifests (another hash, a tree) were not believed: the signed end's was.
    assert!(
        r.stderr
            .contains("sha256 matches the source's signed manifest"),
        "{}",
        r.stderr
    );
}

/// The control: the same attack on an unsigned transfer gets through plain mode's source
/// binding (docs/security.md says so) and the receiver does not deliver the source's file.
#[test]
fn the_same_spoofing_attack_defeats_an_unsigned_transfer() {
    let r = spoofed_transfer(false, (41640, 41641), "127.0.0.8");
    eprintln!("unsigned receiver: exit {:?}: {}", r.recv_code, r.stderr);
    assert!(!r.intact, "the attack did nothing: {}", r.stderr);
    assert_eq!(r.stats["status"]["stats"]["wrong_source"].as_u64(), Some(0));
}

/// An end of session forged from the source's own address at the current lead, with no
/// manifest (so the one the source announced, 3,000,000 bytes, stands): the receiver, bound
/// to the source's address, must not commit the prefix it holds as the whole file.
#[test]
fn a_spoofed_end_at_the_lead_does_not_make_a_prefix_complete() {
    let dir = tempfile::tempdir().unwrap();
    let os = std::ffi::OsStr::new;
    let forge = Forge {
        manifest: false,
        data: false,
    };
    let r = attacked_transfer(
        dir.path(),
        (41650, 41651),
        "127.0.0.9",
        &[os("--feedback-timeout"), os("5s")],
        &[os("--source"), os("127.0.0.1")],
        move |port, stop, sent| attacker(port, Ipv4Addr::LOCALHOST, forge, stop, sent),
    );
    eprintln!("receiver: exit {:?}: {}", r.recv_code, r.stderr);
    assert!(
        r.intact || r.recv_code != Some(0),
        "a prefix was committed as complete"
    );
    if !r.intact {
        assert!(
            r.stderr.contains("bytes its source announced"),
            "{}",
            r.stderr
        );
        assert_eq!(r.stats["outcome"].as_str(), Some("incomplete"));
    }
}

/// A stranger on the group asks for another pass ("awaiting a pass" reports from its own
/// address) although the only receiver confirmed the first: the second pass goes out, nobody
/// takes part in it, and the sender's verdict stands on the first pass's reports (it used to
/// give up and exit 1).
#[test]
fn a_strangers_request_for_another_pass_does_not_fail_a_confirmed_transfer() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.bin");
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i * 13 + i / 97) as u8).collect();
    std::fs::write(&input, &data).unwrap();
    let (ucast, mcast) = (41660u16, 41661u16);
    let ports = format!("{ucast},{mcast}");
    let group = format!("{GROUP}:7500");
    let stop = Arc::new(AtomicBool::new(false));
    let asked = Arc::new(AtomicU32::new(0));
    let evil = {
        let (stop, asked) = (stop.clone(), asked.clone());
        std::thread::spawn(move || {
            let (listen, evil) = attacker_sockets(mcast, Duration::from_millis(50), EVIL);
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut buf = vec![0u8; 65536];
            let mut session = None;
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                let Ok((n, _)) = listen.recv_from(&mut buf) else {
                    continue;
                };
                let Ok(r) = Repr::parse(&buf[..n]) else {
                    continue;
                };
                if let Body::Odata(_) = r.body {
                    session.get_or_insert((r.tsi(), r.dport));
                }
                // The first pass announces its end: ask for another, three times.
                let (Body::Spm(_), true, Some((tsi, dport))) = (&r.body, r.options.fin, session)
                else {
                    continue;
                };
                if asked.load(Ordering::Relaxed) >= 3 || tsi != r.tsi() {
                    continue;
                }
                let polr = Repr::upstream(
                    tsi,
                    dport,
                    Body::Polr(pgm_wire::PolrRepr { sqn: 0, round: 0 }),
                )
                .with_options(Options {
                    outcome: Some(pgm_wire::Outcome {
                        status: pgm_wire::OUTCOME_AWAITING_PASS,
                        bytes: 1,
                        sha256: [0; 32],
                        reason: "holds bytes 0-0 of 1000000; waiting for the next pass".into(),
                        reporter: Some(IpAddr::V4(EVIL)),
                    }),
                    ..Options::default()
                })
                .to_vec()
                .unwrap();
                evil.send_to(&polr, SocketAddrV4::new(Ipv4Addr::LOCALHOST, ucast))
                    .unwrap();
                asked.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let recv = pgmcc()
        .args(["recv", "--group", &group, "--iface", "127.0.0.12"])
        .args([
            "--udp-ports",
            &ports,
            "--idle-timeout",
            "10s",
            "-q",
            "--out",
        ])
        .arg(dir.path().join("out.bin"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let send = pgmcc()
        .args(["send", "--group", &group, "--iface", "127.0.0.1"])
        .args(["--udp-ports", &ports, "--ttl", "0", "--rate-max", "24Mbit"])
        .args(["--linger", "500ms", "-q", "--passes", "2", "--expect", "1"])
        .args(["--feedback-timeout", "3s"])
        .arg(&input)
        .output()
        .unwrap();
    let recv = recv.wait_with_output().unwrap();
    stop.store(true, Ordering::Relaxed);
    evil.join().unwrap();
    let err = String::from_utf8_lossy(&send.stderr);
    assert!(
        recv.status.success(),
        "{}",
        String::from_utf8_lossy(&recv.stderr)
    );
    assert!(
        asked.load(Ordering::Relaxed) > 0,
        "the stranger never asked"
    );
    assert!(err.contains("pass 2 follows"), "{err}");
    assert!(err.contains("stands on the earlier passes"), "{err}");
    assert_eq!(send.status.code(), Some(0), "{err}");
}
