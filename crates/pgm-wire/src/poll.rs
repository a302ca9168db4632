//! POLL and POLR (RFC 3208 §14.7): the source's poll of receivers and their responses.

use std::net::IpAddr;

use crate::error::Result;
use crate::types::{
    afi_of, be16, be32, need, nla_len, nla_len_for_afi, put16, put32, read_nla, write_nla,
};

mod field {
    pub(crate) const SQN: usize = 0;
    pub(crate) const ROUND: usize = 4;
    pub(crate) const S_TYPE: usize = 6;
    pub(crate) const NLA_AFI: usize = 8;
    pub(crate) const NLA: usize = 12;
    // After the NLA: back-off interval u32, random string [4], matching mask u32.
    pub(crate) const TAIL_LEN: usize = 12;
    pub(crate) const POLR_LEN: usize = 8;
}

/// POLL sub-type: general poll.
pub const POLL_GENERAL: u16 = 0;
/// POLL sub-type: DLR poll.
pub const POLL_DLR: u16 = 1;

/// The POLL type-specific header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PollRepr {
    /// POLL sequence number.
    pub sqn: u32,
    /// Poll round.
    pub round: u16,
    /// Sub-type ([`POLL_GENERAL`] or [`POLL_DLR`]).
    pub s_type: u16,
    /// Path NLA.
    pub path_nla: IpAddr,
    /// Back-off interval, microseconds.
    pub bo_ivl: u32,
    /// Random string matched against receivers' random values.
    pub rand: [u8; 4],
    /// Matching bit mask.
    pub mask: u32,
}

impl PollRepr {
    /// Whether a receiver whose RAND_NODE_ID is `node_id` matches this poll's random
    /// condition (RFC 3208 Appendix D): equal to POLL_RAND in the bits POLL_MASK sets (an
    /// all-zero mask matches everyone).
    pub fn matches(&self, node_id: u32) -> bool {
        node_id & self.mask == u32::from_be_bytes(self.rand) & self.mask
    }

    /// Parses the header at the front of `body`; returns it and its length.
    pub fn parse(body: &[u8]) -> Result<(PollRepr, usize)> {
        need("POLL header", body, field::NLA)?;
        let afi = be16(body, field::NLA_AFI);
        let n = nla_len_for_afi(afi)?;
        let tail = field::NLA + n;
        need("POLL header", body, tail + field::TAIL_LEN)?;
        let mut rand = [0u8; 4];
        rand.copy_from_slice(&body[tail + 4..tail + 8]);
        let repr = PollRepr {
            sqn: be32(body, field::SQN),
            round: be16(body, field::ROUND),
            s_type: be16(body, field::S_TYPE),
            path_nla: read_nla(afi, &body[field::NLA..])?,
            bo_ivl: be32(body, tail),
            rand,
            mask: be32(body, tail + 8),
        };
        Ok((repr, tail + field::TAIL_LEN))
    }

    /// Bytes the header takes (28 for IPv4).
    pub fn buffer_len(&self) -> usize {
        field::NLA + nla_len(&self.path_nla) + field::TAIL_LEN
    }

    /// Writes the header to the front of `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        put32(buf, field::SQN, self.sqn);
        put16(buf, field::ROUND, self.round);
        put16(buf, field::S_TYPE, self.s_type);
        put16(buf, field::NLA_AFI, afi_of(&self.path_nla));
        put16(buf, field::NLA_AFI + 2, 0);
        write_nla(&self.path_nla, &mut buf[field::NLA..]);
        let tail = field::NLA + nla_len(&self.path_nla);
        put32(buf, tail, self.bo_ivl);
        buf[tail + 4..tail + 8].copy_from_slice(&self.rand);
        put32(buf, tail + 8, self.mask);
    }
}

/// The POLR type-specific header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PolrRepr {
    /// Sequence number of the POLL answered.
    pub sqn: u32,
    /// Round of the POLL answered.
    pub round: u16,
}

impl PolrRepr {
    /// Parses the header at the front of `body`; returns it and its length.
    pub fn parse(body: &[u8]) -> Result<(PolrRepr, usize)> {
        need("POLR header", body, field::POLR_LEN)?;
        Ok((
            PolrRepr {
                sqn: be32(body, field::SQN),
                round: be16(body, field::ROUND),
            },
            field::POLR_LEN,
        ))
    }

    /// Bytes the header takes.
    pub fn buffer_len(&self) -> usize {
        field::POLR_LEN
    }

    /// Writes the header to the front of `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        put32(buf, field::SQN, self.sqn);
        put16(buf, field::ROUND, self.round);
        put16(buf, field::ROUND + 2, 0);
    }
}
