//! node-status incidents' machine (design 5): a trouble line opens the
//! node's incident (anchored at its registration or kubelet start) or
//! joins it; trouble and supporting lines count toward the threshold.

use crate::signals::{Cause, Role, SignalKind};
use crate::time::SECOND;
use crate::tracker::evidence::Evidence;
use crate::tracker::kind::{Detail, Incident, NodeStatus};
use crate::tracker::open::OpenKey;
use crate::tracker::terms::IncidentKind;
use crate::tracker::{Anchor, Decision, Observation, Tracker, host_key};

impl Tracker {
    pub(crate) fn open_incident(
        &mut self,
        obs: &Observation<'_>,
        key: OpenKey,
        out: &mut Vec<Decision>,
    ) {
        let node = key.subject.as_str();
        let at = obs.at;
        let host = obs.host.unwrap_or("");
        let origin = self.origins.get(host).cloned().unwrap_or_default();
        // The registration or kubelet start this trouble came after.
        let registered = self.registered(node).filter(|&t| t <= at).map(|t| Anchor {
            kind: SignalKind::Registered,
            at: t,
        });
        let started = origin.started_at.filter(|&t| t <= at).map(|t| Anchor {
            kind: SignalKind::KubeletStarted,
            at: t,
        });
        let anchor = match (registered, started) {
            (Some(r), Some(s)) => Some(if s.at > r.at { s } else { r }),
            (r, s) => r.or(s),
        };
        let caches_synced_at = origin
            .caches_synced_at
            .filter(|&c| anchor.is_none_or(|a| c <= a.at));
        let lookback = self.settings.race_window.max(60 * SECOND);
        let mut inc = Incident {
            anchor,
            detail: Detail::NodeStatus(NodeStatus {
                caches_synced_at,
                ..NodeStatus::default()
            }),
            ..Incident::opening(key.incident_id(at), IncidentKind::NodeStatus, node, obs)
        };
        origin.mark(&mut inc, at, lookback);
        out.push(Decision::OpenIncident { id: inc.id.clone() });
        self.open.insert(key, inc);
    }

    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
    )]
    pub(crate) fn count(&mut self, obs: &Observation<'_>, key: &OpenKey, out: &mut Vec<Decision>) {
        let s = &self.settings;
        let Some(inc) = self.open.get_mut(key) else {
            return;
        };
        let Detail::NodeStatus(n) = &mut inc.detail else {
            return;
        };
        let at = obs.at;
        let sig = obs.signal;
        let cause = sig.cause.unwrap_or(Cause::Unknown);
        if n.api_endpoint.is_none() {
            n.api_endpoint.clone_from(&sig.endpoint);
        }
        let c = &mut n.counters;
        let mut counted_retry = false;
        match sig.kind {
            SignalKind::StatusRetry => {
                c.retries += 1;
                counted_retry = true;
            }
            SignalKind::RegisterFailed => {
                c.register_failures += 1;
                counted_retry = true;
            }
            SignalKind::StatusExhausted => c.exhausted += 1,
            SignalKind::ListerMiss => c.lister_misses += 1,
            SignalKind::LeaseFailed => c.lease_failures += 1,
            SignalKind::WatchFailed => c.watch_failures += 1,
            _ => {}
        }
        // The exhausted line carries no error of its own ("exceeds retry
        // count"), so it says nothing about the lister.
        if sig.kind.role() == Role::Trouble
            && cause != Cause::ListerLag
            && sig.kind != SignalKind::StatusExhausted
        {
            n.non_lister_trouble += 1;
        }
        inc.last_signal_at = inc.last_signal_at.max(at);
        *inc.causes.entry(cause).or_default() += 1;
        if sig.kind.role() == Role::Trouble {
            inc.last_trouble_at = inc.last_trouble_at.max(at);
        }
        if sig.kind.role() != Role::Marker {
            inc.timeline.add(at, sig.kind.as_str());
        }
        inc.add_evidence(Evidence::new(at, obs.cursor, sig.kind, obs.text).with_cause(sig.cause));
        let id = inc.id.clone();
        out.push(Decision::UpdateIncident { id: id.clone() });
        if counted_retry {
            let limits = s.limits(inc.kind(), &inc.node, inc.cause());
            inc.count_toward_threshold(at, limits.retries, &limits, out);
        }
        let deadline = at + s.resolve_after;
        let d = self.due.entry(host_key(inc)).or_insert(deadline);
        *d = (*d).min(deadline);
    }
}
