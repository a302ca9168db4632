//! The many-receiver part of the fairness grid (issue 19, item 5): one multicast session to
//! N receivers with heterogeneous RTTs and loss rates, against one TCP flow on the slowest
//! receiver's path.
//!
//! Topology ([`Sweep::scenario`]): the source S and the TCP sender T reach router R1 over
//! 100 Mbit/s, 1 ms links; R1-R2 is 10 Mbit/s, 10 ms; each receiver hangs off R2 on its own
//! 100 Mbit/s link with its own one-way delay and random loss. Receiver PR0 is the slowest by
//! construction: the longest delay ([`SLOWEST_DELAY_MS`]) and the highest loss
//! ([`SLOWEST_LOSS`]). The others draw a delay uniform in [[`MIN_DELAY_MS`],
//! [`SLOWEST_DELAY_MS`]) and a loss uniform in [[`MIN_LOSS`], [`SLOWEST_LOSS`]) from a fixed
//! generator, so every receiver's TCP-equation throughput (1/(RTT·√p)) is above PR0's, some
//! only just, and the first N receivers of a larger sweep are the receivers of a smaller one.
//! The TCP receiver TR sits on a link with PR0's delay and loss: TCP's goodput is the
//! TCP-fair rate for the group. At about 0.6 Mbit/s per flow the 10 Mbit/s bottleneck stays
//! uncongested, so the slowest path's random loss, not a shared queue, sets that rate (the
//! pgmcc paper's Fig. 7 setting, with heterogeneous receivers).
//!
//! f = TCP goodput / multicast goodput over the measurement ([`WARMUP_S`] to [`WARMUP_S`] +
//! [`MEASURE_S`]); the multicast goodput is also compared across sizes (issue 19: with 1000
//! receivers at least 0.9 of that with 10), and every receiver's unrecoverable sequence
//! numbers are counted (reliable mode: none expected).

use std::fmt::Write as _;

use pgmcc::cc::Controller;
use pgmcc::rng::Rng;

use crate::grid::{PGM_PAYLOAD, TCP_KEYS, TCP_PAYLOAD};
use crate::scenario::{self, FlowKind, ScenarioError};
use crate::summary::Summary;

/// Receiver counts of the standard sweep.
pub const SIZES: [usize; 4] = [1, 10, 100, 1000];
/// One-way delay of the slowest receiver's link (and of the TCP receiver's), ms.
pub const SLOWEST_DELAY_MS: u32 = 100;
/// Random loss of the slowest receiver's link (and of the TCP receiver's).
pub const SLOWEST_LOSS: f64 = 0.01;
/// Shortest one-way delay drawn for the other receivers' links, ms.
pub const MIN_DELAY_MS: u32 = 10;
/// Lowest loss drawn for the other receivers' links.
pub const MIN_LOSS: f64 = 0.001;
/// Warm-up before the measurement, s (about 250 of the slowest path's RTTs).
pub const WARMUP_S: f64 = 60.0;
/// Length of the measurement, s (about 1300 RTTs of the slowest path).
pub const MEASURE_S: f64 = 300.0;
/// Seed of the receivers' delays and losses: the topology is the same in every run.
const TOPOLOGY_SEED: u64 = 19;

/// One size of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    /// Number of multicast receivers (at least 1).
    pub receivers: usize,
}

/// What one run of a [`Sweep`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepOutcome {
    /// TCP goodput / multicast goodput.
    pub f: f64,
    /// TCP goodput, kbit/s.
    pub tcp_kbps: f64,
    /// Multicast goodput, kbit/s.
    pub multicast_kbps: f64,
    /// Sequence numbers reported unrecoverable, summed over the receivers.
    pub unrecoverable: u64,
    /// Acker changes during the measurement.
    pub acker_changes: usize,
    /// Share of the measurement during which the slowest receiver (PR0) was the acker.
    pub slowest_acker_share: f64,
}

impl Sweep {
    /// Each receiver's link: (one-way delay in ms, loss rate); receiver 0 is the slowest.
    pub fn links(&self) -> Vec<(u32, f64)> {
        let mut rng = Rng::new(TOPOLOGY_SEED);
        let mut v = vec![(SLOWEST_DELAY_MS, SLOWEST_LOSS)];
        for _ in 1..self.receivers.max(1) {
            let d = MIN_DELAY_MS + rng.below(u64::from(SLOWEST_DELAY_MS - MIN_DELAY_MS)) as u32;
            let p = MIN_LOSS + rng.unit() * (SLOWEST_LOSS - MIN_LOSS);
            // Four decimals in the file; stay strictly below the slowest receiver's loss.
            let p = ((p * 1e4).floor() / 1e4).min(SLOWEST_LOSS - 1e-4);
            v.push((d, p));
        }
        v
    }

    /// Run length, s.
    pub fn duration_s(&self) -> f64 {
        WARMUP_S + MEASURE_S
    }

    /// A file-name stem: "sweep-100rx".
    pub fn stem(&self) -> String {
        format!("sweep-{}rx", self.receivers)
    }

    /// The sweep size as a scenario file: `cc` to every receiver, `tcp` on the slowest path.
    pub fn scenario(&self, tcp: FlowKind, cc: Controller) -> String {
        let links = self.links();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# Receiver sweep of the fairness grid (issue 19; crates/netsim/src/sweep.rs): {n} \
             receivers with heterogeneous RTT and loss, one TCP flow on the slowest path.\n\
             name = \"{stem}\"\n\
             description = \"receiver sweep: {n} receivers, TCP on the slowest path\"\n\
             duration = \"{dur}s\"\n\
             sample = \"1s\"\n\
             jitter = \"auto\"",
            n = self.receivers,
            stem = self.stem(),
            dur = self.duration_s(),
        );
        for n in ["S", "T", "R1", "R2", "TR"] {
            let _ = writeln!(s, "[[node]]\nname = \"{n}\"");
        }
        for i in 0..links.len() {
            let _ = writeln!(s, "[[node]]\nname = \"PR{i}\"");
        }
        let mut link = |from: &str, to: &str, rate: &str, delay: u32, loss: f64| {
            let _ = writeln!(
                s,
                "[[link]]\nfrom = \"{from}\"\nto = \"{to}\"\nrate = \"{rate}\"\n\
                 delay = \"{delay}ms\"\nqueue = \"1000p\""
            );
            if loss > 0.0 {
                let _ = writeln!(s, "loss = {loss}");
            }
        };
        link("S", "R1", "100Mbit", 1, 0.0);
        link("T", "R1", "100Mbit", 1, 0.0);
        link("R1", "R2", "10Mbit", 10, 0.0);
        link("R2", "TR", "100Mbit", SLOWEST_DELAY_MS, SLOWEST_LOSS);
        for (i, &(d, p)) in links.iter().enumerate() {
            link("R2", &format!("PR{i}"), "100Mbit", d, p);
        }
        let _ = writeln!(
            s,
            "[[flow]]\nname = \"multicast\"\nkind = \"pgmcc\"\ncc = \"{cc}\"\nfrom = \"S\"\n\
             payload = {PGM_PAYLOAD}"
        );
        for i in 0..links.len() {
            let _ = writeln!(s, "[[flow.receiver]]\nnode = \"PR{i}\"");
        }
        let _ = writeln!(
            s,
            "[[flow]]\nname = \"tcp\"\nkind = \"{}\"\nfrom = \"T\"\nto = \"TR\"\n\
             payload = {TCP_PAYLOAD}\nstart_jitter = \"1s\"\n{TCP_KEYS}",
            tcp.name()
        );
        s
    }

    /// Runs `text` (a [`Sweep::scenario`] of this size, perhaps with keys added to its flows)
    /// with `seed` and measures it.
    pub fn run(&self, text: &str, seed: u64) -> Result<SweepOutcome, ScenarioError> {
        let mut sc = scenario::parse(&format!("{}.toml", self.stem()), text, "sweep", Some(seed))?;
        // Present in every sweep scenario; the acker share is 0 for a text without it.
        let slowest = sc
            .node_names
            .iter()
            .position(|n| n == "PR0")
            .map(|i| sc.sim.addr(i).to_string())
            .unwrap_or_default();
        let summary = crate::run::run(&mut sc, |_| {});
        Ok(self.measure(&summary, &slowest))
    }

    /// f, the rates, the losses and the acker's record over the measurement of a run of
    /// [`Sweep::scenario`]. `slowest` is PR0's address in the run (the acker switches name
    /// addresses).
    pub fn measure(&self, s: &Summary, slowest: &str) -> SweepOutcome {
        let (from, to) = (WARMUP_S, WARMUP_S + MEASURE_S);
        let tcp = crate::grid::delivered(s, "tcp", from, to);
        let mc = crate::grid::delivered(s, "multicast", from, to);
        let secs = to - from;
        let flow = s.flows.iter().find(|f| f.name == "multicast");
        let unrecoverable = crate::grid::unrecoverable(s, "multicast");
        let (mut changes, mut held) = (0, 0.0);
        if let Some(f) = flow {
            let sw = &f.acker_switches;
            for (i, a) in sw.iter().enumerate() {
                if a.t > from && a.t <= to {
                    changes += 1;
                }
                let t0 = a.t.max(from);
                let t1 = sw.get(i + 1).map_or(to, |b| b.t).min(to);
                if a.to == slowest && t1 > t0 {
                    held += t1 - t0;
                }
            }
        }
        SweepOutcome {
            f: if mc > 0.0 { tcp / mc } else { f64::INFINITY },
            tcp_kbps: tcp * 8.0 / 1e3 / secs,
            multicast_kbps: mc * 8.0 / 1e3 / secs,
            unrecoverable,
            acker_changes: changes,
            slowest_acker_share: held / secs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_receiver_but_the_first_is_faster_by_the_tcp_equation() {
        let links = Sweep { receivers: 1000 }.links();
        assert_eq!(links.len(), 1000);
        let t = |(d, p): (u32, f64)| 1.0 / (f64::from(2 * (d + 12)) * p.sqrt());
        let slowest = t(links[0]);
        assert!(links[1..].iter().all(|&l| t(l) > slowest));
        // Some are close: the election has near-ties to resolve.
        assert!(links[1..].iter().any(|&l| t(l) < 1.1 * slowest));
        // A smaller sweep is a prefix of a larger one.
        assert_eq!(Sweep { receivers: 10 }.links(), links[..10].to_vec());
    }

    #[test]
    fn every_size_is_a_valid_scenario() {
        for n in [1, 10] {
            let sw = Sweep { receivers: n };
            let text = sw.scenario(FlowKind::TcpSack, Controller::Pgmcc);
            if let Err(e) = scenario::parse("sweep.toml", &text, "sweep", Some(1)) {
                panic!("{n}: {e}\n{text}");
            }
        }
    }
}
