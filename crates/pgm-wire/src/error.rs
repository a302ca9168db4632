//! The one error type of the codec.

use thiserror::Error;

/// Why a datagram could not be parsed, or a [`Repr`](crate::Repr) could not be emitted.
///
/// Every malformed input maps to exactly one variant; the parser never panics. A driver
/// normally counts the error (see [`Error::kind`]) and drops the datagram.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Error {
    /// The datagram ends before a structure it must contain.
    #[error("truncated: {what} needs {needed} bytes, only {have} present")]
    Truncated {
        /// Which structure was cut short.
        what: &'static str,
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes that were available.
        have: usize,
    },
    /// The version bits (high two bits of the type byte) are not 0.
    #[error("unsupported PGM version {0} (type byte high bits)")]
    BadVersion(u8),
    /// The type nibble names no PGM packet type.
    #[error("unknown PGM packet type 0x{0:02x}")]
    UnknownType(u8),
    /// The checksum field is non-zero and does not match the packet.
    #[error("checksum mismatch: packet carries 0x{stored:04x}, computed 0x{computed:04x}")]
    Checksum {
        /// Value found in the header.
        stored: u16,
        /// Value computed over the packet.
        computed: u16,
    },
    /// The TSDU length field disagrees with the bytes that follow the headers.
    #[error(
        "bad length: TSDU length field says {declared} bytes, {actual} bytes follow the headers"
    )]
    TsduLength {
        /// Value of the TSDU length field.
        declared: usize,
        /// Bytes actually present after header and options.
        actual: usize,
    },
    /// An NLA carries an address family other than 1 (IPv4) or 2 (IPv6).
    #[error("bad NLA address family {0} (expected 1 = IPv4 or 2 = IPv6)")]
    BadAfi(u16),
    /// OPT_PRESENT is set but the option area does not start with a valid OPT_LENGTH.
    #[error("option area must start with OPT_LENGTH (type 0x00, length 4), found type 0x{code:02x} length {len}")]
    BadOptLength {
        /// Type byte found.
        code: u8,
        /// Length byte found.
        len: u8,
    },
    /// OPT_LENGTH's total length overruns the packet or is too short to hold an option.
    #[error(
        "OPT_LENGTH total {total} is invalid ({available} bytes available after the fixed headers)"
    )]
    OptionsOverrun {
        /// Total option length claimed.
        total: usize,
        /// Bytes available.
        available: usize,
    },
    /// One option's length runs past the end of the option area.
    #[error(
        "option 0x{code:02x} at offset {offset} has length {len}, overrunning the option area"
    )]
    OptionOverrun {
        /// Option code.
        code: u8,
        /// Offset inside the option area.
        offset: usize,
        /// Length claimed.
        len: usize,
    },
    /// An option's length is below its 3-byte header: walking on would loop forever.
    #[error("option 0x{code:02x} at offset {offset} has length {len} (< 3): option loop")]
    OptionLoop {
        /// Option code.
        code: u8,
        /// Offset inside the option area.
        offset: usize,
        /// Length claimed.
        len: usize,
    },
    /// A known option has a length its layout does not allow.
    #[error("option {name} (0x{code:02x}) has length {len}, expected {expected}")]
    BadOptionLength {
        /// Option name.
        name: &'static str,
        /// Option code.
        code: u8,
        /// Length found.
        len: usize,
        /// Lengths allowed.
        expected: &'static str,
    },
    /// The option list ended without an option carrying OPT_END.
    #[error("option list has no OPT_END")]
    MissingOptEnd,
    /// Bytes follow the OPT_END option inside the area OPT_LENGTH declared.
    #[error("{0} bytes after OPT_END inside the declared option area")]
    TrailingOptionBytes(usize),
    /// More than 16 options (RFC 3208 §9).
    #[error("more than 16 options in one packet")]
    TooManyOptions,
    /// The same known option appears twice.
    #[error("option 0x{0:02x} appears more than once")]
    DuplicateOption(u8),
    /// A value cannot be represented on the wire (emit side).
    #[error("cannot encode: {0}")]
    Unencodable(&'static str),
    /// The output buffer is smaller than [`Repr::buffer_len`](crate::Repr::buffer_len).
    #[error("output buffer too small: need {needed} bytes, have {have}")]
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        have: usize,
    },
}

impl Error {
    /// A short, stable name for the error class, suitable as a counter key.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Truncated { .. } => "truncated",
            Error::BadVersion(_) => "bad_version",
            Error::UnknownType(_) => "unknown_type",
            Error::Checksum { .. } => "checksum",
            Error::TsduLength { .. } => "tsdu_length",
            Error::BadAfi(_) => "bad_afi",
            Error::BadOptLength { .. }
            | Error::OptionsOverrun { .. }
            | Error::OptionOverrun { .. }
            | Error::OptionLoop { .. }
            | Error::BadOptionLength { .. }
            | Error::MissingOptEnd
            | Error::TrailingOptionBytes(_)
            | Error::TooManyOptions
            | Error::DuplicateOption(_) => "bad_option",
            Error::Unencodable(_) => "unencodable",
            Error::BufferTooSmall { .. } => "buffer_too_small",
        }
    }
}

/// Result alias for the codec.
pub type Result<T> = core::result::Result<T, Error>;
