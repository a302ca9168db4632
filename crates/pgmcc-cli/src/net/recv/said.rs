//! What `pgmcc recv` tells its user: the transfer's failures with the flags that change
//! them, its notices, and the last line's details.

use std::time::Duration;

use pgmcc_net::transfer::receive::{Failure, Notice, Verified};

use crate::net::output::Committed;
use crate::net::report::printable;

/// A failure in the user's words: the library's reason with the flag that bounds or
/// changes it.
pub(super) fn explain(f: &Failure) -> String {
    match f {
        Failure::NoSignedSession { waited } => format!(
            "data arrived for {waited:?} (--idle-timeout) but no session signed by the --trust key"
        ),
        Failure::NoSession { .. } => format!(
            "{f} (--join-timeout): is the source running, on this group and port, with the same --udp-ports (and --key)? An OpenPGM source needs --peer openpgm, a ZeroMQ publisher --peer zeromq"
        ),
        Failure::AnnouncedOnly { .. } => format!("{f} (--idle-timeout)"),
        Failure::Silent {
            tsi,
            waited,
            naks_unanswered: 0,
        } => format!(
            "session {tsi} sent nothing, not even a heartbeat, for {waited:?} before it ended (--idle-timeout): the source stopped or the network failed"
        ),
        Failure::Silent {
            tsi,
            waited,
            naks_unanswered,
        } => format!(
            "session {tsi} sent nothing for {waited:?} before it ended (--idle-timeout), and no NCF answered any of the {naks_unanswered} NAKs this receiver sent: is the source listening where they went (the same --udp-ports; an OpenPGM source needs --peer openpgm), and does unicast reach it from here?"
        ),
        Failure::SourceSigns => "the source signs its data (pgmcc send --sign): its signatures would end up in the output; pass --trust with the source's public key file (FILE.pub)".into(),
        Failure::StartMissed(m) if m.at_end => {
            format!("{f} (pass --allow-partial-start to keep it anyway)")
        }
        Failure::StartMissed(_) => format!(
            "{f} (pass --allow-partial-start to keep it anyway; an OpenPGM source, which marks no start, needs --peer openpgm, a ZeroMQ publisher --peer zeromq; a pgmcc source with --passes 2 or more sends the beginning again)"
        ),
        Failure::TreeNeedsDir { .. } => format!("{f}: receive it with -D DIR"),
        Failure::NoOtherPass(_) => {
            format!("{f} (a pgmcc source with --passes 2 or more sends it again)")
        }
        Failure::UnsignedManifest => "the source's signed end carries no manifest (a pgmcc send older than this receiver), so the name and kind of what it sent are not signed: receive it with --out FILE".into(),
        Failure::NoManifest(_) => format!(
            "{f} (an OpenPGM source, which marks no start, needs --peer openpgm, a ZeroMQ publisher --peer zeromq)"
        ),
        Failure::Sha256 {
            got,
            want,
            expected: true,
        } => format!("the data's sha256 {got} is not the --expect-sha256 {want}"),
        _ => f.to_string(),
    }
}

/// A notice as a line for standard error.
pub(super) fn notice(n: &Notice) -> String {
    match n {
        Notice::KeepingForNextPass(m) => format!(
            "pgmcc recv: {m}; keeping the rest: the source's next pass brings the beginning"
        ),
        Notice::DroppedHeld { bytes, name, tsi } => format!(
            "pgmcc recv: dropping the {bytes} bytes held of {name:?}: session {tsi} carries another stream"
        ),
        Notice::StartUnknown(m) => format!(
            "pgmcc recv: warning: {m}; the source announces no size either, so this receiver cannot tell whether it has the beginning"
        ),
        other => format!("pgmcc recv: {other:?}"),
    }
}

/// What the stream's hash matched, as the last line says it.
pub(super) fn verified(v: Verified) -> &'static str {
    match v {
        Verified::Expected => "--expect-sha256",
        Verified::SignedManifest => "the source's signed manifest",
        _ => "the source's manifest",
    }
}

/// Gives the written file the source file's modification time (from its manifest), as cp -p
/// and uftp do; a failure only warns.
fn set_mtime(path: &std::path::Path, mtime: u64) {
    if mtime == 0 {
        return;
    }
    let t = std::time::UNIX_EPOCH + Duration::from_secs(mtime);
    let set = std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(t));
    if let Err(e) = set {
        eprintln!(
            "pgmcc recv: warning: could not set {}'s modification time: {e}",
            printable(&path.to_string_lossy())
        );
    }
}

/// ", wrote ..." for the final line: what a -D receive put where (and, as a side effect,
/// the source's modification time on a single file, and a warning per tree entry left out).
pub(super) fn written(
    committed: Option<&Committed>,
    manifest: Option<&pgm_wire::Manifest>,
    dir: bool,
) -> String {
    match (committed, manifest) {
        (Some(Committed::File(path)), Some(m)) => {
            set_mtime(path, m.mtime);
            if dir {
                format!("; wrote {}", printable(&path.to_string_lossy()))
            } else {
                String::new()
            }
        }
        (Some(Committed::Tree(dir, w)), _) => {
            for why in &w.skipped {
                eprintln!("pgmcc recv: warning: left out {why}");
            }
            format!(
                "; wrote {} files, {} directories{} into {}",
                w.files,
                w.dirs,
                if w.links > 0 {
                    format!(", {} symbolic links", w.links)
                } else {
                    String::new()
                },
                dir.display()
            )
        }
        _ => String::new(),
    }
}

/// What signed mode's counters say, for the user: forgeries refused, or a source that does
/// not sign with the trusted key. Empty when nothing went wrong.
pub(super) fn signed_hints(
    c: &pgmcc::signed::SignedCounts,
    data_packets: u64,
    start_slack: std::time::Duration,
) -> Vec<String> {
    let mut hints = Vec::new();
    if c.stale > 0 {
        hints.push(format!("{} lists signed by the --trust key were refused because the session they start was signed more than {} s from this host's clock: a replay of an earlier session, or clocks out of step", c.stale, pgmcc_net::keyed::MAX_SKEW.as_secs()));
    }
    if c.before_start > 0 {
        hints.push(format!("{} lists signed by the --trust key were refused because the session they start was signed more than {} before this receiver started (--start-slack): a recording of an earlier session played back (start receivers before or with the sender, or give a longer --start-slack)", c.before_start, crate::net::args::secs(start_slack)));
    }
    if c.unchecked > 0 {
        hints.push(format!("{} list-shaped packets were dropped unchecked: more than {} signature checks a second failed in one session, so someone on the network is flooding it with forged lists", c.unchecked, pgmcc::signed::VERIFY_FAIL_RATE));
    }
    if c.lists == 0 && c.stale == 0 && c.before_start == 0 && data_packets > 0 {
        hints.push(format!("{data_packets} data packets arrived but no list signed by the --trust key verified: is the sender running with --sign, with the secret half of this key?"));
    }
    if c.forged > 0 {
        hints.push(format!(
            "{} packets did not match the source's signed digests and were dropped (the genuine ones were received or asked for again): someone on the network is forging this session's data",
            c.forged
        ));
    }
    if c.unverifiable > 0 && c.lists > 0 {
        hints.push(format!(
            "{} packets could not be verified (sent before this receiver's first signed list, or their list was lost) and were not delivered",
            c.unverifiable
        ));
    }
    hints
}

#[cfg(test)]
mod tests {
    use pgmcc_net::transfer::receive::{Failure, StartMissed};

    use super::explain;

    /// A stream without a start mark may come from either peer: the hint names both flags.
    #[test]
    fn a_missed_start_names_the_flags_of_both_peers() {
        let f = Failure::StartMissed(StartMissed {
            first_sqn: 690,
            syn_sqn: None,
            at_end: false,
        });
        let said = explain(&f);
        assert!(said.contains("--allow-partial-start"), "{said}");
        assert!(
            said.contains("needs --peer openpgm, a ZeroMQ publisher --peer zeromq"),
            "{said}"
        );
    }
}
