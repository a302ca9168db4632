//! The boundary between the PGM source and its congestion controller, in the style of
//! quinn's `Controller`: the [`Sender`](crate::Sender) reports what happens (data and
//! repairs sent, validated ACKs and NAKs with their options and RTT sample, timeouts), the
//! controller grants permission to send and says what it is doing through [`Metrics`].
//!
//! What the `Sender` does so that controllers need not: it drops ACKs of other sessions and
//! ACKs acknowledging data never sent (`SenderStats::acks_rejected`), measures each report's
//! RTT once ([`RttSample`]), and drains [`CongestionControl::poll_event`] after every call
//! into its own bounded event queue.

use std::net::IpAddr;

use pgm_wire::{AckRepr, Options};
use serde::Serialize;

use super::events::CcEvent;
use super::rtt::RttSample;
use super::throughput::Operating;
use crate::time::{Duration, Instant};

/// Counters of a controller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CcStats {
    /// ACKs from the acker processed.
    pub acks: u64,
    /// ACKs from receivers that are not the acker (counted, otherwise ignored).
    pub acks_ignored: u64,
    /// Receiver reports seen (NAKs and ACKs carrying OPT_PGMCC_FEEDBACK).
    pub reports: u64,
    /// Acker switches (not counting the first election).
    pub acker_switches: u64,
    /// Window halvings.
    pub loss_events: u64,
    /// Stall timeouts.
    pub stalls: u64,
    /// Data packets sent asking for an election.
    pub election_requests: u64,
    /// Tokens granted by the rate floor ([`super::pgmcc::PgmccConfig::min_interval`]).
    pub floor_tokens: u64,
    /// Packets declared lost by time rather than by later ACKs
    /// ([`super::pgmcc::LossDetection::Rack`]).
    pub time_losses: u64,
    /// Tail probes sent ([`super::pgmcc::LossDetection::Rack`]).
    pub probes: u64,
    /// Times the window was cut to the bound a receiver without reports sets
    /// ([`super::pgmcc::PgmccConfig::cap_for_silent`]).
    pub silent_caps: u64,
    /// Ackers whose reports claimed far more loss, or a longer round trip, than their ACKs
    /// showed ([`super::pgmcc::PgmccConfig::check_reports`]).
    pub reports_discredited: u64,
    /// ACK reports whose RTT was longer than the ACK itself showed, taken as the ACK shows
    /// ([`super::pgmcc::PgmccConfig::check_reports`]; an honest acker's can be too, when the
    /// packet it acknowledges arrived after a later one).
    pub report_rtts_bounded: u64,
}

/// What the source can keep repairable (`docs/pgmcc.md`, "Window limit"): it keeps
/// `txw_sqns` packets, and none is evicted less than `nak_horizon` after it was sent
/// (`SenderConfig::hold_for_naks`). So it can send at most `txw_sqns` packets per horizon,
/// and a window-based controller holds its window to `txw_sqns · RTT / nak_horizon`, and in
/// any case to half of `txw_sqns`: a larger window would only fill the transmit window and
/// wait. Never below four packets, the smallest window that still learns of a loss from
/// later ACKs, and the RTT taken as at least the timestamps' 1 ms resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceLimits {
    /// TXW_SQNS, or the byte bound in full-size packets if that is smaller.
    pub txw_sqns: u32,
    /// How long a packet stays repairable at least; zero when the source does not hold
    /// packets (no group RTT measured yet, or the hold is off).
    pub nak_horizon: Duration,
}

impl SourceLimits {
    /// No limit: what a controller assumes until the `Sender` tells it.
    pub const NONE: SourceLimits = SourceLimits {
        txw_sqns: u32::MAX,
        nak_horizon: Duration::ZERO,
    };

    /// The largest window, in packets, for a round-trip time `rtt` (`None`: not yet
    /// measured).
    pub fn max_window(&self, rtt: Option<Duration>) -> u32 {
        let half = (self.txw_sqns / 2).max(1);
        match rtt {
            Some(rtt) if !self.nak_horizon.is_zero() => {
                let rtt = rtt.max(RTT_RESOLUTION);
                let per_rtt =
                    f64::from(self.txw_sqns) * rtt.as_secs_f64() / self.nak_horizon.as_secs_f64();
                (per_rtt.floor() as u32).max(MIN_WINDOW_LIMIT).min(half)
            }
            _ => half,
        }
    }
}

/// The smallest window [`SourceLimits::max_window`] sets (unless half the transmit window
/// is smaller): a lost packet and the three after it, whose ACKs declare it lost (pgmcc's
/// `dupack_threshold`, TCP's three duplicate ACKs). Below that a window holding a lost
/// packet hears of the loss from no later ACK and waits for the stall timeout: on a LAN
/// with `--rate-max 8Mbit` and every 40th packet lost the limit read 1 packet and each loss
/// cost a 3 s stall (5 MB in 14-38 s instead of 5.2 s). The transmit window's hold still
/// stops the data where this lets more out than the source keeps.
pub(super) const MIN_WINDOW_LIMIT: u32 = 4;

/// The shortest round trip [`SourceLimits::max_window`] counts: pgmcc's timestamps
/// (OPT_PGMCC_DATA's TSTAMP) count whole milliseconds, so a round trip under 1 ms reads 0,
/// and the smoothed RTT of a LAN drifts towards it.
pub(super) const RTT_RESOLUTION: Duration = Duration::from_millis(1);

/// A rate-based controller's sending rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    /// Data packets per second.
    pub pps: f64,
    /// The round-trip time the rate is computed over, in seconds.
    pub rtt_secs: f64,
}

/// What a controller is doing, for applications, traces and plots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// The receiver whose feedback paces the session: pgmcc's acker, TFMCC's CLR,
    /// Pseudofed's first representative, the low-weight controllers' worst receiver.
    pub acker: Option<IpAddr>,
    /// That receiver's latest operating point (RTT, loss), for applications (§3.9).
    pub acker_report: Option<Operating>,
    /// A window-based controller's window, in packets.
    pub window: Option<f64>,
    /// A rate-based controller's rate.
    pub rate: Option<Rate>,
    /// A window-based controller's smoothed round-trip time to `acker`, in seconds, from
    /// its ACKs (a rate-based controller's is `rate`'s).
    pub srtt_secs: Option<f64>,
    /// Whole data packets the controller lets go now (window tokens, or a token bucket's).
    pub tokens: u32,
    /// Counters.
    pub stats: CcStats,
}

impl Metrics {
    /// Packets per round trip: the window, or for a rate-based controller rate × RTT (the
    /// window a TCP flow at that rate would have), so that both plot on one axis.
    pub fn packets_per_rtt(&self) -> Option<f64> {
        self.window.or(self.rate.map(|r| r.pps * r.rtt_secs))
    }

    /// The round-trip time to `acker` the controller works with, in seconds: the window's
    /// smoothed RTT, or the one a rate is computed over.
    pub fn rtt_secs(&self) -> Option<f64> {
        self.srtt_secs.or(self.rate.map(|r| r.rtt_secs))
    }
}

/// An ACK of the controller's session, validated by the `Sender`: its RX_MAX is not ahead of
/// the last data packet sent.
#[derive(Debug, Clone, Copy)]
pub struct Ack<'a> {
    /// The address it came from.
    pub from: IpAddr,
    /// RX_MAX and the receive bitmap.
    pub ack: AckRepr,
    /// Every option it carried (OPT_PGMCC_FEEDBACK, a controller's own).
    pub options: &'a Options<'a>,
    /// The RTT of its report, if it carries OPT_PGMCC_FEEDBACK.
    pub rtt: Option<RttSample>,
    /// Its sender proved it received the packets it acknowledges (OPT_ACK_PROOF), or the
    /// source asks for no proof. False for a receiver that cannot prove (OpenPGM's): pgmcc
    /// caps its window then.
    pub proven: bool,
}

/// A NAK of the controller's session.
#[derive(Debug, Clone, Copy)]
pub struct Nak<'a> {
    /// The address it came from.
    pub from: IpAddr,
    /// The sequence numbers it names (empty for parity NAKs).
    pub sqns: &'a [u32],
    /// The packets it says were lost: `sqns`, or for a parity NAK as many of its
    /// transmission group's first packets as it says are missing (which ones it does not
    /// say). What loss estimates read.
    pub lost: &'a [u32],
    /// The last packet the NAK covers: the newest it names, or for a parity NAK the last of
    /// its newest group (the receiver NAKs a group once the group is over). The packets
    /// sent after it are what the receiver had in flight, plus its NAK back-off.
    pub covers: Option<u32>,
    /// Every option it carried (OPT_PGMCC_FEEDBACK, ...).
    pub options: &'a Options<'a>,
    /// The RTT of its report, if it carries OPT_PGMCC_FEEDBACK.
    pub rtt: Option<RttSample>,
}

/// The sequence numbers a repair repairs: one for RDATA, its transmission group for a
/// parity packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repaired {
    /// The first.
    pub first: u32,
    /// How many (1, or the transmission group's size).
    pub count: u32,
}

impl Repaired {
    /// Whether `s` is one of them.
    pub fn contains(&self, s: u32) -> bool {
        crate::sqn::le(self.first, s) && crate::sqn::distance(self.first, s) < self.count
    }
}

/// A congestion controller for the PGM source.
pub trait CongestionControl: std::fmt::Debug + Send {
    /// May one data packet (ODATA) be sent now? Repairs ask [`CongestionControl::can_send_repair`].
    fn can_send(&self) -> bool;
    /// Data packet `sqn` is going out: the controller sets its OPT_PGMCC_DATA, and its own
    /// options if it has any, in `opts`.
    fn on_data_sent(&mut self, now: Instant, sqn: u32, opts: &mut Options<'_>);
    /// Repair `sqn` (RDATA, or parity with that sequence number) went out, repairing
    /// `repaired`. Controllers that count repairs against their budget (the low-weight ones)
    /// or their window do it here. Default: nothing.
    fn on_repair_sent(&mut self, now: Instant, sqn: u32, repaired: Repaired) {
        let _ = (now, sqn, repaired);
    }
    /// RDATA `sqn`, repairing `repaired`, is about to go out: a controller whose acker
    /// should acknowledge it sets OPT_PGMCC_DATA in `opts`. Called before
    /// [`CongestionControl::on_repair_sent`]. Default: nothing (repairs carry no
    /// OPT_PGMCC_DATA; pgmcc's acker ACKs data only, paper §3.3).
    fn repair_options(
        &mut self,
        now: Instant,
        sqn: u32,
        repaired: Repaired,
        opts: &mut Options<'_>,
    ) {
        let _ = (now, sqn, repaired, opts);
    }
    /// May a repair of `repaired` be sent now? Default true: repairs leave as NAKs ask
    /// (§3.8), within the source's repair budget.
    fn can_send_repair(&self, repaired: Repaired) -> bool {
        let _ = repaired;
        true
    }
    /// What the source's transmit window can keep repairable ([`SourceLimits`]); the
    /// `Sender` sets it right after building the controller and again whenever it changes.
    /// Default: ignored (a rate-based controller has no window; the `Sender` itself holds
    /// its data back when the transmit window is full).
    fn set_source_limits(&mut self, limits: SourceLimits) {
        let _ = limits;
    }
    /// Receiver `from`'s round trip as the controller believes it. A controller that found
    /// the receiver's reports inflated (pgmcc's `check_reports`) bounds the sample as it
    /// bounds those reports, so that the group RTT the source advertises, and the NAK
    /// horizon its transmit window holds packets for, are not a liar's either. Default: the
    /// sample as reported.
    fn credible_rtt(&self, now: Instant, from: IpAddr, sample: RttSample) -> RttSample {
        let _ = (now, from);
        sample
    }
    /// Options the controller adds to the source's NCFs and SPMs (pgmcc's OPT_REPORT_BAR).
    /// Default: none.
    fn control_options(&self, opts: &mut Options<'_>) {
        let _ = opts;
    }
    /// A validated ACK of this session arrived.
    fn on_ack(&mut self, now: Instant, ack: &Ack<'_>);
    /// A NAK of this session arrived.
    fn on_nak(&mut self, now: Instant, nak: &Nak<'_>);
    /// When `on_timeout` next has work.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Runs expired timers.
    fn on_timeout(&mut self, now: Instant);
    /// The next event the last call produced; the `Sender` drains them after every call.
    fn poll_event(&mut self) -> Option<CcEvent>;
    /// What the controller is doing.
    fn metrics(&self) -> Metrics;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_limit_is_what_the_transmit_window_keeps_per_round_trip() {
        let ms = Duration::from_millis;
        let l = SourceLimits {
            txw_sqns: 4096,
            nak_horizon: ms(2800),
        };
        // 4096 packets per 2.8 s: 585 per 400 ms round trip, 146 per 100 ms.
        assert_eq!(l.max_window(Some(ms(400))), 585);
        assert_eq!(l.max_window(Some(ms(100))), 146);
        // Never more than half the window, never less than four packets; a round trip
        // under the timestamps' millisecond counts as one: 4096 per 2.8 s is 1.46 per ms.
        assert_eq!(l.max_window(Some(ms(10_000))), 2048);
        assert_eq!(l.max_window(Some(Duration::ZERO)), MIN_WINDOW_LIMIT);
        assert_eq!(l.max_window(Some(ms(2))), MIN_WINDOW_LIMIT);
        let lan = SourceLimits {
            txw_sqns: 4096,
            nak_horizon: ms(20),
        };
        assert_eq!(lan.max_window(Some(Duration::from_micros(50))), 204);
        assert_eq!(lan.max_window(Some(ms(1))), 204);
        // Half a small transmit window still bounds it.
        let tiny = SourceLimits {
            txw_sqns: 6,
            nak_horizon: ms(2800),
        };
        assert_eq!(tiny.max_window(Some(ms(1))), 3);
        // No round trip yet, or no hold: half the window.
        assert_eq!(l.max_window(None), 2048);
        let no_hold = SourceLimits {
            nak_horizon: Duration::ZERO,
            ..l
        };
        assert_eq!(no_hold.max_window(Some(ms(400))), 2048);
        assert_eq!(SourceLimits::NONE.max_window(Some(ms(400))), u32::MAX / 2);
    }
}
