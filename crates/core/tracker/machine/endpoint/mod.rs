//! The endpoint machine (design 5.2): after the tracker changed node
//! incidents, brings their groups and the endpoint incidents derived from
//! them up to date (by a shortcut where one answers, else by deriving the
//! group again), covers the nodes an outage stands for and takes back
//! their alerts; and the groups' member records, for the store. The rules
//! themselves are `groups/` beside this file.

pub(in crate::tracker) mod groups;

use std::collections::{BTreeMap, BTreeSet};

pub(in crate::tracker) use groups::Group;
pub use groups::{Member, MemberWrite};

use crate::signals::Cause;
use crate::time::Micros;
use crate::tracker::decision::{AlertKind, Decision};
use crate::tracker::kind::Incident;
use crate::tracker::ledger::Ledger;
use crate::tracker::open::OpenKey;
use crate::tracker::terms::IncidentKind;
use groups::{
    Derived, HORIZON, MEMBERS_MAX, NodesNamed, fast, outage_of, remove_member, segments,
    upsert_member,
};

/// The endpoint groups and the endpoint incidents derived from them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(in crate::tracker) struct Outages {
    /// Endpoint incidents and the node incidents they are derived from,
    /// by endpoint and cause (bounded, see `groups/`). Kept in the
    /// tracker's state.
    pub(in crate::tracker) groups: BTreeMap<String, Group>,
    /// The groups whose members the store holds records of, as of the last
    /// [`Outages::take_member_writes`].
    stored: BTreeSet<String>,
    /// Endpoint groups derived again at every change, never by the
    /// shortcuts (tests hold the shortcuts to the same answer).
    pub(in crate::tracker) long_way: bool,
    /// Shortcuts taken, so far (tests count them).
    pub(in crate::tracker) shortcuts: u64,
}

impl Outages {
    pub(in crate::tracker) fn new(groups: BTreeMap<String, Group>) -> Self {
        Self {
            groups,
            ..Self::default()
        }
    }

    /// After the tracker changed incidents (decisions `out[from..]`, about
    /// `keys`' open incidents and those resolved or forgotten): brings the
    /// endpoint incidents up to date, and takes back the alerts of the
    /// nodes they cover.
    pub(in crate::tracker) fn correlate(
        &mut self,
        l: &mut Ledger,
        keys: &[OpenKey],
        from: usize,
        out: &mut Vec<Decision>,
    ) {
        if l.settings.fleet_min_nodes < 2 || out.len() <= from {
            return;
        }
        let mut touched: BTreeSet<String> = BTreeSet::new();
        let groups = &mut self.groups;
        let after = l.settings.resolve_after;
        let mut uncover: Vec<Member> = Vec::new();
        let mut moved: Vec<fast::Moved> = Vec::new();
        for k in keys {
            if let Some(i) = l.open.get(k) {
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
                    if let Some(i) = l.resolved.iter().rev().find(|i| &i.id == id) {
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
            cover(l, &m.node, &m.id, None, out);
        }
        for m in moved {
            if m.changed {
                out.push(Decision::UpdateIncident {
                    id: m.outage.clone(),
                });
            }
            if let Some((node, id)) = m.covered {
                cover(l, &node, &id, Some(m.outage), out);
            }
        }
        for g in &touched {
            self.rederive(l, g, out);
        }
        if out[from..]
            .iter()
            .any(|d| matches!(d, Decision::QueueAlert { .. }))
        {
            self.take_back_covered(l, from, out);
        }
    }

    /// Derives group `key`'s endpoint incidents again and says what changed.
    fn rederive(&mut self, l: &mut Ledger, key: &str, out: &mut Vec<Decision>) {
        self.bound_members(key);
        let Some(old) = self
            .groups
            .get_mut(key)
            .map(|g| std::mem::take(&mut g.outages))
        else {
            return;
        };
        let Some(g) = self.groups.get(key) else {
            return;
        };
        let min = l.settings.fleet_min_nodes;
        let window = l.settings.fleet_window;
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
        publish_outages(l, &old, &mut now, &mut paged, &mut told_end, out);
        paged.retain(|id, _| now.iter().any(|n| &n.id == id));
        told_end.retain(|id| now.iter().any(|n| n.id == *id));
        let mut changed = Vec::with_capacity(recovered.len());
        for (k, node, id, by) in recovered {
            cover(l, &node, &id, by.clone(), out);
            changed.push((k, by));
        }
        if let Some(g) = self.groups.get_mut(key) {
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
                self.groups.remove(key);
            }
        }
    }

    /// Keeps the members within the bounds: final segments leave.
    fn bound_members(&mut self, key: &str) {
        let total: usize = self.groups.values().map(|g| g.members.len()).sum();
        let Some(g) = self.groups.get_mut(key) else {
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

    /// Covered nodes' alerts of this call are their endpoint incident's: a
    /// reminder of a node is the endpoint's reminder when one is due.
    fn take_back_covered(&mut self, l: &Ledger, from: usize, out: &mut Vec<Decision>) {
        let mut reminders: Vec<(String, Micros)> = Vec::new();
        let mut kept = Vec::with_capacity(out.len() - from);
        for d in out.drain(from..).collect::<Vec<_>>() {
            if let Decision::QueueAlert { id, kind, at, .. } = &d {
                if let Some(cover) = covering(l, id, *kind) {
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
            let Some(g) = self.groups.values_mut().find(|g| {
                g.outages
                    .iter()
                    .any(|o| o.id == cover && o.resolved_at.is_none())
            }) else {
                continue;
            };
            let repeat = l
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
    pub(in crate::tracker) fn take_member_writes(&mut self) -> Vec<MemberWrite> {
        let mut w: Vec<MemberWrite> = self
            .stored
            .iter()
            .filter(|k| self.groups.get(*k).is_none_or(|g| g.fresh))
            .map(|k| MemberWrite::DropGroup(k.clone()))
            .collect();
        for (key, g) in &mut self.groups {
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
        self.stored = self.groups.keys().cloned().collect();
        w
    }

    /// Puts the stored member records (in key order: by group, then
    /// opening and id) back into their groups. A state from before they
    /// were kept apart holds its members itself: they are written apart at
    /// the next commit.
    pub(in crate::tracker) fn restore_members(&mut self, members: Vec<(String, Member)>) {
        let apart = !members.is_empty();
        for g in self.groups.values_mut() {
            if apart {
                g.members.clear();
            } else if !g.members.is_empty() {
                g.fresh = true;
            }
        }
        for (key, m) in members {
            self.stored.insert(key.clone());
            if let Some(g) = self.groups.get_mut(&key) {
                let at = g
                    .members
                    .partition_point(|x| (x.opened_at, &x.id) < (m.opened_at, &m.id));
                g.members.insert(at, m);
            }
        }
        // A group with no member left is none.
        self.groups.retain(|_, g| !g.members.is_empty());
    }

    /// The endpoint incidents kept (open ones and those resolved lately).
    pub(in crate::tracker) fn outages(&self) -> impl Iterator<Item = &Incident> {
        self.groups.values().flat_map(|g| g.outages.iter())
    }

    pub(in crate::tracker) fn outage_mut(&mut self, id: &str) -> Option<&mut Incident> {
        self.groups
            .values_mut()
            .flat_map(|g| g.outages.iter_mut())
            .find(|i| i.id == id)
    }
}

/// Decisions for a group's endpoint incidents, `old` then `now`:
/// opened, changed, resolved, forgotten; their alerts.
fn publish_outages(
    l: &mut Ledger,
    old: &[Incident],
    now: &mut [Incident],
    paged: &mut BTreeMap<String, Micros>,
    told_end: &mut BTreeSet<String>,
    out: &mut Vec<Decision>,
) {
    for o in old {
        if !now.iter().any(|n| n.id == o.id) {
            l.resolved.retain(|r| r.id != o.id);
            l.forgotten_incidents.push(o.clone());
            out.push(Decision::ForgetIncident { id: o.id.clone() });
        }
    }
    let send_resolved = l.settings.send_resolved;
    for n in now.iter_mut() {
        let before = old.iter().find(|o| o.id == n.id);
        if before == Some(n) {
            continue;
        }
        // Forgotten earlier in this batch and made again: kept.
        l.forgotten_incidents.retain(|f| f.id != n.id);
        let was_open = before.is_some_and(|b| b.resolved_at.is_none());
        if before.is_none() {
            out.push(Decision::OpenIncident { id: n.id.clone() });
        }
        if let Some(at) = n.over_threshold_at.filter(|_| !paged.contains_key(&n.id)) {
            paged.insert(n.id.clone(), at);
            out.push(n.raise(AlertKind::Opened, at));
        }
        l.resolved.retain(|r| r.id != n.id);
        if let Some(end) = n.resolved_at {
            l.resolved.push(n.clone());
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
fn cover(l: &mut Ledger, node: &str, id: &str, by: Option<String>, out: &mut Vec<Decision>) {
    let open = l
        .open
        .get_mut(&OpenKey::new(IncidentKind::NodeStatus, node))
        .filter(|i| i.id == id);
    let rest = l.resolved.iter_mut().filter(|i| i.id == id);
    for i in open.into_iter().chain(rest) {
        i.set_covered_by(by.clone());
    }
    out.push(Decision::CoverIncident {
        id: id.to_string(),
        by,
    });
}

/// The endpoint incident covering node incident `id`, if one does and
/// should speak for it: always while it is open; for its end, only
/// when its own alert never went out.
fn covering<'a>(l: &'a Ledger, id: &str, kind: AlertKind) -> Option<&'a str> {
    let i = match l.open.key_of_id(id) {
        Some(k) => l.open.get(k),
        None => l.resolved.iter().rev().find(|i| i.id == id),
    }?;
    let cover = i.covered_by()?;
    (kind != AlertKind::Resolved || !i.announced).then_some(cover)
}

#[cfg(test)]
impl Outages {
    /// Every group's members, by group then opening and id (as the
    /// store's records are ordered).
    pub(in crate::tracker) fn members_of(&self) -> Vec<(String, Member)> {
        self.groups
            .iter()
            .flat_map(|(k, g)| g.members.iter().map(move |m| (k.clone(), m.clone())))
            .collect()
    }
}
