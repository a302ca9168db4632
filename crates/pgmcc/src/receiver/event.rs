//! What the receiver tells the application, and its counters.

use pgm_wire::Tsi;
use serde::Serialize;

use crate::cc::feedback::FeedbackStats;
use crate::signed::SignedCounts;

/// What the receiver tells the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiverEvent {
    /// A new session was heard.
    SessionStarted {
        /// The session.
        tsi: Tsi,
        /// First sequence number the window wants.
        first_sqn: u32,
    },
    /// One complete APDU, in order.
    Data {
        /// The session.
        tsi: Tsi,
        /// Sequence number of its first packet.
        sqn: u32,
        /// The APDU.
        data: Vec<u8>,
    },
    /// Sequence numbers `first..=last` of `tsi` cannot be recovered; the application's
    /// stream has a gap here.
    Unrecoverable {
        /// The session.
        tsi: Tsi,
        /// First lost sequence number.
        first: u32,
        /// Last lost sequence number.
        last: u32,
    },
    /// The source ended the session (OPT_FIN) and everything up to its last packet has been
    /// delivered or reported unrecoverable.
    SessionEnded {
        /// The session.
        tsi: Tsi,
        /// Sequence number of the packet the source marked as its first (OPT_SYN), if this
        /// receiver heard it: equal to `SessionStarted`'s `first_sqn` when the whole stream
        /// was received.
        syn_sqn: Option<u32>,
    },
    /// The first data of a session is not its first packet: the source marked another as
    /// the start (OPT_SYN, `syn_sqn`), or none this receiver has seen (it joined late or
    /// lost the start; OpenPGM sources mark none). Comes just before that data, so an
    /// application that needs the whole stream can give up now rather than at the end.
    StartMissed {
        /// The session.
        tsi: Tsi,
        /// The first sequence number delivered.
        first_sqn: u32,
        /// The start the source marked, if this receiver saw it.
        syn_sqn: Option<u32>,
    },
    /// The session was silent for `peer_expiry` and was dropped to make room for a new one
    /// before it ended: whatever it had not delivered is lost.
    SessionExpired {
        /// The session.
        tsi: Tsi,
    },
    /// What the session carries, from the source's OPT_MANIFEST: when the session is
    /// announced (if the source sent one by then) and whenever it changes (the SHA-256 of
    /// the whole stream arrives with the SPMs announcing the end); not authenticated. In
    /// signed mode, once more from the signed end list, with `signed` set, just before
    /// [`ReceiverEvent::SessionEnded`].
    Manifest {
        /// The session.
        tsi: Tsi,
        /// The manifest.
        manifest: pgm_wire::Manifest,
        /// It came signed by the source's key (signed mode's end list), not from an SPM.
        signed: bool,
    },
    /// The source aborted the session (an SPM with OPT_RST, RFC 3208 §9.5): nothing more will
    /// come, and whatever was not delivered is lost.
    SessionReset {
        /// The session.
        tsi: Tsi,
        /// The source's 6-bit error code (0: no reason given).
        error_code: u8,
    },
}

/// Counters of a receiver.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReceiverStats {
    /// ODATA packets received (new or not).
    pub odata_packets: u64,
    /// RDATA packets received.
    pub rdata_packets: u64,
    /// Packets that filled a gap (RDATA, or ODATA arriving out of order).
    pub gaps_filled: u64,
    /// Data packets already held or behind the window.
    pub duplicates: u64,
    /// SPMs received.
    pub spm_packets: u64,
    /// NCFs received.
    pub ncf_packets: u64,
    /// NAK packets sent.
    pub naks_sent: u64,
    /// Sequence numbers NAKed (a NAK with a list counts each).
    pub nak_sqns_sent: u64,
    /// NAKs not sent because an NCF or another receiver's NAK was heard first.
    pub naks_suppressed: u64,
    /// Parity NAKs sent (each asks for parity packets of one or more groups; also counted
    /// in `naks_sent`).
    pub parity_naks_sent: u64,
    /// Parity packets received (RDATA or ODATA with OPT_PARITY).
    pub parity_packets: u64,
    /// Data packets rebuilt from parity (also counted in `gaps_filled`).
    pub parity_rebuilt: u64,
    /// SPMRs sent.
    pub spmrs_sent: u64,
    /// pgmcc ACKs sent (as acker or answering an election request).
    pub acks_sent: u64,
    /// ACKs not sent because a newer one, still unsent, reported the same packets
    /// ([`ReceiverConfig::coalesce_acks`](super::ReceiverConfig::coalesce_acks)).
    pub acks_coalesced: u64,
    /// APDUs delivered.
    pub apdus_delivered: u64,
    /// Bytes delivered.
    pub bytes_delivered: u64,
    /// Sequence numbers reported unrecoverable.
    pub unrecoverable_sqns: u64,
    /// Of the missing sequence numbers given up in reliable mode, those the source's trail
    /// passed (it no longer held them for repair).
    pub given_up_trail: u64,
    /// ... those whose NAKs went unanswered for the whole give-up time.
    pub given_up_patience: u64,
    /// ... those dropped when the receive window outgrew its size.
    pub given_up_overflow: u64,
    /// Datagrams that failed to parse or were inconsistent (bad fragment, ...).
    pub malformed: u64,
    /// RDATA taken although its checksum left the payload out, as OpenPGM 5.3's source
    /// sends the first repair of a held-back packet
    /// ([`ReceiverConfig::openpgm_rdata_checksum`](super::ReceiverConfig::openpgm_rdata_checksum));
    /// without that setting they count as malformed.
    pub openpgm_rdata_checksums: u64,
    /// Datagrams for another group or port, or of a type a receiver ignores.
    pub ignored: u64,
    /// Downstream packets (SPM, ODATA, RDATA, NCF) of a session that came from an address
    /// other than its source's (the address its first packet came from, or
    /// `ReceiverConfig::source`): spoofed end of session, redirections, NAK suppression,
    /// forged data from another host. Dropped.
    pub wrong_source: u64,
    /// SPMs that cannot be the source's: trail beyond lead + 1, a lead more than a receive
    /// window ahead, or an SPM sequence number further ahead of the last one taken than the
    /// time since allows (64, plus 100 a second). Dropped (their FIN, path and edges
    /// ignored).
    pub implausible_spms: u64,
    /// Data packets (ODATA, RDATA, parity) that cannot be the source's: trail beyond the
    /// lead + 1 (the packet's own sequence number or the window's lead, whichever is
    /// further), or more than a receive window ahead of the window's lead while the session
    /// is not silent. Dropped before they move anything.
    pub implausible_data: u64,
    /// NAK packets not sent because the session's NAKs went unanswered (no NCF, no repair)
    /// beyond its budget: 64 in a burst, then 50 a second plus one per answer heard. Their
    /// sequence numbers are NAKed again when their timers next expire.
    pub naks_rate_limited: u64,
    /// Delivery reports sent to sources (`Receiver::report`).
    pub reports_sent: u64,
    /// General polls received (RFC 3208 Appendix D).
    pub polls_received: u64,
    /// Poll responses sent.
    pub polrs_sent: u64,
    /// Downstream packets of a session other than `ReceiverConfig::session`: dropped.
    pub other_session: u64,
    /// Datagrams longer than `ReceiverConfig::max_tpdu`: dropped.
    pub oversized: u64,
    /// Data packets dropped because buffering them would exceed `session_bytes` or
    /// `total_bytes` (the memory bound); a real source's are NAKed again later.
    pub over_budget: u64,
    /// Signed mode: lists verified, packets forged, asked for again or unverifiable.
    pub signed: SignedCounts,
    /// Packets of new sessions dropped because `max_sessions` were tracked.
    pub sessions_rejected: u64,
    /// Sessions dropped from a full table to make room: ended ones, or silent for
    /// `peer_expiry` (each of the latter also reported as [`ReceiverEvent::SessionExpired`]).
    pub sessions_evicted: u64,
    /// Queued packets dropped because a driver did not poll them and the transmit queue
    /// was full.
    pub transmits_dropped: u64,
    /// Controller-specific feedback (TFMCC rounds, Pseudofed reports, quick NAKs).
    #[serde(flatten)]
    pub cc: FeedbackStats,
}
