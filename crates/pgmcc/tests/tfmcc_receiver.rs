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

// Feedback rounds (OPT_TFMCC_DATA): receivers switch them on from the source's option.

const OTHER: std::net::IpAddr = std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 1, 99));

fn odata_round(sqn: u32, acker: std::net::IpAddr, supp_rate: u32, send_rate: u32) -> Vec<u8> {
    Repr::downstream(TSI, 7500, Body::Odata(DataRepr { sqn, trail: 1 }))
        .with_options(Options {
            pgmcc_data: Some(PgmccData { tstamp: sqn, acker }),
            tfmcc_data: Some(TfmccData {
                // A new round every 50 packets (500 ms at one packet per 10 ms).
                round: (sqn / 50) as u16,
                round_ms: 400,
                r_max_ms: 100,
                clr_ivl_ms: 100,
                supp_rate,
                send_rate,
            }),
            ..Options::default()
        })
        .with_payload(b"x")
        .to_vec()
        .unwrap()
}

/// ODATA 1..=200, one per 10 ms, without 50 and 120, naming `acker`; returns the ACKs the
/// receiver sent and its stats.
fn run_rounds(acker: std::net::IpAddr, supp: u32, send: u32) -> (usize, pgmcc::ReceiverStats) {
    let mut r = Receiver::new(ReceiverConfig::new(RX, GROUP, 7), ms(0));
    r.handle(ms(0), SRC, &spm(0, 1, 0, false));
    let mut buf = vec![0u8; 9000];
    let mut acks = 0;
    for t in 1..=2100u64 {
        let now = ms(t);
        let s = (t / 10) as u32;
        if t % 10 == 0 && (1..=200).contains(&s) && s != 50 && s != 120 {
            r.handle(now, SRC, &odata_round(s, acker, supp, send));
        }
        r.handle_timeout(now);
        while let Some(tx) = r.poll_transmit(now, &mut buf) {
            if matches!(Repr::parse(&buf[..tx.len]).unwrap().body, Body::Ack(_)) {
                acks += 1;
            }
        }
    }
    (acks, r.stats().clone())
}

#[test]
fn a_lossy_receiver_reports_once_per_round() {
    // Losses from packet 50 on give it a loss event rate; it is not the CLR and its rate
    // (~80 packets/s with R_max = 100 ms) is below the sending rate (1000/s): one report
    // in each of rounds 1, 2 and 3 (packets 51-99, 100-149, 150-199), none in round 0
    // (and round 4's timer, set by packet 200, is still running when the test ends).
    let (acks, st) = run_rounds(OTHER, TfmccData::NO_RATE, 1_000_000);
    assert_eq!(acks, 3, "{st:?}");
    assert_eq!(st.cc.tfmcc_reports_sent, 3);
    assert_eq!(st.cc.tfmcc_reports_suppressed, 0);
}

#[test]
fn an_echoed_lower_rate_suppresses_the_report() {
    // The source echoes 0.001 packets/s: someone slower already reported every round.
    // Rounds 1 to 4 (packet 200 opens round 4) each set a timer, all cancelled.
    let (acks, st) = run_rounds(OTHER, 1, 1_000_000);
    assert_eq!(acks, 0, "{st:?}");
    assert_eq!(st.cc.tfmcc_reports_suppressed, 4);
}

#[test]
fn a_receiver_faster_than_the_sending_rate_stays_silent() {
    // Sending at 10 packets/s, below this receiver's ~80: it cannot be limiting.
    let (acks, st) = run_rounds(OTHER, TfmccData::NO_RATE, 10_000);
    assert_eq!(acks, 0, "{st:?}");
    assert_eq!(st.cc.tfmcc_reports_suppressed, 0);
}

#[test]
fn the_clr_reports_once_per_interval_not_per_packet() {
    // Named CLR with a 100-ms report interval, packets every 10 ms for 2 s: about one ACK
    // per 10 packets (20), where per-packet ACKing would send 198.
    let (acks, st) = run_rounds(RX, TfmccData::NO_RATE, 1_000_000);
    assert!((18..=21).contains(&acks), "{acks} {st:?}");
    assert_eq!(st.cc.tfmcc_reports_sent, 0);
}
