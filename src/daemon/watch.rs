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

/// The directories to watch and the file names in them that are the config:
/// the path itself, every symlink met on the way to the file (each hop, and
/// a symlinked directory within a hop's target, as a `ConfigMap`'s
/// `config.toml -> ..data/config.toml`, `..data -> ..2026_12_01`), and the
/// file at the end. Resolved again after every change, so each swap of a
/// link is followed, not only the first.
fn targets(path: &Path) -> Vec<(PathBuf, std::ffi::OsString)> {
    let mut out = Vec::new();
    let mut add = |dir: &Path, name: &std::ffi::OsStr| {
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
    };
    if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
        add(dir, name);
    }
    // Resolve as realpath(3) does, one component at a time, noting links.
    let start = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut todo: std::collections::VecDeque<std::ffi::OsString> =
        std::collections::VecDeque::new();
    let mut done = PathBuf::from("/");
    let push_front = |todo: &mut std::collections::VecDeque<_>, p: &Path, done: &mut PathBuf| {
        if p.is_absolute() {
            *done = PathBuf::from("/");
        }
        let parts: Vec<std::ffi::OsString> = p
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n.to_os_string()),
                std::path::Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect();
        for part in parts.into_iter().rev() {
            todo.push_front(part);
        }
    };
    push_front(&mut todo, &start, &mut done);
    let mut links = 0;
    while let Some(part) = todo.pop_front() {
        if part == ".." {
            done.pop();
            continue;
        }
        let next = done.join(&part);
        match std::fs::read_link(&next) {
            Ok(target) if links < 40 => {
                links += 1;
                add(&done, &part);
                push_front(&mut todo, &target, &mut done);
            }
            _ => done = next,
        }
    }
    if let (Some(dir), Some(name)) = (done.parent(), done.file_name()) {
        add(dir, name);
    }
    out
}

/// What the file holds now, read as the loader reads it: a regular file,
/// at most what the loader accepts (a swap for a link to `/dev/zero` or a
/// FIFO costs nothing here; the reload then says what is wrong).
fn contents(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read as _;
    if !std::fs::metadata(path).ok()?.is_file() {
        return Some(b"(not a regular file)".to_vec());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(crate::config::MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// Watches the directories of `targets` not yet watched; the names to
/// look for are the targets' names.
fn watch_all(
    fd: &impl rustix::fd::AsFd,
    targets: &[(PathBuf, std::ffi::OsString)],
    watched: &mut Vec<PathBuf>,
) {
    let flags = inotify::WatchFlags::CLOSE_WRITE
        | inotify::WatchFlags::MOVED_TO
        | inotify::WatchFlags::CREATE
        | inotify::WatchFlags::DELETE;
    for (dir, _) in targets {
        if watched.contains(dir) {
            continue;
        }
        match inotify::add_watch(fd, dir.as_path(), flags) {
            Ok(_) => watched.push(dir.clone()),
            Err(e) => tracing::warn!("config watcher: cannot watch {}: {e}", dir.display()),
        }
    }
}

pub(super) async fn run(path: PathBuf, control: mpsc::Sender<Control>, stop: CancellationToken) {
    let fd = match inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC) {
        Ok(fd) => fd,
        Err(e) => {
            tracing::warn!("config watcher: {e}; edits apply with systemctl reload only");
            stop.cancelled().await;
            return;
        }
    };
    let mut targets = targets(&path);
    let mut watched = Vec::new();
    watch_all(&fd, &targets, &mut watched);
    if watched.is_empty() {
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
    let mut last = contents(&path);
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
                                targets.iter().any(|(_, m)| m.as_encoded_bytes() == n.to_bytes())
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
                // A link may point elsewhere now: follow it from here on.
                targets = self::targets(&path);
                // Watched again: a directory made anew under an old name is
                // another inode (adding a watch twice keeps one).
                watched.clear();
                watch_all(afd.get_ref(), &targets, &mut watched);
                let now = contents(&path);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn swap(dir: &Path, version: &str, body: &str) {
        // What the kubelet does to a mounted ConfigMap: a new timestamped
        // directory, a temporary link to it renamed over `..data`.
        let v = dir.join(version);
        std::fs::create_dir(&v).unwrap();
        std::fs::write(v.join("config.toml"), body).unwrap();
        let tmp = dir.join("..data_tmp");
        std::os::unix::fs::symlink(version, &tmp).unwrap();
        std::fs::rename(&tmp, dir.join("..data")).unwrap();
    }

    #[test]
    fn targets_name_every_hop_of_a_configmap_link() {
        let d = tempfile::tempdir().unwrap();
        swap(d.path(), "..v1", "a");
        std::os::unix::fs::symlink("..data/config.toml", d.path().join("config.toml")).unwrap();
        let t = targets(&d.path().join("config.toml"));
        let real = std::fs::canonicalize(d.path()).unwrap();
        let has = |dir: &Path, n: &str| t.iter().any(|(a, b)| a == dir && b == n);
        assert!(has(d.path(), "config.toml"), "{t:?}");
        assert!(has(&real, "..data"), "{t:?}");
        assert!(has(&real.join("..v1"), "config.toml"), "{t:?}");
    }

    #[tokio::test]
    async fn every_configmap_swap_is_followed_and_dev_zero_costs_nothing() {
        let d = tempfile::tempdir().unwrap();
        swap(d.path(), "..v1", "[alert]\nto = [\"v1@example.com\"]\n");
        let path = d.path().join("config.toml");
        std::os::unix::fs::symlink("..data/config.toml", &path).unwrap();
        let (tx, mut rx) = mpsc::channel(8);
        let stop = CancellationToken::new();
        let task = tokio::spawn(run(path.clone(), tx, stop.clone()));
        tokio::time::sleep(Duration::from_millis(100)).await;
        for v in ["..v2", "..v3", "..v4"] {
            swap(
                d.path(),
                v,
                &format!("[alert]\nto = [\"{v}@example.com\"]\n"),
            );
            let got = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
            assert!(
                matches!(got, Ok(Some(Control::Reload))),
                "swap to {v} not followed"
            );
        }
        // The path swapped for a link to /dev/zero: noticed, read bounded.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
        assert!(matches!(got, Ok(Some(Control::Reload))));
        assert!(contents(&path).is_some_and(|c| c.len() < 64));
        stop.cancel();
        task.await.unwrap();
    }
}
