//! The `pgmcc` command line.
//!
//! Subcommands: `decode` dissects PGM packets (hex, raw datagram file or pcap capture);
//! `sim` runs a scenario file on the simulated network and writes a report; `reproduce`
//! runs the papers' experiments; `grid` runs the fairness grid; `send` and `recv` move files and streams over a real
//! network; `keygen` makes a group key for their keyed mode.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod config;
mod decode;
mod generate;
mod lab;
mod net;
mod out;

/// Reliable multicast with TCP-friendly congestion control (PGM, RFC 3208, with pgmcc).
///
/// `send` and `recv` move files and streams over a real network, `sim` and `reproduce` run
/// scenarios and the papers' experiments on a simulated one, `decode` dissects PGM packets.
/// `pgmcc help COMMAND` (or `man pgmcc-COMMAND` once installed) explains each command.
#[derive(Debug, Parser)]
#[command(
    name = "pgmcc",
    version,
    after_help = "Logs: warnings go to standard error; set RUST_LOG for more, e.g. \
                  RUST_LOG=debug or RUST_LOG=pgmcc=trace,pgmcc_net=debug."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Decode PGM packets and print every field, one per line, or say what is wrong.
    ///
    /// Each INPUT is either a path or a hex string. A path to a pcap capture (Ethernet,
    /// Linux cooked, raw IP or loopback link types) decodes every PGM packet in it: IP
    /// protocol 113, or UDP on the encapsulation ports (3055, 3056 and any --udp-port).
    /// A path to any other file is read as hex text if it looks like hex, otherwise as one
    /// raw PGM datagram. Anything else is parsed as hex; spaces, colons and `0x` are allowed
    /// and `#` starts a comment that runs to the end of the line.
    ///
    /// Exit status: 0 if every packet decoded, 1 if any was malformed, 2 on usage errors.
    Decode(decode::Args),
    /// Run a scenario file on the simulated network and write a report.
    ///
    /// Writes summary.json (per flow: mean throughput, per-interval series, acker switches,
    /// losses, NAKs; per link: utilisation, drops), timeseries.csv, SVG plots and a
    /// self-contained report.html into the output directory. The same scenario and seed give
    /// byte-identical files. The scenario format is documented in docs/scenarios.md.
    ///
    /// Exit status: 0 on success, 2 if the scenario is invalid (the message names the file,
    /// line and key) or the output cannot be written.
    Sim(lab::sim::Args),
    /// Rerun the papers' experiments on the simulator and write docs/reproduction.md.
    ///
    /// Runs every scenario with a [reproduce] table over several seeds, computes f = TCP /
    /// pgmcc throughput, and writes docs/reproduction.md (published value next to ours, mean
    /// and spread over seeds) and out/reproduce/report.html.
    Reproduce(lab::reproduce::Args),
    /// Run the fairness grid: pgmcc against one TCP flow on dumbbells (`make grid`).
    ///
    /// One receiver of a multicast controller (default: pgmcc) against one TCP flow (SACK,
    /// NewReno, Reno) on dumbbells of 1-100 Mbit/s, 20-400 ms RTT, 0.5-2 BDP queues and fast
    /// or slow access links, with a TCP-against-TCP control; writes the table of f = TCP /
    /// multicast throughput into docs/reproduction.md.
    ///
    /// Flags pick a subset (e.g. --rates 10 --rtts 100). Every cell is written as a scenario
    /// file under out/grid/scenarios for `pgmcc sim`, every run as a line of out/grid/grid.csv.
    Grid(lab::grid::Args),
    /// The fairness yardstick: pgmcc against a TCP flow in its place on generated scenarios.
    ///
    /// Random scenarios drawn from seeds (1-16 competing TCP flows, 1-200 Mbit/s, 5-500 ms,
    /// 0.25-4 BDP queues, random loss, reverse and arriving TCP, 1-1000 receivers), each run
    /// with pgmcc and with a TCP flow in its place, the share ratio pgmcc / that TCP flow
    /// tabulated in docs/fairness.md.
    ///
    /// `plan` writes the scenarios and a job file (one command line per run), GNU `parallel`
    /// or a batch system runs the job file, and `report` merges the results (`make fairness`
    /// does all three).
    Fairness(lab::fairness::Args),
    /// Emulate a scenario's network between real programs in network namespaces (root).
    ///
    /// Every node becomes a network namespace (PREFIX-NODE) whose eth0 is a TAP device, and
    /// this process carries their IPv4 traffic through the scenario's links on the wall
    /// clock: the simulator's own
    /// drop-tail queues, rates, delays and random loss (this kernel has no netem), unicast by
    /// shortest path and multicast along the source tree to the nodes that joined (IGMP).
    ///
    /// Needs root. Nothing is added to the caller's namespace; every namespace is removed at
    /// the end (with whatever still runs in it). Prints per-link counters when it stops.
    ///
    /// Example: pgmcc emu scenarios/fig5.toml --net-only, then in another shell
    /// `ip netns exec pgmcc-emu-PR1 pgmcc recv ...`
    ///
    /// Exit status: 0 after a clean stop, 2 on errors (invalid scenario, not root, a
    /// namespace that exists already).
    Emu(lab::emu::Args),
    /// Multicast a file or standard input to a group, reliably and congestion controlled.
    ///
    /// Opens a PGM session (UDP encapsulation as OpenPGM frames it, or raw IP with
    /// --raw-ip), sends the input, announces the end, then answers NAKs until receivers are
    /// quiet for --linger. With pgmcc (the default) the rate follows the slowest receiver's
    /// TCP-fair share. Prints the sha256 of what was sent, to compare with `pgmcc recv`.
    ///
    /// Example: pgmcc send --group 239.192.0.1:7500 --iface eth0 big.iso
    ///
    /// Exit status: 0 when the whole stream was sent and delivery reports confirm it (from
    /// the --expect receivers, or else from every receiver heard from); 1 when the source
    /// gave up (no receiver answered for --feedback-timeout, or --max-duration passed), the
    /// --expect receivers did not confirm it, or a receiver reports a failed or partial
    /// transfer; 2 on errors (bad flags, no such file, no route to the group, a bad key
    /// file); 3 when the whole stream was sent and no receiver reports a failure, but
    /// nothing confirms it: no receiver was heard from, or some that took part sent no
    /// report (OpenPGM and ZeroMQ receivers never do: with --peer, 3 is the normal end).
    Send(net::SendArgs),
    /// Receive one session from a group into a file or standard output, verified.
    ///
    /// Joins the group, follows the first session heard, repairs losses with NAKs, and
    /// prints the sha256 of what it received. A file is only created when the whole stream
    /// arrived: unrecoverable loss, a late join or a silent source leave no file and exit 1.
    ///
    /// Example: pgmcc recv --group 239.192.0.1:7500 --iface eth0 --out big.iso
    ///
    /// Exit status: 0 complete, 1 incomplete (the message says why), 2 on errors.
    Recv(net::RecvArgs),
    /// Make a group key for keyed mode, or a source's signing key pair for signed mode.
    ///
    /// A group key is for `send --key FILE` and `recv --key FILE`; with --sign, a signing key
    /// pair for `send --sign FILE` and `recv --trust FILE.pub`.
    ///
    /// A group key is 32 random bytes from the operating system in a new file readable by its
    /// owner only. Whoever holds it can send and receive in the group's keyed sessions: copy
    /// it to every member over a secure channel. A signing key pair is an Ed25519 secret key
    /// (FILE, owner only: keep it on the sending host) and its public key (FILE.pub, which
    /// receivers are given: it lets them verify, not sign). Both modes are described in
    /// docs/security.md.
    ///
    /// Examples: pgmcc keygen group.key; pgmcc keygen --sign source.key
    ///
    /// Exit status: 0 when written, 2 if the file exists or cannot be written.
    Keygen(net::KeygenArgs),
    /// Write the man pages or the shell completion scripts (for `make install` and packages).
    #[command(hide = true)]
    Generate(generate::Args),
}

fn main() -> ExitCode {
    // `recv --config FILE`: the file's flags, except those the command line gives itself.
    let args = match config::expand(std::env::args_os().collect(), &Cli::command()) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("pgmcc: error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_from(args);
    // The library crates log with `tracing`; RUST_LOG chooses what reaches standard error.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let result = match cli.command {
        Command::Decode(args) => decode::run(&args),
        Command::Sim(args) => lab::sim::run(&args),
        Command::Reproduce(args) => lab::reproduce::run(&args),
        Command::Grid(args) => lab::grid::run(&args),
        Command::Fairness(args) => lab::fairness::run(&args),
        Command::Emu(args) => lab::emu::run(&args),
        Command::Send(args) => net::send(&args),
        Command::Recv(args) => net::recv(&args),
        Command::Keygen(args) => net::keygen(&args),
        Command::Generate(args) => generate::run(&args, Cli::command()),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pgmcc: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
