//! ODATA and RDATA (RFC 3208 §8.2): original and repair data. Same layout for both.

use crate::error::Result;
use crate::types::{be32, need, put32};

mod field {
    pub(crate) const SQN: usize = 0;
    pub(crate) const TRAIL: usize = 4;
    pub(crate) const END: usize = 8;
}

/// The ODATA/RDATA type-specific header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataRepr {
    /// Data packet sequence number.
    pub sqn: u32,
    /// Trailing edge of the source's transmit window when this packet was sent.
    pub trail: u32,
}

impl DataRepr {
    /// Header length.
    pub const LEN: usize = field::END;

    /// Parses the header at the front of `body`; returns it and its length.
    pub fn parse(body: &[u8]) -> Result<(DataRepr, usize)> {
        need("DATA header", body, field::END)?;
        Ok((
            DataRepr {
                sqn: be32(body, field::SQN),
                trail: be32(body, field::TRAIL),
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
        put32(buf, field::SQN, self.sqn);
        put32(buf, field::TRAIL, self.trail);
    }
}
