//! Endpoint incidents (design 5.2): one outage, one page. Fed the node
//! incidents the tracker just changed, never a clock: entry time only.
//!
//! The rules, in one place:
//! - a group is one API endpoint and one cause class of
//!   [`FLEET_CAUSES`]; its members are the open node-status incidents
//!   whose `api_endpoint` and cause are those;
//! - members of at least `fleet_min_nodes` hosts that opened within
//!   `fleet_window` of the first of them (one host is never an outage,
//!   however many nodes it names) open the group's endpoint incident, opened at
//!   that first one's time; every member open then is in it;
//! - a member that comes later joins it (its `nodes`; no new page);
//! - it is over threshold once one of its nodes is: its alert stands for
//!   theirs. A member is `covered_by` it: the member's own alerts are not
//!   raised from then on (nor its resolved notice, unless its own alert
//!   was delivered before it joined);
//! - it resolves when none of its nodes has an open incident against its
//!   endpoint any more, at the latest of their ends.
//!
//! Architecture invariant: the endpoint incident is derived from the node
//! incidents' entry times alone, so `scan`, catch-up and following agree.

#[allow(clippy::wildcard_imports)]
use super::*;
use incident::EVIDENCE_HEAD;

/// The cause classes an outage of one endpoint shows as.
pub(crate) const FLEET_CAUSES: [Cause; 4] = [
    Cause::ApiUnreachable,
    Cause::ApiTimeout,
    Cause::Auth,
    Cause::Etcd,
];

/// Where a group's endpoint incident is kept among the open ones.
pub(super) fn endpoint_key(endpoint: &str, cause: Cause) -> String {
    format!(
        "{}:{endpoint}:{}",
        IncidentKind::Endpoint.as_str(),
        cause.as_str()
    )
}

/// The group a node-status incident belongs to, if any.
fn group_of(i: &Incident) -> Option<(String, Cause)> {
    if i.kind != IncidentKind::NodeStatus || i.resolved_at.is_some() {
        return None;
    }
    let cause = i.cause();
    let ep = i.api_endpoint.as_ref()?;
    FLEET_CAUSES.contains(&cause).then(|| (ep.clone(), cause))
}

impl Tracker {
    /// Indexes `node`'s open incident by its endpoint (once it names one).
    pub(super) fn index_endpoint(&mut self, node: &str) {
        if let Some(ep) = self.open.get(node).and_then(|i| i.api_endpoint.clone()) {
            self.by_endpoint
                .entry(ep)
                .or_default()
                .insert(node.to_string());
        }
    }

    /// Rebuilds the endpoint index from the open incidents (restore).
    pub(super) fn reindex_endpoints(&mut self) {
        self.by_endpoint.clear();
        let nodes: Vec<String> = self
            .open
            .iter()
            .filter(|(_, i)| i.kind == IncidentKind::NodeStatus)
            .map(|(k, _)| k.clone())
            .collect();
        for n in nodes {
            self.index_endpoint(&n);
        }
    }

    /// After the tracker changed `nodes`' incidents (decisions from
    /// `out[from..]` on): opens, joins and resolves endpoint incidents, and
    /// takes back the alerts of covered nodes.
    pub(super) fn correlate(&mut self, nodes: &[String], from: usize, out: &mut Vec<Decision>) {
        if self.settings.fleet_min_nodes < 2 || out.len() <= from {
            return;
        }
        let mut groups: BTreeSet<String> = BTreeSet::new();
        let mut touched: Vec<(String, (String, Cause))> = Vec::new();
        for n in nodes {
            if let Some(i) = self.open.get(n) {
                if let Some(g) = group_of(i) {
                    groups.insert(endpoint_key(&g.0, g.1));
                    touched.push((n.clone(), g));
                }
                if let Some(e) = &i.covered_by {
                    groups.extend(self.endpoint_key_of(e));
                }
            }
            // Resolved ones of this call (the latest for the node).
            if let Some(i) = self
                .resolved
                .iter()
                .rev()
                .find(|i| i.kind == IncidentKind::NodeStatus && &i.node == n)
            {
                if let Some(e) = &i.covered_by {
                    groups.extend(self.endpoint_key_of(e));
                }
            }
        }
        for (_, (ep, cause)) in &touched {
            let key = endpoint_key(ep, *cause);
            if !self.open.contains_key(&key) {
                self.form(ep, *cause, out);
            }
        }
        for key in groups {
            if self.open.contains_key(&key) {
                self.gather(&key, out);
            }
        }
        self.take_back_covered(from, out);
        for key in self.endpoints_to_resolve(nodes) {
            self.resolve_endpoint(&key, out);
        }
    }

    fn endpoint_key_of(&self, id: &str) -> Option<String> {
        self.open
            .iter()
            .find(|(_, i)| i.kind == IncidentKind::Endpoint && i.id == id)
            .map(|(k, _)| k.clone())
    }

    /// The open members of a group, by opening time.
    fn members(&self, ep: &str, cause: Cause) -> Vec<&Incident> {
        let mut m: Vec<&Incident> = self
            .by_endpoint
            .get(ep)
            .into_iter()
            .flatten()
            .filter_map(|n| self.open.get(n))
            .filter(|i| group_of(i).is_some_and(|(e, c)| e == ep && c == cause))
            .collect();
        m.sort_by_key(|i| (i.opened_at, i.node.clone()));
        m
    }

    /// Opens the group's endpoint incident if enough members opened within
    /// the window of the first of them.
    fn form(&mut self, ep: &str, cause: Cause, out: &mut Vec<Decision>) {
        let min = self.settings.fleet_min_nodes;
        let window = self.settings.fleet_window;
        let members = self.members(ep, cause);
        if members.len() < min {
            return;
        }
        // Nodes of `min` hosts at least: one host naming many nodes (a
        // flood of names, a paste) is no fleet's outage.
        let Some(first) = (0..=members.len() - min).find(|&i| {
            let hosts: BTreeSet<&str> = members[i..]
                .iter()
                .take_while(|m| m.opened_at - members[i].opened_at <= window)
                .map(|m| m.host.as_deref().unwrap_or(""))
                .collect();
            hosts.len() >= min
        }) else {
            return;
        };
        let lead = members[first];
        let key = endpoint_key(ep, cause);
        let opened_at = lead.opened_at;
        let mut inc = Incident {
            id: incident_id(&key, opened_at),
            kind: IncidentKind::Endpoint,
            node: ep.to_string(),
            host: None,
            opened_at,
            last_signal_at: opened_at,
            last_trouble_at: opened_at,
            first_trouble: lead.first_trouble,
            api_endpoint: Some(ep.to_string()),
            ..lead.clone()
        };
        inc.reset_for_endpoint(cause);
        for m in &members {
            if let Some(e) = m.first_evidence() {
                if inc.evidence_head.len() < EVIDENCE_HEAD {
                    inc.evidence_head.push(e.clone());
                }
            }
        }
        inc.evidence_head.sort_by_key(|e| e.at);
        out.push(Decision::OpenIncident { id: inc.id.clone() });
        self.open.insert(key.clone(), inc);
        self.gather(&key, out);
    }

    /// Joins the group's open members to its endpoint incident, and carries
    /// their counters and threshold over.
    fn gather(&mut self, key: &str, out: &mut Vec<Decision>) {
        let Some(e) = self.open.get(key) else {
            return;
        };
        let (ep, cause, id) = (e.node.clone(), e.cause(), e.id.clone());
        let members: Vec<(String, Micros, Micros, Option<Micros>, u64)> = self
            .members(&ep, cause)
            .into_iter()
            .map(|i| {
                (
                    i.node.clone(),
                    i.last_signal_at,
                    i.last_trouble_at,
                    i.over_threshold_at,
                    i.counted_retries(),
                )
            })
            .collect();
        let mut joined = Vec::new();
        for (node, ..) in &members {
            if let Some(m) = self.open.get_mut(node) {
                if m.covered_by.as_deref() != Some(id.as_str()) {
                    m.covered_by = Some(id.clone());
                    joined.push(m.id.clone());
                }
            }
        }
        let send_alert = {
            let Some(e) = self.open.get_mut(key) else {
                return;
            };
            for (node, last_signal, last_trouble, over, retries) in &members {
                if !e.nodes.contains(node) {
                    e.nodes.push(node.clone());
                }
                e.last_signal_at = e.last_signal_at.max(*last_signal);
                e.last_trouble_at = e.last_trouble_at.max(*last_trouble);
                // Counters of nodes still in it; a node that left keeps its
                // share (never counted down).
                e.retries = e.retries.max(*retries);
                if let Some(o) = over {
                    e.over_threshold_at = Some(e.over_threshold_at.map_or(*o, |t| t.min(*o)));
                }
            }
            let total: u64 = members.iter().map(|m| m.4).sum();
            e.retries = e.retries.max(total);
            e.over_threshold_at.is_some() && e.last_alert_at.is_none()
        };
        for j in joined {
            out.push(Decision::UpdateIncident { id: j });
        }
        if let Some(e) = self.open.get_mut(key) {
            out.push(Decision::UpdateIncident { id: e.id.clone() });
            if send_alert {
                // Raised when the outage became one and one of its nodes
                // was over threshold, whichever came later.
                let at = e
                    .over_threshold_at
                    .unwrap_or(e.opened_at)
                    .max(members.iter().map(|m| m.1).min().unwrap_or(e.opened_at));
                let at = at.max(e.opened_at);
                e.last_alert_at = Some(at);
                out.push(Decision::QueueAlert {
                    id: e.id.clone(),
                    kind: AlertKind::Opened,
                    at,
                });
            }
        }
    }

    /// Covered nodes' alerts of this call are the endpoint incident's: a
    /// reminder of a node is the endpoint's reminder when one is due; a
    /// resolved notice goes only where the node's own alert was delivered.
    fn take_back_covered(&mut self, from: usize, out: &mut Vec<Decision>) {
        let mut reminders: Vec<(String, Micros)> = Vec::new();
        let mut kept = Vec::with_capacity(out.len() - from);
        for d in out.drain(from..) {
            if let Decision::QueueAlert { id, kind, at } = &d {
                if let Some(cover) = self.covering(id) {
                    if *kind == AlertKind::Repeat || *kind == AlertKind::Opened {
                        reminders.push((cover, *at));
                    }
                    continue;
                }
            }
            kept.push(d);
        }
        out.extend(kept);
        for (cover, at) in reminders {
            let Some(key) = self.endpoint_key_of(&cover) else {
                continue;
            };
            let Some(e) = self.open.get_mut(&key) else {
                continue;
            };
            let repeat = self
                .settings
                .limits(IncidentKind::Endpoint, &e.node, e.cause().as_str())
                .repeat_interval;
            let due = match e.last_alert_at {
                None => Some(AlertKind::Opened),
                Some(last) if at - last >= repeat => Some(AlertKind::Repeat),
                Some(_) => None,
            };
            if let Some(kind) = due {
                e.over_threshold_at.get_or_insert(at);
                e.last_alert_at = Some(at);
                out.push(Decision::QueueAlert {
                    id: e.id.clone(),
                    kind,
                    at,
                });
            }
        }
    }

    /// The endpoint incident standing for node incident `id`'s alerts, if
    /// one does; a resolved incident whose own alert went out stands for
    /// its own end.
    fn covering(&self, id: &str) -> Option<String> {
        let i = self
            .open
            .values()
            .find(|i| i.id == id)
            .or_else(|| self.resolved.iter().rev().find(|i| i.id == id))?;
        let cover = i.covered_by.clone()?;
        (i.resolved_at.is_none() || i.alerted_at.is_none()).then_some(cover)
    }

    /// Endpoint incidents of which no node has an open incident against
    /// the endpoint any more.
    fn endpoints_to_resolve(&self, nodes: &[String]) -> Vec<String> {
        let covers: BTreeSet<&str> = nodes
            .iter()
            .filter_map(|n| {
                self.resolved
                    .iter()
                    .rev()
                    .find(|i| i.kind == IncidentKind::NodeStatus && &i.node == n)
                    .and_then(|i| i.covered_by.as_deref())
            })
            .chain(
                nodes
                    .iter()
                    .filter_map(|n| self.open.get(n).and_then(|i| i.covered_by.as_deref())),
            )
            .collect();
        self.open
            .iter()
            .filter(|(_, e)| e.kind == IncidentKind::Endpoint && covers.contains(e.id.as_str()))
            .filter(|(_, e)| {
                !e.nodes.iter().any(|n| {
                    self.open.get(n).is_some_and(|i| {
                        i.kind == IncidentKind::NodeStatus && i.api_endpoint == e.api_endpoint
                    })
                })
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn resolve_endpoint(&mut self, key: &str, out: &mut Vec<Decision>) {
        let Some(e) = self.open.get(key) else {
            return;
        };
        let id = e.id.clone();
        let end = self
            .resolved
            .iter()
            .filter(|i| i.covered_by.as_deref() == Some(id.as_str()))
            .filter_map(|i| i.resolved_at)
            .max()
            .unwrap_or(e.last_signal_at);
        let how = if self
            .resolved
            .iter()
            .filter(|i| i.covered_by.as_deref() == Some(id.as_str()))
            .all(|i| i.resolution == Some(Resolution::NodeReady))
        {
            Resolution::NodeReady
        } else {
            Resolution::Quiet
        };
        if let Some(e) = self.open.get_mut(key) {
            e.last_signal_at = e.last_signal_at.max(end);
        }
        self.resolve(key, end, how, out);
    }
}

impl Incident {
    /// An endpoint incident made from its first node's: no counters of
    /// its own but its cause.
    fn reset_for_endpoint(&mut self, cause: Cause) {
        self.resolved_at = None;
        self.resolution = None;
        self.retries = 0;
        self.exhausted = 0;
        self.lister_misses = 0;
        self.register_failures = 0;
        self.lease_failures = 0;
        self.watch_failures = 0;
        self.over_threshold_at = None;
        self.last_alert_at = None;
        self.alerted_at = None;
        self.announced = false;
        self.anchor = None;
        self.caches_synced_at = None;
        self.causes = BTreeMap::from([(cause, 1)]);
        self.non_lister_trouble = 0;
        self.recent.clear();
        self.evidence_head.clear();
        self.evidence_tail.clear();
        self.evidence_dropped = 0;
        self.ack = None;
        self.timeline = timeline::Timeline::default();
        self.down = None;
        self.nodes.clear();
        self.covered_by = None;
    }
}
