//! NAKs: which repairs they queue, the NCFs that confirm them, and the repairs forgotten
//! when the transmit window moves past them.

use super::*;

impl Sender {
    /// A NAK (selective or parity) for this session, source and group.
    pub(super) fn is_ours(&self, repr: &Repr<'_>, nak: &NakRepr) -> bool {
        repr.tsi() == self.config.tsi
            && repr.sport == self.config.dport
            && nak.source == self.config.source_nla
            && nak.group == self.config.group
    }

    pub(super) fn on_nak(
        &mut self,
        now: Instant,
        from: IpAddr,
        repr: &Repr<'_>,
        nak: &NakRepr,
        rtt: Option<RttSample>,
    ) {
        if !self.is_ours(repr, nak) {
            self.stats.naks_foreign += 1;
            return;
        }
        self.stats.naks_received += 1;
        // One RTT after a repair left, a NAK may still be one sent before it arrived.
        let holdoff = if self.config.repair_holdoff {
            let own = rtt
                .filter(|r| r.raw_millis() <= crate::cc::rtt::MAX_RTT_MS)
                .map(|r| Duration::from_millis(u64::from(r.millis())).min(MAX_GRTT));
            self.grtt(now).max(own)
        } else {
            None
        };
        // With a repair budget, repairs may wait: confirm a waiting one at most once per
        // group RTT, or each repeated NAK would buy an NCF out of the same budget.
        let ncf_holdoff = self
            .config
            .ncf_holdoff
            .or_else(|| self.config.repair_budget.and(self.grtt(now)));
        let list = repr.options.nak_list.unwrap_or_default();
        if repr.header_flags & OPT_PARITY != 0 {
            let sqns = core::iter::once(&nak.sqn).chain(list.as_slice()).copied();
            self.on_parity_nak(now, from, sqns, holdoff, ncf_holdoff);
            return;
        }
        let mut ncf = SqnList::new();
        for &sqn in core::iter::once(&nak.sqn).chain(list.as_slice()) {
            self.stats.nak_sqns_received += 1;
            let Some(p) = self.txw.get_sent_mut(sqn) else {
                self.stats.naks_outside_window += 1;
                continue;
            };
            p.naks = p.naks.saturating_add(1);
            match p.naks {
                1 => self.stats.sqns_naked += 1,
                2 => self.stats.sqns_naked_again += 1,
                _ => {}
            }
            if let (Some(h), Some(t)) = (holdoff, p.repaired_at) {
                if now < t + h && !self.repair_set.contains(&sqn) {
                    self.stats.naks_held_off += 1;
                    debug!(target: "pgmcc::repair", %from, sqn,
                        at_ms = now.as_nanos() / 1_000_000, "NAK held off: repaired within the hold-off");
                    continue;
                }
            }
            // A new repair is charged to the NAK's source; beyond its share, no NCF either:
            // it NAKs again.
            if !self.repair_set.contains(&sqn) && self.source_grants(now, from, 1) == 0 {
                debug!(target: "pgmcc::repair", %from, sqn,
                    at_ms = now.as_nanos() / 1_000_000, "NAK refused: the source's share");
                continue;
            }
            debug!(target: "pgmcc::repair", %from, sqn,
                at_ms = now.as_nanos() / 1_000_000, "NAK queued or confirmed");
            let fresh = self.repair_set.insert(sqn);
            if fresh {
                self.repairs.push_back(Repair::Data(sqn));
            } else {
                self.stats.naks_duplicate += 1;
            }
            if let Some(holdoff) = ncf_holdoff {
                let recent = self.ncf_sent.get(&sqn).is_some_and(|&t| now < t + holdoff);
                if !fresh && recent {
                    self.stats.ncfs_held += 1;
                    continue;
                }
                self.ncf_sent.insert(sqn, now);
            }
            self.push_ncf(&mut ncf, sqn, false);
        }
        if !ncf.is_empty() {
            self.queue_ncf(ncf, false);
        }
    }

    /// Parity NAK entries (`TG_SQN | (count - 1)` each): RFC 3208 §11.4's consolidation, the
    /// same hold-offs as selective repairs (the hold-off's clock is the group's latest parity
    /// burst, and it holds off only requests that burst covered).
    pub(super) fn on_parity_nak(
        &mut self,
        now: Instant,
        from: IpAddr,
        sqns: impl Iterator<Item = u32>,
        holdoff: Option<Duration>,
        ncf_holdoff: Option<Duration>,
    ) {
        let mut ncf = SqnList::new();
        for s in sqns {
            self.stats.parity_naks_received += 1;
            let Some(k) = self.parity.as_ref().map(|p| p.tg_size()) else {
                self.stats.parity_naks_refused += 1;
                continue;
            };
            // Charged to the source by the count it asks for (`TG_SQN | (count - 1)`),
            // repeats included: an honest receiver asks for about its losses per group. A
            // count beyond what the share holds is granted in part: the receiver keeps the
            // parity it gets and asks for the rest.
            let asked = (s & k.saturating_sub(1)) as usize + 1;
            let granted = self.source_grants(now, from, asked);
            if granted == 0 {
                debug!(target: "pgmcc::repair", %from, tg = crate::fec::tg_sqn(s, k), asked,
                    at_ms = now.as_nanos() / 1_000_000, "parity NAK refused: the source's share");
                continue;
            }
            let s = crate::fec::tg_sqn(s, k).wrapping_add(granted as u32 - 1);
            let Some(parity) = self.parity.as_mut() else {
                continue;
            };
            let tg = crate::fec::tg_sqn(s, k);
            let (verdict, naks) = parity.on_nak(now, s, &self.txw, holdoff);
            debug!(target: "pgmcc::repair", %from, tg, asked, granted, ?verdict,
                at_ms = now.as_nanos() / 1_000_000, "parity NAK");
            match naks {
                1 => self.stats.tgs_naked += 1,
                2 => self.stats.tgs_naked_again += 1,
                _ => {}
            }
            let count = match verdict {
                Verdict::OutsideWindow => {
                    self.stats.naks_outside_window += 1;
                    continue;
                }
                Verdict::HeldOff => {
                    self.stats.naks_held_off += 1;
                    continue;
                }
                Verdict::Queue { count } => {
                    self.repairs.push_back(Repair::Parity(tg));
                    self.parity_ncf_sent.insert(tg, now);
                    count
                }
                Verdict::Confirm { count, raised } => {
                    self.stats.naks_duplicate += 1;
                    if let Some(h) = ncf_holdoff {
                        let recent = self.parity_ncf_sent.get(&tg).is_some_and(|&t| now < t + h);
                        if recent && !raised {
                            self.stats.ncfs_held += 1;
                            continue;
                        }
                    }
                    self.parity_ncf_sent.insert(tg, now);
                    count
                }
            };
            // A parity NCF confirms at least the count asked for (§11.5).
            self.push_ncf(&mut ncf, tg.wrapping_add(count.min(k) - 1), true);
        }
        if !ncf.is_empty() {
            self.queue_ncf(ncf, true);
        }
    }

    /// Adds `sqn` to the NCF list being built, queueing it first when full.
    pub(super) fn push_ncf(&mut self, ncf: &mut SqnList, sqn: u32, parity: bool) {
        if ncf.push(sqn).is_err() {
            self.queue_ncf(core::mem::take(ncf), parity);
            let _ = ncf.push(sqn);
        }
    }

    /// Queues an NCF list, or drops it (counted) when [`MAX_NCF_QUEUE`] are waiting.
    pub(super) fn queue_ncf(&mut self, list: SqnList, parity: bool) {
        if self.ncfs.len() >= MAX_NCF_QUEUE {
            self.stats.ncfs_dropped += list.as_slice().len() as u64;
        } else {
            self.ncfs.push_back((parity, list));
        }
    }

    pub(super) fn forget_repairs(&mut self, first: u32, n: u32) {
        if n == 0 {
            return;
        }
        let trail = self.txw.trail();
        let parity_gone = self.parity.as_mut().is_some_and(|p| p.forget_before(trail));
        if parity_gone {
            self.parity_ncf_sent
                .retain(|&tg, _| !crate::sqn::lt(tg, trail));
        }
        if self.repair_set.is_empty() && !parity_gone {
            return;
        }
        for i in 0..n {
            self.repair_set.remove(&first.wrapping_add(i));
        }
        let (set, parity) = (&self.repair_set, &self.parity);
        self.repairs.retain(|r| match r {
            Repair::Data(s) => set.contains(s),
            Repair::Parity(tg) | Repair::Proactive(tg) => {
                parity.as_ref().is_some_and(|p| p.is_pending(*tg))
            }
        });
        self.ncf_sent.retain(|s, _| set.contains(s));
    }

    /// The sequence numbers repair `r` repairs: its own, or its transmission group.
    pub(super) fn repaired(&self, r: Repair) -> Repaired {
        match r {
            Repair::Data(s) => Repaired { first: s, count: 1 },
            Repair::Parity(tg) | Repair::Proactive(tg) => Repaired {
                first: tg,
                count: self.parity.as_ref().map_or(1, |p| p.tg_size()),
            },
        }
    }

    /// Bytes the repair `r` takes on the wire (for parity not yet encoded, at most).
    pub(super) fn repair_len(&self, r: Repair) -> Option<usize> {
        match r {
            Repair::Data(s) => self.txw.get_sent(s).map(|p| p.data.len() + DATA_OVERHEAD),
            Repair::Parity(tg) | Repair::Proactive(tg) => {
                let max = self.config.max_tsdu() + 2;
                let p = self.parity.as_ref()?;
                Some(p.next_len(tg, max) + PARITY_OVERHEAD)
            }
        }
    }
}
