//! The rows of the node's life with the API server: its status updates,
//! the lister, registration, the lease, the reflectors and the node's
//! ready markers (design 5.2).

use super::Form::{
    LegacyContains, LegacyExact, LegacyNodeNotFound, LegacyPrefix, Structured, StructuredWith,
};
use super::{Row, row};
use crate::signals::SignalKind as K;

pub(super) static ROWS: &[Row] = &[
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
];
