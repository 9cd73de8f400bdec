//! What each host told lately: one [`Origin`] a host (persisted one
//! record a host, written when it changes), and who registered each node,
//! derived from them. Below the ledger and the machines, which read and
//! change them.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::evidence::Evidence;
use super::kind::Incident;
use super::start::Start;
use crate::keyed::HostMap;
use crate::time::Micros;

/// What one kubelet (one host) told us lately. Persisted one record a host
/// (the store's `hosts` tree), written when it changes; what it does not
/// know is left out of the record (most hosts of a collector know only
/// their last entry and pid: 60 bytes, not 190).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The node this host's kubelet last registered (or tried to) as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) registered_node: Option<String>,
    /// The node its lines last named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) named_node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) started_at: Option<Micros>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) caches_synced_at: Option<Micros>,
    /// The node this host's kubelet last registered, and when: kept with
    /// the host (written when it changes), not in one map of every node
    /// written with every commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) registration: Option<(String, Micros)>,
    /// Recent markers, kept as evidence for an incident that opens soon after.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub(crate) markers: VecDeque<Evidence>,
    /// systemd is stopping the kubelet as asked (`Stopping kubelet…` with
    /// no failed exit before it): its exit now is no crash.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stopping: bool,
    /// How far the host's journal has got (the newest entry time read of
    /// it): what its silence is judged by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_entry_at: Option<Micros>,
    /// The host's recent context lines (design 5.4), bounded.
    #[serde(default, skip_serializing_if = "crate::context::Window::is_empty")]
    pub(crate) context: crate::context::Window,
    /// The pid its kubelet last wrote as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kubelet_pid: Option<u32>,
    /// When its node last said it was ready (a node-ready marker): a
    /// not-ready incident after that, however soon after the kubelet's
    /// start, is no start-up race.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ready_at: Option<Micros>,
    /// Since when its kubelet has said only its start-up state (`container
    /// runtime status check may not have completed yet`, `pleg has yet to
    /// be successful`), since its last start or ready marker: trouble once
    /// that outlasts `not_ready_after` (it never finished starting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) starting_since: Option<Micros>,
    /// Its kubelet's start under way, until the node's ready marker or
    /// the next start (design 5.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) start: Option<Start>,
    /// Its kubelet's start before that (Ready, or ended by the next
    /// start): a line dated within it, handed on late, still marks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_start: Option<Start>,
    /// What its kubelet last stated of its client certificate (design
    /// 5.7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cert: Option<CertWatch>,
    /// The first container start its kubelet wrote since its last start
    /// (PLEG's `ContainerStarted`, at `--v=2` or more): its starts show,
    /// so a pod-sandbox incident without one started none (design 5.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pods_started_at: Option<Micros>,
    /// The tasks its kernel reported hung since its last boot (design
    /// 5.8), at most [`HUNG_WATCHED`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) hung: Vec<HungWatch>,
    /// What its image garbage collection last did (design 5.3): a disk
    /// pressure incident that opens later says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) image_gc: Option<super::kind::ImageGc>,
}

/// Tasks a host's record follows at most (the kernel reports ten hung
/// tasks a boot by default, `hung_task_warnings`).
pub(crate) const HUNG_WATCHED: usize = 8;

/// A task the host's kernel reported hung: since when it has been blocked,
/// by its reports so far. One report's `blocked for more than N seconds`
/// puts its start N seconds before the report; a later report of the same
/// task and pid whose start falls before the previous report (give or
/// take a minute) is the same blocking, which lasts
/// from the earliest start to the latest report. Since 4.19 the kernel
/// writes how long the task has been blocked; before, its timeout at every
/// report (120, 120, …): both add up the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HungWatch {
    pub(crate) task: String,
    pub(crate) pid: u32,
    pub(crate) since: Micros,
    pub(crate) last_at: Micros,
}

/// What a kubelet last stated of its client certificate: when it expires,
/// when it will rotate, and whether that deadline is still to be judged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertWatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<Micros>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) deadline: Option<Micros>,
    /// The entry time past which, with no rotation since, the deadline
    /// passed (the deadline and `resolve_after`, the time a rotation takes
    /// when the CSR is approved at once); `None` once judged or rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) due_at: Option<Micros>,
    /// The line that stated them: the evidence of the incident it opens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) line: Option<Evidence>,
}

pub(crate) const ORIGIN_MARKERS: usize = 8;

impl Origin {
    /// Adds the host's markers of the `lookback` before `at` to `inc` as
    /// evidence (an incident opening soon after them).
    pub(crate) fn mark(&self, inc: &mut Incident, at: Micros, lookback: Micros) {
        for m in self
            .markers
            .iter()
            .filter(|m| m.at <= at && at - m.at <= lookback)
        {
            inc.add_evidence(m.clone());
        }
    }
}

/// The hosts' records and the index of registrations derived from them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Hosts {
    origins: HostMap<String, Origin>,
    /// When each node last registered, in states written before
    /// registrations moved to [`Origin::registration`]; read, never written.
    registered_at: BTreeMap<String, Micros>,
    /// Who registered each node, and when: derived from the hosts'
    /// [`Origin::registration`], so a new incident finds its node's without
    /// a pass over every host.
    registrations: BTreeMap<String, BTreeMap<String, Micros>>,
    /// Hosts whose [`Origin`] changed since [`Hosts::take_dirty`].
    dirty: HostMap<String, ()>,
}

impl Hosts {
    /// From a state written before the records were kept apart.
    pub(crate) fn from_state(
        origins: BTreeMap<String, Origin>,
        registered_at: BTreeMap<String, Micros>,
    ) -> Self {
        let mut h = Self {
            registered_at,
            ..Self::default()
        };
        h.restore(origins);
        h
    }

    /// Puts back the records the store keeps (over the ones here).
    pub(crate) fn restore(&mut self, origins: impl IntoIterator<Item = (String, Origin)>) {
        self.origins.extend(origins);
        self.registrations.clear();
        for (h, o) in self.origins.iter() {
            if let Some((n, t)) = &o.registration {
                self.registrations
                    .entry(n.clone())
                    .or_default()
                    .insert(h.clone(), *t);
            }
        }
    }

    /// Takes every record out (moving a store of the earlier layout).
    pub(crate) fn take_all(&mut self) -> Vec<(String, Origin)> {
        std::mem::take(&mut self.origins).into_sorted()
    }

    pub(crate) fn get(&self, host: &str) -> Option<&Origin> {
        self.origins.get(host)
    }

    pub(crate) fn get_mut(&mut self, host: &str) -> Option<&mut Origin> {
        self.origins.get_mut(host)
    }

    pub(crate) fn insert(&mut self, host: &str, o: Origin) {
        self.origins.insert(host.to_string(), o);
    }

    /// `host`'s record, made if it has none; [`Hosts::touch`] it when it
    /// changes.
    pub(crate) fn entry(&mut self, host: &str) -> &mut Origin {
        self.origins
            .get_or_insert_with(host, || host.to_string(), Origin::default)
    }

    /// `host`'s record changed: written at the next commit.
    pub(crate) fn touch(&mut self, host: &str) {
        self.dirty
            .get_or_insert_with(host, || host.to_string(), || ());
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &Origin)> {
        self.origins.iter()
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut Origin)> {
        self.origins.iter_mut()
    }

    pub(crate) fn len(&self) -> usize {
        self.origins.len()
    }

    /// The node `host`'s kubelet registered as (or tried to), else the
    /// one its lines last named.
    pub(crate) fn node_of(&self, host: &str) -> Option<String> {
        self.origins
            .get(host)
            .and_then(|o| o.registered_node.clone().or_else(|| o.named_node.clone()))
    }

    /// `host` registered `node` at `at`.
    pub(crate) fn register(&mut self, host: &str, node: &str, at: Micros) {
        let origin = self.entry(host);
        origin.registered_node = Some(node.to_string());
        if let Some((old, _)) = origin.registration.replace((node.to_string(), at)) {
            self.unregister(&old, host);
        }
        self.registrations
            .entry(node.to_string())
            .or_default()
            .insert(host.to_string(), at);
        self.touch(host);
    }

    /// When `node` last registered: the latest of the hosts that say so.
    pub(crate) fn registered(&self, node: &str) -> Option<Micros> {
        self.registrations
            .get(node)
            .and_then(|by| by.values().copied().max())
            .or_else(|| self.registered_at.get(node).copied())
    }

    /// Forgets `host`'s record (written as gone at the next commit).
    pub(crate) fn forget(&mut self, host: &str) {
        if let Some((node, _)) = self.origins.remove(host).and_then(|o| o.registration) {
            self.unregister(&node, host);
        }
        self.dirty.insert(host.to_string(), ());
    }

    /// Takes `host`'s registration of `node` out of the index (it
    /// registered another, or its record was forgotten).
    fn unregister(&mut self, node: &str, host: &str) {
        if let Some(by) = self.registrations.get_mut(node) {
            by.remove(host);
            if by.is_empty() {
                self.registrations.remove(node);
            }
        }
    }

    /// The records changed since the last call, to persist; `None`: the
    /// host's record was forgotten.
    pub(crate) fn take_dirty(&mut self) -> Vec<(String, Option<Origin>)> {
        std::mem::take(&mut self.dirty)
            .into_sorted()
            .into_iter()
            .map(|(h, ())| {
                let o = self.origins.get(&h).cloned();
                (h, o)
            })
            .collect()
    }
}
