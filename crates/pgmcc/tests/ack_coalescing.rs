//! `ReceiverConfig::coalesce_acks`: a driver that handles a batch of ODATA before polling
//! transmits gets one ACK per batch (as long as the batch fits a 32-packet bitmap), and the
//! sender's controller still counts every packet once (docs/pgmcc.md, difference 10).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::*;
use pgm_wire::*;
use pgmcc::{Receiver, ReceiverConfig};

fn odata_naming_rx(sqn: u32) -> Vec<u8> {
    Repr::downstream(TSI, 7500, Body::Odata(DataRepr { sqn, trail: 1 }))
        .with_options(Options {
            pgmcc_data: Some(PgmccData {
                tstamp: sqn,
                acker: RX,
            }),
            ..Options::default()
        })
        .with_payload(b"x")
        .to_vec()
        .unwrap()
}

/// Feeds ODATA 1..=n (minus `lost`) in one batch, then returns (RX_MAX, bitmap) of every
/// ACK the receiver sends, and its coalesced counter.
fn acks_for_batch(coalesce: bool, n: u32, lost: &[u32]) -> (Vec<(u32, u32)>, u64) {
    let mut cfg = ReceiverConfig::new(RX, GROUP, 7);
    cfg.coalesce_acks = coalesce;
    let mut r = Receiver::new(cfg, ms(0));
    r.handle(ms(0), SRC, &spm(0, 1, 0, false));
    let mut buf = vec![0u8; 9000];
    for s in (1..=n).filter(|s| !lost.contains(s)) {
        r.handle(ms(1), SRC, &odata_naming_rx(s));
    }
    let mut acks = Vec::new();
    while let Some(t) = r.poll_transmit(ms(1), &mut buf) {
        if let Body::Ack(a) = Repr::parse(&buf[..t.len]).unwrap().body {
            acks.push((a.rx_max, a.bitmap));
        }
    }
    (acks, r.stats().acks_coalesced)
}

#[test]
fn one_ack_per_batch_within_the_bitmap() {
    // Ten packets: one ACK, for packet 10, with all ten bits set.
    let (acks, coalesced) = acks_for_batch(true, 10, &[]);
    assert_eq!(acks, vec![(10, 0x3ff)]);
    assert_eq!(coalesced, 9);
    // Without coalescing: one ACK per packet, as the paper's acker does.
    let (acks, coalesced) = acks_for_batch(false, 10, &[]);
    assert_eq!(acks.len(), 10);
    assert_eq!(acks[0], (1, 1));
    assert_eq!(coalesced, 0);
}

#[test]
fn a_batch_longer_than_the_bitmap_gets_an_ack_per_32_packets() {
    // 70 packets: the first ACK chain starts at 1 and may run to 32; the next starts at 33
    // and runs to 64; the last covers 65..=70. Every packet is inside some ACK's bitmap.
    let (acks, coalesced) = acks_for_batch(true, 70, &[]);
    assert_eq!(
        acks.iter().map(|a| a.0).collect::<Vec<_>>(),
        vec![32, 64, 70]
    );
    assert_eq!(coalesced, 67);
    for s in 1..=70u32 {
        assert!(
            acks.iter()
                .any(|&(max, bits)| s <= max && max - s < 32 && bits & (1 << (max - s)) != 0),
            "packet {s} not reported"
        );
    }
}

#[test]
fn a_hole_stays_visible_to_the_sender() {
    // Packet 5 lost inside a batch: the coalesced ACK still shows the hole, so the
    // sender's dupack rule sees the loss as it would from per-packet ACKs.
    let (acks, _) = acks_for_batch(true, 12, &[5]);
    assert_eq!(acks.len(), 1);
    let (max, bits) = acks[0];
    assert_eq!(max, 12);
    assert_eq!(bits & (1 << (12 - 5)), 0);
    assert_eq!(bits.count_ones(), 11);
}
