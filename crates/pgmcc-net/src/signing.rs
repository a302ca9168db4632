//! Signed mode's keys: the source's Ed25519 signing key and the public key receivers trust.
//!
//! `pgmcc keygen --sign FILE` writes the secret key to `FILE` (mode 0600) and its public half
//! to `FILE.pub` (world-readable: it is what receivers are given, `recv --trust FILE.pub`).
//! The protocol (signed digest lists checked in the receive window) is the core's
//! (`pgmcc::signed`); this module only reads, writes and names keys.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chacha20poly1305::aead::rand_core::RngCore;
use chacha20poly1305::aead::OsRng;
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use pgmcc::signed::{Freshness, Signer, Verifier};

use crate::keyed::{
    read_key_file, tagged_key, write_new_key_file, KeyError, KeyId, MAX_SKEW, START_SLACK,
};

/// Key line of a secret signing key file.
const SECRET_TAG: &str = "pgmcc-signing-key-v1";
/// Key line of a public key file.
const PUBLIC_TAG: &str = "pgmcc-public-key-v1";
/// How to make a pair, for errors.
const MAKE: &str = "`pgmcc keygen --sign FILE`";

/// A key with this host's wall clock: the source stamps its lists with the time (the core
/// reads no clock, so the driver supplies it here).
#[derive(Debug)]
struct WallClock<K>(K);

/// A receiver's key and clock: it follows only sessions whose first list it verifies is
/// within [`MAX_SKEW`] of its own clock and signed no more than `slack` ([`START_SLACK`]
/// unless set) before it started (`since`, Unix milliseconds). A session joined late is
/// signed now, whenever it began, and is followed.
#[derive(Debug)]
struct Trusting {
    key: VerifyingKey,
    since: u64,
    slack: std::time::Duration,
}

fn unix_ms_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Signer for WallClock<SigningKey> {
    fn digest(&self, parts: &[&[u8]]) -> pgmcc::signed::Digest {
        self.0.digest(parts)
    }
    fn sign(&self, message: &[u8]) -> [u8; pgmcc::signed::SIGNATURE_LEN] {
        Signer::sign(&self.0, message)
    }
    fn unix_ms(&self) -> u64 {
        unix_ms_now()
    }
    fn chain_key(&self, tsi: pgm_wire::Tsi, sqn: u32) -> pgmcc::signed::ChainKey {
        self.0.chain_key(tsi, sqn)
    }
}

impl Trusting {
    /// How a first list signed at `unix_ms` stands when this host's clock reads `now`.
    fn judge(&self, unix_ms: u64, now: u64) -> Freshness {
        let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        if unix_ms.abs_diff(now) > ms(MAX_SKEW) {
            Freshness::Skewed
        } else if unix_ms.saturating_add(ms(self.slack)) < self.since {
            Freshness::BeforeStart
        } else {
            Freshness::Fresh
        }
    }
}

impl Verifier for Trusting {
    fn digest(&self, parts: &[&[u8]]) -> pgmcc::signed::Digest {
        Verifier::digest(&self.key, parts)
    }
    fn verify(&self, message: &[u8], signature: &[u8; pgmcc::signed::SIGNATURE_LEN]) -> bool {
        Verifier::verify(&self.key, message, signature)
    }
    fn fresh(&self, unix_ms: u64) -> Freshness {
        self.judge(unix_ms, unix_ms_now())
    }
}

/// The source's signing key (secret).
#[derive(Clone)]
pub struct SourceKey {
    key: Arc<SigningKey>,
}

impl fmt::Debug for SourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secret.
        write!(f, "SourceKey({})", self.id())
    }
}

/// A source's public key, which receivers trust to sign the sessions they accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey {
    key: Arc<VerifyingKey>,
}

/// The name of a public key: the first 4 bytes of its SHA-256.
fn id_of(public: &VerifyingKey) -> KeyId {
    let h = Sha256::digest(public.as_bytes());
    KeyId([h[0], h[1], h[2], h[3]])
}

impl SourceKey {
    /// A fresh key from the operating system's random source.
    pub fn generate() -> Result<SourceKey, KeyError> {
        let mut seed = [0u8; 32];
        OsRng
            .try_fill_bytes(&mut seed)
            .map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(SourceKey::from_bytes(seed))
    }

    /// A key from its 32-byte seed (tests, or keys kept elsewhere).
    pub fn from_bytes(seed: [u8; 32]) -> SourceKey {
        SourceKey {
            key: Arc::new(SigningKey::from_bytes(&seed)),
        }
    }

    /// The public half, for receivers.
    pub fn public(&self) -> TrustedKey {
        TrustedKey {
            key: Arc::new(self.key.verifying_key()),
        }
    }

    /// The key's name (its public key's).
    pub fn id(&self) -> KeyId {
        id_of(&self.key.verifying_key())
    }

    /// What the core signs with: this key, and this host's clock to stamp lists.
    pub fn signer(&self) -> Arc<dyn Signer> {
        Arc::new(WallClock(self.key.as_ref().clone()))
    }

    /// Reads a secret key file, refusing one that other users can read.
    pub fn load(path: &Path) -> Result<SourceKey, KeyError> {
        let text = read_key_file(path, true)?;
        let seed = tagged_key(&text, SECRET_TAG, &path.display().to_string(), MAKE)?;
        Ok(SourceKey::from_bytes(seed))
    }

    /// Generates a key pair: the secret key to `path` (mode 0600), the public key to
    /// `path.pub` (mode 0644). Never overwrites either; returns the key and the public
    /// file's path.
    pub fn create(path: &Path) -> Result<(SourceKey, PathBuf), KeyError> {
        let public_path = public_path(path);
        if public_path.exists() {
            // Checked first so that neither file is written.
            return Err(KeyError::Io {
                path: public_path.display().to_string(),
                source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            });
        }
        let key = SourceKey::generate()?;
        let id = key.id();
        let secret = format!(
            "# pgmcc source signing key {id}: whoever holds it can sign data as this source.\n# Keep it secret (mode 0600), on the sending host only; receivers get {} (--trust).\n{SECRET_TAG} {}\n",
            public_path.display(),
            hex::encode(key.key.to_bytes())
        );
        write_new_key_file(path, &secret, 0o600)?;
        write_new_key_file(&public_path, &key.public().to_file_text(), 0o644)?;
        Ok((key, public_path))
    }
}

impl TrustedKey {
    /// A public key from its 32 bytes; `None` if they are not a valid Ed25519 point.
    pub fn from_bytes(bytes: [u8; 32]) -> Option<TrustedKey> {
        VerifyingKey::from_bytes(&bytes)
            .ok()
            .map(|k| TrustedKey { key: Arc::new(k) })
    }

    /// The key's name.
    pub fn id(&self) -> KeyId {
        id_of(&self.key)
    }

    /// What a receiver starting now verifies with: this key, and this host's clock to
    /// refuse sessions whose first list was signed more than [`MAX_SKEW`] from now or more
    /// than [`START_SLACK`] before now (replays).
    pub fn verifier(&self) -> Arc<dyn Verifier> {
        self.verifier_with_slack(START_SLACK)
    }

    /// [`TrustedKey::verifier`] refusing sessions whose first list was signed more than
    /// `start_slack` (instead of [`START_SLACK`]) before now: longer follows sessions that
    /// began longer before the receiver started, shorter narrows the window in which a
    /// recording played back passes for the current session.
    pub fn verifier_with_slack(&self, start_slack: std::time::Duration) -> Arc<dyn Verifier> {
        Arc::new(Trusting {
            key: *self.key,
            since: unix_ms_now(),
            slack: start_slack,
        })
    }

    /// The public key file's text.
    pub fn to_file_text(&self) -> String {
        format!(
            "# pgmcc source public key {}: receivers pass this file to --trust.\n{PUBLIC_TAG} {}\n",
            self.id(),
            hex::encode(self.key.as_bytes())
        )
    }

    /// Reads a public key file.
    pub fn load(path: &Path) -> Result<TrustedKey, KeyError> {
        let name = path.display().to_string();
        let text = read_key_file(path, false)?;
        let bytes = tagged_key(&text, PUBLIC_TAG, &name, MAKE).map_err(|e| match e {
            KeyError::Format { path, reason } if text.contains(SECRET_TAG) => KeyError::Format {
                path,
                reason: format!(
                    "{reason}; this is a secret signing key: give receivers its .pub file"
                ),
            },
            e => e,
        })?;
        TrustedKey::from_bytes(bytes).ok_or_else(|| KeyError::Format {
            path: name,
            reason: "not a valid Ed25519 public key".into(),
        })
    }
}

/// Where `pgmcc keygen --sign FILE` puts the public key: `FILE.pub`.
pub fn public_path(secret: &Path) -> PathBuf {
    let mut p = secret.as_os_str().to_owned();
    p.push(".pub");
    PathBuf::from(p)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    #[test]
    fn key_pairs_round_trip_and_are_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("source.key");
        let (key, public_path) = SourceKey::create(&path).unwrap();
        assert_eq!(public_path, dir.path().join("source.key.pub"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            // The public file is meant to be copied and read: 0644 less the umask.
            assert_eq!(mode(&public_path) & 0o133, 0);
        }
        let loaded = SourceKey::load(&path).unwrap();
        assert_eq!(loaded.id(), key.id());
        let trusted = TrustedKey::load(&public_path).unwrap();
        assert_eq!(trusted, key.public());
        assert!(!format!("{key:?}").contains(&hex::encode(key.key.to_bytes())));
        // Neither file is replaced, and a missing .pub alone blocks nothing else.
        assert!(SourceKey::create(&path).is_err());
        std::fs::remove_file(&path).unwrap();
        assert!(SourceKey::create(&path).is_err(), "the .pub still exists");
        assert!(!path.exists());
    }

    #[test]
    fn lists_carry_the_clock_and_old_sessions_are_refused() {
        let key = SourceKey::from_bytes([3; 32]);
        let (signer, verifier) = (key.signer(), key.public().verifier());
        let now = signer.unix_ms();
        assert!(now.abs_diff(unix_ms_now()) < 1_000);
        assert_eq!(verifier.fresh(now), Freshness::Fresh);
        assert_eq!(verifier.fresh(now - 20_000), Freshness::Fresh);
        assert_eq!(verifier.fresh(now - 301_000), Freshness::Skewed);
        assert_eq!(verifier.fresh(now + 301_000), Freshness::Skewed);
        assert_eq!(
            verifier.fresh(0),
            Freshness::Skewed,
            "a list stamped by no clock starts no session"
        );
        let sig = signer.sign(b"m");
        assert!(verifier.verify(b"m", &sig) && !verifier.verify(b"n", &sig));
    }

    /// A verifier for a fixed key, its receiver started at `since` (ms) with `slack`.
    fn trusting(since: u64, slack: std::time::Duration) -> Trusting {
        Trusting {
            key: SourceKey::from_bytes([3; 32]).key.verifying_key(),
            since,
            slack,
        }
    }

    #[test]
    fn a_session_signed_well_before_the_receiver_started_is_a_replay() {
        let started = 1_800_000_000_000;
        let t = trusting(started, START_SLACK);
        let slack = START_SLACK.as_millis() as u64;
        let later = started + 3_600_000;
        // Recorded a minute before the receiver started, played back within the skew.
        assert_eq!(
            t.judge(started - 60_000, started + 1_000),
            Freshness::BeforeStart
        );
        assert_eq!(
            t.judge(started - slack - 1, started),
            Freshness::BeforeStart
        );
        // A source that started just before the receiver did (within the slack) is taken.
        assert_eq!(t.judge(started - slack, started), Freshness::Fresh);
        // A session joined an hour after the receiver started: its lists are signed now.
        assert_eq!(t.judge(later - 500, later), Freshness::Fresh);
        // Skew first: out of step by more than MAX_SKEW is never followed.
        assert_eq!(t.judge(later - 400_000, later), Freshness::Skewed);
    }

    #[test]
    fn the_start_slack_is_the_receivers_setting() {
        let started = 1_800_000_000_000;
        let t = trusting(started, std::time::Duration::from_secs(2));
        assert_eq!(t.judge(started - 2_001, started), Freshness::BeforeStart);
        assert_eq!(t.judge(started - 2_000, started), Freshness::Fresh);
        let long = Trusting {
            slack: std::time::Duration::from_secs(600),
            ..t
        };
        // Older than the default slack, taken with a longer one (the skew still applies).
        assert_eq!(long.judge(started - 120_000, started), Freshness::Fresh);
    }

    #[test]
    fn the_wrong_file_in_the_wrong_place_names_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        let (_, public_path) = SourceKey::create(&path).unwrap();
        let e = TrustedKey::load(&path).unwrap_err().to_string();
        assert!(e.contains("give receivers its .pub file"), "{e}");
        let e = SourceKey::load(&public_path).unwrap_err().to_string();
        assert!(
            e.contains("readable by other users") || e.contains("pgmcc-signing-key-v1"),
            "{e}"
        );
        let group = dir.path().join("group.key");
        crate::Key::create(&group).unwrap();
        let e = SourceKey::load(&group).unwrap_err().to_string();
        assert!(e.contains("pgmcc-signing-key-v1"), "{e}");
    }
}
