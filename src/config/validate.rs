//! Raw sections to settings, one function per section, each refusing a bad
//! value with its section, key, line and column. Defaults come from
//! [`sentinel_core::defaults`]; the bounds of every duration key are in [`PERIODS`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::raw::{
    RawAlert, RawAlertmanager, RawApi, RawConfig, RawFleet, RawIncidents, RawJournal, RawRoute,
    RawSmtp, RawStore, S,
};
use super::{
    ALERT_LABELS, AlertConfig, AlertmanagerConfig, ApiConfig, Config, ConfigError, FileConfig,
    FleetConfig, IncidentsConfig, JournalConfig, JournalTarget, NodeConfig, Period, Route,
    SmtpConfig, StoreConfig, Tls, place, socket_path_usable,
};
use sentinel_core::defaults;
use sentinel_core::time::{Micros, SECOND, human_duration};

const HOUR: Micros = 3600 * SECOND;
const DAY: Micros = 24 * HOUR;

/// Every duration key with its bounds, least and most: (section, key,
/// least, most).
pub(super) const PERIODS: &[(&str, &str, Micros, Micros)] = &[
    ("incidents", "resolve_after", SECOND, 30 * DAY),
    ("incidents", "race_window", 0, HOUR),
    ("incidents", "retention", HOUR, 36_500 * DAY),
    ("alert", "window", SECOND, 30 * DAY),
    ("alert", "not_ready_after", SECOND, DAY),
    ("alert", "start_budget", SECOND, DAY),
    ("alert", "cert_warn", HOUR, 365 * DAY),
    ("alert", "sandbox_after", SECOND, DAY),
    ("alert", "group_wait", 0, HOUR),
    ("alert", "repeat_interval", SECOND, 365 * DAY),
    ("alert", "max_age", SECOND, 36_500 * DAY),
    ("alert", "retry_max", SECOND, DAY),
    ("alert.smtp", "timeout", SECOND, 600 * SECOND),
    ("alert.alertmanager", "timeout", SECOND, 300 * SECOND),
    ("alert.alertmanager", "resend_interval", SECOND, HOUR),
    ("alert.route", "repeat_interval", SECOND, 365 * DAY),
    ("alert.route", "window", SECOND, 106_751 * DAY),
    ("fleet", "silent_after", 60 * SECOND, 30 * DAY),
    ("fleet", "window", SECOND, DAY),
];

/// A string value, `""` meaning unset.
fn set(v: S<String>) -> Option<String> {
    v.map(Spanned::into_inner).filter(|s| !s.is_empty())
}

fn list(v: S<Vec<String>>, default: &[&str]) -> Vec<String> {
    v.map_or_else(
        || default.iter().map(|s| (*s).to_string()).collect(),
        Spanned::into_inner,
    )
}

fn is_mailbox(addr: &str) -> bool {
    !addr.contains(['\r', '\n']) && addr.parse::<lettre::message::Mailbox>().is_ok()
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

pub(super) struct Validator<'a> {
    pub(super) text: &'a str,
    pub(super) path: &'a str,
}

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

    /// A duration key, if set, within its bounds in [`PERIODS`].
    fn bounded(
        &self,
        section: &'static str,
        key: &'static str,
        v: S<Period>,
    ) -> Result<Option<Period>, ConfigError> {
        let Some(v) = v else {
            return Ok(None);
        };
        let &(_, _, least, most) = PERIODS
            .iter()
            .find(|(s, k, _, _)| *s == section && *k == key)
            .expect("every duration key is in PERIODS");
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
        Ok(Some(p))
    }

    /// A duration key within its bounds, `default` when unset.
    fn period(
        &self,
        section: &'static str,
        key: &'static str,
        v: S<Period>,
        default: Micros,
    ) -> Result<Period, ConfigError> {
        Ok(self.bounded(section, key, v)?.unwrap_or(Period(default)))
    }

    /// A count key: at most `most` (and at least 1 when `positive`).
    fn count(
        &self,
        section: &'static str,
        key: &'static str,
        v: S<u32>,
        (positive, most): (bool, u32),
        message: &str,
    ) -> Result<Option<u32>, ConfigError> {
        match v {
            Some(n) if (positive && *n.get_ref() == 0) || *n.get_ref() > most => {
                Err(self.invalid(section, key, &n, message.to_string()))
            }
            n => Ok(n.map(Spanned::into_inner)),
        }
    }

    /// Email addresses, each a mailbox on one line.
    fn mailboxes(
        &self,
        section: &'static str,
        v: &Spanned<Vec<String>>,
    ) -> Result<Vec<String>, ConfigError> {
        for addr in v.get_ref() {
            if !is_mailbox(addr) {
                return Err(self.invalid(
                    section,
                    "to",
                    v,
                    format!("{addr:?} is not an email address"),
                ));
            }
        }
        Ok(v.get_ref().clone())
    }

    pub(super) fn validate(&self, raw: RawConfig) -> Result<Config, ConfigError> {
        let journal = self.journal(raw.journal)?;
        let incidents = self.incidents(raw.incidents)?;
        let alert = self.alert(raw.alert)?;
        let store = self.store(raw.store)?;
        let api = self.api(raw.api)?;
        let fleet = self.fleet(raw.fleet)?;
        Ok(Config {
            journal,
            node: NodeConfig {
                name: set(raw.node.name),
            },
            incidents,
            alert,
            store,
            api,
            fleet,
        })
    }

    fn journal(&self, j: RawJournal) -> Result<JournalConfig, ConfigError> {
        let no_units = j.units.as_ref().filter(|u| u.get_ref().is_empty());
        let (empty_ids, empty_containers) = (
            j.identifiers
                .as_ref()
                .is_some_and(|v| v.get_ref().is_empty()),
            j.containers
                .as_ref()
                .is_some_and(|v| v.get_ref().is_empty()),
        );
        if let Some(u) = no_units.filter(|_| empty_ids && empty_containers) {
            return Err(self.invalid(
                "journal",
                "units",
                u,
                "no units, identifiers or containers: nothing would be read".into(),
            ));
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
        let target = match (set(j.directory), set(j.namespace)) {
            (_, Some(n)) => JournalTarget::Namespace(n),
            (Some(d), None) => JournalTarget::Directory(PathBuf::from(d)),
            (None, None) => JournalTarget::System,
        };
        Ok(JournalConfig {
            units: list(j.units, defaults::UNITS),
            identifiers: list(j.identifiers, defaults::IDENTIFIERS),
            containers: list(j.containers, defaults::CONTAINERS),
            trusted_uids: j
                .trusted_uids
                .map_or_else(|| defaults::TRUSTED_UIDS.to_vec(), Spanned::into_inner),
            trusted_units: list(j.trusted_units, &[]),
            context_units: list(j.context_units, defaults::CONTEXT_UNITS),
            kernel: j.kernel.map_or(defaults::KERNEL, Spanned::into_inner),
            target,
            start_at: j.start_at.map(Spanned::into_inner).unwrap_or_default(),
        })
    }

    fn incidents(&self, i: RawIncidents) -> Result<IncidentsConfig, ConfigError> {
        let s = "incidents";
        Ok(IncidentsConfig {
            resolve_after: self.period(
                s,
                "resolve_after",
                i.resolve_after,
                defaults::RESOLVE_AFTER,
            )?,
            race_window: self.period(s, "race_window", i.race_window, defaults::RACE_WINDOW)?,
            retention: self.period(s, "retention", i.retention, defaults::RETENTION)?,
            max_nodes_per_host: self
                .count(
                    s,
                    "max_nodes_per_host",
                    i.max_nodes_per_host,
                    (true, 100_000),
                    "between 1 and 100000",
                )?
                .unwrap_or(defaults::MAX_NODES_PER_HOST),
            max_nodes: self
                .count(
                    s,
                    "max_nodes",
                    i.max_nodes,
                    (true, 1_000_000),
                    "between 1 and 1000000",
                )?
                .unwrap_or(defaults::MAX_NODES),
        })
    }

    fn alert(&self, a: RawAlert) -> Result<AlertConfig, ConfigError> {
        let s = "alert";
        let retries = self.count(s, "retries", a.retries, (false, 10_000), "at most 10000")?;
        let restarts = self.count(s, "restarts", a.restarts, (false, 10_000), "at most 10000")?;
        let window = self.period(s, "window", a.window, defaults::WINDOW)?;
        let not_ready_after = self.period(
            s,
            "not_ready_after",
            a.not_ready_after,
            defaults::NOT_READY_AFTER,
        )?;
        let start_budget =
            self.period(s, "start_budget", a.start_budget, defaults::START_BUDGET)?;
        let cert_warn = self.period(s, "cert_warn", a.cert_warn, defaults::CERT_WARN)?;
        let sandbox_after =
            self.period(s, "sandbox_after", a.sandbox_after, defaults::SANDBOX_AFTER)?;
        let group_wait = self.period(s, "group_wait", a.group_wait, defaults::GROUP_WAIT)?;
        let repeat_interval = self.period(
            s,
            "repeat_interval",
            a.repeat_interval,
            defaults::REPEAT_INTERVAL,
        )?;
        let max_age = self.period(s, "max_age", a.max_age, defaults::MAX_AGE)?;
        let retry_max = self.period(s, "retry_max", a.retry_max, defaults::RETRY_MAX)?;
        let to = match &a.to {
            Some(list) => self.mailboxes(s, list)?,
            None => Vec::new(),
        };
        let from = match a.from {
            Some(f) if !f.get_ref().is_empty() && !is_mailbox(f.get_ref()) => {
                let message = format!("{:?} is not an email address", f.get_ref());
                return Err(self.invalid(s, "from", &f, message));
            }
            f => set(f).unwrap_or_else(|| format!("{}@{}", defaults::FROM_USER, super::hostname())),
        };
        let smtp = self.smtp(a.smtp)?;
        let alertmanager = self.alertmanager(a.alertmanager)?;
        let route = a
            .route
            .into_iter()
            .map(|r| self.route(r))
            .collect::<Result<_, _>>()?;
        Ok(AlertConfig {
            retries: retries.unwrap_or(defaults::RETRIES),
            restarts: restarts.unwrap_or(defaults::RESTARTS),
            not_ready_after,
            start_budget,
            cert_warn,
            sandbox_after,
            window,
            group_wait,
            repeat_interval,
            send_resolved: a
                .send_resolved
                .map_or(defaults::SEND_RESOLVED, Spanned::into_inner),
            max_age,
            to,
            from,
            transport: a.transport.map(Spanned::into_inner).unwrap_or_default(),
            retry_max,
            smtp,
            file: FileConfig {
                directory: PathBuf::from(
                    a.file
                        .directory
                        .map_or_else(|| defaults::MAIL_DIRECTORY.to_string(), Spanned::into_inner),
                ),
            },
            alertmanager,
            route,
        })
    }

    fn smtp(&self, smtp: RawSmtp) -> Result<SmtpConfig, ConfigError> {
        let host = smtp
            .host
            .map_or_else(|| defaults::SMTP_HOST.to_string(), Spanned::into_inner);
        let tls = match smtp.tls {
            Some(t) if *t.get_ref() == Tls::None && !is_loopback(&host) => {
                return Err(self.invalid(
                    "alert.smtp",
                    "tls",
                    &t,
                    format!("\"none\" is only allowed for a loopback host, not {host:?}"),
                ));
            }
            t => t.map(Spanned::into_inner).unwrap_or_default(),
        };
        let timeout = self.period(
            "alert.smtp",
            "timeout",
            smtp.timeout,
            defaults::SMTP_TIMEOUT,
        )?;
        Ok(SmtpConfig {
            host,
            port: smtp.port.map_or(defaults::SMTP_PORT, Spanned::into_inner),
            tls,
            username: set(smtp.username),
            password_file: set(smtp.password_file).map(PathBuf::from),
            ca_file: set(smtp.ca_file).map(PathBuf::from),
            timeout,
        })
    }

    fn alertmanager(&self, am: RawAlertmanager) -> Result<AlertmanagerConfig, ConfigError> {
        let s = "alert.alertmanager";
        let mut urls = Vec::new();
        if let Some(list) = &am.urls {
            for u in list.get_ref() {
                let endpoint =
                    super::parse_url(u).map_err(|why| self.invalid(s, "urls", list, why))?;
                urls.push(endpoint);
            }
        }
        let labels = match &am.labels {
            Some(labels) => self.labels(labels)?,
            None => BTreeMap::new(),
        };
        let timeout = self.period(s, "timeout", am.timeout, defaults::ALERTMANAGER_TIMEOUT)?;
        let resend_interval = self.period(
            s,
            "resend_interval",
            am.resend_interval,
            defaults::RESEND_INTERVAL,
        )?;
        Ok(AlertmanagerConfig {
            urls,
            labels,
            timeout,
            resend_interval,
            ca_file: set(am.ca_file).map(PathBuf::from),
        })
    }

    /// `[alert.alertmanager] labels`: Prometheus label names, none of ours,
    /// each value one non-empty line.
    fn labels(
        &self,
        labels: &Spanned<BTreeMap<String, String>>,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let refuse =
            |message: String| self.invalid("alert.alertmanager", "labels", labels, message);
        for (k, v) in labels.get_ref() {
            let valid = k
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !k.starts_with("__");
            if !valid {
                return Err(refuse(format!(
                    "{k:?} is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, not __…)"
                )));
            }
            if ALERT_LABELS.contains(&k.as_str()) {
                return Err(refuse(format!("{k:?} is set by kubelet-sentinel itself")));
            }
            if v.is_empty() || v.contains(['\r', '\n']) {
                return Err(refuse(format!(
                    "the value of {k:?} must be one non-empty line"
                )));
            }
        }
        Ok(labels.get_ref().clone())
    }

    fn route(&self, r: RawRoute) -> Result<Route, ConfigError> {
        let s = "alert.route";
        if r.to.get_ref().is_empty() {
            return Err(self.invalid(
                s,
                "to",
                &r.to,
                "a route needs at least one recipient".into(),
            ));
        }
        let to = self.mailboxes(s, &r.to)?;
        let (mut causes, mut kinds, mut node) = (Vec::new(), Vec::new(), None);
        if let Some(m) = &r.matches {
            // Each name one of its closed set, or an error naming them.
            let bad = |e: sentinel_core::kinds::UnknownName, what: &str| {
                self.invalid(
                    s,
                    "match",
                    m,
                    format!(
                        "{what} {:?} is not one of {}",
                        e.given,
                        e.expected.join(", ")
                    ),
                )
            };
            for k in m.get_ref().kind.iter().flatten() {
                kinds.push(
                    sentinel_core::tracker::IncidentKind::parse(k).map_err(|e| bad(e, "kind"))?,
                );
            }
            for c in m.get_ref().cause.iter().flatten() {
                causes.push(sentinel_core::signals::Cause::parse(c).map_err(|e| bad(e, "cause"))?);
            }
            let glob = m.get_ref().node.clone().unwrap_or_default();
            if glob.len() > 253 || glob.chars().any(char::is_control) {
                return Err(self.invalid(
                    s,
                    "match",
                    m,
                    "node: a node name or pattern, at most 253 bytes".into(),
                ));
            }
            node = Some(glob).filter(|g| !g.is_empty());
        }
        Ok(Route {
            causes,
            kinds,
            node,
            to,
            repeat_interval: self.bounded(s, "repeat_interval", r.repeat_interval)?,
            window: self.bounded(s, "window", r.window)?,
            retries: self.count(
                s,
                "retries",
                r.retries,
                (true, 1_000_000),
                "from 1 to 1000000",
            )?,
        })
    }

    fn store(&self, store: RawStore) -> Result<StoreConfig, ConfigError> {
        let path = match store.path {
            Some(p) if p.get_ref().trim().is_empty() => {
                return Err(self.invalid("store", "path", &p, "must not be empty".into()));
            }
            Some(p) => p.into_inner(),
            // Under systemd, the service's own state directory.
            None => std::env::var("STATE_DIRECTORY")
                .ok()
                .and_then(|d| d.split(':').next().map(|d| format!("{d}/store")))
                .unwrap_or_else(|| defaults::STORE_PATH.to_string()),
        };
        Ok(StoreConfig { path })
    }

    fn api(&self, api: RawApi) -> Result<ApiConfig, ConfigError> {
        let socket = match api.socket {
            Some(s) => {
                if s.get_ref().trim().is_empty() {
                    return Err(self.invalid("api", "socket", &s, "must not be empty".into()));
                }
                if let Err(why) = socket_path_usable(Path::new(s.get_ref())) {
                    return Err(self.invalid("api", "socket", &s, why));
                }
                s.into_inner()
            }
            None => defaults::SOCKET.to_string(),
        };
        let metrics_listen = match api.metrics_listen {
            Some(m) if !m.get_ref().is_empty() => Some(m.get_ref().parse().map_err(|_| {
                let message = format!(
                    "{:?} is not an address:port such as 127.0.0.1:9756",
                    m.get_ref()
                );
                self.invalid("api", "metrics_listen", &m, message)
            })?),
            _ => None,
        };
        // A group that does not exist (yet) only leaves writes to root: the
        // service and check-config say so, rather than refuse to start.
        let admin_group = match api.admin_group {
            // A directory's group may have spaces inside ("domain admins"
            // through SSSD), never around it.
            Some(g)
                if g.get_ref().len() > 64
                    || g.get_ref().trim() != g.get_ref()
                    || g.get_ref()
                        .chars()
                        .any(|c| c == ':' || c == ',' || c.is_control()) =>
            {
                return Err(self.invalid(
                    "api",
                    "admin_group",
                    &g,
                    "a group name as getent group takes it (no ':', ',' or spaces around it; \
                     at most 64 bytes)"
                        .into(),
                ));
            }
            g => set(g),
        };
        Ok(ApiConfig {
            socket,
            metrics_listen,
            admin_group,
        })
    }

    fn fleet(&self, fleet: RawFleet) -> Result<FleetConfig, ConfigError> {
        // One node is never an outage of its own: at least two.
        let message = "between 2 and 100000";
        if let Some(n) = fleet.min_nodes.as_ref().filter(|n| *n.get_ref() < 2) {
            return Err(self.invalid("fleet", "min_nodes", n, message.to_string()));
        }
        let min_nodes = self
            .count(
                "fleet",
                "min_nodes",
                fleet.min_nodes,
                (true, 100_000),
                message,
            )?
            .unwrap_or(defaults::FLEET_MIN_NODES);
        let max_hosts = self
            .count(
                "fleet",
                "max_hosts",
                fleet.max_hosts,
                (true, 1_000_000),
                "between 1 and 1000000",
            )?
            .unwrap_or(defaults::MAX_HOSTS);
        Ok(FleetConfig {
            min_nodes,
            max_hosts,
            window: self.period("fleet", "window", fleet.window, defaults::FLEET_WINDOW)?,
            silent_after: self.period(
                "fleet",
                "silent_after",
                fleet.silent_after,
                defaults::SILENT_AFTER,
            )?,
            silent_incidents: fleet
                .silent_incidents
                .map_or(defaults::SILENT_INCIDENTS, Spanned::into_inner),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of the table is one key, and each bound is enforced with
    /// the key and its line.
    #[test]
    fn every_bounded_period_is_refused_past_its_bound() {
        for (i, &(section, key, _, most)) in PERIODS.iter().enumerate() {
            assert!(
                !PERIODS[..i].iter().any(|r| r.0 == section && r.1 == key),
                "[{section}] {key} twice"
            );
            let value = format!("{key} = \"{}s\"\n", most / SECOND + 1);
            let text = if section == "alert.route" {
                format!("[[alert.route]]\nto = [\"a@example.com\"]\n{value}")
            } else {
                format!("[{section}]\n{value}")
            };
            let e = Config::parse(&text, "c.toml").unwrap_err().to_string();
            let line = text.lines().count();
            assert!(
                e.contains(&format!("line {line},"))
                    && e.contains(&format!("[{section}] {key}: "))
                    && e.contains("out of range"),
                "{text:?}: {e}"
            );
        }
    }
}
