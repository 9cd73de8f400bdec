//! Saved text logs: raw klog (a kubelet run in a shell), `journalctl` short,
//! short-precise and short-iso output, syslog files with or without `<PRI>`,
//! the kubelet's JSON format, and lines a collecting tool prefixed with
//! `HOST: `. Banners (`-- Logs begin at ... --`), comments and blank lines
//! are skipped. Times: the prefix's first, the line's own (klog header, JSON
//! `ts`) second; the year and zone come from [`Clock`].

use std::io::BufRead;

use nom::IResult;
use nom::bytes::complete::{tag, take_till1, take_while_m_n, take_while1};
use nom::character::complete::{char, digit1, space0, space1};
use nom::combinator::{map_res, opt, recognize};
use nom::sequence::{delimited, preceded, terminated, tuple};

use super::{Entry, Item, SourceError};
use crate::parse::klog::{split_header, starts_with_header};
use crate::time::{Clock, Micros, WallTime};

pub struct TextReader<R> {
    path: String,
    reader: R,
    clock: Clock,
    buf: Vec<u8>,
    /// The last prefixed line's fields: indented lines without a prefix of
    /// their own continue it.
    last: Option<Entry>,
}

impl<R: BufRead> TextReader<R> {
    pub fn new(path: &str, reader: R, clock: Clock) -> Self {
        Self {
            path: path.to_string(),
            reader,
            clock,
            buf: Vec::new(),
            last: None,
        }
    }
}

/// The fields a syslog-style prefix gives.
#[derive(Debug, PartialEq, Eq)]
struct Prefix<'a> {
    at: Stamp,
    host: &'a str,
    ident: &'a str,
    pid: Option<u32>,
}

#[derive(Debug, PartialEq, Eq)]
enum Stamp {
    Wall(WallTime),
    Absolute(Micros),
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn month(i: &str) -> IResult<&str, u32> {
    let (rest, m) = take_while_m_n(3, 3, |c: char| c.is_ascii_alphabetic())(i)?;
    match MONTHS.iter().position(|x| *x == m) {
        Some(n) => Ok((rest, n as u32 + 1)),
        None => Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::Tag,
        ))),
    }
}

fn number(i: &str) -> IResult<&str, u32> {
    map_res(digit1, str::parse)(i)
}

fn fraction(i: &str) -> IResult<&str, u32> {
    let (rest, d) = preceded(char('.'), digit1)(i)?;
    let mut micros = 0;
    for (n, b) in d.bytes().take(6).enumerate() {
        micros += u32::from(b - b'0') * 10u32.pow(5 - n as u32);
    }
    Ok((rest, micros))
}

fn hms(i: &str) -> IResult<&str, (u32, u32, u32, u32)> {
    let (i, (h, _, m, _, s, frac)) =
        tuple((number, char(':'), number, char(':'), number, opt(fraction)))(i)?;
    Ok((i, (h, m, s, frac.unwrap_or(0))))
}

/// `Mar 22 17:40:06` / `Apr 18 22:07:55.432265` / `Sep  3 07:35:28`.
fn syslog_stamp(i: &str) -> IResult<&str, Stamp> {
    let (i, (month, _, day, _, (hour, minute, second, micros))) =
        tuple((month, space1, number, space1, hms))(i)?;
    Ok((
        i,
        Stamp::Wall(WallTime {
            month,
            day,
            hour,
            minute,
            second,
            micros,
        }),
    ))
}

/// `2024-04-18T22:07:55+0000` / `2024-04-18T22:07:55.432265+00:00`.
fn iso_stamp(i: &str) -> IResult<&str, Stamp> {
    let (rest, s) = recognize(tuple((
        take_while_m_n(4, 4, |c: char| c.is_ascii_digit()),
        char('-'),
        digit1,
        char('-'),
        digit1,
        char('T'),
        take_till1(|c: char| c.is_whitespace()),
    )))(i)?;
    let parsed = chrono::DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f%z")
        .or_else(|_| chrono::DateTime::parse_from_rfc3339(s));
    match parsed {
        Ok(t) => Ok((rest, Stamp::Absolute(t.timestamp_micros()))),
        Err(_) => Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::Verify,
        ))),
    }
}

fn ident_char(c: char) -> bool {
    !c.is_whitespace() && c != '[' && c != ':'
}

/// `host ident[pid]: ` or `host ident: `.
fn host_ident(i: &str) -> IResult<&str, (&str, &str, Option<u32>)> {
    let (i, host) = terminated(take_till1(char::is_whitespace), space1)(i)?;
    let (i, ident) = take_while1(ident_char)(i)?;
    let (i, pid) = opt(delimited(char('['), number, char(']')))(i)?;
    let (i, _) = terminated(char(':'), opt(char(' ')))(i)?;
    Ok((i, (host, ident, pid)))
}

fn prefix(i: &str) -> IResult<&str, Prefix<'_>> {
    let (i, _) = opt(delimited(char('<'), digit1, char('>')))(i)?;
    let (i, at) = nom::branch::alt((syslog_stamp, iso_stamp))(i)?;
    let (i, _) = space1(i)?;
    let (i, (host, ident, pid)) = host_ident(i)?;
    Ok((
        i,
        Prefix {
            at,
            host,
            ident,
            pid,
        },
    ))
}

/// `10.200.1.3: {"ts":...}` or `node-1: I0101 ...`: a collecting tool's
/// host prefix in front of a kubelet line.
fn host_tag(i: &str) -> IResult<&str, &str> {
    let (rest, host) = terminated(
        take_till1(|c: char| c == ':' || c.is_whitespace()),
        tag(": "),
    )(i)?;
    let (rest, _) = space0(rest)?;
    if rest.starts_with("{\"") || starts_with_header(rest.as_bytes()) {
        Ok((rest, host))
    } else {
        Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::Verify,
        )))
    }
}

/// A syslog prefix has whole seconds; the klog header inside has
/// microseconds. Where both agree on the minute and second (the hour may
/// differ: a kubelet in a container often logs UTC), take the fraction from
/// the header, so timelines keep their millisecond gaps.
fn with_klog_fraction(w: WallTime, msg: &str) -> WallTime {
    if w.micros != 0 {
        return w;
    }
    match split_header(msg) {
        Some((h, _)) if h.wall.minute == w.minute && h.wall.second == w.second => WallTime {
            micros: h.wall.micros,
            ..w
        },
        _ => w,
    }
}

fn is_banner(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty()
        || t.starts_with('#')
        || (line.starts_with("-- ") && line.trim_end().ends_with(" --"))
        || line.starts_with("-- No entries --")
}

impl<R: BufRead> TextReader<R> {
    /// The line's own time: a klog header's, or a JSON-format `ts`.
    fn own_time(&self, msg: &str) -> Option<Micros> {
        if let Some((h, _)) = split_header(msg) {
            return self.clock.place(h.wall);
        }
        if msg.starts_with("{\"") {
            let ts = msg.split_once("\"ts\":")?.1;
            let end = ts.find([',', '}'])?;
            let ms: f64 = ts[..end].trim().parse().ok()?;
            return Some((ms * 1_000.0).round() as Micros);
        }
        None
    }

    /// Keeps a prefixed line's fields for the indented lines that follow it.
    fn remember(&mut self, e: Entry) -> Entry {
        self.last = Some(Entry {
            message: Vec::new(),
            ..e.clone()
        });
        e
    }

    fn entry_of(&mut self, line: &str) -> Option<Entry> {
        if is_banner(line) {
            return None;
        }
        if let Ok((msg, p)) = prefix(line) {
            let at = match p.at {
                Stamp::Wall(w) => self.clock.place(with_klog_fraction(w, msg)),
                Stamp::Absolute(t) => Some(t),
            }
            .or_else(|| self.own_time(msg));
            return Some(self.remember(Entry {
                at,
                host: Some(p.host.into()),
                identifier: Some(p.ident.into()),
                pid: p.pid,
                message: msg.as_bytes().to_vec(),
                ..Entry::default()
            }));
        }
        if let Ok((msg, host)) = host_tag(line) {
            return Some(self.remember(Entry {
                at: self.own_time(msg),
                host: Some(host.into()),
                message: msg.as_bytes().to_vec(),
                ..Entry::default()
            }));
        }
        // An indented line continues the last prefixed line (journalctl
        // indents the further lines of a multi-line MESSAGE); otherwise the
        // line is raw (a kubelet run in a shell).
        if line.starts_with([' ', '\t']) {
            if let Some(last) = &self.last {
                return Some(Entry {
                    message: line.as_bytes().to_vec(),
                    ..last.clone()
                });
            }
        }
        self.last = None;
        Some(Entry {
            at: self.own_time(line),
            message: line.as_bytes().to_vec(),
            ..Entry::default()
        })
    }
}

impl<R: BufRead> Iterator for TextReader<R> {
    type Item = Result<Item, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(source) => {
                    return Some(Err(SourceError::Io {
                        path: self.path.clone(),
                        source,
                    }));
                }
            }
            while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
                self.buf.pop();
            }
            let buf = std::mem::take(&mut self.buf);
            let line = String::from_utf8_lossy(&buf);
            let entry = self.entry_of(&line);
            drop(line);
            self.buf = buf;
            if let Some(mut e) = entry {
                // Keep invalid UTF-8 as it was written: the prefix is ASCII,
                // so the message starts at the same byte in both.
                if std::str::from_utf8(&self.buf).is_err() {
                    let lossy = String::from_utf8_lossy(&self.buf);
                    if let Some(offset) = lossy.len().checked_sub(e.message.len()) {
                        if self.buf.get(..offset) == Some(&lossy.as_bytes()[..offset]) {
                            e.message = self.buf[offset..].to_vec();
                        }
                    }
                }
                return Some(Ok(Item::Entry(e)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{parse_rfc3339, rfc3339};

    fn clock() -> Clock {
        Clock {
            utc: true,
            year: None,
            now: parse_rfc3339("2026-11-29T00:00:00Z").unwrap(),
        }
    }

    fn read(s: &str) -> Vec<Entry> {
        TextReader::new("t", s.as_bytes(), clock())
            .map(|i| match i.unwrap() {
                Item::Entry(e) => e,
                Item::Malformed(m) => panic!("{m:?}"),
            })
            .collect()
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
    fn raw_klog_banners_and_host_tags() {
        let es = read(concat!(
            "-- Logs begin at Thu 2019-08-29 16:00:00 UTC, end at Thu 2019-08-29 17:00:00 UTC. --\n",
            "# source: somewhere\n",
            "\n",
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

    #[test]
    fn indented_lines_continue_the_prefixed_line() {
        let es =
            read("Mar 22 17:40:06 h kubelet[1]: I0322 17:40:06.000000 1 a.go:1] \"m\" k=<\n\tv\n");
        assert_eq!(es[1].identifier.as_deref(), Some("kubelet"));
        assert_eq!(es[1].message, b"\tv");
    }

    #[test]
    fn invalid_utf8_kept() {
        let input = b"Mar 22 17:40:06 h kubelet[1]: bad \xff byte\n";
        let e = match TextReader::new("t", &input[..], clock())
            .next()
            .unwrap()
            .unwrap()
        {
            Item::Entry(e) => e,
            Item::Malformed(_) => panic!(),
        };
        assert_eq!(e.message, b"bad \xff byte");
    }
}
