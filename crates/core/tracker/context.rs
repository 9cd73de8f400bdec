//! Context (design 5.4): the node's other units' lines join the incidents
//! they explain. Each host keeps a bounded window of them in its
//! [`Origin`]; an incident takes the ones that explain it when it opens,
//! when its trouble goes on, and when such a line arrives while it is open.
//! They never open an incident.

use super::open::OpenKey;
use super::{Decision, Tracker, host_key};
use crate::context::{self as ctx, ContextLine};

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
