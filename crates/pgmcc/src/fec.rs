//! FEC parity (RFC 3208 Appendix A): `k` data packets form a transmission group; any `k` of
//! its data and parity packets rebuild the group, so one parity packet repairs different
//! losses at different receivers.
//!
//! This module is the code alone: how a group's packets become equal-length shards, and the
//! Reed-Solomon encoding and decoding of those shards. The source ([`crate::sender`]) and the
//! receive window ([`crate::receiver`]) decide when to use it. The code is the
//! `reed-solomon-erasure` crate's GF(2^8) Vandermonde code (`docs/wire.md`, OPT_FEC): its
//! parity shard `j` does not depend on how many parity shards are computed, which on-demand
//! parity needs (a group's parity indices grow one request at a time).
//!
//! A shard is, for each data packet of the group (RFC 3208 §11.2, "Variable TSDU length" and
//! "Payload-specific options"):
//!
//! ```text
//! | payload, zero-padded to the group's longest (P) | len u16, if lengths vary | OPT_FRAGMENT body (13), if any packet has one |
//! ```
//!
//! A parity packet carries the first `P` (+2) bytes of its shard as payload and the last 13 as
//! its OP_ENCODED OPT_FRAGMENT.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use pgm_wire::{Fragment, FRAGMENT_BODY_LEN};
use reed_solomon_erasure::galois_8::ReedSolomon;

/// Largest transmission group size: GF(2^8) codes at most 256 shards, and a group may need as
/// many parity packets as data packets.
pub const MAX_TG_SIZE: u32 = 128;

/// Smallest transmission group size.
pub const MIN_TG_SIZE: u32 = 2;

/// True when `k` is a transmission group size this code supports: a power of two in
/// [`MIN_TG_SIZE`]`..=`[`MAX_TG_SIZE`] (RFC 3208 §11.4 wants a power of two).
pub fn valid_tg_size(k: u32) -> bool {
    k.is_power_of_two() && (MIN_TG_SIZE..=MAX_TG_SIZE).contains(&k)
}

/// The first sequence number of the group `sqn` belongs to.
pub fn tg_sqn(sqn: u32, k: u32) -> u32 {
    sqn & !(k - 1)
}

/// First byte of a 13-byte OPT_FRAGMENT body: OP_ENCODED_NULL, "this packet had no
/// OPT_FRAGMENT" (RFC 3208 §9).
const OP_ENCODED_NULL: u8 = 0x80;

/// One data packet as the code sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Original<'a> {
    pub(crate) payload: &'a [u8],
    pub(crate) fragment: Option<Fragment>,
}

/// How a group's packets are laid out in shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The longest payload (`P`).
    pub(crate) payload_len: usize,
    /// Payload lengths differ: each shard carries its length (header OPT_VAR_PKTLEN).
    pub(crate) var: bool,
    /// Some packet has OPT_FRAGMENT: each shard carries an OPT_FRAGMENT body.
    pub(crate) frag: bool,
}

impl Layout {
    /// The layout of a group.
    pub(crate) fn of(group: &[Original<'_>]) -> Layout {
        let payload_len = group.iter().map(|o| o.payload.len()).max().unwrap_or(0);
        Layout {
            payload_len,
            var: group.iter().any(|o| o.payload.len() != payload_len),
            frag: group.iter().any(|o| o.fragment.is_some()),
        }
    }

    /// The layout a parity packet shows: its payload length, header OPT_VAR_PKTLEN, and
    /// whether it has an encoded OPT_FRAGMENT. `None` if the payload is too short.
    pub(crate) fn of_parity(payload_len: usize, var: bool, frag: bool) -> Option<Layout> {
        let p = payload_len.checked_sub(if var { 2 } else { 0 })?;
        Some(Layout {
            payload_len: p,
            var,
            frag,
        })
    }

    /// Bytes of a parity packet's payload.
    pub(crate) fn parity_payload_len(&self) -> usize {
        self.payload_len + if self.var { 2 } else { 0 }
    }

    /// Bytes of a shard.
    pub(crate) fn shard_len(&self) -> usize {
        self.parity_payload_len() + if self.frag { FRAGMENT_BODY_LEN } else { 0 }
    }

    /// The shard of one data packet; `None` if it does not fit this layout.
    pub(crate) fn shard(&self, o: &Original<'_>) -> Option<Vec<u8>> {
        let len = o.payload.len();
        if len > self.payload_len || (!self.var && len != self.payload_len) {
            return None;
        }
        if o.fragment.is_some() && !self.frag {
            return None;
        }
        let mut s = vec![0u8; self.shard_len()];
        s[..len].copy_from_slice(o.payload);
        let mut at = self.payload_len;
        if self.var {
            s[at..at + 2].copy_from_slice(&u16::try_from(len).ok()?.to_be_bytes());
            at += 2;
        }
        if self.frag {
            let body = &mut s[at..at + FRAGMENT_BODY_LEN];
            match o.fragment {
                Some(f) => {
                    body[1..5].copy_from_slice(&f.first_sqn.to_be_bytes());
                    body[5..9].copy_from_slice(&f.offset.to_be_bytes());
                    body[9..13].copy_from_slice(&f.apdu_len.to_be_bytes());
                }
                None => body[0] = OP_ENCODED_NULL,
            }
        }
        Some(s)
    }

    /// The data packet a rebuilt shard holds: payload and OPT_FRAGMENT. `None` when the
    /// shard is inconsistent (a length beyond `P`): the parity was not what it claimed.
    pub(crate) fn unshard(&self, s: &[u8]) -> Option<(Vec<u8>, Option<Fragment>)> {
        if s.len() != self.shard_len() {
            return None;
        }
        let mut at = self.payload_len;
        let len = if self.var {
            let l = usize::from(u16::from_be_bytes([s[at], s[at + 1]]));
            at += 2;
            l
        } else {
            self.payload_len
        };
        if len > self.payload_len {
            return None;
        }
        let fragment = if self.frag {
            let b = &s[at..at + FRAGMENT_BODY_LEN];
            let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            (b[0] & OP_ENCODED_NULL == 0).then(|| Fragment {
                first_sqn: u32_at(1),
                offset: u32_at(5),
                apdu_len: u32_at(9),
            })
        } else {
            None
        };
        Some((s[..len].to_vec(), fragment))
    }
}

/// Decoding matrices the codec of one group size keeps (the `reed-solomon-erasure` crate's
/// LRU cache, keyed by the pattern of missing shards).
pub const DECODE_MATRICES_CACHED: usize = 254;

/// The most memory the process-wide codec of group size `k` takes once its cache of
/// decoding matrices is full: that many `k`×`k` byte matrices, plus the `2k`×`k` generator
/// (bookkeeping overhead aside). For the default `k` = 64: about 1 MiB.
pub fn codec_bytes_max(k: usize) -> usize {
    (DECODE_MATRICES_CACHED + 2) * k * k
}

/// The codec for groups of `k` data shards with up to `k` parity shards, one per `k`,
/// shared by every source and receiver of the process: building one inverts a `k`×`k`
/// matrix, and its cache of decoding matrices ([`codec_bytes_max`]) is worth sharing.
fn codec(k: usize, m: usize) -> Option<Arc<ReedSolomon>> {
    type Codecs = Mutex<HashMap<usize, Arc<ReedSolomon>>>;
    static CODECS: OnceLock<Codecs> = OnceLock::new();
    if m > k {
        return None;
    }
    let m = k.min(256usize.checked_sub(k)?);
    let mut codecs = CODECS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(c) = codecs.get(&k) {
        return Some(c.clone());
    }
    let c = Arc::new(ReedSolomon::new(k, m).ok()?);
    codecs.insert(k, c.clone());
    Some(c)
}

/// Parity shards `indices` (each below `k`) of a full group. `None` if the group is not `k`
/// packets or a packet does not fit its layout.
pub(crate) fn encode(group: &[Original<'_>], indices: &[u32]) -> Option<(Layout, Vec<Vec<u8>>)> {
    let k = group.len();
    let top = indices.iter().max().map(|&j| j as usize + 1)?;
    if k < MIN_TG_SIZE as usize || top > k {
        return None;
    }
    let layout = Layout::of(group);
    let data = group
        .iter()
        .map(|o| layout.shard(o))
        .collect::<Option<Vec<_>>>()?;
    let rs = codec(k, top)?;
    let mut parity = vec![vec![0u8; layout.shard_len()]; rs.parity_shard_count()];
    rs.encode_sep(&data, &mut parity).ok()?;
    let out = indices
        .iter()
        .map(|&j| std::mem::take(&mut parity[j as usize]))
        .collect();
    Some((layout, out))
}

/// Rebuilds the missing data shards of a group of `k` from `data` (index `i` is data packet
/// `i`, `None` when missing) and `parity` (parity index and shard). Returns the rebuilt
/// shards by data index; `None` when there are fewer than `k` shards or they do not decode.
pub(crate) fn decode(
    k: usize,
    shard_len: usize,
    data: Vec<Option<Vec<u8>>>,
    parity: &[(u32, Vec<u8>)],
) -> Option<Vec<(usize, Vec<u8>)>> {
    let top = parity.iter().map(|(j, _)| *j as usize + 1).max()?;
    if data.len() != k || top > k {
        return None;
    }
    let have = data.iter().filter(|d| d.is_some()).count() + parity.len();
    if have < k {
        return None;
    }
    let missing: Vec<usize> = (0..k).filter(|&i| data[i].is_none()).collect();
    let rs = codec(k, top)?;
    let mut shards = data;
    shards.resize(rs.total_shard_count(), None);
    for (j, s) in parity {
        if s.len() != shard_len {
            return None;
        }
        shards[k + *j as usize] = Some(s.clone());
    }
    if shards.iter().flatten().any(|s| s.len() != shard_len) {
        return None;
    }
    rs.reconstruct_data(&mut shards).ok()?;
    missing
        .into_iter()
        .map(|i| shards[i].take().map(|s| (i, s)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(k: usize, var: bool, frag: bool) -> Vec<(Vec<u8>, Option<Fragment>)> {
        (0..k)
            .map(|i| {
                let len = if var { 100 + (i * 37) % 300 } else { 400 };
                let payload = (0..len).map(|b| (b * 7 + i * 13) as u8).collect();
                let fragment = (frag && i % 3 != 0).then_some(Fragment {
                    first_sqn: 1000 + i as u32,
                    offset: 1400 * i as u32,
                    apdu_len: 90_000,
                });
                (payload, fragment)
            })
            .collect()
    }

    fn originals(g: &[(Vec<u8>, Option<Fragment>)]) -> Vec<Original<'_>> {
        g.iter()
            .map(|(p, f)| Original {
                payload: p,
                fragment: *f,
            })
            .collect()
    }

    #[test]
    fn tg_sizes_and_group_numbers() {
        assert!(valid_tg_size(2) && valid_tg_size(64) && valid_tg_size(128));
        assert!(!valid_tg_size(1) && !valid_tg_size(48) && !valid_tg_size(256));
        assert_eq!(tg_sqn(130, 64), 128);
        assert_eq!(tg_sqn(127, 64), 64);
        assert_eq!(tg_sqn(u32::MAX, 64), u32::MAX - 63);
    }

    /// Parity shard `j` is the same whether 1 or 8 are computed: on-demand parity can add
    /// indices one request at a time.
    #[test]
    fn parity_does_not_depend_on_how_many_are_computed() {
        let g = group(16, true, true);
        let o = originals(&g);
        let (_, one) = encode(&o, &[2]).unwrap();
        let (_, all) = encode(&o, &[0, 1, 2, 3, 4, 5, 6, 7]).unwrap();
        assert_eq!(one[0], all[2]);
    }

    /// Every combination of fixed/variable lengths and with/without OPT_FRAGMENT rebuilds
    /// the exact payloads and options from any `k` shards.
    #[test]
    fn any_k_shards_rebuild_the_group() {
        for (var, frag) in [(false, false), (true, false), (false, true), (true, true)] {
            let g = group(16, var, frag);
            let o = originals(&g);
            let (layout, parity) = encode(&o, &[0, 1, 2, 5]).unwrap();
            assert_eq!(layout.var, var);
            assert_eq!(layout.frag, frag);
            // Lose 4 data packets; use parity 0, 1, 2 and 5 (not contiguous).
            let lost = [0usize, 3, 9, 15];
            let data = (0..16)
                .map(|i| (!lost.contains(&i)).then(|| layout.shard(&o[i]).unwrap()))
                .collect();
            let par: Vec<(u32, Vec<u8>)> = [0u32, 1, 2, 5].into_iter().zip(parity).collect();
            let rebuilt = decode(16, layout.shard_len(), data, &par).unwrap();
            assert_eq!(rebuilt.len(), 4);
            for (i, s) in rebuilt {
                let (payload, fragment) = layout.unshard(&s).unwrap();
                assert_eq!(payload, g[i].0, "payload {i} var {var} frag {frag}");
                assert_eq!(fragment, g[i].1, "fragment {i}");
            }
        }
    }

    #[test]
    fn too_few_shards_or_bad_lengths_do_not_decode() {
        let g = group(8, false, false);
        let o = originals(&g);
        let (layout, parity) = encode(&o, &[0]).unwrap();
        let data: Vec<_> = (0..8)
            .map(|i| (i >= 2).then(|| layout.shard(&o[i]).unwrap()))
            .collect();
        let par = vec![(0u32, parity[0].clone())];
        assert!(decode(8, layout.shard_len(), data.clone(), &par).is_none());
        let short = vec![(0u32, parity[0][..10].to_vec())];
        let one_lost: Vec<_> = (0..8)
            .map(|i| (i >= 1).then(|| layout.shard(&o[i]).unwrap()))
            .collect();
        assert!(decode(8, layout.shard_len(), one_lost, &short).is_none());
        // An index at or beyond k is refused, not a panic.
        assert!(encode(&o, &[8]).is_none());
    }

    #[test]
    fn a_shard_claiming_a_length_beyond_the_group_is_refused() {
        let layout = Layout {
            payload_len: 10,
            var: true,
            frag: false,
        };
        let mut s = vec![0u8; layout.shard_len()];
        s[10..12].copy_from_slice(&11u16.to_be_bytes());
        assert!(layout.unshard(&s).is_none());
        assert!(layout.unshard(&s[..5]).is_none());
    }
}
