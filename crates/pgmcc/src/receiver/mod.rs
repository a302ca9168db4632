//! The PGM receiver (RFC 3208 §5), sans-IO.
//!
//! One `Receiver` serves every session (TSI) arriving on its group and port, each with its
//! own receive window. Its methods follow the [`Sender`](crate::Sender)'s pattern:
//! [`Receiver::handle`] and [`Receiver::handle_timeout`] take input, [`Receiver::poll_transmit`]
//! and [`Receiver::poll_timeout`] give output, [`Receiver::poll_event`] hands data and session
//! events to the application. `now` must never go backwards.
//!
//! What it guarantees the application: APDUs are delivered complete and in sequence order,
//! once. A sequence number that cannot be recovered (retries exhausted, or the source's
//! window moved past it) produces [`ReceiverEvent::Unrecoverable`] at its place in the
//! sequence: there is never a silent gap.
//!
//! Timers (RFC 3208 §5.3; `docs/core.md`, "NAK timers"). When the source advertises its
//! group RTT G in OPT_GRTT (on SPMs and NCFs; our sources do once they measured an RTT):
//! * NAK back-off in `[0, K·G]` (K = [`ReceiverConfig::nak_bo_grtts`], 4), drawn from NORM's
//!   truncated exponential with λ = ln(group size) + 1, so that among many receivers missing
//!   the same packet one NAKs early and its NCF silences the rest;
//! * NAK_RPT_IVL (wait for the NCF) and NAK_RDATA_IVL (wait for the repair) of 2·G.
//!
//! Without OPT_GRTT (OpenPGM sources, or ours without a controller), OpenPGM's defaults:
//! NAK_BO_IVL 50 ms (uniform), NAK_RPT_IVL and NAK_RDATA_IVL 2 s. Either way a missing
//! sequence number is NAKed until [`ReceiverConfig::nak_give_up`] (30 s, at least 20·G) has
//! passed since it was found missing, or until the source's trailing edge passes it.

mod config;
mod event;
mod guard;
mod poll;
mod rxw;
mod session;
#[cfg(test)]
mod tests;
mod transmit;

use std::collections::VecDeque;
use std::net::IpAddr;

use pgm_wire::{Body, NakRepr, Repr, Tsi, FEC_RS_VANDERMONDE_GF256, OPT_PARITY, OPT_VAR_PKTLEN};
use tracing::trace;

use crate::cc::feedback::{Feedback, FeedbackConfig};
use crate::rng::Rng;
use crate::sqn;
use crate::time::Instant;
use crate::transmit::Transmit;
pub use config::{JoinPolicy, ReceiverConfig, DEFAULT_NAK_BO_GRTTS, DEFAULT_START_REACH};
pub use event::{ReceiverEvent, ReceiverStats};
use rxw::{fragment_is_sane, Insert, NakTimers, Output, ParityInsert, ReceiveWindow};
use session::{Admit, Peer, Sessions};
use transmit::{Outbox, Pending};

/// Mixed into the seed for the poll generators ("POLL").
const POLL_SEED: u64 = 0x504f_4c4c;

/// A PGM receiver.
#[derive(Debug)]
pub struct Receiver {
    config: ReceiverConfig,
    timers: NakTimers,
    feedback: FeedbackConfig,
    rng: Rng,
    /// RAND_NODE_ID (RFC 3208 §14.5), matched against the source's polls, and the
    /// generator of poll replies' back-offs: both apart from `rng`, so answering polls does
    /// not move the NAK back-offs' draws.
    node_id: u32,
    poll_rng: Rng,
    sessions: Sessions,
    transmits: Outbox,
    events: VecDeque<ReceiverEvent>,
    stats: ReceiverStats,
}

impl Receiver {
    /// A receiver with no sessions yet.
    pub fn new(config: ReceiverConfig, now: Instant) -> Receiver {
        let _ = now;
        Receiver {
            timers: config.timers(),
            feedback: config.feedback(),
            rng: Rng::new(config.seed),
            node_id: Rng::new(config.seed ^ POLL_SEED).below(1 << 32) as u32,
            poll_rng: Rng::new((config.seed ^ POLL_SEED).wrapping_add(1)),
            sessions: Sessions::default(),
            transmits: Outbox::default(),
            events: VecDeque::new(),
            stats: ReceiverStats::default(),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ReceiverConfig {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    /// Payload bytes buffered over all sessions: data waiting for delivery, and the parity
    /// copies and parity packets kept for rebuilding (walks every window; for diagnostics).
    /// Bounded by `ReceiverConfig::total_bytes`, three times over at most.
    pub fn buffered_bytes(&self) -> u64 {
        self.sessions
            .iter()
            .filter_map(|p| p.rxw.as_ref())
            .map(|w| w.bytes_held())
            .sum()
    }

    /// Every session tracked, with when a data packet or SPM of it last arrived (a source
    /// heard only through its heartbeats is alive).
    pub fn sessions(&self) -> impl Iterator<Item = (Tsi, Instant)> + '_ {
        self.sessions.iter().map(|p| (p.tsi, p.last_heard))
    }

    /// Sequence numbers of `tsi` currently waiting for repair.
    pub fn missing(&self, tsi: &Tsi) -> usize {
        self.sessions
            .get(tsi)
            .and_then(|p| p.rxw.as_ref())
            .map_or(0, |w| w.missing())
    }

    /// Where `tsi`'s stream begins, as far as this receiver knows: the sequence number of the
    /// packet the source marked OPT_SYN (its first ODATA, RFC 3208 §9.5), once one arrived.
    /// A receiver whose [`ReceiverEvent::SessionStarted`] `first_sqn` differs from this, or
    /// that never hears it, joined after the start. OpenPGM sources send no OPT_SYN.
    pub fn session_syn(&self, tsi: &Tsi) -> Option<u32> {
        self.sessions.get(tsi).and_then(|p| p.syn_sqn)
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<ReceiverEvent> {
        self.events.pop_front()
    }

    /// Tells the source of session `tsi` how the session ended here: a POLR carrying
    /// OPT_OUTCOME (what was delivered, its SHA-256, why it failed), sent straight to the
    /// source's address. Unicast may be lost: callers send it a few times (the source keeps
    /// the last report per address). Returns false when the session is unknown or its source
    /// address is not.
    pub fn report(&mut self, tsi: Tsi, outcome: pgm_wire::Outcome) -> bool {
        let known = self
            .sessions
            .get(&tsi)
            .is_some_and(|p| p.data_from.is_some());
        if known {
            // Named by this receiver's own address, which the source checks against the
            // address the report comes from.
            let outcome = pgm_wire::Outcome {
                reporter: Some(self.config.nla),
                ..outcome
            };
            self.transmits.push(tsi, Pending::Report(Box::new(outcome)));
        }
        known
    }

    /// Takes one datagram. `from` is the IP address it came from.
    pub fn handle(&mut self, now: Instant, from: IpAddr, datagram: &[u8]) {
        if datagram.len() > self.config.max_tpdu {
            self.stats.oversized += 1;
            return;
        }
        let repr = match Repr::parse(datagram) {
            Ok(r) => r,
            Err(e) => {
                let quirk = self.config.openpgm_rdata_checksum
                    && matches!(e, pgm_wire::Error::Checksum { .. });
                match quirk
                    .then(|| Repr::parse_openpgm_held_back_rdata(datagram))
                    .flatten()
                {
                    Some(r) => {
                        self.stats.openpgm_rdata_checksums += 1;
                        r
                    }
                    None => {
                        self.stats.malformed += 1;
                        trace!(%from, error = %e, "receiver: malformed datagram dropped");
                        return;
                    }
                }
            }
        };
        let parity = repr.header_flags & OPT_PARITY != 0;
        let downstream = matches!(
            repr.body,
            Body::Odata(_) | Body::Rdata(_) | Body::Spm(_) | Body::Ncf(_) | Body::Poll(_)
        );
        if downstream && self.config.session.is_some_and(|t| t != repr.tsi()) {
            self.stats.other_session += 1;
            return;
        }
        if downstream && !self.sent_by_source(&repr, from) {
            self.stats.wrong_source += 1;
            trace!(%from, tsi = %repr.tsi(), "receiver: downstream packet not from the session's source dropped");
            return;
        }
        match repr.body {
            Body::Odata(d) | Body::Rdata(d) if repr.dport == self.config.dport && parity => {
                self.on_parity(now, &repr, d.sqn, d.trail);
            }
            Body::Odata(d) | Body::Rdata(d) if repr.dport == self.config.dport => {
                let rdata = matches!(repr.body, Body::Rdata(_));
                self.on_data(now, from, &repr, d.sqn, d.trail, rdata);
            }
            Body::Spm(spm) if repr.dport == self.config.dport => {
                self.stats.spm_packets += 1;
                self.on_spm(now, from, &repr, spm);
            }
            Body::Ncf(n) if repr.dport == self.config.dport && n.group == self.config.group => {
                self.stats.ncf_packets += 1;
                self.on_ncf(now, &repr, &n, false);
            }
            Body::Nak(n) if repr.sport == self.config.dport && n.group == self.config.group => {
                // Another receiver's NAK, heard on a shared segment.
                self.on_ncf(now, &repr, &n, true);
            }
            Body::Poll(mut p) if repr.dport == self.config.dport => {
                self.stats.polls_received += 1;
                // Replies go where NAKs would: the source, or a configured network element.
                p.path_nla = self.config.upstream_to(p.path_nla, from);
                let (node_id, rng) = (self.node_id, &mut self.poll_rng);
                // Only a session already heard from: a poll does not open one.
                if let Some(peer) = self.sessions.get_mut(&repr.tsi()) {
                    peer.poll.on_poll(now, &p, node_id, rng);
                }
            }
            _ => self.stats.ignored += 1,
        }
        self.drain_all();
    }

    /// Whether a downstream packet may come from `from`: the configured source, and the
    /// address the session's first packet came from.
    fn sent_by_source(&self, repr: &Repr<'_>, from: IpAddr) -> bool {
        if self.config.source.is_some_and(|s| s != from) {
            return false;
        }
        self.sessions
            .source_of(&repr.tsi())
            .is_none_or(|s| s == from)
    }

    /// Makes sure `tsi` has a session entry, bound to `from` if new; false when the session
    /// table is full.
    fn ensure_peer(&mut self, tsi: Tsi, now: Instant, from: IpAddr) -> bool {
        let feedback = &self.feedback;
        let admit = self.sessions.ensure(
            tsi,
            now,
            self.config.max_sessions,
            self.config.peer_expiry,
            || Peer {
                tsi,
                source: from,
                path: None,
                data_from: None,
                fb: Feedback::new(feedback),
                spm_sqn: None,
                spm_at: now,
                naks: guard::nak_budget(now),
                rxw: None,
                fin_lead: None,
                syn_sqn: None,
                max_payload: 0,
                last_heard: now,
                ended: false,
                announced: false,
                origin: 0,
                delivering: false,
                manifest: None,
                next_spmr: now,
                grtt: None,
                poll: Default::default(),
            },
        );
        match admit {
            Admit::Ok => true,
            Admit::Evicted {
                tsi: victim,
                expired,
            } => {
                if expired {
                    self.events
                        .push_back(ReceiverEvent::SessionExpired { tsi: victim });
                }
                self.transmits.forget(victim);
                self.stats.sessions_evicted += 1;
                true
            }
            Admit::Full => {
                self.stats.sessions_rejected += 1;
                false
            }
        }
    }

    fn on_data(
        &mut self,
        now: Instant,
        from: IpAddr,
        repr: &Repr<'_>,
        s: u32,
        trail: u32,
        rdata: bool,
    ) {
        if rdata {
            self.stats.rdata_packets += 1;
        } else {
            self.stats.odata_packets += 1;
        }
        if let Some(f) = &repr.options.fragment {
            if !fragment_is_sane(f, repr.payload.len(), s, self.config.max_apdu) {
                self.stats.malformed += 1;
                return;
            }
        }
        let tsi = repr.tsi();
        if !self.data_plausible(now, tsi, s, trail) {
            return;
        }
        if !self.ensure_peer(tsi, now, from) {
            return;
        }
        // The other sessions' share of the memory bound (none with one session).
        let others = if self.sessions.len() > 1 {
            self.sessions
                .iter()
                .filter(|p| p.tsi != tsi)
                .map(Peer::bytes_bound)
                .sum()
        } else {
            0
        };
        let Some(peer) = self.sessions.get_mut(&tsi) else {
            return;
        };
        if rdata {
            peer.naks.give();
        }
        if !within_budget(&self.config, peer, s, repr.payload.len() as u64, others) {
            self.stats.over_budget += 1;
            return;
        }
        if peer.ended {
            return;
        }
        peer.max_payload = peer.max_payload.max(repr.payload.len() as u64);
        let timers = peer.timers(&self.timers);
        peer.data_from = Some(from);
        if repr.options.syn {
            peer.syn_sqn = Some(s);
        }
        if peer.rxw.is_none() {
            let base = window_base(&self.config, s, trail, &repr.options);
            peer.rxw = Some(new_window(&self.config, tsi, base, trail));
        }
        let need_spmr = peer.path.is_none() && now >= peer.next_spmr;
        if need_spmr {
            peer.next_spmr = now + timers.rpt_ivl;
        }
        let Some(w) = peer.rxw.as_mut() else {
            return;
        };
        if w.refuses_ahead(s, repr.payload, repr.options.fragment) {
            // Signed mode: forged where the verified lists say what comes; the window stays.
            return;
        }
        let old_lead = w.lead();
        // Feedback runs on ODATA (and on repairs that name this receiver acker, below), when
        // the receiver takes part in congestion control.
        let feedback = self.config.pgmcc && !rdata;
        // The controller may set its own NAK back-off for the gaps this ODATA reveals.
        let timers = match feedback
            .then(|| peer.fb.nak_backoff(&repr.options, &self.feedback))
            .flatten()
        {
            Some(bo_ivl) if bo_ivl.is_zero() => timers.without_backoff(),
            Some(bo_ivl) => NakTimers {
                bo_ivl,
                bo_lambda: None,
                ..timers
            },
            None => timers,
        };
        w.extend_to(s, now, &timers, &mut self.rng);
        w.set_trail(trail);
        let ins = w.insert(s, repr.payload, repr.options.fragment);
        // Signed mode: a packet waiting unverified is acknowledged, and counts in the loss
        // signal, only once its list verifies it (a forgery ahead of the source would
        // otherwise carry the ACKs past the source's lead).
        let held = matches!(ins, Insert::New) && w.is_unverified(s);
        let nonce = repr.options.ack_proof.map(|p| p.value);
        if held {
            peer.fb.on_held(s, nonce);
        } else if matches!(ins, Insert::New) {
            peer.fb.on_packet(s, nonce);
        }
        if matches!(ins, Insert::New) {
            // A repair or late packet may complete a group whose parity is waiting.
            if let Some(r) = w.rebuild_if_ready(s) {
                note_parity(r, &mut peer.fb, &mut self.stats);
            }
        }
        let verified = w.take_verified();
        if !verified.is_empty() {
            peer.fb.on_verified(now, &verified);
        }
        let mut report_gap = None;
        let mut lost_first = None;
        if !rdata && !held && sqn::gt(s, old_lead) {
            // The loss signal in sequence space: 1 per gap, 0 for this packet (§3.2.2).
            let gap = sqn::distance(old_lead, s).saturating_sub(1);
            if gap > 0 {
                lost_first = Some(old_lead.wrapping_add(1));
            }
            peer.fb.on_gap(now, gap);
            peer.fb.on_lead();
            if gap > 0 && !self.config.reliable {
                let first = old_lead.wrapping_add(1);
                w.give_up(first, s.wrapping_sub(1));
                if peer.path.is_some() && peer.fb.can_report() {
                    report_gap = Some(first);
                }
            }
        }
        if self.config.pgmcc && rdata && !held && matches!(ins, Insert::New) {
            peer.fb
                .on_rdata(now, &repr.options, &self.feedback, &mut self.stats.cc);
        }
        if feedback {
            peer.fb.on_odata(
                now,
                &repr.options,
                lost_first,
                &self.feedback,
                &mut self.rng,
                &mut self.stats.cc,
            );
        }
        self.announce_if_proven(tsi);
        match ins {
            Insert::New => {
                // Anything but the packet that extended the lead filled a gap.
                if rdata || !sqn::gt(s, old_lead) {
                    self.stats.gaps_filled += 1;
                }
            }
            Insert::Duplicate => self.stats.duplicates += 1,
            // Counted by the window (`ReceiverStats::signed`).
            Insert::Forged => {}
        }
        if need_spmr {
            self.transmits.push(tsi, Pending::Spmr(from));
        }
        self.queue_feedback(tsi);
        if let Some(first) = report_gap {
            // Unreliable mode: one NAK, for the report it carries.
            self.transmits.push(tsi, Pending::Nak(vec![first]));
        }
    }

    /// A parity packet (RFC 3208 §11.5): held until its group can be rebuilt, then the
    /// rebuilt packets go into the window as RDATA would.
    fn on_parity(&mut self, now: Instant, repr: &Repr<'_>, s: u32, trail: u32) {
        self.stats.parity_packets += 1;
        let tsi = repr.tsi();
        let k = self
            .sessions
            .get(&tsi)
            .and_then(|p| p.rxw.as_ref()?.parity_k());
        // A parity packet shows its whole group sent: the group's last packet is its lead.
        if let Some(k) = k {
            let group_end = crate::fec::tg_sqn(s, k).wrapping_add(k - 1);
            if !self.data_plausible(now, tsi, group_end, trail) {
                return;
            }
        }
        let Some(peer) = self.sessions.get_mut(&tsi) else {
            self.stats.ignored += 1;
            return;
        };
        if matches!(repr.body, Body::Rdata(_)) {
            peer.naks.give();
        }
        let timers = peer.timers(&self.timers);
        let (Some(w), false) = (peer.rxw.as_mut(), peer.ended) else {
            self.stats.ignored += 1;
            return;
        };
        let Some(k) = w.parity_k() else {
            // No OPT_FEC heard from this source: we cannot tell its code.
            self.stats.ignored += 1;
            return;
        };
        let var = repr.header_flags & OPT_VAR_PKTLEN != 0;
        let encoded = repr.options.fragment_encoded;
        let layout = crate::fec::Layout::of_parity(repr.payload.len(), var, encoded.is_some());
        let (Some(layout), None) = (layout, repr.options.fragment) else {
            self.stats.malformed += 1;
            return;
        };
        let tg = crate::fec::tg_sqn(s, k);
        if repr.options.syn {
            // RFC 3208 §9.6.2: parity of the first group marks its first packet as the SYN.
            peer.syn_sqn = Some(tg);
        }
        let mut shard = repr.payload.to_vec();
        shard.extend_from_slice(encoded.as_ref().map_or(&[][..], |e| &e[..]));
        // A parity packet shows that its whole group was sent (§11.5).
        w.extend_to(tg.wrapping_add(k - 1), now, &timers, &mut self.rng);
        w.set_trail(trail);
        let r = w.insert_parity(tg, s.wrapping_sub(tg), layout, shard);
        note_parity(r, &mut peer.fb, &mut self.stats);
        self.announce_if_proven(tsi);
    }

    /// Whether data packet `s` of session `tsi`, carrying `trail`, shows window edges its
    /// source could send (`guard`); counts those that do not (`implausible_data`). Checked
    /// before the packet moves anything: the session's entry, its window, trail and lead.
    fn data_plausible(&mut self, now: Instant, tsi: Tsi, s: u32, trail: u32) -> bool {
        let peer = self.sessions.get(&tsi);
        let rxw_sqns = self.config.rxw_sqns;
        let plausible = guard::data_trail_plausible(peer, s, trail)
            && peer.is_none_or(|p| guard::lead_plausible(p, s, rxw_sqns, now, true));
        if !plausible {
            self.stats.implausible_data += 1;
            trace!(%tsi, s, trail, "receiver: data packet with implausible window edges dropped");
        }
        plausible
    }

    /// Announces session `tsi` (`SessionStarted`) once it has proved itself: data arrived
    /// (in signed mode: a digest list verified). A session heard only by SPMs, or only by
    /// packets that do not verify, is never announced, and is the first to make room when
    /// the session table is full.
    fn announce_if_proven(&mut self, tsi: Tsi) {
        let Some(peer) = self.sessions.get_mut(&tsi) else {
            return;
        };
        let Some(w) = peer.rxw.as_ref() else {
            return;
        };
        if !peer.announced && w.proven() {
            peer.announced = true;
            peer.origin = w.origin();
            self.events.push_back(ReceiverEvent::SessionStarted {
                tsi,
                first_sqn: w.origin(),
            });
            if let Some(manifest) = peer.manifest.clone() {
                self.events.push_back(ReceiverEvent::Manifest {
                    tsi,
                    manifest,
                    signed: false,
                });
            }
        }
    }

    /// Moves the ACKs `tsi`'s feedback wants sent into the transmit queue.
    fn queue_feedback(&mut self, tsi: Tsi) {
        let Some(peer) = self.sessions.get_mut(&tsi) else {
            return;
        };
        while let Some(a) = peer.fb.poll_transmit() {
            if self.transmits.push_ack(tsi, a, self.config.coalesce_acks) {
                self.stats.acks_coalesced += 1;
            }
        }
    }

    fn on_spm(&mut self, now: Instant, from: IpAddr, repr: &Repr<'_>, spm: pgm_wire::SpmRepr) {
        let tsi = repr.tsi();
        let (rxw_sqns, reliable) = (self.config.rxw_sqns, self.config.reliable);
        // Edges no source can send, or jumps no receiver of the session could have missed
        // (`guard`): one forged SPM would otherwise end the session, give up on everything,
        // or make every later real SPM look old.
        let plausible = |p: &Peer| {
            guard::spm_sqn_plausible(p, spm.sqn, now)
                && guard::lead_plausible(p, spm.lead, rxw_sqns, now, false)
        };
        if !self.sessions.get(&tsi).is_none_or(plausible)
            || !guard::spm_edges_plausible(spm.trail, spm.lead)
        {
            self.stats.implausible_spms += 1;
            return;
        }
        if !self.ensure_peer(tsi, now, from) {
            return;
        }
        let Some(peer) = self.sessions.get_mut(&tsi) else {
            return;
        };
        if peer.spm_sqn.is_some_and(|old| !sqn::gt(spm.sqn, old)) {
            return; // old or duplicate SPM
        }
        peer.spm_sqn = Some(spm.sqn);
        peer.spm_at = now;
        peer.path = Some(self.config.upstream_to(spm.path_nla, from));
        peer.on_control(&repr.options, now, &self.timers);
        // On-demand parity with our code (OPT_FEC); an SPM without it turns parity off.
        let parity_k = repr
            .options
            .fec
            .filter(|f| f.on_demand && f.code == FEC_RS_VANDERMONDE_GF256)
            .map(|f| f.tgs)
            .filter(|&k| crate::fec::valid_tg_size(k));
        let timers = peer.timers(&self.timers);
        peer.data_from.get_or_insert(from);
        if peer.rxw.is_none() {
            // Heard the session first by SPM: want only data after its lead.
            let base = near_trail(spm.lead.wrapping_add(1), spm.trail, self.config.start_reach);
            peer.rxw = Some(new_window(&self.config, tsi, base, spm.trail));
        }
        if let Some(rst) = repr.options.rst {
            // The source gave up on the session: nothing more will come.
            if !peer.ended {
                peer.ended = true;
                if peer.announced {
                    self.events.push_back(ReceiverEvent::SessionReset {
                        tsi,
                        error_code: rst.error_code,
                    });
                }
            }
            return;
        }
        if repr.options.fin {
            peer.fin_lead = Some(spm.lead);
        }
        if let Some(m) = &repr.options.manifest {
            if peer.manifest.as_ref() != Some(m) {
                peer.manifest = Some(m.clone());
                if peer.announced {
                    self.events.push_back(ReceiverEvent::Manifest {
                        tsi,
                        manifest: m.clone(),
                        signed: false,
                    });
                }
            }
        }
        if let Some(w) = peer.rxw.as_mut() {
            w.set_parity(parity_k, now);
            // The SPM lead reveals losses at the tail of a burst (§5.2).
            let old_lead = w.lead();
            w.extend_to(spm.lead, now, &timers, &mut self.rng);
            if sqn::gt(spm.lead, old_lead) {
                peer.fb.on_gap(now, sqn::distance(old_lead, spm.lead));
                if !reliable {
                    w.give_up(old_lead.wrapping_add(1), spm.lead);
                }
            }
            w.set_trail(spm.trail);
        }
    }

    fn on_ncf(&mut self, now: Instant, repr: &Repr<'_>, n: &NakRepr, peer_nak: bool) {
        let tsi = repr.tsi();
        let Some(peer) = self.sessions.get_mut(&tsi) else {
            return;
        };
        if !peer_nak {
            peer.on_control(&repr.options, now, &self.timers);
            peer.naks.give();
        }
        let suppress = !(self.config.pgmcc && peer.fb.must_report(now));
        let list = repr.options.nak_list.unwrap_or_default();
        let before = peer.timers(&self.timers);
        if let (false, Some(w)) = (
            peer_nak || repr.header_flags & OPT_PARITY != 0,
            peer.rxw.as_mut(),
        ) {
            for &s in core::iter::once(&n.sqn).chain(list.as_slice()) {
                w.sample_nak_rtt(s, now);
            }
        }
        let timers = peer.timers(&self.timers);
        let Some(w) = peer.rxw.as_mut() else {
            return;
        };
        if repr.header_flags & OPT_PARITY != 0 {
            let Some(k) = w.parity_k() else {
                return;
            };
            for &e in core::iter::once(&n.sqn).chain(list.as_slice()) {
                let tg = crate::fec::tg_sqn(e, k);
                let count = e.wrapping_sub(tg) + 1;
                let n = w.on_parity_ncf(tg, count, now, timers.rdata_ivl, peer_nak, suppress);
                self.stats.naks_suppressed += u64::from(n);
            }
            return;
        }
        for &s in core::iter::once(&n.sqn).chain(list.as_slice()) {
            let suppressed = if !suppress {
                // Our report must reach the source: an NCF only confirms NAKs already sent.
                if !peer_nak {
                    w.on_ncf(s, now, &timers, false);
                }
                false
            } else if peer_nak {
                w.on_peer_nak(s, now, &timers)
            } else {
                w.on_ncf(s, now, &timers, true)
            };
            if suppressed {
                self.stats.naks_suppressed += 1;
            }
        }
        if !peer_nak {
            peer.tighten_to(now, &self.timers, &before);
        }
    }

    /// Runs expired timers: feedback reports, NAKs (giving up on exhausted retries), SPMRs.
    pub fn handle_timeout(&mut self, now: Instant) {
        let base = self.timers;
        let coalesce = self.config.coalesce_acks;
        let pgmcc = self.config.pgmcc;
        let nla = self.config.nla;
        let (rng, transmits, stats) = (&mut self.rng, &mut self.transmits, &mut self.stats);
        let (mut due, mut parity_due) = (Vec::new(), Vec::new());
        self.sessions.for_each_mut(|peer| {
            let tsi = peer.tsi;
            peer.fb.on_timeout(now, &mut stats.cc);
            while let Some(a) = peer.fb.poll_transmit() {
                if transmits.push_ack(tsi, a, coalesce) {
                    stats.acks_coalesced += 1;
                }
            }
            if let Some(r) = peer.poll.take_due(now) {
                transmits.push(tsi, Pending::Polr(r));
            }
            let can_nak = peer.path.is_some();
            let timers = peer.timers(&base);
            let Some(w) = peer.rxw.as_mut() else {
                return;
            };
            if !w.due(now) {
                return;
            }
            due.clear();
            parity_due.clear();
            // A receiver whose report must reach the source NAKs selectively, at once, rather
            // than wait for its group to complete and perhaps be rebuilt by others' parity.
            let parity = (!(pgmcc && peer.fb.must_report(now))).then_some(&mut parity_due);
            w.on_timeout(now, &timers, rng, can_nak, &mut due, parity);
            // NAKs beyond the session's budget are not sent; their timers retry them.
            for chunk in due.chunks(1 + pgm_wire::options::MAX_NAK_LIST) {
                let sent = peer.naks.take(now);
                trace_nak(now, nla, "selective", chunk, sent);
                if sent {
                    transmits.push(tsi, Pending::Nak(chunk.to_vec()));
                } else {
                    stats.naks_rate_limited += 1;
                }
            }
            for chunk in parity_due.chunks(1 + pgm_wire::options::MAX_NAK_LIST) {
                let sent = peer.naks.take(now);
                trace_nak(now, nla, "parity", chunk, sent);
                if sent {
                    transmits.push(tsi, Pending::ParityNak(chunk.to_vec()));
                } else {
                    stats.naks_rate_limited += 1;
                }
            }
            if !can_nak && now >= peer.next_spmr {
                if let Some(from) = peer.data_from {
                    peer.next_spmr = now + timers.rpt_ivl;
                    transmits.push(tsi, Pending::Spmr(from));
                }
            }
        });
        self.drain_all();
    }

    /// When `handle_timeout` next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.transmits.is_empty() {
            return Some(Instant::ZERO);
        }
        self.sessions
            .iter()
            .flat_map(|p| {
                [
                    p.rxw.as_ref().and_then(|w| w.next_deadline()),
                    p.fb.next_deadline(),
                    p.poll.reply.map(|r| r.at),
                ]
            })
            .flatten()
            .min()
    }

    /// Writes the next datagram (NAK, SPMR or feedback ACK) into `buf`; `None` when nothing
    /// is queued.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        while let Some((tsi, pending)) = self.transmits.pop() {
            let Some(peer) = self.sessions.get(&tsi) else {
                continue;
            };
            let report = match pending {
                Pending::Nak(_) | Pending::ParityNak(_) if self.config.pgmcc => {
                    peer.fb.nak_report(now)
                }
                _ => None,
            };
            let Some((repr, dst)) =
                pending.packet(peer, tsi, self.config.dport, self.config.group, report)
            else {
                continue;
            };
            match repr.emit(buf) {
                Ok(len) => {
                    match pending {
                        Pending::Nak(list) => {
                            self.stats.naks_sent += 1;
                            self.stats.nak_sqns_sent += list.len() as u64;
                        }
                        Pending::ParityNak(_) => {
                            self.stats.naks_sent += 1;
                            self.stats.parity_naks_sent += 1;
                        }
                        Pending::Spmr(_) => self.stats.spmrs_sent += 1,
                        Pending::Report(_) => self.stats.reports_sent += 1,
                        Pending::Polr(_) => self.stats.polrs_sent += 1,
                        Pending::Ack { fb, .. } => {
                            self.stats.acks_sent += 1;
                            fb.count_sent(&mut self.stats.cc);
                        }
                    }
                    return Some(Transmit { dst, len });
                }
                Err(e) => trace!(error = %e, "receiver: cannot emit"),
            }
        }
        None
    }

    fn drain_all(&mut self) {
        self.stats.transmits_dropped = self.transmits.dropped;
        let mut out = Vec::new();
        let (events, stats) = (&mut self.events, &mut self.stats);
        self.sessions.for_each_mut(|peer| {
            let Some(w) = peer.rxw.as_mut() else {
                return;
            };
            out.clear();
            w.drain(&mut out);
            for o in out.drain(..) {
                match o {
                    Output::Apdu { first_sqn, data } => {
                        if peer.announced && !peer.delivering {
                            peer.delivering = true;
                            // The stream's start is what the source marked (OPT_SYN): a
                            // window that began after it, or never saw it, missed it.
                            let seen = peer.syn_sqn.is_some_and(|s| !sqn::lt(s, peer.origin));
                            if !seen {
                                events.push_back(ReceiverEvent::StartMissed {
                                    tsi: peer.tsi,
                                    first_sqn,
                                    syn_sqn: peer.syn_sqn,
                                });
                            }
                        }
                        stats.apdus_delivered += 1;
                        stats.bytes_delivered += data.len() as u64;
                        events.push_back(ReceiverEvent::Data {
                            tsi: peer.tsi,
                            sqn: first_sqn,
                            data,
                        });
                    }
                    Output::Lost { first, last } => {
                        stats.unrecoverable_sqns += u64::from(sqn::distance(first, last)) + 1;
                        // Nothing to report of a session never announced: to the
                        // application it does not exist (yet).
                        if peer.announced {
                            events.push_back(ReceiverEvent::Unrecoverable {
                                tsi: peer.tsi,
                                first,
                                last,
                            });
                        }
                    }
                }
            }
            stats.signed.add(&w.take_signed_counts());
            let g = w.take_give_ups();
            stats.given_up_trail += g.trail;
            stats.given_up_patience += g.patience;
            stats.given_up_overflow += g.overflow;
            // A signed session ends at its signed end, never on OPT_FIN alone.
            let end = if w.is_signed() {
                w.signed_end()
            } else {
                peer.fin_lead
            };
            if let Some(fin) = end {
                if !peer.ended && sqn::gt(w.base(), fin) {
                    peer.ended = true;
                    if peer.announced {
                        if let Some(m) = w.signed_manifest() {
                            events.push_back(ReceiverEvent::Manifest {
                                tsi: peer.tsi,
                                manifest: m.clone(),
                                signed: true,
                            });
                        }
                        events.push_back(ReceiverEvent::SessionEnded {
                            tsi: peer.tsi,
                            syn_sqn: peer.syn_sqn,
                        });
                    }
                }
            }
        });
    }
}

/// Where the window of a session first heard by data packet `s` begins: near the source's
/// `trail` ([`near_trail`]), at OPT_JOIN's minimum under [`JoinPolicy::FromJoinMin`], and
/// at the head of the APDU `s` is a fragment of if the source still has it.
fn window_base(config: &ReceiverConfig, s: u32, trail: u32, opts: &pgm_wire::Options<'_>) -> u32 {
    let mut base = near_trail(s, trail, config.start_reach);
    if let (JoinPolicy::FromJoinMin, Some(min)) = (config.join, opts.join) {
        if sqn::le(min, s) && sqn::distance(min, s) < config.rxw_sqns {
            base = sqn::max(min, trail);
        }
    }
    if let Some(f) = &opts.fragment {
        if sqn::lt(f.first_sqn, base) && sqn::le(trail, f.first_sqn) {
            base = f.first_sqn;
        }
    }
    base
}

/// Where a receiver that first hears a session at `first` starts: at the source's `trail`
/// when `first` is fewer than `reach` packets past it ([`ReceiverConfig::start_reach`]).
fn near_trail(first: u32, trail: u32, reach: u32) -> u32 {
    if sqn::lt(trail, first) && sqn::distance(trail, first) < reach {
        trail
    } else {
        first
    }
}

/// The receive window of session `tsi`, wanting `base` first (signed when the receiver
/// holds a verifier).
fn new_window(config: &ReceiverConfig, tsi: Tsi, base: u32, trail: u32) -> ReceiveWindow {
    let mut w = ReceiveWindow::new(base, trail, config.rxw_sqns, config.max_apdu);
    if let Some(v) = &config.verifier {
        w.set_verifier(v.clone(), tsi);
    }
    w
}

/// The `pgmcc::nak` debug target: each NAK a receiver's timers make due, with whether the
/// session's NAK budget let it out (`parity` lists are `TG_SQN | (count - 1)` entries).
fn trace_nak(now: Instant, nla: IpAddr, kind: &str, sqns: &[u32], sent: bool) {
    tracing::debug!(
        target: "pgmcc::nak",
        at_ms = now.as_nanos() / 1_000_000,
        %nla,
        kind,
        ?sqns,
        sent,
        "NAK due"
    );
}

/// Whether data packet `s` of `len` bytes keeps `peer` within the memory bounds
/// (`session_bytes`, and `total_bytes` with the other sessions' `others`). The next packet to
/// deliver always is: it leaves at once, and refusing it could stall the session for good.
fn within_budget(config: &ReceiverConfig, peer: &Peer, s: u32, len: u64, others: u64) -> bool {
    let Some(w) = peer.rxw.as_ref() else {
        return true;
    };
    if s == w.base() {
        return true;
    }
    let ahead = if sqn::gt(s, w.lead()) {
        sqn::distance(w.lead(), s)
    } else {
        0
    };
    // A jump past the window settles the skipped part at once: the window never spans more
    // than `rxw_sqns`.
    let span = (u64::from(w.span()) + u64::from(ahead)).min(u64::from(config.rxw_sqns));
    let mine = span * peer.max_payload.max(len);
    mine <= config.session_bytes && others + mine <= config.total_bytes
}

/// Counts what a parity packet, or a data packet completing a group, did.
fn note_parity(r: ParityInsert, fb: &mut Feedback, stats: &mut ReceiverStats) {
    match r {
        ParityInsert::Held => {}
        ParityInsert::Duplicate => stats.duplicates += 1,
        ParityInsert::Malformed => stats.malformed += 1,
        ParityInsert::Rebuilt { filled, malformed } => {
            stats.malformed += u64::from(malformed);
            for q in filled {
                // Rebuilt from parity: no nonce, so not reported received under proof.
                fb.on_packet(q, None);
                stats.parity_rebuilt += 1;
                stats.gaps_filled += 1;
            }
        }
    }
}
