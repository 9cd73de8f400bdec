//! How incidents are shown: the JSON contract of design section 3.3 (field
//! names are a contract: add, never rename), the table for people, and the
//! `--details` view with the timeline.

use std::fmt::Write as _;

use serde::Serialize;

use crate::pipeline::Summary;
use crate::time::{Micros, clock, human_duration, rfc3339, short};
use crate::tracker::{Incident, Settings, Status, one_line};

#[derive(Debug, Serialize)]
pub struct SummaryOut {
    pub entries: u64,
    pub kubelet_lines: u64,
    pub recognized: u64,
    pub unparsed: u64,
    pub lines: u64,
    pub continuations: u64,
    pub malformed: u64,
    pub first_at: Option<String>,
    pub last_at: Option<String>,
    pub nodes: Vec<String>,
}

impl SummaryOut {
    #[must_use]
    pub fn new(s: &Summary) -> Self {
        Self {
            entries: s.entries,
            kubelet_lines: s.kubelet_lines,
            recognized: s.recognized,
            unparsed: s.unparsed,
            lines: s.lines,
            continuations: s.continuations,
            malformed: s.malformed,
            first_at: s.first_at.map(rfc3339),
            last_at: s.last_at.map(rfc3339),
            nodes: s.nodes.iter().cloned().collect(),
        }
    }
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct EvidenceOut {
    pub at: String,
    pub cursor: Option<String>,
    pub signal: &'static str,
    pub text: String,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct IncidentOut {
    pub id: String,
    pub node: String,
    pub host: Option<String>,
    pub status: &'static str,
    pub verdict: &'static str,
    pub cause: &'static str,
    pub opened_at: String,
    pub last_signal_at: String,
    pub resolved_at: Option<String>,
    pub retries: u64,
    pub exhausted: u64,
    pub lister_misses: u64,
    pub register_failures: u64,
    pub lease_failures: u64,
    pub watch_failures: u64,
    pub alerted_at: Option<String>,
    pub diagnosis: String,
    pub evidence: Vec<EvidenceOut>,
}

impl IncidentOut {
    #[must_use]
    pub fn new(i: &Incident, s: &Settings) -> Self {
        Self {
            id: i.id.clone(),
            node: i.node.clone(),
            host: i.host.clone(),
            status: match i.status() {
                Status::Open => "open",
                Status::Resolved => "resolved",
            },
            verdict: i.verdict(s).as_str(),
            cause: i.cause().as_str(),
            opened_at: rfc3339(i.opened_at),
            last_signal_at: rfc3339(i.last_signal_at),
            resolved_at: i.resolved_at.map(rfc3339),
            retries: i.retries,
            exhausted: i.exhausted,
            lister_misses: i.lister_misses,
            register_failures: i.register_failures,
            lease_failures: i.lease_failures,
            watch_failures: i.watch_failures,
            alerted_at: i.alerted_at.map(rfc3339),
            diagnosis: i.diagnosis(s),
            evidence: i
                .evidence()
                .map(|e| EvidenceOut {
                    at: rfc3339(e.at),
                    cursor: e.cursor.clone(),
                    signal: e.signal.as_str(),
                    text: e.text.clone(),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ScanOut {
    pub summary: SummaryOut,
    pub incidents: Vec<IncidentOut>,
}

/// Incidents in the order people read them: oldest first.
pub fn sort(incidents: &mut [Incident]) {
    incidents.sort_by(|a, b| (a.opened_at, &a.node).cmp(&(b.opened_at, &b.node)));
}

#[must_use]
pub fn scan_json(summary: &Summary, incidents: &[Incident], s: &Settings) -> String {
    let out = ScanOut {
        summary: SummaryOut::new(summary),
        incidents: incidents.iter().map(|i| IncidentOut::new(i, s)).collect(),
    };
    serde_json::to_string_pretty(&out).unwrap_or_default() + "\n"
}

fn duration_of(i: &Incident) -> Micros {
    i.resolved_at.unwrap_or(i.last_signal_at) - i.opened_at
}

/// One row per incident.
#[must_use]
pub fn table(incidents: &[Incident], s: &Settings) -> String {
    let header = [
        "ID",
        "NODE",
        "STATUS",
        "VERDICT",
        "CAUSE",
        "RETRIES",
        "OPENED (UTC)",
        "DURATION",
    ];
    let rows: Vec<[String; 8]> = incidents
        .iter()
        .map(|i| {
            let o = IncidentOut::new(i, s);
            [
                o.id,
                one_line(&o.node, 60),
                o.status.to_string(),
                o.verdict.to_string(),
                o.cause.to_string(),
                i.counted_retries().to_string(),
                short(i.opened_at),
                human_duration(duration_of(i)),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let mut l = String::new();
        for (n, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if n + 1 == cells.len() {
                l.push_str(cell);
            } else {
                let _ = write!(l, "{cell:<w$}  ");
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header);
    for r in &rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        line(&cells);
    }
    out
}

#[must_use]
pub fn summary_line(summary: &Summary, incidents: &[Incident]) -> String {
    let open = incidents
        .iter()
        .filter(|i| i.status() == Status::Open)
        .count();
    let nodes: std::collections::BTreeSet<&str> =
        incidents.iter().map(|i| i.node.as_str()).collect();
    let mut s = format!(
        "{} incident{} ({open} open) on {} node{}; {} entries read, {} kubelet lines, {} recognized, {} unparsed",
        incidents.len(),
        if incidents.len() == 1 { "" } else { "s" },
        nodes.len(),
        if nodes.len() == 1 { "" } else { "s" },
        summary.entries,
        summary.kubelet_lines,
        summary.recognized,
        summary.unparsed,
    );
    if summary.malformed > 0 {
        let _ = write!(s, ", {} malformed records skipped", summary.malformed);
    }
    if let (Some(a), Some(b)) = (summary.first_at, summary.last_at) {
        let _ = write!(s, "; from {} to {}", rfc3339(a), rfc3339(b));
    }
    s.push('\n');
    s
}

/// The diagnosis and the timeline of one incident, with millisecond deltas
/// from its opening.
#[must_use]
pub fn details(i: &Incident, s: &Settings) -> String {
    let o = IncidentOut::new(i, s);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "incident {}  node {}  host {}",
        o.id,
        one_line(&o.node, 120),
        o.host.as_deref().map_or("-".into(), |h| one_line(h, 120))
    );
    let _ = writeln!(
        out,
        "  {}  verdict {}  cause {}  opened {}{}",
        o.status,
        o.verdict,
        o.cause,
        o.opened_at,
        o.resolved_at
            .as_deref()
            .map(|r| format!("  resolved {r}"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "  retries {}  exhausted {}  lister misses {}  register failures {}  lease failures {}  watch failures {}",
        o.retries,
        o.exhausted,
        o.lister_misses,
        o.register_failures,
        o.lease_failures,
        o.watch_failures
    );
    let _ = writeln!(out, "  diagnosis: {}", o.diagnosis);
    let _ = writeln!(out, "  timeline:");
    for (n, e) in i.evidence().enumerate() {
        if n == i.evidence_head.len() && i.evidence_dropped > 0 {
            let _ = writeln!(out, "    … {} lines not kept …", i.evidence_dropped);
        }
        let delta = (e.at - i.opened_at) / 1000;
        let _ = writeln!(
            out,
            "    {:>+9}ms  {}  {:<16}  {}",
            delta,
            clock(e.at),
            e.signal.as_str(),
            one_line(&e.text, 240)
        );
    }
    out
}
