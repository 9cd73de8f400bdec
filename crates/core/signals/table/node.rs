//! The rows of the node's own health: not ready while its kubelet runs,
//! the eviction manager and image garbage collection (design 5.3), pods
//! that cannot start (design 5.6).

use super::Form::{
    LegacyBetween, LegacyContains, LegacyExact, LegacyPrefix, Structured, StructuredWith,
};
use super::{Row, row};
use crate::signals::SignalKind as K;

pub(super) static ROWS: &[Row] = &[
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
    // What the eviction manager evicted and image garbage collection
    // freed (design 5.3): they join a pressure incident.
    row(
        K::PodEvicted,
        Structured("Eviction manager: pod is evicted successfully"),
        "1.21+",
    ),
    row(
        K::PodEvicted,
        // 1.4 to about 1.7 wrote `pod name_ns(uid) evicted successfully`,
        // without the `is` of later releases: one suffix reads both.
        LegacyBetween("eviction manager: pod ", " evicted successfully"),
        "<=1.20",
    ),
    row(
        K::ImageGc,
        Structured("Image garbage collection failed multiple times in a row"),
        "1.21+",
    ),
    row(
        K::ImageGc,
        LegacyPrefix("Image garbage collection failed multiple times in a row: "),
        "<=1.20",
    ),
    row(
        K::ImageGc,
        Structured(
            "Image garbage collection failed once. Stats initialization may not have completed yet",
        ),
        "1.21+",
    ),
    row(
        K::ImageGc,
        LegacyPrefix(
            "Image garbage collection failed once. Stats initialization may not have completed yet: ",
        ),
        "<=1.20",
    ),
    row(
        K::ImageGc,
        Structured("Image garbage collection succeeded"),
        "1.21+",
    ),
    row(
        K::ImageGc,
        LegacyExact("Image garbage collection succeeded"),
        "<=1.20",
    ),
    row(
        K::ImageGc,
        Structured("Removing image to free bytes"),
        "1.21+",
    ),
    row(
        K::ImageGc,
        LegacyPrefix("[imageGCManager]: Removing image "),
        "<=1.20",
    ),
    row(
        K::ImageGc,
        Structured(
            "Eviction manager: unexpected error when attempting to reduce resource pressure",
        ),
        "1.21+",
    ),
    row(
        K::ImageGc,
        LegacyPrefix("eviction manager: unexpected error when attempting to reduce "),
        "<=1.20",
    ),
    row(
        K::ImageGc,
        Structured("Eviction manager: able to reduce resource pressure without evicting pods."),
        "1.21+",
    ),
    row(
        K::ImageGc,
        LegacyBetween(
            "eviction manager: able to reduce ",
            " pressure without evicting pods.",
        ),
        "<=1.20",
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
];
