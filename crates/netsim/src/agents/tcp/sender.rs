//! [`TcpSender`]: a bulk sender with Reno, NewReno or SACK loss recovery (see the module
//! documentation of [`crate::agents::tcp`]), and its knobs [`TcpConfig`].

use std::net::IpAddr;

use pgmcc::{Duration, Instant};

use super::rto::{RtoEstimator, RtoRule};
use super::scoreboard::Scoreboard;
use crate::agent::{Agent, Ctx};
use crate::agents::report::{AgentReport, TcpSenderReport};
use crate::packet::{Dest, Packet, Payload, TcpSegment};

/// Linux's `TCP_TIMEOUT_MIN`, two ticks, added to the reordering and probe timers.
const TIMEOUT_MIN: Duration = Duration::from_millis(2);
/// RFC 8985's `WCDelAckT`: how long a delayed ACK may take, added to the probe timeout
/// when one segment is outstanding.
const DELAYED_ACK_MAX: Duration = Duration::from_millis(200);

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
    /// The name scenario files give this kind of flow: `"tcp-reno"`, `"tcp-newreno"` or
    /// `"tcp-sack"`.
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
    /// Lower bound on the RTO (RFC 6298 §2.4); with [`RtoRule::Linux`], on the variance
    /// term added to SRTT. Default 1 s; 200 ms models Linux.
    pub min_rto: Duration,
    /// How the RTO follows the RTT samples. Default [`RtoRule::Rfc6298`].
    pub rto_rule: RtoRule,
    /// Upper bound on the RTO, backoff included. Default 60 s.
    pub max_rto: Duration,
    /// Clock granularity `G` in `RTO = SRTT + max(G, 4·RTTVAR)`. Default 1 ms.
    pub clock_granularity: Duration,
    /// Bytes to send; `None` means an unlimited bulk transfer. Default `None`.
    pub bytes: Option<u64>,
    /// Limited transmit (RFC 3042): the first and second duplicate ACKs each send one new
    /// segment, if the flight stays within cwnd + 2 segments, so a window of 3 or 4 segments
    /// can still collect the duplicate ACKs fast retransmit needs instead of timing out.
    /// Linux does it, and so does ns-2 since 2001 (`singledup_ 1`). Default false.
    pub limited_transmit: bool,
    /// NewReno restarts its retransmission timer on every partial ACK (RFC 6582's
    /// "Slow-but-Steady"; ns-2's `newreno_changes1_ 0`) instead of the first only
    /// ("Impatient"). Default false.
    pub partial_ack_restarts_timer: bool,
    /// A fast retransmit restarts the retransmission timer, as ns-2's agents do
    /// (`reset_rtx_timer` in `dupack_action`); RFC 6298 restarts it only on an ACK of new
    /// data. Default false.
    pub fast_retransmit_restarts_timer: bool,
    /// TCP timestamps for RTT measurement (RFC 7323 §3-4): every data segment carries its
    /// send time (TSval), the sink echoes it (TSecr), and every ACK of new data gives an RTT
    /// sample, retransmitted data included; no segment is timed one per round trip
    /// and Karn's rule is not needed. Since a valid sample ends the RTO backoff (RFC 6298
    /// §5.7), the first ACK of new data after a timeout ends it; without timestamps a sender
    /// at sustained loss may get no valid sample for many timeouts in a row. Linux does it
    /// (`net.ipv4.tcp_timestamps`). Default false.
    pub timestamps: bool,
    /// RACK-TLP loss detection (RFC 8985), as Linux runs it since 4.18 (SACK only).
    /// **RACK**: a segment is lost once a segment sent after it has been delivered and one
    /// RTT plus a reordering window (a quarter of the least RTT; none in recovery or once
    /// three segments are SACKed, unless reordering was seen) has passed since it was sent;
    /// this replaces RFC 6675's `IsLost`, starts recovery, and also finds lost
    /// retransmissions, which RFC 6675 leaves to the retransmission timer. **TLP**: when no
    /// ACK comes for two SRTTs outside recovery, one probe goes out (new data if there is
    /// any, beyond cwnd, else the last segment again), so the ACK it draws lets RACK find a
    /// lost tail instead of a timeout. Default false.
    pub rack: bool,
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
            rto_rule: RtoRule::Rfc6298,
            max_rto: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(1),
            bytes: None,
            limited_transmit: false,
            partial_ack_restarts_timer: false,
            fast_retransmit_restarts_timer: false,
            timestamps: false,
            rack: false,
        }
    }
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
    /// Outstanding segments and what SACK blocks said about them.
    scoreboard: Scoreboard,
    /// RTT estimate and retransmission timeout.
    rtt: RtoEstimator,
    rto_deadline: Option<Instant>,
    /// `snd_una` at the last timeout (a repeated timeout holds ssthresh).
    last_rto_una: Option<u64>,
    /// RACK's reordering timer: when the next segment would be marked lost.
    reo_deadline: Option<Instant>,
    /// TLP's probe timeout.
    pto_deadline: Option<Instant>,
    /// `TLP.end_seq`: `snd_max` when the outstanding probe left, while it is unanswered.
    tlp_high_seq: Option<u64>,
    /// The outstanding probe was a retransmission.
    tlp_retrans: bool,
    // Counters.
    segments_sent: u64,
    bytes_sent: u64,
    retransmits: u64,
    timeouts: u64,
    fast_retransmits: u64,
    limited_transmits: u64,
    /// Bytes limited transmit sent since the last ACK of new data: not part of the FlightSize
    /// that fast retransmit halves (RFC 5681 §3.2 step 2).
    limited_bytes: u64,
    acks_received: u64,
    loss_probes: u64,
    probe_recoveries: u64,
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
            scoreboard: if config.rack && variant == TcpVariant::Sack {
                Scoreboard::with_rack()
            } else {
                Scoreboard::default()
            },
            rtt: RtoEstimator::new(
                config.initial_rto,
                config.min_rto,
                config.max_rto,
                config.clock_granularity,
                config.rto_rule,
            ),
            rto_deadline: None,
            last_rto_una: None,
            reo_deadline: None,
            pto_deadline: None,
            tlp_high_seq: None,
            tlp_retrans: false,
            segments_sent: 0,
            bytes_sent: 0,
            retransmits: 0,
            timeouts: 0,
            fast_retransmits: 0,
            limited_transmits: 0,
            limited_bytes: 0,
            acks_received: 0,
            loss_probes: 0,
            probe_recoveries: 0,
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
        self.rtt.srtt()
    }

    /// Current retransmission timeout, backoff included.
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
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

    /// Tail loss probes sent (RACK-TLP; Linux's `TCPLossProbes`).
    pub fn loss_probes(&self) -> u64 {
        self.loss_probes
    }

    /// Retransmissions RACK found lost (Linux's `TCPLostRetransmit`).
    pub fn lost_retransmits(&self) -> u64 {
        self.scoreboard.lost_retransmits()
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

    /// Whether RACK-TLP runs (SACK senders with [`TcpConfig::rack`]).
    fn rack(&self) -> bool {
        self.config.rack && self.variant == TcpVariant::Sack
    }

    /// Neither recovering nor resending after a timeout (Linux's `Open` state).
    fn open(&self) -> bool {
        !self.in_recovery && self.recover.is_none_or(|r| self.snd_una >= r)
    }

    /// RFC 5681 eq. (4): `ssthresh = max(FlightSize / 2, 2·SMSS)`, for a `flight` in bytes.
    fn halve(&mut self, flight: u64) {
        let mss = f64::from(self.mss());
        self.ssthresh = (flight as f64 / 2.0).max(2.0 * mss);
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
        self.scoreboard.sent(seq, len, again && recovering, now);
        // Karn's rule: a retransmission may stand behind the timed segment's ACK. With
        // timestamps every ACK of new data is a sample and nothing is timed.
        if !self.config.timestamps {
            self.rtt
                .on_transmit(seq + u64::from(len), now, again, self.in_recovery);
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
                tsval: self.config.timestamps.then_some(now),
                tsecr: None,
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

    /// RFC 3042: one new segment on a duplicate ACK, cwnd unchanged, if the flight stays
    /// within cwnd + 2 segments (and the advertised window).
    fn limited_transmit(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        // Only new data: after a timeout `snd_nxt` is resending below `snd_max`.
        if self.snd_nxt != self.snd_max || !self.may_send(self.snd_nxt) {
            return;
        }
        let len = self.seg_len(self.snd_nxt);
        let after = self.snd_nxt + u64::from(len) - self.snd_una;
        let room = self.cwnd + 2.0 * f64::from(self.mss());
        if after as f64 <= room && after <= self.max_window() {
            self.transmit(now, self.snd_nxt, ctx);
            self.snd_nxt += u64::from(len);
            self.limited_transmits += 1;
            self.limited_bytes += u64::from(len);
        }
    }

    /// RFC 6675 `NextSeg`: the next sequence number to send during SACK recovery.
    fn next_seg(&self) -> Option<u64> {
        // (1) The first lost, not yet retransmitted segment.
        if let Some(seq) = self.scoreboard.first_lost() {
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
        self.scoreboard.first_hole()
    }

    /// RFC 6675 §5 (C): send while `cwnd - pipe >= 1 SMSS`.
    fn sack_send(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        let mss = u64::from(self.mss());
        let mut pipe = self.scoreboard.pipe();
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

    /// Sends what the window allows. With RACK, outside a timeout's resending, the window
    /// is measured against `pipe` as Linux measures it against `packets_in_flight`, so SACKed
    /// segments make room for new ones before any loss is marked.
    fn send_more(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        if (self.in_recovery && self.variant == TcpVariant::Sack) || (self.rack() && self.open()) {
            self.sack_send(now, ctx);
        } else {
            self.send_window(now, ctx);
        }
    }

    /// Applies the SACK blocks of an ACK to the scoreboard.
    fn update_scoreboard(&mut self, now: Instant, sack: &[(u64, u64)]) {
        let (dup, mss) = (self.config.dupack_threshold, self.mss());
        self.scoreboard
            .apply_sack(sack, self.snd_una, self.snd_max, dup, mss, now);
    }

    /// RACK at `now`: marks what is lost, sets the reordering timer, and starts recovery
    /// if a segment is lost and recovery may start (not while resending after a timeout).
    /// Returns whether recovery started.
    fn rack_check(&mut self, now: Instant, ctx: &mut Ctx<'_>) -> bool {
        if !self.rack() || !(self.in_recovery || self.open()) {
            self.reo_deadline = None;
            return false;
        }
        let wait = self.scoreboard.rack_detect(
            now,
            self.in_recovery,
            self.config.dupack_threshold,
            self.rtt.srtt(),
        );
        // Linux adds two ticks (`TCP_TIMEOUT_MIN`) to the reordering timer.
        self.reo_deadline = wait.map(|w| now + w + TIMEOUT_MIN);
        if !self.in_recovery && self.scoreboard.rack_has_lost() {
            self.enter_recovery(now, ctx);
            return true;
        }
        false
    }

    /// TLP (RFC 8985 §7.2, as Linux's `tcp_schedule_loss_probe`): outside recovery, with
    /// data outstanding and no probe unanswered, a probe in two SRTTs (plus the 200 ms a
    /// delayed ACK may take when one segment is out), never after the RTO would fire.
    fn arm_probe(&mut self, now: Instant) {
        self.pto_deadline = None;
        if !self.rack()
            || !self.open()
            || self.flight() == 0
            || self.tlp_high_seq.is_some()
            || self.reo_deadline.is_some()
        {
            return;
        }
        let mut pto = match self.rtt.srtt() {
            Some(srtt) if self.flight() <= u64::from(self.mss()) => 2 * srtt + DELAYED_ACK_MAX,
            Some(srtt) => 2 * srtt + TIMEOUT_MIN,
            None => self.config.initial_rto,
        };
        if let Some(rto) = self.rto_deadline {
            pto = pto.min(rto - now);
        }
        self.pto_deadline = Some(now + pto);
    }

    /// The probe timer fired: one segment, new data if any (even beyond cwnd), else the
    /// last one again; then the retransmission timer runs from now.
    fn send_probe(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        self.pto_deadline = None;
        if !self.open() || self.flight() == 0 || self.tlp_high_seq.is_some() {
            return;
        }
        let len = u64::from(self.seg_len(self.snd_max));
        let new_data = self.snd_nxt == self.snd_max
            && self.may_send(self.snd_max)
            && self.snd_max + len - self.snd_una <= self.max_window();
        if new_data {
            self.transmit(now, self.snd_max, ctx);
            self.snd_nxt = self.snd_max;
            self.tlp_retrans = false;
        } else if let Some(seq) = self.scoreboard.last() {
            self.transmit(now, seq, ctx);
            self.tlp_retrans = true;
        } else {
            return;
        }
        self.loss_probes += 1;
        self.tlp_high_seq = Some(self.snd_max);
        self.rto_deadline = Some(now + self.rto());
    }

    /// An ACK up to `ack` that advanced `snd_una` (`advanced`) or not, seen by TLP (Linux's
    /// `tcp_process_tlp_ack`): a probe of new data is answered once it is acknowledged; a
    /// probe that resent the last segment repaired a loss if data beyond it is
    /// acknowledged (cwnd is halved, as after a fast recovery), and repaired nothing if a
    /// pure duplicate ACK answers it.
    fn tlp_ack(&mut self, ack: u64, advanced: bool) {
        let Some(high) = self.tlp_high_seq else {
            return;
        };
        if ack < high {
            return;
        }
        if !self.tlp_retrans || !advanced {
            self.tlp_high_seq = None;
        } else if ack > high {
            self.tlp_high_seq = None;
            self.probe_recoveries += 1;
            self.halve(self.cwnd as u64);
            self.cwnd = self.ssthresh;
        }
    }

    fn enter_recovery(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        self.fast_retransmits += 1;
        self.tlp_high_seq = None;
        self.pto_deadline = None;
        // RFC 5681 §3.2 step 2: "When [RFC3042] is in use, additional data sent in limited
        // transmit MUST NOT be included in this calculation" (ns-2 and Linux halve cwnd).
        if self.rack() {
            // Linux halves cwnd (`tcp_reno_ssthresh`): with RACK, SACKed segments let the
            // flight grow past cwnd before a loss is marked.
            self.halve(self.cwnd as u64);
        } else {
            self.halve(self.flight().saturating_sub(self.limited_bytes));
        }
        // Reno (RFC 5681) may fast-retransmit again in the same window; only a timeout
        // sets its recovery point.
        if self.variant != TcpVariant::Reno {
            self.recover = Some(self.snd_max);
        }
        self.in_recovery = true;
        self.first_partial = true;
        if self.config.fast_retransmit_restarts_timer {
            self.rto_deadline = Some(now + self.rto());
        }
        let mss = f64::from(self.mss());
        match self.variant {
            TcpVariant::Reno | TcpVariant::NewReno => {
                self.transmit(now, self.snd_una, ctx);
                self.cwnd = self.ssthresh + f64::from(self.config.dupack_threshold) * mss;
                self.send_window(now, ctx);
            }
            TcpVariant::Sack => {
                self.cwnd = self.ssthresh;
                // With RACK the first segment marked lost leaves at once, whatever pipe
                // says (as Linux's PRR sends at least one segment on entering recovery).
                let first = if self.rack() {
                    self.scoreboard.first_lost()
                } else {
                    Some(self.snd_una)
                };
                if let Some(seq) = first {
                    self.transmit(now, seq, ctx);
                }
                self.sack_send(now, ctx);
            }
        }
    }

    /// An ACK up to `ack` with SACK blocks `sack` and timestamp echo `tsecr`.
    fn on_ack(
        &mut self,
        now: Instant,
        ack: u64,
        sack: &[(u64, u64)],
        tsecr: Option<Instant>,
        ctx: &mut Ctx<'_>,
    ) {
        self.acks_received += 1;
        if ack > self.snd_max {
            return; // Acknowledges data never sent: ignore.
        }
        let mss = f64::from(self.mss());
        if ack > self.snd_una {
            let acked = ack - self.snd_una;
            self.limited_bytes = 0;
            let snd_nxt = self.snd_nxt.max(ack);
            if !self.config.timestamps {
                self.rtt.on_ack(ack, snd_nxt, now);
            } else if let Some(sent) = tsecr {
                // RFC 7323 §4.1: only an ACK that advances the left edge gives a sample.
                self.rtt.on_echo(now, sent, ack, snd_nxt);
            }
            self.scoreboard.acked(ack, now);
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            if self.variant == TcpVariant::Sack {
                self.update_scoreboard(now, sack);
            }
            self.tlp_ack(ack, true);
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
                        restart_timer =
                            self.first_partial || self.config.partial_ack_restarts_timer;
                        self.first_partial = false;
                    }
                    TcpVariant::Sack if full => {
                        self.in_recovery = false;
                        self.dupacks = 0;
                        self.scoreboard.end_recovery();
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
            self.rack_check(now, ctx);
            self.send_more(now, ctx);
        } else if ack == self.snd_una && self.snd_max > self.snd_una {
            // Duplicate ACK.
            self.dupacks += 1;
            if self.variant == TcpVariant::Sack {
                self.update_scoreboard(now, sack);
            }
            if self.rack() {
                self.tlp_ack(ack, false);
                if !self.rack_check(now, ctx) {
                    self.send_more(now, ctx);
                }
            } else if self.in_recovery {
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
                    || (self.variant == TcpVariant::Sack && self.scoreboard.is_lost(self.snd_una));
                if may_recover && triggered {
                    self.enter_recovery(now, ctx);
                } else if self.config.limited_transmit && self.dupacks <= 2 {
                    self.limited_transmit(now, ctx);
                }
            }
        }
        self.arm_probe(now);
    }

    fn on_timeout(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        self.rto_deadline = None;
        self.reo_deadline = None;
        self.pto_deadline = None;
        self.tlp_high_seq = None;
        if self.snd_una >= self.snd_max {
            return;
        }
        self.timeouts += 1;
        // RFC 5681 §3.1: ssthresh is held when the same segment times out again; a timeout
        // during fast recovery also keeps the ssthresh that recovery set (one reduction per
        // loss episode, as Linux does), rather than halving a flight inflated by recovery.
        if self.last_rto_una != Some(self.snd_una) && !self.in_recovery {
            self.halve(self.flight());
        }
        self.limited_bytes = 0;
        self.last_rto_una = Some(self.snd_una);
        self.rtt.back_off();
        self.cwnd = f64::from(self.mss());
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = Some(self.snd_max);
        // Forget SACK information (RFC 2018 §8: the receiver may have reneged).
        self.scoreboard.forget(self.snd_una);
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
        self.arm_probe(now);
    }

    fn on_packet(&mut self, now: Instant, p: &Packet, ctx: &mut Ctx<'_>) {
        if !self.started {
            return;
        }
        if let Payload::Tcp(seg) = &p.payload {
            if seg.is_ack {
                self.on_ack(now, seg.ack, &seg.sack, seg.tsecr, ctx);
            }
        }
    }

    fn on_timer(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        if self.reo_deadline.is_some_and(|t| now >= t) {
            self.reo_deadline = None;
            if !self.rack_check(now, ctx) {
                self.send_more(now, ctx);
            }
            self.arm_probe(now);
        }
        if self.pto_deadline.is_some_and(|t| now >= t) {
            self.send_probe(now, ctx);
        }
        if self.rto_deadline.is_some_and(|t| now >= t) {
            self.on_timeout(now, ctx);
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        [self.rto_deadline, self.reo_deadline, self.pto_deadline]
            .into_iter()
            .flatten()
            .min()
    }

    fn stop(&mut self, _now: Instant, _ctx: &mut Ctx<'_>) {
        self.stopped = true;
    }

    fn goodput_bytes(&self) -> u64 {
        self.snd_una
    }

    fn report(&self) -> AgentReport {
        AgentReport::TcpSender(TcpSenderReport {
            bytes_acked: self.snd_una,
            bytes_sent: self.bytes_sent,
            segments_sent: self.segments_sent,
            retransmits: self.retransmits,
            timeouts: self.timeouts,
            fast_retransmits: self.fast_retransmits,
            limited_transmits: self.limited_transmits,
            loss_probes: self.loss_probes,
            probe_recoveries: self.probe_recoveries,
            lost_retransmits: self.lost_retransmits(),
            cwnd_bytes: self.cwnd,
            cwnd_segments: self.cwnd_segments(),
            ssthresh_bytes: self.ssthresh,
            srtt: self.rtt.srtt(),
            rto: self.rto(),
            rtt_samples: self.rtt.samples(),
            acks_received: self.acks_received,
            dst: self.dst,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const SENDER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const SINK: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    /// The segments sent into `out`, which is emptied.
    fn sent(out: &mut Vec<Packet>) -> Vec<TcpSegment> {
        out.drain(..)
            .filter_map(|p| match p.payload {
                Payload::Tcp(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    /// Delivers to `tx` at `now` an ACK up to `ack` echoing `tsecr`.
    fn ack(tx: &mut TcpSender, now: Instant, ack: u64, tsecr: Option<Instant>) -> Vec<TcpSegment> {
        ack_sack(tx, now, ack, &[], tsecr)
    }

    /// [`ack`] with SACK blocks `sack`.
    fn ack_sack(
        tx: &mut TcpSender,
        now: Instant,
        ack: u64,
        sack: &[(u64, u64)],
        tsecr: Option<Instant>,
    ) -> Vec<TcpSegment> {
        let p = Packet {
            src: SINK,
            dst: Dest::Unicast(SENDER),
            size: 40,
            flow: 1,
            payload: Payload::Tcp(TcpSegment {
                seq: 0,
                len: 0,
                ack,
                sack: sack.to_vec(),
                is_ack: true,
                tsval: None,
                tsecr,
            }),
        };
        let mut out = Vec::new();
        tx.on_packet(
            now,
            &p,
            &mut Ctx {
                addr: SENDER,
                out: &mut out,
            },
        );
        sent(&mut out)
    }

    /// Fires the retransmission timer, which must be set, at its deadline: that time and
    /// what the sender sent.
    fn time_out(tx: &mut TcpSender) -> (Instant, Vec<TcpSegment>) {
        let now = tx.next_timer().expect("the retransmission timer runs");
        let mut out = Vec::new();
        tx.on_timer(
            now,
            &mut Ctx {
                addr: SENDER,
                out: &mut out,
            },
        );
        (now, sent(&mut out))
    }

    /// A sender of `variant` started at 0 and the segments it sent.
    fn started(variant: TcpVariant, cfg: TcpConfig) -> (TcpSender, Vec<TcpSegment>) {
        let mut tx = TcpSender::new(1, SINK, variant, cfg);
        let mut out = Vec::new();
        tx.start(
            at(0),
            &mut Ctx {
                addr: SENDER,
                out: &mut out,
            },
        );
        let segs = sent(&mut out);
        (tx, segs)
    }

    /// The first segment is acknowledged after 100 ms; of the next two, the first times out
    /// twice (RTO 1 s, then 2 s) and its second retransmission is acknowledged 100 ms after
    /// it left, the ACK echoing what that retransmission carried, as the sink does. Returns
    /// the RTO after the two timeouts, the RTO after the ACK and the RTT samples taken.
    fn ack_of_a_retransmission(timestamps: bool) -> (Duration, Duration, u64) {
        let cfg = TcpConfig {
            timestamps,
            ..TcpConfig::default()
        };
        let mss = u64::from(cfg.mss);
        let (mut tx, first) = started(TcpVariant::Sack, cfg);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].tsval, timestamps.then_some(at(0)));
        let next = ack(&mut tx, at(100), mss, first[0].tsval);
        assert_eq!(next.len(), 2, "cwnd 2 after one ACK in slow start");
        assert_eq!(
            tx.rto(),
            Duration::from_secs(1),
            "100 ms sample, 1 s minimum"
        );
        let (t, again) = time_out(&mut tx);
        assert_eq!(t, at(1100));
        assert_eq!(
            (again.len(), again[0].seq),
            (1, mss),
            "go-back-N from snd_una"
        );
        assert_eq!(tx.rto(), Duration::from_secs(2));
        let (sent_at, again) = time_out(&mut tx);
        assert_eq!(sent_at, at(3100));
        assert_eq!((again.len(), again[0].seq), (1, mss));
        let backed_off = tx.rto();
        assert_eq!(again[0].tsval, timestamps.then_some(sent_at));
        ack(
            &mut tx,
            sent_at + Duration::from_millis(100),
            2 * mss,
            again[0].tsval,
        );
        (backed_off, tx.rto(), tx.rtt.samples())
    }

    /// With timestamps, the ACK of a segment retransmitted after two timeouts is an RTT
    /// sample and ends the backoff (RFC 6298 §5.7): the RTO is back to its 1 s base. Without,
    /// Karn's rule discards it and the RTO stays backed off at 4 s.
    #[test]
    fn with_timestamps_the_ack_of_a_retransmission_ends_the_backoff() {
        let (backed_off, after, samples) = ack_of_a_retransmission(true);
        assert_eq!(backed_off, Duration::from_secs(4));
        assert_eq!(after, Duration::from_secs(1));
        assert_eq!(samples, 2);
        let (backed_off, after, samples) = ack_of_a_retransmission(false);
        assert_eq!(backed_off, Duration::from_secs(4));
        assert_eq!(after, Duration::from_secs(4));
        assert_eq!(samples, 1);
    }

    /// With timestamps every ACK of new data is a sample (no one-per-round-trip timing), and
    /// an ACK that acknowledges nothing new is not.
    #[test]
    fn with_timestamps_every_ack_of_new_data_is_a_sample() {
        let cfg = TcpConfig {
            timestamps: true,
            initial_cwnd: 4,
            ..TcpConfig::default()
        };
        let mss = u64::from(cfg.mss);
        let (mut tx, segs) = started(TcpVariant::Reno, cfg);
        assert_eq!(segs.len(), 4);
        for (k, s) in segs.iter().enumerate() {
            ack(&mut tx, at(50 + k as u64), s.seq + mss, s.tsval);
        }
        assert_eq!(tx.rtt.samples(), 4);
        ack(&mut tx, at(60), 4 * mss, segs[3].tsval);
        assert_eq!(tx.rtt.samples(), 4, "a duplicate ACK is no sample");
    }

    /// Three segments out, the middle one lost: the ACK of the first and one SACK of the
    /// third. With RACK the lost segment is resent when one RTT plus a quarter of the least
    /// RTT has passed since it was sent (the reordering timer); RFC 6675 has one duplicate
    /// ACK of the three it needs and waits for the retransmission timer.
    #[test]
    fn rack_resends_a_lost_segment_of_a_small_window_without_a_timeout() {
        for rack in [true, false] {
            let cfg = TcpConfig {
                timestamps: true,
                initial_cwnd: 3,
                rack,
                ..TcpConfig::default()
            };
            let mss = u64::from(cfg.mss);
            let (mut tx, first) = started(TcpVariant::Sack, cfg);
            assert_eq!(first.len(), 3);
            ack(&mut tx, at(100), mss, first[0].tsval);
            ack_sack(&mut tx, at(101), mss, &[(2 * mss, 3 * mss)], first[2].tsval);
            let (t, again) = time_out(&mut tx);
            if rack {
                // Sent at 0, RACK.rtt 101 ms, window 100 / 4 ms, two ticks.
                assert_eq!(t, at(128));
                assert_eq!(again[0].seq, mss, "the lost segment first");
                assert_eq!((tx.timeouts(), tx.fast_retransmits()), (0, 1));
                assert!(tx.in_recovery());
            } else {
                assert_eq!(t, at(1100), "the 1 s RTO from the ACK of new data");
                assert_eq!((tx.timeouts(), tx.fast_retransmits()), (1, 0));
            }
        }
    }

    /// Every segment after the first two of a window is lost and no ACK comes: two SRTTs
    /// after the last ACK a probe of new data goes out; the ACK that SACKs it marks the
    /// tail lost and recovery resends it, without a timeout.
    #[test]
    fn a_tail_loss_probe_turns_a_lost_tail_into_a_recovery() {
        let cfg = TcpConfig {
            timestamps: true,
            initial_cwnd: 4,
            rack: true,
            ..TcpConfig::default()
        };
        let mss = u64::from(cfg.mss);
        let (mut tx, first) = started(TcpVariant::Sack, cfg);
        assert_eq!(first.len(), 4);
        let more = ack(&mut tx, at(100), 2 * mss, first[1].tsval);
        let highest = more
            .iter()
            .map(|s| s.seq)
            .max()
            .expect("slow start sends more");
        let (t, probe) = time_out(&mut tx);
        assert_eq!(t, at(302), "2 SRTT + two ticks after the last ACK");
        assert_eq!(probe.len(), 1);
        assert_eq!(probe[0].seq, highest + mss, "new data, beyond cwnd");
        assert_eq!(tx.loss_probes(), 1);
        let end = probe[0].seq + mss;
        let resent = ack_sack(
            &mut tx,
            at(402),
            2 * mss,
            &[(probe[0].seq, end)],
            probe[0].tsval,
        );
        assert_eq!(resent.first().map(|s| s.seq), Some(2 * mss));
        assert_eq!((tx.timeouts(), tx.fast_retransmits()), (0, 1));
    }

    /// A retransmission lost in recovery is found lost once a segment sent after it is
    /// SACKed an RTT later, and sent a third time without a timeout.
    #[test]
    fn rack_finds_a_lost_retransmission() {
        let cfg = TcpConfig {
            timestamps: true,
            initial_cwnd: 10,
            rack: true,
            ..TcpConfig::default()
        };
        let mss = u64::from(cfg.mss);
        let (mut tx, first) = started(TcpVariant::Sack, cfg);
        assert_eq!(first.len(), 10);
        // Segment 0 lost, 1-7 SACKed: with three SACKed segments the reordering window is
        // closed, so it is lost at once and resent, and pipe leaves room for new data.
        let resent = ack_sack(&mut tx, at(100), 0, &[(mss, 8 * mss)], first[7].tsval);
        assert_eq!(resent.first().map(|s| s.seq), Some(0));
        assert_eq!(tx.fast_retransmits(), 1);
        let later = resent.last().expect("recovery sends").clone();
        assert!(later.seq > 0, "new data after the retransmission");
        // The retransmission is lost; what left with it arrives 100 ms later.
        let again = ack_sack(
            &mut tx,
            at(200),
            0,
            &[(later.seq, later.seq + mss), (mss, 10 * mss)],
            later.tsval,
        );
        assert_eq!(again.first().map(|s| s.seq), Some(0));
        assert_eq!(tx.lost_retransmits(), 1);
        assert_eq!((tx.timeouts(), tx.fast_retransmits()), (0, 1));
    }
}
