//! A host-silent incident's words: a host's journal stopped (design 5.2).

use sentinel_core::advice::header_text;
use sentinel_core::time::{human_duration, rfc3339};
use sentinel_core::tracker::{AlertKind, Incident, Silent};

use super::{KindWords, when};

/// The alertname of host-silent incidents (design 5.2), with a `kind`
/// label. Not the Prometheus rule's `KubeletSentinelHostStale` (from the
/// metric): a deployment with both sees two alerts, never one that
/// resolves the other.
pub(crate) const ALERTNAME_SILENT: &str = "KubeletHostSilent";

impl KindWords for Silent {
    fn subject(&self, i: &Incident, kind: AlertKind) -> String {
        let last = self.last_entry_at;
        let node = header_text(&i.node, 100);
        let host = header_text(i.host.as_deref().unwrap_or(&i.node), 100);
        match kind {
            AlertKind::Resolved => format!(
                "[kubelet-sentinel] resolved: host {host} writes again after {} of silence (node {node})",
                human_duration(i.resolved_at.unwrap_or(i.opened_at) - last)
            ),
            AlertKind::Repeat => format!(
                "[kubelet-sentinel] still silent: host {host} since {} (node {node})",
                when(last)
            ),
            AlertKind::Opened => format!(
                "[kubelet-sentinel] host {host} silent since {} (node {node})",
                when(last)
            ),
        }
    }

    fn counters(&self, i: &Incident) -> String {
        format!(
            "last entry {}, silent since {}",
            when(self.last_entry_at),
            when(i.opened_at)
        )
    }

    fn count_cell(&self) -> String {
        "-".to_string()
    }

    fn count_label(&self) -> &'static str {
        "-"
    }

    fn group_words(&self) -> &'static str {
        "hosts silent"
    }

    fn alertname(&self) -> &'static str {
        ALERTNAME_SILENT
    }

    /// Nothing known of the node, good or bad: the operator should look.
    fn severity(&self, _i: &Incident) -> &'static str {
        "warning"
    }

    fn summary(&self, i: &Incident) -> String {
        format!(
            "host {} (node {}) silent since {}",
            sentinel_core::tracker::one_line(i.host.as_deref().unwrap_or(&i.node), 200),
            sentinel_core::tracker::one_line(&i.node, 200),
            rfc3339(self.last_entry_at)
        )
    }
}
