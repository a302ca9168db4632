//! `pgmcc recv`: follow one session from a group into a file, a directory (`-D`) or standard
//! output, verified. The transfer itself (where each byte goes, passes, verification, the
//! delivery report) is [`pgmcc_net::transfer::receive`]; this is its driver: sockets,
//! files, progress, messages and exit codes.

mod drive;
mod said;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use pgmcc_net::{Receiver, ReceiverOptions};

use super::args::{parse_duration, NetArgs, Peer};
use super::metrics::RecvMetrics;
use super::output::Output;
use super::report::hex_string;
use super::runtime;
use super::tree::Symlinks;

/// Arguments of `pgmcc recv`.
#[derive(Debug, ClapArgs)]
pub(crate) struct RecvArgs {
    /// Read flags from this TOML file first: its keys are the long flag names, e.g. `group =
    /// "239.192.0.1:7500"`, `dir = "/srv/in"`, `daemon = true`, `idle-timeout = "30s"`.
    /// Flags given on the command line win; an unknown key is an error naming the file, line
    /// and key. Without --config, `--daemon` reads /etc/pgmcc/recv.toml when it exists (the
    /// environment variable PGMCC_RECV_CONFIG names another file).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    net: NetArgs,
    /// Where to write the data: a file (written to a temporary file beside it and renamed
    /// only when the whole stream arrived intact; an existing file is replaced only with
    /// --force; permissions follow the umask), or `-` for standard output [default: standard
    /// output, unless it is a terminal].
    #[arg(long, value_name = "FILE|-", conflicts_with = "dir")]
    out: Option<PathBuf>,
    /// Write into this directory (created if missing) what the source announces: its file
    /// under the file's name, or its directory tree (`pgmcc send DIR`). Nothing is written
    /// until the whole stream arrived and verified; a tree's paths never leave DIR, only
    /// files, directories and (with --symlinks keep) symbolic links are written, and nothing
    /// existing is replaced without --force.
    #[arg(short = 'D', long = "dir", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Replace the --out file, or the files and links of a -D tree, if they exist.
    #[arg(long)]
    force: bool,
    /// With -D: what to do with a tree's symbolic links: skip them (and list them), or keep
    /// them as they are (nothing is ever written through one).
    #[arg(long, value_name = "POLICY", value_enum, default_value_t = Symlinks::Skip)]
    symlinks: Symlinks,
    /// Keep listening: receive one session after another into the -D directory, one line
    /// per transfer on standard error (complete or failed, and why; each source gets its
    /// delivery report as usual), until SIGINT or SIGTERM. Sessions are received one at a
    /// time; combine with --source to take only one sender's. --join-timeout does not apply.
    #[arg(long, requires = "dir")]
    daemon: bool,
    /// Give up when the session being received has sent nothing, neither data nor the
    /// heartbeats (SPMs) a live source sends while it has nothing to say, for this long: the
    /// source or the network has gone. A paused live stream is not idle. A source heard
    /// only through its SPMs, with no data yet, that then falls silent this long ends the
    /// wait too (not --join-timeout).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    idle_timeout: Duration,
    /// Give up if no session has started this long after joining (0: wait for ever).
    #[arg(long, value_name = "DURATION", default_value = "10min", value_parser = parse_duration)]
    join_timeout: Duration,
    /// Accept a stream whose start this receiver did not see (joined late, or a source that
    /// does not mark its first packet, such as OpenPGM). Without it such a transfer fails.
    #[arg(long)]
    allow_partial_start: bool,
    /// Follow only a session whose packets come from this IPv4 address, the source's. Without
    /// it the first session heard is followed, and a host that starts a fake session first
    /// wins (unless --key is used); with it, packets from any other address are dropped.
    #[arg(long, value_name = "ADDR")]
    source: Option<std::net::Ipv4Addr>,
    /// Follow only the session with this TSI, as `pgmcc send` prints it ("session
    /// 12.34.56.78.90.12.4000"); packets of every other session are dropped.
    #[arg(long, value_name = "TSI")]
    session: Option<pgm_wire::Tsi>,
    /// A PGM network element (router) between the source and this receiver, by address;
    /// repeat for several. NAKs go to one only when the source's SPMs name it as their path;
    /// without this flag they always go to the source, so that a forged SPM cannot turn this
    /// receiver against another host.
    #[arg(long = "network-element", value_name = "ADDR")]
    network_elements: Vec<std::net::Ipv4Addr>,
    /// Do not take part in pgmcc (no loss reports, never acker).
    #[arg(long)]
    no_pgmcc: bool,
    /// Fault injection: discard every Nth datagram received, to see repairs at work.
    #[arg(long, value_name = "N")]
    drop_every: Option<u32>,
    /// The source is a ZeroMQ PUB socket on pgm:// or epgm:// (use the endpoint's port in
    /// --group and in --udp-ports P,P): decode ZeroMQ's framing and write each message part
    /// followed by a newline (meant for text messages; binary ones need the library's
    /// pgmcc_net::zmq). Implies --allow-partial-start (ZeroMQ marks no stream start).
    #[arg(long)]
    zmq: bool,
    /// Signed mode: accept only data signed by the source whose public key is in FILE (the
    /// FILE.pub of `pgmcc keygen --sign FILE`, run on the sender). Nothing unsigned reaches
    /// the output, forged packets are dropped and asked for again, and "complete" means
    /// every byte was verified, up to the source's signed end.
    #[arg(long, value_name = "FILE")]
    trust: Option<PathBuf>,
    /// With --key or --trust: how long before this receiver started a session may have
    /// begun and still be taken. Longer accepts receivers started well after the sender;
    /// shorter narrows the window in which a recording of an earlier session, played back,
    /// passes for the current one. Sessions joined late are not affected: their packets are
    /// sealed or signed now.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    start_slack: Duration,
    /// The SHA-256 the whole stream must have (64 hex digits, from a source you trust): a
    /// transfer whose bytes hash otherwise fails and leaves no file. Without it the hash the
    /// source announces with its end is checked, when it sends one.
    #[arg(long, value_name = "HEX", value_parser = parse_sha256)]
    expect_sha256: Option<[u8; 32]>,
}

/// `--expect-sha256`: 64 hex digits, either case.
fn parse_sha256(s: &str) -> Result<[u8; 32], String> {
    let h = s.trim().as_bytes();
    let digit = |c: u8| {
        char::from(c)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let mut out = [0u8; 32];
    if h.len() == 64 {
        for (o, pair) in out.iter_mut().zip(h.chunks(2)) {
            match (
                pair.first().copied().and_then(digit),
                pair.get(1).copied().and_then(digit),
            ) {
                (Some(a), Some(b)) => *o = a << 4 | b,
                _ => break,
            }
        }
        if hex_string(&out) == s.trim().to_ascii_lowercase() {
            return Ok(out);
        }
    }
    Err(format!(
        "`{s}` is not a SHA-256: expected 64 hex digits (as sha256sum prints)"
    ))
}

/// What `pgmcc recv` was asked, checked: the receiver's options and the transfer's.
struct Plan {
    opts: ReceiverOptions,
    transfer: pgmcc_net::transfer::receive::ReceiveConfig,
    /// ", keyed (key ...)" and the like, for the first line.
    keyed: String,
    /// The key whose signatures are trusted (`--trust`).
    signer: Option<pgmcc_net::KeyId>,
}

impl RecvArgs {
    /// --idle-timeout as given (for tests of how flags are assembled).
    #[cfg(test)]
    pub(crate) fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// The options, or what is wrong with the flags.
    fn plan(&self) -> Result<Plan> {
        let group = self.net.group()?;
        let mut opts = ReceiverOptions::new(group, self.net.group.port());
        opts.interface = self.net.iface.clone();
        opts.encapsulation = self.net.encapsulation();
        opts.pgmcc = !self.no_pgmcc;
        opts.source = self.source;
        opts.session = self.session;
        opts.network_elements = self
            .network_elements
            .iter()
            .map(|a| std::net::IpAddr::V4(*a))
            .collect();
        opts.key = self.net.key()?;
        // A libpgm source's first repair of a held-back packet carries a checksum without
        // its payload; taken over UDP only (the runtime ignores it for raw IP).
        opts.openpgm_rdata_checksum = self.net.libpgm_peer();
        opts.start_slack = self.start_slack;
        if self.daemon && self.net.stats.is_some() {
            anyhow::bail!("--stats is not written with --daemon: it reports one transfer; the daemon logs one line per transfer to standard error");
        }
        let zmq = self.zmq || self.net.peer == Some(Peer::ZeroMq);
        if opts.key.is_some() && zmq {
            anyhow::bail!(
                "--key and --zmq cannot be combined: ZeroMQ publishers do not seal their packets"
            );
        }
        opts.trust = self
            .trust
            .as_deref()
            .map(pgmcc_net::TrustedKey::load)
            .transpose()?;
        if opts.trust.is_some() && zmq {
            anyhow::bail!("--trust and --zmq cannot be combined: ZeroMQ publishers do not sign");
        }
        let signer = opts.trust.as_ref().map(|k| k.id());
        let keyed: String = [
            opts.key
                .as_ref()
                .map(|k| format!(", keyed (key {})", k.id())),
            signer.map(|id| format!(", trusting only data signed by key {id}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut transfer = pgmcc_net::transfer::receive::ReceiveConfig::default();
        transfer.allow_partial_start = self.allow_partial_start || self.net.peer.is_some();
        transfer.zmq = zmq;
        transfer.signed = signer.is_some();
        transfer.dir = self.dir.is_some();
        transfer.daemon = self.daemon;
        transfer.expect_sha256 = self.expect_sha256;
        transfer.join_timeout = (!self.join_timeout.is_zero()).then_some(self.join_timeout);
        transfer.idle_timeout = self.idle_timeout;
        Ok(Plan {
            opts,
            transfer,
            keyed,
            signer,
        })
    }

    /// The output of the first transfer.
    fn output(&self) -> Result<Output> {
        match (&self.out, &self.dir) {
            (_, Some(d)) => Output::open_dir(d),
            (Some(p), None) => Output::open(p, self.force),
            (None, None) => {
                use std::io::IsTerminal;
                if std::io::stdout().is_terminal() {
                    anyhow::bail!("standard output is a terminal: give --out FILE to save the data (or --out - to print it anyway)");
                }
                Output::open(std::path::Path::new("-"), self.force)
            }
        }
    }
}

/// Runs `pgmcc recv`.
pub(crate) fn recv(args: &RecvArgs) -> Result<ExitCode> {
    let plan = args.plan()?;
    let out = args.output()?;
    let rt = runtime()?;
    rt.block_on(async {
        let (group, port) = (plan.opts.group, plan.opts.port);
        let faults = pgmcc_net::faults::FaultInjector::drop_every(args.drop_every.unwrap_or(0));
        let rx = Receiver::bind_with_faults(plan.opts.clone(), faults)
            .await
            .context("joining the group")?;
        let metrics = match args.net.metrics {
            Some(addr) => {
                let m = std::sync::Arc::new(RecvMetrics::new(rx.status_watch()));
                let at = super::metrics::serve(addr, m.clone()).await?;
                eprintln!("pgmcc recv: metrics at http://{at}/metrics");
                Some(m)
            }
            None => None,
        };
        if !args.net.quiet {
            eprintln!(
                "pgmcc recv: joined {group}:{port} as {}{}; waiting for a session",
                rx.local_addr(),
                plan.keyed
            );
        }
        drive::run(args, &plan, rx, out, metrics.as_deref()).await
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use clap::Parser;

    use super::*;

    /// `pgmcc recv`'s flags alone.
    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        recv: RecvArgs,
    }

    #[test]
    fn an_expected_sha256_is_64_hex_digits_in_either_case() {
        let h = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08";
        let a = parse_sha256(h).unwrap();
        assert_eq!(hex_string(&a), h.to_ascii_lowercase());
        for bad in [
            &h[1..],
            "g".repeat(64).as_str(),
            "+f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        ] {
            assert!(parse_sha256(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_defaults_parse() {
        // clap checks a default only when it is used: a bad one fails every plain `recv`.
        let a = Cli::try_parse_from(["recv", "--group", "239.1.1.1:7500"])
            .unwrap()
            .recv;
        assert_eq!(a.idle_timeout, Duration::from_secs(30));
        assert_eq!(a.join_timeout, Duration::from_secs(600));
        assert!(a.out.is_none() && !a.force);
        assert!(a.network_elements.is_empty());
        let a = Cli::try_parse_from([
            "recv",
            "--group",
            "239.1.1.1:7500",
            "--network-element",
            "10.0.0.1",
            "--network-element",
            "10.0.1.1",
        ])
        .unwrap()
        .recv;
        let plan = a.plan().unwrap();
        assert_eq!(
            plan.opts.network_elements,
            ["10.0.0.1", "10.0.1.1"].map(|s| s.parse::<std::net::IpAddr>().unwrap())
        );
    }
}
