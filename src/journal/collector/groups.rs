//! A collector directory's files, grouped by writer: what a group is (its
//! key), which files the directory holds, which of them cannot be read yet,
//! and where each group starts.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::journal::census::{hex, seqnum_id};
use crate::journal::handle::{Start, Unreadable, group_name, seqnum};

/// Where each group starts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Starts {
    /// Committed cursors by group.
    pub known: BTreeMap<String, String>,
    /// A cursor from before groups were read apart (one handle over the
    /// whole directory): every group resumes after its time.
    pub legacy: Option<String>,
    /// The files each group was read over, as committed (see
    /// [`sentinel_core::model::GroupFiles`]).
    pub files: BTreeMap<String, sentinel_core::model::GroupFiles>,
    /// Where a group with no cursor begins (the service: `start_at` as
    /// the store kept it; `scan`: the head), whether it is there at the
    /// start or appears later: one rule, so a restart reads a group no
    /// differently than the reading before it would have. `None`: the head.
    pub first: Option<Start>,
}

impl Starts {
    pub(super) fn start_of(&self, key: &str) -> Start {
        if let Some(c) = self.known.get(key) {
            return Start::After(c.clone());
        }
        if let Some(c) = &self.legacy {
            return Start::After(c.clone());
        }
        self.first.clone().unwrap_or(Start::Head)
    }
}

fn is_journal(name: &str) -> bool {
    name.ends_with(".journal") || name.ends_with(".journal~")
}

/// The journal file a sync tool is copying in under a temporary name:
/// `rsync` writes `.NAME.XXXXXX` beside `NAME` and renames it when done.
/// Its group waits for it as for a file copied in place (see
/// `Incomplete`).
pub(super) fn sync_temp_target(name: &str) -> Option<&str> {
    let rest = name.strip_prefix('.')?;
    let (target, suffix) = rest.rsplit_once('.')?;
    (suffix.len() == 6 && suffix.bytes().all(|b| b.is_ascii_alphanumeric()) && is_journal(target))
        .then_some(target)
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
pub(super) fn group_key(dir: &Path, path: &Path) -> Option<String> {
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
    Header::MachineId(hex(id))
}

/// What a journal file's header says of its end, and which file it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Ends {
    /// Its file ID (bytes 24..40), in lower-case hex.
    pub id: String,
    /// `seqnum_id` (bytes 72..88), in lower-case hex: the `s=` of its
    /// entries' cursors.
    pub seqnum_id: String,
    /// `tail_entry_seqnum` (bytes 160..168): the newest entry's number.
    pub tail_seqnum: u64,
    /// `tail_entry_realtime` (bytes 192..200), when there is one.
    pub tail_realtime: Option<sentinel_core::time::Micros>,
    /// The file read (device, inode), as [`identities`] says.
    pub identity: (u64, u64),
}

/// [`Ends`] of the file at `path`: one open, one read of its header.
/// `None`: no journal file, or a header too old to have these fields.
pub(super) fn header_ends(path: &Path) -> Option<Ends> {
    use std::io::Read as _;
    let mut f = std::fs::File::open(path).ok()?;
    let m = f.metadata().ok()?;
    let mut head = [0u8; 200];
    f.read_exact(&mut head).ok()?;
    if &head[..8] != b"LPKSHHRH" {
        return None;
    }
    let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().unwrap_or_default());
    if word(88) < 200 {
        return None;
    }
    Some(Ends {
        id: hex(&head[24..40]),
        seqnum_id: hex(&head[72..88]),
        tail_seqnum: word(160),
        tail_realtime: i64::try_from(word(192)).ok().filter(|&t| t > 0),
        identity: (m.dev(), m.ino()),
    })
}

/// Whether a single cursor can be this directory's: one from before its
/// groups were read apart (one handle over the whole directory) names the
/// sequence-number ID of one of its files. A local journal's cursor, or one
/// of another machine, names none: applied, every host would resume after
/// its time and lose what it uploaded before.
#[must_use]
pub(crate) fn holds_cursor(dir: &Path, cursor: &str) -> bool {
    let Some((id, _)) = seqnum(cursor) else {
        return false;
    };
    discover(dir)
        .0
        .values()
        .flatten()
        .any(|f| seqnum_id(f).is_some_and(|s| s.eq_ignore_ascii_case(&id)))
}

/// The directory and its subdirectories (one level, as libsystemd reads a
/// directory), each once: a symlink to the directory itself (`c/loop ->
/// .`) or to a subdirectory already there is the same (device, inode), and
/// would read every file twice.
pub(super) fn dirs_of(dir: &Path) -> Vec<PathBuf> {
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let mut seen: std::collections::HashSet<(u64, u64)> = id(dir).into_iter().collect();
    let mut dirs = vec![dir.to_path_buf()];
    let mut subs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    // Real directories before links to them, whatever their names. Each
    // key made once (`sort_by_key` made two a comparison: an `lstat` each).
    subs.sort_by_cached_key(|p| (p.is_symlink(), p.clone()));
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
    let look = discover_all(dir);
    (look.groups, look.unreadable)
}

/// What one look at a collector's directory found (see [`discover_all`]).
pub(super) struct Look {
    pub groups: BTreeMap<String, Vec<PathBuf>>,
    pub unreadable: Vec<Unreadable>,
    /// Whether some file was left for being incomplete.
    pub incomplete: Incomplete,
    /// Which file each path of `groups` names (device, inode), from the
    /// look's own `stat`: see [`identities`].
    pub ids: HashMap<PathBuf, (u64, u64)>,
}

impl Look {
    /// [`identities`] of `files`, as the look saw them.
    pub(super) fn ids_of(&self, files: &[PathBuf]) -> Vec<(u64, u64)> {
        files
            .iter()
            .map(|f| self.ids.get(f).copied().unwrap_or_default())
            .collect()
    }
}

/// [`discover`], with what the coordinator needs besides.
pub(super) fn discover_all(dir: &Path) -> Look {
    let mut incomplete = Incomplete::default();
    let mut groups: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let mut unreadable = Vec::new();
    let mut ids = HashMap::new();
    let mut found: Vec<PathBuf> = dirs_of(dir)
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .collect();
    // Each file's `lstat` once: `sort_by_key` asked twice a comparison,
    // 15 000 calls for 400 files before the first entry was read.
    found.sort_by_cached_key(|p| (p.is_symlink(), p.clone()));
    let mut seen = std::collections::HashSet::new();
    for p in found {
        let meta = std::fs::metadata(&p);
        match &meta {
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
        let meta = meta.ok();
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        if let Some(target) = sync_temp_target(&name) {
            // One left behind (a sync killed) holds nothing.
            let recent = meta
                .as_ref()
                .and_then(|m| m.modified().ok())
                .is_some_and(|t| t.elapsed().unwrap_or_default() < STILL_WRITTEN);
            if recent {
                incomplete.any = true;
                incomplete
                    .groups
                    .extend(group_key(dir, &p.with_file_name(target)));
            }
            continue;
        }
        if !is_journal(&name) {
            continue;
        }
        if matches!(header_machine_id(&p), Header::Incomplete) {
            incomplete.any = true;
            incomplete.groups.extend(group_key(dir, &p));
            continue;
        }
        let Some(key) = group_key(dir, &p) else {
            continue;
        };
        match std::fs::File::open(&p) {
            Ok(_) => {
                if let Some(m) = &meta {
                    ids.insert(p.clone(), (m.dev(), m.ino()));
                }
                groups.entry(key).or_default().push(p);
            }
            Err(error) => unreadable.push(Unreadable {
                group: meta.as_ref().and_then(|m| group_name(m.gid())),
                path: p,
                error,
            }),
        }
    }
    for files in groups.values_mut() {
        files.sort();
    }
    unreadable.sort_by(|a, b| a.path.cmp(&b.path));
    Look {
        groups,
        unreadable,
        incomplete,
        ids,
    }
}

/// Files left at a look for being still written (see
/// [`Header::Incomplete`]).
#[derive(Debug, Default)]
pub(super) struct Incomplete {
    pub any: bool,
    /// The groups they are of, where their names tell it (journal-remote's
    /// `remote-HOST`, a machine's directory).
    pub groups: std::collections::BTreeSet<String>,
}

/// What changes when a group's files are written: size and modification
/// time of each (the writers truncate to the same size after appending,
/// which updates it and notifies inotify).
pub(super) fn stamp(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .fold(0u64, |acc, m| {
            acc.wrapping_mul(31)
                .wrapping_add(m.size())
                .wrapping_add(m.ino().wrapping_mul(0x9e37_79b9))
                .wrapping_add(m.mtime_nsec() as u64)
                .wrapping_add((m.mtime() as u64).wrapping_mul(1_000_000_007))
        })
}

/// Which file each path names now (its device and inode; zeros for one
/// that cannot be looked at): a sync tool (`rsync`, a copy then `mv`)
/// replaces a file under the same name, which a handle opened on the old
/// one never sees.
#[must_use]
pub(super) fn identities(files: &[PathBuf]) -> Vec<(u64, u64)> {
    files
        .iter()
        .map(|f| std::fs::metadata(f).map_or((0, 0), |m| (m.dev(), m.ino())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_tools_temporary_file_names_its_journal() {
        assert_eq!(
            sync_temp_target(".remote-h@0001-0002.journal.Ab3xYz"),
            Some("remote-h@0001-0002.journal")
        );
        assert_eq!(
            sync_temp_target(".remote-h.journal.q1w2e3"),
            Some("remote-h.journal")
        );
        assert_eq!(sync_temp_target("remote-h.journal"), None);
        assert_eq!(sync_temp_target(".remote-h.journal"), None);
        assert_eq!(sync_temp_target(".notes.txt.Ab3xYz"), None);
        assert_eq!(sync_temp_target(".remote-h.journal.toolong1"), None);
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

    /// A group with a cursor resumes after it; one without starts at
    /// `first`, however it came (at the start, later, after a restart).
    #[test]
    fn starts_per_group() {
        let mut s = Starts {
            first: Some(Start::Realtime(1_000)),
            ..Starts::default()
        };
        assert_eq!(s.start_of("a"), Start::Realtime(1_000));
        s.known.insert("a".into(), "s=1;i=2".into());
        assert_eq!(s.start_of("a"), Start::After("s=1;i=2".into()));
        assert_eq!(s.start_of("b"), Start::Realtime(1_000));
        s.first = None;
        assert_eq!(s.start_of("b"), Start::Head);
    }
}
