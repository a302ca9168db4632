//! The core is sans-IO: no clock, socket, thread, file or ambient randomness in `src/`.
//! This test greps the sources so a slip fails CI rather than a code review.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

const FORBIDDEN: &[&str] = &[
    "Instant::now",
    "SystemTime",
    "std::time::Instant",
    "std::net::UdpSocket",
    "std::net::TcpStream",
    "std::fs",
    "std::thread",
    "std::env",
    "thread_rng",
    "OsRng",
    "from_entropy",
    "tokio",
];

fn scan(dir: &Path, hits: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            scan(&path, hits);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                for f in FORBIDDEN {
                    if line.contains(f) && !line.trim_start().starts_with("//") {
                        hits.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
}

#[test]
fn core_reads_no_clock_socket_or_entropy() {
    let mut hits = Vec::new();
    scan(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut hits,
    );
    assert!(
        hits.is_empty(),
        "I/O in the sans-IO core:\n{}",
        hits.join("\n")
    );
}
