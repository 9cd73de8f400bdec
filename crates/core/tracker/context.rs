//! Context (design 5.4): the node's other units' lines join the incidents
//! they explain. Each host keeps a bounded window of them in its
//! [`Origin`]; an incident takes the ones that explain it when it opens,
//! when its trouble goes on, and when such a line arrives while it is open.
//! They never open an incident.

use super::open::OpenKey;
use super::{Decision, Detail, Incident, IncidentKind, Tracker, host_key, one_line};
use crate::context::{self as ctx, ContextKind, ContextLine, Trouble};
use crate::signals::Cause;
use crate::time::{clock, human_duration};

/// Names the kubelet runs under: an OOM kill of one is the kubelet's.
const KUBELET_NAMES: &[&str] = &[
    "kubelet",
    "kubenswrapper",
    "hyperkube",
    "kubelite",
    "k3s",
    "k3s-agent",
    "k3s-server",
    "rke2",
];

impl Tracker {
    /// Takes one context line of `host` (journal time `line.at`): into the
    /// host's window, and onto the open incidents of the host it explains.
    pub fn context(&mut self, host: &str, line: ContextLine, out: &mut Vec<Decision>) {
        let origin = self.origins.entry(host.to_string()).or_default();
        origin.context.push(line);
        self.dirty_origins.insert(host.to_string());
        let keys: Vec<OpenKey> = self.open.of_host(host).map(|(k, _)| k.clone()).collect();
        let from = out.len();
        for k in &keys {
            self.link(k, out);
        }
        self.correlate(&keys, from, out);
    }

    /// The kubelet of `host` writes as `pid` (an OOM kill naming it is
    /// the kubelet's).
    pub fn kubelet_pid(&mut self, host: &str, pid: u32) {
        if self.origins.get(host).and_then(|o| o.kubelet_pid) == Some(pid) {
            return;
        }
        self.origins
            .entry(host.to_string())
            .or_default()
            .kubelet_pid = Some(pid);
        self.dirty_origins.insert(host.to_string());
    }

    /// Adds to open incident `key` the host's context lines that explain
    /// it and it lacks (at most [`ctx::INCIDENT_LINES`]).
    pub(super) fn link(&mut self, key: &OpenKey, out: &mut Vec<Decision>) {
        let Some(inc) = self.open.get(key) else {
            return;
        };
        let Some(origin) = self.origins.get(&host_key(inc)) else {
            return;
        };
        if origin.context.is_empty() {
            return;
        }
        let Some(trouble) = inc.trouble(origin.kubelet_pid) else {
            return;
        };
        let new: Vec<ContextLine> =
            ctx::explain(trouble, inc.opened_at, inc.last_trouble_at, &origin.context)
                .into_iter()
                .filter(|l| !inc.context.contains(l))
                .cloned()
                .collect();
        if new.is_empty() || inc.context.len() >= ctx::INCIDENT_LINES {
            return;
        }
        let Some(inc) = self.open.get_mut(key) else {
            return;
        };
        for l in new {
            if inc.context.len() < ctx::INCIDENT_LINES {
                inc.context.push(l);
            }
        }
        inc.context.sort_by_key(|l| l.at);
        out.push(Decision::UpdateIncident { id: inc.id.clone() });
    }
}

impl Incident {
    /// What kind of trouble its context would explain, if any.
    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "a cause not named here explains nothing of this trouble"
    )]
    fn trouble(&self, kubelet_pid: Option<u32>) -> Option<Trouble<'static>> {
        match &self.detail {
            Detail::KubeletDown(_) => Some(Trouble::KubeletDown {
                pid: kubelet_pid,
                names: KUBELET_NAMES,
            }),
            Detail::NodeStatus(_) => match self.cause() {
                Cause::ApiUnreachable | Cause::ApiTimeout => Some(Trouble::Network),
                Cause::Auth if self.certificate_time() => Some(Trouble::Clock),
                _ => None,
            },
            // A runtime that is down or slow: its unit stopped, failed or
            // restarting around it explains it.
            Detail::NotReady(_) => {
                matches!(self.cause(), Cause::Runtime | Cause::Pleg).then_some(Trouble::Runtime)
            }
            Detail::HostSilent(_) | Detail::Endpoint(_) => None,
        }
    }

    /// Its errors say a certificate is expired or not yet valid: what a
    /// clock that is wrong makes of a good certificate.
    fn certificate_time(&self) -> bool {
        self.evidence()
            .any(|e| e.cause == Some(Cause::Auth) && e.text.contains("expired or is not yet valid"))
    }

    /// The OOM killer killed the kubelet (a line in its context).
    #[must_use]
    pub fn oom_killed(&self) -> bool {
        self.kind() == IncidentKind::KubeletDown
            && self.context.iter().any(|l| l.kind == ContextKind::OomKill)
    }

    /// The host lost its own link during this node-status trouble: it is
    /// its own, not an endpoint's outage.
    #[must_use]
    pub fn lost_link(&self) -> bool {
        self.kind() == IncidentKind::NodeStatus
            && matches!(self.cause(), Cause::ApiUnreachable | Cause::ApiTimeout)
            && self.context.iter().any(|l| l.kind == ContextKind::LinkLost)
    }

    /// What its context says, in words for the diagnosis ("" for none).
    #[must_use]
    pub fn context_words(&self) -> String {
        let Some(first) = self.context.first() else {
            return String::new();
        };
        let when = |l: &ContextLine| {
            let d = l.at - self.opened_at;
            let s = human_duration(d.abs());
            if d < 0 {
                format!("{} ({s} before it began)", clock(l.at))
            } else {
                format!("{} ({s} after it began)", clock(l.at))
            }
        };
        let quote = |l: &ContextLine| format!("{}: {}", l.unit, one_line(&l.text, 200));
        let find = |k: ContextKind| self.context.iter().find(|l| l.kind == k);
        let mut parts = Vec::new();
        if let Some(l) = find(ContextKind::OomKill) {
            parts.push(format!(
                "The kernel's OOM killer killed the kubelet at {} ({}).",
                when(l),
                quote(l)
            ));
        }
        let runtime: Vec<&ContextLine> = self
            .context
            .iter()
            .filter(|l| l.kind.is_runtime())
            .collect();
        if let Some(l) = runtime.first() {
            let how = if runtime.iter().any(|l| l.kind == ContextKind::RuntimeFailed) {
                "failed (nobody asked it to stop)"
            } else if runtime
                .iter()
                .any(|l| l.kind == ContextKind::RuntimeRestarting)
            {
                "was restarted by systemd after it died"
            } else if runtime
                .iter()
                .any(|l| l.kind == ContextKind::RuntimeStopping)
            {
                "was stopped on request (systemctl stop or restart, an upgrade)"
            } else if runtime
                .iter()
                .any(|l| l.kind == ContextKind::RuntimeStopped)
            {
                "stopped"
            } else {
                "was started"
            };
            parts.push(format!(
                "The container runtime {} {how} at {} ({}).",
                l.unit,
                when(l),
                quote(l)
            ));
        }
        if let Some(l) = find(ContextKind::LinkLost) {
            parts.push(format!(
                "The node lost its network: its own link went down at {} ({}); the API server \
                 may well be fine, and this node is not counted toward an endpoint outage.",
                when(l),
                quote(l)
            ));
        }
        if let Some(l) = find(ContextKind::ClockStep) {
            parts.push(format!(
                "The node's clock was stepped at {} ({}): certificates look expired or not yet \
                 valid to a clock that is wrong; check the node's time sync before the \
                 certificates.",
                when(l),
                quote(l)
            ));
        }
        if parts.is_empty() {
            parts.push(format!("Context: {} at {}.", quote(first), when(first)));
        }
        parts.join(" ")
    }
}
