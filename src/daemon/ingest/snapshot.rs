//! The status snapshot ingest publishes (a `watch`): what `status`, the
//! metrics and the systemd task read, without asking ingest.

use super::Ingest;
use crate::status::{OpenIncident, StatusSnapshot};
use crate::time::Micros;

impl Ingest {
    pub(super) fn snapshot(&self) -> StatusSnapshot {
        let settings = self.pipeline.tracker().settings();
        StatusSnapshot {
            started_at: self.started,
            journal: self.journal.clone(),
            cursor: self.cursor.clone(),
            caught_up: self.caught_up,
            summary: self.pipeline.summary().clone(),
            open: self
                .pipeline
                .tracker()
                .open_incidents()
                .map(|i| OpenIncident {
                    id: i.id.clone(),
                    kind: i.kind(),
                    node: i.node.clone(),
                    host: i.host.clone().unwrap_or_default(),
                    cause: i.cause(),
                    verdict: i.verdict(settings),
                    retries: i.counted_retries(),
                })
                .collect(),
            history: self.stats.clone(),
            retries_by_node: self.retries.by_node().clone(),
            commits: self.commits.count,
            last_commit_at: self.commits.last_at,
            reader_restarts: self.supervisor.restarts(),
            evicted: self.pipeline.tracker().evicted(),
            forgotten: self.pipeline.tracker().forgotten(),
            hosts: newest_hosts(self.host_times().into_iter(), settings.max_nodes),
            silent_after: self.config.fleet.silent_after.0,
            settings: settings.clone(),
            config: self.reloader.status().clone(),
        }
    }

    /// Each host's newest entry: of its kubelet, or of any unit when the
    /// reader reads that from a collector's file headers (a host whose
    /// kubelet is quiet but whose journal moves on is not silent).
    fn host_times(&self) -> Vec<(&str, Micros)> {
        let mut all: std::collections::BTreeMap<&str, Micros> =
            self.pipeline.host_times().collect();
        for (h, t) in self.pipeline.tracker().journal_times() {
            let e = all.entry(h).or_insert(t);
            *e = (*e).max(t);
        }
        all.into_iter().collect()
    }

    /// What changes the published snapshot: commits and the reader's state.
    pub(super) fn snapshot_key(&self) -> (u64, bool, u64, Option<Micros>) {
        (
            self.commits.count,
            self.caught_up,
            self.supervisor.restarts(),
            self.reloader.status().applied_at,
        )
    }
}

/// The hosts shown in `status` and the metrics: the `max` whose entries are
/// newest, so a remote writer inventing host names cannot grow them past
/// `[incidents] max_nodes` (a collector has one a host).
fn newest_hosts<'a>(
    hosts: impl Iterator<Item = (&'a str, Micros)>,
    max: usize,
) -> std::collections::BTreeMap<String, Micros> {
    let mut all: Vec<(&str, Micros)> = hosts.filter(|(h, _)| !h.is_empty()).collect();
    if all.len() > max {
        all.select_nth_unstable_by_key(max, |(_, t)| std::cmp::Reverse(*t));
        all.truncate(max);
    }
    all.into_iter().map(|(h, t)| (h.to_string(), t)).collect()
}

#[cfg(test)]
mod host_tests {
    use super::*;

    #[test]
    fn the_hosts_shown_are_bounded_newest_first() {
        let hosts = [("a", 1), ("b", 5), ("", 9), ("c", 3), ("d", 4)];
        let shown = newest_hosts(hosts.into_iter(), 2);
        assert_eq!(
            shown.into_iter().collect::<Vec<_>>(),
            [("b".to_string(), 5), ("d".to_string(), 4)]
        );
        assert_eq!(newest_hosts(hosts.into_iter(), 10).len(), 4);
    }
}
