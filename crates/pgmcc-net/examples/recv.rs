//! A PGM receiver in a tokio program: joins a group, counts what each session delivers, and
//! tells the source how the session ended here (a delivery report).
//!
//! ```text
//! cargo run -p pgmcc-net --example recv -- GROUP PORT LOCAL_ADDR
//! cargo run -p pgmcc-net --example recv -- 239.192.0.1 7500 192.0.2.20
//! ```
//!
//! Exits 0 once a session ended with its whole stream, 1 if it ended without it (joined
//! late, or data was lost for good).

use std::net::Ipv4Addr;
use std::process::ExitCode;

use pgmcc_net::{Event, Interface, Receiver, ReceiverOptions};
use sha2::{Digest, Sha256};

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(group), Some(port), Some(local)) = (
        args.first().and_then(|a| a.parse::<Ipv4Addr>().ok()),
        args.get(1).and_then(|a| a.parse::<u16>().ok()),
        args.get(2).and_then(|a| a.parse::<Ipv4Addr>().ok()),
    ) else {
        eprintln!("usage: recv GROUP PORT LOCAL_ADDR");
        return ExitCode::from(2);
    };
    let mut opts = ReceiverOptions::new(group, port);
    opts.interface = Some(Interface::Addr(local));
    let mut rx = match Receiver::bind(opts).await {
        Ok(rx) => rx,
        Err(e) => {
            eprintln!("recv: {e}");
            return ExitCode::from(2);
        }
    };
    let (mut messages, mut bytes, mut whole) = (0u64, 0u64, true);
    let mut hash = Sha256::new();
    while let Some(ev) = rx.read().await {
        match ev {
            Event::SessionStarted { tsi, .. } => println!("session {tsi}"),
            Event::StartMissed { .. } => whole = false,
            Event::Data { data, .. } => {
                messages += 1;
                bytes += data.len() as u64;
                hash.update(&data);
            }
            Event::Unrecoverable { first, last, .. } => {
                eprintln!("lost packets {first}..={last}");
                whole = false;
            }
            Event::SessionEnded { tsi, .. } => {
                let sha256: [u8; 32] = hash.finalize().into();
                println!("{messages} messages, {bytes} bytes; whole stream: {whole}");
                let outcome = pgm_wire::Outcome {
                    status: if whole {
                        pgm_wire::OUTCOME_COMPLETE
                    } else {
                        pgm_wire::OUTCOME_FAILED
                    },
                    bytes,
                    sha256,
                    reason: if whole { "" } else { "data lost" }.into(),
                    reporter: None,
                };
                rx.report(tsi, outcome).await;
                rx.close().await;
                return if whole {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                };
            }
            Event::SessionReset { .. } | Event::SessionExpired { .. } => {
                eprintln!("the session ended before its end");
                return ExitCode::from(1);
            }
            Event::Manifest { .. } => {}
        }
    }
    ExitCode::from(1)
}
