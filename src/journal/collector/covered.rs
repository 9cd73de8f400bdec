//! Which copy of each file of a group a worker read, and how far: a file
//! that comes back in another inode with more entries (a host's rotated
//! file synced after its newer one) has entries its handle never saw,
//! behind the group's position. Following only; in memory.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use super::groups::{Ends, header_ends};
use crate::journal::Text;

/// Files of a group no longer there that are remembered, the most recently
/// noted first: a synced host's file is gone (its name taken by the newer
/// file) until its rotated copy comes; older ones are forgotten.
const ABSENT_KEPT: usize = 16;

#[derive(Debug, Clone, Copy)]
struct Covered {
    /// The file (device, inode) that held it.
    identity: (u64, u64),
    /// Its newest entry's number then.
    tail_seqnum: u64,
    noted: Instant,
}

/// Per group, per file ID: see the module doc.
#[derive(Debug, Default)]
pub(super) struct Covers {
    groups: HashMap<Text, HashMap<String, Covered>>,
}

impl Covers {
    /// After a read through a handle over `files`, which held `ids` (see
    /// `groups::identities`): each as far as it goes now. A file replaced
    /// under its name since the handle was opened is another file: not
    /// noted.
    pub(super) fn note(&mut self, key: &Text, files: &[PathBuf], ids: &[(u64, u64)]) {
        let noted = self.groups.entry(key.clone()).or_default();
        let now = Instant::now();
        let mut present = HashSet::new();
        for (f, held) in files.iter().zip(ids) {
            if let Some(e) = header_ends(f).filter(|e| e.identity == *held) {
                present.insert(e.id.clone());
                noted.insert(
                    e.id,
                    Covered {
                        identity: e.identity,
                        tail_seqnum: e.tail_seqnum,
                        noted: now,
                    },
                );
            }
        }
        while noted.len() > present.len() + ABSENT_KEPT {
            let oldest = noted
                .iter()
                .filter(|(id, _)| !present.contains(*id))
                .min_by_key(|(_, c)| c.noted)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => noted.remove(&id),
                None => break,
            };
        }
    }

    /// One file read whole to the group's position (a late one).
    pub(super) fn note_one(&mut self, key: &Text, e: Ends) {
        self.groups.entry(key.clone()).or_default().insert(
            e.id,
            Covered {
                identity: e.identity,
                tail_seqnum: e.tail_seqnum,
                noted: Instant::now(),
            },
        );
    }

    /// Whether file `id` of the group was read (and is remembered).
    pub(super) fn knows(&self, key: &Text, id: &str) -> bool {
        self.groups.get(key).is_some_and(|g| g.contains_key(id))
    }

    /// File `id`, now as `e` says: in another inode, with entries numbered
    /// after those read: after which.
    pub(super) fn grown(&self, key: &Text, id: &str, e: &Ends) -> Option<u64> {
        let was = self.groups.get(key)?.get(id)?;
        (e.identity != was.identity && e.tail_seqnum > was.tail_seqnum).then_some(was.tail_seqnum)
    }

    pub(super) fn forget(&mut self, key: &Text) {
        self.groups.remove(key);
    }
}
