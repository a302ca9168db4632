//! The session options of RFC 3208: OPT_SYN (§9.6), OPT_FIN (§9.7) and OPT_RST (§9.8).

use super::{Codec, OPT_FIN, OPT_RST, OPT_SYN};
use crate::error::{Error, Result};

/// OPT_SYN and OPT_FIN body offsets, after the 3-byte option header (option length 4).
mod flag_field {
    /// U bit and reserved bits: the whole body.
    pub(super) const RESERVED: usize = 0;
    /// Body length.
    pub(super) const LEN: usize = RESERVED + 1;
}

/// A flag option's codec: a one-byte body (U bit and reserved bits) whose presence is the
/// value.
macro_rules! flag_codec {
    ($(#[$doc:meta])* $ty:ident, $code:ident) => {
        $(#[$doc])*
        pub(super) struct $ty;

        impl Codec for $ty {
            type Value = ();
            const CODE: u8 = $code;
            const NAME: &'static str = stringify!($code);

            fn parse(body: &[u8]) -> Result<()> {
                if body.len() != flag_field::LEN {
                    return Err(Self::bad(body, "4"));
                }
                Ok(())
            }

            fn body_len(_: &()) -> usize {
                flag_field::LEN
            }

            fn emit(_: &(), body: &mut [u8]) -> Result<()> {
                body[flag_field::RESERVED] = 0;
                Ok(())
            }
        }
    };
}

flag_codec!(
    /// OPT_SYN codec; its presence is [`Options::syn`](super::Options::syn).
    Syn,
    OPT_SYN
);
flag_codec!(
    /// OPT_FIN codec; its presence is [`Options::fin`](super::Options::fin).
    Fin,
    OPT_FIN
);

/// OPT_RST body offsets, after the 3-byte option header (option length 4).
mod rst_field {
    /// U bit, [`NO_REPAIRS`] bit and 6-bit error code: the whole body.
    pub(super) const BITS: usize = 0;
    /// The N bit.
    pub(super) const NO_REPAIRS: u8 = 0x40;
    /// The error code bits.
    pub(super) const ERROR_CODE: u8 = 0x3f;
    /// Body length.
    pub(super) const LEN: usize = BITS + 1;
}

/// OPT_RST body (§9.8.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Rst {
    /// N bit: NAKs for earlier ODATA will go unanswered.
    pub no_repairs: bool,
    /// 6-bit application error code (0 = unknown reason).
    pub error_code: u8,
}

impl Codec for Rst {
    type Value = Rst;
    const CODE: u8 = OPT_RST;
    const NAME: &'static str = "OPT_RST";

    fn parse(body: &[u8]) -> Result<Rst> {
        if body.len() != rst_field::LEN {
            return Err(Self::bad(body, "4"));
        }
        let bits = body[rst_field::BITS];
        Ok(Rst {
            no_repairs: bits & rst_field::NO_REPAIRS != 0,
            error_code: bits & rst_field::ERROR_CODE,
        })
    }

    fn body_len(_: &Rst) -> usize {
        rst_field::LEN
    }

    fn emit(v: &Rst, body: &mut [u8]) -> Result<()> {
        if v.error_code > rst_field::ERROR_CODE {
            return Err(Error::Unencodable("OPT_RST error code is 6 bits (0..=63)"));
        }
        let n = if v.no_repairs {
            rst_field::NO_REPAIRS
        } else {
            0
        };
        body[rst_field::BITS] = n | v.error_code;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::OPT_SYN;
    use crate::options::tests::parse;

    #[test]
    fn syn_only() {
        let b = [0x00, 0x04, 0x00, 0x08, 0x80 | OPT_SYN, 0x04, 0x00, 0x00];
        let o = parse(&b).unwrap();
        assert!(o.syn);
        assert_eq!(o.count(), 1);
        let mut out = [0u8; 8];
        assert_eq!(o.emit(&mut out), Ok(8));
        assert_eq!(out, b);
    }
}
