//! Small value types shared by every packet: packet type, GSI/TSI and NLAs.

use core::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::{Error, Result};

/// PGM packet types (RFC 3208 §8, plus pgmcc's ACK as OpenPGM numbers it).
///
/// The value is the low nibble of the header's type byte; the high two bits are the
/// protocol version (0) and the next two are reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PacketType {
    /// Source Path Message (RFC 3208 §8.1), 0x00.
    Spm,
    /// Poll request (§14.7.1), 0x01.
    Poll,
    /// Poll response (§14.7.2), 0x02.
    Polr,
    /// Original data (§8.2), 0x04.
    Odata,
    /// Repair data (§8.2), 0x05.
    Rdata,
    /// Negative acknowledgement (§8.3), 0x08.
    Nak,
    /// Null NAK, sent by a DLR (§8.3), 0x09.
    Nnak,
    /// NAK confirmation (§8.3), 0x0a.
    Ncf,
    /// SPM request (§13.6), 0x0c.
    Spmr,
    /// pgmcc acknowledgement, 0x0d: not in RFC 3208; code as OpenPGM `PGM_ACK`.
    Ack,
}

impl PacketType {
    /// All packet types, in code order.
    pub const ALL: [PacketType; 10] = [
        PacketType::Spm,
        PacketType::Poll,
        PacketType::Polr,
        PacketType::Odata,
        PacketType::Rdata,
        PacketType::Nak,
        PacketType::Nnak,
        PacketType::Ncf,
        PacketType::Spmr,
        PacketType::Ack,
    ];

    /// The wire code.
    pub const fn code(self) -> u8 {
        match self {
            PacketType::Spm => 0x00,
            PacketType::Poll => 0x01,
            PacketType::Polr => 0x02,
            PacketType::Odata => 0x04,
            PacketType::Rdata => 0x05,
            PacketType::Nak => 0x08,
            PacketType::Nnak => 0x09,
            PacketType::Ncf => 0x0a,
            PacketType::Spmr => 0x0c,
            PacketType::Ack => 0x0d,
        }
    }

    /// Decodes a full type byte: version bits must be 0, reserved bits are ignored.
    pub fn from_type_byte(byte: u8) -> Result<PacketType> {
        let version = byte >> 6;
        if version != 0 {
            return Err(Error::BadVersion(version));
        }
        Ok(match byte & 0x0f {
            0x00 => PacketType::Spm,
            0x01 => PacketType::Poll,
            0x02 => PacketType::Polr,
            0x04 => PacketType::Odata,
            0x05 => PacketType::Rdata,
            0x08 => PacketType::Nak,
            0x09 => PacketType::Nnak,
            0x0a => PacketType::Ncf,
            0x0c => PacketType::Spmr,
            0x0d => PacketType::Ack,
            _ => return Err(Error::UnknownType(byte)),
        })
    }

    /// Upstream packets (receiver to source) carry the TSI's source port in `dport`
    /// (RFC 3208 §8: ports are swapped); OpenPGM's `PGM_IS_UPSTREAM`.
    pub const fn is_upstream(self) -> bool {
        matches!(
            self,
            PacketType::Nak
                | PacketType::Nnak
                | PacketType::Spmr
                | PacketType::Polr
                | PacketType::Ack
        )
    }

    /// The RFC's name for the type, e.g. `"ODATA"`.
    pub const fn name(self) -> &'static str {
        match self {
            PacketType::Spm => "SPM",
            PacketType::Poll => "POLL",
            PacketType::Polr => "POLR",
            PacketType::Odata => "ODATA",
            PacketType::Rdata => "RDATA",
            PacketType::Nak => "NAK",
            PacketType::Nnak => "NNAK",
            PacketType::Ncf => "NCF",
            PacketType::Spmr => "SPMR",
            PacketType::Ack => "ACK",
        }
    }
}

impl fmt::Display for PacketType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Global Source Identifier: 6 bytes chosen by the source, unique per host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Gsi(pub [u8; 6]);

impl fmt::Display for Gsi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.0;
        write!(f, "{}.{}.{}.{}.{}.{}", g[0], g[1], g[2], g[3], g[4], g[5])
    }
}

/// Transport Session Identifier: GSI plus the source's data-source port (RFC 3208 §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Tsi {
    /// Global source identifier.
    pub gsi: Gsi,
    /// Data-source port.
    pub sport: u16,
}

impl fmt::Display for Tsi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.gsi, self.sport)
    }
}

/// A TSI written as [`Tsi`]'s `Display` shows it: the GSI's six bytes and the data-source
/// port, in decimal, separated by dots (`12.34.56.78.90.12.4000`).
impl std::str::FromStr for Tsi {
    type Err = TsiParseError;

    fn from_str(s: &str) -> core::result::Result<Tsi, TsiParseError> {
        let bad = || TsiParseError(s.to_string());
        let parts: Vec<&str> = s.trim().split('.').collect();
        let [g0, g1, g2, g3, g4, g5, port] = parts[..] else {
            return Err(bad());
        };
        let mut gsi = [0u8; 6];
        for (b, p) in gsi.iter_mut().zip([g0, g1, g2, g3, g4, g5]) {
            *b = p.parse().map_err(|_| bad())?;
        }
        Ok(Tsi {
            gsi: Gsi(gsi),
            sport: port.parse().map_err(|_| bad())?,
        })
    }
}

/// A string that is not a TSI.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a TSI: expected six GSI bytes and a port, in decimal, separated by dots, as `pgmcc send` prints it (e.g. 12.34.56.78.90.12.4000)")]
pub struct TsiParseError(String);

/// Address family indicator for IPv4 NLAs (RFC 1700).
pub const AFI_IP: u16 = 1;
/// Address family indicator for IPv6 NLAs (RFC 1700).
pub const AFI_IP6: u16 = 2;

/// The AFI of an address.
pub const fn afi_of(addr: &IpAddr) -> u16 {
    match addr {
        IpAddr::V4(_) => AFI_IP,
        IpAddr::V6(_) => AFI_IP6,
    }
}

/// Bytes an NLA occupies (4 or 16).
pub const fn nla_len(addr: &IpAddr) -> usize {
    match addr {
        IpAddr::V4(_) => 4,
        IpAddr::V6(_) => 16,
    }
}

/// Length of the NLA that follows an AFI, or [`Error::BadAfi`].
pub(crate) fn nla_len_for_afi(afi: u16) -> Result<usize> {
    match afi {
        AFI_IP => Ok(4),
        AFI_IP6 => Ok(16),
        other => Err(Error::BadAfi(other)),
    }
}

/// Reads an NLA of the given AFI from the front of `buf` (caller checked the length).
pub(crate) fn read_nla(afi: u16, buf: &[u8]) -> Result<IpAddr> {
    let n = nla_len_for_afi(afi)?;
    if buf.len() < n {
        return Err(Error::Truncated {
            what: "NLA",
            needed: n,
            have: buf.len(),
        });
    }
    Ok(match n {
        4 => IpAddr::V4(Ipv4Addr::new(buf[0], buf[1], buf[2], buf[3])),
        _ => {
            let mut o = [0u8; 16];
            o.copy_from_slice(&buf[..16]);
            IpAddr::V6(Ipv6Addr::from(o))
        }
    })
}

/// Writes an NLA's address bytes to the front of `buf` (caller sized it).
pub(crate) fn write_nla(addr: &IpAddr, buf: &mut [u8]) {
    match addr {
        IpAddr::V4(a) => buf[..4].copy_from_slice(&a.octets()),
        IpAddr::V6(a) => buf[..16].copy_from_slice(&a.octets()),
    }
}

/// Big-endian readers for fixed offsets the caller has already bounds-checked.
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub(crate) fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

pub(crate) fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// Fails with [`Error::Truncated`] unless `buf` holds at least `needed` bytes.
pub(crate) fn need(what: &'static str, buf: &[u8], needed: usize) -> Result<()> {
    if buf.len() < needed {
        Err(Error::Truncated {
            what,
            needed,
            have: buf.len(),
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsis_parse_as_they_print() {
        let t = Tsi {
            gsi: Gsi([58, 156, 37, 215, 211, 102]),
            sport: 15458,
        };
        assert_eq!(t.to_string().parse::<Tsi>(), Ok(t));
        for bad in [
            "",
            "1.2.3.4.5.6",
            "1.2.3.4.5.6.7.8",
            "1.2.3.4.5.256.7",
            "a.2.3.4.5.6.7",
            "1.2.3.4.5.6.70000",
        ] {
            let e = bad.parse::<Tsi>().unwrap_err().to_string();
            assert!(e.contains("is not a TSI"), "{bad}: {e}");
        }
    }

    #[test]
    fn type_codes_round_trip() {
        for t in PacketType::ALL {
            assert_eq!(PacketType::from_type_byte(t.code()), Ok(t));
        }
    }

    #[test]
    fn version_and_unknown_types_rejected() {
        assert_eq!(PacketType::from_type_byte(0x44), Err(Error::BadVersion(1)));
        assert_eq!(
            PacketType::from_type_byte(0x03),
            Err(Error::UnknownType(0x03))
        );
        assert_eq!(
            PacketType::from_type_byte(0x0f),
            Err(Error::UnknownType(0x0f))
        );
        // Reserved bits (0x30) are ignored as RFC 3208 §8 asks of receivers.
        assert_eq!(PacketType::from_type_byte(0x34), Ok(PacketType::Odata));
    }

    #[test]
    fn bad_afi() {
        assert_eq!(read_nla(3, &[0; 16]), Err(Error::BadAfi(3)));
    }
}
