//! A not-ready incident's words (design 5.3): the node not ready while its
//! kubelet runs.

use sentinel_core::advice::header_text;
use sentinel_core::time::human_duration;
use sentinel_core::tracker::{AlertKind, Incident, NotReady, Resolution, Settings};

use super::KindWords;

/// Not-ready incidents (design 5.3): the node not ready while its kubelet
/// runs, with labels `kind`, `cause` and `verdict`. Not kube-prometheus's
/// `KubeNodeNotReady`; the shipped Alertmanager example inhibits it while
/// the node's [`ALERTNAME_DOWN`](super::kubelet_down::ALERTNAME_DOWN) fires.
pub(crate) const ALERTNAME_NOT_READY: &str = "KubeletNodeNotReady";

/// How long it has been not ready: first to last not-ready line.
fn lasted(i: &Incident) -> String {
    human_duration(i.last_trouble_at - i.opened_at)
}

/// How it ended, in words: "ready again" only when the node said so.
fn ended(i: &Incident) -> &'static str {
    match i.resolution {
        Some(Resolution::NodeReady) => "ready again",
        Some(Resolution::Stopped) => "stopped (its kubelet was stopped)",
        Some(Resolution::Quiet) => "quiet (no not-ready line since)",
        Some(
            Resolution::Evicted
            | Resolution::SourceChanged
            | Resolution::Wrote
            | Resolution::Rotated
            | Resolution::Rebooted,
        )
        | None => "ended",
    }
}

impl KindWords for NotReady {
    fn subject(&self, i: &Incident, kind: AlertKind) -> String {
        let node = header_text(&i.node, 100);
        let cause = i.cause().as_str();
        match kind {
            AlertKind::Resolved => format!(
                "[kubelet-sentinel] resolved: {node} {}, not ready for {} ({cause})",
                ended(i),
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

    /// Its lines, and the causes they voted for.
    fn counters(&self, i: &Incident) -> String {
        let votes: Vec<String> = i
            .causes
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        format!(
            "{} not-ready line{} ({})",
            self.not_ready_signals,
            if self.not_ready_signals == 1 { "" } else { "s" },
            votes.join(", ")
        )
    }

    fn count_cell(&self) -> String {
        self.not_ready_signals.to_string()
    }

    fn count_label(&self) -> &'static str {
        "lines"
    }

    fn group_words(&self) -> &'static str {
        "nodes not ready"
    }

    fn persistent(&self, s: &Settings) -> String {
        format!(
            "persistent: not ready longer than {}",
            human_duration(s.not_ready_after)
        )
    }

    fn alertname(&self) -> &'static str {
        ALERTNAME_NOT_READY
    }

    /// Not ready past `not_ready_after`: the node runs no new pods.
    fn severity(&self, _i: &Incident) -> &'static str {
        "critical"
    }

    fn summary(&self, i: &Incident) -> String {
        format!(
            "{}: not ready for {} ({})",
            sentinel_core::tracker::one_line(&i.node, 200),
            lasted(i),
            i.cause().as_str()
        )
    }
}

#[cfg(test)]
mod tests {
    use sentinel_core::testing::{End, kubelet, systemd};
    use sentinel_core::time::SECOND;
    use sentinel_core::tracker::{AlertKind, Settings};

    const T0: sentinel_core::time::Micros = 1_795_856_400_000_000;
    const CNI: &str = r#"E1128 09:00:00.000000    2001 kubelet.go:2862] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized""#;

    /// Ten nodes whose CNI is never ready, started together: one group
    /// mail names a few and counts the rest, says the kind and the cause,
    /// and stays bounded; one node's subject says how long and why.
    #[test]
    fn many_nodes_not_ready_with_one_cause_are_one_bounded_mail() {
        let mut entries = Vec::new();
        for n in 0..10 {
            let host = format!("w{n:02}");
            entries.push(systemd(
                T0,
                &host,
                "Started kubelet: The Kubernetes Node Agent.",
            ));
            for k in 0..60 {
                entries.push(kubelet(T0 + SECOND + k * 5 * SECOND, &host, CNI));
            }
        }
        entries.sort_by_key(|e| e.at);
        let s = Settings::default();
        let r = sentinel_core::testing::replay(entries, &s, End::Finish);
        assert_eq!(r.incidents.len(), 10);
        let refs: Vec<&sentinel_core::tracker::Incident> = r.incidents.iter().collect();
        let m = crate::notify::render::render(&refs, AlertKind::Opened, &s);
        assert_eq!(
            m.subject,
            "[kubelet-sentinel] w00, w01, w02 +7 more: nodes not ready (cni)"
        );
        assert!(
            m.text.contains("persistent: not ready longer than 3m"),
            "{}",
            m.text
        );
        assert!(m.text.contains("/etc/cni/net.d"), "{}", m.text);
        assert!(m.text.len() < 200_000, "{}", m.text.len());
        let one = crate::notify::render::render(&refs[..1], AlertKind::Opened, &s);
        assert!(
            one.subject.starts_with(
                "[kubelet-sentinel] w00: not ready for 4m55s while its kubelet runs (cni)"
            ),
            "{}",
            one.subject
        );
    }
}
