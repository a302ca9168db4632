//! The PGM source (RFC 3208 §6), sans-IO.
//!
//! # Using a `Sender`
//!
//! Methods come in four kinds, as in quinn-proto's `Connection`:
//!
//! * application commands: [`Sender::send`] queues an APDU, [`Sender::close`] ends the session;
//! * inputs: [`Sender::handle`] takes a datagram from the network (NAK, SPMR, ...);
//!   [`Sender::handle_timeout`] tells the sender its deadline passed;
//! * outputs: [`Sender::poll_transmit`] writes the next datagram to send, [`Sender::poll_timeout`]
//!   says when to call `handle_timeout`;
//! * getters: [`Sender::stats`], window edges.
//!
//! After every input, drain `poll_transmit` until it returns `None`, then wait until
//! `poll_timeout` (or the next datagram). `now` must never go backwards between calls.
//!
//! # What it does
//!
//! * Keeps the transmit window (TXW) bounded in packets, bytes and seconds
//!   ([`SenderConfig::txw_sqns`], [`SenderConfig::txw_max_bytes`], [`SenderConfig::txw_secs`]).
//! * Splits APDUs larger than one TPDU into fragments carrying OPT_FRAGMENT (§9.2).
//! * Sends SPMs on the ambient schedule and, after data, heartbeat SPMs from IHB_MIN doubling
//!   to IHB_MAX (§6.1), and at once on an SPMR (§13.6).
//! * Answers each NAK for data in the window with a multicast NCF, then RDATA (§6.2-6.3);
//!   NAKs for data already out of the window get neither (receivers learn from the SPM
//!   trail that it is gone) and are counted.
//! * Paces everything through a token bucket (TXW_MAX_RTE, [`SenderConfig::rate_limit`]),
//!   repairs before new data.
//! * Marks the first ODATA with OPT_SYN, sends OPT_JOIN on ODATA when
//!   [`SenderConfig::join_window`] is set, and OPT_FIN on SPMs after [`Sender::close`].

mod config;
mod ending;
mod parity;
mod poll;
mod rate;
mod stats;
mod txw;

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::IpAddr;

use pgm_wire::{
    Body, DataRepr, Fec, Fragment, Grtt, NakRepr, Options, Repr, SpmRepr, SqnList, Tsi,
    FEC_RS_VANDERMONDE_GF256, FRAGMENT_BODY_LEN, OPT_PARITY, OPT_VAR_PKTLEN,
};
use thiserror::Error;
use tracing::{debug, trace};

use crate::cc::{
    Ack, CcConfig, CcEvent, CcStats, CongestionControl, Events, Metrics, Nak, RttSample,
    SourceLimits,
};
use crate::grtt::GroupRtt;
use crate::signed;
use crate::time::{Duration, Instant};
use crate::transmit::{Destination, Transmit};
use parity::{ParityPacket, ParityRepairs, Verdict};
use rate::RateLimiter;
use txw::{Bounds, TransmitWindow, TxPacket};

pub use config::{RateLimit, SenderConfig};
pub use ending::{AbandonReason, EndPolicy, Expect, SessionEnd, LINGER_GRTTS};
pub use stats::SenderStats;

/// Bytes of the common header, the data header and the largest option set a data packet of
/// ours carries (OPT_LENGTH 4, OPT_FRAGMENT 16, OPT_JOIN 8, OPT_SYN 4, OPT_PGMCC_DATA 28):
/// an upper bound for a packet not yet encoded. Packets are sized by what they carry
/// ([`SenderConfig::tsdu_at`]).
const DATA_OVERHEAD: usize = DATA_HEADERS + 4 + 16 + 8 + 4 + 28;

/// Bytes of the common header and the data header.
const DATA_HEADERS: usize = 16 + 8;

/// Bytes OPT_VAR_PKTLEN appends to a parity packet's payload.
const VAR_PKTLEN_LEN: usize = 2;

/// Addresses remembered as having proved receipt in an ACK (OPT_ACK_PROOF): their ACKs must
/// always carry the proof from then on.
const PROVEN_ACKERS: usize = 16;
/// Receivers whose delivery reports a source keeps.
pub const MAX_REPORTS: usize = 65_536;

/// The nonce of data packet `sqn` under `key` (OPT_ACK_PROOF).
pub fn ack_nonce(key: &[u8; 16], sqn: u32) -> u32 {
    use core::hash::Hasher;
    let mut h = siphasher::sip::SipHasher24::new_with_key(key);
    h.write(&sqn.to_be_bytes());
    h.finish() as u32
}

/// The proof an ACK for `rx_max` and `bitmap` must carry: the XOR of the nonces of RX_MAX
/// and of every packet whose bit is set (bit k: RX_MAX - k).
pub fn ack_proof_for(rx_max: u32, bitmap: u32, nonce: impl Fn(u32) -> u32) -> u32 {
    (0..32)
        .filter(|k| bitmap & (1 << k) != 0 || *k == 0)
        .fold(0, |x, k| x ^ nonce(rx_max.wrapping_sub(k)))
}

/// Receivers whose RTT the group RTT table keeps (the longest ones).
const GRTT_ENTRIES: usize = 64;

/// Largest group RTT advertised or used (NORM's default GRTT ceiling is 10 s too): a forged
/// or stale timestamp echo cannot make receivers wait longer than this.
pub const MAX_GRTT: Duration = Duration::from_secs(10);

/// The per-source NAK limit's bucket for `from` (an FNV-1a hash of the address, keyed by the
/// session's TSI so that sessions spread the same addresses differently).
fn nak_source_bucket(from: IpAddr, tsi: &Tsi) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    };
    tsi.gsi.0.iter().for_each(|b| eat(*b));
    tsi.sport.to_be_bytes().iter().for_each(|b| eat(*b));
    match from {
        IpAddr::V4(a) => a.octets().iter().for_each(|b| eat(*b)),
        IpAddr::V6(a) => a.octets().iter().for_each(|b| eat(*b)),
    }
    (h % NAK_SOURCE_BUCKETS as u64) as usize
}

/// Most receivers the group size estimate tracks at once.
pub const MAX_GROUP_TRACKED: usize = 1 << 16;

/// Most NCF lists (up to 63 sequence numbers each) waiting for the repair budget; NAKs beyond
/// get no NCF ([`SenderStats::ncfs_dropped`]) and their receivers NAK again.
pub const MAX_NCF_QUEUE: usize = 256;

/// The RTT the repair budget assumes for a window-based controller before any is measured.
const BUDGET_RTT_DEFAULT: Duration = Duration::from_secs(1);

/// Buckets of the per-source NAK limit ([`SenderConfig::nak_source_share`]): NAK sources hash
/// into these, so its memory is bounded whatever the number of addresses.
pub const NAK_SOURCE_BUCKETS: usize = 256;

/// The per-source NAK limit's burst, at least: one full NAK list and its first sequence
/// number, so one receiver's burst loss is asked for at once.
const NAK_SOURCE_MIN_BURST: f64 = 64.0;

/// Why [`Sender::send`] refused an APDU. Nothing was queued.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SendError {
    /// The send queue is full; try again after `poll_transmit` drained some.
    #[error("send queue full")]
    WouldBlock,
    /// The APDU is larger than [`SenderConfig::max_apdu`].
    #[error("APDU of {len} bytes exceeds the {max}-byte maximum")]
    TooLarge {
        /// APDU length.
        len: usize,
        /// Configured maximum.
        max: usize,
    },
    /// [`Sender::close`] was called.
    #[error("session closed")]
    Closed,
}

/// One waiting repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repair {
    /// RDATA of this sequence number.
    Data(u32),
    /// Parity packets of the transmission group starting here.
    Parity(u32),
    /// Pro-active parity packets (ODATA) of the transmission group starting here.
    Proactive(u32),
}

/// A PGM source for one transport session.
#[derive(Debug)]
pub struct Sender {
    config: SenderConfig,
    txw: TransmitWindow,
    limiter: Option<RateLimiter>,
    /// The repair budget's bucket (NCF and RDATA bytes), when a controller runs.
    budget: Option<RateLimiter>,
    /// Addresses that sent an ACK with a valid proof of receipt (newest last).
    proven_ackers: Vec<IpAddr>,
    /// The last repair or NCF waited for `budget` (counts each wait once).
    budget_blocked: bool,
    /// The per-source NAK limit's buckets ([`NAK_SOURCE_BUCKETS`], made on first use), and
    /// their rate and burst in bytes, set with the repair budget's.
    nak_sources: Vec<Option<RateLimiter>>,
    nak_source_rate: Option<(u64, u64)>,
    /// ODATA bytes sent since the instant: the measured data rate's current interval.
    odata_meter: (Instant, u64),
    /// ODATA bytes per second over the last full interval (one group RTT, at least 100 ms).
    odata_rate: f64,
    /// Repairs waiting (sequence numbers for RDATA, groups for parity), in NAK arrival
    /// order, and the set of the sequence numbers.
    repairs: VecDeque<Repair>,
    repair_set: HashSet<u32>,
    /// When each queued repair was last confirmed by an NCF (only with an NCF hold-off).
    ncf_sent: HashMap<u32, Instant>,
    /// NCF lists waiting to go out (each at most 63 sequence numbers), and whether they
    /// confirm parity NAKs.
    ncfs: VecDeque<(bool, SqnList)>,
    /// When each group with parity pending was last confirmed (the NCF hold-off, parity).
    parity_ncf_sent: HashMap<u32, Instant>,
    /// On-demand parity state, when [`SenderConfig::fec`] is on.
    parity: Option<ParityRepairs>,
    /// The longest recent RTTs of the receivers (ACKs and NAK reports).
    grtt: GroupRtt,
    /// Receivers heard from (NAK or ACK) and when last: the group size estimate. Bounded by
    /// [`MAX_GROUP_TRACKED`].
    heard: HashMap<IpAddr, Instant>,
    /// General polls counting the receivers.
    poll: Option<poll::GroupPoll>,
    spm_sqn: u32,
    next_ambient: Instant,
    next_heartbeat: Option<Instant>,
    /// No heartbeat before this while new data waits to be sent: the last ODATA plus the
    /// group RTT then ([`Sender::heartbeat_at`]).
    heartbeat_floor: Option<Instant>,
    heartbeat_ivl: Duration,
    /// When the last SPM went out.
    last_spm: Instant,
    /// The group RTT the last SPM carried (OPT_GRTT).
    grtt_told: Option<Duration>,
    /// The NAK horizon last computed ([`SenderConfig::hold_for_naks`]).
    nak_hold: Duration,
    /// The NAK horizon the controller was last told.
    nak_hold_told: Duration,
    /// ODATA is waiting for the transmit window's hold (counted once per wait).
    odata_held: bool,
    /// When an SPM should carry a changed group RTT (`Sender::note_grtt_news`).
    grtt_spm_at: Option<Instant>,
    spm_now: bool,
    /// SPMs of a burst still to send (`SenderConfig::spm_burst`).
    spm_burst_left: u32,
    /// When the last ODATA went out (`None` also once a burst after a silence was armed).
    last_odata: Option<Instant>,
    syn_sent: bool,
    closing: bool,
    /// The session was aborted ([`Sender::abort`]) with this error code: only SPMs carrying
    /// OPT_RST go out.
    aborted: Option<u8>,
    cc: Option<Box<dyn CongestionControl>>,
    /// Signed mode: the block being filled (its packets have sequence numbers after the
    /// list's, not yet in `txw`).
    block: Option<Block>,
    /// Signed mode: the sequence number of the last list queued.
    last_list: Option<u32>,
    /// Packets counted from the first that the acker's ACKs showed received, at most.
    acker_reached: Option<u64>,
    /// Receivers' delivery reports, the last per address (bounded by [`MAX_REPORTS`]).
    reports: std::collections::BTreeMap<IpAddr, pgm_wire::Outcome>,
    /// Congestion-control events for the application, bounded.
    events: Events,
    /// When the session is over: linger, expected reports, giving up.
    ending: ending::Ending,
    stats: SenderStats,
}

/// Signed mode: the packets of a block not yet queued, after the sequence number its list
/// will take.
#[derive(Debug)]
struct Block {
    list_sqn: u32,
    packets: Vec<TxPacket>,
}

impl Sender {
    /// A new source. The first SPM goes out immediately.
    pub fn new(config: SenderConfig, now: Instant) -> Sender {
        let bounds = Bounds {
            sqns: config.txw_sqns.max(1),
            bytes: config.txw_max_bytes,
            age: config.txw_secs,
        };
        let limiter = config
            .rate_limit
            .map(|r| RateLimiter::new(r.bytes_per_sec, r.burst.max(config.max_tpdu as u64), now));
        Sender {
            txw: TransmitWindow::new(config.initial_sqn, bounds),
            limiter,
            budget: None,
            proven_ackers: Vec::new(),
            budget_blocked: false,
            nak_sources: Vec::new(),
            nak_source_rate: None,
            odata_meter: (now, 0),
            odata_rate: 0.0,
            repairs: VecDeque::new(),
            repair_set: HashSet::new(),
            ncf_sent: HashMap::new(),
            ncfs: VecDeque::new(),
            parity_ncf_sent: HashMap::new(),
            parity: parity_for(&config),
            grtt: GroupRtt::new(GRTT_ENTRIES, config.grtt_expiry),
            heard: HashMap::new(),
            poll: config
                .group_poll_ivl
                .filter(|_| config.advertise_grtt)
                .map(|ivl| poll::GroupPoll::new(ivl, &config.tsi, now)),
            spm_sqn: 0,
            next_ambient: now + config.spm_ambient,
            next_heartbeat: None,
            heartbeat_floor: None,
            heartbeat_ivl: config.ihb_min,
            last_spm: now,
            grtt_told: None,
            nak_hold: Duration::ZERO,
            nak_hold_told: Duration::ZERO,
            odata_held: false,
            grtt_spm_at: None,
            spm_now: true,
            spm_burst_left: config.spm_burst.saturating_sub(1),
            last_odata: None,
            syn_sent: false,
            closing: false,
            aborted: None,
            cc: build_cc(&config, now),
            block: None,
            last_list: None,
            reports: std::collections::BTreeMap::new(),
            acker_reached: None,
            events: Events::new(),
            ending: ending::Ending::new(config.end.clone(), now),
            stats: SenderStats::default(),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SenderConfig {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    /// Replaces the congestion controller at run time (e.g. [`CcConfig::None`] turns pgmcc
    /// off and leaves the rate limiter alone in charge). A new pgmcc controller starts with
    /// `W = T = 1` and an election request.
    pub fn set_congestion_control(&mut self, cc: CcConfig, now: Instant) {
        self.config.cc = cc;
        self.cc = build_cc(&self.config, now);
        self.nak_hold_told = Duration::ZERO;
        if parity_for(&self.config).is_none() {
            self.parity = None;
        }
    }

    /// What the congestion controller is doing (acker, window or rate, tokens, counters),
    /// if one runs.
    pub fn cc_metrics(&self) -> Option<Metrics> {
        self.cc.as_ref().map(|c| c.metrics())
    }

    /// The controller's counters (default when none runs).
    pub fn cc_stats(&self) -> CcStats {
        self.cc
            .as_ref()
            .map(|c| c.metrics().stats)
            .unwrap_or_default()
    }

    /// The next congestion-control event (acker changes, congestion, stalls, fresh tokens).
    /// At most [`crate::cc::MAX_EVENTS`] wait; a driver that never polls loses the oldest
    /// (counted in [`SenderStats::events_dropped`]), never memory.
    pub fn poll_event(&mut self) -> Option<CcEvent> {
        self.events.pop()
    }

    /// Moves what the controller's last call produced into the sender's event queue.
    fn drain_cc_events(&mut self) {
        if let Some(cc) = self.cc.as_mut() {
            while let Some(ev) = cc.poll_event() {
                self.events.push(ev);
            }
            self.stats.events_dropped = self.events.dropped();
        }
    }

    /// Trailing edge of the transmit window.
    pub fn trail(&self) -> u32 {
        self.txw.trail()
    }

    /// Leading edge: the last ODATA sequence number sent.
    pub fn lead(&self) -> u32 {
        self.txw.lead()
    }

    /// Packets queued by `send` and not yet transmitted.
    pub fn queued_packets(&self) -> usize {
        self.txw.queued() + self.block.as_ref().map_or(0, |b| b.packets.len())
    }

    /// True when nothing is queued: no new data, no repairs, no NCFs.
    pub fn is_idle(&self) -> bool {
        if self.aborted.is_some() {
            return !self.spm_now && self.spm_burst_left == 0;
        }
        self.queued_packets() == 0 && self.repairs.is_empty() && self.ncfs.is_empty()
    }

    /// Queues one APDU (a message). It is split into fragments if larger than one TPDU.
    pub fn send(&mut self, apdu: &[u8]) -> Result<(), SendError> {
        if self.closing {
            return Err(SendError::Closed);
        }
        let max = self.max_apdu();
        if apdu.len() > max {
            return Err(SendError::TooLarge {
                len: apdu.len(),
                max,
            });
        }
        let pieces = self.pieces(apdu.len())?;
        let n = pieces.len();
        if self.queued_packets() + n > self.config.send_queue.max(n) {
            return Err(SendError::WouldBlock);
        }
        if self.config.signer.is_some() {
            let full = self
                .block
                .as_ref()
                .is_some_and(|b| b.packets.len() + n > self.block_capacity());
            if full {
                self.flush_block(false);
            }
            if self.block.is_none() {
                self.block = Some(Block {
                    list_sqn: self.txw.next_sqn(),
                    packets: Vec::new(),
                });
            }
        }
        let first_sqn = self.next_sqn();
        let apdu_len = apdu.len() as u32;
        for (start, end) in pieces {
            let fragment = (n > 1).then_some(Fragment {
                first_sqn,
                offset: start as u32,
                apdu_len,
            });
            let p = TxPacket {
                sqn: self.next_sqn(),
                data: apdu[start..end].to_vec(),
                fragment,
                sent_at: None,
                repaired_at: None,
                hold_from: None,
                naks: 0,
            };
            match self.block.as_mut() {
                Some(b) => b.packets.push(p),
                None => self.txw.push(p),
            }
        }
        if self.txw.peek_unsent().is_none() {
            // Nothing else would go out: do not hold the block back.
            self.flush_block(false);
        }
        self.stats.apdus_sent += 1;
        Ok(())
    }

    /// Payload bytes the next APDU [`Sender::send`] takes fills one packet with: the
    /// stream's first packet carries OPT_SYN and holds less.
    pub fn next_tsdu(&self) -> usize {
        self.config.tsdu_at(self.next_sqn(), false)
    }

    /// Where an APDU of `len` bytes is cut: one packet when it fits the next packet whole,
    /// else fragments sized by the sequence number each gets. A session that does not
    /// fragment ([`SenderConfig::fragments`]) refuses what does not fit one packet.
    fn pieces(&self, len: usize) -> Result<Vec<(usize, usize)>, SendError> {
        let sqn = self.next_sqn();
        let whole = self.config.tsdu_at(sqn, false);
        if len <= whole {
            return Ok(vec![(0, len)]);
        }
        if !self.config.fragments() {
            return Err(SendError::TooLarge { len, max: whole });
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < len {
            let room = self
                .config
                .tsdu_at(sqn.wrapping_add(pieces.len() as u32), true);
            let end = (start + room).min(len);
            pieces.push((start, end));
            start = end;
        }
        Ok(pieces)
    }

    /// The largest APDU [`Sender::send`] takes: [`SenderConfig::max_apdu`], and in signed
    /// mode no more than one block's packets.
    pub fn max_apdu(&self) -> usize {
        if self.config.signer.is_some() {
            let block = self.block_capacity() * self.config.max_tsdu();
            self.config.max_apdu.min(block)
        } else {
            self.config.max_apdu
        }
    }

    /// Packets one signed block holds (a list must fit one TPDU).
    fn block_capacity(&self) -> usize {
        // A list may be the stream's first packet, with OPT_SYN.
        signed::block_capacity(self.config.first_tsdu()).max(1)
    }

    /// The sequence number the next packet queued gets.
    fn next_sqn(&self) -> u32 {
        match &self.block {
            Some(b) => b.list_sqn.wrapping_add(1 + b.packets.len() as u32),
            None => self.txw.next_sqn(),
        }
    }

    /// Signed mode: queues the block being filled after its signed digest list. With
    /// `end`, the list is the session's last, and covers no packets: a block being filled is
    /// flushed under a list of its own first, so the end list has room for the manifest.
    fn flush_block(&mut self, end: bool) {
        let Some(signer) = self.config.signer.clone() else {
            return;
        };
        if end && self.block.is_some() {
            self.flush_block(false);
        }
        let block = match self.block.take() {
            Some(b) => b,
            None if end => Block {
                list_sqn: self.txw.next_sqn(),
                packets: Vec::new(),
            },
            None => return,
        };
        let digests = block
            .packets
            .iter()
            .map(|p| signed::packet_digest(|d| signer.digest(d), p.sqn, p.fragment, &p.data))
            .collect();
        let list = signed::List {
            prev: self.last_list.unwrap_or(block.list_sqn),
            end,
            unix_ms: signer.unix_ms(),
            digests,
            // The end list signs the manifest (with its SHA-256, if set by now).
            manifest: if end {
                self.config.manifest.clone()
            } else {
                None
            },
        };
        let data = signed::encode_list(signer.as_ref(), self.config.tsi, block.list_sqn, &list);
        self.last_list = Some(block.list_sqn);
        self.stats.signed_lists += 1;
        self.txw.push(TxPacket {
            sqn: block.list_sqn,
            data,
            fragment: None,
            sent_at: None,
            repaired_at: None,
            hold_from: None,
            naks: 0,
        });
        for p in block.packets {
            self.txw.push(p);
        }
    }

    /// Ends the session: queued data still goes out, then SPMs carry OPT_FIN. Repairs
    /// continue for as long as the driver keeps the sender.
    pub fn close(&mut self) {
        if !self.closing {
            self.flush_block(true);
            self.closing = true;
            self.spm_now = true;
        }
    }

    /// Replaces the manifest the SPMs carry ([`SenderConfig::manifest`]); typically with the
    /// stream's SHA-256 added once the application has written all of it, before
    /// [`Sender::close`], so the SPMs announcing the end carry it.
    pub fn set_manifest(&mut self, manifest: Option<pgm_wire::Manifest>) {
        self.config.manifest = manifest;
    }

    /// Aborts the session: nothing more is sent or repaired, and a burst of SPMs (at least
    /// three) carries OPT_RST with the N bit (no repairs) and `error_code` (6 bits; 0 =
    /// unknown reason), so receivers give up at once instead of waiting for a source that is
    /// gone (RFC 3208 §9.5). Once they are out the sender is idle and the driver may drop it.
    pub fn abort(&mut self, error_code: u8) {
        if self.aborted.is_none() {
            self.aborted = Some(error_code & 0x3f);
            self.spm_now = true;
            self.spm_burst_left = self.config.spm_burst.max(3) - 1;
            self.repairs.clear();
            self.repair_set.clear();
            self.ncfs.clear();
        }
    }

    /// Takes one datagram from the network. `from` is the sender's IP address as the driver
    /// saw it. Malformed datagrams are counted and dropped.
    pub fn handle(&mut self, now: Instant, from: IpAddr, datagram: &[u8]) {
        if self.ending.end().is_some() {
            // The session is over: the source no longer answers.
            self.stats.ignored += 1;
            return;
        }
        self.take(now, from, datagram);
        self.update_ending(now);
    }

    /// [`Sender::handle`] for a session not over.
    fn take(&mut self, now: Instant, from: IpAddr, datagram: &[u8]) {
        let repr = match Repr::parse(datagram) {
            Ok(r) => r,
            Err(e) => {
                self.stats.malformed += 1;
                trace!(%from, error = %e, "sender: malformed datagram dropped");
                return;
            }
        };
        let ours = repr.tsi() == self.config.tsi;
        let feedback = match repr.body {
            // NAKs count whichever session they name, as they always reach `on_nak`.
            Body::Nak(_) => true,
            Body::Ack(_) => ours && repr.sport == self.config.dport,
            Body::Spmr => ours,
            _ => false,
        };
        if feedback {
            self.ending.heard(now);
        }
        match repr.body {
            Body::Nak(nak) => {
                let rtt = report_rtt(now, &repr.options);
                if self.is_ours(&repr, &nak) {
                    self.note_receiver(now, from, rtt);
                }
                if self.config.repairs {
                    self.on_nak(now, from, &repr, &nak, rtt);
                } else {
                    self.stats.naks_received += 1;
                }
                if let Some(cc) = self.cc.as_mut() {
                    if repr.tsi() == self.config.tsi {
                        let list = repr.options.nak_list.unwrap_or_default();
                        let named = std::iter::once(nak.sqn).chain(list.as_slice().iter().copied());
                        let mut sqns = Vec::with_capacity(1 + list.as_slice().len());
                        let mut lost = Vec::new();
                        let mut covers = None;
                        if repr.header_flags & OPT_PARITY == 0 {
                            sqns.extend(named);
                            covers = sqns.iter().copied().reduce(crate::sqn::max);
                        } else if let Some(k) = self.parity.as_ref().map(|p| p.tg_size()) {
                            // A parity NAK names a group and how many of its packets are
                            // missing, not which: its first `count` stand for them.
                            for s in named {
                                let tg = crate::fec::tg_sqn(s, k);
                                let count = (s.wrapping_sub(tg) % k.max(1)) + 1;
                                lost.extend((0..count).map(|i| tg.wrapping_add(i)));
                                let last = tg.wrapping_add(k - 1);
                                covers = Some(covers.map_or(last, |c| crate::sqn::max(c, last)));
                            }
                        }
                        let nak = Nak {
                            from,
                            covers,
                            lost: if lost.is_empty() { &sqns } else { &lost },
                            sqns: &sqns,
                            options: &repr.options,
                            rtt: report_rtt(now, &repr.options),
                        };
                        cc.on_nak(now, &nak);
                        self.drain_cc_events();
                    }
                }
            }
            Body::Ack(ack) if repr.tsi() == self.config.tsi && repr.sport == self.config.dport => {
                self.stats.acks_received += 1;
                // An ACK for data never sent is forged or stale: the controller never sees it.
                if self.stats.odata_packets == 0 || crate::sqn::gt(ack.rx_max, self.txw.lead()) {
                    self.stats.acks_rejected += 1;
                    return;
                }
                let Some(proven) = self.check_proof(from, &ack, &repr.options) else {
                    return;
                };
                let rtt = report_rtt(now, &repr.options);
                self.note_receiver(now, from, rtt);
                if let Some(cc) = self.cc.as_mut() {
                    if cc.metrics().acker == Some(from) {
                        let n =
                            u64::from(crate::sqn::distance(self.config.initial_sqn, ack.rx_max))
                                + 1;
                        self.acker_reached = Some(self.acker_reached.map_or(n, |r| r.max(n)));
                    }
                    let ack = Ack {
                        from,
                        ack,
                        options: &repr.options,
                        rtt,
                        proven,
                    };
                    cc.on_ack(now, &ack);
                    self.drain_cc_events();
                }
            }
            Body::Spmr if repr.tsi() == self.config.tsi => {
                self.stats.spmrs_received += 1;
                self.spm_now = true;
            }
            Body::Polr(_) if repr.tsi() == self.config.tsi && repr.options.outcome.is_some() => {
                if let Some(outcome) = repr.options.outcome {
                    self.on_report(from, outcome);
                }
            }
            Body::Polr(r) if repr.tsi() == self.config.tsi && repr.sport == self.config.dport => {
                let nla = self.config.source_nla;
                if self
                    .poll
                    .as_mut()
                    .is_some_and(|p| p.on_polr(now, from, r.sqn, r.round, nla))
                {
                    self.stats.polrs_received += 1;
                }
            }
            _ => self.stats.ignored += 1,
        }
        self.refresh_budget(now);
    }

    /// A receiver's delivery report: kept, the last one per address, for at most
    /// [`MAX_REPORTS`] addresses (more are counted and dropped).
    fn on_report(&mut self, from: IpAddr, outcome: pgm_wire::Outcome) {
        self.stats.reports_received += 1;
        if self.reports.len() >= MAX_REPORTS && !self.reports.contains_key(&from) {
            self.stats.reports_dropped += 1;
            return;
        }
        self.reports.insert(from, outcome);
    }

    /// How far the acker has got: the number of packets from the session's first up to the
    /// highest one an ACK of the current acker reported (it may still miss some before it).
    /// `None` before any such ACK, or without a controller that elects an acker.
    pub fn acker_reached(&self) -> Option<u64> {
        self.acker_reached
    }

    /// The receivers' delivery reports (OPT_OUTCOME), the latest per address, by address.
    pub fn reports(&self) -> impl Iterator<Item = (IpAddr, &pgm_wire::Outcome)> {
        self.reports.iter().map(|(a, o)| (*a, o))
    }

    /// Checks an ACK's proof of receipt (OPT_ACK_PROOF). `None`: refused (a wrong proof, or
    /// none from an address that proved itself before), counted. `Some(proven)` otherwise;
    /// without a proof key every ACK counts as proven.
    fn check_proof(
        &mut self,
        from: IpAddr,
        ack: &pgm_wire::AckRepr,
        options: &Options<'_>,
    ) -> Option<bool> {
        let Some(key) = self.config.ack_proof else {
            return Some(true);
        };
        match options.ack_proof {
            Some(p) => {
                if p.value != ack_proof_for(ack.rx_max, ack.bitmap, |s| ack_nonce(&key, s)) {
                    self.stats.acks_proof_failed += 1;
                    return None;
                }
                if !self.proven_ackers.contains(&from) {
                    if self.proven_ackers.len() >= PROVEN_ACKERS {
                        self.proven_ackers.remove(0);
                    }
                    self.proven_ackers.push(from);
                }
                Some(true)
            }
            None if self.proven_ackers.contains(&from) => {
                self.stats.acks_proof_failed += 1;
                None
            }
            None => {
                self.stats.acks_unproven += 1;
                Some(false)
            }
        }
    }

    /// Sets the repair budget's rate from the controller's current rate and the group RTT.
    fn refresh_budget(&mut self, now: Instant) {
        self.nak_source_rate = None;
        let (Some(share), Some(cc)) = (self.config.repair_budget, self.cc.as_ref()) else {
            self.budget = None;
            return;
        };
        let m = cc.metrics();
        let rtt = self
            .grtt(now)
            .unwrap_or(BUDGET_RTT_DEFAULT)
            .as_secs_f64()
            .max(1e-3);
        let pps = match (m.rate, m.window) {
            (Some(r), _) => r.pps,
            (None, Some(w)) => w / rtt,
            (None, None) => {
                self.budget = None;
                return;
            }
        };
        // The window per group RTT understates a window-based controller's rate when the
        // acker is nearer than the farthest receiver: what it actually let out counts too.
        let (since, bytes) = self.odata_meter;
        let elapsed = now.saturating_duration_since(since).as_secs_f64();
        if elapsed >= rtt.max(0.1) {
            self.odata_rate = bytes as f64 / elapsed;
            self.odata_meter = (now, 0);
        }
        let tpdu = self.config.max_tpdu as f64;
        let session = (pps * tpdu).max(self.odata_rate);
        let rate = (share.max(0.0) * session).clamp(1.0, 1e12);
        let burst = (rate * rtt).max(4.0 * tpdu).min(1e12) as u64;
        self.nak_source_rate = self.config.nak_source_share.map(|f| {
            let r = (f.max(0.0) * session).clamp(1.0, 1e12);
            (
                r as u64,
                (r * rtt).max(NAK_SOURCE_MIN_BURST * tpdu).min(1e12) as u64,
            )
        });
        match &mut self.budget {
            Some(b) => b.set_rate(now, rate as u64, burst),
            None => self.budget = Some(RateLimiter::new(rate as u64, burst, now)),
        }
    }

    /// True when `from`'s share ([`SenderConfig::nak_source_share`]) lets it queue `packets`
    /// more repairs; charges them if so.
    fn source_allows(&mut self, now: Instant, from: IpAddr, packets: usize) -> bool {
        let Some((rate, burst)) = self.nak_source_rate else {
            return true;
        };
        if self.nak_sources.is_empty() {
            self.nak_sources = vec![None; NAK_SOURCE_BUCKETS];
        }
        let bytes = packets.saturating_mul(self.config.max_tpdu);
        let i = nak_source_bucket(from, &self.config.tsi);
        let Some(slot) = self.nak_sources.get_mut(i) else {
            return true;
        };
        let b = slot.get_or_insert_with(|| RateLimiter::new(rate, burst, now));
        b.set_rate(now, rate, burst);
        if !b.allows(now, bytes) {
            self.stats.nak_sqns_source_limited += packets as u64;
            return false;
        }
        b.charge(now, bytes);
        true
    }

    /// True when the repair budget lets `len` bytes of NCF or RDATA go now.
    fn budget_allows(&mut self, now: Instant, len: usize) -> bool {
        let ok = self.budget.as_mut().is_none_or(|b| b.allows(now, len));
        if !ok && !self.budget_blocked {
            self.stats.repairs_budget_limited += 1;
        }
        self.budget_blocked = !ok;
        ok
    }

    /// When the repair budget lets `len` bytes go (`Instant::ZERO`: now).
    fn budget_ready_at(&self, len: usize) -> Instant {
        self.budget
            .as_ref()
            .map_or(Instant::ZERO, |b| b.ready_at(len))
    }

    /// When the rate limit lets `len` bytes go (`Instant::ZERO`: now).
    fn limiter_ready_at(&self, len: usize) -> Instant {
        self.limiter
            .as_ref()
            .map_or(Instant::ZERO, |l| l.ready_at(len))
    }

    /// A NAK (selective or parity) for this session, source and group.
    fn is_ours(&self, repr: &Repr<'_>, nak: &NakRepr) -> bool {
        repr.tsi() == self.config.tsi
            && repr.sport == self.config.dport
            && nak.source == self.config.source_nla
            && nak.group == self.config.group
    }

    /// A receiver of this session was heard (ACK or NAK), with its RTT if it reported one.
    fn note_receiver(&mut self, now: Instant, from: IpAddr, rtt: Option<RttSample>) {
        // As the controller believes it: a receiver caught inflating its round trip does not
        // set the group RTT either.
        let rtt = rtt.map(|r| self.cc.as_ref().map_or(r, |c| c.credible_rtt(now, from, r)));
        if let Some(r) = rtt.filter(|r| r.raw_millis() <= crate::cc::rtt::MAX_RTT_MS) {
            self.grtt.note(now, from, r.secs());
            self.note_grtt_news(now);
        }
        if self.heard.len() >= MAX_GROUP_TRACKED && !self.heard.contains_key(&from) {
            let expiry = self.config.grtt_expiry;
            self.heard
                .retain(|_, &mut t| now.saturating_duration_since(t) < expiry);
            if self.heard.len() >= MAX_GROUP_TRACKED {
                return;
            }
        }
        self.heard.insert(from, now);
    }

    /// The group RTT: the longest RTT a receiver reported within [`SenderConfig::grtt_expiry`]
    /// (at most [`MAX_GRTT`]); `None` before any report (no controller runs, or no
    /// receiver answered yet).
    pub fn grtt(&self, now: Instant) -> Option<Duration> {
        let s = self.grtt.secs(now)?;
        Some(Duration::from_secs_f64(s).min(MAX_GRTT))
    }

    /// Recomputes the NAK horizon, and tells the controller when it moved by more than an
    /// eighth.
    fn update_nak_hold(&mut self, now: Instant) {
        let h = self.nak_horizon(now);
        self.nak_hold = h;
        let told = self.nak_hold_told;
        let (hi, lo) = (h.max(told), h.min(told));
        if hi == lo || !(lo.is_zero() || hi - lo > told / 8) {
            return;
        }
        self.nak_hold_told = h;
        if let Some(cc) = self.cc.as_mut() {
            cc.set_source_limits(SourceLimits {
                txw_sqns: txw_packets(&self.config),
                nak_horizon: h,
            });
        }
    }

    /// How long the transmit window keeps a packet before its count or byte bound may evict
    /// it ([`SenderConfig::hold_for_naks`]): zero without a hold.
    fn nak_horizon(&self, now: Instant) -> Duration {
        let c = &self.config;
        if !(c.hold_for_naks && c.advertise_grtt && c.repairs) {
            return Duration::ZERO;
        }
        self.grtt(now).map_or(Duration::ZERO, |g| {
            g.mul_f64(crate::receiver::DEFAULT_NAK_BO_GRTTS + 1.0)
                + (g * 2).max(crate::receiver::rxw::MIN_SCALED_WAIT)
        })
    }

    /// Every receiver heard from (NAK or ACK) in the session so far, in no order (at most
    /// [`MAX_GROUP_TRACKED`]; beyond that, those silent for [`SenderConfig::grtt_expiry`]
    /// make room).
    pub fn receivers_heard(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.heard.keys().copied()
    }

    /// The group size OPT_GRTT advertises: the larger of the receivers heard from (NAK or
    /// ACK) within [`SenderConfig::grtt_expiry`] and the latest poll's estimate
    /// ([`SenderConfig::group_poll_ivl`]).
    pub fn group_size(&self, now: Instant) -> usize {
        let expiry = self.config.grtt_expiry;
        let heard = self
            .heard
            .values()
            .filter(|&&t| now.saturating_duration_since(t) < expiry)
            .count();
        let polled = self.poll.as_ref().and_then(|p| p.estimate(now));
        heard.max(polled.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX)))
    }

    /// OPT_GRTT for an SPM or NCF, when advertised and measured.
    fn grtt_option(&self, now: Instant) -> Option<Grtt> {
        if !self.config.advertise_grtt {
            return None;
        }
        let g = self.grtt(now)?;
        Some(Grtt {
            grtt_us: u32::try_from(g.as_micros()).unwrap_or(u32::MAX).max(1),
            gsize: u32::try_from(self.group_size(now)).unwrap_or(u32::MAX),
        })
    }

    fn on_nak(
        &mut self,
        now: Instant,
        from: IpAddr,
        repr: &Repr<'_>,
        nak: &NakRepr,
        rtt: Option<RttSample>,
    ) {
        if !self.is_ours(repr, nak) {
            self.stats.naks_foreign += 1;
            return;
        }
        self.stats.naks_received += 1;
        // One RTT after a repair left, a NAK may still be one sent before it arrived.
        let holdoff = if self.config.repair_holdoff {
            let own = rtt
                .filter(|r| r.raw_millis() <= crate::cc::rtt::MAX_RTT_MS)
                .map(|r| Duration::from_millis(u64::from(r.millis())).min(MAX_GRTT));
            self.grtt(now).max(own)
        } else {
            None
        };
        // With a repair budget, repairs may wait: confirm a waiting one at most once per
        // group RTT, or each repeated NAK would buy an NCF out of the same budget.
        let ncf_holdoff = self
            .config
            .ncf_holdoff
            .or_else(|| self.config.repair_budget.and(self.grtt(now)));
        let list = repr.options.nak_list.unwrap_or_default();
        if repr.header_flags & OPT_PARITY != 0 {
            let sqns = core::iter::once(&nak.sqn).chain(list.as_slice()).copied();
            self.on_parity_nak(now, from, sqns, holdoff, ncf_holdoff);
            return;
        }
        let mut ncf = SqnList::new();
        for &sqn in core::iter::once(&nak.sqn).chain(list.as_slice()) {
            self.stats.nak_sqns_received += 1;
            let Some(p) = self.txw.get_sent_mut(sqn) else {
                self.stats.naks_outside_window += 1;
                continue;
            };
            p.naks = p.naks.saturating_add(1);
            match p.naks {
                1 => self.stats.sqns_naked += 1,
                2 => self.stats.sqns_naked_again += 1,
                _ => {}
            }
            if let (Some(h), Some(t)) = (holdoff, p.repaired_at) {
                if now < t + h && !self.repair_set.contains(&sqn) {
                    self.stats.naks_held_off += 1;
                    continue;
                }
            }
            // A new repair is charged to the NAK's source; beyond its share, no NCF either:
            // it NAKs again.
            if !self.repair_set.contains(&sqn) && !self.source_allows(now, from, 1) {
                continue;
            }
            let fresh = self.repair_set.insert(sqn);
            if fresh {
                self.repairs.push_back(Repair::Data(sqn));
            } else {
                self.stats.naks_duplicate += 1;
            }
            if let Some(holdoff) = ncf_holdoff {
                let recent = self.ncf_sent.get(&sqn).is_some_and(|&t| now < t + holdoff);
                if !fresh && recent {
                    self.stats.ncfs_held += 1;
                    continue;
                }
                self.ncf_sent.insert(sqn, now);
            }
            self.push_ncf(&mut ncf, sqn, false);
        }
        if !ncf.is_empty() {
            self.queue_ncf(ncf, false);
        }
    }

    /// Parity NAK entries (`TG_SQN | (count - 1)` each): RFC 3208 §11.4's consolidation, the
    /// same hold-offs as selective repairs (the hold-off's clock is the group's latest parity
    /// burst, and it holds off only requests that burst covered).
    fn on_parity_nak(
        &mut self,
        now: Instant,
        from: IpAddr,
        sqns: impl Iterator<Item = u32>,
        holdoff: Option<Duration>,
        ncf_holdoff: Option<Duration>,
    ) {
        let mut ncf = SqnList::new();
        for s in sqns {
            self.stats.parity_naks_received += 1;
            let Some(k) = self.parity.as_ref().map(|p| p.tg_size()) else {
                self.stats.parity_naks_refused += 1;
                continue;
            };
            // Charged to the source by the count it asks for (`TG_SQN | (count - 1)`),
            // repeats included: an honest receiver asks for about its losses per group.
            let asked = (s & k.saturating_sub(1)) as usize + 1;
            if !self.source_allows(now, from, asked) {
                continue;
            }
            let Some(parity) = self.parity.as_mut() else {
                continue;
            };
            let tg = crate::fec::tg_sqn(s, k);
            let (verdict, naks) = parity.on_nak(now, s, &self.txw, holdoff);
            match naks {
                1 => self.stats.tgs_naked += 1,
                2 => self.stats.tgs_naked_again += 1,
                _ => {}
            }
            let count = match verdict {
                Verdict::OutsideWindow => {
                    self.stats.naks_outside_window += 1;
                    continue;
                }
                Verdict::HeldOff => {
                    self.stats.naks_held_off += 1;
                    continue;
                }
                Verdict::Queue { count } => {
                    self.repairs.push_back(Repair::Parity(tg));
                    self.parity_ncf_sent.insert(tg, now);
                    count
                }
                Verdict::Confirm { count, raised } => {
                    self.stats.naks_duplicate += 1;
                    if let Some(h) = ncf_holdoff {
                        let recent = self.parity_ncf_sent.get(&tg).is_some_and(|&t| now < t + h);
                        if recent && !raised {
                            self.stats.ncfs_held += 1;
                            continue;
                        }
                    }
                    self.parity_ncf_sent.insert(tg, now);
                    count
                }
            };
            // A parity NCF confirms at least the count asked for (§11.5).
            self.push_ncf(&mut ncf, tg.wrapping_add(count.min(k) - 1), true);
        }
        if !ncf.is_empty() {
            self.queue_ncf(ncf, true);
        }
    }

    /// Adds `sqn` to the NCF list being built, queueing it first when full.
    fn push_ncf(&mut self, ncf: &mut SqnList, sqn: u32, parity: bool) {
        if ncf.push(sqn).is_err() {
            self.queue_ncf(core::mem::take(ncf), parity);
            let _ = ncf.push(sqn);
        }
    }

    /// Queues an NCF list, or drops it (counted) when [`MAX_NCF_QUEUE`] are waiting.
    fn queue_ncf(&mut self, list: SqnList, parity: bool) {
        if self.ncfs.len() >= MAX_NCF_QUEUE {
            self.stats.ncfs_dropped += list.as_slice().len() as u64;
        } else {
            self.ncfs.push_back((parity, list));
        }
    }

    /// Processes expired timers. Calling it early is harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(cc) = self.cc.as_mut() {
            cc.on_timeout(now);
            self.drain_cc_events();
        }
        self.update_nak_hold(now);
        let (first, n) = self.txw.evict(now, self.nak_hold);
        self.forget_repairs(first, n);
        self.refresh_budget(now);
        self.run_poll(now);
        self.update_ending(now);
    }

    /// How the session ended, once it has: [`SessionEnd::Finished`] when every byte left,
    /// the linger is over and the expected reports are in ([`SenderConfig::end`]), or
    /// [`SessionEnd::Abandoned`]. From then on the source sends nothing (but an abort's
    /// OPT_RST) and takes nothing: drivers stop.
    pub fn end(&self) -> Option<&SessionEnd> {
        self.ending.end()
    }

    /// When every byte the application gave had left as ODATA, once it closed: the transfer
    /// time, without the linger.
    pub fn data_sent_at(&self) -> Option<Instant> {
        self.ending.drained_at()
    }

    /// Decides whether the session is over.
    fn update_ending(&mut self, now: Instant) {
        let state = ending::Now {
            now,
            idle: self.is_idle(),
            drained: self.closing && self.queued_packets() == 0,
            cc: self.cc.is_some(),
            grtt: self.grtt(now),
            reports: &self.reports,
        };
        self.ending.update(&state);
    }

    /// Starts or ends the rounds of the group poll that are due.
    fn run_poll(&mut self, now: Instant) {
        let (grtt, nla) = (self.grtt(now), self.config.source_nla);
        if let Some(p) = self.poll.as_mut() {
            p.on_timeout(now, grtt, nla);
        }
    }

    fn forget_repairs(&mut self, first: u32, n: u32) {
        if n == 0 {
            return;
        }
        let trail = self.txw.trail();
        let parity_gone = self.parity.as_mut().is_some_and(|p| p.forget_before(trail));
        if parity_gone {
            self.parity_ncf_sent
                .retain(|&tg, _| !crate::sqn::lt(tg, trail));
        }
        if self.repair_set.is_empty() && !parity_gone {
            return;
        }
        for i in 0..n {
            self.repair_set.remove(&first.wrapping_add(i));
        }
        let (set, parity) = (&self.repair_set, &self.parity);
        self.repairs.retain(|r| match r {
            Repair::Data(s) => set.contains(s),
            Repair::Parity(tg) | Repair::Proactive(tg) => {
                parity.as_ref().is_some_and(|p| p.is_pending(*tg))
            }
        });
        self.ncf_sent.retain(|s, _| set.contains(s));
    }

    /// Bytes the repair `r` takes on the wire (for parity not yet encoded, at most).
    fn repair_len(&self, r: Repair) -> Option<usize> {
        match r {
            Repair::Data(s) => self.txw.get_sent(s).map(|p| p.data.len() + DATA_OVERHEAD),
            Repair::Parity(tg) | Repair::Proactive(tg) => {
                let max = self.config.max_tsdu() + 2;
                let p = self.parity.as_ref()?;
                Some(p.next_len(tg, max) + PARITY_OVERHEAD)
            }
        }
    }

    /// When `handle_timeout` (or `poll_transmit`) next has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.ending.end().is_some() && self.aborted.is_none() {
            return None;
        }
        if self.spm_now || self.spm_burst_left > 0 {
            return Some(Instant::ZERO);
        }
        let mut t = self.next_ambient;
        if let Some(at) = self.grtt_spm_at {
            t = t.min(at);
        }
        if let Some(h) = self.heartbeat_at() {
            t = t.min(h);
        }
        if let Some((_, list)) = self.ncfs.front() {
            t = t.min(self.budget_ready_at(ncf_len(list)));
        }
        // As poll_transmit: a waiting repair goes first, unless only the repair budget holds
        // it back, in which case new data may go meanwhile.
        let repair = self.repairs.front().and_then(|&r| self.repair_len(r));
        let data_may_go = match repair {
            Some(len) => {
                let (budget, limiter) = (self.budget_ready_at(len), self.limiter_ready_at(len));
                t = t.min(budget.max(limiter));
                budget > limiter
            }
            None => true,
        };
        if data_may_go && self.cc_allows() {
            if let Some(p) = self.txw.peek_unsent() {
                let ready = self.limiter_ready_at(p.data.len() + DATA_OVERHEAD);
                let held = self.txw.hold_release(self.nak_hold);
                t = t.min(held.map_or(ready, |h| h.max(ready)));
            }
        }
        if let Some(at) = self.txw.next_age_eviction() {
            t = t.min(at);
        }
        if let Some(at) = self.cc.as_ref().and_then(|c| c.poll_timeout()) {
            t = t.min(at);
        }
        // Polls wait for a group RTT: no wake-ups before the first sample.
        let polling = self.aborted.is_none() && !self.grtt.is_empty();
        if let Some(p) = self.poll.as_ref().filter(|_| polling) {
            t = t.min(p.deadline());
        }
        // A linger can end only with nothing queued; until then, sending decides.
        if self.is_idle() {
            if let Some(at) = self.ending.deadline(self.cc.is_some()) {
                t = t.min(at);
            }
        }
        Some(t)
    }

    /// Writes the next datagram to send into `buf` (which must hold
    /// [`SenderConfig::max_tpdu`] bytes) and says where it goes; `None` when nothing is due.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if self.aborted.is_some() {
            let due = self.spm_now || self.spm_burst_left > 0;
            return if due { self.emit_spm(now, buf) } else { None };
        }
        if self.ending.end().is_some() {
            return None;
        }
        let t = self.next_transmit(now, buf);
        if t.is_none() {
            self.update_ending(now);
        }
        t
    }

    /// [`Sender::poll_transmit`] for a session neither aborted nor over.
    fn next_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if let Some(len) = self.ncfs.front().map(|(_, l)| ncf_len(l)) {
            if self.budget_allows(now, len) {
                if let Some((parity, list)) = self.ncfs.pop_front() {
                    return self.emit_ncf(now, &list, parity, buf);
                }
            }
        }
        let spm_due = self.spm_now
            || self.spm_burst_left > 0
            || self.grtt_spm_at.is_some_and(|at| now >= at)
            || now >= self.next_ambient
            || self.heartbeat_at().is_some_and(|h| now >= h);
        if spm_due {
            return self.emit_spm(now, buf);
        }
        self.run_poll(now);
        if let Some(poll) = self.poll.as_mut().and_then(|p| p.take_pending()) {
            self.stats.polls_sent += 1;
            let repr = Repr::downstream(self.config.tsi, self.config.dport, Body::Poll(poll));
            return self.finish(now, &repr, Destination::Group, buf);
        }
        while let Some(&r) = self.repairs.front() {
            let Some(len) = self.repair_len(r) else {
                self.repairs.pop_front();
                if let Repair::Data(sqn) = r {
                    self.repair_set.remove(&sqn);
                    self.ncf_sent.remove(&sqn);
                }
                continue;
            };
            if !self.budget_allows(now, len) {
                // Over the repair budget: new data may still go.
                break;
            }
            if !self.rate_allows(now, len) {
                return None;
            }
            match r {
                Repair::Data(sqn) => {
                    self.repairs.pop_front();
                    self.repair_set.remove(&sqn);
                    self.ncf_sent.remove(&sqn);
                    return self.emit_data(now, sqn, true, buf);
                }
                Repair::Parity(tg) | Repair::Proactive(tg) => {
                    let next = self.parity.as_mut().and_then(|p| p.next(tg, &self.txw));
                    let Some((packet, more)) = next else {
                        self.repairs.pop_front();
                        continue;
                    };
                    if !more {
                        self.repairs.pop_front();
                    }
                    if let Some(p) = self.parity.as_mut() {
                        p.sent(now, tg);
                    }
                    let proactive = matches!(r, Repair::Proactive(_));
                    if !proactive {
                        // Asked for by a NAK: the group's NAK horizon restarts.
                        let k = self.parity.as_ref().map_or(0, |p| p.tg_size());
                        self.txw.note_repair(tg, k, now);
                    }
                    return self.emit_parity(now, &packet, proactive, buf);
                }
            }
        }
        if self.txw.peek_unsent().is_none() {
            self.flush_block(false);
        }
        let (sqn, len) = self
            .txw
            .peek_unsent()
            .map(|p| (p.sqn, p.data.len() + DATA_OVERHEAD))?;
        if !self.cc_allows() {
            return None;
        }
        self.update_nak_hold(now);
        if self
            .txw
            .hold_release(self.nak_hold)
            .is_some_and(|t| t > now)
        {
            if !self.odata_held {
                self.odata_held = true;
                self.stats.odata_held += 1;
            }
            return None;
        }
        self.odata_held = false;
        if !self.rate_allows(now, len) {
            return None;
        }
        let silent = self
            .last_odata
            .is_some_and(|t| now.saturating_duration_since(t) >= self.config.ihb_max);
        if silent && self.config.spm_burst > 1 {
            // Data resumes after a long silence: announce the session again first.
            self.last_odata = None;
            self.spm_burst_left = self.config.spm_burst;
            return self.emit_spm(now, buf);
        }
        self.emit_data(now, sqn, false, buf)
    }

    /// When the next heartbeat SPM is due.
    ///
    /// RFC 3208 §6.1 sends heartbeats "to provoke prompt detection of missing packets in the
    /// absence of data to transmit", IHB_MIN after the last ODATA. While new data waits for
    /// the congestion controller (or the rate limit), data is not absent: the controller's
    /// feedback lets the next ODATA go within about one round trip, and that ODATA shows
    /// receivers the lead as well as an SPM would. So, with new data queued and
    /// [`SenderConfig::heartbeat_waits_for_grtt`] on, the first heartbeat waits at least one
    /// group RTT after the last ODATA. Without the wait, a
    /// window-limited source on a path longer than IHB_MIN sends one SPM in every idle gap
    /// of its ACK clock, at the same point of every round trip; on a drop-tail dumbbell that
    /// one small packet decided which flow's train met the full queue (docs/pgmcc.md,
    /// "Heartbeat SPMs and the drop-tail phase").
    fn heartbeat_at(&self) -> Option<Instant> {
        let h = self.next_heartbeat?;
        match self.heartbeat_floor {
            Some(floor) if self.txw.peek_unsent().is_some() => Some(h.max(floor)),
            _ => Some(h),
        }
    }

    /// Schedules an SPM when the group RTT differs by more than a quarter from the one the
    /// last SPM carried (or none did yet): at most one per IHB_MIN or group RTT after the
    /// last SPM, whichever is longer ([`SenderConfig::advertise_grtt`]).
    fn note_grtt_news(&mut self, now: Instant) {
        if !self.config.advertise_grtt {
            return;
        }
        let Some(g) = self.grtt(now) else {
            return;
        };
        let news = self.grtt_told.is_none_or(|told| {
            let (hi, lo) = (g.max(told), g.min(told));
            hi - lo > told / 4
        });
        self.grtt_spm_at = news.then(|| self.last_spm + self.config.ihb_min.max(g));
    }

    /// Congestion control grants tokens to new data only (repairs are not regulated, §3.8).
    fn cc_allows(&self) -> bool {
        self.cc.as_ref().is_none_or(|c| c.can_send())
    }

    fn rate_allows(&mut self, now: Instant, len: usize) -> bool {
        self.limiter.as_mut().is_none_or(|l| l.allows(now, len))
    }

    fn charge(&mut self, now: Instant, len: usize) {
        self.stats.bytes_sent += len as u64;
        if let Some(l) = &mut self.limiter {
            l.charge(now, len);
        }
    }

    fn finish(
        &mut self,
        now: Instant,
        repr: &Repr<'_>,
        dst: Destination,
        buf: &mut [u8],
    ) -> Option<Transmit> {
        match repr.emit(buf) {
            Ok(len) => {
                self.charge(now, len);
                Some(Transmit { dst, len })
            }
            Err(e) => {
                // Only a driver passing a buffer smaller than max_tpdu gets here.
                debug!(error = %e, "sender: cannot emit {}", repr.packet_type());
                None
            }
        }
    }

    fn emit_ncf(
        &mut self,
        now: Instant,
        list: &SqnList,
        parity: bool,
        buf: &mut [u8],
    ) -> Option<Transmit> {
        let (&first, rest) = list.as_slice().split_first()?;
        let body = Body::Ncf(NakRepr {
            sqn: first,
            source: self.config.source_nla,
            group: self.config.group,
        });
        let mut opts = Options::nak(rest, None);
        opts.grtt = self.grtt_option(now);
        if let Some(cc) = &self.cc {
            cc.control_options(&mut opts);
        }
        let mut repr =
            Repr::downstream(self.config.tsi, self.config.dport, body).with_options(opts);
        if parity {
            repr.header_flags |= OPT_PARITY;
        }
        self.stats.ncf_packets += 1;
        if let Some(b) = &mut self.budget {
            b.charge(now, ncf_len(list));
        }
        self.finish(now, &repr, Destination::Group, buf)
    }

    fn emit_spm(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let body = Body::Spm(SpmRepr {
            sqn: self.spm_sqn,
            trail: self.txw.trail(),
            lead: self.txw.lead(),
            path_nla: self.config.source_nla,
        });
        let fin = self.closing && self.txw.queued() == 0;
        let grtt = self.grtt_option(now);
        if grtt.is_some() {
            self.grtt_told = self.grtt(now);
            self.grtt_spm_at = None;
        }
        let mut opts = Options {
            fin: fin && self.aborted.is_none(),
            rst: self.aborted.map(|error_code| pgm_wire::Rst {
                no_repairs: true,
                error_code,
            }),
            manifest: self.config.manifest.clone(),
            grtt,
            fec: self.parity.as_ref().map(|p| Fec {
                proactive: self.config.proactive_parity > 0,
                on_demand: true,
                code: FEC_RS_VANDERMONDE_GF256,
                tgs: p.tg_size(),
            }),
            ..Options::default()
        };
        if let Some(cc) = &self.cc {
            cc.control_options(&mut opts);
        }
        let repr = Repr::downstream(self.config.tsi, self.config.dport, body).with_options(opts);
        self.spm_sqn = self.spm_sqn.wrapping_add(1);
        if self.spm_now {
            self.spm_now = false;
        } else {
            self.spm_burst_left = self.spm_burst_left.saturating_sub(1);
        }
        self.last_spm = now;
        self.next_ambient = now + self.config.spm_ambient;
        if self.heartbeat_at().is_some_and(|h| now >= h) {
            self.heartbeat_ivl = (self.heartbeat_ivl * 2).min(self.config.ihb_max);
            self.next_heartbeat = Some(now + self.heartbeat_ivl);
        }
        self.stats.spm_packets += 1;
        self.finish(now, &repr, Destination::Group, buf)
    }

    fn emit_data(
        &mut self,
        now: Instant,
        sqn: u32,
        repair: bool,
        buf: &mut [u8],
    ) -> Option<Transmit> {
        let trail = self.txw.trail();
        let syn = !repair && !self.syn_sent;
        let join = self
            .config
            .join_window
            .map(|w| crate::sqn::max(trail, sqn.wrapping_sub(w)));
        let p = if repair {
            self.txw.get_sent(sqn)
        } else {
            self.txw.peek_unsent()
        }?;
        let data_len = p.data.len();
        let mut opts = Options {
            fragment: p.fragment,
            syn: syn || (repair && sqn == self.config.initial_sqn),
            join,
            ack_proof: self.config.ack_proof.map(|k| pgm_wire::AckProof {
                value: ack_nonce(&k, sqn),
            }),
            ..Options::default()
        };
        if let Some(cc) = self.cc.as_mut() {
            // The controller adds OPT_PGMCC_DATA and its own options to ODATA.
            if repair {
                cc.on_repair_sent(now, sqn);
            } else {
                cc.on_data_sent(now, sqn, &mut opts);
            }
        }
        let body = if repair {
            Body::Rdata(DataRepr { sqn, trail })
        } else {
            Body::Odata(DataRepr { sqn, trail })
        };
        let emitted = Repr::downstream(self.config.tsi, self.config.dport, body)
            .with_options(opts)
            .with_payload(&p.data)
            .emit(buf);
        let len = match emitted {
            Ok(len) => len,
            Err(e) => {
                debug!(error = %e, sqn, "sender: cannot emit data");
                return None;
            }
        };
        self.charge(now, len);
        self.drain_cc_events();
        if repair {
            if let Some(b) = &mut self.budget {
                b.charge(now, len);
            }
            self.stats.rdata_packets += 1;
            self.ending.repaired(now);
            self.stats.rdata_bytes += data_len as u64;
            if let Some(p) = self.txw.get_sent_mut(sqn) {
                p.repaired_at = Some(now);
                p.hold_from = Some(now);
            }
        } else {
            self.syn_sent = true;
            self.last_odata = Some(now);
            self.odata_meter.1 += len as u64;
            self.stats.odata_packets += 1;
            self.stats.odata_bytes += data_len as u64;
            let (first, n) = self.txw.mark_sent(now, self.nak_hold);
            self.forget_repairs(first, n);
            self.queue_proactive(sqn);
            // Data resets the heartbeat schedule to IHB_MIN (§6.1).
            self.heartbeat_ivl = self.config.ihb_min;
            self.next_heartbeat = Some(now + self.heartbeat_ivl);
            if self.config.heartbeat_waits_for_grtt {
                self.heartbeat_floor = self.grtt(now).map(|g| now + g);
            }
        }
        Some(Transmit {
            dst: Destination::Group,
            len,
        })
    }
}

impl Sender {
    /// ODATA `sqn` went out: if it completed a transmission group, queue the group's
    /// pro-active parity ([`SenderConfig::proactive_parity`]).
    fn queue_proactive(&mut self, sqn: u32) {
        let h = self.config.proactive_parity;
        let Some(p) = self.parity.as_mut().filter(|_| h > 0) else {
            return;
        };
        let k = p.tg_size();
        let tg = crate::fec::tg_sqn(sqn, k);
        if sqn.wrapping_sub(tg) != k - 1 {
            return;
        }
        if p.proactive(tg, h) {
            self.repairs.push_back(Repair::Proactive(tg));
        }
    }

    /// Sends one parity packet with OPT_PARITY (and OPT_VAR_PKTLEN when the group's payload
    /// lengths differ), its encoded OPT_FRAGMENT when the group has one: RDATA on demand,
    /// ODATA when `proactive` (RFC 3208 §11.4).
    fn emit_parity(
        &mut self,
        now: Instant,
        packet: &ParityPacket,
        proactive: bool,
        buf: &mut [u8],
    ) -> Option<Transmit> {
        let trail = self.txw.trail();
        let layout = packet.layout;
        let p = layout.parity_payload_len();
        let (payload, encoded) = packet.shard.split_at(p);
        // RFC 3208 §9.6.2: every parity packet of the first transmission group carries
        // OPT_SYN, so a receiver that rebuilds the first packet still learns the stream start.
        let first_group = self.parity.as_ref().is_some_and(|q| {
            crate::fec::tg_sqn(packet.sqn, q.tg_size()) == self.config.initial_sqn
        });
        let opts = Options {
            syn: first_group,
            fragment_encoded: layout
                .frag
                .then(|| <[u8; FRAGMENT_BODY_LEN]>::try_from(encoded).ok())
                .flatten(),
            ..Options::default()
        };
        let data = DataRepr {
            sqn: packet.sqn,
            trail,
        };
        let body = if proactive {
            Body::Odata(data)
        } else {
            Body::Rdata(data)
        };
        let mut repr = Repr::downstream(self.config.tsi, self.config.dport, body)
            .with_options(opts)
            .with_payload(payload);
        repr.header_flags |= OPT_PARITY;
        if layout.var {
            repr.header_flags |= OPT_VAR_PKTLEN;
        }
        let len = match repr.emit(buf) {
            Ok(len) => len,
            Err(e) => {
                debug!(error = %e, sqn = packet.sqn, "sender: cannot emit parity");
                return None;
            }
        };
        if let Some(cc) = self.cc.as_mut() {
            cc.on_repair_sent(now, packet.sqn);
        }
        self.charge(now, len);
        self.drain_cc_events();
        if let Some(b) = &mut self.budget {
            b.charge(now, len);
        }
        if proactive {
            self.stats.proactive_parity_packets += 1;
        } else {
            self.stats.rdata_packets += 1;
            self.ending.repaired(now);
            self.stats.rdata_bytes += p as u64;
            self.stats.parity_packets += 1;
        }
        Some(Transmit {
            dst: Destination::Group,
            len,
        })
    }
}

/// The congestion controller [`SenderConfig::cc`] asks for, told what the transmit window
/// holds (the NAK horizon follows once a group RTT is measured).
fn build_cc(config: &SenderConfig, now: Instant) -> Option<Box<dyn CongestionControl>> {
    let mut cc = config.cc.build(now)?;
    cc.set_source_limits(SourceLimits {
        txw_sqns: txw_packets(config),
        nak_horizon: Duration::ZERO,
    });
    Some(cc)
}

/// The packets the transmit window is sure to hold: TXW_SQNS, or its byte bound in
/// full-size packets if that is smaller.
fn txw_packets(config: &SenderConfig) -> u32 {
    config.txw_max_bytes.map_or(config.txw_sqns, |b| {
        let p = (b / config.max_tsdu().max(1)).min(u32::MAX as usize) as u32;
        p.clamp(1, config.txw_sqns.max(1))
    })
}

/// The parity state [`SenderConfig::fec`] asks for: none when the size is invalid, the
/// transmit window holds fewer than [`TXW_GROUPS`] groups, or the controller's loss signal
/// needs selective NAKs.
fn parity_for(config: &SenderConfig) -> Option<ParityRepairs> {
    parity_group(config).map(ParityRepairs::new)
}

/// The transmission group size of the parity [`parity_for`] sets up, if any.
fn parity_group(config: &SenderConfig) -> Option<u32> {
    config.fec.filter(|&k| {
        crate::fec::valid_tg_size(k)
            && u64::from(k) * TXW_GROUPS <= u64::from(config.txw_sqns)
            && !config.cc.needs_selective_naks()
    })
}

/// Groups the transmit window must hold for parity: a group is encoded only while all its
/// packets are in the window, and its receivers ask for parity once it is complete, so a
/// window of one group would lose it before any request could arrive.
const TXW_GROUPS: u64 = 4;

/// Bytes a parity packet takes beyond its payload: headers, OPT_LENGTH and an encoded
/// OPT_FRAGMENT.
const PARITY_OVERHEAD: usize = 16 + 8 + 4 + 16;

/// Bytes an NCF for `list` takes on the wire, at most (IPv6 NLAs, OPT_NAK_LIST, OPT_GRTT).
fn ncf_len(list: &SqnList) -> usize {
    16 + 44 + 4 + 4 + 4 * list.as_slice().len() + 12
}

/// The RTT sample of a packet's OPT_PGMCC_FEEDBACK, if it carries one.
fn report_rtt(now: Instant, opts: &Options<'_>) -> Option<RttSample> {
    opts.pgmcc_feedback.map(|f| RttSample::new(now, f.tstamp))
}
