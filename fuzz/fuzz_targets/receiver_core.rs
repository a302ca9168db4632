//! Fuzzes a real `Sender` -> `Receiver` session on a hostile path.
//!
//! The input is read as a sequence of operations (structure-aware, with `arbitrary`'s
//! `Unstructured`): advance time, the application sends an APDU, deliver / drop / duplicate
//! one of the sender's packets in flight (any order: reordering), deliver the receiver's
//! feedback (NAK, SPMR, ACK) to the sender, inject arbitrary bytes from an arbitrary address
//! into either side, inject a mutated copy of a genuine packet.
//!
//! Invariants: nothing panics; every packet the sender emits parses; and the receiver never
//! delivers data that differs from what the sender was given: for the sender's session its
//! APDUs are, in order, exactly the APDUs sent, skipping only where it reported
//! `Unrecoverable` (or before its first event: a late join). Injected packets that parse as
//! the sender's own session are forgeries plain PGM cannot detect (it has no
//! authentication), so the harness injects those only into signed sessions (a third of the
//! runs: the sender signs, the receiver verifies), where the same invariant must hold with
//! forged data, lists, repairs and SPMs of the session arriving from the source's address.
#![no_main]

use std::net::{IpAddr, Ipv4Addr};

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use pgm_wire::{Gsi, Repr, Tsi};
use pgmcc::cc::pgmcc::PgmccConfig;
use pgmcc::cc::lowweight::{AcklessConfig, LowWeightConfig};
use pgmcc::cc::pseudofed::PseudofedConfig;
use pgmcc::cc::tfmcc::TfmccConfig;
use pgmcc::cc::CcConfig;
use pgmcc::{
    Duration, Instant, RateLimit, Receiver, ReceiverConfig, ReceiverEvent, Sender, SenderConfig,
};

const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const RX: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1));
const GROUP: IpAddr = IpAddr::V4(Ipv4Addr::new(239, 192, 0, 1));
const TSI: Tsi = Tsi {
    gsi: Gsi([1, 2, 3, 4, 5, 6]),
    sport: 4000,
};

/// Checks the receiver's events for `TSI` against the APDUs sent.
struct Reference {
    sent: Vec<Vec<u8>>,
    next: usize,
    gap_allowed: bool,
}

impl Reference {
    fn on_event(&mut self, ev: ReceiverEvent) {
        match ev {
            ReceiverEvent::Data { tsi, data, .. } if tsi == TSI => {
                let at = if self.gap_allowed {
                    self.sent[self.next..]
                        .iter()
                        .position(|s| *s == data)
                        .map(|i| self.next + i)
                } else {
                    (self.sent.get(self.next) == Some(&data)).then_some(self.next)
                };
                let Some(at) = at else {
                    panic!(
                        "delivered an APDU ({} bytes) that is not the next one sent (next {}, \
                         gap allowed {}, {} sent)",
                        data.len(),
                        self.next,
                        self.gap_allowed,
                        self.sent.len()
                    );
                };
                self.next = at + 1;
                self.gap_allowed = false;
            }
            ReceiverEvent::Unrecoverable { tsi, first, last } if tsi == TSI => {
                assert!(pgmcc::sqn::le(first, last), "gap {first}..{last}");
                self.gap_allowed = true;
            }
            // Another session: an injected or mutated packet that parses as a valid packet of a
            // different TSI (a mutated sport, say) is a session like any other.
            ReceiverEvent::Data { .. } | ReceiverEvent::Unrecoverable { .. } => {}
            // A session silent for `peer_expiry` is forgotten; if it comes back it is joined
            // afresh, possibly mid-stream: the next delivery may skip ahead.
            ReceiverEvent::SessionExpired { tsi } if tsi == TSI => self.gap_allowed = true,
            // A forged OPT_RST (signed runs inject the session's own packets) ends it.
            ReceiverEvent::SessionReset { tsi, .. } if tsi == TSI => self.gap_allowed = true,
            ReceiverEvent::SessionStarted { .. }
            | ReceiverEvent::SessionEnded { .. }
            | ReceiverEvent::SessionExpired { .. }
            | ReceiverEvent::SessionReset { .. }
            | ReceiverEvent::StartMissed { .. }
            | ReceiverEvent::Manifest { .. } => {}
        }
    }
}

fn addr(u: &mut Unstructured<'_>) -> Result<IpAddr> {
    Ok(IpAddr::V4(Ipv4Addr::from(u.arbitrary::<u32>()?)))
}

/// Would `bytes` be accepted as a packet of the sender's own session (an undetectable
/// forgery rather than garbage)?
fn forges_session(bytes: &[u8]) -> bool {
    Repr::parse(bytes).is_ok_and(|r| r.tsi() == TSI)
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let mut now = Instant::ZERO;
    let mut sc = SenderConfig::new(TSI, SRC, GROUP);
    let signed = u.ratio(1, 3)?;
    sc.max_tpdu = 256 + u.int_in_range(0..=256)?;
    sc.txw_sqns = u.int_in_range(4..=64)?;
    sc.cc = match u.int_in_range(0..=5)? {
        0 => CcConfig::None,
        1 => CcConfig::Pgmcc(PgmccConfig::default()),
        // TFMCC with feedback rounds: OPT_TFMCC_DATA on every ODATA drives the receiver's
        // round timers and suppression.
        2 => CcConfig::Tfmcc(TfmccConfig::default()),
        // Pseudofed: OPT_PSEUDOFED on every ODATA switches the receiver to its mode.
        3 => CcConfig::Pseudofed(PseudofedConfig::default()),
        // Low-weight: OPT_LOWWEIGHT turns ACKs off and makes the named worst a quick NAKer.
        4 => CcConfig::LowWeight(LowWeightConfig::default()),
        _ => CcConfig::PgmccAckless(AcklessConfig::default()),
    };
    if u.arbitrary()? {
        sc.rate_limit = Some(RateLimit {
            bytes_per_sec: 100_000,
            burst: 4_000,
        });
    }
    let mut rc = ReceiverConfig::new(RX, GROUP, u.arbitrary()?);
    rc.dport = sc.dport;
    rc.rxw_sqns = u.int_in_range(4..=128)?;
    rc.max_sessions = 4;
    rc.reliable = u.ratio(7, 8)?;
    if signed {
        let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        rc.verifier = Some(std::sync::Arc::new(key.verifying_key()));
        sc.signer = Some(std::sync::Arc::new(key));
    }
    let mut tx = Sender::new(sc, now);
    let mut rx = Receiver::new(rc, now);
    let mut reference = Reference {
        sent: Vec::new(),
        next: 0,
        gap_allowed: true,
    };
    let mut down: Vec<Vec<u8>> = Vec::new();
    let mut up: Vec<Vec<u8>> = Vec::new();
    let mut buf = vec![0u8; 2048];
    let mut counter = 0u32;

    for _ in 0..u.int_in_range(0..=400)? {
        if u.is_empty() {
            break;
        }
        match u.int_in_range(0..=9)? {
            0 => {
                now = now + Duration::from_millis(u.int_in_range(0..=2000)?);
                tx.handle_timeout(now);
                rx.handle_timeout(now);
            }
            1 => {
                // Every APDU is unique: a counter leads it.
                let len = u.int_in_range(0..=3000)?;
                let mut apdu = counter.to_be_bytes().to_vec();
                apdu.extend(std::iter::repeat_n(u.arbitrary::<u8>()?, len));
                if tx.send(&apdu).is_ok() {
                    reference.sent.push(apdu);
                    counter += 1;
                }
            }
            2 | 3 if !down.is_empty() => {
                let i = u.choose_index(down.len())?;
                let p = down.swap_remove(i);
                rx.handle(now, SRC, &p);
                if u.ratio(1, 8)? {
                    rx.handle(now, SRC, &p);
                }
            }
            4 if !down.is_empty() => {
                let i = u.choose_index(down.len())?;
                down.swap_remove(i); // lost
            }
            5 if !up.is_empty() => {
                let i = u.choose_index(up.len())?;
                let p = up.swap_remove(i);
                tx.handle(now, RX, &p);
            }
            6 => {
                let from = if signed && u.arbitrary()? { SRC } else { addr(u)? };
                let bytes: Vec<u8> = u.arbitrary()?;
                if signed || !forges_session(&bytes) {
                    if u.arbitrary()? {
                        rx.handle(now, from, &bytes);
                    } else {
                        tx.handle(now, from, &bytes);
                    }
                }
            }
            7 if !down.is_empty() || !up.is_empty() => {
                // A mutated genuine packet: a few bytes changed.
                let pool = if !down.is_empty() && (up.is_empty() || u.arbitrary()?) {
                    &down
                } else {
                    &up
                };
                let mut p = pool[u.choose_index(pool.len())?].clone();
                for _ in 0..u.int_in_range(1..=4)? {
                    let i = u.choose_index(p.len())?;
                    p[i] = u.arbitrary()?;
                }
                if signed || !forges_session(&p) {
                    let from = if signed && u.arbitrary()? { SRC } else { addr(u)? };
                    rx.handle(now, from, &p);
                    tx.handle(now, from, &p);
                }
            }
            8 => tx.close(),
            9 if u.ratio(1, 8)? => tx.abort(u.arbitrary()?),
            _ => {}
        }
        while let Some(t) = tx.poll_transmit(now, &mut buf) {
            let p = buf[..t.len].to_vec();
            let r = Repr::parse(&p).expect("the sender emitted a packet that does not parse");
            assert_eq!(r.tsi(), TSI);
            down.push(p);
        }
        while let Some(t) = rx.poll_transmit(now, &mut buf) {
            up.push(buf[..t.len].to_vec());
        }
        while let Some(ev) = rx.poll_event() {
            reference.on_event(ev);
        }
        while tx.poll_event().is_some() {}
        // Bounded queues: a path that never delivers must not grow the harness forever.
        down.truncate(4096);
        up.truncate(4096);
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
