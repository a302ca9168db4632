//! Golden vectors: byte-exact datagrams in `tests/vectors/*.hex`, laid out by hand from the
//! RFC 3208 figures and OpenPGM's `packet.h` (see each file's first line), with checksums
//! computed independently by `scripts/pgm-vector.py`. Each must parse to the Repr written
//! here, and that Repr must emit exactly the same bytes.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use pgm_wire::*;

const GSI: Gsi = Gsi([1, 2, 3, 4, 5, 6]);
const TSI: Tsi = Tsi {
    gsi: GSI,
    sport: 40000,
};
const DPORT: u16 = 7500;
const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
const GRP: IpAddr = IpAddr::V4(Ipv4Addr::new(239, 192, 0, 1));
const RX: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 99));

fn load(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/vectors/{name}.hex", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let digits: String = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
        .collect();
    hex::decode(digits).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn nak(sqn: u32) -> NakRepr {
    NakRepr {
        sqn,
        source: SRC,
        group: GRP,
    }
}

fn check(name: &str, expected: Repr<'_>) {
    let bytes = load(name);
    let parsed = Repr::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(parsed, expected, "{name}: parsed Repr differs");
    assert_eq!(expected.buffer_len(), bytes.len(), "{name}: buffer_len");
    let emitted = expected.to_vec().unwrap();
    assert_eq!(
        hex::encode(&emitted),
        hex::encode(&bytes),
        "{name}: emitted bytes differ"
    );
    // The zero-copy view agrees with the Repr.
    let p = Packet::new_checked(&bytes[..]).unwrap();
    assert_eq!(p.packet_type(), Ok(expected.packet_type()));
    assert_eq!(p.tsi(), Ok(TSI));
    assert_eq!(usize::from(p.tsdu_length()), expected.payload.len());
}

#[test]
fn spm() {
    let body = Body::Spm(SpmRepr {
        sqn: 1,
        trail: 0,
        lead: 9,
        path_nla: SRC,
    });
    check("spm", Repr::downstream(TSI, DPORT, body));
}

#[test]
fn spm_fin() {
    let body = Body::Spm(SpmRepr {
        sqn: 7,
        trail: 3,
        lead: 32,
        path_nla: SRC,
    });
    let opts = Options {
        fin: true,
        ..Options::default()
    };
    check(
        "spm-fin",
        Repr::downstream(TSI, DPORT, body).with_options(opts),
    );
}

#[test]
fn poll_and_polr() {
    let body = Body::Poll(PollRepr {
        sqn: 5,
        round: 2,
        s_type: pgm_wire::poll::POLL_GENERAL,
        path_nla: SRC,
        bo_ivl: 100_000,
        rand: [0xde, 0xad, 0xbe, 0xef],
        mask: 0xff,
    });
    check("poll", Repr::downstream(TSI, DPORT, body));
    let body = Body::Polr(PolrRepr { sqn: 5, round: 2 });
    check("polr", Repr::upstream(TSI, DPORT, body));
}

#[test]
fn odata_and_rdata() {
    let body = Body::Odata(DataRepr { sqn: 10, trail: 0 });
    check(
        "odata",
        Repr::downstream(TSI, DPORT, body).with_payload(b"hello"),
    );
    let body = Body::Rdata(DataRepr { sqn: 10, trail: 2 });
    check(
        "rdata",
        Repr::downstream(TSI, DPORT, body).with_payload(b"abc"),
    );
}

#[test]
fn odata_fragment_and_pgmcc_data() {
    let body = Body::Odata(DataRepr { sqn: 17, trail: 12 });
    let opts = Options {
        fragment: Some(Fragment {
            first_sqn: 16,
            offset: 1460,
            apdu_len: 1464,
        }),
        pgmcc_data: Some(PgmccData {
            tstamp: 123_456,
            acker: RX,
        }),
        ..Options::default()
    };
    check(
        "odata-frag-pgmcc",
        Repr::downstream(TSI, DPORT, body)
            .with_options(opts)
            .with_payload(b"test"),
    );
}

#[test]
fn nak_family() {
    let opts = Options {
        nak_list: Some(SqnList::from_slice(&[12, 14]).unwrap()),
        ..Options::default()
    };
    let r = Repr::upstream(TSI, DPORT, Body::Nak(nak(11))).with_options(opts);
    assert_eq!(
        r.header_flags, OPT_NETWORK,
        "OPT_NAK_LIST is network-significant"
    );
    check("nak-list", r);
    check("nnak", Repr::upstream(TSI, DPORT, Body::Nnak(nak(11))));
    check("ncf", Repr::downstream(TSI, DPORT, Body::Ncf(nak(11))));
    let v6 = NakRepr {
        sqn: 100,
        source: IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
        group: IpAddr::V6(Ipv6Addr::new(0xff0e, 0, 0, 0, 0, 0, 0, 0x123)),
    };
    check("nak-ipv6", Repr::upstream(TSI, DPORT, Body::Nak(v6)));
}

#[test]
fn nak_join_and_unknown_option() {
    let opts = Options {
        join: Some(2),
        unknown: vec![UnknownOption {
            code: 0x20,
            flags: 0x01,
            data: &[0x00, 0xab, 0xcd],
        }],
        ..Options::default()
    };
    let r = Repr::upstream(TSI, DPORT, Body::Nak(nak(3))).with_options(opts);
    assert_eq!(r.options.unknown[0].opx(), Opx::Invalidate);
    check("nak-join-unknown", r);
}

#[test]
fn spmr() {
    check("spmr", Repr::upstream(TSI, DPORT, Body::Spmr));
}

#[test]
fn ack_with_feedback() {
    let body = Body::Ack(AckRepr {
        rx_max: 32,
        bitmap: 0xffff_fffd,
    });
    let opts = Options {
        pgmcc_feedback: Some(PgmccFeedback {
            tstamp: 123_480,
            loss_rate: 655,
            rx: RX,
        }),
        ..Options::default()
    };
    let r = Repr::upstream(TSI, DPORT, body).with_options(opts);
    if let Body::Ack(a) = r.body {
        assert!(a.acks(32) && !a.acks(31) && a.acks(30) && a.acks(1) && !a.acks(0));
    }
    check("ack", r);
}

#[test]
fn every_vector_file_is_checked() {
    // A vector added to the directory without a test here would silently go unchecked.
    let dir = format!("{}/tests/vectors", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "hex").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    let checked = [
        "ack",
        "nak-ipv6",
        "nak-join-unknown",
        "nak-list",
        "ncf",
        "nnak",
        "odata",
        "odata-frag-pgmcc",
        "poll",
        "polr",
        "rdata",
        "spm",
        "spm-fin",
        "spmr",
    ];
    assert_eq!(names, checked);
    // Every packet type has at least one vector.
    let mut seen = std::collections::BTreeSet::new();
    for n in &names {
        seen.insert(Repr::parse(&load(n)).unwrap().packet_type());
    }
    assert_eq!(seen.len(), PacketType::ALL.len());
}

#[test]
fn corrupted_vectors_fail_checksum() {
    for name in ["odata", "ack", "spm"] {
        let mut b = load(name);
        let last = b.len() - 1;
        b[last] ^= 0x40;
        assert!(
            matches!(Repr::parse(&b), Err(Error::Checksum { .. })),
            "{name}"
        );
        // With checksum verification off, the same bytes parse.
        assert!(
            Repr::parse_with(&b, ChecksumPolicy::Ignore).is_ok(),
            "{name}"
        );
    }
}

#[test]
fn zero_checksum_policy() {
    let mut b = load("odata");
    b[6] = 0;
    b[7] = 0;
    assert!(Repr::parse(&b).is_ok(), "RFC: zero means not computed");
    assert!(matches!(
        Repr::parse_with(&b, ChecksumPolicy::RequireOnData),
        Err(Error::Checksum { stored: 0, .. })
    ));
}

/// OpenPGM 5.3's source sends the first repair of a packet its rate limiter held back with
/// the checksum of its headers and options alone (payload taken as zero): that RDATA, and
/// only that, parses with `parse_openpgm_held_back_rdata`.
#[test]
fn openpgm_held_back_rdata_checksum() {
    let payload = b"held back by the rate limiter";
    let make = |body: Body| {
        let mut b = Repr::downstream(
            Tsi {
                gsi: Gsi([1, 2, 3, 4, 5, 6]),
                sport: 9,
            },
            7500,
            body,
        )
        .with_options(Options {
            pgmcc_data: Some(PgmccData {
                tstamp: 77,
                acker: "10.0.0.2".parse().unwrap(),
            }),
            ..Options::default()
        })
        .with_payload(payload)
        .to_vec()
        .unwrap();
        let quirk = pgm_wire::checksum::compute(&b[..b.len() - payload.len()]);
        b[6..8].copy_from_slice(&quirk.to_be_bytes());
        b
    };
    let d = DataRepr { sqn: 5, trail: 1 };
    let rdata = make(Body::Rdata(d));
    assert!(matches!(Repr::parse(&rdata), Err(Error::Checksum { .. })));
    let r = Repr::parse_openpgm_held_back_rdata(&rdata).unwrap();
    assert_eq!((r.body, r.payload), (Body::Rdata(d), &payload[..]));
    // The same checksum on ODATA, a correct RDATA, one with no checksum, and one whose
    // checksum is wrong some other way: none of them.
    assert!(Repr::parse_openpgm_held_back_rdata(&make(Body::Odata(d))).is_none());
    let mut ok = rdata.clone();
    ok[6..8].fill(0);
    assert!(Repr::parse_openpgm_held_back_rdata(&ok).is_none());
    let c = pgm_wire::checksum::compute(&ok);
    ok[6..8].copy_from_slice(&c.to_be_bytes());
    assert!(Repr::parse(&ok).is_ok());
    assert!(Repr::parse_openpgm_held_back_rdata(&ok).is_none());
    let mut bad = rdata.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    bad[6..8].copy_from_slice(&(c ^ 0x0101).to_be_bytes());
    assert!(Repr::parse_openpgm_held_back_rdata(&bad).is_none());
}
