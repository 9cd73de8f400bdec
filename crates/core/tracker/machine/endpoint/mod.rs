//! Endpoint incidents (design 5.2): one outage, one page. Derived from the
//! node incidents alone, never from the order they were read in.
//!
//! The rules, in one place:
//! - a group is one API endpoint and one cause class of [`FLEET_CAUSES`];
//!   its members are the node-status incidents, open or resolved, whose
//!   `api_endpoint` and cause are those. Each is in trouble from its
//!   opening to its resolution (an open one: until further notice);
//! - a group's members fall into segments: runs whose troubles overlap
//!   (each opens before the trouble of those before it has ended);
//! - a segment is an outage when, at some member's opening, members of at
//!   least `fleet_min_nodes` hosts opened within `fleet_window` before it
//!   and are still in trouble (one host is never an outage, however many
//!   nodes it names). The endpoint incident opens at the first of those,
//!   holds every member of the segment in trouble since, and resolves at
//!   the segment's end: when the last of them resolves;
//! - it is over threshold once one of its nodes is; its alert stands for
//!   theirs. Each of its members is `covered_by` it: the member's own
//!   alerts are not raised (its resolved notice only if its own alert went
//!   out before).
//!
//! Architecture invariant: the endpoint incidents are a function of the
//! set of node incidents (sorted by opening, then id), recomputed for a
//! group whenever one of its members opens, resolves, moves its end (each
//! trouble line of an open one), crosses the threshold or changes group. Whatever order `scan`, catch-up and a
//! following service read the hosts in, the same node incidents give the
//! same endpoint incidents; an endpoint incident seen earlier that the
//! complete picture no longer holds (a late host's member moved its
//! opening) leaves the history, its alert state carried to the one that
//! replaces it.
//!
//! Bounds: at most [`GROUPS_MAX`] groups and [`MEMBERS_MAX`] members in
//! all; a segment closed more than [`HORIZON`] before its group's newest
//! opening is final and leaves the state (its incidents stay in the
//! history). Past the bounds the oldest closed segments go first.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::signals::Cause;
use crate::time::{Micros, SECOND};
use crate::tracker::Tracker;
use crate::tracker::decision::{AlertKind, Decision};
use crate::tracker::evidence::{EVIDENCE_HEAD, Evidence};
use crate::tracker::incident::incident_id;
use crate::tracker::kind::{Detail, Incident, Outage};
use crate::tracker::open::OpenKey;
use crate::tracker::terms::{IncidentKind, Resolution};

mod fast;

use fast::NodesNamed;

/// The cause classes an outage of one endpoint shows as.
pub(crate) const FLEET_CAUSES: [Cause; 4] = [
    Cause::ApiUnreachable,
    Cause::ApiTimeout,
    Cause::Auth,
    Cause::Etcd,
];

/// Groups (endpoint and cause) kept at most.
pub(crate) const GROUPS_MAX: usize = 64;
/// Members kept at most, in all groups.
pub(crate) const MEMBERS_MAX: usize = 8192;
/// A closed segment this far behind its group's newest opening is final.
pub(crate) const HORIZON: Micros = 24 * 3600 * SECOND;

/// A group's name: `endpoint cause`.
fn group_key(endpoint: &str, cause: Cause) -> String {
    format!("{endpoint} {}", cause.as_str())
}

/// The group a node-status incident belongs to, if any.
fn group_of(i: &Incident) -> Option<(String, Cause)> {
    let Detail::NodeStatus(n) = &i.detail else {
        return None;
    };
    // A node that lost its own link is its own trouble (design 5.4), and
    // one whose host's clock is wrong cannot be placed beside the others.
    if i.lost_link() || n.clock_untrusted {
        return None;
    }
    let cause = i.cause();
    let ep = n.api_endpoint.as_ref()?;
    FLEET_CAUSES.contains(&cause).then(|| (ep.clone(), cause))
}

/// A node incident as the correlator weighs it: only what the rules read,
/// so a line that changes none of it (a supporting one) costs a comparison.
/// Persisted one record a member (see [`MemberWrite`]), written when it
/// changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    id: String,
    node: String,
    host: String,
    opened_at: Micros,
    /// Its resolution; while open, when it will resolve if nothing more
    /// comes (its last trouble plus `resolve_after`): a following service
    /// resolves it there on quiet time, where `scan` ends with it open,
    /// and both must see the same outage.
    end: Micros,
    open: bool,
    /// Its last signal.
    last: Micros,
    over: Option<Micros>,
    /// Its own last alert (raised, whether or not it was taken back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    alerted: Option<Micros>,
    ready: bool,
    first: Option<Evidence>,
    /// The endpoint incident that covers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cover: Option<String>,
}

/// A change to the stored member records ([`Tracker::take_member_writes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberWrite {
    /// Every record of this group goes (the group is gone, or made anew).
    DropGroup(String),
    /// This member of this group, written (over what was there).
    Put(String, Member),
    /// The member of this group opened at this time with this id goes.
    Delete(String, Micros, String),
}

impl Member {
    /// Its opening and incident id: its place in its group.
    #[must_use]
    pub fn key(&self) -> (Micros, &str) {
        (self.opened_at, &self.id)
    }

    fn of(i: &Incident, resolve_after: Micros) -> Self {
        let due = (i.last_trouble_at + resolve_after).max(i.last_signal_at);
        Self {
            id: i.id.clone(),
            node: i.node.clone(),
            host: i.host.clone().unwrap_or_default(),
            opened_at: i.opened_at,
            end: i.resolved_at.unwrap_or(due),
            open: i.resolved_at.is_none(),
            last: i.last_signal_at,
            over: i.over_threshold_at,
            alerted: i.last_alert_at,
            ready: i.resolution == Some(Resolution::NodeReady),
            first: i.first_evidence().cloned(),
            cover: None,
        }
    }

    /// The same as far as the rules read (its cover is what they make).
    fn same(&self, o: &Member) -> bool {
        (self.opened_at, self.end, self.open, self.last) == (o.opened_at, o.end, o.open, o.last)
            && (self.over, self.alerted, self.ready) == (o.over, o.alerted, o.ready)
            && (&self.id, &self.node, &self.host, &self.first)
                == (&o.id, &o.node, &o.host, &o.first)
    }

    fn end(&self) -> Micros {
        self.end
    }
}

/// One endpoint and cause: its members and the endpoint incidents derived
/// from them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Group {
    endpoint: String,
    cause: Option<Cause>,
    /// By (opening, id). Not in the serialized tracker: the store keeps
    /// one record a member (read from the state of stores from before).
    #[serde(default, skip_serializing)]
    members: Vec<Member>,
    /// Members added, changed or taken out since the last
    /// [`Tracker::take_member_writes`], by (opening, id).
    #[serde(skip)]
    dirty: BTreeSet<(Micros, String)>,
    /// Made (again) since then: every record of its name is written anew.
    #[serde(skip)]
    fresh: bool,
    outages: Vec<Incident>,
    /// The endpoint incidents paged (their alert raised), and when last:
    /// kept apart from the incidents, whose `last_alert_at` is their
    /// nodes' (the same whatever order they were read in).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    paged: BTreeMap<String, Micros>,
    /// Those whose end was told (once: a catch-up reading host after host
    /// sees an outage end and open again as each host's member comes).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    told_end: BTreeSet<String>,
    /// Of each outage, the opening of the member at which it was first one
    /// (enough hosts in trouble): a member in trouble past it cannot move
    /// the outage's opening (see `fast.rs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    confirmed: BTreeMap<String, Micros>,
    /// The nodes each outage names, for joins by the short way: dropped
    /// whenever the outages are derived or cut again (see [`NodesNamed`]).
    #[serde(skip)]
    named: NodesNamed,
}

/// What the rules make of a group's members: for each outage, its opening,
/// its end (`None`: open) and its members (indices).
struct Derived {
    opened_at: Micros,
    /// The opening of the member at which it was first an outage.
    confirmed: Micros,
    end: Option<Micros>,
    members: Vec<usize>,
}

/// Segments of overlapping trouble, as index ranges of `m` (sorted).
fn segments(m: &[Member]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < m.len() {
        let mut end = m[i].end();
        let mut j = i + 1;
        while j < m.len() && m[j].opened_at <= end {
            end = end.max(m[j].end());
            j += 1;
        }
        out.push(i..j);
        i = j;
    }
    out
}

/// The outage of one segment, if it is one (see the module's rules).
fn outage_of(
    m: &[Member],
    seg: std::ops::Range<usize>,
    min: usize,
    window: Micros,
) -> Option<Derived> {
    let s = &m[seg.clone()];
    // Too few hosts in all: no outage, and no need to look for one.
    let hosts: BTreeSet<&str> = s.iter().map(|x| x.host.as_str()).collect();
    if hosts.len() < min {
        return None;
    }
    let mut from = 0;
    let start = (0..s.len()).find_map(|k| {
        let t = s[k].opened_at;
        while t - s[from].opened_at > window {
            from += 1;
        }
        let with: Vec<&Member> = s[from..=k].iter().filter(|x| x.end() >= t).collect();
        let hosts: BTreeSet<&str> = with.iter().map(|x| x.host.as_str()).collect();
        (hosts.len() >= min).then(|| (with[0].opened_at, t))
    })?;
    let (start, confirmed) = start;
    let members: Vec<usize> = seg.clone().filter(|&k| m[k].end() >= start).collect();
    // Resolved when the last of them is.
    let end = if s.iter().any(|x| x.open) {
        None
    } else {
        s.iter().map(Member::end).max()
    };
    Some(Derived {
        opened_at: start,
        confirmed,
        end,
        members,
    })
}

impl Group {
    /// Where member `id` opened at `opened_at` is (members are sorted).
    fn find(&self, opened_at: Micros, id: &str) -> Option<usize> {
        let k = self
            .members
            .partition_point(|x| (x.opened_at, x.id.as_str()) < (opened_at, id));
        (self.members.get(k).is_some_and(|x| x.id == id)).then_some(k)
    }

    fn key(&self) -> String {
        group_key(&self.endpoint, self.cause.unwrap_or(Cause::Unknown))
    }

    /// The endpoint incident for `d`, its alert state taken from `before`.
    fn incident(&self, d: &Derived, before: Option<&Incident>) -> Incident {
        let cause = self.cause.unwrap_or(Cause::Unknown);
        let members: Vec<&Member> = d.members.iter().map(|&k| &self.members[k]).collect();
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let nodes: Vec<String> = members
            .iter()
            .filter(|m| seen.insert(m.node.as_str()))
            .map(|m| m.node.clone())
            .collect();
        let hosts: Vec<String> = members
            .iter()
            .map(|m| m.host.as_str())
            .collect::<BTreeSet<&str>>()
            .into_iter()
            .map(str::to_string)
            .collect();
        let last = members
            .iter()
            .map(|m| m.last.max(m.opened_at))
            .max()
            .unwrap_or(d.opened_at)
            .max(d.opened_at);
        let over = members
            .iter()
            .filter_map(|m| m.over)
            .min()
            .map(|o| o.max(d.opened_at));
        let mut firsts: Vec<&Evidence> = members.iter().filter_map(|m| m.first.as_ref()).collect();
        let order = |a: &&Evidence, b: &&Evidence| (a.at, &a.cursor).cmp(&(b.at, &b.cursor));
        if firsts.len() > EVIDENCE_HEAD {
            firsts.select_nth_unstable_by(EVIDENCE_HEAD, order);
            firsts.truncate(EVIDENCE_HEAD);
        }
        firsts.sort_by(order);
        let evidence: Vec<Evidence> = firsts.into_iter().cloned().collect();
        let key = self.key();
        let first_trouble = evidence
            .first()
            .map_or(crate::signals::SignalKind::StatusRetry, |e| e.signal);
        let id = incident_id(&["endpoint:", &key], d.opened_at);
        let mut i = Incident::blank(
            id,
            IncidentKind::Endpoint,
            &self.endpoint,
            None,
            d.opened_at,
            first_trouble,
        );
        i.last_signal_at = last;
        i.last_trouble_at = last;
        i.resolved_at = d.end.map(|e| e.max(last));
        i.resolution = d.end.map(|_| {
            if members.iter().all(|m| m.ready) {
                Resolution::NodeReady
            } else {
                Resolution::Quiet
            }
        });
        i.over_threshold_at = over;
        i.causes = BTreeMap::from([(cause, members.len() as u64)]);
        i.evidence_head = evidence;
        i.detail = Detail::Endpoint(Outage {
            endpoint: self.endpoint.clone(),
            nodes,
            hosts,
        });
        i.last_alert_at = members.iter().filter_map(|m| m.alerted).max();
        if let Some(b) = before {
            i.alerted_at = b.alerted_at;
            i.announced = b.announced;
            i.ack.clone_from(&b.ack);
        }
        i
    }
}

/// Puts node incident `i` among its group's members (and out of any other
/// group); a retry that changes nothing the rules read changes nothing.
fn upsert_member(
    groups: &mut BTreeMap<String, Group>,
    i: &Incident,
    resolve_after: Micros,
    touched: &mut BTreeSet<String>,
    uncover: &mut Vec<Member>,
) {
    if i.kind() != IncidentKind::NodeStatus {
        return;
    }
    let Some((ep, cause)) = group_of(i) else {
        if !groups.is_empty() {
            // Out of every group now (its cause moved on): covered by none.
            uncover.extend(
                remove_member(groups, &i.id, Some(i.opened_at), touched)
                    .filter(|m| m.cover.is_some()),
            );
        }
        return;
    };
    let key = group_key(&ep, cause);
    let m = Member::of(i, resolve_after);

    if groups
        .get(&key)
        .and_then(|g| g.find(m.opened_at, &m.id).map(|k| &g.members[k]))
        .is_some_and(|x| x.same(&m))
    {
        return;
    }
    let mut m = m;
    // A member that changed group keeps its cover until derived again.
    let old = remove_member(groups, &i.id, Some(i.opened_at), touched);
    let total: usize = groups.values().map(|g| g.members.len()).sum();
    if old.is_none() && total >= MEMBERS_MAX {
        // The bound, with every member kept still open or recent: a node
        // new to the groups stays out of them (its own incident and
        // alert), so no line past the bound derives a group again.
        return;
    }
    m.cover = old.and_then(|old| old.cover);
    if !groups.contains_key(&key) && !room_for_group(groups) {
        if m.cover.is_some() {
            uncover.push(m);
        }
        return;
    }
    let g = groups.entry(key.clone()).or_insert_with(|| Group {
        endpoint: ep,
        cause: Some(cause),
        fresh: true,
        ..Group::default()
    });
    let at = g
        .members
        .partition_point(|x| (x.opened_at, &x.id) < (m.opened_at, &m.id));
    g.dirty.insert((m.opened_at, m.id.clone()));
    g.members.insert(at, m);
    touched.insert(key);
}

/// Takes node incident `id` out of its group, if it is in one.
fn remove_member(
    groups: &mut BTreeMap<String, Group>,
    id: &str,
    opened_at: Option<Micros>,
    touched: &mut BTreeSet<String>,
) -> Option<Member> {
    for (k, g) in groups.iter_mut() {
        let at = match opened_at {
            Some(t) => g.find(t, id),
            None => g.members.iter().position(|x| x.id == id),
        };
        if let Some(p) = at {
            touched.insert(k.clone());
            let m = g.members.remove(p);
            g.dirty.insert((m.opened_at, m.id.clone()));
            return Some(m);
        }
    }
    None
}

/// Whether a new group may be kept: drops the group whose newest member
/// is oldest and none of them is open, if it must.
fn room_for_group(groups: &mut BTreeMap<String, Group>) -> bool {
    if groups.len() < GROUPS_MAX {
        return true;
    }
    let victim = groups
        .iter()
        .filter(|(_, g)| g.members.iter().all(|m| !m.open))
        .min_by_key(|(_, g)| g.members.iter().map(Member::end).max())
        .map(|(k, _)| k.clone());
    match victim {
        Some(k) => {
            groups.remove(&k);
            true
        }
        None => false,
    }
}

impl Tracker {
    /// After the tracker changed incidents (decisions `out[from..]`, about
    /// `keys`' open incidents and those resolved or forgotten): brings the
    /// endpoint incidents up to date, and takes back the alerts of the
    /// nodes they cover.
    pub(crate) fn correlate(&mut self, keys: &[OpenKey], from: usize, out: &mut Vec<Decision>) {
        if self.settings.fleet_min_nodes < 2 || out.len() <= from {
            return;
        }
        let mut touched: BTreeSet<String> = BTreeSet::new();
        let groups = &mut self.fleet_groups;
        let after = self.settings.resolve_after;
        let mut uncover: Vec<Member> = Vec::new();
        let mut moved: Vec<fast::Moved> = Vec::new();
        for k in keys {
            if let Some(i) = self.open.get(k) {
                let quick = (!self.long_way)
                    .then(|| fast::shortcut(groups, i, after))
                    .flatten();
                match quick {
                    Some(m) => {
                        self.shortcuts += 1;
                        moved.push(m);
                    }
                    None => upsert_member(groups, i, after, &mut touched, &mut uncover),
                }
            }
        }
        for d in &out[from..] {
            match d {
                Decision::ResolveIncident { id } => {
                    if let Some(i) = self.resolved.iter().rev().find(|i| &i.id == id) {
                        upsert_member(groups, i, after, &mut touched, &mut uncover);
                    }
                }
                Decision::ForgetIncident { id } => {
                    remove_member(groups, id, None, &mut touched);
                }
                Decision::OpenIncident { .. }
                | Decision::UpdateIncident { .. }
                | Decision::QueueAlert { .. }
                | Decision::CoverIncident { .. } => {}
            }
        }
        for m in uncover {
            self.cover(&m.node, &m.id, None, out);
        }
        for m in moved {
            if m.changed {
                out.push(Decision::UpdateIncident {
                    id: m.outage.clone(),
                });
            }
            if let Some((node, id)) = m.covered {
                self.cover(&node, &id, Some(m.outage), out);
            }
        }
        for g in &touched {
            self.rederive(g, out);
        }
        if out[from..]
            .iter()
            .any(|d| matches!(d, Decision::QueueAlert { .. }))
        {
            self.take_back_covered(from, out);
        }
    }

    /// Derives group `key`'s endpoint incidents again and says what changed.
    fn rederive(&mut self, key: &str, out: &mut Vec<Decision>) {
        self.bound_members(key);
        let Some(old) = self
            .fleet_groups
            .get_mut(key)
            .map(|g| std::mem::take(&mut g.outages))
        else {
            return;
        };
        let Some(g) = self.fleet_groups.get(key) else {
            return;
        };
        let min = self.settings.fleet_min_nodes;
        let window = self.settings.fleet_window;
        let derived: Vec<Derived> = segments(&g.members)
            .into_iter()
            .filter_map(|s| outage_of(&g.members, s, min, window))
            .collect();
        let mut now: Vec<Incident> = Vec::new();
        let mut paged = g.paged.clone();
        let mut told_end = g.told_end.clone();
        let mut confirmed = BTreeMap::new();
        // Each member's outage, as an index into `now`.
        let mut covers: Vec<Option<usize>> = vec![None; g.members.len()];
        for d in &derived {
            let before = old.iter().find(|o| o.opened_at == d.opened_at).or_else(|| {
                // The same outage seen from fewer hosts: the one whose
                // nodes it holds.
                old.iter().find(|o| {
                    d.members
                        .iter()
                        .any(|&k| g.members[k].cover.as_deref() == Some(o.id.as_str()))
                })
            });
            let inc = g.incident(d, before);
            if let Some(b) = before.filter(|b| b.id != inc.id) {
                if paged.remove(&b.id).is_some() && b.alerted_at.is_none() {
                    // Paged under the id it had, and not delivered: that
                    // page is dropped with the id (the mailer finds no
                    // incident), so the new id pages again.
                } else if let Some(t) = g.paged.get(&b.id) {
                    paged.insert(inc.id.clone(), *t);
                }
            }
            for &k in &d.members {
                covers[k] = Some(now.len());
            }
            confirmed.insert(inc.id.clone(), d.confirmed);
            now.push(inc);
        }
        let id_of = |c: Option<usize>| c.map(|j| now[j].id.clone());
        let recovered: Vec<(usize, String, String, Option<String>)> = g
            .members
            .iter()
            .zip(&covers)
            .enumerate()
            .filter(|(_, (m, c))| m.cover.as_deref() != c.map(|j| now[j].id.as_str()))
            .map(|(k, (m, c))| (k, m.node.clone(), m.id.clone(), id_of(*c)))
            .collect();
        self.publish_outages(&old, &mut now, &mut paged, &mut told_end, out);
        paged.retain(|id, _| now.iter().any(|n| &n.id == id));
        told_end.retain(|id| now.iter().any(|n| n.id == *id));
        let mut changed = Vec::with_capacity(recovered.len());
        for (k, node, id, by) in recovered {
            self.cover(&node, &id, by.clone(), out);
            changed.push((k, by));
        }
        if let Some(g) = self.fleet_groups.get_mut(key) {
            for (k, by) in changed {
                let m = &mut g.members[k];
                m.cover = by;
                g.dirty.insert((m.opened_at, m.id.clone()));
            }
            g.outages = now;
            g.named = NodesNamed::default();
            g.paged = paged;
            g.told_end = told_end;
            g.confirmed = confirmed;
            if g.members.is_empty() {
                self.fleet_groups.remove(key);
            }
        }
    }

    /// Decisions for a group's endpoint incidents, `old` then `now`:
    /// opened, changed, resolved, forgotten; their alerts.
    fn publish_outages(
        &mut self,
        old: &[Incident],
        now: &mut [Incident],
        paged: &mut BTreeMap<String, Micros>,
        told_end: &mut BTreeSet<String>,
        out: &mut Vec<Decision>,
    ) {
        for o in old {
            if !now.iter().any(|n| n.id == o.id) {
                self.resolved.retain(|r| r.id != o.id);
                self.forgotten_incidents.push(o.clone());
                out.push(Decision::ForgetIncident { id: o.id.clone() });
            }
        }
        let send_resolved = self.settings.send_resolved;
        for n in now.iter_mut() {
            let before = old.iter().find(|o| o.id == n.id);
            if before == Some(n) {
                continue;
            }
            // Forgotten earlier in this batch and made again: kept.
            self.forgotten_incidents.retain(|f| f.id != n.id);
            let was_open = before.is_some_and(|b| b.resolved_at.is_none());
            if before.is_none() {
                out.push(Decision::OpenIncident { id: n.id.clone() });
            }
            if let Some(at) = n.over_threshold_at.filter(|_| !paged.contains_key(&n.id)) {
                paged.insert(n.id.clone(), at);
                out.push(n.raise(AlertKind::Opened, at));
            }
            self.resolved.retain(|r| r.id != n.id);
            if let Some(end) = n.resolved_at {
                self.resolved.push(n.clone());
                out.push(Decision::ResolveIncident { id: n.id.clone() });
                if (was_open || before.is_none())
                    && paged.contains_key(&n.id)
                    && send_resolved
                    && told_end.insert(n.id.clone())
                {
                    out.push(n.raise(AlertKind::Resolved, end));
                }
            } else {
                out.push(Decision::UpdateIncident { id: n.id.clone() });
            }
        }
    }

    /// Marks node incident `id` as covered by `by` (or by none) where the
    /// tracker keeps it, and tells the caller, who keeps the rest.
    fn cover(&mut self, node: &str, id: &str, by: Option<String>, out: &mut Vec<Decision>) {
        let open = self
            .open
            .get_mut(&OpenKey::new(IncidentKind::NodeStatus, node))
            .filter(|i| i.id == id);
        let rest = self.resolved.iter_mut().filter(|i| i.id == id);
        for i in open.into_iter().chain(rest) {
            i.set_covered_by(by.clone());
        }
        out.push(Decision::CoverIncident {
            id: id.to_string(),
            by,
        });
    }

    /// Keeps the members within the bounds: final segments leave.
    fn bound_members(&mut self, key: &str) {
        let total: usize = self.fleet_groups.values().map(|g| g.members.len()).sum();
        let Some(g) = self.fleet_groups.get_mut(key) else {
            return;
        };
        let newest = g.members.last().map_or(0, |m| m.opened_at);
        let mut excess = total.saturating_sub(MEMBERS_MAX);
        let mut drop_to = 0;
        for s in segments(&g.members) {
            let end = g.members[s.clone()]
                .iter()
                .map(Member::end)
                .max()
                .unwrap_or(0);
            let closed = g.members[s.clone()].iter().all(|m| !m.open);
            let last_segment = s.end == g.members.len();
            if closed && !last_segment && (newest - end > HORIZON || excess > 0) {
                excess = excess.saturating_sub(s.len());
                drop_to = s.end;
            } else {
                break;
            }
        }
        if drop_to > 0 {
            let cut: Vec<Member> = g.members.drain(..drop_to).collect();
            g.dirty
                .extend(cut.iter().map(|m| (m.opened_at, m.id.clone())));
            g.outages.retain(|o| {
                !cut.iter()
                    .any(|m| m.cover.as_deref() == Some(o.id.as_str()))
            });
            g.named = NodesNamed::default();
        }
        if excess > 0 && g.members.len() > 1 {
            // One segment holds more than the bound: its oldest resolved
            // members go (the outage keeps its opening and the others).
            let n = excess.min(g.members.len() - 1);
            let mut k = 0;
            let dirty = &mut g.dirty;
            g.members.retain(|m| {
                if k < n && !m.open && m.cover.is_none() {
                    k += 1;
                    dirty.insert((m.opened_at, m.id.clone()));
                    false
                } else {
                    true
                }
            });
        }
    }

    /// The endpoint incident covering node incident `id`, if one does and
    /// should speak for it: always while it is open; for its end, only
    /// when its own alert never went out.
    fn covering(&self, id: &str, kind: AlertKind) -> Option<&str> {
        let i = match self.open.key_of_id(id) {
            Some(k) => self.open.get(k),
            None => self.resolved.iter().rev().find(|i| i.id == id),
        }?;
        let cover = i.covered_by()?;
        (kind != AlertKind::Resolved || !i.announced).then_some(cover)
    }

    /// Covered nodes' alerts of this call are their endpoint incident's: a
    /// reminder of a node is the endpoint's reminder when one is due.
    fn take_back_covered(&mut self, from: usize, out: &mut Vec<Decision>) {
        let mut reminders: Vec<(String, Micros)> = Vec::new();
        let mut kept = Vec::with_capacity(out.len() - from);
        for d in out.drain(from..).collect::<Vec<_>>() {
            if let Decision::QueueAlert { id, kind, at, .. } = &d {
                if let Some(cover) = self.covering(id, *kind) {
                    if *kind == AlertKind::Repeat {
                        reminders.push((cover.to_string(), *at));
                    }
                    continue;
                }
            }
            kept.push(d);
        }
        out.extend(kept);
        for (cover, at) in reminders {
            let Some(g) = self.fleet_groups.values_mut().find(|g| {
                g.outages
                    .iter()
                    .any(|o| o.id == cover && o.resolved_at.is_none())
            }) else {
                continue;
            };
            let repeat = self
                .settings
                .limits(
                    IncidentKind::Endpoint,
                    &g.endpoint,
                    g.cause.unwrap_or(Cause::Unknown),
                )
                .repeat_interval;
            let kind = match g.paged.get(&cover) {
                Some(&last) if at - last < repeat => continue,
                Some(_) => AlertKind::Repeat,
                None => AlertKind::Opened,
            };
            g.paged.insert(cover.clone(), at);
            if let Some(o) = g.outages.iter().find(|o| o.id == cover) {
                out.push(o.raise(kind, at));
            }
        }
    }

    /// The member records changed since the last call, to persist: every
    /// group made again or gone is dropped whole first.
    pub fn take_member_writes(&mut self) -> Vec<MemberWrite> {
        let mut w: Vec<MemberWrite> = self
            .stored_groups
            .iter()
            .filter(|k| self.fleet_groups.get(*k).is_none_or(|g| g.fresh))
            .map(|k| MemberWrite::DropGroup(k.clone()))
            .collect();
        for (key, g) in &mut self.fleet_groups {
            let dirty = std::mem::take(&mut g.dirty);
            if std::mem::take(&mut g.fresh) {
                w.extend(
                    g.members
                        .iter()
                        .map(|m| MemberWrite::Put(key.clone(), m.clone())),
                );
                continue;
            }
            for (at, id) in dirty {
                w.push(match g.find(at, &id) {
                    Some(p) => MemberWrite::Put(key.clone(), g.members[p].clone()),
                    None => MemberWrite::Delete(key.clone(), at, id),
                });
            }
        }
        self.stored_groups = self.fleet_groups.keys().cloned().collect();
        w
    }

    /// Puts the stored member records (in key order: by group, then
    /// opening and id) back into their groups. A state from before they
    /// were kept apart holds its members itself: they are written apart at
    /// the next commit.
    pub fn restore_members(&mut self, members: Vec<(String, Member)>) {
        let apart = !members.is_empty();
        for g in self.fleet_groups.values_mut() {
            if apart {
                g.members.clear();
            } else if !g.members.is_empty() {
                g.fresh = true;
            }
        }
        for (key, m) in members {
            self.stored_groups.insert(key.clone());
            if let Some(g) = self.fleet_groups.get_mut(&key) {
                let at = g
                    .members
                    .partition_point(|x| (x.opened_at, &x.id) < (m.opened_at, &m.id));
                g.members.insert(at, m);
            }
        }
        // A group with no member left is none.
        self.fleet_groups.retain(|_, g| !g.members.is_empty());
    }

    /// The endpoint incidents kept (open ones and those resolved lately).
    pub(crate) fn outages(&self) -> impl Iterator<Item = &Incident> {
        self.fleet_groups.values().flat_map(|g| g.outages.iter())
    }

    pub(crate) fn outage_mut(&mut self, id: &str) -> Option<&mut Incident> {
        self.fleet_groups
            .values_mut()
            .flat_map(|g| g.outages.iter_mut())
            .find(|i| i.id == id)
    }
}

#[cfg(test)]
impl Tracker {
    /// Every group's members, by group then opening and id (as the
    /// store's records are ordered).
    pub(crate) fn members_of(&self) -> Vec<(String, Member)> {
        self.fleet_groups
            .iter()
            .flat_map(|(k, g)| g.members.iter().map(move |m| (k.clone(), m.clone())))
            .collect()
    }
}
