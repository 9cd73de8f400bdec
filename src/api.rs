//! Queries: one [`answer`] that serves the query socket (HTTP/1.1 with JSON
//! over a Unix socket) and the CLI's direct-store path alike, so both print
//! the same; Prometheus `/metrics` on the socket and, optionally, on TCP.
//!
//! sled allows one process per store, so while the service runs, the CLI
//! asks it here instead of opening the store.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::pipeline::Summary;
use crate::report::{IncidentOut, views};
use crate::store::{Filter, Store, StoreError};
use crate::time::{Micros, SECOND, parse_duration, parse_rfc3339, rfc3339};
use crate::tracker::{Settings, Status, Verdict};

/// What the running service knows beyond the store.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Live {
    pub started_at: Micros,
    pub journal: String,
    pub cursor: Option<String>,
    pub last_entry_at: Option<Micros>,
    pub caught_up: bool,
    pub summary: Summary,
    pub open_incidents: usize,
    /// Retries (status and registration) of open incidents, by node.
    pub retries_by_node: BTreeMap<String, u64>,
    pub commits: u64,
    pub last_commit_at: Option<Micros>,
    /// Journal entries removed (rotation, vacuum) before they were read.
    pub entries_lost: u64,
    pub reader_restarts: u64,
    pub settings: Settings,
    pub mail: MailStats,
}

/// The mailer's view, for `status` and `/metrics`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MailStats {
    /// False when `[alert] to` is empty: nothing is mailed.
    pub enabled: bool,
    pub outbox: u64,
    pub oldest_queued_at: Option<Micros>,
    pub sent: u64,
    pub failed: u64,
    pub last_result: Option<String>,
    pub last_at: Option<Micros>,
}

pub type SharedLive = Arc<Mutex<Live>>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Incidents(Filter),
    Incident(String),
    Nodes,
    Status,
    Metrics,
}

pub struct Response {
    pub code: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Response {
    fn json(code: u16, v: &impl Serialize) -> Self {
        Self {
            code,
            content_type: "application/json",
            body: serde_json::to_string_pretty(v).unwrap_or_default() + "\n",
        }
    }

    fn error(code: u16, message: &str) -> Self {
        Self::json(code, &serde_json::json!({ "error": message }))
    }
}

fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Request {
    /// The request's path and query.
    #[must_use]
    pub fn path(&self) -> String {
        match self {
            Request::Incidents(f) => {
                let mut q = Vec::new();
                if let Some(n) = &f.node {
                    q.push(format!("node={}", encode(n)));
                }
                if f.open {
                    q.push("open=1".into());
                }
                if let Some(s) = f.since {
                    q.push(format!("since={s}"));
                }
                if let Some(v) = &f.verdict {
                    q.push(format!("verdict={}", encode(v)));
                }
                if let Some(l) = f.limit {
                    q.push(format!("limit={l}"));
                }
                if q.is_empty() {
                    "/incidents".into()
                } else {
                    format!("/incidents?{}", q.join("&"))
                }
            }
            Request::Incident(id) => format!("/incidents/{}", encode(id)),
            Request::Nodes => "/nodes".into(),
            Request::Status => "/status".into(),
            Request::Metrics => "/metrics".into(),
        }
    }

    /// Parses a request path.
    pub fn parse(target: &str) -> Result<Self, String> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        match path {
            "/incidents" => {
                let mut f = Filter::default();
                for pair in query.split('&').filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    let v = decode(v);
                    match k {
                        "node" => f.node = Some(v),
                        "open" => f.open = v != "0" && v != "false",
                        "since" => {
                            f.since = Some(v.parse().map_err(|_| format!("bad since {v:?}"))?);
                        }
                        "verdict" => f.verdict = Some(v),
                        "limit" => {
                            f.limit = Some(v.parse().map_err(|_| format!("bad limit {v:?}"))?);
                        }
                        _ => return Err(format!("unknown parameter {k:?}")),
                    }
                }
                Ok(Request::Incidents(f))
            }
            "/nodes" => Ok(Request::Nodes),
            "/status" => Ok(Request::Status),
            "/metrics" => Ok(Request::Metrics),
            p => match p.strip_prefix("/incidents/") {
                Some(id) if !id.is_empty() => Ok(Request::Incident(decode(id))),
                _ => Err(format!("no such path {p:?}")),
            },
        }
    }
}

/// `24h` (that long ago) or an RFC 3339 time.
pub fn parse_since(s: &str, now: Micros) -> Result<Micros, String> {
    if let Some(t) = parse_rfc3339(s) {
        return Ok(t);
    }
    parse_duration(s)
        .map(|d| now - d)
        .map_err(|_| format!("--since {s:?}: expected a duration such as 24h or an RFC 3339 time"))
}

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct NodeRow {
    pub node: String,
    pub incidents: u64,
    pub open: u64,
    pub retries: u64,
    pub last_trouble_at: Option<String>,
    pub last_verdict: Option<String>,
}

/// The settings stored with the pipeline state: verdicts are judged by them.
pub fn stored_settings(store: &Store) -> Result<Settings, StoreError> {
    Ok(store
        .load()?
        .1
        .map(|s| s.tracker.settings().clone())
        .unwrap_or_default())
}

/// Answers one query from the store (and, when the service runs, its live
/// state).
#[must_use]
pub fn answer(store: &Store, live: Option<&Live>, req: &Request) -> Response {
    match answer_inner(store, live, req) {
        Ok(r) => r,
        Err(e) => Response::error(500, &e.to_string()),
    }
}

fn answer_inner(store: &Store, live: Option<&Live>, req: &Request) -> Result<Response, StoreError> {
    let settings = match live {
        Some(l) => l.settings.clone(),
        None => stored_settings(store)?,
    };
    Ok(match req {
        Request::Incidents(f) => {
            let incidents = store.incidents(f, &settings)?;
            Response::json(
                200,
                &serde_json::json!({ "incidents": views(&incidents, &settings) }),
            )
        }
        Request::Incident(id) => match store.incident(id)? {
            Some(i) => Response::json(200, &IncidentOut::new(&i, &settings)),
            None => Response::error(404, &format!("no incident {id}")),
        },
        Request::Nodes => Response::json(
            200,
            &serde_json::json!({ "nodes": nodes(store, &settings)? }),
        ),
        Request::Status => Response::json(200, &status(store, live)?),
        Request::Metrics => Response {
            code: 200,
            content_type: "text/plain; version=0.0.4",
            body: metrics(store, live, &settings)?,
        },
    })
}

fn nodes(store: &Store, settings: &Settings) -> Result<Vec<NodeRow>, StoreError> {
    let all = store.incidents(&Filter::default(), settings)?;
    let mut rows: BTreeMap<String, NodeRow> = BTreeMap::new();
    // Newest first: the first seen per node is its last.
    for i in &all {
        let row = rows.entry(i.node.clone()).or_insert_with(|| NodeRow {
            node: i.node.clone(),
            incidents: 0,
            open: 0,
            retries: 0,
            last_trouble_at: Some(rfc3339(i.last_trouble_at)),
            last_verdict: Some(i.verdict(settings).as_str().to_string()),
        });
        row.incidents += 1;
        row.open += u64::from(i.status() == Status::Open);
        row.retries += i.counted_retries();
    }
    Ok(rows.into_values().collect())
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
    pub mail: String,
    pub outbox: u64,
    pub outbox_oldest_seconds: Option<f64>,
    pub mails_sent: u64,
    pub mails_failed: u64,
    pub last_delivery: Option<String>,
    pub last_delivery_at: Option<String>,
    pub store: String,
    pub store_bytes: u64,
}

fn status(store: &Store, live: Option<&Live>) -> Result<StatusOut, StoreError> {
    let (cursor, state) = store.load()?;
    let all = store.incidents(&Filter::default(), &Settings::default())?;
    let open = all.iter().filter(|i| i.status() == Status::Open).count() as u64;
    let summary = match live {
        Some(l) => l.summary.clone(),
        None => state.map(|s| s.summary).unwrap_or_default(),
    };
    let now = crate::time::now();
    let outbox = store.outbox()?;
    Ok(StatusOut {
        service: if live.is_some() {
            "running"
        } else {
            "not running"
        }
        .into(),
        started_at: live.map(|l| rfc3339(l.started_at)),
        journal: live.map(|l| l.journal.clone()),
        cursor: live.and_then(|l| l.cursor.clone()).or(cursor),
        last_entry_at: summary.last_at.map(rfc3339),
        caught_up: live.map(|l| l.caught_up),
        lag_seconds: live.map(|l| lag(l, now) as f64 / SECOND as f64),
        entries: summary.entries,
        kubelet_lines: summary.kubelet_lines,
        recognized: summary.recognized,
        unparsed: summary.unparsed,
        open_incidents: open,
        incidents: all.len() as u64,
        entries_lost: live.map_or(0, |l| l.entries_lost),
        mail: match live {
            Some(l) if l.mail.enabled => "enabled".into(),
            Some(_) => "disabled ([alert] to is empty)".into(),
            None => "-".into(),
        },
        outbox: outbox.len() as u64,
        outbox_oldest_seconds: outbox
            .iter()
            .map(|e| e.queued_at)
            .min()
            .map(|t| (now - t).max(0) as f64 / SECOND as f64),
        mails_sent: live.map_or(0, |l| l.mail.sent),
        mails_failed: live.map_or(0, |l| l.mail.failed),
        last_delivery: live.and_then(|l| l.mail.last_result.clone()),
        last_delivery_at: live.and_then(|l| l.mail.last_at).map(rfc3339),
        store: store.path().display().to_string(),
        store_bytes: store.size_on_disk(),
    })
}

/// How far behind the journal the reader is: 0 once caught up.
fn lag(l: &Live, now: Micros) -> Micros {
    if l.caught_up {
        0
    } else {
        l.last_entry_at.map_or(0, |t| (now - t).max(0))
    }
}

fn metrics(store: &Store, live: Option<&Live>, settings: &Settings) -> Result<String, StoreError> {
    let all = store.incidents(&Filter::default(), settings)?;
    let mut by_verdict: BTreeMap<&'static str, u64> = BTreeMap::new();
    for v in [
        Verdict::StartupRace,
        Verdict::Transient,
        Verdict::Persistent,
        Verdict::Undetermined,
    ] {
        by_verdict.insert(v.as_str(), 0);
    }
    for i in &all {
        *by_verdict.entry(i.verdict(settings).as_str()).or_default() += 1;
    }
    let open = all.iter().filter(|i| i.status() == Status::Open).count();
    let default = Live::default();
    let l = live.unwrap_or(&default);
    let s = &l.summary;
    let mut m = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(m, "# HELP kubelet_sentinel_{name} {help}");
        let _ = writeln!(m, "# TYPE kubelet_sentinel_{name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(m, "kubelet_sentinel_{name}{labels} {v}");
        }
    };
    let one = |v: u64| vec![(String::new(), v as f64)];
    metric(
        "entries_read_total",
        "counter",
        "Journal entries read.",
        &one(s.entries),
    );
    metric(
        "kubelet_lines_total",
        "counter",
        "Entries that belong to the kubelet.",
        &one(s.kubelet_lines),
    );
    metric(
        "recognized_total",
        "counter",
        "Kubelet lines recognised as a signal.",
        &one(s.recognized),
    );
    metric(
        "unparsed_total",
        "counter",
        "Kubelet entries that are neither a line nor a continuation.",
        &one(s.unparsed),
    );
    metric(
        "entries_lost_total",
        "counter",
        "Journal entries removed (rotation, vacuum) before they were read.",
        &one(l.entries_lost),
    );
    let verdicts: Vec<(String, f64)> = by_verdict
        .iter()
        .map(|(v, n)| (format!("{{verdict=\"{v}\"}}"), *n as f64))
        .collect();
    metric(
        "incidents",
        "gauge",
        "Incidents in the history, by verdict.",
        &verdicts,
    );
    metric(
        "open_incidents",
        "gauge",
        "Incidents still open.",
        &one(open as u64),
    );
    let retries: Vec<(String, f64)> = l
        .retries_by_node
        .iter()
        .map(|(n, r)| {
            (
                format!("{{node=\"{}\"}}", n.replace(['\\', '"', '\n'], "_")),
                *r as f64,
            )
        })
        .collect();
    metric(
        "open_incident_retries",
        "gauge",
        "Retries of each node's open incident.",
        &retries,
    );
    let now = crate::time::now();
    metric(
        "journal_lag_seconds",
        "gauge",
        "How far behind the journal the reader is.",
        &[(String::new(), lag(l, now) as f64 / SECOND as f64)],
    );
    metric(
        "last_entry_timestamp_seconds",
        "gauge",
        "Time of the last entry read.",
        &[(
            String::new(),
            s.last_at.map_or(0.0, |t| t as f64 / SECOND as f64),
        )],
    );
    let outbox = store.outbox()?;
    metric(
        "outbox_length",
        "gauge",
        "Alerts waiting for delivery.",
        &one(outbox.len() as u64),
    );
    metric(
        "outbox_oldest_age_seconds",
        "gauge",
        "Age of the oldest alert waiting for delivery.",
        &[(
            String::new(),
            outbox
                .iter()
                .map(|e| e.queued_at)
                .min()
                .map_or(0.0, |t| (now - t).max(0) as f64 / SECOND as f64),
        )],
    );
    metric(
        "mails_sent_total",
        "counter",
        "Alert mails the transport accepted.",
        &one(l.mail.sent),
    );
    metric(
        "mail_failures_total",
        "counter",
        "Failed delivery attempts.",
        &one(l.mail.failed),
    );
    metric(
        "up",
        "gauge",
        "1 while the service runs.",
        &one(u64::from(live.is_some())),
    );
    Ok(m)
}

fn write_response(stream: &mut dyn Write, r: &Response) -> std::io::Result<()> {
    let reason = match r.code {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Internal Server Error",
    };
    write!(
        stream,
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        r.code,
        r.content_type,
        r.body.len(),
        r.body
    )?;
    stream.flush()
}

/// Reads one request; `None` when it is not a GET we understand.
fn read_request(stream: &mut dyn Read) -> Result<Request, Response> {
    let mut reader = BufReader::new(stream.take(64 * 1024));
    let mut line = String::new();
    reader
        .read_line(&mut line)
        .map_err(|e| Response::error(400, &e.to_string()))?;
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(Response::error(400, "malformed request line"));
    };
    // Headers are read and ignored.
    loop {
        let mut h = String::new();
        match reader.read_line(&mut h) {
            Ok(0) => break,
            Ok(_) if h.trim().is_empty() => break,
            Ok(_) => {}
            Err(e) => return Err(Response::error(400, &e.to_string())),
        }
    }
    if method != "GET" {
        return Err(Response::error(400, "only GET is served"));
    }
    Request::parse(target).map_err(|e| Response::error(404, &e))
}

/// The query socket: created with mode 0660 and, where the group exists,
/// group `systemd-journal`: whoever may read the kubelet's journal may read
/// what was derived from it.
pub fn bind_socket(path: &Path) -> std::io::Result<UnixListener> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    if path.exists() {
        // A socket left by a crash: take it over unless someone answers.
        if UnixStream::connect(path).is_ok() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("{} is answered by another process", path.display()),
            ));
        }
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)?;
    if let Some(gid) = group_id("systemd-journal") {
        // Not in the group (run by hand, not as root): only we may query.
        if let Err(e) = std::os::unix::fs::chown(path, None, Some(gid)) {
            tracing::warn!(
                "query socket {}: cannot give it group systemd-journal ({e}); only this user and root can query",
                path.display()
            );
        }
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))?;
    Ok(listener)
}

fn group_id(name: &str) -> Option<u32> {
    let groups = std::fs::read_to_string("/etc/group").ok()?;
    groups.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == name).then_some(())?;
        f.nth(1)?.parse().ok()
    })
}

/// Serves queries until `stop` is set. Each connection gets one answer.
pub fn serve_unix(listener: &UnixListener, store: &Store, live: &SharedLive, stop: &AtomicBool) {
    let _ = listener.set_nonblocking(true);
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
                let response = match read_request(&mut stream) {
                    Ok(req) => {
                        // Copy the live state out: never hold the lock while reading sled.
                        let snapshot = live.lock().map(|l| l.clone()).unwrap_or_default();
                        answer(store, Some(&snapshot), &req)
                    }
                    Err(r) => r,
                };
                let _ = write_response(&mut stream, &response);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => {
                tracing::warn!("query socket: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// Serves `/metrics` (only) over TCP until `stop` is set.
pub fn serve_metrics(listener: &TcpListener, store: &Store, live: &SharedLive, stop: &AtomicBool) {
    let _ = listener.set_nonblocking(true);
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let response = match read_request(&mut stream) {
                    Ok(Request::Metrics) => {
                        let snapshot = live.lock().map(|l| l.clone()).unwrap_or_default();
                        answer(store, Some(&snapshot), &Request::Metrics)
                    }
                    Ok(_) => Response::error(404, "only /metrics is served over TCP"),
                    Err(r) => r,
                };
                let _ = write_response(&mut stream, &response);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Why a query could not be asked over the socket.
#[derive(Debug)]
pub enum ClientError {
    /// No socket, or nobody listening: the service is not running.
    NotRunning(std::io::Error),
    PermissionDenied(PathBuf),
    Other(String),
}

/// Asks the running service.
pub fn ask(socket: &Path, req: &Request) -> Result<Response, ClientError> {
    let mut stream = UnixStream::connect(socket).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => ClientError::PermissionDenied(socket.to_path_buf()),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
            ClientError::NotRunning(e)
        }
        _ => ClientError::Other(format!("{}: {e}", socket.display())),
    })?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    write!(
        stream,
        "GET {} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        req.path()
    )
    .map_err(|e| ClientError::Other(e.to_string()))?;
    let mut raw = String::new();
    stream
        .read_to_string(&mut raw)
        .map_err(|e| ClientError::Other(format!("reading the answer: {e}")))?;
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .ok_or_else(|| ClientError::Other("malformed answer".into()))?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| ClientError::Other("malformed status line".into()))?;
    let content_type = if head.contains("application/json") {
        "application/json"
    } else {
        "text/plain; version=0.0.4"
    };
    Ok(Response {
        code,
        content_type,
        body: body.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        for r in [
            Request::Incidents(Filter {
                node: Some("ip-10-0-0-1.ec2.internal".into()),
                open: true,
                since: Some(1_700_000_000_000_000),
                verdict: Some("startup-race".into()),
                limit: Some(5),
            }),
            Request::Incidents(Filter::default()),
            Request::Incident("0123456789ab".into()),
            Request::Nodes,
            Request::Status,
            Request::Metrics,
        ] {
            assert_eq!(Request::parse(&r.path()).unwrap(), r);
        }
        assert!(Request::parse("/nope").is_err());
        assert!(Request::parse("/incidents?x=1").is_err());
    }

    #[test]
    fn since() {
        let now = 100 * 3600 * SECOND;
        assert_eq!(parse_since("24h", now).unwrap(), 76 * 3600 * SECOND);
        assert_eq!(parse_since("1970-01-01T00:00:01Z", now).unwrap(), SECOND);
        assert!(parse_since("yesterday", now).is_err());
    }
}
