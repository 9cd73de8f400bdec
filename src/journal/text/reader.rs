//! A saved text log, record by record: each physical line classified
//! (a record's start, a continuation, a piece a terminal cut, junk), and
//! the records assembled from them.

use std::collections::VecDeque;
use std::io::BufRead;

use super::paste::{
    decode_entities, ends_inside_quote, heavily_indented, host_like, is_banner, is_fence,
    normalise, read_junk, record_start, starts_like_a_stamp, strip_markup, unwrap_markup,
};
use super::prefix::{Prefix, Stamp, clean_ident, host_tag, prefix, with_klog_fraction};
use crate::journal::{Entry, Item, Malformed, SourceError};
use sentinel_core::time::{Clock, Impossible, Micros, Placer};

/// The most of one physical line that is kept: well above journald's
/// `LineMax` (48 KiB), below anything that costs memory.
pub(super) const MAX_LINE: usize = 256 * 1024;

/// Lines at least this wide that are followed by a line that starts no
/// record were cut by a terminal.
const MIN_WRAP: usize = 60;

pub(crate) struct TextReader<R> {
    path: String,
    reader: R,
    placer: Placer,
    line_no: u64,
    buf: Vec<u8>,
    /// The record being assembled; handed on when the next one starts.
    pending: Option<Pending>,
    /// The last record's fields, for the continuation lines that follow it.
    last: Option<Entry>,
    /// The width a paste was hard-wrapped at, once one wrap was seen.
    wrap_width: Option<usize>,
    ready: VecDeque<Item>,
    done: bool,
    /// A line starting a record was read: what comes before a paste's
    /// first code fence until then is its prose.
    seen_record: bool,
    /// The lines that start no record before the first that does, held
    /// (at most [`LEAD_MAX`]): dropped as prose at a code fence, else
    /// handed on as they were.
    lead: Vec<Entry>,
}

/// Lines held before a paste's first record (see `TextReader::lead`).
const LEAD_MAX: usize = 64;

struct Pending {
    entry: Entry,
    /// Characters in its last physical line (is it cut at a width?).
    width: usize,
    /// Whitespace its last physical line ended with: a terminal may cut
    /// right after a space, which belongs to the line when it is joined.
    trailing: String,
    /// It starts a record (a prefix, a klog header): only a record's line
    /// can have been cut by a terminal; a stray line before it cannot.
    record: bool,
    /// What the paste put before the record (`> `, an indent): it is
    /// before every piece a terminal cut the record into, too.
    markup: String,
    /// A line that starts no record but is wide enough to be the first
    /// piece of a prefix a terminal cut (the record starts on the next line).
    maybe_head: bool,
    /// Where a cut piece's trailing whitespace was kept in the message
    /// (offset, length): undone where it was the paste's, not the line's.
    kept_trailing: Vec<(usize, usize)>,
}

impl Pending {
    /// The record as read. Whitespace its last piece ends with cannot be a
    /// terminal cut's: it is what the paste added to every line, so it is
    /// taken off where it was kept at a cut.
    fn finish(mut self) -> Entry {
        let damage = self.trailing.len();
        if damage > 0 {
            for &(at, len) in self.kept_trailing.iter().rev() {
                let kept = &self.entry.message[at..at + len];
                if kept.ends_with(self.trailing.as_bytes()) {
                    self.entry.message.drain(at + len - damage..at + len);
                }
            }
        }
        self.entry
    }
}

impl<R: BufRead> TextReader<R> {
    pub(crate) fn new(path: &str, reader: R, clock: Clock) -> Self {
        Self {
            path: path.to_string(),
            reader,
            placer: Placer::new(clock),
            line_no: 0,
            buf: Vec::new(),
            pending: None,
            last: None,
            wrap_width: None,
            ready: VecDeque::new(),
            done: false,
            seen_record: false,
            lead: Vec::new(),
        }
    }

    fn read_line(&mut self) -> std::io::Result<Option<bool>> {
        crate::journal::read_line_bounded(&mut self.reader, &mut self.buf, MAX_LINE)
    }
}

/// One physical line, classified.
enum Physical<'a> {
    Skip,
    Record {
        entry: Entry,
        /// Where the message starts in the normalised line.
        message: &'a str,
    },
    /// Starts no record. `indented`: it began with whitespace (a real
    /// continuation: journalctl's indent, a klog `=<` block line).
    Continuation {
        indented: bool,
        text: &'a str,
    },
}

impl<R: BufRead> TextReader<R> {
    /// The line's own time: a klog header's, or a JSON-format `ts`.
    fn own_time(&mut self, msg: &str) -> Result<Option<Micros>, Impossible> {
        if let Some(wall) = sentinel_core::parse::klog::leading_time(msg) {
            return self.placer.place(wall).map(Some);
        }
        if msg.starts_with("{\"") {
            let Some(ts) = msg.split_once("\"ts\":").map(|(_, t)| t) else {
                return Ok(None);
            };
            let Some(end) = ts.find([',', '}']) else {
                return Ok(None);
            };
            return Ok(ts[..end]
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|ms| ms.is_finite() && *ms > 0.0 && *ms < 1e16)
                .map(|ms| (ms * 1_000.0).round() as Micros));
        }
        Ok(None)
    }

    fn stamp_time(&mut self, at: Stamp, msg: &str) -> Result<Option<Micros>, Impossible> {
        match at {
            Stamp::Wall(w) => self.placer.place(with_klog_fraction(w, msg)).map(Some),
            Stamp::Absolute(t) => Ok(Some(t)),
            Stamp::Unknown => self.own_time(msg),
        }
    }

    /// A record that starts with a journal or syslog prefix.
    fn prefixed<'a>(&mut self, msg: &'a str, p: Prefix<'_>) -> Result<Physical<'a>, Impossible> {
        Ok(Physical::Record {
            entry: Entry {
                at: self.stamp_time(p.at, msg)?,
                host: Some(p.host.into()),
                identifier: Some(p.ident.into()),
                pid: p.pid,
                ..Entry::default()
            },
            message: msg,
        })
    }

    fn classify<'a>(&mut self, line: &'a str) -> Result<Physical<'a>, Impossible> {
        let trimmed = line.trim();
        if is_banner(trimmed) {
            return Ok(Physical::Skip);
        }
        let indented = line.starts_with([' ', '\t']);
        let (s, _) = unwrap_markup(line);
        if s.trim().is_empty() || is_banner(s.trim()) {
            return Ok(Physical::Skip);
        }
        // A journal or syslog prefix at the start.
        if let Ok((msg, p)) = prefix(s) {
            return self.prefixed(msg, p);
        }
        if let Ok((msg, tag)) = host_tag(s) {
            let at = self.own_time(msg)?;
            // `kubelet[4744]: …` is what is left of a journal prefix: an
            // identifier and PID, not a host.
            let (host, ident, pid) = match tag.strip_suffix(']').and_then(|t| t.split_once('[')) {
                Some((ident, pid)) if pid.parse::<u32>().is_ok() => {
                    (None, Some(clean_ident(ident).into()), pid.parse().ok())
                }
                _ => (host_like(tag).then(|| tag.into()), None, None),
            };
            return Ok(Physical::Record {
                entry: Entry {
                    at,
                    host,
                    identifier: ident,
                    pid,
                    ..Entry::default()
                },
                message: msg,
            });
        }
        // k3s's and rke2's own logrus lines start a record of their own.
        // So do the kubelet's last words with no header (`Error: failed to
        // run Kubelet: …`, a Go `panic: …`).
        if s.starts_with("time=\"")
            || s.starts_with("WARNING: ")
            || s.starts_with("Flag --")
            || sentinel_core::parse::join::is_bare_word(s.as_bytes())
        {
            return Ok(Physical::Record {
                entry: Entry::default(),
                message: s,
            });
        }
        // A journal prefix behind junk: `journal.log: Feb 09 …`, and grep's
        // `FILE:` and `-n` line numbers glued to it (`104233:Mar  3 …`, a
        // context line `104234-Mar  3 …`).
        for (n, _) in s
            .char_indices()
            .filter(|(n, c)| *n > 0 && *n < 96 && !c.is_whitespace() && behind_junk(&s[..*n]))
        {
            if let Ok((msg, p)) = prefix(&s[n..]) {
                return self.prefixed(msg, p);
            }
        }
        // A klog body whose header was cut off (`380] Error updating …`).
        if sentinel_core::parse::klog::headless(s).is_some() {
            return Ok(Physical::Record {
                entry: Entry {
                    record: true,
                    ..Entry::default()
                },
                message: s,
            });
        }
        // A klog header or JSON object after whatever came first.
        if let Some(n) = record_start(s) {
            let (junk, msg) = s.split_at(n);
            let j = read_junk(junk);
            let at = match j.at {
                Some(t) => Some(t),
                None => self.own_time(msg)?,
            };
            return Ok(Physical::Record {
                entry: Entry {
                    at,
                    host: j.host.map(Into::into),
                    identifier: j.ident.map(Into::into),
                    pid: j.pid,
                    ..Entry::default()
                },
                message: msg,
            });
        }
        Ok(Physical::Continuation {
            indented,
            text: line,
        })
    }

    /// Whether a line that starts no record of its own is the rest of the
    /// pending one, cut by a terminal.
    fn wraps(&self, t: &str) -> bool {
        self.pending.as_ref().is_some_and(|p| {
            if !p.record {
                return false;
            }
            let t = strip_markup(t, &p.markup);
            if starts_like_a_stamp(unwrap_markup(t).0) {
                // A line ending exactly at the width, and the next record
                // whose prefix the terminal cut.
                return false;
            }
            let at_width = self.wrap_width == Some(p.width);
            at_width
                || (p.width >= MIN_WRAP && !heavily_indented(t))
                // A record cut inside a quoted value (`err="node \"wor` /
                // `ker-1\" not found"`): whatever its width, what follows
                // closes the quote.
                || (ends_inside_quote(&p.entry.message) && !heavily_indented(t))
        })
    }

    fn place(&self) -> String {
        format!("{}:{}", self.path, self.line_no)
    }

    /// A terminal may cut a record inside its prefix: the pending line then
    /// starts no record (`2026-… {host="n1", unit="kubelet.servi`) and this
    /// one starts with the prefix's rest (`ce"} E1128 …`). Returns the two
    /// joined when that reads as a record with its prefix: a journal prefix
    /// at the start, or a host this line alone does not give.
    fn join_cut_prefix(&mut self, text: &str) -> Option<String> {
        let p = self
            .pending
            .as_ref()
            .filter(|p| !p.record && p.maybe_head)?;
        if prefix(unwrap_markup(text).0).is_ok() {
            return None;
        }
        let head = std::str::from_utf8(&p.entry.message).ok()?;
        let markup = &head[..head.len() - unwrap_markup(head).0.len()];
        let rest = text.strip_prefix(markup).unwrap_or(text);
        // With the whitespace the head ended with (a cut after a space), or
        // with less of it (whitespace the paste added to every line).
        let candidates: Vec<String> = (0..=p.trailing.len().min(8))
            .rev()
            .map(|n| format!("{head}{}{rest}", &p.trailing[..n]))
            .collect();
        let markup_len = markup.len();
        let saved = self.placer.clone();
        let alone_host = match self.classify(text) {
            Ok(Physical::Record { entry, .. }) => entry.host.is_some(),
            _ => false,
        };
        let found = candidates
            .into_iter()
            .find(|joined| match self.classify(joined) {
                Ok(Physical::Record { entry, message }) => {
                    let offset = message.as_ptr() as usize - joined.as_ptr() as usize;
                    offset > markup_len
                        && (prefix(unwrap_markup(joined).0).is_ok()
                            || (!alone_host && entry.host.is_some()))
                }
                _ => false,
            });
        self.placer = saved;
        found
    }

    /// A paste's first code fence, and no record before it: the lines
    /// before it are the paste's prose (`The kubelet keeps failing, logs
    /// below:`), no kubelet line (they were counted as unparsed ones, with
    /// no time). Those not handed on yet are dropped.
    fn drop_prose(&mut self) {
        if self.pending.as_ref().is_some_and(|p| !p.record) {
            self.pending = None;
        }
        self.lead.clear();
        self.last = None;
    }

    /// Hands on the pending record, and makes `p` the pending one.
    fn replace_pending(&mut self, p: Option<Pending>) {
        if let Some(done) = std::mem::replace(&mut self.pending, p) {
            let record = done.record;
            let e = done.finish();
            if !self.seen_record && !record && self.lead.len() < LEAD_MAX && !self.done {
                self.lead.push(e);
                return;
            }
            self.hand_on_lead();
            self.ready.push_back(Item::Entry(e));
        }
        if self.done {
            self.hand_on_lead();
        }
    }

    /// The lines held before the first record, handed on as they were.
    fn hand_on_lead(&mut self) {
        for e in std::mem::take(&mut self.lead) {
            self.ready.push_back(Item::Entry(e));
        }
    }

    /// Takes one physical line.
    fn line(&mut self, raw: &[u8], cut: bool) {
        if cut {
            self.ready.push_back(Item::Damaged(Malformed {
                place: self.place(),
                reason: format!("a line longer than {MAX_LINE} bytes: the rest was cut"),
            }));
        }
        let lossy = String::from_utf8_lossy(raw);
        let mut text = normalise(&lossy);
        if let Some(joined) = self.join_cut_prefix(&text) {
            // The pending line was this record's first piece.
            self.pending = None;
            text = std::borrow::Cow::Owned(joined);
        }
        let width = lossy.chars().count();
        let trailing: String = {
            let kept = lossy.trim_end();
            lossy[kept.len()..]
                .chars()
                .map(|c| if c == '\t' { c } else { ' ' })
                .collect()
        };
        if !self.seen_record && is_fence(text.trim()) {
            self.drop_prose();
        }
        let classified = match self.classify(&text) {
            Ok(c) => c,
            Err(impossible) => {
                self.ready.push_back(Item::Malformed(Malformed {
                    place: self.place(),
                    reason: impossible.to_string(),
                }));
                return;
            }
        };
        // A headless body right after a line cut at the terminal's width is
        // that line's rest (`… kubelet_no` / `de_status.go:535] …`).
        let classified = match classified {
            Physical::Record { ref entry, .. } if entry.record && self.wraps(&text) => {
                Physical::Continuation {
                    indented: false,
                    text: &text,
                }
            }
            c => c,
        };
        match classified {
            Physical::Skip => {}
            Physical::Record { mut entry, message } => {
                self.seen_record = true;
                let (_, html) = unwrap_markup(&text);
                // A paste copied out of a web page's text keeps its quotes
                // as `&quot;` with no tag around: a line of them and no
                // quote of its own is decoded too.
                let escaped = !message.contains('"')
                    && (message.contains("&quot;") || message.contains("&#34;"));
                let mut msg = if html || escaped {
                    decode_entities(message)
                } else {
                    message.to_string()
                };
                // An HTML paste may end in closing tags.
                if html {
                    while let Some(open) = msg.rfind("</") {
                        if msg.ends_with('>') && !msg[open..].contains(' ') {
                            msg.truncate(open);
                        } else {
                            break;
                        }
                    }
                }
                entry.message = keep_bytes(raw, &lossy, &text, msg);
                self.last = Some(Entry {
                    message: Vec::new(),
                    ..entry.clone()
                });
                let markup = text[..text.len() - unwrap_markup(&text).0.len()].to_string();
                self.replace_pending(Some(Pending {
                    entry,
                    width,
                    trailing,
                    record: true,
                    markup,
                    maybe_head: false,
                    kept_trailing: Vec::new(),
                }));
            }
            Physical::Continuation { indented, text: t } => {
                if self.wraps(t) {
                    let p = self.pending.as_mut().expect("checked");
                    if self.wrap_width.is_none() {
                        self.wrap_width = Some(p.width);
                    }
                    let t = strip_markup(t, &p.markup);
                    p.kept_trailing
                        .push((p.entry.message.len(), p.trailing.len()));
                    p.entry.message.extend_from_slice(p.trailing.as_bytes());
                    p.entry.message.extend_from_slice(t.as_bytes());
                    p.width = width;
                    p.trailing = trailing;
                    return;
                }
                let base = if indented { self.last.clone() } else { None };
                let entry = Entry {
                    message: t.as_bytes().to_vec(),
                    ..base.unwrap_or_default()
                };
                if !indented {
                    self.last = None;
                }
                let maybe_head = width >= MIN_WRAP || self.wrap_width == Some(width);
                self.replace_pending(Some(Pending {
                    entry,
                    width,
                    trailing,
                    record: false,
                    markup: String::new(),
                    maybe_head,
                    kept_trailing: Vec::new(),
                }));
            }
        }
    }
}

/// The message as bytes: invalid UTF-8 kept as it was written where the
/// message is the raw line's tail (the prefix is ASCII).
/// Whether `junk` can stand before a journal prefix: it ends in a space,
/// in grep's `:` after a file name or line number, or in its `-` after the
/// line number of a context line.
fn behind_junk(junk: &str) -> bool {
    junk.ends_with([' ', '\t', ':'])
        || junk
            .strip_suffix('-')
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

fn keep_bytes(raw: &[u8], lossy: &str, text: &str, msg: String) -> Vec<u8> {
    if std::str::from_utf8(raw).is_ok() || text.len() != lossy.trim_end().len() {
        return msg.into_bytes();
    }
    let Some(offset) = lossy.find(msg.as_str()) else {
        return msg.into_bytes();
    };
    if raw.get(..offset) == Some(&lossy.as_bytes()[..offset]) {
        let mut end = raw.len();
        while end > offset && raw[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        return raw[offset..end].to_vec();
    }
    msg.into_bytes()
}

impl<R: BufRead> Iterator for TextReader<R> {
    type Item = Result<Item, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            match self.read_line() {
                Ok(Some(cut)) => {
                    self.line_no += 1;
                    let raw = std::mem::take(&mut self.buf);
                    let mut end = raw.len();
                    while end > 0 && raw[end - 1] == b'\r' {
                        end -= 1;
                    }
                    self.line(&raw[..end], cut);
                    self.buf = raw;
                }
                Ok(None) => {
                    self.done = true;
                    self.replace_pending(None);
                }
                Err(source) => {
                    self.done = true;
                    self.replace_pending(None);
                    self.ready.push_back(Item::Malformed(Malformed {
                        place: self.place(),
                        reason: format!("reading stopped: {source}"),
                    }));
                    if let Some(Item::Entry(_) | Item::Malformed(_) | Item::Damaged(_)) =
                        self.ready.front()
                    {
                        continue;
                    }
                    return Some(Err(SourceError::Io {
                        path: self.path.clone(),
                        source,
                    }));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sentinel_core::time::{parse_rfc3339, rfc3339};

    fn clock() -> Clock {
        Clock {
            zone: sentinel_core::time::Zone::Utc,
            year: None,
            now: parse_rfc3339("2026-11-29T20:00:00Z").unwrap(),
        }
    }

    fn items(s: &[u8]) -> Vec<Item> {
        TextReader::new("t", s, clock())
            .map(Result::unwrap)
            .collect()
    }

    fn read(s: &str) -> Vec<Entry> {
        items(s.as_bytes())
            .into_iter()
            .filter_map(|i| match i {
                Item::Entry(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    fn msg(e: &Entry) -> String {
        String::from_utf8_lossy(&e.message).into_owned()
    }

    #[test]
    fn a_wrap_inside_a_quoted_value_is_joined() {
        let text = "Mar 22 17:40:06 n1 kubelet[1272]: E0322 17:40:06.941770    1272 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"wor\nker-1\\\": nodes \\\"worker-1\\\" not found\"\n";
        let e = read(text);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            msg(&e[0]).contains("getting node \\\"worker-1\\\": nodes"),
            "{}",
            msg(&e[0])
        );
        // A short line that closes its quotes is left alone.
        let e = read("E0322 17:40:06.941770 1 a.go:1] \"short\" k=\"v\"\nnext words\n");
        assert_eq!(e.len(), 2, "{e:?}");
    }

    #[test]
    fn prose_glued_onto_a_record_names_no_host() {
        let e = &read("see the log below:E0322 17:40:06.941770    1272 a.go:1] x\n")[0];
        assert_eq!(
            (e.host.as_deref(), e.identifier.as_deref()),
            (None, None),
            "{e:?}"
        );
        // A collector's HOST: and a cut prefix still do.
        let e = &read("> node-1: E0322 17:40:06.941770    1272 a.go:1] x\n")[0];
        assert_eq!(e.host.as_deref(), Some("node-1"));
        let e =
            &read("…:06 ip-172-20-47-6 kubelet[1272]: E0322 17:40:06.941770    1272 a.go:1] x\n")
                [0];
        assert_eq!(e.host.as_deref(), Some("ip-172-20-47-6"));
        assert_eq!(e.identifier.as_deref(), Some("kubelet"));
    }

    /// `snap logs` and syslog lines with no host (`TIME ident[pid]: …`):
    /// the time before the identifier is no host (it was taken for one,
    /// and became the node of every incident that named none).
    #[test]
    fn a_prefix_with_no_host_names_none() {
        for line in [
            "2021-03-04T10:11:12Z microk8s.daemon-kubelet[4321]: E0304 10:11:12.123456    4321 a.go:1] x\n",
            "Mar 04 10:11:12 microk8s.daemon-kubelet[4321]: E0304 10:11:12.123456    4321 a.go:1] x\n",
        ] {
            let e = &read(line)[0];
            assert_eq!(
                (e.host.as_deref(), e.identifier.as_deref(), e.pid),
                (None, Some("microk8s.daemon-kubelet"), Some(4321)),
                "{line}"
            );
            assert!(e.at.is_some(), "{line}");
        }
        // With a host, as before.
        let e = &read(
            "2021-03-04T10:11:12Z node-1 kubelet[4321]: E0304 10:11:12.123456    4321 a.go:1] x\n",
        )[0];
        assert_eq!(e.host.as_deref(), Some("node-1"));
    }

    /// First-hour N21: a bug report's prose before its first code fence
    /// is no kubelet line (it was counted as an unparsed one with no time,
    /// and the summary called the incidents' times unknown).
    #[test]
    fn a_pastes_prose_before_its_code_is_no_line() {
        let text = "The kubelet keeps failing after the upgrade,\nlogs below:\n\n```\nE1128 09:00:01.385427    2820 a.go:1] x\n```\nThanks!\n";
        let e = read(text);
        let msgs: Vec<String> = e.iter().map(msg).collect();
        assert_eq!(
            msgs[0], "E1128 09:00:01.385427    2820 a.go:1] x",
            "{msgs:?}"
        );
        // Lines after a record stay what they were (a continuation's words).
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        // No fence: a header-less first line is kept.
        let e = read("goroutine 1 [running]:\nE1128 09:00:01.385427    2820 a.go:1] x\n");
        assert_eq!(e.len(), 2, "{e:?}");
    }

    /// A paste copied out of a web page's text: every quote `&quot;`, no
    /// tag around it. Decoded, so its lines are recognised.
    #[test]
    fn a_paste_with_its_quotes_escaped_is_decoded() {
        let e = &read(
            "E0304 10:11:12.123456    4321 kubelet_node_status.go:470] &quot;Error updating node status, will retry&quot; err=&quot;error getting node \\&quot;node-a\\&quot;: nodes &quot;node-a&quot; not found&quot;\n",
        )[0];
        assert_eq!(
            msg(e),
            "E0304 10:11:12.123456    4321 kubelet_node_status.go:470] \"Error updating node status, will retry\" err=\"error getting node \\\"node-a\\\": nodes \"node-a\" not found\""
        );
        // A line with quotes of its own keeps an `&quot;` it logged.
        let e = &read("E0304 10:11:12.123456    4321 a.go:1] \"x\" v=\"&quot;\"\n")[0];
        assert!(msg(e).contains("&quot;"), "{}", msg(e));
    }

    #[test]
    fn a_quoted_identifier_is_read_without_its_quotes() {
        for line in [
            "\"Mar 22 17:40:06 node-1 hyperkube[1272]: E0322 17:40:06.941770    1272 a.go:1] x\"\n",
            "> `Mar 22 17:40:06 node-1 \"hyperkube[1272]: E0322 17:40:06.941770    1272 a.go:1] x\n",
        ] {
            let e = &read(line)[0];
            assert_eq!(e.identifier.as_deref(), Some("hyperkube"), "{line}");
        }
    }

    #[test]
    fn journal_short_formats() {
        let e = &read(
            "Mar 22 17:40:06 ip-172-20-47-6 kubelet[1272]: E0322 17:40:06.941770    1272 a.go:1] x\n",
        )[0];
        assert_eq!(e.host.as_deref(), Some("ip-172-20-47-6"));
        assert_eq!(e.identifier.as_deref(), Some("kubelet"));
        assert_eq!(e.pid, Some(1272));
        assert_eq!(rfc3339(e.at.unwrap()), "2026-03-22T17:40:06.941Z");
        assert!(e.message.starts_with(b"E0322"));
        let e = &read("Apr 18 22:07:55.432265 kt2-master kubelet[2425]: I0418 x\n")[0];
        assert_eq!(rfc3339(e.at.unwrap()), "2026-04-18T22:07:55.432Z");
        let e = &read("<30>Sep  3 07:35:28 host kubelet: hello\n")[0];
        assert_eq!(e.pid, None);
        assert_eq!(e.message, b"hello");
        let e = &read("2024-04-18T22:07:55.432265+0000 h kubelet[1]: m\n")[0];
        assert_eq!(rfc3339(e.at.unwrap()), "2024-04-18T22:07:55.432Z");
    }

    #[test]
    fn localised_months_and_unreadable_prefixes() {
        for prefix in [
            "11月 29 15:33:29 node-1 kubelet[4813]: ",
            "Nov 29 15:33:29 node-1 kubelet[4813]: ",
            "déc. 29 15:33:29 node-1 kubelet[4813]: ",
            "Dez 29 15:33:29 node-1 kubelet[4813]: ",
            "xyz 29 15:33:29 node-1 kubelet[4813]: ",
        ] {
            let line = format!(
                "{prefix}E1129 15:33:29.398119    4813 kubelet_node_status.go:535] \"x\"\n"
            );
            let e = &read(&line)[0];
            assert_eq!(e.host.as_deref(), Some("node-1"), "{prefix}");
            assert_eq!(e.identifier.as_deref(), Some("kubelet"), "{prefix}");
            assert_eq!(e.pid, Some(4813), "{prefix}");
            assert!(msg(e).starts_with("E1129 15:33:29.398119"), "{prefix}");
        }
        // The month known: the prefix's time; unknown: the klog header's.
        let e = &read("déc. 29 15:33:29 n kubelet[1]: E1229 15:33:29.398119 1 a.go:1] x\n")[0];
        assert_eq!(rfc3339(e.at.unwrap()), "2025-12-29T15:33:29.398Z");
        let e = &read("xyz 29 15:33:29 n kubelet[1]: E1129 15:33:29.398119 1 a.go:1] x\n")[0];
        assert_eq!(rfc3339(e.at.unwrap()), "2026-11-29T15:33:29.398Z");
    }

    #[test]
    fn junk_before_the_record() {
        let line = "E1129 16:31:27.398119    4813 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"x\"";
        for (junk, host) in [
            ("\t", None),
            ("    ", None),
            ("> ", None),
            ("> > ", None),
            ("11/29/2026 9:31:27 AM", None),
            ("<pre>", None),
            ("<code class=\"x\">", None),
            ("10.0.0.5: ", Some("10.0.0.5")),
            ("2026-11-29T16:31:27.398119123Z ", None),
            (
                "2026-11-29T16:31:27.398Z {host=\"node-9\", unit=\"kubelet.service\"} ",
                Some("node-9"),
            ),
            ("[pod/kubelet-x/kubelet] ", None),
            ("- ", None),
            ("`", None),
        ] {
            let es = read(&format!("{junk}{line}\n"));
            assert_eq!(es.len(), 1, "{junk:?}");
            assert!(
                msg(&es[0]).starts_with("E1129 16:31:27.398119"),
                "{junk:?}: {}",
                msg(&es[0])
            );
            assert_eq!(es[0].host.as_deref(), host, "{junk:?}");
            assert!(es[0].at.is_some(), "{junk:?}");
        }
    }

    #[test]
    fn grep_line_numbers_and_file_names_before_the_prefix() {
        let line = "Mar  3 10:00:00 node-3 kubelet[812]: E0303 10:00:00.125000     812 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"x\"";
        for junk in [
            "104233:",
            "104234-",
            "messages:",
            "/var/log/messages:104233:",
            "messages-20260303:",
        ] {
            let es = read(&format!("{junk}{line}\n"));
            assert_eq!(es.len(), 1, "{junk:?}");
            assert_eq!(es[0].host.as_deref(), Some("node-3"), "{junk:?}");
            assert_eq!(es[0].identifier.as_deref(), Some("kubelet"), "{junk:?}");
            assert_eq!(es[0].pid, Some(812), "{junk:?}");
            assert!(msg(&es[0]).starts_with("E0303 10:00:00.125000"), "{junk:?}");
        }
    }

    #[test]
    fn hard_wraps_are_joined_and_real_continuations_kept() {
        let line = "Nov 29 16:31:27 node-1 kubelet[4813]: E1129 16:31:27.398119    4813 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"node-1\\\": node \\\"node-1\\\" not found\"";
        for width in [60, 77, 80, 120, 200] {
            let chars: Vec<char> = line.chars().collect();
            let wrapped: Vec<String> = chars.chunks(width).map(|c| c.iter().collect()).collect();
            let es = read(&(wrapped.join("\n") + "\n"));
            assert_eq!(es.len(), 1, "width {width}");
            assert_eq!(
                msg(&es[0]),
                line.split_once(": ").unwrap().1,
                "width {width}"
            );
        }
        let es = read(
            "E0610 02:55:28.185750   64201 aws_credentials.go:77] while getting\n\tFor verbose messaging see\n",
        );
        assert_eq!(es.len(), 2);
        assert_eq!(msg(&es[1]), "\tFor verbose messaging see");
    }

    #[test]
    fn raw_klog_banners_and_host_tags() {
        let es = read(concat!(
            "-- Logs begin at Thu 2019-08-29 16:00:00 UTC, end at Thu 2019-08-29 17:00:00 UTC. --\n",
            "# source: somewhere\n",
            "\n",
            "```\n",
            "E0610 02:55:28.185750   64201 aws_credentials.go:77] while getting\n",
            "\tFor verbose messaging see\n",
            "10.200.1.3: {\"ts\":1753121331919.7622,\"caller\":\"a.go:1\",\"msg\":\"m\",\"v\":0}\n",
        ));
        assert_eq!(es.len(), 3);
        assert_eq!(rfc3339(es[0].at.unwrap()), "2026-06-10T02:55:28.185Z");
        assert_eq!(es[1].message, b"\tFor verbose messaging see");
        assert_eq!(es[2].host.as_deref(), Some("10.200.1.3"));
        assert_eq!(es[2].at, Some(1_753_121_331_919_762));
    }

    /// glog's file header (fixtures/real-logs/kubernetes-sigs-sig-windows-tools-76.txt)
    /// is a banner like journalctl's, not four lines not understood.
    #[test]
    fn glog_file_headers_are_banners() {
        let es = read(concat!(
            "Log file created at: 2020/05/03 13:38:35\n",
            "Running on machine: w1\n",
            "Binary: Built with gc go1.13.9 for windows/amd64\n",
            "Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg\n",
            "E0503 13:38:35.969115    5324 server.go:754] kubelet needs to run as uid `0`\n",
        ));
        assert_eq!(es.len(), 1, "{es:?}");
        assert_eq!(rfc3339(es[0].at.unwrap()), "2026-05-03T13:38:35.969Z");
    }

    #[test]
    fn indented_lines_continue_the_prefixed_line() {
        let es =
            read("Mar 22 17:40:06 h kubelet[1]: I0322 17:40:06.000000 1 a.go:1] \"m\" k=<\n\tv\n");
        assert_eq!(es[1].identifier.as_deref(), Some("kubelet"));
        assert_eq!(es[1].message, b"\tv");
    }

    #[test]
    fn windows_line_endings_and_damaged_whitespace_change_nothing() {
        let clean =
            read("Mar 22 17:40:06 h kubelet[1]: E0322 17:40:06.000000 1 a.go:1] \"m\" err=\"x\"\n");
        let damaged = read(
            "Mar 22 17:40:06\u{a0}h kubelet[1]: E0322 17:40:06.000000 1 a.go:1] \"m\" err=\"x\"  \r\n",
        );
        assert_eq!(clean, damaged);
    }

    #[test]
    fn invalid_utf8_kept() {
        let input = b"Mar 22 17:40:06 h kubelet[1]: bad \xff byte\n";
        let Item::Entry(e) = TextReader::new("t", &input[..], clock())
            .next()
            .unwrap()
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(e.message, b"bad \xff byte");
    }

    #[test]
    fn long_lines_are_cut_and_counted() {
        let mut input =
            b"E0101 00:00:00.000000 1 a.go:1] \"Error updating node status, will retry\" err=\""
                .to_vec();
        input.extend(std::iter::repeat_n(b'x', 3 * MAX_LINE));
        input.extend_from_slice(b"\"\nE0101 00:00:01.000000 1 a.go:1] next\n");
        let all = items(&input);
        assert!(matches!(&all[0], Item::Damaged(m) if m.place == "t:1"));
        let Item::Entry(e) = &all[1] else { panic!() };
        assert_eq!(e.message.len(), MAX_LINE);
        let Item::Entry(e) = &all[2] else { panic!() };
        assert!(e.message.ends_with(b"next"));
    }

    #[test]
    fn impossible_dates_are_errors_on_their_line() {
        let r = TextReader::new(
            "t",
            &b"E0229 00:00:00.000000 1 a.go:1] x\n"[..],
            Clock {
                year: Some(2025),
                ..clock()
            },
        );
        let all: Vec<Item> = r.map(Result::unwrap).collect();
        let Item::Malformed(m) = &all[0] else {
            panic!("{all:?}")
        };
        assert_eq!(m.place, "t:1");
        assert!(m.reason.contains("is not a time in 2025"), "{}", m.reason);
    }
}
