//! A receiver switches to Pseudofed feedback by itself when ODATA carries OPT_PSEUDOFED
//! (docs/pseudofed.md): representatives report every packet at once (CC, or CI after a
//! loss), others wait `wait + U(0, suppression)` GRTTs and are suppressed by the sender's
//! advertisement.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::net::IpAddr;

use common::*;
use pgm_wire::*;
use pgmcc::{Instant, Receiver, ReceiverConfig};

const OTHER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 9, 9, 9));

/// ODATA `sqn` with the sender's advertisement: `reps`, GRTT 200 ms, wait 50 %,
/// suppression 100 %, and the latest CI heard (`ci`).
fn odata(sqn: u32, reps: &[IpAddr], ci: Option<u32>) -> Vec<u8> {
    let mut flags = 0;
    if ci.is_some() {
        flags |= PF_HAVE_CI;
    }
    Repr::downstream(TSI, 7500, Body::Odata(DataRepr { sqn, trail: 1 }))
        .with_options(Options {
            pgmcc_data: Some(PgmccData {
                tstamp: sqn,
                acker: reps.first().copied().unwrap_or(OTHER),
            }),
            pseudofed: Some(Pseudofed {
                flags,
                grtt_ms: 200,
                wait_pct: 50,
                supp_pct: 100,
                ci_sqn: ci.unwrap_or(0),
                reps: RepList::from_slice(reps).unwrap(),
            }),
            ..Options::default()
        })
        .with_payload(b"x")
        .to_vec()
        .unwrap()
}

/// The Pseudofed reports (ACKs with OPT_PSEUDOFED) the receiver sends now, and whether any
/// NAK carried a pgmcc report.
fn reports(r: &mut Receiver, now: Instant) -> (Vec<Pseudofed>, bool) {
    let mut buf = vec![0u8; 9000];
    let mut out = Vec::new();
    let mut nak_report = false;
    r.handle_timeout(now);
    while let Some(t) = r.poll_transmit(now, &mut buf) {
        let repr = Repr::parse(&buf[..t.len]).unwrap();
        match repr.body {
            Body::Ack(_) => {
                assert_eq!(repr.options.pgmcc_feedback.unwrap().rx, RX);
                out.push(repr.options.pseudofed.unwrap());
            }
            Body::Nak(_) => nak_report |= repr.options.pgmcc_feedback.is_some(),
            _ => {}
        }
    }
    (out, nak_report)
}

fn receiver() -> Receiver {
    let mut r = Receiver::new(ReceiverConfig::new(RX, GROUP, 7), ms(0));
    r.handle(ms(0), SRC, &spm(0, 1, 0, false));
    r
}

#[test]
fn representative_reports_every_packet_cc_then_ci() {
    let mut r = receiver();
    r.handle(ms(1), SRC, &odata(1, &[RX], None));
    let (rep, _) = reports(&mut r, ms(1));
    assert_eq!(rep.len(), 1);
    assert_eq!(rep[0].flags & PF_CI, 0, "a CC");
    r.handle(ms(2), SRC, &odata(2, &[RX], None));
    // 3 is lost: the report on 4 is a CI naming 3.
    r.handle(ms(4), SRC, &odata(4, &[RX], None));
    let (rep, nak_report) = reports(&mut r, ms(4));
    assert_eq!(rep.len(), 2);
    assert_eq!(rep[1].flags & PF_CI, PF_CI);
    assert_eq!(rep[1].ci_sqn, 3);
    // Its NAK for 3 (after the NAK backoff) carries no pgmcc report: CIs go on ACKs.
    let (_, nak_report_later) = reports(&mut r, ms(500));
    assert!(!nak_report && !nak_report_later);
    assert!(r.stats().naks_sent > 0);
    assert_eq!(r.stats().cc.pseudofed_reports, 3);
}

#[test]
fn non_representative_ci_waits_then_reports_or_is_suppressed() {
    // Another receiver is the representative. 2 is lost: a CI is scheduled between
    // wait = 100 ms and wait + suppression = 300 ms (GRTT 200 ms) after the loss is seen.
    let mut r = receiver();
    r.handle(ms(1), SRC, &odata(1, &[OTHER], None));
    r.handle(ms(3), SRC, &odata(3, &[OTHER], None));
    let (now_reports, _) = reports(&mut r, ms(3));
    assert!(now_reports.is_empty());
    let (early, _) = reports(&mut r, ms(102));
    assert!(early.is_empty(), "before the wait");
    let (rep, _) = reports(&mut r, ms(303));
    assert_eq!(rep.len(), 1);
    assert_eq!((rep[0].flags & PF_CI, rep[0].ci_sqn), (PF_CI, 2));

    // Same loss, but before the timer fires the sender advertises a CI for sqn 2 or later
    // (heard from the representative): the report is suppressed.
    let mut r = receiver();
    r.handle(ms(1), SRC, &odata(1, &[OTHER], None));
    r.handle(ms(3), SRC, &odata(3, &[OTHER], None));
    r.handle(ms(50), SRC, &odata(4, &[OTHER], Some(2)));
    let (rep, _) = reports(&mut r, ms(400));
    assert!(rep.is_empty());
    assert_eq!(r.stats().cc.pseudofed_suppressed, 1);
    assert_eq!(r.stats().cc.pseudofed_reports, 0);
}

#[test]
fn ccs_only_while_the_set_is_empty() {
    // No representative yet: a CC is scheduled; once the sender names one, it is moot.
    let mut r = receiver();
    r.handle(ms(1), SRC, &odata(1, &[], None));
    assert!(r.poll_timeout().is_some_and(|t| t > ms(1)));
    r.handle(ms(20), SRC, &odata(2, &[OTHER], None));
    let (rep, _) = reports(&mut r, ms(400));
    assert!(rep.is_empty());
    assert_eq!(r.stats().cc.pseudofed_suppressed, 1);
    // With the set empty and nobody else answering, the CC goes out.
    let mut r = receiver();
    r.handle(ms(1), SRC, &odata(1, &[], None));
    let (rep, _) = reports(&mut r, ms(400));
    assert_eq!(rep.len(), 1);
    assert_eq!(rep[0].flags & PF_CI, 0);
}

#[test]
fn without_the_option_the_receiver_stays_pgmcc() {
    // The same ODATA without OPT_PSEUDOFED naming RX as acker: a plain pgmcc ACK.
    let mut r = receiver();
    let pkt = Repr::downstream(TSI, 7500, Body::Odata(DataRepr { sqn: 1, trail: 1 }))
        .with_options(Options {
            pgmcc_data: Some(PgmccData {
                tstamp: 1,
                acker: RX,
            }),
            ..Options::default()
        })
        .with_payload(b"x")
        .to_vec()
        .unwrap();
    r.handle(ms(1), SRC, &pkt);
    let mut buf = vec![0u8; 9000];
    let t = r.poll_transmit(ms(1), &mut buf).unwrap();
    let repr = Repr::parse(&buf[..t.len]).unwrap();
    assert!(matches!(repr.body, Body::Ack(_)));
    assert!(repr.options.pseudofed.is_none());
    assert_eq!(r.stats().cc.pseudofed_reports, 0);
}

#[test]
fn hostile_advertisement_values_are_survived() {
    // The largest GRTT and timer fractions a packet can carry: the report is scheduled (far
    // away), nothing panics, and a later sane advertisement still works.
    let mut r = receiver();
    let mut bad = |sqn: u32, now: u64| {
        let pkt = Repr::downstream(TSI, 7500, Body::Odata(DataRepr { sqn, trail: 1 }))
            .with_options(Options {
                pgmcc_data: Some(PgmccData {
                    tstamp: u32::MAX,
                    acker: OTHER,
                }),
                pseudofed: Some(Pseudofed {
                    flags: !PF_HAVE_CI,
                    grtt_ms: u32::MAX,
                    wait_pct: 255,
                    supp_pct: 255,
                    ci_sqn: u32::MAX,
                    reps: RepList::from_slice(&[OTHER; 8]).unwrap(),
                }),
                ..Options::default()
            })
            .with_payload(b"x")
            .to_vec()
            .unwrap();
        r.handle(ms(now), SRC, &pkt);
    };
    bad(1, 1);
    bad(3, 2);
    let (rep, _) = reports(&mut r, ms(10_000));
    assert!(rep.is_empty());
    // wait + suppression <= 5.1 x u32::MAX ms (about 254 days): handled, not overflowed.
    let (rep, _) = reports(&mut r, ms(u64::from(u32::MAX) * 6));
    assert_eq!(rep.len(), 1);
    // Back to a sane sender naming us: immediate reports again.
    r.handle(ms(u64::from(u32::MAX) * 6 + 1), SRC, &odata(4, &[RX], None));
    let (rep, _) = reports(&mut r, ms(u64::from(u32::MAX) * 6 + 1));
    assert_eq!(rep.len(), 1);
}
