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

mod budget;
mod config;
mod emit;
mod ending;
mod group;
mod naks;
mod parity;
mod poll;
mod proof;
mod queue;
mod rate;
mod stats;
mod txw;

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::IpAddr;

use pgm_wire::{
    Body, DataRepr, Fec, Fragment, Grtt, NakRepr, Options, Repr, SpmRepr, SqnList,
    FEC_RS_VANDERMONDE_GF256, FRAGMENT_BODY_LEN, OPT_PARITY, OPT_VAR_PKTLEN,
};
use thiserror::Error;
use tracing::{debug, trace};

use crate::cc::{
    Ack, CcConfig, CcEvent, CcStats, CongestionControl, Events, Metrics, Nak, Repaired, RttSample,
    SourceLimits,
};
use crate::signed;
use crate::time::{Duration, Instant};
use crate::transmit::{Destination, Transmit};
use parity::{ParityPacket, ParityRepairs, Verdict};
use rate::RateLimiter;
use txw::{Bounds, TransmitWindow, TxPacket};

pub use budget::NAK_SOURCE_BUCKETS;
pub use config::{RateLimit, SenderConfig};
pub use ending::{AbandonReason, EndPolicy, Expect, SessionEnd, LINGER_GRTTS};
pub use group::MAX_GROUP_TRACKED;
pub use proof::{ack_nonce, ack_proof_for};
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

/// Receivers whose delivery reports a source keeps.
pub const MAX_REPORTS: usize = 65_536;

pub use crate::nak_timing::MAX_GRTT;

/// Most NCF lists (up to 63 sequence numbers each) waiting for the repair budget; NAKs beyond
/// get no NCF ([`SenderStats::ncfs_dropped`]) and their receivers NAK again.
pub const MAX_NCF_QUEUE: usize = 256;

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
    /// The repair budget and the per-source NAK limit.
    budget: budget::RepairBudget,
    /// What the addresses that proved receipt acknowledged, and those that contradicted
    /// themselves.
    proofs: proof::Proofs,
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
    /// The receivers heard from, the group RTT, the general polls.
    group: group::GroupView,
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
    /// The session finished and its closing burst of SPMs (OPT_FIN) was armed: `end`
    /// says so once they are out.
    fin_burst: bool,
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
            budget: budget::RepairBudget::new(now),
            proofs: proof::Proofs::default(),
            repairs: VecDeque::new(),
            repair_set: HashSet::new(),
            ncf_sent: HashMap::new(),
            ncfs: VecDeque::new(),
            parity_ncf_sent: HashMap::new(),
            parity: parity_for(&config),
            group: group::GroupView::new(
                config.grtt_expiry,
                config
                    .group_poll_ivl
                    .filter(|_| config.advertise_grtt)
                    .map(|ivl| poll::GroupPoll::new(ivl, &config.tsi, now)),
            ),
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
            fin_burst: false,
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
            return !self.spm_due_now();
        }
        self.queued_packets() == 0 && self.repairs.is_empty() && self.ncfs.is_empty()
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
            self.arm_final_burst();
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
        match repr.body {
            Body::Nak(nak) => {
                // A receiver is there (NAKs count whichever session they name).
                self.ending.heard(now);
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
                self.ending.heard(now);
                self.stats.acks_received += 1;
                // An ACK for data never sent is forged or stale: the controller never sees it.
                if self.stats.odata_packets == 0 || crate::sqn::gt(ack.rx_max, self.txw.lead()) {
                    self.stats.acks_rejected += 1;
                    return;
                }
                let key = self.config.ack_proof;
                let checked = self
                    .proofs
                    .check(key, from, &ack, &repr.options, &mut self.stats);
                let Some(proven) = checked else {
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
                self.ending.heard(now);
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
                    .group
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
    /// [`MAX_REPORTS`] addresses (more are counted and dropped). A report that does not name
    /// the address it came from as its reporter is refused: a report replayed in another
    /// receiver's name (in keyed mode, the sealed name cannot be changed).
    fn on_report(&mut self, from: IpAddr, outcome: pgm_wire::Outcome) {
        self.stats.reports_received += 1;
        if outcome.reporter != Some(from) {
            self.stats.reports_refused += 1;
            return;
        }
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

    /// Sets the repair budget's rates from the controller's current rate and the group RTT.
    fn refresh_budget(&mut self, now: Instant) {
        let inputs = budget::Inputs {
            repair_share: self.config.repair_budget,
            source_share: self.config.nak_source_share,
            metrics: self.cc.as_ref().map(|c| c.metrics()),
            grtt: self.grtt(now),
            max_tpdu: self.config.max_tpdu,
        };
        self.budget.refresh(now, &inputs);
    }

    /// How many of `packets` more repairs `from`'s share
    /// ([`SenderConfig::nak_source_share`]) lets it queue now, charged; the rest are counted
    /// as limited.
    fn source_grants(&mut self, now: Instant, from: IpAddr, packets: usize) -> usize {
        let granted =
            self.budget
                .source_grants(now, from, &self.config.tsi, packets, self.config.max_tpdu);
        self.stats.nak_sqns_source_limited += (packets - granted) as u64;
        granted
    }

    /// True when the repair budget lets `len` bytes of NCF or RDATA go now.
    fn budget_allows(&mut self, now: Instant, len: usize) -> bool {
        let (ok, new_wait) = self.budget.allows(now, len);
        if new_wait {
            self.stats.repairs_budget_limited += 1;
        }
        ok
    }

    /// When the repair budget lets `len` bytes go (`Instant::ZERO`: now).
    fn budget_ready_at(&self, len: usize) -> Instant {
        self.budget.ready_at(len)
    }

    /// When the rate limit lets `len` bytes go (`Instant::ZERO`: now).
    fn limiter_ready_at(&self, len: usize) -> Instant {
        self.limiter
            .as_ref()
            .map_or(Instant::ZERO, |l| l.ready_at(len))
    }

    /// A receiver of this session was heard (ACK or NAK), with its RTT if it reported one.
    fn note_receiver(&mut self, now: Instant, from: IpAddr, rtt: Option<RttSample>) {
        // As the controller believes it: a receiver caught inflating its round trip does not
        // set the group RTT either.
        let rtt = rtt.map(|r| self.cc.as_ref().map_or(r, |c| c.credible_rtt(now, from, r)));
        let rtt = rtt.filter(|r| r.raw_millis() <= crate::cc::rtt::MAX_RTT_MS);
        if self.group.note(now, from, rtt.map(|r| r.secs())) {
            self.note_grtt_news(now);
        }
    }

    /// The group RTT: the longest RTT a receiver reported within [`SenderConfig::grtt_expiry`]
    /// (at most [`MAX_GRTT`]); `None` before any report (no controller runs, or no
    /// receiver answered yet).
    pub fn grtt(&self, now: Instant) -> Option<Duration> {
        self.group.grtt(now)
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
        self.grtt(now)
            .map_or(Duration::ZERO, crate::nak_timing::nak_horizon)
    }

    /// Every receiver heard from (NAK or ACK) in the session so far, in no order (at most
    /// [`MAX_GROUP_TRACKED`]; beyond that, those silent for [`SenderConfig::grtt_expiry`]
    /// make room).
    pub fn receivers_heard(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.group.heard()
    }

    /// The group size OPT_GRTT advertises: the larger of the receivers heard from (NAK or
    /// ACK) within [`SenderConfig::grtt_expiry`] and the latest poll's estimate
    /// ([`SenderConfig::group_poll_ivl`]).
    pub fn group_size(&self, now: Instant) -> usize {
        self.group.size(now)
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
    /// the linger is over, the expected reports are in ([`SenderConfig::end`]) and a
    /// closing burst of SPMs with OPT_FIN (at least three) has left, or
    /// [`SessionEnd::Abandoned`]. From then on the source sends nothing (but an abort's
    /// OPT_RST) and takes nothing: drivers stop.
    pub fn end(&self) -> Option<&SessionEnd> {
        if self.fin_burst_due() {
            return None;
        }
        self.ending.end()
    }

    /// The closing burst of FIN SPMs is armed and not all out.
    fn fin_burst_due(&self) -> bool {
        self.fin_burst && self.spm_due_now()
    }

    /// An SPM of a burst (or one asked for at once) is still to go.
    fn spm_due_now(&self) -> bool {
        self.spm_now || self.spm_burst_left > 0
    }

    /// Arms a burst of at least three SPMs, the first at once: how an abort (OPT_RST) and
    /// a finished session (OPT_FIN) say so.
    fn arm_final_burst(&mut self) {
        self.spm_now = true;
        self.spm_burst_left = self.config.spm_burst.max(3) - 1;
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
            // Only a linger (after close) depends on it: not measured on every datagram.
            grtt: self.closing.then(|| self.grtt(now)).flatten(),
            reports: &self.reports,
            unreported: &|| self.group.heard().any(|a| !self.reports.contains_key(&a)),
        };
        // A finished session says so once more, in a burst (at least three SPMs with
        // OPT_FIN, as an abort's OPT_RST): the heartbeats that carried OPT_FIN follow the
        // last ODATA, doubling, so a repair phase longer than a few of them leaves the
        // quiet end of the linger, when the queues have drained, without any; and the ones
        // sent during the repairs meet the queue the repairs fill.
        let waited = self.ending.awaiting_reports();
        if matches!(self.ending.update(&state), Some(SessionEnd::Finished)) && !self.fin_burst {
            self.fin_burst = true;
            self.arm_final_burst();
        } else if self.ending.awaiting_reports() && !waited {
            // The wait for reports begins with the same burst: a receiver that has not
            // learnt the end (its FIN heartbeats lost) can finish and report.
            self.arm_final_burst();
        }
    }

    /// Starts or ends the rounds of the group poll that are due.
    fn run_poll(&mut self, now: Instant) {
        let (grtt, nla) = (self.grtt(now), self.config.source_nla);
        if let Some(p) = self.group.poll.as_mut() {
            p.on_timeout(now, grtt, nla);
        }
    }

    /// When `handle_timeout` (or `poll_transmit`) next has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.fin_burst_due() {
            return Some(Instant::ZERO);
        }
        if self.ending.end().is_some() && self.aborted.is_none() {
            return None;
        }
        if self.spm_due_now() {
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
        // it back, in which case new data may go meanwhile. One the controller holds back
        // waits for room in its window, and data goes only where the controller lets it
        // (its own deadline and events wake the source).
        let repair = self
            .repairs
            .front()
            .and_then(|&r| Some((r, self.repair_len(r)?)));
        let data_may_go = match repair {
            Some((r, _)) if !self.cc_allows_repair(r) => true,
            Some((_, len)) => {
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
        let polling = self.aborted.is_none() && !self.group.no_rtt_yet();
        if let Some(p) = self.group.poll.as_ref().filter(|_| polling) {
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
        if self.aborted.is_some() || self.fin_burst {
            return if self.spm_due_now() {
                self.emit_spm(now, buf)
            } else {
                None
            };
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
        let spm_due = self.spm_due_now()
            || self.grtt_spm_at.is_some_and(|at| now >= at)
            || now >= self.next_ambient
            || self.heartbeat_at().is_some_and(|h| now >= h);
        if spm_due {
            return self.emit_spm(now, buf);
        }
        self.run_poll(now);
        if let Some(poll) = self.group.poll.as_mut().and_then(|p| p.take_pending()) {
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
            if !self.cc_allows_repair(r) {
                // The controller holds repairs back for room in its window; data may still
                // take a probe's room beyond it.
                break;
            }
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

/// The TSI the sender's unit tests use.
#[cfg(test)]
pub(crate) fn test_tsi() -> pgm_wire::Tsi {
    pgm_wire::Tsi {
        gsi: pgm_wire::Gsi([1, 2, 3, 4, 5, 6]),
        sport: 7,
    }
}
