//! The edges' own time: the wall clock, the machine's zone, and the
//! forms people type (durations in config and flags, `--since` times).
//! The walled core reads none of these: time comes to it with the entries
//! and the caller's ticks, and the zone as a [`Zone`] chosen here.

use chrono::{DateTime, Local, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone, Utc};

use sentinel_core::time::{Micros, SECOND, Zone, ZoneRules, parse_rfc3339};

/// The current wall-clock time.
#[must_use]
pub fn now() -> Micros {
    Utc::now().timestamp_micros()
}

/// The machine's zone (`TZ`, else `/etc/localtime`), as chrono reads it.
struct MachineZone;

impl ZoneRules for MachineZone {
    fn offset_at(&self, us: Micros) -> i32 {
        Local
            .timestamp_micros(us)
            .single()
            .map_or(0, |t| t.offset().fix().local_minus_utc())
    }

    fn resolve(&self, wall: NaiveDateTime) -> LocalResult<Micros> {
        Local
            .from_local_datetime(&wall)
            .map(|t| t.timestamp_micros())
    }
}

static MACHINE: MachineZone = MachineZone;

/// The zone times are read and shown in: UTC with `--utc`, else the
/// machine's, as journalctl does. Decided here, at the edge, once.
#[must_use]
pub(crate) fn zone(utc: bool) -> Zone {
    if utc { Zone::Utc } else { Zone::Of(&MACHINE) }
}

/// A duration from config or the command line could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid duration {input:?}: {reason} (examples: 500ms, 60s, 10m, 4h, 90d)")]
pub(crate) struct DurationError {
    pub input: String,
    pub reason: &'static str,
}

/// Parses `500ms`, `60s`, `10m`, `4h`, `90d`, or several run together
/// (`1h30m`). A bare `0` is allowed; other bare numbers are not, because a
/// unit-less `60` is ambiguous to the person reading the config.
///
/// Not `humantime::parse_duration`, the maintained crate for this: it also
/// takes `1M` (a month of 30.44 days, next to `1m`, a minute), `1y`,
/// `2 weeks`, `ns` and spaces, so configs and flags that are refused today
/// would mean something (`retention = "1M"`), and its errors do not quote
/// the input or give examples; wrapping it to refuse those would be more
/// code than these forty lines. `systemd.time(7)`'s own forms are what
/// `--since` takes ([`parse_when`]).
pub(crate) fn parse_duration(input: &str) -> Result<Micros, DurationError> {
    let err = |reason| DurationError {
        input: input.to_string(),
        reason,
    };
    let s = input.trim();
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(err("empty"));
    }
    let mut total: Micros = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(err("expected a number"));
        }
        let value: Micros = rest[..digits]
            .parse()
            .map_err(|_| err("number too large"))?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit: Micros = match &rest[..unit_len] {
            "us" => 1,
            "ms" => 1_000,
            "s" => SECOND,
            "m" => 60 * SECOND,
            "h" => 3600 * SECOND,
            "d" => 86_400 * SECOND,
            "" => return Err(err("missing unit")),
            _ => return Err(err("unknown unit")),
        };
        rest = &rest[unit_len..];
        total = value
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| err("too large"))?;
    }
    Ok(total)
}

/// A point in time as `journalctl --since` takes it (systemd.time(7)):
/// `now`, `today`, `yesterday`, `tomorrow`; `-2h`, `+30m`, `2h ago`, or a
/// bare duration (`24h`: that long ago); `2026-11-29`, `2026-11-29 18:15`,
/// `2026-11-29 18:15:30`, `18:15` (today), in local time (or UTC with
/// `utc`, or a trailing ` UTC`); RFC 3339.
pub(crate) fn parse_when(input: &str, now: Micros, utc: bool) -> Result<Micros, String> {
    let bad = || {
        format!(
            "{input:?}: expected a time such as \"2026-11-29 18:15\", \"yesterday\", \"-2h\", \"24h\" \
             or an RFC 3339 time"
        )
    };
    let s = input.trim();
    if let Some(t) = parse_rfc3339(s) {
        return Ok(t);
    }
    let (s, utc) = match s.strip_suffix(" UTC").or_else(|| s.strip_suffix(" utc")) {
        Some(rest) => (rest.trim(), true),
        None => (s, utc),
    };
    let local_midnight = |days: i64| -> Option<Micros> {
        let today = if utc {
            DateTime::<Utc>::from_timestamp_micros(now)?.date_naive()
        } else {
            DateTime::<Utc>::from_timestamp_micros(now)?
                .with_timezone(&Local)
                .date_naive()
        };
        let day = today + chrono::Duration::days(days);
        at_wall(day.and_hms_opt(0, 0, 0)?, utc)
    };
    match s {
        "now" => return Ok(now),
        "today" => return local_midnight(0).ok_or_else(bad),
        "yesterday" => return local_midnight(-1).ok_or_else(bad),
        "tomorrow" => return local_midnight(1).ok_or_else(bad),
        _ => {}
    }
    if let Some(d) = s.strip_prefix('-') {
        return parse_duration(d.trim()).map(|d| now - d).map_err(|_| bad());
    }
    if let Some(d) = s.strip_prefix('+') {
        return parse_duration(d.trim()).map(|d| now + d).map_err(|_| bad());
    }
    if let Some(d) = s.strip_suffix(" ago") {
        return parse_duration(d.trim()).map(|d| now - d).map_err(|_| bad());
    }
    if let Ok(d) = parse_duration(s) {
        return Ok(now - d);
    }
    for f in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, f) {
            return at_wall(t, utc).ok_or_else(bad);
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return d
            .and_hms_opt(0, 0, 0)
            .and_then(|t| at_wall(t, utc))
            .ok_or_else(bad);
    }
    for f in ["%H:%M:%S", "%H:%M"] {
        if let Ok(t) = chrono::NaiveTime::parse_from_str(s, f) {
            let today = if utc {
                DateTime::<Utc>::from_timestamp_micros(now).map(|d| d.date_naive())
            } else {
                DateTime::<Utc>::from_timestamp_micros(now)
                    .map(|d| d.with_timezone(&Local).date_naive())
            };
            return today
                .and_then(|d| at_wall(d.and_time(t), utc))
                .ok_or_else(bad);
        }
    }
    Err(bad())
}

/// A wall-clock time in the local zone (or UTC) as micros; the earlier of
/// two when a clock change makes it ambiguous.
fn at_wall(t: NaiveDateTime, utc: bool) -> Option<Micros> {
    if utc {
        return Some(t.and_utc().timestamp_micros());
    }
    match MACHINE.resolve(t) {
        LocalResult::Single(d) | LocalResult::Ambiguous(d, _) => Some(d),
        LocalResult::None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sentinel_core::time::parse_rfc3339;

    #[test]
    fn journalctl_times() {
        let now = parse_rfc3339("2026-11-29T20:00:00Z").unwrap();
        let h = 3600 * SECOND;
        assert_eq!(parse_when("now", now, true), Ok(now));
        assert_eq!(parse_when("-2h", now, true), Ok(now - 2 * h));
        assert_eq!(parse_when("2h ago", now, true), Ok(now - 2 * h));
        assert_eq!(parse_when("24h", now, true), Ok(now - 24 * h));
        assert_eq!(parse_when("+1h", now, true), Ok(now + h));
        assert_eq!(
            parse_when("today", now, true),
            Ok(parse_rfc3339("2026-11-29T00:00:00Z").unwrap())
        );
        assert_eq!(
            parse_when("yesterday", now, true),
            Ok(parse_rfc3339("2026-11-28T00:00:00Z").unwrap())
        );
        assert_eq!(
            parse_when("2026-11-29 18:15", now, true),
            Ok(parse_rfc3339("2026-11-29T18:15:00Z").unwrap())
        );
        assert_eq!(
            parse_when("2026-11-29 18:15:30 UTC", now, false),
            Ok(parse_rfc3339("2026-11-29T18:15:30Z").unwrap())
        );
        assert_eq!(
            parse_when("2026-11-29", now, true),
            Ok(parse_rfc3339("2026-11-29T00:00:00Z").unwrap())
        );
        assert_eq!(
            parse_when("18:15", now, true),
            Ok(parse_rfc3339("2026-11-29T18:15:00Z").unwrap())
        );
        assert_eq!(
            parse_when("2026-11-29T18:15:00+01:00", now, true),
            Ok(parse_rfc3339("2026-11-29T17:15:00Z").unwrap())
        );
        for bad in ["", "soon", "2026-13-01", "25:00", "-x"] {
            assert!(parse_when(bad, now, true).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60s"), Ok(60 * SECOND));
        assert_eq!(parse_duration("10m"), Ok(600 * SECOND));
        assert_eq!(parse_duration("1h30m"), Ok(5400 * SECOND));
        assert_eq!(parse_duration("90d"), Ok(90 * 86_400 * SECOND));
        assert_eq!(parse_duration("500ms"), Ok(500_000));
        assert_eq!(parse_duration("0"), Ok(0));
        assert!(parse_duration("60").is_err());
        assert!(parse_duration("5 minutes").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
    }

    /// `scan`'s flags take text; it must say what the config's default is.
    #[test]
    fn flag_texts_are_the_defaults() {
        use sentinel_core::defaults::{
            RACE_WINDOW, RACE_WINDOW_TEXT, RESOLVE_AFTER, RESOLVE_AFTER_TEXT, WINDOW, WINDOW_TEXT,
        };
        for (text, value) in [
            (RESOLVE_AFTER_TEXT, RESOLVE_AFTER),
            (RACE_WINDOW_TEXT, RACE_WINDOW),
            (WINDOW_TEXT, WINDOW),
        ] {
            assert_eq!(parse_duration(text).unwrap(), value, "{text}");
        }
    }
}
