//! The table itself: every recognised wording, the versions that write it,
//! and how a row matches a line. [`super`] looks lines up in it.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use super::SignalKind;
use crate::parse::Line;

/// How a row matches.
#[derive(Debug, Clone, Copy)]
pub enum Form {
    /// A structured line whose message is exactly this.
    Structured(&'static str),
    /// A structured line with this message whose `key` value contains `needle`.
    StructuredWith(&'static str, &'static str, &'static str),
    /// A legacy line that starts with this.
    LegacyPrefix(&'static str),
    /// A legacy line that is exactly this.
    LegacyExact(&'static str),
    /// A legacy line that contains this.
    LegacyContains(&'static str),
    /// A legacy line of the shape `node "X" not found` (the whole body).
    LegacyNodeNotFound,
    /// Any line of severity `F` (klog's Fatal: the process exits after it).
    FatalSeverity,
    /// A structured line with this message of the kubelet's client
    /// certificate manager: no `logger`, or one that names it
    /// (`kubernetes.io/kube-apiserver-client-kubelet`, with `.UnhandledError`
    /// for its errors). The serving certificate's manager
    /// (`kubernetes.io/kubelet-serving`) writes the same words: not a
    /// client certificate's line.
    ClientCert(&'static str),
    /// A legacy line that starts with the first and ends with the second.
    LegacyBetween(&'static str, &'static str),
}

/// The client certificate manager's name, as its lines carry it (1.20+).
const CLIENT_CERT: &str = "kubernetes.io/kube-apiserver-client-kubelet";

#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub kind: SignalKind,
    pub form: Form,
    /// Kubernetes versions that write this wording (`messages.md`): the
    /// table's documentation, checked for form by the tests, read by no code.
    #[cfg_attr(not(test), allow(dead_code))]
    pub versions: &'static str,
}

const fn row(kind: SignalKind, form: Form, versions: &'static str) -> Row {
    Row {
        kind,
        form,
        versions,
    }
}

use Form::{
    ClientCert, FatalSeverity, LegacyBetween, LegacyContains, LegacyExact, LegacyNodeNotFound,
    LegacyPrefix, Structured, StructuredWith,
};
use SignalKind as K;

/// Every recognised wording. First match wins, so more specific rows come
/// before the rows whose text they extend.
pub static TABLE: &[Row] = &[
    // §2 node status heartbeat.
    row(
        K::StatusRetry,
        Structured("Error updating node status, will retry"),
        "1.21+",
    ),
    row(
        K::StatusRetry,
        Structured("Error updating node status, will retry with syncNodeStatus"),
        "1.27+",
    ),
    row(
        K::StatusRetry,
        LegacyPrefix("Error updating node status, will retry: "),
        "<=1.20",
    ),
    row(
        K::StatusRetry,
        LegacyPrefix("error updating node status, will retry: "),
        "2015",
    ),
    row(
        K::StatusExhausted,
        Structured("Unable to update node status"),
        "1.21+",
    ),
    row(
        K::StatusExhausted,
        LegacyPrefix("Unable to update node status: "),
        "<=1.20",
    ),
    row(
        K::StatusExhausted,
        LegacyPrefix("Update node status exceeds retry count"),
        "2015",
    ),
    // §3 the node is not in the lister.
    row(K::ListerMiss, Structured("Error getting node"), "1.21-1.26"),
    row(
        K::ListerMiss,
        Structured("Error getting the current node from lister"),
        "1.27+",
    ),
    row(K::ListerMiss, LegacyNodeNotFound, "1.12-1.20"),
    row(
        K::ListerMiss,
        StructuredWith(
            "Eviction manager: failed to get summary stats",
            "err",
            "failed to get node info",
        ),
        "1.21+",
    ),
    row(
        K::ListerMiss,
        LegacyPrefix("eviction manager: unexpected err: failed to get node info: "),
        "<=1.20",
    ),
    row(
        K::ListerMiss,
        Structured(
            "No need to create a mirror pod, since failed to get node info from the cluster",
        ),
        "1.31+",
    ),
    row(
        K::ListerMiss,
        Structured("Failed to get node when trying to set owner ref to the node lease"),
        "1.21+",
    ),
    row(
        K::ListerMiss,
        LegacyContains("when trying to set owner ref to the node lease"),
        "1.13-1.20",
    ),
    // §1 registration.
    row(
        K::RegisterFailed,
        Structured("Unable to register node with API server"),
        "1.21+",
    ),
    row(
        K::RegisterFailed,
        Structured("Unable to register node with API server, error getting existing node"),
        "1.21+",
    ),
    row(
        K::RegisterFailed,
        Structured("Unable to register node with API server, no node instance returned"),
        "1.21+",
    ),
    row(
        K::RegisterFailed,
        Structured("Unable to reconcile node with API server,error updating node"),
        "1.21+",
    ),
    row(
        K::RegisterFailed,
        Structured("Unable to construct v1.Node object for kubelet"),
        "1.21+",
    ),
    row(
        K::RegisterFailed,
        LegacyPrefix("Unable to register node "),
        "1.5-1.20",
    ),
    row(
        K::RegisterFailed,
        LegacyPrefix("Unable to reconcile node "),
        "1.5-1.20",
    ),
    row(
        K::RegisterFailed,
        LegacyPrefix("Unable to construct v1.Node object for kubelet: "),
        "<=1.20",
    ),
    row(
        K::RegisterFailed,
        LegacyPrefix("Unable to register "),
        "<=1.4",
    ),
    // kubelet.go ≤1.4: the AlreadyExists path's follow-up GET, and a nil node.
    row(
        K::RegisterFailed,
        LegacyPrefix("error getting node \""),
        "<=1.4",
    ),
    row(
        K::RegisterFailed,
        LegacyPrefix("no node instance returned for "),
        "<=1.4",
    ),
    row(
        K::RegisterFailed,
        LegacyPrefix("Unable to construct api.Node object for kubelet: "),
        "<=1.5",
    ),
    row(
        K::RegisterAttempt,
        Structured("Attempting to register node"),
        "1.21+",
    ),
    row(
        K::RegisterAttempt,
        LegacyPrefix("Attempting to register node "),
        "<=1.20",
    ),
    row(
        K::Registered,
        Structured("Successfully registered node"),
        "1.21+",
    ),
    row(
        K::Registered,
        LegacyPrefix("Successfully registered node "),
        "<=1.20",
    ),
    // AlreadyExists: the node is registered (≤1.4 stops here; later
    // versions reconcile, then say "Successfully registered node").
    row(
        K::Registered,
        Structured("Node was previously registered"),
        "1.21+",
    ),
    row(
        K::Registered,
        LegacyContains(" was previously registered"),
        "<=1.20",
    ),
    // §6 node lease.
    row(
        K::LeaseFailed,
        Structured("Failed to ensure lease exists, will retry"),
        "1.27+",
    ),
    row(
        K::LeaseFailed,
        Structured("Failed to update lease"),
        "1.27+",
    ),
    row(
        K::LeaseFailed,
        Structured("Will retry updating lease"),
        "1.27+",
    ),
    row(
        K::LeaseFailed,
        Structured("Failed to prepare lease"),
        "1.29+",
    ),
    row(
        K::LeaseFailed,
        Structured("failed to update lease using latest lease, fallback to ensure lease"),
        "1.27+",
    ),
    row(
        K::LeaseFailed,
        LegacyPrefix("failed to ensure node lease exists, will retry in "),
        "1.13-1.19",
    ),
    row(
        K::LeaseFailed,
        LegacyPrefix("failed to ensure lease exists, will retry in "),
        "1.20-1.26",
    ),
    row(
        K::LeaseFailed,
        LegacyPrefix("failed to update node lease, error: "),
        "1.13-1.19",
    ),
    row(
        K::LeaseFailed,
        LegacyPrefix("failed to update lease, error: "),
        "1.20-1.26",
    ),
    row(
        K::LeaseFailed,
        LegacyPrefix("failed to update lease using latest lease, fallback to ensure lease, err: "),
        "1.20-1.26",
    ),
    row(
        K::LeaseFailed,
        LegacyContains("attempts to update node lease, will retry after "),
        "1.13-1.19",
    ),
    row(
        K::LeaseFailed,
        LegacyContains("attempts to update lease, will retry after "),
        "1.20-1.26",
    ),
    // §5 reflectors.
    row(K::WatchFailed, Structured("Failed to watch"), "1.33+"),
    row(
        K::WatchFailed,
        StructuredWith("Unhandled Error", "err", ": Failed to watch *"),
        "1.31-1.32",
    ),
    row(
        K::WatchFailed,
        LegacyContains(": Failed to watch *"),
        "1.19-1.30",
    ),
    row(
        K::WatchFailed,
        LegacyContains(": Failed to list *"),
        "<=1.18",
    ),
    row(
        K::WatchFailed,
        LegacyContains(": failed to list *"),
        "1.23-1.32",
    ),
    // §3, §5 caches and the node informer.
    row(K::CachesSynced, Structured("Caches are synced"), "1.33+"),
    row(
        K::CachesSynced,
        LegacyPrefix("Caches are synced for "),
        "<=1.32",
    ),
    row(
        K::CachesSynced,
        StructuredWith("Caches populated", "type", "*v1.Node"),
        "1.33+",
    ),
    row(
        K::CachesSynced,
        LegacyPrefix("Caches populated for *v1.Node from "),
        "1.29-1.32",
    ),
    row(K::CachesSynced, Structured("Watching apiserver"), "1.21+"),
    row(K::CachesSynced, LegacyExact("Watching apiserver"), "<=1.20"),
    // §2, §3 the node became Ready.
    row(
        K::NodeReady,
        Structured("Fast updating node status as it just became ready"),
        "1.27+",
    ),
    row(
        K::NodeReady,
        StructuredWith("Recording event message for node", "event", "NodeReady"),
        "1.21+",
    ),
    row(
        K::NodeReady,
        LegacyPrefix("Recording NodeReady event message for node "),
        "<=1.20",
    ),
    // Legacy and structured event-broadcaster lines of the NodeReady event
    // (`Node X status is now: NodeReady`).
    row(
        K::NodeReady,
        StructuredWith("Event occurred", "reason", "NodeReady"),
        "1.21+",
    ),
    row(
        K::NodeReady,
        LegacyContains("reason: 'NodeReady' "),
        "<=1.20",
    ),
    // §8 not ready while the kubelet runs (design 5.3).
    row(
        K::NotReady,
        Structured("Container runtime network not ready"),
        "1.21+",
    ),
    row(
        K::NotReady,
        LegacyPrefix("Container runtime network not ready: "),
        "<=1.20",
    ),
    row(
        K::NotReady,
        Structured("Container runtime not ready"),
        "1.21+",
    ),
    row(
        K::NotReady,
        LegacyPrefix("Container runtime not ready: "),
        "<=1.20",
    ),
    row(
        K::NotReady,
        Structured("Skipping pod synchronization"),
        "1.21+",
    ),
    row(
        K::NotReady,
        LegacyPrefix("skipping pod synchronization - "),
        "<=1.20",
    ),
    // 1.1–1.2: `Skipping pod synchronization, container runtime is not
    // up.` and `…, network is not configured`.
    row(
        K::NotReady,
        LegacyPrefix("Skipping pod synchronization, "),
        "<=1.2",
    ),
    row(K::NotReady, Structured("Node became not ready"), "1.21+"),
    row(
        K::NotReady,
        LegacyPrefix("Node became not ready: "),
        "<=1.20",
    ),
    row(
        K::NotReady,
        Structured("Node not becoming ready in time after startup"),
        "1.27+",
    ),
    row(
        K::NotReady,
        Structured("Eviction manager: attempting to reclaim"),
        "1.21+",
    ),
    row(
        K::NotReady,
        LegacyPrefix("eviction manager: attempting to reclaim "),
        "<=1.20",
    ),
    row(
        K::NotReady,
        Structured("Eviction manager: must evict pod(s) to reclaim"),
        "1.21+",
    ),
    row(
        K::NotReady,
        LegacyPrefix("eviction manager: must evict pod(s) to reclaim "),
        "<=1.20",
    ),
    row(
        K::NotReadySupport,
        Structured("Unable to update cni config"),
        "1.21+",
    ),
    row(
        K::NotReadySupport,
        LegacyPrefix("Unable to update cni config: "),
        "<=1.20",
    ),
    row(
        K::NotReadySupport,
        LegacyPrefix("Error validating CNI config "),
        "<=1.23",
    ),
    row(
        K::NotReadySupport,
        Structured("Status from runtime service failed"),
        "1.21+",
    ),
    row(
        K::NotReadySupport,
        LegacyPrefix("Status from runtime service failed: "),
        "<=1.20",
    ),
    row(
        K::NotReadySupport,
        Structured("GenericPLEG: Unable to retrieve pods"),
        "1.21+",
    ),
    row(
        K::NotReadySupport,
        LegacyPrefix("GenericPLEG: Unable to retrieve pods: "),
        "<=1.20",
    ),
    // The client certificate manager (client-go `util/certificate`, design
    // 5.7). Before 1.20 its lines carry no name (the serving certificate's
    // manager, with `serverTLSBootstrap`, writes the same: read as the
    // client's); 1.20-1.29 put the manager's name before the words; later
    // ones carry it as `logger=`. The serving manager's lines
    // (`kubernetes.io/kubelet-serving`) match no row.
    row(
        K::CertDeadline,
        ClientCert("Certificate rotation deadline determined"),
        "1.30+",
    ),
    row(
        K::CertDeadline,
        LegacyPrefix("kubernetes.io/kube-apiserver-client-kubelet: Certificate expiration is "),
        "1.20-1.29",
    ),
    row(
        K::CertDeadline,
        LegacyPrefix("Certificate expiration is "),
        "1.8-1.19",
    ),
    row(
        K::CertRotating,
        ClientCert("Rotating certificates"),
        "1.30+",
    ),
    row(
        K::CertRotating,
        LegacyExact("kubernetes.io/kube-apiserver-client-kubelet: Rotating certificates"),
        "1.20-1.29",
    ),
    row(
        K::CertRotating,
        LegacyExact("Rotating certificates"),
        "1.8-1.19",
    ),
    // csr.go's, the same for both managers.
    row(
        K::CertRotated,
        LegacyBetween("certificate signing request ", " is issued"),
        "1.8+",
    ),
    row(
        K::CertFailed,
        ClientCert("Failed while requesting a signed certificate from the control plane"),
        "1.33+",
    ),
    row(
        K::CertFailed,
        ClientCert("Certificate request was not signed"),
        "1.33+",
    ),
    row(
        K::CertFailed,
        StructuredWith(
            "Unhandled Error",
            "err",
            "kube-apiserver-client-kubelet: Failed while requesting a signed certificate",
        ),
        "1.31-1.32",
    ),
    row(
        K::CertFailed,
        StructuredWith(
            "Unhandled Error",
            "err",
            "kube-apiserver-client-kubelet: certificate request was not signed",
        ),
        "1.31-1.32",
    ),
    row(
        K::CertFailed,
        LegacyPrefix(
            "kubernetes.io/kube-apiserver-client-kubelet: Failed while requesting a signed certificate from the control plane: ",
        ),
        "1.20-1.30",
    ),
    row(
        K::CertFailed,
        LegacyPrefix(
            "kubernetes.io/kube-apiserver-client-kubelet: certificate request was not signed: ",
        ),
        "1.20-1.30",
    ),
    row(
        K::CertFailed,
        LegacyPrefix("Failed while requesting a signed certificate from the control plane: "),
        "1.19-1.20",
    ),
    row(
        K::CertFailed,
        LegacyPrefix("Failed while requesting a signed certificate from the master: "),
        "1.8-1.19",
    ),
    row(
        K::CertFailed,
        LegacyPrefix("certificate request was not signed: "),
        "1.8-1.20",
    ),
    // transport.go: the client certificate expired while the kubelet ran.
    row(
        K::CertExpired,
        LegacyPrefix("The currently active client certificate has expired"),
        "1.8-1.17",
    ),
    row(
        K::CertExpired,
        LegacyContains("since a valid client cert was found"),
        "1.18-1.20",
    ),
    row(
        K::CertExpired,
        Structured(
            "No valid client certificate is found but the server is not responsive. A restart may be necessary to retrieve new initial credentials.",
        ),
        "1.21+",
    ),
    row(
        K::CertExpired,
        Structured("No valid client certificate is found and the server is responsive, exiting."),
        "1.21+",
    ),
    // bootstrap.go at start: the kubeconfig's certificate expired.
    row(
        K::CertExpired,
        LegacyPrefix("Part of the existing bootstrap client certificate"),
        "1.10+",
    ),
    // Pods that cannot start on a Ready node (design 5.6). One failed
    // attempt writes the runtime's call, the sandbox's and the runtime
    // manager's lines and the pod worker's `CreatePodSandboxError`; only
    // the runtime's names no pod.
    row(
        K::SandboxFailed,
        Structured("RunPodSandbox from runtime service failed"),
        "1.21+",
    ),
    row(
        K::SandboxFailed,
        LegacyPrefix("RunPodSandbox from runtime service failed: "),
        "<=1.20",
    ),
    row(
        K::SandboxFailed,
        Structured("Failed to create sandbox for pod"),
        "1.21+",
    ),
    row(
        K::SandboxFailed,
        Structured("CreatePodSandbox for pod failed"),
        "1.21+",
    ),
    row(
        K::SandboxFailed,
        LegacyPrefix("CreatePodSandbox for pod "),
        "<=1.20",
    ),
    row(
        K::SandboxFailed,
        LegacyPrefix("createPodSandbox for pod "),
        "<=1.20",
    ),
    row(
        K::SandboxFailed,
        StructuredWith(
            "Error syncing pod, skipping",
            "err",
            "CreatePodSandboxError",
        ),
        "1.21+",
    ),
    row(
        K::SandboxFailed,
        LegacyContains(", skipping: failed to \"CreatePodSandbox\" for "),
        "<=1.20",
    ),
    // PLEG's event for a pod, at `--v=2` (a kubelet below it writes no
    // success at all): `ContainerStarted` only. `event=&{…}` in older
    // structured kubelets, JSON in newer.
    row(
        K::ContainerStarted,
        StructuredWith(
            "SyncLoop (PLEG): event for pod",
            "event",
            "ContainerStarted",
        ),
        "1.21+",
    ),
    row(
        K::ContainerStarted,
        LegacyContains("Type:\"ContainerStarted\""),
        "<=1.20",
    ),
    // §9 start-up.
    // The kubelet's fatal lines (design 5.1): it exits right after.
    row(K::KubeletFatal, Structured("command failed"), "1.21+"),
    row(
        K::KubeletFatal,
        Structured("Failed to start ContainerManager"),
        "1.21+",
    ),
    row(
        K::KubeletFatal,
        Structured("Failed to load kubelet config file"),
        "1.21+",
    ),
    row(
        K::KubeletFatal,
        LegacyPrefix("failed to run Kubelet: "),
        "<=1.20",
    ),
    row(
        K::KubeletFatal,
        LegacyPrefix("failed to load Kubelet config file"),
        "1.10-1.20",
    ),
    row(
        K::KubeletFatal,
        LegacyPrefix("failed to load kubelet config file"),
        "1.10-1.20",
    ),
    row(
        K::KubeletFatal,
        LegacyPrefix("failed to validate kubelet flags"),
        "1.10-1.20",
    ),
    row(
        K::KubeletFatal,
        LegacyPrefix("Failed to start ContainerManager"),
        "<=1.20",
    ),
    row(
        K::KubeletFatal,
        Structured("Failed to listen and serve"),
        "1.21+",
    ),
    row(K::KubeletStarted, Structured("Kubelet version"), "1.21+"),
    row(K::KubeletStarted, LegacyPrefix("Version: v"), "<=1.20"),
    row(K::KubeletStarted, Structured("Started kubelet"), "1.21+"),
    row(K::KubeletStarted, LegacyExact("Started kubelet"), "<=1.20"),
    // Last: any other klog Fatal line of the kubelet's (it exits right
    // after: `F… server.go:153] listen tcp 0.0.0.0:10250: bind: …`).
    row(K::KubeletFatal, FatalSeverity, "all"),
];

/// `node "X" not found` as a whole line: quoted (1.12-1.20), single-quoted
/// (pre-1.17 paths), or bare (2015).
fn legacy_node_not_found(t: &str) -> bool {
    let t = t.trim_end();
    // 2015: `error getting node: node X not found` (kubelet.go).
    let t = t.strip_prefix("error getting node: ").unwrap_or(t);
    (t.starts_with("node \"") && t.ends_with("\" not found"))
        || (t.starts_with("node '") && t.ends_with("' not found"))
        || t.strip_prefix("node ")
            .and_then(|r| r.strip_suffix(" not found"))
            .is_some_and(|name| !name.is_empty() && !name.contains(char::is_whitespace))
}

/// The rows a line can match, by its shape: a structured line only the
/// rows of its exact message, a legacy one only the legacy rows, any line
/// of severity `F` the Fatal rows. [`find`] looks in the line's own and
/// takes the first in table order, as a walk of the whole table would
/// (the ~100 rows were a tenth of ingest's time).
struct Index {
    structured: BTreeMap<&'static str, Vec<usize>>,
    legacy: Vec<usize>,
    fatal: Vec<usize>,
}

static INDEX: LazyLock<Index> = LazyLock::new(|| {
    let mut index = Index {
        structured: BTreeMap::new(),
        legacy: Vec::new(),
        fatal: Vec::new(),
    };
    for (i, r) in TABLE.iter().enumerate() {
        match r.form {
            Structured(m) | StructuredWith(m, ..) | ClientCert(m) => {
                index.structured.entry(m).or_default().push(i);
            }
            LegacyPrefix(_) | LegacyExact(_) | LegacyContains(_) | LegacyNodeNotFound
            | LegacyBetween(..) => {
                index.legacy.push(i);
            }
            FatalSeverity => index.fatal.push(i),
        }
    }
    index
});

/// The first row of [`TABLE`] that matches `line`.
pub(super) fn find(line: &Line<'_>) -> Option<&'static Row> {
    let index = &*INDEX;
    let first = |rows: &[usize]| rows.iter().copied().find(|&i| matches(TABLE[i].form, line));
    let shaped = if line.is_structured() {
        index.structured.get(line.message()).and_then(|r| first(r))
    } else {
        first(&index.legacy)
    };
    let fatal = (line.severity == Some(crate::parse::Severity::Fatal))
        .then(|| first(&index.fatal))
        .flatten();
    shaped.into_iter().chain(fatal).min().map(|i| &TABLE[i])
}

pub(super) fn matches(form: Form, line: &Line<'_>) -> bool {
    let structured = line.is_structured();
    let msg = line.message();
    match form {
        Structured(m) => structured && msg == m,
        StructuredWith(m, key, needle) => {
            structured && msg == m && line.value(key).is_some_and(|v| v.contains(needle))
        }
        LegacyPrefix(p) => !structured && msg.starts_with(p),
        LegacyExact(p) => !structured && msg.trim_end() == p,
        LegacyContains(p) => !structured && msg.contains(p),
        LegacyNodeNotFound => !structured && legacy_node_not_found(msg),
        ClientCert(m) => {
            structured
                && msg == m
                && line
                    .value("logger")
                    .is_none_or(|l| l.starts_with(CLIENT_CERT))
        }
        LegacyBetween(p, s) => !structured && msg.starts_with(p) && msg.trim_end().ends_with(s),
        FatalSeverity => line.severity == Some(crate::parse::Severity::Fatal),
    }
}

#[cfg(test)]
mod tests {
    /// `1.21`, the minor of a Kubernetes version.
    fn minor(v: &str) -> Option<u32> {
        v.strip_prefix("1.")?.parse().ok()
    }

    /// Every row says its versions as `all`, a year (`2015`, before
    /// versions), `1.N+`, `<=1.N` or `1.N-1.M` with N <= M.
    #[test]
    fn every_row_names_its_versions() {
        for row in super::TABLE {
            let v = row.versions;
            let ok = v == "all"
                || (v.len() == 4 && v.parse::<u32>().is_ok_and(|y| (2014..=2030).contains(&y)))
                || v.strip_suffix('+').and_then(minor).is_some()
                || v.strip_prefix("<=").and_then(minor).is_some()
                || v.split_once('-').is_some_and(
                    |(a, b)| matches!((minor(a), minor(b)), (Some(a), Some(b)) if a <= b),
                );
            assert!(ok, "{:?} {:?}: versions {v:?}", row.kind, row.form);
        }
    }
}
