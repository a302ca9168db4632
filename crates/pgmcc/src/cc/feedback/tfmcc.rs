//! The TFMCC baseline's receiver side (`docs/tfmcc.md`, RFC 4654 §3.4-3.5 as we read them),
//! switched on by OPT_TFMCC_DATA on ODATA: the loss event estimator runs (merging losses over
//! R_max); at a new feedback round a receiver that is not the CLR and whose calculated rate
//! is below the sending rate sets a timer `T (1 + log_N u)`, u uniform in (0, 1]; the timer
//! is cancelled once the source echoes a rate at most ours (someone at least as slow already
//! reported). The CLR reports once per `clr_ivl`, not on every packet.

use pgm_wire::TfmccData;

use super::report::Report;
use super::FeedbackStats;
use crate::cc::tfmcc::tcp_rate;
use crate::rng::Rng;
use crate::time::{Duration, Instant};

/// Receivers assumed in the feedback timer's formula (RFC 4654's upper bound N).
const TFMCC_N: f64 = 10_000.0;

/// A receiver's part in the feedback rounds of one session.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rounds {
    /// The source's latest OPT_TFMCC_DATA.
    data: TfmccData,
    /// The round whose timer was set (or skipped).
    round: u16,
    /// When this receiver reports in the current round, unless suppressed.
    timer: Option<Instant>,
    /// When this receiver, as the CLR, last reported.
    clr_reported: Option<Instant>,
}

/// This receiver's calculated rate in packets per second, from its loss event rate and the
/// source's R_max (receivers do not measure their own RTT); `None` before a loss event.
fn rate(report: &Report, d: &TfmccData) -> Option<f64> {
    let p = report.loss_event_rate()?;
    (p > 0.0).then(|| tcp_rate(f64::from(d.r_max_ms.max(1)) / 1000.0, p))
}

impl Rounds {
    /// The state before the first round: `t` is the first OPT_TFMCC_DATA heard.
    pub(crate) fn new(t: TfmccData) -> Rounds {
        Rounds {
            data: t,
            round: t.round.wrapping_sub(1),
            timer: None,
            clr_reported: None,
        }
    }

    /// An ODATA carried `t`; `is_clr` when it names this receiver.
    pub(crate) fn on_data(
        &mut self,
        report: &mut Report,
        t: TfmccData,
        is_clr: bool,
        now: Instant,
        rng: &mut Rng,
        stats: &mut FeedbackStats,
    ) {
        report.use_loss_events(Duration::from_millis(u64::from(t.r_max_ms.max(1))));
        let x = rate(report, &t);
        self.data = t;
        let below_send =
            |x: f64| t.send_rate == TfmccData::NO_RATE || x * 1000.0 < f64::from(t.send_rate);
        if self.round != t.round {
            self.round = t.round;
            self.timer = None;
            if !is_clr && x.is_some_and(below_send) {
                let u = rng.unit().max(1e-9);
                let frac = (1.0 + u.ln() / TFMCC_N.ln()).max(0.0);
                let round = Duration::from_millis(u64::from(t.round_ms));
                self.timer = Some(now + Duration::from_secs_f64(round.as_secs_f64() * frac));
            }
        }
        if self.timer.is_some()
            && (is_clr || x.is_none_or(|x| f64::from(t.supp_rate) <= x * 1000.0))
        {
            self.timer = None;
            stats.tfmcc_reports_suppressed += 1;
        }
    }

    /// May the CLR report on this ODATA (carrying `t`, if any)? Once per `clr_ivl`.
    pub(crate) fn clr_due(&self, now: Instant, t: Option<TfmccData>) -> bool {
        match (t, self.clr_reported) {
            (Some(t), Some(last)) => now >= last + Duration::from_millis(u64::from(t.clr_ivl_ms)),
            _ => true,
        }
    }

    /// The CLR reported at `now`.
    pub(crate) fn clr_acked(&mut self, now: Instant) {
        self.clr_reported = Some(now);
    }

    /// When this receiver's round report is due.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.timer
    }

    /// True when the round report is due at `now` (it is then no longer pending).
    pub(crate) fn on_timeout(&mut self, now: Instant) -> bool {
        if self.timer.is_some_and(|d| d <= now) {
            self.timer = None;
            return true;
        }
        false
    }
}
