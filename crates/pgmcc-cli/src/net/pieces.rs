//! Spools: data whose place in the stream is not known yet, set aside in a temporary file
//! until [`pgmcc_net::transfer::receive`] says where it goes (that module explains how a
//! stream sent in passes is put together).

use std::io::{Seek, SeekFrom, Write};

use anyhow::{Context, Result};

/// Data whose place in the stream is not known yet: after a missed start or a gap (placed
/// at the end, if the run reaches it), or before the session's manifest said it belongs to
/// the stream already held.
pub(super) struct Spool {
    file: std::io::BufWriter<std::fs::File>,
    /// Bytes spooled.
    pub(super) len: u64,
}

impl Spool {
    /// An empty spool: an anonymous temporary file in `dir` (gone when dropped).
    pub(super) fn new(dir: &std::path::Path) -> Result<Spool> {
        let file = tempfile::tempfile_in(dir)
            .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
        Ok(Spool {
            file: std::io::BufWriter::with_capacity(1 << 20, file),
            len: 0,
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
    fn a_spooled_run_lands_where_it_is_placed() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = std::io::Cursor::new(vec![b'.'; 10]);
        let mut s = Spool::new(dir.path()).unwrap();
        s.write(b"abc").unwrap();
        s.write(b"de").unwrap();
        assert_eq!(s.len, 5);
        s.copy_into(&mut out, 5).unwrap();
        assert_eq!(out.get_ref().as_slice(), b".....abcde");
    }
}
