//! OPT_PSEUDOFED (0x30, ours, experimental): Pseudofed representative-based congestion
//! control (`docs/pseudofed.md`).

use core::fmt;
use std::net::IpAddr;

use crate::error::{Error, Result};
use crate::options::{get16, get32, set16, set32, Codec, OPT_PSEUDOFED};
use crate::types::{afi_of, nla_len, read_nla, write_nla};

/// Most representatives an OPT_PSEUDOFED carries.
pub const MAX_REPRESENTATIVES: usize = 8;

/// [`Pseudofed::flags`]: this receiver report is a congestion indication (CI, a loss was
/// seen); without it the report is a congestion clear (CC).
pub const PF_CI: u8 = 0x01;
/// [`Pseudofed::flags`]: the sender's representative set is full (receivers that are not
/// representatives then report only CIs).
pub const PF_FULL: u8 = 0x02;
/// [`Pseudofed::flags`]: [`Pseudofed::ci_sqn`] is meaningful.
pub const PF_HAVE_CI: u8 = 0x04;

/// Body offsets, after the 3-byte option header (option length 15 + the entries).
mod field {
    use core::ops::Range;

    /// [`PF_CI`](super::PF_CI), [`PF_FULL`](super::PF_FULL),
    /// [`PF_HAVE_CI`](super::PF_HAVE_CI).
    pub(super) const FLAGS: usize = 0;
    pub(super) const GRTT_MS: Range<usize> = 1..5;
    pub(super) const WAIT_PCT: usize = 5;
    pub(super) const SUPP_PCT: usize = 6;
    pub(super) const CI_SQN: Range<usize> = 7..11;
    /// Number of representative entries that follow.
    pub(super) const COUNT: usize = 11;
    /// The first representative entry (see [`entry`](super::entry)); the others follow it.
    pub(super) const REPS: usize = 12;
}

/// Offsets inside one representative entry, from its start.
mod entry {
    use core::ops::{Range, RangeFrom};

    pub(super) const AFI: Range<usize> = 0..2;
    /// The representative's address, 4 or 16 bytes as the AFI says.
    pub(super) const NLA: RangeFrom<usize> = 2..;
}

/// Up to [`MAX_REPRESENTATIVES`] addresses, stored inline (no allocation).
#[derive(Clone, Copy)]
pub struct RepList {
    len: u8,
    addrs: [IpAddr; MAX_REPRESENTATIVES],
}

impl RepList {
    /// An empty list.
    pub const fn new() -> RepList {
        RepList {
            len: 0,
            addrs: [IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED); MAX_REPRESENTATIVES],
        }
    }

    /// Builds a list from a slice; fails beyond [`MAX_REPRESENTATIVES`] entries.
    pub fn from_slice(s: &[IpAddr]) -> Result<RepList> {
        let mut l = RepList::new();
        for a in s {
            l.push(*a)?;
        }
        Ok(l)
    }

    /// Appends an address; fails when the list is full.
    pub fn push(&mut self, a: IpAddr) -> Result<()> {
        let i = usize::from(self.len);
        if i >= MAX_REPRESENTATIVES {
            return Err(Error::Unencodable(
                "OPT_PSEUDOFED holds at most 8 representatives",
            ));
        }
        self.addrs[i] = a;
        self.len += 1;
        Ok(())
    }

    /// The entries.
    pub fn as_slice(&self) -> &[IpAddr] {
        &self.addrs[..usize::from(self.len)]
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True when the list holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when `a` is in the list.
    pub fn contains(&self, a: &IpAddr) -> bool {
        self.as_slice().contains(a)
    }
}

impl Default for RepList {
    fn default() -> Self {
        RepList::new()
    }
}

impl PartialEq for RepList {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for RepList {}

impl fmt::Debug for RepList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// OPT_PSEUDOFED body (ours, code [`OPT_PSEUDOFED`]): on ODATA the sender's advertisement
/// (representatives, group RTT, feedback timer fractions, latest CI heard); on an ACK a
/// receiver's CC/CI flag. Layout after the 3-byte option header:
/// `flags u8, grtt_ms u32, wait_pct u8, supp_pct u8, ci_sqn u32, count u8`, then `count` times
/// `AFI u16, NLA` (IPv4 or IPv6 each). Receivers send `count` 0 and zero timer fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pseudofed {
    /// [`PF_CI`], [`PF_FULL`], [`PF_HAVE_CI`]; other bits are sent as 0 and ignored.
    pub flags: u8,
    /// The sender's group round-trip time estimate, milliseconds.
    pub grtt_ms: u32,
    /// Deterministic wait before a non-representative report, percent of the GRTT.
    pub wait_pct: u8,
    /// Width of the random suppression interval after the wait, percent of the GRTT.
    pub supp_pct: u8,
    /// Sender: the highest data sequence number reported lost in a CI it has heard (valid
    /// with [`PF_HAVE_CI`]). Receiver CI: the first sequence number found lost.
    pub ci_sqn: u32,
    /// The current representatives (sender only).
    pub reps: RepList,
}

impl Codec for Pseudofed {
    type Value = Pseudofed;
    const CODE: u8 = OPT_PSEUDOFED;
    const NAME: &'static str = "OPT_PSEUDOFED";

    fn parse(body: &[u8]) -> Result<Pseudofed> {
        let expected = "15 + n x (2 + NLA), n <= 8";
        if body.len() < field::REPS {
            return Err(Self::bad(body, expected));
        }
        let n = usize::from(body[field::COUNT]);
        if n > MAX_REPRESENTATIVES {
            return Err(Self::bad(body, expected));
        }
        let mut reps = RepList::new();
        let mut at = field::REPS;
        for _ in 0..n {
            // `at` never passes the end: it only grows by an entry `read_nla` found whole.
            let e = &body[at..];
            if e.len() < entry::NLA.start {
                return Err(Self::bad(body, expected));
            }
            let a = read_nla(get16(e, entry::AFI), &e[entry::NLA])?;
            at += entry::NLA.start + nla_len(&a);
            reps.push(a)?;
        }
        if at != body.len() {
            return Err(Self::bad(body, expected));
        }
        Ok(Pseudofed {
            flags: body[field::FLAGS],
            grtt_ms: get32(body, field::GRTT_MS),
            wait_pct: body[field::WAIT_PCT],
            supp_pct: body[field::SUPP_PCT],
            ci_sqn: get32(body, field::CI_SQN),
            reps,
        })
    }

    fn body_len(v: &Pseudofed) -> usize {
        let entries: usize = v
            .reps
            .as_slice()
            .iter()
            .map(|a| entry::NLA.start + nla_len(a))
            .sum();
        field::REPS + entries
    }

    fn emit(v: &Pseudofed, body: &mut [u8]) -> Result<()> {
        body[field::FLAGS] = v.flags;
        set32(body, field::GRTT_MS, v.grtt_ms);
        body[field::WAIT_PCT] = v.wait_pct;
        body[field::SUPP_PCT] = v.supp_pct;
        set32(body, field::CI_SQN, v.ci_sqn);
        // At most MAX_REPRESENTATIVES (8), so it fits the count byte.
        body[field::COUNT] = v.reps.len() as u8;
        let mut at = field::REPS;
        for a in v.reps.as_slice() {
            let e = &mut body[at..];
            set16(e, entry::AFI, afi_of(a));
            write_nla(a, &mut e[entry::NLA]);
            at += entry::NLA.start + nla_len(a);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::tests::parse;
    use crate::options::Options;
    use std::net::Ipv4Addr;

    #[test]
    fn pseudofed_layout_and_round_trip() {
        let reps = RepList::from_slice(&[
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 7)),
            IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ])
        .unwrap();
        let o = Options {
            pseudofed: Some(Pseudofed {
                flags: PF_FULL | PF_HAVE_CI,
                grtt_ms: 0x0102_0304,
                wait_pct: 50,
                supp_pct: 100,
                ci_sqn: 0x0a0b_0c0d,
                reps,
            }),
            ..Options::default()
        };
        // 4 (OPT_LENGTH) + 3 + 12 + (2 + 4) + (2 + 16) = 43.
        let mut out = [0u8; 43];
        assert_eq!(o.emit(&mut out), Ok(43));
        assert_eq!(
            out[..23],
            [
                0x00, 0x04, 0x00, 43, // OPT_LENGTH
                0xb0, 39, 0x00, // OPT_PSEUDOFED | OPT_END, len 39, flags 0 (OPX ignore)
                0x06, 1, 2, 3, 4, 50, 100, // flags, grtt_ms, wait %, supp %
                0x0a, 0x0b, 0x0c, 0x0d, 2, // ci_sqn, count
                0x00, 0x01, 10, 0, // AFI 1, first bytes of 10.0.0.7
            ]
        );
        assert_eq!(out[25..27], [0x00, 0x02]); // AFI 2 of the IPv6 entry
        let back = parse(&out).unwrap();
        assert_eq!(back, o);
        // A count beyond the entries present, or trailing bytes, is an error.
        let mut short = out;
        short[18] = 3;
        assert!(parse(&short).is_err());
        let mut nine = out;
        nine[18] = 9;
        assert!(parse(&nine).is_err());
        // Too many representatives cannot even be built.
        let mut l = RepList::new();
        for i in 0..8u8 {
            l.push(IpAddr::V4(Ipv4Addr::new(10, 0, 0, i))).unwrap();
        }
        assert!(l.push(IpAddr::V4(Ipv4Addr::LOCALHOST)).is_err());
    }
}
