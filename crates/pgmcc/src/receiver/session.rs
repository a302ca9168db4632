//! The session table: one entry per TSI heard, bounded by `max_sessions`. A full table makes
//! room from ended sessions first, then from the one silent longest if silent for
//! `peer_expiry`; a flood of new TSIs cannot push out a session that is still talking.

use std::net::IpAddr;

use pgm_wire::Tsi;

use super::rxw::{NakTimers, ReceiveWindow};
use crate::cc::feedback::Feedback;
use crate::nak_timing::MAX_GRTT;
use crate::time::{Duration, Instant};

/// What a receiver knows of one session.
#[derive(Debug)]
pub(super) struct Peer {
    pub(super) tsi: Tsi,
    /// Where NAKs go, known once an SPM arrived: the source's address, or the network
    /// element the latest SPM named as its path when it is one the receiver was configured
    /// with (`ReceiverConfig::network_elements`).
    pub(super) path: Option<IpAddr>,
    /// The address the session's first packet came from (or `ReceiverConfig::source`): its
    /// downstream packets from any other address are dropped.
    pub(super) source: IpAddr,
    /// IP address data and SPMs come from: the source's own address, used as the NAK's
    /// source NLA, for SPMRs before any SPM, and for ACKs.
    pub(super) data_from: Option<IpAddr>,
    /// Congestion-control feedback: reports, ACKs, the controller's own role.
    pub(super) fb: Feedback,
    pub(super) spm_sqn: Option<u32>,
    /// When the SPM of `spm_sqn` arrived (how far the next one may lead it).
    pub(super) spm_at: Instant,
    /// NAKs this session may still send without answers from its source.
    pub(super) naks: super::guard::TokenBucket,
    pub(super) rxw: Option<ReceiveWindow>,
    /// Lead of the FIN SPM once heard.
    pub(super) fin_lead: Option<u32>,
    /// Sequence number of the packet marked OPT_SYN (the session's first), once heard.
    pub(super) syn_sqn: Option<u32>,
    /// The largest data payload this session sent (the memory bound's unit).
    pub(super) max_payload: u64,
    /// When a packet of this session last arrived.
    pub(super) last_heard: Instant,
    pub(super) ended: bool,
    /// The session proved itself: it sent data (in signed mode: a digest list verified).
    /// Only then is it announced (`SessionStarted`) and its events handed up, and until
    /// then it is the first to go when the session table is full.
    pub(super) announced: bool,
    /// Where the window began when the session was announced, and whether it delivered
    /// data since (for `StartMissed`).
    pub(super) origin: u32,
    pub(super) delivering: bool,
    /// The source's latest OPT_MANIFEST.
    pub(super) manifest: Option<pgm_wire::Manifest>,
    pub(super) next_spmr: Instant,
    /// The source's latest OPT_GRTT (group RTT, group size), from an SPM or NCF.
    pub(super) grtt: Option<(Duration, u32)>,
    /// The source's general polls and this receiver's reply.
    pub(super) poll: super::poll::PollState,
}

impl Peer {
    /// Bytes this session may be holding: window span x largest payload.
    pub(super) fn bytes_bound(&self) -> u64 {
        self.rxw
            .as_ref()
            .map_or(0, |w| u64::from(w.span()) * self.max_payload)
    }

    /// This session's NAK timers: `base` scaled to the source's group RTT once it
    /// advertised one; without one, the NCF and RDATA waits fitted to the NAK-to-NCF round
    /// trips measured (`NakTimers::measured`).
    pub(super) fn timers(&self, base: &NakTimers) -> NakTimers {
        match self.grtt {
            Some((g, n)) => base.scaled(g, n),
            None => match self.rxw.as_ref().and_then(|w| w.nak_rtt()) {
                Some((rtt, var)) => base.measured(rtt, var),
                None => *base,
            },
        }
    }

    /// Brings armed NAK waits within this session's timers when they became shorter than
    /// `before` (a first or smaller NAK-to-NCF measurement).
    pub(super) fn tighten_to(&mut self, now: Instant, base: &NakTimers, before: &NakTimers) {
        let longest = |t: &NakTimers| t.bo_ivl.max(t.rpt_ivl).max(t.rdata_ivl);
        let after = longest(&self.timers(base));
        if after < longest(before) {
            if let Some(w) = self.rxw.as_mut() {
                w.tighten(now, after);
            }
        }
    }

    /// Takes the source's OPT_GRTT and its requests to pgmcc receivers (OPT_REPORT_BAR)
    /// from an SPM or NCF of this session. When the timers shrink (the first OPT_GRTT, or a
    /// smaller one), NAK waits already armed are brought within the new ones.
    pub(super) fn on_control(
        &mut self,
        opts: &pgm_wire::Options<'_>,
        now: Instant,
        base: &NakTimers,
    ) {
        if let Some(g) = opts.grtt {
            let longest = |t: NakTimers| t.bo_ivl.max(t.rpt_ivl).max(t.rdata_ivl);
            let before = longest(self.timers(base));
            let d = Duration::from_micros(u64::from(g.grtt_us)).min(MAX_GRTT);
            self.grtt = Some((d, g.gsize));
            let after = longest(self.timers(base));
            if after < before {
                if let Some(w) = self.rxw.as_mut() {
                    w.tighten(now, after);
                }
            }
        }
        self.fb.on_control(opts, self.grtt.map(|(g, _)| g));
    }
}

/// Sessions by TSI, iterated in the order they were created (deterministic).
///
/// A short vector searched linearly, not a hash map: a receiver tracks at most
/// `max_sessions` (64) sessions and usually one, and hashing a TSI on every packet cost more
/// than the rest of the lookup (a tenth of a 10,000-receiver simulation).
#[derive(Debug, Default)]
pub(super) struct Sessions {
    /// The sessions, in creation order.
    peers: Vec<Peer>,
}

/// Why [`Sessions::ensure`] has no entry for a TSI.
pub(super) enum Admit {
    /// The entry exists (it may be new).
    Ok,
    /// The table was full: an entry was evicted to make room (`expired` when it had not
    /// ended), and the new one exists.
    Evicted {
        /// The session dropped.
        tsi: Tsi,
        /// It had not ended: its undelivered data is lost.
        expired: bool,
    },
    /// The table is full and nothing may be evicted.
    Full,
}

impl Sessions {
    fn index(&self, tsi: &Tsi) -> Option<usize> {
        self.peers.iter().position(|p| p.tsi == *tsi)
    }

    pub(super) fn get(&self, tsi: &Tsi) -> Option<&Peer> {
        self.index(tsi).map(|i| &self.peers[i])
    }

    pub(super) fn get_mut(&mut self, tsi: &Tsi) -> Option<&mut Peer> {
        self.index(tsi).map(|i| &mut self.peers[i])
    }

    /// The source address of session `tsi`, if tracked.
    pub(super) fn source_of(&self, tsi: &Tsi) -> Option<IpAddr> {
        self.get(tsi).map(|p| p.source)
    }

    /// Sessions tracked.
    pub(super) fn len(&self) -> usize {
        self.peers.len()
    }

    /// Every session, in creation order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Peer> {
        self.peers.iter()
    }

    /// Calls `f` on every session, in creation order.
    pub(super) fn for_each_mut(&mut self, f: impl FnMut(&mut Peer)) {
        self.peers.iter_mut().for_each(f);
    }

    /// Makes sure `tsi` has an entry, heard at `now`; `new` builds it (for `tsi`).
    pub(super) fn ensure(
        &mut self,
        tsi: Tsi,
        now: Instant,
        max: usize,
        expiry: Duration,
        new: impl FnOnce() -> Peer,
    ) -> Admit {
        if let Some(i) = self.index(&tsi) {
            self.peers[i].last_heard = now;
            return Admit::Ok;
        }
        let mut admit = Admit::Ok;
        if self.peers.len() >= max {
            match self.evict_one(now, expiry) {
                Some((victim, expired)) => {
                    admit = Admit::Evicted {
                        tsi: victim,
                        expired,
                    }
                }
                None => return Admit::Full,
            }
        }
        let peer = new();
        debug_assert_eq!(peer.tsi, tsi);
        self.peers.push(peer);
        admit
    }

    /// Frees one slot: an ended session, else the one that has not proved itself and was
    /// heard from longest ago, else the one silent longest if silent for `expiry`. The flag
    /// says whether an announced session's undelivered data went with it.
    fn evict_one(&mut self, now: Instant, expiry: Duration) -> Option<(Tsi, bool)> {
        let oldest_heard = |pick: &dyn Fn(&Peer) -> bool| {
            self.peers
                .iter()
                .enumerate()
                .filter(|(_, p)| pick(p))
                .min_by_key(|(_, p)| p.last_heard)
                .map(|(i, _)| i)
        };
        let victim = self
            .peers
            .iter()
            .position(|p| p.ended)
            .or_else(|| oldest_heard(&|p| !p.announced))
            .or_else(|| oldest_heard(&|p| now.saturating_duration_since(p.last_heard) >= expiry))?;
        let p = self.peers.remove(victim);
        Some((p.tsi, !p.ended && p.announced))
    }
}
