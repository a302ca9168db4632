//! The FEC options (RFC 3208 §11.8): OPT_PARITY_PRM, OPT_PARITY_GRP and OPT_CURR_TGSIZE.

use super::{get32, set32, Codec, OPT_CURR_TGSIZE, OPT_PARITY_GRP, OPT_PARITY_PRM};
use crate::error::Result;

/// OPT_PARITY_PRM body offsets, after the 3-byte option header (option length 8).
mod prm_field {
    use core::ops::Range;

    /// U bit, reserved bits, and the [`PRO`] and [`OND`] bits.
    pub(super) const BITS: usize = 0;
    /// Pro-active parity (OpenPGM `PGM_PARITY_PRM_PRO`).
    pub(super) const PRO: u8 = 0x01;
    /// On-demand parity (OpenPGM `PGM_PARITY_PRM_OND`).
    pub(super) const OND: u8 = 0x02;
    /// Transmission group size.
    pub(super) const TGS: Range<usize> = 1..5;
    /// Body length.
    pub(super) const LEN: usize = TGS.end;
}

/// OPT_PARITY_PRM body (§11.8.1). Bit values follow OpenPGM (`PGM_PARITY_PRM_PRO` = 0x01,
/// `PGM_PARITY_PRM_OND` = 0x02), which is the reverse of the RFC figure's `P O` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ParityPrm {
    /// The source sends pro-active parity packets.
    pub proactive: bool,
    /// The source sends on-demand parity packets.
    pub on_demand: bool,
    /// Transmission group size.
    pub tgs: u32,
}

impl Codec for ParityPrm {
    type Value = ParityPrm;
    const CODE: u8 = OPT_PARITY_PRM;
    const NAME: &'static str = "OPT_PARITY_PRM";

    fn parse(body: &[u8]) -> Result<ParityPrm> {
        if body.len() != prm_field::LEN {
            return Err(Self::bad(body, "8"));
        }
        let bits = body[prm_field::BITS];
        Ok(ParityPrm {
            proactive: bits & prm_field::PRO != 0,
            on_demand: bits & prm_field::OND != 0,
            tgs: get32(body, prm_field::TGS),
        })
    }

    fn body_len(_: &ParityPrm) -> usize {
        prm_field::LEN
    }

    fn emit(v: &ParityPrm, body: &mut [u8]) -> Result<()> {
        let pro = if v.proactive { prm_field::PRO } else { 0 };
        let ond = if v.on_demand { prm_field::OND } else { 0 };
        body[prm_field::BITS] = pro | ond;
        set32(body, prm_field::TGS, v.tgs);
        Ok(())
    }
}

/// OPT_PARITY_GRP and OPT_CURR_TGSIZE body offsets, after the 3-byte option header (option
/// length 8): one `u32` after the reserved byte.
mod u32_field {
    use core::ops::Range;

    /// U bit and reserved bits.
    pub(super) const RESERVED: usize = 0;
    /// The parity group number, or the actual transmission group size.
    pub(super) const VALUE: Range<usize> = 1..5;
    /// Body length.
    pub(super) const LEN: usize = VALUE.end;
}

/// The codec of an option holding one `u32` after the reserved byte.
macro_rules! u32_codec {
    ($(#[$doc:meta])* $ty:ident, $code:ident) => {
        $(#[$doc])*
        pub(super) struct $ty;

        impl Codec for $ty {
            type Value = u32;
            const CODE: u8 = $code;
            const NAME: &'static str = stringify!($code);

            fn parse(body: &[u8]) -> Result<u32> {
                if body.len() != u32_field::LEN {
                    return Err(Self::bad(body, "8"));
                }
                Ok(get32(body, u32_field::VALUE))
            }

            fn body_len(_: &u32) -> usize {
                u32_field::LEN
            }

            fn emit(v: &u32, body: &mut [u8]) -> Result<()> {
                body[u32_field::RESERVED] = 0;
                set32(body, u32_field::VALUE, *v);
                Ok(())
            }
        }
    };
}

u32_codec!(
    /// OPT_PARITY_GRP codec (§11.8.2); [`Options::parity_grp`](super::Options::parity_grp)
    /// holds the group number.
    ParityGrp,
    OPT_PARITY_GRP
);
u32_codec!(
    /// OPT_CURR_TGSIZE codec (§11.8.3); [`Options::curr_tgsize`](super::Options::curr_tgsize)
    /// holds the size.
    CurrTgsize,
    OPT_CURR_TGSIZE
);
