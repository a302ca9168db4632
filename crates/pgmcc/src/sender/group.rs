//! What a source knows of its group: the receivers heard from and their longest recent
//! round trip (the group RTT), and the general polls counting them.

use std::collections::HashMap;
use std::net::IpAddr;

use super::poll::GroupPoll;
use super::MAX_GRTT;
use crate::grtt::GroupRtt;
use crate::time::{Duration, Instant};

/// Receivers whose RTTs the group RTT keeps.
const GRTT_ENTRIES: usize = 64;

/// Most receivers the group size estimate tracks at once.
pub const MAX_GROUP_TRACKED: usize = 1 << 16;

/// The receivers heard from and the group RTT.
#[derive(Debug)]
pub(super) struct GroupView {
    /// The longest recent RTTs of the receivers (ACKs and NAK reports).
    grtt: GroupRtt,
    /// Receivers heard from (NAK or ACK) and when last: the group size estimate. Bounded by
    /// [`MAX_GROUP_TRACKED`].
    heard: HashMap<IpAddr, Instant>,
    /// How long a receiver counts after it was last heard.
    expiry: Duration,
    /// General polls counting the receivers.
    pub(super) poll: Option<GroupPoll>,
}

impl GroupView {
    pub(super) fn new(expiry: Duration, poll: Option<GroupPoll>) -> GroupView {
        GroupView {
            grtt: GroupRtt::new(GRTT_ENTRIES, expiry),
            heard: HashMap::new(),
            expiry,
            poll,
        }
    }

    /// Receiver `from` was heard, with its round trip (seconds) if it reported one the
    /// controller believes. True when the sample was taken into the group RTT.
    pub(super) fn note(&mut self, now: Instant, from: IpAddr, rtt_secs: Option<f64>) -> bool {
        if let Some(r) = rtt_secs {
            self.grtt.note(now, from, r);
        }
        if self.heard.len() >= MAX_GROUP_TRACKED && !self.heard.contains_key(&from) {
            let expiry = self.expiry;
            self.heard
                .retain(|_, &mut t| now.saturating_duration_since(t) < expiry);
        }
        if self.heard.len() < MAX_GROUP_TRACKED || self.heard.contains_key(&from) {
            self.heard.insert(from, now);
        }
        rtt_secs.is_some()
    }

    /// The group RTT (at most [`MAX_GRTT`]); `None` before any report.
    pub(super) fn grtt(&self, now: Instant) -> Option<Duration> {
        let s = self.grtt.secs(now)?;
        Some(Duration::from_secs_f64(s).min(MAX_GRTT))
    }

    /// No RTT was ever measured.
    pub(super) fn no_rtt_yet(&self) -> bool {
        self.grtt.is_empty()
    }

    /// Every receiver heard from, in no order.
    pub(super) fn heard(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.heard.keys().copied()
    }

    /// The larger of the receivers heard from within the expiry and the latest poll's
    /// estimate.
    pub(super) fn size(&self, now: Instant) -> usize {
        let heard = self
            .heard
            .values()
            .filter(|&&t| now.saturating_duration_since(t) < self.expiry)
            .count();
        let polled = self.poll.as_ref().and_then(|p| p.estimate(now));
        heard.max(polled.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX)))
    }
}
