//! `pgmcc decode`: print a PGM packet field by field, or name what is wrong with it.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::process::ExitCode;

use crate::out::{out, outln};
use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pcap_file::pcap::PcapReader;
use pcap_file::DataLink;
use pgm_wire::header::Packet;
use pgm_wire::options::Opx;
use pgm_wire::{Body, ChecksumPolicy, Repr, OPT_NETWORK, OPT_PARITY, OPT_PRESENT, OPT_VAR_PKTLEN};

/// IANA protocol number of PGM.
const IPPROTO_PGM: u8 = 113;
/// OpenPGM's default UDP encapsulation ports (unicast, multicast).
const UDP_ENCAP_PORTS: [u16; 2] = [3055, 3056];

/// Arguments of `pgmcc decode`.
#[derive(Debug, ClapArgs)]
pub(crate) struct Args {
    /// Hex strings, raw datagram files, hex files or pcap captures (see above).
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<String>,
    /// Do not verify checksums (still shows whether they match).
    #[arg(long)]
    no_verify: bool,
    /// Extra UDP port carrying encapsulated PGM in pcap input (repeatable).
    #[arg(long = "udp-port", value_name = "PORT")]
    udp_ports: Vec<u16>,
}

/// Runs the subcommand.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let mut ok = 0usize;
    let mut bad = 0usize;
    for input in &args.inputs {
        for (label, datagram) in load(input, &args.udp_ports)? {
            outln!("# {label}");
            match describe(&datagram, !args.no_verify) {
                Ok(text) => {
                    out!("{text}");
                    ok += 1;
                }
                Err(e) => {
                    outln!(
                        "error: {e} ({} bytes: {})",
                        datagram.len(),
                        preview(&datagram)
                    );
                    bad += 1;
                }
            }
        }
    }
    if ok + bad > 1 {
        outln!("# {ok} decoded, {bad} malformed");
    }
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn preview(d: &[u8]) -> String {
    let shown = &d[..d.len().min(32)];
    let mut s = hex::encode(shown);
    if d.len() > shown.len() {
        s.push_str("...");
    }
    s
}

/// Turns one INPUT into labelled datagrams.
fn load(input: &str, extra_ports: &[u16]) -> Result<Vec<(String, Vec<u8>)>> {
    let path = Path::new(input);
    if path.is_file() {
        let mut bytes = Vec::new();
        File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .with_context(|| format!("reading {input}"))?;
        if is_pcap(&bytes) {
            return from_pcap(input, extra_ports);
        }
        if bytes.len() >= 4 && bytes[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
            bail!("{input}: pcapng is not supported yet; convert it with `editcap -F pcap IN OUT`");
        }
        if let Ok(text) = std::str::from_utf8(&bytes) {
            if let Ok(d) = parse_hex(text) {
                return Ok(vec![(format!("{input} (hex)"), d)]);
            }
        }
        return Ok(vec![(
            format!("{input} (raw, {} bytes)", bytes.len()),
            bytes,
        )]);
    }
    match parse_hex(input) {
        Ok(d) => Ok(vec![("hex input".to_string(), d)]),
        Err(e) => bail!("`{input}` is neither a file nor valid hex: {e}"),
    }
}

/// Parses hex text: whitespace, `:`, `0x` prefixes and `#` comments are ignored.
pub(crate) fn parse_hex(text: &str) -> Result<Vec<u8>> {
    let mut digits = String::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        for tok in line.split(|c: char| c.is_whitespace() || c == ':') {
            let tok = tok.strip_prefix("0x").unwrap_or(tok);
            digits.push_str(tok);
        }
    }
    if digits.is_empty() {
        bail!("no hex digits");
    }
    if digits.len() % 2 != 0 {
        bail!("odd number of hex digits ({})", digits.len());
    }
    hex::decode(&digits).context("invalid hex digit")
}

fn is_pcap(b: &[u8]) -> bool {
    b.len() >= 4
        && matches!(
            b[..4],
            [0xd4, 0xc3, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0xc3, 0xd4]
                | [0x4d, 0x3c, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0x3c, 0x4d]
        )
}

/// Extracts PGM datagrams from a pcap file.
fn from_pcap(path: &str, extra_ports: &[u16]) -> Result<Vec<(String, Vec<u8>)>> {
    let file = File::open(path).with_context(|| format!("opening {path}"))?;
    let mut reader = PcapReader::new(BufReader::new(file))
        .with_context(|| format!("{path}: not a readable pcap file"))?;
    let link = reader.header().datalink;
    let mut out = Vec::new();
    let mut frame = 0usize;
    let mut skipped = 0usize;
    while let Some(pkt) = reader.next_packet() {
        frame += 1;
        let pkt = pkt.with_context(|| format!("{path}: frame {frame} is truncated or corrupt"))?;
        let data: &[u8] = &pkt.data;
        let sliced = match link {
            DataLink::ETHERNET => SlicedPacket::from_ethernet(data).ok(),
            DataLink::LINUX_SLL => SlicedPacket::from_linux_sll(data).ok(),
            DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => SlicedPacket::from_ip(data).ok(),
            // BSD loopback: a 4-byte address family in host order, then IP.
            DataLink::NULL | DataLink::LOOP => data.get(4..).and_then(|d| SlicedPacket::from_ip(d).ok()),
            other => bail!("{path}: link type {other:?} is not supported (Ethernet, Linux SLL, raw IP, loopback are)"),
        };
        let Some(sliced) = sliced else {
            skipped += 1;
            continue;
        };
        let (src, dst, proto_payload) = match &sliced.net {
            Some(NetSlice::Ipv4(ip)) => (
                ip.header().source_addr().to_string(),
                ip.header().destination_addr().to_string(),
                ip.payload(),
            ),
            Some(NetSlice::Ipv6(ip)) => (
                ip.header().source_addr().to_string(),
                ip.header().destination_addr().to_string(),
                ip.payload(),
            ),
            _ => {
                skipped += 1;
                continue;
            }
        };
        let pgm: Option<Cow<'_, [u8]>> = match &sliced.transport {
            Some(TransportSlice::Udp(udp))
                if UDP_ENCAP_PORTS.contains(&udp.destination_port())
                    || UDP_ENCAP_PORTS.contains(&udp.source_port())
                    || extra_ports.contains(&udp.destination_port())
                    || extra_ports.contains(&udp.source_port()) =>
            {
                Some(Cow::Borrowed(udp.payload()))
            }
            _ if proto_payload.ip_number.0 == IPPROTO_PGM && !proto_payload.fragmented => {
                Some(Cow::Borrowed(proto_payload.payload))
            }
            _ => None,
        };
        match pgm {
            Some(p) => out.push((
                format!(
                    "frame {frame} t={:.6}s {src} -> {dst}",
                    pkt.timestamp.as_secs_f64()
                ),
                p.into_owned(),
            )),
            None => skipped += 1,
        }
    }
    if skipped > 0 {
        eprintln!("pgmcc: {path}: {skipped} of {frame} frames carry no PGM and were skipped");
    }
    Ok(out)
}

fn flags_text(byte: u8) -> String {
    let mut names = Vec::new();
    for (bit, name) in [
        (OPT_PRESENT, "OPT_PRESENT"),
        (OPT_NETWORK, "OPT_NETWORK"),
        (OPT_VAR_PKTLEN, "OPT_VAR_PKTLEN"),
        (OPT_PARITY, "OPT_PARITY"),
    ] {
        if byte & bit != 0 {
            names.push(name);
        }
    }
    format!(
        "0x{byte:02x} ({})",
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join("|")
        }
    )
}

/// Renders one datagram, one `field: value` line per field.
pub(crate) fn describe(datagram: &[u8], verify: bool) -> Result<String, pgm_wire::Error> {
    let policy = if verify {
        ChecksumPolicy::Verify
    } else {
        ChecksumPolicy::Ignore
    };
    let repr = Repr::parse_with(datagram, policy)?;
    let packet = Packet::new_unchecked(datagram);
    let mut s = String::new();
    let mut line = |k: &str, v: String| {
        let _ = writeln!(s, "{k}: {v}");
    };
    line("type", repr.packet_type().to_string());
    line("sport", repr.sport.to_string());
    line("dport", repr.dport.to_string());
    line("options", flags_text(packet.options_byte()));
    let stored = packet.checksum();
    let computed = packet.compute_checksum();
    line(
        "checksum",
        if stored == 0 {
            "0x0000 (not computed)".to_string()
        } else if stored == computed {
            format!("0x{stored:04x} (ok)")
        } else {
            format!("0x{stored:04x} (BAD, computed 0x{computed:04x})")
        },
    );
    line("gsi", repr.gsi.to_string());
    line("tsi", repr.tsi().to_string());
    line("tsdu_length", repr.payload.len().to_string());
    describe_body(&mut s, &repr.body);
    describe_options(&mut s, &repr.options);
    describe_ours(&mut s, &repr.options);
    let mut line = |k: &str, v: String| {
        let _ = writeln!(s, "{k}: {v}");
    };
    if !repr.payload.is_empty() {
        line("payload", preview(repr.payload));
    }
    Ok(s)
}

/// The type-specific header's fields.
fn describe_body(s: &mut String, body: &Body) {
    let mut line = |k: &str, v: String| {
        let _ = writeln!(s, "{k}: {v}");
    };
    match body {
        Body::Spm(b) => {
            line("spm.sqn", b.sqn.to_string());
            line("spm.trail", b.trail.to_string());
            line("spm.lead", b.lead.to_string());
            line("spm.path_nla", b.path_nla.to_string());
        }
        Body::Poll(b) => {
            line("poll.sqn", b.sqn.to_string());
            line("poll.round", b.round.to_string());
            line("poll.s_type", b.s_type.to_string());
            line("poll.path_nla", b.path_nla.to_string());
            line("poll.bo_ivl_us", b.bo_ivl.to_string());
            line("poll.rand", hex::encode(b.rand));
            line("poll.mask", format!("0x{:08x}", b.mask));
        }
        Body::Polr(b) => {
            line("polr.sqn", b.sqn.to_string());
            line("polr.round", b.round.to_string());
        }
        Body::Odata(b) | Body::Rdata(b) => {
            line("data.sqn", b.sqn.to_string());
            line("data.trail", b.trail.to_string());
        }
        Body::Nak(b) | Body::Nnak(b) | Body::Ncf(b) => {
            line("nak.sqn", b.sqn.to_string());
            line("nak.source_nla", b.source.to_string());
            line("nak.group_nla", b.group.to_string());
        }
        Body::Spmr => {}
        Body::Ack(b) => {
            line("ack.rx_max", b.rx_max.to_string());
            line("ack.bitmap", format!("0x{:08x}", b.bitmap));
        }
    }
}

/// RFC 3208's options and pgmcc's.
fn describe_options(s: &mut String, o: &pgm_wire::Options<'_>) {
    let mut line = |k: &str, v: String| {
        let _ = writeln!(s, "{k}: {v}");
    };
    if let Some(l) = &o.nak_list {
        line("opt.nak_list", format!("{:?}", l.as_slice()));
    }
    if let Some(a) = &o.redirect {
        line("opt.redirect", a.to_string());
    }
    if let Some(p) = &o.parity_prm {
        line(
            "opt.parity_prm",
            format!(
                "tgs={} proactive={} on_demand={}",
                p.tgs, p.proactive, p.on_demand
            ),
        );
    }
    if let Some(v) = o.curr_tgsize {
        line("opt.curr_tgsize", v.to_string());
    }
    if let Some(v) = &o.nak_bo_ivl {
        line("opt.nak_bo_ivl", format!("ivl_us={} sqn={}", v.ivl, v.sqn));
    }
    if let Some(v) = &o.nak_bo_rng {
        line(
            "opt.nak_bo_rng",
            format!("max_us={} min_us={}", v.max_ivl, v.min_ivl),
        );
    }
    if o.nbr_unreach {
        line("opt.nbr_unreach", "yes".to_string());
    }
    if let Some(a) = &o.path_nla {
        line("opt.path_nla", a.to_string());
    }
    if let Some(f) = &o.fragment {
        line(
            "opt.fragment",
            format!(
                "first_sqn={} offset={} apdu_len={}",
                f.first_sqn, f.offset, f.apdu_len
            ),
        );
    }
    if let Some(v) = o.join {
        line("opt.join.min_sqn", v.to_string());
    }
    if o.syn {
        line("opt.syn", "yes".to_string());
    }
    if o.fin {
        line("opt.fin", "yes".to_string());
    }
    if let Some(r) = &o.rst {
        line(
            "opt.rst",
            format!("no_repairs={} error_code={}", r.no_repairs, r.error_code),
        );
    }
    if let Some(v) = o.parity_grp {
        line("opt.parity_grp", v.to_string());
    }
    if let Some(d) = &o.pgmcc_data {
        line("opt.pgmcc_data.tstamp_ms", d.tstamp.to_string());
        line(
            "opt.pgmcc_data.acker",
            if d.acker.is_unspecified() {
                format!("{} (none: election request)", d.acker)
            } else {
                d.acker.to_string()
            },
        );
    }
    if let Some(f) = &o.pgmcc_feedback {
        line("opt.pgmcc_feedback.tstamp_ms", f.tstamp.to_string());
        line(
            "opt.pgmcc_feedback.loss_rate",
            format!(
                "{} ({:.3}%)",
                f.loss_rate,
                f64::from(f.loss_rate) * 100.0 / 65535.0
            ),
        );
        line("opt.pgmcc_feedback.rx", f.rx.to_string());
    }
}

/// Our experimental options (`docs/wire.md`) and options this decoder does not know.
fn describe_ours(s: &mut String, o: &pgm_wire::Options<'_>) {
    let mut line = |k: &str, v: String| {
        let _ = writeln!(s, "{k}: {v}");
    };
    let rate = |r: u32| {
        if r == pgm_wire::TfmccData::NO_RATE {
            "none".to_string()
        } else {
            format!("{:.3} pkt/s", f64::from(r) / 1000.0)
        }
    };
    if let Some(t) = &o.tfmcc_data {
        line(
            "opt.tfmcc_data",
            format!(
                "round={} round_ms={} r_max_ms={} clr_ivl_ms={} supp_rate={} send_rate={}",
                t.round,
                t.round_ms,
                t.r_max_ms,
                t.clr_ivl_ms,
                rate(t.supp_rate),
                rate(t.send_rate)
            ),
        );
    }
    if let Some(p) = &o.pseudofed {
        let reps: Vec<String> = p.reps.as_slice().iter().map(|a| a.to_string()).collect();
        line(
            "opt.pseudofed",
            format!(
                "flags=0x{:02x} grtt_ms={} wait_pct={} supp_pct={} ci_sqn={} reps=[{}]",
                p.flags,
                p.grtt_ms,
                p.wait_pct,
                p.supp_pct,
                p.ci_sqn,
                reps.join(", ")
            ),
        );
    }
    if let Some(l) = &o.lowweight {
        let mut flags = Vec::new();
        if l.flags & pgm_wire::LW_NO_ACKS != 0 {
            flags.push("no_acks");
        }
        if l.flags & pgm_wire::LW_QUICK_NAK != 0 {
            flags.push("quick_nak");
        }
        line(
            "opt.lowweight",
            format!(
                "flags=0x{:02x} ({}) rate={}",
                l.flags,
                flags.join(","),
                rate(l.rate)
            ),
        );
    }
    for u in &o.unknown {
        let opx = match u.opx() {
            Opx::Ignore => "ignore",
            Opx::Invalidate => "invalidate",
            Opx::Discard => "discard",
            Opx::Reserved => "reserved",
        };
        line(
            &format!("opt.unknown.0x{:02x}", u.code),
            format!(
                "flags=0x{:02x} opx={opx} data={}",
                u.flags,
                hex::encode(u.data)
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_with_comments_and_separators() {
        assert_eq!(
            parse_hex("0x01 02:03 # comment ff\n04").unwrap(),
            vec![1, 2, 3, 4]
        );
        assert!(parse_hex("abc").is_err());
        assert!(parse_hex("zz").is_err());
        assert!(parse_hex("# only a comment").is_err());
    }

    #[test]
    fn our_experimental_options_are_shown() {
        use pgm_wire::{Body, DataRepr, Gsi, LowWeight, Options, PgmccData, Repr, Tsi};
        let tsi = Tsi {
            gsi: Gsi([1, 2, 3, 4, 5, 6]),
            sport: 1000,
        };
        let pkt = Repr::downstream(tsi, 7500, Body::Odata(DataRepr { sqn: 9, trail: 1 }))
            .with_options(Options {
                pgmcc_data: Some(PgmccData {
                    tstamp: 5,
                    acker: "10.0.0.7".parse().unwrap(),
                }),
                lowweight: Some(LowWeight {
                    flags: pgm_wire::LW_NO_ACKS | pgm_wire::LW_QUICK_NAK,
                    rate: 12_500,
                }),
                ..Options::default()
            })
            .with_payload(b"x")
            .to_vec()
            .unwrap();
        let text = describe(&pkt, true).unwrap();
        assert!(
            text.contains("opt.lowweight") && text.contains("no_acks,quick_nak"),
            "{text}"
        );
        assert!(text.contains("12.500 pkt/s"), "{text}");
    }

    #[test]
    fn malformed_packet_is_described_as_error() {
        let e = describe(&[0u8; 10], true).unwrap_err();
        assert_eq!(e.kind(), "truncated");
    }
}
