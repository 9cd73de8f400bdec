//! A collector's directory, read host by host.
//!
//! libsystemd merges every file of a directory entry by entry: each entry
//! costs O(files), and an upload older than the position the merge has
//! reached is never returned (a late host, a copied-in journal). Hosts are
//! independent, so here each *group* of files (one writer: the
//! `remote-HOST.journal` of `systemd-journal-remote --split-mode=host` and
//! its rotated `remote-HOST@….journal`, or a copied `<machine-id>/`
//! directory) is read through a handle of its own, resumed from a cursor of
//! its own. Within a group the files share one sequence of sequence
//! numbers, so nothing written to it is ever behind the position.
//!
//! A coordinator thread owns the group table, one inotify watch on the
//! directory (its subdirectories too), and a bounded pool of workers (one
//! per core, at most [`MAX_WORKERS`]), not a thread per host. A group is
//! always read by the same worker, which keeps a few handles open (the most
//! recently used, [`OPEN_PER_WORKER`]) and closes idle ones, so memory and
//! open files stay flat in the number of hosts. Workers send their batches
//! straight to the consumer; every entry carries its group, and the last of
//! each batch its cursor, so the consumer commits one cursor per group.
//!
//! The protocol towards the consumer is the single reader's
//! ([`super::sd::ReaderEvent`]): `Tail` once every group is read to its end,
//! `Sync` makes it look at every group again first.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use rustix::fs::inotify;
use tokio::sync::mpsc;

use systemd::journal::{Journal, OpenFilesOptions};

use super::sd::{
    Intact, Interner, Reader, ReaderCtl, ReaderEvent, Start, Unreadable, add_matches, damaged,
    find_cursor, in_match, read_entry, resume_whole, seek, seqnum,
};
use super::{EntryFilter, SourceError, Text};

/// Workers at most, whatever the number of cores.
pub const MAX_WORKERS: usize = 4;
/// Handles a worker keeps open; the least recently used is closed first.
const OPEN_PER_WORKER: usize = 16;
/// A handle unused this long is closed.
const IDLE_CLOSE: Duration = Duration::from_secs(30);
/// Batches one job reads before the group goes to the back of the queue:
/// a host with a long backlog does not hold up the others.
const BATCHES_PER_JOB: usize = 16;
/// A one-time read (`scan`) gives up on a group that failed this often.
const GIVE_UP: u32 = 3;
/// How often a following reader looks at every group's files anyway (a
/// missed or overflowed notification).
const SWEEP: Duration = Duration::from_secs(5);

/// Where each group starts.
#[derive(Debug, Clone, Default)]
pub struct Starts {
    /// Committed cursors by group.
    pub known: BTreeMap<String, String>,
    /// A cursor from before groups were read apart (one handle over the
    /// whole directory): every group resumes after its time.
    pub legacy: Option<String>,
    /// Where groups present at the very first start begin (`start_at`);
    /// `None` once anything was committed.
    pub first: Option<Start>,
}

impl Starts {
    fn start_of(&self, key: &str, at_startup: bool) -> Start {
        if let Some(c) = self.known.get(key) {
            return Start::After(c.clone());
        }
        if let Some(c) = &self.legacy {
            return Start::After(c.clone());
        }
        match (&self.first, at_startup) {
            (Some(first), true) => first.clone(),
            // A host that appeared since: everything it uploaded is new.
            _ => Start::Head,
        }
    }
}

#[derive(Debug, Clone)]
pub struct FleetSpec {
    pub dir: PathBuf,
    pub filter: EntryFilter,
    pub starts: Starts,
    pub follow: bool,
    pub batch: usize,
}

fn is_journal(name: &str) -> bool {
    name.ends_with(".journal") || name.ends_with(".journal~")
}

/// A journal file shorter than its header says, modified this recently, is
/// still being written (copied in).
const STILL_WRITTEN: Duration = Duration::from_secs(10);

/// A 32-hex-digit machine ID (a copied `/var/log/journal/<id>/`).
fn is_machine_id(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The writer a file belongs to: its name without the rotation suffix
/// (`remote-10.0.0.5@…-….journal` → `remote-10.0.0.5`), or its
/// machine-ID directory.
///
/// Files of any other name are grouped by the machine ID in their header
/// (journald writes the host's own): a host's journals copied in under
/// names of their own (`node1-monday.journal`, `node1-tuesday.journal`)
/// are still one host, read in order through one handle.
#[must_use]
pub fn group_key(dir: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(dir).ok()?;
    let mut parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    let name = parts.pop()?;
    if !is_journal(name) {
        return None;
    }
    let stem = name
        .trim_end_matches('~')
        .trim_end_matches(".journal")
        .split('@')
        .next()
        .unwrap_or(name);
    let base = || {
        if stem.starts_with("remote-") {
            // journal-remote's per-sender files (their header carries the
            // collector's machine ID, not the sender's).
            Some(stem.to_string())
        } else {
            // A file still being written (copied in) is grouped once its
            // header is there: grouped by its name meanwhile, it would be
            // a group of its own, read once under each key.
            match header_machine_id(path) {
                Header::MachineId(m) => Some(format!("machine-{m}")),
                Header::NoMachineId => Some(stem.to_string()),
                Header::Incomplete => None,
            }
        }
    };
    match parts.as_slice() {
        [] => base(),
        [sub] if is_machine_id(sub) => Some((*sub).to_string()),
        [sub] => base().map(|b| format!("{sub}/{b}")),
        _ => None,
    }
}

enum Header {
    MachineId(String),
    NoMachineId,
    /// Still being written: shorter than a header, not a journal's (yet),
    /// or shorter than the arena its header says it has (a copy in
    /// progress: `cp` writes the header, with its final tail pointers,
    /// first). A handle opened on it reads part of it and never sees the
    /// rest, so it is left until it is whole.
    Incomplete,
}

/// The machine ID in a journal file's header (bytes 40..56, after the
/// signature, flags, state and file ID), in hex, if the file is whole.
fn header_machine_id(path: &Path) -> Header {
    use std::io::Read as _;
    let mut head = [0u8; 104];
    let Ok(mut f) = std::fs::File::open(path) else {
        // Reported as unreadable by its name.
        return Header::NoMachineId;
    };
    // Only while it is being written: a file cut short long ago (a copy
    // that failed) is read as far as it goes.
    let written_lately = |f: &std::fs::File| {
        f.metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age < STILL_WRITTEN)
    };
    let whole = f.read_exact(&mut head).is_ok()
        && &head[..8] == b"LPKSHHRH"
        && f.metadata().is_ok_and(|m| {
            // header_size and arena_size: a whole file is at least as long.
            let word =
                |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().unwrap_or_default());
            m.len() >= word(88).saturating_add(word(96))
        });
    if !whole {
        return if written_lately(&f) {
            Header::Incomplete
        } else {
            Header::NoMachineId
        };
    }
    let id = &head[40..56];
    if id.iter().all(|&b| b == 0) {
        return Header::NoMachineId;
    }
    Header::MachineId(id.iter().fold(String::with_capacity(32), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    }))
}

/// The sequence-number ID in a journal file's header (bytes 72..88, after
/// the tail entry's boot ID), in hex: the `s=` of its entries' cursors.
fn header_seqnum_id(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let mut head = [0u8; 88];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    if &head[..8] != b"LPKSHHRH" {
        return None;
    }
    Some(
        head[72..88]
            .iter()
            .fold(String::with_capacity(32), |mut s, b| {
                use std::fmt::Write as _;
                let _ = write!(s, "{b:02x}");
                s
            }),
    )
}

/// Whether a single cursor can be this directory's: one from before its
/// groups were read apart (one handle over the whole directory) names the
/// sequence-number ID of one of its files. A local journal's cursor, or one
/// of another machine, names none: applied, every host would resume after
/// its time and lose what it uploaded before.
#[must_use]
pub fn holds_cursor(dir: &Path, cursor: &str) -> bool {
    let Some((id, _)) = seqnum(cursor) else {
        return false;
    };
    discover(dir)
        .0
        .values()
        .flatten()
        .any(|f| header_seqnum_id(f).is_some_and(|s| s.eq_ignore_ascii_case(&id)))
}

/// The directory and its subdirectories (one level, as libsystemd reads a
/// directory), each once: a symlink to the directory itself (`c/loop ->
/// .`) or to a subdirectory already there is the same (device, inode), and
/// would read every file twice.
fn dirs_of(dir: &Path) -> Vec<PathBuf> {
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let mut seen: std::collections::HashSet<(u64, u64)> = id(dir).into_iter().collect();
    let mut dirs = vec![dir.to_path_buf()];
    let mut subs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    // Real directories before links to them, whatever their names.
    subs.sort_by_key(|p| (p.is_symlink(), p.clone()));
    for p in subs {
        if let Some(i) = id(&p).filter(|_| p.is_dir()) {
            if seen.insert(i) {
                dirs.push(p);
            }
        }
    }
    dirs
}

/// The directory's journal files (and its subdirectories', one level, as
/// libsystemd reads a directory) by group, and those that cannot be read.
/// Each file once, by (device, inode): a symlinked file is read through its
/// target (by the link only when the target is outside), a link loop or a
/// dangling link not at all.
#[must_use]
pub fn discover(dir: &Path) -> (BTreeMap<String, Vec<PathBuf>>, Vec<Unreadable>) {
    let (groups, unreadable, _) = discover_all(dir);
    (groups, unreadable)
}

/// [`discover`], and whether some file was left for being incomplete.
fn discover_all(dir: &Path) -> (BTreeMap<String, Vec<PathBuf>>, Vec<Unreadable>, bool) {
    let mut incomplete = false;
    let mut groups: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let mut unreadable = Vec::new();
    let mut found: Vec<PathBuf> = dirs_of(dir)
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .collect();
    found.sort_by_key(|p| (p.is_symlink(), p.clone()));
    let mut seen = std::collections::HashSet::new();
    for p in found {
        match std::fs::metadata(&p) {
            Ok(m) if m.is_file() => {
                if !seen.insert((m.dev(), m.ino())) {
                    continue;
                }
            }
            Ok(_) => continue,
            // A loop of links, or one to nothing.
            Err(_) if p.is_symlink() => continue,
            Err(_) => {}
        }
        if !is_journal(&p.file_name().unwrap_or_default().to_string_lossy()) {
            continue;
        }
        if matches!(header_machine_id(&p), Header::Incomplete) {
            incomplete = true;
            continue;
        }
        let Some(key) = group_key(dir, &p) else {
            continue;
        };
        match std::fs::File::open(&p) {
            Ok(_) => groups.entry(key).or_default().push(p),
            Err(error) => unreadable.push(Unreadable {
                group: std::fs::metadata(&p)
                    .ok()
                    .and_then(|m| super::sd::group_name(m.gid())),
                path: p,
                error,
            }),
        }
    }
    for files in groups.values_mut() {
        files.sort();
    }
    unreadable.sort_by(|a, b| a.path.cmp(&b.path));
    (groups, unreadable, incomplete)
}

/// What changes when a group's files are written: size and modification
/// time of each (the writers truncate to the same size after appending,
/// which updates it and notifies inotify).
fn stamp(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .fold(0u64, |acc, m| {
            acc.wrapping_mul(31)
                .wrapping_add(m.size())
                .wrapping_add(m.mtime_nsec() as u64)
                .wrapping_add((m.mtime() as u64).wrapping_mul(1_000_000_007))
        })
}

enum Job {
    Read {
        key: Text,
        files: Vec<PathBuf>,
        start: Start,
        /// Files went away since the group was last read: count what was
        /// removed unread.
        check_loss: bool,
    },
    Forget(Text),
}

struct Done {
    key: Text,
    /// The cursor of the last entry read (the group's position).
    cursor: Option<String>,
    /// Read to the end (or more is waiting).
    at_end: bool,
    error: Option<String>,
    /// The consumer is gone.
    closed: bool,
}

#[allow(clippy::struct_excessive_bools)] // independent flags of one group
struct Group {
    files: Vec<PathBuf>,
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
}

/// Starts the collector reader. Returns once the directory was looked at:
/// an error when it holds no journal file this process may read.
pub fn spawn(spec: FleetSpec, capacity: usize) -> Result<Reader, SourceError> {
    let (groups, unreadable, incomplete) = discover_all(&spec.dir);
    if groups.is_empty() {
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
        if !spec.follow || !unreadable.is_empty() {
            return Err(SourceError::Journal {
                path: spec.dir.display().to_string(),
                message,
            });
        }
    }
    let (tx, rx) = mpsc::channel::<ReaderEvent>(capacity);
    let (ctl_tx, ctl_rx) = mpsc::unbounded_channel::<ReaderCtl>();
    let handle = std::thread::Builder::new()
        .name("journal".into())
        .spawn(move || {
            let mut c = Coordinator::new(spec, groups, &unreadable, tx, ctl_rx);
            c.incomplete_left = incomplete;
            if let Err(e) = c.run() {
                let _ = c.tx.blocking_send(ReaderEvent::Failed(e));
            }
            c.stop_workers();
        })
        .map_err(|e| SourceError::Journal {
            path: "journal thread".into(),
            message: e.to_string(),
        })?;
    Ok(Reader {
        events: rx,
        ctl: ctl_tx,
        thread: Some(handle),
    })
}

struct Coordinator {
    spec: FleetSpec,
    groups: BTreeMap<String, Group>,
    tx: mpsc::Sender<ReaderEvent>,
    ctl: mpsc::UnboundedReceiver<ReaderCtl>,
    jobs: Vec<std_mpsc::Sender<Job>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    done: std_mpsc::Receiver<Done>,
    running: usize,
    /// Unreadable files already reported.
    warned: std::collections::HashSet<PathBuf>,
    /// Some file could not be read at the last look: looked at again every
    /// sweep (a permission fixed, a group added, may send no event).
    unreadable_left: bool,
    /// Some file was still being written at the last look (see
    /// [`Header::Incomplete`]): looked at again every sweep too.
    incomplete_left: bool,
    /// The directory each inotify watch is on.
    watches: HashMap<i32, PathBuf>,
    /// Bounds the warnings about bad files (50 000 garbage files must not
    /// be 150 000 log lines): the rest are counted and summarised.
    warnings: WarnBudget,
}

/// Warnings about the directory's files said one by one at most
/// [`WarnBudget::PER_MINUTE`] a minute; past that, counted and said as one
/// line when the minute is over.
struct WarnBudget {
    since: Instant,
    said: u32,
    held: u64,
}

impl WarnBudget {
    const PER_MINUTE: u32 = 20;
    const WINDOW: Duration = Duration::from_secs(60);

    fn new() -> Self {
        Self {
            since: Instant::now(),
            said: 0,
            held: 0,
        }
    }

    /// Whether to say this one; otherwise it is counted.
    fn allow(&mut self) -> bool {
        self.roll();
        if self.said < Self::PER_MINUTE {
            self.said += 1;
            true
        } else {
            self.held += 1;
            false
        }
    }

    /// The summary of what was held back, once its minute is over.
    fn roll(&mut self) -> Option<String> {
        if self.since.elapsed() < Self::WINDOW {
            return None;
        }
        self.since = Instant::now();
        self.said = 0;
        let held = std::mem::take(&mut self.held);
        (held > 0).then(|| {
            format!(
                "{held} more warnings about this directory's files in the last minute were not \
                 logged one by one (at most {} a minute are)",
                Self::PER_MINUTE
            )
        })
    }
}

impl Coordinator {
    /// A warning about a file or group, within the budget.
    fn warn(&mut self, message: String) {
        if let Some(summary) = self.warnings.roll() {
            let _ = self.tx.blocking_send(ReaderEvent::Warning(summary));
        }
        if self.warnings.allow() {
            let _ = self.tx.blocking_send(ReaderEvent::Warning(message));
        }
    }

    fn new(
        spec: FleetSpec,
        found: BTreeMap<String, Vec<PathBuf>>,
        unreadable: &[Unreadable],
        tx: mpsc::Sender<ReaderEvent>,
        ctl: mpsc::UnboundedReceiver<ReaderCtl>,
    ) -> Self {
        let n = std::thread::available_parallelism()
            .map_or(2, std::num::NonZeroUsize::get)
            .clamp(1, MAX_WORKERS);
        let (done_tx, done) = std_mpsc::channel();
        let mut jobs = Vec::new();
        let mut workers = Vec::new();
        for w in 0..n {
            let (job_tx, job_rx) = std_mpsc::channel();
            let (filter, batch, tx, done) =
                (spec.filter.clone(), spec.batch, tx.clone(), done_tx.clone());
            let follow = spec.follow;
            // Handles are created, used and dropped on the worker's thread.
            let spawned = std::thread::Builder::new()
                .name(format!("journal-{w}"))
                .spawn(move || {
                    Worker {
                        filter,
                        follow,
                        batch,
                        tx,
                        done,
                        open: HashMap::new(),
                        names: Interner::default(),
                    }
                    .run(&job_rx);
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
            ctl,
            jobs,
            workers,
            done,
            running: 0,
            warned: std::collections::HashSet::new(),
            unreadable_left: false,
            incomplete_left: false,
            watches: HashMap::new(),
            warnings: WarnBudget::new(),
        };
        for (key, files) in found {
            c.add_group(key, files, true);
        }
        c.warn_unreadable(unreadable);
        c
    }

    fn worker_of(&self, key: &str) -> usize {
        // FNV-1a: stable, so a group keeps its worker (and its open handle).
        let h = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        (h % self.jobs.len().max(1) as u64) as usize
    }

    fn add_group(&mut self, key: String, files: Vec<PathBuf>, at_startup: bool) {
        let start = self.spec.starts.start_of(&key, at_startup);
        let worker = self.worker_of(&key);
        self.groups.insert(
            key,
            Group {
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
            },
        );
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
        let (found, unreadable, incomplete) = discover_all(&self.spec.dir);
        self.incomplete_left = incomplete;
        self.warn_unreadable(&unreadable);
        let gone: Vec<String> = self
            .groups
            .keys()
            .filter(|k| !found.contains_key(*k))
            .cloned()
            .collect();
        for key in gone {
            if let Some(g) = self.groups.remove(&key) {
                if !g.running {
                    let _ = self.jobs[g.worker].send(Job::Forget(key.into()));
                }
            }
        }
        for (key, files) in found {
            match self.groups.get_mut(&key) {
                Some(g) => {
                    if g.files != files {
                        if g.files.iter().any(|f| !files.contains(f)) {
                            g.check_loss = true;
                        }
                        g.files = files;
                        g.dirty = true;
                    }
                }
                None => self.add_group(key, files, false),
            }
        }
    }

    /// Marks the groups whose files changed (or that were read lately:
    /// their handle may see appends the stamp does not) as dirty.
    fn sweep(&mut self, recent: Duration) {
        if let Some(summary) = self.warnings.roll() {
            let _ = self.tx.blocking_send(ReaderEvent::Warning(summary));
        }
        for g in self.groups.values_mut() {
            if g.running || g.dirty || g.retry_at.is_some() {
                continue;
            }
            if stamp(&g.files) != g.stamp || g.last_read.is_some_and(|t| t.elapsed() < recent) {
                g.dirty = true;
            }
        }
    }

    fn dispatch(&mut self) {
        for (key, g) in &mut self.groups {
            if let Some(at) = g.retry_at {
                if Instant::now() < at || g.failures >= GIVE_UP && !self.spec.follow {
                    continue;
                }
                g.retry_at = None;
                g.dirty = true;
            }
            if !g.dirty || g.running {
                continue;
            }
            g.dirty = false;
            g.stamp = stamp(&g.files);
            let start = match &g.cursor {
                Some(c) => Start::After(c.clone()),
                None => g.start.clone(),
            };
            let job = Job::Read {
                key: Text::from(key.as_str()),
                files: g.files.clone(),
                start,
                check_loss: std::mem::take(&mut g.check_loss),
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
            g.retry_at = Some(Instant::now() + wait);
            let give_up = g.failures >= GIVE_UP && !self.spec.follow;
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
        }
        true
    }

    fn idle(&self) -> bool {
        let pending = |g: &Group| {
            g.dirty || g.retry_at.is_some() && !self.spec.follow && g.failures < GIVE_UP
        };
        self.running == 0 && !self.groups.values().any(pending)
    }

    fn run(&mut self) -> Result<(), String> {
        let fd = if self.spec.follow {
            let fd = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)
                .map_err(|e| format!("watching {}: {e}", self.spec.dir.display()))?;
            let dir = self.spec.dir.clone();
            match self.add_watch(&fd, &dir) {
                Ok(()) => self.watch_subdirs(&fd),
                // A collector nobody has uploaded to yet: journal-remote
                // makes its directory on the first upload. Looked for below.
                Err(rustix::io::Errno::NOENT) => {
                    let _ = self.tx.blocking_send(ReaderEvent::Warning(format!(
                        "{} does not exist yet; it is read once it appears (journal-remote \
                         makes it on the first upload)",
                        dir.display()
                    )));
                }
                Err(e) => return Err(format!("watching {}: {e}", dir.display())),
            }
            Some(fd)
        } else {
            None
        };
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 8192];
        let mut owe_tail = true;
        let mut sync = 0;
        let mut last_sweep = Instant::now();
        let mut last_entries = Instant::now();
        loop {
            // What the consumer asked.
            while let Ok(c) = self.ctl.try_recv() {
                match c {
                    ReaderCtl::Sync(n) => {
                        sync = sync.max(n);
                        self.sweep(Duration::from_secs(10));
                        owe_tail = true;
                    }
                    ReaderCtl::Ping(n) => {
                        if self.tx.blocking_send(ReaderEvent::Pong(n)).is_err() {
                            return Ok(());
                        }
                    }
                }
            }
            // What the workers did.
            while let Ok(d) = self.done.try_recv() {
                if !self.finished(d) {
                    return Ok(());
                }
                owe_tail = true;
                last_entries = Instant::now();
            }
            // What changed on disk.
            if let Some(fd) = &fd {
                let (rescan, touched) = read_events(fd, &mut buf);
                if rescan {
                    self.rescan();
                    self.watch_subdirs(fd);
                }
                for (wd, name) in touched {
                    let Some(dir) = self.watches.get(&wd) else {
                        continue;
                    };
                    let path = dir.join(name);
                    if let Some(key) = group_key(&self.spec.dir, &path) {
                        match self.groups.get_mut(&key) {
                            // A file the group does not have yet (one that
                            // was incomplete): looked at with the others.
                            Some(g) if g.files.contains(&path) => {
                                g.dirty |= g.retry_at.is_none();
                            }
                            _ => self.rescan(),
                        }
                    }
                }
                if self.watches.is_empty() && self.spec.dir.is_dir() {
                    let dir = self.spec.dir.clone();
                    if self.add_watch(fd, &dir).is_ok() {
                        tracing::info!("{} appeared; reading it", dir.display());
                        self.watch_subdirs(fd);
                        self.rescan();
                    }
                }
                if last_sweep.elapsed() >= SWEEP {
                    last_sweep = Instant::now();
                    if self.unreadable_left || self.incomplete_left {
                        self.rescan();
                    }
                    self.sweep(Duration::ZERO);
                }
            }
            self.dispatch();
            if self.idle() {
                if !self.spec.follow {
                    // A one-shot read says what it held back before it ends.
                    self.warnings.since -= WarnBudget::WINDOW;
                    if let Some(summary) = self.warnings.roll() {
                        let _ = self.tx.blocking_send(ReaderEvent::Warning(summary));
                    }
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
            // Wait: for a worker while one reads, for the directory else.
            if self.running > 0 {
                match self.done.recv_timeout(Duration::from_millis(50)) {
                    Ok(d) => {
                        if !self.finished(d) {
                            return Ok(());
                        }
                        owe_tail = true;
                        last_entries = Instant::now();
                    }
                    Err(std_mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std_mpsc::RecvTimeoutError::Disconnected) => {
                        return Err("the journal workers ended".into());
                    }
                }
            } else if let Some(fd) = &fd {
                let wait = if last_entries.elapsed() < Duration::from_secs(1) {
                    50
                } else {
                    1000
                };
                let mut pfd = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
                let timeout = rustix::event::Timespec {
                    tv_sec: 0,
                    tv_nsec: wait * 1_000_000,
                };
                let timeout = if wait >= 1000 {
                    rustix::event::Timespec {
                        tv_sec: 1,
                        tv_nsec: 0,
                    }
                } else {
                    timeout
                };
                match rustix::event::poll(&mut pfd, Some(&timeout)) {
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(format!("waiting for {}: {e}", self.spec.dir.display())),
                }
            } else {
                // A one-time read waiting to try a group again.
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    fn add_watch(&mut self, fd: &rustix::fd::OwnedFd, dir: &Path) -> rustix::io::Result<()> {
        let wd = inotify::add_watch(fd, dir, watch_flags())?;
        self.watches.insert(wd, dir.to_path_buf());
        Ok(())
    }

    fn watch_subdirs(&mut self, fd: &rustix::fd::OwnedFd) {
        // The directories read, each once: watching one inode under a
        // second name (a link to the directory) would return the same
        // watch and rename its events.
        for p in dirs_of(&self.spec.dir).into_iter().skip(1) {
            let _ = self.add_watch(fd, &p);
        }
    }

    fn stop_workers(&mut self) {
        self.jobs.clear();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn watch_flags() -> inotify::WatchFlags {
    inotify::WatchFlags::CREATE
        | inotify::WatchFlags::DELETE
        | inotify::WatchFlags::MOVED_TO
        | inotify::WatchFlags::MOVED_FROM
        | inotify::WatchFlags::MODIFY
        | inotify::WatchFlags::CLOSE_WRITE
        | inotify::WatchFlags::ATTRIB
}

/// Drains the inotify queue: whether files came or went (or events were
/// lost: look at everything), and the files written to (by watch).
fn read_events(
    fd: &rustix::fd::OwnedFd,
    buf: &mut [std::mem::MaybeUninit<u8>],
) -> (bool, Vec<(i32, PathBuf)>) {
    let mut rescan = false;
    let mut touched: Vec<(i32, PathBuf)> = Vec::new();
    let mut reader = inotify::Reader::new(fd, buf);
    loop {
        match reader.next() {
            Ok(ev) => {
                let flags = ev.events();
                if flags.intersects(
                    inotify::ReadFlags::CREATE
                        | inotify::ReadFlags::DELETE
                        | inotify::ReadFlags::MOVED_TO
                        | inotify::ReadFlags::MOVED_FROM
                        | inotify::ReadFlags::QUEUE_OVERFLOW
                        | inotify::ReadFlags::IGNORED
                        | inotify::ReadFlags::DELETE_SELF,
                ) {
                    rescan = true;
                } else if let Some(name) = ev.file_name() {
                    let name = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
                    if !touched.iter().any(|(w, n)| *w == ev.wd() && *n == name) {
                        touched.push((ev.wd(), name));
                    }
                }
            }
            Err(rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::INTR) => break,
            Err(_) => {
                rescan = true;
                break;
            }
        }
    }
    (rescan, touched)
}

use std::os::unix::ffi::OsStrExt as _;

/// A handle on `files` without matches.
fn unfiltered(files: &[PathBuf]) -> Option<Journal> {
    let mut j = OpenFilesOptions::default()
        .open_files(files.iter().map(|p| p.as_os_str().as_encoded_bytes()))
        .ok()?;
    j.set_data_threshold(0).ok()?;
    Some(j)
}

struct OpenGroup {
    j: Journal,
    files: Vec<PathBuf>,
    last_used: Instant,
    intact: Intact,
    /// Read without the match (libsystemd gave up on a file through it).
    whole: bool,
}

struct Worker {
    filter: EntryFilter,
    /// Following: every term of the filter stays (see `present_only`).
    follow: bool,
    batch: usize,
    tx: mpsc::Sender<ReaderEvent>,
    done: std_mpsc::Sender<Done>,
    open: HashMap<Text, OpenGroup>,
    names: Interner,
}

impl Worker {
    fn run(mut self, jobs: &std_mpsc::Receiver<Job>) {
        loop {
            match jobs.recv_timeout(IDLE_CLOSE) {
                Ok(Job::Read {
                    key,
                    files,
                    start,
                    check_loss,
                }) => {
                    let done = self.read(&key, files, &start, check_loss);
                    let closed = done.closed;
                    if self.done.send(done).is_err() || closed {
                        return;
                    }
                }
                Ok(Job::Forget(key)) => {
                    self.open.remove(&key);
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
    ) -> Result<Journal, String> {
        let mut j = OpenFilesOptions::default()
            .open_files(files.iter().map(|p| p.as_os_str().as_encoded_bytes()))
            .map_err(|e| format!("cannot open: {e}"))?;
        j.set_data_threshold(0)
            .map_err(|e| format!("cannot set data threshold: {e}"))?;
        if filtered {
            let filter = if self.follow {
                self.filter.clone()
            } else {
                super::sd::present_only(&mut j, &self.filter)
            };
            add_matches(&mut j, &filter).map_err(|e| format!("cannot add matches: {e}"))?;
        }
        seek(&mut j, start).map_err(|e| format!("cannot seek: {e}"))?;
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

    fn read(&mut self, key: &Text, files: Vec<PathBuf>, start: &Start, check_loss: bool) -> Done {
        let mut done = Done {
            key: key.clone(),
            cursor: None,
            at_end: true,
            error: None,
            closed: false,
        };
        let reuse = self.open.get(key).is_some_and(|o| o.files == files);
        let mut skip = None;
        if !reuse {
            self.open.remove(key);
            if let (true, Start::After(c)) = (check_loss, start) {
                let lost = self.lost_since(&files, c);
                if lost > 0 && self.tx.blocking_send(ReaderEvent::Lost(lost)).is_err() {
                    done.closed = true;
                    return done;
                }
            }
            match self.open_group(&files, start, true) {
                Ok(j) => {
                    self.open.insert(
                        key.clone(),
                        OpenGroup {
                            intact: Intact::new(&j),
                            whole: false,
                            j,
                            files,
                            last_used: Instant::now(),
                        },
                    );
                }
                Err(e) => {
                    done.error = Some(e);
                    return done;
                }
            }
            if let Start::After(c) = start {
                skip = Some(c.clone());
            }
        }
        let o = self.open.get_mut(key).expect("opened above");
        o.last_used = Instant::now();
        let (j, intact, files, whole) = (&mut o.j, &mut o.intact, &o.files, &mut o.whole);
        let mut batch: Vec<crate::model::Entry> = Vec::with_capacity(self.batch);
        let mut sent = 0;
        let result: Result<(), String> = (|| {
            loop {
                let n = j
                    .next()
                    .map_err(|e| format!("reading the next entry: {e}"))?;
                if n == 0 {
                    // A handle over named files: files leave it only when
                    // libsystemd gives up on them.
                    let Some(what) = intact.check(j, files) else {
                        break;
                    };
                    let warning = ReaderEvent::Warning(damaged(&what, *whole));
                    if self.tx.blocking_send(warning).is_err() {
                        done.closed = true;
                        return Ok(());
                    }
                    if *whole {
                        break;
                    }
                    // Go on from the last entry read, without the match.
                    let mut u = unfiltered(files).ok_or("cannot open the files again")?;
                    if let Some(last) = batch.last_mut() {
                        if last.cursor.is_none() {
                            let found = find_cursor(&mut u, last)
                                .ok_or("cannot find the last entry read again")?;
                            last.cursor = Some(found);
                        }
                    }
                    let pos = match batch.last() {
                        Some(last) => last.cursor.clone(),
                        None => done.cursor.clone(),
                    };
                    skip = resume_whole(&mut u, pos.as_deref(), start)?;
                    *j = u;
                    *intact = Intact::new(j);
                    *whole = true;
                    continue;
                }
                if let Some(c) = skip.take() {
                    // After seek_cursor, next() lands on the cursor's entry
                    // when it still exists: it was read before.
                    if j.test_cursor(c.as_str()).unwrap_or(false) {
                        continue;
                    }
                }
                let mut entry =
                    read_entry(j, &mut self.names).map_err(|e| format!("reading an entry: {e}"))?;
                if *whole {
                    if !in_match(&self.filter, &entry) {
                        continue;
                    }
                    if entry.cursor.is_none() {
                        entry.cursor =
                            Some(j.cursor().map_err(|e| format!("reading a cursor: {e}"))?);
                    }
                }
                entry.group = Some(key.clone());
                if batch.len() + 1 >= self.batch && entry.cursor.is_none() {
                    entry.cursor = Some(j.cursor().map_err(|e| format!("reading a cursor: {e}"))?);
                }
                batch.push(entry);
                if batch.len() >= self.batch {
                    done.cursor = batch.last().and_then(|e| e.cursor.clone());
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(self.batch));
                    if self.tx.blocking_send(ReaderEvent::Entries(full)).is_err() {
                        done.closed = true;
                        return Ok(());
                    }
                    sent += 1;
                    if sent >= BATCHES_PER_JOB {
                        done.at_end = false;
                        return Ok(());
                    }
                }
            }
            if let Some(last) = batch.last_mut() {
                if last.cursor.is_none() {
                    // next() found nothing: the read pointer is still on it,
                    // unless libsystemd dropped its file.
                    last.cursor = Some(match j.cursor() {
                        Ok(c) => c,
                        Err(e) => unfiltered(files)
                            .and_then(|mut u| find_cursor(&mut u, last))
                            .ok_or_else(|| format!("reading a cursor: {e}"))?,
                    });
                }
                done.cursor.clone_from(&last.cursor);
                let full = std::mem::take(&mut batch);
                if self.tx.blocking_send(ReaderEvent::Entries(full)).is_err() {
                    done.closed = true;
                }
            } else if done.cursor.is_none() && skip.is_none() && !reuse {
                // Opened and nothing new: where the handle stands is the
                // position (at the tail: the last entry before now).
                done.cursor = j.cursor().ok();
            }
            Ok(())
        })();
        if let Err(e) = result {
            self.open.remove(key);
            done.error = Some(e);
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_past_the_budget_are_counted_and_summarised() {
        let mut b = WarnBudget::new();
        let said = (0..50_000).filter(|_| b.allow()).count();
        assert_eq!(said, WarnBudget::PER_MINUTE as usize);
        assert_eq!(b.roll(), None, "the minute is not over");
        b.since -= WarnBudget::WINDOW;
        let summary = b.roll().unwrap();
        assert!(summary.starts_with("49980 more warnings"), "{summary}");
        assert!(b.allow(), "a new minute");
    }

    #[test]
    fn files_group_by_writer() {
        let d = Path::new("/var/log/journal/remote");
        let k = |p: &str| group_key(d, &d.join(p));
        assert_eq!(
            k("remote-10.0.0.5.journal").as_deref(),
            Some("remote-10.0.0.5")
        );
        assert_eq!(
            k("remote-10.0.0.5@0f1e2d3c4b5a69788796a5b4c3d2e1f0-0000000000000001-00061234abcd.journal")
                .as_deref(),
            Some("remote-10.0.0.5")
        );
        assert_eq!(
            k("remote-10.0.0.5@0f1e-0001-0002.journal~").as_deref(),
            Some("remote-10.0.0.5")
        );
        assert_eq!(
            k("0123456789abcdef0123456789abcdef/system@x-1-2.journal").as_deref(),
            Some("0123456789abcdef0123456789abcdef")
        );
        assert_eq!(k("sub/remote-a.journal").as_deref(), Some("sub/remote-a"));
        assert_eq!(k("notes.txt"), None);
        assert_eq!(k("a/b/c.journal"), None);
    }

    /// A file copied in is grouped once its header is there, never by its
    /// name first and by its machine ID later (two groups, read twice).
    #[test]
    fn a_file_being_written_waits_for_its_header() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("node1-monday.journal");
        std::fs::write(&p, b"LPKSHH").unwrap();
        assert_eq!(group_key(d.path(), &p), None);
        let mut head = vec![0u8; 104];
        head[..8].copy_from_slice(b"LPKSHHRH");
        head[40..56].copy_from_slice(&[0xab; 16]);
        // The header says 4 KiB of arena: a copy still being written.
        head[88..96].copy_from_slice(&88u64.to_le_bytes());
        head[96..104].copy_from_slice(&4096u64.to_le_bytes());
        head.resize(104, 0);
        std::fs::write(&p, &head).unwrap();
        assert_eq!(group_key(d.path(), &p), None);
        head.resize(88 + 4096, 0);
        std::fs::write(&p, &head).unwrap();
        assert_eq!(
            group_key(d.path(), &p).as_deref(),
            Some("machine-abababababababababababababababab")
        );
        // journal-remote's files are grouped by name, header or not.
        let r = d.path().join("remote-10.0.0.5.journal");
        std::fs::write(&r, b"").unwrap();
        assert_eq!(group_key(d.path(), &r).as_deref(), Some("remote-10.0.0.5"));
    }

    #[test]
    fn starts_per_group() {
        let mut s = Starts {
            first: Some(Start::Tail),
            ..Starts::default()
        };
        assert_eq!(s.start_of("a", true), Start::Tail);
        assert_eq!(s.start_of("a", false), Start::Head);
        s.known.insert("a".into(), "s=1;i=2".into());
        s.first = None;
        assert_eq!(s.start_of("a", true), Start::After("s=1;i=2".into()));
        assert_eq!(s.start_of("b", true), Start::Head);
    }
}
