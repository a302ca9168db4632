//! `pgmcc recv -D DIR` writing a received tree into DIR, all of it or nothing.
//!
//! The archive is read twice. The first pass checks every entry and plans where each goes,
//! writing nothing: paths stay inside DIR, every entry's directory is a directory the tree
//! made earlier (never a link or file the tree made, never something DIR holds that is not a
//! directory), and nothing that exists is in the way unless `--force`. The second pass writes
//! the tree into a temporary directory inside DIR (the same file system), each entry created
//! relative to its directory's open descriptor, never through a link. Only when all of it
//! was written are its entries moved into DIR, one rename each (without replacing anything
//! not planned); an entry DIR already has is moved aside first (`--force`) and removed at the
//! end. On any failure what was moved is put back and the temporary directory removed, so
//! DIR holds what it held before.
//!
//! Work and memory are linear in the archive: each entry costs one lookup of its directory
//! in a table of the directories the tree made, at most one look at DIR, and a bounded
//! number of system calls.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use rustix::fs::{Mode, OFlags};

use super::{inside, shown, Symlinks, Written};

/// The longest path the system opens, with its terminating NUL (Linux's `PATH_MAX`).
const PATH_MAX: usize = 4096;

/// The temporary directory's name: this prefix and [`STAGE_RANDOM`] random characters. The
/// tree is written into its subdirectory [`STAGE_TREE`]; entries DIR had, moved aside, are
/// kept beside it under numbers until the end.
const STAGE_PREFIX: &str = ".pgmcc-tree-";
const STAGE_RANDOM: usize = 6;
const STAGE_TREE: &str = "t";

/// What the temporary directory adds in front of a path in DIR: "/.pgmcc-tree-XXXXXX/t".
const STAGE_OVERHEAD: usize = 1 + STAGE_PREFIX.len() + STAGE_RANDOM + 1 + STAGE_TREE.len();

/// The tree's root, DIR itself.
const ROOT: usize = 0;

/// What the tree makes at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Made {
    Dir,
    File,
    Link,
}

/// What DIR holds at a path before the tree is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum There {
    Nothing,
    Dir,
    Other,
}

/// A path the tree makes.
#[derive(Debug)]
struct Node {
    /// The path inside DIR (empty for [`ROOT`]).
    rel: Rc<Path>,
    parent: usize,
    made: Made,
    there: There,
    /// A directory's modification time, set once everything inside it was written.
    mtime: Option<SystemTime>,
}

impl Node {
    /// A directory of the tree that merges into one DIR has (DIR itself always does):
    /// its entries are moved into place one by one.
    fn merges(&self) -> bool {
        self.made == Made::Dir && self.there == There::Dir
    }
}

/// The first pass: what every entry of the archive makes, checked against the tree itself
/// and against DIR.
#[derive(Debug)]
struct Plan {
    nodes: Vec<Node>,
    /// The node of each path the tree makes.
    index: HashMap<Rc<Path>, usize>,
    /// For each entry of the archive, in order: the node it makes, none if it is left out.
    entries: Vec<Option<usize>>,
    /// Nodes whose path DIR has already (as something a directory does not merge into).
    in_the_way: Vec<usize>,
    written: Written,
}

/// `path` at `base` (`base` itself for the empty path).
fn at(base: &Path, rel: &Path) -> PathBuf {
    if rel.as_os_str().is_empty() {
        base.to_path_buf()
    } else {
        base.join(rel)
    }
}

/// The time in a tar header, if it is one `SystemTime` holds.
fn header_time(h: &tar::Header) -> Option<SystemTime> {
    UNIX_EPOCH.checked_add(Duration::from_secs(h.mtime().ok()?))
}

/// The permission bits in a tar header (no set-user-ID, set-group-ID or sticky bit).
fn header_mode(h: &tar::Header) -> u32 {
    h.mode().unwrap_or(0o644) & 0o777
}

/// `e`'s path, or why it may not be written.
fn entry_path(e: &tar::Entry<'_, File>) -> Result<PathBuf> {
    let name = e
        .path()
        .context("the received archive has an unreadable path")?
        .into_owned();
    inside(&name).map_err(|why| {
        anyhow::anyhow!(
            "the tree holds {}, which is not written: {why}; nothing was written",
            shown(&name)
        )
    })
}

impl Plan {
    /// Reads the headers of the archive at `archive` (its files' data is skipped) and plans
    /// writing it into `dest`.
    fn read(archive: &Path, dest: &Path, symlinks: Symlinks) -> Result<Plan> {
        let there = match std::fs::metadata(dest) {
            Ok(m) if m.is_dir() => There::Dir,
            _ => There::Nothing,
        };
        let root: Rc<Path> = Rc::from(Path::new(""));
        let mut plan = Plan {
            nodes: vec![Node {
                rel: root.clone(),
                parent: ROOT,
                made: Made::Dir,
                there,
                mtime: None,
            }],
            index: HashMap::from([(root, ROOT)]),
            entries: Vec::new(),
            in_the_way: Vec::new(),
            written: Written::default(),
        };
        let file = File::open(archive).context("reading the received archive")?;
        let mut a = tar::Archive::new(file);
        for e in a
            .entries_with_seek()
            .context("reading the received archive")?
        {
            let e = e.context("the received data is not a valid tar archive")?;
            let rel = entry_path(&e)?;
            let made = match e.header().entry_type() {
                tar::EntryType::Directory => Made::Dir,
                tar::EntryType::Regular | tar::EntryType::Continuous => Made::File,
                tar::EntryType::Symlink if symlinks == Symlinks::Keep => {
                    if e.link_name().ok().flatten().is_none() {
                        bail!(
                            "the tree holds {}, a symbolic link without a readable target; nothing was written",
                            shown(&rel)
                        );
                    }
                    Made::Link
                }
                tar::EntryType::Symlink => {
                    plan.leave_out(format!(
                        "{} (a symbolic link; pass --symlinks keep to create it)",
                        shown(&rel)
                    ));
                    continue;
                }
                other => {
                    plan.leave_out(format!(
                        "{} ({other:?}: only files, directories and symbolic links are written)",
                        shown(&rel)
                    ));
                    continue;
                }
            };
            let id = plan.add(dest, rel, made, header_time(e.header()))?;
            plan.entries.push(Some(id));
            let w = &mut plan.written;
            match made {
                Made::Dir => w.dirs += 1,
                Made::File => w.files += 1,
                Made::Link => w.links += 1,
            }
        }
        Ok(plan)
    }

    /// An entry that is not written, and why.
    fn leave_out(&mut self, why: String) {
        self.written.skipped.push(why);
        self.entries.push(None);
    }

    /// The node `rel` makes, checked: its directory is one the tree made earlier, and what
    /// DIR holds at `rel` (looked at only inside directories DIR has) is not in its way.
    fn add(
        &mut self,
        dest: &Path,
        rel: PathBuf,
        made: Made,
        mtime: Option<SystemTime>,
    ) -> Result<usize> {
        let len = dest.as_os_str().len() + STAGE_OVERHEAD + 1 + rel.as_os_str().len();
        if len >= PATH_MAX {
            bail!(
                "the tree holds a path of {} bytes ({}...), longer than the system opens ({PATH_MAX} bytes with DIR and a temporary directory in it); nothing was written",
                rel.as_os_str().len(),
                shown(&rel).chars().take(60).collect::<String>()
            );
        }
        let up = rel.parent().unwrap_or(Path::new(""));
        let Some(&parent) = self.index.get(up) else {
            bail!(
                "the tree holds {}, but not its directory {} before it; nothing was written",
                shown(&rel),
                shown(up)
            );
        };
        let p = &self.nodes[parent];
        let what = match p.made {
            Made::Dir => None,
            Made::File => Some("a file"),
            Made::Link => Some("a symbolic link"),
        };
        if let Some(what) = what {
            bail!(
                "the tree holds {}, inside {}, which is {what} earlier in the tree: nothing is written through a link or into a file; nothing was written",
                shown(&rel),
                shown(up)
            );
        }
        if let Some(&id) = self.index.get(rel.as_path()) {
            // The same path twice: directories merge, anything else is refused.
            let n = &mut self.nodes[id];
            if made == Made::Dir && n.made == Made::Dir {
                n.mtime = mtime;
                return Ok(id);
            }
            bail!("the tree holds {} twice; nothing was written", shown(&rel));
        }
        // Only inside a directory DIR has can DIR hold anything at `rel`.
        let there = if p.there == There::Dir {
            let target = dest.join(&rel);
            match std::fs::symlink_metadata(&target) {
                Ok(m) if m.is_dir() => There::Dir,
                Ok(_) => There::Other,
                Err(e) if e.kind() == io::ErrorKind::NotFound => There::Nothing,
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("reading {}; nothing was written", shown(&target))
                    })
                }
            }
        } else {
            There::Nothing
        };
        if there == There::Dir && made != Made::Dir {
            bail!(
                "{} is a directory where the tree has a file or link; nothing was written",
                shown(&dest.join(&rel))
            );
        }
        let id = self.nodes.len();
        if there == There::Other {
            self.in_the_way.push(id);
        }
        let rel: Rc<Path> = Rc::from(rel);
        self.index.insert(rel.clone(), id);
        self.nodes.push(Node {
            rel,
            parent,
            made,
            there,
            mtime,
        });
        Ok(id)
    }
}

/// Flags of a directory opened to create entries in it.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The second pass: the tree written into the temporary directory `root`.
struct Stage<'a> {
    plan: &'a Plan,
    root: PathBuf,
    root_fd: OwnedFd,
    /// Nodes created in `root`.
    staged: Vec<bool>,
    /// The directory last written into: its node and an open descriptor.
    open: (usize, OwnedFd),
}

impl<'a> Stage<'a> {
    /// Creates `root` (which must not exist) for `plan`'s tree.
    fn new(plan: &'a Plan, root: PathBuf) -> Result<Stage<'a>> {
        std::fs::create_dir(&root).with_context(|| format!("creating {}", shown(&root)))?;
        let opened = || {
            rustix::fs::open(&root, dir_flags(), Mode::empty())
                .map_err(io::Error::from)
                .with_context(|| format!("opening {}", shown(&root)))
        };
        let (root_fd, open) = (opened()?, opened()?);
        let mut staged = vec![false; plan.nodes.len()];
        staged[ROOT] = true;
        Ok(Stage {
            plan,
            root,
            root_fd,
            staged,
            open: (ROOT, open),
        })
    }

    /// Writes every entry of the archive at `archive`.
    fn write_all(&mut self, archive: &Path) -> Result<()> {
        let file = File::open(archive).context("reading the received archive")?;
        let mut a = tar::Archive::new(file);
        let mut planned = self.plan.entries.iter();
        for e in a.entries().context("reading the received archive")? {
            let mut e = e.context("the received data is not a valid tar archive")?;
            let Some(step) = planned.next() else {
                bail!("the received archive changed while it was written");
            };
            if let Some(id) = *step {
                if !self.staged[id] {
                    // Marked first: a file that fails half way is removed with the rest.
                    self.staged[id] = true;
                    self.write(&mut e, id)?;
                }
            }
        }
        if planned.next().is_some() {
            bail!("the received archive ends before its last entry");
        }
        Ok(())
    }

    /// Opens node `id`'s directory (the one last opened, or from it, or from the root).
    fn enter(&mut self, id: usize) -> Result<()> {
        if self.open.0 == id {
            return Ok(());
        }
        let node = &self.plan.nodes[id];
        let opened = match node.rel.file_name() {
            Some(name) if node.parent == self.open.0 => {
                rustix::fs::openat(&self.open.1, name, dir_flags(), Mode::empty())
            }
            _ if id == ROOT => rustix::fs::openat(&self.root_fd, ".", dir_flags(), Mode::empty()),
            _ => rustix::fs::openat(&self.root_fd, &*node.rel, dir_flags(), Mode::empty()),
        };
        let fd = opened
            .map_err(io::Error::from)
            .with_context(|| format!("opening {}", shown(&at(&self.root, &node.rel))))?;
        self.open = (id, fd);
        Ok(())
    }

    /// Creates node `id` from its entry `e`, inside its directory.
    fn write(&mut self, e: &mut tar::Entry<'_, File>, id: usize) -> Result<()> {
        let plan = self.plan;
        let node = &plan.nodes[id];
        // Errors name the entry: where it is written is a temporary directory.
        let target = &node.rel;
        let name = node
            .rel
            .file_name()
            .with_context(|| format!("{} has no name", shown(&node.rel)))?;
        self.enter(node.parent)?;
        let dir = &self.open.1;
        let mode = header_mode(e.header());
        match node.made {
            Made::Dir => rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(mode | 0o700))
                .map_err(io::Error::from)
                .with_context(|| format!("creating directory {}", shown(target)))?,
            Made::File => {
                let flags = OFlags::WRONLY
                    | OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC;
                let fd = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(mode))
                    .map_err(io::Error::from)
                    .with_context(|| format!("creating {}", shown(target)))?;
                let mut f = File::from(fd);
                let size = e.size();
                let n =
                    io::copy(e, &mut f).with_context(|| format!("writing {}", shown(target)))?;
                if n != size {
                    bail!(
                        "the received archive ends inside {} ({n} of {size} bytes)",
                        shown(&node.rel)
                    );
                }
                if let Some(t) = header_time(e.header()) {
                    f.set_modified(t)
                        .with_context(|| format!("setting {}'s time", shown(target)))?;
                }
            }
            Made::Link => {
                let to = e
                    .link_name()
                    .context("the received archive has an unreadable link")?
                    .with_context(|| format!("{} is a link without a target", shown(&node.rel)))?;
                rustix::fs::symlinkat(&*to, dir, name)
                    .map_err(io::Error::from)
                    .with_context(|| format!("creating link {}", shown(target)))?;
            }
        }
        Ok(())
    }

    /// Removes what is left of the tree in the temporary directory, innermost first: after
    /// a success the directories that merged into DIR's, after a failure everything. A
    /// path by path removal, where a recursive one would hold a descriptor per level.
    fn remove(&self, succeeded: bool) {
        for (id, node) in self.plan.nodes.iter().enumerate().rev() {
            if !self.staged[id] || (succeeded && id != ROOT && !node.merges()) {
                continue;
            }
            let p = at(&self.root, &node.rel);
            let _ = if node.made == Made::Dir {
                std::fs::remove_dir(&p)
            } else {
                std::fs::remove_file(&p)
            };
        }
    }
}

/// Moves a path to one that does not exist (a rename: the same file system).
type Put<'a> = &'a mut dyn FnMut(&Path, &Path) -> io::Result<()>;

/// A rename that never replaces what is there (`RENAME_NOREPLACE`; where the file system
/// lacks it, a look first).
pub(super) fn rename_new(from: &Path, to: &Path) -> io::Result<()> {
    use rustix::fs::{RenameFlags, CWD};
    use rustix::io::Errno;
    match rustix::fs::renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(e) if e == Errno::INVAL || e == Errno::NOSYS || e == Errno::OPNOTSUPP => {
            if std::fs::symlink_metadata(to).is_ok() {
                return Err(io::Error::from(io::ErrorKind::AlreadyExists));
            }
            std::fs::rename(from, to)
        }
        Err(e) => Err(e.into()),
    }
}

/// A rename done while moving the tree into place, to undo if a later one fails.
struct Done {
    from: PathBuf,
    to: PathBuf,
}

/// Moves the tree staged in `stage`'s tree directory into `dest`: each entry whose
/// directory merges into DIR's (or is DIR), unless it merges itself, after what DIR has
/// there (`--force`) was moved aside into `stage`. Every rename done is recorded in `done`,
/// for [`put_back`] to undo on failure.
fn move_in(
    plan: &Plan,
    stage: &Path,
    dest: &Path,
    put: Put<'_>,
    done: &mut Vec<Done>,
) -> Result<()> {
    let root = stage.join(STAGE_TREE);
    for (id, node) in plan.nodes.iter().enumerate().skip(1) {
        let parent = &plan.nodes[node.parent];
        if (node.parent != ROOT && !parent.merges()) || node.merges() {
            continue;
        }
        let (from, to) = (root.join(&node.rel), dest.join(&node.rel));
        if node.there == There::Other {
            let aside = stage.join(id.to_string());
            put(&to, &aside).with_context(|| format!("moving {} aside", shown(&to)))?;
            done.push(Done {
                from: to.clone(),
                to: aside,
            });
        }
        put(&from, &to).with_context(|| format!("moving {} into place", shown(&to)))?;
        done.push(Done { from, to });
    }
    Ok(())
}

/// Undoes `done`, last first; returns what could not be put back.
fn put_back(done: &[Done], put: Put<'_>) -> Vec<PathBuf> {
    done.iter()
        .rev()
        .filter(|d| put(&d.to, &d.from).is_err())
        .map(|d| d.to.clone())
        .collect()
}

/// Sets the modification time of each directory of the tree, innermost first (writing in a
/// directory changes its time).
fn set_dir_times(plan: &Plan, dest: &Path) {
    for node in plan.nodes.iter().skip(1).rev() {
        if let (Made::Dir, Some(t)) = (node.made, node.mtime) {
            if let Ok(fd) = rustix::fs::open(dest.join(&node.rel), dir_flags(), Mode::empty()) {
                let _ = File::from(fd).set_modified(t);
            }
        }
    }
}

/// Writes the tar archive at `archive` into `dest`; see [`super::extract`]. `put` moves
/// entries into place.
pub(super) fn extract_with(
    archive: &Path,
    dest: &Path,
    force: bool,
    symlinks: Symlinks,
    put: Put<'_>,
) -> Result<Written> {
    let plan = Plan::read(archive, dest, symlinks)?;
    if let Some(&first) = plan.in_the_way.first().filter(|_| !force) {
        bail!(
            "{} of the tree's entries exist in {} already (first: {}): pass --force to replace them; nothing was written",
            plan.in_the_way.len(),
            shown(dest),
            shown(&plan.nodes[first].rel)
        );
    }
    std::fs::create_dir_all(dest).with_context(|| format!("creating {}", shown(dest)))?;
    let stage = tempfile::Builder::new()
        .prefix(STAGE_PREFIX)
        .rand_bytes(STAGE_RANDOM)
        .tempdir_in(dest)
        .with_context(|| format!("creating a temporary directory in {}", shown(dest)))?;
    let nothing = || format!("nothing was written into {}", shown(dest));
    let mut s = Stage::new(&plan, stage.path().join(STAGE_TREE)).with_context(nothing)?;
    if let Err(e) = s.write_all(archive) {
        s.remove(false);
        return Err(e.context(nothing()));
    }
    let mut done = Vec::new();
    if let Err(e) = move_in(&plan, stage.path(), dest, put, &mut done) {
        let stuck = put_back(&done, put);
        if let Some(first) = stuck.first() {
            let kept = stage.keep();
            return Err(e.context(format!(
                "writing the tree into {} failed and {} of its renames could not be undone (first: {}): what DIR had is in {}",
                shown(dest),
                stuck.len(),
                shown(first),
                shown(&kept)
            )));
        }
        s.remove(false);
        return Err(e.context(format!("{}: what was moved was put back", nothing())));
    }
    s.remove(true);
    set_dir_times(&plan, dest);
    // What DIR had in the way (`--force`), moved aside: gone with the temporary directory.
    drop(s);
    drop(stage);
    Ok(plan.written)
}
