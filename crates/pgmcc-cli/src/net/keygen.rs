//! `pgmcc keygen`: a new group key for keyed mode.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args as ClapArgs;
use pgmcc_net::Key;

/// Arguments of `pgmcc keygen`.
#[derive(Debug, ClapArgs)]
pub(crate) struct KeygenArgs {
    /// The key file to create (never overwritten; mode 0600).
    #[arg(value_name = "FILE")]
    out: PathBuf,
}

/// Runs `pgmcc keygen`.
pub(crate) fn keygen(args: &KeygenArgs) -> Result<ExitCode> {
    let key = Key::create(&args.out)?;
    eprintln!(
        "pgmcc keygen: wrote group key {} to {} (mode 0600). Copy it to every sender and receiver over a secure channel (scp, a configuration manager) and pass --key {} to each.",
        key.id(),
        args.out.display(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
