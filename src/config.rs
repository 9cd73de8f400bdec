//! `/etc/kubelet-sentinel/config.toml`: raw serde structs (every key
//! optional, unknown keys rejected with their name and line), then a pure
//! validation into [`Config`]. Section and key names are a contract with
//! operators' files: keys may be added, never renamed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

use crate::journal::EntryFilter;
use crate::time::{Micros, SECOND, parse_duration};
use crate::tracker::Settings;

pub const DEFAULT_PATH: &str = "/etc/kubelet-sentinel/config.toml";

/// A config problem, with where it is.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The TOML error already names the key, the line and the column.
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("{path}: [{section}] {key}: {message}")]
    Invalid {
        path: String,
        section: &'static str,
        key: &'static str,
        message: String,
    },
}

/// A duration written as `60s`, `10m`, `90d`; parsed while deserializing so
/// a bad value is reported at its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duration(pub Micros);

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s)
            .map(Duration)
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for Duration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::time::human_duration(self.0))
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

#[derive(Debug, Clone, Default, Deserialize)]
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
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJournal {
    units: Option<Vec<String>>,
    identifiers: Option<Vec<String>>,
    directory: Option<String>,
    namespace: Option<String>,
    start_at: Option<StartAt>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIncidents {
    resolve_after: Option<Duration>,
    race_window: Option<Duration>,
    retention: Option<Duration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlert {
    retries: Option<u32>,
    window: Option<Duration>,
    group_wait: Option<Duration>,
    repeat_interval: Option<Duration>,
    send_resolved: Option<bool>,
    max_age: Option<Duration>,
    to: Option<Vec<String>>,
    from: Option<String>,
    transport: Option<Transport>,
    retry_max: Option<Duration>,
    #[serde(default)]
    smtp: RawSmtp,
    #[serde(default)]
    file: RawFile,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSmtp {
    host: Option<String>,
    port: Option<u16>,
    tls: Option<Tls>,
    username: Option<String>,
    password_file: Option<String>,
    ca_file: Option<String>,
    timeout: Option<Duration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    directory: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStore {
    path: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApi {
    socket: Option<String>,
    metrics_listen: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JournalConfig {
    pub units: Vec<String>,
    pub identifiers: Vec<String>,
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
    pub resolve_after: Duration,
    pub race_window: Duration,
    pub retention: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    pub tls: Tls,
    pub username: String,
    pub password_file: String,
    pub ca_file: String,
    pub timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileConfig {
    pub directory: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlertConfig {
    pub retries: u32,
    pub window: Duration,
    pub group_wait: Duration,
    pub repeat_interval: Duration,
    pub send_resolved: bool,
    pub max_age: Duration,
    pub to: Vec<String>,
    pub from: String,
    pub transport: Transport,
    pub retry_max: Duration,
    pub smtp: SmtpConfig,
    pub file: FileConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreConfig {
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiConfig {
    pub socket: String,
    pub metrics_listen: String,
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
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "localhost".to_string(), |h| h.trim().to_string())
}

impl Config {
    /// Reads and validates a config file. A missing file at the default path
    /// means all defaults; a missing file named explicitly is an error.
    pub fn load(path: &Path, explicit: bool) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text, &shown),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
                Self::parse("", &shown)
            }
            Err(source) => Err(ConfigError::Read {
                path: shown,
                source,
            }),
        }
    }

    /// Parses and validates config text; `path` only names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Self, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        validate(raw, path)
    }

    /// The tracker's settings.
    #[must_use]
    pub fn tracker_settings(&self) -> Settings {
        Settings {
            resolve_after: self.incidents.resolve_after.0,
            race_window: self.incidents.race_window.0,
            retries: self.alert.retries,
            window: self.alert.window.0,
            repeat_interval: self.alert.repeat_interval.0,
            send_resolved: self.alert.send_resolved,
            node_name: (!self.node.name.is_empty()).then(|| self.node.name.clone()),
        }
    }

    #[must_use]
    pub fn filter(&self) -> EntryFilter {
        EntryFilter {
            units: self.journal.units.clone(),
            identifiers: self.journal.identifiers.clone(),
        }
    }

    /// The store's directory: `$STATE_DIRECTORY` under systemd when the
    /// path is left at its default.
    #[must_use]
    pub fn store_path(&self) -> PathBuf {
        PathBuf::from(&self.store.path)
    }

    /// The effective settings as TOML (for `check-config`).
    #[must_use]
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Keys whose change needs a restart, with their old and new values.
    #[must_use]
    pub fn needs_restart(&self, new: &Config) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if self.journal != new.journal {
            keys.push("[journal]");
        }
        if self.store != new.store {
            keys.push("[store] path");
        }
        if self.api != new.api {
            keys.push("[api]");
        }
        keys
    }
}

const DEFAULT_STORE: &str = "/var/lib/kubelet-sentinel/store";

fn validate(raw: RawConfig, path: &str) -> Result<Config, ConfigError> {
    let invalid = |section, key, message: String| ConfigError::Invalid {
        path: path.to_string(),
        section,
        key,
        message,
    };
    let j = raw.journal;
    let units = j
        .units
        .unwrap_or_else(|| vec!["kubelet.service".to_string()]);
    if units.is_empty() && j.identifiers.as_ref().is_none_or(Vec::is_empty) {
        return Err(invalid(
            "journal",
            "units",
            "no units and no identifiers: nothing would be read".into(),
        ));
    }
    let directory = j.directory.unwrap_or_default();
    let namespace = j.namespace.unwrap_or_default();
    if !directory.is_empty() && !namespace.is_empty() {
        return Err(invalid(
            "journal",
            "namespace",
            "set either directory or namespace, not both".into(),
        ));
    }
    let i = raw.incidents;
    let resolve_after = i.resolve_after.unwrap_or(Duration(60 * SECOND));
    if resolve_after.0 <= 0 {
        return Err(invalid(
            "incidents",
            "resolve_after",
            "must be more than 0".into(),
        ));
    }
    let a = raw.alert;
    let window = a.window.unwrap_or(Duration(600 * SECOND));
    if window.0 <= 0 {
        return Err(invalid("alert", "window", "must be more than 0".into()));
    }
    let repeat_interval = a.repeat_interval.unwrap_or(Duration(4 * 3600 * SECOND));
    if repeat_interval.0 <= 0 {
        return Err(invalid(
            "alert",
            "repeat_interval",
            "must be more than 0".into(),
        ));
    }
    let to = a.to.unwrap_or_default();
    for addr in &to {
        if !addr.contains('@') || addr.contains(['\r', '\n', '<', '>', ',']) {
            return Err(invalid(
                "alert",
                "to",
                format!("{addr:?} is not an email address"),
            ));
        }
    }
    let smtp = a.smtp;
    let host = smtp.host.unwrap_or_else(|| "localhost".to_string());
    let tls = smtp.tls.unwrap_or(Tls::Starttls);
    if tls == Tls::None && !is_loopback(&host) {
        return Err(invalid(
            "alert.smtp",
            "tls",
            format!("\"none\" is only allowed for a loopback host, not {host:?}"),
        ));
    }
    let store_path = raw.store.path.unwrap_or_else(|| {
        std::env::var("STATE_DIRECTORY")
            .ok()
            .and_then(|d| d.split(':').next().map(|d| format!("{d}/store")))
            .unwrap_or_else(|| DEFAULT_STORE.to_string())
    });
    let metrics_listen = raw.api.metrics_listen.unwrap_or_default();
    if !metrics_listen.is_empty() && metrics_listen.parse::<std::net::SocketAddr>().is_err() {
        return Err(invalid(
            "api",
            "metrics_listen",
            format!("{metrics_listen:?} is not an address:port such as 127.0.0.1:9756"),
        ));
    }
    Ok(Config {
        journal: JournalConfig {
            units,
            identifiers: j.identifiers.unwrap_or_default(),
            directory,
            namespace,
            start_at: j.start_at.unwrap_or(StartAt::Boot),
        },
        node: NodeConfig {
            name: raw.node.name.unwrap_or_default(),
        },
        incidents: IncidentsConfig {
            resolve_after,
            race_window: i.race_window.unwrap_or(Duration(10 * SECOND)),
            retention: i.retention.unwrap_or(Duration(90 * 86_400 * SECOND)),
        },
        alert: AlertConfig {
            retries: a.retries.unwrap_or(5),
            window,
            group_wait: a.group_wait.unwrap_or(Duration(30 * SECOND)),
            repeat_interval,
            send_resolved: a.send_resolved.unwrap_or(true),
            max_age: a.max_age.unwrap_or(Duration(86_400 * SECOND)),
            to,
            from: a
                .from
                .unwrap_or_else(|| format!("kubelet-sentinel@{}", hostname())),
            transport: a.transport.unwrap_or(Transport::Smtp),
            retry_max: a.retry_max.unwrap_or(Duration(300 * SECOND)),
            smtp: SmtpConfig {
                host,
                port: smtp.port.unwrap_or(25),
                tls,
                username: smtp.username.unwrap_or_default(),
                password_file: smtp.password_file.unwrap_or_default(),
                ca_file: smtp.ca_file.unwrap_or_default(),
                timeout: smtp.timeout.unwrap_or(Duration(30 * SECOND)),
            },
            file: FileConfig {
                directory: a
                    .file
                    .directory
                    .unwrap_or_else(|| "/var/lib/kubelet-sentinel/mail".to_string()),
            },
        },
        store: StoreConfig { path: store_path },
        api: ApiConfig {
            socket: raw
                .api
                .socket
                .unwrap_or_else(|| "/run/kubelet-sentinel/query.sock".to_string()),
            metrics_listen,
        },
    })
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
    fn defaults() {
        let c = Config::parse("", "t").unwrap();
        assert_eq!(c.journal.units, ["kubelet.service"]);
        assert_eq!(c.journal.start_at, StartAt::Boot);
        assert_eq!(c.incidents.resolve_after, Duration(60 * SECOND));
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
        assert!(e.contains("c.toml"), "{e}");
        assert!(e.contains("line 3"), "{e}");
        assert!(e.contains("unknown field `unit`"), "{e}");
        let e = Config::parse("[incidents]\n\nresolve_after = \"5 minutes\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3") && e.contains("resolve_after") && e.contains("invalid duration"),
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
        assert!(e.contains("[alert.smtp] tls"), "{e}");
        let e = Config::parse("[journal]\nstart_at = \"yesterday\"\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("start_at"), "{e}");
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
        assert_eq!(a.needs_restart(&b), ["[journal]"]);
    }
}
