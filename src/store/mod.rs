//! The incident history in sled (0.34). Every key layout is in this table
//! (the index keys' bytes are spelled in `keys.rs`).
//!
//! | tree | key | value | written by |
//! |---|---|---|---|
//! | `incidents` | incident id (12 hex digits) | JSON [`Incident`], deflated when over 256 bytes (see [`to_record`]) | ingest (commit, prune); the CLI's offline `ack` while the service is stopped |
//! | `by_node` | node, `0x00`, `opened_at` (8 bytes, big-endian, sign-flipped), id | empty | ingest (commit, prune) |
//! | `by_time` | `opened_at` (8 bytes, as above), id | empty | ingest (commit, prune) |
//! | `open` | incident id | node: the incidents still open | ingest (commit) |
//! | `hosts` | host name | JSON [`Origin`]: what that host's kubelet told lately | ingest (commit) |
//! | `members` | endpoint group (`ENDPOINT CAUSE`), `0x00`, `opened_at` (as above), incident id | JSON [`Member`], deflated when over 256 bytes: a node incident as its endpoint group weighs it | ingest (commit, source switch) |
//! | `outbox` | sequence number (8 bytes, big-endian) | JSON [`OutboxEntry`] | ingest inserts (commit); the mailer and the Alertmanager task update and remove their own channel's entries (and `control::apply` in them) |
//! | `deliveries` | incident id | when its first alert was delivered (8 bytes, big-endian): read into the incident's `alerted_at` | the mailer and the Alertmanager task, in the transaction that removes the delivered entries; ingest removes an incident's with it (prune, forget) |
//! | `silences` | silence id | JSON [`Silence`] (ended ones are kept a day, then pruned) | the query server (add, expire); ingest's pruning removes ended ones |
//! | `starts` | host, `0x00`, `started_at` (8 bytes, as above) | JSON [`Start`]: one kubelet start (design 5.5); at most 100 a host, the latest | ingest (commit, prune) |
//! | `damaged` | the tree's name, `0x00`, the record's key | the record's bytes, as they were: a record that could not be read, set aside (see [`Store::set_aside`]) | whoever reads it first, in one transaction with its removal, only while it is still those bytes |
//! | `meta` | `schema` | `3` (`2`: one flat incident for every kind; `1`: open incidents and hosts inside `state` too; `migrate.rs` moves them) | whoever opens the store first (a migration) |
//! | | `cursor` | the journal cursor of the last entry whose effects are committed | ingest (commit, source switch) |
//! | | `cursor/GROUP` | the same, per group of a collector's files (one host each) | ingest (commit, source switch) |
//! | | `files/GROUP` | JSON [`GroupFiles`]: the file IDs the group was read over, and a late file partly read (so one that appears while the service is stopped is read at the next start, and one read partly goes on) | ingest (commit, source switch) |
//! | | `source` | the journal the cursors belong to ([`crate::journal::source_id`]) | ingest (source switch at start) |
//! | | `left/SOURCE` | JSON: where a journal read before was left (its cursors and origin), for a switch back to it; at most 16 (see `source.rs`) | ingest (source switch at start) |
//! | | `origin` | JSON [`ReadFrom`]: where a host (or journal) with no cursor starts in that journal, `[journal] start_at` taken once at its first start | ingest (source switch at start; once for a store from before it was kept) |
//! | | `state` | JSON [`PipelineState`]: tracker bookkeeping, counters | ingest (commit) |
//! | | `held/STREAM` | JSON (sequence, [`Joined`]), deflated when over 256 bytes: the line held for a stream until it is known to be whole, one record a stream, written when it changes (before, inside `state`: the next commit moves them) | ingest (commit, source switch) |
//! | | `last_delivery/CHANNEL` | JSON: the channel's last delivery (time, words), for `status` after a restart | the channel's delivery task, with [`Store::delivered`] |
//! | | `stats` | JSON [`Stats`]: counts over the history | ingest (commit, prune); [`Store::stats`] once, for a store from before they were kept |
//!
//! Every tree but `outbox`, `deliveries` and `silences` has one writer,
//! ingest, the single writer of incidents, tracker state and cursors. The
//! outbox and the silences have several; their keys are disjoint per
//! writer (an outbox entry is its channel's) and each sled operation is
//! atomic. A delivery is recorded in `deliveries`, never by rewriting its
//! incident (ingest owns those): the first delivery of an incident wins,
//! whichever task makes it.
//!
//! Everything one batch of entries changes, the cursor included, is written
//! in one transaction, so the store reopens to exactly the state after the
//! last committed batch: no entry counted twice, none skipped. Open
//! incidents and per-host records are written when they change, not with
//! every commit: a commit costs what the batch changed.

mod damaged;
mod encoding;
mod keys;
mod migrate;
mod open;
mod records;
mod silences;
mod source;
mod starts;

use std::path::{Path, PathBuf};

use encoding::{decode, to_json, to_record};
use keys::{by_time_key, member_key, member_prefix, node_key};
use open::unreadable;
use source::files_key;

use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

pub(crate) use records::{Channel, Hold, OutboxEntry, Stats, silencing};
pub use records::{Silence, StatsDelta};
pub(crate) use starts::StartFilter;

use sentinel_core::parse::join::{HeldWrite, Joined};
use sentinel_core::pipeline::PipelineState;
use sentinel_core::signals::Cause;
use sentinel_core::time::Micros;
use sentinel_core::tracker::{
    Incident, IncidentKind, Member, MemberWrite, Origin, Settings, Start, Verdict,
};

pub(crate) const SCHEMA: &[u8] = b"3";
const SCHEMA_2: &[u8] = b"2";
const SCHEMA_1: &[u8] = b"1";

/// A channel's last delivery (`meta` `last_delivery/CHANNEL`).
#[derive(Serialize, Deserialize)]
struct LastDelivery {
    at: Micros,
    result: String,
}

/// One incident ready to write: id, value, `by_node` key, `by_time` key.
type Record = (String, Vec<u8>, Vec<u8>, Vec<u8>);

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "store {path} is in use by another process (the running service holds it; \
         query it through its socket, or stop it first)"
    )]
    Locked { path: String },
    /// The store's directory (or its parent) cannot be made.
    #[error("store {path}: cannot create {dir}: {source}")]
    Create {
        path: String,
        dir: String,
        #[source]
        source: std::io::Error,
    },
    /// A new store's files cannot be made durable.
    #[error("store {path}: cannot sync {dir}: {source}")]
    Sync {
        path: String,
        dir: String,
        #[source]
        source: std::io::Error,
    },
    /// A record could not be serialized for writing.
    #[error("store {path}: {what}: {source}")]
    Encode {
        path: String,
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A call on the store's blocking thread did not finish (it panicked,
    /// or the runtime is stopping): whether it wrote is unknown.
    #[error("store {path}: {what}")]
    Interrupted { path: String, what: String },
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
    /// Whether there is a store cannot be told: its directory cannot be
    /// looked into by this user (under systemd, `/var/lib/private` is
    /// root's).
    #[error("store {path}: cannot look for it: {source}")]
    Inaccessible {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// True when retrying cannot help (corruption, an unknown format).
    #[must_use]
    pub fn is_unreadable(&self) -> bool {
        matches!(self, StoreError::Unreadable { .. })
    }

    /// True when the store's files cannot be reached by this user.
    #[must_use]
    pub fn is_permission_denied(&self) -> bool {
        match self {
            StoreError::Create { source, .. }
            | StoreError::Sync { source, .. }
            | StoreError::Inaccessible { source, .. } => {
                source.kind() == std::io::ErrorKind::PermissionDenied
            }
            StoreError::Sled {
                source: sled::Error::Io(io),
                ..
            } => io.kind() == std::io::ErrorKind::PermissionDenied,
            _ => false,
        }
    }

    /// A blocking store call that did not come back (`what` says which,
    /// the join error why).
    pub fn interrupted(path: &Path, what: &str, e: &dyn std::fmt::Display) -> Self {
        StoreError::Interrupted {
            path: path.display().to_string(),
            what: if what.is_empty() {
                e.to_string()
            } else {
                format!("{what}: {e}")
            },
        }
    }
}

/// The `meta` keys of held lines: this, then the stream.
const HELD: &[u8] = b"held/";

fn held_key(stream: &str) -> Vec<u8> {
    [HELD, stream.as_bytes()].concat()
}

/// What one batch commits.
#[derive(Debug, Default)]
pub struct Batch {
    pub cursor: Option<String>,
    /// Cursors of a collector's groups that moved.
    pub group_cursors: Vec<(String, String)>,
    /// The files of a collector's groups, where they changed.
    pub group_files: Vec<(String, sentinel_core::model::GroupFiles)>,
    /// The serialized [`PipelineState`].
    pub state: Option<Vec<u8>>,
    /// Incidents opened, changed or resolved in the batch.
    pub incidents: Vec<Incident>,
    /// Per-host records that changed (`None`: forgotten).
    pub origins: Vec<(String, Option<Origin>)>,
    /// Endpoint group members that changed.
    pub members: Vec<MemberWrite>,
    /// Held lines that changed (`None`: no longer held).
    pub held: Vec<HeldWrite>,
    /// The kubelets' starts that changed.
    pub starts: Vec<Start>,
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
            && self.group_files.is_empty()
            && self.state.is_none()
            && self.incidents.is_empty()
            && self.origins.is_empty()
            && self.members.is_empty()
            && self.held.is_empty()
            && self.starts.is_empty()
            && self.alerts.is_empty()
            && self.stats.is_empty()
            && self.forget.is_empty()
    }
}

/// What a store holds for the service to resume.
#[derive(Debug, Default)]
pub struct Loaded {
    pub position: sentinel_core::model::Position,
    /// The journal `position` belongs to (none recorded before 0.1.1).
    pub source: Option<String>,
    /// Where what has no cursor in that journal starts (none recorded
    /// before it was kept).
    pub origin: Option<ReadFrom>,
    pub state: Option<PipelineState>,
    pub open: Vec<Incident>,
    pub origins: Vec<(String, Origin)>,
    /// Endpoint group members, by group (in key order).
    pub members: Vec<(String, Member)>,
    /// The held lines, by stream.
    pub held: Vec<(String, (u64, Joined))>,
    pub stats: Stats,
}

/// Where a journal, or a collector's host, with no cursor yet is read
/// from: `[journal] start_at` as it was at the journal's first start (the
/// boot time then, or that moment), kept so that a host skipped at the
/// first start, a host first seen later and one seen again after a restart
/// all start at the same point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadFrom {
    /// Everything there is (`start_at = "all"`).
    Head,
    /// Entries at or after this time.
    Since(Micros),
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

/// A key and its new value (`None`: removed).
type KeyChange = (Vec<u8>, Option<Vec<u8>>);

#[derive(Clone)]
pub struct Store {
    path: PathBuf,
    db: sled::Db,
    incidents: sled::Tree,
    by_node: sled::Tree,
    by_time: sled::Tree,
    open: sled::Tree,
    hosts: sled::Tree,
    members: sled::Tree,
    meta: sled::Tree,
    outbox: sled::Tree,
    deliveries: sled::Tree,
    silences: sled::Tree,
    starts: sled::Tree,
    damaged: sled::Tree,
    /// What this process set aside, in words, not yet taken (the CLI
    /// says them on stderr; the service logs them).
    set_aside: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// The silences as parsed, shared by every clone (one process holds
    /// the store): every delivery pass, query and scrape reads them, and
    /// only the silence functions below write the tree.
    parsed_silences: std::sync::Arc<std::sync::Mutex<Option<Vec<Silence>>>>,
}

impl Store {
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

    /// A record read back, plain or deflated (see [`to_record`]).
    fn json<T: for<'de> Deserialize<'de>>(&self, key: &[u8], v: &[u8]) -> Result<T, StoreError> {
        decode(v).map_err(|e| self.corrupt(key, &e))
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
        let files = self.group_files()?;
        // A damaged state is set aside: the service starts from its
        // cursor with the tracker's bookkeeping afresh (the open incidents
        // and the hosts' records are records of their own).
        let state = match self.meta.get("state").map_err(|e| self.err(e))? {
            Some(v) => self.readable(&self.meta, b"state", &v)?,
            None => None,
        };
        let mut held = Vec::new();
        for kv in self.meta.scan_prefix(HELD) {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            let stream = String::from_utf8_lossy(&k[HELD.len()..]).into_owned();
            if let Some(j) = self.readable(&self.meta, &k, &v)? {
                held.push((stream, j));
            }
        }
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
            if let Some(o) = self.readable(&self.hosts, &h, &v)? {
                origins.push((String::from_utf8_lossy(&h).into_owned(), o));
            }
        }
        let mut members = Vec::new();
        for kv in &self.members {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            let group = k.split(|&b| b == 0).next().unwrap_or_default();
            if let Some(m) = self.readable(&self.members, &k, &v)? {
                members.push((String::from_utf8_lossy(group).into_owned(), m));
            }
        }
        let source = self
            .meta
            .get("source")
            .map_err(|e| self.err(e))?
            .map(|v| String::from_utf8_lossy(&v).into_owned());
        let origin = match self.meta.get("origin").map_err(|e| self.err(e))? {
            Some(v) => Some(self.json(b"origin", &v)?),
            None => None,
        };
        Ok(Loaded {
            position: sentinel_core::model::Position {
                cursor,
                groups,
                files,
            },
            source,
            origin,
            state,
            open,
            origins,
            members,
            held,
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
            Some(v) => Ok(self
                .readable::<State>(&self.meta, b"state", &v)?
                .map(|s| s.tracker.settings)
                .unwrap_or_default()),
            None => Ok(Settings::default()),
        }
    }

    /// The counts over the history; counted once (a store from before they
    /// were kept) and then kept with every commit.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        if let Some(v) = self.meta.get("stats").map_err(|e| self.err(e))? {
            // Damaged: set aside and counted again.
            if let Some(s) = self.readable(&self.meta, b"stats", &v)? {
                return Ok(s);
            }
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
            let Some(i): Option<Incident> = self.readable(&self.incidents, &k, &v)? else {
                continue;
            };
            stats.incidents += 1;
            if i.resolved_at.is_some() {
                *stats.resolved.entry(i.verdict(settings)).or_default() += 1;
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
                    to_record(i),
                    node_key(&i.node, i.opened_at, &i.id),
                    by_time_key(i.opened_at, &i.id),
                )
            })
            .collect();
        let origins: Vec<KeyChange> = batch
            .origins
            .iter()
            .map(|(h, o)| (h.as_bytes().to_vec(), o.as_ref().map(to_json)))
            .collect();
        let members = self.member_changes(&batch.members)?;
        let group_files: Vec<(Vec<u8>, Vec<u8>)> = batch
            .group_files
            .iter()
            .map(|(g, f)| (files_key(g), to_json(f)))
            .collect();
        let start_writes = self.start_changes(&batch.starts)?;
        let held: Vec<KeyChange> = batch
            .held
            .iter()
            .map(|(k, line)| (held_key(k), line.as_ref().map(to_record)))
            .collect();
        // The closure may run again on conflict: it only writes. The alerts
        // go in with the incident changes that raised them.
        let result: Result<(), TransactionError<()>> = (
            &self.incidents,
            &self.by_node,
            &self.by_time,
            &self.open,
            &self.hosts,
            &self.members,
            &self.meta,
            &self.outbox,
            &self.deliveries,
            &self.starts,
        )
            .transaction(
                |(
                    inc,
                    by_node,
                    by_time,
                    open,
                    hosts,
                    members_t,
                    meta,
                    outbox,
                    deliveries,
                    starts_t,
                )| {
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
                        deliveries.remove(i.id.as_bytes())?;
                    }
                    apply_changes(hosts, &origins)?;
                    apply_changes(members_t, &members)?;
                    apply_changes(starts_t, &start_writes)?;
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
                    apply_changes(meta, &held)?;
                    if let Some(c) = &batch.cursor {
                        meta.insert("cursor", c.as_bytes())?;
                    }
                    for (g, c) in &batch.group_cursors {
                        meta.insert(format!("cursor/{g}").as_bytes(), c.as_bytes())?;
                    }
                    for (k, v) in &group_files {
                        meta.insert(k.as_slice(), v.as_slice())?;
                    }
                    Ok::<(), ConflictableTransactionError<()>>(())
                },
            );
        self.finish_txn(result)?;
        // Durable before the caller acts on it (acks, outbox deliveries).
        self.flush()
    }

    /// The member writes as keys and values (`None`: removed), in order: a
    /// dropped group's keys are listed here, before the transaction (it
    /// has no scans; this process holds the store's lock, so the keys
    /// cannot change in between).
    fn member_changes(&self, writes: &[MemberWrite]) -> Result<Vec<KeyChange>, StoreError> {
        let mut out = Vec::with_capacity(writes.len());
        for w in writes {
            match w {
                MemberWrite::DropGroup(g) => {
                    for kv in self.members.scan_prefix(member_prefix(g)) {
                        out.push((kv.map_err(|e| self.err(e))?.0.to_vec(), None));
                    }
                }
                MemberWrite::Put(g, m) => {
                    let (at, id) = m.key();
                    out.push((member_key(g, at, id), Some(to_record(m))));
                }
                MemberWrite::Delete(g, at, id) => out.push((member_key(g, *at, id), None)),
            }
        }
        Ok(out)
    }

    pub fn incident(&self, id: &str) -> Result<Option<Incident>, StoreError> {
        match self.incidents.get(id).map_err(|e| self.err(e))? {
            Some(v) => match self.readable(&self.incidents, id.as_bytes(), &v)? {
                Some(i) => Ok(Some(self.recorded(i)?)),
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    /// An incident as read, with its first delivery from `deliveries`.
    fn recorded(&self, mut i: Incident) -> Result<Incident, StoreError> {
        if i.alerted_at.is_none() {
            i.alerted_at = self
                .deliveries
                .get(i.id.as_bytes())
                .map_err(|e| self.err(e))?
                .and_then(|v| <[u8; 8]>::try_from(v.as_ref()).ok())
                .map(i64::from_be_bytes);
        }
        Ok(i)
    }

    /// A delivery task delivered the alerts `seqs` of `incidents` at `at`
    /// through `channel` (`result`, in words): the entries leave the
    /// outbox, the incidents' first delivery is recorded, and the
    /// channel's last delivery (what `status` says after a restart), in
    /// one transaction, durable before it returns.
    pub fn delivered(
        &self,
        seqs: &[u64],
        incidents: &[String],
        at: Micros,
        (channel, result): (Channel, &str),
    ) -> Result<(), StoreError> {
        let last = to_json(&LastDelivery {
            at,
            result: result.to_string(),
        });
        let key = format!("last_delivery/{channel}");
        let r: Result<(), TransactionError<()>> = (&self.outbox, &self.deliveries, &self.meta)
            .transaction(|(outbox, deliveries, meta)| {
                for s in seqs {
                    outbox.remove(&s.to_be_bytes())?;
                }
                for id in incidents {
                    if deliveries.get(id.as_bytes())?.is_none() {
                        deliveries.insert(id.as_bytes(), &at.to_be_bytes())?;
                    }
                }
                meta.insert(key.as_bytes(), last.as_slice())?;
                Ok::<(), ConflictableTransactionError<()>>(())
            });
        self.finish_txn(r)?;
        self.flush()
    }

    /// `channel`'s last delivery, as [`Store::delivered`] recorded it.
    pub fn last_delivery(&self, channel: Channel) -> Result<Option<(Micros, String)>, StoreError> {
        let key = format!("last_delivery/{channel}");
        Ok(
            match self.meta.get(key.as_bytes()).map_err(|e| self.err(e))? {
                Some(v) => self
                    .readable::<LastDelivery>(&self.meta, key.as_bytes(), &v)?
                    .map(|l| (l.at, l.result)),
                None => None,
            },
        )
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
            if let Some(i) = self.readable(&self.incidents, &k, &v)? {
                out.push(self.recorded(i)?);
            }
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
            if f.kind.is_some_and(|k| i.kind() != k) {
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
                .is_some_and(|e| i.api_endpoint() != Some(e.as_str()))
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
            if let Some(n) = stats.resolved.get_mut(&i.verdict(settings)) {
                *n = n.saturating_sub(1);
            }
            let nk = node_key(&i.node, i.opened_at, &i.id);
            let stats_bytes = to_json(&stats);
            let r: Result<(), TransactionError<()>> = (
                &self.incidents,
                &self.by_node,
                &self.by_time,
                &self.meta,
                &self.deliveries,
            )
                .transaction(|(inc, by_node, by_time, meta, deliveries)| {
                    inc.remove(id.as_bytes())?;
                    by_node.remove(nk.as_slice())?;
                    by_time.remove(&k)?;
                    deliveries.remove(id.as_bytes())?;
                    meta.insert("stats", stats_bytes.as_slice())?;
                    Ok::<(), ConflictableTransactionError<()>>(())
                });
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
            if let Some(e) = self.readable(&self.outbox, &k, &v)? {
                out.push(e);
            }
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

    /// Writes one incident record as it is (an acknowledgement made while
    /// the service is stopped).
    pub fn put_incident(&self, i: &Incident) -> Result<(), StoreError> {
        self.incidents
            .insert(i.id.as_bytes(), to_record(i))
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

/// Writes each changed key in a transaction (`None`: removed).
fn apply_changes(
    tree: &sled::transaction::TransactionalTree,
    changes: &[KeyChange],
) -> Result<(), sled::transaction::UnabortableTransactionError> {
    for (k, v) in changes {
        match v {
            Some(v) => tree.insert(k.as_slice(), v.as_slice())?,
            None => tree.remove(k.as_slice())?,
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoding::{INFLATE_MAX, inflate};

    fn member(id: &str, at: Micros) -> Member {
        serde_json::from_value(serde_json::json!({
            "id": id, "node": format!("node-{id}"), "host": "h", "opened_at": at,
            "end": at + 60, "open": true, "last": at, "over": null, "ready": false,
            "first": null,
        }))
        .unwrap()
    }

    fn commit(s: &Store, members: Vec<MemberWrite>) {
        s.commit(&Batch {
            members,
            ..Batch::default()
        })
        .unwrap();
    }

    fn held(s: &Store) -> Vec<(String, String)> {
        let l = s.load().unwrap();
        l.members
            .into_iter()
            .map(|(g, m)| (g, m.key().1.to_string()))
            .collect()
    }

    /// A dropped group's records go, and only its own (not those of a
    /// group whose name it begins), before the writes after it in the same
    /// commit; a change of journal takes every record with the state.
    #[test]
    fn member_records_are_dropped_by_group_and_with_the_state() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("store")).unwrap();
        let (a, b) = ("10.0.0.1:6443 refused", "10.0.0.1:6443 refused x");
        commit(
            &s,
            vec![
                MemberWrite::Put(a.into(), member("m1", 10)),
                MemberWrite::Put(a.into(), member("m2", 20)),
                MemberWrite::Put(b.into(), member("m3", 5)),
            ],
        );
        let all = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(g, m)| (g.to_string(), m.to_string()))
                .collect()
        };
        assert_eq!(held(&s), all(&[(a, "m1"), (a, "m2"), (b, "m3")]));
        commit(&s, vec![MemberWrite::Delete(a.into(), 10, "m1".into())]);
        assert_eq!(held(&s), all(&[(a, "m2"), (b, "m3")]));
        commit(
            &s,
            vec![
                MemberWrite::DropGroup(a.into()),
                MemberWrite::Put(a.into(), member("m2", 30)),
            ],
        );
        assert_eq!(held(&s), all(&[(a, "m2"), (b, "m3")]));
        let l = s.load().unwrap();
        assert_eq!(l.members[0].1.key(), (30, "m2"), "the new record");
        // The same journal again: the records stay.
        s.switch_source("j", ReadFrom::Head, None, &Settings::default())
            .unwrap();
        assert_eq!(held(&s).len(), 2);
        s.switch_source("k", ReadFrom::Head, Some(&[]), &Settings::default())
            .unwrap();
        assert_eq!(held(&s), all(&[]));
    }

    /// Incidents (and members and held lines, through the same function)
    /// longer than [`DEFLATE_OVER`] are written deflated and read back
    /// whole; a record written plain, as an older version wrote it, reads
    /// as before; a damaged one is set aside, and one that would inflate
    /// past the bound is refused, not inflated.
    #[test]
    fn long_records_are_stored_deflated_and_plain_ones_still_read() {
        use sentinel_core::testing::{End, kubelet, replay};
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("store")).unwrap();
        let retry = r#"E1128 09:00:01.385427    2820 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"n1\": Get \"https://10.0.0.1:6443/api/v1/nodes/n1?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused""#;
        let lines = (0..8).map(|n| kubelet(n * sentinel_core::time::SECOND, "n1", retry));
        let inc = replay(lines, &Settings::default(), End::Finish)
            .one()
            .clone();
        s.commit(&Batch {
            incidents: vec![inc.clone()],
            ..Batch::default()
        })
        .unwrap();
        let raw = s.incidents.get(inc.id.as_bytes()).unwrap().unwrap();
        let json = to_json(&inc);
        assert_eq!(raw[0], 0x78, "a zlib stream");
        assert!(
            raw.len() * 3 < json.len(),
            "{} of {}",
            raw.len(),
            json.len()
        );
        let back = |s: &Store| s.incident(&inc.id).map(|i| i.map(|i| to_json(&i)));
        assert_eq!(back(&s).unwrap(), Some(json.clone()));
        s.incidents.insert(inc.id.as_bytes(), json.clone()).unwrap();
        assert_eq!(back(&s).unwrap(), Some(json.clone()), "plain JSON");
        // A truncated stream: set aside, named, the rest served.
        let half = raw[..raw.len() / 2].to_vec();
        s.incidents
            .insert(inc.id.as_bytes(), half.as_slice())
            .unwrap();
        assert_eq!(back(&s).unwrap(), None, "set aside");
        assert_eq!(s.damaged(), 1);
        let mut aside = b"incidents\0".to_vec();
        aside.extend_from_slice(inc.id.as_bytes());
        assert_eq!(s.damaged.get(&aside).unwrap().as_deref(), Some(&half[..]));
        assert!(s.incidents.get(inc.id.as_bytes()).unwrap().is_none());
        // A few kilobytes that would inflate to a megabyte.
        let bomb = to_record(&"0".repeat(1 << 20));
        assert!(bomb.len() < 16 << 10, "{}", bomb.len());
        assert!(
            inflate(&bomb, 1000)
                .unwrap_err()
                .contains("past 1000 bytes")
        );
        assert_eq!(inflate(&bomb, 2 << 20).unwrap().len(), (1 << 20) + 2);
    }

    /// A kernel incident (design 5.8) comes back from the store as it
    /// went in: its kind, cause, read-only devices and hung tasks.
    #[test]
    fn a_kernel_incident_round_trips() {
        use sentinel_core::signals::Cause;
        use sentinel_core::testing::{End, kernel, replay};
        use sentinel_core::time::SECOND;
        use sentinel_core::tracker::IncidentKind;
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("store")).unwrap();
        let lines = [
            kernel(
                0,
                "n1",
                "EXT4-fs (nvme0n1p1): Remounting filesystem read-only",
            ),
            kernel(
                10 * SECOND,
                "n1",
                "INFO: task containerd:1187 blocked for more than 245 seconds.",
            ),
        ];
        let inc = replay(lines, &Settings::default(), End::Finish)
            .one()
            .clone();
        assert_eq!(inc.kind(), IncidentKind::Kernel);
        s.commit(&Batch {
            incidents: vec![inc.clone()],
            ..Batch::default()
        })
        .unwrap();
        let back = s.incident(&inc.id).unwrap().unwrap();
        assert_eq!(back, inc);
        assert_eq!(back.cause(), Cause::ReadonlyFs);
        let k = back.kernel().unwrap();
        assert_eq!(k.readonly_devices, vec!["nvme0n1p1".to_string()]);
        assert_eq!(k.hung_tasks[0].blocked_secs, 245);
    }

    /// One damaged record costs itself (D32): an incident whose stream
    /// is cut, a host record and a member that are not JSON, a stream
    /// that inflates past the bound are set aside, counted and named; the
    /// rest of the history is listed and loads; a record written again
    /// since it was read is not set aside.
    #[test]
    fn a_damaged_record_is_set_aside_and_the_rest_is_served() {
        use sentinel_core::testing::{End, kubelet, replay};
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("store")).unwrap();
        let retry = |n: &str| {
            format!(
                r#"E1128 09:00:01.385427    2820 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"{n}\": Get \"https://10.0.0.1:6443/api/v1/nodes/{n}?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused""#
            )
        };
        let incidents: Vec<Incident> = ["n1", "n2", "n3", "n4"]
            .iter()
            .map(|n| {
                let lines = (0..8).map(|k| kubelet(k * sentinel_core::time::SECOND, n, &retry(n)));
                replay(lines, &Settings::default(), End::Finish)
                    .one()
                    .clone()
            })
            .collect();
        s.commit(&Batch {
            incidents: incidents.clone(),
            ..Batch::default()
        })
        .unwrap();
        s.hosts
            .insert("h1", &b"{\"named_node\":\"n1\"}"[..])
            .unwrap();
        s.hosts.insert("h2", &b"{\"named_node\":"[..]).unwrap();
        let (cut, bomb) = (&incidents[0].id, &incidents[1].id);
        let raw = s.incidents.get(cut.as_bytes()).unwrap().unwrap();
        s.incidents
            .insert(cut.as_bytes(), &raw[..raw.len() - 40])
            .unwrap();
        // Past the bound it may inflate to (64 MiB), from a few hundred KB.
        let zeros = to_record(&"0".repeat((INFLATE_MAX + 1) as usize));
        s.incidents.insert(bomb.as_bytes(), zeros).unwrap();
        let listed = s
            .incidents(&Filter::default(), &Settings::default())
            .unwrap();
        assert_eq!(listed.len(), 2, "{listed:#?}");
        assert_eq!(s.damaged(), 2);
        let loaded = s.load().unwrap();
        assert_eq!(loaded.origins.len(), 1, "h2 set aside, h1 read");
        assert_eq!(s.damaged(), 3);
        // Read again: nothing more to set aside, nothing counted twice.
        assert_eq!(
            s.incidents(&Filter::default(), &Settings::default())
                .unwrap()
                .len(),
            2
        );
        s.load().unwrap();
        assert_eq!(s.damaged(), 3);
        // A writer wrote the record again after it was read: it stays.
        let good = s
            .incidents
            .get(incidents[2].id.as_bytes())
            .unwrap()
            .unwrap();
        s.set_aside(&s.incidents, incidents[2].id.as_bytes(), b"stale", "test")
            .unwrap();
        assert_eq!(
            s.incidents.get(incidents[2].id.as_bytes()).unwrap(),
            Some(good)
        );
        assert_eq!(s.damaged(), 3);
        // Well-formed JSON of another shape is another version's record (a
        // downgrade): refused as before, never set aside.
        s.hosts.insert("h3", &b"{\"markers\":5}"[..]).unwrap();
        let e = s.load().unwrap_err();
        assert!(e.to_string().contains("record h3 is damaged"), "{e}");
        assert!(s.hosts.get("h3").unwrap().is_some());
        assert_eq!(s.damaged(), 3);
    }

    /// Held lines are records of their own: written, removed, read back
    /// by stream (a stream whose name holds `/` too), and gone with the
    /// state at a change of journal.
    #[test]
    fn held_lines_are_records_by_stream_and_go_with_the_state() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("store")).unwrap();
        let line = |msg: &str| Joined {
            entry: sentinel_core::model::Entry {
                message: msg.as_bytes().to_vec(),
                host: Some("h1".into()),
                ..sentinel_core::model::Entry::default()
            },
            continuations: 1,
            last_cursor: Some("c".into()),
            last_at: Some(5),
        };
        let put = |held: Vec<HeldWrite>| {
            s.commit(&Batch {
                held,
                ..Batch::default()
            })
            .unwrap();
        };
        put(vec![
            ("h1\0kubelet/a".into(), Some((1, line("one")))),
            ("h2\0kubelet".into(), Some((2, line("two")))),
        ]);
        put(vec![("h2\0kubelet".into(), None)]);
        let l = s.load().unwrap();
        assert_eq!(l.held, [("h1\0kubelet/a".to_string(), (1, line("one")))]);
        s.switch_source("k", ReadFrom::Head, Some(&[]), &Settings::default())
            .unwrap();
        assert!(s.load().unwrap().held.is_empty());
    }
}
