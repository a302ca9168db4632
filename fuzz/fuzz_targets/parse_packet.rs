//! Fuzzes `Repr::parse` on arbitrary datagrams.
//!
//! Checks, for any input: parsing never panics (with checksum verification and with
//! `ChecksumPolicy::Ignore`, so the fuzzer reaches the body and option parsers without having
//! to forge checksums); and whenever a parse succeeds, the `Repr` round-trips:
//! `emit` writes exactly `buffer_len()` bytes (which equals the input length, since a datagram
//! is exactly one packet), the emitted bytes parse (checksum verified) back to an equal
//! `Repr`, re-emitting them is byte-identical, and a too-small buffer is an error, not a panic.
//! A successful verified parse must also agree with the `Ignore` parse.
//!
//! One documented exception (docs/wire.md, difference 9): a NAK/NNAK/NCF whose source and
//! group NLAs are of different families parses, but is refused on emit when it carries
//! options (OpenPGM would misread them); such a `Repr` must fail with `Unencodable` and is
//! not round-tripped.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pgm_wire::{Body, ChecksumPolicy, Error, Repr};

/// The one parsable `Repr` that emit refuses: NAK/NNAK/NCF with NLAs of two families plus
/// options (docs/wire.md, difference 9).
fn mixed_family_nak_with_options(repr: &Repr<'_>) -> bool {
    let mixed = matches!(repr.body, Body::Nak(n) | Body::Nnak(n) | Body::Ncf(n)
        if n.source.is_ipv4() != n.group.is_ipv4());
    mixed && !repr.options.is_empty()
}

fn round_trip(data: &[u8], repr: &Repr<'_>) {
    let len = repr.buffer_len();
    assert_eq!(
        len,
        data.len(),
        "buffer_len() differs from the length of the datagram it was parsed from: {repr:?}"
    );

    // Emit into a larger, dirty buffer: only the first `len` bytes may be written.
    let mut buf = vec![0xa5u8; len + 8];
    let n = match repr.emit(&mut buf) {
        Ok(n) => n,
        Err(Error::Unencodable(_)) if mixed_family_nak_with_options(repr) => return,
        Err(e) => panic!("emit failed on a parsed Repr: {e:?}\n{repr:?}"),
    };
    assert_eq!(n, len, "emit wrote {n} bytes but buffer_len() is {len}");
    assert!(
        buf[len..].iter().all(|&b| b == 0xa5),
        "emit wrote past buffer_len()"
    );
    let bytes = &buf[..n];

    let again = Repr::parse(bytes).expect("emitted bytes do not parse (checksum verified)");
    assert_eq!(&again, repr, "Repr changed across emit + parse");

    let again_bytes = again.to_vec().expect("re-emit failed");
    assert_eq!(
        again_bytes, bytes,
        "emit is not canonical (parse -> emit not a fixed point)"
    );

    if len > 0 {
        let mut short = vec![0u8; len - 1];
        match repr.emit(&mut short) {
            Err(Error::BufferTooSmall { needed, have }) => {
                assert_eq!((needed, have), (len, len - 1));
            }
            other => panic!("emit into a short buffer returned {other:?}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let ignored = Repr::parse_with(data, ChecksumPolicy::Ignore);
    let verified = Repr::parse(data);
    let strict = Repr::parse_with(data, ChecksumPolicy::RequireOnData);

    // Error paths must not panic either (Display and kind are what drivers log).
    for r in [&ignored, &verified, &strict] {
        if let Err(e) = r {
            let _ = e.kind();
            let _ = e.to_string();
        }
    }

    if let Ok(repr) = &ignored {
        round_trip(data, repr);
    }
    if let Ok(repr) = &verified {
        assert_eq!(
            ignored.as_ref().ok(),
            Some(repr),
            "a checksum-verified parse succeeded but the Ignore parse disagrees"
        );
    }
    if let Ok(repr) = &strict {
        assert_eq!(
            verified.as_ref().ok(),
            Some(repr),
            "a RequireOnData parse succeeded but the Verify parse disagrees"
        );
    }
});
