//! node-status incidents' machine (design 5): a trouble line opens the
//! node's incident (anchored at its registration or kubelet start) or
//! joins it; trouble and supporting lines count toward the threshold; a
//! marker (registered, started, caches synced, ready) is kept in its
//! host's record, joins the open incident, and a node-ready marker ends
//! it, with the node's incidents of the kinds that end there.

use crate::signals::{Cause, Role, SignalKind};
use crate::time::{Micros, SECOND};
use crate::tracker::decision::{Decision, Observation};
use crate::tracker::evidence::Evidence;
use crate::tracker::hosts::{Hosts, ORIGIN_MARKERS};
use crate::tracker::incident::Anchor;
use crate::tracker::kind::{Detail, Incident, NodeStatus};
use crate::tracker::ledger::{Ledger, host_key};
use crate::tracker::open::OpenKey;
use crate::tracker::terms::{IncidentKind, Resolution};

/// Where `node`'s node-status incident is kept (made once a line: every
/// line of the node may change it).
pub(in crate::tracker) fn key(node: String) -> OpenKey {
    OpenKey {
        kind: IncidentKind::NodeStatus,
        subject: node,
    }
}

/// A line's own time cannot be trusted: the node's open incident says so
/// (and stays out of the endpoint groups: it cannot be placed beside the
/// others).
pub(in crate::tracker) fn clock_untrusted(l: &mut Ledger, key: &OpenKey, out: &mut Vec<Decision>) {
    if let Some(i) = l.open.get_mut(key) {
        if let Detail::NodeStatus(n) = &mut i.detail {
            if !n.clock_untrusted {
                n.clock_untrusted = true;
                out.push(Decision::UpdateIncident { id: i.id.clone() });
            }
        }
    }
}

/// A line of node-status's (a trouble, supporting or marker line) about
/// the node of `key`.
pub(in crate::tracker) fn line(
    l: &mut Ledger,
    h: &mut Hosts,
    obs: &Observation<'_>,
    key: &OpenKey,
    out: &mut Vec<Decision>,
) {
    let at = obs.at;
    match obs.signal.kind.role() {
        Role::Marker => marker(l, h, obs, key, out),
        Role::Trouble => {
            l.expire(key, at, out);
            if !l.open.contains_key(key) {
                l.make_room(obs.host.unwrap_or(""), at, out);
                open(l, h, obs, key.clone(), out);
            }
            count(l, obs, key, out);
        }
        Role::Supporting => {
            l.expire(key, at, out);
            if l.open.contains_key(key) {
                count(l, obs, key, out);
            }
        }
    }
}

#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
)]
fn marker(
    l: &mut Ledger,
    h: &mut Hosts,
    obs: &Observation<'_>,
    key: &OpenKey,
    out: &mut Vec<Decision>,
) {
    let at = obs.at;
    let host = obs.host.unwrap_or("");
    let node = key.subject.as_str();
    match obs.signal.kind {
        SignalKind::RegisterAttempt => h.entry(host).registered_node = Some(node.to_string()),
        SignalKind::Registered => h.register(host, node, at),
        SignalKind::KubeletStarted => {
            let origin = h.entry(host);
            origin.started_at = Some(at);
            origin.starting_since = None;
        }
        SignalKind::NodeReady => {
            let origin = h.entry(host);
            origin.starting_since = None;
            origin.ready_at = Some(at);
        }
        SignalKind::CachesSynced => h.entry(host).caches_synced_at = Some(at),
        _ => {}
    }
    h.touch(host);
    let evidence = Evidence::new(at, obs.cursor, obs.signal.kind, obs.text);
    let markers = &mut h.entry(host).markers;
    markers.push_back(evidence.clone());
    if markers.len() > ORIGIN_MARKERS {
        markers.pop_front();
    }
    l.expire(key, at, out);
    let ready = obs.signal.kind == SignalKind::NodeReady;
    if let Some(inc) = l.open.get_mut(key) {
        inc.add_evidence(evidence.clone());
        // A marker is kept as evidence but is not trouble: the kubelet
        // restarting after the last retry does not make the trouble last
        // longer (the recheck's mail ran its time line to the last restart
        // while its diagnosis ended at the last retry). Ready ends it.
        if ready {
            inc.last_signal_at = inc.last_signal_at.max(at);
            l.resolve(key, at, Resolution::NodeReady, out);
        } else {
            out.push(Decision::UpdateIncident { id: inc.id.clone() });
        }
    }
    if !ready {
        return;
    }
    for kind in IncidentKind::ALL.iter().filter(|k| k.ends_at_node_ready()) {
        let key = OpenKey::new(*kind, node);
        l.expire(&key, at, out);
        if let Some(inc) = l.open.get_mut(&key) {
            inc.add_evidence(evidence.clone());
            inc.last_signal_at = inc.last_signal_at.max(at);
        }
        l.resolve(&key, at, Resolution::NodeReady, out);
    }
}

fn open(l: &mut Ledger, h: &Hosts, obs: &Observation<'_>, key: OpenKey, out: &mut Vec<Decision>) {
    let node = key.subject.as_str();
    let at = obs.at;
    let origin = h.get(obs.host.unwrap_or(""));
    // The registration or kubelet start this trouble came after.
    let registered = h.registered(node).filter(|&t| t <= at).map(|t| Anchor {
        kind: SignalKind::Registered,
        at: t,
    });
    let started = origin
        .and_then(|o| o.started_at)
        .filter(|&t| t <= at)
        .map(|t| Anchor {
            kind: SignalKind::KubeletStarted,
            at: t,
        });
    let anchor = match (registered, started) {
        (Some(r), Some(s)) => Some(if s.at > r.at { s } else { r }),
        (r, s) => r.or(s),
    };
    let caches_synced_at = origin
        .and_then(|o| o.caches_synced_at)
        .filter(|&c| anchor.is_none_or(|a| c <= a.at));
    let lookback: Micros = l.settings.race_window.max(60 * SECOND);
    let mut inc = Incident {
        anchor,
        detail: Detail::NodeStatus(NodeStatus {
            caches_synced_at,
            ..NodeStatus::default()
        }),
        ..Incident::opening(key.incident_id(at), IncidentKind::NodeStatus, node, obs)
    };
    if let Some(o) = origin {
        o.mark(&mut inc, at, lookback);
    }
    out.push(Decision::OpenIncident { id: inc.id.clone() });
    l.open.insert(key, inc);
}

#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
)]
fn count(l: &mut Ledger, obs: &Observation<'_>, key: &OpenKey, out: &mut Vec<Decision>) {
    let s = &l.settings;
    let Some(inc) = l.open.get_mut(key) else {
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
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
    if counted_retry {
        let limits = s.limits(inc.kind(), &inc.node, inc.cause());
        inc.count_toward_threshold(at, limits.retries, &limits, out);
    }
    let (host, deadline) = (host_key(inc), at + s.resolve_after);
    l.due_by(host, deadline);
}
