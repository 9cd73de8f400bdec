//! Continuation entries joined to the line they continue.
//!
//! journald makes one entry of every physical line, so a multi-line klog
//! entry (legacy text with newlines, `key=<` blocks, Trace output) arrives as
//! a header-bearing entry followed by header-less ones from the same stream
//! (`klog-format.md` section 5). A line is held back until the next line of
//! its stream shows it is complete, or until [`Joiner::flush`].

use std::collections::HashMap;

use crate::model::Entry;
use crate::time::Micros;

use super::klog::starts_with_header;

/// A line is never grown past this by continuations; what is cut is still
/// counted.
const MAX_JOINED: usize = 1 << 20;

/// A complete logical line: the first entry (its message extended by the
/// continuations) and how many continuation entries were joined to it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Joined {
    /// The first entry; its message is the whole joined line.
    pub entry: Entry,
    pub continuations: u32,
    /// The cursor of the last entry joined, so a commit covers all of them.
    pub last_cursor: Option<String>,
    pub last_at: Option<Micros>,
}

/// What the joiner hands on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// A line with a klog header or a JSON-format line, with its continuations.
    Line(Joined),
    /// A header-less entry that continues nothing: counted as unparsed.
    Orphan(Entry),
}

#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Joiner {
    pending: HashMap<String, (u64, Joined)>,
    seq: u64,
}

fn stream_key(e: &Entry) -> String {
    if let Some(s) = &e.stream {
        return s.to_string();
    }
    format!(
        "{}\u{0}{}\u{0}{}",
        e.host.as_deref().unwrap_or(""),
        e.identifier.as_deref().unwrap_or(""),
        e.pid.unwrap_or(0)
    )
}

/// Lines that start a record of their own although they carry no klog header:
/// logrus (k3s), gRPC warnings, flag deprecation notices.
#[must_use]
pub fn is_foreign(m: &[u8]) -> bool {
    m.starts_with(b"time=\"") || m.starts_with(b"WARNING: ") || m.starts_with(b"Flag --")
}

impl Joiner {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one kubelet entry; appends to `out` whatever is now complete.
    pub fn push(&mut self, entry: Entry, out: &mut Vec<Out>) {
        let key = stream_key(&entry);
        // The rest of a line journald cut at LineMax: whatever it starts
        // with, it goes on the same line, with no newline between.
        if let Some((_, j)) = self.pending.get_mut(&key) {
            if j.entry.cut {
                if j.entry.message.len() + entry.message.len() < MAX_JOINED {
                    j.entry.message.extend_from_slice(&entry.message);
                }
                j.entry.cut = entry.cut;
                j.continuations += 1;
                j.last_cursor = entry.cursor.or(j.last_cursor.take());
                j.last_at = entry.at.or(j.last_at);
                return;
            }
        }
        let m = &entry.message;
        if starts_with_header(m) || entry.record {
            if let Some((_, done)) = self.pending.remove(&key) {
                out.push(Out::Line(done));
            }
            self.seq += 1;
            let joined = Joined {
                last_cursor: entry.cursor.clone(),
                last_at: entry.at,
                entry,
                continuations: 0,
            };
            self.pending.insert(key, (self.seq, joined));
            return;
        }
        if m.starts_with(b"{") || is_foreign(m) {
            if let Some((_, done)) = self.pending.remove(&key) {
                out.push(Out::Line(done));
            }
            if m.starts_with(b"{\"") {
                out.push(Out::Line(Joined {
                    last_cursor: entry.cursor.clone(),
                    last_at: entry.at,
                    entry,
                    continuations: 0,
                }));
            } else {
                out.push(Out::Orphan(entry));
            }
            return;
        }
        match self.pending.get_mut(&key) {
            Some((_, j)) => {
                if j.entry.message.len() + m.len() < MAX_JOINED {
                    j.entry.message.push(b'\n');
                    j.entry.message.extend_from_slice(m);
                }
                j.continuations += 1;
                j.entry.cut = entry.cut;
                j.last_cursor = entry.cursor.or(j.last_cursor.take());
                j.last_at = entry.at.or(j.last_at);
            }
            None => out.push(Out::Orphan(entry)),
        }
    }

    /// A record that is not the kubelet's (a foreign line) ends the line
    /// held for its stream.
    pub fn interrupt(&mut self, entry: &Entry, out: &mut Vec<Out>) {
        if let Some((_, done)) = self.pending.remove(&stream_key(entry)) {
            out.push(Out::Line(done));
        }
    }

    /// Hands on every held line, oldest first (end of input, or a quiet
    /// journal while following).
    pub fn flush(&mut self, out: &mut Vec<Out>) {
        let mut held: Vec<(u64, Joined)> = self.pending.drain().map(|(_, v)| v).collect();
        held.sort_by_key(|(seq, _)| *seq);
        out.extend(held.into_iter().map(|(_, j)| Out::Line(j)));
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The time of the earliest line of `host` still held.
    #[must_use]
    pub fn earliest_held(&self, host: &str) -> Option<Micros> {
        self.pending
            .values()
            .filter(|(_, j)| j.entry.host.as_deref().unwrap_or("") == host)
            .filter_map(|(_, j)| j.entry.at)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(stream: &str, msg: &str) -> Entry {
        Entry {
            stream: Some(stream.into()),
            message: msg.as_bytes().to_vec(),
            ..Entry::default()
        }
    }

    #[test]
    fn joins_per_stream_and_keeps_orphans() {
        let mut j = Joiner::new();
        let mut out = Vec::new();
        j.push(entry("a", "Trace[1]: END"), &mut out);
        j.push(
            entry(
                "a",
                "E0610 02:55:28.185750   64201 aws.go:77] while getting",
            ),
            &mut out,
        );
        j.push(
            entry("b", "I0610 02:55:28.185750   99 x.go:1] other stream"),
            &mut out,
        );
        j.push(entry("a", "\tFor verbose messaging see"), &mut out);
        j.push(
            entry("a", "I0610 02:55:29.000000   64201 x.go:2] next"),
            &mut out,
        );
        j.flush(&mut out);
        assert!(matches!(&out[0], Out::Orphan(_)));
        let Out::Line(first) = &out[1] else { panic!() };
        assert_eq!(first.continuations, 1);
        assert_eq!(
            String::from_utf8_lossy(&first.entry.message),
            "E0610 02:55:28.185750   64201 aws.go:77] while getting\n\tFor verbose messaging see"
        );
        // Flushed in arrival order: stream b's line, then a's last line.
        let Out::Line(b) = &out[2] else { panic!() };
        assert!(b.entry.message.ends_with(b"other stream"));
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn pieces_of_a_line_cut_at_line_max_join_seamlessly() {
        let mut j = Joiner::new();
        let mut out = Vec::new();
        let piece = |msg: &str, cut: bool| Entry {
            cut,
            ..entry("a", msg)
        };
        j.push(piece("E0101 00:00:00.000000 1 a.go:1] \"Error updating node status, will retry\" err=\"failed to patch status \\\"{abc", true), &mut out);
        // The rest starts like a header: still the same line.
        j.push(
            piece(
                "E0101 def}\\\" for node \\\"w1\\\": context deadline exceeded\"",
                false,
            ),
            &mut out,
        );
        j.push(entry("a", "I0101 00:00:01.000000 1 a.go:1] next"), &mut out);
        let Out::Line(first) = &out[0] else { panic!() };
        assert_eq!(first.continuations, 1);
        let text = String::from_utf8_lossy(&first.entry.message);
        assert!(text.contains("{abcE0101 def}"), "{text}");
        let line = crate::parse::parse_line(&text);
        assert!(
            line.value("err")
                .unwrap()
                .ends_with("context deadline exceeded")
        );
    }

    #[test]
    fn json_lines_and_logrus_are_complete_records() {
        let mut j = Joiner::new();
        let mut out = Vec::new();
        j.push(entry("a", "I0101 00:00:00.000000 1 a.go:1] x"), &mut out);
        j.push(entry("a", "time=\"2022\" level=info msg=\"k3s\""), &mut out);
        j.push(
            entry("a", "{\"ts\":1,\"msg\":\"m\",\"caller\":\"a\"}"),
            &mut out,
        );
        assert_eq!(out.len(), 3);
        assert!(matches!(&out[1], Out::Orphan(_)));
        assert!(j.is_empty());
    }
}
