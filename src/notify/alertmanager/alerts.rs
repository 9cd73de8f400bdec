//! What is posted: an incident's alert (labels, annotations, `startsAt`,
//! `endsAt`) and the heartbeat, as Alertmanager's API v2 JSON. Pure.

use serde_json::{Value, json};

use crate::config::AlertmanagerConfig;
use crate::notify::words::words;
use sentinel_core::time::{Micros, rfc3339};
use sentinel_core::tracker::{Incident, Settings};

#[cfg(test)]
use crate::notify::words::{
    ALERTNAME, ALERTNAME_CERT, ALERTNAME_DOWN, ALERTNAME_ENDPOINT, ALERTNAME_KERNEL,
    ALERTNAME_NOT_READY, ALERTNAME_SANDBOX, ALERTNAME_SILENT,
};

/// The alert that fires as long as kubelet-sentinel runs and can post
/// (Prometheus' `Watchdog` convention): routed to a dead man's switch, its
/// silence says the watcher itself is down.
pub(super) const HEARTBEAT: &str = "KubeletSentinelHeartbeat";

/// The heartbeat alert: this machine's host, the static labels, firing
/// until four resend intervals from now (posted again every interval).
#[must_use]
pub(super) fn heartbeat(
    cfg: &AlertmanagerConfig,
    host: &str,
    started: Micros,
    now: Micros,
) -> Value {
    let mut labels = serde_json::Map::new();
    for (k, v) in &cfg.labels {
        labels.insert(k.clone(), clean(v, 253));
    }
    labels.insert("alertname".into(), HEARTBEAT.into());
    labels.insert("host".into(), clean(host, 253));
    labels.insert("severity".into(), "none".into());
    serde_json::json!({
        "labels": labels,
        "annotations": {
            "summary": format!("kubelet-sentinel on {} is running and posting", sentinel_core::tracker::one_line(host, 200)),
            "description": "Always firing while kubelet-sentinel runs and reaches this Alertmanager. \
                Route it to a dead man's switch: when it stops, kubelet-sentinel (or its way here) is down.",
        },
        "startsAt": rfc3339(started),
        "endsAt": rfc3339(firing_until(now, cfg)),
    })
}

/// Evidence lines are cut to this in annotations.
const MAX_EVIDENCE: usize = 1000;

/// Longest label value sent: a DNS name's bound (a collector host can
/// claim a 1 MB `_HOSTNAME`).
const MAX_LABEL: usize = 253;

/// A label or annotation value as Alertmanager and whatever renders its
/// alerts get it: no control or invisible characters (ESC, NUL,
/// bidirectional overrides), cut at `max` bytes; the same as the node name
/// in mails and tables.
fn clean(s: &str, max: usize) -> Value {
    sentinel_core::tracker::one_line(s, max).into()
}

/// The labels of an incident's alert. Every value is [`clean`]ed: a node
/// or host name comes from journal fields anyone on a collector's network
/// can set.
#[must_use]
pub(crate) fn labels(
    i: &Incident,
    settings: &Settings,
    extra: &std::collections::BTreeMap<String, String>,
) -> serde_json::Map<String, Value> {
    let mut l = serde_json::Map::new();
    for (k, v) in extra {
        l.insert(k.clone(), clean(v, MAX_LABEL));
    }
    let w = words(i);
    l.insert("alertname".into(), w.alertname().into());
    if w.kind_label() {
        l.insert("kind".into(), i.kind().as_str().into());
    }
    l.insert("node".into(), clean(&i.node, MAX_LABEL));
    if let Some(h) = i.host.as_ref().filter(|h| !h.is_empty()) {
        l.insert("host".into(), clean(h, MAX_LABEL));
    }
    l.insert("cause".into(), i.cause().as_str().into());
    // node-problem-detector's condition, for operators moving from it
    // (design 5.8): the kernel kind's only.
    if let Some(k) = i.kernel() {
        l.insert("npd_condition".into(), k.npd_condition().as_str().into());
    }
    if let Some(e) = i.api_endpoint() {
        l.insert("api_endpoint".into(), e.into());
    }
    l.insert("verdict".into(), i.verdict(settings).as_str().into());
    l.insert("severity".into(), w.severity(i).into());
    l
}

fn cut(s: &str) -> String {
    let one = sentinel_core::tracker::one_line(s, MAX_EVIDENCE);
    one.chars().take(MAX_EVIDENCE).collect()
}

/// One alert for Alertmanager: firing until `ends_at`, or resolved at it.
#[must_use]
pub(super) fn alert(
    i: &Incident,
    settings: &Settings,
    cfg: &AlertmanagerConfig,
    ends_at: Micros,
) -> Value {
    let mut annotations = serde_json::Map::new();
    annotations.insert("summary".into(), words(i).summary(i).into());
    // The diagnosis quotes the node and host names: cleaned like the rest.
    annotations.insert(
        "description".into(),
        clean(&i.diagnosis(settings), MAX_EVIDENCE * 4),
    );
    annotations.insert("incident".into(), i.id.clone().into());
    annotations.insert("opened_at".into(), rfc3339(i.opened_at).into());
    // An acknowledgement shows in Alertmanager too (the alert keeps firing:
    // the trouble is not over).
    if let Some(a) = &i.ack {
        annotations.insert("acknowledged_by".into(), clean(&a.by, 253));
        annotations.insert("acknowledged_at".into(), rfc3339(a.at).into());
        if !a.comment.is_empty() {
            annotations.insert("acknowledged_comment".into(), clean(&a.comment, 1000));
        }
    }
    if let Some(e) = i.first_evidence() {
        annotations.insert("first_evidence".into(), cut(&e.text).into());
    }
    if let Some(e) = i.last_evidence() {
        annotations.insert("last_evidence".into(), cut(&e.text).into());
    }
    // The node's other units' lines that explain it, joined by " | " (design 5.4).
    if !i.context.is_empty() {
        let lines: Vec<String> = i
            .context
            .iter()
            .map(|l| format!("{} {}: {}", rfc3339(l.at), l.unit, l.text))
            .collect();
        annotations.insert("context".into(), cut(&lines.join(" | ")).into());
    }
    json!({
        "labels": labels(i, settings, &cfg.labels),
        "annotations": annotations,
        "startsAt": rfc3339(i.over_threshold_at.unwrap_or(i.opened_at)),
        "endsAt": rfc3339(ends_at),
    })
}

/// When a firing alert says it ends: four resend intervals on, as
/// Prometheus does.
pub(super) fn firing_until(now: Micros, cfg: &AlertmanagerConfig) -> Micros {
    now + 4 * cfg.resend_interval.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every alertname posted or shipped is the project's own: none is one
    /// of kube-prometheus's
    /// (kubernetes-mixin's kubelet, node and API server alerts), the posted
    /// ones differ from each other, and no shipped Prometheus rule has a
    /// posted name (the rules all start with `KubeletSentinel`). The shipped
    /// Alertmanager example matches posted names only.
    #[test]
    fn every_alertname_is_the_projects_own_and_unique() {
        let posted = [
            ALERTNAME,
            ALERTNAME_DOWN,
            ALERTNAME_SILENT,
            ALERTNAME_ENDPOINT,
            ALERTNAME_NOT_READY,
            ALERTNAME_CERT,
            ALERTNAME_SANDBOX,
            ALERTNAME_KERNEL,
            HEARTBEAT,
        ];
        let rules: Vec<&str> =
            include_str!("../../../packaging/prometheus/kubelet-sentinel.rules.yml")
                .lines()
                .filter_map(|l| l.trim().strip_prefix("- alert:"))
                .map(str::trim)
                .collect();
        assert!(rules.len() >= 10, "{rules:?}");
        let kube_prometheus = [
            "KubeletDown",
            "KubeNodeNotReady",
            "KubeNodeUnreachable",
            "KubeNodeReadinessFlapping",
            "KubeletTooManyPods",
            "KubeletPlegDurationHigh",
            "KubeletPodStartUpLatencyHigh",
            "KubeletClientCertificateExpiration",
            "KubeletServerCertificateExpiration",
            "KubeletClientCertificateRenewalErrors",
            "KubeletServerCertificateRenewalErrors",
            "KubeAPIDown",
            "KubeNodeEviction",
            "TargetDown",
            "Watchdog",
        ];
        let mut seen = std::collections::BTreeSet::new();
        for name in posted.iter().chain(&rules) {
            assert!(name.starts_with("Kubelet"), "{name}");
            assert!(!kube_prometheus.contains(name), "{name}");
            assert!(seen.insert(*name), "{name} is used twice");
        }
        // The rules are told apart from the posts by their prefix.
        for name in &rules {
            assert!(name.starts_with("KubeletSentinel"), "{name}");
        }
        let example =
            include_str!("../../../packaging/alertmanager/kubelet-sentinel.alertmanager.yml");
        let matched: Vec<&str> = example
            .split("alertname=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect();
        assert!(matched.len() >= 3, "{matched:?}");
        for m in matched {
            assert!(
                posted.contains(&m),
                "the Alertmanager example matches {m}, which is never posted"
            );
        }
    }

    /// Issue 19: an endpoint incident is its own alertname, with its
    /// endpoint and cause; node alerts keep `api_endpoint`.
    #[test]
    fn an_endpoint_incident_is_its_own_alertname_with_endpoint_and_cause() {
        let mut i = sentinel_core::tracker::Incident {
            node: "10.0.0.1:6443".into(),
            host: None,
            detail: sentinel_core::tracker::Detail::Endpoint(sentinel_core::tracker::Outage {
                endpoint: "10.0.0.1:6443".into(),
                nodes: vec!["a".into(), "b".into(), "c".into()],
                hosts: vec!["a".into(), "b".into(), "c".into()],
            }),
            ..node_incident()
        };
        i.causes =
            std::collections::BTreeMap::from([(sentinel_core::signals::Cause::ApiUnreachable, 1)]);
        let l = labels(&i, &Settings::default(), &std::collections::BTreeMap::new());
        assert_eq!(l["alertname"], ALERTNAME_ENDPOINT);
        assert_eq!(l["api_endpoint"], "10.0.0.1:6443");
        assert_eq!(l["cause"], "api-unreachable");
        assert_eq!(l["kind"], "endpoint");
        assert!(l.get("host").is_none());
        // Node alerts keep theirs, for the example's inhibit rule.
        let n = node_incident();
        let l = labels(&n, &Settings::default(), &std::collections::BTreeMap::new());
        assert_eq!(l["alertname"], ALERTNAME);
        assert_eq!(l["api_endpoint"], "10.0.0.1:6443");
    }

    /// Issue 25: a persistent not-ready incident is `KubeletNodeNotReady`
    /// with its kind, cause and verdict.
    #[test]
    fn a_not_ready_incident_is_kubelet_node_not_ready() {
        use sentinel_core::testing::{End, kubelet, replay};
        let s = sentinel_core::time::SECOND;
        let cni = r#"E0101 00:00:00.000000 1 kubelet.go:2862] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized""#;
        let lines = (0..60).map(|k| kubelet(k * 5 * s, "worker-9", cni));
        let i = replay(lines, &Settings::default(), End::Finish)
            .one()
            .clone();
        let l = labels(&i, &Settings::default(), &std::collections::BTreeMap::new());
        assert_eq!(l["alertname"], ALERTNAME_NOT_READY);
        assert_eq!(l["kind"], "not-ready");
        assert_eq!(l["cause"], "cni");
        assert_eq!(l["verdict"], "persistent");
        assert_eq!(l["severity"], "critical");
    }

    /// Issue 38: a persistent pod-sandbox incident is
    /// `KubeletPodSandboxFailing` with its kind, cause and verdict (and
    /// its node, for the example's inhibit rule under `KubeletNodeNotReady`).
    #[test]
    fn a_pod_sandbox_incident_is_kubelet_pod_sandbox_failing() {
        use sentinel_core::testing::{End, kubelet, replay};
        let s = sentinel_core::time::SECOND;
        let failed = r#"E0101 00:00:00.000000 1 kuberuntime_manager.go:1172] "CreatePodSandbox for pod failed" err="rpc error: code = Unknown desc = failed to setup network for sandbox \"5499422a\": plugin type=\"aws-cni\" name=\"aws-cni\" failed (add): add cmd: failed to assign an IP address to container" pod="default/web-3""#;
        let lines = (0..40).map(|k| kubelet(k * 10 * s, "worker-9", failed));
        let i = replay(lines, &Settings::default(), End::Finish)
            .one()
            .clone();
        let l = labels(&i, &Settings::default(), &std::collections::BTreeMap::new());
        assert_eq!(l["alertname"], ALERTNAME_SANDBOX);
        assert_eq!(l["kind"], "pod-sandbox");
        assert_eq!(l["node"], "worker-9");
        assert_eq!(l["cause"], "ip-exhausted");
        assert_eq!(l["verdict"], "persistent");
        assert_eq!(l["severity"], "critical");
    }

    /// A kernel incident (design 5.8): its own alertname, critical, with
    /// node-problem-detector's condition as `npd_condition`; no other kind
    /// has that label.
    #[test]
    fn a_kernel_incident_carries_npd_condition() {
        use sentinel_core::testing::{End, kernel, replay};
        let s = sentinel_core::time::SECOND;
        let lines = [
            kernel(
                0,
                "worker-9",
                "XFS (sdb): Log I/O Error Detected. Shutting down filesystem",
            ),
            kernel(
                s,
                "worker-9",
                "INFO: task containerd:1187 blocked for more than 600 seconds.",
            ),
        ];
        let i = replay(lines, &Settings::default(), End::Finish)
            .one()
            .clone();
        let l = labels(&i, &Settings::default(), &std::collections::BTreeMap::new());
        assert_eq!(l["alertname"], ALERTNAME_KERNEL);
        assert_eq!(l["kind"], "kernel");
        assert_eq!(l["cause"], "readonly-fs");
        assert_eq!(l["npd_condition"], "XfsShutdown");
        assert_eq!(l["verdict"], "persistent");
        assert_eq!(l["severity"], "critical");
        let n = node_incident();
        let l = labels(&n, &Settings::default(), &std::collections::BTreeMap::new());
        assert!(!l.contains_key("npd_condition"));
    }

    /// The open incident of seven retries of one node whose error is `err`.
    fn retried(err: &str) -> sentinel_core::tracker::Incident {
        use sentinel_core::testing::{End, kubelet, replay};
        let s = sentinel_core::time::SECOND;
        let retry = format!(
            "E0101 00:00:00.000000 1 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"worker-3\\\": {err}\""
        );
        let lines = (0..7).map(|k| kubelet(k * s, "worker-3", &retry));
        replay(lines, &Settings::default(), End::At(7 * s))
            .one()
            .clone()
    }

    fn node_incident() -> sentinel_core::tracker::Incident {
        retried(
            r#"Get \"https://10.0.0.1:6443/api/v1/nodes/worker-3\": dial tcp 10.0.0.1:6443: connect: connection refused"#,
        )
    }

    /// D23: a host (or node, or configured label) with ESC, NUL or a
    /// bidirectional override reaches Alertmanager cleaned and bounded.
    #[test]
    fn labels_and_annotations_carry_no_control_characters() {
        let mut i = retried("Unauthorized");
        i.host = Some(format!(
            "esc\x1b]0;pwn\x07nul\x00byte\u{202e}{}",
            "y".repeat(1 << 20)
        ));
        let extra = std::collections::BTreeMap::from([("team".to_string(), "a\r\nb".to_string())]);
        let cfg = AlertmanagerConfig {
            urls: Vec::new(),
            labels: extra,
            timeout: crate::config::Period(sentinel_core::time::SECOND),
            resend_interval: crate::config::Period(60 * sentinel_core::time::SECOND),
            ca_file: None,
        };
        let a = alert(&i, &Settings::default(), &cfg, 0);
        let mut values = Vec::new();
        for part in ["labels", "annotations"] {
            for v in a[part].as_object().unwrap().values() {
                values.push(v.as_str().unwrap().to_string());
            }
        }
        for v in &values {
            assert!(
                !v.chars().any(|c| c.is_control() || c == '\u{202e}'),
                "{:?}",
                &v[..v.len().min(80)]
            );
        }
        let host = a["labels"]["host"].as_str().unwrap();
        assert!(host.starts_with("esc ]0;pwn nul byte yyy"), "{host:.40}");
        assert!(host.len() <= MAX_LABEL + '…'.len_utf8(), "{}", host.len());
        assert_eq!(a["labels"]["team"], "a  b");
    }
}
