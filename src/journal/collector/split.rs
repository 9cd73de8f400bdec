//! A one-time read (`scan`) of one group of many files on two threads: the
//! group's files cut into chunks that follow each other in the order
//! libsystemd would merge them, each read through a handle of its own, the
//! next one while the current one is handed on. The entries reach the
//! consumer in the order one handle over all the files gives: a host's
//! rotated files, or a machine's copied journal directory, whose times do
//! not overlap. Where that cannot be told from the files' first and last
//! entries, the group is read through one handle, as always.

use std::path::PathBuf;

use systemd::journal::Journal;

use crate::journal::handle::unfiltered;

/// A chunk's files at least this large together (bytes), unless they are
/// the last: a handle's opening and its census are paid once a chunk.
pub(crate) const CHUNK_BYTES: u64 = 32 << 20;

/// Batches a chunk read ahead may hold until its turn: the memory of a
/// split read is two chunks' worth of this at most.
pub(super) const CHUNK_BATCHES: usize = 32;

/// Where an entry stands in each order libsystemd merges files by (its
/// cursor's fields): the sequence and its number, the boot and its
/// monotonic time, the wall-clock time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    seqnum_id: String,
    seqnum: u64,
    boot: String,
    monotonic: u64,
    realtime: u64,
}

impl Place {
    fn of_cursor(c: &str) -> Option<Self> {
        let field = |k: &str| {
            c.split(';')
                .find_map(|p| p.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
        };
        let hex = |k: &str| field(k).and_then(|v| u64::from_str_radix(v, 16).ok());
        Some(Self {
            seqnum_id: field("s")?.to_string(),
            seqnum: hex("i")?,
            boot: field("b")?.to_string(),
            monotonic: hex("m")?,
            realtime: hex("t")?,
        })
    }
}

/// A file's first and last entries, and its size.
#[derive(Clone)]
struct Span {
    file: PathBuf,
    head: Place,
    tail: Place,
    bytes: u64,
}

fn span(file: &PathBuf) -> Option<Span> {
    let mut j: Journal = unfiltered(std::slice::from_ref(file))?;
    j.seek_head().ok()?;
    (j.next().ok()? > 0).then_some(())?;
    let head = Place::of_cursor(&j.cursor().ok()?)?;
    j.seek_tail().ok()?;
    (j.previous().ok()? > 0).then_some(())?;
    let tail = Place::of_cursor(&j.cursor().ok()?)?;
    // One boot, in order: what is between is ordered as its ends.
    let whole = head.boot == tail.boot
        && head.monotonic <= tail.monotonic
        && head.realtime <= tail.realtime
        && (head.seqnum_id != tail.seqnum_id || head.seqnum <= tail.seqnum);
    whole.then_some(())?;
    Some(Span {
        file: file.clone(),
        bytes: std::fs::metadata(file).ok()?.len(),
        head,
        tail,
    })
}

/// `files` cut into chunks of at least `bytes` (but the last) in their
/// merge order, when every file's entries
/// come before every later file's in every order that applies (checked on
/// each pair of files, by their first and last entries); `None` when they
/// do not, when a file cannot be looked at (damaged, empty, being
/// written), or when there would be one chunk.
pub(super) fn chunks(files: &[PathBuf], bytes: u64) -> Option<Vec<Vec<PathBuf>>> {
    if files.len() < 2 {
        return None;
    }
    let mut spans = files.iter().map(span).collect::<Option<Vec<Span>>>()?;
    spans.sort_by_key(|s| s.head.realtime);
    if !in_order(&spans) {
        return None;
    }
    let mut out: Vec<Vec<PathBuf>> = Vec::new();
    let mut size = 0;
    for s in spans {
        if out.is_empty() || size >= bytes {
            out.push(Vec::new());
            size = 0;
        }
        size += s.bytes;
        if let Some(last) = out.last_mut() {
            last.push(s.file);
        }
    }
    (out.len() > 1).then_some(out)
}

/// Whether every file's last entry comes strictly before every later
/// file's first in each order libsystemd merges by that applies to both
/// (by sequence number within one sequence, by monotonic time within one
/// boot, always by wall-clock time): each head is compared with the
/// latest tail so far of all files, of its sequence and of its boot (one
/// pass; each pair of files would be quadratic in a machine's hundreds of
/// archived files).
fn in_order(spans: &[Span]) -> bool {
    use std::collections::HashMap;
    let mut realtime: Option<u64> = None;
    let mut seqnum: HashMap<&str, u64> = HashMap::new();
    let mut monotonic: HashMap<&str, u64> = HashMap::new();
    for s in spans {
        let h = &s.head;
        if realtime.is_some_and(|t| t >= h.realtime)
            || seqnum
                .get(h.seqnum_id.as_str())
                .is_some_and(|&n| n >= h.seqnum)
            || monotonic
                .get(h.boot.as_str())
                .is_some_and(|&m| m >= h.monotonic)
        {
            return false;
        }
        let t = &s.tail;
        realtime = realtime.max(Some(t.realtime));
        let n = seqnum.entry(t.seqnum_id.as_str()).or_default();
        *n = (*n).max(t.seqnum);
        let m = monotonic.entry(t.boot.as_str()).or_default();
        *m = (*m).max(t.monotonic);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::EntryFilter;
    use crate::journal::collector::{Spec, Starts, spawn};
    use crate::journal::handle::{Start, journal_remote};
    use crate::journal::protocol::{Mode, ReaderEvent};

    /// Lines `from..to` of one boot, a millisecond apart; every third is
    /// another unit's (the match leaves it out).
    fn export(from: u64, to: u64) -> Vec<u8> {
        (from..to)
            .flat_map(|n| {
                let unit = if n % 3 == 0 { "cron" } else { "kubelet" };
                format!(
                    "__REALTIME_TIMESTAMP={}\n__MONOTONIC_TIMESTAMP={}\n\
                     _BOOT_ID=0123456789abcdef0123456789abcdef\n_SYSTEMD_UNIT={unit}.service\n\
                     _HOSTNAME=hx\nMESSAGE=line {n}\n\n",
                    1_000_000 + n * 1_000,
                    5_000 + n * 1_000
                )
                .into_bytes()
            })
            .collect()
    }

    /// The messages a one-time read of `dir` hands on, in order, and the
    /// last one's cursor.
    fn read(dir: &std::path::Path, split: Option<u64>) -> (Vec<String>, Option<String>) {
        let spec = Spec {
            dir: dir.to_path_buf(),
            filter: EntryFilter::default(),
            starts: Starts {
                first: Some(Start::Head),
                ..Starts::default()
            },
            mode: Mode::Once,
            batch: 16,
            split,
        };
        let mut r = spawn(spec, 4).unwrap();
        let (mut lines, mut last) = (Vec::new(), None);
        while let Some(ev) = r.events.blocking_recv() {
            match ev {
                ReaderEvent::Entries(v) => {
                    lines.extend(
                        v.iter()
                            .map(|e| String::from_utf8_lossy(&e.message).into_owned()),
                    );
                    last = v.last().and_then(|e| e.cursor.clone());
                }
                ReaderEvent::Failed(e) => panic!("{e}"),
                _ => {}
            }
        }
        (lines, last)
    }

    /// Three files of one machine whose times follow each other (three
    /// journal-remote runs: three sequences) are read in three chunks, a
    /// chunk ahead, and give what one handle over them gives, the last
    /// cursor too; each chunk is longer than a job's batches. A fourth
    /// file whose times fall inside another's is read through one handle.
    #[test]
    fn a_split_read_gives_what_one_handle_gives() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = (0..3u64)
            .map(|k| {
                let f = dir.path().join(format!("m-{k}.journal"));
                journal_remote(&export(k * 600, k * 600 + 600), &f);
                f
            })
            .collect();
        assert_eq!(chunks(&files, 0).map(|c| c.len()), Some(3));
        assert_eq!(chunks(&files, u64::MAX), None, "one chunk: no split");
        let whole = read(dir.path(), None);
        assert_eq!(whole.0.len(), 1200);
        assert_eq!(read(dir.path(), Some(0)), whole);
        let inside = dir.path().join("m-3.journal");
        journal_remote(&export(650, 660), &inside);
        let mut all = files.clone();
        all.push(inside);
        assert_eq!(chunks(&all, 0), None);
        assert_eq!(read(dir.path(), Some(0)), read(dir.path(), None));
    }

    fn place(seqnum_id: &str, seqnum: u64, boot: &str, monotonic: u64, realtime: u64) -> Place {
        Place {
            seqnum_id: seqnum_id.into(),
            seqnum,
            boot: boot.into(),
            monotonic,
            realtime,
        }
    }

    #[test]
    fn a_cursor_tells_each_order() {
        let p = Place::of_cursor("s=abc;i=1f;b=def;m=10;t=5e0d0d0d0d0d0;x=99").unwrap();
        assert_eq!(p, place("abc", 0x1f, "def", 0x10, 0x0005_e0d0_d0d0_d0d0));
        assert!(Place::of_cursor("s=abc;i=1f").is_none());
    }

    /// Files in order in every order that applies: one sequence by its
    /// numbers, one boot by monotonic time, always by wall-clock time;
    /// also against a file before the one just before.
    #[test]
    fn files_are_in_order_in_every_order_that_applies() {
        let file = |head: Place, tail: Place| Span {
            file: PathBuf::new(),
            head,
            tail,
            bytes: 0,
        };
        let a = file(
            place("s1", 1, "b1", 10, 500),
            place("s1", 5, "b1", 100, 1_000),
        );
        let after = |p: Place| in_order(&[a.clone(), file(p.clone(), p)]);
        assert!(after(place("s2", 1, "b2", 1, 2_000)));
        assert!(after(place("s1", 6, "b1", 101, 1_001)));
        // The clock went back between them: not told apart safely.
        assert!(!after(place("s2", 1, "b2", 1, 999)));
        // One sequence numbered backwards, one boot's time backwards.
        assert!(!after(place("s1", 4, "b2", 1, 2_000)));
        assert!(!after(place("s2", 1, "b1", 99, 2_000)));
        // a's sequence again after another one, numbered before a's end.
        let b = file(
            place("s2", 1, "b2", 1, 2_000),
            place("s2", 9, "b2", 9, 3_000),
        );
        let c = file(
            place("s1", 3, "b3", 1, 4_000),
            place("s1", 9, "b3", 9, 5_000),
        );
        assert!(in_order(&[a.clone(), b.clone()]) && in_order(&[b.clone(), c.clone()]));
        assert!(!in_order(&[a, b, c]));
    }
}
