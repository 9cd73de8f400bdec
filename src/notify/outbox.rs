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
