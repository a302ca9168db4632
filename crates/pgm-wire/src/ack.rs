//! The pgmcc ACK (type 0x0d, OpenPGM `struct pgm_ack`; the pgmcc draft §2.1.2 names the
//! fields but leaves the format to the transport). Sent by the acker, unicast to the source,
//! with OPT_PGMCC_FEEDBACK among its options.

use crate::error::Result;
use crate::types::{be32, need, put32};

mod field {
    pub(crate) const RX_MAX: usize = 0;
    pub(crate) const BITMAP: usize = 4;
    pub(crate) const END: usize = 8;
}

/// The ACK type-specific header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AckRepr {
    /// RX_MAX: highest data sequence number the acker has received.
    pub rx_max: u32,
    /// Receive status of RX_MAX-31 ..= RX_MAX; bit 0 (least significant) is RX_MAX.
    pub bitmap: u32,
}

impl AckRepr {
    /// Header length.
    pub const LEN: usize = field::END;

    /// Parses the header at the front of `body`; returns it and its length.
    pub fn parse(body: &[u8]) -> Result<(AckRepr, usize)> {
        need("ACK header", body, field::END)?;
        Ok((
            AckRepr {
                rx_max: be32(body, field::RX_MAX),
                bitmap: be32(body, field::BITMAP),
            },
            field::END,
        ))
    }

    /// Bytes the header takes.
    pub fn buffer_len(&self) -> usize {
        field::END
    }

    /// Writes the header to the front of `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        put32(buf, field::RX_MAX, self.rx_max);
        put32(buf, field::BITMAP, self.bitmap);
    }

    /// True when the bitmap reports `sqn` as received (false if it is outside the 32).
    pub fn acks(&self, sqn: u32) -> bool {
        let back = self.rx_max.wrapping_sub(sqn);
        back < 32 && self.bitmap & (1 << back) != 0
    }
}
