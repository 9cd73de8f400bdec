//! The per-node retry counters of `status` and the metrics: the retries
//! counted since the service started, per node in trouble.

use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Default)]
pub(super) struct RetryCounts {
    /// Retries counted per incident so far.
    known: HashMap<String, u64>,
    by_node: BTreeMap<String, u64>,
}

impl RetryCounts {
    /// Starts from the open incidents' counts (id, retries): what they
    /// counted before the start is not counted again.
    pub(super) fn new(open: impl Iterator<Item = (String, u64)>) -> Self {
        Self {
            known: open.collect(),
            by_node: BTreeMap::new(),
        }
    }

    /// An incident taken out of the history again.
    pub(super) fn forget(&mut self, id: &str, node: &str) {
        self.known.remove(id);
        self.by_node.remove(node);
    }

    /// An incident as committed: its new retries count toward its node.
    pub(super) fn count(&mut self, id: &str, node: &str, retries: u64, resolved: bool) {
        let before = self.known.get(id).copied().unwrap_or(0);
        if retries > before {
            *self.by_node.entry(node.to_string()).or_default() += retries - before;
        }
        if resolved {
            self.known.remove(id);
            // A node's series goes with its last open incident, so the
            // series stay as many as the nodes in trouble.
            self.by_node.remove(node);
        } else {
            self.known.insert(id.to_string(), retries);
        }
    }

    pub(super) fn by_node(&self) -> &BTreeMap<String, u64> {
        &self.by_node
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_count_once_per_node_until_the_incident_ends() {
        let mut r = RetryCounts::new([("a".to_string(), 5)].into_iter());
        // Counted before the start: only what comes after counts.
        r.count("a", "n1", 7, false);
        r.count("b", "n1", 1, false);
        r.count("c", "n2", 3, false);
        r.count("c", "n2", 3, false);
        assert_eq!(
            r.by_node().iter().collect::<Vec<_>>(),
            [(&"n1".to_string(), &3), (&"n2".to_string(), &3)]
        );
        r.count("c", "n2", 4, true);
        assert!(!r.by_node().contains_key("n2"));
        r.forget("a", "n1");
        assert!(r.by_node().is_empty());
        // Forgotten: counted from zero if it comes back.
        r.count("a", "n1", 2, false);
        assert_eq!(r.by_node()["n1"], 2);
    }
}
