//! What `make install` puts beside the binary: the systemd unit of the receive daemon is
//! valid for systemd, and its command line is one `pgmcc recv` takes.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;
use std::process::Command;

mod common;
use common::*;

/// The unit with `@BINDIR@` pointing at the binary under test.
fn unit(dir: &Path) -> std::path::PathBuf {
    let text =
        std::fs::read_to_string(repo().join("contrib/systemd/pgmcc-recv@.service.in")).unwrap();
    let bindir = Path::new(env!("CARGO_BIN_EXE_pgmcc")).parent().unwrap();
    let path = dir.join("pgmcc-recv@test.service");
    std::fs::write(&path, text.replace("@BINDIR@", bindir.to_str().unwrap())).unwrap();
    path
}

#[test]
fn the_receive_daemons_unit_passes_systemd_analyze_verify() {
    const TEST: &str = "the_receive_daemons_unit_passes_systemd_analyze_verify";
    let dir = tempfile::tempdir().unwrap();
    let path = unit(dir.path());
    match Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
    {
        Ok(o) => assert!(
            o.status.success() && o.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(_) => skip(TEST, "systemd-analyze is not installed"),
    }
}

#[test]
fn the_receive_daemons_command_line_is_one_pgmcc_recv_takes() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(unit(dir.path())).unwrap();
    let exec = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    let config = dir.path().join("recv-test.toml");
    std::fs::write(
        &config,
        "group = \"239.192.0.1:7500\"\nidle-timeout = \"1min\"\n",
    )
    .unwrap();
    let words: Vec<String> = exec
        .split_whitespace()
        .skip(1)
        .map(|w| {
            w.replace("/etc/pgmcc/recv-%i.toml", config.to_str().unwrap())
                .replace("%i", "test")
        })
        .collect();
    // --help after the unit's flags: parsed (the config file too), then nothing runs.
    let o = Command::new(pgmcc())
        .args(&words)
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{exec}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}
