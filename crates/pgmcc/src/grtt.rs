//! The group round-trip time (GRTT): the longest RTT among the receivers heard recently, as
//! NORM's source keeps it (RFC 5740 §5.5.2) and as Pseudofed's paper uses it.
//!
//! A bounded table keeps, per receiver, the longest RTT it reported until that entry is
//! `expiry` old; a sample from a receiver whose entry has expired replaces it. When the table
//! is full, a new receiver displaces the entry with the shortest RTT if its own is longer, so
//! the table always holds the longest RTTs heard. The GRTT is the largest unexpired entry.
//!
//! A longer RTT raises the GRTT at once; a shorter one lowers it only once the longer entry
//! expires. Timers scaled to the GRTT therefore err long, which costs some delay, rather than
//! short, which costs repeated NAKs and repairs.

use std::net::IpAddr;

use crate::time::{Duration, Instant};

/// Group RTT estimator (see the module documentation).
#[derive(Debug, Clone)]
pub(crate) struct GroupRtt {
    /// (receiver, longest RTT in s, when recorded).
    table: Vec<(IpAddr, f64, Instant)>,
    entries: usize,
    expiry: Duration,
}

impl GroupRtt {
    /// A table of at most `entries` receivers whose entries last `expiry`.
    pub(crate) fn new(entries: usize, expiry: Duration) -> GroupRtt {
        GroupRtt {
            table: Vec::new(),
            entries: entries.max(1),
            expiry,
        }
    }

    /// Records `rtt` seconds from receiver `addr` at `now`.
    pub(crate) fn note(&mut self, now: Instant, addr: IpAddr, rtt: f64) {
        let expiry = self.expiry;
        if let Some(e) = self.table.iter_mut().find(|e| e.0 == addr) {
            if rtt >= e.1 || now.saturating_duration_since(e.2) >= expiry {
                *e = (addr, rtt, now);
            }
            return;
        }
        self.table
            .retain(|e| now.saturating_duration_since(e.2) < expiry);
        if self.table.len() >= self.entries {
            // Keep the longest RTTs: drop the smallest entry if the new one beats it.
            let Some((i, _)) = self
                .table
                .iter()
                .enumerate()
                .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
            else {
                return;
            };
            if self.table[i].1 >= rtt {
                return;
            }
            self.table.swap_remove(i);
        }
        self.table.push((addr, rtt, now));
    }

    /// Whether no sample is held (none recorded yet, or all made room for newer ones).
    pub(crate) fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The GRTT in seconds at `now`: the largest unexpired entry, `None` before any sample
    /// (or once all have expired).
    pub(crate) fn secs(&self, now: Instant) -> Option<f64> {
        self.table
            .iter()
            .filter(|e| now.saturating_duration_since(e.2) < self.expiry)
            .map(|e| e.1)
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ip(i: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, i))
    }

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn longest_unexpired_rtt_wins_and_longer_raises_at_once() {
        let mut g = GroupRtt::new(4, Duration::from_secs(5));
        assert_eq!(g.secs(at(0)), None);
        g.note(at(0), ip(1), 0.1);
        g.note(at(0), ip(2), 0.3);
        assert_eq!(g.secs(at(1)), Some(0.3));
        // A shorter sample from the same receiver does not lower its entry before expiry.
        g.note(at(1000), ip(2), 0.05);
        assert_eq!(g.secs(at(1000)), Some(0.3));
        g.note(at(2000), ip(1), 0.5);
        assert_eq!(g.secs(at(2000)), Some(0.5));
        // ip(2)'s 0.3 expires at 5 s, ip(1)'s 0.5 at 7 s.
        assert_eq!(g.secs(at(6000)), Some(0.5));
        assert_eq!(g.secs(at(7000)), None);
    }

    #[test]
    fn a_full_table_keeps_the_longest() {
        let mut g = GroupRtt::new(2, Duration::from_secs(5));
        g.note(at(0), ip(1), 0.2);
        g.note(at(0), ip(2), 0.1);
        g.note(at(0), ip(3), 0.05); // shorter than both: not kept
        g.note(at(0), ip(4), 0.4); // displaces ip(2)'s 0.1
        assert_eq!(g.table.len(), 2);
        assert!(g.table.iter().all(|e| e.0 == ip(1) || e.0 == ip(4)));
        assert_eq!(g.secs(at(1)), Some(0.4));
    }
}
