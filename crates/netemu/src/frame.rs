//! The Ethernet side of the emulator: what a host's frame asks for, and the frames the
//! emulator writes back. Hosts see one Ethernet segment with a peer per address; the
//! emulator answers ARP itself (at once: address resolution is not what is measured), learns
//! multicast membership from IGMP, and carries IPv4 datagrams through the model. Everything
//! else (IPv6, other ethertypes, link-local multicast) is counted and dropped.

use std::net::Ipv4Addr;

use etherparse::{EtherType, Ethernet2HeaderSlice, Ipv4HeaderSlice};

/// Length of an Ethernet II header.
pub const ETH_HEADER: usize = 14;
/// ARP over Ethernet for IPv4: the only ARP the emulator answers.
const ARP_LEN: usize = 28;
/// IP protocol number of IGMP.
const IGMP: u8 = 2;

/// The MAC address the emulator gives an IPv4 address: locally administered, unicast, the
/// address in its last four bytes. Hosts are configured with theirs, and ARP answers with it.
pub fn mac_of(ip: Ipv4Addr) -> [u8; 6] {
    let o = ip.octets();
    [0x02, 0x00, o[0], o[1], o[2], o[3]]
}

/// The Ethernet multicast address of an IPv4 group (RFC 1112 §6.4).
pub fn multicast_mac(group: Ipv4Addr) -> [u8; 6] {
    let o = group.octets();
    [0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]]
}

/// A change of multicast membership a host announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Membership {
    /// The host joined the group.
    Join(Ipv4Addr),
    /// The host left it.
    Leave(Ipv4Addr),
}

/// What a frame from a host asks of the emulator.
#[derive(Debug, PartialEq, Eq)]
pub enum Incoming<'a> {
    /// An ARP request for `target`: answer with [`arp_reply`].
    ArpRequest {
        /// The asking host's MAC and address.
        sender: ([u8; 6], Ipv4Addr),
        /// The address asked about.
        target: Ipv4Addr,
    },
    /// An IGMP report: membership changes (a report may carry several).
    Igmp(Vec<Membership>),
    /// An IPv4 datagram to carry: header and payload, without the Ethernet header.
    Ipv4 {
        /// Source address.
        src: Ipv4Addr,
        /// Destination address (unicast or a group).
        dst: Ipv4Addr,
        /// The datagram, exactly its total length.
        datagram: &'a [u8],
    },
    /// Something the emulator does not carry, and why.
    Ignored(&'static str),
}

/// Reads a frame a host sent.
pub fn classify(frame: &[u8]) -> Incoming<'_> {
    let Ok(eth) = Ethernet2HeaderSlice::from_slice(frame) else {
        return Incoming::Ignored("runt frame");
    };
    let body = &frame[ETH_HEADER..];
    match eth.ether_type() {
        EtherType::ARP => classify_arp(body),
        EtherType::IPV4 => classify_ipv4(body),
        EtherType::IPV6 => Incoming::Ignored("IPv6"),
        _ => Incoming::Ignored("other ethertype"),
    }
}

fn classify_arp(body: &[u8]) -> Incoming<'_> {
    // htype 1 (Ethernet), ptype 0x0800, hlen 6, plen 4, oper 1 (request).
    if body.len() < ARP_LEN || body[..8] != [0, 1, 8, 0, 6, 4, 0, 1] {
        return Incoming::Ignored("ARP other than an IPv4 request");
    }
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&body[8..14]);
    let spa = Ipv4Addr::new(body[14], body[15], body[16], body[17]);
    let tpa = Ipv4Addr::new(body[24], body[25], body[26], body[27]);
    if spa.is_unspecified() || spa == tpa {
        return Incoming::Ignored("ARP probe or announcement");
    }
    Incoming::ArpRequest {
        sender: (mac, spa),
        target: tpa,
    }
}

fn classify_ipv4(body: &[u8]) -> Incoming<'_> {
    let Ok(ip) = Ipv4HeaderSlice::from_slice(body) else {
        return Incoming::Ignored("malformed IPv4 header");
    };
    let total = usize::from(ip.total_len());
    if total > body.len() || total < ip.slice().len() {
        return Incoming::Ignored("IPv4 total length beyond the frame");
    }
    let (src, dst) = (ip.source_addr(), ip.destination_addr());
    let datagram = &body[..total];
    if ip.protocol().0 == IGMP {
        return classify_igmp(&datagram[ip.slice().len()..]);
    }
    if dst.is_multicast() && dst.octets()[..3] == [224, 0, 0] {
        return Incoming::Ignored("link-local multicast");
    }
    if dst.is_broadcast() {
        return Incoming::Ignored("broadcast");
    }
    Incoming::Ipv4 { src, dst, datagram }
}

/// IGMPv2 reports and leaves (RFC 2236) and IGMPv3 reports (RFC 3376 §4.2) for any-source
/// membership: a group is joined by a v2 report or a v3 record in EXCLUDE mode, left by a v2
/// leave or a v3 record that moves to INCLUDE with no source.
fn classify_igmp(igmp: &[u8]) -> Incoming<'_> {
    let group_at = |at: usize| -> Option<Ipv4Addr> {
        let b = igmp.get(at..at + 4)?;
        Some(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
    };
    match igmp.first() {
        Some(0x16) => match group_at(4) {
            Some(g) if g.is_multicast() => Incoming::Igmp(vec![Membership::Join(g)]),
            _ => Incoming::Ignored("malformed IGMPv2 report"),
        },
        Some(0x17) => match group_at(4) {
            Some(g) if g.is_multicast() => Incoming::Igmp(vec![Membership::Leave(g)]),
            _ => Incoming::Ignored("malformed IGMP leave"),
        },
        Some(0x22) => {
            let records = igmp
                .get(6..8)
                .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])));
            let mut at = 8;
            let mut changes = Vec::new();
            for _ in 0..records {
                let Some(head) = igmp.get(at..at + 8) else {
                    return Incoming::Ignored("truncated IGMPv3 report");
                };
                let kind = head[0];
                let aux = usize::from(head[1]) * 4;
                let sources = usize::from(u16::from_be_bytes([head[2], head[3]]));
                let group = Ipv4Addr::new(head[4], head[5], head[6], head[7]);
                at += 8 + sources * 4 + aux;
                if !group.is_multicast() {
                    continue;
                }
                match kind {
                    // MODE_IS_EXCLUDE, CHANGE_TO_EXCLUDE: any-source membership.
                    2 | 4 => changes.push(Membership::Join(group)),
                    // MODE_IS_INCLUDE, CHANGE_TO_INCLUDE with no source: not a member.
                    1 | 3 if sources == 0 => changes.push(Membership::Leave(group)),
                    // ALLOW with sources (source-specific): a member for those sources.
                    5 if sources > 0 => changes.push(Membership::Join(group)),
                    _ => {}
                }
            }
            Incoming::Igmp(changes)
        }
        _ => Incoming::Ignored("IGMP other than a report or leave"),
    }
}

/// The ARP reply telling `asker` that `target` is at [`mac_of`]`(target)`.
pub fn arp_reply(asker: ([u8; 6], Ipv4Addr), target: Ipv4Addr) -> Vec<u8> {
    let mac = mac_of(target);
    let mut f = Vec::with_capacity(ETH_HEADER + ARP_LEN);
    f.extend_from_slice(&asker.0);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x08, 0x06]);
    f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&target.octets());
    f.extend_from_slice(&asker.0);
    f.extend_from_slice(&asker.1.octets());
    f
}

/// The Ethernet frame that hands `datagram` (an IPv4 datagram from `src` to `dst`) to the
/// host at `host`.
pub fn to_host(host: Ipv4Addr, src: Ipv4Addr, dst: Ipv4Addr, datagram: &[u8]) -> Vec<u8> {
    let dst_mac = if dst.is_multicast() {
        multicast_mac(dst)
    } else {
        mac_of(host)
    };
    let mut f = Vec::with_capacity(ETH_HEADER + datagram.len());
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&mac_of(src));
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(datagram);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth(ethertype: [u8; 2], body: &[u8]) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&mac_of(Ipv4Addr::new(10, 0, 0, 1)));
        f.extend_from_slice(&ethertype);
        f.extend_from_slice(body);
        f
    }

    fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
        let h = etherparse::Ipv4Header::new(
            payload.len() as u16,
            1,
            etherparse::IpNumber(proto),
            src,
            dst,
        )
        .expect("header");
        let mut d = h.to_bytes().to_vec();
        d.extend_from_slice(payload);
        d
    }

    #[test]
    fn an_arp_request_is_answered_with_the_derived_mac() {
        let asker = (
            mac_of(Ipv4Addr::new(10, 0, 0, 1)),
            Ipv4Addr::new(10, 0, 0, 1),
        );
        let target = Ipv4Addr::new(10, 0, 0, 2);
        let mut req = vec![0, 1, 8, 0, 6, 4, 0, 1];
        req.extend_from_slice(&asker.0);
        req.extend_from_slice(&asker.1.octets());
        req.extend_from_slice(&[0; 6]);
        req.extend_from_slice(&target.octets());
        let f = eth([0x08, 0x06], &req);
        assert_eq!(
            classify(&f),
            Incoming::ArpRequest {
                sender: asker,
                target
            }
        );
        let reply = arp_reply(asker, target);
        assert_eq!(&reply[..6], &asker.0);
        assert_eq!(&reply[6..12], &mac_of(target));
        assert_eq!(&reply[20..22], &[0, 2]);
        assert_eq!(&reply[28..32], &target.octets());
        assert_eq!(&reply[38..42], &asker.1.octets());
    }

    #[test]
    fn ipv4_datagrams_are_carried_whole_and_trailing_padding_is_cut() {
        let d = ipv4(17, [10, 0, 0, 1], [10, 0, 0, 2], &[7; 20]);
        let mut padded = d.clone();
        padded.extend_from_slice(&[0; 6]);
        match classify(&eth([0x08, 0x00], &padded)) {
            Incoming::Ipv4 { src, dst, datagram } => {
                assert_eq!(src, Ipv4Addr::new(10, 0, 0, 1));
                assert_eq!(dst, Ipv4Addr::new(10, 0, 0, 2));
                assert_eq!(datagram, &d[..]);
            }
            other => panic!("{other:?}"),
        }
        let out = to_host(
            Ipv4Addr::new(10, 0, 0, 2),
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            &d,
        );
        assert_eq!(&out[..6], &mac_of(Ipv4Addr::new(10, 0, 0, 2)));
        assert_eq!(&out[ETH_HEADER..], &d[..]);
        let m = to_host(
            Ipv4Addr::new(10, 0, 0, 2),
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(239, 129, 2, 3),
            &d,
        );
        assert_eq!(&m[..6], &[0x01, 0x00, 0x5e, 0x01, 2, 3]);
    }

    #[test]
    fn igmp_v2_and_v3_reports_and_leaves_give_membership() {
        let g = Ipv4Addr::new(239, 1, 2, 3);
        let v2 = ipv4(2, [10, 0, 0, 2], g.octets(), &[0x16, 0, 0, 0, 239, 1, 2, 3]);
        assert_eq!(
            classify(&eth([0x08, 0x00], &v2)),
            Incoming::Igmp(vec![Membership::Join(g)])
        );
        let leave = ipv4(
            2,
            [10, 0, 0, 2],
            [224, 0, 0, 2],
            &[0x17, 0, 0, 0, 239, 1, 2, 3],
        );
        assert_eq!(
            classify(&eth([0x08, 0x00], &leave)),
            Incoming::Igmp(vec![Membership::Leave(g)])
        );
        // A v3 report with two records: CHANGE_TO_EXCLUDE {} (join) of g, and
        // CHANGE_TO_INCLUDE {} (leave) of 239.9.9.9.
        let mut v3 = vec![0x22, 0, 0, 0, 0, 0, 0, 2];
        v3.extend_from_slice(&[4, 0, 0, 0, 239, 1, 2, 3]);
        v3.extend_from_slice(&[3, 0, 0, 0, 239, 9, 9, 9]);
        let v3 = ipv4(2, [10, 0, 0, 2], [224, 0, 0, 22], &v3);
        assert_eq!(
            classify(&eth([0x08, 0x00], &v3)),
            Incoming::Igmp(vec![
                Membership::Join(g),
                Membership::Leave(Ipv4Addr::new(239, 9, 9, 9))
            ])
        );
        // Truncated: the record count promises more than the packet holds.
        let short = ipv4(
            2,
            [10, 0, 0, 2],
            [224, 0, 0, 22],
            &[0x22, 0, 0, 0, 0, 0, 0, 3],
        );
        assert_eq!(
            classify(&eth([0x08, 0x00], &short)),
            Incoming::Ignored("truncated IGMPv3 report")
        );
    }

    #[test]
    fn what_is_not_carried_says_why() {
        assert_eq!(classify(&[1, 2, 3]), Incoming::Ignored("runt frame"));
        assert_eq!(
            classify(&eth([0x86, 0xdd], &[0; 40])),
            Incoming::Ignored("IPv6")
        );
        let ll = ipv4(17, [10, 0, 0, 1], [224, 0, 0, 251], &[0; 8]);
        assert_eq!(
            classify(&eth([0x08, 0x00], &ll)),
            Incoming::Ignored("link-local multicast")
        );
        let mut bad = ipv4(17, [10, 0, 0, 1], [10, 0, 0, 2], &[0; 8]);
        bad.truncate(24);
        assert_eq!(
            classify(&eth([0x08, 0x00], &bad)),
            Incoming::Ignored("IPv4 total length beyond the frame")
        );
    }
}
