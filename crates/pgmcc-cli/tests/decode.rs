//! `pgmcc decode` end to end: hex input, raw files, and pcap captures with PGM over UDP
//! encapsulation (Ethernet link type) and over raw IP protocol 113 (raw IP link type).

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::borrow::Cow;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use etherparse::{IpNumber, PacketBuilder};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;
use pgm_wire::{AckRepr, Body, DataRepr, Gsi, Repr, Tsi};

const TSI: Tsi = Tsi {
    gsi: Gsi([1, 2, 3, 4, 5, 6]),
    sport: 40000,
};

fn pgmcc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pgmcc"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pgmcc-decode-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn odata() -> Vec<u8> {
    Repr::downstream(TSI, 7500, Body::Odata(DataRepr { sqn: 5, trail: 1 }))
        .with_payload(b"xyz")
        .to_vec()
        .unwrap()
}

fn ack() -> Vec<u8> {
    Repr::upstream(
        TSI,
        7500,
        Body::Ack(AckRepr {
            rx_max: 5,
            bitmap: 0x1f,
        }),
    )
    .to_vec()
    .unwrap()
}

fn write_pcap(path: &PathBuf, link: DataLink, frames: &[Vec<u8>]) {
    let header = PcapHeader {
        datalink: link,
        ..PcapHeader::default()
    };
    let file = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::with_header(file, header).unwrap();
    for (i, f) in frames.iter().enumerate() {
        let pkt = PcapPacket {
            timestamp: Duration::from_millis(i as u64 * 10),
            orig_len: f.len() as u32,
            data: Cow::Borrowed(f),
        };
        w.write_packet(&pkt).unwrap();
    }
}

fn udp_frame(dport: u16, payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [1, 0, 0x5e, 0, 0, 1])
        .ipv4([10, 0, 0, 1], [239, 192, 0, 1], 0)
        .udp(50000, dport);
    let mut out = Vec::new();
    b.write(&mut out, payload).unwrap();
    out
}

fn raw_ip_frame(payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::ipv4([10, 0, 0, 2], [10, 0, 0, 1], 0);
    let mut out = Vec::new();
    b.write(&mut out, IpNumber(113), payload).unwrap();
    out
}

#[test]
fn hex_argument() {
    let (code, out, _) = pgmcc(&["decode", &hex::encode(odata())]);
    assert_eq!(code, 0);
    assert!(out.contains("type: ODATA"), "{out}");
    assert!(out.contains("data.sqn: 5"), "{out}");
    assert!(out.contains("checksum: 0x"), "{out}");
    assert!(out.contains("(ok)"), "{out}");
}

#[test]
fn malformed_input_names_the_problem() {
    let mut bad = odata();
    let n = bad.len();
    bad[n - 1] ^= 1;
    let (code, out, _) = pgmcc(&["decode", &hex::encode(&bad)]);
    assert_eq!(code, 1);
    assert!(out.contains("error: checksum mismatch"), "{out}");
    // With verification off it decodes and flags the checksum.
    let (code, out, _) = pgmcc(&["decode", "--no-verify", &hex::encode(&bad)]);
    assert_eq!(code, 0);
    assert!(out.contains("BAD, computed"), "{out}");
    let (code, _, err) = pgmcc(&["decode", "not-hex-nor-file"]);
    assert_eq!(code, 2);
    assert!(err.contains("neither a file nor valid hex"), "{err}");
}

#[test]
fn raw_datagram_file() {
    let p = tmp("ack.bin");
    std::fs::write(&p, ack()).unwrap();
    let (code, out, _) = pgmcc(&["decode", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("type: ACK") && out.contains("ack.bitmap: 0x0000001f"),
        "{out}"
    );
}

#[test]
fn pcap_udp_encapsulation_and_raw_ip() {
    let p = tmp("udp.pcap");
    // Frame 2 is UDP on a port that is not PGM's: skipped, not misparsed.
    write_pcap(
        &p,
        DataLink::ETHERNET,
        &[
            udp_frame(3056, &odata()),
            udp_frame(53, b"dns"),
            udp_frame(3055, &ack()),
        ],
    );
    let (code, out, err) = pgmcc(&["decode", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("frame 1") && out.contains("type: ODATA"),
        "{out}"
    );
    assert!(
        out.contains("frame 3") && out.contains("type: ACK"),
        "{out}"
    );
    assert!(out.contains("# 2 decoded, 0 malformed"), "{out}");
    assert!(err.contains("1 of 3 frames carry no PGM"), "{err}");

    let p = tmp("raw.pcap");
    write_pcap(&p, DataLink::RAW, &[raw_ip_frame(&ack())]);
    let (code, out, _) = pgmcc(&["decode", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("10.0.0.2 -> 10.0.0.1") && out.contains("type: ACK"),
        "{out}"
    );

    // A non-default encapsulation port is picked up with --udp-port.
    let p = tmp("port.pcap");
    write_pcap(&p, DataLink::ETHERNET, &[udp_frame(7500, &odata())]);
    let (_, out, _) = pgmcc(&["decode", p.to_str().unwrap()]);
    assert!(!out.contains("type: ODATA"), "{out}");
    let (code, out, _) = pgmcc(&["decode", "--udp-port", "7500", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("type: ODATA"), "{out}");
}

/// A reader that stops early (`pgmcc decode cap.pcap | head`) ends the decode quietly with
/// status 0, as it would end `cat`: before, `println!` panicked on the closed pipe.
#[test]
fn a_reader_that_stops_early_ends_the_decode_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let p = tmp("many.pcap");
    // About 20,000 lines of output, far beyond a pipe's buffer.
    let frames: Vec<Vec<u8>> = (0..2000).map(|_| udp_frame(3056, &odata())).collect();
    write_pcap(&p, DataLink::ETHERNET, &frames);
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgmcc"))
        .args(["decode", p.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The read end is dropped here: the next writes fail with EPIPE.
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {err}", out.status);
    assert!(!err.contains("panicked"), "{err}");
}
