//! The open incidents, kept by key, with the indexes the tracker asks of
//! them on every line: by id, by host, and by quiet time (of all, and of
//! each host). So making room for a new incident, finding one by id and
//! moving one host's clock cost O(log n) in the open incidents and hosts,
//! never a pass over all of them.
//!
//! Architecture invariant: an open incident's key, id, host, kind and
//! opening never change, and its `last_signal_at` only grows (every change
//! is `max`). The quiet indexes rely on it: an entry is filed under the
//! incident's last signal when it was filed (never later than its own), and
//! one found stale at the front is filed again under its current one, so
//! each change costs at most one refiling, when it matters.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::incident::incident_id;
use super::kind::Incident;
use super::terms::IncidentKind;
use crate::time::Micros;

/// Where an open incident is kept: its kind and its subject, the node (a
/// node has at most one open incident of each kind) or, for a host-silent
/// incident, its host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenKey {
    pub(crate) kind: IncidentKind,
    pub(crate) subject: String,
}

impl OpenKey {
    pub(crate) fn new(kind: IncidentKind, subject: &str) -> Self {
        Self {
            kind,
            subject: subject.to_string(),
        }
    }

    /// Where an open incident is kept.
    pub(crate) fn of(i: &Incident) -> Self {
        let subject = match i.host.as_deref() {
            Some(host) if i.kind().kept_by_host() => host,
            _ => &i.node,
        };
        Self::new(i.kind(), subject)
    }

    /// What came before the subject in the string the key was (states
    /// written before keys were typed, and the order below).
    fn prefix(&self) -> &'static str {
        self.kind.key_prefix()
    }

    /// The id of the incident kept here that opens at `at`.
    pub(crate) fn incident_id(&self, at: Micros) -> String {
        incident_id(&[self.prefix(), &self.subject], at)
    }

    fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        self.prefix().bytes().chain(self.subject.bytes())
    }
}

/// Ordered as the strings the keys were (`w1` for a node-status
/// incident, `kubelet-down:w1`), without making them: a tie of quiet
/// time is broken by the key, and evictions keep the order they always
/// had.
impl Ord for OpenKey {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.bytes().cmp(o.bytes())
    }
}

impl PartialOrd for OpenKey {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl std::fmt::Display for OpenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.prefix(), self.subject)
    }
}

/// Where an incident stands in a quiet index: its last signal as filed,
/// its opening, its key (the order evictions have always used).
type QuietKey = (Micros, Micros, OpenKey);

#[derive(Debug, Clone)]
struct Entry {
    inc: Incident,
    /// The last signal it is filed under, in all and in its host's.
    filed_all: Micros,
    filed_host: Micros,
}

#[derive(Debug, Clone, Default)]
struct HostIndex {
    keys: BTreeSet<OpenKey>,
    quiet: BTreeSet<QuietKey>,
}

/// The open incidents by key (see the module's doc); read and written as
/// the map of them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(
    from = "BTreeMap<String, Incident>",
    into = "BTreeMap<String, Incident>"
)]
pub(super) struct Open {
    map: BTreeMap<OpenKey, Entry>,
    by_id: BTreeMap<String, OpenKey>,
    by_host: BTreeMap<String, HostIndex>,
    /// Of all hosts; endpoint incidents are in none (never evicted).
    quiet: BTreeSet<QuietKey>,
}

impl PartialEq for Open {
    fn eq(&self, o: &Self) -> bool {
        self.map.len() == o.map.len()
            && self
                .map
                .iter()
                .zip(&o.map)
                .all(|((a, x), (b, y))| a == b && x.inc == y.inc)
    }
}
impl Eq for Open {}

/// A state written before the open incidents were kept apart holds them
/// by the strings their keys were: each is filed again by its own.
impl From<BTreeMap<String, Incident>> for Open {
    fn from(m: BTreeMap<String, Incident>) -> Self {
        let mut open = Self::default();
        for i in m.into_values() {
            open.insert(OpenKey::of(&i), i);
        }
        open
    }
}

impl From<Open> for BTreeMap<String, Incident> {
    fn from(o: Open) -> Self {
        o.map
            .into_iter()
            .map(|(k, e)| (k.to_string(), e.inc))
            .collect()
    }
}

/// The clock an incident's quiet is measured on: its host's ("" for lines
/// that came with no host).
fn host_of(i: &Incident) -> &str {
    i.host.as_deref().unwrap_or("")
}

fn evictable(i: &Incident) -> bool {
    !i.kind().of_many_nodes()
}

impl Open {
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    pub(super) fn contains_key(&self, key: &OpenKey) -> bool {
        self.map.contains_key(key)
    }

    pub(super) fn get(&self, key: &OpenKey) -> Option<&Incident> {
        self.map.get(key).map(|e| &e.inc)
    }

    /// To change; see the module's invariant.
    pub(super) fn get_mut(&mut self, key: &OpenKey) -> Option<&mut Incident> {
        self.map.get_mut(key).map(|e| &mut e.inc)
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Incident> {
        self.map.values().map(|e| &e.inc)
    }

    /// The key of the open incident with this id.
    pub(super) fn key_of_id(&self, id: &str) -> Option<&OpenKey> {
        self.by_id.get(id)
    }

    /// How many incidents `host` has open.
    pub(super) fn host_len(&self, host: &str) -> usize {
        self.by_host.get(host).map_or(0, |h| h.keys.len())
    }

    /// `host`'s open incidents.
    pub(super) fn of_host(&self, host: &str) -> impl Iterator<Item = (&OpenKey, &Incident)> {
        self.by_host
            .get(host)
            .into_iter()
            .flat_map(|h| h.keys.iter())
            .filter_map(|k| self.map.get(k).map(|e| (k, &e.inc)))
    }

    pub(super) fn insert(&mut self, key: OpenKey, inc: Incident) {
        self.remove(&key);
        let lsa = inc.last_signal_at;
        let host = host_of(&inc).to_string();
        self.by_id.insert(inc.id.clone(), key.clone());
        let h = self.by_host.entry(host).or_default();
        h.keys.insert(key.clone());
        if evictable(&inc) {
            h.quiet.insert((lsa, inc.opened_at, key.clone()));
            self.quiet.insert((lsa, inc.opened_at, key.clone()));
        }
        let e = Entry {
            inc,
            filed_all: lsa,
            filed_host: lsa,
        };
        self.map.insert(key, e);
    }

    pub(super) fn remove(&mut self, key: &OpenKey) -> Option<Incident> {
        let e = self.map.remove(key)?;
        let i = &e.inc;
        if self.by_id.get(&i.id).is_some_and(|k| k == key) {
            self.by_id.remove(&i.id);
        }
        let host = host_of(i);
        if let Some(h) = self.by_host.get_mut(host) {
            h.keys.remove(key);
            h.quiet.remove(&(e.filed_host, i.opened_at, key.clone()));
            if h.keys.is_empty() {
                self.by_host.remove(host);
            }
        }
        self.quiet.remove(&(e.filed_all, i.opened_at, key.clone()));
        Some(e.inc)
    }

    /// Takes every incident out.
    pub(super) fn take_all(&mut self) -> Vec<Incident> {
        let all = std::mem::take(&mut self.map);
        *self = Self::default();
        all.into_values().map(|e| e.inc).collect()
    }

    /// The key of the incident quiet longest (last signal, then opening,
    /// then key), of `host`'s or of all; endpoint incidents never.
    pub(super) fn quiet_longest(&mut self, host: Option<&str>) -> Option<OpenKey> {
        loop {
            let set = match host {
                Some(h) => &mut self.by_host.get_mut(h)?.quiet,
                None => &mut self.quiet,
            };
            let (filed, opened, key) = set.first()?.clone();
            let e = self.map.get_mut(&key)?;
            let now = e.inc.last_signal_at;
            if now == filed {
                return Some(key);
            }
            // Stale: filed again under its last signal (see the invariant).
            set.remove(&(filed, opened, key.clone()));
            set.insert((now, opened, key));
            match host {
                Some(_) => e.filed_host = now,
                None => e.filed_all = now,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signals::SignalKind;

    fn inc(id: &str, host: &str, at: Micros) -> Incident {
        Incident::blank(
            id.into(),
            IncidentKind::NodeStatus,
            id,
            Some(host),
            at,
            SignalKind::StatusRetry,
        )
    }

    /// What the index answers is what a pass over every incident answers,
    /// through openings, removals and later signals.
    #[test]
    fn the_quiet_index_agrees_with_a_pass_over_all() {
        let mut o = Open::default();
        let mut seed: u64 = 7;
        let mut rnd = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % n
        };
        for step in 0..4000_i64 {
            let k = OpenKey::new(IncidentKind::NodeStatus, &format!("n{}", rnd(300)));
            let host = format!("h{}", rnd(7));
            match rnd(4) {
                0 => {
                    o.remove(&k);
                }
                1 => {
                    if let Some(i) = o.get_mut(&k) {
                        i.last_signal_at = i.last_signal_at.max(step - rnd(50) as i64);
                    }
                }
                _ => {
                    if !o.contains_key(&k) {
                        o.insert(k.clone(), inc(&k.subject, &host, step - rnd(100) as i64));
                    }
                }
            }
            for h in [None, Some(host.as_str())] {
                let want = o
                    .map
                    .iter()
                    .filter(|(_, e)| h.is_none_or(|h| host_of(&e.inc) == h))
                    .min_by_key(|(_, e)| (e.inc.last_signal_at, e.inc.opened_at))
                    .map(|(k, _)| k.clone());
                assert_eq!(o.quiet_longest(h), want, "step {step}");
                let count = o
                    .values()
                    .filter(|i| h.is_none_or(|h| host_of(i) == h))
                    .count();
                if let Some(h) = h {
                    assert_eq!(o.host_len(h), count);
                }
            }
            for i in o.values() {
                assert_eq!(
                    o.key_of_id(&i.id).map(|k| k.subject.as_str()),
                    Some(i.id.as_str())
                );
            }
        }
    }
}
