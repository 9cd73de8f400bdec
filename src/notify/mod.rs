//! Alerts: the durable outbox and its delivery.
//!
//! An alert is written to the outbox (sled) in the same transaction as the
//! incident change that raised it, and deleted only after the transport
//! accepted the mail: at least once, never lost. The [`Mailer`] thread
//! delivers oldest first, groups alerts raised within `group_wait` into one
//! email, retries with capped exponential backoff, and bounds every send
//! with a timeout of its own (lettre's covers the socket, not a whole
//! conversation).
//!
//! Duplicates are possible in one window only: the transport accepted a mail
//! and the process died before the outbox entry was deleted.

pub mod render;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls as LettreTls, TlsParameters};
use lettre::{FileTransport, Message, SendmailTransport, SmtpTransport, Transport as _};
use serde::{Deserialize, Serialize};

use crate::api::SharedLive;
use crate::config::{AlertConfig, Tls, Transport};
use crate::store::Store;
use crate::time::{Micros, SECOND, now};
use crate::tracker::{AlertKind, Incident, Settings};

pub use render::{Rendered, render};

/// One alert waiting in the outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// Assigned by the store; the outbox is ordered by it.
    pub seq: u64,
    pub kind: AlertKind,
    pub incident: String,
    pub node: String,
    /// The entry time that raised it.
    pub raised_at: Micros,
    /// Wall-clock time it was queued (for `group_wait`).
    pub queued_at: Micros,
    pub attempts: u32,
    pub next_attempt_at: Micros,
    pub last_error: Option<String>,
}

/// Why a mail was not delivered, in the words an operator needs.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum DeliveryError {
    #[error("cannot connect to {server}: {detail}")]
    Connect { server: String, detail: String },
    #[error("TLS with {server} failed: {detail}")]
    Tls { server: String, detail: String },
    #[error("{server} rejected the login: {detail}")]
    Auth { server: String, detail: String },
    #[error("{server} rejected the mail or a recipient: {detail}")]
    Rejected { server: String, detail: String },
    #[error("{server} did not answer within {seconds}s")]
    Timeout { server: String, seconds: u64 },
    #[error("{0}")]
    Other(String),
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum SetupError {
    #[error("[alert] {0}")]
    Invalid(String),
    #[error("SMTP password file {path}: {detail}")]
    Password { path: String, detail: String },
    #[error("[alert.smtp] ca_file {path}: {detail}")]
    Ca { path: String, detail: String },
}

#[derive(Clone)]
enum Kind {
    Smtp(SmtpTransport),
    Sendmail(SendmailTransport),
    File(FileTransport, PathBuf),
}

/// A configured transport with its envelope.
#[derive(Clone)]
pub struct Delivery {
    kind: Kind,
    from: Mailbox,
    to: Vec<Mailbox>,
    server: String,
    timeout: Duration,
    uses_tls: bool,
    uses_auth: bool,
}

/// The SMTP password: `password_file`, else the systemd credential
/// `smtp-password` (or `smtp_password`, what the shipped unit's directory
/// credential makes of `credentials/password`); never from the config itself,
/// never logged. An empty file means no password.
fn password(cfg: &AlertConfig) -> Result<Option<String>, SetupError> {
    let path = if cfg.smtp.password_file.is_empty() {
        let Some(dir) = std::env::var_os("CREDENTIALS_DIRECTORY") else {
            return Ok(None);
        };
        let found = ["smtp-password", "smtp_password"]
            .iter()
            .map(|n| PathBuf::from(&dir).join(n))
            .find(|p| p.exists());
        match found {
            Some(p) => p,
            None => return Ok(None),
        }
    } else {
        PathBuf::from(&cfg.smtp.password_file)
    };
    std::fs::read_to_string(&path)
        .map(|s| Some(s.trim_end_matches(['\r', '\n']).to_string()).filter(|p| !p.is_empty()))
        .map_err(|e| SetupError::Password {
            path: path.display().to_string(),
            detail: e.to_string(),
        })
}

impl Delivery {
    /// Builds the transport the config names. `Ok(None)` when `to` is empty:
    /// incidents are recorded and nothing is mailed.
    pub fn from_config(cfg: &AlertConfig) -> Result<Option<Self>, SetupError> {
        if cfg.to.is_empty() {
            return Ok(None);
        }
        let from: Mailbox = cfg
            .from
            .parse()
            .map_err(|e| SetupError::Invalid(format!("from {:?}: {e}", cfg.from)))?;
        let to = cfg
            .to
            .iter()
            .map(|t| {
                t.parse()
                    .map_err(|e| SetupError::Invalid(format!("to {t:?}: {e}")))
            })
            .collect::<Result<Vec<Mailbox>, _>>()?;
        let timeout = Duration::from_micros(cfg.smtp.timeout.0.max(SECOND) as u64);
        let server = format!("{}:{}", cfg.smtp.host, cfg.smtp.port);
        let s = &cfg.smtp;
        let (kind, uses_tls, uses_auth) = match cfg.transport {
            Transport::File => {
                let dir = PathBuf::from(&cfg.file.directory);
                (Kind::File(FileTransport::new(&dir), dir), false, false)
            }
            Transport::Sendmail => (Kind::Sendmail(SendmailTransport::new()), false, false),
            Transport::Smtp => {
                let mut tls = TlsParameters::builder(s.host.clone());
                if !s.ca_file.is_empty() {
                    let pem = std::fs::read(&s.ca_file).map_err(|e| SetupError::Ca {
                        path: s.ca_file.clone(),
                        detail: e.to_string(),
                    })?;
                    let cert = Certificate::from_pem(&pem).map_err(|e| SetupError::Ca {
                        path: s.ca_file.clone(),
                        detail: e.to_string(),
                    })?;
                    tls = tls.add_root_certificate(cert);
                }
                let params = || {
                    tls.clone()
                        .build()
                        .map_err(|e| SetupError::Invalid(format!("TLS parameters: {e}")))
                };
                let mode = match s.tls {
                    Tls::Starttls => LettreTls::Required(params()?),
                    Tls::Tls => LettreTls::Wrapper(params()?),
                    Tls::None => LettreTls::None,
                };
                let mut b = SmtpTransport::builder_dangerous(s.host.clone())
                    .port(s.port)
                    .tls(mode)
                    .timeout(Some(timeout));
                let pass = password(cfg)?;
                let uses_auth = !s.username.is_empty();
                if uses_auth {
                    b = b.credentials(Credentials::new(
                        s.username.clone(),
                        pass.unwrap_or_default(),
                    ));
                }
                (Kind::Smtp(b.build()), s.tls != Tls::None, uses_auth)
            }
        };
        Ok(Some(Self {
            kind,
            from,
            to,
            server,
            timeout,
            uses_tls,
            uses_auth,
        }))
    }

    fn message(&self, r: &Rendered) -> Result<Message, DeliveryError> {
        let mut b = Message::builder()
            .from(self.from.clone())
            .subject(r.subject.clone());
        for t in &self.to {
            b = b.to(t.clone());
        }
        b.multipart(MultiPart::alternative_plain_html(
            r.text.clone(),
            r.html.clone(),
        ))
        .map_err(|e| DeliveryError::Other(format!("building the message: {e}")))
    }

    /// Sends one rendered alert. Returns where it went (the server, or the
    /// `.eml` path). Bounded by the timeout even if the server stalls.
    pub fn send(&self, r: &Rendered) -> Result<String, DeliveryError> {
        let msg = self.message(r)?;
        let this = self.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        // A thread per send: a server that accepts and never answers ties up
        // that thread (until the socket timeout), not the mailer.
        std::thread::spawn(move || {
            let _ = tx.send(this.send_now(&msg));
        });
        // The socket timeout applies per read; the whole conversation gets
        // a few of them.
        let overall = self.timeout * 3;
        rx.recv_timeout(overall)
            .unwrap_or(Err(DeliveryError::Timeout {
                server: self.server.clone(),
                seconds: overall.as_secs(),
            }))
    }

    fn send_now(&self, msg: &Message) -> Result<String, DeliveryError> {
        match &self.kind {
            Kind::File(t, dir) => t
                .send(msg)
                .map(|id| dir.join(format!("{id}.eml")).display().to_string())
                .map_err(|e| DeliveryError::Other(format!("writing to {}: {e}", dir.display()))),
            Kind::Sendmail(t) => t
                .send(msg)
                .map(|()| "sendmail".to_string())
                .map_err(|e| DeliveryError::Other(format!("sendmail: {e}"))),
            Kind::Smtp(t) => match t.send(msg) {
                Ok(_) => Ok(self.server.clone()),
                Err(e) => Err(self.classify(&e)),
            },
        }
    }

    fn classify(&self, e: &lettre::transport::smtp::Error) -> DeliveryError {
        let server = self.server.clone();
        let mut detail = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            detail.push_str(": ");
            detail.push_str(&s.to_string());
            source = s.source();
        }
        let lower = detail.to_ascii_lowercase();
        // A socket read timeout surfaces as EAGAIN ("temporarily unavailable").
        if e.is_timeout()
            || lower.contains("timed out")
            || lower.contains("would block")
            || lower.contains("temporarily unavailable")
        {
            return DeliveryError::Timeout {
                server,
                seconds: self.timeout.as_secs(),
            };
        }
        if lower.contains("certificate")
            || lower.contains("tls")
            || lower.contains("handshake")
            || lower.contains("ssl")
        {
            return DeliveryError::Tls { server, detail };
        }
        if lower.contains("connection refused")
            || lower.contains("no route")
            || lower.contains("dns")
            || lower.contains("resolve")
        {
            return DeliveryError::Connect { server, detail };
        }
        let code = e.status().map(|c| c.to_string());
        let auth_stage = self.uses_auth
            && (code
                .as_deref()
                .is_some_and(|c| c.starts_with("535") || c.starts_with("534"))
                || lower.contains("auth")
                || lower.contains("incomplete response"));
        if auth_stage {
            return DeliveryError::Auth { server, detail };
        }
        if e.is_permanent() {
            return DeliveryError::Rejected { server, detail };
        }
        if lower.contains("connection")
            || lower.contains("network")
            || lower.contains("broken pipe")
            || lower.contains("reset")
        {
            return DeliveryError::Connect { server, detail };
        }
        let _ = self.uses_tls;
        DeliveryError::Other(format!("{server}: {detail}"))
    }
}

/// What the mailer tells the service loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    pub incidents: Vec<String>,
    pub at: Micros,
}

/// Groups due outbox entries: the oldest due entry and every entry of the
/// same class (trouble or resolved) queued within `group_wait` of it.
/// `None` while the oldest is still gathering company.
#[must_use]
pub fn next_group(
    entries: &[OutboxEntry],
    group_wait: Micros,
    now: Micros,
) -> Option<Vec<OutboxEntry>> {
    let first = entries.iter().find(|e| e.next_attempt_at <= now)?;
    if first.attempts == 0 && now - first.queued_at < group_wait {
        return None;
    }
    let resolved = first.kind == AlertKind::Resolved;
    Some(
        entries
            .iter()
            .filter(|e| {
                e.next_attempt_at <= now
                    && (e.kind == AlertKind::Resolved) == resolved
                    && e.queued_at >= first.queued_at
                    && e.queued_at - first.queued_at <= group_wait
            })
            .cloned()
            .collect(),
    )
}

/// Capped exponential backoff after `attempts` failures.
#[must_use]
pub fn backoff(attempts: u32, max: Micros) -> Micros {
    (SECOND << attempts.min(20)).min(max)
}

struct Step {
    attempted: bool,
    ok: bool,
}

/// Delivers the outbox until `stop`. Reports deliveries on `delivered`.
pub struct Mailer {
    pub store: Store,
    pub delivery: Delivery,
    pub group_wait: Micros,
    pub retry_max: Micros,
    pub live: SharedLive,
    pub delivered: Sender<Delivered>,
}

impl Mailer {
    /// Delivers until `stop`; `wake` says an alert was just committed (so
    /// it goes out at once instead of at the next poll).
    pub fn run(
        &self,
        stop: &AtomicBool,
        settings: &dyn Fn() -> Settings,
        wake: &std::sync::mpsc::Receiver<()>,
    ) {
        while !stop.load(Ordering::Relaxed) {
            if !self.step(settings, false).attempted {
                let _ = wake.recv_timeout(Duration::from_millis(100));
            }
        }
    }

    /// `run --once`: one attempt at everything in the outbox, without
    /// waiting for `group_wait` or backoff. Returns how many mails failed.
    pub fn deliver_all_once(&self, settings: &dyn Fn() -> Settings) -> u64 {
        let mut failed = 0;
        loop {
            let step = self.step(settings, true);
            if !step.attempted {
                return failed;
            }
            if !step.ok {
                failed += 1;
            }
        }
    }

    /// One delivery attempt, if one is due.
    fn step(&self, settings: &dyn Fn() -> Settings, everything: bool) -> Step {
        let idle = Step {
            attempted: false,
            ok: true,
        };
        let entries = match self.store.outbox() {
            Ok(e) => e,
            Err(e) => {
                tracing::error!("reading the outbox: {e}");
                return idle;
            }
        };
        self.report_outbox(&entries);
        // Once: everything is due and gathered, but nothing twice (entries
        // already tried in this pass have a later next attempt).
        let (t, wait) = if everything {
            (now(), Micros::MAX / 4)
        } else {
            (now(), self.group_wait)
        };
        let candidates: Vec<OutboxEntry> = if everything {
            entries
                .into_iter()
                .filter(|e| e.next_attempt_at <= t)
                .map(|e| OutboxEntry {
                    attempts: e.attempts.max(1),
                    ..e
                })
                .collect()
        } else {
            entries
        };
        let Some(group) = next_group(&candidates, wait, t) else {
            return idle;
        };
        let mut incidents: Vec<Incident> = Vec::new();
        let mut gone = Vec::new();
        for e in &group {
            match self.store.incident(&e.incident) {
                Ok(Some(i)) if !incidents.iter().any(|x| x.id == i.id) => incidents.push(i),
                Ok(Some(_)) => {}
                Ok(None) => gone.push(e.seq),
                Err(err) => {
                    tracing::error!("reading incident {}: {err}", e.incident);
                    return idle;
                }
            }
        }
        if incidents.is_empty() {
            let _ = self.store.outbox_remove(&gone);
            return Step {
                attempted: true,
                ok: true,
            };
        }
        let kind = if group.iter().all(|e| e.kind == AlertKind::Resolved) {
            AlertKind::Resolved
        } else if group.iter().any(|e| e.kind == AlertKind::Opened) {
            AlertKind::Opened
        } else {
            AlertKind::Repeat
        };
        let refs: Vec<&Incident> = incidents.iter().collect();
        let rendered = render(&refs, kind, &settings());
        let seqs: Vec<u64> = group.iter().map(|e| e.seq).collect();
        match self.delivery.send(&rendered) {
            Ok(to) => {
                // Delivered: now, and only now, the entries go.
                if let Err(e) = self.store.outbox_remove(&seqs) {
                    tracing::error!("removing delivered alerts from the outbox: {e}");
                }
                tracing::info!("alert delivered to {to}: {}", rendered.subject);
                let at = now();
                if let Ok(mut l) = self.live.lock() {
                    l.mail.sent += 1;
                    l.mail.last_result = Some(format!("delivered to {to}"));
                    l.mail.last_at = Some(at);
                }
                let _ = self.delivered.send(Delivered {
                    incidents: incidents.iter().map(|i| i.id.clone()).collect(),
                    at,
                });
                Step {
                    attempted: true,
                    ok: true,
                }
            }
            Err(err) => {
                let attempts = group.iter().map(|e| e.attempts).max().unwrap_or(0) + 1;
                let retry_in = backoff(attempts - 1, self.retry_max);
                tracing::warn!(
                    "alert not delivered ({err}); attempt {attempts}, retrying in {}",
                    crate::time::human_duration(retry_in)
                );
                let updated: Vec<OutboxEntry> = group
                    .into_iter()
                    .map(|mut e| {
                        e.attempts = attempts;
                        e.next_attempt_at = now() + retry_in;
                        e.last_error = Some(err.to_string());
                        e
                    })
                    .collect();
                if let Err(e) = self.store.outbox_update(&updated) {
                    tracing::error!("updating the outbox: {e}");
                }
                if let Ok(mut l) = self.live.lock() {
                    l.mail.failed += 1;
                    l.mail.last_result = Some(err.to_string());
                    l.mail.last_at = Some(now());
                }
                Step {
                    attempted: true,
                    ok: false,
                }
            }
        }
    }

    fn report_outbox(&self, entries: &[OutboxEntry]) {
        if let Ok(mut l) = self.live.lock() {
            l.mail.outbox = entries.len() as u64;
            l.mail.oldest_queued_at = entries.iter().map(|e| e.queued_at).min();
        }
    }
}

/// A realistic sample incident for `test-email`: six refused status updates
/// replayed through the tracker.
///
/// # Panics
/// Never: the lines always open an incident.
#[must_use]
pub fn sample_incident(at: Micros, settings: &Settings) -> Incident {
    use crate::journal::{Entry, EntryFilter};
    let mut p = crate::pipeline::Pipeline::new(EntryFilter::default(), settings.clone());
    let mut decisions = Vec::new();
    let line = "E0101 00:00:00.000000    4242 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"sample-node\\\": Get \\\"https://10.0.0.1:6443/api/v1/nodes/sample-node?timeout=10s\\\": dial tcp 10.0.0.1:6443: connect: connection refused\"";
    for n in 0..=settings.retries.min(50) {
        p.push(
            Entry {
                at: Some(at + i64::from(n) * 1000),
                host: Some("sample-host".into()),
                unit: Some("kubelet.service".into()),
                message: line.as_bytes().to_vec(),
                ..Entry::default()
            },
            &mut decisions,
        );
    }
    p.flush(&mut decisions);
    p.tracker()
        .open_incidents()
        .next()
        .cloned()
        .expect("the sample lines open an incident")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, kind: AlertKind, queued_at: Micros) -> OutboxEntry {
        OutboxEntry {
            seq,
            kind,
            incident: format!("i{seq}"),
            node: format!("n{seq}"),
            raised_at: queued_at,
            queued_at,
            attempts: 0,
            next_attempt_at: queued_at,
            last_error: None,
        }
    }

    #[test]
    fn grouping_waits_then_takes_what_came_together() {
        let s = SECOND;
        let e = [
            entry(1, AlertKind::Opened, 0),
            entry(2, AlertKind::Opened, 10 * s),
            entry(3, AlertKind::Resolved, 12 * s),
            entry(4, AlertKind::Opened, 45 * s),
        ];
        assert_eq!(next_group(&e, 30 * s, 20 * s), None, "still gathering");
        let g = next_group(&e, 30 * s, 31 * s).unwrap();
        assert_eq!(g.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(next_group(&e[2..], 0, 12 * s).unwrap()[0].seq, 3);
        assert_eq!(next_group(&[], 0, 0), None);
    }

    #[test]
    fn backoff_is_capped() {
        assert_eq!(backoff(0, 300 * SECOND), SECOND);
        assert_eq!(backoff(3, 300 * SECOND), 8 * SECOND);
        assert_eq!(backoff(30, 300 * SECOND), 300 * SECOND);
    }
}
