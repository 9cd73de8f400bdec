//! The collector directory's inotify watch, and the thread that waits on
//! it and forwards what it says into the coordinator's one channel.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;

use rustix::fs::inotify;

use super::Event;

/// What inotify said, drained at once.
pub(super) struct Changes {
    /// Files came or went, or events were lost: look at everything.
    pub(super) rescan: bool,
    /// The files written to, by watch.
    pub(super) touched: Vec<(i32, PathBuf)>,
    /// Waiting on inotify failed.
    pub(super) failed: Option<std::io::Error>,
}

/// The directory's inotify watch, and the thread that waits on it and
/// forwards what it says into the coordinator's channel. Dropping it stops
/// the thread (through an eventfd it also waits on).
pub(super) struct Watch {
    fd: OwnedFd,
    /// The directory each inotify watch is on.
    pub(super) dirs: HashMap<i32, PathBuf>,
    /// Some subdirectory could not be watched.
    pub(super) incomplete: bool,
    stop: OwnedFd,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    pub(super) fn start(events: std_mpsc::Sender<Event>) -> std::io::Result<Self> {
        let fd = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)?;
        let stop = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )?;
        let (fd2, stop2) = (fd.try_clone()?, stop.try_clone()?);
        let thread = std::thread::Builder::new()
            .name("journal-inotify".into())
            .spawn(move || forward_inotify(&fd2, &stop2, &events))?;
        Ok(Self {
            fd,
            dirs: HashMap::new(),
            incomplete: false,
            stop,
            thread: Some(thread),
        })
    }

    /// Watches one more directory.
    pub(super) fn add(&mut self, dir: &Path) -> rustix::io::Result<()> {
        let wd = inotify::add_watch(&self.fd, dir, watch_flags())?;
        self.dirs.insert(wd, dir.to_path_buf());
        Ok(())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = rustix::io::write(&self.stop, &1u64.to_ne_bytes());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The inotify thread: waits for the watch (or `stop`), drains it, and
/// sends what changed, until stopped or the coordinator is gone.
fn forward_inotify(fd: &OwnedFd, stop: &OwnedFd, events: &std_mpsc::Sender<Event>) {
    use rustix::event::{PollFd, PollFlags};
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 8192];
    loop {
        let mut fds = [
            PollFd::new(fd, PollFlags::IN),
            PollFd::new(stop, PollFlags::IN),
        ];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                let failed = Some(e.into());
                let _ = events.send(Event::Fs(Changes {
                    rescan: false,
                    touched: Vec::new(),
                    failed,
                }));
                return;
            }
        }
        if !fds[1].revents().is_empty() {
            return;
        }
        let (rescan, touched) = read_events(fd.as_fd(), &mut buf);
        if (rescan || !touched.is_empty())
            && events
                .send(Event::Fs(Changes {
                    rescan,
                    touched,
                    failed: None,
                }))
                .is_err()
        {
            return;
        }
    }
}

fn watch_flags() -> inotify::WatchFlags {
    inotify::WatchFlags::CREATE
        | inotify::WatchFlags::DELETE
        | inotify::WatchFlags::MOVED_TO
        | inotify::WatchFlags::MOVED_FROM
        | inotify::WatchFlags::MODIFY
        | inotify::WatchFlags::CLOSE_WRITE
        | inotify::WatchFlags::ATTRIB
}

/// Drains the inotify queue: whether files came or went (or events were
/// lost: look at everything), and the files written to (by watch).
fn read_events(
    fd: rustix::fd::BorrowedFd<'_>,
    buf: &mut [std::mem::MaybeUninit<u8>],
) -> (bool, Vec<(i32, PathBuf)>) {
    let mut rescan = false;
    let mut touched: Vec<(i32, PathBuf)> = Vec::new();
    let mut reader = inotify::Reader::new(fd, buf);
    loop {
        match reader.next() {
            Ok(ev) => {
                let flags = ev.events();
                if flags.intersects(
                    inotify::ReadFlags::CREATE
                        | inotify::ReadFlags::DELETE
                        | inotify::ReadFlags::MOVED_TO
                        | inotify::ReadFlags::MOVED_FROM
                        | inotify::ReadFlags::QUEUE_OVERFLOW
                        | inotify::ReadFlags::IGNORED
                        | inotify::ReadFlags::DELETE_SELF,
                ) {
                    rescan = true;
                } else if let Some(name) = ev.file_name() {
                    let name = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
                    if !touched.iter().any(|(w, n)| *w == ev.wd() && *n == name) {
                        touched.push((ev.wd(), name));
                    }
                }
            }
            Err(rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::INTR) => break,
            Err(_) => {
                rescan = true;
                break;
            }
        }
    }
    (rescan, touched)
}
