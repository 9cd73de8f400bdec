//! The incident history in sled (0.34). Every key layout lives here.
//!
//! | tree | key | value |
//! |---|---|---|
//! | `incidents` | incident id (12 hex digits) | JSON [`Incident`] |
//! | `by_node` | node, `0x00`, `opened_at` (8 bytes, big-endian, sign-flipped), id | empty |
//! | `by_time` | `opened_at` (8 bytes, as above), id | empty |
//! | `outbox` | sequence number (8 bytes, big-endian) | JSON [`OutboxEntry`] |
//! | `meta` | `schema` | `1` |
//! | | `cursor` | the journal cursor of the last entry whose effects are committed |
//! | | `state` | JSON [`PipelineState`]: tracker (open incidents), held lines, counters |
//!
//! Everything one batch of entries changes, the cursor included, is written
//! in one transaction, so the store reopens to exactly the state after the
//! last committed batch: no entry counted twice, none skipped.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

use crate::notify::OutboxEntry;
use crate::pipeline::{PipelineState, PipelineStateRef};
use crate::time::Micros;
use crate::tracker::Incident;

pub const SCHEMA: &[u8] = b"1";

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
    #[error("store {path}: record {key} is unreadable: {message}")]
    Corrupt {
        path: String,
        key: String,
        message: String,
    },
}

/// What one batch commits.
#[derive(Debug, Default)]
pub struct Batch<'a> {
    pub cursor: Option<String>,
    pub state: Option<PipelineStateRef<'a>>,
    /// Incidents opened, changed or resolved in the batch.
    pub incidents: Vec<Incident>,
    /// Alerts they raised (their `seq` is assigned here).
    pub alerts: Vec<OutboxEntry>,
}

/// Query filters (design section 3.1, `incidents`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Filter {
    pub node: Option<String>,
    pub open: bool,
    /// Incidents with a signal at or after this time.
    pub since: Option<Micros>,
    pub verdict: Option<String>,
    pub limit: Option<usize>,
}

#[derive(Clone)]
pub struct Store {
    path: PathBuf,
    db: sled::Db,
    incidents: sled::Tree,
    by_node: sled::Tree,
    by_time: sled::Tree,
    meta: sled::Tree,
    outbox: sled::Tree,
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

impl Store {
    /// Opens (creating) the store. sled takes an exclusive lock: a second
    /// opener, the running service included, gets [`StoreError::Locked`].
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| StoreError::Open {
                path: shown.clone(),
                message: format!("cannot create {}: {e}", parent.display()),
            })?;
        }
        let db = sled::Config::new()
            .path(path)
            .cache_capacity(16 << 20)
            // Commits flush explicitly; the background flusher is a backstop.
            .flush_every_ms(Some(1000))
            .open()
            .map_err(|e| match &e {
                sled::Error::Io(io)
                    if io.kind() == std::io::ErrorKind::WouldBlock
                        || io.to_string().contains("could not acquire lock") =>
                {
                    StoreError::Locked {
                        path: shown.clone(),
                    }
                }
                _ => StoreError::Sled {
                    path: shown.clone(),
                    source: e,
                },
            })?;
        let tree = |name: &str| {
            db.open_tree(name).map_err(|source| StoreError::Sled {
                path: shown.clone(),
                source,
            })
        };
        let store = Self {
            incidents: tree("incidents")?,
            by_node: tree("by_node")?,
            by_time: tree("by_time")?,
            meta: tree("meta")?,
            outbox: tree("outbox")?,
            path: path.to_path_buf(),
            db,
        };
        match store.meta.get("schema").map_err(|e| store.err(e))? {
            None => {
                store
                    .meta
                    .insert("schema", SCHEMA)
                    .map_err(|e| store.err(e))?;
            }
            Some(v) if v.as_ref() == SCHEMA => {}
            Some(v) => {
                return Err(StoreError::Open {
                    path: shown,
                    message: format!(
                        "schema {} is not the {} this version reads",
                        String::from_utf8_lossy(&v),
                        String::from_utf8_lossy(SCHEMA)
                    ),
                });
            }
        }
        Ok(store)
    }

    /// Opens an existing store only: `Ok(None)` when there is none yet.
    pub fn open_existing(path: &Path) -> Result<Option<Self>, StoreError> {
        if !path.join("db").exists() && !path.join("conf").exists() {
            return Ok(None);
        }
        Self::open(path).map(Some)
    }

    fn err(&self, source: sled::Error) -> StoreError {
        StoreError::Sled {
            path: self.path.display().to_string(),
            source,
        }
    }

    fn corrupt(&self, key: &[u8], e: &dyn std::fmt::Display) -> StoreError {
        StoreError::Corrupt {
            path: self.path.display().to_string(),
            key: String::from_utf8_lossy(key).into_owned(),
            message: e.to_string(),
        }
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The committed cursor and pipeline state, if any.
    pub fn load(&self) -> Result<(Option<String>, Option<PipelineState>), StoreError> {
        let cursor = self
            .meta
            .get("cursor")
            .map_err(|e| self.err(e))?
            .map(|v| String::from_utf8_lossy(&v).into_owned());
        let state = match self.meta.get("state").map_err(|e| self.err(e))? {
            Some(v) => Some(serde_json::from_slice(&v).map_err(|e| self.corrupt(b"state", &e))?),
            None => None,
        };
        Ok((cursor, state))
    }

    /// Writes one batch in one transaction, then makes it durable.
    pub fn commit(&self, batch: &Batch<'_>) -> Result<(), StoreError> {
        let state = batch
            .state
            .as_ref()
            .map(|s| serde_json::to_vec(s).unwrap_or_default());
        let records: Vec<Record> = batch
            .incidents
            .iter()
            .map(|i| {
                (
                    i.id.clone(),
                    serde_json::to_vec(i).unwrap_or_default(),
                    node_key(&i.node, i.opened_at, &i.id),
                    by_time_key(i.opened_at, &i.id),
                )
            })
            .collect();
        // The closure may run again on conflict: it only writes. The alerts
        // go in with the incident changes that raised them.
        let result: Result<(), TransactionError<()>> = (
            &self.incidents,
            &self.by_node,
            &self.by_time,
            &self.meta,
            &self.outbox,
        )
            .transaction(|(inc, by_node, by_time, meta, outbox)| {
                for a in &batch.alerts {
                    let seq = outbox.generate_id()?;
                    let entry = OutboxEntry { seq, ..a.clone() };
                    outbox.insert(
                        &seq.to_be_bytes(),
                        serde_json::to_vec(&entry).unwrap_or_default(),
                    )?;
                }
                for (id, value, nk, tk) in &records {
                    inc.insert(id.as_bytes(), value.as_slice())?;
                    by_node.insert(nk.as_slice(), &[] as &[u8])?;
                    by_time.insert(tk.as_slice(), &[] as &[u8])?;
                }
                if let Some(s) = &state {
                    meta.insert("state", s.as_slice())?;
                }
                if let Some(c) = &batch.cursor {
                    meta.insert("cursor", c.as_bytes())?;
                }
                Ok::<(), ConflictableTransactionError<()>>(())
            });
        match result {
            Ok(()) => {}
            Err(TransactionError::Storage(e)) => return Err(self.err(e)),
            Err(TransactionError::Abort(())) => unreachable!("the commit never aborts"),
        }
        // Durable before the caller acts on it (acks, outbox deliveries).
        self.db.flush().map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn incident(&self, id: &str) -> Result<Option<Incident>, StoreError> {
        match self.incidents.get(id).map_err(|e| self.err(e))? {
            Some(v) => Ok(Some(
                serde_json::from_slice(&v).map_err(|e| self.corrupt(id.as_bytes(), &e))?,
            )),
            None => Ok(None),
        }
    }

    /// Incidents matching `f`, newest first.
    pub fn incidents(
        &self,
        f: &Filter,
        settings: &crate::tracker::Settings,
    ) -> Result<Vec<Incident>, StoreError> {
        let keys: Box<dyn Iterator<Item = sled::Result<(sled::IVec, sled::IVec)>>> = match &f.node {
            Some(node) => {
                let mut prefix = node.as_bytes().to_vec();
                prefix.push(0);
                Box::new(self.by_node.scan_prefix(prefix).rev())
            }
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
            if let Some(v) = &f.verdict {
                if i.verdict(settings).as_str() != v {
                    continue;
                }
            }
            out.push(i);
            if f.limit.is_some_and(|l| out.len() >= l) {
                break;
            }
        }
        Ok(out)
    }

    /// Removes resolved incidents that ended before `before`. Returns how many.
    pub fn prune(&self, before: Micros) -> Result<usize, StoreError> {
        let mut removed = 0;
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
            let nk = node_key(&i.node, i.opened_at, &i.id);
            let r: Result<(), TransactionError<()>> =
                (&self.incidents, &self.by_node, &self.by_time).transaction(
                    |(inc, by_node, by_time)| {
                        inc.remove(id.as_bytes())?;
                        by_node.remove(nk.as_slice())?;
                        by_time.remove(&k)?;
                        Ok::<(), ConflictableTransactionError<()>>(())
                    },
                );
            match r {
                Ok(()) => removed += 1,
                Err(TransactionError::Storage(e)) => return Err(self.err(e)),
                Err(TransactionError::Abort(())) => {}
            }
        }
        if removed > 0 {
            self.db.flush().map_err(|e| self.err(e))?;
        }
        Ok(removed)
    }

    /// The outbox, oldest first.
    pub fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        let mut out = Vec::new();
        for kv in &self.outbox {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            out.push(serde_json::from_slice(&v).map_err(|e| self.corrupt(&k, &e))?);
        }
        Ok(out)
    }

    /// Rewrites outbox entries (attempts, next attempt, last error).
    pub fn outbox_update(&self, entries: &[OutboxEntry]) -> Result<(), StoreError> {
        let mut b = sled::Batch::default();
        for e in entries {
            b.insert(
                &e.seq.to_be_bytes(),
                serde_json::to_vec(e).unwrap_or_default(),
            );
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

    /// Records the first delivery of an alert for a resolved incident (open
    /// ones are the tracker's and are written with the next batch).
    pub fn mark_alerted(&self, id: &str, at: Micros) -> Result<(), StoreError> {
        let Some(mut i) = self.incident(id)? else {
            return Ok(());
        };
        if i.alerted_at.is_none() {
            i.alerted_at = Some(at);
            self.incidents
                .insert(id.as_bytes(), serde_json::to_vec(&i).unwrap_or_default())
                .map_err(|e| self.err(e))?;
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_keys_sort_in_time_order() {
        let ts = [-5i64, 0, 1, 1_700_000_000_000_000];
        let keys: Vec<[u8; 8]> = ts.iter().map(|&t| time_key(t)).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
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
