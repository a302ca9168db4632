//! The only clock in the project: the runtime maps tokio's monotonic clock onto the core's
//! nanoseconds-since-epoch [`pgmcc::Instant`].

use std::time::Duration;

/// Monotonic time since the session started.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    epoch: tokio::time::Instant,
}

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock {
            epoch: tokio::time::Instant::now(),
        }
    }

    /// Now, as the core sees it.
    pub(crate) fn now(&self) -> pgmcc::Instant {
        let ns = self.epoch.elapsed().as_nanos();
        pgmcc::Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// A core instant as a tokio deadline.
    pub(crate) fn deadline(&self, at: pgmcc::Instant) -> tokio::time::Instant {
        self.epoch + Duration::from_nanos(at.as_nanos())
    }
}

/// Bytes that differ from run to run and host to host, for GSIs, ports and seeds: a hash of
/// the host name, process id, wall-clock time and a caller-supplied salt. Not a secret.
pub(crate) fn entropy(salt: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(std::fs::read("/proc/sys/kernel/hostname").unwrap_or_default());
    // A fresh random UUID per read on Linux; absent elsewhere.
    h.update(std::fs::read("/proc/sys/kernel/random/uuid").unwrap_or_default());
    h.update(std::process::id().to_le_bytes());
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    h.update(wall.as_nanos().to_le_bytes());
    h.update(salt);
    h.finalize().into()
}
