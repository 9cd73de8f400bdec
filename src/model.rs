//! What sources produce and the pure core consumes: one [`Entry`] per
//! journal entry or saved-log line, the [`EntryFilter`] that says which
//! entries are the kubelet's, and the [`Item`]s a source yields. Both the
//! readers (`journal/`) and the core (`parse/`, `pipeline`) depend on this
//! module; it depends on nothing but `time`.

use crate::time::Micros;

/// A field value that repeats across entries (host, unit, identifier,
/// stream): shared, not copied per entry.
pub type Text = std::sync::Arc<str>;

/// One journal entry, or one line of a saved log.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// `__REALTIME_TIMESTAMP`, or the line's own time for text logs; `None`
    /// when a text line carries no time at all.
    pub at: Option<Micros>,
    /// `__CURSOR`; journal sources only.
    pub cursor: Option<String>,
    /// `_HOSTNAME`, or the host field of a syslog-style prefix.
    pub host: Option<Text>,
    /// `_SYSTEMD_UNIT`.
    pub unit: Option<Text>,
    /// `SYSLOG_IDENTIFIER`, or the tag of a syslog-style prefix.
    pub identifier: Option<Text>,
    /// `_PID`.
    pub pid: Option<u32>,
    /// `_STREAM_ID`: continuation entries share it with the line they continue.
    pub stream: Option<Text>,
    /// True for systemd's own lines about a unit (`_PID=1` with `UNIT=`).
    pub from_systemd: bool,
    /// `UNIT=` on systemd's own lines.
    pub about_unit: Option<Text>,
    /// `CONTAINER_NAME` (Docker's journald log driver).
    #[serde(default)]
    pub container: Option<Text>,
    /// `_UID`: the writer's user, which journald sets and no client can
    /// forge. `None` for saved text logs, which carry no such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// MESSAGE, as bytes: it may be binary or invalid UTF-8.
    pub message: Vec<u8>,
    /// `_LINE_BREAK=line-max`: journald cut a line longer than `LineMax`
    /// here; the next entry of the stream goes on with the same line.
    #[serde(default)]
    pub cut: bool,
    /// A saved log's reader found a record start here although the message
    /// has no klog header (a body whose header a paste cut off): a line of
    /// its own, not a continuation.
    #[serde(default)]
    pub record: bool,
    /// The group of files a collector's reader read it from (one writer:
    /// one host): its cursor is that group's position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<Text>,
}

/// Which entries belong to the kubelet (design section 4).
#[derive(Debug, Clone)]
pub struct EntryFilter {
    pub units: Vec<String>,
    pub identifiers: Vec<String>,
    /// `CONTAINER_NAME`s (a kubelet run in a container by Docker's journald
    /// log driver).
    pub containers: Vec<String>,
    /// Writers (`_UID`) whose entries count when they match by identifier
    /// or container name only (see [`EntryFilter::trusted`]).
    pub trusted_uids: Vec<u32>,
    /// Units (`_SYSTEMD_UNIT`) whose entries count when they match by
    /// identifier or container name, whoever runs them.
    pub trusted_units: Vec<String>,
}

/// The writers trusted by default: root, as which every packaged kubelet
/// (and dockerd, which writes a containerised kubelet's lines) runs.
pub const DEFAULT_TRUSTED_UIDS: &[u32] = &[0];

/// The units a kubelet runs as: upstream and kubeadm, k3s (server and
/// agent: the kubelet runs inside), rke2, `MicroK8s` (kubelite, and the older
/// separate kubelet daemon).
pub const DEFAULT_UNITS: &[&str] = &[
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
pub const DEFAULT_IDENTIFIERS: &[&str] = &[
    "kubelet",
    "kubenswrapper",
    "hyperkube",
    "kubelet-wrapper",
    "kubelite",
];

/// A kubelet in a container, logged by Docker's journald driver.
pub const DEFAULT_CONTAINERS: &[&str] = &["kubelet"];

/// Identifiers a kubelet is known to log under when a saved text log has no
/// unit to go by (`klog-format.md`, `SYSLOG_IDENTIFIER` row).
pub const KNOWN_KUBELET_IDENTIFIERS: &[&str] = &[
    "kubelet",
    "kubelet-wrapper",
    "kubenswrapper",
    "hyperkube",
    "k3s",
    "k3s-agent",
    "k3s-server",
    "rke2",
    "rke2-agent",
    "rke2-server",
    "k0s",
    "k0sworker",
    "kubelite",
    "microk8s.daemon-kubelet",
    "microk8s.daemon-kubelite",
];

/// Identifiers under which only the kubelet writes (its binary, or a
/// wrapper that execs it). Other kubelet sources (k3s, rke2, kubelite, a
/// Docker daemon, `OpenShift`'s node process) also carry their own output.
pub const KUBELET_ONLY_IDENTIFIERS: &[&str] =
    &["kubelet", "kubenswrapper", "hyperkube", "kubelet-wrapper"];

/// Whether everything the entry's source writes is the kubelet's: its own
/// identifier, a container named for it, or a saved log with no identifier.
#[must_use]
pub fn kubelet_alone(e: &Entry) -> bool {
    e.container.is_some()
        || e.identifier
            .as_deref()
            .is_none_or(|i| KUBELET_ONLY_IDENTIFIERS.contains(&i))
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_string()).collect()
}

impl Default for EntryFilter {
    fn default() -> Self {
        Self {
            units: strings(DEFAULT_UNITS),
            identifiers: strings(DEFAULT_IDENTIFIERS),
            containers: strings(DEFAULT_CONTAINERS),
            trusted_uids: DEFAULT_TRUSTED_UIDS.to_vec(),
            trusted_units: Vec::new(),
        }
    }
}

impl EntryFilter {
    /// Whether a matched entry may count as the kubelet's. Any local user
    /// can log under the identifier `kubelet` (`logger -t kubelet`, a
    /// datagram with `CONTAINER_NAME=kubelet`), but only journald sets
    /// `_SYSTEMD_UNIT`, `_PID` and `_UID`. So an entry of a configured unit
    /// (its cgroup), systemd's own line about it (`_PID=1`), or one written
    /// by a trusted uid or unit counts; any other look-alike is counted
    /// apart and never opens an incident. Saved text logs carry no `_UID`:
    /// the operator chose the file, and its lines count as today.
    #[must_use]
    pub fn trusted(&self, e: &Entry) -> bool {
        let Some(uid) = e.uid else {
            return true;
        };
        let unit_in = |v: &[String]| e.unit.as_deref().is_some_and(|u| v.iter().any(|x| x == u));
        e.from_systemd
            || unit_in(&self.units)
            || self.trusted_uids.contains(&uid)
            || unit_in(&self.trusted_units)
    }

    /// The journal match: the unit, systemd's own lines about the unit, or a
    /// configured identifier. Entries from saved text logs carry no unit, so
    /// for them the known kubelet identifiers count too.
    #[must_use]
    pub fn matches(&self, e: &Entry) -> bool {
        if let Some(unit) = &e.unit {
            if self.units.iter().any(|u| **u == **unit) {
                return true;
            }
        }
        if e.from_systemd {
            if let Some(about) = &e.about_unit {
                return self.units.iter().any(|u| **u == **about);
            }
        }
        if e.container
            .as_deref()
            .is_some_and(|c| self.containers.iter().any(|x| x == c))
        {
            return true;
        }
        let Some(ident) = &e.identifier else {
            // A bare klog line (no prefix, no fields): a saved kubelet log.
            return e.unit.is_none() && !e.from_systemd;
        };
        if self.identifiers.iter().any(|i| **i == **ident) {
            return true;
        }
        if e.unit.is_some() {
            return false;
        }
        if &**ident == "systemd" {
            let msg = String::from_utf8_lossy(&e.message);
            return self.units.iter().any(|u| {
                let stem = u.strip_suffix(".service").unwrap_or(u);
                msg.starts_with(&format!("{u}:"))
                    || msg.starts_with(&format!("Unit {u} "))
                    || msg.starts_with(&format!("{u} "))
                    || msg.starts_with(&format!("Failed to start {stem}"))
                    || msg.starts_with(&format!("Started {stem}"))
                    || msg.starts_with(&format!("Stopped {stem}"))
                    || msg.starts_with(&format!("Stopping {stem}"))
            });
        }
        KNOWN_KUBELET_IDENTIFIERS.contains(&&**ident)
            || self
                .units
                .iter()
                .any(|u| u.strip_suffix(".service") == Some(&**ident))
    }
}

/// A record of the input that could not be read as an entry: said with its
/// place, counted, and skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub place: String,
    pub reason: String,
}

/// What a source yields: entries, and the records it had to skip.
#[derive(Debug)]
pub enum Item {
    Entry(Entry),
    Malformed(Malformed),
    /// A record read with a loss, said with its place: a line or field
    /// longer than a reader keeps (its start comes as an entry, the rest is
    /// dropped), or a time that could not be read (the line's own was used).
    Damaged(Malformed),
}
