//! OPT_OUTCOME (0x36, ours, experimental): a receiver's delivery report. When a receiver
//! finishes with a session, complete or not, it tells the source in a POLR carrying this
//! option: what it delivered (bytes, SHA-256 of them) and, when it failed, why. The source
//! tabulates the reports (`pgmcc send --expect`, issue 22).

use std::net::IpAddr;

use crate::error::Result;
use crate::options::{Codec, OPT_OUTCOME};
use crate::types::{afi_of, be16, nla_len, put16, read_nla, write_nla};

/// Body offsets, after the 3-byte option header.
mod field {
    use core::ops::Range;

    /// Flags: [`super::HAS_REPORTER`]; the others reserved.
    pub(super) const FLAGS: usize = 0;
    pub(super) const STATUS: usize = 1;
    pub(super) const BYTES: Range<usize> = 2..10;
    pub(super) const SHA256: Range<usize> = 10..42;
    /// The fixed part; the reporter's AFI and NLA (with [`super::HAS_REPORTER`]) and the
    /// reason (UTF-8) follow.
    pub(super) const FIXED: usize = SHA256.end;
}

/// Flag: the reporter's address (AFI u16, NLA) follows the fixed part.
const HAS_REPORTER: u8 = 0x01;

/// Largest option body (an option is at most 255 bytes, its header 3).
const MAX_BODY: usize = 252;

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

/// OPT_OUTCOME body (ours, experimental): flags u8, status u8, bytes u64, SHA-256 [32] of the
/// bytes delivered, the reporter's address (AFI u16, NLA) when the flags say so, then a UTF-8
/// reason of at most [`MAX_REASON`] bytes (fewer beside an IPv6 reporter: the body holds 252).
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
    /// The receiver that reports, as it names itself: a source files a report under the
    /// address it came from only when the two agree, so a report cannot be replayed in
    /// another receiver's name (in keyed mode the seal covers this field).
    pub reporter: Option<IpAddr>,
}

impl Outcome {
    /// Bytes of the reporter's AFI and NLA.
    fn reporter_len(&self) -> usize {
        self.reporter.as_ref().map_or(0, |a| 2 + nla_len(a))
    }

    /// The reason cut to what fits (at most [`MAX_REASON`] bytes), at a character boundary.
    fn reason_bytes(&self) -> &[u8] {
        let room = MAX_BODY - field::FIXED - self.reporter_len();
        super::utf8_prefix(&self.reason, MAX_REASON.min(room))
    }
}

impl Codec for Outcome {
    type Value = Outcome;
    const CODE: u8 = OPT_OUTCOME;
    const NAME: &'static str = "OPT_OUTCOME";

    fn parse(body: &[u8]) -> Result<Outcome> {
        if body.len() < field::FIXED || body.len() > MAX_BODY {
            return Err(Self::bad(body, "45 to 252"));
        }
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&body[field::BYTES]);
        let mut sha256 = [0u8; 32];
        sha256.copy_from_slice(&body[field::SHA256]);
        let mut rest = &body[field::FIXED..];
        let reporter = if body[field::FLAGS] & HAS_REPORTER != 0 {
            if rest.len() < 2 {
                return Err(Self::bad(body, "the reporter's AFI"));
            }
            let afi = be16(rest, 0);
            let addr =
                read_nla(afi, &rest[2..]).map_err(|_| Self::bad(body, "the reporter's NLA"))?;
            rest = &rest[2 + nla_len(&addr)..];
            Some(addr)
        } else {
            None
        };
        if rest.len() > MAX_REASON {
            return Err(Self::bad(body, "a reason of at most 200 bytes"));
        }
        Ok(Outcome {
            status: body[field::STATUS],
            bytes: u64::from_be_bytes(bytes),
            sha256,
            // Not UTF-8: refused rather than altered, so that parse and emit round-trip.
            reason: String::from_utf8(rest.to_vec())
                .map_err(|_| Self::bad(body, "a UTF-8 reason"))?,
            reporter,
        })
    }

    fn body_len(v: &Outcome) -> usize {
        field::FIXED + v.reporter_len() + v.reason_bytes().len()
    }

    fn emit(v: &Outcome, body: &mut [u8]) -> Result<()> {
        body[field::FLAGS] = if v.reporter.is_some() {
            HAS_REPORTER
        } else {
            0
        };
        body[field::STATUS] = v.status;
        body[field::BYTES].copy_from_slice(&v.bytes.to_be_bytes());
        body[field::SHA256].copy_from_slice(&v.sha256);
        let mut at = field::FIXED;
        if let Some(a) = &v.reporter {
            put16(body, at, afi_of(a));
            write_nla(a, &mut body[at + 2..]);
            at += 2 + nla_len(a);
        }
        let r = v.reason_bytes();
        body[at..at + r.len()].copy_from_slice(r);
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
                reporter: None,
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
        // With the reporter's address: it round-trips, and an IPv6 one leaves the reason
        // less room.
        for (addr, reason) in [("10.0.0.7", 200), ("2001:db8::7", 192)] {
            if let Some(v) = o.outcome.as_mut() {
                v.reporter = Some(addr.parse().unwrap());
                v.reason = "r".repeat(300);
            }
            let n = o.emit(&mut buf).unwrap();
            let back = parse(&buf[..n]).unwrap().outcome.unwrap();
            assert_eq!(back.reporter, o.outcome.as_ref().unwrap().reporter);
            assert_eq!(back.reason.len(), reason, "{addr}");
        }
        // Too short to hold the fixed part.
        let short = [0, 4, 0, 20, 0x80 | OPT_OUTCOME, 20, 0, 1];
        assert!(parse(&short[..8]).is_err());
    }
}
