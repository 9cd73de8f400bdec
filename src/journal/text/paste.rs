//! What a paste does to a log: whitespace damaged by an editor, markup
//! around each line (indents, `> `, HTML), junk before a record that may
//! still tell a host and a time, banners, lines a terminal cut.

use super::prefix::{Stamp, clean_ident, iso_stamp, syslog_stamp};
use sentinel_core::parse::klog::split_header;
use sentinel_core::time::Micros;

/// A markdown code fence.
pub(super) fn is_fence(t: &str) -> bool {
    t.starts_with("```") || t.starts_with("~~~")
}

pub(super) fn is_banner(t: &str) -> bool {
    t.is_empty()
        || t.starts_with('#')
        || t.starts_with("```")
        || t.starts_with("~~~")
        || (t.starts_with("-- ") && t.ends_with(" --"))
        || t.starts_with("-- No entries --")
        || t.starts_with("-- Reboot --")
        || glog_file_header(t)
}

/// The four lines glog writes at the top of every log file (the kubelet's
/// `--log-dir`/`--log-file`, a Windows node's `kubelet.log`): `Log file
/// created at: …`, `Running on machine: …`, `Binary: Built with gc …`,
/// `Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg`.
fn glog_file_header(t: &str) -> bool {
    t.starts_with("Log file created at: ")
        || t.starts_with("Running on machine: ")
        || t.starts_with("Binary: Built with ")
        || t.starts_with("Log line format: [IWEF]")
}

/// Whitespace a paste or an editor damaged: carriage returns, no-break and
/// zero-width spaces, a byte order mark.
pub(super) fn normalise(line: &str) -> std::borrow::Cow<'_, str> {
    let damaged = |c: char| {
        matches!(
            c,
            '\r' | '\u{a0}' | '\u{2007}' | '\u{202f}' | '\u{200b}' | '\u{feff}'
        )
    };
    if !line.contains(damaged) {
        return std::borrow::Cow::Borrowed(line.trim_end());
    }
    let mut s: String = line
        .chars()
        .filter(|c| !matches!(c, '\r' | '\u{200b}' | '\u{feff}'))
        .map(|c| {
            if c.is_whitespace() {
                if c == '\t' { '\t' } else { ' ' }
            } else {
                c
            }
        })
        .collect();
    s.truncate(s.trim_end().len());
    std::borrow::Cow::Owned(s)
}

/// Strips what a paste put around a record: indentation, markdown quotes
/// and list markers, backticks, HTML tags. Returns the rest and whether
/// HTML was seen (its entities are decoded then).
pub(super) fn unwrap_markup(mut s: &str) -> (&str, bool) {
    let mut html = false;
    loop {
        let before = s.len();
        s = s.trim_start_matches([' ', '\t']);
        if let Some(r) = s.strip_prefix('>') {
            s = r;
        }
        if let Some(r) = s.strip_prefix("- ").or_else(|| s.strip_prefix("* ")) {
            s = r;
        }
        s = s.trim_start_matches('`');
        if s.starts_with('<') {
            if let Some(end) = s.find('>') {
                let tag = &s[1..end];
                if tag
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!')
                    && !tag.contains(['<', '"'])
                    && !tag.chars().all(|c| c.is_ascii_digit())
                {
                    s = &s[end + 1..];
                    html = true;
                }
            }
        }
        if s.len() == before {
            return (s, html);
        }
    }
}

pub(super) fn decode_entities(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Where the first klog header or JSON-format object in `s` starts.
pub(super) fn record_start(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            // Junk may be glued on (`… 9:31:27 AME1129 16:31:27.398119 …`):
            // the header's own shape decides.
            b'I' | b'W' | b'E' | b'F'
                if b.len() > i + 6
                    && b[i + 1..i + 5].iter().all(u8::is_ascii_digit)
                    && b[i + 5] == b' '
                    && (split_header(&s[i..]).is_some() || header_cut_at_end(&s[i..])) =>
            {
                return Some(i);
            }
            b'{' if s[i..].starts_with("{\"ts\":")
                || s[i..].starts_with("{\"level\":")
                || s[i..].starts_with("{\"caller\":") =>
            {
                return Some(i);
            }
            _ => {}
        }
        i += 1;
        while i < b.len() && !s.is_char_boundary(i) {
            i += 1;
        }
    }
    None
}

/// A time a record's prefix starts with: a journal's, an ISO one, a UI's
/// (`11/29/2026 9:31:27 AM`). A piece a terminal cut off a line does not
/// start like that.
pub(super) fn starts_like_a_stamp(t: &str) -> bool {
    if syslog_stamp(t).is_ok() || iso_stamp(t).is_ok() {
        return true;
    }
    let mut parts = t.splitn(3, '/');
    let (Some(m), Some(d), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let digits = |s: &str, n: std::ops::RangeInclusive<usize>| {
        n.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    digits(m, 1..=2) && digits(d, 1..=2) && rest.len() > 4 && digits(&rest[..4], 4..=4)
}

/// A klog header whose line a terminal cut inside it, after the time
/// (`E0715 16:24:50.198000    2425 kubelet_no`): the rest is on the next line.
pub(super) fn header_cut_at_end(s: &str) -> bool {
    sentinel_core::parse::klog::leading_time(s).is_some() && !s.contains("] ") && !s.ends_with(']')
}

/// What the junk before a record tells: a host and identifier
/// (`… host ident[pid]: `, a collector's `HOST: `, Loki labels) and a time
/// (an ISO timestamp).
#[derive(Debug, Default)]
pub(super) struct Junk<'a> {
    pub(super) host: Option<&'a str>,
    pub(super) ident: Option<&'a str>,
    pub(super) pid: Option<u32>,
    pub(super) at: Option<Micros>,
}

pub(super) fn read_junk(junk: &str) -> Junk<'_> {
    let mut j = Junk::default();
    for (n, _) in junk.char_indices() {
        if let Ok((_, Stamp::Absolute(t))) = iso_stamp(&junk[n..]) {
            if n == 0 || !junk.as_bytes()[n - 1].is_ascii_digit() {
                j.at = Some(t);
                break;
            }
        }
    }
    let tail = junk.trim_end();
    if let Some(rest) = tail.strip_suffix(':') {
        // `… host ident[pid]:` (a prefix whose start is unreadable) or
        // `HOST:` (a collector's).
        let mut words = rest.rsplit(char::is_whitespace);
        let last = words.next().unwrap_or("");
        let (ident, pid) = match last.split_once('[') {
            Some((i, p)) => (i, p.strip_suffix(']').and_then(|p| p.parse().ok())),
            None => (last, None),
        };
        let host = words.next();
        let before: Vec<&str> = words.collect();
        // Prose glued onto a record (`see the log below:E1112 …`) names no
        // host or identifier: a prefix's have a PID, a kubelet's name, or a
        // time before them; a collector's `HOST:` stands alone.
        let prefix_like = pid.is_some()
            || sentinel_core::model::KNOWN_KUBELET_IDENTIFIERS.contains(&clean_ident(ident))
            || clean_ident(ident) == "systemd"
            || before.iter().any(|w| {
                let b = w.as_bytes();
                b.windows(3)
                    .any(|x| x[0].is_ascii_digit() && x[1] == b':' && x[2].is_ascii_digit())
            });
        let markup_only = |ws: &[&str]| ws.iter().all(|w| !w.chars().any(char::is_alphanumeric));
        match host {
            // `2021-03-04T10:11:12Z ident[pid]:` (`snap logs`, a syslog
            // line with no host): the word before the identifier is the
            // time, no host.
            Some(time) if stamp_like(time) && !clean_ident(ident).is_empty() && prefix_like => {
                j.ident = Some(clean_ident(ident));
                j.pid = pid;
            }
            Some(host)
                if !host.is_empty()
                    && !clean_ident(ident).is_empty()
                    && host_like(host)
                    && prefix_like =>
            {
                j.host = Some(host);
                j.ident = Some(clean_ident(ident));
                j.pid = pid;
            }
            h if !last.is_empty()
                && pid.is_none()
                && host_like(last)
                && h.is_none_or(|h| markup_only(&[h]))
                && markup_only(&before) =>
            {
                j.host = Some(last);
            }
            _ => {}
        }
    }
    if j.host.is_none() {
        // Loki and similar label sets: `{host="node-1", unit="kubelet.service"}`.
        for key in ["host=\"", "hostname=\"", "nodename=\"", "node=\""] {
            if let Some(v) = junk
                .find(key)
                .map(|n| &junk[n + key.len()..])
                .and_then(|r| r.split('"').next())
            {
                if host_like(v) {
                    j.host = Some(v);
                    break;
                }
            }
        }
    }
    j
}

/// A word that is a time, not a name: an RFC 3339 stamp or a time of day
/// (`10:21:14`, `10:21:14.123`).
pub(super) fn stamp_like(w: &str) -> bool {
    iso_stamp(w).is_ok_and(|(rest, _)| rest.is_empty())
        || (w.contains(':')
            && w.chars()
                .all(|c| c.is_ascii_digit() || c == ':' || c == '.'))
}

pub(super) fn host_like(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '.' | '_' | ':'))
}

/// Whether a klog line stops inside a quoted string: an odd number of
/// unescaped quotes after its header.
pub(super) fn ends_inside_quote(m: &[u8]) -> bool {
    let body = memchr::memmem::find(m, b"] ").map_or(m, |at| &m[at + 2..]);
    let mut open = false;
    let mut escaped = false;
    for &b in body {
        match b {
            b'\\' if open => escaped = !escaped,
            b'"' if !escaped => open = !open,
            _ => escaped = false,
        }
    }
    open
}

/// A cut piece without the markup its record's line had (as much of it as
/// the piece starts with: a quote marker may be on the first line only).
pub(super) fn strip_markup<'a>(t: &'a str, markup: &str) -> &'a str {
    let n = t
        .char_indices()
        .zip(markup.chars())
        .take_while(|((_, a), b)| a == b)
        .last()
        .map_or(0, |((i, c), _)| i + c.len_utf8());
    &t[n..]
}

/// A journalctl continuation (aligned under the message) or a klog block
/// line (a TAB), not a piece a terminal cut.
pub(super) fn heavily_indented(t: &str) -> bool {
    t.starts_with('\t') || t.starts_with("        ")
}
