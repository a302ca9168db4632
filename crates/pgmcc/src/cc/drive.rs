//! Drive a controller by hand, as the [`Sender`](crate::Sender) does: for tests, fuzzing and
//! experiments that study one controller without a whole source.

use std::net::IpAddr;

use pgm_wire::{AckRepr, Options, PgmccData, PgmccFeedback};

use super::{Ack, CongestionControl, Nak, RttSample};
use crate::time::Instant;

/// Sends data packet `sqn`; the options the controller put on it.
pub fn send(cc: &mut dyn CongestionControl, now: Instant, sqn: u32) -> Options<'static> {
    let mut opts = Options::default();
    cc.on_data_sent(now, sqn, &mut opts);
    opts
}

/// Sends data packet `sqn`; its OPT_PGMCC_DATA.
pub fn data(cc: &mut dyn CongestionControl, now: Instant, sqn: u32) -> Option<PgmccData> {
    send(cc, now, sqn).pgmcc_data
}

/// An ACK from `from` with options `opts` (its RTT sample taken from their report).
pub fn ack(
    cc: &mut dyn CongestionControl,
    now: Instant,
    from: IpAddr,
    ack: &AckRepr,
    opts: &Options<'_>,
) {
    let rtt = opts.pgmcc_feedback.map(|f| RttSample::new(now, f.tstamp));
    cc.on_ack(
        now,
        &Ack {
            from,
            ack: *ack,
            options: opts,
            rtt,
            proven: true,
        },
    );
}

/// An ACK from `from` carrying report `fb`, if any.
pub fn ack_fb(
    cc: &mut dyn CongestionControl,
    now: Instant,
    from: IpAddr,
    a: &AckRepr,
    fb: Option<&PgmccFeedback>,
) {
    let opts = Options {
        pgmcc_feedback: fb.copied(),
        ..Options::default()
    };
    ack(cc, now, from, a, &opts);
}

/// A NAK for `sqns` carrying report `fb`, if any, from the receiver the report names (or
/// from 0.0.0.0 without one).
pub fn nak(cc: &mut dyn CongestionControl, now: Instant, sqns: &[u32], fb: Option<&PgmccFeedback>) {
    let from = fb.map_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |f| f.rx);
    nak_from(cc, now, from, sqns, fb);
}

/// A NAK from `from` for `sqns` carrying report `fb`, if any.
pub fn nak_from(
    cc: &mut dyn CongestionControl,
    now: Instant,
    from: IpAddr,
    sqns: &[u32],
    fb: Option<&PgmccFeedback>,
) {
    let opts = Options {
        pgmcc_feedback: fb.copied(),
        ..Options::default()
    };
    let rtt = fb.map(|f| RttSample::new(now, f.tstamp));
    cc.on_nak(
        now,
        &Nak {
            from,
            sqns,
            lost: sqns,
            covers: sqns.iter().copied().reduce(crate::sqn::max),
            options: &opts,
            rtt,
        },
    );
}
