//! The timing contract between sources and receivers: receivers pace their NAKs by the group
//! RTT the source advertises, and the source keeps packets long enough for those NAKs to
//! arrive (`docs/core.md`, "NAK timers" and "Transmit window"). Both sides read it here.

use crate::time::Duration;

/// Largest group RTT advertised or used (NORM's default GRTT ceiling is 10 s too): a forged
/// or stale timestamp echo cannot make receivers wait longer than this.
pub const MAX_GRTT: Duration = Duration::from_secs(10);

/// The receivers' default NAK back-off span in group RTTs (NORM's `K`): `ReceiverConfig::
/// nak_bo_grtts`'s default.
pub const DEFAULT_NAK_BO_GRTTS: f64 = 4.0;

/// Smallest NCF and RDATA wait derived from a group RTT: covers a source's own scheduling
/// on a LAN where the RTT is tens of microseconds.
pub(crate) const MIN_SCALED_WAIT: Duration = Duration::from_millis(20);

/// A receiver's NCF and RDATA waits for group RTT `grtt`: two group RTTs, at least
/// [`MIN_SCALED_WAIT`].
pub(crate) fn scaled_wait(grtt: Duration) -> Duration {
    (grtt * 2).max(MIN_SCALED_WAIT)
}

/// How long after a packet left a receiver's NAK for it may still arrive, for group RTT
/// `grtt` and receivers at the default back-off: the back-off span plus one group RTT to
/// reach the source, and one NCF wait.
pub(crate) fn nak_horizon(grtt: Duration) -> Duration {
    grtt.mul_f64(DEFAULT_NAK_BO_GRTTS + 1.0) + scaled_wait(grtt)
}
