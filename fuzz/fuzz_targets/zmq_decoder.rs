//! Fuzzes `pgmcc_net::zmq::ZmqDecoder` (ZeroMQ's 2-byte offset + ZMTP/1.0 framing over PGM,
//! `pgmcc recv --zmq`) with arbitrary APDU sequences, gaps (`reset`) and frame limits.
//!
//! Invariants: nothing panics; no part is larger than the limit; the parts returned never
//! hold more bytes than the APDUs pushed since the last reset (the decoder invents nothing);
//! after an error the decoder goes on with the next APDU.
#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use pgmcc_net::zmq::ZmqDecoder;

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let max_frame = u.int_in_range(1..=4096u64)?;
    let mut d = ZmqDecoder::new(max_frame);
    let mut pushed = 0usize;
    let mut returned = 0usize;
    while !u.is_empty() {
        if u.ratio(1, 16)? {
            d.reset();
            pushed = 0;
            returned = 0;
            continue;
        }
        let apdu: Vec<u8> = u.arbitrary()?;
        pushed += apdu.len();
        if let Ok(parts) = d.push(&apdu) {
            for p in &parts {
                assert!(p.body.len() as u64 <= max_frame, "part over the limit");
                returned += p.body.len();
            }
            assert!(returned <= pushed, "{returned} bytes out of {pushed} in");
        } else {
            // The decoder reset itself: count afresh.
            pushed = 0;
            returned = 0;
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
