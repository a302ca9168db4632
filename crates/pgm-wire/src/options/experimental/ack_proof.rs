//! OPT_ACK_PROOF (0x35, ours, experimental): proof of receipt for pgmcc's ACKs
//! (`docs/security.md`). On ODATA and RDATA it carries the packet's nonce: 32 bits the source
//! derives from the sequence number with a key of its own, so nobody who has not received the
//! packet can know it. On an ACK it carries the XOR of the nonces of every packet the ACK
//! reports received (RX_MAX and each bitmap bit set): an ACK for packets its sender did not get
//! cannot carry the right value.

use crate::error::Result;
use crate::options::{get32, set32, Codec, OPT_ACK_PROOF};

/// Body offsets, after the 3-byte option header (option length 8).
mod field {
    use core::ops::Range;

    /// Reserved (U bit and 7 bits).
    pub(super) const RESERVED: usize = 0;
    pub(super) const VALUE: Range<usize> = 1..5;
    /// Body length.
    pub(super) const LEN: usize = VALUE.end;
}

/// OPT_ACK_PROOF body (ours, experimental): rsv u8, value u32 (option length 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AckProof {
    /// On data: the packet's nonce. On an ACK: the XOR of the acknowledged packets' nonces.
    pub value: u32,
}

impl Codec for AckProof {
    type Value = AckProof;
    const CODE: u8 = OPT_ACK_PROOF;
    const NAME: &'static str = "OPT_ACK_PROOF";

    fn parse(body: &[u8]) -> Result<AckProof> {
        if body.len() != field::LEN {
            return Err(Self::bad(body, "8"));
        }
        Ok(AckProof {
            value: get32(body, field::VALUE),
        })
    }

    fn body_len(_: &AckProof) -> usize {
        field::LEN
    }

    fn emit(v: &AckProof, body: &mut [u8]) -> Result<()> {
        body[field::RESERVED] = 0;
        set32(body, field::VALUE, v.value);
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
            ack_proof: Some(AckProof { value: 0xdead_beef }),
            ..Options::default()
        };
        let mut buf = [0u8; 12];
        let n = o.emit(&mut buf).unwrap();
        assert_eq!(n, 12);
        assert_eq!(
            &buf[4..],
            &[0x80 | OPT_ACK_PROOF, 8, 0, 0, 0xde, 0xad, 0xbe, 0xef]
        );
        assert_eq!(parse(&buf).unwrap(), o);
        let short = [0, 4, 0, 11, 0x80 | OPT_ACK_PROOF, 7, 0, 0, 0xde, 0xad, 0xbe];
        assert!(parse(&short).is_err());
    }
}
