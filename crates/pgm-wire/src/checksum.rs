//! The PGM checksum (RFC 3208 §8): the 16-bit ones' complement of the ones' complement sum
//! of the whole PGM packet (header, options and payload), with no pseudo-header.
//!
//! A computed value of 0 is transmitted as `0xffff`; `0` on the wire means "no checksum".
//! OpenPGM (`checksum.c`, `pgm_csum_fold`) does the same, so both sides agree bit for bit.

/// Offset of the checksum field in the common header.
pub const CHECKSUM_OFFSET: usize = 6;

/// Adds `data` to a running 32-bit ones' complement accumulator (big-endian 16-bit words;
/// an odd trailing byte is padded with zero, as RFC 1071 does).
pub fn accumulate(mut acc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        acc += u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
    let rest = chunks.remainder();
    let mut words = rest.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [b] = words.remainder() {
        acc += u64::from(*b) << 8;
    }
    acc
}

/// Folds an accumulator to 16 bits and complements it; a result of 0 becomes `0xffff`.
pub fn finish(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    // `acc` now fits in 16 bits.
    let folded = acc as u16;
    match !folded {
        0 => 0xffff,
        v => v,
    }
}

/// Computes the checksum of a whole PGM packet, treating the checksum field as zero.
///
/// Packets shorter than the common header are summed as they are.
pub fn compute(packet: &[u8]) -> u16 {
    if packet.len() < CHECKSUM_OFFSET + 2 {
        return finish(accumulate(0, packet));
    }
    let acc = accumulate(0, &packet[..CHECKSUM_OFFSET]);
    // The checksum field sits at an even offset, so skipping it keeps word alignment
    // for everything after it.
    let acc = accumulate(acc, &packet[CHECKSUM_OFFSET + 2..]);
    finish(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3 example words: 0001 f203 f4f5 f6f7 sum to 0xddf2 (before complement).
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(finish(accumulate(0, &data)), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(
            finish(accumulate(0, &[0x12, 0x34, 0x56])),
            finish(accumulate(0, &[0x12, 0x34, 0x56, 0x00]))
        );
    }

    #[test]
    fn zero_sum_is_sent_as_all_ones() {
        // Words summing to 0xffff complement to 0, which must go out as 0xffff.
        assert_eq!(finish(accumulate(0, &[0xff, 0x00, 0x00, 0xff])), 0xffff);
    }

    #[test]
    fn checksum_field_is_ignored() {
        let mut p = [0u8; 20];
        p[0] = 0x12;
        p[19] = 0x9a;
        let c = compute(&p);
        p[6] = 0xab;
        p[7] = 0xcd;
        assert_eq!(compute(&p), c);
    }
}
