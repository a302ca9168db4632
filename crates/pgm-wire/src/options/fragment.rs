//! OPT_FRAGMENT (RFC 3208 §9.2): where a TSDU sits inside its APDU.

use super::{get32, set32, Codec, OPT_FRAGMENT};
use crate::error::Result;

/// Body offsets, after the 3-byte option header (option length 16).
mod field {
    use core::ops::Range;

    /// U bit and reserved bits.
    pub(super) const RESERVED: usize = 0;
    pub(super) const FIRST_SQN: Range<usize> = 1..5;
    pub(super) const OFFSET: Range<usize> = 5..9;
    pub(super) const APDU_LEN: Range<usize> = 9..13;
    /// Body length.
    pub(super) const LEN: usize = APDU_LEN.end;
}

/// Bytes of an OPT_FRAGMENT body after the 3-byte option header (option length 16).
pub const FRAGMENT_BODY_LEN: usize = field::LEN;

/// OPT_FRAGMENT body (§9.2): where this TSDU sits inside its APDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fragment {
    /// Sequence number of the APDU's first fragment.
    pub first_sqn: u32,
    /// Byte offset of this fragment inside the APDU.
    pub offset: u32,
    /// Total APDU length in bytes.
    pub apdu_len: u32,
}

impl Codec for Fragment {
    type Value = Fragment;
    const CODE: u8 = OPT_FRAGMENT;
    const NAME: &'static str = "OPT_FRAGMENT";

    fn parse(body: &[u8]) -> Result<Fragment> {
        if body.len() != field::LEN {
            return Err(Self::bad(body, "16"));
        }
        Ok(Fragment {
            first_sqn: get32(body, field::FIRST_SQN),
            offset: get32(body, field::OFFSET),
            apdu_len: get32(body, field::APDU_LEN),
        })
    }

    fn body_len(_: &Fragment) -> usize {
        field::LEN
    }

    fn emit(v: &Fragment, body: &mut [u8]) -> Result<()> {
        body[field::RESERVED] = 0;
        set32(body, field::FIRST_SQN, v.first_sqn);
        set32(body, field::OFFSET, v.offset);
        set32(body, field::APDU_LEN, v.apdu_len);
        Ok(())
    }
}
