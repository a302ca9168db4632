//! Packet builders shared by the core's integration tests.

#![allow(dead_code, clippy::unwrap_used)] // each test file uses a subset; test code

use std::net::{IpAddr, Ipv4Addr};

use pgm_wire::*;
use pgmcc::{Duration, Instant};

pub(crate) const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
pub(crate) const RX: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1));
pub(crate) const GROUP: IpAddr = IpAddr::V4(Ipv4Addr::new(239, 192, 0, 1));
pub(crate) const TSI: Tsi = Tsi {
    gsi: Gsi([9, 9, 9, 9, 9, 9]),
    sport: 1234,
};

pub(crate) fn ms(n: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(n)
}

pub(crate) fn odata(sqn: u32, trail: u32, payload: &[u8], frag: Option<Fragment>) -> Vec<u8> {
    Repr::downstream(TSI, 7500, Body::Odata(DataRepr { sqn, trail }))
        .with_options(Options {
            fragment: frag,
            ..Options::default()
        })
        .with_payload(payload)
        .to_vec()
        .unwrap()
}

pub(crate) fn rdata(sqn: u32, trail: u32, payload: &[u8]) -> Vec<u8> {
    Repr::downstream(TSI, 7500, Body::Rdata(DataRepr { sqn, trail }))
        .with_payload(payload)
        .to_vec()
        .unwrap()
}

pub(crate) fn spm(sqn: u32, trail: u32, lead: u32, fin: bool) -> Vec<u8> {
    spm_with(
        sqn,
        trail,
        lead,
        Options {
            fin,
            ..Options::default()
        },
    )
}

/// An SPM carrying `opts`.
pub(crate) fn spm_with(sqn: u32, trail: u32, lead: u32, opts: Options<'_>) -> Vec<u8> {
    Repr::downstream(
        TSI,
        7500,
        Body::Spm(SpmRepr {
            sqn,
            trail,
            lead,
            path_nla: SRC,
        }),
    )
    .with_options(opts)
    .to_vec()
    .unwrap()
}

pub(crate) fn ncf(sqn: u32) -> Vec<u8> {
    Repr::downstream(
        TSI,
        7500,
        Body::Ncf(NakRepr {
            sqn,
            source: SRC,
            group: GROUP,
        }),
    )
    .to_vec()
    .unwrap()
}

pub(crate) fn nak(sqns: &[u32]) -> Vec<u8> {
    let (first, rest) = sqns.split_first().unwrap();
    let mut r = Repr::upstream(
        TSI,
        7500,
        Body::Nak(NakRepr {
            sqn: *first,
            source: SRC,
            group: GROUP,
        }),
    );
    if !rest.is_empty() {
        r = r.with_options(Options {
            nak_list: Some(SqnList::from_slice(rest).unwrap()),
            ..Options::default()
        });
    }
    r.to_vec().unwrap()
}

/// A NAK for `sqn` from `RX` carrying a pgmcc report: timestamp echo `echo_ms` (the source
/// measures `now - echo_ms` as this receiver's RTT) and loss rate `loss`.
pub(crate) fn nak_with_report(sqn: u32, echo_ms: u32, loss: u16) -> Vec<u8> {
    Repr::upstream(
        TSI,
        7500,
        Body::Nak(NakRepr {
            sqn,
            source: SRC,
            group: GROUP,
        }),
    )
    .with_options(Options {
        pgmcc_feedback: Some(PgmccFeedback {
            tstamp: echo_ms,
            loss_rate: loss,
            rx: RX,
        }),
        ..Options::default()
    })
    .to_vec()
    .unwrap()
}
