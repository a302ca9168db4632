//! pgmcc's knobs: what each variant of the controller does, and the recommended values
//! (`docs/pgmcc.md`).

use serde::Serialize;

use crate::cc::throughput::{SwitchBias, ThroughputModel};
use crate::time::Duration;

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

/// Linux TCP's lower bound on its retransmission timeout (`TCP_RTO_MIN`): the recommended
/// stall timeout's.
const LINUX_RTO_MIN: Duration = Duration::from_millis(200);

/// When the sender gives up waiting for ACKs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TimeoutPolicy {
    /// A fixed stall timeout (OpenPGM's 3 s; the paper gives no value).
    Fixed(Duration),
    /// An RFC 6298 estimator on the acker's ACK RTTs (`SRTT + 4 RTTVAR`, backed off on
    /// stalls in a row); after an acker switch `fixed` applies until the new acker's first
    /// RTT sample (the draft, §2.7: "restarted from the beginning" on ACKER changes).
    Adaptive {
        /// Lower bound of the RTO (RFC 6298: 1 s), or of its variance term
        /// ([`RtoFloor::Variance`]).
        min: Duration,
        /// What `min` bounds.
        floor: RtoFloor,
        /// Upper bound of the RTO.
        max: Duration,
        /// Timeout used before any sample of the current acker exists.
        fixed: Duration,
        /// Which ACKs restart the timer.
        restart: RtoRestart,
    },
}

/// What the lower bound of an adaptive stall timeout bounds ([`TimeoutPolicy::Adaptive`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RtoFloor {
    /// The timeout: `max(min, SRTT + 4 RTTVAR)` (RFC 6298 §2.4).
    Total,
    /// The variance term: `SRTT + max(min, 4 RTTVAR)`, as Linux bounds TCP's RTO
    /// (`tcp_rtt_estimator`). With an RTT sample from every ACK, RTTVAR decays to almost
    /// nothing on a steady path and a floor on the total leaves the timeout a millisecond
    /// above SRTT on paths longer than the floor; Linux keeps it at least `min` above.
    Variance,
}

/// Which ACKs restart an adaptive stall timer ([`TimeoutPolicy::Adaptive`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RtoRestart {
    /// The fairness benchmark's rule: only an ACK whose bitmap shows no hole.
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
    /// How the acker's ACKs declare packets lost and what the source does when they stop
    /// (both presets: the paper's [`LossDetection::DupAcks`]; see [`LossDetection::Rack`]
    /// for why ours is not the recommended default).
    pub loss_detection: LossDetection,
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
    /// Reports despite suppression (ours; paper: false, recommended: true): SPMs and NCFs carry
    /// a report bar (OPT_REPORT_BAR), the acker's loss rate over `c²`; a receiver whose loss is
    /// above it lets no NCF or peer NAK suppress its NAK and NAKs selectively, so that its
    /// report reaches the election (`docs/pgmcc.md`, "Reports despite suppression").
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
    /// their NAKs, bounds the window at TCP's for that loss ([`silent`](crate::cc::silent)).
    pub cap_for_silent: bool,
    /// Check the acker's loss reports against its own ACKs (ours; paper: false, recommended:
    /// true; [`report_check`](crate::cc::report_check)): once its reports claim far more loss
    /// than its ACKs show, its loss counts as what they show in every later election, and the
    /// window goes back to what it was when it became acker, so a false loss rate cannot buy
    /// the role and clock the source past the slowest receiver. Applies to
    /// [`LossReport::Filter`] only (`docs/pgmcc.md`, difference 17).
    pub check_reports: bool,
    /// How repairs (RDATA and parity) meet the window (ours; [`Repairs::Outside`] in both
    /// presets; the other two need [`Accounting::Pipe`]; `docs/pgmcc.md`, difference 19).
    pub repairs: Repairs,
}

impl Default for PgmccConfig {
    fn default() -> PgmccConfig {
        PgmccConfig {
            ssthresh: 6,
            slow_start: SlowStart::Fixed,
            dupack_threshold: 3,
            loss_detection: LossDetection::DupAcks,
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
            repairs: Repairs::Outside,
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
    /// Ours, TCP's pipe rule (RFC 6675) over the acker's reports: a data packet may leave while
    /// `packets in flight + 1 <= W`; a packet is in flight until the acker it named
    /// acknowledges it or declares it lost (`dupack_threshold` later packets acknowledged).
    /// After a switch, packets that named the former acker stay in flight until it settles them
    /// or its retransmission timeout passes. The window rules are the paper's (`docs/pgmcc.md`,
    /// difference 8).
    Pipe,
}

/// How packets the acker did not acknowledge are declared lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum LossDetection {
    /// The paper's §3.4: once `dupack_threshold` later packets are acknowledged (TCP's
    /// fast retransmit rule). In a window of two or three packets a second loss before three
    /// later ACKs fills the window with unsettled packets, and only the stall timeout
    /// (W = 1) starts it again.
    #[default]
    DupAcks,
    /// Ours, as Linux's TCP since 4.18 (RACK-TLP, RFC 8985): also lost once a later packet
    /// is acknowledged and one round trip (the newest acknowledged packet's) plus a
    /// reordering window has passed since it was sent; the window is a quarter of the least
    /// round trip, none in the round trip after a loss reaction. And when the window is
    /// full and no ACK has come for two smoothed RTTs (plus 200 ms with one packet in
    /// flight, never later than the stall timeout), one probe packet leaves beyond the
    /// window, so that its ACK shows what was lost: a loss reaction (W / 2) instead of a
    /// stall (W = 1), as TCP beside it gets. Not the recommended default: where the fair
    /// window is below two packets it keeps two in flight where TCP times out, and the
    /// repairs for its 30-45% loss leave outside the window, so its share rises above
    /// twice TCP's (`docs/pgmcc.md`, difference 20).
    Rack,
}

/// How repairs (RDATA and parity) meet the window ([`PgmccConfig::repairs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Repairs {
    /// The paper's §3.8: repairs leave as NAKs ask for them, within the source's repair
    /// budget, and the window does not count them.
    #[default]
    Outside,
    /// Ours: a repair leaves at once but counts as a packet in flight for one smoothed
    /// acker RTT, the time a TCP retransmission holds the window until its ACK; the data
    /// after a burst of repairs waits for room.
    InWindow,
    /// Ours: a repair of a packet the acker's ACKs declared lost (RDATA, or parity for its
    /// transmission group) waits for room in the window and counts as in flight for one
    /// smoothed acker RTT, as a TCP retransmission waits for room in cwnd and holds it until
    /// its ACK: the acker's data and repairs together keep to one window per round trip,
    /// and cannot leave in a burst larger than the room. Data keeps the ACK clock: a repair
    /// needs data in flight or data sent last. Repairs only other receivers need leave as
    /// with [`Repairs::Outside`].
    Wait,
    /// Ours, experimental: as [`Repairs::Wait`], and a waiting repair sent as RDATA names
    /// the acker in OPT_PGMCC_DATA, which an acker that lacked the packet answers with an
    /// ACK (as OpenPGM's receivers do). The repair then holds its room until an ACK of the
    /// acker echoes a timestamp at least its own: its own ACK, or that of a packet sent
    /// after it. A TCP retransmission holds cwnd until it is acknowledged in the same way;
    /// the one-RTT hold of [`Repairs::Wait`] frees the room whether the repair arrived or
    /// not. Parity repairs, which no receiver ACKs, are released by the ACK of the data
    /// sent after them. The stall timeout frees them all.
    Acked,
}

/// How the window's slow-start threshold is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum SlowStart {
    /// The paper's §3.4: exponential opening up to a small fixed threshold
    /// ([`PgmccConfig::ssthresh`], 6 packets), at start and after every stall; the paper
    /// leaves an adaptive threshold to future work.
    #[default]
    Fixed,
    /// Ours, TCP's (RFC 5681 §3.1): no threshold until the first loss reaction, then the halved
    /// window; after a stall, half the window the stall found (at least 2). With the fixed 6, a
    /// session that starts beside a TCP flow opens linearly while TCP slow-starts to its share
    /// (`docs/pgmcc.md`, "Slow start").
    Adaptive,
}

/// The loss estimate receivers report, on which the acker is elected (§3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum LossReport {
    /// The paper's §3.2.2: a low-pass filter over the per-packet loss signal with a memory of
    /// about 120 packets. A non-acker reports only on a NAK, just after a loss made its filter
    /// jump, so its reports read high, while the acker's, on every ACK, swing widely: the acker
    /// churns among the receivers near the slowest (`docs/pgmcc.md`, "Acker election with many
    /// receivers").
    #[default]
    Filter,
    /// Ours: the source asks receivers (OPT_REPORT_BAR's INTERVALS flag) for TFRC's average
    /// loss interval rate (RFC 5348 §5.4) over their latest eight loss intervals, which reads
    /// the same at a NAK as at an ACK and spreads less; receivers that do not know the flag, or
    /// heard no group RTT, keep the filter. Not the default: after a long loss-free period it
    /// sees new congestion late (`docs/pgmcc.md`, "Acker election with many receivers").
    Intervals,
}

/// How the election compares a candidate's report with the acker's (§3.5: a report
/// replaces the acker when `T(candidate) < c T(acker)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Election {
    /// The paper's and the draft's (§2.3): the acker's latest report, on every ACK, against the
    /// candidate's, on the NAK for its latest loss; a report of zero loss is never the slowest,
    /// so the first receiver to answer the election request keeps the role until someone
    /// reports a loss. With [`LossReport::Filter`] the acker's reading reaches 0 a few hundred
    /// packets after its last loss, and any receiver that NAKs then wins (`docs/pgmcc.md`,
    /// "Acker election with many receivers").
    #[default]
    Paper,
    /// Ours, like compared with like: the acker's loss is that of its latest report that read
    /// higher than the one before (taken just after its latest loss, as a candidate's is), and
    /// two reports of zero loss compare by RTT (`T ∝ 1/RTT`), so the first election moves to a
    /// distant receiver as soon as it answers (`docs/pgmcc.md`, difference 15).
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
    /// Ours, TCP's fast recovery (RFC 5681 §3.2, RFC 6675): after a halving W stays put until
    /// an ACK reports a packet sent after the reaction, and a halving leaves at least 2
    /// packets. With `Grow`, pgmcc gains window over a TCP flow that shares its losses
    /// (`docs/pgmcc.md`, difference 11).
    Hold,
}

impl PgmccConfig {
    /// Our recommended controller: the paper's with [`Accounting::Pipe`],
    /// [`Recovery::Hold`], the report bar, [`SlowStart::Adaptive`],
    /// [`Election::LikeWithLike`], the window bound for silent receivers, the check of the
    /// acker's reports, RTTs compared in milliseconds ([`RttUnit::Millis`]) and the draft's
    /// stall timeout ([`PgmccConfig::with_draft_timeout`]) bounded below as Linux bounds
    /// TCP's retransmission timeout (SRTT plus at least 200 ms, [`RtoFloor::Variance`], not
    /// RFC 6298's 1 s on the total: the TCP it shares links with; docs/pgmcc.md, "Windows
    /// of a few packets").
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
        .with_linux_timeout()
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

    /// The adaptive stall timeout's lower bound set to `min` (RFC 6298: 1 s; Linux's TCP
    /// and the recommended preset: 200 ms). `None` when the stall timeout is fixed.
    pub fn with_stall_min(mut self, min: Duration) -> Option<PgmccConfig> {
        match &mut self.timeout {
            TimeoutPolicy::Adaptive { min: m, .. } => {
                *m = min;
                Some(self)
            }
            TimeoutPolicy::Fixed(_) => None,
        }
    }

    /// The draft's stall timeout (§2.7): TCP's RTO, RFC 6298's bounds, 3 s before the
    /// acker's first sample, restarted by every ACK of new data.
    pub fn with_draft_timeout(mut self) -> PgmccConfig {
        self.timeout = Self::rfc6298(RtoRestart::NewData);
        self
    }

    /// The draft's stall timeout bounded as Linux bounds TCP's RTO: SRTT plus at least
    /// 200 ms ([`RtoFloor::Variance`]); the recommended preset's.
    pub fn with_linux_timeout(mut self) -> PgmccConfig {
        self.timeout = Self::rfc6298(RtoRestart::NewData);
        if let TimeoutPolicy::Adaptive { min, floor, .. } = &mut self.timeout {
            *min = LINUX_RTO_MIN;
            *floor = RtoFloor::Variance;
        }
        self
    }

    fn rfc6298(restart: RtoRestart) -> TimeoutPolicy {
        TimeoutPolicy::Adaptive {
            min: Duration::from_secs(1),
            floor: RtoFloor::Total,
            max: Duration::from_secs(60),
            fixed: STALL_TIMEOUT,
            restart,
        }
    }
}
