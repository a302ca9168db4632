//! SPM: Source Path Message (RFC 3208 §8.1). Multicast by the source; carries the transmit
//! window edges and the NLA of the last hop, so receivers know where to send NAKs.

use std::net::IpAddr;

use crate::error::Result;
use crate::types::{
    afi_of, be16, be32, need, nla_len, nla_len_for_afi, put16, put32, read_nla, write_nla,
};

mod field {
    pub(crate) const SQN: usize = 0;
    pub(crate) const TRAIL: usize = 4;
    pub(crate) const LEAD: usize = 8;
    pub(crate) const NLA_AFI: usize = 12;
    pub(crate) const RESERVED: usize = 14;
    pub(crate) const NLA: usize = 16;
}

/// The SPM type-specific header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpmRepr {
    /// SPM sequence number (its own space, incremented per SPM).
    pub sqn: u32,
    /// Trailing edge of the source's transmit window.
    pub trail: u32,
    /// Leading edge of the transmit window (last ODATA sequence number sent).
    pub lead: u32,
    /// Path NLA: the source's, rewritten by each PGM network element on the way.
    pub path_nla: IpAddr,
}

impl SpmRepr {
    /// Parses the header at the front of `body`; returns it and its length.
    pub fn parse(body: &[u8]) -> Result<(SpmRepr, usize)> {
        need("SPM header", body, field::NLA)?;
        let n = nla_len_for_afi(be16(body, field::NLA_AFI))?;
        need("SPM header", body, field::NLA + n)?;
        let repr = SpmRepr {
            sqn: be32(body, field::SQN),
            trail: be32(body, field::TRAIL),
            lead: be32(body, field::LEAD),
            path_nla: read_nla(be16(body, field::NLA_AFI), &body[field::NLA..])?,
        };
        Ok((repr, field::NLA + n))
    }

    /// Bytes the header takes (20 for IPv4, 32 for IPv6).
    pub fn buffer_len(&self) -> usize {
        field::NLA + nla_len(&self.path_nla)
    }

    /// Writes the header to the front of `buf` (at least [`Self::buffer_len`] bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        put32(buf, field::SQN, self.sqn);
        put32(buf, field::TRAIL, self.trail);
        put32(buf, field::LEAD, self.lead);
        put16(buf, field::NLA_AFI, afi_of(&self.path_nla));
        put16(buf, field::RESERVED, 0);
        write_nla(&self.path_nla, &mut buf[field::NLA..]);
    }
}
