//! OPT_REDIRECT (RFC 3208 §9.5): the address of a designated local repairer (DLR).

use std::net::IpAddr;

use super::{get16, set16, Codec, OPT_REDIRECT};
use crate::error::Result;
use crate::types::{afi_of, nla_len, read_nla, write_nla};

/// Body offsets, after the 3-byte option header (option length 12 or 24).
mod field {
    use core::ops::{Range, RangeFrom};

    /// U bit and reserved bits.
    pub(super) const RESERVED: usize = 0;
    pub(super) const AFI: Range<usize> = 1..3;
    pub(super) const RESERVED2: Range<usize> = 3..5;
    pub(super) const NLA: RangeFrom<usize> = 5..;
    /// Body length with an IPv4 NLA.
    pub(super) const LEN_IP: usize = NLA.start + 4;
    /// Body length with an IPv6 NLA.
    pub(super) const LEN_IP6: usize = NLA.start + 16;
}

/// OPT_REDIRECT codec; [`Options::redirect`](super::Options::redirect) holds the DLR address.
pub(super) struct Redirect;

impl Codec for Redirect {
    type Value = IpAddr;
    const CODE: u8 = OPT_REDIRECT;
    const NAME: &'static str = "OPT_REDIRECT";

    fn parse(body: &[u8]) -> Result<IpAddr> {
        if body.len() != field::LEN_IP && body.len() != field::LEN_IP6 {
            return Err(Self::bad(body, "12 (IPv4) or 24 (IPv6)"));
        }
        let a = read_nla(get16(body, field::AFI), &body[field::NLA])?;
        if field::NLA.start + nla_len(&a) != body.len() {
            return Err(Self::bad(body, "12 (IPv4) or 24 (IPv6), matching its AFI"));
        }
        Ok(a)
    }

    fn body_len(v: &IpAddr) -> usize {
        field::NLA.start + nla_len(v)
    }

    fn emit(v: &IpAddr, body: &mut [u8]) -> Result<()> {
        body[field::RESERVED] = 0;
        set16(body, field::AFI, afi_of(v));
        set16(body, field::RESERVED2, 0);
        write_nla(v, &mut body[field::NLA]);
        Ok(())
    }
}
