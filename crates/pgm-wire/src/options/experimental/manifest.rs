//! OPT_MANIFEST (0x37, ours, experimental): what a session carries, on the source's SPMs. The
//! data stream stays the file's bytes and nothing else (so OpenPGM and ZeroMQ receivers, which
//! skip the option, read the same bytes), while our receivers learn the file's name, size,
//! mode and modification time from any SPM, a late joiner included, and, once the source has
//! read the whole input, its SHA-256 from the SPMs that announce the end (issue 22).

use crate::error::Result;
use crate::options::{Codec, OPT_MANIFEST};

/// Body offsets, after the 3-byte option header.
mod field {
    use core::ops::Range;

    /// Reserved (U bit and 7 bits).
    pub(super) const RESERVED: usize = 0;
    pub(super) const FLAGS: usize = 1;
    pub(super) const SIZE: Range<usize> = 2..10;
    pub(super) const MODE: Range<usize> = 10..14;
    pub(super) const MTIME: Range<usize> = 14..22;
    /// The fixed part; the SHA-256 (with the SHA-256 flag) and then the name follow.
    pub(super) const FIXED: usize = MTIME.end;
}

/// Flag: the size is known (a file, not a stream).
const MF_SIZE: u8 = 0x01;
/// Flag: the SHA-256 of the whole stream follows the fixed part (sent once the source has
/// read all of it: on the SPMs that carry OPT_FIN).
const MF_SHA256: u8 = 0x02;
/// Flag: the stream is a tar archive of a directory tree or file set (POSIX ustar with GNU
/// long-name records), which our receivers write out as a tree (`pgmcc recv -D`).
const MF_TREE: u8 = 0x04;
/// Flag: this session is one pass of several over the same stream and another follows
/// (`pgmcc send --passes N`): a receiver that joined late keeps what it got and completes it
/// from the next pass.
const MF_ANOTHER_PASS: u8 = 0x08;
/// Longest name carried, in bytes.
const MAX_NAME: usize = 160;

/// OPT_MANIFEST body (ours, experimental): rsv u8, flags u8, size u64, mode u32 (Unix
/// permission bits), mtime u64 (Unix seconds), [SHA-256, 32 bytes, with `MF_SHA256`], then the
/// file's name (UTF-8, no directories, at most 160 bytes). Flags: `MF_SIZE` 0x01, `MF_SHA256`
/// 0x02, `MF_TREE` 0x04, `MF_ANOTHER_PASS` 0x08.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Manifest {
    /// Bytes in the stream, when known (a file).
    pub size: Option<u64>,
    /// Unix permission bits of the file (0 when not given).
    pub mode: u32,
    /// Modification time, Unix seconds (0 when not given).
    pub mtime: u64,
    /// SHA-256 of the whole stream, once the source has read it all.
    pub sha256: Option<[u8; 32]>,
    /// The file's name (no directories; empty for a stream); for a tree, the name of the
    /// directory sent (or a description of the file set).
    pub name: String,
    /// The stream is a tar archive of a tree of files (`MF_TREE`), not one file's bytes.
    pub tree: bool,
    /// Another session carrying the same stream (same size and SHA-256) follows this one
    /// from the same source (`MF_ANOTHER_PASS`): what a receiver misses here it can get then.
    pub another_pass: bool,
}

impl Manifest {
    /// The name cut to at most [`MAX_NAME`] bytes, at a character boundary.
    fn name_bytes(&self) -> &[u8] {
        super::utf8_prefix(&self.name, MAX_NAME)
    }
}

impl Codec for Manifest {
    type Value = Manifest;
    const CODE: u8 = OPT_MANIFEST;
    const NAME: &'static str = "OPT_MANIFEST";

    fn parse(body: &[u8]) -> Result<Manifest> {
        if body.len() < field::FIXED {
            return Err(Self::bad(body, "at least 22"));
        }
        let flags = body[field::FLAGS];
        let u64_at = |r: core::ops::Range<usize>| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&body[r]);
            u64::from_be_bytes(b)
        };
        let mut mode = [0u8; 4];
        mode.copy_from_slice(&body[field::MODE]);
        let mut at = field::FIXED;
        let sha256 = if flags & MF_SHA256 != 0 {
            let s: [u8; 32] = body
                .get(at..at + 32)
                .and_then(|s| s.try_into().ok())
                .ok_or_else(|| Self::bad(body, "at least 54 with MF_SHA256"))?;
            at += 32;
            Some(s)
        } else {
            None
        };
        let name = &body[at..];
        if name.len() > MAX_NAME {
            return Err(Self::bad(body, "a name of at most 160 bytes"));
        }
        Ok(Manifest {
            size: (flags & MF_SIZE != 0).then(|| u64_at(field::SIZE)),
            mode: u32::from_be_bytes(mode),
            mtime: u64_at(field::MTIME),
            sha256,
            // Not UTF-8: refused rather than altered, so that parse and emit round-trip.
            name: String::from_utf8(name.to_vec()).map_err(|_| Self::bad(body, "a UTF-8 name"))?,
            tree: flags & MF_TREE != 0,
            another_pass: flags & MF_ANOTHER_PASS != 0,
        })
    }

    fn body_len(v: &Manifest) -> usize {
        field::FIXED + if v.sha256.is_some() { 32 } else { 0 } + v.name_bytes().len()
    }

    fn emit(v: &Manifest, body: &mut [u8]) -> Result<()> {
        body[field::RESERVED] = 0;
        let mut flags = 0;
        if v.size.is_some() {
            flags |= MF_SIZE;
        }
        if v.sha256.is_some() {
            flags |= MF_SHA256;
        }
        if v.tree {
            flags |= MF_TREE;
        }
        if v.another_pass {
            flags |= MF_ANOTHER_PASS;
        }
        body[field::FLAGS] = flags;
        body[field::SIZE].copy_from_slice(&v.size.unwrap_or(0).to_be_bytes());
        body[field::MODE].copy_from_slice(&v.mode.to_be_bytes());
        body[field::MTIME].copy_from_slice(&v.mtime.to_be_bytes());
        let mut at = field::FIXED;
        if let Some(s) = &v.sha256 {
            body[at..at + 32].copy_from_slice(s);
            at += 32;
        }
        let n = v.name_bytes();
        body[at..at + n.len()].copy_from_slice(n);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::tests::parse;
    use crate::options::Options;

    #[test]
    fn round_trips_with_and_without_size_and_hash() {
        for (size, sha256, name, tree, another_pass) in [
            (Some(1_000_000_000u64), None, "disk.img", false, true),
            (Some(5), Some([9u8; 32]), "notes.txt", false, false),
            (Some(10_240), Some([7u8; 32]), "www", true, true),
            (None, Some([1u8; 32]), "", false, false),
            (None, None, "", false, false),
        ] {
            let o = Options {
                manifest: Some(Manifest {
                    size,
                    mode: 0o640,
                    mtime: 1_795_000_000,
                    sha256,
                    name: name.into(),
                    tree,
                    another_pass,
                }),
                ..Options::default()
            };
            let mut buf = [0u8; 300];
            let n = o.emit(&mut buf).unwrap();
            assert_eq!(parse(&buf[..n]).unwrap(), o);
        }
        // A name too long is cut at a character boundary.
        let o = Options {
            manifest: Some(Manifest {
                name: "ä".repeat(100),
                ..Manifest::default()
            }),
            ..Options::default()
        };
        let mut buf = [0u8; 300];
        let n = o.emit(&mut buf).unwrap();
        let back = parse(&buf[..n]).unwrap().manifest.unwrap();
        assert_eq!(back.name, "ä".repeat(80));
    }

    #[test]
    fn a_name_that_is_not_utf8_is_refused_not_altered() {
        // Found by the parse_options fuzz target: a lossy decode grew the name.
        let mut body = vec![0u8; 22];
        body.extend_from_slice(&[0xff, 0x5b, 0xff]);
        assert!(<Manifest as Codec>::parse(&body).is_err());
    }

    #[test]
    fn a_hash_flag_without_the_hash_is_refused() {
        let mut body = vec![0u8; 22 + 10];
        body[1] = MF_SHA256;
        assert!(<Manifest as Codec>::parse(&body).is_err());
    }
}
