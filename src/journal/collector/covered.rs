//! Which copy of each file of a group a worker read, and how far: a file
//! that comes back in another inode with more entries (a host's rotated
//! file synced after its newer one) has entries its handle never saw,
//! behind the group's position. Following only; in memory.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::groups::{Ends, header_ends};
use crate::journal::Text;
use crate::journal::handle::{realtime_of as realtime, seqnum};

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
    /// `groups::identities`), to `done` (the position's cursor; `at_end`:
    /// to the group's end): how far each file was read. To the end, all
    /// of it; short of it, a file of the position's sequence up to the
    /// position, one of another sequence whose newest entry is older than
    /// the position all of it, any other not noted (its last note stays).
    /// A file replaced under its name since the handle was opened is
    /// another file: not noted.
    pub(super) fn note(
        &mut self,
        key: &Text,
        files: &[PathBuf],
        ids: &[(u64, u64)],
        done: Option<&str>,
        at_end: bool,
    ) {
        let noted = self.groups.entry(key.clone()).or_default();
        let now = Instant::now();
        let pos = done.and_then(|c| Some((seqnum(c)?, realtime(c)?)));
        let mut present = HashSet::new();
        for (f, held) in files.iter().zip(ids) {
            let Some(e) = header_ends(f).filter(|e| e.identity == *held) else {
                continue;
            };
            present.insert(e.id.clone());
            let read = match &pos {
                _ if at_end => Some(e.tail_seqnum),
                Some(((sid, n), _)) if sid.eq_ignore_ascii_case(&e.seqnum_id) => {
                    Some(e.tail_seqnum.min(*n))
                }
                Some((_, t))
                    if e.tail_realtime
                        .is_some_and(|r| u64::try_from(r).is_ok_and(|r| r < *t)) =>
                {
                    Some(e.tail_seqnum)
                }
                _ => None,
            };
            if let Some(read) = read {
                note_at(noted, e, read, now);
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

    /// One file read late, as `e` says it was before (noted only if it is
    /// still that file: one replaced meanwhile is another).
    pub(super) fn note_late(&mut self, key: &Text, file: &Path, e: Ends) {
        if header_ends(file).is_some_and(|now| now.identity == e.identity) {
            let tail = e.tail_seqnum;
            note_at(
                self.groups.entry(key.clone()).or_default(),
                e,
                tail,
                Instant::now(),
            );
        }
    }

    /// The IDs of the group's files remembered (those there and those
    /// gone lately): read, so never read again from their head as new.
    pub(super) fn ids(&self, key: &Text) -> impl Iterator<Item = &String> {
        self.groups.get(key).into_iter().flat_map(HashMap::keys)
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

/// Notes file `e` as read to entry `read`: never less than noted before
/// (an older, shorter copy of it read since does not unread the rest).
fn note_at(noted: &mut HashMap<String, Covered>, e: Ends, read: u64, now: Instant) {
    let tail_seqnum = noted
        .get(&e.id)
        .map_or(read, |was| was.tail_seqnum.max(read));
    noted.insert(
        e.id,
        Covered {
            identity: e.identity,
            tail_seqnum,
            noted: now,
        },
    );
}
