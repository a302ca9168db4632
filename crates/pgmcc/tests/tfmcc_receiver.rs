//! A receiver with `ReceiverConfig::loss_events` reports TFRC's loss event rate (the TFMCC
//! baseline, docs/tfmcc.md) in OPT_PGMCC_FEEDBACK instead of pgmcc's loss filter.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::*;
use pgm_wire::*;
use pgmcc::{Duration, Receiver, ReceiverConfig};

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

/// Sends ODATA 1..=400 at 1 ms intervals, without `lost`, and returns the loss field of the
/// last ACK the receiver (named acker) sends.
fn last_reported_loss(loss_events: Option<Duration>, lost: &[u32]) -> u16 {
    let mut cfg = ReceiverConfig::new(RX, GROUP, 7);
    cfg.loss_events = loss_events;
    let mut r = Receiver::new(cfg, ms(0));
    r.handle(ms(0), SRC, &spm(0, 1, 0, false));
    let mut buf = vec![0u8; 9000];
    let mut last = None;
    for s in 1..=400u32 {
        let now = ms(u64::from(s));
        if !lost.contains(&s) {
            r.handle(now, SRC, &odata_naming_rx(s));
        }
        r.handle_timeout(now);
        while let Some(t) = r.poll_transmit(now, &mut buf) {
            let repr = Repr::parse(&buf[..t.len]).unwrap();
            if let (Body::Ack(_), Some(fb)) = (&repr.body, repr.options.pgmcc_feedback) {
                last = Some(fb.loss_rate);
            }
        }
    }
    last.unwrap()
}

#[test]
fn loss_event_rate_is_reported_with_merged_events() {
    // Losses at 100 and 300 start events; 302 falls within 50 ms of 300 and is merged.
    // Intervals (packets between event starts): 100, 200; open interval 100 after 300.
    // Mean = max((100 + 200) / 2, (200 + 100) / 2) = 150 -> p = 1/150 -> 65535/150 = 437.
    let p = last_reported_loss(Some(Duration::from_millis(50)), &[100, 300, 302]);
    assert_eq!(p, 437);
    // Without the option the loss filter is reported, as before.
    let f = last_reported_loss(None, &[100, 300, 302]);
    assert_ne!(f, 437);
    assert!(f > 0);
}
