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
// them (`kind/`); the open incidents (`open`) and the hosts' records
// (`hosts`); the ledger that keeps the incidents and ends them (`ledger`);
// then what changes them: each kind's machine (`machine/`; the endpoint
// groups' rules are the endpoint machine's, `machine/endpoint/groups/`)
// and the context lines (`context`); and this file, which owns the parts
// and routes a line to them.
mod decision;
mod evidence;
mod settings;
pub mod start;
mod terms;
pub mod timeline;
mod words;

mod hosts;
mod incident;
mod kind;
mod open;

mod ledger;

mod context;
mod machine;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use decision::{AlertKind, Alerted, Decision, Observation};
pub use evidence::Evidence;
pub use hosts::{CertWatch, HungWatch, Origin};
pub use incident::{Ack, Anchor, IncidentOf};
pub use kind::{
    Attempt, ClientCert, Counters, Detail, Down, EVICTED_KEPT, FailingPod, HungTask, ImageGc,
    Incident, KernelTrouble, NodeStatus, NotReady, NpdCondition, Outage, PodSandbox, Silent,
};
pub use machine::{Member, MemberWrite};
pub use settings::{Limits, Selector, Settings, Threshold};
pub use start::{Phase, PhaseSpan, STARTS_KEPT, Start, StartPlace, StartVerdict};
pub use terms::{IncidentKind, Resolution, Status, Verdict};
pub use words::{cause_explanation, one_line};

use hosts::Hosts;
use ledger::Ledger;
use machine::{Outages, SilentWatch, Starts};
use open::OpenKey;

use crate::signals::Signal;
use crate::time::Micros;

/// The node of trouble that nothing names (a bare log with no host).
pub const UNKNOWN_NODE: &str = "unknown";

/// The incident state machine: its parts, each owning what it keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(from = "State")]
pub struct Tracker {
    /// The incidents, open and just ended, and the settings they are
    /// judged by.
    ledger: Ledger,
    /// The hosts' records. The store keeps them apart, one a host.
    hosts: Hosts,
    /// What host silence is judged by.
    silent: SilentWatch,
    /// The endpoint groups and their incidents.
    outages: Outages,
    /// The kubelets' starts changed since they were last taken.
    starts: Starts,
}

/// The tracker as the store keeps it. The open incidents and the hosts'
/// records are kept apart (written when they change); they are read here
/// from states written before the split, never written.
#[derive(Deserialize)]
struct State {
    settings: Settings,
    #[serde(default)]
    origins: BTreeMap<String, Origin>,
    /// When each node last registered, before registrations moved to the
    /// hosts' records.
    #[serde(default)]
    registered_at: BTreeMap<String, Micros>,
    #[serde(default)]
    open: open::Open,
    #[serde(default)]
    evicted: u64,
    #[serde(default)]
    forgotten: u64,
    #[serde(default)]
    fleet_groups: BTreeMap<String, machine::Group>,
}

/// What [`State`] writes.
#[derive(Serialize)]
struct StateOut<'a> {
    settings: &'a Settings,
    evicted: u64,
    forgotten: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    fleet_groups: &'a BTreeMap<String, machine::Group>,
}

impl From<State> for Tracker {
    fn from(s: State) -> Self {
        Self {
            ledger: Ledger::new(s.settings, s.open, s.evicted, s.forgotten),
            hosts: Hosts::from_state(s.origins, s.registered_at),
            silent: SilentWatch::default(),
            outages: Outages::new(s.fleet_groups),
            starts: Starts::default(),
        }
    }
}

impl Serialize for Tracker {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        StateOut {
            settings: &self.ledger.settings,
            evicted: self.ledger.evicted,
            forgotten: self.ledger.forgotten,
            fleet_groups: &self.outages.groups,
        }
        .serialize(ser)
    }
}

impl Tracker {
    #[must_use]
    pub fn new(settings: Settings) -> Self {
        Self {
            ledger: Ledger::new(settings, open::Open::default(), 0, 0),
            ..Self::default()
        }
    }

    #[must_use]
    pub fn settings(&self) -> &Settings {
        &self.ledger.settings
    }

    /// New settings (SIGHUP); open incidents are judged by them from now on.
    pub fn set_settings(&mut self, settings: Settings) {
        self.ledger.settings = settings;
        self.ledger.recompute_due();
    }

    /// Puts back what the store keeps apart from the serialized tracker:
    /// the open incidents and the per-host records.
    pub fn restore(&mut self, open: Vec<Incident>, origins: Vec<(String, Origin)>) {
        // Endpoint incidents are kept with their groups, in the state.
        for i in open.into_iter().filter(|i| !i.kind().of_many_nodes()) {
            self.ledger.open.insert(OpenKey::of(&i), i);
        }
        self.hosts.restore(origins);
        self.silent.restore(&self.hosts);
        self.ledger.recompute_due();
    }

    /// Takes out what the store keeps apart (open incidents, per-host
    /// records): moving a store of the earlier layout to the current one.
    pub fn split_persisted(&mut self) -> (Vec<Incident>, Vec<(String, Origin)>) {
        (self.ledger.open.take_all(), self.hosts.take_all())
    }

    /// Whether `host` has a record here.
    #[must_use]
    pub fn knows_host(&self, host: &str) -> bool {
        self.hosts.get(host).is_some()
    }

    /// The hosts with a record here.
    #[must_use]
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    /// The per-host records changed since the last call, to persist.
    /// `None`: the host's record was forgotten (see
    /// [`Tracker::forget_idle_hosts`]).
    pub fn take_dirty_origins(&mut self) -> Vec<(String, Option<Origin>)> {
        self.hosts.take_dirty()
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
        if let Some(k) = self.ledger.open.key_of_id(id).cloned() {
            return self.ledger.open.get_mut(&k);
        }
        self.outages
            .outage_mut(id)
            .filter(|i| i.resolved_at.is_none())
    }

    /// Records that an alert for the incident went into the outbox.
    pub fn mark_announced(&mut self, id: &str) {
        if let Some(i) = self.open_mut(id) {
            i.announced = true;
        } else if let Some(i) = self.outages.outage_mut(id) {
            // An endpoint incident that ended in the same pass: its end
            // is told too.
            i.announced = true;
            for r in self.ledger.resolved.iter_mut().filter(|r| r.id == id) {
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
        self.ledger
            .open
            .of_host(host)
            .filter(|(_, i)| !i.kind().kept_by_host())
            .map(|(_, i)| i.last_signal_at)
            .max()
    }

    /// When the next of `host`'s open incidents is due to resolve on quiet
    /// (entry time), if it has any.
    #[must_use]
    pub fn due_for(&self, host: &str) -> Option<Micros> {
        self.ledger.due_for(host)
    }

    /// Hosts with open incidents and when the first of them is due.
    pub fn due_hosts(&self) -> impl Iterator<Item = (&str, Micros)> {
        self.ledger.due_hosts()
    }

    /// Open incidents, by node.
    pub fn open_incidents(&self) -> impl Iterator<Item = &Incident> {
        self.ledger
            .open
            .values()
            .chain(self.outages.outages().filter(|i| i.resolved_at.is_none()))
    }

    #[must_use]
    pub fn incident(&self, id: &str) -> Option<&Incident> {
        let open = &self.ledger.open;
        if let Some(i) = open.key_of_id(id).and_then(|k| open.get(k)) {
            return Some(i);
        }
        self.ledger
            .resolved
            .iter()
            .chain(self.outages.outages())
            .find(|i| i.id == id)
    }

    /// Incidents resolved since the last call.
    pub fn take_resolved(&mut self) -> Vec<Incident> {
        std::mem::take(&mut self.ledger.resolved)
    }

    /// Records that the first alert for an incident was delivered; true
    /// when an incident of the tracker's changed: an open one, or an
    /// endpoint incident it keeps after its end (an outage read in a
    /// catch-up ends before its page is delivered; unrecorded, a late
    /// member that moves its start would page it again).
    pub fn mark_alerted(&mut self, id: &str, at: Micros) -> bool {
        let kept = if self.ledger.open.key_of_id(id).is_some() {
            self.open_mut(id)
        } else {
            self.outages.outage_mut(id)
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
            let n = crate::model::bounded_name(n).unwrap_or(n);
            return Some(n.to_string());
        }
        self.hosts
            .node_of(host)
            .or_else(|| self.ledger.settings.node_name.clone())
            .or_else(|| (!host.is_empty()).then(|| host.to_string()))
    }

    /// Takes one recognised line.
    pub fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Decision>) {
        let from = out.len();
        let host = obs.host.unwrap_or("");
        let sig = obs.signal;
        let node = self
            .node_for(sig, host)
            .unwrap_or_else(|| UNKNOWN_NODE.to_string());
        let origin = self.hosts.entry(host);
        if sig.node.is_some() && origin.named_node.as_deref() != Some(node.as_str()) {
            origin.named_node = Some(node.clone());
            self.hosts.touch(host);
        }
        let (l, h) = (&mut self.ledger, &mut self.hosts);
        self.starts.line(h, l, obs, &node);
        // A rotation deadline passed by this line's time (a line with no
        // host has no other entry to judge it).
        machine::certificate::watch(l, h, (host, obs.at), UNKNOWN_NODE, out);
        if sig.kind.is_life() {
            machine::life(l, h, obs, &node, out);
        }
        // The node's node-status incident's key, made once a line.
        let key = machine::node_status::key(node);
        if sig.kind.is_certificate() {
            machine::certificate::line(l, h, obs, &key.subject, out);
        } else if sig.kind.is_not_ready() {
            machine::not_ready(l, h, obs, &key.subject, out);
        } else if sig.kind.is_eviction() {
            machine::eviction(l, h, obs, &key.subject, out);
        } else if sig.kind.is_sandbox() {
            machine::pod_sandbox::line(l, h, obs, &key.subject, out);
        } else {
            machine::node_status::line(l, h, obs, &key, out);
        }
        if obs.clock_untrusted {
            machine::node_status::clock_untrusted(l, &key, out);
        }
        if h.get(host).is_some_and(|o| !o.context.is_empty()) {
            // The node's incidents (a host-silent one is its host's, an
            // endpoint one many nodes').
            let kinds = IncidentKind::ALL.iter().copied();
            for kind in kinds.filter(|k| !k.kept_by_host() && !k.of_many_nodes()) {
                context::link(l, h, &OpenKey::new(kind, &key.subject), out);
            }
        }
        self.outages
            .correlate(&mut self.ledger, std::slice::from_ref(&key), from, out);
        let (l, h) = (&mut self.ledger, &mut self.hosts);
        self.starts.opened(h, l, host, &out[from..]);
    }

    /// Takes one context line of `host` (journal time `line.at`, its
    /// entry's `cursor`): into the host's window, and onto the open
    /// incidents of the host it explains. The kernel's read-only file
    /// systems and hung tasks are also the node's kernel incident's (design
    /// 5.8), and its boot ends that and empties the window.
    pub fn context(
        &mut self,
        host: &str,
        line: crate::context::ContextLine,
        cursor: Option<&str>,
        out: &mut Vec<Decision>,
    ) {
        use crate::context::ContextKind;
        let kernel = line.kind.is_readonly()
            || matches!(line.kind, ContextKind::HungTask | ContextKind::Boot);
        if kernel {
            let (l, h) = (&mut self.ledger, &mut self.hosts);
            machine::kernel::line(l, h, (host, &line, cursor), UNKNOWN_NODE, out);
        }
        if line.kind == ContextKind::Boot {
            return;
        }
        let keys = context::take(&self.ledger, &mut self.hosts, host, line);
        let from = out.len();
        for k in &keys {
            context::link(&mut self.ledger, &self.hosts, k, out);
        }
        self.outages.correlate(&mut self.ledger, &keys, from, out);
    }

    /// The kubelet of `host` writes as `pid` (an OOM kill naming it is
    /// the kubelet's).
    pub fn kubelet_pid(&mut self, host: &str, pid: u32) {
        context::kubelet_pid(&mut self.hosts, host, pid);
    }

    /// The kubelets' starts changed since the last call (design 5.5), to
    /// persist and report: one record a start, by host and start time.
    pub fn take_starts(&mut self) -> Vec<Start> {
        self.starts.take()
    }

    /// The starts whose verdict was reached since the last call (for the
    /// counts of starts by verdict and the phases' times).
    pub fn take_judged_starts(&mut self) -> Vec<Start> {
        self.starts.take_judged()
    }

    /// Moves `host`'s clock to `now`: resolves its incidents quiet for
    /// `resolve_after` by then.
    pub fn advance_host(&mut self, host: &str, now: Micros, out: &mut Vec<Decision>) {
        // Each pass ends what is due; an end may make another due by `now`
        // (a not-ready incident a kubelet-down one held open), so again
        // until nothing is: every pass ends or settles at least one.
        while self.ledger.due_for(host).is_some_and(|d| now >= d) {
            let quiet = self.ledger.quiet_by(host, now);
            let from = out.len();
            for key in &quiet {
                self.ledger.expire(key, now, out);
            }
            self.outages.correlate(&mut self.ledger, &quiet, from, out);
            self.ledger.settle_due(host);
            if quiet.is_empty() {
                break;
            }
        }
    }

    /// Moves every host's clock to `now` (tests; a source with one clock).
    pub fn advance(&mut self, now: Micros, out: &mut Vec<Decision>) {
        let hosts: Vec<String> = self
            .ledger
            .due_hosts()
            .filter(|(_, d)| *d <= now)
            .map(|(h, _)| h.to_string())
            .collect();
        for h in hosts {
            self.advance_host(&h, now, out);
        }
    }

    /// Forgets the records of the hosts with no entry since `since` and no
    /// open incident (their per-host record, memory and store alike, through
    /// [`Tracker::take_dirty_origins`]), and says which: every host left is
    /// one active lately. A host seen again later starts as a new one.
    /// With `[fleet] max_hosts`, which counts only the hosts active lately,
    /// this keeps a fleet whose nodes come and go under new names (or a
    /// stranger uploading new names every day) from growing the records
    /// for ever.
    pub fn forget_idle_hosts(&mut self, since: Micros) -> Vec<String> {
        let idle: Vec<String> = self
            .hosts
            .iter()
            .filter(|(h, o)| {
                o.last_entry_at.is_none_or(|t| t < since) && self.ledger.open.host_len(h) == 0
            })
            .map(|(h, _)| h.clone())
            .collect();
        self.forget_hosts(&idle);
        idle
    }

    /// Forgets the records of the `n` hosts quiet longest (by their last
    /// entry) of those with no open incident and not `kept` (a line held
    /// for its continuation), however recent, and says which: they give
    /// way to new hosts past `[fleet] max_hosts`, so a flood of names (one
    /// upload naming 20 000 hosts) cannot keep the fleet's real hosts
    /// out. A host with an open incident never gives way. One pass over
    /// the records for `n` hosts.
    pub fn forget_quietest_hosts(&mut self, n: usize, kept: impl Fn(&str) -> bool) -> Vec<String> {
        let mut quiet: Vec<(Micros, &String)> = self
            .hosts
            .iter()
            .filter(|(h, _)| self.ledger.open.host_len(h) == 0 && !kept(h))
            .map(|(h, o)| (o.last_entry_at.unwrap_or(Micros::MIN), h))
            .collect();
        if quiet.len() > n && n > 0 {
            quiet.select_nth_unstable(n - 1);
        }
        quiet.truncate(n);
        let gone: Vec<String> = quiet.into_iter().map(|(_, h)| h.clone()).collect();
        self.forget_hosts(&gone);
        gone
    }

    fn forget_hosts(&mut self, hosts: &[String]) {
        for h in hosts {
            self.hosts.forget(h);
            self.silent.forget(h);
            self.ledger.forget_due(h);
        }
    }

    /// Incidents closed to stay within the node bounds, so far.
    #[must_use]
    pub fn evicted(&self) -> u64 {
        self.ledger.evicted
    }

    /// Of the evicted, those taken out of the history (below the threshold,
    /// never announced), so far.
    #[must_use]
    pub fn forgotten(&self) -> u64 {
        self.ledger.forgotten
    }

    /// Incidents forgotten since the last call (to take out of the store).
    pub fn take_forgotten(&mut self) -> Vec<Incident> {
        std::mem::take(&mut self.ledger.forgotten_incidents)
    }
}

/// Host silence (design 5.2; see `machine/host_silent.rs`).
impl Tracker {
    /// Whether the source is a collector's directory, whose hosts are
    /// judged silent; a single node's journal (whose host name may change
    /// once, at provisioning) and saved logs never are.
    pub fn set_fleet(&mut self, collector: bool) {
        self.silent.set_fleet(collector);
    }

    /// The service was switched to another journal: how far the old one's
    /// hosts got is no measure of the new one's.
    pub fn forget_journal_times(&mut self) {
        self.silent.forget_journal_times(&mut self.hosts);
    }

    /// How far each host's journal has got (its newest entry of any unit,
    /// as far as the reader tells): what its silence is judged by.
    pub fn journal_times(&self) -> impl Iterator<Item = (&str, Micros)> {
        SilentWatch::journal_times(&self.hosts)
    }

    /// `host`'s journal reaches `at` (an entry of it was read). Ends its
    /// host-silent incident; records one it had in a gap that nobody
    /// judged.
    pub fn activity(&mut self, host: &str, at: Micros, out: &mut Vec<Decision>) {
        let (l, h) = (&mut self.ledger, &mut self.hosts);
        // Its kubelet's client certificate's rotation deadline is judged
        // on the host's own entries (design 5.7).
        machine::certificate::watch(l, h, (host, at), UNKNOWN_NODE, out);
        self.silent.activity(l, h, host, at, out);
        self.starts.tick(h, l.settings.start_budget, host, at);
    }

    /// `host`'s journal files reach `at` (a collector's reader reads it
    /// from their headers, whatever unit wrote last): ends its host-silent
    /// incident. Coarse (once a read of the host's files), so a jump in it
    /// is no gap of the host's.
    pub fn journal_reaches(&mut self, host: &str, at: Micros, out: &mut Vec<Decision>) {
        let (l, h) = (&mut self.ledger, &mut self.hosts);
        self.silent.journal_reaches(l, h, host, at, out);
    }

    /// Opens a host-silent incident for every host whose journal's time
    /// is `silent_after` or more behind the newest of any host's; call it
    /// at the end of a one-shot read, where the reader has read everything
    /// there will be.
    pub fn judge_silence(&mut self, out: &mut Vec<Decision>) {
        self.silent
            .judge_silence(&mut self.ledger, &self.hosts, out);
    }

    /// As [`Tracker::judge_silence`], at a following reader's tail: a host
    /// whose journal moved since the last tail is judged at the next one.
    /// Returns whether such a host was held back, one that would be silent
    /// now: the caller looks again soon.
    pub fn judge_silence_at_tail(&mut self, out: &mut Vec<Decision>) -> bool {
        self.silent
            .judge_silence_at_tail(&mut self.ledger, &self.hosts, out)
    }

    /// The newest time any host's journal has reached.
    #[must_use]
    pub fn fleet_newest(&self) -> Option<Micros> {
        self.silent.fleet_newest()
    }
}

/// The endpoint groups' member records (see `machine/endpoint/`).
impl Tracker {
    /// The member records changed since the last call, to persist: every
    /// group made again or gone is dropped whole first.
    pub fn take_member_writes(&mut self) -> Vec<MemberWrite> {
        self.outages.take_member_writes()
    }

    /// Puts the stored member records (in key order: by group, then
    /// opening and id) back into their groups.
    pub fn restore_members(&mut self, members: Vec<(String, Member)>) {
        self.outages.restore_members(members);
    }

    /// Every group's members, by group then opening and id (as the
    /// store's records are ordered).
    #[cfg(test)]
    pub(crate) fn members_of(&self) -> Vec<(String, Member)> {
        self.outages.members_of()
    }
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

#[cfg(test)]
mod start_tests;

#[cfg(test)]
mod certificate_tests;

#[cfg(test)]
mod sandbox_tests;

#[cfg(test)]
mod kernel_tests;

#[cfg(test)]
mod eviction_tests;
