//! The receiving side of a transfer: [`TransferReceiver`].
//!
//! The receiver is fed the session's events ([`crate::Event`]) and says, as [`Action`]s,
//! where each byte goes: written at its offset in the output, or spooled while its place is
//! not known yet and placed later. At the session's end it decides, with a typed reason,
//! whether the output is whole and verified ([`Verdict::Commit`]), failed
//! ([`Verdict::Failed`]), or holds part of a stream whose source announced another pass
//! ([`Verdict::AwaitPass`]); each ending queues the delivery report for the source.
//!
//! # Passes
//!
//! The data stream carries no byte offsets (it is the file's bytes and nothing else), so a
//! receiver places what it got by what it knows: a run of data that began at the stream's
//! marked first packet (OPT_SYN) starts at byte 0; a run that reached the session's end
//! (everything up to the source's final lead delivered) ends at the announced size. A run
//! with neither, between two gaps, cannot be placed and is dropped. A late joiner thus keeps
//! the tail of one pass and takes the head from the next, and a receiver that lost packets
//! for good keeps the head up to the first gap and the tail after the last. The whole
//! stream's SHA-256 (and in signed mode every packet's signed digest) checks the result.

mod reasons;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use pgm_wire::{Manifest, Tsi};
use sha2::{Digest, Sha256};

pub use reasons::{Awaiting, Failure, Lost, Shortfall, StartMissed, StreamId, Verified};

use super::Ranges;
use crate::{hex, DeliveryStatus, Event, ReceiverStatus};

/// What the application wants of a transfer, and what its output can do.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReceiveConfig {
    /// Keep a stream whose start this receiver did not see (its tail), reported as partial,
    /// rather than fail.
    pub allow_partial_start: bool,
    /// The source is a ZeroMQ publisher: decode its framing and write each message part
    /// followed by a newline. No passes.
    pub zmq: bool,
    /// The output can hold parts of a stream at their offsets (a file, not a pipe), so
    /// passes can complete what one session missed.
    pub pieces: bool,
    /// Signed mode: only the manifest of the source's signed end counts.
    pub signed: bool,
    /// The output is a directory: a directory tree can be received.
    pub dir: bool,
    /// Receiving one transfer after another: a session carrying another stream than the
    /// one held drops what is held ([`Action::Restart`]) instead of failing.
    pub daemon: bool,
    /// The SHA-256 the whole stream must have; without it the source's announced one is
    /// checked, when it sends one.
    pub expect_sha256: Option<[u8; 32]>,
    /// Fail when no session started this long after the receiver began waiting (`None`:
    /// wait for ever; never applies with [`ReceiveConfig::daemon`]).
    pub join_timeout: Option<Duration>,
    /// Fail when the session followed sent nothing, not even a heartbeat, this long.
    pub idle_timeout: Duration,
}

/// What the application does with its output.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Write `data` at byte `offset` of the output.
    Write {
        /// Where.
        offset: u64,
        /// What.
        data: Vec<u8>,
    },
    /// Start a spool (discarding any earlier one): data whose place is not known yet,
    /// starting at `start` in the stream when that is known.
    SpoolStart {
        /// Where its bytes belong, if known.
        start: Option<u64>,
    },
    /// Append to the spool.
    Spool(Vec<u8>),
    /// Put the spool's bytes at `start` in the output; the spool is gone.
    Place {
        /// Where.
        start: u64,
    },
    /// Discard the output and start a fresh one (what was held belongs to another stream).
    Restart,
    /// Something the user should know.
    Notice(Notice),
    /// Send this delivery report to the session's source.
    Report {
        /// The session.
        tsi: Tsi,
        /// The report.
        outcome: pgm_wire::Outcome,
    },
}

/// Something a receiving application tells its user, not a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// The start was missed; the rest is kept because the source's next pass brings the
    /// beginning.
    KeepingForNextPass(StartMissed),
    /// The bytes held of a stream were dropped: a new session carries another.
    DroppedHeld {
        /// Bytes dropped.
        bytes: u64,
        /// The name of the stream they belonged to.
        name: String,
        /// The session that carries another stream.
        tsi: Tsi,
    },
    /// The start was missed, a partial stream is allowed, and the source announces no size:
    /// whether the beginning is missing cannot be told.
    StartUnknown(StartMissed),
}

/// Whether to keep feeding events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep going.
    Continue,
    /// The session is over (ended, or the transfer failed): call
    /// [`TransferReceiver::end_session`].
    End,
}

/// What [`TransferReceiver::end_session`] needs before it decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The parts now cover the stream: apply the queued actions, hash the output's first
    /// `size` bytes and pass the digest to [`TransferReceiver::output_hashed`].
    Hash {
        /// Bytes to hash.
        size: u64,
    },
    /// Decided.
    Decided(Verdict),
}

/// How a session ended for the transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The output holds the verified stream (or, when allowed, its tail): commit it, then
    /// call [`TransferReceiver::committed`].
    Commit,
    /// The transfer failed ([`TransferReceiver::failure`]); discard the output.
    Failed,
    /// Part is held and the source announced another pass: keep the output and feed the
    /// next session to the same receiver.
    AwaitPass(Awaiting),
}

/// Part of a stream held from an earlier session of a source that sends it in passes.
#[derive(Debug, Clone)]
struct Held {
    /// That session's manifest (the signed one in signed mode); what is held is the
    /// receiver's `have`.
    manifest: Manifest,
}

impl Held {
    /// Whether a session announcing `m` carries the same stream: name, kind and size, and
    /// the SHA-256 when both say it.
    fn same_stream(&self, m: &Manifest) -> bool {
        m.size == self.manifest.size
            && m.name == self.manifest.name
            && m.tree == self.manifest.tree
            && match (m.sha256, self.manifest.sha256) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }

    fn other_stream(&self, tsi: Option<Tsi>, m: &Manifest) -> Failure {
        Failure::OtherStream {
            tsi,
            got: StreamId::of(m),
            held: StreamId::of(&self.manifest),
        }
    }
}

/// A spool's bookkeeping (the bytes are the application's).
#[derive(Debug, Clone, Copy)]
struct SpoolRun {
    start: Option<u64>,
    len: u64,
}

/// One session's part of the transfer.
struct Session {
    tsi: Option<Tsi>,
    first: Option<u32>,
    hash: Sha256,
    total: u64,
    zmq: Option<crate::zmq::ZmqDecoder>,
    zmq_parts: u64,
    /// The latest manifest heard (from SPMs), and in signed mode the signed end's.
    manifest: Option<Manifest>,
    signed_manifest: Option<Manifest>,
    /// When data was first heard while no session had proved itself signed.
    unsigned_since: Option<Instant>,
    /// The output is put together from placed runs rather than written straight through.
    pieced: bool,
    /// Where this session's next byte belongs, when known.
    at: Option<u64>,
    spool: Option<SpoolRun>,
    /// This session is known to carry the stream held (or nothing is held).
    matched: bool,
    gap: Option<Lost>,
    start_missed: Option<StartMissed>,
}

impl Session {
    fn new(cfg: &ReceiveConfig, held: bool) -> Session {
        Session {
            tsi: None,
            first: None,
            hash: Sha256::new(),
            total: 0,
            zmq: cfg.zmq.then(crate::zmq::ZmqDecoder::default),
            zmq_parts: 0,
            manifest: None,
            signed_manifest: None,
            unsigned_since: None,
            pieced: held,
            at: Some(0),
            spool: None,
            matched: !held,
            gap: None,
            start_missed: None,
        }
    }
}

/// One receiver's transfer of one stream, over one session or, with passes, several.
pub struct TransferReceiver {
    cfg: ReceiveConfig,
    held: Option<Held>,
    have: Ranges,
    passes: u32,
    s: Session,
    /// When this receiver began waiting for the current session (set by the first call
    /// that gives a time).
    joined: Option<Instant>,
    ended: bool,
    /// The session ended awaiting another pass: the next event starts it.
    next_pass: bool,
    failure: Option<Failure>,
    /// `--allow-partial-start` kept a stream whose marked start was missed.
    kept_partial: Option<StartMissed>,
    /// The pieced stream still missing part, announced to come in another pass.
    partial: Option<Awaiting>,
    digest: [u8; 32],
    verified: Option<Verified>,
    /// The manifest as far as it can be trusted, once the session ended.
    trusted: Option<Manifest>,
    actions: VecDeque<Action>,
}

impl TransferReceiver {
    /// A transfer waiting, from `now`, for its first session.
    pub fn new(cfg: ReceiveConfig, now: Instant) -> TransferReceiver {
        let s = Session::new(&cfg, false);
        TransferReceiver {
            cfg,
            held: None,
            have: Ranges::default(),
            passes: 1,
            s,
            joined: Some(now),
            ended: false,
            next_pass: false,
            failure: None,
            kept_partial: None,
            partial: None,
            digest: [0; 32],
            verified: None,
            trusted: None,
            actions: VecDeque::new(),
        }
    }

    /// The next thing to do with the output, in order.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The session followed, once one started.
    pub fn session(&self) -> Option<Tsi> {
        self.s.tsi
    }

    /// Bytes received in the current session; after a pieced stream was completed, its size.
    pub fn bytes(&self) -> u64 {
        self.s.total
    }

    /// The SHA-256 of the stream, once the session ended.
    pub fn sha256(&self) -> [u8; 32] {
        self.digest
    }

    /// What the source announced: while receiving, the latest manifest heard; once the
    /// session ended, the one that can be trusted (in signed mode the signed end's only).
    pub fn manifest(&self) -> Option<&Manifest> {
        if self.ended {
            self.trusted.as_ref()
        } else {
            self.s.manifest.as_ref()
        }
    }

    /// Why the transfer failed, once it did.
    pub fn failure(&self) -> Option<&Failure> {
        self.failure.as_ref()
    }

    /// The stream was kept without its beginning (allowed): why.
    pub fn partial_start(&self) -> Option<&StartMissed> {
        self.kept_partial.as_ref()
    }

    /// What the stream's SHA-256 was checked against, if anything.
    pub fn verified(&self) -> Option<Verified> {
        self.verified
    }

    /// Sessions (passes) this transfer took.
    pub fn passes(&self) -> u32 {
        self.passes
    }

    /// ZeroMQ message parts written.
    pub fn zmq_parts(&self) -> u64 {
        self.s.zmq_parts
    }

    /// How the transfer ended, for its delivery report.
    pub fn status(&self) -> DeliveryStatus {
        if self.failure.is_some() {
            DeliveryStatus::Failed
        } else if self.partial.is_some() {
            DeliveryStatus::AwaitingPass
        } else if self.kept_partial.is_some() {
            DeliveryStatus::Partial
        } else {
            DeliveryStatus::Complete
        }
    }

    /// Fails the transfer for a reason its driver found (interrupted, the receiver stopped,
    /// the output failed): [`Flow::End`] follows.
    pub fn fail(&mut self, why: Failure) {
        self.failure.get_or_insert(why);
    }

    fn fail_now(&mut self, why: Failure) -> Flow {
        self.fail(why);
        Flow::End
    }

    /// The timeouts, checked now and then while no event comes: no session within the
    /// join timeout; the session followed silent (by the core's `status`) for the idle
    /// timeout; sessions heard only through their SPMs, no data, silent for the idle
    /// timeout (not in a daemon); in signed mode, data heard for the idle timeout but no
    /// signed session.
    pub fn on_tick(&mut self, now: Instant, status: &ReceiverStatus) -> Flow {
        let joined = self.begin(now);
        if self.ended {
            return Flow::End;
        }
        let idle = self.cfg.idle_timeout;
        match self.s.tsi {
            None => {
                if self.cfg.signed && status.stats.odata_packets > 0 {
                    let since = *self.s.unsigned_since.get_or_insert(now);
                    if now.duration_since(since) >= idle {
                        return self.fail_now(Failure::NoSignedSession { waited: idle });
                    }
                }
                // A source heard only through its SPMs, then silent for the idle timeout,
                // is gone: no reason to wait out the join timeout for it.
                let announced = status.sessions.iter().map(|s| (s.id, s.silent_secs));
                let quiet = status.stats.odata_packets == 0
                    && announced
                        .clone()
                        .all(|(_, silent)| silent >= idle.as_secs_f64());
                if let (false, true, Some((tsi, _))) =
                    (self.cfg.daemon, quiet, announced.clone().next())
                {
                    return self.fail_now(Failure::AnnouncedOnly { tsi, waited: idle });
                }
                match self.cfg.join_timeout {
                    Some(t) if !self.cfg.daemon && now.duration_since(joined) >= t => {
                        self.fail_now(Failure::NoSession { waited: t })
                    }
                    _ => Flow::Continue,
                }
            }
            Some(tsi) => {
                let silent = status
                    .sessions
                    .iter()
                    .find(|s| s.id == tsi)
                    .map_or(f64::INFINITY, |s| s.silent_secs);
                if silent >= idle.as_secs_f64() {
                    let st = &status.stats;
                    let naks_unanswered = if st.ncf_packets == 0 { st.naks_sent } else { 0 };
                    self.fail_now(Failure::Silent {
                        tsi,
                        waited: idle,
                        naks_unanswered,
                    })
                } else {
                    Flow::Continue
                }
            }
        }
    }

    /// Moves on to the next pass once the application has seen how the last one ended;
    /// when this receiver began waiting for its session.
    fn begin(&mut self, now: Instant) -> Instant {
        if self.next_pass {
            self.next_pass = false;
            self.next_session();
        }
        *self.joined.get_or_insert(now)
    }

    /// One event of the receiver's sessions; those of other sessions than the one followed
    /// are ignored.
    pub fn handle(&mut self, ev: Event, now: Instant) -> Flow {
        self.begin(now);
        if self.ended || self.failure.is_some() {
            return Flow::End;
        }
        let ours = |tsi: Tsi| Some(tsi) == self.s.tsi;
        match ev {
            Event::SessionStarted { tsi, first_sqn } if self.s.tsi.is_none() => {
                self.s.tsi = Some(tsi);
                self.s.first = Some(first_sqn);
                Flow::Continue
            }
            Event::Data { tsi, data, .. } if ours(tsi) => self.data(data),
            Event::Unrecoverable { tsi, first, last } if ours(tsi) => {
                self.unrecoverable(Lost { tsi, first, last })
            }
            Event::SessionEnded { syn_sqn, tsi } if ours(tsi) => self.session_ended(syn_sqn),
            Event::StartMissed {
                tsi,
                first_sqn,
                syn_sqn,
            } if ours(tsi) && !self.cfg.zmq => self.start_missed(StartMissed {
                first_sqn,
                syn_sqn,
                at_end: false,
            }),
            Event::Manifest {
                tsi,
                manifest,
                signed,
            } if ours(tsi) => {
                if signed {
                    self.s.signed_manifest = Some(manifest);
                    Flow::Continue
                } else {
                    self.manifest_heard(tsi, manifest)
                }
            }
            Event::SessionReset { tsi, error_code } if ours(tsi) => {
                self.fail_now(Failure::Aborted {
                    tsi,
                    code: error_code,
                })
            }
            Event::SessionExpired { tsi } if ours(tsi) => self.fail_now(Failure::Expired { tsi }),
            _ => Flow::Continue,
        }
    }

    fn data(&mut self, data: Vec<u8>) -> Flow {
        if !self.cfg.signed && !self.cfg.zmq && pgmcc::signed::looks_like_list(&data) {
            return self.fail_now(Failure::SourceSigns);
        }
        let s = &mut self.s;
        let len = data.len() as u64;
        s.total += len;
        if !s.pieced {
            s.hash.update(&data);
        }
        if s.pieced && !s.matched && s.spool.is_none() {
            // Not known yet to be the stream held: set aside until the manifest says.
            let start = s.at.take();
            s.spool = Some(SpoolRun { start, len: 0 });
            self.actions.push_back(Action::SpoolStart { start });
        }
        if let Some(d) = s.zmq.as_mut() {
            match d.push(&data) {
                Ok(parts) => {
                    for p in parts {
                        s.zmq_parts += 1;
                        let at = s.at.get_or_insert(0);
                        let n = p.body.len() as u64;
                        self.actions.push_back(Action::Write {
                            offset: *at,
                            data: p.body,
                        });
                        self.actions.push_back(Action::Write {
                            offset: *at + n,
                            data: b"\n".to_vec(),
                        });
                        *at += n + 1;
                    }
                    return Flow::Continue;
                }
                Err(e) => return self.fail_now(Failure::NotZmq(e.to_string())),
            }
        }
        match (s.spool.as_mut(), s.at.as_mut()) {
            (Some(sp), _) => {
                sp.len += len;
                self.actions.push_back(Action::Spool(data));
            }
            (None, Some(p)) => {
                // Bytes already held from an earlier pass stay as they are.
                if !(s.pieced && self.have.contains(*p, *p + len)) {
                    self.actions.push_back(Action::Write { offset: *p, data });
                }
                self.have.insert(*p, *p + len);
                *p += len;
            }
            (None, None) => {}
        }
        Flow::Continue
    }

    /// Whether the source's next pass can bring what this session misses: the output can
    /// hold parts and the stream is already held or announced to come again.
    fn another_pass_helps(&self) -> bool {
        self.cfg.pieces
            && !self.cfg.zmq
            && (self.held.is_some() || self.s.manifest.as_ref().is_some_and(|m| m.another_pass))
    }

    /// From here on this session's data goes to a spool whose start is not known.
    fn spool_from_here(&mut self) {
        self.s.pieced = true;
        self.s.spool = Some(SpoolRun {
            start: None,
            len: 0,
        });
        self.s.at = None;
        self.actions.push_back(Action::SpoolStart { start: None });
    }

    fn unrecoverable(&mut self, lost: Lost) -> Flow {
        if !self.another_pass_helps() {
            return self.fail_now(Failure::Unrecoverable(lost));
        }
        // Another pass will come: keep what has a place. The run so far (if placed) stays;
        // what follows the gap is placed only if it reaches the end; a run between two gaps
        // cannot be placed.
        self.s.gap.get_or_insert(lost);
        self.spool_from_here();
        Flow::Continue
    }

    fn start_missed(&mut self, why: StartMissed) -> Flow {
        // A source that sends another pass brings the beginning then (not known before its
        // manifest arrives: wait for it, unless the start may be missing anyway).
        let announced = self.s.manifest.as_ref().map(|m| m.another_pass);
        let another = self.held.is_some() || announced.unwrap_or(!self.cfg.allow_partial_start);
        if self.cfg.pieces && !self.cfg.zmq && another {
            if announced == Some(true) && self.held.is_none() {
                self.actions
                    .push_back(Action::Notice(Notice::KeepingForNextPass(why)));
            }
            self.spool_from_here();
            self.s.start_missed = Some(why);
            Flow::Continue
        } else if self.cfg.allow_partial_start {
            self.s.start_missed = Some(why);
            Flow::Continue
        } else {
            // Fail now, not after receiving the rest of a stream that cannot be whole.
            self.fail_now(Failure::StartMissed(why))
        }
    }

    fn session_ended(&mut self, syn_sqn: Option<u32>) -> Flow {
        let s = &self.s;
        if !s.pieced && (syn_sqn.is_none() || syn_sqn != s.first) && !self.cfg.zmq {
            let why = StartMissed {
                first_sqn: s.first.unwrap_or_default(),
                syn_sqn,
                at_end: true,
            };
            if !self.cfg.allow_partial_start {
                return self.fail_now(Failure::StartMissed(why));
            } else if syn_sqn.is_some() {
                self.kept_partial = Some(why);
            } else {
                // Partial if the manifest's size says so (at the end); a source without
                // one (OpenPGM's) leaves it unknown.
                self.s.start_missed.get_or_insert(why);
            }
        }
        Flow::End
    }

    fn manifest_heard(&mut self, tsi: Tsi, m: Manifest) -> Flow {
        // Trusting a key, an SPM's word is for the progress display only.
        if m.tree && !self.cfg.dir && !self.cfg.signed {
            return self.fail_now(Failure::TreeNeedsDir { name: Some(m.name) });
        }
        // What a session announced stays what it carries: only its SHA-256 may be added, at
        // its end. A changed size, name or kind is a forged announcement (one that shrinks the
        // size to what arrived would make a prefix look whole) or a confused source. Trusting
        // a key, only the signed end's manifest counts and an SPM's changes nothing.
        if !self.cfg.signed
            && self
                .s
                .manifest
                .as_ref()
                .is_some_and(|old| !same_announcement(old, &m))
        {
            return self.fail_now(Failure::ManifestChanged { tsi });
        }
        // Passes: a late joiner waiting for this manifest learns whether another pass will
        // bring the beginning; a receiver holding part of a stream learns whether this
        // session carries the same one.
        let s = &self.s;
        if s.pieced && self.held.is_none() && !m.another_pass && !self.cfg.allow_partial_start {
            let why = s
                .start_missed
                .map(Shortfall::StartMissed)
                .or_else(|| s.gap.map(Shortfall::Lost));
            if let Some(why) = why {
                return self.fail_now(Failure::NoOtherPass(why));
            }
        }
        if let (Some(h), false) = (&self.held, self.s.matched) {
            if !h.same_stream(&m) {
                if !self.cfg.daemon {
                    let f = h.other_stream(Some(tsi), &m);
                    return self.fail_now(f);
                }
                // Receiving one transfer after another: what was held is dropped.
                self.actions.push_back(Action::Notice(Notice::DroppedHeld {
                    bytes: self.have.total(),
                    name: h.manifest.name.clone(),
                    tsi,
                }));
                self.actions.push_back(Action::Restart);
                self.held = None;
                self.passes = 1;
                self.have = Ranges::default();
            }
            self.s.matched = true;
            // Data set aside while unmatched, whose place is known, goes in.
            if let Some(SpoolRun {
                start: Some(start),
                len,
            }) = self.s.spool
            {
                self.s.spool = None;
                self.actions.push_back(Action::Place { start });
                self.have.insert(start, start + len);
                self.s.at = Some(start + len);
            }
        }
        self.s.manifest = Some(m);
        Flow::Continue
    }

    /// The session is over (after [`Flow::End`]): decides what the output is, queuing the
    /// actions that place what has a place.
    pub fn end_session(&mut self) -> Ending {
        self.ended = true;
        self.digest = std::mem::take(&mut self.s.hash).finalize().into();
        let manifest = if self.cfg.signed {
            // The manifest of the signed end only (name, tree flag, mode, time, SHA-256),
            // never an SPM's, which anyone able to spoof the source could have sent.
            if self.s.signed_manifest.is_none() && self.cfg.dir {
                self.fail(Failure::UnsignedManifest);
            }
            self.s.signed_manifest.take()
        } else {
            self.s.manifest.take()
        };
        self.trusted = manifest;
        if !self.cfg.dir && self.trusted.as_ref().is_some_and(|m| m.tree) {
            self.fail(Failure::TreeNeedsDir { name: None });
        }
        let size = self.trusted.as_ref().and_then(|m| m.size);
        if self.failure.is_none() && !self.s.pieced && self.kept_partial.is_none() {
            // A partial stream was allowed: partial when the source's size says bytes are
            // missing, unknown without one.
            if let Some(why) = self.s.start_missed.take() {
                match size {
                    Some(size) if self.s.total < size => self.kept_partial = Some(why),
                    Some(_) => {}
                    None => self
                        .actions
                        .push_back(Action::Notice(Notice::StartUnknown(why))),
                }
            }
        }
        if let (None, false, None, Some(size)) =
            (&self.failure, self.s.pieced, &self.kept_partial, size)
        {
            // A stream that ends short of its announced size was cut off: by an end forged
            // at the current lead, or by a source whose input shrank.
            if self.s.total != size && !self.cfg.zmq {
                self.fail(Failure::Truncated {
                    got: self.s.total,
                    size,
                });
            }
        }
        if self.failure.is_some() || !self.s.pieced {
            return Ending::Decided(self.decide());
        }
        let why = self
            .s
            .start_missed
            .take()
            .map(Shortfall::StartMissed)
            .or_else(|| self.s.gap.take().map(Shortfall::Lost))
            .unwrap_or(Shortfall::EarlierPasses);
        match self.assemble(&why) {
            Ok(true) => {
                return Ending::Hash {
                    size: size.unwrap_or(0),
                };
            }
            Ok(false) => {
                let size = size.unwrap_or(0);
                if self.trusted.as_ref().is_some_and(|m| m.another_pass) {
                    self.partial = Some(Awaiting {
                        held: self.have.clone(),
                        size,
                        why,
                    });
                } else {
                    self.fail(Failure::Missing {
                        why,
                        missing: size - self.have.total().min(size),
                        held: self.have.describe(),
                        size,
                        passes: self.passes,
                    });
                }
            }
            Err(f) => self.fail(f),
        }
        Ending::Decided(self.decide())
    }

    /// Places the spooled run that reached the end (or whose start is known): whether the
    /// stream is now whole.
    fn assemble(&mut self, why: &Shortfall) -> Result<bool, Failure> {
        let Some(m) = self.trusted.as_ref() else {
            // A source with no manifest (OpenPGM's) sends no passes either.
            return Err(Failure::NoManifest(why.clone()));
        };
        let Some(size) = m.size else {
            return Err(Failure::NoSize);
        };
        if let Some(h) = self.held.as_ref().filter(|h| !h.same_stream(m)) {
            return Err(h.other_stream(None, m));
        }
        if let Some(sp) = self.s.spool.take() {
            // A run reaching the session's end ends at the stream's end.
            let start = sp.start.unwrap_or_else(|| size.saturating_sub(sp.len));
            if start.checked_add(sp.len).is_some_and(|e| e <= size) {
                self.actions.push_back(Action::Place { start });
                self.have.insert(start, start + sp.len);
            }
        }
        Ok(self.have.covers(size))
    }

    /// The SHA-256 of the output's first `size` bytes, as [`Ending::Hash`] asked.
    pub fn output_hashed(&mut self, sha256: [u8; 32]) -> Verdict {
        self.digest = sha256;
        if let Some(size) = self.trusted.as_ref().and_then(|m| m.size) {
            self.s.total = size;
        }
        self.decide()
    }

    /// The output failed while [`Ending::Hash`] was being answered (it could not be read
    /// back): the transfer fails, and its report says why.
    pub fn output_failed(&mut self, why: String) -> Verdict {
        self.fail(Failure::Output(why));
        self.decide()
    }

    fn decide(&mut self) -> Verdict {
        if self.failure.is_none() && self.partial.is_none() && self.kept_partial.is_none() {
            self.check_sha256();
        }
        let tsi = self.s.tsi;
        if let (None, Some(a)) = (&self.failure, self.partial.take()) {
            // Part of the stream, and another pass announced: say so to the source (so
            // that it sends that pass) and keep what is held for it.
            if let Some(tsi) = tsi {
                self.actions.push_back(Action::Report {
                    tsi,
                    outcome: pgm_wire::Outcome {
                        status: DeliveryStatus::AwaitingPass.wire(),
                        bytes: self.have.total(),
                        sha256: [0; 32],
                        reason: a.to_string(),
                        reporter: None,
                    },
                });
            }
            if let Some(m) = self.trusted.clone() {
                self.held = Some(Held { manifest: m });
            }
            self.passes += 1;
            self.next_pass = true;
            return Verdict::AwaitPass(a);
        }
        self.held = None;
        if self.failure.is_some() {
            self.report();
            Verdict::Failed
        } else {
            Verdict::Commit
        }
    }

    /// The whole stream's hash: against the expected one, else the source's manifest.
    fn check_sha256(&mut self) {
        let got = hex(&self.digest);
        if let Some(want) = self.cfg.expect_sha256 {
            if want == self.digest {
                self.verified = Some(Verified::Expected);
            } else {
                self.fail(Failure::Sha256 {
                    got,
                    want: hex(&want),
                    expected: true,
                });
            }
        } else if let Some(want) = self.trusted.as_ref().and_then(|m| m.sha256) {
            if want == self.digest {
                self.verified = Some(if self.cfg.signed {
                    Verified::SignedManifest
                } else {
                    Verified::Manifest
                });
            } else {
                self.fail(Failure::Sha256 {
                    got,
                    want: hex(&want),
                    expected: false,
                });
            }
        } else if self.trusted.is_some() && !self.cfg.signed {
            // A source that announces what it sends announces its hash with the end; an end
            // without it may be forged (signed mode verifies every byte and the end instead).
            self.fail(Failure::NoEndHash);
        }
    }

    /// The output was committed (or failed to be, and why): queues the delivery report.
    /// The output is committed before the source is told it arrived.
    pub fn committed(&mut self, result: Result<(), String>) {
        if let Err(e) = result {
            self.fail(Failure::Output(e));
        }
        self.report();
    }

    /// Queues the delivery report of how the transfer ended.
    fn report(&mut self) {
        let Some(tsi) = self.s.tsi else { return };
        let reason = match (&self.failure, &self.kept_partial) {
            (Some(f), _) => f.to_string(),
            (None, Some(p)) => p.to_string(),
            (None, None) => String::new(),
        };
        self.actions.push_back(Action::Report {
            tsi,
            outcome: pgm_wire::Outcome {
                status: self.status().wire(),
                bytes: self.s.total,
                sha256: self.digest,
                reason,
                reporter: None,
            },
        });
    }

    /// Ready for the source's next pass: a new session, holding what earlier ones left.
    fn next_session(&mut self) {
        self.s = Session::new(&self.cfg, self.held.is_some());
        self.joined = None;
        self.ended = false;
        self.digest = [0; 32];
        self.trusted = None;
    }
}

/// Whether `new` announces the same stream as `old`: everything equal, except the SHA-256
/// that the end adds.
fn same_announcement(old: &Manifest, new: &Manifest) -> bool {
    old.size == new.size
        && old.name == new.name
        && old.tree == new.tree
        && old.mode == new.mode
        && old.mtime == new.mtime
        && old.another_pass == new.another_pass
        && (old.sha256.is_none() || old.sha256 == new.sha256)
}
