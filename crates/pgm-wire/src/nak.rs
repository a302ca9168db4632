//! NAK, NNAK and NCF (RFC 3208 §8.3): one layout for all three. A NAK asks for a repair,
//! an NCF (multicast by the source or a network element) confirms it, an NNAK is a DLR's
//! null NAK. Source and group NLAs may be of different families (OpenPGM accepts that).

use std::net::IpAddr;

use crate::error::Result;
use crate::types::{
    afi_of, be16, be32, need, nla_len, nla_len_for_afi, put16, put32, read_nla, write_nla,
};

mod field {
    pub(crate) const SQN: usize = 0;
    pub(crate) const SRC_AFI: usize = 4;
    pub(crate) const SRC_NLA: usize = 8;
}

/// The NAK/NNAK/NCF type-specific header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NakRepr {
    /// Requested (or confirmed) sequence number; more may follow in OPT_NAK_LIST.
    pub sqn: u32,
    /// The source's NLA (unicast address of the data source).
    pub source: IpAddr,
    /// The multicast group NLA.
    pub group: IpAddr,
}

impl NakRepr {
    /// Parses the header at the front of `body`; returns it and its length.
    pub fn parse(body: &[u8]) -> Result<(NakRepr, usize)> {
        need("NAK header", body, field::SRC_NLA)?;
        let src_afi = be16(body, field::SRC_AFI);
        let src_len = nla_len_for_afi(src_afi)?;
        let grp_afi_at = field::SRC_NLA + src_len;
        need("NAK header", body, grp_afi_at + 4)?;
        let grp_afi = be16(body, grp_afi_at);
        let grp_len = nla_len_for_afi(grp_afi)?;
        let grp_at = grp_afi_at + 4;
        need("NAK header", body, grp_at + grp_len)?;
        let repr = NakRepr {
            sqn: be32(body, field::SQN),
            source: read_nla(src_afi, &body[field::SRC_NLA..])?,
            group: read_nla(grp_afi, &body[grp_at..])?,
        };
        Ok((repr, grp_at + grp_len))
    }

    /// Bytes the header takes (20 for IPv4/IPv4).
    pub fn buffer_len(&self) -> usize {
        field::SRC_NLA + nla_len(&self.source) + 4 + nla_len(&self.group)
    }

    /// Writes the header to the front of `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        put32(buf, field::SQN, self.sqn);
        put16(buf, field::SRC_AFI, afi_of(&self.source));
        put16(buf, field::SRC_AFI + 2, 0);
        write_nla(&self.source, &mut buf[field::SRC_NLA..]);
        let g = field::SRC_NLA + nla_len(&self.source);
        put16(buf, g, afi_of(&self.group));
        put16(buf, g + 2, 0);
        write_nla(&self.group, &mut buf[g + 4..]);
    }
}
