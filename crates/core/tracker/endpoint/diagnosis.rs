//! An endpoint incident in a paragraph for a person.

use super::{Incident, Outage, one_line};

impl Incident {
    /// One paragraph for a person: which endpoint, how many nodes, since when.
    pub(in crate::tracker) fn endpoint_diagnosis(&self, o: &Outage) -> String {
        let cause = self.cause();
        let ep = &o.endpoint;
        let shown: Vec<&str> = o.nodes.iter().take(10).map(String::as_str).collect();
        let more = o.nodes.len().saturating_sub(shown.len());
        let mut parts = vec![format!(
            "{} nodes lost API endpoint {} ({}) from {}: {}{}.",
            o.nodes.len(),
            one_line(ep, 270),
            cause.as_str(),
            crate::time::clock(self.opened_at),
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
            super::super::cause_explanation(cause)
        ));
        if let Some(at) = self.resolved_at {
            parts.push(format!(
                "Resolved at {} when the last of its nodes' incidents resolved.",
                crate::time::clock(at)
            ));
        }
        if let Some(e) = self.first_evidence() {
            parts.push(format!("First error: {}", one_line(&e.text, 300)));
        }
        parts.join(" ")
    }
}
