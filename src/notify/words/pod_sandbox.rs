//! A pod-sandbox incident's words (design 5.6): a Ready node whose pods'
//! sandboxes keep failing. The mail says how many pods, how long, and
//! whether any started; what to do is the core's advice (the subnet's free
//! addresses, the CNI's pods and warm pool, the runtime, the sandbox
//! image).

use sentinel_core::advice::header_text;
use sentinel_core::time::human_duration;
use sentinel_core::tracker::{AlertKind, Incident, PodSandbox, Settings};

use super::KindWords;

/// The alertname of pod-sandbox incidents, with labels `kind`, `cause`
/// and `verdict`. The shipped Alertmanager example inhibits it while the
/// node's `KubeletNodeNotReady` fires (a node not ready starts no pod
/// anyway: one page).
pub(crate) const ALERTNAME_SANDBOX: &str = "KubeletPodSandboxFailing";

/// How long sandboxes have failed: first to last failure.
fn lasted(i: &Incident) -> String {
    human_duration(i.last_trouble_at - i.opened_at)
}

fn pods(n: u64) -> String {
    format!("{n} pod{}", if n == 1 { "" } else { "s" })
}

impl KindWords for PodSandbox {
    fn subject(&self, i: &Incident, kind: AlertKind) -> String {
        let node = header_text(&i.node, 100);
        let cause = i.cause().as_str();
        match kind {
            AlertKind::Resolved => format!(
                "[kubelet-sentinel] resolved: {node} starts pods again, sandboxes failed for {} ({cause})",
                lasted(i)
            ),
            AlertKind::Repeat => format!(
                "[kubelet-sentinel] still failing: {node}: {} without a sandbox for {} ({cause})",
                pods(self.pods_failed),
                lasted(i)
            ),
            AlertKind::Opened => format!(
                "[kubelet-sentinel] {node}: Ready but {} cannot start, sandboxes failing for {} ({cause})",
                pods(self.pods_failed),
                lasted(i)
            ),
        }
    }

    fn counters(&self, _i: &Incident) -> String {
        format!(
            "{} sandbox failure{} of {}; {} pod start{} since{}",
            self.sandbox_failures,
            if self.sandbox_failures == 1 { "" } else { "s" },
            pods(self.pods_failed),
            self.sandbox_successes,
            if self.sandbox_successes == 1 { "" } else { "s" },
            if self.starts_visible {
                ""
            } else {
                " (the kubelet writes no container start below --v=2)"
            }
        )
    }

    fn count_cell(&self) -> String {
        self.sandbox_failures.to_string()
    }

    fn count_label(&self) -> &'static str {
        "failures"
    }

    fn group_words(&self) -> &'static str {
        "nodes starting no pod"
    }

    fn persistent(&self, s: &Settings) -> String {
        format!(
            "persistent: sandboxes failing longer than {} with no pod started",
            human_duration(s.sandbox_after)
        )
    }

    fn alertname(&self) -> &'static str {
        ALERTNAME_SANDBOX
    }

    /// The node is Ready, so the scheduler keeps sending it pods that
    /// cannot start.
    fn severity(&self, _i: &Incident) -> &'static str {
        "critical"
    }

    fn summary(&self, i: &Incident) -> String {
        format!(
            "{}: Ready, but {} cannot get a sandbox for {} ({})",
            sentinel_core::tracker::one_line(&i.node, 200),
            pods(self.pods_failed),
            lasted(i),
            i.cause().as_str()
        )
    }
}
