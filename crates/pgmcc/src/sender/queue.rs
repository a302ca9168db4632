//! What the application gives a source: APDUs cut into packets (fragments), queued in the
//! transmit window, and in signed mode gathered into blocks behind their digest lists.

use super::*;

impl Sender {
    /// Queues one APDU (a message). It is split into fragments if larger than one TPDU.
    pub fn send(&mut self, apdu: &[u8]) -> Result<(), SendError> {
        if self.closing {
            return Err(SendError::Closed);
        }
        let max = self.max_apdu();
        if apdu.len() > max {
            return Err(SendError::TooLarge {
                len: apdu.len(),
                max,
            });
        }
        let pieces = self.pieces(apdu.len())?;
        let n = pieces.len();
        if self.queued_packets() + n > self.config.send_queue.max(n) {
            return Err(SendError::WouldBlock);
        }
        if self.config.signer.is_some() {
            let full = self
                .block
                .as_ref()
                .is_some_and(|b| b.packets.len() + n > self.block_capacity());
            if full {
                self.flush_block(false);
            }
            if self.block.is_none() {
                self.block = Some(Block {
                    list_sqn: self.txw.next_sqn(),
                    packets: Vec::new(),
                });
            }
        }
        let first_sqn = self.next_sqn();
        let apdu_len = apdu.len() as u32;
        for (start, end) in pieces {
            let fragment = (n > 1).then_some(Fragment {
                first_sqn,
                offset: start as u32,
                apdu_len,
            });
            let p = TxPacket {
                sqn: self.next_sqn(),
                data: apdu[start..end].to_vec(),
                fragment,
                sent_at: None,
                repaired_at: None,
                hold_from: None,
                naks: 0,
            };
            match self.block.as_mut() {
                Some(b) => b.packets.push(p),
                None => self.txw.push(p),
            }
        }
        if self.txw.peek_unsent().is_none() {
            // Nothing else would go out: do not hold the block back.
            self.flush_block(false);
        }
        self.stats.apdus_sent += 1;
        Ok(())
    }

    /// Payload bytes the next APDU [`Sender::send`] takes fills one packet with: the
    /// stream's first packet carries OPT_SYN and holds less.
    pub fn next_tsdu(&self) -> usize {
        self.config.tsdu_at(self.next_sqn(), false)
    }

    /// Where an APDU of `len` bytes is cut: one packet when it fits the next packet whole,
    /// else fragments sized by the sequence number each gets. A session that does not
    /// fragment ([`SenderConfig::fragments`]) refuses what does not fit one packet.
    pub(super) fn pieces(&self, len: usize) -> Result<Vec<(usize, usize)>, SendError> {
        let sqn = self.next_sqn();
        let whole = self.config.tsdu_at(sqn, false);
        if len <= whole {
            return Ok(vec![(0, len)]);
        }
        if !self.config.fragments() {
            return Err(SendError::TooLarge { len, max: whole });
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < len {
            let room = self
                .config
                .tsdu_at(sqn.wrapping_add(pieces.len() as u32), true);
            let end = (start + room).min(len);
            pieces.push((start, end));
            start = end;
        }
        Ok(pieces)
    }

    /// The largest APDU [`Sender::send`] takes: [`SenderConfig::max_apdu`], and in signed
    /// mode no more than one block's packets.
    pub fn max_apdu(&self) -> usize {
        if self.config.signer.is_some() {
            let block = self.block_capacity() * self.config.max_tsdu();
            self.config.max_apdu.min(block)
        } else {
            self.config.max_apdu
        }
    }

    /// Packets one signed block holds (a list must fit one TPDU).
    pub(super) fn block_capacity(&self) -> usize {
        // A list may be the stream's first packet, with OPT_SYN.
        signed::block_capacity(self.config.first_tsdu()).max(1)
    }

    /// The sequence number the next packet queued gets.
    pub(super) fn next_sqn(&self) -> u32 {
        match &self.block {
            Some(b) => b.list_sqn.wrapping_add(1 + b.packets.len() as u32),
            None => self.txw.next_sqn(),
        }
    }

    /// Signed mode: queues the block being filled after its signed digest list. With
    /// `end`, the list is the session's last, and covers no packets: a block being filled is
    /// flushed under a list of its own first, so the end list has room for the manifest.
    pub(super) fn flush_block(&mut self, end: bool) {
        let Some(signer) = self.config.signer.clone() else {
            return;
        };
        if end && self.block.is_some() {
            self.flush_block(false);
        }
        let block = match self.block.take() {
            Some(b) => b,
            None if end => Block {
                list_sqn: self.txw.next_sqn(),
                packets: Vec::new(),
            },
            None => return,
        };
        let digests = block
            .packets
            .iter()
            .map(|p| signed::packet_digest(|d| signer.digest(d), p.sqn, p.fragment, &p.data))
            .collect();
        let tsi = self.config.tsi;
        let next_list = block.list_sqn.wrapping_add(1 + block.packets.len() as u32);
        let list = signed::List {
            prev: self.last_list.unwrap_or(block.list_sqn),
            end,
            unix_ms: signer.unix_ms(),
            key: signer.chain_key(tsi, block.list_sqn),
            next: if end {
                [0; signed::KEY_LEN]
            } else {
                signed::commitment(|d| signer.digest(d), &signer.chain_key(tsi, next_list))
            },
            digests,
            // The end list signs the manifest (with its SHA-256, if set by now).
            manifest: if end {
                self.config.manifest.clone()
            } else {
                None
            },
        };
        let data = signed::encode_list(signer.as_ref(), tsi, block.list_sqn, &list);
        self.last_list = Some(block.list_sqn);
        self.stats.signed_lists += 1;
        self.txw.push(TxPacket {
            sqn: block.list_sqn,
            data,
            fragment: None,
            sent_at: None,
            repaired_at: None,
            hold_from: None,
            naks: 0,
        });
        for p in block.packets {
            self.txw.push(p);
        }
    }
}
