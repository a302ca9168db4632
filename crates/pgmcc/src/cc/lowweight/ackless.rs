//! pgmcc without ACKs (`pgmcc-ackless`, `docs/lowweight.md`): pgmcc's window and tokens
//! driven by the worst receiver's quick NAKs, with an implicit ACK one RTT after each packet.

use super::*;

/// Packets [`AcklessPgmcc`] tracks for implicit acknowledgement; beyond this the oldest
/// count as acknowledged at once.
const MAX_IN_FLIGHT: usize = 1 << 16;

/// Knobs of [`AcklessPgmcc`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AcklessConfig {
    /// Fixed slow-start threshold in packets (pgmcc §3.4: 6).
    pub ssthresh: u32,
    /// RTT assumed before the worst receiver's first report. Default 500 ms.
    pub initial_rtt: Duration,
    /// Worst-receiver selection; the switch bias defaults to pgmcc's `c = 0.75` here.
    pub worst: WorstConfig,
}

impl Default for AcklessConfig {
    fn default() -> AcklessConfig {
        AcklessConfig {
            ssthresh: 6,
            initial_rtt: Duration::from_millis(500),
            worst: WorstConfig {
                switch_bias: SwitchBias::PAPER,
                ..WorstConfig::default()
            },
        }
    }
}

/// pgmcc without ACKs: the window and tokens of pgmcc (§3.4) driven by the worst receiver's
/// quick NAKs, with an implicit ACK one RTT after each packet (`docs/lowweight.md`).
#[derive(Debug)]
pub struct AcklessPgmcc {
    /// What the source's transmit window keeps repairable (`set_source_limits`).
    limits: SourceLimits,
    cfg: AcklessConfig,
    common: Common,
    window: Window,
    /// Data packets not yet implicitly acknowledged: (sent at, sqn, NAKed by the worst
    /// receiver), oldest first, so in sequence order: a NAK finds its packet by binary search
    /// and marks it (a hostile worst receiver cannot make a NAK cost more than a search).
    flight: VecDeque<(Instant, u32, bool)>,
    /// Of those, how many are marked NAKed.
    nacked: usize,
    /// Repairs not yet implicitly acknowledged: (sent at, sqn), oldest first.
    repairs: VecDeque<(Instant, u32)>,
    /// Per sqn: repairs in `repairs` not NAKed since, and repairs NAKed since (a NAK for a
    /// repaired packet means its newest repair was lost too). Both bounded by `repairs`.
    repair_live: HashMap<u32, u32>,
    repair_nacked: HashMap<u32, u32>,
    /// Total of `repair_nacked`.
    nacked_repairs: usize,
}

impl AcklessPgmcc {
    /// A controller starting at `now` with `W = T = 1`.
    pub fn new(cfg: AcklessConfig, _now: Instant) -> AcklessPgmcc {
        AcklessPgmcc {
            limits: SourceLimits::NONE,
            window: Window::new(cfg.ssthresh),
            common: Common::new(cfg.worst),
            flight: VecDeque::new(),
            nacked: 0,
            repairs: VecDeque::new(),
            repair_live: HashMap::new(),
            repair_nacked: HashMap::new(),
            nacked_repairs: 0,
            cfg,
        }
    }

    fn rtt(&self) -> Duration {
        self.common.worst.srtt().map_or(self.cfg.initial_rtt, |s| {
            Duration::from_secs_f64(s.clamp(0.001, 600.0))
        })
    }

    /// How long after sending a packet counts as acknowledged: one RTT plus a quarter, the
    /// time the worst receiver's quick NAK needs to arrive first if the packet was lost
    /// (it NAKs when the next packet reveals the gap).
    fn ack_delay(&self) -> Duration {
        self.rtt() * 5 / 4
    }

    /// Keeps the tokens at least at `W - in flight` (pgmcc's `realign_tokens`, always on
    /// here): lost packets and repairs spend tokens that no implicit ACK returns, and with no
    /// stall timer to restart it the window would otherwise starve for good.
    fn realign(&mut self) {
        let in_flight = u32::try_from(self.in_flight()).unwrap_or(u32::MAX);
        self.window.realign_tokens(in_flight);
    }

    /// Packets (data and repairs) sent, not NAKed by the worst receiver and not yet
    /// implicitly acknowledged.
    pub fn in_flight(&self) -> usize {
        self.flight.len() - self.nacked + self.repairs.len() - self.nacked_repairs
    }

    /// Takes one from `map[s]` if there is one.
    fn take(map: &mut HashMap<u32, u32>, s: u32) -> bool {
        match map.get_mut(&s) {
            Some(c) if *c > 1 => {
                *c -= 1;
                true
            }
            Some(_) => {
                map.remove(&s);
                true
            }
            None => false,
        }
    }

    /// Acknowledges, implicitly, every packet sent at least [`Self::ack_delay`] ago; those
    /// the worst receiver NAKed return nothing.
    fn advance(&mut self, now: Instant) {
        let delay = self.ack_delay();
        let mut n = 0u32;
        while let Some(&(at, _, nacked)) = self.flight.front() {
            if at + delay > now && self.flight.len() <= MAX_IN_FLIGHT {
                break;
            }
            self.flight.pop_front();
            if nacked {
                self.nacked -= 1;
            } else {
                n += 1;
            }
        }
        while let Some(&(at, s)) = self.repairs.front() {
            if at + delay > now && self.repairs.len() <= MAX_IN_FLIGHT {
                break;
            }
            self.repairs.pop_front();
            if Self::take(&mut self.repair_nacked, s) {
                self.nacked_repairs -= 1;
            } else {
                Self::take(&mut self.repair_live, s);
                n += 1;
            }
        }
        if n > 0 {
            let had = self.window.can_send();
            self.window.on_ack(n);
            self.realign();
            if !had && self.window.can_send() {
                self.common.push_event(CcEvent::TokensAvailable {
                    tokens: self.window.tokens(),
                });
            }
        }
    }
}

impl CongestionControl for AcklessPgmcc {
    fn can_send(&self) -> bool {
        self.window.can_send()
    }

    fn set_source_limits(&mut self, limits: SourceLimits) {
        self.limits = limits;
        self.window.set_max(limits.max_window(Some(self.rtt())));
    }

    fn on_data_sent(&mut self, now: Instant, sqn: u32, opts: &mut Options<'_>) {
        self.advance(now);
        self.window.on_transmit();
        self.flight.push_back((now, sqn, false));
        self.common.last_sent = Some(sqn);
        opts.pgmcc_data = Some(self.common.worst.data(now));
        let rate = self.window.window() / self.rtt().as_secs_f64().max(0.001);
        opts.lowweight = Some(self.common.worst.option(rate));
    }

    fn on_repair_sent(&mut self, now: Instant, sqn: u32, _: Repaired) {
        // As TCP's retransmissions, repairs take a token (they are not held back for one)
        // and return it an ACK delay later.
        self.advance(now);
        self.window.on_transmit();
        self.repairs.push_back((now, sqn));
        *self.repair_live.entry(sqn).or_insert(0) += 1;
    }

    fn on_ack(&mut self, _: Instant, _: &Ack<'_>) {
        self.common.on_ack();
    }

    fn on_nak(&mut self, now: Instant, n: &Nak<'_>) {
        self.advance(now);
        let event = self.common.on_nak(now, n);
        self.window
            .set_max(self.limits.max_window(Some(self.rtt())));
        let sqns = n.sqns;
        let fb = n.options.pgmcc_feedback;
        if fb.is_some_and(|f| Some(f.rx) == self.common.worst.addr()) {
            // What the worst receiver lost returns no token: mark it in the implicit ACK
            // queue if it is still there (a real ACK would never have come).
            for &s in sqns {
                // A repaired packet NAKed again: its repair was lost.
                if Self::take(&mut self.repair_live, s) {
                    *self.repair_nacked.entry(s).or_insert(0) += 1;
                    self.nacked_repairs += 1;
                    continue;
                }
                let i = self.flight.partition_point(|&(_, x, _)| sqn::lt(x, s));
                if let Some(e) = self.flight.get_mut(i).filter(|e| e.1 == s && !e.2) {
                    e.2 = true;
                    self.nacked += 1;
                }
            }
            self.realign();
        }
        let (Some(lost), Some(lead)) = (event, self.common.last_sent) else {
            return;
        };
        let in_flight = u32::try_from(self.in_flight()).unwrap_or(u32::MAX);
        if self.window.on_loss(lost, in_flight, lead) {
            self.common.push_event(CcEvent::Congestion {
                window: self.window.window(),
            });
        }
        self.realign();
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let first = match (self.flight.front(), self.repairs.front()) {
            (Some(&(a, _, _)), Some(&(b, _))) => Some(a.min(b)),
            (Some(&(a, _, _)), None) => Some(a),
            (None, b) => b.map(|&(t, _)| t),
        };
        let ack = first.map(|at| at + self.ack_delay());
        match (ack, self.common.worst.expiry_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        self.advance(now);
        self.common.worst.expire(now);
    }

    fn poll_event(&mut self) -> Option<CcEvent> {
        self.common.events.pop()
    }

    fn metrics(&self) -> Metrics {
        self.common
            .metrics(Some(self.window.window()), None, self.window.tokens())
    }
}
