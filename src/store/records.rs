//! The records the store keeps besides incidents: outbox entries and the
//! history's counts. They are the store's types; the layers above use them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use sentinel_core::signals::Cause;
use sentinel_core::time::Micros;
use sentinel_core::tracker::{AlertKind, IncidentKind, Selector, Verdict};

pub(crate) use sentinel_core::kinds::Channel;

/// An alert held back by silences: until when, and by which (their ids).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// When it may go (a silence's end; now, once no silence holds it).
    pub until: Micros,
    /// The silences that held it.
    pub silences: Vec<String>,
    /// A resolved notice of an endpoint outage waiting for its nodes to
    /// settle: how many it had when last looked at (see
    /// `notify::control`'s `settling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
}

/// One alert waiting in the outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredOutboxEntry")]
pub struct OutboxEntry {
    /// Assigned by the store; the outbox is ordered by it.
    pub seq: u64,
    #[serde(default)]
    pub channel: Channel,
    pub kind: AlertKind,
    pub incident: String,
    pub node: String,
    /// The entry time that raised it.
    pub raised_at: Micros,
    /// Wall-clock time it was queued (for `group_wait`).
    pub queued_at: Micros,
    pub attempts: u32,
    pub next_attempt_at: Micros,
    /// The last delivery attempt's error.
    pub last_error: Option<String>,
    /// Attempts that failed after the server may have accepted the mail.
    #[serde(default)]
    pub in_doubt: u32,
    /// Held back by silences (not an attempt; it does not hold up the
    /// entries after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Hold>,
}

impl OutboxEntry {
    /// Held back at `now`: by a silence until its end, or (a hold of no
    /// silence: a resolved notice whose incident is open again) until the
    /// controls release it at a pass that finds the incident ended; its
    /// `until` is only when to look again.
    #[must_use]
    pub fn held_at(&self, now: Micros) -> bool {
        self.hold
            .as_ref()
            .is_some_and(|h| h.until > now || h.silences.is_empty())
    }
}

/// An outbox entry as stored, also as 0.1.0 wrote it: its hold was a time
/// (`held_until`) and the silences' ids were prose in `last_error`.
#[derive(Deserialize)]
struct StoredOutboxEntry {
    seq: u64,
    #[serde(default)]
    channel: Channel,
    kind: AlertKind,
    incident: String,
    node: String,
    raised_at: Micros,
    queued_at: Micros,
    attempts: u32,
    next_attempt_at: Micros,
    last_error: Option<String>,
    #[serde(default)]
    in_doubt: u32,
    #[serde(default)]
    hold: Option<Hold>,
    #[serde(default)]
    held_until: Option<Micros>,
}

impl From<StoredOutboxEntry> for OutboxEntry {
    fn from(s: StoredOutboxEntry) -> Self {
        let legacy = s.held_until.filter(|_| s.hold.is_none());
        let silenced = s
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("silenced ("));
        let hold = s.hold.or_else(|| {
            legacy.map(|until| Hold {
                until,
                silences: s
                    .last_error
                    .as_deref()
                    .filter(|_| silenced)
                    .and_then(|e| e.strip_prefix("silenced ("))
                    .and_then(|e| e.split(')').next())
                    .map(|ids| ids.split(", ").map(str::to_string).collect())
                    .unwrap_or_default(),
                nodes: None,
            })
        });
        Self {
            seq: s.seq,
            channel: s.channel,
            kind: s.kind,
            incident: s.incident,
            node: s.node,
            raised_at: s.raised_at,
            queued_at: s.queued_at,
            attempts: s.attempts,
            next_attempt_at: s.next_attempt_at,
            last_error: if silenced && legacy.is_some() {
                None
            } else {
                s.last_error
            },
            in_doubt: s.in_doubt,
            hold,
        }
    }
}

/// An operator's silence: deliveries for what it matches are held back
/// while it lasts; the incidents are still recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Silence {
    pub id: String,
    /// A node name or a glob (`worker-*`, `*`).
    pub node: String,
    /// Only incidents of this cause; `None`: any.
    #[serde(default)]
    pub cause: Option<Cause>,
    /// Only incidents of this kind; `None`: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<IncidentKind>,
    pub starts_at: Micros,
    pub ends_at: Micros,
    pub created_by: String,
    pub comment: String,
    /// Who ended it early (`silence expire`), and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_at: Option<Micros>,
}

impl Silence {
    #[must_use]
    pub fn active(&self, now: Micros) -> bool {
        self.starts_at <= now && now < self.ends_at
    }

    /// What it silences: its node glob, and its cause and kind if it
    /// names them.
    #[must_use]
    pub fn selector(&self) -> Selector<'_> {
        Selector {
            node: Some(&self.node),
            causes: self.cause.as_slice(),
            kinds: self.kind.as_slice(),
        }
    }

    #[must_use]
    pub fn matches(&self, kind: IncidentKind, node: &str, cause: Cause) -> bool {
        self.selector().matches(kind, node, cause)
    }
}

/// Counts over the whole history, kept up to date with every commit and
/// prune, so `status` and `/metrics` never read the history to answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Incidents in the store.
    pub incidents: u64,
    /// Resolved incidents by the verdict they ended with.
    pub resolved: BTreeMap<Verdict, u64>,
}

impl Stats {
    pub fn add(&mut self, delta: &StatsDelta) {
        self.incidents = (self.incidents + delta.opened).saturating_sub(delta.forgotten);
        for v in &delta.resolved {
            *self.resolved.entry(*v).or_default() += 1;
        }
    }
}

/// What one batch adds to [`Stats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsDelta {
    pub opened: u64,
    /// The verdicts of the incidents resolved in the batch.
    pub resolved: Vec<Verdict>,
    /// Incidents taken out of the history again.
    pub forgotten: u64,
}

impl StatsDelta {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.opened == 0 && self.resolved.is_empty() && self.forgotten == 0
    }
}

/// The silences in force now that match an incident.
pub(crate) fn silencing<'a>(
    i: &sentinel_core::tracker::Incident,
    silences: &'a [Silence],
    now: Micros,
) -> impl Iterator<Item = &'a Silence> {
    let node = i.node.clone();
    let cause = i.cause();
    let kind = i.kind();
    silences
        .iter()
        .filter(move |s| s.active(now) && s.matches(kind, &node, cause))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry 0.1.0 held for silences (a time, and their ids in prose)
    /// reads as a hold naming them; its prose is no delivery error.
    #[test]
    fn a_hold_stored_by_the_last_release_reads_as_a_hold() {
        let old = r#"{"seq":3,"channel":"email","kind":"opened","incident":"i","node":"n",
            "raised_at":1,"queued_at":1,"attempts":0,"next_attempt_at":1,
            "last_error":"silenced (ab12cd34ef56ab12, 0011223344556677) until 2026-12-01T19:10:00.475Z",
            "in_doubt":0,"held_until":99}"#;
        let e: OutboxEntry = serde_json::from_str(old).unwrap();
        assert_eq!(
            e.hold,
            Some(Hold {
                until: 99,
                silences: vec!["ab12cd34ef56ab12".into(), "0011223344556677".into()],
                nodes: None,
            })
        );
        assert_eq!(e.last_error, None);
        // Written back in the current form, read the same.
        let again: OutboxEntry = serde_json::from_slice(&serde_json::to_vec(&e).unwrap()).unwrap();
        assert_eq!(again, e);
        // A failed delivery's error stays one.
        let failed = old
            .replace(r#""held_until":99"#, r#""held_until":null"#)
            .replace(
                "silenced (ab12cd34ef56ab12, 0011223344556677) until 2026-12-01T19:10:00.475Z",
                "connection refused",
            );
        let e: OutboxEntry = serde_json::from_str(&failed).unwrap();
        assert_eq!(
            (e.hold, e.last_error.as_deref()),
            (None, Some("connection refused"))
        );
    }
}
