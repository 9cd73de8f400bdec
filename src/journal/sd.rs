//! The journal through libsystemd (the `systemd` crate).
//!
//! The `sd_journal` handle is neither Send nor Sync, and libsystemd wants it
//! created, used and freed on one thread (man `sd_journal_open`). So it lives
//! on a dedicated OS thread that hands owned entries out in batches over a
//! bounded tokio channel: a slow consumer blocks the reader (backpressure;
//! the journal itself buffers on disk). The thread ends when the receiver
//! is dropped; it notices within one wait.
//!
//! Besides entries it reports [`ReaderEvent::Tail`]: everything written
//! before that point was sent. Asked with [`ReaderCtl::Sync`], it says so
//! once more after looking again, which is how the service confirms that
//! quiet time is quiet in the journal too (design section 4.1), even after
//! the whole process was stopped for a while.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use systemd::journal::{
    Journal, JournalWaitResult, OpenDirectoryOptions, OpenFilesOptions, OpenOptions,
};

use super::{Entry, EntryFilter, Item, Items, SourceError, Text};

/// Which journal to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The local system journal.
    System,
    /// A directory of journal files (a collector's `/var/log/journal/remote`).
    Directory(PathBuf),
    /// Given journal files.
    Files(Vec<PathBuf>),
    /// A journald namespace.
    Namespace(String),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::System => f.write_str("the system journal"),
            Target::Directory(d) => write!(f, "{}", d.display()),
            Target::Files(fs) => {
                let names: Vec<String> = fs.iter().map(|p| p.display().to_string()).collect();
                f.write_str(&names.join(", "))
            }
            Target::Namespace(n) => write!(f, "journal namespace {n:?}"),
        }
    }
}

/// Where reading starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    Head,
    /// Only entries written from now on.
    Tail,
    /// Entries at or after this time (µs).
    Realtime(u64),
    /// Just after this cursor (resume).
    After(String),
}

#[derive(Debug, Clone)]
pub struct Spec {
    pub target: Target,
    pub filter: EntryFilter,
    pub start: Start,
    /// Keep waiting for new entries instead of ending at the tail.
    pub follow: bool,
    /// Entries per batch handed over the channel.
    pub batch: usize,
}

/// What the reader thread sends.
#[derive(Debug)]
pub enum ReaderEvent {
    Entries(Vec<Entry>),
    /// At the end of the journal: every entry written before was sent.
    /// `sync` is the latest [`ReaderCtl::Sync`] this answers (0: none).
    Tail {
        sync: u64,
    },
    /// The answer to [`ReaderCtl::Ping`]: the reader is alive and all
    /// entries it read before were sent.
    Pong(u64),
    /// Entries (of any unit) that rotation or vacuum removed before the
    /// reader got to them.
    Lost(u64),
    /// Reading failed; the thread has ended.
    Failed(String),
    /// Something could not be read (a file, one host's files); the rest is.
    Warning(String),
}

/// What the reader thread is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderCtl {
    /// Look at the journal again and answer with a `Tail`.
    Sync(u64),
    /// Answer with a `Pong` once what was read before is sent.
    Ping(u64),
}

/// A running reader: its events and its control line.
pub struct Reader {
    pub events: mpsc::Receiver<ReaderEvent>,
    pub ctl: mpsc::UnboundedSender<ReaderCtl>,
    pub thread: Option<JoinHandle<()>>,
}

/// `s=` (sequence number id) and `i=` (sequence number) of a cursor.
pub(super) fn seqnum(cursor: &str) -> Option<(String, u64)> {
    let mut id = None;
    let mut n = None;
    for part in cursor.split(';') {
        if let Some(v) = part.strip_prefix("s=") {
            id = Some(v.to_string());
        } else if let Some(v) = part.strip_prefix("i=") {
            n = u64::from_str_radix(v, 16).ok();
        }
    }
    Some((id?, n?))
}

/// An unfiltered second handle on the same journal: it tells the sequence
/// numbers at the head and the tail, which the filtered reader cannot see.
struct Probe {
    j: Journal,
}

impl Probe {
    fn open(spec: &Spec) -> Option<Self> {
        let unfiltered = Spec {
            filter: EntryFilter {
                units: Vec::new(),
                identifiers: Vec::new(),
                containers: Vec::new(),
                ..EntryFilter::default()
            },
            start: Start::Head,
            ..spec.clone()
        };
        open(&unfiltered).ok().map(|j| Self { j })
    }

    fn head(&mut self) -> Option<(String, u64)> {
        self.j.seek_head().ok()?;
        (self.j.next().ok()? > 0).then_some(())?;
        seqnum(&self.j.cursor().ok()?)
    }

    fn tail(&mut self) -> Option<(String, u64)> {
        self.j.seek_tail().ok()?;
        (self.j.previous().ok()? > 0).then_some(())?;
        seqnum(&self.j.cursor().ok()?)
    }
}

/// How far the reader has got, in sequence numbers: everything up to here
/// was read or skipped by the match.
#[derive(Default)]
struct Progress {
    upto: Option<(String, u64)>,
}

impl Progress {
    fn advance(&mut self, to: Option<(String, u64)>) {
        if let Some((id, n)) = to {
            match &self.upto {
                Some((cur, m)) if *cur == id && *m >= n => {}
                _ => self.upto = Some((id, n)),
            }
        }
    }

    /// Entries between what was read and the journal's head: removed unread.
    fn lost_before(&self, head: Option<(String, u64)>) -> u64 {
        match (&self.upto, head) {
            (Some((id, upto)), Some((hid, h))) if *id == hid && h > upto + 1 => h - upto - 1,
            _ => 0,
        }
    }
}

fn journal_err(target: &Target, what: &str, e: &dyn std::fmt::Display) -> SourceError {
    SourceError::Journal {
        path: target.to_string(),
        message: format!("{what}: {e}"),
    }
}

fn open(spec: &Spec) -> Result<Journal, SourceError> {
    let t = &spec.target;
    let mut j = match t {
        Target::System => OpenOptions::default().system(true).local_only(true).open(),
        Target::Directory(d) => {
            OpenDirectoryOptions::default().open_directory(d.as_os_str().as_encoded_bytes())
        }
        Target::Files(fs) => OpenFilesOptions::default()
            .open_files(fs.iter().map(|p| p.as_os_str().as_encoded_bytes())),
        Target::Namespace(n) => OpenOptions::default().open_namespace(n.as_str()),
    }
    .map_err(|e| journal_err(t, "cannot open", &e))?;
    // Opening without permission succeeds and shows nothing: say so instead.
    if j.usage()
        .map_err(|e| journal_err(t, "cannot read usage", &e))?
        == 0
    {
        let unreadable = unreadable_files(t);
        let message = match unreadable.first() {
            Some(u) => format!(
                "no readable journal files: {} (and {} more)",
                u.why(),
                unreadable.len() - 1
            ),
            None => "no readable journal files (none there, or no permission: the reading user \
                     must be root or in the group that owns them, systemd-journal for the \
                     system journal)"
                .into(),
        };
        return Err(SourceError::Journal {
            path: t.to_string(),
            message,
        });
    }
    j.set_data_threshold(0)
        .map_err(|e| journal_err(t, "cannot set data threshold", &e))?;
    let filter = if spec.follow {
        spec.filter.clone()
    } else {
        present_only(&mut j, &spec.filter)
    };
    add_matches(&mut j, &filter).map_err(|e| journal_err(t, "cannot add matches", &e))?;
    seek(&mut j, &spec.start).map_err(|e| journal_err(t, "cannot seek", &e))?;
    Ok(j)
}

/// Places a handle where a read starts.
pub(super) fn seek(j: &mut Journal, start: &Start) -> systemd::Result<()> {
    match start {
        Start::Head => j.seek_head(),
        Start::Tail => j.seek_tail().and_then(|()| j.previous().map(|_| ())),
        Start::Realtime(us) => j.seek_realtime_usec(*us),
        Start::After(c) => j.seek_cursor(c.as_str()),
    }
}

/// Watches a handle for files libsystemd dropped partway through a read.
/// When it cannot iterate a file (a damaged entry array, say), libsystemd
/// removes that file from the handle and goes on without telling the
/// caller: `next()` just finds nothing more there. What the handle's files
/// occupy (`sd_journal_get_usage`, the sum of their blocks) then shrinks.
pub(super) struct Intact {
    usage: u64,
}

impl Intact {
    pub(super) fn new(j: &Journal) -> Self {
        Self {
            usage: j.usage().unwrap_or(0),
        }
    }

    /// The file that left the handle since the last look, when one did:
    /// of `files`, the one still there whose size went missing. A file
    /// deleted (vacuum) or truncated (journald trims a file it archives)
    /// is no such file: neither is named.
    pub(super) fn check(&mut self, j: &Journal, files: &[PathBuf]) -> Option<PathBuf> {
        use std::os::unix::fs::MetadataExt as _;
        let now = j.usage().ok()?;
        let before = std::mem::replace(&mut self.usage, now);
        let gone = before.checked_sub(now).filter(|g| *g > 0)?;
        files
            .iter()
            .find(|p| std::fs::metadata(p).is_ok_and(|m| m.blocks() * 512 == gone))
            .cloned()
    }
}

/// The warning for a file libsystemd gave up on. Through the kubelet match
/// it reads a field's own list of entries, which damage can cut; the files'
/// list of all entries is then read from there, and the match applied
/// here. `whole` says whether that was already so.
pub(super) fn damaged(file: &Path, whole: bool) -> String {
    let what = file.display();
    if whole {
        format!(
            "{what}: damaged: libsystemd stopped reading it partway, and the kubelet entries \
             after the damage are missing (`journalctl --verify` shows where); the rest was read"
        )
    } else {
        format!(
            "{what}: damaged: libsystemd stopped reading it partway through the kubelet match \
             (`journalctl --verify` shows where); the rest is read entry by entry"
        )
    }
}

/// The kubelet match of [`add_matches`], applied to an entry read without
/// it.
pub(super) fn in_match(f: &EntryFilter, e: &Entry) -> bool {
    let has =
        |v: &[String], x: &Option<Text>| x.as_deref().is_some_and(|x| v.iter().any(|y| y == x));
    has(&f.units, &e.unit)
        || (e.pid == Some(1) && has(&f.units, &e.about_unit))
        || has(&f.identifiers, &e.identifier)
        || has(&f.containers, &e.container)
}

/// Places `whole`, an unfiltered handle on the same files, after `pos` (the
/// last entry read) or, with none, where the read began. Returns the cursor
/// of an entry `next()` lands on that was already read.
pub(super) fn resume_whole(
    whole: &mut Journal,
    pos: Option<&str>,
    start: &Start,
) -> Result<Option<String>, String> {
    let start = match pos {
        Some(c) => Start::After(c.to_string()),
        None => start.clone(),
    };
    seek(whole, &start).map_err(|e| format!("cannot seek: {e}"))?;
    Ok(match start {
        Start::After(c) => Some(c),
        _ => None,
    })
}

/// The cursor of `last` when the handle it came through can no longer tell
/// it (libsystemd dropped its file, see [`Intact`]): found again through an
/// unfiltered handle `j`, which walks the files' own entry order rather
/// than the damaged field's, as the entry at its time with its message.
pub(super) fn find_cursor(j: &mut Journal, last: &Entry) -> Option<String> {
    let at = u64::try_from(last.at?).ok()?;
    j.seek_realtime_usec(at).ok()?;
    for _ in 0..4096 {
        if j.next().ok()? == 0 {
            return None;
        }
        if j.timestamp_usec().ok()? != at {
            continue;
        }
        let same = j
            .get_data("MESSAGE")
            .ok()?
            .and_then(|f| f.value().map(|v| v == last.message.as_slice()));
        if same == Some(true) {
            return j.cursor().ok();
        }
    }
    None
}

/// The values `field` takes anywhere in the open files.
fn unique_values(j: &mut Journal, field: &str) -> std::collections::HashSet<Vec<u8>> {
    let mut out = std::collections::HashSet::new();
    if j.query_unique(field).is_err() {
        return out;
    }
    while let Ok(Some(d)) = j.enumerate_unique() {
        let data = d.data();
        if let Some(eq) = data.iter().position(|&b| b == b'=') {
            out.insert(data[eq + 1..].to_vec());
        }
    }
    out
}

/// For a read to the end of what is there (`scan`, `run --once`): the
/// filter without the units, identifiers and containers that occur nowhere
/// in the files. libsystemd evaluates every term of a match for every
/// entry and file, so twenty defaults of which one occurs cost twice the
/// reading time; the terms that remain match exactly the same entries. A
/// following reader keeps every term: a unit may start writing later.
pub(super) fn present_only(j: &mut Journal, f: &EntryFilter) -> EntryFilter {
    let mut units = unique_values(j, "_SYSTEMD_UNIT");
    units.extend(unique_values(j, "UNIT"));
    let idents = unique_values(j, "SYSLOG_IDENTIFIER");
    let containers = unique_values(j, "CONTAINER_NAME");
    let keep = |v: &[String], there: &std::collections::HashSet<Vec<u8>>| -> Vec<String> {
        v.iter()
            .filter(|x| there.contains(x.as_bytes()))
            .cloned()
            .collect()
    };
    let mut pruned = EntryFilter {
        units: keep(&f.units, &units),
        identifiers: keep(&f.identifiers, &idents),
        containers: keep(&f.containers, &containers),
        trusted_uids: f.trusted_uids.clone(),
        trusted_units: f.trusted_units.clone(),
    };
    // No term at all would match everything: keep one that matches nothing.
    if pruned.units.is_empty() && pruned.identifiers.is_empty() && pruned.containers.is_empty() {
        pruned.units = f.units.iter().take(1).cloned().collect();
    }
    pruned
}

/// `_SYSTEMD_UNIT=u` OR (`_PID=1` AND `UNIT=u`) for each unit, OR
/// `SYSLOG_IDENTIFIER=i` for each identifier, OR `CONTAINER_NAME=c` for
/// each container: what `journalctl -u` does, so systemd's own
/// start/stop/restart lines about the kubelet come along.
pub(super) fn add_matches(j: &mut Journal, f: &EntryFilter) -> systemd::Result<()> {
    let mut first = true;
    let mut or = |j: &mut Journal| -> systemd::Result<()> {
        if !std::mem::replace(&mut first, false) {
            j.match_or()?;
        }
        Ok(())
    };
    for u in &f.units {
        or(j)?;
        j.match_add("_SYSTEMD_UNIT", u.as_str())?;
        or(j)?;
        j.match_add("_PID", "1")?;
        j.match_add("UNIT", u.as_str())?;
    }
    for i in &f.identifiers {
        or(j)?;
        j.match_add("SYSLOG_IDENTIFIER", i.as_str())?;
    }
    for c in &f.containers {
        or(j)?;
        j.match_add("CONTAINER_NAME", c.as_str())?;
    }
    Ok(())
}

/// The fields whose values an [`Interner`] shares.
#[derive(Clone, Copy)]
enum Slot {
    Host,
    Unit,
    Identifier,
    Stream,
    AboutUnit,
    Container,
}

/// Shares repeated field values (host, unit, identifier, stream) between
/// entries instead of allocating them anew for each. Consecutive entries
/// mostly repeat the last value of each field, which is compared first;
/// other values are looked up.
#[derive(Default)]
pub(super) struct Interner {
    last: [Option<(Vec<u8>, Text)>; 6],
    values: std::collections::HashMap<Vec<u8>, Text>,
}

impl Interner {
    fn get(&mut self, slot: Slot, v: &[u8]) -> Text {
        let last = &mut self.last[slot as usize];
        if let Some((bytes, t)) = last
            && bytes.as_slice() == v
        {
            return t.clone();
        }
        let t = if let Some(t) = self.values.get(v) {
            t.clone()
        } else {
            // Stream ids change with every kubelet restart: stay bounded.
            if self.values.len() > 4096 {
                self.values.clear();
            }
            let t: Text = String::from_utf8_lossy(v).into();
            self.values.insert(v.to_vec(), t.clone());
            t
        };
        *last = Some((v.to_vec(), t.clone()));
        t
    }
}

/// Whether an entry's message may become evidence (and so needs its cursor):
/// a kubelet error or warning, or one of the info lines that are markers.
/// The cursor of every other entry would be formatted for nothing; the
/// committed position is the last entry of each batch, which always gets one.
fn may_be_evidence(m: &[u8]) -> bool {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    static MARKERS: LazyLock<[Finder<'static>; 5]> = LazyLock::new(|| {
        [
            Finder::new("node"),
            Finder::new("Caches"),
            Finder::new("Watching"),
            Finder::new("Kubelet version"),
            Finder::new("Started kubelet"),
        ]
    });
    if m.first() != Some(&b'I') {
        // Errors and warnings, the JSON format, systemd's lines: keep.
        return true;
    }
    let body = &m[m.len().min(30)..];
    MARKERS.iter().any(|f| f.find(body).is_some())
}

/// Reads the current entry in one pass over its fields.
pub(super) fn read_entry(j: &mut Journal, names: &mut Interner) -> systemd::Result<Entry> {
    let mut e = Entry {
        at: Some(j.timestamp_usec()? as i64),
        ..Entry::default()
    };
    let mut message = None;
    j.restart_data();
    while let Some(field) = j.enumerate_data()? {
        let data = field.data();
        let Some(eq) = data.iter().position(|&b| b == b'=') else {
            continue;
        };
        let (name, v) = (&data[..eq], &data[eq + 1..]);
        match name {
            b"MESSAGE" => message = Some(v.to_vec()),
            b"_HOSTNAME" => e.host = Some(names.get(Slot::Host, v)),
            b"_SYSTEMD_UNIT" => e.unit = Some(names.get(Slot::Unit, v)),
            b"SYSLOG_IDENTIFIER" => e.identifier = Some(names.get(Slot::Identifier, v)),
            b"_STREAM_ID" => e.stream = Some(names.get(Slot::Stream, v)),
            b"UNIT" => e.about_unit = Some(names.get(Slot::AboutUnit, v)),
            b"CONTAINER_NAME" => e.container = Some(names.get(Slot::Container, v)),
            b"_LINE_BREAK" => e.cut = v == b"line-max",
            b"_PID" => e.pid = std::str::from_utf8(v).ok().and_then(|p| p.parse().ok()),
            b"_UID" => e.uid = std::str::from_utf8(v).ok().and_then(|p| p.parse().ok()),
            _ => {}
        }
    }
    e.from_systemd = e.pid == Some(1) && e.about_unit.is_some();
    e.message = message.unwrap_or_default();
    if may_be_evidence(&e.message) {
        e.cursor = Some(j.cursor()?);
    }
    Ok(e)
}

/// How long a following reader waits for journald's change notification:
/// briefly while entries are coming (journald coalesces its notifications,
/// but appends are visible at once), and up to a second while the journal
/// is quiet, so an idle service wakes about once a second.
fn wait_time(last_entry: Instant) -> Duration {
    if last_entry.elapsed() < Duration::from_secs(1) {
        Duration::from_millis(50)
    } else {
        Duration::from_secs(1)
    }
}

fn pump(
    spec: &Spec,
    j: &mut Journal,
    tx: &mpsc::Sender<ReaderEvent>,
    ctl: &mut mpsc::UnboundedReceiver<ReaderCtl>,
) -> Result<(), String> {
    let send = |ev: ReaderEvent| tx.blocking_send(ev).is_ok();
    let mut skip_cursor = match &spec.start {
        Start::After(c) => Some(c.clone()),
        _ => None,
    };
    // Loss accounting only matters while following.
    let mut probe = if spec.follow { Probe::open(spec) } else { None };
    let mut progress = Progress::default();
    if let (Some(p), Some(c)) = (probe.as_mut(), &skip_cursor) {
        progress.advance(seqnum(c));
        let lost = progress.lost_before(p.head());
        if lost > 0 && !send(ReaderEvent::Lost(lost)) {
            return Ok(());
        }
    }
    let mut batch = Vec::with_capacity(spec.batch);
    let mut names = Interner::default();
    // Following, files also leave the handle when vacuumed: only a read
    // to the end looks.
    let mut intact = Intact::new(j);
    // Reading without the match, after libsystemd gave up on a file.
    let mut whole = false;
    // The cursor of the last entry sent.
    let mut sent_upto: Option<String> = None;
    // A Tail is owed after entries were sent, and once at the start.
    let mut owe_tail = true;
    let mut sync = 0;
    let mut last_entry = Instant::now();
    loop {
        let n = j
            .next()
            .map_err(|e| format!("reading the next entry: {e}"))?;
        if n > 0 {
            // After seek_cursor, next() lands on the cursor's entry when it
            // still exists: that one was processed before the restart.
            if let Some(c) = skip_cursor.take() {
                if j.test_cursor(c.as_str()).unwrap_or(false) {
                    continue;
                }
            }
            let mut entry =
                read_entry(j, &mut names).map_err(|e| format!("reading an entry: {e}"))?;
            if whole {
                if !in_match(&spec.filter, &entry) {
                    continue;
                }
                if entry.cursor.is_none() {
                    entry.cursor = Some(j.cursor().map_err(|e| format!("reading a cursor: {e}"))?);
                }
            }
            // The last entry of a batch is where a commit may land: it
            // always carries its cursor.
            if batch.len() + 1 >= spec.batch && entry.cursor.is_none() {
                entry.cursor = Some(j.cursor().map_err(|e| format!("reading a cursor: {e}"))?);
            }
            if probe.is_some() {
                progress.advance(entry.cursor.as_deref().and_then(seqnum));
            }
            batch.push(entry);
            if batch.len() >= spec.batch {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(spec.batch));
                sent_upto = full.last().and_then(|e| e.cursor.clone());
                if !send(ReaderEvent::Entries(full)) {
                    return Ok(());
                }
                owe_tail = true;
                last_entry = Instant::now();
                if !answer(ctl, &mut sync, tx) {
                    return Ok(());
                }
            }
            continue;
        }
        if !batch.is_empty() {
            // A short batch at the end of what is there: its last entry is
            // the one a commit lands on.
            if let Some(last) = batch.last_mut() {
                if last.cursor.is_none() {
                    // next() found nothing: the read pointer is still on it,
                    // unless libsystemd dropped its file.
                    let c = match j.cursor() {
                        Ok(c) => c,
                        Err(e) => Probe::open(spec)
                            .and_then(|mut p| find_cursor(&mut p.j, last))
                            .ok_or_else(|| format!("reading a cursor: {e}"))?,
                    };
                    progress.advance(seqnum(&c));
                    last.cursor = Some(c);
                }
            }
            let full = std::mem::replace(&mut batch, Vec::with_capacity(spec.batch));
            sent_upto = full.last().and_then(|e| e.cursor.clone());
            if !send(ReaderEvent::Entries(full)) {
                return Ok(());
            }
            owe_tail = true;
            last_entry = Instant::now();
        }
        if !spec.follow {
            if let Some(what) = intact.check(j, &journal_files(&spec.target)) {
                if !send(ReaderEvent::Warning(damaged(&what, whole))) {
                    return Ok(());
                }
                if !whole {
                    if let Some(mut p) = Probe::open(spec) {
                        skip_cursor = resume_whole(&mut p.j, sent_upto.as_deref(), &spec.start)?;
                        *j = p.j;
                        intact = Intact::new(j);
                        whole = true;
                        continue;
                    }
                }
            }
            return Ok(());
        }
        let asked = sync;
        if !answer(ctl, &mut sync, tx) {
            return Ok(());
        }
        if sync != asked {
            // Asked to look again: look once more, then say Tail.
            owe_tail = true;
            continue;
        }
        // At the end of the filtered view, everything up to the tail was
        // read or skipped. Said once per stretch of reading, or when asked.
        if owe_tail {
            if let Some(p) = probe.as_mut() {
                progress.advance(p.tail());
            }
            if !send(ReaderEvent::Tail { sync }) {
                return Ok(());
            }
            owe_tail = false;
        }
        if tx.is_closed() {
            return Ok(());
        }
        // Invalidate (rotation, new files) also just means: call next() again.
        match j.wait(Some(wait_time(last_entry))) {
            Ok(JournalWaitResult::Nop | JournalWaitResult::Append) => {}
            Ok(JournalWaitResult::Invalidate) => {
                // Files were added or removed (rotation, vacuum).
                if let Some(p) = probe.as_mut() {
                    let _ = p.j.wait(Some(Duration::ZERO));
                    let head = p.head();
                    let lost = progress.lost_before(head.clone());
                    if lost > 0 {
                        progress.advance(head);
                        if !send(ReaderEvent::Lost(lost)) {
                            return Ok(());
                        }
                    }
                }
            }
            Err(e) => return Err(format!("waiting for the journal: {e}")),
        }
    }
}

/// Handles what the reader was asked: pongs at once, a sync is noted (and
/// a Tail owed). False when the consumer is gone.
fn answer(
    ctl: &mut mpsc::UnboundedReceiver<ReaderCtl>,
    sync: &mut u64,
    tx: &mpsc::Sender<ReaderEvent>,
) -> bool {
    while let Ok(c) = ctl.try_recv() {
        match c {
            ReaderCtl::Sync(n) => *sync = (*sync).max(n),
            ReaderCtl::Ping(n) => {
                if tx.blocking_send(ReaderEvent::Pong(n)).is_err() {
                    return false;
                }
            }
        }
    }
    true
}

/// Starts the reader thread. Returns once the journal is open (or failed to
/// open, with the reason).
pub fn spawn(spec: Spec, capacity: usize) -> Result<Reader, SourceError> {
    let (tx, rx) = mpsc::channel::<ReaderEvent>(capacity);
    let (ctl_tx, mut ctl_rx) = mpsc::unbounded_channel::<ReaderCtl>();
    let (opened_tx, opened_rx) = std_mpsc::sync_channel::<Result<(), SourceError>>(1);
    let handle = std::thread::Builder::new()
        .name("journal".into())
        .spawn(move || {
            // The handle is created, used and dropped on this thread only.
            let mut j = match open(&spec) {
                Ok(j) => {
                    let _ = opened_tx.send(Ok(()));
                    j
                }
                Err(e) => {
                    let _ = opened_tx.send(Err(e));
                    return;
                }
            };
            if let Err(e) = pump(&spec, &mut j, &tx, &mut ctl_rx) {
                let _ = tx.blocking_send(ReaderEvent::Failed(e));
            }
        })
        .map_err(|e| SourceError::Journal {
            path: "journal thread".into(),
            message: e.to_string(),
        })?;
    match opened_rx.recv() {
        Ok(Ok(())) => Ok(Reader {
            events: rx,
            ctl: ctl_tx,
            thread: Some(handle),
        }),
        Ok(Err(e)) => {
            let _ = handle.join();
            Err(e)
        }
        Err(_) => Err(SourceError::Journal {
            path: "journal thread".into(),
            message: "the reader thread ended while opening".into(),
        }),
    }
}

/// Entries of a journal read once from head to tail, as an iterator.
struct Drain {
    rx: mpsc::Receiver<ReaderEvent>,
    buf: VecDeque<Entry>,
    target: String,
    /// Files that could not be read, said first.
    unreadable: Vec<Unreadable>,
}

impl Iterator for Drain {
    type Item = Result<Item, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(u) = self.unreadable.pop() {
            return Some(Ok(Item::Malformed(crate::model::Malformed {
                place: u.path.display().to_string(),
                reason: format!("cannot be read, its entries are missing: {}", u.why()),
            })));
        }
        loop {
            if let Some(e) = self.buf.pop_front() {
                return Some(Ok(Item::Entry(e)));
            }
            match self.rx.blocking_recv()? {
                ReaderEvent::Entries(v) => self.buf.extend(v),
                ReaderEvent::Tail { .. } | ReaderEvent::Pong(_) | ReaderEvent::Lost(_) => {}
                ReaderEvent::Warning(reason) => {
                    // A warning that names its file needs no other place.
                    let (place, reason) = match reason.split_once(": ") {
                        Some((file, rest)) if file == self.target => (file.into(), rest.into()),
                        _ => (self.target.clone(), reason),
                    };
                    return Some(Ok(Item::Malformed(crate::model::Malformed {
                        place,
                        reason,
                    })));
                }
                ReaderEvent::Failed(message) => {
                    return Some(Err(SourceError::Journal {
                        path: self.target.clone(),
                        message,
                    }));
                }
            }
        }
    }
}

/// A journal file this process may not read.
#[derive(Debug)]
pub struct Unreadable {
    pub path: PathBuf,
    pub error: std::io::Error,
    /// The group that owns it (the one to be in).
    pub group: Option<String>,
}

impl Unreadable {
    /// In words, with the group that is missing.
    #[must_use]
    pub fn why(&self) -> String {
        match &self.group {
            Some(g) => format!(
                "{}: {} (it belongs to group {g}: run as root or as a member of {g}; the \
                 packaged unit has the groups systemd-journal and systemd-journal-remote, \
                 another goes in a drop-in: systemctl edit kubelet-sentinel, then \
                 [Service] SupplementaryGroups={g})",
                self.path.display(),
                self.error
            ),
            None => format!("{}: {}", self.path.display(), self.error),
        }
    }
}

/// A group's name by its id, from `/etc/group`.
pub(super) fn group_name(gid: u32) -> Option<String> {
    crate::users::group_of_id(gid).map(|g| g.name)
}

/// The journal files a target reads: a directory's (and its machine-id
/// subdirectories'), a file list, or the system's or a namespace's in
/// /var/log/journal and /run/log/journal.
fn journal_files(target: &Target) -> Vec<PathBuf> {
    let is_journal = |p: &std::path::Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".journal") || n.ends_with(".journal~"))
    };
    let subdirs = |d: &std::path::Path, keep: &dyn Fn(&str) -> bool| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && p.file_name().and_then(|n| n.to_str()).is_some_and(keep))
            .collect()
    };
    let roots = [
        std::path::Path::new("/var/log/journal"),
        std::path::Path::new("/run/log/journal"),
    ];
    let dirs: Vec<PathBuf> = match target {
        Target::Directory(d) => {
            let mut v = vec![d.clone()];
            v.extend(subdirs(d, &|_| true));
            v
        }
        Target::Files(fs) => return fs.clone(),
        Target::System => roots
            .iter()
            .flat_map(|r| subdirs(r, &|n| !n.contains('.')))
            .collect(),
        Target::Namespace(ns) => {
            let suffix = format!(".{ns}");
            roots
                .iter()
                .flat_map(|r| subdirs(r, &|n| n.ends_with(&suffix)))
                .collect()
        }
    };
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten().map(|e| e.path()))
        .filter(|p| is_journal(p))
        .collect();
    files.sort();
    files
}

/// The journal files of a directory (and its machine-id subdirectories)
/// or a file list that cannot be opened: libsystemd skips them silently.
#[must_use]
pub fn unreadable_files(target: &Target) -> Vec<Unreadable> {
    use std::os::unix::fs::MetadataExt as _;
    if matches!(target, Target::System | Target::Namespace(_)) {
        return Vec::new();
    }
    journal_files(target)
        .into_iter()
        .filter_map(|p| match std::fs::File::open(&p) {
            Ok(_) => None,
            Err(error) => Some(Unreadable {
                group: std::fs::metadata(&p).ok().and_then(|m| group_name(m.gid())),
                path: p,
                error,
            }),
        })
        .collect()
}

/// Reads journal files or one directory from the head, with the kubelet
/// matches applied by libsystemd.
pub fn read_paths(paths: &[PathBuf], filter: &EntryFilter) -> Result<Items, SourceError> {
    let target = match paths {
        [one] if one.is_dir() => Target::Directory(one.clone()),
        _ => Target::Files(paths.to_vec()),
    };
    read(&target, filter)
}

/// Reads a whole journal once, from the head. A directory is read host by
/// host ([`super::fleet`]).
pub fn read(target: &Target, filter: &EntryFilter) -> Result<Items, SourceError> {
    if let Target::Directory(dir) = target {
        let spec = super::fleet::FleetSpec {
            dir: dir.clone(),
            filter: filter.clone(),
            starts: super::fleet::Starts {
                first: Some(Start::Head),
                ..super::fleet::Starts::default()
            },
            follow: false,
            batch: 512,
        };
        let reader = super::fleet::spawn(spec, 8)?;
        // Unreadable files come as warnings, in order with the entries.
        return Ok(Box::new(Drain {
            rx: reader.events,
            buf: VecDeque::new(),
            target: target.to_string(),
            unreadable: Vec::new(),
        }));
    }
    let spec = Spec {
        target: target.clone(),
        filter: filter.clone(),
        start: Start::Head,
        follow: false,
        batch: 512,
    };
    // Dropping the Drain drops the receiver: the thread ends at its next send.
    let reader = spawn(spec, 8)?;
    Ok(Box::new(Drain {
        rx: reader.events,
        buf: VecDeque::new(),
        target: target.to_string(),
        unreadable: {
            let mut u = unreadable_files(target);
            u.reverse();
            u
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interned_values_are_shared_and_right_when_they_alternate() {
        let mut n = Interner::default();
        let a = n.get(Slot::Host, b"node-a");
        let b = n.get(Slot::Host, b"node-b");
        let a2 = n.get(Slot::Host, b"node-a");
        assert_eq!((&*a, &*b), ("node-a", "node-b"));
        assert!(std::sync::Arc::ptr_eq(&a, &a2));
        // The same bytes in another field are the same value.
        let u = n.get(Slot::Unit, b"node-a");
        assert!(std::sync::Arc::ptr_eq(&a, &u));
        assert_eq!(&*n.get(Slot::Stream, b"\xff"), "\u{fffd}");
    }

    #[test]
    fn evidence_needs_a_cursor_markers_and_non_info_lines() {
        let info = |body: &str| format!("I0101 00:00:00.000000 1 x.go:1] {body}");
        assert!(may_be_evidence(
            info("\"Unable to update node status\"").as_bytes()
        ));
        assert!(may_be_evidence(info("Started kubelet").as_bytes()));
        assert!(!may_be_evidence(
            info("\"SyncLoop (PLEG)\" pod=x").as_bytes()
        ));
        assert!(may_be_evidence(b"E0101 00:00:00.000000 1 x.go:1] anything"));
        assert!(may_be_evidence(b"{\"ts\":1}"));
        assert!(!may_be_evidence(b"I"));
    }

    #[test]
    fn cursor_seqnums_and_loss() {
        let c = "s=1f2e;i=1a;b=00;m=0;t=5f;x=9";
        assert_eq!(seqnum(c), Some(("1f2e".into(), 26)));
        let mut p = Progress::default();
        p.advance(seqnum(c));
        assert_eq!(p.lost_before(Some(("1f2e".into(), 27))), 0);
        assert_eq!(p.lost_before(Some(("1f2e".into(), 40))), 13);
        assert_eq!(p.lost_before(Some(("other".into(), 40))), 0);
        p.advance(Some(("1f2e".into(), 10)));
        assert_eq!(p.upto, Some(("1f2e".into(), 26)));
    }
}

#[cfg(test)]
mod eof_cursor {
    use systemd::journal::OpenFilesOptions;

    /// Writes export-format bytes into `file` with systemd-journal-remote.
    fn journal_remote(export: &[u8], file: &std::path::Path) {
        let mut child = std::process::Command::new("/lib/systemd/systemd-journal-remote")
            .arg(format!("--output={}", file.display()))
            .arg("-")
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), export).unwrap();
        assert!(child.wait().unwrap().success());
    }

    /// After `next()` finds nothing more, the read pointer stays on the last
    /// entry: its cursor can still be read (the reader relies on it).
    #[test]
    fn cursor_after_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.journal");
        let export = b"__REALTIME_TIMESTAMP=1\nMESSAGE=a\n\n__REALTIME_TIMESTAMP=2\nMESSAGE=b\n\n";
        journal_remote(export, &file);
        let mut j = OpenFilesOptions::default()
            .open_files([file.as_os_str().as_encoded_bytes()])
            .unwrap();
        j.seek_head().unwrap();
        let mut last = String::new();
        while j.next().unwrap() > 0 {
            last = j.cursor().unwrap();
        }
        assert_eq!(j.cursor().unwrap(), last);
        assert!(j.test_cursor(last.as_str()).unwrap());
    }

    /// Files that shrink or go away under a handle are not called damaged:
    /// journald trims a file it archives, and vacuum deletes files.
    #[test]
    fn trimmed_and_deleted_files_are_not_damage() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<_> = ["a", "b"]
            .iter()
            .map(|n| {
                let file = dir.path().join(format!("{n}.journal"));
                journal_remote(b"__REALTIME_TIMESTAMP=1\nMESSAGE=a\n\n", &file);
                file
            })
            .collect();
        let j = OpenFilesOptions::default()
            .open_files(files.iter().map(|f| f.as_os_str().as_encoded_bytes()))
            .unwrap();
        let mut intact = super::super::sd::Intact::new(&j);
        assert_eq!(intact.check(&j, &files), None);
        let full = j.usage().unwrap();
        // Trimmed to its first 4 KiB, as an archived file's unused tail.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&files[0])
            .unwrap()
            .set_len(4096)
            .unwrap();
        assert!(j.usage().unwrap() < full, "the handle's files shrank");
        assert_eq!(intact.check(&j, &files), None);
        // Deleted: the handle keeps it open; nothing left the handle.
        std::fs::remove_file(&files[1]).unwrap();
        assert_eq!(intact.check(&j, &files), None);
    }
}
