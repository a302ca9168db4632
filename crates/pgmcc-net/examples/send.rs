//! A PGM source with pgmcc congestion control in a tokio program: sends numbered messages to
//! a group, ends the session, and prints who confirmed what.
//!
//! ```text
//! cargo run -p pgmcc-net --example send -- GROUP PORT LOCAL_ADDR TTL MESSAGES
//! cargo run -p pgmcc-net --example send -- 239.192.0.1 7500 192.0.2.10 1 1000
//! ```
//!
//! `LOCAL_ADDR` picks the interface (its address); `TTL` 0 keeps the session on this host
//! (with a loopback address, as the tests run it), 1 on the local link. Run `recv` first.

use std::net::Ipv4Addr;
use std::process::ExitCode;

use pgmcc_net::{Interface, Sender, SenderOptions};

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(group), Some(port), Some(local), Some(ttl), Some(count)) = (
        args.first().and_then(|a| a.parse::<Ipv4Addr>().ok()),
        args.get(1).and_then(|a| a.parse::<u16>().ok()),
        args.get(2).and_then(|a| a.parse::<Ipv4Addr>().ok()),
        args.get(3).and_then(|a| a.parse::<u32>().ok()),
        args.get(4).and_then(|a| a.parse::<u32>().ok()),
    ) else {
        eprintln!("usage: send GROUP PORT LOCAL_ADDR TTL MESSAGES");
        return ExitCode::from(2);
    };
    // Options chain (every public field has a setter of its name) or are set as fields.
    let mut opts = SenderOptions::new(group, port)
        .interface(Some(Interface::Addr(local)))
        .ttl(ttl);
    // Wait (at most 30 s after the data) for one receiver's delivery report.
    opts.end.expect = Some(pgmcc_net::Expect::Receivers(1));
    let mut tx = match Sender::bind(opts).await {
        Ok(tx) => tx,
        Err(e) => {
            eprintln!("send: {e}");
            return ExitCode::from(2);
        }
    };
    println!("session {}", tx.tsi());
    for i in 0..count {
        // One message per packet: the first may hold a few bytes less (OPT_SYN).
        let mut msg = format!("message {i} ").into_bytes();
        msg.resize(msg.len().max(tx.max_tsdu().min(1000)), b'.');
        if let Err(e) = tx.write(&msg).await {
            eprintln!("send: {e}");
            return ExitCode::from(1);
        }
    }
    match tx.close().await {
        Ok(status) => {
            println!(
                "sent {} data packets, {} repairs; acker {:?}",
                status.stats.odata_packets, status.stats.rdata_packets, status.acker
            );
            for r in &status.reports {
                println!("{}: {:?}, {} bytes", r.receiver, r.status, r.bytes);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("send: {e}");
            ExitCode::from(1)
        }
    }
}
