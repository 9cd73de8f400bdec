//! Continuation entries joined to the line they continue.
//!
//! journald makes one entry of every physical line, so a multi-line klog
//! entry (legacy text with newlines, `key=<` blocks, Trace output) arrives as
//! a header-bearing entry followed by header-less ones from the same stream
//! (`klog-format.md` section 5). A line is held back until the journal shows
//! it is complete: the next line of its stream, or the end of its stream
//! ([`Joiner::release_ended`]), or [`Joiner::flush`] at the end of input.
//!
//! Architecture invariant: when a held line is handed on depends on the
//! journal alone (its order and its times), never on how it is read, so
//! `scan`, `run --once` and a following service hand it on at the same place.
//! A kubelet that restarts never writes on its old stream again: its last
//! line is handed on at its unit's systemd lines, at the next line of a new
//! process, or once its host's journal is [`STREAM_QUIET`] past it, and a
//! following service waits out the same quiet in the host's journal time.

use std::collections::BTreeMap;

use crate::keyed::HostMap;
use crate::model::{Entry, Text};
use crate::time::{Micros, SECOND};

use super::klog::starts_with_header;

/// A line is never grown past this by continuations; what is cut is still
/// counted.
const MAX_JOINED: usize = 1 << 20;

/// A held line's stream has ended once its host's journal is this far past
/// its last entry: journald stamps the lines of one write microseconds
/// apart, so a continuation never comes a quarter of a second later. It is
/// also the floor of a live alert's latency (the last line of a burst
/// waits this long for a continuation), so it is kept short.
pub const STREAM_QUIET: Micros = SECOND / 4;

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

impl Joined {
    /// The host's journal time from which the line's stream has ended. A
    /// line with no time (dated in the future, from a host with no time
    /// yet) ends at the host's next time, or the next quiet.
    fn ended_at(&self) -> Micros {
        self.last_at
            .or(self.entry.at)
            .unwrap_or(Micros::MIN)
            .saturating_add(STREAM_QUIET)
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(from = "HeldLines")]
pub struct Joiner {
    /// The held lines, by stream. Stored one record a stream, written when
    /// it changes ([`Joiner::take_writes`], [`Joiner::restore`]), not with
    /// the state: a collector catching up holds a line for every host it
    /// has read, and the whole map at every commit grew with the hosts.
    #[serde(skip_serializing)]
    pending: HostMap<Text, (u64, Joined)>,
    seq: u64,
    /// The keys of `pending` by host: derived from it, so not stored.
    #[serde(skip)]
    by_host: HostMap<Text, Vec<Text>>,
    /// The streams whose held line changed since the last `take_writes`.
    #[serde(skip)]
    dirty: HostMap<String, ()>,
    /// Whether changes are kept for `take_writes` (the service's; a
    /// one-time read has nobody to take them, and they would grow with
    /// the streams of its journal).
    #[serde(skip)]
    track: bool,
}

/// The stored form of a [`Joiner`]: the counter, and (in a state written
/// before the held lines were records of their own) the held lines, which
/// the next commit writes as records.
#[derive(serde::Deserialize)]
struct HeldLines {
    #[serde(default)]
    pending: BTreeMap<String, (u64, Joined)>,
    seq: u64,
}

impl From<HeldLines> for Joiner {
    fn from(h: HeldLines) -> Self {
        let mut j = Joiner {
            seq: h.seq,
            ..Joiner::default()
        };
        for (key, (seq, held)) in h.pending {
            j.dirty.insert(key.clone(), ());
            j.hold_as(key.into(), seq, held);
        }
        j
    }
}

/// A held line to store (`Some`), or one no longer held (`None`).
pub type HeldWrite = (String, Option<(u64, Joined)>);

fn host_of(e: &Entry) -> &str {
    e.host.as_deref().unwrap_or("")
}

/// Both known and equal.
fn same(a: Option<&str>, b: Option<&str>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a == b)
}

/// `e` shows that the stream of the held line `held` (of the same host) has
/// ended: systemd's line about its unit (a stop, an exit, a start), a line
/// of another process of the same identifier (or unit), or a time past the
/// line's [`STREAM_QUIET`].
fn ends(held: &Joined, e: &Entry) -> bool {
    if e.at.is_some_and(|at| at >= held.ended_at()) {
        return true;
    }
    let h = &held.entry;
    if e.from_systemd || e.identifier.as_deref() == Some("systemd") {
        // A saved text log names no unit: any of systemd's lines about the
        // kubelet's units on the host.
        return match (e.about_unit.as_deref(), h.unit.as_deref()) {
            (Some(a), Some(u)) => a == u,
            _ => true,
        };
    }
    let other_process = matches!((h.pid, e.pid), (Some(a), Some(b)) if a != b);
    other_process
        && match (h.identifier.as_deref(), e.identifier.as_deref()) {
            (Some(a), Some(b)) => a == b,
            _ => same(h.unit.as_deref(), e.unit.as_deref()),
        }
}

/// The entry's stream id shared, not copied: every entry asks, and the
/// key is only copied where a stream is first held.
fn stream_key(e: &Entry) -> Text {
    if let Some(s) = &e.stream {
        return s.clone();
    }
    format!(
        "{}\u{0}{}\u{0}{}",
        e.host.as_deref().unwrap_or(""),
        e.identifier.as_deref().unwrap_or(""),
        e.pid.unwrap_or(0)
    )
    .into()
}

/// The starts of the kubelet's fatal words as cobra prints them with no
/// klog header, after `Error: ` or alone: `failed to run Kubelet: …`,
/// `unknown flag: --x`.
pub const BARE_FATAL: [&str; 6] = [
    "failed to run Kubelet: ",
    "failed to load Kubelet config file",
    "failed to load kubelet config file",
    "failed to validate kubelet flags",
    "unknown flag: ",
    "unknown shorthand flag: ",
];

/// The text of a fatal word of [`BARE_FATAL`], with its `Error: ` taken off.
#[must_use]
pub fn bare_fatal(t: &str) -> Option<&str> {
    let t = t
        .strip_prefix("Error: ")
        .or_else(|| t.strip_prefix("error: "))
        .unwrap_or(t);
    BARE_FATAL.iter().any(|p| t.starts_with(p)).then_some(t)
}

/// The kubelet's own last words with no klog header, which start a record
/// of their own rather than continue the line before: cobra's `Error:
/// failed to run Kubelet: …` and the Go runtime's `panic: …`, `fatal
/// error: …`.
#[must_use]
pub fn is_bare_word(m: &[u8]) -> bool {
    m.starts_with(b"panic: ")
        || m.starts_with(b"fatal error: ")
        || ((m.starts_with(b"Error: ") || m.starts_with(b"error: "))
            && bare_fatal(&crate::model::text(m)).is_some())
}

/// Lines that start a record of their own although they carry no klog header:
/// logrus (k3s), gRPC warnings, flag deprecation notices.
#[must_use]
pub fn is_foreign(m: &[u8]) -> bool {
    // A klog header (`I1205 `) starts none of the forms below: no leading
    // space, dot, slash or dash, and no key has a digit second. The
    // common case, asked of every entry, skips the status header's
    // UTF-8 check and its sixteen keys.
    if starts_with_header(m) {
        return false;
    }
    m.starts_with(b"time=\"")
        || m.starts_with(b"WARNING: ")
        || m.starts_with(b"Flag --")
        || is_status_header(m)
        // journalctl -x's catalog text, and systemctl's hint under a tail.
        || m.starts_with(b"-- ")
        || m == b"--"
        || m.starts_with(b"Hint: Some lines were ellipsized")
}

/// A paste's own markup on a line of its own: a markdown rule or fence
/// (`***`, `---`, three backticks), or an HTML tag line (`<details>`,
/// `</pre>`). Not
/// the kubelet's words; only read so for lines with no source at all (a
/// journal's lines are never a paste's markup).
#[must_use]
pub fn is_paste_markup(m: &[u8]) -> bool {
    let t = m.trim_ascii();
    if t.len() >= 3 && t.iter().all(|b| b"*-_=`~#".contains(b) || *b == b' ') {
        return true;
    }
    let Some(inner) = t.strip_prefix(b"<").and_then(|r| r.strip_suffix(b">")) else {
        return false;
    };
    let name = inner.strip_prefix(b"/").unwrap_or(inner);
    let name = name.strip_suffix(b"/").unwrap_or(name);
    let tag_end = name
        .iter()
        .position(|b| !b.is_ascii_alphanumeric())
        .unwrap_or(name.len());
    tag_end > 0 && name[0].is_ascii_alphabetic() && (tag_end == name.len() || name[tag_end] == b' ')
}

/// The header `systemctl status kubelet` prints above its log tail (its
/// `●` line, `Loaded:`, `Active: activating (auto-restart)`, `Main PID:`,
/// the cgroup tree): not entries (design 5.1).
fn is_status_header(m: &[u8]) -> bool {
    const DOTS: [&str; 4] = ["● ", "○ ", "× ", "* "];
    const KEYS: [&str; 16] = [
        "Loaded: ",
        "Active: ",
        "Drop-In: ",
        "Docs: ",
        "Process: ",
        "Main PID: ",
        "Tasks: ",
        "Memory: ",
        "CPU: ",
        "CGroup: ",
        "Invocation: ",
        "TriggeredBy: ",
        "Mem peak: ",
        "IO: ",
        "└─",
        "├─",
    ];
    let Ok(text) = std::str::from_utf8(&m[..m.len().min(200)]) else {
        return false;
    };
    let t = text.trim_start();
    let unit_line = DOTS.iter().any(|d| {
        t.strip_prefix(d).is_some_and(|rest| {
            let name = rest.split_whitespace().next().unwrap_or("");
            name.ends_with(".service")
        })
    });
    let indented = t.len() < text.len();
    unit_line
        || KEYS.iter().any(|k| t.starts_with(k)) && (indented || t.starts_with("Active: "))
        || indented && t.starts_with('/') && m.ends_with(b".conf")
}

impl Joiner {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one kubelet entry; appends to `out` whatever is now complete.
    pub fn push(&mut self, entry: Entry, out: &mut Vec<Out>) {
        let stream = stream_key(&entry);
        let key: &str = &stream;
        // The rest of a line journald cut at LineMax: whatever it starts
        // with, it goes on the same line, with no newline between.
        if let Some((_, j)) = self.pending.get_mut(key) {
            if j.entry.cut {
                Self::mark(self.track, &mut self.dirty, key);
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
            let joined = Joined {
                last_cursor: entry.cursor.clone(),
                last_at: entry.at,
                entry,
                continuations: 0,
            };
            // The stream's next line, the common case: the held line is
            // handed on and this one takes its place, under a new sequence
            // number; its host's list of held streams stays as it is.
            if let Some((seq, held)) = self.pending.get_mut(key) {
                if host_of(&held.entry) == host_of(&joined.entry) {
                    Self::mark(self.track, &mut self.dirty, key);
                    self.seq += 1;
                    *seq = self.seq;
                    out.push(Out::Line(std::mem::replace(held, joined)));
                    return;
                }
            }
            if let Some(done) = self.unhold(key) {
                out.push(Out::Line(done));
            }
            self.hold(stream.clone(), joined);
            return;
        }
        if m.starts_with(b"{") || is_foreign(m) || is_bare_word(m) {
            if let Some(done) = self.unhold(key) {
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
        match self.pending.get_mut(key) {
            Some((_, j)) => {
                Self::mark(self.track, &mut self.dirty, key);
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
        if let Some(done) = self.unhold(&stream_key(entry)) {
            out.push(Out::Line(done));
        }
    }

    /// Notes that the line held for `key` changed (when changes are kept).
    fn mark(track: bool, dirty: &mut HostMap<String, ()>, key: &str) {
        if track {
            dirty.get_or_insert_with(key, || key.to_string(), || ());
        }
    }

    fn hold(&mut self, key: Text, joined: Joined) {
        Self::mark(self.track, &mut self.dirty, &key);
        self.seq += 1;
        self.hold_as(key, self.seq, joined);
    }

    fn hold_as(&mut self, key: Text, seq: u64, joined: Joined) {
        let host = joined.entry.host.clone();
        let host = host.as_deref().unwrap_or("");
        if self.pending.insert(key.clone(), (seq, joined)).is_none() {
            self.by_host
                .get_or_insert_with(host, || host.into(), Vec::new)
                .push(key);
        }
    }

    fn unhold(&mut self, key: &str) -> Option<Joined> {
        let (_, j) = self.pending.remove(key)?;
        Self::mark(self.track, &mut self.dirty, key);
        let host = host_of(&j.entry);
        if let Some(keys) = self.by_host.get_mut(host) {
            keys.retain(|k| &**k != key);
            if keys.is_empty() {
                self.by_host.remove(host);
            }
        }
        Some(j)
    }

    /// Hands on, oldest first, the held lines of `host` that `ended` picks.
    fn release(&mut self, host: &str, ended: impl Fn(&Joined) -> bool, out: &mut Vec<Out>) {
        let Some(keys) = self.by_host.get(host) else {
            return;
        };
        let mut done: Vec<(u64, Text)> = keys
            .iter()
            .filter_map(|k| {
                let (seq, j) = self.pending.get(k)?;
                ended(j).then(|| (*seq, k.clone()))
            })
            .collect();
        done.sort_unstable();
        for (_, k) in done {
            if let Some(j) = self.unhold(&k) {
                out.push(Out::Line(j));
            }
        }
    }

    /// Before `entry` is taken (any entry of the kubelet's sources, systemd's
    /// lines about its units included): hands on, oldest first, the held
    /// lines of its host whose stream it shows has ended (see `ends`).
    pub fn release_ended(&mut self, entry: &Entry, out: &mut Vec<Out>) {
        self.release(host_of(entry), |j| ends(j, entry), out);
    }

    /// A following reader found `host`'s journal quiet up to `clock` (in the
    /// host's journal time): hands on, oldest first, the held lines that
    /// quiet ends, as the host's next entry at `clock` would.
    pub fn release_quiet(&mut self, host: &str, clock: Micros, out: &mut Vec<Out>) {
        self.release(host, |j| clock >= j.ended_at(), out);
    }

    /// Hosts with held lines, and the host time at which the first of them
    /// is handed on if nothing else comes.
    pub fn held_hosts(&self) -> impl Iterator<Item = (&str, Micros)> + '_ {
        self.by_host.iter().filter_map(|(h, keys)| {
            keys.iter()
                .filter_map(|k| Some(self.pending.get(k)?.1.ended_at()))
                .min()
                .map(|end| (&**h, end))
        })
    }

    /// Hands on every held line, oldest first (end of input).
    pub fn flush(&mut self, out: &mut Vec<Out>) {
        let pending = std::mem::take(&mut self.pending);
        if self.track {
            self.dirty
                .extend(pending.keys().map(|k| (k.to_string(), ())));
        }
        let mut held: Vec<(u64, Joined)> =
            pending.into_sorted().into_iter().map(|(_, v)| v).collect();
        self.by_host.clear();
        held.sort_by_key(|(seq, _)| *seq);
        out.extend(held.into_iter().map(|(_, j)| Out::Line(j)));
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// From now on, keeps the changes for [`Joiner::take_writes`].
    pub fn track_writes(&mut self) {
        self.track = true;
    }

    /// The held lines that changed since the last call (while
    /// [`Joiner::track_writes`]), to store: one record a stream.
    pub fn take_writes(&mut self) -> Vec<HeldWrite> {
        std::mem::take(&mut self.dirty)
            .into_sorted()
            .into_iter()
            .map(|(k, ())| {
                let held = self.pending.get(&k).cloned();
                (k, held)
            })
            .collect()
    }

    /// Puts back the held lines a store kept (after [`Joiner`] came from
    /// the stored state, whose own held lines, if any, stay to be written).
    pub fn restore(&mut self, held: Vec<(String, (u64, Joined))>) {
        for (key, (seq, line)) in held {
            if !self.pending.contains_key(&key) {
                self.hold_as(key.into(), seq, line);
            }
        }
    }

    /// The time of the earliest line of `host` still held (one with no
    /// time: the earliest there is).
    #[must_use]
    pub fn earliest_held(&self, host: &str) -> Option<Micros> {
        self.by_host
            .get(host)?
            .iter()
            .filter_map(|k| Some(self.pending.get(k)?.1.entry.at.unwrap_or(Micros::MIN)))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pastes_markup_is_told_apart() {
        for m in [
            "***",
            "---",
            "```",
            "  ~~~ ",
            "<details>",
            "</summary>",
            "<br/>",
            "<pre class=x>",
        ] {
            assert!(is_paste_markup(m.as_bytes()), "{m}");
        }
        for m in ["--", "> quoted", "<1.2.3>", "E0101 x", "a=<", " >", "-"] {
            assert!(!is_paste_markup(m.as_bytes()), "{m}");
        }
    }

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

    fn from(pid: u32, at: Micros, msg: &str) -> Entry {
        Entry {
            at: Some(at),
            host: Some("h1".into()),
            unit: Some("kubelet.service".into()),
            identifier: Some("kubelet".into()),
            pid: Some(pid),
            stream: Some(format!("stream-{pid}").into()),
            message: msg.as_bytes().to_vec(),
            ..Entry::default()
        }
    }

    fn texts(out: &[Out]) -> Vec<String> {
        out.iter()
            .map(|o| match o {
                Out::Line(j) => String::from_utf8_lossy(&j.entry.message).into_owned(),
                Out::Orphan(e) => format!("orphan {}", String::from_utf8_lossy(&e.message)),
            })
            .collect()
    }

    const LAST: &str = "I0101 00:00:00.000000 1 a.go:1] last line of the old process";

    /// Pushes `e` as the pipeline does: what it ends first, then itself.
    fn take(j: &mut Joiner, e: Entry, out: &mut Vec<Out>) {
        j.release_ended(&e, out);
        j.push(e, out);
    }

    #[test]
    fn a_new_process_of_the_same_kubelet_ends_the_old_stream() {
        let mut j = Joiner::new();
        let mut out = Vec::new();
        take(&mut j, from(10, 0, LAST), &mut out);
        // Another stream of the same process does not end it.
        let mut same_pid = from(10, 1000, "I0101 00:00:00.001000 1 a.go:1] stderr");
        same_pid.stream = Some("stream-10b".into());
        take(&mut j, same_pid, &mut out);
        assert!(out.is_empty());
        take(
            &mut j,
            from(11, 2000, "I0101 00:00:00.002000 1 a.go:1] new"),
            &mut out,
        );
        assert_eq!(
            texts(&out),
            [LAST, "I0101 00:00:00.001000 1 a.go:1] stderr"]
        );
    }

    #[test]
    fn systemd_lines_about_the_unit_end_its_streams() {
        let mut j = Joiner::new();
        let mut out = Vec::new();
        take(&mut j, from(10, 0, LAST), &mut out);
        let systemd = |unit: &str| Entry {
            at: Some(500),
            host: Some("h1".into()),
            identifier: Some("systemd".into()),
            pid: Some(1),
            from_systemd: true,
            about_unit: Some(unit.into()),
            message: b"Stopping kubelet.service - kubelet...".to_vec(),
            ..Entry::default()
        };
        j.release_ended(&systemd("containerd.service"), &mut out);
        assert!(out.is_empty());
        j.release_ended(&systemd("kubelet.service"), &mut out);
        assert_eq!(texts(&out), [LAST]);
        assert!(j.is_empty());
    }

    #[test]
    fn its_hosts_journal_a_second_on_ends_a_stream() {
        let mut j = Joiner::new();
        let mut out = Vec::new();
        take(&mut j, from(10, 0, LAST), &mut out);
        // Another host's time says nothing about this host's stream.
        let mut other = from(20, 5 * SECOND, "I0101 00:00:05.000000 1 a.go:1] h2");
        other.host = Some("h2".into());
        take(&mut j, other, &mut out);
        assert!(out.is_empty());
        assert_eq!(
            j.held_hosts().find(|(h, _)| *h == "h1"),
            Some(("h1", STREAM_QUIET))
        );
        // A continuation within the second still joins …
        take(&mut j, from(10, 10, "\tcontinued"), &mut out);
        assert!(out.is_empty());
        // … and the quiet counts from it.
        let mut late = from(10, STREAM_QUIET + 10, "\ttoo late to continue");
        j.release_ended(&late, &mut out);
        assert_eq!(texts(&out), [format!("{LAST}\n\tcontinued")]);
        late.at = Some(STREAM_QUIET + 20);
        j.push(late, &mut out);
        assert!(matches!(out[1], Out::Orphan(_)));
    }

    #[test]
    fn quiet_a_following_reader_confirms_ends_a_stream_as_the_next_entry_would() {
        let mut j = Joiner::new();
        let mut out = Vec::new();
        take(&mut j, from(10, 0, LAST), &mut out);
        j.release_quiet("h1", STREAM_QUIET - 1, &mut out);
        assert!(out.is_empty());
        j.release_quiet("h1", STREAM_QUIET, &mut out);
        assert_eq!(texts(&out), [LAST]);
        assert!(j.held_hosts().next().is_none());
    }

    #[test]
    fn held_lines_are_records_of_their_own_and_found_by_host_after_a_restart() {
        let mut j = Joiner::new();
        j.track_writes();
        let mut out = Vec::new();
        take(&mut j, from(10, 0, LAST), &mut out);
        // The state holds the counter only; the line is a record.
        let json = serde_json::to_value(&j).unwrap();
        assert_eq!(
            json.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["seq"]
        );
        let writes = j.take_writes();
        assert_eq!(writes.len(), 1);
        assert!(j.take_writes().is_empty(), "written once");
        let records: Vec<(String, (u64, Joined))> = writes
            .into_iter()
            .map(|(k, v)| {
                (
                    k,
                    serde_json::from_value(serde_json::to_value(v.unwrap()).unwrap()).unwrap(),
                )
            })
            .collect();
        let mut back: Joiner = serde_json::from_value(json).unwrap();
        back.track_writes();
        back.restore(records);
        assert!(back.take_writes().is_empty(), "restored, not changed");
        assert_eq!(back.earliest_held("h1"), Some(0));
        assert_eq!(back.pending, j.pending);
        take(
            &mut back,
            from(11, 1, "I0101 00:00:00.000001 1 a.go:1] new"),
            &mut out,
        );
        assert_eq!(texts(&out), [LAST]);
        // The handed-on line's record goes (the new process's line ended
        // the old stream), the new one's is written.
        let w = back.take_writes();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].1.is_none());
        assert!(
            w[1].1
                .as_ref()
                .is_some_and(|(_, l)| l.entry.message.ends_with(b"new"))
        );
        back.flush(&mut out);
        assert!(
            back.take_writes().iter().all(|(_, v)| v.is_none()),
            "flushed: removed"
        );
    }

    #[test]
    fn held_lines_of_a_state_stored_before_are_written_as_records() {
        // A state written when the held lines were inside it.
        let mut j = Joiner::new();
        let mut out = Vec::new();
        take(&mut j, from(10, 0, LAST), &mut out);
        let old = serde_json::json!({ "pending": j.pending, "seq": j.seq });
        let mut back: Joiner = serde_json::from_value(old).unwrap();
        assert_eq!(back.earliest_held("h1"), Some(0));
        let w = back.take_writes();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].1.as_ref(), j.pending.values().next());
    }
}
