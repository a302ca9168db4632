//! Directory trees and file sets (issue 22 item 2): `pgmcc send DIR|FILE...` sends them as one
//! tar archive (POSIX ustar, GNU records for long names, written with the `tar` crate), and
//! `pgmcc recv -D DIR` writes the tree it receives into DIR safely.
//!
//! The archive is the session's data stream, so everything that protects a file protects a
//! tree: the manifest's SHA-256 (and signed mode) covers the archive, and the receiver writes
//! nothing into DIR until the whole archive arrived and verified. Then it checks every entry
//! before it writes the first: paths stay inside DIR (no absolute paths, no `..`, never through
//! a symbolic link, whether DIR has it or the tree makes it), only files, directories and (if
//! asked) symbolic links are written, and nothing that exists is replaced without `--force`.
//! The tree is written into a temporary directory in DIR and moved into place only when all
//! of it was written ([`extract`]), so a failure leaves DIR as it was. Modes keep their
//! permission bits less the receiver's umask (no set-user-ID), modification times are kept.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};

mod extract;

/// What one entry of a tree is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Dir,
    File { size: u64 },
    Symlink { target: PathBuf },
}

/// One entry: where it is read from, its path in the archive, and its metadata.
#[derive(Debug, Clone)]
struct Entry {
    source: PathBuf,
    name: PathBuf,
    kind: Kind,
    mode: u32,
    mtime: u64,
}

/// The inputs of `pgmcc send` as the entries of one archive, walked once before sending so
/// that the archive's size is known (for the manifest and the progress bar).
#[derive(Debug)]
pub(crate) struct Tree {
    entries: Vec<Entry>,
    skipped: Vec<PathBuf>,
    size: u64,
}

impl Tree {
    /// Walks `inputs` (files, directories, symbolic links, which are sent as links and not
    /// followed). Each input appears in the archive under its own name, as `tar -C` would put
    /// it; directories are walked in name order. Devices, FIFOs and sockets are skipped and
    /// listed in [`Tree::skipped`].
    pub(crate) fn scan(inputs: &[PathBuf]) -> Result<Tree> {
        let mut entries = Vec::new();
        let mut skipped = Vec::new();
        let mut names = std::collections::HashSet::new();
        for input in inputs {
            let name = input_name(input)
                .map(PathBuf::from)
                .with_context(|| format!("{} has no name to send it under", input.display()))?;
            if !names.insert(name.clone()) {
                bail!(
                    "two inputs are named {}: receivers would get only one; rename one or send its parent directory",
                    name.display()
                );
            }
            // Depth-first, in name order; a stack instead of recursion.
            let mut stack = vec![(input.clone(), name)];
            while let Some((source, name)) = stack.pop() {
                let meta = std::fs::symlink_metadata(&source)
                    .with_context(|| format!("reading {}", source.display()))?;
                let ft = meta.file_type();
                let kind = if ft.is_dir() {
                    let mut children = std::fs::read_dir(&source)
                        .with_context(|| format!("reading directory {}", source.display()))?
                        .map(|e| e.map(|e| e.file_name()))
                        .collect::<io::Result<Vec<_>>>()
                        .with_context(|| format!("reading directory {}", source.display()))?;
                    children.sort();
                    for c in children.into_iter().rev() {
                        stack.push((source.join(&c), name.join(&c)));
                    }
                    Kind::Dir
                } else if ft.is_file() {
                    Kind::File { size: meta.len() }
                } else if ft.is_symlink() {
                    Kind::Symlink {
                        target: std::fs::read_link(&source)
                            .with_context(|| format!("reading link {}", source.display()))?,
                    }
                } else {
                    skipped.push(source);
                    continue;
                };
                entries.push(Entry {
                    source,
                    name,
                    kind,
                    mode: meta.mode() & 0o7777,
                    mtime: u64::try_from(meta.mtime()).unwrap_or(0),
                });
            }
        }
        let mut size = 2 * BLOCK;
        for e in &entries {
            size += header_bytes(e)?.len() as u64;
            if let Kind::File { size: n } = e.kind {
                size += n + padding(n);
            }
        }
        Ok(Tree {
            entries,
            skipped,
            size,
        })
    }

    /// Bytes in the archive.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Entries that are regular files.
    pub(crate) fn files(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e.kind, Kind::File { .. }))
            .count()
    }

    /// Inputs found inside the tree that are neither files, directories nor links (devices,
    /// FIFOs, sockets): not sent.
    pub(crate) fn skipped(&self) -> &[PathBuf] {
        &self.skipped
    }

    /// The archive, read as it is sent: files are opened one at a time.
    pub(crate) fn reader(self) -> TreeReader {
        TreeReader {
            entries: self.entries.into_iter(),
            queue: std::collections::VecDeque::new(),
            trailer: false,
        }
    }
}

/// The name an input is sent under: its last component, or for `.`, `..` and the like the
/// name of the directory it stands for (none for `/`, or if it cannot be resolved).
pub(crate) fn input_name(input: &Path) -> Option<std::ffi::OsString> {
    match input.file_name() {
        Some(n) => Some(n.to_os_string()),
        None => Some(input.canonicalize().ok()?.file_name()?.to_os_string()),
    }
}

/// Tar's block size.
const BLOCK: u64 = 512;

/// Zeros that round `n` up to whole blocks.
fn padding(n: u64) -> u64 {
    (BLOCK - n % BLOCK) % BLOCK
}

/// The header block(s) of `e`: its ustar header, preceded by GNU long-name records when its
/// path or link target is too long for ustar.
fn header_bytes(e: &Entry) -> io::Result<Vec<u8>> {
    let mut h = tar::Header::new_gnu();
    h.set_mode(e.mode);
    h.set_mtime(e.mtime);
    h.set_uid(0);
    h.set_gid(0);
    let mut b = tar::Builder::new(Vec::new());
    match &e.kind {
        Kind::Dir => {
            h.set_entry_type(tar::EntryType::Directory);
            h.set_size(0);
            b.append_data(&mut h, &e.name, io::empty())?;
        }
        Kind::File { size } => {
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(*size);
            // The body follows separately: only the header goes through the builder.
            b.append_data(&mut h, &e.name, io::empty())?;
        }
        Kind::Symlink { target } => {
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            b.append_link(&mut h, &e.name, target)?;
        }
    }
    // `into_inner` would add the archive's end (two zero blocks): take the bytes instead.
    Ok(std::mem::take(b.get_mut()))
}

/// A piece of the archive still to hand out.
enum Segment {
    /// Header or padding bytes, from the offset.
    Bytes(Vec<u8>, usize),
    /// A file's body: its reader, the bytes still owed, its path for errors.
    Body(File, u64, PathBuf),
}

/// The archive of a [`Tree`] as a byte stream (`std::io::Read`). A file that became shorter
/// since the walk is an error, not a short entry; one that grew is sent at its walked size.
pub(crate) struct TreeReader {
    entries: std::vec::IntoIter<Entry>,
    /// At most one entry's segments (header, body, padding).
    queue: std::collections::VecDeque<Segment>,
    trailer: bool,
}

impl Read for TreeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.queue.front_mut() {
                Some(Segment::Bytes(bytes, at)) => {
                    let src = bytes.get(*at..).unwrap_or_default();
                    if src.is_empty() {
                        self.queue.pop_front();
                        continue;
                    }
                    let n = src.len().min(buf.len());
                    buf[..n].copy_from_slice(&src[..n]);
                    *at += n;
                    return Ok(n);
                }
                Some(Segment::Body(file, left, path)) => {
                    if *left == 0 {
                        self.queue.pop_front();
                        continue;
                    }
                    let want = buf.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
                    let n = file.read(&mut buf[..want])?;
                    if n == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            format!(
                                "{} became shorter while it was being sent ({left} bytes missing)",
                                path.display()
                            ),
                        ));
                    }
                    *left -= n as u64;
                    return Ok(n);
                }
                None => {}
            }
            let Some(e) = self.entries.next() else {
                if self.trailer {
                    return Ok(0);
                }
                self.trailer = true;
                self.queue
                    .push_back(Segment::Bytes(vec![0; 2 * BLOCK as usize], 0));
                continue;
            };
            self.queue.push_back(Segment::Bytes(header_bytes(&e)?, 0));
            if let Kind::File { size } = e.kind {
                let file = File::open(&e.source).map_err(|err| {
                    io::Error::new(err.kind(), format!("opening {}: {err}", e.source.display()))
                })?;
                self.queue.push_back(Segment::Body(file, size, e.source));
                let pad = usize::try_from(padding(size)).unwrap_or(0);
                self.queue.push_back(Segment::Bytes(vec![0; pad], 0));
            }
        }
    }
}

/// What `pgmcc recv -D` does with the symbolic links of a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum Symlinks {
    /// Leave them out (and say so).
    #[default]
    Skip,
    /// Create them as they are, pointing wherever they point; nothing is ever written
    /// through one.
    Keep,
}

/// What a tree put into the destination.
#[derive(Debug, Default)]
pub(crate) struct Written {
    pub(crate) files: u64,
    pub(crate) dirs: u64,
    pub(crate) links: u64,
    /// Entries left out, each with the reason.
    pub(crate) skipped: Vec<String>,
}

/// An archive path as a path inside the destination, or why it may not be written.
fn inside(name: &Path) -> Result<PathBuf, &'static str> {
    let mut out = PathBuf::new();
    for c in name.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => return Err("it climbs out of the directory with `..`"),
            Component::RootDir | Component::Prefix(_) => return Err("it is an absolute path"),
        }
    }
    if out.as_os_str().is_empty() {
        return Err("its path is empty");
    }
    Ok(out)
}

/// A path as it is printed: control characters escaped (names come from the network).
fn shown(p: &Path) -> String {
    super::report::printable(&p.to_string_lossy()).into_owned()
}

/// Writes the tar archive at `archive` into `dest`, all of it or nothing. Every entry is
/// checked first, and nothing is written unless all of them can be: a path outside `dest`
/// or longer than the system opens fails the whole tree, so does an entry whose directory is
/// not a directory earlier in the tree (a symbolic link or file the tree made, or none), and
/// so does any entry that exists already unless `force` (then files and links are replaced;
/// directories are merged into). The tree is then written into a temporary directory inside
/// `dest` and moved into place only once all of it was written; on any failure `dest` is
/// left as it was. Files and directories get their permission bits less the umask, without
/// set-user-ID, set-group-ID or sticky bits (directories keep at least rwx for their owner,
/// so the tree can be written), and their modification times; symbolic links follow
/// `symlinks`; hard links, devices and FIFOs are left out and listed.
pub(crate) fn extract(
    archive: &Path,
    dest: &Path,
    force: bool,
    symlinks: Symlinks,
) -> Result<Written> {
    extract::extract_with(archive, dest, force, symlinks, &mut extract::rename_new)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    /// Everything `reader` produces.
    fn archive_of(inputs: &[PathBuf]) -> (u64, Vec<u8>) {
        let t = Tree::scan(inputs).unwrap();
        let size = t.size();
        let mut v = Vec::new();
        t.reader().read_to_end(&mut v).unwrap();
        (size, v)
    }

    /// An archive of raw entries (path bytes as given, no checks), as an attacker would
    /// write one.
    fn raw_archive(dir: &Path, entries: &[(&str, tar::EntryType, &[u8], &str)]) -> PathBuf {
        let mut b = tar::Builder::new(Vec::new());
        for (path, kind, data, link) in entries {
            let mut h = tar::Header::new_old();
            h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
            h.set_entry_type(*kind);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        let p = dir.join("raw.tar");
        std::fs::write(&p, b.into_inner().unwrap()).unwrap();
        p
    }

    #[test]
    fn a_tree_round_trips_through_its_archive() {
        let src = tempfile::tempdir().unwrap();
        let top = src.path().join("site");
        let deep = top.join("a").join("b".repeat(60)).join("c".repeat(60));
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(top.join("empty")).unwrap();
        std::fs::write(deep.join("long-path.txt"), b"far down").unwrap();
        std::fs::write(top.join("run.sh"), b"#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(top.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::write(top.join("zero"), b"").unwrap();
        let big: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(top.join("big.bin"), &big).unwrap();
        std::os::unix::fs::symlink("run.sh", top.join("link")).unwrap();
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        File::options()
            .write(true)
            .open(top.join("big.bin"))
            .unwrap()
            .set_modified(t)
            .unwrap();
        let extra = src.path().join("notes.txt");
        std::fs::write(&extra, b"beside").unwrap();

        let (size, bytes) = archive_of(&[top.clone(), extra]);
        assert_eq!(size, bytes.len() as u64, "announced size is the archive's");
        assert_eq!(size % 512, 0);
        let got = tempfile::tempdir().unwrap();
        let ar = got.path().join("in.tar");
        std::fs::write(&ar, &bytes).unwrap();
        let dest = got.path().join("out");
        std::fs::create_dir(&dest).unwrap();
        let w = extract(&ar, &dest, false, Symlinks::Keep).unwrap();
        assert_eq!((w.files, w.links), (5, 1), "{w:?}");
        assert!(w.skipped.is_empty());
        let d = dest.join("site");
        let rel = deep.strip_prefix(&top).unwrap();
        assert_eq!(
            std::fs::read(d.join(rel).join("long-path.txt")).unwrap(),
            b"far down"
        );
        assert_eq!(std::fs::read(d.join("big.bin")).unwrap(), big);
        assert_eq!(std::fs::read(d.join("zero")).unwrap(), b"");
        assert!(d.join("empty").is_dir());
        assert_eq!(std::fs::read(dest.join("notes.txt")).unwrap(), b"beside");
        assert_eq!(
            std::fs::read_link(d.join("link")).unwrap(),
            Path::new("run.sh")
        );
        let mode = std::fs::metadata(d.join("run.sh")).unwrap().mode();
        assert_eq!(mode & 0o700, 0o700, "the owner's execute bit is kept");
        assert_eq!(
            std::fs::metadata(d.join("big.bin"))
                .unwrap()
                .modified()
                .unwrap(),
            t
        );

        // Skipping links is the default, and says so.
        let dest2 = got.path().join("out2");
        let w = extract(&ar, &dest2, false, Symlinks::Skip).unwrap();
        assert_eq!((w.files, w.links), (5, 0));
        assert_eq!(w.skipped.len(), 1);
        assert!(w.skipped[0].contains("site/link"), "{:?}", w.skipped);
        assert!(std::fs::symlink_metadata(dest2.join("site/link")).is_err());
    }

    #[test]
    fn unsafe_paths_fail_the_whole_tree_and_write_nothing() {
        for bad in ["../escape.txt", "/tmp/pgmcc-absolute.txt", "a/../../up.txt"] {
            let d = tempfile::tempdir().unwrap();
            let ar = raw_archive(
                d.path(),
                &[
                    ("ok.txt", tar::EntryType::Regular, b"fine", ""),
                    (bad, tar::EntryType::Regular, b"evil", ""),
                ],
            );
            let dest = d.path().join("dest");
            std::fs::create_dir(&dest).unwrap();
            let e = extract(&ar, &dest, false, Symlinks::Keep).unwrap_err();
            let msg = format!("{e:#}");
            assert!(msg.contains("nothing was written"), "{msg}");
            assert!(!dest.join("ok.txt").exists(), "{bad}: nothing is written");
            assert!(!d.path().join("escape.txt").exists());
            assert!(!d.path().join("up.txt").exists());
        }
        assert!(!Path::new("/tmp/pgmcc-absolute.txt").exists());
    }

    #[test]
    fn a_link_in_the_tree_never_leads_a_write_outside() {
        let d = tempfile::tempdir().unwrap();
        let outside = d.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let target = outside.to_str().unwrap();
        let ar = raw_archive(
            d.path(),
            &[
                ("a", tar::EntryType::Symlink, b"", target),
                ("a/x", tar::EntryType::Regular, b"evil", ""),
            ],
        );
        let dest = d.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        assert!(extract(&ar, &dest, false, Symlinks::Keep).is_err());
        assert!(!outside.join("x").exists());
        // A link already in the destination is not followed either: an entry inside it
        // whose directory the tree does not hold is refused, and with the directory the
        // link is replaced by it (--force).
        let dest2 = d.path().join("dest2");
        std::fs::create_dir(&dest2).unwrap();
        std::os::unix::fs::symlink(&outside, dest2.join("a")).unwrap();
        let ar2 = raw_archive(d.path(), &[("a/x", tar::EntryType::Regular, b"evil", "")]);
        let e = extract(&ar2, &dest2, true, Symlinks::Keep).unwrap_err();
        assert!(format!("{e:#}").contains("not its directory a"), "{e:#}");
        assert!(!outside.join("x").exists());
        let ar3 = raw_archive(
            d.path(),
            &[
                ("a", tar::EntryType::Directory, b"", ""),
                ("a/x", tar::EntryType::Regular, b"evil", ""),
            ],
        );
        let e = extract(&ar3, &dest2, false, Symlinks::Keep).unwrap_err();
        assert!(format!("{e:#}").contains("--force"), "{e:#}");
        extract(&ar3, &dest2, true, Symlinks::Keep).unwrap();
        assert!(std::fs::symlink_metadata(dest2.join("a")).unwrap().is_dir());
        assert_eq!(std::fs::read(dest2.join("a/x")).unwrap(), b"evil");
        assert!(!outside.join("x").exists());
        // Skipped, the link is not a directory of the tree either: nothing is written.
        let ar = raw_archive(
            d.path(),
            &[
                ("a", tar::EntryType::Symlink, b"", target),
                ("a/x", tar::EntryType::Regular, b"evil", ""),
            ],
        );
        let dest3 = d.path().join("dest3");
        let e = extract(&ar, &dest3, false, Symlinks::Skip).unwrap_err();
        assert!(format!("{e:#}").contains("nothing was written"), "{e:#}");
        assert!(std::fs::symlink_metadata(dest3.join("a")).is_err());
        assert!(!outside.join("x").exists());
    }

    #[test]
    fn existing_entries_are_kept_without_force_and_replaced_with_it() {
        let d = tempfile::tempdir().unwrap();
        let ar = raw_archive(
            d.path(),
            &[
                ("new.txt", tar::EntryType::Regular, b"new", ""),
                ("same.txt", tar::EntryType::Regular, b"theirs", ""),
            ],
        );
        let dest = d.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        std::fs::write(dest.join("same.txt"), b"mine").unwrap();
        let e = extract(&ar, &dest, false, Symlinks::Skip).unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("--force") && msg.contains("same.txt"), "{msg}");
        assert_eq!(std::fs::read(dest.join("same.txt")).unwrap(), b"mine");
        assert!(!dest.join("new.txt").exists(), "nothing is written");
        extract(&ar, &dest, true, Symlinks::Skip).unwrap();
        assert_eq!(std::fs::read(dest.join("same.txt")).unwrap(), b"theirs");
        assert_eq!(std::fs::read(dest.join("new.txt")).unwrap(), b"new");
    }

    #[test]
    fn devices_fifos_and_hard_links_are_left_out_and_listed() {
        let d = tempfile::tempdir().unwrap();
        let ar = raw_archive(
            d.path(),
            &[
                ("dev", tar::EntryType::Char, b"", ""),
                ("fifo", tar::EntryType::Fifo, b"", ""),
                ("hard", tar::EntryType::Link, b"", "/etc/passwd"),
                ("file", tar::EntryType::Regular, b"ok", ""),
            ],
        );
        let dest = d.path().join("dest");
        let w = extract(&ar, &dest, false, Symlinks::Keep).unwrap();
        assert_eq!(w.files, 1);
        assert_eq!(w.skipped.len(), 3, "{:?}", w.skipped);
        for n in ["dev", "fifo", "hard"] {
            assert!(std::fs::symlink_metadata(dest.join(n)).is_err(), "{n}");
        }
    }

    #[test]
    fn set_id_bits_are_dropped() {
        let d = tempfile::tempdir().unwrap();
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o6755);
        h.set_size(2);
        b.append_data(&mut h, "suid", &b"hi"[..]).unwrap();
        let ar = d.path().join("s.tar");
        std::fs::write(&ar, b.into_inner().unwrap()).unwrap();
        let dest = d.path().join("dest");
        extract(&ar, &dest, false, Symlinks::Skip).unwrap();
        let mode = std::fs::metadata(dest.join("suid")).unwrap().mode();
        assert_eq!(mode & 0o7000, 0);
    }

    /// Every path under `dir` (links not followed) with what it holds, to compare a
    /// directory before and after.
    fn listing(dir: &Path) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let m = std::fs::symlink_metadata(&p).unwrap();
                let what = if m.is_dir() {
                    stack.push(p.clone());
                    "dir".to_string()
                } else if m.file_type().is_symlink() {
                    format!("link {}", std::fs::read_link(&p).unwrap().display())
                } else {
                    format!("file {:?}", std::fs::read(&p).unwrap())
                };
                out.push((p.strip_prefix(dir).unwrap().to_path_buf(), what));
            }
        }
        out.sort();
        out
    }

    #[test]
    fn a_link_earlier_in_the_tree_fails_it_before_anything_is_written() {
        let d = tempfile::tempdir().unwrap();
        let outside = d.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let ar = raw_archive(
            d.path(),
            &[
                ("ok.txt", tar::EntryType::Regular, b"fine", ""),
                ("a", tar::EntryType::Symlink, b"", outside.to_str().unwrap()),
                ("a/x", tar::EntryType::Regular, b"evil", ""),
            ],
        );
        let dest = d.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        std::fs::write(dest.join("mine.txt"), b"mine").unwrap();
        let before = listing(&dest);
        for force in [false, true] {
            let e = extract(&ar, &dest, force, Symlinks::Keep).unwrap_err();
            let msg = format!("{e:#}");
            assert!(
                msg.contains("symbolic link") && msg.contains("nothing was written"),
                "{msg}"
            );
            assert_eq!(listing(&dest), before, "force {force}: DIR is unchanged");
            assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
        }
    }

    /// An archive of `dirs` nested directories named `name`, each an entry of its own, and a
    /// file at the bottom (GNU long-name records for the long paths).
    fn deep_archive(dir: &Path, name: &str, dirs: usize) -> PathBuf {
        let mut b = tar::Builder::new(Vec::new());
        let mut path = PathBuf::new();
        for _ in 0..dirs {
            path.push(name);
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(0o755);
            h.set_size(0);
            b.append_data(&mut h, &path, io::empty()).unwrap();
        }
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_size(6);
        b.append_data(&mut h, path.join("bottom"), &b"bottom"[..])
            .unwrap();
        let p = dir.join("deep.tar");
        std::fs::write(&p, b.into_inner().unwrap()).unwrap();
        p
    }

    #[test]
    fn a_path_longer_than_the_system_opens_leaves_dir_unchanged() {
        let d = tempfile::tempdir().unwrap();
        // 50 levels of 99-byte names: a 5,000-byte path.
        let ar = deep_archive(d.path(), &"d".repeat(99), 50);
        let dest = d.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        std::fs::write(dest.join("mine.txt"), b"mine").unwrap();
        let before = listing(&dest);
        let e = extract(&ar, &dest, false, Symlinks::Keep).unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("nothing was written"), "{msg}");
        assert_eq!(listing(&dest), before, "DIR is unchanged");
    }

    #[test]
    fn a_write_that_fails_part_way_leaves_dir_unchanged() {
        let d = tempfile::tempdir().unwrap();
        // The last name is longer than a file system takes (255 bytes): the check cannot
        // know, creating it fails after the others were written.
        let long = format!("sub/{}", "n".repeat(300));
        let mut b = tar::Builder::new(Vec::new());
        for (path, kind, data) in [
            ("ok.txt", tar::EntryType::Regular, &b"theirs"[..]),
            ("sub", tar::EntryType::Directory, &b""[..]),
            ("sub/in.txt", tar::EntryType::Regular, &b"in"[..]),
            (long.as_str(), tar::EntryType::Regular, &b"never"[..]),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_mode(0o755);
            h.set_size(data.len() as u64);
            b.append_data(&mut h, path, data).unwrap();
        }
        let ar = d.path().join("fails.tar");
        std::fs::write(&ar, b.into_inner().unwrap()).unwrap();
        let dest = d.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        std::fs::write(dest.join("ok.txt"), b"mine").unwrap();
        let before = listing(&dest);
        for force in [false, true] {
            let e = extract(&ar, &dest, force, Symlinks::Keep).unwrap_err();
            let msg = format!("{e:#}");
            assert!(msg.contains("nothing was written"), "{msg}");
            assert_eq!(listing(&dest), before, "force {force}: DIR is unchanged");
        }
    }

    #[test]
    fn an_archive_that_ends_inside_a_file_leaves_dir_unchanged() {
        let d = tempfile::tempdir().unwrap();
        let mut b = tar::Builder::new(Vec::new());
        for (path, size) in [("first.txt", 5u64), ("cut.bin", 100_000)] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Regular);
            h.set_mode(0o644);
            h.set_size(size);
            let data = vec![7u8; size as usize];
            b.append_data(&mut h, path, &data[..]).unwrap();
        }
        let mut bytes = b.into_inner().unwrap();
        bytes.truncate(512 * 3 + 40_000);
        let ar = d.path().join("cut.tar");
        std::fs::write(&ar, bytes).unwrap();
        let dest = d.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        let e = extract(&ar, &dest, false, Symlinks::Keep).unwrap_err();
        assert!(format!("{e:#}").contains("nothing was written"), "{e:#}");
        assert_eq!(listing(&dest), vec![], "DIR is unchanged");
    }

    /// An archive of `entries` (GNU headers, mode 0755).
    fn gnu_archive(dir: &Path, file: &str, entries: &[(&str, tar::EntryType, &[u8])]) -> PathBuf {
        let mut b = tar::Builder::new(Vec::new());
        for (path, kind, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_mode(0o755);
            h.set_size(data.len() as u64);
            b.append_data(&mut h, path, *data).unwrap();
        }
        let p = dir.join(file);
        std::fs::write(&p, b.into_inner().unwrap()).unwrap();
        p
    }

    #[test]
    fn a_failed_move_into_place_is_undone() {
        let d = tempfile::tempdir().unwrap();
        let ar = gnu_archive(
            d.path(),
            "moves.tar",
            &[
                ("new.txt", tar::EntryType::Regular, b"new"),
                ("same.txt", tar::EntryType::Regular, b"theirs"),
                ("d", tar::EntryType::Directory, b""),
                ("d/in.txt", tar::EntryType::Regular, b"in"),
                ("e", tar::EntryType::Directory, b""),
                ("e/deeper.txt", tar::EntryType::Regular, b"deeper"),
            ],
        );
        let dest = d.path().join("dest");
        std::fs::create_dir_all(dest.join("d")).unwrap();
        std::fs::write(dest.join("same.txt"), b"mine").unwrap();
        std::fs::write(dest.join("d/old.txt"), b"old").unwrap();
        let before = listing(&dest);
        // Each rename in turn fails: what was moved is put back, DIR is as it was.
        let mut fail_at = 1;
        loop {
            let mut calls = 0;
            let mut put = |from: &Path, to: &Path| {
                calls += 1;
                if calls == fail_at {
                    return Err(io::Error::other("injected"));
                }
                extract::rename_new(from, to)
            };
            match extract::extract_with(&ar, &dest, true, Symlinks::Keep, &mut put) {
                Ok(w) => {
                    assert_eq!((w.files, w.dirs), (4, 2));
                    break;
                }
                Err(e) => {
                    let msg = format!("{e:#}");
                    assert!(
                        msg.contains("injected") && msg.contains("put back"),
                        "{msg}"
                    );
                    assert_eq!(listing(&dest), before, "failing rename {fail_at}");
                }
            }
            fail_at += 1;
        }
        // new.txt, same.txt aside and in, d/in.txt, e: five renames.
        assert_eq!(fail_at, 6);
        let after: Vec<_> = listing(&dest).into_iter().map(|(p, _)| p).collect();
        let want = [
            "d",
            "d/in.txt",
            "d/old.txt",
            "e",
            "e/deeper.txt",
            "new.txt",
            "same.txt",
        ];
        assert_eq!(after, want.map(PathBuf::from));
        assert_eq!(std::fs::read(dest.join("same.txt")).unwrap(), b"theirs");

        // Renames that cannot be undone either: the temporary directory is kept, with what
        // DIR had in it, and the error says where.
        let dest = d.path().join("dest2");
        std::fs::create_dir(&dest).unwrap();
        std::fs::write(dest.join("same.txt"), b"mine").unwrap();
        let mut calls = 0;
        let mut put = |from: &Path, to: &Path| {
            calls += 1;
            if calls >= 3 {
                return Err(io::Error::other("injected"));
            }
            extract::rename_new(from, to)
        };
        let e = extract::extract_with(&ar, &dest, true, Symlinks::Keep, &mut put).unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("could not be undone"), "{msg}");
        let kept = std::fs::read_dir(&dest)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains(".pgmcc-tree-"))
            .unwrap();
        assert!(msg.contains(&*kept.to_string_lossy()), "{msg}");
        let aside: Vec<_> = std::fs::read_dir(&kept)
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).ok())
            .collect();
        assert!(aside.contains(&Some(b"mine".to_vec())), "{aside:?}");
    }

    #[test]
    fn a_deep_tree_that_fails_is_removed_whole() {
        let d = tempfile::tempdir().unwrap();
        let mut b = tar::Builder::new(Vec::new());
        let mut path = PathBuf::new();
        for _ in 0..1500 {
            path.push("a");
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(0o755);
            h.set_size(0);
            b.append_data(&mut h, &path, io::empty()).unwrap();
        }
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_size(1);
        b.append_data(&mut h, path.join("n".repeat(300)), &b"x"[..])
            .unwrap();
        let ar = d.path().join("deep-fails.tar");
        std::fs::write(&ar, b.into_inner().unwrap()).unwrap();
        let dest = d.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        let e = extract(&ar, &dest, false, Symlinks::Keep).unwrap_err();
        assert!(format!("{e:#}").contains("nothing was written"), "{e:#}");
        let left = listing(&dest);
        assert!(
            left.is_empty(),
            "the temporary directory is gone, not {} paths from {:?}",
            left.len(),
            left.first()
        );
    }

    #[test]
    fn a_deep_tree_is_written_in_time_linear_in_its_size() {
        let d = tempfile::tempdir().unwrap();
        let ar = deep_archive(d.path(), "a", 1500);
        let dest = d.path().join("dest");
        let started = std::time::Instant::now();
        let w = extract(&ar, &dest, false, Symlinks::Keep).unwrap();
        let took = started.elapsed();
        assert_eq!((w.dirs, w.files), (1500, 1));
        let bottom: PathBuf = std::iter::repeat_n("a", 1500).collect();
        assert_eq!(
            std::fs::read(dest.join(bottom).join("bottom")).unwrap(),
            b"bottom"
        );
        assert!(
            took < Duration::from_secs(2),
            "1,500 nested directories took {took:?}"
        );
    }

    #[test]
    fn names_from_the_tree_are_printed_with_their_control_characters_escaped() {
        let d = tempfile::tempdir().unwrap();
        let ar = raw_archive(
            d.path(),
            &[
                ("fifo\x1b]0;pwned\x07", tar::EntryType::Fifo, b"", ""),
                ("dev\x1b[2J\u{9b}", tar::EntryType::Char, b"", ""),
            ],
        );
        let dest = d.path().join("dest");
        let w = extract(&ar, &dest, false, Symlinks::Keep).unwrap();
        assert_eq!(w.skipped.len(), 2);
        for s in &w.skipped {
            assert!(!s.chars().any(char::is_control), "{s:?}");
        }
        assert!(
            w.skipped[0].contains("fifo\\x1b]0;pwned\\x07"),
            "{:?}",
            w.skipped
        );
        assert!(
            w.skipped[1].contains("dev\\x1b[2J\\u{9b}"),
            "{:?}",
            w.skipped
        );
        let bad = raw_archive(
            d.path(),
            &[("../\x1b[2J", tar::EntryType::Regular, b"x", "")],
        );
        let e = format!(
            "{:#}",
            extract(&bad, &dest, false, Symlinks::Keep).unwrap_err()
        );
        assert!(!e.chars().any(char::is_control), "{e:?}");
        assert!(e.contains("../\\x1b[2J"), "{e}");
    }

    #[test]
    fn a_time_out_of_range_is_left_out_not_a_panic() {
        let d = tempfile::tempdir().unwrap();
        let mut b = tar::Builder::new(Vec::new());
        for (path, kind, data) in [
            ("d", tar::EntryType::Directory, &b""[..]),
            ("d/f", tar::EntryType::Regular, &b"data"[..]),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_mode(0o755);
            h.set_size(data.len() as u64);
            h.set_mtime(u64::MAX);
            b.append_data(&mut h, path, data).unwrap();
        }
        let ar = d.path().join("times.tar");
        std::fs::write(&ar, b.into_inner().unwrap()).unwrap();
        let dest = d.path().join("dest");
        let w = extract(&ar, &dest, false, Symlinks::Keep).unwrap();
        assert_eq!((w.files, w.dirs), (1, 1));
        assert_eq!(std::fs::read(dest.join("d/f")).unwrap(), b"data");
    }

    #[test]
    fn a_file_that_shrinks_while_it_is_sent_is_an_error_not_a_short_entry() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("f"), vec![1u8; 10_000]).unwrap();
        let t = Tree::scan(std::slice::from_ref(&dir)).unwrap();
        std::fs::write(dir.join("f"), vec![1u8; 10]).unwrap();
        let mut v = Vec::new();
        let e = t.reader().read_to_end(&mut v).unwrap_err();
        assert!(e.to_string().contains("became shorter"), "{e}");
    }

    #[test]
    fn two_inputs_with_one_name_are_refused() {
        let d = tempfile::tempdir().unwrap();
        for sub in ["x", "y"] {
            std::fs::create_dir_all(d.path().join(sub).join("same")).unwrap();
        }
        let e = Tree::scan(&[d.path().join("x/same"), d.path().join("y/same")]).unwrap_err();
        assert!(e.to_string().contains("two inputs are named same"), "{e}");
    }
}
