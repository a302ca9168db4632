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

use core::fmt;
use std::net::IpAddr;

use crate::error::{Error, Result};
use crate::types::{afi_of, be16, be32, nla_len, put16, put32, read_nla, PacketType};

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
/// Most sequence numbers one OPT_NAK_LIST can carry (length byte limit: 4 + 4*62 = 252).
pub const MAX_NAK_LIST: usize = 62;

/// Length of OPT_LENGTH.
const OPT_LENGTH_LEN: usize = 4;
/// Length of every option's header (type, length, flags).
const OPT_HEADER_LEN: usize = 3;

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

/// OPT_FRAGMENT body (§9.2): where this TSDU sits inside its APDU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fragment {
    /// Sequence number of the APDU's first fragment.
    pub first_sqn: u32,
    /// Byte offset of this fragment inside the APDU.
    pub offset: u32,
    /// Total APDU length in bytes.
    pub apdu_len: u32,
}

/// A list of up to [`MAX_NAK_LIST`] sequence numbers, stored inline (no allocation).
#[derive(Clone, Copy)]
pub struct SqnList {
    len: u8,
    sqns: [u32; MAX_NAK_LIST],
}

impl SqnList {
    /// An empty list.
    pub const fn new() -> SqnList {
        SqnList {
            len: 0,
            sqns: [0; MAX_NAK_LIST],
        }
    }

    /// Builds a list from a slice; fails if it holds more than [`MAX_NAK_LIST`] entries.
    pub fn from_slice(s: &[u32]) -> Result<SqnList> {
        let mut l = SqnList::new();
        for &q in s {
            l.push(q)?;
        }
        Ok(l)
    }

    /// Appends a sequence number; fails when the list is full.
    pub fn push(&mut self, sqn: u32) -> Result<()> {
        let i = usize::from(self.len);
        if i >= MAX_NAK_LIST {
            return Err(Error::Unencodable(
                "OPT_NAK_LIST holds at most 62 sequence numbers",
            ));
        }
        self.sqns[i] = sqn;
        self.len += 1;
        Ok(())
    }

    /// The entries.
    pub fn as_slice(&self) -> &[u32] {
        &self.sqns[..usize::from(self.len)]
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True when the list holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Default for SqnList {
    fn default() -> Self {
        SqnList::new()
    }
}

impl PartialEq for SqnList {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for SqnList {}

impl fmt::Debug for SqnList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// OPT_NAK_BO_IVL body (§15.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NakBoIvl {
    /// NAK back-off interval, microseconds.
    pub ivl: u32,
    /// Sequence number from which the interval applies.
    pub sqn: u32,
}

/// OPT_NAK_BO_RNG body (§15.4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NakBoRng {
    /// Maximum back-off interval, microseconds.
    pub max_ivl: u32,
    /// Minimum back-off interval, microseconds.
    pub min_ivl: u32,
}

/// OPT_PARITY_PRM body (§11.8.1). Bit values follow OpenPGM (`PGM_PARITY_PRM_PRO` = 0x01,
/// `PGM_PARITY_PRM_OND` = 0x02), which is the reverse of the RFC figure's `P O` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ParityPrm {
    /// The source sends pro-active parity packets.
    pub proactive: bool,
    /// The source sends on-demand parity packets.
    pub on_demand: bool,
    /// Transmission group size.
    pub tgs: u32,
}

/// OPT_RST body (§9.8.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Rst {
    /// N bit: NAKs for earlier ODATA will go unanswered.
    pub no_repairs: bool,
    /// 6-bit application error code (0 = unknown reason).
    pub error_code: u8,
}

/// OPT_PGMCC_DATA body: the sender's timestamp and the current acker (OpenPGM
/// `struct pgm_opt_pgmcc_data`: rsv u8, tstamp u32, AFI u16, rsv u16, NLA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PgmccData {
    /// Send time, milliseconds in the sender's clock (echoed back in feedback).
    pub tstamp: u32,
    /// The elected acker; the unspecified address (0.0.0.0 / ::) asks for an election.
    pub acker: IpAddr,
}

/// OPT_PGMCC_FEEDBACK body: a receiver report (OpenPGM `struct pgm_opt_pgmcc_feedback`:
/// rsv u8, tstamp u32, AFI u16, loss_rate u16, NLA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PgmccFeedback {
    /// Timestamp of the latest data packet, plus the receiver's hold time (ms).
    pub tstamp: u32,
    /// Loss rate, 0 = none, 65535 = 100% (pgmcc draft §2.1.3). OpenPGM sends the low 16 bits
    /// of a 16.16 fixed-point moving average whose input is scaled by its `ack_c_p` knob, so
    /// its values are comparable only between OpenPGM receivers, and 100% wraps to 0.
    pub loss_rate: u16,
    /// The reporting receiver's address (its identity for acker election).
    pub rx: IpAddr,
}

/// OPT_TFMCC_DATA body (ours, experimental; `docs/tfmcc.md`): rsv u8, round u16, round_ms
/// u16, r_max_ms u16, clr_ivl_ms u16, supp_rate u32, send_rate u32 (option length 20).
/// Rates are in thousandths of a packet per second; [`TfmccData::NO_RATE`] means none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TfmccData {
    /// Feedback round number (wraps).
    pub round: u16,
    /// Duration of a feedback round, ms: the spread of the receivers' feedback timers.
    pub round_ms: u16,
    /// The largest RTT the sender knows of, ms: receivers without their own RTT compute
    /// their rate with it.
    pub r_max_ms: u16,
    /// How often the current limiting receiver reports, ms (its RTT).
    pub clr_ivl_ms: u16,
    /// The lowest rate reported in this round so far (feedback suppression).
    pub supp_rate: u32,
    /// The current sending rate.
    pub send_rate: u32,
}

impl TfmccData {
    /// "No rate" in [`TfmccData::supp_rate`] (nothing reported yet this round).
    pub const NO_RATE: u32 = u32::MAX;
}

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

/// [`LowWeight::flags`]: receivers send no pgmcc ACKs (not as acker, not answering
/// elections); the sender reads congestion from NAKs alone.
pub const LW_NO_ACKS: u8 = 0x01;
/// [`LowWeight::flags`]: the receiver named in OPT_PGMCC_DATA's acker field NAKs a gap at
/// once (no random back-off): the quick NAKer.
pub const LW_QUICK_NAK: u8 = 0x02;

/// OPT_LOWWEIGHT body (ours, code [`OPT_LOWWEIGHT`]), on ODATA next to OPT_PGMCC_DATA whose
/// acker field names the worst receiver. Layout after the 3-byte option header:
/// `flags u8, rsv u8, rate u32` (option length 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LowWeight {
    /// [`LW_NO_ACKS`], [`LW_QUICK_NAK`]; other bits are sent as 0 and ignored.
    pub flags: u8,
    /// The sender's current rate in thousandths of a packet per second (informational).
    pub rate: u32,
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
    /// OPT_FRAGMENT. On a parity packet (header [`OPT_PARITY`](crate::OPT_PARITY)) this is
    /// FEC-encoded data, not real values: check the header flag before using it.
    pub fragment: Option<Fragment>,
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
    /// Options this codec does not interpret (including OPT_CR, OPT_CRQST, OPT_INVALID).
    pub unknown: Vec<UnknownOption<'a>>,
}

/// Largest option body (length byte 255 minus the 3-byte header).
const MAX_BODY: usize = 255 - OPT_HEADER_LEN;

/// A stack buffer holding one encoded option body.
struct Body {
    buf: [u8; MAX_BODY],
    len: usize,
}

impl Body {
    fn new() -> Body {
        Body {
            buf: [0; MAX_BODY],
            len: 0,
        }
    }
    fn u8(&mut self, v: u8) -> &mut Self {
        self.buf[self.len] = v;
        self.len += 1;
        self
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        put16(&mut self.buf, self.len, v);
        self.len += 2;
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        put32(&mut self.buf, self.len, v);
        self.len += 4;
        self
    }
    fn nla(&mut self, a: &IpAddr) -> &mut Self {
        match a {
            IpAddr::V4(v) => self.buf[self.len..self.len + 4].copy_from_slice(&v.octets()),
            IpAddr::V6(v) => self.buf[self.len..self.len + 16].copy_from_slice(&v.octets()),
        }
        self.len += nla_len(a);
        self
    }
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
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
        if let Some(l) = &self.nak_list {
            if l.is_empty() {
                return Err(Error::Unencodable(
                    "OPT_NAK_LIST must hold at least one sequence number",
                ));
            }
            let mut b = Body::new();
            b.u8(0);
            for &q in l.as_slice() {
                b.u32(q);
            }
            f(OPT_NAK_LIST, 0, b.bytes())?;
        }
        if let Some(a) = &self.redirect {
            let mut b = Body::new();
            b.u8(0).u16(afi_of(a)).u16(0).nla(a);
            f(OPT_REDIRECT, 0, b.bytes())?;
        }
        if let Some(p) = &self.parity_prm {
            let bits = u8::from(p.proactive) | (u8::from(p.on_demand) << 1);
            let mut b = Body::new();
            b.u8(bits).u32(p.tgs);
            f(OPT_PARITY_PRM, 0, b.bytes())?;
        }
        if let Some(v) = self.curr_tgsize {
            let mut b = Body::new();
            b.u8(0).u32(v);
            f(OPT_CURR_TGSIZE, 0, b.bytes())?;
        }
        if let Some(v) = &self.nak_bo_ivl {
            let mut b = Body::new();
            b.u8(0).u32(v.ivl).u32(v.sqn);
            f(OPT_NAK_BO_IVL, 0, b.bytes())?;
        }
        if let Some(v) = &self.nak_bo_rng {
            let mut b = Body::new();
            b.u8(0).u32(v.max_ivl).u32(v.min_ivl);
            f(OPT_NAK_BO_RNG, 0, b.bytes())?;
        }
        if self.nbr_unreach {
            f(OPT_NBR_UNREACH, 0, &[0])?;
        }
        if let Some(a) = &self.path_nla {
            let mut b = Body::new();
            b.u8(0).nla(a);
            f(OPT_PATH_NLA, 0, b.bytes())?;
        }
        if let Some(v) = &self.fragment {
            let mut b = Body::new();
            b.u8(0).u32(v.first_sqn).u32(v.offset).u32(v.apdu_len);
            f(OPT_FRAGMENT, 0, b.bytes())?;
        }
        if let Some(v) = self.join {
            let mut b = Body::new();
            b.u8(0).u32(v);
            f(OPT_JOIN, 0, b.bytes())?;
        }
        if self.syn {
            f(OPT_SYN, 0, &[0])?;
        }
        if self.fin {
            f(OPT_FIN, 0, &[0])?;
        }
        if let Some(r) = &self.rst {
            if r.error_code > 0x3f {
                return Err(Error::Unencodable("OPT_RST error code is 6 bits (0..=63)"));
            }
            let byte = (u8::from(r.no_repairs) << 6) | r.error_code;
            f(OPT_RST, 0, &[byte])?;
        }
        if let Some(v) = self.parity_grp {
            let mut b = Body::new();
            b.u8(0).u32(v);
            f(OPT_PARITY_GRP, 0, b.bytes())?;
        }
        if let Some(v) = &self.pgmcc_data {
            let mut b = Body::new();
            b.u8(0)
                .u32(v.tstamp)
                .u16(afi_of(&v.acker))
                .u16(0)
                .nla(&v.acker);
            f(OPT_PGMCC_DATA, 0, b.bytes())?;
        }
        if let Some(v) = &self.pgmcc_feedback {
            let mut b = Body::new();
            b.u8(0)
                .u32(v.tstamp)
                .u16(afi_of(&v.rx))
                .u16(v.loss_rate)
                .nla(&v.rx);
            f(OPT_PGMCC_FEEDBACK, 0, b.bytes())?;
        }
        if let Some(v) = &self.tfmcc_data {
            let mut b = Body::new();
            b.u8(0)
                .u16(v.round)
                .u16(v.round_ms)
                .u16(v.r_max_ms)
                .u16(v.clr_ivl_ms)
                .u32(v.supp_rate)
                .u32(v.send_rate);
            f(OPT_TFMCC_DATA, 0, b.bytes())?;
        }
        if let Some(v) = &self.pseudofed {
            let mut b = Body::new();
            b.u8(v.flags)
                .u32(v.grtt_ms)
                .u8(v.wait_pct)
                .u8(v.supp_pct)
                .u32(v.ci_sqn)
                .u8(v.reps.len() as u8);
            for a in v.reps.as_slice() {
                b.u16(afi_of(a)).nla(a);
            }
            f(OPT_PSEUDOFED, 0, b.bytes())?;
        }
        if let Some(v) = &self.lowweight {
            let mut b = Body::new();
            b.u8(v.flags).u8(0).u32(v.rate);
            f(OPT_LOWWEIGHT, 0, b.bytes())?;
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
        buf[0] = OPT_LENGTH;
        buf[1] = OPT_LENGTH_LEN as u8;
        put16(buf, 2, total16);
        let mut off = OPT_LENGTH_LEN;
        let mut last = off;
        self.encode_each(|code, flags, body| {
            let len = OPT_HEADER_LEN + body.len();
            last = off;
            buf[off] = code;
            // `len` <= 255 by construction of every body (checked for unknown ones).
            buf[off + 1] = len as u8;
            buf[off + 2] = flags;
            buf[off + 3..off + len].copy_from_slice(body);
            off += len;
            Ok(())
        })?;
        buf[last] |= OPT_END;
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
        if area[0] != OPT_LENGTH || usize::from(area[1]) != OPT_LENGTH_LEN {
            return Err(Error::BadOptLength {
                code: area[0],
                len: area[1],
            });
        }
        let total = usize::from(be16(area, 2));
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
            if off + 2 > total {
                return Err(Error::MissingOptEnd);
            }
            let type_byte = area[off];
            let code = type_byte & OPT_MASK;
            let len = usize::from(area[off + 1]);
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
            let flags = area[off + 2];
            let body = &area[off + OPT_HEADER_LEN..off + len];
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

    fn parse_one(&mut self, code: u8, flags: u8, body: &'a [u8]) -> Result<()> {
        // `body` excludes the 3-byte header; `len` below is the whole option length.
        let len = body.len() + OPT_HEADER_LEN;
        let bad = |name: &'static str, expected: &'static str| Error::BadOptionLength {
            name,
            code,
            len,
            expected,
        };
        fn set<T>(slot: &mut Option<T>, v: T, code: u8) -> Result<()> {
            if slot.is_some() {
                return Err(Error::DuplicateOption(code));
            }
            *slot = Some(v);
            Ok(())
        }
        fn flag(slot: &mut bool, code: u8) -> Result<()> {
            if *slot {
                return Err(Error::DuplicateOption(code));
            }
            *slot = true;
            Ok(())
        }
        match code {
            OPT_LENGTH => return Err(Error::DuplicateOption(OPT_LENGTH)),
            OPT_FRAGMENT => {
                if len != 16 {
                    return Err(bad("OPT_FRAGMENT", "16"));
                }
                let v = Fragment {
                    first_sqn: be32(body, 1),
                    offset: be32(body, 5),
                    apdu_len: be32(body, 9),
                };
                set(&mut self.fragment, v, code)?;
            }
            OPT_NAK_LIST => {
                let n = (len.saturating_sub(4)) / 4;
                if len < 8 || (len - 4) % 4 != 0 || n > MAX_NAK_LIST {
                    return Err(bad("OPT_NAK_LIST", "4 + 4n, 1 <= n <= 62"));
                }
                let mut l = SqnList::new();
                for i in 0..n {
                    l.push(be32(body, 1 + 4 * i))?;
                }
                set(&mut self.nak_list, l, code)?;
            }
            OPT_JOIN => {
                if len != 8 {
                    return Err(bad("OPT_JOIN", "8"));
                }
                set(&mut self.join, be32(body, 1), code)?;
            }
            OPT_NAK_BO_IVL => {
                if len != 12 {
                    return Err(bad("OPT_NAK_BO_IVL", "12"));
                }
                let v = NakBoIvl {
                    ivl: be32(body, 1),
                    sqn: be32(body, 5),
                };
                set(&mut self.nak_bo_ivl, v, code)?;
            }
            OPT_NAK_BO_RNG => {
                if len != 12 {
                    return Err(bad("OPT_NAK_BO_RNG", "12"));
                }
                let v = NakBoRng {
                    max_ivl: be32(body, 1),
                    min_ivl: be32(body, 5),
                };
                set(&mut self.nak_bo_rng, v, code)?;
            }
            OPT_REDIRECT => {
                if len != 12 && len != 24 {
                    return Err(bad("OPT_REDIRECT", "12 (IPv4) or 24 (IPv6)"));
                }
                let afi = be16(body, 1);
                let a = read_nla(afi, &body[5..])?;
                if OPT_HEADER_LEN + 5 + nla_len(&a) != len {
                    return Err(bad(
                        "OPT_REDIRECT",
                        "12 (IPv4) or 24 (IPv6), matching its AFI",
                    ));
                }
                set(&mut self.redirect, a, code)?;
            }
            OPT_PARITY_PRM => {
                if len != 8 {
                    return Err(bad("OPT_PARITY_PRM", "8"));
                }
                let v = ParityPrm {
                    proactive: body[0] & 0x01 != 0,
                    on_demand: body[0] & 0x02 != 0,
                    tgs: be32(body, 1),
                };
                set(&mut self.parity_prm, v, code)?;
            }
            OPT_PARITY_GRP => {
                if len != 8 {
                    return Err(bad("OPT_PARITY_GRP", "8"));
                }
                set(&mut self.parity_grp, be32(body, 1), code)?;
            }
            OPT_CURR_TGSIZE => {
                if len != 8 {
                    return Err(bad("OPT_CURR_TGSIZE", "8"));
                }
                set(&mut self.curr_tgsize, be32(body, 1), code)?;
            }
            OPT_NBR_UNREACH => {
                if len != 4 {
                    return Err(bad("OPT_NBR_UNREACH", "4"));
                }
                flag(&mut self.nbr_unreach, code)?;
            }
            OPT_PATH_NLA => {
                let a = match len {
                    8 => read_nla(crate::types::AFI_IP, &body[1..])?,
                    20 => read_nla(crate::types::AFI_IP6, &body[1..])?,
                    _ => return Err(bad("OPT_PATH_NLA", "8 (IPv4) or 20 (IPv6)")),
                };
                set(&mut self.path_nla, a, code)?;
            }
            OPT_SYN => {
                if len != 4 {
                    return Err(bad("OPT_SYN", "4"));
                }
                flag(&mut self.syn, code)?;
            }
            OPT_FIN => {
                if len != 4 {
                    return Err(bad("OPT_FIN", "4"));
                }
                flag(&mut self.fin, code)?;
            }
            OPT_RST => {
                if len != 4 {
                    return Err(bad("OPT_RST", "4"));
                }
                let v = Rst {
                    no_repairs: body[0] & 0x40 != 0,
                    error_code: body[0] & 0x3f,
                };
                set(&mut self.rst, v, code)?;
            }
            OPT_PGMCC_DATA => {
                if len != 16 && len != 28 {
                    return Err(bad("OPT_PGMCC_DATA", "16 (IPv4) or 28 (IPv6)"));
                }
                let afi = be16(body, 5);
                let acker = read_nla(afi, &body[9..])?;
                if OPT_HEADER_LEN + 9 + nla_len(&acker) != len {
                    return Err(bad(
                        "OPT_PGMCC_DATA",
                        "16 (IPv4) or 28 (IPv6), matching its AFI",
                    ));
                }
                let v = PgmccData {
                    tstamp: be32(body, 1),
                    acker,
                };
                set(&mut self.pgmcc_data, v, code)?;
            }
            OPT_PGMCC_FEEDBACK => {
                if len != 16 && len != 28 {
                    return Err(bad("OPT_PGMCC_FEEDBACK", "16 (IPv4) or 28 (IPv6)"));
                }
                let afi = be16(body, 5);
                let rx = read_nla(afi, &body[9..])?;
                if OPT_HEADER_LEN + 9 + nla_len(&rx) != len {
                    return Err(bad(
                        "OPT_PGMCC_FEEDBACK",
                        "16 (IPv4) or 28 (IPv6), matching its AFI",
                    ));
                }
                let v = PgmccFeedback {
                    tstamp: be32(body, 1),
                    loss_rate: be16(body, 7),
                    rx,
                };
                set(&mut self.pgmcc_feedback, v, code)?;
            }
            OPT_TFMCC_DATA => {
                if len != 20 {
                    return Err(bad("OPT_TFMCC_DATA", "20"));
                }
                let v = TfmccData {
                    round: be16(body, 1),
                    round_ms: be16(body, 3),
                    r_max_ms: be16(body, 5),
                    clr_ivl_ms: be16(body, 7),
                    supp_rate: be32(body, 9),
                    send_rate: be32(body, 13),
                };
                set(&mut self.tfmcc_data, v, code)?;
            }
            OPT_PSEUDOFED => {
                const FIXED: usize = 12;
                let expected = "15 + n x (2 + NLA), n <= 8";
                if body.len() < FIXED {
                    return Err(bad("OPT_PSEUDOFED", expected));
                }
                let n = usize::from(body[11]);
                if n > MAX_REPRESENTATIVES {
                    return Err(bad("OPT_PSEUDOFED", expected));
                }
                let mut reps = RepList::new();
                let mut at = FIXED;
                for _ in 0..n {
                    if at + 2 > body.len() {
                        return Err(bad("OPT_PSEUDOFED", expected));
                    }
                    let a = read_nla(be16(body, at), &body[at + 2..])?;
                    at += 2 + nla_len(&a);
                    reps.push(a)?;
                }
                if at != body.len() {
                    return Err(bad("OPT_PSEUDOFED", expected));
                }
                let v = Pseudofed {
                    flags: body[0],
                    grtt_ms: be32(body, 1),
                    wait_pct: body[5],
                    supp_pct: body[6],
                    ci_sqn: be32(body, 7),
                    reps,
                };
                set(&mut self.pseudofed, v, code)?;
            }
            OPT_LOWWEIGHT => {
                if body.len() != 6 {
                    return Err(bad("OPT_LOWWEIGHT", "9"));
                }
                let v = LowWeight {
                    flags: body[0],
                    rate: be32(body, 2),
                };
                set(&mut self.lowweight, v, code)?;
            }
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
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn parse(bytes: &[u8]) -> Result<Options<'_>> {
        Options::parse(bytes).map(|(o, _)| o)
    }

    #[test]
    fn syn_only() {
        let b = [0x00, 0x04, 0x00, 0x08, 0x80 | OPT_SYN, 0x04, 0x00, 0x00];
        let o = parse(&b).unwrap();
        assert!(o.syn);
        assert_eq!(o.count(), 1);
        let mut out = [0u8; 8];
        assert_eq!(o.emit(&mut out), Ok(8));
        assert_eq!(out, b);
    }

    #[test]
    fn pgmcc_feedback_layout() {
        let o = Options {
            pgmcc_feedback: Some(PgmccFeedback {
                tstamp: 0x01020304,
                loss_rate: 0xabcd,
                rx: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 7)),
            }),
            ..Options::default()
        };
        let mut out = [0u8; 20];
        assert_eq!(o.emit(&mut out), Ok(20));
        assert_eq!(
            out,
            [
                0x00, 0x04, 0x00, 0x14, // OPT_LENGTH, total 20
                0x93, 0x10, 0x00, // OPT_PGMCC_FEEDBACK | OPT_END, len 16, flags
                0x00, 0x01, 0x02, 0x03, 0x04, // reserved, tstamp
                0x00, 0x01, 0xab, 0xcd, // AFI 1, loss_rate
                10, 0, 0, 7, // NLA
            ]
        );
    }

    #[test]
    fn tfmcc_data_layout() {
        let o = Options {
            tfmcc_data: Some(TfmccData {
                round: 0x0102,
                round_ms: 0x0304,
                r_max_ms: 0x0506,
                clr_ivl_ms: 0x0708,
                supp_rate: TfmccData::NO_RATE,
                send_rate: 0x0a0b0c0d,
            }),
            ..Options::default()
        };
        let mut out = [0u8; 24];
        assert_eq!(o.emit(&mut out), Ok(24));
        assert_eq!(
            out,
            [
                0x00, 0x04, 0x00, 0x18, // OPT_LENGTH, total 24
                0x9e, 0x14, 0x00, // OPT_TFMCC_DATA | OPT_END, len 20, flags
                0x00, 0x01, 0x02, 0x03, 0x04, // reserved, round, round_ms
                0x05, 0x06, 0x07, 0x08, // r_max_ms, clr_ivl_ms
                0xff, 0xff, 0xff, 0xff, // supp_rate: none
                0x0a, 0x0b, 0x0c, 0x0d, // send_rate
            ]
        );
        assert_eq!(parse(&out), Ok(o));
        // Any other length is malformed, not misread.
        let mut short = out;
        short[5] = 0x10;
        short[3] = 0x14;
        assert!(parse(&short[..20]).is_err());
    }

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

    #[test]
    fn lowweight_layout_and_round_trip() {
        let o = Options {
            lowweight: Some(LowWeight {
                flags: LW_NO_ACKS | LW_QUICK_NAK,
                rate: 0x0102_0304,
            }),
            ..Options::default()
        };
        let mut out = [0u8; 13];
        assert_eq!(o.emit(&mut out), Ok(13));
        assert_eq!(
            out,
            [
                0x00, 0x04, 0x00, 13, // OPT_LENGTH, total 13
                0xb1, 0x09, 0x00, // OPT_LOWWEIGHT | OPT_END, len 9, flags 0 (OPX ignore)
                0x03, 0x00, // flags, reserved
                0x01, 0x02, 0x03, 0x04, // rate
            ]
        );
        assert_eq!(parse(&out), Ok(o.clone()));
        assert_eq!(o.buffer_len(), 13);
        // Any other length is malformed, not misread.
        let mut short = out;
        short[5] = 0x08;
        short[3] = 12;
        assert!(parse(&short[..12]).is_err());
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

    #[test]
    fn empty_nak_list_cannot_be_emitted() {
        let o = Options {
            nak_list: Some(SqnList::new()),
            ..Options::default()
        };
        assert!(matches!(o.emit(&mut [0u8; 64]), Err(Error::Unencodable(_))));
    }
}
