//! Which reader an input needs: a journal file or directory (libsystemd),
//! or a stream whose format its first bytes tell (export, JSON, text),
//! gzipped or not.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::{Format, Items, ReadOptions, SourceError, export, json, open, text};

const JOURNAL_MAGIC: &[u8] = b"LPKSHHRH";
const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];

/// Opens one input (`-` is standard input) and returns its entries, with the
/// format detected from the content unless `opts.format` says otherwise.
pub(crate) fn open_input(path: &str, opts: &ReadOptions) -> Result<Items, SourceError> {
    let io_err = |source| SourceError::Io {
        path: path.to_string(),
        source,
    };
    if path != "-" {
        let p = Path::new(path);
        let meta = std::fs::metadata(p).map_err(io_err)?;
        if meta.is_dir() || opts.format == Format::Journal {
            return open::read_paths(&[PathBuf::from(path)], &opts.filter);
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
        return open::read_paths(&[PathBuf::from(path)], &opts.filter);
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
        Format::Export => Box::new(export::ExportReader::new(path, reader, opts.clock)),
        Format::Json => Box::new(json::JsonReader::new(path, reader, opts.clock)),
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
pub(super) fn detect(head: &[u8]) -> Format {
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
    // Export: fields, and an entry's usual ones (its time may be missing).
    let fields = text
        .lines()
        .take_while(|l| !l.is_empty())
        .filter(|l| is_field(l))
        .count();
    if is_field(first)
        && (text.contains("__REALTIME_TIMESTAMP=")
            || text.contains("\nMESSAGE=")
            || text.contains("\nMESSAGE\n")
            || text.starts_with("MESSAGE")
            || fields >= 3)
    {
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
            detect(b"_HOSTNAME=w1\nMESSAGE=E0101 00:00:00.000000 1 a.go:1] x\n\n"),
            Format::Export,
            "an export without __REALTIME_TIMESTAMP"
        );
        assert_eq!(
            detect(b"-- Logs begin at x --\nMar 22 17:40:06 h kubelet[1]: x\n"),
            Format::Text
        );
    }
}
