//! The network options `pgmcc send` and `pgmcc recv` share, and the parsers for flag values
//! (ports, rates, durations).

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args as ClapArgs;
use pgmcc::cc::Controller;
use pgmcc_net::{Encapsulation, Interface, Key, KeyedStats};

/// Network options shared by `send` and `recv`.
#[derive(Debug, ClapArgs)]
pub(crate) struct NetArgs {
    /// Multicast group and PGM data-destination port, e.g. 239.192.0.1:7500. Sender and
    /// receivers must use the same. (ZeroMQ's epgm://IF;GROUP:PORT uses PORT here too.)
    #[arg(long, value_name = "GROUP:PORT")]
    pub(super) group: SocketAddrV4,
    /// Network interface, by name (eth0) or by one of its IPv4 addresses
    /// [default: the interface the routing table picks for the group].
    #[arg(long, value_name = "IF")]
    pub(super) iface: Option<Interface>,
    /// UDP encapsulation ports, UCAST,MCAST: upstream packets (NAKs, ACKs) go to the source
    /// on UCAST, downstream packets (data, SPMs, NCFs) to the group on MCAST [default:
    /// 3055,3056, OpenPGM's defaults; with --peer, what that peer needs].
    #[arg(long, value_name = "UCAST,MCAST", value_parser = parse_ports)]
    udp_ports: Option<(u16, u16)>,
    /// The other end is not pgmcc: set what it needs in one flag. `openpgm` (libpgm 5.3
    /// programs): one UDP port both ways, 3056 (a libpgm source hears NAKs only there), and a
    /// sender also hears NAKs on 3055, where libpgm receivers at their defaults send them; a
    /// receiver accepts a stream whose start is not marked (libpgm sends no OPT_SYN); a
    /// sender uses no congestion control (libpgm receivers never ACK: give --rate-max) and
    /// no FEC parity. `zeromq` (epgm:// SUB or PUB sockets): the group's port both ways;
    /// a receiver decodes ZeroMQ's framing (as --zmq), a sender sends each packet as one
    /// ZeroMQ message in that framing, without congestion control or parity, as for
    /// openpgm. Without it, ZeroMQ subscribers on the group and port abort (libzmq asserts
    /// on data not in its framing). Flags given explicitly win.
    #[arg(long, value_name = "PEER")]
    pub(super) peer: Option<Peer>,
    /// Carry PGM directly over IP (protocol 113) instead of UDP; needs root or CAP_NET_RAW.
    #[arg(long)]
    raw_ip: bool,
    /// Keyed mode, for a closed group: seal every packet, both ways, with the group key in
    /// FILE (make one with `pgmcc keygen FILE`; copy it to every sender and receiver over a
    /// secure channel). Data is encrypted; packets not sealed with the key are counted and
    /// dropped, so no stranger can inject data, end the session or steer the rate. The
    /// sender and all receivers must use the same key; OpenPGM and ZeroMQ cannot take part.
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// Write final statistics as JSON to FILE (`-` for standard output) when done.
    #[arg(long, value_name = "FILE")]
    pub(super) stats: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short)]
    pub(super) quiet: bool,
    /// Serve counters for Prometheus (OpenMetrics text) at http://ADDR/metrics while
    /// running, e.g. 127.0.0.1:9464: bytes, packets, NAKs, repairs, losses, the acker, its
    /// RTT and the window, delivery outcomes, drops by reason. No authentication: bind a
    /// loopback or management address.
    #[arg(long, value_name = "ADDR")]
    pub(super) metrics: Option<std::net::SocketAddr>,
}

/// A non-pgmcc implementation at the other end (`--peer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Peer {
    /// OpenPGM (libpgm 5.3) sources or receivers.
    #[value(name = "openpgm")]
    OpenPgm,
    /// ZeroMQ PUB or SUB sockets on epgm://.
    #[value(name = "zeromq")]
    ZeroMq,
}

impl NetArgs {
    /// UDP on `--udp-ports` (or the `--peer`'s, or OpenPGM's defaults), or raw IP with
    /// `--raw-ip`.
    pub(super) fn encapsulation(&self) -> Encapsulation {
        if self.raw_ip {
            return Encapsulation::RawIp;
        }
        let (ucast_port, mcast_port) = self.udp_ports.unwrap_or(match self.peer {
            Some(Peer::OpenPgm) => (3056, 3056),
            Some(Peer::ZeroMq) => (self.group.port(), self.group.port()),
            None => (3055, 3056),
        });
        Encapsulation::Udp {
            ucast_port,
            mcast_port,
        }
    }

    /// The extra UDP port a source hears NAKs on: 3055 with `--peer openpgm` at OpenPGM's
    /// default ports (libpgm receivers NAK to their ucast port, 3055, a libpgm source
    /// listens on 3056).
    pub(super) fn also_listen(&self) -> Option<u16> {
        (self.peer == Some(Peer::OpenPgm) && self.udp_ports.is_none() && !self.raw_ip)
            .then_some(3055)
    }

    /// The other end is libpgm (every `--peer` is: OpenPGM's programs, and ZeroMQ's
    /// sockets inside libzmq): its receivers never ACK and take no FEC parity.
    pub(super) fn libpgm_peer(&self) -> bool {
        matches!(self.peer, Some(Peer::OpenPgm | Peer::ZeroMq))
    }

    /// Whether `--key` was given.
    pub(super) fn has_key(&self) -> bool {
        self.key.is_some()
    }

    /// The group key of `--key`, read and checked (a missing, malformed or world-readable
    /// file is an error that names it).
    pub(super) fn key(&self) -> Result<Option<Key>> {
        self.key
            .as_deref()
            .map(Key::load)
            .transpose()
            .map_err(anyhow::Error::from)
    }

    /// The group's address, refused unless it is a multicast one.
    pub(super) fn group(&self) -> Result<Ipv4Addr> {
        let g = *self.group.ip();
        if !g.is_multicast() {
            bail!("--group {g}: not a multicast address (224.0.0.0/4; use 239.x.y.z for a private group)");
        }
        Ok(g)
    }
}

/// `UCAST,MCAST`, two non-zero ports.
fn parse_ports(s: &str) -> Result<(u16, u16), String> {
    let (u, m) = s
        .split_once(',')
        .ok_or_else(|| format!("`{s}`: give two ports, UCAST,MCAST (e.g. 3055,3056)"))?;
    let p = |x: &str| {
        x.trim()
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("`{x}` is not a port number (1-65535)"))
    };
    Ok((p(u)?, p(m)?))
}

/// A controller name from the registry ([`Controller::ALL`]): `--help` lists each with its
/// [`Controller::about`], and a wrong name is refused with the list of valid ones.
pub(super) fn controller_parser() -> impl TypedValueParser<Value = Controller> {
    PossibleValuesParser::new(Controller::ALL.map(|c| PossibleValue::new(c.name()).help(c.about())))
        .try_map(|name| name.parse::<Controller>())
}

/// A rate with its unit, in bytes per second (at least 1): bits per second as `20Mbit`,
/// `500kbit`, `1Gbit` (`b`, `bit`, `bps` alike), or bytes per second with a capital B as
/// `2MB`, `500KB`, `2MB/s`. A bare number is refused: `20` could mean bits, kilobits or
/// megabytes, and the wrong guess is off by a factor of up to 8 million.
pub(super) fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let Some(at) = t.find(|c: char| c.is_ascii_alphabetic()) else {
        return Err(format!(
            "`{s}`: give a unit, e.g. 20Mbit (bits per second) or 2MB (bytes per second)"
        ));
    };
    let (number, unit) = t.split_at(at);
    let unit = unit.trim_end_matches("/s");
    match unit.strip_suffix('B') {
        // Bytes per second: the same prefixes, the number counts bytes.
        Some(prefix) => netsim::units::rate(&format!("{number}{prefix}bit")).map(|b| b.max(1)),
        None => netsim::units::rate(t).map(|bits| (bits / 8).max(1)),
    }
}

/// A duration such as `3s` or `500ms`; a bare `0` is zero (flags use it for "never").
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    netsim::units::duration(s)
}

/// A duration for messages, in seconds: "30 s", "2.5 s".
pub(crate) fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// What refused datagrams suggest, for the user: a key mismatch, clocks out of step, a peer
/// keyed when we are not, or the reverse. Empty when nothing was refused.
pub(super) fn key_hints(
    keyed: Option<&KeyedStats>,
    sealed_without_key: u64,
    start_slack: Duration,
) -> Vec<String> {
    let mut hints = Vec::new();
    if sealed_without_key > 0 {
        hints.push(format!(
            "{sealed_without_key} datagrams were sealed with a group key and dropped: the peer runs in keyed mode; pass the same --key FILE"
        ));
    }
    let Some(k) = keyed else {
        return hints;
    };
    if k.other_key > 0 {
        hints.push(format!(
            "{} datagrams were sealed under another key (id {}) and dropped: every member must use the same --key file (this one's is {})",
            k.other_key,
            k.other_key_id.map(|id| id.to_string()).unwrap_or_default(),
            k.key_id.map(|id| id.to_string()).unwrap_or_default()
        ));
    }
    if k.stale > 0 {
        hints.push(format!(
            "{} authentic datagrams were dropped as sealed {:.0} s away from this host's clock (a replay, or clocks out of step: keyed mode needs clocks within {} s)",
            k.stale,
            k.stale_skew_ms.unwrap_or_default() as f64 / 1000.0,
            pgmcc_net::keyed::MAX_SKEW.as_secs()
        ));
    }
    if k.before_start > 0 {
        hints.push(format!(
            "{} authentic datagrams of sessions sealed more than {} before this receiver started (--start-slack) were dropped: a recording of an earlier session played back (or clocks that far out of step)",
            k.before_start,
            secs(start_slack)
        ));
    }
    if k.not_sealed > 0 && k.opened == 0 {
        hints.push(format!(
            "{} datagrams were not sealed and were dropped: is the peer running without --key?",
            k.not_sealed
        ));
    }
    let forged = k.forged + k.wrong_direction + k.mismatched;
    if forged > 0 {
        hints.push(format!(
            "{forged} datagrams failed authentication and were dropped (forged or corrupted)"
        ));
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_need_a_unit_and_a_capital_b_means_bytes() {
        assert_eq!(parse_rate("20Mbit"), Ok(2_500_000));
        assert_eq!(parse_rate("500kbit"), Ok(62_500));
        assert_eq!(parse_rate("8bps"), Ok(1));
        assert_eq!(parse_rate("2MB"), Ok(2_000_000));
        assert_eq!(parse_rate("2MB/s"), Ok(2_000_000));
        assert_eq!(parse_rate("500KB"), Ok(500_000));
        assert_eq!(parse_rate("1000B"), Ok(1000));
        for bad in ["20", "", "1.5"] {
            let e = parse_rate(bad).unwrap_err();
            assert!(e.contains("give a unit"), "{bad}: {e}");
        }
        assert!(parse_rate("20 furlongs").is_err());
    }

    #[test]
    fn durations_need_a_unit_except_zero() {
        // --feedback-timeout's help says "0 never gives up": a bare 0 must parse.
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("5").is_err());
    }
}
