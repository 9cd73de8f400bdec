//! pod-sandbox incidents (design 5.6, issue 38): pods' sandboxes failing
//! on a Ready node, replayed through the pipeline, scan and following
//! alike.

use super::*;
use crate::signals::{Cause, SignalKind};
use crate::testing::Replay;

const T0: Micros = 1_752_596_690_000_000; // 2025-07-15T16:24:50Z
const MINUTE: i64 = 60_000;

const READY: &str = r#"I0715 16:24:50.000000    2001 kubelet_node_status.go:500] "Fast updating node status as it just became ready""#;
const HOUSEKEEPING: &str =
    r#"I0715 16:24:50.000000    2001 kubelet.go:2480] "SyncLoop (housekeeping)""#;

/// aws-cni out of addresses (issue 38's EKS node).
const NO_IP: &str = r#"rpc error: code = Unknown desc = failed to setup network for sandbox \"5499422a7c0dd169f1600782ef8b49976c15fa11caad0577706595922ab685e1\": plugin type=\"aws-cni\" name=\"aws-cni\" failed (add): add cmd: failed to assign an IP address to container"#;
/// A flaky network plugin: its own error, not a shortage of addresses.
const CNI: &str = r#"rpc error: code = Unknown desc = failed to setup network for sandbox \"3c8b059ce4c4cd7ae47eb9ebc8d1937afae2d0e23ec32cd3f4b9c464ab5d358d\": plugin type=\"calico\" failed (add): error adding host side routes for interface: calid29a1cadef5, error: route (Ifindex: 131, Dst: 172.25.136.1/32, Scope: link) already exists for an interface other than 'calid29a1cadef5'"#;
/// The runtime out of file descriptors.
const FILES: &str = r#"rpc error: code = Unknown desc = failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error creating pipe: too many open files: unknown"#;

/// The four lines of one failed attempt of `pod` (`namespace/name`), as
/// 1.2x writes them: the runtime's call (no pod), the sandbox's, the
/// runtime manager's, the pod worker's.
fn attempt(pod: &str, err: &str) -> Vec<String> {
    let (ns, name) = pod.split_once('/').unwrap();
    let uid = "96d459e4-c1a6-4412-b38d-dbf299dafd19";
    let nested = err.replace('\\', "\\\\\\");
    vec![
        format!(
            r#"E0715 16:24:50.000000    2001 remote_runtime.go:193] "RunPodSandbox from runtime service failed" err="{err}""#
        ),
        format!(
            r#"E0715 16:24:50.000000    2001 kuberuntime_sandbox.go:72] "Failed to create sandbox for pod" err="{err}" pod="{pod}""#
        ),
        format!(
            r#"E0715 16:24:50.000000    2001 kuberuntime_manager.go:1172] "CreatePodSandbox for pod failed" err="{err}" pod="{pod}""#
        ),
        format!(
            r#"E0715 16:24:50.000000    2001 pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \"CreatePodSandbox\" for \"{name}_{ns}({uid})\" with CreatePodSandboxError: \"Failed to create sandbox for pod \\\"{name}_{ns}({uid})\\\": {nested}\"" pod="{pod}" podUID="{uid}""#
        ),
    ]
}

/// PLEG's `ContainerStarted` for `pod` (written at `--v=2`).
fn started(pod: &str) -> String {
    format!(
        r#"I0715 16:24:50.000000    2001 kubelet.go:2465] "SyncLoop (PLEG): event for pod" pod="{pod}" event={{"ID":"96d459e4-c1a6-4412-b38d-dbf299dafd19","Type":"ContainerStarted","Data":"9782e0cf6742898144c14978eabdbed4af963d2f8eb9d857d4832d98986cf361"}}"#
    )
}

/// `pod`'s attempt at `ms`, its lines a millisecond apart.
fn attempt_at(ms: i64, pod: &str, err: &str) -> Vec<(i64, String)> {
    attempt(pod, err)
        .into_iter()
        .zip(0..)
        .map(|(l, k)| (ms + k, l))
        .collect()
}

/// The lines (ms after `T0`) as one host's journal, scanned and followed:
/// the two must agree; the scan's.
fn judged(mut lines: Vec<(i64, String)>, end_ms: i64) -> Replay {
    lines.sort_by_key(|(ms, _)| *ms);
    crate::testing::judged_lines(T0, &lines, end_ms)
}

fn of_kind(r: &Replay, kind: IncidentKind) -> Vec<&Incident> {
    r.incidents.iter().filter(|i| i.kind() == kind).collect()
}

fn pods(n: usize) -> Vec<String> {
    (0..n).map(|k| format!("default/web-{k}")).collect()
}

/// Issue 38: a Ready node whose six pods' sandboxes fail every 10 s for
/// eight minutes (aws-cni: no address to give) and not one container
/// starts: one pod-sandbox incident, open, persistent, ip-exhausted, six
/// pods, paged once.
#[test]
fn ip_exhaustion_on_six_pods_for_eight_minutes_pages() {
    let mut lines = vec![(0, READY.to_string())];
    for tick in 0..48 {
        for (k, pod) in pods(6).iter().enumerate() {
            lines.extend(attempt_at(
                1_000 + tick * 10_000 + k as i64 * 150,
                pod,
                NO_IP,
            ));
        }
        lines.push((5_000 + tick * 10_000, HOUSEKEEPING.to_string()));
    }
    let r = judged(lines, 8 * MINUTE + 5_000);
    let i = r.one();
    assert_eq!(i.kind(), IncidentKind::PodSandbox);
    assert_eq!(i.status(), Status::Open);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    assert_eq!(i.cause(), Cause::IpExhausted);
    let sb = i.sandbox().unwrap();
    assert_eq!(sb.pods_failed, 6);
    assert_eq!(
        sb.sandbox_failures,
        6 * 48,
        "four lines an attempt, one failure"
    );
    assert_eq!(sb.sandbox_successes, 0);
    assert!(!sb.starts_visible);
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
    // Paged once its pods had failed for `sandbox_after`.
    let alert = r
        .decisions
        .iter()
        .find_map(|d| match d {
            Decision::QueueAlert { at, .. } => Some(*at),
            Decision::OpenIncident { .. }
            | Decision::UpdateIncident { .. }
            | Decision::ResolveIncident { .. }
            | Decision::ForgetIncident { .. }
            | Decision::CoverIncident { .. } => None,
        })
        .unwrap();
    assert_eq!(
        alert,
        T0 + 301_001 * 1000,
        "the first line naming a pod failing 5m"
    );
    let words = i.diagnosis(&r.settings);
    assert!(words.contains("288 failures of 6 pods"), "{words}");
    assert!(words.contains("Persistent"), "{words}");
}

/// The same node whose kubelet writes PLEG's events (`--v=2`), with a
/// crash-looping neighbour whose container restarts every 2 minutes: its
/// first start while the incident is open counts, its restarts do not, and
/// the node still pages (5 minutes after that start).
#[test]
fn starts_of_other_pods_are_no_success() {
    let mut lines = vec![(0, READY.to_string())];
    for tick in 0..48 {
        for (k, pod) in pods(6).iter().enumerate() {
            lines.extend(attempt_at(
                1_000 + tick * 10_000 + k as i64 * 150,
                pod,
                NO_IP,
            ));
        }
    }
    for m in 0..4 {
        lines.push((2 * m * MINUTE + 500, started("default/crashy-0")));
    }
    let r = judged(lines, 8 * MINUTE + 5_000);
    let i = r.one();
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    let sb = i.sandbox().unwrap();
    assert!(sb.starts_visible);
    assert_eq!(sb.sandbox_successes, 1);
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
}

/// One pod whose own sandbox fails (a missing runtime class, a network
/// attachment of its own) on a node that starts every other new pod: the
/// node is fine; flapping, not paged.
#[test]
fn one_pods_own_trouble_on_a_node_that_starts_others_is_not_paged() {
    let own = r#"rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "kata" is configured"#;
    let mut lines = vec![(0, READY.to_string())];
    for tick in 0..48 {
        lines.extend(attempt_at(1_000 + tick * 10_000, "default/odd-0", own));
    }
    for n in 0..16 {
        lines.push((5_000 + n * 30_000, started(&format!("default/web-{n}"))));
    }
    let r = judged(lines, 8 * MINUTE + 5_000);
    let i = r.one();
    assert_eq!(i.verdict(&r.settings), Verdict::Flapping);
    assert_eq!(i.sandbox().unwrap().pods_failed, 1);
    assert!(r.alert_kinds().is_empty(), "{:?}", r.alert_kinds());
}

/// A flaky network plugin: every 20 s a new pod's sandbox fails twice,
/// then its container starts; for eight minutes. Failures and successes
/// interleave: flapping, cni, reported and not paged.
#[test]
fn a_flaky_network_plugin_is_flapping_not_paged() {
    let mut lines = vec![(0, READY.to_string())];
    for n in 0..24 {
        let pod = format!("default/api-{n}");
        let t = 1_000 + n * 20_000;
        lines.extend(attempt_at(t, &pod, CNI));
        lines.extend(attempt_at(t + 10_000, &pod, CNI));
        lines.push((t + 15_000, started(&pod)));
    }
    let r = judged(lines, 8 * MINUTE + 20_000);
    let sandboxes = of_kind(&r, IncidentKind::PodSandbox);
    assert_eq!(sandboxes.len(), 1, "{:#?}", r.incidents);
    let i = sandboxes[0];
    assert_eq!(i.verdict(&r.settings), Verdict::Flapping);
    assert_eq!(i.cause(), Cause::Cni);
    let sb = i.sandbox().unwrap();
    assert_eq!(
        (sb.pods_failed, sb.sandbox_failures, sb.sandbox_successes),
        (24, 48, 24)
    );
    assert!(r.alert_kinds().is_empty(), "{:?}", r.alert_kinds());
    // It ends on quiet, flapping still.
    let later = judged(
        {
            let mut lines = vec![(0, READY.to_string())];
            for n in 0..24 {
                let pod = format!("default/api-{n}");
                let t = 1_000 + n * 20_000;
                lines.extend(attempt_at(t, &pod, CNI));
                lines.extend(attempt_at(t + 10_000, &pod, CNI));
                lines.push((t + 15_000, started(&pod)));
            }
            lines
        },
        20 * MINUTE,
    );
    let i = later.one();
    assert_eq!(i.status(), Status::Resolved);
    assert_eq!(i.resolution, Some(Resolution::Quiet));
    assert_eq!(i.verdict(&later.settings), Verdict::Flapping);
    assert!(later.alert_kinds().is_empty());
}

/// The runtime out of open files for a minute: three pods' sandboxes fail
/// every 10 s, then start. Transient, runtime, not paged.
#[test]
fn a_minute_of_too_many_open_files_is_transient() {
    let mut lines = vec![(0, READY.to_string())];
    for tick in 0..7 {
        for (k, pod) in pods(3).iter().enumerate() {
            lines.extend(attempt_at(
                1_000 + tick * 10_000 + k as i64 * 150,
                pod,
                FILES,
            ));
        }
    }
    for pod in pods(3) {
        lines.push((75_000, started(&pod)));
    }
    lines.push((120_000, HOUSEKEEPING.to_string()));
    let r = judged(lines, 10 * MINUTE);
    let i = r.one();
    assert_eq!(i.kind(), IncidentKind::PodSandbox);
    assert_eq!(i.status(), Status::Resolved);
    assert_eq!(i.verdict(&r.settings), Verdict::Transient);
    assert_eq!(i.cause(), Cause::Runtime);
    let sb = i.sandbox().unwrap();
    assert_eq!(
        (sb.pods_failed, sb.sandbox_failures, sb.sandbox_successes),
        (3, 21, 3)
    );
    assert_eq!(i.resolved_at, Some(T0 + (61_303 + 60_000) * 1000));
    assert!(r.alert_kinds().is_empty());
}

/// A healthy node: pods start, nothing fails.
#[test]
fn a_healthy_node_has_none() {
    let mut lines = vec![(0, READY.to_string())];
    for (k, pod) in pods(6).iter().enumerate() {
        lines.push((1_000 + k as i64 * 10_000, started(pod)));
        lines.push((2_000 + k as i64 * 10_000, HOUSEKEEPING.to_string()));
    }
    let r = judged(lines, 10 * MINUTE);
    assert!(r.incidents.is_empty(), "{:#?}", r.incidents);
    assert!(r.alert_kinds().is_empty());
}

/// The network plugin not ready (the node not ready, cause cni): the
/// sandbox failures that come with it join the node's not-ready incident
/// and open no pod-sandbox incident.
#[test]
fn failures_on_a_not_ready_cni_node_join_its_not_ready_incident() {
    let not_ready = r#"E0715 16:24:50.000000    2001 kubelet.go:3011] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized""#;
    let no_plugin = r#"rpc error: code = Unknown desc = failed to setup network for sandbox \"9a1b3fd9\": plugin type=\"calico\" failed (add): stat /var/lib/calico/nodename: no such file or directory: check that the calico/node container is running and has mounted /var/lib/calico/"#;
    let mut lines = Vec::new();
    for tick in 0..60 {
        lines.push((tick * 5_000, not_ready.to_string()));
    }
    for tick in 0..20 {
        lines.extend(attempt_at(
            2_000 + tick * 15_000,
            "kube-system/coredns-0",
            no_plugin,
        ));
    }
    let r = judged(lines, 5 * MINUTE + 10_000);
    assert!(
        of_kind(&r, IncidentKind::PodSandbox).is_empty(),
        "{:#?}",
        r.incidents
    );
    let i = r.one();
    assert_eq!(i.kind(), IncidentKind::NotReady);
    assert_eq!(i.cause(), Cause::Cni);
    assert_eq!(i.not_ready_signals(), 60 + 20 * 4);
    assert!(
        i.evidence().any(|e| e.signal == SignalKind::SandboxFailed),
        "{:#?}",
        i.evidence().collect::<Vec<_>>()
    );
}

/// A kubelet below `--v=2` writes no start at all: a flaky node there,
/// whose failing pods each fail for 10 s and are never seen again (they
/// started, unseen), is never paged for logging less, however long its
/// failures go on.
#[test]
fn below_v2_a_flaky_node_is_not_paged() {
    let mut lines = vec![(0, READY.to_string())];
    for n in 0..24 {
        let pod = format!("default/api-{n}");
        let t = 1_000 + n * 20_000;
        lines.extend(attempt_at(t, &pod, CNI));
        lines.extend(attempt_at(t + 10_000, &pod, CNI));
    }
    let r = judged(lines, 8 * MINUTE + 20_000);
    let i = r.one();
    assert_eq!(i.verdict(&r.settings), Verdict::Undetermined);
    assert!(r.alert_kinds().is_empty());
    assert!(
        i.diagnosis(&r.settings).contains("--v=2"),
        "{}",
        i.diagnosis(&r.settings)
    );
}

/// The runtime's line alone (a paste of it): one failure of no known pod.
#[test]
fn the_runtimes_line_alone_is_one_failure() {
    let lines = vec![(0, attempt("default/web-0", NO_IP)[0].clone())];
    let r = judged(lines, 30_000);
    let sb = r.one().sandbox().unwrap().clone();
    assert_eq!((sb.pods_failed, sb.sandbox_failures), (0, 1));
}
