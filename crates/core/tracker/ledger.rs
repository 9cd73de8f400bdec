//! The ledger of incidents, below the machines that change them: the open
//! ones (by kind and subject, see `open.rs`), when each host's are next
//! due to end on quiet, what ended and what was forgotten since the
//! caller last took them, and the bounds on what a stranger can grow (the
//! incident quiet longest evicted to make room). How an incident ends is
//! decided here, for every kind alike (the kind says what waits, see
//! [`IncidentKind::held_by`]); what its lines do is its machine's.

use super::decision::{AlertKind, Decision};
use super::kind::Incident;
use super::open::{Open, OpenKey};
use super::settings::Settings;
use super::terms::{IncidentKind, Resolution};
use crate::keyed::HostMap;
use crate::time::Micros;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Ledger {
    pub(super) settings: Settings,
    /// Open incidents by kind and subject. The store keeps them as
    /// incidents (and an index of the open ones), written when they change.
    pub(super) open: Open,
    /// Per host: none of its open incidents resolves on quiet before this
    /// (derived; may be early, never late).
    due: HostMap<String, Micros>,
    /// Resolved and not yet taken by the caller.
    pub(super) resolved: Vec<Incident>,
    /// Forgotten and not yet taken by the caller.
    pub(super) forgotten_incidents: Vec<Incident>,
    /// Incidents closed to stay within the node bounds
    /// ([`Resolution::Evicted`]).
    pub(super) evicted: u64,
    /// Of those, the ones below the threshold and never announced: taken
    /// out of the history altogether.
    pub(super) forgotten: u64,
}

/// The clock an incident's quiet is measured on: its host's ("" for lines
/// that came with no host).
pub(super) fn host_key(i: &Incident) -> String {
    i.host.clone().unwrap_or_default()
}

impl Ledger {
    pub(super) fn new(settings: Settings, open: Open, evicted: u64, forgotten: u64) -> Self {
        Self {
            settings,
            open,
            evicted,
            forgotten,
            ..Self::default()
        }
    }

    /// Whether an incident of the node that holds `i` open is open (see
    /// [`IncidentKind::held_by`]).
    pub(super) fn held(&self, i: &Incident) -> bool {
        i.kind()
            .held_by()
            .is_some_and(|k| self.open.contains_key(&OpenKey::new(k, &i.node)))
    }

    /// When an open incident is due to resolve on quiet (see
    /// [`Incident::due`]); never while another holds it.
    pub(super) fn due_of(&self, i: &Incident) -> Option<Micros> {
        if self.held(i) {
            return None;
        }
        i.due(self.settings.resolve_after)
    }

    pub(super) fn due_for(&self, host: &str) -> Option<Micros> {
        self.due.get(host).copied()
    }

    pub(super) fn due_hosts(&self) -> impl Iterator<Item = (&str, Micros)> {
        self.due.iter().map(|(h, d)| (h.as_str(), *d))
    }

    pub(super) fn recompute_due(&mut self) {
        let mut due: HostMap<String, Micros> = HostMap::new();
        for i in self.open.values() {
            if let Some(at) = self.due_of(i) {
                let host = i.host.as_deref().unwrap_or_default();
                let d = due.get_or_insert_with(host, || host.to_string(), || Micros::MAX);
                *d = (*d).min(at);
            }
        }
        self.due = due;
    }

    /// `host` has an incident due by `at`.
    pub(super) fn due_by(&mut self, host: String, at: Micros) {
        match self.due.get_mut(&host) {
            Some(d) => *d = (*d).min(at),
            None => {
                self.due.insert(host, at);
            }
        }
    }

    pub(super) fn update_due(&mut self, key: &OpenKey) {
        if let Some(inc) = self.open.get(key) {
            if let Some(due) = self.due_of(inc) {
                self.due_by(host_key(inc), due);
            }
        }
    }

    /// `host`'s due time from its open incidents again.
    pub(super) fn settle_due(&mut self, host: &str) {
        match self
            .open
            .of_host(host)
            .filter_map(|(_, i)| self.due_of(i))
            .min()
        {
            Some(d) => self.due.insert(host.to_string(), d),
            None => self.due.remove(host),
        };
    }

    pub(super) fn forget_due(&mut self, host: &str) {
        self.due.remove(host);
    }

    /// `host`'s open incidents due to end by `now`.
    pub(super) fn quiet_by(&self, host: &str, now: Micros) -> Vec<OpenKey> {
        self.open
            .of_host(host)
            .filter(|(_, i)| self.due_of(i).is_some_and(|d| now >= d))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Ends incident `key` if it has been quiet long enough by `now`
    /// (resolved at its due time), or judges it then when it waits for
    /// something (a kubelet-down incident whose exit no restart followed
    /// is failed, and stays open).
    pub(super) fn expire(&mut self, key: &OpenKey, now: Micros, out: &mut Vec<Decision>) {
        let Some(due) = self.open.get(key).and_then(|i| self.due_of(i)) else {
            return;
        };
        let Some(inc) = self.open.get_mut(key) else {
            return;
        };
        if now < due {
            return;
        }
        if inc.detail.judged_at_due(due) {
            out.push(Decision::UpdateIncident { id: inc.id.clone() });
            self.gave_up(key, due, out);
        } else {
            self.resolve(key, due, Resolution::Quiet, out);
        }
    }

    /// Ends incident `key` at `at`; the incidents it held open count their
    /// quiet from its end.
    pub(super) fn resolve(
        &mut self,
        key: &OpenKey,
        at: Micros,
        how: Resolution,
        out: &mut Vec<Decision>,
    ) {
        let Some(mut inc) = self.open.remove(key) else {
            return;
        };
        inc.resolved_at = Some(at.max(inc.last_signal_at));
        inc.resolution = Some(how);
        out.push(Decision::ResolveIncident { id: inc.id.clone() });
        if inc.over_threshold_at.is_some() && self.settings.send_resolved {
            out.push(inc.raise(AlertKind::Resolved, at));
        }
        let kind = inc.kind();
        let held: Vec<OpenKey> = IncidentKind::ALL
            .iter()
            .filter(|k| k.held_by() == Some(kind))
            .map(|k| OpenKey::new(*k, &inc.node))
            .collect();
        let end = inc.resolved_at.unwrap_or(at);
        self.resolved.push(inc);
        for key in held {
            if let Some(i) = self.open.get_mut(&key) {
                i.detail.released(end);
                self.update_due(&key);
            }
        }
    }

    /// Incident `key` is past hope (systemd gave up on the kubelet):
    /// alerted at once, a second time if it already raised one.
    pub(super) fn gave_up(&mut self, key: &OpenKey, at: Micros, out: &mut Vec<Decision>) {
        let Some(inc) = self.open.get_mut(key) else {
            return;
        };
        let kind = if inc.over_threshold_at.is_none() {
            inc.over_threshold_at = Some(at);
            AlertKind::Opened
        } else {
            AlertKind::Repeat
        };
        inc.last_alert_at = Some(at);
        out.push(inc.raise(kind, at));
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

    fn evict(&mut self, key: &OpenKey, at: Micros, out: &mut Vec<Decision>) {
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
