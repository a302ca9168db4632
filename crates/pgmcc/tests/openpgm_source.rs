//! What a receiver does for an OpenPGM 5.3 source that ours never asks of it.
//!
//! - The acker ACKs a repair that names it (OPT_PGMCC_DATA on RDATA), as OpenPGM's receiver
//!   does: an OpenPGM source takes every newly acknowledged bit as a returned token, so the
//!   tokens its repairs took come back only through ACKs of the repairs. Repairs without
//!   the option (ours), naming another receiver, or already held elicit nothing.
//! - With `openpgm_rdata_checksum`, an RDATA whose checksum leaves the payload out (OpenPGM's
//!   first repair of a held-back packet) is taken and counted; without it, it is malformed.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::net::{IpAddr, Ipv4Addr};

use common::*;
use pgm_wire::*;
use pgmcc::{Receiver, ReceiverConfig};

const OTHER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 1, 2));

fn data_naming(rdata: bool, sqn: u32, acker: Option<IpAddr>) -> Vec<u8> {
    let d = DataRepr { sqn, trail: 1 };
    let body = if rdata {
        Body::Rdata(d)
    } else {
        Body::Odata(d)
    };
    Repr::downstream(TSI, 7500, body)
        .with_options(Options {
            pgmcc_data: acker.map(|acker| PgmccData {
                tstamp: 1000 + sqn,
                acker,
            }),
            ..Options::default()
        })
        .with_payload(b"x")
        .to_vec()
        .unwrap()
}

/// (RX_MAX, bitmap, echoed timestamp) of every ACK sent now.
fn acks(r: &mut Receiver, now: u64) -> Vec<(u32, u32, u32)> {
    let mut buf = vec![0u8; 9000];
    let mut out = Vec::new();
    while let Some(t) = r.poll_transmit(ms(now), &mut buf) {
        let p = Repr::parse(&buf[..t.len]).unwrap();
        if let Body::Ack(a) = p.body {
            let fb = p.options.pgmcc_feedback.unwrap();
            out.push((a.rx_max, a.bitmap, fb.tstamp));
        }
    }
    out
}

/// A receiver, the named acker, holding ODATA 1..=6 but 3.
fn acker_missing_3() -> Receiver {
    let mut r = Receiver::new(ReceiverConfig::new(RX, GROUP, 7), ms(0));
    r.handle(ms(0), SRC, &spm(0, 1, 0, false));
    for s in [1, 2, 4, 5, 6] {
        r.handle(ms(1), SRC, &data_naming(false, s, Some(RX)));
    }
    let got = acks(&mut r, 1);
    assert_eq!(got.last().map(|a| (a.0, a.1)), Some((6, 0b110111)));
    r
}

#[test]
fn a_repair_naming_the_acker_is_acked_with_the_hole_filled() {
    let mut r = acker_missing_3();
    r.handle(ms(5), SRC, &data_naming(true, 3, Some(RX)));
    // RX_MAX stays the lead; the bitmap (bit k: RX_MAX - k) gains 3; the echo is the
    // repair's stamp.
    assert_eq!(acks(&mut r, 5), vec![(6, 0b111111, 1003)]);
    assert_eq!(r.stats().cc.repair_acks, 1);
    // The same repair again fills nothing: no ACK (OpenPGM's receiver drops duplicates
    // before its ACK too).
    r.handle(ms(6), SRC, &data_naming(true, 3, Some(RX)));
    assert_eq!(acks(&mut r, 6), vec![]);
    assert_eq!(r.stats().cc.repair_acks, 1);
}

#[test]
fn repairs_without_the_option_or_naming_another_receiver_are_not_acked() {
    // Our source's repairs carry no OPT_PGMCC_DATA.
    let mut r = acker_missing_3();
    r.handle(ms(5), SRC, &data_naming(true, 3, None));
    assert_eq!(acks(&mut r, 5), vec![]);
    // A repair naming someone else.
    let mut r = acker_missing_3();
    r.handle(ms(5), SRC, &data_naming(true, 3, Some(OTHER)));
    assert_eq!(acks(&mut r, 5), vec![]);
    assert_eq!(r.stats().cc.repair_acks, 0);
}

#[test]
fn a_receiver_without_congestion_control_acks_no_repair() {
    let mut cfg = ReceiverConfig::new(RX, GROUP, 7);
    cfg.pgmcc = false;
    let mut r = Receiver::new(cfg, ms(0));
    r.handle(ms(0), SRC, &spm(0, 1, 0, false));
    for s in [1, 2, 4] {
        r.handle(ms(1), SRC, &data_naming(false, s, Some(RX)));
    }
    r.handle(ms(5), SRC, &data_naming(true, 3, Some(RX)));
    assert_eq!(acks(&mut r, 5), vec![]);
}

/// RDATA 3 as OpenPGM's source sends a held-back packet's first repair: checksummed over
/// its headers and options only.
fn held_back_rdata_3() -> Vec<u8> {
    let mut b = data_naming(true, 3, Some(RX));
    let quirk = checksum::compute(&b[..b.len() - 1]);
    b[6..8].copy_from_slice(&quirk.to_be_bytes());
    b
}

#[test]
fn a_held_back_repairs_checksum_is_taken_only_when_configured() {
    let mut r = acker_missing_3();
    r.handle(ms(5), SRC, &held_back_rdata_3());
    assert_eq!(r.stats().malformed, 1);
    assert_eq!(r.stats().rdata_packets, 0);
    assert_eq!(acks(&mut r, 5), vec![]);

    let mut cfg = ReceiverConfig::new(RX, GROUP, 7);
    cfg.openpgm_rdata_checksum = true;
    let mut r = Receiver::new(cfg, ms(0));
    r.handle(ms(0), SRC, &spm(0, 1, 0, false));
    for s in [1, 2, 4, 5, 6] {
        r.handle(ms(1), SRC, &data_naming(false, s, Some(RX)));
    }
    acks(&mut r, 1);
    r.handle(ms(5), SRC, &held_back_rdata_3());
    let st = r.stats();
    assert_eq!(
        (st.malformed, st.openpgm_rdata_checksums, st.rdata_packets),
        (0, 1, 1)
    );
    assert_eq!(acks(&mut r, 5), vec![(6, 0b111111, 1003)]);
    // Any other wrong checksum is still malformed.
    let mut bad = held_back_rdata_3();
    bad[7] ^= 1;
    r.handle(ms(6), SRC, &bad);
    assert_eq!(r.stats().malformed, 1);
}
