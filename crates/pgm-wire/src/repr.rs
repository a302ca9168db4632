//! A whole PGM packet as a validated, plain value: [`Repr`].

use crate::ack::AckRepr;
use crate::checksum;
use crate::data::DataRepr;
use crate::error::{Error, Result};
use crate::header::{Packet, HEADER_LEN, OPT_PRESENT};
use crate::nak::NakRepr;
use crate::options::Options;
use crate::poll::{PollRepr, PolrRepr};
use crate::spm::SpmRepr;
use crate::types::{Gsi, PacketType, Tsi};

/// Whether [`Repr::parse_with`] verifies the checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChecksumPolicy {
    /// Verify a non-zero checksum; accept 0 ("not computed", RFC 3208 §8). The default.
    #[default]
    Verify,
    /// Verify a non-zero checksum and reject 0 on ODATA/RDATA, as OpenPGM's `pgm_parse` does.
    RequireOnData,
    /// Skip verification (the lower layer already checked, or a fuzzer drives the parser).
    Ignore,
}

/// The type-specific part of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Body {
    /// Source Path Message.
    Spm(SpmRepr),
    /// Poll request.
    Poll(PollRepr),
    /// Poll response.
    Polr(PolrRepr),
    /// Original data.
    Odata(DataRepr),
    /// Repair data.
    Rdata(DataRepr),
    /// Negative acknowledgement.
    Nak(NakRepr),
    /// Null NAK.
    Nnak(NakRepr),
    /// NAK confirmation.
    Ncf(NakRepr),
    /// SPM request (no type-specific header).
    Spmr,
    /// pgmcc acknowledgement.
    Ack(AckRepr),
}

impl Body {
    /// The packet type this body belongs to.
    pub const fn packet_type(&self) -> PacketType {
        match self {
            Body::Spm(_) => PacketType::Spm,
            Body::Poll(_) => PacketType::Poll,
            Body::Polr(_) => PacketType::Polr,
            Body::Odata(_) => PacketType::Odata,
            Body::Rdata(_) => PacketType::Rdata,
            Body::Nak(_) => PacketType::Nak,
            Body::Nnak(_) => PacketType::Nnak,
            Body::Ncf(_) => PacketType::Ncf,
            Body::Spmr => PacketType::Spmr,
            Body::Ack(_) => PacketType::Ack,
        }
    }

    /// Parses the type-specific header of a packet of type `pt` from the front of `body`.
    pub fn parse(pt: PacketType, body: &[u8]) -> Result<(Body, usize)> {
        Ok(match pt {
            PacketType::Spm => {
                let (r, n) = SpmRepr::parse(body)?;
                (Body::Spm(r), n)
            }
            PacketType::Poll => {
                let (r, n) = PollRepr::parse(body)?;
                (Body::Poll(r), n)
            }
            PacketType::Polr => {
                let (r, n) = PolrRepr::parse(body)?;
                (Body::Polr(r), n)
            }
            PacketType::Odata => {
                let (r, n) = DataRepr::parse(body)?;
                (Body::Odata(r), n)
            }
            PacketType::Rdata => {
                let (r, n) = DataRepr::parse(body)?;
                (Body::Rdata(r), n)
            }
            PacketType::Nak => {
                let (r, n) = NakRepr::parse(body)?;
                (Body::Nak(r), n)
            }
            PacketType::Nnak => {
                let (r, n) = NakRepr::parse(body)?;
                (Body::Nnak(r), n)
            }
            PacketType::Ncf => {
                let (r, n) = NakRepr::parse(body)?;
                (Body::Ncf(r), n)
            }
            PacketType::Spmr => (Body::Spmr, 0),
            PacketType::Ack => {
                let (r, n) = AckRepr::parse(body)?;
                (Body::Ack(r), n)
            }
        })
    }

    /// Bytes the type-specific header takes.
    pub fn buffer_len(&self) -> usize {
        match self {
            Body::Spm(r) => r.buffer_len(),
            Body::Poll(r) => r.buffer_len(),
            Body::Polr(r) => r.buffer_len(),
            Body::Odata(r) | Body::Rdata(r) => r.buffer_len(),
            Body::Nak(r) | Body::Nnak(r) | Body::Ncf(r) => r.buffer_len(),
            Body::Spmr => 0,
            Body::Ack(r) => r.buffer_len(),
        }
    }

    /// Writes the type-specific header to the front of `buf` (sized by the caller).
    pub fn emit(&self, buf: &mut [u8]) {
        match self {
            Body::Spm(r) => r.emit(buf),
            Body::Poll(r) => r.emit(buf),
            Body::Polr(r) => r.emit(buf),
            Body::Odata(r) | Body::Rdata(r) => r.emit(buf),
            Body::Nak(r) | Body::Nnak(r) | Body::Ncf(r) => r.emit(buf),
            Body::Spmr => {}
            Body::Ack(r) => r.emit(buf),
        }
    }
}

/// A validated PGM packet: common header fields, type-specific header, options and payload.
///
/// `payload` (the TSDU) borrows from the parsed buffer, as do unknown options: parsing does
/// not copy data and allocates only if unknown options are present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repr<'a> {
    /// Source port field as on the wire (the TSI port for downstream packets).
    pub sport: u16,
    /// Destination port field as on the wire (the TSI port for upstream packets).
    pub dport: u16,
    /// Global source identifier.
    pub gsi: Gsi,
    /// Header `options` bits other than OPT_PRESENT ([`OPT_NETWORK`](crate::OPT_NETWORK),
    /// [`OPT_VAR_PKTLEN`](crate::OPT_VAR_PKTLEN), [`OPT_PARITY`](crate::OPT_PARITY)).
    /// OPT_PRESENT is derived from `options` on emit.
    pub header_flags: u8,
    /// Type-specific header.
    pub body: Body,
    /// Option extensions.
    pub options: Options<'a>,
    /// The TSDU: application bytes (empty for most non-data packets).
    pub payload: &'a [u8],
}

impl<'a> Repr<'a> {
    /// A downstream packet (SPM, ODATA, RDATA, NCF, POLL) of session `tsi` sent to data
    /// destination port `dport`, with no options and no payload. The OPT_NETWORK bit is
    /// kept in step with the options by [`Repr::with_options`].
    pub fn downstream(tsi: Tsi, dport: u16, body: Body) -> Repr<'a> {
        Repr {
            sport: tsi.sport,
            dport,
            gsi: tsi.gsi,
            header_flags: 0,
            body,
            options: Options::default(),
            payload: &[],
        }
    }

    /// An upstream packet (NAK, NNAK, SPMR, POLR, ACK) for session `tsi` whose data
    /// destination port is `dport`: ports are swapped as RFC 3208 §8 specifies.
    pub fn upstream(tsi: Tsi, dport: u16, body: Body) -> Repr<'a> {
        Repr {
            sport: dport,
            dport: tsi.sport,
            gsi: tsi.gsi,
            header_flags: 0,
            body,
            options: Options::default(),
            payload: &[],
        }
    }

    /// Replaces the options and sets OPT_NETWORK when a network-significant one is present.
    pub fn with_options(mut self, options: Options<'a>) -> Repr<'a> {
        if options.has_network_significant(self.body.packet_type()) {
            self.header_flags |= crate::header::OPT_NETWORK;
        } else {
            self.header_flags &= !crate::header::OPT_NETWORK;
        }
        self.options = options;
        self
    }

    /// Replaces the payload.
    pub fn with_payload(mut self, payload: &'a [u8]) -> Repr<'a> {
        self.payload = payload;
        self
    }

    /// The packet type.
    pub fn packet_type(&self) -> PacketType {
        self.body.packet_type()
    }

    /// The session this packet belongs to (ports un-swapped for upstream types).
    pub fn tsi(&self) -> Tsi {
        let sport = if self.packet_type().is_upstream() {
            self.dport
        } else {
            self.sport
        };
        Tsi {
            gsi: self.gsi,
            sport,
        }
    }

    /// Parses a datagram, verifying a non-zero checksum.
    pub fn parse(datagram: &'a [u8]) -> Result<Repr<'a>> {
        Repr::parse_with(datagram, ChecksumPolicy::Verify)
    }

    /// Parses a datagram with an explicit checksum policy.
    ///
    /// The datagram must be exactly one PGM packet: header, type-specific header, options
    /// and a payload of exactly TSDU-length bytes (UDP encapsulation carries nothing else).
    pub fn parse_with(datagram: &'a [u8], policy: ChecksumPolicy) -> Result<Repr<'a>> {
        let packet = Packet::new_checked(datagram)?;
        let pt = packet.packet_type()?;
        match policy {
            ChecksumPolicy::Ignore => {}
            ChecksumPolicy::Verify => packet.verify_checksum()?,
            ChecksumPolicy::RequireOnData => {
                if packet.checksum() == 0 && matches!(pt, PacketType::Odata | PacketType::Rdata) {
                    return Err(Error::Checksum {
                        stored: 0,
                        computed: packet.compute_checksum(),
                    });
                }
                packet.verify_checksum()?
            }
        }
        let rest = &datagram[HEADER_LEN..];
        let (body, used) = Body::parse(pt, rest)?;
        let rest = &rest[used..];
        let flags = packet.options_byte();
        let (options, used) = if flags & OPT_PRESENT != 0 {
            Options::parse(rest)?
        } else {
            (Options::default(), 0)
        };
        let payload = &rest[used..];
        let declared = usize::from(packet.tsdu_length());
        if payload.len() != declared {
            return Err(Error::TsduLength {
                declared,
                actual: payload.len(),
            });
        }
        Ok(Repr {
            sport: packet.sport(),
            dport: packet.dport(),
            gsi: packet.gsi(),
            header_flags: flags & !OPT_PRESENT,
            body,
            options,
            payload,
        })
    }

    /// Parses an RDATA whose checksum is the one OpenPGM 5.3's source puts on the first
    /// repair of a packet its rate limiter held back: the PGM header, RDATA header and
    /// options summed with the payload taken as zero (the payload's partial sum was never
    /// added; `docs/interop-libpgm.md`). `None` for anything else, including a packet
    /// whose checksum verifies or is zero, and an RDATA without payload (whose correct
    /// checksum is that same value).
    ///
    /// The payload is then covered by no PGM checksum at all: accept such a packet only
    /// where a lower layer has checked the payload (a UDP checksum), never over raw IP.
    pub fn parse_openpgm_held_back_rdata(datagram: &'a [u8]) -> Option<Repr<'a>> {
        let packet = Packet::new_checked(datagram).ok()?;
        let stored = packet.checksum();
        if stored == 0 || packet.compute_checksum() == stored {
            return None;
        }
        let repr = Repr::parse_with(datagram, ChecksumPolicy::Ignore).ok()?;
        if !matches!(repr.body, Body::Rdata(_)) || repr.payload.is_empty() {
            return None;
        }
        let unsummed = datagram.len() - repr.payload.len();
        (checksum::compute(&datagram[..unsummed]) == stored).then_some(repr)
    }

    /// Bytes the packet takes on the wire.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.body.buffer_len() + self.options.buffer_len() + self.payload.len()
    }

    /// Writes the packet, with its checksum, to the front of `buf`; returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let tsdu = u16::try_from(self.payload.len())
            .map_err(|_| Error::Unencodable("payload longer than 65535 bytes"))?;
        if let Body::Nak(n) | Body::Nnak(n) | Body::Ncf(n) = &self.body {
            // RFC 3208 allows a source NLA and group NLA of different families, but OpenPGM
            // locates the options from the source NLA's family alone and would misread them.
            if n.source.is_ipv4() != n.group.is_ipv4() && !self.options.is_empty() {
                return Err(Error::Unencodable(
                    "NAK/NNAK/NCF with options needs source and group NLAs of one family",
                ));
            }
        }
        let len = self.buffer_len();
        if buf.len() < len {
            return Err(Error::BufferTooSmall {
                needed: len,
                have: buf.len(),
            });
        }
        let buf = &mut buf[..len];
        let body_at = HEADER_LEN;
        let opts_at = body_at + self.body.buffer_len();
        let opt_len = self.options.emit(&mut buf[opts_at..])?;
        self.body.emit(&mut buf[body_at..]);
        let payload_at = opts_at + opt_len;
        buf[payload_at..].copy_from_slice(self.payload);
        let mut p = Packet::new_unchecked(&mut *buf);
        p.set_sport(self.sport);
        p.set_dport(self.dport);
        p.set_packet_type(self.packet_type());
        let present = if opt_len > 0 { OPT_PRESENT } else { 0 };
        p.set_options_byte((self.header_flags & !OPT_PRESENT) | present);
        p.set_checksum(0);
        p.set_gsi(self.gsi);
        p.set_tsdu_length(tsdu);
        p.fill_checksum();
        Ok(len)
    }

    /// Emits into a new vector.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut v = vec![0u8; self.buffer_len()];
        let n = self.emit(&mut v)?;
        v.truncate(n);
        Ok(v)
    }
}
