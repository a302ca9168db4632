//! Batched datagram I/O for UDP encapsulation: `recvmmsg` plus UDP GRO on receive (up to 32
//! buffers per call, each possibly holding several datagrams `stride` bytes apart) and, when
//! asked for, UDP GSO on send (one system call for up to 64 equal-sized datagrams to one
//! destination).
//!
//! GSO is off by default ([`crate::SenderOptions::gso_segments`] = 1): a GSO send travels the
//! sending host's queues as one packet, and a byte-limited queue there (a `tbf` shaper, say)
//! drops the whole batch at once. In our namespace lab that emptied pgmcc's window again and
//! again (stall timeouts; TCP/pgmcc 3.2-3.9 instead of ~1); on loopback and on links whose
//! NIC segments it is much faster (docs/performance.md).
//!
//! The system calls come from `quinn-udp` (the QUIC project's UDP layer): the workspace
//! forbids unsafe code, and this is the well-kept crate that wraps them. Where the kernel
//! lacks GSO it sends one datagram per call; without GRO each buffer holds one datagram.
//! Raw IP encapsulation does not use this module.

use std::io::{self, IoSliceMut};
use std::net::SocketAddr;

use quinn_udp::{RecvMeta, Transmit, UdpSockRef, UdpSocketState, BATCH_SIZE};
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Largest GSO batch in bytes (the kernel's limit is a 64 KiB packet).
const MAX_GSO_BYTES: usize = 60_000;

/// Datagram bytes a receive buffer must hold: a full GRO batch of the largest datagram.
const RECV_BUF: usize = 65_536;

/// Batched I/O state of one UDP socket.
#[derive(Debug)]
pub(crate) struct Batched {
    state: UdpSocketState,
    /// The GSO batch being built: datagrams of `seg` bytes (the last may be shorter).
    out: Vec<u8>,
    seg: usize,
    count: usize,
    dest: Option<SocketAddr>,
    /// The last datagram added was shorter than `seg`: nothing can follow it.
    closed: bool,
    max_segments: usize,
    bufs: Vec<Vec<u8>>,
    meta: Vec<RecvMeta>,
}

impl Batched {
    /// Prepares `sock` (quinn-udp sets IP_PKTINFO, UDP_GRO and path-MTU probing, as it does
    /// for QUIC).
    /// `gso_segments` bounds the datagrams per GSO send (1: no GSO).
    pub(crate) fn new(sock: &UdpSocket, gso_segments: usize) -> io::Result<Batched> {
        let state = UdpSocketState::new(UdpSockRef::from(sock))?;
        let max_segments = gso_segments.clamp(1, state.max_gso_segments().max(1));
        Ok(Batched {
            state,
            out: Vec::with_capacity(MAX_GSO_BYTES),
            seg: 0,
            count: 0,
            dest: None,
            closed: false,
            max_segments,
            bufs: (0..BATCH_SIZE).map(|_| vec![0u8; RECV_BUF]).collect(),
            meta: vec![RecvMeta::default(); BATCH_SIZE],
        })
    }

    /// Queues `datagram` for `dest`, sending the batch built so far first when the datagram
    /// cannot join it. Returns the datagrams lost to send errors (counted, not fatal: PGM
    /// repairs them like any loss).
    pub(crate) async fn send(
        &mut self,
        sock: &UdpSocket,
        dest: SocketAddr,
        datagram: &[u8],
    ) -> usize {
        let joins = self.count > 0
            && !self.closed
            && self.dest == Some(dest)
            && datagram.len() <= self.seg
            && self.count < self.max_segments
            && self.out.len() + datagram.len() <= MAX_GSO_BYTES;
        let mut lost = 0;
        if self.count > 0 && !joins {
            lost += self.flush(sock).await;
        }
        if self.count == 0 {
            self.seg = datagram.len();
            self.dest = Some(dest);
        }
        self.out.extend_from_slice(datagram);
        self.count += 1;
        self.closed = datagram.len() < self.seg;
        lost
    }

    /// Sends the batch built so far; returns the datagrams lost to a send error.
    pub(crate) async fn flush(&mut self, sock: &UdpSocket) -> usize {
        let (Some(dest), n) = (self.dest, self.count) else {
            return 0;
        };
        if n == 0 {
            return 0;
        }
        let transmit = Transmit {
            destination: dest,
            ecn: None,
            contents: &self.out,
            segment_size: (n > 1).then_some(self.seg),
            src_ip: None,
        };
        let state = &self.state;
        let r = sock
            .async_io(Interest::WRITABLE, || {
                state.try_send(UdpSockRef::from(sock), &transmit)
            })
            .await;
        self.out.clear();
        self.count = 0;
        self.dest = None;
        self.closed = false;
        match r {
            Ok(()) => 0,
            Err(e) => {
                tracing::debug!(error = %e, %dest, datagrams = n, "send failed; datagrams dropped");
                n
            }
        }
    }

    /// Up to `calls` [`Batched::try_recv`] calls, stopping at the first that finds nothing
    /// queued; an error ends the round (logged: the socket stays usable).
    pub(crate) fn drain(
        &mut self,
        sock: &UdpSocket,
        calls: usize,
        mut f: impl FnMut(SocketAddr, &[u8]),
    ) {
        for _ in 0..calls {
            match self.try_recv(sock, &mut f) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "receive error");
                    break;
                }
            }
        }
    }

    /// Reads what the socket holds now (one `recvmmsg`, without waiting) and calls
    /// `f(from, datagram)` for each datagram. Returns how many it read; 0 when nothing was
    /// waiting.
    pub(crate) fn try_recv(
        &mut self,
        sock: &UdpSocket,
        mut f: impl FnMut(SocketAddr, &[u8]),
    ) -> io::Result<usize> {
        let Batched {
            state, bufs, meta, ..
        } = self;
        let mut slices: Vec<IoSliceMut<'_>> = bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
        let n = match sock.try_io(Interest::READABLE, || {
            state.recv(UdpSockRef::from(sock), &mut slices, meta)
        }) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut datagrams = 0;
        for (m, buf) in meta.iter().zip(slices.iter()).take(n) {
            let data = buf.get(..m.len).unwrap_or_default();
            let stride = if m.stride == 0 { m.len } else { m.stride };
            for d in data.chunks(stride.max(1)) {
                f(m.addr, d);
                datagrams += 1;
            }
        }
        Ok(datagrams)
    }
}

/// Batched I/O for a socket of the given encapsulation: `None` for raw IP, or (logged) when
/// the socket cannot be set up for it, in which case the caller sends and receives one
/// datagram per system call.
pub(crate) fn batched(
    sock: &UdpSocket,
    encapsulation: crate::Encapsulation,
    gso_segments: usize,
) -> Option<Batched> {
    if !matches!(encapsulation, crate::Encapsulation::Udp { .. }) {
        return None;
    }
    match Batched::new(sock, gso_segments) {
        Ok(b) => Some(b),
        Err(e) => {
            tracing::debug!(error = %e, "no batched I/O on this socket");
            None
        }
    }
}
