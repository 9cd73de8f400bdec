//! Damaged records (D32): a record whose bytes cannot be read costs only
//! itself. It is set aside under the `damaged` tree, as it was, in one
//! transaction with its removal; named, counted, and the rest of the
//! history served.

use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

use serde::Deserialize;

use super::encoding::{Unreadable, decode};
use super::{Store, StoreError};

impl Store {
    /// A record of `tree` read back; one whose bytes are damaged is set
    /// aside (see [`Store::set_aside`]) and is `None`: one damaged record
    /// costs itself, never the rest of the history. One of another
    /// version's shape is an error, as [`Store::json`]'s.
    pub(super) fn readable<T: for<'de> Deserialize<'de>>(
        &self,
        tree: &sled::Tree,
        key: &[u8],
        v: &[u8],
    ) -> Result<Option<T>, StoreError> {
        match decode(v) {
            Ok(t) => Ok(Some(t)),
            Err(Unreadable::Damaged(e)) => {
                self.set_aside(tree, key, v, &e)?;
                Ok(None)
            }
            Err(e @ Unreadable::Foreign(_)) => Err(self.corrupt(key, &e)),
        }
    }

    /// Moves a record that cannot be read (`why`) out of `tree` into
    /// `damaged`, as it was, in one transaction, and only while it is still
    /// those bytes (a writer may have written it again meanwhile); says so
    /// in the log, naming it. `status` and the metrics count them.
    pub(super) fn set_aside(
        &self,
        tree: &sled::Tree,
        key: &[u8],
        v: &[u8],
        why: &str,
    ) -> Result<(), StoreError> {
        let name = String::from_utf8_lossy(&tree.name()).into_owned();
        let mut aside = name.as_bytes().to_vec();
        aside.push(0);
        aside.extend_from_slice(key);
        let r: Result<bool, TransactionError<()>> = (tree, &self.damaged).transaction(|(t, d)| {
            if t.get(key)?.as_deref() != Some(v) {
                return Ok(false);
            }
            t.remove(key)?;
            d.insert(aside.as_slice(), v)?;
            Ok::<bool, ConflictableTransactionError<()>>(true)
        });
        let moved = match r {
            Ok(moved) => moved,
            Err(TransactionError::Abort(())) => false,
            Err(TransactionError::Storage(e)) => return Err(self.err(e)),
        };
        if moved {
            let words = format!(
                "record {} of {name} is damaged ({why}): set aside in the store's `damaged` \
                 records; the rest of the history is served",
                String::from_utf8_lossy(key)
            );
            tracing::warn!(store = %self.path.display(), "{words}");
            self.set_aside
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(words);
            self.flush()?;
        }
        Ok(())
    }

    /// What this process set aside since the last call, in words.
    pub fn take_set_aside(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .set_aside
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Records set aside because they could not be read.
    #[must_use]
    pub fn damaged(&self) -> u64 {
        self.damaged.len() as u64
    }
}
