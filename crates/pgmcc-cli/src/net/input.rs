//! What `pgmcc send` reads: standard input, one file, or a tree sent as one archive.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// What `pgmcc send` reads.
pub(super) enum Input {
    /// Standard input (`-`).
    Stdin,
    /// One file.
    File(PathBuf),
    /// A directory, or several inputs, as one archive: the first input and the walked tree.
    Tree(PathBuf, super::tree::Tree),
}

impl Input {
    /// `-` alone, one file, or a tree.
    pub(super) fn open(inputs: &[PathBuf]) -> Result<Input> {
        let first = inputs.first().context("nothing to send")?;
        if inputs.iter().any(|p| p == Path::new("-")) {
            if inputs.len() > 1 {
                bail!("`-` (standard input) cannot be sent together with files");
            }
            return Ok(Input::Stdin);
        }
        let meta =
            std::fs::metadata(first).with_context(|| format!("reading {}", first.display()))?;
        if inputs.len() == 1 && !meta.is_dir() {
            return Ok(Input::File(first.clone()));
        }
        let tree = super::tree::Tree::scan(inputs)?;
        Ok(Input::Tree(first.clone(), tree))
    }

    /// Bytes it holds: a file's length (`meta`, its metadata), a tree's archive size;
    /// unknown for standard input.
    pub(super) fn size(&self, meta: Option<&std::fs::Metadata>) -> Option<u64> {
        match self {
            Input::Tree(_, t) => Some(t.size()),
            _ => meta.map(std::fs::Metadata::len),
        }
    }

    /// Its metadata (none for standard input).
    pub(super) fn metadata(&self) -> Result<Option<std::fs::Metadata>> {
        match self {
            Input::Stdin => Ok(None),
            Input::File(p) | Input::Tree(p, _) => std::fs::metadata(p)
                .map(Some)
                .with_context(|| format!("reading {}", p.display())),
        }
    }

    /// The manifest's name: the file's or directory's, a description of a file set, or
    /// nothing for standard input.
    fn name(&self, inputs: usize) -> String {
        let base = |p: &Path| {
            super::tree::input_name(p)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        match self {
            Input::Stdin => String::new(),
            Input::File(p) => base(p),
            Input::Tree(p, _) if inputs == 1 => base(p),
            Input::Tree(p, t) => {
                format!("{} and {} more ({} files)", base(p), inputs - 1, t.files())
            }
        }
    }

    /// What the session announces on every SPM (`meta`, its metadata; `inputs`, how many
    /// were given): the SHA-256 is added at the end.
    pub(super) fn manifest(
        &self,
        meta: Option<&std::fs::Metadata>,
        inputs: usize,
    ) -> pgm_wire::Manifest {
        pgm_wire::Manifest {
            size: self.size(meta),
            mode: meta.map_or(0, |m| {
                use std::os::unix::fs::PermissionsExt;
                m.permissions().mode() & 0o7777
            }),
            mtime: meta
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs()),
            sha256: None,
            name: self.name(inputs),
            tree: matches!(self, Input::Tree(..)),
            another_pass: false,
        }
    }

    /// The bytes to send; for a tree, also the task writing its archive, whose result says
    /// whether the archive is whole once the reader reaches its end.
    pub(super) async fn reader(
        self,
    ) -> Result<(
        Box<dyn tokio::io::AsyncRead + Unpin + Send>,
        Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    )> {
        match self {
            Input::Stdin => Ok((Box::new(tokio::io::stdin()), None)),
            Input::File(p) => Ok((
                Box::new(
                    tokio::fs::File::open(&p)
                        .await
                        .with_context(|| format!("opening {}", p.display()))?,
                ),
                None,
            )),
            Input::Tree(_, tree) => {
                // The archive is written on a blocking thread into a bounded pipe (1 MiB).
                let (mut w, r) = tokio::io::duplex(1 << 20);
                let rt = tokio::runtime::Handle::current();
                let task = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
                    use std::io::Read;
                    use tokio::io::AsyncWriteExt;
                    let mut archive = tree.reader();
                    let mut buf = vec![0u8; 256 * 1024];
                    loop {
                        let n = archive.read(&mut buf)?;
                        if n == 0 {
                            return rt.block_on(w.shutdown());
                        }
                        rt.block_on(w.write_all(buf.get(..n).unwrap_or_default()))?;
                    }
                });
                Ok((Box::new(r), Some(task)))
            }
        }
    }
}
