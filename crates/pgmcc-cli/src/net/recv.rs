//! `pgmcc recv`: follow one session from a group into a file, a directory (`-D`) or standard
//! output, verified.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use pgmcc_net::{Event, Receiver, ReceiverOptions};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::args::{key_hints, parse_duration, NetArgs, Peer};
use super::output::Committed;
use super::output::Output;
use super::pieces::{Ranges, Spool};
use super::report::{hex_string, progress, set_size, write_stats, LineProgress};
use super::tree::Symlinks;
use super::{runtime, Signals};

/// Arguments of `pgmcc recv`.
#[derive(Debug, ClapArgs)]
pub(crate) struct RecvArgs {
    #[command(flatten)]
    net: NetArgs,
    /// Where to write the data: a file (written to a temporary file beside it and renamed
    /// only when the whole stream arrived intact; an existing file is replaced only with
    /// --force; permissions follow the umask), or `-` for standard output [default: standard
    /// output, unless it is a terminal].
    #[arg(long, value_name = "FILE|-", conflicts_with = "dir")]
    out: Option<PathBuf>,
    /// Write into this directory (created if missing) what the source announces: its file
    /// under the file's name, or its directory tree (`pgmcc send DIR`). Nothing is written
    /// until the whole stream arrived and verified; a tree's paths never leave DIR, only
    /// files, directories and (with --symlinks keep) symbolic links are written, and nothing
    /// existing is replaced without --force.
    #[arg(short = 'D', long = "dir", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Replace the --out file, or the files and links of a -D tree, if they exist.
    #[arg(long)]
    force: bool,
    /// With -D: what to do with a tree's symbolic links: skip them (and list them), or keep
    /// them as they are (nothing is ever written through one).
    #[arg(long, value_name = "POLICY", value_enum, default_value_t = Symlinks::Skip)]
    symlinks: Symlinks,
    /// Keep listening: receive one session after another into the -D directory, one line
    /// per transfer on standard error (complete or failed, and why; each source gets its
    /// delivery report as usual), until SIGINT or SIGTERM. Sessions are received one at a
    /// time; combine with --source to take only one sender's. --join-timeout does not apply.
    #[arg(long, requires = "dir")]
    daemon: bool,
    /// Give up when the session being received has sent nothing, neither data nor the
    /// heartbeats (SPMs) a live source sends while it has nothing to say, for this long: the
    /// source or the network has gone. A paused live stream is not idle.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    idle_timeout: Duration,
    /// Give up if no session has started this long after joining (0: wait for ever).
    #[arg(long, value_name = "DURATION", default_value = "10min", value_parser = parse_duration)]
    join_timeout: Duration,
    /// Accept a stream whose start this receiver did not see (joined late, or a source that
    /// does not mark its first packet, such as OpenPGM). Without it such a transfer fails.
    #[arg(long)]
    allow_partial_start: bool,
    /// Follow only a session whose packets come from this IPv4 address, the source's. Without
    /// it the first session heard is followed, and a host that starts a fake session first
    /// wins (unless --key is used); with it, packets from any other address are dropped.
    #[arg(long, value_name = "ADDR")]
    source: Option<std::net::Ipv4Addr>,
    /// Follow only the session with this TSI, as `pgmcc send` prints it ("session
    /// 12.34.56.78.90.12.4000"); packets of every other session are dropped.
    #[arg(long, value_name = "TSI")]
    session: Option<pgm_wire::Tsi>,
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
    /// Signed mode: accept only data signed by the source whose public key is in FILE (the
    /// FILE.pub of `pgmcc keygen --sign FILE`, run on the sender). Nothing unsigned reaches
    /// the output, forged packets are dropped and asked for again, and "complete" means
    /// every byte was verified, up to the source's signed end.
    #[arg(long, value_name = "FILE")]
    trust: Option<PathBuf>,
    /// The SHA-256 the whole stream must have (64 hex digits, from a source you trust): a
    /// transfer whose bytes hash otherwise fails and leaves no file. Without it the hash the
    /// source announces with its end is checked, when it sends one.
    #[arg(long, value_name = "HEX", value_parser = parse_sha256)]
    expect_sha256: Option<String>,
}

/// `--expect-sha256`: 64 hex digits, kept in lower case.
fn parse_sha256(s: &str) -> Result<String, String> {
    let h = s.trim().to_ascii_lowercase();
    if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(h)
    } else {
        Err(format!(
            "`{s}` is not a SHA-256: expected 64 hex digits (as sha256sum prints)"
        ))
    }
}

/// What `--stats` holds after a receive: the outcome (and why, if incomplete) with the
/// receiver's counters.
#[derive(Serialize)]
struct RecvReport {
    outcome: &'static str,
    detail: String,
    tsi: Option<String>,
    bytes: u64,
    sha256: String,
    status: pgmcc_net::ReceiverStatus,
}

/// Why to give up now, if the session followed went silent for `--idle-timeout` (by its
/// data and heartbeats, as the core last heard them), or none started within
/// `--join-timeout`.
fn timed_out(
    args: &RecvArgs,
    session: Option<pgm_wire::Tsi>,
    status: &pgmcc_net::ReceiverStatus,
    since_join: Duration,
) -> Option<String> {
    match session {
        None => (!args.daemon
            && !args.join_timeout.is_zero()
            && since_join >= args.join_timeout)
            .then(|| {
            format!(
                "no session heard in {:?} (--join-timeout): is the source running, on this group and port, with the same --udp-ports (and --key)? An OpenPGM source needs --peer openpgm, a ZeroMQ publisher --peer zeromq",
                args.join_timeout
            )
        }),
        Some(tsi) => {
            let silent = status
                .sessions
                .iter()
                .find(|s| s.id == tsi)
                .map_or(f64::INFINITY, |s| s.silent_secs);
            (silent >= args.idle_timeout.as_secs_f64()).then(|| {
                format!(
                    "session {tsi} sent nothing, not even a heartbeat, for {:?} before it ended (--idle-timeout): the source stopped or the network failed",
                    args.idle_timeout
                )
            })
        }
    }
}

/// Gives the written file the source file's modification time (from its manifest), as cp -p
/// and uftp do; a failure only warns.
fn set_mtime(path: &std::path::Path, mtime: u64) {
    if mtime == 0 {
        return;
    }
    let t = std::time::UNIX_EPOCH + Duration::from_secs(mtime);
    let set = std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(t));
    if let Err(e) = set {
        eprintln!(
            "pgmcc recv: warning: could not set {}'s modification time: {e}",
            path.display()
        );
    }
}

/// ", wrote ..." for the final line: what a -D receive put where (and, as a side effect,
/// the source's modification time on a single file, and a warning per tree entry left out).
fn written(
    committed: Option<&Committed>,
    manifest: Option<&pgm_wire::Manifest>,
    dir: bool,
) -> String {
    match (committed, manifest) {
        (Some(Committed::File(path)), Some(m)) => {
            set_mtime(path, m.mtime);
            if dir {
                format!("; wrote {}", path.display())
            } else {
                String::new()
            }
        }
        (Some(Committed::Tree(dir, w)), _) => {
            for why in &w.skipped {
                eprintln!("pgmcc recv: warning: left out {why}");
            }
            format!(
                "; wrote {} files, {} directories{} into {}",
                w.files,
                w.dirs,
                if w.links > 0 {
                    format!(", {} symbolic links", w.links)
                } else {
                    String::new()
                },
                dir.display()
            )
        }
        _ => String::new(),
    }
}

/// What signed mode's counters say, for the user: forgeries refused, or a source that does
/// not sign with the trusted key. Empty when nothing went wrong.
fn signed_hints(c: &pgmcc::signed::SignedCounts, data_packets: u64) -> Vec<String> {
    let mut hints = Vec::new();
    if c.stale > 0 {
        hints.push(format!("{} lists signed by the --trust key were refused because the session they start was signed more than {} s from this host's clock: a replay of an earlier session, or clocks out of step", c.stale, pgmcc_net::keyed::MAX_SKEW.as_secs()));
    }
    if c.lists == 0 && c.stale == 0 && data_packets > 0 {
        hints.push(format!("{data_packets} data packets arrived but no list signed by the --trust key verified: is the sender running with --sign, with the secret half of this key?"));
    }
    if c.forged > 0 {
        hints.push(format!(
            "{} packets did not match the source's signed digests and were dropped (the genuine ones were received or asked for again): someone on the network is forging this session's data",
            c.forged
        ));
    }
    if c.unverifiable > 0 && c.lists > 0 {
        hints.push(format!(
            "{} packets could not be verified (sent before this receiver's first signed list, or their list was lost) and were not delivered",
            c.unverifiable
        ));
    }
    hints
}

/// Runs `pgmcc recv`.
pub(crate) fn recv(args: &RecvArgs) -> Result<ExitCode> {
    let group = args.net.group()?;
    let mut opts = ReceiverOptions::new(group, args.net.group.port());
    opts.interface = args.net.iface.clone();
    opts.encapsulation = args.net.encapsulation();
    opts.pgmcc = !args.no_pgmcc;
    opts.drop_every = args.drop_every;
    opts.source = args.source;
    opts.session = args.session;
    opts.key = args.net.key()?;
    if args.daemon && args.net.stats.is_some() {
        anyhow::bail!("--stats is not written with --daemon: it reports one transfer; the daemon logs one line per transfer to standard error");
    }
    let zmq_framing = args.zmq || args.net.peer == Some(Peer::ZeroMq);
    let allow_partial_start = args.allow_partial_start || args.net.peer.is_some();
    if opts.key.is_some() && zmq_framing {
        anyhow::bail!(
            "--key and --zmq cannot be combined: ZeroMQ publishers do not seal their packets"
        );
    }
    opts.trust = args
        .trust
        .as_deref()
        .map(pgmcc_net::TrustedKey::load)
        .transpose()?;
    if opts.trust.is_some() && zmq_framing {
        anyhow::bail!("--trust and --zmq cannot be combined: ZeroMQ publishers do not sign");
    }
    let signer = opts.trust.as_ref().map(|k| k.id());
    let keyed: String = [
        opts.key
            .as_ref()
            .map(|k| format!(", keyed (key {})", k.id())),
        signer.map(|id| format!(", trusting only data signed by key {id}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let out = match (&args.out, &args.dir) {
        (_, Some(d)) => Output::open_dir(d)?,
        (Some(p), None) => Output::open(p, args.force)?,
        (None, None) => {
            use std::io::IsTerminal;
            if std::io::stdout().is_terminal() {
                anyhow::bail!("standard output is a terminal: give --out FILE to save the data (or --out - to print it anyway)");
            }
            Output::open(std::path::Path::new("-"), args.force)?
        }
    };
    let rt = runtime()?;
    rt.block_on(async {
        let mut rx = Receiver::bind(opts).await.context("joining the group")?;
        if !args.net.quiet {
            eprintln!(
                "pgmcc recv: joined {}:{} as {}{}; waiting for a session",
                group,
                args.net.group.port(),
                rx.local_addr(),
                keyed
            );
        }
        let mut stop = Signals::new()?;
        // One transfer per round; --daemon goes round again, and so does a receiver that
        // holds part of a stream whose source announced another pass.
        let mut next_out = Some(out);
        let mut transfers = 0u64;
        let mut held: Option<Held> = None;
        // Sessions this transfer took (more than one with passes).
        let mut passes = 1u32;
        loop {
            let mut out = match (next_out.take(), &args.dir) {
                (Some(o), _) => o,
                (None, Some(d)) => Output::open_dir(d)?,
                (None, None) => anyhow::bail!("--daemon needs -D DIR"),
            };
            let pb = progress(args.net.quiet, None);
            let mut lines = LineProgress::new("pgmcc recv", args.net.quiet);
            let mut hash = Sha256::new();
            let mut total = 0u64;
            let mut session = None;
            let mut first = None;
            let mut failure: Option<String> = None;
            let mut zmq = zmq_framing.then(pgmcc_net::zmq::ZmqDecoder::default);
            let mut interrupted = false;
            let mut zmq_parts = 0u64;
            let mut manifest: Option<pgm_wire::Manifest> = None;
            // Signed mode: the manifest the source signed with its end list.
            let mut signed_manifest: Option<pgm_wire::Manifest> = None;
            let joined = std::time::Instant::now();
            let mut unsigned_since: Option<std::time::Instant> = None;
            // Passes (`pgmcc send --passes`, pieces.rs): the output is put together from
            // placed runs instead of written straight through (`pieced`) once this receiver
            // holds part of the stream from an earlier session, missed the start, or lost
            // data for good while the source announces another pass.
            if held.is_none() {
                passes = 1;
            }
            let passes_ok = !zmq_framing && out.temp_dir().is_some();
            let mut pieced = held.is_some();
            let mut have = held.as_ref().map(|h| h.have.clone()).unwrap_or_default();
            // Where this session's next byte belongs, when known; the output file's own
            // position (a fresh output is at 0; one holding earlier passes is not known).
            let mut at: Option<u64> = Some(0);
            let mut out_pos: Option<u64> = held.is_none().then_some(0);
            // Data whose place is not known yet (after a missed start or a gap), or that
            // came before this session's manifest showed it carries the stream held.
            let mut spool: Option<Spool> = None;
            let mut matched = held.is_none();
            // Why this session's data is not the whole stream, for the messages.
            let mut gap: Option<String> = None;
            let mut start_missed: Option<String> = None;
            // --allow-partial-start kept a stream whose marked start this receiver missed.
            let mut kept_partial: Option<String> = None;
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
                        // Look up now and then: the timeouts follow the session, not the events.
                        r = tokio::time::timeout(Duration::from_millis(500), rx.read()) => r,
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
                        let status = rx.status();
                        // Trusting a key, hearing data, and no session proves itself: the source
                        // does not sign with that key. Say so after --idle-timeout of it.
                        if signer.is_some() && session.is_none() && status.stats.odata_packets > 0 {
                            let since = *unsigned_since.get_or_insert_with(std::time::Instant::now);
                            if since.elapsed() >= args.idle_timeout {
                                failure = Some(format!("data arrived for {:?} (--idle-timeout) but no session signed by the --trust key", args.idle_timeout));
                                break;
                            }
                        }
                        if let Some(why) = timed_out(args, session, &status, joined.elapsed()) {
                            failure = Some(why);
                            break;
                        }
                        continue;
                    }
                };
                match ev {
                    Event::SessionStarted { tsi, first_sqn } if session.is_none() => {
                        session = Some(tsi);
                        first = Some(first_sqn);
                        pb.set_message(format!("session {tsi}"));
                    }
                    Event::Data { tsi, data, .. } if Some(tsi) == session => {
                        if signer.is_none() && !zmq_framing && pgmcc::signed::looks_like_list(&data) {
                            failure = Some("the source signs its data (pgmcc send --sign): its signatures would end up in the output; pass --trust with the source's public key file (FILE.pub)".into());
                            break;
                        }
                        let len = data.len() as u64;
                        total += len;
                        if !pieced {
                            hash.update(&data);
                        }
                        if pieced && !matched && spool.is_none() {
                            // Not known yet to be the stream held: set aside until the manifest says.
                            spool = Some(Spool::new(spool_dir(&out)?, at.take())?);
                        }
                        match zmq.as_mut() {
                            None => match (spool.as_mut(), at.as_mut()) {
                                (Some(sp), _) => sp.write(&data)?,
                                (None, Some(p)) => {
                                    // Bytes already held from an earlier pass stay as they are.
                                    if !(pieced && have.contains(*p, *p + len)) {
                                        if out_pos != Some(*p) {
                                            out.seek_to(*p)?;
                                        }
                                        out.write(&data)?;
                                        out_pos = Some(*p + len);
                                    }
                                    have.insert(*p, *p + len);
                                    *p += len;
                                }
                                (None, None) => {}
                            },
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
                        lines.tick(total, manifest.as_ref().and_then(|m| m.size));
                    }
                    Event::Unrecoverable { tsi, first, last } if Some(tsi) == session => {
                        let why = format!(
                            "unrecoverable loss of packets {first}..={last} of session {tsi} (the source no longer had them, or repairs failed)"
                        );
                        if !(passes_ok && (held.is_some() || manifest.as_ref().is_some_and(|m| m.another_pass))) {
                            failure = Some(why);
                            break;
                        }
                        // Another pass will come: keep what has a place. The run so far (if
                        // placed) stays; what follows the gap is placed only if it reaches
                        // the end; a run between two gaps cannot be placed.
                        pieced = true;
                        gap.get_or_insert(why);
                        spool = Some(Spool::new(spool_dir(&out)?, None)?);
                        at = None;
                    }
                    Event::SessionEnded { tsi, syn_sqn } if Some(tsi) == session => {
                        if !pieced && (syn_sqn.is_none() || syn_sqn != first) && !zmq_framing {
                            let why = match syn_sqn {
                                Some(s) => format!("the stream starts at packet {s} but this receiver joined at packet {}", first.unwrap_or_default()),
                                None => format!("this receiver never saw the stream's first packet (it started at packet {}: it joined late, lost the start, or the source does not mark it with OPT_SYN, as OpenPGM does not)", first.unwrap_or_default()),
                            };
                            if !allow_partial_start {
                                failure = Some(format!(
                                    "{why}; the output would be missing its beginning (pass --allow-partial-start to keep it anyway)"
                                ));
                            } else if syn_sqn.is_some() {
                                kept_partial = Some(why);
                            } else {
                                // Partial if the manifest's size says so (below); a source
                                // without one (OpenPGM's) leaves it unknown.
                                start_missed.get_or_insert(why);
                            }
                        }
                        break;
                    }
                    Event::StartMissed {
                        tsi,
                        first_sqn,
                        syn_sqn,
                    } if Some(tsi) == session && !zmq_framing => {
                        let why = match syn_sqn {
                            Some(s) => format!("the stream starts at packet {s} but this receiver's first data is packet {first_sqn}: it joined late or lost the start"),
                            None => format!("this receiver saw no packet marked as the stream's start (its first data is packet {first_sqn}): it joined late or lost the start, or the source marks none (OpenPGM sources do not)"),
                        };
                        // A source that sends another pass brings the beginning then (not known
                        // before its manifest arrives: wait for it, unless the start may be
                        // missing anyway).
                        let another = held.is_some()
                            || manifest.as_ref().map_or(!allow_partial_start, |m| m.another_pass);
                        if passes_ok && another {
                            if manifest.as_ref().is_some_and(|m| m.another_pass) && held.is_none() {
                                pb.suspend(|| eprintln!("pgmcc recv: {why}; keeping the rest: the source's next pass brings the beginning"));
                            }
                            pieced = true;
                            spool = Some(Spool::new(spool_dir(&out)?, None)?);
                            at = None;
                            start_missed = Some(why);
                        } else if allow_partial_start {
                            start_missed = Some(why);
                        } else {
                            // Fail now, not after receiving the rest of a stream that cannot be whole.
                            failure = Some(format!(
                                "{why}; the output would be missing its beginning (pass --allow-partial-start to keep it anyway; an OpenPGM source, which marks no start, needs --peer openpgm; a pgmcc source with --passes 2 or more sends the beginning again)"
                            ));
                            break;
                        }
                    }
                    Event::Manifest {
                        tsi,
                        manifest: m,
                        signed,
                    } if Some(tsi) == session => {
                        if signed {
                            signed_manifest = Some(m);
                            continue;
                        }
                        // Trusting a key, an SPM's word is for the progress display only.
                        if m.tree && args.dir.is_none() && signer.is_none() {
                            failure = Some(format!(
                                "the source sends a directory tree ({}): receive it with -D DIR",
                                m.name
                            ));
                            break;
                        }
                        // Passes: a late joiner waiting for this manifest learns whether another
                        // pass will bring the beginning; a receiver holding part of a stream
                        // learns whether this session carries the same one.
                        if pieced && held.is_none() && !m.another_pass && (start_missed.is_some() || gap.is_some()) && !allow_partial_start {
                            failure = Some(format!(
                                "{}; the source announces no other pass, so the output would be missing part (a pgmcc source with --passes 2 or more sends it again)",
                                start_missed.clone().or_else(|| gap.clone()).unwrap_or_default()
                            ));
                            break;
                        }
                        if let (Some(h), false) = (&held, matched) {
                            if !h.same_stream(&m) {
                                if !args.daemon {
                                    failure = Some(format!("session {tsi} {}", h.other_stream(&m)));
                                    break;
                                }
                                // The daemon moves on: what it held is dropped.
                                eprintln!("pgmcc recv: dropping the {} bytes held of {:?}: session {tsi} carries another stream", have.total(), h.manifest.name);
                                out = match &args.dir {
                                    Some(d) => Output::open_dir(d)?,
                                    None => anyhow::bail!("--daemon needs -D DIR"),
                                };
                                held = None;
                                passes = 1;
                                have = Ranges::default();
                                out_pos = Some(0);
                            }
                            matched = true;
                            // Data set aside while unmatched, whose place is known, goes in.
                            if let Some(sp) = spool.take_if(|sp| sp.start.is_some()) {
                                let (start, len) = (sp.start.unwrap_or(0), sp.len);
                                out.place(sp, start)?;
                                have.insert(start, start + len);
                                out_pos = Some(start + len);
                                at = Some(start + len);
                            }
                        }
                        if let Some(size) = m.size {
                            set_size(&pb, size);
                        }
                        if !m.name.is_empty() {
                            pb.set_message(format!("{} from session {tsi}", m.name));
                        }
                        manifest = Some(m);
                    }
                    Event::SessionReset { tsi, error_code } if Some(tsi) == session => {
                        let code = if error_code > 0 {
                            format!(" (error code {error_code})")
                        } else {
                            String::new()
                        };
                        failure = Some(format!(
                            "the source aborted session {tsi}{code}: it was interrupted or failed, and nothing more will come"
                        ));
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
            let mut digest: [u8; 32] = hash.finalize().into();
            // What the source announced, as far as it can be trusted: signed mode takes the
            // manifest of the signed end only (name, tree flag, mode, time, SHA-256), never an
            // SPM's, which anyone able to spoof the source could have sent.
            let manifest = if signer.is_some() {
                if failure.is_none() && signed_manifest.is_none() && args.dir.is_some() {
                    failure = Some("the source's signed end carries no manifest (a pgmcc send older than this receiver), so the name and kind of what it sent are not signed: receive it with --out FILE".into());
                }
                signed_manifest
            } else {
                manifest
            };
            if failure.is_none() && args.dir.is_none() && manifest.as_ref().is_some_and(|m| m.tree) {
                failure = Some("the source sent a directory tree: receive it with -D DIR".into());
            }
            // --allow-partial-start kept a stream whose start this receiver missed: partial
            // when the source's size says bytes are missing, unknown without one.
            if failure.is_none() && !pieced && kept_partial.is_none() {
                if let Some(why) = start_missed.take() {
                    match manifest.as_ref().and_then(|m| m.size) {
                        Some(size) if total < size => kept_partial = Some(why),
                        Some(_) => {}
                        None => eprintln!("pgmcc recv: warning: {why}; the source announces no size either, so this receiver cannot tell whether it has the beginning"),
                    }
                }
            }
            // Passes: place what has a place; complete, or hold it for the next pass.
            let mut partial: Option<String> = None;
            if failure.is_none() && pieced && manifest.is_none() {
                // A source with no manifest (OpenPGM's) sends no passes either.
                failure = Some(format!(
                    "{}; the source announced no manifest, so no other pass will bring the rest (an OpenPGM source, which marks no start, needs --peer openpgm)",
                    start_missed.clone().or_else(|| gap.clone()).unwrap_or_default()
                ));
            }
            if failure.is_none() && pieced {
                let cause = match (&start_missed, &gap) {
                    (Some(_), _) => " (joined late)",
                    (None, Some(_)) => " (packets lost for good)",
                    _ => "",
                };
                let why = start_missed.take().or_else(|| gap.take()).unwrap_or_else(|| "what earlier passes missed".into());
                match assemble(&mut out, manifest.as_ref(), held.as_ref(), &mut have, spool.take())? {
                    Assembled::Whole(d, size) => {
                        digest = d;
                        total = size;
                    }
                    Assembled::Part(size) if manifest.as_ref().is_some_and(|m| m.another_pass) => {
                        partial = Some(format!("holds {} of {size}{cause}; waiting for the source's next pass", have.describe()));
                    }
                    Assembled::Part(size) => {
                        failure = Some(format!("{why}; {} of {size} bytes are still missing ({} held) and the source announces no other pass", size - have.total(), have.describe()));
                        if passes > 1 {
                            failure = failure.map(|f| format!("{f} (after {passes} passes)"));
                        }
                    }
                    Assembled::Refused(e) => failure = Some(e),
                }
            }
            let sha = hex_string(&digest);
            // The whole stream's hash: against --expect-sha256, else the source's manifest.
            let announced = manifest
                .as_ref()
                .and_then(|m| m.sha256)
                .map(|h| hex_string(&h));
            let mut verified = None;
            if failure.is_none() && partial.is_none() && kept_partial.is_none() {
                if let Some(want) = &args.expect_sha256 {
                    if *want != sha {
                        failure = Some(format!("the data's sha256 {sha} is not the --expect-sha256 {want}"));
                    } else {
                        verified = Some("--expect-sha256");
                    }
                } else if let Some(want) = &announced {
                    if *want != sha {
                        failure = Some(format!("the data's sha256 {sha} differs from the {want} the source announced: the stream was altered or mixed up"));
                    } else {
                        verified = Some(if signer.is_some() {
                            "the source's signed manifest"
                        } else {
                            "the source's manifest"
                        });
                    }
                }
            }
            let name = manifest
                .as_ref()
                .filter(|m| !m.name.is_empty())
                .map_or_else(String::new, |m| format!(" ({})", m.name));
            if let (None, Some(why), Some(m)) = (&failure, &partial, &manifest) {
                // Part of the stream, and another pass announced: say so to the source (so
                // that it sends that pass) and keep what is held for it.
                let tsi = session.map_or_else(|| "?".into(), |t| t.to_string());
                eprintln!("pgmcc recv: session {tsi}{name}: {why}");
                if let Some(t) = session {
                    let outcome = pgm_wire::Outcome {
                        status: pgm_wire::OUTCOME_AWAITING_PASS,
                        bytes: have.total(),
                        sha256: [0; 32],
                        reason: why.clone(),
                    };
                    rx.report(t, outcome).await;
                }
                held = Some(Held {
                    manifest: m.clone(),
                    have,
                });
                next_out = Some(out);
                passes += 1;
                continue;
            }
            held = None;
            let to_stdout = matches!(out, Output::Stdout(_));
            // The output is committed before the source is told it arrived.
            let mut committed = None;
            if failure.is_none() {
                match out.commit(manifest.as_ref(), args.force, args.symlinks) {
                    Ok(c) => committed = Some(c),
                    Err(e) => failure = Some(format!("{e:#}")),
                }
            }
            if let Some(tsi) = session {
                // Tell the source how it ended here (`pgmcc send` prints a table of these).
                let mut sha256 = [0u8; 32];
                sha256.copy_from_slice(&digest);
                let outcome = pgm_wire::Outcome {
                    status: if failure.is_some() {
                        pgm_wire::OUTCOME_FAILED
                    } else if kept_partial.is_some() {
                        pgm_wire::OUTCOME_PARTIAL
                    } else {
                        pgm_wire::OUTCOME_COMPLETE
                    },
                    bytes: total,
                    sha256,
                    reason: failure.clone().or_else(|| kept_partial.clone()).unwrap_or_default(),
                };
                rx.report(tsi, outcome).await;
            }
            if args.daemon && !(interrupted && session.is_none()) {
                transfers += 1;
                let tsi = session.map_or_else(|| "?".into(), |t| t.to_string());
                match &failure {
                    None => eprintln!(
                        "pgmcc recv: session {tsi}{name}: {}, {total} bytes, sha256 {sha}{}",
                        match (&kept_partial, passes) {
                            (Some(_), _) => "PARTIAL (its beginning is missing)".to_string(),
                            (None, 1) => "complete".to_string(),
                            (None, n) => format!("complete from {n} passes"),
                        },
                        written(committed.as_ref(), manifest.as_ref(), true)
                    ),
                    Some(why) => eprintln!(
                        "pgmcc recv: session {tsi}{name}: FAILED after {total} bytes: {why}; nothing written"
                    ),
                }
            }
            if args.daemon && !interrupted {
                continue;
            }
            if args.daemon {
                let _ = rx.close().await;
                eprintln!("pgmcc recv: stopped by a signal after {transfers} transfers");
                // A transfer cut short is a failure only when it was under way.
                return Ok(if session.is_some() {
                    ExitCode::from(130)
                } else {
                    ExitCode::SUCCESS
                });
            }
            let status = rx.close().await;
            let report = RecvReport {
                outcome: if failure.is_some() {
                    "incomplete"
                } else if kept_partial.is_some() {
                    "partial"
                } else {
                    "complete"
                },
                detail: failure.clone().unwrap_or_default(),
                tsi: session.map(|t| t.to_string()),
                bytes: total,
                sha256: sha.clone(),
                status,
            };
            if let Some(path) = &args.net.stats {
                write_stats(path, &report)?;
            }
            for hint in key_hints(report.status.keyed.as_ref(), report.status.sealed_without_key) {
                eprintln!("pgmcc recv: warning: {hint}");
            }
            let st = &report.status.stats;
            if st.wrong_source > 0 {
                let whose = match args.source {
                    Some(a) => format!("not from {a} (--source)"),
                    None => "not from the address each session started from".into(),
                };
                eprintln!(
                    "pgmcc recv: warning: dropped {} packets {whose}: spoofed, or another host on the group",
                    st.wrong_source
                );
            }
            if st.implausible_spms > 0 {
                eprintln!(
                    "pgmcc recv: warning: dropped {} SPMs whose window edges no source could send (forged)",
                    st.implausible_spms
                );
            }
            if signer.is_some() {
                for hint in signed_hints(&st.signed, st.odata_packets + st.rdata_packets) {
                    eprintln!("pgmcc recv: warning: {hint}");
                }
            }
            return match failure {
                None => {
                    let wrote = written(committed.as_ref(), manifest.as_ref(), args.dir.is_some());
                    let verified = [
                        signer.map(|id| format!(", every byte verified as signed by key {id}")),
                        verified.map(|v| format!(", sha256 matches {v}")),
                    ]
                    .into_iter()
                    .flatten()
                    .collect::<String>();
                    let what = match &kept_partial {
                        // --allow-partial-start: the tail of the stream, never "complete".
                        Some(why) => format!(
                            "PARTIAL ({}; {why})",
                            match manifest.as_ref().and_then(|m| m.size) {
                                Some(size) if size >= total && total > 0 => format!("bytes {}-{} of {size}", size - total, size - 1),
                                _ => "the beginning is missing".into(),
                            }
                        ),
                        None if passes > 1 => format!("complete from {passes} passes{verified}"),
                        None => format!("complete{verified}"),
                    };
                    eprintln!(
                        "pgmcc recv: received {total} bytes, {what}; {} repairs, {} NAKs sent; sha256 {sha}{wrote}",
                        report.status.stats.gaps_filled, report.status.stats.naks_sent
                    );
                    if zmq_framing {
                        eprintln!("pgmcc recv: {zmq_parts} ZeroMQ message parts");
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Some(why) => {
                    // A file output is discarded (the temporary file is removed on drop).
                    let kept = if to_stdout {
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
            };
        }
    })
}

/// Part of a stream held from an earlier session of a source that sends it in passes.
struct Held {
    /// That session's manifest (the signed one in signed mode).
    manifest: pgm_wire::Manifest,
    /// What is held, in the output's temporary file.
    have: Ranges,
}

impl Held {
    /// "carries NAME (SIZE bytes), not the stream ...": why a session announcing `m` is not
    /// the one held.
    fn other_stream(&self, m: &pgm_wire::Manifest) -> String {
        format!(
            "carries {:?} ({} bytes), not the stream this receiver holds part of from the source's earlier pass ({:?}, {} bytes)",
            m.name,
            m.size.unwrap_or(0),
            self.manifest.name,
            self.manifest.size.unwrap_or(0)
        )
    }

    /// Whether a session announcing `m` carries the same stream: name, kind and size, and
    /// the SHA-256 when both say it.
    fn same_stream(&self, m: &pgm_wire::Manifest) -> bool {
        m.size == self.manifest.size
            && m.name == self.manifest.name
            && m.tree == self.manifest.tree
            && match (m.sha256, self.manifest.sha256) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

/// Where a spool goes: beside the output.
fn spool_dir(out: &Output) -> Result<&std::path::Path> {
    out.temp_dir()
        .context("standard output cannot hold part of a stream")
}

/// What a pieced session left.
enum Assembled {
    /// The whole stream: its SHA-256 and size.
    Whole([u8; 32], u64),
    /// Part of a stream of this size.
    Part(u64),
    /// Nothing can be placed: why.
    Refused(String),
}

/// At the end of a pieced session (pieces.rs): places the run that reached the end (or
/// whose start is known) and says whether the stream is whole. `manifest` is the session's
/// (signed in signed mode), `held` what an earlier pass left.
fn assemble(
    out: &mut Output,
    manifest: Option<&pgm_wire::Manifest>,
    held: Option<&Held>,
    have: &mut Ranges,
    spool: Option<Spool>,
) -> Result<Assembled> {
    let Some((m, size)) = manifest.and_then(|m| m.size.map(|s| (m, s))) else {
        return Ok(Assembled::Refused(
            "the source announced no size, so the parts of its passes cannot be placed".into(),
        ));
    };
    if let Some(h) = held.filter(|h| !h.same_stream(m)) {
        return Ok(Assembled::Refused(format!(
            "the session {}",
            h.other_stream(m)
        )));
    }
    if let Some(sp) = spool {
        // A run reaching the session's end ends at the stream's end.
        let start = sp.start.unwrap_or_else(|| size.saturating_sub(sp.len));
        if start.checked_add(sp.len).is_some_and(|e| e <= size) {
            let len = sp.len;
            out.place(sp, start)?;
            have.insert(start, start + len);
        }
    }
    if have.covers(size) {
        Ok(Assembled::Whole(out.assembled_sha256(size)?, size))
    } else {
        Ok(Assembled::Part(size))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use clap::Parser;

    use super::*;

    /// `pgmcc recv`'s flags alone.
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        recv: RecvArgs,
    }

    /// What `assemble` does with the runs a receiver got: the tail of a first pass placed
    /// at the end, then the head and the tail of a second pass (which lost data in the
    /// middle: the run between its gaps is dropped before `assemble`) completing it; another
    /// stream refused.
    #[test]
    fn runs_are_placed_by_the_stream_start_and_end() {
        use sha2::{Digest, Sha256};
        let dir = tempfile::tempdir().unwrap();
        let body: Vec<u8> = (0..10_000u32).map(|k| (k % 253) as u8).collect();
        let m = pgm_wire::Manifest {
            size: Some(10_000),
            name: "f".into(),
            another_pass: true,
            ..pgm_wire::Manifest::default()
        };
        let mut out = Output::open(&dir.path().join("f"), false).unwrap();
        // First pass: joined late, the last 6,000 bytes arrive (their place known only at
        // the end).
        let mut have = Ranges::default();
        let mut sp = Spool::new(dir.path(), None).unwrap();
        sp.write(&body[4_000..]).unwrap();
        let a = assemble(&mut out, Some(&m), None, &mut have, Some(sp)).unwrap();
        assert!(matches!(a, Assembled::Part(10_000)));
        assert_eq!(have.describe(), "bytes 4000-9999");
        let held = Held {
            manifest: m.clone(),
            have: have.clone(),
        };
        // Another stream is refused.
        let other = pgm_wire::Manifest {
            size: Some(9_999),
            ..m.clone()
        };
        let a = assemble(&mut out, Some(&other), Some(&held), &mut have, None).unwrap();
        assert!(matches!(a, Assembled::Refused(_)));
        // Second pass: the head, written in place up to a gap, and a run after the last gap
        // that reaches the end.
        out.seek_to(0).unwrap();
        out.write(&body[..4_500]).unwrap();
        have.insert(0, 4_500);
        let mut tail = Spool::new(dir.path(), None).unwrap();
        tail.write(&body[9_000..]).unwrap();
        let a = assemble(&mut out, Some(&m), Some(&held), &mut have, Some(tail)).unwrap();
        let Assembled::Whole(sha, 10_000) = a else {
            panic!("not whole");
        };
        assert_eq!(sha.as_slice(), Sha256::digest(&body).as_slice());
        out.commit(Some(&m), false, Symlinks::Skip).unwrap();
        assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), body);
    }

    #[test]
    fn the_defaults_parse() {
        // clap checks a default only when it is used: a bad one fails every plain `recv`.
        let a = Cli::try_parse_from(["recv", "--group", "239.1.1.1:7500"])
            .unwrap()
            .recv;
        assert_eq!(a.idle_timeout, Duration::from_secs(30));
        assert_eq!(a.join_timeout, Duration::from_secs(600));
        assert!(a.out.is_none() && !a.force);
    }
}
