//! The one event loop both drivers run: the core's timers, what it sends, what the socket
//! brings, and the application's side, which is all a [`Role`] adds.

use std::time::Duration;

use pgmcc::{Endpoint, Instant};

use crate::clock::Clock;
use crate::wire::Wire;

/// How often the application's status snapshot is refreshed.
const STATUS_EVERY: Duration = Duration::from_millis(100);

/// The application's side of a driver: a source's messages and end, or a receiver's events
/// and reports.
pub(crate) trait Role {
    /// The core it drives.
    type Core: Endpoint;
    /// What the application asked for.
    type Input;
    /// What the driver's task returns.
    type Out;
    /// `recvmmsg` batches read per wake-up before the core's feedback or data goes out.
    const READ_CALLS: usize;

    /// Before the timers and sending: the application's queued work into the core.
    fn feed(&mut self, _core: &mut Self::Core) {}

    /// After sending: the core's output to the application; `Some` ends the task.
    async fn after_flush(
        &mut self,
        core: &mut Self::Core,
        wire: &Wire,
        now: Instant,
    ) -> Option<Self::Out>;

    /// Refreshes the application's status snapshot.
    fn publish(&mut self, core: &Self::Core, wire: &Wire, now: Instant);

    /// Waits for the application.
    async fn wait(&mut self) -> Self::Input;

    /// Does what the application asked; `Some` ends the task.
    async fn apply(
        &mut self,
        input: Self::Input,
        core: &mut Self::Core,
        wire: &mut Wire,
        clock: &Clock,
    ) -> Option<Self::Out>;
}

/// Runs `core` on `wire` for `role` until the role ends it.
pub(crate) async fn drive<R: Role>(
    mut core: R::Core,
    mut wire: Wire,
    clock: Clock,
    mut role: R,
) -> R::Out {
    let mut next_status = clock.now();
    loop {
        let now = clock.now();
        role.feed(&mut core);
        if core.poll_timeout().is_some_and(|d| d <= now) {
            core.handle_timeout(now);
        }
        wire.flush(&mut core, now).await;
        if let Some(out) = role.after_flush(&mut core, &wire, now).await {
            return out;
        }
        if now >= next_status {
            role.publish(&core, &wire, now);
            next_status = now + STATUS_EVERY;
        }
        let deadline = core
            .poll_timeout()
            .unwrap_or(now + Duration::from_secs(1))
            .min(next_status);
        let wake = clock.deadline(deadline);
        tokio::select! {
            input = role.wait() => {
                if let Some(out) = role.apply(input, &mut core, &mut wire, &clock).await {
                    return out;
                }
            }
            // What is queued on the socket, a few `recvmmsg` calls at most, so that
            // sending resumes soon.
            () = wire.readable() => wire.take_queued(&mut core, &clock, R::READ_CALLS),
            _ = tokio::time::sleep_until(wake) => {}
        }
    }
}
