//! What a journal reader thread and its consumer say to each other. Both
//! readers (the single handle of [`super::single`] and the collector of
//! [`super::collector`]) speak it, and the consumer cannot tell them apart.
//!
//! The reader sends batches of owned entries over a bounded tokio channel
//! (a slow consumer blocks the reader: backpressure; the journal itself
//! buffers on disk) and ends when the receiver is dropped. The consumer
//! asks over an unbounded channel; [`ControlLine`] turns that channel into
//! something a blocking thread can wait on together with a file descriptor.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use super::Entry;

/// What a reader thread sends.
#[derive(Debug)]
pub enum ReaderEvent {
    Entries(Vec<Entry>),
    /// A collector's group's entries from a file that appeared after the
    /// group was read past them (see [`sentinel_core::model::GroupFiles`]):
    /// they carry no cursor; the consumer counts them taken of `file`.
    Late {
        group: sentinel_core::model::Text,
        /// The file's header file ID.
        file: String,
        entries: Vec<Entry>,
        /// Of the file's entries, how many were taken up to the last of
        /// these.
        taken: u64,
    },
    /// A collector's group is now read over the files `ids` (after any
    /// late file among them was read to the group's position): kept with
    /// the group's cursor.
    Files {
        group: sentinel_core::model::Text,
        ids: Vec<String>,
    },
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
    Failed(ReadError),
    /// Something could not be read (a file, one host's files); the rest is.
    Warning(Warning),
    /// A collector's host's journal (any unit: journal-remote keeps all it
    /// is sent) reaches `at`: the newest entry time of its files, from
    /// their headers. What its silence is judged by (design 5.2).
    Activity {
        host: sentinel_core::model::Text,
        at: sentinel_core::time::Micros,
    },
}

/// Why a reader stopped, or one collector group's read did: what it was
/// doing when libsystemd (or inotify) failed, with the errno and message
/// it gave. The reader's consumer says which journal (the scanned path,
/// the collector's host).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot open: {0}")]
    Open(#[source] systemd::Error),
    #[error("cannot set data threshold: {0}")]
    DataThreshold(#[source] systemd::Error),
    #[error("cannot add matches: {0}")]
    Matches(#[source] systemd::Error),
    /// Seeking to where the read starts; `cursor` when that is after one.
    #[error("cannot seek{}: {source}", seek_to(cursor.as_deref()))]
    Seek {
        cursor: Option<String>,
        #[source]
        source: systemd::Error,
    },
    #[error("reading the next entry: {0}")]
    Next(#[source] systemd::Error),
    #[error("reading an entry: {0}")]
    Entry(#[source] systemd::Error),
    #[error("reading a cursor: {0}")]
    Cursor(#[source] systemd::Error),
    #[error("reading a time: {0}")]
    Time(#[source] systemd::Error),
    #[error("waiting for the journal: {0}")]
    Wait(#[source] systemd::Error),
    /// An unfiltered handle on a group's files, after libsystemd gave up
    /// on one of them through the match.
    #[error("cannot open the files again")]
    Reopen,
    /// The last entry read, looked for again through that handle.
    #[error("cannot find the last entry read again")]
    Refind,
    /// Watching a collector's directory (inotify).
    #[error("watching {}: {source}", dir.display())]
    Watch {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Waiting on the watch of a collector's directory.
    #[error("waiting for {}: {source}", dir.display())]
    WatchWait {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The collector's worker threads are gone.
    #[error("the journal workers ended")]
    WorkersEnded,
}

fn seek_to(cursor: Option<&str>) -> String {
    cursor.map_or_else(String::new, |c| format!(" to cursor {c}"))
}

/// A part of the journal that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The file it is about, when it is about one file.
    pub file: Option<PathBuf>,
    pub message: String,
    /// Entries the files record that the read could not walk (a damaged
    /// file, see `census`); 0 when the warning counts none.
    pub missing: u64,
}

impl Warning {
    /// A warning about one file.
    #[must_use]
    pub fn file(file: PathBuf, message: String) -> Self {
        Self {
            file: Some(file),
            message,
            missing: 0,
        }
    }

    /// A file that lost `missing` entries to damage.
    #[must_use]
    pub(crate) fn missing(file: PathBuf, missing: u64, message: String) -> Self {
        Self {
            file: Some(file),
            message,
            missing,
        }
    }

    /// A warning about the source, a group of files, or several files.
    #[must_use]
    pub fn general(message: String) -> Self {
        Self {
            file: None,
            message,
            missing: 0,
        }
    }
}

/// As logged: `FILE: message`, or the message alone.
impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}: {}", file.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// What a reader thread is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderCtl {
    /// Look at the journal again and answer with a `Tail`.
    Sync(u64),
    /// Answer with a `Pong` once what was read before is sent.
    Ping(u64),
}

/// Whether a reader ends at the tail or keeps waiting for new entries; and
/// so whether the service delivers once, everything at once, or keeps
/// delivering what is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Read what is there, then end (`scan`, `run --once`).
    Once,
    /// Keep waiting for new entries (the service).
    Follow,
}

impl Mode {
    #[must_use]
    pub fn follows(self) -> bool {
        self == Mode::Follow
    }
}

/// A running reader: its events and its control line.
pub struct Reader {
    pub events: mpsc::Receiver<ReaderEvent>,
    pub ctl: mpsc::UnboundedSender<ReaderCtl>,
    pub thread: Option<JoinHandle<()>>,
}

/// The reader's end of the control channel, made waitable: a small thread
/// blocks on the consumer's (tokio) channel, forwards each message into a
/// std channel and makes an eventfd readable. The reader thread polls that
/// eventfd together with what it reads (the journal's fd, inotify), so a
/// `Sync` or a watchdog `Ping` is seen at once instead of after the next
/// timeout. The forwarding thread ends when the consumer drops its sender
/// (and wakes the reader once more, which then finds its consumer gone) or
/// the reader drops this line.
pub(crate) struct ControlLine {
    wake: OwnedFd,
    rx: std_mpsc::Receiver<ReaderCtl>,
}

impl ControlLine {
    /// A control channel for a new reader: the consumer's sender, and this
    /// line for the reader thread.
    pub(crate) fn new() -> std::io::Result<(mpsc::UnboundedSender<ReaderCtl>, Self)> {
        let (tx, mut from_consumer) = mpsc::unbounded_channel::<ReaderCtl>();
        let wake = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )?;
        let writer = wake.try_clone()?;
        let (fwd, rx) = std_mpsc::channel();
        std::thread::Builder::new()
            .name("journal-ctl".into())
            .spawn(move || {
                while let Some(c) = from_consumer.blocking_recv() {
                    if fwd.send(c).is_err() {
                        return;
                    }
                    // A full counter (2^64 - 2 wakes unread) still wakes.
                    let _ = rustix::io::write(&writer, &1u64.to_ne_bytes());
                }
                // The consumer dropped its Reader (events first, then its
                // sender): wake the reader so it sees so at once.
                let _ = rustix::io::write(&writer, &1u64.to_ne_bytes());
            })?;
        Ok((tx, Self { wake, rx }))
    }

    /// What to poll for control messages (readable when one is waiting).
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }

    /// The messages waiting, taken without blocking.
    pub(crate) fn take(&self) -> Vec<ReaderCtl> {
        let mut counter = [0u8; 8];
        // Reset before draining: a message sent after the drain wakes again.
        let _ = rustix::io::read(&self.wake, &mut counter);
        self.rx.try_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words a log line or `scan`'s error says, with libsystemd's errno.
    #[test]
    fn read_errors_say_what_the_reader_was_doing() {
        let ebadmsg = || systemd::Error::from_raw_os_error(74);
        assert_eq!(
            ReadError::Next(ebadmsg()).to_string(),
            "reading the next entry: Bad message (os error 74)"
        );
        assert_eq!(
            ReadError::Seek {
                cursor: None,
                source: ebadmsg()
            }
            .to_string(),
            "cannot seek: Bad message (os error 74)"
        );
        let at = ReadError::Seek {
            cursor: Some("s=1f2e;i=1a".into()),
            source: systemd::Error::from_raw_os_error(22),
        };
        assert_eq!(
            at.to_string(),
            "cannot seek to cursor s=1f2e;i=1a: Invalid argument (os error 22)"
        );
        assert_eq!(
            std::error::Error::source(&at).map(ToString::to_string),
            Some("Invalid argument (os error 22)".into())
        );
        let dir = PathBuf::from("/var/log/journal/remote");
        assert_eq!(
            ReadError::WatchWait {
                dir,
                source: std::io::Error::from_raw_os_error(9)
            }
            .to_string(),
            "waiting for /var/log/journal/remote: Bad file descriptor (os error 9)"
        );
    }
}
