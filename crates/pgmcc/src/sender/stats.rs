//! A source's counters.

use serde::Serialize;

/// Counters of a source. Plain data, serialisable, the same in every driver.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SenderStats {
    /// ODATA packets sent.
    pub odata_packets: u64,
    /// Times new data had to wait because the transmit window was full of packets that
    /// receivers may still NAK ([`super::SenderConfig::hold_for_naks`]): each wait counts once.
    pub odata_held: u64,
    /// ODATA payload bytes sent.
    pub odata_bytes: u64,
    /// RDATA packets sent.
    pub rdata_packets: u64,
    /// Delivery reports received (POLR with OPT_OUTCOME), repeats included.
    pub reports_received: u64,
    /// Delivery reports from new addresses dropped because [`super::MAX_REPORTS`] were kept.
    pub reports_dropped: u64,
    /// Delivery reports refused because they do not name the address they came from as their
    /// reporter (replayed in another receiver's name, or from a receiver that names none).
    pub reports_refused: u64,
    /// General polls sent to count the receivers ([`super::SenderConfig::group_poll_ivl`]), one
    /// per round.
    pub polls_sent: u64,
    /// Poll responses counted (one per receiver per round).
    pub polrs_received: u64,
    /// Signed mode: digest lists queued (one per block, counted in `odata_packets` too when
    /// sent).
    pub signed_lists: u64,
    /// RDATA payload bytes sent.
    pub rdata_bytes: u64,
    /// SPMs sent.
    pub spm_packets: u64,
    /// NCFs sent.
    pub ncf_packets: u64,
    /// Total bytes of all datagrams sent.
    pub bytes_sent: u64,
    /// NAKs received (each NAK packet once).
    pub naks_received: u64,
    /// Sequence numbers NAKed (a NAK with a list counts each).
    pub nak_sqns_received: u64,
    /// NAKed sequence numbers already repaired or queued (no second RDATA queued).
    pub naks_duplicate: u64,
    /// Sequence numbers left out of an NCF by [`super::SenderConfig::ncf_holdoff`].
    pub ncfs_held: u64,
    /// Distinct sequence numbers NAKed at least once.
    pub sqns_naked: u64,
    /// Distinct sequence numbers NAKed more than once (by several receivers, or again by
    /// one): `sqns_naked_again / sqns_naked` measures how well NAK suppression works.
    pub sqns_naked_again: u64,
    /// Sequence numbers left out of an NCF because [`super::MAX_NCF_QUEUE`] lists were waiting.
    pub ncfs_dropped: u64,
    /// Times a repair or NCF waited for the repair budget ([`super::SenderConfig::repair_budget`]).
    pub repairs_budget_limited: u64,
    /// Sequence numbers (or parity packets) whose repair a NAK asked for beyond its source's
    /// share ([`super::SenderConfig::nak_source_share`]): not queued and not confirmed (a
    /// parity request granted in part counts the parity packets left out).
    pub nak_sqns_source_limited: u64,
    /// NAKed sequence numbers within the repair hold-off of their latest RDATA
    /// ([`super::SenderConfig::repair_holdoff`]): no NCF, no second repair.
    pub naks_held_off: u64,
    /// Parity NAK entries received (each asks for parity packets of one group).
    pub parity_naks_received: u64,
    /// Parity NAKs for a group without parity (FEC off, or a bad group).
    pub parity_naks_refused: u64,
    /// Distinct transmission groups asked for parity at least once.
    pub tgs_naked: u64,
    /// Distinct transmission groups asked for parity more than once.
    pub tgs_naked_again: u64,
    /// Parity packets sent on demand (RDATA with OPT_PARITY; also counted in
    /// `rdata_packets`).
    pub parity_packets: u64,
    /// Pro-active parity packets sent (ODATA with OPT_PARITY,
    /// [`super::SenderConfig::proactive_parity`]; not in `odata_packets`).
    pub proactive_parity_packets: u64,
    /// NAKed sequence numbers outside the transmit window (no RDATA possible).
    pub naks_outside_window: u64,
    /// NAKs for another session, source or group.
    pub naks_foreign: u64,
    /// SPMRs received.
    pub spmrs_received: u64,
    /// pgmcc ACKs received (any sender, any session; see the controller's stats for use).
    pub acks_received: u64,
    /// ACKs of this session acknowledging data never sent (forged, or before any ODATA):
    /// refused before the controller sees them.
    pub acks_rejected: u64,
    /// ACKs refused for their proof of receipt (`SenderConfig::ack_proof`): a wrong one, or
    /// none from an address that proved itself before.
    pub acks_proof_failed: u64,
    /// ACKs without proof of receipt from receivers that never gave one (OpenPGM's): passed
    /// to the controller marked unproven.
    pub acks_unproven: u64,
    /// Addresses whose proven ACKs contradicted each other (two streams of ACKs in one name:
    /// one far behind the other, or a packet acknowledged and later reported missing); their
    /// ACKs count as unproven from then on (`docs/security.md`).
    pub ackers_discredited: u64,
    /// Congestion-control events dropped because the application did not poll them and
    /// [`crate::cc::MAX_EVENTS`] were queued.
    pub events_dropped: u64,
    /// Datagrams that failed to parse.
    pub malformed: u64,
    /// Well-formed datagrams a source does not act on (ODATA from others, ...).
    pub ignored: u64,
    /// APDUs accepted by `send`.
    pub apdus_sent: u64,
}
