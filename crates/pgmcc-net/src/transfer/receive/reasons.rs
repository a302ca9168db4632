//! Why a received transfer is not whole, failed, or waits: typed, with words for people and
//! no command-line flags (an application adds its own hints).

use std::fmt;
use std::time::Duration;

use pgm_wire::Tsi;

use crate::transfer::Ranges;

/// This receiver does not have the stream's first packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartMissed {
    /// The first sequence number this receiver has.
    pub first_sqn: u32,
    /// The packet the source marked as the stream's start (OPT_SYN), when heard.
    pub syn_sqn: Option<u32>,
    /// Noticed at the session's end rather than before its first data.
    pub at_end: bool,
}

impl fmt::Display for StartMissed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self.first_sqn;
        match (self.syn_sqn, self.at_end) {
            (Some(s), true) => write!(
                f,
                "the stream starts at packet {s} but this receiver joined at packet {first}"
            ),
            (None, true) => write!(
                f,
                "this receiver never saw the stream's first packet (it started at packet {first}: it joined late, lost the start, or the source does not mark it with OPT_SYN, as OpenPGM does not)"
            ),
            (Some(s), false) => write!(
                f,
                "the stream starts at packet {s} but this receiver's first data is packet {first}: it joined late or lost the start"
            ),
            (None, false) => write!(
                f,
                "this receiver saw no packet marked as the stream's start (its first data is packet {first}): it joined late or lost the start, or the source marks none (OpenPGM sources do not)"
            ),
        }
    }
}

/// Packets of a session lost for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    /// The session.
    pub tsi: Tsi,
    /// First lost sequence number.
    pub first: u32,
    /// Last lost sequence number.
    pub last: u32,
}

impl fmt::Display for Lost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unrecoverable loss of packets {}..={} of session {} (the source no longer had them, or repairs failed)",
            self.first, self.last, self.tsi
        )
    }
}

/// Why a session's data is not the whole stream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shortfall {
    /// The start was missed.
    StartMissed(StartMissed),
    /// Packets were lost for good.
    Lost(Lost),
    /// What earlier passes missed, still missing.
    EarlierPasses,
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shortfall::StartMissed(m) => m.fmt(f),
            Shortfall::Lost(l) => l.fmt(f),
            Shortfall::EarlierPasses => f.write_str("what earlier passes missed"),
        }
    }
}

/// Which stream a session carries, by its manifest: for telling two streams apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamId {
    /// The announced name.
    pub name: String,
    /// The announced size (0 if none).
    pub size: u64,
}

impl StreamId {
    pub(crate) fn of(m: &pgm_wire::Manifest) -> StreamId {
        StreamId {
            name: m.name.clone(),
            size: m.size.unwrap_or(0),
        }
    }
}

/// Where the SHA-256 a stream was checked against came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verified {
    /// The application's expected hash ([`super::ReceiveConfig::expect_sha256`]).
    Expected,
    /// The source's manifest, as its end announced it.
    Manifest,
    /// The source's signed manifest (signed mode).
    SignedManifest,
}

/// Why a transfer failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The application stopped it (a signal).
    Interrupted,
    /// The receiver's task ended before the stream did.
    ReceiverStopped,
    /// Data arrived, for this long, but no session proved itself signed by the trusted key.
    NoSignedSession {
        /// How long data was heard.
        waited: Duration,
    },
    /// No session started within the join timeout.
    NoSession {
        /// The join timeout.
        waited: Duration,
    },
    /// A source announced its session (SPMs) but sent no data, then nothing for the idle
    /// timeout.
    AnnouncedOnly {
        /// The session.
        tsi: Tsi,
        /// The idle timeout.
        waited: Duration,
    },
    /// The session sent nothing, not even a heartbeat, for the idle timeout.
    Silent {
        /// The session.
        tsi: Tsi,
        /// The idle timeout.
        waited: Duration,
        /// NAKs this receiver sent while no NCF came back at all (0 when any came):
        /// the source, or whatever path its NAKs take, never heard them.
        naks_unanswered: u64,
    },
    /// The source signs its data, and this receiver trusts no key: the signatures would end
    /// up in the output.
    SourceSigns,
    /// The data is not in ZeroMQ's framing.
    NotZmq(String),
    /// Packets lost for good, and no other pass can bring them.
    Unrecoverable(Lost),
    /// The start is missing and a partial stream was not allowed.
    StartMissed(StartMissed),
    /// The source sends a directory tree, and the output is not a directory.
    TreeNeedsDir {
        /// The tree's name, when announced before the end.
        name: Option<String>,
    },
    /// Part of the stream is missing and the source announces no other pass.
    NoOtherPass(Shortfall),
    /// A session carries another stream than the one held from an earlier pass.
    OtherStream {
        /// The session, when known.
        tsi: Option<Tsi>,
        /// What it carries.
        got: StreamId,
        /// What is held.
        held: StreamId,
    },
    /// The source aborted the session (OPT_RST).
    Aborted {
        /// The session.
        tsi: Tsi,
        /// The source's error code (0: none).
        code: u8,
    },
    /// The session was silent so long that the receiver dropped it.
    Expired {
        /// The session.
        tsi: Tsi,
    },
    /// Signed mode, into a directory: the source's signed end carries no manifest, so the
    /// name and kind of what it sent are not signed.
    UnsignedManifest,
    /// Part of the stream is missing and the source announced no manifest, so no other pass
    /// will come.
    NoManifest(Shortfall),
    /// Bytes are still missing after the passes.
    Missing {
        /// Why they went missing.
        why: Shortfall,
        /// Bytes missing.
        missing: u64,
        /// Bytes held, described ("bytes 0-999").
        held: String,
        /// The stream's size.
        size: u64,
        /// Passes (sessions) taken.
        passes: u32,
    },
    /// The source announced no size, so parts of its passes cannot be placed.
    NoSize,
    /// The stream's SHA-256 is not the one it must have.
    Sha256 {
        /// The data's, in hex.
        got: String,
        /// The one wanted, in hex.
        want: String,
        /// Whose: the application's expectation, or the source's announcement.
        expected: bool,
    },
    /// The session's announcement changed part way (size, name or kind): forged, or a
    /// confused source.
    ManifestChanged {
        /// The session.
        tsi: Tsi,
    },
    /// The stream ended short of the size its source announced.
    Truncated {
        /// Bytes received.
        got: u64,
        /// Bytes announced.
        size: u64,
    },
    /// The source announced the stream but no SHA-256 with its end.
    NoEndHash,
    /// The output could not be written out.
    Output(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Interrupted => f.write_str("interrupted by a signal before the stream ended"),
            Failure::ReceiverStopped => f.write_str("the receiver stopped unexpectedly"),
            Failure::NoSignedSession { waited } => write!(
                f,
                "data arrived for {waited:?} but no session signed by the trusted key"
            ),
            Failure::NoSession { waited } => write!(f, "no session heard in {waited:?}"),
            Failure::AnnouncedOnly { tsi, waited } => write!(
                f,
                "session {tsi} announced itself (SPMs) but sent no data, then nothing for {waited:?}: the source stopped before sending"
            ),
            Failure::Silent {
                tsi,
                waited,
                naks_unanswered: 0,
            } => write!(
                f,
                "session {tsi} sent nothing, not even a heartbeat, for {waited:?} before it ended: the source stopped or the network failed"
            ),
            Failure::Silent {
                tsi,
                waited,
                naks_unanswered,
            } => write!(
                f,
                "session {tsi} sent nothing for {waited:?} before it ended, and none of the {naks_unanswered} NAKs this receiver sent was answered by an NCF: the source never heard them"
            ),
            Failure::SourceSigns => f.write_str(
                "the source signs its data: its signatures would end up in the output unless this receiver trusts the source's public key",
            ),
            Failure::NotZmq(e) => write!(f, "not ZeroMQ framing: {e}"),
            Failure::Unrecoverable(l) => l.fmt(f),
            Failure::StartMissed(m) => {
                write!(f, "{m}; the output would be missing its beginning")
            }
            Failure::TreeNeedsDir { name: Some(n) } => {
                write!(f, "the source sends a directory tree ({n})")
            }
            Failure::TreeNeedsDir { name: None } => {
                f.write_str("the source sent a directory tree")
            }
            Failure::NoOtherPass(why) => write!(
                f,
                "{why}; the source announces no other pass, so the output would be missing part"
            ),
            Failure::OtherStream { tsi, got, held } => {
                match tsi {
                    Some(t) => write!(f, "session {t}")?,
                    None => f.write_str("the session")?,
                }
                write!(
                    f,
                    " carries {:?} ({} bytes), not the stream this receiver holds part of from the source's earlier pass ({:?}, {} bytes)",
                    got.name, got.size, held.name, held.size
                )
            }
            Failure::Aborted { tsi, code } => {
                write!(f, "the source aborted session {tsi}")?;
                if *code > 0 {
                    write!(f, " (error code {code})")?;
                }
                f.write_str(": it was interrupted or failed, and nothing more will come")
            }
            Failure::Expired { tsi } => write!(
                f,
                "session {tsi} was silent so long that it expired before it ended"
            ),
            Failure::UnsignedManifest => f.write_str(
                "the source's signed end carries no manifest (an older pgmcc source), so the name and kind of what it sent are not signed",
            ),
            Failure::NoManifest(why) => write!(
                f,
                "{why}; the source announced no manifest, so no other pass will bring the rest"
            ),
            Failure::Missing {
                why,
                missing,
                held,
                size,
                passes,
            } => {
                write!(
                    f,
                    "{why}; {missing} of {size} bytes are still missing ({held} held) and the source announces no other pass"
                )?;
                if *passes > 1 {
                    write!(f, " (after {passes} passes)")?;
                }
                Ok(())
            }
            Failure::NoSize => f.write_str(
                "the source announced no size, so the parts of its passes cannot be placed",
            ),
            Failure::Sha256 {
                got,
                want,
                expected: true,
            } => write!(f, "the data's sha256 {got} is not the expected {want}"),
            Failure::Sha256 { got, want, .. } => write!(
                f,
                "the data's sha256 {got} differs from the {want} the source announced: the stream was altered or mixed up"
            ),
            Failure::ManifestChanged { tsi } => write!(
                f,
                "session {tsi} changed what it announced part way (size, name or kind): a forged announcement, or a confused source"
            ),
            Failure::Truncated { got, size } => write!(
                f,
                "the stream ended after {got} of the {size} bytes its source announced: its end was forged, or the source's input shrank"
            ),
            Failure::NoEndHash => f.write_str(
                "the source announced the stream but no SHA-256 with its end, so that end cannot be told from a forged one",
            ),
            Failure::Output(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for Failure {}

/// Part of the stream held, waiting for the source's next pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Awaiting {
    /// What is held.
    pub held: Ranges,
    /// The stream's size.
    pub size: u64,
    /// Why this pass left a part missing, when it did (else: what earlier passes missed).
    pub why: Shortfall,
}

impl fmt::Display for Awaiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cause = match self.why {
            Shortfall::StartMissed(_) => " (joined late)",
            Shortfall::Lost(_) => " (packets lost for good)",
            Shortfall::EarlierPasses => "",
        };
        write!(
            f,
            "holds {} of {}{cause}; waiting for the source's next pass",
            self.held.describe(),
            self.size
        )
    }
}
