//! `journalctl -o export` (Journal Export Format): `KEY=value\n` fields,
//! binary fields as `KEY\n` + 64-bit little-endian length + bytes + `\n`,
//! and a blank line after each entry.

use std::io::BufRead;

use super::{Entry, Item, Malformed, SourceError};

pub struct ExportReader<R> {
    path: String,
    reader: R,
    entry_no: u64,
    line: Vec<u8>,
    done: bool,
}

/// The largest binary field accepted; journald's own limit is far below it.
const MAX_FIELD: u64 = 64 << 20;

impl<R: BufRead> ExportReader<R> {
    pub fn new(path: &str, reader: R) -> Self {
        Self {
            path: path.to_string(),
            reader,
            entry_no: 0,
            line: Vec::new(),
            done: false,
        }
    }

    fn io(&self, source: std::io::Error) -> SourceError {
        SourceError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Reads one entry's fields. `Ok(None)` at the end of the stream.
    fn read_entry(&mut self) -> Result<Option<Item>, SourceError> {
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut problem: Option<String> = None;
        loop {
            self.line.clear();
            let n = self
                .reader
                .read_until(b'\n', &mut self.line)
                .map_err(|e| self.io(e))?;
            if n == 0 {
                self.done = true;
                break;
            }
            if self.line.last() == Some(&b'\n') {
                self.line.pop();
            }
            if self.line.is_empty() {
                if fields.is_empty() && problem.is_none() {
                    continue; // blank lines between entries
                }
                break;
            }
            if let Some(eq) = self.line.iter().position(|&b| b == b'=') {
                fields.push((self.line[..eq].to_vec(), self.line[eq + 1..].to_vec()));
                continue;
            }
            // A binary field: the name alone, then the length and the data.
            let name = self.line.clone();
            let mut len = [0u8; 8];
            if let Err(e) = self.reader.read_exact(&mut len) {
                problem = Some(format!(
                    "binary field {} truncated before its length ({e})",
                    String::from_utf8_lossy(&name)
                ));
                self.done = true;
                break;
            }
            let len = u64::from_le_bytes(len);
            if len > MAX_FIELD {
                problem = Some(format!(
                    "binary field {} claims {len} bytes; the stream is not export format from here on",
                    String::from_utf8_lossy(&name)
                ));
                self.done = true;
                break;
            }
            let mut data = vec![0u8; len as usize];
            let mut nl = [0u8; 1];
            if self.reader.read_exact(&mut data).is_err()
                || self.reader.read_exact(&mut nl).is_err()
            {
                problem = Some(format!(
                    "binary field {} truncated ({len} bytes announced)",
                    String::from_utf8_lossy(&name)
                ));
                self.done = true;
                break;
            }
            fields.push((name, data));
        }
        if fields.is_empty() && problem.is_none() {
            return Ok(None);
        }
        self.entry_no += 1;
        let place = format!("{}: entry {}", self.path, self.entry_no);
        if let Some(reason) = problem {
            return Ok(Some(Item::Malformed(Malformed { place, reason })));
        }
        match entry_from_fields(fields.iter().map(|(k, v)| (k.as_slice(), v.as_slice()))) {
            Some(e) => Ok(Some(Item::Entry(e))),
            None => Ok(Some(Item::Malformed(Malformed {
                place,
                reason: "no MESSAGE field".into(),
            }))),
        }
    }
}

/// Builds an entry from journal fields, as export and JSON both give them.
/// `None` when there is no MESSAGE.
pub fn entry_from_fields<'a>(fields: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> Option<Entry> {
    let mut e = Entry::default();
    let mut message = None;
    let mut pid1 = false;
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    for (k, v) in fields {
        match k {
            b"MESSAGE" => message = Some(v.to_vec()),
            b"__REALTIME_TIMESTAMP" => e.at = text(v).trim().parse().ok(),
            b"__CURSOR" => e.cursor = Some(text(v)),
            b"_HOSTNAME" => e.host = Some(text(v).into()),
            b"_SYSTEMD_UNIT" => e.unit = Some(text(v).into()),
            b"SYSLOG_IDENTIFIER" => e.identifier = Some(text(v).into()),
            b"_PID" => {
                e.pid = text(v).trim().parse().ok();
                pid1 = e.pid == Some(1);
            }
            b"_STREAM_ID" => e.stream = Some(text(v).into()),
            b"UNIT" => e.about_unit = Some(text(v).into()),
            b"_LINE_BREAK" => e.cut = v == b"line-max",
            _ => {}
        }
    }
    e.from_systemd = pid1 && e.about_unit.is_some();
    e.message = message?;
    Some(e)
}

impl<R: BufRead> Iterator for ExportReader<R> {
    type Item = Result<Item, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.read_entry().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Vec<Item> {
        ExportReader::new("t", bytes).map(Result::unwrap).collect()
    }

    #[test]
    fn text_and_binary_fields() {
        let mut s = b"__CURSOR=s=a;i=1\n__REALTIME_TIMESTAMP=1700000000000000\n_HOSTNAME=w1\n_SYSTEMD_UNIT=kubelet.service\nMESSAGE\n".to_vec();
        let msg = b"line one\nline \xff two";
        s.extend_from_slice(&(msg.len() as u64).to_le_bytes());
        s.extend_from_slice(msg);
        s.extend_from_slice(b"\n_PID=42\n\n__REALTIME_TIMESTAMP=2\nMESSAGE=second\n\n");
        let items = read(&s);
        assert_eq!(items.len(), 2);
        let Item::Entry(e) = &items[0] else { panic!() };
        assert_eq!(e.message, msg);
        assert_eq!(e.at, Some(1_700_000_000_000_000));
        assert_eq!(e.host.as_deref(), Some("w1"));
        assert_eq!(e.pid, Some(42));
        assert_eq!(e.cursor.as_deref(), Some("s=a;i=1"));
        let Item::Entry(e) = &items[1] else { panic!() };
        assert_eq!(e.message, b"second");
    }

    #[test]
    fn truncated_binary_field_is_reported_not_fatal() {
        let mut s = b"__REALTIME_TIMESTAMP=1\nMESSAGE=ok\n\nMESSAGE\n".to_vec();
        s.extend_from_slice(&100u64.to_le_bytes());
        s.extend_from_slice(b"short");
        let items = read(&s);
        assert_eq!(items.len(), 2);
        let Item::Malformed(m) = &items[1] else {
            panic!()
        };
        assert_eq!(m.place, "t: entry 2");
        assert!(m.reason.contains("truncated"), "{}", m.reason);
    }

    #[test]
    fn systemd_lines_about_the_unit() {
        let s = b"_PID=1\nUNIT=kubelet.service\nSYSLOG_IDENTIFIER=systemd\nMESSAGE=Started kubelet.\n\n";
        let Item::Entry(e) = &read(s)[0] else {
            panic!()
        };
        assert!(e.from_systemd);
    }
}
