//! The incident kinds, one file each: its own data, its verdict, its
//! cause vote, when it is due, what its context explains and its
//! diagnosis. [`Detail`] holds one kind's data a variant, and every rule
//! of [`Incident`] is one delegating line per kind (mini-redis's
//! `cmd/mod.rs`), so a new kind is a compile error at each of them.

mod certificate;
mod endpoint;
mod host_silent;
mod kernel;
mod kubelet_down;
mod node_status;
mod not_ready;
mod pod_sandbox;

use serde::{Deserialize, Serialize};

pub use certificate::ClientCert;
pub use endpoint::Outage;
pub use host_silent::Silent;
pub use kernel::{HungTask, KernelTrouble, NpdCondition};
pub use kubelet_down::Down;
pub(crate) use kubelet_down::systemd_span;
pub use node_status::{Counters, NodeStatus};
pub use not_ready::{EVICTED_KEPT, ImageGc, NotReady};
pub use pod_sandbox::{Attempt, FailingPod, PodSandbox};

use super::decision::{AlertKind, Alerted, Decision, Observation};
use super::incident::IncidentOf;
use super::settings::{Limits, Settings};
use super::terms::{IncidentKind, Status, Verdict};
use super::timeline::Timeline;
use crate::context::{ContextKind, Trouble};
use crate::signals::{Cause, SignalKind};
use crate::time::Micros;

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
    Certificate(ClientCert),
    PodSandbox(PodSandbox),
    Kernel(KernelTrouble),
}

/// The tracker's incident: what every kind has, and its kind's [`Detail`].
pub type Incident = IncidentOf<Detail>;

impl Detail {
    #[must_use]
    pub fn kind(&self) -> IncidentKind {
        match self {
            Detail::NodeStatus(_) => IncidentKind::NodeStatus,
            Detail::KubeletDown(_) => IncidentKind::KubeletDown,
            Detail::NotReady(_) => IncidentKind::NotReady,
            Detail::HostSilent(_) => IncidentKind::HostSilent,
            Detail::Endpoint(_) => IncidentKind::Endpoint,
            Detail::Certificate(_) => IncidentKind::Certificate,
            Detail::PodSandbox(_) => IncidentKind::PodSandbox,
            Detail::Kernel(_) => IncidentKind::Kernel,
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
            IncidentKind::Certificate => Detail::Certificate(ClientCert::default()),
            IncidentKind::PodSandbox => Detail::PodSandbox(PodSandbox::default()),
            IncidentKind::Kernel => Detail::Kernel(KernelTrouble::default()),
        }
    }

    /// Quiet came at `due` to an incident that waits for something (a
    /// kubelet-down one for a restart after its exit): it is judged then
    /// (true), not ended.
    pub(crate) fn judged_at_due(&mut self, due: Micros) -> bool {
        match self {
            Detail::KubeletDown(d) => d.judged_at_due(due),
            Detail::Certificate(c) => c.judged_at_due(due),
            Detail::NodeStatus(_)
            | Detail::PodSandbox(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_)
            | Detail::Kernel(_) => false,
        }
    }

    /// When the node's informer caches synced, before the incident's
    /// anchor (a marker on its picture).
    #[must_use]
    pub fn caches_synced_at(&self) -> Option<Micros> {
        match self {
            Detail::NodeStatus(n) => n.caches_synced_at,
            Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => None,
        }
    }

    /// When the host's journal last wrote, for an incident about its
    /// host's silence (its next steps are about the host, not the node).
    #[must_use]
    pub fn silent_since(&self) -> Option<Micros> {
        match self {
            Detail::HostSilent(h) => Some(h.last_entry_at),
            Detail::NodeStatus(_)
            | Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::Endpoint(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => None,
        }
    }

    /// The incident that held this one open (see
    /// [`IncidentKind::held_by`]) ended at `at`: its quiet counts from then.
    pub(crate) fn released(&mut self, at: Micros) {
        match self {
            Detail::NotReady(r) => r.released(at),
            Detail::NodeStatus(_)
            | Detail::KubeletDown(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => {}
        }
    }
}

/// A kind's own record of an incident, to read (`$get`) and, for its
/// machine, to change (`$get_mut`): one line a kind whose record its
/// machine keeps, instead of a match naming every other kind twice.
macro_rules! records {
    ($($(#[$m:meta])* $vis:vis fn $get:ident, $get_mut:ident -> $variant:ident($ty:ty);)+) => {
        $(
            $(#[$m])*
            #[must_use]
            #[allow(
                clippy::wildcard_enum_match_arm,
                reason = "the other kinds have none of this record"
            )]
            $vis fn $get(&self) -> Option<&$ty> {
                match &self.detail {
                    Detail::$variant(d) => Some(d),
                    _ => None,
                }
            }

            $(#[$m])*
            /// For its state machine.
            #[allow(
                clippy::wildcard_enum_match_arm,
                reason = "the other kinds have none of this record"
            )]
            pub(super) fn $get_mut(&mut self) -> Option<&mut $ty> {
                match &mut self.detail {
                    Detail::$variant(d) => Some(d),
                    _ => None,
                }
            }
        )+
    };
}

impl Incident {
    /// One more counted event (a status retry, a restart) at `at`: over the
    /// threshold once more than `allowed` fall within the window. Crossing
    /// it raises the alert; staying over it a reminder every
    /// `repeat_interval`. Returns whether it is over now.
    pub(super) fn count_toward_threshold(
        &mut self,
        at: Micros,
        allowed: u32,
        limits: &Limits,
        out: &mut Vec<Decision>,
    ) -> bool {
        self.recent.push_back(at);
        while self.recent.len() > allowed as usize + 1 {
            self.recent.pop_front();
        }
        let over = self.recent.len() > allowed as usize
            && self
                .recent
                .front()
                .is_some_and(|&first| at - first <= limits.window);
        if !over {
            return false;
        }
        let kind = if self.over_threshold_at.is_none() {
            self.over_threshold_at = Some(at);
            AlertKind::Opened
        } else if self
            .last_alert_at
            .is_some_and(|last| at - last >= limits.repeat_interval)
        {
            AlertKind::Repeat
        } else {
            return true;
        };
        self.last_alert_at = Some(at);
        out.push(self.raise(kind, at));
        true
    }

    /// The decision to alert of `kind` at `at`, with what admission needs
    /// of this incident.
    #[must_use]
    pub fn raise(&self, kind: AlertKind, at: Micros) -> Decision {
        Decision::QueueAlert {
            id: self.id.clone(),
            kind,
            at,
            about: Alerted {
                node: self.node.clone(),
                host: self.host.clone().unwrap_or_default(),
                hosts: self.hosts(),
                announced: self.announced,
            },
        }
    }

    /// The hosts whose lines this incident is of: an endpoint incident's
    /// members' hosts, else its own.
    #[must_use]
    pub fn hosts(&self) -> Vec<String> {
        match &self.detail {
            Detail::Endpoint(o) => o.hosts.clone(),
            Detail::NodeStatus(_)
            | Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => vec![self.host.clone().unwrap_or_default()],
        }
    }

    /// A new incident of `kind` for `node`, opened by the observation's
    /// signal at its time: every counter zero, nothing yet said of it.
    #[must_use]
    pub(super) fn opening(
        id: String,
        kind: IncidentKind,
        node: &str,
        obs: &Observation<'_>,
    ) -> Self {
        Self::blank(id, kind, node, obs.host, obs.at, obs.signal.kind)
    }

    /// A new incident of `kind` for `node` of `host`, opened at `at`.
    #[must_use]
    pub(super) fn blank(
        id: String,
        kind: IncidentKind,
        node: &str,
        host: Option<&str>,
        at: Micros,
        first_trouble: SignalKind,
    ) -> Self {
        Self {
            id,
            node: node.to_string(),
            host: host.map(str::to_string),
            opened_at: at,
            last_signal_at: at,
            last_trouble_at: at,
            resolved_at: None,
            resolution: None,
            over_threshold_at: None,
            last_alert_at: None,
            alerted_at: None,
            announced: false,
            anchor: None,
            first_trouble,
            causes: std::collections::BTreeMap::new(),
            recent: std::collections::VecDeque::new(),
            evidence_head: Vec::new(),
            evidence_tail: std::collections::VecDeque::new(),
            evidence_dropped: 0,
            ack: None,
            context: Vec::new(),
            timeline: Timeline::default(),
            start: None,
            detail: Detail::of(kind),
        }
    }

    /// What it is about.
    #[must_use]
    pub fn kind(&self) -> IncidentKind {
        self.detail.kind()
    }

    records! {
        /// A kubelet-down incident's record.
        pub(super) fn down, down_mut -> KubeletDown(Down);
        /// A certificate incident's record.
        pub fn cert, cert_mut -> Certificate(ClientCert);
        /// A pod-sandbox incident's record.
        pub fn sandbox, sandbox_mut -> PodSandbox(PodSandbox);
        /// A kernel incident's record.
        pub fn kernel, kernel_mut -> Kernel(KernelTrouble);
        /// A not-ready incident's record.
        pub fn not_ready, not_ready_mut -> NotReady(NotReady);
    }

    /// The node-status counters (zeros for the other kinds, as the JSON
    /// contract shows them).
    #[must_use]
    pub fn counters(&self) -> Counters {
        match &self.detail {
            Detail::NodeStatus(n) => n.counters,
            Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => Counters::default(),
        }
    }

    /// Status retries and failed registrations: what the threshold counts.
    #[must_use]
    pub fn counted_retries(&self) -> u64 {
        self.counters().counted_retries()
    }

    /// The API endpoint (`host:port`) its errors name: a node-status
    /// incident's first naming one, an endpoint incident's own.
    #[must_use]
    pub fn api_endpoint(&self) -> Option<&str> {
        match &self.detail {
            Detail::NodeStatus(n) => n.api_endpoint.as_deref(),
            Detail::Endpoint(o) => Some(&o.endpoint),
            Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => None,
        }
    }

    /// An endpoint incident's nodes (none for the other kinds).
    #[must_use]
    pub fn nodes(&self) -> &[String] {
        match &self.detail {
            Detail::Endpoint(o) => &o.nodes,
            Detail::NodeStatus(_)
            | Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => &[],
        }
    }

    /// The endpoint incident that stands for this node-status one.
    #[must_use]
    pub fn covered_by(&self) -> Option<&str> {
        match &self.detail {
            Detail::NodeStatus(n) => n.covered_by.as_deref(),
            Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => None,
        }
    }

    /// Marks a node-status incident as covered by endpoint incident `by`
    /// (or by none); the other kinds are never covered.
    pub fn set_covered_by(&mut self, by: Option<String>) {
        if let Detail::NodeStatus(n) = &mut self.detail {
            n.covered_by = by;
        }
    }

    /// Restarts for kubelet-down incidents (0 for the others).
    #[must_use]
    pub fn restarts(&self) -> u64 {
        match &self.detail {
            Detail::KubeletDown(d) => d.restarts,
            Detail::NodeStatus(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => 0,
        }
    }

    /// Its counter: the lines it has.
    #[must_use]
    pub fn not_ready_signals(&self) -> u64 {
        match &self.detail {
            Detail::NotReady(r) => r.not_ready_signals,
            Detail::NodeStatus(_)
            | Detail::KubeletDown(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => 0,
        }
    }

    /// Its verdict (design 5 and each kind's section): see each kind's
    /// `verdict`; an incident that ended without one is transient, one
    /// still open undetermined.
    #[must_use]
    pub fn verdict(&self, s: &Settings) -> Verdict {
        let ended = match self.status() {
            Status::Resolved => Verdict::Transient,
            Status::Open => Verdict::Undetermined,
        };
        match &self.detail {
            Detail::NodeStatus(n) => n.verdict(self, s, ended),
            Detail::KubeletDown(d) => d.verdict(ended),
            Detail::NotReady(r) => r.verdict(self, s, ended),
            Detail::Certificate(c) => c.verdict(self, ended),
            Detail::PodSandbox(p) => p.verdict(self, ended),
            Detail::Kernel(k) => k.verdict(),
            Detail::Endpoint(_) if self.over_threshold_at.is_some() => Verdict::Persistent,
            Detail::HostSilent(_) | Detail::Endpoint(_) => ended,
        }
    }

    /// The most frequent cause class; ties go to the more serious one
    /// (kubelet-down and not-ready: see theirs).
    #[must_use]
    pub fn cause(&self) -> Cause {
        match &self.detail {
            Detail::KubeletDown(d) => d.cause(self),
            Detail::NotReady(r) => r.cause(self),
            Detail::Certificate(c) => c.cause(),
            Detail::PodSandbox(p) => p.cause(self),
            Detail::Kernel(k) => k.cause(),
            Detail::NodeStatus(_) | Detail::HostSilent(_) | Detail::Endpoint(_) => self.top_cause(),
        }
    }

    /// When it is due to resolve (or, kubelet-down with an exit and no
    /// restart, to be judged failed) on quiet; `None`: not on quiet (a
    /// host-silent one ends only with its host's next entry, an endpoint
    /// one with its last node's incident).
    #[must_use]
    pub fn due(&self, resolve_after: Micros) -> Option<Micros> {
        match &self.detail {
            Detail::NodeStatus(_) => Some(NodeStatus::due(self, resolve_after)),
            Detail::KubeletDown(d) => d.due(self, resolve_after),
            Detail::NotReady(r) => Some(r.due(self, resolve_after)),
            Detail::Certificate(c) => c.due(self, resolve_after),
            Detail::PodSandbox(_) => Some(PodSandbox::due(self, resolve_after)),
            Detail::Kernel(k) => k.due(),
            Detail::HostSilent(_) | Detail::Endpoint(_) => None,
        }
    }

    /// One paragraph for a person.
    #[must_use]
    pub fn diagnosis(&self, s: &Settings) -> String {
        match &self.detail {
            Detail::NodeStatus(n) => n.diagnosis(self, self.verdict(s), self.cause(), s),
            Detail::KubeletDown(d) => d.diagnosis(self, self.verdict(s), self.cause(), s),
            Detail::NotReady(r) => r.diagnosis(self, self.verdict(s), self.cause(), s),
            Detail::HostSilent(h) => h.diagnosis(self, s),
            Detail::Endpoint(o) => o.diagnosis(self, self.cause()),
            Detail::Certificate(c) => c.diagnosis(self, self.verdict(s), s),
            Detail::PodSandbox(p) => p.diagnosis(self, self.verdict(s), self.cause(), s),
            Detail::Kernel(k) => k.diagnosis(self, s),
        }
    }

    /// What kind of trouble its context would explain, if any.
    pub(crate) fn trouble(&self, kubelet_pid: Option<u32>) -> Option<Trouble> {
        match &self.detail {
            Detail::NodeStatus(_) => NodeStatus::trouble(self, self.cause()),
            Detail::KubeletDown(_) => Some(Down::trouble(kubelet_pid)),
            Detail::NotReady(_) => Some(NotReady::trouble(self.cause())),
            // Whatever its cause: the runtime's unit, hung tasks, netdev
            // waits, a read-only file system (design 5.8).
            Detail::PodSandbox(_) => Some(Trouble::Sandbox),
            Detail::Kernel(_) => Some(Trouble::Kernel),
            Detail::HostSilent(_) | Detail::Endpoint(_) | Detail::Certificate(_) => None,
        }
    }

    /// The OOM killer killed the kubelet (a line in its context).
    #[must_use]
    pub fn oom_killed(&self) -> bool {
        match &self.detail {
            Detail::KubeletDown(_) => Down::oom_killed(self),
            Detail::NodeStatus(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => false,
        }
    }

    /// The host lost its own link during this node-status trouble: it is
    /// its own, not an endpoint's outage.
    #[must_use]
    pub fn lost_link(&self) -> bool {
        match &self.detail {
            Detail::NodeStatus(_) => {
                matches!(self.cause(), Cause::ApiUnreachable | Cause::ApiTimeout)
                    && self.context.iter().any(|l| l.kind == ContextKind::LinkLost)
            }
            Detail::KubeletDown(_)
            | Detail::NotReady(_)
            | Detail::HostSilent(_)
            | Detail::Endpoint(_)
            | Detail::Certificate(_)
            | Detail::PodSandbox(_)
            | Detail::Kernel(_) => false,
        }
    }
}
