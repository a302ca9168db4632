//! Blocking wrappers for programs without an async runtime: each owns a small tokio runtime
//! (one worker thread) that runs the protocol in the background.
//!
//! ```no_run
//! use pgmcc_net::blocking::{Receiver, Sender};
//! use pgmcc_net::{Event, ReceiverOptions, SenderOptions};
//! # fn main() -> Result<(), pgmcc_net::Error> {
//! let group = "239.192.0.1".parse().unwrap();
//! let mut rx = Receiver::bind(ReceiverOptions::new(group, 7500))?;
//! let mut tx = Sender::bind(SenderOptions::new(group, 7500))?;
//! tx.write(b"hello")?;
//! tx.close()?;
//! while let Some(ev) = rx.read() {
//!     if let Event::Data { data, .. } = ev {
//!         assert_eq!(data, b"hello");
//!         break;
//!     }
//! }
//! # Ok(()) }
//! ```

use tokio::runtime::Runtime;

use crate::error::Error;
use crate::{Event, ReceiverOptions, ReceiverStatus, SenderOptions, SenderStatus};

fn runtime() -> Result<Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|source| Error::Io {
            context: "starting the runtime".into(),
            source,
        })
}

/// A blocking PGM source; see [`crate::Sender`].
#[derive(Debug)]
pub struct Sender {
    rt: Runtime,
    inner: crate::Sender,
}

impl Sender {
    /// Opens the socket and starts the session.
    pub fn bind(opts: SenderOptions) -> Result<Sender, Error> {
        let rt = runtime()?;
        let inner = rt.block_on(crate::Sender::bind(opts))?;
        Ok(Sender { rt, inner })
    }

    /// Queues one message, waiting while the send queue is full.
    pub fn write(&mut self, apdu: &[u8]) -> Result<(), Error> {
        self.rt.block_on(self.inner.write(apdu))
    }

    /// The latest status snapshot.
    pub fn status(&self) -> SenderStatus {
        self.inner.status()
    }

    /// Ends the session (OPT_FIN), serves repairs until quiet, returns the final status.
    pub fn close(self) -> Result<SenderStatus, Error> {
        let Sender { rt, inner } = self;
        rt.block_on(inner.close())
    }
}

/// A blocking PGM receiver; see [`crate::Receiver`].
#[derive(Debug)]
pub struct Receiver {
    rt: Runtime,
    inner: crate::Receiver,
}

impl Receiver {
    /// Joins the group.
    pub fn bind(opts: ReceiverOptions) -> Result<Receiver, Error> {
        let rt = runtime()?;
        let inner = rt.block_on(crate::Receiver::bind(opts))?;
        Ok(Receiver { rt, inner })
    }

    /// The next event, waiting for it; `None` once the receiver stopped.
    pub fn read(&mut self) -> Option<Event> {
        self.rt.block_on(self.inner.read())
    }

    /// The latest status snapshot.
    pub fn status(&self) -> ReceiverStatus {
        self.inner.status()
    }

    /// Leaves the group and returns the final status.
    pub fn close(self) -> ReceiverStatus {
        let Receiver { rt, inner } = self;
        rt.block_on(inner.close())
    }
}
