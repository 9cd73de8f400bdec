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
//!
//! The same tables tell a one-time read which terms it need not ask for
//! ([`covered_by`]): an identifier whose every entry, by the data
//! objects' own lists of entries, is also a kubelet unit's.

use std::collections::HashMap;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use super::protocol::Warning;
use super::{Entry, EntryFilter, Text};

/// Header offsets.
const INCOMPATIBLE_FLAGS: usize = 12;
const STATE: usize = 16;
const FILE_ID: usize = 24;
const DATA_HASH_TABLE_OFFSET: usize = 104;
const DATA_HASH_TABLE_SIZE: usize = 112;
const FIELD_HASH_TABLE_OFFSET: usize = 120;
const FIELD_HASH_TABLE_SIZE: usize = 128;
const N_OBJECTS: usize = 144;
const HEADER_LEN: usize = 160;
/// `HEADER_INCOMPATIBLE_COMPACT`: data objects carry two more le32 fields
/// before their payload.
const COMPACT: u32 = 1 << 4;
/// `HEADER_INCOMPATIBLE_KEYED_HASH`.
const KEYED_HASH: u32 = 1 << 2;
/// `STATE_ONLINE`: a file being written, whose counts move.
const ONLINE: u8 = 1;
const OBJECT_DATA: u8 = 1;
const OBJECT_FIELD: u8 = 2;
const OBJECT_ENTRY_ARRAY: u8 = 6;
/// `DataObject`: the first entry referencing it (inline), the chain of
/// entry arrays holding the rest, and how many there are in all.
const DATA_ENTRY: usize = 40;
const DATA_ENTRY_ARRAY: usize = 48;
const DATA_N_ENTRIES: usize = 56;
/// `EntryArrayObject`: the next array of the chain, then the items.
const ARRAY_NEXT: usize = 16;
const ARRAY_ITEMS: usize = 24;
/// The entries of one value followed at most (32 MiB of offsets): a
/// value with more is not looked at.
const ENTRIES_MAX: u64 = 1 << 22;
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
    /// The data hash table, and the key of its hash when it has one
    /// (`HEADER_INCOMPATIBLE_KEYED_HASH`: SipHash-2-4 keyed by the file
    /// ID; older files hash with Jenkins' lookup3, not done here).
    data_table: (u64, u64),
    key: Option<[u8; 16]>,
    /// Objects in the file: no walk of its tables visits more.
    objects: u64,
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

/// Up to `len` bytes at `at`: fewer where the file ends.
fn read_upto(f: &std::fs::File, at: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match f.read_at(&mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    buf.truncate(got);
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
        data_table: (
            le64(&h, DATA_HASH_TABLE_OFFSET),
            le64(&h, DATA_HASH_TABLE_SIZE),
        ),
        key: (incompatible & KEYED_HASH != 0)
            .then(|| h[FILE_ID..FILE_ID + 16].try_into().ok())
            .flatten(),
        objects: le64(&h, N_OBJECTS),
    })
}

/// An object's type, flags and size, and its first `len` bytes.
fn object(f: &std::fs::File, at: u64, len: usize) -> Option<(u8, u8, Vec<u8>)> {
    if at == 0 || at % 8 != 0 {
        return None;
    }
    // One read: an object is mostly shorter than `len`, and what follows
    // it is cut off.
    let mut body = read_upto(f, at, len.max(16))?;
    let size = usize::try_from(le64(&body, 8)).ok()?;
    if size < 16 || body.len() < size.min(len) {
        return None;
    }
    body.truncate(size.min(len));
    Some((body[0], body[1], body))
}

/// A journal file not being written, for the small reads below.
struct Tables {
    f: std::fs::File,
    h: Header,
    /// The file's length: nothing read lies past it.
    len: u64,
}

impl Tables {
    /// `None` when `path` is no journal file, or one being written (its
    /// tables move).
    fn offline(path: &Path) -> Option<Self> {
        let f = std::fs::File::open(path).ok()?;
        let len = f.metadata().ok()?.len();
        let h = header(&f)?;
        (!h.online).then_some(Self { f, h, len })
    }

    fn payload_at(&self) -> usize {
        if self.h.compact { 72 } else { 64 }
    }

    /// Every data object of each field `want` takes: the field's name and
    /// the object's first bytes. `None` when a table or a chain
    /// cannot be followed, or the walk visits more objects than the file
    /// has (a loop in damaged data).
    fn each_data(
        &self,
        want: impl Fn(&[u8]) -> bool,
        mut visit: impl FnMut(&[u8], &[u8]),
    ) -> Option<()> {
        let (table_at, table_len) = self.h.field_table;
        let table = read_at(
            &self.f,
            table_at,
            usize::try_from(table_len.min(self.len)).ok()?,
        )?;
        let mut budget = self.h.objects;
        let mut take = || {
            budget = budget.checked_sub(1)?;
            Some(())
        };
        for bucket in table.chunks_exact(16) {
            let mut field_at = le64(bucket, 0);
            while field_at != 0 {
                take()?;
                let (kind, _, field) = object(&self.f, field_at, 40 + 64)?;
                if kind != OBJECT_FIELD || field.len() < 40 {
                    return None;
                }
                let name = &field[40..];
                if want(name) {
                    let mut data_at = le64(&field, 32);
                    while data_at != 0 {
                        take()?;
                        let (kind, _, data) = object(&self.f, data_at, self.payload_at() + 256)?;
                        if kind != OBJECT_DATA || data.len() < self.payload_at() {
                            return None;
                        }
                        visit(name, &data);
                        data_at = le64(&data, 32);
                    }
                }
                field_at = le64(&field, 24);
            }
        }
        Some(())
    }

    /// The value of data object `data` of field `name`; `None` when it is
    /// compressed or longer than was read.
    fn value<'d>(&self, name: &[u8], data: &'d [u8]) -> Option<&'d [u8]> {
        if data[1] & COMPRESSED != 0 || usize::try_from(le64(data, 8)).ok()? != data.len() {
            return None;
        }
        data.get(self.payload_at()..)?
            .strip_prefix(name)?
            .strip_prefix(b"=")
    }

    /// The data object libsystemd matches `payload` (`FIELD=value`) with:
    /// the first on its hash's chain of the data hash table with that hash
    /// and payload (`journal_file_find_data_object_with_hash`). Absent: no
    /// entry of the file has it. Unknown when that cannot be told here: an
    /// unkeyed hash, a compressed candidate, an object libsystemd would
    /// refuse, a chain too long.
    fn find_data(&self, payload: &[u8]) -> Found {
        self.look_for(payload).unwrap_or(Found::Unknown)
    }

    fn look_for(&self, payload: &[u8]) -> Option<Found> {
        #[allow(deprecated)] // std's SipHasher is SipHash-2-4, as systemd's.
        let hash = {
            use std::hash::Hasher as _;
            let key = self.h.key?;
            let mut h = std::hash::SipHasher::new_with_keys(le64(&key, 0), le64(&key, 8));
            h.write(payload);
            h.finish()
        };
        let (table_at, table_len) = self.h.data_table;
        let buckets = table_len / 16;
        if buckets == 0 {
            return None;
        }
        let bucket = read_at(&self.f, table_at + (hash % buckets) * 16, 16)?;
        let mut at = le64(&bucket, 0);
        let whole = self.payload_at() + payload.len();
        for _ in 0..CHAIN_MAX {
            if at == 0 {
                return Some(Found::Absent);
            }
            let (kind, flags, data) = object(&self.f, at, whole)?;
            if kind != OBJECT_DATA || data.len() < self.payload_at() || !data_valid(&data) {
                return None;
            }
            if le64(&data, 16) == hash {
                if flags & COMPRESSED != 0 {
                    return None;
                }
                if le64(&data, 8) == whole as u64 && &data[self.payload_at()..] == payload {
                    return Some(Found::Data(data));
                }
            }
            at = le64(&data, 24);
        }
        None
    }

    /// The offsets of the entries referencing the data object `data`, in
    /// the file's order: its inline entry, then its chain of entry arrays.
    /// `None` when the chain cannot be followed, comes short of the
    /// object's count, is out of order, or would not pass libsystemd's
    /// checks of an object (damage).
    fn entries(&self, data: &[u8]) -> Option<Vec<u64>> {
        let item: u64 = if self.h.compact { 4 } else { 8 };
        let n = le64(data, DATA_N_ENTRIES);
        if n == 0 {
            return Some(Vec::new());
        }
        if n > ENTRIES_MAX || n > self.len / item {
            return None;
        }
        let mut out = Vec::with_capacity(usize::try_from(n.min(1 << 16)).ok()?);
        out.push(le64(data, DATA_ENTRY));
        let mut array_at = le64(data, DATA_ENTRY_ARRAY);
        while (out.len() as u64) < n {
            if array_at == 0 || array_at % 8 != 0 {
                return None;
            }
            let head = read_at(&self.f, array_at, ARRAY_ITEMS)?;
            let size = le64(&head, 8);
            let room = size.checked_sub(ARRAY_ITEMS as u64)?;
            // As libsystemd's `check_object`: whole items, at least one,
            // within the file, and an aligned next.
            if head[0] != OBJECT_ENTRY_ARRAY
                || room == 0
                || room % item != 0
                || array_at.checked_add(size)? > self.len
                || le64(&head, ARRAY_NEXT) % 8 != 0
            {
                return None;
            }
            let left = n - out.len() as u64;
            let len = usize::try_from((room / item).min(left) * item).ok()?;
            let items = read_at(&self.f, array_at + ARRAY_ITEMS as u64, len)?;
            for i in items.chunks_exact(usize::try_from(item).ok()?) {
                let at = if self.h.compact {
                    u64::from(u32::from_le_bytes(i.try_into().ok()?))
                } else {
                    le64(i, 0)
                };
                if at == 0 || at % 8 != 0 || out.last().is_some_and(|&l| l >= at) {
                    return None;
                }
                out.push(at);
            }
            array_at = le64(&head, ARRAY_NEXT);
        }
        Some(out)
    }
}

/// A value's data object in a file, as [`Tables::find_data`] looks for it.
enum Found {
    Data(Vec<u8>),
    Absent,
    Unknown,
}

/// libsystemd's `check_object` of a data object (its own fields): an
/// entry and a count both or neither, every offset aligned.
fn data_valid(data: &[u8]) -> bool {
    (le64(data, DATA_ENTRY) == 0) == (le64(data, DATA_N_ENTRIES) == 0)
        && [24, 32, DATA_ENTRY, DATA_ENTRY_ARRAY]
            .iter()
            .all(|&at| le64(data, at) % 8 == 0)
}

/// One file's `n_entries` of the data objects `FIELD=value` for the values
/// of the filter, added to `held`. `None` when the file is being written
/// (its counts move) or its tables cannot be followed.
fn file_holds(path: &Path, wanted: &[Vec<String>; 3], held: &mut Held) -> Option<()> {
    let t = Tables::offline(path)?;
    let slot = |name: &[u8]| {
        FIELDS
            .iter()
            .position(|n| n.as_bytes() == name)
            .filter(|&s| !wanted[s].is_empty())
    };
    t.each_data(
        |name| slot(name).is_some(),
        |name, data| {
            let Some(s) = slot(name) else { return };
            if let Some(v) = t.value(name, data)
                && let Some(w) = wanted[s].iter().find(|w| w.as_bytes() == v)
            {
                *held.by.entry((s, w.clone())).or_default() += le64(data, DATA_N_ENTRIES);
            }
        },
    )
}

/// Whether every entry of `files` with `field=value` also has one of
/// `covers` (each a field and a value): then a match with `covers` reads
/// what it adds, from the head of the files. Each value's data object is
/// found as libsystemd finds it (the data hash table), and its list of
/// entries read as libsystemd walks it. Only files not being written can
/// say (their entries do not grow meanwhile); `false` whenever one cannot.
pub(crate) fn covered_by(
    files: &[PathBuf],
    (field, value): (&str, &str),
    covers: &[(&str, &str)],
) -> bool {
    let payload = |f: &str, v: &str| format!("{f}={v}").into_bytes();
    files.iter().all(|p| {
        let Some(t) = Tables::offline(p) else {
            return false;
        };
        let term = match t.find_data(&payload(field, value)) {
            Found::Data(d) => d,
            // No entry of the file has it.
            Found::Absent => return true,
            Found::Unknown => return false,
        };
        let Some(term) = t.entries(&term) else {
            return false;
        };
        let mut lists = Vec::new();
        for (f, v) in covers {
            match t.find_data(&payload(f, v)) {
                Found::Data(d) => match t.entries(&d) {
                    Some(l) => lists.push(l),
                    None => return false,
                },
                Found::Absent => {}
                Found::Unknown => return false,
            }
        }
        // Both sides ascend: one pass, a position in each cover.
        let mut at = vec![0usize; lists.len()];
        term.iter().all(|&e| {
            lists.iter().zip(at.iter_mut()).any(|(l, i)| {
                while l.get(*i).is_some_and(|&x| x < e) {
                    *i += 1;
                }
                l.get(*i) == Some(&e)
            })
        })
    })
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

    /// `n` kubelet entries (`_SYSTEMD_UNIT=kubelet.service`,
    /// `SYSLOG_IDENTIFIER=kubelet`) between other units' lines, as export
    /// bytes; `stray` more of the identifier under another unit.
    fn export(n: usize, stray: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            out.extend(format!(
                "__REALTIME_TIMESTAMP={}\n_SYSTEMD_UNIT=kubelet.service\nSYSLOG_IDENTIFIER=kubelet\nMESSAGE=k {i}\n\n\
                 __REALTIME_TIMESTAMP={}\n_SYSTEMD_UNIT=cron.service\nSYSLOG_IDENTIFIER=CRON\nMESSAGE=c {i}\n\n",
                2 * i + 1,
                2 * i + 2
            ).bytes());
        }
        for i in 0..stray {
            out.extend(format!(
                "__REALTIME_TIMESTAMP={}\n_SYSTEMD_UNIT=my-kubelet.service\nSYSLOG_IDENTIFIER=kubelet\nMESSAGE=s {i}\n\n",
                2 * n + i + 1
            ).bytes());
        }
        out
    }

    /// Written by journal-remote, compact (its default) or not.
    fn written(dir: &Path, name: &str, export: &[u8], compact: bool) -> PathBuf {
        written_with(dir, name, export, compact, true)
    }

    /// …and with a keyed hash (the default) or Jenkins' (older files).
    fn written_with(dir: &Path, name: &str, export: &[u8], compact: bool, keyed: bool) -> PathBuf {
        let file = dir.join(name);
        let flag = |b: bool| if b { "1" } else { "0" };
        crate::journal::handle::journal_remote_with(
            export,
            &file,
            &[
                ("SYSTEMD_JOURNAL_COMPACT", flag(compact)),
                ("SYSTEMD_JOURNAL_KEYED_HASH", flag(keyed)),
            ],
        );
        file
    }

    const TERM: (&str, &str) = ("SYSLOG_IDENTIFIER", "kubelet");
    const UNIT: &[(&str, &str)] = &[("_SYSTEMD_UNIT", "kubelet.service")];

    /// An identifier whose entries are all the unit's is covered, over
    /// several entry arrays and either item width; one entry of it under
    /// another unit, in any file, and it is not; nor with no cover at all.
    #[test]
    fn an_identifier_is_covered_only_when_every_entry_of_it_is_the_units() {
        let dir = tempfile::tempdir().unwrap();
        for compact in [true, false] {
            let tag = if compact { "c" } else { "r" };
            let all = written(
                dir.path(),
                &format!("{tag}-all.journal"),
                &export(300, 0),
                compact,
            );
            let compact_flag = |p: &Path| {
                let f = std::fs::File::open(p).unwrap();
                header(&f).unwrap().compact
            };
            assert_eq!(compact_flag(&all), compact);
            assert!(covered_by(std::slice::from_ref(&all), TERM, UNIT));
            let stray = written(
                dir.path(),
                &format!("{tag}-stray.journal"),
                &export(300, 1),
                compact,
            );
            assert!(!covered_by(std::slice::from_ref(&stray), TERM, UNIT));
            assert!(!covered_by(&[all.clone(), stray], TERM, UNIT));
            assert!(!covered_by(std::slice::from_ref(&all), TERM, &[]));
            // A file without the identifier says nothing against it.
            let none = written(
                dir.path(),
                &format!("{tag}-none.journal"),
                b"__REALTIME_TIMESTAMP=1\nMESSAGE=x\n\n",
                compact,
            );
            assert!(covered_by(&[all, none], TERM, UNIT));
        }
    }

    /// The data object is found as libsystemd finds it, by its keyed hash:
    /// the same object the field's chain leads to. A file hashed the older
    /// way cannot be looked up here: never covered.
    #[test]
    fn the_value_is_found_by_its_hash_as_libsystemd_finds_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = written(dir.path(), "k.journal", &export(50, 0), true);
        let t = Tables::offline(&file).unwrap();
        let mut walked = None;
        t.each_data(
            |name| name == b"SYSLOG_IDENTIFIER",
            |name, data| {
                if t.value(name, data) == Some(b"kubelet".as_slice()) {
                    walked = Some(data.to_vec());
                }
            },
        )
        .unwrap();
        let walked = walked.unwrap();
        let Found::Data(found) = t.find_data(b"SYSLOG_IDENTIFIER=kubelet") else {
            panic!("not found by its hash");
        };
        assert_eq!(found[..t.payload_at()], walked[..t.payload_at()]);
        assert_eq!(t.entries(&found).unwrap().len(), 50);
        assert!(matches!(
            t.find_data(b"SYSLOG_IDENTIFIER=kubelex"),
            Found::Absent
        ));
        let old = written_with(dir.path(), "j.journal", &export(50, 0), true, false);
        let old_t = Tables::offline(&old).unwrap();
        assert!(matches!(
            old_t.find_data(b"SYSLOG_IDENTIFIER=kubelet"),
            Found::Unknown
        ));
        assert!(!covered_by(&[old], TERM, UNIT));
    }

    /// A file being written can gain an entry of the identifier alone
    /// while it is read: never covered. Damage anywhere gives an answer,
    /// never a panic or a hang, and a file cut short is not covered.
    #[test]
    fn a_file_being_written_or_damaged_is_not_proof() {
        let dir = tempfile::tempdir().unwrap();
        let file = written(dir.path(), "t.journal", &export(200, 0), true);
        let bytes = std::fs::read(&file).unwrap();
        let mut online = bytes.clone();
        online[STATE] = ONLINE;
        std::fs::write(&file, &online).unwrap();
        assert!(!covered_by(std::slice::from_ref(&file), TERM, UNIT));
        let len = bytes.len();
        for at in (HEADER_LEN..len).step_by(len / 997) {
            let mut bad = bytes.clone();
            bad[at] ^= 0xa5;
            std::fs::write(&file, &bad).unwrap();
            let _ = covered_by(std::slice::from_ref(&file), TERM, UNIT);
        }
        // The tail cut off: the arrays end short of the counts.
        // tail_object_offset: where the last object begins.
        let tail = usize::try_from(le64(&bytes, 136)).map_or(len, |u| u.min(len));
        std::fs::write(&file, &bytes[..tail * 2 / 3]).unwrap();
        assert!(!covered_by(std::slice::from_ref(&file), TERM, UNIT));
    }
}
