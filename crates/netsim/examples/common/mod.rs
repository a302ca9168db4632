//! What `bench_sim` and `repair_scale` share: the Fig. 7-like links and the memory probe.

use netsim::{LinkConfig, LossModel, QueueLimit};
use pgmcc::Duration;

/// The source's and receivers' loss-free 1 Gbit/s, 1 ms links.
pub(crate) const FAST: LinkConfig = LinkConfig {
    rate_bps: 1_000_000_000,
    delay: Duration::from_millis(1),
    queue: QueueLimit::Packets(10_000),
    loss: LossModel::None,
};

/// A receiver's link: 1 Mbit/s, 50 ms, 30 KB queue, 1% random loss (the paper does not give
/// Fig. 7's links; a loss-limited path).
pub(crate) const LOSSY: LinkConfig = LinkConfig {
    rate_bps: 1_000_000,
    delay: Duration::from_millis(50),
    queue: QueueLimit::Bytes(30_000),
    loss: LossModel::Bernoulli { p: 0.01 },
};

/// Peak resident memory of this process, MiB (Linux).
pub(crate) fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Threads for a batch of deliveries (`Sim::set_threads`): every processor this process may
/// use. The run is the same whatever the count; only its wall time changes.
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The lines both benchmarks start with: wall time, simulated/wall ratio, threads.
pub(crate) fn print_speed(simulated_s: f64, wall_s: f64, threads: usize) {
    println!("  wall time           {wall_s:.2} s");
    let ratio = simulated_s / wall_s;
    // Below 10x, a decimal: 0.4x is not "0x".
    let digits = usize::from(ratio < 10.0);
    println!("  simulated/wall      {ratio:.digits$}x real time");
    println!("  threads             {threads}");
}
