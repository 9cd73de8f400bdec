//! Time as the rest of the crate sees it: microseconds since the Unix epoch
//! (UTC), as journald's `__REALTIME_TIMESTAMP` is, plus the conversions at the
//! edges: durations in config and flags (`60s`, `10m`, `90d`), RFC 3339 output,
//! and the year and zone that text logs leave out.

use chrono::{DateTime, Datelike, Local, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Utc};

/// Microseconds since the Unix epoch, UTC.
pub type Micros = i64;

pub const SECOND: Micros = 1_000_000;

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

/// Formats a duration the way a person writes it: `850ms`, `12s`, `3m`,
/// `2h5m`.
#[must_use]
pub(crate) fn human_duration(us: Micros) -> String {
    let ms = us / 1_000;
    if ms < 1_000 {
        return format!("{ms}ms");
    }
    let secs = ms / 1_000;
    if secs < 60 {
        return format!("{secs}s");
    }
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    for (v, u) in [(d, "d"), (h, "h"), (m, "m")] {
        if v > 0 {
            out.push_str(&format!("{v}{u}"));
        }
    }
    if s > 0 && d == 0 && h == 0 {
        out.push_str(&format!("{s}s"));
    }
    out
}

/// RFC 3339, UTC, milliseconds: the JSON contract's time format.
#[must_use]
pub fn rfc3339(us: Micros) -> String {
    match Utc.timestamp_micros(us) {
        LocalResult::Single(t) => t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        _ => format!("@{us}us"),
    }
}

/// `HH:MM:SS.mmm UTC`, for diagnoses and timelines (the zone always said).
#[must_use]
pub(crate) fn clock(us: Micros) -> String {
    match Utc.timestamp_micros(us) {
        LocalResult::Single(t) => t.format("%H:%M:%S%.3f UTC").to_string(),
        _ => format!("@{us}us"),
    }
}

/// Which zone times are shown in to people: the machine's (as journalctl
/// does) or UTC (`--utc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    Local,
    Utc,
}

/// The one format times are shown in to people:
/// `2026-11-29 18:15:02.123 UTC`, or in the local zone with its offset
/// (`2026-11-29 19:15:02.123 +01:00`).
#[must_use]
pub(crate) fn human(us: Micros, zone: Zone) -> String {
    match (zone, Utc.timestamp_micros(us)) {
        (Zone::Utc, LocalResult::Single(t)) => t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string(),
        (Zone::Local, LocalResult::Single(t)) => t
            .with_timezone(&Local)
            .format("%Y-%m-%d %H:%M:%S%.3f %:z")
            .to_string(),
        _ => format!("@{us}us"),
    }
}

/// `YYYY-MM-DD HH:MM:SS` in UTC, for tables.
#[must_use]
pub(crate) fn short(us: Micros) -> String {
    match Utc.timestamp_micros(us) {
        LocalResult::Single(t) => t.format("%Y-%m-%d %H:%M:%S").to_string(),
        _ => format!("@{us}us"),
    }
}

/// Parses an RFC 3339 time (`2026-11-29T10:00:00Z`) into micros.
#[must_use]
pub(crate) fn parse_rfc3339(s: &str) -> Option<Micros> {
    DateTime::parse_from_rfc3339(s.trim())
        .ok()
        .map(|t| t.timestamp_micros())
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
    match Local.from_local_datetime(&t) {
        LocalResult::Single(d) | LocalResult::Ambiguous(d, _) => Some(d.timestamp_micros()),
        LocalResult::None => None,
    }
}

/// How to place a time of day that carries no year and no zone (klog headers,
/// syslog prefixes) on the time line.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// Read wall times as UTC instead of the local zone.
    pub utc: bool,
    /// A fixed year instead of inferring one.
    pub year: Option<i32>,
    /// Lines may not be placed after this (plus a day of slack for zones).
    pub now: Micros,
}

/// A calendar time without a year, as text logs write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallTime {
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub micros: u32,
}

/// Why a wall time could not be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{month:02}-{day:02} {hour:02}:{minute:02}:{second:02} is not a time in {year}")]
pub(crate) struct Impossible {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// Places the wall times of one input, in order: the year is inferred per
/// line so that time never runs backwards across a new year (a file from
/// Dec 31 to Jan 1 goes on into the next year, also with a fixed `--year`),
/// and a date that does not exist in its year is an error, never 1970.
#[derive(Debug, Clone)]
pub(crate) struct Placer {
    clock: Clock,
    last: Option<(i32, Micros)>,
}

/// A jump back by more than this is a new year, not a clock set back.
const YEAR_WRAP: Micros = 183 * 86_400 * SECOND;

impl Placer {
    #[must_use]
    pub(crate) fn new(clock: Clock) -> Self {
        Self { clock, last: None }
    }

    pub(crate) fn place(&mut self, w: WallTime) -> Result<Micros, Impossible> {
        let impossible = |year| Impossible {
            year,
            month: w.month,
            day: w.day,
            hour: w.hour,
            minute: w.minute,
            second: w.second,
        };
        let (year, t) = match self.last {
            None => {
                if let Some(y) = self.clock.year {
                    (y, self.clock.resolve(y, w).ok_or_else(|| impossible(y))?)
                } else {
                    let t = self
                        .clock
                        .place(w)
                        .ok_or_else(|| impossible(self.clock.this_year()))?;
                    (year_of(t), t)
                }
            }
            Some((year, last)) => match self.clock.resolve(year, w) {
                Some(t) if t >= last - YEAR_WRAP => (year, t),
                // Across a new year (or Feb 29 of the next leap year).
                _ => (1..=4)
                    .find_map(|k| self.clock.resolve(year + k, w).map(|t| (year + k, t)))
                    .filter(|(_, t)| *t >= last - YEAR_WRAP)
                    .ok_or_else(|| impossible(year))?,
            },
        };
        self.last = Some((year, t.max(self.last.map_or(t, |(_, l)| l))));
        Ok(t)
    }
}

fn year_of(t: Micros) -> i32 {
    Utc.timestamp_micros(t).single().map_or(1970, |t| t.year())
}

impl Clock {
    fn this_year(&self) -> i32 {
        year_of(self.now)
    }

    /// The time of `wall`, in the latest year that does not put it in the
    /// future (with a day of slack for zone differences), or in the fixed year.
    #[must_use]
    pub fn place(&self, wall: WallTime) -> Option<Micros> {
        let slack = 86_400 * SECOND;
        if let Some(year) = self.year {
            return self.resolve(year, wall);
        }
        let this_year = self.this_year();
        // Feb 29 may need to go back up to 8 years to find a leap year.
        (this_year - 8..=this_year + 1)
            .rev()
            .filter_map(|y| self.resolve(y, wall))
            .find(|&t| t <= self.now + slack)
    }

    fn resolve(&self, year: i32, w: WallTime) -> Option<Micros> {
        let naive: NaiveDateTime = NaiveDate::from_ymd_opt(year, w.month, w.day)?
            .and_hms_micro_opt(w.hour, w.minute, w.second.min(59), w.micros)?;
        if self.utc {
            return Some(naive.and_utc().timestamp_micros());
        }
        match Local.from_local_datetime(&naive) {
            LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Some(t.timestamp_micros()),
            // A wall time skipped by a DST change: read it as the hour before.
            LocalResult::None => Local
                .from_local_datetime(&(naive - chrono::Duration::hours(1)))
                .earliest()
                .map(|t| t.timestamp_micros() + 3600 * SECOND),
        }
    }
}

#[cfg(test)]
mod when_tests {
    use super::*;

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
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn human() {
        assert_eq!(human_duration(7_000), "7ms");
        assert_eq!(human_duration(12 * SECOND), "12s");
        assert_eq!(human_duration(185 * SECOND), "3m5s");
        assert_eq!(human_duration(7500 * SECOND), "2h5m");
    }

    #[test]
    fn year_inference_never_puts_a_line_in_the_future() {
        let now = parse_rfc3339("2026-03-01T00:00:00Z").unwrap();
        let clock = Clock {
            utc: true,
            year: None,
            now,
        };
        let wall = |month, day| WallTime {
            month,
            day,
            hour: 12,
            minute: 0,
            second: 0,
            micros: 0,
        };
        assert_eq!(
            rfc3339(clock.place(wall(2, 27)).unwrap()),
            "2026-02-27T12:00:00.000Z"
        );
        assert_eq!(
            rfc3339(clock.place(wall(12, 31)).unwrap()),
            "2025-12-31T12:00:00.000Z"
        );
        assert_eq!(
            rfc3339(clock.place(wall(2, 29)).unwrap()),
            "2024-02-29T12:00:00.000Z"
        );
        let fixed = Clock {
            year: Some(2019),
            ..clock
        };
        assert_eq!(
            rfc3339(fixed.place(wall(12, 31)).unwrap()),
            "2019-12-31T12:00:00.000Z"
        );
        assert_eq!(fixed.place(wall(2, 30)), None);
    }

    #[test]
    fn placed_in_order_time_goes_on_across_a_new_year() {
        let wall = |month, day| WallTime {
            month,
            day,
            hour: 23,
            minute: 59,
            second: 50,
            micros: 0,
        };
        let clock = Clock {
            utc: true,
            year: Some(2025),
            now: parse_rfc3339("2026-03-01T00:00:00Z").unwrap(),
        };
        let mut p = Placer::new(clock);
        assert_eq!(
            rfc3339(p.place(wall(12, 31)).unwrap()),
            "2025-12-31T23:59:50.000Z"
        );
        assert_eq!(
            rfc3339(p.place(wall(1, 1)).unwrap()),
            "2026-01-01T23:59:50.000Z"
        );
        // A clock set back an hour stays in the year.
        assert_eq!(
            rfc3339(p.place(wall(1, 1)).unwrap()),
            "2026-01-01T23:59:50.000Z"
        );
        // Feb 29 of a year without one is an error, not 1970.
        let mut p = Placer::new(clock);
        let e = p.place(wall(2, 29)).unwrap_err();
        assert_eq!(e.to_string(), "02-29 23:59:50 is not a time in 2025");
        // Without --year, Dec 31 then Jan 1 spans the turn of the year too.
        let mut p = Placer::new(Clock {
            year: None,
            ..clock
        });
        assert_eq!(
            rfc3339(p.place(wall(12, 31)).unwrap()),
            "2025-12-31T23:59:50.000Z"
        );
        assert_eq!(
            rfc3339(p.place(wall(1, 1)).unwrap()),
            "2026-01-01T23:59:50.000Z"
        );
    }
}
