//! `/etc/kubelet-sentinel/config.toml`: raw serde structs (every key
//! optional, unknown keys rejected, each value with its place in the file),
//! then a pure validation into [`Config`]. Section and key names are a
//! contract with operators' files: keys may be added, never renamed.
//!
//! Errors name the file, the key, the line and the column, and never quote
//! the file: a config path may point anywhere (a symlink to a secret), and
//! on reload the error goes to the service's log, which the journal's
//! readers see.
//!
//! - `raw`: the file as serde reads it (`Spanned`, `deny_unknown_fields`).
//! - `validate`: one function per section, raw to settings; the bounds of
//!   every duration key in one table. Defaults come from [`sentinel_core::defaults`].
//! - `settings`: the typed result ([`Config`]): `Option` where a key may be
//!   unset, [`JournalTarget`], parsed [`Endpoint`]s.
//! - `endpoint`: an Alertmanager URL and its parser.
//! - here: reading the file, and what a reload changes ([`Config::needs_restart`]).

mod endpoint;
mod raw;
mod settings;
mod validate;

use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

pub(crate) use self::endpoint::{Endpoint, parse_url};
pub use self::settings::Config;
pub(crate) use self::settings::{
    ALERT_LABELS, AlertConfig, AlertmanagerConfig, ApiConfig, FileConfig, FleetConfig,
    IncidentsConfig, JournalConfig, JournalTarget, NodeConfig, Period, Route, SmtpConfig, StartAt,
    StoreConfig, Tls, Transport,
};
pub(crate) use sentinel_core::defaults::{
    CONFIG_PATH as DEFAULT_PATH, SILENT_AFTER as DEFAULT_SILENT_AFTER,
};
use sentinel_core::model::EntryFilter;
use sentinel_core::tracker::Settings;

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

/// This machine's host name.
#[must_use]
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "localhost".to_string(), |h| h.trim().to_string())
}

/// Line and column (1-based) of a byte offset.
fn place(text: &str, offset: usize) -> (usize, usize) {
    let before = sentinel_core::model::cut(text, offset);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Reads a config file as text: a regular file, at most 1 MiB, not
/// writable by every user. The error never quotes the file.
/// The file's table; when the file is not valid TOML (broken elsewhere,
/// a half-finished edit), each line on its own in the section it is in,
/// so `[api] socket` and `[store] path` are still found. The flag is true
/// when an `[api]` line naming `socket` cannot be read on its own.
fn salvage(text: &str) -> (toml::Table, bool) {
    if let Ok(t) = toml::from_str::<toml::Table>(text) {
        return (t, false);
    }
    let mut table = toml::Table::new();
    let mut section = String::new();
    let mut socket_unread = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("[[") {
            // An array of tables ([[alert.route]]): nothing looked for.
            section.clear();
        } else if let Some(rest) = t.strip_prefix('[') {
            section = rest
                .split(']')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
        } else if !section.is_empty() && !t.is_empty() && !t.starts_with('#') {
            match toml::from_str::<toml::Table>(t) {
                Ok(kv) => {
                    if let toml::Value::Table(sec) = table
                        .entry(section.clone())
                        .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                    {
                        for (k, v) in kv {
                            sec.entry(k).or_insert(v);
                        }
                    }
                }
                Err(_) if section == "api" && t.starts_with("socket") => socket_unread = true,
                Err(_) => {}
            }
        }
    }
    (table, socket_unread)
}

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
    /// The flag is true when the file has an `[api] socket` line that
    /// cannot be read even on its own: the socket used is then a guess.
    #[must_use]
    pub fn load_for_query(path: &Path, explicit: bool) -> (Self, Option<ConfigError>, bool) {
        match Self::load(path, explicit) {
            Ok(c) => (c, None, false),
            Err(e) => {
                let shown = path.display().to_string();
                let text = read_config(path).unwrap_or_default();
                let (config, socket_unread) = Self::locations(&text, &shown);
                (config, Some(e), socket_unread)
            }
        }
    }

    /// A config of only `[api] socket` and `[store] path` from `text`,
    /// each kept where it is valid on its own; and whether the text has a
    /// `[api] socket` line that cannot be read.
    fn locations(text: &str, shown: &str) -> (Self, bool) {
        let (table, socket_unread) = salvage(text);
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
        let socket = one("api", "socket", get("api", "socket"));
        let socket_unread = socket_unread || (socket.is_empty() && get("api", "socket").is_some());
        let text = socket + &one("store", "path", get("store", "path"));
        let config = Self::parse(&text, shown)
            .or_else(|_| Self::parse("", shown))
            .expect("the defaults are a valid config");
        (config, socket_unread)
    }

    /// Parses and validates config text; `path` only names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Self, ConfigError> {
        let raw: raw::RawConfig = toml::from_str(text).map_err(|e| {
            let (line, column) = place(text, e.span().map_or(0, |s| s.start));
            ConfigError::Parse {
                path: path.to_string(),
                line,
                column,
                message: e.message().trim_end().to_string(),
            }
        })?;
        validate::Validator { text, path }.validate(raw)
    }

    /// The tracker's settings.
    #[must_use]
    pub fn tracker_settings(&self) -> Settings {
        Settings {
            resolve_after: self.incidents.resolve_after.0,
            race_window: self.incidents.race_window.0,
            retries: self.alert.retries,
            restarts: self.alert.restarts,
            not_ready_after: self.alert.not_ready_after.0,
            start_budget: self.alert.start_budget.0,
            cert_warn: self.alert.cert_warn.0,
            sandbox_after: self.alert.sandbox_after.0,
            window: self.alert.window.0,
            repeat_interval: self.alert.repeat_interval.0,
            send_resolved: self.alert.send_resolved,
            node_name: self.node.name.clone(),
            max_nodes_per_host: self.incidents.max_nodes_per_host as usize,
            max_nodes: self.incidents.max_nodes as usize,
            max_hosts: self.fleet.max_hosts as usize,
            silent_after: if self.fleet.silent_incidents {
                self.fleet.silent_after.0
            } else {
                0
            },
            fleet_min_nodes: self.fleet.min_nodes as usize,
            fleet_window: self.fleet.window.0,
            overrides: self
                .alert
                .route
                .iter()
                .filter(|r| {
                    r.retries.is_some() || r.window.is_some() || r.repeat_interval.is_some()
                })
                .map(|r| sentinel_core::tracker::Threshold {
                    node: r.node.clone(),
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
            context_units: self.journal.context_units.clone(),
            kernel: self.journal.kernel,
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
    /// restart: `[journal]`, `[store]` and `[api]`, each compared by value.
    #[must_use]
    pub fn needs_restart(&self, new: &Config) -> Vec<String> {
        let (j, n) = (&self.journal, &new.journal);
        let (a, b) = (&self.api, &new.api);
        let changed = [
            ("[journal] units", j.units != n.units),
            ("[journal] identifiers", j.identifiers != n.identifiers),
            ("[journal] containers", j.containers != n.containers),
            ("[journal] trusted_uids", j.trusted_uids != n.trusted_uids),
            (
                "[journal] trusted_units",
                j.trusted_units != n.trusted_units,
            ),
            (
                "[journal] context_units",
                j.context_units != n.context_units,
            ),
            ("[journal] kernel", j.kernel != n.kernel),
            (
                "[journal] directory",
                j.target.directory() != n.target.directory(),
            ),
            (
                "[journal] namespace",
                j.target.namespace() != n.target.namespace(),
            ),
            ("[journal] start_at", j.start_at != n.start_at),
            ("[store] path", self.store.path != new.store.path),
            ("[api] socket", a.socket != b.socket),
            ("[api] metrics_listen", a.metrics_listen != b.metrics_listen),
            ("[api] admin_group", a.admin_group != b.admin_group),
        ];
        changed
            .into_iter()
            .filter(|&(_, differs)| differs)
            .map(|(key, _)| key.to_string())
            .collect()
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

/// A query socket path must be free or hold a socket (left by a crash):
/// the service replaces only a socket, never another file.
pub(crate) fn socket_path_usable(p: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.file_type().is_socket() => Ok(()),
        Ok(_) => Err(format!(
            "{} exists and is not a socket; the service will not replace it",
            p.display()
        )),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sentinel_core::signals::Cause;

    /// A file that is not TOML any more still names its socket and store,
    /// line by line in their sections; a socket line that cannot be read
    /// on its own is said to be unread (the socket used is a guess).
    #[test]
    fn a_broken_file_still_gives_its_socket_and_store() {
        let broken = "[alert]\nrepeat_interval = \"2h\n[api]\nsocket = \"/x/q.sock\" # here\n\
                      [[alert.route]]\nsocket = \"/not/this\"\n[store]\npath = \"/x/store\"\n";
        assert!(toml::from_str::<toml::Table>(broken).is_err());
        let (c, unread) = Config::locations(broken, "t");
        assert_eq!(c.api.socket, "/x/q.sock");
        assert_eq!(c.store_path(), std::path::PathBuf::from("/x/store"));
        assert!(!unread);
        let (c, unread) = Config::locations("[api]\nsocket = \"/x/q.sock\n", "t");
        assert_eq!(c.api.socket, Config::parse("", "t").unwrap().api.socket);
        assert!(unread);
        // No socket in the file: the default is what the file means.
        let (_, unread) = Config::locations("[alert]\nretries = \"x\n", "t");
        assert!(!unread);
    }
    use sentinel_core::time::SECOND;
    use sentinel_core::tracker::IncidentKind;

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
        assert_eq!(
            c.alert
                .route_of(IncidentKind::KubeletDown, "w1", Cause::Swap),
            Some(0)
        );
        assert_eq!(
            c.alert
                .route_of(IncidentKind::NodeStatus, "w1", Cause::Swap),
            None
        );
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
    fn fleet_keys_are_bounded_and_reach_the_tracker() {
        let c = Config::parse("", "c.toml").unwrap();
        assert_eq!(c.tracker_settings().fleet_min_nodes, 3);
        assert_eq!(
            c.tracker_settings().fleet_window,
            120 * sentinel_core::time::SECOND
        );
        let c = Config::parse("[fleet]\nmin_nodes = 5\nwindow = \"30s\"\n", "c.toml").unwrap();
        assert_eq!(c.tracker_settings().fleet_min_nodes, 5);
        assert_eq!(
            c.tracker_settings().fleet_window,
            30 * sentinel_core::time::SECOND
        );
        assert_eq!(c.tracker_settings().max_hosts, 20_000);
        let c = Config::parse("[fleet]\nmax_hosts = 40\n", "c.toml").unwrap();
        assert_eq!(c.tracker_settings().max_hosts, 40);
        assert!(
            c.needs_restart(&Config::parse("", "c.toml").unwrap())
                .is_empty()
        );
        for (text, line) in [
            ("[fleet]\n\nmin_nodes = 1\n", 3),
            ("[fleet]\nmin_nodes = 0\n", 2),
            ("[fleet]\nmin_nodes = 100001\n", 2),
            ("[fleet]\nwindow = \"0s\"\n", 2),
            ("[fleet]\nwindow = \"2d\"\n", 2),
            ("[fleet]\nmax_hosts = 0\n", 2),
        ] {
            let e = Config::parse(text, "c.toml").unwrap_err().to_string();
            assert!(
                e.contains("[fleet]") && e.contains(&format!("line {line},")),
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
        let text = include_str!("../../packaging/config.toml");
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
        assert_eq!(applied.journal.target, JournalTarget::System);
    }

    #[test]
    fn every_key_that_needs_a_restart_is_named_alone() {
        let a = Config::parse("", "t").unwrap();
        for (text, key) in [
            ("[journal]\nunits = [\"x.service\"]\n", "[journal] units"),
            (
                "[journal]\nidentifiers = [\"x\"]\n",
                "[journal] identifiers",
            ),
            ("[journal]\ncontainers = [\"x\"]\n", "[journal] containers"),
            (
                "[journal]\ntrusted_uids = [0, 1]\n",
                "[journal] trusted_uids",
            ),
            (
                "[journal]\ntrusted_units = [\"x.service\"]\n",
                "[journal] trusted_units",
            ),
            (
                "[journal]\ndirectory = \"/var/log/j\"\n",
                "[journal] directory",
            ),
            ("[journal]\nstart_at = \"now\"\n", "[journal] start_at"),
            ("[store]\npath = \"/tmp/s\"\n", "[store] path"),
            ("[api]\nsocket = \"/nonexistent/q.sock\"\n", "[api] socket"),
            (
                "[api]\nmetrics_listen = \"127.0.0.1:9756\"\n",
                "[api] metrics_listen",
            ),
            ("[api]\nadmin_group = \"ops\"\n", "[api] admin_group"),
        ] {
            let b = Config::parse(text, "t").unwrap();
            assert_eq!(a.needs_restart(&b), [key], "{text:?}");
            assert_eq!(a.apply_runtime(&b), a, "{text:?}");
        }
        // "" is unset, as leaving the key out.
        let empty = "[journal]\ndirectory = \"\"\nnamespace = \"\"\n[api]\nmetrics_listen = \"\"\n\
                     admin_group = \"\"\n[node]\nname = \"\"\n";
        assert_eq!(Config::parse(empty, "t").unwrap(), a);
    }
}
