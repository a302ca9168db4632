//! A source's configuration, and how it sizes data packets by the options they carry.

use std::net::IpAddr;
use std::sync::Arc;

use pgm_wire::{Fragment, Options, Tsi, FRAGMENT_BODY_LEN};
use serde::Serialize;

use super::{parity_group, EndPolicy, DATA_HEADERS, VAR_PKTLEN_LEN};
use crate::cc::CcConfig;
use crate::signed::Signer;
use crate::time::Duration;

/// A rate ceiling for the whole session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateLimit {
    /// Bytes per second (PGM bytes: header, options and payload).
    pub bytes_per_sec: u64,
    /// Largest burst in bytes.
    pub burst: u64,
}

/// Configuration of a PGM source. Defaults follow RFC 3208 where it gives values and
/// OpenPGM's shipped examples where it does not.
#[derive(Debug, Clone)]
pub struct SenderConfig {
    /// Transport session identifier (GSI + data-source port).
    pub tsi: Tsi,
    /// Data-destination port (OpenPGM default 7500).
    pub dport: u16,
    /// This source's unicast NLA: SPM path NLA, where NAKs are sent.
    pub source_nla: IpAddr,
    /// The session's multicast group NLA.
    pub group: IpAddr,
    /// Largest PGM packet (TPDU) in bytes. Default 1472: an Ethernet MTU of 1500 minus
    /// IPv4 and UDP headers (UDP encapsulation).
    pub max_tpdu: usize,
    /// Largest APDU [`Sender::send`](super::Sender::send) accepts. Default 65535, OpenPGM's
    /// `PGM_MAX_APDU` (its receivers reject larger ones).
    pub max_apdu: usize,
    /// TXW_SQNS: packets kept for repair. Default 4096.
    pub txw_sqns: u32,
    /// Bytes of payload kept for repair (optional second bound).
    pub txw_max_bytes: Option<usize>,
    /// TXW_SECS: seconds kept for repair (optional third bound).
    pub txw_secs: Option<Duration>,
    /// TXW_MAX_RTE: ceiling on the total transmit rate. Default none.
    pub rate_limit: Option<RateLimit>,
    /// Ambient SPM interval (§6.1). Default 30 s (OpenPGM examples).
    pub spm_ambient: Duration,
    /// IHB_MIN: first heartbeat SPM after data (§6.1). Default 100 ms.
    pub ihb_min: Duration,
    /// IHB_MAX: heartbeat interval ceiling, reached by doubling from IHB_MIN. Default 8 s.
    pub ihb_max: Duration,
    /// SPMs sent back to back when the session starts, and again before the first ODATA
    /// after the source sent no data for IHB_MAX: a receiver that lost the only SPM cannot
    /// NAK until the next one (an OpenPGM receiver then loses what was sent meanwhile for
    /// good). OpenPGM's sources send 3 at start. Default 1 (the simulator's, RFC 3208 sets
    /// no number); the runtime sends 3.
    pub spm_burst: u32,
    /// While new data waits to be sent, the first heartbeat SPM waits at least one group RTT
    /// after the last ODATA (`Sender::heartbeat_at`); false is RFC 3208's IHB_MIN after every
    /// ODATA. Default true: RFC heartbeats fall at the same point of every round trip of a
    /// window-limited source and, at a drop-tail bottleneck, decide which flow meets the full
    /// queue (`docs/pgmcc.md`, "Heartbeat SPMs and the drop-tail phase").
    pub heartbeat_waits_for_grtt: bool,
    /// First ODATA sequence number. Default 0.
    pub initial_sqn: u32,
    /// When set, ODATA carries OPT_JOIN allowing late joiners to ask for this many packets
    /// before the current one (bounded by the window trail). Default none.
    pub join_window: Option<u32>,
    /// Packets that may wait in the send queue before [`Sender::send`](super::Sender::send)
    /// says `WouldBlock`. Default 1024.
    pub send_queue: usize,
    /// Congestion control: [`CcConfig::None`] (the rate limiter alone, plain PGM) or pgmcc.
    /// Default none.
    pub cc: CcConfig,
    /// Answer NAKs with NCF and RDATA (default). When false (pgmcc paper §3.9, unreliable
    /// transfers) NAKs only feed congestion control their reports.
    pub repairs: bool,
    /// Hold-off for repeated NCFs (ours): with `Some(d)`, a NAK for a sequence number whose
    /// repair is queued and was confirmed less than `d` ago gets no new NCF, so a NAK storm
    /// does not buy one multicast NCF per NAK; with `d` below the receivers' NAK_RPT_IVL a
    /// repeated NAK is still answered. Default none: one group RTT when a repair budget applies
    /// and the group RTT is known, otherwise an NCF for every NAK (RFC 3208 §6.2;
    /// `docs/robustness.md`).
    pub ncf_holdoff: Option<Duration>,
    /// Repair hold-off (ours, after NORM's sender, RFC 5740 §5.3): a NAK that arrives within
    /// one RTT (the longer of the group RTT and the NAKer's own) of its sequence number's RDATA
    /// was sent before that RDATA could arrive, so it gets neither an NCF nor a second repair
    /// ([`SenderStats::naks_held_off`](super::SenderStats::naks_held_off)). Needs an RTT, so a
    /// controller; without one every NAK is answered (RFC 3208 §6.2). Default true.
    pub repair_holdoff: bool,
    /// Put OPT_GRTT (the group RTT and group size, `docs/wire.md`) on SPMs and NCFs once an
    /// RTT has been measured, so that receivers scale their NAK timers to it; an SPM goes
    /// out as soon as the group RTT differs by more than a quarter from the one the last SPM
    /// carried (at most one per IHB_MIN or group RTT, whichever is longer), so receivers
    /// learn it even while data keeps heartbeats away. OpenPGM's receivers ignore the
    /// option. Default true.
    pub advertise_grtt: bool,
    /// Hold new data back rather than evict a packet a receiver may still NAK (ours): while a
    /// group RTT is advertised, the count and byte bounds evict no packet younger than the NAK
    /// horizon (about 7 group RTTs, longer after a repair); ODATA waits instead
    /// ([`SenderStats::odata_held`](super::SenderStats::odata_held)), at most `txw_sqns`
    /// packets per horizon. Default true: without it a fast source evicts packets before their
    /// NAKs arrive (`docs/core.md`, "Transmit window").
    pub hold_for_naks: bool,
    /// How long one receiver's RTT counts towards the group RTT, and its reports towards the
    /// group size (see [`crate::grtt`]). Default 30 s.
    pub grtt_expiry: Duration,
    /// Count the receivers with general polls (RFC 3208 Appendix D) this often, for the group
    /// size OPT_GRTT advertises: receivers that neither NAK nor ACK are otherwise not counted,
    /// and too small a group size makes their NAK back-offs too short. Polls need
    /// `advertise_grtt` and a measured group RTT; OpenPGM's receivers do not answer. `None`: no
    /// polls. Default 30 s (`docs/core.md`, "Group size").
    pub group_poll_ivl: Option<Duration>,
    /// Repair budget (ours): NCFs and RDATA together may send at most this fraction of the
    /// controller's current rate, with a burst of one group RTT's worth but at most one
    /// congestion window (4 packets at least), so no pattern of NAKs
    /// makes the source send more than `1 + repair_budget` times that rate; repairs beyond it
    /// wait. `None`, or no controller: only [`SenderConfig::rate_limit`] paces repairs
    /// (RFC 3208). Default `Some(2.0)`: enough for the repairs of a large group behind
    /// independent loss (`docs/core.md`, "Repair budget").
    pub repair_budget: Option<f64>,
    /// Per-source NAK limit (ours): the new repairs one source address's NAKs may queue are at
    /// most this fraction of the rate the repair budget uses; beyond it a selective request
    /// gets no NCF, so that receiver NAKs again later, and a parity request is granted the
    /// count the share holds
    /// ([`SenderStats::nak_sqns_source_limited`](super::SenderStats::nak_sqns_source_limited)).
    /// Default `Some(1.0)`: half the default budget, which an honest receiver, asking for what
    /// it lost, does not come near (`docs/core.md`, "Repair budget").
    pub nak_source_share: Option<f64>,
    /// On-demand FEC parity (RFC 3208 Appendix A) over transmission groups of this many packets
    /// (a power of two, 2 to 128): our receivers ask for parity by count, so one parity packet
    /// repairs different losses at different receivers. `None`: no parity; so is an invalid
    /// size, one above a quarter of `txw_sqns`, or a controller that
    /// [`CcConfig::needs_selective_naks`]. Default `Some(64)`: far fewer repairs than selective
    /// ones in large groups; set `None` with OpenPGM receivers (`docs/core.md`, "FEC parity").
    pub fec: Option<u32>,
    /// Pro-active parity (RFC 3208 §11.4): this many parity packets (at most the group size) of
    /// every full transmission group, sent right after its last packet, so that a receiver that
    /// lost no more of the group rebuilds it without a NAK. They go outside the congestion
    /// window, under the repair budget, and add `proactive_parity / fec` to the session's rate.
    /// Needs [`SenderConfig::fec`]. Default 0 (`docs/core.md`, "FEC parity").
    pub proactive_parity: u32,
    /// Proof of receipt (ours): with a key, every ODATA and RDATA carries OPT_ACK_PROOF, a
    /// nonce keyed by it, and an ACK must carry the XOR of the nonces it acknowledges; ACKs
    /// with a wrong proof are dropped, and an acker that never proves (OpenPGM's) is held to
    /// `PgmccConfig::unproven_window`. The key must be secret and random (the runtime draws one
    /// per session). Default `None` (`docs/security.md`, "Unauthenticated mode, hardened").
    pub ack_proof: Option<[u8; 16]>,
    /// Signed mode (`crate::signed`, `docs/security.md`): data goes out in blocks, each
    /// preceded by a signed list of its packets' digests; the last list marks the session's
    /// end. A block holds at most [`signed::block_capacity`](crate::signed::block_capacity)
    /// packets and never splits an APDU, so [`Sender::send`](super::Sender::send) refuses
    /// larger ones; it goes out when full, when the link would idle, and at
    /// [`Sender::close`](super::Sender::close). Default `None`.
    pub signer: Option<Arc<dyn Signer>>,
    /// What the session carries (OPT_MANIFEST on every SPM: name, size, mode, mtime, and the
    /// SHA-256 once [`Sender::set_manifest`](super::Sender::set_manifest) gives it): our
    /// receivers show progress and verify the whole stream; others skip the option. Default
    /// `None`.
    pub manifest: Option<pgm_wire::Manifest>,
    /// When the session is over and when the source gives up: the linger after
    /// [`Sender::close`](super::Sender::close), the delivery reports to wait for, the
    /// feedback timeout and the longest run ([`EndPolicy`], `docs/core.md` "Ending a
    /// session"). Defaults: 3 s linger (at least 10 group RTTs), at most 60 s; give up after
    /// 60 s without feedback while sending under a controller.
    pub end: EndPolicy,
}

impl SenderConfig {
    /// A configuration with the defaults above for the given session and addresses.
    pub fn new(tsi: Tsi, source_nla: IpAddr, group: IpAddr) -> SenderConfig {
        SenderConfig {
            tsi,
            dport: 7500,
            source_nla,
            group,
            max_tpdu: 1472,
            max_apdu: 65535,
            txw_sqns: 4096,
            txw_max_bytes: None,
            txw_secs: None,
            rate_limit: None,
            spm_ambient: Duration::from_secs(30),
            ihb_min: Duration::from_millis(100),
            ihb_max: Duration::from_secs(8),
            spm_burst: 1,
            heartbeat_waits_for_grtt: true,
            initial_sqn: 0,
            join_window: None,
            send_queue: 1024,
            cc: CcConfig::None,
            repairs: true,
            ncf_holdoff: None,
            repair_holdoff: true,
            advertise_grtt: true,
            hold_for_naks: true,
            grtt_expiry: Duration::from_secs(30),
            group_poll_ivl: Some(Duration::from_secs(30)),
            proactive_parity: 0,
            repair_budget: Some(2.0),
            nak_source_share: Some(1.0),
            fec: Some(64),
            ack_proof: None,
            signer: None,
            manifest: None,
            end: EndPolicy::default(),
        }
    }

    /// Payload bytes of a whole (unfragmented) data packet after the stream's first: what
    /// fills `max_tpdu` once the options that packet carries are counted (OPT_PGMCC_DATA
    /// sized for `source_nla`'s family, OPT_JOIN, OPT_ACK_PROOF, the controller's own), and
    /// small enough that a parity packet of its group fits too. Applications that cut
    /// their data into packet-sized messages cut at this size (the first message at
    /// [`SenderConfig::first_tsdu`]), so that every packet is full.
    pub fn max_tsdu(&self) -> usize {
        // Without options, the first group's parity (OPT_SYN) leaves its packets less.
        let later = parity_group(self).unwrap_or(1).max(1);
        let first_group = self.tsdu_at(self.initial_sqn.wrapping_add(1), false);
        first_group.min(self.tsdu_at(self.initial_sqn.wrapping_add(later), false))
    }

    /// Payload bytes of the stream's first packet, which also carries OPT_SYN.
    pub fn first_tsdu(&self) -> usize {
        self.tsdu_at(self.initial_sqn, false)
    }

    /// Makes this a session that never fragments: `max_apdu` becomes one packet's payload,
    /// and parity packets keep no room for OPT_FRAGMENT, so each data packet can fill
    /// `max_tpdu`. Call it after the options (controller, OPT_JOIN, proof of receipt) are
    /// set; [`Sender::next_tsdu`](super::Sender::next_tsdu) then says how much the next
    /// APDU may hold.
    pub fn whole_packets(&mut self) {
        self.max_apdu = self.data_room(false, false);
    }

    /// Makes this a session that never fragments ([`SenderConfig::whole_packets`]) whose
    /// whole data packets after the first carry `payload` bytes: `max_tpdu` becomes that
    /// payload plus the headers and options such a packet carries. Call it after the
    /// options are set.
    pub fn whole_packets_of(&mut self, payload: usize) {
        self.max_tpdu = usize::from(u16::MAX);
        self.whole_packets();
        self.max_tpdu = payload + (self.max_tpdu - self.max_tsdu());
        self.whole_packets();
    }

    /// True when an APDU may span several packets: `max_apdu` exceeds one packet's payload.
    /// Sessions that never fragment keep no room in parity packets for OPT_FRAGMENT.
    pub fn fragments(&self) -> bool {
        self.max_apdu > self.data_room(false, false)
    }

    /// Payload bytes of data packet `sqn`, a fragment of a larger APDU or a whole one.
    pub(crate) fn tsdu_at(&self, sqn: u32, fragment: bool) -> usize {
        let syn = sqn == self.initial_sqn;
        let mut room = self.data_room(fragment, syn);
        if let Some(k) = parity_group(self) {
            // A parity packet's payload is the group's longest plus OPT_VAR_PKTLEN's two
            // bytes, under OPT_SYN in the first group and an encoded OPT_FRAGMENT in a
            // session that fragments.
            let first_group = crate::fec::tg_sqn(sqn, k) == crate::fec::tg_sqn(self.initial_sqn, k);
            let opts = Options {
                syn: first_group,
                fragment_encoded: self.fragments().then_some([0; FRAGMENT_BODY_LEN]),
                ..Options::default()
            };
            let parity_room = self
                .max_tpdu
                .saturating_sub(DATA_HEADERS + opts.buffer_len() + VAR_PKTLEN_LEN);
            room = room.min(parity_room);
        }
        room.max(1)
    }

    /// Payload bytes that fill `max_tpdu` beside the options a data packet carries.
    fn data_room(&self, fragment: bool, syn: bool) -> usize {
        let nowhere = match self.source_nla {
            IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        };
        let opts = Options {
            fragment: fragment.then_some(Fragment {
                first_sqn: 0,
                offset: 0,
                apdu_len: 0,
            }),
            syn,
            join: self.join_window.map(|_| 0),
            ack_proof: self.ack_proof.map(|_| pgm_wire::AckProof { value: 0 }),
            pgmcc_data: (!matches!(self.cc, CcConfig::None)).then_some(pgm_wire::PgmccData {
                tstamp: 0,
                acker: nowhere,
            }),
            ..Options::default()
        };
        self.max_tpdu
            .saturating_sub(DATA_HEADERS + opts.buffer_len() + self.cc.data_option_room())
    }
}
