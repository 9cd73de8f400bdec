//! Not-ready incidents (design 5.3): the node is not ready while its
//! kubelet runs — the container network, the runtime, PLEG, or the
//! eviction manager under memory, disk or pid pressure. Judged on entry
//! time alone, so `scan`, `run --once` and a following run agree.

use crate::signals::{Cause, SignalKind, evicted_pod, image_gc};
use crate::time::Micros;
use crate::tracker::decision::{AlertKind, Decision, Observation};
use crate::tracker::evidence::Evidence;
use crate::tracker::hosts::Hosts;
use crate::tracker::kind::{Detail, ImageGc};
use crate::tracker::ledger::Ledger;
use crate::tracker::open::OpenKey;
use crate::tracker::settings::Settings;
use crate::tracker::terms::IncidentKind;

use super::open_anchored;

/// A line about the node's readiness: a trouble line opens the node's
/// not-ready incident (one open a node) or joins it; a supporting line
/// joins an open one and votes for its cause.
pub(in crate::tracker) fn not_ready(
    l: &mut Ledger,
    h: &mut Hosts,
    obs: &Observation<'_>,
    node: &str,
    out: &mut Vec<Decision>,
) {
    let at = obs.at;
    let host = obs.host.unwrap_or("");
    let sig = obs.signal;
    let key = OpenKey::new(IncidentKind::NotReady, node);
    l.expire(&key, at, out);
    let stuck = stuck_starting(&l.settings, h, obs);
    let trouble = sig.kind == SignalKind::NotReady || stuck.is_some();
    if !l.open.contains_key(&key) {
        if !trouble {
            return;
        }
        l.make_room(host, at, out);
        open_anchored(l, h, obs, key.clone(), out);
        let since = stuck.or_else(|| pleg_since(h, obs));
        // The node was ready since its kubelet's last start: this is
        // trouble of a running node (a runtime restarted, a network
        // lost), not the start-up race.
        let ready = h.get(host).is_some_and(|o| {
            o.ready_at
                .is_some_and(|r| r <= at && o.started_at.is_none_or(|s| r >= s))
        });
        // What the host's image garbage collection last did since its
        // kubelet's start (a disk under pressure: could images free it?).
        let gc = h.get(host).and_then(|o| {
            o.image_gc
                .clone()
                .filter(|g| o.started_at.is_none_or(|s| g.at >= s) && g.at <= at)
        });
        if let Some(inc) = l.open.get_mut(&key) {
            if let Detail::NotReady(r) = &mut inc.detail {
                r.ready_since_start = ready;
                r.image_gc = gc;
            }
            if let Some(since) = since {
                // Not ready since its first start-up line, or since PLEG
                // stalled by the kubelet's own count.
                inc.opened_at = since;
                inc.first_trouble = SignalKind::NotReady;
            }
        }
    }
    let s = &l.settings;
    let Some(inc) = l.open.get_mut(&key) else {
        return;
    };
    let cause = sig.cause.unwrap_or(Cause::Unknown);
    if let Detail::NotReady(r) = &mut inc.detail {
        r.not_ready_signals += 1;
        r.last_cause = Some(cause);
    }
    *inc.causes.entry(cause).or_default() += 1;
    inc.last_signal_at = inc.last_signal_at.max(at);
    if trouble {
        inc.last_trouble_at = inc.last_trouble_at.max(at);
        // A line older than its opening (a late one, a paste newest
        // first) is placed at its own time: not ready since then.
        inc.opened_at = inc.opened_at.min(at);
    }
    // A start-up line past its time is trouble, and kept as such.
    let kind = if trouble {
        SignalKind::NotReady
    } else {
        sig.kind
    };
    inc.timeline.add(at, kind.as_str());
    inc.add_evidence(Evidence::new(at, obs.cursor, kind, obs.text).with_cause(sig.cause));
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
    // Persistent once its trouble lasts longer than `not_ready_after`:
    // the alert, then a reminder every `repeat_interval` while it goes on.
    if trouble && inc.last_trouble_at - inc.opened_at > s.not_ready_after {
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
    }
    l.update_due(&key);
}

/// What the eviction manager evicted or image garbage collection did: the
/// host keeps its last collection (a disk-pressure incident that opens
/// later says it); the node's open not-ready incident takes both as
/// evidence, with no vote for its cause. Opens nothing.
pub(in crate::tracker) fn eviction(
    l: &mut Ledger,
    h: &mut Hosts,
    obs: &Observation<'_>,
    node: &str,
    out: &mut Vec<Decision>,
) {
    let at = obs.at;
    let host = obs.host.unwrap_or("");
    let report = (obs.signal.kind == SignalKind::ImageGc)
        .then(|| image_gc(obs.text))
        .flatten();
    let gc = report.map(|report| {
        let origin = h.entry(host);
        let gc = ImageGc::after(origin.image_gc.take(), at, report, obs.text);
        origin.image_gc = Some(gc.clone());
        h.touch(host);
        gc
    });
    let key = OpenKey::new(IncidentKind::NotReady, node);
    l.expire(&key, at, out);
    let Some(inc) = l.open.get_mut(&key) else {
        return;
    };
    if let Some(r) = inc.not_ready_mut() {
        if let Some(gc) = gc {
            // The incident's own, once it is newer than what it holds.
            if r.image_gc.as_ref().is_none_or(|g| g.at <= gc.at) {
                r.image_gc = Some(gc);
            }
        } else if obs.signal.kind == SignalKind::PodEvicted {
            r.evicted(evicted_pod(obs.text), at);
        }
    }
    inc.last_signal_at = inc.last_signal_at.max(at);
    inc.timeline.add(at, obs.signal.kind.as_str());
    inc.add_evidence(Evidence::new(at, obs.cursor, obs.signal.kind, obs.text));
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
}

/// A line of the kubelet's start-up state alone (see
/// [`crate::signals::only_starting`]) is no trouble while it starts;
/// once the host's kubelet has said nothing else for longer than
/// `not_ready_after` since its last start or ready marker, it never
/// finished starting: trouble, since its first such line (returned).
fn stuck_starting(s: &Settings, h: &mut Hosts, obs: &Observation<'_>) -> Option<Micros> {
    if obs.signal.kind != SignalKind::NotReadySupport
        || !crate::signals::says_only_starting(&obs.text.to_ascii_lowercase())
    {
        return None;
    }
    let host = obs.host.unwrap_or("");
    let origin = h.entry(host);
    match origin.starting_since {
        Some(since) if since <= obs.at => (obs.at - since > s.not_ready_after).then_some(since),
        _ => {
            origin.starting_since = Some(obs.at);
            h.touch(host);
            None
        }
    }
}

/// When PLEG became unhealthy by the kubelet's own count on a trouble
/// line (`pleg was last seen active 2h33m12s ago; threshold is 3m0s`),
/// if before the line: not before the kubelet's last start.
fn pleg_since(h: &Hosts, obs: &Observation<'_>) -> Option<Micros> {
    if obs.signal.kind != SignalKind::NotReady {
        return None;
    }
    let stalled = crate::signals::pleg_unhealthy_for(&obs.text.to_ascii_lowercase())?;
    let started = h
        .get(obs.host.unwrap_or(""))
        .and_then(|o| o.started_at)
        .filter(|&t| t <= obs.at);
    let since = obs.at.saturating_sub(stalled);
    Some(started.map_or(since, |t| since.max(t))).filter(|&t| t < obs.at)
}
