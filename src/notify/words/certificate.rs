//! A certificate incident's words: the kubelet's client certificate near
//! expiry, expired, or its rotation refused (design 5.7). The mail says how
//! long is left (or since when it expired); what to do is the core's
//! advice (`kubectl get csr`, `openssl x509 -enddate`, `rotateCertificates`,
//! `kubeadm certs check-expiration`).

use sentinel_core::advice::header_text;
use sentinel_core::signals::Cause;
use sentinel_core::time::{Micros, human_duration, rfc3339};
use sentinel_core::tracker::{AlertKind, ClientCert, Incident, Settings};

use super::{KindWords, when};

/// The alertname of certificate incidents, with a `cause` label
/// (`expired`, `rotation-failing`, `expiring`).
pub(crate) const ALERTNAME_CERT: &str = "KubeletClientCertificate";

/// How long is left at `at`, or since when it expired: "3d left (expires
/// 2026-12-07 10:00:00)", "expired 2h ago (2026-12-04 08:00:00)".
fn left(expires_at: Option<Micros>, at: Micros) -> String {
    match expires_at {
        Some(e) if e > at => format!("{} left (expires {})", human_duration(e - at), when(e)),
        Some(e) => format!("expired {} ago ({})", human_duration(at - e), when(e)),
        None => "expiry not stated".to_string(),
    }
}

/// The time an alert speaks at: its end, or its last line.
fn now(i: &Incident) -> Micros {
    i.resolved_at.unwrap_or(i.last_signal_at)
}

impl KindWords for ClientCert {
    fn subject(&self, i: &Incident, kind: AlertKind) -> String {
        let node = header_text(&i.node, 100);
        let left = left(self.expires_at, now(i));
        match (kind, i.cause()) {
            (AlertKind::Resolved, _) => {
                format!("[kubelet-sentinel] resolved: {node}: kubelet client certificate rotated")
            }
            (_, Cause::Expired) => {
                format!("[kubelet-sentinel] {node}: kubelet client certificate {left}")
            }
            (_, Cause::RotationFailing) => format!(
                "[kubelet-sentinel] {node}: kubelet client certificate rotation refused, {left}"
            ),
            _ => {
                format!("[kubelet-sentinel] {node}: kubelet client certificate not rotated, {left}")
            }
        }
    }

    fn counters(&self, i: &Incident) -> String {
        format!(
            "{}; rotation deadline {}; {} refused rotation{}",
            left(self.expires_at, now(i)),
            self.rotation_deadline
                .map_or_else(|| "not stated".into(), when),
            self.rotation_failures,
            if self.rotation_failures == 1 { "" } else { "s" }
        )
    }

    fn count_cell(&self) -> String {
        self.rotation_failures.to_string()
    }

    fn count_label(&self) -> &'static str {
        "refused"
    }

    fn group_words(&self) -> &'static str {
        "kubelet client certificates"
    }

    fn persistent(&self, s: &Settings) -> String {
        format!(
            "persistent: the certificate expires within {} or has expired",
            human_duration(s.cert_warn)
        )
    }

    fn alertname(&self) -> &'static str {
        ALERTNAME_CERT
    }

    /// An expired certificate locks the kubelet out; one near expiry will.
    fn severity(&self, i: &Incident) -> &'static str {
        match i.cause() {
            Cause::Expired => "critical",
            _ => "warning",
        }
    }

    fn summary(&self, i: &Incident) -> String {
        format!(
            "kubelet client certificate of node {}: {}{}",
            sentinel_core::tracker::one_line(&i.node, 200),
            match i.cause() {
                Cause::Expired => "expired",
                Cause::RotationFailing => "rotation refused by the API server",
                _ => "rotation deadline passed, not rotated",
            },
            self.expires_at
                .map(|e| format!(", expires at {}", rfc3339(e)))
                .unwrap_or_default()
        )
    }
}
