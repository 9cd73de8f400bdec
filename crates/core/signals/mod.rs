//! [`Line`] to [`Signal`]: the one table of kubelet messages that matter
//! (`kubelet/messages.md`), with the versions each wording belongs to.
//! Adding a Kubernetes version means adding rows to [`TABLE`], not code paths.
//!
//! Besides what happened, a signal carries the node the line names (if any)
//! and, for trouble, the cause class its error text points at.

use std::sync::LazyLock;

use crate::parse::Line;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SignalKind {
    // Trouble: opens an incident.
    StatusRetry,
    StatusExhausted,
    ListerMiss,
    RegisterFailed,
    // Supporting: joins an open incident.
    LeaseFailed,
    WatchFailed,
    // Markers.
    RegisterAttempt,
    Registered,
    KubeletStarted,
    KubeletStopped,
    CachesSynced,
    NodeReady,
    // The kubelet's own life (design 5.1): markers for node-status
    // incidents, the signals of kubelet-down ones.
    /// The kubelet's fatal line (`failed to run Kubelet: …`).
    KubeletFatal,
    /// systemd: the main process exited with a failure status, or was
    /// killed (`Main process exited, code=exited, status=1/FAILURE`).
    KubeletExited,
    /// systemd: `Failed with result '…'`, `entered failed state`.
    KubeletFailed,
    /// systemd: `Scheduled restart job, restart counter is at N.`
    KubeletRestart,
    /// systemd gave up: `start-limit-hit`, `Start request repeated too
    /// quickly`, `Failed to start kubelet…`.
    KubeletGaveUp,
    /// systemd: `Stopping kubelet…` (asked for unless a failed exit came
    /// before).
    KubeletStopping,
    // The node's readiness as its kubelet sees it (design 5.3).
    /// The kubelet says the node is not ready: the runtime, the network,
    /// PLEG, the eviction manager acting on a pressure signal.
    NotReady,
    /// Joins an open not-ready incident and votes for its cause: CNI config
    /// errors, failed calls to the runtime, PLEG relist errors.
    NotReadySupport,
    // The kubelet's client certificate (design 5.7).
    /// Its certificate manager states when the certificate expires and
    /// when it will rotate (`Certificate rotation deadline determined`).
    CertDeadline,
    /// A rotation begins (`Rotating certificates`).
    CertRotating,
    /// A rotation's CSR was issued (`certificate signing request … is
    /// issued`): the new certificate is there.
    CertRotated,
    /// A rotation attempt failed (`Failed while requesting a signed
    /// certificate from the control plane`, `certificate request was not
    /// signed`).
    CertFailed,
    /// The certificate has expired (`The currently active client
    /// certificate has expired`, `Part of the existing bootstrap client
    /// certificate … is expired`).
    CertExpired,
    // Pods that cannot start on a Ready node (design 5.6).
    /// A pod's sandbox could not be created: one of the lines of one
    /// attempt (the runtime's call, the sandbox's, the runtime manager's,
    /// the pod worker's `CreatePodSandboxError`).
    SandboxFailed,
    /// A pod's container started (PLEG's `ContainerStarted`, written at
    /// `--v=2` and above): the node starts pods.
    ContainerStarted,
    // What a pressure incident tells beyond its cause (design 5.3).
    /// The eviction manager evicted a pod (`pod is evicted successfully`).
    PodEvicted,
    /// Image garbage collection's result: images deleted, not enough
    /// eligible, or a failure (and the eviction manager's own reclaim).
    ImageGc,
    // The kernel (design 5.8): its lines are context lines, read in
    // `context`, not rows of the table; these name them as evidence of a
    // `kernel` incident.
    /// A file system remounted read-only or shut down.
    KernelReadonly,
    /// A task hung (`INFO: task X:N blocked for more than N seconds.`).
    KernelHungTask,
}

crate::kinds::spelling!(SignalKind {
    StatusRetry => "status-retry",
    StatusExhausted => "status-exhausted",
    ListerMiss => "lister-miss",
    RegisterFailed => "register-failed",
    LeaseFailed => "lease-failed",
    WatchFailed => "watch-failed",
    RegisterAttempt => "register-attempt",
    Registered => "registered",
    KubeletStarted => "kubelet-started",
    KubeletStopped => "kubelet-stopped",
    CachesSynced => "caches-synced",
    NodeReady => "node-ready",
    KubeletFatal => "kubelet-fatal",
    KubeletExited => "kubelet-exited",
    KubeletFailed => "kubelet-failed",
    KubeletRestart => "kubelet-restart",
    KubeletGaveUp => "kubelet-gave-up",
    KubeletStopping => "kubelet-stopping",
    NotReady => "not-ready",
    NotReadySupport => "not-ready-support",
    CertDeadline => "cert-deadline",
    CertRotating => "cert-rotating",
    CertRotated => "cert-rotated",
    CertFailed => "cert-failed",
    CertExpired => "cert-expired",
    SandboxFailed => "sandbox-failed",
    ContainerStarted => "container-started",
    PodEvicted => "pod-evicted",
    ImageGc => "image-gc",
    KernelReadonly => "kernel-readonly",
    KernelHungTask => "kernel-hung-task",
});

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Trouble,
    Supporting,
    Marker,
}

impl SignalKind {
    #[must_use]
    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
    )]
    pub fn role(self) -> Role {
        use SignalKind::{
            CertExpired, CertFailed, ImageGc, KernelHungTask, KernelReadonly, LeaseFailed,
            ListerMiss, NotReady, NotReadySupport, PodEvicted, RegisterFailed, SandboxFailed,
            StatusExhausted, StatusRetry, WatchFailed,
        };
        match self {
            StatusRetry | StatusExhausted | ListerMiss | RegisterFailed | NotReady | CertFailed
            | CertExpired | SandboxFailed | KernelReadonly | KernelHungTask => Role::Trouble,
            LeaseFailed | WatchFailed | NotReadySupport | PodEvicted | ImageGc => Role::Supporting,
            _ => Role::Marker,
        }
    }

    /// A signal about the node's readiness (not-ready incidents, design 5.3):
    /// it never opens or joins a node-status incident.
    #[must_use]
    pub fn is_not_ready(self) -> bool {
        matches!(self, SignalKind::NotReady | SignalKind::NotReadySupport)
    }

    /// What the eviction manager and image garbage collection did (design
    /// 5.3): it joins the node's open not-ready incident, and opens none.
    #[must_use]
    pub fn is_eviction(self) -> bool {
        matches!(self, SignalKind::PodEvicted | SignalKind::ImageGc)
    }

    /// A signal about the kubelet's client certificate (certificate
    /// incidents, design 5.7): it never opens or joins a node-status
    /// incident by itself.
    #[must_use]
    pub fn is_certificate(self) -> bool {
        matches!(
            self,
            SignalKind::CertDeadline
                | SignalKind::CertRotating
                | SignalKind::CertRotated
                | SignalKind::CertFailed
                | SignalKind::CertExpired
        )
    }

    /// A signal about pods' sandboxes (pod-sandbox incidents, design 5.6):
    /// it never opens or joins a node-status incident.
    #[must_use]
    pub fn is_sandbox(self) -> bool {
        matches!(
            self,
            SignalKind::SandboxFailed | SignalKind::ContainerStarted
        )
    }

    /// A signal about the kubelet's own life (kubelet-down incidents).
    #[must_use]
    pub fn is_life(self) -> bool {
        matches!(
            self,
            SignalKind::KubeletFatal
                | SignalKind::KubeletExited
                | SignalKind::KubeletFailed
                | SignalKind::KubeletRestart
                | SignalKind::KubeletGaveUp
                | SignalKind::KubeletStopping
                | SignalKind::KubeletStopped
                | SignalKind::KubeletStarted
        )
    }
}

/// What the error texts point at (design section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    ListerLag,
    NodeMissing,
    ApiUnreachable,
    ApiTimeout,
    Auth,
    Conflict,
    Etcd,
    Unknown,
    // Why a kubelet died (kubelet-down incidents, design 5.1).
    Swap,
    CgroupDriver,
    Config,
    Credentials,
    Runtime,
    PortInUse,
    Exec,
    Killed,
    /// systemd's watchdog killed the kubelet: it stopped answering
    /// (`WatchdogSec=`, the kubelet's systemd watchdog since 1.32).
    Watchdog,
    // Why the node is not ready while its kubelet runs (not-ready
    // incidents, design 5.3; `runtime` and `unknown` too).
    Cni,
    Pleg,
    MemoryPressure,
    DiskPressure,
    PidPressure,
    /// The kernel's OOM killer killed the kubelet (its context says so).
    Oom,
    // The kubelet's client certificate (certificate incidents, design
    // 5.7).
    /// It has expired.
    Expired,
    /// The API server refused a rotation (forbidden, unauthorized, denied,
    /// not signed).
    RotationFailing,
    /// Its rotation deadline passed with no rotation since.
    Expiring,
    // Why pods' sandboxes fail on a Ready node (pod-sandbox incidents,
    // design 5.6; `cni`, `runtime` and `unknown` too).
    /// The network plugin has no address to give (the subnet, the IPAM
    /// range or the node's warm pool is exhausted).
    IpExhausted,
    /// The sandbox (pause) image cannot be pulled.
    Image,
    /// The runtime's call ran past its deadline (`DeadlineExceeded`).
    Timeout,
    // The kernel under the node (kernel incidents, design 5.8).
    /// A file system remounted read-only or shut down (NPD's
    /// `ReadonlyFilesystem`, `XfsShutdown`).
    ReadonlyFs,
    /// Tasks blocked longer than `[alert] not_ready_after` (NPD's
    /// `KernelDeadlock`).
    HungTasks,
}

crate::kinds::spelling!(Cause {
    ListerLag => "lister-lag",
    NodeMissing => "node-missing",
    ApiUnreachable => "api-unreachable",
    ApiTimeout => "api-timeout",
    Auth => "auth",
    Conflict => "conflict",
    Etcd => "etcd",
    Unknown => "unknown",
    Swap => "swap",
    CgroupDriver => "cgroup-driver",
    Config => "config",
    Credentials => "credentials",
    Runtime => "runtime",
    PortInUse => "port-in-use",
    Exec => "exec",
    Killed => "killed",
    Watchdog => "watchdog",
    Cni => "cni",
    Pleg => "pleg",
    MemoryPressure => "memory-pressure",
    DiskPressure => "disk-pressure",
    PidPressure => "pid-pressure",
    Oom => "oom",
    Expired => "expired",
    RotationFailing => "rotation-failing",
    Expiring => "expiring",
    IpExhausted => "ip-exhausted",
    Image => "image",
    Timeout => "timeout",
    ReadonlyFs => "readonly-fs",
    HungTasks => "hung-tasks",
});

impl Cause {
    /// Ties between equally frequent causes go to the more serious one; the
    /// harmless lister lag loses every tie.
    #[must_use]
    pub fn severity_rank(self) -> u8 {
        match self {
            Cause::NodeMissing => 7,
            Cause::Auth => 6,
            Cause::ApiUnreachable => 5,
            Cause::Etcd => 4,
            Cause::ApiTimeout => 3,
            Cause::Conflict => 2,
            Cause::ListerLag => 1,
            // A kubelet-down tie goes to the latest (the tracker).
            Cause::Unknown
            | Cause::Swap
            | Cause::CgroupDriver
            | Cause::Config
            | Cause::Credentials
            | Cause::Runtime
            | Cause::PortInUse
            | Cause::Exec
            | Cause::Killed
            | Cause::Watchdog
            | Cause::Cni
            | Cause::Pleg
            | Cause::MemoryPressure
            | Cause::DiskPressure
            | Cause::PidPressure
            | Cause::Oom
            | Cause::Expired
            | Cause::RotationFailing
            | Cause::Expiring
            | Cause::IpExhausted
            | Cause::Image
            | Cause::Timeout
            | Cause::ReadonlyFs
            | Cause::HungTasks => 0,
        }
    }
}

/// A recognised line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    pub kind: SignalKind,
    /// The node named in the line itself, if any.
    pub node: Option<String>,
    /// For trouble and supporting signals: what the error text points at.
    pub cause: Option<Cause>,
    /// The API endpoint the error names (`host:port`), if it names one.
    pub endpoint: Option<String>,
    /// systemd's exit status of the kubelet (`status=1/FAILURE`,
    /// `code=killed, status=9/KILL`, `result 'start-limit-hit'`).
    pub exit: Option<String>,
}

mod certificate;
mod eviction;
mod readiness;
mod sandbox;
mod table;
use SignalKind as K;
pub use certificate::{CertTimes, cert_times, refused};
pub use eviction::{GcOutcome, GcReport, evicted_pod, image_gc};
pub use readiness::{classify_not_ready, only_starting, pleg_unhealthy_for, says_only_starting};
pub use sandbox::{classify_sandbox, sandbox_pod, sandbox_specificity};
pub use table::{Row, TABLE};

/// Source files that only the kubelet has (basenames, as klog writes them):
/// a klog line from one of them is the kubelet's whatever its identifier.
const KUBELET_SOURCES: &[&str] = &[
    "pod_workers.go",
    "eviction_manager.go",
    "container_manager_linux.go",
    "node_container_manager_linux.go",
    "cpu_manager.go",
    "memory_manager.go",
    "topology_manager.go",
    "status_manager.go",
    "volume_manager.go",
    "csi_plugin.go",
    "cri_stats_provider.go",
    "prober_manager.go",
    "remote_runtime.go",
    "remote_image.go",
    "image_gc_manager.go",
    "container_gc.go",
    "mirror_client.go",
    "pod_container_deletor.go",
    "plugin_watcher.go",
    "desired_state_of_world_populator.go",
    "watchdog_linux.go",
];

/// Whether a parsed line is the kubelet's by its content: one of the
/// kubelet's own source files (`kubelet*.go`, `kuberuntime_*.go`, …), or a
/// message of the table (node status is only the kubelet's business).
#[must_use]
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
)]
pub fn is_kubelet_line(line: &Line<'_>) -> bool {
    if let Some(src) = &line.source {
        let file = src.rsplit('/').next().unwrap_or(src);
        let file = file.split(':').next().unwrap_or(file);
        if file.starts_with("kubelet")
            || file.starts_with("kuberuntime_")
            || KUBELET_SOURCES.contains(&file)
        {
            return true;
        }
    }
    // Every component logs "Caches are synced"; the rest of the table is
    // the kubelet's alone.
    // Every component's `"command failed"` too, unless it names the kubelet;
    // and every component's legacy `Version: v1.x` (kube-proxy's too).
    lookup(line).is_some_and(|r| match r.kind {
        SignalKind::CachesSynced => false,
        SignalKind::KubeletStarted => !line.message().starts_with("Version: "),
        SignalKind::KubeletFatal => {
            let err = line.value("err").unwrap_or_else(|| line.message());
            err.contains("ubelet") || line.message().contains("ubelet")
        }
        _ => true,
    })
}

/// The table row a line matches, if any.
#[must_use]
pub fn lookup(line: &Line<'_>) -> Option<&'static Row> {
    if !line.is_parsed() {
        return None;
    }
    table::find(line)
}

/// Recognises a kubelet line.
#[must_use]
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "not an incident kind: the variants not named all take one path"
)]
pub fn recognize(line: &Line<'_>) -> Option<Signal> {
    let row = lookup(line)?;
    // The start-up state alone is no trouble (see `only_starting`).
    let kind = match row.kind {
        K::NotReady if only_starting(line) => K::NotReadySupport,
        k => k,
    };
    let error_text = line.value("err").unwrap_or_else(|| line.message());
    let (cause, endpoint) = match kind.role() {
        _ if kind == K::KubeletFatal => (Some(classify_fatal(error_text)), None),
        _ if kind.is_certificate() => certificate::cause(kind, line.message(), error_text),
        _ if kind.is_eviction() => (None, None),
        _ if kind.is_not_ready() => (Some(classify_not_ready(line)), None),
        _ if kind == K::SandboxFailed => (Some(classify_sandbox(error_text)), None),
        Role::Marker => (None, None),
        _ => (Some(classify(error_text)), api_endpoint(error_text)),
    };
    Some(Signal {
        kind,
        node: node_of(line, kind),
        cause,
        endpoint,
        exit: None,
    })
}

/// A kubelet line with no klog header that is its fatal word: cobra's
/// `Error: failed to run Kubelet: …`, `Error: unknown flag: --x`, and the
/// same without `Error: `.
#[must_use]
pub fn recognize_bare(text: &str) -> Option<Signal> {
    let t = text.trim();
    // The Go runtime's: a panic or a fatal runtime error (a fault, a
    // concurrent map write), then a goroutine dump and exit status 2. No
    // fatal word of the kubelet's: design 5.1 calls it `killed`.
    if t.starts_with("panic: ") || t.starts_with("fatal error: ") {
        return Some(Signal {
            kind: K::KubeletFatal,
            node: None,
            cause: Some(Cause::Killed),
            endpoint: None,
            exit: None,
        });
    }
    crate::parse::join::bare_fatal(t).map(|t| Signal {
        kind: K::KubeletFatal,
        node: None,
        cause: Some(classify_fatal(t)),
        endpoint: None,
        exit: None,
    })
}

/// Why a kubelet died, from its fatal words (design 5.1).
#[must_use]
pub fn classify_fatal(text: &str) -> Cause {
    let l = text.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| l.contains(n));
    if has(&[
        "swap on is not supported",
        "swap is on",
        "failswapon",
        "swap",
    ]) {
        Cause::Swap
    } else if has(&["cgroup driver", "cgroupdriver", "cgroup-driver"]) {
        Cause::CgroupDriver
    } else if has(&["address already in use", "port is already"]) {
        Cause::PortInUse
    } else if has(&[
        "failed to load kubelet config file",
        "failed to validate kubelet flags",
        "unknown flag",
        "unknown shorthand flag",
        "invalid configuration",
        "failed to parse kubelet flag",
        "failed to construct kubelet dependencies",
        "unrecognized feature gate",
        "invalid value",
        "failed to decode",
        "kubelet config file",
    ]) {
        Cause::Config
    } else if has(&[
        "kubeconfig",
        "bootstrap",
        "certificate",
        "x509",
        ".crt",
        ".key",
        "client-ca",
        "unauthorized",
        "credentials",
    ]) {
        Cause::Credentials
    } else if has(&[
        "container runtime",
        "runtime service",
        "remote runtime",
        "runtime api",
        "containerd",
        "dockershim",
        "docker daemon",
        "crio",
        "cri-o",
        ".sock",
        "cri v1",
        "failed to get rootfs",
    ]) {
        Cause::Runtime
    } else {
        Cause::Unknown
    }
}

/// The cause an exit status alone says: `203/EXEC` is a missing binary,
/// a signal with no fatal line a kill.
#[must_use]
pub fn exit_cause(exit: &str) -> Cause {
    if exit.contains("203/EXEC") {
        Cause::Exec
    } else if exit.contains("'watchdog'") || exit.starts_with("watchdog timeout") {
        Cause::Watchdog
    } else if exit.contains("code=killed")
        || exit.contains("code=dumped")
        || exit.contains("'signal'")
        || exit.contains("'core-dump'")
    {
        Cause::Killed
    } else {
        Cause::Unknown
    }
}

/// The API endpoint an error text names, as `host:port`: the URL the
/// kubelet asked (`Get "https://10.0.0.1:6443/api/v1/…"`, `Post
/// "https://api.example.com/…"` → `api.example.com:443`), else the address
/// it dialled (`dial tcp 10.0.0.1:6443`). Hosts lower-cased, the scheme's
/// port filled in, IPv6 in brackets (`[fd00::1]:6443`). `None` when the
/// text names no endpoint.
#[must_use]
pub fn api_endpoint(text: &str) -> Option<String> {
    fn host_port(authority: &str, default_port: Option<u16>) -> Option<String> {
        // userinfo never belongs in a label
        let authority = authority.rsplit('@').next()?;
        let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
            let (h, after) = rest.split_once(']')?;
            h.parse::<std::net::Ipv6Addr>().ok()?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse::<u16>().ok()?,
                None if after.is_empty() => default_port?,
                None => return None,
            };
            (format!("[{}]", h.to_ascii_lowercase()), port)
        } else {
            let (h, port) = match authority.rsplit_once(':') {
                Some((h, p)) => (h, p.parse::<u16>().ok()?),
                None => (authority, default_port?),
            };
            if h.is_empty()
                || h.len() > 253
                || !h
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
            {
                return None;
            }
            if h.contains(':') {
                return None;
            }
            (h.to_ascii_lowercase(), port)
        };
        Some(format!("{host}:{port}"))
    }
    let authority_end = |s: &str| {
        s.find(['/', '"', '\\', ' ', '?', '#', ',', ')', '\''])
            .unwrap_or(s.len())
    };
    for (scheme, port) in [("https://", 443u16), ("http://", 80u16)] {
        if let Some(at) = text.find(scheme) {
            let rest = &text[at + scheme.len()..];
            if let Some(e) = host_port(&rest[..authority_end(rest)], Some(port)) {
                return Some(e);
            }
        }
    }
    let at = text.find("dial tcp ")?;
    let rest = &text[at + "dial tcp ".len()..];
    let end = rest.find([' ', '"', '\\', ',']).unwrap_or(rest.len());
    // "dial tcp 10.0.0.1:6443: connect: …": the address ends at its last ':'
    // before the next word.
    let addr = rest[..end].trim_end_matches(':');
    host_port(addr, None)
}

/// Recognises systemd's own lines about the kubelet unit (`_PID=1`,
/// `UNIT=kubelet.service`), which carry no klog header. An exit with a
/// success status (or `status=15/TERM`, the stop's own signal) is a
/// stopped marker: only an exit nobody asked for opens a kubelet-down
/// incident (the tracker also knows whether a stop was asked for).
#[must_use]
pub fn recognize_systemd(message: &str) -> Option<Signal> {
    let m = message.trim();
    let lower = m.to_ascii_lowercase();
    let sig = |kind, exit: Option<String>| Signal {
        kind,
        node: None,
        cause: None,
        endpoint: None,
        exit,
    };
    if m.starts_with("Started ") {
        return Some(sig(K::KubeletStarted, None));
    }
    if m.starts_with("Stopping ") {
        return Some(sig(K::KubeletStopping, None));
    }
    if m.starts_with("Stopped ") {
        return Some(sig(K::KubeletStopped, None));
    }
    if m.starts_with("Failed to start ")
        || lower.contains("start request repeated too quickly")
        // Old systemd when the unit file went away under it: no restart
        // will come.
        || lower.contains("failed to schedule restart job")
        || m.contains("'start-limit-hit'")
        || m.contains("'start-limit'")
    {
        return Some(sig(
            K::KubeletGaveUp,
            Some("result 'start-limit-hit'".into()),
        ));
    }
    if let Some(at) = lower.find("main process exited, ") {
        let exit = m[at + "main process exited, ".len()..].trim_end_matches('.');
        let ok = exit.ends_with("status=0/SUCCESS")
            || exit.ends_with("status=0")
            || exit.contains("status=15/TERM")
            || exit.contains("status=2/INT");
        let kind = if ok {
            K::KubeletStopped
        } else {
            K::KubeletExited
        };
        return Some(sig(kind, Some(exit.to_string())));
    }
    // `kubelet.service: Watchdog timeout (limit 1min)!`: systemd kills it
    // next (SIGABRT), then says `Failed with result 'watchdog'`.
    if let Some(at) = lower.find("watchdog timeout (limit ") {
        let limit = m[at..].trim_end_matches('!');
        return Some(sig(K::KubeletFailed, Some(limit.to_ascii_lowercase())));
    }
    if let Some(at) = m.find("Failed with result '") {
        let result = m[at + "Failed with result ".len()..].trim_end_matches('.');
        return Some(sig(K::KubeletFailed, Some(format!("result {result}"))));
    }
    if m.contains("entered failed state") || m.ends_with(".service failed.") {
        return Some(sig(K::KubeletFailed, Some("failed state".into())));
    }
    if m.contains(": Scheduled restart job")
        || lower.contains("hold-off time over")
        || lower.contains("holdoff time over")
        || (lower.contains("expired, scheduling restart"))
    {
        return Some(sig(K::KubeletRestart, None));
    }
    None
}

/// Node names are DNS subdomains; anything else in that place is not one.
fn plausible_node(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty() && s.len() <= 253 && !s.contains(|c: char| c.is_whitespace() || c.is_control()))
        .then(|| s.to_string())
}

/// The text after `needle` up to `close`.
fn between<'t>(text: &'t str, needle: &str, close: char) -> Option<&'t str> {
    let start = text.find(needle)? + needle.len();
    let rest = &text[start..];
    Some(&rest[..rest.find(close)?])
}

/// Whether `t` holds `node` or `minion`, the words every wording that
/// embeds a node's name has.
fn may_name_node(t: &str) -> bool {
    static NODE: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new("node"));
    static MINION: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new("minion"));
    NODE.find(t.as_bytes()).is_some() || MINION.find(t.as_bytes()).is_some()
}

/// The node a line names: `node=` first, then the wordings that embed it.
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "a signal kind not named here takes the one path: a new signal is a row of the table, not a new dispatch"
)]
fn node_of(line: &Line<'_>, kind: SignalKind) -> Option<String> {
    if let Some(v) = line.value("node") {
        // KObj without a namespace; strip one if a wrapper added it.
        return plausible_node(v.rsplit('/').next().unwrap_or(v));
    }
    let msg = line.message();
    if !line.is_structured() {
        let legacy_name = match kind {
            K::RegisterAttempt => msg.strip_prefix("Attempting to register node "),
            K::Registered => msg
                .strip_prefix("Successfully registered node ")
                .or_else(|| {
                    msg.strip_prefix("Node ")
                        .and_then(|r| r.split_once(" was previously registered"))
                        .map(|(n, _)| n)
                }),
            K::NodeReady => msg.strip_prefix("Recording NodeReady event message for node "),
            // ≤1.4: `Unable to register NODE with the apiserver: …`.
            K::RegisterFailed => msg
                .strip_prefix("Unable to register ")
                .and_then(|r| r.split_once(" with the apiserver"))
                .map(|(n, _)| n)
                .filter(|n| !n.starts_with("node ")),
            _ => None,
        };
        if let Some(name) = legacy_name {
            return plausible_node(name);
        }
    }
    let texts = [line.value("err").unwrap_or(""), msg];
    // Every wording below names `node` (or 2015's `minion`): a text with
    // neither is passed over in one scan, not a dozen searches.
    for t in texts.into_iter().filter(|t| may_name_node(t)) {
        for (needle, close) in [
            ("nodes \"", '"'),
            ("node \"", '"'),
            ("node '", '\''),
            ("minion \"", '"'),
        ] {
            if let Some(name) = between(t, needle, close).and_then(plausible_node) {
                return Some(name);
            }
        }
        // 2015: `node X not found`, unquoted.
        if let Some(name) = unquoted_not_found(t)
            .map(|(_, n)| n)
            .and_then(plausible_node)
        {
            return Some(name);
        }
        for needle in ["/api/v1/nodes/", "/namespaces/kube-node-lease/leases/"] {
            if let Some(start) = t.find(needle) {
                let rest = &t[start + needle.len()..];
                let end = rest
                    .find(['?', '"', '/', ':', ' ', '\\'])
                    .unwrap_or(rest.len());
                if let Some(name) = plausible_node(&rest[..end]) {
                    return Some(name);
                }
            }
        }
    }
    None
}

/// The cause class an error text points at (design section 5).
#[must_use]
pub fn classify(text: &str) -> Cause {
    if let Some(c) = not_found_class(text) {
        return c;
    }
    let l = text.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| l.contains(n));
    if has(&["etcd cluster is unavailable"]) {
        Cause::Etcd
    } else if has(&["the object has been modified"]) {
        Cause::Conflict
    } else if has(&["unauthorized", "forbidden", "x509", "certificate"]) {
        Cause::Auth
    } else if has(&[
        "client.timeout exceeded",
        "context deadline exceeded",
        "net/http: request canceled",
        "tls handshake timeout",
        "i/o timeout",
        "timeout awaiting",
    ]) {
        Cause::ApiTimeout
    } else if has(&[
        "connection refused",
        "no route to host",
        "network is unreachable",
        "connection reset",
        "dial tcp",
        "client connection lost",
        "use of closed network connection",
        "broken pipe",
        "no such host",
    ]) || text.contains("EOF")
    {
        Cause::ApiUnreachable
    } else {
        Cause::Unknown
    }
}

/// `node X not found` / `nodes X not found` without quotes (2015 kubelets,
/// pastes that lost them): the word before, and the name.
fn unquoted_not_found(text: &str) -> Option<(Cause, &str)> {
    let end = text.find(" not found")?;
    let before = text[..end].trim_end();
    let (rest, name) = before.rsplit_once(' ')?;
    if name.is_empty() || name.starts_with(['"', '\'', '\\']) || name.ends_with(['"', '\'']) {
        return None;
    }
    let word = rest
        .rsplit(|c: char| c.is_whitespace() || c == ':' || c == '(')
        .next()
        .unwrap_or("");
    match word {
        "node" => Some((Cause::ListerLag, name)),
        "nodes" | "minion" => Some((Cause::NodeMissing, name)),
        _ => None,
    }
}

/// `node "X" not found` (the local lister) versus `nodes "X" not found` (the
/// API server): the word before the quoted name decides.
fn not_found_class(text: &str) -> Option<Cause> {
    let mut found = None;
    for quote in ['"', '\''] {
        let pat = format!("{quote} not found");
        let mut search = 0;
        while let Some(rel) = text[search..].find(&pat) {
            let close = search + rel;
            search = close + pat.len();
            let Some(open) = text[..close].rfind(quote) else {
                continue;
            };
            let word = text[..open]
                .trim_end()
                .rsplit(|c: char| c.is_whitespace() || c == ':' || c == '(')
                .next()
                .unwrap_or("");
            let class = match word {
                "node" => Cause::ListerLag,
                "nodes" | "minion" => Cause::NodeMissing,
                _ => continue,
            };
            // The API server's answer outweighs a lister miss in one text.
            if found != Some(Cause::NodeMissing) {
                found = Some(class);
            }
        }
    }
    found.or_else(|| unquoted_not_found(text).map(|(c, _)| c))
}

#[cfg(test)]
mod tests {
    use super::table::matches;
    use super::*;
    use crate::parse::parse_line;

    #[test]
    fn api_endpoints_from_error_texts() {
        for (text, want) in [
            (
                r#"error getting node "w1": Get "https://10.0.0.1:6443/api/v1/nodes/w1?timeout=10s": dial tcp 10.0.0.1:6443: connect: connection refused"#,
                Some("10.0.0.1:6443"),
            ),
            (
                r#"Post "https://API.Example.com/api/v1/nodes": net/http: request canceled"#,
                Some("api.example.com:443"),
            ),
            (
                r#"Get \"https://[FD00::1]:6443/api/v1/nodes/w1?timeout=10s\": context deadline exceeded"#,
                Some("[fd00::1]:6443"),
            ),
            (
                "dial tcp 192.168.1.5:6443: i/o timeout",
                Some("192.168.1.5:6443"),
            ),
            (
                "http://localhost:8080/api/v1/nodes/w1: EOF",
                Some("localhost:8080"),
            ),
            (r#"nodes "w1" not found"#, None),
            ("Unauthorized", None),
            ("https://:6443/x", None),
            ("dial tcp: lookup api on 10.96.0.10:53: no such host", None),
        ] {
            assert_eq!(api_endpoint(text).as_deref(), want, "{text}");
        }
    }

    /// (line, kind, node, cause): one row per real line shape, most from
    /// `fixtures/real-logs/` and `messages.md`.
    type Case = (
        &'static str,
        Option<SignalKind>,
        Option<&'static str>,
        Option<Cause>,
    );
    const CASES: &[Case] = &[
        // 1.31+: the lister race on try 0.
        (
            r#"E0715 16:24:50.198000    1 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w1\": node \"w1\" not found""#,
            Some(K::StatusRetry),
            Some("w1"),
            Some(Cause::ListerLag),
        ),
        // ≤1.20 legacy, node deleted (kubernetes#75607).
        (
            r#"E0322 17:40:06.941770    1272 kubelet_node_status.go:390] Error updating node status, will retry: error getting node "ip-1.ec2.internal": nodes "ip-1.ec2.internal" not found"#,
            Some(K::StatusRetry),
            Some("ip-1.ec2.internal"),
            Some(Cause::NodeMissing),
        ),
        (
            r#"E1110 14:52:31.756699    1891 kubelet_node_status.go:301] Error updating node status, will retry: error getting node "10.169.1.131": client: etcd cluster is unavailable or misconfigured"#,
            Some(K::StatusRetry),
            Some("10.169.1.131"),
            Some(Cause::Etcd),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w2\": Get \"https://10.0.0.1:6443/api/v1/nodes/w2?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused""#,
            Some(K::StatusRetry),
            Some("w2"),
            Some(Cause::ApiUnreachable),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w2\": Get \"https://10.0.0.1:6443/api/v1/nodes/w2?timeout=10s\": net/http: request canceled (Client.Timeout exceeded while awaiting headers)""#,
            Some(K::StatusRetry),
            Some("w2"),
            Some(Cause::ApiTimeout),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w2\": Unauthorized""#,
            Some(K::StatusRetry),
            Some("w2"),
            Some(Cause::Auth),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:535] Error updating node status, will retry: nodes "w3" cannot be updated: the object has been modified; please apply your changes to the latest version and try again"#,
            Some(K::StatusRetry),
            Some("w3"),
            Some(Cause::Conflict),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w2\": http2: client connection lost""#,
            Some(K::StatusRetry),
            Some("w2"),
            Some(Cause::ApiUnreachable),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:560] "Error updating node status, will retry with syncNodeStatus" err="failed to patch status"#,
            Some(K::StatusRetry),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"E0322 17:40:06.941777    1272 kubelet_node_status.go:382] Unable to update node status: update node status exceeds retry count"#,
            Some(K::StatusExhausted),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:522] "Unable to update node status" err="update node status exceeds retry count""#,
            Some(K::StatusExhausted),
            None,
            Some(Cause::Unknown),
        ),
        // Lister misses of every version.
        (
            "E0713 10:12:45.312512    1612 kubelet.go:2810] error getting node: node node-7 not found",
            Some(K::ListerMiss),
            Some("node-7"),
            Some(Cause::ListerLag),
        ),
        (
            r#"E0829 16:38:32.180978   30410 kubelet.go:2236] node "wtc2.example.net" not found"#,
            Some(K::ListerMiss),
            Some("wtc2.example.net"),
            Some(Cause::ListerLag),
        ),
        (
            r#"E1121 08:21:42.526642    8228 kubelet.go:2424] "Error getting node" err="node \"master-1-uxmal\" not found""#,
            Some(K::ListerMiss),
            Some("master-1-uxmal"),
            Some(Cause::ListerLag),
        ),
        (
            r#"E0418 22:07:55.432195    2425 kubelet_node_status.go:462] "Error getting the current node from lister" err="node \"kt2-master\" not found""#,
            Some(K::ListerMiss),
            Some("kt2-master"),
            Some(Cause::ListerLag),
        ),
        (
            r#"E0322 17:40:09.644226    1272 eviction_manager.go:238] eviction manager: unexpected err: failed to get node info: node 'ip-1.ec2.internal' not found"#,
            Some(K::ListerMiss),
            Some("ip-1.ec2.internal"),
            Some(Cause::ListerLag),
        ),
        (
            r#"E0101 00:00:00.000000    1 eviction_manager.go:256] "Eviction manager: failed to get summary stats" err="failed to get node info: node \"w4\" not found""#,
            Some(K::ListerMiss),
            Some("w4"),
            Some(Cause::ListerLag),
        ),
        (
            r#"E0101 00:00:00.000000    1 eviction_manager.go:256] "Eviction manager: failed to get summary stats" err="failed to get imageFs info""#,
            None,
            None,
            None,
        ),
        (
            r#"E0101 00:00:00.000000    1 nodelease.go:49] "Failed to get node when trying to set owner ref to the node lease" err="nodes \"w5\" not found" node="w5""#,
            Some(K::ListerMiss),
            Some("w5"),
            Some(Cause::NodeMissing),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet.go:1900] "No need to create a mirror pod, since failed to get node info from the cluster" err="node \"w6\" not found" node="w6""#,
            Some(K::ListerMiss),
            Some("w6"),
            Some(Cause::ListerLag),
        ),
        // Registration.
        (
            r#"I0830 11:17:55.780478    2417 kubelet_node_status.go:79] Attempting to register node localhost.localdomain"#,
            Some(K::RegisterAttempt),
            Some("localhost.localdomain"),
            None,
        ),
        (
            r#"E0830 11:17:55.780886    2417 kubelet_node_status.go:103] Unable to register node "localhost.localdomain" with API server: Post https://10.0.2.15:6443/api/v1/nodes: dial tcp 10.0.2.15:6443: connect: connection refused"#,
            Some(K::RegisterFailed),
            Some("localhost.localdomain"),
            Some(Cause::ApiUnreachable),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:96] "Unable to register node with API server" err="nodes is forbidden: User \"system:anonymous\" cannot create resource \"nodes\"" node="w7""#,
            Some(K::RegisterFailed),
            Some("w7"),
            Some(Cause::Auth),
        ),
        (
            r#"I0101 00:00:00.000000    1 kubelet_node_status.go:70] Unable to register ip-10-0-0-1 with the apiserver: Post https://api/api/v1/nodes: EOF"#,
            Some(K::RegisterFailed),
            Some("ip-10-0-0-1"),
            Some(Cause::ApiUnreachable),
        ),
        // 1.0-1.3 (kubelet.go), logged at I: an old socket error, no quotes.
        (
            r#"I1129 16:31:27.398119    4813 kubelet.go:1032] Unable to register 10.240.0.5 with the apiserver: Post https://10.240.0.2:443/api/v1/nodes: dial tcp 10.240.0.2:443: getsockopt: connection refused"#,
            Some(K::RegisterFailed),
            Some("10.240.0.5"),
            Some(Cause::ApiUnreachable),
        ),
        (
            r#"E1129 16:31:27.398119    4813 kubelet.go:1044] error getting node "w15": Get https://10.240.0.2:443/api/v1/nodes/w15: dial tcp 10.240.0.2:443: i/o timeout"#,
            Some(K::RegisterFailed),
            Some("w15"),
            Some(Cause::ApiTimeout),
        ),
        (
            r#"E1129 16:31:27.398119    4813 kubelet.go:1048] no node instance returned for "w16""#,
            Some(K::RegisterFailed),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"E1129 16:31:27.398119    4813 kubelet.go:1013] Unable to construct api.Node object for kubelet: failed to get external ID from cloud provider: instance not found"#,
            Some(K::RegisterFailed),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"I1129 16:31:27.398119    4813 kubelet.go:1058] Node w17 was previously registered"#,
            Some(K::Registered),
            Some("w17"),
            None,
        ),
        (
            r#"I0101 00:00:00.000000    1 kubelet_node_status.go:126] "Node was previously registered" node="w18""#,
            Some(K::Registered),
            Some("w18"),
            None,
        ),
        // 2015: the lister miss without quotes, alone and inside a retry.
        (
            r#"E1129 16:31:27.398119    4813 kubelet.go:2092] node w19 not found"#,
            Some(K::ListerMiss),
            Some("w19"),
            Some(Cause::ListerLag),
        ),
        (
            r#"E1129 16:31:27.398119    4813 kubelet.go:2100] Error updating node status, will retry: error getting node: node w20 not found"#,
            Some(K::StatusRetry),
            Some("w20"),
            Some(Cause::ListerLag),
        ),
        (
            r#"I0313 12:15:05.336940    2928 kubelet_node_status.go:70] "Attempting to register node" node="management-cluster-md-0-dt96n""#,
            Some(K::RegisterAttempt),
            Some("management-cluster-md-0-dt96n"),
            None,
        ),
        (
            r#"I0313 12:15:05.344291    2928 kubelet_node_status.go:73] "Successfully registered node" node="management-cluster-md-0-dt96n""#,
            Some(K::Registered),
            Some("management-cluster-md-0-dt96n"),
            None,
        ),
        (
            r#"I0101 00:00:00.000000    1 kubelet_node_status.go:73] Successfully registered node w8"#,
            Some(K::Registered),
            Some("w8"),
            None,
        ),
        // Lease.
        (
            r#"E0101 00:00:00.000000    1 controller.go:144] "Failed to ensure lease exists, will retry" err="Get \"https://10.0.0.1:6443/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/w9?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused" interval="7s""#,
            Some(K::LeaseFailed),
            Some("w9"),
            Some(Cause::ApiUnreachable),
        ),
        (
            r#"E0101 00:00:00.000000    1 controller.go:115] failed to ensure node lease exists, will retry in 7s, error: Get https://api:6443/apis/coordination.k8s.io/v1beta1/namespaces/kube-node-lease/leases/w10?timeout=10s: context deadline exceeded"#,
            Some(K::LeaseFailed),
            Some("w10"),
            Some(Cause::ApiTimeout),
        ),
        (
            r#"E0101 00:00:00.000000    1 controller.go:187] failed 5 attempts to update lease, will retry after 7s"#,
            Some(K::LeaseFailed),
            None,
            Some(Cause::Unknown),
        ),
        // Reflectors.
        (
            r#"E0830 11:17:56.139911    2417 reflector.go:205] k8s.io/kubernetes/pkg/kubelet/config/apiserver.go:47: Failed to list *v1.Pod: Get https://10.0.2.15:6443/api/v1/pods?fieldSelector=spec.nodeName%3Dlocalhost.localdomain&limit=500&resourceVersion=0: dial tcp 10.0.2.15:6443: connect: connection refused"#,
            Some(K::WatchFailed),
            None,
            Some(Cause::ApiUnreachable),
        ),
        (
            r#"W0101 00:00:00.000000    1 reflector.go:539] k8s.io/client-go/informers/factory.go:159: failed to list *v1.Node: Unauthorized"#,
            Some(K::WatchFailed),
            None,
            Some(Cause::Auth),
        ),
        (
            r#"E0101 00:00:00.000000    1 reflector.go:158] "Unhandled Error" err="k8s.io/client-go/informers/factory.go:160: Failed to watch *v1.Node: failed to list *v1.Node: Get \"https://api:6443/api/v1/nodes?fieldSelector=metadata.name%3Dw11\": dial tcp: lookup api: no such host" logger="UnhandledError""#,
            Some(K::WatchFailed),
            None,
            Some(Cause::ApiUnreachable),
        ),
        (
            r#"E0101 00:00:00.000000    1 reflector.go:166] "Failed to watch" err="failed to list *v1.Node: Unauthorized" logger="UnhandledError" reflector="k8s.io/client-go/informers/factory.go:160" type="*v1.Node""#,
            Some(K::WatchFailed),
            None,
            Some(Cause::Auth),
        ),
        // Markers.
        (
            r#"I0715 16:24:50.100 shared_informer.go:xxx] "Caches are synced"  # Cache thinks it's ready"#,
            Some(K::CachesSynced),
            None,
            None,
        ),
        (
            r#"I0410 21:18:24.000000    8158 shared_informer.go:247] Caches are synced for node "#,
            Some(K::CachesSynced),
            None,
            None,
        ),
        (
            r#"I0101 00:00:00.000000    1 reflector.go:368] Caches populated for *v1.Node from k8s.io/client-go/informers/factory.go:160"#,
            Some(K::CachesSynced),
            None,
            None,
        ),
        (
            r#"I0101 00:00:00.000000    1 reflector.go:376] "Caches populated" type="*v1.Node" reflector="k8s.io/client-go/informers/factory.go:160""#,
            Some(K::CachesSynced),
            None,
            None,
        ),
        (
            r#"I0101 00:00:00.000000    1 reflector.go:376] "Caches populated" type="*v1.Pod" reflector="x""#,
            None,
            None,
            None,
        ),
        (
            r#"I0313 12:15:05.821055    2928 apiserver.go:52] "Watching apiserver""#,
            Some(K::CachesSynced),
            None,
            None,
        ),
        (
            r#"I0313 12:15:05.665107    2928 kubelet_node_status.go:493] "Fast updating node status as it just became ready""#,
            Some(K::NodeReady),
            None,
            None,
        ),
        (
            r#"I0101 00:00:00.000000    1 kubelet_node_status.go:679] "Recording event message for node" node="w12" event="NodeReady""#,
            Some(K::NodeReady),
            Some("w12"),
            None,
        ),
        (
            r#"I0101 00:00:00.000000    1 kubelet_node_status.go:679] "Recording event message for node" node="w12" event="NodeHasSufficientMemory""#,
            None,
            None,
            None,
        ),
        (
            r#"I0101 00:00:00.000000    1 server.go:484] "Kubelet version" kubeletVersion="v1.31.0""#,
            Some(K::KubeletStarted),
            None,
            None,
        ),
        // Wordings from messages.md without a real paste: one line each.
        (
            r#"E0101 00:00:00.000000    1 kubelet.go:1000] error updating node status, will retry: error getting node "w1": Get https://api/api/v1/nodes/w1: EOF"#,
            Some(K::StatusRetry),
            Some("w1"),
            Some(Cause::ApiUnreachable),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet.go:1000] Update node status exceeds retry count"#,
            Some(K::StatusExhausted),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"E0101 00:00:00.000000    1 controller.go:200] failed to get node "w5" when trying to set owner ref to the node lease: nodes "w5" not found"#,
            Some(K::ListerMiss),
            Some("w5"),
            Some(Cause::NodeMissing),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:120] "Unable to register node with API server, error getting existing node" err="Get \"https://api/api/v1/nodes/w7\": context deadline exceeded" node="w7""#,
            Some(K::RegisterFailed),
            Some("w7"),
            Some(Cause::ApiTimeout),
        ),
        (
            r#"I0101 00:00:00.000000    1 kubelet_node_status.go:125] "Unable to register node with API server, no node instance returned" node="w7""#,
            Some(K::RegisterFailed),
            Some("w7"),
            Some(Cause::Unknown),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:133] "Unable to reconcile node with API server,error updating node" err="Unauthorized" node="w7""#,
            Some(K::RegisterFailed),
            Some("w7"),
            Some(Cause::Auth),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:90] "Unable to construct v1.Node object for kubelet" err="failed to get instance ID from cloud provider: instance not found""#,
            Some(K::RegisterFailed),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:133] Unable to reconcile node "w7" with API server: error updating node: Unauthorized"#,
            Some(K::RegisterFailed),
            Some("w7"),
            Some(Cause::Auth),
        ),
        (
            r#"E0101 00:00:00.000000    1 kubelet_node_status.go:90] Unable to construct v1.Node object for kubelet: failed to get external ID from cloud provider"#,
            Some(K::RegisterFailed),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"E0101 00:00:00.000000    1 controller.go:114] "Failed to update lease" err="Put \"https://api/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/w9?timeout=10s\": http2: client connection lost""#,
            Some(K::LeaseFailed),
            Some("w9"),
            Some(Cause::ApiUnreachable),
        ),
        (
            r#"E0101 00:00:00.000000    1 controller.go:121] "Will retry updating lease" err="failed 5 attempts to update lease" interval="7s""#,
            Some(K::LeaseFailed),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"E0101 00:00:00.000000    1 controller.go:140] "Failed to prepare lease" err="Unauthorized""#,
            Some(K::LeaseFailed),
            None,
            Some(Cause::Auth),
        ),
        (
            r#"I0101 00:00:00.000000    1 controller.go:128] "failed to update lease using latest lease, fallback to ensure lease" err="the object has been modified; please apply your changes to the latest version and try again""#,
            Some(K::LeaseFailed),
            None,
            Some(Cause::Conflict),
        ),
        (
            r#"E0101 00:00:00.000000    1 controller.go:144] failed to ensure lease exists, will retry in 7s, error: Get "https://api:6443/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/w9?timeout=10s": dial tcp 10.0.0.1:6443: connect: no route to host"#,
            Some(K::LeaseFailed),
            Some("w9"),
            Some(Cause::ApiUnreachable),
        ),
        (
            r#"E0101 00:00:00.000000    1 controller.go:101] failed to update node lease, error: Operation cannot be fulfilled on leases.coordination.k8s.io "w9": the object has been modified; please apply your changes to the latest version and try again"#,
            Some(K::LeaseFailed),
            None,
            Some(Cause::Conflict),
        ),
        (
            r#"E0101 00:00:00.000000    1 controller.go:101] failed to update lease, error: Put "https://api/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/w9?timeout=10s": context deadline exceeded"#,
            Some(K::LeaseFailed),
            Some("w9"),
            Some(Cause::ApiTimeout),
        ),
        (
            r#"I0101 00:00:00.000000    1 controller.go:128] failed to update lease using latest lease, fallback to ensure lease, err: failed 5 attempts to update lease"#,
            Some(K::LeaseFailed),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"E0101 00:00:00.000000    1 controller.go:87] failed 5 attempts to update node lease, will retry after 7s"#,
            Some(K::LeaseFailed),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"E0101 00:00:00.000000    1 reflector.go:138] k8s.io/client-go/informers/factory.go:134: Failed to watch *v1.Node: failed to list *v1.Node: Get "https://api:6443/api/v1/nodes?fieldSelector=metadata.name%3Dw1&limit=500&resourceVersion=0": dial tcp 10.0.0.1:6443: connect: connection refused"#,
            Some(K::WatchFailed),
            None,
            Some(Cause::ApiUnreachable),
        ),
        (
            r#"I0101 00:00:00.000000    1 apiserver.go:43] Watching apiserver"#,
            Some(K::CachesSynced),
            None,
            None,
        ),
        (
            r#"I0101 00:00:00.000000    1 kubelet_node_status.go:441] Recording NodeReady event message for node w12"#,
            Some(K::NodeReady),
            Some("w12"),
            None,
        ),
        (
            r#"I0101 00:00:00.000000    1 kubelet.go:1500] "Started kubelet""#,
            Some(K::KubeletStarted),
            None,
            None,
        ),
        (
            r#"I0101 00:00:00.000000    1 kubelet.go:1189] Started kubelet"#,
            Some(K::KubeletStarted),
            None,
            None,
        ),
        (
            "I0101 00:00:00.000000    1 server.go:416] Version: v1.18.0",
            Some(K::KubeletStarted),
            None,
            None,
        ),
        // The kubelet's fatal lines (design 5.1).
        (
            r#"E0805 10:49:28.520853   12345 run.go:74] "command failed" err="failed to run Kubelet: running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false. /proc/swaps contained: [Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority /dev/sda2 partition\t1000444\t\t0\t\t-2]""#,
            Some(K::KubeletFatal),
            None,
            Some(Cause::Swap),
        ),
        (
            r#"{"ts":1722855000123.456,"caller":"app/server.go:198","msg":"command failed","v":0,"err":"failed to run Kubelet: validate service connection: validate CRI v1 runtime API for endpoint \"unix:///run/containerd/containerd.sock\": rpc error: code = Unimplemented desc = unknown service runtime.v1.RuntimeService"}"#,
            Some(K::KubeletFatal),
            None,
            Some(Cause::Runtime),
        ),
        (
            r#"E1030 10:00:00.000000    4567 kubelet.go:1480] "Failed to start ContainerManager" err="failed to get rootfs info: unable to find data in memory cache""#,
            Some(K::KubeletFatal),
            None,
            Some(Cause::Runtime),
        ),
        (
            r#"E1030 10:00:00.000000    4567 server.go:204] "Failed to load kubelet config file" err="failed to load Kubelet config file /var/lib/kubelet/config.yaml, error failed to read kubelet config file \"/var/lib/kubelet/config.yaml\", error: open /var/lib/kubelet/config.yaml: no such file or directory" path="/var/lib/kubelet/config.yaml""#,
            Some(K::KubeletFatal),
            None,
            Some(Cause::Config),
        ),
        (
            r#"F0101 08:00:00.000000    1234 server.go:233] failed to run Kubelet: misconfiguration: kubelet cgroup driver: "systemd" is different from docker cgroup driver: "cgroupfs""#,
            Some(K::KubeletFatal),
            None,
            Some(Cause::CgroupDriver),
        ),
        (
            r#"F0710 08:34:23.344339   10213 server.go:198] failed to load Kubelet config file /var/lib/kubelet/config.yaml, error failed to read kubelet config file "/var/lib/kubelet/config.yaml", error: open /var/lib/kubelet/config.yaml: no such file or directory"#,
            Some(K::KubeletFatal),
            None,
            Some(Cause::Config),
        ),
        (
            r#"F1209 08:34:23.344339   10213 server.go:198] failed to load kubelet config file, error: failed to decode, path: /var/lib/kubelet/config.yaml"#,
            Some(K::KubeletFatal),
            None,
            Some(Cause::Config),
        ),
        (
            r#"F0101 08:00:00.000000    1234 server.go:154] failed to validate kubelet flags: the container runtime endpoint address was not specified or empty, use --container-runtime-endpoint to set"#,
            Some(K::KubeletFatal),
            None,
            Some(Cause::Config),
        ),
        (
            r#"F0101 08:00:00.000000    1234 kubelet.go:1380] Failed to start ContainerManager failed to initialize top level QOS containers: root container [kubepods] doesn't exist"#,
            Some(K::KubeletFatal),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"F0615 06:57:29.482148    5289 server.go:153] listen tcp 0.0.0.0:10250: bind: address already in use"#,
            Some(K::KubeletFatal),
            None,
            Some(Cause::PortInUse),
        ),
        (
            r#"E0910 08:53:42.796435 3040195 server.go:165] "Failed to listen and serve" err="listen tcp 0.0.0.0:10250: bind: address already in use""#,
            Some(K::KubeletFatal),
            None,
            Some(Cause::PortInUse),
        ),
        // A not-ready line (design 5.3; more in `readiness.rs`).
        (
            r#"I0830 11:17:56.125521    2417 kubelet.go:1775] skipping pod synchronization - [container runtime is down]"#,
            Some(K::NotReady),
            None,
            Some(Cause::Runtime),
        ),
        // Not signals.
        (
            r#"I0322 17:40:11.534568    1272 kubelet_node_status.go:280] Setting node annotation to enable volume controller attach/detach"#,
            None,
            None,
            None,
        ),
        (
            r#"W0513 00:00:00.000000    1 controllermanager.go:512] "tokencleaner" is disabled"#,
            None,
            None,
            None,
        ),
        // The client certificate manager (design 5.7), every wording.
        (
            r#"I1204 10:00:00.000000    2001 certificate_manager.go:356] "Certificate rotation deadline determined" logger="kubernetes.io/kube-apiserver-client-kubelet" expiration="2027-01-01 00:00:00 +0000 UTC" deadline="2026-10-20 12:00:00.123 +0000 UTC""#,
            Some(K::CertDeadline),
            None,
            None,
        ),
        // The serving certificate's: not the client's.
        (
            r#"I1204 10:00:00.000000    2001 certificate_manager.go:356] "Certificate rotation deadline determined" logger="kubernetes.io/kubelet-serving" expiration="2027-01-01 00:00:00 +0000 UTC" deadline="2026-10-20 12:00:00.123 +0000 UTC""#,
            None,
            None,
            None,
        ),
        (
            "I0531 03:00:20.131352    1960 certificate_manager.go:270] kubernetes.io/kube-apiserver-client-kubelet: Certificate expiration is 2025-06-30 02:55:19 +0000 UTC, rotation deadline is 2025-06-25 17:17:56.868848081 +0000 UTC",
            Some(K::CertDeadline),
            None,
            None,
        ),
        (
            "I0531 03:00:20.131352    1960 certificate_manager.go:270] kubernetes.io/kubelet-serving: Certificate expiration is 2025-06-30 02:55:19 +0000 UTC, rotation deadline is 2025-06-25 17:17:56.868848081 +0000 UTC",
            None,
            None,
            None,
        ),
        (
            "I0301 10:00:00.000000    1960 certificate_manager.go:297] Certificate expiration is 2019-03-01 10:00:00 +0000 UTC, rotation deadline is 2019-01-01 10:00:00 +0000 UTC",
            Some(K::CertDeadline),
            None,
            None,
        ),
        (
            r#"I1204 10:00:00.000000    2001 certificate_manager.go:598] "Rotating certificates" logger="kubernetes.io/kube-apiserver-client-kubelet""#,
            Some(K::CertRotating),
            None,
            None,
        ),
        (
            "I1204 10:00:00.000000    2001 certificate_manager.go:407] kubernetes.io/kube-apiserver-client-kubelet: Rotating certificates",
            Some(K::CertRotating),
            None,
            None,
        ),
        (
            "I0301 10:00:00.000000    2001 certificate_manager.go:398] Rotating certificates",
            Some(K::CertRotating),
            None,
            None,
        ),
        (
            "I1204 10:00:00.000000    2001 csr.go:261] certificate signing request csr-8tq2x is issued",
            Some(K::CertRotated),
            None,
            None,
        ),
        (
            "I1204 10:00:00.000000    2001 csr.go:257] certificate signing request csr-8tq2x is approved, waiting to be issued",
            None,
            None,
            None,
        ),
        (
            r#"E1204 10:00:00.000000    2001 certificate_manager.go:562] "Failed while requesting a signed certificate from the control plane" err="cannot create certificate signing request: certificatesigningrequests.certificates.k8s.io is forbidden: User \"system:node:w1\" cannot create resource \"certificatesigningrequests\"" logger="kubernetes.io/kube-apiserver-client-kubelet.UnhandledError""#,
            Some(K::CertFailed),
            None,
            Some(Cause::RotationFailing),
        ),
        (
            r#"E1204 10:00:00.000000    2001 certificate_manager.go:562] "Failed while requesting a signed certificate from the control plane" err="cannot create certificate signing request: certificatesigningrequests.certificates.k8s.io is forbidden" logger="kubernetes.io/kubelet-serving.UnhandledError""#,
            None,
            None,
            None,
        ),
        (
            r#"E1204 10:00:00.000000    2001 certificate_manager.go:590] "Certificate request was not signed" err="context deadline exceeded" logger="kubernetes.io/kube-apiserver-client-kubelet.UnhandledError""#,
            Some(K::CertFailed),
            None,
            Some(Cause::RotationFailing),
        ),
        (
            r#"E1204 10:00:00.000000    2001 runtime.go:79] "Unhandled Error" err="kubernetes.io/kube-apiserver-client-kubelet: Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: Unauthorized" logger="UnhandledError""#,
            Some(K::CertFailed),
            None,
            Some(Cause::RotationFailing),
        ),
        (
            r#"E1204 10:00:00.000000    2001 runtime.go:79] "Unhandled Error" err="kubernetes.io/kube-apiserver-client-kubelet: certificate request was not signed: timed out waiting for the condition" logger="UnhandledError""#,
            Some(K::CertFailed),
            None,
            Some(Cause::RotationFailing),
        ),
        (
            r#"E1204 10:00:00.000000    2001 certificate_manager.go:471] kubernetes.io/kube-apiserver-client-kubelet: Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: Post "https://10.0.0.1:6443/apis/certificates.k8s.io/v1/certificatesigningrequests": dial tcp 10.0.0.1:6443: connect: connection refused"#,
            Some(K::CertFailed),
            None,
            Some(Cause::ApiUnreachable),
        ),
        (
            "E1204 10:00:00.000000    2001 certificate_manager.go:471] kubernetes.io/kubelet-serving: Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: certificatesigningrequests.certificates.k8s.io is forbidden",
            None,
            None,
            None,
        ),
        (
            "E1204 10:00:00.000000    2001 certificate_manager.go:488] kubernetes.io/kube-apiserver-client-kubelet: certificate request was not signed: timed out waiting for the condition",
            Some(K::CertFailed),
            None,
            Some(Cause::RotationFailing),
        ),
        (
            "E0301 10:00:00.000000    2001 certificate_manager.go:441] Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: certificatesigningrequests.certificates.k8s.io is forbidden: User \"system:anonymous\" cannot create certificatesigningrequests.certificates.k8s.io at the cluster scope",
            Some(K::CertFailed),
            None,
            Some(Cause::RotationFailing),
        ),
        (
            "E0301 10:00:00.000000    2001 certificate_manager.go:299] Failed while requesting a signed certificate from the master: cannot create certificate signing request: Post https://10.0.0.1:6443/apis/certificates.k8s.io/v1beta1/certificatesigningrequests: dial tcp 10.0.0.1:6443: getsockopt: connection refused",
            Some(K::CertFailed),
            None,
            Some(Cause::ApiUnreachable),
        ),
        (
            "E0301 10:00:00.000000    2001 certificate_manager.go:318] certificate request was not signed: timed out waiting for the condition",
            Some(K::CertFailed),
            None,
            Some(Cause::RotationFailing),
        ),
        // kubernetes#96256.
        (
            "E1111 00:15:53.851634   66610 transport.go:113] The currently active client certificate has expired, but the server is not responsive. A restart may be necessary to retrieve new initial credentials.",
            Some(K::CertExpired),
            None,
            Some(Cause::Expired),
        ),
        // kubernetes#92676.
        (
            "E0701 00:15:53.851634   66610 transport.go:108] It has been 5m0s since a valid client cert was found, but the server is not responsive. A restart may be necessary to retrieve new initial credentials.",
            Some(K::CertExpired),
            None,
            Some(Cause::Expired),
        ),
        (
            r#"E1204 10:00:00.000000    2001 transport.go:123] "No valid client certificate is found but the server is not responsive. A restart may be necessary to retrieve new initial credentials." lastCertificateAvailabilityTime="2026-12-04 09:55:00 +0000 UTC" shutdownThreshold="5m0s""#,
            Some(K::CertExpired),
            None,
            Some(Cause::Expired),
        ),
        (
            r#"E1204 10:00:00.000000    2001 transport.go:118] "No valid client certificate is found and the server is responsive, exiting." lastCertificateAvailabilityTime="2026-12-04 09:55:00 +0000 UTC" shutdownThreshold="5m0s""#,
            Some(K::CertExpired),
            None,
            Some(Cause::Expired),
        ),
        // kubernetes#65991 (1.10).
        (
            "I0706 12:40:00.000000    2001 bootstrap.go:204] Part of the existing bootstrap client certificate is expired: 2018-07-06 12:32:00 +0000 UTC",
            Some(K::CertExpired),
            None,
            Some(Cause::Expired),
        ),
        (
            "I1204 10:00:00.000000    2001 bootstrap.go:88] Part of the existing bootstrap client certificate in /etc/kubernetes/kubelet.conf is expired: 2026-12-01 00:00:00 +0000 UTC",
            Some(K::CertExpired),
            None,
            Some(Cause::Expired),
        ),
        // Pods that cannot start on a Ready node (design 5.6): issue 38's
        // EKS node out of addresses, 1.2x structured, one attempt.
        (
            r#"E1204 10:00:00.000000    2001 remote_runtime.go:193] "RunPodSandbox from runtime service failed" err="rpc error: code = Unknown desc = failed to setup network for sandbox \"5499422a7c0d\": plugin type=\"aws-cni\" name=\"aws-cni\" failed (add): add cmd: failed to assign an IP address to container""#,
            Some(K::SandboxFailed),
            None,
            Some(Cause::IpExhausted),
        ),
        (
            r#"E1204 10:00:00.000000    2001 kuberuntime_sandbox.go:72] "Failed to create sandbox for pod" err="rpc error: code = Unknown desc = failed to setup network for sandbox \"5499422a7c0d\": plugin type=\"aws-cni\" name=\"aws-cni\" failed (add): add cmd: failed to assign an IP address to container" pod="default/web-3""#,
            Some(K::SandboxFailed),
            None,
            Some(Cause::IpExhausted),
        ),
        (
            r#"E1204 10:00:00.000000    2001 kuberuntime_manager.go:1172] "CreatePodSandbox for pod failed" err="rpc error: code = Unknown desc = failed to setup network for sandbox \"5499422a7c0d\": plugin type=\"aws-cni\" name=\"aws-cni\" failed (add): add cmd: failed to assign an IP address to container" pod="default/web-3""#,
            Some(K::SandboxFailed),
            None,
            Some(Cause::IpExhausted),
        ),
        (
            r#"E1204 10:00:00.000000    2001 pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \"CreatePodSandbox\" for \"web-3_default(96d459e4-c1a6-4412-b38d-dbf299dafd19)\" with CreatePodSandboxError: \"Failed to create sandbox for pod \\\"web-3_default(96d459e4-c1a6-4412-b38d-dbf299dafd19)\\\": rpc error: code = Unknown desc = failed to setup network for sandbox \\\"5499422a7c0d\\\": plugin type=\\\"aws-cni\\\" name=\\\"aws-cni\\\" failed (add): add cmd: failed to assign an IP address to container\"" pod="default/web-3" podUID="96d459e4-c1a6-4412-b38d-dbf299dafd19""#,
            Some(K::SandboxFailed),
            None,
            Some(Cause::IpExhausted),
        ),
        // A pod's other sync errors are not a sandbox's.
        (
            r#"E1204 10:00:00.000000    2001 pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"web\" with CrashLoopBackOff: \"back-off 5m0s restarting failed container=web pod=web-3_default(96d459e4)\"" pod="default/web-3" podUID="96d459e4""#,
            None,
            None,
            None,
        ),
        // JSON logging: the same message, the pod an object.
        (
            r#"{"ts":1733306400000.123,"caller":"kuberuntime/kuberuntime_manager.go:1172","msg":"CreatePodSandbox for pod failed","pod":{"name":"web-3","namespace":"default"},"err":"rpc error: code = Unknown desc = failed to create containerd task: failed to create shim task: OCI runtime create failed: too many open files: unknown"}"#,
            Some(K::SandboxFailed),
            None,
            Some(Cause::Runtime),
        ),
        (
            r#"E1204 10:00:00.000000    2001 kuberuntime_sandbox.go:72] "Failed to create sandbox for pod" err="rpc error: code = DeadlineExceeded desc = context deadline exceeded" pod="ephemeral-6817/inline-volume-tester-8fxzp""#,
            Some(K::SandboxFailed),
            None,
            Some(Cause::Timeout),
        ),
        (
            r#"E1204 10:00:00.000000    2001 kuberuntime_sandbox.go:72] "Failed to create sandbox for pod" err="rpc error: code = Unknown desc = failed to get sandbox image \"registry.k8s.io/pause:3.6\": failed to pull image \"registry.k8s.io/pause:3.6\": dial tcp 108.160.170.26:443: i/o timeout" pod="kube-system/coredns-5d78c9869d-2x7qp""#,
            Some(K::SandboxFailed),
            None,
            Some(Cause::Image),
        ),
        // rancher/rancher#14504: ≤1.20 printf, host-local out of addresses.
        (
            r#"E0711 15:11:17.994634   24727 remote_runtime.go:92] RunPodSandbox from runtime service failed: rpc error: code = Unknown desc = NetworkPlugin cni failed to set up pod "myzep-79945ccb7f-rz8ld_myzep" network: failed to allocate for range 0: no IP addresses available in range set: 10.42.0.1-10.42.0.254"#,
            Some(K::SandboxFailed),
            None,
            Some(Cause::IpExhausted),
        ),
        (
            r#"E0711 15:11:17.994678   24727 kuberuntime_sandbox.go:54] CreatePodSandbox for pod "myzep-79945ccb7f-rz8ld_myzep(4ae2623a-8519-11e8-9f37-005056021169)" failed: rpc error: code = Unknown desc = NetworkPlugin cni failed to set up pod "myzep-79945ccb7f-rz8ld_myzep" network: failed to allocate for range 0: no IP addresses available in range set: 10.42.0.1-10.42.0.254"#,
            Some(K::SandboxFailed),
            None,
            Some(Cause::IpExhausted),
        ),
        (
            r#"E0711 15:11:17.994703   24727 kuberuntime_manager.go:646] createPodSandbox for pod "myzep-79945ccb7f-rz8ld_myzep(4ae2623a-8519-11e8-9f37-005056021169)" failed: rpc error: code = Unknown desc = NetworkPlugin cni failed to set up pod "myzep-79945ccb7f-rz8ld_myzep" network: failed to allocate for range 0: no IP addresses available in range set: 10.42.0.1-10.42.0.254"#,
            Some(K::SandboxFailed),
            None,
            Some(Cause::IpExhausted),
        ),
        (
            r#"E0711 15:11:17.994753   24727 pod_workers.go:186] Error syncing pod 4ae2623a-8519-11e8-9f37-005056021169 ("myzep-79945ccb7f-rz8ld_myzep(4ae2623a-8519-11e8-9f37-005056021169)"), skipping: failed to "CreatePodSandbox" for "myzep-79945ccb7f-rz8ld_myzep(4ae2623a-8519-11e8-9f37-005056021169)""#,
            Some(K::SandboxFailed),
            None,
            Some(Cause::Unknown),
        ),
        (
            r#"E0101 00:00:00.000000    2001 pod_workers.go:186] Error syncing pod 4ae2623a ("web-3_default(4ae2623a)"), skipping: failed to "StartContainer" for "web" with CrashLoopBackOff: "Back-off 5m0s restarting failed container=web pod=web-3_default(4ae2623a)""#,
            None,
            None,
            None,
        ),
        // The success: PLEG's ContainerStarted (V(2)), in each format.
        (
            r#"I0814 19:37:07.384915    1734 kubelet.go:2134] "SyncLoop (PLEG): event for pod" pod="default/nginx" event=&{ID:96d459e4-c1a6-4412-b38d-dbf299dafd19 Type:ContainerStarted Data:578f72d0d40c1758c61041acae108c22d210cbd1c6ea879be27b101870921454}"#,
            Some(K::ContainerStarted),
            None,
            None,
        ),
        (
            r#"I1129 18:33:26.509801    2983 kubelet.go:2465] "SyncLoop (PLEG): event for pod" pod="default/multiple" event={"ID":"ecf6beca-4e57-4562-8f89-b6e72312b3fd","Type":"ContainerStarted","Data":"9782e0cf6742898144c14978eabdbed4af963d2f8eb9d857d4832d98986cf361"}"#,
            Some(K::ContainerStarted),
            None,
            None,
        ),
        (
            r#"I0305 08:20:50.817858     251 kubelet.go:2439] "SyncLoop (PLEG): event for pod" pod="e2e-tas-aw-dnz4h/job-0-2tk5q" event={"ID":"7e5b1126-3a4b-4310-9637-41e061a0de48","Type":"ContainerDied","Data":"8beba762608ec152577132272e271c0508aa0fc09bc8b0dd238610b2a0ddf003"}"#,
            None,
            None,
            None,
        ),
        (
            r#"I0101 00:00:00.000000    2001 kubelet.go:1865] SyncLoop (PLEG): "web-3_default(96d459e4)", event: &pleg.PodLifecycleEvent{ID:"96d459e4", Type:"ContainerStarted", Data:"578f72d0"}"#,
            Some(K::ContainerStarted),
            None,
            None,
        ),
        (
            r#"I0101 00:00:00.000000    2001 kubelet.go:1865] SyncLoop (PLEG): "web-3_default(96d459e4)", event: &pleg.PodLifecycleEvent{ID:"96d459e4", Type:"ContainerDied", Data:"578f72d0"}"#,
            None,
            None,
            None,
        ),
        (
            r#"{"ts":1733306400000.123,"caller":"kubelet/kubelet.go:2465","msg":"SyncLoop (PLEG): event for pod","v":2,"pod":{"name":"web-3","namespace":"default"},"event":{"ID":"96d459e4","Type":"ContainerStarted","Data":"578f72d0"}}"#,
            Some(K::ContainerStarted),
            None,
            None,
        ),
    ];

    #[test]
    fn table_rows() {
        for (text, kind, node, cause) in CASES {
            let line = parse_line(text);
            let sig = recognize(&line);
            assert_eq!(sig.as_ref().map(|s| s.kind), *kind, "kind of {text}");
            if let Some(sig) = sig {
                assert_eq!(sig.node.as_deref(), *node, "node of {text}");
                assert_eq!(sig.cause, *cause, "cause of {text}");
            }
        }
    }

    #[test]
    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "not an incident kind: the variants not named all take one path"
    )]
    fn the_index_finds_the_row_a_walk_of_the_table_finds() {
        // Every case, and for each row a line made of its own words (as a
        // structured line and as a legacy one, at each severity), with
        // words after them: the indexed lookup gives the first matching
        // row in table order, as the walk does.
        let walk = |line: &Line<'_>| {
            line.is_parsed()
                .then(|| TABLE.iter().find(|r| matches(r.form, line)))
                .flatten()
        };
        let mut texts: Vec<String> = CASES.iter().map(|c| c.0.to_string()).collect();
        texts.extend(readiness::tests::texts().map(str::to_string));
        for r in TABLE.iter() {
            let words = match r.form {
                table::Form::Structured(m)
                | table::Form::StructuredWith(m, ..)
                | table::Form::ClientCert(m) => m,
                table::Form::LegacyBetween(p, _)
                | table::Form::LegacyPrefix(p)
                | table::Form::LegacyExact(p)
                | table::Form::LegacyContains(p) => p,
                table::Form::LegacyNodeNotFound => "node \"n\" not found",
                table::Form::FatalSeverity => "anything",
            };
            let needle = match r.form {
                table::Form::StructuredWith(_, key, needle) => format!(" {key}=\"{needle} x\""),
                _ => String::new(),
            };
            for sev in ['I', 'W', 'E', 'F'] {
                let head = format!("{sev}0101 00:00:00.000000    1 x.go:1] ");
                let quoted = words.replace('"', "\\\"");
                texts.push(format!("{head}\"{quoted}\"{needle} node=\"n\""));
                texts.push(format!("{head}{words}"));
                texts.push(format!("{head}{words} and more"));
            }
        }
        let mut matched = 0;
        for text in &texts {
            let line = parse_line(text);
            let (found, walked) = (lookup(&line), walk(&line));
            assert_eq!(
                found.map(std::ptr::from_ref),
                walked.map(std::ptr::from_ref),
                "{text}"
            );
            matched += usize::from(found.is_some());
        }
        assert!(
            matched > TABLE.len(),
            "{matched} of {} lines matched",
            texts.len()
        );
    }

    #[test]
    fn every_row_has_a_case() {
        // Each row of the table is exercised by at least one line above, so
        // a wording cannot be added without a line that shows it.
        let mut hit = vec![false; TABLE.len()];
        let texts = CASES
            .iter()
            .map(|c| c.0)
            .chain(readiness::tests::texts())
            .chain(eviction::tests::texts());
        for text in texts {
            let line = parse_line(text);
            if let Some(r) = lookup(&line) {
                let idx = TABLE.iter().position(|x| std::ptr::eq(x, r)).unwrap();
                hit[idx] = true;
            }
        }
        let missing: Vec<String> = TABLE
            .iter()
            .zip(&hit)
            .filter(|(_, h)| !**h)
            .map(|(r, _)| format!("{:?} {:?}", r.kind, r.form))
            .collect();
        assert!(missing.is_empty(), "rows without a case: {missing:#?}");
    }

    #[test]
    fn systemd_lines() {
        assert_eq!(
            recognize_systemd("Started kubelet: The Kubernetes Node Agent.")
                .unwrap()
                .kind,
            K::KubeletStarted
        );
        assert_eq!(
            recognize_systemd(
                "kubelet.service: Main process exited, code=exited, status=1/FAILURE"
            )
            .unwrap()
            .kind,
            K::KubeletExited
        );
        assert!(recognize_systemd("Reloading.").is_none());
        for (line, kind, exit) in [
            (
                "kubelet.service: Main process exited, code=exited, status=0/SUCCESS",
                K::KubeletStopped,
                Some("code=exited, status=0/SUCCESS"),
            ),
            (
                "kubelet.service: Main process exited, code=killed, status=9/KILL",
                K::KubeletExited,
                Some("code=killed, status=9/KILL"),
            ),
            (
                "kubelet.service: main process exited, code=exited, status=255/n/a",
                K::KubeletExited,
                Some("code=exited, status=255/n/a"),
            ),
            (
                "kubelet.service: Main process exited, code=exited, status=203/EXEC",
                K::KubeletExited,
                Some("code=exited, status=203/EXEC"),
            ),
            (
                "kubelet.service: Failed with result 'exit-code'.",
                K::KubeletFailed,
                Some("result 'exit-code'"),
            ),
            (
                "Unit kubelet.service entered failed state.",
                K::KubeletFailed,
                Some("failed state"),
            ),
            (
                "kubelet.service: Failed with result 'start-limit-hit'.",
                K::KubeletGaveUp,
                Some("result 'start-limit-hit'"),
            ),
            (
                "kubelet.service: Start request repeated too quickly.",
                K::KubeletGaveUp,
                Some("result 'start-limit-hit'"),
            ),
            (
                "Failed to start kubelet: The Kubernetes Node Agent.",
                K::KubeletGaveUp,
                Some("result 'start-limit-hit'"),
            ),
            (
                "kubelet.service: Scheduled restart job, restart counter is at 40.",
                K::KubeletRestart,
                None,
            ),
            (
                "kubelet.service: Service hold-off time over, scheduling restart.",
                K::KubeletRestart,
                None,
            ),
            (
                "kubelet.service holdoff time over, scheduling restart.",
                K::KubeletRestart,
                None,
            ),
            (
                "kubelet.service: Service RestartSec=600ms expired, scheduling restart.",
                K::KubeletRestart,
                None,
            ),
            (
                "Stopping kubelet: The Kubernetes Node Agent...",
                K::KubeletStopping,
                None,
            ),
            (
                "Stopped kubelet: The Kubernetes Node Agent.",
                K::KubeletStopped,
                None,
            ),
        ] {
            let s = recognize_systemd(line).unwrap();
            assert_eq!(s.kind, kind, "{line}");
            assert_eq!(s.exit.as_deref(), exit, "{line}");
        }
    }

    #[test]
    fn fatal_causes() {
        for (text, cause) in [
            (
                "failed to run Kubelet: running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false. /proc/swaps contained: [Filename Type Size Used Priority /swap.img file 2009084 0 -2]",
                Cause::Swap,
            ),
            (
                r#"failed to run Kubelet: misconfiguration: kubelet cgroup driver: "systemd" is different from docker cgroup driver: "cgroupfs""#,
                Cause::CgroupDriver,
            ),
            (
                r#"failed to load kubelet config file, path: /var/lib/kubelet/config.yaml, error: failed to load Kubelet config file /var/lib/kubelet/config.yaml, error failed to read kubelet config file "/var/lib/kubelet/config.yaml", error: open /var/lib/kubelet/config.yaml: no such file or directory"#,
                Cause::Config,
            ),
            (
                "failed to run Kubelet: unable to load bootstrap kubeconfig: stat /etc/kubernetes/bootstrap-kubelet.conf: no such file or directory",
                Cause::Credentials,
            ),
            (
                r#"failed to run Kubelet: validate service connection: validate CRI v1 runtime API for endpoint "unix:///var/run/containerd/containerd.sock": rpc error: code = Unimplemented desc = unknown service runtime.v1.RuntimeService"#,
                Cause::Runtime,
            ),
            (
                "failed to run Kubelet: listen tcp 0.0.0.0:10250: bind: address already in use",
                Cause::PortInUse,
            ),
            ("unknown flag: --network-plugin", Cause::Config),
            ("failed to run Kubelet: something new", Cause::Unknown),
        ] {
            assert_eq!(classify_fatal(text), cause, "{text}");
        }
        assert_eq!(exit_cause("code=exited, status=203/EXEC"), Cause::Exec);
        assert_eq!(exit_cause("code=killed, status=9/KILL"), Cause::Killed);
        assert_eq!(exit_cause("code=exited, status=1/FAILURE"), Cause::Unknown);
        let bare =
            recognize_bare("Error: failed to run Kubelet: running with swap on is not supported")
                .unwrap();
        assert_eq!(
            (bare.kind, bare.cause),
            (K::KubeletFatal, Some(Cause::Swap))
        );
        assert!(recognize_bare("Error: something").is_none());
    }

    #[test]
    fn causes() {
        assert_eq!(
            classify(r#"error getting node "a": nodes "a" not found"#),
            Cause::NodeMissing
        );
        assert_eq!(
            classify(r#"error getting node "a": node "a" not found"#),
            Cause::ListerLag
        );
        assert_eq!(
            classify(r#"csinodes.storage.k8s.io "a" not found"#),
            Cause::Unknown
        );
        assert_eq!(
            classify("x509: certificate has expired or is not yet valid"),
            Cause::Auth
        );
        assert_eq!(
            classify("dial tcp 1.2.3.4:6443: i/o timeout"),
            Cause::ApiTimeout
        );
        assert_eq!(classify("unexpected EOF"), Cause::ApiUnreachable);
        assert_eq!(classify("something else"), Cause::Unknown);
    }
}
