//! TCP models in the ns-2 style: packet-level senders and a sink that exchange
//! [`TcpSegment`]s (byte sequence numbers, no byte encoding).
//!
//! [`TcpSender`] is a bulk sender (unlimited data or a byte count) with one of three loss
//! recovery algorithms ([`TcpVariant`]):
//!
//! * **Reno** (RFC 5681): slow start, congestion avoidance, fast retransmit on the third
//!   duplicate ACK and fast recovery with window inflation; the first ACK of new data ends
//!   recovery, so several losses in one window usually end in a retransmission timeout.
//! * **NewReno** (RFC 6582): as Reno, but a partial ACK retransmits the next hole and keeps
//!   the sender in fast recovery until everything outstanding at the loss is acknowledged
//!   (partial window deflation; the retransmission timer is reset on the first partial ACK
//!   only, the "impatient" variant).
//! * **SACK** (RFC 6675): a scoreboard built from the sink's SACK blocks, `IsLost`, `pipe`
//!   and `NextSeg`; cwnd is set to ssthresh at the start of recovery and not inflated.
//!
//! All three share the RFC 6298 retransmission timer (SRTT/RTTVAR, minimum RTO, Karn's
//! rule, exponential backoff; one segment is timed per round trip, as in BSD and ns-2, and
//! never one sent during recovery or followed by a retransmission). After a timeout the
//! window restarts from one segment and sending goes back to the first unacknowledged byte
//! (go-back-N, as ns-2's one-way TCPs do); ssthresh is not reduced again when the same
//! segment times out again or when the timeout ends a fast recovery that already reduced
//! it. After a timeout no fast retransmit starts until everything sent before it is
//! acknowledged (RFC 6582's `recover` check, applied to all three variants so that the
//! duplicates go-back-N provokes do not trigger spurious fast retransmits). NewReno and
//! SACK also set their recovery point at each fast retransmit; Reno does not, so it may
//! halve again in the same window, as RFC 5681 allows.
//!
//! [`TcpSink`] acknowledges cumulatively with up to three SACK blocks, most recent first
//! (RFC 2018), optionally delaying ACKs (every second segment or a timer; out-of-order
//! segments and segments filling a hole are acknowledged at once, RFC 5681 §4.2).
//!
//! Segments are `mss` bytes (the last one of a finite transfer may be shorter) and take
//! `mss + header_bytes` on the wire; ACKs take `ack_bytes`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use pgmcc::{Duration, Instant};

use crate::agent::serde_json_value::Value;
use crate::agent::{Agent, Ctx};
use crate::packet::{Dest, Packet, Payload, TcpSegment};

/// The loss recovery algorithm of a [`TcpSender`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcpVariant {
    /// RFC 5681 fast retransmit / fast recovery.
    Reno,
    /// RFC 6582 partial-ACK handling.
    NewReno,
    /// RFC 6675 SACK-based loss recovery.
    Sack,
}

impl TcpVariant {
    /// The agent kind used in summaries: `"tcp-reno"`, `"tcp-newreno"` or `"tcp-sack"`.
    pub fn kind(self) -> &'static str {
        match self {
            TcpVariant::Reno => "tcp-reno",
            TcpVariant::NewReno => "tcp-newreno",
            TcpVariant::Sack => "tcp-sack",
        }
    }
}

/// Knobs of a [`TcpSender`]. `TcpConfig::default()` gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpConfig {
    /// Payload bytes per segment (sender maximum segment size). Default 1460.
    pub mss: u32,
    /// TCP/IP header bytes added to every data segment on the wire. Default 40.
    pub header_bytes: u32,
    /// Initial congestion window, in segments. Default 1 (ns-2's `windowInit_`).
    pub initial_cwnd: u32,
    /// Initial slow-start threshold in bytes; `None` means unlimited (the maximum window).
    /// Default `None`.
    pub initial_ssthresh: Option<u64>,
    /// Advertised / maximum window in bytes: the sender never has more than this
    /// outstanding, and cwnd does not grow beyond it. Default 1 GiB (effectively unlimited).
    pub max_window: u64,
    /// Duplicate ACKs that trigger fast retransmit. Default 3.
    pub dupack_threshold: u32,
    /// Retransmission timeout before the first RTT sample (RFC 6298 §2.1). Default 1 s.
    pub initial_rto: Duration,
    /// Lower bound on the RTO (RFC 6298 §2.4). Default 1 s; 200 ms models Linux.
    pub min_rto: Duration,
    /// Upper bound on the RTO, backoff included. Default 60 s.
    pub max_rto: Duration,
    /// Clock granularity `G` in `RTO = SRTT + max(G, 4·RTTVAR)`. Default 1 ms.
    pub clock_granularity: Duration,
    /// Bytes to send; `None` means an unlimited bulk transfer. Default `None`.
    pub bytes: Option<u64>,
}

impl Default for TcpConfig {
    fn default() -> TcpConfig {
        TcpConfig {
            mss: 1460,
            header_bytes: 40,
            initial_cwnd: 1,
            initial_ssthresh: None,
            max_window: 1 << 30,
            dupack_threshold: 3,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(1),
            bytes: None,
        }
    }
}

/// One sent, not yet cumulatively acknowledged segment.
#[derive(Debug, Clone, Copy)]
struct Seg {
    len: u32,
    /// Covered by a SACK block.
    sacked: bool,
    /// `IsLost` per RFC 6675 (SACK variant only).
    lost: bool,
    /// Retransmitted during the current SACK recovery (counts in `pipe`).
    rexmit_in_recovery: bool,
}

/// A bulk TCP sender (see the module documentation).
#[derive(Debug)]
pub struct TcpSender {
    flow: u32,
    dst: IpAddr,
    variant: TcpVariant,
    config: TcpConfig,
    started: bool,
    stopped: bool,
    /// First unacknowledged byte.
    snd_una: u64,
    /// Next byte to send (rewinds to `snd_una` after a timeout).
    snd_nxt: u64,
    /// One past the highest byte ever sent.
    snd_max: u64,
    /// Congestion window, bytes.
    cwnd: f64,
    /// Slow-start threshold, bytes.
    ssthresh: f64,
    dupacks: u32,
    in_recovery: bool,
    /// RFC 6582 `recover` / RFC 6675 `RecoveryPoint` (exclusive: `snd_max` when set).
    recover: Option<u64>,
    /// The next partial ACK is the first of this recovery (NewReno timer reset).
    first_partial: bool,
    /// Highest byte covered by a SACK block (exclusive).
    high_sacked: u64,
    segs: BTreeMap<u64, Seg>,
    srtt: Option<Duration>,
    rttvar: Duration,
    /// RTO before backoff.
    rto_base: Duration,
    backoff: u32,
    rto_deadline: Option<Instant>,
    /// The segment being timed for an RTT sample: (its end, when it was sent). One at a
    /// time, as BSD and ns-2 do; started only on new data outside recovery and abandoned on
    /// any retransmission (Karn's rule), so a hole never inflates a sample.
    rtt_timed: Option<(u64, Instant)>,
    /// `snd_una` at the last timeout (a repeated timeout holds ssthresh).
    last_rto_una: Option<u64>,
    // Counters.
    segments_sent: u64,
    bytes_sent: u64,
    retransmits: u64,
    timeouts: u64,
    fast_retransmits: u64,
    rtt_samples: u64,
    acks_received: u64,
}

impl TcpSender {
    /// A sender of flow `flow` towards the sink's node address `dst`.
    pub fn new(flow: u32, dst: IpAddr, variant: TcpVariant, config: TcpConfig) -> TcpSender {
        let mss = f64::from(config.mss.max(1));
        let cwnd = f64::from(config.initial_cwnd.max(1)) * mss;
        let ssthresh = config.initial_ssthresh.unwrap_or(config.max_window) as f64;
        TcpSender {
            flow,
            dst,
            variant,
            config,
            started: false,
            stopped: false,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cwnd,
            ssthresh,
            dupacks: 0,
            in_recovery: false,
            recover: None,
            first_partial: false,
            high_sacked: 0,
            segs: BTreeMap::new(),
            srtt: None,
            rttvar: Duration::ZERO,
            rto_base: config
                .initial_rto
                .clamp(config.min_rto, config.max_rto.max(config.min_rto)),
            backoff: 0,
            rto_deadline: None,
            last_rto_una: None,
            rtt_timed: None,
            segments_sent: 0,
            bytes_sent: 0,
            retransmits: 0,
            timeouts: 0,
            fast_retransmits: 0,
            rtt_samples: 0,
            acks_received: 0,
        }
    }

    /// The recovery algorithm.
    pub fn variant(&self) -> TcpVariant {
        self.variant
    }

    /// The configuration.
    pub fn config(&self) -> &TcpConfig {
        &self.config
    }

    /// Congestion window in bytes (inflated during Reno/NewReno fast recovery).
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Congestion window in segments of `mss` bytes.
    pub fn cwnd_segments(&self) -> f64 {
        self.cwnd / f64::from(self.mss())
    }

    /// Slow-start threshold in bytes.
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    /// Smoothed RTT, once there is a sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// Current retransmission timeout, backoff included.
    pub fn rto(&self) -> Duration {
        let factor = 1u32.checked_shl(self.backoff).unwrap_or(u32::MAX);
        self.rto_base
            .checked_mul(factor)
            .unwrap_or(self.config.max_rto)
            .min(self.config.max_rto)
    }

    /// Whether the sender is in fast recovery.
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    /// Bytes cumulatively acknowledged.
    pub fn bytes_acked(&self) -> u64 {
        self.snd_una
    }

    /// Payload bytes transmitted, retransmissions included.
    pub fn bytes_sent(&self) -> u64 {
        self.bytes_sent
    }

    /// Segments retransmitted (fast retransmits, recovery and timeout retransmissions).
    pub fn retransmits(&self) -> u64 {
        self.retransmits
    }

    /// Retransmission timeouts.
    pub fn timeouts(&self) -> u64 {
        self.timeouts
    }

    /// Fast retransmits (entries into fast recovery).
    pub fn fast_retransmits(&self) -> u64 {
        self.fast_retransmits
    }

    /// Whether a finite transfer has been completely acknowledged.
    pub fn done(&self) -> bool {
        self.config.bytes.is_some_and(|b| self.snd_una >= b)
    }

    fn mss(&self) -> u32 {
        self.config.mss.max(1)
    }

    /// The advertised window, at least one segment.
    fn max_window(&self) -> u64 {
        self.config.max_window.max(u64::from(self.mss()))
    }

    /// One past the last byte of the transfer.
    fn end(&self) -> u64 {
        self.config.bytes.unwrap_or(u64::MAX)
    }

    fn seg_len(&self, seq: u64) -> u32 {
        let left = self.end().saturating_sub(seq);
        u64::from(self.mss()).min(left) as u32
    }

    /// Whether a segment starting at `seq` may be sent for the first time or again.
    fn may_send(&self, seq: u64) -> bool {
        seq < self.end() && (!self.stopped || seq < self.snd_max)
    }

    fn flight(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    /// RFC 5681 eq. (4): `ssthresh = max(FlightSize / 2, 2·SMSS)`.
    fn halve(&mut self) {
        let mss = f64::from(self.mss());
        self.ssthresh = (self.flight() as f64 / 2.0).max(2.0 * mss);
    }

    fn transmit(&mut self, now: Instant, seq: u64, ctx: &mut Ctx<'_>) {
        let len = self.seg_len(seq);
        if len == 0 {
            return;
        }
        let again = seq < self.snd_max;
        if again {
            self.retransmits += 1;
        }
        let recovering = self.in_recovery && self.variant == TcpVariant::Sack;
        let seg = self.segs.entry(seq).or_insert(Seg {
            len,
            sacked: false,
            lost: false,
            rexmit_in_recovery: false,
        });
        if again {
            seg.rexmit_in_recovery |= recovering;
            // Karn's rule: a retransmission may stand behind the timed segment's ACK.
            self.rtt_timed = None;
        } else if self.rtt_timed.is_none() && !self.in_recovery {
            self.rtt_timed = Some((seq + u64::from(len), now));
        }
        self.snd_max = self.snd_max.max(seq + u64::from(len));
        self.segments_sent += 1;
        self.bytes_sent += u64::from(len);
        ctx.send(Packet {
            src: ctx.addr,
            dst: Dest::Unicast(self.dst),
            size: len + self.config.header_bytes,
            flow: self.flow,
            payload: Payload::Tcp(TcpSegment {
                seq,
                len,
                ack: 0,
                sack: Vec::new(),
                is_ack: false,
            }),
        });
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rto());
        }
    }

    /// Sends from `snd_nxt` as far as the window allows (Reno/NewReno, and SACK outside
    /// recovery).
    fn send_window(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        let wnd = self.cwnd.min(self.max_window() as f64);
        while self.may_send(self.snd_nxt) {
            let len = self.seg_len(self.snd_nxt);
            if (self.snd_nxt + u64::from(len) - self.snd_una) as f64 > wnd {
                break;
            }
            self.transmit(now, self.snd_nxt, ctx);
            self.snd_nxt += u64::from(len);
        }
    }

    /// RFC 6675 `IsLost` for every unSACKed segment, walking down from the top.
    fn update_lost(&mut self) {
        let dup = u64::from(self.config.dupack_threshold.max(1));
        let limit = (dup - 1) * u64::from(self.mss());
        let mut sacked_bytes = 0u64;
        let mut sacked_segs = 0u64;
        for seg in self.segs.values_mut().rev() {
            if seg.sacked {
                sacked_bytes += u64::from(seg.len);
                sacked_segs += 1;
                seg.lost = false;
            } else {
                seg.lost = sacked_bytes > limit || sacked_segs >= dup;
            }
        }
    }

    /// RFC 6675 `SetPipe`.
    fn pipe(&self) -> u64 {
        let mut pipe = 0u64;
        for seg in self.segs.values().filter(|s| !s.sacked) {
            if !seg.lost {
                pipe += u64::from(seg.len);
            }
            if seg.rexmit_in_recovery {
                pipe += u64::from(seg.len);
            }
        }
        pipe
    }

    /// RFC 6675 `NextSeg`: the next sequence number to send during SACK recovery.
    fn next_seg(&self) -> Option<u64> {
        // (1) The first lost, not yet retransmitted segment.
        if let Some((&seq, _)) = self
            .segs
            .iter()
            .find(|(_, s)| !s.sacked && s.lost && !s.rexmit_in_recovery)
        {
            return Some(seq);
        }
        // (2) New data, if the advertised window allows.
        if self.may_send(self.snd_max) {
            let len = self.seg_len(self.snd_max);
            if self.snd_max + u64::from(len) - self.snd_una <= self.max_window() {
                return Some(self.snd_max);
            }
            return None;
        }
        // (3) An unSACKed hole below the highest SACKed byte, not yet retransmitted.
        self.segs
            .iter()
            .find(|(&seq, s)| !s.sacked && !s.rexmit_in_recovery && seq < self.high_sacked)
            .map(|(&seq, _)| seq)
    }

    /// RFC 6675 §5 (C): send while `cwnd - pipe >= 1 SMSS`.
    fn sack_send(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        let mss = u64::from(self.mss());
        let mut pipe = self.pipe();
        while self.cwnd >= (pipe + mss) as f64 {
            let Some(seq) = self.next_seg() else {
                break;
            };
            let len = u64::from(self.seg_len(seq));
            self.transmit(now, seq, ctx);
            if seq >= self.snd_nxt {
                self.snd_nxt = seq + len;
            }
            pipe += len;
        }
    }

    fn send_more(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        if self.in_recovery && self.variant == TcpVariant::Sack {
            self.sack_send(now, ctx);
        } else {
            self.send_window(now, ctx);
        }
    }

    fn take_rtt_sample(&mut self, r: Duration) {
        self.rtt_samples += 1;
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                let diff = srtt.abs_diff(r);
                self.rttvar = self.rttvar * 3 / 4 + diff / 4;
                self.srtt = Some(srtt * 7 / 8 + r / 8);
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        let rto = srtt + self.config.clock_granularity.max(self.rttvar * 4);
        self.rto_base = rto.clamp(
            self.config.min_rto,
            self.config.max_rto.max(self.config.min_rto),
        );
        // A valid sample ends the backoff (RFC 6298 §5.7).
        self.backoff = 0;
    }

    /// Applies the SACK blocks of an ACK to the scoreboard.
    fn update_scoreboard(&mut self, sack: &[(u64, u64)]) {
        for &(s, e) in sack {
            let s = s.max(self.snd_una);
            if e <= s {
                continue;
            }
            for (&seq, seg) in self.segs.range_mut(s..e) {
                if seq + u64::from(seg.len) <= e {
                    seg.sacked = true;
                }
            }
            self.high_sacked = self.high_sacked.max(e.min(self.snd_max));
        }
        self.update_lost();
    }

    fn enter_recovery(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        self.fast_retransmits += 1;
        self.halve();
        // Reno (RFC 5681) may fast-retransmit again in the same window; only a timeout
        // sets its recovery point.
        if self.variant != TcpVariant::Reno {
            self.recover = Some(self.snd_max);
        }
        self.in_recovery = true;
        self.first_partial = true;
        let mss = f64::from(self.mss());
        match self.variant {
            TcpVariant::Reno | TcpVariant::NewReno => {
                self.transmit(now, self.snd_una, ctx);
                self.cwnd = self.ssthresh + f64::from(self.config.dupack_threshold) * mss;
                self.send_window(now, ctx);
            }
            TcpVariant::Sack => {
                self.cwnd = self.ssthresh;
                self.transmit(now, self.snd_una, ctx);
                self.sack_send(now, ctx);
            }
        }
    }

    fn on_ack(&mut self, now: Instant, ack: u64, sack: &[(u64, u64)], ctx: &mut Ctx<'_>) {
        self.acks_received += 1;
        if ack > self.snd_max {
            return; // Acknowledges data never sent: ignore.
        }
        let mss = f64::from(self.mss());
        if ack > self.snd_una {
            let acked = ack - self.snd_una;
            if let Some((_, sent)) = self.rtt_timed.filter(|&(end, _)| ack >= end) {
                self.rtt_timed = None;
                self.take_rtt_sample(now - sent);
            }
            let keep = self.segs.split_off(&ack);
            self.segs = keep;
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            self.high_sacked = self.high_sacked.max(ack);
            if self.variant == TcpVariant::Sack {
                self.update_scoreboard(sack);
            }
            let mut restart_timer = true;
            if self.in_recovery {
                let full = self.recover.is_none_or(|r| ack >= r);
                match self.variant {
                    TcpVariant::Reno => {
                        self.cwnd = self.ssthresh;
                        self.in_recovery = false;
                        self.dupacks = 0;
                    }
                    TcpVariant::NewReno if full => {
                        let flight = self.flight() as f64;
                        self.cwnd = self.ssthresh.min(flight.max(mss) + mss);
                        self.in_recovery = false;
                        self.dupacks = 0;
                    }
                    TcpVariant::NewReno => {
                        // Partial ACK: retransmit the next hole, deflate by what was acked.
                        self.transmit(now, self.snd_una, ctx);
                        self.cwnd -= acked as f64;
                        if acked as f64 >= mss {
                            self.cwnd += mss;
                        }
                        self.cwnd = self.cwnd.max(mss);
                        restart_timer = self.first_partial;
                        self.first_partial = false;
                    }
                    TcpVariant::Sack if full => {
                        self.in_recovery = false;
                        self.dupacks = 0;
                        for s in self.segs.values_mut() {
                            s.rexmit_in_recovery = false;
                        }
                    }
                    TcpVariant::Sack => {}
                }
            } else {
                self.dupacks = 0;
                let cap = self.max_window() as f64;
                if self.cwnd < self.ssthresh {
                    self.cwnd += mss.min(acked as f64);
                } else {
                    self.cwnd += mss * mss / self.cwnd;
                }
                self.cwnd = self.cwnd.min(cap);
            }
            if self.snd_una >= self.snd_max {
                self.rto_deadline = None;
            } else if restart_timer {
                self.rto_deadline = Some(now + self.rto());
            }
            self.send_more(now, ctx);
        } else if ack == self.snd_una && self.snd_max > self.snd_una {
            // Duplicate ACK.
            self.dupacks += 1;
            if self.variant == TcpVariant::Sack {
                self.update_scoreboard(sack);
            }
            if self.in_recovery {
                match self.variant {
                    TcpVariant::Reno | TcpVariant::NewReno => {
                        self.cwnd += mss;
                        self.send_window(now, ctx);
                    }
                    TcpVariant::Sack => self.sack_send(now, ctx),
                }
            } else {
                let may_recover = self.recover.is_none_or(|r| self.snd_una >= r);
                let triggered = self.dupacks >= self.config.dupack_threshold
                    || (self.variant == TcpVariant::Sack
                        && self.segs.get(&self.snd_una).is_some_and(|s| s.lost));
                if may_recover && triggered {
                    self.enter_recovery(now, ctx);
                }
            }
        }
    }

    fn on_timeout(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        self.rto_deadline = None;
        if self.snd_una >= self.snd_max {
            return;
        }
        self.timeouts += 1;
        // RFC 5681 §3.1: ssthresh is held when the same segment times out again; a timeout
        // during fast recovery also keeps the ssthresh that recovery set (one reduction per
        // loss episode, as Linux does), rather than halving a flight inflated by recovery.
        if self.last_rto_una != Some(self.snd_una) && !self.in_recovery {
            self.halve();
        }
        self.last_rto_una = Some(self.snd_una);
        self.backoff = (self.backoff + 1).min(16);
        self.cwnd = f64::from(self.mss());
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = Some(self.snd_max);
        // Forget SACK information (RFC 2018 §8: the receiver may have reneged).
        for s in self.segs.values_mut() {
            s.sacked = false;
            s.lost = false;
            s.rexmit_in_recovery = false;
        }
        self.high_sacked = self.snd_una;
        self.snd_nxt = self.snd_una;
        self.send_window(now, ctx);
    }
}

impl Agent for TcpSender {
    fn flow(&self) -> u32 {
        self.flow
    }

    fn wants(&self, p: &Packet) -> bool {
        p.flow == self.flow && matches!(&p.payload, Payload::Tcp(s) if s.is_ack)
    }

    fn start(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        self.started = true;
        self.send_window(now, ctx);
    }

    fn on_packet(&mut self, now: Instant, p: &Packet, ctx: &mut Ctx<'_>) {
        if !self.started {
            return;
        }
        if let Payload::Tcp(seg) = &p.payload {
            if seg.is_ack {
                self.on_ack(now, seg.ack, &seg.sack, ctx);
            }
        }
    }

    fn on_timer(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        if self.rto_deadline.is_some_and(|t| now >= t) {
            self.on_timeout(now, ctx);
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        self.rto_deadline
    }

    fn stop(&mut self, _now: Instant, _ctx: &mut Ctx<'_>) {
        self.stopped = true;
    }

    fn goodput_bytes(&self) -> u64 {
        self.snd_una
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn summary(&self) -> Value {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        Value {
            kind: self.variant.kind().into(),
            counters: vec![
                ("bytes_acked".into(), self.snd_una as f64),
                ("bytes_sent".into(), self.bytes_sent as f64),
                ("segments_sent".into(), self.segments_sent as f64),
                ("retransmits".into(), self.retransmits as f64),
                ("timeouts".into(), self.timeouts as f64),
                ("fast_retransmits".into(), self.fast_retransmits as f64),
                ("cwnd_bytes".into(), self.cwnd),
                ("cwnd_segments".into(), self.cwnd_segments()),
                ("ssthresh_bytes".into(), self.ssthresh),
                ("srtt_ms".into(), self.srtt.map_or(0.0, ms)),
                ("rto_ms".into(), ms(self.rto())),
                ("rtt_samples".into(), self.rtt_samples as f64),
                ("acks_received".into(), self.acks_received as f64),
            ],
            notes: vec![("dst".into(), self.dst.to_string())],
        }
    }
}

/// Knobs of a [`TcpSink`]. `TcpSinkConfig::default()` gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSinkConfig {
    /// Delay ACKs: acknowledge every second in-order segment, or after `delack_timeout`.
    /// Default `false` (one ACK per segment, like ns-2's `TCPSink`).
    pub delayed_ack: bool,
    /// Delayed-ACK timer. Default 200 ms.
    pub delack_timeout: Duration,
    /// Send SACK blocks (senders that do not use them ignore them). Default `true`.
    pub sack: bool,
    /// Size of an ACK on the wire. Default 40 bytes.
    pub ack_bytes: u32,
}

impl Default for TcpSinkConfig {
    fn default() -> TcpSinkConfig {
        TcpSinkConfig {
            delayed_ack: false,
            delack_timeout: Duration::from_millis(200),
            sack: true,
            ack_bytes: 40,
        }
    }
}

/// A TCP receiver: cumulative ACKs with SACK blocks, counting in-order delivered bytes.
#[derive(Debug)]
pub struct TcpSink {
    flow: u32,
    config: TcpSinkConfig,
    /// Next byte expected.
    rcv_nxt: u64,
    /// Out-of-order blocks `start -> end` above `rcv_nxt`, disjoint and not adjacent.
    ooo: BTreeMap<u64, u64>,
    /// Sequence numbers of recently received out-of-order segments, most recent first
    /// (each names the block that contains it).
    recent: Vec<u64>,
    /// Where ACKs go (the source of the data).
    peer: Option<IpAddr>,
    /// An in-order segment is waiting for its delayed ACK.
    pending: bool,
    delack_deadline: Option<Instant>,
    segments_received: u64,
    duplicate_segments: u64,
    out_of_order_segments: u64,
    acks_sent: u64,
}

impl TcpSink {
    /// A sink for flow `flow` with default knobs.
    pub fn new(flow: u32) -> TcpSink {
        TcpSink::with_config(flow, TcpSinkConfig::default())
    }

    /// A sink for flow `flow`.
    pub fn with_config(flow: u32, config: TcpSinkConfig) -> TcpSink {
        TcpSink {
            flow,
            config,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            recent: Vec::new(),
            peer: None,
            pending: false,
            delack_deadline: None,
            segments_received: 0,
            duplicate_segments: 0,
            out_of_order_segments: 0,
            acks_sent: 0,
        }
    }

    /// Bytes delivered in order (the next byte expected).
    pub fn delivered(&self) -> u64 {
        self.rcv_nxt
    }

    /// Data segments received, duplicates included.
    pub fn segments_received(&self) -> u64 {
        self.segments_received
    }

    /// ACKs sent.
    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }

    /// The out-of-order block containing `seq`, if any.
    fn block_of(&self, seq: u64) -> Option<(u64, u64)> {
        self.ooo
            .range(..=seq)
            .next_back()
            .filter(|(_, &e)| e > seq)
            .map(|(&s, &e)| (s, e))
    }

    /// Up to three SACK blocks, the most recently changed first (RFC 2018 §4); prunes
    /// `recent` to the entries that still name distinct blocks.
    fn sack_blocks(&mut self) -> Vec<(u64, u64)> {
        let mut blocks: Vec<(u64, u64)> = Vec::new();
        let mut kept = Vec::new();
        for &s in &self.recent {
            if let Some(b) = self.block_of(s) {
                if !blocks.contains(&b) {
                    blocks.push(b);
                    kept.push(s);
                }
            }
        }
        self.recent = kept;
        blocks.truncate(3);
        blocks
    }

    fn send_ack(&mut self, ctx: &mut Ctx<'_>) {
        self.pending = false;
        self.delack_deadline = None;
        let Some(peer) = self.peer else {
            return;
        };
        let sack = if self.config.sack {
            self.sack_blocks()
        } else {
            Vec::new()
        };
        self.acks_sent += 1;
        ctx.send(Packet {
            src: ctx.addr,
            dst: Dest::Unicast(peer),
            size: self.config.ack_bytes,
            flow: self.flow,
            payload: Payload::Tcp(TcpSegment {
                seq: 0,
                len: 0,
                ack: self.rcv_nxt,
                sack,
                is_ack: true,
            }),
        });
    }

    /// Adds `[s, e)` above `rcv_nxt` to the out-of-order blocks, merging neighbours.
    fn insert_block(&mut self, mut s: u64, mut e: u64) {
        if let Some((ps, pe)) = self.ooo.range(..=s).next_back().map(|(&a, &b)| (a, b)) {
            if pe >= s {
                s = ps;
                e = e.max(pe);
                self.ooo.remove(&ps);
            }
        }
        while let Some((ns, ne)) = self.ooo.range(s..).next().map(|(&a, &b)| (a, b)) {
            if ns > e {
                break;
            }
            e = e.max(ne);
            self.ooo.remove(&ns);
        }
        self.ooo.insert(s, e);
    }

    fn on_data(&mut self, now: Instant, seq: u64, len: u32, ctx: &mut Ctx<'_>) {
        self.segments_received += 1;
        let end = seq.saturating_add(u64::from(len));
        if end <= self.rcv_nxt {
            // Duplicate: acknowledge at once so the sender learns where we are.
            self.duplicate_segments += 1;
            self.send_ack(ctx);
        } else if seq <= self.rcv_nxt {
            let filled_hole = !self.ooo.is_empty();
            self.rcv_nxt = end;
            while let Some((s, e)) = self.ooo.first_key_value().map(|(&a, &b)| (a, b)) {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.ooo.remove(&s);
            }
            if filled_hole || !self.config.delayed_ack || self.pending {
                self.send_ack(ctx);
            } else {
                self.pending = true;
                self.delack_deadline = Some(now + self.config.delack_timeout);
            }
        } else {
            self.out_of_order_segments += 1;
            self.insert_block(seq, end);
            self.recent.retain(|&r| r != seq);
            self.recent.insert(0, seq);
            self.send_ack(ctx);
        }
    }
}

impl Agent for TcpSink {
    fn flow(&self) -> u32 {
        self.flow
    }

    fn wants(&self, p: &Packet) -> bool {
        p.flow == self.flow && matches!(&p.payload, Payload::Tcp(s) if !s.is_ack)
    }

    fn start(&mut self, _now: Instant, _ctx: &mut Ctx<'_>) {}

    fn on_packet(&mut self, now: Instant, p: &Packet, ctx: &mut Ctx<'_>) {
        if let Payload::Tcp(seg) = &p.payload {
            if !seg.is_ack {
                self.peer = Some(p.src);
                self.on_data(now, seg.seq, seg.len, ctx);
            }
        }
    }

    fn on_timer(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        if self.pending && self.delack_deadline.is_some_and(|t| now >= t) {
            self.send_ack(ctx);
        } else {
            self.delack_deadline = None;
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        self.delack_deadline
    }

    fn goodput_bytes(&self) -> u64 {
        self.rcv_nxt
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn summary(&self) -> Value {
        Value {
            kind: "tcp-sink".into(),
            counters: vec![
                ("bytes_delivered".into(), self.rcv_nxt as f64),
                ("segments_received".into(), self.segments_received as f64),
                ("duplicate_segments".into(), self.duplicate_segments as f64),
                (
                    "out_of_order_segments".into(),
                    self.out_of_order_segments as f64,
                ),
                ("acks_sent".into(), self.acks_sent as f64),
            ],
            notes: Vec::new(),
        }
    }
}
