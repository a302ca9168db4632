//! Datagrams captured from OpenPGM itself (libpgm 5.3.128, Debian libpgm-dev), in
//! `tests/vectors/libpgm/*.hex`: the UDP payloads that interop/pgm-send and interop/pgm-recv
//! exchanged in network namespaces (see scripts/interop-libpgm-selftest and
//! docs/interop-libpgm.md). Unlike `tests/vectors/*.hex` they were not laid out by hand, so
//! they check our reading of the RFC and of packet.h against what libpgm really sends.
//!
//! Each must parse to the Repr written here. Our emitter must reproduce libpgm's bytes,
//! except for the flags byte of options that libpgm leaves uninitialised (and so the checksum).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::net::{IpAddr, Ipv4Addr};

use pgm_wire::*;

/// GSI = first 6 bytes of MD5("interop") (pgm-send --gsi interop).
const GSI: Gsi = Gsi([0x90, 0x0f, 0x53, 0x52, 0x16, 0x3f]);
/// The plain session's TSI; the PGMCC session's source port was 1227.
const TSI: Tsi = Tsi {
    gsi: GSI,
    sport: 9466,
};
const TSI_CC: Tsi = Tsi {
    gsi: GSI,
    sport: 1227,
};
const DPORT: u16 = 7500;
const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
const GRP: IpAddr = IpAddr::V4(Ipv4Addr::new(239, 192, 0, 1));

fn load(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/vectors/libpgm/{name}.hex",
        env!("CARGO_MANIFEST_DIR")
    );
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

/// Parses `name`, compares with `expected`, and re-emits it. `garbage` lists the offsets of
/// option flags bytes libpgm did not initialise: the emitted packet may differ from the
/// capture there and in the checksum (offsets 6 and 7), nowhere else.
fn check(name: &str, expected: Repr<'_>, garbage: &[usize]) {
    let bytes = load(name);
    let parsed = Repr::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(parsed, expected, "{name}: parsed Repr differs");
    assert_eq!(expected.buffer_len(), bytes.len(), "{name}: buffer_len");
    let emitted = expected.to_vec().unwrap();
    assert_eq!(emitted.len(), bytes.len(), "{name}: emitted length");
    let differ: Vec<usize> = (0..bytes.len())
        .filter(|&i| emitted[i] != bytes[i])
        .collect();
    if garbage.is_empty() {
        assert_eq!(
            hex::encode(&emitted),
            hex::encode(&bytes),
            "{name}: emitted bytes differ"
        );
    } else {
        assert!(
            differ
                .iter()
                .all(|i| *i == 6 || *i == 7 || garbage.contains(i)),
            "{name}: emitted bytes differ at {differ:?}"
        );
    }
    assert_eq!(Repr::parse(&emitted).unwrap(), expected, "{name}: re-parse");
}

#[test]
fn libpgm_odata_and_rdata() {
    let body = Body::Odata(DataRepr { sqn: 1, trail: 0 });
    let payload = hex::decode("008306890c8f1295").unwrap();
    check(
        "odata",
        Repr::downstream(TSI, DPORT, body).with_payload(&payload),
        &[],
    );
    let body = Body::Rdata(DataRepr { sqn: 24, trail: 0 });
    let payload = hex::decode("28ab2eb134b73abd").unwrap();
    check(
        "rdata",
        Repr::downstream(TSI, DPORT, body).with_payload(&payload),
        &[],
    );
}

#[test]
fn libpgm_spm_fin() {
    let body = Body::Spm(SpmRepr {
        sqn: 15,
        trail: 0,
        lead: 500,
        path_nla: SRC,
    });
    let opts = Options {
        fin: true,
        ..Options::default()
    };
    check(
        "spm-fin",
        Repr::downstream(TSI, DPORT, body).with_options(opts),
        &[],
    );
}

#[test]
fn libpgm_nak_list_and_ncf() {
    let opts = Options {
        nak_list: Some(SqnList::from_slice(&[376, 377]).unwrap()),
        ..Options::default()
    };
    let r = Repr::upstream(TSI, DPORT, Body::Nak(nak(122))).with_options(opts);
    // byte 42 is OPT_NAK_LIST's flags byte: libpgm sent 0x02 there (never written)
    check("nak-list", r, &[42]);
    check("ncf", Repr::downstream(TSI, DPORT, Body::Ncf(nak(24))), &[]);
}

#[test]
fn libpgm_spmr() {
    // a late joiner's SPMR; the TSI is the source's (sport 43268 in that session)
    let tsi = Tsi {
        gsi: GSI,
        sport: 43268,
    };
    check("spmr", Repr::upstream(tsi, DPORT, Body::Spmr), &[]);
}

#[test]
fn libpgm_odata_with_pgmcc_data() {
    let body = Body::Odata(DataRepr { sqn: 0, trail: 0 });
    let opts = Options {
        pgmcc_data: Some(PgmccData {
            tstamp: 94_846_490,
            acker: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        }),
        ..Options::default()
    };
    // pgm-send's stream header: "PGMI", version 1, 40 bytes to come
    let payload = hex::decode("50474d49000000010000000000000028").unwrap();
    check(
        "odata-pgmcc",
        Repr::downstream(TSI_CC, DPORT, body)
            .with_options(opts)
            .with_payload(&payload),
        &[],
    );
}

#[test]
fn libpgm_rdata_with_wrong_checksum_is_rejected() {
    // libpgm 5.3.128 with PGMCC repairs a packet it held back for congestion before it has
    // saved that packet's payload checksum; its own receivers discard this datagram too.
    let bytes = load("rdata-pgmcc-bad-checksum");
    assert!(matches!(
        Repr::parse(&bytes),
        Err(Error::Checksum {
            stored: 0x0953,
            computed: 0xe322
        })
    ));
    let r = Repr::parse_with(&bytes, ChecksumPolicy::Ignore).unwrap();
    assert_eq!(r.body, Body::Rdata(DataRepr { sqn: 1, trail: 0 }));
    assert_eq!(r.tsi(), TSI_CC);
    assert_eq!(r.payload.len(), 8);
    // Its checksum is that of its headers and options with the payload taken as zero: the
    // parser for exactly that case takes it (receivers use it over UDP only).
    let q = Repr::parse_openpgm_held_back_rdata(&bytes).unwrap();
    assert_eq!((q.body, q.payload), (r.body, r.payload));
}

#[test]
fn every_libpgm_vector_file_is_checked() {
    let dir = format!("{}/tests/vectors/libpgm", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "hex").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    let checked = [
        "nak-list",
        "ncf",
        "odata",
        "odata-pgmcc",
        "rdata",
        "rdata-pgmcc-bad-checksum",
        "spm-fin",
        "spmr",
    ];
    assert_eq!(names, checked);
}
