//! Fuzzes keyed mode's envelope (`pgmcc_net::keyed::Sealer::open`, run on every datagram a
//! keyed endpoint receives, before anything else looks at it): arbitrary datagrams at an
//! arbitrary clock, and genuine sealed packets with arbitrary bytes changed.
//!
//! Invariants: nothing panics; an arbitrary datagram never opens (it would need the key);
//! a genuine sealed packet opens to exactly the packet sealed, and a changed one never opens
//! to anything else.
#![no_main]

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use pgm_wire::{Body, DataRepr, Gsi, Repr, Tsi};
use pgmcc_net::keyed::{Direction, Sealer};
use pgmcc_net::Key;

const NOW: u64 = 1_795_000_000_000;

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let key = Key::from_bytes([0x42; 32]);
    let (Ok(mut source), Ok(mut receiver)) = (
        Sealer::new(key.clone(), Direction::Down),
        Sealer::new(key, Direction::Up),
    ) else {
        return Ok(());
    };
    while !u.is_empty() {
        if u.ratio(1, 2)? {
            let datagram: Vec<u8> = u.arbitrary()?;
            let at: u64 = u.arbitrary()?;
            assert!(receiver.open(at, &datagram).is_err(), "opened without the key");
            assert!(source.open(at, &datagram).is_err(), "opened without the key");
        } else {
            let tsi = Tsi {
                gsi: Gsi(u.arbitrary()?),
                sport: u.arbitrary()?,
            };
            let payload: Vec<u8> = u.arbitrary()?;
            let sqn: u32 = u.arbitrary()?;
            let Ok(pgm) = Repr::downstream(tsi, 7500, Body::Odata(DataRepr { sqn, trail: sqn }))
                .with_payload(&payload)
                .to_vec()
            else {
                continue;
            };
            let mut sealed = Vec::new();
            if source.seal(NOW, &pgm, &mut sealed).is_none() {
                continue;
            }
            let flips: Vec<(u16, u8)> = u.arbitrary()?;
            let original = sealed.clone();
            let len = sealed.len();
            for (at, x) in flips {
                if let Some(b) = sealed.get_mut(usize::from(at) % len) {
                    *b ^= x;
                }
            }
            let changed = sealed != original;
            match receiver.open(NOW, &sealed) {
                Ok(p) => assert!(!changed && p == &pgm[..], "a changed datagram opened"),
                Err(_) => assert!(changed, "a genuine datagram did not open"),
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
