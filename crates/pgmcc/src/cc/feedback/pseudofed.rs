//! Pseudofed's receiver side (`docs/pseudofed.md`, DeLucia and Obraczka §2.2), switched on by
//! OPT_PSEUDOFED on ODATA: a representative reports every ODATA at once (a CI naming the
//! first lost sequence number after a loss, else a CC); a non-representative schedules a CI
//! after a loss, or a CC while the representative set is empty, at `wait + U(0,
//! suppression)` GRTTs, and cancels it when the sender's advertisement shows it moot
//! (sender-mediated suppression: PGM receivers do not hear each other's ACKs). Reports travel
//! on ACKs; NAKs carry no report under Pseudofed (they are for repairs only).

use std::net::IpAddr;

use pgm_wire::{AckRepr, PgmccFeedback, Pseudofed, PF_CI, PF_FULL, PF_HAVE_CI};

use super::report::Report;
use super::FeedbackStats;
use crate::rng::Rng;
use crate::sqn;
use crate::time::{Duration, Instant};

/// A receiver's Pseudofed state for one session.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Representative {
    /// The sender's latest advertisement.
    adv: Pseudofed,
    /// This receiver is a representative: it reports every ODATA at once.
    is_rep: bool,
    /// A non-representative's scheduled report: when, and the first lost sqn for a CI.
    pending: Option<(Instant, Option<u32>)>,
    /// No new non-representative report is scheduled before this (one GRTT after a report).
    quiet_until: Instant,
}

/// The OPT_PSEUDOFED a receiver sends: a CI naming the first lost sqn, or a CC.
fn report_option(lost: Option<u32>) -> Pseudofed {
    match lost {
        Some(s) => Pseudofed {
            flags: PF_CI,
            ci_sqn: s,
            ..Pseudofed::default()
        },
        None => Pseudofed::default(),
    }
}

impl Representative {
    /// The state when the first advertisement `adv` arrives at `now`.
    pub(crate) fn new(adv: Pseudofed, now: Instant) -> Representative {
        Representative {
            adv,
            is_rep: false,
            pending: None,
            quiet_until: now,
        }
    }

    fn grtt(&self) -> Duration {
        Duration::from_millis(u64::from(self.adv.grtt_ms.max(1)))
    }

    /// An ODATA carrying the sender's advertisement `adv` arrived; `lost_first` is the first
    /// sequence number of the gap it revealed. Returns a representative's immediate report.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_data(
        &mut self,
        report: &Report,
        adv: Pseudofed,
        nla: IpAddr,
        now: Instant,
        lost_first: Option<u32>,
        rng: &mut Rng,
        stats: &mut FeedbackStats,
    ) -> Option<(AckRepr, PgmccFeedback, Pseudofed)> {
        self.adv = adv;
        self.is_rep = adv.reps.contains(&nla);
        if self.is_rep {
            // Immediate, never suppressed; a pending CI's loss is folded into this report.
            let lost = lost_first.or(self.pending.and_then(|p| p.1));
            self.pending = None;
            let (ack, fb) = report.ack(now)?;
            return Some((ack, fb, report_option(lost)));
        }
        // Suppression: a CI is moot once the sender has heard a CI for a loss at or after
        // ours; a CC once there is any representative.
        let moot = match self.pending {
            Some((_, Some(first))) => adv.flags & PF_HAVE_CI != 0 && sqn::le(first, adv.ci_sqn),
            Some((_, None)) => !adv.reps.is_empty(),
            None => false,
        };
        if moot {
            self.pending = None;
            stats.pseudofed_suppressed += 1;
        }
        let grtt = self.grtt();
        let wait = grtt.mul_f64(f64::from(adv.wait_pct) / 100.0);
        let spread = grtt.mul_f64(f64::from(adv.supp_pct) / 100.0);
        match (lost_first, self.pending) {
            // A loss upgrades a pending CC to a CI (same deadline).
            (Some(s), Some((t, None))) => self.pending = Some((t, Some(s))),
            (Some(s), None) if now >= self.quiet_until => {
                self.pending = Some((now + wait + rng.duration_up_to(spread), Some(s)));
            }
            (None, None)
                if adv.reps.is_empty() && adv.flags & PF_FULL == 0 && now >= self.quiet_until =>
            {
                self.pending = Some((now + wait + rng.duration_up_to(spread), None));
            }
            _ => {}
        }
        None
    }

    /// When the scheduled report is due.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.pending.map(|p| p.0)
    }

    /// The scheduled report's option when it is due at `now` (it is then no longer pending,
    /// and no new one is scheduled for one GRTT).
    pub(crate) fn on_timeout(&mut self, now: Instant) -> Option<Pseudofed> {
        let (_, lost) = self.pending.filter(|p| p.0 <= now)?;
        self.pending = None;
        self.quiet_until = now + self.grtt();
        Some(report_option(lost))
    }
}
