//! OPT_REPORT_BAR (0x34, ours, experimental): on NCFs and SPMs, the loss rate above which a
//! receiver with the pgmcc acker's RTT would replace the acker: the acker's loss rate over
//! `c²` (`c` the switch bias). A receiver whose own loss rate is above it sends its NAK, and
//! the report that rides on it, even when an NCF, another receiver's NAK or FEC parity would
//! have made it unnecessary (`docs/pgmcc.md`, "Reports despite suppression").

use crate::error::Result;
use crate::options::{get16, set16, Codec, OPT_REPORT_BAR};

/// Body offsets, after the 3-byte option header (option length 8).
mod field {
    use core::ops::Range;

    /// Reserved (U bit and 7 bits).
    pub(super) const RESERVED: usize = 0;
    /// The bar, in OPT_PGMCC_FEEDBACK's loss scale (65535 = 100%).
    pub(super) const LOSS: Range<usize> = 1..3;
    /// Reserved, zero.
    pub(super) const RESERVED2: Range<usize> = 3..5;
    /// Body length.
    pub(super) const LEN: usize = RESERVED2.end;
}

/// OPT_REPORT_BAR codec; [`Options::report_bar`](super::super::Options::report_bar) holds
/// the loss rate.
pub(in crate::options) struct ReportBar;

impl Codec for ReportBar {
    type Value = u16;
    const CODE: u8 = OPT_REPORT_BAR;
    const NAME: &'static str = "OPT_REPORT_BAR";

    fn parse(body: &[u8]) -> Result<u16> {
        if body.len() != field::LEN {
            return Err(Self::bad(body, "8"));
        }
        Ok(get16(body, field::LOSS))
    }

    fn body_len(_: &u16) -> usize {
        field::LEN
    }

    fn emit(v: &u16, body: &mut [u8]) -> Result<()> {
        body[field::RESERVED] = 0;
        set16(body, field::LOSS, *v);
        body[field::RESERVED2].fill(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::options::tests::parse;
    use crate::options::{Options, OPT_REPORT_BAR};

    #[test]
    fn round_trips_and_checks_its_length() {
        let o = Options {
            report_bar: Some(0x1234),
            ..Options::default()
        };
        let mut buf = [0u8; 12];
        assert_eq!(o.emit(&mut buf).unwrap(), 12);
        assert_eq!(
            &buf[4..],
            &[0x80 | OPT_REPORT_BAR, 8, 0, 0, 0x12, 0x34, 0, 0]
        );
        assert_eq!(parse(&buf).unwrap(), o);
        let mut short = buf;
        short[5] = 7;
        short[3] = 11;
        assert!(parse(&short[..11]).is_err());
    }
}
