//! The pgmcc options, with OpenPGM's codes and layouts: OPT_PGMCC_DATA (on ODATA/RDATA) and
//! OPT_PGMCC_FEEDBACK (on ACK and NAK).

use std::net::IpAddr;

use super::{get16, get32, set16, set32, Codec, OPT_PGMCC_DATA, OPT_PGMCC_FEEDBACK};
use crate::error::Result;
use crate::types::{afi_of, nla_len, read_nla, write_nla};

/// OPT_PGMCC_DATA body offsets, after the 3-byte option header (option length 16 or 28).
mod data_field {
    use core::ops::{Range, RangeFrom};

    /// U bit and reserved bits.
    pub(super) const RESERVED: usize = 0;
    pub(super) const TSTAMP: Range<usize> = 1..5;
    pub(super) const AFI: Range<usize> = 5..7;
    pub(super) const RESERVED2: Range<usize> = 7..9;
    /// The acker's address.
    pub(super) const NLA: RangeFrom<usize> = 9..;
    /// Body length with an IPv4 NLA.
    pub(super) const LEN_IP: usize = NLA.start + 4;
    /// Body length with an IPv6 NLA.
    pub(super) const LEN_IP6: usize = NLA.start + 16;
}

/// OPT_PGMCC_DATA body: the sender's timestamp and the current acker (OpenPGM
/// `struct pgm_opt_pgmcc_data`: rsv u8, tstamp u32, AFI u16, rsv u16, NLA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PgmccData {
    /// Send time, milliseconds in the sender's clock (echoed back in feedback).
    pub tstamp: u32,
    /// The elected acker; the unspecified address (0.0.0.0 / ::) asks for an election.
    pub acker: IpAddr,
}

impl Codec for PgmccData {
    type Value = PgmccData;
    const CODE: u8 = OPT_PGMCC_DATA;
    const NAME: &'static str = "OPT_PGMCC_DATA";

    fn parse(body: &[u8]) -> Result<PgmccData> {
        if body.len() != data_field::LEN_IP && body.len() != data_field::LEN_IP6 {
            return Err(Self::bad(body, "16 (IPv4) or 28 (IPv6)"));
        }
        let acker = read_nla(get16(body, data_field::AFI), &body[data_field::NLA])?;
        if data_field::NLA.start + nla_len(&acker) != body.len() {
            return Err(Self::bad(body, "16 (IPv4) or 28 (IPv6), matching its AFI"));
        }
        Ok(PgmccData {
            tstamp: get32(body, data_field::TSTAMP),
            acker,
        })
    }

    fn body_len(v: &PgmccData) -> usize {
        data_field::NLA.start + nla_len(&v.acker)
    }

    fn emit(v: &PgmccData, body: &mut [u8]) -> Result<()> {
        body[data_field::RESERVED] = 0;
        set32(body, data_field::TSTAMP, v.tstamp);
        set16(body, data_field::AFI, afi_of(&v.acker));
        set16(body, data_field::RESERVED2, 0);
        write_nla(&v.acker, &mut body[data_field::NLA]);
        Ok(())
    }
}

/// OPT_PGMCC_FEEDBACK body offsets, after the 3-byte option header (option length 16 or 28).
mod feedback_field {
    use core::ops::{Range, RangeFrom};

    /// U bit and reserved bits.
    pub(super) const RESERVED: usize = 0;
    pub(super) const TSTAMP: Range<usize> = 1..5;
    pub(super) const AFI: Range<usize> = 5..7;
    pub(super) const LOSS_RATE: Range<usize> = 7..9;
    /// The reporting receiver's address.
    pub(super) const NLA: RangeFrom<usize> = 9..;
    /// Body length with an IPv4 NLA.
    pub(super) const LEN_IP: usize = NLA.start + 4;
    /// Body length with an IPv6 NLA.
    pub(super) const LEN_IP6: usize = NLA.start + 16;
}

/// OPT_PGMCC_FEEDBACK body: a receiver report (OpenPGM `struct pgm_opt_pgmcc_feedback`:
/// rsv u8, tstamp u32, AFI u16, loss_rate u16, NLA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PgmccFeedback {
    /// Timestamp of the latest data packet, plus the receiver's hold time (ms).
    pub tstamp: u32,
    /// Loss rate, 0 = none, 65535 = 100% (pgmcc draft §2.1.3). OpenPGM sends the low 16 bits
    /// of a 16.16 fixed-point moving average whose input is scaled by its `ack_c_p` knob, so
    /// its values are comparable only between OpenPGM receivers, and 100% wraps to 0.
    pub loss_rate: u16,
    /// The reporting receiver's address (its identity for acker election).
    pub rx: IpAddr,
}

impl Codec for PgmccFeedback {
    type Value = PgmccFeedback;
    const CODE: u8 = OPT_PGMCC_FEEDBACK;
    const NAME: &'static str = "OPT_PGMCC_FEEDBACK";

    fn parse(body: &[u8]) -> Result<PgmccFeedback> {
        if body.len() != feedback_field::LEN_IP && body.len() != feedback_field::LEN_IP6 {
            return Err(Self::bad(body, "16 (IPv4) or 28 (IPv6)"));
        }
        let rx = read_nla(get16(body, feedback_field::AFI), &body[feedback_field::NLA])?;
        if feedback_field::NLA.start + nla_len(&rx) != body.len() {
            return Err(Self::bad(body, "16 (IPv4) or 28 (IPv6), matching its AFI"));
        }
        Ok(PgmccFeedback {
            tstamp: get32(body, feedback_field::TSTAMP),
            loss_rate: get16(body, feedback_field::LOSS_RATE),
            rx,
        })
    }

    fn body_len(v: &PgmccFeedback) -> usize {
        feedback_field::NLA.start + nla_len(&v.rx)
    }

    fn emit(v: &PgmccFeedback, body: &mut [u8]) -> Result<()> {
        body[feedback_field::RESERVED] = 0;
        set32(body, feedback_field::TSTAMP, v.tstamp);
        set16(body, feedback_field::AFI, afi_of(&v.rx));
        set16(body, feedback_field::LOSS_RATE, v.loss_rate);
        write_nla(&v.rx, &mut body[feedback_field::NLA]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;
    use std::net::Ipv4Addr;

    #[test]
    fn pgmcc_feedback_layout() {
        let o = Options {
            pgmcc_feedback: Some(PgmccFeedback {
                tstamp: 0x01020304,
                loss_rate: 0xabcd,
                rx: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 7)),
            }),
            ..Options::default()
        };
        let mut out = [0u8; 20];
        assert_eq!(o.emit(&mut out), Ok(20));
        assert_eq!(
            out,
            [
                0x00, 0x04, 0x00, 0x14, // OPT_LENGTH, total 20
                0x93, 0x10, 0x00, // OPT_PGMCC_FEEDBACK | OPT_END, len 16, flags
                0x00, 0x01, 0x02, 0x03, 0x04, // reserved, tstamp
                0x00, 0x01, 0xab, 0xcd, // AFI 1, loss_rate
                10, 0, 0, 7, // NLA
            ]
        );
    }
}
