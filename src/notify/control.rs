//! What operators' silences and acknowledgements do to an alert waiting in
//! the outbox (design section 6). Pure: the delivery tasks apply it.
//!
//! - A silence matching the incident's node (a glob) and cause holds its
//!   alerts back while it is in force; the incident is still recorded.
//!   When it ends, at its time or early (`silence expire`), what it held is
//!   released at once: an incident still in trouble is announced then.
//! - An incident whose trouble alert was raised while a silence was in
//!   force, and that resolved before that silence ended, is the silence's:
//!   nobody is told it opened, nor that it ended. Nothing else a silence
//!   held is dropped: an alert already waiting when the silence began (a
//!   failing delivery) goes out after it, with its resolved notice.
//! - An acknowledged incident gets no more reminders; its resolved notice
//!   still goes out and says who acknowledged it.

use crate::store::{Hold, OutboxEntry, Silence, silencing};
use sentinel_core::time::{Micros, Zone, human};
use sentinel_core::tracker::{AlertKind, Detail, Incident};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    Deliver,
    /// Wait until then (a silence ends); not a delivery attempt.
    Hold(Hold),
    /// Never to be delivered, and why.
    Drop(DropReason),
}

/// Why an alert is never to be delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DropReason {
    /// An endpoint incident (design 5.2) stands for its incident.
    Covered { endpoint: String },
    /// A reminder of an incident someone acknowledged.
    Acknowledged { by: String },
    /// A trouble alert raised in a silence that its incident resolved in:
    /// the silence's.
    ResolvedWhileSilenced { silence: String },
    /// The resolved notice of such an incident, never announced.
    NeverAnnounced { silence: String },
    /// A resolved notice whose opening alert an earlier pass dropped as a
    /// silence's (which one, that pass knew).
    OpeningDropped,
}

/// As logged after "… not mailed: ".
impl std::fmt::Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DropReason::Covered { endpoint } => {
                write!(f, "endpoint incident {endpoint} stands for it")
            }
            DropReason::Acknowledged { by } => write!(f, "a reminder, and {by} acknowledged it"),
            DropReason::ResolvedWhileSilenced { silence } => {
                write!(f, "it resolved while silenced ({silence})")
            }
            DropReason::NeverAnnounced { silence } => write!(
                f,
                "it resolved while silenced ({silence}); nobody was told it opened"
            ),
            DropReason::OpeningDropped => {
                f.write_str("it resolved while silenced; nobody was told it opened")
            }
        }
    }
}

/// When an incident's alerts waiting in one channel's outbox were queued:
/// its first trouble alert (opening or reminder) and its resolved notice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Queued {
    pub trouble: Option<Micros>,
    pub resolved: Option<Micros>,
}

impl Queued {
    /// Per incident, from the entries of one channel.
    #[must_use]
    pub(crate) fn of(entries: &[OutboxEntry]) -> std::collections::HashMap<String, Queued> {
        let mut out: std::collections::HashMap<String, Queued> = std::collections::HashMap::new();
        for e in entries {
            let q = out.entry(e.incident.clone()).or_default();
            let slot = if e.kind == AlertKind::Resolved {
                &mut q.resolved
            } else {
                &mut q.trouble
            };
            *slot = Some(slot.map_or(e.queued_at, |t| t.min(e.queued_at)));
        }
        out
    }
}

/// The silence an incident belongs to for good: in force when its trouble
/// alert was raised, and still when it resolved (its end as it ended,
/// early or not). Silences are matched by wall time, when entries were
/// queued; without a resolved notice queued (`send_resolved = false`) the
/// incident's own end says when it resolved.
fn suppressing<'a>(i: &Incident, q: Queued, silences: &'a [Silence]) -> Option<&'a Silence> {
    let raised = q.trouble?;
    let resolved = q.resolved.or(i.resolved_at)?;
    let cause = i.cause();
    silences.iter().find(|s| {
        s.matches(i.kind(), &i.node, cause)
            && s.starts_at <= raised
            && raised < s.ends_at
            && resolved < s.ends_at
    })
}

/// How often a resolved notice whose incident is open again looks again.
const REOPENED_RECHECK: Micros = 30 * sentinel_core::time::SECOND;

/// A resolved notice of an endpoint outage tells the outage as it ended,
/// with every node it had. In a collector whose hosts upload at different
/// times, late hosts' members join an outage after its end was read (and
/// after its page went out: the page says the nodes known then, D27); its
/// notice waits until its nodes have stayed the same for `settle`
/// (`group_wait`), held by no silence with the count it saw, looked at
/// again then. `None`: it may go (not an outage, settled, `settle` zero,
/// or held by a silence, whose own hold is the wait).
fn settling(e: &OutboxEntry, i: &Incident, now: Micros, settle: Micros) -> Option<Hold> {
    let Detail::Endpoint(o) = &i.detail else {
        return None;
    };
    if settle == 0 || e.kind != AlertKind::Resolved {
        return None;
    }
    let nodes = Some(o.nodes.len() as u64);
    match &e.hold {
        Some(h) if !h.silences.is_empty() => None,
        Some(h) if h.nodes == nodes && h.until <= now => None,
        Some(h) if h.nodes == nodes => Some(h.clone()),
        _ => Some(Hold {
            until: now.saturating_add(settle),
            silences: Vec::new(),
            nodes,
        }),
    }
}

/// What to do with one outbox entry now; `q`: when its incident's entries
/// in the same outbox were queued; `settle`: how long an outage's nodes
/// stay the same before its resolved notice goes (see [`settling`]).
#[must_use]
pub(crate) fn decide(
    e: &OutboxEntry,
    i: &Incident,
    silences: &[Silence],
    now: Micros,
    q: Queued,
    settle: Micros,
) -> Action {
    if let Some(cover) = i.covered_by() {
        // An endpoint incident stands for it (design 5.2): its alert is
        // that one's, and its end is told only where its own start was.
        if e.kind != AlertKind::Resolved || i.alerted_at.is_none() {
            return Action::Drop(DropReason::Covered {
                endpoint: cover.to_string(),
            });
        }
    }
    if e.kind == AlertKind::Resolved && i.resolved_at.is_none() {
        // Open again since the notice was queued (an endpoint incident a
        // late member's trouble reopened): it waits for the real end, and
        // then tells it with the nodes it ended with. No silence holds it.
        return Action::Hold(Hold {
            until: now.saturating_add(REOPENED_RECHECK),
            silences: Vec::new(),
            nodes: None,
        });
    }
    if let Some(hold) = settling(e, i, now, settle) {
        return Action::Hold(hold);
    }
    if e.kind == AlertKind::Repeat {
        if let Some(a) = &i.ack {
            return Action::Drop(DropReason::Acknowledged { by: a.by.clone() });
        }
    }
    let holding: Vec<&Silence> = silencing(i, silences, now).collect();
    if let Some(until) = holding.iter().map(|s| s.ends_at).max() {
        return Action::Hold(Hold {
            until,
            silences: holding.iter().map(|s| s.id.clone()).collect(),
            nodes: None,
        });
    }
    if let Some(s) = suppressing(i, q, silences) {
        match e.kind {
            AlertKind::Opened | AlertKind::Repeat => {
                return Action::Drop(DropReason::ResolvedWhileSilenced {
                    silence: s.id.clone(),
                });
            }
            AlertKind::Resolved if i.alerted_at.is_none() => {
                return Action::Drop(DropReason::NeverAnnounced {
                    silence: s.id.clone(),
                });
            }
            AlertKind::Resolved => {}
        }
    }
    if e.hold.is_some()
        && e.kind == AlertKind::Resolved
        && i.alerted_at.is_none()
        && q.trouble.is_none()
    {
        // Its opening alert was dropped as the silence's in an earlier pass.
        return Action::Drop(DropReason::OpeningDropped);
    }
    Action::Deliver
}

/// What the first mail after a hold says: which silences held it, who set
/// them and why, and how each ended (at its time, or expired early by
/// whom and when). `None`: nothing in `entries` was held.
#[must_use]
pub(crate) fn held_note(entries: &[OutboxEntry], silences: &[Silence]) -> Option<String> {
    let mut ids: Vec<&str> = Vec::new();
    for e in entries {
        for id in e.hold.iter().flat_map(|h| &h.silences) {
            if !ids.contains(&id.as_str()) {
                ids.push(id);
            }
        }
    }
    if ids.is_empty() {
        return entries
            .iter()
            .any(|e| e.hold.is_some())
            .then(|| "Held back while silenced; sent now that no silence holds it.".to_string());
    }
    let said: Vec<String> = ids
        .iter()
        .map(|id| {
            let Some(s) = silences.iter().find(|s| s.id == *id) else {
                return format!("silence {id} (since pruned)");
            };
            let mut w = format!(
                "silence {} (set by {}{})",
                s.id,
                sentinel_core::tracker::one_line(&s.created_by, 80),
                if s.comment.is_empty() {
                    String::new()
                } else {
                    format!(": {}", sentinel_core::tracker::one_line(&s.comment, 200))
                }
            );
            match (&s.expired_by, s.expired_at) {
                (Some(by), Some(at)) => w.push_str(&format!(
                    ", expired early by {} at {}",
                    sentinel_core::tracker::one_line(by, 80),
                    human(at, Zone::Utc)
                )),
                _ => w.push_str(&format!(", ended at {}", human(s.ends_at, Zone::Utc))),
            }
            w
        })
        .collect();
    Some(format!(
        "Held back by {}; sent now that no silence holds it.",
        said.join("; ")
    ))
}

/// The entries still to deliver, and those dropped with why.
pub(crate) type Applied = (Vec<OutboxEntry>, Vec<(OutboxEntry, DropReason)>);

/// Applies silences and acknowledgements to outbox entries (of one
/// channel): dropped entries leave the outbox, held ones get their
/// `hold`, and ones a silence no longer holds are released (their hold
/// ends now: a silence expired early holds nothing; which silences held
/// them stays, for the mail to say).
/// Returns the entries still to deliver (held ones included: they wait)
/// and the dropped ones with why.
pub(crate) fn apply(
    store: &crate::store::Store,
    entries: Vec<OutboxEntry>,
    now: Micros,
    settle: Micros,
) -> Result<Applied, crate::store::StoreError> {
    if entries.is_empty() {
        return Ok((entries, Vec::new()));
    }
    let silences = store.silences()?;
    let queued = Queued::of(&entries);
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
        let q = queued.get(&e.incident).copied().unwrap_or_default();
        match decide(&e, i, &silences, now, q, settle) {
            Action::Deliver => {
                if e.hold.as_ref().is_some_and(|h| h.silences.is_empty()) {
                    // Waited for its incident's end, held by no silence:
                    // nothing for the mail to say about a hold.
                    e.hold = None;
                    changed.push(e.clone());
                } else if let Some(h) = e.hold.as_mut().filter(|h| h.until > now) {
                    // Held for a silence that has ended early: due now,
                    // and after a restart too.
                    h.until = now;
                    changed.push(e.clone());
                }
                keep.push(e);
            }
            Action::Hold(hold) => {
                if e.hold.as_ref() != Some(&hold) {
                    e.hold = Some(hold);
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
    use sentinel_core::time::SECOND;
    use sentinel_core::tracker::Ack;

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
            hold: None,
        }
    }

    fn incident() -> Incident {
        use sentinel_core::testing::{End, kubelet, replay};
        let retry = "E0101 00:00:00.000000 1 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"worker-3\\\": Unauthorized\"";
        let lines = (0..7).map(|k| kubelet(k * SECOND, "worker-3", retry));
        replay(
            lines,
            &sentinel_core::tracker::Settings::default(),
            End::At(7 * SECOND),
        )
        .one()
        .clone()
    }

    fn silence(node: &str, cause: Option<&str>, ends_at: Micros) -> Silence {
        Silence {
            id: "s1".into(),
            node: node.into(),
            cause: cause.map(|c| sentinel_core::signals::Cause::parse(c).unwrap()),
            kind: None,
            starts_at: 0,
            ends_at,
            created_by: "alice".into(),
            comment: String::new(),
            expired_by: None,
            expired_at: None,
        }
    }

    /// The trouble alert queued at `trouble`, the resolved notice at
    /// `resolved`.
    fn queued(trouble: Micros, resolved: Option<Micros>) -> Queued {
        Queued {
            trouble: Some(trouble),
            resolved,
        }
    }

    #[test]
    fn a_node_an_endpoint_incident_stands_for_is_not_paged() {
        let mut i = incident();
        let q = queued(SECOND, None);
        assert_eq!(
            decide(&entry(AlertKind::Opened), &i, &[], SECOND, q, 0),
            Action::Deliver
        );
        i.set_covered_by(Some("ep1".into()));
        for kind in [AlertKind::Opened, AlertKind::Repeat, AlertKind::Resolved] {
            assert!(
                matches!(decide(&entry(kind), &i, &[], SECOND, q, 0), Action::Drop(DropReason::Covered { endpoint }) if endpoint == "ep1"),
                "{kind:?}"
            );
        }
        // Its own page went out before the outage was known: so does its end.
        i.alerted_at = Some(SECOND);
        i.resolved_at = Some(SECOND);
        assert_eq!(
            decide(&entry(AlertKind::Resolved), &i, &[], SECOND, q, 0),
            Action::Deliver
        );
        assert!(matches!(
            decide(&entry(AlertKind::Repeat), &i, &[], SECOND, q, 0),
            Action::Drop(DropReason::Covered { .. })
        ));
    }

    #[test]
    fn a_silence_of_a_kind_holds_only_that_kind() {
        let i = incident();
        let mut s = silence("*", None, 40 * SECOND);
        s.kind = Some(sentinel_core::tracker::IncidentKind::KubeletDown);
        assert_eq!(silencing(&i, std::slice::from_ref(&s), SECOND).count(), 0);
        s.kind = Some(i.kind());
        assert_eq!(silencing(&i, std::slice::from_ref(&s), SECOND).count(), 1);
    }

    #[test]
    fn silences_hold_and_the_end_decides() {
        let i = incident();
        assert_eq!(i.cause().as_str(), "auth");
        let s = [silence("worker-*", Some("auth"), 100 * SECOND)];
        let e = OutboxEntry {
            queued_at: 40 * SECOND,
            ..entry(AlertKind::Opened)
        };
        let open = queued(40 * SECOND, None);
        assert!(
            matches!(decide(&e, &i, &s, 50 * SECOND, open, 0), Action::Hold(Hold { until, .. }) if until == 100 * SECOND)
        );
        // Another cause or node: not this silence's.
        assert_eq!(
            decide(
                &e,
                &i,
                &[silence("worker-*", Some("etcd"), 100 * SECOND)],
                50 * SECOND,
                open,
                0
            ),
            Action::Deliver
        );
        assert_eq!(
            decide(
                &e,
                &i,
                &[silence("db-*", None, 100 * SECOND)],
                50 * SECOND,
                open,
                0
            ),
            Action::Deliver
        );
        // Over: still in trouble, announced now.
        let held = OutboxEntry {
            hold: Some(Hold {
                until: 100 * SECOND,
                silences: vec!["s1".into()],
                nodes: None,
            }),
            ..e.clone()
        };
        assert_eq!(
            decide(&held, &i, &s, 100 * SECOND, open, 0),
            Action::Deliver
        );
        // Resolved meanwhile: never announced, no resolved notice.
        let mut r = i.clone();
        r.resolved_at = Some(90 * SECOND);
        let gone = queued(40 * SECOND, Some(90 * SECOND));
        assert_eq!(
            decide(&held, &r, &s, 100 * SECOND, gone, 0),
            Action::Drop(DropReason::ResolvedWhileSilenced {
                silence: "s1".into()
            })
        );
        let notice = OutboxEntry {
            hold: Some(Hold {
                until: 100 * SECOND,
                silences: vec!["s1".into()],
                nodes: None,
            }),
            queued_at: 90 * SECOND,
            ..entry(AlertKind::Resolved)
        };
        assert_eq!(
            decide(&notice, &r, &s, 100 * SECOND, gone, 0),
            Action::Drop(DropReason::NeverAnnounced {
                silence: "s1".into()
            })
        );
        // Its opening alert dropped in an earlier pass: the same.
        assert_eq!(
            decide(
                &notice,
                &r,
                &s,
                100 * SECOND,
                Queued {
                    trouble: None,
                    ..gone
                },
                0
            ),
            Action::Drop(DropReason::OpeningDropped)
        );
        // It had been announced before the silence: the notice goes.
        r.alerted_at = Some(SECOND);
        assert_eq!(
            decide(&notice, &r, &s, 100 * SECOND, gone, 0),
            Action::Deliver
        );
    }

    /// S9: a silence expired early (its end moved to now) holds nothing:
    /// the open incident's alert goes at once, and when it resolves later
    /// its notice follows; nothing is dropped.
    #[test]
    fn an_early_expiry_releases_what_the_silence_held() {
        let i = incident();
        // Meant to last to 100 s, expired at 20 s.
        let s = [silence("worker-*", None, 20 * SECOND)];
        let held = OutboxEntry {
            queued_at: 10 * SECOND,
            hold: Some(Hold {
                until: 100 * SECOND,
                silences: vec!["s1".into()],
                nodes: None,
            }),
            ..entry(AlertKind::Opened)
        };
        assert_eq!(
            decide(&held, &i, &s, 21 * SECOND, queued(10 * SECOND, None), 0),
            Action::Deliver
        );
        // Resolved after the expiry (and before the silence's first end):
        // the opening alert and the notice both go.
        let mut r = i.clone();
        r.resolved_at = Some(50 * SECOND);
        let q = queued(10 * SECOND, Some(50 * SECOND));
        assert_eq!(decide(&held, &r, &s, 51 * SECOND, q, 0), Action::Deliver);
        let notice = OutboxEntry {
            queued_at: 50 * SECOND,
            ..entry(AlertKind::Resolved)
        };
        assert_eq!(decide(&notice, &r, &s, 51 * SECOND, q, 0), Action::Deliver);
    }

    /// An alert already waiting when a silence began (its delivery
    /// failing) is not the silence's to drop, even if the incident resolved
    /// while it was held: a 5 s silence does not turn "late" into "never".
    #[test]
    fn what_waited_before_the_silence_is_not_dropped_by_it() {
        let mut r = incident();
        r.resolved_at = Some(30 * SECOND);
        let s = [Silence {
            starts_at: 20 * SECOND,
            ..silence("*", None, 40 * SECOND)
        }];
        let q = queued(5 * SECOND, Some(30 * SECOND));
        let failing = OutboxEntry {
            queued_at: 5 * SECOND,
            attempts: 9,
            hold: Some(Hold {
                until: 40 * SECOND,
                silences: vec!["s1".into()],
                nodes: None,
            }),
            ..entry(AlertKind::Opened)
        };
        assert_eq!(decide(&failing, &r, &s, 41 * SECOND, q, 0), Action::Deliver);
        let notice = OutboxEntry {
            queued_at: 30 * SECOND,
            hold: Some(Hold {
                until: 40 * SECOND,
                silences: vec!["s1".into()],
                nodes: None,
            }),
            ..entry(AlertKind::Resolved)
        };
        assert_eq!(decide(&notice, &r, &s, 41 * SECOND, q, 0), Action::Deliver);
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
            matches!(decide(&entry(AlertKind::Repeat), &i, &[], 0, Queued::default(), 0), Action::Drop(DropReason::Acknowledged { by }) if by == "bob")
        );
        i.resolved_at = Some(0);
        assert_eq!(
            decide(
                &entry(AlertKind::Resolved),
                &i,
                &[],
                0,
                Queued::default(),
                0
            ),
            Action::Deliver
        );
    }

    /// Issue 27 (D27): a resolved notice whose incident is open again (an
    /// outage a late member reopened) waits, held by no silence, and goes
    /// out once the incident has ended, with nothing said of a hold.
    #[test]
    fn a_resolved_notice_waits_while_its_incident_is_open_again() {
        let mut i = incident();
        let q = queued(SECOND, Some(2 * SECOND));
        let e = entry(AlertKind::Resolved);
        assert_eq!(
            decide(&e, &i, &[], 10 * SECOND, q, 0),
            Action::Hold(Hold {
                until: 10 * SECOND + REOPENED_RECHECK,
                silences: Vec::new(),
                nodes: None,
            })
        );
        i.resolved_at = Some(60 * SECOND);
        assert_eq!(decide(&e, &i, &[], 70 * SECOND, q, 0), Action::Deliver);
    }

    #[test]
    fn globs() {
        use sentinel_core::model::glob;
        assert!(glob("worker-*", "worker-7"));
        assert!(glob("*", ""));
        assert!(glob("w?rker-*-a", "worker-12-a"));
        assert!(!glob("worker-*", "db-1"));
        assert!(!glob("a*b", "acb-"));
        assert!(glob("*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaab"));
        assert!(!glob("*a*a*a*a*b", &"a".repeat(10_000)));
    }

    /// Issue 39 (D27): an outage's resolved notice waits until its nodes
    /// have stayed the same for `settle` (late hosts' members join it
    /// after its end was read), then goes and tells all of them; with no
    /// `settle` (`run --once`, `group_wait` zero) at once.
    #[test]
    fn an_outages_end_waits_for_its_nodes_to_settle() {
        let outage = |n: usize| {
            Detail::Endpoint(sentinel_core::tracker::Outage {
                endpoint: "10.0.0.1:6443".into(),
                nodes: (0..n).map(|k| format!("n{k}")).collect(),
                hosts: Vec::new(),
            })
        };
        let mut i = incident();
        i.resolved_at = Some(60 * SECOND);
        i.detail = outage(10);
        let q = queued(SECOND, Some(2 * SECOND));
        let settle = 5 * SECOND;
        let hold = |until: Micros, nodes: u64| Hold {
            until,
            silences: Vec::new(),
            nodes: Some(nodes),
        };
        let mut e = entry(AlertKind::Resolved);
        assert_eq!(
            decide(&e, &i, &[], 10 * SECOND, q, settle),
            Action::Hold(hold(15 * SECOND, 10))
        );
        e.hold = Some(hold(15 * SECOND, 10));
        assert_eq!(
            decide(&e, &i, &[], 12 * SECOND, q, settle),
            Action::Hold(hold(15 * SECOND, 10))
        );
        // A late member joined: it waits again.
        i.detail = outage(11);
        assert_eq!(
            decide(&e, &i, &[], 15 * SECOND, q, settle),
            Action::Hold(hold(20 * SECOND, 11))
        );
        e.hold = Some(hold(20 * SECOND, 11));
        assert_eq!(decide(&e, &i, &[], 20 * SECOND, q, settle), Action::Deliver);
        let fresh = entry(AlertKind::Resolved);
        assert_eq!(decide(&fresh, &i, &[], 10 * SECOND, q, 0), Action::Deliver);
        // Not an outage: no wait.
        let mut node = incident();
        node.resolved_at = Some(60 * SECOND);
        assert_eq!(
            decide(&fresh, &node, &[], 10 * SECOND, q, settle),
            Action::Deliver
        );
    }

    /// Issue 28: the held mail says which silence held it, who set it and
    /// why, and that it was expired early (by whom, when), not the end it
    /// was set for.
    #[test]
    fn the_held_note_says_how_its_silence_ended() {
        let mut e = entry(AlertKind::Opened);
        e.hold = Some(Hold {
            until: 50 * SECOND,
            silences: vec!["s1".into()],
            nodes: None,
        });
        let mut s = silence("*", None, 600 * SECOND);
        s.comment = "kernel upgrade".into();
        s.expired_by = Some("root".into());
        s.expired_at = Some(50 * SECOND);
        let note = held_note(std::slice::from_ref(&e), std::slice::from_ref(&s)).unwrap();
        assert_eq!(
            note,
            "Held back by silence s1 (set by alice: kernel upgrade), expired early by root at \
             1970-01-01 00:00:50.000 UTC; sent now that no silence holds it."
        );
        s.expired_by = None;
        s.expired_at = None;
        let note = held_note(std::slice::from_ref(&e), std::slice::from_ref(&s)).unwrap();
        assert!(
            note.contains("ended at 1970-01-01 00:10:00.000 UTC"),
            "{note}"
        );
        assert_eq!(held_note(&[entry(AlertKind::Opened)], &[s]), None);
    }

    /// The words of the log line ("… not mailed: why").
    #[test]
    fn a_dropped_alert_says_why() {
        let said = |r: DropReason| r.to_string();
        assert_eq!(
            said(DropReason::Covered {
                endpoint: "ep1".into()
            }),
            "endpoint incident ep1 stands for it"
        );
        assert_eq!(
            said(DropReason::Acknowledged { by: "bob".into() }),
            "a reminder, and bob acknowledged it"
        );
        assert_eq!(
            said(DropReason::ResolvedWhileSilenced {
                silence: "s1".into()
            }),
            "it resolved while silenced (s1)"
        );
        assert_eq!(
            said(DropReason::NeverAnnounced {
                silence: "s1".into()
            }),
            "it resolved while silenced (s1); nobody was told it opened"
        );
        assert_eq!(
            said(DropReason::OpeningDropped),
            "it resolved while silenced; nobody was told it opened"
        );
    }
}
