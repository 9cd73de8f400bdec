//! What operators' silences and acknowledgements do to an alert waiting in
//! the outbox (design section 6). Pure: the delivery tasks apply it.
//!
//! - A silence matching the incident's node (a glob) and cause holds its
//!   alerts back until the silence ends; the incident is still recorded.
//!   When it ends, what was held goes out if the incident is still in
//!   trouble (it is announced then); an incident that resolved meanwhile is
//!   never announced, and so gets no resolved notice either.
//! - An acknowledged incident gets no more reminders; its resolved notice
//!   still goes out and says who acknowledged it.

use crate::store::{OutboxEntry, Silence};
use crate::time::{Micros, rfc3339};
use crate::tracker::{AlertKind, Incident};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Deliver,
    /// Wait until then (a silence ends); not a delivery attempt.
    Hold {
        until: Micros,
        why: String,
    },
    /// Never to be delivered, and why.
    Drop(String),
}

/// The silences in force now that match an incident.
pub fn silencing<'a>(
    i: &Incident,
    silences: &'a [Silence],
    now: Micros,
) -> impl Iterator<Item = &'a Silence> {
    let node = i.node.clone();
    let cause = i.cause().as_str();
    silences
        .iter()
        .filter(move |s| s.active(now) && s.matches(&node, cause))
}

/// What to do with one outbox entry now.
#[must_use]
pub fn decide(e: &OutboxEntry, i: &Incident, silences: &[Silence], now: Micros) -> Action {
    if e.kind == AlertKind::Repeat {
        if let Some(a) = &i.ack {
            return Action::Drop(format!("a reminder, and {} acknowledged it", a.by));
        }
    }
    let holding: Vec<&Silence> = silencing(i, silences, now).collect();
    if let Some(until) = holding.iter().map(|s| s.ends_at).max() {
        let ids: Vec<&str> = holding.iter().map(|s| s.id.as_str()).collect();
        return Action::Hold {
            until,
            why: format!("silenced ({}) until {}", ids.join(", "), rfc3339(until)),
        };
    }
    if e.held_until.is_some() {
        match e.kind {
            AlertKind::Opened | AlertKind::Repeat if i.resolved_at.is_some() => {
                return Action::Drop("it resolved while silenced".into());
            }
            AlertKind::Resolved if i.alerted_at.is_none() => {
                return Action::Drop(
                    "it resolved while silenced; nobody was told it opened".into(),
                );
            }
            _ => {}
        }
    }
    Action::Deliver
}

/// The entries still to deliver, and those dropped with why.
pub type Applied = (Vec<OutboxEntry>, Vec<(OutboxEntry, String)>);

/// Applies silences and acknowledgements to outbox entries (of one
/// channel): dropped entries leave the outbox, held ones get their
/// `held_until`. Returns the entries still to deliver (held ones
/// included: they wait) and the dropped ones with why.
pub fn apply(
    store: &crate::store::Store,
    entries: Vec<OutboxEntry>,
    now: Micros,
) -> Result<Applied, crate::store::StoreError> {
    if entries.is_empty() {
        return Ok((entries, Vec::new()));
    }
    let silences = store.silences()?;
    let mut cache: std::collections::HashMap<String, Option<Incident>> =
        std::collections::HashMap::new();
    let mut keep = Vec::with_capacity(entries.len());
    let mut dropped = Vec::new();
    let mut changed = Vec::new();
    for mut e in entries {
        if !cache.contains_key(&e.incident) {
            cache.insert(e.incident.clone(), store.incident(&e.incident)?);
        }
        // A pruned incident: the delivery itself drops it.
        let Some(i) = cache.get(&e.incident).and_then(Option::as_ref) else {
            keep.push(e);
            continue;
        };
        match decide(&e, i, &silences, now) {
            Action::Deliver => keep.push(e),
            Action::Hold { until, why } => {
                if e.held_until != Some(until) {
                    e.held_until = Some(until);
                    e.last_error = Some(why);
                    changed.push(e.clone());
                }
                keep.push(e);
            }
            Action::Drop(why) => dropped.push((e, why)),
        }
    }
    if !changed.is_empty() {
        store.outbox_update(&changed)?;
    }
    if !dropped.is_empty() {
        let seqs: Vec<u64> = dropped.iter().map(|(e, _)| e.seq).collect();
        store.outbox_remove(&seqs)?;
    }
    Ok((keep, dropped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Channel;
    use crate::time::SECOND;
    use crate::tracker::Ack;

    fn entry(kind: AlertKind) -> OutboxEntry {
        OutboxEntry {
            seq: 1,
            channel: Channel::Email,
            kind,
            incident: "i".into(),
            node: "worker-3".into(),
            raised_at: 0,
            queued_at: 0,
            attempts: 0,
            next_attempt_at: 0,
            last_error: None,
            in_doubt: 0,
            held_until: None,
        }
    }

    fn incident() -> Incident {
        let mut p = crate::pipeline::Pipeline::new(
            crate::model::EntryFilter::default(),
            crate::tracker::Settings::default(),
        );
        let mut d = Vec::new();
        for k in 0..7 {
            p.push(
                crate::model::Entry {
                    at: Some(k * SECOND),
                    message: b"E0101 00:00:00.000000 1 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"worker-3\\\": Unauthorized\"".to_vec(),
                    ..crate::model::Entry::default()
                },
                &mut d,
            );
        }
        p.flush(&mut d);
        p.tracker().open_incidents().next().unwrap().clone()
    }

    fn silence(node: &str, cause: Option<&str>, ends_at: Micros) -> Silence {
        Silence {
            id: "s1".into(),
            node: node.into(),
            cause: cause.map(Into::into),
            starts_at: 0,
            ends_at,
            created_by: "alice".into(),
            comment: String::new(),
            expired_by: None,
            expired_at: None,
        }
    }

    #[test]
    fn silences_hold_and_the_end_decides() {
        let i = incident();
        assert_eq!(i.cause().as_str(), "auth");
        let s = [silence("worker-*", Some("auth"), 100 * SECOND)];
        let e = entry(AlertKind::Opened);
        assert!(
            matches!(decide(&e, &i, &s, 50 * SECOND), Action::Hold { until, .. } if until == 100 * SECOND)
        );
        // Another cause or node: not this silence's.
        assert_eq!(
            decide(
                &e,
                &i,
                &[silence("worker-*", Some("etcd"), 100 * SECOND)],
                50 * SECOND
            ),
            Action::Deliver
        );
        assert_eq!(
            decide(&e, &i, &[silence("db-*", None, 100 * SECOND)], 50 * SECOND),
            Action::Deliver
        );
        // Over: still in trouble, announced now.
        let held = OutboxEntry {
            held_until: Some(100 * SECOND),
            ..e.clone()
        };
        assert_eq!(decide(&held, &i, &s, 100 * SECOND), Action::Deliver);
        // Resolved meanwhile: never announced, no resolved notice.
        let mut r = i.clone();
        r.resolved_at = Some(90 * SECOND);
        assert!(matches!(
            decide(&held, &r, &s, 100 * SECOND),
            Action::Drop(_)
        ));
        let notice = OutboxEntry {
            held_until: Some(100 * SECOND),
            ..entry(AlertKind::Resolved)
        };
        assert!(matches!(
            decide(&notice, &r, &s, 100 * SECOND),
            Action::Drop(_)
        ));
        // It had been announced before the silence: the notice goes.
        r.alerted_at = Some(SECOND);
        assert_eq!(decide(&notice, &r, &s, 100 * SECOND), Action::Deliver);
    }

    #[test]
    fn an_acknowledged_incident_gets_no_reminder_but_its_resolved_notice() {
        let mut i = incident();
        i.ack = Some(Ack {
            by: "bob".into(),
            at: 0,
            comment: String::new(),
        });
        assert!(
            matches!(decide(&entry(AlertKind::Repeat), &i, &[], 0), Action::Drop(w) if w.contains("bob"))
        );
        assert_eq!(
            decide(&entry(AlertKind::Resolved), &i, &[], 0),
            Action::Deliver
        );
    }

    #[test]
    fn globs() {
        use crate::store::glob;
        assert!(glob("worker-*", "worker-7"));
        assert!(glob("*", ""));
        assert!(glob("w?rker-*-a", "worker-12-a"));
        assert!(!glob("worker-*", "db-1"));
        assert!(!glob("a*b", "acb-"));
        assert!(glob("*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaab"));
        assert!(!glob("*a*a*a*a*b", &"a".repeat(10_000)));
    }
}
