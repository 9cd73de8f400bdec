//! The words every incident kind shares, below the incident and its kinds:
//! what it is about, whether it is open, the verdict, how it ended. Each
//! has one spelling (`spelling!`) for serde, clap, `Display` and `FromStr`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Open,
    Resolved,
}

crate::kinds::spelling!(Status {
    Open => "open",
    Resolved => "resolved",
});

/// What an incident is about (design 3.3): the node's status, the
/// kubelet's own life, the node's readiness, a collector's host that
/// stopped writing, or an API endpoint several nodes lost.
/// An incident stored before kinds existed is a node-status one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IncidentKind {
    #[default]
    NodeStatus,
    KubeletDown,
    /// The node not ready while its kubelet runs (design 5.3).
    NotReady,
    HostSilent,
    /// Several nodes in trouble against one API endpoint at once: one
    /// outage (design 5.2); its nodes' incidents stay their own.
    Endpoint,
    /// The kubelet's client certificate past its rotation deadline, near
    /// expiry or expired, or its rotation refused (design 5.7).
    Certificate,
    /// Pods' sandboxes keep failing on a node that is Ready (design 5.6).
    PodSandbox,
    /// The kernel reports what breaks the node whatever its kubelet says:
    /// a file system read-only, tasks hung (design 5.8).
    Kernel,
}

crate::kinds::spelling!(IncidentKind {
    NodeStatus => "node-status",
    KubeletDown => "kubelet-down",
    NotReady => "not-ready",
    HostSilent => "host-silent",
    Endpoint => "endpoint",
    Certificate => "certificate",
    PodSandbox => "pod-sandbox",
    Kernel => "kernel",
});

impl IncidentKind {
    /// The kind whose open incident of the same node holds this kind's
    /// open: a node's not-ready incident stays open while its kubelet-down
    /// one is (the kubelet is not there to say), and its quiet counts from
    /// that one's end.
    #[must_use]
    pub fn held_by(self) -> Option<IncidentKind> {
        match self {
            Self::NotReady => Some(Self::KubeletDown),
            Self::NodeStatus
            | Self::KubeletDown
            | Self::HostSilent
            | Self::Endpoint
            | Self::Certificate
            | Self::PodSandbox
            | Self::Kernel => None,
        }
    }

    /// Whether a node-ready marker ends the node's open incident of this
    /// kind (a node-status incident's own rule is its machine's).
    #[must_use]
    pub fn ends_at_node_ready(self) -> bool {
        match self {
            Self::KubeletDown | Self::NotReady => true,
            // A Ready node says nothing of its certificate, and a Ready
            // node that starts no pod is what a pod-sandbox incident is.
            // A Ready node says nothing of its certificate, nor of its
            // kernel (a read-only file system stays so until the next boot).
            Self::NodeStatus
            | Self::HostSilent
            | Self::Endpoint
            | Self::Certificate
            | Self::PodSandbox
            | Self::Kernel => false,
        }
    }

    /// Whether an open incident of this kind is kept by its host, not by
    /// its node (a host-silent one: a host that wrote nothing names none).
    #[must_use]
    pub fn kept_by_host(self) -> bool {
        match self {
            Self::HostSilent => true,
            Self::NodeStatus
            | Self::KubeletDown
            | Self::NotReady
            | Self::Endpoint
            | Self::Certificate
            | Self::PodSandbox
            | Self::Kernel => false,
        }
    }

    /// Whether incidents of this kind stand for several nodes (derived
    /// from their incidents, kept with them, never evicted).
    #[must_use]
    pub fn of_many_nodes(self) -> bool {
        match self {
            Self::Endpoint => true,
            Self::NodeStatus
            | Self::KubeletDown
            | Self::NotReady
            | Self::HostSilent
            | Self::Certificate
            | Self::PodSandbox
            | Self::Kernel => false,
        }
    }

    /// What came before the subject of an open incident's key when keys
    /// were strings: its id is made of these bytes, and the open
    /// incidents are ordered by them.
    #[must_use]
    pub(crate) fn key_prefix(self) -> &'static str {
        match self {
            Self::NodeStatus => "",
            Self::KubeletDown => "kubelet-down:",
            Self::NotReady => "not-ready:",
            Self::HostSilent => "host-silent:",
            Self::Endpoint => "endpoint:",
            Self::Certificate => "certificate:",
            Self::PodSandbox => "pod-sandbox:",
            Self::Kernel => "kernel:",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    StartupRace,
    Transient,
    Persistent,
    Undetermined,
    /// kubelet-down: more than `[alert] restarts` restarts within `window`.
    CrashLoop,
    /// kubelet-down: systemd gave up (start limit), or the unit stayed
    /// failed with no restart for `resolve_after`.
    Failed,
    /// pod-sandbox: sandboxes failed for `sandbox_after` while pods still
    /// started among them (a flaky network plugin): reported, not paged.
    Flapping,
}

crate::kinds::spelling!(Verdict {
    StartupRace => "startup-race",
    Transient => "transient",
    Persistent => "persistent",
    Undetermined => "undetermined",
    CrashLoop => "crash-loop",
    Failed => "failed",
    Flapping => "flapping",
});

/// How an incident ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resolution {
    /// A node-ready marker for the node.
    NodeReady,
    /// No trouble signal for `resolve_after`.
    Quiet,
    /// Closed to make room: its host (or the whole reader) had more nodes
    /// in trouble than `[incidents] max_nodes_per_host` (`max_nodes`), and
    /// it was the one quiet longest. No resolved notice: nothing confirmed
    /// that the trouble ended.
    Evicted,
    /// Closed, not resolved: the service was switched to another journal,
    /// which nothing says confirms or ends it (no resolved notice).
    SourceChanged,
    /// kubelet-down: a stop that was asked for (`systemctl stop`, shutdown,
    /// an upgrade's restart).
    Stopped,
    /// host-silent: the host's journal was written again.
    Wrote,
    /// certificate: the kubelet has a new client certificate (a later
    /// expiration stated, its CSR issued).
    Rotated,
    /// kernel: the host booted again (the kernel's `Linux version` line).
    Rebooted,
}
