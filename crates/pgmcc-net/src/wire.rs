//! The socket side both drivers share: reading datagrams (batched where the socket allows),
//! opening them (keyed mode), handing them to the core, and sealing and sending what the
//! core emits. The drivers add only what is theirs: the application's channels, status and
//! when to stop.

use std::net::SocketAddr;
use std::sync::Arc;

use pgmcc::{Endpoint, Instant};
use tokio::net::UdpSocket;
use tracing::debug;

use crate::batch::Batched;
use crate::clock::Clock;
use crate::faults::FaultInjector;
use crate::keyed::{Envelope, KeyedStats};
use crate::socket::{self, SocketSetup};

/// Which datagrams a [`FaultInjector`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultOn {
    /// ODATA the source sends.
    OutgoingOdata,
    /// Every datagram the receiver reads.
    Incoming,
}

/// One driver's sockets and what sits between them and the core.
pub(crate) struct Wire {
    /// Where datagrams are read (and sent, without `send`).
    recv: Arc<UdpSocket>,
    /// A socket of its own for sending (receivers), or `None`.
    send: Option<UdpSocket>,
    /// A second socket that only listens (a source's other upstream port), or `None`.
    also: Option<UdpSocket>,
    /// `recvmmsg`/GRO on `recv`, and GSO when sending on it (UDP encapsulation; `None` for
    /// raw IP or when the socket could not be set up for it: one call per datagram).
    batch: Option<Batched>,
    setup: SocketSetup,
    /// Keyed mode's sealing, or the plain path.
    envelope: Envelope,
    faults: FaultInjector,
    fault_on: FaultOn,
    send_errors: u64,
    rbuf: Vec<u8>,
    buf: Vec<u8>,
}

impl Wire {
    pub(crate) fn new(
        recv: UdpSocket,
        send: Option<UdpSocket>,
        batch: Option<Batched>,
        setup: SocketSetup,
        envelope: Envelope,
        faults: (FaultInjector, FaultOn),
    ) -> Wire {
        Wire {
            recv: Arc::new(recv),
            send,
            also: None,
            batch,
            setup,
            envelope,
            faults: faults.0,
            fault_on: faults.1,
            send_errors: 0,
            rbuf: vec![0u8; 65536],
            buf: vec![0u8; 65536],
        }
    }

    /// Also reads datagrams from `sock` (it only listens: nothing is sent from it).
    pub(crate) fn also_listen(&mut self, sock: UdpSocket) {
        self.also = Some(sock);
    }

    /// Waits until a datagram can be read.
    pub(crate) async fn readable(&self) {
        let r = match &self.also {
            None => self.recv.readable().await,
            Some(also) => tokio::select! {
                r = self.recv.readable() => r,
                r = also.readable() => r,
            },
        };
        if let Err(e) = r {
            debug!(error = %e, "receive error");
        }
    }

    /// Hands the core what is queued on the socket: at most `calls` `recvmmsg` batches
    /// (or 64 datagrams without them), so that sending resumes soon.
    pub(crate) fn take_queued<C: Endpoint>(&mut self, core: &mut C, clock: &Clock, calls: usize) {
        if let Some(also) = self.also.take() {
            self.read_some(core, clock, &also);
            self.also = Some(also);
        }
        let recv = Arc::clone(&self.recv);
        if let Some(mut b) = self.batch.take() {
            b.drain(&recv, calls, |from, d| self.input(core, clock, from, d));
            self.batch = Some(b);
            return;
        }
        self.read_some(core, clock, &recv);
    }

    /// Hands the core up to 64 datagrams queued on `sock`, one call each.
    fn read_some<C: Endpoint>(&mut self, core: &mut C, clock: &Clock, sock: &UdpSocket) {
        let mut rbuf = std::mem::take(&mut self.rbuf);
        for _ in 0..64 {
            match sock.try_recv_from(&mut rbuf) {
                Ok((n, from)) => self.input(core, clock, from, &rbuf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    debug!(error = %e, "receive error");
                    break;
                }
            }
        }
        self.rbuf = rbuf;
    }

    fn input<C: Endpoint>(
        &mut self,
        core: &mut C,
        clock: &Clock,
        from: SocketAddr,
        datagram: &[u8],
    ) {
        if self.fault_on == FaultOn::Incoming && self.faults.drop_this() {
            return;
        }
        let Some(pgm) = socket::pgm_payload(self.setup.encapsulation, datagram) else {
            return;
        };
        if let Some(pgm) = self.envelope.open(pgm) {
            core.handle(clock.now(), from.ip(), pgm);
        }
    }

    /// Sends everything the core has to send now.
    pub(crate) async fn flush<C: Endpoint>(&mut self, core: &mut C, now: Instant) {
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(t) = core.poll_transmit(now, &mut buf) {
            let Some(bytes) = buf.get(..t.len) else {
                continue;
            };
            // Byte 4 of the PGM header is the type; 0x04 is ODATA.
            if self.fault_on == FaultOn::OutgoingOdata
                && bytes.get(4) == Some(&0x04)
                && self.faults.drop_this()
            {
                continue;
            }
            let to = match socket::destination(&self.setup, t.dst) {
                Ok(to) => to,
                Err(e) => {
                    self.send_errors += 1;
                    debug!(error = %e, "datagram dropped");
                    continue;
                }
            };
            // The core only emits PGM packets; count one that cannot be sealed.
            let Some(bytes) = self.envelope.seal(bytes) else {
                self.send_errors += 1;
                continue;
            };
            if let Some(send) = &self.send {
                if let Err(e) = send.send_to(bytes, to).await {
                    self.send_errors += 1;
                    debug!(error = %e, %to, "send failed; datagram dropped");
                }
                continue;
            }
            match self.batch.as_mut() {
                Some(b) => self.send_errors += b.send(&self.recv, to, bytes).await as u64,
                None => {
                    if let Err(e) = self.recv.send_to(bytes, to).await {
                        self.send_errors += 1;
                        debug!(error = %e, %to, "send failed; datagram dropped");
                    }
                }
            }
        }
        if let (None, Some(b)) = (&self.send, self.batch.as_mut()) {
            self.send_errors += b.flush(&self.recv).await as u64;
        }
        self.buf = buf;
    }

    /// Datagrams the network refused (send errors) or that could not be addressed or sealed.
    pub(crate) fn send_errors(&self) -> u64 {
        self.send_errors
    }

    /// Datagrams withheld by fault injection.
    pub(crate) fn injected_drops(&self) -> u64 {
        self.faults.dropped()
    }

    /// Keyed mode: datagrams opened and refused, by reason.
    pub(crate) fn keyed(&self) -> Option<KeyedStats> {
        self.envelope.stats()
    }

    /// Not keyed: sealed datagrams dropped.
    pub(crate) fn sealed_without_key(&self) -> u64 {
        self.envelope.sealed_without_key()
    }
}
