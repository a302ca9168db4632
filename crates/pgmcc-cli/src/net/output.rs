//! Where `pgmcc recv` writes what it receives: a temporary file beside the destination,
//! renamed into place only when the whole stream arrived, or standard output.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

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
        // 0666 less the umask, as any file a program creates (tempfile's default is 0600).
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::Builder::new()
            .prefix(".pgmcc-recv-")
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(&dir)
            .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
        Ok(Output::File {
            tmp: std::io::BufWriter::with_capacity(BUF, tmp),
            dest: path.to_path_buf(),
        })
    }

    /// Appends `data` (buffered).
    pub(super) fn write(&mut self, data: &[u8]) -> Result<()> {
        match self {
            Output::File { tmp, .. } => tmp.write_all(data).context("writing the output file"),
            Output::Stdout(s) => s.write_all(data).context("writing to standard output"),
        }
    }

    /// Pushes buffered bytes out (to the pipe or terminal for standard output).
    pub(super) fn flush(&mut self) -> Result<()> {
        match self {
            Output::File { tmp, .. } => tmp.flush().context("writing the output file"),
            Output::Stdout(s) => s.flush().context("writing to standard output"),
        }
    }

    /// Keeps the data: renames the temporary file into place.
    pub(super) fn commit(self) -> Result<()> {
        match self {
            Output::File { tmp, dest } => {
                let tmp = tmp
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .context("writing the output file")?;
                tmp.as_file()
                    .sync_all()
                    .context("flushing the output file")?;
                tmp.persist(&dest)
                    .map_err(|e| e.error)
                    .with_context(|| format!("renaming the output into {}", dest.display()))?;
                Ok(())
            }
            Output::Stdout(mut s) => s.flush().context("writing to standard output"),
        }
    }
}
