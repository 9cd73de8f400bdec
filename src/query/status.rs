//! `status`: the service's state, from its snapshots (or the store when it
//! is stopped).

use serde::{Deserialize, Serialize};

use super::{Live, QueryError, SilenceOut, now};
use crate::status::StatusSnapshot;
use crate::store::{Channel, Stats, Store};
use sentinel_core::time::{Micros, SECOND, rfc3339};

/// Whether a delivery sends. In the JSON, as ever: `"enabled"`, or
/// `"disabled (why)"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Delivery {
    Enabled,
    /// Nothing is delivered, and why ("[alert] to is empty").
    Disabled {
        why: String,
    },
}

impl Delivery {
    fn of(disabled: Option<&String>) -> Self {
        disabled.map_or(Delivery::Enabled, |why| Delivery::Disabled {
            why: why.clone(),
        })
    }

    /// What [`Display`](std::fmt::Display) wrote.
    fn parse(said: &str) -> Option<Self> {
        if said == "enabled" {
            return Some(Delivery::Enabled);
        }
        let why = said.strip_prefix("disabled (")?.strip_suffix(')')?;
        Some(Delivery::Disabled { why: why.into() })
    }
}

impl std::fmt::Display for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Delivery::Enabled => f.write_str("enabled"),
            Delivery::Disabled { why } => write!(f, "disabled ({why})"),
        }
    }
}

impl Serialize for Delivery {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Delivery {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let said = String::deserialize(d)?;
        Delivery::parse(&said).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{said:?} is neither \"enabled\" nor \"disabled (why)\""
            ))
        })
    }
}

/// `StatusOut::mail`: the email delivery's [`Delivery`], `"-"` without one.
mod mail_or_dash {
    use super::Delivery;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[allow(clippy::ref_option)] // serde's `with` hands the field by reference
    pub(super) fn serialize<S: Serializer>(m: &Option<Delivery>, s: S) -> Result<S::Ok, S::Error> {
        match m {
            Some(d) => d.serialize(s),
            None => s.serialize_str("-"),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Delivery>, D::Error> {
        let said = String::deserialize(d)?;
        if said == "-" {
            return Ok(None);
        }
        Delivery::parse(&said).map(Some).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "mail {said:?} is neither \"-\", \"enabled\" nor \"disabled (why)\""
            ))
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DeliveryOut {
    pub channel: Channel,
    pub state: Delivery,
    pub target: String,
    pub outbox: u64,
    pub outbox_oldest_seconds: Option<f64>,
    pub sent: u64,
    pub failed: u64,
    pub in_doubt: u64,
    pub last_result: Option<String>,
    pub last_at: Option<String>,
    /// When a delivery (or, for Alertmanager, a heartbeat post) last
    /// succeeded.
    #[serde(default)]
    pub last_success_at: Option<String>,
    /// The oldest entry waiting has failed this often in a row.
    #[serde(default)]
    pub failing_attempts: u32,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StatusOut {
    pub service: String,
    pub started_at: Option<String>,
    pub journal: Option<String>,
    pub cursor: Option<String>,
    pub last_entry_at: Option<String>,
    pub caught_up: Option<bool>,
    pub lag_seconds: Option<f64>,
    pub entries: u64,
    pub kubelet_lines: u64,
    pub recognized: u64,
    pub unparsed: u64,
    pub open_incidents: u64,
    pub incidents: u64,
    pub entries_lost: u64,
    /// Entries damaged journal files record that could not be read.
    #[serde(default)]
    pub entries_missing: u64,
    /// Kubelet look-alikes from untrusted writers, ignored.
    #[serde(default)]
    pub untrusted: u64,
    /// Incidents closed to stay within the node bounds (live only).
    #[serde(default)]
    pub evicted: u64,
    /// Of those, the ones below the threshold and never announced, which
    /// the history does not keep.
    #[serde(default)]
    pub evicted_forgotten: u64,
    /// Hosts the reader has entries of (a collector's hosts).
    #[serde(default)]
    pub hosts: u64,
    /// Entries of hosts new past `[fleet] max_hosts`: not read.
    #[serde(default)]
    pub hosts_refused: u64,
    /// Hosts whose records gave way to new ones past `[fleet] max_hosts`
    /// (idle a day, or the quietest with no open incident).
    #[serde(default)]
    pub hosts_given_way: u64,
    /// `[fleet] max_hosts` as the service runs (null while stopped).
    #[serde(default)]
    pub max_hosts: Option<u64>,
    /// Hosts with no entry for `[fleet] silent_after` while others' moved on:
    /// `host (last entry at …)`.
    #[serde(default)]
    pub silent_hosts: Vec<String>,
    /// Whether a silent host opens a `host-silent` incident and alerts
    /// (`[fleet] silent_incidents`, as the service runs); unknown (null)
    /// while the service is stopped.
    #[serde(default)]
    pub silent_incidents: Option<bool>,
    /// Entries dated more than a day after this machine's clock (read at
    /// their host's time, as `scan` warns).
    #[serde(default)]
    pub future_dated: u64,
    /// The email delivery's state (`None`: not configured).
    #[serde(with = "mail_or_dash")]
    pub mail: Option<Delivery>,
    pub outbox: u64,
    pub outbox_oldest_seconds: Option<f64>,
    pub mails_sent: u64,
    pub mails_failed: u64,
    pub last_delivery: Option<String>,
    pub last_delivery_at: Option<String>,
    pub deliveries: Vec<DeliveryOut>,
    pub config: Option<String>,
    pub config_applied_at: Option<String>,
    pub restart_needed: Vec<String>,
    pub config_error: Option<String>,
    pub store: String,
    pub store_bytes: u64,
    /// Records of the store that could not be read, set aside (the rest
    /// is served).
    #[serde(default)]
    pub store_damaged: u64,
    /// Silences in force now.
    #[serde(default)]
    pub silences: Vec<SilenceOut>,
    /// Alerts are not getting out: a channel is configured but cannot be
    /// used, or an entry failed 3 times in a row or has waited more than
    /// 15 minutes (a silence's hold is not counted).
    #[serde(default)]
    pub deliveries_failing: bool,
}

/// Attempts in a row after which `status` says deliveries are failing.
pub(super) const FAILING_ATTEMPTS: u32 = 3;
/// Wait after which `status` says deliveries are failing.
pub(super) const FAILING_WAIT: Micros = 15 * 60 * SECOND;

fn seconds(us: Micros) -> f64 {
    us.max(0) as f64 / SECOND as f64
}

/// `status`: the running service's state, or what the store says of the
/// last run.
pub(crate) fn status(store: &Store, live: Option<&Live>) -> Result<StatusOut, QueryError> {
    let (summary, stats, cursor, open): (_, Stats, _, u64) = if let Some(l) = live {
        (
            l.status.summary.clone(),
            l.status.history.clone(),
            l.status.cursor.clone(),
            l.status.open.len() as u64,
        )
    } else {
        let loaded = store.load()?;
        (
            loaded.state.map(|s| s.summary).unwrap_or_default(),
            loaded.stats,
            loaded
                .position
                .cursor
                .or_else(|| loaded.position.groups.values().next().cloned()),
            loaded.open.len() as u64,
        )
    };
    let now = now(live);
    let outbox = match live {
        Some(_) => Vec::new(),
        None => store.outbox()?,
    };
    let deliveries = live.map(|l| deliveries(l, now)).unwrap_or_default();
    let email = live.and_then(|l| {
        l.deliveries
            .iter()
            .find(|(c, _)| *c == Channel::Email)
            .map(|(_, d)| d.clone())
    });
    let outbox_len = match live {
        Some(l) => l.deliveries.iter().map(|(_, d)| d.outbox).sum(),
        None => outbox.len() as u64,
    };
    let oldest = match live {
        Some(l) => l
            .deliveries
            .iter()
            .filter_map(|(_, d)| d.oldest_queued_at)
            .min(),
        None => outbox.iter().map(|e| e.queued_at).min(),
    };
    Ok(StatusOut {
        service: if live.is_some() {
            "running"
        } else {
            "not running"
        }
        .into(),
        started_at: live.map(|l| rfc3339(l.status.started_at)),
        journal: live.map(|l| l.status.journal.clone()),
        cursor,
        last_entry_at: summary.last_at.map(rfc3339),
        caught_up: live.map(|l| l.status.caught_up),
        lag_seconds: live.map(|l| seconds(lag(&l.status, now))),
        entries: summary.entries,
        kubelet_lines: summary.kubelet_lines,
        recognized: summary.recognized,
        unparsed: summary.unparsed,
        open_incidents: open,
        incidents: stats.incidents,
        entries_lost: summary.entries_lost,
        entries_missing: summary.entries_missing,
        untrusted: summary.untrusted,
        evicted: live.map_or(0, |l| l.status.evicted),
        evicted_forgotten: live.map_or(0, |l| l.status.forgotten),
        hosts: live.map_or(0, |l| l.status.hosts.len() as u64),
        hosts_refused: summary.hosts_refused,
        hosts_given_way: summary.hosts_given_way,
        max_hosts: live.map(|l| l.status.settings.max_hosts as u64),
        silent_hosts: live.map(silent_hosts).unwrap_or_default(),
        silent_incidents: live.map(|l| l.status.settings.silent_after > 0),
        future_dated: summary.future_dated,
        mail: email.as_ref().map(|d| Delivery::of(d.disabled.as_ref())),
        outbox: outbox_len,
        outbox_oldest_seconds: oldest.map(|t| seconds(now - t)),
        mails_sent: email.as_ref().map_or(0, |d| d.sent),
        mails_failed: email.as_ref().map_or(0, |d| d.failed),
        last_delivery: email.as_ref().and_then(|d| d.last_result.clone()),
        last_delivery_at: email.as_ref().and_then(|d| d.last_at).map(rfc3339),
        deliveries,
        config: live.map(|l| l.status.config.path.clone()),
        config_applied_at: live.and_then(|l| l.status.config.applied_at).map(rfc3339),
        restart_needed: live
            .map(|l| l.status.config.restart_needed.clone())
            .unwrap_or_default(),
        config_error: live.and_then(|l| l.status.config.last_error.clone()),
        store: store.path().display().to_string(),
        store_bytes: store.size_on_disk(),
        store_damaged: store.damaged(),
        silences: store
            .silences()?
            .iter()
            .filter(|s| s.active(now))
            .map(|s| SilenceOut::new(s, now))
            .collect(),
        deliveries_failing: live.is_some_and(|l| failing(l, now)),
    })
}

/// Each delivery's state, as `status` shows it.
fn deliveries(l: &Live, now: Micros) -> Vec<DeliveryOut> {
    l.deliveries
        .iter()
        .map(|(c, d)| DeliveryOut {
            channel: *c,
            state: Delivery::of(d.disabled.as_ref()),
            target: d.target.clone(),
            outbox: d.outbox,
            outbox_oldest_seconds: d.oldest_queued_at.map(|t| seconds(now - t)),
            sent: d.sent,
            failed: d.failed,
            in_doubt: d.in_doubt,
            last_result: d.last_result.clone(),
            last_at: d.last_at.map(rfc3339),
            last_success_at: d.last_success_at.map(rfc3339),
            failing_attempts: d.failing_attempts,
        })
        .collect()
}

/// The hosts gone silent: `host (last entry …)`.
fn silent_hosts(l: &Live) -> Vec<String> {
    l.status
        .silent_hosts()
        .into_iter()
        .map(|(h, t)| {
            format!(
                "{} (last entry {})",
                sentinel_core::tracker::one_line(h, 253),
                // As people read every other time (first-hour leftover).
                sentinel_core::time::human(t, sentinel_core::time::Zone::Utc)
            )
        })
        .collect()
}

/// Alerts are not getting out: a channel configured but unusable, or an
/// entry failing [`FAILING_ATTEMPTS`] times or waiting [`FAILING_WAIT`].
fn failing(l: &Live, now: Micros) -> bool {
    l.deliveries.iter().any(|(_, d)| {
        d.unusable
            || (d.disabled.is_none()
                && (d.failing_attempts >= FAILING_ATTEMPTS
                    || d.oldest_queued_at.is_some_and(|t| now - t > FAILING_WAIT)))
    })
}

/// How far behind the journal the reader is: 0 once caught up.
#[must_use]
pub(crate) fn lag(s: &StatusSnapshot, now: Micros) -> Micros {
    if s.caught_up {
        0
    } else {
        s.summary.last_at.map_or(0, |t| (now - t).max(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The socket's JSON is a contract: the same strings as before the
    /// enum, and back.
    #[test]
    fn delivery_states_are_the_same_strings() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Both {
            #[serde(with = "mail_or_dash")]
            mail: Option<Delivery>,
            state: Delivery,
        }
        let off = Delivery::Disabled {
            why: "no SMTP password (none loaded)".into(),
        };
        for (b, json) in [
            (
                Both {
                    mail: Some(Delivery::Enabled),
                    state: Delivery::Enabled,
                },
                r#"{"mail":"enabled","state":"enabled"}"#,
            ),
            (
                Both {
                    mail: None,
                    state: off.clone(),
                },
                r#"{"mail":"-","state":"disabled (no SMTP password (none loaded))"}"#,
            ),
            (
                Both {
                    mail: Some(off),
                    state: Delivery::Disabled { why: String::new() },
                },
                r#"{"mail":"disabled (no SMTP password (none loaded))","state":"disabled ()"}"#,
            ),
        ] {
            assert_eq!(serde_json::to_string(&b).unwrap(), json);
            assert_eq!(serde_json::from_str::<Both>(json).unwrap(), b);
        }
        assert!(serde_json::from_str::<Both>(r#"{"mail":"on","state":"enabled"}"#).is_err());
        assert!(serde_json::from_str::<Both>(r#"{"mail":"-","state":"disabled"}"#).is_err());
    }
}
