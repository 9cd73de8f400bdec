//! The tracker's settings, the per-route thresholds, and their defaults
//! (from [`crate::defaults`]).

use serde::{Deserialize, Serialize};

use super::terms::IncidentKind;
use crate::defaults;
use crate::signals::Cause;
use crate::time::Micros;

/// The tracker's settings; all can change at run time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    pub resolve_after: Micros,
    pub race_window: Micros,
    pub retries: u32,
    /// `[alert] restarts`: a kubelet restarted more often than this within
    /// `window` is in a crash loop.
    #[serde(default = "default_restarts")]
    pub restarts: u32,
    /// `[alert] not_ready_after`: a not-ready incident whose trouble lasts
    /// longer is persistent and alerts (design 5.3).
    #[serde(default = "default_not_ready_after")]
    pub not_ready_after: Micros,
    /// `[alert] start_budget`: a start that reaches Ready later than this
    /// is slow; one not Ready by then, never-ready (design 5.5).
    #[serde(default = "default_start_budget")]
    pub start_budget: Micros,
    /// `[alert] cert_warn`: a certificate incident whose certificate
    /// expires within this (or has expired) is persistent and alerts
    /// (design 5.7).
    #[serde(default = "default_cert_warn")]
    pub cert_warn: Micros,
    /// `[alert] sandbox_after`: a pod-sandbox incident whose failures go
    /// on this long with no pod started is persistent and alerts; with
    /// pods started among them, flapping (design 5.6).
    #[serde(default = "default_sandbox_after")]
    pub sandbox_after: Micros,
    pub window: Micros,
    pub repeat_interval: Micros,
    pub send_resolved: bool,
    /// `[node] name`: the node when neither the line nor the host's
    /// registration says.
    pub node_name: Option<String>,
    /// Per-route thresholds (`[[alert.route]]` with `retries`, `window` or
    /// `repeat_interval`): the first that matches an incident applies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<Threshold>,
    /// Bound on nodes with an open incident from one host
    /// (`[incidents] max_nodes_per_host`).
    #[serde(default = "default_max_nodes_per_host")]
    pub max_nodes_per_host: usize,
    /// Bound on nodes with an open incident in all (`[incidents] max_nodes`).
    #[serde(default = "default_max_nodes")]
    pub max_nodes: usize,
    /// Bound on the hosts read (`[fleet] max_hosts`): entries of a host new
    /// past it are counted, not read.
    #[serde(default = "default_max_hosts")]
    pub max_hosts: usize,
    /// `[fleet] silent_after` with `silent_incidents`: a host whose journal
    /// is this far behind the newest of any host's is a host-silent
    /// incident (0: never).
    #[serde(default = "default_silent_after")]
    pub silent_after: Micros,
    /// `[fleet] min_nodes`: nodes against one endpoint that make an
    /// endpoint incident.
    #[serde(default = "default_fleet_min_nodes")]
    pub fleet_min_nodes: usize,
    /// `[fleet] window`: ... when their incidents opened within this.
    #[serde(default = "default_fleet_window")]
    pub fleet_window: Micros,
}

fn default_silent_after() -> Micros {
    0
}

fn default_fleet_min_nodes() -> usize {
    defaults::FLEET_MIN_NODES as usize
}

fn default_fleet_window() -> Micros {
    defaults::FLEET_WINDOW
}

fn default_max_nodes_per_host() -> usize {
    defaults::MAX_NODES_PER_HOST as usize
}

fn default_start_budget() -> Micros {
    defaults::START_BUDGET
}

fn default_not_ready_after() -> Micros {
    defaults::NOT_READY_AFTER
}

fn default_cert_warn() -> Micros {
    defaults::CERT_WARN
}

fn default_sandbox_after() -> Micros {
    defaults::SANDBOX_AFTER
}

fn default_restarts() -> u32 {
    defaults::RESTARTS
}

fn default_max_hosts() -> usize {
    defaults::MAX_HOSTS as usize
}

fn default_max_nodes() -> usize {
    defaults::MAX_NODES as usize
}

/// Which incidents a route, a threshold or a silence is for: a node glob
/// (`None`: any node), causes and kinds (empty: any). One rule for the
/// three, borrowed from each (a silence names at most one cause and one
/// kind: its options as slices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selector<'a> {
    pub node: Option<&'a str>,
    pub causes: &'a [Cause],
    pub kinds: &'a [IncidentKind],
}

impl Selector<'_> {
    /// Whether an incident of `kind` for `node` with `cause` is selected.
    #[must_use]
    pub fn matches(&self, kind: IncidentKind, node: &str, cause: Cause) -> bool {
        self.node.is_none_or(|g| crate::model::glob(g, node))
            && (self.causes.is_empty() || self.causes.contains(&cause))
            && (self.kinds.is_empty() || self.kinds.contains(&kind))
    }
}

/// Thresholds for the incidents of some nodes and/or causes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Threshold {
    /// A node glob; `None`: any node.
    pub node: Option<String>,
    /// Causes; empty: any.
    pub causes: Vec<Cause>,
    /// Incident kinds; empty: any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<IncidentKind>,
    pub retries: Option<u32>,
    pub window: Option<Micros>,
    pub repeat_interval: Option<Micros>,
}

impl Threshold {
    #[must_use]
    pub fn selector(&self) -> Selector<'_> {
        Selector {
            node: self.node.as_deref(),
            causes: &self.causes,
            kinds: &self.kinds,
        }
    }

    #[must_use]
    pub fn matches(&self, kind: IncidentKind, node: &str, cause: Cause) -> bool {
        self.selector().matches(kind, node, cause)
    }
}

/// What an incident is held to: retries within window, and how often it is
/// reminded of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub retries: u32,
    pub window: Micros,
    pub repeat_interval: Micros,
}

impl Settings {
    /// The limits for an incident of `node` with `cause`: the first
    /// matching override's, the rest from `[alert]`.
    #[must_use]
    pub fn limits(&self, kind: IncidentKind, node: &str, cause: Cause) -> Limits {
        let o = self.overrides.iter().find(|o| o.matches(kind, node, cause));
        Limits {
            retries: o.and_then(|o| o.retries).unwrap_or(self.retries),
            window: o.and_then(|o| o.window).unwrap_or(self.window),
            repeat_interval: o
                .and_then(|o| o.repeat_interval)
                .unwrap_or(self.repeat_interval),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            resolve_after: defaults::RESOLVE_AFTER,
            race_window: defaults::RACE_WINDOW,
            retries: defaults::RETRIES,
            restarts: defaults::RESTARTS,
            not_ready_after: defaults::NOT_READY_AFTER,
            start_budget: defaults::START_BUDGET,
            cert_warn: defaults::CERT_WARN,
            sandbox_after: defaults::SANDBOX_AFTER,
            window: defaults::WINDOW,
            repeat_interval: defaults::REPEAT_INTERVAL,
            send_resolved: defaults::SEND_RESOLVED,
            node_name: None,
            overrides: Vec::new(),
            max_nodes_per_host: default_max_nodes_per_host(),
            max_nodes: default_max_nodes(),
            max_hosts: default_max_hosts(),
            silent_after: if defaults::SILENT_INCIDENTS {
                defaults::SILENT_AFTER
            } else {
                0
            },
            fleet_min_nodes: default_fleet_min_nodes(),
            fleet_window: default_fleet_window(),
        }
    }
}
