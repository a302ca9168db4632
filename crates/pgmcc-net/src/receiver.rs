//! A PGM receiver on real sockets.

use crate::batch::batched;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use pgm_wire::Tsi;
use pgmcc::{JoinPolicy, ReceiverConfig, ReceiverStats};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tracing::debug;

use crate::clock::{entropy, Clock};
use crate::driver::{drive, Role};
use crate::error::Error;
use crate::faults::FaultInjector;
use crate::keyed::{Direction, Envelope, Key, KeyedStats, START_SLACK};
use crate::signing::TrustedKey;
use crate::socket::{self, Encapsulation, Interface, SocketSetup};
use crate::wire::{FaultOn, Wire};

/// How a receiver is set up. [`ReceiverOptions::new`] gives the defaults documented per field.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReceiverOptions {
    /// Multicast group (IPv4).
    pub group: Ipv4Addr,
    /// PGM data-destination port.
    pub port: u16,
    /// Interface to join on; default: the one the routing table picks for the group.
    pub interface: Option<Interface>,
    /// UDP encapsulation (default, OpenPGM's ports 3055/3056) or raw IP.
    pub encapsulation: Encapsulation,
    /// Where a late joiner starts. Default: the first packet heard.
    pub join: JoinPolicy,
    /// Repair losses (default). When false, gaps are reported at once (unreliable mode).
    pub reliable: bool,
    /// Take part in pgmcc (reports, ACKs). Default true.
    pub pgmcc: bool,
    /// Receive window in packets. Default 16384, the same as the sender's transmit window:
    /// a source that keeps packets for repair until their NAK horizon has that many in
    /// flight between a loss and its repair (`docs/core.md`, "Transmit window"); 16,384
    /// full packets are 23 MiB, within the 32 MiB session budget.
    pub rxw_sqns: u32,
    /// Seed of the NAK back-off; default derived from host, process and time.
    pub seed: Option<u64>,
    /// Follow only sessions whose packets come from this address (the core's
    /// `ReceiverConfig::source`). Without it each session is bound to the address its first
    /// packet came from. Default none.
    pub source: Option<Ipv4Addr>,
    /// Follow only this session (the core's `ReceiverConfig::session`). Default none.
    pub session: Option<pgm_wire::Tsi>,
    /// Keyed mode (docs/security.md): accept only datagrams sealed with this group key, and
    /// seal every NAK and ACK with it. Default none (plain PGM).
    pub key: Option<Key>,
    /// Signed mode (docs/security.md): accept only data signed by this source key; nothing
    /// unverified is delivered, forged packets are NAKed again, and a session ends only at
    /// its signed end. Default none.
    pub trust: Option<TrustedKey>,
    /// Keyed and signed modes: how long before this receiver started a session may have
    /// begun (its first sealed datagram, or its first signed list) and still be taken.
    /// Longer takes receivers started well after the source; shorter narrows the window in
    /// which a recording of an earlier session, played back, passes for the current one.
    /// Sessions joined late are not affected: their packets are sealed or signed now.
    /// Default [`START_SLACK`] (30 s).
    pub start_slack: Duration,
    /// PGM network elements (routers) this receiver may send NAKs to when an SPM names one
    /// as its path. Default none: NAKs and poll replies go to the source's address, whatever
    /// an SPM says, so a spoofed SPM cannot aim them at a third host.
    pub network_elements: Vec<IpAddr>,
    /// Over UDP, take the RDATA OpenPGM 5.3's source sends with a checksum that leaves the
    /// payload out (the first repair of a packet its rate limiter held back; the core's
    /// `ReceiverConfig::openpgm_rdata_checksum`). The UDP checksum still covers the
    /// payload: Linux drops a datagram whose UDP checksum fails, and OpenPGM's UDP sends
    /// carry one (Linux's UDP sockets compute it unless told not to, and libpgm never
    /// does). Ignored over raw IP, where nothing else would check the payload. Default
    /// false.
    pub openpgm_rdata_checksum: bool,
}

setters!(ReceiverOptions {
    interface: Option<Interface>,
    encapsulation: Encapsulation,
    join: JoinPolicy,
    reliable: bool,
    pgmcc: bool,
    rxw_sqns: u32,
    seed: Option<u64>,
    source: Option<Ipv4Addr>,
    session: Option<pgm_wire::Tsi>,
    key: Option<Key>,
    trust: Option<TrustedKey>,
    start_slack: Duration,
    network_elements: Vec<IpAddr>,
    openpgm_rdata_checksum: bool,
});

impl ReceiverOptions {
    /// Defaults for `group`, data-destination port `port`.
    pub fn new(group: Ipv4Addr, port: u16) -> ReceiverOptions {
        ReceiverOptions {
            group,
            port,
            interface: None,
            encapsulation: Encapsulation::default(),
            join: JoinPolicy::default(),
            reliable: true,
            pgmcc: true,
            rxw_sqns: 16384,
            seed: None,
            source: None,
            session: None,
            key: None,
            trust: None,
            start_slack: START_SLACK,
            network_elements: Vec::new(),
            openpgm_rdata_checksum: false,
        }
    }
}

/// What a receiver hands the application: the core's events, as they are.
pub use pgmcc::ReceiverEvent as Event;

/// One session a receiver tracks.
#[derive(Debug, Clone, Serialize)]
pub struct SessionStatus {
    /// The session, as printed.
    pub tsi: String,
    /// The session.
    #[serde(skip)]
    pub id: Tsi,
    /// Seconds since its last data packet or SPM (heartbeats count: a paused stream whose
    /// source is alive stays near zero).
    pub silent_secs: f64,
}

/// A snapshot of a receiver, refreshed about ten times a second.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReceiverStatus {
    /// Seconds since the receiver started.
    pub elapsed_secs: f64,
    /// The core's counters.
    pub stats: ReceiverStats,
    /// Datagrams whose upstream reply could not be sent.
    pub send_errors: u64,
    /// Datagrams discarded on purpose ([`Receiver::bind_with_faults`]).
    pub injected_drops: u64,
    /// Keyed mode: datagrams opened and refused, by reason.
    pub keyed: Option<KeyedStats>,
    /// Not keyed: datagrams that were sealed (the source runs with a key), dropped.
    pub sealed_without_key: u64,
    /// The sessions tracked (at most the core's `max_sessions`).
    pub sessions: Vec<SessionStatus>,
}

/// A receiver's status, readable from any task ([`Receiver::status_watch`]).
#[derive(Debug, Clone)]
pub struct ReceiverStatusWatch(watch::Receiver<ReceiverStatus>);

impl ReceiverStatusWatch {
    /// The latest status (published about ten times a second).
    pub fn get(&self) -> ReceiverStatus {
        self.0.borrow().clone()
    }
}

/// A PGM receiver on real sockets: joins the group and runs the protocol in a background
/// task; [`Receiver::read`] returns messages in order.
///
/// ```no_run
/// # async fn demo() -> Result<(), pgmcc_net::Error> {
/// use pgmcc_net::{Event, Receiver, ReceiverOptions};
/// let mut rx = Receiver::bind(ReceiverOptions::new("239.192.0.1".parse().unwrap(), 7500)).await?;
/// while let Some(ev) = rx.read().await {
///     match ev {
///         Event::Data { data, .. } => println!("{} bytes", data.len()),
///         Event::Unrecoverable { first, last, .. } => eprintln!("lost {first}..={last}"),
///         Event::SessionEnded { .. } | Event::SessionReset { .. } => break,
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Receiver {
    events: mpsc::Receiver<Event>,
    status: watch::Receiver<ReceiverStatus>,
    /// Delivery reports for the driver to send (`Receiver::report`).
    reports: mpsc::Sender<(pgm_wire::Tsi, pgm_wire::Outcome)>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<ReceiverStatus>,
    local: Ipv4Addr,
}

impl Receiver {
    /// Joins the group.
    pub async fn bind(opts: ReceiverOptions) -> Result<Receiver, Error> {
        Receiver::bind_with_faults(opts, FaultInjector::none()).await
    }

    /// [`Receiver::bind`], with `faults` discarding datagrams before the core sees them (for
    /// tests and demonstrations: the receiver NAKs and repairs follow; the status counts them
    /// as `injected_drops`).
    pub async fn bind_with_faults(
        opts: ReceiverOptions,
        faults: FaultInjector,
    ) -> Result<Receiver, Error> {
        let setup = SocketSetup::resolve(
            opts.group,
            opts.interface.as_ref(),
            opts.encapsulation,
            1,
            false,
        )?;
        let local = setup.local;
        let (recv, send) = socket::receiver_sockets(&setup)?;
        let seed = opts.seed.unwrap_or_else(|| {
            let e = entropy(&local.octets());
            u64::from_le_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]])
        });
        let mut config = ReceiverConfig::new(IpAddr::V4(local), IpAddr::V4(opts.group), seed);
        config.dport = opts.port;
        config.join = opts.join;
        config.reliable = opts.reliable;
        config.pgmcc = opts.pgmcc;
        config.rxw_sqns = opts.rxw_sqns;
        config.source = opts.source.map(IpAddr::V4);
        config.session = opts.session;
        config.network_elements = opts.network_elements.clone();
        config.openpgm_rdata_checksum =
            opts.openpgm_rdata_checksum && matches!(setup.encapsulation, Encapsulation::Udp { .. });
        config.verifier = opts
            .trust
            .as_ref()
            .map(|k| k.verifier_with_slack(opts.start_slack));
        let envelope = Envelope::with_start_slack(opts.key, Direction::Up, opts.start_slack)?;
        let clock = Clock::new();
        let core = pgmcc::Receiver::new(config, clock.now());
        let (event_tx, event_rx) = mpsc::channel(1024);
        let (status_tx, status_rx) = watch::channel(ReceiverStatus::default());
        let (stop_tx, stop_rx) = oneshot::channel();
        let (report_tx, report_rx) = mpsc::channel(8);
        debug!(%local, group = %opts.group, "pgm receiver joined");
        let batch = batched(&recv, setup.encapsulation, 1);
        let faults = (faults, FaultOn::Incoming);
        let wire = Wire::new(recv, Some(send), batch, setup, envelope, faults);
        let role = Driver {
            events: event_tx,
            status: status_tx,
            reports: report_rx,
            stop: stop_rx,
        };
        let task = tokio::spawn(drive(core, wire, clock, role));
        Ok(Receiver {
            events: event_rx,
            status: status_rx,
            reports: report_tx,
            stop: Some(stop_tx),
            task,
            local,
        })
    }

    /// This receiver's address (its identity in pgmcc reports).
    pub fn local_addr(&self) -> Ipv4Addr {
        self.local
    }

    /// The next event; `None` once the receiver stopped.
    pub async fn read(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// The next event if one is ready now, without waiting.
    pub fn try_read(&mut self) -> Option<Event> {
        self.events.try_recv().ok()
    }

    /// The latest status snapshot.
    pub fn status(&self) -> ReceiverStatus {
        self.status.borrow().clone()
    }

    /// A handle on this receiver's status for another task (a metrics endpoint, say); it
    /// keeps the last snapshot once the receiver is closed.
    pub fn status_watch(&self) -> ReceiverStatusWatch {
        ReceiverStatusWatch(self.status.clone())
    }

    /// Tells the source of session `tsi` how it ended here (a delivery report: OPT_OUTCOME on
    /// a POLR, unicast to the source). Sent three times, 150 ms apart, since unicast may be
    /// lost and the source keeps the last report per receiver; returns after the last.
    pub async fn report(&self, tsi: pgm_wire::Tsi, outcome: pgm_wire::Outcome) {
        for i in 0..REPORT_COPIES {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            if self.reports.send((tsi, outcome.clone())).await.is_err() {
                return;
            }
        }
    }

    /// Leaves the group and returns the final status.
    pub async fn close(mut self) -> ReceiverStatus {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.events.close();
        match self.task.await {
            Ok(s) => s,
            Err(_) => self.status.borrow().clone(),
        }
    }
}

/// The receiver's side of the event loop: events to the application, its delivery reports
/// to the core, and its status.
struct Driver {
    events: mpsc::Sender<Event>,
    status: watch::Sender<ReceiverStatus>,
    reports: mpsc::Receiver<(pgm_wire::Tsi, pgm_wire::Outcome)>,
    stop: oneshot::Receiver<()>,
}

/// Copies of each delivery report (`Receiver::report`).
const REPORT_COPIES: u32 = 3;

/// What a receiving application asks of its driver.
enum Ask {
    /// Leave the group.
    Stop,
    /// Send this delivery report.
    Report(pgm_wire::Tsi, pgm_wire::Outcome),
}

impl Role for Driver {
    type Core = pgmcc::Receiver;
    type Input = Ask;
    type Out = ReceiverStatus;
    // Up to 8 `recvmmsg` batches (256 buffers) of what is queued, then the feedback they
    // caused goes out.
    const READ_CALLS: usize = 8;

    async fn after_flush(
        &mut self,
        core: &mut pgmcc::Receiver,
        wire: &Wire,
        now: pgmcc::Instant,
    ) -> Option<ReceiverStatus> {
        // Hand events over; a slow application stalls reading, and the network's losses
        // that follow are repaired like any others.
        while let Some(ev) = core.poll_event() {
            if self.events.send(ev).await.is_err() {
                return Some(self.snapshot(core, wire, now));
            }
        }
        None
    }

    fn publish(&mut self, core: &pgmcc::Receiver, wire: &Wire, now: pgmcc::Instant) {
        self.snapshot(core, wire, now);
    }

    async fn wait(&mut self) -> Ask {
        tokio::select! {
            _ = &mut self.stop => Ask::Stop,
            Some((tsi, outcome)) = self.reports.recv() => Ask::Report(tsi, outcome),
            else => std::future::pending().await,
        }
    }

    async fn apply(
        &mut self,
        ask: Ask,
        core: &mut pgmcc::Receiver,
        wire: &mut Wire,
        clock: &Clock,
    ) -> Option<ReceiverStatus> {
        match ask {
            Ask::Stop => Some(self.snapshot(core, wire, clock.now())),
            Ask::Report(tsi, outcome) => {
                if !core.report(tsi, outcome) {
                    debug!(%tsi, "no source address known for the delivery report");
                }
                None
            }
        }
    }
}

impl Driver {
    /// The status now, published and returned.
    fn snapshot(
        &mut self,
        core: &pgmcc::Receiver,
        wire: &Wire,
        now: pgmcc::Instant,
    ) -> ReceiverStatus {
        let status = ReceiverStatus {
            elapsed_secs: now.as_nanos() as f64 / 1e9,
            stats: core.stats().clone(),
            send_errors: wire.send_errors(),
            injected_drops: wire.injected_drops(),
            keyed: wire.keyed(),
            sealed_without_key: wire.sealed_without_key(),
            sessions: core
                .sessions()
                .map(|(tsi, heard)| SessionStatus {
                    tsi: tsi.to_string(),
                    id: tsi,
                    silent_secs: now.saturating_duration_since(heard).as_secs_f64(),
                })
                .collect(),
        };
        self.status.send_replace(status.clone());
        status
    }
}
