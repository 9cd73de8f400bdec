//! An incident's timeline as a picture: its signals over time, lane by lane,
//! with the markers around it (registration or kubelet start, caches
//! synced, the threshold crossing, node ready or the quiet resolution). One
//! model ([`Picture`], part of the JSON contract as `timeline`), drawn as
//! text for `show` and as an HTML table for the mail (inline styles only:
//! no script, no image, so common mail clients show it). Pure.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::signals::SignalKind;
use crate::time::{Micros, Zone, human, human_duration};
use crate::tracker::{Incident, Resolution};

/// Columns of the drawing.
pub const COLUMNS: usize = 60;

/// What a marker of the picture marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    Registered,
    KubeletStarted,
    CachesSynced,
    OverThreshold,
    NodeReady,
    Quiet,
    Closed,
}

crate::kinds::spelling!(MarkerKind {
    Registered => "registered",
    KubeletStarted => "kubelet-started",
    CachesSynced => "caches-synced",
    OverThreshold => "over-threshold",
    NodeReady => "node-ready",
    Quiet => "quiet",
    Closed => "closed",
});

impl MarkerKind {
    /// The anchor an incident's start is measured from, as a marker.
    #[must_use]
    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
    )]
    pub fn of_anchor(kind: SignalKind) -> Self {
        match kind {
            SignalKind::Registered => MarkerKind::Registered,
            _ => MarkerKind::KubeletStarted,
        }
    }

    pub(crate) fn symbol(self) -> char {
        match self {
            MarkerKind::Registered => 'R',
            MarkerKind::KubeletStarted => 'S',
            MarkerKind::CachesSynced => 'C',
            MarkerKind::OverThreshold => '▲',
            MarkerKind::NodeReady => '●',
            MarkerKind::Quiet => '○',
            MarkerKind::Closed => '×',
        }
    }

    pub(crate) fn words(self) -> &'static str {
        match self {
            MarkerKind::Registered => "registered",
            MarkerKind::KubeletStarted => "kubelet started",
            MarkerKind::CachesSynced => "caches synced",
            MarkerKind::OverThreshold => "over the threshold",
            MarkerKind::NodeReady => "node ready",
            MarkerKind::Quiet => "resolved by quiet",
            MarkerKind::Closed => "closed, not resolved",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// Epoch milliseconds.
    pub at_ms: i64,
    pub kind: MarkerKind,
    /// Where it is drawn, when not at `at_ms`: a marker within the
    /// signals' buckets is drawn at its bucket's start, as the signals
    /// counted there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drawn_at_ms: Option<i64>,
    /// It came before the picture's start (a registration long before
    /// the trouble): `at_ms` is the start, and it is not drawn (first-hour
    /// N25: it was drawn in the first column as if it had just happened).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub before: bool,
}

impl Marker {
    #[must_use]
    pub fn drawn(&self) -> i64 {
        self.drawn_at_ms.unwrap_or(self.at_ms)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Picture {
    /// Epoch milliseconds of the first and past the last column.
    pub start_ms: i64,
    pub end_ms: i64,
    /// Signal counts per column, by lane (signal kind).
    pub lanes: Vec<(String, Vec<u32>)>,
    pub markers: Vec<Marker>,
}

/// The column of an offset into a span (both in one unit).
fn column_of(offset: i64, span: i64) -> usize {
    let span = span.max(1);
    let c = i128::from(offset.clamp(0, span - 1)) * COLUMNS as i128 / i128::from(span);
    (c as usize).min(COLUMNS - 1)
}

/// What one column stands for, not rounded down to a whole unit: 112 s
/// over 60 columns is "1.9s", not "1s".
fn column_width(span_us: i64) -> String {
    let us = span_us as f64 / COLUMNS as f64;
    let tidy = |v: f64, unit: &str| {
        let t = format!("{v:.1}");
        format!("{}{unit}", t.strip_suffix(".0").unwrap_or(&t))
    };
    if us < 1_000.0 {
        format!("{}µs", us.round().max(1.0))
    } else if us < 10_000.0 {
        tidy(us / 1_000.0, "ms")
    } else if us < 1_000_000.0 {
        format!("{:.0}ms", us / 1_000.0)
    } else if us < 60_000_000.0 {
        tidy(us / 1_000_000.0, "s")
    } else {
        human_duration(us as i64)
    }
}

/// A marker within the signals' buckets is drawn at its bucket's start,
/// as the signals counted there are: the picture is no finer than its
/// counts (a retry and the threshold it crossed 5 ms later, counted in one
/// bucket, share a column, not 48 columns apart).
fn snap(t: &crate::tracker::timeline::Timeline, at: Micros) -> Micros {
    if t.width > 0 && at >= t.start && at < t.end() {
        t.start + (at - t.start) / t.width * t.width
    } else {
        at
    }
}

impl Picture {
    /// The picture of an incident; `None` when it has no signal counts (an
    /// incident stored before they were kept).
    #[must_use]
    pub fn of(i: &Incident) -> Option<Self> {
        let t = &i.timeline;
        if t.is_empty() {
            return None;
        }
        let mut markers: Vec<(Micros, MarkerKind)> = Vec::new();
        if let Some(a) = i.anchor {
            markers.push((a.at, MarkerKind::of_anchor(a.kind)));
        }
        if let Some(c) = i.detail.caches_synced_at() {
            markers.push((c, MarkerKind::CachesSynced));
        }
        if let Some(o) = i.over_threshold_at {
            markers.push((o, MarkerKind::OverThreshold));
        }
        match (i.resolution, i.resolved_at) {
            (Some(Resolution::NodeReady), Some(r)) => markers.push((r, MarkerKind::NodeReady)),
            (Some(Resolution::Quiet), Some(r)) => markers.push((r, MarkerKind::Quiet)),
            (Some(Resolution::Evicted | Resolution::SourceChanged), Some(r)) => {
                markers.push((r, MarkerKind::Closed));
            }
            _ => {}
        }
        // The quiet resolution lies resolve_after past the trouble: drawn at
        // the edge, not stretching the picture by a minute of nothing.
        // Signals are drawn at their bucket's start, so the picture ends
        // at the last signal itself, not at its bucket's end.
        let signals_end = (i.last_signal_at + 1).max(t.start + 1);
        let start = markers
            .iter()
            .map(|(at, _)| *at)
            .filter(|&at| at >= t.start - 60 * crate::time::SECOND)
            .fold(t.start, Micros::min);
        let end = markers
            .iter()
            .filter(|(_, k)| *k != MarkerKind::Quiet)
            .map(|(at, _)| *at + 1)
            .fold(signals_end, Micros::max);
        let span = (end - start).max(1);
        let col = |at: Micros| column_of(at - start, span);
        let mut lanes: Vec<(String, Vec<u32>)> = Vec::new();
        for (lane, counts) in &t.lanes {
            let mut cols = vec![0u32; COLUMNS];
            for (b, &n) in counts.iter().enumerate() {
                if n > 0 {
                    // At the bucket's start: the first bucket starts at the
                    // incident's first signal, so a start-up race's retry is
                    // drawn where it happened, not half a bucket later.
                    let at = t.start + b as Micros * t.width;
                    let c = col(at.min(end - 1));
                    cols[c] = cols[c].saturating_add(n);
                }
            }
            lanes.push((lane.clone(), cols));
        }
        // Trouble first, in a fixed order.
        let order = [
            "status-retry",
            "status-exhausted",
            "register-failed",
            "lister-miss",
            "lease-failed",
            "watch-failed",
        ];
        lanes.sort_by_key(|(l, _)| order.iter().position(|o| o == l).unwrap_or(order.len()));
        Some(Self {
            start_ms: start / 1000,
            end_ms: end / 1000,
            lanes,
            markers: markers
                .into_iter()
                .map(|(at, k)| {
                    let at_ms = at.clamp(start, end) / 1000;
                    let drawn = snap(t, at).clamp(start, end) / 1000;
                    Marker {
                        at_ms,
                        kind: k,
                        drawn_at_ms: (drawn != at_ms).then_some(drawn),
                        // Long before the trouble (more than the minute the
                        // picture reaches back): not drawn in the first
                        // column as if it had just happened.
                        before: at < start,
                    }
                })
                .collect(),
        })
    }

    #[must_use]
    pub fn column(&self, at_ms: i64) -> usize {
        column_of(at_ms - self.start_ms, self.end_ms - self.start_ms)
    }

    fn max(&self) -> u32 {
        self.lanes
            .iter()
            .flat_map(|(_, c)| c.iter().copied())
            .max()
            .unwrap_or(0)
            .max(1)
    }

    /// For a terminal: a row of blocks per lane (taller: more signals in
    /// that stretch of time), a row of markers, a legend.
    #[must_use]
    pub fn text(&self, zone: Zone) -> String {
        const LEVELS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
        let max = self.max();
        let span_us = (self.end_ms - self.start_ms) * 1000;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "  {} → {} ({}; a column is {})",
            human(self.start_ms * 1000, zone),
            human(self.end_ms * 1000, zone),
            human_duration(span_us),
            column_width(span_us)
        );
        for (lane, cols) in &self.lanes {
            let row: String = cols
                .iter()
                .map(|&n| {
                    if n == 0 {
                        ' '
                    } else {
                        LEVELS[(1 + (n as usize * 7) / max as usize).min(8)]
                    }
                })
                .collect();
            let total: u32 = cols.iter().sum();
            let _ = writeln!(out, "  {lane:<17}│{row}│ {total}");
        }
        if !self.markers.is_empty() {
            let (drawn, legend) = self.marker_row();
            let row: String = drawn
                .iter()
                .map(|k| k.map_or(' ', MarkerKind::symbol))
                .collect();
            let _ = writeln!(out, "  {:<17}│{row}│", "markers");
            let _ = writeln!(out, "  {:<17} {}", "", legend.join("  "));
        }
        out
    }

    /// The marker drawn in each column (the last of those that share it)
    /// and the legend: what is drawn, and what shares a column with it.
    fn marker_row(&self) -> (Vec<Option<MarkerKind>>, Vec<String>) {
        let mut row: Vec<Option<MarkerKind>> = vec![None; COLUMNS];
        let shown = || self.markers.iter().filter(|m| !m.before);
        for m in shown() {
            row[self.column(m.drawn())] = Some(m.kind);
        }
        let mut legend: Vec<String> = Vec::new();
        for m in shown() {
            let shown = row[self.column(m.drawn())].unwrap_or(m.kind);
            let words = if shown == m.kind {
                format!("{} {}", m.kind.symbol(), m.kind.words())
            } else {
                format!(
                    "{} {} (under {})",
                    m.kind.symbol(),
                    m.kind.words(),
                    shown.symbol()
                )
            };
            if !legend.contains(&words) {
                legend.push(words);
            }
        }
        (row, legend)
    }

    /// For the mail: a table of small cells, darker for more signals, and a
    /// row of markers; inline styles only.
    #[must_use]
    pub fn html(&self) -> String {
        let max = self.max();
        let cell = "width:6px;height:14px;padding:0;";
        let mut out = String::from(
            "<table cellpadding=\"0\" cellspacing=\"1\" style=\"border-collapse:separate;font-family:monospace;font-size:11px\">\n",
        );
        for (lane, cols) in &self.lanes {
            let total: u32 = cols.iter().sum();
            out.push_str(&format!(
                "<tr><td style=\"padding-right:6px;white-space:nowrap\">{lane}</td>"
            ));
            for &n in cols {
                // White to deep red by the share of the busiest column.
                let shade = if n == 0 {
                    "#f2f2f2".to_string()
                } else {
                    let f = 0.25 + 0.75 * f64::from(n) / f64::from(max);
                    let g = (235.0 * (1.0 - f)) as u8;
                    format!("#d7{g:02x}{g:02x}")
                };
                out.push_str(&format!(
                    "<td style=\"{cell}background-color:{shade}\" title=\"{n}\"></td>"
                ));
            }
            out.push_str(&format!(
                "<td style=\"padding-left:6px\">{total}</td></tr>\n"
            ));
        }
        let (drawn, legend) = self.marker_row();
        if !self.markers.is_empty() {
            out.push_str("<tr><td style=\"padding-right:6px\">markers</td>");
            for s in drawn
                .iter()
                .map(|k| k.map_or(String::new(), |k| k.symbol().to_string()))
            {
                out.push_str(&format!(
                    "<td style=\"{cell}text-align:center;color:#1a5276\">{s}</td>"
                ));
            }
            out.push_str("<td></td></tr>\n");
        }
        out.push_str("</table>\n");
        out.push_str(&format!(
            "<p style=\"font-size:11px;color:#555\">{} to {}. {}</p>\n",
            human(self.start_ms * 1000, Zone::Utc),
            human(self.end_ms * 1000, Zone::Utc),
            legend.join(" &nbsp; ")
        ));
        out
    }
}
