//! endpoint incidents (design 5.2): one API endpoint lost by several
//! nodes at once, one outage. Its own data and its diagnosis; it is
//! derived from its nodes' incidents (`tracker/endpoint/`).

use serde::{Deserialize, Serialize};

use crate::signals::Cause;
use crate::tracker::incident::IncidentOf;
use crate::tracker::words::{cause_explanation, one_line};

/// An endpoint incident's own data: one outage of several nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outage {
    /// The API endpoint (`host:port`) its nodes lost.
    pub endpoint: String,
    /// Its nodes, in the order they joined.
    pub nodes: Vec<String>,
    /// Their hosts (for whether its trouble is live).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
}

impl Outage {
    /// One paragraph for a person: which endpoint, how many nodes, since when.
    pub(crate) fn diagnosis<D>(&self, i: &IncidentOf<D>, cause: Cause) -> String {
        let o = self;
        let ep = &o.endpoint;
        let shown: Vec<&str> = o.nodes.iter().take(10).map(String::as_str).collect();
        let more = o.nodes.len().saturating_sub(shown.len());
        let mut parts = vec![format!(
            "{} nodes lost API endpoint {} ({}) from {}: {}{}.",
            o.nodes.len(),
            one_line(ep, 270),
            cause.as_str(),
            crate::time::clock(i.opened_at),
            one_line(&shown.join(", "), 600),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )];
        parts.push(format!(
            "The errors point at {}: {}; one outage, not a problem of each node.",
            cause.as_str(),
            cause_explanation(cause)
        ));
        if let Some(at) = i.resolved_at {
            parts.push(format!(
                "Resolved at {} when the last of its nodes' incidents resolved.",
                crate::time::clock(at)
            ));
        }
        if let Some(e) = i.first_evidence() {
            parts.push(format!("First error: {}", one_line(&e.text, 300)));
        }
        parts.join(" ")
    }
}
