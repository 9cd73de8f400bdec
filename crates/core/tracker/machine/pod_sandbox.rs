//! pod-sandbox incidents (design 5.6): pods' sandboxes keep failing on a
//! node that is Ready. A failed sandbox creation opens the node's incident
//! (one open a node) or joins it, one attempt counted once however many
//! lines it writes; a container of a failing pod started is its success.
//! While the node's not-ready incident blames the network or the runtime,
//! the failures are that incident's evidence: the node is not Ready, and
//! this kind is for the Ready node that still starts nothing. Judged on
//! entry time alone, so `scan`, `run --once` and a following run agree.

use crate::signals::{Cause, SignalKind, sandbox_pod};
use crate::time::Micros;
use crate::tracker::decision::{AlertKind, Decision, Observation};
use crate::tracker::evidence::Evidence;
use crate::tracker::hosts::Hosts;
use crate::tracker::kind::Detail;
use crate::tracker::ledger::Ledger;
use crate::tracker::open::OpenKey;
use crate::tracker::terms::IncidentKind;

use super::open_anchored;

/// A line about a pod's sandbox: a failure opens the node's pod-sandbox
/// incident or joins it (or joins its not-ready one); a container started
/// is a success of the open one.
pub(in crate::tracker) fn line(
    l: &mut Ledger,
    h: &mut Hosts,
    obs: &Observation<'_>,
    node: &str,
    out: &mut Vec<Decision>,
) {
    let key = OpenKey::new(IncidentKind::PodSandbox, node);
    l.expire(&key, obs.at, out);
    if obs.signal.kind == SignalKind::ContainerStarted {
        started(l, h, obs, &key, out);
    } else if !joins_not_ready(l, obs, node, out) {
        failed(l, h, obs, &key, sandbox_pod(obs.text).as_deref(), out);
    }
}

/// Whether `host`'s kubelet has written a container start since its last
/// start: it logs at `--v=2` or more, so starts would show.
fn starts_visible(h: &Hosts, host: &str) -> bool {
    h.get(host).is_some_and(|o| {
        o.pods_started_at
            .is_some_and(|t| o.started_at.is_none_or(|s| t >= s))
    })
}

/// A failed sandbox creation of `pod` (none: the runtime's own line).
fn failed(
    l: &mut Ledger,
    h: &Hosts,
    obs: &Observation<'_>,
    key: &OpenKey,
    pod: Option<&str>,
    out: &mut Vec<Decision>,
) {
    let at = obs.at;
    if !l.open.contains_key(key) {
        l.make_room(obs.host.unwrap_or(""), at, out);
        open_anchored(l, h, obs, key.clone(), out);
    }
    let visible = starts_visible(h, obs.host.unwrap_or(""));
    let s = &l.settings;
    let Some(inc) = l.open.get_mut(key) else {
        return;
    };
    let cause = obs.signal.cause.unwrap_or(Cause::Unknown);
    if let Detail::PodSandbox(p) = &mut inc.detail {
        p.starts_visible |= visible;
        p.failed(pod, at, cause, &mut inc.causes);
    }
    inc.last_signal_at = inc.last_signal_at.max(at);
    inc.last_trouble_at = inc.last_trouble_at.max(at);
    // A line older than its opening (a late one, a paste newest first)
    // is placed at its own time.
    inc.opened_at = inc.opened_at.min(at);
    inc.timeline.add(at, obs.signal.kind.as_str());
    inc.add_evidence(
        Evidence::new(at, obs.cursor, obs.signal.kind, obs.text).with_cause(Some(cause)),
    );
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
    // Judged at every line of an attempt: the runtime's names no pod, the
    // next ones the pod whose failing this long makes it persistent.
    let (persistent, flapping) = inc.sandbox().map_or((false, false), |p| {
        (
            p.persistent_at(pod, at, s),
            p.flapping_at.is_none() && p.flaps_at(inc, at, s),
        )
    });
    if persistent {
        // The alert, then a reminder every `repeat_interval` while the
        // failures go on.
        let limits = s.limits(inc.kind(), &inc.node, inc.cause());
        let kind = match (inc.over_threshold_at, inc.last_alert_at) {
            (None, _) => Some(AlertKind::Opened),
            (Some(_), Some(last)) if at - last >= limits.repeat_interval => Some(AlertKind::Repeat),
            _ => None,
        };
        if let Some(kind) = kind {
            inc.over_threshold_at.get_or_insert(at);
            inc.last_alert_at = Some(at);
            out.push(inc.raise(kind, at));
        }
    } else if flapping {
        if let Some(p) = inc.sandbox_mut() {
            p.flapping_at = Some(at);
        }
    }
    l.update_due(key);
}

/// A container started on the node: the host's kubelet writes its starts
/// (noted once a kubelet start, so the host's record is not written at
/// every container's); a success of the open incident when its pod was
/// failing.
fn started(
    l: &mut Ledger,
    h: &mut Hosts,
    obs: &Observation<'_>,
    key: &OpenKey,
    out: &mut Vec<Decision>,
) {
    let at = obs.at;
    let host = obs.host.unwrap_or("");
    if !starts_visible(h, host) {
        h.entry(host).pods_started_at = Some(at);
        h.touch(host);
    }
    let Some(inc) = l.open.get_mut(key) else {
        return;
    };
    let Some(p) = inc.sandbox_mut() else {
        return;
    };
    let visible = p.starts_visible;
    // Which pod: read only while an incident is open (a healthy node's
    // starts cost no second parse).
    if !p.started(sandbox_pod(obs.text).as_deref()) {
        if !visible {
            out.push(Decision::UpdateIncident { id: inc.id.clone() });
        }
        return;
    }
    inc.last_signal_at = inc.last_signal_at.max(at);
    inc.timeline.add(at, obs.signal.kind.as_str());
    inc.add_evidence(Evidence::new(at, obs.cursor, obs.signal.kind, obs.text));
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
}

/// A sandbox failure while the node's not-ready incident blames the
/// container network or the runtime: that incident's line (evidence,
/// counted), not a pod-sandbox incident's. True when it joined one.
fn joins_not_ready(
    l: &mut Ledger,
    obs: &Observation<'_>,
    node: &str,
    out: &mut Vec<Decision>,
) -> bool {
    let key = OpenKey::new(IncidentKind::NotReady, node);
    // A not-ready incident quiet long enough by this line's time has
    // ended (as a following reader would have ended it).
    l.expire(&key, obs.at, out);
    let Some(inc) = l.open.get_mut(&key) else {
        return false;
    };
    if !matches!(inc.cause(), Cause::Cni | Cause::Runtime) {
        return false;
    }
    let at: Micros = obs.at;
    if let Detail::NotReady(r) = &mut inc.detail {
        r.not_ready_signals += 1;
    }
    inc.last_signal_at = inc.last_signal_at.max(at);
    inc.timeline.add(at, obs.signal.kind.as_str());
    inc.add_evidence(
        Evidence::new(at, obs.cursor, obs.signal.kind, obs.text).with_cause(obs.signal.cause),
    );
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
    true
}
