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
use crate::tracker::evidence::{EVIDENCE_HEAD, Evidence};
use crate::tracker::incident::incident_id;
use crate::tracker::kind::{Detail, Incident, Outage};
use crate::tracker::terms::{IncidentKind, Resolution};

pub(crate) mod fast;

pub(crate) use fast::NodesNamed;

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
pub(crate) fn group_key(endpoint: &str, cause: Cause) -> String {
    format!("{endpoint} {}", cause.as_str())
}

/// The group a node-status incident belongs to, if any.
pub(crate) fn group_of(i: &Incident) -> Option<(String, Cause)> {
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
    pub(crate) id: String,
    pub(crate) node: String,
    pub(crate) host: String,
    pub(crate) opened_at: Micros,
    /// Its resolution; while open, when it will resolve if nothing more
    /// comes (its last trouble plus `resolve_after`): a following service
    /// resolves it there on quiet time, where `scan` ends with it open,
    /// and both must see the same outage.
    pub(crate) end: Micros,
    pub(crate) open: bool,
    /// Its last signal.
    pub(crate) last: Micros,
    pub(crate) over: Option<Micros>,
    /// Its own last alert (raised, whether or not it was taken back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) alerted: Option<Micros>,
    pub(crate) ready: bool,
    pub(crate) first: Option<Evidence>,
    /// The endpoint incident that covers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cover: Option<String>,
}

/// A change to the stored member records ([`Tracker::take_member_writes`](crate::tracker::Tracker::take_member_writes)).
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

    pub(crate) fn of(i: &Incident, resolve_after: Micros) -> Self {
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
    pub(crate) fn same(&self, o: &Member) -> bool {
        (self.opened_at, self.end, self.open, self.last) == (o.opened_at, o.end, o.open, o.last)
            && (self.over, self.alerted, self.ready) == (o.over, o.alerted, o.ready)
            && (&self.id, &self.node, &self.host, &self.first)
                == (&o.id, &o.node, &o.host, &o.first)
    }

    pub(crate) fn end(&self) -> Micros {
        self.end
    }
}

/// One endpoint and cause: its members and the endpoint incidents derived
/// from them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Group {
    pub(crate) endpoint: String,
    pub(crate) cause: Option<Cause>,
    /// By (opening, id). Not in the serialized tracker: the store keeps
    /// one record a member (read from the state of stores from before).
    #[serde(default, skip_serializing)]
    pub(crate) members: Vec<Member>,
    /// Members added, changed or taken out since the last
    /// [`Tracker::take_member_writes`](crate::tracker::Tracker::take_member_writes), by (opening, id).
    #[serde(skip)]
    pub(crate) dirty: BTreeSet<(Micros, String)>,
    /// Made (again) since then: every record of its name is written anew.
    #[serde(skip)]
    pub(crate) fresh: bool,
    pub(crate) outages: Vec<Incident>,
    /// The endpoint incidents paged (their alert raised), and when last:
    /// kept apart from the incidents, whose `last_alert_at` is their
    /// nodes' (the same whatever order they were read in).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) paged: BTreeMap<String, Micros>,
    /// Those whose end was told (once: a catch-up reading host after host
    /// sees an outage end and open again as each host's member comes).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) told_end: BTreeSet<String>,
    /// Of each outage, the opening of the member at which it was first one
    /// (enough hosts in trouble): a member in trouble past it cannot move
    /// the outage's opening (see `fast.rs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) confirmed: BTreeMap<String, Micros>,
    /// The nodes each outage names, for joins by the short way: dropped
    /// whenever the outages are derived or cut again (see [`NodesNamed`]).
    #[serde(skip)]
    pub(crate) named: NodesNamed,
}

/// What the rules make of a group's members: for each outage, its opening,
/// its end (`None`: open) and its members (indices).
pub(crate) struct Derived {
    pub(crate) opened_at: Micros,
    /// The opening of the member at which it was first an outage.
    pub(crate) confirmed: Micros,
    pub(crate) end: Option<Micros>,
    pub(crate) members: Vec<usize>,
}

/// Segments of overlapping trouble, as index ranges of `m` (sorted).
pub(crate) fn segments(m: &[Member]) -> Vec<std::ops::Range<usize>> {
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
pub(crate) fn outage_of(
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
    pub(crate) fn find(&self, opened_at: Micros, id: &str) -> Option<usize> {
        let k = self
            .members
            .partition_point(|x| (x.opened_at, x.id.as_str()) < (opened_at, id));
        (self.members.get(k).is_some_and(|x| x.id == id)).then_some(k)
    }

    pub(crate) fn key(&self) -> String {
        group_key(&self.endpoint, self.cause.unwrap_or(Cause::Unknown))
    }

    /// The endpoint incident for `d`, its alert state taken from `before`.
    pub(crate) fn incident(&self, d: &Derived, before: Option<&Incident>) -> Incident {
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
pub(crate) fn upsert_member(
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
pub(crate) fn remove_member(
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
pub(crate) fn room_for_group(groups: &mut BTreeMap<String, Group>) -> bool {
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
