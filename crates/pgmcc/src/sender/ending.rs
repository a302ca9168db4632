//! When a source's session is over: the linger after the data, the delivery reports it
//! waits for, and when it gives up (`docs/core.md`, "Ending a session").
//!
//! Every driver runs this: the socket runtime returns when [`Sender::end`](super::Sender::end)
//! says so, and the simulator's source stops answering at the same moment.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use tracing::debug;

use crate::time::{Duration, Instant};

/// Group RTTs a linger lasts at least: one NAK round of a receiver whose timers follow the
/// advertised group RTT (back-off up to 4, NCF wait 2, repair wait 2), and some.
pub const LINGER_GRTTS: u32 = 10;

/// When a source's session ends, and when it gives up. [`EndPolicy::default`] gives the
/// values documented per field.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndPolicy {
    /// After [`Sender::close`](super::Sender::close), once the last data has left, keep
    /// answering NAKs until none needed a repair for this long. Default 3 s; at least
    /// [`LINGER_GRTTS`] group RTTs once the source has measured one.
    pub linger: Duration,
    /// Upper bound on the linger, counted from when the last data left: a peer that keeps
    /// NAKing cannot hold the source open for ever. Default 60 s.
    pub max_linger: Duration,
    /// With a congestion controller (whose acker answers every packet), give up when no
    /// receiver has sent anything (ACK, NAK, SPMR) for this long while data is still to be
    /// sent: every receiver has left, or none takes part. Without a controller receivers
    /// are silent when nothing is lost, so this does not apply. Default 60 s; `None` never.
    pub feedback_timeout: Option<Duration>,
    /// Give up if the session is not over this long after the source started, linger
    /// included. Default none.
    pub max_duration: Option<Duration>,
    /// Delivery reports (OPT_OUTCOME) to wait for after the data went out: the linger goes
    /// on until they arrived, or for at most `expect_timeout`. Default none.
    pub expect: Option<Expect>,
    /// How long after the data went out to wait for the expected reports. Default 30 s.
    pub expect_timeout: Duration,
    /// Once the linger is over, how long to wait on for the delivery reports of receivers
    /// heard from (ACK or NAK) that have not sent one: a receiver reports once its output
    /// is verified and committed, which can outlast the linger. The wait starts with a
    /// burst of SPMs (with OPT_FIN), for receivers still waiting to learn the end. Default
    /// zero (receivers that never report, as OpenPGM's, or a simulation's, would only hold
    /// the source); `pgmcc send` sets it.
    pub report_wait: Duration,
}

impl Default for EndPolicy {
    fn default() -> EndPolicy {
        EndPolicy {
            linger: Duration::from_secs(3),
            max_linger: Duration::from_secs(60),
            feedback_timeout: Some(Duration::from_secs(60)),
            max_duration: None,
            expect: None,
            expect_timeout: Duration::from_secs(30),
            report_wait: Duration::ZERO,
        }
    }
}

/// Which receivers' delivery reports a source waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Reports from this many receivers (any addresses).
    Receivers(usize),
    /// Reports from each of these addresses.
    Hosts(Vec<IpAddr>),
}

impl Expect {
    /// Whether reports from `count` addresses, among them those `has` says, are all this
    /// expects.
    pub fn met(&self, count: usize, has: impl Fn(&IpAddr) -> bool) -> bool {
        match self {
            Expect::Receivers(n) => count >= *n,
            Expect::Hosts(h) => h.iter().all(has),
        }
    }
}

/// How a source's session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionEnd {
    /// Every byte left, the linger is over, and the expected reports arrived (or their
    /// wait ran out: the reports say who is missing).
    Finished,
    /// The source gave up before the session was over.
    Abandoned(AbandonReason),
}

/// Why a source gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbandonReason {
    /// No receiver sent anything for `after` while data was still to be sent;
    /// `heard_any`: whether one ever did.
    NoFeedback {
        /// The silence that ended it ([`EndPolicy::feedback_timeout`]).
        after: Duration,
        /// Some receiver answered earlier in the session.
        heard_any: bool,
    },
    /// The session was not over `after` the source started ([`EndPolicy::max_duration`]).
    MaxDuration {
        /// How long the source ran.
        after: Duration,
    },
}

impl fmt::Display for AbandonReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbandonReason::NoFeedback {
                after,
                heard_any: false,
            } => write!(f, "no receiver answered in {after:?}"),
            AbandonReason::NoFeedback {
                after,
                heard_any: true,
            } => write!(
                f,
                "no receiver has sent anything for {after:?}: every receiver has left, or the network to them failed"
            ),
            AbandonReason::MaxDuration { after } => {
                write!(f, "the session was not over after {after:?}")
            }
        }
    }
}

/// What the source knows when it asks whether the session is over.
pub(super) struct Now<'a> {
    pub now: Instant,
    /// Nothing queued: no new data, no repairs, no NCFs.
    pub idle: bool,
    /// The application closed and every byte it gave has left as ODATA.
    pub drained: bool,
    /// A congestion controller runs (receivers answer every packet).
    pub cc: bool,
    /// The group RTT measured, if any.
    pub grtt: Option<Duration>,
    /// Delivery reports so far, by address.
    pub reports: &'a BTreeMap<IpAddr, pgm_wire::Outcome>,
    /// Whether some receiver heard from has sent no delivery report: asked only once the
    /// linger is over and [`EndPolicy::report_wait`] is not zero (it scans the receivers).
    pub unreported: &'a dyn Fn() -> bool,
}

/// The source's ending state.
#[derive(Debug)]
pub(super) struct Ending {
    policy: EndPolicy,
    started: Instant,
    /// When the last data left after `close`.
    drained_at: Option<Instant>,
    /// When the last repair left (only repairs keep the source lingering: NAKs for data
    /// never sent, already repaired or out of the window say nothing about real receivers,
    /// and a hostile peer could send them for ever).
    last_repair: Instant,
    last_feedback: Instant,
    heard_any: bool,
    /// Expected reports are missing and their wait is not over.
    waiting: bool,
    /// The group RTT at the last update (it sets the linger).
    grtt: Option<Duration>,
    /// When the linger ended while receivers heard from had not reported: the wait for
    /// their reports ([`EndPolicy::report_wait`]) runs from here.
    lingered_at: Option<Instant>,
    end: Option<SessionEnd>,
}

impl Ending {
    pub(super) fn new(mut policy: EndPolicy, now: Instant) -> Ending {
        policy.max_linger = policy.max_linger.max(policy.linger);
        Ending {
            policy,
            started: now,
            drained_at: None,
            last_repair: now,
            last_feedback: now,
            heard_any: false,
            waiting: false,
            grtt: None,
            lingered_at: None,
            end: None,
        }
    }

    /// A receiver sent something the source took (ACK, NAK, SPMR): it is still there.
    pub(super) fn heard(&mut self, now: Instant) {
        self.last_feedback = now;
        self.heard_any = true;
    }

    /// A repair (RDATA or parity) left.
    pub(super) fn repaired(&mut self, now: Instant) {
        self.last_repair = now;
    }

    pub(super) fn end(&self) -> Option<&SessionEnd> {
        self.end.as_ref()
    }

    /// The linger is over and the source waits for delivery reports of receivers heard from
    /// ([`EndPolicy::report_wait`]).
    pub(super) fn awaiting_reports(&self) -> bool {
        self.lingered_at.is_some() && self.end.is_none()
    }

    /// When every byte the application gave had left, once it closed.
    pub(super) fn drained_at(&self) -> Option<Instant> {
        self.drained_at
    }

    /// The linger: at least [`LINGER_GRTTS`] group RTTs once one was measured (receivers
    /// pace their NAKs by it: a quiet spell shorter than one NAK round proves nothing).
    fn linger(&self) -> Duration {
        self.grtt.map_or(self.policy.linger, |g| {
            self.policy.linger.max(g * LINGER_GRTTS)
        })
    }

    /// Decides whether the session is over now; returns its end once it is.
    pub(super) fn update(&mut self, s: &Now<'_>) -> Option<&SessionEnd> {
        if self.end.is_none() {
            self.grtt = s.grtt;
            self.end = self.decide(s);
            if let Some(end) = &self.end {
                debug!(?end, "pgm source: session over");
            }
        }
        self.end.as_ref()
    }

    fn decide(&mut self, s: &Now<'_>) -> Option<SessionEnd> {
        if s.drained && self.drained_at.is_none() {
            self.drained_at = Some(s.now);
        }
        let ran = s.now.saturating_duration_since(self.started);
        if let Some(max) = self.policy.max_duration.filter(|m| ran >= *m) {
            return Some(SessionEnd::Abandoned(AbandonReason::MaxDuration {
                after: max,
            }));
        }
        let Some(drained) = self.drained_at else {
            // Liveness only while data is still to be sent: the linger has its own bound.
            let limit = self.policy.feedback_timeout.filter(|_| s.cc)?;
            let silent = s.now.saturating_duration_since(self.last_feedback) >= limit;
            return silent.then_some(SessionEnd::Abandoned(AbandonReason::NoFeedback {
                after: limit,
                heard_any: self.heard_any,
            }));
        };
        let since = self.last_repair.max(drained);
        let quiet = s.idle && s.now.saturating_duration_since(since) >= self.linger();
        let after = s.now.saturating_duration_since(drained);
        self.waiting = self.policy.expect.as_ref().is_some_and(|e| {
            !e.met(s.reports.len(), |a| s.reports.contains_key(a))
                && after < self.policy.expect_timeout
        });
        // Whatever happens, the linger ends `max_linger` after the data went out.
        let lingered = (quiet || after >= self.policy.max_linger) && !self.waiting;
        if !lingered && self.lingered_at.is_none() {
            return None;
        }
        if !self.policy.report_wait.is_zero() && (s.unreported)() {
            let since = *self.lingered_at.get_or_insert(s.now);
            if s.now.saturating_duration_since(since) < self.policy.report_wait {
                return None;
            }
        }
        Some(SessionEnd::Finished)
    }

    /// When [`Ending::update`] may next decide something no input causes (reports and
    /// repairs are inputs: the source updates after each). Ask only while idle: a linger
    /// can end only then.
    pub(super) fn deadline(&self, cc: bool) -> Option<Instant> {
        if self.end.is_some() {
            return None;
        }
        let mut at = self.policy.max_duration.map(|m| self.started + m);
        let mut earliest = |t: Instant| at = Some(at.map_or(t, |a| a.min(t)));
        match self.drained_at {
            None => {
                if let Some(limit) = self.policy.feedback_timeout.filter(|_| cc) {
                    earliest(self.last_feedback + limit);
                }
            }
            Some(drained) => match self.lingered_at {
                Some(since) => earliest(since + self.policy.report_wait),
                None => {
                    let quiet = self.last_repair.max(drained) + self.linger();
                    let mut end = quiet.min(drained + self.policy.max_linger);
                    if self.waiting {
                        end = end.max(drained + self.policy.expect_timeout);
                    }
                    earliest(end);
                }
            },
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now_at(t: Instant, reports: &BTreeMap<IpAddr, pgm_wire::Outcome>) -> Now<'_> {
        Now {
            now: t,
            idle: true,
            drained: true,
            cc: true,
            grtt: None,
            reports,
            unreported: &|| false,
        }
    }

    #[test]
    fn the_linger_restarts_with_each_repair_and_ends_at_max_linger() {
        let reports = BTreeMap::new();
        let t0 = Instant::ZERO;
        let mut e = Ending::new(EndPolicy::default(), t0);
        assert_eq!(e.update(&now_at(t0, &reports)), None);
        assert_eq!(e.deadline(true), Some(t0 + Duration::from_secs(3)));
        e.repaired(t0 + Duration::from_secs(2));
        assert_eq!(
            e.update(&now_at(t0 + Duration::from_secs(3), &reports)),
            None
        );
        assert_eq!(
            e.update(&now_at(t0 + Duration::from_secs(5), &reports)),
            Some(&SessionEnd::Finished)
        );
        // A repair every second never lets it go quiet: max_linger ends it.
        let mut e = Ending::new(EndPolicy::default(), t0);
        e.update(&now_at(t0, &reports));
        for s in 1..60 {
            e.repaired(t0 + Duration::from_secs(s));
            assert_eq!(
                e.update(&now_at(t0 + Duration::from_secs(s), &reports)),
                None
            );
        }
        assert_eq!(
            e.update(&now_at(t0 + Duration::from_secs(60), &reports)),
            Some(&SessionEnd::Finished)
        );
    }

    #[test]
    fn the_linger_is_at_least_ten_group_rtts() {
        let reports = BTreeMap::new();
        let t0 = Instant::ZERO;
        let mut e = Ending::new(EndPolicy::default(), t0);
        let grtt = Some(Duration::from_millis(500));
        let at = |t: Duration| Now {
            grtt,
            ..now_at(t0 + t, &reports)
        };
        assert_eq!(e.update(&at(Duration::ZERO)), None);
        assert_eq!(e.update(&at(Duration::from_secs(4))), None);
        assert_eq!(e.deadline(true), Some(t0 + Duration::from_secs(5)));
        assert_eq!(
            e.update(&at(Duration::from_secs(5))),
            Some(&SessionEnd::Finished)
        );
    }

    #[test]
    fn expected_reports_hold_the_linger_until_they_arrive_or_time_out() {
        let a: IpAddr = "10.0.0.2".parse().unwrap();
        let policy = EndPolicy {
            expect: Some(Expect::Hosts(vec![a])),
            ..EndPolicy::default()
        };
        let t0 = Instant::ZERO;
        let none = BTreeMap::new();
        let mut e = Ending::new(policy.clone(), t0);
        assert_eq!(e.update(&now_at(t0, &none)), None);
        assert_eq!(e.update(&now_at(t0 + Duration::from_secs(10), &none)), None);
        let mut got = BTreeMap::new();
        got.insert(
            a,
            pgm_wire::Outcome {
                status: pgm_wire::OUTCOME_COMPLETE,
                bytes: 0,
                sha256: [0; 32],
                reason: String::new(),
                reporter: None,
            },
        );
        assert_eq!(
            e.update(&now_at(t0 + Duration::from_secs(11), &got)),
            Some(&SessionEnd::Finished)
        );
        let mut e = Ending::new(policy, t0);
        e.update(&now_at(t0, &none));
        assert_eq!(e.update(&now_at(t0 + Duration::from_secs(29), &none)), None);
        assert_eq!(e.deadline(true), Some(t0 + Duration::from_secs(30)));
        assert_eq!(
            e.update(&now_at(t0 + Duration::from_secs(30), &none)),
            Some(&SessionEnd::Finished)
        );
    }

    #[test]
    fn receivers_heard_without_a_report_hold_the_end_for_the_report_wait() {
        let policy = EndPolicy {
            report_wait: Duration::from_secs(10),
            ..EndPolicy::default()
        };
        let t0 = Instant::ZERO;
        let none = BTreeMap::new();
        let unreported = |t: u64| Now {
            unreported: &|| true,
            ..now_at(t0 + Duration::from_secs(t), &none)
        };
        // The linger ends at 3 s; the wait for the missing report runs to 13 s.
        let mut e = Ending::new(policy.clone(), t0);
        assert!(e.update(&unreported(0)).is_none());
        assert!(!e.awaiting_reports());
        assert_eq!(e.update(&unreported(3)), None);
        assert!(e.awaiting_reports());
        assert_eq!(e.deadline(true), Some(t0 + Duration::from_secs(13)));
        assert_eq!(e.update(&unreported(12)), None);
        assert_eq!(e.update(&unreported(13)), Some(&SessionEnd::Finished));
        assert!(!e.awaiting_reports());
        // The report arrives during the wait: over at once.
        let mut e = Ending::new(policy.clone(), t0);
        e.update(&unreported(0));
        assert_eq!(e.update(&unreported(3)), None);
        assert_eq!(
            e.update(&now_at(t0 + Duration::from_secs(4), &none)),
            Some(&SessionEnd::Finished)
        );
        // Every receiver heard from reported by the end of the linger: no wait.
        let mut e = Ending::new(policy, t0);
        e.update(&now_at(t0, &none));
        assert_eq!(
            e.update(&now_at(t0 + Duration::from_secs(3), &none)),
            Some(&SessionEnd::Finished)
        );
        // Without a report wait (the default) nothing changes.
        let mut e = Ending::new(EndPolicy::default(), t0);
        e.update(&unreported(0));
        assert_eq!(e.update(&unreported(3)), Some(&SessionEnd::Finished));
    }

    #[test]
    fn silence_gives_up_only_while_data_is_to_be_sent_and_only_with_a_controller() {
        let reports = BTreeMap::new();
        let t0 = Instant::ZERO;
        let sending = |t: u64, cc: bool| Now {
            drained: false,
            cc,
            ..now_at(t0 + Duration::from_secs(t), &reports)
        };
        let mut e = Ending::new(EndPolicy::default(), t0);
        assert_eq!(e.update(&sending(59, true)), None);
        assert_eq!(
            e.update(&sending(60, true)),
            Some(&SessionEnd::Abandoned(AbandonReason::NoFeedback {
                after: Duration::from_secs(60),
                heard_any: false
            }))
        );
        let mut e = Ending::new(EndPolicy::default(), t0);
        e.heard(t0 + Duration::from_secs(30));
        assert_eq!(e.update(&sending(89, true)), None);
        assert!(matches!(
            e.update(&sending(90, true)),
            Some(SessionEnd::Abandoned(AbandonReason::NoFeedback {
                heard_any: true,
                ..
            }))
        ));
        let mut e = Ending::new(EndPolicy::default(), t0);
        assert_eq!(e.update(&sending(600, false)), None);
        assert_eq!(e.deadline(false), None);
    }

    #[test]
    fn max_duration_ends_any_session() {
        let reports = BTreeMap::new();
        let t0 = Instant::ZERO;
        let policy = EndPolicy {
            max_duration: Some(Duration::from_secs(5)),
            feedback_timeout: None,
            ..EndPolicy::default()
        };
        let mut e = Ending::new(policy, t0);
        let sending = Now {
            drained: false,
            ..now_at(t0 + Duration::from_secs(5), &reports)
        };
        assert_eq!(
            e.update(&sending),
            Some(&SessionEnd::Abandoned(AbandonReason::MaxDuration {
                after: Duration::from_secs(5)
            }))
        );
    }
}
