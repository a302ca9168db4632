//! What `pgmcc send` and `pgmcc recv` both show the user: the progress display, the final
//! statistics as JSON (`--stats`), the sha256 in hex, text from the network made printable.

use std::borrow::Cow;
use std::path::Path;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

/// A progress bar on standard error (a spinner when the length is unknown), hidden with
/// `--quiet`.
pub(super) fn progress(quiet: bool, len: Option<u64>) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = match len {
        Some(n) => ProgressBar::new(n).with_style(sized_style()),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    pb.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    pb
}

/// The bar for a known length: bytes, percentage, rate and time left.
fn sized_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{bar:30} {bytes}/{total_bytes} {percent}% {binary_bytes_per_sec} ETA {eta} {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// Turns a spinner into a bar once the length is known (a receiver learns it from the
/// source's manifest).
pub(super) fn set_size(pb: &ProgressBar, len: u64) {
    if pb.length() != Some(len) {
        pb.set_length(len);
        pb.set_style(sized_style());
    }
}

/// One line of progress every [`LINE_EVERY`] on standard error when it is not a terminal
/// (a log, a pipe: the bar is not drawn there), so long transfers still show they move.
pub(super) struct LineProgress {
    who: &'static str,
    on: bool,
    started: std::time::Instant,
    last: std::time::Instant,
}

/// How often [`LineProgress`] prints.
const LINE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

impl LineProgress {
    /// Progress lines prefixed `who` ("pgmcc send"), off with `--quiet` or on a terminal.
    pub(super) fn new(who: &'static str, quiet: bool) -> LineProgress {
        use std::io::IsTerminal;
        let now = std::time::Instant::now();
        LineProgress {
            who,
            on: !quiet && !std::io::stderr().is_terminal(),
            started: now,
            last: now,
        }
    }

    /// Prints `done` bytes (of `total`, if known) when a line is due.
    pub(super) fn tick(&mut self, done: u64, total: Option<u64>) {
        if !self.on || self.last.elapsed() < LINE_EVERY {
            return;
        }
        self.last = std::time::Instant::now();
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = done as f64 / secs;
        let mb = |b: u64| b as f64 / 1e6;
        let line = match total.filter(|t| *t > 0) {
            Some(t) => {
                let eta = (t.saturating_sub(done)) as f64 / rate.max(1.0);
                format!(
                    "{}: {:.0}% ({:.1} of {:.1} MB), {:.2} MB/s, about {:.0} s left",
                    self.who,
                    done as f64 * 100.0 / t as f64,
                    mb(done),
                    mb(t),
                    rate / 1e6,
                    eta
                )
            }
            None => format!("{}: {:.1} MB, {:.2} MB/s", self.who, mb(done), rate / 1e6),
        };
        eprintln!("{line}");
    }
}

/// Writes `value` as pretty JSON to `path`, or to standard output for `-`.
pub(super) fn write_stats<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let json = serde_json::to_string_pretty(value).context("encoding statistics")?;
    if path == Path::new("-") {
        println!("{json}");
    } else {
        std::fs::write(path, json + "\n")
            .with_context(|| format!("writing statistics to {}", path.display()))?;
    }
    Ok(())
}

/// Lower-case hex, two digits a byte.
pub(super) fn hex_string(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `s` with its control characters (C0, DEL and C1) written as escapes: `\x1b` for those
/// below 0x80, `\u{9b}` above. Text from the network or a manifest (names, reasons) goes
/// through it before it is printed, so it cannot move the cursor, clear the screen or set the
/// terminal's title; text without control characters is returned as it is.
pub(super) fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        let n = u32::from(c);
        if !c.is_control() {
            out.push(c);
        } else if n < 0x80 {
            out.push_str(&format!("\\x{n:02x}"));
        } else {
            out.push_str(&format!("\\u{{{n:x}}}"));
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert!(matches!(printable("plain, naïve ✓"), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\x1b]0;title\x07b\x1b[2Jc\u{9b}31md\x7f\ne\u{85}"),
            "a\\x1b]0;title\\x07b\\x1b[2Jc\\u{9b}31md\\x7f\\x0ae\\u{85}"
        );
    }
}
