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
    /// Largest APDU [`Sender::send`] accepts. Default 65535, OpenPGM's `PGM_MAX_APDU`
    /// (its receivers reject larger ones).
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
    /// While new data waits to be sent, the first heartbeat waits at least one group RTT
    /// after the last ODATA (`Sender::heartbeat_at`). Default true; false is RFC 3208's
    /// IHB_MIN after every ODATA, which puts one SPM into every idle gap of a window-limited
    /// source's ACK clock, at the same point of every round trip, and on drop-tail
    /// bottlenecks decides which flow meets the full queue (docs/pgmcc.md, "Heartbeat SPMs
    /// and the drop-tail phase": the fairness grid's cells in band went from 18 to 26 of 36
    /// against TCP SACK and from 24 to 30 against NewReno).
    pub heartbeat_waits_for_grtt: bool,
    /// First ODATA sequence number. Default 0.
    pub initial_sqn: u32,
    /// When set, ODATA carries OPT_JOIN allowing late joiners to ask for this many packets
    /// before the current one (bounded by the window trail). Default none.
    pub join_window: Option<u32>,
    /// Packets that may wait in the send queue before [`Sender::send`] says `WouldBlock`.
    /// Default 1024.
    pub send_queue: usize,
    /// Congestion control: [`CcConfig::None`] (the rate limiter alone, plain PGM) or pgmcc.
    /// Default none.
    pub cc: CcConfig,
    /// Answer NAKs with NCF and RDATA (default). When false (pgmcc paper §3.9, unreliable
    /// transfers) NAKs only feed congestion control their reports.
    pub repairs: bool,
    /// Hold-off for repeated NCFs (ours). With `Some(d)`, a NAK for a sequence number whose
    /// repair is already queued and was confirmed less than `d` ago gets no new NCF: in a NAK
    /// storm (many late joiners) each unicast NAK would otherwise buy one multicast NCF. Keep
    /// `d` below the receivers' NAK_RPT_IVL so that a receiver that missed the NCF is answered
    /// when it repeats its NAK. Default none: one group RTT when a repair budget applies and
    /// the group RTT is known (receivers then wait two), otherwise every NAK is answered by an
    /// NCF (RFC 3208 §6.2).
    pub ncf_holdoff: Option<Duration>,
    /// Repair hold-off (ours, after NORM's sender, RFC 5740 §5.3): once RDATA for a
    /// sequence number has gone out, NAKs for it arriving within one RTT (the longer of the
    /// group RTT and the NAKing receiver's own) were sent before that RDATA could reach their
    /// receiver: they get neither an NCF nor a second repair, and are counted in
    /// [`SenderStats::naks_held_off`]. Needs an RTT measurement, so a controller; without one
    /// every NAK is answered as RFC 3208 §6.2 says. Default true.
    pub repair_holdoff: bool,
    /// Put OPT_GRTT (the group RTT and group size, `docs/wire.md`) on SPMs and NCFs once an
    /// RTT has been measured, so that receivers scale their NAK timers to it; an SPM goes
    /// out as soon as the group RTT differs by more than a quarter from the one the last SPM
    /// carried (at most one per IHB_MIN or group RTT, whichever is longer), so receivers
    /// learn it even while data keeps heartbeats away. OpenPGM's receivers ignore the
    /// option. Default true.
    pub advertise_grtt: bool,
    /// Hold new data back rather than evict a packet a receiver may still ask for (ours;
    /// `docs/core.md`, "Transmit window"). While the source advertises a group RTT `G`, the
    /// count and byte bounds of the transmit window evict no packet sent less than the NAK
    /// horizon ago, `(K + 1)·G + max(2·G, 20 ms)` with `K` our receivers' back-off span
    /// ([`crate::nak_timing::DEFAULT_NAK_BO_GRTTS`], 4): the slowest receiver's first NAK
    /// comes within a round trip plus its longest back-off, and the rest covers one NCF
    /// wait. A packet a NAK had repaired (its RDATA, or parity for its group) is held one
    /// horizon after its latest repair, for at most four horizons after it was sent
    /// (`MAX_HOLD_HORIZONS` in `sender/txw.rs`): a repair lost on the way leaves a second
    /// round. When the window is full of held packets, ODATA waits
    /// ([`SenderStats::odata_held`]); so the source sends at most `txw_sqns` packets per
    /// horizon, and a faster path needs a larger window, as TCP needs a larger socket
    /// buffer. Without it, a source sending more than that evicts packets before their
    /// NAKs arrive and receivers lose them for good. No hold without a group RTT (no
    /// controller, or `advertise_grtt` off: receivers then use fixed timers), in unreliable
    /// mode, or for the age bound (TXW_SECS). Default true.
    pub hold_for_naks: bool,
    /// How long one receiver's RTT counts towards the group RTT, and its reports towards the
    /// group size (see [`crate::grtt`]). Default 30 s.
    pub grtt_expiry: Duration,
    /// Count the receivers with general polls (RFC 3208 Appendix D) this often, for the
    /// group size OPT_GRTT advertises: receivers that neither NAK nor ACK are otherwise not
    /// counted, and their NAK back-offs then lean too early for the group's size. The group
    /// size is the larger of the poll's estimate (while no older than three intervals) and
    /// the receivers heard within `grtt_expiry`. Polls start once a group RTT is measured,
    /// only with `advertise_grtt`; a poll takes a few rounds of about four group RTTs
    /// each, and its replies come at most a handful per round (`docs/core.md`, "Group
    /// size"). OpenPGM's receivers do not answer (libpgm 5.3 never sends the POLR).
    /// `None`: no polls. Default 30 s.
    pub group_poll_ivl: Option<Duration>,
    /// Repair budget (ours; `docs/core.md`): NCFs and RDATA together may send at most this
    /// fraction of the controller's current rate (a rate-based controller's rate; a
    /// window-based one's window per group RTT), in bytes of `max_tpdu`-sized packets, with a
    /// burst of one group RTT's worth. So no pattern of NAKs makes the source send more than
    /// `1 + repair_budget` times its congestion-controlled rate. Repairs beyond it wait,
    /// in order; NCFs beyond [`MAX_NCF_QUEUE`] lists are dropped and counted. `None`, or no
    /// controller: repairs are paced by [`SenderConfig::rate_limit`] alone (RFC 3208; the
    /// pgmcc paper, §3.8, leaves repairs unregulated). Default `Some(2.0)`: 1000 receivers
    /// behind independent 1% loss need about 1.2 RDATA per ODATA plus their NCFs.
    pub repair_budget: Option<f64>,
    /// Per-source NAK limit (ours; `docs/core.md`, "Repair budget"): the repairs one source
    /// address's NAKs may queue (new ones: sequence numbers not yet waiting for a repair,
    /// each counted as one `max_tpdu` packet; parity counted per packet asked for) are at
    /// most this fraction of the same session rate the repair budget uses, with a burst of
    /// one group RTT's worth (at least 64 packets). Requests beyond are dropped without an
    /// NCF ([`SenderStats::nak_sqns_source_limited`]), so that receiver NAKs again later.
    /// Applies where the repair budget does. Default `Some(1.0)`: with the default budget of
    /// 2.0, one NAKer can take at most half of it, and an honest receiver, which asks for
    /// what it lost, never comes near it. Sources share [`NAK_SOURCE_BUCKETS`] buckets by a
    /// hash of their address; one that spoofs others' addresses is bounded by the budget
    /// alone.
    pub nak_source_share: Option<f64>,
    /// On-demand FEC parity (RFC 3208 Appendix A; `docs/core.md`, "FEC parity") over
    /// transmission groups of this many packets (a power of two, 2 to 128): the source
    /// advertises it in OPT_FEC on its SPMs, and our receivers then ask for parity packets
    /// by count instead of retransmissions by sequence number, so one parity packet repairs
    /// different losses at different receivers. OpenPGM receivers ignore OPT_FEC and keep
    /// NAKing selectively, which is still answered; but the parity packets our receivers ask
    /// for also reach them, and an OpenPGM receiver without FEC may park one in a missing
    /// slot and stop NAKing for it: turn parity off in groups with OpenPGM receivers.
    /// `None`: no parity. An invalid size is treated as `None`, and so is a size more than a
    /// quarter of [`SenderConfig::txw_sqns`], and any size under a controller whose loss
    /// signal is the NAKed sequence numbers ([`CcConfig::needs_selective_naks`]: the
    /// low-weight ones). Default `Some(64)`: with
    /// 1000 receivers behind independent 1% loss, 0.11 repair packets per ODATA against
    /// 1.17 with selective repairs (`docs/core.md`); 32 costs more parity (0.085 against
    /// 0.068 per ODATA at 100 receivers), and a group of 64 waits for 64 packets before
    /// its losses are asked for.
    pub fec: Option<u32>,
    /// Pro-active parity (RFC 3208 §11.4): this many parity packets of every full
    /// transmission group, sent as ODATA with OPT_PARITY right after the group's last packet
    /// (at most the group size; `docs/core.md`, "FEC parity"). A receiver that lost no more
    /// of the group than this rebuilds it without a NAK. Like repairs (pgmcc paper §3.8),
    /// they go outside the congestion window and count against the repair budget, so they
    /// add `proactive_parity / fec` to the session's rate. Needs [`SenderConfig::fec`]; SPMs
    /// then say so (OPT_FEC). Default 0.
    pub proactive_parity: u32,
    /// Proof of receipt (ours; `docs/security.md`): with a key, every ODATA and RDATA carries
    /// OPT_ACK_PROOF, a 32-bit nonce derived from its sequence number with SipHash-2-4 under
    /// this key, and an ACK must carry the XOR of the nonces of the packets it acknowledges.
    /// An ACK whose proof is wrong never reaches the controller, nor does an ACK without one
    /// from an address that has proved itself before; ACKs without proof from receivers that
    /// never do (OpenPGM's) reach it marked unproven, and pgmcc then caps its window
    /// (`PgmccConfig::unproven_window`). The key must be secret and random (the runtime
    /// draws one per session). Default `None` (no option; the simulator's default).
    pub ack_proof: Option<[u8; 16]>,
    /// Signed mode (`crate::signed`, `docs/security.md`): with a signer, data goes out in
    /// blocks, each preceded (one sequence number before) by a list of its packets' digests
    /// signed with the source's key, and the session's last list marks its end. A block
    /// holds at most [`signed::block_capacity`] packets and never splits an APDU, so
    /// [`Sender::send`] refuses larger APDUs; a block goes out when full, when the link
    /// would otherwise idle, and at [`Sender::close`]. Default `None`.
    pub signer: Option<Arc<dyn Signer>>,
    /// What the session carries (OPT_MANIFEST on every SPM: name, size, mode, mtime, and
    /// the SHA-256 once [`Sender::set_manifest`] gives it): our receivers show progress and
    /// verify the whole stream; others skip the option. Default `None`.
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
    /// set; [`Sender::next_tsdu`] then says how much the next APDU may hold.
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
