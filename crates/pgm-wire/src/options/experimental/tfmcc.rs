//! OPT_TFMCC_DATA (0x1e, ours, experimental): the TFMCC baseline's feedback round on ODATA
//! (`docs/tfmcc.md`).

use crate::error::Result;
use crate::options::{get16, get32, set16, set32, Codec, OPT_TFMCC_DATA};

/// Body offsets, after the 3-byte option header (option length 20).
mod field {
    use core::ops::Range;

    /// Reserved (U bit and 7 bits).
    pub(super) const RESERVED: usize = 0;
    pub(super) const ROUND: Range<usize> = 1..3;
    pub(super) const ROUND_MS: Range<usize> = 3..5;
    pub(super) const R_MAX_MS: Range<usize> = 5..7;
    pub(super) const CLR_IVL_MS: Range<usize> = 7..9;
    pub(super) const SUPP_RATE: Range<usize> = 9..13;
    pub(super) const SEND_RATE: Range<usize> = 13..17;
    /// Body length.
    pub(super) const LEN: usize = SEND_RATE.end;
}

/// OPT_TFMCC_DATA body (ours, experimental; `docs/tfmcc.md`): rsv u8, round u16, round_ms
/// u16, r_max_ms u16, clr_ivl_ms u16, supp_rate u32, send_rate u32 (option length 20).
/// Rates are in thousandths of a packet per second; [`TfmccData::NO_RATE`] means none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TfmccData {
    /// Feedback round number (wraps).
    pub round: u16,
    /// Duration of a feedback round, ms: the spread of the receivers' feedback timers.
    pub round_ms: u16,
    /// The largest RTT the sender knows of, ms: receivers without their own RTT compute
    /// their rate with it.
    pub r_max_ms: u16,
    /// How often the current limiting receiver reports, ms (its RTT).
    pub clr_ivl_ms: u16,
    /// The lowest rate reported in this round so far (feedback suppression).
    pub supp_rate: u32,
    /// The current sending rate.
    pub send_rate: u32,
}

impl TfmccData {
    /// "No rate" in [`TfmccData::supp_rate`] (nothing reported yet this round).
    pub const NO_RATE: u32 = u32::MAX;
}

impl Codec for TfmccData {
    type Value = TfmccData;
    const CODE: u8 = OPT_TFMCC_DATA;
    const NAME: &'static str = "OPT_TFMCC_DATA";

    fn parse(body: &[u8]) -> Result<TfmccData> {
        if body.len() != field::LEN {
            return Err(Self::bad(body, "20"));
        }
        Ok(TfmccData {
            round: get16(body, field::ROUND),
            round_ms: get16(body, field::ROUND_MS),
            r_max_ms: get16(body, field::R_MAX_MS),
            clr_ivl_ms: get16(body, field::CLR_IVL_MS),
            supp_rate: get32(body, field::SUPP_RATE),
            send_rate: get32(body, field::SEND_RATE),
        })
    }

    fn body_len(_: &TfmccData) -> usize {
        field::LEN
    }

    fn emit(v: &TfmccData, body: &mut [u8]) -> Result<()> {
        body[field::RESERVED] = 0;
        set16(body, field::ROUND, v.round);
        set16(body, field::ROUND_MS, v.round_ms);
        set16(body, field::R_MAX_MS, v.r_max_ms);
        set16(body, field::CLR_IVL_MS, v.clr_ivl_ms);
        set32(body, field::SUPP_RATE, v.supp_rate);
        set32(body, field::SEND_RATE, v.send_rate);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::tests::parse;
    use crate::options::Options;

    #[test]
    fn tfmcc_data_layout() {
        let o = Options {
            tfmcc_data: Some(TfmccData {
                round: 0x0102,
                round_ms: 0x0304,
                r_max_ms: 0x0506,
                clr_ivl_ms: 0x0708,
                supp_rate: TfmccData::NO_RATE,
                send_rate: 0x0a0b0c0d,
            }),
            ..Options::default()
        };
        let mut out = [0u8; 24];
        assert_eq!(o.emit(&mut out), Ok(24));
        assert_eq!(
            out,
            [
                0x00, 0x04, 0x00, 0x18, // OPT_LENGTH, total 24
                0x9e, 0x14, 0x00, // OPT_TFMCC_DATA | OPT_END, len 20, flags
                0x00, 0x01, 0x02, 0x03, 0x04, // reserved, round, round_ms
                0x05, 0x06, 0x07, 0x08, // r_max_ms, clr_ivl_ms
                0xff, 0xff, 0xff, 0xff, // supp_rate: none
                0x0a, 0x0b, 0x0c, 0x0d, // send_rate
            ]
        );
        assert_eq!(parse(&out), Ok(o));
        // Any other length is malformed, not misread.
        let mut short = out;
        short[5] = 0x10;
        short[3] = 0x14;
        assert!(parse(&short[..20]).is_err());
    }
}
