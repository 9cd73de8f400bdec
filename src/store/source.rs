//! Which journal the store's cursors belong to, and where each journal
//! read before was left (first-hour N15): a change of `[journal]` keeps
//! the old journal's position, and a change back resumes there, so what
//! was read (and mailed) is not read (and mailed) again, and what that
//! journal got meanwhile is read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

use sentinel_core::model::{GroupFiles, Position};
use sentinel_core::tracker::{Incident, Settings};

use super::encoding::{decode, to_json, to_record};
use super::{HELD, ReadFrom, Stats, StatsDelta, Store, StoreError};

/// Journals whose positions are kept at most: past it, the one left
/// longest ago goes (a change back to it reads it from `start_at`).
pub(crate) const LEFT_MAX: usize = 16;

/// `meta` keys of the journals left: `left/SOURCE`.
const LEFT: &[u8] = b"left/";

/// Where a journal was left.
#[derive(Debug, Serialize, Deserialize)]
struct LeftAt {
    cursor: Option<String>,
    #[serde(default)]
    groups: BTreeMap<String, String>,
    #[serde(default)]
    files: BTreeMap<String, GroupFiles>,
    origin: ReadFrom,
    /// The order journals were left in.
    seq: u64,
}

/// `meta` keys of a collector's groups' files: `files/GROUP`.
const FILES: &[u8] = b"files/";

pub(super) fn files_key(group: &str) -> Vec<u8> {
    [FILES, group.as_bytes()].concat()
}

fn left_key(source: &[u8]) -> Vec<u8> {
    [LEFT, source].concat()
}

impl Store {
    /// Records the journal the cursors belong to. With `closed`, the
    /// journal changed: in one transaction the old journal's cursors are
    /// kept aside as where it was left, its pipeline state is forgotten
    /// (it means nothing in another journal) and its open incidents are
    /// written as they were closed; a journal left before gets its
    /// cursors and origin back, and is returned (else `origin` is the new
    /// journal's).
    pub fn switch_source(
        &self,
        source: &str,
        origin: ReadFrom,
        closed: Option<&[Incident]>,
        settings: &Settings,
    ) -> Result<Option<(Position, ReadFrom)>, StoreError> {
        let mut forget: Vec<sled::IVec> = Vec::new();
        let mut members: Vec<sled::IVec> = Vec::new();
        let mut left: Option<(Vec<u8>, Vec<u8>)> = None;
        let mut back: Option<LeftAt> = None;
        if closed.is_some() {
            // The transactional view has no scans; this process holds the
            // store's lock, so the keys cannot change in between.
            let was = self.position_to_leave(&mut forget)?;
            // The held lines and the endpoint groups go with the state
            // they belong to.
            for kv in self.meta.scan_prefix(HELD) {
                forget.push(kv.map_err(|e| self.err(e))?.0);
            }
            forget.push("state".into());
            for kv in &self.members {
                members.push(kv.map_err(|e| self.err(e))?.0);
            }
            let mut kept: Vec<(u64, sled::IVec)> = Vec::new();
            for kv in self.meta.scan_prefix(LEFT) {
                let (k, v) = kv.map_err(|e| self.err(e))?;
                // One that cannot be read is the oldest, and no way back.
                let at = decode::<LeftAt>(&v).ok();
                if k[LEFT.len()..] == *source.as_bytes() {
                    back = at;
                    forget.push(k);
                } else {
                    kept.push((at.map_or(0, |l| l.seq), k));
                }
            }
            let old = self.meta.get("source").map_err(|e| self.err(e))?;
            if let Some(old) = old.filter(|o| !was.is_empty() && **o != *source.as_bytes()) {
                let was_from = self
                    .meta
                    .get("origin")
                    .map_err(|e| self.err(e))?
                    .and_then(|v| decode(&v).ok())
                    .unwrap_or(ReadFrom::Head);
                let seq = kept.iter().map(|(s, _)| s + 1).max().unwrap_or(0);
                let at = LeftAt {
                    cursor: was.cursor,
                    groups: was.groups,
                    files: was.files,
                    origin: was_from,
                    seq,
                };
                left = Some((left_key(&old), to_json(&at)));
                // Within the bound: the ones left longest ago go.
                kept.sort();
                let over = (kept.len() + 1).saturating_sub(LEFT_MAX);
                forget.extend(kept.into_iter().take(over).map(|(_, k)| k));
            }
        }
        let origin = back.as_ref().map_or(origin, |b| b.origin);
        let closed = closed.unwrap_or_default();
        let delta = StatsDelta {
            opened: 0,
            forgotten: 0,
            resolved: closed.iter().map(|i| i.verdict(settings)).collect(),
        };
        let result: Result<(), TransactionError<()>> =
            (&self.incidents, &self.open, &self.members, &self.meta).transaction(
                |(inc, open, members_t, meta)| {
                    for i in closed {
                        inc.insert(i.id.as_bytes(), to_record(i))?;
                        open.remove(i.id.as_bytes())?;
                    }
                    for k in &members {
                        members_t.remove(k)?;
                    }
                    for k in &forget {
                        meta.remove(k)?;
                    }
                    if let Some((k, v)) = &left {
                        meta.insert(k.as_slice(), v.as_slice())?;
                    }
                    if let Some(b) = &back {
                        if let Some(c) = &b.cursor {
                            meta.insert("cursor", c.as_bytes())?;
                        }
                        for (g, c) in &b.groups {
                            meta.insert(format!("cursor/{g}").as_bytes(), c.as_bytes())?;
                        }
                        for (g, f) in &b.files {
                            meta.insert(files_key(g), to_json(f))?;
                        }
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
                    meta.insert("origin", to_json(&origin))?;
                    Ok::<(), ConflictableTransactionError<()>>(())
                },
            );
        self.finish_txn(result)?;
        self.flush()?;
        Ok(back.map(|b| {
            (
                Position {
                    cursor: b.cursor,
                    groups: b.groups,
                    files: b.files,
                },
                b.origin,
            )
        }))
    }

    /// The files of each collector's group, as committed (see
    /// [`GroupFiles`]).
    pub(super) fn group_files(&self) -> Result<BTreeMap<String, GroupFiles>, StoreError> {
        let mut files = BTreeMap::new();
        for kv in self.meta.scan_prefix(FILES) {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            if let Some(f) = self.readable::<GroupFiles>(&self.meta, &k, &v)? {
                files.insert(String::from_utf8_lossy(&k[FILES.len()..]).into_owned(), f);
            }
        }
        Ok(files)
    }

    /// The cursors and files of the journal being left, their keys added
    /// to `forget`.
    fn position_to_leave(&self, forget: &mut Vec<sled::IVec>) -> Result<Position, StoreError> {
        let mut was = Position::default();
        for kv in self.meta.scan_prefix(b"cursor") {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            let v = String::from_utf8_lossy(&v).into_owned();
            match k.strip_prefix(b"cursor/") {
                Some(g) => {
                    was.groups
                        .insert(String::from_utf8_lossy(g).into_owned(), v);
                }
                None if &*k == b"cursor" => was.cursor = Some(v),
                None => {}
            }
            forget.push(k);
        }
        for kv in self.meta.scan_prefix(FILES) {
            let (k, v) = kv.map_err(|e| self.err(e))?;
            if let Ok(f) = decode::<GroupFiles>(&v) {
                was.files
                    .insert(String::from_utf8_lossy(&k[FILES.len()..]).into_owned(), f);
            }
            forget.push(k);
        }
        Ok(was)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal changed back to gets its cursors and origin back; the
    /// journals left are kept at most [`LEFT_MAX`], the one left longest
    /// ago going first.
    #[test]
    fn a_journal_left_is_resumed_and_the_journals_kept_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("store")).unwrap();
        let settings = Settings::default();
        let at = |c: &str| {
            s.meta.insert("cursor", c.as_bytes()).unwrap();
        };
        s.switch_source("a", ReadFrom::Since(7), None, &settings)
            .unwrap();
        at("ca");
        s.meta.insert("cursor/h1", &b"ca-h1"[..]).unwrap();
        let h1_files = GroupFiles {
            ids: vec!["f1".into()],
            late: Some(sentinel_core::model::LateRead {
                file: "f0".into(),
                taken: 3,
            }),
        };
        s.meta.insert(files_key("h1"), to_json(&h1_files)).unwrap();
        assert_eq!(
            s.switch_source("b", ReadFrom::Head, Some(&[]), &settings)
                .unwrap(),
            None,
            "b was never read"
        );
        assert_eq!(s.meta.get("cursor").unwrap(), None);
        assert_eq!(s.meta.get(files_key("h1")).unwrap(), None);
        at("cb");
        let (back, from) = s
            .switch_source("a", ReadFrom::Head, Some(&[]), &settings)
            .unwrap()
            .unwrap();
        assert_eq!(back.cursor.as_deref(), Some("ca"));
        assert_eq!(back.groups.get("h1").map(String::as_str), Some("ca-h1"));
        assert_eq!(
            back.files.get("h1"),
            Some(&h1_files),
            "the files go with the cursors"
        );
        assert!(s.meta.get(files_key("h1")).unwrap().is_some());
        assert_eq!(from, ReadFrom::Since(7));
        assert_eq!(s.meta.get("cursor").unwrap().as_deref(), Some(&b"ca"[..]));
        assert_eq!(s.meta.scan_prefix(LEFT).count(), 1, "b is kept, a is not");
        for n in 0..LEFT_MAX + 4 {
            at(&format!("c{n}"));
            s.switch_source(&format!("j{n}"), ReadFrom::Head, Some(&[]), &settings)
                .unwrap();
        }
        assert_eq!(s.meta.scan_prefix(LEFT).count(), LEFT_MAX);
        assert!(
            s.meta.get(left_key(b"b")).unwrap().is_none(),
            "left longest ago"
        );
        let newest = LEFT_MAX + 2;
        assert!(
            s.meta
                .get(left_key(format!("j{newest}").as_bytes()))
                .unwrap()
                .is_some()
        );
    }
}
