//! The alert email's words for not-ready incidents (design 5.3): the node
//! not ready while its kubelet runs. Pure.

use crate::time::human_duration;
use crate::tracker::{AlertKind, Incident, NotReady, Settings};

use super::render::header_text;

/// How long it has been not ready: first to last not-ready line.
fn lasted(i: &Incident) -> String {
    human_duration(i.last_trouble_at - i.opened_at)
}

/// One incident's subject.
pub(super) fn subject(i: &Incident, kind: AlertKind) -> String {
    let node = header_text(&i.node, 100);
    let cause = i.cause().as_str();
    match kind {
        AlertKind::Resolved => format!(
            "[kubelet-sentinel] resolved: {node} ready again, not ready for {} ({cause})",
            lasted(i)
        ),
        AlertKind::Repeat => format!(
            "[kubelet-sentinel] still not ready: {node} for {} ({cause})",
            lasted(i)
        ),
        AlertKind::Opened => format!(
            "[kubelet-sentinel] {node}: not ready for {} while its kubelet runs ({cause})",
            lasted(i)
        ),
    }
}

/// Its counters: its lines, and the causes they voted for.
pub(super) fn counters(i: &Incident, r: &NotReady) -> String {
    let votes: Vec<String> = i
        .causes
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| format!("{c} {n}"))
        .collect();
    format!(
        "{} not-ready line{} ({})",
        r.not_ready_signals,
        if r.not_ready_signals == 1 { "" } else { "s" },
        votes.join(", ")
    )
}

/// What `persistent` means for it.
pub(super) fn persistent(s: &Settings) -> String {
    format!(
        "persistent: not ready longer than {}",
        human_duration(s.not_ready_after)
    )
}
