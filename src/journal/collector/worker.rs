//! A worker thread: reads the groups the coordinator gives it, each through
//! a handle of its own, and sends their batches straight to the consumer.
//! A group is always read by the same worker, which keeps a few handles
//! open (the most recently used, [`OPEN_PER_WORKER`]) and closes idle ones,
//! so memory and open files stay flat in the number of hosts.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use systemd::journal::{Journal, OpenFilesOptions};
use tokio::sync::mpsc;

use super::covered::Covers;
use super::groups::{Ends, header_ends};
use super::{Done, Event, Job};
use crate::journal::census::{Count, Walked, count, file_id, seqnum_id};
use crate::journal::handle::{
    Intact, Interner, Start, add_terms, damaged, find_cursor, in_match, present_terms, read_entry,
    realtime_of, resume_whole, seek, seqnum, terms, unfiltered,
};
use crate::journal::protocol::{Mode, ReadError, ReaderEvent, Warning};
use crate::journal::{Entry, EntryFilter, Text};
use sentinel_core::model::{GroupFiles, LateRead};

/// Handles a worker keeps open; the least recently used is closed first.
const OPEN_PER_WORKER: usize = 16;
/// A handle unused this long is closed. An idle worker wakes this often to
/// look (its one timer).
const IDLE_CLOSE: Duration = Duration::from_secs(30);
/// Batches one job reads before the group goes to the back of the queue:
/// a host with a long backlog does not hold up the others.
const BATCHES_PER_JOB: usize = 16;

struct OpenGroup {
    j: Journal,
    files: Vec<PathBuf>,
    /// Which file each of `files` named when the handle was opened: one
    /// replaced under its name since (a sync tool's copy) is reopened.
    ids: Vec<(u64, u64)>,
    last_used: Instant,
    intact: Intact,
    /// Read without the match (libsystemd gave up on a file through it).
    whole: bool,
    /// The host its entries name (`_HOSTNAME`), once known.
    host: Option<Text>,
    /// The newest time its files' headers said, as last sent.
    reached: Option<sentinel_core::time::Micros>,
}

/// Why a read stopped early.
enum Stop {
    /// The consumer is gone.
    Closed,
    Failed(ReadError),
}

impl Done {
    /// Records why a read stopped early.
    fn stopped(&mut self, stop: Stop) {
        match stop {
            Stop::Closed => self.closed = true,
            Stop::Failed(e) => self.error = Some(e),
        }
    }
}

impl From<ReadError> for Stop {
    fn from(e: ReadError) -> Self {
        Stop::Failed(e)
    }
}

/// One job's reading of one group.
struct Pass<'a> {
    key: &'a Text,
    start: &'a Start,
    /// The cursor `next()` may land on first, which was read before.
    skip: Option<String>,
    batch: Vec<Entry>,
    sent: usize,
    /// The group's count while it is read (out of `Worker::walked`: no
    /// lookup per entry).
    walked: Option<Walked>,
}

pub(super) struct Worker {
    pub(super) filter: EntryFilter,
    /// Following: every term of the filter stays (see `present_terms`).
    pub(super) mode: Mode,
    pub(super) batch: usize,
    pub(super) tx: mpsc::Sender<ReaderEvent>,
    pub(super) done: std_mpsc::Sender<Event>,
    /// A one-time read from the head may read a group of many files on two
    /// threads (see [`super::split`]), in chunks of this many bytes: `scan`.
    pub(super) split: Option<u64>,
    open: HashMap<Text, OpenGroup>,
    /// Groups read from their head and not yet to their end: what was
    /// walked, compared at the end with what the files record (`census`).
    /// Kept apart from the handles, which are closed and reopened after
    /// the group's cursor in between.
    walked: HashMap<Text, Walked>,
    /// The IDs of the files (their headers' file IDs, the same under any
    /// name) each group's handle was last opened over: a file new to the
    /// group that appears later is read from its head up to the group's
    /// position (see `catch_up`).
    files_read: HashMap<Text, HashSet<String>>,
    /// A late file partly read, per group: how many of its entries were
    /// sent (as committed at the start, then as sent), so that a read that
    /// failed or a restart goes on after them.
    late_taken: HashMap<Text, LateRead>,
    /// Following: for each group's file (by file ID), which file held it
    /// and its newest entry's number, as last read through a handle (also
    /// for a while after it is gone: see [`Covers`]). A copy of it
    /// that comes back under another inode with more entries (a host's
    /// rotated file synced after its newer one) has those entries read to
    /// the group's position (see `look_at_files`): the handle never saw
    /// them, and they are before its position.
    covered: Covers,
    names: Interner,
}

/// A file read alone up to the group's position (see
/// [`Worker::catch_up`]): new to the group, or (`after`) a known one's
/// entries numbered after that.
struct LateFile {
    path: PathBuf,
    id: String,
    after: Option<u64>,
    /// Its header as it was when judged late.
    ends: Option<Ends>,
}

impl Worker {
    pub(super) fn new(
        filter: EntryFilter,
        mode: Mode,
        batch: usize,
        tx: mpsc::Sender<ReaderEvent>,
        done: std_mpsc::Sender<Event>,
    ) -> Self {
        Self {
            filter,
            mode,
            batch,
            tx,
            done,
            split: None,
            open: HashMap::new(),
            walked: HashMap::new(),
            files_read: HashMap::new(),
            late_taken: HashMap::new(),
            covered: Covers::default(),
            names: Interner::default(),
        }
    }

    pub(super) fn run(mut self, jobs: &std_mpsc::Receiver<Job>) {
        loop {
            match jobs.recv_timeout(IDLE_CLOSE) {
                Ok(Job::Read {
                    key,
                    files,
                    start,
                    check_loss,
                    known,
                }) => {
                    if let Some(k) = known {
                        self.resume_files(&key, k);
                    }
                    let done = self.read(&key, files, &start, check_loss);
                    let closed = done.closed;
                    if self.done.send(Event::Done(done)).is_err() || closed {
                        return;
                    }
                }
                Ok(Job::Forget(key)) => {
                    self.open.remove(&key);
                    self.walked.remove(&key);
                    self.files_read.remove(&key);
                    self.late_taken.remove(&key);
                    self.covered.forget(&key);
                }
                Err(std_mpsc::RecvTimeoutError::Timeout) => {}
                Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
            }
            // Close what has been idle, and keep at most a few open.
            self.open.retain(|_, o| o.last_used.elapsed() < IDLE_CLOSE);
            while self.open.len() > OPEN_PER_WORKER {
                if let Some(oldest) = self
                    .open
                    .iter()
                    .min_by_key(|(_, o)| o.last_used)
                    .map(|(k, _)| k.clone())
                {
                    self.open.remove(&oldest);
                }
            }
        }
    }

    fn open_group(
        &self,
        files: &[PathBuf],
        start: &Start,
        filtered: bool,
    ) -> Result<Journal, ReadError> {
        let mut j = OpenFilesOptions::default()
            .open_files(files.iter().map(|p| p.as_os_str().as_encoded_bytes()))
            .map_err(ReadError::Open)?;
        j.set_data_threshold(0).map_err(ReadError::DataThreshold)?;
        if filtered {
            let terms = if self.mode.follows() {
                terms(&self.filter)
            } else {
                present_terms(
                    &mut j,
                    &self.filter,
                    matches!(start, Start::Head).then_some(files),
                )
            };
            add_terms(&mut j, &terms).map_err(ReadError::Matches)?;
        }
        seek(&mut j, start).map_err(|source| ReadError::Seek {
            cursor: start.cursor().map(str::to_string),
            source,
        })?;
        Ok(j)
    }

    /// Entries removed unread between `cursor` and what the files hold now.
    fn lost_since(&self, files: &[PathBuf], cursor: &str) -> u64 {
        let Some((id, upto)) = seqnum(cursor) else {
            return 0;
        };
        let Ok(mut probe) = self.open_group(files, &Start::Head, false) else {
            return 0;
        };
        if !matches!(probe.next(), Ok(n) if n > 0) {
            return 0;
        }
        match probe.cursor().ok().as_deref().and_then(seqnum) {
            Some((hid, head)) if hid == id && head > upto + 1 => head - upto - 1,
            _ => 0,
        }
    }

    fn send(&self, ev: ReaderEvent) -> Result<(), Stop> {
        self.tx.blocking_send(ev).map_err(|_| Stop::Closed)
    }

    /// A batch to the consumer; the names of the next are new copies
    /// (see [`Interner::new_batch`]).
    fn send_entries(&mut self, batch: Vec<Entry>) -> Result<(), Stop> {
        self.names.new_batch();
        self.send(ReaderEvent::Entries(batch))
    }

    /// A new handle on the group's files (they changed, or none was open),
    /// after counting what was removed unread.
    fn reopen(
        &self,
        files: Vec<PathBuf>,
        start: &Start,
        check_loss: bool,
    ) -> Result<OpenGroup, Stop> {
        if let (true, Start::After(c)) = (check_loss, start) {
            let lost = self.lost_since(&files, c);
            if lost > 0 {
                self.send(ReaderEvent::Lost(lost))?;
            }
        }
        let mut ids = super::groups::identities(&files);
        let j = self.open_group(&files, start, true)?;
        // A file replaced while it was opened: which one the handle holds
        // is not known, so it is none (reopened next time, not noted).
        for (id, now) in ids.iter_mut().zip(super::groups::identities(&files)) {
            if *id != now {
                *id = (0, 0);
            }
        }
        Ok(OpenGroup {
            intact: Intact::new(&j),
            whole: false,
            j,
            files,
            ids,
            last_used: Instant::now(),
            host: None,
            reached: None,
        })
    }

    fn read(&mut self, key: &Text, files: Vec<PathBuf>, start: &Start, check_loss: bool) -> Done {
        let mut done = Done {
            key: key.clone(),
            cursor: None,
            at_end: true,
            error: None,
            closed: false,
        };
        let reuse = self
            .open
            .get(key)
            .is_some_and(|o| o.files == files && o.ids == super::groups::identities(&files));
        if let (Some(bytes), false, Start::Head) = (self.split, reuse, start) {
            if let Some(chunks) = super::split::chunks(&files, bytes) {
                self.read_split(key, &files, chunks, &mut done);
                return done;
            }
        }
        if !reuse {
            if let Err(stop) = self.look_at_files(key, &files, start) {
                done.stopped(stop);
                return done;
            }
        }
        // The handle is out of the table while it is read, back in after.
        let opened = match self.open.remove(key) {
            Some(o) if reuse => Ok(o),
            _ => self.reopen(files, start, check_loss),
        };
        let mut o = match opened {
            Ok(o) => o,
            Err(stop) => {
                done.stopped(stop);
                return done;
            }
        };
        o.last_used = Instant::now();
        if *start == Start::Head && !reuse {
            self.walked.insert(key.clone(), Walked::default());
        }
        let mut pass = Pass {
            key,
            start,
            skip: match start {
                Start::After(c) if !reuse => Some(c.clone()),
                _ => None,
            },
            batch: Vec::with_capacity(self.batch),
            sent: 0,
            walked: self.walked.remove(key),
        };
        let pumped = self.pump(&mut o, &mut pass, &mut done, reuse);
        if let Some(w) = pass.walked.take() {
            self.walked.insert(key.clone(), w);
        }
        // Read to the end, `finish` noted it (with the headers it reads).
        if self.mode.follows() && !(done.at_end && pumped.is_ok()) {
            let ends: Vec<Option<Ends>> = o.files.iter().map(|f| header_ends(f)).collect();
            let pos = done.cursor.as_deref();
            self.covered.note(key, &o.ids, &ends, pos, false);
        }
        // A failed handle is dropped; one whose consumer left is kept.
        if !matches!(pumped, Err(Stop::Failed(_))) {
            self.open.insert(key.clone(), o);
        }
        if let Err(stop) = pumped {
            done.stopped(stop);
        }
        done
    }

    /// [`Self::read`] of a group read once from its head, cut into
    /// `chunks` that follow each other (see [`super::split`]): each read
    /// by a worker of its own on a thread of its own, the next while the
    /// current one's batches are handed on, in order. What concerns the
    /// whole group (its files, its activity) is told once.
    fn read_split(
        &mut self,
        key: &Text,
        files: &[PathBuf],
        chunks: Vec<Vec<PathBuf>>,
        done: &mut Done,
    ) {
        if let Err(stop) = self.look_at_files(key, files, &Start::Head) {
            done.stopped(stop);
            return;
        }
        let (filter, batch, n) = (&self.filter, self.batch, chunks.len());
        std::thread::scope(|s| {
            let spawn = |files: Vec<PathBuf>| {
                let (tx, rx) = mpsc::channel(super::split::CHUNK_BATCHES);
                let (filter, key) = (filter.clone(), key.clone());
                // Made on its thread: a handle stays where it was opened.
                let read = s.spawn(move || {
                    let (unused, _) = std_mpsc::channel();
                    let mut w = Worker::new(filter, Mode::Once, batch, tx, unused);
                    let mut start = Start::Head;
                    loop {
                        let d = w.read(&key, files.clone(), &start, false);
                        match (&d.cursor, d.at_end || d.error.is_some() || d.closed) {
                            (Some(c), false) => start = Start::After(c.clone()),
                            _ => return d,
                        }
                    }
                });
                (read, rx)
            };
            let mut chunks = chunks.into_iter().enumerate();
            let mut flight: std::collections::VecDeque<_> = chunks
                .by_ref()
                .take(2)
                .map(|(k, f)| (k, spawn(f)))
                .collect();
            while let Some((k, (read, mut rx))) = flight.pop_front() {
                while let Some(ev) = rx.blocking_recv() {
                    let ev = match ev {
                        ReaderEvent::Entries(v) => {
                            if let Some(c) = v.last().and_then(|e| e.cursor.clone()) {
                                done.cursor = Some(c);
                            }
                            ReaderEvent::Entries(v)
                        }
                        // The group's files were told; its activity is the
                        // last chunk's (the newest files).
                        ReaderEvent::Files { .. } => continue,
                        ReaderEvent::Activity { .. } if k + 1 < n => continue,
                        other => other,
                    };
                    if let Err(stop) = self.send(ev) {
                        done.stopped(stop);
                        return;
                    }
                }
                let d = read.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                if let Some(e) = d.error {
                    done.error = Some(e);
                    return;
                }
                flight.extend(chunks.next().map(|(k, f)| (k, spawn(f))));
            }
        });
    }

    /// The files a group was read over as committed (its first job after
    /// a start): what this worker knows of them, unless it read the group
    /// since.
    fn resume_files(&mut self, key: &Text, known: GroupFiles) {
        if self.files_read.contains_key(key) {
            return;
        }
        self.files_read
            .insert(key.clone(), known.ids.into_iter().collect());
        if let Some(l) = known.late {
            self.late_taken.insert(key.clone(), l);
        }
    }

    /// Before a new handle on the group: its files' IDs (each header read
    /// once). A file new to it since (by file ID: one renamed by rotation
    /// is no new file; one that appeared while the service was stopped is,
    /// the IDs being committed) is read from its head up to the group's
    /// position: another journald or journal-remote run of the same host,
    /// or an older rotated file copied in after the newer one (`cp -r` and
    /// `rsync` copy `remote-h.journal` before `remote-h@….journal`: `.` <
    /// `@`). Each file read so is told to the consumer with the group's
    /// IDs, then the set the group has now, if it changed: kept with the
    /// cursors, in order with the entries.
    fn look_at_files(&mut self, key: &Text, files: &[PathBuf], start: &Start) -> Result<(), Stop> {
        let ends: Vec<Option<Ends>> = files.iter().map(|f| header_ends(f)).collect();
        let ids: Vec<Option<String>> = files
            .iter()
            .zip(&ends)
            .map(|(f, e)| e.as_ref().map(|e| e.id.clone()).or_else(|| file_id(f)))
            .collect();
        if let (Start::After(c), Some(known)) = (start, self.files_read.get(key)) {
            let late: Vec<LateFile> = files
                .iter()
                .zip(&ids)
                .zip(&ends)
                .filter_map(|((f, id), e)| {
                    let id = id.clone()?;
                    let after = if known.contains(&id) || self.covered.knows(key, &id) {
                        // Known, in another file now, with more entries.
                        Some(self.covered.grown(key, &id, e.as_ref()?)?)
                    } else {
                        None
                    };
                    Some(LateFile {
                        path: f.clone(),
                        id,
                        after,
                        ends: e.clone(),
                    })
                })
                .collect();
            if !late.is_empty() {
                self.catch_up(key, &late, c)?;
            }
        }
        // With the files gone lately: kept with the cursor, so that one
        // back after a restart is not read again from its head as new.
        let now: HashSet<String> = ids
            .into_iter()
            .flatten()
            .chain(self.covered.ids(key).cloned())
            .collect();
        if self.files_read.get(key) != Some(&now) {
            self.files_read.insert(key.clone(), now);
            self.tell_files(key)?;
        }
        Ok(())
    }

    /// The group's file IDs, to be kept with its cursor.
    fn tell_files(&self, key: &Text) -> Result<(), Stop> {
        let mut ids: Vec<String> = self
            .files_read
            .get(key)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        ids.sort_unstable();
        self.send(ReaderEvent::Files {
            group: key.clone(),
            ids,
        })
    }

    /// Reads each late file alone from its head up to the group's position
    /// `c`: a handle resumed after `c` never returns what its files hold
    /// before it (libsystemd has one position per handle). Of the
    /// sequence of `c` (the same writer's older rotated file), the entries
    /// numbered before `c`'s; of another sequence (placed by time), those
    /// dated before `c`'s time. The group's handle reads the rest. These
    /// entries carry no cursor: the group's position stays where it was
    /// (a cursor of theirs, older, would move it back). Each file that had
    /// any is said, with how many. Each file read joins the group's IDs
    /// (told), so a restart after it reads it no more.
    fn catch_up(&mut self, key: &Text, files: &[LateFile], c: &str) -> Result<(), Stop> {
        let Some(until) = realtime_of(c) else {
            return Ok(());
        };
        let own = seqnum(c);
        for LateFile {
            path: file,
            id,
            after,
            ends,
        } in files
        {
            let file_seqnum_id = match ends {
                Some(e) => Some(e.seqnum_id.clone()),
                None => seqnum_id(file),
            };
            let bound = match &own {
                Some((id, n)) if file_seqnum_id.is_some_and(|f| f.eq_ignore_ascii_case(id)) => {
                    Bound::Seqnum(*n)
                }
                _ => Bound::Time(until),
            };
            // Nothing of it between what was read and the position (an
            // active file synced again): not walked.
            let empty = matches!((after, &bound), (Some(a), Bound::Seqnum(upto)) if a + 1 >= *upto);
            if !empty {
                let from = after.zip(ends.as_ref().map(|e| e.seqnum_id.as_str()));
                let n = self.read_late(key, file, id, &bound, from)?;
                self.late_read(key, file, id, n)?;
            }
            // Noted once read (a read that failed is tried again).
            if let Some(e) = ends {
                self.covered.note_late(key, file, e.clone());
            }
        }
        Ok(())
    }

    /// After a late file was read (`n` entries sent): its group knows it
    /// (told), and the log says so if it had any.
    fn late_read(&mut self, key: &Text, file: &Path, id: &str, n: u64) -> Result<(), Stop> {
        self.late_taken.remove(key);
        if let Some(known) = self.files_read.get_mut(key) {
            known.insert(id.to_string());
        }
        self.tell_files(key)?;
        if n > 0 {
            self.send(ReaderEvent::Warning(Warning::file(
                file.to_path_buf(),
                format!(
                    "{n} entries older than what was already read of {key} appeared late \
                         (a file copied in after a newer one): read now, after the newer ones"
                ),
            )))?;
        }
        Ok(())
    }

    /// [`Self::catch_up`] of one file (its header's ID `id`): the entries
    /// before `bound` (and numbered after `after`, if given), sent; those
    /// sent before (see `late_taken`) are passed over. Returns how many
    /// were sent now.
    fn read_late(
        &mut self,
        key: &Text,
        file: &PathBuf,
        id: &str,
        bound: &Bound,
        after: Option<(u64, &str)>,
    ) -> Result<u64, Stop> {
        let mut j = self.open_group(std::slice::from_ref(file), &Start::Head, true)?;
        if let Some((a, sid)) = after {
            // Straight to the first entry not read (a cursor of its
            // sequence and number only); from the head if refused.
            if j.seek_cursor(format!("s={sid};i={:x}", a + 1)).is_err() {
                j.seek_head().map_err(|source| ReadError::Seek {
                    cursor: None,
                    source,
                })?;
            }
        }
        let after = after.map(|(a, _)| a);
        let mut batch = Vec::with_capacity(self.batch);
        let passed = self
            .late_taken
            .get(key)
            .filter(|l| l.file == id)
            .map_or(0, |l| l.taken);
        let mut taken = 0u64;
        let mut n = 0u64;
        while j.next().map_err(ReadError::Next)? > 0 {
            let before = match bound {
                Bound::Time(until) => j.timestamp_usec().map_err(ReadError::Time)? < *until,
                Bound::Seqnum(upto) => {
                    let c = j.cursor().map_err(ReadError::Cursor)?;
                    seqnum(&c).is_some_and(|(_, i)| i < *upto)
                }
            };
            if !before {
                break;
            }
            if let Some(after) = after {
                let c = j.cursor().map_err(ReadError::Cursor)?;
                if seqnum(&c).is_none_or(|(_, i)| i <= after) {
                    continue;
                }
            }
            let Some(mut e) = read_entry(&mut j, &mut self.names).map_err(ReadError::Entry)? else {
                continue;
            };
            taken += 1;
            if taken <= passed {
                continue;
            }
            e.cursor = None;
            e.group = Some(self.names.group(key));
            if let Some(w) = self.walked.get_mut(key) {
                w.count(&e);
            }
            batch.push(e);
            n += 1;
            if batch.len() >= self.batch {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(self.batch));
                self.send_late(key, id, full, taken)?;
            }
        }
        if !batch.is_empty() {
            self.send_late(key, id, batch, taken)?;
        }
        Ok(n)
    }

    /// A batch of a late file's entries; `taken`: of the file, up to the
    /// batch's last.
    fn send_late(
        &mut self,
        key: &Text,
        id: &str,
        entries: Vec<Entry>,
        taken: u64,
    ) -> Result<(), Stop> {
        self.names.new_batch();
        self.late_taken.insert(
            key.clone(),
            LateRead {
                file: id.to_string(),
                taken,
            },
        );
        self.send(ReaderEvent::Late {
            group: key.clone(),
            file: id.to_string(),
            entries,
            taken,
        })
    }

    /// Reads the group until its end or [`BATCHES_PER_JOB`] batches.
    fn pump(
        &mut self,
        o: &mut OpenGroup,
        pass: &mut Pass<'_>,
        done: &mut Done,
        reuse: bool,
    ) -> Result<(), Stop> {
        loop {
            let n = o.j.next().map_err(ReadError::Next)?;
            if n == 0 {
                // A handle over named files: files leave it only when
                // libsystemd gives up on them.
                let Some(what) = o.intact.check(&o.j, &o.files) else {
                    break;
                };
                self.send(ReaderEvent::Warning(damaged(&what, o.whole)))?;
                if o.whole {
                    break;
                }
                Self::go_on_whole(o, pass, done)?;
                continue;
            }
            if let Some(c) = pass.skip.take() {
                // After seek_cursor, next() lands on the cursor's entry
                // when it still exists: it was read before.
                if o.j.test_cursor(c.as_str()).unwrap_or(false) {
                    continue;
                }
            }
            let cursor = |j: &Journal| j.cursor().map_err(ReadError::Cursor);
            let Some(mut entry) =
                read_entry(&mut o.j, &mut self.names).map_err(ReadError::Entry)?
            else {
                continue;
            };
            if o.whole {
                if !in_match(&self.filter, &entry) {
                    continue;
                }
                if entry.cursor.is_none() {
                    entry.cursor = Some(cursor(&o.j)?);
                }
            }
            entry.group = Some(self.names.group(pass.key));
            if o.host.is_none() {
                o.host.clone_from(&entry.host);
            }
            if let Some(w) = pass.walked.as_mut() {
                w.count(&entry);
            }
            if pass.batch.len() + 1 >= self.batch && entry.cursor.is_none() {
                entry.cursor = Some(cursor(&o.j)?);
            }
            pass.batch.push(entry);
            if pass.batch.len() >= self.batch {
                done.cursor = pass.batch.last().and_then(|e| e.cursor.clone());
                let full = std::mem::replace(&mut pass.batch, Vec::with_capacity(self.batch));
                self.send_entries(full)?;
                pass.sent += 1;
                if pass.sent >= BATCHES_PER_JOB {
                    done.at_end = false;
                    return Ok(());
                }
            }
        }
        self.finish(o, pass, done, reuse)
    }

    /// After libsystemd gave up on a file through the match: go on from the
    /// last entry read, without the match.
    fn go_on_whole(o: &mut OpenGroup, pass: &mut Pass<'_>, done: &Done) -> Result<(), Stop> {
        let mut u = unfiltered(&o.files).ok_or(ReadError::Reopen)?;
        if let Some(last) = pass.batch.last_mut() {
            if last.cursor.is_none() {
                let found = find_cursor(&mut u, last).ok_or(ReadError::Refind)?;
                last.cursor = Some(found);
            }
        }
        let pos = match pass.batch.last() {
            Some(last) => last.cursor.clone(),
            None => done.cursor.clone(),
        };
        pass.skip = resume_whole(&mut u, pos.as_deref(), pass.start)?;
        o.j = u;
        o.intact = Intact::new(&o.j);
        o.whole = true;
        Ok(())
    }

    /// At the group's end: the short batch goes out with its last cursor.
    fn finish(
        &mut self,
        o: &mut OpenGroup,
        pass: &mut Pass<'_>,
        done: &mut Done,
        reuse: bool,
    ) -> Result<(), Stop> {
        if let Some(last) = pass.batch.last_mut() {
            if last.cursor.is_none() {
                // next() found nothing: the read pointer is still on it,
                // unless libsystemd dropped its file.
                last.cursor = Some(match o.j.cursor() {
                    Ok(c) => c,
                    Err(e) => unfiltered(&o.files)
                        .and_then(|mut u| find_cursor(&mut u, last))
                        .ok_or(ReadError::Cursor(e))?,
                });
            }
            done.cursor.clone_from(&last.cursor);
            let full = std::mem::take(&mut pass.batch);
            self.send_entries(full)?;
        } else if done.cursor.is_none() && pass.skip.is_none() && !reuse {
            // Opened and nothing new: where the handle stands is the
            // position (at the tail: the last entry before now).
            done.cursor = o.j.cursor().ok();
        }
        self.counted(pass, &o.files)?;
        let ends: Vec<Option<Ends>> = o.files.iter().map(|f| header_ends(f)).collect();
        if self.mode.follows() {
            self.covered.note(pass.key, &o.ids, &ends, None, true);
        }
        self.tell_activity(o, &ends)
    }

    /// At the group's end: how far its files reach, any unit (their
    /// headers, `ends`: a few bytes a file), if that moved. A healthy host
    /// whose kubelet is quiet still writes, and is not silent.
    fn tell_activity(&self, o: &mut OpenGroup, ends: &[Option<Ends>]) -> Result<(), Stop> {
        let Some(at) = ends.iter().flatten().filter_map(|e| e.tail_realtime).max() else {
            return Ok(());
        };
        if o.reached.is_some_and(|r| r >= at) {
            return Ok(());
        }
        if o.host.is_none() {
            // No entry of the kubelet's read through this handle yet: the
            // host its newest entry names, once a handle.
            o.host = unfiltered(&o.files).and_then(|mut u| {
                u.seek_tail().ok()?;
                u.previous().ok().filter(|&n| n > 0)?;
                let mut names = Interner::default();
                read_entry(&mut u, &mut names).ok()??.host
            });
        }
        let Some(host) = o.host.clone() else {
            return Ok(());
        };
        o.reached = Some(at);
        self.send(ReaderEvent::Activity { host, at })
    }

    /// At the end of a group read from its head: says what its files
    /// record that the read could not walk, if anything. Once: files being
    /// written are looked at again at a later end.
    fn counted(&mut self, pass: &mut Pass<'_>, files: &[PathBuf]) -> Result<(), Stop> {
        let Some(walked) = pass.walked.as_ref() else {
            return Ok(());
        };
        match count(files, &self.filter, walked) {
            Count::Unknown => {}
            Count::Whole => pass.walked = None,
            Count::Short(w) => {
                pass.walked = None;
                self.send(ReaderEvent::Warning(w))?;
            }
        }
        Ok(())
    }
}

/// Where a late file's entries stop being late (see [`Worker::catch_up`]).
enum Bound {
    /// Of the sequence of the group's position: numbered before it.
    Seqnum(u64),
    /// Of another sequence: dated before it (µs).
    Time(u64),
}
