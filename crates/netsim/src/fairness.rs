//! Generated fairness scenarios (issue 51): a yardstick that cannot be fitted to.
//!
//! [`Spec::generate`] turns a generator seed (the scenario's *id*) into a random, realistic
//! scenario: a bottleneck of 1-200 Mbit/s, a round trip of 5-500 ms, a drop-tail queue of
//! 0.25-4 bandwidth-delay products counted in packets or in bytes, 1-16 competing TCP flows
//! each with its own access delay, sometimes flows that arrive and leave, reverse-direction
//! TCP on the ACK path, Bernoulli or Gilbert loss of up to 1%, host jitter on or off, and
//! in about a third of the scenarios 2-1000 multicast receivers on heterogeneous paths of
//! which the generator made one, behind the shared bottleneck, the slowest. Every draw comes
//! from the id alone, so an id names the same scenario on every machine.
//!
//! Each scenario is written twice ([`Spec::scenario`]): with a `pgmcc` session in the
//! *subject* slot, and with a TCP flow of the competitors' kind in its place, to the receiver
//! the generator made slowest (the *control*). Everything else (the other flows, their
//! timing, the seed) is the same in both. The **share ratio** is the subject's goodput in the
//! pgmcc run over the control's goodput in the TCP run, both over the same measurement
//! window ([`Spec::window`]): 1 when pgmcc takes what one more TCP flow would take in its
//! place.

use std::fmt::Write as _;

use pgmcc::cc::Controller;
use pgmcc::rng::Rng;
use serde::{Deserialize, Serialize};

use crate::grid::{PGM_PAYLOAD, TCP_KEYS, TCP_PAYLOAD, WIRE_BYTES};
use crate::scenario::FlowKind;
use crate::summary::Summary;

/// First generator seed of the report range: the scenarios `docs/fairness.md` reports on.
/// Fixed before any controller was tuned against this yardstick; never used for tuning.
pub const REPORT_FIRST: u64 = 1_000_000;
/// First generator seed of the development range, for tuning and tracing (ids below
/// [`REPORT_FIRST`]).
pub const DEV_FIRST: u64 = 1;
/// Default upper bound on the packets a run may cost at the bottleneck rate; the 200-RTT
/// measurement after the warm-up wins over it.
pub const DEFAULT_BUDGET: f64 = 2e6;
/// Upper bound on multicast data packets x receivers in a run: the simulator's work grows
/// with both, so scenarios with a high fair rate get fewer receivers.
pub const RECEIVER_BUDGET: f64 = 5e6;
/// Name of the flow in the subject slot (pgmcc, or the control TCP flow).
pub const SUBJECT: &str = "subject";
/// The band of share ratios the issue asks for.
pub const BAND: (f64, f64) = (0.8, 1.25);
/// Sawtooth cycles of warm-up (at least 50 RTTs), as the grid ([`crate::grid::CONVERGE_CYCLES`]).
const WARM_CYCLES: f64 = 5.0;
/// Sawtooth cycles measured where the budget affords them (at least 200 RTTs always).
const MEASURE_CYCLES: f64 = 24.0;
/// Shortest warm-up where the budget allows, s: flows that start within the first second
/// settle their slow-start overshoot.
const MIN_WARMUP_S: f64 = 20.0;
/// Shortest measurement where the budget allows, s: two window-based flows trade the
/// larger share back and forth over tens of seconds at low rates (the grid's
/// [`crate::grid::MIN_MEASURE_S`] says by how much).
const MIN_MEASURE_S: f64 = 300.0;

/// What runs in the subject slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Slot {
    /// A PGM session under a controller (`pgmcc` by default), to every receiver.
    Pgmcc,
    /// A TCP flow of the competitors' kind to the slowest receiver.
    Control,
}

impl Slot {
    /// File-name word.
    pub fn name(self) -> &'static str {
        match self {
            Slot::Pgmcc => "pgmcc",
            Slot::Control => "control",
        }
    }
}

/// Random loss on the bottleneck's forward direction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Loss {
    /// None.
    None,
    /// Independent loss with this probability.
    Bernoulli(f64),
    /// Gilbert-Elliott bursts: mean loss, mean burst length in packets (bad state loses
    /// half its packets).
    Gilbert {
        /// Long-run loss rate.
        mean: f64,
        /// Mean stay in the bad state, packets.
        burst: f64,
    },
}

impl Loss {
    /// Long-run loss rate.
    pub fn mean(&self) -> f64 {
        match *self {
            Loss::None => 0.0,
            Loss::Bernoulli(p) => p,
            Loss::Gilbert { mean, .. } => mean,
        }
    }
}

/// The TCP variant of every TCP flow in a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tcp {
    /// TCP SACK.
    Sack,
    /// TCP NewReno.
    NewReno,
}

impl Tcp {
    /// The simulator's flow kind.
    pub fn kind(self) -> FlowKind {
        match self {
            Tcp::Sack => FlowKind::TcpSack,
            Tcp::NewReno => FlowKind::TcpNewReno,
        }
    }

    /// Name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Tcp::Sack => "SACK",
            Tcp::NewReno => "NewReno",
        }
    }
}

/// One competing TCP flow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Competitor {
    /// Extra one-way delay of its access link, ms (its RTT is the base RTT plus twice this).
    pub extra_ms: f64,
    /// Arrival and departure as fractions of the run (0 and none for a flow there all along).
    pub start_frac: f64,
    /// Departure as a fraction of the run.
    pub stop_frac: Option<f64>,
}

/// One generated scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    /// Generator seed.
    pub id: u64,
    /// Bottleneck rate, bit/s.
    pub rate_bps: u64,
    /// Round-trip propagation delay of the subject's path (to the slowest receiver), ms.
    pub rtt_ms: f64,
    /// Bottleneck queue in bandwidth-delay products (of 1500-byte packets).
    pub queue_bdp: f64,
    /// The queue is counted in bytes (else in packets).
    pub queue_bytes: bool,
    /// Senders' access links relative to the bottleneck (10 or 0.75).
    pub access: f64,
    /// Kind of every TCP flow (competitors, reverse flows, the control).
    pub tcp: Tcp,
    /// Competing TCP flows through the bottleneck.
    pub competitors: Vec<Competitor>,
    /// TCP flows in the reverse direction (loading the ACK path).
    pub reverse: u32,
    /// Random loss on the bottleneck.
    pub loss: Loss,
    /// Host send jitter `auto` (else off).
    pub jitter: bool,
    /// The other multicast receivers' paths, branching before the bottleneck: (one-way delay
    /// of their link in ms, random loss). Empty: one receiver.
    pub others: Vec<(f64, f64)>,
    /// Warm-up, s.
    pub warmup_s: f64,
    /// Measurement after the warm-up, s.
    pub measure_s: f64,
}

/// `v` rounded to `digits` significant figures.
fn sig(v: f64, digits: i32) -> f64 {
    if v == 0.0 {
        return 0.0;
    }
    let scale = 10f64.powi(digits - 1 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

/// Log-uniform in `[lo, hi]`.
fn log_uniform(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + rng.unit() * (hi.ln() - lo.ln())).exp()
}

/// TCP's throughput by the simple equation, bit/s: 1.22 x MSS / (RTT x sqrt(p)).
fn tcp_equation_bps(rtt_s: f64, p: f64) -> f64 {
    1.22 * f64::from(TCP_PAYLOAD) * 8.0 / (rtt_s * p.sqrt())
}

impl Spec {
    /// The scenario of generator seed `id`, with runs of at most about `budget` packets at
    /// the bottleneck rate (never less than 50 RTTs of warm-up and 200 of measurement).
    pub fn generate(id: u64, budget: f64) -> Spec {
        let mut rng = Rng::new(id ^ 0x5eed_fa17_0051);
        let rate_bps = (sig(log_uniform(&mut rng, 1e6, 200e6), 3) / 1e3).round() as u64 * 1000;
        let rtt_ms = sig(log_uniform(&mut rng, 5.0, 500.0), 2);
        let queue_bdp = sig(log_uniform(&mut rng, 0.25, 4.0), 2);
        let queue_bytes = rng.unit() < 0.3;
        let access = if rng.unit() < 0.6 { 10.0 } else { 0.75 };
        let tcp = if rng.unit() < 0.6 {
            Tcp::Sack
        } else {
            Tcp::NewReno
        };
        // 1-16, small counts more likely (log-uniform).
        let n = (log_uniform(&mut rng, 1.0, 17.0).floor() as usize).clamp(1, 16);
        let churn = rng.unit() < 0.25;
        let competitors = (0..n)
            .map(|i| {
                let extra_ms = sig(rng.unit() * rtt_ms / 2.0, 2);
                // The first flow stays all along, so the bottleneck is always shared.
                let (start_frac, stop_frac) = if churn && i > 0 && rng.unit() < 0.5 {
                    let a = rng.unit() * 0.6;
                    let b = a + 0.2 + rng.unit() * (0.8 - a);
                    (sig(a, 2), (b < 0.98).then(|| sig(b, 2)))
                } else {
                    (0.0, None)
                };
                Competitor {
                    extra_ms,
                    start_frac,
                    stop_frac,
                }
            })
            .collect::<Vec<_>>();
        let reverse = if rng.unit() < 0.2 {
            1 + rng.below(2) as u32
        } else {
            0
        };
        let loss = match rng.below(4) {
            0 => Loss::Bernoulli(sig(log_uniform(&mut rng, 1e-4, 1e-2), 2)),
            1 => Loss::Gilbert {
                mean: sig(log_uniform(&mut rng, 1e-4, 1e-2), 2),
                burst: sig(2.0 + rng.unit() * 8.0, 2),
            },
            _ => Loss::None,
        };
        let jitter = rng.unit() < 0.5;
        let mut spec = Spec {
            id,
            rate_bps,
            rtt_ms,
            queue_bdp,
            queue_bytes,
            access,
            tcp,
            competitors,
            reverse,
            loss,
            jitter,
            others: Vec::new(),
            warmup_s: 0.0,
            measure_s: 0.0,
        };
        let (warmup_s, measure_s) = spec.span(budget);
        spec.warmup_s = warmup_s;
        spec.measure_s = measure_s;
        if rng.unit() < 0.3 {
            let wanted = log_uniform(&mut rng, 2.0, 1001.0).floor() as usize;
            let fair_pps = spec.fair_bps() / f64::from(WIRE_BYTES * 8);
            let affordable = (RECEIVER_BUDGET / (fair_pps * spec.duration_s())).floor() as usize;
            let k = wanted.min(affordable.max(2)).clamp(2, 1000);
            // Every other path carries at least 1.5x the fair rate by the TCP equation, so
            // the receiver behind the shared bottleneck is the slowest.
            for _ in 1..k {
                let d = sig(1.0 + rng.unit() * (rtt_ms / 2.0 - 1.0).max(0.5), 2);
                let rtt_s = 2.0 * (d + 1.0) / 1e3;
                let p_max = (1.22 * f64::from(TCP_PAYLOAD) * 8.0 / (rtt_s * 1.5 * spec.fair_bps()))
                    .powi(2)
                    .min(0.01);
                let p = if p_max < 1e-5 {
                    0.0
                } else {
                    sig(p_max * (0.3 + 0.65 * rng.unit()), 2)
                };
                spec.others.push((d, p));
            }
        }
        spec
    }

    /// Flows sharing the bottleneck in the forward direction when all are present.
    fn flows(&self) -> f64 {
        self.competitors.len() as f64 + 1.0
    }

    /// The fair share of the bottleneck, bit/s: an equal share among the subject and the
    /// competitors, or what TCP's equation gives at the random loss, if less.
    pub fn fair_bps(&self) -> f64 {
        let share = self.rate_bps as f64 / self.flows();
        match self.loss.mean() {
            p if p > 0.0 => share.min(tcp_equation_bps(self.rtt_ms / 1e3, p)),
            _ => share,
        }
    }

    /// Bottleneck packets per second.
    pub fn packet_rate(&self) -> f64 {
        self.rate_bps as f64 / f64::from(WIRE_BYTES * 8)
    }

    /// Bandwidth-delay product in 1500-byte packets.
    pub fn bdp_packets(&self) -> f64 {
        self.packet_rate() * self.rtt_ms / 1e3
    }

    /// Each forward flow's share of the path's capacity in packets, (BDP + queue) / (the
    /// competitors + 1): the window a fair flow peaks near. Below a few packets TCP lives on
    /// retransmission timeouts.
    pub fn fair_window(&self) -> f64 {
        (self.bdp_packets() + f64::from(self.queue_packets())) / self.flows()
    }

    /// Bottleneck queue in packets (at least 4).
    pub fn queue_packets(&self) -> u32 {
        ((self.queue_bdp * self.bdp_packets()).round() as u32).max(crate::grid::MIN_QUEUE)
    }

    /// One TCP sawtooth cycle, s: a flow's window peaks near its share of BDP + queue (or
    /// where random loss caps it) and climbs back from half at one packet per RTT.
    pub fn cycle_s(&self) -> f64 {
        let q = f64::from(self.queue_packets());
        let mut w = (self.bdp_packets() + q) / self.flows();
        if self.loss.mean() > 0.0 {
            w = w.min(1.22 / self.loss.mean().sqrt());
        }
        let rtt = self.rtt_ms / 1e3 + q / 2.0 / self.packet_rate();
        (w / 2.0).max(1.0) * rtt
    }

    /// Warm-up and measurement, s. Warm-up: [`WARM_CYCLES`] cycles, at least 50 RTTs and
    /// [`MIN_WARMUP_S`], at most a third of `budget`. Measurement: [`MEASURE_CYCLES`] cycles
    /// or [`MIN_MEASURE_S`], whichever is longer, as far as `budget` packets allow, never
    /// below 200 RTTs.
    fn span(&self, budget: f64) -> (f64, f64) {
        let rtt = self.rtt_ms / 1e3;
        let budget_s = budget / self.packet_rate();
        let warm = (WARM_CYCLES * self.cycle_s())
            .max(MIN_WARMUP_S)
            .min(budget_s / 3.0)
            .max(50.0 * rtt);
        let measure = (MEASURE_CYCLES * self.cycle_s())
            .max(MIN_MEASURE_S)
            .min(budget_s - warm)
            .max(200.0 * rtt);
        (warm.ceil(), measure.ceil())
    }

    /// The run's length, s.
    pub fn duration_s(&self) -> f64 {
        self.warmup_s + self.measure_s
    }

    /// The measurement window, s from the start.
    pub fn window(&self) -> (f64, f64) {
        (self.warmup_s, self.warmup_s + self.measure_s)
    }

    /// Roughly what a run costs the simulator: the bottleneck's packets plus the multicast
    /// packets x receivers at the fair rate.
    pub fn cost(&self) -> f64 {
        let fair_pps = self.fair_bps() / f64::from(WIRE_BYTES * 8);
        self.duration_s() * (self.packet_rate() + fair_pps * self.receivers() as f64)
    }

    /// Multicast receivers (1 + the others).
    pub fn receivers(&self) -> usize {
        1 + self.others.len()
    }

    /// A one-line description: "12.3 Mbit/s, 45 ms, 1.2 BDP (30p), 4 SACK, ...".
    pub fn label(&self) -> String {
        let mut s = format!(
            "{} Mbit/s, {} ms, {} BDP ({}{}), {} {} {}",
            sig(self.rate_bps as f64 / 1e6, 3),
            self.rtt_ms,
            self.queue_bdp,
            self.queue_packets(),
            if self.queue_bytes { "p in bytes" } else { "p" },
            self.competitors.len(),
            self.tcp.name(),
            if self.access > 1.0 { "fast" } else { "slow" },
        );
        if self
            .competitors
            .iter()
            .any(|c| c.start_frac > 0.0 || c.stop_frac.is_some())
        {
            s.push_str(", churn");
        }
        if self.reverse > 0 {
            let _ = write!(s, ", {} reverse", self.reverse);
        }
        match self.loss {
            Loss::None => {}
            Loss::Bernoulli(p) => {
                let _ = write!(s, ", loss {}%", sig(p * 100.0, 2));
            }
            Loss::Gilbert { mean, burst } => {
                let _ = write!(s, ", bursts {}% x{burst}", sig(mean * 100.0, 2));
            }
        }
        if self.jitter {
            s.push_str(", jitter");
        }
        if !self.others.is_empty() {
            let _ = write!(s, ", {} receivers", self.receivers());
        }
        s
    }

    /// File-name stem: "g1000042".
    pub fn stem(&self) -> String {
        format!("g{}", self.id)
    }

    /// The scenario file with `slot` in the subject slot; `cc` is the subject's controller;
    /// TCP flows timed as the default model says ([`TcpModel::Linux`]).
    pub fn scenario(&self, slot: Slot, cc: Controller) -> String {
        self.scenario_for(slot, cc, TcpModel::default())
    }

    /// [`Spec::scenario`] with every TCP flow (the control, the competitors and the reverse
    /// flows) modelled as `tcp` says.
    pub fn scenario_for(&self, slot: Slot, cc: Controller, tcp: TcpModel) -> String {
        let kbit = |bps: f64| format!("{}kbit", (bps / 1e3).round().max(1.0));
        let rate = self.rate_bps as f64;
        let ms = |v: f64| format!("{}ms", sig(v, 4).max(0.01));
        // Access and receiver links: 1 ms, less on the shortest paths.
        let edge = (self.rtt_ms / 10.0).min(1.0);
        let bottleneck_ms = self.rtt_ms / 2.0 - 2.0 * edge;
        let q = self.queue_packets();
        let queue = if self.queue_bytes {
            format!("{}B", q * WIRE_BYTES)
        } else {
            format!("{q}p")
        };
        // Queues that never fill: two windows' worth of the whole path.
        let big = format!("{}p", 2 * (self.bdp_packets().ceil() as u32 + q) + 100);
        let dur = self.duration_s();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# Generated fairness scenario {id} (`pgmcc fairness`, crates/netsim/src/fairness.rs): \
             {label}.\n# Subject slot: {slot}; TCP flows: {tcp}. Measure over {from}-{to} s: `pgmcc sim FILE \
             --seed N --phases {from}-{to}`.\n\
             name = \"{stem}-{slot}\"\n\
             description = \"generated fairness scenario {id} ({slot}): {label}\"\n\
             duration = \"{dur}s\"\n\
             sample = \"1s\"\n\
             jitter = \"{jitter}\"",
            id = self.id,
            label = self.label(),
            slot = slot.name(),
            tcp = tcp.describe(),
            stem = self.stem(),
            from = self.warmup_s,
            to = dur,
            jitter = if self.jitter { "auto" } else { "off" },
        );
        let mut nodes = vec!["S".to_string(), "R1".into(), "R2".into(), "MR".into()];
        for i in 0..self.competitors.len() {
            nodes.push(format!("T{i}"));
            nodes.push(format!("TR{i}"));
        }
        for i in 0..self.reverse {
            nodes.push(format!("V{i}"));
            nodes.push(format!("VR{i}"));
        }
        if slot == Slot::Pgmcc {
            for i in 0..self.others.len() {
                nodes.push(format!("PR{}", i + 1));
            }
        }
        for n in &nodes {
            let _ = writeln!(s, "[[node]]\nname = \"{n}\"");
        }
        let link =
            |s: &mut String, from: &str, to: &str, rate: &str, delay: String, queue: &str| {
                let _ = writeln!(
                    s,
                    "[[link]]\nfrom = \"{from}\"\nto = \"{to}\"\nrate = \"{rate}\"\n\
                 delay = \"{delay}\"\nqueue = \"{queue}\""
                );
            };
        let access = kbit(rate * self.access);
        let fast = kbit(rate * 10.0);
        link(&mut s, "S", "R1", &access, ms(edge), &big);
        // The bottleneck's reverse direction (the ACK path, and the reverse flows' data) has
        // the same rate, delay and queue, not the simulator's default 1000-packet queue.
        link(&mut s, "R2", "R1", &kbit(rate), ms(bottleneck_ms), &queue);
        s.push_str("duplex = false\n");
        link(&mut s, "R1", "R2", &kbit(rate), ms(bottleneck_ms), &queue);
        s.push_str("duplex = false\n");
        match self.loss {
            Loss::None => {}
            Loss::Bernoulli(p) => {
                let _ = writeln!(s, "loss = {p}");
            }
            Loss::Gilbert { mean, burst } => {
                // Bad state loses half; stays `burst` packets on average; the good state
                // loses nothing. Long-run loss = share of time in the bad state / 2.
                let p_bg = 1.0 / burst;
                let bad = (2.0 * mean).min(0.5);
                let p_gb = p_bg * bad / (1.0 - bad);
                let _ = writeln!(
                    s,
                    "[link.gilbert]\np_gb = {}\np_bg = {}\nloss_good = 0.0\nloss_bad = 0.5",
                    sig(p_gb, 4),
                    sig(p_bg, 4)
                );
            }
        }
        link(&mut s, "R2", "MR", &fast, ms(edge), &big);
        for (i, c) in self.competitors.iter().enumerate() {
            link(
                &mut s,
                &format!("T{i}"),
                "R1",
                &access,
                ms(edge + c.extra_ms),
                &big,
            );
            link(&mut s, "R2", &format!("TR{i}"), &fast, ms(edge), &big);
        }
        for i in 0..self.reverse {
            link(&mut s, &format!("V{i}"), "R2", &access, ms(edge), &big);
            link(&mut s, "R1", &format!("VR{i}"), &fast, ms(edge), &big);
        }
        if slot == Slot::Pgmcc {
            for (i, &(d, p)) in self.others.iter().enumerate() {
                link(&mut s, "R1", &format!("PR{}", i + 1), &fast, ms(d), &big);
                if p > 0.0 {
                    let _ = writeln!(s, "loss = {p}");
                }
            }
        }
        self.write_flows(&mut s, slot, cc, dur, tcp);
        s
    }

    /// The scenario's flows: the subject in `slot` (with controller `cc`), the competing
    /// TCP flows and the reverse ones, for a run of `dur` seconds.
    fn write_flows(&self, s: &mut String, slot: Slot, cc: Controller, dur: f64, tcp: TcpModel) {
        let keys = tcp.keys(self.tcp);
        match slot {
            Slot::Pgmcc => {
                let _ = writeln!(
                    s,
                    "[[flow]]\nname = \"{SUBJECT}\"\nkind = \"pgmcc\"\ncc = \"{cc}\"\n\
                     from = \"S\"\npayload = {PGM_PAYLOAD}\nstart_jitter = \"1s\"\n\
                     txw_sqns = 16384\n[[flow.receiver]]\nnode = \"MR\""
                );
                for i in 0..self.others.len() {
                    let _ = writeln!(s, "[[flow.receiver]]\nnode = \"PR{}\"", i + 1);
                }
            }
            Slot::Control => {
                let _ = writeln!(
                    s,
                    "[[flow]]\nname = \"{SUBJECT}\"\nkind = \"{}\"\nfrom = \"S\"\nto = \"MR\"\n\
                     payload = {TCP_PAYLOAD}\nstart_jitter = \"1s\"\n{TCP_KEYS}{keys}",
                    self.tcp.kind().name()
                );
            }
        }
        for (i, c) in self.competitors.iter().enumerate() {
            let _ = writeln!(
                s,
                "[[flow]]\nname = \"tcp{i}\"\nkind = \"{}\"\nfrom = \"T{i}\"\nto = \"TR{i}\"\n\
                 payload = {TCP_PAYLOAD}\nstart = \"{}s\"\nstart_jitter = \"1s\"\n{TCP_KEYS}{keys}",
                self.tcp.kind().name(),
                sig(c.start_frac * dur, 3),
            );
            if let Some(stop) = c.stop_frac {
                let _ = writeln!(s, "stop = \"{}s\"", sig(stop * dur, 3));
            }
        }
        for i in 0..self.reverse {
            let _ = writeln!(
                s,
                "[[flow]]\nname = \"reverse{i}\"\nkind = \"{}\"\nfrom = \"V{i}\"\nto = \"VR{i}\"\n\
                 payload = {TCP_PAYLOAD}\nstart_jitter = \"1s\"\n{TCP_KEYS}{keys}",
                self.tcp.kind().name()
            );
        }
    }
}

/// How a generated scenario's TCP flows time their retransmissions
/// (docs/pgmcc.md, "Windows of a few packets"). The default is Linux's: the TCP pgmcc
/// shares real links with, and the one `pgmcc emu` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TcpModel {
    /// RFC 6298 as the simulator's TCP implements it by default: a 1 s floor, one segment
    /// timed per round trip, none across a retransmission (Karn's rule).
    Rfc6298,
    /// As Linux runs TCP: an RTT sample from every ACK of new data (timestamps, RFC 7323)
    /// and Linux's RTO, SRTT plus a variance term of at least 200 ms (`timestamps = true`,
    /// `min_rto = "200ms"`, `rto = "linux"`); SACK flows also detect loss with RACK-TLP
    /// (`rack = true`), as Linux does with SACK on.
    #[default]
    Linux,
}

impl TcpModel {
    /// The flow keys the model adds to every TCP flow of kind `tcp` (each on its own line,
    /// after [`TCP_KEYS`]).
    fn keys(self, tcp: Tcp) -> &'static str {
        match (self, tcp) {
            (TcpModel::Rfc6298, _) => "",
            (TcpModel::Linux, Tcp::NewReno) => {
                "\ntimestamps = true\nmin_rto = \"200ms\"\nrto = \"linux\""
            }
            (TcpModel::Linux, Tcp::Sack) => {
                "\ntimestamps = true\nmin_rto = \"200ms\"\nrto = \"linux\"\nrack = true"
            }
        }
    }

    /// The model's name in a scenario file's header.
    fn describe(self) -> &'static str {
        match self {
            TcpModel::Rfc6298 => "RFC 6298 timer",
            TcpModel::Linux => {
                "Linux timer (timestamps, SRTT + at least 200 ms; RACK-TLP with SACK)"
            }
        }
    }
}

/// What a run of a generated scenario (scenario `id`, `slot` in the subject slot, run
/// `seed`) measured over `window` (s from the start): the subject and every competing TCP
/// flow (`tcp0`, `tcp1`, ... in order).
pub fn measure(id: u64, slot: Slot, seed: u64, window: (f64, f64), s: &Summary) -> RunResult {
    let (from, to) = window;
    let secs = (to - from).max(1e-9);
    let flow = |name: &str| -> FlowMeasure {
        let drops = s.flows.iter().find(|f| f.name == name).map_or(0, |f| {
            s.times
                .iter()
                .zip(&f.drops)
                .filter(|(t, _)| **t > from && **t <= to)
                .map(|(_, d)| *d)
                .sum()
        });
        FlowMeasure {
            kbps: crate::grid::delivered(s, name, from, to) * 8.0 / 1e3 / secs,
            drops,
        }
    };
    let competitors = (0..)
        .map(|i| format!("tcp{i}"))
        .take_while(|n| s.flows.iter().any(|f| &f.name == n))
        .map(|n| flow(&n))
        .collect();
    RunResult {
        id,
        slot,
        seed,
        window,
        subject: flow(SUBJECT),
        competitors,
        unrecoverable: crate::grid::unrecoverable(s, SUBJECT),
        drops_counted: true,
    }
}

/// One flow over the measurement window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlowMeasure {
    /// Goodput at the (slowest) receiver, kbit/s.
    pub kbps: f64,
    /// Queue drops of the flow's packets (data and feedback), any link.
    pub drops: u64,
}

impl FlowMeasure {
    /// Drops per data packet delivered (1500-byte packets) over `secs`.
    pub fn drop_rate(&self, secs: f64, payload: u32) -> f64 {
        let packets = self.kbps * 1e3 / 8.0 * secs / f64::from(payload);
        if packets > 0.0 {
            self.drops as f64 / packets
        } else {
            0.0
        }
    }
}

/// What one run measured: the file a job writes and the report merges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Scenario id (generator seed).
    pub id: u64,
    /// What ran in the subject slot.
    pub slot: Slot,
    /// Run seed.
    pub seed: u64,
    /// The measurement window, s from the start.
    pub window: (f64, f64),
    /// The subject flow.
    pub subject: FlowMeasure,
    /// The competing TCP flows, in order.
    pub competitors: Vec<FlowMeasure>,
    /// Sequence numbers the subject's receivers gave up (0 for the control).
    pub unrecoverable: u64,
    /// Whether the run counted queue drops per flow over the window (false in results of
    /// emulations that did not count them: their `drops` are not measurements).
    #[serde(default)]
    pub drops_counted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario;

    #[test]
    fn generated_scenarios_are_valid_and_cover_the_families() {
        let (mut multi, mut bytes, mut churn, mut reverse, mut gilbert, mut bern) =
            (0, 0, 0, 0, 0, 0);
        let mut max_n = 0;
        for id in DEV_FIRST..DEV_FIRST + 200 {
            let spec = Spec::generate(id, DEFAULT_BUDGET);
            assert!((1e6..=200e6).contains(&(spec.rate_bps as f64)), "{spec:?}");
            assert!((5.0..=500.0).contains(&spec.rtt_ms));
            assert!((0.25..=4.0).contains(&spec.queue_bdp));
            assert!((1..=16).contains(&spec.competitors.len()));
            assert!(spec.loss.mean() <= 0.01);
            assert!(spec.receivers() <= 1000);
            assert!(spec.measure_s >= 200.0 * spec.rtt_ms / 1e3);
            assert!(spec.warmup_s >= 50.0 * spec.rtt_ms / 1e3);
            multi += usize::from(!spec.others.is_empty());
            bytes += usize::from(spec.queue_bytes);
            churn += usize::from(spec.label().contains("churn"));
            reverse += usize::from(spec.reverse > 0);
            gilbert += usize::from(matches!(spec.loss, Loss::Gilbert { .. }));
            bern += usize::from(matches!(spec.loss, Loss::Bernoulli(_)));
            max_n = max_n.max(spec.competitors.len());
            // The same id, the same scenario.
            assert_eq!(spec, Spec::generate(id, DEFAULT_BUDGET));
            // Only a few ids parsed in full: building a 1000-receiver simulator is slow.
            if id % 10 == 1 {
                for slot in [Slot::Pgmcc, Slot::Control] {
                    let text = spec.scenario_for(slot, Controller::Pgmcc, TcpModel::Rfc6298);
                    if let Err(e) = scenario::parse("g.toml", &text, "g", Some(1)) {
                        panic!("{}: {e}\n{text}", spec.label());
                    }
                    // The Linux model (the default): its keys on every TCP flow, RACK-TLP on
                    // the SACK ones, nothing else changed.
                    let linux = spec.scenario(slot, Controller::Pgmcc);
                    let tcp_flows = text.matches("kind = \"tcp-").count();
                    assert_eq!(linux.matches("timestamps = true").count(), tcp_flows);
                    assert_eq!(linux.matches("min_rto = \"200ms\"").count(), tcp_flows);
                    assert_eq!(linux.matches("rto = \"linux\"").count(), tcp_flows);
                    let rack = if spec.tcp == Tcp::Sack { tcp_flows } else { 0 };
                    assert_eq!(linux.matches("rack = true").count(), rack);
                    let stripped = linux
                        .replace(TcpModel::Linux.keys(spec.tcp), "")
                        .replace(TcpModel::Linux.describe(), TcpModel::Rfc6298.describe());
                    assert_eq!(stripped, text);
                    if let Err(e) = scenario::parse("g.toml", &linux, "g", Some(1)) {
                        panic!("{}: {e}\n{linux}", spec.label());
                    }
                }
            }
        }
        for (what, k) in [
            ("multi-receiver", multi),
            ("byte queues", bytes),
            ("churn", churn),
            ("reverse", reverse),
            ("gilbert", gilbert),
            ("bernoulli", bern),
        ] {
            assert!((20..=120).contains(&k), "{what}: {k} of 200");
        }
        assert!(max_n >= 12);
    }

    #[test]
    fn every_other_receiver_is_faster_than_the_fair_rate() {
        for id in DEV_FIRST..DEV_FIRST + 100 {
            let spec = Spec::generate(id, DEFAULT_BUDGET);
            for &(d, p) in &spec.others {
                if p > 0.0 {
                    let t = tcp_equation_bps(2.0 * (d + 1.0) / 1e3, p);
                    assert!(
                        t >= 1.49 * spec.fair_bps(),
                        "{id}: {t} vs {}",
                        spec.fair_bps()
                    );
                }
            }
        }
    }
}
