//! The session table: one entry per TSI heard, bounded by `max_sessions`. A full table makes
//! room from ended sessions first, then from the one silent longest if silent for
//! `peer_expiry`; a flood of new TSIs cannot push out a session that is still talking.

use std::collections::HashMap;
use std::net::IpAddr;

use pgm_wire::Tsi;

use super::rxw::{NakTimers, ReceiveWindow};
use crate::cc::feedback::Feedback;
use crate::sender::MAX_GRTT;
use crate::time::{Duration, Instant};

/// What a receiver knows of one session.
#[derive(Debug)]
pub(super) struct Peer {
    pub(super) tsi: Tsi,
    /// Source path NLA from the latest SPM: where NAKs go.
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
    /// The source's latest OPT_MANIFEST.
    pub(super) manifest: Option<pgm_wire::Manifest>,
    pub(super) next_spmr: Instant,
    /// The source's latest OPT_GRTT (group RTT, group size), from an SPM or NCF.
    pub(super) grtt: Option<(Duration, u32)>,
}

impl Peer {
    /// Bytes this session may be holding: window span x largest payload.
    pub(super) fn bytes_bound(&self) -> u64 {
        self.rxw
            .as_ref()
            .map_or(0, |w| u64::from(w.span()) * self.max_payload)
    }

    /// This session's NAK timers: `base` scaled to the source's group RTT once it
    /// advertised one.
    pub(super) fn timers(&self, base: &NakTimers) -> NakTimers {
        match self.grtt {
            Some((g, n)) => base.scaled(g, n),
            None => *base,
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
#[derive(Debug, Default)]
pub(super) struct Sessions {
    peers: HashMap<Tsi, Peer>,
    order: Vec<Tsi>,
    /// The session last passed to `ensure` and its source: most packets belong to it, and
    /// the source check then needs no hash lookup.
    last: Option<(Tsi, IpAddr)>,
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
    pub(super) fn get(&self, tsi: &Tsi) -> Option<&Peer> {
        self.peers.get(tsi)
    }

    pub(super) fn get_mut(&mut self, tsi: &Tsi) -> Option<&mut Peer> {
        self.peers.get_mut(tsi)
    }

    /// The source address of session `tsi`, if tracked.
    pub(super) fn source_of(&self, tsi: &Tsi) -> Option<IpAddr> {
        match self.last {
            Some((t, a)) if t == *tsi => Some(a),
            _ => self.peers.get(tsi).map(|p| p.source),
        }
    }

    /// Sessions tracked.
    pub(super) fn len(&self) -> usize {
        self.order.len()
    }

    /// Every session, in creation order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Peer> {
        self.order.iter().filter_map(|t| self.peers.get(t))
    }

    /// Calls `f` on every session, in creation order.
    pub(super) fn for_each_mut(&mut self, mut f: impl FnMut(&mut Peer)) {
        for t in &self.order {
            if let Some(p) = self.peers.get_mut(t) {
                f(p);
            }
        }
    }

    /// Makes sure `tsi` has an entry, heard at `now`; `new` builds it.
    pub(super) fn ensure(
        &mut self,
        tsi: Tsi,
        now: Instant,
        max: usize,
        expiry: Duration,
        new: impl FnOnce() -> Peer,
    ) -> Admit {
        if let Some(p) = self.peers.get_mut(&tsi) {
            p.last_heard = now;
            self.last = Some((tsi, p.source));
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
        self.order.push(tsi);
        let peer = new();
        self.last = Some((tsi, peer.source));
        self.peers.insert(tsi, peer);
        admit
    }

    /// Frees one slot: an ended session, else the one that has not proved itself and was
    /// heard from longest ago, else the one silent longest if silent for `expiry`. The flag
    /// says whether an announced session's undelivered data went with it.
    fn evict_one(&mut self, now: Instant, expiry: Duration) -> Option<(Tsi, bool)> {
        let victim = self
            .order
            .iter()
            .find(|t| self.peers.get(t).is_some_and(|p| p.ended))
            .or_else(|| {
                self.order
                    .iter()
                    .filter(|t| self.peers.get(t).is_some_and(|p| !p.announced))
                    .min_by_key(|t| self.peers.get(t).map(|p| p.last_heard))
            })
            .or_else(|| {
                self.order
                    .iter()
                    .filter(|t| {
                        self.peers
                            .get(t)
                            .is_some_and(|p| now.saturating_duration_since(p.last_heard) >= expiry)
                    })
                    .min_by_key(|t| self.peers.get(t).map(|p| p.last_heard))
            })
            .copied()?;
        let expired = self
            .peers
            .remove(&victim)
            .is_some_and(|p| !p.ended && p.announced);
        if self.last.is_some_and(|(t, _)| t == victim) {
            self.last = None;
        }
        self.order.retain(|t| *t != victim);
        Some((victim, expired))
    }
}
