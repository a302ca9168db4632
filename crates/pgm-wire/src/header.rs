//! The 16-byte PGM common header (RFC 3208 §8) as a zero-copy view.

use crate::checksum;
use crate::error::{Error, Result};
use crate::types::{be16, put16, Gsi, PacketType, Tsi};

/// Byte ranges of the common header fields.
mod field {
    use core::ops::Range;
    pub(crate) const SPORT: Range<usize> = 0..2;
    pub(crate) const DPORT: Range<usize> = 2..4;
    pub(crate) const TYPE: usize = 4;
    pub(crate) const OPTIONS: usize = 5;
    pub(crate) const CHECKSUM: Range<usize> = 6..8;
    pub(crate) const GSI: Range<usize> = 8..14;
    pub(crate) const TSDU_LENGTH: Range<usize> = 14..16;
}

/// Length of the common header.
pub const HEADER_LEN: usize = 16;

/// Header `options` bit: option extensions follow the type-specific header.
pub const OPT_PRESENT: u8 = 0x01;
/// Header `options` bit: at least one option is network-significant.
pub const OPT_NETWORK: u8 = 0x02;
/// Header `options` bit: parity packet of a variable-packet-length transmission group.
pub const OPT_VAR_PKTLEN: u8 = 0x40;
/// Header `options` bit: the packet is a parity (FEC) packet.
pub const OPT_PARITY: u8 = 0x80;

/// A read/write view of a PGM packet over any byte buffer.
///
/// Getters need `T: AsRef<[u8]>`, setters `T: AsMut<[u8]>`. Construct it with
/// [`Packet::new_checked`] on untrusted input: afterwards the header getters cannot panic.
#[derive(Debug, Clone)]
pub struct Packet<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length: header getters may panic if it is
    /// shorter than [`HEADER_LEN`].
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer, failing with [`Error::Truncated`] if it cannot hold a header.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Packet::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the buffer can hold the common header.
    pub fn check_len(&self) -> Result<()> {
        let have = self.buffer.as_ref().len();
        if have < HEADER_LEN {
            Err(Error::Truncated {
                what: "PGM common header",
                needed: HEADER_LEN,
                have,
            })
        } else {
            Ok(())
        }
    }

    /// Returns the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The whole packet.
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Source port field (for upstream types this is the receiver's port).
    pub fn sport(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SPORT.start)
    }

    /// Destination port field.
    pub fn dport(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DPORT.start)
    }

    /// The raw type byte (version, reserved bits and type).
    pub fn type_byte(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    /// The decoded packet type.
    pub fn packet_type(&self) -> Result<PacketType> {
        PacketType::from_type_byte(self.type_byte())
    }

    /// The raw header `options` byte ([`OPT_PRESENT`], [`OPT_NETWORK`], ...).
    pub fn options_byte(&self) -> u8 {
        self.buffer.as_ref()[field::OPTIONS]
    }

    /// The checksum field (0 = not computed).
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM.start)
    }

    /// Global source identifier.
    pub fn gsi(&self) -> Gsi {
        let mut g = [0u8; 6];
        g.copy_from_slice(&self.buffer.as_ref()[field::GSI]);
        Gsi(g)
    }

    /// The TSI this packet belongs to, taking the port swap of upstream packets into account.
    pub fn tsi(&self) -> Result<Tsi> {
        let sport = if self.packet_type()?.is_upstream() {
            self.dport()
        } else {
            self.sport()
        };
        Ok(Tsi {
            gsi: self.gsi(),
            sport,
        })
    }

    /// TSDU length field: bytes of application payload.
    pub fn tsdu_length(&self) -> u16 {
        be16(self.buffer.as_ref(), field::TSDU_LENGTH.start)
    }

    /// Everything after the common header: type-specific header, options, payload.
    pub fn body(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }

    /// Computes the checksum this packet should carry.
    pub fn compute_checksum(&self) -> u16 {
        checksum::compute(self.buffer.as_ref())
    }

    /// Verifies the checksum: a zero field means "not computed" (RFC 3208 §8) and passes.
    pub fn verify_checksum(&self) -> Result<()> {
        let stored = self.checksum();
        if stored == 0 {
            return Ok(());
        }
        let computed = self.compute_checksum();
        if computed == stored {
            Ok(())
        } else {
            Err(Error::Checksum { stored, computed })
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the source port field.
    pub fn set_sport(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::SPORT.start, v)
    }

    /// Sets the destination port field.
    pub fn set_dport(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::DPORT.start, v)
    }

    /// Sets the type byte (version 0, reserved bits 0).
    pub fn set_packet_type(&mut self, t: PacketType) {
        self.buffer.as_mut()[field::TYPE] = t.code();
    }

    /// Sets the header `options` byte.
    pub fn set_options_byte(&mut self, v: u8) {
        self.buffer.as_mut()[field::OPTIONS] = v;
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM.start, v)
    }

    /// Sets the GSI.
    pub fn set_gsi(&mut self, gsi: Gsi) {
        self.buffer.as_mut()[field::GSI].copy_from_slice(&gsi.0)
    }

    /// Sets the TSDU length field.
    pub fn set_tsdu_length(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::TSDU_LENGTH.start, v)
    }

    /// Mutable access to everything after the common header.
    pub fn body_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }

    /// Computes the checksum and stores it in the header.
    pub fn fill_checksum(&mut self) {
        let c = self.compute_checksum();
        self.set_checksum(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_buffer_is_truncated_error() {
        assert!(matches!(
            Packet::new_checked(&[0u8; 15][..]),
            Err(Error::Truncated {
                needed: 16,
                have: 15,
                ..
            })
        ));
    }

    #[test]
    fn setters_and_getters_agree() {
        let mut buf = [0u8; 16];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_sport(0x1234);
        p.set_dport(7500);
        p.set_packet_type(PacketType::Nak);
        p.set_options_byte(OPT_PRESENT | OPT_NETWORK);
        p.set_gsi(Gsi([1, 2, 3, 4, 5, 6]));
        p.set_tsdu_length(0);
        p.fill_checksum();
        assert_eq!(p.sport(), 0x1234);
        assert_eq!(p.dport(), 7500);
        assert_eq!(p.packet_type(), Ok(PacketType::Nak));
        // NAK is upstream: the TSI's port is the destination port.
        assert_eq!(p.tsi().map(|t| t.sport), Ok(7500));
        assert_eq!(p.verify_checksum(), Ok(()));
        p.set_checksum(p.checksum() ^ 1);
        assert!(matches!(p.verify_checksum(), Err(Error::Checksum { .. })));
    }
}
