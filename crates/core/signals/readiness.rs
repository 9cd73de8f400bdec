//! Why a node is not ready, from the kubelet's own words (design 5.3): the
//! runtime, the container network, PLEG, or the eviction manager acting on
//! a pressure signal. Within one line the first of that order wins (the
//! kubelet's aggregate `[container runtime is down, PLEG is not healthy: …]`
//! is the runtime's: PLEG stalls because the runtime is gone).

use super::Cause;
use crate::parse::Line;
use crate::time::Micros;

/// The words of each cause, in the order a line is judged by.
const ORDER: &[(Cause, &[&str])] = &[
    (
        Cause::Runtime,
        &[
            "container runtime is down",
            "runtimeready=false",
            "runtime status check may not have completed",
            "container runtime not ready",
            "runtime is not up",
            "runtime service",
            "containerd.sock",
            "crio.sock",
            "cri-dockerd.sock",
            "dockershim.sock",
        ],
    ),
    (
        Cause::Cni,
        &[
            "networkready=false",
            "network not ready",
            "networkpluginnotready",
            "network plugin",
            "network state unknown",
            "network is not configured",
            "cni",
        ],
    ),
    (Cause::Pleg, &["pleg"]),
];

/// The cause an eviction manager's resource names: `memory`, the node's
/// and the images' file systems (`ephemeral-storage`, `nodefs`, `imagefs`,
/// `containerfs`, with or without `.available`/`.inodesFree`), `pid(s)`.
fn pressure(resource: &str) -> Option<Cause> {
    let r = resource
        .trim()
        .trim_matches(|c: char| c == '"' || c == '\'' || c == ',' || c == ':');
    let r = r.to_ascii_lowercase();
    let base = r.split(['.', ' ']).next().unwrap_or("");
    match base {
        "memory" | "allocatablememory" => Some(Cause::MemoryPressure),
        "ephemeral-storage" | "nodefs" | "imagefs" | "containerfs" => Some(Cause::DiskPressure),
        "pid" | "pids" => Some(Cause::PidPressure),
        _ => None,
    }
}

/// The eviction manager's resource on its `attempting to reclaim` and
/// `must evict pod(s) to reclaim` lines: the structured `resourceName`,
/// else the word after `reclaim` in the legacy text.
fn eviction_cause(line: &Line<'_>) -> Option<Cause> {
    let msg = line.message();
    if !msg.to_ascii_lowercase().starts_with("eviction manager:") {
        return None;
    }
    if let Some(c) = line.value("resourceName").and_then(pressure) {
        return Some(c);
    }
    let at = msg.find("reclaim ")?;
    pressure(&msg[at + "reclaim ".len()..])
}

/// What the kubelet says of every runtime-state check while it starts,
/// before the first check ran (`pkg/kubelet/runtime.go`): not trouble.
const STARTING: &[&str] = &[
    "runtime status check may not have completed yet",
    "pleg has yet to be successful",
];

/// What no kubelet says while it merely starts.
const TROUBLE: &[&str] = &[
    "runtime is down",
    "runtimeready=false",
    "networkready=false",
    "network not ready",
    "pleg was last seen active",
    "reclaim",
    "not becoming ready",
];

/// A not-ready line that says only the start-up state (`"Skipping pod
/// synchronization" err="[container runtime status check may not have
/// completed yet, PLEG is not healthy: pleg has yet to be successful]"`,
/// which every kubelet writes once as it starts): it joins an open
/// not-ready incident and votes, but never opens one alone.
#[must_use]
pub fn only_starting(line: &Line<'_>) -> bool {
    says_only_starting(&lower_text(line))
}

/// [`only_starting`] for a line's whole text, lower-cased.
#[must_use]
pub fn says_only_starting(lower: &str) -> bool {
    STARTING.iter().any(|w| lower.contains(w)) && !TROUBLE.iter().any(|w| lower.contains(w))
}

/// Ages of a century and more: PLEG never relisted, not an age.
const NEVER: Micros = 100_000 * 3_600 * 1_000_000;

/// How long PLEG has been unhealthy by the kubelet's own count, from a
/// line's lower-cased text (`pleg was last seen active 2h33m12.7s ago;
/// threshold is 3m0s`): the time since its last relist less the threshold.
/// None for a PLEG that never relisted (Go's largest duration,
/// `2562047h47m16.854775807s`: the start-up state of kubelets before 1.13)
/// or a text without both durations.
#[must_use]
pub fn pleg_unhealthy_for(lower: &str) -> Option<Micros> {
    let after = |w: &str| lower.find(w).map(|i| &lower[i + w.len()..]);
    let age = go_duration(after("pleg was last seen active ")?.split(' ').next()?)?;
    let threshold = go_duration(
        after("threshold is ")?
            .split(|c: char| c.is_whitespace() || matches!(c, ']' | '"' | ',' | '}' | ';'))
            .next()?,
    )?;
    (age < NEVER && age > threshold).then(|| age - threshold)
}

/// A Go `time.Duration` as `String()` writes it (`2h33m12.704970756s`,
/// `3m0s`, `1.5ms`), in microseconds; None for anything else.
fn go_duration(text: &str) -> Option<Micros> {
    const UNITS: &[(&str, f64)] = &[
        ("h", 3_600e6),
        ("ms", 1e3),
        ("m", 60e6),
        ("s", 1e6),
        ("us", 1.0),
        ("\u{b5}s", 1.0),
        ("ns", 1e-3),
    ];
    let mut rest = text;
    let mut total = 0.0_f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|&n| n > 0)?;
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let (unit, scale) = UNITS.iter().find(|(u, _)| rest.starts_with(u))?;
        rest = &rest[unit.len()..];
        total += value * scale;
    }
    // Whole microseconds; Go's durations are far below i64's range here.
    #[allow(clippy::cast_possible_truncation)]
    Some(total.min(9.0e18) as Micros)
}

/// The line's message and values, lower-cased.
fn lower_text(line: &Line<'_>) -> String {
    let mut text = line.message().to_ascii_lowercase();
    if let crate::parse::Body::Structured { kv, .. } = &line.body {
        for (_, v) in kv.iter() {
            text.push(' ');
            text.push_str(&v.to_ascii_lowercase());
        }
    }
    text
}

/// Why the node is not ready, by the line's message and values.
#[must_use]
pub fn classify_not_ready(line: &Line<'_>) -> Cause {
    if let Some(c) = eviction_cause(line) {
        return c;
    }
    classify_text(&lower_text(line))
}

/// [`classify_not_ready`] for a text already lower-cased.
fn classify_text(lower: &str) -> Cause {
    ORDER
        .iter()
        .find(|(_, words)| words.iter().any(|w| lower.contains(w)))
        .map_or(Cause::Unknown, |(c, _)| *c)
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::{SignalKind, recognize};
    use super::Cause;
    use crate::parse::parse_line;

    /// (line, kind, node, cause): every format of every not-ready wording.
    const CASES: &[(&str, SignalKind, Option<&str>, Cause)] = &[
        // structured, 1.21+ (the issue's lines)
        (
            r#"E0101 10:00:00.000000    2001 kubelet.go:2862] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized""#,
            SignalKind::NotReady,
            None,
            Cause::Cni,
        ),
        (
            r#"E0101 10:00:00.000000    2001 kubelet.go:2386] "Skipping pod synchronization" err="container runtime is down""#,
            SignalKind::NotReady,
            None,
            Cause::Runtime,
        ),
        (
            r#"E0101 10:00:00.000000    2001 kubelet.go:2853] "Container runtime not ready" runtimeReady="RuntimeReady=false reason:ContainerdNotReady message:containerd is not ready""#,
            SignalKind::NotReady,
            None,
            Cause::Runtime,
        ),
        (
            r#"E0101 10:00:00.000000    2001 kubelet.go:2386] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s""#,
            SignalKind::NotReady,
            None,
            Cause::Pleg,
        ),
        (
            r#"I0101 10:00:00.000000    2001 setters.go:602] "Node became not ready" node="w4" condition={"type":"Ready","status":"False","lastHeartbeatTime":"2026-01-01T10:00:00Z","lastTransitionTime":"2026-01-01T10:00:00Z","reason":"KubeletNotReady","message":"PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s"}"#,
            SignalKind::NotReady,
            Some("w4"),
            Cause::Pleg,
        ),
        (
            r#"W0101 10:00:00.000000    2001 eviction_manager.go:369] "Eviction manager: attempting to reclaim" resourceName="ephemeral-storage""#,
            SignalKind::NotReady,
            None,
            Cause::DiskPressure,
        ),
        (
            r#"I0101 10:00:00.000000    2001 eviction_manager.go:380] "Eviction manager: must evict pod(s) to reclaim" resourceName="memory""#,
            SignalKind::NotReady,
            None,
            Cause::MemoryPressure,
        ),
        (
            r#"I0101 10:00:00.000000    2001 eviction_manager.go:380] "Eviction manager: attempting to reclaim" resourceName="pids""#,
            SignalKind::NotReady,
            None,
            Cause::PidPressure,
        ),
        // 1.21's start-up aggregate, which every kubelet writes as it
        // starts: supporting only (never opens an incident); the runtime's,
        // first in the order (fixtures/real-logs/kubernetes-kubernetes-21248.txt).
        (
            r#"E0610 02:55:28.384965   64201 kubelet.go:1870] "Skipping pod synchronization" err="[container runtime status check may not have completed yet, PLEG is not healthy: pleg has yet to be successful]""#,
            SignalKind::NotReadySupport,
            None,
            Cause::Runtime,
        ),
        // 1.18's legacy form of it (fixtures/real-logs/superedge-superedge-90.txt)
        (
            "I0421 15:53:58.700851    4744 kubelet.go:1826] skipping pod synchronization - [container runtime status check may not have completed yet., PLEG is not healthy: pleg has yet to be successful.]",
            SignalKind::NotReadySupport,
            None,
            Cause::Runtime,
        ),
        // A start-up state beside real trouble is trouble.
        (
            r#"E0101 10:00:00.000000    2001 kubelet.go:2386] "Skipping pod synchronization" err="[container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized, PLEG is not healthy: pleg has yet to be successful]""#,
            SignalKind::NotReady,
            None,
            Cause::Cni,
        ),
        // 1.1–1.2 (fixtures/real-logs/kubernetes-kubernetes-18190.txt)
        (
            "I1204 06:26:09.828470   29219 kubelet.go:1735] Skipping pod synchronization, container runtime is not up.",
            SignalKind::NotReady,
            None,
            Cause::Runtime,
        ),
        (
            "I1204 06:26:09.828470   29219 kubelet.go:1739] Skipping pod synchronization, network is not configured",
            SignalKind::NotReady,
            None,
            Cause::Cni,
        ),
        // 1.3–1.5 with no network plugin and no pod CIDR
        // (fixtures/real-logs/kubernetes-kubernetes-36137.txt)
        (
            "I1103 05:35:07.258534   13249 kubelet.go:1609] skipping pod synchronization - [network state unknown]",
            SignalKind::NotReady,
            None,
            Cause::Cni,
        ),
        // legacy printf, <=1.20
        (
            "E0101 10:00:00.000000    2001 kubelet.go:2188] Container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:docker: network plugin is not ready: cni config uninitialized",
            SignalKind::NotReady,
            None,
            Cause::Cni,
        ),
        // fixtures/real-logs/kubernetes-kubeadm-1082.txt
        (
            "I0830 11:17:56.125521    2417 kubelet.go:1775] skipping pod synchronization - [container runtime is down]",
            SignalKind::NotReady,
            None,
            Cause::Runtime,
        ),
        (
            "E0101 10:00:00.000000    2001 kubelet.go:1845] skipping pod synchronization - [PLEG is not healthy: pleg was last seen active 3m5.30437579s ago; threshold is 3m0s]",
            SignalKind::NotReady,
            None,
            Cause::Pleg,
        ),
        (
            "I0101 10:00:00.000000    2001 setters.go:539] Node became not ready: {Type:Ready Status:False LastHeartbeatTime:2019-01-01 10:00:00 +0000 UTC m=+200.1 LastTransitionTime:2019-01-01 10:00:00 +0000 UTC m=+200.1 Reason:KubeletNotReady Message:PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s}",
            SignalKind::NotReady,
            None,
            Cause::Pleg,
        ),
        (
            "I0101 10:00:00.000000    2001 setters.go:539] Node became not ready: {Type:Ready Status:False LastHeartbeatTime:2019-01-01 10:00:00 +0000 UTC m=+2.1 LastTransitionTime:2019-01-01 10:00:00 +0000 UTC m=+2.1 Reason:KubeletNotReady Message:runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:docker: network plugin is not ready: cni config uninitialized}",
            SignalKind::NotReady,
            None,
            Cause::Cni,
        ),
        (
            "W0101 10:00:00.000000    2001 eviction_manager.go:344] eviction manager: attempting to reclaim nodefs",
            SignalKind::NotReady,
            None,
            Cause::DiskPressure,
        ),
        (
            "I0101 10:00:00.000000    2001 eviction_manager.go:362] eviction manager: must evict pod(s) to reclaim imagefs",
            SignalKind::NotReady,
            None,
            Cause::DiskPressure,
        ),
        (
            r#"E0101 10:00:00.000000    2001 kubelet_node_status.go:700] "Node not becoming ready in time after startup""#,
            SignalKind::NotReady,
            None,
            Cause::Unknown,
        ),
        // JSON logging (--logging-format=json)
        (
            r#"{"ts":1767261600000.123,"caller":"kubelet/kubelet.go:2862","msg":"Container runtime network not ready","v":0,"networkReady":"NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"}"#,
            SignalKind::NotReady,
            None,
            Cause::Cni,
        ),
        (
            r#"{"ts":1767261600000.123,"caller":"nodestatus/setters.go:602","msg":"Node became not ready","v":0,"node":{"name":"w5"},"condition":{"type":"Ready","status":"False","reason":"KubeletNotReady","message":"container runtime is down"}}"#,
            SignalKind::NotReady,
            Some("w5"),
            Cause::Runtime,
        ),
        (
            r#"{"ts":1767261600000.123,"caller":"eviction/eviction_manager.go:369","msg":"Eviction manager: attempting to reclaim","v":0,"resourceName":"ephemeral-storage"}"#,
            SignalKind::NotReady,
            None,
            Cause::DiskPressure,
        ),
        // Windows kubelets write the same header
        (
            r#"E0101 10:00:00.000000    4312 kubelet.go:2862] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized""#,
            SignalKind::NotReady,
            None,
            Cause::Cni,
        ),
        (
            "E0101 10:00:00.000000    2001 kubelet.go:2180] Container runtime not ready: RuntimeReady=false reason:DockerDaemonNotReady message:docker: failed to get docker version: Cannot connect to the Docker daemon at unix:///var/run/docker.sock",
            SignalKind::NotReady,
            None,
            Cause::Runtime,
        ),
        // supporting
        (
            r#"E0101 10:00:00.000000    2001 kubelet.go:2200] "Unable to update cni config" err="no networks found in /etc/cni/net.d""#,
            SignalKind::NotReadySupport,
            None,
            Cause::Cni,
        ),
        (
            "E0101 10:00:00.000000    2001 cni.go:385] Error validating CNI config list {\"cniVersion\":\"1.0.0\"}: [plugin flannel does not support config version \"1.0.0\"]",
            SignalKind::NotReadySupport,
            None,
            Cause::Cni,
        ),
        (
            "E0101 10:00:00.000000    2001 remote_runtime.go:434] Status from runtime service failed: rpc error: code = Unavailable desc = all SubConns are in TransientFailure",
            SignalKind::NotReadySupport,
            None,
            Cause::Runtime,
        ),
        (
            "E0101 10:00:00.000000    2001 generic.go:205] GenericPLEG: Unable to retrieve pods: rpc error: code = Unknown desc = operation timeout: context deadline exceeded",
            SignalKind::NotReadySupport,
            None,
            Cause::Pleg,
        ),
        (
            "W0101 10:00:00.000000    2001 cni.go:237] Unable to update cni config: no networks found in /etc/cni/net.d",
            SignalKind::NotReadySupport,
            None,
            Cause::Cni,
        ),
        (
            r#"E0101 10:00:00.000000    2001 remote_runtime.go:633] "Status from runtime service failed" err="rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing dial unix /run/containerd/containerd.sock: connect: connection refused\"""#,
            SignalKind::NotReadySupport,
            None,
            Cause::Runtime,
        ),
        (
            r#"E0101 10:00:00.000000    2001 generic.go:205] "GenericPLEG: Unable to retrieve pods" err="rpc error: code = DeadlineExceeded desc = context deadline exceeded""#,
            SignalKind::NotReadySupport,
            None,
            Cause::Pleg,
        ),
    ];

    /// The lines of every readiness row (the table's test checks that each
    /// row has one).
    pub(in crate::signals) fn texts() -> impl Iterator<Item = &'static str> {
        CASES.iter().map(|c| c.0).chain(READY.iter().copied())
    }

    const READY: &[&str] = &[
        r#"I0313 12:15:05.665107    2928 kubelet_node_status.go:493] "Fast updating node status as it just became ready""#,
        r#"I0101 10:00:00.000000    2001 kubelet_node_status.go:724] "Recording event message for node" node="w1" event="NodeReady""#,
        "I0101 10:00:00.000000    2001 kubelet_node_status.go:454] Recording NodeReady event message for node w1",
        r#"I0101 10:00:00.000000    2001 event.go:294] "Event occurred" object="w1" kind="Node" apiVersion="" type="Normal" reason="NodeReady" message="Node w1 status is now: NodeReady""#,
        r#"I0101 10:00:00.000000    2001 event.go:221] Event(v1.ObjectReference{Kind:"Node", Name:"w1", UID:"w1", APIVersion:"", ResourceVersion:"", FieldPath:""}): type: 'Normal' reason: 'NodeReady' Node w1 status is now: NodeReady"#,
        r#"{"ts":1767261600000.123,"caller":"kubelet/kubelet_node_status.go:493","msg":"Fast updating node status as it just became ready","v":0}"#,
    ];

    #[test]
    fn not_ready_lines_in_every_format() {
        for (text, kind, node, cause) in CASES {
            let line = parse_line(text);
            let sig = recognize(&line).unwrap_or_else(|| panic!("not recognised: {text}"));
            assert_eq!(sig.kind, *kind, "{text}");
            assert_eq!(sig.cause, Some(*cause), "{text}");
            assert_eq!(sig.node.as_deref(), *node, "{text}");
            assert!(super::super::is_kubelet_line(&line), "{text}");
        }
    }

    #[test]
    fn ready_markers_in_every_format() {
        for text in READY {
            let sig = recognize(&parse_line(text)).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(sig.kind, SignalKind::NodeReady, "{text}");
        }
    }

    #[test]
    fn other_lines_are_not_readiness() {
        for text in [
            // the NodeNotReady event, and other conditions' events, say no cause
            r#"I0101 10:00:00.000000    2001 kubelet_node_status.go:724] "Recording event message for node" node="w1" event="NodeHasSufficientMemory""#,
            // the eviction manager's routine lines
            r#"I0101 10:00:00.000000    2001 eviction_manager.go:189] "Eviction manager: starting control loop""#,
            r#"I0101 10:00:00.000000    2001 kubelet.go:2400] "SyncLoop ADD" source="api" pods=["kube-system/kube-proxy-x"]"#,
        ] {
            let kind = recognize(&parse_line(text)).map(|s| s.kind);
            assert!(
                kind.is_none_or(|k| !k.is_not_ready() && k != SignalKind::NodeReady),
                "{text}: {kind:?}"
            );
        }
    }

    /// The kubelet's own count of PLEG's stall: the last relist's age less
    /// the threshold, in every form of the words; none for the never-relisted
    /// sentinel of kubelets before 1.13, nor for text without it.
    #[test]
    fn pleg_says_how_long_it_has_been_unhealthy() {
        use super::pleg_unhealthy_for as f;
        const S: i64 = 1_000_000;
        for (text, want) in [
            // fixtures/real-logs/aws-samples-eks-workshop-v2-447.txt
            (
                r#"e0413 "skipping pod synchronization" err="pleg is not healthy: pleg was last seen active 2h33m12.704970756s ago; threshold is 3m0s""#,
                Some(2 * 3600 * S + 30 * 60 * S + 12 * S + 704_970),
            ),
            (
                "skipping pod synchronization - [pleg is not healthy: pleg was last seen active 3m5.30015447s ago; threshold is 3m0s]",
                Some(5 * S + 300_154),
            ),
            (
                "node became not ready: {type:ready status:false reason:kubeletnotready message:pleg is not healthy: pleg was last seen active 16h17m50.791825508s ago; threshold is 3m0s}",
                Some(16 * 3600 * S + 14 * 60 * S + 50 * S + 791_825),
            ),
            (
                "pleg is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s",
                Some(S / 2),
            ),
            (
                "[container runtime is down pleg is not healthy: pleg was last seen active 2562047h47m16.854775807s ago; threshold is 3m0s]",
                None,
            ),
            ("pleg is not healthy: pleg has yet to be successful", None),
            ("pleg was last seen active 2m ago; threshold is 3m0s", None),
            (
                "pleg was last seen active soon ago; threshold is 3m0s",
                None,
            ),
        ] {
            assert_eq!(f(text), want, "{text}");
        }
    }

    #[test]
    fn within_a_line_the_first_cause_of_the_order_wins() {
        assert_eq!(
            super::classify_text(
                "[container runtime network not ready: networkready=false, container runtime is down, pleg is not healthy]"
            ),
            Cause::Runtime
        );
        assert_eq!(
            super::classify_text("pleg is not healthy; cni config uninitialized"),
            Cause::Cni
        );
        assert_eq!(super::classify_text("something else"), Cause::Unknown);
    }
}
