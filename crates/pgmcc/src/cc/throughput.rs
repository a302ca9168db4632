//! TCP throughput models for acker election (pgmcc paper §3.5).
//!
//! The acker is the receiver with the lowest TCP-equivalent throughput `T(rtt, p)`. A report
//! from receiver `j` replaces the current acker `i` only if `T(j) < c * T(i)`, `0 < c <= 1`
//! (c = 0.75 by default), which biases the choice towards the incumbent.

use serde::Serialize;

/// The constant `c` as a fraction `num / den`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SwitchBias {
    /// Numerator.
    pub num: u32,
    /// Denominator (non-zero).
    pub den: u32,
}

impl SwitchBias {
    /// The paper's `c = 0.75`.
    pub const PAPER: SwitchBias = SwitchBias { num: 3, den: 4 };

    /// `c` as a float.
    pub fn as_f64(self) -> f64 {
        f64::from(self.num) / f64::from(self.den.max(1))
    }
}

/// How the sender compares receivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum ThroughputModel {
    /// Eq. (1) of the paper: `T ∝ 1 / (RTT * sqrt(p))`, compared as `RTT^2 * p` in integers:
    /// no division, no square root.
    #[default]
    Simple,
    /// The full Padhye-Firoiu-Towsley-Kurose formula (paper footnote 3) with `b = 1` (no
    /// delayed ACKs) and `t_RTO = 4 * RTT`:
    /// `T = 1 / (RTT*sqrt(2bp/3) + t_RTO * min(1, 3*sqrt(3bp/8)) * p * (1 + 32 p^2))`.
    Pftk,
}

/// A receiver's operating point: RTT (any unit, the same for every receiver compared) and
/// loss rate in 16.16 fixed point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Operating {
    /// Round-trip time, in packets or milliseconds.
    pub rtt: u32,
    /// Loss rate, 16.16 fixed point (65536 = 100%).
    pub loss: u32,
}

impl ThroughputModel {
    /// Relative throughput (higher is faster); `f64::INFINITY` when the loss rate is 0.
    pub fn throughput(self, x: Operating) -> f64 {
        let p = f64::from(x.loss) / 65536.0;
        let rtt = f64::from(x.rtt.max(1));
        if p <= 0.0 {
            return f64::INFINITY;
        }
        match self {
            ThroughputModel::Simple => 1.0 / (rtt * p.sqrt()),
            ThroughputModel::Pftk => {
                let b = 1.0;
                let t_rto = 4.0 * rtt;
                let denom = rtt * (2.0 * b * p / 3.0).sqrt()
                    + t_rto
                        * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0)
                        * p
                        * (1.0 + 32.0 * p * p);
                1.0 / denom
            }
        }
    }

    /// True when a receiver at `candidate` should replace the acker at `current`:
    /// `T(candidate) < c * T(current)`.
    pub fn should_switch(self, candidate: Operating, current: Operating, c: SwitchBias) -> bool {
        match self {
            ThroughputModel::Simple => {
                // 1/(r_n sqrt(p_n)) < c/(r_c sqrt(p_c))  <=>  den^2 r_c^2 p_c < num^2 r_n^2 p_n
                let x = |o: Operating| u128::from(o.rtt.max(1)).pow(2) * u128::from(o.loss);
                let (num, den) = (u128::from(c.num), u128::from(c.den.max(1)));
                den * den * x(current) < num * num * x(candidate)
            }
            ThroughputModel::Pftk => {
                let tn = self.throughput(candidate);
                let tc = self.throughput(current);
                tn < c.as_f64() * tc
            }
        }
    }

    /// The formula's limit when neither receiver has lost anything: the loss rates are equal,
    /// cancel, and `T ∝ 1/RTT`, so `candidate` replaces `current` when `RTT(current) < c
    /// RTT(candidate)`. (The draft's `M = 0` makes them tie; [`Self::should_switch`] keeps
    /// that.) False unless both report zero loss.
    pub fn should_switch_at_zero_loss(
        self,
        candidate: Operating,
        current: Operating,
        c: SwitchBias,
    ) -> bool {
        let equal = |o: Operating| Operating { loss: 1, ..o };
        candidate.loss == 0
            && current.loss == 0
            && self.should_switch(equal(candidate), equal(current), c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(rtt: u32, loss_pct: f64) -> Operating {
        Operating {
            rtt,
            loss: (loss_pct / 100.0 * 65536.0) as u32,
        }
    }

    #[test]
    fn simple_model_matches_its_float_form() {
        let c = SwitchBias::PAPER;
        let cases = [
            (op(10, 1.0), op(10, 2.0)),
            (op(20, 1.0), op(10, 3.0)),
            (op(40, 0.5), op(10, 8.0)),
        ];
        for (a, b) in cases {
            for (cand, cur) in [(a, b), (b, a)] {
                let m = ThroughputModel::Simple;
                let float = m.throughput(cand) < c.as_f64() * m.throughput(cur);
                assert_eq!(m.should_switch(cand, cur, c), float, "{cand:?} vs {cur:?}");
            }
        }
    }

    #[test]
    fn bias_prevents_switching_between_equals() {
        let m = ThroughputModel::Simple;
        let a = op(10, 2.0);
        let b = op(11, 2.0); // 10% worse: T(b) = 0.91 T(a)
        assert!(
            !m.should_switch(b, a, SwitchBias::PAPER),
            "c = 0.75 keeps the incumbent"
        );
        assert!(
            m.should_switch(b, a, SwitchBias { num: 1, den: 1 }),
            "c = 1 switches"
        );
        // Twice the RTT at the same loss: T halves, below 0.75 T.
        assert!(m.should_switch(op(20, 2.0), a, SwitchBias::PAPER));
    }

    #[test]
    fn zero_loss_is_never_the_slowest() {
        let m = ThroughputModel::Simple;
        assert!(!m.should_switch(op(100, 0.0), op(10, 1.0), SwitchBias::PAPER));
        assert!(m.should_switch(op(10, 1.0), op(100, 0.0), SwitchBias::PAPER));
    }

    #[test]
    fn at_zero_loss_the_longer_rtt_is_slower_by_more_than_the_bias() {
        let c = SwitchBias::PAPER;
        for m in [ThroughputModel::Simple, ThroughputModel::Pftk] {
            // 38 ms is within 1/c = 1.33 of 30 ms; 64 ms is not.
            assert!(!m.should_switch_at_zero_loss(op(38, 0.0), op(30, 0.0), c));
            assert!(m.should_switch_at_zero_loss(op(64, 0.0), op(30, 0.0), c));
            assert!(!m.should_switch_at_zero_loss(op(30, 0.0), op(64, 0.0), c));
            // Only when both report zero loss.
            assert!(!m.should_switch_at_zero_loss(op(64, 1.0), op(30, 0.0), c));
            assert!(!m.should_switch_at_zero_loss(op(64, 0.0), op(30, 1.0), c));
            assert!(
                !m.should_switch(op(64, 0.0), op(30, 0.0), c),
                "the draft's tie"
            );
        }
    }

    #[test]
    fn pftk_penalises_high_loss_more_than_the_simple_formula() {
        // Footnote 3: at high loss the simple formula overestimates throughput, so a lossy
        // short path can wrongly look faster than a clean long one.
        let lossy = op(10, 8.0);
        let long = op(30, 1.0);
        let s = ThroughputModel::Simple;
        let p = ThroughputModel::Pftk;
        let one = SwitchBias { num: 1, den: 1 };
        assert!(
            !s.should_switch(lossy, long, one),
            "simple: lossy looks faster"
        );
        assert!(p.should_switch(lossy, long, one), "PFTK: lossy is slower");
    }
}
