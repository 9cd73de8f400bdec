//! The incident history in sled (0.34). Every key layout lives here.
//!
//! | tree | key | value |
//! |---|---|---|
//! | `incidents` | incident id (12 hex digits) | JSON [`Incident`] |
//! | `by_node` | node, `0x00`, `opened_at` (8 bytes, big-endian, sign-flipped), id | empty |
//! | `by_time` | `opened_at` (8 bytes, as above), id | empty |
//! | `open` | incident id | node: the incidents still open |
//! | `hosts` | host name | JSON [`Origin`]: what that host's kubelet told lately |
//! | `outbox` | sequence number (8 bytes, big-endian) | JSON [`OutboxEntry`] |
//! | `silences` | silence id | JSON [`Silence`] (expired ones are kept a while, then pruned) |
//! | `meta` | `schema` | `2` (`1`: open incidents and hosts inside `state`) |
//! | | `cursor` | the journal cursor of the last entry whose effects are committed |
//! | | `cursor/GROUP` | the same, per group of a collector's files (one host each) |
//! | | `source` | the journal the cursors belong to ([`crate::journal::source_id`]) |
//! | | `state` | JSON [`PipelineState`]: tracker bookkeeping, held lines, counters |
//! | | `stats` | JSON [`Stats`]: counts over the history |
//!
//! Everything one batch of entries changes, the cursor included, is written
//! in one transaction, so the store reopens to exactly the state after the
//! last committed batch: no entry counted twice, none skipped. Open
//! incidents and per-host records are written when they change, not with
//! every commit: a commit costs what the batch changed.

mod records;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

pub use records::{Channel, OutboxEntry, Silence, Stats, StatsDelta, silencing};

use crate::pipeline::PipelineState;
use crate::signals::Cause;
use crate::time::Micros;
use crate::tracker::{Incident, IncidentKind, Origin, Settings, Verdict};

pub const SCHEMA: &[u8] = b"2";
const SCHEMA_1: &[u8] = b"1";

/// One incident ready to write: id, value, `by_node` key, `by_time` key.
type Record = (String, Vec<u8>, Vec<u8>, Vec<u8>);

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "store {path} is in use by another process (the running service holds it; \
         query it through its socket, or stop it first)"
    )]
    Locked { path: String },
    #[error("store {path}: {message}")]
    Open { path: String, message: String },
    #[error("store {path}: {source}")]
    Sled {
        path: String,
        #[source]
        source: sled::Error,
    },
    /// Damaged, or written by another version: restarting will not help.
    #[error(
        "store {path} cannot be read ({detail}). Move it aside (mv {path} {path}.broken) and \
         start again: the service then reads the journal from [journal] start_at and keeps a \
         new history"
    )]
    Unreadable { path: String, detail: String },
}

impl StoreError {
    /// True when retrying cannot help (corruption, an unknown format).
    #[must_use]
    pub fn is_unreadable(&self) -> bool {
        matches!(self, StoreError::Unreadable { .. })
    }
}

/// What one batch commits.
#[derive(Debug, Default)]
pub struct Batch {
    pub cursor: Option<String>,
    /// Cursors of a collector's groups that moved.
    pub group_cursors: Vec<(String, String)>,
    /// The serialized [`PipelineState`].
    pub state: Option<Vec<u8>>,
    /// Incidents opened, changed or resolved in the batch.
    pub incidents: Vec<Incident>,
    /// Per-host records that changed.
    pub origins: Vec<(String, Origin)>,
    /// Alerts they raised (their `seq` is assigned here).
    pub alerts: Vec<OutboxEntry>,
    pub stats: StatsDelta,
    /// Incidents taken out of the history again (evicted before anything
    /// was said of them): removed with their index entries.
    pub forget: Vec<Incident>,
}

impl Batch {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.cursor.is_none()
            && self.group_cursors.is_empty()
            && self.state.is_none()
            && self.incidents.is_empty()
            && self.origins.is_empty()
            && self.alerts.is_empty()
            && self.stats.is_empty()
            && self.forget.is_empty()
    }
}

/// What a store holds for the service to resume.
#[derive(Debug, Default)]
pub struct Loaded {
    pub position: crate::model::Position,
    /// The journal `position` belongs to (none recorded before 0.1.1).
    pub source: Option<String>,
    pub state: Option<PipelineState>,
    pub open: Vec<Incident>,
    pub origins: Vec<(String, Origin)>,
    pub stats: Stats,
}

/// Query filters (design section 3.1, `incidents`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct Filter {
    pub node: Option<String>,
    pub open: bool,
    /// Incidents with a signal at or after this time.
    pub since: Option<Micros>,
    /// Incidents that opened before this time.
    pub until: Option<Micros>,
    pub kind: Option<IncidentKind>,
    pub verdict: Option<Verdict>,
    pub cause: Option<Cause>,
    /// Incidents seen on this host.
    pub host: Option<String>,
    /// Incidents whose errors name this API endpoint (`host:port`).
    pub endpoint: Option<String>,
    /// Only resolved ones (`open` is the other way round).
    pub resolved: bool,
    pub limit: Option<usize>,
}

#[derive(Clone)]
pub struct Store {
    path: PathBuf,
    db: sled::Db,
    incidents: sled::Tree,
    by_node: sled::Tree,
    by_time: sled::Tree,
    open: sled::Tree,
    hosts: sled::Tree,
    meta: sled::Tree,
    outbox: sled::Tree,
    silences: sled::Tree,
    /// The silences as parsed, shared by every clone (one process holds
    /// the store): every delivery pass, query and scrape reads them, and
    /// only the silence functions below write the tree.
    parsed_silences: std::sync::Arc<std::sync::Mutex<Option<Vec<Silence>>>>,
}

/// Big-endian with the sign bit flipped: byte order is time order.
fn time_key(t: Micros) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

fn node_key(node: &str, opened_at: Micros, id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(node.len() + 1 + 8 + id.len());
    k.extend_from_slice(node.as_bytes());
    k.push(0);
    k.extend_from_slice(&time_key(opened_at));
    k.extend_from_slice(id.as_bytes());
    k
}

fn by_time_key(opened_at: Micros, id: &str) -> Vec<u8> {
    let mut k = time_key(opened_at).to_vec();
    k.extend_from_slice(id.as_bytes());
    k
}

/// sled's errors that a restart cannot fix.
fn unreadable(e: &sled::Error) -> bool {
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
            std::fs::create_dir_all(parent).map_err(|e| StoreError::Open {
                path: shown.clone(),
                message: format!("cannot create {}: {e}", parent.display()),
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
            meta: tree("meta")?,
            outbox: tree("outbox")?,
            silences: tree("silences")?,
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
                        .map_err(|e| StoreError::Open {
                            path: shown.clone(),
                            message: format!("cannot sync {}: {e}", d.display()),
                        })?;
                }
            }
            Some(v) if v.as_ref() == SCHEMA => {}
            Some(v) if v.as_ref() == SCHEMA_1 => store.migrate_from_1()?,
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
        if !path.join("db").exists() && !path.join("conf").exists() {
            return Ok(None);
        }
        Self::open(path).map(Some)
    }

    fn err(&self, source: sled::Error) -> StoreError {
        if unreadable(&source) {
            return StoreError::Unreadable {
                path: self.path.display().to_string(),
                detail: source.to_string(),
            };
        }
        StoreError::Sled {
            path: self.path.display().to_string(),
            source,
        }
    }

    fn corrupt(&self, key: &[u8], e: &dyn std::fmt::Display) -> StoreError {
        StoreError::Unreadable {
            path: self.path.display().to_string(),
            detail: format!("record {} is damaged: {e}", String::from_utf8_lossy(key)),
        }
    }

    fn finish_txn(&self, r: Result<(), TransactionError<()>>) -> Result<(), StoreError> {
        match r {
            Ok(()) | Err(TransactionError::Abort(())) => Ok(()),
            Err(TransactionError::Storage(e)) => Err(self.err(e)),
        }
    }

    fn json<T: for<'de> Deserialize<'de>>(&self, key: &[u8], v: &[u8]) -> Result<T, StoreError> {
        serde_json::from_slice(v).map_err(|e| self.corrupt(key, &e))
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The committed cursor, pipeline state, open incidents, per-host
    /// records and counts.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        let cursor = self
            .meta
            .get("cursor")
            .map_err(|e| self.err(e))?
            .map(|v| String::from_utf8_lossy(&v).into_owned());
        let mut groups = std::collections::BTreeMap::new();
        for kv in self.meta.scan_prefix(b"cursor/") {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            groups.insert(
                String::from_utf8_lossy(&k["cursor/".len()..]).into_owned(),
                String::from_utf8_lossy(&v).into_owned(),
            );
        }
        let state = match self.meta.get("state").map_err(|e| self.err(e))? {
            Some(v) => Some(self.json(b"state", &v)?),
            None => None,
        };
        let mut open = Vec::new();
        for kv in &self.open {
            let (id, _) = kv.map_err(|e| self.err(e))?;
            if let Some(i) = self.incident(&String::from_utf8_lossy(&id))? {
                open.push(i);
            }
        }
        let mut origins = Vec::new();
        for kv in &self.hosts {
            let (h, v) = kv.map_err(|e| self.err(e))?;
            origins.push((String::from_utf8_lossy(&h).into_owned(), self.json(&h, &v)?));
        }
        let source = self
            .meta
            .get("source")
            .map_err(|e| self.err(e))?
            .map(|v| String::from_utf8_lossy(&v).into_owned());
        Ok(Loaded {
            position: crate::model::Position { cursor, groups },
            source,
            state,
            open,
            origins,
            stats: self.stats()?,
        })
    }

    /// The settings stored with the pipeline state: verdicts are judged by
    /// them when the service is not running.
    pub fn settings(&self) -> Result<Settings, StoreError> {
        #[derive(Deserialize)]
        struct Tracker {
            settings: Settings,
        }
        #[derive(Deserialize)]
        struct State {
            tracker: Tracker,
        }
        match self.meta.get("state").map_err(|e| self.err(e))? {
            Some(v) => Ok(self.json::<State>(b"state", &v)?.tracker.settings),
            None => Ok(Settings::default()),
        }
    }

    /// The counts over the history; counted once (a store from before they
    /// were kept) and then kept with every commit.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        if let Some(v) = self.meta.get("stats").map_err(|e| self.err(e))? {
            return self.json(b"stats", &v);
        }
        let stats = self.count_stats(&self.settings()?)?;
        self.meta
            .insert("stats", to_json(&stats))
            .map_err(|e| self.err(e))?;
        Ok(stats)
    }

    fn count_stats(&self, settings: &Settings) -> Result<Stats, StoreError> {
        let mut stats = Stats::default();
        for kv in &self.incidents {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            let i: Incident = self.json(&k, &v)?;
            stats.incidents += 1;
            if i.resolved_at.is_some() {
                *stats
                    .resolved
                    .entry(i.verdict(settings).as_str().to_string())
                    .or_default() += 1;
            }
        }
        Ok(stats)
    }

    /// Writes one batch in one transaction, then makes it durable.
    pub fn commit(&self, batch: &Batch) -> Result<(), StoreError> {
        let records: Vec<Record> = batch
            .incidents
            .iter()
            .map(|i| {
                (
                    i.id.clone(),
                    to_json(i),
                    node_key(&i.node, i.opened_at, &i.id),
                    by_time_key(i.opened_at, &i.id),
                )
            })
            .collect();
        let origins: Vec<(&str, Vec<u8>)> = batch
            .origins
            .iter()
            .map(|(h, o)| (h.as_str(), to_json(o)))
            .collect();
        // The closure may run again on conflict: it only writes. The alerts
        // go in with the incident changes that raised them.
        let result: Result<(), TransactionError<()>> = (
            &self.incidents,
            &self.by_node,
            &self.by_time,
            &self.open,
            &self.hosts,
            &self.meta,
            &self.outbox,
        )
            .transaction(|(inc, by_node, by_time, open, hosts, meta, outbox)| {
                for a in &batch.alerts {
                    let seq = outbox.generate_id()?;
                    let entry = OutboxEntry { seq, ..a.clone() };
                    outbox.insert(&seq.to_be_bytes(), to_json(&entry))?;
                }
                for ((id, value, nk, tk), i) in records.iter().zip(&batch.incidents) {
                    inc.insert(id.as_bytes(), value.as_slice())?;
                    by_node.insert(nk.as_slice(), &[] as &[u8])?;
                    by_time.insert(tk.as_slice(), &[] as &[u8])?;
                    if i.resolved_at.is_none() {
                        open.insert(id.as_bytes(), i.node.as_bytes())?;
                    } else {
                        open.remove(id.as_bytes())?;
                    }
                }
                for i in &batch.forget {
                    inc.remove(i.id.as_bytes())?;
                    by_node.remove(node_key(&i.node, i.opened_at, &i.id).as_slice())?;
                    by_time.remove(by_time_key(i.opened_at, &i.id).as_slice())?;
                    open.remove(i.id.as_bytes())?;
                }
                for (h, o) in &origins {
                    hosts.insert(h.as_bytes(), o.as_slice())?;
                }
                if !batch.stats.is_empty() {
                    let mut stats: Stats = meta
                        .get("stats")?
                        .and_then(|v| serde_json::from_slice(&v).ok())
                        .unwrap_or_default();
                    stats.add(&batch.stats);
                    meta.insert("stats", to_json(&stats))?;
                }
                if let Some(s) = &batch.state {
                    meta.insert("state", s.as_slice())?;
                }
                if let Some(c) = &batch.cursor {
                    meta.insert("cursor", c.as_bytes())?;
                }
                for (g, c) in &batch.group_cursors {
                    meta.insert(format!("cursor/{g}").as_bytes(), c.as_bytes())?;
                }
                Ok::<(), ConflictableTransactionError<()>>(())
            });
        self.finish_txn(result)?;
        // Durable before the caller acts on it (acks, outbox deliveries).
        self.flush()
    }

    /// Records the journal the cursors belong to. With `closed`, the
    /// journal changed: in one transaction the old journal's cursors and
    /// pipeline state are forgotten (they mean nothing in another journal)
    /// and its open incidents written as they were closed.
    pub fn switch_source(
        &self,
        source: &str,
        closed: Option<&[Incident]>,
        settings: &Settings,
    ) -> Result<(), StoreError> {
        let mut forget: Vec<sled::IVec> = Vec::new();
        if closed.is_some() {
            // The transactional view has no scans; this process holds the
            // store's lock, so the keys cannot change in between.
            for kv in self.meta.scan_prefix(b"cursor") {
                forget.push(kv.map_err(|e| self.err(e))?.0);
            }
            forget.push("state".into());
        }
        let closed = closed.unwrap_or_default();
        let delta = StatsDelta {
            opened: 0,
            forgotten: 0,
            resolved: closed
                .iter()
                .map(|i| i.verdict(settings).as_str().to_string())
                .collect(),
        };
        let result: Result<(), TransactionError<()>> = (&self.incidents, &self.open, &self.meta)
            .transaction(|(inc, open, meta)| {
                for i in closed {
                    inc.insert(i.id.as_bytes(), to_json(i))?;
                    open.remove(i.id.as_bytes())?;
                }
                for k in &forget {
                    meta.remove(k)?;
                }
                if !delta.is_empty() {
                    let mut stats: Stats = meta
                        .get("stats")?
                        .and_then(|v| serde_json::from_slice(&v).ok())
                        .unwrap_or_default();
                    stats.add(&delta);
                    meta.insert("stats", to_json(&stats))?;
                }
                meta.insert("source", source.as_bytes())?;
                Ok::<(), ConflictableTransactionError<()>>(())
            });
        self.finish_txn(result)?;
        self.flush()
    }

    pub fn incident(&self, id: &str) -> Result<Option<Incident>, StoreError> {
        match self.incidents.get(id).map_err(|e| self.err(e))? {
            Some(v) => Ok(Some(self.json(id.as_bytes(), &v)?)),
            None => Ok(None),
        }
    }

    /// Up to `max` incidents whose id starts with `prefix`.
    pub fn incidents_with_prefix(
        &self,
        prefix: &str,
        max: usize,
    ) -> Result<Vec<Incident>, StoreError> {
        let mut out = Vec::new();
        for kv in self.incidents.scan_prefix(prefix.as_bytes()).take(max) {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            out.push(self.json(&k, &v)?);
        }
        Ok(out)
    }

    /// Incidents matching `f`, newest first.
    pub fn incidents(&self, f: &Filter, settings: &Settings) -> Result<Vec<Incident>, StoreError> {
        let keys: Box<dyn Iterator<Item = sled::Result<(sled::IVec, sled::IVec)>>> = match &f.node {
            Some(node) => {
                let mut prefix = node.as_bytes().to_vec();
                prefix.push(0);
                Box::new(self.by_node.scan_prefix(prefix).rev())
            }
            None if f.open => Box::new(self.open.iter()),
            None => Box::new(self.by_time.iter().rev()),
        };
        let mut out = Vec::new();
        for kv in keys {
            let (k, _) = kv.map_err(|e| self.err(e))?;
            let id = String::from_utf8_lossy(&k[k.len().saturating_sub(12)..]).into_owned();
            let Some(i) = self.incident(&id)? else {
                continue;
            };
            if f.open && i.resolved_at.is_some() {
                continue;
            }
            if f.since
                .is_some_and(|s| i.last_signal_at < s && i.resolved_at.is_some())
            {
                continue;
            }
            if f.verdict.is_some_and(|v| i.verdict(settings) != v) {
                continue;
            }
            if f.kind.is_some_and(|k| i.kind != k) {
                continue;
            }
            if f.resolved && i.resolved_at.is_none() {
                continue;
            }
            if f.until.is_some_and(|u| i.opened_at >= u) {
                continue;
            }
            if f.cause.is_some_and(|c| i.cause() != c) {
                continue;
            }
            if f.host
                .as_ref()
                .is_some_and(|h| i.host.as_deref() != Some(h.as_str()))
            {
                continue;
            }
            if f.endpoint
                .as_ref()
                .is_some_and(|e| i.api_endpoint.as_deref() != Some(e.as_str()))
            {
                continue;
            }
            out.push(i);
            if (f.node.is_some() || !f.open) && f.limit.is_some_and(|l| out.len() >= l) {
                break;
            }
        }
        if f.open && f.node.is_none() {
            // The open index is in id order: newest first like the rest.
            out.sort_by(|a, b| b.opened_at.cmp(&a.opened_at).then(a.id.cmp(&b.id)));
            if let Some(l) = f.limit {
                out.truncate(l);
            }
        }
        Ok(out)
    }

    /// Removes resolved incidents that ended before `before`. Returns how many.
    pub fn prune(&self, before: Micros, settings: &Settings) -> Result<usize, StoreError> {
        let mut removed = 0;
        let mut stats = self.stats()?;
        for kv in &self.by_time {
            let (k, _) = kv.map_err(|e| self.err(e))?;
            let id = String::from_utf8_lossy(&k[8..]).into_owned();
            let Some(i) = self.incident(&id)? else {
                continue;
            };
            let Some(resolved) = i.resolved_at else {
                continue;
            };
            if resolved >= before {
                continue;
            }
            stats.incidents = stats.incidents.saturating_sub(1);
            if let Some(n) = stats.resolved.get_mut(i.verdict(settings).as_str()) {
                *n = n.saturating_sub(1);
            }
            let nk = node_key(&i.node, i.opened_at, &i.id);
            let stats_bytes = to_json(&stats);
            let r: Result<(), TransactionError<()>> =
                (&self.incidents, &self.by_node, &self.by_time, &self.meta).transaction(
                    |(inc, by_node, by_time, meta)| {
                        inc.remove(id.as_bytes())?;
                        by_node.remove(nk.as_slice())?;
                        by_time.remove(&k)?;
                        meta.insert("stats", stats_bytes.as_slice())?;
                        Ok::<(), ConflictableTransactionError<()>>(())
                    },
                );
            self.finish_txn(r)?;
            removed += 1;
        }
        if removed > 0 {
            self.flush()?;
        }
        Ok(removed)
    }

    /// The outbox, oldest first.
    pub fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        let mut out = Vec::new();
        for kv in &self.outbox {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            out.push(self.json(&k, &v)?);
        }
        Ok(out)
    }

    /// Rewrites outbox entries (attempts, next attempt, last error).
    pub fn outbox_update(&self, entries: &[OutboxEntry]) -> Result<(), StoreError> {
        let mut b = sled::Batch::default();
        for e in entries {
            b.insert(&e.seq.to_be_bytes(), to_json(e));
        }
        self.outbox.apply_batch(b).map_err(|e| self.err(e))?;
        self.flush()
    }

    /// Removes delivered entries; durable before it returns.
    pub fn outbox_remove(&self, seqs: &[u64]) -> Result<(), StoreError> {
        let mut b = sled::Batch::default();
        for s in seqs {
            b.remove(&s.to_be_bytes());
        }
        self.outbox.apply_batch(b).map_err(|e| self.err(e))?;
        self.flush()
    }

    /// Every silence, newest first.
    pub fn silences(&self) -> Result<Vec<Silence>, StoreError> {
        let mut cached = self
            .parsed_silences
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(all) = cached.as_ref() {
            return Ok(all.clone());
        }
        let mut out: Vec<Silence> = Vec::new();
        for kv in &self.silences {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            out.push(self.json(&k, &v)?);
        }
        out.sort_by(|a, b| b.starts_at.cmp(&a.starts_at).then(a.id.cmp(&b.id)));
        *cached = Some(out.clone());
        Ok(out)
    }

    /// Runs a change of the silences tree; the parsed ones are read again
    /// next time. The lock is held across it so that a reader never caches
    /// what was read before the change.
    fn change_silences<T>(
        &self,
        f: impl FnOnce() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut cached = self
            .parsed_silences
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *cached = None;
        f()
    }

    /// Rewrites a silence; durable before it returns.
    pub fn silence_put(&self, s: &Silence) -> Result<(), StoreError> {
        self.change_silences(|| {
            self.silences
                .insert(s.id.as_bytes(), to_json(s))
                .map_err(|e| self.err(e))?;
            Ok(())
        })?;
        self.flush()
    }

    /// Adds a new silence unless its id is taken (then `false`, nothing
    /// written); durable before it returns.
    pub fn silence_insert(&self, s: &Silence) -> Result<bool, StoreError> {
        // Check and insert in one step: two adds at once never share an id.
        let swapped = self.change_silences(|| {
            self.silences
                .compare_and_swap(s.id.as_bytes(), None as Option<&[u8]>, Some(to_json(s)))
                .map_err(|e| self.err(e))
        })?;
        if swapped.is_err() {
            return Ok(false);
        }
        self.flush()?;
        Ok(true)
    }

    /// Removes silences that ended before `before`. Returns how many.
    pub fn prune_silences(&self, before: Micros) -> Result<usize, StoreError> {
        let old: Vec<String> = self
            .silences()?
            .into_iter()
            .filter(|s| s.ends_at < before)
            .map(|s| s.id)
            .collect();
        if old.is_empty() {
            return Ok(0);
        }
        self.change_silences(|| {
            let mut b = sled::Batch::default();
            for id in &old {
                b.remove(id.as_bytes());
            }
            self.silences.apply_batch(b).map_err(|e| self.err(e))
        })?;
        self.flush()?;
        Ok(old.len())
    }

    /// Writes one incident record as it is (an acknowledgement made while
    /// the service is stopped).
    pub fn put_incident(&self, i: &Incident) -> Result<(), StoreError> {
        self.incidents
            .insert(i.id.as_bytes(), to_json(i))
            .map_err(|e| self.err(e))?;
        self.flush()
    }

    pub fn flush(&self) -> Result<(), StoreError> {
        self.db.flush().map(|_| ()).map_err(|e| self.err(e))
    }

    /// Bytes on disk.
    #[must_use]
    pub fn size_on_disk(&self) -> u64 {
        self.db.size_on_disk().unwrap_or(0)
    }
}

fn to_json<T: Serialize>(v: &T) -> Vec<u8> {
    // Serializing these plain data types cannot fail (no maps with
    // non-string keys, no custom serializers that error).
    serde_json::to_vec(v).expect("records serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn time_keys_sort_in_time_order() {
        let ts = [-5i64, 0, 1, 1_700_000_000_000_000];
        let keys: Vec<[u8; 8]> = ts.iter().map(|&t| time_key(t)).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
    }

    /// A full disk can leave a 0-byte `snap.*.generating` behind; sled
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

    /// D25: an id already taken is never overwritten.
    #[test]
    fn a_silence_id_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store")).unwrap();
        let s = Silence {
            id: "00000000000000aa".into(),
            node: "w-*".into(),
            cause: None,
            kind: None,
            starts_at: 0,
            ends_at: 10,
            created_by: "root".into(),
            comment: "first".into(),
            expired_by: None,
            expired_at: None,
        };
        assert!(store.silence_insert(&s).unwrap());
        let again = Silence {
            comment: "second".into(),
            ..s.clone()
        };
        assert!(!store.silence_insert(&again).unwrap());
        assert_eq!(store.silences().unwrap(), vec![s]);
        assert_eq!(store.prune_silences(11).unwrap(), 1);
        assert!(store.silences().unwrap().is_empty());
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
