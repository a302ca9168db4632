//! The only randomness in the core: a seeded generator the driver hands in as a seed.
//!
//! Xoshiro256++ from `rand_xoshiro` is portable and stable across versions, so a seed
//! reproduces a run byte for byte on any machine.

use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::time::Duration;

/// A deterministic random source owned by one protocol component.
#[derive(Debug, Clone)]
pub struct Rng(Xoshiro256PlusPlus);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// A uniform integer in `0..n` (0 when `n` is 0), by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.0.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform duration in `[0, max]`.
    pub fn duration_up_to(&mut self, max: Duration) -> Duration {
        let n = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(self.below(n.saturating_add(1)))
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_and_bounded() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
            let d = a.duration_up_to(Duration::from_millis(50));
            b.duration_up_to(Duration::from_millis(50));
            assert!(d <= Duration::from_millis(50));
        }
        assert_eq!(a.below(0), 0);
    }
}
