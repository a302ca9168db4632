//! The PGM network element (RFC 3208 §7), sans-IO: what a PGM-aware router does for each
//! session passing through it.
//!
//! The router's driver hands every PGM packet to [`NetworkElement::handle`] with the
//! interface it arrived on and the session's downstream interfaces (its multicast routing
//! state). The NE answers with a [`Verdict`]: either the router forwards the packet as usual
//! (ODATA, and anything the NE does not handle), or the NE consumed it and queued its own
//! packets, drained with [`NetworkElement::poll_transmit`]:
//!
//! * SPM (§7.1): records the upstream PGM hop (the SPM's path NLA) and the upstream
//!   interface, then forwards one copy per downstream interface with the path NLA rewritten
//!   to this NE's address on that interface.
//! * NAK (§7.2-7.4, 7.7): an NCF goes at once to the interface the NAK came from, which joins
//!   the repair interface list; the first NAK for a sequence number is forwarded upstream and
//!   repeated every [`NeConfig::nak_rpt_gap`] until an NCF confirms it (or NAK_RPT_IVL
//!   passes); duplicates are eliminated while it is pending and for NAK_ELIM_IVL after each
//!   confirmation.
//! * NCF from upstream (§7.3, 7.5): confirms a pending NAK (outstanding for NAK_RDATA_IVL),
//!   or creates anticipated repair state without interfaces.
//! * RDATA (§7.8): forwarded only on the interfaces that NAKed for it; the repair state is
//!   torn down. RDATA nobody here asked for is dropped. The interfaces are kept until
//!   NAK_RDATA_IVL after the latest NAK forwarded, also when no NCF came within NAK_RPT_IVL,
//!   so a late NCF or RDATA still goes where it was asked for.
//! * Timers ([`NeTimers`]): the configured ones, stretched to the group RTT the source
//!   advertises in OPT_GRTT (two group RTTs for NAK_RPT_IVL and NAK_RDATA_IVL, one between
//!   repeats), since fixed timers shorter than the NE's round trip to the source drop the
//!   repairs they exist to route.
//!
//! Repair state is bounded ([`NeConfig::max_repair_states`]); NAKs that would exceed it are
//! confirmed but not forwarded, and counted.
//!
//! Parity (RFC 3208 §11.6, simplified): a parity NAK is confirmed by a parity NCF and
//! forwarded upstream as it is (no elimination), and its interface is remembered for the
//! group for NAK_RPT_IVL + NAK_RDATA_IVL: parity RDATA of the group goes only there, as
//! selective RDATA does. Without the group size (the source's OPT_FEC on SPMs) parity RDATA
//! goes down the whole tree.
//!
//! pgmcc (paper §3.7): forwarded NAKs keep their OPT_PGMCC_FEEDBACK report, and
//! [`NeConfig::suppression`] selects how duplicates are eliminated: always (RFC 3208), unless
//! they report a higher loss than the NAK forwarded (the paper's fix), or with a probability
//! (the fairness benchmark's fix).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::IpAddr;

use pgm_wire::{Body, NakRepr, Options, PgmccFeedback, Repr, SpmRepr, Tsi, OPT_PARITY};
use serde::Serialize;
use tracing::trace;

use crate::nak_timing::{scaled_wait, MAX_GRTT};
use crate::rng::Rng;
use crate::sqn;
use crate::time::{Duration, Instant};

/// A router interface, numbered by the driver.
pub type Iface = u32;

/// What the router does with a packet after the NE saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Forward it as the router normally would (unicast route or multicast tree).
    Forward,
    /// The NE handled it; send only what `poll_transmit` gives.
    Consumed,
}

/// Where an NE-generated datagram goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeDestination {
    /// Multicast to the group on one interface (SPM copies, NCFs, constrained RDATA).
    /// Per RFC 3208 §7.2 an NCF's network-layer source address is the ODATA source's NLA.
    Multicast(Iface),
    /// Unicast to an upstream PGM hop or the source (forwarded NAKs).
    Unicast(IpAddr),
}

/// One datagram the NE asks the driver to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeTransmit {
    /// Destination.
    pub dst: NeDestination,
    /// Bytes written to the caller's buffer.
    pub len: usize,
}

/// How duplicate NAKs are eliminated (RFC 3208 §7.4, pgmcc paper §3.7, fairness benchmark
/// Set 3). Elimination can hide the worst receiver's reports from the source, so pgmcc's
/// acker election may pick too fast a receiver.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum NakSuppression {
    /// RFC 3208: every duplicate is eliminated while repair state lives.
    Always,
    /// pgmcc paper §3.7: a duplicate whose OPT_PGMCC_FEEDBACK reports a higher loss than the
    /// NAK forwarded for that sequence number is forwarded too.
    LossAware,
    /// Fairness benchmark Set 3: each duplicate is forwarded with this probability.
    Probabilistic {
        /// Probability of forwarding a duplicate, 0..=1.
        forward: f64,
    },
}

/// Network element configuration.
#[derive(Debug, Clone)]
pub struct NeConfig {
    /// This NE's address on each interface (written into the SPMs it forwards there).
    pub iface_addrs: Vec<(Iface, IpAddr)>,
    /// NAK_RPT_IVL: how long a forwarded NAK is repeated while no NCF comes. Default 200 ms;
    /// at least two group RTTs once the source advertises one (see [`NeTimers`]).
    pub nak_rpt_ivl: Duration,
    /// Gap between repeats of a pending NAK (1 / NAK_RPT_RTE). Default 50 ms; at least one
    /// group RTT once the source advertises one.
    pub nak_rpt_gap: Duration,
    /// NAK_RDATA_IVL: how long repair state waits for RDATA after an NCF, and after the
    /// latest NAK forwarded (§7.8). Default 400 ms; at least two group RTTs once the source
    /// advertises one.
    pub nak_rdata_ivl: Duration,
    /// NAK_ELIM_IVL: after a confirmation, duplicates are discarded this long. Default 50 ms
    /// (a small fraction of NAK_RDATA_IVL, as §7.4 requires).
    pub nak_elim_ivl: Duration,
    /// Most repair states held at once (all sessions). Default 65536.
    pub max_repair_states: usize,
    /// Most sessions tracked. Default 1024.
    pub max_sessions: usize,
    /// Duplicate NAK elimination policy. Default [`NakSuppression::Always`] (RFC 3208).
    pub suppression: NakSuppression,
    /// Seed of the NE's random source (probabilistic suppression).
    pub seed: u64,
}

impl NeConfig {
    /// Defaults as documented on each field.
    pub fn new(iface_addrs: Vec<(Iface, IpAddr)>) -> NeConfig {
        NeConfig {
            iface_addrs,
            nak_rpt_ivl: Duration::from_millis(200),
            nak_rpt_gap: Duration::from_millis(50),
            nak_rdata_ivl: Duration::from_millis(400),
            nak_elim_ivl: Duration::from_millis(50),
            max_repair_states: 65536,
            max_sessions: 1024,
            suppression: NakSuppression::Always,
            seed: 0,
        }
    }
}

/// Counters of a network element.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NeStats {
    /// SPMs received from upstream.
    pub spms: u64,
    /// NAKed sequence numbers received from downstream.
    pub nak_sqns_received: u64,
    /// NAKed sequence numbers forwarded upstream (first sends and repeats).
    pub nak_sqns_forwarded: u64,
    /// NAKed sequence numbers eliminated as duplicates.
    pub nak_sqns_eliminated: u64,
    /// Duplicates forwarded anyway by the suppression policy (higher loss, or chance).
    pub nak_sqns_let_through: u64,
    /// NCF packets sent downstream.
    pub ncfs_sent: u64,
    /// RDATA copies forwarded downstream.
    pub rdata_forwarded: u64,
    /// RDATA dropped because no interface asked for it.
    pub rdata_unrequested: u64,
    /// Repair states dropped on NAK_RPT_IVL or NAK_RDATA_IVL expiry.
    pub states_expired: u64,
    /// NAKs for sessions with no SPM state (upstream unknown), or over the state bound.
    pub naks_unroutable: u64,
    /// Datagrams that failed to parse.
    pub malformed: u64,
}

/// The NAK timers a network element runs for one session: the configured ones, stretched to
/// the group RTT the source advertises (OPT_GRTT on its SPMs and NCFs).
///
/// The group RTT is the longest RTT the source measured to a receiver, and this NE is on the
/// path to its receivers, so it bounds the NE's own round trip to the source, queues
/// included. Fixed timers shorter than that round trip tear repair state down before the
/// NCF or the RDATA comes back, and the RDATA is then dropped here as unrequested: behind a
/// 500 kbit/s bottleneck with a 30-packet queue (0.67 s of queueing) the 200 ms NAK_RPT_IVL
/// lost every repair to the subtree. The receivers scale their own waits the same way
/// (`nak_timing::scaled_wait`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeTimers {
    /// NAK_RPT_IVL.
    pub rpt_ivl: Duration,
    /// Gap between repeats of a pending NAK.
    pub rpt_gap: Duration,
    /// NAK_RDATA_IVL.
    pub rdata_ivl: Duration,
    /// NAK_ELIM_IVL (not stretched: a small fraction of NAK_RDATA_IVL, §7.4).
    pub elim_ivl: Duration,
}

impl NeTimers {
    /// The timers for a session whose source advertised `grtt` (`None`: the configured ones).
    pub fn new(config: &NeConfig, grtt: Option<Duration>) -> NeTimers {
        let grtt = grtt.unwrap_or(Duration::ZERO).min(MAX_GRTT);
        let wait = if grtt.is_zero() {
            Duration::ZERO
        } else {
            scaled_wait(grtt)
        };
        NeTimers {
            rpt_ivl: config.nak_rpt_ivl.max(wait),
            rpt_gap: config.nak_rpt_gap.max(grtt),
            rdata_ivl: config.nak_rdata_ivl.max(wait),
            elim_ivl: config.nak_elim_ivl,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RepairPhase {
    /// Forwarded upstream, waiting for an NCF; repeat at `next_repeat`.
    Pending {
        until: Instant,
        next_repeat: Instant,
    },
    /// Confirmed; duplicates eliminated until `elim_until`, state kept until `rdata_until`.
    Outstanding {
        elim_until: Instant,
        rdata_until: Instant,
    },
}

#[derive(Debug, Clone)]
struct RepairState {
    phase: RepairPhase,
    ifaces: BTreeSet<Iface>,
    /// The receiver report forwarded with this NAK (repeats carry it again).
    report: Option<PgmccFeedback>,
    /// NAK_RDATA_IVL after the latest NAK forwarded for it: a pending NAK whose NCF is late
    /// keeps its interfaces until then (§7.8), so the RDATA still finds its way down.
    keep_until: Instant,
}

#[derive(Debug)]
struct Session {
    upstream: IpAddr,
    upstream_iface: Iface,
    source: IpAddr,
    group: Option<IpAddr>,
    dport: u16,
    last_spm: u32,
    repairs: HashMap<u32, RepairState>,
    /// Transmission group size the source advertises (OPT_FEC), if any.
    tg_size: Option<u32>,
    /// Interfaces that asked for parity of each group, and until when.
    parity: HashMap<u32, (BTreeSet<Iface>, Instant)>,
    /// The group RTT the source advertised last (OPT_GRTT), which stretches the timers.
    grtt: Option<Duration>,
}

impl Session {
    fn timers(&self, config: &NeConfig) -> NeTimers {
        NeTimers::new(config, self.grtt)
    }

    /// Takes the group RTT from a packet of the source (SPM or NCF from upstream).
    fn note_grtt(&mut self, options: &Options<'_>) {
        if let Some(g) = options.grtt {
            self.grtt = Some(Duration::from_micros(u64::from(g.grtt_us)).min(MAX_GRTT));
        }
    }
}

/// A PGM network element.
#[derive(Debug)]
pub struct NetworkElement {
    config: NeConfig,
    sessions: HashMap<Tsi, Session>,
    order: Vec<Tsi>,
    out: VecDeque<(NeDestination, Vec<u8>)>,
    repair_count: usize,
    rng: Rng,
    stats: NeStats,
}

impl NetworkElement {
    /// A network element with no sessions.
    pub fn new(config: NeConfig) -> NetworkElement {
        NetworkElement {
            sessions: HashMap::new(),
            order: Vec::new(),
            out: VecDeque::new(),
            repair_count: 0,
            rng: Rng::new(config.seed),
            stats: NeStats::default(),
            config,
        }
    }

    /// Counters.
    pub fn stats(&self) -> &NeStats {
        &self.stats
    }

    /// Repair states currently held (selective, and parity per group).
    pub fn repair_states(&self) -> usize {
        self.repair_count
    }

    fn addr_of(&self, iface: Iface) -> Option<IpAddr> {
        self.config
            .iface_addrs
            .iter()
            .find(|(i, _)| *i == iface)
            .map(|(_, a)| *a)
    }

    /// Takes one PGM datagram that arrived on `in_iface` from `from`. `downstream` lists the
    /// session's outgoing multicast interfaces (needed to copy SPMs).
    pub fn handle(
        &mut self,
        now: Instant,
        in_iface: Iface,
        from: IpAddr,
        datagram: &[u8],
        downstream: &[Iface],
    ) -> Verdict {
        let repr = match Repr::parse(datagram) {
            Ok(r) => r,
            Err(e) => {
                self.stats.malformed += 1;
                trace!(%from, error = %e, "ne: malformed datagram");
                // Not ours to judge further: let the router treat it as plain traffic.
                return Verdict::Forward;
            }
        };
        let parity = repr.header_flags & OPT_PARITY != 0;
        match repr.body {
            Body::Spm(spm) => self.on_spm(&repr, spm, in_iface, downstream),
            Body::Nak(n) if parity => self.on_parity_nak(now, &repr, &n, in_iface),
            Body::Nak(n) => self.on_nak(now, &repr, &n, in_iface),
            // Parity NCFs from upstream: nothing to confirm (no parity state here).
            Body::Ncf(_) if parity => Verdict::Consumed,
            Body::Ncf(n) => self.on_ncf(now, &repr, &n, in_iface),
            Body::Rdata(d) if parity => self.on_parity_rdata(&repr, d.sqn, datagram),
            Body::Rdata(d) => self.on_rdata(&repr, d.sqn, datagram),
            _ => Verdict::Forward,
        }
    }

    fn on_spm(
        &mut self,
        repr: &Repr<'_>,
        spm: SpmRepr,
        in_iface: Iface,
        downstream: &[Iface],
    ) -> Verdict {
        self.stats.spms += 1;
        let tsi = repr.tsi();
        if !self.sessions.contains_key(&tsi) {
            if self.sessions.len() >= self.config.max_sessions {
                return Verdict::Forward;
            }
            self.order.push(tsi);
            self.sessions.insert(
                tsi,
                Session {
                    upstream: spm.path_nla,
                    upstream_iface: in_iface,
                    source: spm.path_nla,
                    group: None,
                    dport: repr.dport,
                    last_spm: spm.sqn.wrapping_sub(1),
                    repairs: HashMap::new(),
                    tg_size: None,
                    parity: HashMap::new(),
                    grtt: None,
                },
            );
        }
        let Some(s) = self.sessions.get_mut(&tsi) else {
            return Verdict::Forward;
        };
        if !sqn::gt(spm.sqn, s.last_spm) {
            // Out-of-sequence SPM: RFC 3208 §7.1 acts only on in-sequence ones; pass it on.
            return Verdict::Forward;
        }
        s.last_spm = spm.sqn;
        s.tg_size = repr
            .options
            .fec
            .map(|f| f.tgs)
            .filter(|&k| crate::fec::valid_tg_size(k));
        s.upstream = spm.path_nla;
        s.upstream_iface = in_iface;
        s.dport = repr.dport;
        s.note_grtt(&repr.options);
        for &iface in downstream {
            let Some(addr) = self.addr_of(iface) else {
                continue;
            };
            let mut copy = repr.clone();
            copy.body = Body::Spm(SpmRepr {
                path_nla: addr,
                ..spm
            });
            if let Ok(bytes) = copy.to_vec() {
                self.out.push_back((NeDestination::Multicast(iface), bytes));
            }
        }
        Verdict::Consumed
    }

    fn on_nak(&mut self, now: Instant, repr: &Repr<'_>, n: &NakRepr, in_iface: Iface) -> Verdict {
        let tsi = repr.tsi();
        if n.source.is_ipv4() != n.group.is_ipv4() && !repr.options.is_empty() {
            // Legal in RFC 3208 but unforwardable to OpenPGM (docs/wire.md #9): drop, count.
            self.stats.malformed += 1;
            return Verdict::Consumed;
        }
        let list = repr.options.nak_list.unwrap_or_default();
        let sqns: Vec<u32> = core::iter::once(n.sqn)
            .chain(list.as_slice().iter().copied())
            .collect();
        self.stats.nak_sqns_received += sqns.len() as u64;
        let cfg = self.config.clone();
        let Some(s) = self.sessions.get_mut(&tsi) else {
            self.stats.naks_unroutable += 1;
            // Unknown session: the unicast NAK may be addressed beyond us; let it through.
            return Verdict::Forward;
        };
        s.group = Some(n.group);
        s.source = n.source;
        let t = s.timers(&cfg);
        let report = repr.options.pgmcc_feedback;
        let mut forward = Vec::new();
        for &q in &sqns {
            match s.repairs.get_mut(&q) {
                Some(st) => {
                    st.ifaces.insert(in_iface);
                    let duplicate = match st.phase {
                        RepairPhase::Pending { .. } => true,
                        RepairPhase::Outstanding { elim_until, .. } => now < elim_until,
                    };
                    let let_through = duplicate
                        && match cfg.suppression {
                            NakSuppression::Always => false,
                            NakSuppression::LossAware => match (report, st.report) {
                                (Some(new), Some(old)) => new.loss_rate > old.loss_rate,
                                (Some(_), None) => true,
                                _ => false,
                            },
                            NakSuppression::Probabilistic { forward } => self.rng.unit() < forward,
                        };
                    if duplicate && !let_through {
                        self.stats.nak_sqns_eliminated += 1;
                    } else if let_through {
                        // Forward the report; the repair state itself is unchanged.
                        self.stats.nak_sqns_let_through += 1;
                        if report.is_some() {
                            st.report = report;
                        }
                        forward.push(q);
                    } else {
                        st.phase = RepairPhase::Pending {
                            until: now + t.rpt_ivl,
                            next_repeat: now + t.rpt_gap,
                        };
                        st.keep_until = st.keep_until.max(now + t.rdata_ivl);
                        forward.push(q);
                    }
                }
                None => {
                    if self.repair_count >= cfg.max_repair_states {
                        self.stats.naks_unroutable += 1;
                        continue;
                    }
                    self.repair_count += 1;
                    s.repairs.insert(
                        q,
                        RepairState {
                            phase: RepairPhase::Pending {
                                until: now + t.rpt_ivl,
                                next_repeat: now + t.rpt_gap,
                            },
                            ifaces: BTreeSet::from([in_iface]),
                            report,
                            keep_until: now + t.rdata_ivl,
                        },
                    );
                    forward.push(q);
                }
            }
        }
        // §7.2: an NCF for every NAK, at once, on the interface it came from.
        let ncf_body = NakRepr {
            sqn: n.sqn,
            source: n.source,
            group: n.group,
        };
        let mut ncf = Repr::downstream(tsi, s.dport, Body::Ncf(ncf_body));
        if !list.is_empty() {
            ncf = ncf.with_options(Options {
                nak_list: Some(list),
                ..Options::default()
            });
        }
        if let Ok(bytes) = ncf.to_vec() {
            self.out
                .push_back((NeDestination::Multicast(in_iface), bytes));
            self.stats.ncfs_sent += 1;
        }
        let (upstream, dport, source, group) = (s.upstream, s.dport, n.source, n.group);
        self.forward_nak(tsi, dport, source, group, upstream, &forward, report);
        Verdict::Consumed
    }

    /// A parity NAK: a parity NCF back where it came from, the NAK itself upstream, and the
    /// interface remembered for the group's parity.
    fn on_parity_nak(
        &mut self,
        now: Instant,
        repr: &Repr<'_>,
        n: &NakRepr,
        in_iface: Iface,
    ) -> Verdict {
        let max = self.config.max_repair_states;
        let Some(s) = self.sessions.get_mut(&repr.tsi()) else {
            self.stats.naks_unroutable += 1;
            return Verdict::Forward;
        };
        let t = s.timers(&self.config);
        let until = now + t.rpt_ivl + t.rdata_ivl;
        if let Some(k) = s.tg_size {
            let list = repr.options.nak_list.unwrap_or_default();
            for &e in core::iter::once(&n.sqn).chain(list.as_slice()) {
                let tg = crate::fec::tg_sqn(e, k);
                if !s.parity.contains_key(&tg) {
                    // Parity state counts against the one bound on repair state.
                    if self.repair_count >= max {
                        self.stats.naks_unroutable += 1;
                        continue;
                    }
                    self.repair_count += 1;
                }
                let st = s.parity.entry(tg).or_insert((BTreeSet::new(), until));
                st.0.insert(in_iface);
                st.1 = until;
            }
        }
        let (dport, upstream) = (s.dport, s.upstream);
        let count = 1 + repr.options.nak_list.map_or(0, |l| l.as_slice().len()) as u64;
        self.stats.nak_sqns_received += count;
        let mut ncf = Repr::downstream(repr.tsi(), dport, Body::Ncf(*n));
        if let Some(list) = repr.options.nak_list {
            ncf = ncf.with_options(Options {
                nak_list: Some(list),
                ..Options::default()
            });
        }
        ncf.header_flags |= OPT_PARITY;
        if let Ok(bytes) = ncf.to_vec() {
            self.out
                .push_back((NeDestination::Multicast(in_iface), bytes));
            self.stats.ncfs_sent += 1;
        }
        if let Ok(bytes) = repr.to_vec() {
            self.out
                .push_back((NeDestination::Unicast(upstream), bytes));
            self.stats.nak_sqns_forwarded += count;
        }
        Verdict::Consumed
    }

    /// Parity RDATA: to the interfaces that asked for the group's parity; down the whole
    /// tree when the group size is unknown.
    fn on_parity_rdata(&mut self, repr: &Repr<'_>, q: u32, datagram: &[u8]) -> Verdict {
        let Some(s) = self.sessions.get(&repr.tsi()) else {
            return Verdict::Forward;
        };
        let Some(k) = s.tg_size else {
            return Verdict::Forward;
        };
        match s.parity.get(&crate::fec::tg_sqn(q, k)) {
            Some((ifaces, _)) => {
                for &iface in ifaces {
                    self.out
                        .push_back((NeDestination::Multicast(iface), datagram.to_vec()));
                    self.stats.rdata_forwarded += 1;
                }
            }
            None => self.stats.rdata_unrequested += 1,
        }
        Verdict::Consumed
    }

    #[allow(clippy::too_many_arguments)]
    fn forward_nak(
        &mut self,
        tsi: Tsi,
        dport: u16,
        source: IpAddr,
        group: IpAddr,
        upstream: IpAddr,
        sqns: &[u32],
        report: Option<PgmccFeedback>,
    ) {
        for chunk in sqns.chunks(1 + pgm_wire::options::MAX_NAK_LIST) {
            let Some((&first, rest)) = chunk.split_first() else {
                continue;
            };
            let mut r = Repr::upstream(
                tsi,
                dport,
                Body::Nak(NakRepr {
                    sqn: first,
                    source,
                    group,
                }),
            );
            // The receiver report travels with the NAK so the source can elect its acker.
            r = r.with_options(Options::nak(rest, report));
            if let Ok(bytes) = r.to_vec() {
                self.out
                    .push_back((NeDestination::Unicast(upstream), bytes));
                self.stats.nak_sqns_forwarded += chunk.len() as u64;
            }
        }
    }

    fn on_ncf(&mut self, now: Instant, repr: &Repr<'_>, n: &NakRepr, in_iface: Iface) -> Verdict {
        let tsi = repr.tsi();
        let cfg = self.config.clone();
        let Some(s) = self.sessions.get_mut(&tsi) else {
            return Verdict::Forward;
        };
        if in_iface != s.upstream_iface {
            // §7.5: an NCF from downstream creates no state; discard it.
            return Verdict::Consumed;
        }
        s.note_grtt(&repr.options);
        let t = s.timers(&cfg);
        let list = repr.options.nak_list.unwrap_or_default();
        let confirmed = |keep_until: Instant| RepairPhase::Outstanding {
            elim_until: now + t.elim_ivl,
            rdata_until: keep_until.max(now + t.rdata_ivl),
        };
        for &q in core::iter::once(&n.sqn).chain(list.as_slice()) {
            match s.repairs.get_mut(&q) {
                Some(st) => st.phase = confirmed(st.keep_until),
                None => {
                    if self.repair_count < cfg.max_repair_states {
                        // Anticipated NAK: state without interfaces, eliminates duplicates.
                        self.repair_count += 1;
                        s.repairs.insert(
                            q,
                            RepairState {
                                phase: confirmed(now),
                                ifaces: BTreeSet::new(),
                                report: None,
                                keep_until: now + t.rdata_ivl,
                            },
                        );
                    }
                }
            }
        }
        Verdict::Consumed
    }

    fn on_rdata(&mut self, repr: &Repr<'_>, q: u32, datagram: &[u8]) -> Verdict {
        let tsi = repr.tsi();
        let Some(s) = self.sessions.get_mut(&tsi) else {
            return Verdict::Forward;
        };
        match s.repairs.remove(&q) {
            Some(st) => {
                self.repair_count -= 1;
                if st.ifaces.is_empty() {
                    self.stats.rdata_unrequested += 1;
                }
                for iface in st.ifaces {
                    self.out
                        .push_back((NeDestination::Multicast(iface), datagram.to_vec()));
                    self.stats.rdata_forwarded += 1;
                }
            }
            None => self.stats.rdata_unrequested += 1,
        }
        Verdict::Consumed
    }

    /// Repeats pending NAKs and expires repair state.
    pub fn handle_timeout(&mut self, now: Instant) {
        let cfg = self.config.clone();
        type Repeat = (
            Tsi,
            u16,
            IpAddr,
            IpAddr,
            IpAddr,
            Vec<u32>,
            Option<PgmccFeedback>,
        );
        let mut repeats: Vec<Repeat> = Vec::new();
        for tsi in &self.order {
            let Some(s) = self.sessions.get_mut(tsi) else {
                continue;
            };
            let mut again = Vec::new();
            let before = s.repairs.len();
            let t = s.timers(&cfg);
            s.repairs.retain(|&q, st| match &mut st.phase {
                RepairPhase::Pending { until, next_repeat } => {
                    if now >= *until {
                        // No NCF within NAK_RPT_IVL: repeats stop, and the next duplicate
                        // is forwarded anew; the interfaces stay until NAK_RDATA_IVL after
                        // the latest NAK forwarded (§7.8), for an NCF or RDATA that is late.
                        if now < st.keep_until {
                            st.phase = RepairPhase::Outstanding {
                                elim_until: now,
                                rdata_until: st.keep_until,
                            };
                            return true;
                        }
                        return false;
                    }
                    if now >= *next_repeat {
                        *next_repeat = now + t.rpt_gap;
                        st.keep_until = st.keep_until.max(now + t.rdata_ivl);
                        again.push(q);
                    }
                    true
                }
                RepairPhase::Outstanding { rdata_until, .. } => now < *rdata_until,
            });
            let before_parity = s.parity.len();
            s.parity.retain(|_, (_, until)| now < *until);
            let expired = before - s.repairs.len() + before_parity - s.parity.len();
            self.repair_count -= expired;
            self.stats.states_expired += expired as u64;
            if let (false, Some(group)) = (again.is_empty(), s.group) {
                again.sort_unstable();
                // Repeats carry the worst report stored for the sequence numbers repeated.
                let report = again
                    .iter()
                    .filter_map(|q| s.repairs.get(q).and_then(|st| st.report))
                    .max_by_key(|r| r.loss_rate);
                repeats.push((*tsi, s.dport, s.source, group, s.upstream, again, report));
            }
        }
        for (tsi, dport, source, group, upstream, sqns, report) in repeats {
            self.forward_nak(tsi, dport, source, group, upstream, &sqns, report);
        }
    }

    /// When `handle_timeout` next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.out.is_empty() {
            return Some(Instant::ZERO);
        }
        let parity = self
            .sessions
            .values()
            .flat_map(|s| s.parity.values().map(|(_, until)| *until));
        self.sessions
            .values()
            .flat_map(|s| s.repairs.values())
            .map(|st| match st.phase {
                RepairPhase::Pending { until, next_repeat } => until.min(next_repeat),
                RepairPhase::Outstanding { rdata_until, .. } => rdata_until,
            })
            .chain(parity)
            .min()
    }

    /// Writes the next NE-generated datagram into `buf`.
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<NeTransmit> {
        while let Some((dst, bytes)) = self.out.pop_front() {
            if let Some(slot) = buf.get_mut(..bytes.len()) {
                slot.copy_from_slice(&bytes);
                return Some(NeTransmit {
                    dst,
                    len: bytes.len(),
                });
            }
            trace!(len = bytes.len(), "ne: buffer too small, datagram dropped");
        }
        None
    }
}
