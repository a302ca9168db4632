//! A pass's input into its session: read, cut into packet-sized messages and handed to
//! the source as congestion control lets it, hashed on the way.

use std::time::Duration;

use pgmcc_net::Sender;
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use super::packer::Packer;
use super::send_progress::Shown;
use super::Signals;

/// How long bytes short of a full packet wait for more input: a live stream's last bytes
/// go out this much later than they were read, and a file's reads come back to back.
const PACKER_WAIT: Duration = Duration::from_millis(20);

/// What reading the input for a pass came to.
pub(super) struct Read {
    /// Bytes read, and handed to the source.
    pub(super) total: u64,
    /// Their SHA-256.
    pub(super) sha256: [u8; 32],
    /// The input was read to its end: `sha256` is the whole input's.
    pub(super) whole: bool,
    /// Ctrl-C (or SIGTERM) arrived.
    pub(super) interrupted: bool,
    /// The input failed part way (a file vanished or shrank), or is not the first pass's:
    /// receivers are told, as on Ctrl-C, and nothing claims the transfer is complete.
    pub(super) input_error: Option<String>,
}

/// Reads the input and hands it to the source in packet-sized messages, until it ends or
/// fails, the source's task ends, or Ctrl-C.
pub(super) async fn send_input(
    tx: &mut Sender,
    mut input: Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    mut producer: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    zeromq: bool,
    shown: &mut Shown,
    stop: &mut Signals,
) -> Read {
    let mut hash = Sha256::new();
    let mut total = 0u64;
    // Large reads (each tokio file read is a trip to a blocking thread), cut into
    // packet-sized messages so nothing needs fragmenting; what is left of a read waits for
    // the next one (`Packer`), so packets are full. For ZeroMQ subscribers each packet is
    // one whole ZeroMQ message in their framing (pgmcc_net::zmq).
    let room = |tsdu: usize| {
        if zeromq {
            tsdu.saturating_sub(pgmcc_net::zmq::ZMQ_APDU_OVERHEAD)
                .max(1)
        } else {
            tsdu
        }
    };
    let mut packer = Packer::new(room(tx.first_tsdu()), room(tx.max_tsdu()));
    let mut buf = vec![0u8; 256 * room(tx.max_tsdu())];
    let mut ended = false;
    let mut interrupted = false;
    let mut input_error: Option<String> = None;
    // A write fails only when the source's task ended: `close` then says why.
    'input: while !ended {
        let waiting = packer.has_rest();
        let read = tokio::select! {
            r = input.read(&mut buf) => Some(r),
            () = stop.recv() => {
                interrupted = true;
                break 'input;
            }
            // The input paused: what waits for a full packet goes now.
            () = tokio::time::sleep(PACKER_WAIT), if waiting => None,
        };
        let n = match read {
            None => 0,
            Some(Ok(n)) => n,
            Some(Err(e)) => {
                input_error = Some(format!("reading the input: {e}"));
                break 'input;
            }
        };
        if read.is_some() && n == 0 {
            ended = true;
            // A tree's archive ends when its writer does: ask it whether it finished.
            if let Some(p) = producer.take() {
                match p.await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => input_error = Some(format!("reading the input: {e}")),
                    Err(e) => input_error = Some(format!("reading the input: {e}")),
                }
            }
            if input_error.is_some() {
                break;
            }
        }
        let block = buf.get(..n).unwrap_or_default();
        hash.update(block);
        let mut messages = packer.push(block);
        if read.is_none() || ended {
            messages.extend(packer.flush());
        }
        for message in messages {
            let framed;
            let chunk = if zeromq {
                framed = pgmcc_net::zmq::zmq_apdu(&message);
                &framed[..]
            } else {
                &message[..]
            };
            // Waits while congestion control holds the queue full; look up now and then.
            loop {
                let written = tokio::select! {
                    r = tokio::time::timeout(Duration::from_secs(1), tx.write(chunk)) => r,
                    () = stop.recv() => {
                        interrupted = true;
                        break 'input;
                    }
                };
                match written {
                    Ok(Ok(())) => break,
                    Ok(Err(_)) => break 'input,
                    Err(_) => {
                        let st = tx.status();
                        shown.acker(&st);
                        shown.progress(&st, total);
                    }
                }
            }
        }
        total += n as u64;
        let st = tx.status();
        shown.progress(&st, total);
        shown.acker(&st);
    }
    Read {
        total,
        sha256: hash.finalize().into(),
        whole: ended && input_error.is_none(),
        interrupted,
        input_error,
    }
}
