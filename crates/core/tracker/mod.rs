//! The incident state machine (design section 5). Pure: no clock, no I/O.
//! [`Tracker::observe`] takes a recognised line with its entry time and
//! [`Tracker::advance`] takes the current time; both return decisions. So
//! `scan`, catch-up and live following give the same incidents for the same
//! entries, and a test replays a day in a millisecond.
//!
//! The rules, in one place:
//! - a trouble signal for a node with no open incident opens one; trouble and
//!   supporting signals for that node join it and count;
//! - it resolves at a node-ready marker for the node, or once no trouble
//!   signal has come for `resolve_after` (resolved at last trouble +
//!   `resolve_after`); a kubelet restart does not resolve it;
//! - over threshold: more than `retries` status retries and failed
//!   registrations within `window`; that raises an alert once, a reminder
//!   every `repeat_interval` while over threshold, and a resolved notice
//!   (if `send_resolved`) when it ends;
//! - verdict and cause: see [`Incident::verdict`] and [`Incident::cause`].
//!
//! Time (design section 4.1): every host has its own clock, the time of its
//! entries. [`Tracker::advance_host`] resolves only that host's incidents,
//! so a collector host whose lines arrive late, or one absurd timestamp, never
//! moves another host's clock. The caller decides how far a host's clock may
//! go: entry time always; wall time only for quiet the journal confirms.

// Floors, bottom first (a file imports only lower ones; the architecture
// test holds them): the shared words (`terms`, `decision`, `timeline`,
// `words`; `evidence`, `settings`); the incident, whatever its kind
// (`incident`); the kinds, each its data and rules, and the one enum of
// them (`kind/`); the open incidents (`open`) and the endpoint groups
// with the outages derived from them (`groups/`); then what changes them:
// each kind's machine (`machine/`), the context lines (`context`), the
// bounds (`bounds`), and this file, which routes a line to them.
mod decision;
mod evidence;
mod settings;
mod terms;
pub mod timeline;
mod words;

mod groups;
mod incident;
mod kind;
mod open;

mod bounds;
mod context;
mod machine;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

pub use decision::{AlertKind, Alerted, Decision, Observation};
pub use evidence::Evidence;
pub use groups::{Member, MemberWrite};
pub use incident::{Ack, Anchor, IncidentOf};
pub use kind::{Counters, Detail, Down, Incident, NodeStatus, NotReady, Outage, Silent};
use open::OpenKey;
pub use settings::{Limits, Selector, Settings, Threshold};
pub use terms::{IncidentKind, Resolution, Status, Verdict};
pub use words::{cause_explanation, one_line};

use crate::signals::{Role, Signal, SignalKind};
use crate::time::Micros;

/// What one kubelet (one host) told us lately. Persisted one record a host
/// (the store's `hosts` tree), written when it changes; what it does not
/// know is left out of the record (most hosts of a collector know only
/// their last entry and pid: 60 bytes, not 190).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The node this host's kubelet last registered (or tried to) as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    registered_node: Option<String>,
    /// The node its lines last named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    named_node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    started_at: Option<Micros>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    caches_synced_at: Option<Micros>,
    /// The node this host's kubelet last registered, and when: kept with
    /// the host (written when it changes), not in one map of every node
    /// written with every commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    registration: Option<(String, Micros)>,
    /// Recent markers, kept as evidence for an incident that opens soon after.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    markers: VecDeque<Evidence>,
    /// systemd is stopping the kubelet as asked (`Stopping kubelet…` with
    /// no failed exit before it): its exit now is no crash.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    stopping: bool,
    /// How far the host's journal has got (the newest entry time read of
    /// it): what its silence is judged by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_entry_at: Option<Micros>,
    /// The host's recent context lines (design 5.4), bounded.
    #[serde(default, skip_serializing_if = "crate::context::Window::is_empty")]
    context: crate::context::Window,
    /// The pid its kubelet last wrote as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kubelet_pid: Option<u32>,
    /// When its node last said it was ready (a node-ready marker): a
    /// not-ready incident after that, however soon after the kubelet's
    /// start, is no start-up race.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ready_at: Option<Micros>,
    /// Since when its kubelet has said only its start-up state (`container
    /// runtime status check may not have completed yet`, `pleg has yet to
    /// be successful`), since its last start or ready marker: trouble once
    /// that outlasts `not_ready_after` (it never finished starting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    starting_since: Option<Micros>,
}

const ORIGIN_MARKERS: usize = 8;

impl Origin {
    /// Adds the host's markers of the `lookback` before `at` to `inc` as
    /// evidence (an incident opening soon after them).
    fn mark(&self, inc: &mut Incident, at: Micros, lookback: Micros) {
        for m in self
            .markers
            .iter()
            .filter(|m| m.at <= at && at - m.at <= lookback)
        {
            inc.add_evidence(m.clone());
        }
    }
}

/// Takes `host`'s registration of `node` out of the index (it registered
/// another, or its record was forgotten).
fn unregister(
    registrations: &mut BTreeMap<String, BTreeMap<String, Micros>>,
    node: &str,
    host: &str,
) {
    if let Some(by) = registrations.get_mut(node) {
        by.remove(host);
        if by.is_empty() {
            registrations.remove(node);
        }
    }
}

/// The node of trouble that nothing names (a bare log with no host).
pub const UNKNOWN_NODE: &str = "unknown";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tracker {
    settings: Settings,
    /// Per host. Not in the serialized tracker (see [`Origin`]); read for
    /// states written before the split.
    #[serde(default, skip_serializing)]
    origins: BTreeMap<String, Origin>,
    /// When each node last registered, in states written before
    /// registrations moved to [`Origin::registration`]; read, never written.
    #[serde(default, skip_serializing)]
    registered_at: BTreeMap<String, Micros>,
    /// Who registered each node, and when: derived from the hosts'
    /// [`Origin::registration`], so a new incident finds its node's without
    /// a pass over every host.
    #[serde(skip)]
    registrations: BTreeMap<String, BTreeMap<String, Micros>>,
    /// Open incidents by node. Not in the serialized tracker: the store keeps
    /// them as incidents (and an index of the open ones), written when they
    /// change; read for states written before the split.
    #[serde(default, skip_serializing)]
    open: open::Open,
    /// Resolved and not yet taken by the caller.
    #[serde(skip)]
    resolved: Vec<Incident>,
    /// Per host: none of its open incidents resolves on quiet before this
    /// (derived; may be early, never late).
    #[serde(skip)]
    due: BTreeMap<String, Micros>,
    /// Hosts whose [`Origin`] changed since [`Tracker::take_dirty_origins`].
    #[serde(skip)]
    dirty_origins: BTreeSet<String>,
    /// Hosts whose journal moved since silence was last judged at a tail
    /// (see `silent.rs`): not judged there, their upload may go on.
    #[serde(skip)]
    moved: BTreeSet<String>,
    /// Incidents closed to stay within the node bounds
    /// ([`Resolution::Evicted`]).
    #[serde(default)]
    evicted: u64,
    /// Of those, the ones below the threshold and never announced: taken
    /// out of the history altogether.
    #[serde(default)]
    forgotten: u64,
    /// Forgotten and not yet taken by the caller.
    #[serde(skip)]
    forgotten_incidents: Vec<Incident>,
    /// The newest time any host's journal reached (derived from the
    /// hosts' records; 0: none yet).
    #[serde(skip)]
    fleet_newest: Micros,
    /// The source is a collector's directory (hosts read apart): only
    /// there are hosts judged silent (see [`Tracker::set_fleet`]).
    #[serde(skip)]
    fleet: bool,
    /// Endpoint incidents and the node incidents they are derived from,
    /// by endpoint and cause (see `endpoint.rs`; bounded there).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    fleet_groups: BTreeMap<String, groups::Group>,
    /// The groups whose members the store holds records of, as of the last
    /// [`Tracker::take_member_writes`].
    #[serde(skip)]
    stored_groups: BTreeSet<String>,
    /// Endpoint groups derived again at every change, never by the
    /// shortcuts (tests hold the shortcuts to the same answer).
    #[serde(skip)]
    long_way: bool,
    /// Shortcuts taken, so far (tests count them).
    #[serde(skip)]
    shortcuts: u64,
}

impl Tracker {
    #[must_use]
    pub fn new(settings: Settings) -> Self {
        Self {
            settings,
            ..Self::default()
        }
    }

    #[must_use]
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// New settings (SIGHUP); open incidents are judged by them from now on.
    pub fn set_settings(&mut self, settings: Settings) {
        self.settings = settings;
        self.recompute_due();
    }

    /// Puts back what the store keeps apart from the serialized tracker:
    /// the open incidents and the per-host records.
    pub fn restore(&mut self, open: Vec<Incident>, origins: Vec<(String, Origin)>) {
        // Endpoint incidents are kept with their groups, in the state.
        for i in open
            .into_iter()
            .filter(|i| i.kind() != IncidentKind::Endpoint)
        {
            self.open.insert(OpenKey::of(&i), i);
        }
        self.origins.extend(origins);
        self.registrations.clear();
        for (h, o) in &self.origins {
            if let Some((n, t)) = &o.registration {
                self.registrations
                    .entry(n.clone())
                    .or_default()
                    .insert(h.clone(), *t);
            }
        }
        self.fleet_newest = self
            .origins
            .values()
            .filter_map(|o| o.last_entry_at)
            .max()
            .unwrap_or(0)
            .max(self.fleet_newest);
        self.recompute_due();
    }

    /// Takes out what the store keeps apart (open incidents, per-host
    /// records): moving a store of the earlier layout to the current one.
    pub fn split_persisted(&mut self) -> (Vec<Incident>, Vec<(String, Origin)>) {
        let open = self.open.take_all();
        let origins = std::mem::take(&mut self.origins).into_iter().collect();
        (open, origins)
    }

    /// The per-host records changed since the last call, to persist.
    /// Whether `host` has a record here.
    #[must_use]
    pub fn knows_host(&self, host: &str) -> bool {
        self.origins.contains_key(host)
    }

    /// The hosts with a record here.
    #[must_use]
    pub fn hosts(&self) -> usize {
        self.origins.len()
    }

    /// `None`: the host's record was forgotten (see
    /// [`Tracker::forget_idle_hosts`]).
    pub fn take_dirty_origins(&mut self) -> Vec<(String, Option<Origin>)> {
        std::mem::take(&mut self.dirty_origins)
            .into_iter()
            .map(|h| {
                let o = self.origins.get(&h).cloned();
                (h, o)
            })
            .collect()
    }

    /// Whether an incident may alert once delivery is possible: over
    /// threshold and never announced.
    pub fn unannounced(&self) -> impl Iterator<Item = &Incident> {
        // A node an endpoint incident stands for is announced by it.
        self.open_incidents()
            .filter(|i| i.over_threshold_at.is_some() && !i.announced && i.covered_by().is_none())
    }

    /// An open incident by id, of any kind, to change.
    fn open_mut(&mut self, id: &str) -> Option<&mut Incident> {
        if let Some(k) = self.open.key_of_id(id).cloned() {
            return self.open.get_mut(&k);
        }
        self.outage_mut(id).filter(|i| i.resolved_at.is_none())
    }

    /// Records that an alert for the incident went into the outbox.
    pub fn mark_announced(&mut self, id: &str) {
        if let Some(i) = self.open_mut(id) {
            i.announced = true;
        } else if let Some(i) = self.outage_mut(id) {
            // An endpoint incident that ended in the same pass: its end
            // is told too.
            i.announced = true;
            for r in self.resolved.iter_mut().filter(|r| r.id == id) {
                r.announced = true;
            }
        }
    }

    /// Records an operator's acknowledgement on an open incident; false
    /// when no open incident has that id.
    pub fn acknowledge(&mut self, id: &str, ack: Ack) -> bool {
        match self.open_mut(id) {
            Some(i) => {
                i.ack = Some(ack);
                true
            }
            None => false,
        }
    }

    /// The latest signal of `host`'s open incidents.
    #[must_use]
    pub fn latest_signal(&self, host: &str) -> Option<Micros> {
        // A host-silent incident's times are the fleet's, not its host's.
        self.open
            .of_host(host)
            .filter(|(_, i)| i.kind() != IncidentKind::HostSilent)
            .map(|(_, i)| i.last_signal_at)
            .max()
    }

    /// When the next of `host`'s open incidents is due to resolve on quiet
    /// (entry time), if it has any.
    #[must_use]
    pub fn due_for(&self, host: &str) -> Option<Micros> {
        self.due.get(host).copied()
    }

    /// Hosts with open incidents and when the first of them is due.
    pub fn due_hosts(&self) -> impl Iterator<Item = (&str, Micros)> {
        self.due.iter().map(|(h, d)| (h.as_str(), *d))
    }

    fn recompute_due(&mut self) {
        let mut due: BTreeMap<String, Micros> = BTreeMap::new();
        for i in self.open.values() {
            if let Some(at) = self.due_of(i) {
                let d = due.entry(host_key(i)).or_insert(Micros::MAX);
                *d = (*d).min(at);
            }
        }
        self.due = due;
    }

    /// Open incidents, by node.
    pub fn open_incidents(&self) -> impl Iterator<Item = &Incident> {
        self.open
            .values()
            .chain(self.outages().filter(|i| i.resolved_at.is_none()))
    }

    #[must_use]
    pub fn incident(&self, id: &str) -> Option<&Incident> {
        if let Some(i) = self.open.key_of_id(id).and_then(|k| self.open.get(k)) {
            return Some(i);
        }
        self.resolved
            .iter()
            .chain(self.outages())
            .find(|i| i.id == id)
    }

    /// Incidents resolved since the last call.
    pub fn take_resolved(&mut self) -> Vec<Incident> {
        std::mem::take(&mut self.resolved)
    }

    /// Records that the first alert for an incident was delivered; true
    /// when an incident of the tracker's changed: an open one, or an
    /// endpoint incident it keeps after its end (an outage read in a
    /// catch-up ends before its page is delivered; unrecorded, a late
    /// member that moves its start would page it again).
    pub fn mark_alerted(&mut self, id: &str, at: Micros) -> bool {
        let kept = if self.open.key_of_id(id).is_some() {
            self.open_mut(id)
        } else {
            self.outage_mut(id)
        };
        match kept {
            Some(i) if i.alerted_at.is_none() => {
                i.alerted_at = Some(at);
                true
            }
            _ => false,
        }
    }

    /// The node a signal is about: named in the line, else the node this
    /// host's kubelet registered as (or last named), else `[node] name`, else
    /// the host.
    /// `None` when nothing says (a bare log with no host).
    #[must_use]
    pub fn node_for(&self, sig: &Signal, host: &str) -> Option<String> {
        if let Some(n) = &sig.node {
            return Some(n.clone());
        }
        let origin = self.origins.get(host);
        origin
            .and_then(|o| o.registered_node.clone().or_else(|| o.named_node.clone()))
            .or_else(|| self.settings.node_name.clone())
            .or_else(|| (!host.is_empty()).then(|| host.to_string()))
    }

    /// Takes one recognised line.
    pub fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Decision>) {
        let from = out.len();
        // The node's node-status incident's key, made once a line.
        let key = OpenKey {
            kind: IncidentKind::NodeStatus,
            subject: self.observe_one(obs, out),
        };
        if obs.clock_untrusted {
            if let Some(i) = self.open.get_mut(&key) {
                if let Detail::NodeStatus(n) = &mut i.detail {
                    if !n.clock_untrusted {
                        n.clock_untrusted = true;
                        out.push(Decision::UpdateIncident { id: i.id.clone() });
                    }
                }
            }
        }
        if self
            .origins
            .get(obs.host.unwrap_or(""))
            .is_some_and(|o| !o.context.is_empty())
        {
            self.link(&key, out);
            for kind in [IncidentKind::KubeletDown, IncidentKind::NotReady] {
                self.link(&OpenKey::new(kind, &key.subject), out);
            }
        }
        self.correlate(std::slice::from_ref(&key), from, out);
    }

    fn observe_one(&mut self, obs: &Observation<'_>, out: &mut Vec<Decision>) -> String {
        let host = obs.host.unwrap_or("");
        let sig = obs.signal;
        let node = self
            .node_for(sig, host)
            .unwrap_or_else(|| UNKNOWN_NODE.to_string());
        let at = obs.at;
        let origin = self.origins.entry(host.to_string()).or_default();
        if sig.node.is_some() && origin.named_node.as_deref() != Some(node.as_str()) {
            origin.named_node = Some(node.clone());
            self.dirty_origins.insert(host.to_string());
        }
        if sig.kind.is_life() {
            self.life(obs, &node, out);
        }
        if sig.kind.is_not_ready() {
            self.not_ready(obs, &node, out);
            return node;
        }
        match sig.kind.role() {
            Role::Marker => self.marker(obs, &node, out),
            Role::Trouble => {
                let key = OpenKey::new(IncidentKind::NodeStatus, &node);
                self.expire(&key, at, out);
                if !self.open.contains_key(&key) {
                    self.make_room(host, at, out);
                    self.open_incident(obs, key.clone(), out);
                }
                self.count(obs, &key, out);
            }
            Role::Supporting => {
                let key = OpenKey::new(IncidentKind::NodeStatus, &node);
                self.expire(&key, at, out);
                if self.open.contains_key(&key) {
                    self.count(obs, &key, out);
                }
            }
        }
        node
    }

    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
    )]
    fn marker(&mut self, obs: &Observation<'_>, node: &str, out: &mut Vec<Decision>) {
        let at = obs.at;
        let host = obs.host.unwrap_or("");
        self.dirty_origins.insert(host.to_string());
        let origin = self.origins.entry(host.to_string()).or_default();
        match obs.signal.kind {
            SignalKind::RegisterAttempt => origin.registered_node = Some(node.to_string()),
            SignalKind::Registered => {
                origin.registered_node = Some(node.to_string());
                if let Some((old, _)) = origin.registration.replace((node.to_string(), at)) {
                    unregister(&mut self.registrations, &old, host);
                }
                self.registrations
                    .entry(node.to_string())
                    .or_default()
                    .insert(host.to_string(), at);
            }
            SignalKind::KubeletStarted => {
                origin.started_at = Some(at);
                origin.starting_since = None;
            }
            SignalKind::NodeReady => {
                origin.starting_since = None;
                origin.ready_at = Some(at);
            }
            SignalKind::CachesSynced => origin.caches_synced_at = Some(at),
            _ => {}
        }
        let evidence = Evidence::new(at, obs.cursor, obs.signal.kind, obs.text);
        origin.markers.push_back(evidence.clone());
        if origin.markers.len() > ORIGIN_MARKERS {
            origin.markers.pop_front();
        }
        let key = OpenKey::new(IncidentKind::NodeStatus, node);
        self.expire(&key, at, out);
        if let Some(inc) = self.open.get_mut(&key) {
            inc.add_evidence(evidence.clone());
            inc.last_signal_at = inc.last_signal_at.max(at);
            if obs.signal.kind == SignalKind::NodeReady {
                self.resolve(&key, at, Resolution::NodeReady, out);
            } else {
                out.push(Decision::UpdateIncident { id: inc.id.clone() });
            }
        }
        if obs.signal.kind == SignalKind::NodeReady {
            for kind in [IncidentKind::KubeletDown, IncidentKind::NotReady] {
                let key = OpenKey::new(kind, node);
                self.expire(&key, at, out);
                if let Some(inc) = self.open.get_mut(&key) {
                    inc.add_evidence(evidence.clone());
                    inc.last_signal_at = inc.last_signal_at.max(at);
                }
                self.resolve(&key, at, Resolution::NodeReady, out);
            }
        }
    }

    fn update_due(&mut self, key: &OpenKey) {
        if let Some(inc) = self.open.get(key) {
            if let Some(due) = self.due_of(inc) {
                let d = self.due.entry(host_key(inc)).or_insert(due);
                *d = (*d).min(due);
            }
        }
    }

    /// When `node` last registered: the latest of the hosts that say so.
    fn registered(&self, node: &str) -> Option<Micros> {
        self.registrations
            .get(node)
            .and_then(|by| by.values().copied().max())
            .or_else(|| self.registered_at.get(node).copied())
    }

    /// Resolves `node`'s incident if it has been quiet for `resolve_after`
    /// by `now`.
    /// A kubelet-down incident whose exit no restart followed for
    /// `resolve_after` is judged failed instead (it stays open).
    fn expire(&mut self, key: &OpenKey, now: Micros, out: &mut Vec<Decision>) {
        let Some(due) = self.open.get(key).and_then(|i| self.due_of(i)) else {
            return;
        };
        let Some(inc) = self.open.get_mut(key) else {
            return;
        };
        if now < due {
            return;
        }
        match &mut inc.detail {
            Detail::KubeletDown(d) if d.pending.is_some() => {
                d.gave_up_at = Some(due);
                out.push(Decision::UpdateIncident { id: inc.id.clone() });
                self.gave_up(key, due, out);
            }
            Detail::KubeletDown(_)
            | Detail::NodeStatus(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_) => self.resolve(key, due, Resolution::Quiet, out),
        }
    }

    fn resolve(&mut self, key: &OpenKey, at: Micros, how: Resolution, out: &mut Vec<Decision>) {
        let Some(mut inc) = self.open.remove(key) else {
            return;
        };
        inc.resolved_at = Some(at.max(inc.last_signal_at));
        inc.resolution = Some(how);
        out.push(Decision::ResolveIncident { id: inc.id.clone() });
        if inc.over_threshold_at.is_some() && self.settings.send_resolved {
            out.push(inc.raise(AlertKind::Resolved, at));
        }
        if inc.kind() == IncidentKind::KubeletDown {
            let (node, end) = (inc.node.clone(), inc.resolved_at.unwrap_or(at));
            self.resolved.push(inc);
            self.release_not_ready(&node, end);
            return;
        }
        self.resolved.push(inc);
    }

    /// Moves `host`'s clock to `now`: resolves its incidents quiet for
    /// `resolve_after` by then.
    pub fn advance_host(&mut self, host: &str, now: Micros, out: &mut Vec<Decision>) {
        // Each pass ends what is due; an end may make another due by `now`
        // (a not-ready incident a kubelet-down one held open), so again
        // until nothing is: every pass ends or settles at least one.
        while self.due.get(host).is_some_and(|&d| now >= d) {
            let quiet: Vec<OpenKey> = self
                .open
                .of_host(host)
                .filter(|(_, i)| self.due_of(i).is_some_and(|d| now >= d))
                .map(|(k, _)| k.clone())
                .collect();
            let from = out.len();
            for key in &quiet {
                self.expire(key, now, out);
            }
            self.correlate(&quiet, from, out);
            match self
                .open
                .of_host(host)
                .filter_map(|(_, i)| self.due_of(i))
                .min()
            {
                Some(d) => self.due.insert(host.to_string(), d),
                None => self.due.remove(host),
            };
            if quiet.is_empty() {
                break;
            }
        }
    }

    /// Moves every host's clock to `now` (tests; a source with one clock).
    pub fn advance(&mut self, now: Micros, out: &mut Vec<Decision>) {
        let hosts: Vec<String> = self
            .due
            .iter()
            .filter(|(_, d)| **d <= now)
            .map(|(h, _)| h.clone())
            .collect();
        for h in hosts {
            self.advance_host(&h, now, out);
        }
    }
}

/// The clock an incident's quiet is measured on: its host's ("" for lines
/// that came with no host).
fn host_key(i: &Incident) -> String {
    i.host.clone().unwrap_or_default()
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod down_tests;

#[cfg(test)]
mod endpoint_tests;

#[cfg(test)]
mod not_ready_tests;

#[cfg(test)]
mod context_tests;
