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

    /// Data packet `s` arrived for the first time (ODATA or RDATA), with the nonce the
    /// source gave it (OPT_ACK_PROOF) if any.
    pub(crate) fn on_packet(&mut self, s: u32, nonce: Option<u32>) {
        self.recv.mark(s, nonce);
    }

    /// The proof of receipt for `ack` (OPT_ACK_PROOF): the XOR of the nonces of RX_MAX and
    /// every packet its bitmap reports. `None` when the source gives no nonces, or one of
    /// them is no longer known.
    pub(crate) fn proof(&self, ack: &AckRepr) -> Option<u32> {
        if !self.recv.proof_seen {
            return None;
        }
        (0..32u32)
            .filter(|k| *k == 0 || ack.bitmap & (1 << k) != 0)
            .try_fold(0, |x, k| {
                let s = ack.rx_max.wrapping_sub(k);
                self.recv.nonce(s).map(|n| x ^ n)
            })
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
                // When the source asks for proof, only packets whose nonce we hold (not those
                // rebuilt from parity, which carry none) are reported received.
                bitmap: if self.recv.proof_seen {
                    self.recv.bits & self.recv.proven
                } else {
                    self.recv.bits
                },
            },
            report,
        ))
    }
}

/// Nonces kept for proofs of receipt, by sequence number modulo this: twice the bitmap's 32,
/// so that a slot is never reused for a packet the bitmap still covers.
const NONCES: usize = 64;

/// The receive status of the latest 32 data sequence numbers (bit 0 = the highest), as a
/// pgmcc ACK reports it, and the nonces of those that carried one (OPT_ACK_PROOF).
#[derive(Debug, Clone, Default)]
struct RecvBitmap {
    max: Option<u32>,
    bits: u32,
    /// Bits of the packets whose nonce is held.
    proven: u32,
    /// The source gives nonces: ACKs carry proofs.
    proof_seen: bool,
    /// (sequence number, nonce) by sequence number modulo [`NONCES`]; empty until a nonce.
    nonces: Vec<(u32, u32)>,
}

impl RecvBitmap {
    fn mark(&mut self, s: u32, nonce: Option<u32>) {
        let bit = match self.max {
            None => {
                self.max = Some(s);
                self.bits = 0;
                self.proven = 0;
                Some(0)
            }
            Some(m) if sqn::gt(s, m) => {
                let shift = sqn::distance(m, s);
                self.bits = if shift >= 32 { 0 } else { self.bits << shift };
                self.proven = if shift >= 32 { 0 } else { self.proven << shift };
                self.max = Some(s);
                Some(0)
            }
            Some(m) => Some(sqn::distance(s, m)).filter(|back| *back < 32),
        };
        let Some(bit) = bit else {
            return;
        };
        self.bits |= 1 << bit;
        if let Some(n) = nonce {
            if self.nonces.is_empty() {
                self.nonces = vec![(0, 0); NONCES];
                self.proof_seen = true;
            }
            if let Some(e) = self.nonces.get_mut(s as usize % NONCES) {
                *e = (s, n);
            }
            self.proven |= 1 << bit;
        }
    }

    /// The nonce of packet `s`, if held.
    fn nonce(&self, s: u32) -> Option<u32> {
        self.nonces
            .get(s as usize % NONCES)
            .filter(|(q, _)| *q == s)
            .map(|(_, n)| *n)
    }
}
