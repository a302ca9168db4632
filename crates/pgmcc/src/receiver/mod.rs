//! The PGM receiver (RFC 3208 §5), sans-IO.
//!
//! One `Receiver` serves every session (TSI) arriving on its group and port, each with its
//! own receive window. Its methods follow the [`Sender`](crate::Sender)'s pattern:
//! [`Receiver::handle`] and [`Receiver::handle_timeout`] take input, [`Receiver::poll_transmit`]
//! and [`Receiver::poll_timeout`] give output, [`Receiver::poll_event`] hands data and session
//! events to the application. `now` must never go backwards.
//!
//! What it guarantees the application: APDUs are delivered complete and in sequence order,
//! once. A sequence number that cannot be recovered (retries exhausted, or the source's
//! window moved past it) produces [`ReceiverEvent::Unrecoverable`] at its place in the
//! sequence: there is never a silent gap.
//!
//! Timers (RFC 3208 §5.3, defaults from OpenPGM's shipped examples, as the RFC gives none):
//! * NAK_BO_IVL ([`ReceiverConfig::nak_bo_ivl`], 50 ms): a gap waits a random time in
//!   `[0, NAK_BO_IVL]` before its NAK, so that one receiver's NAK (confirmed by a multicast
//!   NCF) suppresses the others'.
//! * NAK_RPT_IVL ([`ReceiverConfig::nak_rpt_ivl`], 200 ms): how long to wait for an NCF
//!   after sending a NAK before trying again, at most NAK_NCF_RETRIES times (default 5).
//! * NAK_RDATA_IVL ([`ReceiverConfig::nak_rdata_ivl`], 200 ms): how long to wait for RDATA
//!   after an NCF before NAKing again, at most NAK_DATA_RETRIES times (default 5); every
//!   further NCF restarts it.

mod rxw;

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use pgm_wire::{
    AckRepr, Body, NakRepr, Options, PgmccFeedback, Pseudofed, Repr, TfmccData, Tsi, LW_NO_ACKS,
    LW_QUICK_NAK, OPT_PARITY, PF_CI, PF_FULL, PF_HAVE_CI,
};
use serde::Serialize;
use tracing::trace;

use crate::cc::loss_filter::{LossFilter, DEFAULT_W};
use crate::cc::tfmcc::{tcp_rate, LossEvents};
use crate::rng::Rng;
use crate::sqn;
use crate::time::{Duration, Instant};
use crate::transmit::{Destination, Transmit};
use rxw::{Insert, NakTimers, Output, ReceiveWindow};

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

/// Receiver configuration.
#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    /// This receiver's unicast NLA (its identity in pgmcc reports).
    pub nla: IpAddr,
    /// The multicast group joined.
    pub group: IpAddr,
    /// Data-destination port listened on (OpenPGM default 7500).
    pub dport: u16,
    /// NAK_BO_IVL: upper bound of the random NAK back-off. Default 50 ms.
    pub nak_bo_ivl: Duration,
    /// NAK_RPT_IVL: wait for an NCF after a NAK. Default 200 ms.
    pub nak_rpt_ivl: Duration,
    /// NAK_RDATA_IVL: wait for RDATA after an NCF. Default 200 ms.
    pub nak_rdata_ivl: Duration,
    /// NAK_NCF_RETRIES: NAKs sent without an NCF before giving up. Default 5.
    pub nak_ncf_retries: u32,
    /// NAK_DATA_RETRIES: NCF-confirmed waits for data before giving up. Default 5.
    pub nak_data_retries: u32,
    /// Receive window span in sequence numbers (memory bound per session). Default 8192.
    pub rxw_sqns: u32,
    /// Largest APDU accepted for reassembly. Default 65535 (OpenPGM's PGM_MAX_APDU).
    pub max_apdu: usize,
    /// Where a late joiner starts.
    pub join: JoinPolicy,
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
    /// do not measure their RTT yet, so this stands for it (RFC 4654's initial RTT, 500 ms, is
    /// the natural value). Default `None`: the pgmcc loss filter.
    pub loss_events: Option<Duration>,
    /// When the driver handles several ODATA before it polls transmits (a batch read from
    /// the socket), send one ACK for them instead of one each: a queued ACK is replaced by
    /// a newer one of the same session while every packet the replaced ACKs reported stays
    /// inside the newer ACK's 32-packet bitmap. The sender counts each packet once however
    /// it is acknowledged (`docs/pgmcc.md`, difference 10). A driver that polls after every
    /// datagram (the simulator) sees no change. Default true.
    pub coalesce_acks: bool,
}

impl ReceiverConfig {
    /// Defaults as documented on each field.
    pub fn new(nla: IpAddr, group: IpAddr, seed: u64) -> ReceiverConfig {
        ReceiverConfig {
            nla,
            group,
            dport: 7500,
            nak_bo_ivl: Duration::from_millis(50),
            nak_rpt_ivl: Duration::from_millis(200),
            nak_rdata_ivl: Duration::from_millis(200),
            nak_ncf_retries: 5,
            nak_data_retries: 5,
            rxw_sqns: 8192,
            max_apdu: 65535,
            join: JoinPolicy::default(),
            max_sessions: 64,
            peer_expiry: Duration::from_secs(300),
            seed,
            pgmcc: true,
            loss_filter_w: DEFAULT_W,
            ack_bo_ivl: Duration::from_millis(50),
            reliable: true,
            loss_events: None,
            coalesce_acks: true,
        }
    }

    fn timers(&self) -> NakTimers {
        NakTimers {
            bo_ivl: self.nak_bo_ivl,
            rpt_ivl: self.nak_rpt_ivl,
            rdata_ivl: self.nak_rdata_ivl,
            ncf_retries: self.nak_ncf_retries,
            data_retries: self.nak_data_retries,
        }
    }
}

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
    },
    /// The session was silent for `peer_expiry` and was dropped to make room for a new one
    /// before it ended: whatever it had not delivered is lost.
    SessionExpired {
        /// The session.
        tsi: Tsi,
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
    /// SPMRs sent.
    pub spmrs_sent: u64,
    /// pgmcc ACKs sent (as acker or answering an election request).
    pub acks_sent: u64,
    /// TFMCC round reports sent by a receiver that is not the CLR (also counted in
    /// `acks_sent`: they travel as ACKs).
    pub tfmcc_reports_sent: u64,
    /// TFMCC round reports cancelled because the source echoed a rate at most ours.
    pub tfmcc_reports_suppressed: u64,
    /// ACKs not sent because a newer one, still unsent, reported the same packets
    /// ([`ReceiverConfig::coalesce_acks`]).
    pub acks_coalesced: u64,
    /// APDUs delivered.
    pub apdus_delivered: u64,
    /// Bytes delivered.
    pub bytes_delivered: u64,
    /// Sequence numbers reported unrecoverable.
    pub unrecoverable_sqns: u64,
    /// Datagrams that failed to parse or were inconsistent (bad fragment, ...).
    pub malformed: u64,
    /// Datagrams for another group or port, or of a type a receiver ignores.
    pub ignored: u64,
    /// Packets of new sessions dropped because `max_sessions` were tracked.
    pub sessions_rejected: u64,
    /// Sessions dropped from a full table to make room: ended ones, or silent for
    /// `peer_expiry` (each of the latter also reported as [`ReceiverEvent::SessionExpired`]).
    pub sessions_evicted: u64,
    /// Pseudofed reports (CC or CI on an ACK with OPT_PSEUDOFED) sent.
    pub pseudofed_reports: u64,
    /// Gaps this receiver NAKed without back-off as the low-weight quick NAKer.
    pub quick_nak_gaps: u64,
    /// Pseudofed reports of a non-representative cancelled by suppression.
    pub pseudofed_suppressed: u64,
}

#[derive(Debug)]
struct Peer {
    tsi: Tsi,
    /// Source path NLA from the latest SPM: where NAKs go.
    path: Option<IpAddr>,
    /// IP address data and SPMs come from: the source's own address, used as the NAK's
    /// source NLA, for SPMRs before any SPM, and for pgmcc ACKs.
    data_from: Option<IpAddr>,
    /// pgmcc: the loss estimate, the latest OPT_PGMCC_DATA timestamp and when it arrived,
    /// the receive bitmap for ACKs, and a pending answer to an election request.
    loss: LossFilter,
    /// TFRC loss events with their merging interval, when reported instead of `loss`.
    events: Option<(LossEvents, Duration)>,
    tstamp: Option<(u32, Instant)>,
    recv: RecvBitmap,
    election_ack: Option<Instant>,
    /// TFMCC feedback rounds, once the source sends OPT_TFMCC_DATA.
    tfmcc: Option<TfmccRx>,
    spm_sqn: Option<u32>,
    rxw: Option<ReceiveWindow>,
    /// Lead of the FIN SPM once heard.
    fin_lead: Option<u32>,
    /// Sequence number of the packet marked OPT_SYN (the session's first), once heard.
    syn_sqn: Option<u32>,
    /// When a packet of this session last arrived.
    last_heard: Instant,
    ended: bool,
    next_spmr: Instant,
    /// Pseudofed mode, switched on by OPT_PSEUDOFED on ODATA (`docs/pseudofed.md`).
    pf: Option<PfRx>,
}

/// A receiver's Pseudofed state for one session.
#[derive(Debug, Clone, Copy)]
struct PfRx {
    /// The sender's latest advertisement.
    adv: Pseudofed,
    /// This receiver is a representative: it reports every ODATA at once.
    is_rep: bool,
    /// A non-representative's scheduled report: when, and the first lost sqn for a CI.
    pending: Option<(Instant, Option<u32>)>,
    /// No new non-representative report is scheduled before this (one GRTT after a report).
    quiet_until: Instant,
}

impl PfRx {
    fn grtt(&self) -> Duration {
        Duration::from_millis(u64::from(self.adv.grtt_ms.max(1)))
    }
}

/// A PGM receiver.
#[derive(Debug)]
pub struct Receiver {
    config: ReceiverConfig,
    timers: NakTimers,
    rng: Rng,
    peers: HashMap<Tsi, Peer>,
    /// Order peers were created in, for deterministic iteration.
    order: Vec<Tsi>,
    transmits: VecDeque<(Tsi, Pending)>,
    events: VecDeque<ReceiverEvent>,
    stats: ReceiverStats,
}

/// A receiver's part in the TFMCC baseline's feedback rounds (`docs/tfmcc.md`).
#[derive(Debug, Clone, Copy)]
struct TfmccRx {
    /// The source's latest OPT_TFMCC_DATA.
    data: TfmccData,
    /// The round whose timer was set (or skipped).
    round: u16,
    /// When this receiver reports in the current round, unless suppressed.
    timer: Option<Instant>,
    /// When this receiver, as the CLR, last reported.
    clr_reported: Option<Instant>,
}

/// Receivers assumed in the feedback timer's formula (RFC 4654's upper bound N).
const TFMCC_N: f64 = 10_000.0;

/// This receiver's calculated rate in packets per second, from its loss event rate and the
/// source's R_max (receivers do not measure their own RTT); `None` before a loss event.
fn tfmcc_rate(peer: &Peer, d: &TfmccData) -> Option<f64> {
    let p = peer.events.as_ref()?.0.loss_event_rate();
    (p > 0.0).then(|| tcp_rate(f64::from(d.r_max_ms.max(1)) / 1000.0, p))
}

#[derive(Debug)]
enum Pending {
    /// Sequence numbers for one NAK packet (at most 63: one in the header, 62 listed).
    Nak(Vec<u32>),
    Spmr(IpAddr),
    /// A pgmcc ACK with the receive state and report as they were when the ODATA that
    /// elicited it arrived (several datagrams may be handled before `poll_transmit`).
    /// `since` is the RX_MAX of the oldest ACK this one replaced (coalescing), or its own.
    Ack {
        ack: AckRepr,
        report: PgmccFeedback,
        since: u32,
    },
    /// A Pseudofed CC or CI.
    PfAck(AckRepr, PgmccFeedback, Pseudofed),
}

/// The receive status of the latest 32 data sequence numbers (bit 0 = the highest), as a
/// pgmcc ACK reports it.
#[derive(Debug, Clone, Copy, Default)]
struct RecvBitmap {
    max: Option<u32>,
    bits: u32,
}

impl RecvBitmap {
    fn mark(&mut self, s: u32) {
        match self.max {
            None => {
                self.max = Some(s);
                self.bits = 1;
            }
            Some(m) if sqn::gt(s, m) => {
                let shift = sqn::distance(m, s);
                self.bits = if shift >= 32 { 0 } else { self.bits << shift };
                self.bits |= 1;
                self.max = Some(s);
            }
            Some(m) => {
                let back = sqn::distance(s, m);
                if back < 32 {
                    self.bits |= 1 << back;
                }
            }
        }
    }
}

/// Follows the source's TFMCC feedback round (RFC 4654 §3.4-3.5 as `docs/tfmcc.md` reads
/// them): the loss event estimator is switched on (merging losses over R_max); at a new
/// round a receiver that is not the CLR and whose calculated rate is below the sending rate
/// sets a timer `T (1 + log_N u)`, u uniform in (0, 1]; the timer is cancelled once the
/// source echoes a rate at most ours (someone at least as slow already reported).
fn tfmcc_round(
    peer: &mut Peer,
    t: TfmccData,
    is_clr: bool,
    now: Instant,
    rng: &mut Rng,
    stats: &mut ReceiverStats,
) {
    let merge = Duration::from_millis(u64::from(t.r_max_ms.max(1)));
    match peer.events.as_mut() {
        Some((_, d)) => *d = merge,
        None => peer.events = Some((LossEvents::new(), merge)),
    }
    let x = tfmcc_rate(peer, &t);
    let st = peer.tfmcc.get_or_insert(TfmccRx {
        data: t,
        round: t.round.wrapping_sub(1),
        timer: None,
        clr_reported: None,
    });
    st.data = t;
    let below_send =
        |x: f64| t.send_rate == TfmccData::NO_RATE || x * 1000.0 < f64::from(t.send_rate);
    if st.round != t.round {
        st.round = t.round;
        st.timer = None;
        if !is_clr && x.is_some_and(below_send) {
            let u = rng.unit().max(1e-9);
            let frac = (1.0 + u.ln() / TFMCC_N.ln()).max(0.0);
            let round = Duration::from_millis(u64::from(t.round_ms));
            st.timer = Some(now + Duration::from_secs_f64(round.as_secs_f64() * frac));
        }
    }
    if st.timer.is_some() && (is_clr || x.is_none_or(|x| f64::from(t.supp_rate) <= x * 1000.0)) {
        st.timer = None;
        stats.tfmcc_reports_suppressed += 1;
    }
}

/// The ACK `peer`'s acker would send now: RX_MAX, the receive bitmap and the report.
fn ack_snapshot(peer: &Peer, nla: IpAddr, now: Instant) -> Option<(AckRepr, PgmccFeedback)> {
    let rx_max = peer.recv.max?;
    let report = feedback(peer, nla, now)?;
    Some((
        AckRepr {
            rx_max,
            bitmap: peer.recv.bits,
        },
        report,
    ))
}

/// The report this receiver attaches for `peer`, if the source runs pgmcc.
fn feedback(peer: &Peer, nla: IpAddr, now: Instant) -> Option<PgmccFeedback> {
    let (ts, at) = peer.tstamp?;
    // Echo plus hold time (draft §2.5.1), in milliseconds.
    let hold = now.saturating_duration_since(at).as_millis() as u32;
    Some(PgmccFeedback {
        tstamp: ts.wrapping_add(hold),
        loss_rate: match &peer.events {
            // p in the draft's 16-bit scale (65535 = 100%).
            Some((ev, _)) => (ev.loss_event_rate() * 65535.0).round() as u16,
            None => peer.loss.as_u16(),
        },
        rx: nla,
    })
}

/// The OPT_PSEUDOFED a receiver sends: a CI naming the first lost sqn, or a CC.
fn pf_report_opt(lost: Option<u32>) -> Pseudofed {
    match lost {
        Some(s) => Pseudofed {
            flags: PF_CI,
            ci_sqn: s,
            ..Pseudofed::default()
        },
        None => Pseudofed::default(),
    }
}

/// Pseudofed feedback on an ODATA carrying the sender's advertisement `adv` (paper §2.2):
/// a representative reports at once (CI if `lost_first`, else CC); a non-representative
/// schedules a CI after a loss, or a CC while the set is empty, at `wait + U(0, suppression)`
/// GRTTs, and cancels it when the sender's advertisement shows it moot (sender-mediated
/// suppression: PGM receivers do not hear each other's ACKs). Returns an immediate report.
fn pf_on_data(
    peer: &mut Peer,
    adv: Pseudofed,
    nla: IpAddr,
    now: Instant,
    lost_first: Option<u32>,
    rng: &mut Rng,
    suppressed: &mut u64,
) -> Option<(AckRepr, PgmccFeedback, Pseudofed)> {
    let mut pf = peer.pf.unwrap_or(PfRx {
        adv,
        is_rep: false,
        pending: None,
        quiet_until: now,
    });
    pf.adv = adv;
    pf.is_rep = adv.reps.contains(&nla);
    if pf.is_rep {
        // Immediate, never suppressed; a pending CI's loss is folded into this report.
        let lost = lost_first.or(pf.pending.and_then(|p| p.1));
        pf.pending = None;
        peer.pf = Some(pf);
        let (ack, fb) = ack_snapshot(peer, nla, now)?;
        return Some((ack, fb, pf_report_opt(lost)));
    }
    // Suppression: a CI is moot once the sender has heard a CI for a loss at or after ours;
    // a CC once there is any representative.
    let moot = match pf.pending {
        Some((_, Some(first))) => adv.flags & PF_HAVE_CI != 0 && sqn::le(first, adv.ci_sqn),
        Some((_, None)) => !adv.reps.is_empty(),
        None => false,
    };
    if moot {
        pf.pending = None;
        *suppressed += 1;
    }
    let grtt = pf.grtt();
    let wait = grtt.mul_f64(f64::from(adv.wait_pct) / 100.0);
    let spread = grtt.mul_f64(f64::from(adv.supp_pct) / 100.0);
    match (lost_first, pf.pending) {
        // A loss upgrades a pending CC to a CI (same deadline).
        (Some(s), Some((t, None))) => pf.pending = Some((t, Some(s))),
        (Some(s), None) if now >= pf.quiet_until => {
            pf.pending = Some((now + wait + rng.duration_up_to(spread), Some(s)));
        }
        (None, None)
            if adv.reps.is_empty() && adv.flags & PF_FULL == 0 && now >= pf.quiet_until =>
        {
            pf.pending = Some((now + wait + rng.duration_up_to(spread), None));
        }
        _ => {}
    }
    peer.pf = Some(pf);
    None
}

impl Receiver {
    /// A receiver with no sessions yet.
    pub fn new(config: ReceiverConfig, now: Instant) -> Receiver {
        let _ = now;
        Receiver {
            timers: config.timers(),
            rng: Rng::new(config.seed),
            peers: HashMap::new(),
            order: Vec::new(),
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            stats: ReceiverStats::default(),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ReceiverConfig {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    /// Sequence numbers of `tsi` currently waiting for repair.
    pub fn missing(&self, tsi: &Tsi) -> usize {
        self.peers
            .get(tsi)
            .and_then(|p| p.rxw.as_ref())
            .map_or(0, |w| w.missing())
    }

    /// Where `tsi`'s stream begins, as far as this receiver knows: the sequence number of the
    /// packet the source marked OPT_SYN (its first ODATA, RFC 3208 §9.5), once one arrived.
    /// A receiver whose [`ReceiverEvent::SessionStarted`] `first_sqn` differs from this, or
    /// that never hears it, joined after the start. OpenPGM sources send no OPT_SYN.
    pub fn session_syn(&self, tsi: &Tsi) -> Option<u32> {
        self.peers.get(tsi).and_then(|p| p.syn_sqn)
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<ReceiverEvent> {
        self.events.pop_front()
    }

    /// Takes one datagram. `from` is the IP address it came from.
    pub fn handle(&mut self, now: Instant, from: IpAddr, datagram: &[u8]) {
        let repr = match Repr::parse(datagram) {
            Ok(r) => r,
            Err(e) => {
                self.stats.malformed += 1;
                trace!(%from, error = %e, "receiver: malformed datagram dropped");
                return;
            }
        };
        if repr.header_flags & OPT_PARITY != 0 {
            // FEC is not supported: parity packets carry encoded options.
            self.stats.ignored += 1;
            return;
        }
        match repr.body {
            Body::Odata(d) | Body::Rdata(d) if repr.dport == self.config.dport => {
                let rdata = matches!(repr.body, Body::Rdata(_));
                self.on_data(now, from, &repr, d.sqn, d.trail, rdata);
            }
            Body::Spm(spm) if repr.dport == self.config.dport => {
                self.stats.spm_packets += 1;
                self.on_spm(now, from, &repr, spm);
            }
            Body::Ncf(n) if repr.dport == self.config.dport && n.group == self.config.group => {
                self.stats.ncf_packets += 1;
                self.on_ncf(now, &repr, &n, false);
            }
            Body::Nak(n) if repr.sport == self.config.dport && n.group == self.config.group => {
                // Another receiver's NAK, heard on a shared segment.
                self.on_ncf(now, &repr, &n, true);
            }
            _ => self.stats.ignored += 1,
        }
        self.drain_all();
    }

    /// Makes sure `tsi` has a peer entry; false when the session table is full.
    fn ensure_peer(&mut self, tsi: Tsi, now: Instant) -> bool {
        if let Some(p) = self.peers.get_mut(&tsi) {
            p.last_heard = now;
        } else {
            if self.peers.len() >= self.config.max_sessions && !self.evict_one(now) {
                self.stats.sessions_rejected += 1;
                return false;
            }
            self.order.push(tsi);
            self.peers.insert(
                tsi,
                Peer {
                    tsi,
                    path: None,
                    data_from: None,
                    loss: LossFilter::new(self.config.loss_filter_w),
                    events: self.config.loss_events.map(|d| (LossEvents::new(), d)),
                    tstamp: None,
                    recv: RecvBitmap::default(),
                    election_ack: None,
                    tfmcc: None,
                    spm_sqn: None,
                    rxw: None,
                    fin_lead: None,
                    syn_sqn: None,
                    last_heard: now,
                    ended: false,
                    next_spmr: now,
                    pf: None,
                },
            );
        }
        true
    }

    /// Frees one slot of a full session table: an ended session, else the one silent longest
    /// if silent for `peer_expiry`. A flood of new TSIs cannot push out a session that is
    /// still talking.
    fn evict_one(&mut self, now: Instant) -> bool {
        let expiry = self.config.peer_expiry;
        let victim = self
            .order
            .iter()
            .find(|t| self.peers.get(t).is_some_and(|p| p.ended))
            .or_else(|| {
                self.order
                    .iter()
                    .filter(|t| {
                        self.peers
                            .get(t)
                            .is_some_and(|p| now.saturating_duration_since(p.last_heard) >= expiry)
                    })
                    .min_by_key(|t| self.peers.get(t).map(|p| p.last_heard))
            })
            .copied();
        let Some(victim) = victim else {
            return false;
        };
        if let Some(p) = self.peers.remove(&victim) {
            if !p.ended {
                self.events
                    .push_back(ReceiverEvent::SessionExpired { tsi: victim });
            }
        }
        self.order.retain(|t| *t != victim);
        self.transmits.retain(|(t, _)| *t != victim);
        self.stats.sessions_evicted += 1;
        true
    }

    fn on_data(
        &mut self,
        now: Instant,
        from: IpAddr,
        repr: &Repr<'_>,
        s: u32,
        trail: u32,
        rdata: bool,
    ) {
        if rdata {
            self.stats.rdata_packets += 1;
        } else {
            self.stats.odata_packets += 1;
        }
        if let Some(f) = &repr.options.fragment {
            let len = repr.payload.len() as u64;
            let bad = f.apdu_len as usize > self.config.max_apdu
                || u64::from(f.offset) + len > u64::from(f.apdu_len)
                || sqn::gt(f.first_sqn, s)
                || (len == 0 && f.apdu_len > 0);
            if bad {
                self.stats.malformed += 1;
                return;
            }
        }
        let tsi = repr.tsi();
        let (timers, rxw_sqns, max_apdu, join) = (
            self.timers,
            self.config.rxw_sqns,
            self.config.max_apdu,
            self.config.join,
        );
        if !self.ensure_peer(tsi, now) {
            return;
        }
        let Some(peer) = self.peers.get_mut(&tsi) else {
            return;
        };
        if peer.ended {
            return;
        }
        peer.data_from = Some(from);
        if repr.options.syn {
            peer.syn_sqn = Some(s);
        }
        let mut started = None;
        if peer.rxw.is_none() {
            let mut base = s;
            if let (JoinPolicy::FromJoinMin, Some(min)) = (join, repr.options.join) {
                if sqn::le(min, s) && sqn::distance(min, s) < rxw_sqns {
                    base = sqn::max(min, trail);
                }
            }
            // Joined mid-APDU: reach back for its head if the source still has it.
            if let Some(f) = &repr.options.fragment {
                if sqn::lt(f.first_sqn, base) && sqn::le(trail, f.first_sqn) {
                    base = f.first_sqn;
                }
            }
            peer.rxw = Some(ReceiveWindow::new(base, trail, rxw_sqns, max_apdu));
            started = Some(base);
        }
        let need_spmr = peer.path.is_none() && now >= peer.next_spmr;
        if need_spmr {
            peer.next_spmr = now + timers.rpt_ivl;
        }
        let Some(w) = peer.rxw.as_mut() else {
            return;
        };
        let old_lead = w.lead();
        // Low-weight control (docs/lowweight.md): the receiver this ODATA names as the worst
        // NAKs its gaps at once, the quick NAKer; everyone else keeps the random back-off.
        let lowweight = match (self.config.pgmcc, rdata) {
            (true, false) => repr.options.lowweight,
            _ => None,
        };
        let quick = lowweight.is_some_and(|l| l.flags & LW_QUICK_NAK != 0)
            && repr
                .options
                .pgmcc_data
                .is_some_and(|d| d.acker == self.config.nla);
        let timers = if quick {
            NakTimers {
                bo_ivl: Duration::ZERO,
                ..timers
            }
        } else {
            timers
        };
        w.extend_to(s, now, &timers, &mut self.rng);
        w.set_trail(trail);
        let ins = w.insert(s, repr.payload, repr.options.fragment);
        if matches!(ins, Insert::New) {
            peer.recv.mark(s);
        }
        let mut report_gap = None;
        let mut lost_first = None;
        if !rdata && sqn::gt(s, old_lead) {
            // The loss signal in sequence space: 1 per gap, 0 for this packet (§3.2.2).
            let gap = sqn::distance(old_lead, s).saturating_sub(1);
            if gap > 0 {
                lost_first = Some(old_lead.wrapping_add(1));
                if quick {
                    self.stats.quick_nak_gaps += 1;
                }
            }
            peer.loss.update_lost(gap);
            peer.loss.update(false);
            if let Some((ev, rtt)) = peer.events.as_mut() {
                ev.on_packets(gap);
                if gap > 0 {
                    ev.on_loss(now, *rtt);
                }
                ev.on_packets(1);
            }
            if gap > 0 && !self.config.reliable {
                let first = old_lead.wrapping_add(1);
                w.give_up(first, s.wrapping_sub(1));
                if peer.path.is_some() && peer.tstamp.is_some() {
                    report_gap = Some(first);
                }
            }
        }
        let mut ack = None;
        if let (true, false, Some(d)) = (self.config.pgmcc, rdata, repr.options.pgmcc_data) {
            peer.tstamp = Some((d.tstamp, now));
            let is_clr = d.acker == self.config.nla;
            if let Some(t) = repr.options.tfmcc_data {
                tfmcc_round(peer, t, is_clr, now, &mut self.rng, &mut self.stats);
            }
            // Under TFMCC's feedback rounds the CLR reports once per `clr_ivl`, not per packet.
            let clr_due = match (
                repr.options.tfmcc_data,
                peer.tfmcc.and_then(|t| t.clr_reported),
            ) {
                (Some(t), Some(last)) => {
                    now >= last + Duration::from_millis(u64::from(t.clr_ivl_ms))
                }
                _ => true,
            };
            if is_clr && !clr_due {
                peer.election_ack = None;
            } else if is_clr {
                // The ACK describes the receive state as this ODATA left it.
                ack = ack_snapshot(peer, self.config.nla, now);
                peer.election_ack = None;
                if let Some(t) = peer.tfmcc.as_mut() {
                    t.clr_reported = Some(now);
                }
            } else if d.acker.is_unspecified() {
                if peer.election_ack.is_none() {
                    peer.election_ack = Some(now + self.rng.duration_up_to(self.config.ack_bo_ivl));
                }
            } else {
                // Someone else is the acker: any pending answer to an election is moot.
                peer.election_ack = None;
            }
        }
        if lowweight.is_some_and(|l| l.flags & LW_NO_ACKS != 0) {
            // No ACKs at all under low-weight control, neither as the named worst receiver
            // nor in answer to an election request.
            ack = None;
            peer.election_ack = None;
        }
        let mut pf_report = None;
        if let (true, false, Some(adv)) = (self.config.pgmcc, rdata, repr.options.pseudofed) {
            // Pseudofed mode: its own reports replace pgmcc's acker ACKs and elections.
            ack = None;
            peer.election_ack = None;
            let suppressed = &mut self.stats.pseudofed_suppressed;
            pf_report = pf_on_data(
                peer,
                adv,
                self.config.nla,
                now,
                lost_first,
                &mut self.rng,
                suppressed,
            )
            .map(|(ack, fb, opt)| Pending::PfAck(ack, fb, opt));
        }
        if let Some(first_sqn) = started {
            self.events
                .push_back(ReceiverEvent::SessionStarted { tsi, first_sqn });
        }
        match ins {
            Insert::New => {
                // Anything but the packet that extended the lead filled a gap.
                if rdata || !sqn::gt(s, old_lead) {
                    self.stats.gaps_filled += 1;
                }
            }
            Insert::Duplicate => self.stats.duplicates += 1,
        }
        if need_spmr {
            self.transmits.push_back((tsi, Pending::Spmr(from)));
        }
        if let Some((ack, report)) = ack {
            self.push_ack(tsi, ack, report);
        }
        if let Some(p) = pf_report {
            self.transmits.push_back((tsi, p));
        }
        if let Some(first) = report_gap {
            // Unreliable mode: one NAK, for the pgmcc report it carries.
            self.transmits.push_back((tsi, Pending::Nak(vec![first])));
        }
    }

    fn on_spm(&mut self, now: Instant, from: IpAddr, repr: &Repr<'_>, spm: pgm_wire::SpmRepr) {
        let tsi = repr.tsi();
        let (timers, rxw_sqns, max_apdu, reliable) = (
            self.timers,
            self.config.rxw_sqns,
            self.config.max_apdu,
            self.config.reliable,
        );
        if !self.ensure_peer(tsi, now) {
            return;
        }
        let Some(peer) = self.peers.get_mut(&tsi) else {
            return;
        };
        if peer.spm_sqn.is_some_and(|old| !sqn::gt(spm.sqn, old)) {
            return; // old or duplicate SPM
        }
        peer.spm_sqn = Some(spm.sqn);
        peer.path = Some(spm.path_nla);
        peer.data_from.get_or_insert(from);
        let mut started = None;
        if peer.rxw.is_none() {
            // Heard the session first by SPM: want only data after its lead.
            let base = spm.lead.wrapping_add(1);
            peer.rxw = Some(ReceiveWindow::new(base, spm.trail, rxw_sqns, max_apdu));
            started = Some(base);
        }
        if repr.options.fin {
            peer.fin_lead = Some(spm.lead);
        }
        if let Some(w) = peer.rxw.as_mut() {
            // The SPM lead reveals losses at the tail of a burst (§5.2).
            let old_lead = w.lead();
            w.extend_to(spm.lead, now, &timers, &mut self.rng);
            if sqn::gt(spm.lead, old_lead) {
                let gap = sqn::distance(old_lead, spm.lead);
                peer.loss.update_lost(gap);
                if let Some((ev, rtt)) = peer.events.as_mut() {
                    ev.on_packets(gap);
                    ev.on_loss(now, *rtt);
                }
                if !reliable {
                    w.give_up(old_lead.wrapping_add(1), spm.lead);
                }
            }
            w.set_trail(spm.trail);
        }
        if let Some(first_sqn) = started {
            self.events
                .push_back(ReceiverEvent::SessionStarted { tsi, first_sqn });
        }
    }

    fn on_ncf(&mut self, now: Instant, repr: &Repr<'_>, n: &NakRepr, peer_nak: bool) {
        let tsi = repr.tsi();
        let timers = self.timers;
        let Some(w) = self.peers.get_mut(&tsi).and_then(|p| p.rxw.as_mut()) else {
            return;
        };
        let list = repr.options.nak_list.unwrap_or_default();
        for &s in core::iter::once(&n.sqn).chain(list.as_slice()) {
            let suppressed = if peer_nak {
                w.on_peer_nak(s, now, &timers)
            } else {
                w.on_ncf(s, now, &timers)
            };
            if suppressed {
                self.stats.naks_suppressed += 1;
            }
        }
    }

    /// Queues the acker's ACK, replacing the newest queued transmit when that is an unsent
    /// ACK of the same session whose packets this one still covers.
    fn push_ack(&mut self, tsi: Tsi, ack: AckRepr, report: PgmccFeedback) {
        if self.config.coalesce_acks {
            if let Some((
                t,
                Pending::Ack {
                    ack: a,
                    report: r,
                    since,
                },
            )) = self.transmits.back_mut()
            {
                // RX_MAX only moves forward and received packets stay marked, so the new
                // bitmap holds every packet the queued ACKs reported while the oldest of
                // their RX_MAXes is within its 32 bits.
                if *t == tsi
                    && !sqn::lt(ack.rx_max, *since)
                    && sqn::distance(*since, ack.rx_max) < 32
                {
                    *a = ack;
                    *r = report;
                    self.stats.acks_coalesced += 1;
                    return;
                }
            }
        }
        self.transmits.push_back((
            tsi,
            Pending::Ack {
                ack,
                report,
                since: ack.rx_max,
            },
        ));
    }

    /// Runs expired NAK timers (queues NAKs, gives up on exhausted retries).
    pub fn handle_timeout(&mut self, now: Instant) {
        let timers = self.timers;
        for tsi in &self.order {
            let Some(peer) = self.peers.get_mut(tsi) else {
                continue;
            };
            let can_nak = peer.path.is_some();
            if let Some(t) = peer
                .tfmcc
                .as_mut()
                .filter(|t| t.timer.is_some_and(|d| d <= now))
            {
                t.timer = None;
                if let Some((ack, report)) = ack_snapshot(peer, self.config.nla, now) {
                    self.stats.tfmcc_reports_sent += 1;
                    self.transmits.push_back((
                        *tsi,
                        Pending::Ack {
                            ack,
                            report,
                            since: ack.rx_max,
                        },
                    ));
                }
            }
            if peer.election_ack.is_some_and(|t| t <= now) {
                peer.election_ack = None;
                if let Some((ack, report)) = ack_snapshot(peer, self.config.nla, now) {
                    self.transmits.push_back((
                        *tsi,
                        Pending::Ack {
                            ack,
                            report,
                            since: ack.rx_max,
                        },
                    ));
                }
            }
            if let Some(mut pf) = peer.pf {
                if let Some((_, lost)) = pf.pending.filter(|p| p.0 <= now) {
                    pf.pending = None;
                    pf.quiet_until = now + pf.grtt();
                    peer.pf = Some(pf);
                    if let Some((ack, report)) = ack_snapshot(peer, self.config.nla, now) {
                        self.transmits
                            .push_back((*tsi, Pending::PfAck(ack, report, pf_report_opt(lost))));
                    }
                }
            }
            let Some(w) = peer.rxw.as_mut() else {
                continue;
            };
            if w.next_deadline().is_none_or(|d| d > now) {
                continue;
            }
            let mut due = Vec::new();
            w.on_timeout(now, &timers, &mut self.rng, can_nak, &mut due);
            for chunk in due.chunks(1 + pgm_wire::options::MAX_NAK_LIST) {
                self.transmits
                    .push_back((*tsi, Pending::Nak(chunk.to_vec())));
            }
            if !can_nak && now >= peer.next_spmr {
                if let Some(from) = peer.data_from {
                    peer.next_spmr = now + timers.rpt_ivl;
                    self.transmits.push_back((*tsi, Pending::Spmr(from)));
                }
            }
        }
        self.drain_all();
    }

    /// When `handle_timeout` next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.transmits.is_empty() {
            return Some(Instant::ZERO);
        }
        self.peers
            .values()
            .flat_map(|p| {
                [
                    p.rxw.as_ref().and_then(|w| w.next_deadline()),
                    p.election_ack,
                    p.tfmcc.and_then(|t| t.timer),
                    p.pf.and_then(|f| f.pending.map(|x| x.0)),
                ]
            })
            .flatten()
            .min()
    }

    /// Writes the next datagram (NAK or SPMR) into `buf`; `None` when nothing is queued.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        while let Some((tsi, pending)) = self.transmits.pop_front() {
            let Some(peer) = self.peers.get(&tsi) else {
                continue;
            };
            let (repr, dst) = match &pending {
                Pending::Nak(list) => {
                    let (Some(path), Some(source)) = (peer.path, peer.data_from) else {
                        continue;
                    };
                    let Some((&first, rest)) = list.split_first() else {
                        continue;
                    };
                    let body = Body::Nak(NakRepr {
                        sqn: first,
                        source,
                        group: self.config.group,
                    });
                    // Pseudofed receivers report on ACKs only (their NAKs are for repairs).
                    let report = if self.config.pgmcc && peer.pf.is_none() {
                        feedback(peer, self.config.nla, now)
                    } else {
                        None
                    };
                    let repr = Repr::upstream(tsi, self.config.dport, body)
                        .with_options(Options::nak(rest, report));
                    // NAKs go hop by hop: to the SPM path (the nearest PGM network element).
                    (repr, Destination::Unicast(path))
                }
                Pending::Ack { ack, report, .. } => {
                    let Some(source) = peer.data_from else {
                        continue;
                    };
                    let repr = Repr::upstream(tsi, self.config.dport, Body::Ack(*ack))
                        .with_options(Options {
                            pgmcc_feedback: Some(*report),
                            ..Options::default()
                        });
                    // ACKs go straight to the source, not through network elements.
                    (repr, Destination::Unicast(source))
                }
                Pending::PfAck(ack, report, opt) => {
                    let Some(source) = peer.data_from else {
                        continue;
                    };
                    let repr = Repr::upstream(tsi, self.config.dport, Body::Ack(*ack))
                        .with_options(Options {
                            pgmcc_feedback: Some(*report),
                            pseudofed: Some(*opt),
                            ..Options::default()
                        });
                    (repr, Destination::Unicast(source))
                }
                Pending::Spmr(to) => (
                    Repr::upstream(tsi, self.config.dport, Body::Spmr),
                    Destination::Unicast(*to),
                ),
            };
            match repr.emit(buf) {
                Ok(len) => {
                    match pending {
                        Pending::Nak(list) => {
                            self.stats.naks_sent += 1;
                            self.stats.nak_sqns_sent += list.len() as u64;
                        }
                        Pending::Spmr(_) => self.stats.spmrs_sent += 1,
                        Pending::Ack { .. } => self.stats.acks_sent += 1,
                        Pending::PfAck(..) => {
                            self.stats.acks_sent += 1;
                            self.stats.pseudofed_reports += 1;
                        }
                    }
                    return Some(Transmit { dst, len });
                }
                Err(e) => trace!(error = %e, "receiver: cannot emit"),
            }
        }
        None
    }

    fn drain_all(&mut self) {
        let mut out = Vec::new();
        for tsi in &self.order {
            let Some(peer) = self.peers.get_mut(tsi) else {
                continue;
            };
            let Some(w) = peer.rxw.as_mut() else {
                continue;
            };
            out.clear();
            w.drain(&mut out);
            for o in out.drain(..) {
                match o {
                    Output::Apdu { first_sqn, data } => {
                        self.stats.apdus_delivered += 1;
                        self.stats.bytes_delivered += data.len() as u64;
                        self.events.push_back(ReceiverEvent::Data {
                            tsi: *tsi,
                            sqn: first_sqn,
                            data,
                        });
                    }
                    Output::Lost { first, last } => {
                        self.stats.unrecoverable_sqns += u64::from(sqn::distance(first, last)) + 1;
                        self.events.push_back(ReceiverEvent::Unrecoverable {
                            tsi: *tsi,
                            first,
                            last,
                        });
                    }
                }
            }
            if let Some(fin) = peer.fin_lead {
                if !peer.ended && sqn::gt(w.base(), fin) {
                    peer.ended = true;
                    self.events
                        .push_back(ReceiverEvent::SessionEnded { tsi: peer.tsi });
                }
            }
        }
    }
}
