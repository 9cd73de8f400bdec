//! What the running service knows beyond the store, as snapshots its tasks
//! publish (`tokio::sync::watch`) and the query server and `/metrics` read:
//! ingest publishes [`StatusSnapshot`], each delivery its [`DeliveryStats`].
//! Kept up to date as things change, so answering costs the same whatever
//! the size of the history. Also what the query server asks of the service
//! ([`Command`]) and the typed answers it gets back: the service's shared
//! types, so the writer (ingest) knows nothing of HTTP.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::store::Stats;
use sentinel_core::pipeline::Summary;
use sentinel_core::signals::Cause;
use sentinel_core::time::Micros;
use sentinel_core::tracker::{Incident, IncidentKind, Settings, Verdict};

/// The wall clock, as the service reads it (tests pass a paused one).
pub(crate) type Now = std::sync::Arc<dyn Fn() -> Micros + Send + Sync>;

/// What a delivery task tells ingest: these incidents' alerts were
/// delivered (the task recorded it in the store's `deliveries` tree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeliveryReport {
    pub incidents: Vec<String>,
    pub at: Micros,
}

/// One open incident, as metrics label it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OpenIncident {
    pub id: String,
    #[serde(default)]
    pub kind: IncidentKind,
    pub node: String,
    pub host: String,
    pub cause: Cause,
    pub verdict: Verdict,
    /// Status retries and failed registrations.
    pub retries: u64,
}

/// How the running configuration came to be.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ConfigStatus {
    pub path: String,
    /// When the running settings were last applied.
    pub applied_at: Option<Micros>,
    /// Changed keys that wait for a restart.
    pub restart_needed: Vec<String>,
    /// The last reload that was refused, and why.
    pub last_error: Option<String>,
}

/// The starts' figures since the service started (design 5.5): counts
/// by verdict as each is reached, and the phases' times of the starts that
/// reached Ready, as histograms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct StartStats {
    pub by_verdict: BTreeMap<String, u64>,
    /// By phase, and `total` (start to Ready).
    pub seconds: BTreeMap<String, Histogram>,
}

/// Upper bounds of the start histograms' buckets, in seconds.
pub(crate) const START_BUCKETS: [f64; 12] = [
    1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 180.0, 300.0, 600.0, 1800.0,
];

/// A histogram of [`START_BUCKETS`] (counts per bucket, not cumulative;
/// the last counts what is above every bound).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Histogram {
    pub buckets: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    pub(crate) fn observe(&mut self, v: f64) {
        if self.buckets.len() != START_BUCKETS.len() + 1 {
            self.buckets = vec![0; START_BUCKETS.len() + 1];
        }
        let i = START_BUCKETS
            .iter()
            .position(|&b| v <= b)
            .unwrap_or(START_BUCKETS.len());
        self.buckets[i] += 1;
        self.sum += v;
        self.count += 1;
    }
}

impl StartStats {
    /// A start whose verdict was reached.
    pub(crate) fn judged(&mut self, s: &sentinel_core::tracker::Start) {
        *self
            .by_verdict
            .entry(s.verdict.as_str().to_string())
            .or_default() += 1;
        let Some(total) = s.time_to_ready_ms() else {
            return;
        };
        for p in s.phases() {
            self.seconds
                .entry(p.phase.as_str().to_string())
                .or_default()
                .observe(p.ms() as f64 / 1000.0);
        }
        self.seconds
            .entry("total".to_string())
            .or_default()
            .observe(total as f64 / 1000.0);
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct StatusSnapshot {
    pub started_at: Micros,
    /// What is read ("the system journal", a directory, a namespace).
    pub journal: String,
    pub cursor: Option<String>,
    /// The reader was at the end of the journal when it last said so.
    pub caught_up: bool,
    pub summary: Summary,
    pub open: Vec<OpenIncident>,
    /// Counts over the stored history.
    pub history: Stats,
    /// Status retries and failed registrations of the nodes with an open
    /// incident, counted since the service started.
    pub retries_by_node: BTreeMap<String, u64>,
    /// Incidents closed to stay within the node bounds.
    #[serde(default)]
    pub evicted: u64,
    /// Of those, the ones taken out of the history (below the threshold,
    /// never announced).
    #[serde(default)]
    pub forgotten: u64,
    /// Each host's newest entry time (one a host the reader has seen since
    /// it started: bounded by the hosts).
    #[serde(default)]
    pub hosts: BTreeMap<String, Micros>,
    /// `[fleet] silent_after`.
    #[serde(default)]
    pub silent_after: Micros,
    pub commits: u64,
    pub last_commit_at: Option<Micros>,
    pub reader_restarts: u64,
    /// The kubelets' starts judged since the service started.
    #[serde(default)]
    pub starts: StartStats,
    pub settings: Settings,
    pub config: ConfigStatus,
}

/// One delivery's state (email; Alertmanager).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DeliveryStats {
    /// Nothing is delivered, and why ("[alert] to is empty").
    pub disabled: Option<String>,
    /// Disabled although it is configured (recipients or URLs set): the
    /// transport cannot be used (a missing SMTP password, a bad CA file).
    /// Alerts are not getting out, and `status` says so with its exit code.
    #[serde(default)]
    pub unusable: bool,
    /// Where it delivers ("smtp 127.0.0.1:25", "file /var/…").
    pub target: String,
    pub outbox: u64,
    pub oldest_queued_at: Option<Micros>,
    pub sent: u64,
    pub failed: u64,
    /// Attempts that failed after the server may have accepted the mail:
    /// each may have been a duplicate.
    pub in_doubt: u64,
    pub last_result: Option<String>,
    pub last_at: Option<Micros>,
    pub last_success_at: Option<Micros>,
    /// The oldest entry has failed this many times in a row.
    pub failing_attempts: u32,
}

impl StatusSnapshot {
    /// The hosts gone silent: no entry for `silent_after` while the newest
    /// entry of any host moved on (judged by the journal's times, not the
    /// wall clock: a collector that receives nothing at all has no silent
    /// host, it is behind, which `status` says once). Newest first.
    #[must_use]
    pub(crate) fn silent_hosts(&self) -> Vec<(&str, Micros)> {
        let Some(newest) = self.hosts.values().copied().max() else {
            return Vec::new();
        };
        let mut out: Vec<(&str, Micros)> = self
            .hosts
            .iter()
            .filter(|(_, t)| newest - **t >= self.silent_after.max(1))
            .map(|(h, t)| (h.as_str(), *t))
            .collect();
        out.sort_by_key(|(h, t)| (std::cmp::Reverse(*t), *h));
        out
    }
}

/// What the query server asks of the service.
#[derive(Debug)]
pub(crate) enum Command {
    /// Read the config file again and apply it; the answer says what
    /// happened, or why it was refused.
    Reload(oneshot::Sender<Result<ReloadOutcome, String>>),
    /// Acknowledge an open incident (the tracker holds open incidents).
    Ack(AckRequest, oneshot::Sender<Result<Acknowledged, AckError>>),
    /// Silences changed: the deliveries look at their outbox again.
    Wake,
}

/// A reload that was applied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReloadOutcome {
    pub path: String,
    /// Changed keys that only a restart applies.
    pub restart_needed: Vec<String>,
    /// Open incidents announced because delivery became possible.
    pub announced: usize,
    /// Applied, but alerts cannot be delivered with it (why).
    #[serde(default)]
    pub delivery_problem: Option<String>,
}

/// `ack`: which incident (its id or a unique prefix), who and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AckRequest {
    #[serde(default)]
    pub id: String,
    /// Who: the server sets it from the peer's credentials (a body's
    /// value, which older CLIs send, is ignored); the CLI sets it only
    /// when it writes the store itself.
    #[serde(default, skip_serializing)]
    pub by: String,
    #[serde(default)]
    pub comment: String,
}

/// An acknowledgement the service recorded (and committed).
#[derive(Debug, Clone)]
pub(crate) struct Acknowledged {
    pub incident: Incident,
    /// The settings it is judged by (its verdict).
    pub settings: Settings,
}

/// Why the service did not acknowledge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AckError {
    #[error("no open incident {0}")]
    NotOpen(String),
    #[error("incident {0} has already resolved")]
    Resolved(String),
    #[error("{0} names more than one incident; give more of the id")]
    Ambiguous(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_silent_against_the_newest_entry_not_the_clock() {
        let m = 60 * sentinel_core::time::SECOND;
        let mut s = StatusSnapshot {
            silent_after: 10 * m,
            ..StatusSnapshot::default()
        };
        s.hosts.insert("a".into(), 100 * m);
        s.hosts.insert("b".into(), 95 * m);
        s.hosts.insert("c".into(), 75 * m);
        assert_eq!(s.silent_hosts(), vec![("c", 75 * m)]);
        // Nothing new from anyone: nobody is singled out.
        s.hosts.insert("a".into(), 75 * m);
        s.hosts.insert("b".into(), 75 * m);
        assert!(s.silent_hosts().is_empty());
    }
}
