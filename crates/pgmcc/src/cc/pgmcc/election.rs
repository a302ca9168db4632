//! The election (pgmcc paper §3.5): receivers' reports compared by the TCP throughput they
//! imply, and the move to a new acker, which is never a congestion signal.

use super::*;

impl Pgmcc {
    pub(super) fn switch_to(&mut self, now: Instant, addr: IpAddr, op: Operating) {
        let from = self.acker.map(|a| a.addr);
        // After an election request the winner answers for the packets that asked; after a
        // switch the new acker is named from the next packet on.
        let next = self.last_sent.map_or(0, |s| s.wrapping_add(1));
        let first = self.elect_since.take().unwrap_or(next);
        if let Some(prev) = from {
            if self.cfg.accounting == Accounting::Pipe {
                // The packets that named the previous acker stay in flight until it settles
                // them (or the new acker's reports show they will not be).
                let rto = self.rto.base(self.fixed_timeout());
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

    pub(super) fn on_report(&mut self, now: Instant, fb: &PgmccFeedback, sample: RttSample) {
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
    pub(super) fn on_operating_point(&mut self, now: Instant, rx: IpAddr, rtt: u32, loss: u16) {
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
