//! A kubelet-down incident's words: the kubelet crash-looping, or failed
//! with systemd given up (design 5.1).

use sentinel_core::advice::header_text;
use sentinel_core::time::human_duration;
use sentinel_core::tracker::{AlertKind, Down, Incident};

use super::{KindWords, alert_span, span};

/// The alertname of kubelet-down incidents (design 5.1); their alerts also
/// carry a `kind` label (node-status alerts keep the labels they had, so
/// their fingerprints do not change on upgrade).
pub(crate) const ALERTNAME_DOWN: &str = "KubeletServiceDown";

impl KindWords for Down {
    fn subject(&self, i: &Incident, kind: AlertKind) -> String {
        let node = header_text(&i.node, 100);
        let cause = i.cause().as_str();
        let what = if self.gave_up_at.is_some() {
            "kubelet failed, systemd gave up"
        } else {
            "kubelet crash-looping"
        };
        match kind {
            AlertKind::Resolved => format!(
                "[kubelet-sentinel] resolved: {node}, kubelet down for {} ({cause})",
                human_duration(span(i))
            ),
            AlertKind::Repeat => format!(
                "[kubelet-sentinel] still failing: {node}: {what}, {} restarts in {} ({cause})",
                self.restarts,
                human_duration(span(i))
            ),
            AlertKind::Opened => format!(
                "[kubelet-sentinel] {node}: {what}, {} restarts in {} ({cause})",
                self.restarts,
                human_duration(span(i))
            ),
        }
    }

    fn counters(&self, _i: &Incident) -> String {
        let mut parts = vec![format!(
            "{} restart{} by systemd",
            self.restarts,
            if self.restarts == 1 { "" } else { "s" }
        )];
        if self.exits > 0 {
            parts.push(format!("{} failed exits", self.exits));
        }
        if self.fatals > 0 {
            parts.push(format!("{} fatal lines", self.fatals));
        }
        if let Some(e) = &self.last_exit {
            parts.push(format!("last exit {}", header_text(e, 80)));
        }
        parts.join(", ")
    }

    fn count_cell(&self) -> String {
        self.restarts.to_string()
    }

    fn count_label(&self) -> &'static str {
        "restarts"
    }

    fn group_words(&self) -> &'static str {
        "kubelets down"
    }

    fn alertname(&self) -> &'static str {
        ALERTNAME_DOWN
    }

    /// The kubelet is not running: the node is going `NotReady`.
    fn severity(&self, _i: &Incident) -> &'static str {
        "critical"
    }

    fn summary(&self, i: &Incident) -> String {
        format!(
            "{}: kubelet down, {} restarts in {} ({})",
            sentinel_core::tracker::one_line(&i.node, 200),
            self.restarts,
            human_duration(alert_span(i)),
            i.cause().as_str()
        )
    }
}
