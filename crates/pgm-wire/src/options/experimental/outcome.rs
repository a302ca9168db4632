//! OPT_OUTCOME (0x36, ours, experimental): a receiver's delivery report. When a receiver
//! finishes with a session, complete or not, it tells the source in a POLR carrying this
//! option: what it delivered (bytes, SHA-256 of them) and, when it failed, why. The source
//! tabulates the reports (`pgmcc send --expect`, issue 22).

use crate::error::Result;
use crate::options::{Codec, OPT_OUTCOME};

/// Body offsets, after the 3-byte option header.
mod field {
    use core::ops::Range;

    /// Reserved (U bit and 7 bits).
    pub(super) const RESERVED: usize = 0;
    pub(super) const STATUS: usize = 1;
    pub(super) const BYTES: Range<usize> = 2..10;
    pub(super) const SHA256: Range<usize> = 10..42;
    /// The fixed part; the reason (UTF-8) follows.
    pub(super) const FIXED: usize = SHA256.end;
}

/// Longest reason carried, in bytes (an option body is at most 252 bytes).
pub const MAX_REASON: usize = 200;

/// Status: the session was received whole, every byte written.
pub const OUTCOME_COMPLETE: u8 = 1;
/// Status: the session failed at this receiver (the reason says why).
pub const OUTCOME_FAILED: u8 = 2;
/// Status: the receiver ended with part of the stream (it missed the start) and kept it as
/// such (`pgmcc recv --allow-partial-start`): final, like the other two.
pub const OUTCOME_PARTIAL: u8 = 3;
/// Status: the receiver holds part of the stream (it joined late, or lost data for good) and
/// waits for the source's next pass over it (OPT_MANIFEST's another-pass flag) to complete
/// it: a report for this session, not the transfer's end.
pub const OUTCOME_AWAITING_PASS: u8 = 4;

/// OPT_OUTCOME body (ours, experimental): rsv u8, status u8, bytes u64, SHA-256 [32] of the
/// bytes delivered, then a UTF-8 reason of at most [`MAX_REASON`] bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// [`OUTCOME_COMPLETE`], [`OUTCOME_FAILED`], [`OUTCOME_PARTIAL`],
    /// [`OUTCOME_AWAITING_PASS`], or another value a newer peer sent.
    pub status: u8,
    /// Bytes delivered.
    pub bytes: u64,
    /// SHA-256 of the bytes delivered, in order.
    pub sha256: [u8; 32],
    /// Why it failed (empty when complete); cut at a character boundary to fit.
    pub reason: String,
}

impl Outcome {
    /// The reason cut to at most [`MAX_REASON`] bytes, at a character boundary.
    fn reason_bytes(&self) -> &[u8] {
        super::utf8_prefix(&self.reason, MAX_REASON)
    }
}

impl Codec for Outcome {
    type Value = Outcome;
    const CODE: u8 = OPT_OUTCOME;
    const NAME: &'static str = "OPT_OUTCOME";

    fn parse(body: &[u8]) -> Result<Outcome> {
        if body.len() < field::FIXED || body.len() > field::FIXED + MAX_REASON {
            return Err(Self::bad(body, "45 to 245"));
        }
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&body[field::BYTES]);
        let mut sha256 = [0u8; 32];
        sha256.copy_from_slice(&body[field::SHA256]);
        Ok(Outcome {
            status: body[field::STATUS],
            bytes: u64::from_be_bytes(bytes),
            sha256,
            // Not UTF-8: refused rather than altered, so that parse and emit round-trip.
            reason: String::from_utf8(body[field::FIXED..].to_vec())
                .map_err(|_| Self::bad(body, "a UTF-8 reason"))?,
        })
    }

    fn body_len(v: &Outcome) -> usize {
        field::FIXED + v.reason_bytes().len()
    }

    fn emit(v: &Outcome, body: &mut [u8]) -> Result<()> {
        body[field::RESERVED] = 0;
        body[field::STATUS] = v.status;
        body[field::BYTES].copy_from_slice(&v.bytes.to_be_bytes());
        body[field::SHA256].copy_from_slice(&v.sha256);
        let r = v.reason_bytes();
        body[field::FIXED..field::FIXED + r.len()].copy_from_slice(r);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::tests::parse;
    use crate::options::Options;

    #[test]
    fn round_trips_and_bounds_the_reason() {
        let mut o = Options {
            outcome: Some(Outcome {
                status: OUTCOME_FAILED,
                bytes: 123_456_789,
                sha256: [7; 32],
                reason: "unrecoverable loss of packets 10..=12".into(),
            }),
            ..Options::default()
        };
        let mut buf = [0u8; 260];
        let n = o.emit(&mut buf).unwrap();
        assert_eq!(parse(&buf[..n]).unwrap(), o);
        // A reason too long is cut at a character boundary, and still parses.
        if let Some(v) = o.outcome.as_mut() {
            v.reason = "é".repeat(150);
        }
        let n = o.emit(&mut buf).unwrap();
        assert_eq!(n, 4 + 3 + 42 + 200);
        let back = parse(&buf[..n]).unwrap().outcome.unwrap();
        assert_eq!(back.reason, "é".repeat(100));
        // Too short to hold the fixed part.
        let short = [0, 4, 0, 20, 0x80 | OPT_OUTCOME, 20, 0, 1];
        assert!(parse(&short[..8]).is_err());
    }
}
