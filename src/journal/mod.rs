//! Where entries come from. Every source yields the same [`Entry`]: the
//! journal through libsystemd ([`sd`]), `journalctl -o export` streams
//! ([`export`]), `journalctl -o json` lines ([`json`]) and saved text logs
//! ([`text`]). [`open_input`] detects which one a path or stream holds.

pub mod export;
pub mod json;
pub mod sd;
pub mod text;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::time::{Clock, Micros};

/// A field value that repeats across entries (host, unit, identifier,
/// stream): shared, not copied per entry.
pub type Text = std::sync::Arc<str>;

/// One journal entry, or one line of a saved log.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// `__REALTIME_TIMESTAMP`, or the line's own time for text logs; `None`
    /// when a text line carries no time at all.
    pub at: Option<Micros>,
    /// `__CURSOR`; journal sources only.
    pub cursor: Option<String>,
    /// `_HOSTNAME`, or the host field of a syslog-style prefix.
    pub host: Option<Text>,
    /// `_SYSTEMD_UNIT`.
    pub unit: Option<Text>,
    /// `SYSLOG_IDENTIFIER`, or the tag of a syslog-style prefix.
    pub identifier: Option<Text>,
    /// `_PID`.
    pub pid: Option<u32>,
    /// `_STREAM_ID`: continuation entries share it with the line they continue.
    pub stream: Option<Text>,
    /// True for systemd's own lines about a unit (`_PID=1` with `UNIT=`).
    pub from_systemd: bool,
    /// `UNIT=` on systemd's own lines.
    pub about_unit: Option<Text>,
    /// MESSAGE, as bytes: it may be binary or invalid UTF-8.
    pub message: Vec<u8>,
    /// `_LINE_BREAK=line-max`: journald cut a line longer than `LineMax`
    /// here; the next entry of the stream goes on with the same line.
    #[serde(default)]
    pub cut: bool,
}

/// Which entries belong to the kubelet (design section 4).
#[derive(Debug, Clone)]
pub struct EntryFilter {
    pub units: Vec<String>,
    pub identifiers: Vec<String>,
}

/// Identifiers a kubelet is known to log under when a saved text log has no
/// unit to go by (`klog-format.md`, `SYSLOG_IDENTIFIER` row).
pub const KNOWN_KUBELET_IDENTIFIERS: &[&str] = &[
    "kubelet",
    "kubelet-wrapper",
    "kubenswrapper",
    "hyperkube",
    "k3s",
    "k3s-agent",
    "rke2",
    "k0s",
    "kubelite",
];

impl Default for EntryFilter {
    fn default() -> Self {
        Self {
            units: vec!["kubelet.service".to_string()],
            identifiers: Vec::new(),
        }
    }
}

impl EntryFilter {
    /// The journal match: the unit, systemd's own lines about the unit, or a
    /// configured identifier. Entries from saved text logs carry no unit, so
    /// for them the known kubelet identifiers count too.
    #[must_use]
    pub fn matches(&self, e: &Entry) -> bool {
        if let Some(unit) = &e.unit {
            if self.units.iter().any(|u| **u == **unit) {
                return true;
            }
        }
        if e.from_systemd {
            if let Some(about) = &e.about_unit {
                return self.units.iter().any(|u| **u == **about);
            }
        }
        let Some(ident) = &e.identifier else {
            // A bare klog line (no prefix, no fields): a saved kubelet log.
            return e.unit.is_none() && !e.from_systemd;
        };
        if self.identifiers.iter().any(|i| **i == **ident) {
            return true;
        }
        if e.unit.is_some() {
            return false;
        }
        if &**ident == "systemd" {
            let msg = String::from_utf8_lossy(&e.message);
            return self.units.iter().any(|u| {
                let stem = u.strip_suffix(".service").unwrap_or(u);
                msg.starts_with(&format!("{u}:"))
                    || msg.starts_with(&format!("Started {stem}"))
                    || msg.starts_with(&format!("Stopped {stem}"))
                    || msg.starts_with(&format!("Stopping {stem}"))
            });
        }
        KNOWN_KUBELET_IDENTIFIERS.contains(&&**ident)
            || self
                .units
                .iter()
                .any(|u| u.strip_suffix(".service") == Some(&**ident))
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
}

/// A record of the input that could not be read as an entry: said with its
/// place, counted, and skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub place: String,
    pub reason: String,
}

/// What a source yields: entries, and the records it had to skip.
#[derive(Debug)]
pub enum Item {
    Entry(Entry),
    Malformed(Malformed),
}

pub type Items = Box<dyn Iterator<Item = Result<Item, SourceError>> + Send>;

/// Options shared by the readers of saved logs.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    pub format: Format,
    pub clock: Clock,
    pub filter: EntryFilter,
}

const JOURNAL_MAGIC: &[u8] = b"LPKSHHRH";
const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];

/// Opens one input (`-` is standard input) and returns its entries, with the
/// format detected from the content unless `opts.format` says otherwise.
pub fn open_input(path: &str, opts: &ReadOptions) -> Result<Items, SourceError> {
    let io_err = |source| SourceError::Io {
        path: path.to_string(),
        source,
    };
    if path != "-" {
        let p = Path::new(path);
        let meta = std::fs::metadata(p).map_err(io_err)?;
        if meta.is_dir() || opts.format == Format::Journal {
            return sd::read_paths(&[PathBuf::from(path)], &opts.filter);
        }
    }
    let raw: Box<dyn Read + Send> = if path == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(path).map_err(io_err)?)
    };
    let mut reader = BufReader::with_capacity(256 * 1024, raw);
    let head = reader.fill_buf().map_err(io_err)?.to_vec();
    if head.starts_with(GZIP_MAGIC) {
        let inner = flate2::read::MultiGzDecoder::new(reader);
        let mut reader =
            BufReader::with_capacity(256 * 1024, Box::new(inner) as Box<dyn Read + Send>);
        let head = reader.fill_buf().map_err(io_err)?.to_vec();
        return open_stream(path, reader, &head, opts);
    }
    if head.starts_with(JOURNAL_MAGIC) {
        if path == "-" {
            return Err(SourceError::Journal {
                path: path.to_string(),
                message: "journal files cannot be read from standard input; name the file".into(),
            });
        }
        return sd::read_paths(&[PathBuf::from(path)], &opts.filter);
    }
    open_stream(path, reader, &head, opts)
}

fn open_stream(
    path: &str,
    reader: BufReader<Box<dyn Read + Send>>,
    head: &[u8],
    opts: &ReadOptions,
) -> Result<Items, SourceError> {
    let format = match opts.format {
        Format::Auto => detect(head),
        f => f,
    };
    Ok(match format {
        Format::Export => Box::new(export::ExportReader::new(path, reader)),
        Format::Json => Box::new(json::JsonReader::new(path, reader)),
        Format::Text | Format::Auto => Box::new(text::TextReader::new(path, reader, opts.clock)),
        Format::Journal => {
            return Err(SourceError::Journal {
                path: path.to_string(),
                message: "not a journal file (no LPKSHHRH header)".into(),
            });
        }
    })
}

/// Tells the stream formats apart from their first bytes.
#[must_use]
pub fn detect(head: &[u8]) -> Format {
    let text = String::from_utf8_lossy(&head[..head.len().min(64 * 1024)]);
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim_start();
    if first.starts_with('{')
        && (first.contains("\"MESSAGE\"") || first.contains("\"__REALTIME_TIMESTAMP\""))
    {
        return Format::Json;
    }
    let is_field = |l: &str| {
        l.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        })
    };
    if is_field(first) && text.contains("__REALTIME_TIMESTAMP=") {
        return Format::Export;
    }
    Format::Text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_formats() {
        assert_eq!(
            detect(b"__CURSOR=s=1\n__REALTIME_TIMESTAMP=1\nMESSAGE=x\n\n"),
            Format::Export
        );
        assert_eq!(
            detect(b"{\"__REALTIME_TIMESTAMP\":\"1\",\"MESSAGE\":\"x\"}\n"),
            Format::Json
        );
        assert_eq!(
            detect(b"{\"ts\":1753121331919.7622,\"msg\":\"x\"}\n"),
            Format::Text
        );
        assert_eq!(detect(b"I0715 16:24:50.100 a.go:1] x\n"), Format::Text);
        assert_eq!(
            detect(b"-- Logs begin at x --\nMar 22 17:40:06 h kubelet[1]: x\n"),
            Format::Text
        );
    }

    #[test]
    fn filter_follows_the_journal_match() {
        let f = EntryFilter {
            units: vec!["kubelet.service".into()],
            identifiers: vec!["kubenswrapper".into()],
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
    }
}
