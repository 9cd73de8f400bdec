//! The kubelets' starts (design 5.5): the `starts` tree, one record a
//! start, keyed by host, `0x00`, its start time (as the index keys), so a
//! host's starts are one range in time order. Written with the incidents
//! in the commit's transaction; at most [`STARTS_PER_HOST`] a host (a
//! kubelet restarting every second keeps its latest); pruned by the
//! incidents' retention.

use sentinel_core::model::glob;
use sentinel_core::time::Micros;
use sentinel_core::tracker::{Start, StartVerdict};
use serde::{Deserialize, Serialize};

use super::encoding::to_json;
use super::keys::time_key;
use super::{KeyChange, Store, StoreError};

use sentinel_core::tracker::STARTS_KEPT as STARTS_PER_HOST;

/// Filters of `kubelet-sentinel starts`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct StartFilter {
    pub node: Option<String>,
    /// Starts at or after this time.
    pub since: Option<Micros>,
    pub verdict: Option<StartVerdict>,
    pub limit: Option<usize>,
}

impl StartFilter {
    fn admits(&self, s: &Start) -> bool {
        self.node
            .as_ref()
            .is_none_or(|n| glob(n, &s.node) || glob(n, &s.host))
            && self.since.is_none_or(|t| s.started_at >= t)
            && self.verdict.is_none_or(|v| s.verdict == v)
    }
}

fn prefix(host: &str) -> Vec<u8> {
    let mut k = host.as_bytes().to_vec();
    k.push(0);
    k
}

pub(super) fn start_key(host: &str, at: Micros) -> Vec<u8> {
    let mut k = prefix(host);
    k.extend_from_slice(&time_key(at));
    k
}

impl Store {
    /// The start writes as keys and values, the oldest of a host past
    /// [`STARTS_PER_HOST`] removed: listed before the transaction (this
    /// process holds the store's lock, so the keys cannot change in
    /// between).
    pub(super) fn start_changes(&self, starts: &[Start]) -> Result<Vec<KeyChange>, StoreError> {
        let mut out: Vec<KeyChange> = Vec::with_capacity(starts.len());
        let mut hosts: Vec<&str> = starts.iter().map(|s| s.host.as_str()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        for host in hosts {
            let mut keys = std::collections::BTreeSet::new();
            for kv in self.starts.scan_prefix(prefix(host)) {
                keys.insert(kv.map_err(|e| self.err(e))?.0.to_vec());
            }
            let mine: Vec<&Start> = starts.iter().filter(|s| s.host == host).collect();
            for s in &mine {
                keys.insert(start_key(host, s.started_at));
            }
            let over = keys.len().saturating_sub(STARTS_PER_HOST);
            let gone: Vec<Vec<u8>> = keys.into_iter().take(over).collect();
            for s in mine {
                let k = start_key(host, s.started_at);
                if !gone.contains(&k) {
                    out.push((k, Some(to_json(s))));
                }
            }
            out.extend(gone.into_iter().map(|k| (k, None)));
        }
        Ok(out)
    }

    /// Starts, newest first, as `filter` says. A damaged record is set
    /// aside and named, the rest read.
    pub(crate) fn starts(&self, filter: &StartFilter) -> Result<Vec<Start>, StoreError> {
        let mut out = Vec::new();
        for kv in &self.starts {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            if let Some(s) = self.readable::<Start>(&self.starts, &k, &v)? {
                if filter.admits(&s) {
                    out.push(s);
                }
            }
        }
        out.sort_by(|a, b| (b.started_at, &b.host).cmp(&(a.started_at, &a.host)));
        if let Some(n) = filter.limit {
            out.truncate(n);
        }
        Ok(out)
    }

    /// The start of `host` that began at `at`.
    pub(crate) fn start(&self, host: &str, at: Micros) -> Result<Option<Start>, StoreError> {
        let k = start_key(host, at);
        match self.starts.get(&k).map_err(|e| self.err(e))? {
            Some(v) => self.readable(&self.starts, &k, &v),
            None => Ok(None),
        }
    }

    /// Removes the starts that began before `before` (the retention) and
    /// are over; says how many.
    pub(crate) fn prune_starts(&self, before: Micros) -> Result<usize, StoreError> {
        let mut gone = Vec::new();
        for kv in &self.starts {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            let Some(s) = self.readable::<Start>(&self.starts, &k, &v)? else {
                continue;
            };
            if s.started_at < before && !s.in_progress() {
                gone.push(k);
            }
        }
        for k in &gone {
            self.starts.remove(k).map_err(|e| self.err(e))?;
        }
        if !gone.is_empty() {
            self.flush()?;
        }
        Ok(gone.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Batch;
    use sentinel_core::time::SECOND;

    fn start(host: &str, at: Micros, verdict: StartVerdict) -> Start {
        let mut s = Start::new(host, host, at);
        s.verdict = verdict;
        if verdict != StartVerdict::Starting {
            s.ended_at = Some(at + SECOND);
        }
        s
    }

    /// A kubelet restarting every second keeps its latest hundred starts,
    /// another host's are untouched, and a start written again is one.
    #[test]
    fn a_host_keeps_its_latest_hundred_starts() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        store
            .commit(&Batch {
                starts: vec![start("calm", 0, StartVerdict::Ready)],
                ..Batch::default()
            })
            .unwrap();
        for batch in 0..15_i64 {
            let starts = (0..10)
                .map(|k| start("loop", (batch * 10 + k) * SECOND, StartVerdict::NeverReady))
                .collect();
            store
                .commit(&Batch {
                    starts,
                    ..Batch::default()
                })
                .unwrap();
        }
        // The latest one again, now judged: still one record.
        store
            .commit(&Batch {
                starts: vec![start("loop", 149 * SECOND, StartVerdict::Slow)],
                ..Batch::default()
            })
            .unwrap();
        let looping = store
            .starts(&StartFilter {
                node: Some("loop".into()),
                ..StartFilter::default()
            })
            .unwrap();
        assert_eq!(looping.len(), STARTS_PER_HOST);
        assert_eq!(looping[0].started_at, 149 * SECOND);
        assert_eq!(looping[0].verdict, StartVerdict::Slow);
        assert_eq!(looping.last().unwrap().started_at, 50 * SECOND);
        let slow = StartFilter {
            verdict: Some(StartVerdict::Slow),
            ..StartFilter::default()
        };
        assert_eq!(store.starts(&slow).unwrap().len(), 1);
        assert_eq!(store.starts(&StartFilter::default()).unwrap().len(), 101);
        // Retention: the ones over that began before 100 s go.
        assert_eq!(store.prune_starts(100 * SECOND).unwrap(), 51);
        assert_eq!(store.starts(&StartFilter::default()).unwrap().len(), 50);
    }
}
