//! Shared helpers: running scans, writing Journal Export Format, finding
//! the systemd tools the tests drive.
//! Split by what each part stands in for: `journal` (journal files and a
//! namespaced journald), `service` (kubelet-sentinel itself), `smtp`
//! (aiosmtpd and a misbehaving server), `alertmanager` (Debian's
//! Alertmanager).

mod alertmanager;
mod journal;
mod service;
mod smtp;

pub(crate) use alertmanager::*;
pub(crate) use journal::*;
pub(crate) use service::*;
pub(crate) use smtp::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kubelet_sentinel::Clock;
use kubelet_sentinel::Settings;
use kubelet_sentinel::{EntryFilter, Format, ReadOptions};
use kubelet_sentinel::{Input, ScanResult, scan};

pub(crate) fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Text logs carry no year and zone: tests pin them.
pub(crate) fn read_options(format: Format) -> ReadOptions {
    ReadOptions {
        format,
        clock: Clock {
            zone: kubelet_sentinel::Zone::Utc,
            year: Some(2025),
            now: kubelet_sentinel::now(),
        },
        filter: EntryFilter::default(),
    }
}

pub(crate) fn scan_path(path: &Path, format: Format) -> ScanResult {
    let r = scan(
        &[Input::Path(path.display().to_string())],
        &read_options(format),
        Settings::default(),
    );
    assert!(r.failed.is_empty(), "{}: {:?}", path.display(), r.failed);
    r
}

pub(crate) fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kubelet-sentinel"))
}

pub(crate) fn run(cmd: &mut Command, stdin: Option<&[u8]>) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// Polls `ok` until it holds, failing the test after `deadline`.
pub(crate) fn wait_for(deadline: Duration, mut ok: impl FnMut() -> bool, what: &str) {
    let end = std::time::Instant::now() + deadline;
    while std::time::Instant::now() < end {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out after {deadline:?} waiting for {what}");
}

pub(crate) use std::time::Duration;

/// A loopback port no other test of this run is given, free when asked.
///
/// Not a port-0 bind dropped before use: the kernel hands the same
/// ephemeral ports out again (to the next port-0 bind and to every
/// outgoing connection), so a server started on it a moment later could
/// find it taken, and a "dead" port could come alive. These ports come
/// from below the kernel's ephemeral range, each once per process (tests
/// run as threads of one process), from a base that differs between
/// processes.
pub(crate) fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768)
        .clamp(12_000, 61_000);
    let span = low - 10_000;
    let base = std::process::id() * 97 % span;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(n < span, "no free loopback port left below {low}");
        let port = 10_000 + (base + n) % span;
        if std::net::TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            return port as u16;
        }
    }
}
