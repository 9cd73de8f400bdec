//! The records the store keeps besides incidents: outbox entries and the
//! history's counts. They are the store's types; the layers above use them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::time::Micros;
use crate::tracker::AlertKind;

/// Which delivery an outbox entry is for. Each delivery has its own entries
/// and its own retry state, so one failing never holds back the other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Channel {
    #[default]
    Email,
    Alertmanager,
}

impl Channel {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Email => "email",
            Channel::Alertmanager => "alertmanager",
        }
    }
}

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
        self.incidents += delta.opened;
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
}

impl StatsDelta {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.opened == 0 && self.resolved.is_empty()
    }
}
