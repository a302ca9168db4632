//! Network namespaces for the emulator: one per host, plus one for the emulator itself, all
//! named `PREFIX-...` and removed when [`Namespaces`] is dropped (with every process still
//! running in them). Made and changed with iproute2's `ip`, the tool an operator would use to
//! look inside them (`ip netns exec PREFIX-NODE ...`).

use std::fs::File;
use std::process::Command;

use crate::EmuError;

/// The namespaces of one emulation.
#[derive(Debug)]
pub struct Namespaces {
    prefix: String,
    made: Vec<String>,
}

/// Whether `name` can be part of a namespace name (a file name under /run/netns).
fn valid_part(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !name.starts_with('.')
}

impl Namespaces {
    /// Creates the emulator's namespace `PREFIX` and one namespace `PREFIX-HOST` per host.
    /// Refuses when any of them already exists (another emulation with the same prefix, or
    /// one that did not end cleanly: `ip netns del` removes it).
    pub fn create(prefix: &str, hosts: &[String]) -> Result<Namespaces, EmuError> {
        if !valid_part(prefix) {
            return Err(EmuError::Name(prefix.to_string()));
        }
        if let Some(bad) = hosts.iter().find(|h| !valid_part(h)) {
            return Err(EmuError::Name(bad.clone()));
        }
        let mut names = vec![prefix.to_string()];
        names.extend(hosts.iter().map(|h| format!("{prefix}-{h}")));
        let existing = list()?;
        if let Some(taken) = names.iter().find(|n| existing.contains(n)) {
            return Err(EmuError::Exists(taken.clone()));
        }
        let mut ns = Namespaces {
            prefix: prefix.to_string(),
            made: Vec::new(),
        };
        for n in names {
            ip(&["netns", "add", &n])?;
            ns.made.push(n);
        }
        Ok(ns)
    }

    /// The emulator's own namespace.
    pub fn emulator(&self) -> &str {
        &self.prefix
    }

    /// The namespace of host `name`.
    pub fn host(&self, name: &str) -> String {
        format!("{}-{name}", self.prefix)
    }

    /// Kills what still runs in the namespaces (but this process, which may live in one of
    /// them) and deletes them (also done on drop).
    pub fn remove(&mut self) {
        let me = std::process::id().to_string();
        for n in self.made.drain(..).rev() {
            if let Ok(out) = Command::new("ip").args(["netns", "pids", &n]).output() {
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    if pid != me && pid.chars().all(|c| c.is_ascii_digit()) {
                        let _ = Command::new("kill")
                            .args(["-KILL", pid])
                            .stderr(std::process::Stdio::null())
                            .status();
                    }
                }
            }
            if let Err(e) = ip(&["netns", "del", &n]) {
                tracing::warn!("could not delete namespace {n}: {e}");
            }
        }
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The names of the existing network namespaces.
fn list() -> Result<Vec<String>, EmuError> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map_err(|e| EmuError::Tool("ip netns list".into(), e.to_string()))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect())
}

/// Runs `ip ARGS`; its standard error becomes the error.
pub fn ip(args: &[&str]) -> Result<(), EmuError> {
    run("ip", args)
}

/// Runs a command to completion; a failure carries the command line and its standard error.
pub fn run(program: &str, args: &[&str]) -> Result<(), EmuError> {
    let line = || format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| EmuError::Tool(line(), e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(EmuError::Tool(
            line(),
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ))
    }
}

/// Moves the calling thread into namespace `name` (threads it spawns after this start there
/// too, and so do the processes it runs).
pub fn enter(name: &str) -> Result<(), EmuError> {
    let path = format!("/run/netns/{name}");
    let f = File::open(&path).map_err(|e| EmuError::Tool(format!("open {path}"), e.to_string()))?;
    rustix::thread::move_into_link_name_space(
        std::os::fd::AsFd::as_fd(&f),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .map_err(|e| EmuError::Tool(format!("setns {path}"), e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::valid_part;

    #[test]
    fn namespace_names_are_plain_file_names() {
        for ok in ["S", "PR0", "router-1", "a_b.c"] {
            assert!(valid_part(ok), "{ok}");
        }
        for bad in ["", ".hidden", "a/b", "a b", &"x".repeat(65)] {
            assert!(!valid_part(bad), "{bad}");
        }
    }
}
