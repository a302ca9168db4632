//! Routes: shortest paths by delay, unicast next hops, and multicast trees from a source to
//! a group's members (cached, recomputed when membership or links change).

use super::*;

impl Sim {
    /// Dijkstra by (propagation delay, hops), ties broken by link id. With `reverse`, distances
    /// are towards `root` over reversed links and the result is, for every node, its first link
    /// towards `root`; otherwise, for every node, the last link on the path from `root`.
    pub(super) fn shortest_paths(&self, root: NodeId, reverse: bool) -> Vec<Option<LinkId>> {
        let n = self.nodes.len();
        let mut dist: Vec<Option<(u64, u32, LinkId)>> = vec![None; n];
        let mut via: Vec<Option<LinkId>> = vec![None; n];
        let mut heap = BinaryHeap::new();
        dist[root] = Some((0, 0, 0));
        heap.push(Reverse((0u64, 0u32, 0usize, root)));
        while let Some(Reverse((d, h, lid, u))) = heap.pop() {
            if dist[u].is_some_and(|best| best < (d, h, lid)) {
                continue;
            }
            let edges: &[LinkId] = if reverse {
                &self.nodes[u].in_links
            } else {
                &self.nodes[u].out_links
            };
            for &l in edges {
                let v = if reverse {
                    self.links[l].from
                } else {
                    self.links[l].to
                };
                let nd = (d + self.links[l].config.delay.as_nanos() as u64, h + 1, l);
                if dist[v].is_none_or(|best| nd < best) {
                    dist[v] = Some(nd);
                    via[v] = Some(l);
                    heap.push(Reverse((nd.0, nd.1, nd.2, v)));
                }
            }
        }
        via
    }

    /// The first link from `at` towards `dst` (routes towards each destination are computed
    /// once, on first use: memory grows with the number of unicast destinations, not n^2).
    pub(super) fn next_hop(&mut self, at: NodeId, dst: NodeId) -> Option<LinkId> {
        if self.toward.len() < self.nodes.len() {
            self.toward.resize(self.nodes.len(), None);
        }
        if self.toward[dst].is_none() {
            self.toward[dst] = Some(self.shortest_paths(dst, true));
        }
        self.toward[dst].as_ref().and_then(|t| t[at])
    }

    /// Outgoing links at `at` for multicast from `src` to `group`: the links of the union of
    /// shortest paths from `src` to every member that leave `at`. Computed for the whole tree
    /// at once and cached until membership or topology changes.
    pub(super) fn mcast_links(&mut self, at: NodeId, src: NodeId, group: IpAddr) -> Vec<LinkId> {
        let t = self.mcast_tree(src, group);
        self.mcast_trees[t].1.get(at).cloned().unwrap_or_default()
    }

    /// The index in `mcast_trees` of the tree for (`src`, `group`), computed if need be.
    pub(super) fn mcast_tree(&mut self, src: NodeId, group: IpAddr) -> usize {
        if let Some(i) = self
            .mcast_trees
            .iter()
            .position(|(k, _)| *k == (src, group))
        {
            return i;
        }
        if !self.tree.contains_key(&src) {
            let t = self.shortest_paths(src, false);
            self.tree.insert(src, t);
        }
        let mut per_node: Vec<Vec<LinkId>> = vec![Vec::new(); self.nodes.len()];
        if let Some(parent) = self.tree.get(&src) {
            for m in 0..self.nodes.len() {
                if m == src || !self.nodes[m].groups.contains(&group) {
                    continue;
                }
                // Walk from the member back to the source, marking tree links.
                let mut cur = m;
                let mut guard = 0;
                while cur != src && guard <= self.nodes.len() {
                    let Some(l) = parent[cur] else {
                        break;
                    };
                    let from = self.links[l].from;
                    if per_node[from].contains(&l) {
                        break; // the rest of this path is already marked
                    }
                    per_node[from].push(l);
                    cur = from;
                    guard += 1;
                }
            }
        }
        for v in &mut per_node {
            v.sort_unstable();
        }
        self.mcast_trees.push(((src, group), per_node));
        self.mcast_trees.len() - 1
    }

    pub(super) fn routes_changed(&mut self) {
        self.toward.clear();
        self.tree.clear();
        self.mcast_trees.clear();
    }

    /// The link in the opposite direction of `l`, if there is one.
    pub(super) fn reverse_link(&self, l: LinkId) -> Option<LinkId> {
        let (from, to) = (self.links[l].from, self.links[l].to);
        self.nodes[to]
            .out_links
            .iter()
            .copied()
            .find(|&r| self.links[r].to == from)
    }
}
