//! pgmcc sender and receiver agents: the real `pgmcc` core, driven by virtual time.

use std::net::IpAddr;

use pgmcc::cc::CcEvent;
use pgmcc::{
    Destination, Duration, Endpoint, Instant, Receiver, ReceiverConfig, ReceiverEvent, Sender,
    SenderConfig, Transmit,
};

use crate::agent::{Agent, Ctx};
use crate::agents::report::{AgentReport, PgmReceiverReport, PgmSenderReport};
use crate::packet::{Dest, Packet, Payload};
use crate::UDP_IP_OVERHEAD;

/// The simulated packet for a datagram the core asked to send (UDP encapsulation sizes).
fn pgm_packet(src: IpAddr, t: Transmit, buf: &[u8], group: IpAddr, flow: u32) -> Packet {
    let dst = match t.dst {
        Destination::Group => Dest::Group(group),
        Destination::Unicast(a) => Dest::Unicast(a),
    };
    Packet {
        src,
        dst,
        size: t.len as u32 + UDP_IP_OVERHEAD,
        flow,
        payload: Payload::Pgm(buf[..t.len].into()),
    }
}

/// Hands a PGM packet to a running endpoint, as the runtime hands it a datagram.
fn deliver<E: Endpoint>(endpoint: Option<&mut E>, now: Instant, p: &Packet) {
    if let (Some(e), Payload::Pgm(b)) = (endpoint, &p.payload) {
        e.handle(now, p.src, b);
    }
}

/// Runs a running endpoint's due timers.
fn expire<E: Endpoint>(endpoint: Option<&mut E>, now: Instant) {
    if let Some(e) = endpoint {
        e.handle_timeout(now);
    }
}

/// PGM agents take the PGM packets of their own flow.
fn is_pgm_of(p: &Packet, flow: u32) -> bool {
    matches!(p.payload, Payload::Pgm(_)) && p.flow == flow
}

/// A PGM source with an application that always has data (bulk transfer), or a fixed amount.
#[derive(Debug)]
pub struct PgmSenderAgent {
    flow: u32,
    group: IpAddr,
    sender: Option<Sender>,
    config: SenderConfig,
    /// Bytes still to send (`None` = unlimited).
    remaining: Option<u64>,
    apdu: Vec<u8>,
    stopped: bool,
    buf: Vec<u8>,
    /// Acker switches observed, with their times (for plots).
    pub acker_changes: Vec<(Instant, IpAddr)>,
    /// ODATA payload bytes sent.
    pub bytes_sent: u64,
}

impl PgmSenderAgent {
    /// A sender for `group`; its source NLA is filled in with the node's address at start.
    pub fn new(
        flow: u32,
        group: IpAddr,
        config: SenderConfig,
        bytes: Option<u64>,
    ) -> PgmSenderAgent {
        let apdu = vec![0x5a; config.max_tsdu()];
        let buf = vec![0u8; config.max_tpdu.max(1500)];
        PgmSenderAgent {
            flow,
            group,
            sender: None,
            config,
            remaining: bytes,
            apdu,
            stopped: false,
            buf,
            acker_changes: Vec::new(),
            bytes_sent: 0,
        }
    }

    /// The core's sender.
    pub fn sender(&self) -> Option<&Sender> {
        self.sender.as_ref()
    }

    fn pump(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        let Some(s) = self.sender.as_mut() else {
            return;
        };
        // Keep the send queue topped up.
        while !self.stopped && self.remaining != Some(0) && s.queued_packets() < 64 {
            // Full packets: the stream's first holds OPT_SYN as well.
            let full = s.next_tsdu().min(self.apdu.len());
            let n = self.remaining.map_or(full, |r| r.min(full as u64) as usize);
            if s.send(&self.apdu[..n]).is_err() {
                break;
            }
            if let Some(r) = &mut self.remaining {
                *r -= n as u64;
                if *r == 0 {
                    s.close();
                }
            }
        }
        while let Some(t) = s.poll_transmit(now, &mut self.buf) {
            ctx.send(pgm_packet(ctx.addr, t, &self.buf, self.group, self.flow));
        }
        self.bytes_sent = s.stats().odata_bytes;
        while let Some(ev) = s.poll_event() {
            if let CcEvent::AckerChanged { to, .. } = ev {
                self.acker_changes.push((now, to));
            }
        }
    }
}

impl Agent for PgmSenderAgent {
    fn flow(&self) -> u32 {
        self.flow
    }

    fn wants(&self, p: &Packet) -> bool {
        is_pgm_of(p, self.flow)
    }

    fn start(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        let mut cfg = self.config.clone();
        cfg.source_nla = ctx.addr;
        cfg.group = self.group;
        self.sender = Some(Sender::new(cfg, now));
        self.pump(now, ctx);
    }

    fn on_packet(&mut self, now: Instant, p: &Packet, ctx: &mut Ctx<'_>) {
        deliver(self.sender.as_mut(), now, p);
        self.pump(now, ctx);
    }

    fn on_timer(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        expire(self.sender.as_mut(), now);
        self.pump(now, ctx);
    }

    fn next_timer(&self) -> Option<Instant> {
        self.sender.as_ref().and_then(Endpoint::poll_timeout)
    }

    fn stop(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        self.stopped = true;
        if let Some(s) = self.sender.as_mut() {
            s.close();
        }
        self.pump(now, ctx);
    }

    fn goodput_bytes(&self) -> u64 {
        self.bytes_sent
    }

    fn report(&self) -> AgentReport {
        AgentReport::PgmSender(self.sender.as_ref().map(|s| {
            let (st, cc) = (s.stats(), s.cc_stats());
            PgmSenderReport {
                odata_bytes: st.odata_bytes,
                odata_packets: st.odata_packets,
                rdata_packets: st.rdata_packets,
                parity_packets: st.parity_packets,
                naks_received: st.naks_received,
                nak_sqns_source_limited: st.nak_sqns_source_limited,
                proactive_parity_packets: st.proactive_parity_packets,
                odata_held: st.odata_held,
                acks: cc.acks,
                acker_switches: cc.acker_switches,
                loss_events: cc.loss_events,
                stalls: cc.stalls,
                reports_discredited: cc.reports_discredited,
                window: s
                    .cc_metrics()
                    .and_then(|m| m.packets_per_rtt())
                    .unwrap_or(0.0),
                acker: s.cc_metrics().and_then(|m| m.acker),
                acker_changes: self.acker_changes.clone(),
            }
        }))
    }
}

/// A PGM receiver counting what it delivers.
#[derive(Debug)]
pub struct PgmReceiverAgent {
    flow: u32,
    receiver: Option<Receiver>,
    config: ReceiverConfig,
    buf: Vec<u8>,
    /// Application bytes delivered in order.
    pub delivered: u64,
    /// Sequence numbers reported unrecoverable.
    pub unrecoverable: u64,
    /// The session ended (FIN seen and everything accounted for).
    pub ended: bool,
    /// A misbehaving receiver (issue 21's attacker): what its reports claim.
    lie: Lie,
}

/// What a misbehaving receiver's reports claim instead of what it measured.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Lie {
    /// This loss rate (the draft's 16-bit scale).
    loss: Option<u16>,
    /// A round trip this many milliseconds longer: its timestamp echoes held back.
    rtt_ms: u32,
}

impl Lie {
    /// `buf` with its OPT_PGMCC_FEEDBACK changed as this lie says, re-encoded with a valid
    /// checksum; `None` if there is nothing to change.
    fn apply(&self, buf: &[u8]) -> Option<Vec<u8>> {
        if *self == Lie::default() {
            return None;
        }
        let mut r = pgm_wire::Repr::parse(buf).ok()?;
        let fb = r.options.pgmcc_feedback.as_mut()?;
        if let Some(loss) = self.loss {
            fb.loss_rate = loss;
        }
        fb.tstamp = fb.tstamp.wrapping_sub(self.rtt_ms);
        r.to_vec().ok()
    }
}

impl PgmReceiverAgent {
    /// A receiver; its NLA is filled in with the node's address at start.
    pub fn new(flow: u32, config: ReceiverConfig) -> PgmReceiverAgent {
        PgmReceiverAgent {
            flow,
            receiver: None,
            config,
            // Receivers send NAKs, ACKs and SPMRs: a few hundred bytes at most.
            buf: vec![0u8; 1500],
            delivered: 0,
            unrecoverable: 0,
            ended: false,
            lie: Lie::default(),
        }
    }

    /// This receiver lies: every report it sends claims loss rate `loss` (0-1).
    pub fn claiming_loss(mut self, loss: f64) -> PgmReceiverAgent {
        self.lie.loss = Some((loss.clamp(0.0, 1.0) * 65535.0).round() as u16);
        self
    }

    /// This receiver lies: every report it sends claims a round trip `extra` longer (its
    /// timestamp echoes held back).
    pub fn claiming_rtt(mut self, extra: Duration) -> PgmReceiverAgent {
        self.lie.rtt_ms = extra.as_millis().min(u128::from(u32::MAX)) as u32;
        self
    }

    /// The core's receiver.
    pub fn receiver(&self) -> Option<&Receiver> {
        self.receiver.as_ref()
    }

    fn pump(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        let Some(r) = self.receiver.as_mut() else {
            return;
        };
        while let Some(t) = r.poll_transmit(now, &mut self.buf) {
            let forged = self.lie.apply(&self.buf[..t.len]);
            let (t, buf) = match &forged {
                Some(f) => (Transmit { len: f.len(), ..t }, &f[..]),
                None => (t, &self.buf[..]),
            };
            ctx.send(pgm_packet(ctx.addr, t, buf, self.config.group, self.flow));
        }
        while let Some(ev) = r.poll_event() {
            match ev {
                ReceiverEvent::Data { data, .. } => self.delivered += data.len() as u64,
                ReceiverEvent::Unrecoverable { first, last, .. } => {
                    self.unrecoverable += u64::from(last.wrapping_sub(first)) + 1
                }
                ReceiverEvent::SessionEnded { .. } => self.ended = true,
                // One session per agent, so its table never fills: nothing to expire; and
                // simulated sources never abort.
                ReceiverEvent::SessionStarted { .. }
                | ReceiverEvent::StartMissed { .. }
                | ReceiverEvent::SessionExpired { .. }
                | ReceiverEvent::SessionReset { .. }
                | ReceiverEvent::Manifest { .. } => {}
            }
        }
    }
}

impl Agent for PgmReceiverAgent {
    fn flow(&self) -> u32 {
        self.flow
    }

    fn wants(&self, p: &Packet) -> bool {
        is_pgm_of(p, self.flow)
    }

    fn start(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        let mut cfg = self.config.clone();
        cfg.nla = ctx.addr;
        self.config = cfg.clone();
        self.receiver = Some(Receiver::new(cfg, now));
    }

    fn on_packet(&mut self, now: Instant, p: &Packet, ctx: &mut Ctx<'_>) {
        deliver(self.receiver.as_mut(), now, p);
        self.pump(now, ctx);
    }

    fn on_timer(&mut self, now: Instant, ctx: &mut Ctx<'_>) {
        expire(self.receiver.as_mut(), now);
        self.pump(now, ctx);
    }

    fn next_timer(&self) -> Option<Instant> {
        self.receiver.as_ref().and_then(Endpoint::poll_timeout)
    }

    fn goodput_bytes(&self) -> u64 {
        self.delivered
    }

    fn report(&self) -> AgentReport {
        AgentReport::PgmReceiver(self.receiver.as_ref().map(|r| PgmReceiverReport {
            bytes_delivered: self.delivered,
            unrecoverable_sqns: self.unrecoverable,
            naks_sent: r.stats().naks_sent,
            acks_sent: r.stats().acks_sent,
            quick_nak_gaps: r.stats().cc.quick_nak_gaps,
            given_up: [
                r.stats().given_up_trail,
                r.stats().given_up_patience,
                r.stats().given_up_overflow,
            ],
        }))
    }
}
