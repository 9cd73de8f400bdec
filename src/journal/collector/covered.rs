//! Which copy of each file of a group a worker read, and how far: a file
//! that comes back in another inode with more entries (a host's rotated
//! file synced after its newer one) has entries its handle never saw,
//! behind the group's position. Following only; in memory.

use std::collections::{HashMap, HashSet};
use std::path::Path;

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
    /// When noted, in notes made (the latest is the highest).
    noted: u64,
}

/// Per group, per file ID: see the module doc.
#[derive(Debug, Default)]
pub(super) struct Covers {
    groups: HashMap<Text, HashMap<String, Covered>>,
    notes: u64,
}

impl Covers {
    /// After a read through a handle whose files held `ids` (see
    /// `groups::identities`) and whose headers now say `ends` (in the same
    /// order), to `done` (the position's cursor; `at_end`: to the group's
    /// end): how far each file was read. To the end, all
    /// of it; short of it, a file of the position's sequence up to the
    /// position, one of another sequence whose newest entry is older than
    /// the position all of it, any other not noted (its last note stays).
    /// A file replaced under its name since the handle was opened is
    /// another file: not noted.
    pub(super) fn note(
        &mut self,
        key: &Text,
        ids: &[(u64, u64)],
        ends: &[Option<Ends>],
        done: Option<&str>,
        at_end: bool,
    ) {
        let noted = self.groups.entry(key.clone()).or_default();
        self.notes += 1;
        let now = self.notes;
        let pos = done.and_then(|c| Some((seqnum(c)?, i64::try_from(realtime(c)?).ok()?)));
        let mut present = HashSet::new();
        for (held, e) in ids.iter().zip(ends) {
            let Some(e) = e.clone().filter(|e| e.identity == *held) else {
                continue;
            };
            present.insert(e.id.clone());
            let read = match &pos {
                _ if at_end => Some(e.tail_seqnum),
                Some(((sid, n), _)) if sid.eq_ignore_ascii_case(&e.seqnum_id) => {
                    Some(e.tail_seqnum.min(*n))
                }
                Some((_, t)) if e.tail_realtime.is_some_and(|r| r < *t) => Some(e.tail_seqnum),
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
            self.notes += 1;
            let now = self.notes;
            note_at(self.groups.entry(key.clone()).or_default(), e, tail, now);
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
fn note_at(noted: &mut HashMap<String, Covered>, e: Ends, read: u64, now: u64) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ends(id: &str, sid: &str, tail: u64, at: i64, inode: u64) -> Ends {
        Ends {
            id: id.into(),
            seqnum_id: sid.into(),
            tail_seqnum: tail,
            tail_realtime: Some(at),
            identity: (1, inode),
        }
    }

    /// How far a job read each file: to the end, all; short of it, a file
    /// of the position's sequence to the position, one of another
    /// sequence all of it if older than the position, else its last note
    /// (a job stopped after its batches had its unread entries counted as
    /// read, and their copy never caught up).
    #[test]
    fn a_job_short_of_the_end_notes_what_it_read() {
        let key = Text::from("remote-h");
        let mut c = Covers::default();
        let a = ends("a", "s1", 100, 1_000, 10);
        let b = ends("b", "s2", 40, 5_000, 20);
        let ids = [(1, 10), (1, 20)];
        // Short of the end, the position at a's entry 50 (time 900).
        let pos = "s=s1;i=32;b=0;m=0;t=384;x=0";
        c.note(
            &key,
            &ids,
            &[Some(a.clone()), Some(b.clone())],
            Some(pos),
            false,
        );
        let grown = |c: &Covers, e: &Ends| c.grown(&key, &e.id, e);
        // a's copy in another inode with 120 entries: 51.. are unread.
        assert_eq!(grown(&c, &ends("a", "s1", 120, 1_100, 11)), Some(50));
        // b (another sequence, newer than the position): not noted.
        assert!(!c.knows(&key, "b"));
        // To the end: all of both.
        c.note(&key, &ids, &[Some(a.clone()), Some(b)], None, true);
        assert_eq!(grown(&c, &ends("a", "s1", 120, 1_100, 11)), Some(100));
        assert_eq!(grown(&c, &ends("b", "s2", 41, 5_100, 21)), Some(40));
        // The same inode, or no more entries: nothing to catch up.
        assert_eq!(grown(&c, &ends("a", "s1", 120, 1_100, 10)), None);
        assert_eq!(grown(&c, &ends("a", "s1", 100, 1_000, 11)), None);
        // A shorter, older copy read since does not unread the rest.
        let short = ends("a", "s1", 60, 800, 12);
        c.note(&key, &[(1, 12)], &[Some(short)], None, true);
        assert_eq!(grown(&c, &ends("a", "s1", 120, 1_100, 13)), Some(100));
        // A file replaced while the handle was opened is not noted.
        c.note(
            &key,
            &[(0, 0)],
            &[Some(ends("z", "s9", 5, 1, 30))],
            None,
            true,
        );
        assert!(!c.knows(&key, "z"));
    }

    /// Files gone are remembered up to a bound, the latest noted kept.
    #[test]
    fn files_gone_are_remembered_up_to_a_bound() {
        let key = Text::from("remote-h");
        let mut c = Covers::default();
        for k in 0..40u64 {
            let e = ends(&format!("f{k}"), "s", k + 1, 1, 100 + k);
            c.note(&key, &[(1, 100 + k)], &[Some(e)], None, true);
        }
        assert_eq!(c.ids(&key).count(), 1 + ABSENT_KEPT);
        assert!(c.knows(&key, "f39") && c.knows(&key, "f23"));
        assert!(!c.knows(&key, "f22"));
    }
}
