//! Our own, experimental options, used by the comparison controllers and the NAK timers. None of them is in
//! RFC 3208, the pgmcc draft or OpenPGM:
//!
//! | code | option | controller | file |
//! |---|---|---|---|
//! | 0x1e | [`OPT_TFMCC_DATA`](super::OPT_TFMCC_DATA) | TFMCC baseline (`docs/tfmcc.md`) | `tfmcc.rs` |
//! | 0x30 | [`OPT_PSEUDOFED`](super::OPT_PSEUDOFED) | Pseudofed (`docs/pseudofed.md`) | `pseudofed.rs` |
//! | 0x31 | [`OPT_LOWWEIGHT`](super::OPT_LOWWEIGHT) | low-weight (`docs/lowweight.md`) | `lowweight.rs` |
//! | 0x32 | [`OPT_GRTT`](super::OPT_GRTT) | NAK timers, any controller (`docs/core.md`) | `grtt.rs` |
//! | 0x33 | [`OPT_FEC`](super::OPT_FEC) | FEC parity, any controller (`docs/core.md`) | `fec.rs` |
//! | 0x34 | [`OPT_REPORT_BAR`](super::OPT_REPORT_BAR) | pgmcc reports despite suppression (`docs/pgmcc.md`) | `report_bar.rs` |
//! | 0x35 | [`OPT_ACK_PROOF`](super::OPT_ACK_PROOF) | proof of receipt in pgmcc's ACKs (`docs/security.md`) | `ack_proof.rs` |
//! | 0x36 | [`OPT_OUTCOME`](super::OPT_OUTCOME) | receivers' delivery reports, on POLR (`docs/wire.md`) | `outcome.rs` |
//! | 0x37 | [`OPT_MANIFEST`](super::OPT_MANIFEST) | the file a session carries, on SPMs (`docs/wire.md`) | `manifest.rs` |
//!
//! The codes are unassigned in RFC 3208 and OpenPGM. We always send these options with
//! flags byte 0: OPX 00, "ignore", so a PGM peer or network element that does not know them
//! skips the option and keeps the packet (RFC 3208 §9); OpenPGM does exactly that. Our parser
//! reads them as known options whatever their flags. Wire layouts are in `docs/wire.md`.

mod ack_proof;
mod fec;
mod grtt;
mod lowweight;
mod manifest;
mod outcome;
mod pseudofed;
mod report_bar;
mod tfmcc;

pub use ack_proof::AckProof;
pub use fec::{Fec, FEC_RS_VANDERMONDE_GF256};
pub use grtt::Grtt;
pub use lowweight::{LowWeight, LW_NO_ACKS, LW_QUICK_NAK};
pub use manifest::Manifest;

/// The first bytes of `s`, at most `max`, cut at a character boundary (text in an option
/// body, whose length is bounded).
fn utf8_prefix(s: &str, max: usize) -> &[u8] {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s.as_bytes()[..end]
}
pub use outcome::{
    Outcome, MAX_REASON, OUTCOME_AWAITING_PASS, OUTCOME_COMPLETE, OUTCOME_FAILED, OUTCOME_PARTIAL,
};
pub use pseudofed::{Pseudofed, RepList, MAX_REPRESENTATIVES, PF_CI, PF_FULL, PF_HAVE_CI};
pub use report_bar::{ReportBar, RB_INTERVALS};
pub use tfmcc::TfmccData;
