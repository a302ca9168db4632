//! A PGM source on real sockets.

use crate::batch::batched;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use pgm_wire::{Gsi, Tsi};
use pgmcc::cc::{CcConfig, CcEvent, CcStats};
use pgmcc::{EndPolicy, RateLimit, SendError, SenderConfig, SenderStats, SessionEnd};
use serde::Serialize;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::{debug, info, trace, warn};

use crate::clock::{entropy, Clock};
use crate::driver::{drive, Role};
use crate::error::Error;
use crate::faults::FaultInjector;
use crate::keyed::{self, Direction, Envelope, Key, KeyedStats};
use crate::signing::SourceKey;
use crate::socket::{self, Encapsulation, Interface, SocketSetup};
use crate::wire::{FaultOn, Wire};

/// How a source is set up. [`SenderOptions::new`] gives the defaults documented per field.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SenderOptions {
    /// Multicast group (IPv4).
    pub group: Ipv4Addr,
    /// PGM data-destination port (OpenPGM and ZeroMQ call it the port of the endpoint).
    pub port: u16,
    /// Interface to send on; default: the one the routing table picks for the group.
    pub interface: Option<Interface>,
    /// UDP encapsulation (default, OpenPGM's ports 3055/3056) or raw IP.
    pub encapsulation: Encapsulation,
    /// Multicast TTL. Default 1: the session stays on the local link.
    pub ttl: u32,
    /// Deliver our own multicast to receivers on this host. Default true.
    pub multicast_loop: bool,
    /// Ceiling on the total send rate, bytes per second of PGM packets. Default none.
    pub rate_limit: Option<u64>,
    /// Congestion control. Default `pgmcc`, our recommended controller (docs/pgmcc.md).
    pub cc: CcConfig,
    /// Largest PGM packet in bytes. Default 1472 (1500-byte MTU minus IP and UDP headers).
    pub max_tpdu: usize,
    /// Packets kept for repairs (TXW_SQNS). Default 16384 (about 23 MB of 1,400-byte
    /// packets). Each is kept until receivers' NAKs for it can have arrived, about 7 group
    /// RTTs (`SenderConfig::hold_for_naks`), so this bounds the rate: 16,384 packets per 7
    /// RTTs is about 260 Mbit/s of 1,400-byte packets at 100 ms.
    pub txw_sqns: u32,
    /// On-demand FEC parity over transmission groups of this many packets (the core's
    /// `SenderConfig::fec`, docs/core.md "FEC parity"). Default `Some(64)`. Set `None` when
    /// OpenPGM receivers are in the group.
    pub fec: Option<u32>,
    /// Pro-active parity packets after every full transmission group (the core's
    /// `SenderConfig::proactive_parity`): receivers that lost no more of a group rebuild it
    /// without a NAK. Needs `fec`. Default 0.
    pub proactive_parity: u32,
    /// When the session is over and when the source gives up (the core's
    /// [`EndPolicy`]: the linger after `close`, the delivery reports to wait for, the
    /// feedback timeout, the longest run). A source that gives up makes `close` and later
    /// writes return [`Error::Abandoned`]. Default [`EndPolicy::default`].
    pub end: EndPolicy,
    /// Global source identifier; default derived from host, process and time.
    pub gsi: Option<Gsi>,
    /// Data-source port; default random.
    pub sport: Option<u16>,
    /// Most datagrams handed to the kernel in one UDP GSO send (UDP encapsulation; capped at
    /// what the kernel allows, 64). Default 1: no GSO. Larger values cut the CPU per packet,
    /// but a byte-limited queue on the sending host (a shaper such as `tbf`) drops a whole GSO
    /// send at once, which congestion control reads as a burst loss (`docs/runtime.md`,
    /// "Framing, ports and sockets").
    pub gso_segments: usize,
    /// Proof of receipt (docs/security.md): every data packet carries a nonce from a random
    /// key drawn for the session, and ACKs must prove receipt with them; ACKs with a wrong
    /// proof are dropped, and an acker that never proves (OpenPGM's receivers cannot) gets a
    /// capped window. Default true.
    pub ack_proof: bool,
    /// Keyed mode (docs/security.md): seal every datagram with this group key, and accept
    /// only datagrams sealed with it. Every PGM packet is then [`keyed::SEAL_OVERHEAD`] bytes
    /// shorter than `max_tpdu`. Default none (plain PGM, interoperable with OpenPGM).
    pub key: Option<Key>,
    /// Signed mode (docs/security.md): sign the data with this source key, so that receivers
    /// holding its public half (`ReceiverOptions::trust`) deliver nothing else. APDUs are
    /// limited to one signed block ([`Sender::max_apdu`]). Default none.
    pub sign: Option<SourceKey>,
    /// SPMs sent back to back at the start and when data resumes after a silence of IHB_MAX
    /// (the core's `SenderConfig::spm_burst`). Default 3, as OpenPGM's sources send at start.
    pub spm_burst: u32,
    /// What the session carries, on every SPM (OPT_MANIFEST, `docs/wire.md`); add the
    /// stream's SHA-256 with [`Sender::set_manifest`] before [`Sender::close`]. Default none.
    pub manifest: Option<pgm_wire::Manifest>,
    /// Every message travels in one packet (`SenderConfig::whole_packets`): the largest
    /// message is one packet's payload ([`Sender::max_tsdu`], the first message
    /// [`Sender::first_tsdu`]), and with no fragments to encode, parity leaves data packets
    /// the whole `max_tpdu`. For applications that cut a stream into packet-sized messages.
    /// Default false.
    pub whole_packets: bool,
    /// Another UDP port on which the source also hears upstream packets (NAKs, SPMRs,
    /// POLRs), besides the encapsulation's unicast port: OpenPGM's receivers at their defaults
    /// send NAKs to 3055, while an OpenPGM source (and so `--peer openpgm`) listens on 3056.
    /// Ignored over raw IP or when it is the unicast port. Default none.
    pub also_listen: Option<u16>,
}

/// One receiver's delivery report (OPT_OUTCOME, `docs/wire.md`): how the session ended there.
/// Unauthenticated unless the session is keyed: anyone can send one in a receiver's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeliveryReport {
    /// The receiver's address.
    pub receiver: IpAddr,
    /// How the session ended there.
    pub status: DeliveryStatus,
    /// Bytes it delivered.
    pub bytes: u64,
    /// SHA-256 of what it delivered, in hex.
    pub sha256: String,
    /// Why it failed (empty when complete).
    pub reason: String,
}

/// How a session ended at one receiver, as its delivery report says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DeliveryStatus {
    /// It received the whole session (`OUTCOME_COMPLETE`).
    Complete,
    /// It ended with part of the stream, kept as such (`OUTCOME_PARTIAL`: it missed the start
    /// and was told to keep the rest).
    Partial,
    /// It holds part of the stream and waits for the source's next pass to complete it
    /// (`OUTCOME_AWAITING_PASS`, `pgmcc send --passes`): not its last word.
    AwaitingPass,
    /// It failed (`OUTCOME_FAILED`, or a status this version does not know): the report's
    /// `reason` says why.
    Failed,
}

impl DeliveryStatus {
    /// The status OPT_OUTCOME carries as `status`.
    pub fn from_wire(status: u8) -> DeliveryStatus {
        match status {
            pgm_wire::OUTCOME_COMPLETE => DeliveryStatus::Complete,
            pgm_wire::OUTCOME_PARTIAL => DeliveryStatus::Partial,
            pgm_wire::OUTCOME_AWAITING_PASS => DeliveryStatus::AwaitingPass,
            _ => DeliveryStatus::Failed,
        }
    }

    /// The status OPT_OUTCOME carries for this one.
    pub fn wire(self) -> u8 {
        match self {
            DeliveryStatus::Complete => pgm_wire::OUTCOME_COMPLETE,
            DeliveryStatus::Partial => pgm_wire::OUTCOME_PARTIAL,
            DeliveryStatus::AwaitingPass => pgm_wire::OUTCOME_AWAITING_PASS,
            DeliveryStatus::Failed => pgm_wire::OUTCOME_FAILED,
        }
    }
}

setters!(SenderOptions {
    interface: Option<Interface>,
    encapsulation: Encapsulation,
    ttl: u32,
    multicast_loop: bool,
    rate_limit: Option<u64>,
    cc: CcConfig,
    max_tpdu: usize,
    txw_sqns: u32,
    fec: Option<u32>,
    proactive_parity: u32,
    end: EndPolicy,
    gsi: Option<Gsi>,
    sport: Option<u16>,
    gso_segments: usize,
    ack_proof: bool,
    key: Option<Key>,
    sign: Option<SourceKey>,
    spm_burst: u32,
    manifest: Option<pgm_wire::Manifest>,
    whole_packets: bool,
});

impl SenderOptions {
    /// Defaults for `group`, data-destination port `port`.
    pub fn new(group: Ipv4Addr, port: u16) -> SenderOptions {
        let pgmcc = pgmcc::cc::pgmcc::PgmccConfig::recommended();
        SenderOptions {
            group,
            port,
            interface: None,
            encapsulation: Encapsulation::default(),
            ttl: 1,
            multicast_loop: true,
            rate_limit: None,
            cc: CcConfig::Pgmcc(pgmcc),
            max_tpdu: 1472,
            txw_sqns: 16384,
            fec: Some(64),
            proactive_parity: 0,
            end: EndPolicy::default(),
            gsi: None,
            sport: None,
            gso_segments: 1,
            ack_proof: true,
            key: None,
            sign: None,
            spm_burst: 3,
            manifest: None,
            whole_packets: false,
            also_listen: None,
        }
    }
}

/// A snapshot of a source, refreshed about ten times a second.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SenderStatus {
    /// Seconds since the source started.
    pub elapsed_secs: f64,
    /// The core's counters.
    pub stats: SenderStats,
    /// Congestion control counters, when it runs.
    pub cc: Option<CcStats>,
    /// The current acker.
    pub acker: Option<IpAddr>,
    /// The acker's reported loss rate (0..1).
    pub report_bar: Option<f64>,
    /// The round-trip time to the acker the controller works with, in seconds.
    pub acker_rtt_secs: Option<f64>,
    /// Packets per round trip: the congestion window, or rate × RTT for rate-based
    /// controllers.
    pub window: Option<f64>,
    /// Datagrams the network refused to take (send errors), dropped and counted.
    pub send_errors: u64,
    /// ODATA packets withheld on purpose ([`Sender::bind_with_faults`]).
    pub injected_drops: u64,
    /// Seconds from the start until every byte written had left as ODATA, once the session
    /// was closed and that happened: the transfer time, without the linger.
    pub data_sent_secs: Option<f64>,
    /// True once the session is closed and the linger time is over.
    pub finished: bool,
    /// Keyed mode: datagrams opened and refused, by reason.
    pub keyed: Option<KeyedStats>,
    /// Not keyed: datagrams that were sealed (a receiver runs with a key), dropped.
    pub sealed_without_key: u64,
    /// Receivers' delivery reports so far, by address.
    pub reports: Vec<DeliveryReport>,
    /// Receivers heard from (ACK or NAK) during the session, sorted (at most the core's
    /// `MAX_GROUP_TRACKED`): with `reports`, who was there but did not report. Filled in the
    /// final status only (`finished`, as `close` returns it); empty before.
    pub heard: Vec<IpAddr>,
    /// Packets from the first up to the highest the acker's ACKs reported received.
    pub acker_reached: Option<u64>,
}

/// A PGM source on real sockets. Create it inside a tokio runtime; a background task runs the
/// protocol (NAKs, repairs, SPMs, congestion control) until [`Sender::close`] returns.
///
/// ```no_run
/// # async fn demo() -> Result<(), pgmcc_net::Error> {
/// use pgmcc_net::{Sender, SenderOptions};
/// let opts = SenderOptions::new("239.192.0.1".parse().unwrap(), 7500);
/// let mut tx = Sender::bind(opts).await?;
/// tx.write(b"hello, group").await?;
/// let status = tx.close().await?; // FIN, then serve repairs until quiet
/// println!("{} data packets", status.stats.odata_packets);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Sender {
    apdus: Option<mpsc::Sender<Vec<u8>>>,
    /// Tells the driver to abort the session ([`Sender::abort`], [`Aborter`]).
    abort: mpsc::Sender<()>,
    /// Manifest updates for the SPMs ([`Sender::set_manifest`]).
    manifests: mpsc::Sender<pgm_wire::Manifest>,
    status: watch::Receiver<SenderStatus>,
    task: JoinHandle<Result<SenderStatus, Error>>,
    tsi: Tsi,
    local: Ipv4Addr,
    max_apdu: usize,
    /// The largest first message: less when it must fit the stream's first packet.
    first_apdu: usize,
    /// Set once a message was written.
    wrote: bool,
    max_tsdu: usize,
    first_tsdu: usize,
}

/// A [`Sender`]'s status, readable after the `Sender` was handed to [`Sender::close`]
/// ([`Sender::status_watch`]).
#[derive(Debug, Clone)]
pub struct StatusWatch(watch::Receiver<SenderStatus>);

impl StatusWatch {
    /// The latest status (published every 100 ms).
    pub fn get(&self) -> SenderStatus {
        self.0.borrow().clone()
    }
}

impl Sender {
    /// Opens the socket and starts the session (the first SPM goes out at once).
    pub async fn bind(opts: SenderOptions) -> Result<Sender, Error> {
        Sender::bind_with_faults(opts, FaultInjector::none()).await
    }

    /// [`Sender::bind`], with `faults` withholding ODATA from the network (for tests and
    /// demonstrations: receivers NAK and repairs follow; the status counts them as
    /// `injected_drops`).
    pub async fn bind_with_faults(
        opts: SenderOptions,
        faults: FaultInjector,
    ) -> Result<Sender, Error> {
        let setup = SocketSetup::resolve(
            opts.group,
            opts.interface.as_ref(),
            opts.encapsulation,
            opts.ttl,
            opts.multicast_loop,
        )?;
        let local = setup.local;
        let sock = socket::sender_socket(&setup)?;
        let seed = entropy(&local.octets());
        let gsi = opts
            .gsi
            .unwrap_or(Gsi([seed[0], seed[1], seed[2], seed[3], seed[4], seed[5]]));
        let sport = opts
            .sport
            .unwrap_or(u16::from_le_bytes([seed[6], seed[7]]).max(1024));
        let tsi = Tsi { gsi, sport };
        let mut config = SenderConfig::new(tsi, IpAddr::V4(local), IpAddr::V4(opts.group));
        config.dport = opts.port;
        let envelope = Envelope::new(opts.key, Direction::Down)?;
        // The envelope travels in the same datagram: the PGM packet inside gets less room.
        config.max_tpdu = if envelope.is_keyed() {
            opts.max_tpdu.saturating_sub(keyed::SEAL_OVERHEAD)
        } else {
            opts.max_tpdu
        };
        config.txw_sqns = opts.txw_sqns;
        config.cc = opts.cc;
        config.fec = opts.fec;
        config.proactive_parity = opts.proactive_parity;
        config.signer = opts.sign.as_ref().map(SourceKey::signer);
        config.manifest = opts.manifest.clone();
        config.spm_burst = opts.spm_burst.max(1);
        config.end = opts.end;
        if opts.ack_proof {
            use chacha20poly1305::aead::rand_core::RngCore;
            let mut key = [0u8; 16];
            chacha20poly1305::aead::OsRng
                .try_fill_bytes(&mut key)
                .map_err(|e| Error::Io {
                    context: "drawing the proof-of-receipt key".into(),
                    source: std::io::Error::other(e.to_string()),
                })?;
            config.ack_proof = Some(key);
        }
        config.rate_limit = opts.rate_limit.map(|r| RateLimit {
            bytes_per_sec: r,
            burst: (r / 50).max(opts.max_tpdu as u64 * 4),
        });
        if opts.whole_packets {
            config.whole_packets();
        }
        let max_tsdu = config.max_tsdu();
        let first_tsdu = config.first_tsdu();
        let clock = Clock::new();
        let core = pgmcc::Sender::new(config, clock.now());
        let max_apdu = core.max_apdu();
        let first_apdu = if opts.whole_packets {
            max_apdu.min(first_tsdu)
        } else {
            max_apdu
        };
        let (apdu_tx, apdu_rx) = mpsc::channel(64);
        let (abort_tx, abort_rx) = mpsc::channel(1);
        let (manifest_tx, manifest_rx) = mpsc::channel(4);
        let (status_tx, status_rx) = watch::channel(SenderStatus::default());
        debug!(%tsi, %local, group = %opts.group, "pgm source started");
        let batch = batched(&sock, setup.encapsulation, opts.gso_segments);
        let faults = (faults, FaultOn::OutgoingOdata);
        let also = match (setup.encapsulation, opts.also_listen) {
            (Encapsulation::Udp { ucast_port, .. }, Some(port)) if port != ucast_port => {
                Some(socket::listen_socket(&setup, port)?)
            }
            _ => None,
        };
        let mut wire = Wire::new(sock, None, batch, setup, envelope, faults);
        if let Some(also) = also {
            wire.also_listen(also);
        }
        let role = Driver {
            apdus: apdu_rx,
            abort: abort_rx,
            manifests: manifest_rx,
            status: status_tx,
            pending: None,
            closed: false,
        };
        let task = tokio::spawn(drive(core, wire, clock, role));
        Ok(Sender {
            apdus: Some(apdu_tx),
            abort: abort_tx,
            manifests: manifest_tx,
            status: status_rx,
            task,
            tsi,
            local,
            max_apdu,
            first_apdu,
            wrote: false,
            max_tsdu,
            first_tsdu,
        })
    }

    /// The session's transport identifier.
    pub fn tsi(&self) -> Tsi {
        self.tsi
    }

    /// This source's address (its NLA in SPMs).
    pub fn local_addr(&self) -> Ipv4Addr {
        self.local
    }

    /// Largest message [`Sender::write`] takes (the first one: see
    /// [`SenderOptions::whole_packets`]).
    pub fn max_apdu(&self) -> usize {
        self.max_apdu
    }

    /// Payload bytes per packet: messages up to this size travel unfragmented.
    pub fn max_tsdu(&self) -> usize {
        self.max_tsdu
    }

    /// Payload bytes of the stream's first packet, which also carries OPT_SYN: with
    /// [`SenderOptions::whole_packets`], the largest first message.
    pub fn first_tsdu(&self) -> usize {
        self.first_tsdu
    }

    /// Queues one message (APDU); receivers get it whole and in order. Waits while the send
    /// queue is full, which is how congestion control slows the application down.
    pub async fn write(&mut self, apdu: &[u8]) -> Result<(), Error> {
        let max = if self.wrote {
            self.max_apdu
        } else {
            self.first_apdu
        };
        if apdu.len() > max {
            return Err(Error::TooLarge {
                len: apdu.len(),
                max,
            });
        }
        let tx = self.apdus.as_ref().ok_or(Error::Closed)?;
        tx.send(apdu.to_vec()).await.map_err(|_| Error::Closed)?;
        self.wrote = true;
        Ok(())
    }

    /// The latest status snapshot.
    pub fn status(&self) -> SenderStatus {
        self.status.borrow().clone()
    }

    /// A handle on this source's status that stays valid while [`Sender::close`] drains the
    /// queue and lingers (for progress displays).
    pub fn status_watch(&self) -> StatusWatch {
        StatusWatch(self.status.clone())
    }

    /// Ends the session: everything written is sent, the source announces the end (OPT_FIN),
    /// answers NAKs until none came for the linger time, and returns the final status.
    pub async fn close(mut self) -> Result<SenderStatus, Error> {
        self.apdus = None;
        self.join().await
    }

    /// Aborts the session (Ctrl-C, say): what is queued is dropped, nothing is repaired, and
    /// a burst of SPMs with OPT_RST tells receivers to give up now rather than wait for a
    /// source that is gone. Returns the status once they are out.
    pub async fn abort(mut self) -> Result<SenderStatus, Error> {
        self.aborter().abort();
        self.apdus = None;
        self.join().await
    }

    /// Replaces the manifest the SPMs carry (OPT_MANIFEST), typically with the stream's
    /// SHA-256 once everything was written: call it before [`Sender::close`] and the SPMs
    /// announcing the end carry it. Returns false if the source's task has ended.
    pub fn set_manifest(&self, manifest: pgm_wire::Manifest) -> bool {
        self.manifests.try_send(manifest).is_ok()
    }

    /// A handle that aborts the session from elsewhere (a signal handler, say), also while
    /// [`Sender::close`] lingers; `close` then returns once the OPT_RST burst is out.
    pub fn aborter(&self) -> Aborter {
        Aborter(self.abort.clone())
    }

    async fn join(self) -> Result<SenderStatus, Error> {
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(Error::Io {
                context: "the source's task failed".into(),
                source: std::io::Error::other(e.to_string()),
            }),
        }
    }
}

/// Aborts a [`Sender`]'s session ([`Sender::aborter`]).
#[derive(Debug, Clone)]
pub struct Aborter(mpsc::Sender<()>);

impl Aborter {
    /// Asks the source to abort: OPT_RST to the receivers, then its task ends.
    pub fn abort(&self) {
        let _ = self.0.try_send(());
    }
}

/// The source's side of the event loop: the application's messages, manifest and abort
/// into the core, the core's end and status out.
struct Driver {
    apdus: mpsc::Receiver<Vec<u8>>,
    abort: mpsc::Receiver<()>,
    manifests: mpsc::Receiver<pgm_wire::Manifest>,
    status: watch::Sender<SenderStatus>,
    /// A message the core's full queue refused: it goes first when there is room.
    pending: Option<Vec<u8>>,
    /// The application closed: everything it wrote is in the core (or `pending`).
    closed: bool,
}

/// What a sending application asks of its driver.
enum Ask {
    Abort,
    Manifest(pgm_wire::Manifest),
    /// A message, or `None`: the application closed.
    Message(Option<Vec<u8>>),
}

impl Role for Driver {
    type Core = pgmcc::Sender;
    type Input = Ask;
    type Out = Result<SenderStatus, Error>;
    const READ_CALLS: usize = 4;

    fn feed(&mut self, core: &mut pgmcc::Sender) {
        // Move as many queued messages into the core as it takes.
        while let Some(apdu) = self
            .pending
            .take()
            .or_else(|| (!self.closed).then(|| self.apdus.try_recv().ok()).flatten())
        {
            match core.send(&apdu) {
                Ok(()) => {}
                Err(SendError::WouldBlock) => {
                    self.pending = Some(apdu);
                    break;
                }
                Err(e) => warn!(error = %e, "message dropped by the core"),
            }
        }
    }

    async fn after_flush(
        &mut self,
        core: &mut pgmcc::Sender,
        wire: &Wire,
        now: pgmcc::Instant,
    ) -> Option<Self::Out> {
        drain_events(core);
        // The core decides when the session is over (linger, expected reports) or given up
        // (feedback timeout, longest run).
        match core.end().cloned() {
            Some(SessionEnd::Finished) => Some(Ok(self.snapshot(core, wire, now, true))),
            Some(SessionEnd::Abandoned(reason)) => {
                info!("{reason}");
                let status = Box::new(self.snapshot(core, wire, now, true));
                Some(Err(Error::Abandoned { reason, status }))
            }
            None => None,
        }
    }

    fn publish(&mut self, core: &pgmcc::Sender, wire: &Wire, now: pgmcc::Instant) {
        self.snapshot(core, wire, now, false);
    }

    async fn wait(&mut self) -> Ask {
        let accepting = self.pending.is_none() && !self.closed;
        tokio::select! {
            Some(()) = self.abort.recv() => Ask::Abort,
            Some(m) = self.manifests.recv() => Ask::Manifest(m),
            m = self.apdus.recv(), if accepting => Ask::Message(m),
            else => std::future::pending().await,
        }
    }

    async fn apply(
        &mut self,
        ask: Ask,
        core: &mut pgmcc::Sender,
        wire: &mut Wire,
        clock: &Clock,
    ) -> Option<Self::Out> {
        match ask {
            Ask::Abort => return Some(Ok(self.send_reset(core, wire, clock).await)),
            Ask::Manifest(m) => core.set_manifest(Some(m)),
            Ask::Message(Some(apdu)) => self.pending = Some(apdu),
            Ask::Message(None) => {
                // A manifest set before closing goes out with the end.
                while let Ok(m) = self.manifests.try_recv() {
                    core.set_manifest(Some(m));
                }
                core.close();
                self.closed = true;
                debug!("pgm source closing");
            }
        }
        None
    }
}

/// Takes the core's congestion-control events (its queue is bounded; draining it keeps the
/// newest) and logs them.
fn drain_events(core: &mut pgmcc::Sender) {
    while let Some(ev) = core.poll_event() {
        match ev {
            CcEvent::AckerChanged { from, to } => {
                info!(?from, %to, "acker changed")
            }
            CcEvent::Stalled { stalls_in_a_row } => {
                info!(stalls_in_a_row, "no feedback: congestion control restarted")
            }
            CcEvent::Congestion { window } => debug!(window, "congestion: window cut"),
            CcEvent::TokensAvailable { tokens } => trace!(tokens, "tokens available"),
        }
    }
}

impl Driver {
    /// Aborts: the core sends its OPT_RST burst, then the final status.
    async fn send_reset(
        &mut self,
        core: &mut pgmcc::Sender,
        wire: &mut Wire,
        clock: &Clock,
    ) -> SenderStatus {
        core.abort(0);
        for _ in 0..16 {
            let now = clock.now();
            wire.flush(core, now).await;
            if core.is_idle() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.snapshot(core, wire, clock.now(), true)
    }

    /// The status now, published and returned.
    fn snapshot(
        &mut self,
        core: &pgmcc::Sender,
        wire: &Wire,
        now: pgmcc::Instant,
        finished: bool,
    ) -> SenderStatus {
        let m = core.cc_metrics();
        let status = SenderStatus {
            elapsed_secs: now.as_nanos() as f64 / 1e9,
            stats: core.stats().clone(),
            acker: m.as_ref().and_then(|m| m.acker),
            report_bar: m
                .as_ref()
                .and_then(|m| m.acker_report)
                .map(|op| f64::from(op.loss) / 65536.0),
            window: m.as_ref().and_then(|m| m.packets_per_rtt()),
            acker_rtt_secs: m.as_ref().and_then(|m| m.rtt_secs()),
            cc: m.map(|m| m.stats),
            send_errors: wire.send_errors(),
            injected_drops: wire.injected_drops(),
            data_sent_secs: core.data_sent_at().map(|t| t.as_nanos() as f64 / 1e9),
            finished,
            keyed: wire.keyed(),
            sealed_without_key: wire.sealed_without_key(),
            reports: reports(core),
            // Up to 65,536 addresses: listed once, in the final status, not every 100 ms.
            heard: if finished {
                let mut h: Vec<IpAddr> = core.receivers_heard().collect();
                h.sort_unstable();
                h
            } else {
                Vec::new()
            },
            acker_reached: core.acker_reached(),
        };
        self.status.send_replace(status.clone());
        status
    }
}

/// The core's delivery reports, for the application.
fn reports(core: &pgmcc::Sender) -> Vec<DeliveryReport> {
    core.reports()
        .map(|(receiver, o)| DeliveryReport {
            receiver,
            status: DeliveryStatus::from_wire(o.status),
            bytes: o.bytes,
            sha256: crate::hex(&o.sha256),
            reason: o.reason.clone(),
        })
        .collect()
}
