//! A vector of slots reused after removal, so ids stay small and stable.

/// Values by a small integer id, reused once removed.
#[derive(Debug)]
pub(super) struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for Slab<T> {
    fn default() -> Slab<T> {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    /// Stores `v`; returns its id.
    pub(super) fn insert(&mut self, v: T) -> usize {
        match self.free.pop() {
            Some(id) => {
                self.items[id] = Some(v);
                id
            }
            None => {
                self.items.push(Some(v));
                self.items.len() - 1
            }
        }
    }

    /// Takes the value `id` names, if it is still there.
    pub(super) fn remove(&mut self, id: usize) -> Option<T> {
        let v = self.items.get_mut(id)?.take();
        if v.is_some() {
            self.free.push(id);
        }
        v
    }
}
