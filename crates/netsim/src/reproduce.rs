//! What a scenario's `[reproduce]` row compares with a published result, and the row
//! measured on one run: TCP's and pgmcc's mean rates over the row's window, and their
//! ratio f.
//!
//! Only data flows in: a [`Scenario`](crate::scenario::Scenario) carries its row, and
//! [`Reproduce::measure`] reads a run's [`Summary`]. This module depends on
//! [`crate::summary`] alone, never on [`crate::run`] or [`crate::scenario`].

use crate::summary::{mean_between, Summary};

/// What a scenario reproduces from a paper, for `pgmcc reproduce`.
#[derive(Debug, Clone)]
pub struct Reproduce {
    /// Row label, e.g. "Set 1, TCP Reno, fixed timeout".
    pub experiment: String,
    /// Where the published value comes from (paper, figure).
    pub source: String,
    /// Index of the TCP flow in `Scenario::flows`.
    pub tcp: usize,
    /// Index of the pgmcc flow.
    pub pgm: usize,
    /// Measure from this time on (seconds), skipping start-up.
    pub from_s: f64,
    /// Measure up to this time (seconds; `None` = the end of the run).
    pub to_s: Option<f64>,
    /// The published fairness f = TCP / pgmcc, if the paper gives one.
    pub published_f: Option<f64>,
    /// The paper's qualitative statement, when it gives no number.
    pub expectation: Option<String>,
    /// Our explanation of the comparison, written after measuring.
    pub explanation: Option<String>,
}

/// A reproduction row measured on one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Mean TCP rate over the row's window, kbit/s.
    pub tcp_kbps: f64,
    /// Mean pgmcc rate over the row's window, kbit/s.
    pub pgm_kbps: f64,
    /// f = TCP / pgmcc (NaN when pgmcc sent nothing).
    pub f: f64,
}

impl Reproduce {
    /// The row's rates and fairness f in a run of its scenario.
    pub fn measure(&self, s: &Summary) -> Measured {
        let end = self.to_s.unwrap_or(s.duration_s);
        let mean = |flow: usize| {
            s.flows
                .get(flow)
                .map_or(0.0, |f| mean_between(s, &f.series_kbps, self.from_s, end))
        };
        let (tcp_kbps, pgm_kbps) = (mean(self.tcp), mean(self.pgm));
        let f = if pgm_kbps > 0.0 {
            tcp_kbps / pgm_kbps
        } else {
            f64::NAN
        };
        Measured {
            tcp_kbps,
            pgm_kbps,
            f,
        }
    }
}
