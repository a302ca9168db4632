//! `pgmcc recv`'s driver: the receiver's events into a [`TransferReceiver`], its actions
//! onto the output, and how each transfer ended onto standard error and the exit code.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use pgmcc_net::transfer::receive::{Action, Ending, Failure, Flow, TransferReceiver, Verdict};
use pgmcc_net::{Event, Receiver};
use serde::Serialize;

use super::said::{explain, notice, signed_hints, verified, written};
use super::{Plan, RecvArgs};
use crate::net::args::key_hints;
use crate::net::metrics::RecvMetrics;
use crate::net::output::{Committed, Output};
use crate::net::pieces::Spool;
use crate::net::report::{hex_string, printable, progress, set_size, write_stats, LineProgress};
use crate::net::Signals;

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

/// A transfer's output as the transfer's actions shape it: the file (or pipe), where its
/// next write lands, and the spool of data whose place is not known yet.
struct Sink {
    out: Output,
    /// The output failed (a full disk, say): nothing more is written to it.
    broken: bool,
    /// The output's position, when known (a fresh output is at 0; one holding earlier
    /// passes is not known).
    pos: Option<u64>,
    spool: Option<Spool>,
}

impl Sink {
    fn new(out: Output) -> Sink {
        Sink {
            out,
            broken: false,
            pos: Some(0),
            spool: None,
        }
    }

    /// Where a spool goes: beside the output.
    fn spool_dir(&self) -> Result<&std::path::Path> {
        self.out
            .temp_dir()
            .context("standard output cannot hold part of a stream")
    }

    /// Does one action; a report goes to the source through `rx`.
    async fn apply(
        &mut self,
        a: Action,
        rx: &Receiver,
        pb: &ProgressBar,
        dir: Option<&std::path::Path>,
    ) -> Result<()> {
        match a {
            Action::Write { .. }
            | Action::SpoolStart { .. }
            | Action::Spool(_)
            | Action::Place { .. }
                if self.broken => {}
            Action::Write { offset, data } => {
                if self.pos != Some(offset) {
                    self.out.seek_to(offset)?;
                }
                self.out.write(&data)?;
                self.pos = Some(offset + data.len() as u64);
            }
            Action::SpoolStart { .. } => {
                self.spool = Some(Spool::new(self.spool_dir()?)?);
            }
            Action::Spool(data) => {
                if let Some(sp) = self.spool.as_mut() {
                    sp.write(&data)?;
                }
            }
            Action::Place { start } => {
                if let Some(sp) = self.spool.take() {
                    let len = sp.len;
                    self.out.place(sp, start)?;
                    self.pos = Some(start + len);
                }
            }
            Action::Restart => {
                self.out = Output::open_dir(
                    dir.context("only -D DIR receives one transfer after another")?,
                )?;
                self.pos = Some(0);
            }
            Action::Notice(n) => pb.suspend(|| eprintln!("{}", notice(&n))),
            Action::Report { tsi, outcome } => rx.report(tsi, outcome).await,
            _ => {}
        }
        Ok(())
    }
}

/// Does what the transfer asks, in order. An output that fails (a full disk, say) fails
/// the transfer, which then tells the source so.
async fn drain(
    t: &mut TransferReceiver,
    sink: &mut Sink,
    rx: &Receiver,
    pb: &ProgressBar,
    dir: Option<&std::path::Path>,
) {
    while let Some(a) = t.poll_action() {
        if let Err(e) = sink.apply(a, rx, pb, dir).await {
            sink.broken = true;
            t.fail(Failure::Output(format!("{e:#}")));
        }
    }
}

/// Progress after an event: the bytes so far, and the session and its name.
fn show(t: &TransferReceiver, data: bool, pb: &ProgressBar, lines: &mut LineProgress) {
    let size = t.manifest().and_then(|m| m.size);
    if data {
        pb.set_position(t.bytes());
        lines.tick(t.bytes(), size);
        return;
    }
    if let Some(tsi) = t.session() {
        match t.manifest().filter(|m| !m.name.is_empty()) {
            Some(m) => pb.set_message(format!("{} from session {tsi}", printable(&m.name))),
            None => pb.set_message(format!("session {tsi}")),
        }
    }
    if let Some(size) = size {
        set_size(pb, size);
    }
}

/// Feeds the transfer the receiver's events until its session is over; whether a signal
/// ended it.
async fn follow(
    rx: &mut Receiver,
    t: &mut TransferReceiver,
    sink: &mut Sink,
    stop: &mut Signals,
    args: &RecvArgs,
) -> Result<bool> {
    let pb = progress(args.net.quiet, None);
    let mut lines = LineProgress::new("pgmcc recv", args.net.quiet);
    let dir = args.dir.as_deref();
    let interrupted = loop {
        let ev = match rx.try_read() {
            Some(ev) => ev,
            None => {
                // Nothing waiting: hand what we have to the file or pipe.
                if let Err(e) = sink.out.flush() {
                    sink.broken = true;
                    t.fail(Failure::Output(format!("{e:#}")));
                    break false;
                }
                tokio::select! {
                    // Look up now and then: the timeouts follow the session, not the events.
                    r = tokio::time::timeout(Duration::from_millis(500), rx.read()) => match r {
                        Ok(Some(ev)) => ev,
                        Ok(None) => {
                            t.fail(Failure::ReceiverStopped);
                            break false;
                        }
                        Err(_) => {
                            if t.on_tick(Instant::now(), &rx.status()) == Flow::End {
                                break false;
                            }
                            continue;
                        }
                    },
                    () = stop.recv() => {
                        // Interrupted: the transfer is incomplete; the temporary file goes.
                        t.fail(Failure::Interrupted);
                        break true;
                    }
                }
            }
        };
        let data = matches!(ev, Event::Data { .. });
        let flow = t.handle(ev, Instant::now());
        drain(t, sink, rx, &pb, dir).await;
        show(t, data, &pb, &mut lines);
        if flow == Flow::End || t.failure().is_some() {
            break false;
        }
    };
    pb.finish_and_clear();
    Ok(interrupted)
}

/// One transfer, over as many sessions (passes) as it takes: its verdict, the output if it
/// is to be committed, and whether a signal ended it.
async fn transfer(
    rx: &mut Receiver,
    t: &mut TransferReceiver,
    out: Output,
    stop: &mut Signals,
    args: &RecvArgs,
) -> Result<(Verdict, Sink, bool)> {
    let mut sink = Sink::new(out);
    let dir = args.dir.as_deref();
    loop {
        let interrupted = follow(rx, t, &mut sink, stop, args).await?;
        let pb = ProgressBar::hidden();
        let verdict = match t.end_session() {
            Ending::Decided(v) => v,
            Ending::Hash { size } => {
                drain(t, &mut sink, rx, &pb, dir).await;
                match sink.out.assembled_sha256(size) {
                    Ok(sha) if !sink.broken => t.output_hashed(sha),
                    Ok(_) => {
                        t.output_failed("the output failed while the parts were placed".into())
                    }
                    Err(e) => t.output_failed(format!("{e:#}")),
                }
            }
        };
        drain(t, &mut sink, rx, &pb, dir).await;
        if let Verdict::AwaitPass(a) = &verdict {
            // Part of the stream, and another pass announced: the source was told; what
            // is held waits in the output for that pass.
            eprintln!("pgmcc recv: session {}{}: {a}", tsi_text(t), name_text(t));
            sink.pos = None;
            sink.spool = None;
            continue;
        }
        return Ok((verdict, sink, interrupted));
    }
}

/// The session followed, as printed.
fn tsi_text(t: &TransferReceiver) -> String {
    t.session().map_or_else(|| "?".into(), |s| s.to_string())
}

/// " (NAME)" of the stream, when announced.
fn name_text(t: &TransferReceiver) -> String {
    t.manifest()
        .filter(|m| !m.name.is_empty())
        .map_or_else(String::new, |m| format!(" ({})", printable(&m.name)))
}

/// Receives one transfer after another (`--daemon`) or one, and says how it ended.
pub(super) async fn run(
    args: &RecvArgs,
    plan: &Plan,
    mut rx: Receiver,
    first: Output,
    metrics: Option<&RecvMetrics>,
) -> Result<ExitCode> {
    let mut stop = Signals::new()?;
    let mut next = Some(first);
    let mut transfers = 0u64;
    loop {
        let out = match (next.take(), &args.dir) {
            (Some(o), _) => o,
            (None, Some(d)) => Output::open_dir(d)?,
            (None, None) => anyhow::bail!("--daemon needs -D DIR"),
        };
        let mut cfg = plan.transfer.clone();
        cfg.pieces = !cfg.zmq && out.temp_dir().is_some();
        let mut t = TransferReceiver::new(cfg, Instant::now());
        let (verdict, sink, interrupted) = transfer(&mut rx, &mut t, out, &mut stop, args).await?;
        let to_stdout = matches!(sink.out, Output::Stdout(_));
        // The output is committed before the source is told it arrived.
        let mut committed = None;
        if verdict == Verdict::Commit {
            let manifest = t.manifest().cloned();
            match sink
                .out
                .commit(manifest.as_ref(), args.force, args.symlinks)
            {
                Ok(c) => {
                    committed = Some(c);
                    t.committed(Ok(()));
                }
                Err(e) => t.committed(Err(format!("{e:#}"))),
            }
            // The output is gone: what is left to do is telling the source.
            while let Some(a) = t.poll_action() {
                if let Action::Report { tsi, outcome } = a {
                    rx.report(tsi, outcome).await;
                }
            }
        }
        // A signal while waiting for a session ends no transfer.
        let ended = !(interrupted && t.session().is_none());
        if let Some(m) = metrics.filter(|_| ended) {
            m.transfer_ended(committed.is_some());
        }
        if args.daemon {
            if ended {
                transfers += 1;
                daemon_line(&t, committed.as_ref());
            }
            if !interrupted {
                continue;
            }
            let _ = rx.close().await;
            eprintln!("pgmcc recv: stopped by a signal after {transfers} transfers");
            // A transfer cut short is a failure only when it was under way.
            return Ok(if t.session().is_some() {
                ExitCode::from(130)
            } else {
                ExitCode::SUCCESS
            });
        }
        let status = rx.close().await;
        return finish(
            args,
            plan,
            &t,
            status,
            committed.as_ref(),
            to_stdout,
            interrupted,
        );
    }
}

/// Whether `digest` can be the SHA-256 of the `total` bytes received: a failed transfer
/// may end before its data was hashed, leaving all zeros or the SHA-256 of nothing, which
/// printed beside a byte count would look like a hash of those bytes.
fn digest_describes(total: u64, digest: &[u8; 32]) -> bool {
    use sha2::Digest;
    total == 0 || (digest != &[0; 32] && digest[..] != sha2::Sha256::digest(b"")[..])
}

/// The daemon's one line per transfer.
fn daemon_line(t: &TransferReceiver, committed: Option<&Committed>) {
    let (tsi, name) = (tsi_text(t), name_text(t));
    let (total, sha) = (t.bytes(), hex_string(&t.sha256()));
    match t.failure() {
        None => eprintln!(
            "pgmcc recv: session {tsi}{name}: {}, {total} bytes, sha256 {sha}{}",
            match (t.partial_start(), t.passes()) {
                (Some(_), _) => "PARTIAL (its beginning is missing)".to_string(),
                (None, 1) => "complete".to_string(),
                (None, n) => format!("complete from {n} passes"),
            },
            written(committed, t.manifest(), true)
        ),
        Some(why) => eprintln!(
            "pgmcc recv: session {tsi}{name}: FAILED after {total} bytes: {}; nothing written",
            explain(why)
        ),
    }
}

/// The last lines of a single transfer, `--stats`, and the exit code.
fn finish(
    args: &RecvArgs,
    plan: &Plan,
    t: &TransferReceiver,
    status: pgmcc_net::ReceiverStatus,
    committed: Option<&Committed>,
    to_stdout: bool,
    interrupted: bool,
) -> Result<ExitCode> {
    let (total, sha) = (t.bytes(), hex_string(&t.sha256()));
    let failure = t.failure().map(explain);
    let report = RecvReport {
        outcome: if failure.is_some() {
            "incomplete"
        } else if t.partial_start().is_some() {
            "partial"
        } else {
            "complete"
        },
        detail: failure.clone().unwrap_or_default(),
        tsi: t.session().map(|s| s.to_string()),
        bytes: total,
        sha256: sha.clone(),
        status,
    };
    if let Some(path) = &args.net.stats {
        write_stats(path, &report)?;
    }
    warnings(args, plan, &report.status);
    let st = &report.status.stats;
    let Some(why) = failure else {
        let wrote = written(committed, t.manifest(), args.dir.is_some());
        let verified = [
            plan.signer
                .map(|id| format!(", every byte verified as signed by key {id}")),
            t.verified()
                .map(|v| format!(", sha256 matches {}", verified(v))),
        ]
        .into_iter()
        .flatten()
        .collect::<String>();
        let what = match t.partial_start() {
            // A partial start allowed: the tail of the stream, never "complete".
            Some(why) => format!(
                "PARTIAL ({}; {why})",
                match t.manifest().and_then(|m| m.size) {
                    Some(size) if size >= total && total > 0 =>
                        format!("bytes {}-{} of {size}", size - total, size - 1),
                    _ => "the beginning is missing".into(),
                }
            ),
            None if t.passes() > 1 => format!("complete from {} passes{verified}", t.passes()),
            None => format!("complete{verified}"),
        };
        eprintln!(
            "pgmcc recv: received {total} bytes, {what}; {} repairs, {} NAKs sent; sha256 {sha}{wrote}",
            st.gaps_filled, st.naks_sent
        );
        if plan.transfer.zmq {
            eprintln!("pgmcc recv: {} ZeroMQ message parts", t.zmq_parts());
        }
        return Ok(ExitCode::SUCCESS);
    };
    // A file output is discarded (the temporary file is removed on drop).
    let kept = if to_stdout {
        "the bytes already written to standard output are incomplete"
    } else {
        "no output file was written"
    };
    // A session refused as a recording played back is the reason nothing was heard: say so
    // in the error, not only in the warning above it.
    let replayed = report
        .status
        .keyed
        .as_ref()
        .is_some_and(|k| k.before_start > 0)
        || st.signed.before_start > 0;
    let unheard = matches!(
        t.failure(),
        Some(Failure::NoSession { .. } | Failure::NoSignedSession { .. })
    );
    let why = if replayed && unheard {
        format!(
            "{why}; the sessions heard began more than {} s before this receiver started and were refused as recordings played back (--start-slack)",
            plan.opts.start_slack.as_secs_f64()
        )
    } else {
        why
    };
    let hashed = if digest_describes(total, &t.sha256()) {
        format!(" (sha256 {sha})")
    } else {
        String::new()
    };
    eprintln!("pgmcc recv: error: {why}; received {total} bytes{hashed}; {kept}");
    // 130: the shell's code for "ended by SIGINT"; 1: the transfer failed.
    Ok(ExitCode::from(if interrupted { 130 } else { 1 }))
}

/// What the receiver's counters say went wrong around the transfer: keys, spoofed or
/// forged packets.
fn warnings(args: &RecvArgs, plan: &Plan, status: &pgmcc_net::ReceiverStatus) {
    let slack = plan.opts.start_slack;
    for hint in key_hints(status.keyed.as_ref(), status.sealed_without_key, slack) {
        eprintln!("pgmcc recv: warning: {hint}");
    }
    let st = &status.stats;
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
            "pgmcc recv: warning: dropped {} SPMs whose window edges or sequence numbers no source could send (forged)",
            st.implausible_spms
        );
    }
    if st.implausible_data > 0 {
        eprintln!(
            "pgmcc recv: warning: dropped {} data packets whose window edges no source could send (forged)",
            st.implausible_data
        );
    }
    if plan.signer.is_some() {
        for hint in signed_hints(&st.signed, st.odata_packets + st.rdata_packets, slack) {
            eprintln!("pgmcc recv: warning: {hint}");
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_digest_of_nothing_does_not_describe_bytes_received() {
        use sha2::Digest;
        let empty: [u8; 32] = sha2::Sha256::digest(b"").into();
        let some: [u8; 32] = sha2::Sha256::digest(b"abc").into();
        assert!(super::digest_describes(0, &empty));
        assert!(!super::digest_describes(3_000_000, &empty));
        assert!(!super::digest_describes(3_000_000, &[0; 32]));
        assert!(super::digest_describes(3, &some));
    }
}
