//! The receiving side of a transfer, driven by events alone: one test per way a transfer
//! ends.
#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed unwrap is a failed test

use std::time::{Duration, Instant};

use pgm_wire::{Manifest, Tsi};
use sha2::{Digest, Sha256};

use super::*;
use crate::Event;

/// An output in memory: the file, the spool, and everything else the receiver asked for.
#[derive(Default)]
struct Out {
    file: Vec<u8>,
    spool: Option<(Option<u64>, Vec<u8>)>,
    restarts: u32,
    notices: Vec<Notice>,
    reports: Vec<pgm_wire::Outcome>,
}

impl Out {
    fn apply(&mut self, t: &mut TransferReceiver) {
        while let Some(a) = t.poll_action() {
            match a {
                Action::Write { offset, data } => {
                    let end = offset as usize + data.len();
                    if self.file.len() < end {
                        self.file.resize(end, 0);
                    }
                    self.file[offset as usize..end].copy_from_slice(&data);
                }
                Action::SpoolStart { start } => self.spool = Some((start, Vec::new())),
                Action::Spool(d) => self.spool.as_mut().unwrap().1.extend_from_slice(&d),
                Action::Place { start } => {
                    let (_, d) = self.spool.take().unwrap();
                    let end = start as usize + d.len();
                    if self.file.len() < end {
                        self.file.resize(end, 0);
                    }
                    self.file[start as usize..end].copy_from_slice(&d);
                }
                Action::Restart => {
                    self.file.clear();
                    self.restarts += 1;
                }
                Action::Notice(n) => self.notices.push(n),
                Action::Report { outcome, .. } => self.reports.push(outcome),
            }
        }
    }

    fn sha(&self, size: u64) -> [u8; 32] {
        Sha256::digest(&self.file[..size as usize]).into()
    }
}

fn tsi(port: u16) -> Tsi {
    format!("1.2.3.4.5.6.{port}").parse().unwrap()
}

fn body(n: usize) -> Vec<u8> {
    (0..n).map(|k| (k % 251) as u8).collect()
}

fn manifest(b: &[u8], another_pass: bool) -> Manifest {
    Manifest {
        size: Some(b.len() as u64),
        sha256: Some(Sha256::digest(b).into()),
        name: "f".into(),
        another_pass,
        ..Manifest::default()
    }
}

fn cfg() -> ReceiveConfig {
    ReceiveConfig {
        pieces: true,
        idle_timeout: Duration::from_secs(30),
        join_timeout: Some(Duration::from_secs(600)),
        ..ReceiveConfig::default()
    }
}

/// Feeds a session: started at `first`, a manifest, packets `from..` of 100 bytes each
/// (`lost` missing for good), ended with the mark at `syn`.
struct Feed<'a> {
    t: &'a mut TransferReceiver,
    out: &'a mut Out,
    tsi: Tsi,
}

impl Feed<'_> {
    fn ev(&mut self, ev: Event) -> Flow {
        let f = self.t.handle(ev, Instant::now());
        self.out.apply(self.t);
        f
    }

    fn start(&mut self, first_sqn: u32) -> Flow {
        self.ev(Event::SessionStarted {
            tsi: self.tsi,
            first_sqn,
        })
    }

    fn manifest(&mut self, m: &Manifest) -> Flow {
        self.ev(Event::Manifest {
            tsi: self.tsi,
            manifest: m.clone(),
            signed: false,
        })
    }

    /// The packets of `b` (100 bytes each) numbered `range`; `lost` are reported lost.
    fn packets(&mut self, b: &[u8], range: std::ops::Range<u32>, lost: &[u32]) -> Flow {
        for sqn in range {
            let f = if lost.contains(&sqn) {
                self.ev(Event::Unrecoverable {
                    tsi: self.tsi,
                    first: sqn,
                    last: sqn,
                })
            } else {
                let at = sqn as usize * 100;
                self.ev(Event::Data {
                    tsi: self.tsi,
                    sqn,
                    data: b[at..(at + 100).min(b.len())].to_vec(),
                })
            };
            if f == Flow::End {
                return f;
            }
        }
        Flow::Continue
    }

    fn end(&mut self, syn_sqn: Option<u32>) -> Flow {
        self.ev(Event::SessionEnded {
            tsi: self.tsi,
            syn_sqn,
        })
    }

    /// Ends the session and decides, hashing the output when asked.
    fn verdict(&mut self) -> Verdict {
        let e = self.t.end_session();
        self.out.apply(self.t);
        let v = match e {
            Ending::Decided(v) => v,
            Ending::Hash { size } => {
                let sha = self.out.sha(size);
                self.t.output_hashed(sha)
            }
        };
        self.out.apply(self.t);
        v
    }

    fn commit(&mut self) {
        self.t.committed(Ok(()));
        self.out.apply(self.t);
    }
}

fn feed<'a>(t: &'a mut TransferReceiver, out: &'a mut Out, port: u16) -> Feed<'a> {
    Feed {
        t,
        out,
        tsi: tsi(port),
    }
}

#[test]
fn a_whole_stream_is_written_in_place_verified_and_reported_complete() {
    let b = body(1_000);
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.manifest(&manifest(&b, false));
    f.packets(&b, 0..10, &[]);
    assert_eq!(f.end(Some(0)), Flow::End);
    assert_eq!(f.verdict(), Verdict::Commit);
    f.commit();
    assert_eq!(out.file, b);
    assert_eq!(t.verified(), Some(Verified::Manifest));
    assert_eq!(t.status(), DeliveryStatus::Complete);
    let r = &out.reports[0];
    assert_eq!(r.status, pgm_wire::OUTCOME_COMPLETE);
    assert_eq!((r.bytes, r.sha256), (1_000, Sha256::digest(&b).into()));
}

#[test]
fn a_hash_other_than_expected_or_announced_fails() {
    let b = body(500);
    let mut c = cfg();
    c.expect_sha256 = Some([7; 32]);
    let (mut t, mut out) = (TransferReceiver::new(c, Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.packets(&b, 0..5, &[]);
    f.end(Some(0));
    assert_eq!(f.verdict(), Verdict::Failed);
    assert!(matches!(
        t.failure(),
        Some(Failure::Sha256 { expected: true, .. })
    ));
    assert_eq!(out.reports[0].status, pgm_wire::OUTCOME_FAILED);

    // The source's announced hash, altered.
    let mut m = manifest(&b, false);
    m.sha256 = Some([9; 32]);
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.manifest(&m);
    f.packets(&b, 0..5, &[]);
    f.end(Some(0));
    assert_eq!(f.verdict(), Verdict::Failed);
    let e = t.failure().unwrap().to_string();
    assert!(e.contains("differs from the 0909"), "{e}");
}

#[test]
fn a_late_joiner_fails_at_once_unless_a_partial_start_is_allowed() {
    let b = body(1_000);
    let missed = Event::StartMissed {
        tsi: tsi(1),
        first_sqn: 4,
        syn_sqn: None,
    };
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(4);
    f.manifest(&manifest(&b, false));
    assert_eq!(f.ev(missed.clone()), Flow::End);
    assert_eq!(f.verdict(), Verdict::Failed);
    let Some(Failure::StartMissed(m)) = t.failure() else {
        panic!("{:?}", t.failure())
    };
    assert!(!m.at_end && m.to_string().contains("joined late or lost the start"));
    assert!(out.reports[0]
        .reason
        .contains("no packet marked as the stream's start"));

    // Allowed: the tail is kept, reported partial since the size says bytes are missing.
    let mut c = cfg();
    c.allow_partial_start = true;
    let (mut t, mut out) = (TransferReceiver::new(c, Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(4);
    f.manifest(&manifest(&b, false));
    f.ev(missed);
    f.packets(&b, 4..10, &[]);
    f.end(None);
    assert_eq!(f.verdict(), Verdict::Commit);
    f.commit();
    assert_eq!(out.file, b[400..]);
    assert!(t.partial_start().is_some());
    assert_eq!(out.reports[0].status, pgm_wire::OUTCOME_PARTIAL);
}

#[test]
fn a_stream_without_a_marked_start_needs_leave_and_then_cannot_tell() {
    // An OpenPGM source marks no start and announces no size.
    let b = body(300);
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.packets(&b, 0..3, &[]);
    f.end(None);
    assert_eq!(f.verdict(), Verdict::Failed);
    assert!(matches!(t.failure(), Some(Failure::StartMissed(m)) if m.at_end));

    let mut c = cfg();
    c.allow_partial_start = true;
    let (mut t, mut out) = (TransferReceiver::new(c, Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.packets(&b, 0..3, &[]);
    f.end(None);
    assert_eq!(f.verdict(), Verdict::Commit);
    assert!(matches!(out.notices[..], [Notice::StartUnknown(_)]));
    assert!(t.partial_start().is_none());
}

#[test]
fn a_late_joiner_completes_from_the_next_pass() {
    let b = body(1_050);
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    // Pass 1: joined at packet 4; the manifest announces another pass.
    let mut f = feed(&mut t, &mut out, 1);
    f.start(4);
    f.manifest(&manifest(&b, true));
    f.ev(Event::StartMissed {
        tsi: tsi(1),
        first_sqn: 4,
        syn_sqn: Some(0),
    });
    f.packets(&b, 4..11, &[]);
    f.end(Some(0));
    let Verdict::AwaitPass(a) = f.verdict() else {
        panic!("{:?}", t.failure())
    };
    assert_eq!(
        a.to_string(),
        "holds bytes 400-1049 of 1050 (joined late); waiting for the source's next pass"
    );
    assert!(matches!(out.notices[..], [Notice::KeepingForNextPass(_)]));
    assert_eq!(out.reports[0].status, pgm_wire::OUTCOME_AWAITING_PASS);
    assert_eq!(out.reports[0].bytes, 650);
    assert_eq!(
        t.session(),
        Some(tsi(1)),
        "still the first pass's until the next event"
    );
    // Pass 2: the whole stream; what is held stays, the rest is written in place.
    let mut f = feed(&mut t, &mut out, 2);
    f.start(0);
    assert_eq!(f.t.session(), Some(tsi(2)));
    f.manifest(&manifest(&b, false));
    f.packets(&b, 0..11, &[]);
    f.end(Some(0));
    assert_eq!(f.verdict(), Verdict::Commit);
    f.commit();
    assert_eq!(out.file, b);
    assert_eq!((t.passes(), t.bytes()), (2, 1_050));
    assert_eq!(t.verified(), Some(Verified::Manifest));
    assert_eq!(out.reports[1].status, pgm_wire::OUTCOME_COMPLETE);
}

#[test]
fn packets_lost_for_good_fail_or_wait_for_the_next_pass() {
    let b = body(2_000);
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.manifest(&manifest(&b, false));
    assert_eq!(f.packets(&b, 0..20, &[7]), Flow::End);
    assert_eq!(f.verdict(), Verdict::Failed);
    assert!(matches!(t.failure(), Some(Failure::Unrecoverable(l)) if l.first == 7));

    // With another pass announced: the head and the tail after the last gap are kept,
    // the run between the two gaps is dropped; the next pass fills the rest.
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.manifest(&manifest(&b, true));
    f.packets(&b, 0..20, &[7, 12]);
    f.end(Some(0));
    let Verdict::AwaitPass(a) = f.verdict() else {
        panic!("{:?}", t.failure())
    };
    assert_eq!(a.held.describe(), "bytes 0-699 and 1300-1999");
    assert!(a.to_string().contains("(packets lost for good)"));
    let mut f = feed(&mut t, &mut out, 2);
    f.start(0);
    f.manifest(&manifest(&b, false));
    f.packets(&b, 0..20, &[3]);
    f.end(Some(0));
    // Packet 3 is held from the first pass; 7 and 12 come now; the run after 3 is placed.
    assert_eq!(f.verdict(), Verdict::Commit);
    assert_eq!(out.file, b);
    assert_eq!(t.passes(), 2);
}

#[test]
fn a_last_pass_that_leaves_bytes_missing_fails_and_says_which() {
    let b = body(1_000);
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.manifest(&manifest(&b, true));
    f.packets(&b, 0..10, &[2]);
    f.end(Some(0));
    assert!(matches!(f.verdict(), Verdict::AwaitPass(_)));
    let mut f = feed(&mut t, &mut out, 2);
    f.start(0);
    f.manifest(&manifest(&b, false));
    f.packets(&b, 0..10, &[2, 5]);
    f.end(Some(0));
    assert_eq!(f.verdict(), Verdict::Failed);
    let e = t.failure().unwrap().to_string();
    assert!(e.ends_with("100 of 1000 bytes are still missing (bytes 0-199 and 300-999 held) and the source announces no other pass (after 2 passes)"), "{e}");
}

#[test]
fn a_start_missed_without_another_pass_fails_when_the_manifest_says_so() {
    let b = body(1_000);
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(3);
    // No manifest yet: wait for it rather than fail.
    assert_eq!(
        f.ev(Event::StartMissed {
            tsi: tsi(1),
            first_sqn: 3,
            syn_sqn: None
        }),
        Flow::Continue
    );
    f.packets(&b, 3..5, &[]);
    assert_eq!(f.manifest(&manifest(&b, false)), Flow::End);
    assert!(matches!(
        t.failure(),
        Some(Failure::NoOtherPass(Shortfall::StartMissed(_)))
    ));
}

#[test]
fn another_stream_in_the_next_pass_fails_or_restarts_a_daemon() {
    let a = body(1_000);
    let other = body(999);
    for daemon in [false, true] {
        let mut c = cfg();
        c.daemon = daemon;
        let (mut t, mut out) = (TransferReceiver::new(c, Instant::now()), Out::default());
        let mut f = feed(&mut t, &mut out, 1);
        f.start(2);
        f.manifest(&manifest(&a, true));
        f.ev(Event::StartMissed {
            tsi: tsi(1),
            first_sqn: 2,
            syn_sqn: Some(0),
        });
        f.packets(&a, 2..10, &[]);
        f.end(Some(0));
        assert!(matches!(f.verdict(), Verdict::AwaitPass(_)));
        let mut f = feed(&mut t, &mut out, 2);
        f.start(0);
        f.packets(&other, 0..2, &[]);
        let flow = f.manifest(&manifest(&other, false));
        if !daemon {
            assert_eq!(flow, Flow::End);
            let e = t.failure().unwrap().to_string();
            assert!(
                e.starts_with(&format!(
                    "session {} carries \"f\" (999 bytes), not the stream",
                    tsi(2)
                )),
                "{e}"
            );
            continue;
        }
        // The daemon drops what it held and takes the new stream whole.
        assert_eq!(f.out.restarts, 1);
        assert!(matches!(
            &f.out.notices[1],
            Notice::DroppedHeld { bytes: 800, .. }
        ));
        f.packets(&other, 2..10, &[]);
        f.end(Some(0));
        assert_eq!(f.verdict(), Verdict::Commit);
        assert_eq!(out.file, other);
        assert_eq!(t.passes(), 1);
    }
}

#[test]
fn a_tree_needs_a_directory_and_an_abort_or_expiry_fails() {
    let b = body(100);
    let mut m = manifest(&b, false);
    m.tree = true;
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    assert_eq!(f.manifest(&m), Flow::End);
    assert!(matches!(
        t.failure(),
        Some(Failure::TreeNeedsDir { name: Some(_) })
    ));

    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.packets(&b, 0..1, &[]);
    assert_eq!(
        f.ev(Event::SessionReset {
            tsi: tsi(1),
            error_code: 3
        }),
        Flow::End
    );
    assert_eq!(f.verdict(), Verdict::Failed);
    assert_eq!(
        t.failure().unwrap().to_string(),
        format!(
            "the source aborted session {} (error code 3): it was interrupted or failed, and nothing more will come",
            tsi(1)
        )
    );
    assert_eq!(out.reports[0].bytes, 100);

    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    assert_eq!(f.ev(Event::SessionExpired { tsi: tsi(1) }), Flow::End);
    assert!(matches!(t.failure(), Some(Failure::Expired { .. })));
}

#[test]
fn signed_mode_trusts_only_the_signed_manifest() {
    let b = body(300);
    let mut c = cfg();
    c.signed = true;
    c.dir = true;
    // An SPM's manifest (anyone could have sent it) neither fails nor names the file.
    let mut spm = manifest(&b, false);
    spm.tree = true;
    spm.name = "forged".into();
    let (mut t, mut out) = (
        TransferReceiver::new(c.clone(), Instant::now()),
        Out::default(),
    );
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    assert_eq!(f.manifest(&spm), Flow::Continue);
    f.ev(Event::Manifest {
        tsi: tsi(1),
        manifest: manifest(&b, false),
        signed: true,
    });
    f.packets(&b, 0..3, &[]);
    f.end(Some(0));
    assert_eq!(f.verdict(), Verdict::Commit);
    assert_eq!(t.manifest().unwrap().name, "f");
    assert_eq!(t.verified(), Some(Verified::SignedManifest));

    // No signed manifest: into a directory, the name is not signed.
    let (mut t, mut out) = (TransferReceiver::new(c, Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.manifest(&manifest(&b, false));
    f.packets(&b, 0..3, &[]);
    f.end(Some(0));
    assert_eq!(f.verdict(), Verdict::Failed);
    assert_eq!(t.failure(), Some(&Failure::UnsignedManifest));
}

#[test]
fn a_signed_stream_without_a_trusted_key_fails_at_its_first_list() {
    let mut list = vec![0u8; pgmcc::signed::LIST_HEADER_LEN + pgmcc::signed::SIGNATURE_LEN];
    list[..4].copy_from_slice(&pgmcc::signed::LIST_MAGIC);
    list[4] = pgmcc::signed::LIST_VERSION;
    assert!(pgmcc::signed::looks_like_list(&list));
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    let flow = f.ev(Event::Data {
        tsi: tsi(1),
        sqn: 0,
        data: list,
    });
    assert_eq!(flow, Flow::End);
    assert_eq!(t.failure(), Some(&Failure::SourceSigns));
    assert!(out.file.is_empty());
}

#[test]
fn the_timeouts_follow_the_session() {
    let t0 = Instant::now();
    let mut t = TransferReceiver::new(cfg(), t0);
    let mut st = ReceiverStatus::default();
    assert_eq!(
        t.on_tick(t0 + Duration::from_secs(599), &st),
        Flow::Continue
    );
    assert_eq!(t.on_tick(t0 + Duration::from_secs(600), &st), Flow::End);
    assert!(matches!(t.failure(), Some(Failure::NoSession { .. })));

    // A source heard only through its SPMs, then silent for the idle timeout (30 s): not
    // waited on for the 600 s join timeout.
    let mut t = TransferReceiver::new(cfg(), t0);
    let mut spm_only = ReceiverStatus::default();
    spm_only.sessions.push(crate::SessionStatus {
        tsi: tsi(2).to_string(),
        id: tsi(2),
        silent_secs: 29.0,
    });
    assert_eq!(
        t.on_tick(t0 + Duration::from_secs(40), &spm_only),
        Flow::Continue
    );
    spm_only.sessions[0].silent_secs = 30.0;
    assert_eq!(
        t.on_tick(t0 + Duration::from_secs(41), &spm_only),
        Flow::End
    );
    assert!(matches!(
        t.failure(),
        Some(Failure::AnnouncedOnly { waited, .. }) if *waited == Duration::from_secs(30)
    ));

    // A daemon waits for ever; a session silent for the idle timeout fails.
    let mut c = cfg();
    c.daemon = true;
    let mut t = TransferReceiver::new(c, t0);
    assert_eq!(
        t.on_tick(t0 + Duration::from_secs(3_600), &st),
        Flow::Continue
    );
    t.handle(
        Event::SessionStarted {
            tsi: tsi(1),
            first_sqn: 0,
        },
        t0,
    );
    st.sessions.push(crate::SessionStatus {
        tsi: tsi(1).to_string(),
        id: tsi(1),
        silent_secs: 29.0,
    });
    assert_eq!(t.on_tick(t0, &st), Flow::Continue);
    st.sessions[0].silent_secs = 30.0;
    // 1,000 NAKs and not one NCF: the failure says the source never heard them.
    st.stats.naks_sent = 1_000;
    assert_eq!(t.on_tick(t0, &st), Flow::End);
    assert!(matches!(
        t.failure(),
        Some(Failure::Silent {
            naks_unanswered: 1_000,
            ..
        })
    ));
    assert!(t
        .failure()
        .unwrap()
        .to_string()
        .contains("none of the 1000 NAKs"));

    // Trusting a key: data heard for the idle timeout, no signed session.
    let mut c = cfg();
    c.signed = true;
    let mut t = TransferReceiver::new(c, t0);
    st.stats.odata_packets = 5;
    assert_eq!(t.on_tick(t0, &st), Flow::Continue);
    assert_eq!(t.on_tick(t0 + Duration::from_secs(30), &st), Flow::End);
    assert!(matches!(t.failure(), Some(Failure::NoSignedSession { .. })));
}

#[test]
fn zeromq_parts_are_written_one_per_line() {
    let mut c = cfg();
    c.zmq = true;
    c.pieces = false;
    let (mut t, mut out) = (TransferReceiver::new(c, Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(5);
    for (k, m) in ["hello", "world"].iter().enumerate() {
        f.ev(Event::Data {
            tsi: tsi(1),
            sqn: 5 + k as u32,
            data: crate::zmq::zmq_apdu(m.as_bytes()),
        });
    }
    f.end(None);
    assert_eq!(f.verdict(), Verdict::Commit);
    assert_eq!(out.file, b"hello\nworld\n");
    assert_eq!(t.zmq_parts(), 2);
}

#[test]
fn an_interrupted_transfer_fails_and_tells_the_source() {
    let b = body(200);
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.packets(&b, 0..2, &[]);
    f.t.fail(Failure::Interrupted);
    assert_eq!(f.verdict(), Verdict::Failed);
    assert_eq!(
        out.reports[0].reason,
        "interrupted by a signal before the stream ended"
    );

    // An output that cannot be committed fails the transfer too, and says so.
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.packets(&b, 0..2, &[]);
    f.end(Some(0));
    assert_eq!(f.verdict(), Verdict::Commit);
    t.committed(Err("disk full".into()));
    out.apply(&mut t);
    assert_eq!(out.reports[0].status, pgm_wire::OUTCOME_FAILED);
    assert_eq!(out.reports[0].reason, "disk full");
}

#[test]
fn an_end_forged_at_the_current_lead_does_not_make_a_prefix_complete() {
    // The source announced 1,000 bytes (its hash comes with the end); a forged end after
    // 500 of them, with no manifest, or with one shrunk to the prefix and its hash.
    let b = body(1_000);
    let mut early = manifest(&b, false);
    early.sha256 = None;
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.manifest(&early);
    f.packets(&b, 0..5, &[]);
    f.end(Some(0));
    assert_eq!(f.verdict(), Verdict::Failed);
    assert_eq!(
        t.failure(),
        Some(&Failure::Truncated {
            got: 500,
            size: 1_000
        })
    );

    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.manifest(&early);
    f.packets(&b, 0..5, &[]);
    assert_eq!(f.manifest(&manifest(&b[..500], false)), Flow::End);
    assert!(matches!(t.failure(), Some(Failure::ManifestChanged { .. })));

    // The whole stream, but its end carries no hash: it cannot be told from a forged end.
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.manifest(&early);
    f.packets(&b, 0..10, &[]);
    f.end(Some(0));
    assert_eq!(f.verdict(), Verdict::Failed);
    assert_eq!(t.failure(), Some(&Failure::NoEndHash));

    // The real end adds the hash to what was announced: complete.
    let (mut t, mut out) = (TransferReceiver::new(cfg(), Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.manifest(&early);
    f.packets(&b, 0..10, &[]);
    assert_eq!(f.manifest(&manifest(&b, false)), Flow::Continue);
    f.end(Some(0));
    assert_eq!(f.verdict(), Verdict::Commit);
}

#[test]
fn trusting_a_key_an_spms_changed_announcement_changes_nothing() {
    let b = body(300);
    let mut c = cfg();
    c.signed = true;
    let (mut t, mut out) = (TransferReceiver::new(c, Instant::now()), Out::default());
    let mut f = feed(&mut t, &mut out, 1);
    f.start(0);
    f.manifest(&manifest(&b, false));
    assert_eq!(f.manifest(&manifest(&b[..100], false)), Flow::Continue);
    f.ev(Event::Manifest {
        tsi: tsi(1),
        manifest: manifest(&b, false),
        signed: true,
    });
    f.packets(&b, 0..3, &[]);
    f.end(Some(0));
    assert_eq!(f.verdict(), Verdict::Commit);
}
