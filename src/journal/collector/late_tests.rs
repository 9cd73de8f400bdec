//! A host's older file that appears after its newer one was read (issue
//! 39's S19) across a restart: the files a group was read over are kept
//! with its cursor (`Starts::files`, from the store), so a file that
//! appeared while the service was stopped is found late at the next start,
//! and a late file read partly goes on after the entries taken.

use std::path::Path;

use sentinel_core::model::{GroupFiles, LateRead};

use super::{Spec, Starts, spawn};
use crate::journal::EntryFilter;
use crate::journal::handle::{Start, journal_remote};
use crate::journal::protocol::{Mode, ReaderEvent};

const GROUP: &str = "remote-hx";
const OLDER: &str =
    "remote-hx@0123456789abcdef0123456789abcdef-0000000000000001-0005e0d0d0d0d0d0.journal";

/// Lines `from..to`, a millisecond apart, as journal-remote takes them.
fn export(from: u64, to: u64) -> Vec<u8> {
    (from..to)
        .flat_map(|n| {
            format!(
                "__REALTIME_TIMESTAMP={}\n_SYSTEMD_UNIT=kubelet.service\n_HOSTNAME=hx\n\
                 MESSAGE=line {n}\n\n",
                1_000_000 + n * 1_000
            )
            .into_bytes()
        })
        .collect()
}

/// What one read of `dir` from `starts` gave.
#[derive(Debug, Default)]
struct Read {
    entries: Vec<String>,
    late: Vec<String>,
    files: Vec<Vec<String>>,
    cursor: Option<String>,
}

fn read_once(dir: &Path, starts: Starts) -> Read {
    let spec = Spec {
        dir: dir.to_path_buf(),
        filter: EntryFilter::default(),
        starts,
        mode: Mode::Once,
        batch: 4,
        split: None,
    };
    let mut r = spawn(spec, 4).unwrap();
    let mut out = Read::default();
    let text = |e: &crate::journal::Entry| String::from_utf8_lossy(&e.message).into_owned();
    while let Some(ev) = r.events.blocking_recv() {
        match ev {
            ReaderEvent::Entries(v) => {
                out.cursor = v.last().and_then(|e| e.cursor.clone()).or(out.cursor);
                out.entries.extend(v.iter().map(text));
            }
            ReaderEvent::Late { group, entries, .. } => {
                assert_eq!(&*group, GROUP);
                assert!(entries.iter().all(|e| e.cursor.is_none()));
                out.late.extend(entries.iter().map(text));
            }
            ReaderEvent::Files { group, ids } => {
                assert_eq!(&*group, GROUP);
                out.files.push(ids);
            }
            ReaderEvent::Failed(e) => panic!("{e}"),
            _ => {}
        }
    }
    out
}

fn lines(from: u64, to: u64) -> Vec<String> {
    (from..to).map(|n| format!("line {n}")).collect()
}

#[test]
fn a_file_that_appeared_while_stopped_is_read_late_and_a_partial_read_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    // Two journal-remote runs: two sequences, placed by time.
    journal_remote(&export(0, 10), &src.path().join(OLDER));
    journal_remote(&export(10, 20), &dir.path().join("remote-hx.journal"));
    let first = read_once(
        dir.path(),
        Starts {
            first: Some(Start::Head),
            ..Starts::default()
        },
    );
    assert_eq!(first.entries, lines(10, 20));
    assert!(first.late.is_empty());
    let [newer] = first.files.as_slice() else {
        panic!("{first:?}");
    };
    assert_eq!(newer.len(), 1);
    let cursor = first.cursor.clone().expect("the group's position");
    // Stopped; the older file is copied in.
    std::fs::rename(src.path().join(OLDER), dir.path().join(OLDER)).unwrap();
    let after = |late: Option<LateRead>, ids: Vec<String>| Starts {
        known: [(GROUP.to_string(), cursor.clone())].into(),
        files: [(GROUP.to_string(), GroupFiles { ids, late })].into(),
        first: Some(Start::Head),
        ..Starts::default()
    };
    let next = read_once(dir.path(), after(None, newer.clone()));
    assert_eq!(next.late, lines(0, 10), "{next:?}");
    assert!(next.entries.is_empty(), "{next:?}");
    let [both] = next.files.as_slice() else {
        panic!("{next:?}");
    };
    assert_eq!(both.len(), 2);
    assert!(both.contains(&newer[0]));
    let older = both.iter().find(|i| **i != newer[0]).unwrap().clone();
    // Killed after four of its entries were committed: the rest.
    let partial = LateRead {
        file: older.clone(),
        taken: 4,
    };
    let resumed = read_once(dir.path(), after(Some(partial), newer.clone()));
    assert_eq!(resumed.late, lines(4, 10), "{resumed:?}");
    // Once the file is among the group's, it is no longer late.
    let again = read_once(dir.path(), after(None, both.clone()));
    assert!(
        again.late.is_empty() && again.entries.is_empty(),
        "{again:?}"
    );
    assert!(again.files.is_empty(), "{again:?}");
    // A store from before the files were kept: nothing is taken for late.
    let legacy = read_once(
        dir.path(),
        Starts {
            known: [(GROUP.to_string(), cursor.clone())].into(),
            first: Some(Start::Head),
            ..Starts::default()
        },
    );
    assert!(legacy.late.is_empty(), "{legacy:?}");
    assert_eq!(legacy.files, vec![both.clone()]);
}
