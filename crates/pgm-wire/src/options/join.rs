//! OPT_JOIN (RFC 3208 §9.4): the lowest sequence number a late joiner may ask to repair.

use super::{get32, set32, Codec, OPT_JOIN};
use crate::error::Result;

/// Body offsets, after the 3-byte option header (option length 8).
mod field {
    use core::ops::Range;

    /// U bit and reserved bits.
    pub(super) const RESERVED: usize = 0;
    pub(super) const MIN_SQN: Range<usize> = 1..5;
    /// Body length.
    pub(super) const LEN: usize = MIN_SQN.end;
}

/// OPT_JOIN codec; [`Options::join`](super::Options::join) holds the sequence number.
pub(super) struct Join;

impl Codec for Join {
    type Value = u32;
    const CODE: u8 = OPT_JOIN;
    const NAME: &'static str = "OPT_JOIN";

    fn parse(body: &[u8]) -> Result<u32> {
        if body.len() != field::LEN {
            return Err(Self::bad(body, "8"));
        }
        Ok(get32(body, field::MIN_SQN))
    }

    fn body_len(_: &u32) -> usize {
        field::LEN
    }

    fn emit(v: &u32, body: &mut [u8]) -> Result<()> {
        body[field::RESERVED] = 0;
        set32(body, field::MIN_SQN, *v);
        Ok(())
    }
}
