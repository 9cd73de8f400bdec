//! The email delivery task. It waits for work (a wake after a commit that
//! queued alerts) or for its next deadline (`group_wait`, a backoff), never
//! on a timer; the outbox is read only then. Each delivery is bounded, and
//! dropped at once on shutdown: the outbox entry stays, so nothing is lost.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::{DeliveryError, EmailTransport, backoff, next_group, outbox, worker};
use crate::config::Config;
use crate::journal::Mode;
use crate::status::DeliveryStats;
use crate::store::{Channel, OutboxEntry, Store, StoreError};
use sentinel_core::signals::Cause;
use sentinel_core::time::{Micros, human_duration};
use sentinel_core::tracker::{AlertKind, Incident, IncidentKind, Settings};

/// Attempts that may each have delivered the mail; after these, the entry
/// is taken as delivered rather than sent again.
pub(crate) const MAX_IN_DOUBT: u32 = 3;

pub(crate) use crate::status::{DeliveryReport, Now};

enum Outcome {
    Delivered,
    Failed,
    Cancelled,
}

pub(crate) struct Mailer {
    store: Store,
    transport: Option<Arc<EmailTransport>>,
    routes: Vec<crate::config::Route>,
    /// `[alert] to` is set: unrouted alerts have somewhere to go.
    default_to: bool,
    group_wait: Micros,
    retry_max: Micros,
    settings: Settings,
    stats: DeliveryStats,
    publish: watch::Sender<DeliveryStats>,
    reports: mpsc::UnboundedSender<DeliveryReport>,
    now: Now,
    /// The transport changed: entries waiting for their backoff are tried
    /// at the next pass.
    retry_now: bool,
}

/// Entries that go out as one mail: their route, and their incidents.
type Part = (Option<usize>, Vec<OutboxEntry>, Vec<Option<Incident>>);

impl Mailer {
    #[must_use]
    pub(crate) fn new(
        store: Store,
        config: &Config,
        publish: watch::Sender<DeliveryStats>,
        reports: mpsc::UnboundedSender<DeliveryReport>,
        now: Now,
    ) -> Self {
        let mut m = Self {
            store,
            transport: None,
            routes: Vec::new(),
            default_to: false,
            group_wait: 0,
            retry_max: 0,
            settings: Settings::default(),
            stats: DeliveryStats::default(),
            publish,
            reports,
            now,
            retry_now: false,
        };
        // What the last run delivered last: `status` says it after a restart.
        if let Ok(Some((at, result))) = m.store.last_delivery(Channel::Email) {
            m.stats.last_result = Some(result);
            m.stats.last_at = Some(at);
            m.stats.last_success_at = Some(at);
        }
        worker::Deliverer::configure(&mut m, config);
        // What waits in the outbox is known before the first pass: a
        // `status` right after a start says it (the store is read once).
        if let Ok(all) = m.store.outbox() {
            let mine: Vec<OutboxEntry> = all
                .into_iter()
                .filter(|e| e.channel == Channel::Email)
                .collect();
            m.publish_outbox(&mine);
        }
        m
    }

    /// Delivers until `shutdown`. `wake` says alerts were committed;
    /// `config` carries reloaded settings.
    pub(crate) async fn run(
        self,
        wake: Arc<Notify>,
        config: watch::Receiver<Arc<Config>>,
        shutdown: CancellationToken,
    ) {
        worker::run(self, wake, config, shutdown).await;
    }

    /// `run --once`: one attempt at everything in the outbox, without
    /// waiting for `group_wait` or backoff. Returns how many deliveries
    /// failed.
    pub(crate) async fn deliver_all_once(&mut self, shutdown: &CancellationToken) -> u64 {
        worker::deliver_all_once(self, shutdown).await
    }

    async fn outbox(&self) -> Result<Vec<OutboxEntry>, StoreError> {
        let all = worker::on_store(&self.store, |s| s.outbox()).await?;
        Ok(all
            .into_iter()
            .filter(|e| e.channel == Channel::Email)
            .collect())
    }

    fn publish_outbox(&mut self, entries: &[OutboxEntry]) {
        self.stats.outbox = entries.len() as u64;
        // Held back by a silence is not stuck.
        let now = (self.now)();
        let waiting = || entries.iter().filter(|e| !e.held_at(now));
        self.stats.oldest_queued_at = waiting().map(|e| e.queued_at).min();
        self.stats.failing_attempts = waiting().next().map_or(0, |e| e.attempts);
        if self.stats.last_result.is_none() {
            // Nothing tried since the start: what the outbox remembers.
            self.stats.last_result = entries.first().and_then(|e| e.last_error.clone());
        }
        self.publish.send_replace(self.stats.clone());
    }

    /// A group's entries by the route their incident's mail takes, and
    /// within a route by kind and outage: the API endpoint the errors name
    /// and the cause, so thirty nodes losing one endpoint are one mail and
    /// a lone node with another cause or endpoint is a page of its own;
    /// one node's incidents are one mail whatever their kinds
    /// ([`outbox::mail_parts`]). Each part comes with its entries'
    /// incidents as read (`None`: pruned since).
    async fn split_by_route(&self, group: Vec<OutboxEntry>) -> Result<Vec<Part>, StoreError> {
        type Key<'a> = (Option<IncidentKind>, Option<&'a str>, Option<Cause>);
        let found = self.incidents_of(&group).await?;
        let keys: Vec<(Option<usize>, Option<&str>, Key)> = found
            .iter()
            .map(|i| {
                let route = i.as_ref().and_then(|i| {
                    self.routes
                        .iter()
                        .position(|r| r.matches(i.kind(), &i.node, i.cause()))
                });
                let key: Key = (
                    i.as_ref().map(Incident::kind),
                    i.as_ref().and_then(Incident::api_endpoint),
                    i.as_ref().map(Incident::cause),
                );
                (route, i.as_ref().map(|i| i.node.as_str()), key)
            })
            .collect();
        let parts = outbox::mail_parts(&keys);
        let routes: Vec<Option<usize>> = parts.iter().map(|p| keys[p[0]].0).collect();
        drop(keys);
        let mut slots: Vec<Option<(OutboxEntry, Option<Incident>)>> =
            group.into_iter().zip(found).map(Some).collect();
        Ok(parts
            .into_iter()
            .zip(routes)
            .map(|(p, route)| {
                let (v, f): (Vec<OutboxEntry>, Vec<Option<Incident>>) =
                    p.into_iter().filter_map(|i| slots[i].take()).unzip();
                (route, v, f)
            })
            .collect())
    }

    /// Silences hold entries back, acknowledgements drop reminders, an
    /// outage's resolved notice waits for its nodes to settle (`settle`:
    /// `group_wait`; none in `run --once`, which read everything).
    async fn controls(
        &self,
        entries: Vec<OutboxEntry>,
        settle: Micros,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let now = (self.now)();
        let (keep, dropped) = worker::on_store(&self.store, move |s| {
            super::control::apply(&s, entries, now, settle)
        })
        .await?;
        for (e, why) in dropped {
            tracing::info!(
                "{} for node {} not mailed: {why}",
                e.kind.words(),
                sentinel_core::tracker::one_line(&e.node, 80)
            );
        }
        Ok(keep)
    }

    async fn incidents_of(
        &self,
        group: &[OutboxEntry],
    ) -> Result<Vec<Option<Incident>>, StoreError> {
        let ids: Vec<String> = group.iter().map(|e| e.incident.clone()).collect();
        worker::on_store(&self.store, move |s| {
            ids.iter()
                .map(|id| s.incident(id))
                .collect::<Result<Vec<_>, _>>()
        })
        .await
    }

    async fn write(&self, remove: Vec<u64>, update: Vec<OutboxEntry>) -> Result<(), StoreError> {
        worker::on_store(&self.store, move |s| {
            if !remove.is_empty() {
                s.outbox_remove(&remove)?;
            }
            if !update.is_empty() {
                s.outbox_update(&update)?;
            }
            Ok(())
        })
        .await
    }

    /// One delivery attempt of a group. Returns what happened and the
    /// entries as they now are (removed, or with their new retry state).
    async fn deliver(
        &mut self,
        group: Vec<OutboxEntry>,
        found: Vec<Option<Incident>>,
        to: Vec<String>,
        shutdown: &CancellationToken,
    ) -> Result<(Outcome, Vec<OutboxEntry>), StoreError> {
        let Some(transport) = self.transport.clone() else {
            return Ok((Outcome::Cancelled, Vec::new()));
        };
        let mut incidents: Vec<Incident> = Vec::new();
        let mut gone = Vec::new();
        for (e, i) in group.iter().zip(found) {
            match i {
                Some(i) if !incidents.iter().any(|x| x.id == i.id) => incidents.push(i),
                Some(_) => {}
                // Pruned since: nothing left to tell.
                None => gone.push(e.seq),
            }
        }
        if incidents.is_empty() {
            self.write(gone, Vec::new()).await?;
            return Ok((Outcome::Delivered, group));
        }
        let kind = if group.iter().all(|e| e.kind == AlertKind::Resolved) {
            AlertKind::Resolved
        } else if group.iter().any(|e| e.kind == AlertKind::Opened) {
            AlertKind::Opened
        } else {
            AlertKind::Repeat
        };
        let refs: Vec<&Incident> = incidents.iter().collect();
        // The first mail after a silence is the alert it held, and says so:
        // which silences, and how they ended.
        let note = if group.iter().any(|e| e.hold.is_some()) {
            let silences = worker::on_store(&self.store, |s| s.silences()).await?;
            super::control::held_note(&group, &silences)
        } else {
            None
        };
        let mut detail = super::render::FULL;
        let (rendered, result) = loop {
            let mut rendered =
                super::render::render_noted(&refs, kind, &self.settings, detail, note.as_deref());
            rendered.to.clone_from(&to);
            let result = tokio::select! {
                () = shutdown.cancelled() => return Ok((Outcome::Cancelled, Vec::new())),
                r = transport.deliver(&rendered) => r,
            };
            // Too big for the server: the same alert, shown shorter, at once
            // (the same mail again would be refused again, forever).
            match (&result, detail.smaller()) {
                (Err(e @ DeliveryError::TooBig { .. }), Some(smaller)) => {
                    tracing::warn!(
                        "alert for {}: {e}; sending it shorter ({} in full, {} listed)",
                        names(&incidents),
                        smaller.sections,
                        smaller.rows
                    );
                    detail = smaller;
                }
                _ => break (rendered, result),
            }
        };
        let now = (self.now)();
        let seqs: Vec<u64> = group.iter().map(|e| e.seq).collect();
        self.stats.last_at = Some(now);
        let nodes = names(&incidents);
        match result {
            Ok(to) => {
                // Delivered: now, and only now, the entries go, and the
                // delivery is recorded (in the same transaction).
                let ids: Vec<String> = incidents.iter().map(|i| i.id.clone()).collect();
                let words = format!("delivered to {to}");
                let w = words.clone();
                worker::on_store(&self.store, move |s| {
                    s.delivered(&seqs, &ids, now, (Channel::Email, &w))
                })
                .await?;
                tracing::info!("alert delivered to {to}: {}", rendered.subject);
                self.delivered(&incidents, now, words);
                Ok((Outcome::Delivered, group))
            }
            Err(err) => {
                self.stats.failed += 1;
                self.stats.last_result = Some(err.to_string());
                let in_doubt = err.in_doubt();
                if in_doubt {
                    self.stats.in_doubt += 1;
                }
                let doubts =
                    group.iter().map(|e| e.in_doubt).max().unwrap_or(0) + u32::from(in_doubt);
                if in_doubt && doubts >= MAX_IN_DOUBT {
                    tracing::warn!(
                        "alert for {nodes}: {err}; {doubts} attempts may each have delivered it, \
                         so it is not sent again"
                    );
                    let ids: Vec<String> = incidents.iter().map(|i| i.id.clone()).collect();
                    let words = format!("probably delivered: {err}");
                    let w = words.clone();
                    worker::on_store(&self.store, move |s| {
                        s.delivered(&seqs, &ids, now, (Channel::Email, &w))
                    })
                    .await?;
                    self.delivered(&incidents, now, words);
                    return Ok((Outcome::Delivered, group));
                }
                let attempts = group.iter().map(|e| e.attempts).max().unwrap_or(0) + 1;
                let retry_in = backoff(attempts - 1, self.retry_max, group[0].seq);
                tracing::warn!(
                    "alert for {nodes} not delivered ({err}); attempt {attempts}, retrying in {}",
                    human_duration(retry_in)
                );
                let updated: Vec<OutboxEntry> = group
                    .into_iter()
                    .map(|mut e| {
                        e.attempts = attempts;
                        e.in_doubt = doubts;
                        e.next_attempt_at = now + retry_in;
                        e.last_error = Some(err.to_string());
                        e
                    })
                    .collect();
                self.write(Vec::new(), updated.clone()).await?;
                self.publish.send_replace(self.stats.clone());
                Ok((Outcome::Failed, updated))
            }
        }
    }

    fn delivered(&mut self, incidents: &[Incident], at: Micros, result: String) {
        self.stats.sent += 1;
        self.stats.last_result = Some(result);
        self.stats.last_success_at = Some(at);
        self.publish.send_replace(self.stats.clone());
        let _ = self.reports.send(DeliveryReport {
            incidents: incidents.iter().map(|i| i.id.clone()).collect(),
            at,
        });
    }
}

/// The nodes of a group, for log lines: a few, then how many more.
fn names(incidents: &[Incident]) -> String {
    let mut nodes: Vec<String> = incidents
        .iter()
        .map(|i| sentinel_core::tracker::one_line(&i.node, 80))
        .collect();
    nodes.dedup();
    if nodes.len() > 3 {
        let more = nodes.len() - 3;
        nodes.truncate(3);
        format!("{} and {more} more", nodes.join(", "))
    } else {
        nodes.join(", ")
    }
}

impl worker::Deliverer for Mailer {
    const OUTBOX: &'static str = "email";

    fn now(&self) -> Micros {
        (self.now)()
    }

    /// Applies `[alert]` (at start and on every reload): the transport is
    /// rebuilt, so new recipients and a fixed server take effect at once.
    fn configure(&mut self, config: &Config) {
        self.group_wait = config.alert.group_wait.0;
        self.retry_max = config.alert.retry_max.0;
        self.routes.clone_from(&config.alert.route);
        self.default_to = !config.alert.to.is_empty();
        self.settings = config.tracker_settings();
        match EmailTransport::from_config(&config.alert) {
            Ok(Some(t)) => {
                // Another server, or mail switched back on: what waits for
                // its backoff is tried at once, oldest first.
                if self
                    .transport
                    .as_ref()
                    .is_none_or(|old| old.target != t.target)
                    || self.stats.disabled.is_some()
                {
                    self.retry_now = true;
                }
                self.stats.disabled = None;
                self.stats.unusable = false;
                self.stats.target.clone_from(&t.target);
                self.transport = Some(t);
            }
            Ok(None) => {
                self.transport = None;
                self.stats.disabled = Some("[alert] to is empty".into());
                self.stats.unusable = false;
                self.stats.target = String::new();
            }
            Err(e) => {
                tracing::error!("email alerts cannot be sent: {e}");
                self.transport = None;
                self.stats.disabled = Some(e.to_string());
                self.stats.unusable = true;
            }
        }
        self.publish.send_replace(self.stats.clone());
    }

    /// Delivers every group that is due; returns when next to look.
    async fn pass(
        &mut self,
        shutdown: &CancellationToken,
        mode: Mode,
    ) -> Result<Option<Micros>, StoreError> {
        let entries = self.outbox().await?;
        let mut entries = if self.transport.is_none() {
            entries
        } else {
            let settle = if mode == Mode::Once {
                0
            } else {
                self.group_wait
            };
            self.controls(entries, settle).await?
        };
        self.publish_outbox(&entries);
        if self.transport.is_none() {
            return Ok(None);
        }
        if std::mem::take(&mut self.retry_now) {
            let now = (self.now)();
            for e in &mut entries {
                e.next_attempt_at = e.next_attempt_at.min(now);
            }
        }
        let mut tried: HashSet<u64> = HashSet::new();
        loop {
            let now = (self.now)();
            let group = if mode == Mode::Once {
                // Everything is due and gathered, but nothing twice.
                let candidates: Vec<OutboxEntry> = entries
                    .iter()
                    .filter(|e| !tried.contains(&e.seq))
                    .map(|e| OutboxEntry {
                        attempts: e.attempts.max(1),
                        next_attempt_at: now,
                        ..e.clone()
                    })
                    .collect();
                next_group(&candidates, Micros::MAX / 4, now)
            } else {
                next_group(&entries, self.group_wait, now)
            };
            let Some(group) = group else { break };
            tried.extend(group.iter().map(|e| e.seq));
            // One mail per route: each goes to its own recipients.
            for (route, part, found) in self.split_by_route(group).await? {
                let to = match route {
                    Some(r) => self.routes[r].to.clone(),
                    None if self.default_to => Vec::new(),
                    None => {
                        let seqs: Vec<u64> = part.iter().map(|e| e.seq).collect();
                        for e in &part {
                            tracing::info!(
                                "{} for node {} not mailed: no [[alert.route]] matches it and [alert] to is empty",
                                e.kind.words(),
                                sentinel_core::tracker::one_line(&e.node, 80)
                            );
                        }
                        self.write(seqs.clone(), Vec::new()).await?;
                        entries.retain(|e| !seqs.contains(&e.seq));
                        continue;
                    }
                };
                let (outcome, updated) = self.deliver(part, found, to, shutdown).await?;
                match outcome {
                    Outcome::Cancelled => return Ok(None),
                    Outcome::Delivered => {
                        entries.retain(|e| !updated.iter().any(|u| u.seq == e.seq));
                    }
                    Outcome::Failed => {
                        for u in updated {
                            if let Some(e) = entries.iter_mut().find(|e| e.seq == u.seq) {
                                *e = u;
                            }
                        }
                    }
                }
            }
            self.publish_outbox(&entries);
        }
        Ok(outbox::next_due(&entries, self.group_wait, (self.now)()))
    }

    fn failed(&self) -> u64 {
        self.stats.failed
    }
}
