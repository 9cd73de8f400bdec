//! The queries, answered from the store and, while the service runs, its
//! snapshots: the same code serves the query socket and the CLI's
//! direct-store path, so both print the same.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::report::{IncidentOut, views};
use crate::status::{DeliveryStats, StatusSnapshot};
use crate::store::{Channel, Filter, Stats, Store, StoreError};
use crate::time::{Micros, SECOND, rfc3339};
use crate::tracker::{Settings, Status};

/// What the running service adds to the store.
#[derive(Debug, Clone, Default)]
pub struct Live {
    pub status: StatusSnapshot,
    pub deliveries: Vec<(Channel, DeliveryStats)>,
    /// Wall-clock time of the question.
    pub now: Micros,
    /// Silences in force at `now`.
    pub silences_active: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Incidents(Filter),
    Incident(String),
    Nodes,
    Status,
    Silences,
    AddSilence(NewSilence),
    /// Ends a silence now (its id or a unique prefix); `by` who.
    ExpireSilence {
        id: String,
        by: String,
    },
    /// Acknowledges an open incident (its id or a unique prefix).
    Ack(AckRequest),
}

/// `silence add`: what to silence, for how long, who and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSilence {
    pub node: String,
    #[serde(default)]
    pub cause: Option<String>,
    /// Only incidents of this kind; `None`: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub seconds: u64,
    /// Who: the server sets it from the peer's credentials (a body's
    /// value, which older CLIs send, is ignored); the CLI sets it only
    /// when it writes the store itself.
    #[serde(default, skip_serializing)]
    pub by: String,
    #[serde(default)]
    pub comment: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AckRequest {
    #[serde(default)]
    pub id: String,
    /// Who: as [`NewSilence::by`].
    #[serde(default, skip_serializing)]
    pub by: String,
    #[serde(default)]
    pub comment: String,
}

/// A silence as `silence list` and `status` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SilenceOut {
    pub id: String,
    pub node: String,
    pub cause: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `active`, `pending` (starts later) or `expired`.
    pub state: String,
    pub starts_at: String,
    pub ends_at: String,
    pub created_by: String,
    pub comment: String,
    /// Ended early by `silence expire`: who, and when.
    #[serde(default)]
    pub expired_by: Option<String>,
    #[serde(default)]
    pub expired_at: Option<String>,
}

impl SilenceOut {
    #[must_use]
    pub fn new(s: &crate::store::Silence, now: Micros) -> Self {
        Self {
            id: s.id.clone(),
            node: s.node.clone(),
            cause: s.cause.clone(),
            kind: s.kind.clone(),
            state: if s.active(now) {
                "active"
            } else if now < s.starts_at {
                "pending"
            } else {
                "expired"
            }
            .into(),
            starts_at: rfc3339(s.starts_at),
            ends_at: rfc3339(s.ends_at),
            created_by: s.created_by.clone(),
            comment: s.comment.clone(),
            expired_by: s.expired_by.clone(),
            expired_at: s.expired_at.map(rfc3339),
        }
    }
}

/// Longest silence: a month (a forgotten silence must end by itself).
pub const MAX_SILENCE: u64 = 31 * 24 * 3600;
/// Silences in force (or pending) at a time: more is a mistake or an
/// attack, and every delivery pass matches every one.
pub const MAX_SILENCES: usize = 1000;
const MAX_TEXT: usize = 1000;

impl NewSilence {
    fn validate(&self) -> Result<(), String> {
        if self.node.trim().is_empty() || self.node.len() > 253 {
            return Err("--node: a node name or pattern (worker-*), at most 253 bytes".into());
        }
        if self.node.chars().any(char::is_control) {
            return Err("--node: no control characters".into());
        }
        if let Some(c) = &self.cause {
            if !crate::signals::Cause::ALL.iter().any(|k| k.as_str() == c) {
                let names: Vec<&str> = crate::signals::Cause::ALL
                    .iter()
                    .map(|k| k.as_str())
                    .collect();
                return Err(format!("--cause {c:?}: one of {}", names.join(", ")));
            }
        }
        if let Some(k) = &self.kind {
            if crate::tracker::IncidentKind::parse(k).is_none() {
                return Err(format!("--kind {k:?}: one of node-status, kubelet-down"));
            }
        }
        if self.seconds == 0 || self.seconds > MAX_SILENCE {
            return Err(format!("--for: from 1s to {}d", MAX_SILENCE / 86_400));
        }
        if self.comment.len() > MAX_TEXT || self.by.len() > 256 {
            return Err(format!("--comment: at most {MAX_TEXT} bytes"));
        }
        Ok(())
    }
}

/// An answer: a status code and a JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub code: u16,
    pub body: String,
}

impl Response {
    pub fn json(code: u16, v: &impl Serialize) -> Self {
        Self {
            code,
            body: serde_json::to_string_pretty(v).unwrap_or_default() + "\n",
        }
    }

    #[must_use]
    pub fn error(code: u16, message: &str) -> Self {
        Self::json(code, &serde_json::json!({ "error": message }))
    }
}

/// Percent-encodes a path segment.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Request {
    /// The request's path and query on the socket.
    #[must_use]
    pub fn path(&self) -> String {
        match self {
            Request::Incidents(f) => {
                let q = serde_urlencoded::to_string(f).unwrap_or_default();
                if q.is_empty() {
                    "/incidents".into()
                } else {
                    format!("/incidents?{q}")
                }
            }
            Request::Incident(id) => format!("/incidents/{}", encode(id)),
            Request::Nodes => "/nodes".into(),
            Request::Status => "/status".into(),
            Request::Silences | Request::AddSilence(_) => "/silences".into(),
            Request::ExpireSilence { id, .. } => format!("/silences/{}/expire", encode(id)),
            Request::Ack(a) => format!("/incidents/{}/ack", encode(&a.id)),
        }
    }

    /// POST for what changes something.
    #[must_use]
    pub fn is_post(&self) -> bool {
        matches!(
            self,
            Request::AddSilence(_) | Request::ExpireSilence { .. } | Request::Ack(_)
        )
    }

    /// The JSON body a POST carries.
    #[must_use]
    pub fn body(&self) -> Option<String> {
        match self {
            Request::AddSilence(n) => serde_json::to_string(n).ok(),
            Request::Ack(a) => serde_json::to_string(a).ok(),
            Request::ExpireSilence { .. } => Some("{}".into()),
            _ => None,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct NodeRow {
    pub node: String,
    #[serde(default)]
    pub hosts: Vec<String>,
    pub incidents: u64,
    pub open: u64,
    pub retries: u64,
    pub last_trouble_at: Option<String>,
    pub last_verdict: Option<String>,
}

/// Answers one query from the store (and, when the service runs, its
/// snapshots). Never panics on any input.
#[must_use]
pub fn answer(store: &Store, live: Option<&Live>, req: &Request) -> Response {
    match answer_inner(store, live, req) {
        Ok(r) => r,
        Err(e) => Response::error(500, &e.to_string()),
    }
}

fn answer_inner(store: &Store, live: Option<&Live>, req: &Request) -> Result<Response, StoreError> {
    let settings = match live {
        Some(l) => l.status.settings.clone(),
        None => store.settings()?,
    };
    Ok(match req {
        Request::Incidents(f) => {
            let now = live.map_or_else(crate::time::now, |l| l.now);
            // Nothing happened after a time still to come (as journalctl
            // --since tomorrow), open incidents included.
            let incidents = if f.since.is_some_and(|s| s > now) {
                Vec::new()
            } else {
                store.incidents(f, &settings)?
            };
            let silences = store.silences()?;
            let list: Vec<IncidentOut> = incidents
                .iter()
                .zip(views(&incidents, &settings))
                .map(|(i, o)| o.silenced(i, &silences, now))
                .collect();
            Response::json(200, &serde_json::json!({ "incidents": list }))
        }
        Request::Incident(id) => match find(store, id)? {
            Ok(i) => {
                let silences = store.silences()?;
                let now = live.map_or_else(crate::time::now, |l| l.now);
                Response::json(
                    200,
                    &IncidentOut::new(&i, &settings).silenced(&i, &silences, now),
                )
            }
            Err(why) => Response::error(404, &why),
        },
        Request::Nodes => Response::json(
            200,
            &serde_json::json!({ "nodes": nodes(store, &settings)? }),
        ),
        Request::Status => Response::json(200, &status(store, live)?),
        Request::Silences => {
            let now = live.map_or_else(crate::time::now, |l| l.now);
            let list: Vec<SilenceOut> = store
                .silences()?
                .iter()
                .map(|s| SilenceOut::new(s, now))
                .collect();
            Response::json(200, &serde_json::json!({ "silences": list }))
        }
        Request::AddSilence(n) => {
            if let Err(why) = n.validate() {
                return Ok(Response::error(400, &why));
            }
            let now = live.map_or_else(crate::time::now, |l| l.now);
            let in_force = store.silences()?.iter().filter(|s| s.ends_at > now).count();
            if in_force >= MAX_SILENCES {
                return Ok(Response::error(
                    409,
                    &format!(
                        "{in_force} silences are in force, the most there may be \
                         ({MAX_SILENCES}); expire some, or silence a pattern (worker-*) or a cause"
                    ),
                ));
            }
            let mut s = crate::store::Silence {
                id: String::new(),
                node: n.node.clone(),
                cause: n.cause.clone(),
                kind: n.kind.clone(),
                starts_at: now,
                ends_at: now + (n.seconds as Micros) * SECOND,
                created_by: n.by.clone(),
                comment: n.comment.clone(),
                expired_by: None,
                expired_at: None,
            };
            // 64 bits, and never one already taken: the store inserts only
            // where the id is free (one compare-and-swap).
            loop {
                s.id = new_id(&[n.node.as_bytes(), n.by.as_bytes(), &now.to_be_bytes()]);
                if store.silence_insert(&s)? {
                    break;
                }
            }
            Response::json(201, &SilenceOut::new(&s, now))
        }
        Request::ExpireSilence { id, by } => {
            let now = live.map_or_else(crate::time::now, |l| l.now);
            let all = store.silences()?;
            let found: Vec<&crate::store::Silence> = all
                .iter()
                .filter(|s| s.id.starts_with(id.as_str()))
                .collect();
            match found.as_slice() {
                [] => Response::error(404, &format!("no silence {id}")),
                [s] if s.ends_at <= now => {
                    Response::error(409, &format!("silence {} has already ended", s.id))
                }
                [s] => {
                    let ended = crate::store::Silence {
                        ends_at: now,
                        expired_by: Some(by.clone()),
                        expired_at: Some(now),
                        ..(*s).clone()
                    };
                    store.silence_put(&ended)?;
                    Response::json(200, &SilenceOut::new(&ended, now))
                }
                _ => Response::error(
                    409,
                    &format!("{id} names more than one silence; give more of the id"),
                ),
            }
        }
        Request::Ack(a) => {
            // The service is stopped (it answers acknowledgements itself):
            // the record in the store is the open incident it resumes.
            let now = live.map_or_else(crate::time::now, |l| l.now);
            match find(store, &a.id)? {
                Err(why) => Response::error(404, &why),
                Ok(i) if i.resolved_at.is_some() => {
                    Response::error(409, &format!("incident {} has already resolved", i.id))
                }
                Ok(mut i) => {
                    i.ack = Some(crate::tracker::Ack {
                        by: a.by.clone(),
                        at: now,
                        comment: a.comment.clone(),
                    });
                    store.put_incident(&i)?;
                    Response::json(200, &IncidentOut::new(&i, &settings))
                }
            }
        }
    })
}

/// An id (16 hex digits, 64 bits) from what makes a record unique.
#[must_use]
pub fn new_id(parts: &[&[u8]]) -> String {
    // FNV-1a over the parts and a process-wide counter.
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in parts
        .iter()
        .copied()
        .chain(std::iter::once(&n.to_be_bytes()[..]))
    {
        for &b in p {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// An incident by its id or a unique prefix of it.
fn find(store: &Store, id: &str) -> Result<Result<crate::tracker::Incident, String>, StoreError> {
    if let Some(i) = store.incident(id)? {
        return Ok(Ok(i));
    }
    if !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(Err(format!("no incident {id}")));
    }
    if id.len() < 4 {
        return Ok(Err(format!(
            "no incident {id}: give at least 4 characters of the id (a prefix names an \
             incident when no other id starts with it)"
        )));
    }
    let found = store.incidents_with_prefix(id, 2)?;
    Ok(match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!("no incident {id}")),
        _ => Err(format!(
            "{id} names more than one incident; give more of the id"
        )),
    })
}

fn nodes(store: &Store, settings: &Settings) -> Result<Vec<NodeRow>, StoreError> {
    let all = store.incidents(&Filter::default(), settings)?;
    let mut rows: BTreeMap<String, NodeRow> = BTreeMap::new();
    // Newest first: the first seen per node is its last.
    for i in &all {
        let row = rows.entry(i.node.clone()).or_insert_with(|| NodeRow {
            node: i.node.clone(),
            hosts: Vec::new(),
            incidents: 0,
            open: 0,
            retries: 0,
            last_trouble_at: Some(rfc3339(i.last_trouble_at)),
            last_verdict: Some(i.verdict(settings).as_str().to_string()),
        });
        if let Some(h) = &i.host {
            if !row.hosts.contains(h) {
                row.hosts.push(h.clone());
            }
        }
        row.incidents += 1;
        row.open += u64::from(i.status() == Status::Open);
        row.retries += i.counted_retries();
    }
    Ok(rows.into_values().collect())
}

#[derive(Debug, Serialize, Deserialize)]
pub struct DeliveryOut {
    pub channel: String,
    pub state: String,
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
pub struct StatusOut {
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
    /// Hosts with no entry for `[fleet] silent_after` while others' moved on:
    /// `host (last entry at …)`.
    #[serde(default)]
    pub silent_hosts: Vec<String>,
    /// Entries dated more than a day after this machine's clock (read at
    /// their host's time, as `scan` warns).
    #[serde(default)]
    pub future_dated: u64,
    pub mail: String,
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
pub const FAILING_ATTEMPTS: u32 = 3;
/// Wait after which `status` says deliveries are failing.
pub const FAILING_WAIT: Micros = 15 * 60 * SECOND;

fn seconds(us: Micros) -> f64 {
    us.max(0) as f64 / SECOND as f64
}

fn status(store: &Store, live: Option<&Live>) -> Result<StatusOut, StoreError> {
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
    let now = live.map_or_else(crate::time::now, |l| l.now);
    let outbox = match live {
        Some(_) => Vec::new(),
        None => store.outbox()?,
    };
    let deliveries: Vec<DeliveryOut> = live
        .map(|l| {
            l.deliveries
                .iter()
                .map(|(c, d)| DeliveryOut {
                    channel: c.as_str().into(),
                    state: d
                        .disabled
                        .as_ref()
                        .map_or_else(|| "enabled".to_string(), |why| format!("disabled ({why})")),
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
        })
        .unwrap_or_default();
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
        untrusted: summary.untrusted,
        evicted: live.map_or(0, |l| l.status.evicted),
        evicted_forgotten: live.map_or(0, |l| l.status.forgotten),
        hosts: live.map_or(0, |l| l.status.hosts.len() as u64),
        silent_hosts: live
            .map(|l| {
                l.status
                    .silent_hosts()
                    .into_iter()
                    .map(|(h, t)| {
                        format!(
                            "{} (last entry {})",
                            crate::tracker::one_line(h, 253),
                            rfc3339(t)
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        future_dated: summary.future_dated,
        mail: match &email {
            Some(d) => d
                .disabled
                .as_ref()
                .map_or_else(|| "enabled".to_string(), |why| format!("disabled ({why})")),
            None => "-".into(),
        },
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
        silences: store
            .silences()?
            .iter()
            .filter(|s| s.active(now))
            .map(|s| SilenceOut::new(s, now))
            .collect(),
        deliveries_failing: match live {
            Some(l) => l.deliveries.iter().any(|(_, d)| {
                d.unusable
                    || (d.disabled.is_none()
                        && (d.failing_attempts >= FAILING_ATTEMPTS
                            || d.oldest_queued_at.is_some_and(|t| now - t > FAILING_WAIT)))
            }),
            None => false,
        },
    })
}

/// How far behind the journal the reader is: 0 once caught up.
#[must_use]
pub fn lag(s: &StatusSnapshot, now: Micros) -> Micros {
    if s.caught_up {
        0
    } else {
        s.summary.last_at.map_or(0, |t| (now - t).max(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_encode_what_they_carry() {
        let f = Filter {
            node: Some("a b&c=d/é".into()),
            open: true,
            since: Some(5),
            until: Some(9),
            kind: Some("kubelet-down".into()),
            verdict: Some("startup-race".into()),
            cause: Some("auth".into()),
            host: Some("h 1".into()),
            endpoint: Some("[fd00::1]:6443".into()),
            resolved: false,
            limit: Some(5),
        };
        let p = Request::Incidents(f.clone()).path();
        let q = p.split_once('?').unwrap().1;
        assert_eq!(serde_urlencoded::from_str::<Filter>(q).unwrap(), f);
        assert_eq!(
            Request::Incident("../x y".into()).path(),
            "/incidents/..%2Fx%20y"
        );
    }
}
