//! A pod's sandbox in the kubelet's words (design 5.6): which pod a failed
//! sandbox creation or a started container is about, in every wording, and
//! what the failure's error points at.

use super::Cause;
use crate::parse::parse_line;

/// What a failed sandbox creation's error text points at (design 5.6),
/// the first of this order that its words name: the network plugin had no
/// address to give (`ip-exhausted`: aws-cni's `failed to assign an IP
/// address`, host-local's `no IP addresses available in range set`,
/// Calico's and Cilium's exhausted or full ranges), the node's open files
/// (`runtime`), the sandbox image (`image`), a deadline (`timeout`), any
/// other failure to set up the sandbox's network (`cni`), the runtime
/// (`runtime`: shim, task, OCI, cgroup), else `unknown`.
#[must_use]
pub fn classify_sandbox(text: &str) -> Cause {
    let l = text.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| l.contains(n));
    let ipam = l.contains("ipam") || l.contains("ip pool") || l.contains("range");
    if has(&[
        "failed to assign an ip address",
        "no ip addresses available",
        "no ipv4 addresses available",
        "no ipv6 addresses available",
        "no available ip addresses",
        "no free ip",
        "no more free affine blocks",
        "ip address pool exhausted",
    ]) || (ipam && has(&["exhausted", "is full", "range full", "no more ips"]))
    {
        Cause::IpExhausted
    } else if has(&["too many open files"]) {
        // The runtime (or a plugin it runs) out of file descriptors: the
        // node's limits, whatever step failed.
        Cause::Runtime
    } else if has(&[
        "failed to get sandbox image",
        "sandbox image",
        "pause image",
        "failed pulling image",
        "failed to pull image",
        "error pulling image",
    ]) {
        Cause::Image
    } else if has(&["code = deadlineexceeded", "context deadline exceeded"]) {
        Cause::Timeout
    } else if has(&[
        "failed to setup network for sandbox",
        "failed to set up sandbox container",
        "networkplugin cni failed",
        "network plugin cni failed",
        "plugin type=",
        "cni plugin",
        "/etc/cni/net.d",
        "network: ",
    ]) {
        Cause::Cni
    } else if has(&[
        "shim",
        "failed to create containerd task",
        "failed to start sandbox container",
        "oci runtime",
        "runc",
        "cgroup",
        "failed to create a sandbox for pod",
        "failed to reserve sandbox name",
        "failed to generate sandbox container spec",
        "failed to create sandbox",
        "error response from daemon",
        "failed to start sandbox",
    ]) {
        Cause::Runtime
    } else {
        Cause::Unknown
    }
}

/// How specific a sandbox cause is: one attempt's lines (the runtime's,
/// the sandbox's, the pod worker's) say the same error with more or fewer
/// words (a paste that cut one short), and the attempt takes the most
/// specific.
#[must_use]
pub fn sandbox_specificity(c: Cause) -> u8 {
    if c == Cause::IpExhausted {
        5
    } else if c == Cause::Image {
        4
    } else if c == Cause::Timeout {
        3
    } else if c == Cause::Runtime {
        2
    } else {
        u8::from(c == Cause::Cni)
    }
}

/// The pod a sandbox line (a failed creation, a PLEG event) is about, as
/// `namespace/name`: the structured `pod=` (and JSON's `{"name","namespace"}`),
/// else the legacy `format.Pod` words (`name_namespace(uid)`) after `for pod
/// "`, `for "` (the pod worker's `failed to "CreatePodSandbox" for "…"`) or
/// PLEG's `SyncLoop (PLEG): "…"`. `None` for the runtime's own line
/// (`RunPodSandbox from runtime service failed`), which names no pod.
#[must_use]
pub fn sandbox_pod(text: &str) -> Option<String> {
    let line = parse_line(text);
    if let Some(p) = line.value("pod").filter(|p| !p.is_empty()) {
        return plausible_pod(p);
    }
    let msg = line.message();
    // The runtime's own line names the pod only inside the plugin's error,
    // in the plugin's words (`network for pod "coredns-x"`): not its key.
    if msg.starts_with("RunPodSandbox") {
        return None;
    }
    let (start, needle) = [
        "for pod \"",
        "failed to \"CreatePodSandbox\" for \"",
        "(PLEG): \"",
    ]
    .into_iter()
    .filter_map(|n| msg.find(n).map(|at| (at, n)))
    .min()?;
    let rest = &msg[start + needle.len()..];
    let end = rest.find('"').unwrap_or(rest.len());
    legacy_pod(&rest[..end])
}

/// `name_namespace(uid)` (`format.Pod`) as `namespace/name`: neither a
/// pod's name nor a namespace may hold `_`.
pub(super) fn legacy_pod(s: &str) -> Option<String> {
    let s = s.split('(').next().unwrap_or(s).trim();
    match s.split_once('_') {
        Some((name, ns)) if !name.is_empty() && !ns.is_empty() => {
            plausible_pod(&format!("{ns}/{name}"))
        }
        _ => plausible_pod(s),
    }
}

/// Pod names are DNS subdomains (and a namespace a label): nothing else
/// in that place is one; bounded like a node's name.
pub(super) fn plausible_pod(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()
        && s.len() <= 317
        && !s.contains(|c: char| c.is_whitespace() || c.is_control() || c == '"'))
    .then(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_of_failed_sandboxes() {
        for (text, want) in [
            (
                r#"rpc error: code = Unknown desc = failed to setup network for sandbox "2585": plugin type="aws-cni" name="aws-cni" failed (add): add cmd: failed to assign an IP address to container"#,
                Cause::IpExhausted,
            ),
            (
                "rpc error: code = Unknown desc = NetworkPlugin cni failed to set up pod \"myzep_myzep\" network: failed to allocate for range 0: no IP addresses available in range set: 10.42.0.1-10.42.0.254",
                Cause::IpExhausted,
            ),
            (
                r#"failed to setup network for sandbox "x": plugin type="calico" failed (add): error getting IP from IPAM: IPAM range exhausted"#,
                Cause::IpExhausted,
            ),
            (
                r#"failed to setup network for sandbox "x": plugin type="cilium-cni" failed (add): unable to allocate IP via local cilium agent: range is full"#,
                Cause::IpExhausted,
            ),
            (
                r#"rpc error: code = Unknown desc = failed to setup network for sandbox "x": plugin type="flannel" failed (add): open /run/flannel/subnet.env: no such file or directory"#,
                Cause::Cni,
            ),
            (
                r#"rpc error: code = Unknown desc = failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: too many open files: unknown"#,
                Cause::Runtime,
            ),
            (
                r#"rpc error: code = Unknown desc = failed to create containerd task: failed to create shim task: OCI runtime create failed: unable to apply cgroup configuration"#,
                Cause::Runtime,
            ),
            (
                r#"rpc error: code = Unknown desc = failed to get sandbox image "registry.k8s.io/pause:3.9": failed to pull image "registry.k8s.io/pause:3.9": dial tcp 34.96.108.209:443: i/o timeout"#,
                Cause::Image,
            ),
            (
                "rpc error: code = DeadlineExceeded desc = context deadline exceeded",
                Cause::Timeout,
            ),
            (
                "rpc error: code = Unknown desc = something new",
                Cause::Unknown,
            ),
        ] {
            assert_eq!(classify_sandbox(text), want, "{text}");
        }
    }

    #[test]
    fn pods_of_sandbox_lines() {
        for (text, want) in [
            (
                r#"E0715 16:24:50.000000    2001 kuberuntime_manager.go:1172] "CreatePodSandbox for pod failed" err="rpc error" pod="default/web-3""#,
                Some("default/web-3"),
            ),
            (
                r#"E0711 15:11:17.994678   24727 kuberuntime_sandbox.go:54] CreatePodSandbox for pod "myzep-79945ccb7f-rz8ld_myzep(4ae2623a-8519-11e8-9f37-005056021169)" failed: rpc error"#,
                Some("myzep/myzep-79945ccb7f-rz8ld"),
            ),
            (
                r#"E0711 15:11:17.994753   24727 pod_workers.go:186] Error syncing pod 4ae2623a-8519-11e8-9f37-005056021169 ("myzep-79945ccb7f-rz8ld_myzep(4ae2623a-8519-11e8-9f37-005056021169)"), skipping: failed to "CreatePodSandbox" for "myzep-79945ccb7f-rz8ld_myzep(4ae2623a-8519-11e8-9f37-005056021169)""#,
                Some("myzep/myzep-79945ccb7f-rz8ld"),
            ),
            (
                r#"I0101 00:00:00.000000    2001 kubelet.go:1865] SyncLoop (PLEG): "web-3_default(96d459e4)", event: &pleg.PodLifecycleEvent{ID:"96d459e4", Type:"ContainerStarted", Data:"578f"}"#,
                Some("default/web-3"),
            ),
            (
                r#"{"ts":1700000000000.1,"caller":"kuberuntime/kuberuntime_manager.go:1172","msg":"CreatePodSandbox for pod failed","pod":{"name":"web-3","namespace":"default"},"err":"rpc error"}"#,
                Some("default/web-3"),
            ),
            (
                r#"E0418 19:09:56.012799    3852 remote_runtime.go:92] RunPodSandbox from runtime service failed: rpc error: code = Unknown desc = NetworkPlugin cni failed to set up pod "fluentd-pxks9_kube-system" network: add cmd: failed to assign an IP address to container"#,
                None,
            ),
        ] {
            assert_eq!(sandbox_pod(text).as_deref(), want, "{text}");
        }
    }
}
