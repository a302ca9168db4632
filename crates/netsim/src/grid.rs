//! The fairness grid (issue 19, item 5): one multicast flow with one receiver against one
//! TCP flow on a dumbbell, over bottleneck rate x RTT x queue size x access-link speed.
//!
//! Every cell is an ordinary scenario file ([`Cell::scenario`]), so any cell can be rerun and
//! inspected with `pgmcc sim`. The cells are built so that they measure the controllers and
//! not the simulator's artefacts (docs/pgmcc.md, "TCP-friendliness on a dumbbell"):
//!
//! - both flows put 1500-byte datagrams on the wire (TCP: 1460-byte payloads; pgmcc: 1428,
//!   its ODATA and PGMCC option headers taking the other 72), so drop-tail does not favour
//!   one packet size;
//! - `jitter = "auto"` on every host (ns-2's `overhead_`), so the two ACK clocks do not lock
//!   into a phase where one flow takes every drop;
//! - the queue is `queue_bdp` bandwidth-delay products of 1500-byte packets, at least 4;
//! - the senders' access links are 10x the bottleneck ("faster": bursts reach the queue at
//!   line rate) or 0.75x ("slower": each flow is smoothed but two still overload the
//!   bottleneck); the receivers' links are 10x. Only the bottleneck drops.
//!
//! Both flows start at a seed-dependent instant in the first second (`start_jitter`), so
//! neither is always first. f = TCP goodput / multicast goodput at the receivers, from the end
//! of the warm-up to the end of the run. Where [`STEADY_BUDGET`] allows ([`Cell::steady`]),
//! the warm-up lasts [`CONVERGE_CYCLES`] of TCP's sawtooth cycles, long enough for two
//! window-based flows to converge from whatever start-up left them with, and the measurement
//! at least [`MIN_CYCLES`], [`PRECISE_CYCLES`] where the budget affords them; elsewhere the
//! measurement still spans at least 200 RTTs, but f then mostly reflects start-up
//! ([`Outcome::cycles`] says how many cycles it covered).

use std::fmt::Write as _;

use pgmcc::cc::Controller;

use crate::scenario::FlowKind;
use crate::summary::Summary;

/// Wire size of every data packet in the grid, bytes.
pub const WIRE_BYTES: u32 = 1500;
/// TCP payload for [`WIRE_BYTES`] (40 bytes of IP and TCP headers).
pub const TCP_PAYLOAD: u32 = 1460;
/// Keys every TCP flow of the grid and of the receiver sweep ([`crate::sweep`]) carries:
/// limited transmit (RFC 3042), which RFC 5681 §3.2 says a TCP SHOULD use, Linux does and
/// ns-2 has done by default since 2001 (`singledup_`). Without it a TCP flow whose window is
/// 3-4 segments cannot collect three duplicate ACKs and waits for its 1 s RTO instead: in the
/// grid's 4-packet cells (1 Mbit/s x 20 ms) TCP SACK and NewReno timed out 103-154 times a
/// run, so those cells measured an old TCP's timeouts rather than TCP-friendliness
/// (docs/pgmcc.md, "The 4-packet cells").
pub const TCP_KEYS: &str = "limited_transmit = true";
/// pgmcc payload for [`WIRE_BYTES`] (IP, UDP, PGM, ODATA and PGMCC option headers: 72).
pub const PGM_PAYLOAD: u32 = 1428;
/// Smallest queue in packets.
pub const MIN_QUEUE: u32 = 4;
/// Shortest measurement, seconds, where the packet budget allows. Two window-based flows
/// at low bandwidth trade the larger share back and forth over tens of seconds: at 1 Mbit/s
/// f over consecutive 100 s windows of one run ranged 0.62-1.36 (sd about 0.2), so 100 s
/// and 3 seeds could not place a mean within the [0.8, 1.25] band; 500 s and 3 seeds give
/// about 0.05 (docs/reproduction.md, "Fairness grid").
pub const MIN_MEASURE_S: f64 = 500.0;
/// Upper bound on the data packets [`MIN_MEASURE_S`] may cost at the bottleneck rate; the
/// cycle and 200-RTT minimums win over it.
pub const PACKET_BUDGET: f64 = 1.5e6;
/// Warm-up of a [`Cell::steady`] cell, in TCP sawtooth cycles. Two window-based flows that
/// start a few RTTs apart on a large bandwidth-delay product leave slow start far apart: the
/// first one's overshoot fills the queue while the second is still small, and the second
/// then climbs at one packet per RTT (at 100 Mbit/s, 100 ms and a 2-BDP queue TCP SACK
/// left slow start at 20 packets against pgmcc's 513 when pgmcc started first). Each
/// cycle's common loss halves the difference. Measured on that cell (the grid's scenario
/// file run for 1250 s, f per 125-s cycle with `pgmcc sim FILE --seed N --phases
/// 0-125,125-250,...`; TCP SACK and NewReno against pgmcc and TCP SACK against TCP SACK, 3
/// seeds each): f over the first cycle 0.26-2.63 (whichever flow started first), over the
/// fifth 0.92-1.11, over cycles 6-10 1.01-1.05 (pgmcc) and 0.89-1.20 (the control).
pub const CONVERGE_CYCLES: f64 = 5.0;
/// Fewest TCP sawtooth cycles a [`Cell::steady`] cell is measured over.
pub const MIN_CYCLES: f64 = 8.0;
/// TCP sawtooth cycles a [`Cell::steady`] cell is measured over where a run of that length
/// stays within [`STEADY_BUDGET`]. Two window-based flows trade the larger share back and
/// forth over several cycles (a drop that hits one flow alone leaves it behind for about 5
/// cycles, docs/pgmcc.md), TCP against TCP as much as pgmcc against TCP, so f over a few
/// cycles is noisy. Measured on two cells whose runs had 8 cycles (the grid's scenarios run
/// 48 and 66 cycles past the warm-up, seeds 1-10, pgmcc against TCP SACK and the control,
/// f over consecutive windows): the standard deviation of f over windows of 8 cycles was
/// 0.19 and 0.18 (pgmcc and control, 10 Mbit/s x 400 ms x 2 BDP slow) and 0.20 and 0.22
/// (10 Mbit/s x 400 ms x 1 BDP fast), over 24 cycles 0.10, 0.08, 0.15 and 0.14,
/// over 48 cycles 0.07, 0.07, 0.11 and 0.09. So a mean of three seeds over 8 cycles misses
/// a cell's value by more than 0.2 about one time in ten, and a grid of a few dozen such
/// cells has one or two out of the [0.8, 1.25] band by chance alone; over 24 cycles about
/// one time in fifty or fewer.
pub const PRECISE_CYCLES: f64 = 24.0;
/// Upper bound on the data packets a whole run (warm-up and measurement) may cost at the
/// bottleneck rate for a cell to be measured in steady state ([`Cell::steady`]), unless
/// `pgmcc grid --steady-budget` says otherwise. A run of that size takes about a minute on
/// this project's 2-core reference machine (100 Mbit/s x 100 ms x 2 BDP slow with 8
/// measured cycles, 13.6 million packets: 62 s). The cells of 100 Mbit/s at 400 ms, whose
/// sawtooth cycles last 10-33 minutes, need 68-217 million packets per run
/// ([`Cell::steady_packets`]): 8-28 minutes for a run with pgmcc (about 130,000 packets a
/// second: 0.5 BDP fast, 500-554 s), about a third of that for the TCP-only control, some
/// 17 CPU-hours for their 72 runs, which `make grid` does not spend.
pub const STEADY_BUDGET: f64 = 15e6;

/// Speed of the senders' access links relative to the bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// 10x the bottleneck.
    Faster,
    /// 0.75x the bottleneck.
    Slower,
}

impl Access {
    /// Rate multiplier.
    pub fn factor(self) -> f64 {
        match self {
            Access::Faster => 10.0,
            Access::Slower => 0.75,
        }
    }

    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Access::Faster => "fast",
            Access::Slower => "slow",
        }
    }
}

/// What runs in the multicast slot of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contender {
    /// PGM with one receiver under this congestion controller.
    Pgm(Controller),
    /// A second TCP flow of this kind (the control: what TCP gets against TCP).
    Tcp(FlowKind),
}

/// One dumbbell of the grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    /// Bottleneck rate, bit/s.
    pub rate_bps: u64,
    /// Round-trip propagation delay, ms.
    pub rtt_ms: u32,
    /// Bottleneck queue in bandwidth-delay products.
    pub queue_bdp: f64,
    /// Senders' access links.
    pub access: Access,
    /// Upper bound on the data packets a whole run may cost at the bottleneck rate for the
    /// cell to be measured in steady state ([`Cell::steady`]); [`STEADY_BUDGET`] in
    /// [`standard`].
    pub steady_budget: f64,
}

/// The standard grid: {1, 10, 100} Mbit/s x {20, 100, 400} ms x {0.5, 1, 2} BDP x access
/// {faster, slower}: 54 cells.
pub fn standard() -> Vec<Cell> {
    let mut v = Vec::new();
    for rate_bps in [1_000_000, 10_000_000, 100_000_000] {
        for rtt_ms in [20, 100, 400] {
            for queue_bdp in [0.5, 1.0, 2.0] {
                for access in [Access::Faster, Access::Slower] {
                    v.push(Cell {
                        rate_bps,
                        rtt_ms,
                        queue_bdp,
                        access,
                        steady_budget: STEADY_BUDGET,
                    });
                }
            }
        }
    }
    v
}

impl Cell {
    fn rtt_s(&self) -> f64 {
        f64::from(self.rtt_ms) / 1e3
    }

    /// Data packets per second at the bottleneck.
    pub fn packet_rate(&self) -> f64 {
        self.rate_bps as f64 / f64::from(WIRE_BYTES * 8)
    }

    /// Bandwidth-delay product in packets.
    pub fn bdp_packets(&self) -> f64 {
        self.packet_rate() * self.rtt_s()
    }

    /// The multicast source's transmit window: 16 x (BDP + queue), at least the core's 4096.
    /// The source keeps every packet for its NAK horizon, about 7 round trips, so it can send
    /// at most a seventh of its window per round trip (docs/core.md, "Transmit window");
    /// the grid compares congestion control, so the window must never be what limits it, as
    /// the simulated TCP's buffers never are: 16 x covers a slow-start overshoot of twice
    /// the path's capacity.
    pub fn txw_sqns(&self) -> u32 {
        (16 * (self.bdp_packets().ceil() as u32 + self.queue_packets())).max(4096)
    }

    /// Bottleneck queue in packets.
    pub fn queue_packets(&self) -> u32 {
        ((self.queue_bdp * self.bdp_packets()).round() as u32).max(MIN_QUEUE)
    }

    /// The period of TCP's sawtooth with two flows sharing the bottleneck, seconds: each
    /// peaks near half of BDP + queue and climbs back from half of that at one packet per
    /// RTT, over an RTT that grows with the queue (its mean: base + half the queue).
    pub fn cycle_s(&self) -> f64 {
        let q = f64::from(self.queue_packets());
        let w = (self.bdp_packets() + q) / 2.0;
        let rtt = self.rtt_s() + q / 2.0 / self.packet_rate();
        (w / 2.0).max(1.0) * rtt
    }

    /// The warm-up and measurement of a steady-state run, seconds: [`CONVERGE_CYCLES`] (at
    /// least 50 RTTs), then the longest of [`MIN_CYCLES`], [`PRECISE_CYCLES`] as far as
    /// [`STEADY_BUDGET`] (or a smaller [`Cell::steady_budget`]) affords them, [`MIN_MEASURE_S`]
    /// within [`PACKET_BUDGET`], and 200 RTTs.
    fn steady_span(&self) -> (f64, f64) {
        let warm = (50.0 * self.rtt_s())
            .max(CONVERGE_CYCLES * self.cycle_s())
            .ceil();
        let budget = PACKET_BUDGET / self.packet_rate();
        let affordable =
            (self.steady_budget.min(STEADY_BUDGET) / self.packet_rate() - warm).floor();
        let measure = MIN_MEASURE_S
            .min(budget)
            .max((PRECISE_CYCLES * self.cycle_s()).min(affordable))
            .max(MIN_CYCLES * self.cycle_s())
            .max(200.0 * self.rtt_s());
        (warm, measure.ceil())
    }

    /// Whether the cell can be run long enough to measure the two flows in steady state:
    /// the run of [`Cell::steady_span`] costs at most [`Cell::steady_budget`] packets at the
    /// bottleneck rate.
    pub fn steady(&self) -> bool {
        self.steady_packets() <= self.steady_budget
    }

    /// The packets a steady-state run of this cell costs at the bottleneck rate (its
    /// [`Cell::steady_budget`] decides whether it gets one).
    pub fn steady_packets(&self) -> f64 {
        let (warm, measure) = self.steady_span();
        (warm + measure) * self.packet_rate()
    }

    /// Warm-up before the measurement, whole seconds: [`CONVERGE_CYCLES`] cycles (at least
    /// 50 RTTs) in a [`Cell::steady`] cell; otherwise 50 RTTs or two cycles, whichever is
    /// longer, at most the measurement's length.
    pub fn warmup_s(&self) -> f64 {
        if self.steady() {
            return self.steady_span().0;
        }
        (50.0 * self.rtt_s())
            .max(2.0 * self.cycle_s())
            .min(self.measure_s())
            .ceil()
    }

    /// Length of the measurement, whole seconds: in a [`Cell::steady`] cell at least
    /// [`MIN_CYCLES`], [`PRECISE_CYCLES`] where the budget affords them, or [`MIN_MEASURE_S`]
    /// within [`PACKET_BUDGET`], whichever is longer ([`Cell::steady_span`]); otherwise
    /// [`PACKET_BUDGET`] packets at the bottleneck rate. Never below 200 RTTs.
    pub fn measure_s(&self) -> f64 {
        if self.steady() {
            return self.steady_span().1;
        }
        let budget = PACKET_BUDGET / self.packet_rate();
        budget.max(200.0 * self.rtt_s()).ceil()
    }

    /// Whether `other` is the same scenario: the same rate, RTT and access, and a queue of
    /// the same number of packets (small BDPs all round up to [`MIN_QUEUE`]).
    pub fn scenario_eq(&self, other: &Cell) -> bool {
        self.rate_bps == other.rate_bps
            && self.rtt_ms == other.rtt_ms
            && self.access == other.access
            && self.queue_packets() == other.queue_packets()
    }

    /// A readable label: "10 Mbit/s 100 ms q=1 BDP (83p) fast".
    pub fn label(&self) -> String {
        format!(
            "{} Mbit/s {} ms q={} BDP ({}p) {}",
            self.rate_bps / 1_000_000,
            self.rtt_ms,
            self.queue_bdp,
            self.queue_packets(),
            self.access.name()
        )
    }

    /// A file-name stem: "10M-100ms-q1-fast".
    pub fn stem(&self) -> String {
        format!(
            "{}M-{}ms-q{}-{}",
            self.rate_bps / 1_000_000,
            self.rtt_ms,
            self.queue_bdp,
            self.access.name()
        )
    }

    /// The cell as a scenario file: `tcp` (a TCP kind) against `contender`.
    pub fn scenario(&self, tcp: FlowKind, contender: Contender) -> String {
        let kbit = |factor: f64| format!("{}kbit", (self.rate_bps as f64 * factor / 1e3).round());
        let q = self.queue_packets();
        // Queues that never fill: two windows' worth of the whole path.
        let big = 2 * (self.bdp_packets().ceil() as u32 + q) + 100;
        // Access 1 ms + bottleneck + receiver link 1 ms, each way.
        let bottleneck_ms = f64::from(self.rtt_ms) / 2.0 - 2.0;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# Fairness grid cell (issue 19; crates/netsim/src/grid.rs): {label}.\n\
             name = \"grid-{stem}\"\n\
             description = \"fairness grid: {label}\"\n\
             duration = \"{dur}s\"\n\
             sample = \"1s\"\n\
             jitter = \"auto\"",
            label = self.label(),
            stem = self.stem(),
            dur = self.warmup_s() + self.measure_s(),
        );
        for n in ["S", "T", "R1", "R2", "MR", "TR"] {
            let _ = writeln!(s, "[[node]]\nname = \"{n}\"");
        }
        let mut link = |from: &str, to: &str, rate: String, delay: String, queue: u32| {
            let _ = writeln!(
                s,
                "[[link]]\nfrom = \"{from}\"\nto = \"{to}\"\nrate = \"{rate}\"\n\
                 delay = \"{delay}\"\nqueue = \"{queue}p\""
            );
        };
        let access = kbit(self.access.factor());
        link("S", "R1", access.clone(), "1ms".into(), big);
        link("T", "R1", access, "1ms".into(), big);
        link("R1", "R2", kbit(1.0), format!("{bottleneck_ms}ms"), q);
        link("R2", "MR", kbit(10.0), "1ms".into(), big);
        link("R2", "TR", kbit(10.0), "1ms".into(), big);
        match contender {
            Contender::Pgm(cc) => {
                let _ = writeln!(
                    s,
                    "[[flow]]\nname = \"multicast\"\nkind = \"pgmcc\"\ncc = \"{cc}\"\n\
                     from = \"S\"\npayload = {PGM_PAYLOAD}\nstart_jitter = \"1s\"\n\
                     txw_sqns = {txw}\n[[flow.receiver]]\nnode = \"MR\"",
                    txw = self.txw_sqns()
                );
            }
            Contender::Tcp(kind) => {
                let _ = writeln!(
                    s,
                    "[[flow]]\nname = \"multicast\"\nkind = \"{}\"\nfrom = \"S\"\nto = \"MR\"\n\
                     payload = {TCP_PAYLOAD}\nstart_jitter = \"1s\"\n{TCP_KEYS}",
                    kind.name()
                );
            }
        }
        let _ = writeln!(
            s,
            "[[flow]]\nname = \"tcp\"\nkind = \"{}\"\nfrom = \"T\"\nto = \"TR\"\n\
             payload = {TCP_PAYLOAD}\nstart_jitter = \"1s\"\n{TCP_KEYS}",
            tcp.name()
        );
        s
    }

    /// f and the rates over the measurement of a run of [`Cell::scenario`].
    pub fn measure(&self, s: &Summary) -> Outcome {
        let from = self.warmup_s();
        let to = from + self.measure_s();
        let (tcp, mc) = (
            delivered(s, "tcp", from, to),
            delivered(s, "multicast", from, to),
        );
        let secs = (to - from).max(1e-9);
        Outcome {
            f: if mc > 0.0 { tcp / mc } else { f64::INFINITY },
            tcp_kbps: tcp * 8.0 / 1e3 / secs,
            multicast_kbps: mc * 8.0 / 1e3 / secs,
            cycles: (to - from) / self.cycle_s(),
            unrecoverable: unrecoverable(s, "multicast"),
        }
    }
}

/// Sequence numbers flow `name`'s PGM receivers gave up over the whole run, summed (0 for
/// a TCP flow or no such flow).
pub fn unrecoverable(s: &Summary, name: &str) -> u64 {
    s.flows.iter().find(|f| f.name == name).map_or(0, |f| {
        f.receivers
            .iter()
            .map(|r| match &r.report {
                crate::AgentReport::PgmReceiver(Some(r)) => r.unrecoverable_sqns,
                _ => 0,
            })
            .sum()
    })
}

/// Payload bytes flow `name` delivered between the samples at or before `from` and `to`
/// (0 when there is no such flow).
pub fn delivered(s: &Summary, name: &str, from: f64, to: f64) -> f64 {
    let Some(fl) = s.flows.iter().find(|f| f.name == name) else {
        return 0.0;
    };
    let at = |t: f64| -> u64 {
        // Cumulative goodput at the last sample at or before t.
        let k = s.times.partition_point(|&x| x <= t + 1e-9);
        match k {
            0 => 0,
            k => fl.sequence_bytes.get(k - 1).copied().unwrap_or(0),
        }
    };
    at(to).saturating_sub(at(from)) as f64
}

/// What one run of a cell measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// TCP goodput / multicast goodput.
    pub f: f64,
    /// TCP goodput, kbit/s.
    pub tcp_kbps: f64,
    /// Multicast goodput (at its one receiver), kbit/s.
    pub multicast_kbps: f64,
    /// TCP sawtooth cycles the measurement spans ([`Cell::cycle_s`]).
    pub cycles: f64,
    /// Sequence numbers the multicast receiver gave up over the whole run (reliable mode:
    /// should be 0; always 0 for the TCP control).
    pub unrecoverable: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario;

    #[test]
    fn every_standard_cell_is_a_valid_scenario() {
        let cells = standard();
        assert_eq!(cells.len(), 54);
        for c in &cells {
            for contender in [
                Contender::Pgm(Controller::Pgmcc),
                Contender::Tcp(FlowKind::TcpSack),
            ] {
                let text = c.scenario(FlowKind::TcpNewReno, contender);
                if let Err(e) = scenario::parse("grid.toml", &text, "grid", Some(1)) {
                    panic!("{}: {e}\n{text}", c.label());
                }
            }
            assert!(c.queue_packets() >= MIN_QUEUE);
            assert!(c.measure_s() >= 200.0 * c.rtt_s());
            if c.steady() {
                assert!(c.warmup_s() >= CONVERGE_CYCLES * c.cycle_s());
                assert!(c.measure_s() >= MIN_CYCLES * c.cycle_s());
                assert!(c.steady_packets() <= STEADY_BUDGET);
                // The longer measurement wherever a run of that length fits the budget.
                let precise = c.warmup_s() + PRECISE_CYCLES * c.cycle_s();
                if precise * c.packet_rate() < STEADY_BUDGET - c.packet_rate() {
                    assert!(
                        c.measure_s() >= PRECISE_CYCLES * c.cycle_s(),
                        "{}",
                        c.label()
                    );
                }
            } else {
                assert!(c.warmup_s() <= c.measure_s());
            }
        }
    }

    /// The default budget leaves exactly the 100 Mbit/s x 400 ms cells to start-up
    /// measurement, at the costs [`STEADY_BUDGET`] documents; 250 million packets a run
    /// measures every cell in steady state.
    #[test]
    fn the_budget_decides_which_cells_reach_steady_state() {
        let cells = standard();
        let start_up: Vec<&Cell> = cells.iter().filter(|c| !c.steady()).collect();
        assert_eq!(start_up.len(), 6);
        assert!(start_up
            .iter()
            .all(|c| c.rate_bps == 100_000_000 && c.rtt_ms == 400));
        let cost: Vec<f64> = start_up.iter().map(|c| c.steady_packets() / 1e6).collect();
        let (lo, hi) = (
            cost.iter().cloned().fold(f64::MAX, f64::min),
            cost.iter().cloned().fold(0.0, f64::max),
        );
        assert!(
            (67.0..69.0).contains(&lo) && (216.0..218.0).contains(&hi),
            "{cost:?}"
        );
        for c in cells {
            assert!(Cell {
                steady_budget: 250e6,
                ..c
            }
            .steady());
        }
    }

    #[test]
    fn sizes_follow_the_bandwidth_delay_product() {
        let c = Cell {
            rate_bps: 10_000_000,
            rtt_ms: 100,
            queue_bdp: 1.0,
            access: Access::Faster,
            steady_budget: STEADY_BUDGET,
        };
        assert!((c.bdp_packets() - 83.33).abs() < 0.01);
        assert_eq!(c.queue_packets(), 83);
        let small = Cell {
            rate_bps: 1_000_000,
            rtt_ms: 20,
            queue_bdp: 0.5,
            access: Access::Slower,
            steady_budget: STEADY_BUDGET,
        };
        assert_eq!(small.queue_packets(), MIN_QUEUE);
    }
}
