//! The klog text format: the header (`Lmmdd hh:mm:ss.uuuuuu pid file:line] `)
//! and the two body forms, structured (`"msg" key=value ...`) and legacy
//! (printf text). See `klog-format.md` sections 2 and 3.

use std::borrow::Cow;

use nom::IResult;
use nom::branch::alt;
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::char;
use nom::sequence::terminated;

use super::{Body, KeyValue, Pairs, Severity};
use crate::time::WallTime;

/// The klog header of one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header<'a> {
    pub severity: Severity,
    pub wall: WallTime,
    pub pid: Option<u32>,
    /// `file:line` as written (`kubelet_node_status.go:535`; the line part is
    /// not always a number in pasted logs).
    pub source: &'a str,
}

fn fraction_micros(digits: &str) -> u32 {
    // Any length: `.1`, `.100`, `.780478`, `.123456789`.
    let mut micros = 0u32;
    for (n, b) in digits.bytes().take(6).enumerate() {
        micros += u32::from(b - b'0') * 10u32.pow(5 - n as u32);
    }
    micros
}

/// `Lmmdd hh:mm:ss.uuuuuu`: the severity letter and the time. A parser of
/// nom's shape, written over the bytes: its fields sit at fixed places,
/// and it runs on every line (the combinators' version was a twentieth of
/// a catch-up's instructions).
fn header_time(i: &str) -> IResult<&str, (char, WallTime)> {
    let b = i.as_bytes();
    let fail = || nom::Err::Error(nom::error::Error::new(i, nom::error::ErrorKind::Digit));
    let digit = |k: usize| {
        b.get(k)
            .filter(|c| c.is_ascii_digit())
            .map(|c| u32::from(c - b'0'))
    };
    let two = |k: usize| Some(digit(k)? * 10 + digit(k + 1)?);
    let sev = match b.first() {
        Some(&c @ (b'I' | b'W' | b'E' | b'F')) => char::from(c),
        _ => return Err(fail()),
    };
    let (Some(month), Some(day), Some(hour), Some(minute), Some(second)) =
        (two(1), two(3), two(6), two(9), two(12))
    else {
        return Err(fail());
    };
    if b[5] != b' ' || b[8] != b':' || b[11] != b':' {
        return Err(fail());
    }
    // Bytes 0..14 are ASCII (checked above): a character boundary.
    let mut rest = &i[14..];
    let mut micros = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n > 0 {
            micros = fraction_micros(&frac[..n]);
            rest = &frac[n..];
        }
    }
    let wall = WallTime {
        month,
        day,
        hour,
        minute,
        second,
        micros,
    };
    Ok((rest, (sev, wall)))
}

/// The time of a klog header even where the rest of the header is cut off
/// (a terminal wrapped the line inside the source file name).
#[must_use]
pub fn leading_time(line: &str) -> Option<WallTime> {
    header_time(line).ok().map(|(_, (_, wall))| wall)
}

/// The length of `s`'s run of characters other than `]`, `:` (when
/// `colon`) and whitespace (`char::is_whitespace`), checked byte by byte
/// where ASCII.
fn till(s: &str, colon: bool) -> usize {
    let b = s.as_bytes();
    let mut k = 0;
    while k < b.len() {
        let c = b[k];
        if c.is_ascii() {
            if c == b']' || (colon && c == b':') || matches!(c, b'\t'..=b'\r' | b' ') {
                return k;
            }
            k += 1;
        } else {
            // A non-ASCII byte starts a character here (k is a boundary).
            let ch = s[k..].chars().next().unwrap_or_default();
            if ch.is_whitespace() {
                return k;
            }
            k += ch.len_utf8();
        }
    }
    k
}

/// The header after the time, over the bytes as [`header_time`] is: nom's
/// `space1`, an optional `digit1` PID ended by `space1`, `file:line` (runs
/// of characters other than `:`, `]` and whitespace), `]` and one optional
/// space. The combinators' version was a seventh of the consumer's
/// instructions on a one-host scan.
fn header(line: &str) -> Option<(&str, Header<'_>)> {
    let (i, (sev, wall)) = header_time(line).ok()?;
    let spaces = |s: &str| s.len() - s.trim_start_matches([' ', '\t']).len();
    let n = spaces(i);
    if n == 0 {
        return None;
    }
    let mut i = &i[n..];
    // The PID is right-aligned in 7 columns, and missing in some k3s builds.
    let digits = i.len() - i.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let mut pid = None;
    if digits > 0
        && let Ok(p) = i[..digits].parse::<u32>()
    {
        let n = spaces(&i[digits..]);
        if n > 0 {
            pid = Some(p);
            i = &i[digits + n..];
        }
    }
    let file = till(i, true);
    if file == 0 || !i[file..].starts_with(':') {
        return None;
    }
    let after = &i[file + 1..];
    let number = till(after, false);
    if number == 0 || !after[number..].starts_with(']') {
        return None;
    }
    let source = &i[..file + 1 + number];
    let rest = &after[number + 1..];
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    let severity = match sev {
        'W' => Severity::Warning,
        'E' => Severity::Error,
        'F' => Severity::Fatal,
        _ => Severity::Info,
    };
    Some((
        rest,
        Header {
            severity,
            wall,
            pid,
            source,
        },
    ))
}

/// Splits a klog line into its header and body; `None` when the line has no
/// klog header.
#[must_use]
pub fn split_header(line: &str) -> Option<(Header<'_>, &str)> {
    header(line).map(|(rest, h)| (h, rest))
}

/// A klog body whose header a paste cut off, as a pager or a careless
/// selection leaves it: `380] Error updating node status, …` or
/// `kubelet_node_status.go:380] …`. Returns the source (if any) and the body.
#[must_use]
pub fn headless(line: &str) -> Option<(Option<&str>, &str)> {
    let (source, rest) = line.split_once("] ")?;
    let (file, number) = match source.rsplit_once(':') {
        Some((f, n)) => (Some(f), n),
        None => (None, source),
    };
    let file_ok = file.is_none_or(|f| {
        f.len() > 3
            && f.as_bytes().ends_with(b".go")
            && f.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
    });
    let number_ok =
        !number.is_empty() && number.len() <= 5 && number.bytes().all(|b| b.is_ascii_digit());
    (file_ok && number_ok && !rest.is_empty()).then_some((file.map(|_| source), rest))
}

/// True when the bytes start like a klog header: cheap enough to call on
/// every entry to tell lines from continuations.
#[must_use]
pub fn starts_with_header(b: &[u8]) -> bool {
    b.len() >= 6
        && matches!(b[0], b'I' | b'W' | b'E' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' '
}

/// Scans a Go-quoted string (`strconv.Quote` output) at the start of `i`.
/// Returns the unquoted text and the rest. Borrowed when there are no escapes.
fn go_string(i: &str) -> IResult<&str, Cow<'_, str>> {
    quoted(i, |_| true)
}

/// Go's escape rules: `\"`, `\\`, `\n`, `\t`, `\r`, `\a`, `\b`, `\f`, `\v`,
/// `\xNN` (a byte, possibly invalid UTF-8), octal `\NNN`, `\uNNNN`,
/// `\UNNNNNNNN`. Unknown escapes are kept as written.
#[must_use]
#[allow(clippy::many_single_char_names)] // b/i/c/v as in Go's strconv.Unquote
pub fn unquote(s: &str) -> String {
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    let hex = |h: &[u8]| {
        std::str::from_utf8(h)
            .ok()
            .and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    while i < b.len() {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        let simple = match c {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'a' => Some(7),
            b'b' => Some(8),
            b'f' => Some(12),
            b'v' => Some(11),
            b'\\' | b'"' | b'\'' => Some(c),
            _ => None,
        };
        if let Some(v) = simple {
            out.push(v);
            continue;
        }
        let (width, radix_hex) = match c {
            b'x' => (2, true),
            b'u' => (4, true),
            b'U' => (8, true),
            b'0'..=b'7' => (2, false),
            _ => (0, false),
        };
        if width > 0 && i + width <= b.len() {
            if radix_hex {
                if let Some(v) = hex(&b[i..i + width]) {
                    if c == b'x' {
                        out.push(v as u8);
                    } else {
                        let ch = char::from_u32(v).unwrap_or('\u{fffd}');
                        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                    }
                    i += width;
                    continue;
                }
            } else if b[i..i + width].iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = u32::from(c - b'0') * 64
                    + u32::from(b[i] - b'0') * 8
                    + u32::from(b[i + 1] - b'0');
                out.push(v as u8);
                i += width;
                continue;
            }
        }
        out.push(b'\\');
        out.push(c);
    }
    // Valid UTF-8 (nearly always) becomes the String without a copy.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

fn key(i: &str) -> IResult<&str, &str> {
    terminated(take_while1(is_key_char), char('='))(i)
}

/// A `key=<` block: the value's lines follow, each after one TAB, and a line
/// that starts with ` >` ends it; more pairs may follow on that line.
fn block(i: &str) -> IResult<&str, Cow<'_, str>> {
    let (mut rest, _) = tag("<\n")(i)?;
    let mut lines: Vec<&str> = Vec::new();
    loop {
        if let Some(after) = rest.strip_prefix(" >") {
            return Ok((after, Cow::Owned(lines.join("\n"))));
        }
        // One TAB as klog writes it; spaces where `journalctl` expanded the
        // TAB or a paste lost it.
        let body = if let Some(b) = rest.strip_prefix('\t') {
            b
        } else if rest.starts_with(' ') && !rest.trim_start_matches(' ').starts_with('>') {
            rest.trim_start_matches(' ')
        } else {
            // Unterminated (the entry was cut): keep what there is.
            return Ok((rest, Cow::Owned(lines.join("\n"))));
        };
        let (line, next) = body.split_once('\n').unwrap_or((body, ""));
        lines.push(line);
        rest = next;
        if rest.is_empty() {
            return Ok((rest, Cow::Owned(lines.join("\n"))));
        }
    }
}

/// `{...}` / `[...]`: JSON (klog ≥ 2.100) or `%+v` output; brackets are
/// matched outside of quoted strings.
fn bracketed(i: &str) -> IResult<&str, Cow<'_, str>> {
    let b = i.as_bytes();
    if !matches!(b.first(), Some(b'{' | b'[')) {
        return Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::Char,
        )));
    }
    let mut depth = 0i32;
    let mut in_str = false;
    let mut n = 0;
    while n < b.len() {
        match (in_str, b[n]) {
            (true, b'\\') => n += 1,
            (_, b'"') => in_str = !in_str,
            (false, b'{' | b'[') => depth += 1,
            (false, b'}' | b']') => {
                depth -= 1;
                if depth == 0 {
                    return Ok((&i[n + 1..], Cow::Borrowed(&i[..=n])));
                }
            }
            _ => {}
        }
        n += 1;
    }
    Ok(("", Cow::Borrowed(i)))
}

/// A bare value (`statusVersion=4`, `%+v` text): up to the next ` key=`, or
/// the end of the line.
#[allow(clippy::unnecessary_wraps)] // the shape `alt` takes
fn bare(i: &str) -> IResult<&str, Cow<'_, str>> {
    let end_of_line = i.find('\n').unwrap_or(i.len());
    let mut end = i[..end_of_line]
        .find(char::is_whitespace)
        .unwrap_or(end_of_line);
    // `%+v` values may contain spaces: extend while what follows the space
    // is not itself a `key=`.
    while end < end_of_line {
        let after = i[end..end_of_line].trim_start();
        if after.is_empty() || key(after).is_ok() {
            break;
        }
        let skip = end_of_line - after.len();
        end = skip + after.find(char::is_whitespace).unwrap_or(after.len());
    }
    Ok((&i[end..], Cow::Borrowed(&i[..end])))
}

/// A quoted value whose inner quotes may have lost their backslashes in a
/// paste (`err="node "w7" not found"`): it ends at the first unescaped quote
/// that is followed by the end of the line or by the next ` key=`. A
/// properly escaped value ends at its first unescaped quote, as before.
fn tolerant_string(i: &str) -> IResult<&str, Cow<'_, str>> {
    quoted(i, |after| {
        let next = after.trim_start_matches([' ', '\t']);
        after.is_empty()
            || after.starts_with('\n')
            || (after.starts_with([' ', '\t'])
                && (next.is_empty() || next.starts_with(['\n', '#']) || key(next).is_ok()))
    })
}

/// A quoted value at the start of `i`: it ends at the first unescaped quote
/// for which `ends` says yes of what follows, or else at the first
/// unescaped quote. Borrowed when there are no escapes.
fn quoted(i: &str, ends: impl Fn(&str) -> bool) -> IResult<&str, Cow<'_, str>> {
    let (rest, _) = char('"')(i)?;
    let bytes = rest.as_bytes();
    let mut escaped = false;
    let mut first: Option<usize> = None;
    let mut n = 0;
    while n < bytes.len() {
        match bytes[n] {
            b'\\' => {
                escaped = true;
                n += 2;
                continue;
            }
            b'"' => {
                first.get_or_insert(n);
                if ends(&rest[n + 1..]) {
                    break;
                }
            }
            _ => {}
        }
        n += 1;
    }
    // No quote that ends cleanly: the first one, as Go wrote it.
    let end = if n < bytes.len() {
        n
    } else {
        first.ok_or_else(|| {
            nom::Err::Error(nom::error::Error::new(i, nom::error::ErrorKind::Char))
        })?
    };
    let inner = &rest[..end];
    let value = if escaped {
        Cow::Owned(unquote(inner))
    } else {
        Cow::Borrowed(inner)
    };
    Ok((&rest[end + 1..], value))
}

fn value(i: &str) -> IResult<&str, Cow<'_, str>> {
    alt((tolerant_string, block, bracketed, bare))(i)
}

/// Parses a body after `] `: structured when it is a Go-quoted string followed
/// by the end or by whitespace, legacy otherwise. Whatever follows the last
/// pair that does not parse as a pair is ignored (pasted comments, cut lines).
#[must_use]
pub fn body(i: &str) -> Body<'_> {
    let Ok((rest, msg)) = go_string(i) else {
        return Body::Legacy(Cow::Borrowed(i));
    };
    // `"tokencleaner" is disabled`: a legacy line that starts with a quote.
    // A structured message is followed by nothing, by pairs, or (in pasted
    // logs) by a `#` comment.
    let after = rest.trim_start();
    let structured = rest.is_empty()
        || (rest.starts_with(char::is_whitespace)
            && (after.is_empty() || after.starts_with('#') || key(after).is_ok()));
    if !structured {
        return Body::Legacy(Cow::Borrowed(i));
    }
    Body::Structured {
        msg,
        kv: Pairs::lazy(rest),
    }
}

/// The key-value pairs of a structured line's text after its message (see
/// [`body`]): up to the first that does not parse.
#[must_use]
pub fn pairs(mut rest: &str) -> Vec<KeyValue<'_>> {
    let mut kv: Vec<KeyValue<'_>> = Vec::new();
    loop {
        let trimmed = rest.trim_start();
        let Ok((after_key, k)) = key(trimmed) else {
            break;
        };
        let Ok((after_value, v)) = value(after_key) else {
            break;
        };
        kv.push((Cow::Borrowed(k), v));
        rest = after_value;
    }
    kv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_widths() {
        let (h, body) =
            split_header("E0324 10:11:08.612801 1133518 mirror_client.go:132] boom").unwrap();
        assert_eq!(h.pid, Some(1_133_518));
        assert_eq!(h.severity, Severity::Error);
        assert_eq!(h.source, "mirror_client.go:132");
        assert_eq!(body, "boom");
        let (h, _) =
            split_header("I0830 11:17:55.780478    2417 kubelet_node_status.go:79] x").unwrap();
        assert_eq!(h.pid, Some(2417));
        assert_eq!(h.wall.micros, 780_478);
        // k3s 1.17/1.18: no PID field.
        let (h, body) =
            split_header("I0513 02:01:02.423525 shared_informer.go:197] Waiting").unwrap();
        assert_eq!(h.pid, None);
        assert_eq!(body, "Waiting");
        // Pasted with milliseconds and a non-numeric line.
        let (h, _) =
            split_header("I0715 16:24:50.1 shared_informer.go:xxx] \"Caches are synced\"").unwrap();
        assert_eq!(h.wall.micros, 100_000);
        assert_eq!(h.source, "shared_informer.go:xxx");
        let (h, _) = split_header("W0101 00:00:00.123456789       1 a.go:1] x").unwrap();
        assert_eq!(h.wall.micros, 123_456);
        assert!(split_header("Trace[1]: \"List\" END").is_none());
        assert!(split_header("I0715 kubelet.go:xxx] no time").is_none());
    }

    #[test]
    fn structured_values() {
        let Body::Structured { msg, kv } = body(
            r#""Unable to register node with API server" err="Post \"https://10.0.0.1:6443/api/v1/nodes\": dial tcp 10.0.0.1:6443: connect: connection refused" node="n1""#,
        ) else {
            panic!()
        };
        assert_eq!(msg, "Unable to register node with API server");
        assert_eq!(kv[0].0, "err");
        assert_eq!(
            kv[0].1,
            r#"Post "https://10.0.0.1:6443/api/v1/nodes": dial tcp 10.0.0.1:6443: connect: connection refused"#
        );
        assert_eq!(kv[1], (Cow::Borrowed("node"), Cow::Borrowed("n1")));
    }

    #[test]
    fn json_and_percent_v_values() {
        let Body::Structured { kv, .. } = body(
            r#""Node became not ready" node="w2" condition={"type":"Ready","message":"a } b"} port=10250 cgroupRoot=[]"#,
        ) else {
            panic!()
        };
        assert_eq!(kv[1].1, r#"{"type":"Ready","message":"a } b"}"#);
        assert_eq!(kv[2].1, "10250");
        assert_eq!(kv[3].1, "[]");
        let Body::Structured { kv, .. } = body(
            r#""Node became not ready" node="w2" condition={Type:Ready Status:False Reason:KubeletNotReady} x=1"#,
        ) else {
            panic!()
        };
        assert_eq!(kv[1].1, "{Type:Ready Status:False Reason:KubeletNotReady}");
        let Body::Structured { kv, .. } = body(r#""m" status=Phase:Running Ready:true pod="a""#)
        else {
            panic!()
        };
        assert_eq!(kv[0].1, "Phase:Running Ready:true");
        assert_eq!(kv[1].1, "a");
    }

    #[test]
    fn multi_line_block() {
        let Body::Structured { msg, kv } = body(
            "\"using InfoS with\\nthe message\" int=1 stringData=<\n\tlong: Multiple\n\tlines\n > str=\"another value\"",
        ) else {
            panic!()
        };
        assert_eq!(msg, "using InfoS with\nthe message");
        assert_eq!(kv[1].1, "long: Multiple\nlines");
        assert_eq!(kv[2].1, "another value");
        // As `journalctl` shows it: TABs expanded to spaces.
        let Body::Structured { kv, .. } =
            body("\"m\" k=<\n        line one\n        line two\n > x=1")
        else {
            panic!()
        };
        assert_eq!(kv[0].1, "line one\nline two");
        assert_eq!(kv[1].1, "1");
    }

    #[test]
    fn legacy_and_lookalikes() {
        assert!(matches!(
            body("Attempting to register node n1"),
            Body::Legacy(_)
        ));
        assert!(matches!(
            body("\"tokencleaner\" is disabled"),
            Body::Legacy(_)
        ));
        assert!(matches!(body(r#"node "n1" not found"#), Body::Legacy(_)));
        // A pasted line with a trailing comment and a hard-wrapped pair.
        let Body::Structured { msg, kv } =
            body("\"Error updating node status, will retry\" \n     err=\"x\"\n   # note")
        else {
            panic!()
        };
        assert_eq!(msg, "Error updating node status, will retry");
        assert_eq!(kv.len(), 1);
    }

    #[test]
    fn quotes_that_lost_their_backslashes() {
        let Body::Structured { kv, .. } = body(
            r#""Error updating node status, will retry" err="error getting node "worker-7": node "worker-7" not found""#,
        ) else {
            panic!()
        };
        assert_eq!(
            kv[0].1,
            r#"error getting node "worker-7": node "worker-7" not found"#
        );
        let Body::Structured { kv, .. } = body(
            r#""Unable to register node with API server" err="Post "https://a/api/v1/nodes": EOF" node="n1""#,
        ) else {
            panic!()
        };
        assert_eq!(kv[0].1, r#"Post "https://a/api/v1/nodes": EOF"#);
        assert_eq!(kv[1].1, "n1");
        // Escaped as Go writes it: unchanged.
        let Body::Structured { kv, .. } = body(r#""m" err="a "b" c" x="y""#) else {
            panic!()
        };
        assert_eq!(kv[0].1, r#"a "b" c"#);
        assert_eq!(kv[1].1, "y");
    }

    #[test]
    fn go_unquoting() {
        assert_eq!(unquote(r#"a\"b\\c\nd\te"#), "a\"b\\c\nd\te");
        assert_eq!(unquote(r"\u00e9\U0001F600\x41\101"), "é😀AA");
        assert_eq!(unquote(r"\xff"), "\u{fffd}");
        assert_eq!(unquote(r"\q"), r"\q");
        assert_eq!(unquote("trailing\\"), "trailing\\");
    }
}
