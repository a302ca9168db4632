//! Receiver configuration: RFC 3208 §5.3's NAK timers, the window's bounds, the session
//! table's limits and what the receiver takes part in.

use std::net::IpAddr;
use std::sync::Arc;

use serde::Serialize;

use super::rxw::NakTimers;
use crate::cc::feedback::FeedbackConfig;
use crate::cc::loss_filter::DEFAULT_W;
use crate::signed::Verifier;
use crate::time::Duration;

/// Where a receiver's window starts when it first hears a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum JoinPolicy {
    /// From the first data packet heard (or after the lead of the first SPM heard).
    #[default]
    FromFirstPacket,
    /// Back to the minimum the source allows in OPT_JOIN (RFC 3208 §9.4), NAKing for the
    /// packets in between; like `FromFirstPacket` when the source sends no OPT_JOIN.
    FromJoinMin,
}

/// [`ReceiverConfig::start_reach`]'s default: packets a receiver reaches back to the trail
/// when it first hears a session.
pub const DEFAULT_START_REACH: u32 = 64;

/// [`ReceiverConfig::nak_bo_grtts`]'s default: the NAK back-off spans 4 group RTTs (NORM's
/// `K`). The source's transmit window holds packets long enough for it
/// ([`crate::SenderConfig::hold_for_naks`]).
pub use crate::nak_timing::DEFAULT_NAK_BO_GRTTS;

/// Receiver configuration.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    /// This receiver's unicast NLA (its identity in pgmcc reports).
    pub nla: IpAddr,
    /// The multicast group joined.
    pub group: IpAddr,
    /// Data-destination port listened on (OpenPGM default 7500).
    pub dport: u16,
    /// NAK_BO_IVL when the source advertises no group RTT: the back-off is uniform in
    /// `[0, NAK_BO_IVL]`. Default 50 ms (OpenPGM's examples). With OPT_GRTT the back-off
    /// scales to the group RTT instead ([`ReceiverConfig::nak_bo_grtts`]).
    pub nak_bo_ivl: Duration,
    /// NAK_RPT_IVL when the source advertises no group RTT: wait for an NCF after a NAK.
    /// Default 2 s (OpenPGM's default). With OPT_GRTT: twice the group RTT.
    pub nak_rpt_ivl: Duration,
    /// NAK_RDATA_IVL when the source advertises no group RTT: wait for RDATA after an NCF.
    /// Default 2 s (OpenPGM's default). With OPT_GRTT: twice the group RTT.
    pub nak_rdata_ivl: Duration,
    /// With OPT_GRTT, the NAK back-off spans this many group RTTs, drawn from NORM's truncated
    /// exponential (RFC 5740 §5.3), so that of many receivers missing a packet one NAKs early
    /// and its NCF silences the rest. Default `Some(4.0)` (NORM's `K`). `None`: uniform in
    /// `[0, nak_bo_ivl]` whatever the group RTT (RFC 3208); the NCF and RDATA waits and the
    /// give-up time still scale (`docs/core.md`, "NAK timers").
    pub nak_bo_grtts: Option<f64>,
    /// How long a missing sequence number is NAKed before it is given up (reported
    /// `Unrecoverable`), counted from when it was found missing; at least 20 group RTTs
    /// when the source advertises one, for the largest group RTT it advertised meanwhile
    /// (`docs/core.md`, "NAK timers"). The source's trailing edge passing it gives it up at
    /// once. Default 30 s.
    pub nak_give_up: Duration,
    /// Receive window span in sequence numbers (memory bound per session). Default 8192.
    pub rxw_sqns: u32,
    /// Largest APDU accepted for reassembly. Default 65535 (OpenPGM's PGM_MAX_APDU).
    pub max_apdu: usize,
    /// Where a late joiner starts.
    pub join: JoinPolicy,
    /// A receiver that first hears a session (by data or SPM) fewer than this many packets
    /// past the trail the source advertises takes the stream from that trail, NAKing for
    /// what it missed, rather than from the first packet heard: a receiver there when the
    /// session starts that lost its first packets (to a full queue as the session starts,
    /// say) still gets the stream's start, while a receiver joining a running session
    /// (further from the trail) starts where it joined. Default 64; 0 turns it off.
    pub start_reach: u32,
    /// Most sessions tracked at once; packets of further sessions are dropped and counted.
    /// Default 64.
    pub max_sessions: usize,
    /// A session silent this long may be dropped to make room for a new one when the table
    /// is full (OpenPGM's PGM_PEER_EXPIRY; 300 s in its examples). Ended sessions make room
    /// first. Default 300 s.
    pub peer_expiry: Duration,
    /// Seed of this receiver's random source (NAK back-off).
    pub seed: u64,
    /// Take part in pgmcc when the source runs it: reports on NAKs, ACKs when named acker,
    /// answers to election requests. Default true.
    pub pgmcc: bool,
    /// Loss filter weight `W` in 1/65536 (pgmcc paper §3.2.2: 65000).
    pub loss_filter_w: u32,
    /// Upper bound of the random wait before answering an election request (OpenPGM's
    /// `ack_bo_ivl`, 50 ms in its examples).
    pub ack_bo_ivl: Duration,
    /// Reliable delivery (default). When false (pgmcc paper §3.9, unreliable transfers), a
    /// gap is NAKed once, only to carry this receiver's pgmcc report, and is reported
    /// `Unrecoverable` at once so later data is delivered without waiting.
    pub reliable: bool,
    /// Report TFRC's loss event rate (the TFMCC baseline, `docs/tfmcc.md`) instead of the
    /// pgmcc loss filter, merging losses within this interval into one loss event. Receivers
    /// do not measure their RTT, so this stands for it (RFC 4654's initial RTT, 500 ms, is
    /// the natural value). Default `None`: the pgmcc loss filter.
    pub loss_events: Option<Duration>,
    /// When the driver handles several ODATA before it polls transmits (a batch read from
    /// the socket), send one ACK for them instead of one each: a queued ACK is replaced by
    /// a newer one of the same session while every packet the replaced ACKs reported stays
    /// inside the newer ACK's 32-packet bitmap. The sender counts each packet once however
    /// it is acknowledged (`docs/pgmcc.md`, difference 10). A driver that polls after every
    /// datagram (the simulator) sees no change. Default true.
    pub coalesce_acks: bool,
    /// Accept sessions only from this source address (`pgmcc recv --source`): downstream
    /// packets from any other address are dropped and counted
    /// ([`ReceiverStats::wrong_source`](super::ReceiverStats::wrong_source)). Without it a
    /// session is bound to the address its first packet came from. Default none.
    pub source: Option<IpAddr>,
    /// Follow only this session (`pgmcc recv --session TSI`): downstream packets of any other
    /// TSI are dropped and counted
    /// ([`ReceiverStats::other_session`](super::ReceiverStats::other_session)), so no other
    /// session takes a slot. Default none.
    pub session: Option<pgm_wire::Tsi>,
    /// Largest PGM packet taken, in bytes; larger datagrams are dropped and counted
    /// (`ReceiverStats::oversized`). Default 9000 (a jumbo frame); OpenPGM and our sources
    /// send at most 1500 unless told otherwise.
    pub max_tpdu: usize,
    /// Bytes one session may hold buffered, bounded as (receive-window span) x (largest
    /// payload it sent): a packet that would take it past this is dropped and counted
    /// (`ReceiverStats::over_budget`), unless it is the next one to deliver. Parity copies
    /// and held parity add at most twice as much again. Default 32 MiB (a full 8,192-packet
    /// window of 1,500-byte packets is 12 MiB).
    pub session_bytes: u64,
    /// The same bound summed over every session. Default 256 MiB.
    pub total_bytes: u64,
    /// PGM network elements (RFC 3208 §7) this receiver's NAKs may go to: an SPM naming one
    /// of these addresses as its path NLA sends the session's NAKs (and poll replies) there,
    /// hop by hop. Any other path an SPM names is ignored: NAKs go to the address the
    /// session's packets come from, so a forged SPM cannot aim a receiver's NAKs at a third
    /// host. Default empty (no network element: NAKs go to the source).
    pub network_elements: Vec<IpAddr>,
    /// Signed mode (`crate::signed`, `docs/security.md`): every session must be signed by
    /// the key this verifier holds. Nothing is delivered that has not been checked against
    /// a signed digest list, a packet that fails is NAKed again, and a session ends only at
    /// its signed end (an OPT_FIN alone ends nothing). Default `None`.
    pub verifier: Option<Arc<dyn Verifier>>,
    /// Take an RDATA whose checksum leaves its payload out, as OpenPGM 5.3's source sends
    /// the first repair of a packet its rate limiter held back
    /// (`pgm_wire::Repr::parse_openpgm_held_back_rdata`), counted in
    /// [`ReceiverStats::openpgm_rdata_checksums`](super::ReceiverStats::openpgm_rdata_checksums).
    /// Its payload is then checked by no PGM checksum: a driver sets this only where the
    /// datagram's payload was checked below (UDP), never for raw IP. Default false.
    pub openpgm_rdata_checksum: bool,
}

impl ReceiverConfig {
    /// Defaults as documented on each field.
    pub fn new(nla: IpAddr, group: IpAddr, seed: u64) -> ReceiverConfig {
        ReceiverConfig {
            nla,
            group,
            dport: 7500,
            nak_bo_ivl: Duration::from_millis(50),
            nak_rpt_ivl: Duration::from_secs(2),
            nak_rdata_ivl: Duration::from_secs(2),
            nak_bo_grtts: Some(DEFAULT_NAK_BO_GRTTS),
            nak_give_up: Duration::from_secs(30),
            rxw_sqns: 8192,
            max_apdu: 65535,
            join: JoinPolicy::default(),
            start_reach: DEFAULT_START_REACH,
            max_sessions: 64,
            peer_expiry: Duration::from_secs(300),
            seed,
            pgmcc: true,
            loss_filter_w: DEFAULT_W,
            ack_bo_ivl: Duration::from_millis(50),
            reliable: true,
            loss_events: None,
            coalesce_acks: true,
            source: None,
            session: None,
            max_tpdu: 9000,
            session_bytes: 32 << 20,
            total_bytes: 256 << 20,
            network_elements: Vec::new(),
            verifier: None,
            openpgm_rdata_checksum: false,
        }
    }

    pub(super) fn timers(&self) -> NakTimers {
        NakTimers {
            bo_ivl: self.nak_bo_ivl,
            bo_lambda: None,
            rpt_ivl: self.nak_rpt_ivl,
            rdata_ivl: self.nak_rdata_ivl,
            give_up: self.nak_give_up,
            bo_grtts: self.nak_bo_grtts,
        }
    }

    /// Where upstream packets of a session whose source sends from `source` go when a
    /// downstream packet names `path` as the way back: `path` if it is a configured network
    /// element, else `source`.
    pub(super) fn upstream_to(&self, path: IpAddr, source: IpAddr) -> IpAddr {
        if self.network_elements.contains(&path) {
            path
        } else {
            source
        }
    }

    pub(super) fn feedback(&self) -> FeedbackConfig {
        FeedbackConfig {
            nla: self.nla,
            loss_filter_w: self.loss_filter_w,
            ack_bo_ivl: self.ack_bo_ivl,
            loss_events: self.loss_events,
        }
    }
}
