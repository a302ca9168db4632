//! Keyed mode over real sockets on loopback (multicast TTL 0, loop on: nothing leaves the
//! host). An attacker who knows the session's TSI (it is in every packet) forges a session
//! start, data for every early sequence number, an end of session (SPM with OPT_FIN), NCFs and
//! repairs, all with valid checksums, and claims huge loss in spoofed ACKs and NAKs to the
//! source. It also seals datagrams under a key of its own, and replays sealed datagrams of an
//! unrelated session sealed with the group's key.
//!
//! The same attack runs against an unkeyed session first: there it changes what the receiver
//! delivers (the control that proves the attack has teeth). Keyed, the receiver delivers the
//! source's bytes exactly, the session ends only when the source ends it, and nothing the
//! attacker sent reaches either core.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pgm_wire::{AckRepr, Body, DataRepr, Gsi, NakRepr, Options, PgmccFeedback, Repr, SpmRepr, Tsi};
use pgmcc_net::keyed::{Direction, Sealer};
use pgmcc_net::{
    Encapsulation, Event, Interface, Key, Receiver, ReceiverOptions, ReceiverStatus, Sender,
    SenderOptions, SenderStatus,
};
use sha2::{Digest, Sha256};
use socket2::{Domain, Protocol, Socket, Type};

const GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 77, 41);
const EVIL: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 67);
const RECEIVER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);
const TSI: Tsi = Tsi {
    gsi: Gsi([9, 8, 7, 6, 5, 4]),
    sport: 4711,
};

fn encapsulation(base: u16) -> Encapsulation {
    Encapsulation::Udp {
        ucast_port: base,
        mcast_port: base + 1,
    }
}

fn hostile_socket() -> std::net::UdpSocket {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
    s.bind(&SocketAddrV4::new(EVIL, 0).into()).unwrap();
    s.set_multicast_ttl_v4(0).unwrap();
    s.set_multicast_loop_v4(true).unwrap();
    s.set_multicast_if_v4(&Ipv4Addr::LOCALHOST).unwrap();
    s.into()
}

const FORGED: &[u8] = b"FORGED BY AN ATTACKER ON THE SEGMENT";

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The forged downstream packets of one round: data for `sqns` (the first with OPT_SYN), an
/// SPM ending the session at `sqns.end`, an NCF and a repair.
fn forged_down(sqns: std::ops::Range<u32>, spm_sqn: u32) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for sqn in sqns.clone() {
        let o = Options {
            syn: sqn == 0,
            ..Options::default()
        };
        v.push(
            Repr::downstream(TSI, 7500, Body::Odata(DataRepr { sqn, trail: 0 }))
                .with_options(o)
                .with_payload(FORGED)
                .to_vec()
                .unwrap(),
        );
    }
    let fin = Options {
        fin: true,
        ..Options::default()
    };
    v.push(
        Repr::downstream(
            TSI,
            7500,
            Body::Spm(SpmRepr {
                sqn: spm_sqn,
                trail: 0,
                lead: sqns.end,
                path_nla: IpAddr::V4(EVIL),
            }),
        )
        .with_options(fin)
        .to_vec()
        .unwrap(),
    );
    let nla = IpAddr::V4(Ipv4Addr::LOCALHOST);
    v.push(
        Repr::downstream(
            TSI,
            7500,
            Body::Ncf(NakRepr {
                sqn: sqns.start + 1,
                source: nla,
                group: IpAddr::V4(GROUP),
            }),
        )
        .to_vec()
        .unwrap(),
    );
    v.push(
        Repr::downstream(
            TSI,
            7500,
            Body::Rdata(DataRepr {
                sqn: sqns.start + 2,
                trail: 0,
            }),
        )
        .with_payload(FORGED)
        .to_vec()
        .unwrap(),
    );
    v
}

/// Forged upstream packets: an ACK with a huge loss report naming the attacker, and a NAK.
fn forged_up(round: u32) -> Vec<Vec<u8>> {
    let fb = PgmccFeedback {
        tstamp: 0,
        loss_rate: u16::MAX,
        rx: IpAddr::V4(EVIL),
    };
    let ack = Repr::upstream(
        TSI,
        7500,
        Body::Ack(AckRepr {
            rx_max: round,
            bitmap: !0,
        }),
    )
    .with_options(Options {
        pgmcc_feedback: Some(fb),
        ..Options::default()
    })
    .to_vec()
    .unwrap();
    let nak = Repr::upstream(
        TSI,
        7500,
        Body::Nak(NakRepr {
            sqn: round % 64,
            source: IpAddr::V4(Ipv4Addr::LOCALHOST),
            group: IpAddr::V4(GROUP),
        }),
    )
    .with_options(Options {
        pgmcc_feedback: Some(fb),
        ..Options::default()
    })
    .to_vec()
    .unwrap();
    vec![ack, nak]
}

struct Outcome {
    got: Vec<u8>,
    ended: bool,
    sent: Vec<u8>,
    rx: ReceiverStatus,
    /// `None` if the source had not finished in time.
    tx: Option<SenderStatus>,
    rounds: u32,
}

async fn attacked_transfer(base: u16, key: Option<Key>) -> Outcome {
    let group_key = key.clone();
    let group_key_set = key.is_some();
    let mut o = ReceiverOptions::new(GROUP, 7500);
    o.interface = Some(Interface::Addr(RECEIVER));
    o.encapsulation = encapsulation(base);
    o.key = key.clone();
    let mut rx = Receiver::bind(o).await.unwrap();

    // The attacker starts first: a forged session start before the real source's.
    let stop = Arc::new(AtomicBool::new(false));
    let evil = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let s = hostile_socket();
            let down = SocketAddrV4::new(GROUP, base + 1);
            let up = SocketAddrV4::new(Ipv4Addr::LOCALHOST, base);
            // Sealed under the attacker's own key, and (had it stolen a recording) under the
            // group key for an unrelated session, replayed.
            let mut own = Sealer::new(Key::from_bytes([0x66; 32]), Direction::Down).unwrap();
            let mut sealed = Vec::new();
            let mut round = 0u32;
            while !stop.load(Ordering::Relaxed) && round < 2000 {
                let start = (round * 8) % 256;
                for p in forged_down(start..start + 8, 1000 + round) {
                    s.send_to(&p, down).unwrap();
                    own.seal(unix_ms(), &p, &mut sealed).unwrap();
                    s.send_to(&sealed, down).unwrap();
                }
                if let Some(k) = &group_key {
                    // Authentic for another session, relabelled as ours: fails authentication.
                    let mut replay = Sealer::new(k.clone(), Direction::Down).unwrap();
                    let other = Tsi {
                        gsi: Gsi([1; 6]),
                        sport: 1,
                    };
                    let p =
                        Repr::downstream(other, 7500, Body::Odata(DataRepr { sqn: 0, trail: 0 }))
                            .with_payload(FORGED)
                            .to_vec()
                            .unwrap();
                    replay.seal(unix_ms(), &p, &mut sealed).unwrap();
                    sealed[10..16].copy_from_slice(&TSI.gsi.0);
                    sealed[16..18].copy_from_slice(&TSI.sport.to_be_bytes());
                    s.send_to(&sealed, down).unwrap();
                }
                for p in forged_up(round) {
                    s.send_to(&p, up).unwrap();
                }
                round += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            round
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;

    let mut o = SenderOptions::new(GROUP, 7500);
    o.interface = Some(Interface::Addr(Ipv4Addr::LOCALHOST));
    o.encapsulation = encapsulation(base);
    o.ttl = 0;
    o.rate_limit = Some(2_000_000);
    o.end.linger = Duration::from_millis(500);
    // Unkeyed, the attacker's NAKs get repairs and so keep the source lingering.
    o.end.max_linger = Duration::from_secs(3);
    o.gsi = Some(TSI.gsi);
    o.sport = Some(TSI.sport);
    o.key = key;
    let mut tx = Sender::bind(o).await.unwrap();

    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        let mut ended = false;
        while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_secs(10), rx.read()).await {
            match ev {
                Event::Data { tsi, data, .. } if tsi == TSI => got.extend_from_slice(&data),
                Event::SessionEnded { tsi, .. } if tsi == TSI => {
                    ended = true;
                    break;
                }
                Event::Unrecoverable { tsi, .. } if tsi == TSI => break,
                _ => {}
            }
        }
        (got, ended, rx.close().await)
    });
    let sent: Vec<u8> = (0..300_000)
        .map(|i: usize| (i * 7 + i / 311) as u8)
        .collect();
    for chunk in sent.chunks(tx.max_tsdu()) {
        tx.write(chunk).await.unwrap();
    }
    // Unkeyed, the attacker's ACKs and NAKs hold the source back: give it less time.
    let patience = Duration::from_secs(if group_key_set { 30 } else { 5 });
    let tx_status = tokio::time::timeout(patience, tx.close())
        .await
        .ok()
        .map(|r| r.unwrap());
    let (got, ended, rx_status) = reader.await.unwrap();
    stop.store(true, Ordering::Relaxed);
    let rounds = evil.join().unwrap();
    Outcome {
        got,
        ended,
        sent,
        rx: rx_status,
        tx: tx_status,
        rounds,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attack_changes_what_an_unkeyed_receiver_delivers() {
    let o = attacked_transfer(41410, None).await;
    assert!(o.rounds > 5, "the attacker ran: {} rounds", o.rounds);
    let forged = o.got.windows(FORGED.len()).any(|w| w == FORGED);
    assert!(
        forged || !o.ended || o.got != o.sent,
        "the attack did nothing to plain PGM, so the keyed test below would prove nothing"
    );
    assert!(o.rx.keyed.is_none());
    eprintln!(
        "unkeyed: forged bytes delivered {forged}, ended {}, {} of {} bytes, source finished {}",
        o.ended,
        o.got.len(),
        o.sent.len(),
        o.tx.is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_sessions_deliver_only_the_sources_bytes_under_attack() {
    let key = Key::generate().unwrap();
    let o = attacked_transfer(41420, Some(key)).await;
    assert!(o.rounds > 5, "the attacker ran: {} rounds", o.rounds);
    assert!(o.ended, "the session ended (the source's own OPT_FIN)");
    assert_eq!(
        Sha256::digest(&o.got),
        Sha256::digest(&o.sent),
        "byte-identical"
    );

    // Every kind of forgery was heard, refused and counted before the core.
    let k = o.rx.keyed.clone().unwrap();
    assert!(k.opened > 0, "{k:?}");
    assert!(k.not_sealed > 100, "unsealed forgeries: {k:?}");
    assert!(k.other_key > 100, "sealed under the attacker's key: {k:?}");
    assert!(k.forged > 10, "relabelled replays: {k:?}");
    assert_eq!(
        o.rx.stats.malformed, 0,
        "nothing unauthenticated reached the receiver's core"
    );
    assert_eq!(o.rx.stats.unrecoverable_sqns, 0);

    let tx = o.tx.expect("the source finished");
    let k = tx.keyed.clone().unwrap();
    assert!(k.not_sealed > 100, "spoofed ACKs and NAKs: {k:?}");
    assert_eq!(
        tx.stats.malformed, 0,
        "nothing unauthenticated reached the source's core"
    );
    let cc = tx.cc.clone().unwrap();
    assert_eq!(
        cc.acks_ignored, 0,
        "no spoofed ACK reached the controller: {cc:?}"
    );
    assert_eq!(
        tx.acker,
        Some(IpAddr::V4(RECEIVER)),
        "the attacker never became acker"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_mismatch_delivers_nothing_and_says_which_side_is_sealed() {
    // A keyed receiver and a plain source, then a plain receiver and a keyed source.
    for (rx_key, tx_key, base) in [
        (Some(Key::generate().unwrap()), None, 41430),
        (None, Some(Key::generate().unwrap()), 41440),
    ] {
        let mut o = ReceiverOptions::new(GROUP, 7500);
        o.interface = Some(Interface::Addr(RECEIVER));
        o.encapsulation = encapsulation(base);
        o.key = rx_key.clone();
        let mut rx = Receiver::bind(o).await.unwrap();
        let mut o = SenderOptions::new(GROUP, 7500);
        o.interface = Some(Interface::Addr(Ipv4Addr::LOCALHOST));
        o.encapsulation = encapsulation(base);
        o.ttl = 0;
        o.rate_limit = Some(1_000_000);
        o.end.linger = Duration::from_millis(200);
        o.end.max_linger = Duration::from_millis(500);
        o.key = tx_key;
        let mut tx = Sender::bind(o).await.unwrap();
        tx.write(b"secret").await.unwrap();
        let _ = tx.close().await.unwrap();
        let mut delivered = 0;
        while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_millis(300), rx.read()).await {
            if matches!(ev, Event::Data { .. } | Event::SessionStarted { .. }) {
                delivered += 1;
            }
        }
        let st = rx.close().await;
        assert_eq!(delivered, 0, "a session across a key mismatch");
        match rx_key {
            Some(_) => assert!(st.keyed.unwrap().not_sealed > 0),
            None => assert!(st.sealed_without_key > 0, "{st:?}"),
        }
    }
}
