//! A receiver follows low-weight control by itself when ODATA carries OPT_LOWWEIGHT
//! (docs/lowweight.md): no ACKs at all, and the receiver the packet names as the worst NAKs
//! a gap at once (the quick NAKer) while the others keep their random back-off.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::net::IpAddr;

use common::*;
use pgm_wire::*;
use pgmcc::{Instant, Receiver, ReceiverConfig};

const OTHER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 9, 9, 9));

/// ODATA `sqn` naming `worst`, with OPT_LOWWEIGHT `flags` (none: plain pgmcc).
fn odata(sqn: u32, worst: IpAddr, flags: Option<u8>) -> Vec<u8> {
    Repr::downstream(TSI, 7500, Body::Odata(DataRepr { sqn, trail: 1 }))
        .with_options(Options {
            pgmcc_data: Some(PgmccData {
                tstamp: sqn,
                acker: worst,
            }),
            lowweight: flags.map(|flags| LowWeight { flags, rate: 5000 }),
            ..Options::default()
        })
        .with_payload(b"x")
        .to_vec()
        .unwrap()
}

/// What the receiver sends at `now`: (ACKs, NAKed sequence numbers, every NAK had a report).
fn sent(r: &mut Receiver, now: Instant) -> (usize, Vec<u32>, bool) {
    let mut buf = vec![0u8; 9000];
    let (mut acks, mut naks, mut reported) = (0, Vec::new(), true);
    r.handle_timeout(now);
    while let Some(t) = r.poll_transmit(now, &mut buf) {
        let repr = Repr::parse(&buf[..t.len]).unwrap();
        match repr.body {
            Body::Ack(_) => acks += 1,
            Body::Nak(n) => {
                naks.push(n.sqn);
                if let Some(l) = repr.options.nak_list {
                    naks.extend_from_slice(l.as_slice());
                }
                reported &= repr.options.pgmcc_feedback.is_some_and(|f| f.rx == RX);
            }
            _ => {}
        }
    }
    (acks, naks, reported)
}

fn receiver(seed: u64) -> Receiver {
    let mut r = Receiver::new(ReceiverConfig::new(RX, GROUP, seed), ms(0));
    r.handle(ms(0), SRC, &spm(0, 1, 0, false));
    r
}

#[test]
fn the_named_worst_receiver_naks_at_once_and_never_acks() {
    for seed in 0..20 {
        let mut r = receiver(seed);
        r.handle(ms(1), SRC, &odata(1, RX, Some(LW_NO_ACKS | LW_QUICK_NAK)));
        // Packet 2 lost: packet 3 reveals the gap.
        r.handle(ms(2), SRC, &odata(3, RX, Some(LW_NO_ACKS | LW_QUICK_NAK)));
        let (acks, naks, reported) = sent(&mut r, ms(2));
        assert_eq!(acks, 0, "named worst, yet no ACK");
        assert_eq!(naks, vec![2], "seed {seed}: NAK at once, no back-off");
        assert!(reported, "the NAK carries this receiver's report");
        assert_eq!(r.stats().cc.quick_nak_gaps, 1);
        assert_eq!(r.stats().acks_sent, 0);
    }
}

#[test]
fn other_receivers_keep_their_random_back_off() {
    let mut immediate = 0;
    for seed in 0..20 {
        let mut r = receiver(seed);
        r.handle(
            ms(1),
            SRC,
            &odata(1, OTHER, Some(LW_NO_ACKS | LW_QUICK_NAK)),
        );
        r.handle(
            ms(2),
            SRC,
            &odata(3, OTHER, Some(LW_NO_ACKS | LW_QUICK_NAK)),
        );
        let (acks, naks, _) = sent(&mut r, ms(2));
        assert_eq!(acks, 0);
        immediate += usize::from(!naks.is_empty());
        // Within NAK_BO_IVL (50 ms) the NAK leaves.
        let (_, later, _) = sent(&mut r, ms(60));
        assert_eq!(naks.len() + later.len(), 1, "seed {seed}: one NAK in all");
        assert_eq!(r.stats().cc.quick_nak_gaps, 0);
    }
    assert!(immediate <= 2, "{immediate} of 20 NAKed with no back-off");
}

#[test]
fn without_quick_nak_flag_the_worst_backs_off_too() {
    let mut immediate = 0;
    for seed in 0..20 {
        let mut r = receiver(seed);
        r.handle(ms(1), SRC, &odata(1, RX, Some(LW_NO_ACKS)));
        r.handle(ms(2), SRC, &odata(3, RX, Some(LW_NO_ACKS)));
        let (acks, naks, _) = sent(&mut r, ms(2));
        assert_eq!(acks, 0);
        immediate += usize::from(!naks.is_empty());
    }
    assert!(immediate <= 2, "{immediate} of 20 NAKed with no back-off");
}

#[test]
fn election_requests_get_no_answer() {
    let unspecified = IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
    let mut r = receiver(3);
    for s in 1..=5 {
        r.handle(
            ms(u64::from(s)),
            SRC,
            &odata(s, unspecified, Some(LW_NO_ACKS)),
        );
    }
    let (acks, naks, _) = sent(&mut r, ms(500));
    assert_eq!((acks, naks.len()), (0, 0));
    // The same packets without OPT_LOWWEIGHT: a pgmcc receiver volunteers.
    let mut r = receiver(3);
    for s in 1..=5 {
        r.handle(ms(u64::from(s)), SRC, &odata(s, unspecified, None));
    }
    let (acks, _, _) = sent(&mut r, ms(500));
    assert_eq!(acks, 1, "pgmcc answers an election request");
}
