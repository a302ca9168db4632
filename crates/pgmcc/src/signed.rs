//! Signed mode: data the receivers can verify came from the source (`docs/security.md`).
//!
//! The source groups its data packets into blocks and sends, in the sequence number just
//! before each block, a **digest list**: one 16-byte digest per data packet of the block,
//! signed with the source's private key. A receiver holding the source's public key
//! verifies the list's signature, then each data packet against its digest, in the receive
//! window and before anything is delivered:
//!
//! - a packet whose list is known is checked when it arrives: a forged one is dropped and
//!   its sequence number stays missing, so the genuine one is still NAKed and accepted;
//! - a packet that arrived before its list waits, unverified; when the list verifies, the
//!   packets that do not match it go back to missing (NAKed again);
//! - a packet that reaches the front of the window unverified (its list never verified, or
//!   a forged packet sits where a list should be) is asked for again at most
//!   [`REVERIFY_TRIES`] times, then given up like a lost one.
//!
//! Lists travel as ordinary data packets (repaired, rebuilt from parity, ordered like any
//! other) whose payload starts with [`LIST_MAGIC`]; a payload is a list only if its
//! signature verifies at its own sequence number in its own session. The last list of a
//! session carries [`LIST_END`]: a receiver counts a session complete only when that signed
//! end is delivered, never on an OPT_FIN alone. The end list covers no packets and carries
//! the source's manifest ([`LIST_MANIFEST`]: name, size, mode, time, tree flag and the whole
//! stream's SHA-256, as OPT_MANIFEST has them on the SPMs, where nothing signs them), so a
//! receiver trusting the key takes those from the signature, not from the SPMs. Each list names the previous list's sequence
//! number, so a receiver that joined mid-block can tell the packets before its first list
//! are unverifiable (their list precedes the window) without asking for them.
//!
//! Lists are chained so that a forged list costs a receiver a digest, not a signature check:
//! each list reveals a key of its own ([`Signer::chain_key`], secret until sent) and commits
//! to the next list's key ([`commitment`]). Where a verified list says the next one is, a
//! candidate whose key does not match the commitment is dropped before any signature check;
//! where a verified list names its previous one, a candidate must commit to that list's key.
//! Only a host that heard the genuine list can pass that test, and the genuine list then
//! came too unless it was lost. Signature checks that fail still draw on a budget per
//! session ([`VERIFY_FAIL_RATE`]): a session's first list, which nothing precedes, has no
//! commitment to be checked against.
//!
//! A block never splits an APDU (its fragments stay in consecutive sequence numbers, as PGM
//! requires), so an APDU larger than one block's worth of packets cannot be sent signed.
//!
//! The core holds no cryptography: the digest and the signature come from a [`Signer`] or a
//! [`Verifier`] the driver provides (`pgmcc-net` uses Ed25519 and SHA-256).

use std::fmt;

use pgm_wire::{Fragment, Tsi};
use serde::Serialize;

/// First bytes of a digest list's payload.
pub const LIST_MAGIC: [u8; 4] = *b"PGMS";
/// Format version of the list.
pub const LIST_VERSION: u8 = 2;
/// Flag: the last list of the session; the session ends after the packets it covers.
pub const LIST_END: u8 = 0x01;
/// Flag: the source's manifest follows the digests (a u16 length, then an option area
/// holding OPT_MANIFEST, as `pgm_wire::Options::emit` writes it).
pub const LIST_MANIFEST: u8 = 0x02;
/// Longest manifest area a list carries (OPT_MANIFEST's largest is 217 bytes).
const MAX_MANIFEST_AREA: usize = 256;
/// Bytes of one data packet's digest.
pub const DIGEST_LEN: usize = 16;
/// Bytes of a signature (Ed25519).
pub const SIGNATURE_LEN: usize = 64;
/// Bytes of a list's chain key, and of its commitment to the next list's.
pub const KEY_LEN: usize = 16;
/// Bytes before the digests: magic, version, flags, count (u16), previous list (u32), the
/// signer's clock (u64, Unix milliseconds; 0 when it has none), the list's key, the
/// commitment to the next list's key.
pub const LIST_HEADER_LEN: usize = 20 + 2 * KEY_LEN;
/// Most packets one list covers, whatever the TPDU size.
pub const MAX_BLOCK: usize = 128;
/// Times a packet that reaches the front of the window unverified is asked for again.
pub const REVERIFY_TRIES: u8 = 2;
/// Signature verifications that may fail in a session at once: the budget's bucket.
pub const VERIFY_FAIL_BURST: u32 = 64;
/// Signature verifications that may fail in a session per second, once its
/// [`VERIFY_FAIL_BURST`] is spent (an Ed25519 check costs about 45 us: at most about 4.5% of
/// a core per session). A list-shaped packet that would need a check beyond it is dropped
/// unchecked (`SignedCounts::unchecked`) and its sequence number stays missing.
pub const VERIFY_FAIL_RATE: u32 = 1000;

/// What signs and what the signature covers is fixed by this domain string.
const LIST_DOMAIN: &[u8] = b"pgmcc signed digest list v2\0";
/// Domain of the commitment to a list's key.
const COMMIT_DOMAIN: &[u8] = b"pgmcc list key commitment v1\0";
/// Domain of the chain keys derived from a signing key.
const CHAIN_KEY_DOMAIN: &[u8] = b"pgmcc list chain key v1\0";

/// A list's chain key, or a commitment to one.
pub type ChainKey = [u8; KEY_LEN];

/// A data packet's digest.
pub type Digest = [u8; DIGEST_LEN];

/// The source's side: digests of data packets and signatures of lists.
pub trait Signer: Send + Sync + fmt::Debug {
    /// The digest of the concatenation of `parts` (truncated to [`DIGEST_LEN`]).
    fn digest(&self, parts: &[&[u8]]) -> Digest;
    /// The signature of `message`.
    fn sign(&self, message: &[u8]) -> [u8; SIGNATURE_LEN];
    /// The key of list `sqn` in session `tsi`: unpredictable to anyone without the secret
    /// key until the list is sent (a keyed function of the secret, the session and `sqn`).
    fn chain_key(&self, tsi: Tsi, sqn: u32) -> ChainKey;
    /// The wall-clock time to stamp a list with, in Unix milliseconds; 0 for none. The core
    /// never reads a clock: a driver that has one says so here (`pgmcc-net` does).
    fn unix_ms(&self) -> u64 {
        0
    }
}

/// A receiver's side: the same digest, and the source's signatures checked.
pub trait Verifier: Send + Sync + fmt::Debug {
    /// The digest of the concatenation of `parts`, as [`Signer::digest`] computes it.
    fn digest(&self, parts: &[&[u8]]) -> Digest;
    /// Whether `signature` is the source's signature of `message`.
    fn verify(&self, message: &[u8], signature: &[u8; SIGNATURE_LEN]) -> bool;
    /// Whether a session whose first list was stamped `unix_ms` is recent enough to follow:
    /// a recording of an earlier signed session, played back, must not pass for a new one.
    /// Only the first list a receiver verifies in a session is judged. Default: any time.
    fn fresh(&self, unix_ms: u64) -> Freshness {
        let _ = unix_ms;
        Freshness::Fresh
    }
}

/// How the signed time of a session's first list stands against the receiver's clock
/// ([`Verifier::fresh`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Recent enough: the session is followed.
    Fresh,
    /// Too far from the receiver's clock (a replay, or clocks out of step).
    Skewed,
    /// Signed well before the receiver started: a recording of an earlier session played
    /// back, although within the clock skew allowed.
    BeforeStart,
}

/// The commitment to chain key `key`, which the list before carries: the first
/// [`KEY_LEN`] bytes of `digest` (the Signer's or Verifier's) over a domain and the key.
pub fn commitment(digest: impl Fn(&[&[u8]]) -> Digest, key: &ChainKey) -> ChainKey {
    let d = digest(&[COMMIT_DOMAIN, key]);
    let mut c = [0u8; KEY_LEN];
    c.copy_from_slice(&d[..KEY_LEN]);
    c
}

/// The key and the commitment a list-shaped payload carries, read without any check.
pub fn list_links(payload: &[u8]) -> Option<(ChainKey, ChainKey)> {
    list_shape(payload)?;
    let mut key = [0u8; KEY_LEN];
    let mut next = [0u8; KEY_LEN];
    key.copy_from_slice(payload.get(20..20 + KEY_LEN)?);
    next.copy_from_slice(payload.get(20 + KEY_LEN..20 + 2 * KEY_LEN)?);
    Some((key, next))
}

/// How many data packets one list covers when the payload holds at most `tsdu` bytes.
pub fn block_capacity(tsdu: usize) -> usize {
    (tsdu.saturating_sub(LIST_HEADER_LEN + SIGNATURE_LEN) / DIGEST_LEN).min(MAX_BLOCK)
}

/// The digest of data packet `sqn`: its sequence number, its place in its APDU and its
/// payload.
pub fn packet_digest(
    digest: impl Fn(&[&[u8]]) -> Digest,
    sqn: u32,
    fragment: Option<Fragment>,
    payload: &[u8],
) -> Digest {
    let mut place = [0u8; 17];
    place[..4].copy_from_slice(&sqn.to_be_bytes());
    if let Some(f) = fragment {
        place[4] = 1;
        place[5..9].copy_from_slice(&f.first_sqn.to_be_bytes());
        place[9..13].copy_from_slice(&f.offset.to_be_bytes());
        place[13..17].copy_from_slice(&f.apdu_len.to_be_bytes());
    }
    digest(&[&place, payload])
}

/// A verified digest list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List {
    /// The sequence number of the previous list (its own for the session's first).
    pub prev: u32,
    /// The last list of the session.
    pub end: bool,
    /// The signer's clock when it signed, in Unix milliseconds (0: none).
    pub unix_ms: u64,
    /// This list's chain key, revealed ([`Signer::chain_key`]).
    pub key: ChainKey,
    /// The commitment to the next list's key ([`commitment`]); zeros in the end list.
    pub next: ChainKey,
    /// Digests of the packets that follow the list, in order.
    pub digests: Vec<Digest>,
    /// The source's manifest, signed with the list (the end list carries it).
    pub manifest: Option<pgm_wire::Manifest>,
}

/// The option area holding `m` alone, or nothing if it cannot be written (it always can:
/// OPT_MANIFEST is at most 217 bytes).
fn manifest_area(m: &pgm_wire::Manifest) -> Option<Vec<u8>> {
    let o = pgm_wire::Options {
        manifest: Some(m.clone()),
        ..pgm_wire::Options::default()
    };
    let mut buf = vec![0u8; MAX_MANIFEST_AREA];
    let n = o.emit(&mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// The bytes a list's signature covers: the domain, the session, the list's sequence
/// number and the list without its signature.
fn signed_message(tsi: Tsi, sqn: u32, body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(LIST_DOMAIN.len() + 12 + body.len());
    m.extend_from_slice(LIST_DOMAIN);
    m.extend_from_slice(&tsi.gsi.0);
    m.extend_from_slice(&tsi.sport.to_be_bytes());
    m.extend_from_slice(&sqn.to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// The payload of list `sqn` in session `tsi`, signed.
pub fn encode_list(signer: &dyn Signer, tsi: Tsi, sqn: u32, list: &List) -> Vec<u8> {
    let n = list.digests.len().min(usize::from(u16::MAX));
    let area = list.manifest.as_ref().and_then(manifest_area);
    let mut p = Vec::with_capacity(LIST_HEADER_LEN + n * DIGEST_LEN + 2 + 256 + SIGNATURE_LEN);
    p.extend_from_slice(&LIST_MAGIC);
    p.push(LIST_VERSION);
    let mut flags = if list.end { LIST_END } else { 0 };
    if area.is_some() {
        flags |= LIST_MANIFEST;
    }
    p.push(flags);
    p.extend_from_slice(&(n as u16).to_be_bytes());
    p.extend_from_slice(&list.prev.to_be_bytes());
    p.extend_from_slice(&list.unix_ms.to_be_bytes());
    p.extend_from_slice(&list.key);
    p.extend_from_slice(&list.next);
    for d in &list.digests[..n] {
        p.extend_from_slice(d);
    }
    if let Some(a) = &area {
        p.extend_from_slice(&(a.len() as u16).to_be_bytes());
        p.extend_from_slice(a);
    }
    let sig = signer.sign(&signed_message(tsi, sqn, &p));
    p.extend_from_slice(&sig);
    p
}

/// Whether a payload has a list's shape (magic, version and length); only a signature that
/// verifies makes it one.
pub fn looks_like_list(payload: &[u8]) -> bool {
    list_shape(payload).is_some()
}

/// The digest count of a payload shaped like a list, and the length of its manifest area
/// (0 without one).
fn list_shape(payload: &[u8]) -> Option<(usize, usize)> {
    if payload.len() < LIST_HEADER_LEN + SIGNATURE_LEN
        || payload[..4] != LIST_MAGIC
        || payload[4] != LIST_VERSION
    {
        return None;
    }
    let n = usize::from(u16::from_be_bytes([payload[6], payload[7]]));
    let digests_end = LIST_HEADER_LEN + n * DIGEST_LEN;
    let area = if payload[5] & LIST_MANIFEST != 0 {
        let len = payload.get(digests_end..digests_end + 2)?;
        2 + usize::from(u16::from_be_bytes([len[0], len[1]]))
    } else {
        0
    };
    (payload.len() == digests_end + area + SIGNATURE_LEN).then_some((n, area))
}

/// The list in `payload`, if it is one and its signature verifies as list `sqn` of session
/// `tsi`.
pub fn open_list(verifier: &dyn Verifier, tsi: Tsi, sqn: u32, payload: &[u8]) -> Option<List> {
    let (n, area) = list_shape(payload)?;
    let (body, sig) = payload.split_at(payload.len() - SIGNATURE_LEN);
    let sig: &[u8; SIGNATURE_LEN] = sig.try_into().ok()?;
    if !verifier.verify(&signed_message(tsi, sqn, body), sig) {
        return None;
    }
    let digests_end = LIST_HEADER_LEN + n * DIGEST_LEN;
    let digests = body[LIST_HEADER_LEN..digests_end]
        .chunks_exact(DIGEST_LEN)
        .filter_map(|c| c.try_into().ok())
        .collect();
    // A signed area that does not parse as a manifest: the list stands, without one.
    let manifest = (area > 2)
        .then(|| body.get(digests_end + 2..digests_end + area))
        .flatten()
        .and_then(|a| pgm_wire::Options::parse(a).ok())
        .and_then(|(o, _)| o.manifest);
    let mut ms = [0u8; 8];
    ms.copy_from_slice(&body[12..20]);
    let (key, next) = list_links(payload)?;
    Some(List {
        prev: u32::from_be_bytes([body[8], body[9], body[10], body[11]]),
        end: body[5] & LIST_END != 0,
        unix_ms: u64::from_be_bytes(ms),
        key,
        next,
        digests,
        manifest,
    })
}

/// Signed-mode counters of a receiver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SignedCounts {
    /// Digest lists whose signature verified.
    pub lists: u64,
    /// Packets dropped on arrival: they do not match their list's digest, or sit where a
    /// list should be without a valid signature, or lie beyond the signed end.
    pub forged: u64,
    /// Packets found not to match a list that verified after them, or that reached the
    /// front of the window unverified: asked for again.
    pub reasked: u64,
    /// Packets given up because they could not be verified (their list was lost, lies before
    /// the window, or they kept failing).
    pub unverifiable: u64,
    /// Lists refused because the session they would start was signed too long ago
    /// ([`Verifier::fresh`]): a replay of an earlier session (or clocks far apart).
    pub stale: u64,
    /// Lists refused because the session they would start was signed well before this
    /// receiver started ([`Freshness::BeforeStart`]): a recording played back.
    pub before_start: u64,
    /// List-shaped packets dropped without a signature check because the session's budget
    /// of failed checks was spent ([`VERIFY_FAIL_RATE`]).
    pub unchecked: u64,
}

impl SignedCounts {
    /// Adds `other` to these counts.
    pub fn add(&mut self, other: &SignedCounts) {
        self.lists += other.lists;
        self.forged += other.forged;
        self.reasked += other.reasked;
        self.unverifiable += other.unverifiable;
        self.stale += other.stale;
        self.before_start += other.before_start;
        self.unchecked += other.unchecked;
    }
}

/// SHA-256 of the parts, truncated: the digest both sides compute.
fn sha256_digest(parts: &[&[u8]]) -> Digest {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    for p in parts {
        h.update(p);
    }
    let full = h.finalize();
    let mut d = [0u8; DIGEST_LEN];
    d.copy_from_slice(&full[..DIGEST_LEN]);
    d
}

/// Ed25519 (RFC 8032) signatures, SHA-256 digests: the source's side.
impl Signer for ed25519_dalek::SigningKey {
    fn digest(&self, parts: &[&[u8]]) -> Digest {
        sha256_digest(parts)
    }
    fn sign(&self, message: &[u8]) -> [u8; SIGNATURE_LEN] {
        ed25519_dalek::Signer::sign(self, message).to_bytes()
    }
    fn chain_key(&self, tsi: Tsi, sqn: u32) -> ChainKey {
        // SHA-256 over a fixed-length input led by the secret: a keyed function.
        let d = sha256_digest(&[
            CHAIN_KEY_DOMAIN,
            self.as_bytes(),
            &tsi.gsi.0,
            &tsi.sport.to_be_bytes(),
            &sqn.to_be_bytes(),
        ]);
        let mut k = [0u8; KEY_LEN];
        k.copy_from_slice(&d[..KEY_LEN]);
        k
    }
}

/// Ed25519 (RFC 8032) signatures, SHA-256 digests: a receiver's side. Verification is
/// strict (no malleable or small-order signatures).
impl Verifier for ed25519_dalek::VerifyingKey {
    fn digest(&self, parts: &[&[u8]]) -> Digest {
        sha256_digest(parts)
    }
    fn verify(&self, message: &[u8], signature: &[u8; SIGNATURE_LEN]) -> bool {
        let sig = ed25519_dalek::Signature::from_bytes(signature);
        self.verify_strict(message, &sig).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use pgm_wire::Gsi;

    use ed25519_dalek::{SigningKey, VerifyingKey};

    use super::*;

    fn keys(seed: u8) -> (SigningKey, VerifyingKey) {
        let k = SigningKey::from_bytes(&[seed; 32]);
        let v = k.verifying_key();
        (k, v)
    }

    const TSI: Tsi = Tsi {
        gsi: Gsi([1, 2, 3, 4, 5, 6]),
        sport: 7,
    };

    #[test]
    fn a_list_opens_only_where_and_by_whom_it_was_signed() {
        let (key, public) = keys(1);
        let list = List {
            prev: 9,
            end: true,
            unix_ms: 1_795_000_000_123,
            key: [7; KEY_LEN],
            next: [8; KEY_LEN],
            digests: vec![[3; DIGEST_LEN], [4; DIGEST_LEN]],
            manifest: None,
        };
        let p = encode_list(&key, TSI, 10, &list);
        assert_eq!(p.len(), LIST_HEADER_LEN + 2 * DIGEST_LEN + SIGNATURE_LEN);
        assert!(looks_like_list(&p));
        assert_eq!(open_list(&public, TSI, 10, &p), Some(list));
        // Another sequence number, another session, another key, a flipped bit.
        assert_eq!(open_list(&public, TSI, 11, &p), None);
        let other = Tsi { sport: 8, ..TSI };
        assert_eq!(open_list(&public, other, 10, &p), None);
        assert_eq!(open_list(&keys(2).1, TSI, 10, &p), None);
        for i in 0..p.len() {
            let mut q = p.clone();
            q[i] ^= 0x10;
            assert_eq!(open_list(&public, TSI, 10, &q), None, "bit flipped at {i}");
        }
        // Truncated or padded: not a list's shape at all.
        assert!(!looks_like_list(&p[..p.len() - 1]));
        assert!(!looks_like_list(&[p.as_slice(), &[0]].concat()));
    }

    #[test]
    fn the_end_list_signs_the_manifest() {
        let (key, public) = keys(1);
        let list = List {
            prev: 9,
            end: true,
            unix_ms: 1,
            key: [7; KEY_LEN],
            next: [0; KEY_LEN],
            digests: Vec::new(),
            manifest: Some(pgm_wire::Manifest {
                size: Some(123),
                mode: 0o644,
                mtime: 1_700_000_000,
                sha256: Some([5; 32]),
                name: "site".into(),
                tree: true,
                another_pass: true,
            }),
        };
        let p = encode_list(&key, TSI, 10, &list);
        assert!(looks_like_list(&p));
        assert_eq!(open_list(&public, TSI, 10, &p), Some(list));
        // Any change to the manifest's bytes breaks the signature.
        let at = p.len() - SIGNATURE_LEN - 10;
        let mut q = p.clone();
        q[at] ^= 1;
        assert_eq!(open_list(&public, TSI, 10, &q), None);
        // A length that does not add up is not a list.
        let mut r = p.clone();
        r[LIST_HEADER_LEN + 1] ^= 1;
        assert!(!looks_like_list(&r));
    }

    #[test]
    fn a_digest_binds_the_sequence_number_the_fragment_and_the_payload() {
        let (key, public) = keys(1);
        let d = |s, f, p: &[u8]| packet_digest(|parts| Signer::digest(&key, parts), s, f, p);
        let v = |s, f, p: &[u8]| packet_digest(|parts| Verifier::digest(&public, parts), s, f, p);
        let f = Fragment {
            first_sqn: 1,
            offset: 0,
            apdu_len: 10,
        };
        let base = d(1, Some(f), b"hello");
        assert_ne!(base, d(2, Some(f), b"hello"));
        assert_ne!(base, d(1, None, b"hello"));
        assert_ne!(base, d(1, Some(Fragment { offset: 5, ..f }), b"hello"));
        assert_ne!(base, d(1, Some(f), b"hellp"));
        assert_eq!(base, v(1, Some(f), b"hello"));
    }

    #[test]
    fn block_capacity_fits_a_list_in_one_packet() {
        for tsdu in [0, 100, 500, 1400, 9000] {
            let n = block_capacity(tsdu);
            assert!(n <= MAX_BLOCK);
            if n > 0 {
                assert!(LIST_HEADER_LEN + n * DIGEST_LEN + SIGNATURE_LEN <= tsdu);
            }
        }
        assert_eq!(block_capacity(1400), 80);
        assert_eq!(block_capacity(1340), 76);
    }

    #[test]
    fn chain_keys_are_the_secrets_and_commitments_bind_them() {
        let (key, public) = keys(1);
        let k = key.chain_key(TSI, 10);
        assert_eq!(k, key.chain_key(TSI, 10));
        assert_ne!(k, key.chain_key(TSI, 11));
        assert_ne!(k, key.chain_key(Tsi { sport: 8, ..TSI }, 10));
        assert_ne!(k, keys(2).0.chain_key(TSI, 10));
        let c = commitment(|p| Signer::digest(&key, p), &k);
        assert_eq!(c, commitment(|p| Verifier::digest(&public, p), &k));
        assert_ne!(c, k);
    }
}
