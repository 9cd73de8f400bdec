//! Journal files written with systemd-journal-remote, journalctl, and a
//! systemd-journald of its own namespace.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::*;

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
