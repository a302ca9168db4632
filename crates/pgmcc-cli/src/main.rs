//! The `pgmcc` command line.
//!
//! Subcommands: `decode` dissects PGM packets (hex, raw datagram file or pcap capture);
//! `sim` runs a scenario file on the simulated network and writes a report. `send`, `recv`
//! and `emu` arrive with the runtime and emulator issues.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod decode;
mod reproduce;
mod sim;

/// pgmcc: TCP-friendly reliable multicast (PGM, RFC 3208, with pgmcc congestion control).
#[derive(Debug, Parser)]
#[command(name = "pgmcc", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
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
    Sim(sim::Args),
    /// Reproduce the papers: run every scenario with a [reproduce] table over several seeds,
    /// compute f = TCP / pgmcc throughput, and write docs/reproduction.md (published value
    /// next to ours, mean and spread over seeds) and out/reproduce/report.html.
    Reproduce(reproduce::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Decode(args) => decode::run(&args),
        Command::Sim(args) => sim::run(&args),
        Command::Reproduce(args) => reproduce::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pgmcc: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
