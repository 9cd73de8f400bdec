//! Incidents' words that every kind shares: what a cause means, and text
//! from logs on one line.

use crate::signals::Cause;

/// What a cause class means, in plain words.
#[must_use]
pub fn cause_explanation(c: Cause) -> &'static str {
    match c {
        Cause::ListerLag => {
            "the kubelet's local node lister (its informer cache) did not have the Node yet"
        }
        Cause::NodeMissing => {
            "the API server says the Node object does not exist: it was deleted or never registered, and a running kubelet does not re-register"
        }
        Cause::ApiUnreachable => {
            "the kubelet cannot reach the API server (connection refused or reset, no route, lost connection)"
        }
        Cause::ApiTimeout => "requests to the API server time out",
        Cause::Auth => {
            "the API server rejects the kubelet's credentials (expired or invalid certificate, or RBAC)"
        }
        Cause::Conflict => "status updates conflict with concurrent writes to the Node",
        Cause::Etcd => "the API server reports its etcd cluster unavailable",
        Cause::Unknown => "no known error class; read the evidence lines",
        Cause::Swap => "the kubelet refuses to run with swap on (failSwapOn)",
        Cause::CgroupDriver => "the kubelet's cgroup driver differs from the container runtime's",
        Cause::Config => "the kubelet's config file or flags are missing or invalid",
        Cause::Credentials => {
            "the kubelet's kubeconfig, bootstrap kubeconfig or client certificate is missing, unreadable or expired"
        }
        Cause::Runtime => {
            "the container runtime is down, not reachable, or not compatible with the kubelet"
        }
        Cause::PortInUse => "a port the kubelet listens on is already in use",
        Cause::Exec => "systemd could not run the kubelet binary (203/EXEC)",
        Cause::Killed => {
            "the kubelet was killed by a signal without a fatal line (OOM killer, SIGKILL, a panic)"
        }
        Cause::Watchdog => {
            "systemd's watchdog killed the kubelet: it stopped answering (no WATCHDOG=1 within the unit's WatchdogSec), a hung kubelet"
        }
        Cause::Oom => {
            "the kernel's OOM killer killed the kubelet: the node ran out of memory, or the kubelet's cgroup hit its limit"
        }
        Cause::Expired => {
            "the kubelet's client certificate has expired: the API server rejects the kubelet until it has a new one"
        }
        Cause::RotationFailing => {
            "the API server refused the kubelet's certificate signing request (forbidden, unauthorized, denied, or never signed): the client certificate is not being renewed"
        }
        Cause::Expiring => {
            "the client certificate's rotation deadline passed and no rotation followed: it will expire unless renewed"
        }
        Cause::IpExhausted => {
            "the network plugin has no IP address to give the pod: the node's subnet, its IPAM range or its warm pool of addresses is exhausted"
        }
        Cause::Image => {
            "the sandbox (pause) image cannot be pulled: the registry is not reachable from the node, or the image's name or credentials are wrong"
        }
        Cause::Timeout => {
            "the container runtime did not answer the kubelet's sandbox request within its deadline (DeadlineExceeded): a slow or overloaded runtime or network plugin"
        }
        Cause::ReadonlyFs => {
            "the kernel made a file system read-only (remounted it after errors, or shut it down): nothing on it can be written until it is repaired and the node rebooted"
        }
        Cause::HungTasks => {
            "the kernel reports tasks blocked in the kernel for minutes (hung tasks): a disk, a file system or a driver stopped answering, and whatever waits on it (often the container runtime) waits too"
        }
        c @ (Cause::Cni
        | Cause::Pleg
        | Cause::MemoryPressure
        | Cause::DiskPressure
        | Cause::PidPressure) => not_ready_explanation(c),
    }
}

/// What a not-ready cause means, in plain words.
fn not_ready_explanation(c: Cause) -> &'static str {
    match c {
        Cause::Cni => {
            "the container network is not ready: the CNI plugin is not installed, not configured in /etc/cni/net.d, or its pods are not running on the node"
        }
        Cause::Pleg => {
            "the kubelet's pod lifecycle event generator (PLEG) is not healthy: the container runtime answers too slowly or not at all"
        }
        Cause::MemoryPressure => {
            "the node is under memory pressure: the eviction manager is reclaiming memory by evicting pods"
        }
        Cause::DiskPressure => {
            "the node is under disk pressure: the eviction manager is reclaiming the node's or the images' file system"
        }
        Cause::PidPressure => {
            "the node is running out of process ids: the eviction manager is evicting pods to reclaim them"
        }
        Cause::ListerLag
        | Cause::NodeMissing
        | Cause::ApiUnreachable
        | Cause::ApiTimeout
        | Cause::Auth
        | Cause::Conflict
        | Cause::Etcd
        | Cause::Unknown
        | Cause::Swap
        | Cause::CgroupDriver
        | Cause::Config
        | Cause::Credentials
        | Cause::Runtime
        | Cause::PortInUse
        | Cause::ReadonlyFs
        | Cause::HungTasks
        | Cause::Exec
        | Cause::Killed
        | Cause::Watchdog
        | Cause::Oom
        | Cause::Expired
        | Cause::RotationFailing
        | Cause::Expiring
        | Cause::IpExhausted
        | Cause::Image
        | Cause::Timeout => "no known class; read the evidence lines",
    }
}

/// Text on one line, at most `max` bytes.
#[must_use]
pub fn one_line(text: &str, max: usize) -> String {
    // Control characters and the invisible format ones (bidirectional
    // overrides, zero-width) cannot move the cursor, recolour or reorder
    // what a terminal or a mail client shows.
    let invisible = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
    };
    let flat: String = text
        .chars()
        .map(|c| if invisible(c) { ' ' } else { c })
        .collect();
    let kept = crate::model::cut(&flat, max);
    if kept.len() < flat.len() {
        format!("{kept}…")
    } else {
        flat
    }
}
