//! Shared helpers: running scans, writing Journal Export Format, finding
//! the systemd tools the tests drive.

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

/// A systemd tool, which the CI installs; a missing one fails the test.
pub(crate) fn systemd_tool(name: &str) -> PathBuf {
    for dir in ["/lib/systemd", "/usr/lib/systemd", "/usr/bin", "/bin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("{name} not found: install systemd-journal-remote (see .ci/run)");
}

/// One entry of Journal Export Format; values with a newline use the
/// binary form.
pub(crate) fn export_entry(out: &mut Vec<u8>, fields: &[(&str, &str)]) {
    for (k, v) in fields {
        if v.contains('\n') {
            out.extend_from_slice(k.as_bytes());
            out.push(b'\n');
            out.extend_from_slice(&(v.len() as u64).to_le_bytes());
            out.extend_from_slice(v.as_bytes());
            out.push(b'\n');
        } else {
            out.extend_from_slice(format!("{k}={v}\n").as_bytes());
        }
    }
    out.push(b'\n');
}

/// Writes export-format bytes into a journal file with
/// `systemd-journal-remote`.
pub(crate) fn journal_remote(export: &[u8], journal_file: &Path) {
    let out = run(
        Command::new(systemd_tool("systemd-journal-remote"))
            .arg(format!("--output={}", journal_file.display()))
            .arg("-"),
        Some(export),
    );
    assert!(
        out.status.success(),
        "systemd-journal-remote: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub(crate) fn journalctl(args: &[&str]) -> Vec<u8> {
    let out = run(Command::new("journalctl").args(args), None);
    assert!(
        out.status.success(),
        "journalctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A `systemd-journald` in a private namespace, started by the test (as
/// root; never the default instance) and removed again on drop.
pub(crate) struct Journald {
    pub name: String,
    child: std::process::Child,
    conf: PathBuf,
}

impl Journald {
    pub(crate) fn start(tag: &str) -> Self {
        let name = format!("kst{}{tag}", std::process::id());
        let conf = PathBuf::from(format!("/etc/systemd/journald@{name}.conf"));
        std::fs::create_dir_all("/etc/systemd").unwrap();
        // Volatile storage, no rate limit: tests write bursts.
        std::fs::write(
            &conf,
            "[Journal]\nStorage=volatile\nRateLimitBurst=0\nRateLimitIntervalSec=0\n",
        )
        .unwrap();
        let child = Command::new(systemd_tool("systemd-journald"))
            .arg(&name)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start systemd-journald");
        let j = Self { name, child, conf };
        wait_for(
            Duration::from_secs(10),
            || j.socket().exists(),
            "journald's socket",
        );
        // The first entry makes the journal file exist (and readable).
        j.send(&[
            ("MESSAGE", "kubelet-sentinel test journal"),
            ("SYSLOG_IDENTIFIER", "test"),
        ]);
        wait_for(
            Duration::from_secs(10),
            || !j.files().is_empty(),
            "journald's file",
        );
        j
    }

    pub(crate) fn socket(&self) -> PathBuf {
        PathBuf::from(format!("/run/systemd/journal.{}/socket", self.name))
    }

    /// This namespace's journal directories (volatile or persistent).
    fn dirs(&self) -> Vec<PathBuf> {
        let suffix = format!(".{}", self.name);
        ["/run/log/journal", "/var/log/journal"]
            .iter()
            .filter_map(|root| std::fs::read_dir(root).ok())
            .flat_map(Iterator::flatten)
            .filter(|d| d.file_name().to_string_lossy().ends_with(&suffix))
            .map(|d| d.path())
            .collect()
    }

    /// The journal files of this namespace.
    pub(crate) fn files(&self) -> Vec<PathBuf> {
        self.dirs()
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flat_map(|rd| rd.flatten().map(|f| f.path()))
            .collect()
    }

    /// Sends one entry over the native protocol.
    pub(crate) fn send(&self, fields: &[(&str, &str)]) {
        let mut dgram = Vec::new();
        for (k, v) in fields {
            dgram.extend_from_slice(format!("{k}={v}\n").as_bytes());
        }
        let sock = std::os::unix::net::UnixDatagram::unbound().unwrap();
        sock.send_to(&dgram, self.socket())
            .expect("send to journald");
    }

    /// Sends kubelet lines.
    pub(crate) fn kubelet(&self, lines: &[String]) {
        for l in lines {
            self.send(&[
                ("MESSAGE", l),
                ("SYSLOG_IDENTIFIER", "kubelet"),
                ("PRIORITY", "6"),
            ]);
        }
    }

    pub(crate) fn journalctl(&self, args: &[&str]) {
        let ns = format!("--namespace={}", self.name);
        let mut all = vec![ns.as_str()];
        all.extend_from_slice(args);
        journalctl(&all);
    }
}

impl Drop for Journald {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.conf);
        let _ = std::fs::remove_dir_all(format!("/run/systemd/journal.{}", self.name));
        for d in self.dirs() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
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

/// A kubelet-sentinel service with its own config, store and socket.
pub(crate) struct Service {
    pub dir: tempfile::TempDir,
    child: Option<std::process::Child>,
}

impl Service {
    /// `extra` is appended to a config that points the store and socket into
    /// the service's own directory.
    pub(crate) fn new(journal_section: &str, extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = format!(
            "[journal]\n{journal_section}\nstart_at = \"all\"\n\n[store]\npath = \"{d}/store\"\n\n[api]\nsocket = \"{d}/query.sock\"\n\n{extra}\n",
            d = dir.path().display()
        );
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        Self { dir, child: None }
    }

    pub(crate) fn config(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    pub(crate) fn start(&mut self) {
        self.start_through(&[]);
    }

    /// Starts it through a command that runs another (`setpriv …`).
    pub(crate) fn start_through(&mut self, wrapper: &[&str]) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("service.log"))
            .unwrap();
        let mut cmd = match wrapper {
            [] => bin(),
            [first, rest @ ..] => {
                let mut c = Command::new(first);
                c.args(rest).arg(env!("CARGO_BIN_EXE_kubelet-sentinel"));
                c
            }
        };
        let child = cmd
            .arg("--config")
            .arg(self.config())
            .arg("run")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let sock = self.dir.path().join("query.sock");
        wait_for(
            Duration::from_secs(20),
            || std::os::unix::net::UnixStream::connect(&sock).is_ok(),
            "the query socket to answer",
        );
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("service.log")).unwrap_or_default()
    }

    /// Sends a signal and returns at once (SIGHUP).
    pub(crate) fn signal_only(&self, sig: &str) {
        let child = self.child.as_ref().expect("running");
        run(
            Command::new("kill").args([&format!("-{sig}"), &child.id().to_string()]),
            None,
        );
    }

    /// Sends a signal and waits for the exit; returns the exit code.
    pub(crate) fn signal(&mut self, sig: &str) -> Option<i32> {
        let mut child = self.child.take().expect("running");
        let log_path = self.dir.path().join("service.log");
        run(
            Command::new("kill").args([&format!("-{sig}"), &child.id().to_string()]),
            None,
        );
        let end = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return st.code();
            }
            if std::time::Instant::now() >= end {
                let _ = child.kill();
                panic!(
                    "the service did not exit on SIG{sig}; its log:\n{}",
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the service to exit by itself; its exit code.
    pub(crate) fn wait_exit(&mut self, deadline: Duration) -> Option<i32> {
        let mut child = self.child.take().expect("running");
        let end = std::time::Instant::now() + deadline;
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return st.code();
            }
            if std::time::Instant::now() >= end {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the service did not exit; its log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn run_once(&self) -> Output {
        run(
            bin()
                .arg("--config")
                .arg(self.config())
                .args(["run", "--once"]),
            None,
        )
    }

    /// A query command; its stdout.
    pub(crate) fn query(&self, args: &[&str]) -> Output {
        run(bin().arg("--config").arg(self.config()).args(args), None)
    }

    pub(crate) fn incidents(&self) -> serde_json::Value {
        let out = self.query(&["incidents", "-o", "json"]);
        assert!(
            out.status.success(),
            "incidents: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["incidents"].clone()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub(crate) use std::time::Duration;

/// A free TCP port on loopback.
/// `[alert]` mailing oncall@example.com through a plain SMTP server on
/// loopback `port`, with `alert` (more `[alert]` keys) in it.
pub(crate) fn mail_to(port: u16, alert: &str) -> String {
    format!(
        "[alert]\nto = [\"oncall@example.com\"]\n{alert}\
         [alert.smtp]\nhost = \"127.0.0.1\"\nport = {port}\ntls = \"none\"\ntimeout = \"5s\"\n"
    )
}

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

/// A real SMTP server on loopback: Debian's aiosmtpd with the Maildir handler.
pub(crate) struct Smtpd {
    child: std::process::Child,
    pub port: u16,
    pub maildir: PathBuf,
}

impl Smtpd {
    pub(crate) fn aiosmtpd(port: u16, maildir: &Path, extra: &[&str]) -> Self {
        let child = Command::new("/usr/bin/aiosmtpd")
            // Server options go before `-c`: what follows it is the handler's.
            .args(["-n", "-l", &format!("127.0.0.1:{port}")])
            .args(extra)
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(maildir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start /usr/bin/aiosmtpd (python3-aiosmtpd)");
        // Implicit TLS greets only after the handshake: a connect must do.
        let greets = !extra.contains(&"--smtpscert");
        Self::ready(child, port, maildir, greets)
    }

    /// An aiosmtpd controller that requires AUTH (login `alerts`, password
    /// `s3cret`); the CLI has no authenticator option.
    pub(crate) fn with_auth(port: u16, maildir: &Path) -> Self {
        let script = maildir.with_extension("py");
        std::fs::write(
            &script,
            r#"import sys, time
from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import AuthResult, LoginPassword
def auth(server, session, envelope, mechanism, data):
    ok = isinstance(data, LoginPassword) and data.login == b"alerts" and data.password == b"s3cret"
    return AuthResult(success=ok, handled=False)
c = Controller(Mailbox(sys.argv[2]), hostname="127.0.0.1", port=int(sys.argv[1]),
               authenticator=auth, auth_require_tls=False, auth_required=True)
c.start()
while True:
    time.sleep(3600)
"#,
        )
        .unwrap();
        let child = Command::new("/usr/bin/python3")
            .arg(&script)
            .arg(port.to_string())
            .arg(maildir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Self::ready(child, port, maildir, true)
    }

    fn ready(child: std::process::Child, port: u16, maildir: &Path, greets: bool) -> Self {
        let s = Self {
            child,
            port,
            maildir: maildir.to_path_buf(),
        };
        // Ready when it greets, not merely when it accepts.
        wait_for(
            Duration::from_secs(15),
            || {
                use std::io::Read;
                let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                    return false;
                };
                if !greets {
                    return true;
                }
                let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = [0u8; 3];
                c.read_exact(&mut buf).is_ok() && &buf == b"220"
            },
            "aiosmtpd to greet",
        );
        s
    }

    /// Delivered mails, in arrival order.
    pub(crate) fn mails(&self) -> Vec<String> {
        mails_in(&self.maildir)
    }
}

pub(crate) fn mails_in(maildir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(maildir.join("new")) else {
        return Vec::new();
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = rd
        .flatten()
        .map(|e| (e.metadata().and_then(|m| m.modified()).unwrap(), e.path()))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|(_, p)| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// The Subject header of a raw mail, unfolded and decoded enough to compare.
pub(crate) fn subject(mail: &str) -> String {
    let mut lines = mail.lines();
    let mut subject = String::new();
    while let Some(l) = lines.next() {
        if let Some(s) = l.strip_prefix("Subject: ") {
            subject.push_str(s);
            for cont in lines.by_ref() {
                if cont.starts_with([' ', '\t']) {
                    subject.push_str(cont);
                } else {
                    break;
                }
            }
            break;
        }
    }
    subject
}

impl Drop for Smtpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A throwaway CA and a leaf for localhost/127.0.0.1 signed by it:
/// (dir, ca.pem, cert.pem, key.pem).
pub(crate) fn throwaway_tls() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sh = format!(
        "set -e; cd {d}
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj '/CN=kubelet-sentinel test CA' 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout key.pem -out leaf.csr -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > ext.cnf
openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cert.pem -days 2 -extfile ext.cnf 2>/dev/null",
        d = d.display()
    );
    let out = run(Command::new("sh").arg("-c").arg(sh), None);
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (ca, cert, key) = (d.join("ca.pem"), d.join("cert.pem"), d.join("key.pem"));
    (dir, ca, cert, key)
}

/// An SMTP server that misbehaves on purpose (Python's asyncio, no
/// packages): `slow` answers every command correctly but `delay` seconds
/// late; `endless` greets with a reply line that never ends; `hang` takes
/// the message and never answers it. Every message it took is counted in
/// `<dir>/received`.
pub(crate) struct BadSmtp {
    child: std::process::Child,
    pub port: u16,
    pub dir: PathBuf,
}

impl BadSmtp {
    pub(crate) fn start(mode: &str, delay: f64, dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let port = free_port();
        let script = dir.join("bad_smtp.py");
        std::fs::write(
            &script,
            r#"import asyncio, os, sys
mode, delay, port, out = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def received():
    with open(os.path.join(out, "received"), "a") as f:
        f.write("x\n")
async def serve(reader, writer):
    async def say(line):
        await asyncio.sleep(delay)
        writer.write(line.encode() + b"\r\n")
        await writer.drain()
    try:
        if mode == "endless":
            writer.write(b"220 ")
            chunk = b"x" * 65536
            while True:
                writer.write(chunk)
                await writer.drain()
        await say("220 bad.example ESMTP")
        while True:
            line = await reader.readline()
            if not line:
                return
            cmd = line.decode(errors="replace").strip().upper()
            if cmd.startswith("EHLO") or cmd.startswith("HELO"):
                await say("250 bad.example")
            elif cmd.startswith("DATA"):
                await say("354 go on")
                while True:
                    l = await reader.readline()
                    if not l or l in (b".\r\n", b".\n"):
                        break
                received()
                if mode == "hang":
                    await asyncio.sleep(3600)
                await say("250 ok")
            elif cmd.startswith("QUIT"):
                await say("221 bye")
                return
            else:
                await say("250 ok")
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", port)
    async with server:
        await server.serve_forever()
asyncio.run(main())
"#,
        )
        .unwrap();
        let child = Command::new("/usr/bin/python3")
            .arg(&script)
            .args([mode, &delay.to_string(), &port.to_string()])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for(
            Duration::from_secs(10),
            || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
            "the bad SMTP server",
        );
        Self {
            child,
            port,
            dir: dir.to_path_buf(),
        }
    }

    /// Messages it took (delivered, whatever the client thinks).
    pub(crate) fn received(&self) -> usize {
        std::fs::read_to_string(self.dir.join("received")).map_or(0, |s| s.lines().count())
    }
}

impl Drop for BadSmtp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Service {
    /// The service's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// `status -o json` (its exit code says running 0, stopped 3, alerts
    /// stuck 5; all answer).
    pub(crate) fn status(&self) -> serde_json::Value {
        let out = self.query(&["status", "-o", "json"]);
        assert!(
            matches!(out.status.code(), Some(0 | 3 | 5)),
            "status: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Resident memory, in KiB.
    pub(crate) fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

/// A real Alertmanager on loopback (Debian's `prometheus-alertmanager`),
/// clustering off, mailing its notifications to an SMTP server on loopback.
pub(crate) struct Alertmanager {
    child: Option<std::process::Child>,
    pub port: u16,
    dir: PathBuf,
}

impl Alertmanager {
    pub(crate) fn start(port: u16, smtp_port: u16, dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(
            dir.join("alertmanager.yml"),
            format!(
                "global:\n  smtp_smarthost: '127.0.0.1:{smtp_port}'\n  smtp_from: 'alertmanager@example.com'\n  smtp_require_tls: false\n\
                 route:\n  receiver: mail\n  group_by: ['cause']\n  group_wait: 1s\n  group_interval: 2s\n  repeat_interval: 1h\n\
                 \x20 routes:\n  - receiver: deadman\n    matchers: ['alertname=\"KubeletSentinelHeartbeat\"']\n\
                 receivers:\n- name: mail\n  email_configs:\n  - to: 'oncall@example.com'\n    send_resolved: true\n- name: deadman\n"
            ),
        )
        .unwrap();
        let mut am = Self {
            child: None,
            port,
            dir: dir.to_path_buf(),
        };
        am.restart();
        am
    }

    /// One with the given `alertmanager.yml`.
    pub(crate) fn with_config(port: u16, dir: &Path, yml: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("alertmanager.yml"), yml).unwrap();
        let mut am = Self {
            child: None,
            port,
            dir: dir.to_path_buf(),
        };
        am.restart();
        am
    }

    /// Starts it (again): it keeps no alerts across a restart.
    pub(crate) fn restart(&mut self) {
        self.stop();
        let log = std::fs::File::create(self.dir.join("alertmanager.log")).unwrap();
        let child = Command::new("/usr/bin/prometheus-alertmanager")
            .arg(format!(
                "--config.file={}",
                self.dir.join("alertmanager.yml").display()
            ))
            .arg(format!(
                "--storage.path={}",
                self.dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
            .arg("--cluster.listen-address=")
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start /usr/bin/prometheus-alertmanager (prometheus-alertmanager)");
        self.child = Some(child);
        let port = self.port;
        wait_for(
            Duration::from_secs(20),
            || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
            "Alertmanager to listen",
        );
    }

    pub(crate) fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its active alerts about incidents (not kubelet-sentinel's heartbeat),
    /// read back with `amtool`.
    pub(crate) fn alerts(&self) -> Vec<serde_json::Value> {
        self.all_alerts()
            .into_iter()
            .filter(|a| a["labels"]["alertname"] != "KubeletSentinelHeartbeat")
            .collect()
    }

    /// The heartbeats it has (one per posting host).
    pub(crate) fn heartbeats(&self) -> Vec<serde_json::Value> {
        self.all_alerts()
            .into_iter()
            .filter(|a| a["labels"]["alertname"] == "KubeletSentinelHeartbeat")
            .collect()
    }

    /// Every active alert, read back with `amtool`.
    pub(crate) fn all_alerts(&self) -> Vec<serde_json::Value> {
        let out = run(
            Command::new("/usr/bin/amtool").args([
                "alert",
                "query",
                "-o",
                "json",
                &format!("--alertmanager.url={}", self.url()),
            ]),
            None,
        );
        if !out.status.success() {
            return Vec::new();
        }
        serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    }
}

impl Drop for Alertmanager {
    fn drop(&mut self) {
        self.stop();
    }
}
