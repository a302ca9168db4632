//! The receiver against packets forged from its source's own address: where its NAKs go,
//! how many it sends unanswered, and which window edges and SPM sequence numbers it takes.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use pgm_wire::{Body, DataRepr, Gsi, NakRepr, Options, PollRepr, Repr, SpmRepr};

use super::guard::{MAX_SPM_RATE, NAK_BURST, NAK_RATE, SPM_SQN_SLACK};
use super::*;
use crate::time::Duration;
use crate::transmit::Destination;

const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
/// A host the attacker wants flooded: neither the source nor a network element.
const THIRD: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 201, 0, 13));
/// A network element the receiver is configured with.
const NE: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 254));
const GROUP: IpAddr = IpAddr::V4(Ipv4Addr::new(239, 192, 0, 1));
const TSI: Tsi = Tsi {
    gsi: Gsi([9, 9, 9, 9, 9, 9]),
    sport: 1234,
};

fn ms(n: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(n)
}

fn config() -> ReceiverConfig {
    ReceiverConfig::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)), GROUP, 1)
}

fn data(sqn: u32, trail: u32, payload: &[u8], rdata: bool) -> Vec<u8> {
    let d = DataRepr { sqn, trail };
    let body = if rdata {
        Body::Rdata(d)
    } else {
        Body::Odata(d)
    };
    Repr::downstream(TSI, 7500, body)
        .with_payload(payload)
        .to_vec()
        .unwrap()
}

fn odata(sqn: u32, trail: u32, payload: &[u8]) -> Vec<u8> {
    data(sqn, trail, payload, false)
}

fn spm(sqn: u32, trail: u32, lead: u32, path: IpAddr, fin: bool) -> Vec<u8> {
    let body = Body::Spm(SpmRepr {
        sqn,
        trail,
        lead,
        path_nla: path,
    });
    Repr::downstream(TSI, 7500, body)
        .with_options(Options {
            fin,
            ..Options::default()
        })
        .to_vec()
        .unwrap()
}

fn ncf(sqn: u32) -> Vec<u8> {
    let body = Body::Ncf(NakRepr {
        sqn,
        source: SRC,
        group: GROUP,
    });
    Repr::downstream(TSI, 7500, body).to_vec().unwrap()
}

fn poll(path: IpAddr) -> Vec<u8> {
    let body = Body::Poll(PollRepr {
        sqn: 1,
        round: 0,
        s_type: pgm_wire::poll::POLL_GENERAL,
        path_nla: path,
        bo_ivl: 0,
        rand: [0; 4],
        mask: 0,
    });
    Repr::downstream(TSI, 7500, body).to_vec().unwrap()
}

/// Runs the timers at `now` and returns where each NAK sent went, with its first
/// sequence number; other packets are left out.
fn naks(r: &mut Receiver, now: Instant) -> Vec<(Destination, u32)> {
    r.handle_timeout(now);
    sent(r, now)
        .into_iter()
        .filter_map(|(dst, p)| match Repr::parse(&p).ok()?.body {
            Body::Nak(n) => Some((dst, n.sqn)),
            _ => None,
        })
        .collect()
}

/// Every packet the receiver has queued, with where it goes.
fn sent(r: &mut Receiver, now: Instant) -> Vec<(Destination, Vec<u8>)> {
    let mut buf = vec![0u8; 9000];
    std::iter::from_fn(|| {
        r.poll_transmit(now, &mut buf)
            .map(|t| (t.dst, buf[..t.len].to_vec()))
    })
    .collect()
}

fn events(r: &mut Receiver) -> Vec<ReceiverEvent> {
    std::iter::from_fn(|| r.poll_event()).collect()
}

fn lost(evs: &[ReceiverEvent]) -> bool {
    evs.iter()
        .any(|e| matches!(e, ReceiverEvent::Unrecoverable { .. }))
}

/// A session heard from `SRC`: an SPM (path `SRC`), then data 0 and 2, so 1 is missing.
fn with_a_gap(c: ReceiverConfig) -> Receiver {
    let mut r = Receiver::new(c, ms(0));
    r.handle(ms(0), SRC, &spm(1, 0, u32::MAX, SRC, false));
    r.handle(ms(1), SRC, &odata(0, 0, b"a"));
    r.handle(ms(2), SRC, &odata(2, 0, b"c"));
    r
}

#[test]
fn a_spoofed_spm_naming_a_third_host_sends_no_nak_there() {
    let mut r = with_a_gap(config());
    // From the source's own address (source binding cannot refuse it), in sequence.
    r.handle(ms(3), SRC, &spm(2, 0, 2, THIRD, false));
    assert_eq!(r.stats().implausible_spms, 0, "a plausible SPM");
    let mut all = Vec::new();
    for t in (100..5000).step_by(100) {
        all.extend(naks(&mut r, ms(t)));
    }
    assert!(!all.is_empty(), "1 was never NAKed");
    assert!(
        all.iter()
            .all(|&(dst, s)| dst == Destination::Unicast(SRC) && s == 1),
        "NAKs went elsewhere than the source: {all:?}"
    );
    // A poll naming the third host is answered at the source too.
    r.handle(ms(5000), SRC, &poll(THIRD));
    r.handle_timeout(ms(5001));
    let polrs: Vec<Destination> = sent(&mut r, ms(5001))
        .into_iter()
        .filter(|(_, p)| matches!(Repr::parse(p).map(|p| p.body), Ok(Body::Polr(_))))
        .map(|(dst, _)| dst)
        .collect();
    assert_eq!(polrs, [Destination::Unicast(SRC)]);
}

#[test]
fn naks_go_to_a_configured_network_element_and_nowhere_else() {
    let mut c = config();
    c.network_elements = vec![NE];
    let mut r = with_a_gap(c);
    // The network element on the path rewrote the SPM's path to itself.
    r.handle(ms(3), SRC, &spm(2, 0, 2, NE, false));
    let first = naks(&mut r, ms(100));
    assert_eq!(first, [(Destination::Unicast(NE), 1)]);
    // A path the receiver was not configured with is not followed.
    r.handle(ms(200), SRC, &spm(3, 0, 2, THIRD, false));
    let mut later = Vec::new();
    for t in (300..5000).step_by(100) {
        later.extend(naks(&mut r, ms(t)));
    }
    assert!(!later.is_empty());
    assert!(
        later
            .iter()
            .all(|&(dst, _)| dst == Destination::Unicast(SRC)),
        "{later:?}"
    );
}

#[test]
fn naks_without_answers_stay_within_the_budget() {
    let mut c = config();
    // Short NAK waits: unanswered, each missing sequence number is NAKed every 10 ms.
    c.nak_bo_ivl = Duration::from_millis(1);
    c.nak_rpt_ivl = Duration::from_millis(10);
    c.nak_rdata_ivl = Duration::from_millis(10);
    let mut r = with_a_gap(c);
    // A forged SPM from the source's address declares 8,000 packets sent (within the
    // window: plausible), none of which the source will ever repair or confirm.
    r.handle(ms(3), SRC, &spm(2, 0, 8000, SRC, false));
    assert_eq!(r.stats().implausible_spms, 0);
    let mut count = 0u64;
    for t in 4..=10_004 {
        count += naks(&mut r, ms(t)).len() as u64;
    }
    // Ten seconds: without the budget, 127 NAK packets every 10 ms (about 127,000).
    let bound = u64::from(NAK_BURST) + 10 * u64::from(NAK_RATE) + 1;
    assert!(count <= bound, "{count} NAKs in 10 s, bound {bound}");
    assert!(count >= bound - 2, "{count} NAKs in 10 s");
    assert!(r.stats().naks_rate_limited > 10_000, "{:?}", r.stats());
    // Answers let NAKs through again: each NCF heard, one more (with the rate's share of
    // the next round of NAK timers, 35 ms: at most 2).
    for s in 0..10 {
        r.handle(ms(10_005), SRC, &ncf(5000 + s));
    }
    let answered = (10_006..10_040)
        .map(|t| naks(&mut r, ms(t)).len())
        .sum::<usize>();
    assert!((10..=12).contains(&answered), "{answered}");
}

#[test]
fn an_spm_sequence_jump_beyond_the_time_since_is_dropped() {
    let mut r = with_a_gap(config());
    // The SPM: 1,000 ahead 100 ms after the last, with a FIN at the lead; taken,
    // it would end the session and make every real SPM look old.
    r.handle(ms(100), SRC, &spm(1001, 0, 2, SRC, true));
    assert_eq!(r.stats().implausible_spms, 1);
    // What the slack and the time since allow is taken.
    let allowed = SPM_SQN_SLACK + MAX_SPM_RATE / 10; // 100 ms after the last taken
    r.handle(ms(100), SRC, &spm(1 + allowed, 0, 2, SRC, false));
    assert_eq!(r.stats().implausible_spms, 1);
    let next = 1 + allowed;
    // A receiver cut off for 20 s takes a jump the time allows (2,064).
    r.handle(ms(20_100), SRC, &spm(next + 2000, 0, 2, SRC, false));
    assert_eq!(r.stats().implausible_spms, 1);
    // The next real SPM (with the FIN) is taken, and the repair ends the session.
    r.handle(ms(20_101), SRC, &spm(next + 2001, 0, 2, SRC, true));
    r.handle(ms(20_102), SRC, &data(1, 0, b"b", true));
    let evs = events(&mut r);
    assert!(
        evs.iter()
            .any(|e| matches!(e, ReceiverEvent::SessionEnded { .. })),
        "{evs:?}"
    );
    assert!(!lost(&evs), "{evs:?}");
}

/// Data packets with edges no source sends, from the source's own address, then the rest of
/// the stream: nothing given up, nothing forged delivered. Returns the receiver.
fn data_edges_attack(c: ReceiverConfig) -> Receiver {
    let mut r = Receiver::new(c, ms(0));
    r.handle(ms(0), SRC, &spm(1, 0, u32::MAX, SRC, false));
    r.handle(ms(1), SRC, &odata(0, 0, b"a"));
    r.handle(ms(2), SRC, &odata(1, 0, b"b"));
    let before = (r.missing(&TSI), r.stats().unrecoverable_sqns);
    // The two: the trail 100 beyond the lead, and a sequence number 100,000 ahead.
    r.handle(ms(3), SRC, &odata(1, 101, b"forged"));
    r.handle(ms(4), SRC, &odata(100_001, 0, b"forged"));
    // The same trail on a repair, and on the packet that would be the next one.
    r.handle(ms(5), SRC, &data(1, 101, b"forged", true));
    r.handle(ms(6), SRC, &odata(2, 103, b"forged"));
    let after = (r.missing(&TSI), r.stats().unrecoverable_sqns);
    assert_eq!(after, before, "the window moved: {:?}", r.stats());
    assert_eq!(r.stats().implausible_data, 4, "{:?}", r.stats());
    r
}

#[test]
fn data_with_edges_no_source_sends_is_dropped_before_the_window_moves() {
    let mut r = data_edges_attack(config());
    r.handle(ms(7), SRC, &odata(2, 0, b"c"));
    let got: Vec<Vec<u8>> = events(&mut r)
        .into_iter()
        .filter_map(|e| match e {
            ReceiverEvent::Data { data, .. } => Some(data),
            ReceiverEvent::Unrecoverable { .. } => panic!("gave up: {e:?}"),
            _ => None,
        })
        .collect();
    assert_eq!(got, [b"a", b"b", b"c"].map(|d| d.to_vec()));
    // A session's first packet is held to the same edges: no session is opened.
    let mut fresh = Receiver::new(config(), ms(0));
    fresh.handle(ms(0), SRC, &odata(5, 7, b"forged"));
    assert_eq!(fresh.stats().implausible_data, 1);
    assert_eq!(fresh.sessions().count(), 0);
}

#[test]
fn data_with_edges_no_source_sends_is_dropped_before_the_window_moves_when_signed() {
    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let mut c = config();
    c.verifier = Some(Arc::new(key.verifying_key()));
    // Unverified packets (their list not heard) move nothing when their edges are absurd.
    let r = data_edges_attack(c);
    assert_eq!(r.stats().signed.forged, 0, "they never reached the check");
}

#[test]
fn a_session_silent_for_a_while_takes_its_next_packet_however_far_ahead() {
    let mut c = config();
    c.rxw_sqns = 64;
    let mut r = Receiver::new(c, ms(0));
    r.handle(ms(0), SRC, &odata(0, 0, b"a"));
    // Cut off: the source moved on by far more than a window meanwhile.
    r.handle(ms(500), SRC, &odata(10_000, 10_000, b"x"));
    assert_eq!(r.stats().implausible_data, 1, "taken before the silence");
    r.handle(ms(1000), SRC, &odata(10_000, 10_000, b"x"));
    assert_eq!(r.stats().implausible_data, 1, "silent for 1 s: taken");
    let evs = events(&mut r);
    assert!(lost(&evs), "the skipped part is reported: {evs:?}");
    assert!(evs
        .iter()
        .any(|e| matches!(e, ReceiverEvent::Data { data, .. } if data == b"x")));
}

/// Signed list `sqn` of [`TSI`] covering `data` (the packets after it), ending the session
/// with `end`, chained to the list after it.
fn signed_list(key: &ed25519_dalek::SigningKey, sqn: u32, data: &[&[u8]], end: bool) -> Vec<u8> {
    use crate::signed::{self, Signer};
    let next_sqn = sqn.wrapping_add(1 + data.len() as u32);
    let list = signed::List {
        prev: sqn,
        end,
        unix_ms: 0,
        key: key.chain_key(TSI, sqn),
        next: if end {
            [0; signed::KEY_LEN]
        } else {
            signed::commitment(|d| key.digest(d), &key.chain_key(TSI, next_sqn))
        },
        digests: data
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let s = sqn.wrapping_add(1 + i as u32);
                signed::packet_digest(|p| key.digest(p), s, None, d)
            })
            .collect(),
        manifest: None,
    };
    signed::encode_list(key, TSI, sqn, &list)
}

#[test]
fn forged_packets_the_verified_lists_refuse_move_nothing_and_nothing_waits_past_the_end() {
    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let mut c = config();
    c.verifier = Some(Arc::new(key.verifying_key()));
    let mut r = Receiver::new(c, ms(0));
    let first = signed_list(&key, 0, &[b"a"], false);
    r.handle(ms(0), SRC, &odata(0, 0, &first));
    r.handle(ms(1), SRC, &odata(1, 0, b"a"));
    // Where the next list goes: the first list, well signed, copied there. Its key is not
    // the one the first list committed to: refused, and the window does not reach 2.
    r.handle(ms(2), SRC, &odata(2, 0, &first));
    assert_eq!(r.stats().signed.forged, 1, "{:?}", r.stats().signed);
    assert_eq!(r.stats().signed.lists, 1, "no second signature check");
    assert_eq!(r.missing(&TSI), 0);
    // A packet past the next list's place cannot be judged yet: it moves the window.
    r.handle(ms(3), SRC, &odata(5, 0, b"forged"));
    assert_eq!(r.missing(&TSI), 3, "2, 3 and 4");
    // The signed end at 2: nothing past it exists, so nothing is waited for or NAKed.
    r.handle(ms(4), SRC, &odata(2, 0, &signed_list(&key, 2, &[], true)));
    assert_eq!(r.missing(&TSI), 0);
    let evs = events(&mut r);
    assert!(
        evs.iter()
            .any(|e| matches!(e, ReceiverEvent::SessionEnded { .. })),
        "{evs:?}"
    );
    // The session is over: a packet past the end moves nothing.
    r.handle(ms(5), SRC, &odata(9, 0, b"forged"));
    assert_eq!(r.missing(&TSI), 0);
    assert_eq!(naks(&mut r, ms(10_000)), []);
}

/// A source that advertises no group RTT (OpenPGM, ZeroMQ) and answers NAKs with NCFs after
/// 10 ms: the receiver's RDATA wait follows that round trip (30 ms here) instead of the fixed
/// 2 s, so a lost repair is asked for again at once, not after the source's trail passed it.
#[test]
fn without_a_group_rtt_the_rdata_wait_follows_the_measured_nak_round_trip() {
    let mut r = with_a_gap(config());
    let first = (3..2_000)
        .find(|&t| naks(&mut r, ms(t)).iter().any(|&(_, s)| s == 1))
        .expect("sequence number 1 NAKed");
    r.handle(ms(first + 10), SRC, &ncf(1));
    // The repair is lost: the next NAK for 1 comes after the 30 ms RDATA wait and a
    // back-off, not 2 s later.
    let again = (first + 11..first + 3_000)
        .find(|&t| naks(&mut r, ms(t)).iter().any(|&(_, s)| s == 1))
        .expect("sequence number 1 NAKed again");
    let bo = config().nak_bo_ivl.as_millis() as u64;
    assert!(
        again >= first + 10 + 30 && again <= first + 10 + 30 + bo + 1,
        "NAKed at {first} ms, confirmed at {} ms, NAKed again at {again} ms",
        first + 10
    );
}
