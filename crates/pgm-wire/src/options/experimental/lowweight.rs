//! OPT_LOWWEIGHT (0x31, ours, experimental): low-weight multi-sender congestion control
//! (Scholl and Parnes; `docs/lowweight.md`), on ODATA next to OPT_PGMCC_DATA.

use crate::error::Result;
use crate::options::{get32, set32, Codec, OPT_LOWWEIGHT};

/// [`LowWeight::flags`]: receivers send no pgmcc ACKs (not as acker, not answering
/// elections); the sender reads congestion from NAKs alone.
pub const LW_NO_ACKS: u8 = 0x01;
/// [`LowWeight::flags`]: the receiver named in OPT_PGMCC_DATA's acker field NAKs a gap at
/// once (no random back-off): the quick NAKer.
pub const LW_QUICK_NAK: u8 = 0x02;

/// Body offsets, after the 3-byte option header (option length 9).
mod field {
    use core::ops::Range;

    /// [`LW_NO_ACKS`](super::LW_NO_ACKS), [`LW_QUICK_NAK`](super::LW_QUICK_NAK).
    pub(super) const FLAGS: usize = 0;
    pub(super) const RESERVED: usize = 1;
    pub(super) const RATE: Range<usize> = 2..6;
    /// Body length.
    pub(super) const LEN: usize = RATE.end;
}

/// OPT_LOWWEIGHT body (ours, code [`OPT_LOWWEIGHT`]), on ODATA next to OPT_PGMCC_DATA whose
/// acker field names the worst receiver. Layout after the 3-byte option header:
/// `flags u8, rsv u8, rate u32` (option length 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LowWeight {
    /// [`LW_NO_ACKS`], [`LW_QUICK_NAK`]; other bits are sent as 0 and ignored.
    pub flags: u8,
    /// The sender's current rate in thousandths of a packet per second (informational).
    pub rate: u32,
}

impl Codec for LowWeight {
    type Value = LowWeight;
    const CODE: u8 = OPT_LOWWEIGHT;
    const NAME: &'static str = "OPT_LOWWEIGHT";

    fn parse(body: &[u8]) -> Result<LowWeight> {
        if body.len() != field::LEN {
            return Err(Self::bad(body, "9"));
        }
        Ok(LowWeight {
            flags: body[field::FLAGS],
            rate: get32(body, field::RATE),
        })
    }

    fn body_len(_: &LowWeight) -> usize {
        field::LEN
    }

    fn emit(v: &LowWeight, body: &mut [u8]) -> Result<()> {
        body[field::FLAGS] = v.flags;
        body[field::RESERVED] = 0;
        set32(body, field::RATE, v.rate);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::tests::parse;
    use crate::options::Options;

    #[test]
    fn lowweight_layout_and_round_trip() {
        let o = Options {
            lowweight: Some(LowWeight {
                flags: LW_NO_ACKS | LW_QUICK_NAK,
                rate: 0x0102_0304,
            }),
            ..Options::default()
        };
        let mut out = [0u8; 13];
        assert_eq!(o.emit(&mut out), Ok(13));
        assert_eq!(
            out,
            [
                0x00, 0x04, 0x00, 13, // OPT_LENGTH, total 13
                0xb1, 0x09, 0x00, // OPT_LOWWEIGHT | OPT_END, len 9, flags 0 (OPX ignore)
                0x03, 0x00, // flags, reserved
                0x01, 0x02, 0x03, 0x04, // rate
            ]
        );
        assert_eq!(parse(&out), Ok(o.clone()));
        assert_eq!(o.buffer_len(), 13);
        // Any other length is malformed, not misread.
        let mut short = out;
        short[5] = 0x08;
        short[3] = 12;
        assert!(parse(&short[..12]).is_err());
    }
}
