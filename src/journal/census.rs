//! What journal files say they hold, against what a read walked: the check
//! that a damaged file never loses entries silently.
//!
//! libsystemd skips an entry object it cannot load (a flipped bit in its
//! header, time or items: "Entry item … is bad, skipping over it", at debug
//! level) and ends a walk at an entry array it cannot follow, and says
//! nothing to the caller; `journalctl --verify` fails on such a file while
//! a read of it just has fewer entries. So where a read from the head ends,
//! the entries it walked are compared with what the files record on their
//! own: for each term of the kubelet match that is one field's value
//! (`_SYSTEMD_UNIT=kubelet.service`, `SYSLOG_IDENTIFIER=kubelet`, …), the
//! data object of that value keeps how many entries reference it
//! (`n_entries`), and every one of them is in the match, so a read that
//! walked fewer of them lost some. An entry libsystemd hands on without
//! its MESSAGE (an item skipped as bad) or with items not its own (a
//! damaged size read the next entries' items) is not read, so not counted
//! as walked (see `handle::read_entry`): it is a loss like a skipped one.
//!
//! Cost: a header read per file, then its field hash table, the field
//! objects and the data objects of the matched fields (a few dozen small
//! reads); never a second walk of a healthy file. Only when the counts
//! disagree is each file counted on its own through libsystemd, to name
//! the file that lost them.
//!
//! Why not the header's `n_entries` against an unfiltered walk: that needs
//! a second walk of every file, and it counts every unit's entries, while
//! a loss that matters is one of the kubelet's (a damaged data object's
//! entry array cuts the match's walk and no other).
//!
//! Where it runs: a read once from the head (`scan`, a first `run --once`)
//! of the single reader, and every collector group read from its head
//! (once or following) when it reaches its end with no file being written
//! (`state` online: its counts move; looked at again at a later end). Not
//! checked: a read resumed after a cursor (what came before is not
//! counted), the single reader while following (the system journal's
//! active file is always online). The layout is systemd's
//! `src/libsystemd/sd-journal/journal-def.h`.

use std::collections::HashMap;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use super::protocol::Warning;
use super::{Entry, EntryFilter, Text};

/// Header offsets.
const INCOMPATIBLE_FLAGS: usize = 12;
const STATE: usize = 16;
const FIELD_HASH_TABLE_OFFSET: usize = 120;
const FIELD_HASH_TABLE_SIZE: usize = 128;
const HEADER_LEN: usize = 160;
/// `HEADER_INCOMPATIBLE_COMPACT`: data objects carry two more le32 fields
/// before their payload.
const COMPACT: u32 = 1 << 4;
/// `STATE_ONLINE`: a file being written, whose counts move.
const ONLINE: u8 = 1;
const OBJECT_DATA: u8 = 1;
const OBJECT_FIELD: u8 = 2;
/// Any of the object compression flags (XZ, LZ4, ZSTD).
const COMPRESSED: u8 = 0b111;
/// Objects followed along one chain at most (a loop in damaged data).
const CHAIN_MAX: usize = 100_000;

/// The fields whose values make a term of the kubelet match on their own.
const FIELDS: [&str; 3] = ["_SYSTEMD_UNIT", "SYSLOG_IDENTIFIER", "CONTAINER_NAME"];

/// The entries a read walked, by the value of each of [`FIELDS`].
#[derive(Debug, Default, Clone)]
pub(crate) struct Walked {
    by: [Vec<(Text, u64)>; 3],
}

impl Walked {
    /// Counts an entry the read handed on. The values are interned, so the
    /// pointer comparison finds them first.
    pub(crate) fn count(&mut self, e: &Entry) {
        for (slot, v) in [&e.unit, &e.identifier, &e.container]
            .into_iter()
            .enumerate()
        {
            let Some(v) = v else { continue };
            let list = &mut self.by[slot];
            match list
                .iter_mut()
                .find(|(t, _)| std::sync::Arc::ptr_eq(t, v) || **t == **v)
            {
                Some((_, n)) => *n += 1,
                None => list.push((v.clone(), 1)),
            }
        }
    }

    fn of(&self, slot: usize, value: &str) -> u64 {
        self.by[slot]
            .iter()
            .find(|(t, _)| &**t == value)
            .map_or(0, |(_, n)| *n)
    }
}

/// What files hold of the match's single-field terms, by (field, value).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Held {
    by: HashMap<(usize, String), u64>,
}

impl Held {
    /// The entries of `walked` short of what is held: the largest shortfall
    /// of any term (an entry lost counts once in each term it matches).
    pub(crate) fn missing(&self, walked: &Walked) -> u64 {
        self.by
            .iter()
            .map(|((slot, value), held)| held.saturating_sub(walked.of(*slot, value)))
            .max()
            .unwrap_or(0)
    }
}

/// A journal file's header, as far as this check needs it.
struct Header {
    compact: bool,
    online: bool,
    field_table: (u64, u64),
}

fn le64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn read_at(f: &std::fs::File, at: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len];
    f.read_exact_at(&mut buf, at).ok()?;
    Some(buf)
}

fn header(f: &std::fs::File) -> Option<Header> {
    let h = read_at(f, 0, HEADER_LEN)?;
    if &h[..8] != b"LPKSHHRH" {
        return None;
    }
    let incompatible = u32::from_le_bytes(
        h[INCOMPATIBLE_FLAGS..INCOMPATIBLE_FLAGS + 4]
            .try_into()
            .ok()?,
    );
    Some(Header {
        compact: incompatible & COMPACT != 0,
        online: h[STATE] == ONLINE,
        field_table: (
            le64(&h, FIELD_HASH_TABLE_OFFSET),
            le64(&h, FIELD_HASH_TABLE_SIZE),
        ),
    })
}

/// An object's type, flags and size, and its first `len` bytes.
fn object(f: &std::fs::File, at: u64, len: usize) -> Option<(u8, u8, Vec<u8>)> {
    if at == 0 || at % 8 != 0 {
        return None;
    }
    let head = read_at(f, at, 16)?;
    let size = usize::try_from(le64(&head, 8)).ok()?;
    if size < 16 {
        return None;
    }
    let body = read_at(f, at, size.min(len))?;
    Some((head[0], head[1], body))
}

/// One file's `n_entries` of the data objects `FIELD=value` for the values
/// of the filter, added to `held`. `None` when the file is being written
/// (its counts move) or its tables cannot be followed.
fn file_holds(path: &Path, wanted: &[Vec<String>; 3], held: &mut Held) -> Option<()> {
    let f = std::fs::File::open(path).ok()?;
    let h = header(&f)?;
    if h.online {
        return None;
    }
    let (table_at, table_len) = h.field_table;
    let table = read_at(&f, table_at, usize::try_from(table_len).ok()?.min(1 << 20))?;
    let payload_at = if h.compact { 72 } else { 64 };
    for bucket in table.chunks_exact(16) {
        let mut field_at = le64(bucket, 0);
        for _ in 0..CHAIN_MAX {
            if field_at == 0 {
                break;
            }
            let (kind, _, field) = object(&f, field_at, 40 + 64)?;
            if kind != OBJECT_FIELD {
                return None;
            }
            let name = field.get(40..).unwrap_or_default();
            if let Some(slot) = FIELDS.iter().position(|n| n.as_bytes() == name)
                && !wanted[slot].is_empty()
            {
                let mut data_at = le64(&field, 32);
                for _ in 0..CHAIN_MAX {
                    if data_at == 0 {
                        break;
                    }
                    let (kind, flags, data) = object(&f, data_at, payload_at + 256)?;
                    if kind != OBJECT_DATA {
                        return None;
                    }
                    let payload = data.get(payload_at..).unwrap_or_default();
                    let value = payload
                        .strip_prefix(name)
                        .and_then(|p| p.strip_prefix(b"="));
                    if let Some(v) = value.filter(|_| flags & COMPRESSED == 0)
                        && let Some(w) = wanted[slot].iter().find(|w| w.as_bytes() == v)
                    {
                        *held.by.entry((slot, w.clone())).or_default() += le64(&data, 56);
                    }
                    data_at = le64(&data, 32);
                }
            }
            field_at = le64(&field, 24);
        }
    }
    Some(())
}

/// What `files` hold of the filter's single-field terms. `None` when one
/// of them is being written: the counts say nothing then.
fn held(files: &[PathBuf], filter: &EntryFilter) -> Option<Held> {
    use std::os::unix::fs::MetadataExt as _;
    let wanted = [
        filter.units.clone(),
        filter.identifiers.clone(),
        filter.containers.clone(),
    ];
    let mut out = Held::default();
    let mut seen = std::collections::HashSet::new();
    for p in files {
        // A file named twice is read once.
        if let Ok(m) = std::fs::metadata(p)
            && !seen.insert((m.dev(), m.ino()))
        {
            continue;
        }
        let mut one = Held::default();
        match file_holds(p, &wanted, &mut one) {
            Some(()) => {
                for (k, n) in one.by {
                    *out.by.entry(k).or_default() += n;
                }
            }
            // Being written: nothing can be said of this read.
            None if is_online(p) => return None,
            // Not a journal file libsystemd reads, or its tables are
            // damaged: what it holds is unknown (libsystemd reads what it
            // can, and a file it cannot open is reported on its own).
            None => {}
        }
    }
    Some(out)
}

fn is_online(p: &Path) -> bool {
    std::fs::File::open(p)
        .ok()
        .and_then(|f| header(&f))
        .is_some_and(|h| h.online)
}

/// Counts what one file yields through libsystemd, term by term: only when
/// a read came up short, to name the file that lost entries.
fn walk_one(path: &Path, filter: &EntryFilter) -> Option<u64> {
    let wanted = [
        filter.units.clone(),
        filter.identifiers.clone(),
        filter.containers.clone(),
    ];
    let mut held = Held::default();
    file_holds(path, &wanted, &mut held)?;
    let mut short = 0;
    for ((slot, value), n) in &held.by {
        let mut j = systemd::journal::OpenFilesOptions::default()
            .open_files([path.as_os_str().as_encoded_bytes()])
            .ok()?;
        j.match_add(FIELDS[*slot], value.as_str()).ok()?;
        j.seek_head().ok()?;
        // As the read counts: an entry whose items are not its own is
        // not one it read (see `handle::read_entry`).
        let mut names = super::handle::Interner::default();
        let mut walked = 0u64;
        while j.next().ok()? > 0 {
            if let Ok(Some(_)) = super::handle::read_entry(&mut j, &mut names) {
                walked += 1;
            }
        }
        short = short.max(n.saturating_sub(walked));
    }
    Some(short)
}

/// What the end of a read from the head found.
pub(crate) enum Count {
    /// Some file is being written: nothing can be said yet.
    Unknown,
    /// Every entry the files record was walked.
    Whole,
    /// Fewer: the warning names the file (or the files) and the number.
    Short(Warning),
}

/// Compares what a read of `files` from the head walked with what they
/// record of the kubelet's entries.
pub(crate) fn count(files: &[PathBuf], filter: &EntryFilter, walked: &Walked) -> Count {
    let Some(held) = held(files, filter) else {
        return Count::Unknown;
    };
    let missing = held.missing(walked);
    if missing == 0 {
        return Count::Whole;
    }
    let named: Vec<(PathBuf, u64)> = match files {
        [one] => vec![(one.clone(), missing)],
        _ => files
            .iter()
            .filter_map(|p| {
                walk_one(p, filter)
                    .filter(|n| *n > 0)
                    .map(|n| (p.clone(), n))
            })
            .collect(),
    };
    let why = |n: u64| {
        format!(
            "damaged: {n} of the kubelet's entries it records could not be read (libsystemd \
             skipped damaged entry objects, stopped at a damaged entry array, or read an \
             entry without its MESSAGE or with items not its own; `journalctl --verify` \
             shows where); the rest was read"
        )
    };
    Count::Short(match named.as_slice() {
        [(file, n)] => Warning::missing(file.clone(), *n, why(*n)),
        _ => Warning {
            file: None,
            missing,
            message: format!(
                "{}: {}",
                files
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                why(missing)
            ),
        },
    })
}

/// The sequence-number ID in a journal file's header (bytes 72..88), in
/// lower-case hex: the `s=` of its entries' cursors.
pub(crate) fn seqnum_id(path: &Path) -> Option<String> {
    header_id(path, 72)
}

/// The file ID in a journal file's header (bytes 24..40), in lower-case
/// hex: the same under any name, so a file renamed by rotation
/// (`remote-h.journal` → `remote-h@….journal`) is known as the one read.
pub(crate) fn file_id(path: &Path) -> Option<String> {
    header_id(path, 24)
}

/// The 16-byte ID at `at` in a journal file's header, in lower-case hex.
fn header_id(path: &Path, at: usize) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    let h = read_at(&f, 0, 88)?;
    if &h[..8] != b"LPKSHHRH" {
        return None;
    }
    Some(hex(&h[at..at + 16]))
}

/// Bytes in lower-case hex, as journal IDs are written in cursors.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
            use std::fmt::Write as _;
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(unit: &str, ident: &str) -> Entry {
        Entry {
            unit: Some(unit.into()),
            identifier: Some(ident.into()),
            ..Entry::default()
        }
    }

    /// An entry lost counts once in each term it matches: the shortfall is
    /// the largest of any term, not their sum.
    #[test]
    fn the_shortfall_is_the_largest_of_any_term() {
        let mut held = Held::default();
        held.by.insert((0, "kubelet.service".into()), 10);
        held.by.insert((1, "kubelet".into()), 12);
        let mut walked = Walked::default();
        for _ in 0..8 {
            walked.count(&entry("kubelet.service", "kubelet"));
        }
        assert_eq!(held.missing(&walked), 4);
        for _ in 0..2 {
            walked.count(&entry("kubelet.service", "kubelet"));
        }
        walked.count(&entry("crio.service", "kubelet"));
        walked.count(&entry("crio.service", "kubelet"));
        assert_eq!(held.missing(&walked), 0);
        assert_eq!(Held::default().missing(&walked), 0);
    }
}
