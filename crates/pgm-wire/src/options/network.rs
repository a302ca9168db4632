//! The options RFC 3208 §15.4 defines for network elements: OPT_NAK_BO_IVL, OPT_NAK_BO_RNG,
//! OPT_NBR_UNREACH and OPT_PATH_NLA. All are network-significant.

use std::net::IpAddr;

use super::{get32, set32, Codec, OPT_NAK_BO_IVL, OPT_NAK_BO_RNG, OPT_NBR_UNREACH, OPT_PATH_NLA};
use crate::error::Result;
use crate::types::{nla_len, read_nla, write_nla, AFI_IP, AFI_IP6};

/// OPT_NAK_BO_IVL body offsets, after the 3-byte option header (option length 12).
mod ivl_field {
    use core::ops::Range;

    /// U bit and reserved bits.
    pub(super) const RESERVED: usize = 0;
    pub(super) const IVL: Range<usize> = 1..5;
    pub(super) const SQN: Range<usize> = 5..9;
    /// Body length.
    pub(super) const LEN: usize = SQN.end;
}

/// OPT_NAK_BO_IVL body (§15.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NakBoIvl {
    /// NAK back-off interval, microseconds.
    pub ivl: u32,
    /// Sequence number from which the interval applies.
    pub sqn: u32,
}

impl Codec for NakBoIvl {
    type Value = NakBoIvl;
    const CODE: u8 = OPT_NAK_BO_IVL;
    const NAME: &'static str = "OPT_NAK_BO_IVL";

    fn parse(body: &[u8]) -> Result<NakBoIvl> {
        if body.len() != ivl_field::LEN {
            return Err(Self::bad(body, "12"));
        }
        Ok(NakBoIvl {
            ivl: get32(body, ivl_field::IVL),
            sqn: get32(body, ivl_field::SQN),
        })
    }

    fn body_len(_: &NakBoIvl) -> usize {
        ivl_field::LEN
    }

    fn emit(v: &NakBoIvl, body: &mut [u8]) -> Result<()> {
        body[ivl_field::RESERVED] = 0;
        set32(body, ivl_field::IVL, v.ivl);
        set32(body, ivl_field::SQN, v.sqn);
        Ok(())
    }
}

/// OPT_NAK_BO_RNG body offsets, after the 3-byte option header (option length 12).
mod rng_field {
    use core::ops::Range;

    /// U bit and reserved bits.
    pub(super) const RESERVED: usize = 0;
    pub(super) const MAX_IVL: Range<usize> = 1..5;
    pub(super) const MIN_IVL: Range<usize> = 5..9;
    /// Body length.
    pub(super) const LEN: usize = MIN_IVL.end;
}

/// OPT_NAK_BO_RNG body (§15.4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NakBoRng {
    /// Maximum back-off interval, microseconds.
    pub max_ivl: u32,
    /// Minimum back-off interval, microseconds.
    pub min_ivl: u32,
}

impl Codec for NakBoRng {
    type Value = NakBoRng;
    const CODE: u8 = OPT_NAK_BO_RNG;
    const NAME: &'static str = "OPT_NAK_BO_RNG";

    fn parse(body: &[u8]) -> Result<NakBoRng> {
        if body.len() != rng_field::LEN {
            return Err(Self::bad(body, "12"));
        }
        Ok(NakBoRng {
            max_ivl: get32(body, rng_field::MAX_IVL),
            min_ivl: get32(body, rng_field::MIN_IVL),
        })
    }

    fn body_len(_: &NakBoRng) -> usize {
        rng_field::LEN
    }

    fn emit(v: &NakBoRng, body: &mut [u8]) -> Result<()> {
        body[rng_field::RESERVED] = 0;
        set32(body, rng_field::MAX_IVL, v.max_ivl);
        set32(body, rng_field::MIN_IVL, v.min_ivl);
        Ok(())
    }
}

/// OPT_NBR_UNREACH body offsets, after the 3-byte option header (option length 4).
mod nbr_unreach_field {
    /// U bit and reserved bits: the whole body.
    pub(super) const RESERVED: usize = 0;
    /// Body length.
    pub(super) const LEN: usize = RESERVED + 1;
}

/// OPT_NBR_UNREACH codec (§15.4.3); its presence is
/// [`Options::nbr_unreach`](super::Options::nbr_unreach).
pub(super) struct NbrUnreach;

impl Codec for NbrUnreach {
    type Value = ();
    const CODE: u8 = OPT_NBR_UNREACH;
    const NAME: &'static str = "OPT_NBR_UNREACH";

    fn parse(body: &[u8]) -> Result<()> {
        if body.len() != nbr_unreach_field::LEN {
            return Err(Self::bad(body, "4"));
        }
        Ok(())
    }

    fn body_len(_: &()) -> usize {
        nbr_unreach_field::LEN
    }

    fn emit(_: &(), body: &mut [u8]) -> Result<()> {
        body[nbr_unreach_field::RESERVED] = 0;
        Ok(())
    }
}

/// OPT_PATH_NLA body offsets, after the 3-byte option header (option length 8 or 20). There
/// is no AFI: the length tells IPv4 from IPv6.
mod path_nla_field {
    use core::ops::RangeFrom;

    /// U bit and reserved bits.
    pub(super) const RESERVED: usize = 0;
    pub(super) const NLA: RangeFrom<usize> = 1..;
    /// Body length with an IPv4 NLA.
    pub(super) const LEN_IP: usize = NLA.start + 4;
    /// Body length with an IPv6 NLA.
    pub(super) const LEN_IP6: usize = NLA.start + 16;
}

/// OPT_PATH_NLA codec (§15.4.4); [`Options::path_nla`](super::Options::path_nla) holds the
/// address.
pub(super) struct PathNla;

impl Codec for PathNla {
    type Value = IpAddr;
    const CODE: u8 = OPT_PATH_NLA;
    const NAME: &'static str = "OPT_PATH_NLA";

    fn parse(body: &[u8]) -> Result<IpAddr> {
        let afi = match body.len() {
            path_nla_field::LEN_IP => AFI_IP,
            path_nla_field::LEN_IP6 => AFI_IP6,
            _ => return Err(Self::bad(body, "8 (IPv4) or 20 (IPv6)")),
        };
        read_nla(afi, &body[path_nla_field::NLA])
    }

    fn body_len(v: &IpAddr) -> usize {
        path_nla_field::NLA.start + nla_len(v)
    }

    fn emit(v: &IpAddr, body: &mut [u8]) -> Result<()> {
        body[path_nla_field::RESERVED] = 0;
        write_nla(v, &mut body[path_nla_field::NLA]);
        Ok(())
    }
}
