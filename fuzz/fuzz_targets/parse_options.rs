//! Fuzzes `Options::parse` on arbitrary option areas.
//!
//! Checks, for any input: parsing never panics; and whenever it succeeds, the options
//! round-trip: `emit` writes exactly `buffer_len()` bytes, which equals the area length the
//! parser reported as used (every option's length is fixed by its content), the emitted area
//! parses back to equal `Options` using all of its bytes, re-emitting is byte-identical, and
//! a too-small buffer is an error, not a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pgm_wire::{Error, Options};

fuzz_target!(|data: &[u8]| {
    let (opts, used) = match Options::parse(data) {
        Ok(ok) => ok,
        Err(e) => {
            let _ = e.kind();
            let _ = e.to_string();
            return;
        }
    };
    assert!(
        used <= data.len(),
        "parse reported {used} bytes used of {}",
        data.len()
    );
    assert!(
        !opts.is_empty(),
        "a parsed option area holds no option: {opts:?}"
    );
    assert!(
        opts.count() <= 16,
        "more than 16 options accepted: {opts:?}"
    );

    let len = opts.buffer_len();
    assert_eq!(
        len, used,
        "buffer_len() differs from the parsed area length: {opts:?}"
    );

    let mut buf = vec![0xa5u8; len + 8];
    let n = opts.emit(&mut buf).expect("emit failed on parsed Options");
    assert_eq!(n, len, "emit wrote {n} bytes but buffer_len() is {len}");
    assert!(
        buf[len..].iter().all(|&b| b == 0xa5),
        "emit wrote past buffer_len()"
    );
    let bytes = &buf[..n];

    let (again, again_used) = Options::parse(bytes).expect("emitted option area does not parse");
    assert_eq!(
        again_used, n,
        "re-parse used {again_used} of {n} emitted bytes"
    );
    assert_eq!(again, opts, "Options changed across emit + parse");

    let mut again_bytes = vec![0u8; again.buffer_len()];
    let m = again.emit(&mut again_bytes).expect("re-emit failed");
    assert_eq!(&again_bytes[..m], bytes, "emit is not canonical");

    let mut short = vec![0u8; len - 1];
    match opts.emit(&mut short) {
        Err(Error::BufferTooSmall { .. }) => {}
        other => panic!("emit into a short buffer returned {other:?}"),
    }
});
