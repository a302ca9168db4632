//! The simulator's event queue: a binary heap ordered by one integer key per event, which
//! keeps a *run* of events pushed for one instant as one heap entry.
//!
//! Why: a multicast packet leaving a hub is copied onto every outgoing link at once, and
//! each copy schedules its own "finished serialising" event for the same instant (links of
//! one rate), then its own "arrived" event (links of one delay), the two kinds interleaved.
//! With 10,000 receivers that was 20,000 heap pushes and pops per packet, a fifth of a
//! run's time.
//!
//! Keys are unique and grow with insertion order within an instant and class (the top 65
//! bits, see `sim.rs`). Events pushed for one instant and class, one after another, have
//! nothing between them in the total order but each other, so they can sit in the
//! heap as one entry and be handed out one at a time: the order in which events come out
//! is exactly that of a plain heap, only cheaper. A run stays open (events pushed for its
//! instant join it) until its first event is taken or more than a few instants are open;
//! a closed run is one heap entry.

use std::collections::BinaryHeap;

/// The time-and-class part of a key (its top 65 bits): events of one run share it.
const INSTANT_MASK: u128 = !((1u128 << 63) - 1);

/// At most this many runs are open at once; the oldest goes into the heap to make room.
const OPEN_RUNS: usize = 4;

/// At most this many emptied run buffers are kept for reuse.
const SPARE_RUNS: usize = 64;

/// One heap entry: a single event, or a run.
#[derive(Debug)]
struct Entry<K> {
    /// The key of the (next) event.
    key: u128,
    run: Run<K>,
}

#[derive(Debug)]
enum Run<K> {
    One(K),
    /// Events with their keys, the next one *last* (so that taking one is a `pop`).
    Many(Vec<(u128, K)>),
}

impl<K> PartialEq for Entry<K> {
    fn eq(&self, other: &Entry<K>) -> bool {
        self.key == other.key
    }
}

impl<K> Eq for Entry<K> {}

impl<K> PartialOrd for Entry<K> {
    fn partial_cmp(&self, other: &Entry<K>) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Entry<K> {
    /// Reversed: `BinaryHeap` pops the greatest, and the smallest key must come first.
    fn cmp(&self, other: &Entry<K>) -> std::cmp::Ordering {
        other.key.cmp(&self.key)
    }
}

/// Where [`EventQueue::pop`] finds the smallest key.
enum Source {
    Taking,
    Open(usize),
    Heap,
}

/// Events ordered by a unique `u128` key, smallest first (see the module docs).
#[derive(Debug)]
pub(crate) struct EventQueue<K> {
    heap: BinaryHeap<Entry<K>>,
    /// Runs being pushed, in push order, each non-empty and of one instant and class.
    open: Vec<Vec<(u128, K)>>,
    /// The run being taken, next event last. Kept out of the heap, as its next event is
    /// usually also the queue's next one.
    taking: Vec<(u128, K)>,
    /// Emptied buffers, for the next runs.
    spare: Vec<Vec<(u128, K)>>,
}

impl<K> Default for EventQueue<K> {
    fn default() -> EventQueue<K> {
        EventQueue {
            heap: BinaryHeap::new(),
            open: Vec::new(),
            taking: Vec::new(),
            spare: Vec::new(),
        }
    }
}

impl<K> EventQueue<K> {
    /// Adds an event. Keys must be unique and, within one instant and class (top 65 bits),
    /// grow with each push.
    pub(crate) fn push(&mut self, key: u128, kind: K) {
        let instant = key & INSTANT_MASK;
        if let Some(i) = self
            .open
            .iter()
            .position(|r| r.first().is_some_and(|(k, _)| k & INSTANT_MASK == instant))
        {
            // Most recently used last: the least recently used run is closed first.
            let last = self.open.len() - 1;
            self.open.swap(i, last);
            self.open[last].push((key, kind));
            return;
        }
        if self.open.len() == OPEN_RUNS {
            let oldest = self.open.remove(0);
            self.close(oldest);
        }
        let mut run = self.spare.pop().unwrap_or_default();
        run.push((key, kind));
        self.open.push(run);
    }

    /// Moves an open run into the heap.
    fn close(&mut self, mut run: Vec<(u128, K)>) {
        if run.len() == 1 {
            if let Some((key, kind)) = run.pop() {
                self.heap.push(Entry {
                    key,
                    run: Run::One(kind),
                });
            }
            self.recycle(run);
        } else if let Some(&(key, _)) = run.first() {
            run.reverse();
            self.heap.push(Entry {
                key,
                run: Run::Many(run),
            });
        }
    }

    fn recycle(&mut self, run: Vec<(u128, K)>) {
        if self.spare.len() < SPARE_RUNS && run.capacity() > 0 {
            self.spare.push(run);
        }
    }

    /// The smallest key queued.
    pub(crate) fn peek_key(&self) -> Option<u128> {
        let open = self.open.iter().filter_map(|r| r.first().map(|(k, _)| *k));
        let taking = self.taking.last().map(|(k, _)| *k);
        let heap = self.heap.peek().map(|e| e.key);
        open.chain(taking).chain(heap).min()
    }

    /// Takes the event with the smallest key.
    pub(crate) fn pop(&mut self) -> Option<(u128, K)> {
        // Where the smallest key is: the run being taken, an open run or the heap.
        let mut best = self.taking.last().map(|(k, _)| *k);
        let mut from = Source::Taking;
        for (i, r) in self.open.iter().enumerate() {
            if let Some(&(k, _)) = r.first() {
                if best.is_none_or(|b| k < b) {
                    (best, from) = (Some(k), Source::Open(i));
                }
            }
        }
        if let Some(e) = self.heap.peek() {
            if best.is_none_or(|b| e.key < b) {
                from = Source::Heap;
            }
        }
        match from {
            Source::Taking => {}
            Source::Open(i) => {
                let mut run = self.open.remove(i);
                run.reverse();
                self.take_run(run);
            }
            Source::Heap => {
                let e = self.heap.pop()?;
                match e.run {
                    Run::One(kind) => {
                        return Some((e.key, kind));
                    }
                    Run::Many(run) => self.take_run(run),
                }
            }
        }
        self.taking.pop()
    }

    /// Makes `run` (next event last) the run being taken; the one interrupted (if any)
    /// goes back in the heap.
    fn take_run(&mut self, run: Vec<(u128, K)>) {
        let rest = std::mem::replace(&mut self.taking, run);
        if let Some(&(key, _)) = rest.last() {
            self.heap.push(Entry {
                key,
                run: Run::Many(rest),
            });
        } else {
            self.recycle(rest);
        }
    }

    /// Events queued (counted for the tests; the simulator never asks).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let heap: usize = self
            .heap
            .iter()
            .map(|e| match &e.run {
                Run::One(_) => 1,
                Run::Many(run) => run.len(),
            })
            .sum();
        heap + self.open.iter().map(Vec::len).sum::<usize>() + self.taking.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgmcc::rng::Rng;
    use std::cmp::Reverse;

    fn key(t: u64, class: u8, seq: u64) -> u128 {
        (u128::from(t) << 64) | (u128::from(class & 1) << 63) | u128::from(seq)
    }

    #[test]
    fn a_run_comes_out_in_order_and_others_interleave_by_key() {
        let mut q = EventQueue::default();
        // A run of three at t = 10, then one event at t = 5 and one at t = 10 after them.
        q.push(key(10, 1, 1), "a");
        q.push(key(10, 1, 2), "b");
        q.push(key(10, 1, 3), "c");
        q.push(key(5, 1, 4), "early");
        q.push(key(10, 0, 5), "class 0 first");
        assert_eq!(q.len(), 5);
        assert_eq!(q.peek_key(), Some(key(5, 1, 4)));
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, k)| k)).collect();
        assert_eq!(order, ["early", "class 0 first", "a", "b", "c"]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn an_event_pushed_while_a_run_is_taken_goes_before_the_rest_if_its_key_is_smaller() {
        let mut q = EventQueue::default();
        for (i, name) in ["a", "b", "c", "d"].into_iter().enumerate() {
            q.push(key(10, 1, 1 + i as u64), name);
        }
        assert_eq!(q.pop().map(|(_, k)| k), Some("a"));
        // Class 0 at the same instant sorts before the run's remaining events.
        q.push(key(10, 0, 9), "join");
        // A second run at a later time, then one in between.
        q.push(key(20, 1, 10), "x");
        q.push(key(20, 1, 11), "y");
        assert_eq!(q.pop().map(|(_, k)| k), Some("join"));
        assert_eq!(q.pop().map(|(_, k)| k), Some("b"));
        q.push(key(10, 1, 12), "after the run");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, k)| k)).collect();
        assert_eq!(order, ["c", "d", "after the run", "x", "y"]);
    }

    #[test]
    fn two_kinds_interleaved_at_two_instants_make_two_runs() {
        let mut q = EventQueue::default();
        for i in 0..4u64 {
            q.push(key(30, 1, 1 + 2 * i), ("tx", i));
            q.push(key(20, 1, 2 + 2 * i), ("arrive", i));
        }
        assert_eq!(q.len(), 8);
        assert_eq!(q.pop(), Some((key(20, 1, 2), ("arrive", 0))));
        assert_eq!(q.heap.len(), 0, "nothing went into the heap");
        assert_eq!(q.open.len(), 1, "the other run is still open");
        let rest: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, k)| k)).collect();
        let want = [
            ("arrive", 1),
            ("arrive", 2),
            ("arrive", 3),
            ("tx", 0),
            ("tx", 1),
            ("tx", 2),
            ("tx", 3),
        ];
        assert_eq!(rest, want);
    }

    /// Random pushes and pops, with many runs and interruptions, come out exactly as from a
    /// plain heap of keys.
    #[test]
    fn the_order_is_that_of_a_plain_heap() {
        for seed in 1..=50 {
            let mut rng = Rng::new(seed);
            let mut q = EventQueue::default();
            let mut plain = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = 0u64;
            for _ in 0..2000 {
                match rng.below(4) {
                    0 | 1 => {
                        // A burst at one instant (a run), or at mixed instants.
                        let t = now + rng.below(5);
                        let same = rng.below(2) == 0;
                        for _ in 0..1 + rng.below(6) {
                            seq += 1;
                            let t = if same { t } else { now + rng.below(5) };
                            let class = u8::from(rng.below(8) != 0);
                            let k = key(t, class, seq);
                            q.push(k, k);
                            plain.push(Reverse(k));
                        }
                    }
                    _ => {
                        let got = q.pop();
                        let want = plain.pop().map(|Reverse(k)| (k, k));
                        assert_eq!(got, want, "seed {seed}");
                        if let Some((k, _)) = got {
                            now = (k >> 64) as u64;
                        }
                    }
                }
                assert_eq!(q.len(), plain.len());
                assert_eq!(q.peek_key(), plain.peek().map(|Reverse(k)| *k));
            }
            while let Some(Reverse(k)) = plain.pop() {
                assert_eq!(q.pop(), Some((k, k)), "seed {seed}");
            }
            assert_eq!(q.pop(), None);
        }
    }
}
