//! Proof of receipt (OPT_ACK_PROOF): every data packet carries a nonce only the source can
//! compute ahead, and an ACK must carry the XOR of the nonces of the packets it acknowledges.
//! A host that did not receive the packets cannot prove it did.
//!
//! The nonces travel in clear, so a host that does receive them (a sniffer on a faster part
//! of the path) can prove receipt in another receiver's name. What it cannot do is make its
//! ACKs agree with the real receiver's, which keeps ACKing too: the source remembers what each
//! proven address acknowledged, and an address whose ACKs contradict each other (one more than
//! a bitmap behind what it acknowledged before, or reporting missing a packet it acknowledged)
//! loses its proven status for the rest of the session: its ACKs then count as unproven, and
//! pgmcc holds such an acker to `PgmccConfig::unproven_window`.

use std::net::IpAddr;

use pgm_wire::{AckRepr, Options};

use super::SenderStats;
use crate::sqn;

/// Addresses remembered as having proved receipt in an ACK: their ACKs must always carry the
/// proof from then on.
const PROVEN_ACKERS: usize = 16;
/// Addresses remembered as having contradicted themselves.
const DISCREDITED: usize = 16;
/// Packets of receipt remembered per proven address, below the highest it acknowledged.
const WINDOW: u32 = 64;
/// Sequence numbers one ACK's bitmap covers, RX_MAX included.
const BITMAP: u32 = 32;

/// The nonce of data packet `sqn` under `key` (OPT_ACK_PROOF).
pub fn ack_nonce(key: &[u8; 16], sqn: u32) -> u32 {
    use core::hash::Hasher;
    let mut h = siphasher::sip::SipHasher24::new_with_key(key);
    h.write(&sqn.to_be_bytes());
    h.finish() as u32
}

/// The proof an ACK for `rx_max` and `bitmap` must carry: the XOR of the nonces of RX_MAX
/// and of every packet whose bit is set (bit k: RX_MAX - k).
pub fn ack_proof_for(rx_max: u32, bitmap: u32, nonce: impl Fn(u32) -> u32) -> u32 {
    (0..32)
        .filter(|k| bitmap & (1 << k) != 0 || *k == 0)
        .fold(0, |x, k| x ^ nonce(rx_max.wrapping_sub(k)))
}

/// What one proven address has acknowledged.
#[derive(Debug, Clone, Copy)]
struct Receipt {
    addr: IpAddr,
    /// The highest RX_MAX it acknowledged.
    rx_max: u32,
    /// Bit k: it acknowledged `rx_max - k`.
    seen: u64,
}

impl Receipt {
    /// Whether an ACK for `rx_max` and `bitmap` contradicts what this address acknowledged
    /// before: one more than a bitmap behind, or a packet acknowledged before now reported
    /// missing. An ACK a little behind (reordered on the way) is judged only where it can be:
    /// it may show missing what arrived since.
    fn contradicts(&self, rx_max: u32, bitmap: u32) -> bool {
        let behind = sqn::distance(rx_max, self.rx_max);
        if sqn::lt(rx_max, self.rx_max) {
            return behind >= BITMAP;
        }
        (1..BITMAP).any(|k| {
            let s = rx_max.wrapping_sub(k);
            let d = sqn::distance(s, self.rx_max);
            let missing = bitmap & (1 << k) == 0;
            missing && sqn::le(s, self.rx_max) && d < WINDOW && self.seen & (1 << d) != 0
        })
    }

    /// Adds what an ACK for `rx_max` and `bitmap` acknowledges.
    fn note(&mut self, rx_max: u32, bitmap: u32) {
        let bits = u64::from(bitmap | 1);
        if sqn::gt(rx_max, self.rx_max) {
            let shift = sqn::distance(self.rx_max, rx_max);
            self.seen = if shift >= WINDOW {
                0
            } else {
                self.seen << shift
            };
            self.seen |= bits;
            self.rx_max = rx_max;
        } else {
            let offset = sqn::distance(rx_max, self.rx_max);
            if offset < WINDOW {
                self.seen |= bits << offset;
            }
        }
    }
}

/// The proven addresses and the discredited ones.
#[derive(Debug, Default)]
pub(super) struct Proofs {
    /// Addresses that sent an ACK with a valid proof of receipt (newest last).
    proven: Vec<Receipt>,
    /// Addresses whose ACKs contradicted each other (newest last).
    discredited: Vec<IpAddr>,
}

impl Proofs {
    /// Checks an ACK's proof of receipt under `key`. `None`: refused (a wrong proof, or none
    /// from an address that proved itself before), counted. `Some(proven)` otherwise; without
    /// a proof key every ACK counts as proven.
    pub(super) fn check(
        &mut self,
        key: Option<[u8; 16]>,
        from: IpAddr,
        ack: &AckRepr,
        options: &Options<'_>,
        stats: &mut SenderStats,
    ) -> Option<bool> {
        let Some(key) = key else {
            return Some(true);
        };
        let known = self.proven.iter().position(|r| r.addr == from);
        match options.ack_proof {
            Some(p) => {
                if p.value != ack_proof_for(ack.rx_max, ack.bitmap, |s| ack_nonce(&key, s)) {
                    stats.acks_proof_failed += 1;
                    return None;
                }
                if self.discredited.contains(&from) {
                    stats.acks_unproven += 1;
                    return Some(false);
                }
                match known {
                    Some(i) if self.proven[i].contradicts(ack.rx_max, ack.bitmap) => {
                        // Two streams of ACKs in one name: neither is believed any more.
                        self.proven.remove(i);
                        if self.discredited.len() >= DISCREDITED {
                            self.discredited.remove(0);
                        }
                        self.discredited.push(from);
                        stats.ackers_discredited += 1;
                        stats.acks_unproven += 1;
                        Some(false)
                    }
                    Some(i) => {
                        self.proven[i].note(ack.rx_max, ack.bitmap);
                        Some(true)
                    }
                    None => {
                        if self.proven.len() >= PROVEN_ACKERS {
                            self.proven.remove(0);
                        }
                        let mut r = Receipt {
                            addr: from,
                            rx_max: ack.rx_max,
                            seen: 0,
                        };
                        r.note(ack.rx_max, ack.bitmap);
                        self.proven.push(r);
                        Some(true)
                    }
                }
            }
            None if known.is_some() => {
                stats.acks_proof_failed += 1;
                None
            }
            None => {
                stats.acks_unproven += 1;
                Some(false)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    const KEY: [u8; 16] = [9; 16];

    /// Checks an ACK for `rx_max` with `bitmap` and its valid proof, from `from`.
    fn ack(
        p: &mut Proofs,
        st: &mut SenderStats,
        from: &str,
        rx_max: u32,
        bitmap: u32,
    ) -> Option<bool> {
        let options = Options {
            ack_proof: Some(pgm_wire::AckProof {
                value: ack_proof_for(rx_max, bitmap, |s| ack_nonce(&KEY, s)),
            }),
            ..Options::default()
        };
        let a = AckRepr { rx_max, bitmap };
        p.check(Some(KEY), from.parse().unwrap(), &a, &options, st)
    }

    /// Bit k set for every k except `lost` (offsets below RX_MAX; those beyond the bitmap
    /// change nothing).
    fn bits_but(lost: &[u32]) -> u32 {
        lost.iter()
            .filter(|k| **k < 32)
            .fold(u32::MAX, |b, k| b & !(1 << k))
    }

    #[test]
    fn an_honest_acker_with_losses_and_a_reordered_ack_stays_proven() {
        let (mut p, mut st) = (Proofs::default(), SenderStats::default());
        // Packet 97 lost for good: every later ACK shows it missing, as the first did.
        for rx_max in 100..200u32 {
            assert_eq!(
                ack(
                    &mut p,
                    &mut st,
                    "10.0.0.2",
                    rx_max,
                    bits_but(&[rx_max - 97])
                ),
                Some(true),
                "{rx_max}"
            );
            if rx_max % 10 == 0 {
                // An ACK overtaken on the way: a little behind, older bits.
                let old = rx_max - 2;
                assert_eq!(
                    ack(&mut p, &mut st, "10.0.0.2", old, bits_but(&[old - 97])),
                    Some(true)
                );
            }
        }
        assert_eq!(st.ackers_discredited, 0);
    }

    #[test]
    fn acks_of_two_streams_in_one_name_lose_the_proven_status() {
        // A sniffer on a faster path proves receipt of everything in the acker's name, far
        // ahead of the real acker, which ACKs too.
        let (mut p, mut st) = (Proofs::default(), SenderStats::default());
        for rx_max in 100..200u32 {
            assert_eq!(
                ack(&mut p, &mut st, "10.0.0.2", rx_max, u32::MAX),
                Some(true)
            );
        }
        assert_eq!(
            ack(&mut p, &mut st, "10.0.0.2", 150, bits_but(&[4])),
            Some(false)
        );
        assert_eq!(st.ackers_discredited, 1);
        // From then on, valid proofs from that address count as unproven.
        assert_eq!(ack(&mut p, &mut st, "10.0.0.2", 201, u32::MAX), Some(false));
        // Another address is not concerned.
        assert_eq!(ack(&mut p, &mut st, "10.0.0.3", 201, u32::MAX), Some(true));
    }

    #[test]
    fn a_packet_acknowledged_then_reported_missing_is_a_contradiction() {
        let (mut p, mut st) = (Proofs::default(), SenderStats::default());
        assert_eq!(ack(&mut p, &mut st, "10.0.0.2", 100, u32::MAX), Some(true));
        // A newer ACK that shows 99 (acknowledged above) missing.
        assert_eq!(
            ack(&mut p, &mut st, "10.0.0.2", 105, bits_but(&[6])),
            Some(false)
        );
        assert_eq!(st.ackers_discredited, 1);
    }
}
