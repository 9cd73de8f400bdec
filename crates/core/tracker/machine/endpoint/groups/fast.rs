//! A member's change that the rules answer without deriving its group
//! again: the two that make up nearly every line of an outage, each in
//! O(log n) of the group's members (a joining node is looked up in
//! [`NodesNamed`], made from the outage's node list at its first join).
//! Anything else derives the group again (`rederive`), so the rules stay
//! in one place; these are shortcuts to the same answer, which the tests
//! hold them to.
//!
//! - a member of an open outage in trouble again (a later end and last
//!   signal; perhaps over its threshold, or alerted, after the outage's
//!   own threshold): the outage's opening, nodes and threshold stay; only
//!   its last signal and last alert move. Taken when the member was
//!   already in trouble at the outage's confirmation (so it counted there
//!   and earlier), and every member opened before its new end is already
//!   the outage's (its segment merges with no other);
//! - a new member opening after every other, while the group's last member
//!   (of the open outage) is still in trouble: it joins that outage; the
//!   outage's opening stays (found before it opened).
//!
//! Both only while the members are within [`MEMBERS_MAX`] (no bound to
//! apply), and the outage's page state needs nothing (its threshold
//! unchanged).

use super::{BTreeMap, BTreeSet, Detail, Incident, IncidentKind, Micros};
use super::{EVIDENCE_HEAD, Group, MEMBERS_MAX, Member, group_key, group_of};

/// What a shortcut changed: the outage to tell of, and the node incident
/// it now covers (a new member).
pub(crate) struct Moved {
    /// Whether the outage changed (a line may change none of it).
    pub(crate) changed: bool,
    pub(crate) outage: String,
    pub(crate) covered: Option<(String, String)>,
}

/// Takes node incident `i`'s change by a shortcut, if one applies.
pub(crate) fn shortcut(
    groups: &mut BTreeMap<String, Group>,
    i: &Incident,
    resolve_after: Micros,
) -> Option<Moved> {
    if i.kind() != IncidentKind::NodeStatus || i.resolved_at.is_some() {
        return None;
    }
    let (ep, cause) = group_of(i)?;
    let key = group_key(&ep, cause);
    let total: usize = groups.values().map(|g| g.members.len()).sum();
    let m = Member::of(i, resolve_after);
    if let Some(k) = groups.get(&key)?.find(m.opened_at, &m.id) {
        return again(groups.get_mut(&key)?, k, m);
    }
    // A member of another group (its cause moved) leaves it first: the
    // long way.
    let elsewhere = groups
        .values()
        .any(|g| g.find(m.opened_at, &m.id).is_some());
    if total >= MEMBERS_MAX || elsewhere {
        return None;
    }
    join(groups.get_mut(&key)?, m)
}

/// The open outage `id` of `g`, and its place, if it needs no page.
fn open_outage(g: &Group, id: &str) -> Option<usize> {
    let p = g.outages.iter().position(|o| o.id == id)?;
    let o = &g.outages[p];
    let paged = o.over_threshold_at.is_none() || g.paged.contains_key(id);
    (o.resolved_at.is_none() && paged).then_some(p)
}

/// Member `k` in trouble again.
#[allow(clippy::many_single_char_names)]
fn again(g: &mut Group, k: usize, m: Member) -> Option<Moved> {
    let x = &g.members[k];
    let cover = x.cover.clone()?;
    let same = x.ready == m.ready && (&x.node, &x.host, &x.first) == (&m.node, &m.host, &m.first);
    // Its own threshold and alert may move on (the outage's are the
    // earliest and the latest of its members').
    let over = x.over == m.over || (x.over.is_none() && m.over.is_some());
    let alerted = x.alerted <= m.alerted;
    if !(same && over && alerted && x.open && m.open && m.end >= x.end && m.last >= x.last) {
        return None;
    }
    let p = open_outage(g, &cover)?;
    if g.confirmed.get(&cover).is_none_or(|&c| x.end < c) {
        return None;
    }
    let o = &g.outages[p];
    if m.over
        .is_some_and(|t| o.over_threshold_at.is_none_or(|a| a > t.max(o.opened_at)))
    {
        // It is the first over: the outage crosses, and pages.
        return None;
    }
    // The last member opened by its new end is the outage's: no merge.
    let j = g.members.partition_point(|y| y.opened_at <= m.end) - 1;
    if g.members[j].cover.as_deref() != Some(cover.as_str()) {
        return None;
    }
    let last = m.last.max(m.opened_at);
    let o = &mut g.outages[p];
    let before = (o.last_signal_at, o.last_alert_at);
    o.last_signal_at = o.last_signal_at.max(last);
    o.last_trouble_at = o.last_signal_at;
    o.last_alert_at = o.last_alert_at.max(m.alerted);
    let changed = before != (o.last_signal_at, o.last_alert_at);
    let mut m = m;
    m.cover = Some(cover.clone());
    g.dirty.insert((m.opened_at, m.id.clone()));
    g.members[k] = m;
    Some(Moved {
        changed,
        outage: cover,
        covered: None,
    })
}

/// A new member after every other joins the open outage.
fn join(g: &mut Group, m: Member) -> Option<Moved> {
    let tail = g.members.last()?;
    if (tail.opened_at, tail.id.as_str()) >= (m.opened_at, m.id.as_str())
        || tail.end < m.opened_at
        || m.over.is_some()
        || m.alerted.is_some()
        || !m.open
    {
        return None;
    }
    let cover = tail.cover.clone()?;
    let p = open_outage(g, &cover)?;
    let o = &mut g.outages[p];
    let Detail::Endpoint(out) = &mut o.detail else {
        return None;
    };
    // Its first line joins the outage's first lines (never the first of
    // them: that names the outage's first trouble).
    let order = |e: &super::Evidence| (e.at, e.cursor.clone());
    let mut head = o.evidence_head.clone();
    if let Some(f) = &m.first {
        if head.first().is_none_or(|h| order(f) < order(h)) {
            return None;
        }
        let at = head.partition_point(|h| order(h) <= order(f));
        head.insert(at, f.clone());
        head.truncate(EVIDENCE_HEAD);
    }
    o.evidence_head = head;
    if g.named.add(&cover, &out.nodes, &m.node) {
        out.nodes.push(m.node.clone());
    }
    if let Err(at) = out.hosts.binary_search(&m.host) {
        out.hosts.insert(at, m.host.clone());
    }
    o.last_signal_at = o.last_signal_at.max(m.last.max(m.opened_at));
    o.last_trouble_at = o.last_signal_at;
    for n in o.causes.values_mut() {
        *n += 1;
    }
    let covered = Some((m.node.clone(), m.id.clone()));
    let mut m = m;
    m.cover = Some(cover.clone());
    g.dirty.insert((m.opened_at, m.id.clone()));
    g.members.push(m);
    Some(Moved {
        changed: true,
        outage: cover,
        covered,
    })
}

/// Of an outage a member joins by the short way, the nodes it names, so a
/// join asks in O(log n) whether its node is one (a walk of the list made
/// a 5 000-node outage's joins quadratic): built from the outage's list at
/// the first join, kept as members join, dropped (`Group::named`) whenever
/// the outages are derived or cut again. An index of what the outages
/// say, so it is equal whatever it holds: two groups with the same members
/// and outages are the same group, whichever of them has been asked.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodesNamed(BTreeMap<String, BTreeSet<String>>);

impl PartialEq for NodesNamed {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for NodesNamed {}

impl NodesNamed {
    /// Adds `node` to the nodes outage `id` names (`listed`, the first
    /// time); whether it is new to them.
    pub(crate) fn add(&mut self, id: &str, listed: &[String], node: &str) -> bool {
        let named = self
            .0
            .entry(id.to_string())
            .or_insert_with(|| listed.iter().cloned().collect());
        !named.contains(node) && named.insert(node.to_string())
    }
}
