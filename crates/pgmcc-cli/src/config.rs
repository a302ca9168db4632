//! `--config FILE` for `pgmcc recv`: a TOML file whose keys are the command's own long flag
//! names (`group = "239.192.0.1:7500"`, `idle-timeout = "30s"`, `daemon = true`), so a
//! service keeps its settings in one file. Flags given on the command line win; a key the
//! command does not have is an error that names the file, the line and the key, as scenario
//! files' are. `pgmcc recv --daemon` without `--config` reads [`DEFAULT_RECV`] when it
//! exists (or the file `PGMCC_RECV_CONFIG` names).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use toml::Spanned;

/// The commands that take `--config`.
const CONFIGURABLE: [&str; 1] = ["recv"];

/// The file `pgmcc recv --daemon` reads without `--config`, when it exists.
pub(crate) const DEFAULT_RECV: &str = "/etc/pgmcc/recv.toml";

/// The receive daemon's default file: `PGMCC_RECV_CONFIG`, or [`DEFAULT_RECV`].
fn default_recv() -> PathBuf {
    std::env::var_os("PGMCC_RECV_CONFIG").map_or_else(|| PathBuf::from(DEFAULT_RECV), PathBuf::from)
}

/// The command line with a `--config FILE` of a configurable command replaced by the file's
/// settings, except those whose flags the command line gives itself (`cmd` is the whole
/// command line's definition, for the flag names). Without `--config` the arguments are
/// unchanged.
pub(crate) fn expand(args: Vec<OsString>, cmd: &clap::Command) -> Result<Vec<OsString>> {
    expand_with(args, cmd, &default_recv())
}

/// [`expand`], with `default` as the receive daemon's default file.
fn expand_with(args: Vec<OsString>, cmd: &clap::Command, default: &Path) -> Result<Vec<OsString>> {
    let Some(sub) = args.get(1).and_then(|a| a.to_str()) else {
        return Ok(args);
    };
    if !CONFIGURABLE.contains(&sub) {
        return Ok(args);
    }
    let flags = || args[2..].iter().take_while(|a| *a != "--");
    let (file, at, consumed) = match args
        .iter()
        .position(|a| a == "--config" || a.to_str().is_some_and(|a| a.starts_with("--config=")))
    {
        Some(at) => match args[at].to_str().and_then(|a| a.strip_prefix("--config=")) {
            Some(f) => (OsString::from(f), at, 1),
            None => match args.get(at + 1) {
                Some(f) => (f.clone(), at, 2),
                None => bail!("--config needs a FILE"),
            },
        },
        // The receive daemon's default file, when there is one.
        None if flags().any(|a| a == "--daemon") && default.is_file() => {
            eprintln!("pgmcc {sub}: flags from {}", default.display());
            (default.as_os_str().to_owned(), args.len(), 0)
        }
        None => return Ok(args),
    };
    let Some(sub_cmd) = cmd.find_subcommand(sub) else {
        return Ok(args);
    };
    // The flags the command line gives (up to a `--`), by long name, which the file does not
    // override: `--name`, `--name=value`, and short ones (`-q`) through their long names.
    let mut given: Vec<String> = Vec::new();
    for a in flags().filter_map(|a| a.to_str()) {
        if let Some(long) = a.strip_prefix("--") {
            given.push(long.split('=').next().unwrap_or(long).to_owned());
        } else if let Some(shorts) = a.strip_prefix('-') {
            for c in shorts.chars() {
                if let Some(long) = sub_cmd
                    .get_arguments()
                    .find(|x| x.get_short() == Some(c))
                    .and_then(|x| x.get_long())
                {
                    given.push(long.to_owned());
                }
            }
        }
    }
    let settings = read(Path::new(&file), sub_cmd, &given)?;
    let mut out = args[..2].to_vec();
    out.extend(settings);
    out.extend(args[2..at].iter().cloned());
    out.extend(args[at + consumed..].iter().cloned());
    Ok(out)
}

/// The flags `file` sets for `cmd`, as command-line arguments.
fn read(file: &Path, cmd: &clap::Command, given: &[String]) -> Result<Vec<OsString>> {
    let name = file.display();
    let text = std::fs::read_to_string(file).with_context(|| format!("--config {name}"))?;
    let table: std::collections::BTreeMap<Spanned<String>, Spanned<toml::Value>> =
        toml::from_str(&text).map_err(|e| {
            let line = e.span().map_or(0, |s| line_of(&text, s.start));
            anyhow::anyhow!("{name}:{line}: {}", e.message())
        })?;
    let mut out = Vec::new();
    for (key, value) in table {
        let line = line_of(&text, key.span().start);
        let key = key.into_inner();
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(key.as_str()) && key != "config" && key != "help");
        let Some(arg) = arg else {
            bail!(
                "{name}:{line}: unknown key `{key}` (`pgmcc {}` has no --{key})",
                cmd.get_name()
            );
        };
        if given.contains(&key) {
            continue;
        }
        let takes_value = arg.get_action().takes_values();
        let repeats = matches!(arg.get_action(), clap::ArgAction::Append);
        let flag = OsString::from(format!("--{key}"));
        match (value.into_inner(), takes_value) {
            (toml::Value::Array(items), true) if repeats => {
                for item in items {
                    match item {
                        toml::Value::String(s) => out.extend([flag.clone(), s.into()]),
                        _ => bail!("{name}:{line}: `{key}` takes a list of strings"),
                    }
                }
            }
            (toml::Value::Boolean(true), false) => out.push(flag),
            (toml::Value::Boolean(false), false) => {}
            (toml::Value::Boolean(_), true) => {
                bail!("{name}:{line}: `{key}` takes a value, not true or false")
            }
            (_, false) => bail!("{name}:{line}: `{key}` is a switch: write `{key} = true`"),
            (toml::Value::String(s), true) => out.extend([flag, s.into()]),
            (toml::Value::Integer(i), true) => out.extend([flag, i.to_string().into()]),
            (toml::Value::Float(f), true) => out.extend([flag, f.to_string().into()]),
            (_, true) => bail!("{name}:{line}: `{key}` takes a string or a number"),
        }
    }
    Ok(out)
}

/// The 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.get(..at).map_or(0, |t| t.matches('\n').count()) + 1
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    fn args(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_config_file_sets_flags_the_command_line_does_not_give() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("recv.toml");
        std::fs::write(
            &f,
            "# a receive daemon\ngroup = \"239.192.0.9:7600\"\nidle-timeout = \"45s\"\nquiet = true\nforce = false\n",
        )
        .unwrap();
        let cmd = crate::Cli::command();
        let got = expand(
            args(&[
                "pgmcc",
                "recv",
                "--config",
                f.to_str().unwrap(),
                "--idle-timeout=10s",
            ]),
            &cmd,
        )
        .unwrap();
        assert_eq!(
            got,
            args(&[
                "pgmcc",
                "recv",
                "--group",
                "239.192.0.9:7600",
                "--quiet",
                "--idle-timeout=10s"
            ])
        );
        // Parsed: the command line's value, the file's left out.
        let cli = crate::Cli::try_parse_from(got).unwrap();
        let crate::Command::Recv(r) = cli.command else {
            panic!("not recv")
        };
        assert_eq!(r.idle_timeout(), std::time::Duration::from_secs(10));
        // A short flag given counts as its long name.
        let got = expand(
            args(&["pgmcc", "recv", "--config", f.to_str().unwrap(), "-q"]),
            &cmd,
        )
        .unwrap();
        assert!(!got.contains(&OsString::from("--quiet")), "{got:?}");
        // A repeatable flag takes a list.
        std::fs::write(&f, "network-element = [\"10.0.0.1\", \"10.0.0.2\"]\n").unwrap();
        let got = expand(
            args(&["pgmcc", "recv", "--config", f.to_str().unwrap()]),
            &cmd,
        )
        .unwrap();
        assert_eq!(
            got,
            args(&[
                "pgmcc",
                "recv",
                "--network-element",
                "10.0.0.1",
                "--network-element",
                "10.0.0.2"
            ])
        );
        // Other commands and command lines without --config are left alone.
        let plain = args(&["pgmcc", "send", "--config", "x"]);
        assert_eq!(expand(plain.clone(), &cmd).unwrap(), plain);
    }

    #[test]
    fn unknown_keys_and_wrong_values_name_the_file_line_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let cmd = crate::Cli::command();
        for (text, says) in [
            (
                "group = \"239.1.1.1:1\"\n\nidle_timeout = \"3s\"\n",
                ":3: unknown key `idle_timeout`",
            ),
            ("quiet = \"yes\"\n", ":1: `quiet` is a switch"),
            ("group = true\n", ":1: `group` takes a value"),
            ("group = [1, 2]\n", ":1: `group` takes a string or a number"),
            ("group = \n", ":1:"),
        ] {
            let f = dir.path().join("c.toml");
            std::fs::write(&f, text).unwrap();
            let e = expand(
                args(&["pgmcc", "recv", "--config", f.to_str().unwrap()]),
                &cmd,
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains("c.toml") && e.contains(says), "{text:?}: {e}");
        }
        let e = expand(
            args(&["pgmcc", "recv", "--config", "/nonexistent/x.toml"]),
            &cmd,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("/nonexistent/x.toml"), "{e:#}");
    }

    #[test]
    fn the_receive_daemon_reads_its_default_file_and_nothing_else_does() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("recv.toml");
        std::fs::write(&f, "group = \"239.192.0.9:7600\"\nidle-timeout = \"45s\"\n").unwrap();
        let cmd = crate::Cli::command();
        let daemon = args(&[
            "pgmcc",
            "recv",
            "--daemon",
            "--dir",
            "/srv",
            "--idle-timeout",
            "5s",
        ]);
        let got = expand_with(daemon.clone(), &cmd, &f).unwrap();
        assert_eq!(
            got,
            args(&[
                "pgmcc",
                "recv",
                "--group",
                "239.192.0.9:7600",
                "--daemon",
                "--dir",
                "/srv",
                "--idle-timeout",
                "5s"
            ])
        );
        // Not without --daemon, not when --config names another file, not when it is absent.
        let once = args(&["pgmcc", "recv", "--out", "x"]);
        assert_eq!(expand_with(once.clone(), &cmd, &f).unwrap(), once);
        let missing = dir.path().join("none.toml");
        assert_eq!(expand_with(daemon.clone(), &cmd, &missing).unwrap(), daemon);
        let other = dir.path().join("other.toml");
        std::fs::write(&other, "idle-timeout = \"1min\"\n").unwrap();
        let mut given = daemon.clone();
        given.extend(args(&["--config", other.to_str().unwrap()]));
        let got = expand_with(given, &cmd, &f).unwrap();
        assert!(!got.iter().any(|a| a == "--group"), "{got:?}");
    }
}
