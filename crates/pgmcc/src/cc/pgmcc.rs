//! The pgmcc sender controller: window and tokens (§3.4) run against one acker, elected and
//! tracked from receiver reports (§3.5), restarted after stalls (§3.6).
//!
//! RTT. OpenPGM's wire carries an explicit millisecond timestamp in OPT_PGMCC_DATA, echoed
//! (plus the receiver's hold time) in OPT_PGMCC_FEEDBACK; there is no field for the
//! receiver's `rxw_lead` on a NAK. The paper measures RTT in packets (`latest sqn sent -
//! rxw_lead`). We get the same quantity from the echo: the number of data packets sent since
//! the echoed time, looked up in a short send-time history (the draft's "implicit
//! timestamp", §2.5.2). [`RttUnit::Millis`] compares receivers by time instead.
//!
//! A change of acker is a move, never a congestion signal: the window is untouched, the ACK
//! tracker restarts at the first packet naming the new acker, and ACKs still arriving from
//! the previous acker for packets that named it keep regenerating tokens.

use std::collections::VecDeque;
use std::net::IpAddr;

use pgm_wire::{Options, PgmccData, PgmccFeedback, ReportBar};
use serde::Serialize;

use super::ack_tracker::AckTracker;
use super::report_check::{ReportCheck, Verdict};
use super::rtt::MAX_RTT_MS;
use super::silent::SilentReceivers;
use super::throughput::{Operating, SwitchBias, ThroughputModel};
use super::window::Window;
use super::{
    Ack, CcEvent, CcStats, CongestionControl, Events, Metrics, Nak, RttSample, SourceLimits,
};
use crate::sqn;
use crate::time::{Duration, Instant};

/// How receivers' RTTs are expressed for comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum RttUnit {
    /// Data packets sent during one RTT (the paper, §3.2.1): `pgmcc-paper`'s. Two samples
    /// taken while the rate differs (a candidate's NAK in slow start against the acker's
    /// smoothed RTT, or any report in a burst) are not comparable (docs/pgmcc.md,
    /// difference 2).
    #[default]
    Packets,
    /// Milliseconds, from the same echo (OpenPGM's unit): our recommended `pgmcc`'s.
    Millis,
}

/// OpenPGM's stall timeout, and the draft's before the acker's first RTT sample.
const STALL_TIMEOUT: Duration = Duration::from_secs(3);

/// When the sender gives up waiting for ACKs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TimeoutPolicy {
    /// A fixed stall timeout (OpenPGM's 3 s; the paper gives no value).
    Fixed(Duration),
    /// An RFC 6298 estimator on the acker's ACK RTTs (`SRTT + 4 RTTVAR`, backed off on
    /// stalls in a row); after an acker switch `fixed` applies until the new acker's first
    /// RTT sample (the draft, §2.7: "restarted from the beginning" on ACKER changes).
    Adaptive {
        /// Lower bound of the RTO (RFC 6298: 1 s).
        min: Duration,
        /// Upper bound of the RTO.
        max: Duration,
        /// Timeout used before any sample of the current acker exists.
        fixed: Duration,
        /// Which ACKs restart the timer.
        restart: RtoRestart,
    },
}

/// Which ACKs restart an adaptive stall timer ([`TimeoutPolicy::Adaptive`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RtoRestart {
    /// The fairness benchmark's fix (Set 1): only an ACK whose bitmap shows no hole.
    CleanBitmap,
    /// The draft's (§2.7 and its pseudo-code's `update_timeout` on every ACK from the
    /// acker) and TCP's (RFC 6298 §5.3): every ACK that acknowledges new data.
    NewData,
}

/// Every knob of the controller; defaults are the paper's values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PgmccConfig {
    /// Fixed slow-start threshold in packets (§3.4: 6); unused with [`SlowStart::Adaptive`].
    pub ssthresh: u32,
    /// How the slow-start threshold is set (paper: [`SlowStart::Fixed`] at `ssthresh`; our
    /// recommended controller: [`SlowStart::Adaptive`]).
    pub slow_start: SlowStart,
    /// Later ACKs that declare a hole lost (§3.4: 3).
    pub dupack_threshold: u32,
    /// Switch bias `c`: a report replaces the acker only if `T(new) < c T(acker)` (§3.5: 0.75).
    pub switch_bias: SwitchBias,
    /// Which loss estimate receivers put in their reports, advertised to them on
    /// OPT_REPORT_BAR (both presets: the paper's [`LossReport::Filter`]; see
    /// [`LossReport::Intervals`] for why it is not the recommended default).
    pub loss_report: LossReport,
    /// How the election compares a candidate's report with the acker's (paper:
    /// [`Election::Paper`]; our recommended controller: [`Election::LikeWithLike`]).
    pub election: Election,
    /// Throughput model for election (§3.5: the simple formula).
    pub model: ThroughputModel,
    /// RTT unit for election (§3.2.1: packets; our recommended controller: milliseconds).
    pub rtt_unit: RttUnit,
    /// Stall handling (paper: fixed, OpenPGM's 3 s; our recommended controller: the draft's,
    /// [`PgmccConfig::with_draft_timeout`]).
    pub timeout: TimeoutPolicy,
    /// Stalls in a row after which the next data packet asks for a new election (§3.6: "a
    /// couple": 2).
    pub stalls_before_election: u32,
    /// How the window limits transmissions (paper: [`Accounting::Tokens`]; our recommended
    /// controller: [`Accounting::Pipe`]).
    pub accounting: Accounting,
    /// Rate floor (ours; default none = the paper): while the window holds the sender back,
    /// one packet may still leave every `min_interval`, whatever the acker says or does not
    /// say. With `max_tpdu` bytes per packet the session never drops below
    /// `max_tpdu / min_interval`, so a receiver that wins the election with absurd loss and
    /// then withholds ACKs cannot starve the session. The window itself is not changed. Choose
    /// it well below the normal packet interval, or it overrides congestion control.
    pub min_interval: Option<Duration>,
    /// Window growth during the round trip after a loss reaction (paper: [`Recovery::Grow`];
    /// our recommended controller: [`Recovery::Hold`]).
    pub recovery: Recovery,
    /// Reports despite suppression (ours; paper: false, recommended: true): the source puts
    /// a report bar on NCFs and SPMs (OPT_REPORT_BAR): the acker's loss rate over `c²`,
    /// which a receiver with the acker's RTT must exceed to replace it. A receiver whose own
    /// loss rate is above the bar lets no NCF or peer NAK suppress its NAK, and NAKs
    /// selectively rather than wait for FEC parity, so its report reaches the election
    /// (`docs/pgmcc.md`, "Reports despite suppression"). The paper's receivers report only
    /// on the NAKs suppression leaves them.
    pub advertise_report_bar: bool,
    /// Most packets the window may hold while the acker's ACKs are unproven (ours;
    /// `docs/security.md`): the source asks for proof of receipt
    /// (`SenderConfig::ack_proof`) and the acker sends none, as OpenPGM's receivers cannot.
    /// Such ACKs could come from a host that did not receive the data. Default 64 packets
    /// (about 7 Mbit/s of 1,400-byte packets at 100 ms RTT); without proof keys every ACK
    /// counts as proven and this never applies.
    pub unproven_window: u32,
    /// Receivers that NAK without reports (ours; paper: false, recommended: true): OpenPGM's
    /// and ours with `--no-pgmcc` never take part in the election, so their loss, read from
    /// their NAKs, bounds the window at TCP's for that loss ([`super::silent`]).
    pub cap_for_silent: bool,
    /// The acker's loss reports checked against its own ACKs (ours; paper: false,
    /// recommended: true; [`super::report_check`]): once its reports claim far more loss
    /// than its ACKs show, its loss counts as what they show, in this and every later
    /// election, and the window goes back to what it was when it became acker. A receiver
    /// on a fast path can no longer win the election with a false loss rate and then clock
    /// the source past the slowest receiver. Applies to the filter's reports
    /// ([`LossReport::Filter`]) only.
    pub check_reports: bool,
    /// Repairs in the window (ours, a knob off in both presets; needs
    /// [`Accounting::Pipe`]): every repair (RDATA or parity) counts as a packet in flight for
    /// one smoothed acker RTT after it leaves, as a TCP retransmission occupies the window
    /// until its ACK. Repairs still leave at once (paper §3.8: a repair waits for nothing
    /// but the rate limit and the repair budget); the data after them waits until the
    /// window has room again. Without it, repairs go on top of a window that the ACK clock
    /// keeps full, and where the queue they meet is the source's own (a slow access link)
    /// they are dropped there. Off in `pgmcc` until measured to help (`docs/pgmcc.md`
    /// difference 19).
    pub repairs_in_window: bool,
}

impl Default for PgmccConfig {
    fn default() -> PgmccConfig {
        PgmccConfig {
            ssthresh: 6,
            slow_start: SlowStart::Fixed,
            dupack_threshold: 3,
            switch_bias: SwitchBias::PAPER,
            loss_report: LossReport::Filter,
            election: Election::Paper,
            model: ThroughputModel::Simple,
            rtt_unit: RttUnit::Packets,
            timeout: TimeoutPolicy::Fixed(STALL_TIMEOUT),
            stalls_before_election: 2,
            accounting: Accounting::Tokens,
            min_interval: None,
            recovery: Recovery::Grow,
            advertise_report_bar: false,
            unproven_window: 64,
            cap_for_silent: false,
            check_reports: false,
            repairs_in_window: false,
        }
    }
}

/// What limits the sender between ACKs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Accounting {
    /// The paper's §3.4 token rule with the draft's reading: one token per data packet, `1 +
    /// 1/W` back per ACK from the current acker, the next W/2 ACKs after a loss return none;
    /// ACKs from anyone else (former ackers included) are ignored. Tokens leak: a lost
    /// packet or an ignored ACK never returns its token, and after a switch the packets
    /// still travelling to the former acker are forgotten, so the pipe can empty with `T < 1`
    /// until a stall timeout (docs/pgmcc.md).
    #[default]
    Tokens,
    /// Ours (issue 19), TCP's pipe rule (RFC 6675) over the acker's reports: a data packet
    /// may leave while `packets in flight + 1 <= W`. A packet is in flight until the acker
    /// it named acknowledges it or its reports declare it lost (three later packets
    /// acknowledged). Packets that named a former acker stay in flight after a switch until
    /// that acker settles them or the new acker has acknowledged `dupack_threshold` packets
    /// sent after the switch (the same evidence that declares a loss, here taken as "will
    /// not be reported"); a loss the former acker reports still triggers one reaction. The
    /// window rules (growth per acknowledged packet, halving once per RTT) are the paper's;
    /// "ignore the next W/2 ACKs" is what the pipe does by itself once W is halved.
    Pipe,
}

/// How the window's slow-start threshold is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum SlowStart {
    /// The paper's §3.4: exponential opening up to a small fixed threshold
    /// ([`PgmccConfig::ssthresh`], 6 packets), at start and after every stall; the paper
    /// leaves an adaptive threshold to future work.
    #[default]
    Fixed,
    /// Ours (issue 19), TCP's (RFC 5681 §3.1): no threshold until the first loss reaction,
    /// then the halved window; after a stall, half the window the stall found (at least 2).
    /// With the fixed 6, a session that starts beside a TCP flow opens linearly from 6
    /// packets while TCP slow-starts to its share, and on paths of hundreds of packets it
    /// had not caught up by the end of the fairness grid's measurement (docs/pgmcc.md,
    /// "Slow start").
    Adaptive,
}

/// The loss estimate receivers report, on which the acker is elected (§3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum LossReport {
    /// The paper's §3.2.2: a low-pass filter over the per-packet loss signal with a memory
    /// of about 120 packets. A non-acker reports only on a NAK, just after a loss made its
    /// filter jump: at 1% loss such a report reads the loss rate 1.8 times too high on
    /// average, while the acker's reports, on every ACK, read it right and swing widely;
    /// the bias is about the switch bias `c`, so the acker churns among the receivers near
    /// the slowest (docs/pgmcc.md, "Acker election with many receivers").
    #[default]
    Filter,
    /// Ours (issue 19): the source asks receivers (OPT_REPORT_BAR's INTERVALS flag) for
    /// TFRC's average loss interval rate (RFC 5348 §5.4) over their latest eight loss
    /// intervals, losses within the advertised group RTT merged into one event. It reads
    /// the same at a NAK as at an ACK, with a third of the filter's spread, and the acker
    /// follows the slowest receiver of a large group more closely. Receivers that do not
    /// know the flag, or have heard no group RTT, keep the filter. Not the default: after a
    /// long loss-free period one long interval dominates the average for the next eight
    /// loss events, so a receiver whose path a TCP flow starts to congest is elected tens
    /// of seconds late (the paper's Fig. 5: TCP got 54% of pgmcc's rate instead of 83%).
    Intervals,
}

/// How the election compares a candidate's report with the acker's (§3.5: a report
/// replaces the acker when `T(candidate) < c T(acker)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Election {
    /// The paper's and the draft's (§2.3): the acker's latest report, which rides on every
    /// ACK, against the candidate's, which rides on the NAK for its latest loss; a report of
    /// zero loss is never the slowest (the draft's `M = 0`), so the first receiver to answer
    /// the election request keeps the role until someone reports a loss. With the filter
    /// ([`LossReport::Filter`]) the acker's reading decays by 0.8% per packet between its
    /// losses and, in 16.16 fixed point, reaches exactly 0 a few hundred packets after the
    /// last one: `T(acker)` is then infinite and any receiver that NAKs, however fast, wins.
    #[default]
    Paper,
    /// Ours (issue 19), like compared with like: the acker's loss is that of its latest
    /// report that read higher than the one before, i.e. taken just after the acker's latest
    /// loss, when a candidate's report is taken; and two reports of zero loss, equal loss,
    /// compare by RTT (`T ∝ 1/RTT`: the candidate wins if `RTT(acker) < c RTT(candidate)`),
    /// so the first election moves to a distant receiver as soon as it answers instead of
    /// letting the nearest one clock the start-up. The acker's RTT is still its ACKs'
    /// smoothed one (docs/pgmcc.md, "A tree with a slow branch").
    LikeWithLike,
}

/// Whether W grows on the ACKs of packets that were already in flight when the window
/// reacted to a loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Recovery {
    /// The paper's §3.4: `W = W + 1/W` on every ACK, the ones inside the round trip after a
    /// halving included.
    #[default]
    Grow,
    /// Ours (issue 19), TCP's fast recovery (RFC 5681 §3.2, RFC 6675): after a halving W
    /// stays put until an ACK reports a packet sent after the reaction, and a halving leaves
    /// at least 2 packets (RFC 5681's ssthresh floor; with 1, the lost packet alone fills
    /// the pipe and only the stall timeout restarts it). With `Grow`, pgmcc
    /// gains about one packet per loss episode over a TCP flow that shares its losses, and
    /// the offset between the two windows settles at twice that (docs/pgmcc.md,
    /// "TCP-friendliness on a dumbbell").
    Hold,
}

impl PgmccConfig {
    /// Our recommended controller: the paper's with [`Accounting::Pipe`],
    /// [`Recovery::Hold`], the report bar, [`SlowStart::Adaptive`],
    /// [`Election::LikeWithLike`], the window bound for silent receivers, the check of the
    /// acker's reports, RTTs compared in milliseconds ([`RttUnit::Millis`]) and the draft's
    /// stall timeout ([`PgmccConfig::with_draft_timeout`]).
    pub fn recommended() -> PgmccConfig {
        PgmccConfig {
            accounting: Accounting::Pipe,
            recovery: Recovery::Hold,
            advertise_report_bar: true,
            slow_start: SlowStart::Adaptive,
            election: Election::LikeWithLike,
            cap_for_silent: true,
            check_reports: true,
            rtt_unit: RttUnit::Millis,
            ..PgmccConfig::default()
        }
        .with_draft_timeout()
    }

    /// OpenPGM's fixed 3 s stall timeout (the paper gives no value; `pgmcc-paper`'s).
    pub fn with_fixed_timeout(mut self) -> PgmccConfig {
        self.timeout = TimeoutPolicy::Fixed(STALL_TIMEOUT);
        self
    }

    /// The fairness benchmark's adaptive timeout with RFC 6298 bounds (restarted only by an
    /// ACK whose bitmap shows no hole).
    pub fn with_adaptive_timeout(mut self) -> PgmccConfig {
        self.timeout = Self::rfc6298(RtoRestart::CleanBitmap);
        self
    }

    /// The draft's stall timeout (§2.7): TCP's RTO, RFC 6298's bounds, 3 s before the
    /// acker's first sample, restarted by every ACK of new data.
    pub fn with_draft_timeout(mut self) -> PgmccConfig {
        self.timeout = Self::rfc6298(RtoRestart::NewData);
        self
    }

    fn rfc6298(restart: RtoRestart) -> TimeoutPolicy {
        TimeoutPolicy::Adaptive {
            min: Duration::from_secs(1),
            max: Duration::from_secs(60),
            fixed: STALL_TIMEOUT,
            restart,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct AckerState {
    addr: IpAddr,
    /// What the election compares candidates against (smoothed RTT; loss per
    /// [`PgmccConfig::election`]).
    op: Operating,
    /// The loss rate of the acker's latest report.
    reported: u32,
}

/// RFC 6298 estimator.
#[derive(Debug, Clone, Copy)]
struct Rto {
    srtt: Option<Duration>,
    rttvar: Duration,
    backoff: u32,
}

impl Rto {
    fn new() -> Rto {
        Rto {
            srtt: None,
            rttvar: Duration::ZERO,
            backoff: 0,
        }
    }

    fn sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let diff = s.abs_diff(r);
                self.rttvar = self.rttvar * 3 / 4 + diff / 4;
                self.srtt = Some(s * 7 / 8 + r / 8);
            }
        }
        self.backoff = 0;
    }

    fn rto(&self, min: Duration, max: Duration, fixed: Duration) -> Duration {
        let base = match self.srtt {
            None => fixed,
            Some(s) => (s + (self.rttvar * 4).max(Duration::from_millis(1))).max(min),
        };
        (base * (1u32 << self.backoff.min(6))).min(max)
    }
}

/// The pgmcc controller.
#[derive(Debug)]
pub struct Pgmcc {
    /// What the source's transmit window keeps repairable (`set_source_limits`).
    limits: SourceLimits,
    cfg: PgmccConfig,
    window: Window,
    tracker: AckTracker,
    acker: Option<AckerState>,
    /// Former ackers and the packets that named them ([`Accounting::Pipe`]; bounded: the
    /// most recent [`FORMER_ACKERS`]).
    previous: VecDeque<Former>,
    /// Send-time history of data packets: (ms, sqn).
    history: VecDeque<(u32, u32)>,
    last_sent: Option<u32>,
    /// When the last data packet left (for the rate floor).
    last_sent_at: Instant,
    /// The next data packet asks for an election.
    elect: bool,
    /// First data packet sent asking for the current election: the winner's ACKs count
    /// from there.
    elect_since: Option<u32>,
    stalls_in_a_row: u32,
    /// One transmission granted by the rate floor ([`Accounting::Pipe`]).
    floor_credit: bool,
    /// When the timeout was last reset, and the RTO state.
    timer_from: Instant,
    rto: Rto,
    events: Events,
    stats: CcStats,
    /// Receivers that NAK without reports ([`PgmccConfig::cap_for_silent`]).
    silent: SilentReceivers,
    /// Packets the acker's ACKs declared lost, latest [`ACKER_LOSSES`]: a silent receiver's
    /// loss the acker shared is already in the acker's reports.
    acker_lost: VecDeque<u32>,
    /// The current acker's reports against its ACKs ([`PgmccConfig::check_reports`]), and
    /// the window when it became acker.
    check: Option<ReportCheck>,
    window_at_switch: f64,
    /// Receivers whose reports were discredited, with what their ACKs showed: what their
    /// reports count as from then on (latest [`DISCREDITED`]).
    discredited: VecDeque<Discredited>,
    /// The current acker's ACK reports in a row whose RTT its ACKs showed to be inflated,
    /// and the longest RTT those ACKs showed, in ms.
    inflated: (u32, u32),
    /// Repairs counted in flight ([`PgmccConfig::repairs_in_window`]): when each stops
    /// counting, oldest first (bounded: [`HISTORY`]).
    repairs: VecDeque<Instant>,
}

/// A receiver whose reports claimed more than its ACKs showed
/// ([`PgmccConfig::check_reports`]).
#[derive(Debug, Clone, Copy)]
struct Discredited {
    addr: IpAddr,
    /// The loss rate its ACKs showed, if its loss reports were discredited.
    loss: Option<u16>,
    /// The round trip its ACKs showed (ms), if its RTT reports were: its reports count at
    /// most twice that from then on.
    rtt_ms: Option<u32>,
}

/// ACK reports in a row whose echoed timestamps are older than the packet they acknowledge
/// by more than [`INFLATION_MS`] and a quarter of the round trip the ACKs show, after which
/// the acker's RTT reports are discredited. An honest receiver's echo is the acknowledged
/// packet's own stamp, older only when that packet arrived after a later one (reordering),
/// which a run of 16 ACKs never all show.
const INFLATED_ACKS: u32 = 16;

/// See [`INFLATED_ACKS`].
const INFLATION_MS: u32 = 10;

/// Discredited receivers remembered ([`Pgmcc::discredited`]).
const DISCREDITED: usize = 16;

/// Acker losses remembered ([`Pgmcc::acker_lost`]).
const ACKER_LOSSES: usize = 512;

/// A former acker ([`Accounting::Pipe`]).
#[derive(Debug, Clone)]
struct Former {
    addr: IpAddr,
    /// Its reports over the packets that named it.
    tracker: AckTracker,
    /// When what it has not settled leaves the count of packets in flight: its
    /// retransmission timeout (RFC 6298: SRTT + 4 RTTVAR of its ACKs) after the switch, the
    /// time by which TCP too gives a packet up.
    expires: Instant,
    /// Its unsettled packets no longer count in flight.
    expired: bool,
}

/// Data packets remembered for RTT-in-packets lookups.
const HISTORY: usize = 8192;

/// Former ackers remembered for token credit.
const FORMER_ACKERS: usize = 8;

impl Pgmcc {
    /// A controller starting a session at `now`: `W = T = 1`, and the first data packet asks
    /// for an election.
    pub fn new(cfg: PgmccConfig, now: Instant) -> Pgmcc {
        let mut window = Window::new(cfg.ssthresh);
        if cfg.slow_start == SlowStart::Adaptive {
            window.set_adaptive_ssthresh();
        }
        window.set_hold_in_recovery(cfg.recovery == Recovery::Hold);
        Pgmcc {
            limits: SourceLimits::NONE,
            window,
            tracker: AckTracker::new(0, cfg.dupack_threshold),
            acker: None,
            previous: VecDeque::new(),
            history: VecDeque::new(),
            last_sent: None,
            last_sent_at: now,
            elect: true,
            elect_since: None,
            stalls_in_a_row: 0,
            floor_credit: false,
            timer_from: now,
            rto: Rto::new(),
            events: Events::new(),
            stats: CcStats::default(),
            silent: SilentReceivers::default(),
            acker_lost: VecDeque::new(),
            check: None,
            window_at_switch: 1.0,
            discredited: VecDeque::new(),
            inflated: (0, 0),
            repairs: VecDeque::new(),
            cfg,
        }
    }

    /// The window in packets.
    pub fn window(&self) -> f64 {
        self.window.window()
    }

    /// How many entries the controller holds (send-time history, former ackers, the acker,
    /// queued events). Every part has a constant bound, whatever the number of receivers
    /// reporting: tests check that hostile reporters cannot grow it.
    pub fn tracked_entries(&self) -> usize {
        self.history.len()
            + self.previous.len()
            + usize::from(self.acker.is_some())
            + self.events.len()
            + self.silent.len()
            + self.discredited.len()
    }

    fn push_event(&mut self, ev: CcEvent) {
        self.events.push(ev);
    }

    fn now_ms(now: Instant) -> u32 {
        now.as_millis_u32()
    }

    /// RTT of a report, in the configured unit.
    fn rtt(&self, sample: RttSample) -> u32 {
        let echo = sample.echo();
        match self.cfg.rtt_unit {
            RttUnit::Millis => sample.raw_millis().min(i32::MAX as u32),
            RttUnit::Packets => {
                // Packets sent after the echoed time. Several packets may share one
                // millisecond, so the receiver's lead lies between the last packet sent
                // before that millisecond and the last sent during it: take the middle.
                let Some(lead) = self.last_sent else {
                    return 1;
                };
                let last_sent_while = |pred: &dyn Fn(u32) -> bool| -> u32 {
                    match self.history.partition_point(|&(t, _)| pred(t)) {
                        0 => self
                            .history
                            .front()
                            .map_or(lead, |&(_, s)| s.wrapping_sub(1)),
                        i => self.history[i - 1].1,
                    }
                };
                let through = last_sent_while(&|t| !sqn::gt(t, echo));
                let before = last_sent_while(&|t| sqn::lt(t, echo));
                let mid = before.wrapping_add(sqn::distance(before, through) / 2);
                sqn::distance(mid, lead).max(1)
            }
        }
    }

    fn fixed_timeout(&self) -> Duration {
        match self.cfg.timeout {
            TimeoutPolicy::Fixed(d) => d,
            TimeoutPolicy::Adaptive {
                min, max, fixed, ..
            } => self.rto.rto(min, max, fixed),
        }
    }

    fn switch_to(&mut self, now: Instant, addr: IpAddr, op: Operating) {
        let from = self.acker.map(|a| a.addr);
        // After an election request the winner answers for the packets that asked; after a
        // switch the new acker is named from the next packet on.
        let next = self.last_sent.map_or(0, |s| s.wrapping_add(1));
        let first = self.elect_since.take().unwrap_or(next);
        if let Some(prev) = from {
            if self.cfg.accounting == Accounting::Pipe {
                // The packets that named the previous acker stay in flight until it settles
                // them (or the new acker's reports show they will not be).
                let rto = self.rto.srtt.map_or(self.fixed_timeout(), |srtt| {
                    srtt + (self.rto.rttvar * 4).max(Duration::from_millis(1))
                });
                self.previous.push_back(Former {
                    addr: prev,
                    tracker: self.tracker.bounded_to(first),
                    expires: now + rto,
                    expired: false,
                });
                if self.previous.len() > FORMER_ACKERS {
                    self.previous.pop_front();
                }
            }
            self.stats.acker_switches += 1;
        }
        self.tracker.reset(first);
        self.check = (self.cfg.check_reports && self.cfg.loss_report == LossReport::Filter)
            .then(|| ReportCheck::new(first));
        self.window_at_switch = self.window.window();
        self.inflated = (0, 0);
        self.acker = Some(AckerState {
            addr,
            op,
            reported: op.loss,
        });
        self.elect = false;
        if matches!(self.cfg.timeout, TimeoutPolicy::Adaptive { .. })
            || self.cfg.accounting == Accounting::Pipe
        {
            // Fixed timeout until the new acker's first sample (fairness benchmark Set 1);
            // with the pipe rule the estimate is also the new acker's own, for the day it
            // becomes a former acker.
            self.rto = Rto::new();
        }
        self.push_event(CcEvent::AckerChanged { from, to: addr });
    }

    /// The loss rate a discredited receiver's ACKs showed, if its loss reports were
    /// discredited: its reports count at most that.
    fn discredited_loss(&self, addr: IpAddr) -> Option<u16> {
        self.discredited
            .iter()
            .find(|d| d.addr == addr)
            .and_then(|d| d.loss)
    }

    fn on_report(&mut self, now: Instant, fb: &PgmccFeedback, sample: RttSample) {
        // A discredited receiver's reports count as what its ACKs showed, whatever it
        // reports now: its loss at most the loss they showed, its RTT at most twice the
        // round trip.
        let mut loss = fb.loss_rate;
        if let Some(shown) = self.discredited_loss(fb.rx) {
            loss = loss.min(shown);
        }
        let rtt = self.rtt(self.credible_rtt(now, fb.rx, sample));
        self.on_operating_point(now, fb.rx, rtt, loss);
    }

    /// One receiver report: elect, update the acker, or switch (§3.5).
    fn on_operating_point(&mut self, now: Instant, rx: IpAddr, rtt: u32, loss: u16) {
        let op = Operating {
            rtt,
            loss: u32::from(loss),
        };
        self.stats.reports += 1;
        match self.acker {
            None => self.switch_to(now, rx, op),
            Some(cur) if cur.addr == rx => {
                // The acker reports on every ACK: smooth its RTT (gain 1/4) so one sample
                // taken in a burst does not make it look faster than it is.
                let rtt = (3 * u64::from(cur.op.rtt) + u64::from(op.rtt)).div_ceil(4) as u32;
                // With `Election::LikeWithLike` the loss compared only moves when a report reads
                // higher than the one before: the filter (or a closed loss interval) just
                // took in a loss, as a candidate's NAK-time report has.
                let loss = match self.cfg.election {
                    Election::LikeWithLike if op.loss <= cur.reported => cur.op.loss,
                    _ => op.loss,
                };
                let reported = op.loss;
                self.acker = Some(AckerState {
                    addr: cur.addr,
                    op: Operating { rtt, loss },
                    reported,
                });
            }
            Some(cur) => {
                let c = self.cfg.switch_bias;
                let model = self.cfg.model;
                let slower = model.should_switch(op, cur.op, c)
                    || (self.cfg.election == Election::LikeWithLike
                        && model.should_switch_at_zero_loss(op, cur.op, c));
                if slower {
                    tracing::debug!(
                        t_ns = now.as_nanos(),
                        from = %cur.addr,
                        to = %rx,
                        from_rtt = cur.op.rtt,
                        from_loss = cur.op.loss,
                        to_rtt = op.rtt,
                        to_loss = op.loss,
                        "acker switch"
                    );
                    self.switch_to(now, rx, op);
                }
            }
        }
    }
}

impl Pgmcc {
    /// Packets in flight ([`Accounting::Pipe`]): sent, and not yet acknowledged or declared
    /// lost by the acker they named.
    pub fn in_flight(&self) -> u32 {
        let Some(lead) = self.last_sent else {
            return 0;
        };
        let upto = lead.wrapping_add(1);
        self.previous
            .iter()
            .filter(|p| !p.expired)
            .map(|p| p.tracker.unsettled(upto))
            .fold(self.tracker.unsettled(upto), u32::saturating_add)
            .saturating_add(self.repairs.len() as u32)
    }

    /// Repairs sent one smoothed acker RTT ago or earlier leave the count in flight.
    fn expire_repairs(&mut self, now: Instant) {
        while self.repairs.front().is_some_and(|&t| t <= now) {
            self.repairs.pop_front();
        }
    }

    /// Announces room in the window if there was none before (`had_room`) and there is
    /// now; returns whether there is.
    fn note_room(&mut self, had_room: bool) -> bool {
        let open = self.window_open();
        if open && !had_room {
            self.push_event(CcEvent::TokensAvailable {
                tokens: self.metrics_tokens(),
            });
        }
        open
    }

    /// Whole packets the window still lets out: the tokens, or `W - in flight`.
    fn metrics_tokens(&self) -> u32 {
        match self.cfg.accounting {
            Accounting::Tokens => self.window.tokens(),
            Accounting::Pipe => {
                (self.window.window() - f64::from(self.in_flight())).max(0.0) as u32
            }
        }
    }

    fn window_open(&self) -> bool {
        match self.cfg.accounting {
            Accounting::Tokens => self.window.can_send(),
            Accounting::Pipe => {
                self.floor_credit || f64::from(self.in_flight()) + 1.0 <= self.window.window()
            }
        }
    }

    /// A loss among the packets in flight: one reaction per RTT (the window's own rule).
    fn on_lost(&mut self, lost: u32, rx_max: u32, lead: u32) {
        let in_flight = sqn::distance(rx_max, lead);
        if self.window.on_loss(lost, in_flight, lead) {
            self.stats.loss_events += 1;
            self.push_event(CcEvent::Congestion {
                window: self.window.window(),
            });
        }
    }

    /// An ACK from a former acker ([`Accounting::Pipe`]): it settles packets that named it,
    /// and a loss it declares is a loss like any other. Returns false if `from` is none.
    fn on_former_ack(&mut self, from: IpAddr, rx_max: u32, bitmap: u32, lead: u32) -> bool {
        let mut found = false;
        let mut lost = None;
        let mut acked = 0;
        for p in self.previous.iter_mut().filter(|p| p.addr == from) {
            found = true;
            let o = p.tracker.on_ack(rx_max, bitmap);
            acked += o.newly_acked;
            lost = lost.or(o.lost.first().copied());
        }
        if let Some(l) = lost {
            self.on_lost(l, rx_max, lead);
        }
        self.window.on_ack_through(acked, rx_max);
        self.previous.retain(|p| !p.tracker.finished());
        found
    }

    /// Whether the acker received packet `s`, as far as its ACKs tell (false when they do
    /// not tell yet).
    fn acker_received(&self, s: u32) -> bool {
        match self.tracker.received(s) {
            Some(r) => r,
            None => {
                let settled = sqn::lt(s, self.tracker.next_expected())
                    && self.tracker.rx_max().is_some_and(|m| sqn::le(s, m));
                settled && !self.acker_lost.contains(&s)
            }
        }
    }

    /// Keeps the window within TCP's at the loss rate of the worst receiver that NAKs
    /// without reports ([`PgmccConfig::cap_for_silent`]).
    fn cap_for_silent(&mut self, now: Instant, lead: u32) {
        if self.silent.is_empty() {
            return;
        }
        if let Some(cap) = self.silent.window_cap(now, lead) {
            tracing::trace!(t_ns = now.as_nanos(), lead, cap, w = self.window.window(), worst = ?self.silent.worst(now, lead), "silent cap");
            if self.window.window() > cap {
                self.stats.silent_caps += 1;
                self.window.cap_fraction(cap);
            }
        }
    }

    /// An ACK's report RTT, no longer than the ACK itself shows ([`PgmccConfig::check_reports`]):
    /// the ACK says packet `rx_max` had arrived when it left, so the round trip is at most
    /// the time since `rx_max` was sent. An honest receiver echoes the stamp of the packet
    /// it acknowledges plus the time it held it, which is never older; one that echoes an
    /// older stamp, to look farther away than it is, reads as the ACK shows.
    ///
    /// When the acker's ACKs show this [`INFLATED_ACKS`] times in a row, its RTT reports are
    /// discredited: from then on they count at most twice the round trip its ACKs showed, in
    /// its NAKs too.
    fn bounded_by_ack(
        &mut self,
        now: Instant,
        from: IpAddr,
        sample: RttSample,
        rx_max: u32,
    ) -> RttSample {
        let is_acker = self.acker.is_some_and(|a| a.addr == from);
        let sent = self.history.front().and_then(|&(_, first)| {
            self.history
                .get(rx_max.wrapping_sub(first) as usize)
                .filter(|&&(_, s)| s == rx_max)
                .map(|&(sent, _)| sent)
        });
        let Some(sent) = sent else {
            return sample;
        };
        let held = sent.wrapping_sub(sample.echo()) as i32;
        if held <= 0 {
            if is_acker {
                self.inflated = (0, 0);
            }
            return sample;
        }
        self.stats.report_rtts_bounded += 1;
        let shown = Self::now_ms(now).wrapping_sub(sent);
        if is_acker {
            if held as u32 > INFLATION_MS.max(shown / 4) {
                self.inflated = (self.inflated.0 + 1, self.inflated.1.max(shown));
            } else {
                self.inflated = (0, 0);
            }
            if self.inflated.0 == INFLATED_ACKS {
                let rtt_ms = self.inflated.1.max(1);
                self.stats.reports_discredited += 1;
                tracing::warn!(
                    t_ns = now.as_nanos(),
                    acker = %from,
                    shown_rtt_ms = rtt_ms,
                    "the acker's reports claim a longer round trip than its ACKs show: they \
                     count at most twice what its ACKs show from now on"
                );
                self.remember(from).rtt_ms = Some(rtt_ms);
            }
        }
        sample.no_older_than(now, sent)
    }

    /// The entry of `addr` among the discredited receivers, made if it has none (the oldest
    /// forgotten beyond [`DISCREDITED`]).
    fn remember(&mut self, addr: IpAddr) -> &mut Discredited {
        let i = match self.discredited.iter().position(|d| d.addr == addr) {
            Some(i) => i,
            None => {
                if self.discredited.len() >= DISCREDITED {
                    self.discredited.pop_front();
                }
                self.discredited.push_back(Discredited {
                    addr,
                    loss: None,
                    rtt_ms: None,
                });
                self.discredited.len() - 1
            }
        };
        &mut self.discredited[i]
    }

    /// The acker's reports claimed far more loss than its ACKs showed
    /// ([`PgmccConfig::check_reports`]): from now on its loss is what they showed, and what
    /// the window gained while it was acker is taken back.
    fn discredit(&mut self, now: Instant, addr: IpAddr, shown: u16) {
        self.stats.reports_discredited += 1;
        tracing::warn!(
            t_ns = now.as_nanos(),
            acker = %addr,
            shown_loss = f64::from(shown) / 65535.0,
            "the acker's loss reports claim far more loss than its ACKs show: they count as \
             what its ACKs show from now on"
        );
        self.remember(addr).loss = Some(shown);
        if let Some(a) = self.acker.as_mut() {
            a.op.loss = u32::from(shown);
            a.reported = u32::from(shown);
        }
        self.check = None;
        self.window.cap(self.window_at_switch.max(1.0) as u32);
    }

    /// Former ackers' packets whose time is up no longer count in flight.
    fn expire_former(&mut self, now: Instant) {
        for p in self.previous.iter_mut() {
            if !p.expired && now >= p.expires {
                p.expired = true;
            }
        }
    }

    /// The next instant a former acker's packets leave the count in flight.
    fn next_expiry(&self) -> Option<Instant> {
        self.previous
            .iter()
            .filter(|p| !p.expired)
            .map(|p| p.expires)
            .min()
    }
}

impl CongestionControl for Pgmcc {
    fn can_send(&self) -> bool {
        self.window_open()
    }

    fn set_source_limits(&mut self, limits: SourceLimits) {
        self.limits = limits;
        self.window.set_max(limits.max_window(self.rto.srtt));
    }

    /// A discredited receiver's round trip counts at most twice what its ACKs showed.
    fn credible_rtt(&self, now: Instant, from: IpAddr, sample: RttSample) -> RttSample {
        match self.discredited.iter().find(|d| d.addr == from) {
            Some(Discredited {
                rtt_ms: Some(c), ..
            }) => {
                let floor = Self::now_ms(now).wrapping_sub(c.saturating_mul(2));
                sample.no_older_than(now, floor)
            }
            _ => sample,
        }
    }

    fn on_repair_sent(&mut self, now: Instant, _sqn: u32) {
        if !self.cfg.repairs_in_window || self.cfg.accounting != Accounting::Pipe {
            return;
        }
        self.expire_repairs(now);
        // Before the acker's first RTT sample: RFC 6298's initial RTO, 1 s.
        let rtt = self.rto.srtt.unwrap_or(Duration::from_secs(1));
        self.repairs.push_back(now + rtt);
        if self.repairs.len() > HISTORY {
            self.repairs.pop_front();
        }
    }

    fn on_data_sent(&mut self, now: Instant, sqn: u32, opts: &mut Options<'_>) {
        self.window.on_transmit();
        self.floor_credit = false;
        if self.last_sent.is_none() {
            self.tracker.reset(sqn);
        }
        self.last_sent = Some(sqn);
        self.last_sent_at = now;
        let ms = Self::now_ms(now);
        self.history.push_back((ms, sqn));
        if self.history.len() > HISTORY {
            self.history.pop_front();
        }
        let acker = match (self.elect, self.acker) {
            (false, Some(a)) => a.addr,
            _ => {
                self.stats.election_requests += 1;
                self.elect_since.get_or_insert(sqn);
                IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
            }
        };
        opts.pgmcc_data = Some(PgmccData { tstamp: ms, acker });
    }

    fn on_ack(&mut self, now: Instant, a: &Ack<'_>) {
        let (from, ack) = (a.from, &a.ack);
        let fb = a.options.pgmcc_feedback.as_ref().zip(a.rtt);
        // The Sender refused ACKs ahead of its lead; a controller installed mid-session has
        // no packet of its own to account for yet.
        let Some(lead) = self.last_sent else {
            return;
        };
        // An ACK is a report like a NAK's, measured the same way so that acker and
        // candidates compare fairly. (RX_MAX alone would give `lead - RX_MAX`, the paper's
        // formula, but ACKs that arrive bunched, with no transmission between them, drive
        // it to 1: ACK compression.)
        if let Some((fb, sample)) = fb {
            if fb.rx == from {
                let sample = if self.cfg.check_reports {
                    self.bounded_by_ack(now, from, sample, ack.rx_max)
                } else {
                    sample
                };
                self.on_report(now, fb, sample);
            }
        }
        let is_acker = self.acker.is_some_and(|a| a.addr == from);
        let pipe = self.cfg.accounting == Accounting::Pipe;
        let had_room = self.window_open();
        self.expire_repairs(now);
        if pipe && self.on_former_ack(from, ack.rx_max, ack.bitmap, lead) && !is_acker {
            self.note_room(had_room);
            return;
        }
        if !is_acker {
            self.stats.acks_ignored += 1;
            return;
        }
        self.stats.acks += 1;
        let out = self.tracker.on_ack(ack.rx_max, ack.bitmap);
        if let (Some(check), Some((fb, _))) = (self.check.as_mut(), fb.filter(|f| f.0.rx == from)) {
            if let Verdict::Discredited { shown } =
                check.on_ack(ack.rx_max, ack.bitmap, fb.loss_rate)
            {
                self.discredit(now, from, shown);
            }
        }
        if let Some((_, sample)) = fb {
            let r = Duration::from_millis(u64::from(sample.raw_millis().min(MAX_RTT_MS)));
            self.rto.sample(r);
            self.window.set_max(self.limits.max_window(self.rto.srtt));
        }
        if let Some(&l) = out.lost.first() {
            self.on_lost(l, ack.rx_max, lead);
        }
        if self.cfg.cap_for_silent {
            self.acker_lost.extend(out.lost.iter().copied());
            while self.acker_lost.len() > ACKER_LOSSES {
                self.acker_lost.pop_front();
            }
        }
        self.window.on_ack_through(out.newly_acked, ack.rx_max);
        if !a.proven {
            self.window.cap(self.cfg.unproven_window);
        }
        self.cap_for_silent(now, lead);
        if pipe {
            self.expire_former(now);
        }
        self.note_room(had_room);
        if out.newly_acked > 0 {
            self.stalls_in_a_row = 0;
            let reset = match self.cfg.timeout {
                TimeoutPolicy::Fixed(_)
                | TimeoutPolicy::Adaptive {
                    restart: RtoRestart::NewData,
                    ..
                } => true,
                TimeoutPolicy::Adaptive {
                    restart: RtoRestart::CleanBitmap,
                    ..
                } => self.tracker.no_holes(),
            };
            if reset {
                self.timer_from = now;
            }
        }
    }

    fn on_nak(&mut self, now: Instant, n: &Nak<'_>) {
        if let (Some(fb), Some(sample)) = (n.options.pgmcc_feedback, n.rtt) {
            self.on_report(now, &fb, sample);
        } else if self.cfg.cap_for_silent && !n.lost.is_empty() {
            // Only losses of the silent receiver's own path: a packet the acker lost too is
            // already in the acker's reports (and a test that withholds packets from
            // everyone is no reason to slow down twice).
            let own: Vec<u32> = n
                .lost
                .iter()
                .copied()
                .filter(|&s| self.acker_received(s))
                .collect();
            if let (Some(lead), false) = (self.last_sent, own.is_empty()) {
                let window = self.window.window().max(1.0) as u32;
                self.silent
                    .on_nak(now, n.from, &own, n.covers, lead, window);
                self.cap_for_silent(now, lead);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // The stall timer only runs while we are blocked waiting for ACKs.
        if self.window_open() || self.last_sent.is_none() {
            return None;
        }
        let stall = self.timer_from + self.fixed_timeout();
        let stall = self.next_expiry().map_or(stall, |e| e.min(stall));
        let stall = self.repairs.front().map_or(stall, |&e| e.min(stall));
        Some(match self.cfg.min_interval {
            Some(floor) => stall.min(self.last_sent_at + floor),
            None => stall,
        })
    }

    fn on_timeout(&mut self, now: Instant) {
        if self.window_open() || self.last_sent.is_none() {
            return;
        }
        self.expire_former(now);
        self.expire_repairs(now);
        if self.note_room(false) {
            return;
        }
        let deadline = self.timer_from + self.fixed_timeout();
        if now < deadline {
            if self
                .cfg
                .min_interval
                .is_some_and(|floor| now >= self.last_sent_at + floor)
            {
                self.stats.floor_tokens += 1;
                match self.cfg.accounting {
                    Accounting::Tokens => self.window.grant_one(),
                    Accounting::Pipe => self.floor_credit = true,
                }
            }
            return;
        }
        // Stall (§3.4, 3.6): restart W = T = 1; after a couple in a row, ask for an election.
        self.window.restart();
        self.stats.stalls += 1;
        self.stalls_in_a_row += 1;
        self.rto.backoff += 1;
        self.timer_from = now;
        if let Some(lead) = self.last_sent {
            self.tracker.reset(lead.wrapping_add(1));
        }
        // A restart forgets every packet in flight (W = T = 1, the paper).
        self.previous.clear();
        self.repairs.clear();
        if self.stalls_in_a_row >= self.cfg.stalls_before_election {
            self.elect = true;
            self.acker = None;
        }
        self.push_event(CcEvent::Stalled {
            stalls_in_a_row: self.stalls_in_a_row,
        });
    }

    fn poll_event(&mut self) -> Option<CcEvent> {
        self.events.pop()
    }

    fn control_options(&self, opts: &mut Options<'_>) {
        let bar = self
            .acker
            .filter(|_| self.cfg.advertise_report_bar)
            .map(|a| {
                let c = self.cfg.switch_bias.as_f64().clamp(0.01, 1.0);
                let bar = f64::from(a.op.loss) / (c * c);
                bar.min(f64::from(u16::MAX)) as u16
            });
        let intervals = self.cfg.loss_report == LossReport::Intervals;
        if bar.is_some() || intervals {
            opts.report_bar = Some(ReportBar {
                loss: bar.unwrap_or(ReportBar::NONE),
                intervals,
            });
        }
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            acker: self.acker.map(|a| a.addr),
            acker_report: self.acker.map(|a| Operating {
                loss: a.reported,
                ..a.op
            }),
            window: Some(self.window.window()),
            rate: None,
            tokens: self.metrics_tokens(),
            stats: self.stats.clone(),
        }
    }
}
