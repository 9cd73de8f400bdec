//! The one home of every default: what a config key means when the file
//! leaves it out. Config validation, the tracker's `Settings::default` and
//! the `scan` command's flags all read these, so they cannot drift apart.
//!
//! Pure on purpose: this file imports nothing from the crate but time
//! constants, so the pure core can read it (a later step walls the core).
//! The enum-valued defaults (`start_at`, `transport`, `tls`) are the
//! `#[default]` variants of their types in `config::settings`.

use crate::time::{Micros, SECOND};

const HOUR: Micros = 3600 * SECOND;
const DAY: Micros = 24 * HOUR;

/// The config file read when `--config` is not given.
pub const CONFIG_PATH: &str = "/etc/kubelet-sentinel/config.toml";

// [journal]

/// The writers trusted by default: root, as which every packaged kubelet
/// (and dockerd, which writes a containerised kubelet's lines) runs.
pub const TRUSTED_UIDS: &[u32] = &[0];

/// The units a kubelet runs as: upstream and kubeadm, k3s (server and
/// agent: the kubelet runs inside), rke2, `MicroK8s` (kubelite, and the older
/// separate kubelet daemon).
pub const UNITS: &[&str] = &[
    "kubelet.service",
    "k3s.service",
    "k3s-agent.service",
    "rke2-server.service",
    "rke2-agent.service",
    "snap.microk8s.daemon-kubelite.service",
    "snap.microk8s.daemon-kubelet.service",
];

/// The identifiers a kubelet logs under wherever its unit is named
/// otherwise: `OpenShift`'s `kubenswrapper`, `hyperkube`, `CoreOS`'s
/// `kubelet-wrapper`, `MicroK8s`'s `kubelite`.
pub const IDENTIFIERS: &[&str] = &[
    "kubelet",
    "kubenswrapper",
    "hyperkube",
    "kubelet-wrapper",
    "kubelite",
];

/// `[journal] context_units` (design 3.2, 5.4): the container runtimes,
/// the network daemons and the time daemons, whose lines explain the
/// kubelet's trouble.
pub const CONTEXT_UNITS: &[&str] = &[
    "containerd.service",
    "docker.service",
    "crio.service",
    "cri-docker.service",
    "systemd-networkd.service",
    "NetworkManager.service",
    "chrony.service",
    "chronyd.service",
    "systemd-timesyncd.service",
    "ntp.service",
    "ntpd.service",
];

/// `[journal] kernel`: read the kernel's lines (OOM killer, links, hung
/// tasks, read-only file systems, I/O errors, conntrack, oopses).
pub const KERNEL: bool = true;

/// A kubelet in a container, logged by Docker's journald driver.
pub const CONTAINERS: &[&str] = &["kubelet"];

// [incidents]

/// `[incidents] resolve_after` (and `scan --resolve-after`).
pub const RESOLVE_AFTER: Micros = 60 * SECOND;
/// [`RESOLVE_AFTER`] as `scan`'s flag spells it.
pub const RESOLVE_AFTER_TEXT: &str = "60s";
/// `[incidents] race_window` (and `scan --race-window`).
pub const RACE_WINDOW: Micros = 10 * SECOND;
/// [`RACE_WINDOW`] as `scan`'s flag spells it.
pub const RACE_WINDOW_TEXT: &str = "10s";
pub const RETENTION: Micros = 90 * DAY;
/// A kubelet names its own node; a few more (a renamed node, a host's
/// lines about another node) fit with room to spare.
pub const MAX_NODES_PER_HOST: u32 = 64;
/// Ten times a large collector's fleet of nodes in trouble at once.
pub const MAX_NODES: u32 = 20_000;
/// `[fleet] max_hosts`: hosts a journal's entries may name (a collector's
/// hosts; a single node's journal names one or two). Entries of a host new
/// past it are counted (`hosts_refused`), not read: one upload can carry any
/// number of `_HOSTNAME`s. Four times Kubernetes' largest cluster. Hosts
/// idle for a day with no open incident do not count, and their records go
/// when a new host needs the room, so the records stay within it too.
pub const MAX_HOSTS: u32 = 20_000;

// [alert]

/// `[alert] retries` (and `scan --retries`).
pub const RETRIES: u32 = 5;
/// `[alert] restarts`: more kubelet restarts than this within `window` is a
/// crash loop.
pub const RESTARTS: u32 = 3;
/// `[alert] not_ready_after`: a node not ready longer than this is
/// persistent (shorter, soon after the kubelet's start, the start-up race).
pub const NOT_READY_AFTER: Micros = 180 * SECOND;
/// `[alert] start_budget`: a kubelet start that reaches Ready later than
/// this is slow (design 5.5).
pub const START_BUDGET: Micros = 300 * SECOND;
/// [`START_BUDGET`] as `scan`'s flag spells it.
pub const START_BUDGET_TEXT: &str = "5m";
/// `[alert] cert_warn`: a client certificate that expires within this
/// and has not rotated is a page (design 5.7).
pub const CERT_WARN: Micros = 7 * DAY;
/// `[alert] sandbox_after`: pods' sandboxes failing this long with none
/// started is a page (design 5.6).
pub const SANDBOX_AFTER: Micros = 300 * SECOND;
/// `[alert] window` (and `scan --window`).
pub const WINDOW: Micros = 600 * SECOND;
/// [`WINDOW`] as `scan`'s flag spells it.
pub const WINDOW_TEXT: &str = "10m";
pub const GROUP_WAIT: Micros = 30 * SECOND;
pub const REPEAT_INTERVAL: Micros = 4 * HOUR;
pub const SEND_RESOLVED: bool = true;
pub const MAX_AGE: Micros = DAY;
pub const RETRY_MAX: Micros = 300 * SECOND;
/// `[alert] from` is this user at the machine's host name.
pub const FROM_USER: &str = "kubelet-sentinel";

// [alert.smtp], [alert.file], [alert.alertmanager]

pub const SMTP_HOST: &str = "localhost";
pub const SMTP_PORT: u16 = 25;
pub const SMTP_TIMEOUT: Micros = 30 * SECOND;
pub const MAIL_DIRECTORY: &str = "/var/lib/kubelet-sentinel/mail";
pub const ALERTMANAGER_TIMEOUT: Micros = 10 * SECOND;
pub const RESEND_INTERVAL: Micros = 60 * SECOND;

// [store], [api], [fleet]

/// `[store] path` outside systemd; under it, `$STATE_DIRECTORY/store`.
pub const STORE_PATH: &str = "/var/lib/kubelet-sentinel/store";
pub const SOCKET: &str = "/run/kubelet-sentinel/query.sock";
/// `[fleet] silent_after`.
pub const SILENT_AFTER: Micros = 600 * SECOND;
/// `[fleet] silent_incidents`: off until the collector tests written
/// before host-silent incidents (hosts uploading hours apart, whose
/// history must equal one handle's) are revisited.
pub const SILENT_INCIDENTS: bool = false;
/// `[fleet] min_nodes`: this many nodes in trouble against one API
/// endpoint (one cause class) are one endpoint incident.
pub const FLEET_MIN_NODES: u32 = 3;
/// `[fleet] window`: ... when their incidents opened within this of each
/// other. Nodes losing one endpoint see it within a few status-update
/// periods (10 s each, plus client back-off); two minutes holds them and
/// keeps two unrelated failures an hour apart from being one outage.
pub const FLEET_WINDOW: Micros = 120 * SECOND;
