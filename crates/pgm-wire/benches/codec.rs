//! Cost of the codec per packet type: parse (with checksum verification) and emit (with
//! checksum computation). `make bench` prints these next to the runtime's throughput.

#![allow(missing_docs, clippy::unwrap_used)] // benchmark harness

use std::net::{IpAddr, Ipv4Addr};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pgm_wire::*;

const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const RX: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1));
const GROUP: IpAddr = IpAddr::V4(Ipv4Addr::new(239, 192, 0, 1));
const TSI: Tsi = Tsi {
    gsi: Gsi([1, 2, 3, 4, 5, 6]),
    sport: 4000,
};

fn packets(payload: &[u8]) -> Vec<(&'static str, Repr<'_>)> {
    let nak = NakRepr {
        sqn: 10,
        source: SRC,
        group: GROUP,
    };
    let list: Vec<u32> = (11..30).collect();
    let feedback = PgmccFeedback {
        tstamp: 123_456,
        loss_rate: 1000,
        rx: RX,
    };
    vec![
        (
            "odata-1400-pgmcc",
            Repr::downstream(TSI, 7500, Body::Odata(DataRepr { sqn: 7, trail: 1 }))
                .with_options(Options {
                    pgmcc_data: Some(PgmccData {
                        tstamp: 99,
                        acker: RX,
                    }),
                    ..Options::default()
                })
                .with_payload(payload),
        ),
        (
            "spm",
            Repr::downstream(
                TSI,
                7500,
                Body::Spm(SpmRepr {
                    sqn: 3,
                    trail: 1,
                    lead: 7,
                    path_nla: SRC,
                }),
            ),
        ),
        (
            "nak-list-20-report",
            Repr::upstream(TSI, 7500, Body::Nak(nak))
                .with_options(Options::nak(&list, Some(feedback))),
        ),
        ("ncf", Repr::downstream(TSI, 7500, Body::Ncf(nak))),
        (
            "ack-report",
            Repr::upstream(
                TSI,
                7500,
                Body::Ack(AckRepr {
                    rx_max: 7,
                    bitmap: 0xffff_fffe,
                }),
            )
            .with_options(Options {
                pgmcc_feedback: Some(feedback),
                ..Options::default()
            }),
        ),
    ]
}

fn codec(c: &mut Criterion) {
    let payload = vec![0xa5u8; 1400];
    let mut g = c.benchmark_group("codec");
    for (name, repr) in packets(&payload) {
        let bytes = repr.to_vec().unwrap();
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(BenchmarkId::new("parse", name), &bytes, |b, bytes| {
            b.iter(|| Repr::parse(std::hint::black_box(bytes)).unwrap())
        });
        let mut buf = vec![0u8; 2048];
        g.bench_with_input(BenchmarkId::new("emit", name), &repr, |b, repr| {
            b.iter(|| std::hint::black_box(repr).emit(&mut buf).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
