//! Certificate incidents (design 5.7): the kubelet's client certificate.
//! Its manager's lines keep what the host's kubelet stated (the host's
//! [`CertWatch`]); a refused rotation or an expired certificate opens the
//! node's incident at once, a rotation deadline passed with no rotation
//! since opens it at the first entry of the host past it (entry time, so
//! `scan`, `run --once` and a following run agree). A new certificate
//! ends it. A rotation that never reached the API server is the node's
//! node-status trouble, not a certificate's.

use crate::signals::{Cause, SignalKind, cert_times};
use crate::time::Micros;
use crate::tracker::decision::{AlertKind, Decision, Observation};
use crate::tracker::evidence::Evidence;
use crate::tracker::hosts::{CertWatch, Hosts};
use crate::tracker::kind::Incident;
use crate::tracker::ledger::Ledger;
use crate::tracker::open::OpenKey;
use crate::tracker::terms::{IncidentKind, Resolution};

/// A certificate manager's line about `node`'s client certificate.
pub(in crate::tracker) fn line(
    l: &mut Ledger,
    h: &mut Hosts,
    obs: &Observation<'_>,
    node: &str,
    out: &mut Vec<Decision>,
) {
    let key = OpenKey::new(IncidentKind::Certificate, node);
    let kind = obs.signal.kind;
    let cause = obs.signal.cause;
    if kind == SignalKind::CertDeadline {
        stated(l, h, obs, &key, out);
    } else if kind == SignalKind::CertRotated {
        if let Some(w) = h
            .get_mut(obs.host.unwrap_or(""))
            .and_then(|o| o.cert.as_mut())
        {
            w.due_at = None;
            h.touch(obs.host.unwrap_or(""));
        }
        if note(l, &key, obs, out) {
            l.resolve(&key, obs.at, Resolution::Rotated, out);
        }
    } else if kind == SignalKind::CertRotating {
        note(l, &key, obs, out);
    } else if kind == SignalKind::CertExpired || cause == Some(Cause::RotationFailing) {
        let c = if kind == SignalKind::CertExpired {
            Cause::Expired
        } else {
            Cause::RotationFailing
        };
        trouble(l, h, obs, &key, c, out);
    } else if kind == SignalKind::CertFailed {
        on_the_way(l, obs, node, out);
    }
}

/// The host's journal reached `at` (any entry of it): a rotation deadline
/// its kubelet stated, passed by then with no rotation since, opens the
/// node's certificate incident (`expiring`; `unknown`: the node of a host
/// that names none). One lookup a call.
pub(in crate::tracker) fn watch(
    l: &mut Ledger,
    h: &mut Hosts,
    (host, at): (&str, Micros),
    unknown: &str,
    out: &mut Vec<Decision>,
) {
    let Some(w) = h.get_mut(host).and_then(|o| o.cert.as_mut()) else {
        return;
    };
    if w.due_at.is_none_or(|d| at < d) {
        return;
    }
    w.due_at = None;
    let (expires_at, deadline, line) = (w.expires_at, w.deadline, w.line.clone());
    h.touch(host);
    let node = h
        .node_of(host)
        .or_else(|| l.settings.node_name.clone())
        .unwrap_or_else(|| {
            if host.is_empty() {
                unknown.to_string()
            } else {
                host.to_string()
            }
        });
    let key = OpenKey::new(IncidentKind::Certificate, &node);
    let opening = !l.open.contains_key(&key);
    if opening {
        open(l, &key, host, at, SignalKind::CertDeadline, out);
    }
    let s = l.settings.clone();
    let Some(inc) = l.open.get_mut(&key) else {
        return;
    };
    if let Some(c) = inc.cert_mut() {
        c.worsen(Cause::Expiring);
        if let Some(e) = expires_at {
            c.expires(e, &s);
        }
        c.rotation_deadline = deadline.or(c.rotation_deadline);
    }
    // The line that stated the deadline is the evidence of the incident
    // it opens; an open one has its own already.
    if let (true, Some(e)) = (opening, line) {
        inc.add_evidence(e);
    }
    inc.last_signal_at = inc.last_signal_at.max(at);
    inc.timeline.add(at, Cause::Expiring.as_str());
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
    judge(inc, at, out);
    l.update_due(&key);
}

/// A new incident for `key`'s node of `host`, opened at `at`.
fn open(
    l: &mut Ledger,
    key: &OpenKey,
    host: &str,
    at: Micros,
    first: SignalKind,
    out: &mut Vec<Decision>,
) {
    l.make_room(host, at, out);
    let host = (!host.is_empty()).then_some(host);
    let inc = Incident::blank(key.incident_id(at), key.kind, &key.subject, host, at, first);
    out.push(Decision::OpenIncident { id: inc.id.clone() });
    l.open.insert(key.clone(), inc);
}

/// Persistent once its certificate expires within `cert_warn` or has
/// expired: the alert then, and again at expiry.
fn judge(inc: &mut Incident, at: Micros, out: &mut Vec<Decision>) {
    if inc.cert_mut().and_then(|c| c.judge(at)).is_none() {
        return;
    }
    let kind = if inc.over_threshold_at.is_none() {
        inc.over_threshold_at = Some(at);
        AlertKind::Opened
    } else {
        AlertKind::Repeat
    };
    inc.last_alert_at = Some(at);
    out.push(inc.raise(kind, at));
}

/// The line joins the open incident as evidence; false when none is open.
fn note(l: &mut Ledger, key: &OpenKey, obs: &Observation<'_>, out: &mut Vec<Decision>) -> bool {
    let Some(inc) = l.open.get_mut(key) else {
        return false;
    };
    inc.last_signal_at = inc.last_signal_at.max(obs.at);
    inc.timeline.add(obs.at, obs.signal.kind.as_str());
    inc.add_evidence(Evidence::new(obs.at, obs.cursor, obs.signal.kind, obs.text));
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
    true
}

/// The manager stated the certificate's expiry and rotation deadline: kept
/// for the host (the deadline judged when the host's journal passes it);
/// a later expiry than the open incident's is a new certificate, which
/// ends it.
#[allow(
    clippy::many_single_char_names,
    reason = "the machines' names: l the ledger, h the hosts, t the times stated"
)]
fn stated(
    l: &mut Ledger,
    h: &mut Hosts,
    obs: &Observation<'_>,
    key: &OpenKey,
    out: &mut Vec<Decision>,
) {
    let at = obs.at;
    let host = obs.host.unwrap_or("");
    let t = cert_times(obs.text);
    let s = l.settings.clone();
    let origin = h.entry(host);
    let known = origin.cert.as_ref().and_then(|w| w.expires_at);
    // The kubelet learns of a deadline already past when it states it (a
    // start late in the certificate's life) and rotates at once: judged
    // `resolve_after` after the later of the two.
    origin.cert = Some(CertWatch {
        expires_at: t.expires_at.or(known),
        deadline: t.deadline,
        due_at: t.deadline.map(|d| d.max(at) + s.resolve_after),
        line: Some(Evidence::new(at, obs.cursor, obs.signal.kind, obs.text)),
    });
    h.touch(host);
    let Some(c) = l.open.get(key).and_then(Incident::cert) else {
        return;
    };
    let later = |old: Option<Micros>| matches!((old, t.expires_at), (Some(o), Some(n)) if n > o);
    // A later expiry is a new certificate; with none known, a deadline
    // still ahead says the kubelet holds one it need not rotate yet.
    let renewed = later(c.expires_at)
        || later(known)
        || (c.expires_at.is_none() && t.deadline.is_some_and(|d| d > at));
    note(l, key, obs, out);
    if renewed {
        l.resolve(key, at, Resolution::Rotated, out);
        return;
    }
    let Some(inc) = l.open.get_mut(key) else {
        return;
    };
    if let Some(c) = inc.cert_mut() {
        if let Some(e) = t.expires_at {
            c.expires(e, &s);
        }
        c.rotation_deadline = t.deadline.or(c.rotation_deadline);
    }
    judge(inc, at, out);
    l.update_due(key);
}

/// A refused rotation (`rotation-failing`) or an expired certificate
/// (`expired`): opens the node's incident, or joins it.
fn trouble(
    l: &mut Ledger,
    h: &Hosts,
    obs: &Observation<'_>,
    key: &OpenKey,
    cause: Cause,
    out: &mut Vec<Decision>,
) {
    let at = obs.at;
    let host = obs.host.unwrap_or("");
    if !l.open.contains_key(key) {
        open(l, key, host, at, obs.signal.kind, out);
    }
    let s = l.settings.clone();
    let watch = h.get(host).and_then(|o| o.cert.as_ref());
    let Some(inc) = l.open.get_mut(key) else {
        return;
    };
    if let Some(c) = inc.cert_mut() {
        c.worsen(cause);
        if cause == Cause::RotationFailing {
            c.rotation_failures += 1;
        }
        let stated = cert_times(obs.text).expires_at;
        if let Some(e) = stated.or_else(|| c.expires_at.or(watch.and_then(|w| w.expires_at))) {
            c.expires(e, &s);
        }
        if c.rotation_deadline.is_none() {
            c.rotation_deadline = watch.and_then(|w| w.deadline);
        }
    }
    *inc.causes.entry(cause).or_default() += 1;
    inc.last_signal_at = inc.last_signal_at.max(at);
    inc.last_trouble_at = inc.last_trouble_at.max(at);
    inc.timeline.add(at, obs.signal.kind.as_str());
    inc.add_evidence(
        Evidence::new(at, obs.cursor, obs.signal.kind, obs.text).with_cause(Some(cause)),
    );
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
    judge(inc, at, out);
    l.update_due(key);
}

/// A rotation that never reached the API server (connection refused, a
/// timeout): evidence of the node's node-status incident against the same
/// endpoint while one is open, else nothing; never a certificate incident
/// (a TLS bootstrap during an API outage is one outage).
fn on_the_way(l: &mut Ledger, obs: &Observation<'_>, node: &str, out: &mut Vec<Decision>) {
    let key = OpenKey::new(IncidentKind::NodeStatus, node);
    let Some(inc) = l.open.get_mut(&key) else {
        return;
    };
    let other = match (inc.api_endpoint(), obs.signal.endpoint.as_deref()) {
        (Some(a), Some(b)) => a != b,
        _ => false,
    };
    if other {
        return;
    }
    inc.last_signal_at = inc.last_signal_at.max(obs.at);
    inc.timeline.add(obs.at, obs.signal.kind.as_str());
    inc.add_evidence(
        Evidence::new(obs.at, obs.cursor, obs.signal.kind, obs.text).with_cause(obs.signal.cause),
    );
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
}
