//! Receiver loss measurement (pgmcc paper §3.2.2, draft §2.6): a first-order low-pass filter
//! over the binary loss signal in sequence-number space,
//!
//! ```text
//! Y_i = W * Y_{i-1} + (1 - W) * x_i      x_i = 1 if packet i was lost, 0 if received
//! ```
//!
//! computed in fixed point with 16 fractional bits, `W = 65000/65536` by default. No clock
//! is involved: the filter advances once per sequence number.

/// One in 16.16 fixed point.
pub const ONE: u32 = 1 << 16;

/// The paper's filter constant, `W = 65000/65536`.
pub const DEFAULT_W: u32 = 65000;

/// The loss estimator of one receiver for one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossFilter {
    w: u32,
    y: u32,
}

impl LossFilter {
    /// A filter with weight `w / 65536` (clamped to `0..=65536`), starting at zero loss.
    pub const fn new(w: u32) -> LossFilter {
        let w = if w > ONE { ONE } else { w };
        LossFilter { w, y: 0 }
    }

    /// Feeds one sequence number: `lost` is `x_i`.
    pub fn update(&mut self, lost: bool) {
        let x = if lost { u64::from(ONE) } else { 0 };
        let w = u64::from(self.w);
        let y = (w * u64::from(self.y) + (u64::from(ONE) - w) * x) >> 16;
        // y <= ONE because it is a convex combination of values <= ONE.
        self.y = y as u32;
    }

    /// Feeds `n` lost sequence numbers.
    pub fn update_lost(&mut self, n: u32) {
        for _ in 0..n.min(4096) {
            self.update(true);
        }
    }

    /// The estimate in 16.16 fixed point (`65536` = every packet lost).
    pub const fn value(&self) -> u32 {
        self.y
    }

    /// The estimate as the pgmcc draft's 16-bit loss rate (`65535` = 100%).
    pub fn as_u16(&self) -> u16 {
        self.y.min(u32::from(u16::MAX)) as u16
    }

    /// The estimate as a fraction.
    pub fn as_f64(&self) -> f64 {
        f64::from(self.y) / f64::from(ONE)
    }
}

impl Default for LossFilter {
    fn default() -> LossFilter {
        LossFilter::new(DEFAULT_W)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_values() {
        let mut f = LossFilter::default();
        // Y1 = (65000*0 + 536*65536) >> 16 = 536
        f.update(true);
        assert_eq!(f.value(), 536);
        // Y2 = (65000*536) >> 16 = 34_840_000 >> 16 = 531
        f.update(false);
        assert_eq!(f.value(), 531);
        // Y3 = (65000*531 + 536*65536) >> 16 = (34_515_000 + 35_127_296) >> 16 = 1062
        f.update(true);
        assert_eq!(f.value(), 1062);
        // Y4 = (65000*1062) >> 16 = 69_030_000 >> 16 = 1053
        f.update(false);
        assert_eq!(f.value(), 1053);
    }

    #[test]
    fn converges_to_the_loss_rate() {
        // Every 20th packet lost: 5%.
        let mut f = LossFilter::default();
        for i in 0..20_000 {
            f.update(i % 20 == 0);
        }
        let p = f.as_f64();
        assert!((0.04..0.06).contains(&p), "{p}");
        // All lost: approaches but never exceeds 1.
        for _ in 0..20_000 {
            f.update(true);
        }
        assert!(f.value() <= ONE && f.value() > ONE - 200);
        assert_eq!(f.as_u16(), f.value().min(65535) as u16);
    }

    #[test]
    fn weight_is_a_knob() {
        let mut fast = LossFilter::new(60000);
        fast.update(true);
        assert_eq!(fast.value(), 5536);
    }
}
