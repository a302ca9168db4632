//! ZeroMQ's framing over PGM (`pgm://` and `epgm://` transports), so our receiver can
//! subscribe to a ZeroMQ publisher.
//!
//! ZeroMQ (libzmq 4.x, `pgm_sender.cpp` / `v1_encoder.cpp`) does not send one message per
//! APDU. It fills each APDU with a byte stream of ZMTP/1.0 frames and prefixes it with a
//! 2-byte big-endian offset: where in this APDU's payload the first frame *starts*
//! (`0xffff` when the APDU is entirely the continuation of a larger frame). That offset lets
//! a receiver that joins mid-stream find a frame boundary. Each frame is
//! `len` (1 byte, or `0xff` and 8 bytes big-endian when 255 or more) counting the flags byte
//! and the body, then `flags` (bit 0: more parts follow), then the body.
//!
//! [`ZmqDecoder`] turns APDUs, in order, back into messages. A gap in the stream (an
//! unrecoverable loss) must be reported with [`ZmqDecoder::reset`]: decoding then resumes at
//! the next frame start an offset announces, as ZeroMQ's own receiver does.

use thiserror::Error;

/// One ZeroMQ message part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZmqFrame {
    /// More parts of the same message follow.
    pub more: bool,
    /// The part's bytes.
    pub body: Vec<u8>,
}

/// The stream cannot be ZeroMQ framing.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ZmqError {
    /// An APDU shorter than its 2-byte offset header.
    #[error("APDU of {0} bytes has no 2-byte offset header")]
    Short(usize),
    /// The offset points past the APDU's end.
    #[error("offset {offset} beyond the {len}-byte payload")]
    BadOffset {
        /// The offset.
        offset: usize,
        /// Payload length.
        len: usize,
    },
    /// A frame of length 0 (the length counts the flags byte, so at least 1).
    #[error("zero-length frame")]
    ZeroLength,
    /// A frame larger than the decoder's limit.
    #[error("frame of {0} bytes exceeds the limit")]
    TooLarge(u64),
}

/// Decodes ZeroMQ-over-PGM APDUs into message parts.
#[derive(Debug)]
pub struct ZmqDecoder {
    buf: Vec<u8>,
    synced: bool,
    max_frame: u64,
}

impl Default for ZmqDecoder {
    fn default() -> ZmqDecoder {
        ZmqDecoder::new(64 << 20)
    }
}

impl ZmqDecoder {
    /// A decoder that refuses frames larger than `max_frame` bytes (memory bound).
    pub fn new(max_frame: u64) -> ZmqDecoder {
        ZmqDecoder {
            buf: Vec::new(),
            synced: false,
            max_frame,
        }
    }

    /// The stream had a gap: drop partial data and wait for the next frame start.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.synced = false;
    }

    /// Takes the next APDU; returns the parts it completed. On an error the decoder resets
    /// itself (and can go on with the next APDU).
    pub fn push(&mut self, apdu: &[u8]) -> Result<Vec<ZmqFrame>, ZmqError> {
        let r = self.push_inner(apdu);
        if r.is_err() {
            self.reset();
        }
        r
    }

    fn push_inner(&mut self, apdu: &[u8]) -> Result<Vec<ZmqFrame>, ZmqError> {
        let (head, payload) = match apdu {
            [a, b, rest @ ..] => (usize::from(u16::from_be_bytes([*a, *b])), rest),
            _ => return Err(ZmqError::Short(apdu.len())),
        };
        if !self.synced {
            if head == 0xffff {
                return Ok(Vec::new()); // still inside a frame we did not see start
            }
            let start = payload.get(head..).ok_or(ZmqError::BadOffset {
                offset: head,
                len: payload.len(),
            })?;
            self.buf.clear();
            self.buf.extend_from_slice(start);
            self.synced = true;
        } else {
            self.buf.extend_from_slice(payload);
        }
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            let rest = self.buf.get(at..).unwrap_or_default();
            let Some((hdr, len)) = frame_header(rest)? else {
                break;
            };
            if len > self.max_frame {
                return Err(ZmqError::TooLarge(len));
            }
            // `len` counts the flags byte (the last header byte) and the body.
            let total = hdr as u64 - 1 + len;
            if (rest.len() as u64) < total {
                break;
            }
            let flags = rest.get(hdr - 1).copied().unwrap_or_default();
            let body_len = usize::try_from(len - 1).unwrap_or(usize::MAX);
            let body = rest.get(hdr..hdr + body_len).unwrap_or_default().to_vec();
            out.push(ZmqFrame {
                more: flags & 1 != 0,
                body,
            });
            at += hdr + body_len;
        }
        self.buf.drain(..at.min(self.buf.len()));
        Ok(out)
    }
}

/// Bytes [`zmq_apdu`] adds to a message body: the 2-byte offset and the frame header (1
/// length byte and the flags byte for bodies under 254 bytes, otherwise `0xff`, 8 length
/// bytes and the flags byte).
pub const ZMQ_APDU_OVERHEAD: usize = 12;

/// One APDU in ZeroMQ's framing holding exactly one whole single-part message `body`: the
/// offset is 0 (a message starts right after it), so a subscriber that joins at any APDU
/// starts decoding there. What `pgmcc send --peer zeromq` sends: each APDU one message, as
/// a ZeroMQ PUB socket would send messages no larger than its APDU. A SUB socket delivers
/// it if its subscription is a prefix of `body` (the empty subscription takes all).
pub fn zmq_apdu(body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(body.len() + ZMQ_APDU_OVERHEAD);
    v.extend_from_slice(&0u16.to_be_bytes());
    // The length counts the flags byte.
    let len = body.len() as u64 + 1;
    if len < 255 {
        v.push(len as u8);
    } else {
        v.push(0xff);
        v.extend_from_slice(&len.to_be_bytes());
    }
    v.push(0); // flags: no more parts
    v.extend_from_slice(body);
    v
}

/// `(header length including the flags byte, len)` of the frame at the front of `b`, or
/// `None` if its length field is not complete yet.
fn frame_header(b: &[u8]) -> Result<Option<(usize, u64)>, ZmqError> {
    let Some(&first) = b.first() else {
        return Ok(None);
    };
    let (hdr, len) = if first == 0xff {
        let Some(l) = b.get(1..9) else {
            return Ok(None);
        };
        let mut a = [0u8; 8];
        a.copy_from_slice(l);
        (10, u64::from_be_bytes(a))
    } else {
        (2, u64::from(first))
    };
    if len == 0 {
        return Err(ZmqError::ZeroLength);
    }
    // The flags byte is counted in `len`: whether it arrived is the caller's length check.
    Ok(Some((hdr, len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ZeroMQ's encoding of parts into APDUs of at most `max` payload bytes.
    fn encode(parts: &[(&[u8], bool)], max: usize) -> Vec<Vec<u8>> {
        let mut stream = Vec::new();
        let mut starts = Vec::new();
        for (body, more) in parts {
            starts.push(stream.len());
            let len = body.len() + 1;
            if len < 255 {
                stream.push(len as u8);
            } else {
                stream.push(0xff);
                stream.extend_from_slice(&(len as u64).to_be_bytes());
            }
            stream.push(u8::from(*more));
            stream.extend_from_slice(body);
        }
        stream
            .chunks(max)
            .enumerate()
            .map(|(i, c)| {
                let lo = i * max;
                let off = starts
                    .iter()
                    .find(|&&s| s >= lo && s < lo + c.len())
                    .map_or(0xffff, |&s| (s - lo) as u16);
                let mut v = off.to_be_bytes().to_vec();
                v.extend_from_slice(c);
                v
            })
            .collect()
    }

    #[test]
    fn our_apdus_decode_to_their_messages_one_each() {
        let mut d = ZmqDecoder::default();
        for len in [0usize, 1, 253, 254, 255, 1388] {
            let body: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let apdu = zmq_apdu(&body);
            assert!(apdu.len() <= body.len() + ZMQ_APDU_OVERHEAD, "{len}");
            assert_eq!(
                d.push(&apdu).unwrap(),
                vec![ZmqFrame { more: false, body }],
                "{len}"
            );
        }
        // A decoder that joins at any APDU decodes it: every one starts a message.
        let mut late = ZmqDecoder::default();
        assert_eq!(late.push(&zmq_apdu(b"late")).unwrap().len(), 1);
    }

    #[test]
    fn decodes_small_large_and_multipart_messages_across_apdus() {
        let big = vec![7u8; 5000];
        let parts: Vec<(&[u8], bool)> = vec![(b"topic", true), (b"hello", false), (&big, false)];
        let mut d = ZmqDecoder::default();
        let mut got = Vec::new();
        for apdu in encode(&parts, 1000) {
            got.extend(d.push(&apdu).unwrap());
        }
        assert_eq!(got.len(), 3);
        assert_eq!((got[0].body.as_slice(), got[0].more), (&b"topic"[..], true));
        assert_eq!(got[1].body, b"hello");
        assert_eq!(got[2].body, big);
    }

    #[test]
    fn joining_mid_stream_resumes_at_an_announced_frame_start() {
        let big = vec![1u8; 3000];
        let parts: Vec<(&[u8], bool)> = vec![(&big, false), (b"after", false)];
        let apdus = encode(&parts, 1000);
        let mut d = ZmqDecoder::default();
        // Miss the first APDU: the next ones are continuation (0xffff) until "after" starts.
        let mut got = Vec::new();
        for apdu in &apdus[1..] {
            got.extend(d.push(apdu).unwrap());
        }
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].body, b"after");
    }

    proptest::proptest! {
        #[test]
        fn any_parts_in_any_apdu_size_round_trip(
            parts in proptest::collection::vec(
                (proptest::collection::vec(proptest::num::u8::ANY, 0..600), proptest::bool::ANY),
                0..20,
            ),
            max in 1usize..700,
        ) {
            let refs: Vec<(&[u8], bool)> = parts.iter().map(|(b, m)| (b.as_slice(), *m)).collect();
            let mut d = ZmqDecoder::default();
            let mut got = Vec::new();
            for apdu in encode(&refs, max) {
                got.extend(d.push(&apdu).unwrap());
            }
            let want: Vec<ZmqFrame> =
                parts.iter().map(|(b, m)| ZmqFrame { more: *m, body: b.clone() }).collect();
            proptest::prop_assert_eq!(got, want);
        }

        #[test]
        fn arbitrary_apdus_never_panic(
            apdus in proptest::collection::vec(
                proptest::collection::vec(proptest::num::u8::ANY, 0..64), 0..16),
        ) {
            let mut d = ZmqDecoder::new(1 << 16);
            for a in &apdus {
                let _ = d.push(a);
            }
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut d = ZmqDecoder::new(100);
        assert_eq!(d.push(&[0]), Err(ZmqError::Short(1)));
        assert!(matches!(
            d.push(&[0, 9, 1, 2]),
            Err(ZmqError::BadOffset { .. })
        ));
        assert_eq!(d.push(&[0, 0, 0]), Err(ZmqError::ZeroLength));
        let mut huge = vec![0, 0, 0xff];
        huge.extend_from_slice(&u64::MAX.to_be_bytes());
        assert!(matches!(d.push(&huge), Err(ZmqError::TooLarge(_))));
    }
}
