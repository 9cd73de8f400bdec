//! The Alertmanager delivery task: one lane per instance, the outbox pass,
//! and the firing alerts and heartbeat posted again every interval.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::alerts::{alert, firing_until, heartbeat};
use crate::config::Endpoint;
use crate::config::{AlertmanagerConfig, Config};
use crate::journal::Mode;
use crate::notify::{backoff, outbox, worker};
use crate::status::DeliveryStats;
use crate::status::{DeliveryReport, Now};
use crate::store::{Channel, Filter, OutboxEntry, Store, StoreError};
use sentinel_core::time::{Micros, human_duration, rfc3339};
use sentinel_core::tracker::{AlertKind, Incident, Settings};

/// What an instance may answer; the rest is not read.
const MAX_ANSWER: usize = 64 << 10;

/// One POST of `body` to one instance; bounded in time by the caller.
async fn post(
    ep: &Endpoint,
    body: Bytes,
    tls: Option<&Arc<rustls::ClientConfig>>,
) -> Result<(), String> {
    let stream = tokio::net::TcpStream::connect((ep.host.as_str(), ep.port))
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let path = format!("{}/api/v2/alerts", ep.prefix);
    let req = hyper::Request::post(path)
        .header(hyper::header::HOST, format!("{}:{}", ep.host, ep.port))
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(
            hyper::header::USER_AGENT,
            concat!("kubelet-sentinel/", env!("CARGO_PKG_VERSION")),
        )
        .body(Full::new(body))
        .map_err(|e| e.to_string())?;
    if ep.tls {
        let config = tls.ok_or("no TLS configuration")?.clone();
        let name = rustls::pki_types::ServerName::try_from(ep.host.clone())
            .map_err(|e| format!("not a TLS server name: {e}"))?;
        let stream = tokio_rustls::TlsConnector::from(config)
            .connect(name, stream)
            .await
            .map_err(|e| format!("TLS failed: {e}"))?;
        send(TokioIo::new(stream), req).await
    } else {
        send(TokioIo::new(stream), req).await
    }
}

async fn send<T>(io: T, req: hyper::Request<Full<Bytes>>) -> Result<(), String>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| format!("HTTP failed: {e}"))?;
    let driver = tokio::spawn(conn);
    let res = sender
        .send_request(req)
        .await
        .map_err(|e| format!("HTTP failed: {e}"));
    let out = match res {
        Ok(res) => {
            let code = res.status();
            let body = Limited::new(res.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map(http_body_util::Collected::to_bytes)
                .unwrap_or_default();
            if code.is_success() {
                Ok(())
            } else {
                Err(format!(
                    "answered {code}: {}",
                    sentinel_core::tracker::one_line(&String::from_utf8_lossy(&body), 300)
                ))
            }
        }
        Err(e) => Err(e),
    };
    driver.abort();
    out
}

/// What one instance is asked to take, and where its answer goes.
type Post = (Bytes, tokio::sync::oneshot::Sender<Result<(), String>>);

/// Posts a lane may have waiting: an instance that stops answering holds up
/// nothing but its own lane, and is not sent more than this.
const LANE_DEPTH: usize = 32;

/// One instance's lane: its posts go one after another, in order (a
/// resolved alert never overtakes the firing one), each within the
/// timeout, on a task of its own, so a hung instance delays no other.
struct Lane {
    shown: String,
    tx: mpsc::Sender<Post>,
}

impl Lane {
    fn spawn(
        ep: Endpoint,
        tls: Option<Arc<rustls::ClientConfig>>,
        timeout: Duration,
        shutdown: CancellationToken,
    ) -> Self {
        let shown = ep.shown();
        let (tx, mut rx) = mpsc::channel::<Post>(LANE_DEPTH);
        let name = shown.clone();
        tokio::spawn(async move {
            loop {
                let (body, reply) = tokio::select! {
                    () = shutdown.cancelled() => return,
                    p = rx.recv() => match p {
                        Some(p) => p,
                        // Reconfigured: the lane went with the old settings.
                        None => return,
                    },
                };
                let r = tokio::select! {
                    () = shutdown.cancelled() => return,
                    r = tokio::time::timeout(timeout, post(&ep, body, tls.as_ref())) => r,
                };
                let r =
                    r.unwrap_or_else(|_| Err(format!("no answer within {}s", timeout.as_secs())));
                if let Err(e) = &r {
                    tracing::warn!(instance = %name, "Alertmanager {name}: {e}");
                }
                // The pass may have gone on once another instance took it.
                let _ = reply.send(r);
            }
        });
        Self { shown, tx }
    }
}

pub(crate) struct AlertmanagerTask {
    store: Store,
    /// One per instance, made on the first post after (re)configuring.
    lanes: Option<Vec<Lane>>,
    cfg: AlertmanagerConfig,
    endpoints: Vec<Endpoint>,
    tls: Option<Arc<rustls::ClientConfig>>,
    settings: Settings,
    retry_max: Micros,
    /// How long an outage's nodes stay the same before its end is posted
    /// (`[alert] group_wait`, as the mailer waits; D27).
    settle: Micros,
    stats: DeliveryStats,
    publish: watch::Sender<DeliveryStats>,
    reports: mpsc::UnboundedSender<DeliveryReport>,
    now: Now,
    /// The labels last posted per incident: a changed cause ends the alert
    /// under the old ones.
    posted: HashMap<String, serde_json::Map<String, Value>>,
    next_resend: Micros,
    /// When the heartbeat started firing (the task's start).
    started: Micros,
    host: String,
}

impl AlertmanagerTask {
    #[must_use]
    pub(crate) fn new(
        store: Store,
        config: &Config,
        publish: watch::Sender<DeliveryStats>,
        reports: mpsc::UnboundedSender<DeliveryReport>,
        now: Now,
    ) -> Self {
        let mut t = Self {
            store,
            lanes: None,
            cfg: config.alert.alertmanager.clone(),
            endpoints: Vec::new(),
            tls: None,
            settings: Settings::default(),
            retry_max: 0,
            settle: 0,
            stats: DeliveryStats::default(),
            publish,
            reports,
            next_resend: now(),
            started: now(),
            now,
            posted: HashMap::new(),
            host: crate::config::hostname(),
        };
        // As the mailer: what the last run posted last.
        if let Ok(Some((at, result))) = t.store.last_delivery(Channel::Alertmanager) {
            t.stats.last_result = Some(result);
            t.stats.last_at = Some(at);
            t.stats.last_success_at = Some(at);
        }
        worker::Deliverer::configure(&mut t, config);
        // As the mailer: the outbox as it stands, before the first pass.
        if let Ok(all) = t.store.outbox() {
            let mine: Vec<OutboxEntry> = all
                .into_iter()
                .filter(|e| e.channel == Channel::Alertmanager)
                .collect();
            t.publish_outbox(&mine);
        }
        t
    }

    fn active(&self) -> bool {
        !self.endpoints.is_empty() && self.stats.disabled.is_none()
    }

    /// Posts `alerts` to every instance; Ok as soon as one accepted them
    /// (the cluster's gossip shares them), without waiting for the others:
    /// each instance's lane goes on by itself.
    async fn post_all(
        &mut self,
        alerts: &[Value],
        shutdown: &CancellationToken,
    ) -> Result<String, String> {
        let body = Bytes::from(serde_json::to_vec(alerts).unwrap_or_default());
        let timeout = Duration::from_micros(self.cfg.timeout.0 as u64);
        let lanes = self.lanes.get_or_insert_with(|| {
            self.endpoints
                .iter()
                .map(|ep| Lane::spawn(ep.clone(), self.tls.clone(), timeout, shutdown.clone()))
                .collect()
        });
        let mut failed: Vec<String> = Vec::new();
        let mut answers = futures_util::stream::FuturesUnordered::new();
        for lane in lanes.iter() {
            let (tx, rx) = tokio::sync::oneshot::channel();
            match lane.tx.try_send((body.clone(), tx)) {
                Ok(()) => {
                    let shown = lane.shown.clone();
                    answers.push(async move {
                        let r = rx.await.unwrap_or_else(|_| Err("stopped".into()));
                        (shown, r)
                    });
                }
                Err(_) => failed.push(format!(
                    "{}: {LANE_DEPTH} posts still waiting for it",
                    lane.shown
                )),
            }
        }
        loop {
            let next = tokio::select! {
                () = shutdown.cancelled() => return Err("stopping".into()),
                n = futures_util::StreamExt::next(&mut answers) => n,
            };
            match next {
                Some((shown, Ok(()))) => return Ok(shown),
                Some((shown, Err(e))) => failed.push(format!("{shown}: {e}")),
                None => return Err(failed.join("; ")),
            }
        }
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        worker::on_store(&self.store, f).await
    }

    /// The alert for an incident as it is now, and the end of the alert
    /// under labels it no longer has.
    fn alerts_for(&mut self, i: &Incident, now: Micros) -> Vec<Value> {
        let ends = i
            .resolved_at
            .unwrap_or_else(|| firing_until(now, &self.cfg));
        let a = alert(i, &self.settings, &self.cfg, ends);
        let mut out = Vec::new();
        let labels = a["labels"].as_object().cloned().unwrap_or_default();
        if let Some(old) = self.posted.get(&i.id) {
            if *old != labels {
                out.push(json!({
                    "labels": old,
                    "annotations": a["annotations"],
                    "startsAt": a["startsAt"],
                    "endsAt": rfc3339(now),
                }));
            }
        }
        if i.resolved_at.is_some() {
            self.posted.remove(&i.id);
        } else {
            self.posted.insert(i.id.clone(), labels);
        }
        out.push(a);
        out
    }

    /// No instance took `due`: each is tried again after the backoff (and
    /// `entries`, the outbox as published, says so).
    async fn retry_later(
        &mut self,
        due: Vec<OutboxEntry>,
        entries: &mut [OutboxEntry],
        alerts: usize,
        err: String,
        now: Micros,
    ) -> Result<(), StoreError> {
        self.stats.failed += 1;
        self.stats.last_result = Some(err.clone());
        let attempts = due.iter().map(|e| e.attempts).max().unwrap_or(0) + 1;
        let retry_in = backoff(attempts - 1, self.retry_max, due[0].seq);
        tracing::warn!(
            "Alertmanager did not take {} alert{} ({err}); attempt {attempts}, retrying in {}",
            alerts,
            if alerts == 1 { "" } else { "s" },
            human_duration(retry_in)
        );
        let updated: Vec<OutboxEntry> = due
            .into_iter()
            .map(|mut e| {
                e.attempts = attempts;
                e.next_attempt_at = now + retry_in;
                e.last_error = Some(err.clone());
                e
            })
            .collect();
        for u in &updated {
            if let Some(e) = entries.iter_mut().find(|e| e.seq == u.seq) {
                *e = u.clone();
            }
        }
        self.blocking(move |s| s.outbox_update(&updated)).await
    }

    /// Posts every open incident that was announced (its alert went into
    /// the outbox) as firing, and the heartbeat while the service runs (not
    /// for `run --once`, which is gone before the heartbeat would end).
    async fn resend(&mut self, shutdown: &CancellationToken, beat: bool) -> Result<(), StoreError> {
        let settings = self.settings.clone();
        let open = self
            .blocking(move |s| {
                s.incidents(
                    &Filter {
                        open: true,
                        ..Filter::default()
                    },
                    &settings,
                )
            })
            .await?;
        let now = (self.now)();
        let mut alerts = Vec::new();
        for i in open
            .iter()
            .filter(|i| i.announced && i.over_threshold_at.is_some())
        {
            alerts.extend(self.alerts_for(i, now));
        }
        if beat {
            alerts.push(heartbeat(&self.cfg, &self.host, self.started, now));
        }
        if alerts.is_empty() {
            return Ok(());
        }
        match self.post_all(&alerts, shutdown).await {
            Ok(_) => {
                self.stats.last_success_at = Some(now);
                self.publish.send_replace(self.stats.clone());
            }
            Err(e) => {
                if !shutdown.is_cancelled() {
                    tracing::warn!("firing alerts and the heartbeat not posted again: {e}");
                }
            }
        }
        Ok(())
    }

    fn publish_outbox(&mut self, entries: &[OutboxEntry]) {
        self.stats.outbox = entries.len() as u64;
        // Held back by a silence is not stuck.
        let now = (self.now)();
        let waiting = || entries.iter().filter(|e| !e.held_at(now));
        self.stats.oldest_queued_at = waiting().map(|e| e.queued_at).min();
        self.stats.failing_attempts = waiting().next().map_or(0, |e| e.attempts);
        self.publish.send_replace(self.stats.clone());
    }

    /// Delivers until `shutdown`.
    pub(crate) async fn run(
        self,
        wake: Arc<Notify>,
        config: watch::Receiver<Arc<Config>>,
        shutdown: CancellationToken,
    ) {
        worker::run(self, wake, config, shutdown).await;
    }

    /// `run --once`: one attempt at everything, firing alerts included.
    /// Returns how many posts failed.
    pub(crate) async fn deliver_all_once(&mut self, shutdown: &CancellationToken) -> u64 {
        worker::deliver_all_once(self, shutdown).await
    }
}

impl worker::Deliverer for AlertmanagerTask {
    const OUTBOX: &'static str = "Alertmanager";

    fn now(&self) -> Micros {
        (self.now)()
    }

    /// Applies `[alert.alertmanager]` (at start and on every reload).
    fn configure(&mut self, config: &Config) {
        self.cfg = config.alert.alertmanager.clone();
        self.settings = config.tracker_settings();
        self.retry_max = config.alert.retry_max.0;
        self.settle = config.alert.group_wait.0;
        self.endpoints.clone_from(&self.cfg.urls);
        self.tls = None;
        self.lanes = None;
        self.stats.disabled = None;
        self.stats.unusable = false;
        if self.endpoints.iter().any(|e| e.tls) {
            let extra = match &self.cfg.ca_file {
                None => Ok(Vec::new()),
                Some(ca) => crate::notify::transport::read_ca(ca),
            };
            match extra.and_then(crate::notify::smtp::implicit_tls_config) {
                Ok(c) => self.tls = Some(c),
                Err(e) => {
                    tracing::error!("Alertmanager over https: {e}");
                    self.stats.disabled = Some(e);
                    self.stats.unusable = true;
                }
            }
        }
        if self.endpoints.is_empty() {
            self.stats.disabled = Some("[alert.alertmanager] urls is empty".into());
        }
        self.stats.target = self
            .endpoints
            .iter()
            .map(Endpoint::shown)
            .collect::<Vec<_>>()
            .join(", ");
        self.publish.send_replace(self.stats.clone());
    }

    /// Delivers what is due in the outbox; returns when to look next.
    async fn pass(
        &mut self,
        shutdown: &CancellationToken,
        mode: Mode,
    ) -> Result<Option<Micros>, StoreError> {
        let entries: Vec<OutboxEntry> = self
            .blocking(|s| s.outbox())
            .await?
            .into_iter()
            .filter(|e| e.channel == Channel::Alertmanager)
            .collect();
        if !self.active() {
            self.publish_outbox(&entries);
            return Ok(None);
        }
        let now = (self.now)();
        // Silences hold alerts back, acknowledgements drop reminders. An
        // outage's end waits until its nodes have stayed the same for
        // `group_wait`, as the mail does: late hosts' members join it after
        // its end was read, and Alertmanager's resolved notice shows the
        // annotations of the alert as last posted (D27); `run --once` read
        // everything.
        let settle = if mode == Mode::Once { 0 } else { self.settle };
        let (mut entries, dropped) = self
            .blocking(move |s| crate::notify::control::apply(&s, entries, now, settle))
            .await?;
        for (e, why) in dropped {
            tracing::info!(
                incident = %e.incident,
                node = %sentinel_core::tracker::one_line(&e.node, 253),
                "{} for node {} not posted to Alertmanager: {why}",
                e.kind.words(),
                sentinel_core::tracker::one_line(&e.node, 80)
            );
        }
        self.publish_outbox(&entries);
        // Everything due goes in one POST: an alert list is what the API
        // takes, and the Alertmanager does the grouping.
        let due: Vec<OutboxEntry> = entries
            .iter()
            .filter(|e| !e.held_at(now))
            .filter(|e| mode == Mode::Once || e.next_attempt_at <= now)
            .cloned()
            .collect();
        if !due.is_empty() {
            let ids: Vec<String> = due.iter().map(|e| e.incident.clone()).collect();
            let found = self
                .blocking(move |s| {
                    ids.iter()
                        .map(|id| s.incident(id))
                        .collect::<Result<Vec<_>, _>>()
                })
                .await?;
            let mut incidents: Vec<Incident> = Vec::new();
            for i in found.into_iter().flatten() {
                if !incidents.iter().any(|x| x.id == i.id) {
                    incidents.push(i);
                }
            }
            let mut alerts = Vec::new();
            for i in &incidents {
                alerts.extend(self.alerts_for(i, now));
            }
            let seqs: Vec<u64> = due.iter().map(|e| e.seq).collect();
            let result = if alerts.is_empty() {
                Ok(String::new())
            } else {
                self.post_all(&alerts, shutdown).await
            };
            if shutdown.is_cancelled() {
                return Ok(None);
            }
            let now = (self.now)();
            self.stats.last_at = Some(now);
            match result {
                Ok(to) => {
                    let remove = seqs.clone();
                    // The first alerts of their incidents (not resolved
                    // notices) count as their delivery.
                    let firsts: Vec<String> = incidents
                        .iter()
                        .filter(|i| {
                            due.iter()
                                .any(|e| e.incident == i.id && e.kind != AlertKind::Resolved)
                        })
                        .map(|i| i.id.clone())
                        .collect();
                    let recorded = firsts.clone();
                    let words = format!("posted to {to}");
                    self.blocking(move |s| {
                        s.delivered(&remove, &recorded, now, (Channel::Alertmanager, &words))
                    })
                    .await?;
                    entries.retain(|e| !seqs.contains(&e.seq));
                    if !alerts.is_empty() {
                        tracing::info!(
                            "{} alert{} posted to Alertmanager {to}",
                            alerts.len(),
                            if alerts.len() == 1 { "" } else { "s" }
                        );
                        self.stats.sent += 1;
                        self.stats.last_result = Some(format!("posted to {to}"));
                        self.stats.last_success_at = Some(now);
                        let _ = self.reports.send(DeliveryReport {
                            incidents: firsts,
                            at: now,
                        });
                    }
                }
                Err(err) => {
                    self.retry_later(due, &mut entries, alerts.len(), err, now)
                        .await?;
                }
            }
            self.publish_outbox(&entries);
        }
        // Firing alerts again, so a restarted Alertmanager has them back.
        let now = (self.now)();
        if mode == Mode::Once || now >= self.next_resend {
            self.next_resend = now + self.cfg.resend_interval.0;
            self.resend(shutdown, mode.follows()).await?;
        }
        let next = outbox::next_due(&entries, 0, now)
            .map_or(self.next_resend, |d| d.min(self.next_resend));
        Ok(Some(next))
    }

    fn failed(&self) -> u64 {
        self.stats.failed
    }
}
