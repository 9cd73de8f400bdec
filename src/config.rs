//! `/etc/kubelet-sentinel/config.toml`: raw serde structs (every key
//! optional, unknown keys rejected, each value with its place in the file),
//! then a pure validation into [`Config`]. Section and key names are a
//! contract with operators' files: keys may be added, never renamed.
//!
//! Errors name the file, the key, the line and the column, and never quote
//! the file: a config path may point anywhere (a symlink to a secret), and
//! on reload the error goes to the service's log, which the journal's
//! readers see.

use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};
use toml::Spanned;

use crate::model::EntryFilter;
use crate::time::{Micros, SECOND, human_duration, parse_duration};
use crate::tracker::Settings;

pub const DEFAULT_PATH: &str = "/etc/kubelet-sentinel/config.toml";

/// Config files are small; anything bigger is not one (`/dev/zero`).
pub(crate) const MAX_BYTES: u64 = 1 << 20;

/// A config problem, with where it is.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("{path}: {message}")]
    Read { path: String, message: String },
    #[error("{path}: line {line}, column {column}: {message}")]
    Parse {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: line {line}, column {column}: [{section}] {key}: {message}")]
    Invalid {
        path: String,
        section: &'static str,
        key: &'static str,
        line: usize,
        column: usize,
        message: String,
    },
}

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
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&human_duration(self.0))
    }
}

impl Period {
    #[must_use]
    pub fn std(self) -> std::time::Duration {
        std::time::Duration::from_micros(self.0.max(0) as u64)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StartAt {
    Boot,
    Now,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Smtp,
    Sendmail,
    File,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tls {
    Starttls,
    Tls,
    None,
}

type S<T> = Option<Spanned<T>>;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    journal: RawJournal,
    #[serde(default)]
    node: RawNode,
    #[serde(default)]
    incidents: RawIncidents,
    #[serde(default)]
    alert: RawAlert,
    #[serde(default)]
    store: RawStore,
    #[serde(default)]
    api: RawApi,
    #[serde(default)]
    fleet: RawFleet,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFleet {
    silent_after: S<Period>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJournal {
    units: S<Vec<String>>,
    identifiers: S<Vec<String>>,
    containers: S<Vec<String>>,
    trusted_uids: S<Vec<u32>>,
    trusted_units: S<Vec<String>>,
    directory: S<String>,
    namespace: S<String>,
    start_at: S<StartAt>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    name: S<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIncidents {
    resolve_after: S<Period>,
    race_window: S<Period>,
    retention: S<Period>,
    max_nodes_per_host: S<u32>,
    max_nodes: S<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlert {
    retries: S<u32>,
    restarts: S<u32>,
    window: S<Period>,
    group_wait: S<Period>,
    repeat_interval: S<Period>,
    send_resolved: S<bool>,
    max_age: S<Period>,
    to: S<Vec<String>>,
    from: S<String>,
    transport: S<Transport>,
    retry_max: S<Period>,
    #[serde(default)]
    smtp: RawSmtp,
    #[serde(default)]
    file: RawFile,
    #[serde(default)]
    alertmanager: RawAlertmanager,
    #[serde(default)]
    route: Vec<RawRoute>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    #[serde(rename = "match")]
    matches: S<RawMatch>,
    to: Spanned<Vec<String>>,
    repeat_interval: S<Period>,
    retries: S<u32>,
    window: S<Period>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatch {
    cause: Option<Vec<String>>,
    kind: Option<Vec<String>>,
    node: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlertmanager {
    urls: S<Vec<String>>,
    labels: S<std::collections::BTreeMap<String, String>>,
    timeout: S<Period>,
    resend_interval: S<Period>,
    ca_file: S<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSmtp {
    host: S<String>,
    port: S<u16>,
    tls: S<Tls>,
    username: S<String>,
    password_file: S<String>,
    ca_file: S<String>,
    timeout: S<Period>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    directory: S<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStore {
    path: S<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApi {
    socket: S<String>,
    metrics_listen: S<String>,
    admin_group: S<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JournalConfig {
    pub units: Vec<String>,
    pub identifiers: Vec<String>,
    pub containers: Vec<String>,
    /// Writers whose identifier- or container-matched lines count.
    pub trusted_uids: Vec<u32>,
    /// Units whose identifier- or container-matched lines count.
    pub trusted_units: Vec<String>,
    pub directory: String,
    pub namespace: String,
    pub start_at: StartAt,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeConfig {
    pub name: String,
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
    pub username: String,
    pub password_file: String,
    pub ca_file: String,
    pub timeout: Period,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileConfig {
    pub directory: String,
}

/// `[alert.alertmanager]`: every instance of an Alertmanager cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlertmanagerConfig {
    pub urls: Vec<String>,
    /// Added to every alert (`cluster = "prod-eu"`).
    pub labels: std::collections::BTreeMap<String, String>,
    pub timeout: Period,
    /// Firing alerts are posted again this often (Alertmanager forgets an
    /// alert that is not), and each says it ends four intervals later.
    pub resend_interval: Period,
    /// A private CA for `https://` instances.
    pub ca_file: String,
}

/// `[[alert.route]]`: alerts for some causes and/or nodes go to their own
/// recipients (and may have their own thresholds). The first that matches
/// an incident takes it; the rest go to `[alert] to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Causes; empty: any.
    pub causes: Vec<String>,
    /// Incident kinds (`node-status`, `kubelet-down`); empty: any.
    pub kinds: Vec<String>,
    /// A node glob; empty: any node.
    pub node: String,
    pub to: Vec<String>,
    pub repeat_interval: Option<Period>,
    pub retries: Option<u32>,
    pub window: Option<Period>,
}

/// As the file spells it (`match = { cause = [...], node = "..." }`), so
/// `check-config`'s output is a config that reads back the same.
impl Serialize for Route {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Match<'a> {
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            cause: &'a [String],
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            kind: &'a [String],
            #[serde(skip_serializing_if = "str::is_empty")]
            node: &'a str,
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
                node: &self.node,
            },
        }
        .serialize(s)
    }
}

impl Route {
    #[must_use]
    pub fn matches(&self, kind: &str, node: &str, cause: &str) -> bool {
        (self.node.is_empty() || crate::model::glob(&self.node, node))
            && (self.causes.is_empty() || self.causes.iter().any(|c| c == cause))
            && (self.kinds.is_empty() || self.kinds.iter().any(|k| k == kind))
    }
}

/// Labels every alert carries; `[alert.alertmanager] labels` may not
/// override them.
pub const ALERT_LABELS: &[&str] = &[
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
    /// `[alert] to`.
    #[must_use]
    pub fn route_of(&self, kind: &str, node: &str, cause: &str) -> Option<usize> {
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
    pub metrics_listen: String,
    /// Besides root, the group whose members may silence, expire
    /// silences, acknowledge and reload over the socket; empty: root only.
    pub admin_group: String,
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

/// `[fleet] silent_after` unless the config says.
pub const DEFAULT_SILENT_AFTER: Micros = 600 * SECOND;

/// `[fleet]`: how a collector judges its hosts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FleetConfig {
    /// A host with no entry for this long while others' entries move on
    /// is silent.
    pub silent_after: Period,
}

/// This machine's host name.
#[must_use]
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "localhost".to_string(), |h| h.trim().to_string())
}

/// Line and column (1-based) of a byte offset.
fn place(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Reads a config file as text: a regular file, at most 1 MiB, not
/// writable by every user. The error never quotes the file.
fn read_config(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    let ft = meta.file_type();
    if ft.is_dir() {
        return Err("is a directory, not a config file".into());
    }
    if ft.is_fifo() || ft.is_char_device() || ft.is_block_device() || ft.is_socket() {
        return Err("is not a regular file".into());
    }
    if meta.permissions().mode() & 0o002 != 0 {
        return Err(format!(
            "is writable by every user (mode {:o}): anyone could redirect the alerts; chmod o-w it",
            meta.permissions().mode() & 0o7777
        ));
    }
    if meta.len() > MAX_BYTES {
        return Err(format!(
            "is {} bytes; a config file is at most {MAX_BYTES}",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| {
        let ok = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let text = String::from_utf8_lossy(ok);
        let (line, column) = place(&text, text.len());
        format!("line {line}, column {column}: not UTF-8 text")
    })
}

impl Config {
    /// Reads and validates a config file. A missing file at the default path
    /// means all defaults; a missing file named explicitly is an error.
    pub fn load(path: &Path, explicit: bool) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        if !explicit && !path.exists() {
            return Self::parse("", &shown);
        }
        let text = read_config(path).map_err(|message| ConfigError::Read {
            path: shown.clone(),
            message,
        })?;
        Self::parse(&text, &shown)
    }

    /// For the query and control commands, which need only the socket (and
    /// the store, when the service is not running): the file's settings, or,
    /// when it is broken (a half-finished edit, while the service runs on its
    /// old settings), the error beside a config made of its `[api] socket`
    /// and `[store] path` where those two can still be read, the defaults
    /// otherwise. The error says what is wrong; the command still answers.
    #[must_use]
    pub fn load_for_query(path: &Path, explicit: bool) -> (Self, Option<ConfigError>) {
        match Self::load(path, explicit) {
            Ok(c) => (c, None),
            Err(e) => {
                let shown = path.display().to_string();
                let text = read_config(path).unwrap_or_default();
                (Self::locations(&text, &shown), Some(e))
            }
        }
    }

    /// A config of only `[api] socket` and `[store] path` from `text`,
    /// each kept where it is valid on its own.
    fn locations(text: &str, shown: &str) -> Self {
        let table: toml::Table = toml::from_str(text).unwrap_or_default();
        let get = |section: &str, key: &str| {
            table
                .get(section)
                .and_then(|s| s.get(key))
                .and_then(toml::Value::as_str)
                .map(str::to_string)
        };
        let one = |section: &str, key: &str, v: Option<String>| -> String {
            v.map(|v| {
                let mut t = toml::Table::new();
                let mut inner = toml::Table::new();
                inner.insert(key.to_string(), toml::Value::String(v));
                t.insert(section.to_string(), toml::Value::Table(inner));
                toml::to_string(&t).unwrap_or_default()
            })
            .filter(|t| Self::parse(t, shown).is_ok())
            .unwrap_or_default()
        };
        let text = one("api", "socket", get("api", "socket"))
            + &one("store", "path", get("store", "path"));
        Self::parse(&text, shown)
            .or_else(|_| Self::parse("", shown))
            .expect("the defaults are a valid config")
    }

    /// Parses and validates config text; `path` only names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Self, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let (line, column) = place(text, e.span().map_or(0, |s| s.start));
            ConfigError::Parse {
                path: path.to_string(),
                line,
                column,
                message: e.message().trim_end().to_string(),
            }
        })?;
        Validator { text, path }.validate(raw)
    }

    /// The tracker's settings.
    #[must_use]
    pub fn tracker_settings(&self) -> Settings {
        Settings {
            resolve_after: self.incidents.resolve_after.0,
            race_window: self.incidents.race_window.0,
            retries: self.alert.retries,
            restarts: self.alert.restarts,
            window: self.alert.window.0,
            repeat_interval: self.alert.repeat_interval.0,
            send_resolved: self.alert.send_resolved,
            node_name: (!self.node.name.is_empty()).then(|| self.node.name.clone()),
            max_nodes_per_host: self.incidents.max_nodes_per_host as usize,
            max_nodes: self.incidents.max_nodes as usize,
            overrides: self
                .alert
                .route
                .iter()
                .filter(|r| {
                    r.retries.is_some() || r.window.is_some() || r.repeat_interval.is_some()
                })
                .map(|r| crate::tracker::Threshold {
                    node: (!r.node.is_empty()).then(|| r.node.clone()),
                    causes: r.causes.clone(),
                    kinds: r.kinds.clone(),
                    retries: r.retries,
                    window: r.window.map(|p| p.0),
                    repeat_interval: r.repeat_interval.map(|p| p.0),
                })
                .collect(),
        }
    }

    #[must_use]
    pub fn filter(&self) -> EntryFilter {
        EntryFilter {
            units: self.journal.units.clone(),
            identifiers: self.journal.identifiers.clone(),
            containers: self.journal.containers.clone(),
            trusted_uids: self.journal.trusted_uids.clone(),
            trusted_units: self.journal.trusted_units.clone(),
        }
    }

    /// The store's directory (`$STATE_DIRECTORY/store` under systemd when
    /// the path is left at its default; see `validate`).
    #[must_use]
    pub fn store_path(&self) -> PathBuf {
        PathBuf::from(&self.store.path)
    }

    /// The effective settings as TOML (for `check-config`).
    #[must_use]
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// The keys that differ from `new` and only take effect after a
    /// restart: `[journal]`, `[store]` and `[api]`.
    #[must_use]
    pub fn needs_restart(&self, new: &Config) -> Vec<String> {
        let mut keys = Vec::new();
        let mut check = |name: &str, a: String, b: String| {
            if a != b {
                keys.push(name.to_string());
            }
        };
        let (j, n) = (&self.journal, &new.journal);
        check(
            "[journal] units",
            format!("{:?}", j.units),
            format!("{:?}", n.units),
        );
        check(
            "[journal] identifiers",
            format!("{:?}", j.identifiers),
            format!("{:?}", n.identifiers),
        );
        check(
            "[journal] containers",
            format!("{:?}", j.containers),
            format!("{:?}", n.containers),
        );
        check(
            "[journal] trusted_uids",
            format!("{:?}", j.trusted_uids),
            format!("{:?}", n.trusted_uids),
        );
        check(
            "[journal] trusted_units",
            format!("{:?}", j.trusted_units),
            format!("{:?}", n.trusted_units),
        );
        check(
            "[journal] directory",
            j.directory.clone(),
            n.directory.clone(),
        );
        check(
            "[journal] namespace",
            j.namespace.clone(),
            n.namespace.clone(),
        );
        check(
            "[journal] start_at",
            format!("{:?}", j.start_at),
            format!("{:?}", n.start_at),
        );
        check(
            "[store] path",
            self.store.path.clone(),
            new.store.path.clone(),
        );
        check(
            "[api] socket",
            self.api.socket.clone(),
            new.api.socket.clone(),
        );
        check(
            "[api] metrics_listen",
            self.api.metrics_listen.clone(),
            new.api.metrics_listen.clone(),
        );
        check(
            "[api] admin_group",
            self.api.admin_group.clone(),
            new.api.admin_group.clone(),
        );
        keys
    }

    /// `new` with the keys that need a restart kept as they run now.
    #[must_use]
    pub fn apply_runtime(&self, new: &Config) -> Config {
        Config {
            journal: self.journal.clone(),
            store: self.store.clone(),
            api: self.api.clone(),
            ..new.clone()
        }
    }
}

const DEFAULT_STORE: &str = "/var/lib/kubelet-sentinel/store";

struct Validator<'a> {
    text: &'a str,
    path: &'a str,
}

/// Bounds on a duration key: (least, most).
type Bounds = (Micros, Micros);
const DAY: Micros = 86_400 * SECOND;

impl Validator<'_> {
    fn invalid<T>(
        &self,
        section: &'static str,
        key: &'static str,
        at: &Spanned<T>,
        message: String,
    ) -> ConfigError {
        let (line, column) = place(self.text, at.span().start);
        ConfigError::Invalid {
            path: self.path.to_string(),
            section,
            key,
            line,
            column,
            message,
        }
    }

    fn period(
        &self,
        section: &'static str,
        key: &'static str,
        v: S<Period>,
        default: Micros,
        (least, most): Bounds,
    ) -> Result<Period, ConfigError> {
        let Some(v) = v else {
            return Ok(Period(default));
        };
        let p = *v.get_ref();
        if p.0 < least || p.0 > most {
            let range = if least == 0 {
                format!("at most {}", human_duration(most))
            } else {
                format!(
                    "between {} and {}",
                    human_duration(least),
                    human_duration(most)
                )
            };
            return Err(self.invalid(
                section,
                key,
                &v,
                format!("{} is out of range: {range}", human_duration(p.0)),
            ));
        }
        Ok(p)
    }

    #[allow(clippy::too_many_lines)] // one list of keys, in the file's order
    fn validate(&self, raw: RawConfig) -> Result<Config, ConfigError> {
        let take = |v: S<String>| v.map(Spanned::into_inner);
        let j = raw.journal;
        let list = |v: &S<Vec<String>>, default: &[&str]| {
            v.as_ref().map_or_else(
                || default.iter().map(|s| (*s).to_string()).collect(),
                |v| v.get_ref().clone(),
            )
        };
        let units = list(&j.units, crate::model::DEFAULT_UNITS);
        let identifiers = list(&j.identifiers, crate::model::DEFAULT_IDENTIFIERS);
        let containers = list(&j.containers, crate::model::DEFAULT_CONTAINERS);
        let trusted_uids = j.trusted_uids.as_ref().map_or_else(
            || crate::model::DEFAULT_TRUSTED_UIDS.to_vec(),
            |v| v.get_ref().clone(),
        );
        let trusted_units = list(&j.trusted_units, &[]);
        if units.is_empty() && identifiers.is_empty() && containers.is_empty() {
            if let Some(u) = &j.units {
                return Err(self.invalid(
                    "journal",
                    "units",
                    u,
                    "no units, identifiers or containers: nothing would be read".into(),
                ));
            }
        }
        if let (Some(d), Some(n)) = (&j.directory, &j.namespace) {
            if !d.get_ref().is_empty() && !n.get_ref().is_empty() {
                return Err(self.invalid(
                    "journal",
                    "namespace",
                    n,
                    "set either directory or namespace, not both".into(),
                ));
            }
        }
        if let Some(n) = &j.namespace {
            let name = n.get_ref();
            if name.contains('/') || name.starts_with('.') || name.chars().any(char::is_control) {
                return Err(self.invalid(
                    "journal",
                    "namespace",
                    n,
                    "not a journal namespace name (no '/', no leading '.')".into(),
                ));
            }
        }
        let start_at = j.start_at.map_or(StartAt::Boot, Spanned::into_inner);
        let directory = take(j.directory).unwrap_or_default();
        let namespace = take(j.namespace).unwrap_or_default();

        let i = raw.incidents;
        let resolve_after = self.period(
            "incidents",
            "resolve_after",
            i.resolve_after,
            60 * SECOND,
            (SECOND, 30 * DAY),
        )?;
        let race_window = self.period(
            "incidents",
            "race_window",
            i.race_window,
            10 * SECOND,
            (0, 3600 * SECOND),
        )?;
        let retention = self.period(
            "incidents",
            "retention",
            i.retention,
            90 * DAY,
            (3600 * SECOND, 36_500 * DAY),
        )?;
        let bounded = |v: S<u32>, key: &'static str, default: usize, max: u32| match v {
            Some(n) if *n.get_ref() == 0 || *n.get_ref() > max => {
                Err(self.invalid("incidents", key, &n, format!("between 1 and {max}")))
            }
            Some(n) => Ok(n.into_inner()),
            None => Ok(u32::try_from(default).unwrap_or(max)),
        };
        let max_nodes_per_host = bounded(
            i.max_nodes_per_host,
            "max_nodes_per_host",
            crate::tracker::DEFAULT_MAX_NODES_PER_HOST,
            100_000,
        )?;
        let max_nodes = bounded(
            i.max_nodes,
            "max_nodes",
            crate::tracker::DEFAULT_MAX_NODES,
            1_000_000,
        )?;

        let a = raw.alert;
        let retries = match a.retries {
            Some(r) if *r.get_ref() > 10_000 => {
                return Err(self.invalid("alert", "retries", &r, "at most 10000".into()));
            }
            Some(r) => r.into_inner(),
            None => 5,
        };
        let restarts = match a.restarts {
            Some(r) if *r.get_ref() > 10_000 => {
                return Err(self.invalid("alert", "restarts", &r, "at most 10000".into()));
            }
            Some(r) => r.into_inner(),
            None => crate::tracker::DEFAULT_RESTARTS,
        };
        let window = self.period(
            "alert",
            "window",
            a.window,
            600 * SECOND,
            (SECOND, 30 * DAY),
        )?;
        let group_wait = self.period(
            "alert",
            "group_wait",
            a.group_wait,
            30 * SECOND,
            (0, 3600 * SECOND),
        )?;
        let repeat_interval = self.period(
            "alert",
            "repeat_interval",
            a.repeat_interval,
            4 * 3600 * SECOND,
            (SECOND, 365 * DAY),
        )?;
        let max_age = self.period("alert", "max_age", a.max_age, DAY, (SECOND, 36_500 * DAY))?;
        let retry_max = self.period(
            "alert",
            "retry_max",
            a.retry_max,
            300 * SECOND,
            (SECOND, DAY),
        )?;
        let mut to = Vec::new();
        if let Some(list) = &a.to {
            for addr in list.get_ref() {
                if addr.parse::<lettre::message::Mailbox>().is_err() || addr.contains(['\r', '\n'])
                {
                    return Err(self.invalid(
                        "alert",
                        "to",
                        list,
                        format!("{addr:?} is not an email address"),
                    ));
                }
                to.push(addr.clone());
            }
        }
        let from = match a.from {
            Some(f) if f.get_ref().is_empty() => format!("kubelet-sentinel@{}", hostname()),
            Some(f) => {
                if f.get_ref().contains(['\r', '\n'])
                    || f.get_ref().parse::<lettre::message::Mailbox>().is_err()
                {
                    return Err(self.invalid(
                        "alert",
                        "from",
                        &f,
                        format!("{:?} is not an email address", f.get_ref()),
                    ));
                }
                f.into_inner()
            }
            None => format!("kubelet-sentinel@{}", hostname()),
        };
        let smtp = a.smtp;
        let host = take(smtp.host).unwrap_or_else(|| "localhost".to_string());
        let tls = match smtp.tls {
            Some(t) if *t.get_ref() == Tls::None && !is_loopback(&host) => {
                return Err(self.invalid(
                    "alert.smtp",
                    "tls",
                    &t,
                    format!("\"none\" is only allowed for a loopback host, not {host:?}"),
                ));
            }
            Some(t) => t.into_inner(),
            None => Tls::Starttls,
        };
        let timeout = self.period(
            "alert.smtp",
            "timeout",
            smtp.timeout,
            30 * SECOND,
            (SECOND, 600 * SECOND),
        )?;

        let am = a.alertmanager;
        let mut am_urls = Vec::new();
        if let Some(list) = &am.urls {
            for u in list.get_ref() {
                if let Err(why) = crate::notify::alertmanager::parse_url(u) {
                    return Err(self.invalid("alert.alertmanager", "urls", list, why));
                }
                am_urls.push(u.trim_end_matches('/').to_string());
            }
        }
        let mut am_labels = std::collections::BTreeMap::new();
        if let Some(labels) = &am.labels {
            for (k, v) in labels.get_ref() {
                let valid = k
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !k.starts_with("__");
                if !valid {
                    return Err(self.invalid(
                        "alert.alertmanager",
                        "labels",
                        labels,
                        format!("{k:?} is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, not __…)"),
                    ));
                }
                if ALERT_LABELS.contains(&k.as_str()) {
                    return Err(self.invalid(
                        "alert.alertmanager",
                        "labels",
                        labels,
                        format!("{k:?} is set by kubelet-sentinel itself"),
                    ));
                }
                if v.is_empty() || v.contains(['\r', '\n']) {
                    return Err(self.invalid(
                        "alert.alertmanager",
                        "labels",
                        labels,
                        format!("the value of {k:?} must be one non-empty line"),
                    ));
                }
                am_labels.insert(k.clone(), v.clone());
            }
        }
        let am_timeout = self.period(
            "alert.alertmanager",
            "timeout",
            am.timeout,
            10 * SECOND,
            (SECOND, 300 * SECOND),
        )?;
        let resend_interval = self.period(
            "alert.alertmanager",
            "resend_interval",
            am.resend_interval,
            60 * SECOND,
            (SECOND, 3600 * SECOND),
        )?;

        let mut routes = Vec::new();
        for r in a.route {
            let to_list = &r.to;
            if to_list.get_ref().is_empty() {
                return Err(self.invalid(
                    "alert.route",
                    "to",
                    to_list,
                    "a route needs at least one recipient".into(),
                ));
            }
            let mut to = Vec::new();
            for addr in to_list.get_ref() {
                if addr.parse::<lettre::message::Mailbox>().is_err() || addr.contains(['\r', '\n'])
                {
                    return Err(self.invalid(
                        "alert.route",
                        "to",
                        to_list,
                        format!("{addr:?} is not an email address"),
                    ));
                }
                to.push(addr.clone());
            }
            let (mut causes, mut kinds, mut node) = (Vec::new(), Vec::new(), String::new());
            if let Some(m) = &r.matches {
                // Each name one of its closed set, or an error naming them.
                let one_of = |what: &str, v: &String, names: &[&str]| {
                    if names.contains(&v.as_str()) {
                        Ok(v.clone())
                    } else {
                        Err(self.invalid(
                            "alert.route",
                            "match",
                            m,
                            format!("{what} {v:?} is not one of {}", names.join(", ")),
                        ))
                    }
                };
                let kind_names: Vec<&str> = crate::tracker::IncidentKind::ALL
                    .iter()
                    .map(|k| k.as_str())
                    .collect();
                let cause_names: Vec<&str> = crate::signals::Cause::ALL
                    .iter()
                    .map(|k| k.as_str())
                    .collect();
                for k in m.get_ref().kind.iter().flatten() {
                    kinds.push(one_of("kind", k, &kind_names)?);
                }
                for c in m.get_ref().cause.iter().flatten() {
                    causes.push(one_of("cause", c, &cause_names)?);
                }
                node = m.get_ref().node.clone().unwrap_or_default();
                if node.len() > 253 || node.chars().any(char::is_control) {
                    return Err(self.invalid(
                        "alert.route",
                        "match",
                        m,
                        "node: a node name or pattern, at most 253 bytes".into(),
                    ));
                }
            }
            let repeat_interval = match r.repeat_interval {
                Some(p) => Some(self.period(
                    "alert.route",
                    "repeat_interval",
                    Some(p),
                    0,
                    (SECOND, 365 * DAY),
                )?),
                None => None,
            };
            let window = match r.window {
                Some(p) => Some(self.period(
                    "alert.route",
                    "window",
                    Some(p),
                    0,
                    (SECOND, 106_751 * DAY),
                )?),
                None => None,
            };
            let retries = match r.retries {
                Some(n) if *n.get_ref() == 0 || *n.get_ref() > 1_000_000 => {
                    return Err(self.invalid(
                        "alert.route",
                        "retries",
                        &n,
                        "from 1 to 1000000".into(),
                    ));
                }
                Some(n) => Some(n.into_inner()),
                None => None,
            };
            routes.push(Route {
                causes,
                kinds,
                node,
                to,
                repeat_interval,
                retries,
                window,
            });
        }

        let store_path = match raw.store.path {
            Some(p) if p.get_ref().trim().is_empty() => {
                return Err(self.invalid("store", "path", &p, "must not be empty".into()));
            }
            Some(p) => p.into_inner(),
            None => std::env::var("STATE_DIRECTORY")
                .ok()
                .and_then(|d| d.split(':').next().map(|d| format!("{d}/store")))
                .unwrap_or_else(|| DEFAULT_STORE.to_string()),
        };
        let socket = match raw.api.socket {
            Some(s) => {
                if s.get_ref().trim().is_empty() {
                    return Err(self.invalid("api", "socket", &s, "must not be empty".into()));
                }
                if let Err(why) = socket_path_usable(Path::new(s.get_ref())) {
                    return Err(self.invalid("api", "socket", &s, why));
                }
                s.into_inner()
            }
            None => "/run/kubelet-sentinel/query.sock".to_string(),
        };
        let metrics_listen = match raw.api.metrics_listen {
            Some(m)
                if !m.get_ref().is_empty()
                    && m.get_ref().parse::<std::net::SocketAddr>().is_err() =>
            {
                return Err(self.invalid(
                    "api",
                    "metrics_listen",
                    &m,
                    format!(
                        "{:?} is not an address:port such as 127.0.0.1:9756",
                        m.get_ref()
                    ),
                ));
            }
            m => take(m).unwrap_or_default(),
        };
        // A group that does not exist (yet) only leaves writes to root: the
        // service and check-config say so, rather than refuse to start.
        let admin_group = match raw.api.admin_group {
            Some(g)
                if g.get_ref().len() > 64
                    || g.get_ref()
                        .chars()
                        .any(|c| c == ':' || c == ',' || c.is_whitespace() || c.is_control()) =>
            {
                return Err(self.invalid(
                    "api",
                    "admin_group",
                    &g,
                    "a group name from /etc/group (no spaces, ':' or ','; at most 64 bytes)".into(),
                ));
            }
            g => take(g).unwrap_or_default(),
        };
        let silent_after = self.period(
            "fleet",
            "silent_after",
            raw.fleet.silent_after,
            DEFAULT_SILENT_AFTER,
            (60 * SECOND, 30 * DAY),
        )?;
        Ok(Config {
            journal: JournalConfig {
                units,
                identifiers,
                containers,
                trusted_uids,
                trusted_units,
                directory,
                namespace,
                start_at,
            },
            node: NodeConfig {
                name: take(raw.node.name).unwrap_or_default(),
            },
            incidents: IncidentsConfig {
                resolve_after,
                race_window,
                retention,
                max_nodes_per_host,
                max_nodes,
            },
            alert: AlertConfig {
                retries,
                restarts,
                window,
                group_wait,
                repeat_interval,
                send_resolved: a.send_resolved.is_none_or(Spanned::into_inner),
                max_age,
                to,
                from,
                transport: a.transport.map_or(Transport::Smtp, Spanned::into_inner),
                retry_max,
                smtp: SmtpConfig {
                    host,
                    port: smtp.port.map_or(25, Spanned::into_inner),
                    tls,
                    username: take(smtp.username).unwrap_or_default(),
                    password_file: take(smtp.password_file).unwrap_or_default(),
                    ca_file: take(smtp.ca_file).unwrap_or_default(),
                    timeout,
                },
                file: FileConfig {
                    directory: take(a.file.directory)
                        .unwrap_or_else(|| "/var/lib/kubelet-sentinel/mail".to_string()),
                },
                alertmanager: AlertmanagerConfig {
                    urls: am_urls,
                    labels: am_labels,
                    timeout: am_timeout,
                    resend_interval,
                    ca_file: take(am.ca_file).unwrap_or_default(),
                },
                route: routes,
            },
            store: StoreConfig { path: store_path },
            api: ApiConfig {
                socket,
                metrics_listen,
                admin_group,
            },
            fleet: FleetConfig { silent_after },
        })
    }
}

/// A query socket path must be free or hold a socket (left by a crash):
/// the service replaces only a socket, never another file.
pub fn socket_path_usable(p: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.file_type().is_socket() => Ok(()),
        Ok(_) => Err(format!(
            "{} exists and is not a socket; the service will not replace it",
            p.display()
        )),
        Err(_) => Ok(()),
    }
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_config_output_reads_back_the_same() {
        let text = "[alert]\nto = [\"a@example.com\"]\n\n[[alert.route]]\nmatch = { cause = [\"auth\"] }\n\
                    to = [\"sec@example.com\"]\nretries = 2\n\n[[alert.route]]\nmatch = { node = \"db-*\" }\n\
                    to = [\"db@example.com\"]\n";
        let c = Config::parse(text, "t").unwrap();
        let shown = c.to_toml();
        assert!(!shown.contains("causes"), "{shown}");
        let again = Config::parse(&shown, "shown").unwrap_or_else(|e| panic!("{e}\n{shown}"));
        assert_eq!(again.alert.route, c.alert.route);
        assert_eq!(again.to_toml(), shown);
    }

    #[test]
    fn routes_match_incident_kinds() {
        let text = "[alert]\nto = [\"a@example.com\"]\nrestarts = 5\n\n[[alert.route]]\n\
                    match = { kind = [\"kubelet-down\"], cause = [\"swap\"] }\nto = [\"node@example.com\"]\n";
        let c = Config::parse(text, "t").unwrap();
        assert_eq!(c.alert.restarts, 5);
        assert_eq!(c.tracker_settings().restarts, 5);
        assert_eq!(c.alert.route_of("kubelet-down", "w1", "swap"), Some(0));
        assert_eq!(c.alert.route_of("node-status", "w1", "swap"), None);
        let shown = c.to_toml();
        let again = Config::parse(&shown, "shown").unwrap_or_else(|e| panic!("{e}\n{shown}"));
        assert_eq!(again.alert.route, c.alert.route);
        let e = Config::parse(
            "[[alert.route]]\nmatch = { kind = [\"kubelet\"] }\nto = [\"x@example.com\"]\n",
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("kind \"kubelet\" is not one of node-status, kubelet-down"),
            "{e}"
        );
    }

    #[test]
    fn defaults() {
        let c = Config::parse("", "t").unwrap();
        assert_eq!(c.journal.units[0], "kubelet.service");
        assert!(c.journal.units.iter().any(|u| u == "k3s-agent.service"));
        assert!(c.journal.identifiers.iter().any(|i| i == "kubenswrapper"));
        assert_eq!(c.journal.containers, ["kubelet"]);
        assert_eq!(c.journal.start_at, StartAt::Boot);
        assert_eq!(c.incidents.resolve_after, Period(60 * SECOND));
        assert_eq!(c.alert.retries, 5);
        assert_eq!(c.alert.transport, Transport::Smtp);
        assert_eq!(c.api.socket, "/run/kubelet-sentinel/query.sock");
        assert_eq!(c.tracker_settings(), Settings::default());
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key_and_line() {
        let e = Config::parse(
            "[journal]\nunits = [\"kubelet.service\"]\nunit = \"x\"\n",
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("c.toml: line 3, column 1: "), "{e}");
        assert!(e.contains("unknown field `unit`"), "{e}");
        let e = Config::parse("[incidents]\n\nresolve_after = \"5 minutes\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3") && e.contains("invalid duration"),
            "{e}"
        );
        let e = Config::parse("[alert]\nretries = -1\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        let e = Config::parse(
            "[alert.smtp]\nhost = \"mail.example.com\"\ntls = \"none\"\n",
            "c.toml",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "c.toml: line 3, column 7: [alert.smtp] tls: \"none\" is only allowed for a loopback host, not \"mail.example.com\""
        );
        let e = Config::parse("[journal]\nstart_at = \"yesterday\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn value_errors_name_the_line_and_absurd_values_are_refused() {
        for (text, key, line) in [
            ("[alert]\n\nwindow = \"0\"\n", "[alert] window", 3),
            (
                "[incidents]\nretention = \"0\"\n",
                "[incidents] retention",
                2,
            ),
            ("[alert]\nmax_age = \"0\"\n", "[alert] max_age", 2),
            ("[alert]\nretry_max = \"0\"\n", "[alert] retry_max", 2),
            ("[alert.smtp]\ntimeout = \"0\"\n", "[alert.smtp] timeout", 2),
            ("[alert]\ngroup_wait = \"2d\"\n", "[alert] group_wait", 2),
            ("[alert]\nwindow = \"106752d\"\n", "[alert] window", 2),
            ("[alert]\nretries = 4294967295\n", "[alert] retries", 2),
            (
                "[alert]\nfrom = \"x@y\\r\\nBcc: evil@x.com\"\n",
                "[alert] from",
                2,
            ),
            (
                "[alert]\nto = [\"ops@example.com\", \"nobody\"]\n",
                "[alert] to",
                2,
            ),
            ("[store]\npath = \"\"\n", "[store] path", 2),
            (
                "[journal]\nnamespace = \"../../etc\"\n",
                "[journal] namespace",
                2,
            ),
        ] {
            let e = Config::parse(text, "c.toml").unwrap_err().to_string();
            assert!(
                e.contains(key) && e.contains(&format!("line {line},")),
                "{text:?}: {e}"
            );
        }
    }

    #[test]
    fn errors_never_quote_the_file() {
        let secret = "root:*:20228:0:99999:7:::\n";
        let e = Config::parse(secret, "c.toml").unwrap_err().to_string();
        assert!(!e.contains("20228"), "{e}");
        assert!(e.starts_with("c.toml: line 1, column"), "{e}");
    }

    #[test]
    fn unsafe_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = Config::load(&p, true).unwrap_err().to_string();
        assert!(e.contains("writable by every user"), "{e}");
        let e = Config::load(Path::new("/dev/zero"), true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = Config::load(dir.path(), true).unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        let text = format!("[api]\nsocket = \"{}\"\n", victim.display());
        let e = Config::parse(&text, "c.toml").unwrap_err().to_string();
        assert!(e.contains("is not a socket"), "{e}");
    }

    #[test]
    fn the_shipped_config_is_valid_and_names_every_key() {
        let text = include_str!("../packaging/config.toml");
        let shipped = Config::parse(text, "packaging/config.toml").unwrap();
        assert_eq!(shipped, Config::parse("", "t").unwrap());
        // Uncommented, it is still valid and still the defaults (but `from`,
        // whose default is computed).
        let uncommented: String = text
            .lines()
            .map(|l| {
                l.strip_prefix('#')
                    .filter(|r| r.contains(" = "))
                    .unwrap_or(l)
            })
            .filter(|l| !l.starts_with("from ="))
            .collect::<Vec<_>>()
            .join("\n");
        let c = Config::parse(&uncommented, "uncommented").unwrap();
        assert_eq!(c, Config::parse("", "t").unwrap());
        // Every key the config knows appears in the shipped file.
        let toml: toml::Value = toml::from_str(&shipped.to_toml()).unwrap();
        for (section, table) in toml.as_table().unwrap() {
            for (key, value) in table.as_table().unwrap() {
                if let Some(sub) = value.as_table() {
                    for k in sub.keys() {
                        assert!(
                            text.contains(&format!("#{k} =")),
                            "[{section}.{key}] {k} missing"
                        );
                    }
                } else {
                    assert!(
                        text.contains(&format!("#{key} =")),
                        "[{section}] {key} missing"
                    );
                }
            }
        }
    }

    #[test]
    fn restart_needed_for_journal_store_and_api() {
        let a = Config::parse("", "t").unwrap();
        let b = Config::parse("[journal]\nnamespace = \"x\"\n[alert]\nretries = 9\n", "t").unwrap();
        assert_eq!(a.needs_restart(&b), ["[journal] namespace"]);
        let applied = a.apply_runtime(&b);
        assert_eq!(applied.alert.retries, 9);
        assert_eq!(applied.journal.namespace, "");
    }
}
