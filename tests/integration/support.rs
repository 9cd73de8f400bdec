//! Shared helpers: running scans, writing Journal Export Format, finding
//! the systemd tools the tests drive.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kubelet_sentinel::journal::{EntryFilter, Format, ReadOptions};
use kubelet_sentinel::scan::{Input, ScanResult, scan};
use kubelet_sentinel::time::Clock;
use kubelet_sentinel::tracker::Settings;

pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Text logs carry no year and zone: tests pin them.
pub fn read_options(format: Format) -> ReadOptions {
    ReadOptions {
        format,
        clock: Clock {
            utc: true,
            year: Some(2025),
            now: kubelet_sentinel::time::now(),
        },
        filter: EntryFilter::default(),
    }
}

pub fn scan_path(path: &Path, format: Format) -> ScanResult {
    let r = scan(
        &[Input::Path(path.display().to_string())],
        &read_options(format),
        Settings::default(),
    );
    assert!(r.failed.is_empty(), "{}: {:?}", path.display(), r.failed);
    r
}

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kubelet-sentinel"))
}

pub fn run(cmd: &mut Command, stdin: Option<&[u8]>) -> Output {
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
pub fn systemd_tool(name: &str) -> PathBuf {
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
pub fn export_entry(out: &mut Vec<u8>, fields: &[(&str, &str)]) {
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
pub fn journal_remote(export: &[u8], journal_file: &Path) {
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

pub fn journalctl(args: &[&str]) -> Vec<u8> {
    let out = run(Command::new("journalctl").args(args), None);
    assert!(
        out.status.success(),
        "journalctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
