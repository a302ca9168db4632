//! Sockets: UDP encapsulation (OpenPGM's framing) or raw IP protocol 113, multicast set-up,
//! and finding which local address faces the group.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket as StdUdpSocket};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use tokio::net::UdpSocket;

use crate::error::Error;

/// IANA protocol number of PGM.
pub const IPPROTO_PGM: i32 = 113;

/// OpenPGM's default UDP encapsulation port for unicast (upstream: NAK, SPMR, ACK).
pub const DEFAULT_UDP_UCAST_PORT: u16 = 3055;
/// OpenPGM's default UDP encapsulation port for multicast (downstream: SPM, ODATA, RDATA, NCF).
pub const DEFAULT_UDP_MCAST_PORT: u16 = 3056;

/// How PGM packets travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encapsulation {
    /// PGM inside UDP (RFC 3208 appendix, OpenPGM's `PGM_UDP_ENCAP_*`): the datagram's
    /// payload is the PGM packet, nothing before it. Downstream packets go to the group on
    /// `mcast_port`, upstream packets to the source (or network element) on `ucast_port`.
    Udp {
        /// Port upstream packets (NAK, SPMR, ACK) are sent to; the source listens here.
        ucast_port: u16,
        /// Port downstream packets are sent to; receivers listen here.
        mcast_port: u16,
    },
    /// PGM directly over IP, protocol 113 (needs root or CAP_NET_RAW).
    RawIp,
}

impl Default for Encapsulation {
    fn default() -> Encapsulation {
        Encapsulation::Udp {
            ucast_port: DEFAULT_UDP_UCAST_PORT,
            mcast_port: DEFAULT_UDP_MCAST_PORT,
        }
    }
}

/// The network interface to use for the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interface {
    /// By name, e.g. `eth0`.
    Name(String),
    /// By one of its IPv4 addresses.
    Addr(Ipv4Addr),
}

impl std::str::FromStr for Interface {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Interface, Self::Err> {
        Ok(match s.parse::<Ipv4Addr>() {
            Ok(a) => Interface::Addr(a),
            Err(_) => Interface::Name(s.to_string()),
        })
    }
}

impl std::fmt::Display for Interface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Interface::Name(n) => f.write_str(n),
            Interface::Addr(a) => write!(f, "{a}"),
        }
    }
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}

/// The local IPv4 address that faces `group`: the given interface's address, or the one the
/// routing table picks. It is this host's NLA in SPMs and in pgmcc reports.
pub fn local_addr_for(group: Ipv4Addr, iface: Option<&Interface>) -> Result<Ipv4Addr, Error> {
    if let Some(Interface::Addr(a)) = iface {
        return Ok(*a);
    }
    let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
        .map_err(io_err("creating a UDP socket"))?;
    if let Some(Interface::Name(name)) = iface {
        sock.bind_device(Some(name.as_bytes()))
            .map_err(|source| Error::Interface {
                name: name.clone(),
                reason: format!("cannot bind to it: {source}"),
            })?;
    }
    // Connecting a datagram socket sends nothing; it asks the kernel for the route and the
    // source address it would use.
    let target = SockAddr::from(SocketAddrV4::new(group, DEFAULT_UDP_MCAST_PORT));
    sock.connect(&target).map_err(|source| match iface {
        Some(Interface::Name(name)) => Error::Interface {
            name: name.clone(),
            reason: format!("no route to {group} through it: {source}"),
        },
        _ => Error::NoRoute { group, source },
    })?;
    let local = sock
        .local_addr()
        .map_err(io_err("reading the local address"))?;
    match local.as_socket() {
        Some(SocketAddr::V4(a)) if !a.ip().is_unspecified() => Ok(*a.ip()),
        _ => Err(Error::Interface {
            name: iface.map_or_else(|| "(default route)".into(), |i| i.to_string()),
            reason: "it has no IPv4 address".into(),
        }),
    }
}

/// Socket options shared by senders and receivers.
#[derive(Debug, Clone)]
pub(crate) struct SocketSetup {
    pub(crate) group: Ipv4Addr,
    pub(crate) local: Ipv4Addr,
    pub(crate) encapsulation: Encapsulation,
    pub(crate) ttl: u32,
    pub(crate) multicast_loop: bool,
}

impl SocketSetup {
    /// Checks that `group` is a multicast group and finds the local address facing it.
    pub(crate) fn resolve(
        group: Ipv4Addr,
        interface: Option<&Interface>,
        encapsulation: Encapsulation,
        ttl: u32,
        multicast_loop: bool,
    ) -> Result<SocketSetup, Error> {
        if !group.is_multicast() {
            return Err(Error::NotMulticast(group));
        }
        Ok(SocketSetup {
            group,
            local: local_addr_for(group, interface)?,
            encapsulation,
            ttl,
            multicast_loop,
        })
    }
}

fn base_socket(setup: &SocketSetup) -> Result<Socket, Error> {
    let sock = match setup.encapsulation {
        Encapsulation::Udp { .. } => Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
            .map_err(io_err("creating a UDP socket"))?,
        Encapsulation::RawIp => Socket::new(
            Domain::IPV4,
            Type::RAW,
            Some(Protocol::from(IPPROTO_PGM)),
        )
        .map_err(|source| Error::Io {
            context: "creating a raw IP socket for protocol 113 (needs root or CAP_NET_RAW)".into(),
            source,
        })?,
    };
    sock.set_multicast_if_v4(&setup.local)
        .map_err(io_err(format!(
            "selecting interface {} for multicast",
            setup.local
        )))?;
    sock.set_multicast_ttl_v4(setup.ttl)
        .map_err(io_err("setting the multicast TTL"))?;
    sock.set_multicast_loop_v4(setup.multicast_loop)
        .map_err(io_err("setting multicast loop"))?;
    // Larger buffers ride out bursts; the kernel caps them at net.core.[rw]mem_max.
    let _ = sock.set_recv_buffer_size(4 << 20);
    let _ = sock.set_send_buffer_size(4 << 20);
    sock.set_nonblocking(true)
        .map_err(io_err("making the socket non-blocking"))?;
    Ok(sock)
}

/// Turns a socket2 socket into a tokio one. A raw socket is a datagram socket too: the
/// `recvfrom`/`sendto` calls behind `UdpSocket` work on it unchanged (ports read as 0).
fn into_tokio(sock: Socket) -> Result<UdpSocket, Error> {
    let std: StdUdpSocket = sock.into();
    UdpSocket::from_std(std).map_err(io_err("registering the socket with tokio"))
}

/// A source's socket: sends everything, receives upstream packets on the unicast port.
pub(crate) fn sender_socket(setup: &SocketSetup) -> Result<UdpSocket, Error> {
    let sock = base_socket(setup)?;
    // The source never joins the group: keep other sockets' memberships from feeding it.
    let _ = sock.set_multicast_all_v4(false);
    if let Encapsulation::Udp {
        ucast_port,
        mcast_port,
    } = setup.encapsulation
    {
        if ucast_port == mcast_port {
            // One port for both directions (what OpenPGM sources and ZeroMQ's epgm expect):
            // receivers on this host bind GROUP:port, which must coexist with this binding.
            sock.set_reuse_address(true)
                .map_err(io_err("setting SO_REUSEADDR"))?;
        }
        let addr = SockAddr::from(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, ucast_port));
        sock.bind(&addr).map_err(|source| Error::Io {
            context: format!("binding UDP port {ucast_port} (another source on this host? each needs its own ports: --udp-ports UCAST,MCAST)"),
            source,
        })?;
    }
    into_tokio(sock)
}

/// A source's second upstream socket: it only listens, on UDP `port` of every address
/// ([`SenderOptions::also_listen`](crate::SenderOptions::also_listen)).
pub(crate) fn listen_socket(setup: &SocketSetup, port: u16) -> Result<UdpSocket, Error> {
    let sock = base_socket(setup)?;
    let _ = sock.set_multicast_all_v4(false);
    let addr = SockAddr::from(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port));
    sock.bind(&addr).map_err(|source| Error::Io {
        context: format!("binding UDP port {port} to hear NAKs there too (another source on this host? give --udp-ports)"),
        source,
    })?;
    into_tokio(sock)
}

/// A receiver's sockets: one bound to the group (downstream packets only, shared with other
/// receivers on this host) and one to send upstream packets from (a socket bound to a
/// multicast address cannot send unicast).
pub(crate) fn receiver_sockets(setup: &SocketSetup) -> Result<(UdpSocket, UdpSocket), Error> {
    let recv = base_socket(setup)?;
    recv.set_reuse_address(true)
        .map_err(io_err("setting SO_REUSEADDR"))?;
    let _ = recv.set_multicast_all_v4(false);
    if let Encapsulation::Udp { mcast_port, .. } = setup.encapsulation {
        let addr = SockAddr::from(SocketAddrV4::new(setup.group, mcast_port));
        recv.bind(&addr).map_err(|source| Error::Io {
            context: format!("binding {}:{mcast_port}", setup.group),
            source,
        })?;
    }
    recv.join_multicast_v4(&setup.group, &setup.local)
        .map_err(io_err(format!(
            "joining {} on the interface with address {}",
            setup.group, setup.local
        )))?;
    let send = base_socket(setup)?;
    if matches!(setup.encapsulation, Encapsulation::Udp { .. }) {
        // From our NLA, so the source sees the address our reports name.
        let addr = SockAddr::from(SocketAddrV4::new(setup.local, 0));
        send.bind(&addr)
            .map_err(io_err("binding the upstream socket"))?;
    }
    Ok((into_tokio(recv)?, into_tokio(send)?))
}

/// Where a core [`pgmcc::Destination`] goes on the wire.
pub(crate) fn destination(
    setup: &SocketSetup,
    dst: pgmcc::Destination,
) -> Result<SocketAddr, Error> {
    let (ip, port) = match (dst, setup.encapsulation) {
        (pgmcc::Destination::Group, Encapsulation::Udp { mcast_port, .. }) => {
            (IpAddr::V4(setup.group), mcast_port)
        }
        (pgmcc::Destination::Unicast(ip), Encapsulation::Udp { ucast_port, .. }) => {
            (ip, ucast_port)
        }
        (pgmcc::Destination::Group, Encapsulation::RawIp) => (IpAddr::V4(setup.group), 0),
        (pgmcc::Destination::Unicast(ip), Encapsulation::RawIp) => (ip, 0),
    };
    if !ip.is_ipv4() {
        return Err(Error::Unsupported(format!(
            "IPv6 destination {ip} (this runtime speaks IPv4 only so far)"
        )));
    }
    Ok(SocketAddr::new(ip, port))
}

/// The PGM packet inside a received datagram: the whole datagram over UDP, past the IP
/// header over raw IP. `None` if a raw datagram is too short to hold its IP header.
pub(crate) fn pgm_payload(encapsulation: Encapsulation, datagram: &[u8]) -> Option<&[u8]> {
    match encapsulation {
        Encapsulation::Udp { .. } => Some(datagram),
        Encapsulation::RawIp => {
            let ihl = usize::from(datagram.first()? & 0x0f) * 4;
            datagram.get(ihl..).filter(|_| ihl >= 20)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_parses_addresses_and_names() {
        assert_eq!(
            "10.0.0.1".parse::<Interface>(),
            Ok(Interface::Addr(Ipv4Addr::new(10, 0, 0, 1)))
        );
        assert_eq!(
            "veth0".parse::<Interface>(),
            Ok(Interface::Name("veth0".into()))
        );
    }

    #[test]
    fn raw_payload_skips_the_ip_header() {
        let mut d = vec![0x45u8];
        d.extend_from_slice(&[0; 19]);
        d.extend_from_slice(b"pgm");
        assert_eq!(pgm_payload(Encapsulation::RawIp, &d), Some(&b"pgm"[..]));
        assert_eq!(pgm_payload(Encapsulation::RawIp, &[0x46, 0, 0]), None);
        assert_eq!(pgm_payload(Encapsulation::RawIp, &[0x41; 30]), None);
        assert_eq!(
            pgm_payload(Encapsulation::default(), b"pgm"),
            Some(&b"pgm"[..])
        );
    }

    #[test]
    fn loopback_faces_a_group_when_asked_by_address() {
        let a = local_addr_for(
            Ipv4Addr::new(239, 1, 1, 1),
            Some(&Interface::Addr(Ipv4Addr::LOCALHOST)),
        );
        assert_eq!(a.ok(), Some(Ipv4Addr::LOCALHOST));
    }
}
