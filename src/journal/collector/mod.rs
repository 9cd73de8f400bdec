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
//! A coordinator thread ([`coordinator`]) owns the group table ([`groups`]),
//! one inotify watch on the directory (its subdirectories too), and a
//! bounded pool of workers ([`worker`]: one per core, at most
//! [`MAX_WORKERS`]), not a thread per host. Workers send their batches
//! straight to the consumer; every entry carries its group, and the last of
//! each batch its cursor, so the consumer commits one cursor per group.
//!
//! The protocol towards the consumer is the single reader's
//! ([`super::protocol`]): `Tail` once every group is read to its end,
//! `Sync` makes it look at every group again first.

mod coordinator;
mod covered;
mod groups;
pub(crate) mod split;
mod warnings;
mod watch;
mod worker;

use std::path::PathBuf;

pub(crate) use coordinator::spawn;
pub use groups::discover;
pub(crate) use groups::{Starts, holds_cursor};

use super::handle::Start;
use super::protocol::{Mode, ReadError, ReaderCtl};
use super::{EntryFilter, Text};

/// What a collector reader reads.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub dir: PathBuf,
    pub filter: EntryFilter,
    pub starts: Starts,
    pub mode: Mode,
    pub batch: usize,
    /// A group of many files whose times follow each other is read on two
    /// threads, in chunks of this many bytes (`scan`: see `split`).
    pub split: Option<u64>,
}

/// What the coordinator gives a worker.
enum Job {
    Read {
        key: Text,
        files: Vec<PathBuf>,
        start: Start,
        /// Files went away since the group was last read: count what was
        /// removed unread.
        check_loss: bool,
        /// The files the group was read over as committed: its first job
        /// after a start (see [`sentinel_core::model::GroupFiles`]).
        known: Option<sentinel_core::model::GroupFiles>,
    },
    Forget(Text),
}

/// A worker's report on one job.
struct Done {
    key: Text,
    /// The cursor of the last entry read (the group's position).
    cursor: Option<String>,
    /// Read to the end (or more is waiting).
    at_end: bool,
    error: Option<ReadError>,
    /// The consumer is gone.
    closed: bool,
}

/// Everything the coordinator waits for, on its one channel.
enum Event {
    /// The consumer asked (forwarded from its channel).
    Ctl(ReaderCtl),
    /// A worker finished a job.
    Done(Done),
    /// The directory changed (forwarded by the inotify thread).
    Fs(watch::Changes),
    /// The consumer dropped its control line.
    Gone,
}

#[cfg(test)]
mod late_tests;
