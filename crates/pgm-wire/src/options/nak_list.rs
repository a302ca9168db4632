//! OPT_NAK_LIST (RFC 3208 §9.3): the sequence numbers a NAK, NNAK or NCF names after the one
//! in its header.

use core::fmt;

use super::{Codec, OPT_NAK_LIST};
use crate::error::{Error, Result};
use crate::types::be32;

/// Most sequence numbers one OPT_NAK_LIST can carry (length byte limit: 4 + 4*62 = 252).
pub const MAX_NAK_LIST: usize = 62;

/// Body offsets, after the 3-byte option header (option length 4 + 4n).
mod field {
    /// U bit and reserved bits.
    pub(super) const RESERVED: usize = 0;
    /// The first sequence number; the others follow it.
    pub(super) const SQNS: usize = 1;
    /// Bytes per sequence number.
    pub(super) const SQN_LEN: usize = 4;
}

/// A list of up to [`MAX_NAK_LIST`] sequence numbers, stored inline (no allocation).
#[derive(Clone, Copy)]
pub struct SqnList {
    len: u8,
    sqns: [u32; MAX_NAK_LIST],
}

impl SqnList {
    /// An empty list.
    pub const fn new() -> SqnList {
        SqnList {
            len: 0,
            sqns: [0; MAX_NAK_LIST],
        }
    }

    /// Builds a list from a slice; fails if it holds more than [`MAX_NAK_LIST`] entries.
    pub fn from_slice(s: &[u32]) -> Result<SqnList> {
        let mut l = SqnList::new();
        for &q in s {
            l.push(q)?;
        }
        Ok(l)
    }

    /// Appends a sequence number; fails when the list is full.
    pub fn push(&mut self, sqn: u32) -> Result<()> {
        let i = usize::from(self.len);
        if i >= MAX_NAK_LIST {
            return Err(Error::Unencodable(
                "OPT_NAK_LIST holds at most 62 sequence numbers",
            ));
        }
        self.sqns[i] = sqn;
        self.len += 1;
        Ok(())
    }

    /// The entries.
    pub fn as_slice(&self) -> &[u32] {
        &self.sqns[..usize::from(self.len)]
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True when the list holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Default for SqnList {
    fn default() -> Self {
        SqnList::new()
    }
}

impl PartialEq for SqnList {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for SqnList {}

impl fmt::Debug for SqnList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl Codec for SqnList {
    type Value = SqnList;
    const CODE: u8 = OPT_NAK_LIST;
    const NAME: &'static str = "OPT_NAK_LIST";

    fn parse(body: &[u8]) -> Result<SqnList> {
        let n = body.len().saturating_sub(field::SQNS) / field::SQN_LEN;
        if n == 0 || body.len() != field::SQNS + n * field::SQN_LEN || n > MAX_NAK_LIST {
            return Err(Self::bad(body, "4 + 4n, 1 <= n <= 62"));
        }
        let mut l = SqnList::new();
        for sqn in body[field::SQNS..].chunks_exact(field::SQN_LEN) {
            l.push(be32(sqn, 0))?;
        }
        Ok(l)
    }

    fn body_len(v: &SqnList) -> usize {
        field::SQNS + field::SQN_LEN * v.len()
    }

    fn emit(v: &SqnList, body: &mut [u8]) -> Result<()> {
        if v.is_empty() {
            return Err(Error::Unencodable(
                "OPT_NAK_LIST must hold at least one sequence number",
            ));
        }
        body[field::RESERVED] = 0;
        let slots = body[field::SQNS..].chunks_exact_mut(field::SQN_LEN);
        for (slot, q) in slots.zip(v.as_slice()) {
            slot.copy_from_slice(&q.to_be_bytes());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;

    #[test]
    fn empty_nak_list_cannot_be_emitted() {
        let o = Options {
            nak_list: Some(SqnList::new()),
            ..Options::default()
        };
        assert!(matches!(o.emit(&mut [0u8; 64]), Err(Error::Unencodable(_))));
    }
}
