//! The bounds on what a stranger can grow: nodes per host and in all,
//! the oldest quiet node evicted to make room.

use super::open::OpenKey;
use super::{Decision, Incident, Resolution, Tracker, unregister};
use crate::time::Micros;

impl Tracker {
    /// Forgets the records of the hosts with no entry since `since` and no
    /// open incident (their per-host record, memory and store alike, through
    /// [`Tracker::take_dirty_origins`]), and says which: every host left is
    /// one active lately. A host seen again
    /// later starts as a new one. With `[fleet] max_hosts`, which counts
    /// only the hosts active lately, this keeps a fleet whose nodes come and
    /// go under new names (or a stranger uploading new names every day)
    /// from growing the records for ever.
    pub fn forget_idle_hosts(&mut self, since: Micros) -> Vec<String> {
        let idle: Vec<String> = self
            .origins
            .iter()
            .filter(|(h, o)| {
                o.last_entry_at.is_none_or(|t| t < since) && self.open.host_len(h) == 0
            })
            .map(|(h, _)| h.clone())
            .collect();
        for h in &idle {
            if let Some((node, _)) = self.origins.remove(h).and_then(|o| o.registration) {
                unregister(&mut self.registrations, &node, h);
            }
            self.moved.remove(h);
            self.due.remove(h);
            self.dirty_origins.insert(h.clone());
        }
        idle
    }

    /// Incidents closed to stay within the node bounds, so far.
    #[must_use]
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Of the evicted, those taken out of the history (below the threshold,
    /// never announced), so far.
    #[must_use]
    pub fn forgotten(&self) -> u64 {
        self.forgotten
    }

    /// Incidents forgotten since the last call (to take out of the store).
    pub fn take_forgotten(&mut self) -> Vec<Incident> {
        std::mem::take(&mut self.forgotten_incidents)
    }

    /// Before a new incident of `host` opens: closes the incident quiet
    /// longest of that host when it has `max_nodes_per_host` open, and the
    /// one quiet longest of all when `max_nodes` are open, so what any
    /// writer can grow stays bounded (the kubelet's own node is the one in
    /// trouble now, never the one evicted).
    pub(super) fn make_room(&mut self, host: &str, at: Micros, out: &mut Vec<Decision>) {
        // From the index ordered by quiet time, with the hosts' counts kept
        // (see `open.rs`): O(log n), however many are open.
        let per_host = self.settings.max_nodes_per_host.max(1);
        if self.open.host_len(host) >= per_host {
            if let Some(n) = self.open.quiet_longest(Some(host)) {
                self.evict(&n, at, out);
            }
        }
        if self.open.len() >= self.settings.max_nodes.max(1) {
            if let Some(n) = self.open.quiet_longest(None) {
                self.evict(&n, at, out);
            }
        }
    }

    pub(super) fn evict(&mut self, key: &OpenKey, at: Micros, out: &mut Vec<Decision>) {
        let Some(mut inc) = self.open.remove(key) else {
            return;
        };
        self.evicted += 1;
        if inc.over_threshold_at.is_none() && !inc.announced && inc.alerted_at.is_none() {
            // Below the threshold and never said: a name in a flood, kept
            // neither in memory nor in the history (so what a writer can
            // grow stays bounded there too); counted.
            self.forgotten += 1;
            out.push(Decision::ForgetIncident { id: inc.id.clone() });
            self.forgotten_incidents.push(inc);
            return;
        }
        inc.resolved_at = Some(at.max(inc.last_signal_at));
        inc.resolution = Some(Resolution::Evicted);
        out.push(Decision::ResolveIncident { id: inc.id.clone() });
        // The host's due time may now be early, which is allowed.
        self.resolved.push(inc);
    }
}
