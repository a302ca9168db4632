//! `pgm-wire`: the PGM (RFC 3208) packet codec, with the pgmcc ACK and options exactly as
//! OpenPGM (libpgm 5.3) puts them on the wire.
//!
//! Two levels, as in smoltcp's `wire` module:
//!
//! * [`Packet`] is a zero-copy view over any `AsRef<[u8]>` buffer: field getters and setters
//!   for the 16-byte common header, checksum computation and verification.
//! * [`Repr`] is a plain, validated value for a whole packet: common header fields, the
//!   type-specific [`Body`] (SPM, POLL, POLR, ODATA, RDATA, NAK, NNAK, NCF, SPMR, ACK), the
//!   [`Options`] and the payload. [`Repr::parse`] validates everything; [`Repr::emit`] writes
//!   a packet with its checksum; [`Repr::buffer_len`] says how big the buffer must be.
//!
//! Rules: parsing never panics, whatever the input; every malformed datagram yields one
//! [`Error`] variant (use [`Error::kind`] as a counter key). Emitting never panics either: a
//! short buffer or an unencodable value is an error. All multi-byte fields are big-endian.
//!
//! Where OpenPGM and RFC 3208 differ, the wire follows OpenPGM; `docs/wire.md` lists each
//! difference.
//!
//! ```
//! use pgm_wire::{Body, DataRepr, Gsi, Options, PgmccData, Repr, Tsi};
//! use std::net::{IpAddr, Ipv4Addr};
//!
//! let tsi = Tsi { gsi: Gsi([1, 2, 3, 4, 5, 6]), sport: 4000 };
//! let odata = Repr::downstream(tsi, 7500, Body::Odata(DataRepr { sqn: 10, trail: 0 }))
//!     .with_options(Options {
//!         pgmcc_data: Some(PgmccData { tstamp: 1234, acker: IpAddr::V4(Ipv4Addr::UNSPECIFIED) }),
//!         ..Options::default()
//!     })
//!     .with_payload(b"hello");
//! let bytes = odata.to_vec()?;
//! assert_eq!(Repr::parse(&bytes)?, odata);
//! # Ok::<(), pgm_wire::Error>(())
//! ```

pub mod ack;
pub mod checksum;
pub mod data;
pub mod error;
pub mod header;
pub mod nak;
pub mod options;
pub mod poll;
pub mod repr;
pub mod spm;
pub mod types;

pub use ack::AckRepr;
pub use data::DataRepr;
pub use error::{Error, Result};
pub use header::{Packet, HEADER_LEN, OPT_NETWORK, OPT_PARITY, OPT_PRESENT, OPT_VAR_PKTLEN};
pub use nak::NakRepr;
pub use options::{
    AckProof, Fec, Fragment, Grtt, LowWeight, Manifest, NakBoIvl, NakBoRng, Options, Opx, Outcome,
    ParityPrm, PgmccData, PgmccFeedback, Pseudofed, RepList, ReportBar, Rst, SqnList, TfmccData,
    UnknownOption, FEC_RS_VANDERMONDE_GF256, FRAGMENT_BODY_LEN, LW_NO_ACKS, LW_QUICK_NAK,
    MAX_REASON, MAX_REPRESENTATIVES, OPT_ACK_PROOF, OPT_FEC, OPT_GRTT, OPT_LOWWEIGHT, OPT_OUTCOME,
    OPT_PSEUDOFED, OPT_REPORT_BAR, OUTCOME_AWAITING_PASS, OUTCOME_COMPLETE, OUTCOME_FAILED,
    OUTCOME_PARTIAL, PF_CI, PF_FULL, PF_HAVE_CI, RB_INTERVALS,
};
pub use poll::{PollRepr, PolrRepr};
pub use repr::{Body, ChecksumPolicy, Repr};
pub use spm::SpmRepr;
pub use types::{Gsi, PacketType, Tsi, TsiParseError, AFI_IP, AFI_IP6};
