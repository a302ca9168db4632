//! OPT_GRTT (0x32, ours, experimental): the source's group round-trip time and group size
//! estimates, on SPMs and NCFs, for receivers to scale their NAK timers (`docs/core.md`,
//! "NAK timers"). NORM carries the same two figures in every message (RFC 5740 §4.2.1).

use crate::error::Result;
use crate::options::{get32, set32, Codec, OPT_GRTT};

/// Body offsets, after the 3-byte option header (option length 12).
mod field {
    use core::ops::Range;

    /// Reserved (U bit and 7 bits).
    pub(super) const RESERVED: usize = 0;
    pub(super) const GRTT_US: Range<usize> = 1..5;
    pub(super) const GSIZE: Range<usize> = 5..9;
    /// Body length.
    pub(super) const LEN: usize = GSIZE.end;
}

/// OPT_GRTT body (ours, experimental): rsv u8, grtt_us u32, gsize u32 (option length 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grtt {
    /// The longest round-trip time the source measured to a receiver recently, in
    /// microseconds.
    pub grtt_us: u32,
    /// How many receivers the source heard from recently (0: unknown).
    pub gsize: u32,
}

impl Codec for Grtt {
    type Value = Grtt;
    const CODE: u8 = OPT_GRTT;
    const NAME: &'static str = "OPT_GRTT";

    fn parse(body: &[u8]) -> Result<Grtt> {
        if body.len() != field::LEN {
            return Err(Self::bad(body, "12"));
        }
        Ok(Grtt {
            grtt_us: get32(body, field::GRTT_US),
            gsize: get32(body, field::GSIZE),
        })
    }

    fn body_len(_: &Grtt) -> usize {
        field::LEN
    }

    fn emit(v: &Grtt, body: &mut [u8]) -> Result<()> {
        body[field::RESERVED] = 0;
        set32(body, field::GRTT_US, v.grtt_us);
        set32(body, field::GSIZE, v.gsize);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::tests::parse;
    use crate::options::Options;

    #[test]
    fn round_trips_and_checks_its_length() {
        let o = Options {
            grtt: Some(Grtt {
                grtt_us: 250_000,
                gsize: 100,
            }),
            ..Options::default()
        };
        let mut buf = [0u8; 16];
        let n = o.emit(&mut buf).unwrap();
        assert_eq!(n, 16);
        assert_eq!(
            &buf[4..],
            &[0x80 | OPT_GRTT, 12, 0, 0, 0, 3, 0xd0, 0x90, 0, 0, 0, 100]
        );
        assert_eq!(parse(&buf).unwrap(), o);
        // A body one byte short is refused, not misread.
        let short = [
            0,
            4,
            0,
            15,
            0x80 | OPT_GRTT,
            11,
            0,
            0,
            0,
            3,
            0xd0,
            0x90,
            0,
            0,
            0,
        ];
        assert!(parse(&short).is_err());
    }
}
