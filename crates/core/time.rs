//! Time as the core sees it: microseconds since the Unix epoch (UTC), as
//! journald's `__REALTIME_TIMESTAMP` is; RFC 3339 and the one human format;
//! placing the wall times text logs write (no year, no zone) on the time
//! line. No clock is read here and no zone is named but UTC: the machine's
//! zone, when wall times are read or shown in it, comes from the edge as a
//! [`Zone`] (`crate::clock` of the service and the CLI).

use chrono::{
    DateTime, Datelike, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Utc,
};

/// Microseconds since the Unix epoch, UTC.
pub type Micros = i64;

pub const SECOND: Micros = 1_000_000;

/// Formats a duration the way a person writes it: `850ms`, `12s`, `3m`,
/// `2h5m`.
#[must_use]
pub fn human_duration(us: Micros) -> String {
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
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "not an incident kind: the variants not named all take one path"
)]
pub fn rfc3339(us: Micros) -> String {
    match Utc.timestamp_micros(us) {
        LocalResult::Single(t) => t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        _ => format!("@{us}us"),
    }
}

/// `HH:MM:SS.mmm UTC`, for diagnoses and timelines (the zone always said).
#[must_use]
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "not an incident kind: the variants not named all take one path"
)]
pub fn clock(us: Micros) -> String {
    match Utc.timestamp_micros(us) {
        LocalResult::Single(t) => t.format("%H:%M:%S%.3f UTC").to_string(),
        _ => format!("@{us}us"),
    }
}

/// The rules of a time zone the edge chooses (the machine's zone, read
/// where the CLI or the service starts): the core names no zone but UTC,
/// so the same saved log gives the same incidents wherever it is read
/// with `--utc`, and the local zone is one decision at the edge.
pub trait ZoneRules: Send + Sync {
    /// Seconds east of UTC at instant `us`.
    fn offset_at(&self, us: Micros) -> i32;
    /// The instants a wall time of the zone names: one, two at a clock
    /// set back, none in a gap skipped forward.
    fn resolve(&self, wall: NaiveDateTime) -> LocalResult<Micros>;
}

/// A fixed offset from UTC (seconds east): a zone without clock changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedZone(pub i32);

impl ZoneRules for FixedZone {
    fn offset_at(&self, _us: Micros) -> i32 {
        self.0
    }

    fn resolve(&self, wall: NaiveDateTime) -> LocalResult<Micros> {
        LocalResult::Single(wall.and_utc().timestamp_micros() - i64::from(self.0) * SECOND)
    }
}

/// Which zone wall times are read in and times are shown to people in:
/// UTC (`--utc`, and always for the JSON contract) or one the edge gives.
#[derive(Clone, Copy)]
pub enum Zone {
    Utc,
    Of(&'static dyn ZoneRules),
}

impl std::fmt::Debug for Zone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Zone::Utc => f.write_str("Utc"),
            Zone::Of(_) => f.write_str("Of(..)"),
        }
    }
}

impl Zone {
    /// The instant a wall time of this zone names: the earlier of two at a
    /// clock set back; in a gap skipped forward, read as the hour before
    /// plus an hour.
    #[must_use]
    pub fn instant(self, wall: NaiveDateTime) -> Option<Micros> {
        let rules = match self {
            Zone::Utc => return Some(wall.and_utc().timestamp_micros()),
            Zone::Of(r) => r,
        };
        match rules.resolve(wall) {
            LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Some(t),
            LocalResult::None => rules
                .resolve(wall - chrono::Duration::hours(1))
                .earliest()
                .map(|t| t + 3600 * SECOND),
        }
    }

    /// Seconds east of UTC at `us`.
    #[must_use]
    pub fn offset_at(self, us: Micros) -> i32 {
        match self {
            Zone::Utc => 0,
            Zone::Of(r) => r.offset_at(us),
        }
    }
}

/// The one format times are shown in to people:
/// `2026-11-29 18:15:02.123 UTC`, or in another zone with its offset
/// (`2026-11-29 19:15:02.123 +01:00`).
#[must_use]
pub fn human(us: Micros, zone: Zone) -> String {
    let Some(t) = DateTime::<Utc>::from_timestamp_micros(us) else {
        return format!("@{us}us");
    };
    match zone {
        Zone::Utc => t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string(),
        // A machine on UTC says so as a UTC one would: one spelling.
        Zone::Of(_) if zone.offset_at(us) == 0 => t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string(),
        Zone::Of(_) => match FixedOffset::east_opt(zone.offset_at(us)) {
            Some(off) => t
                .with_timezone(&off)
                .format("%Y-%m-%d %H:%M:%S%.3f %:z")
                .to_string(),
            None => t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string(),
        },
    }
}

/// `YYYY-MM-DD HH:MM:SS` in UTC, for tables.
#[must_use]
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "not an incident kind: the variants not named all take one path"
)]
pub fn short(us: Micros) -> String {
    match Utc.timestamp_micros(us) {
        LocalResult::Single(t) => t.format("%Y-%m-%d %H:%M:%S").to_string(),
        _ => format!("@{us}us"),
    }
}

/// Parses an RFC 3339 time (`2026-11-29T10:00:00Z`) into micros.
#[must_use]
pub fn parse_rfc3339(s: &str) -> Option<Micros> {
    DateTime::parse_from_rfc3339(s.trim())
        .ok()
        .map(|t| t.timestamp_micros())
}

/// Parses a time as Go's `time.Time` prints it (`2027-01-01 00:00:00 +0000
/// UTC`, `2026-10-20 12:00:00.868848081 +0000 UTC`; a monotonic `m=+…`
/// after it is ignored) into micros.
#[must_use]
pub fn parse_go_time(s: &str) -> Option<Micros> {
    let mut words = s.split_whitespace();
    let (date, time, offset) = (words.next()?, words.next()?, words.next()?);
    DateTime::parse_from_str(
        &format!("{date} {time} {offset}"),
        "%Y-%m-%d %H:%M:%S%.f %z",
    )
    .ok()
    .map(|t| t.timestamp_micros())
}

/// How to place a time of day that carries no year and no zone (klog headers,
/// syslog prefixes) on the time line.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// The zone wall times are read in (the edge decides: `--utc`, or the
    /// machine's).
    pub zone: Zone,
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
pub struct Impossible {
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
pub struct Placer {
    clock: Clock,
    last: Option<(i32, Micros)>,
}

/// A jump back by more than this is a new year, not a clock set back.
const YEAR_WRAP: Micros = 183 * 86_400 * SECOND;

impl Placer {
    #[must_use]
    pub fn new(clock: Clock) -> Self {
        Self { clock, last: None }
    }

    pub fn place(&mut self, w: WallTime) -> Result<Micros, Impossible> {
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
        self.zone.instant(naive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            zone: Zone::Utc,
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
            zone: Zone::Utc,
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
