//! One libsystemd journal handle and what both readers do with it: open
//! it on a target, apply the kubelet match, seek, read an entry in one pass,
//! notice files libsystemd dropped, find a cursor again, wait on its file
//! descriptor. [`super::single`] and [`super::collector`] both import this
//! file and never each other.
//!
//! Architecture invariant: a `Journal` is created, used and dropped on one
//! thread (man `sd_journal_open`); nothing here sends one anywhere.

use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use systemd::journal::{
    Journal, JournalWaitResult, OpenDirectoryOptions, OpenFilesOptions, OpenOptions,
};

use super::protocol::{Mode, ReadError, Warning};
use super::{Entry, EntryFilter, SourceError, Text};

/// Which journal to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
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
pub(crate) enum Start {
    Head,
    /// Only entries written from now on.
    Tail,
    /// Entries at or after this time (µs).
    Realtime(u64),
    /// Just after this cursor (resume).
    After(String),
}

impl Start {
    /// The cursor the read resumes after, if it does.
    pub(crate) fn cursor(&self) -> Option<&str> {
        match self {
            Start::After(c) => Some(c),
            _ => None,
        }
    }
}

/// The time (`t=`, µs) of a cursor.
pub(crate) fn realtime_of(cursor: &str) -> Option<u64> {
    cursor
        .split(';')
        .find_map(|p| p.strip_prefix("t="))
        .and_then(|t| u64::from_str_radix(t, 16).ok())
}

/// `s=` (sequence number id) and `i=` (sequence number) of a cursor.
pub(crate) fn seqnum(cursor: &str) -> Option<(String, u64)> {
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

fn journal_err(target: &Target, what: &str, e: &dyn std::fmt::Display) -> SourceError {
    SourceError::Journal {
        path: target.to_string(),
        message: format!("{what}: {e}"),
    }
}

/// Opens `target` with the kubelet match, placed at `start`. A one-time
/// read keeps only the match terms that occur (see [`present_terms`]).
pub(crate) fn open(
    t: &Target,
    filter: &EntryFilter,
    start: &Start,
    mode: Mode,
) -> Result<Journal, SourceError> {
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
    let terms = if mode.follows() {
        terms(filter)
    } else {
        let files = match (t, start) {
            (Target::Files(fs), Start::Head) => Some(fs.as_slice()),
            _ => None,
        };
        present_terms(&mut j, filter, files)
    };
    add_terms(&mut j, &terms).map_err(|e| journal_err(t, "cannot add matches", &e))?;
    seek(&mut j, start).map_err(|e| journal_err(t, "cannot seek", &e))?;
    Ok(j)
}

/// A handle on `files` without matches.
pub(crate) fn unfiltered(files: &[PathBuf]) -> Option<Journal> {
    let mut j = OpenFilesOptions::default()
        .open_files(files.iter().map(|p| p.as_os_str().as_encoded_bytes()))
        .ok()?;
    j.set_data_threshold(0).ok()?;
    Some(j)
}

/// Places a handle where a read starts.
pub(crate) fn seek(j: &mut Journal, start: &Start) -> systemd::Result<()> {
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
pub(crate) struct Intact {
    usage: u64,
}

impl Intact {
    pub(crate) fn new(j: &Journal) -> Self {
        Self {
            usage: j.usage().unwrap_or(0),
        }
    }

    /// The file that left the handle since the last look, when one did:
    /// of `files`, the one still there whose size went missing. A file
    /// deleted (vacuum) or truncated (journald trims a file it archives)
    /// is no such file: neither is named.
    pub(crate) fn check(&mut self, j: &Journal, files: &[PathBuf]) -> Option<PathBuf> {
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
pub(crate) fn damaged(file: &Path, whole: bool) -> Warning {
    let message = if whole {
        "damaged: libsystemd stopped reading it partway, and the kubelet entries after the \
         damage are missing (`journalctl --verify` shows where); the rest was read"
    } else {
        "damaged: libsystemd stopped reading it partway through the kubelet match \
         (`journalctl --verify` shows where); the rest is read entry by entry"
    };
    Warning::file(file.to_path_buf(), message.to_string())
}

/// The kubelet match of [`add_matches`], applied to an entry read without
/// it.
pub(crate) fn in_match(f: &EntryFilter, e: &Entry) -> bool {
    let has =
        |v: &[String], x: &Option<Text>| x.as_deref().is_some_and(|x| v.iter().any(|y| y == x));
    has(&f.units, &e.unit)
        || (e.pid == Some(1) && has(&f.units, &e.about_unit))
        || has(&f.identifiers, &e.identifier)
        || has(&f.containers, &e.container)
        || (has(&f.context_units, &e.unit)
            && !e
                .unit
                .as_deref()
                .is_some_and(sentinel_core::context::is_runtime_unit))
        || (e.pid == Some(1) && has(&f.context_units, &e.about_unit))
        || (f.kernel && e.kernel)
}

/// Places `whole`, an unfiltered handle on the same files, after `pos` (the
/// last entry read) or, with none, where the read began. Returns the cursor
/// of an entry `next()` lands on that was already read.
pub(crate) fn resume_whole(
    whole: &mut Journal,
    pos: Option<&str>,
    start: &Start,
) -> Result<Option<String>, ReadError> {
    let start = match pos {
        Some(c) => Start::After(c.to_string()),
        None => start.clone(),
    };
    seek(whole, &start).map_err(|source| ReadError::Seek {
        cursor: start.cursor().map(str::to_string),
        source,
    })?;
    Ok(match start {
        Start::After(c) => Some(c),
        _ => None,
    })
}

/// The cursor of `last` when the handle it came through can no longer tell
/// it (libsystemd dropped its file, see [`Intact`]): found again through an
/// unfiltered handle `j`, which walks the files' own entry order rather
/// than the damaged field's, as the entry at its time with its message.
pub(crate) fn find_cursor(j: &mut Journal, last: &Entry) -> Option<String> {
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

/// The values `field` takes anywhere in the open files; `None` when
/// libsystemd cannot tell them all (a damaged data object stops its
/// enumeration where it is).
fn unique_values(j: &mut Journal, field: &str) -> Option<std::collections::HashSet<Vec<u8>>> {
    let mut out = std::collections::HashSet::new();
    j.query_unique(field).ok()?;
    while let Some(d) = j.enumerate_unique().ok()? {
        let data = d.data();
        if let Some(eq) = data.iter().position(|&b| b == b'=') {
            out.insert(data[eq + 1..].to_vec());
        }
    }
    Some(out)
}

/// One alternative of the kubelet match (libsystemd takes the terms as alternatives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Term<'a> {
    /// `_SYSTEMD_UNIT=u`: the unit's own lines.
    Unit(&'a str),
    /// `_PID=1` AND `UNIT=u`: systemd's lines about the unit.
    AboutUnit(&'a str),
    /// `SYSLOG_IDENTIFIER=i`.
    Identifier(&'a str),
    /// `CONTAINER_NAME=c`.
    Container(&'a str),
    /// `_TRANSPORT=kernel`.
    Kernel,
}

impl<'a> Term<'a> {
    /// The field whose [`Term::value`] the term asks for (with `_PID=1`
    /// for [`Term::AboutUnit`]).
    fn field(self) -> &'static str {
        match self {
            Term::Unit(_) => "_SYSTEMD_UNIT",
            Term::AboutUnit(_) => "UNIT",
            Term::Identifier(_) => "SYSLOG_IDENTIFIER",
            Term::Container(_) => "CONTAINER_NAME",
            Term::Kernel => "_TRANSPORT",
        }
    }

    fn value(self) -> &'a str {
        match self {
            Term::Unit(v) | Term::AboutUnit(v) | Term::Identifier(v) | Term::Container(v) => v,
            Term::Kernel => "kernel",
        }
    }
}

/// The terms of `f`'s match: `_SYSTEMD_UNIT=u` OR (`_PID=1` AND `UNIT=u`)
/// for each unit, OR `SYSLOG_IDENTIFIER=i` for each identifier, OR
/// `CONTAINER_NAME=c` for each container: what `journalctl -u` does, so
/// systemd's own start/stop/restart lines about the kubelet come along.
/// The context units (design 5.4) are matched the same way as the
/// kubelet's units (a container runtime's by systemd's lines about it
/// only: see [`sentinel_core::context::is_runtime_unit`]), and the kernel's lines
/// by `_TRANSPORT=kernel` (the core keeps only its OOM-killer, link and node-problem-detector
/// lines): they are read in the same pass, so the one cursor (a
/// collector: one per host) covers them and a resume after a crash reads
/// none of them twice or never.
pub(crate) fn terms(f: &EntryFilter) -> Vec<Term<'_>> {
    let mut out = Vec::new();
    for u in &f.units {
        out.extend([Term::Unit(u), Term::AboutUnit(u)]);
    }
    out.extend(f.identifiers.iter().map(|i| Term::Identifier(i)));
    out.extend(f.containers.iter().map(|c| Term::Container(c)));
    for u in &f.context_units {
        if !sentinel_core::context::is_runtime_unit(u) {
            out.push(Term::Unit(u));
        }
        out.push(Term::AboutUnit(u));
    }
    if f.kernel {
        out.push(Term::Kernel);
    }
    out
}

/// For a read to the end of what is there (`scan`, `run --once`): the
/// terms of `f` whose field takes their value somewhere in the open files
/// (`_PID=1` AND `UNIT=u` needs `UNIT=u`, `_SYSTEMD_UNIT=u` needs that
/// field's own value). libsystemd evaluates every term of a match for
/// every entry and file, so twenty defaults of which one occurs cost
/// twice the reading time; the terms that remain match exactly the same
/// entries. A following reader keeps every term: a unit may start
/// writing later. Where a field's values cannot all be told, every term
/// stays.
///
/// Given the handle's `files` (a read from their head), an identifier's
/// or a container's term is dropped too where each of its entries in them
/// is one of a kubelet unit's (`SYSLOG_IDENTIFIER=kubelet` under
/// `kubelet.service`, the usual case): libsystemd walks each term's own
/// list of entries for every entry it hands on, so a second term over the
/// same entries costs about a tenth of the read.
/// [`super::census::covered_by`] proves it from the files' lists, which
/// only files no longer written keep still. Not for a read placed by time
/// or cursor: libsystemd places each term by bisecting its own list, and
/// where the times in a file do not rise (a clock set back) two lists
/// can place the read apart.
pub(crate) fn present_terms<'f>(
    j: &mut Journal,
    f: &'f EntryFilter,
    files: Option<&[PathBuf]>,
) -> Vec<Term<'f>> {
    let all = terms(f);
    let mut there: std::collections::HashMap<&str, std::collections::HashSet<Vec<u8>>> =
        std::collections::HashMap::new();
    for t in &all {
        if !there.contains_key(t.field()) {
            let Some(values) = unique_values(j, t.field()) else {
                return all;
            };
            there.insert(t.field(), values);
        }
    }
    let present: Vec<Term<'f>> = all
        .iter()
        .copied()
        .filter(|t| there[t.field()].contains(t.value().as_bytes()))
        .collect();
    if present.is_empty() {
        // No term at all would match everything: keep one that matches
        // nothing.
        return all.into_iter().take(1).collect();
    }
    match files {
        Some(files) => without_covered(present, files),
        None => present,
    }
}

/// `terms` without the identifiers' and containers' whose entries in
/// `files` are all the units' (see [`present_terms`]).
fn without_covered<'f>(terms: Vec<Term<'f>>, files: &[PathBuf]) -> Vec<Term<'f>> {
    let units: Vec<(&str, &str)> = terms
        .iter()
        .filter(|t| matches!(t, Term::Unit(_)))
        .map(|t| (t.field(), t.value()))
        .collect();
    if units.is_empty() {
        return terms;
    }
    terms
        .into_iter()
        .filter(|t| {
            let covered = matches!(t, Term::Identifier(_) | Term::Container(_))
                && super::census::covered_by(files, (t.field(), t.value()), &units);
            if covered {
                tracing::debug!(
                    "{}={}: each of its entries is a unit's, the unit's term reads it",
                    t.field(),
                    t.value()
                );
            }
            !covered
        })
        .collect()
}

/// Adds `terms` to the handle's match, each an alternative.
pub(crate) fn add_terms(j: &mut Journal, terms: &[Term<'_>]) -> systemd::Result<()> {
    for (n, t) in terms.iter().enumerate() {
        if n > 0 {
            j.match_or()?;
        }
        match *t {
            Term::AboutUnit(u) => {
                j.match_add("_PID", "1")?;
                j.match_add("UNIT", u)?;
            }
            other => {
                j.match_add(other.field(), other.value())?;
            }
        }
    }
    Ok(())
}

/// Every term of `f` (see [`terms`]), as a following reader asks.
pub fn add_matches(j: &mut Journal, f: &EntryFilter) -> systemd::Result<()> {
    add_terms(j, &terms(f))
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
pub(crate) struct Interner {
    last: [Option<(Vec<u8>, Text)>; 6],
    values: std::collections::HashMap<Vec<u8>, Text>,
    /// The host each boot (`_BOOT_ID`) was read from: journald writes
    /// `_HOSTNAME` on every entry, so an entry without it has lost it to
    /// damage (a flipped bit in its item list), and its boot still says
    /// whose it is. Without this it would be read as a node `unknown`.
    hosts_by_boot: std::collections::HashMap<Vec<u8>, Text>,
    /// The last boot and host paired, compared first (entries mostly come
    /// in runs of one boot).
    last_boot: Option<(Vec<u8>, Text)>,
    /// The group key and this batch's copy of it.
    group: Option<(Text, Text)>,
    /// The current entry's `_BOOT_ID`, in a buffer kept between entries
    /// (an allocation an entry otherwise).
    boot: Vec<u8>,
}

impl Interner {
    /// A batch of entries went to the consumer: from now on, new copies.
    /// The consumer drops a batch's names while the reader fills the
    /// next; were they the same `Arc`s, both threads would write one
    /// count's cache line for every entry (measured: a twentieth of a
    /// one-host read). A few small allocations a batch instead.
    pub(crate) fn new_batch(&mut self) {
        self.last = Default::default();
        self.values.clear();
        self.last_boot = None;
        self.group = None;
    }

    /// `key` (a collector's group), as this batch's copy.
    pub(crate) fn group(&mut self, key: &Text) -> Text {
        match &self.group {
            Some((k, t)) if **k == **key => t.clone(),
            _ => {
                let t: Text = Text::from(&**key);
                self.group = Some((key.clone(), t.clone()));
                t
            }
        }
    }

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

    /// The host of `boot`: learnt from an entry that has one, or, for an
    /// entry that lost its `_HOSTNAME`, what its boot's other entries said.
    fn host_of_boot(&mut self, boot: &[u8], host: Option<Text>) -> Option<Text> {
        if let (Some((b, lh)), Some(h)) = (&self.last_boot, &host)
            && b.as_slice() == boot
            && lh == h
        {
            return host;
        }
        match host {
            Some(h) => {
                self.last_boot = Some((boot.to_vec(), h.clone()));
                if self.hosts_by_boot.get(boot) != Some(&h) {
                    // Boots are few (one per host and restart): stay bounded.
                    if self.hosts_by_boot.len() > 4096 {
                        self.hosts_by_boot.clear();
                    }
                    self.hosts_by_boot.insert(boot.to_vec(), h.clone());
                }
                Some(h)
            }
            None => self.hosts_by_boot.get(boot).cloned(),
        }
    }
}

/// Whether an entry's message may become evidence (and so needs its cursor):
/// a kubelet error or warning, or one of the info lines that are markers.
/// The cursor of every other entry would be formatted for nothing; the
/// committed position is the last entry of each batch, which always gets one.
fn may_be_evidence(m: &[u8]) -> bool {
    use aho_corasick::AhoCorasick;
    use std::sync::LazyLock;
    // One pass over the message for all the words (a SIMD searcher),
    // where a search a word took five.
    static MARKERS: LazyLock<AhoCorasick> = LazyLock::new(|| {
        // Leftmost semantics: only they get the packed (Teddy) searcher.
        AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
            .build([
                "node",
                "Caches",
                "Watching",
                "Kubelet version",
                "Started kubelet",
            ])
            .expect("fixed words")
    });
    if m.first() != Some(&b'I') {
        // Errors and warnings, the JSON format, systemd's lines: keep.
        return true;
    }
    MARKERS.is_match(&m[m.len().min(30)..])
}

/// `v` as `str::parse::<u32>` reads it (an optional `+`, then only
/// digits, no overflow), without the UTF-8 check first: every entry has
/// a `_PID`.
fn number(v: &[u8]) -> Option<u32> {
    let digits = v.strip_prefix(b"+").unwrap_or(v);
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u32, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u32::from(b - b'0'))
    })
}

/// Fields journald (or journal-remote, from the sender's) writes once to
/// every entry (`_HOSTNAME`, `_SYSTEMD_UNIT`, `_BOOT_ID`): seen twice, the
/// entry's items are not its own.
const ONCE: usize = 3;

/// Reads the current entry in one pass over its fields. `None`: a damaged
/// entry object that libsystemd reads without a word (D4): an item it
/// skipped as bad took the entry's MESSAGE (every entry has one: the
/// text formats refuse an entry without), or a size past its end read the
/// next entries' items as its own (a field written once came twice). It is
/// passed over like an entry the walk skipped, so where the census runs
/// (see `census`) the file is named with what it lost, instead of a retry
/// read as an empty line or as another entry's.
pub(crate) fn read_entry(j: &mut Journal, names: &mut Interner) -> systemd::Result<Option<Entry>> {
    let mut e = Entry {
        at: Some(j.timestamp_usec()? as i64),
        ..Entry::default()
    };
    let mut message = None;
    let mut boot = false;
    let mut once = [false; ONCE];
    j.restart_data();
    while let Some(field) = j.enumerate_data()? {
        let Some(v) = field.value() else {
            continue;
        };
        // A field written once, seen again (see `ONCE`).
        let mut again = |k: usize| std::mem::replace(&mut once[k], true);
        match field.name() {
            b"MESSAGE" => message = Some(v.to_vec()),
            b"_HOSTNAME" if again(0) => return Ok(None),
            b"_HOSTNAME" => e.host = Some(names.get(Slot::Host, v)),
            b"_SYSTEMD_UNIT" if again(1) => return Ok(None),
            b"_SYSTEMD_UNIT" => e.unit = Some(names.get(Slot::Unit, v)),
            b"SYSLOG_IDENTIFIER" => e.identifier = Some(names.get(Slot::Identifier, v)),
            b"_STREAM_ID" => e.stream = Some(names.get(Slot::Stream, v)),
            b"UNIT" => e.about_unit = Some(names.get(Slot::AboutUnit, v)),
            b"CONTAINER_NAME" => e.container = Some(names.get(Slot::Container, v)),
            b"_LINE_BREAK" => e.cut = v == b"line-max",
            b"_PID" => e.pid = number(v),
            b"_UID" => e.uid = number(v),
            b"_TRANSPORT" => e.kernel = v == b"kernel",
            b"_BOOT_ID" if again(2) => return Ok(None),
            b"_BOOT_ID" => {
                names.boot.clear();
                names.boot.extend_from_slice(v);
                boot = true;
            }
            _ => {}
        }
    }
    if boot {
        let boot = std::mem::take(&mut names.boot);
        e.host = names.host_of_boot(&boot, e.host.take());
        names.boot = boot;
    }
    e.from_systemd = e.pid == Some(1) && e.about_unit.is_some();
    let Some(message) = message else {
        return Ok(None);
    };
    e.message = message;
    if may_be_evidence(&e.message) {
        e.cursor = Some(j.cursor()?);
    }
    Ok(Some(e))
}

/// Waits until the journal changes, `ctl` becomes readable, or `timeout`
/// passes, whichever comes first: `sd_journal_wait` with a second file
/// descriptor, as systemd's `man/journal-iterate-poll.c` does it (poll the
/// journal's fd, then `sd_journal_process`). The handle must have been
/// waited on once with `Journal::wait` first: that first call creates the
/// fd and drops files vacuumed meanwhile, which `sd_journal_get_fd` alone
/// does not.
///
/// The timeout stays the caller's: libsystemd's own (`sd_journal_get_timeout`,
/// which the crate does not wrap) only asks for one on file systems without
/// inotify, where it is 250 ms.
#[allow(unsafe_code)]
pub(crate) fn wait(
    j: &mut Journal,
    ctl: BorrowedFd<'_>,
    timeout: Duration,
) -> systemd::Result<JournalWaitResult> {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let raw = j.fd()?;
    {
        // SAFETY: `raw` is the inotify fd that `sd_journal_get_fd` created
        // for this handle and keeps until `sd_journal_close`, which only
        // the `Journal`'s drop calls; `j` is borrowed for the whole
        // function, so the handle outlives this `BorrowedFd`, which is
        // dropped at the end of this block, before the handle is used
        // again. libsystemd neither closes nor replaces that fd in between
        // (only `sd_journal_close` does), and nothing here closes it.
        let journal_fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let mut fds = [
            PollFd::new(&journal_fd, PollFlags::IN),
            PollFd::new(&ctl, PollFlags::IN),
        ];
        let timeout = Timespec {
            tv_sec: timeout.as_secs() as _,
            tv_nsec: timeout.subsec_nanos().into(),
        };
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(std::io::Error::from(e).into()),
        }
    }
    // Like `sd_journal_wait` after its poll: whether or not the fd is
    // readable (a timeout), take what inotify says (it reads without
    // blocking).
    j.process()
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

/// A group's name by its id, from the name service.
pub(crate) fn group_name(gid: u32) -> Option<String> {
    crate::users::group_of_id(gid).map(|g| g.name)
}

/// The journal files a target reads: a directory's (and its machine-id
/// subdirectories'), a file list, or the system's or a namespace's in
/// /var/log/journal and /run/log/journal.
pub(crate) fn journal_files(target: &Target) -> Vec<PathBuf> {
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
pub(crate) fn unreadable_files(target: &Target) -> Vec<Unreadable> {
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

#[cfg(test)]
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

    /// The match's terms as a damaged file's walk applies them: systemd's
    /// lines about a context unit (pid 1 only), a network or time
    /// daemon's own lines, the kernel's; not a runtime's own chatter, not
    /// a look-alike from another writer.
    #[test]
    fn the_match_takes_the_context_units_and_the_kernel() {
        let f = EntryFilter::default();
        let e = |unit: Option<&str>, about: Option<&str>, pid: u32, kernel: bool| Entry {
            unit: unit.map(Into::into),
            about_unit: about.map(Into::into),
            pid: Some(pid),
            kernel,
            ..Entry::default()
        };
        assert!(in_match(
            &f,
            &e(Some("init.scope"), Some("containerd.service"), 1, false)
        ));
        assert!(!in_match(
            &f,
            &e(
                Some("session-3.scope"),
                Some("containerd.service"),
                77,
                false
            )
        ));
        assert!(in_match(&f, &e(Some("chronyd.service"), None, 600, false)));
        assert!(in_match(
            &f,
            &e(Some("systemd-networkd.service"), None, 600, false)
        ));
        assert!(!in_match(
            &f,
            &e(Some("containerd.service"), None, 900, false)
        ));
        assert!(in_match(&f, &e(None, None, 0, true)));
        assert!(!in_match(&f, &e(Some("session-3.scope"), None, 77, false)));
        let off = EntryFilter {
            context_units: Vec::new(),
            kernel: false,
            ..EntryFilter::default()
        };
        assert!(!in_match(&off, &e(None, None, 0, true)));
        assert!(!in_match(
            &off,
            &e(Some("chronyd.service"), None, 600, false)
        ));
    }

    #[test]
    fn numbers_read_as_str_parse_reads_them() {
        for v in [
            "1",
            "+1",
            "0",
            "007",
            "4294967295",
            "4294967296",
            "",
            "+",
            "-1",
            "+-1",
            "1 ",
            " 1",
            "12a",
            "\u{663}",
        ] {
            assert_eq!(super::number(v.as_bytes()), v.parse::<u32>().ok(), "{v:?}");
        }
        assert_eq!(super::number(b"\xff1"), None);
    }

    #[test]
    fn cursor_seqnums() {
        let c = "s=1f2e;i=1a;b=00;m=0;t=5f;x=9";
        assert_eq!(seqnum(c), Some(("1f2e".into(), 26)));
    }
}

/// Writes export-format bytes into `file` with systemd-journal-remote (tests).
#[cfg(test)]
pub(super) fn journal_remote(export: &[u8], file: &std::path::Path) {
    journal_remote_with(export, file, &[]);
}

/// [`journal_remote`] with environment variables (the file's format:
/// `SYSTEMD_JOURNAL_COMPACT`, `SYSTEMD_JOURNAL_KEYED_HASH`).
#[cfg(test)]
pub(super) fn journal_remote_with(export: &[u8], file: &std::path::Path, env: &[(&str, &str)]) {
    let mut child = std::process::Command::new("/lib/systemd/systemd-journal-remote")
        .arg(format!("--output={}", file.display()))
        .arg("-")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), export).unwrap();
    assert!(child.wait().unwrap().success());
}

#[cfg(test)]
mod eof_cursor {
    use super::journal_remote;
    use systemd::journal::OpenFilesOptions;

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
        let mut intact = super::Intact::new(&j);
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

#[cfg(test)]
mod one_time_terms {
    use super::{EntryFilter, Term, add_terms, journal_remote, present_terms, terms};
    use systemd::journal::{Journal, OpenFilesOptions};

    fn messages(j: &mut Journal) -> Vec<String> {
        j.seek_head().unwrap();
        let mut out = Vec::new();
        while j.next().unwrap() > 0 {
            let m = j.get_data("MESSAGE").unwrap().unwrap();
            out.push(String::from_utf8_lossy(m.value().unwrap()).into_owned());
        }
        out
    }

    /// A one-time read asks libsystemd only for the terms whose own field
    /// takes their value in the files: the kubelet's lines and systemd's
    /// lines about it, a context unit's own lines, but not systemd's lines
    /// about containerd when only containerd wrote (a runtime's own lines
    /// are never asked for), nor the kernel when it wrote nothing. It
    /// reads what every term reads.
    #[test]
    fn a_one_time_read_asks_only_for_terms_that_occur() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.journal");
        let export = b"__REALTIME_TIMESTAMP=1\n_SYSTEMD_UNIT=kubelet.service\nSYSLOG_IDENTIFIER=kubelet\nMESSAGE=kubelet line\n\n\
__REALTIME_TIMESTAMP=2\n_PID=1\nUNIT=kubelet.service\nSYSLOG_IDENTIFIER=systemd\nMESSAGE=Started kubelet\n\n\
__REALTIME_TIMESTAMP=3\n_SYSTEMD_UNIT=containerd.service\nSYSLOG_IDENTIFIER=containerd\nMESSAGE=containerd line\n\n\
__REALTIME_TIMESTAMP=4\n_SYSTEMD_UNIT=systemd-networkd.service\nSYSLOG_IDENTIFIER=systemd-networkd\nMESSAGE=eth0: Lost carrier\n\n\
__REALTIME_TIMESTAMP=5\n_SYSTEMD_UNIT=cron.service\nSYSLOG_IDENTIFIER=CRON\nMESSAGE=cron line\n\n";
        journal_remote(export, &file);
        let open = || {
            OpenFilesOptions::default()
                .open_files([file.as_os_str().as_encoded_bytes()])
                .unwrap()
        };
        let f = EntryFilter::default();
        let mut j = open();
        let present = present_terms(&mut j, &f, None);
        assert_eq!(
            present,
            [
                Term::Unit("kubelet.service"),
                Term::AboutUnit("kubelet.service"),
                Term::Identifier("kubelet"),
                Term::Unit("systemd-networkd.service"),
            ]
        );
        add_terms(&mut j, &present).unwrap();
        let mut every = open();
        add_terms(&mut every, &terms(&f)).unwrap();
        let read = messages(&mut j);
        assert_eq!(
            read,
            ["kubelet line", "Started kubelet", "eth0: Lost carrier"]
        );
        assert_eq!(messages(&mut every), read);
        // None of them there: one term that matches nothing, not none
        // (which would match everything).
        let other = EntryFilter {
            units: vec!["k3s.service".into()],
            identifiers: vec![],
            containers: vec![],
            context_units: vec![],
            kernel: false,
            ..EntryFilter::default()
        };
        let mut j = open();
        let present = present_terms(&mut j, &other, None);
        assert_eq!(present, [Term::Unit("k3s.service")]);
        add_terms(&mut j, &present).unwrap();
        assert!(messages(&mut j).is_empty());
    }

    /// Given its files, a one-time read leaves out the identifier's term
    /// when each of its entries there is the kubelet unit's, and reads the
    /// same; one line of the identifier under another unit keeps it, and
    /// that line is read.
    #[test]
    fn an_identifier_covered_by_the_unit_is_not_asked_for_again() {
        let dir = tempfile::tempdir().unwrap();
        let kubelet = |t: u32| {
            format!(
                "__REALTIME_TIMESTAMP={t}\n_SYSTEMD_UNIT=kubelet.service\nSYSLOG_IDENTIFIER=kubelet\nMESSAGE=k{t}\n\n"
            )
        };
        let a = dir.path().join("a.journal");
        journal_remote((1..=40).map(kubelet).collect::<String>().as_bytes(), &a);
        let b = dir.path().join("b.journal");
        let stray = "__REALTIME_TIMESTAMP=41\n_SYSTEMD_UNIT=run-k.service\nSYSLOG_IDENTIFIER=kubelet\nMESSAGE=stray\n\n";
        journal_remote(format!("{}{stray}", kubelet(42)).as_bytes(), &b);
        let f = EntryFilter::default();
        let read = |files: &[std::path::PathBuf]| {
            let mut j = OpenFilesOptions::default()
                .open_files(files.iter().map(|p| p.as_os_str().as_encoded_bytes()))
                .unwrap();
            let present = present_terms(&mut j, &f, Some(files));
            add_terms(&mut j, &present).unwrap();
            (present, messages(&mut j))
        };
        let (present, lines) = read(std::slice::from_ref(&a));
        assert_eq!(present, [Term::Unit("kubelet.service")]);
        assert_eq!(lines.len(), 40);
        let (present, lines) = read(&[a.clone(), b.clone()]);
        assert_eq!(
            present,
            [Term::Unit("kubelet.service"), Term::Identifier("kubelet")]
        );
        assert_eq!(lines.len(), 42);
        assert!(lines.contains(&"stray".to_string()));
    }
}
