//! Keyed mode: every datagram, up and down, sealed with an AEAD under a key the group shares.
//!
//! A closed group shares one 256-bit key (a key file, [`Key::create`] / `pgmcc keygen`).
//! From it each session gets two keys of its own, one per direction, derived with HKDF-SHA256
//! from the key and the session's TSI, so a packet of one session or direction never opens as
//! another's. Each datagram is then an envelope around the whole PGM packet:
//!
//! ```text
//!  0      4   5   6        10               18                       42
//!  +------+---+---+--------+----------------+------------------------+---------------+-----+
//!  | PGMK | 1 |dir| key id | TSI (GSI,port) | nonce: unix ms (8),    | PGM packet,   | tag |
//!  |      |   |   |        |                | random (8), counter (8)| encrypted     | (16)|
//!  +------+---+---+--------+----------------+------------------------+---------------+-----+
//! ```
//!
//! XChaCha20-Poly1305 (RustCrypto's `chacha20poly1305`) encrypts the packet; the first 42
//! bytes are authenticated with it. Its 192-bit nonce is what lets every member (the source,
//! and each receiver sending NAKs and ACKs) seal under the same session key with no
//! coordination: each sealer picks 8 random bytes once and counts in the other 8, and the
//! sender's wall-clock time fills the rest. The time also bounds replays: a datagram sealed
//! more than [`MAX_SKEW`] away from the opener's clock is refused, so a recording of an earlier
//! session cannot be played to a receiver later. The key id (4 bytes derived from the key)
//! lets a receiver tell "sealed under another key" from "forged".
//!
//! What an opened datagram proves: a holder of the key sealed this PGM packet, for this
//! session and direction, within [`MAX_SKEW`] of now. What it does not: which member sealed
//! it (every member holds the key; the signed mode is for groups whose members must not be
//! able to forge the source), or that it is not a replay within the skew window (PGM's own
//! packets are idempotent there: a replayed data packet is a duplicate). docs/security.md has
//! the threat model.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use chacha20poly1305::aead::rand_core::RngCore;
use chacha20poly1305::aead::{AeadInPlace, KeyInit, OsRng};
use chacha20poly1305::{Tag, XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use pgm_wire::{Gsi, Packet, Tsi};
use serde::Serialize;
use sha2::Sha256;
use thiserror::Error;

/// The first bytes of every sealed datagram.
pub const MAGIC: [u8; 4] = *b"PGMK";
/// Envelope format version.
const VERSION: u8 = 1;
/// Bytes before the ciphertext (authenticated, in the clear).
const HEADER: usize = 42;
/// Poly1305 tag.
const TAG: usize = 16;
/// Bytes a sealed datagram is longer than the PGM packet inside it.
pub const SEAL_OVERHEAD: usize = HEADER + TAG;
/// Largest difference between the sealer's and the opener's wall clocks (and so the oldest
/// replay) that a datagram may show: 5 minutes, Kerberos's usual allowance.
pub const MAX_SKEW: std::time::Duration = std::time::Duration::from_secs(300);
/// Session keys a [`Sealer`] keeps derived (one per TSI heard with a valid seal).
const MAX_CACHED: usize = 64;
/// A receiver refuses a session whose first datagram it opens was sealed more than this
/// before the receiver started ([`Sealer::refuse_sessions_before`]): a recording of a session
/// that ran before it, played back. The slack covers clocks out of step by up to as much, and
/// receivers started a little after the source. The default of the receiver's setting
/// (`ReceiverOptions::start_slack`, `pgmcc recv --start-slack`).
pub const START_SLACK: std::time::Duration = std::time::Duration::from_secs(30);
/// Sessions a receiving [`Sealer`] remembers having judged by their start.
const MAX_JUDGED: usize = 1024;
/// HKDF salt: this scheme and version.
const SALT: &[u8] = b"pgmcc keyed mode v1";
/// First line of a key file.
const KEY_FILE_TAG: &str = "pgmcc-key-v1";

/// Which way a datagram travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the source to the group: SPM, ODATA, RDATA, NCF, POLL.
    Down,
    /// From a receiver to the source: NAK, ACK, SPMR, POLR.
    Up,
}

impl Direction {
    fn byte(self) -> u8 {
        match self {
            Direction::Down => 0,
            Direction::Up => 1,
        }
    }
}

/// Four bytes naming a key without revealing it, shown as 8 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct KeyId(pub [u8; 4]);

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// Why a key file cannot be used.
#[derive(Debug, Error)]
pub enum KeyError {
    /// Reading or writing the file failed (the cause is the error's source).
    #[error("key file {path}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Not a key file.
    #[error("key file {path}: {reason}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// Others can read the key.
    #[error("key file {path} is readable by other users (mode {mode:o}): anyone who reads it can forge the group's data; run `chmod 600 {path}`")]
    Exposed {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// The operating system gave no random bytes.
    #[error("no randomness from the operating system: {0}")]
    Random(String),
}

/// A group key: 32 secret bytes that every member of a keyed session holds.
#[derive(Clone, PartialEq, Eq)]
pub struct Key {
    bytes: [u8; 32],
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secret.
        write!(f, "Key({})", self.id())
    }
}

impl Key {
    /// A fresh key from the operating system's random source.
    pub fn generate() -> Result<Key, KeyError> {
        let mut bytes = [0u8; 32];
        OsRng
            .try_fill_bytes(&mut bytes)
            .map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(Key { bytes })
    }

    /// A key from its 32 bytes (tests, or keys kept elsewhere).
    pub fn from_bytes(bytes: [u8; 32]) -> Key {
        Key { bytes }
    }

    /// The key's public name.
    pub fn id(&self) -> KeyId {
        let mut id = [0u8; 4];
        expand(&self.bytes, b"key id", &mut id);
        KeyId(id)
    }

    /// The key file's text: a comment, then `pgmcc-key-v1 HEX`.
    pub fn to_file_text(&self) -> String {
        format!(
            "# pgmcc group key {}: whoever holds it can send and receive in keyed sessions.\n# Keep it secret (mode 0600) and copy it to members over a secure channel.\n{KEY_FILE_TAG} {}\n",
            self.id(),
            hex::encode(self.bytes)
        )
    }

    /// Parses a key file's text (`path` only names it in errors).
    pub fn parse(text: &str, path: &str) -> Result<Key, KeyError> {
        let bytes = tagged_key(text, KEY_FILE_TAG, path, "`pgmcc keygen FILE`")?;
        Ok(Key { bytes })
    }

    /// Reads a key file, refusing one that other users can read.
    pub fn load(path: &Path) -> Result<Key, KeyError> {
        let text = read_key_file(path, true)?;
        Key::parse(&text, &path.display().to_string())
    }

    /// Generates a key and writes it to a new file, mode 0600; never overwrites.
    pub fn create(path: &Path) -> Result<Key, KeyError> {
        let key = Key::generate()?;
        write_new_key_file(path, &key.to_file_text(), 0o600)?;
        Ok(key)
    }
}

/// The 32 bytes on the first non-comment line of a key file, which must read `TAG HEX`.
/// `make` says how to make a good one, for the error.
pub(crate) fn tagged_key(
    text: &str,
    tag: &str,
    path: &str,
    make: &str,
) -> Result<[u8; 32], KeyError> {
    let bad = |reason: String| KeyError::Format {
        path: path.to_string(),
        reason,
    };
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .ok_or_else(|| bad(format!("no key in it (make one with {make})")))?;
    let hex_key = line.strip_prefix(tag).map(str::trim).ok_or_else(|| {
        bad(format!(
            "not the key file expected here (its key line must start with `{tag}`; make one with {make})"
        ))
    })?;
    let raw = hex::decode(hex_key).map_err(|_| bad("the key is not hexadecimal".into()))?;
    raw.try_into()
        .map_err(|_| bad("the key must be 32 bytes (64 hex digits)".into()))
}

/// Reads a key file; with `secret`, refuses one that other users can read.
pub(crate) fn read_key_file(path: &Path, secret: bool) -> Result<String, KeyError> {
    let name = path.display().to_string();
    let io = |source| KeyError::Io {
        path: name.clone(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Exposed { path: name, mode });
        }
    }
    let _ = (meta, secret);
    std::fs::read_to_string(path).map_err(io)
}

/// Writes `text` to a new file with permission bits `mode`; never overwrites.
pub(crate) fn write_new_key_file(path: &Path, text: &str, mode: u32) -> Result<(), KeyError> {
    use std::io::Write;
    let name = path.display().to_string();
    let io = |source| KeyError::Io {
        path: name.clone(),
        source,
    };
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(mode);
    }
    let _ = mode;
    let mut f = opts.open(path).map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)
}

/// HKDF-SHA256 of the group key with this scheme's salt, expanded for `info`.
fn expand(ikm: &[u8; 32], info: &[u8], out: &mut [u8]) {
    let hk = Hkdf::<Sha256>::new(Some(SALT), ikm);
    // Fails only for outputs over 255 hash lengths; ours are at most 32 bytes.
    let _ = hk.expand(info, out);
}

fn tsi_bytes(tsi: Tsi) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..6].copy_from_slice(&tsi.gsi.0);
    b[6..].copy_from_slice(&tsi.sport.to_be_bytes());
    b
}

/// Why a datagram was not opened. Every case is counted and the datagram dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum OpenError {
    /// Not an envelope at all (no magic, wrong version, too short): an unkeyed PGM packet, or
    /// noise.
    #[error("not sealed")]
    NotSealed,
    /// Sealed under another key.
    #[error("sealed under another key ({0})")]
    OtherKey(KeyId),
    /// Sealed for the other direction (a receiver's packet replayed towards receivers, or
    /// the reverse).
    #[error("sealed for the other direction")]
    WrongDirection,
    /// The tag did not verify: forged or corrupted.
    #[error("failed authentication")]
    Forged,
    /// Authentic, but sealed more than [`MAX_SKEW`] from our clock: a replay, or clocks
    /// that disagree.
    #[error("sealed {skew_ms} ms from this host's clock (a replay, or unsynchronised clocks)")]
    Stale {
        /// Sealer's time minus ours, milliseconds.
        skew_ms: i64,
    },
    /// Authentic, but the packet inside names another session or is not a PGM packet of the
    /// envelope's direction.
    #[error("the packet inside does not match its envelope")]
    Mismatch,
    /// Authentic, of a session whose first datagram heard here was sealed more than
    /// [`START_SLACK`] before this receiver started: a recording played back.
    #[error("of a session sealed before this receiver started (a recording played back)")]
    BeforeStart,
}

/// Datagrams a [`Sealer`] refused, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KeyedStats {
    /// The id of the key this endpoint uses.
    pub key_id: Option<KeyId>,
    /// Datagrams opened.
    pub opened: u64,
    /// Not sealed at all ([`OpenError::NotSealed`]).
    pub not_sealed: u64,
    /// Sealed under another key.
    pub other_key: u64,
    /// The last other key heard, to name it in errors.
    pub other_key_id: Option<KeyId>,
    /// Sealed for the other direction.
    pub wrong_direction: u64,
    /// Failed authentication.
    pub forged: u64,
    /// Outside the clock window.
    pub stale: u64,
    /// The latest stale datagram's skew, milliseconds.
    pub stale_skew_ms: Option<i64>,
    /// Inner packet did not match the envelope.
    pub mismatched: u64,
    /// Of a session that started before this receiver did ([`OpenError::BeforeStart`]).
    pub before_start: u64,
}

impl KeyedStats {
    /// Every datagram refused.
    pub fn refused(&self) -> u64 {
        self.not_sealed
            + self.other_key
            + self.wrong_direction
            + self.forged
            + self.stale
            + self.mismatched
            + self.before_start
    }

    fn count(&mut self, e: OpenError) {
        match e {
            OpenError::NotSealed => self.not_sealed += 1,
            OpenError::OtherKey(id) => {
                self.other_key += 1;
                self.other_key_id = Some(id);
            }
            OpenError::WrongDirection => self.wrong_direction += 1,
            OpenError::Forged => self.forged += 1,
            OpenError::Stale { skew_ms } => {
                self.stale += 1;
                self.stale_skew_ms = Some(skew_ms);
            }
            OpenError::Mismatch => self.mismatched += 1,
            OpenError::BeforeStart => self.before_start += 1,
        }
    }
}

/// Seals what one endpoint sends and opens what it receives. Sans-IO: the caller passes the
/// wall-clock time (milliseconds since the Unix epoch) in.
pub struct Sealer {
    key: Key,
    id: KeyId,
    /// The direction of what this endpoint sends; it opens the other.
    sends: Direction,
    /// Session keys by TSI: (down, up).
    ciphers: HashMap<Tsi, Box<(XChaCha20Poly1305, XChaCha20Poly1305)>>,
    /// This sealer's nonce bytes 8..16, random, fixed for its life.
    instance: [u8; 8],
    /// Nonce bytes 16..24: one more per sealed datagram.
    counter: u64,
    scratch: Vec<u8>,
    stats: KeyedStats,
    /// A receiver's start and the slack (Unix ms, ms): sessions first heard sealed before
    /// the start, less the slack, are refused. `None`: every session is taken.
    since: Option<(u64, u64)>,
    /// Sessions judged by their start: whether each was taken.
    judged: HashMap<Tsi, bool>,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealer")
            .field("key", &self.id)
            .field("sends", &self.sends)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Sealer {
    /// A sealer for an endpoint that sends in direction `sends` (a source: [`Direction::Down`];
    /// a receiver: [`Direction::Up`]).
    pub fn new(key: Key, sends: Direction) -> Result<Sealer, KeyError> {
        let mut instance = [0u8; 8];
        OsRng
            .try_fill_bytes(&mut instance)
            .map_err(|e| KeyError::Random(e.to_string()))?;
        let id = key.id();
        Ok(Sealer {
            id,
            key,
            sends,
            ciphers: HashMap::new(),
            instance,
            counter: 0,
            scratch: Vec::with_capacity(65536),
            since: None,
            judged: HashMap::new(),
            stats: KeyedStats {
                key_id: Some(id),
                ..KeyedStats::default()
            },
        })
    }

    /// Makes a receiver that started at `unix_ms` refuse every session whose first datagram
    /// it opens was sealed more than [`START_SLACK`] before then: a recording of an earlier
    /// session played back within [`MAX_SKEW`] is not taken for the current one. A session
    /// joined late is sealed now, whenever it began, and is taken.
    pub fn refuse_sessions_before(&mut self, unix_ms: u64) {
        self.refuse_sessions_before_with_slack(unix_ms, START_SLACK);
    }

    /// [`Sealer::refuse_sessions_before`] with a slack of `slack` instead of [`START_SLACK`]:
    /// longer takes sessions that began longer before the receiver started, shorter narrows
    /// the window in which a recording played back passes for the current session.
    pub fn refuse_sessions_before_with_slack(&mut self, unix_ms: u64, slack: std::time::Duration) {
        let slack_ms = u64::try_from(slack.as_millis()).unwrap_or(u64::MAX);
        self.since = Some((unix_ms, slack_ms));
    }

    /// The group key's id.
    pub fn key_id(&self) -> KeyId {
        self.id
    }

    /// What was opened and refused so far.
    pub fn stats(&self) -> &KeyedStats {
        &self.stats
    }

    fn derive(&self, tsi: Tsi) -> Box<(XChaCha20Poly1305, XChaCha20Poly1305)> {
        let t = tsi_bytes(tsi);
        let mut down = [0u8; 32];
        let mut up = [0u8; 32];
        let mut info = [0u8; 12];
        info[..4].copy_from_slice(b"down");
        info[4..].copy_from_slice(&t);
        expand(&self.key.bytes, &info, &mut down);
        info[..4].copy_from_slice(b"up\0\0");
        expand(&self.key.bytes, &info, &mut up);
        Box::new((
            XChaCha20Poly1305::new(&down.into()),
            XChaCha20Poly1305::new(&up.into()),
        ))
    }

    fn cipher(&mut self, tsi: Tsi, dir: Direction) -> &XChaCha20Poly1305 {
        if !self.ciphers.contains_key(&tsi) {
            if self.ciphers.len() >= MAX_CACHED {
                self.ciphers.clear();
            }
            let c = self.derive(tsi);
            self.ciphers.insert(tsi, c);
        }
        // Just inserted if it was missing.
        half(&self.ciphers[&tsi], dir)
    }

    /// Seals the PGM packet `pgm` into `out` (replacing its contents). `None` if `pgm` is not
    /// a PGM packet of this sealer's direction (nothing is sent then).
    pub fn seal(&mut self, unix_ms: u64, pgm: &[u8], out: &mut Vec<u8>) -> Option<()> {
        let tsi = inner_tsi(pgm, self.sends)?;
        out.clear();
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(self.sends.byte());
        out.extend_from_slice(&self.id.0);
        out.extend_from_slice(&tsi_bytes(tsi));
        out.extend_from_slice(&unix_ms.to_be_bytes());
        out.extend_from_slice(&self.instance);
        out.extend_from_slice(&self.counter.to_be_bytes());
        self.counter = self.counter.wrapping_add(1);
        out.extend_from_slice(pgm);
        let (header, body) = out.split_at_mut(HEADER);
        let nonce = *XNonce::from_slice(&header[18..42]);
        let dir = self.sends;
        let tag = self
            .cipher(tsi, dir)
            .encrypt_in_place_detached(&nonce, header, body)
            .ok()?;
        out.extend_from_slice(&tag);
        Some(())
    }

    /// Opens a received datagram: the PGM packet inside, or why not (counted in
    /// [`Sealer::stats`]).
    pub fn open(&mut self, unix_ms: u64, datagram: &[u8]) -> Result<&[u8], OpenError> {
        match self.try_open(unix_ms, datagram) {
            Ok(()) => {
                self.stats.opened += 1;
                Ok(&self.scratch)
            }
            Err(e) => {
                self.stats.count(e);
                Err(e)
            }
        }
    }

    fn try_open(&mut self, unix_ms: u64, datagram: &[u8]) -> Result<(), OpenError> {
        let expected = match self.sends {
            Direction::Down => Direction::Up,
            Direction::Up => Direction::Down,
        };
        if datagram.len() < SEAL_OVERHEAD
            || datagram.get(..4) != Some(&MAGIC[..])
            || datagram.get(4) != Some(&VERSION)
        {
            return Err(OpenError::NotSealed);
        }
        let (header, rest) = datagram.split_at(HEADER);
        let (body, tag) = rest.split_at(rest.len() - TAG);
        if header[6..10] != self.id.0 {
            let mut other = [0u8; 4];
            other.copy_from_slice(&header[6..10]);
            return Err(OpenError::OtherKey(KeyId(other)));
        }
        if header[5] != expected.byte() {
            return Err(OpenError::WrongDirection);
        }
        let mut gsi = [0u8; 6];
        gsi.copy_from_slice(&header[10..16]);
        let tsi = Tsi {
            gsi: Gsi(gsi),
            sport: u16::from_be_bytes([header[16], header[17]]),
        };
        let nonce = *XNonce::from_slice(&header[18..42]);
        let tag = *Tag::from_slice(tag);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend_from_slice(body);
        // Derive without caching: only a session whose datagram authenticates gets a slot.
        let ok = match self.ciphers.get(&tsi) {
            Some(pair) => half(pair, expected)
                .decrypt_in_place_detached(&nonce, header, &mut scratch, &tag)
                .is_ok(),
            None => {
                let pair = self.derive(tsi);
                let ok = half(&pair, expected)
                    .decrypt_in_place_detached(&nonce, header, &mut scratch, &tag)
                    .is_ok();
                if ok {
                    if self.ciphers.len() >= MAX_CACHED {
                        self.ciphers.clear();
                    }
                    self.ciphers.insert(tsi, pair);
                }
                ok
            }
        };
        self.scratch = scratch;
        if !ok {
            return Err(OpenError::Forged);
        }
        let mut t = [0u8; 8];
        t.copy_from_slice(&header[18..26]);
        let sealed_at = u64::from_be_bytes(t);
        let skew_ms = (i128::from(sealed_at) - i128::from(unix_ms))
            .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        if skew_ms.unsigned_abs() > MAX_SKEW.as_millis() as u64 {
            return Err(OpenError::Stale { skew_ms });
        }
        if inner_tsi(&self.scratch, expected) != Some(tsi) {
            return Err(OpenError::Mismatch);
        }
        if let Some((since, slack)) = self.since {
            let taken = match self.judged.get(&tsi) {
                Some(&taken) => taken,
                None => {
                    let taken = sealed_at.saturating_add(slack) >= since;
                    if self.judged.len() >= MAX_JUDGED {
                        self.judged.clear();
                    }
                    self.judged.insert(tsi, taken);
                    taken
                }
            };
            if !taken {
                return Err(OpenError::BeforeStart);
            }
        }
        Ok(())
    }
}

/// A session's cipher for direction `dir`, of its (down, up) pair.
fn half(pair: &(XChaCha20Poly1305, XChaCha20Poly1305), dir: Direction) -> &XChaCha20Poly1305 {
    match dir {
        Direction::Down => &pair.0,
        Direction::Up => &pair.1,
    }
}

/// The TSI of a PGM packet travelling in `dir`; `None` if it is not one.
fn inner_tsi(pgm: &[u8], dir: Direction) -> Option<Tsi> {
    let p = Packet::new_checked(pgm).ok()?;
    let upstream = p.packet_type().ok()?.is_upstream();
    if upstream != (dir == Direction::Up) {
        return None;
    }
    p.tsi().ok()
}

/// What a runtime driver puts between its socket and its core: in keyed mode a [`Sealer`]
/// (every datagram sealed on the way out and opened on the way in), otherwise nothing but a
/// count of sealed datagrams heard without a key (a peer in keyed mode).
pub(crate) struct Envelope {
    sealer: Option<Sealer>,
    /// The sealed datagram being sent.
    out: Vec<u8>,
    sealed_without_key: u64,
}

impl Envelope {
    /// Keyed with `key` for an endpoint sending in direction `sends`, or plain. A receiver
    /// refuses sessions that began more than [`START_SLACK`] before now.
    pub(crate) fn new(key: Option<Key>, sends: Direction) -> Result<Envelope, crate::Error> {
        Envelope::with_start_slack(key, sends, START_SLACK)
    }

    /// [`Envelope::new`], a receiver refusing sessions that began more than `start_slack`
    /// before now.
    pub(crate) fn with_start_slack(
        key: Option<Key>,
        sends: Direction,
        start_slack: std::time::Duration,
    ) -> Result<Envelope, crate::Error> {
        let mut sealer = key
            .map(|k| Sealer::new(k, sends))
            .transpose()
            .map_err(|e| crate::Error::Io {
                context: "setting up keyed mode".into(),
                source: std::io::Error::other(e.to_string()),
            })?;
        if let (Some(s), Direction::Up) = (sealer.as_mut(), sends) {
            // A receiver: no session recorded before it started is taken for a current one.
            s.refuse_sessions_before_with_slack(unix_ms(), start_slack);
        }
        Ok(Envelope {
            sealer,
            out: Vec::with_capacity(65536),
            sealed_without_key: 0,
        })
    }

    /// Whether datagrams are sealed.
    pub(crate) fn is_keyed(&self) -> bool {
        self.sealer.is_some()
    }

    /// The PGM packet to hand the core, if any: `pgm` itself when plain; when keyed, what
    /// opens (refusals are counted by the sealer), so nothing unauthenticated reaches it.
    pub(crate) fn open<'a>(&'a mut self, pgm: &'a [u8]) -> Option<&'a [u8]> {
        match self.sealer.as_mut() {
            Some(s) => s.open(unix_ms(), pgm).ok(),
            None => {
                if pgm.starts_with(&MAGIC) {
                    self.sealed_without_key += 1;
                }
                Some(pgm)
            }
        }
    }

    /// The datagram to send for `pgm`: itself when plain, sealed when keyed; `None` if it
    /// cannot be sealed (not a PGM packet of this endpoint's direction).
    pub(crate) fn seal<'a>(&'a mut self, pgm: &'a [u8]) -> Option<&'a [u8]> {
        match self.sealer.as_mut() {
            Some(s) => {
                s.seal(unix_ms(), pgm, &mut self.out)?;
                Some(&self.out)
            }
            None => Some(pgm),
        }
    }

    /// Keyed mode's counters.
    pub(crate) fn stats(&self) -> Option<KeyedStats> {
        self.sealer.as_ref().map(|s| s.stats().clone())
    }

    /// Sealed datagrams heard while not keyed.
    pub(crate) fn sealed_without_key(&self) -> u64 {
        self.sealed_without_key
    }
}

/// Milliseconds since the Unix epoch by this host's clock (0 if it is set before 1970).
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;
    use pgm_wire::{Body, DataRepr, NakRepr, Repr};
    use std::net::{IpAddr, Ipv4Addr};

    const NOW: u64 = 1_795_000_000_000;

    fn tsi(n: u8) -> Tsi {
        Tsi {
            gsi: Gsi([1, 2, 3, 4, 5, n]),
            sport: 4000,
        }
    }

    fn odata(t: Tsi, sqn: u32) -> Vec<u8> {
        Repr::downstream(t, 7500, Body::Odata(DataRepr { sqn, trail: 0 }))
            .with_payload(b"the source's data")
            .to_vec()
            .unwrap()
    }

    fn nak(t: Tsi) -> Vec<u8> {
        let a = IpAddr::V4(Ipv4Addr::LOCALHOST);
        Repr::upstream(
            t,
            7500,
            Body::Nak(NakRepr {
                sqn: 3,
                source: a,
                group: a,
            }),
        )
        .to_vec()
        .unwrap()
    }

    fn pair(key: [u8; 32]) -> (Sealer, Sealer) {
        (
            Sealer::new(Key::from_bytes(key), Direction::Down).unwrap(),
            Sealer::new(Key::from_bytes(key), Direction::Up).unwrap(),
        )
    }

    #[test]
    fn sealed_packets_open_both_ways_and_are_encrypted() {
        let (mut src, mut rcv) = pair([7; 32]);
        let p = odata(tsi(1), 9);
        let mut out = Vec::new();
        src.seal(NOW, &p, &mut out).unwrap();
        assert_eq!(out.len(), p.len() + SEAL_OVERHEAD);
        let secret = b"the source's data";
        assert!(
            !out.windows(secret.len()).any(|w| w == secret),
            "payload in clear"
        );
        assert_eq!(rcv.open(NOW + 1000, &out).unwrap(), &p[..]);
        let n = nak(tsi(1));
        rcv.seal(NOW, &n, &mut out).unwrap();
        assert_eq!(src.open(NOW, &out).unwrap(), &n[..]);
        // Two seals of one packet differ (fresh nonce).
        let (mut a, mut b) = (Vec::new(), Vec::new());
        src.seal(NOW, &p, &mut a).unwrap();
        src.seal(NOW, &p, &mut b).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn a_flipped_bit_anywhere_is_refused() {
        let (mut src, mut rcv) = pair([7; 32]);
        let p = odata(tsi(1), 9);
        let mut out = Vec::new();
        src.seal(NOW, &p, &mut out).unwrap();
        for i in 0..out.len() {
            let mut bad = out.clone();
            bad[i] ^= 0x10;
            let e = rcv.open(NOW, &bad).unwrap_err();
            let expected = match i {
                0..=4 => OpenError::NotSealed,
                6..=9 => OpenError::OtherKey(KeyId([0; 4])),
                _ => OpenError::Forged,
            };
            match (e, expected) {
                (OpenError::OtherKey(_), OpenError::OtherKey(_)) => {}
                // Byte 5 is the direction: flipped it names neither, or the wrong one.
                (OpenError::WrongDirection, _) if i == 5 => {}
                _ => assert_eq!(e, expected, "byte {i}"),
            }
        }
        assert_eq!(rcv.stats().opened, 0);
        assert_eq!(rcv.stats().refused(), out.len() as u64);
    }

    #[test]
    fn another_key_another_session_or_direction_is_refused() {
        let (mut src, mut rcv) = pair([7; 32]);
        let (mut other_src, _) = pair([8; 32]);
        let mut out = Vec::new();
        other_src.seal(NOW, &odata(tsi(1), 1), &mut out).unwrap();
        assert!(matches!(rcv.open(NOW, &out), Err(OpenError::OtherKey(_))));

        // A sealed packet whose clear TSI is rewritten to another session's does not open:
        // the session keys differ.
        src.seal(NOW, &odata(tsi(1), 1), &mut out).unwrap();
        out[15] = 2;
        assert_eq!(rcv.open(NOW, &out), Err(OpenError::Forged));

        // A receiver's own sealed NAK sent back towards receivers.
        let mut up = Vec::new();
        rcv.seal(NOW, &nak(tsi(1)), &mut up).unwrap();
        let mut other_rcv = Sealer::new(Key::from_bytes([7; 32]), Direction::Up).unwrap();
        assert_eq!(other_rcv.open(NOW, &up), Err(OpenError::WrongDirection));
        // Relabelled as downstream it fails authentication (the direction is authenticated
        // and each direction has its own key).
        up[5] = 0;
        assert_eq!(other_rcv.open(NOW, &up), Err(OpenError::Forged));

        // A source never seals an upstream packet, a receiver never a downstream one.
        assert!(src.seal(NOW, &nak(tsi(1)), &mut out).is_none());
        assert!(rcv.seal(NOW, &odata(tsi(1), 1), &mut out).is_none());
        assert!(src.seal(NOW, b"not pgm", &mut out).is_none());
    }

    #[test]
    fn a_session_recorded_before_the_receiver_started_is_refused_whole() {
        let (mut src, mut rcv) = pair([7; 32]);
        let started = NOW + 120_000;
        rcv.refuse_sessions_before(started);
        let mut out = Vec::new();
        // Recorded two minutes before the receiver started: within the clock window, but
        // refused, and so is the rest of that session, however fresh.
        src.seal(NOW, &odata(tsi(1), 1), &mut out).unwrap();
        assert_eq!(
            rcv.open(started + 1, &out).unwrap_err(),
            OpenError::BeforeStart
        );
        src.seal(started + 2, &odata(tsi(1), 2), &mut out).unwrap();
        assert_eq!(
            rcv.open(started + 2, &out).unwrap_err(),
            OpenError::BeforeStart
        );
        assert_eq!(rcv.stats().before_start, 2);
        // A session joined late is sealed now, and clocks a little out of step are allowed.
        let slack = START_SLACK.as_millis() as u64;
        src.seal(started - slack + 1, &odata(tsi(2), 500), &mut out)
            .unwrap();
        assert!(rcv.open(started + 3, &out).is_ok());
    }

    #[test]
    fn the_start_slack_is_the_receivers_setting() {
        let (mut src, mut rcv) = pair([7; 32]);
        let started = NOW + 10_000;
        rcv.refuse_sessions_before_with_slack(started, std::time::Duration::from_secs(2));
        let mut out = Vec::new();
        // Sealed 2.001 s before the receiver started: refused with a 2 s slack.
        src.seal(started - 2_001, &odata(tsi(1), 1), &mut out)
            .unwrap();
        assert_eq!(
            rcv.open(started + 1, &out).unwrap_err(),
            OpenError::BeforeStart
        );
        src.seal(started - 2_000, &odata(tsi(2), 1), &mut out)
            .unwrap();
        assert!(rcv.open(started + 1, &out).is_ok());
    }

    #[test]
    fn replays_outside_the_clock_window_are_refused() {
        let (mut src, mut rcv) = pair([7; 32]);
        let mut out = Vec::new();
        src.seal(NOW, &odata(tsi(1), 1), &mut out).unwrap();
        let skew = MAX_SKEW.as_millis() as u64;
        assert!(rcv.open(NOW + skew, &out).is_ok());
        assert_eq!(
            rcv.open(NOW + skew + 1, &out),
            Err(OpenError::Stale {
                skew_ms: -(skew as i64) - 1
            })
        );
        assert!(matches!(
            rcv.open(NOW - skew - 1, &out),
            Err(OpenError::Stale { .. })
        ));
        assert_eq!(rcv.stats().stale, 2);
    }

    #[test]
    fn unsealed_pgm_and_noise_are_refused() {
        let (_, mut rcv) = pair([7; 32]);
        assert_eq!(rcv.open(NOW, &odata(tsi(1), 1)), Err(OpenError::NotSealed));
        assert_eq!(rcv.open(NOW, b""), Err(OpenError::NotSealed));
        assert_eq!(rcv.open(NOW, &[0u8; 100]), Err(OpenError::NotSealed));
        let mut m = MAGIC.to_vec();
        m.extend_from_slice(&[1; 60]);
        assert!(rcv.open(NOW, &m).is_err());
    }

    #[test]
    fn key_files_round_trip_and_bad_ones_name_the_problem() {
        let k = Key::from_bytes([0xab; 32]);
        assert_eq!(Key::parse(&k.to_file_text(), "f").unwrap(), k);
        assert!(!format!("{k:?}").contains("abab"), "Debug shows the secret");
        for (text, says) in [
            ("", "no key"),
            ("# only a comment\n", "no key"),
            ("ssh-ed25519 AAAA", "must start with `pgmcc-key-v1`"),
            ("pgmcc-key-v1 zz", "not hexadecimal"),
            ("pgmcc-key-v1 abcd", "32 bytes"),
        ] {
            let e = Key::parse(text, "f").unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn created_key_files_are_private_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("group.key");
        let k = Key::create(&path).unwrap();
        assert_eq!(Key::load(&path).unwrap(), k);
        assert!(Key::create(&path).is_err(), "overwrote an existing key");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let e = Key::load(&path).unwrap_err().to_string();
            assert!(e.contains("chmod 600"), "{e}");
        }
        assert_ne!(Key::generate().unwrap(), Key::generate().unwrap());
    }
}
