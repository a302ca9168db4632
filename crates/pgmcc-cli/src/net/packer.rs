//! Cuts an input stream into full-packet messages for `pgmcc send`.
//!
//! Reads return whatever the input had (a pipe gives 64 KiB at a time), and cutting each
//! read on its own leaves a short packet at the end of every read: 2% of the packets at
//! half size, each taking a whole slot in a packet-counted queue. The packer carries the
//! rest of a read over to the next one, so every message but the last fills its packet;
//! `feed::send_input` flushes the rest when the input ends or pauses.

/// Packet-sized messages from a stream of reads.
#[derive(Debug)]
pub(crate) struct Packer {
    /// Bytes of each message after the first.
    size: usize,
    /// Bytes of the first message (the stream's first packet also carries OPT_SYN).
    first: usize,
    /// True once a message was cut.
    started: bool,
    /// The bytes of the next message, fewer than its size.
    carry: Vec<u8>,
}

impl Packer {
    /// A packer cutting `first` bytes for the first message and `size` for the rest.
    pub(crate) fn new(first: usize, size: usize) -> Packer {
        Packer {
            size: size.max(1),
            first: first.max(1),
            started: false,
            carry: Vec::new(),
        }
    }

    fn next_size(&self) -> usize {
        if self.started {
            self.size
        } else {
            self.first
        }
    }

    /// Takes one read; returns the messages it completed, in order.
    pub(crate) fn push(&mut self, mut block: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while !block.is_empty() {
            let size = self.next_size();
            let take = (size - self.carry.len()).min(block.len());
            let (head, rest) = block.split_at(take);
            block = rest;
            if self.carry.is_empty() && take == size {
                out.push(head.to_vec());
            } else {
                self.carry.extend_from_slice(head);
                if self.carry.len() < size {
                    break;
                }
                out.push(std::mem::take(&mut self.carry));
            }
            self.started = true;
        }
        out
    }

    /// True when bytes wait for more input to fill their packet.
    pub(crate) fn has_rest(&self) -> bool {
        !self.carry.is_empty()
    }

    /// The bytes waiting, as a short message (the input ended or paused).
    pub(crate) fn flush(&mut self) -> Option<Vec<u8>> {
        if self.carry.is_empty() {
            return None;
        }
        self.started = true;
        Some(std::mem::take(&mut self.carry))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_that_do_not_divide_into_packets_still_give_full_packets() {
        let mut p = Packer::new(6, 10);
        let data: Vec<u8> = (0..250).collect();
        let mut out = Vec::new();
        // Reads of 7, 7 and 6 bytes, as a pipe might give.
        for pair in data.chunks(20) {
            for c in pair.chunks(7) {
                out.extend(p.push(c));
            }
        }
        out.extend(p.flush());
        assert_eq!(out[0].len(), 6, "the first message fits the first packet");
        let last = out.len() - 1;
        assert!(out[1..last].iter().all(|m| m.len() == 10));
        assert_eq!(out[last].len(), (250 - 6) % 10);
        assert_eq!(out.concat(), data, "nothing lost, nothing reordered");
        assert!(p.flush().is_none() && !p.has_rest());
    }

    #[test]
    fn a_pause_flushes_what_waits_and_cutting_goes_on_from_there() {
        let mut p = Packer::new(4, 4);
        assert!(p.push(b"ab").is_empty());
        assert!(p.has_rest());
        assert_eq!(p.flush(), Some(b"ab".to_vec()));
        assert_eq!(p.push(b"cdefghi"), vec![b"cdef".to_vec()]);
        assert_eq!(p.flush(), Some(b"ghi".to_vec()));
    }
}
