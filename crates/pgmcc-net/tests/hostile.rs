//! Hostile traffic over real sockets on loopback (multicast TTL 0, loop on: nothing leaves the
//! host). While a pgmcc transfer runs, a hostile socket multicasts garbage, corrupt copies and a
//! foreign session to the receivers, and sends the source spoofed ACKs and NAKs for data
//! never sent. The transfer must still arrive byte-identical and the hostile packets counted.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pgm_wire::{AckRepr, Body, DataRepr, Gsi, NakRepr, Options, PgmccFeedback, Repr, Tsi};
use pgmcc_net::{
    Encapsulation, Event, Interface, Receiver, ReceiverOptions, Sender, SenderOptions,
};
use sha2::{Digest, Sha256};
use socket2::{Domain, Protocol, Socket, Type};

const GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 77, 31);
const BASE: u16 = 41310;
const EVIL: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 66);
const ACKER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

fn encapsulation() -> Encapsulation {
    Encapsulation::Udp {
        ucast_port: BASE,
        mcast_port: BASE + 1,
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

/// Hostile datagrams: (to the group, to the source).
fn hostile_packets(session: Tsi, round: u32) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let foreign = Tsi {
        gsi: Gsi([6, 6, 6, 6, 6, 6]),
        sport: 666,
    };
    let odata = |t: Tsi, sqn: u32| {
        Repr::downstream(t, 7500, Body::Odata(DataRepr { sqn, trail: sqn }))
            .with_payload(b"not from the source")
            .to_vec()
            .unwrap()
    };
    let mut corrupt = odata(session, round);
    corrupt[6] ^= 0x5a; // checksum
    let garbage: Vec<u8> = (0..64).map(|i| (i * 37 + round) as u8).collect();
    let down = vec![garbage.clone(), corrupt, odata(foreign, round)];
    let fb = PgmccFeedback {
        tstamp: 0,
        loss_rate: u16::MAX,
        rx: IpAddr::V4(ACKER),
    };
    let spoofed_ack = Repr::upstream(
        session,
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
    let far_nak = Repr::upstream(
        session,
        7500,
        Body::Nak(NakRepr {
            sqn: 0x8000_0000 + round,
            source: IpAddr::V4(Ipv4Addr::LOCALHOST),
            group: IpAddr::V4(GROUP),
        }),
    )
    .to_vec()
    .unwrap();
    (down, vec![garbage, spoofed_ack, far_nak])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_survives_hostile_traffic_on_loopback() {
    let mut o = ReceiverOptions::new(GROUP, 7500);
    o.interface = Some(Interface::Addr(ACKER));
    o.encapsulation = encapsulation();
    let mut rx = Receiver::bind(o).await.unwrap();

    let mut o = SenderOptions::new(GROUP, 7500);
    o.interface = Some(Interface::Addr(Ipv4Addr::LOCALHOST));
    o.encapsulation = encapsulation();
    o.ttl = 0;
    o.rate_limit = Some(2_000_000);
    o.end.linger = Duration::from_millis(500);
    let mut tx = Sender::bind(o).await.unwrap();
    let session = tx.tsi();

    // The hostile peer, on its own thread, until the transfer is over.
    let stop = Arc::new(AtomicBool::new(false));
    let evil = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let s = hostile_socket();
            let mut round = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let (down, up) = hostile_packets(session, round);
                for p in &down {
                    s.send_to(p, SocketAddrV4::new(GROUP, BASE + 1)).unwrap();
                }
                for p in &up {
                    s.send_to(p, SocketAddrV4::new(Ipv4Addr::LOCALHOST, BASE))
                        .unwrap();
                }
                round += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            round
        })
    };

    let data: Vec<u8> = (0..1 << 20)
        .map(|i: usize| (i * 13 + i / 509) as u8)
        .collect();
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        let mut foreign = 0;
        let mut ended = false;
        while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_secs(20), rx.read()).await {
            match ev {
                Event::Data { tsi, data, .. } if tsi == session => got.extend_from_slice(&data),
                Event::Unrecoverable { tsi, first, last } if tsi == session => {
                    panic!("lost {first}..={last}")
                }
                Event::SessionEnded { tsi, .. } if tsi == session => {
                    ended = true;
                    break;
                }
                _ => foreign += 1,
            }
        }
        (got, foreign, ended, rx.close().await)
    });
    for chunk in data.chunks(tx.max_tsdu()) {
        tx.write(chunk).await.unwrap();
    }
    // Close with the hostile peer still NAKing: its NAKs lead to no repair, so they must not
    // hold the source open (only repairs restart the linger, and max_linger bounds it).
    let status = tokio::time::timeout(Duration::from_secs(30), tx.close())
        .await
        .expect("close() returned despite the hostile NAKs")
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let rounds = evil.join().unwrap();
    let (got, foreign, ended, rstatus) = reader.await.unwrap();
    assert!(ended, "the receiver saw the session end (OPT_FIN)");

    assert_eq!(
        Sha256::digest(&got),
        Sha256::digest(&data),
        "byte-identical"
    );
    assert!(rounds > 5, "the hostile peer ran: {rounds} rounds");
    assert!(foreign > 0, "the foreign session is a session of its own");
    assert!(rstatus.stats.malformed > 0, "{:?}", rstatus.stats);
    let cc = status.cc.unwrap();
    assert!(cc.acks_ignored > 0, "spoofed ACKs ignored: {cc:?}");
    assert!(status.stats.malformed > 0, "{:?}", status.stats);
    assert!(status.stats.naks_outside_window > 0, "{:?}", status.stats);
    assert_eq!(status.acker, Some(IpAddr::V4(ACKER)));
}
