//! kubelet-sentinel as a service: its own config, store and socket.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use super::*;

/// A kubelet-sentinel service with its own config, store and socket.
pub(crate) struct Service {
    pub dir: tempfile::TempDir,
    child: Option<std::process::Child>,
    /// `RUST_LOG` for the next start (the service's default: `info`).
    pub log_filter: Option<&'static str>,
    /// Where the latest start's lines begin in the log.
    log_from: usize,
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
        Self {
            dir,
            child: None,
            log_filter: None,
            log_from: 0,
        }
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
        self.log_from = log.metadata().map_or(0, |m| m.len() as usize);
        let mut cmd = match wrapper {
            [] => bin(),
            [first, rest @ ..] => {
                let mut c = Command::new(first);
                c.args(rest).arg(env!("CARGO_BIN_EXE_kubelet-sentinel"));
                c
            }
        };
        if let Some(filter) = self.log_filter {
            cmd.env("RUST_LOG", filter);
        }
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

    /// Adds `metrics_listen` on a port the kernel picks (port 0) to the
    /// config's `[api]` section; [`Service::metrics_port`] says which.
    pub(crate) fn serve_metrics(&self) {
        let text = std::fs::read_to_string(self.config()).unwrap();
        assert!(!text.contains("metrics_listen"), "{text}");
        let text = text.replacen("[api]\n", "[api]\nmetrics_listen = \"127.0.0.1:0\"\n", 1);
        std::fs::write(self.config(), text).unwrap();
    }

    /// The port the running service serves /metrics on, as its log says
    /// (the latest start's).
    pub(crate) fn metrics_port(&self) -> u16 {
        let mut port = None;
        wait_for(
            Duration::from_secs(10),
            || {
                let log = self.log();
                port = log
                    .get(self.log_from..)
                    .unwrap_or_default()
                    .lines()
                    .rev()
                    .find_map(|l| l.split("serving /metrics on http://127.0.0.1:").nth(1))
                    .and_then(|rest| rest.split('/').next()?.parse::<u16>().ok());
                port.is_some()
            },
            "the service to say where it serves /metrics",
        );
        port.unwrap()
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

/// The log filter that has a collector service say when it sweeps.
pub(crate) const SWEEPS: &str = "info,kubelet_sentinel::journal::collector=debug";

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

    /// Waits until the service has nothing left to do with what it read:
    /// caught up with its journal, every alert it decided delivered (what
    /// stays in the outbox is held by a silence: `outbox_oldest_seconds`
    /// counts only what waits to go), and `status` the same on three reads
    /// in a row. What a test asserts next about mails is final for the
    /// lines it wrote, without a fixed sleep.
    pub(crate) fn settled(&self) {
        let key = |s: &serde_json::Value| {
            (
                s["outbox"].as_u64(),
                s["mails_sent"].as_u64(),
                s["kubelet_lines"].as_u64(),
                s["open_incidents"].as_u64(),
                s["incidents"].as_u64(),
            )
        };
        let (mut last, mut same) = (None, 0);
        wait_for(
            Duration::from_secs(30),
            || {
                let s = self.status();
                let done = s["caught_up"] == true && s["outbox_oldest_seconds"].is_null();
                let k = key(&s);
                same = if done && last == Some(k) { same + 1 } else { 0 };
                last = Some(k);
                same >= 2
            },
            "the service to settle (caught up, its outbox delivered or held)",
        );
    }

    /// Waits until a collector service has swept its directory (looked at
    /// every file again) after this call, or has said it sweeps no more
    /// (nothing left that needs it), then until it settles: whatever a
    /// sweep would read twice is read by then. Needs `log_filter`
    /// [`SWEEPS`].
    pub(crate) fn swept(&self) {
        let sweeps = |log: &str| {
            let said: Vec<&str> = log
                .lines()
                .filter(|l| l.contains(" swept ") || l.contains("sweeping "))
                .collect();
            let done = said.last().is_some_and(|l| l.contains(" not sweeping "));
            (said.iter().filter(|l| l.contains(" swept ")).count(), done)
        };
        let (before, _) = sweeps(&self.log());
        let end = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let log = self.log();
            let (n, done) = sweeps(&log);
            if n > before || done {
                break;
            }
            assert!(
                std::time::Instant::now() < end,
                "no sweep in 20 s (is log_filter SWEEPS?): {log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.settled();
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
