//! Cost of the protocol core per 1,400-byte data packet, no I/O: a pgmcc sender and its acker
//! (a receiver) wired back to back. Each iteration: the application sends one message, the
//! sender emits the ODATA, the receiver takes it, delivers it and answers with an ACK, and
//! the sender takes the ACK. Also the sender alone without congestion control.

#![allow(missing_docs, clippy::unwrap_used)] // benchmark harness

use std::net::{IpAddr, Ipv4Addr};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pgm_wire::{Gsi, Tsi};
use pgmcc::cc::{pgmcc::PgmccConfig, CcConfig};
use pgmcc::{Duration, Instant, Receiver, ReceiverConfig, Sender, SenderConfig};

const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const RX: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1));
const GROUP: IpAddr = IpAddr::V4(Ipv4Addr::new(239, 192, 0, 1));
const TSI: Tsi = Tsi {
    gsi: Gsi([1, 2, 3, 4, 5, 6]),
    sport: 4000,
};

struct Pair {
    tx: Sender,
    rx: Receiver,
    now: Instant,
    buf: Vec<u8>,
    delivered: u64,
}

impl Pair {
    fn new(cc: CcConfig) -> Pair {
        let mut config = SenderConfig::new(TSI, SRC, GROUP);
        config.cc = cc;
        let now = Instant::ZERO;
        let mut p = Pair {
            tx: Sender::new(config, now),
            rx: Receiver::new(ReceiverConfig::new(RX, GROUP, 1), now),
            now,
            buf: vec![0u8; 2048],
            delivered: 0,
        };
        // Warm up: elect the acker and open the window, until the queue is empty.
        for _ in 0..20_000 {
            p.step(&[0u8; 1400]);
        }
        assert!(p.tx.queued_packets() < 10, "the sender does not keep up");
        p
    }

    fn step(&mut self, msg: &[u8]) {
        self.now += Duration::from_micros(10);
        let now = self.now;
        // During the warm-up the window is still closed (the election answer waits a random
        // back-off): the queue may be full then.
        let _ = self.tx.send(msg);
        while let Some(t) = self.tx.poll_transmit(now, &mut self.buf) {
            self.rx.handle(now, SRC, &self.buf[..t.len]);
        }
        if self.rx.poll_timeout().is_some_and(|d| d <= now) {
            self.rx.handle_timeout(now);
        }
        while let Some(t) = self.rx.poll_transmit(now, &mut self.buf) {
            self.tx.handle(now, RX, &self.buf[..t.len]);
        }
        if self.tx.poll_timeout().is_some_and(|d| d <= now) {
            self.tx.handle_timeout(now);
        }
        while let Some(ev) = self.rx.poll_event() {
            if let pgmcc::ReceiverEvent::Data { data, .. } = ev {
                self.delivered += data.len() as u64;
            }
        }
    }
}

fn core(c: &mut Criterion) {
    let msg = vec![0x5au8; 1400];
    let mut g = c.benchmark_group("core");
    g.throughput(Throughput::Elements(1));
    let pgmcc = CcConfig::Pgmcc(PgmccConfig::recommended());
    let mut pair = Pair::new(pgmcc);
    g.bench_function("sender+receiver+ack, pgmcc, per 1400-byte packet", |b| {
        b.iter(|| pair.step(&msg))
    });
    assert!(pair.delivered > 0, "the receiver delivered nothing");
    let mut pair = Pair::new(CcConfig::None);
    g.bench_function("sender+receiver, no cc, per 1400-byte packet", |b| {
        b.iter(|| pair.step(&msg))
    });
    assert!(pair.delivered > 0, "the receiver delivered nothing");
    g.finish();
}

criterion_group!(benches, core);
criterion_main!(benches);
