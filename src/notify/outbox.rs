//! Which outbox entries go out together, and when a failed one is tried
//! again. Pure.

use crate::store::OutboxEntry;
use sentinel_core::time::{Micros, SECOND};
use sentinel_core::tracker::AlertKind;

/// An entry that failed this often no longer holds back the ones after it.
pub(crate) const HEAD_OF_LINE_ATTEMPTS: u32 = 5;

/// The entry that goes next: the oldest, so that after an outage alerts
/// arrive in the order they were raised; once the oldest has failed
/// [`HEAD_OF_LINE_ATTEMPTS`] times (a mail the server refuses for itself),
/// the oldest that is due.
fn head<'a>(
    entries: &'a [OutboxEntry],
    now: Micros,
    firsts: &Firsts<'_>,
) -> Option<&'a OutboxEntry> {
    // An entry behind a held one of its incident waits with it: never the
    // head, or a pass would find an empty group and look again at once.
    let mut ready = entries
        .iter()
        .filter(|e| !held(e, now) && !behind_own(e, firsts));
    let oldest = ready.next()?;
    if oldest.attempts < HEAD_OF_LINE_ATTEMPTS {
        return (oldest.next_attempt_at <= now).then_some(oldest);
    }
    std::iter::once(oldest)
        .chain(ready)
        .find(|e| e.next_attempt_at <= now)
}

/// The oldest waiting entry of each incident (by `seq`).
type Firsts<'a> = std::collections::HashMap<&'a str, u64>;

fn firsts(entries: &[OutboxEntry]) -> Firsts<'_> {
    let mut f = Firsts::with_capacity(entries.len());
    for e in entries {
        f.entry(e.incident.as_str())
            .and_modify(|s| *s = (*s).min(e.seq))
            .or_insert(e.seq);
    }
    f
}

/// An entry raised after another of its incident that is still waiting: a
/// reminder or resolved notice never goes out before the alert it follows.
fn behind_own(e: &OutboxEntry, firsts: &Firsts<'_>) -> bool {
    firsts.get(e.incident.as_str()).is_some_and(|&s| s < e.seq)
}

/// Held back by a silence: not in line at all until it ends.
fn held(e: &OutboxEntry, now: Micros) -> bool {
    e.held_at(now)
}

/// Groups due outbox entries (oldest first): the next entry and every entry
/// of the same class (trouble or resolved) queued within `group_wait` of
/// it. `None` while it is still gathering company or waiting to be retried.
#[must_use]
pub(crate) fn next_group(
    entries: &[OutboxEntry],
    group_wait: Micros,
    now: Micros,
) -> Option<Vec<OutboxEntry>> {
    let firsts = firsts(entries);
    let first = head(entries, now, &firsts)?;
    if first.attempts == 0 && now - first.queued_at < group_wait {
        return None;
    }
    let resolved = first.kind == AlertKind::Resolved;
    let group: Vec<OutboxEntry> = entries
        .iter()
        .filter(|e| {
            e.next_attempt_at <= now
                && !held(e, now)
                && !behind_own(e, &firsts)
                && (e.kind == AlertKind::Resolved) == resolved
                && e.queued_at >= first.queued_at
                && e.queued_at - first.queued_at <= group_wait
        })
        .cloned()
        .collect();
    (!group.is_empty()).then_some(group)
}

/// When the outbox next needs looking at: when the entry that goes next
/// (see [`next_group`]) is due and done gathering company.
#[must_use]
pub(crate) fn next_due(entries: &[OutboxEntry], group_wait: Micros, now: Micros) -> Option<Micros> {
    let due = |e: &OutboxEntry| {
        if e.attempts == 0 {
            e.next_attempt_at
                .max(e.queued_at.saturating_add(group_wait))
        } else {
            e.next_attempt_at
        }
    };
    // A silence's end is when its held entries are looked at again.
    let silence_ends = entries
        .iter()
        .filter_map(|e| e.hold.as_ref().map(|h| h.until))
        .filter(|&h| h > now)
        .min();
    let firsts = firsts(entries);
    let ready: Vec<&OutboxEntry> = entries
        .iter()
        .filter(|e| !held(e, now) && !behind_own(e, &firsts))
        .collect();
    let next = match ready.first() {
        None => None,
        Some(oldest) if oldest.attempts < HEAD_OF_LINE_ATTEMPTS => Some(due(oldest)),
        Some(_) => ready.iter().map(|e| due(e)).min(),
    };
    match (next, silence_ends) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Capped exponential backoff after `attempts` failures, plus up to a
/// quarter more, spread by `seed`: after an outage, every node's sentinel
/// does not retry the same relay in step.
#[must_use]
pub(crate) fn backoff(attempts: u32, max: Micros, seed: u64) -> Micros {
    let base = (SECOND << attempts.min(20)).min(max);
    if base >= max {
        return max;
    }
    // splitmix64: a well-spread number from the seed, no state, no clock.
    let mut z = seed
        .wrapping_add(u64::from(attempts))
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let jitter = (z % (base as u64 / 4 + 1)) as Micros;
    (base + jitter).min(max)
}

/// Which of a group's entries share a mail, as lists of their indexes in
/// the order each list's first entry came. `keys[i]` is entry `i`'s route,
/// its incident's node (`None`: the incident was pruned) and what else
/// must match to share a mail (its kind, API endpoint and cause: thirty
/// nodes losing one endpoint are one mail, a lone node with another cause
/// or endpoint a page of its own, a host gone silent is not a node's
/// retries). One node's incidents of a route are one mail whatever their
/// kinds: its status retries and its kubelet's crash loop raised within
/// `group_wait` are one story, as the design promises (the recheck's two
/// mails about n1 seconds apart).
#[must_use]
pub(crate) fn mail_parts<K: PartialEq>(
    keys: &[(Option<usize>, Option<&str>, K)],
) -> Vec<Vec<usize>> {
    let mut parts: Vec<Vec<usize>> = Vec::new();
    for (i, (route, _, key)) in keys.iter().enumerate() {
        match parts
            .iter_mut()
            .find(|p| keys[p[0]].0 == *route && keys[p[0]].2 == *key)
        {
            Some(p) => p.push(i),
            None => parts.push(vec![i]),
        }
    }
    // A part of one node joins an earlier part of that node alone.
    let one_node = |p: &[usize]| -> Option<(Option<usize>, &str)> {
        let node = keys[p[0]].1?;
        p.iter()
            .all(|&i| keys[i].1 == Some(node))
            .then_some((keys[p[0]].0, node))
    };
    let mut merged: Vec<Vec<usize>> = Vec::with_capacity(parts.len());
    for p in parts {
        let target = one_node(&p).and_then(|n| merged.iter().position(|m| one_node(m) == Some(n)));
        match target {
            Some(t) => {
                merged[t].extend(p);
                merged[t].sort_unstable();
            }
            None => merged.push(p),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::mail_parts;

    #[test]
    fn one_nodes_incidents_share_a_mail_and_a_fleets_split_by_kind() {
        // (route, node, kind/endpoint/cause)
        let keys = [
            (None, Some("n1"), "status/api"),
            (None, Some("n2"), "status/api"),
            (None, Some("n3"), "down/cgroup"),
            (None, Some("n3"), "status/api-other"),
            (Some(0), Some("n3"), "silent"),
            (None, None, "pruned"),
            (None, Some("n4"), "silent"),
        ];
        assert_eq!(
            mail_parts(&keys),
            [vec![0, 1], vec![2, 3], vec![4], vec![5], vec![6]]
        );
        // The recheck's n1: its retries and its crash loop, one mail.
        let n1 = [
            (None, Some("n1"), "status/api"),
            (None, Some("n1"), "down/cgroup"),
        ];
        assert_eq!(mail_parts(&n1), [vec![0, 1]]);
    }
}
