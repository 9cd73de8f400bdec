//! The records the store keeps besides incidents: outbox entries and the
//! history's counts. They are the store's types; the layers above use them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::glob;
use crate::time::Micros;
use crate::tracker::AlertKind;

pub(crate) use crate::kinds::Channel;

/// One alert waiting in the outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    pub last_error: Option<String>,
    /// Attempts that failed after the server may have accepted the mail.
    #[serde(default)]
    pub in_doubt: u32,
    /// Held back by a silence until then (not an attempt; it does not hold
    /// up the entries after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_until: Option<Micros>,
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
    pub cause: Option<String>,
    /// Only incidents of this kind (`node-status`, `kubelet-down`); `None`:
    /// any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
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

    #[must_use]
    pub fn matches(&self, kind: &str, node: &str, cause: &str) -> bool {
        glob(&self.node, node)
            && self.cause.as_deref().is_none_or(|c| c == cause)
            && self.kind.as_deref().is_none_or(|k| k == kind)
    }
}

/// Counts over the whole history, kept up to date with every commit and
/// prune, so `status` and `/metrics` never read the history to answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Incidents in the store.
    pub incidents: u64,
    /// Resolved incidents by the verdict they ended with.
    pub resolved: BTreeMap<String, u64>,
}

impl Stats {
    pub fn add(&mut self, delta: &StatsDelta) {
        self.incidents = (self.incidents + delta.opened).saturating_sub(delta.forgotten);
        for v in &delta.resolved {
            *self.resolved.entry(v.clone()).or_default() += 1;
        }
    }
}

/// What one batch adds to [`Stats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsDelta {
    pub opened: u64,
    /// The verdicts of the incidents resolved in the batch.
    pub resolved: Vec<String>,
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
    i: &crate::tracker::Incident,
    silences: &'a [Silence],
    now: Micros,
) -> impl Iterator<Item = &'a Silence> {
    let node = i.node.clone();
    let cause = i.cause().as_str();
    let kind = i.kind().as_str();
    silences
        .iter()
        .filter(move |s| s.active(now) && s.matches(kind, &node, cause))
}
