//! Fuzzes a `Sender` (with or without pgmcc) fed hostile upstream traffic.
//!
//! Operations (structure-aware, from `arbitrary`'s `Unstructured`): advance time, the
//! application sends an APDU, a well-formed NAK / ACK / SPMR with arbitrary fields (sequence
//! numbers, NAK lists, pgmcc reports, bitmaps, source addresses, right or wrong TSI), or
//! arbitrary bytes from an arbitrary address.
//!
//! Invariants: nothing panics; every emitted packet parses with the session's TSI; ODATA
//! sequence numbers go up by one; RDATA repeats, byte for byte, the payload an earlier ODATA
//! carried under that sequence number; `poll_timeout` always answers once data waits.
#![no_main]

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use pgm_wire::{
    AckRepr, Body, Gsi, NakRepr, Options, PgmccFeedback, Repr, SqnList, Tsi,
};
use pgmcc::cc::pgmcc::PgmccConfig;
use pgmcc::cc::CcConfig;
use pgmcc::{Duration, Instant, RateLimit, Sender, SenderConfig};

const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const GROUP: IpAddr = IpAddr::V4(Ipv4Addr::new(239, 192, 0, 1));
const TSI: Tsi = Tsi {
    gsi: Gsi([1, 2, 3, 4, 5, 6]),
    sport: 4000,
};

fn addr(u: &mut Unstructured<'_>) -> Result<IpAddr> {
    // Mostly a few receivers (so elections and acker ACKs happen), sometimes anyone.
    Ok(if u.ratio(3, 4)? {
        IpAddr::V4(Ipv4Addr::new(10, 0, 1, u.int_in_range(1..=4)?))
    } else {
        IpAddr::V4(Ipv4Addr::from(u.arbitrary::<u32>()?))
    })
}

fn tsi(u: &mut Unstructured<'_>) -> Result<Tsi> {
    Ok(if u.ratio(7, 8)? {
        TSI
    } else {
        Tsi {
            gsi: Gsi(u.arbitrary()?),
            sport: u.arbitrary()?,
        }
    })
}

/// A sequence number near the window (most of the time) or anywhere.
fn sqn(u: &mut Unstructured<'_>, lead: u32) -> Result<u32> {
    Ok(if u.ratio(3, 4)? {
        lead.wrapping_sub(u.int_in_range(0..=80)?)
            .wrapping_add(u.int_in_range(0..=8)?)
    } else {
        u.arbitrary()?
    })
}

fn feedback(u: &mut Unstructured<'_>, from: IpAddr, now: Instant) -> Result<PgmccFeedback> {
    Ok(PgmccFeedback {
        tstamp: if u.arbitrary()? {
            now.as_millis_u32().wrapping_sub(u.int_in_range(0..=5000)?)
        } else {
            u.arbitrary()?
        },
        loss_rate: u.arbitrary()?,
        rx: if u.ratio(7, 8)? { from } else { addr(u)? },
    })
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let mut now = Instant::ZERO;
    let mut sc = SenderConfig::new(TSI, SRC, GROUP);
    sc.dport = 7500;
    sc.max_tpdu = 256 + u.int_in_range(0..=256)?;
    sc.txw_sqns = u.int_in_range(1..=64)?;
    sc.send_queue = u.int_in_range(1..=64)?;
    if u.arbitrary()? {
        // The published controller or the recommended one (pipe accounting, like-with-like
        // election, ...).
        let mut c = if u.arbitrary()? {
            PgmccConfig::default()
        } else {
            PgmccConfig::recommended()
        };
        c.unproven_window = u.int_in_range(1..=64)?;
        if u.arbitrary()? {
            c = c.with_adaptive_timeout();
        }
        sc.cc = CcConfig::Pgmcc(c);
    }
    if u.arbitrary()? {
        // Proof of receipt: fuzzed ACKs then mostly fail it, and some carry none.
        sc.ack_proof = Some(u.arbitrary()?);
    }
    if u.arbitrary()? {
        sc.rate_limit = Some(RateLimit {
            bytes_per_sec: u.int_in_range(1_000..=1_000_000)?,
            burst: u.int_in_range(0..=10_000)?,
        });
    }
    if u.arbitrary()? {
        sc.ncf_holdoff = Some(Duration::from_millis(u.int_in_range(0..=200)?));
    }
    sc.repairs = u.ratio(7, 8)?;
    let cfg_key = sc.ack_proof;
    let mut tx = Sender::new(sc, now);
    let mut buf = vec![0u8; 2048];
    let mut odata: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut last_odata: Option<u32> = None;

    for _ in 0..u.int_in_range(0..=500)? {
        if u.is_empty() {
            break;
        }
        let lead = tx.lead();
        match u.int_in_range(0..=6)? {
            0 => {
                now = now + Duration::from_millis(u.int_in_range(0..=4000)?);
                tx.handle_timeout(now);
            }
            1 => {
                let len = u.int_in_range(0..=2000)?;
                let apdu = vec![u.arbitrary::<u8>()?; len];
                let _ = tx.send(&apdu);
            }
            2 => {
                let from = addr(u)?;
                let first = sqn(u, lead)?;
                let mut list = SqnList::new();
                for _ in 0..u.int_in_range(0..=62)? {
                    let _ = list.push(sqn(u, lead)?);
                }
                let fb = if u.arbitrary()? { Some(feedback(u, from, now)?) } else { None };
                let nak = Repr::upstream(
                    tsi(u)?,
                    7500,
                    Body::Nak(NakRepr {
                        sqn: first,
                        source: if u.ratio(7, 8)? { SRC } else { addr(u)? },
                        group: GROUP,
                    }),
                )
                .with_options(Options {
                    nak_list: (!list.is_empty()).then_some(list),
                    pgmcc_feedback: fb,
                    ..Options::default()
                });
                if let Ok(bytes) = nak.to_vec() {
                    tx.handle(now, from, &bytes);
                }
            }
            3 => {
                let from = addr(u)?;
                let fb = if u.ratio(7, 8)? { Some(feedback(u, from, now)?) } else { None };
                let (rx_max, bitmap) = (sqn(u, lead)?, u.arbitrary()?);
                // No proof, a made-up one, or the right one (the key is the config's).
                let ack_proof = match (u.int_in_range(0..=2u8)?, cfg_key) {
                    (1, _) => Some(pgm_wire::AckProof { value: u.arbitrary()? }),
                    (2, Some(k)) => Some(pgm_wire::AckProof {
                        value: pgmcc::sender::ack_proof_for(rx_max, bitmap, |s| {
                            pgmcc::sender::ack_nonce(&k, s)
                        }),
                    }),
                    _ => None,
                };
                let ack = Repr::upstream(
                    tsi(u)?,
                    7500,
                    Body::Ack(AckRepr { rx_max, bitmap }),
                )
                .with_options(Options {
                    pgmcc_feedback: fb,
                    ack_proof,
                    ..Options::default()
                });
                if let Ok(bytes) = ack.to_vec() {
                    tx.handle(now, from, &bytes);
                }
            }
            4 => {
                let spmr = Repr::upstream(tsi(u)?, 7500, Body::Spmr);
                if let Ok(bytes) = spmr.to_vec() {
                    tx.handle(now, addr(u)?, &bytes);
                }
            }
            5 => {
                let bytes: Vec<u8> = u.arbitrary()?;
                tx.handle(now, addr(u)?, &bytes);
            }
            _ => tx.close(),
        }
        if tx.queued_packets() > 0 {
            assert!(tx.poll_timeout().is_some(), "data waits but no timeout");
        }
        while let Some(t) = tx.poll_transmit(now, &mut buf) {
            let r = Repr::parse(&buf[..t.len]).expect("emitted packet does not parse");
            assert_eq!(r.tsi(), TSI);
            match r.body {
                Body::Odata(d) => {
                    if let Some(prev) = last_odata {
                        assert_eq!(d.sqn, prev.wrapping_add(1), "ODATA sqns skip");
                    }
                    last_odata = Some(d.sqn);
                    odata.insert(d.sqn, r.payload.to_vec());
                    if odata.len() > 4096 {
                        odata.clear();
                    }
                }
                Body::Rdata(d) => {
                    if let Some(p) = odata.get(&d.sqn) {
                        assert_eq!(p.as_slice(), r.payload, "RDATA differs from its ODATA");
                    } else {
                        assert!(
                            last_odata.is_some_and(|l| pgmcc::sqn::le(d.sqn, l)),
                            "RDATA for a sqn never sent"
                        );
                    }
                }
                _ => {}
            }
        }
        while tx.poll_event().is_some() {}
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
