//! Checking the acker's loss reports against its own ACKs (ours, issue 21: "loss reports
//! are not proven").
//!
//! The election believes whatever loss rate a receiver reports, so a receiver on a fast path
//! that claims heavy loss is elected acker, and its ACKs, which prove receipt of every packet
//! it really got, then clock the source at the fast path's pace, past the slowest receiver's.
//! But once a receiver is the acker the source sees its losses first hand: the acker ACKs
//! every packet with a bitmap of the latest 32, so a packet missing from the first ACK whose
//! RX_MAX passed it is exactly a packet the acker found missing when the later one arrived,
//! the event that feeds `1` into its loss filter (§3.2.2). For the filter
//! `p_{i+1} = W p_i + (1 - W) x_i` summing the recurrence over a run of packets gives the
//! identity
//!
//! ```text
//! sum of p_i = sum of x_i + (p_first - p_last) / (1 - W)
//! ```
//!
//! so an honest acker's reports, summed over the packets the source judged, can exceed the
//! losses its ACKs show by at most `p_first / (1 - W)`: what its filter still carried from
//! before the count began, which the source reads from the acker's first ACK (and starts
//! judging after it). The source sums the reported rate over every packet it judges
//! (`claimed`), counts the packets the ACKs showed missing (`shown`), and discredits the
//! acker once `claimed - p_first / (1 - W)` exceeds twice `shown` plus [`SLACK`] losses. The
//! factor 2 and the slack absorb what the identity leaves out: a burst's report is read after
//! the burst's last loss (it claims up to twice its losses' share), ACKs that are lost or
//! coalesced attribute several packets to one report, reports are rounded to 16 bits. A
//! receiver that claims loss `p` while showing none is found after about
//! `(p / (1 - W) + SLACK) / p` packets: 250 at 10%, 930 at 1%.
//!
//! `W` is the draft's suggested `1 - 500/65536` (§2.6), whose memory is longer than ours
//! (`1 - 536/65536`): a receiver with a shorter memory owes less, and the check is only more
//! lenient with it. A receiver whose filter remembers longer than the draft's could be
//! discredited while honest.

/// The draft's suggested filter gain, `1 - W = 500/65536` (§2.6).
const DRAFT_GAIN: f64 = 500.0 / 65536.0;

/// Losses by which claims may exceed twice what the ACKs show before the acker is
/// discredited.
pub(crate) const SLACK: f64 = 8.0;

/// The reported rate's scale: the draft's 16-bit loss rate, `65535` = 100%.
const SCALE: f64 = 65535.0;

/// What one acker's ACKs showed since it became acker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReportCheck {
    /// Highest sequence number judged, or the one before the first packet that named the
    /// acker, until its first ACK.
    judged: u32,
    /// The first ACK has not come yet.
    waiting: bool,
    /// Packets judged.
    packets: u32,
    /// Of them, missing from the first ACK past them.
    shown: u32,
    /// Reported loss rates summed over the packets judged (fractions).
    claimed: f64,
    /// Losses the acker's filter may still owe from before the first packet judged.
    owed: f64,
}

/// A verdict on an acker's reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Verdict {
    /// Consistent with its ACKs so far.
    Credible,
    /// They claim far more loss than its ACKs show; `shown` is the loss rate its ACKs did
    /// show, in the draft's 16-bit scale.
    Discredited {
        /// The loss rate its ACKs showed, `65535` = 100%.
        shown: u16,
    },
}

impl ReportCheck {
    /// Checks an acker named from packet `first` on. Judging starts after its first ACK
    /// (for `first` or later): that ACK's report already holds every loss the acker found
    /// until then, some of them among the packets before `first` that its filter took in
    /// only when a later one arrived, so what it reads is what the filter may still owe.
    pub(crate) fn new(first: u32) -> ReportCheck {
        ReportCheck {
            judged: first.wrapping_sub(1),
            waiting: true,
            packets: 0,
            shown: 0,
            claimed: 0.0,
            owed: 0.0,
        }
    }

    /// An ACK from the acker: `rx_max`, its bitmap (bit `k` = packet `rx_max - k` received)
    /// and the loss rate it reports. Packets between the last judged and `rx_max` are judged
    /// now; those the bitmap does not cover (more than 31 behind) count as missing, as the
    /// acker found them when `rx_max` arrived or as no ACK it sent reached the source.
    pub(crate) fn on_ack(&mut self, rx_max: u32, bitmap: u32, report: u16) -> Verdict {
        let ahead = rx_max.wrapping_sub(self.judged);
        if ahead == 0 || ahead > 1 << 31 {
            return self.verdict();
        }
        if self.waiting {
            self.waiting = false;
            self.judged = rx_max;
            self.owed = f64::from(report) / SCALE / DRAFT_GAIN;
            return Verdict::Credible;
        }
        // Packets the bitmap no longer covers were not acknowledged by any ACK that did:
        // the source's tracker declares them lost too (and the window reacts).
        let missing = (0..ahead.min(32))
            .filter(|&k| k != 0 && bitmap & (1 << k) == 0)
            .count() as u32
            + ahead.saturating_sub(32);
        self.judged = rx_max;
        self.packets = self.packets.saturating_add(ahead);
        self.shown = self.shown.saturating_add(missing);
        self.claimed += f64::from(ahead) * f64::from(report) / SCALE;
        self.verdict()
    }

    fn verdict(&self) -> Verdict {
        if self.claimed - self.owed > 2.0 * f64::from(self.shown) + SLACK {
            let rate = f64::from(self.shown) / f64::from(self.packets.max(1));
            Verdict::Discredited {
                shown: (rate * SCALE).round().min(SCALE) as u16,
            }
        } else {
            Verdict::Credible
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::loss_filter::LossFilter;

    /// An honest acker: its filter fed with `lost(i)`, an ACK per packet received.
    fn honest(first_report: u16, n: u32, lost: impl Fn(u32) -> bool) -> ReportCheck {
        let mut f = LossFilter::default();
        // Bring the filter to the starting report.
        while f.as_u16() < first_report {
            f.update(true);
        }
        let mut c = ReportCheck::new(0);
        let mut bits: u32 = 0;
        let mut max: Option<u32> = None;
        for s in 0..n {
            if lost(s) {
                continue;
            }
            // Packets since the last one received were found missing now.
            let gap = max.map_or(s, |m| s - m - 1);
            f.update_lost(gap);
            f.update(false);
            bits = match max {
                Some(m) => bits.checked_shl(s - m).unwrap_or(0) | 1,
                None => 1,
            };
            max = Some(s);
            assert_eq!(c.on_ack(s, bits, f.as_u16()), Verdict::Credible, "at {s}");
        }
        c
    }

    #[test]
    fn an_honest_acker_is_never_discredited() {
        // Random 1% and 5% loss, bursts of 20, and a report already high at the start (an
        // acker elected just after a burst).
        let mut x: u64 = 7;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 10_000) as u32
        };
        let one: Vec<bool> = (0..200_000).map(|_| rand() < 100).collect();
        honest(0, 200_000, |s| one[s as usize]);
        let five: Vec<bool> = (0..200_000).map(|_| rand() < 500).collect();
        honest(0, 200_000, |s| five[s as usize]);
        honest(0, 100_000, |s| s % 1000 < 20);
        // Bursts longer than an ACK's bitmap (a slow-start overshoot).
        honest(0, 100_000, |s| s % 2000 < 100);
        let c = honest(20_000, 50_000, |_| false);
        assert_eq!(c.shown, 0);
    }

    #[test]
    fn a_receiver_claiming_loss_it_does_not_show_is_found() {
        for (claim, within) in [(6554u16, 260), (655, 950)] {
            let mut c = ReportCheck::new(100);
            let mut at = None;
            for s in 100..100_000 {
                if let Verdict::Discredited { shown } = c.on_ack(s, !0, claim) {
                    assert_eq!(shown, 0);
                    at = Some(s - 100);
                    break;
                }
            }
            let at = at.expect("discredited");
            assert!(at <= within, "claim {claim}: found after {at} packets");
        }
    }

    #[test]
    fn packets_the_bitmap_no_longer_covers_count_as_missing() {
        let mut c = ReportCheck::new(0);
        c.on_ack(0, 1, 0);
        // The next ACK comes 100 packets later, its bitmap full: the 68 it does not cover
        // were never acknowledged.
        c.on_ack(100, !0, 0);
        assert_eq!((c.packets, c.shown), (100, 68));
        // An old or repeated ACK judges nothing.
        c.on_ack(50, 0, 0);
        c.on_ack(100, 0, 0);
        assert_eq!((c.packets, c.shown), (100, 68));
    }
}
