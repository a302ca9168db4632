//! What a controller tells the application, through one bounded queue.

use std::collections::VecDeque;
use std::net::IpAddr;

/// Something the controller tells the application (or the trace).
#[derive(Debug, Clone, PartialEq)]
pub enum CcEvent {
    /// A new acker was elected; `from` is `None` at the first election. A switch is a move
    /// of the acker, not a congestion signal (§3.5).
    AckerChanged {
        /// Previous acker.
        from: Option<IpAddr>,
        /// New acker.
        to: IpAddr,
    },
    /// A loss was detected and the window (or rate) cut.
    Congestion {
        /// The window after the cut, in packets (rate-based controllers: their new rate).
        window: f64,
    },
    /// No feedback for a timeout: the window restarted (or the rate halved).
    Stalled {
        /// Consecutive stalls.
        stalls_in_a_row: u32,
    },
    /// Tokens became available after the sender had none (§3.9: unreliable senders can
    /// generate data on the fly).
    TokensAvailable {
        /// Whole tokens now available.
        tokens: u32,
    },
}

/// Events kept for a driver that does not poll them: the oldest go first. Reports from any
/// number of receivers can switch the acker again and again, so an unpolled queue would grow
/// without bound.
pub const MAX_EVENTS: usize = 1024;

/// A queue of [`CcEvent`]s holding at most [`MAX_EVENTS`]; when full, the oldest is dropped
/// and counted.
#[derive(Debug, Clone, Default)]
pub struct Events {
    queue: VecDeque<CcEvent>,
    dropped: u64,
}

impl Events {
    /// An empty queue.
    pub fn new() -> Events {
        Events::default()
    }

    /// Queues `ev`, dropping the oldest event when [`MAX_EVENTS`] are queued.
    pub fn push(&mut self, ev: CcEvent) {
        if self.queue.len() >= MAX_EVENTS {
            self.queue.pop_front();
            self.dropped += 1;
        }
        self.queue.push_back(ev);
    }

    /// The oldest queued event.
    pub fn pop(&mut self) -> Option<CcEvent> {
        self.queue.pop_front()
    }

    /// Events queued.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Events dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_the_oldest_and_counts_it() {
        let mut e = Events::new();
        for i in 0..(MAX_EVENTS as u32 + 5) {
            e.push(CcEvent::TokensAvailable { tokens: i });
        }
        assert_eq!(e.len(), MAX_EVENTS);
        assert_eq!(e.dropped(), 5);
        assert_eq!(e.pop(), Some(CcEvent::TokensAvailable { tokens: 5 }));
    }
}
