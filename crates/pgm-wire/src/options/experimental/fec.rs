//! OPT_FEC (0x33, ours, experimental): the source offers FEC parity with our erasure code.
//!
//! It says what RFC 3208's OPT_PARITY_PRM (§11.8.1) says, the transmission group size and
//! whether pro-active and on-demand parity are available, plus which code computes the
//! parity. OPT_PARITY_PRM itself is not used: an OpenPGM receiver that sees it switches its
//! own Reed-Solomon decoder on, whose generator matrix differs from ours, and would rebuild
//! wrong bytes. OpenPGM skips unknown options, so this one keeps its receivers on
//! selective NAKs. Everything else (parity NAKs and NCFs, parity RDATA with the header's
//! OPT_PARITY and OPT_VAR_PKTLEN bits, OPT_FRAGMENT encoded with OP_ENCODED) is RFC 3208
//! Appendix A framing. Layout in `docs/wire.md`.

use crate::error::Result;
use crate::options::{get32, set32, Codec, OPT_FEC};

/// Body offsets, after the 3-byte option header (option length 12).
mod field {
    use core::ops::Range;

    /// U bit, reserved bits, and the [`PRO`] and [`OND`] bits (OPT_PARITY_PRM's values).
    pub(super) const BITS: usize = 0;
    /// Pro-active parity.
    pub(super) const PRO: u8 = 0x01;
    /// On-demand parity.
    pub(super) const OND: u8 = 0x02;
    /// The erasure code.
    pub(super) const CODE: usize = 1;
    /// Reserved, zero.
    pub(super) const RESERVED: Range<usize> = 2..5;
    /// Transmission group size (a power of two).
    pub(super) const TGS: Range<usize> = 5..9;
    /// Body length.
    pub(super) const LEN: usize = TGS.end;
}

/// [`Fec::code`]: Reed-Solomon over GF(2^8) (polynomial 0x11d) with the systematic
/// Vandermonde generator `V·V_top⁻¹`, `V[i][j] = i^j`: parity packet `j` of a group of `k`
/// is row `k + j`, whatever the number of parity packets (`docs/wire.md`).
pub const FEC_RS_VANDERMONDE_GF256: u8 = 1;

/// OPT_FEC body (ours, experimental): bits u8, code u8, reserved 3 bytes, tgs u32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fec {
    /// The source sends pro-active parity packets.
    pub proactive: bool,
    /// The source answers parity NAKs with on-demand parity packets.
    pub on_demand: bool,
    /// The erasure code ([`FEC_RS_VANDERMONDE_GF256`]).
    pub code: u8,
    /// Transmission group size `k`.
    pub tgs: u32,
}

impl Codec for Fec {
    type Value = Fec;
    const CODE: u8 = OPT_FEC;
    const NAME: &'static str = "OPT_FEC";

    fn parse(body: &[u8]) -> Result<Fec> {
        if body.len() != field::LEN {
            return Err(Self::bad(body, "12"));
        }
        let bits = body[field::BITS];
        Ok(Fec {
            proactive: bits & field::PRO != 0,
            on_demand: bits & field::OND != 0,
            code: body[field::CODE],
            tgs: get32(body, field::TGS),
        })
    }

    fn body_len(_: &Fec) -> usize {
        field::LEN
    }

    fn emit(v: &Fec, body: &mut [u8]) -> Result<()> {
        let pro = if v.proactive { field::PRO } else { 0 };
        let ond = if v.on_demand { field::OND } else { 0 };
        body[field::BITS] = pro | ond;
        body[field::CODE] = v.code;
        body[field::RESERVED].fill(0);
        set32(body, field::TGS, v.tgs);
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
            fec: Some(Fec {
                proactive: false,
                on_demand: true,
                code: FEC_RS_VANDERMONDE_GF256,
                tgs: 64,
            }),
            ..Options::default()
        };
        let mut buf = [0u8; 16];
        let n = o.emit(&mut buf).unwrap();
        assert_eq!(n, 16);
        assert_eq!(
            &buf[4..],
            &[0x80 | OPT_FEC, 12, 0, 0x02, 1, 0, 0, 0, 0, 0, 0, 64]
        );
        assert_eq!(parse(&buf).unwrap(), o);
        let mut short = buf;
        short[5] = 11;
        short[3] = 15;
        assert!(parse(&short[..15]).is_err());
    }
}
