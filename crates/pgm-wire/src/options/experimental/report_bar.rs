//! OPT_REPORT_BAR (0x34, ours, experimental): on NCFs and SPMs, how a pgmcc source wants its
//! receivers to report.
//!
//! * The bar: the loss rate above which a receiver with the pgmcc acker's RTT would replace
//!   the acker, the acker's loss rate over `c²` (`c` the switch bias). A receiver whose own
//!   loss rate is above it sends its NAK, and the report that rides on it, even when an NCF,
//!   another receiver's NAK or FEC parity would have made it unnecessary (`docs/pgmcc.md`,
//!   "Reports despite suppression").
//! * Flag [`RB_INTERVALS`]: report the loss rate over the latest loss intervals (RFC 5348
//!   §5.4, losses within the advertised group RTT merged) instead of the paper's filter
//!   (`docs/pgmcc.md`, "Acker election with many receivers"). Receivers that do not know the
//!   flag keep the filter.

use crate::error::Result;
use crate::options::{get16, set16, Codec, OPT_REPORT_BAR};

/// Body offsets, after the 3-byte option header (option length 8).
mod field {
    use core::ops::Range;

    /// Flags ([`RB_INTERVALS`](super::RB_INTERVALS)); zero in the first version.
    pub(super) const FLAGS: usize = 0;
    /// The bar, in OPT_PGMCC_FEEDBACK's loss scale (65535 = 100%).
    pub(super) const LOSS: Range<usize> = 1..3;
    /// Reserved, zero.
    pub(super) const RESERVED2: Range<usize> = 3..5;
    /// Body length.
    pub(super) const LEN: usize = RESERVED2.end;
}

/// OPT_REPORT_BAR's flag: receivers report the loss-interval estimate.
pub const RB_INTERVALS: u8 = 0x01;

/// OPT_REPORT_BAR body (ours, experimental): flags u8, loss u16, rsv u16 (option length 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReportBar {
    /// The loss rate above which a receiver reports despite suppression (65535 = 100%:
    /// nobody does).
    pub loss: u16,
    /// Receivers report the loss rate over their latest loss intervals ([`RB_INTERVALS`]).
    pub intervals: bool,
}

impl ReportBar {
    /// A bar no loss rate is above: only the flags mean something.
    pub const NONE: u16 = u16::MAX;
}

impl Codec for ReportBar {
    type Value = ReportBar;
    const CODE: u8 = OPT_REPORT_BAR;
    const NAME: &'static str = "OPT_REPORT_BAR";

    fn parse(body: &[u8]) -> Result<ReportBar> {
        if body.len() != field::LEN {
            return Err(Self::bad(body, "8"));
        }
        Ok(ReportBar {
            loss: get16(body, field::LOSS),
            intervals: body[field::FLAGS] & RB_INTERVALS != 0,
        })
    }

    fn body_len(_: &ReportBar) -> usize {
        field::LEN
    }

    fn emit(v: &ReportBar, body: &mut [u8]) -> Result<()> {
        body[field::FLAGS] = if v.intervals { RB_INTERVALS } else { 0 };
        set16(body, field::LOSS, v.loss);
        body[field::RESERVED2].fill(0);
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
        for (intervals, flags) in [(false, 0), (true, RB_INTERVALS)] {
            let o = Options {
                report_bar: Some(ReportBar {
                    loss: 0x1234,
                    intervals,
                }),
                ..Options::default()
            };
            let mut buf = [0u8; 12];
            assert_eq!(o.emit(&mut buf).unwrap(), 12);
            assert_eq!(
                &buf[4..],
                &[0x80 | OPT_REPORT_BAR, 8, 0, flags, 0x12, 0x34, 0, 0]
            );
            assert_eq!(parse(&buf).unwrap(), o);
        }
        let o = Options {
            report_bar: Some(ReportBar {
                loss: 1,
                intervals: false,
            }),
            ..Options::default()
        };
        let mut buf = [0u8; 12];
        o.emit(&mut buf).unwrap();
        let mut short = buf;
        short[5] = 7;
        short[3] = 11;
        assert!(parse(&short[..11]).is_err());
    }

    #[test]
    fn unknown_flag_bits_are_ignored() {
        let mut buf = [0u8; 12];
        Options {
            report_bar: Some(ReportBar {
                loss: 7,
                intervals: false,
            }),
            ..Options::default()
        }
        .emit(&mut buf)
        .unwrap();
        buf[7] = 0xfe;
        let bar = parse(&buf).unwrap().report_bar.unwrap();
        assert_eq!((bar.loss, bar.intervals), (7, false));
    }
}
