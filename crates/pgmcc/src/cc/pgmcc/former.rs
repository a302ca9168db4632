//! Former ackers (`Accounting::Pipe`): their ACKs settle the packets that named them, and
//! what they never settle leaves the count in flight at their retransmission timeout; and
//! receivers whose reports claimed more than their ACKs showed, discredited.

use super::*;

/// A receiver whose reports claimed more than its ACKs showed
/// ([`PgmccConfig::check_reports`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Discredited {
    pub(super) addr: IpAddr,
    /// The loss rate its ACKs showed, if its loss reports were discredited.
    pub(super) loss: Option<u16>,
    /// The round trip its ACKs showed (ms), if its RTT reports were: its reports count at
    /// most twice that from then on.
    pub(super) rtt_ms: Option<u32>,
}

/// ACK reports in a row whose echoed timestamps are older than the packet they acknowledge
/// by more than [`INFLATION_MS`] and a quarter of the round trip the ACKs show, after which
/// the acker's RTT reports are discredited. An honest receiver's echo is the acknowledged
/// packet's own stamp, older only when that packet arrived after a later one (reordering),
/// which a run of 16 ACKs never all show.
pub(super) const INFLATED_ACKS: u32 = 16;

/// See [`INFLATED_ACKS`].
pub(super) const INFLATION_MS: u32 = 10;

/// Discredited receivers remembered ([`Pgmcc::discredited`]).
pub(super) const DISCREDITED: usize = 16;

/// Acker losses remembered ([`Pgmcc::acker_lost`]).
pub(super) const ACKER_LOSSES: usize = 512;

/// A former acker ([`Accounting::Pipe`]).
#[derive(Debug, Clone)]
pub(super) struct Former {
    pub(super) addr: IpAddr,
    /// Its reports over the packets that named it.
    pub(super) tracker: AckTracker,
    /// When what it has not settled leaves the count of packets in flight: its
    /// retransmission timeout (RFC 6298: SRTT + 4 RTTVAR of its ACKs) after the switch, the
    /// time by which TCP too gives a packet up.
    pub(super) expires: Instant,
    /// Its unsettled packets no longer count in flight.
    pub(super) expired: bool,
}

/// Former ackers remembered for token credit.
pub(super) const FORMER_ACKERS: usize = 8;

impl Pgmcc {
    /// The loss rate a discredited receiver's ACKs showed, if its loss reports were
    /// discredited: its reports count at most that.
    pub(super) fn discredited_loss(&self, addr: IpAddr) -> Option<u16> {
        self.discredited
            .iter()
            .find(|d| d.addr == addr)
            .and_then(|d| d.loss)
    }

    /// An ACK from a former acker ([`Accounting::Pipe`]): it settles packets that named it,
    /// and a loss it declares is a loss like any other. Returns false if `from` is none.
    pub(super) fn on_former_ack(
        &mut self,
        from: IpAddr,
        rx_max: u32,
        bitmap: u32,
        lead: u32,
    ) -> bool {
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

    /// The entry of `addr` among the discredited receivers, made if it has none (the oldest
    /// forgotten beyond [`DISCREDITED`]).
    pub(super) fn remember(&mut self, addr: IpAddr) -> &mut Discredited {
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
    pub(super) fn discredit(&mut self, now: Instant, addr: IpAddr, shown: u16) {
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
    pub(super) fn expire_former(&mut self, now: Instant) {
        for p in self.previous.iter_mut() {
            if !p.expired && now >= p.expires {
                p.expired = true;
            }
        }
    }

    /// The next instant a former acker's packets leave the count in flight.
    pub(super) fn next_expiry(&self) -> Option<Instant> {
        self.previous
            .iter()
            .filter(|p| !p.expired)
            .map(|p| p.expires)
            .min()
    }
}
