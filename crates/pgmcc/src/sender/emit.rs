//! Emission: how each packet a source sends is built, and what sending it changes
//! (counters, the rate limit, the SPM schedule, the transmit window).

use super::*;

impl Sender {
    /// When the next heartbeat SPM is due.
    ///
    /// RFC 3208 §6.1 sends heartbeats "to provoke prompt detection of missing packets in the
    /// absence of data to transmit", IHB_MIN after the last ODATA. While new data waits for
    /// the congestion controller (or the rate limit), data is not absent: the controller's
    /// feedback lets the next ODATA go within about one round trip, and that ODATA shows
    /// receivers the lead as well as an SPM would. So, with new data queued and
    /// [`SenderConfig::heartbeat_waits_for_grtt`] on, the first heartbeat waits at least one
    /// group RTT after the last ODATA. Without the wait, a
    /// window-limited source on a path longer than IHB_MIN sends one SPM in every idle gap
    /// of its ACK clock, at the same point of every round trip; on a drop-tail dumbbell that
    /// one small packet decided which flow's train met the full queue (docs/pgmcc.md,
    /// "Heartbeat SPMs and the drop-tail phase").
    pub(super) fn heartbeat_at(&self) -> Option<Instant> {
        let h = self.next_heartbeat?;
        match self.heartbeat_floor {
            Some(floor) if self.txw.peek_unsent().is_some() => Some(h.max(floor)),
            _ => Some(h),
        }
    }

    /// Schedules an SPM when the group RTT differs by more than a quarter from the one the
    /// last SPM carried (or none did yet): at most one per IHB_MIN or group RTT after the
    /// last SPM, whichever is longer ([`SenderConfig::advertise_grtt`]).
    pub(super) fn note_grtt_news(&mut self, now: Instant) {
        if !self.config.advertise_grtt {
            return;
        }
        let Some(g) = self.grtt(now) else {
            return;
        };
        let news = self.grtt_told.is_none_or(|told| {
            let (hi, lo) = (g.max(told), g.min(told));
            hi - lo > told / 4
        });
        self.grtt_spm_at = news.then(|| self.last_spm + self.config.ihb_min.max(g));
    }

    /// Congestion control grants tokens to new data only (repairs are not regulated, §3.8).
    pub(super) fn cc_allows(&self) -> bool {
        self.cc.as_ref().is_none_or(|c| c.can_send())
    }

    pub(super) fn cc_allows_repair(&self, r: Repair) -> bool {
        let repaired = self.repaired(r);
        self.cc.as_ref().is_none_or(|c| c.can_send_repair(repaired))
    }

    pub(super) fn rate_allows(&mut self, now: Instant, len: usize) -> bool {
        self.limiter.as_mut().is_none_or(|l| l.allows(now, len))
    }

    pub(super) fn charge(&mut self, now: Instant, len: usize) {
        self.stats.bytes_sent += len as u64;
        if let Some(l) = &mut self.limiter {
            l.charge(now, len);
        }
    }

    pub(super) fn finish(
        &mut self,
        now: Instant,
        repr: &Repr<'_>,
        dst: Destination,
        buf: &mut [u8],
    ) -> Option<Transmit> {
        match repr.emit(buf) {
            Ok(len) => {
                self.charge(now, len);
                Some(Transmit { dst, len })
            }
            Err(e) => {
                // Only a driver passing a buffer smaller than max_tpdu gets here.
                debug!(error = %e, "sender: cannot emit {}", repr.packet_type());
                None
            }
        }
    }

    pub(super) fn emit_ncf(
        &mut self,
        now: Instant,
        list: &SqnList,
        parity: bool,
        buf: &mut [u8],
    ) -> Option<Transmit> {
        let (&first, rest) = list.as_slice().split_first()?;
        let body = Body::Ncf(NakRepr {
            sqn: first,
            source: self.config.source_nla,
            group: self.config.group,
        });
        let mut opts = Options::nak(rest, None);
        opts.grtt = self.grtt_option(now);
        if let Some(cc) = &self.cc {
            cc.control_options(&mut opts);
        }
        let mut repr =
            Repr::downstream(self.config.tsi, self.config.dport, body).with_options(opts);
        if parity {
            repr.header_flags |= OPT_PARITY;
        }
        self.stats.ncf_packets += 1;
        self.budget.charge(now, ncf_len(list));
        self.finish(now, &repr, Destination::Group, buf)
    }

    pub(super) fn emit_spm(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let body = Body::Spm(SpmRepr {
            sqn: self.spm_sqn,
            trail: self.txw.trail(),
            lead: self.txw.lead(),
            path_nla: self.config.source_nla,
        });
        let fin = self.closing && self.txw.queued() == 0;
        let grtt = self.grtt_option(now);
        if grtt.is_some() {
            self.grtt_told = self.grtt(now);
            self.grtt_spm_at = None;
        }
        let mut opts = Options {
            fin: fin && self.aborted.is_none(),
            rst: self.aborted.map(|error_code| pgm_wire::Rst {
                no_repairs: true,
                error_code,
            }),
            manifest: self.config.manifest.clone(),
            grtt,
            fec: self.parity.as_ref().map(|p| Fec {
                proactive: self.config.proactive_parity > 0,
                on_demand: true,
                code: FEC_RS_VANDERMONDE_GF256,
                tgs: p.tg_size(),
            }),
            ..Options::default()
        };
        if let Some(cc) = &self.cc {
            cc.control_options(&mut opts);
        }
        let repr = Repr::downstream(self.config.tsi, self.config.dport, body).with_options(opts);
        self.spm_sqn = self.spm_sqn.wrapping_add(1);
        if self.spm_now {
            self.spm_now = false;
        } else {
            self.spm_burst_left = self.spm_burst_left.saturating_sub(1);
        }
        self.last_spm = now;
        self.next_ambient = now + self.config.spm_ambient;
        if self.heartbeat_at().is_some_and(|h| now >= h) {
            self.heartbeat_ivl = (self.heartbeat_ivl * 2).min(self.config.ihb_max);
            self.next_heartbeat = Some(now + self.heartbeat_ivl);
        }
        self.stats.spm_packets += 1;
        self.finish(now, &repr, Destination::Group, buf)
    }

    pub(super) fn emit_data(
        &mut self,
        now: Instant,
        sqn: u32,
        repair: bool,
        buf: &mut [u8],
    ) -> Option<Transmit> {
        let trail = self.txw.trail();
        let syn = !repair && !self.syn_sent;
        let join = self
            .config
            .join_window
            .map(|w| crate::sqn::max(trail, sqn.wrapping_sub(w)));
        let p = if repair {
            self.txw.get_sent(sqn)
        } else {
            self.txw.peek_unsent()
        }?;
        let data_len = p.data.len();
        let mut opts = Options {
            fragment: p.fragment,
            syn: syn || (repair && sqn == self.config.initial_sqn),
            join,
            ack_proof: self.config.ack_proof.map(|k| pgm_wire::AckProof {
                value: ack_nonce(&k, sqn),
            }),
            ..Options::default()
        };
        let repaired = self.repaired(Repair::Data(sqn));
        if let Some(cc) = self.cc.as_mut() {
            // The controller adds OPT_PGMCC_DATA and its own options to ODATA, and
            // OPT_PGMCC_DATA to the repairs it wants its acker to acknowledge.
            if repair {
                cc.repair_options(now, sqn, repaired, &mut opts);
                cc.on_repair_sent(now, sqn, repaired);
            } else {
                cc.on_data_sent(now, sqn, &mut opts);
            }
        }
        let body = if repair {
            Body::Rdata(DataRepr { sqn, trail })
        } else {
            Body::Odata(DataRepr { sqn, trail })
        };
        let emitted = Repr::downstream(self.config.tsi, self.config.dport, body)
            .with_options(opts)
            .with_payload(&p.data)
            .emit(buf);
        let len = match emitted {
            Ok(len) => len,
            Err(e) => {
                debug!(error = %e, sqn, "sender: cannot emit data");
                return None;
            }
        };
        self.charge(now, len);
        self.drain_cc_events();
        if repair {
            self.budget.charge(now, len);
            self.stats.rdata_packets += 1;
            self.ending.repaired(now);
            self.stats.rdata_bytes += data_len as u64;
            if let Some(p) = self.txw.get_sent_mut(sqn) {
                p.repaired_at = Some(now);
                p.hold_from = Some(now);
            }
        } else {
            self.syn_sent = true;
            self.last_odata = Some(now);
            self.budget.odata_sent(len);
            self.stats.odata_packets += 1;
            self.stats.odata_bytes += data_len as u64;
            let (first, n) = self.txw.mark_sent(now, self.nak_hold);
            self.forget_repairs(first, n);
            self.queue_proactive(sqn);
            // Data resets the heartbeat schedule to IHB_MIN (§6.1).
            self.heartbeat_ivl = self.config.ihb_min;
            self.next_heartbeat = Some(now + self.heartbeat_ivl);
            if self.config.heartbeat_waits_for_grtt {
                self.heartbeat_floor = self.grtt(now).map(|g| now + g);
            }
        }
        Some(Transmit {
            dst: Destination::Group,
            len,
        })
    }

    /// ODATA `sqn` went out: if it completed a transmission group, queue the group's
    /// pro-active parity ([`SenderConfig::proactive_parity`]).
    pub(super) fn queue_proactive(&mut self, sqn: u32) {
        let h = self.config.proactive_parity;
        let Some(p) = self.parity.as_mut().filter(|_| h > 0) else {
            return;
        };
        let k = p.tg_size();
        let tg = crate::fec::tg_sqn(sqn, k);
        if sqn.wrapping_sub(tg) != k - 1 {
            return;
        }
        if p.proactive(tg, h) {
            self.repairs.push_back(Repair::Proactive(tg));
        }
    }

    /// Sends one parity packet with OPT_PARITY (and OPT_VAR_PKTLEN when the group's payload
    /// lengths differ), its encoded OPT_FRAGMENT when the group has one: RDATA on demand,
    /// ODATA when `proactive` (RFC 3208 §11.4).
    pub(super) fn emit_parity(
        &mut self,
        now: Instant,
        packet: &ParityPacket,
        proactive: bool,
        buf: &mut [u8],
    ) -> Option<Transmit> {
        let trail = self.txw.trail();
        let layout = packet.layout;
        tracing::debug!(target: "pgmcc::repair", sqn = packet.sqn, proactive,
            at_ms = now.as_nanos() / 1_000_000, "parity packet sent");
        let p = layout.parity_payload_len();
        let (payload, encoded) = packet.shard.split_at(p);
        // RFC 3208 §9.6.2: every parity packet of the first transmission group carries
        // OPT_SYN, so a receiver that rebuilds the first packet still learns the stream start.
        let first_group = self.parity.as_ref().is_some_and(|q| {
            crate::fec::tg_sqn(packet.sqn, q.tg_size()) == self.config.initial_sqn
        });
        let opts = Options {
            syn: first_group,
            fragment_encoded: layout
                .frag
                .then(|| <[u8; FRAGMENT_BODY_LEN]>::try_from(encoded).ok())
                .flatten(),
            ..Options::default()
        };
        let data = DataRepr {
            sqn: packet.sqn,
            trail,
        };
        let body = if proactive {
            Body::Odata(data)
        } else {
            Body::Rdata(data)
        };
        let mut repr = Repr::downstream(self.config.tsi, self.config.dport, body)
            .with_options(opts)
            .with_payload(payload);
        repr.header_flags |= OPT_PARITY;
        if layout.var {
            repr.header_flags |= OPT_VAR_PKTLEN;
        }
        let len = match repr.emit(buf) {
            Ok(len) => len,
            Err(e) => {
                debug!(error = %e, sqn = packet.sqn, "sender: cannot emit parity");
                return None;
            }
        };
        let k = self.parity.as_ref().map_or(1, |q| q.tg_size());
        let repaired = self.repaired(Repair::Parity(crate::fec::tg_sqn(packet.sqn, k)));
        if let Some(cc) = self.cc.as_mut() {
            cc.on_repair_sent(now, packet.sqn, repaired);
        }
        self.charge(now, len);
        self.drain_cc_events();
        self.budget.charge(now, len);
        if proactive {
            self.stats.proactive_parity_packets += 1;
        } else {
            self.stats.rdata_packets += 1;
            self.ending.repaired(now);
            self.stats.rdata_bytes += p as u64;
            self.stats.parity_packets += 1;
        }
        Some(Transmit {
            dst: Destination::Group,
            len,
        })
    }
}
