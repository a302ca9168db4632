//! `pgmcc send` and `pgmcc recv`: files and streams over a real network.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args as ClapArgs, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pgmcc_net::{
    AcklessConfig, CcConfig, Encapsulation, Event, Interface, LowWeightConfig, PgmccConfig,
    PseudofedConfig, Receiver, ReceiverOptions, Sender, SenderOptions, TfmccConfig,
};
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

/// Network options shared by `send` and `recv`.
#[derive(Debug, ClapArgs)]
pub(crate) struct NetArgs {
    /// Multicast group and PGM data-destination port, e.g. 239.192.0.1:7500. Sender and
    /// receivers must use the same. (ZeroMQ's epgm://IF;GROUP:PORT uses PORT here too.)
    #[arg(long, value_name = "GROUP:PORT")]
    group: SocketAddrV4,
    /// Network interface, by name (eth0) or by one of its IPv4 addresses
    /// [default: the interface the routing table picks for the group].
    #[arg(long, value_name = "IF")]
    iface: Option<Interface>,
    /// UDP encapsulation ports, UCAST,MCAST: upstream packets (NAKs, ACKs) go to the source
    /// on UCAST, downstream packets (data, SPMs, NCFs) to the group on MCAST. OpenPGM's
    /// defaults.
    #[arg(long, value_name = "UCAST,MCAST", default_value = "3055,3056", value_parser = parse_ports)]
    udp_ports: (u16, u16),
    /// Carry PGM directly over IP (protocol 113) instead of UDP; needs root or CAP_NET_RAW.
    #[arg(long)]
    raw_ip: bool,
    /// Write final statistics as JSON to FILE (`-` for standard output) when done.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
}

impl NetArgs {
    fn encapsulation(&self) -> Encapsulation {
        if self.raw_ip {
            Encapsulation::RawIp
        } else {
            Encapsulation::Udp {
                ucast_port: self.udp_ports.0,
                mcast_port: self.udp_ports.1,
            }
        }
    }

    fn group(&self) -> Result<Ipv4Addr> {
        let g = *self.group.ip();
        if !g.is_multicast() {
            bail!("--group {g}: not a multicast address (224.0.0.0/4; use 239.x.y.z for a private group)");
        }
        Ok(g)
    }
}

fn parse_ports(s: &str) -> Result<(u16, u16), String> {
    let (u, m) = s
        .split_once(',')
        .ok_or_else(|| format!("`{s}`: give two ports, UCAST,MCAST (e.g. 3055,3056)"))?;
    let p = |x: &str| {
        x.trim()
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("`{x}` is not a port number (1-65535)"))
    };
    Ok((p(u)?, p(m)?))
}

fn parse_rate(s: &str) -> Result<u64, String> {
    netsim::units::rate(s).map(|bits| (bits / 8).max(1))
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    netsim::units::duration(s)
}

/// Congestion control choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Cc {
    /// pgmcc with token realignment on acker switches (our fix, docs/pgmcc.md).
    Pgmcc,
    /// pgmcc exactly as the paper's §3.4 rule reads (tokens not realigned on a switch).
    PgmccPaper,
    /// The TFMCC-style baseline (docs/tfmcc.md); receivers report pgmcc's loss filter as p.
    Tfmcc,
    /// Pseudofed's representative-based rate controller (docs/pseudofed.md); receivers
    /// switch to Pseudofed feedback on their own from the sender's OPT_PSEUDOFED.
    Pseudofed,
    /// Low-weight multi-sender control (docs/lowweight.md): receivers never ACK, the worst
    /// receiver NAKs at once, the rate follows its loss events between --rate-floor and
    /// --rate-ceiling. For sessions with many senders, or behind NAT and reflectors.
    Lowweight,
    /// pgmcc's window driven by the worst receiver's NAKs instead of ACKs (docs/lowweight.md;
    /// a research comparison, not recommended).
    PgmccAckless,
    /// No congestion control: only --rate-max paces the session (plain PGM).
    None,
}

/// Arguments of `pgmcc send`.
#[derive(Debug, ClapArgs)]
pub(crate) struct SendArgs {
    #[command(flatten)]
    net: NetArgs,
    /// What to send: a file, or `-` for standard input (a live stream: data goes out as it
    /// is read).
    #[arg(value_name = "FILE|-")]
    input: PathBuf,
    /// Ceiling on the send rate, e.g. 20Mbit, 500kbit (bits per second of PGM packets)
    /// [default: none; with --cc none, always set one].
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    rate_max: Option<u64>,
    /// Congestion control.
    #[arg(long, value_enum, default_value = "pgmcc")]
    cc: Cc,
    /// With --cc lowweight: the session never sends slower than this, whatever the worst
    /// receiver's losses (the session owner's floor; data and repairs together), e.g. 1Mbit.
    /// Set it below what every receiver can take, or it overrides congestion control.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    rate_floor: Option<u64>,
    /// With --cc lowweight: the session never sends faster than this, e.g. 50Mbit.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    rate_ceiling: Option<u64>,
    /// Multicast TTL (hops). 1 keeps the session on the local link.
    #[arg(long, default_value_t = 1)]
    ttl: u32,
    /// Do not loop multicast back to receivers on this host.
    #[arg(long)]
    no_loop: bool,
    /// After the end of the input, keep answering NAKs until none arrived for this long.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    linger: Duration,
    /// Packets kept for repairs (TXW_SQNS); a receiver further behind than this loses data.
    /// The default holds about 23 MB of 1,400-byte packets (190 ms at 1 Gbit/s).
    #[arg(long, value_name = "PACKETS", default_value_t = 16384)]
    txw: u32,
    /// Fault injection: withhold every Nth data packet from the wire, so receivers must NAK
    /// and get repairs.
    #[arg(long, value_name = "N")]
    drop_every: Option<u32>,
    /// Hand up to N data packets to the kernel per system call (UDP GSO; 1 = off, at most
    /// 64). Much less CPU per packet, but a byte-limited queue on this host (a tbf shaper)
    /// drops a whole batch at once, which pgmcc reads as a burst loss.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    gso: u16,
}

/// Arguments of `pgmcc recv`.
#[derive(Debug, ClapArgs)]
pub(crate) struct RecvArgs {
    #[command(flatten)]
    net: NetArgs,
    /// Where to write the data: a file (written to a temporary file beside it and renamed
    /// only when the whole stream arrived intact), or `-` for standard output.
    #[arg(long, value_name = "FILE|-", default_value = "-")]
    out: PathBuf,
    /// Give up if nothing arrives for this long (the source may be gone).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    idle_timeout: Duration,
    /// Accept a stream whose start this receiver did not see (joined late, or a source that
    /// does not mark its first packet, such as OpenPGM). Without it such a transfer fails.
    #[arg(long)]
    allow_partial_start: bool,
    /// Do not take part in pgmcc (no loss reports, never acker).
    #[arg(long)]
    no_pgmcc: bool,
    /// Fault injection: discard every Nth datagram received, to see repairs at work.
    #[arg(long, value_name = "N")]
    drop_every: Option<u32>,
    /// The source is a ZeroMQ PUB socket on pgm:// or epgm:// (use the endpoint's port in
    /// --group and in --udp-ports P,P): decode ZeroMQ's framing and write each message part
    /// followed by a newline (meant for text messages; binary ones need the library's
    /// pgmcc_net::zmq). Implies --allow-partial-start (ZeroMQ marks no stream start).
    #[arg(long)]
    zmq: bool,
}

/// The async runtime: one thread. The protocol task and the application loop then hand data
/// over without waking another thread; on loopback this moved 2.2-2.5 Gbit/s against
/// 1.6-1.8 with two worker threads (same run, alternating).
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn progress(quiet: bool, len: Option<u64>) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = match len {
        Some(n) => ProgressBar::new(n).with_style(
            ProgressStyle::with_template(
                "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    pb.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    pb
}

fn write_stats<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let json = serde_json::to_string_pretty(value).context("encoding statistics")?;
    if path == Path::new("-") {
        println!("{json}");
    } else {
        std::fs::write(path, json + "\n")
            .with_context(|| format!("writing statistics to {}", path.display()))?;
    }
    Ok(())
}

#[derive(Serialize)]
struct SendReport {
    tsi: String,
    source: Ipv4Addr,
    bytes: u64,
    sha256: String,
    /// From the start until the last byte had left as ODATA.
    sending_seconds: f64,
    /// Including the linger.
    seconds: f64,
    status: pgmcc_net::SenderStatus,
}

/// Runs `pgmcc send`.
pub(crate) fn send(args: &SendArgs) -> Result<ExitCode> {
    let group = args.net.group()?;
    let mut opts = SenderOptions::new(group, args.net.group.port());
    opts.interface = args.net.iface.clone();
    opts.encapsulation = args.net.encapsulation();
    opts.ttl = args.ttl;
    opts.multicast_loop = !args.no_loop;
    opts.rate_limit = args.rate_max;
    opts.linger = args.linger;
    opts.txw_sqns = args.txw.max(1);
    opts.drop_every = args.drop_every;
    opts.gso_segments = usize::from(args.gso);
    opts.cc = match args.cc {
        Cc::Pgmcc => opts.cc,
        Cc::PgmccPaper => CcConfig::Pgmcc(PgmccConfig::default()),
        Cc::Tfmcc => CcConfig::Tfmcc(TfmccConfig::default()),
        Cc::Pseudofed => CcConfig::Pseudofed(PseudofedConfig::default()),
        Cc::Lowweight => {
            // Bytes per second of PGM packets to full-size packets per second.
            let pps = |r: Option<u64>| r.map(|b| b as f64 / opts.max_tpdu.max(1) as f64);
            let (floor, ceiling) = (pps(args.rate_floor), pps(args.rate_ceiling));
            if let (Some(f), Some(c)) = (floor, ceiling) {
                if f > c {
                    bail!("--rate-floor is above --rate-ceiling");
                }
            }
            CcConfig::LowWeight(LowWeightConfig {
                floor,
                ceiling,
                ..LowWeightConfig::default()
            })
        }
        Cc::PgmccAckless => CcConfig::PgmccAckless(AcklessConfig::default()),
        Cc::None => CcConfig::None,
    };
    if args.cc != Cc::Lowweight && (args.rate_floor.is_some() || args.rate_ceiling.is_some()) {
        bail!("--rate-floor and --rate-ceiling are for --cc lowweight (use --rate-max otherwise)");
    }
    if args.cc == Cc::None && args.rate_max.is_none() {
        eprintln!("pgmcc send: warning: --cc none without --rate-max sends as fast as the host can, which congests any real network");
    }
    let cc_on = args.cc != Cc::None;
    let stdin = args.input == Path::new("-");
    let len = if stdin {
        None
    } else {
        Some(
            std::fs::metadata(&args.input)
                .with_context(|| format!("reading {}", args.input.display()))?
                .len(),
        )
    };
    let rt = runtime()?;
    rt.block_on(async {
        let mut input: Box<dyn tokio::io::AsyncRead + Unpin + Send> = if stdin {
            Box::new(tokio::io::stdin())
        } else {
            Box::new(
                tokio::fs::File::open(&args.input)
                    .await
                    .with_context(|| format!("opening {}", args.input.display()))?,
            )
        };
        let started = std::time::Instant::now();
        let mut tx = Sender::bind(opts).await.context("starting the source")?;
        eprintln!(
            "pgmcc send: session {} from {} to {}:{}",
            tx.tsi(),
            tx.local_addr(),
            group,
            args.net.group.port()
        );
        let pb = progress(args.net.quiet, len);
        let mut hash = Sha256::new();
        let mut total = 0u64;
        let mut warned = false;
        // Large reads (each tokio file read is a trip to a blocking thread), cut into
        // packet-sized messages so nothing needs fragmenting.
        let tsdu = tx.max_tsdu();
        let mut buf = vec![0u8; 256 * tsdu];
        loop {
            let n = input.read(&mut buf).await.context("reading the input")?;
            if n == 0 {
                break;
            }
            let block = buf.get(..n).unwrap_or_default();
            hash.update(block);
            for chunk in block.chunks(tsdu) {
                // Waits while congestion control holds the queue full; look up now and then.
                loop {
                    match tokio::time::timeout(Duration::from_secs(1), tx.write(chunk)).await {
                        Ok(r) => {
                            r.context("sending")?;
                            break;
                        }
                        Err(_) => {
                            let st = tx.status();
                            warn_if_no_acker(&st, cc_on, &mut warned, &pb);
                            pb.set_message(sender_message(&st));
                        }
                    }
                }
            }
            total += n as u64;
            pb.set_position(total);
            let st = tx.status();
            warn_if_no_acker(&st, cc_on, &mut warned, &pb);
            pb.set_message(sender_message(&st));
        }
        let sending_secs = started.elapsed().as_secs_f64();
        pb.set_message("input done; serving repairs until receivers are quiet (--linger)");
        let (tsi, source) = (tx.tsi(), tx.local_addr());
        let status = tx.close().await.context("closing the session")?;
        pb.finish_and_clear();
        let sha = hex_string(&hash.finalize());
        let secs = status.elapsed_secs;
        // Until the last byte left as ODATA (the core queues what `write` hands it).
        let sending_secs = status.data_sent_secs.unwrap_or(sending_secs);
        eprintln!(
            "pgmcc send: sent {total} bytes in {sending_secs:.1} s ({:.2} Mbit/s; {secs:.1} s with the linger), {} repairs, {} NAKs; sha256 {sha}",
            total as f64 * 8.0 / sending_secs.max(1e-9) / 1e6,
            status.stats.rdata_packets,
            status.stats.naks_received,
        );
        if let Some(path) = &args.net.stats {
            write_stats(
                path,
                &SendReport {
                    tsi: tsi.to_string(),
                    source,
                    bytes: total,
                    sha256: sha,
                    sending_seconds: sending_secs,
                    seconds: secs,
                    status,
                },
            )?;
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// pgmcc needs a receiver that answers its election with ACKs; OpenPGM receivers never do
/// (their PGMCC is broken, docs/interop.md), and the session then crawls at one packet per
/// stall timeout. Say so once instead of looking hung.
fn warn_if_no_acker(
    st: &pgmcc_net::SenderStatus,
    cc_on: bool,
    warned: &mut bool,
    pb: &ProgressBar,
) {
    if cc_on
        && !*warned
        && st.elapsed_secs > 5.0
        && st.acker.is_none()
        && st.stats.acks_received == 0
    {
        *warned = true;
        pb.suspend(|| {
            eprintln!("pgmcc send: warning: no receiver has answered pgmcc's acker election in 5 s; receivers without pgmcc (OpenPGM's, for one) never ACK, so the session crawls. For them use --cc none --rate-max RATE, or add one pgmcc receiver to the group to act as acker.");
        });
    }
}

fn sender_message(st: &pgmcc_net::SenderStatus) -> String {
    let mut m = String::new();
    if let Some(a) = st.acker {
        m.push_str(&format!("acker {a}"));
        if let Some(l) = st.acker_loss {
            m.push_str(&format!(" loss {:.2}%", l * 100.0));
        }
    }
    if let Some(w) = st.window {
        m.push_str(&format!(" window {w:.1}"));
    }
    m.push_str(&format!(
        " NAKs {} repairs {}",
        st.stats.naks_received, st.stats.rdata_packets
    ));
    m
}

fn hex_string(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Serialize)]
struct RecvReport {
    outcome: &'static str,
    detail: String,
    tsi: Option<String>,
    bytes: u64,
    sha256: String,
    status: pgmcc_net::ReceiverStatus,
}

/// Where received bytes go: a temporary file renamed on success, or standard output. Both
/// buffered; [`Output::flush`] runs whenever no more data is waiting.
enum Output {
    File {
        tmp: std::io::BufWriter<tempfile::NamedTempFile>,
        dest: PathBuf,
    },
    /// Standard output through a plain `File` on its descriptor: `std::io::Stdout` is
    /// line-buffered and would scan binary data for newlines.
    Stdout(std::io::BufWriter<std::fs::File>),
}

impl Output {
    fn open(path: &Path) -> Result<Output> {
        const BUF: usize = 1 << 20;
        if path == Path::new("-") {
            use std::os::fd::AsFd;
            let fd = std::io::stdout()
                .as_fd()
                .try_clone_to_owned()
                .context("duplicating standard output")?;
            return Ok(Output::Stdout(std::io::BufWriter::with_capacity(
                BUF,
                std::fs::File::from(fd),
            )));
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = tempfile::Builder::new()
            .prefix(".pgmcc-recv-")
            .tempfile_in(&dir)
            .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
        Ok(Output::File {
            tmp: std::io::BufWriter::with_capacity(BUF, tmp),
            dest: path.to_path_buf(),
        })
    }

    fn write(&mut self, data: &[u8]) -> Result<()> {
        match self {
            Output::File { tmp, .. } => tmp.write_all(data).context("writing the output file"),
            Output::Stdout(s) => s.write_all(data).context("writing to standard output"),
        }
    }

    /// Pushes buffered bytes out (to the pipe or terminal for standard output).
    fn flush(&mut self) -> Result<()> {
        match self {
            Output::File { tmp, .. } => tmp.flush().context("writing the output file"),
            Output::Stdout(s) => s.flush().context("writing to standard output"),
        }
    }

    /// Keeps the data: renames the temporary file into place.
    fn commit(self) -> Result<()> {
        match self {
            Output::File { tmp, dest } => {
                let tmp = tmp
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .context("writing the output file")?;
                tmp.as_file()
                    .sync_all()
                    .context("flushing the output file")?;
                tmp.persist(&dest)
                    .map_err(|e| e.error)
                    .with_context(|| format!("renaming the output into {}", dest.display()))?;
                Ok(())
            }
            Output::Stdout(mut s) => s.flush().context("writing to standard output"),
        }
    }
}

/// SIGINT and SIGTERM, so `pgmcc recv` can remove its temporary file and say what it got.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            int: signal(SignalKind::interrupt()).context("installing a SIGINT handler")?,
            term: signal(SignalKind::terminate()).context("installing a SIGTERM handler")?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}

/// Runs `pgmcc recv`.
pub(crate) fn recv(args: &RecvArgs) -> Result<ExitCode> {
    let group = args.net.group()?;
    let mut opts = ReceiverOptions::new(group, args.net.group.port());
    opts.interface = args.net.iface.clone();
    opts.encapsulation = args.net.encapsulation();
    opts.pgmcc = !args.no_pgmcc;
    opts.drop_every = args.drop_every;
    let mut out = Output::open(&args.out)?;
    let rt = runtime()?;
    rt.block_on(async {
        let mut rx = Receiver::bind(opts).await.context("joining the group")?;
        if !args.net.quiet {
            eprintln!(
                "pgmcc recv: joined {}:{} as {}; waiting for a session",
                group,
                args.net.group.port(),
                rx.local_addr()
            );
        }
        let pb = progress(args.net.quiet, None);
        let mut hash = Sha256::new();
        let mut total = 0u64;
        let mut session = None;
        let mut first = None;
        let mut failure: Option<String> = None;
        let mut zmq = args.zmq.then(pgmcc_net::zmq::ZmqDecoder::default);
        let mut stop = Signals::new()?;
        let mut interrupted = false;
        let mut zmq_parts = 0u64;
        loop {
            let ready = match rx.try_read() {
                Some(ev) => Some(ev),
                None => {
                    // Nothing waiting: hand what we have to the file or pipe.
                    out.flush()?;
                    None
                }
            };
            let next = match ready {
                Some(ev) => Ok(Some(ev)),
                None => tokio::select! {
                    r = tokio::time::timeout(args.idle_timeout, rx.read()) => r,
                    () = stop.recv() => {
                        // Interrupted: the transfer is incomplete; the temporary file goes.
                        failure = Some("interrupted by a signal before the stream ended".into());
                        interrupted = true;
                        break;
                    }
                },
            };
            let ev = match next {
                Ok(Some(ev)) => ev,
                Ok(None) => {
                    failure = Some("the receiver stopped unexpectedly".into());
                    break;
                }
                Err(_) => {
                    failure = Some(match session {
                        None => format!(
                            "no session heard in {:?} (--idle-timeout)",
                            args.idle_timeout
                        ),
                        Some(tsi) => format!(
                            "session {tsi} went silent for {:?} before it ended (--idle-timeout): the source stopped or the network failed",
                            args.idle_timeout
                        ),
                    });
                    break;
                }
            };
            match ev {
                Event::SessionStarted { tsi, first_sqn } if session.is_none() => {
                    session = Some(tsi);
                    first = Some(first_sqn);
                    pb.set_message(format!("session {tsi}"));
                }
                Event::Data { tsi, data, .. } if Some(tsi) == session => {
                    hash.update(&data);
                    total += data.len() as u64;
                    match zmq.as_mut() {
                        None => out.write(&data)?,
                        Some(d) => match d.push(&data) {
                            Ok(parts) => {
                                for p in parts {
                                    zmq_parts += 1;
                                    out.write(&p.body)?;
                                    out.write(b"\n")?;
                                }
                            }
                            Err(e) => {
                                failure = Some(format!("not ZeroMQ framing: {e}"));
                                break;
                            }
                        },
                    }
                    pb.set_position(total);
                }
                Event::Unrecoverable { tsi, first, last } if Some(tsi) == session => {
                    failure = Some(format!(
                        "unrecoverable loss of packets {first}..={last} of session {tsi} (the source no longer had them, or repairs failed)"
                    ));
                    break;
                }
                Event::SessionEnded { tsi, syn_sqn } if Some(tsi) == session => {
                    if (syn_sqn.is_none() || syn_sqn != first) && !args.zmq {
                        let why = match syn_sqn {
                            Some(s) => format!("the stream starts at packet {s} but this receiver joined at packet {}", first.unwrap_or_default()),
                            None => "this receiver never saw the stream's first packet (it joined late, or the source does not mark it with OPT_SYN, as OpenPGM does not)".into(),
                        };
                        if !args.allow_partial_start {
                            failure = Some(format!(
                                "{why}; the output would be missing its beginning (pass --allow-partial-start to keep it anyway)"
                            ));
                        } else {
                            eprintln!("pgmcc recv: warning: {why}");
                        }
                    }
                    break;
                }
                Event::SessionExpired { tsi } if Some(tsi) == session => {
                    failure = Some(format!(
                        "session {tsi} was silent so long that it expired before it ended"
                    ));
                    break;
                }
                _ => {}
            }
        }
        pb.finish_and_clear();
        let status = rx.close().await;
        let sha = hex_string(&hash.finalize());
        let report = RecvReport {
            outcome: if failure.is_some() { "incomplete" } else { "complete" },
            detail: failure.clone().unwrap_or_default(),
            tsi: session.map(|t| t.to_string()),
            bytes: total,
            sha256: sha.clone(),
            status,
        };
        if let Some(path) = &args.net.stats {
            write_stats(path, &report)?;
        }
        match failure {
            None => {
                out.commit()?;
                eprintln!(
                    "pgmcc recv: received {total} bytes, complete; {} repairs, {} NAKs sent; sha256 {sha}",
                    report.status.stats.gaps_filled, report.status.stats.naks_sent
                );
                if args.zmq {
                    eprintln!("pgmcc recv: {zmq_parts} ZeroMQ message parts");
                }
                Ok(ExitCode::SUCCESS)
            }
            Some(why) => {
                // A file output is discarded (the temporary file is removed on drop).
                let kept = if matches!(out, Output::Stdout(_)) {
                    "the bytes already written to standard output are incomplete"
                } else {
                    "no output file was written"
                };
                eprintln!(
                    "pgmcc recv: error: {why}; received {total} bytes (sha256 {sha}); {kept}"
                );
                // 130: the shell's code for "ended by SIGINT"; 1: the transfer failed.
                Ok(ExitCode::from(if interrupted { 130 } else { 1 }))
            }
        }
    })
}
