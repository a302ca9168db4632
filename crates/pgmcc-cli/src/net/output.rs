//! Where `pgmcc recv` writes what it receives: a temporary file beside the destination,
//! renamed into place only when the whole stream arrived (or, for `-D DIR`, written out as
//! the file or tree the source announced), or standard output.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::report::printable;
use super::tree::{Symlinks, Written};

/// Where received bytes go: a temporary file renamed on success, or standard output. Both
/// buffered; [`Output::flush`] runs whenever no more data is waiting.
pub(super) enum Output {
    File {
        tmp: std::io::BufWriter<tempfile::NamedTempFile>,
        dest: PathBuf,
    },
    /// Standard output through a plain `File` on its descriptor: `std::io::Stdout` is
    /// line-buffered and would scan binary data for newlines.
    Stdout(std::io::BufWriter<std::fs::File>),
    /// `-D DIR`: a temporary file in DIR, which becomes the announced file in DIR, or the
    /// tree its archive holds.
    Dir {
        tmp: std::io::BufWriter<tempfile::NamedTempFile>,
        dir: PathBuf,
    },
}

/// What [`Output::commit`] kept.
pub(super) enum Committed {
    /// Written to standard output.
    Stdout,
    /// This file.
    File(PathBuf),
    /// A tree, written into this directory.
    Tree(PathBuf, Written),
}

/// A temporary file in `dir` with the mode any new file gets (0666 less the umask;
/// tempfile's default is 0600).
fn temp_in(dir: &Path) -> Result<std::io::BufWriter<tempfile::NamedTempFile>> {
    const BUF: usize = 1 << 20;
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::Builder::new()
        .prefix(".pgmcc-recv-")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    Ok(std::io::BufWriter::with_capacity(BUF, tmp))
}

/// The temporary file flushed to disk.
fn finish(tmp: std::io::BufWriter<tempfile::NamedTempFile>) -> Result<tempfile::NamedTempFile> {
    let tmp = tmp
        .into_inner()
        .map_err(|e| e.into_error())
        .context("writing the output file")?;
    tmp.as_file()
        .sync_all()
        .context("flushing the output file")?;
    Ok(tmp)
}

/// `name` as one plain file name (the source's, from its manifest), or why not.
fn plain_name(name: &str) -> Result<&str> {
    if name.is_empty() {
        anyhow::bail!("the source announced no file name (an OpenPGM or ZeroMQ source, or standard input): receive it with --out FILE");
    }
    if name.contains('/') || name == "." || name == ".." || name.contains('\0') {
        anyhow::bail!("the source announced the file name {name:?}, which is not a plain name: receive it with --out FILE");
    }
    Ok(name)
}

impl Output {
    /// Standard output for `-`; otherwise a temporary file in `path`'s directory. An
    /// existing directory is refused, and so is an existing file unless `force`.
    pub(super) fn open(path: &Path, force: bool) -> Result<Output> {
        const BUF: usize = 1 << 20;
        if path == Path::new("-") {
            use std::os::fd::AsFd;
            let fd = std::io::stdout()
                .as_fd()
                .try_clone_to_owned()
                .context("duplicating standard output")?;
            return Ok(Output::Stdout(std::io::BufWriter::with_capacity(
                BUF,
                std::fs::File::from(fd),
            )));
        }
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                anyhow::bail!(
                    "--out {} is a directory: give the path of a file to write",
                    path.display()
                )
            }
            Ok(_) if !force => anyhow::bail!(
                "--out {} exists: pass --force to replace it",
                path.display()
            ),
            _ => {}
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(Output::File {
            tmp: temp_in(&dir)?,
            dest: path.to_path_buf(),
        })
    }

    /// `-D DIR`: DIR is created if missing; the data goes to a temporary file in it.
    pub(super) fn open_dir(dir: &Path) -> Result<Output> {
        match std::fs::metadata(dir) {
            Ok(m) if !m.is_dir() => anyhow::bail!(
                "-D {} is not a directory: give the directory to write into",
                dir.display()
            ),
            Ok(_) => {}
            Err(_) => std::fs::create_dir_all(dir)
                .with_context(|| format!("creating directory {}", dir.display()))?,
        }
        Ok(Output::Dir {
            tmp: temp_in(dir)?,
            dir: dir.to_path_buf(),
        })
    }

    /// Appends `data` (buffered).
    pub(super) fn write(&mut self, data: &[u8]) -> Result<()> {
        match self {
            Output::File { tmp, .. } | Output::Dir { tmp, .. } => {
                tmp.write_all(data).context("writing the output file")
            }
            Output::Stdout(s) => s.write_all(data).context("writing to standard output"),
        }
    }

    /// Pushes buffered bytes out (to the pipe or terminal for standard output).
    pub(super) fn flush(&mut self) -> Result<()> {
        match self {
            Output::File { tmp, .. } | Output::Dir { tmp, .. } => {
                tmp.flush().context("writing the output file")
            }
            Output::Stdout(s) => s.flush().context("writing to standard output"),
        }
    }

    /// The directory of the temporary file (where spools go), none for standard output.
    pub(super) fn temp_dir(&self) -> Option<&Path> {
        match self {
            Output::File { tmp, .. } | Output::Dir { tmp, .. } => tmp.get_ref().path().parent(),
            Output::Stdout(_) => None,
        }
    }

    /// The temporary file, to write at any place (passes); none for standard output.
    fn seekable(&mut self) -> Result<&mut std::io::BufWriter<tempfile::NamedTempFile>> {
        match self {
            Output::File { tmp, .. } | Output::Dir { tmp, .. } => Ok(tmp),
            Output::Stdout(_) => anyhow::bail!("standard output cannot be written out of order"),
        }
    }

    /// Goes on writing at byte `at`.
    pub(super) fn seek_to(&mut self, at: u64) -> Result<()> {
        use std::io::Seek;
        self.seekable()?
            .seek(std::io::SeekFrom::Start(at))
            .context("writing the output file")?;
        Ok(())
    }

    /// Writes a spooled run at byte `at`; writing goes on after it.
    pub(super) fn place(&mut self, spool: super::pieces::Spool, at: u64) -> Result<()> {
        spool.copy_into(self.seekable()?, at)
    }

    /// Cuts the temporary file to `size` bytes and hashes it: the stream put together from
    /// passes.
    pub(super) fn assembled_sha256(&mut self, size: u64) -> Result<[u8; 32]> {
        use sha2::{Digest, Sha256};
        use std::io::{Read, Seek};
        let tmp = self.seekable()?;
        tmp.flush().context("writing the output file")?;
        let f = tmp.get_mut().as_file_mut();
        f.set_len(size).context("writing the output file")?;
        f.seek(std::io::SeekFrom::Start(0))
            .context("reading the output file back")?;
        let mut hash = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f.read(&mut buf).context("reading the output file back")?;
            if n == 0 {
                break;
            }
            hash.update(buf.get(..n).unwrap_or_default());
        }
        let mut out = [0u8; 32];
        out.copy_from_slice(&hash.finalize());
        Ok(out)
    }

    /// Keeps the data: renames the temporary file into place; for `-D DIR`, writes the tree
    /// the source announced (`manifest.tree`) into DIR, or renames the file to DIR/its name.
    /// `force` replaces what exists.
    pub(super) fn commit(
        self,
        manifest: Option<&pgm_wire::Manifest>,
        force: bool,
        symlinks: Symlinks,
    ) -> Result<Committed> {
        match self {
            Output::File { tmp, dest } => {
                finish(tmp)?
                    .persist(&dest)
                    .map_err(|e| e.error)
                    .with_context(|| format!("renaming the output into {}", dest.display()))?;
                Ok(Committed::File(dest))
            }
            Output::Dir { tmp, dir } => {
                let tmp = finish(tmp)?;
                if manifest.is_some_and(|m| m.tree) {
                    let written = super::tree::extract(tmp.path(), &dir, force, symlinks)?;
                    return Ok(Committed::Tree(dir, written));
                }
                let name = plain_name(manifest.map_or("", |m| m.name.as_str()))?;
                let dest = dir.join(name);
                // The name is the source's: printed with its control characters escaped.
                let shown = || printable(&dest.to_string_lossy()).into_owned();
                if !force && std::fs::symlink_metadata(&dest).is_ok() {
                    anyhow::bail!("{} exists: pass --force to replace it", shown());
                }
                tmp.persist(&dest)
                    .map_err(|e| e.error)
                    .with_context(|| format!("renaming the output into {}", shown()))?;
                Ok(Committed::File(dest))
            }
            Output::Stdout(mut s) => {
                s.flush().context("writing to standard output")?;
                Ok(Committed::Stdout)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use super::*;

    #[test]
    fn a_name_from_the_manifest_is_printed_with_its_control_characters_escaped() {
        let d = tempfile::tempdir().unwrap();
        let name = "x\x1b]0;pwned\x07\x1b[2J";
        std::fs::write(d.path().join(name), b"mine").unwrap();
        let manifest = pgm_wire::Manifest {
            name: name.into(),
            ..Default::default()
        };
        let out = Output::open_dir(d.path()).unwrap();
        let Err(e) = out.commit(Some(&manifest), false, Symlinks::Skip) else {
            panic!("an existing file is not replaced without --force");
        };
        let msg = format!("{e:#}");
        assert!(!msg.chars().any(char::is_control), "{msg:?}");
        assert!(msg.contains("x\\x1b]0;pwned\\x07\\x1b[2J exists"), "{msg}");
        assert_eq!(std::fs::read(d.path().join(name)).unwrap(), b"mine");
    }
}
