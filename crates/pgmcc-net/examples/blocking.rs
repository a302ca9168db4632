//! The blocking API, for programs without an async runtime: a source thread and a receiver
//! in one process, on this host only (loopback, multicast TTL 0).
//!
//! ```text
//! cargo run -p pgmcc-net --example blocking
//! ```

use std::net::Ipv4Addr;
use std::process::ExitCode;

use pgmcc_net::blocking::{Receiver, Sender};
use pgmcc_net::{Encapsulation, Event, Interface, ReceiverOptions, SenderOptions};

fn main() -> ExitCode {
    let group = Ipv4Addr::new(239, 255, 77, 60);
    // Ports of our own, so that the example does not meet another session on this host.
    let encapsulation = Encapsulation::Udp {
        ucast_port: 42_060,
        mcast_port: 42_061,
    };
    let mut ro = ReceiverOptions::new(group, 7500);
    ro.interface = Some(Interface::Addr(Ipv4Addr::new(127, 0, 0, 2)));
    ro.encapsulation = encapsulation;
    let mut rx = match Receiver::bind(ro) {
        Ok(rx) => rx,
        Err(e) => {
            eprintln!("blocking: {e}");
            return ExitCode::from(2);
        }
    };
    let mut so = SenderOptions::new(group, 7500);
    so.interface = Some(Interface::Addr(Ipv4Addr::LOCALHOST));
    so.encapsulation = encapsulation;
    so.ttl = 0;
    so.end.linger = std::time::Duration::from_millis(500);
    let source = std::thread::spawn(move || -> Result<u64, pgmcc_net::Error> {
        let mut tx = Sender::bind(so)?;
        for i in 0..100u32 {
            tx.write(format!("line {i}\n").as_bytes())?;
        }
        Ok(tx.close()?.stats.odata_packets)
    });
    let mut lines = 0;
    while let Some(ev) = rx.read() {
        match ev {
            Event::Data { data, .. } => lines += data.iter().filter(|&&b| b == b'\n').count(),
            Event::SessionEnded { .. } => break,
            Event::SessionReset { .. } | Event::SessionExpired { .. } => break,
            _ => {}
        }
    }
    rx.close();
    match source.join() {
        Ok(Ok(packets)) => {
            println!("{lines} lines received; the source sent {packets} data packets");
            if lines == 100 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Ok(Err(e)) => {
            eprintln!("blocking: {e}");
            ExitCode::from(1)
        }
        Err(_) => ExitCode::from(1),
    }
}
