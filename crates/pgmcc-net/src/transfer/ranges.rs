//! Byte ranges of a stream held: what a receiver has of a stream its source sends in
//! several passes.

/// Byte ranges held, half-open, sorted, disjoint and not touching.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ranges(Vec<(u64, u64)>);

impl Ranges {
    /// Adds `start..end` (merged with what it overlaps or touches).
    pub fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let (mut s, mut e) = (start, end);
        self.0.retain(|&(a, b)| {
            if b < s || a > e {
                true
            } else {
                s = s.min(a);
                e = e.max(b);
                false
            }
        });
        let at = self.0.partition_point(|&(a, _)| a < s);
        self.0.insert(at, (s, e));
    }

    /// Whether `start..end` is all held.
    pub fn contains(&self, start: u64, end: u64) -> bool {
        let at = self.0.partition_point(|&(a, _)| a <= start);
        at > 0 && self.0.get(at - 1).is_some_and(|&(_, b)| b >= end)
    }

    /// Whether `0..size` is all held.
    pub fn covers(&self, size: u64) -> bool {
        size == 0 || self.0.first().is_some_and(|&(a, b)| a == 0 && b >= size)
    }

    /// Bytes held.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|(a, b)| b - a).sum()
    }

    /// "bytes 0-999 and 5000-9999" (inclusive ends, as people read ranges), or "nothing".
    pub fn describe(&self) -> String {
        if self.0.is_empty() {
            return "nothing".into();
        }
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(a, b)| format!("{a}-{}", b - 1))
            .collect();
        let n = parts.len();
        let list = match n {
            1 => parts.join(""),
            _ => format!(
                "{} and {}",
                parts.get(..n - 1).unwrap_or_default().join(", "),
                parts.last().map_or("", String::as_str)
            ),
        };
        format!("bytes {list}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_cover() {
        let mut r = Ranges::default();
        assert!(!r.covers(10) && r.covers(0));
        assert_eq!(r.describe(), "nothing");
        r.insert(60, 100);
        r.insert(0, 20);
        r.insert(30, 40);
        assert_eq!(r.0, vec![(0, 20), (30, 40), (60, 100)]);
        assert_eq!(r.total(), 70);
        assert_eq!(r.describe(), "bytes 0-19, 30-39 and 60-99");
        assert!(!r.covers(100));
        assert!(r.contains(0, 20) && r.contains(65, 70) && r.contains(30, 30));
        assert!(!r.contains(15, 25) && !r.contains(40, 41) && !r.contains(100, 101));
        // Touching ranges merge; an overlapping one swallows several.
        r.insert(20, 30);
        assert_eq!(r.0, vec![(0, 40), (60, 100)]);
        r.insert(35, 70);
        assert_eq!(r.0, vec![(0, 100)]);
        assert!(r.covers(100) && !r.covers(101));
        r.insert(5, 5);
        assert_eq!(r.0, vec![(0, 100)]);
    }
}
