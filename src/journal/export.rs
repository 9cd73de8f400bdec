//! `journalctl -o export` (Journal Export Format): `KEY=value\n` fields,
//! binary fields as `KEY\n` + 64-bit little-endian length + bytes + `\n`,
//! and a blank line after each entry.
//!
//! Bounded: a field keeps at most [`MAX_FIELD`] bytes (the rest is read and
//! dropped, and counted); a binary length no journal writes means the
//! stream is damaged there, and reading goes on at the next entry.

use std::io::{BufRead, Read as _};

use super::{Entry, Item, Malformed, SourceError, read_line_bounded};
use sentinel_core::parse::klog::split_header;
use sentinel_core::time::{Clock, Micros, Placer};

/// The most of one field that is kept.
pub(crate) const MAX_FIELD: usize = 1 << 20;
/// A binary length above this is not a journal's: journald's own limit on
/// a whole entry is below it.
const MAX_BINARY: u64 = 768 << 20;

pub(crate) struct ExportReader<R> {
    path: String,
    reader: R,
    entry_no: u64,
    line: Vec<u8>,
    done: bool,
    placer: Placer,
    /// Notices about the entry just read (cut fields, its time).
    notices: Vec<Item>,
}

impl<R: BufRead> ExportReader<R> {
    pub(crate) fn new(path: &str, reader: R, clock: Clock) -> Self {
        Self {
            path: path.to_string(),
            reader,
            entry_no: 0,
            line: Vec::new(),
            done: false,
            placer: Placer::new(clock),
            notices: Vec::new(),
        }
    }

    fn io(&self, source: std::io::Error) -> SourceError {
        SourceError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn place(&self) -> String {
        format!("{}: entry {}", self.path, self.entry_no + 1)
    }

    /// Skips to the end of the current entry (a blank line); true if one
    /// was found before the end of the stream.
    fn resync(&mut self) -> Result<bool, SourceError> {
        loop {
            match read_line_bounded(&mut self.reader, &mut self.line, MAX_FIELD)
                .map_err(|e| self.io(e))?
            {
                None => return Ok(false),
                Some(_) if self.line.is_empty() => return Ok(true),
                Some(_) => {}
            }
        }
    }

    /// Reads `len` bytes of a binary field, keeping at most [`MAX_FIELD`].
    fn binary(&mut self, len: u64) -> std::io::Result<(Vec<u8>, bool)> {
        let keep = (len as usize).min(MAX_FIELD);
        let mut data = vec![0u8; keep];
        self.reader.read_exact(&mut data)?;
        let rest = len - keep as u64;
        if rest > 0 {
            std::io::copy(&mut (&mut self.reader).take(rest), &mut std::io::sink())?;
        }
        let mut nl = [0u8; 1];
        self.reader.read_exact(&mut nl)?;
        Ok((data, rest > 0))
    }

    /// Reads one entry's fields. `Ok(None)` at the end of the stream.
    fn read_entry(&mut self) -> Result<Option<Item>, SourceError> {
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut problem: Option<String> = None;
        loop {
            let Some(cut) = read_line_bounded(&mut self.reader, &mut self.line, MAX_FIELD)
                .map_err(|e| self.io(e))?
            else {
                self.done = true;
                break;
            };
            if self.line.is_empty() {
                if fields.is_empty() && problem.is_none() {
                    continue; // blank lines between entries
                }
                break;
            }
            if let Some(eq) = self.line.iter().position(|&b| b == b'=') {
                if cut {
                    self.notices.push(Item::Damaged(Malformed {
                        place: self.place(),
                        reason: format!(
                            "field {} is longer than {MAX_FIELD} bytes: the rest was cut",
                            String::from_utf8_lossy(&self.line[..eq])
                        ),
                    }));
                }
                fields.push((self.line[..eq].to_vec(), self.line[eq + 1..].to_vec()));
                continue;
            }
            // A binary field: the name alone, then the length and the data.
            let name = String::from_utf8_lossy(&self.line).into_owned();
            let mut len = [0u8; 8];
            if let Err(e) = self.reader.read_exact(&mut len) {
                problem = Some(format!(
                    "binary field {name} truncated before its length ({e})"
                ));
                self.done = true;
                break;
            }
            let len = u64::from_le_bytes(len);
            if len > MAX_BINARY {
                problem = Some(format!(
                    "binary field {name} claims {len} bytes, which no journal writes; skipped to the next entry"
                ));
                if !self.resync()? {
                    self.done = true;
                }
                break;
            }
            let Ok((data, cut)) = self.binary(len) else {
                problem = Some(format!(
                    "binary field {name} truncated ({len} bytes announced)"
                ));
                self.done = true;
                break;
            };
            if cut {
                self.notices.push(Item::Damaged(Malformed {
                    place: self.place(),
                    reason: format!("field {name} ({len} bytes) was cut to {MAX_FIELD}"),
                }));
            }
            fields.push((name.into_bytes(), data));
        }
        if fields.is_empty() && problem.is_none() {
            return Ok(None);
        }
        self.entry_no += 1;
        let place = format!("{}: entry {}", self.path, self.entry_no);
        if let Some(reason) = problem {
            return Ok(Some(Item::Malformed(Malformed { place, reason })));
        }
        Ok(Some(
            match entry_from_fields(fields.iter().map(|(k, v)| (k.as_slice(), v.as_slice()))) {
                Some(e) => self.timed(e, place),
                None => Item::Malformed(Malformed {
                    place,
                    reason: "no MESSAGE field".into(),
                }),
            },
        ))
    }

    /// An entry without a usable `__REALTIME_TIMESTAMP` takes its klog
    /// header's time, and says so.
    fn timed(&mut self, e: Entry, place: String) -> Item {
        let (e, notice) = with_own_time(e, &mut self.placer, place);
        if let Some(n) = notice {
            self.notices.push(n);
        }
        Item::Entry(e)
    }
}

/// The latest time a journal entry can plausibly carry (year 2200).
const LATEST: Micros = 7_258_118_400_000_000;

/// Parses `__REALTIME_TIMESTAMP`: decimal microseconds, in a plausible range.
fn realtime(v: &[u8]) -> Option<Micros> {
    std::str::from_utf8(v)
        .ok()?
        .trim()
        .parse::<Micros>()
        .ok()
        .filter(|t| (0..LATEST).contains(t))
}

/// For entries of export and JSON streams: without a usable
/// `__REALTIME_TIMESTAMP`, the klog header's time is taken (a notice says
/// so); with neither, the entry takes the previous one's (the pipeline).
pub(crate) fn with_own_time(
    mut e: Entry,
    placer: &mut Placer,
    place: String,
) -> (Entry, Option<Item>) {
    if e.at.is_some() {
        return (e, None);
    }
    let text = String::from_utf8_lossy(&e.message);
    let own = split_header(&text).and_then(|(h, _)| placer.place(h.wall).ok());
    let reason = match own {
        Some(_) => "no usable __REALTIME_TIMESTAMP: the klog header's time was used",
        None => "no usable __REALTIME_TIMESTAMP: the previous entry's time was used",
    };
    e.at = own;
    (
        e,
        Some(Item::Damaged(Malformed {
            place,
            reason: reason.into(),
        })),
    )
}

/// Builds an entry from journal fields, as export and JSON both give them.
/// `None` when there is no MESSAGE.
pub(crate) fn entry_from_fields<'a>(
    fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> Option<Entry> {
    let mut e = Entry::default();
    let mut message = None;
    let mut pid1 = false;
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    for (k, v) in fields {
        match k {
            b"MESSAGE" => message = Some(v.to_vec()),
            b"__REALTIME_TIMESTAMP" => e.at = realtime(v),
            b"__CURSOR" => e.cursor = Some(text(v)),
            b"_HOSTNAME" => e.host = Some(text(v).into()),
            b"_SYSTEMD_UNIT" => e.unit = Some(text(v).into()),
            b"SYSLOG_IDENTIFIER" => e.identifier = Some(text(v).into()),
            b"CONTAINER_NAME" => e.container = Some(text(v).into()),
            b"_PID" => {
                e.pid = text(v).trim().parse().ok();
                pid1 = e.pid == Some(1);
            }
            b"_UID" => e.uid = text(v).trim().parse().ok(),
            b"_TRANSPORT" => e.kernel = v == b"kernel",
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
        if !self.notices.is_empty() {
            return Some(Ok(self.notices.remove(0)));
        }
        if self.done {
            return None;
        }
        // Notices about an entry come after it (at the next call).
        self.read_entry().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> Clock {
        Clock {
            zone: sentinel_core::time::Zone::Utc,
            year: Some(2026),
            now: 1_800_000_000_000_000,
        }
    }

    fn read(bytes: &[u8]) -> Vec<Item> {
        ExportReader::new("t", bytes, clock())
            .map(Result::unwrap)
            .collect()
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
    fn a_bogus_binary_length_loses_one_entry_not_the_rest() {
        let mut s = b"__REALTIME_TIMESTAMP=1\nMESSAGE=first\n\nMESSAGE\n".to_vec();
        s.extend_from_slice(&u64::MAX.to_le_bytes());
        s.extend_from_slice(b"garbage\n_PID=1\n\n");
        for n in 0..8 {
            s.extend_from_slice(
                format!("__REALTIME_TIMESTAMP={}\nMESSAGE=after {n}\n\n", n + 2).as_bytes(),
            );
        }
        let items = read(&s);
        let entries = items.iter().filter(|i| matches!(i, Item::Entry(_))).count();
        assert_eq!(entries, 9);
        let Item::Malformed(m) = &items[1] else {
            panic!("{items:?}")
        };
        assert!(
            m.reason.contains("skipped to the next entry"),
            "{}",
            m.reason
        );
    }

    #[test]
    fn huge_fields_are_cut_and_counted() {
        let mut s = b"__REALTIME_TIMESTAMP=1\nMESSAGE=".to_vec();
        s.extend(std::iter::repeat_n(b'x', 3 * MAX_FIELD));
        s.extend_from_slice(b"\n\n");
        let items = read(&s);
        let Item::Entry(e) = &items[0] else { panic!() };
        assert_eq!(e.message.len(), MAX_FIELD - "MESSAGE=".len());
        assert!(matches!(&items[1], Item::Damaged(m) if m.reason.contains("cut")));
    }

    #[test]
    fn without_a_usable_time_the_klog_header_counts() {
        for t in [
            "",
            "__REALTIME_TIMESTAMP=abc\n",
            "__REALTIME_TIMESTAMP=-5\n",
            "__REALTIME_TIMESTAMP=18446744073709551615\n",
        ] {
            let s = format!("{t}MESSAGE=E1128 09:00:00.500000 1 a.go:1] x\n\n");
            let items = read(s.as_bytes());
            let Item::Entry(e) = &items[0] else { panic!() };
            assert_eq!(
                sentinel_core::time::rfc3339(e.at.unwrap()),
                "2026-11-28T09:00:00.500Z",
                "{t:?}"
            );
            assert!(
                matches!(&items[1], Item::Damaged(m) if m.reason.contains("klog header")),
                "{t:?}"
            );
        }
    }

    #[test]
    fn systemd_lines_about_the_unit() {
        let s = b"_PID=1\nUNIT=kubelet.service\nSYSLOG_IDENTIFIER=systemd\n__REALTIME_TIMESTAMP=5\nMESSAGE=Started kubelet.\n\n";
        let Item::Entry(e) = &read(s)[0] else {
            panic!()
        };
        assert!(e.from_systemd);
    }
}
