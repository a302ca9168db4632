//! The sending side of a transfer over its passes: [`TransferSender`].
//!
//! A source sends its input in one or more *passes*, each a session of its own carrying the
//! whole stream. After a pass, the receivers' delivery reports say who has the stream:
//! another pass follows only while some receiver holds part of it and waits for one, or
//! while receivers the source expects have not confirmed it, and never beyond the number of
//! passes allowed. [`TransferSender`] keeps that account: each receiver's latest report
//! over the passes, who was heard from, the stream's size and SHA-256 (every pass must
//! carry the same stream), and the verdict at the end.
//!
//! A driver, for each pass:
//! 1. opens the input and hands its size to [`TransferSender::input_opened`], and takes
//!    the session's settings from [`TransferSender::pass_options`];
//! 2. sends the input, and hands its SHA-256 to [`TransferSender::input_read`] before
//!    announcing it (a mismatch with the first pass: abort the session instead);
//! 3. closes the session and hands its final status to [`TransferSender::pass_ended`],
//!    which says whether another pass follows or the transfer is done, with its verdict.

use std::fmt;
use std::net::IpAddr;

use crate::{DeliveryReport, DeliveryStatus, Expect, SenderStatus};

/// A source's transfer over its passes: the policy deciding whether another pass follows
/// and whether the receivers' reports meet what was expected. No sockets, files or clocks:
/// the driver hands it what it learnt.
#[derive(Debug, Clone)]
pub struct TransferSender {
    /// Passes allowed, at least 1.
    passes: u32,
    /// Which receivers must confirm the stream, if any.
    expect: Option<Expect>,
    /// The pass under way (or the last one, once done), from 1.
    pass: u32,
    /// The input's size when the first pass opened it (`Some(None)`: of unknown size).
    size: Option<Option<u64>>,
    /// The stream's SHA-256, once the first pass read it, and in hex as reports carry it.
    sha256: Option<([u8; 32], String)>,
    /// Each receiver's latest delivery report over the passes, in the order first heard.
    reports: Vec<DeliveryReport>,
    /// Receivers heard from (ACK or NAK) in any pass, in the order first heard.
    heard: Vec<IpAddr>,
}

/// What a pass's session announces and waits for ([`TransferSender::pass_options`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PassOptions {
    /// This pass, from 1.
    pub pass: u32,
    /// The delivery reports its session waits for ([`EndPolicy::expect`]): in the first
    /// pass those expected; in a later one the expected receivers that have not confirmed
    /// the stream yet, but at least those waiting for another pass (with nothing expected,
    /// just those). `None` when nobody is outstanding.
    ///
    /// [`EndPolicy::expect`]: crate::EndPolicy::expect
    pub expect: Option<Expect>,
    /// The stream's SHA-256, for the manifest from the start of the session: known from
    /// the second pass on.
    pub sha256: Option<[u8; 32]>,
    /// Whether the manifest announces that another pass may follow this one.
    pub another_pass: bool,
}

/// What follows a pass ([`TransferSender::pass_ended`]). Exhaustive: a driver handles
/// both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassDecision {
    /// Another pass goes out (the transfer moved on to it), for this reason.
    NextPass {
        /// Why it is needed.
        why: NextPassReason,
    },
    /// No more passes: the transfer is over, with this verdict.
    Done(Verdict),
}

/// Why another pass goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NextPassReason {
    /// This many receivers hold part of the stream and wait for the next pass.
    Waiting(usize),
    /// No receiver waits, but not every expected receiver confirmed the stream.
    NotConfirmed,
}

impl fmt::Display for NextPassReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NextPassReason::Waiting(1) => f.write_str("1 receiver holds part of it and waits"),
            NextPassReason::Waiting(n) => write!(f, "{n} receivers hold part of it and wait"),
            NextPassReason::NotConfirmed => f.write_str("not every expected receiver confirmed it"),
        }
    }
}

/// How a transfer ended, by its receivers' delivery reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Every expected receiver confirmed the whole stream with its SHA-256.
    Confirmed,
    /// Some expected receiver did not confirm it (it failed, or never reported).
    NotConfirmed {
        /// What was expected.
        wanted: Expect,
    },
    /// Nothing was expected, and every receiver heard from reported the whole stream with
    /// its SHA-256 (at least one did).
    NoneFailed,
    /// Nothing was expected, and some receiver reports a failed or partial transfer.
    SomeFailed,
    /// Nothing was expected and no receiver reports a failure, but nothing confirms that
    /// every receiver got the stream: no report came at all, or receivers that took part
    /// (ACKed or NAKed) sent none. OpenPGM and ZeroMQ receivers never report.
    Unconfirmed {
        /// Receivers that confirmed the stream.
        confirmed: usize,
        /// Receivers heard from that sent no report.
        silent: usize,
    },
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Confirmed => f.write_str(
                "every expected receiver confirmed a complete transfer with this sha256",
            ),
            Verdict::NotConfirmed {
                wanted: Expect::Receivers(n),
            } => write!(
                f,
                "{n} receivers were to confirm a complete transfer with this sha256; they did not"
            ),
            Verdict::NotConfirmed {
                wanted: Expect::Hosts(h),
            } => write!(
                f,
                "{} named receivers were to confirm a complete transfer with this sha256; they did not",
                h.len()
            ),
            Verdict::NoneFailed => f.write_str(
                "every receiver heard from confirmed a complete transfer with this sha256",
            ),
            Verdict::SomeFailed => f.write_str("some receivers report a failed or partial transfer"),
            Verdict::Unconfirmed {
                confirmed: 0,
                silent: 0,
            } => f.write_str(
                "no receiver was heard from: nothing confirms that anyone got the stream",
            ),
            Verdict::Unconfirmed {
                confirmed: 0,
                silent,
            } => write!(
                f,
                "{silent} receiver{} took part but none sent a delivery report: nothing confirms the stream arrived",
                plural(*silent)
            ),
            Verdict::Unconfirmed { confirmed, silent } => write!(
                f,
                "{confirmed} receiver{} confirmed the stream, but {silent} that took part sent no delivery report",
                plural(*confirmed)
            ),
        }
    }
}

/// "s" unless `n` is 1.
fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The input is not the stream the first pass sent: receivers could not combine the
/// passes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InputChanged {
    /// Its size differs (`None`: unknown).
    Size {
        /// The size in the first pass.
        then: Option<u64>,
        /// The size now.
        now: Option<u64>,
    },
    /// Its SHA-256 differs.
    Sha256 {
        /// The first pass's.
        then: [u8; 32],
        /// This pass's.
        now: [u8; 32],
    },
}

impl fmt::Display for InputChanged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputChanged::Size { then, now } => write!(
                f,
                "the input changed after pass 1 ({} bytes then, {} now)",
                then.unwrap_or(0),
                now.unwrap_or(0)
            ),
            InputChanged::Sha256 { now, .. } => write!(
                f,
                "the input changed after pass 1 (its sha256 is now {})",
                hex::encode(now)
            ),
        }?;
        f.write_str(": receivers could not combine the passes")
    }
}

impl std::error::Error for InputChanged {}

impl TransferSender {
    /// A transfer of at most `passes` passes (at least 1), whose verdict waits for the
    /// reports of `expect`.
    pub fn new(passes: u32, expect: Option<Expect>) -> TransferSender {
        TransferSender {
            passes: passes.max(1),
            expect,
            pass: 1,
            size: None,
            sha256: None,
            reports: Vec::new(),
            heard: Vec::new(),
        }
    }

    /// The pass under way, from 1; once the transfer is done, the last pass sent.
    pub fn pass(&self) -> u32 {
        self.pass
    }

    /// Passes allowed.
    pub fn passes(&self) -> u32 {
        self.passes
    }

    /// Which receivers must confirm the stream, as given.
    pub fn expect(&self) -> Option<&Expect> {
        self.expect.as_ref()
    }

    /// The stream's SHA-256, once the first pass read the whole input.
    pub fn sha256(&self) -> Option<[u8; 32]> {
        self.sha256.as_ref().map(|(s, _)| *s)
    }

    /// Each receiver's latest delivery report over the passes, in the order first received.
    pub fn reports(&self) -> &[DeliveryReport] {
        &self.reports
    }

    /// Receivers heard from (ACK or NAK) in any pass, in the order first heard.
    pub fn heard(&self) -> &[IpAddr] {
        &self.heard
    }

    /// The settings of the pass under way: the reports its session waits for and what its
    /// manifest announces.
    pub fn pass_options(&self) -> PassOptions {
        PassOptions {
            pass: self.pass,
            expect: if self.pass == 1 {
                self.expect.clone()
            } else {
                self.still_expected()
            },
            sha256: self.sha256(),
            another_pass: self.pass < self.passes,
        }
    }

    /// The pass under way opened the input, of `size` bytes (`None`: unknown). The first
    /// pass's size is what every later pass must find.
    pub fn input_opened(&mut self, size: Option<u64>) -> Result<(), InputChanged> {
        match self.size {
            None => {
                self.size = Some(size);
                Ok(())
            }
            Some(then) if then == size => Ok(()),
            Some(then) => Err(InputChanged::Size { then, now: size }),
        }
    }

    /// The pass under way read the whole input, whose SHA-256 is `sha256`. The first
    /// pass's is the stream's, which every later pass must have: on a mismatch the pass
    /// must not claim the stream is complete.
    pub fn input_read(&mut self, sha256: [u8; 32]) -> Result<(), InputChanged> {
        match &self.sha256 {
            None => {
                self.sha256 = Some((sha256, hex::encode(sha256)));
                Ok(())
            }
            Some((then, _)) if *then == sha256 => Ok(()),
            Some((then, _)) => Err(InputChanged::Sha256 {
                then: *then,
                now: sha256,
            }),
        }
    }

    /// The pass under way sent the whole stream and its session is over; `status` is its
    /// final status (its delivery reports and the receivers heard from). Each receiver's
    /// report replaces the one it sent in an earlier pass. Says whether another pass
    /// follows (the transfer then moves on to it) or the transfer is done.
    pub fn pass_ended(&mut self, status: &SenderStatus) -> PassDecision {
        for r in &status.reports {
            match self.reports.iter_mut().find(|x| x.receiver == r.receiver) {
                Some(x) => *x = r.clone(),
                None => self.reports.push(r.clone()),
            }
        }
        for a in &status.heard {
            if !self.heard.contains(a) {
                self.heard.push(*a);
            }
        }
        if self.pass < self.passes {
            let waiting = self.waiting();
            if waiting > 0 {
                self.pass += 1;
                return PassDecision::NextPass {
                    why: NextPassReason::Waiting(waiting),
                };
            }
            if self.expect.is_some() && !self.met() {
                self.pass += 1;
                return PassDecision::NextPass {
                    why: NextPassReason::NotConfirmed,
                };
            }
        }
        PassDecision::Done(self.verdict())
    }

    /// Whether `report` confirms the stream: complete, with the stream's SHA-256. Never
    /// before the SHA-256 is known; never for part of the stream.
    pub fn good(&self, report: &DeliveryReport) -> bool {
        report.status == DeliveryStatus::Complete
            && self
                .sha256
                .as_ref()
                .is_some_and(|(_, hex)| report.sha256 == *hex)
    }

    /// Whether the reports so far meet what is expected: every named receiver confirmed
    /// the stream, or as many as expected did. With nothing expected, whether every report
    /// does.
    pub fn met(&self) -> bool {
        match &self.expect {
            None => self.reports.iter().all(|r| self.good(r)),
            Some(Expect::Receivers(n)) => self.confirmed().count() >= *n,
            Some(Expect::Hosts(h)) => h.iter().all(|a| self.confirmed().any(|r| r.receiver == *a)),
        }
    }

    /// Receivers whose latest report says they wait for another pass.
    pub fn waiting(&self) -> usize {
        self.reports
            .iter()
            .filter(|r| r.status == DeliveryStatus::AwaitingPass)
            .count()
    }

    /// Named expected receivers that sent no report at all, in the order named.
    pub fn unreported_expected(&self) -> Vec<IpAddr> {
        match &self.expect {
            Some(Expect::Hosts(h)) => h.iter().copied().filter(|a| !self.reported(a)).collect(),
            _ => Vec::new(),
        }
    }

    /// Receivers that took part (ACKed or NAKed) but sent no report, gone or their reports
    /// lost, leaving out named expected ones ([`TransferSender::unreported_expected`]).
    pub fn heard_without_report(&self) -> Vec<IpAddr> {
        let named = |a: &IpAddr| matches!(&self.expect, Some(Expect::Hosts(h)) if h.contains(a));
        self.heard
            .iter()
            .copied()
            .filter(|a| !self.reported(a) && !named(a))
            .collect()
    }

    /// The verdict on the reports so far. Without `expect`, a transfer no report confirms
    /// for every receiver heard from is [`Verdict::Unconfirmed`], never success.
    pub fn verdict(&self) -> Verdict {
        match (&self.expect, self.met()) {
            (Some(_), true) => Verdict::Confirmed,
            (Some(e), false) => Verdict::NotConfirmed { wanted: e.clone() },
            (None, false) => Verdict::SomeFailed,
            (None, true) => {
                let silent = self.heard_without_report().len();
                if self.reports.is_empty() || silent > 0 {
                    Verdict::Unconfirmed {
                        confirmed: self.reports.len(),
                        silent,
                    }
                } else {
                    Verdict::NoneFailed
                }
            }
        }
    }

    /// Reports confirming the stream.
    fn confirmed(&self) -> impl Iterator<Item = &DeliveryReport> {
        self.reports.iter().filter(|r| self.good(r))
    }

    /// Whether `receiver` sent a report.
    fn reported(&self, receiver: &IpAddr) -> bool {
        self.reports.iter().any(|r| r.receiver == *receiver)
    }

    /// What a later pass waits for: the expected receivers that have not confirmed the
    /// stream (a count, or the named ones), or at least those waiting for another pass.
    fn still_expected(&self) -> Option<Expect> {
        let waiting = self.waiting();
        match &self.expect {
            Some(Expect::Hosts(h)) => {
                let left: Vec<IpAddr> = h
                    .iter()
                    .copied()
                    .filter(|a| !self.confirmed().any(|r| r.receiver == *a))
                    .collect();
                (!left.is_empty()).then_some(Expect::Hosts(left))
            }
            Some(Expect::Receivers(n)) => {
                let left = n.saturating_sub(self.confirmed().count()).max(waiting);
                (left > 0).then_some(Expect::Receivers(left))
            }
            None => (waiting > 0).then_some(Expect::Receivers(waiting)),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use std::net::Ipv4Addr;

    use super::*;
    use DeliveryStatus::{AwaitingPass, Complete, Failed, Partial};

    /// The stream every test sends, and its SHA-256 in hex.
    const SHA: [u8; 32] = [0xab; 32];

    fn ip(d: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, d))
    }

    fn hosts(ds: &[u8]) -> Expect {
        Expect::Hosts(ds.iter().map(|d| ip(*d)).collect())
    }

    /// A report from 127.0.0.`d` with this status, carrying the stream's SHA-256.
    fn report(d: u8, status: DeliveryStatus) -> DeliveryReport {
        DeliveryReport {
            receiver: ip(d),
            status,
            bytes: 5,
            sha256: hex::encode(SHA),
            reason: String::new(),
        }
    }

    /// A session's final status with these reports, every reporter heard from, and the
    /// receivers in `silent` heard from too.
    fn status(reports: &[DeliveryReport], silent: &[u8]) -> SenderStatus {
        let mut heard: Vec<IpAddr> = reports.iter().map(|r| r.receiver).collect();
        heard.extend(silent.iter().map(|d| ip(*d)));
        SenderStatus {
            reports: reports.to_vec(),
            heard,
            finished: true,
            ..SenderStatus::default()
        }
    }

    /// One pass of the stream, ending with `end`.
    fn pass(t: &mut TransferSender, end: &SenderStatus) -> PassDecision {
        t.input_opened(Some(5)).unwrap();
        t.input_read(SHA).unwrap();
        t.pass_ended(end)
    }

    #[test]
    fn two_receivers_confirm_and_an_expected_count_is_met() {
        let mut t = TransferSender::new(1, Some(Expect::Receivers(2)));
        let opts = t.pass_options();
        assert_eq!(opts.expect, Some(Expect::Receivers(2)));
        assert_eq!(opts.sha256, None);
        assert!(!opts.another_pass);
        let end = status(&[report(31, Complete), report(32, Complete)], &[]);
        assert_eq!(pass(&mut t, &end), PassDecision::Done(Verdict::Confirmed));
        assert!(t.reports().iter().all(|r| t.good(r)));
        assert!(t.met());
        assert!(t.unreported_expected().is_empty() && t.heard_without_report().is_empty());
    }

    #[test]
    fn a_named_receiver_that_failed_is_not_confirmed() {
        let wanted = hosts(&[31, 33]);
        let mut t = TransferSender::new(1, Some(wanted.clone()));
        let mut late = report(33, Failed);
        late.sha256 = hex::encode([0u8; 32]);
        late.reason = "no packet marked as the stream's start".into();
        let end = status(&[report(31, Complete), late], &[]);
        assert_eq!(
            pass(&mut t, &end),
            PassDecision::Done(Verdict::NotConfirmed { wanted })
        );
        assert!(t.good(&t.reports()[0]));
        assert!(!t.good(&t.reports()[1]));
    }

    #[test]
    fn too_few_confirmations_of_an_expected_count_are_not_confirmed() {
        let mut t = TransferSender::new(1, Some(Expect::Receivers(3)));
        let end = status(&[report(1, Complete), report(2, Complete)], &[]);
        assert_eq!(
            pass(&mut t, &end),
            PassDecision::Done(Verdict::NotConfirmed {
                wanted: Expect::Receivers(3)
            })
        );
        assert_eq!(
            t.verdict().to_string(),
            "3 receivers were to confirm a complete transfer with this sha256; they did not"
        );
    }

    #[test]
    fn a_late_joiner_takes_a_second_pass_and_no_third_follows() {
        let mut t = TransferSender::new(3, None);
        let first = t.pass_options();
        assert_eq!((first.pass, first.expect, first.sha256), (1, None, None));
        assert!(first.another_pass);
        // The file receiver waits; the one on standard output keeps part of it.
        let end = status(&[report(43, AwaitingPass), report(44, Partial)], &[]);
        let decision = pass(&mut t, &end);
        assert_eq!(
            decision,
            PassDecision::NextPass {
                why: NextPassReason::Waiting(1)
            }
        );
        let PassDecision::NextPass { why } = decision else {
            unreachable!()
        };
        assert_eq!(why.to_string(), "1 receiver holds part of it and waits");
        assert_eq!(
            NextPassReason::Waiting(2).to_string(),
            "2 receivers hold part of it and wait"
        );
        // The second pass announces the stream's hash and waits for the waiting receiver.
        let second = t.pass_options();
        assert_eq!(second.pass, 2);
        assert_eq!(second.expect, Some(Expect::Receivers(1)));
        assert_eq!(second.sha256, Some(SHA));
        assert!(second.another_pass);
        // Only the waiting receiver reports again: nobody waits, no third pass; the
        // partial one makes the verdict.
        assert_eq!(
            pass(&mut t, &status(&[report(43, Complete)], &[])),
            PassDecision::Done(Verdict::SomeFailed)
        );
        assert_eq!(t.pass(), 2);
        assert_eq!(t.reports().len(), 2);
        assert!(t.good(&t.reports()[0]));
        assert_eq!(t.reports()[1].status, Partial);
    }

    #[test]
    fn the_last_pass_ends_the_transfer_whoever_still_waits() {
        let mut t = TransferSender::new(2, None);
        let waits = status(&[report(1, AwaitingPass)], &[]);
        assert!(matches!(
            pass(&mut t, &waits),
            PassDecision::NextPass { .. }
        ));
        assert_eq!(
            pass(&mut t, &waits),
            PassDecision::Done(Verdict::SomeFailed)
        );
        assert_eq!(t.pass(), 2);
    }

    #[test]
    fn expected_receivers_not_confirmed_get_another_pass_waiting_for_them_alone() {
        let mut t = TransferSender::new(3, Some(hosts(&[1, 2, 3])));
        let end = status(&[report(1, Complete), report(2, Failed)], &[]);
        assert_eq!(
            pass(&mut t, &end),
            PassDecision::NextPass {
                why: NextPassReason::NotConfirmed
            }
        );
        assert_eq!(t.pass_options().expect, Some(hosts(&[2, 3])));
        let end = status(&[report(2, Complete), report(3, Complete)], &[]);
        assert_eq!(pass(&mut t, &end), PassDecision::Done(Verdict::Confirmed));
        assert_eq!(t.pass(), 2);
    }

    #[test]
    fn later_passes_wait_only_for_receivers_not_yet_complete() {
        let reports = [
            report(1, Complete),
            report(2, AwaitingPass),
            report(3, Failed),
        ];
        // After a first pass that ended with `reports`, what the second waits for.
        let second = |expect: Option<Expect>, reports: &[DeliveryReport]| {
            let mut t = TransferSender::new(2, expect);
            pass(&mut t, &status(reports, &[]));
            t.pass_options().expect
        };
        // Named: those without a good report, the failed one included.
        assert_eq!(
            second(Some(hosts(&[1, 2, 3, 4])), &reports),
            Some(hosts(&[2, 3, 4]))
        );
        // Counted: those missing, but at least those waiting for a pass.
        assert_eq!(
            second(Some(Expect::Receivers(4)), &reports),
            Some(Expect::Receivers(3))
        );
        assert_eq!(
            second(Some(Expect::Receivers(1)), &reports),
            Some(Expect::Receivers(1))
        );
        // Nothing expected: those waiting for a pass.
        assert_eq!(second(None, &reports), Some(Expect::Receivers(1)));
        assert_eq!(second(None, &reports[..1]), None);
    }

    #[test]
    fn receivers_heard_without_a_report_are_named_once() {
        let reports = [report(1, Complete), report(2, Complete)];
        let end = status(&reports, &[3]);
        // Counted: the silent one is heard without a report, and the count is not met.
        let mut t = TransferSender::new(1, Some(Expect::Receivers(3)));
        assert!(matches!(
            pass(&mut t, &end),
            PassDecision::Done(Verdict::NotConfirmed { .. })
        ));
        assert!(t.unreported_expected().is_empty());
        assert_eq!(t.heard_without_report(), [ip(3)]);
        // Named: it is an expected receiver without a report, and only that.
        let mut t = TransferSender::new(1, Some(hosts(&[3, 4])));
        assert!(matches!(
            pass(&mut t, &end),
            PassDecision::Done(Verdict::NotConfirmed { .. })
        ));
        assert_eq!(t.unreported_expected(), [ip(3), ip(4)]);
        assert!(t.heard_without_report().is_empty());
        // Nothing expected: none failed, but one that took part confirmed nothing.
        let mut t = TransferSender::new(1, None);
        let v = Verdict::Unconfirmed {
            confirmed: 2,
            silent: 1,
        };
        assert_eq!(pass(&mut t, &end), PassDecision::Done(v.clone()));
        assert_eq!(t.heard_without_report(), [ip(3)]);
        assert_eq!(
            v.to_string(),
            "2 receivers confirmed the stream, but 1 that took part sent no delivery report"
        );
    }

    #[test]
    fn without_any_report_nothing_is_confirmed() {
        // Nobody heard from (no receiver, or ones that never speak).
        let mut t = TransferSender::new(1, None);
        let v = pass(&mut t, &status(&[], &[]));
        let PassDecision::Done(v) = v else {
            panic!("{v:?}")
        };
        assert_eq!(
            v,
            Verdict::Unconfirmed {
                confirmed: 0,
                silent: 0
            }
        );
        assert_eq!(
            v.to_string(),
            "no receiver was heard from: nothing confirms that anyone got the stream"
        );
        // Receivers that NAKed but never report (OpenPGM's, ZeroMQ's).
        let mut t = TransferSender::new(1, None);
        let v = pass(&mut t, &status(&[], &[7, 8]));
        assert_eq!(
            v,
            PassDecision::Done(Verdict::Unconfirmed {
                confirmed: 0,
                silent: 2
            })
        );
        let PassDecision::Done(v) = v else {
            unreachable!()
        };
        assert_eq!(
            v.to_string(),
            "2 receivers took part but none sent a delivery report: nothing confirms the stream arrived"
        );
        // Every receiver heard from confirmed: success.
        let mut t = TransferSender::new(1, None);
        let end = status(&[report(1, Complete), report(2, Complete)], &[]);
        assert_eq!(pass(&mut t, &end), PassDecision::Done(Verdict::NoneFailed));
    }

    #[test]
    fn an_input_that_changed_between_passes_is_refused() {
        let mut t = TransferSender::new(3, None);
        t.input_opened(Some(5)).unwrap();
        t.input_read(SHA).unwrap();
        t.pass_ended(&status(&[report(1, AwaitingPass)], &[]));
        // Another size.
        let e = t.input_opened(Some(6)).unwrap_err();
        assert_eq!(
            e,
            InputChanged::Size {
                then: Some(5),
                now: Some(6)
            }
        );
        assert_eq!(
            e.to_string(),
            "the input changed after pass 1 (5 bytes then, 6 now): receivers could not combine the passes"
        );
        // The same size, other bytes.
        t.input_opened(Some(5)).unwrap();
        let e = t.input_read([0xcd; 32]).unwrap_err();
        assert_eq!(
            e,
            InputChanged::Sha256 {
                then: SHA,
                now: [0xcd; 32]
            }
        );
        assert_eq!(
            e.to_string(),
            format!(
                "the input changed after pass 1 (its sha256 is now {}): receivers could not combine the passes",
                "cd".repeat(32)
            )
        );
        // The stream stays the first pass's.
        assert_eq!(t.sha256(), Some(SHA));
        t.input_read(SHA).unwrap();
    }

    #[test]
    fn expectations_met_in_the_first_pass_end_the_transfer_there() {
        let mut t = TransferSender::new(3, Some(Expect::Receivers(1)));
        assert!(t.pass_options().another_pass);
        let end = status(&[report(1, Complete)], &[]);
        assert_eq!(pass(&mut t, &end), PassDecision::Done(Verdict::Confirmed));
        assert_eq!(t.pass(), 1);
    }

    #[test]
    fn a_partial_report_never_counts_as_good() {
        let mut t = TransferSender::new(1, Some(Expect::Receivers(1)));
        let end = status(&[report(1, Partial)], &[]);
        assert!(matches!(
            pass(&mut t, &end),
            PassDecision::Done(Verdict::NotConfirmed { .. })
        ));
        assert!(!t.good(&t.reports()[0]));
        // Nor does a complete one with another sha256, nor any before the stream's is known.
        let mut other = report(1, Complete);
        other.sha256 = hex::encode([0u8; 32]);
        assert!(!t.good(&other));
        let fresh = TransferSender::new(1, None);
        assert!(!fresh.good(&report(1, Complete)));
    }

    #[test]
    fn a_later_report_of_the_same_receiver_replaces_the_earlier() {
        let mut t = TransferSender::new(3, None);
        pass(&mut t, &status(&[report(1, AwaitingPass)], &[2]));
        assert_eq!(
            pass(&mut t, &status(&[report(1, Complete)], &[2])),
            PassDecision::Done(Verdict::Unconfirmed {
                confirmed: 1,
                silent: 1
            })
        );
        assert_eq!(t.reports(), [report(1, Complete)]);
        assert_eq!(t.heard(), [ip(1), ip(2)]);
        assert_eq!(t.waiting(), 0);
    }
}
