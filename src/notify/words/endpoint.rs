//! An endpoint incident's words: one API endpoint lost by several nodes at
//! once, one outage (design 5.2).

use sentinel_core::advice::header_text;
use sentinel_core::time::human_duration;
use sentinel_core::tracker::{AlertKind, Incident, Outage};

use super::{KindWords, alert_span, api_severity, endpoint_words, span};

/// Endpoint incidents: one API endpoint lost by several nodes at once
/// (labels `api_endpoint` and `cause`; `node` is the endpoint). The
/// shipped Alertmanager example inhibits [`ALERTNAME`](super::node_status::ALERTNAME) alerts of
/// equal `api_endpoint` and `cause` while it fires.
pub(crate) const ALERTNAME_ENDPOINT: &str = "KubeletAPIEndpointDown";

impl KindWords for Outage {
    fn subject(&self, i: &Incident, kind: AlertKind) -> String {
        let cause = i.cause().as_str();
        let ep = header_text(&self.endpoint, 100);
        let n = self.nodes.len();
        match kind {
            AlertKind::Resolved => format!(
                "[kubelet-sentinel] resolved: {ep} for {n} nodes, outage lasted {} ({cause})",
                human_duration(span(i))
            ),
            AlertKind::Repeat => format!(
                "[kubelet-sentinel] still failing: {ep} {} from {n} nodes ({cause})",
                endpoint_words(i.cause())
            ),
            AlertKind::Opened => format!(
                "[kubelet-sentinel] {ep} {} from {n} nodes ({cause})",
                endpoint_words(i.cause())
            ),
        }
    }

    fn counters(&self, _i: &Incident) -> String {
        format!("{} nodes", self.nodes.len())
    }

    fn count_cell(&self) -> String {
        self.nodes.len().to_string()
    }

    fn count_label(&self) -> &'static str {
        "nodes"
    }

    fn group_words(&self) -> &'static str {
        "API endpoints failing"
    }

    fn lost_nodes(&self, i: &Incident, rows: usize) -> Option<String> {
        let shown: Vec<String> = self
            .nodes
            .iter()
            .take(rows)
            .map(|n| header_text(n, 60))
            .collect();
        let more = self.nodes.len() - shown.len();
        let tail = if more > 0 {
            format!(
                " … and {more} more; `kubelet-sentinel show {}` lists them all",
                i.id
            )
        } else {
            String::new()
        };
        Some(format!(
            "{} nodes lost {} ({}): {}{tail}.",
            self.nodes.len(),
            header_text(&self.endpoint, 270),
            i.cause().as_str(),
            shown.join(", ")
        ))
    }

    fn alertname(&self) -> &'static str {
        ALERTNAME_ENDPOINT
    }

    fn severity(&self, i: &Incident) -> &'static str {
        api_severity(i.cause())
    }

    fn summary(&self, i: &Incident) -> String {
        format!(
            "{}: lost by {} nodes for {} ({})",
            sentinel_core::tracker::one_line(&self.endpoint, 270),
            self.nodes.len(),
            human_duration(alert_span(i)),
            i.cause().as_str()
        )
    }
}
