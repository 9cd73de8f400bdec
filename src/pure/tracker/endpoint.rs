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

/// Lately resolved members kept at most (each with its bounded evidence).
const RECENT_MAX: usize = 1024;

/// Where a group's endpoint incident is kept among the open ones.
pub(super) fn endpoint_key(endpoint: &str, cause: Cause) -> String {
    format!(
        "{}:{endpoint}:{}",
        IncidentKind::Endpoint.as_str(),
        cause.as_str()
    )
}

/// The group an open node-status incident belongs to, if any.
fn group_of(i: &Incident) -> Option<(String, Cause)> {
    if i.resolved_at.is_some() {
        return None;
    }
    in_group(i)
}

/// The group a node-status incident belongs to, open or not.
fn in_group(i: &Incident) -> Option<(String, Cause)> {
    if i.kind != IncidentKind::NodeStatus {
        return None;
    }
    let cause = i.cause();
    let ep = i.api_endpoint.as_ref()?;
    FLEET_CAUSES.contains(&cause).then(|| (ep.clone(), cause))
}

/// A group's member as the correlator weighs it.
struct Member {
    id: String,
    node: String,
    host: String,
    opened_at: Micros,
    /// When its trouble ended (or will, if nothing more comes).
    end: Micros,
    last_signal: Micros,
    last_trouble: Micros,
    over: Option<Micros>,
}

impl Member {
    fn of(i: &Incident, end: Micros) -> Self {
        Self {
            id: i.id.clone(),
            node: i.node.clone(),
            host: i.host.clone().unwrap_or_default(),
            opened_at: i.opened_at,
            end,
            last_signal: i.last_signal_at,
            last_trouble: i.last_trouble_at,
            over: i.over_threshold_at,
        }
    }
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
        self.keep_recent(nodes);
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
                if let Some(g) = in_group(i) {
                    groups.insert(endpoint_key(&g.0, g.1));
                }
            }
        }
        for (_, (ep, cause)) in &touched {
            let key = endpoint_key(ep, *cause);
            if !self.open.contains_key(&key) && !self.reopen(&key, ep, *cause, out) {
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

    /// A group's members, open or lately resolved, by opening time. Each
    /// is in trouble from its opening to its end: its resolution, or for an
    /// open one its last trouble plus `resolve_after` (a following service
    /// resolves it on quiet time there, where `scan` waits for its host's
    /// next line: both must see the same outage).
    fn members(&self, ep: &str, cause: Cause) -> Vec<Member> {
        let after = self.settings.resolve_after;
        let open = self
            .by_endpoint
            .get(ep)
            .into_iter()
            .flatten()
            .filter_map(|n| self.open.get(n))
            .filter(|i| group_of(i).is_some_and(|(e, c)| e == ep && c == cause))
            .map(|i| Member::of(i, i.last_trouble_at + after));
        let recent = self
            .fleet_recent
            .iter()
            .filter(|i| in_group(i).is_some_and(|(e, c)| e == ep && c == cause))
            .map(|i| Member::of(i, i.resolved_at.unwrap_or(i.last_signal_at)));
        let mut m: Vec<Member> = open.chain(recent).collect();
        m.sort_by(|a, b| (a.opened_at, &a.node).cmp(&(b.opened_at, &b.node)));
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
        // The first member that completes an outage: with it, nodes of
        // `min` hosts at least (one host naming many nodes, a flood of
        // names or a paste, is no fleet's outage) opened within the window
        // before it and still in trouble when it opened.
        let lead = (0..members.len()).find_map(|k| {
            let t = members[k].opened_at;
            let with: Vec<&Member> = members[..=k]
                .iter()
                .filter(|m| t - m.opened_at <= window && m.end > t)
                .collect();
            let hosts: BTreeSet<&str> = with.iter().map(|m| m.host.as_str()).collect();
            (hosts.len() >= min).then(|| with[0].id.clone())
        });
        let Some(lead) = lead.and_then(|id| self.node_incident(&id).cloned()) else {
            return;
        };
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
            ..lead
        };
        inc.reset_for_endpoint(cause);
        // The same outage made again (its lead and so its id the same):
        // one incident, not a resolved copy beside the open one.
        self.resolved.retain(|r| r.id != inc.id);
        self.fleet_ended.retain(|r| r.id != inc.id);
        out.push(Decision::OpenIncident { id: inc.id.clone() });
        self.open.insert(key.clone(), inc);
        self.gather(&key, out);
    }

    /// Opens again the group's endpoint incident that ended after a
    /// member in trouble now opened: its end was judged on quiet time
    /// before a late host's lines said otherwise (`scan`, reading in
    /// another rhythm, never ended it). True when it did.
    fn reopen(&mut self, key: &str, ep: &str, cause: Cause, out: &mut Vec<Decision>) -> bool {
        let members = self.members(ep, cause);
        let Some(pos) = self.fleet_ended.iter().rposition(|e| {
            endpoint_key(&e.node, e.cause()) == key
                && members
                    .iter()
                    .any(|m| m.end > e.opened_at && e.resolved_at.is_some_and(|r| m.opened_at < r))
        }) else {
            return false;
        };
        let mut e = self.fleet_ended.remove(pos);
        // Not yet taken by the caller: it is open again, not twice.
        self.resolved.retain(|r| r.id != e.id);
        e.resolved_at = None;
        e.resolution = None;
        out.push(Decision::UpdateIncident { id: e.id.clone() });
        self.open.insert(key.to_string(), e);
        self.gather(key, out);
        true
    }

    /// A node-status incident by id: open, resolved in this call, or lately
    /// resolved.
    fn node_incident(&self, id: &str) -> Option<&Incident> {
        self.open
            .values()
            .chain(self.resolved.iter())
            .chain(self.fleet_recent.iter())
            .find(|i| i.id == id)
    }

    /// Marks node incident `id` as covered by endpoint incident `cover`
    /// wherever it is kept; true when that changed it.
    fn cover(&mut self, node: &str, id: &str, cover: &str) -> bool {
        let mut changed = false;
        let open = self.open.get_mut(node).filter(|i| i.id == id);
        let rest = self
            .resolved
            .iter_mut()
            .chain(self.fleet_recent.iter_mut())
            .filter(|i| i.id == id);
        for i in open.into_iter().chain(rest) {
            if i.covered_by.as_deref() != Some(cover) {
                i.covered_by = Some(cover.to_string());
                changed = true;
            }
        }
        changed
    }

    /// Joins the group's members in trouble since it opened to its
    /// endpoint incident, and carries their counters and threshold over.
    fn gather(&mut self, key: &str, out: &mut Vec<Decision>) {
        let Some(e) = self.open.get(key) else {
            return;
        };
        let (ep, cause, id, since) = (e.node.clone(), e.cause(), e.id.clone(), e.opened_at);
        let members: Vec<Member> = self
            .members(&ep, cause)
            .into_iter()
            .filter(|m| m.end > since)
            .collect();
        let mut joined = Vec::new();
        let mut firsts = Vec::new();
        for m in &members {
            if self.cover(&m.node, &m.id, &id) {
                joined.push(m.id.clone());
                if let Some(e) = self.node_incident(&m.id).and_then(Incident::first_evidence) {
                    firsts.push(e.clone());
                }
            }
        }
        let send_alert = {
            let Some(e) = self.open.get_mut(key) else {
                return;
            };
            for m in &members {
                if !e.nodes.contains(&m.node) {
                    e.nodes.push(m.node.clone());
                }
                e.last_signal_at = e.last_signal_at.max(m.last_signal);
                e.last_trouble_at = e.last_trouble_at.max(m.last_trouble);
                if let Some(o) = m.over {
                    e.over_threshold_at = Some(e.over_threshold_at.map_or(o, |t| t.min(o)));
                }
            }
            // The first error of each node, the earliest kept: the same
            // whatever order its nodes joined in.
            for f in firsts {
                if !e.evidence_head.contains(&f) {
                    e.evidence_head.push(f);
                }
            }
            e.evidence_head
                .sort_by(|a, b| (a.at, &a.cursor).cmp(&(b.at, &b.cursor)));
            e.evidence_head.truncate(EVIDENCE_HEAD);
            // No counters of its own: its nodes' incidents keep theirs (a
            // sum would depend on when the nodes were read).
            e.over_threshold_at.is_some() && e.last_alert_at.is_none()
        };
        for j in joined {
            out.push(Decision::UpdateIncident { id: j });
        }
        if let Some(e) = self.open.get_mut(key) {
            out.push(Decision::UpdateIncident { id: e.id.clone() });
            if send_alert {
                // Raised as one of its nodes crossed the threshold, or as
                // it opened if one had before.
                let at = e.over_threshold_at.unwrap_or(e.opened_at).max(e.opened_at);
                e.last_alert_at = Some(at);
                out.push(Decision::QueueAlert {
                    id: e.id.clone(),
                    kind: AlertKind::Opened,
                    at,
                });
            }
        }
    }

    /// Keeps this call's resolved members: they may still make or join an
    /// outage whose other nodes are read later, hours later for a host that
    /// uploads late. Bounded by number, not by time: any host's clock says
    /// nothing of another's, and `scan` reads a host's later lines before
    /// another host's earlier ones.
    fn keep_recent(&mut self, nodes: &[String]) {
        for n in nodes {
            let Some(i) = self
                .resolved
                .iter()
                .rev()
                .find(|i| i.kind == IncidentKind::NodeStatus && &i.node == n)
            else {
                continue;
            };
            if in_group(i).is_some() && !self.fleet_recent.iter().any(|r| r.id == i.id) {
                self.fleet_recent.push(i.clone());
            }
        }
        let most = self.settings.max_nodes.clamp(1, RECENT_MAX);
        if self.fleet_recent.len() > most {
            let drop = self.fleet_recent.len() - most;
            self.fleet_recent.drain(..drop);
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
        let i = self.node_incident(id)?;
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
            .chain(self.fleet_recent.iter())
            .filter(|i| i.covered_by.as_deref() == Some(id.as_str()))
            .filter_map(|i| i.resolved_at)
            .max()
            .unwrap_or(e.last_signal_at);
        let how = if self
            .resolved
            .iter()
            .chain(self.fleet_recent.iter())
            .filter(|i| i.covered_by.as_deref() == Some(id.as_str()))
            .all(|i| i.resolution == Some(Resolution::NodeReady))
        {
            Resolution::NodeReady
        } else {
            Resolution::Quiet
        };
        self.resolve(key, end, how, out);
        if let Some(e) = self.resolved.iter().rev().find(|i| i.id == id) {
            self.fleet_ended.retain(|i| i.id != id);
            self.fleet_ended.push(e.clone());
            if self.fleet_ended.len() > RECENT_MAX {
                self.fleet_ended.remove(0);
            }
        }
    }
}

impl Incident {
    /// One paragraph for a person: which endpoint, how many nodes, since when.
    pub(super) fn endpoint_diagnosis(&self) -> String {
        let cause = self.cause();
        let ep = self.api_endpoint.as_deref().unwrap_or(&self.node);
        let shown: Vec<&str> = self.nodes.iter().take(10).map(String::as_str).collect();
        let more = self.nodes.len().saturating_sub(shown.len());
        let mut parts = vec![format!(
            "{} nodes lost API endpoint {} ({}) from {}: {}{}.",
            self.nodes.len(),
            one_line(ep, 270),
            cause.as_str(),
            crate::time::clock(self.opened_at),
            one_line(&shown.join(", "), 600),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )];
        parts.push(format!(
            "The errors point at {}: {}; one outage, not a problem of each node.",
            cause.as_str(),
            cause_explanation(cause)
        ));
        if let Some(at) = self.resolved_at {
            parts.push(format!(
                "Resolved at {} when the last of its nodes' incidents resolved.",
                crate::time::clock(at)
            ));
        }
        if let Some(e) = self.first_evidence() {
            parts.push(format!("First error: {}", one_line(&e.text, 300)));
        }
        parts.join(" ")
    }

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
