//! Shared helpers: running scans, writing Journal Export Format, finding
//! the systemd tools the tests drive.
//! Split by what each part stands in for: `journal` (journal files and a
//! namespaced journald), `service` (kubelet-sentinel itself), `smtp`
//! (aiosmtpd and a misbehaving server), `alertmanager` (Debian's
//! Alertmanager, alone or a cluster of two, and a webhook receiver).

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

/// A loopback TCP port the kernel picked, held by this test for its
/// whole life, so no other test or process can take it in between.
///
/// Made [`Port::closed`], it is bound but not listening: every connection
/// is refused (a server that is down). [`Port::listen`] turns it into a
/// listener, and [`Port::stdin`] hands a copy of that listener to a server
/// as its standard input (aiosmtpd, Alertmanager and the bad SMTP server
/// serve on it): the port is never free between choosing it and serving.
pub(crate) struct Port {
    pub port: u16,
    socket: std::os::fd::OwnedFd,
}

impl Port {
    /// Bound, refusing connections.
    pub(crate) fn closed() -> Self {
        use rustix::net::{AddressFamily, SocketFlags, SocketType, ipproto};
        // Close-on-exec: the tests are threads of one process, and another
        // test's child must not hold this port open.
        let socket = rustix::net::socket_with(
            AddressFamily::INET,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            Some(ipproto::TCP),
        )
        .expect("a TCP socket");
        let any = std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 0);
        rustix::net::bind(&socket, &any).expect("bind 127.0.0.1:0");
        let port = match rustix::net::getsockname(&socket) {
            Ok(addr) => std::net::SocketAddrV4::try_from(addr)
                .expect("an IPv4 address")
                .port(),
            Err(e) => panic!("getsockname: {e}"),
        };
        Self { port, socket }
    }

    /// Bound and listening.
    pub(crate) fn listening() -> Self {
        let p = Self::closed();
        p.listen();
        p
    }

    /// Starts listening (a server coming up on a port that refused).
    pub(crate) fn listen(&self) {
        rustix::net::listen(&self.socket, 128).expect("listen");
    }

    /// A copy of the listening socket, as a server's standard input.
    pub(crate) fn stdin(&self) -> Stdio {
        Stdio::from(self.socket.try_clone().expect("dup the listener"))
    }

    /// The listener itself, to accept on.
    pub(crate) fn listener(&self) -> std::net::TcpListener {
        std::net::TcpListener::from(self.socket.try_clone().expect("dup the listener"))
    }
}
