//! What every receiver measures for its report, whichever controller runs: the loss estimate
//! (pgmcc's filter, §3.2.2, or TFRC's loss event rate for the TFMCC baseline and for a pgmcc
//! source that asks for it), the echo of the latest OPT_PGMCC_DATA timestamp (draft §2.5.1)
//! and the receive bitmap an ACK carries (§3.3). Both loss estimators run from the first
//! packet, so a source's request switches the report without a cold start.

use std::net::IpAddr;

use pgm_wire::{AckRepr, PgmccFeedback};

use crate::cc::loss_filter::LossFilter;
use crate::cc::tfmcc::LossEvents;
use crate::sqn;
use crate::time::{Duration, Instant};

/// One receiver's measurements for one session.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    /// This receiver's NLA: the `rx` of its reports.
    nla: IpAddr,
    loss: LossFilter,
    /// TFRC loss events, losses within `merge` of an event's start merged into it.
    events: LossEvents,
    merge: Duration,
    /// Reports carry the loss event rate of `events` instead of `loss`.
    report_events: bool,
    /// The latest OPT_PGMCC_DATA timestamp and when it arrived.
    tstamp: Option<(u32, Instant)>,
    recv: RecvBitmap,
}

impl Report {
    /// Nothing measured yet; `events` switches the TFRC estimator on from the start.
    pub(crate) fn new(nla: IpAddr, loss_filter_w: u32, events: Option<Duration>) -> Report {
        Report {
            nla,
            loss: LossFilter::new(loss_filter_w),
            events: LossEvents::new(),
            merge: events.unwrap_or(Duration::ZERO),
            report_events: events.is_some(),
            tstamp: None,
            recv: RecvBitmap::default(),
        }
    }

    /// Data packet `s` arrived for the first time (ODATA or RDATA).
    pub(crate) fn on_packet(&mut self, s: u32) {
        self.recv.mark(s);
    }

    /// `n` sequence numbers were found missing at `now` (a gap before an ODATA or an SPM
    /// lead): 1 each in the loss signal (§3.2.2), one loss event for TFRC.
    pub(crate) fn on_gap(&mut self, now: Instant, n: u32) {
        self.loss.update_lost(n);
        self.events.on_packets(n);
        if n > 0 {
            self.events.on_loss(now, self.merge);
        }
    }

    /// The ODATA that extended the lead arrived: 0 in the loss signal.
    pub(crate) fn on_lead(&mut self) {
        self.loss.update(false);
        self.events.on_packets(1);
    }

    /// The source's OPT_PGMCC_DATA timestamp `ts` arrived at `now`.
    pub(crate) fn stamp(&mut self, ts: u32, now: Instant) {
        self.tstamp = Some((ts, now));
    }

    /// True once a timestamp can be echoed: a report can be built.
    pub(crate) fn can_report(&self) -> bool {
        self.tstamp.is_some()
    }

    /// Reports TFRC's loss event rate, merging losses within `merge`, from now on.
    pub(crate) fn use_loss_events(&mut self, merge: Duration) {
        self.merge = merge;
        self.report_events = true;
    }

    /// Reports the pgmcc loss filter from now on.
    pub(crate) fn use_filter(&mut self) {
        self.report_events = false;
    }

    /// TFRC's loss event rate, when it is the one reported.
    pub(crate) fn loss_event_rate(&self) -> Option<f64> {
        self.report_events.then(|| self.events.loss_event_rate())
    }

    /// The OPT_PGMCC_FEEDBACK this receiver sends now, once the source ran pgmcc.
    pub(crate) fn feedback(&self, now: Instant) -> Option<PgmccFeedback> {
        let (ts, at) = self.tstamp?;
        // Echo plus hold time (draft §2.5.1), in milliseconds.
        let hold = now.saturating_duration_since(at).as_millis() as u32;
        Some(PgmccFeedback {
            tstamp: ts.wrapping_add(hold),
            loss_rate: match self.loss_event_rate() {
                // p in the draft's 16-bit scale (65535 = 100%).
                Some(p) => (p.clamp(0.0, 1.0) * 65535.0).round() as u16,
                None => self.loss.as_u16(),
            },
            rx: self.nla,
        })
    }

    /// The ACK an acker would send now: RX_MAX, the receive bitmap and the report.
    pub(crate) fn ack(&self, now: Instant) -> Option<(AckRepr, PgmccFeedback)> {
        let rx_max = self.recv.max?;
        let report = self.feedback(now)?;
        Some((
            AckRepr {
                rx_max,
                bitmap: self.recv.bits,
            },
            report,
        ))
    }
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
