//! Where entries come from. Every source yields the same [`Entry`]: the
//! journal through libsystemd, `journalctl -o export` streams
//! ([`export`]), `journalctl -o json` lines ([`json`]) and saved text logs
//! ([`text`]). [`open_input`] detects which one a path or stream holds.
//!
//! The journal side, by job:
//!
//! - [`protocol`]: what a reader thread and its consumer say ([`ReaderEvent`],
//!   [`ReaderCtl`], [`Reader`], [`Mode`]);
//! - [`handle`]: one libsystemd handle and what every reader does with it;
//! - `census`: what damaged files lost, against what their headers and
//!   data objects record;
//! - [`single`]: one handle on one journal, on a thread of its own;
//! - [`collector`]: a collector's directory, host by host;
//! - [`open`]: the one place that picks `single` or `collector`;
//! - `detect`: which reader a path or stream needs ([`open_input`]).
//!
//! Architecture invariant: `single` and `collector` import `handle` and
//! `protocol`, never each other; only `open` knows both.

mod census;
pub(crate) mod collector;
mod detect;
pub(crate) mod export;
pub(crate) mod handle;
pub(crate) mod json;
pub(crate) mod open;
pub(crate) mod protocol;
pub(crate) mod single;
pub(crate) mod text;

pub(crate) use detect::open_input;
pub(crate) use handle::{Start, Target};
pub use protocol::{Mode, ReadError, Reader, ReaderCtl, ReaderEvent};

use std::io::{self, BufRead};
use std::path::PathBuf;

pub(crate) use sentinel_core::model::{Entry, EntryFilter, Item, Malformed, Text};
use sentinel_core::time::Clock;

/// Reads one line (up to `\n`, which is not kept) into `buf`, keeping at
/// most `max` bytes of it: the rest is read and dropped, so memory stays
/// flat whatever the input. `Ok(None)` at the end; `Ok(Some(true))` when
/// the line was cut.
pub(crate) fn read_line_bounded<R: BufRead + ?Sized>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<bool>> {
    buf.clear();
    let mut cut = false;
    let mut any = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(any.then_some(cut));
        }
        any = true;
        let (line, used, end) = match chunk.iter().position(|&b| b == b'\n') {
            Some(n) => (&chunk[..n], n + 1, true),
            None => (chunk, chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        if line.len() > room {
            cut = true;
        }
        buf.extend_from_slice(&line[..line.len().min(room)]);
        reader.consume(used);
        if end {
            return Ok(Some(cut));
        }
    }
}

/// The journal a [`Position`]'s cursors belong to, in words (stored with
/// them): the system journal or a namespace of this machine (its machine
/// ID: a store copied to another machine holds cursors of another
/// journal), or a collector's directory. A cursor is only ever applied to
/// the journal it came from.
#[must_use]
pub(crate) fn source_id(target: &Target) -> String {
    let machine = || {
        std::fs::read_to_string("/etc/machine-id")
            .ok()
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .map_or_else(String::new, |m| format!(" of machine {m}"))
    };
    match target {
        Target::System => format!("the system journal{}", machine()),
        Target::Namespace(n) => format!("journal namespace {n:?}{}", machine()),
        // `/var/log/journal/remote/` and `/var/log/journal/remote` are one.
        Target::Directory(d) => {
            format!(
                "directory {}",
                d.components().collect::<PathBuf>().display()
            )
        }
        Target::Files(fs) => {
            let names: Vec<String> = fs.iter().map(|p| p.display().to_string()).collect();
            format!("files {}", names.join(", "))
        }
    }
}

/// The formats `scan` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Detect from the content.
    Auto,
    /// Journal files or directories, read through libsystemd.
    Journal,
    /// `journalctl -o export`.
    Export,
    /// `journalctl -o json` (one object a line).
    Json,
    /// Saved text: raw klog, `journalctl` short formats, syslog files, the
    /// kubelet's JSON logging format.
    Text,
}

/// A source could not be opened or read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{path}: {message}")]
    Journal { path: String, message: String },
    /// A journal reader that opened failed partway.
    #[error("{path}: {source}")]
    Read {
        path: String,
        #[source]
        source: ReadError,
    },
}

pub(crate) type Items = Box<dyn Iterator<Item = Result<Item, SourceError>> + Send>;

/// Options shared by the readers of saved logs.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    pub format: Format,
    pub clock: Clock,
    pub filter: EntryFilter,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_follows_the_journal_match() {
        let f = EntryFilter {
            units: vec!["kubelet.service".into()],
            identifiers: vec!["kubenswrapper".into()],
            containers: vec!["kubelet".into()],
            ..EntryFilter::default()
        };
        let e = |unit: Option<&str>, ident: Option<&str>| Entry {
            unit: unit.map(Into::into),
            identifier: ident.map(Into::into),
            ..Entry::default()
        };
        assert!(f.matches(&e(Some("kubelet.service"), Some("kubelet"))));
        assert!(!f.matches(&e(Some("docker.service"), Some("dockerd"))));
        assert!(f.matches(&e(Some("crio.service"), Some("kubenswrapper"))));
        // Text logs: no unit, known identifiers.
        assert!(f.matches(&e(None, Some("kubelet-wrapper"))));
        assert!(!f.matches(&e(None, Some("docker-healthcheck"))));
        assert!(f.matches(&e(None, None)));
        let systemd = Entry {
            from_systemd: true,
            about_unit: Some("kubelet.service".into()),
            identifier: Some("systemd".into()),
            ..Entry::default()
        };
        assert!(f.matches(&systemd));
        let other = Entry {
            identifier: Some("systemd".into()),
            message: b"Started Run docker-healthcheck once.".to_vec(),
            ..Entry::default()
        };
        assert!(!f.matches(&other));
        let docker = Entry {
            unit: Some("docker.service".into()),
            identifier: Some("a1b2c3d4e5f6".into()),
            container: Some("kubelet".into()),
            ..Entry::default()
        };
        assert!(f.matches(&docker));
    }

    #[test]
    fn only_trusted_writers_count_by_identifier_or_container() {
        let f = EntryFilter::default();
        let by = |unit: &str, uid: Option<u32>| Entry {
            unit: Some(unit.into()),
            identifier: Some("kubelet".into()),
            uid,
            ..Entry::default()
        };
        // `logger -t kubelet` by a user in a session: matched, not trusted.
        assert!(f.matches(&by("session-3.scope", Some(1000))));
        assert!(!f.trusted(&by("session-3.scope", Some(1000))));
        assert!(f.trusted(&by("session-3.scope", Some(0))));
        // The kubelet's own unit, whoever it runs as; a saved log (no _UID).
        assert!(f.trusted(&by("kubelet.service", Some(1000))));
        assert!(f.trusted(&Entry {
            identifier: Some("kubelet".into()),
            ..Entry::default()
        }));
        // Configured writers and units.
        let g = EntryFilter {
            trusted_uids: vec![0, 997],
            trusted_units: vec!["rootless-kubelet.service".into()],
            ..EntryFilter::default()
        };
        assert!(g.trusted(&by("user@997.service", Some(997))));
        assert!(g.trusted(&by("rootless-kubelet.service", Some(1000))));
        assert!(!g.trusted(&by("user@1000.service", Some(1000))));
    }
}
