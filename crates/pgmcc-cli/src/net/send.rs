//! `pgmcc send`: multicast a file, a directory tree or standard input, reliably and
//! congestion controlled.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use indicatif::ProgressBar;
use pgmcc::cc::Controller;
use pgmcc_net::transfer::send::{NextPassReason, PassDecision, TransferSender, Verdict};
use pgmcc_net::DeliveryStatus::{self, AwaitingPass, Complete};
use pgmcc_net::{CcConfig, Sender, SenderOptions};
use serde::Serialize;

use super::args::{controller_parser, key_hints, parse_duration, parse_rate, NetArgs, Peer};
use super::feed::{send_input, Read};
use super::input::Input;
use super::metrics::SendMetrics;
use super::report::{hex_string, printable, progress, write_stats, LineProgress};
use super::send_progress::Shown;
use super::{runtime, Signals};

/// Arguments of `pgmcc send`.
#[derive(Debug, ClapArgs)]
pub(crate) struct SendArgs {
    #[command(flatten)]
    net: NetArgs,
    /// What to send: a file; a directory or several files and directories (sent as one tar
    /// archive, which `pgmcc recv -D DIR` writes out as a tree: each input under its own
    /// name, symbolic links as links, devices and FIFOs left out); or `-` for standard input
    /// (a live stream: data goes out as it is read, in full packets; bytes that do not fill
    /// one go out when the input pauses for 20 ms).
    #[arg(value_name = "FILE|DIR|-", required = true, num_args = 1..)]
    inputs: Vec<PathBuf>,
    /// Ceiling on the send rate, e.g. 20Mbit, 500kbit (bits per second of PGM packets)
    /// [default: none; with --cc none, always set one].
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    rate_max: Option<u64>,
    /// Congestion control, by the names scenarios and the comparison matrix use: the
    /// default, `pgmcc`, is our recommended pgmcc; `pgmcc-paper` is the algorithm as
    /// published, for comparisons (docs/pgmcc.md).
    /// [default: pgmcc; none with --peer openpgm or zeromq]
    #[arg(long, value_name = "CC", value_parser = controller_parser())]
    cc: Option<Controller>,
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
    /// After the end of the input, keep answering NAKs until none arrived for this long (at
    /// least ten group RTTs, one NAK round of the farthest receiver, once measured).
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    linger: Duration,
    /// Repair losses with FEC parity over groups of N packets (a power of two, 2 to 128): one
    /// parity packet repairs different losses at different receivers. Our receivers use it;
    /// OpenPGM receivers ignore it and NAK as usual, but may be confused by parity others
    /// asked for: use 0 (selective repairs only) when OpenPGM receivers are in the group.
    /// [default: 64; 0 with --peer openpgm or zeromq]
    #[arg(long, value_name = "N", value_parser = parse_fec)]
    fec: Option<u32>,
    /// Also send H parity packets right after every group of --fec packets, unasked
    /// (pro-active parity, RFC 3208 §11.4): a receiver that lost at most H packets of a
    /// group rebuilds them without a NAK, a round trip sooner. They add H/N to the rate,
    /// outside congestion control as repairs are, within the repair budget. H is at most N.
    #[arg(long, value_name = "H", default_value_t = 0)]
    proactive_parity: u32,
    /// Packets kept for repairs (TXW_SQNS). Each is kept at least until receivers' NAKs for
    /// it can have arrived (about 7 group round trips), so the sender sends at most this
    /// many packets per 7 round trips: the default, about 23 MB of 1,400-byte packets,
    /// allows about 260 Mbit/s at 100 ms and 65 Mbit/s at 400 ms. Raise it for faster paths.
    #[arg(long, value_name = "PACKETS", default_value_t = 16384)]
    txw: u32,
    /// Give up, and exit 1, when no receiver has sent anything (ACK, NAK) for this long while
    /// data is still to be sent: everyone left, or nobody is listening. Applies with a
    /// congestion controller (its acker answers every packet); 0 never gives up.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    feedback_timeout: Duration,
    /// Give up, and exit 1, if the session is not over this long after it started (linger
    /// included) [default: no limit].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    max_duration: Option<Duration>,
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
    /// Signed mode, for groups whose receivers must not be able to forge the data: sign it
    /// with the secret key in FILE (make a pair with `pgmcc keygen --sign FILE`); receivers
    /// given FILE.pub (`recv --trust FILE.pub`) deliver nothing this key did not sign, and
    /// NAK forged packets again. Costs about one packet in 80. Works with or without --key;
    /// OpenPGM and ZeroMQ receivers would see the signatures as data.
    #[arg(long, value_name = "FILE")]
    sign: Option<PathBuf>,
    /// Wait for delivery reports and exit 1 unless they all say "complete" with this
    /// transfer's sha256: a number of receivers (`--expect 10`), or their addresses
    /// (`--expect 10.0.0.2,10.0.0.3`). Every `pgmcc recv` reports how it ended; the table of
    /// reports is printed either way.
    #[arg(long, value_name = "N|ADDR,...", value_parser = parse_expect)]
    expect: Option<pgmcc_net::Expect>,
    /// How long after the data went out to wait for the --expect reports (in each pass).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    expect_timeout: Duration,
    /// After the linger, how long to wait on for the delivery report of each receiver heard
    /// from (one that ACKed or NAKed) that has not sent one: a receiver reports once its
    /// output is verified and on disk, which for a large file can outlast the linger. A
    /// transfer some such receiver never confirms exits 3. [default: 10s; 0 with --peer
    /// openpgm or zeromq, whose receivers never report]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    report_wait: Option<Duration>,
    /// Send the input up to N times, each pass a session of its own announcing that another
    /// follows: a receiver that joined late, or lost data the source could no longer repair,
    /// keeps what it got and completes it from the next pass, as uftp's restart does. The
    /// next pass goes out only while some receiver reports part of the stream or, with
    /// --expect, until every expected receiver confirmed it. Not for standard input.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    passes: u32,
}

/// The `--stats` report of a session that did not finish (aborted, or given up): no sha256,
/// the times are the session's.
fn unfinished(
    tsi: pgm_wire::Tsi,
    source: Ipv4Addr,
    bytes: u64,
    status: pgmcc_net::SenderStatus,
) -> SendReport {
    SendReport {
        tsi: tsi.to_string(),
        source,
        bytes,
        sha256: String::new(),
        sending_seconds: status.elapsed_secs,
        seconds: status.elapsed_secs,
        status,
        passes: 1,
    }
}

impl SendArgs {
    /// `--cc`, or the default: pgmcc, or none for `--peer openpgm` or `zeromq` (their
    /// receivers never ACK).
    fn cc(&self) -> Controller {
        self.cc.unwrap_or(if self.net.libpgm_peer() {
            Controller::None
        } else {
            Controller::Pgmcc
        })
    }
}

/// `--expect`: a count of receivers, or a comma-separated list of their IPv4 addresses.
fn parse_expect(s: &str) -> Result<pgmcc_net::Expect, String> {
    if let Ok(n) = s.trim().parse::<usize>() {
        if n == 0 {
            return Err("expect at least one receiver".into());
        }
        return Ok(pgmcc_net::Expect::Receivers(n));
    }
    let hosts = s
        .split(',')
        .map(|h| {
            h.trim()
                .parse::<Ipv4Addr>()
                .map(std::net::IpAddr::V4)
                .map_err(|_| format!("`{h}` is neither a number of receivers nor an IPv4 address"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(pgmcc_net::Expect::Hosts(hosts))
}

/// The delivery reports as a table for the terminal: each receiver's latest report, then
/// the expected receivers that sent none, then those heard from that sent none. With
/// `libpgm` peers (`--peer`) a receiver heard from without a report is not a failure:
/// OpenPGM and ZeroMQ receivers send none.
fn report_table(transfer: &TransferSender, libpgm: bool) -> Vec<String> {
    let mut lines = Vec::new();
    for r in transfer.reports() {
        let what = if transfer.good(r) {
            "complete, sha256 matches".to_string()
        } else if r.status == Complete {
            format!("complete but sha256 {} differs", r.sha256)
        } else if r.status == DeliveryStatus::Partial {
            format!("PARTIAL: {}", printable(&r.reason))
        } else if r.status == AwaitingPass {
            format!("WAITING for another pass: {}", printable(&r.reason))
        } else {
            format!("FAILED: {}", printable(&r.reason))
        };
        lines.push(format!(
            "  {:<15} {:>12} bytes  {what}",
            r.receiver, r.bytes
        ));
    }
    for a in transfer.unreported_expected() {
        lines.push(format!("  {a:<15} {:>12}        NO REPORT", "-"));
    }
    // Receivers that took part (NAKed or ACKed) but did not say how it ended: gone, or
    // their reports lost.
    for a in transfer.heard_without_report() {
        lines.push(if libpgm {
            format!(
                "  {a:<15} {:>12}        no report (heard from; OpenPGM and ZeroMQ receivers send none)",
                "-"
            )
        } else {
            format!(
                "  {a:<15} {:>12}        NO REPORT (heard from during the session)",
                "-"
            )
        });
    }
    lines
}

/// What `--stats` holds after a send.
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
    /// Passes sent (`--passes`); each receiver's latest report over them is in `status`.
    passes: u32,
}

/// Runs `pgmcc send`.
pub(crate) fn send(args: &SendArgs) -> Result<ExitCode> {
    let group = args.net.group()?;
    let (opts, keyed) = sender_options(args, group)?;
    let cc_on = args.cc() != Controller::None;
    let input = Input::open(&args.inputs)?;
    let meta = input.metadata()?;
    let len = input.size(meta.as_ref());
    let manifest = input.manifest(meta.as_ref(), args.inputs.len());
    if let Input::Tree(_, t) = &input {
        for p in t.skipped() {
            eprintln!(
                "pgmcc send: warning: {} is not a file, directory or link (a device, FIFO or socket): not sent",
                p.display()
            );
        }
    }
    if args.passes > 1 && matches!(input, Input::Stdin) {
        bail!("--passes needs a file or directory: standard input cannot be read twice");
    }
    let metrics = args.net.metrics.map(|_| Arc::new(SendMetrics::default()));
    let ctx = PassCtx {
        args,
        group,
        len,
        cc_on,
        zeromq: args.net.peer == Some(Peer::ZeroMq),
        keyed: &keyed,
        metrics: metrics.as_ref(),
    };
    let rt = runtime()?;
    rt.block_on(run_passes(&ctx, &opts, input, &manifest))
}

/// The source's options from the arguments, checked, and ", keyed (key ...)" and the like
/// for the session line.
fn sender_options(args: &SendArgs, group: Ipv4Addr) -> Result<(SenderOptions, String)> {
    let mut opts = SenderOptions::new(group, args.net.group.port());
    opts.interface = args.net.iface.clone();
    opts.encapsulation = args.net.encapsulation();
    opts.ttl = args.ttl;
    opts.multicast_loop = !args.no_loop;
    // The input is cut into packet-sized messages: nothing fragments, so every data packet
    // fills the MTU.
    opts.whole_packets = true;
    opts.rate_limit = args.rate_max;
    opts.end.linger = args.linger;
    opts.txw_sqns = args.txw.max(1);
    let zeromq = args.net.peer == Some(Peer::ZeroMq);
    if zeromq && (args.sign.is_some() || args.net.has_key()) {
        bail!("--peer zeromq cannot be combined with --key or --sign: a ZeroMQ subscriber can neither open sealed packets nor skip signatures in its stream");
    }
    let openpgm = args.net.libpgm_peer();
    let fec = args.fec.unwrap_or(if openpgm { 0 } else { 64 });
    opts.fec = (fec > 0).then_some(fec);
    if args.proactive_parity > 0 && (fec == 0 || args.proactive_parity > fec) {
        bail!(
            "--proactive-parity {}: needs --fec and at most its group size ({fec})",
            args.proactive_parity
        );
    }
    opts.proactive_parity = args.proactive_parity;
    opts.gso_segments = usize::from(args.gso);
    opts.cc = cc_config(args, opts.max_tpdu)?;
    opts.key = args.net.key()?;
    opts.end.feedback_timeout = (!args.feedback_timeout.is_zero()).then_some(args.feedback_timeout);
    opts.end.max_duration = args.max_duration;
    opts.end.expect = args.expect.clone();
    opts.end.expect_timeout = args.expect_timeout;
    opts.end.report_wait = args.report_wait.unwrap_or(if openpgm {
        Duration::ZERO
    } else {
        DEFAULT_REPORT_WAIT
    });
    opts.sign = args
        .sign
        .as_deref()
        .map(pgmcc_net::SourceKey::load)
        .transpose()?;
    opts.also_listen = args.net.also_listen();
    let keyed: String = [
        opts.also_listen
            .map(|_| format!(", NAKs heard on {}", upstream_ports(&opts))),
        opts.key
            .as_ref()
            .map(|k| format!(", keyed (key {})", k.id())),
        opts.sign
            .as_ref()
            .map(|k| format!(", signed (key {})", k.id())),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let (true, Some(hint)) = (zeromq, args.rate_max.and_then(zeromq_rate_hint)) {
        eprintln!("pgmcc send: warning: {hint}");
    }
    if openpgm && args.cc() == Controller::None && args.rate_max.is_none() {
        let peer = if zeromq { "zeromq" } else { "openpgm" };
        bail!("--peer {peer} sends without congestion control ({} receivers never ACK, so pgmcc would crawl): give --rate-max, e.g. 20Mbit, below what the path to every receiver carries", if zeromq { "ZeroMQ's" } else { "OpenPGM" });
    }
    if args.cc() == Controller::None && args.rate_max.is_none() {
        eprintln!("pgmcc send: warning: --cc none without --rate-max sends as fast as the host can, which congests any real network");
    }
    Ok((opts, keyed))
}

/// The passes, each a session of its own sending the whole input, as the transfer's
/// policy ([`TransferSender`]) asks for them; then the key hints, `--stats` and the exit
/// code.
async fn run_passes(
    ctx: &PassCtx<'_>,
    opts: &SenderOptions,
    input: Input,
    manifest: &pgm_wire::Manifest,
) -> Result<ExitCode> {
    let args = ctx.args;
    if let (Some(addr), Some(m)) = (args.net.metrics, ctx.metrics) {
        let at = super::metrics::serve(addr, m.clone()).await?;
        eprintln!("pgmcc send: metrics at http://{at}/metrics");
    }
    // Ctrl-C (or SIGTERM) aborts: receivers are told at once (OPT_RST).
    let mut stop = Signals::new()?;
    let started = std::time::Instant::now();
    let mut transfer = TransferSender::new(args.passes, args.expect.clone());
    transfer.input_opened(ctx.len)?;
    let mut input = Some(input);
    let (mut report, code) = loop {
        let this = match input.take() {
            Some(i) => i,
            None => {
                // Read again for the next pass: it must be the same stream.
                let i = Input::open(&args.inputs)?;
                if let Err(e) = transfer.input_opened(i.size(i.metadata()?.as_ref())) {
                    bail!("{e}; nothing more sent");
                }
                i
            }
        };
        let plan = transfer.pass_options();
        let mut opts = opts.clone();
        if let (Some(max), true) = (args.max_duration, plan.pass > 1) {
            // What is left of --max-duration, in whole milliseconds.
            let left = max.saturating_sub(started.elapsed()).as_millis().max(1);
            opts.end.max_duration = Some(Duration::from_millis(
                u64::try_from(left).unwrap_or(u64::MAX),
            ));
        }
        opts.end.expect = plan.expect.clone();
        // From the second pass on, receivers know the stream's hash from the start.
        let pass_manifest = pgm_wire::Manifest {
            sha256: plan.sha256,
            another_pass: plan.another_pass,
            ..manifest.clone()
        };
        opts.manifest = Some(pass_manifest.clone());
        let (pass, passes) = (plan.pass, transfer.passes());
        match one_pass(ctx, opts, this, pass_manifest, &mut transfer, &mut stop).await? {
            PassEnd::Stopped(report, code) => {
                // A later pass that stopped (nobody answered it, or Ctrl-C) does not undo
                // the earlier ones: say who has the stream so far.
                if pass > 1 {
                    let prefix = format!("after {} of {passes} passes, ", pass - 1);
                    print_reports(
                        &prefix,
                        transfer.reports().len(),
                        &report_table(&transfer, args.net.libpgm_peer()),
                    );
                }
                break (report, code);
            }
            PassEnd::Unanswered(report) => {
                let lines = report_table(&transfer, args.net.libpgm_peer());
                print_reports("", transfer.reports().len(), &lines);
                break (report, verdict_code(&transfer, &transfer.verdict(), args));
            }
            PassEnd::Sent(report) => match transfer.pass_ended(&report.status) {
                PassDecision::NextPass { why } => {
                    let why = match why {
                        NextPassReason::NotConfirmed => {
                            "not every --expect receiver confirmed it".to_string()
                        }
                        why => why.to_string(),
                    };
                    eprintln!(
                        "pgmcc send: pass {pass} of {passes} done; {why}: pass {} follows",
                        pass + 1
                    );
                }
                PassDecision::Done(verdict) => {
                    break (report, transfer_done(&transfer, &verdict, args))
                }
            },
        }
    };
    if transfer.passes() > 1 {
        report.passes = transfer.pass();
        report.status.reports = transfer.reports().to_vec();
        report.status.heard = transfer.heard().to_vec();
    }
    let st = &report.status;
    for hint in key_hints(
        st.keyed.as_ref(),
        st.sealed_without_key,
        pgmcc_net::keyed::START_SLACK,
    ) {
        eprintln!("pgmcc send: warning: {hint}");
    }
    if let Some(path) = &args.net.stats {
        write_stats(path, &report)?;
    }
    Ok(code)
}

/// The transfer is over, with `verdict`: why no pass follows if some were left, the
/// reports, and the exit code ([`verdict_code`]).
fn transfer_done(transfer: &TransferSender, verdict: &Verdict, args: &SendArgs) -> ExitCode {
    let (pass, passes) = (transfer.pass(), transfer.passes());
    if pass < passes {
        eprintln!(
            "pgmcc send: no receiver waits for another pass after pass {pass} of {passes}{}: no more passes",
            if args.expect.is_some() { ", and every --expect receiver confirmed" } else { "" }
        );
    }
    let lines = report_table(transfer, args.net.libpgm_peer());
    if !transfer.reports().is_empty() || args.expect.is_some() || !lines.is_empty() {
        print_reports("", transfer.reports().len(), &lines);
    }
    verdict_code(transfer, verdict, args)
}

/// `--report-wait` without `--peer`.
const DEFAULT_REPORT_WAIT: Duration = Duration::from_secs(10);

/// The exit code of a transfer that sent the whole stream with no receiver reporting a
/// failure, but that nothing confirms for every receiver heard from.
const UNCONFIRMED: u8 = 3;

/// The exit code of a transfer with this verdict, said to the user when it is not success:
/// 0 only when delivery reports confirm it (see [`Verdict`]).
fn verdict_code(transfer: &TransferSender, verdict: &Verdict, args: &SendArgs) -> ExitCode {
    let (pass, passes) = (transfer.pass(), transfer.passes());
    match verdict {
        Verdict::NotConfirmed { wanted } => {
            let want = match wanted {
                pgmcc_net::Expect::Receivers(n) => format!("{n} receivers"),
                pgmcc_net::Expect::Hosts(h) => format!("{} named receivers", h.len()),
            };
            eprintln!(
                "pgmcc send: error: --expect {want} to confirm a complete transfer with this sha256 within --expect-timeout ({:?}){}; they did not",
                args.expect_timeout,
                if passes > 1 { format!(" after {pass} passes") } else { String::new() }
            );
            ExitCode::from(1)
        }
        Verdict::SomeFailed => {
            eprintln!("pgmcc send: error: {verdict}");
            ExitCode::from(1)
        }
        Verdict::Unconfirmed { silent, .. } => {
            let why = if args.net.libpgm_peer() {
                " (OpenPGM and ZeroMQ receivers send no delivery report: with --peer this is how a transfer ends)"
            } else if *silent > 0 {
                " (a receiver reports once its output is verified and on disk: a longer --report-wait waits for slow ones)"
            } else {
                ""
            };
            eprintln!("pgmcc send: warning: the whole stream was sent, but {verdict}{why}");
            ExitCode::from(UNCONFIRMED)
        }
        _ => ExitCode::SUCCESS,
    }
}

/// "pgmcc send: {prefix}N delivery reports:" and the table's lines.
fn print_reports(prefix: &str, n: usize, lines: &[String]) {
    eprintln!(
        "pgmcc send: {prefix}{n} delivery report{}:",
        if n == 1 { "" } else { "s" }
    );
    for l in lines {
        eprintln!("{l}");
    }
}

/// What every pass needs besides its options and input.
#[derive(Clone, Copy)]
struct PassCtx<'a> {
    args: &'a SendArgs,
    group: Ipv4Addr,
    /// The input's size, when known.
    len: Option<u64>,
    cc_on: bool,
    zeromq: bool,
    /// ", keyed (key ...)" and the like, for the session line.
    keyed: &'a str,
    /// `--metrics`: what the endpoint serves.
    metrics: Option<&'a Arc<SendMetrics>>,
}

/// How a pass ended.
enum PassEnd {
    /// The data went out and the linger is over: the report (its sha256 filled in).
    Sent(SendReport),
    /// Interrupted, the input failed, or the source gave up: the report and the exit code.
    Stopped(SendReport, ExitCode),
    /// A later pass that nobody took part in (no ACK, no NAK, no report until the feedback
    /// timeout): what was asked for it may not have come from a receiver.
    Unanswered(SendReport),
}

/// One pass: a session of its own (a new TSI) that sends the whole input once, lingers for
/// repairs and the delivery reports, and closes.
async fn one_pass(
    ctx: &PassCtx<'_>,
    opts: SenderOptions,
    input: Input,
    manifest: pgm_wire::Manifest,
    transfer: &mut TransferSender,
    stop: &mut Signals,
) -> Result<PassEnd> {
    let PassCtx {
        args,
        group,
        len,
        cc_on,
        zeromq,
        keyed,
        metrics,
    } = *ctx;
    let (pass, passes) = (transfer.pass(), transfer.passes());
    let (input, producer) = input.reader().await?;
    let started = std::time::Instant::now();
    let faults = pgmcc_net::faults::FaultInjector::drop_every(args.drop_every.unwrap_or(0));
    let upstream = upstream_ports(&opts);
    let mut tx = Sender::bind_with_faults(opts, faults)
        .await
        .context("starting the source")?;
    let of = if passes > 1 {
        format!("pass {pass} of {passes}: ")
    } else {
        String::new()
    };
    eprintln!(
        "pgmcc send: {of}session {} from {} to {}:{}{}",
        tx.tsi(),
        tx.local_addr(),
        group,
        args.net.group.port(),
        keyed
    );
    let mut shown = Shown {
        pb: progress(args.net.quiet, len),
        lines: LineProgress::new("pgmcc send", args.net.quiet),
        len,
        cc_on,
        warned: false,
    };
    let aborter = tx.aborter();
    let watch = tx.status_watch();
    if let Some(m) = metrics {
        m.pass_started(watch.clone());
    }
    let mut read = send_input(&mut tx, input, producer, zeromq, &mut shown, stop).await;
    let sending_secs = started.elapsed().as_secs_f64();
    let id = (tx.tsi(), tx.local_addr());
    // Only a whole input's hash says whether it is the first pass's stream.
    if read.whole {
        if let Err(e) = transfer.input_read(read.sha256) {
            read.input_error = Some(e.to_string());
        }
    }
    if read.interrupted || read.input_error.is_some() {
        aborter.abort();
    } else {
        // The SPMs announcing the end carry the stream's hash: receivers verify it.
        tx.set_manifest(pgm_wire::Manifest {
            sha256: Some(read.sha256),
            ..manifest
        });
    }
    let closed = close(tx, &aborter, stop, &mut read, &mut shown).await;
    if let Some(m) = metrics {
        m.pass_ended(closed.as_ref().map_or(&watch.get(), |s| s));
    }
    let end = pass_end(closed, &read, id, (&of, pass > 1), sending_secs, &shown.pb)?;
    if let PassEnd::Sent(r) = &end {
        if heard_nothing(&r.status) {
            eprintln!(
                "pgmcc send: {of}note: heard nothing from the group (no NAK, ACK, poll reply or delivery report): receivers that lost packets got no repairs if their NAKs do not reach this host on {upstream}"
            );
        }
    }
    Ok(end)
}

/// What a ZeroMQ subscriber needs to keep up with `rate` bytes/s, when its defaults do not:
/// libzmq sizes a SUB socket's receive window as ZMQ_RATE x ZMQ_RECOVERY_IVL (100 kbit/s x
/// 10 s by default, about 83 packets), so at a higher rate a packet it loses leaves its window
/// before its repair arrives and is skipped without a trace.
fn zeromq_rate_hint(rate: u64) -> Option<String> {
    const ZMQ_DEFAULT_RATE_KBIT: u64 = 100;
    let kbit = rate.saturating_mul(8).div_ceil(1000);
    (kbit > ZMQ_DEFAULT_RATE_KBIT).then(|| {
        let window_ms = ZMQ_DEFAULT_RATE_KBIT * 10_000 / kbit;
        format!(
            "ZeroMQ subscribers keep ZMQ_RATE x ZMQ_RECOVERY_IVL of data for repair, 100 kbit/s x 10 s at their defaults: {window_ms} ms at --rate-max; set ZMQ_RATE to at least {kbit} on every subscriber (zmq_setsockopt), or one that loses a packet may skip it without a trace"
        )
    })
}

/// Where this source hears upstream packets, for messages: "UDP port 3055", "UDP ports
/// 3056 and 3055", "IP protocol 113".
fn upstream_ports(opts: &SenderOptions) -> String {
    match (opts.encapsulation, opts.also_listen) {
        (pgmcc_net::Encapsulation::Udp { ucast_port, .. }, Some(p)) if p != ucast_port => {
            format!("UDP ports {ucast_port} and {p}")
        }
        (pgmcc_net::Encapsulation::Udp { ucast_port, .. }, _) => format!("UDP port {ucast_port}"),
        (pgmcc_net::Encapsulation::RawIp, _) => "IP protocol 113".to_owned(),
    }
}

/// No packet at all came back from the group during the session: no receiver NAKed,
/// ACKed, answered a poll, asked for an SPM or reported its delivery.
fn heard_nothing(status: &pgmcc_net::SenderStatus) -> bool {
    let st = &status.stats;
    status.heard.is_empty()
        && status.reports.is_empty()
        && st.naks_received == 0
        && st.acks_received == 0
        && st.polrs_received == 0
        && st.spmrs_received == 0
}

/// Closes the pass's session: the source drains its queue and lingers for repairs and
/// reports. Progress goes on meanwhile: a file smaller than the queue is read (and queued)
/// at once, and what counts is what has left. Ctrl-C meanwhile aborts the session.
async fn close(
    tx: Sender,
    aborter: &pgmcc_net::Aborter,
    stop: &mut Signals,
    read: &mut Read,
    shown: &mut Shown,
) -> Result<pgmcc_net::SenderStatus, pgmcc_net::Error> {
    let watch = tx.status_watch();
    let close = tx.close();
    tokio::pin!(close);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            r = &mut close => break r,
            () = stop.recv() => {
                // Interrupted while lingering: stop serving repairs, tell receivers.
                read.interrupted = true;
                aborter.abort();
                break close.await;
            }
            _ = tick.tick() => {
                let st = watch.get();
                if st.data_sent_secs.is_none() {
                    shown.progress(&st, read.total);
                } else {
                    shown.pb.set_position(st.stats.odata_bytes.min(read.total));
                    shown.pb.set_message("all data sent; serving repairs until receivers are quiet (--linger)");
                }
            }
        }
    }
}

/// How a pass ended, said on the terminal: the session `id` (TSI, source address) closed
/// as `closed` after the input was `read`; `of` prefixes the line ("pass 2 of 3: ") and
/// `later` says the pass is not the first, `sending_secs` is how long reading and queueing
/// took, and `pb` the bar, cleared.
fn pass_end(
    closed: Result<pgmcc_net::SenderStatus, pgmcc_net::Error>,
    read: &Read,
    (tsi, source): (pgm_wire::Tsi, Ipv4Addr),
    (of, later): (&str, bool),
    sending_secs: f64,
    pb: &ProgressBar,
) -> Result<PassEnd> {
    let total = read.total;
    let (report, code) = match closed {
        Ok(status) if read.input_error.is_some() => {
            pb.finish_and_clear();
            eprintln!(
                "pgmcc send: error: {}; stopped after {:.1} s with {total} bytes sent, {} data packets; receivers were told the session is aborted (OPT_RST)",
                read.input_error.as_deref().unwrap_or_default(),
                status.elapsed_secs,
                status.stats.odata_packets
            );
            (unfinished(tsi, source, total, status), ExitCode::from(1))
        }
        Ok(status) if read.interrupted => {
            pb.finish_and_clear();
            eprintln!(
                "pgmcc send: interrupted after {:.1} s: {total} bytes of the input read, {} data packets sent; receivers were told the session is aborted (OPT_RST)",
                status.elapsed_secs, status.stats.odata_packets
            );
            // 130: the shell's code for "ended by SIGINT".
            (unfinished(tsi, source, total, status), ExitCode::from(130))
        }
        Ok(status) => {
            pb.finish_and_clear();
            let sha = hex_string(&read.sha256);
            let secs = status.elapsed_secs;
            // Until the last byte left as ODATA (the core queues what `write` hands it).
            let sending_secs = status.data_sent_secs.unwrap_or(sending_secs);
            eprintln!(
                "pgmcc send: {of}sent {total} bytes in {sending_secs:.1} s ({:.2} Mbit/s; {secs:.1} s with the linger), {} repairs, {} NAKs; sha256 {sha}",
                total as f64 * 8.0 / sending_secs.max(1e-9) / 1e6,
                status.stats.rdata_packets,
                status.stats.naks_received,
            );
            return Ok(PassEnd::Sent(SendReport {
                tsi: tsi.to_string(),
                source,
                bytes: total,
                sha256: sha,
                sending_seconds: sending_secs,
                seconds: secs,
                status,
                passes: 1,
            }));
        }
        Err(pgmcc_net::Error::Abandoned { reason, status })
            if later
                && matches!(
                    reason,
                    pgmcc_net::AbandonReason::NoFeedback {
                        heard_any: false,
                        ..
                    }
                ) =>
        {
            pb.finish_and_clear();
            eprintln!(
                "pgmcc send: {of}no receiver took part in it ({}); the transfer stands on the earlier passes' reports",
                abandoned(&reason)
            );
            return Ok(PassEnd::Unanswered(unfinished(tsi, source, total, *status)));
        }
        Err(pgmcc_net::Error::Abandoned { reason, status }) => {
            pb.finish_and_clear();
            eprintln!(
                "pgmcc send: error: {}; gave up after {:.1} s, {} of the input's bytes read, {} data packets sent",
                abandoned(&reason),
                status.elapsed_secs,
                total,
                status.stats.odata_packets
            );
            (unfinished(tsi, source, total, *status), ExitCode::from(1))
        }
        Err(e) => return Err(e).context("closing the session"),
    };
    Ok(PassEnd::Stopped(report, code))
}

/// Why the source gave up, with the flag that bounds it and what to check.
fn abandoned(reason: &pgmcc_net::AbandonReason) -> String {
    match reason {
        pgmcc_net::AbandonReason::NoFeedback {
            heard_any: false, ..
        } => format!("{reason} (--feedback-timeout): is anyone listening on this group and port, with the same --udp-ports (and --key)?"),
        pgmcc_net::AbandonReason::NoFeedback { .. } => format!("{reason} (--feedback-timeout)"),
        pgmcc_net::AbandonReason::MaxDuration { .. } => format!("{reason} (--max-duration)"),
    }
}

/// The registry's configuration for `--cc`, with the CLI's own knobs set: `--rate-floor` and
/// `--rate-ceiling` for lowweight (refused with any other controller).
fn cc_config(args: &SendArgs, max_tpdu: usize) -> Result<CcConfig> {
    if args.cc() != Controller::LowWeight
        && (args.rate_floor.is_some() || args.rate_ceiling.is_some())
    {
        bail!("--rate-floor and --rate-ceiling are for --cc lowweight (use --rate-max otherwise)");
    }
    let mut cc = args.cc().config();
    if let CcConfig::LowWeight(lw) = &mut cc {
        // Bytes per second of PGM packets to full-size packets per second.
        let pps = |r: Option<u64>| r.map(|b| b as f64 / max_tpdu.max(1) as f64);
        let (floor, ceiling) = (pps(args.rate_floor), pps(args.rate_ceiling));
        if let (Some(f), Some(c)) = (floor, ceiling) {
            if f > c {
                bail!("--rate-floor is above --rate-ceiling");
            }
        }
        lw.floor = floor;
        lw.ceiling = ceiling;
    }
    Ok(cc)
}

/// `--fec N`: 0, or a transmission group size the code supports.
fn parse_fec(s: &str) -> Result<u32, String> {
    let n: u32 = s
        .parse()
        .map_err(|_| format!("`{s}`: a number of packets (0 for none)"))?;
    if n == 0 || pgmcc::fec::valid_tg_size(n) {
        Ok(n)
    } else {
        Err(format!(
            "`{n}`: a power of two from {} to {}, or 0 for no parity",
            pgmcc::fec::MIN_TG_SIZE,
            pgmcc::fec::MAX_TG_SIZE
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use clap::Parser;
    use pgmcc_net::DeliveryStatus;

    use super::*;

    /// `pgmcc send`'s flags alone.
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        send: SendArgs,
    }

    fn parse(extra: &[&str]) -> Result<SendArgs, clap::Error> {
        let args = ["send", "--group", "239.1.1.1:7500"].iter().chain(extra);
        Cli::try_parse_from(args.chain(&["file"])).map(|c| c.send)
    }

    /// 10.0.0.`d`.
    fn ip(d: u8) -> std::net::IpAddr {
        std::net::IpAddr::V4(Ipv4Addr::new(10, 0, 0, d))
    }

    /// A report from 10.0.0.`d` with this status, of the stream [`after_a_pass`] sends.
    fn report(d: u8, status: DeliveryStatus) -> pgmcc_net::DeliveryReport {
        pgmcc_net::DeliveryReport {
            receiver: ip(d),
            status,
            bytes: 5,
            sha256: "ab".repeat(32),
            reason: "why".into(),
        }
    }

    /// A transfer after one pass (of `passes`) that ended with these reports, and these
    /// receivers heard from.
    fn after_a_pass(
        passes: u32,
        expect: Option<pgmcc_net::Expect>,
        reports: &[pgmcc_net::DeliveryReport],
        heard: &[std::net::IpAddr],
    ) -> TransferSender {
        let mut t = TransferSender::new(passes, expect);
        t.input_opened(Some(5)).unwrap();
        t.input_read([0xab; 32]).unwrap();
        t.pass_ended(&pgmcc_net::SenderStatus {
            reports: reports.to_vec(),
            heard: heard.to_vec(),
            ..Default::default()
        });
        t
    }

    #[test]
    fn the_table_says_how_each_receiver_ended() {
        let mut other = report(2, DeliveryStatus::Complete);
        other.sha256 = "cd".repeat(32);
        let reports = [
            report(1, DeliveryStatus::Complete),
            other,
            report(3, DeliveryStatus::Partial),
            report(4, DeliveryStatus::AwaitingPass),
            report(5, DeliveryStatus::Failed),
        ];
        let lines = report_table(&after_a_pass(2, None, &reports, &[]), false);
        let what = [
            "complete, sha256 matches",
            "complete but sha256 cdcd",
            "PARTIAL: why",
            "WAITING for another pass: why",
            "FAILED: why",
        ];
        assert_eq!(lines.len(), what.len());
        for (l, w) in lines.iter().zip(what) {
            assert!(l.contains(w), "{l}: {w}");
        }
        assert_eq!(
            lines[0],
            "  10.0.0.1                   5 bytes  complete, sha256 matches"
        );
    }

    #[test]
    fn a_reason_from_the_network_reaches_the_terminal_escaped() {
        let mut r = report(1, DeliveryStatus::Failed);
        r.reason = "\u{1b}]0;owned\u{7}\u{1b}[2Jgone".into();
        let lines = report_table(&after_a_pass(1, None, &[r], &[]), false);
        assert!(!lines[0].contains('\u{1b}'), "{:?}", lines[0]);
        assert!(lines[0].contains("FAILED: \\x1b]0;owned"), "{:?}", lines[0]);
    }

    #[test]
    fn receivers_heard_without_a_report_are_named() {
        let reports = [
            report(1, DeliveryStatus::Complete),
            report(2, DeliveryStatus::Complete),
        ];
        let heard = [ip(1), ip(2), ip(3)];
        let counted = after_a_pass(1, Some(pgmcc_net::Expect::Receivers(3)), &reports, &heard);
        assert!(!counted.met());
        let lines = report_table(&counted, false);
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[2],
            "  10.0.0.3                   -        NO REPORT (heard from during the session)"
        );
        // With --peer, receivers heard from send no report by design: not shouted.
        let lines = report_table(&after_a_pass(1, None, &[], &heard), true);
        assert_eq!(lines.len(), 3);
        assert!(
            lines
                .iter()
                .all(|l| l
                    .ends_with("no report (heard from; OpenPGM and ZeroMQ receivers send none)"))
        );
        // A named receiver is listed once, as expected and missing.
        let hosts = pgmcc_net::Expect::Hosts(vec![ip(3)]);
        let named = after_a_pass(1, Some(hosts), &reports, &heard);
        assert!(!named.met());
        let lines = report_table(&named, false);
        assert_eq!(lines.iter().filter(|l| l.contains("10.0.0.3")).count(), 1);
        assert_eq!(lines[2], "  10.0.0.3                   -        NO REPORT");
    }

    #[test]
    fn without_cc_the_sender_runs_the_recommended_pgmcc() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.cc(), Controller::Pgmcc);
        let default = SenderOptions::new(Ipv4Addr::new(239, 1, 1, 1), 7500).cc;
        assert_eq!(Controller::of(&default), Controller::Pgmcc);
        assert_eq!(
            cc_config(&args, 1472).unwrap(),
            default,
            "no --cc must run what SenderOptions::new runs"
        );
    }

    #[test]
    fn cc_takes_every_registry_name_and_runs_that_controller() {
        for c in Controller::ALL {
            let args = parse(&["--cc", c.name()]).unwrap();
            assert_eq!(args.cc(), c);
            assert_eq!(Controller::of(&cc_config(&args, 1472).unwrap()), c, "{c}");
        }
    }

    #[test]
    fn zeromq_subscribers_are_told_the_zmq_rate_the_session_needs() {
        assert_eq!(
            zeromq_rate_hint(12_500),
            None,
            "100 kbit/s: the default suffices"
        );
        let hint = zeromq_rate_hint(2_500_000).unwrap();
        assert!(
            hint.contains("at least 20000 on every subscriber"),
            "{hint}"
        );
        assert!(hint.contains(": 50 ms at --rate-max"), "{hint}");
    }

    #[test]
    fn peer_openpgm_turns_off_what_libpgm_receivers_cannot_follow_unless_asked() {
        let args = parse(&["--peer", "openpgm", "--rate-max", "20Mbit"]).unwrap();
        assert_eq!(args.cc(), Controller::None);
        assert_eq!(
            args.net.encapsulation(),
            pgmcc_net::Encapsulation::Udp {
                ucast_port: 3056,
                mcast_port: 3056
            }
        );
        // libpgm receivers at their defaults NAK to 3055: the source hears that port too,
        // unless the ports are given or the encapsulation is raw IP.
        assert_eq!(args.net.also_listen(), Some(3055));
        let raw = parse(&["--peer", "openpgm", "--rate-max", "1Mbit", "--raw-ip"]).unwrap();
        assert_eq!(raw.net.also_listen(), None);
        // Explicit flags win over the preset.
        let args = parse(&["--peer", "openpgm", "--cc", "pgmcc", "--udp-ports", "1,2"]).unwrap();
        assert_eq!(args.cc(), Controller::Pgmcc);
        assert_eq!(
            args.net.encapsulation(),
            pgmcc_net::Encapsulation::Udp {
                ucast_port: 1,
                mcast_port: 2
            }
        );
        assert_eq!(args.net.also_listen(), None);
        assert!(parse(&["--peer", "nope"]).is_err());
    }

    #[test]
    fn an_unknown_cc_is_refused_with_every_valid_name() {
        let e = parse(&["--cc", "pgmcc-realigned"]).unwrap_err().to_string();
        for name in Controller::names() {
            assert!(e.contains(name), "{name} missing from: {e}");
        }
    }
}
