//! A node-status incident's words: a running kubelet cannot update or
//! register its Node (design 5).

use sentinel_core::advice::header_text;
use sentinel_core::time::human_duration;
use sentinel_core::tracker::{AlertKind, Incident, NodeStatus};

use super::{KindWords, alert_span, api_severity, span};

/// The alertname of node-status incidents. Every name posted starts with
/// `KubeletSentinel`, as every shipped Prometheus rule does, and no rule
/// has a posted name (a test reads the rules): kube-prometheus ships its
/// own `KubeletDown`, `KubeNodeNotReady`, ..., and two things under one
/// name would be grouped and inhibited as one.
pub(crate) const ALERTNAME: &str = "KubeletNodeStatusTrouble";

impl KindWords for NodeStatus {
    fn subject(&self, i: &Incident, kind: AlertKind) -> String {
        let node = header_text(&i.node, 100);
        let cause = i.cause().as_str();
        match kind {
            AlertKind::Resolved => format!(
                "[kubelet-sentinel] resolved: {node}, trouble lasted {} ({cause})",
                human_duration(span(i))
            ),
            AlertKind::Repeat => format!(
                "[kubelet-sentinel] still failing: {node}: {} node status retries in {} ({cause})",
                i.counted_retries(),
                human_duration(span(i))
            ),
            AlertKind::Opened => format!(
                "[kubelet-sentinel] {node}: {} node status retries in {} ({cause})",
                i.counted_retries(),
                human_duration(span(i))
            ),
        }
    }

    fn counters(&self, _i: &Incident) -> String {
        let c = &self.counters;
        let mut parts = Vec::new();
        for (n, what) in [
            (c.retries, "status retries"),
            (c.exhausted, "exhausted retry cycles"),
            (c.register_failures, "failed registrations"),
            (c.lister_misses, "lister misses"),
            (c.lease_failures, "lease failures"),
            (c.watch_failures, "watch failures"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        parts.join(", ")
    }

    fn count_cell(&self) -> String {
        self.counters.counted_retries().to_string()
    }

    fn count_label(&self) -> &'static str {
        "retries"
    }

    fn group_words(&self) -> &'static str {
        "node status retries"
    }

    fn alertname(&self) -> &'static str {
        ALERTNAME
    }

    fn kind_label(&self) -> bool {
        false
    }

    fn severity(&self, i: &Incident) -> &'static str {
        api_severity(i.cause())
    }

    fn summary(&self, i: &Incident) -> String {
        format!(
            "{}: {} node status retries in {} ({})",
            sentinel_core::tracker::one_line(&i.node, 200),
            self.counters.counted_retries(),
            human_duration(alert_span(i)),
            i.cause().as_str()
        )
    }
}
