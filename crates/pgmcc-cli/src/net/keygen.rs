//! `pgmcc keygen`: a new group key for keyed mode, or a signing key pair for signed mode.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args as ClapArgs;
use pgmcc_net::{Key, SourceKey};

/// Arguments of `pgmcc keygen`.
#[derive(Debug, ClapArgs)]
pub(crate) struct KeygenArgs {
    /// The key file to create (never overwritten; mode 0600). With --sign, the public key
    /// goes to FILE.pub.
    #[arg(value_name = "FILE")]
    out: PathBuf,
    /// Make a source's signing key pair (signed mode) instead of a group key (keyed mode).
    #[arg(long)]
    sign: bool,
}

/// Runs `pgmcc keygen`.
pub(crate) fn keygen(args: &KeygenArgs) -> Result<ExitCode> {
    let out = args.out.display();
    if args.sign {
        let (key, public) = SourceKey::create(&args.out)?;
        eprintln!(
            "pgmcc keygen: wrote source signing key {} to {out} (mode 0600; keep it on the sending host: pgmcc send --sign {out}) and its public key to {} (give it to receivers: pgmcc recv --trust {}).",
            key.id(),
            public.display(),
            public.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let key = Key::create(&args.out)?;
    eprintln!(
        "pgmcc keygen: wrote group key {} to {out} (mode 0600). Copy it to every sender and receiver over a secure channel (scp, a configuration manager) and pass --key {out} to each.",
        key.id(),
    );
    Ok(ExitCode::SUCCESS)
}
