//! Exact behaviour of the sender and receiver state machines, driven packet by packet.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::net::{IpAddr, Ipv4Addr};

use pgm_wire::*;
use pgmcc::{
    Destination, Duration, Instant, RateLimit, Receiver, ReceiverConfig, ReceiverEvent, SendError,
    Sender, SenderConfig,
};

mod common;
use common::*;

fn receiver() -> Receiver {
    Receiver::new(ReceiverConfig::new(RX, GROUP, 1), Instant::ZERO)
}

/// Drains the receiver's transmits as parsed packets with their destinations.
fn sent_by(r: &mut Receiver, now: Instant) -> Vec<(Destination, Vec<u8>)> {
    let mut buf = [0u8; 1500];
    let mut out = Vec::new();
    while let Some(t) = r.poll_transmit(now, &mut buf) {
        out.push((t.dst, buf[..t.len].to_vec()));
    }
    out
}

/// The receiver's events but `StartMissed` (most packets here carry no OPT_SYN;
/// `receiver_knows_whether_it_heard_the_start_of_the_stream` tests it).
fn events(r: &mut Receiver) -> Vec<ReceiverEvent> {
    all_events(r)
        .into_iter()
        .filter(|e| !matches!(e, ReceiverEvent::StartMissed { .. }))
        .collect()
}

fn all_events(r: &mut Receiver) -> Vec<ReceiverEvent> {
    std::iter::from_fn(|| r.poll_event()).collect()
}

fn nak_sqns(bytes: &[u8]) -> Vec<u32> {
    let repr = Repr::parse(bytes).unwrap();
    let Body::Nak(n) = repr.body else {
        panic!("not a NAK: {:?}", repr.body)
    };
    let mut v = vec![n.sqn];
    v.extend_from_slice(repr.options.nak_list.unwrap_or_default().as_slice());
    v
}

#[test]
fn gap_is_naked_after_backoff_and_repaired() {
    let mut r = receiver();
    r.handle(ms(0), SRC, &spm(0, 0, u32::MAX, false));
    r.handle(ms(1), SRC, &odata(0, 0, b"a", None));
    r.handle(ms(2), SRC, &odata(2, 0, b"c", None));
    assert_eq!(r.missing(&TSI), 1);
    // The NAK waits a random back-off in [0, 50 ms].
    let due = r.poll_timeout().unwrap();
    assert!(due >= ms(2) && due <= ms(52), "{due:?}");
    r.handle_timeout(due);
    let sent = sent_by(&mut r, due);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].0,
        Destination::Unicast(SRC),
        "NAK goes to the SPM path NLA"
    );
    assert_eq!(nak_sqns(&sent[0].1), vec![1]);
    r.handle(due + Duration::from_millis(5), SRC, &rdata(1, 0, b"b"));
    let ev = events(&mut r);
    let data: Vec<&[u8]> = ev
        .iter()
        .filter_map(|e| match e {
            ReceiverEvent::Data { data, .. } => Some(data.as_slice()),
            _ => None,
        })
        .collect();
    assert_eq!(data, vec![&b"a"[..], b"b", b"c"]);
    assert_eq!(r.stats().gaps_filled, 1);
}

#[test]
fn ncf_heard_during_backoff_suppresses_the_nak() {
    let mut r = receiver();
    r.handle(ms(0), SRC, &spm(0, 0, u32::MAX, false));
    r.handle(ms(1), SRC, &odata(0, 0, b"a", None));
    r.handle(ms(2), SRC, &odata(3, 0, b"d", None));
    // Another receiver's NAK was confirmed before our back-off expired.
    r.handle(ms(2), SRC, &ncf(1));
    r.handle(ms(2), SRC, &ncf(2));
    assert_eq!(r.stats().naks_suppressed, 2);
    // Within NAK_RDATA_IVL (2 s without OPT_GRTT) nothing is sent.
    r.handle_timeout(ms(1_900));
    assert!(sent_by(&mut r, ms(1_900)).is_empty());
    // No RDATA by then: NAK generation recommences with a fresh back-off.
    r.handle_timeout(ms(2_003));
    let t = r.poll_timeout().unwrap();
    r.handle_timeout(t.max(ms(2_003)));
    let sent = sent_by(&mut r, t);
    assert_eq!(
        sent.iter().flat_map(|s| nak_sqns(&s.1)).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert_eq!(
        r.stats().naks_sent,
        1,
        "both sequence numbers in one NAK with OPT_NAK_LIST"
    );
}

#[test]
fn unanswered_naks_end_in_unrecoverable_never_a_silent_gap() {
    let mut r = receiver();
    r.handle(ms(0), SRC, &spm(0, 0, u32::MAX, false));
    r.handle(ms(1), SRC, &odata(0, 0, b"a", None));
    r.handle(ms(2), SRC, &odata(2, 0, b"c", None));
    let mut naks = 0;
    let mut now = ms(2);
    while let Some(t) = r.poll_timeout() {
        now = now.max(t);
        r.handle_timeout(now);
        naks += sent_by(&mut r, now).len();
        assert!(now < ms(40_000), "gave up too late");
    }
    // NAKed every NAK_RPT_IVL (2 s) plus a back-off, until the give-up time (30 s) had
    // passed at the end of a wait; then the loss is declared.
    assert!(
        (ms(30_002)..ms(32_200)).contains(&now),
        "gave up at {now:?}"
    );
    assert!((14..=15).contains(&naks), "{naks} NAKs");
    let ev = events(&mut r);
    assert!(ev.contains(&ReceiverEvent::Unrecoverable {
        tsi: TSI,
        first: 1,
        last: 1
    }));
    // "c" is delivered after the gap report, in order.
    let pos_gap = ev
        .iter()
        .position(|e| matches!(e, ReceiverEvent::Unrecoverable { .. }));
    let pos_c = ev
        .iter()
        .position(|e| matches!(e, ReceiverEvent::Data { data, .. } if data == b"c"));
    assert!(pos_gap < pos_c);
}

#[test]
fn trail_moving_past_a_gap_makes_it_unrecoverable_at_once() {
    let mut r = receiver();
    r.handle(ms(0), SRC, &spm(0, 0, u32::MAX, false));
    r.handle(ms(1), SRC, &odata(0, 0, b"a", None));
    // Trail 3: the source can no longer repair 1 and 2.
    r.handle(ms(2), SRC, &odata(3, 3, b"d", None));
    let ev = events(&mut r);
    assert!(ev.contains(&ReceiverEvent::Unrecoverable {
        tsi: TSI,
        first: 1,
        last: 2
    }));
}

#[test]
fn data_before_any_spm_asks_for_one_and_naks_wait_for_the_path() {
    let mut r = receiver();
    r.handle(ms(0), SRC, &odata(5, 0, b"x", None));
    let sent = sent_by(&mut r, ms(0));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, Destination::Unicast(SRC));
    assert_eq!(
        Repr::parse(&sent[0].1).unwrap().packet_type(),
        PacketType::Spmr
    );
    r.handle(ms(1), SRC, &odata(7, 0, b"z", None));
    // No path NLA yet: the NAK for 6 cannot go out.
    r.handle_timeout(ms(60));
    assert!(sent_by(&mut r, ms(60))
        .iter()
        .all(|(_, b)| Repr::parse(b).unwrap().packet_type() != PacketType::Nak));
    r.handle(ms(70), SRC, &spm(1, 0, 7, false));
    let t = r.poll_timeout().unwrap().max(ms(70));
    r.handle_timeout(t + Duration::from_millis(60));
    let sent = sent_by(&mut r, t);
    // The first packet heard was 5 past the trail the source advertised: the receiver
    // reaches back for the stream's start (`start_reach`) as well as for 6.
    assert_eq!(
        sent.iter().flat_map(|s| nak_sqns(&s.1)).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 6]
    );
}

/// A receiver that lost a session's first packets (SPMs and data, to a full queue as the
/// session starts, say) takes the stream from the trail the source advertises when that
/// is near, so it still gets the stream's start (OPT_SYN); one joining a running session,
/// far from the trail, starts where it joined.
#[test]
fn a_receiver_that_lost_the_first_packets_reaches_back_for_them_but_a_late_joiner_does_not() {
    // By data: first heard packet 3, trail 0.
    let mut r = receiver();
    r.handle(ms(0), SRC, &odata(3, 0, b"d", None));
    r.handle(ms(1), SRC, &spm(0, 0, 3, false));
    let t = r.poll_timeout().unwrap();
    r.handle_timeout(t + Duration::from_millis(60));
    let naked: Vec<u32> = sent_by(&mut r, t + Duration::from_millis(60))
        .iter()
        .filter(|(_, b)| Repr::parse(b).unwrap().packet_type() == PacketType::Nak)
        .flat_map(|s| nak_sqns(&s.1))
        .collect();
    assert_eq!(naked, vec![0, 1, 2]);
    let mut first = odata(0, 0, b"a", None);
    // The repair of the first packet carries OPT_SYN, as the source's does.
    first = {
        let repr = Repr::parse(&first).unwrap();
        let mut opts = repr.options.clone();
        opts.syn = true;
        Repr::downstream(TSI, 7500, Body::Rdata(DataRepr { sqn: 0, trail: 0 }))
            .with_options(opts)
            .with_payload(b"a")
            .to_vec()
            .unwrap()
    };
    r.handle(ms(200), SRC, &first);
    r.handle(ms(201), SRC, &rdata(1, 0, b"b"));
    r.handle(ms(202), SRC, &rdata(2, 0, b"c"));
    assert_eq!(r.session_syn(&TSI), Some(0));
    let data: Vec<Vec<u8>> = events(&mut r)
        .into_iter()
        .filter_map(|e| match e {
            ReceiverEvent::Data { data, .. } => Some(data),
            _ => None,
        })
        .collect();
    assert_eq!(
        data,
        vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec(), b"d".to_vec()]
    );

    // By SPM: lead 10, trail 0.
    let mut r = receiver();
    r.handle(ms(0), SRC, &spm(0, 0, 10, false));
    r.handle(ms(1), SRC, &odata(11, 0, b"l", None));
    assert_eq!(r.missing(&TSI), 11, "0-10 asked for");

    // A late joiner: first heard packet 100 past the trail.
    let mut late = receiver();
    late.handle(ms(0), SRC, &spm(0, 0, 99, false));
    late.handle(ms(1), SRC, &odata(100, 0, b"x", None));
    assert_eq!(late.missing(&TSI), 0, "starts where it joined");

    // Off.
    let mut cfg = ReceiverConfig::new(RX, GROUP, 1);
    cfg.start_reach = 0;
    let mut off = Receiver::new(cfg, Instant::ZERO);
    off.handle(ms(0), SRC, &odata(3, 0, b"d", None));
    off.handle(ms(1), SRC, &spm(0, 0, 3, false));
    assert_eq!(off.missing(&TSI), 0);
}

#[test]
fn spm_lead_reveals_tail_loss_and_fin_ends_the_session() {
    let mut r = receiver();
    r.handle(ms(0), SRC, &spm(0, 0, u32::MAX, false));
    r.handle(ms(1), SRC, &odata(0, 0, b"a", None));
    // Packets 1 and 2 were the last ones and both were lost; only an SPM says they exist.
    r.handle(ms(50), SRC, &spm(1, 0, 2, true));
    assert_eq!(r.missing(&TSI), 2);
    r.handle(ms(60), SRC, &rdata(1, 0, b"b"));
    r.handle(ms(61), SRC, &rdata(2, 0, b"c"));
    let ev = events(&mut r);
    assert_eq!(
        ev.last(),
        Some(&ReceiverEvent::SessionEnded {
            tsi: TSI,
            syn_sqn: None
        })
    );
}

#[test]
fn fragments_reassemble_after_a_repair() {
    let mut r = receiver();
    r.handle(ms(0), SRC, &spm(0, 0, u32::MAX, false));
    let f = |off| {
        Some(Fragment {
            first_sqn: 0,
            offset: off,
            apdu_len: 9,
        })
    };
    r.handle(ms(1), SRC, &odata(0, 0, b"abc", f(0)));
    r.handle(ms(2), SRC, &odata(2, 0, b"ghi", f(6)));
    assert!(events(&mut r)
        .iter()
        .all(|e| !matches!(e, ReceiverEvent::Data { .. })));
    let repair = Repr::downstream(TSI, 7500, Body::Rdata(DataRepr { sqn: 1, trail: 0 }))
        .with_options(Options {
            fragment: f(3),
            ..Options::default()
        })
        .with_payload(b"def")
        .to_vec()
        .unwrap();
    r.handle(ms(30), SRC, &repair);
    let ev = events(&mut r);
    assert_eq!(
        ev,
        vec![ReceiverEvent::Data {
            tsi: TSI,
            sqn: 0,
            data: b"abcdefghi".to_vec()
        }]
    );
    // A fragment claiming more bytes than its APDU is malformed, counted and dropped.
    r.handle(
        ms(40),
        SRC,
        &odata(
            3,
            0,
            b"toolong",
            Some(Fragment {
                first_sqn: 3,
                offset: 0,
                apdu_len: 2,
            }),
        ),
    );
    assert_eq!(r.stats().malformed, 1);
}

fn sender() -> Sender {
    Sender::new(SenderConfig::new(TSI, SRC, GROUP), Instant::ZERO)
}

fn drain(s: &mut Sender, now: Instant) -> Vec<Repr<'static>> {
    let mut buf = vec![0u8; 1472];
    let mut out = Vec::new();
    while let Some(t) = s.poll_transmit(now, &mut buf) {
        assert_eq!(t.dst, Destination::Group);
        let bytes: &'static [u8] = Box::leak(buf[..t.len].to_vec().into_boxed_slice());
        out.push(Repr::parse(bytes).unwrap());
    }
    out
}

#[test]
fn sender_fragments_marks_syn_and_answers_naks_with_ncf_then_rdata() {
    let mut s = sender();
    let apdu: Vec<u8> = (0..4000u32).map(|i| i as u8).collect();
    s.send(&apdu).unwrap();
    let out = drain(&mut s, ms(0));
    assert_eq!(out[0].packet_type(), PacketType::Spm, "first SPM at once");
    let data: Vec<_> = out
        .iter()
        .filter(|r| r.packet_type() == PacketType::Odata)
        .collect();
    assert_eq!(
        data.len(),
        4000usize.div_ceil(SenderConfig::new(TSI, SRC, GROUP).max_tsdu())
    );
    assert!(data[0].options.syn && !data[1].options.syn);
    let joined: Vec<u8> = data.iter().flat_map(|r| r.payload.to_vec()).collect();
    assert_eq!(joined, apdu);
    for r in &data {
        assert!(r.buffer_len() <= 1472);
        let f = r.options.fragment.unwrap();
        assert_eq!((f.first_sqn, f.apdu_len), (0, 4000));
    }
    // A NAK for 1 and 2 (in the window) and 99 (never sent).
    s.handle(ms(10), RX, &nak(&[1, 2, 99]));
    let out = drain(&mut s, ms(10));
    assert_eq!(out[0].packet_type(), PacketType::Ncf);
    let Body::Ncf(n) = out[0].body else { panic!() };
    assert_eq!(n.sqn, 1);
    assert_eq!(out[0].options.nak_list.unwrap().as_slice(), &[2]);
    let rdata: Vec<u32> = out
        .iter()
        .filter_map(|r| match r.body {
            Body::Rdata(d) => Some(d.sqn),
            _ => None,
        })
        .collect();
    assert_eq!(rdata, vec![1, 2]);
    assert_eq!(s.stats().naks_outside_window, 1);
    // The same NAK again before the repair went out queues no second RDATA.
    s.handle(ms(11), RX, &nak(&[1]));
    s.handle(ms(11), RX, &nak(&[1]));
    let out = drain(&mut s, ms(11));
    assert_eq!(
        out.iter()
            .filter(|r| r.packet_type() == PacketType::Rdata)
            .count(),
        1
    );
    assert_eq!(s.stats().naks_duplicate, 1);
    // A NAK for another group is foreign: no NCF, no RDATA.
    let foreign = Repr::upstream(
        TSI,
        7500,
        Body::Nak(NakRepr {
            sqn: 0,
            source: SRC,
            group: IpAddr::V4(Ipv4Addr::new(239, 1, 1, 1)),
        }),
    )
    .to_vec()
    .unwrap();
    s.handle(ms(12), RX, &foreign);
    assert!(drain(&mut s, ms(12)).is_empty());
    assert_eq!(s.stats().naks_foreign, 1);
}

#[test]
fn sender_heartbeats_back_off_and_spmr_gets_an_spm() {
    let mut s = sender();
    drain(&mut s, ms(0));
    s.send(b"x").unwrap();
    drain(&mut s, ms(0));
    // Heartbeat SPMs at IHB_MIN after data, doubling: 100, 200, 400 ms later.
    let mut times = Vec::new();
    let mut now = ms(0);
    while times.len() < 4 {
        now = s.poll_timeout().unwrap().max(now);
        s.handle_timeout(now);
        if drain(&mut s, now)
            .iter()
            .any(|r| r.packet_type() == PacketType::Spm)
        {
            times.push((now - Instant::ZERO).as_millis());
        }
    }
    assert_eq!(times, vec![100, 300, 700, 1500]);
    let spmr = Repr::upstream(TSI, 7500, Body::Spmr).to_vec().unwrap();
    s.handle(now, RX, &spmr);
    let out = drain(&mut s, now);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].packet_type(), PacketType::Spm);
}

#[test]
fn rate_limit_paces_data_and_close_sends_fin() {
    let mut cfg = SenderConfig::new(TSI, SRC, GROUP);
    cfg.rate_limit = Some(RateLimit {
        bytes_per_sec: 100_000,
        burst: 1500,
    });
    let mut s = Sender::new(cfg, Instant::ZERO);
    for _ in 0..20 {
        s.send(&[7u8; 1000]).unwrap();
    }
    let mut now = Instant::ZERO;
    let mut last_data = now;
    let mut bytes = 0;
    while s.queued_packets() > 0 {
        now = s.poll_timeout().unwrap().max(now);
        s.handle_timeout(now);
        for r in drain(&mut s, now) {
            bytes += r.buffer_len();
            if r.packet_type() == PacketType::Odata {
                last_data = now;
            }
        }
    }
    let secs = (last_data - Instant::ZERO).as_secs_f64();
    let rate = (bytes - 1500) as f64 / secs;
    assert!(
        (90_000.0..=101_000.0).contains(&rate),
        "{rate} B/s over {secs} s"
    );
    s.close();
    assert_eq!(s.send(b"late"), Err(SendError::Closed));
    let out = drain(&mut s, now + Duration::from_secs(1));
    assert!(out
        .iter()
        .any(|r| r.packet_type() == PacketType::Spm && r.options.fin));
}

#[test]
fn pgmcc_can_be_switched_off_and_on_at_run_time() {
    use pgmcc::cc::pgmcc::PgmccConfig;
    use pgmcc::cc::CcConfig;
    let mut cfg = SenderConfig::new(TSI, SRC, GROUP);
    cfg.cc = CcConfig::Pgmcc(PgmccConfig::default());
    let mut s = Sender::new(cfg, Instant::ZERO);
    for _ in 0..5 {
        s.send(b"data").unwrap();
    }
    let odata = |out: &[Repr<'static>]| -> Vec<bool> {
        out.iter()
            .filter(|r| r.packet_type() == PacketType::Odata)
            .map(|r| r.options.pgmcc_data.is_some())
            .collect()
    };
    // pgmcc: W = T = 1 and no acker yet, so one packet (an election request) goes out.
    assert_eq!(odata(&drain(&mut s, ms(0))), vec![true]);
    // Switched off: the rate limiter alone paces; the rest goes out without pgmcc options.
    s.set_congestion_control(CcConfig::None, ms(1));
    assert!(s.cc_metrics().is_none());
    assert_eq!(odata(&drain(&mut s, ms(1))), vec![false; 4]);
    // And back on: a fresh controller, W = T = 1, asking for an election again.
    s.set_congestion_control(CcConfig::Pgmcc(PgmccConfig::default()), ms(2));
    s.send(b"a").unwrap();
    s.send(b"b").unwrap();
    let out = drain(&mut s, ms(2));
    assert_eq!(odata(&out), vec![true]);
    let acker = out
        .iter()
        .find_map(|r| r.options.pgmcc_data)
        .map(|d| d.acker);
    assert!(acker.is_some_and(|a| a.is_unspecified()));
}

#[test]
fn receiver_knows_whether_it_heard_the_start_of_the_stream() {
    let mut s = sender();
    for i in 0..3u8 {
        s.send(&[i; 10]).unwrap();
    }
    let mut buf = [0u8; 1500];
    let mut packets = Vec::new();
    while let Some(t) = s.poll_transmit(ms(0), &mut buf) {
        packets.push(buf[..t.len].to_vec());
    }
    // Heard everything: the stream starts at the SYN packet.
    let mut all = receiver();
    for p in &packets {
        all.handle(ms(1), SRC, p);
    }
    let ev = all_events(&mut all);
    let first = ev.iter().find_map(|e| match e {
        ReceiverEvent::SessionStarted { first_sqn, .. } => Some(*first_sqn),
        _ => None,
    });
    assert_eq!(first, Some(0));
    assert_eq!(all.session_syn(&TSI), Some(0));
    assert!(!ev
        .iter()
        .any(|e| matches!(e, ReceiverEvent::StartMissed { .. })));
    // Joined after the first two packets (no SPM yet): no SYN heard, so the application can
    // tell its copy is not the whole stream.
    // (A receiver reaches back for packets this close to the trail; this one does not.)
    let mut c = ReceiverConfig::new(RX, GROUP, 1);
    c.start_reach = 0;
    let mut late = Receiver::new(c, Instant::ZERO);
    for p in packets.iter().skip(3) {
        late.handle(ms(1), SRC, p);
    }
    let ev = all_events(&mut late);
    assert!(
        matches!(
            ev[..],
            [
                ReceiverEvent::SessionStarted { .. },
                ReceiverEvent::StartMissed {
                    first_sqn: 2,
                    syn_sqn: None,
                    ..
                },
                ReceiverEvent::Data { sqn: 2, .. },
                ..
            ]
        ),
        "the start missed is said before the first data: {ev:?}"
    );
    assert_eq!(late.session_syn(&TSI), None);
}

fn count(out: &[Repr<'_>], t: PacketType) -> usize {
    out.iter().filter(|r| r.packet_type() == t).count()
}

#[test]
fn source_advertises_the_group_rtt_and_holds_off_a_second_repair_for_one_rtt() {
    let mut cfg = SenderConfig::new(TSI, SRC, GROUP);
    cfg.cc = pgmcc::cc::Controller::Pgmcc.config();
    let mut s = Sender::new(cfg, Instant::ZERO);
    for i in 0..4u8 {
        s.send(&[i; 100]).unwrap();
    }
    let out = drain(&mut s, ms(0));
    assert_eq!(s.grtt(ms(0)), None, "no RTT measured yet");
    assert!(out.iter().all(|r| r.options.grtt.is_none()));
    // pgmcc starts with a window of one: packet 0 went out at 0 ms: a report echoing 0 at 100 ms is a 100 ms RTT.
    s.handle(ms(100), RX, &nak_with_report(0, 0, 0));
    assert_eq!(s.grtt(ms(100)), Some(Duration::from_millis(100)));
    assert_eq!(s.group_size(ms(100)), 1);
    let out = drain(&mut s, ms(100));
    assert_eq!(count(&out, PacketType::Ncf), 1);
    assert_eq!(count(&out, PacketType::Rdata), 1);
    let ncf = out
        .iter()
        .find(|r| r.packet_type() == PacketType::Ncf)
        .unwrap();
    assert_eq!(
        ncf.options.grtt,
        Some(Grtt {
            grtt_us: 100_000,
            gsize: 1
        })
    );
    // Another NAK within one RTT of that RDATA was sent before the repair could reach its
    // receiver: no NCF, no second RDATA.
    s.handle(ms(150), RX, &nak_with_report(0, 50, 0));
    assert!(drain(&mut s, ms(150)).is_empty());
    assert_eq!(s.stats().naks_held_off, 1);
    assert_eq!((s.stats().sqns_naked, s.stats().sqns_naked_again), (1, 1));
    // One RTT later the receiver must have lost the repair: repaired again.
    s.handle(ms(201), RX, &nak_with_report(0, 101, 0));
    let out = drain(&mut s, ms(201));
    assert_eq!(count(&out, PacketType::Ncf), 1);
    assert_eq!(count(&out, PacketType::Rdata), 1);
    // SPMs carry the figure too (an SPMR asks for one at once).
    s.handle(
        ms(202),
        RX,
        &Repr::upstream(TSI, 7500, Body::Spmr).to_vec().unwrap(),
    );
    let out = drain(&mut s, ms(202));
    let spm = out
        .iter()
        .find(|r| r.packet_type() == PacketType::Spm)
        .unwrap();
    assert_eq!(spm.options.grtt.map(|g| g.grtt_us), Some(100_000));
}

#[test]
fn opt_grtt_scales_the_receivers_nak_timers() {
    let mut r = receiver();
    let plain = spm(0, 0, u32::MAX, false);
    let mut spm = Repr::parse(&plain).unwrap();
    spm.options.grtt = Some(Grtt {
        grtt_us: 100_000,
        gsize: 1,
    });
    let spm = spm.to_vec().unwrap();
    r.handle(ms(0), SRC, &spm);
    r.handle(ms(1), SRC, &odata(0, 0, b"a", None));
    r.handle(ms(2), SRC, &odata(2, 0, b"c", None));
    // Back-off within 4 group RTTs (400 ms), then NAK_RPT_IVL = 2 group RTTs (200 ms), then
    // a fresh back-off: NAK times step by 200..600 ms, not OpenPGM's 2 s.
    let mut nak_times = Vec::new();
    let mut now = ms(2);
    while nak_times.len() < 4 {
        let t = r.poll_timeout().unwrap();
        now = now.max(t);
        r.handle_timeout(now);
        if !sent_by(&mut r, now).is_empty() {
            nak_times.push(now);
        }
    }
    assert!(nak_times[0] <= ms(402), "{:?}", nak_times[0]);
    for w in nak_times.windows(2) {
        let gap = w[1].saturating_duration_since(w[0]);
        assert!(
            (Duration::from_millis(200)..=Duration::from_millis(600)).contains(&gap),
            "{gap:?}"
        );
    }
    // Give-up stays at nak_give_up (30 s > 20 group RTTs).
    while let Some(t) = r.poll_timeout() {
        now = now.max(t);
        r.handle_timeout(now);
        sent_by(&mut r, now);
    }
    assert!(
        (ms(30_002)..ms(30_700)).contains(&now),
        "gave up at {now:?}"
    );
}

/// ODATA `sqn` (trail 0, one byte) with OPT_PGMCC_DATA, the timestamp a report echoes, naming
/// another receiver as the acker.
fn pgmcc_odata(sqn: u32) -> Vec<u8> {
    Repr::downstream(TSI, 7500, Body::Odata(DataRepr { sqn, trail: 0 }))
        .with_options(Options {
            pgmcc_data: Some(PgmccData {
                tstamp: sqn,
                acker: IpAddr::V4(Ipv4Addr::new(10, 0, 9, 9)),
            }),
            ..Options::default()
        })
        .with_payload(b"x")
        .to_vec()
        .unwrap()
}

/// A receiver whose loss rate is above the report bar the source advertises (OPT_REPORT_BAR)
/// is not suppressed by an NCF: its NAK, with its report, still goes out. Below the bar the
/// NCF suppresses it as RFC 3208 says.
#[test]
fn a_receiver_above_the_report_bar_naks_despite_an_ncf() {
    let run = |bar: u16| {
        let mut r = receiver();
        let with_bar = Options {
            report_bar: Some(ReportBar {
                loss: bar,
                intervals: false,
            }),
            ..Options::default()
        };
        r.handle(ms(0), SRC, &spm_with(0, 0, u32::MAX, with_bar.clone()));
        // ODATA with OPT_PGMCC_DATA (the timestamp a report echoes), then a gap at 1.
        r.handle(ms(1), SRC, &pgmcc_odata(0));
        r.handle(ms(2), SRC, &pgmcc_odata(2));
        let ncf = Repr::downstream(
            TSI,
            7500,
            Body::Ncf(NakRepr {
                sqn: 1,
                source: SRC,
                group: GROUP,
            }),
        )
        .with_options(with_bar);
        r.handle(ms(2), SRC, &ncf.to_vec().unwrap());
        r.handle_timeout(ms(60));
        let naks: Vec<u32> = sent_by(&mut r, ms(60))
            .iter()
            .filter(|(_, b)| matches!(Repr::parse(b).unwrap().body, Body::Nak(_)))
            .flat_map(|(_, b)| nak_sqns(b))
            .collect();
        (naks, r.stats().naks_suppressed)
    };
    // One loss in three packets is far above a bar of 1/65535: the NAK goes out.
    assert_eq!(run(1), (vec![1], 0));
    // The highest bar: the NCF suppresses the NAK.
    assert_eq!(run(u16::MAX), (vec![], 1));
}

/// A pgmcc source that sets OPT_REPORT_BAR's INTERVALS flag (and advertises a group RTT)
/// gets TFRC's average loss interval rate in its receivers' reports; without the flag they
/// report the paper's loss filter, which jumps at every loss, so a NAK's report reads high.
#[test]
fn a_receiver_reports_loss_intervals_when_the_source_asks() {
    let run = |intervals: bool| {
        let mut r = receiver();
        let opts = Options {
            report_bar: Some(ReportBar {
                loss: ReportBar::NONE,
                intervals,
            }),
            grtt: Some(Grtt {
                grtt_us: 50_000,
                gsize: 1,
            }),
            ..Options::default()
        };
        r.handle(ms(0), SRC, &spm_with(0, 0, u32::MAX, opts));
        // The report on each NAK the receiver sends at `now`, by the NAK's first sqn.
        let mut reports = Vec::new();
        let mut collect = |r: &mut Receiver, now: Instant| {
            for (_, b) in sent_by(r, now) {
                let repr = Repr::parse(&b).unwrap();
                if let (Body::Nak(n), Some(fb)) = (repr.body, repr.options.pgmcc_feedback) {
                    reports.push((n.sqn, fb.loss_rate));
                }
            }
        };
        // ODATA 0..=251 at 1 ms each, 100 and 250 lost: loss intervals of 101 and 150
        // packets, 150 ms apart (more than the 50 ms group RTT: two loss events).
        for sqn in (0..=251).filter(|s| *s != 100 && *s != 250) {
            let now = ms(u64::from(sqn) + 1);
            r.handle(now, SRC, &pgmcc_odata(sqn));
            r.handle_timeout(now);
            collect(&mut r, now);
        }
        let mut now = ms(252);
        while let Some(t) = r.poll_timeout().filter(|t| *t < ms(2_000)) {
            now = now.max(t);
            r.handle_timeout(now);
            collect(&mut r, now);
        }
        reports.into_iter().find(|(s, _)| *s == 250).unwrap().1
    };
    // Intervals 150 and 101 (the open one, of 1 packet, is shorter): p = 2 / 251.
    assert_eq!(run(true), (2.0 / 251.0 * 65535.0_f64).round() as u16);
    // The filter (W = 65000/65536, fixed point) after 251 packets with losses at 100 and
    // 250 reads about 1 / 102: a quarter higher, from its jump at 250.
    let filter = run(false);
    assert!((635..=650).contains(&filter), "{filter}");
}

/// An ACK from `RX` for `rx_max` (and the 31 before it), echoing `echo_ms`.
fn ack_with_report(rx_max: u32, echo_ms: u32) -> Vec<u8> {
    Repr::upstream(
        TSI,
        7500,
        Body::Ack(AckRepr {
            rx_max,
            bitmap: u32::MAX,
        }),
    )
    .with_options(Options {
        pgmcc_feedback: Some(PgmccFeedback {
            tstamp: echo_ms,
            loss_rate: 0,
            rx: RX,
        }),
        ..Options::default()
    })
    .to_vec()
    .unwrap()
}

/// The first SPM `s` sends after `from`, stepping through its own deadlines up to `until`.
fn first_spm_after(s: &mut Sender, from: Instant, until: Instant) -> Option<Instant> {
    let mut now = from;
    while now <= until {
        now = s.poll_timeout()?.max(now);
        s.handle_timeout(now);
        if count(&drain(s, now), PacketType::Spm) > 0 {
            return Some(now);
        }
    }
    None
}

#[test]
fn a_window_limited_source_waits_one_group_rtt_before_a_heartbeat() {
    // RFC 3208's rule (the knob off): IHB_MIN after the last ODATA, in the ACK clock's gap.
    assert_eq!(heartbeat_in_a_window_wait(false), ms(400));
    // The default: one group RTT after it.
    assert_eq!(heartbeat_in_a_window_wait(true), ms(600));
    assert!(SenderConfig::new(TSI, SRC, GROUP).heartbeat_waits_for_grtt);
}

/// A window-limited pgmcc source on a 300 ms path: when its first heartbeat SPM goes out
/// while data waits for the next ACK.
fn heartbeat_in_a_window_wait(waits_for_grtt: bool) -> Instant {
    let mut cfg = SenderConfig::new(TSI, SRC, GROUP);
    cfg.cc = pgmcc::cc::Controller::Pgmcc.config();
    cfg.heartbeat_waits_for_grtt = waits_for_grtt;
    let mut s = Sender::new(cfg, Instant::ZERO);
    for i in 0..10u8 {
        s.send(&[i; 100]).unwrap();
    }
    // A window of one: packet 0 goes out; the first report elects RX and measures 300 ms.
    assert_eq!(count(&drain(&mut s, ms(0)), PacketType::Odata), 1);
    s.handle(ms(300), RX, &nak_with_report(0, 0, 0));
    drain(&mut s, ms(300));
    assert_eq!(s.grtt(ms(300)), Some(Duration::from_millis(300)));
    // Its ACK opens the window a little; the rest of the data waits for the next ACK.
    s.handle(ms(300), RX, &ack_with_report(0, 0));
    let sent = count(&drain(&mut s, ms(300)), PacketType::Odata);
    assert!(sent >= 1, "the ACK let data go");
    assert!(
        s.queued_packets() > 0,
        "and data still waits for the window"
    );
    // IHB_MIN (100 ms) sends a heartbeat at 400 ms into this wait; the ACK clock resumes
    // within a round trip, so with the knob on the heartbeat waits one group RTT.
    let hb = first_spm_after(&mut s, ms(300), ms(2000)).expect("a heartbeat still comes");
    // With nothing left to send, heartbeats follow RFC 3208's IHB_MIN either way.
    let mut cfg = SenderConfig::new(TSI, SRC, GROUP);
    cfg.heartbeat_waits_for_grtt = waits_for_grtt;
    let mut idle = Sender::new(cfg, Instant::ZERO);
    drain(&mut idle, ms(0));
    idle.send(b"x").unwrap();
    drain(&mut idle, ms(0));
    assert_eq!(first_spm_after(&mut idle, ms(0), ms(1000)), Some(ms(100)));
    hb
}

#[test]
fn a_new_group_rtt_reaches_the_receivers_on_an_spm_while_data_flows() {
    // Receivers scale their NAK timers to OPT_GRTT, which rides on SPMs and NCFs; with data
    // flowing, heartbeats wait, so the source sends an SPM when the group RTT changes.
    let mut cfg = SenderConfig::new(TSI, SRC, GROUP);
    cfg.cc = pgmcc::cc::Controller::Pgmcc.config();
    let mut s = Sender::new(cfg, Instant::ZERO);
    for i in 0..50u8 {
        s.send(&[i; 100]).unwrap();
    }
    let spm_grtt = |out: &[Repr<'static>]| {
        out.iter()
            .filter(|r| r.packet_type() == PacketType::Spm)
            .map(|r| r.options.grtt.map(|g| g.grtt_us))
            .collect::<Vec<_>>()
    };
    let first = drain(&mut s, ms(0));
    assert_eq!(spm_grtt(&first), vec![None], "no RTT measured yet");
    // The first report measures 50 ms: news, but not sooner than IHB_MIN after the last SPM.
    s.handle(ms(50), RX, &ack_with_report(0, 0));
    let out = drain(&mut s, ms(50));
    assert!(count(&out, PacketType::Odata) >= 1);
    assert!(spm_grtt(&out).is_empty());
    assert_eq!(s.poll_timeout(), Some(ms(100)));
    let out = drain(&mut s, ms(100));
    assert_eq!(spm_grtt(&out), vec![Some(50_000)]);
    // The same RTT again is no news: the next SPM is the heartbeat, IHB_MIN after the ODATA
    // this ACK let out.
    s.handle(ms(150), RX, &ack_with_report(1, 100));
    assert!(count(&drain(&mut s, ms(150)), PacketType::Odata) >= 1);
    assert_eq!(first_spm_after(&mut s, ms(150), ms(1000)), Some(ms(250)));
}

/// A NAK sent before the source advertised its group RTT waits OpenPGM's 2 s for the repair.
/// When OPT_GRTT then arrives (10 ms here) that wait shrinks to the scaled one: the receiver
/// re-NAKs within tens of milliseconds, while a source lingering ten group RTTs is still there
/// (measured on loopback before the fix: a receiver re-NAKed 2 s after its first NAK, the
/// source had left 0.5 s earlier, and the transfer failed).
#[test]
fn nak_waits_armed_before_the_group_rtt_was_known_shrink_when_it_arrives() {
    let mut r = receiver();
    r.handle(ms(0), SRC, &spm(0, 0, u32::MAX, false));
    r.handle(ms(1), SRC, &odata(0, 0, b"a", None));
    r.handle(ms(2), SRC, &odata(2, 0, b"c", None));
    // The first NAK, after the default back-off (at most 50 ms).
    let mut now = ms(2);
    let mut first = None;
    while first.is_none() && now < ms(100) {
        now += pgmcc::Duration::from_millis(1);
        r.handle_timeout(now);
        if sent_by(&mut r, now)
            .iter()
            .any(|(_, b)| matches!(Repr::parse(b).unwrap().body, Body::Nak(_)))
        {
            first = Some(now);
        }
    }
    let first = first.expect("a NAK for 1");
    assert!(
        r.poll_timeout().unwrap() + pgmcc::Duration::from_millis(1)
            >= first + pgmcc::Duration::from_secs(2)
    );
    let grtt = Options {
        grtt: Some(Grtt {
            grtt_us: 10_000,
            gsize: 1,
        }),
        ..Options::default()
    };
    r.handle(
        first + pgmcc::Duration::from_millis(5),
        SRC,
        &spm_with(1, 0, 2, grtt),
    );
    let next = r.poll_timeout().unwrap();
    assert!(
        next <= first + pgmcc::Duration::from_millis(5 + 40),
        "the 2 s wait was kept: next deadline {next:?} after a NAK at {first:?}"
    );
}

/// Issue 24: OpenPGM's sources announce a session with three SPMs; a receiver that lost a
/// lone first SPM could not NAK until the next heartbeat. With `spm_burst` 3 the session
/// starts with three, and data resuming after a silence of IHB_MAX is preceded by three.
#[test]
fn spms_go_out_in_a_burst_at_start_and_after_a_long_silence() {
    let mut c = SenderConfig::new(TSI, SRC, GROUP);
    c.spm_burst = 3;
    let mut s = Sender::new(c, ms(0));
    s.send(b"first").unwrap();
    let out = drain(&mut s, ms(0));
    let kinds: Vec<PacketType> = out.iter().map(|r| r.packet_type()).collect();
    assert_eq!(
        kinds,
        [
            PacketType::Spm,
            PacketType::Spm,
            PacketType::Spm,
            PacketType::Odata
        ]
    );
    // Idle past IHB_MAX (8 s): heartbeats only, then data comes back behind a burst.
    let mut t = 0;
    while t < 9_000 {
        t += 100;
        s.handle_timeout(ms(t));
        drain(&mut s, ms(t));
    }
    s.send(b"again").unwrap();
    let kinds: Vec<PacketType> = drain(&mut s, ms(t))
        .iter()
        .map(|r| r.packet_type())
        .collect();
    assert_eq!(
        kinds,
        [
            PacketType::Spm,
            PacketType::Spm,
            PacketType::Spm,
            PacketType::Odata
        ]
    );
    // Data that follows promptly goes alone.
    s.send(b"more").unwrap();
    let kinds: Vec<PacketType> = drain(&mut s, ms(t + 10))
        .iter()
        .map(|r| r.packet_type())
        .collect();
    assert_eq!(kinds, [PacketType::Odata]);
}

/// Issue 22: a receiver tells the source how the session ended (OPT_OUTCOME on a POLR, to the
/// source's address); the source keeps the last report per receiver.
#[test]
fn delivery_reports_reach_the_source_and_the_last_one_counts() {
    let mut s = sender();
    let mut r = receiver();
    s.send(b"hello").unwrap();
    for p in drain(&mut s, ms(0)) {
        r.handle(ms(1), SRC, &p.to_vec().unwrap());
    }
    let tsi = match events(&mut r).first() {
        Some(ReceiverEvent::SessionStarted { tsi, .. }) => *tsi,
        e => panic!("{e:?}"),
    };
    let failed = pgm_wire::Outcome {
        status: pgm_wire::OUTCOME_FAILED,
        bytes: 5,
        sha256: [1; 32],
        reason: "interrupted".into(),
        reporter: None,
    };
    let complete = pgm_wire::Outcome {
        status: pgm_wire::OUTCOME_COMPLETE,
        reason: String::new(),
        ..failed.clone()
    };
    assert!(r.report(tsi, failed));
    assert!(r.report(tsi, complete.clone()));
    let other = Tsi { sport: 1, ..tsi };
    assert!(!r.report(other, complete.clone()), "no such session");
    for (dst, bytes) in sent_by(&mut r, ms(2)) {
        assert_eq!(dst, Destination::Unicast(SRC));
        s.handle(ms(3), RX, &bytes);
    }
    assert_eq!(r.stats().reports_sent, 2);
    assert_eq!(s.stats().reports_received, 2);
    // Filed under the address it came from, which it names as its reporter.
    let named = pgm_wire::Outcome {
        reporter: Some(RX),
        ..complete
    };
    let reports: Vec<_> = s.reports().collect();
    assert_eq!(reports, vec![(RX, &named)]);
    // The same report replayed from another receiver's address is refused.
    let other_rx: IpAddr = "10.0.0.99".parse().unwrap();
    r.report(tsi, named.clone());
    for (_, bytes) in sent_by(&mut r, ms(4)) {
        s.handle(ms(5), other_rx, &bytes);
    }
    assert_eq!(s.stats().reports_refused, 1);
    assert!(s.reports().all(|(a, _)| a == RX));
}

/// An aborted source sends nothing but a burst of SPMs with OPT_RST (no repairs), then is
/// idle; a receiver of the session reports it reset, once.
#[test]
fn an_aborted_source_sends_rst_and_receivers_report_the_reset() {
    let mut s = sender();
    let mut r = receiver();
    for i in 0..3u8 {
        s.send(&[i; 100]).unwrap();
    }
    for p in drain(&mut s, ms(0)).iter().take(2) {
        r.handle(ms(1), SRC, &p.to_vec().unwrap());
    }
    let _ = events(&mut r);
    s.send(b"never sent").unwrap();
    s.abort(5);
    let out = drain(&mut s, ms(2));
    assert_eq!(out.len(), 3, "{out:?}");
    for p in &out {
        assert_eq!(p.packet_type(), PacketType::Spm);
        let rst = p.options.rst.unwrap();
        assert!(rst.no_repairs && rst.error_code == 5 && !p.options.fin);
        r.handle(ms(3), SRC, &p.to_vec().unwrap());
    }
    assert!(s.is_idle());
    // NAKs get no answer any more.
    s.handle(ms(4), RX, &nak(&[1]));
    assert!(drain(&mut s, ms(5)).is_empty());
    let ev = events(&mut r);
    let resets = ev
        .iter()
        .filter(|e| matches!(e, ReceiverEvent::SessionReset { error_code: 5, .. }))
        .count();
    assert_eq!(resets, 1, "{ev:?}");
}

/// OPT_MANIFEST rides on every SPM; a receiver hands it up once the session is announced,
/// and again when it changes (the SHA-256 added at the end).
#[test]
fn the_manifest_reaches_receivers_after_the_session_is_announced_and_when_it_changes() {
    let mut c = SenderConfig::new(TSI, SRC, GROUP);
    let first = pgm_wire::Manifest {
        size: Some(5),
        mode: 0o644,
        mtime: 1_700_000_000,
        sha256: None,
        name: "a.txt".into(),
        tree: false,
        another_pass: false,
    };
    c.manifest = Some(first.clone());
    let mut s = Sender::new(c, ms(0));
    let mut r = receiver();
    // The first SPM goes out before any data: nothing is announced yet.
    for p in drain(&mut s, ms(0)) {
        r.handle(ms(1), SRC, &p.to_vec().unwrap());
    }
    assert!(events(&mut r).is_empty());
    s.send(b"hello").unwrap();
    for p in drain(&mut s, ms(2)) {
        r.handle(ms(3), SRC, &p.to_vec().unwrap());
    }
    let done = pgm_wire::Manifest {
        sha256: Some([4; 32]),
        ..first.clone()
    };
    s.set_manifest(Some(done.clone()));
    s.close();
    for p in drain(&mut s, ms(4)) {
        r.handle(ms(5), SRC, &p.to_vec().unwrap());
    }
    let manifests: Vec<pgm_wire::Manifest> = events(&mut r)
        .into_iter()
        .filter_map(|e| match e {
            ReceiverEvent::Manifest { manifest, .. } => Some(manifest),
            _ => None,
        })
        .collect();
    assert_eq!(manifests, vec![first, done]);
}

/// A finished session announces its end once more as it stops: the heartbeats carrying
/// OPT_FIN follow the last ODATA, doubling, so after a long repair phase none falls in the
/// quiet end of the linger; three FIN SPMs leave back to back before `end` reports it.
#[test]
fn a_finished_session_ends_with_a_burst_of_fin_spms() {
    let mut cfg = SenderConfig::new(TSI, SRC, GROUP);
    cfg.end.linger = Duration::from_millis(500);
    let mut s = Sender::new(cfg, Instant::ZERO);
    s.send(&[7u8; 1000]).unwrap();
    s.close();
    let mut now = Instant::ZERO;
    let mut fins = Vec::new();
    while s.end().is_none() {
        now = s
            .poll_timeout()
            .expect("a session not over has a deadline")
            .max(now);
        s.handle_timeout(now);
        for r in drain(&mut s, now) {
            if r.packet_type() == PacketType::Spm && r.options.fin {
                fins.push(now);
            }
        }
        assert!(now < Instant::ZERO + Duration::from_secs(10), "never ended");
    }
    assert_eq!(s.end(), Some(&pgmcc::SessionEnd::Finished));
    // Heartbeats at 0.1 and 0.3 s, then the linger ends at 0.5 s with three at once.
    let at_end: Vec<_> = fins.iter().filter(|&&t| t == now).collect();
    assert_eq!(at_end.len(), 3, "FIN SPMs at {fins:?}, ended at {now:?}");
    assert!(fins.len() > 3, "{fins:?}");
    assert_eq!(s.poll_timeout(), None);
}

/// With a report wait, a source that heard a receiver (its NAK) without a report from it
/// stays after the linger, says the end again in a burst of FIN SPMs, and ends as soon as
/// the report comes; without one it would have ended at the linger.
#[test]
fn a_receiver_heard_without_a_report_holds_the_end_for_the_report_wait() {
    let mut cfg = SenderConfig::new(TSI, SRC, GROUP);
    cfg.end.linger = Duration::from_millis(500);
    cfg.end.report_wait = Duration::from_secs(5);
    let mut s = Sender::new(cfg, Instant::ZERO);
    let mut r = receiver();
    s.send(b"hello").unwrap();
    s.close();
    for p in drain(&mut s, ms(0)) {
        r.handle(ms(1), SRC, &p.to_vec().unwrap());
    }
    let tsi = match events(&mut r).first() {
        Some(ReceiverEvent::SessionStarted { tsi, .. }) => *tsi,
        e => panic!("{e:?}"),
    };
    // Heard: a NAK for a packet never sent (it repairs nothing, so the linger runs on).
    s.handle(ms(10), RX, &nak(&[99]));
    let mut now = ms(10);
    let mut fins = Vec::new();
    while now < ms(2000) {
        now = s.poll_timeout().expect("not over").max(now);
        s.handle_timeout(now);
        for p in drain(&mut s, now) {
            if p.packet_type() == PacketType::Spm && p.options.fin {
                fins.push(now);
            }
        }
        assert!(s.end().is_none(), "ended at {now:?} without the report");
    }
    // The linger ended at 0.5 s: the wait began with three FIN SPMs at once.
    let at_wait = fins.iter().filter(|&&t| t == ms(500)).count();
    assert_eq!(at_wait, 3, "FIN SPMs at {fins:?}");
    let complete = pgm_wire::Outcome {
        status: pgm_wire::OUTCOME_COMPLETE,
        bytes: 5,
        sha256: [1; 32],
        reason: String::new(),
        reporter: None,
    };
    assert!(r.report(tsi, complete));
    for (_, bytes) in sent_by(&mut r, now) {
        s.handle(now, RX, &bytes);
    }
    assert_eq!(s.stats().reports_received, 1);
    // The report ends the wait at once: the closing burst, then the end.
    let reported = now;
    let mut closing = 0;
    while s.end().is_none() {
        now = s.poll_timeout().expect("not over").max(now);
        s.handle_timeout(now);
        closing += drain(&mut s, now)
            .iter()
            .filter(|p| p.packet_type() == PacketType::Spm && p.options.fin)
            .count();
        assert_eq!(now, reported, "the report did not end the wait");
    }
    assert_eq!(s.end(), Some(&pgmcc::SessionEnd::Finished));
    assert_eq!(closing, 3);
}
