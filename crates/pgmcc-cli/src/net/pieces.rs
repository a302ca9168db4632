//! What a receiver holds of a stream the source sends in several passes (`pgmcc send
//! --passes N`, each pass a session of its own announcing that another follows).
//!
//! The data stream carries no byte offsets (it is the file's bytes and nothing else), so a
//! receiver places what it got by what it knows: a run of data that began at the stream's
//! marked first packet (OPT_SYN) starts at byte 0; a run that reached the session's end
//! (everything up to the source's final lead delivered) ends at the announced size. A run
//! with neither, between two gaps, cannot be placed and is dropped. A late joiner thus keeps
//! the tail of one pass and takes the head from the next, and a receiver that lost packets
//! for good keeps the head up to the first gap and the tail after the last. The whole
//! stream's SHA-256 (and in signed mode every packet's signed digest) checks the result.

use std::io::{Seek, SeekFrom, Write};

use anyhow::{Context, Result};

/// Byte ranges held, half-open, sorted, disjoint and not touching.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Ranges(Vec<(u64, u64)>);

impl Ranges {
    /// Adds `start..end` (merged with what it overlaps or touches).
    pub(super) fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (mut s, mut e) = (start, end);
        self.0.retain(|&(a, b)| {
            if b < s || a > e {
                true
            } else {
                s = s.min(a);
                e = e.max(b);
                false
            }
        });
        let at = self.0.partition_point(|&(a, _)| a < s);
        self.0.insert(at, (s, e));
    }

    /// Whether `start..end` is all held.
    pub(super) fn contains(&self, start: u64, end: u64) -> bool {
        let at = self.0.partition_point(|&(a, _)| a <= start);
        at > 0 && self.0.get(at - 1).is_some_and(|&(_, b)| b >= end)
    }

    /// Whether `0..size` is all held.
    pub(super) fn covers(&self, size: u64) -> bool {
        size == 0 || self.0.first().is_some_and(|&(a, b)| a == 0 && b >= size)
    }

    /// Bytes held.
    pub(super) fn total(&self) -> u64 {
        self.0.iter().map(|(a, b)| b - a).sum()
    }

    /// "bytes 0-999 and 5000-9999" (inclusive ends, as people read ranges), or "nothing".
    pub(super) fn describe(&self) -> String {
        if self.0.is_empty() {
            return "nothing".into();
        }
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(a, b)| format!("{a}-{}", b - 1))
            .collect();
        let n = parts.len();
        let list = match n {
            1 => parts.join(""),
            _ => format!(
                "{} and {}",
                parts.get(..n - 1).unwrap_or_default().join(", "),
                parts.last().map_or("", String::as_str)
            ),
        };
        format!("bytes {list}")
    }
}

/// Data whose place in the stream is not known yet: after a missed start or a gap (placed
/// at the end, if the run reaches it), or before the session's manifest said it belongs to
/// the stream already held (`start` known).
pub(super) struct Spool {
    file: std::io::BufWriter<std::fs::File>,
    /// Bytes spooled.
    pub(super) len: u64,
    /// Where the run starts in the stream, when known.
    pub(super) start: Option<u64>,
}

impl Spool {
    /// An empty spool: an anonymous temporary file in `dir` (gone when dropped).
    pub(super) fn new(dir: &std::path::Path, start: Option<u64>) -> Result<Spool> {
        let file = tempfile::tempfile_in(dir)
            .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
        Ok(Spool {
            file: std::io::BufWriter::with_capacity(1 << 20, file),
            len: 0,
            start,
        })
    }

    /// Appends `data`.
    pub(super) fn write(&mut self, data: &[u8]) -> Result<()> {
        self.len += data.len() as u64;
        self.file
            .write_all(data)
            .context("writing a temporary file")
    }

    /// Copies everything spooled into `out` at byte `at` (leaving `out` positioned after it).
    pub(super) fn copy_into(self, out: &mut (impl Write + Seek), at: u64) -> Result<()> {
        let mut file = self
            .file
            .into_inner()
            .map_err(|e| e.into_error())
            .context("writing a temporary file")?;
        file.seek(SeekFrom::Start(0))
            .context("reading a temporary file")?;
        out.seek(SeekFrom::Start(at))
            .context("writing the output file")?;
        let copied = std::io::copy(&mut file, out).context("writing the output file")?;
        if copied != self.len {
            anyhow::bail!(
                "a temporary file held {copied} bytes instead of {}",
                self.len
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    #[test]
    fn ranges_merge_and_cover() {
        let mut r = Ranges::default();
        assert!(!r.covers(10) && r.covers(0));
        assert_eq!(r.describe(), "nothing");
        r.insert(60, 100);
        r.insert(0, 20);
        r.insert(30, 40);
        assert_eq!(r.0, vec![(0, 20), (30, 40), (60, 100)]);
        assert_eq!(r.total(), 70);
        assert_eq!(r.describe(), "bytes 0-19, 30-39 and 60-99");
        assert!(!r.covers(100));
        assert!(r.contains(0, 20) && r.contains(65, 70) && r.contains(30, 30));
        assert!(!r.contains(15, 25) && !r.contains(40, 41) && !r.contains(100, 101));
        // Touching ranges merge; an overlapping one swallows several.
        r.insert(20, 30);
        assert_eq!(r.0, vec![(0, 40), (60, 100)]);
        r.insert(35, 70);
        assert_eq!(r.0, vec![(0, 100)]);
        assert!(r.covers(100) && !r.covers(101));
        r.insert(5, 5);
        assert_eq!(r.0, vec![(0, 100)]);
    }

    #[test]
    fn a_spooled_run_lands_where_it_is_placed() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = std::io::Cursor::new(vec![b'.'; 10]);
        let mut s = Spool::new(dir.path(), None).unwrap();
        s.write(b"abc").unwrap();
        s.write(b"de").unwrap();
        assert_eq!(s.len, 5);
        s.copy_into(&mut out, 5).unwrap();
        assert_eq!(out.get_ref().as_slice(), b".....abcde");
    }
}
