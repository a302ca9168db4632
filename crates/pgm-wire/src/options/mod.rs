//! PGM option extensions (RFC 3208 §9) and the pgmcc options as OpenPGM lays them out.
//!
//! Wire form: when the header's [`OPT_PRESENT`](crate::header::OPT_PRESENT) bit is set, the
//! type-specific header is followed by OPT_LENGTH (`type 0x00, length 4, total u16`, the total
//! counting OPT_LENGTH itself) and then TLVs:
//!
//! ```text
//! | E | type (7) | length (8) | flags: rsv(3) F(0x08) rsv OPX(0x03) | body ... |
//! ```
//!
//! `length` covers the whole option including its 3-byte header; the first body byte is the
//! RFC's `U` bit plus 7 option-specific bits. The last option has the `E` (OPT_END, 0x80) bit.
//!
//! [`Options`] holds every option this codec knows as a typed field (so a protocol engine
//! looks them up directly, with no allocation) and keeps unknown options verbatim in
//! [`Options::unknown`] so a network element can forward them unchanged. Emission uses a
//! canonical order: network-significant options first, as RFC 3208 §9.1 requires.

// Layout of this module: this file has the option codes, `Options`, and the loops that walk
// the option area (OPT_LENGTH, option headers, OPT_END, OPX, unknown options). Each known
// option's body is parsed and emitted side by side in its own file, with its byte offsets
// named in a `field` module: `fragment.rs` (OPT_FRAGMENT), `nak_list.rs` (OPT_NAK_LIST),
// `join.rs` (OPT_JOIN), `network.rs` (OPT_NAK_BO_IVL, OPT_NAK_BO_RNG, OPT_NBR_UNREACH,
// OPT_PATH_NLA), `redirect.rs` (OPT_REDIRECT), `fec.rs` (OPT_PARITY_PRM, OPT_PARITY_GRP,
// OPT_CURR_TGSIZE), `session.rs` (OPT_SYN, OPT_FIN, OPT_RST), `pgmcc.rs` (OPT_PGMCC_DATA,
// OPT_PGMCC_FEEDBACK), and `experimental/` for our own options (OPT_TFMCC_DATA,
// OPT_PSEUDOFED, OPT_LOWWEIGHT). A new known option gets a `Codec` impl in its file, a field
// in `Options`, an arm in `parse_one` and a line in `encode_each` (which fixes its emission
// order).

use core::ops::Range;
use std::net::IpAddr;

use crate::error::{Error, Result};
use crate::types::{be16, be32, put16, put32, PacketType};

mod experimental;
mod fec;
mod fragment;
mod join;
mod nak_list;
mod network;
mod pgmcc;
mod redirect;
mod session;

pub use experimental::{
    AckProof, Fec, Grtt, LowWeight, Manifest, Outcome, Pseudofed, RepList, ReportBar, TfmccData,
    FEC_RS_VANDERMONDE_GF256, LW_NO_ACKS, LW_QUICK_NAK, MAX_REASON, MAX_REPRESENTATIVES,
    OUTCOME_AWAITING_PASS, OUTCOME_COMPLETE, OUTCOME_FAILED, OUTCOME_PARTIAL, PF_CI, PF_FULL,
    PF_HAVE_CI, RB_INTERVALS,
};
pub use fec::ParityPrm;
pub use fragment::{Fragment, FRAGMENT_BODY_LEN};
pub use nak_list::{SqnList, MAX_NAK_LIST};
pub use network::{NakBoIvl, NakBoRng};
pub use pgmcc::{PgmccData, PgmccFeedback};
pub use session::Rst;

/// OPT_LENGTH: total length of the option extensions.
pub const OPT_LENGTH: u8 = 0x00;
/// OPT_FRAGMENT: this TSDU is a fragment of a larger APDU (§9.2).
pub const OPT_FRAGMENT: u8 = 0x01;
/// OPT_NAK_LIST: further sequence numbers NAKed in one packet (§9.3).
pub const OPT_NAK_LIST: u8 = 0x02;
/// OPT_JOIN: late-join minimum sequence number (§9.4).
pub const OPT_JOIN: u8 = 0x03;
/// OPT_NAK_BO_IVL: NAK back-off interval (§15.4.1).
pub const OPT_NAK_BO_IVL: u8 = 0x04;
/// OPT_NAK_BO_RNG: NAK back-off range (§15.4.2).
pub const OPT_NAK_BO_RNG: u8 = 0x05;
/// OPT_REDIRECT: DLR redirect (§9.5).
pub const OPT_REDIRECT: u8 = 0x07;
/// OPT_PARITY_PRM: FEC parameters (§11.8.1).
pub const OPT_PARITY_PRM: u8 = 0x08;
/// OPT_PARITY_GRP: FEC group number (§11.8.2).
pub const OPT_PARITY_GRP: u8 = 0x09;
/// OPT_CURR_TGSIZE: actual transmission group size (§11.8.3).
pub const OPT_CURR_TGSIZE: u8 = 0x0a;
/// OPT_NBR_UNREACH: neighbour unreachable (§15.4.3).
pub const OPT_NBR_UNREACH: u8 = 0x0b;
/// OPT_PATH_NLA: path NLA (§15.4.4).
pub const OPT_PATH_NLA: u8 = 0x0c;
/// OPT_SYN: first packet of the session (§9.6).
pub const OPT_SYN: u8 = 0x0d;
/// OPT_FIN: end of session (§9.7).
pub const OPT_FIN: u8 = 0x0e;
/// OPT_RST: session reset (§9.8).
pub const OPT_RST: u8 = 0x0f;
/// OPT_CR: RFC 3208 §12.7 congestion report (not pgmcc; kept as an unknown option).
pub const OPT_CR: u8 = 0x10;
/// OPT_CRQST: congestion report request (kept as an unknown option).
pub const OPT_CRQST: u8 = 0x11;
/// OPT_PGMCC_DATA: pgmcc timestamp and acker identity on ODATA/RDATA (OpenPGM code).
pub const OPT_PGMCC_DATA: u8 = 0x12;
/// OPT_PGMCC_FEEDBACK: pgmcc receiver report on ACK (and, per the paper, NAK) (OpenPGM code).
pub const OPT_PGMCC_FEEDBACK: u8 = 0x13;
/// OPT_TFMCC_DATA: ours, experimental (not in RFC 3208, the pgmcc draft or OpenPGM): the
/// TFMCC baseline's feedback round on ODATA (`docs/tfmcc.md`). Other PGM peers skip it
/// (unknown option, OPX 00).
pub const OPT_TFMCC_DATA: u8 = 0x1e;
/// OPT_PSEUDOFED: Pseudofed representative-based congestion control (ours, experimental:
/// 0x30 is unassigned by RFC 3208 and OpenPGM). Sent with flags 0 (OPX "ignore"), so peers
/// that do not know it skip it. Layout in [`Pseudofed`] and `docs/wire.md`.
pub const OPT_PSEUDOFED: u8 = 0x30;
/// OPT_LOWWEIGHT: low-weight multi-sender congestion control (Scholl and Parnes; ours,
/// experimental: 0x31 is unassigned by RFC 3208 and OpenPGM). Sent on ODATA with flags 0
/// (OPX "ignore"). Layout in [`LowWeight`] and `docs/lowweight.md`.
pub const OPT_LOWWEIGHT: u8 = 0x31;
/// OPT_GRTT: the source's group RTT and group size estimates, for receivers' NAK timers
/// (ours, experimental: 0x32 is unassigned by RFC 3208 and OpenPGM). Sent on SPMs and NCFs
/// with flags 0 (OPX "ignore"). Layout in [`Grtt`] and `docs/wire.md`.
pub const OPT_GRTT: u8 = 0x32;
/// OPT_FEC: the source offers FEC parity computed with our erasure code (ours, experimental:
/// 0x33 is unassigned by RFC 3208 and OpenPGM). Sent on SPMs with flags 0 (OPX "ignore").
/// Layout in [`Fec`] and `docs/wire.md`.
pub const OPT_FEC: u8 = 0x33;
/// OPT_REPORT_BAR: the loss rate above which a receiver should report to the pgmcc source
/// whatever suppression says (ours, experimental:
/// 0x34 is unassigned by RFC 3208 and OpenPGM). Sent on NCFs and SPMs with flags 0.
/// Layout in `docs/wire.md`.
pub const OPT_REPORT_BAR: u8 = 0x34;
/// OPT_ACK_PROOF: a data packet's nonce, or on an ACK the XOR of the nonces of the packets it
/// acknowledges: proof of receipt (ours, experimental: 0x35 is unassigned by RFC 3208 and
/// OpenPGM). Sent with flags 0 (OPX "ignore"). Layout in [`AckProof`] and `docs/wire.md`.
pub const OPT_ACK_PROOF: u8 = 0x35;
/// OPT_OUTCOME: a receiver's delivery report on a POLR (ours, experimental: 0x36 is
/// unassigned by RFC 3208 and OpenPGM). Sent with flags 0. Layout in [`Outcome`] and
/// `docs/wire.md`.
pub const OPT_OUTCOME: u8 = 0x36;
/// OPT_MANIFEST: the file a session carries (name, size, mode, mtime, and at the end its
/// SHA-256), on SPMs (ours, experimental: 0x37 is unassigned by RFC 3208 and OpenPGM). Sent
/// with flags 0. Layout in [`Manifest`] and `docs/wire.md`.
pub const OPT_MANIFEST: u8 = 0x37;
/// OPT_INVALID: an option a network element invalidated (OPX = 01).
pub const OPT_INVALID: u8 = 0x7f;

/// OPT_END bit in the option type byte.
pub const OPT_END: u8 = 0x80;
/// Mask of the option code in the type byte.
pub const OPT_MASK: u8 = 0x7f;
/// OpenPGM's F (OP_ENCODED) bit in the option flags byte.
pub const OP_ENCODED: u8 = 0x08;
/// Option extensibility bits in the flags byte.
pub const OPX_MASK: u8 = 0x03;
/// RFC 3208 §9 limit of options per packet.
pub const MAX_OPTIONS: usize = 16;

/// Byte offsets of OPT_LENGTH, from the start of the option area.
mod opt_length {
    use core::ops::Range;

    /// Type byte (OPT_LENGTH, never with OPT_END).
    pub(super) const TYPE: usize = 0;
    /// Length byte (always 4).
    pub(super) const LEN: usize = 1;
    /// Total length of the option area, OPT_LENGTH included.
    pub(super) const TOTAL: Range<usize> = 2..4;
}

/// Byte offsets of every option's 3-byte header, from the start of the option.
mod opt_header {
    /// Type byte: OPT_END bit and 7-bit code.
    pub(super) const TYPE: usize = 0;
    /// Length of the whole option, header included.
    pub(super) const LEN: usize = 1;
    /// Flags byte: F bit and OPX bits.
    pub(super) const FLAGS: usize = 2;
    /// Start of the option body.
    pub(super) const BODY: usize = 3;
}

/// Length of OPT_LENGTH.
const OPT_LENGTH_LEN: usize = opt_length::TOTAL.end;
/// Length of every option's header (type, length, flags).
const OPT_HEADER_LEN: usize = opt_header::BODY;
/// Largest option body (length byte 255 minus the 3-byte header).
const MAX_BODY: usize = 255 - OPT_HEADER_LEN;

/// What a network element must do with an option it does not know (RFC 3208 §9, OPX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opx {
    /// 00: ignore the option and forward the packet.
    Ignore,
    /// 01: change the option's type to OPT_INVALID and forward.
    Invalidate,
    /// 10: discard the packet.
    Discard,
    /// 11: reserved.
    Reserved,
}

impl Opx {
    /// Decodes the OPX bits of an option flags byte.
    pub const fn from_flags(flags: u8) -> Opx {
        match flags & OPX_MASK {
            0 => Opx::Ignore,
            1 => Opx::Invalidate,
            2 => Opx::Discard,
            _ => Opx::Reserved,
        }
    }
}

/// An option this codec does not interpret, kept byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UnknownOption<'a> {
    /// Option code (7 bits; OPT_END stripped).
    pub code: u8,
    /// The flags byte (F bit, OPX bits).
    pub flags: u8,
    /// Everything after the 3-byte option header.
    pub data: &'a [u8],
}

impl UnknownOption<'_> {
    /// What a network element must do with this option.
    pub const fn opx(&self) -> Opx {
        Opx::from_flags(self.flags)
    }
}

/// All option extensions of one packet.
///
/// `Options::default()` is "no options". Known options are typed fields; unknown ones are in
/// [`Options::unknown`] in arrival order (the `Vec` allocates only when one is present).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Options<'a> {
    /// OPT_NAK_LIST (network-significant).
    pub nak_list: Option<SqnList>,
    /// OPT_REDIRECT: DLR address (network-significant).
    pub redirect: Option<IpAddr>,
    /// OPT_PARITY_PRM (network-significant).
    pub parity_prm: Option<ParityPrm>,
    /// OPT_CURR_TGSIZE (network-significant except on ODATA).
    pub curr_tgsize: Option<u32>,
    /// OPT_NAK_BO_IVL (network-significant).
    pub nak_bo_ivl: Option<NakBoIvl>,
    /// OPT_NAK_BO_RNG (network-significant).
    pub nak_bo_rng: Option<NakBoRng>,
    /// OPT_NBR_UNREACH (network-significant).
    pub nbr_unreach: bool,
    /// OPT_PATH_NLA (network-significant).
    pub path_nla: Option<IpAddr>,
    /// OPT_FRAGMENT, as sent on data packets (flag OP_ENCODED clear).
    pub fragment: Option<Fragment>,
    /// OPT_FRAGMENT with the OP_ENCODED flag, as a parity packet carries it (RFC 3208
    /// Appendix A): the FEC encoding of the original options' bodies, kept verbatim (U byte,
    /// first sequence number, offset, length). At most one of this and `fragment` is present.
    pub fragment_encoded: Option<[u8; FRAGMENT_BODY_LEN]>,
    /// OPT_JOIN: minimum sequence number a late joiner may request.
    pub join: Option<u32>,
    /// OPT_SYN.
    pub syn: bool,
    /// OPT_FIN.
    pub fin: bool,
    /// OPT_RST.
    pub rst: Option<Rst>,
    /// OPT_PARITY_GRP: parity group number.
    pub parity_grp: Option<u32>,
    /// OPT_PGMCC_DATA.
    pub pgmcc_data: Option<PgmccData>,
    /// OPT_PGMCC_FEEDBACK.
    pub pgmcc_feedback: Option<PgmccFeedback>,
    /// OPT_TFMCC_DATA (ours, experimental).
    pub tfmcc_data: Option<TfmccData>,
    /// OPT_PSEUDOFED (ours, experimental code 0x30).
    pub pseudofed: Option<Pseudofed>,
    /// OPT_LOWWEIGHT (ours, experimental code 0x31).
    pub lowweight: Option<LowWeight>,
    /// OPT_GRTT (ours, experimental code 0x32).
    pub grtt: Option<Grtt>,
    /// OPT_FEC (ours, experimental code 0x33).
    pub fec: Option<Fec>,
    /// OPT_REPORT_BAR (ours, experimental code 0x34): the loss rate above which a receiver
    /// reports despite suppression, and which loss estimate receivers report.
    pub report_bar: Option<ReportBar>,
    /// OPT_ACK_PROOF (ours, experimental code 0x35): a data packet's nonce, or an ACK's
    /// proof of receipt.
    pub ack_proof: Option<AckProof>,
    /// OPT_OUTCOME (ours, experimental code 0x36): a receiver's delivery report.
    pub outcome: Option<Outcome>,
    /// OPT_MANIFEST (ours, experimental code 0x37): the file a session carries.
    pub manifest: Option<Manifest>,
    /// Options this codec does not interpret (including OPT_CR, OPT_CRQST, OPT_INVALID).
    pub unknown: Vec<UnknownOption<'a>>,
}

/// One known option's body (everything after the 3-byte option header): its code, the value
/// [`Options`] keeps for it, and its parser and emitter, side by side in the option's file.
trait Codec {
    /// What [`Options`] stores for this option.
    type Value;
    /// The option code.
    const CODE: u8;
    /// The option's name in errors.
    const NAME: &'static str;

    /// Parses a body. Checks the length before reading anything; never panics.
    fn parse(body: &[u8]) -> Result<Self::Value>;

    /// Bytes the body of `v` takes on the wire (at most 252).
    fn body_len(v: &Self::Value) -> usize;

    /// Writes `v` to `body`, which is exactly `body_len(v)` zero bytes. Fails when `v` cannot
    /// be encoded.
    fn emit(v: &Self::Value, body: &mut [u8]) -> Result<()>;

    /// [`Error::BadOptionLength`] for `body` (the error's `len` is the whole option's).
    fn bad(body: &[u8], expected: &'static str) -> Error {
        Error::BadOptionLength {
            name: Self::NAME,
            code: Self::CODE,
            len: body.len() + OPT_HEADER_LEN,
            expected,
        }
    }
}

/// Reads the big-endian `u16` at `field` of a body whose length the caller checked.
fn get16(body: &[u8], field: Range<usize>) -> u16 {
    be16(&body[field], 0)
}

/// Reads the big-endian `u32` at `field` of a body whose length the caller checked.
fn get32(body: &[u8], field: Range<usize>) -> u32 {
    be32(&body[field], 0)
}

/// Writes `v` big-endian at `field` of a body sized by [`Codec::body_len`].
fn set16(body: &mut [u8], field: Range<usize>, v: u16) {
    put16(&mut body[field], 0, v);
}

/// Writes `v` big-endian at `field` of a body sized by [`Codec::body_len`].
fn set32(body: &mut [u8], field: Range<usize>, v: u32) {
    put32(&mut body[field], 0, v);
}

/// Parses a known option into its slot; a second one is [`Error::DuplicateOption`] (after
/// its body was found valid, as the codec has always checked).
fn take<C: Codec>(slot: &mut Option<C::Value>, body: &[u8]) -> Result<()> {
    let v = C::parse(body)?;
    if slot.is_some() {
        return Err(Error::DuplicateOption(C::CODE));
    }
    *slot = Some(v);
    Ok(())
}

/// [`take`] for an option whose presence is all it says (OPT_SYN, OPT_FIN, OPT_NBR_UNREACH).
fn take_flag<C: Codec<Value = ()>>(slot: &mut bool, body: &[u8]) -> Result<()> {
    C::parse(body)?;
    if *slot {
        return Err(Error::DuplicateOption(C::CODE));
    }
    *slot = true;
    Ok(())
}

/// Encodes one known option's body on the stack and hands it to `f(code, flags, body)`; our
/// known options are always sent with flags 0 (OPX "ignore", F clear).
fn put<C, F>(v: &C::Value, f: &mut F) -> Result<()>
where
    C: Codec,
    F: FnMut(u8, u8, &[u8]) -> Result<()>,
{
    let mut buf = [0u8; MAX_BODY];
    let body = buf
        .get_mut(..C::body_len(v))
        .ok_or(Error::Unencodable("option body longer than 252 bytes"))?;
    C::emit(v, body)?;
    f(C::CODE, 0, body)
}

impl Options<'static> {
    /// The options of a NAK, NNAK or NCF for several sequence numbers: the ones after the
    /// first (which goes in the header) in OPT_NAK_LIST (at most [`MAX_NAK_LIST`]; extra
    /// ones are dropped), and an optional pgmcc receiver report.
    pub fn nak(rest: &[u32], report: Option<PgmccFeedback>) -> Options<'static> {
        let list = (!rest.is_empty()).then(|| {
            let mut l = SqnList::new();
            for &q in rest.iter().take(MAX_NAK_LIST) {
                let _ = l.push(q);
            }
            l
        });
        Options {
            nak_list: list,
            pgmcc_feedback: report,
            ..Options::default()
        }
    }
}

impl<'a> Options<'a> {
    /// True when no option is present.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Number of option TLVs (OPT_LENGTH not counted).
    pub fn count(&self) -> usize {
        let mut n = 0;
        // Count through the same path the encoder uses so the two can never disagree.
        let _ = self.encode_each(|_, _, _| {
            n += 1;
            Ok(())
        });
        n
    }

    /// True when any known option here is network-significant for a packet of type `pt`
    /// (the sender sets the header's OPT_NETWORK bit from this, RFC 3208 §8).
    pub fn has_network_significant(&self, pt: PacketType) -> bool {
        self.nak_list.is_some()
            || self.redirect.is_some()
            || self.parity_prm.is_some()
            || (self.curr_tgsize.is_some() && pt != PacketType::Odata)
            || self.nak_bo_ivl.is_some()
            || self.nak_bo_rng.is_some()
            || self.nbr_unreach
            || self.path_nla.is_some()
    }

    /// Calls `f(code, flags, body)` for every option in emission order.
    fn encode_each<F>(&self, mut f: F) -> Result<()>
    where
        F: FnMut(u8, u8, &[u8]) -> Result<()>,
    {
        // Network-significant options first (RFC 3208 §9.1).
        if let Some(v) = &self.nak_list {
            put::<SqnList, _>(v, &mut f)?;
        }
        if let Some(v) = &self.redirect {
            put::<redirect::Redirect, _>(v, &mut f)?;
        }
        if let Some(v) = &self.parity_prm {
            put::<ParityPrm, _>(v, &mut f)?;
        }
        if let Some(v) = &self.curr_tgsize {
            put::<fec::CurrTgsize, _>(v, &mut f)?;
        }
        if let Some(v) = &self.nak_bo_ivl {
            put::<NakBoIvl, _>(v, &mut f)?;
        }
        if let Some(v) = &self.nak_bo_rng {
            put::<NakBoRng, _>(v, &mut f)?;
        }
        if self.nbr_unreach {
            put::<network::NbrUnreach, _>(&(), &mut f)?;
        }
        if let Some(v) = &self.path_nla {
            put::<network::PathNla, _>(v, &mut f)?;
        }
        if let Some(v) = &self.fragment {
            put::<Fragment, _>(v, &mut f)?;
        }
        if let Some(body) = &self.fragment_encoded {
            if self.fragment.is_some() {
                return Err(Error::Unencodable("OPT_FRAGMENT both plain and encoded"));
            }
            f(OPT_FRAGMENT, OP_ENCODED, body)?;
        }
        if let Some(v) = &self.join {
            put::<join::Join, _>(v, &mut f)?;
        }
        if self.syn {
            put::<session::Syn, _>(&(), &mut f)?;
        }
        if self.fin {
            put::<session::Fin, _>(&(), &mut f)?;
        }
        if let Some(v) = &self.rst {
            put::<Rst, _>(v, &mut f)?;
        }
        if let Some(v) = &self.parity_grp {
            put::<fec::ParityGrp, _>(v, &mut f)?;
        }
        if let Some(v) = &self.pgmcc_data {
            put::<PgmccData, _>(v, &mut f)?;
        }
        if let Some(v) = &self.pgmcc_feedback {
            put::<PgmccFeedback, _>(v, &mut f)?;
        }
        if let Some(v) = &self.tfmcc_data {
            put::<TfmccData, _>(v, &mut f)?;
        }
        if let Some(v) = &self.pseudofed {
            put::<Pseudofed, _>(v, &mut f)?;
        }
        if let Some(v) = &self.lowweight {
            put::<LowWeight, _>(v, &mut f)?;
        }
        if let Some(v) = &self.grtt {
            put::<Grtt, _>(v, &mut f)?;
        }
        if let Some(v) = &self.fec {
            put::<Fec, _>(v, &mut f)?;
        }
        if let Some(v) = &self.report_bar {
            put::<experimental::ReportBar, _>(v, &mut f)?;
        }
        if let Some(v) = &self.ack_proof {
            put::<AckProof, _>(v, &mut f)?;
        }
        if let Some(v) = &self.outcome {
            put::<Outcome, _>(v, &mut f)?;
        }
        if let Some(v) = &self.manifest {
            put::<Manifest, _>(v, &mut f)?;
        }
        for u in &self.unknown {
            if u.code > OPT_MASK || u.code == OPT_LENGTH {
                return Err(Error::Unencodable("unknown option code must be 1..=127"));
            }
            if u.data.len() > MAX_BODY {
                return Err(Error::Unencodable("option body longer than 252 bytes"));
            }
            f(u.code, u.flags, u.data)?;
        }
        Ok(())
    }

    /// Bytes the option area takes on the wire (0 when there are no options).
    pub fn buffer_len(&self) -> usize {
        let mut len = 0;
        let _ = self.encode_each(|_, _, body| {
            len += OPT_HEADER_LEN + body.len();
            Ok(())
        });
        if len == 0 {
            0
        } else {
            OPT_LENGTH_LEN + len
        }
    }

    /// Writes the option area (OPT_LENGTH first, OPT_END on the last option) to the front of
    /// `buf` and returns its length. Fails if a field cannot be encoded, there are more than
    /// 16 options, the area exceeds 65535 bytes, or `buf` is too small.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        if self.is_empty() {
            // Still validate (an empty NAK list is an error, not "no options").
            self.encode_each(|_, _, _| Ok(()))?;
            return Ok(0);
        }
        let total = self.buffer_len();
        if self.count() > MAX_OPTIONS {
            return Err(Error::TooManyOptions);
        }
        let total16 = u16::try_from(total)
            .map_err(|_| Error::Unencodable("option area longer than 65535 bytes"))?;
        if buf.len() < total {
            return Err(Error::BufferTooSmall {
                needed: total,
                have: buf.len(),
            });
        }
        buf[opt_length::TYPE] = OPT_LENGTH;
        buf[opt_length::LEN] = OPT_LENGTH_LEN as u8;
        set16(buf, opt_length::TOTAL, total16);
        let mut off = OPT_LENGTH_LEN;
        let mut last = off;
        self.encode_each(|code, flags, body| {
            let len = OPT_HEADER_LEN + body.len();
            last = off;
            let opt = &mut buf[off..off + len];
            opt[opt_header::TYPE] = code;
            // `len` <= 255 by construction of every body (checked for unknown ones).
            opt[opt_header::LEN] = len as u8;
            opt[opt_header::FLAGS] = flags;
            opt[opt_header::BODY..].copy_from_slice(body);
            off += len;
            Ok(())
        })?;
        buf[last + opt_header::TYPE] |= OPT_END;
        Ok(total)
    }

    /// Parses the option area at the front of `area` (the bytes after the type-specific
    /// header). Returns the options and the bytes they occupy (OPT_LENGTH's total).
    pub fn parse(area: &'a [u8]) -> Result<(Options<'a>, usize)> {
        if area.len() < OPT_LENGTH_LEN {
            return Err(Error::Truncated {
                what: "OPT_LENGTH",
                needed: OPT_LENGTH_LEN,
                have: area.len(),
            });
        }
        if area[opt_length::TYPE] != OPT_LENGTH
            || usize::from(area[opt_length::LEN]) != OPT_LENGTH_LEN
        {
            return Err(Error::BadOptLength {
                code: area[opt_length::TYPE],
                len: area[opt_length::LEN],
            });
        }
        let total = usize::from(get16(area, opt_length::TOTAL));
        if total < OPT_LENGTH_LEN + OPT_HEADER_LEN || total > area.len() {
            return Err(Error::OptionsOverrun {
                total,
                available: area.len(),
            });
        }
        let area = &area[..total];
        let mut opts = Options::default();
        let mut off = OPT_LENGTH_LEN;
        let mut count = 0;
        loop {
            // The type and length bytes (everything before the flags) must be there.
            if off + opt_header::FLAGS > total {
                return Err(Error::MissingOptEnd);
            }
            let type_byte = area[off + opt_header::TYPE];
            let code = type_byte & OPT_MASK;
            let len = usize::from(area[off + opt_header::LEN]);
            if len < OPT_HEADER_LEN {
                return Err(Error::OptionLoop {
                    code,
                    offset: off,
                    len,
                });
            }
            if off + len > total {
                return Err(Error::OptionOverrun {
                    code,
                    offset: off,
                    len,
                });
            }
            count += 1;
            if count > MAX_OPTIONS {
                return Err(Error::TooManyOptions);
            }
            let opt = &area[off..off + len];
            let flags = opt[opt_header::FLAGS];
            let body = &opt[opt_header::BODY..];
            opts.parse_one(code, flags, body)?;
            off += len;
            if type_byte & OPT_END != 0 {
                if off != total {
                    return Err(Error::TrailingOptionBytes(total - off));
                }
                return Ok((opts, total));
            }
        }
    }

    /// Files one option (`body` excludes the 3-byte header) into its typed field, or keeps it
    /// verbatim in [`Options::unknown`].
    fn parse_one(&mut self, code: u8, flags: u8, body: &'a [u8]) -> Result<()> {
        match code {
            OPT_LENGTH => return Err(Error::DuplicateOption(OPT_LENGTH)),
            OPT_FRAGMENT if flags & OP_ENCODED != 0 => {
                let raw = <[u8; FRAGMENT_BODY_LEN]>::try_from(body)
                    .map_err(|_| <Fragment as Codec>::bad(body, "16"))?;
                if self.fragment.is_some() || self.fragment_encoded.is_some() {
                    return Err(Error::DuplicateOption(OPT_FRAGMENT));
                }
                self.fragment_encoded = Some(raw);
            }
            OPT_FRAGMENT if self.fragment_encoded.is_some() => {
                return Err(Error::DuplicateOption(OPT_FRAGMENT))
            }
            OPT_FRAGMENT => take::<Fragment>(&mut self.fragment, body)?,
            OPT_NAK_LIST => take::<SqnList>(&mut self.nak_list, body)?,
            OPT_JOIN => take::<join::Join>(&mut self.join, body)?,
            OPT_NAK_BO_IVL => take::<NakBoIvl>(&mut self.nak_bo_ivl, body)?,
            OPT_NAK_BO_RNG => take::<NakBoRng>(&mut self.nak_bo_rng, body)?,
            OPT_REDIRECT => take::<redirect::Redirect>(&mut self.redirect, body)?,
            OPT_PARITY_PRM => take::<ParityPrm>(&mut self.parity_prm, body)?,
            OPT_PARITY_GRP => take::<fec::ParityGrp>(&mut self.parity_grp, body)?,
            OPT_CURR_TGSIZE => take::<fec::CurrTgsize>(&mut self.curr_tgsize, body)?,
            OPT_NBR_UNREACH => take_flag::<network::NbrUnreach>(&mut self.nbr_unreach, body)?,
            OPT_PATH_NLA => take::<network::PathNla>(&mut self.path_nla, body)?,
            OPT_SYN => take_flag::<session::Syn>(&mut self.syn, body)?,
            OPT_FIN => take_flag::<session::Fin>(&mut self.fin, body)?,
            OPT_RST => take::<Rst>(&mut self.rst, body)?,
            OPT_PGMCC_DATA => take::<PgmccData>(&mut self.pgmcc_data, body)?,
            OPT_PGMCC_FEEDBACK => take::<PgmccFeedback>(&mut self.pgmcc_feedback, body)?,
            OPT_TFMCC_DATA => take::<TfmccData>(&mut self.tfmcc_data, body)?,
            OPT_PSEUDOFED => take::<Pseudofed>(&mut self.pseudofed, body)?,
            OPT_LOWWEIGHT => take::<LowWeight>(&mut self.lowweight, body)?,
            OPT_GRTT => take::<Grtt>(&mut self.grtt, body)?,
            OPT_FEC => take::<Fec>(&mut self.fec, body)?,
            OPT_REPORT_BAR => take::<experimental::ReportBar>(&mut self.report_bar, body)?,
            OPT_ACK_PROOF => take::<AckProof>(&mut self.ack_proof, body)?,
            OPT_OUTCOME => take::<Outcome>(&mut self.outcome, body)?,
            OPT_MANIFEST => take::<Manifest>(&mut self.manifest, body)?,
            _ => self.unknown.push(UnknownOption {
                code,
                flags,
                data: body,
            }),
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Parses an option area, dropping the length (shared by the options' own tests).
    pub(crate) fn parse(bytes: &[u8]) -> Result<Options<'_>> {
        Options::parse(bytes).map(|(o, _)| o)
    }

    /// Every codec answers for the code its `parse_one` arm and `put` use.
    #[test]
    fn codec_codes_match_their_constants() {
        assert_eq!(<Fragment as Codec>::CODE, OPT_FRAGMENT);
        assert_eq!(<SqnList as Codec>::CODE, OPT_NAK_LIST);
        assert_eq!(<join::Join as Codec>::CODE, OPT_JOIN);
        assert_eq!(<NakBoIvl as Codec>::CODE, OPT_NAK_BO_IVL);
        assert_eq!(<NakBoRng as Codec>::CODE, OPT_NAK_BO_RNG);
        assert_eq!(<redirect::Redirect as Codec>::CODE, OPT_REDIRECT);
        assert_eq!(<ParityPrm as Codec>::CODE, OPT_PARITY_PRM);
        assert_eq!(<fec::ParityGrp as Codec>::CODE, OPT_PARITY_GRP);
        assert_eq!(<fec::CurrTgsize as Codec>::CODE, OPT_CURR_TGSIZE);
        assert_eq!(<network::NbrUnreach as Codec>::CODE, OPT_NBR_UNREACH);
        assert_eq!(<network::PathNla as Codec>::CODE, OPT_PATH_NLA);
        assert_eq!(<session::Syn as Codec>::CODE, OPT_SYN);
        assert_eq!(<session::Fin as Codec>::CODE, OPT_FIN);
        assert_eq!(<Rst as Codec>::CODE, OPT_RST);
        assert_eq!(<PgmccData as Codec>::CODE, OPT_PGMCC_DATA);
        assert_eq!(<PgmccFeedback as Codec>::CODE, OPT_PGMCC_FEEDBACK);
        assert_eq!(<TfmccData as Codec>::CODE, OPT_TFMCC_DATA);
        assert_eq!(<Pseudofed as Codec>::CODE, OPT_PSEUDOFED);
        assert_eq!(<LowWeight as Codec>::CODE, OPT_LOWWEIGHT);
        assert_eq!(<Grtt as Codec>::CODE, OPT_GRTT);
        assert_eq!(<Fec as Codec>::CODE, OPT_FEC);
        assert_eq!(<experimental::ReportBar as Codec>::CODE, OPT_REPORT_BAR);
        assert_eq!(<AckProof as Codec>::CODE, OPT_ACK_PROOF);
        assert_eq!(<Outcome as Codec>::CODE, OPT_OUTCOME);
        assert_eq!(<Manifest as Codec>::CODE, OPT_MANIFEST);
    }

    #[test]
    fn malformed_areas() {
        // Zero-length option: would loop.
        assert!(matches!(
            parse(&[0, 4, 0, 8, 0x0d, 0, 0, 0]),
            Err(Error::OptionLoop { .. })
        ));
        // Option length past the area.
        assert!(matches!(
            parse(&[0, 4, 0, 8, 0x8d, 9, 0, 0]),
            Err(Error::OptionOverrun { .. })
        ));
        // Total beyond the buffer.
        assert!(matches!(
            parse(&[0, 4, 0, 9, 0x8d, 4, 0, 0]),
            Err(Error::OptionsOverrun { .. })
        ));
        // No OPT_END.
        assert_eq!(
            parse(&[0, 4, 0, 8, 0x0d, 4, 0, 0]),
            Err(Error::MissingOptEnd)
        );
        // First option is not OPT_LENGTH.
        assert!(matches!(
            parse(&[0x0d, 4, 0, 8, 0x8d, 4, 0, 0]),
            Err(Error::BadOptLength { .. })
        ));
        // Duplicate SYN.
        assert_eq!(
            parse(&[0, 4, 0, 12, 0x0d, 4, 0, 0, 0x8d, 4, 0, 0]),
            Err(Error::DuplicateOption(OPT_SYN))
        );
        // OPT_JOIN with the wrong length.
        assert!(matches!(
            parse(&[0, 4, 0, 8, 0x83, 4, 0, 0]),
            Err(Error::BadOptionLength { code: OPT_JOIN, .. })
        ));
        // Bytes after OPT_END.
        assert_eq!(
            parse(&[0, 4, 0, 9, 0x8d, 4, 0, 0, 0]),
            Err(Error::TrailingOptionBytes(1))
        );
    }

    #[test]
    fn unknown_option_is_preserved_with_its_opx() {
        let b = [0, 4, 0, 10, 0x80 | 0x20, 6, 0x02, 0xaa, 0xbb, 0xcc];
        let o = parse(&b).unwrap();
        assert_eq!(o.unknown.len(), 1);
        assert_eq!(o.unknown[0].opx(), Opx::Discard);
        assert_eq!(o.unknown[0].data, &[0xaa, 0xbb, 0xcc]);
        let mut out = [0u8; 10];
        assert_eq!(o.emit(&mut out), Ok(10));
        assert_eq!(out, b);
    }

    #[test]
    fn seventeen_options_rejected() {
        let mut b = vec![0, 4, 0, 0];
        for i in 0..17 {
            let end = if i == 16 { 0x80 } else { 0 };
            b.extend_from_slice(&[end | 0x20, 3]);
            b.push(0);
        }
        let total = b.len() as u16;
        b[2..4].copy_from_slice(&total.to_be_bytes());
        assert_eq!(parse(&b), Err(Error::TooManyOptions));
    }
}
