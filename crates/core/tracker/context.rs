//! Context (design 5.4): the node's other units' lines join the incidents
//! they explain. Each host keeps a bounded window of them in its
//! record ([`super::hosts::Origin`]); an incident takes the ones that explain it when it opens,
//! when its trouble goes on, and when such a line arrives while it is open.
//! They never open an incident.

use super::decision::Decision;
use super::hosts::Hosts;
use super::ledger::{Ledger, host_key};
use super::open::OpenKey;
use crate::context::{self as ctx, ContextLine};

/// Takes one context line of `host` into the host's window; returns the
/// host's open incidents, which it may explain (see [`link`]).
pub(super) fn take(l: &Ledger, h: &mut Hosts, host: &str, line: ContextLine) -> Vec<OpenKey> {
    h.entry(host).context.push(line);
    h.touch(host);
    l.open.of_host(host).map(|(k, _)| k.clone()).collect()
}

/// The kubelet of `host` writes as `pid` (an OOM kill naming it is the
/// kubelet's).
pub(super) fn kubelet_pid(h: &mut Hosts, host: &str, pid: u32) {
    if h.get(host).and_then(|o| o.kubelet_pid) == Some(pid) {
        return;
    }
    h.entry(host).kubelet_pid = Some(pid);
    h.touch(host);
}

/// Adds to open incident `key` the host's context lines that explain
/// it and it lacks (at most [`ctx::INCIDENT_LINES`]); a line that goes on a
/// run of alike ones it has replaces the run's latest (see
/// [`ctx::run_end`]), so a flood in the window is a flood of two lines
/// here too, even when the incident has all its lines.
pub(super) fn link(l: &mut Ledger, h: &Hosts, key: &OpenKey, out: &mut Vec<Decision>) {
    let Some(inc) = l.open.get(key) else {
        return;
    };
    let Some(origin) = h.get(&host_key(inc)) else {
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
            .filter(|c| !inc.context.contains(c))
            .cloned()
            .collect();
    if new.is_empty() {
        return;
    }
    let Some(inc) = l.open.get_mut(key) else {
        return;
    };
    let mut changed = false;
    for line in new {
        if let Some(i) = ctx::run_end(&inc.context, &line) {
            inc.context[i] = line;
            changed = true;
        } else if inc.context.len() < ctx::INCIDENT_LINES {
            inc.context.push(line);
            changed = true;
        }
    }
    if changed {
        inc.context.sort_by_key(|c| c.at);
        out.push(Decision::UpdateIncident { id: inc.id.clone() });
    }
}
