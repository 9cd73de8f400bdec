//! The silences tree: written by the query server (add, expire) and by
//! ingest's pruning; read, through a parsed copy, by every delivery pass,
//! query and scrape.

use super::{Silence, Store, StoreError, to_json};
use sentinel_core::time::Micros;

impl Store {
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
            if let Some(s) = self.readable(&self.silences, &k, &v)? {
                out.push(s);
            }
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

    /// Writes many silences with one flush (tests that need thousands).
    #[cfg(test)]
    pub(crate) fn silence_put_many(&self, all: &[Silence]) -> Result<(), StoreError> {
        self.change_silences(|| {
            let mut b = sled::Batch::default();
            for s in all {
                b.insert(s.id.as_bytes(), to_json(s));
            }
            self.silences.apply_batch(b).map_err(|e| self.err(e))
        })?;
        self.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
