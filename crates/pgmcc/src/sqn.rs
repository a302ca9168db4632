//! Sequence-number arithmetic in the 32-bit circular space (RFC 3208 §3: all sequence number
//! comparisons are modulo 2^32, as in RFC 1982 serial number arithmetic).

/// True when `a` precedes `b` in circular order (`a < b`).
pub const fn lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// True when `a <= b` in circular order.
pub const fn le(a: u32, b: u32) -> bool {
    !lt(b, a)
}

/// True when `a > b` in circular order.
pub const fn gt(a: u32, b: u32) -> bool {
    lt(b, a)
}

/// The later of two sequence numbers.
pub const fn max(a: u32, b: u32) -> u32 {
    if lt(a, b) {
        b
    } else {
        a
    }
}

/// Number of sequence numbers from `a` up to `b` (`b - a`, wrapping).
pub const fn distance(a: u32, b: u32) -> u32 {
    b.wrapping_sub(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps() {
        assert!(lt(u32::MAX, 0));
        assert!(lt(u32::MAX - 5, 3));
        assert!(gt(3, u32::MAX - 5));
        assert!(le(7, 7));
        assert_eq!(max(u32::MAX, 2), 2);
        assert_eq!(distance(u32::MAX, 1), 2);
    }
}
