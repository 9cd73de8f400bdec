//! The collector's coordinator thread: the group table, the directory
//! watch, and the jobs handed to the workers.
//!
//! It blocks on one channel of [`Event`]s: the consumer's control messages
//! (forwarded by a small thread from the consumer's tokio channel), the
//! workers' reports, and the directory's changes (forwarded by a thread
//! that waits on inotify). Nothing polls. A timeout is set only for what no
//! event says:
//!
//! - a group's retry after a failed read (its own backoff, 1 s to 64 s);
//! - the summary of warnings held back (once their minute is over);
//! - while the directory does not exist yet: a look every second (nothing
//!   is watched that would say it appeared);
//! - while some file could not be read or was still being written, some
//!   file is a symlink (its target may be outside the watches) or a watch
//!   could not be added (the inotify watch limit): a look every [`SWEEP`]
//!   at every group's files. A permission granted is an inotify event, but
//!   a copy that stopped, a symlink target written or an unwatched
//!   directory is none.
//!
//! Otherwise an idle collector's coordinator does not wake at all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::groups::{Look, dirs_of, discover_all, group_key, identities, stamp, sync_temp_target};
use super::warnings::WarnBudget;
use super::watch::{Changes, Watch};
use super::worker::Worker;
use super::{Done, Event, Job, Spec};
use crate::journal::handle::{Start, Unreadable};
use crate::journal::protocol::{ReadError, Reader, ReaderCtl, ReaderEvent, Warning};
use crate::journal::{SourceError, Text};
use sentinel_core::model::GroupFiles;

/// Workers at most, whatever the number of cores.
pub(super) const MAX_WORKERS: usize = 4;
/// A one-time read (`scan`) gives up on a group that failed this often.
const GIVE_UP: u32 = 3;
/// How often a following reader looks at every group's files when events
/// cannot tell it everything (see the module doc).
const SWEEP: Duration = Duration::from_secs(5);
/// How often a following reader looks for its directory until it exists.
const APPEAR: Duration = Duration::from_secs(1);
/// A host whose files appear while following is first read once they
/// have not changed for this long (a file of it still being written
/// counts as a change)...
const SETTLE: Duration = Duration::from_secs(2);
/// ... or this long after it appeared, whichever comes first (a host that
/// journal-remote writes for from the start).
const SETTLE_MAX: Duration = Duration::from_secs(30);

#[allow(clippy::struct_excessive_bools)] // independent flags of one group
struct Group {
    files: Vec<PathBuf>,
    /// Which file each of `files` names (see [`identities`]), as last
    /// looked at.
    ids: Vec<(u64, u64)>,
    /// Where the group was last read to.
    cursor: Option<String>,
    start: Start,
    dirty: bool,
    running: bool,
    check_loss: bool,
    stamp: u64,
    worker: usize,
    last_read: Option<Instant>,
    /// Could not be read: tried again at this time (the file was being
    /// created, a permission was missing). `None` while it reads fine.
    retry_at: Option<Instant>,
    failures: u32,
    /// The files it was read over as committed, for its first job.
    known: Option<GroupFiles>,
    /// Appeared while following, or a file of it came or was replaced
    /// under its name, and not read since: its next read waits for its
    /// files to settle ([`SETTLE`]), at the latest until then.
    settle_by: Option<Instant>,
}

/// Starts the collector reader. Returns once the directory was looked at:
/// an error when it holds no journal file this process may read.
pub(crate) fn spawn(spec: Spec, capacity: usize) -> Result<Reader, SourceError> {
    let look = discover_all(&spec.dir);
    let unreadable = &look.unreadable;
    if look.groups.is_empty() {
        let message = match unreadable.first() {
            Some(u) => format!(
                "no readable journal files: {} (and {} more)",
                u.why(),
                unreadable.len() - 1
            ),
            None => "no readable journal files (none there: a collector's appear once a host \
                     uploaded)"
                .into(),
        };
        // A collector that no host has uploaded to yet is fine when
        // following: hosts appear as they upload.
        if !spec.mode.follows() || !unreadable.is_empty() {
            return Err(SourceError::Journal {
                path: spec.dir.display().to_string(),
                message,
            });
        }
    }
    let thread_err = |e: std::io::Error| SourceError::Journal {
        path: "journal thread".into(),
        message: e.to_string(),
    };
    let (tx, rx) = mpsc::channel::<ReaderEvent>(capacity);
    let (events_tx, events) = std_mpsc::channel::<Event>();
    let ctl = forward_ctl(events_tx.clone()).map_err(thread_err)?;
    let handle = std::thread::Builder::new()
        .name("journal".into())
        .spawn(move || {
            let incomplete = look.incomplete.any;
            let mut c = Coordinator::new(spec, look, tx, (events_tx, events));
            c.incomplete_left = incomplete;
            if let Err(e) = c.run() {
                let _ = c.tx.blocking_send(ReaderEvent::Failed(e));
            }
            c.stop_workers();
        })
        .map_err(thread_err)?;
    Ok(Reader {
        events: rx,
        ctl,
        thread: Some(handle),
    })
}

/// The consumer's control channel, forwarded into the coordinator's one
/// channel by a thread that blocks on it. It ends when the consumer drops
/// its sender (and says so: an idle coordinator has no other way to hear
/// that its consumer is gone) or the coordinator is gone.
fn forward_ctl(into: std_mpsc::Sender<Event>) -> std::io::Result<mpsc::UnboundedSender<ReaderCtl>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<ReaderCtl>();
    std::thread::Builder::new()
        .name("journal-ctl".into())
        .spawn(move || {
            while let Some(c) = rx.blocking_recv() {
                if into.send(Event::Ctl(c)).is_err() {
                    return;
                }
            }
            // The consumer dropped its Reader (events first, then this).
            let _ = into.send(Event::Gone);
        })?;
    Ok(tx)
}

struct Coordinator {
    spec: Spec,
    groups: BTreeMap<String, Group>,
    tx: mpsc::Sender<ReaderEvent>,
    /// The one channel the coordinator waits on.
    events: std_mpsc::Receiver<Event>,
    /// For the inotify thread, once it starts (then dropped here, so the
    /// channel ends when every thread that feeds it has).
    events_tx: Option<std_mpsc::Sender<Event>>,
    jobs: Vec<std_mpsc::Sender<Job>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    running: usize,
    /// The groups marked dirty since they were last looked at by
    /// [`Self::dispatch`]: it looks at these, not at every group, so a
    /// collector of many hosts costs per group read, not per group read
    /// times the groups.
    todo: BTreeSet<String>,
    /// The groups to read again after a failure, by when (not those a
    /// one-shot read gave up on).
    retries: BTreeSet<(Instant, String)>,
    /// Unreadable files already reported.
    warned: std::collections::HashSet<PathBuf>,
    /// Some file could not be read at the last look: looked at again every
    /// sweep (a permission fixed, a group added, may send no event).
    unreadable_left: bool,
    /// Some file was still being written at the last look (see
    /// `groups::Header::Incomplete`): looked at again every sweep too.
    incomplete_left: bool,
    /// Some group file is a symlink: its target may be outside the watches.
    links: bool,
    /// The directory watch (following only).
    watch: Option<Watch>,
    last_sweep: Instant,
    /// Whether the last word logged (at debug) was that it sweeps.
    said_sweeping: Option<bool>,
    /// Bounds the warnings about bad files (50 000 garbage files must not
    /// be 150 000 log lines): the rest are counted and summarised.
    warnings: WarnBudget,
}

impl Coordinator {
    /// A warning about a file or group, within the budget.
    fn warn(&mut self, message: String) {
        if let Some(summary) = self.warnings.roll() {
            let _ = self
                .tx
                .blocking_send(ReaderEvent::Warning(Warning::general(summary)));
        }
        if self.warnings.allow() {
            let _ = self
                .tx
                .blocking_send(ReaderEvent::Warning(Warning::general(message)));
        }
    }

    fn new(
        spec: Spec,
        mut look: Look,
        tx: mpsc::Sender<ReaderEvent>,
        events: (std_mpsc::Sender<Event>, std_mpsc::Receiver<Event>),
    ) -> Self {
        let n = std::thread::available_parallelism()
            .map_or(2, std::num::NonZeroUsize::get)
            .clamp(1, MAX_WORKERS);
        let (events_tx, events) = events;
        let mut jobs = Vec::new();
        let mut workers = Vec::new();
        for w in 0..n {
            let (job_tx, job_rx) = std_mpsc::channel();
            let (filter, mode, batch, split) =
                (spec.filter.clone(), spec.mode, spec.batch, spec.split);
            let (tx, done) = (tx.clone(), events_tx.clone());
            // Handles are created, used and dropped on the worker's thread.
            let spawned = std::thread::Builder::new()
                .name(format!("journal-{w}"))
                .spawn(move || {
                    let mut w = Worker::new(filter, mode, batch, tx, done);
                    w.split = split;
                    w.run(&job_rx);
                });
            if let Ok(h) = spawned {
                jobs.push(job_tx);
                workers.push(h);
            }
        }
        let mut c = Self {
            spec,
            groups: BTreeMap::new(),
            tx,
            events,
            events_tx: Some(events_tx),
            jobs,
            workers,
            running: 0,
            todo: BTreeSet::new(),
            retries: BTreeSet::new(),
            warned: std::collections::HashSet::new(),
            unreadable_left: false,
            incomplete_left: false,
            links: false,
            watch: None,
            last_sweep: Instant::now(),
            said_sweeping: None,
            warnings: WarnBudget::new(),
        };
        for (key, files) in std::mem::take(&mut look.groups) {
            let ids = look.ids_of(&files);
            c.add_group(key, files, ids, false);
        }
        c.warn_unreadable(&look.unreadable);
        c
    }

    fn worker_of(&self, key: &str) -> usize {
        // Stable, so a group keeps its worker (and its open handle).
        let h = sentinel_core::model::fnv1a([key.as_bytes()]);
        (h % self.jobs.len().max(1) as u64) as usize
    }

    /// `appeared`: found after the first look. Copying a host's files in
    /// (`cp -r`, `rsync`) writes `remote-h.journal` before its older
    /// `remote-h@….journal` (`.` < `@`): read at once, the newer file's
    /// entries would be taken before the older ones, and trouble spanning
    /// both would be split in two (S19). Its files are read together once
    /// they settle, in their time order, as `scan` reads them.
    fn add_group(
        &mut self,
        key: String,
        files: Vec<PathBuf>,
        ids: Vec<(u64, u64)>,
        appeared: bool,
    ) {
        let start = self.spec.starts.start_of(&key);
        let settles = appeared && self.spec.mode.follows() && !matches!(start, Start::After(_));
        let worker = self.worker_of(&key);
        let known = self.spec.starts.files.get(&key).cloned();
        self.todo.insert(key.clone());
        let settling = settles.then(|| key.clone());
        self.groups.insert(
            key,
            Group {
                ids,
                files,
                cursor: None,
                start,
                dirty: true,
                running: false,
                check_loss: false,
                stamp: 0,
                worker,
                last_read: None,
                retry_at: None,
                failures: 0,
                known,
                settle_by: settles.then(|| Instant::now() + SETTLE_MAX),
            },
        );
        if let Some(key) = settling {
            self.settle(&key);
        }
    }

    /// Holds a group that settles (see [`Self::add_group`],
    /// [`Self::came`]) until no file of it has come, gone, been replaced or
    /// been copied in for [`SETTLE`] (appends to its files do not count),
    /// and no later than its `settle_by`; one being read, once that read
    /// ends. A group failing to read keeps its backoff if that is later.
    fn settle(&mut self, key: &str) {
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        let Some(by) = g.settle_by.filter(|_| !g.running) else {
            return;
        };
        let mut at = (Instant::now() + SETTLE).min(by);
        if g.failures > 0 {
            // A group failing to read keeps its backoff.
            at = at.max(g.retry_at.unwrap_or(at));
        }
        if let Some(old) = g.retry_at.replace(at) {
            self.retries.remove(&(old, key.to_string()));
        }
        self.retries.insert((at, key.to_string()));
    }

    /// A file came to a group already there, one of its files was replaced
    /// under its name, or one is being copied in: how `rsync` and `cp`
    /// bring a rotated host, the newer `remote-h.journal` (over the one
    /// read) before the older `remote-h@….journal` that holds what was
    /// written after the last sync. Read at once, the newer entries would
    /// be taken first, and the older file's new ones only late, after
    /// them (see the worker's `covered`); so the group waits for its files
    /// to settle, as a new one does.
    fn came(&mut self, key: &str) {
        if !self.spec.mode.follows() {
            return;
        }
        if let Some(g) = self.groups.get_mut(key) {
            g.settle_by
                .get_or_insert_with(|| Instant::now() + SETTLE_MAX);
        }
    }

    fn warn_unreadable(&mut self, unreadable: &[Unreadable]) {
        self.unreadable_left = !unreadable.is_empty();
        let now_readable: Vec<PathBuf> = self
            .warned
            .iter()
            .filter(|w| !unreadable.iter().any(|u| &u.path == *w))
            .cloned()
            .collect();
        for p in now_readable {
            if p.exists() {
                tracing::info!("{} can be read now", p.display());
            }
            self.warned.remove(&p);
        }
        for u in unreadable {
            if self.warned.insert(u.path.clone()) {
                self.warn(format!(
                    "cannot be read, its entries are missing: {}",
                    u.why()
                ));
            }
        }
    }

    /// Looks at the directory again: new groups, new and removed files.
    fn rescan(&mut self) {
        let mut look = discover_all(&self.spec.dir);
        self.incomplete_left = look.incomplete.any;
        self.links = look.groups.values().flatten().any(|p| p.is_symlink());
        self.warn_unreadable(&look.unreadable);
        let gone: Vec<String> = self
            .groups
            .keys()
            .filter(|k| !look.groups.contains_key(*k))
            .cloned()
            .collect();
        for key in gone {
            if let Some(g) = self.groups.remove(&key) {
                if let Some(at) = g.retry_at {
                    self.retries.remove(&(at, key.clone()));
                }
                if !g.running {
                    let _ = self.jobs[g.worker].send(Job::Forget(key.into()));
                }
            }
        }
        for (key, files) in std::mem::take(&mut look.groups) {
            let ids = look.ids_of(&files);
            match self.groups.get_mut(&key) {
                Some(g) => {
                    if g.files != files || g.ids != ids {
                        if g.files.iter().any(|f| !files.contains(f)) {
                            g.check_loss = true;
                        }
                        let came = files.iter().zip(&ids).any(|(f, id)| {
                            g.files
                                .iter()
                                .position(|old| old == f)
                                .is_none_or(|i| g.ids.get(i) != Some(id))
                        });
                        g.ids = ids;
                        g.files = files;
                        g.dirty = true;
                        self.todo.insert(key.clone());
                        if came {
                            self.came(&key);
                        }
                        self.settle(&key);
                    }
                }
                None => self.add_group(key, files, ids, true),
            }
        }
        let incomplete = look.incomplete;
        for key in &incomplete.groups {
            self.came(key);
            self.settle(key);
        }
    }

    /// Marks the groups whose files changed (or that were read lately:
    /// their handle may see appends the stamp does not) as dirty.
    fn sweep(&mut self, recent: Duration) {
        let mut replaced = Vec::new();
        for (key, g) in &mut self.groups {
            if g.running || g.dirty || g.retry_at.is_some() {
                continue;
            }
            let moved = stamp(&g.files) != g.stamp;
            if moved || g.last_read.is_some_and(|t| t.elapsed() < recent) {
                g.dirty = true;
                self.todo.insert(key.clone());
            }
            if moved {
                let ids = identities(&g.files);
                if ids != g.ids {
                    g.ids = ids;
                    replaced.push(key.clone());
                }
            }
        }
        for key in replaced {
            self.came(&key);
            self.settle(&key);
        }
    }

    /// Hands the groups marked dirty (and those whose retry is due) to
    /// their workers. A group running now is handed on when it finishes;
    /// one waiting for its retry, when that is due.
    fn dispatch(&mut self) {
        let now = Instant::now();
        while let Some((at, _)) = self.retries.first()
            && *at <= now
        {
            let Some((_, key)) = self.retries.pop_first() else {
                break;
            };
            if let Some(g) = self.groups.get_mut(&key) {
                g.retry_at = None;
                g.dirty = true;
                self.todo.insert(key);
            }
        }
        for key in std::mem::take(&mut self.todo) {
            let Some(g) = self.groups.get_mut(&key) else {
                continue;
            };
            if !g.dirty || g.running || g.retry_at.is_some() {
                continue;
            }
            g.dirty = false;
            g.stamp = stamp(&g.files);
            let start = match &g.cursor {
                Some(c) => Start::After(c.clone()),
                None => g.start.clone(),
            };
            g.settle_by = None;
            let job = Job::Read {
                key: Text::from(key),
                files: g.files.clone(),
                start,
                check_loss: std::mem::take(&mut g.check_loss),
                known: g.known.take(),
            };
            if self.jobs[g.worker].send(job).is_ok() {
                g.running = true;
                self.running += 1;
            }
        }
    }

    /// Takes a worker's report. False when the consumer is gone.
    fn finished(&mut self, d: Done) -> bool {
        if d.closed {
            return false;
        }
        self.running = self.running.saturating_sub(1);
        let Some(g) = self.groups.get_mut(&*d.key) else {
            return true;
        };
        g.running = false;
        g.last_read = Some(Instant::now());
        if d.cursor.is_some() {
            g.cursor = d.cursor;
        } else if g.cursor.is_none() && g.start == Start::Tail {
            // Opened at the tail with nothing of the kubelet's in it yet:
            // from now on, whatever comes after this moment.
            g.start = Start::Realtime(crate::clock::now().max(0) as u64);
        }
        if let Some(e) = d.error {
            // One unreadable group does not stop the others; it is tried
            // again (a file journal-remote is still creating reads a moment
            // later), less often the longer it fails.
            g.failures += 1;
            let wait = Duration::from_secs(1 << (g.failures - 1).min(6));
            let at = Instant::now() + wait;
            g.retry_at = Some(at);
            let give_up = g.failures >= GIVE_UP && !self.spec.mode.follows();
            if !give_up {
                self.retries.insert((at, d.key.to_string()));
            }
            if give_up || g.failures.is_power_of_two() {
                let then = if give_up {
                    "its entries are missing".to_string()
                } else {
                    format!(
                        "trying again in {}s; the other hosts are still read",
                        wait.as_secs()
                    )
                };
                self.warn(format!("{}: {e}; {then}", d.key));
            }
        } else {
            if g.failures > 0 {
                tracing::info!("{} reads again", d.key);
            }
            g.failures = 0;
            if !d.at_end {
                g.dirty = true;
            }
            // Also when marked again while it was read.
            if g.dirty {
                self.todo.insert(d.key.to_string());
            }
            // A file came while it was read: it waits for them to settle.
            if g.settle_by.is_some() {
                self.settle(&d.key);
            }
        }
        true
    }

    /// Nothing is being read and nothing waits to be (a one-shot read:
    /// not even a retry). Right after [`Self::dispatch`], which empties
    /// `todo` of every group it can hand on.
    fn idle(&self) -> bool {
        self.running == 0
            && self.todo.is_empty()
            && (self.spec.mode.follows() || self.retries.is_empty())
    }

    fn run(&mut self) -> Result<(), ReadError> {
        if self.spec.mode.follows() {
            self.start_watching()?;
            // The directory was first looked at before the watch was set
            // (in `spawn`): a file that appeared in between sent no event
            // and was never read (a host's upload right after the start).
            // A second look now that the watch stands closes that gap (its
            // headers just read are cached: 0.07-0.09 s for 10 000 files).
            self.rescan();
        }
        // Nothing else sends into the channel once the threads that feed it
        // have it: when they all end, the coordinator hears of it.
        self.events_tx = None;
        let mut owe_tail = true;
        let mut sync = 0;
        loop {
            self.on_time();
            self.dispatch();
            if self.idle() {
                if !self.spec.mode.follows() {
                    // A one-shot read says what it held back before it ends.
                    self.warnings.since -= WarnBudget::WINDOW;
                    self.say_held_back();
                    return Ok(());
                }
                if owe_tail {
                    if self.tx.blocking_send(ReaderEvent::Tail { sync }).is_err() {
                        return Ok(());
                    }
                    owe_tail = false;
                }
            }
            if self.tx.is_closed() {
                return Ok(());
            }
            let event = match self.next_deadline() {
                Some(at) => match self
                    .events
                    .recv_timeout(at.saturating_duration_since(Instant::now()))
                {
                    Ok(e) => e,
                    Err(std_mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(std_mpsc::RecvTimeoutError::Disconnected) => {
                        return Err(ReadError::WorkersEnded);
                    }
                },
                None => self.events.recv().map_err(|_| ReadError::WorkersEnded)?,
            };
            match event {
                Event::Ctl(ReaderCtl::Sync(n)) => {
                    sync = n.max(sync);
                    self.sweep(Duration::from_secs(10));
                    owe_tail = true;
                }
                Event::Ctl(ReaderCtl::Ping(n)) => {
                    if self.tx.blocking_send(ReaderEvent::Pong(n)).is_err() {
                        return Ok(());
                    }
                }
                Event::Done(d) => {
                    if !self.finished(d) {
                        return Ok(());
                    }
                    owe_tail = true;
                }
                Event::Fs(changes) => self.changed(changes)?,
                // Looked at above: `tx` is closed when the consumer is gone.
                Event::Gone => {}
            }
        }
    }

    /// The earliest time something must be looked at that no event says
    /// (see the module doc); `None`: wait for events only.
    fn next_deadline(&self) -> Option<Instant> {
        let follow = self.spec.mode.follows();
        let retries = self.retries.first().map(|(at, _)| *at);
        let held = (self.warnings.held > 0).then(|| self.warnings.since + WarnBudget::WINDOW);
        let appear = self
            .watch
            .as_ref()
            .filter(|w| w.dirs.is_empty())
            .map(|_| Instant::now() + APPEAR);
        let sweep = (follow && self.must_sweep()).then(|| self.last_sweep + SWEEP);
        retries
            .into_iter()
            .chain(held)
            .chain(appear)
            .chain(sweep)
            .min()
    }

    fn must_sweep(&self) -> bool {
        self.unreadable_left
            || self.incomplete_left
            || self.links
            || self.watch.as_ref().is_some_and(|w| w.incomplete)
    }

    /// What is due by the clock: held-back warnings, the directory that
    /// appeared, the sweep.
    fn on_time(&mut self) {
        self.say_held_back();
        let Some(w) = &self.watch else {
            return;
        };
        if w.dirs.is_empty() && self.spec.dir.is_dir() {
            let dir = self.spec.dir.clone();
            if self.add_watch(&dir).is_ok() {
                tracing::info!("{} appeared; reading it", dir.display());
                self.watch_subdirs();
                self.rescan();
            }
        }
        if self.must_sweep() && self.last_sweep.elapsed() >= SWEEP {
            self.last_sweep = Instant::now();
            if self.unreadable_left || self.incomplete_left {
                self.rescan();
            }
            self.watch_subdirs();
            self.sweep(Duration::ZERO);
            tracing::debug!("swept {}", self.spec.dir.display());
        }
        // Said when it changes (the tests wait on it, not on the clock).
        let sweeping = self.must_sweep();
        if self.spec.mode.follows() && self.said_sweeping != Some(sweeping) {
            self.said_sweeping = Some(sweeping);
            if sweeping {
                tracing::debug!(
                    "sweeping {} every {}s: a link, or a file not complete or readable yet",
                    self.spec.dir.display(),
                    SWEEP.as_secs()
                );
            } else {
                tracing::debug!("not sweeping {}: nothing needs it", self.spec.dir.display());
            }
        }
    }

    fn say_held_back(&mut self) {
        if let Some(summary) = self.warnings.roll() {
            let _ = self
                .tx
                .blocking_send(ReaderEvent::Warning(Warning::general(summary)));
        }
    }

    /// What changed on disk.
    fn changed(&mut self, changes: Changes) -> Result<(), ReadError> {
        if let Some(source) = changes.failed {
            return Err(ReadError::WatchWait {
                dir: self.spec.dir.clone(),
                source,
            });
        }
        if changes.rescan {
            // Watch first, then look: what is written in a new directory
            // meanwhile is an event.
            self.watch_subdirs();
            self.rescan();
        }
        let mut rescan = false;
        for (wd, name) in changes.touched {
            let Some(dir) = self.watch.as_ref().and_then(|w| w.dirs.get(&wd)) else {
                continue;
            };
            let path = dir.join(&name);
            // A file copied in under a temporary name (rsync): its group
            // waits while it is written.
            let copying = name
                .to_str()
                .and_then(sync_temp_target)
                .and_then(|t| group_key(&self.spec.dir, &dir.join(t)))
                .filter(|k| self.groups.contains_key(k));
            if let Some(key) = copying {
                self.came(&key);
                self.settle(&key);
                continue;
            }
            if let Some(key) = group_key(&self.spec.dir, &path) {
                match self.groups.get_mut(&key) {
                    // A file the group does not have yet (one that was
                    // incomplete): looked at with the others.
                    // (A file replaced under its name is a move: rescanned.)
                    Some(g) if g.files.contains(&path) => {
                        if g.retry_at.is_none() {
                            g.dirty = true;
                            self.todo.insert(key);
                        }
                    }
                    // Once for all the new files these changes name.
                    _ => rescan = true,
                }
            }
        }
        if rescan {
            self.rescan();
        }
        Ok(())
    }

    /// Watches the directory (and its subdirectories) and starts the thread
    /// that forwards what inotify says.
    fn start_watching(&mut self) -> Result<(), ReadError> {
        let dir = self.spec.dir.clone();
        let watching = |source| ReadError::Watch {
            dir: dir.clone(),
            source,
        };
        let events = self
            .events_tx
            .clone()
            .ok_or_else(|| watching(std::io::Error::other("no event channel")))?;
        let watch = Watch::start(events).map_err(watching)?;
        self.watch = Some(watch);
        match self.add_watch(&dir) {
            Ok(()) => self.watch_subdirs(),
            // A collector nobody has uploaded to yet: journal-remote
            // makes its directory on the first upload. Looked for by time.
            Err(rustix::io::Errno::NOENT) => {
                let _ = self
                    .tx
                    .blocking_send(ReaderEvent::Warning(Warning::general(format!(
                        "{} does not exist yet; it is read once it appears (journal-remote \
                         makes it on the first upload)",
                        dir.display()
                    ))));
            }
            Err(e) => return Err(watching(e.into())),
        }
        Ok(())
    }

    fn add_watch(&mut self, dir: &Path) -> rustix::io::Result<()> {
        let Some(w) = self.watch.as_mut() else {
            return Ok(());
        };
        w.add(dir)
    }

    fn watch_subdirs(&mut self) {
        // The directories read, each once: watching one inode under a
        // second name (a link to the directory) would return the same
        // watch and rename its events.
        let mut failed = false;
        for p in dirs_of(&self.spec.dir).into_iter().skip(1) {
            failed |= self.add_watch(&p).is_err();
        }
        if let Some(w) = self.watch.as_mut() {
            w.incomplete = failed;
        }
    }

    fn stop_workers(&mut self) {
        self.jobs.clear();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        // Stops the inotify thread.
        self.watch = None;
    }
}
