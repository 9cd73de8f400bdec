//! The validated settings, every default filled in and every value typed:
//! what is optional is an `Option` (never `""`), the journal read is one
//! [`JournalTarget`], Alertmanager instances are parsed [`Endpoint`]s.
//!
//! They serialize (for `check-config`) as a config file that reads back the
//! same: an unset value is written as `""`, which the file may also say.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Endpoint;
use crate::clock::parse_duration;
use sentinel_core::signals::Cause;
use sentinel_core::time::{Micros, human_duration};
use sentinel_core::tracker::{IncidentKind, Selector};

/// A duration written as `60s`, `10m`, `90d`; parsed while deserializing so
/// a bad value is reported at its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Period(pub Micros);

impl<'de> Deserialize<'de> for Period {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s)
            .map(Period)
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for Period {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&human_duration(self.0))
    }
}

impl Period {
    #[must_use]
    pub fn std(self) -> std::time::Duration {
        std::time::Duration::from_micros(self.0.max(0) as u64)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StartAt {
    #[default]
    Boot,
    Now,
    All,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    #[default]
    Smtp,
    Sendmail,
    File,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
// The variants are the config's words (`tls = "tls"`: implicit TLS).
#[allow(clippy::enum_variant_names)]
pub enum Tls {
    #[default]
    Starttls,
    Tls,
    None,
}

/// An unset value as the file spells it: `""`.
#[allow(clippy::ref_option)] // serde's `serialize_with` hands the field by reference
fn or_empty<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => v.serialize(s),
        None => s.serialize_str(""),
    }
}

/// Which journal is read: `[journal] directory` or `namespace` (at most one
/// of them), else the system's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum JournalTarget {
    #[default]
    System,
    Directory(PathBuf),
    Namespace(String),
}

impl JournalTarget {
    /// `[journal] directory`, when that is what is read.
    #[must_use]
    pub fn directory(&self) -> Option<&PathBuf> {
        match self {
            Self::Directory(d) => Some(d),
            _ => None,
        }
    }

    /// `[journal] namespace`, when that is what is read.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        match self {
            Self::Namespace(n) => Some(n),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalConfig {
    pub units: Vec<String>,
    pub identifiers: Vec<String>,
    pub containers: Vec<String>,
    /// Writers whose identifier- or container-matched lines count.
    pub trusted_uids: Vec<u32>,
    /// Units whose identifier- or container-matched lines count.
    pub trusted_units: Vec<String>,
    /// `[journal] context_units`: read for context (design 5.4).
    pub context_units: Vec<String>,
    /// `[journal] kernel`: the kernel's lines (OOM killer, links, and what
    /// node-problem-detector's kernel monitor knows: design 5.8).
    pub kernel: bool,
    /// `[journal] directory` / `namespace`.
    pub target: JournalTarget,
    pub start_at: StartAt,
}

/// As the file spells it: `directory` and `namespace`, the one not read `""`.
impl Serialize for JournalConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            units: &'a [String],
            identifiers: &'a [String],
            containers: &'a [String],
            trusted_uids: &'a [u32],
            trusted_units: &'a [String],
            context_units: &'a [String],
            kernel: bool,
            directory: &'a Path,
            namespace: &'a str,
            start_at: StartAt,
        }
        Out {
            units: &self.units,
            identifiers: &self.identifiers,
            containers: &self.containers,
            trusted_uids: &self.trusted_uids,
            trusted_units: &self.trusted_units,
            context_units: &self.context_units,
            kernel: self.kernel,
            directory: self
                .target
                .directory()
                .map_or(Path::new(""), PathBuf::as_path),
            namespace: self.target.namespace().unwrap_or_default(),
            start_at: self.start_at,
        }
        .serialize(s)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeConfig {
    /// The node when neither a line nor the host's registration says.
    #[serde(serialize_with = "or_empty")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IncidentsConfig {
    pub resolve_after: Period,
    pub race_window: Period,
    pub retention: Period,
    /// Bound on one host's nodes with an open incident.
    pub max_nodes_per_host: u32,
    /// Bound on nodes with an open incident in all.
    pub max_nodes: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    pub tls: Tls,
    /// Set: log in (the password comes from `password_file` or the
    /// service's credentials).
    #[serde(serialize_with = "or_empty")]
    pub username: Option<String>,
    #[serde(serialize_with = "or_empty")]
    pub password_file: Option<PathBuf>,
    /// A private CA for the SMTP server.
    #[serde(serialize_with = "or_empty")]
    pub ca_file: Option<PathBuf>,
    pub timeout: Period,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileConfig {
    pub directory: PathBuf,
}

/// `[alert.alertmanager]`: every instance of an Alertmanager cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlertmanagerConfig {
    pub urls: Vec<Endpoint>,
    /// Added to every alert (`cluster = "prod-eu"`).
    pub labels: BTreeMap<String, String>,
    pub timeout: Period,
    /// Firing alerts are posted again this often (Alertmanager forgets an
    /// alert that is not), and each says it ends four intervals later.
    pub resend_interval: Period,
    /// A private CA for `https://` instances.
    #[serde(serialize_with = "or_empty")]
    pub ca_file: Option<PathBuf>,
}

/// `[[alert.route]]`: alerts for some causes and/or nodes go to their own
/// recipients (and may have their own thresholds). The first that matches
/// an incident takes it; the rest go to `[alert] to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Causes; empty: any.
    pub causes: Vec<Cause>,
    /// Incident kinds; empty: any.
    pub kinds: Vec<IncidentKind>,
    /// A node glob; `None`: any node.
    pub node: Option<String>,
    pub to: Vec<String>,
    pub repeat_interval: Option<Period>,
    pub retries: Option<u32>,
    pub window: Option<Period>,
}

/// As the file spells it (`match = { cause = [...], node = "..." }`), so
/// `check-config`'s output is a config that reads back the same.
impl Serialize for Route {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Match<'a> {
            #[serde(skip_serializing_if = "<[Cause]>::is_empty")]
            cause: &'a [Cause],
            #[serde(skip_serializing_if = "<[IncidentKind]>::is_empty")]
            kind: &'a [IncidentKind],
            #[serde(skip_serializing_if = "Option::is_none")]
            node: Option<&'a str>,
        }
        #[derive(Serialize)]
        struct Out<'a> {
            to: &'a [String],
            #[serde(skip_serializing_if = "Option::is_none")]
            repeat_interval: Option<Period>,
            #[serde(skip_serializing_if = "Option::is_none")]
            retries: Option<u32>,
            #[serde(skip_serializing_if = "Option::is_none")]
            window: Option<Period>,
            #[serde(rename = "match")]
            matches: Match<'a>,
        }
        Out {
            to: &self.to,
            repeat_interval: self.repeat_interval,
            retries: self.retries,
            window: self.window,
            matches: Match {
                cause: &self.causes,
                kind: &self.kinds,
                node: self.node.as_deref(),
            },
        }
        .serialize(s)
    }
}

impl Route {
    #[must_use]
    pub fn selector(&self) -> Selector<'_> {
        Selector {
            node: self.node.as_deref(),
            causes: &self.causes,
            kinds: &self.kinds,
        }
    }

    #[must_use]
    pub fn matches(&self, kind: IncidentKind, node: &str, cause: Cause) -> bool {
        self.selector().matches(kind, node, cause)
    }
}

/// Labels every alert carries; `[alert.alertmanager] labels` may not
/// override them.
pub(crate) const ALERT_LABELS: &[&str] = &[
    "alertname",
    "kind",
    "node",
    "host",
    "cause",
    "verdict",
    "severity",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlertConfig {
    pub retries: u32,
    /// A kubelet restarted more often than this within `window` is in a
    /// crash loop (kubelet-down incidents).
    pub restarts: u32,
    /// A node not ready longer than this is persistent (not-ready
    /// incidents).
    pub not_ready_after: Period,
    /// A kubelet start Ready later than this is slow (design 5.5).
    pub start_budget: Period,
    /// A client certificate that expires within this (or has expired) is
    /// persistent (certificate incidents, design 5.7).
    pub cert_warn: Period,
    /// Pods' sandboxes failing this long with no failing pod started are
    /// persistent (pod-sandbox incidents, design 5.6).
    pub sandbox_after: Period,
    pub window: Period,
    pub group_wait: Period,
    pub repeat_interval: Period,
    pub send_resolved: bool,
    pub max_age: Period,
    pub to: Vec<String>,
    pub from: String,
    pub transport: Transport,
    pub retry_max: Period,
    pub smtp: SmtpConfig,
    pub file: FileConfig,
    pub alertmanager: AlertmanagerConfig,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub route: Vec<Route>,
}

impl AlertConfig {
    /// Whether anything is delivered at all.
    #[must_use]
    pub fn delivers(&self) -> bool {
        self.emails() || !self.alertmanager.urls.is_empty()
    }

    /// Whether alerts are emailed (to `[alert] to` or a route's).
    #[must_use]
    pub fn emails(&self) -> bool {
        !self.to.is_empty() || self.route.iter().any(|r| !r.to.is_empty())
    }

    /// The route an incident's mail goes by: its index, `None` for
    /// `[alert] to` (the tests' view of the routing).
    #[cfg(test)]
    #[must_use]
    pub fn route_of(&self, kind: IncidentKind, node: &str, cause: Cause) -> Option<usize> {
        self.route.iter().position(|r| r.matches(kind, node, cause))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreConfig {
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiConfig {
    pub socket: String,
    /// Where `/metrics` is served over TCP; `None`: not at all.
    #[serde(serialize_with = "or_empty")]
    pub metrics_listen: Option<SocketAddr>,
    /// Besides root, the group whose members may silence, expire
    /// silences, acknowledge and reload over the socket; `None`: root only.
    #[serde(serialize_with = "or_empty")]
    pub admin_group: Option<String>,
}

/// `[fleet]`: how a collector judges its hosts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FleetConfig {
    /// A host with no entry for this long while others' entries move on
    /// is silent.
    pub silent_after: Period,
    /// A collector's silent hosts are `host-silent` incidents, alerted
    /// like the others (design 5.2); off: `status` and the metric only.
    pub silent_incidents: bool,
    /// This many nodes in trouble against one API endpoint (one cause
    /// class) are one endpoint incident.
    pub min_nodes: u32,
    /// ... when their incidents opened within this of each other.
    pub window: Period,
    /// Hosts read at most: the quietest with no open incident give way to
    /// new ones; while every host has one, entries of a host new past it
    /// are counted (`hosts_refused` in `status`, the metric), not read.
    pub max_hosts: u32,
}

/// The validated configuration, every default filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Config {
    pub journal: JournalConfig,
    pub node: NodeConfig,
    pub incidents: IncidentsConfig,
    pub alert: AlertConfig,
    pub store: StoreConfig,
    pub api: ApiConfig,
    pub fleet: FleetConfig,
}
