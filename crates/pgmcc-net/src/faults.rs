//! Fault injection for tests and demonstrations: a layer between a driver's socket and its
//! core that withholds datagrams, so receivers NAK and repairs follow.
//!
//! It is not an option of a source or receiver: a program opts in by binding with it
//! ([`crate::Sender::bind_with_faults`], [`crate::Receiver::bind_with_faults`]).

/// Withholds every `n`th datagram of one kind: a source's ODATA never reaches the network
/// (its core believes it sent it), or a receiver's datagrams never reach its core.
#[derive(Debug, Clone, Default)]
pub struct FaultInjector {
    every: Option<u32>,
    seen: u64,
    dropped: u64,
}

impl FaultInjector {
    /// No faults.
    pub fn none() -> FaultInjector {
        FaultInjector::default()
    }

    /// Withholds every `n`th datagram of the kind (`0`: none).
    pub fn drop_every(n: u32) -> FaultInjector {
        FaultInjector {
            every: (n > 0).then_some(n),
            ..FaultInjector::default()
        }
    }

    /// Counts one datagram of the kind; true when it is to be withheld.
    pub(crate) fn drop_this(&mut self) -> bool {
        let Some(n) = self.every else {
            return false;
        };
        self.seen += 1;
        let drop = self.seen % u64::from(n) == 0;
        self.dropped += u64::from(drop);
        drop
    }

    /// Datagrams withheld so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}
