//! THE place that picks the reader for a journal: a collector's directory
//! is read host by host ([`super::collector`]), anything else through one
//! handle ([`super::single`]). The service follows with [`follow`]; `scan`
//! and `open_input` read once with [`read`] and [`read_paths`].

use std::collections::VecDeque;
use std::path::PathBuf;

use tokio::sync::mpsc;

use super::collector::{self, Starts};
use super::handle::{Start, Target, Unreadable, unreadable_files};
use super::protocol::{Mode, Reader, ReaderEvent};
use super::single::{self, Spec};
use super::{Entry, EntryFilter, Item, Items, SourceError};
use sentinel_core::model::Position;

/// Entries per batch a following reader hands over.
const FOLLOW_BATCH: usize = 1024;
/// Batches in flight at most: the reader waits when the consumer is slow.
const FOLLOW_CAPACITY: usize = 16;
/// The same for a one-time read.
const READ_BATCH: usize = 512;
const READ_CAPACITY: usize = 8;

/// Starts a reader of `target` after `position`, or at `first` when
/// nothing was read before (for a collector: every group with no cursor,
/// there now or appearing later).
pub(crate) fn follow(
    target: &Target,
    filter: &EntryFilter,
    first: Start,
    position: &Position,
    mode: Mode,
) -> Result<Reader, SourceError> {
    if let Target::Directory(dir) = target {
        // A collector: each host's files through a handle of their own.
        let spec = collector::Spec {
            dir: dir.clone(),
            filter: filter.clone(),
            starts: Starts {
                known: position.groups.clone(),
                legacy: position.cursor.clone(),
                files: position.files.clone(),
                first: Some(first),
            },
            mode,
            batch: FOLLOW_BATCH,
            split: None,
        };
        return collector::spawn(spec, FOLLOW_CAPACITY);
    }
    let start = position
        .cursor
        .as_deref()
        .map_or(first, |c| Start::After(c.to_string()));
    let spec = Spec {
        target: target.clone(),
        filter: filter.clone(),
        start,
        mode,
        batch: FOLLOW_BATCH,
        remap_after: single::REMAP_AFTER,
    };
    single::spawn(spec, FOLLOW_CAPACITY)
}

/// Reads journal files or one directory from the head, with the kubelet
/// matches applied by libsystemd.
pub(crate) fn read_paths(paths: &[PathBuf], filter: &EntryFilter) -> Result<Items, SourceError> {
    let target = match paths {
        [one] if one.is_dir() => Target::Directory(one.clone()),
        _ => Target::Files(paths.to_vec()),
    };
    read(&target, filter)
}

/// Reads a whole journal once, from the head. A directory is read host by
/// host.
pub(crate) fn read(target: &Target, filter: &EntryFilter) -> Result<Items, SourceError> {
    if let Target::Directory(dir) = target {
        let spec = collector::Spec {
            dir: dir.clone(),
            filter: filter.clone(),
            starts: Starts {
                first: Some(Start::Head),
                ..Starts::default()
            },
            mode: Mode::Once,
            batch: READ_BATCH,
            split: Some(collector::split::CHUNK_BYTES),
        };
        let reader = collector::spawn(spec, READ_CAPACITY)?;
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
        mode: Mode::Once,
        batch: READ_BATCH,
        remap_after: single::REMAP_AFTER,
    };
    // Dropping the Drain drops the receiver: the thread ends at its next send.
    let reader = single::spawn(spec, READ_CAPACITY)?;
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
            return Some(Ok(Item::Malformed(sentinel_core::model::Malformed {
                place: u.path.display().to_string(),
                reason: format!("cannot be read, its entries are missing: {}", u.why()),
            })));
        }
        loop {
            if let Some(e) = self.buf.pop_front() {
                return Some(Ok(Item::Entry(e)));
            }
            match self.rx.blocking_recv()? {
                ReaderEvent::Entries(v) | ReaderEvent::Late { entries: v, .. } => {
                    self.buf.extend(v);
                }
                ReaderEvent::Tail { .. }
                | ReaderEvent::Pong(_)
                | ReaderEvent::Lost(_)
                | ReaderEvent::Files { .. } => {}
                ReaderEvent::Activity { host, at } => {
                    return Some(Ok(Item::Activity { host, at }));
                }
                ReaderEvent::Warning(w) => {
                    // A warning about the file read needs no other place.
                    let (place, reason) = match &w.file {
                        Some(file) if file.display().to_string() == self.target => {
                            (self.target.clone(), w.message)
                        }
                        _ => (self.target.clone(), w.to_string()),
                    };
                    return Some(Ok(Item::Malformed(sentinel_core::model::Malformed {
                        place,
                        reason,
                    })));
                }
                ReaderEvent::Failed(source) => {
                    return Some(Err(SourceError::Read {
                        path: self.target.clone(),
                        source,
                    }));
                }
            }
        }
    }
}
