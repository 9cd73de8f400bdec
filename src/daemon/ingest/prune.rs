//! Pruning, hourly: resolved incidents older than `[incidents] retention`
//! and the kubelets' starts as old (design 5.5: by the same retention),
//! and silences that ended over a day ago (every delivery pass, query and
//! scrape reads the silences: they must not grow forever).

use std::time::Duration;

use tokio::time::Instant;

use crate::store::{Stats, Store, StoreError};
use sentinel_core::time::{Micros, SECOND};
use sentinel_core::tracker::Settings;

const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// Ended silences stay this long for `silence list`, then are pruned with
/// the incidents.
pub(super) const SILENCES_KEPT: Micros = 24 * 3600 * SECOND;

/// What one pruning removed, and the counts after it.
#[derive(Debug)]
pub(super) struct Pruned {
    pub incidents: usize,
    pub starts: usize,
    pub silences: usize,
    pub stats: Stats,
}

/// Prunes `store` at wall time `now` (blocking: run it off the async
/// threads).
pub(super) fn prune_store(
    store: &Store,
    now: Micros,
    retention: Micros,
    settings: &Settings,
) -> Result<Pruned, StoreError> {
    let incidents = store.prune(now - retention, settings)?;
    let starts = store.prune_starts(now - retention)?;
    let silences = store.prune_silences(now - SILENCES_KEPT)?;
    Ok(Pruned {
        incidents,
        starts,
        silences,
        stats: store.stats()?,
    })
}

/// When the next pruning is due (the first at once).
#[derive(Debug)]
pub(super) struct Pruner {
    next: Instant,
}

impl Pruner {
    pub(super) fn new() -> Self {
        Self {
            next: Instant::now(),
        }
    }

    pub(super) fn due(&self) -> bool {
        Instant::now() >= self.next
    }

    pub(super) fn next(&self) -> Instant {
        self.next
    }

    /// Prunes `store` now (hourly) and logs what went; the history's
    /// counts after it, or `None` when it failed (logged; tried again at
    /// the next hour).
    pub(super) async fn prune(
        &mut self,
        store: &Store,
        now: Micros,
        retention: Micros,
        settings: Settings,
    ) -> Option<Stats> {
        match self.run(store, now, retention, settings).await {
            Ok(p) => {
                if p.incidents > 0 {
                    tracing::info!(
                        pruned = p.incidents,
                        "pruned {} resolved incidents older than [incidents] retention",
                        p.incidents
                    );
                }
                if p.starts > 0 {
                    tracing::info!(
                        pruned = p.starts,
                        "pruned {} kubelet starts older than [incidents] retention",
                        p.starts
                    );
                }
                if p.silences > 0 {
                    tracing::info!(
                        pruned = p.silences,
                        "pruned {} silences that ended over a day ago",
                        p.silences
                    );
                }
                Some(p.stats)
            }
            Err(e) => {
                tracing::warn!("pruning: {e}");
                None
            }
        }
    }

    /// Runs one pruning on the blocking pool and schedules the next.
    async fn run(
        &mut self,
        store: &Store,
        now: Micros,
        retention: Micros,
        settings: Settings,
    ) -> Result<Pruned, StoreError> {
        self.next = Instant::now() + PRUNE_EVERY;
        let s = store.clone();
        tokio::task::spawn_blocking(move || prune_store(&s, now, retention, &settings))
            .await
            .unwrap_or_else(|e| Err(StoreError::interrupted(store.path(), "pruning", &e)))
    }
}

/// One line a commit however many were closed: a flood of names must not
/// become a flood of log lines.
pub(super) fn log_closed_to_make_room(
    resolved: &[sentinel_core::tracker::Incident],
    forget: &[sentinel_core::tracker::Incident],
    settings: &sentinel_core::tracker::Settings,
) {
    let mut evicted = resolved
        .iter()
        .filter(|i| i.resolution == Some(sentinel_core::tracker::Resolution::Evicted))
        .chain(forget);
    if let Some(first) = evicted.next() {
        tracing::warn!(
            incident = %first.id,
            node = %sentinel_core::tracker::one_line(&first.node, 253),
            more = evicted.count(),
            forgotten = forget.len(),
            "incidents closed to make room: more nodes in trouble than [incidents] \
             max_nodes_per_host ({}) or max_nodes ({}); the quietest go first (kubelet-sentinel \
             status counts them)",
            settings.max_nodes_per_host,
            settings.max_nodes
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Silence;

    fn silence(n: usize, ends_at: Micros) -> Silence {
        Silence {
            id: format!("{n:016x}"),
            node: format!("w-{n}"),
            cause: None,
            kind: None,
            starts_at: ends_at - 3600 * SECOND,
            ends_at,
            created_by: "root".into(),
            comment: String::new(),
            expired_by: None,
            expired_at: None,
        }
    }

    /// What a scrape or `silence list` pays: the silences, read `n` times.
    fn list_cost(store: &Store, n: u32) -> Duration {
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(store.silences().unwrap());
        }
        t.elapsed() / n
    }

    /// The silences tree shrinks back when 10 000 ended silences are pruned;
    /// what stays (one still in force, one ended within the day) is kept.
    /// The listing cost is printed, not asserted.
    #[test]
    fn ten_thousand_ended_silences_are_pruned_and_listing_stays_flat() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let now = 100 * 86_400 * SECOND;
        let base = list_cost(&store, 50);
        let mut all: Vec<Silence> = (0..10_000)
            .map(|n| silence(n, now - 2 * 86_400 * SECOND))
            .collect();
        all.push(silence(10_000, now + 3600 * SECOND));
        all.push(silence(10_001, now - 3600 * SECOND));
        store.silence_put_many(&all).unwrap();
        assert_eq!(store.silences().unwrap().len(), 10_002);
        let grown = list_cost(&store, 50);
        let settings = Settings::default();
        let pruned = prune_store(&store, now, 30 * 86_400 * SECOND, &settings).unwrap();
        assert_eq!((pruned.incidents, pruned.silences), (0, 10_000));
        let left: Vec<String> = store
            .silences()
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(
            left,
            [format!("{:016x}", 10_000), format!("{:016x}", 10_001)]
        );
        let after = list_cost(&store, 50);
        println!(
            "silence listing: empty {base:?}, 10 002 silences {grown:?}, after pruning {after:?}"
        );
        // Pruning again finds nothing.
        let again = prune_store(&store, now, 30 * 86_400 * SECOND, &settings).unwrap();
        assert_eq!(again.silences, 0);
    }
}
