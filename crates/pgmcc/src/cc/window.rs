//! The window-based controller between sender and acker (pgmcc paper §3.4).
//!
//! Two variables, in 16.16 fixed point: the window `W` (how fast the window opens; an
//! estimate of packets in flight) and the tokens `T` (one is spent per data packet sent):
//!
//! ```text
//! restart (start, stall):   W = 1, T = 1
//! transmit:                 T = T - 1
//! ACK, W < ssthresh:        W = W + 1,   T = T + 2          (exponential opening)
//! ACK, otherwise:           W = W + 1/W, T = T + 1 + 1/W    (linear increase)
//!                           (with hold_in_recovery: no growth for ACKs up to the packet
//!                           that was newest at the last reaction, as in TCP's recovery)
//! loss:                     W = min(W, in flight); W = W / 2; the next W/2 ACKs add no
//!                           tokens; no further reaction until the packets in flight at the
//!                           loss have been sent past (one RTT)
//! ```
//!
//! The slow-start threshold is fixed (6 packets in the paper), or, with
//! [`Window::set_adaptive_ssthresh`], TCP's: unbounded until the first loss, then the
//! halved window.

use crate::sqn;

/// One in 16.16 fixed point.
const ONE: u64 = 1 << 16;

/// The window/token state.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    w: u64,
    t: i64,
    ssthresh: u64,
    /// ACKs still to be ignored for token generation after a loss.
    ignore: u32,
    /// Losses at or before this sequence number get no further reaction.
    recover: Option<u32>,
    /// W does not grow while ACKs report no packet beyond `recover` (TCP's fast recovery).
    hold_in_recovery: bool,
    /// TCP's slow-start threshold: unbounded until the first loss, then the halved window.
    adaptive_ssthresh: bool,
    /// W never grows beyond this ([`Window::set_max`]).
    max: u64,
}

impl Window {
    /// A restarted window with the given fixed slow-start threshold (packets).
    pub(crate) fn new(ssthresh: u32) -> Window {
        Window {
            w: ONE,
            t: ONE as i64,
            ssthresh: u64::from(ssthresh.max(1)) * ONE,
            ignore: 0,
            recover: None,
            hold_in_recovery: false,
            adaptive_ssthresh: false,
            max: u64::MAX / 4,
        }
    }

    /// With `hold` set, W does not grow on ACKs whose newest packet was already sent at the
    /// last loss reaction: the packets in flight at a loss are TCP's recovery period, during
    /// which RFC 5681 (§3.2 step 6) and RFC 6675 keep cwnd at ssthresh; and, as TCP's
    /// ssthresh, a halving leaves at least 2 packets. The paper's §3.4 grows W on every ACK
    /// and halves down to 1.
    pub(crate) fn set_hold_in_recovery(&mut self, hold: bool) {
        self.hold_in_recovery = hold;
    }

    /// TCP's slow-start threshold ([`super::pgmcc::SlowStart::Adaptive`]): none until the
    /// first loss reaction, then the halved window; a restart sets it to half the window it
    /// found (at least 2 packets).
    pub(crate) fn set_adaptive_ssthresh(&mut self) {
        self.adaptive_ssthresh = true;
        self.ssthresh = u64::MAX / 4;
    }

    /// Holds W at most `max` packets from now on, as TCP's receive window holds its
    /// congestion window: at the limit an ACK returns the one token its packet spent and W
    /// stays. The source sets it from its transmit window (`docs/pgmcc.md`, "Window limit").
    pub(crate) fn set_max(&mut self, max: u32) {
        self.max = u64::from(max.max(1)) * ONE;
        self.cap(max);
    }

    /// Grants one token if fewer than one is left (the controller's rate floor); the window
    /// is untouched.
    pub(crate) fn grant_one(&mut self) {
        self.t = self.t.max(ONE as i64);
    }

    /// Whether the packet `next`, the oldest one not yet settled, was already sent at the
    /// last loss reaction: the round trip after a halving, TCP's recovery.
    pub(crate) fn in_recovery(&self, next: u32) -> bool {
        self.recover.is_some_and(|r| sqn::le(next, r))
    }

    /// Session (re)start: `W = T = 1`.
    pub(crate) fn restart(&mut self) {
        if self.adaptive_ssthresh {
            self.ssthresh = (self.w / 2).max(2 * ONE);
        }
        self.w = ONE;
        self.t = ONE as i64;
        self.ignore = 0;
        self.recover = None;
    }

    /// True when a token is available for one data packet.
    pub(crate) fn can_send(&self) -> bool {
        self.t >= ONE as i64
    }

    /// Whole tokens available.
    pub(crate) fn tokens(&self) -> u32 {
        (self.t.max(0) as u64 >> 16).min(u64::from(u32::MAX)) as u32
    }

    /// The window in packets.
    pub(crate) fn window(&self) -> f64 {
        self.w as f64 / ONE as f64
    }

    /// A data packet was sent.
    pub(crate) fn on_transmit(&mut self) {
        self.t -= ONE as i64;
    }

    /// `n` packets were acknowledged for the first time.
    pub(crate) fn on_ack(&mut self, n: u32) {
        self.grow(n, false);
    }

    /// `n` packets were acknowledged for the first time by an ACK whose newest packet is
    /// `newest` (the acker's RX_MAX): as [`Window::on_ack`], but W holds during recovery if
    /// [`Window::set_hold_in_recovery`] asked for it.
    pub(crate) fn on_ack_through(&mut self, n: u32, newest: u32) {
        let hold = self.hold_in_recovery && self.recover.is_some_and(|r| sqn::le(newest, r));
        self.grow(n, hold);
    }

    fn grow(&mut self, n: u32, hold: bool) {
        for _ in 0..n {
            let inc = if hold {
                0
            } else if self.w < self.ssthresh {
                ONE
            } else {
                // 1/W in 16.16: 2^32 / W.
                (ONE * ONE / self.w.max(1)).max(1)
            };
            let inc = inc.min(self.max.saturating_sub(self.w));
            self.w += inc;
            if self.ignore > 0 {
                self.ignore -= 1;
            } else {
                self.t += (ONE + inc) as i64;
            }
        }
    }

    /// Holds W at most `max` packets, and the tokens at most W.
    pub(crate) fn cap(&mut self, max: u32) {
        self.cap_fraction(f64::from(max));
    }

    /// Holds W at most `max` packets (fractions count, at least one packet), and the tokens
    /// at most W.
    pub(crate) fn cap_fraction(&mut self, max: f64) {
        let max = (max.max(1.0) * ONE as f64).min(u64::MAX as f64) as u64;
        self.w = self.w.min(max);
        self.t = self.t.min(self.w as i64);
    }

    /// Keeps the tokens at least at the room left in the window, `W - in_flight`. A lost
    /// packet spent a token that no ACK will return, and after a halving the ignored ACKs may
    /// be the last ones in flight: without this the pipe can empty with `T < 1` and only a
    /// stall timeout restarts it. (Paper §3.4 realigns W to the packets in flight for the same
    /// reason; footnote 2 leaves the W/2 strategy open.)
    pub(crate) fn realign_tokens(&mut self, in_flight: u32) {
        let room = self.w as i64 - i64::from(in_flight) * ONE as i64;
        if room > self.t {
            self.t = room;
        }
    }

    /// A packet `lost` was found missing. `in_flight` is the number of packets sent beyond
    /// the acker's RX_MAX and `last_sent` the newest sequence number sent. Returns true when
    /// the window reacted (false inside the one-RTT grace after an earlier reaction).
    pub(crate) fn on_loss(&mut self, lost: u32, in_flight: u32, last_sent: u32) -> bool {
        if self.recover.is_some_and(|r| sqn::le(lost, r)) {
            return false;
        }
        let realigned = self.w.min(u64::from(in_flight.max(1)) * ONE);
        // TCP's recovery also keeps at least two packets (RFC 5681 eq. 4: ssthresh =
        // max(FlightSize / 2, 2 SMSS)): with W = 1 and the lost packet still counted in
        // flight, nothing could leave to produce the ACKs that declare it lost.
        let floor = if self.hold_in_recovery { 2 * ONE } else { ONE };
        self.w = (realigned / 2).max(floor);
        if self.adaptive_ssthresh {
            self.ssthresh = self.w;
        }
        // "Ignore the next W/2 ACKs", W being the window before halving: that many of the
        // packets in flight are not replaced, so in flight shrinks to the new window.
        self.ignore = (self.w >> 16) as u32;
        self.recover = Some(last_sent);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fractional_cap_keeps_its_fraction_and_never_goes_below_one_packet() {
        let mut w = Window::new(6);
        w.set_max(64);
        for _ in 0..10 {
            w.on_ack(1);
        }
        w.cap_fraction(2.9);
        assert!((w.window() - 2.9).abs() < 1e-4, "{}", w.window());
        assert!(w.tokens() <= 2);
        w.cap_fraction(0.2);
        assert_eq!(w.window(), 1.0);
        w.cap_fraction(f64::NAN);
        assert_eq!(w.window(), 1.0);
    }

    #[test]
    fn starts_with_one_token() {
        let mut w = Window::new(6);
        assert!(w.can_send());
        w.on_transmit();
        assert!(!w.can_send());
        w.on_ack(1);
        assert_eq!(w.window(), 2.0);
        assert_eq!(w.tokens(), 2, "exponential opening: +2 tokens per ACK");
    }

    #[test]
    fn adaptive_threshold_opens_exponentially_until_the_first_loss() {
        let mut w = Window::new(6);
        w.set_adaptive_ssthresh();
        w.on_ack(99);
        assert_eq!(w.window(), 100.0, "no threshold before a loss");
        assert!(w.on_loss(500, 100, 600));
        assert_eq!(w.window(), 50.0);
        // Now linear from the halved window.
        w.on_ack(50);
        assert!((w.window() - 51.0).abs() < 0.1, "{}", w.window());
        // A stall: W = 1, and exponential again up to half the window it found (25.5).
        w.restart();
        w.on_ack(25);
        assert_eq!(w.window(), 26.0);
        w.on_ack(26);
        assert!((w.window() - 27.0).abs() < 0.1, "{}", w.window());
    }

    #[test]
    fn the_limit_stops_growth_and_keeps_one_token_per_ack() {
        let mut w = Window::new(6);
        w.set_adaptive_ssthresh();
        w.set_max(32);
        // Slow start: 1 -> 32 after 31 ACKs, then no further growth.
        for _ in 0..200 {
            w.on_transmit();
            w.on_ack(1);
        }
        assert_eq!(w.window(), 32.0);
        // At the limit each ACK returns exactly the token its packet spent: the packets in
        // flight stay at what they were.
        let before = w.tokens();
        for _ in 0..100 {
            w.on_transmit();
            w.on_ack(1);
        }
        assert_eq!(w.tokens(), before);
        // A limit below the window cuts it at once, and the tokens with it.
        w.set_max(10);
        assert_eq!(w.window(), 10.0);
        assert!(w.tokens() <= 10);
    }

    #[test]
    fn exponential_up_to_ssthresh_then_linear() {
        let mut w = Window::new(6);
        w.on_ack(5);
        assert_eq!(w.window(), 6.0);
        // Linear: +1/W per ACK, about +1 per window's worth of ACKs.
        w.on_ack(6);
        assert!((w.window() - 7.0).abs() < 0.1, "{}", w.window());
    }

    #[test]
    fn hold_in_recovery_freezes_w_until_an_ack_passes_the_recovery_point() {
        for hold in [false, true] {
            let mut w = Window::new(6);
            w.set_hold_in_recovery(hold);
            w.on_ack_through(200, 5);
            assert!(w.window() > 20.0);
            // 20 in flight, newest sent 120: W = 10.
            assert!(w.on_loss(100, 20, 120));
            assert_eq!(w.window(), 10.0);
            // The packets in flight at the reaction are acknowledged (up to 120).
            w.on_ack_through(20, 120);
            if hold {
                assert_eq!(w.window(), 10.0, "TCP's recovery: no growth");
            } else {
                assert!((11.5..12.0).contains(&w.window()), "paper: +1/W each");
            }
            // The first packet sent after the reaction: growth resumes.
            let before = w.window();
            w.on_ack_through(1, 121);
            assert!((w.window() - before - 1.0 / before).abs() < 1e-3);
        }
    }

    #[test]
    fn loss_halves_the_realigned_window_once_per_rtt() {
        let mut w = Window::new(6);
        w.on_ack(5);
        for _ in 0..30 {
            w.on_ack(1);
        }
        let before = w.window();
        assert!(before > 9.0);
        // 8 packets actually in flight: realign to 8, then halve to 4.
        assert!(w.on_loss(100, 8, 120));
        assert_eq!(w.window(), 4.0);
        // Another loss before sqn 120 is part of the same event.
        assert!(!w.on_loss(110, 8, 125));
        assert_eq!(w.window(), 4.0);
        // A loss after the recovery point reacts again.
        assert!(w.on_loss(121, 8, 140));
        assert_eq!(w.window(), 2.0);
    }

    #[test]
    fn acks_after_a_loss_are_ignored_for_tokens() {
        let mut w = Window::new(6);
        w.on_ack(5);
        for _ in 0..20 {
            w.on_ack(1);
        }
        while w.can_send() {
            w.on_transmit();
        }
        w.on_loss(50, 20, 60);
        let win = w.window() as u32;
        let t0 = w.tokens();
        w.on_ack(win);
        assert_eq!(w.tokens(), t0, "the next W ACKs regenerate no tokens");
        w.on_ack(1);
        assert!(w.tokens() > t0);
    }

    #[test]
    fn tokens_are_realigned_to_the_room_left_in_the_window() {
        let mut w = Window::new(6);
        w.on_ack(3); // W = 4
        while w.can_send() {
            w.on_transmit();
        }
        // One packet lost, halving; the ACKs of the other three are all ignored.
        w.on_loss(10, 4, 10);
        w.on_ack(2);
        assert!(!w.can_send(), "tokens leaked: nothing to send with");
        // Nothing is in flight any more: the window has room for W packets.
        w.realign_tokens(0);
        assert_eq!(w.tokens(), w.window() as u32);
        assert!(w.can_send());
    }

    #[test]
    fn grows_about_one_packet_per_window_of_acks() {
        let mut w = Window::new(6);
        w.on_ack(5);
        let mut rtts = 0;
        while w.window() < 20.0 {
            let n = w.window() as u32;
            w.on_ack(n);
            rtts += 1;
        }
        // Each round of floor(W) ACKs adds floor(W)/W, a little under one packet.
        assert!(
            (14..=16).contains(&rtts),
            "{rtts} windows to grow from 6 to 20"
        );
    }
}
