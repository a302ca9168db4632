//! What `make install` puts beside the binary: the systemd unit of the receive daemon is
//! valid for systemd, and its command line is one `pgmcc recv` takes; and the Debian package
//! of the same files installs and runs.

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

/// Inside a new mount and network namespace (nothing outside it changes): `/usr`, `/var`
/// and `/etc` overlaid on a tmpfs, the package installed with dpkg, then the installed
/// `pgmcc` run from `PATH` and a file moved over the namespace's own loopback, once to
/// `pgmcc recv --out` and once to the receive daemon started as its unit starts it, whose
/// metrics endpoint is scraped.
const INSTALL_AND_RUN: &str = r#"
T=$1 deb=$2
mount -t tmpfs tmpfs "$T"
for d in usr var etc; do
    mkdir -p "$T/$d-up" "$T/$d-wk"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$T/$d-up,workdir=$T/$d-wk" "/$d"
done
dpkg -i "$deb" >/dev/null
echo "path: $(command -v pgmcc)"
echo "version: $(pgmcc --version)"
for f in /usr/share/man/man1/pgmcc-recv.1.gz /usr/lib/systemd/system/pgmcc-recv@.service \
         /usr/share/bash-completion/completions/pgmcc /usr/share/doc/pgmcc/copyright; do
    test -s "$f" && echo "file: $f"
done
man -P cat pgmcc-recv 2>/dev/null | grep -q -- '--daemon' && echo "man: pgmcc-recv reads"
ip link set lo up
head -c 300000 /dev/urandom > "$T/in"
timeout 20 pgmcc recv --group 239.255.7.7:7500 --iface 127.0.0.1 --idle-timeout 5s -q --out "$T/out" &
sleep 0.3
timeout 20 pgmcc send --group 239.255.7.7:7500 --iface 127.0.0.1 --ttl 0 --linger 200ms -q "$T/in"
wait $!
cmp "$T/in" "$T/out" && echo "transfer: byte-identical"

# The unit's ExecStart line as written (systemd would make the state directory), its config
# in /etc/pgmcc with a metrics endpoint; one transfer, then a scrape (bash's /dev/tcp).
mkdir -p /etc/pgmcc /var/lib/pgmcc-recv-test
printf 'group = "239.255.7.8:7500"\niface = "127.0.0.1"\nmetrics = "127.0.0.1:9464"\n' \
    > /etc/pgmcc/recv-test.toml
exec_start=$(sed -n 's/^ExecStart=//p' /usr/lib/systemd/system/pgmcc-recv@.service)
${exec_start//%i/test} -q 2>"$T/daemon.err" &
daemon=$!
sleep 0.5
timeout 20 pgmcc send --group 239.255.7.8:7500 --iface 127.0.0.1 --ttl 0 --linger 200ms -q "$T/in"
for _ in $(seq 50); do
    scraped=$( (exec 3<>/dev/tcp/127.0.0.1/9464 && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 &&
        cat <&3) 2>/dev/null || true)
    grep -q 'pgmcc_recv_transfers_total{outcome="complete"} 1' <<<"$scraped" && break
    sleep 0.2
done
grep '^pgmcc_recv_transfers_total\|^pgmcc_recv_delivered_bytes_total' <<<"$scraped" | sed 's/^/metrics: /' || true
kill -INT $daemon
wait $daemon || { cat "$T/daemon.err"; exit 1; }
cmp "$T/in" /var/lib/pgmcc-recv-test/in && echo "daemon: byte-identical"
"#;

/// Issue 55: `scripts/package` (what `make package` runs) builds a .deb of the binary under
/// test that dpkg installs, with its man pages, completions and unit, and the installed
/// program works.
#[test]
fn the_debian_package_installs_and_the_installed_pgmcc_moves_a_file() {
    const TEST: &str = "the_debian_package_installs_and_the_installed_pgmcc_moves_a_file";
    if !is_root() {
        skip(TEST, "needs root (a mount namespace to install into)");
        return;
    }
    for tool in ["dpkg-deb", "unshare", "objdump"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map_or(true, |o| !o.status.success())
        {
            skip(TEST, &format!("{tool} is not installed"));
            return;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(repo().join("scripts/package"))
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_pgmcc"))
        .arg(dir.path())
        // The test binary is large: uncompressed, it packs in a second.
        .env("PGMCC_PACKAGE_COMPRESS", "none")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/package: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deb = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let version = env!("CARGO_PKG_VERSION");
    assert!(deb.contains(&format!("pgmcc_{version}_")), "{deb}");
    let info = Command::new("dpkg-deb")
        .args(["--field", &deb, "Package", "Version", "Depends"])
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains("Package: pgmcc"), "{info}");
    assert!(info.contains(&format!("Version: {version}")), "{info}");
    assert!(info.contains("libc6 (>= 2."), "{info}");

    let root = tempfile::tempdir().unwrap();
    let run = Command::new("unshare")
        .args([
            "--mount", "--net", "--fork", "bash", "-euo", "pipefail", "-c",
        ])
        .arg(INSTALL_AND_RUN)
        .arg("_")
        .arg(root.path())
        .arg(&deb)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(said.contains("path: /usr/bin/pgmcc"), "{said}");
    assert!(
        said.contains(&format!("version: pgmcc {version}")),
        "{said}"
    );
    assert_eq!(said.matches("file: ").count(), 4, "{said}");
    if Command::new("sh")
        .args(["-c", "command -v man"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        assert!(said.contains("man: pgmcc-recv reads"), "{said}");
    }
    assert!(said.contains("transfer: byte-identical"), "{said}");
    assert!(said.contains("daemon: byte-identical"), "{said}");
    assert!(
        said.contains("metrics: pgmcc_recv_transfers_total{outcome=\"complete\"} 1\n"),
        "{said}"
    );
    assert!(
        said.contains("metrics: pgmcc_recv_delivered_bytes_total 300000\n"),
        "{said}"
    );
}
