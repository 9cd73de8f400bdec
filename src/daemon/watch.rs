//! The config watcher: an edit to the config file is noticed (inotify on
//! its directory, so editors that replace the file are seen too) and,
//! once the writes settle, handed to ingest as a reload. Nothing polls.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::inotify;
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Control;

/// Writes to the file within this of each other are one edit.
const SETTLE: Duration = Duration::from_millis(250);

/// The directories to watch and the file names in them that are the config
/// (the path itself, and where a symlink points).
fn targets(path: &Path) -> Vec<(PathBuf, std::ffi::OsString)> {
    let mut out = Vec::new();
    let mut add = |p: &Path| {
        if let (Some(dir), Some(name)) = (p.parent(), p.file_name()) {
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir.to_path_buf()
            };
            if !out
                .iter()
                .any(|(d, n): &(PathBuf, _)| *d == dir && n == name)
            {
                out.push((dir, name.to_os_string()));
            }
        }
    };
    add(path);
    if let Ok(real) = std::fs::canonicalize(path) {
        add(&real);
    }
    out
}

pub async fn run(path: PathBuf, control: mpsc::Sender<Control>, stop: CancellationToken) {
    let fd = match inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC) {
        Ok(fd) => fd,
        Err(e) => {
            tracing::warn!("config watcher: {e}; edits apply with systemctl reload only");
            stop.cancelled().await;
            return;
        }
    };
    let targets = targets(&path);
    let mut names = Vec::new();
    for (dir, name) in &targets {
        let flags = inotify::WatchFlags::CLOSE_WRITE
            | inotify::WatchFlags::MOVED_TO
            | inotify::WatchFlags::CREATE
            | inotify::WatchFlags::DELETE;
        match inotify::add_watch(&fd, dir.as_path(), flags) {
            Ok(_) => names.push(name.clone()),
            Err(e) => tracing::warn!("config watcher: cannot watch {}: {e}", dir.display()),
        }
    }
    if names.is_empty() {
        stop.cancelled().await;
        return;
    }
    // `new` is deprecated because it cannot check that the descriptor stays
    // open; here the AsyncFd owns the OwnedFd, so it does, and the crate
    // stays free of `unsafe`.
    #[allow(deprecated)]
    let afd = match AsyncFd::new(fd) {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!("config watcher: {e}; edits apply with systemctl reload only");
            stop.cancelled().await;
            return;
        }
    };
    let mut last = std::fs::read(&path).ok();
    let mut settle: Option<tokio::time::Instant> = None;
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            ready = afd.readable() => {
                let Ok(mut guard) = ready else { return };
                let mut hit = false;
                let mut reader = inotify::Reader::new(afd.get_ref(), &mut buf);
                loop {
                    match reader.next() {
                        Ok(ev) => {
                            if ev.file_name().is_some_and(|n| {
                                names.iter().any(|m| m.as_encoded_bytes() == n.to_bytes())
                            }) {
                                hit = true;
                            }
                        }
                        Err(rustix::io::Errno::WOULDBLOCK) => break,
                        Err(e) => {
                            tracing::warn!("config watcher: {e}");
                            break;
                        }
                    }
                }
                guard.clear_ready();
                if hit {
                    settle = Some(tokio::time::Instant::now() + SETTLE);
                }
            }
            () = async { tokio::time::sleep_until(settle.unwrap()).await }, if settle.is_some() => {
                settle = None;
                let now = std::fs::read(&path).ok();
                if now != last {
                    last = now;
                    tracing::info!("{} changed; applying it", path.display());
                    if control.send(Control::Reload).await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}
