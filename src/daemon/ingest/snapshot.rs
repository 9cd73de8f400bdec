//! The status snapshot ingest publishes (a `watch`): what `status`, the
//! metrics and the systemd task read, without asking ingest.

use crate::config::Config;
use crate::status::{ConfigStatus, OpenIncident, StatusSnapshot};
use crate::store::Stats;
use sentinel_core::pipeline::Pipeline;
use sentinel_core::time::Micros;

/// What the snapshot is made of, borrowed from ingest's parts.
pub(super) struct Of<'a> {
    pub pipeline: &'a Pipeline,
    pub config: &'a Config,
    pub config_status: &'a ConfigStatus,
    pub stats: &'a Stats,
    pub retries_by_node: &'a std::collections::BTreeMap<String, u64>,
    pub started: Micros,
    pub journal: &'a str,
    pub cursor: Option<&'a str>,
    pub caught_up: bool,
    pub commits: u64,
    pub last_commit_at: Option<Micros>,
    pub reader_restarts: u64,
    pub starts: &'a crate::status::StartStats,
}

/// The status snapshot of `of`.
pub(super) fn snapshot(of: &Of<'_>) -> StatusSnapshot {
    let tracker = of.pipeline.tracker();
    let settings = tracker.settings();
    StatusSnapshot {
        started_at: of.started,
        journal: of.journal.to_string(),
        cursor: of.cursor.map(str::to_string),
        caught_up: of.caught_up,
        summary: of.pipeline.summary().clone(),
        open: tracker
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
        history: of.stats.clone(),
        retries_by_node: of.retries_by_node.clone(),
        commits: of.commits,
        last_commit_at: of.last_commit_at,
        reader_restarts: of.reader_restarts,
        starts: of.starts.clone(),
        evicted: tracker.evicted(),
        forgotten: tracker.forgotten(),
        hosts: newest_hosts(host_times(of.pipeline).into_iter(), settings.max_nodes),
        silent_after: of.config.fleet.silent_after.0,
        settings: settings.clone(),
        config: of.config_status.clone(),
    }
}

/// Each host's newest entry: of its kubelet, or of any unit when the
/// reader reads that from a collector's file headers (a host whose
/// kubelet is quiet but whose journal moves on is not silent).
fn host_times(pipeline: &Pipeline) -> Vec<(&str, Micros)> {
    let mut all: std::collections::BTreeMap<&str, Micros> = pipeline.host_times().collect();
    for (h, t) in pipeline.tracker().journal_times() {
        let e = all.entry(h).or_insert(t);
        *e = (*e).max(t);
    }
    all.into_iter().collect()
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
