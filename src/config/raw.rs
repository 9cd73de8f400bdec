//! The config file as serde reads it: every key optional, unknown keys
//! rejected (`deny_unknown_fields`), each value with its place in the file
//! (`Spanned`), so validation can name the line and column of a bad one.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::{Period, StartAt, Tls, Transport};

pub(super) type S<T> = Option<Spanned<T>>;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default)]
    pub(super) journal: RawJournal,
    #[serde(default)]
    pub(super) node: RawNode,
    #[serde(default)]
    pub(super) incidents: RawIncidents,
    #[serde(default)]
    pub(super) alert: RawAlert,
    #[serde(default)]
    pub(super) store: RawStore,
    #[serde(default)]
    pub(super) api: RawApi,
    #[serde(default)]
    pub(super) fleet: RawFleet,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFleet {
    pub(super) silent_after: S<Period>,
    pub(super) silent_incidents: S<bool>,
    pub(super) min_nodes: S<u32>,
    pub(super) window: S<Period>,
    pub(super) max_hosts: S<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJournal {
    pub(super) units: S<Vec<String>>,
    pub(super) identifiers: S<Vec<String>>,
    pub(super) containers: S<Vec<String>>,
    pub(super) trusted_uids: S<Vec<u32>>,
    pub(super) trusted_units: S<Vec<String>>,
    pub(super) context_units: S<Vec<String>>,
    pub(super) kernel: S<bool>,
    pub(super) directory: S<String>,
    pub(super) namespace: S<String>,
    pub(super) start_at: S<StartAt>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNode {
    pub(super) name: S<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIncidents {
    pub(super) resolve_after: S<Period>,
    pub(super) race_window: S<Period>,
    pub(super) retention: S<Period>,
    pub(super) max_nodes_per_host: S<u32>,
    pub(super) max_nodes: S<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlert {
    pub(super) retries: S<u32>,
    pub(super) restarts: S<u32>,
    pub(super) not_ready_after: S<Period>,
    pub(super) start_budget: S<Period>,
    pub(super) cert_warn: S<Period>,
    pub(super) sandbox_after: S<Period>,
    pub(super) window: S<Period>,
    pub(super) group_wait: S<Period>,
    pub(super) repeat_interval: S<Period>,
    pub(super) send_resolved: S<bool>,
    pub(super) max_age: S<Period>,
    pub(super) to: S<Vec<String>>,
    pub(super) from: S<String>,
    pub(super) transport: S<Transport>,
    pub(super) retry_max: S<Period>,
    #[serde(default)]
    pub(super) smtp: RawSmtp,
    #[serde(default)]
    pub(super) file: RawFile,
    #[serde(default)]
    pub(super) alertmanager: RawAlertmanager,
    #[serde(default)]
    pub(super) route: Vec<RawRoute>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRoute {
    #[serde(rename = "match")]
    pub(super) matches: S<RawMatch>,
    pub(super) to: Spanned<Vec<String>>,
    pub(super) repeat_interval: S<Period>,
    pub(super) retries: S<u32>,
    pub(super) window: S<Period>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMatch {
    pub(super) cause: Option<Vec<String>>,
    pub(super) kind: Option<Vec<String>>,
    pub(super) node: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlertmanager {
    pub(super) urls: S<Vec<String>>,
    pub(super) labels: S<BTreeMap<String, String>>,
    pub(super) timeout: S<Period>,
    pub(super) resend_interval: S<Period>,
    pub(super) ca_file: S<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSmtp {
    pub(super) host: S<String>,
    pub(super) port: S<u16>,
    pub(super) tls: S<Tls>,
    pub(super) username: S<String>,
    pub(super) password_file: S<String>,
    pub(super) ca_file: S<String>,
    pub(super) timeout: S<Period>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) directory: S<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStore {
    pub(super) path: S<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawApi {
    pub(super) socket: S<String>,
    pub(super) metrics_listen: S<String>,
    pub(super) admin_group: S<String>,
}
