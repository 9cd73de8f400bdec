//! Opening a store: sled's lock, a snapshot cut short, the idle threads'
//! timer slack, and the migration from schema 1.

use std::path::Path;

use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

use super::{SCHEMA, SCHEMA_1, SCHEMA_2, Store, StoreError, to_json};
use sentinel_core::pipeline::PipelineState;

/// sled's errors that a restart cannot fix.
pub(super) fn unreadable(e: &sled::Error) -> bool {
    matches!(
        e,
        sled::Error::Corruption { .. }
            | sled::Error::Unsupported(_)
            | sled::Error::ReportableBug(_)
    )
}

/// Renames the unfinished snapshots in a store's directory
/// (`snap.*.generating`) to `set-aside.snap.*.generating`, out of sled's
/// sight; returns how many.
fn set_aside_snapshots(path: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(path) else {
        return 0;
    };
    let mut moved = 0;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("snap.") && name.ends_with(".generating")) {
            continue;
        }
        let size = e.metadata().map_or(0, |m| m.len());
        let to = path.join(format!("set-aside.{name}"));
        match std::fs::rename(e.path(), &to) {
            Ok(()) => {
                tracing::warn!(
                    "store {}: an unfinished snapshot ({name}, {size} bytes, left by an \
                     interrupted write such as a full disk) was set aside as {}; the history \
                     is read from the log",
                    path.display(),
                    to.display()
                );
                moved += 1;
            }
            Err(e) => tracing::warn!("store {}: cannot set {name} aside: {e}", path.display()),
        }
    }
    moved
}

/// How late the kernel may wake sled's idle I/O threads.
const SLED_IDLE_SLACK: std::num::NonZeroU64 = std::num::NonZeroU64::new(10_000_000_000).unwrap();

/// Runs `open` with a timer slack of [`SLED_IDLE_SLACK`] on this thread.
/// sled 0.34 starts its I/O threads when it first opens a database, and
/// they inherit the slack. Each waits for work on a condition variable with
/// a one-second timeout, only to wait again: seven threads woke an idle
/// service seven times a second. Work reaches them by a notify, which no
/// slack delays; only the pointless timeouts are deferred.
fn with_idle_slack<T>(open: impl FnOnce() -> T) -> T {
    use rustix::thread::{current_timer_slack, set_current_timer_slack};
    let before = current_timer_slack().ok();
    let _ = set_current_timer_slack(Some(SLED_IDLE_SLACK));
    let out = open();
    if let Some(b) = before {
        let _ = set_current_timer_slack(std::num::NonZeroU64::new(b));
    }
    out
}

impl Store {
    /// Opens (creating) the store. sled takes an exclusive lock: a second
    /// opener, the running service included, gets [`StoreError::Locked`].
    /// A store of the previous layout is rewritten in this one.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Create {
                path: shown.clone(),
                dir: parent.display().to_string(),
                source,
            })?;
        }
        let sled_err = |e: sled::Error| {
            if unreadable(&e) {
                StoreError::Unreadable {
                    path: shown.clone(),
                    detail: e.to_string(),
                }
            } else {
                StoreError::Sled {
                    path: shown.clone(),
                    source: e,
                }
            }
        };
        let open = || {
            with_idle_slack(|| {
                sled::Config::new()
                    .path(path)
                    .cache_capacity(16 << 20)
                    // Commits flush explicitly; no background flusher waking
                    // the process every second while it idles.
                    .flush_every_ms(None)
                    .open()
                    // A new database starts the threads with its first write
                    // (opening an existing one starts them to recover it).
                    .and_then(|db| {
                        if db.was_recovered() {
                            Ok(db)
                        } else {
                            db.flush().map(|_| db)
                        }
                    })
            })
        };
        let db = match open() {
            // sled reads its newest snapshot file, finished or not, and
            // gives up on one cut short (ENOSPC leaves a 0-byte
            // `snap.*.generating`). Such a file was never renamed into
            // place, so the log it summarizes is all still there: set it
            // aside and open again. sled held the lock when it read the
            // snapshot (it locks first), so no other process is writing it.
            Err(sled::Error::Corruption { .. }) if set_aside_snapshots(path) > 0 => open(),
            other => other,
        }
        .map_err(|e| match &e {
            // sled reports its lock as an I/O error; there is no other
            // way to tell it apart (sled 0.34 is frozen).
            sled::Error::Io(io)
                if io.kind() == std::io::ErrorKind::WouldBlock
                    || io.to_string().contains("could not acquire lock") =>
            {
                StoreError::Locked {
                    path: shown.clone(),
                }
            }
            _ => sled_err(e),
        })?;
        let tree = |name: &str| db.open_tree(name).map_err(sled_err);
        let store = Self {
            incidents: tree("incidents")?,
            by_node: tree("by_node")?,
            by_time: tree("by_time")?,
            open: tree("open")?,
            hosts: tree("hosts")?,
            members: tree("members")?,
            meta: tree("meta")?,
            outbox: tree("outbox")?,
            deliveries: tree("deliveries")?,
            silences: tree("silences")?,
            starts: tree("starts")?,
            damaged: tree("damaged")?,
            set_aside: std::sync::Arc::default(),
            parsed_silences: std::sync::Arc::default(),
            path: path.to_path_buf(),
            db,
        };
        match store.meta.get("schema").map_err(|e| store.err(e))? {
            None => {
                store
                    .meta
                    .insert("schema", SCHEMA)
                    .map_err(|e| store.err(e))?;
                // A new store is durable from here on, before the service
                // says it started: its files and their directory entries.
                store.flush()?;
                for d in [Some(path), path.parent()].into_iter().flatten() {
                    std::fs::File::open(d)
                        .and_then(|f| f.sync_all())
                        .map_err(|source| StoreError::Sync {
                            path: shown.clone(),
                            dir: d.display().to_string(),
                            source,
                        })?;
                }
            }
            Some(v) if v.as_ref() == SCHEMA => {}
            Some(v) if v.as_ref() == SCHEMA_2 => {
                store.move_incidents_to_3()?;
                store
                    .meta
                    .insert("schema", SCHEMA)
                    .map_err(|e| store.err(e))?;
                store.flush()?;
            }
            Some(v) if v.as_ref() == SCHEMA_1 => {
                store.move_incidents_to_3()?;
                store.migrate_from_1()?;
            }
            Some(v) => {
                return Err(StoreError::Unreadable {
                    path: shown,
                    detail: format!(
                        "schema {} is not one this version reads",
                        String::from_utf8_lossy(&v)
                    ),
                });
            }
        }
        Ok(store)
    }

    /// Schemas 1 and 2 kept one flat incident for every kind: the records
    /// move to schema 3's (`migrate.rs`), the incident tree in batches (each
    /// record's move is idempotent, so one cut short is done again), then
    /// the state with the incidents it holds. The schema is written after.
    fn move_incidents_to_3(&self) -> Result<(), StoreError> {
        const BATCH: usize = 1000;
        let mut batch = sled::Batch::default();
        let mut n = 0;
        for kv in &self.incidents {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            let mut json: serde_json::Value =
                serde_json::from_slice(&v).map_err(|e| self.corrupt(&k, &e))?;
            if json.get("detail").is_some() {
                continue;
            }
            super::migrate::incident_to_3(&mut json).map_err(|e| self.corrupt(&k, &e))?;
            batch.insert(k, to_json(&json));
            n += 1;
            if n % BATCH == 0 {
                self.incidents
                    .apply_batch(std::mem::take(&mut batch))
                    .map_err(|e| self.err(e))?;
            }
        }
        self.incidents.apply_batch(batch).map_err(|e| self.err(e))?;
        if let Some(v) = self.meta.get("state").map_err(|e| self.err(e))? {
            let mut json: serde_json::Value =
                serde_json::from_slice(&v).map_err(|e| self.corrupt(b"state", &e))?;
            super::migrate::state_to_3(&mut json).map_err(|e| self.corrupt(b"state", &e))?;
            self.meta
                .insert("state", to_json(&json))
                .map_err(|e| self.err(e))?;
        }
        self.flush()?;
        if n > 0 {
            tracing::info!(
                path = %self.path.display(),
                "{n} stored incidents moved to schema 3 (one detail per kind)"
            );
        }
        Ok(())
    }

    /// Schema 1 kept open incidents and per-host records inside `state`:
    /// move them to their trees, count the history, in one transaction.
    fn migrate_from_1(&self) -> Result<(), StoreError> {
        let state = match self.meta.get("state").map_err(|e| self.err(e))? {
            Some(v) => Some(
                serde_json::from_slice::<PipelineState>(&v)
                    .map_err(|e| self.corrupt(b"state", &e))?,
            ),
            None => None,
        };
        let (open, origins, state_bytes) = match state {
            Some(mut st) => {
                let (open, origins) = st.tracker.split_persisted();
                (open, origins, Some(to_json(&st)))
            }
            None => (Vec::new(), Vec::new(), None),
        };
        let counts = to_json(&self.count_stats(&self.settings()?)?);
        let r: Result<(), TransactionError<()>> = (&self.open, &self.hosts, &self.meta)
            .transaction(|(open_t, hosts_t, meta)| {
                for i in &open {
                    open_t.insert(i.id.as_bytes(), i.node.as_bytes())?;
                }
                for (h, o) in &origins {
                    hosts_t.insert(h.as_bytes(), to_json(o))?;
                }
                if let Some(st) = &state_bytes {
                    meta.insert("state", st.as_slice())?;
                }
                meta.insert("stats", counts.as_slice())?;
                meta.insert("schema", SCHEMA)?;
                Ok::<(), ConflictableTransactionError<()>>(())
            });
        self.finish_txn(r)?;
        self.flush()
    }

    /// Opens an existing store only: `Ok(None)` when there is none yet.
    pub fn open_existing(path: &Path) -> Result<Option<Self>, StoreError> {
        // "Not there" only when the system says so: a directory this user
        // may not look into says nothing either way.
        let mut absent = true;
        for f in ["db", "conf"] {
            match std::fs::metadata(path.join(f)) {
                Ok(_) => absent = false,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(StoreError::Inaccessible {
                        path: path.display().to_string(),
                        source,
                    });
                }
            }
        }
        if absent {
            return Ok(None);
        }
        Self::open(path).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Batch, StatsDelta};

    /// sled's seven I/O threads, started by the first open in the process,
    /// wait with the idle slack; the opening thread gets its own back.
    #[test]
    fn sleds_idle_threads_wait_with_slack() {
        let before = rustix::thread::current_timer_slack().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let _store = Store::open(&dir.path().join("store")).unwrap();
        assert_eq!(rustix::thread::current_timer_slack().unwrap(), before);
        let mut slack = Vec::new();
        for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let read = |f: &str| std::fs::read_to_string(t.path().join(f)).unwrap_or_default();
            let name = read("comm");
            let Some(n) = name.trim().strip_prefix("sled-io-") else {
                continue;
            };
            if n.parse::<u32>().is_ok_and(|n| n < 7) {
                // Only /proc/TID has it, not /proc/self/task/TID.
                let tid = t.file_name();
                let ns =
                    std::fs::read_to_string(Path::new("/proc").join(tid).join("timerslack_ns"));
                slack.push(ns.unwrap().trim().parse::<u64>().unwrap());
            }
        }
        // Other tests' stores share the process's pool: as many of the
        // seven as are alive now, each with the slack.
        assert!(
            !slack.is_empty() && slack.iter().all(|&s| s == SLED_IDLE_SLACK.get()),
            "{slack:?}"
        );
    }

    /// takes the newest snapshot file and would refuse the store.
    #[test]
    fn an_unfinished_snapshot_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("store");
        {
            let s = Store::open(&p).unwrap();
            s.commit(&Batch {
                cursor: Some("s=1;i=2".into()),
                stats: StatsDelta {
                    opened: 3,
                    ..StatsDelta::default()
                },
                ..Batch::default()
            })
            .unwrap();
        }
        let snap = p.join("snap.7FFFFFFFFFFFFFFF.generating");
        std::fs::write(&snap, b"").unwrap();
        // sled's threads of the store just dropped may hold its lock a
        // moment longer on a loaded machine.
        let mut tries = 0;
        let s = loop {
            match Store::open(&p) {
                Err(StoreError::Locked { .. }) if tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                other => break other.unwrap(),
            }
        };
        assert!(!snap.exists());
        assert!(
            p.join("set-aside.snap.7FFFFFFFFFFFFFFF.generating")
                .exists()
        );
        let loaded = s.load().unwrap();
        assert_eq!(loaded.position.cursor.as_deref(), Some("s=1;i=2"));
        assert_eq!(loaded.stats.incidents, 3);
    }

    #[test]
    fn a_second_open_is_locked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("store");
        let _a = Store::open(&p).unwrap();
        let e = Store::open(&p).err().unwrap();
        assert!(matches!(e, StoreError::Locked { .. }), "{e}");
    }
}
