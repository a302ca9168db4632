//! The PGM network element (RFC 3208 §7), packet by packet.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::net::{IpAddr, Ipv4Addr};

use common::*;
use pgm_wire::*;
use pgmcc::ne::{
    Iface, NakSuppression, NeConfig, NeDestination, NeTimers, NetworkElement, Verdict,
};
use pgmcc::Duration;

const UP: Iface = 0;
const DOWN: [Iface; 3] = [1, 2, 3];

fn ne_addr(i: Iface) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 9, i as u8, 1))
}

fn ne() -> NetworkElement {
    let addrs = (0..4).map(|i| (i, ne_addr(i))).collect();
    let mut ne = NetworkElement::new(NeConfig::new(addrs));
    assert_eq!(
        ne.handle(ms(0), UP, SRC, &spm(1, 0, 10, false), &DOWN),
        Verdict::Consumed
    );
    ne
}

fn out(ne: &mut NetworkElement) -> Vec<(NeDestination, Repr<'static>)> {
    let mut buf = [0u8; 1500];
    let mut v = Vec::new();
    while let Some(t) = ne.poll_transmit(&mut buf) {
        let bytes: &'static [u8] = Box::leak(buf[..t.len].to_vec().into_boxed_slice());
        v.push((t.dst, Repr::parse(bytes).unwrap()));
    }
    v
}

/// A receiver's NAK, addressed (as receivers do) to the SPM path NLA they learned.
fn nak_to(sqns: &[u32]) -> Vec<u8> {
    common::nak(sqns)
}

#[test]
fn spm_is_copied_downstream_with_the_path_rewritten() {
    let mut n = ne();
    let sent = out(&mut n);
    assert_eq!(sent.len(), 3);
    for ((dst, r), iface) in sent.iter().zip(DOWN) {
        assert_eq!(*dst, NeDestination::Multicast(iface));
        let Body::Spm(s) = r.body else { panic!() };
        assert_eq!(
            s.path_nla,
            ne_addr(iface),
            "path NLA = this NE on that interface"
        );
        assert_eq!((s.trail, s.lead), (0, 10));
    }
    // ODATA is switched by the router, not the NE.
    assert_eq!(
        n.handle(ms(1), UP, SRC, &odata(3, 0, b"x", None), &DOWN),
        Verdict::Forward
    );
}

#[test]
fn first_nak_goes_upstream_duplicates_are_eliminated_every_nak_gets_an_ncf() {
    let mut n = ne();
    out(&mut n);
    // Five receivers behind three interfaces NAK sequence number 4.
    for (i, iface) in [1, 1, 2, 3, 3].into_iter().enumerate() {
        n.handle(ms(10 + i as u64), iface, RX, &nak_to(&[4]), &DOWN);
    }
    let sent = out(&mut n);
    let ncfs: Vec<_> = sent
        .iter()
        .filter(|(_, r)| r.packet_type() == PacketType::Ncf)
        .collect();
    let naks: Vec<_> = sent
        .iter()
        .filter(|(_, r)| r.packet_type() == PacketType::Nak)
        .collect();
    assert_eq!(ncfs.len(), 5, "an NCF for every NAK");
    assert_eq!(
        ncfs.iter().map(|(d, _)| *d).collect::<Vec<_>>(),
        [1, 1, 2, 3, 3].map(NeDestination::Multicast).to_vec(),
        "each on the interface the NAK came from"
    );
    assert_eq!(naks.len(), 1, "only the first NAK goes upstream");
    assert_eq!(
        naks[0].0,
        NeDestination::Unicast(SRC),
        "to the upstream hop from the SPM"
    );
    assert_eq!(n.stats().nak_sqns_eliminated, 4);

    // No NCF from upstream: the NAK is repeated every 50 ms until NAK_RPT_IVL (200 ms) has
    // passed; the interfaces stay NAK_RDATA_IVL (400 ms) after the last NAK forwarded
    // (§7.8), then the state is gone.
    n.handle_timeout(ms(61));
    assert_eq!(out(&mut n).len(), 1);
    n.handle_timeout(ms(300));
    assert!(out(&mut n).is_empty(), "repeats stop at NAK_RPT_IVL");
    assert_eq!(n.repair_states(), 1);
    n.handle_timeout(ms(462));
    assert_eq!(n.repair_states(), 0);
    assert_eq!(n.stats().states_expired, 1);
}

/// An NCF or RDATA slower than NAK_RPT_IVL (a source behind a long queue) still finds the
/// interfaces that asked: RDATA after the pending NAK lapsed goes down, not dropped.
#[test]
fn a_late_ncf_and_rdata_still_reach_the_interfaces_that_asked() {
    let mut n = ne();
    out(&mut n);
    n.handle(ms(10), 2, RX, &nak_to(&[4]), &DOWN);
    n.handle_timeout(ms(61));
    n.handle_timeout(ms(211));
    out(&mut n);
    // The NCF comes back 290 ms after the NAK, the RDATA 40 ms later.
    n.handle(ms(300), UP, SRC, &common::ncf(4), &DOWN);
    n.handle(ms(340), UP, SRC, &rdata(4, 0, b"d"), &DOWN);
    assert_eq!(
        out(&mut n).iter().map(|(d, _)| *d).collect::<Vec<_>>(),
        vec![NeDestination::Multicast(2)]
    );
    assert_eq!(n.stats().rdata_unrequested, 0);
    // After the lapse the next duplicate NAK is forwarded anew.
    n.handle(ms(400), 1, RX, &nak_to(&[5]), &DOWN);
    n.handle_timeout(ms(451));
    n.handle_timeout(ms(601));
    out(&mut n);
    n.handle(ms(610), 3, RX, &nak_to(&[5]), &DOWN);
    assert_eq!(
        out(&mut n)
            .iter()
            .filter(|(_, r)| r.packet_type() == PacketType::Nak)
            .count(),
        1
    );
}

/// A source that advertises a group RTT (OPT_GRTT) stretches the NE's timers to it: with a
/// 1 s group RTT a pending NAK repeats once per second and its state outlives 2 s.
#[test]
fn the_timers_stretch_to_the_group_rtt_the_source_advertises() {
    let addrs = (0..4).map(|i| (i, ne_addr(i))).collect();
    let config = NeConfig::new(addrs);
    let t = NeTimers::new(&config, Some(Duration::from_secs(1)));
    assert_eq!(t.rpt_ivl, Duration::from_secs(2));
    assert_eq!(t.rpt_gap, Duration::from_secs(1));
    assert_eq!(t.rdata_ivl, Duration::from_secs(2));
    assert_eq!(t.elim_ivl, Duration::from_millis(50));
    let t = NeTimers::new(&config, None);
    assert_eq!(
        (t.rpt_ivl, t.rpt_gap, t.rdata_ivl),
        (
            Duration::from_millis(200),
            Duration::from_millis(50),
            Duration::from_millis(400)
        )
    );
    let mut n = NetworkElement::new(config);
    let plain = spm(1, 0, 10, false);
    let mut spm = Repr::parse(&plain).unwrap();
    spm.options.grtt = Some(Grtt {
        grtt_us: 1_000_000,
        gsize: 3,
    });
    n.handle(ms(0), UP, SRC, &spm.to_vec().unwrap(), &DOWN);
    out(&mut n);
    n.handle(ms(10), 2, RX, &nak_to(&[4]), &DOWN);
    out(&mut n);
    n.handle_timeout(ms(500));
    assert!(out(&mut n).is_empty(), "no repeat before one group RTT");
    n.handle_timeout(ms(1010));
    assert_eq!(out(&mut n).len(), 1, "one repeat after one group RTT");
    n.handle(ms(1900), UP, SRC, &common::ncf(4), &DOWN);
    n.handle(ms(2500), UP, SRC, &rdata(4, 0, b"d"), &DOWN);
    assert_eq!(
        out(&mut n).iter().map(|(d, _)| *d).collect::<Vec<_>>(),
        vec![NeDestination::Multicast(2)]
    );
}

#[test]
fn ncf_confirms_and_rdata_goes_only_where_it_was_asked_for() {
    let mut n = ne();
    out(&mut n);
    n.handle(ms(10), 2, RX, &nak_to(&[4, 5]), &DOWN);
    n.handle(ms(11), 3, RX, &nak_to(&[5]), &DOWN);
    out(&mut n);
    // The source confirms; repeats stop.
    let mut ncf = common::ncf(4);
    n.handle(ms(20), UP, SRC, &ncf, &DOWN);
    ncf = common::ncf(5);
    n.handle(ms(20), UP, SRC, &ncf, &DOWN);
    n.handle_timeout(ms(100));
    assert!(out(&mut n)
        .iter()
        .all(|(_, r)| r.packet_type() != PacketType::Nak));
    // Within NAK_ELIM_IVL a duplicate is eliminated; after it, the next one is forwarded.
    n.handle(ms(30), 1, RX, &nak_to(&[4]), &DOWN);
    assert_eq!(
        out(&mut n)
            .iter()
            .filter(|(_, r)| r.packet_type() == PacketType::Nak)
            .count(),
        0
    );
    n.handle(ms(90), 1, RX, &nak_to(&[4]), &DOWN);
    assert_eq!(
        out(&mut n)
            .iter()
            .filter(|(_, r)| r.packet_type() == PacketType::Nak)
            .count(),
        1
    );
    // RDATA 4 goes to interfaces 2 and 1 (both NAKed 4); RDATA 5 to 2 and 3.
    assert_eq!(
        n.handle(ms(95), UP, SRC, &rdata(4, 0, b"d"), &DOWN),
        Verdict::Consumed
    );
    assert_eq!(
        out(&mut n).iter().map(|(d, _)| *d).collect::<Vec<_>>(),
        vec![NeDestination::Multicast(1), NeDestination::Multicast(2)]
    );
    n.handle(ms(96), UP, SRC, &rdata(5, 0, b"e"), &DOWN);
    assert_eq!(
        out(&mut n).iter().map(|(d, _)| *d).collect::<Vec<_>>(),
        vec![NeDestination::Multicast(2), NeDestination::Multicast(3)]
    );
    // State is torn down: a second copy of RDATA 5 goes nowhere.
    n.handle(ms(97), UP, SRC, &rdata(5, 0, b"e"), &DOWN);
    assert!(out(&mut n).is_empty());
    assert_eq!(n.repair_states(), 0);
}

#[test]
fn unsolicited_ncf_from_upstream_anticipates_naks() {
    let mut n = ne();
    out(&mut n);
    n.handle(ms(10), UP, SRC, &common::ncf(7), &DOWN);
    n.handle(ms(20), 1, RX, &nak_to(&[7]), &DOWN);
    let sent = out(&mut n);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].1.packet_type(),
        PacketType::Ncf,
        "confirmed locally, not forwarded"
    );
    // An NCF arriving from downstream creates no state.
    n.handle(ms(30), 2, RX, &common::ncf(8), &DOWN);
    assert_eq!(n.repair_states(), 1);
    // Repair state lives NAK_RDATA_IVL (400 ms) without RDATA.
    n.handle_timeout(ms(10) + Duration::from_millis(401));
    assert_eq!(n.repair_states(), 0);
}

fn nak_reporting(sqn: u32, loss: u16) -> Vec<u8> {
    nak_with_report(sqn, 5, loss)
}

fn ne_with(suppression: NakSuppression) -> NetworkElement {
    let addrs = (0..4).map(|i| (i, ne_addr(i))).collect();
    let mut cfg = NeConfig::new(addrs);
    cfg.suppression = suppression;
    cfg.seed = 3;
    let mut ne = NetworkElement::new(cfg);
    ne.handle(ms(0), UP, SRC, &spm(1, 0, 10, false), &DOWN);
    out(&mut ne);
    ne
}

/// Loss rates of the reports the NE forwarded upstream.
fn forwarded_losses(ne: &mut NetworkElement) -> Vec<u16> {
    out(ne)
        .iter()
        .filter(|(_, r)| r.packet_type() == PacketType::Nak)
        .map(|(_, r)| r.options.pgmcc_feedback.map_or(0, |f| f.loss_rate))
        .collect()
}

#[test]
fn forwarded_naks_keep_their_pgmcc_report_and_rfc_suppression_hides_worse_ones() {
    let mut n = ne_with(NakSuppression::Always);
    n.handle(ms(10), 1, RX, &nak_reporting(4, 100), &DOWN);
    assert_eq!(
        forwarded_losses(&mut n),
        vec![100],
        "the report travels with the NAK"
    );
    n.handle(ms(11), 2, RX, &nak_reporting(4, 9000), &DOWN);
    assert!(
        forwarded_losses(&mut n).is_empty(),
        "RFC 3208: the worse receiver is hidden"
    );
    // Repeats carry the stored report.
    n.handle_timeout(ms(61));
    assert_eq!(forwarded_losses(&mut n), vec![100]);
}

#[test]
fn loss_aware_suppression_forwards_a_duplicate_reporting_higher_loss() {
    let mut n = ne_with(NakSuppression::LossAware);
    n.handle(ms(10), 1, RX, &nak_reporting(4, 100), &DOWN);
    n.handle(ms(11), 2, RX, &nak_reporting(4, 9000), &DOWN);
    n.handle(ms(12), 3, RX, &nak_reporting(4, 3000), &DOWN);
    assert_eq!(
        forwarded_losses(&mut n),
        vec![100, 9000],
        "3000 < 9000 is eliminated"
    );
    assert_eq!(n.stats().nak_sqns_let_through, 1);
    assert_eq!(n.stats().nak_sqns_eliminated, 1);
}

#[test]
fn probabilistic_suppression_forwards_duplicates_at_the_configured_rate() {
    let mut n = ne_with(NakSuppression::Probabilistic { forward: 0.25 });
    n.handle(ms(10), 1, RX, &nak_reporting(4, 100), &DOWN);
    for i in 0..2000 {
        n.handle(ms(11), 1 + (i % 3), RX, &nak_reporting(4, 100), &DOWN);
    }
    let through = n.stats().nak_sqns_let_through;
    assert!(
        (400..600).contains(&through),
        "{through} of 2000 at p = 0.25"
    );
}
