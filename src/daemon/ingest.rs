//! The ingest task: the only writer of incidents, tracker state and the
//! cursor. It takes batches from the journal reader, runs them through the
//! pipeline, queues alerts, and commits everything a batch changed in one
//! transaction. It also applies config reloads (it owns the tracker's
//! settings) and records deliveries (it owns the incidents).
//!
//! Time (design section 4.1): entry time drives each host's clock through
//! the pipeline. Wall time moves a host's clock only for quiet the journal
//! confirms: when an open incident would be due, ingest asks the reader to
//! look again ([`ReaderCtl::Sync`]); only its answer, after every entry
//! written meanwhile has arrived, lets wall time count. A backlog, a stopped
//! process or a late host therefore never splits an outage.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Control, DaemonError, Source};
use crate::api::http::{Command, ReloadOutcome};
use crate::config::Config;
use crate::journal::{Reader, ReaderCtl, ReaderEvent};
use crate::model::Position;
use crate::notify::mailer::{DeliveryReport, Now};
use crate::pipeline::Pipeline;
use crate::status::{ConfigStatus, OpenIncident, StatusSnapshot};
use crate::store::{Batch, Channel, OutboxEntry, Stats, StatsDelta, Store, StoreError};
use crate::time::{Micros, SECOND, human_duration};
use crate::tracker::{AlertKind, Decision, Incident};

/// A batch commits after this many entries…
const BATCH_ENTRIES: u64 = 20_000;
/// …or this long after the previous commit, whichever comes first.
const BATCH_INTERVAL: Duration = Duration::from_millis(500);
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// Ended silences stay this long for `silence list`, then are pruned with
/// the incidents.
const SILENCES_KEPT: Micros = 24 * 3600 * SECOND;
/// Quiet checks are at least this far apart, whatever the deadlines say.
const SYNC_SPACING: Duration = Duration::from_millis(50);

/// Where ingest reports to and hears from.
pub struct Channels {
    pub status: watch::Sender<StatusSnapshot>,
    pub config: watch::Sender<Arc<Config>>,
    pub wake: crate::notify::Wake,
    pub commands: mpsc::Receiver<Command>,
    pub control: mpsc::Receiver<Control>,
    pub reports: mpsc::UnboundedReceiver<DeliveryReport>,
}

pub struct Ingest {
    /// The settings in force (runtime keys as last applied).
    config: Arc<Config>,
    /// The config the process started with: keys that need a restart.
    started_config: Arc<Config>,
    config_path: PathBuf,
    config_explicit: bool,
    config_status: ConfigStatus,
    store: Store,
    pub(super) pipeline: Pipeline,
    decisions: Vec<Decision>,
    /// Incidents (open or resolved) to write with the next commit.
    changed: BTreeSet<String>,
    /// Resolved incidents loaded to record a delivery.
    extra: Vec<Incident>,
    alerts: Vec<OutboxEntry>,
    stats_delta: StatsDelta,
    stats: Stats,
    position: Position,
    /// Groups whose cursor moved since the last commit.
    moved_groups: BTreeSet<String>,
    /// The last cursor read (any group), for `status`.
    cursor: Option<String>,
    uncommitted: u64,
    last_commit: Instant,
    commits: u64,
    last_commit_at: Option<Micros>,
    caught_up: bool,
    /// A `Sync` asked of the reader and the wall time it was asked at.
    sync_pending: Option<(u64, Micros)>,
    /// When the last sync was answered: the next is asked no sooner than
    /// [`SYNC_SPACING`] after it.
    last_sync: Instant,
    next_id: u64,
    /// Watchdog pings waiting for the reader's pong.
    pongs: HashMap<u64, oneshot::Sender<()>>,
    reader_restarts: u64,
    /// Retries counted per incident so far, for the per-node counters.
    known_retries: HashMap<String, u64>,
    retries_by_node: std::collections::BTreeMap<String, u64>,
    started: Micros,
    journal: String,
    now: Now,
    announced_after_catch_up: bool,
    /// Open incidents whose alert `max_age` withheld (trouble already old
    /// when read): announced at their host's next live line.
    withheld: BTreeSet<String>,
    /// Entries dated more than a day ahead, as far as they were logged.
    future_logged: u64,
}

impl Ingest {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: Arc<Config>,
        config_path: PathBuf,
        config_explicit: bool,
        store: Store,
        pipeline: Pipeline,
        position: Position,
        stats: Stats,
        journal: String,
        now: Now,
    ) -> Self {
        let started = now();
        let known_retries = pipeline
            .tracker()
            .open_incidents()
            .map(|i| (i.id.clone(), i.counted_retries()))
            .collect();
        Self {
            started_config: config.clone(),
            config_status: ConfigStatus {
                path: config_path.display().to_string(),
                applied_at: Some(started),
                ..ConfigStatus::default()
            },
            config,
            config_path,
            config_explicit,
            store,
            pipeline,
            decisions: Vec::new(),
            changed: BTreeSet::new(),
            extra: Vec::new(),
            alerts: Vec::new(),
            stats_delta: StatsDelta::default(),
            stats,
            cursor: position
                .cursor
                .clone()
                .or_else(|| position.groups.values().next().cloned()),
            position,
            moved_groups: BTreeSet::new(),
            uncommitted: 0,
            last_commit: Instant::now(),
            commits: 0,
            last_commit_at: None,
            caught_up: false,
            sync_pending: None,
            last_sync: Instant::now(),
            next_id: 1,
            pongs: HashMap::new(),
            reader_restarts: 0,
            known_retries,
            retries_by_node: std::collections::BTreeMap::new(),
            started,
            journal,
            now,
            announced_after_catch_up: false,
            withheld: BTreeSet::new(),
            future_logged: 0,
        }
    }

    /// The channels that deliver with the settings in force.
    fn channels(&self) -> Vec<Channel> {
        let mut c = Vec::new();
        if self.config.alert.emails() {
            c.push(Channel::Email);
        }
        if !self.config.alert.alertmanager.urls.is_empty() {
            c.push(Channel::Alertmanager);
        }
        c
    }

    /// Takes one batch of entries from the reader.
    pub(super) fn entries(&mut self, entries: Vec<crate::model::Entry>) {
        let n = entries.len() as u64;
        self.pipeline.set_now((self.now)());
        for e in entries {
            if let Some(c) = &e.cursor {
                self.cursor = Some(c.clone());
                if let Some(g) = self.position.advance(&e) {
                    if !self.moved_groups.contains(g) {
                        self.moved_groups.insert(g.to_string());
                    }
                }
            }
            self.pipeline.push(e, &mut self.decisions);
        }
        self.log_future_dated();
        self.pipeline.stamp_arrivals((self.now)());
        self.uncommitted += n;
        self.caught_up = false;
    }

    /// Turns the tracker's decisions into incident writes and alerts.
    fn apply_decisions(&mut self) {
        let decisions = std::mem::take(&mut self.decisions);
        for d in decisions {
            match d {
                Decision::OpenIncident { id } => {
                    self.stats_delta.opened += 1;
                    self.changed.insert(id);
                }
                Decision::UpdateIncident { id } => {
                    if self.withheld.contains(&id) {
                        self.announce_live(&id);
                    }
                    self.changed.insert(id);
                }
                Decision::ResolveIncident { id } => {
                    self.withheld.remove(&id);
                    self.changed.insert(id);
                }
                Decision::ForgetIncident { id } => {
                    self.withheld.remove(&id);
                    self.changed.remove(&id);
                    self.stats_delta.forgotten += 1;
                }
                Decision::QueueAlert { id, kind, at } => self.queue_alert(&id, kind, at),
            }
        }
    }

    fn queue_alert(&mut self, id: &str, kind: AlertKind, raised_at: Micros) {
        let Some(inc) = self.pipeline.tracker().incident(id) else {
            return;
        };
        let node = inc.node.clone();
        let host = inc.host.clone().unwrap_or_default();
        let words = kind.words();
        let channels = self.channels();
        if channels.is_empty() {
            tracing::info!(
                "{words} for node {node} recorded; nothing is delivered ([alert] to and \
                 [alert.alertmanager] urls are empty)"
            );
            return;
        }
        if kind == AlertKind::Resolved && !inc.announced {
            // Nobody was told it opened: no notice that it ended.
            return;
        }
        let now = (self.now)();
        // Only what was already old when first read: a host written now is
        // live however its clock is set (1971, 2150).
        if !self.pipeline.live(&host) && now - raised_at > self.config.alert.max_age.0 {
            if kind != AlertKind::Resolved {
                self.withheld.insert(id.to_string());
            }
            tracing::info!(
                "{words} for node {node} is older than [alert] max_age ({}): recorded, not delivered",
                human_duration(self.config.alert.max_age.0)
            );
            return;
        }
        for channel in channels {
            self.alerts.push(OutboxEntry {
                seq: 0,
                channel,
                kind,
                incident: id.to_string(),
                node: node.clone(),
                raised_at,
                queued_at: now,
                attempts: 0,
                next_attempt_at: now,
                last_error: None,
                in_doubt: 0,
                held_until: None,
            });
        }
        self.pipeline.tracker_mut().mark_announced(id);
        self.changed.insert(id.to_string());
    }

    /// Open incidents over threshold that nobody was told of (alerting was
    /// off, or they crossed while older than `max_age` and are still in
    /// trouble): announced now that delivery is possible.
    fn announce(&mut self) -> usize {
        if self.channels().is_empty() {
            return 0;
        }
        let now = (self.now)();
        let max_age = self.config.alert.max_age.0;
        let (due, old): (Vec<_>, Vec<_>) = self
            .pipeline
            .tracker()
            .unannounced()
            .map(|i| {
                let crossed = i.over_threshold_at.unwrap_or(i.opened_at);
                (i.id.clone(), crossed, now - i.last_trouble_at <= max_age)
            })
            .partition(|(_, _, young)| *young);
        self.withheld.extend(old.into_iter().map(|(id, _, _)| id));
        let due: Vec<(String, Micros)> = due.into_iter().map(|(id, c, _)| (id, c)).collect();
        for (id, crossed) in &due {
            // Queued as raised now: the age that counts is the trouble's.
            self.queue_alert(id, AlertKind::Opened, now.max(*crossed));
        }
        if !due.is_empty() {
            tracing::info!(
                "{} open incident{} over threshold announced now that alerts can be delivered",
                due.len(),
                if due.len() == 1 { "" } else { "s" }
            );
        }
        due.len()
    }

    /// An incident whose alert `max_age` withheld has a new line from its
    /// host while the host is written: its trouble is live, so it is
    /// announced, whatever the host's clock says.
    fn announce_live(&mut self, id: &str) {
        let Some(inc) = self.pipeline.tracker().incident(id) else {
            return;
        };
        let host = inc.host.clone().unwrap_or_default();
        if inc.announced || !self.pipeline.live(&host) || self.channels().is_empty() {
            return;
        }
        self.withheld.remove(id);
        tracing::info!(
            "{} for node {} announced: its host's trouble is live (the host's clock says {})",
            AlertKind::Opened.words(),
            inc.node,
            crate::time::rfc3339(inc.last_trouble_at)
        );
        self.queue_alert(id, AlertKind::Opened, (self.now)());
    }

    /// Entries dated more than a day after this machine's clock are read at
    /// their host's time: logged (the first, then at each power of two) and
    /// counted in the summary, as `scan` reports them.
    fn log_future_dated(&mut self) {
        let n = self.pipeline.summary().future_dated;
        for m in self.pipeline.malformed.drain(..) {
            self.future_logged += 1;
            if self.future_logged.is_power_of_two() {
                tracing::warn!("{}: {} ({n} so far)", m.place, m.reason);
            }
        }
    }

    fn dirty(&self) -> bool {
        self.uncommitted > 0
            || !self.changed.is_empty()
            || !self.decisions.is_empty()
            || !self.extra.is_empty()
    }

    /// Writes what changed since the last commit, and the cursor, in one
    /// transaction. Only after it returns is the batch's effect durable, and
    /// only then is the mailer woken.
    pub(super) async fn commit(
        &mut self,
        wake: Option<&crate::notify::Wake>,
    ) -> Result<(), StoreError> {
        self.apply_decisions();
        let settings = self.pipeline.tracker().settings().clone();
        let forget = self.pipeline.tracker_mut().take_forgotten();
        for i in &forget {
            self.known_retries.remove(&i.id);
            self.retries_by_node.remove(&i.node);
        }
        let mut incidents = self.pipeline.tracker_mut().take_resolved();
        let resolved: BTreeSet<String> = incidents.iter().map(|i| i.id.clone()).collect();
        for i in &incidents {
            self.stats_delta
                .resolved
                .push(i.verdict(&settings).as_str().to_string());
        }
        // One line a commit however many were closed: a flood of names
        // must not become a flood of log lines.
        let mut evicted = incidents
            .iter()
            .filter(|i| i.resolution == Some(crate::tracker::Resolution::Evicted))
            .chain(&forget);
        if let Some(first) = evicted.next() {
            tracing::warn!(
                incident = %first.id,
                node = %crate::tracker::one_line(&first.node, 253),
                more = evicted.count(),
                forgotten = forget.len(),
                "incidents closed to make room: more nodes in trouble than [incidents] \
                 max_nodes_per_host ({}) or max_nodes ({}); the quietest go first (kubelet-sentinel \
                 status counts them)",
                settings.max_nodes_per_host,
                settings.max_nodes
            );
        }
        for id in &self.changed {
            if resolved.contains(id) {
                continue;
            }
            if let Some(i) = self.pipeline.tracker().incident(id) {
                incidents.push(i.clone());
            }
        }
        for e in std::mem::take(&mut self.extra) {
            if !incidents.iter().any(|i| i.id == e.id) {
                incidents.push(e);
            }
        }
        for i in &incidents {
            let now = i.counted_retries();
            let before = self.known_retries.get(&i.id).copied().unwrap_or(0);
            if now > before {
                *self.retries_by_node.entry(i.node.clone()).or_default() += now - before;
            }
            if i.resolved_at.is_some() {
                self.known_retries.remove(&i.id);
                // A node's series goes with its last open incident, so the
                // series stay as many as the nodes in trouble.
                self.retries_by_node.remove(&i.node);
            } else {
                self.known_retries.insert(i.id.clone(), now);
            }
        }
        let state = serde_json::to_vec(&self.pipeline.state()).map_err(|e| StoreError::Open {
            path: self.store.path().display().to_string(),
            message: format!("serializing the state: {e}"),
        })?;
        let alerting = !self.alerts.is_empty();
        let group_cursors = std::mem::take(&mut self.moved_groups)
            .into_iter()
            .filter_map(|g| self.position.groups.get(&g).map(|c| (g, c.clone())))
            .collect();
        let batch = Batch {
            cursor: self.position.cursor.clone(),
            group_cursors,
            state: Some(state),
            incidents,
            origins: self.pipeline.tracker_mut().take_dirty_origins(),
            alerts: std::mem::take(&mut self.alerts),
            stats: std::mem::take(&mut self.stats_delta),
            forget,
        };
        let store = self.store.clone();
        let batch = tokio::task::spawn_blocking(move || store.commit(&batch).map(|()| batch))
            .await
            .map_err(|e| StoreError::Open {
                path: self.store.path().display().to_string(),
                message: format!("the commit failed: {e}"),
            })??;
        self.stats.add(&batch.stats);
        self.changed.clear();
        self.uncommitted = 0;
        self.last_commit = Instant::now();
        self.commits += 1;
        self.last_commit_at = Some((self.now)());
        if alerting {
            if let Some(w) = wake {
                w.notify();
            }
        }
        Ok(())
    }

    pub(super) fn snapshot(&self) -> StatusSnapshot {
        let settings = self.pipeline.tracker().settings();
        StatusSnapshot {
            started_at: self.started,
            journal: self.journal.clone(),
            cursor: self.cursor.clone(),
            caught_up: self.caught_up,
            summary: self.pipeline.summary().clone(),
            open: self
                .pipeline
                .tracker()
                .open_incidents()
                .map(|i| OpenIncident {
                    id: i.id.clone(),
                    kind: i.kind.as_str().to_string(),
                    node: i.node.clone(),
                    host: i.host.clone().unwrap_or_default(),
                    cause: i.cause().as_str().to_string(),
                    verdict: i.verdict(settings).as_str().to_string(),
                    retries: i.counted_retries(),
                })
                .collect(),
            history: self.stats.clone(),
            retries_by_node: self.retries_by_node.clone(),
            commits: self.commits,
            last_commit_at: self.last_commit_at,
            reader_restarts: self.reader_restarts,
            evicted: self.pipeline.tracker().evicted(),
            forgotten: self.pipeline.tracker().forgotten(),
            hosts: newest_hosts(self.pipeline.host_times(), settings.max_nodes),
            silent_after: self.config.fleet.silent_after.0,
            settings: settings.clone(),
            config: self.config_status.clone(),
        }
    }

    /// The delivery of these incidents' alerts is recorded (open ones
    /// through the tracker, resolved ones from the store).
    async fn delivered(&mut self, r: DeliveryReport) {
        for id in r.incidents {
            let open = self
                .pipeline
                .tracker()
                .incident(&id)
                .is_some_and(|i| i.resolved_at.is_none());
            if open {
                self.pipeline.tracker_mut().mark_alerted(&id, r.at);
                self.changed.insert(id);
                continue;
            }
            let store = self.store.clone();
            let found = tokio::task::spawn_blocking(move || store.incident(&id)).await;
            if let Ok(Ok(Some(mut i))) = found {
                if i.alerted_at.is_none() {
                    i.alerted_at = Some(r.at);
                    self.extra.push(i);
                }
            }
        }
    }

    /// Acknowledges an open incident (its id or a unique prefix): recorded
    /// on the tracker's incident and committed at once.
    pub(super) async fn acknowledge(
        &mut self,
        a: &crate::api::AckRequest,
        wake: &crate::notify::Wake,
    ) -> Result<crate::api::Response, StoreError> {
        use crate::api::Response;
        let matches: Vec<String> = self
            .pipeline
            .tracker()
            .open_incidents()
            .filter(|i| i.id.starts_with(a.id.as_str()) && !a.id.is_empty())
            .map(|i| i.id.clone())
            .collect();
        let id = match matches.as_slice() {
            [one] => one.clone(),
            [] => {
                let store = self.store.clone();
                let prefix = a.id.clone();
                let known =
                    tokio::task::spawn_blocking(move || store.incidents_with_prefix(&prefix, 1))
                        .await
                        .unwrap_or_else(|_| Ok(Vec::new()))?;
                return Ok(match known.first() {
                    Some(i) => {
                        Response::error(409, &format!("incident {} has already resolved", i.id))
                    }
                    None => Response::error(404, &format!("no open incident {}", a.id)),
                });
            }
            _ => {
                return Ok(Response::error(
                    409,
                    &format!("{} names more than one incident; give more of the id", a.id),
                ));
            }
        };
        let ack = crate::tracker::Ack {
            by: a.by.clone(),
            at: (self.now)(),
            comment: a.comment.clone(),
        };
        self.pipeline.tracker_mut().acknowledge(&id, ack);
        self.changed.insert(id.clone());
        self.commit(Some(wake)).await?;
        let settings = self.pipeline.tracker().settings().clone();
        let node = self
            .pipeline
            .tracker()
            .incident(&id)
            .map(|i| i.node.clone())
            .unwrap_or_default();
        tracing::info!(
            "incident {id} (node {}) acknowledged by {}; no more reminders for it",
            crate::tracker::one_line(&node, 80),
            crate::tracker::one_line(&a.by, 80)
        );
        Ok(match self.pipeline.tracker().incident(&id) {
            Some(i) => Response::json(200, &crate::report::IncidentOut::new(i, &settings)),
            None => Response::error(404, &format!("no open incident {id}")),
        })
    }

    /// Reads the config file again and applies what can change at run
    /// time; a broken file is refused and the running settings stay.
    pub(super) async fn reload(
        &mut self,
        wake: &crate::notify::Wake,
        config_tx: &watch::Sender<Arc<Config>>,
    ) -> Result<ReloadOutcome, String> {
        let path = self.config_path.clone();
        let explicit = self.config_explicit;
        let loaded = tokio::task::spawn_blocking(move || Config::load(&path, explicit))
            .await
            .map_err(|e| e.to_string())?;
        let new = match loaded {
            Ok(c) => c,
            Err(e) => {
                let why = e.to_string();
                tracing::error!("config refused, the running settings stay: {why}");
                self.config_status.last_error = Some(why.clone());
                return Err(why);
            }
        };
        let restart = self.started_config.needs_restart(&new);
        let applied = Arc::new(self.started_config.apply_runtime(&new));
        let changed = *applied != *self.config;
        self.pipeline
            .tracker_mut()
            .set_settings(applied.tracker_settings());
        self.config = applied.clone();
        config_tx.send_replace(applied);
        self.config_status.applied_at = Some((self.now)());
        self.config_status.last_error = None;
        self.config_status.restart_needed.clone_from(&restart);
        if changed {
            tracing::info!("config reloaded from {}", self.config_path.display());
        }
        if !restart.is_empty() {
            tracing::warn!(
                "config changes that need a restart (systemctl restart kubelet-sentinel): {}",
                restart.join(", ")
            );
        }
        let announced = self.announce();
        wake.notify();
        // The mailer rebuilds its transport from the same settings; say now
        // if that cannot work, so `systemctl reload` fails visibly.
        let delivery_problem = crate::notify::EmailTransport::from_config(&self.config.alert)
            .err()
            .map(|e| e.to_string());
        if let Some(p) = &delivery_problem {
            tracing::error!("config applied, but email alerts cannot be sent: {p}");
        }
        Ok(ReloadOutcome {
            path: self.config_path.display().to_string(),
            restart_needed: restart,
            announced,
            delivery_problem,
        })
    }

    async fn prune(&mut self) {
        let store = self.store.clone();
        let before = (self.now)() - self.config.incidents.retention.0;
        let settings = self.pipeline.tracker().settings().clone();
        let silences_before = (self.now)() - SILENCES_KEPT;
        let r = tokio::task::spawn_blocking(move || {
            let n = store.prune(before, &settings)?;
            let s = store.prune_silences(silences_before)?;
            Ok::<_, StoreError>((n, s, store.stats()?))
        })
        .await;
        match r {
            Ok(Ok((n, s, stats))) => {
                self.stats = stats;
                if n > 0 {
                    tracing::info!(
                        "pruned {n} resolved incidents older than [incidents] retention"
                    );
                }
                if s > 0 {
                    tracing::info!("pruned {s} silences that ended over a day ago");
                }
            }
            Ok(Err(e)) => tracing::warn!("pruning: {e}"),
            Err(e) => tracing::warn!("pruning: {e}"),
        }
    }

    fn ask(&mut self, reader: &Reader, c: impl FnOnce(u64) -> ReaderCtl) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let _ = reader.ctl.send(c(id));
        id
    }

    /// The service's loop: until `shutdown`, or (`once`) until the reader
    /// has read everything there is. Commits what it has before it returns.
    pub async fn run(
        mut self,
        source: Source,
        mut reader: Reader,
        mut ch: Channels,
        once: bool,
        shutdown: CancellationToken,
    ) -> Result<(Self, Channels), DaemonError> {
        let mut backoff = Duration::from_millis(200);
        let mut next_prune = Instant::now();
        let mut published = self.snapshot_key();
        ch.status.send_replace(self.snapshot());
        loop {
            if !once && Instant::now() >= next_prune {
                self.prune().await;
                next_prune = Instant::now() + PRUNE_EVERY;
            }
            let quiet_at = if !once && self.caught_up && self.sync_pending.is_none() {
                self.pipeline.next_quiet_at(self.started).map(|wall| {
                    wall_to_instant(wall, (self.now)()).max(self.last_sync + SYNC_SPACING)
                })
            } else {
                None
            };
            let commit_at = self.dirty().then(|| self.last_commit + BATCH_INTERVAL);
            let prune_at = (!once).then_some(next_prune);
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                ev = reader.events.recv() => match ev {
                    Some(ReaderEvent::Entries(v)) => {
                        self.entries(v);
                        backoff = Duration::from_millis(200);
                    }
                    Some(ReaderEvent::Tail { sync }) => {
                        self.caught_up = true;
                        self.pipeline.caught_up();
                        if let Some((id, wall)) = self.sync_pending {
                            if sync >= id {
                                self.sync_pending = None;
                                self.last_sync = Instant::now();
                                self.pipeline.advance_quiet(wall, self.started, &mut self.decisions);
                            }
                        }
                        if !self.announced_after_catch_up {
                            self.announced_after_catch_up = true;
                            self.announce();
                        }
                    }
                    Some(ReaderEvent::Pong(id)) => {
                        if let Some(reply) = self.pongs.remove(&id) {
                            let _ = reply.send(());
                        }
                    }
                    Some(ReaderEvent::Lost(n)) => {
                        tracing::warn!(
                            "{n} journal entries were rotated or vacuumed away before they were read"
                        );
                        self.pipeline.summary_mut().entries_lost += n;
                        self.uncommitted += 1;
                    }
                    Some(ReaderEvent::Warning(w)) => tracing::warn!("{w}"),
                    Some(ReaderEvent::Failed(e)) => {
                        tracing::error!("journal reader failed: {e}; restarting it from the last commit");
                        reader = self.restart_reader(&source, reader, &mut backoff, &shutdown).await?;
                    }
                    None if once => {
                        // Everything available was read: complete held lines
                        // and let each host's clock reach its last entry.
                        self.pipeline.finish(&mut self.decisions);
                        break;
                    }
                    None => {
                        tracing::error!("journal reader ended; restarting it from the last commit");
                        reader = self.restart_reader(&source, reader, &mut backoff, &shutdown).await?;
                    }
                },
                Some(r) = ch.reports.recv() => self.delivered(r).await,
                Some(cmd) = ch.commands.recv() => match cmd {
                    Command::Reload(reply) => {
                        let r = self.reload(&ch.wake, &ch.config).await;
                        let _ = reply.send(r);
                    }
                    Command::Ack(a, reply) => {
                        let r = self.acknowledge(&a, &ch.wake).await?;
                        let _ = reply.send(r);
                    }
                    Command::Wake => ch.wake.notify(),
                },
                Some(c) = ch.control.recv() => match c {
                    Control::Reload => {
                        let _ = self.reload(&ch.wake, &ch.config).await;
                    }
                    Control::Watchdog(reply) => {
                        let id = self.ask(&reader, ReaderCtl::Ping);
                        self.pongs.insert(id, reply);
                    }
                },
                () = sleep_until(quiet_at), if quiet_at.is_some() => {
                    let wall = (self.now)();
                    let id = self.ask(&reader, ReaderCtl::Sync);
                    self.sync_pending = Some((id, wall));
                }
                () = sleep_until(commit_at), if commit_at.is_some() => {}
                () = sleep_until(prune_at), if prune_at.is_some() => {}
            }
            self.apply_decisions();
            // An alert commits at once (then the mailer is woken): alert
            // latency is the one thing the batch interval must not add to.
            if !self.alerts.is_empty()
                || self.uncommitted >= BATCH_ENTRIES
                || (self.dirty() && self.last_commit.elapsed() >= BATCH_INTERVAL)
            {
                self.commit(Some(&ch.wake)).await?;
            }
            let key = self.snapshot_key();
            if key != published {
                published = key;
                ch.status.send_replace(self.snapshot());
            }
        }
        // Whatever was read is committed before the task ends.
        self.commit(Some(&ch.wake)).await?;
        ch.status.send_replace(self.snapshot());
        Ok((self, ch))
    }

    /// What changes the published snapshot: commits and the reader's state.
    fn snapshot_key(&self) -> (u64, bool, u64, Option<Micros>) {
        (
            self.commits,
            self.caught_up,
            self.reader_restarts,
            self.config_status.applied_at,
        )
    }

    async fn restart_reader(
        &mut self,
        source: &Source,
        old: Reader,
        backoff: &mut Duration,
        shutdown: &CancellationToken,
    ) -> Result<Reader, DaemonError> {
        // Commit first: the new reader starts after the committed cursor, and
        // the pipeline state must be the one that cursor belongs to.
        self.commit(None).await?;
        drop(old);
        self.caught_up = false;
        self.sync_pending = None;
        self.pongs.clear();
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return Err(DaemonError::Stopped),
                () = tokio::time::sleep(*backoff) => {}
            }
            *backoff = (*backoff * 2).min(Duration::from_secs(10));
            self.reader_restarts += 1;
            match source(&self.position, true) {
                Ok(r) => return Ok(r),
                Err(e) => tracing::error!(
                    "journal reader: {e}; trying again in {}",
                    human_duration(backoff.as_micros() as Micros)
                ),
            }
        }
    }

    /// Records the reports of deliveries made after ingest stopped
    /// (`run --once`), and commits them.
    pub(super) async fn finish_deliveries(
        &mut self,
        reports: &mut mpsc::UnboundedReceiver<DeliveryReport>,
    ) -> Result<(), StoreError> {
        while let Ok(r) = reports.try_recv() {
            self.delivered(r).await;
        }
        if self.dirty() {
            self.commit(None).await?;
        }
        Ok(())
    }
}

/// The monotonic instant of a wall-clock time.
fn wall_to_instant(wall: Micros, now: Micros) -> Instant {
    Instant::now() + Duration::from_micros((wall - now).clamp(0, 365 * 86_400 * SECOND) as u64)
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The hosts shown in `status` and the metrics: the `max` whose entries are
/// newest, so a remote writer inventing host names cannot grow them past
/// `[incidents] max_nodes` (a collector has one a host).
fn newest_hosts<'a>(
    hosts: impl Iterator<Item = (&'a str, Micros)>,
    max: usize,
) -> std::collections::BTreeMap<String, Micros> {
    let mut all: Vec<(&str, Micros)> = hosts.filter(|(h, _)| !h.is_empty()).collect();
    if all.len() > max {
        all.select_nth_unstable_by_key(max, |(_, t)| std::cmp::Reverse(*t));
        all.truncate(max);
    }
    all.into_iter().map(|(h, t)| (h.to_string(), t)).collect()
}

#[cfg(test)]
mod host_tests {
    use super::*;

    #[test]
    fn the_hosts_shown_are_bounded_newest_first() {
        let hosts = [("a", 1), ("b", 5), ("", 9), ("c", 3), ("d", 4)];
        let shown = newest_hosts(hosts.into_iter(), 2);
        assert_eq!(
            shown.into_iter().collect::<Vec<_>>(),
            [("b".to_string(), 5), ("d".to_string(), 4)]
        );
        assert_eq!(newest_hosts(hosts.into_iter(), 10).len(), 4);
    }
}
