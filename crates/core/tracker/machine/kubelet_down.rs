//! Kubelet-down incidents: the kubelet's own life under systemd (starts,
//! exits, restarts, systemd giving up) as the tracker counts it.

use crate::signals::{Cause, Signal, SignalKind};
use crate::time::Micros;
use crate::tracker::decision::{Decision, Observation};
use crate::tracker::evidence::Evidence;
use crate::tracker::hosts::Hosts;
use crate::tracker::kind::{Detail, Incident};
use crate::tracker::ledger::Ledger;
use crate::tracker::open::OpenKey;
use crate::tracker::terms::{IncidentKind, Resolution};

use super::open_anchored;

/// The kubelet's own life (design 5.1): systemd's lines about the unit
/// and the kubelet's fatal line make `kubelet-down` incidents.
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
)]
pub(in crate::tracker) fn life(
    l: &mut Ledger,
    h: &mut Hosts,
    obs: &Observation<'_>,
    node: &str,
    out: &mut Vec<Decision>,
) {
    let at = obs.at;
    let host = obs.host.unwrap_or("");
    let sig = obs.signal;
    let key = OpenKey::new(IncidentKind::KubeletDown, node);
    l.expire(&key, at, out);
    // The node's incidents this one holds open whose quiet was over by
    // now end before it can open and hold them: a following service,
    // whose clock moves on between entries, ends them then too.
    for held in held_by_down() {
        l.expire(&OpenKey::new(held, node), at, out);
    }
    let down = l.open.get(&key).and_then(Incident::down);
    let pending = down.and_then(|d| d.pending);
    let restarting = down.is_some_and(|d| d.restarting);
    let stopping = h.get(host).is_some_and(|o| o.stopping);
    let evidence = Evidence::new(at, obs.cursor, sig.kind, obs.text).with_cause(sig.cause);
    match sig.kind {
        SignalKind::KubeletStopping | SignalKind::KubeletStopped => {
            // systemd's own restart after a failed exit says so first
            // (`Scheduled restart job`, `holdoff time over`): a stop with
            // none since the exit is a stop job, asked for while the unit
            // waited to restart (`systemctl stop` during a crash loop).
            let asked = !restarting;
            stopped(l, h, obs, &key, asked, evidence, out);
            return;
        }
        SignalKind::KubeletStarted => {
            started(l, h, obs, &key, pending.is_some(), evidence, out);
            return;
        }
        // An exit while a stop that was asked for is under way was
        // asked for too; a fatal line or systemd giving up never is.
        SignalKind::KubeletExited | SignalKind::KubeletFailed | SignalKind::KubeletRestart
            if stopping =>
        {
            if let Some(inc) = l.open.get_mut(&key) {
                inc.add_evidence(evidence);
            }
            return;
        }
        _ => {}
    }
    if !l.open.contains_key(&key) {
        l.make_room(host, at, out);
        open_anchored(l, h, obs, key.clone(), out);
    }
    let Some(inc) = l.open.get_mut(&key) else {
        return;
    };
    inc.last_signal_at = inc.last_signal_at.max(at);
    inc.last_trouble_at = inc.last_trouble_at.max(at);
    inc.timeline.add(at, sig.kind.as_str());
    let (restarted, gave_up) = record_life(inc, sig, &evidence, at);
    inc.add_evidence(evidence);
    out.push(Decision::UpdateIncident { id: inc.id.clone() });
    if restarted {
        restart(l, &key, at, out);
    }
    if gave_up {
        l.gave_up(&key, at, out);
    }
    l.update_due(&key);
}

/// The kinds a kubelet-down incident holds open (see
/// [`IncidentKind::held_by`]).
fn held_by_down() -> impl Iterator<Item = IncidentKind> {
    IncidentKind::ALL
        .iter()
        .copied()
        .filter(|k| k.held_by() == Some(IncidentKind::KubeletDown))
}

/// systemd stops the kubelet (`Stopping`, `Stopped`): a stop that was
/// `asked` for (no restart of systemd's under way) ends the node's
/// kubelet-down incident and those it holds; one that is part of a
/// restart joins the open incident.
fn stopped(
    l: &mut Ledger,
    h: &mut Hosts,
    obs: &Observation<'_>,
    key: &OpenKey,
    asked: bool,
    evidence: Evidence,
    out: &mut Vec<Decision>,
) {
    let at = obs.at;
    let host = obs.host.unwrap_or("");
    let now_stopping = obs.signal.kind == SignalKind::KubeletStopping && asked;
    let origin = h.entry(host);
    if origin.stopping != now_stopping {
        origin.stopping = now_stopping;
        h.touch(host);
    }
    if asked {
        // A stop that was asked for ends the node's not-ready incident
        // too: nothing is left to be not ready.
        for held in held_by_down() {
            let held = OpenKey::new(held, &key.subject);
            l.expire(&held, at, out);
            if let Some(inc) = l.open.get_mut(&held) {
                inc.add_evidence(evidence.clone());
            }
            l.resolve(&held, at, Resolution::Stopped, out);
        }
        if let Some(inc) = l.open.get_mut(key) {
            inc.add_evidence(evidence);
        }
        l.resolve(key, at, Resolution::Stopped, out);
    } else if let Some(inc) = l.open.get_mut(key) {
        inc.add_evidence(evidence);
        inc.last_signal_at = inc.last_signal_at.max(at);
        out.push(Decision::UpdateIncident { id: inc.id.clone() });
    }
}

/// The kubelet started: a restart of the open incident's when an
/// unrequested exit came before it.
fn started(
    l: &mut Ledger,
    h: &mut Hosts,
    obs: &Observation<'_>,
    key: &OpenKey,
    restarted: bool,
    evidence: Evidence,
    out: &mut Vec<Decision>,
) {
    let (host, at) = (obs.host.unwrap_or(""), obs.at);
    let origin = h.entry(host);
    if origin.stopping {
        origin.stopping = false;
        h.touch(host);
    }
    let Some(inc) = l.open.get_mut(key) else {
        return;
    };
    inc.add_evidence(evidence);
    inc.last_signal_at = inc.last_signal_at.max(at);
    inc.last_trouble_at = inc.last_trouble_at.max(at);
    if let Some(d) = inc.down_mut() {
        d.pending = None;
        d.restarting = false;
    }
    if restarted {
        restart(l, key, at, out);
    }
    l.update_due(key);
    if let Some(inc) = l.open.get(key) {
        out.push(Decision::UpdateIncident { id: inc.id.clone() });
    }
}

/// A kubelet-down incident's restart: counted, and held to
/// `[alert] restarts` within `window`.
fn restart(l: &mut Ledger, key: &OpenKey, at: Micros, out: &mut Vec<Decision>) {
    let s = &l.settings;
    let Some(inc) = l.open.get_mut(key) else {
        return;
    };
    let limits = s.limits(inc.kind(), &inc.node, inc.cause());
    // A route's `retries` counts node-status retries; its `window` and
    // `repeat_interval` hold here too.
    let restarts = s.restarts;
    let Some(d) = inc.down_mut() else {
        return;
    };
    d.restarts += 1;
    d.first_restart_at.get_or_insert(at);
    if inc.count_toward_threshold(at, restarts, &limits, out) {
        if let Some(d) = inc.down_mut() {
            d.crash_loop_at.get_or_insert(at);
        }
    }
}

/// What one line of the kubelet's life under systemd does to its open
/// kubelet-down incident's record: (restarted, systemd gave up).
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
)]
fn record_life(inc: &mut Incident, sig: &Signal, evidence: &Evidence, at: Micros) -> (bool, bool) {
    let Detail::KubeletDown(d) = &mut inc.detail else {
        return (false, false);
    };
    let mut gave_up = false;
    let mut restarted = false;
    match sig.kind {
        SignalKind::KubeletFatal => {
            d.restarting = false;
            let cause = sig.cause.unwrap_or(Cause::Unknown);
            *inc.causes.entry(cause).or_default() += 1;
            d.fatals += 1;
            d.last_cause = Some(cause);
            d.last_fatal = Some(evidence.clone());
            d.pending.get_or_insert(at);
        }
        SignalKind::KubeletExited => {
            d.restarting = false;
            d.exits += 1;
            if let Some(e) = &sig.exit {
                d.last_exit = Some(e.clone());
                d.exit_cause = Some(crate::signals::exit_cause(e));
            }
            d.pending.get_or_insert(at);
        }
        SignalKind::KubeletFailed => {
            if let Some(limit) = sig
                .exit
                .as_deref()
                .and_then(|e| e.strip_prefix("watchdog timeout (limit "))
                .and_then(|l| crate::tracker::kind::systemd_span(l.trim_end_matches(')')))
            {
                d.watchdog_limit = Some(limit);
            }
            if let Some(e) = &sig.exit {
                let c = crate::signals::exit_cause(e);
                if d.pending.is_none() || d.last_exit.is_none() {
                    d.last_exit = Some(e.clone());
                }
                if c != Cause::Unknown || d.exit_cause.is_none() {
                    d.exit_cause = Some(c);
                }
            }
            d.pending.get_or_insert(at);
        }
        SignalKind::KubeletGaveUp => {
            // Old systemd says `holdoff time over, scheduling restart.`
            // and then refuses to start: that restart never was.
            if d.restarting {
                d.restarting = false;
                d.restarts = d.restarts.saturating_sub(1);
            }
            d.pending.get_or_insert(at);
            if d.gave_up_at.is_none() {
                d.gave_up_at = Some(at);
                gave_up = true;
            }
        }
        SignalKind::KubeletRestart => {
            // systemd may say it twice (`hold-off time over`, then
            // `Scheduled restart job`): one restart.
            d.pending = None;
            restarted = !d.restarting;
            d.restarting = true;
        }
        _ => {}
    }
    (restarted, gave_up)
}
