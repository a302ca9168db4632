//! Keyed mode (`docs/security.md`): every datagram sealed with a group key, so only holders
//! of the key can send into the session or read it. A source and a receiver in one tokio
//! program, on this host only (loopback, multicast TTL 0).
//!
//! ```text
//! cargo run -p pgmcc-net --example keyed
//! ```
//!
//! Real deployments share the key as a file: `pgmcc keygen --key FILE`, then `Key::load`.

use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::time::Duration;

use pgmcc_net::{
    Encapsulation, Event, Interface, Key, Receiver, ReceiverOptions, Sender, SenderOptions,
};

#[tokio::main]
async fn main() -> ExitCode {
    let key = match Key::generate() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("keyed: {e}");
            return ExitCode::from(2);
        }
    };
    let group = Ipv4Addr::new(239, 255, 77, 61);
    let encapsulation = Encapsulation::Udp {
        ucast_port: 42_070,
        mcast_port: 42_071,
    };
    let mut ro = ReceiverOptions::new(group, 7500);
    ro.interface = Some(Interface::Addr(Ipv4Addr::new(127, 0, 0, 2)));
    ro.encapsulation = encapsulation;
    ro.key = Some(key.clone());
    let mut so = SenderOptions::new(group, 7500);
    so.interface = Some(Interface::Addr(Ipv4Addr::LOCALHOST));
    so.encapsulation = encapsulation;
    so.ttl = 0;
    so.key = Some(key);
    so.end.linger = Duration::from_millis(500);
    let (mut rx, mut tx) = match (Receiver::bind(ro).await, Sender::bind(so).await) {
        (Ok(rx), Ok(tx)) => (rx, tx),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("keyed: {e}");
            return ExitCode::from(2);
        }
    };
    let source = tokio::spawn(async move {
        tx.write(b"sealed with the group key").await?;
        tx.close().await
    });
    let mut got = Vec::new();
    while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_secs(20), rx.read()).await {
        match ev {
            Event::Data { data, .. } => got.extend_from_slice(&data),
            Event::SessionEnded { .. } | Event::SessionReset { .. } => break,
            _ => {}
        }
    }
    let status = rx.close().await;
    let opened = status.keyed.map_or(0, |k| k.opened);
    println!(
        "{} ({opened} datagrams opened)",
        String::from_utf8_lossy(&got)
    );
    match source.await {
        Ok(Ok(_)) if got == b"sealed with the group key" => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("keyed: {e}");
            ExitCode::from(1)
        }
        _ => ExitCode::from(1),
    }
}
