//! Each kind's own data: one variant of [`Detail`] per kind, so every
//! reader takes the kind with one exhaustive `match` and a new kind is a
//! compile error until each place handles it (design 3.3 for the fields).

use serde::{Deserialize, Serialize};

use super::evidence::Evidence;
use super::terms::IncidentKind;
use crate::signals::Cause;
use crate::time::Micros;

/// A kubelet-down incident's own counters (design 5.1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Down {
    /// Starts after an unrequested exit (systemd's restart lines, or a
    /// start after a failed exit where they are missing).
    pub restarts: u64,
    /// Unrequested exits systemd reported.
    pub exits: u64,
    /// The kubelet's fatal lines.
    pub fatals: u64,
    /// systemd's last word on how it ended (`code=exited, status=1/FAILURE`).
    pub last_exit: Option<String>,
    /// The kubelet's last fatal line (bounded like all evidence).
    pub last_fatal: Option<Evidence>,
    /// An unrequested exit (or fatal line) with no start after it yet.
    pub pending: Option<Micros>,
    /// When more than `[alert] restarts` restarts first fell within `window`.
    pub crash_loop_at: Option<Micros>,
    /// When systemd gave up (or the unit stayed failed for `resolve_after`).
    pub gave_up_at: Option<Micros>,
    /// The cause the last exit status says (no fatal line: `exec`, `killed`).
    pub exit_cause: Option<Cause>,
    /// The cause of the last fatal line: a tie between causes goes to it.
    pub last_cause: Option<Cause>,
    /// The first restart seen.
    pub first_restart_at: Option<Micros>,
    /// systemd scheduled a restart that has not started yet (its `Stopped`
    /// line is part of the restart, not a stop that was asked for).
    #[serde(default)]
    pub restarting: bool,
}

/// The six node-status counters (design 3.3): the JSON contract shows them
/// for every incident, flattened (zeros for the other kinds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub retries: u64,
    pub exhausted: u64,
    pub lister_misses: u64,
    pub register_failures: u64,
    pub lease_failures: u64,
    pub watch_failures: u64,
}

impl Counters {
    /// Status retries and failed registrations: what the threshold counts.
    #[must_use]
    pub fn counted_retries(&self) -> u64 {
        self.retries + self.register_failures
    }
}

/// A node-status incident's own data: a running kubelet cannot update or
/// register its Node (design 5).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    #[serde(flatten)]
    pub counters: Counters,
    /// The last cache-sync marker before the anchor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches_synced_at: Option<Micros>,
    /// Trouble signals whose cause was not the local lister.
    #[serde(default)]
    pub non_lister_trouble: u64,
    /// The API endpoint (`host:port`) its first error naming one named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_endpoint: Option<String>,
    /// The endpoint incident that stands for it (its alerts are that
    /// incident's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covered_by: Option<String>,
    /// A line of it was dated by a clock that cannot be trusted (before any
    /// kubelet, or more than a day past the reader's clock): its times say nothing of
    /// when the others' trouble was, so it is no member of an outage.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clock_untrusted: bool,
}

/// A not-ready incident's own data: the node is not ready while its
/// kubelet runs (design 5.3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotReady {
    /// Its lines, trouble and supporting.
    pub not_ready_signals: u64,
    /// The cause of its latest line: a tie between causes goes to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_cause: Option<Cause>,
    /// Its quiet is counted from here: the end of the node's kubelet-down
    /// incident that held it open (0: from its last trouble).
    #[serde(default)]
    pub quiet_from: Micros,
}

/// A host-silent incident's own data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Silent {
    /// The time the host's journal had reached when it stopped.
    pub last_entry_at: Micros,
}

/// An endpoint incident's own data: one outage of several nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outage {
    /// The API endpoint (`host:port`) its nodes lost.
    pub endpoint: String,
    /// Its nodes, in the order they joined.
    pub nodes: Vec<String>,
    /// Their hosts (for whether its trouble is live).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
}

/// What one kind of incident has that the others do not: one variant per
/// kind, so every reader takes the kind with one exhaustive `match` and a
/// new kind is a compile error until each place handles it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Detail {
    NodeStatus(NodeStatus),
    KubeletDown(Down),
    NotReady(NotReady),
    HostSilent(Silent),
    Endpoint(Outage),
}

impl Detail {
    #[must_use]
    pub fn kind(&self) -> IncidentKind {
        match self {
            Detail::NodeStatus(_) => IncidentKind::NodeStatus,
            Detail::KubeletDown(_) => IncidentKind::KubeletDown,
            Detail::NotReady(_) => IncidentKind::NotReady,
            Detail::HostSilent(_) => IncidentKind::HostSilent,
            Detail::Endpoint(_) => IncidentKind::Endpoint,
        }
    }

    /// A new incident's detail of `kind`: nothing counted yet.
    #[must_use]
    pub fn of(kind: IncidentKind) -> Self {
        match kind {
            IncidentKind::NodeStatus => Detail::NodeStatus(NodeStatus::default()),
            IncidentKind::KubeletDown => Detail::KubeletDown(Down::default()),
            IncidentKind::NotReady => Detail::NotReady(NotReady::default()),
            IncidentKind::HostSilent => Detail::HostSilent(Silent::default()),
            IncidentKind::Endpoint => Detail::Endpoint(Outage::default()),
        }
    }
}
