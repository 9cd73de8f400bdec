//! How starts are shown (design 5.5, 3.3): the `starts` array of the JSON
//! contract (field names are a contract: add, never rename), the table,
//! and the fleet line under it.

use serde::{Deserialize, Serialize};

use sentinel_core::time::Micros;
use sentinel_core::time::{Zone, human, rfc3339};
use sentinel_core::tracker::{Incident, Phase, Start};

use super::{columns, terminal_text};

/// One phase of a start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PhaseOut {
    pub phase: String,
    pub from: String,
    pub to: String,
    pub ms: i64,
}

/// One start, as the JSON contract has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StartOut {
    pub node: String,
    pub host: String,
    pub started_at: String,
    pub kubelet_version: Option<String>,
    pub registered_at: Option<String>,
    pub ready_at: Option<String>,
    pub time_to_ready_ms: Option<i64>,
    pub phases: Vec<PhaseOut>,
    pub slowest: Option<String>,
    pub verdict: String,
    pub incidents: Vec<String>,
}

impl StartOut {
    #[must_use]
    pub(crate) fn new(s: &Start) -> Self {
        Self {
            node: s.node.clone(),
            host: s.host.clone(),
            started_at: rfc3339(s.started_at),
            kubelet_version: s.kubelet_version.clone(),
            registered_at: s.registered_at.map(rfc3339),
            ready_at: s.ready_at.map(rfc3339),
            time_to_ready_ms: s.time_to_ready_ms(),
            phases: s
                .phases()
                .iter()
                .map(|p| PhaseOut {
                    phase: p.phase.as_str().to_string(),
                    from: rfc3339(p.from),
                    to: rfc3339(p.to),
                    ms: p.ms(),
                })
                .collect(),
            slowest: s.slowest().map(|p| p.as_str().to_string()),
            verdict: s.verdict.as_str().to_string(),
            incidents: s.incidents.clone(),
        }
    }
}

/// Where in a kubelet start an incident opened.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StartPlaceOut {
    /// The start (`kubelet-sentinel starts`).
    pub started_at: String,
    /// The mark before it: `start`, `register-attempt`, `registered`,
    /// `network`, `ready`.
    pub after: String,
    pub after_ms: i64,
    /// The phase it opened in, once the start has the mark that ends it.
    pub phase: Option<String>,
    /// In words, as `show` and the mail say it.
    pub words: String,
}

impl StartPlaceOut {
    #[must_use]
    pub fn new(p: &sentinel_core::tracker::StartPlace) -> Self {
        Self {
            started_at: rfc3339(p.started_at),
            after: p.after.as_str().to_string(),
            after_ms: p.after_ms,
            phase: p.phase.map(|p| p.as_str().to_string()),
            words: p.words(),
        }
    }
}

/// The fleet's starts in one line: how many, the median and p90 time to
/// Ready, the phase slowest most often.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StartsSummary {
    pub starts: usize,
    pub ready: usize,
    pub median_ms: Option<i64>,
    pub p90_ms: Option<i64>,
    /// The phase slowest most often, and in how many starts.
    pub slowest_most_often: Option<String>,
    pub slowest_count: usize,
}

impl StartsSummary {
    #[must_use]
    pub(crate) fn of(starts: &[StartOut]) -> Self {
        let mut times: Vec<i64> = starts.iter().filter_map(|s| s.time_to_ready_ms).collect();
        times.sort_unstable();
        // Nearest rank: the smallest time at or above the share.
        let rank = |q: f64| -> Option<i64> {
            if times.is_empty() {
                return None;
            }
            let n = times.len() as f64;
            let i = ((q * n).ceil() as usize).clamp(1, times.len()) - 1;
            Some(times[i])
        };
        let mut by_phase: Vec<(usize, &str)> = Phase::NAMES
            .iter()
            .map(|p| {
                let n = starts
                    .iter()
                    .filter(|s| s.slowest.as_deref() == Some(p))
                    .count();
                (n, *p)
            })
            .collect();
        // Most often first; a tie goes to the earlier phase.
        by_phase.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
        let (count, phase) = by_phase.first().copied().unwrap_or((0, ""));
        Self {
            starts: starts.len(),
            ready: times.len(),
            median_ms: rank(0.5),
            p90_ms: rank(0.9),
            slowest_most_often: (count > 0).then(|| phase.to_string()),
            slowest_count: count,
        }
    }

    /// The line under the table.
    #[must_use]
    pub(crate) fn line(&self) -> String {
        let mut l = format!(
            "{} start{}, {} Ready",
            self.starts,
            if self.starts == 1 { "" } else { "s" },
            self.ready
        );
        if let (Some(m), Some(p)) = (self.median_ms, self.p90_ms) {
            l.push_str(&format!(
                "; time to Ready median {}, p90 {}",
                secs(m),
                secs(p)
            ));
        }
        if let Some(p) = &self.slowest_most_often {
            l.push_str(&format!(
                "; slowest phase most often: {p} ({} of {})",
                self.slowest_count, self.ready
            ));
        }
        l.push('\n');
        l
    }
}

/// A phase's or a start's time as people read it: `7ms`, `1.4s`, `366.0s`.
fn secs(ms: i64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

/// Starts as a table, newest first, with the fleet line under it.
#[must_use]
pub(crate) fn table(starts: &[StartOut], zone: Zone) -> String {
    if starts.is_empty() {
        return "no starts\n".to_string();
    }
    let rows: Vec<Vec<String>> = starts
        .iter()
        .map(|s| {
            let started = sentinel_core::time::parse_rfc3339(&s.started_at)
                .map_or_else(|| s.started_at.clone(), |t| human(t, zone));
            let phases: Vec<String> = s
                .phases
                .iter()
                .map(|p| format!("{} {}", p.phase, secs(p.ms)))
                .collect();
            vec![
                started,
                terminal_text(&s.node, 80),
                s.verdict.clone(),
                s.time_to_ready_ms.map_or_else(|| "-".to_string(), secs),
                s.slowest.clone().unwrap_or_else(|| "-".to_string()),
                s.incidents.len().to_string(),
                if phases.is_empty() {
                    "-".to_string()
                } else {
                    phases.join(", ")
                },
            ]
        })
        .collect();
    let mut out = columns(
        &[
            "STARTED",
            "NODE",
            "VERDICT",
            "TO READY",
            "SLOWEST",
            "INCIDENTS",
            "PHASES",
        ],
        &rows,
    );
    out.push_str(&StartsSummary::of(starts).line());
    out
}

/// Tells each incident that opened during a kubelet start the phase it
/// opened in, from the start's record (`start` finds it by host and start
/// time): known once the start has the mark that ends that phase.
pub(crate) fn place_in_starts<E>(
    incidents: &mut [Incident],
    mut start: impl FnMut(&str, Micros) -> Result<Option<Start>, E>,
) -> Result<(), E> {
    for i in incidents {
        let (Some(p), Some(host)) = (i.start, i.host.as_deref()) else {
            continue;
        };
        if p.phase.is_none() {
            if let Some(s) = start(host, p.started_at)? {
                i.start = Some(s.place(i.opened_at));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(ms: Option<i64>, slowest: Option<&str>) -> StartOut {
        StartOut {
            node: "n".into(),
            host: "h".into(),
            started_at: "2026-12-04T09:00:00.000Z".into(),
            kubelet_version: None,
            registered_at: None,
            ready_at: None,
            time_to_ready_ms: ms,
            phases: Vec::new(),
            slowest: slowest.map(str::to_string),
            verdict: "ready".into(),
            incidents: Vec::new(),
        }
    }

    #[test]
    fn the_fleet_line_has_the_median_the_p90_and_the_phase_slowest_most_often() {
        let starts: Vec<StartOut> = [
            (12_000, "network"),
            (1_420, "init"),
            (100_000, "register"),
            (366_000, "network"),
            (5_000, "init"),
            (5_000, "network"),
        ]
        .iter()
        .map(|(ms, p)| out(Some(*ms), Some(p)))
        .chain([out(None, None)])
        .collect();
        let s = StartsSummary::of(&starts);
        assert_eq!((s.starts, s.ready), (7, 6));
        assert_eq!(s.median_ms, Some(5_000));
        assert_eq!(s.p90_ms, Some(366_000));
        assert_eq!(s.slowest_most_often.as_deref(), Some("network"));
        assert_eq!(
            s.line(),
            "7 starts, 6 Ready; time to Ready median 5.0s, p90 366.0s; slowest phase most often: network (3 of 6)\n"
        );
    }
}
