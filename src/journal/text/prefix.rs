//! The journal and syslog prefixes of a saved text log (`Mar 22 17:40:06
//! host kubelet[12]: `, short-iso, short-precise, localised months), a
//! collecting tool's `HOST: `, and the time they tell: the nom grammar.

use nom::IResult;
use nom::bytes::complete::{tag, take_till1, take_while_m_n, take_while1};
use nom::character::complete::{char, digit1, space0, space1};
use nom::combinator::{map_res, opt, recognize};
use nom::sequence::{delimited, preceded, terminated, tuple};

use sentinel_core::parse::klog::split_header;
use sentinel_core::time::{Micros, WallTime};

/// The fields a journal/syslog prefix gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Prefix<'a> {
    pub(super) at: Stamp,
    pub(super) host: &'a str,
    pub(super) ident: &'a str,
    pub(super) pid: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stamp {
    Wall(WallTime),
    Absolute(Micros),
    /// A prefix whose month could not be read: the day and time only.
    Unknown,
}

pub(super) const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Month names as `journalctl` prints them in other locales (lower case,
/// without a trailing dot), by number.
pub(super) const LOCAL_MONTHS: &[(&str, u32)] = &[
    // de
    ("mär", 3),
    ("mai", 5),
    ("okt", 10),
    ("dez", 12),
    // fr
    ("janv", 1),
    ("févr", 2),
    ("fevr", 2),
    ("mars", 3),
    ("avr", 4),
    ("avril", 4),
    ("juin", 6),
    ("juil", 7),
    ("août", 8),
    ("aout", 8),
    ("sept", 9),
    ("déc", 12),
    // es, it, pt, nl
    ("ene", 1),
    ("abr", 4),
    ("ago", 8),
    ("dic", 12),
    ("gen", 1),
    ("mag", 5),
    ("giu", 6),
    ("lug", 7),
    ("set", 9),
    ("ott", 10),
    ("fev", 2),
    ("out", 10),
    ("mrt", 3),
    ("mei", 5),
    // ru, pl
    ("янв", 1),
    ("фев", 2),
    ("мар", 3),
    ("апр", 4),
    ("мая", 5),
    ("май", 5),
    ("июн", 6),
    ("июл", 7),
    ("авг", 8),
    ("сен", 9),
    ("окт", 10),
    ("ноя", 11),
    ("дек", 12),
    ("sty", 1),
    ("lut", 2),
    ("kwi", 4),
    ("maj", 5),
    ("cze", 6),
    ("lip", 7),
    ("sie", 8),
    ("wrz", 9),
    ("paź", 10),
    ("lis", 11),
    ("gru", 12),
];

pub(super) fn month_number(token: &str) -> Option<u32> {
    if let Some(n) = MONTHS.iter().position(|m| *m == token) {
        return Some(n as u32 + 1);
    }
    // `11月` (ja, zh), `11월` (ko).
    if let Some(n) = token
        .strip_suffix('月')
        .or_else(|| token.strip_suffix('월'))
    {
        return n.parse().ok().filter(|m| (1..=12).contains(m));
    }
    let t = token.trim_end_matches('.').to_lowercase();
    if let Some(n) = MONTHS.iter().position(|m| m.to_lowercase() == t) {
        return Some(n as u32 + 1);
    }
    LOCAL_MONTHS.iter().find(|(m, _)| *m == t).map(|(_, n)| *n)
}

/// A month as `journalctl` writes it, in any of the languages above; an
/// unknown word still makes a prefix, just without a month.
pub(super) fn month(i: &str) -> IResult<&str, Option<u32>> {
    let (rest, m) = take_while_m_n(1, 12, |c: char| {
        !c.is_whitespace() && !c.is_ascii_digit() || c == '.'
    })(i)
    .or_else(|_: nom::Err<nom::error::Error<&str>>| {
        // `11月`
        recognize(tuple((
            take_while_m_n(1, 2, |c: char| c.is_ascii_digit()),
            take_while_m_n(1, 1, |c: char| c == '月' || c == '월'),
        )))(i)
    })?;
    Ok((rest, month_number(m)))
}

pub(super) fn number(i: &str) -> IResult<&str, u32> {
    map_res(digit1, str::parse)(i)
}

pub(super) fn fraction(i: &str) -> IResult<&str, u32> {
    let (rest, d) = preceded(char('.'), digit1)(i)?;
    let mut micros = 0;
    for (n, b) in d.bytes().take(6).enumerate() {
        micros += u32::from(b - b'0') * 10u32.pow(5 - n as u32);
    }
    Ok((rest, micros))
}

pub(super) fn hms(i: &str) -> IResult<&str, (u32, u32, u32, u32)> {
    let (i, (h, _, m, _, s, frac)) =
        tuple((number, char(':'), number, char(':'), number, opt(fraction)))(i)?;
    Ok((i, (h, m, s, frac.unwrap_or(0))))
}

/// `Mar 22 17:40:06` / `Apr 18 22:07:55.432265` / `Sep  3 07:35:28` /
/// `déc. 29 15:33:29` / `11月 29 15:33:29`.
pub(super) fn syslog_stamp(i: &str) -> IResult<&str, Stamp> {
    let (i, (month, _, day, _, (hour, minute, second, micros))) =
        tuple((month, space1, number, space1, hms))(i)?;
    if !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::Verify,
        )));
    }
    Ok((
        i,
        match month {
            Some(month) => Stamp::Wall(WallTime {
                month,
                day,
                hour,
                minute,
                second,
                micros,
            }),
            None => Stamp::Unknown,
        },
    ))
}

/// `2024-04-18T22:07:55+0000` / `2024-04-18T22:07:55.432265+00:00` /
/// `2026-11-29T16:31:27.398119123Z`.
pub(super) fn iso_stamp(i: &str) -> IResult<&str, Stamp> {
    let (rest, s) = recognize(tuple((
        take_while_m_n(4, 4, |c: char| c.is_ascii_digit()),
        char('-'),
        digit1,
        char('-'),
        digit1,
        char('T'),
        take_till1(|c: char| c.is_whitespace() || c == '"' || c == ',' || c == ']'),
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

/// An identifier as a paste may quote it (`"hyperkube[12]:`): without the
/// quotes and backticks around it.
pub(super) fn clean_ident(s: &str) -> &str {
    s.trim_matches(['"', '\'', '`'])
}

pub(super) fn ident_char(c: char) -> bool {
    !c.is_whitespace() && c != '[' && c != ':'
}

/// `host ident[pid]: ` or `host ident: `.
pub(super) fn host_ident(i: &str) -> IResult<&str, (&str, &str, Option<u32>)> {
    let (i, host) = terminated(take_till1(char::is_whitespace), space1)(i)?;
    let (i, ident) = take_while1(ident_char)(i)?;
    let (i, pid) = opt(delimited(char('['), number, char(']')))(i)?;
    let (i, _) = terminated(char(':'), opt(char(' ')))(i)?;
    Ok((i, (host, clean_ident(ident), pid)))
}

pub(super) fn prefix(i: &str) -> IResult<&str, Prefix<'_>> {
    let (i, _) = opt(delimited(char('<'), digit1, char('>')))(i)?;
    let (i, at) = nom::branch::alt((iso_stamp, syslog_stamp))(i)?;
    let (i, _) = space1(i)?;
    // `docker logs -t`, `kubectl logs --timestamps`: a time, then the line.
    if split_header(i).is_some() || i.starts_with("{\"") {
        return Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::Verify,
        )));
    }
    let (i, (host, ident, pid)) = host_ident(i)?;
    if !ident.chars().any(char::is_alphabetic) {
        return Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::Verify,
        )));
    }
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
pub(super) fn host_tag(i: &str) -> IResult<&str, &str> {
    let (rest, host) = terminated(
        take_till1(|c: char| c == ':' || c.is_whitespace()),
        tag(": "),
    )(i)?;
    let (rest, _) = space0(rest)?;
    if rest.starts_with("{\"") || split_header(rest).is_some() {
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
pub(super) fn with_klog_fraction(w: WallTime, msg: &str) -> WallTime {
    if w.micros != 0 {
        return w;
    }
    match sentinel_core::parse::klog::leading_time(msg) {
        Some(h) if h.minute == w.minute && h.second == w.second => WallTime {
            micros: h.micros,
            ..w
        },
        _ => w,
    }
}
