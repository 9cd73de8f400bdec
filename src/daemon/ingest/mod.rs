//! The ingest task: the only writer of incidents, tracker state and the
//! cursor. It takes batches from the journal reader, runs them through the
//! pipeline, queues alerts, and commits everything a batch changed in one
//! transaction. It applies config reloads (it owns the tracker's settings)
//! and records deliveries and acknowledgements (it owns the incidents).
//!
//! This file is the loop and the commit policy; each other job is a part
//! that takes only what it reads or changes (the tracker, the store, the
//! settings), never the whole of ingest:
//!
//! | part | job | takes |
//! |---|---|---|
//! | [`supervise`] | the reader's questions (`Sync`, `Ping`) and its restart | the reader's control |
//! | [`admission`] | which channels an alert goes to, `max_age`, late announcements (pure) | the config, the alert's facts |
//! | [`reload`] | reading the config again; ingest applies what it returns | the config file |
//! | [`acks`] | acknowledgements | `&mut Tracker` |
//! | [`deliveries`] | deliveries the delivery tasks recorded, told to the tracker | `&mut Tracker` |
//! | [`prune`] | old incidents and ended silences, hourly | `&Store` |
//! | [`retries`] | the per-node retry counters | the incidents written |
//! | [`snapshot`] | the status snapshot it publishes | borrows of the parts |
//!
//! An alert decision carries what admission needs (its incident's node,
//! hosts and whether it was announced): queueing it looks nothing up.
//! A delivery is recorded by the task that made it (the store's
//! `deliveries` tree), not by writing its incident again.
//!
//! Time (design section 4.1): entry time drives each host's clock through
//! the pipeline. Wall time moves a host's clock only for quiet the journal
//! confirms (see [`supervise`]). A backlog, a stopped process or a late
//! host therefore never splits an outage.

mod acks;
mod admission;
mod alerts;
mod cadence;
mod deliveries;
mod events;
mod prune;
mod reload;
mod retries;
mod snapshot;
mod supervise;

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use self::admission::Admission;
use self::prune::Pruner;
use self::reload::{ReloadError, Reloader};
use self::retries::RetryCounts;
use self::supervise::Supervisor;
use super::{Control, DaemonError, Source};
use crate::config::Config;
use crate::journal::{Reader, ReaderEvent};
use crate::notify::{Wake, sleep_until};
use crate::status::StatusSnapshot;
use crate::status::{AckError, AckRequest, Acknowledged, Command, ReloadOutcome};
use crate::status::{DeliveryReport, Now};
use crate::store::{Batch, OutboxEntry, Stats, StatsDelta, Store, StoreError};
use sentinel_core::model::{GroupFiles, LateRead, Position};
use sentinel_core::pipeline::{Changes, Pipeline};
use sentinel_core::time::Micros;
use sentinel_core::tracker::{Decision, Incident};

/// A batch commits after this many entries…
const BATCH_ENTRIES: u64 = 20_000;
/// Entries pushed between two looks at the shutdown token.
const SHUTDOWN_CHECK: u64 = 64;
/// How soon the reader is asked to look again when a tail held back a host
/// whose journal had just moved (see `Tracker::judge_silence_at_tail`).
const SILENCE_RECHECK: Micros = 2 * sentinel_core::time::SECOND;

/// Where ingest reports to and hears from.
pub(super) struct Channels {
    pub status: watch::Sender<StatusSnapshot>,
    pub config: watch::Sender<Arc<Config>>,
    pub wake: Wake,
    pub commands: mpsc::Receiver<Command>,
    pub control: mpsc::Receiver<Control>,
    pub reports: mpsc::UnboundedReceiver<DeliveryReport>,
}

/// How long ingest runs: `Once` until the reader has read everything there
/// is (`run --once`), `Follow` until shutdown. The reader's mode, the same.
pub(crate) use crate::journal::Mode;

/// What the next commit writes, besides the incidents in `changed`.
#[derive(Debug, Default)]
struct Pending {
    decisions: Vec<Decision>,
    /// Stored incidents loaded to change (their endpoint incident).
    extra: Vec<Incident>,
    /// Stored node incidents whose endpoint incident changed: `(id, by)`.
    covers: Vec<(String, Option<String>)>,
    alerts: Vec<OutboxEntry>,
    /// Incidents an alert was queued for since the last commit.
    announced: BTreeSet<String>,
    /// The tracker's state changed outside a batch (a delivery recorded).
    state_changed: bool,
    /// An incident opened, resolved, was forgotten or covered, or an alert
    /// was queued, since the last commit (not only updates).
    marked: bool,
    stats: StatsDelta,
    /// Groups whose cursor moved since the last commit.
    moved_groups: BTreeSet<String>,
    /// Groups whose files (or late file's progress) changed since.
    files_changed: BTreeSet<String>,
    /// Entries read since the last commit.
    entries: u64,
}

/// The commits made, for the batch interval and `status`.
#[derive(Debug)]
struct Commits {
    count: u64,
    last: Instant,
    last_at: Option<Micros>,
}

/// What one reader event asks of the loop.
enum Flow {
    Continue,
    /// `run --once` read everything.
    Finished,
    /// The reader failed or ended: start another.
    Restart,
}

pub(super) struct Ingest {
    /// The settings in force (runtime keys as last applied).
    config: Arc<Config>,
    reloader: Reloader,
    store: Store,
    pipeline: Pipeline,
    now: Now,
    /// Incidents (open or resolved) to write with the next commit.
    changed: BTreeSet<String>,
    pending: Pending,
    commits: Commits,
    stats: Stats,
    position: Position,
    /// The last cursor read (any group), for `status`.
    cursor: Option<String>,
    caught_up: bool,
    /// A tail held back a host that would be silent, its journal having
    /// just moved: the wall time at which to look again (`status` says
    /// not caught up until then).
    silence_recheck: Option<Micros>,
    supervisor: Supervisor,
    admission: Admission,
    retries: RetryCounts,
    pruner: Pruner,
    started: Micros,
    journal: String,
    /// Entries dated more than a day ahead, as far as they were logged.
    future_logged: u64,
    /// The starts judged since the service started.
    start_stats: crate::status::StartStats,
    /// What was told of each open incident as journal events, and where
    /// events go.
    told: events::Told,
    events: crate::notify::events::Events,
}

/// What the service starts ingest with.
pub(super) struct Start {
    pub config: Arc<Config>,
    pub config_path: std::path::PathBuf,
    pub config_explicit: bool,
    pub store: Store,
    pub pipeline: Pipeline,
    pub position: Position,
    pub stats: Stats,
    /// The journal read, in words.
    pub journal: String,
    pub now: Now,
}

impl Ingest {
    pub(super) fn new(s: Start) -> Self {
        let started = (s.now)();
        let retries = RetryCounts::new(
            s.pipeline
                .tracker()
                .open_incidents()
                .map(|i| (i.id.clone(), i.counted_retries())),
        );
        let tracker = s.pipeline.tracker();
        let told = events::Told::resumed(tracker.open_incidents(), tracker.settings());
        Self {
            reloader: Reloader::new(s.config.clone(), s.config_path, s.config_explicit, started),
            config: s.config,
            store: s.store,
            pipeline: s.pipeline,
            now: s.now,
            changed: BTreeSet::new(),
            pending: Pending::default(),
            commits: Commits {
                count: 0,
                last: Instant::now(),
                last_at: None,
            },
            stats: s.stats,
            cursor: s
                .position
                .cursor
                .clone()
                .or_else(|| s.position.groups.values().next().cloned()),
            position: s.position,
            caught_up: false,
            silence_recheck: None,
            supervisor: Supervisor::new(),
            admission: Admission::default(),
            retries,
            pruner: Pruner::new(),
            started,
            journal: s.journal,
            future_logged: 0,
            start_stats: crate::status::StartStats::default(),
            told,
            events: crate::notify::events::Events::from_env(),
        }
    }

    /// Takes one batch of entries from the reader.
    ///
    /// A shutdown stops it between entries (every [`SHUTDOWN_CHECK`]): what
    /// was pushed is committed with its cursor, the rest is read again at
    /// the next start, so a slow batch (a large outage) never holds the
    /// exit.
    /// Returns how many were taken.
    fn entries(
        &mut self,
        entries: Vec<sentinel_core::model::Entry>,
        shutdown: &CancellationToken,
    ) -> u64 {
        self.pipeline.set_now((self.now)());
        let refused = self.pipeline.summary().hosts_refused;
        let given_way = self.pipeline.summary().hosts_given_way;
        let mut n = 0;
        for e in entries {
            if n % SHUTDOWN_CHECK == 0 && n > 0 && shutdown.is_cancelled() {
                break;
            }
            n += 1;
            if let Some(c) = &e.cursor {
                self.cursor = Some(c.clone());
                if let Some(g) = self.position.advance(&e) {
                    if !self.pending.moved_groups.contains(g) {
                        self.pending.moved_groups.insert(g.to_string());
                    }
                }
            }
            self.pipeline.push(e, &mut self.pending.decisions);
        }
        self.log_future_dated();
        self.log_refused(refused);
        self.log_given_way(given_way);
        self.pipeline.stamp_arrivals((self.now)());
        self.pending.entries += n;
        self.caught_up = false;
        n
    }

    /// A batch of a late file's entries (see `GroupFiles`): taken as any,
    /// and how far into the file they reach kept with the next commit.
    fn late_entries(
        &mut self,
        group: &str,
        late: LateRead,
        entries: Vec<sentinel_core::model::Entry>,
        shutdown: &CancellationToken,
    ) {
        let sent = entries.len() as u64;
        let n = self.entries(entries, shutdown);
        let g = self.position.files.entry(group.to_string()).or_default();
        g.late = Some(LateRead {
            taken: late.taken - (sent - n),
            ..late
        });
        self.pending.files_changed.insert(group.to_string());
    }

    /// Turns the tracker's decisions into incident writes and alerts.
    fn apply_decisions(&mut self) {
        let decisions = std::mem::take(&mut self.pending.decisions);
        // Incidents the batch ends with forgotten (an endpoint incident a
        // late host's member replaced): their alerts are not queued.
        let mut gone: BTreeSet<&str> = BTreeSet::new();
        for d in &decisions {
            match d {
                Decision::ForgetIncident { id } => {
                    gone.insert(id);
                }
                Decision::OpenIncident { id }
                | Decision::UpdateIncident { id }
                | Decision::ResolveIncident { id } => {
                    gone.remove(id.as_str());
                }
                Decision::QueueAlert { .. } | Decision::CoverIncident { .. } => {}
            }
        }
        let gone: BTreeSet<String> = gone.into_iter().map(str::to_string).collect();
        self.pending.marked |= decisions
            .iter()
            .any(|d| !matches!(d, Decision::UpdateIncident { .. }));
        for d in decisions {
            match d {
                Decision::OpenIncident { id } => {
                    self.pending.stats.opened += 1;
                    self.changed.insert(id);
                }
                Decision::UpdateIncident { id } => {
                    self.admission.touch(&id);
                    if self.admission.is_withheld(&id) {
                        self.announce_live(&id);
                    }
                    self.changed.insert(id);
                }
                Decision::ResolveIncident { id } => {
                    self.admission.release(&id);
                    self.changed.insert(id);
                }
                Decision::ForgetIncident { id } => {
                    self.admission.release(&id);
                    self.changed.remove(&id);
                    self.pending.stats.forgotten += 1;
                }
                Decision::QueueAlert { id, .. } if gone.contains(&id) => {}
                Decision::QueueAlert {
                    id,
                    kind,
                    at,
                    about,
                } => self.queue_alert(&id, kind, at, &about),
                Decision::CoverIncident { id, by } => {
                    if self.pipeline.tracker().incident(&id).is_some() {
                        self.changed.insert(id);
                    } else {
                        self.pending.covers.push((id, by));
                    }
                }
            }
        }
        self.announce_followed();
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

    /// Hosts whose records gave way past `[fleet] max_hosts`, logged at
    /// the first and as their count doubles.
    fn log_given_way(&self, before: u64) {
        let s = self.pipeline.summary();
        let now = s.hosts_given_way;
        if now > before && (before == 0 || now.ilog2() > before.ilog2()) {
            tracing::warn!(
                "{now} hosts' records gave way to new hosts past [fleet] max_hosts ({}): the \
                 quietest with no open incident go first (a host seen again starts afresh); \
                 raise max_hosts if the fleet has more hosts than that",
                self.pipeline.tracker().settings().max_hosts,
            );
        }
    }

    /// Entries of hosts past `[fleet] max_hosts`, logged at the first and
    /// as their count doubles.
    fn log_refused(&self, before: u64) {
        let s = self.pipeline.summary();
        let now = s.hosts_refused;
        if now > before && (before == 0 || now.ilog2() > before.ilog2()) {
            tracing::warn!(
                "{now} entries of hosts past [fleet] max_hosts ({}) not read (every host had an \
                 open incident), the first of host {}; raise max_hosts to read them",
                self.pipeline.tracker().settings().max_hosts,
                s.first_refused_host.as_deref().unwrap_or("?")
            );
        }
    }

    /// Loads the stored node incidents whose endpoint incident changed and
    /// changes them, for this commit.
    async fn load_covered(&mut self) {
        let covers = std::mem::take(&mut self.pending.covers);
        if covers.is_empty() {
            return;
        }
        let store = self.store.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            covers
                .into_iter()
                .filter_map(|(id, by)| match store.incident(&id) {
                    Ok(Some(mut i)) => {
                        i.set_covered_by(by);
                        Some(i)
                    }
                    // Pruned since: nothing to change.
                    Ok(None) => None,
                    Err(e) => {
                        tracing::warn!(incident = %id, "its endpoint incident is not recorded on it: {e}");
                        None
                    }
                })
                .collect::<Vec<Incident>>()
        })
        .await
        .unwrap_or_default();
        for i in loaded {
            match self.pending.extra.iter_mut().find(|e| e.id == i.id) {
                Some(e) => e.set_covered_by(i.covered_by().map(str::to_string)),
                None => self.pending.extra.push(i),
            }
        }
    }

    /// Writes what changed since the last commit, and the cursor, in one
    /// transaction. Only after it returns is the batch's effect durable, and
    /// only then is the mailer woken.
    pub(super) async fn commit(&mut self, wake: Option<&Wake>) -> Result<(), StoreError> {
        self.apply_decisions();
        self.load_covered().await;
        let settings = self.pipeline.tracker().settings().clone();
        let Changes {
            forgotten: forget,
            resolved: mut incidents,
            origins,
            members,
            held,
            starts,
            starts_judged,
        } = self.pipeline.take_changes();
        for s in &starts_judged {
            self.start_stats.judged(s);
        }
        for i in &forget {
            self.retries.forget(&i.id, &i.node);
            self.told.forget(&i.id);
        }
        let resolved: BTreeSet<String> = incidents.iter().map(|i| i.id.clone()).collect();
        for i in &incidents {
            self.pending.stats.resolved.push(i.verdict(&settings));
        }
        prune::log_closed_to_make_room(&incidents, &forget, &settings);
        for id in &self.changed {
            if resolved.contains(id) {
                continue;
            }
            if let Some(i) = self.pipeline.tracker().incident(id) {
                incidents.push(i.clone());
            }
        }
        for e in std::mem::take(&mut self.pending.extra) {
            if !incidents.iter().any(|i| i.id == e.id) {
                incidents.push(e);
            }
        }
        for i in &incidents {
            self.retries
                .count(&i.id, &i.node, i.counted_retries(), i.resolved_at.is_some());
        }
        let state =
            serde_json::to_vec(&self.pipeline.state()).map_err(|source| StoreError::Encode {
                path: self.store.path().display().to_string(),
                what: "serializing the state",
                source,
            })?;
        let alerting = !self.pending.alerts.is_empty();
        let group_cursors = std::mem::take(&mut self.pending.moved_groups)
            .into_iter()
            .filter_map(|g| self.position.groups.get(&g).map(|c| (g, c.clone())))
            .collect();
        let group_files = std::mem::take(&mut self.pending.files_changed)
            .into_iter()
            .filter_map(|g| self.position.files.get(&g).map(|f| (g, f.clone())))
            .collect();
        let batch = Batch {
            cursor: self.position.cursor.clone(),
            group_cursors,
            group_files,
            state: Some(state),
            incidents,
            origins,
            members,
            held,
            starts,
            alerts: std::mem::take(&mut self.pending.alerts),
            stats: std::mem::take(&mut self.pending.stats),
            forget,
        };
        let store = self.store.clone();
        let batch = tokio::task::spawn_blocking(move || store.commit(&batch).map(|()| batch))
            .await
            .map_err(|e| StoreError::interrupted(self.store.path(), "the commit failed", &e))??;
        self.stats.add(&batch.stats);
        // Durable now: told as journal events.
        let mut told = self.told.events(&batch.incidents, &settings);
        told.extend(
            starts_judged
                .iter()
                .map(crate::notify::events::Event::start),
        );
        self.events.write(&told);
        self.changed.clear();
        self.pending.announced.clear();
        self.pending.state_changed = false;
        self.pending.marked = false;
        self.pending.entries = 0;
        self.commits.last = Instant::now();
        self.commits.count += 1;
        self.commits.last_at = Some((self.now)());
        if alerting {
            if let Some(w) = wake {
                w.notify();
            }
        }
        Ok(())
    }

    /// An operator's acknowledgement: recorded by the tracker, committed at
    /// once; a miss is told apart (resolved, or no such incident) by the
    /// store.
    async fn acknowledge(
        &mut self,
        a: &AckRequest,
        wake: &Wake,
    ) -> Result<Result<Acknowledged, AckError>, StoreError> {
        let id = match acks::acknowledge(self.pipeline.tracker_mut(), a, (self.now)()) {
            acks::Acked::Open(id) => id,
            acks::Acked::Refused(e) => return Ok(Err(e)),
            acks::Acked::NotOpen => return Ok(Err(acks::not_open(&self.store, &a.id).await?)),
        };
        self.changed.insert(id.clone());
        self.commit(Some(wake)).await?;
        let tracker = self.pipeline.tracker();
        let Some(i) = tracker.incident(&id) else {
            return Ok(Err(AckError::NotOpen(id)));
        };
        self.events.write(&[crate::notify::events::Event::incident(
            crate::notify::events::EventType::Acknowledged,
            i,
            tracker.settings(),
        )]);
        tracing::info!(
            "incident {id} (node {}) acknowledged by {}; no more reminders for it",
            sentinel_core::tracker::one_line(&i.node, 80),
            sentinel_core::tracker::one_line(&a.by, 80)
        );
        Ok(Ok(Acknowledged {
            incident: i.clone(),
            settings: tracker.settings().clone(),
        }))
    }

    /// The status snapshot it publishes.
    fn snapshot(&self) -> StatusSnapshot {
        snapshot::snapshot(&snapshot::Of {
            pipeline: &self.pipeline,
            config: &self.config,
            config_status: self.reloader.status(),
            stats: &self.stats,
            retries_by_node: self.retries.by_node(),
            started: self.started,
            journal: &self.journal,
            cursor: self.cursor.as_deref(),
            caught_up: self.caught_up && self.silence_recheck.is_none(),
            commits: self.commits.count,
            last_commit_at: self.commits.last_at,
            reader_restarts: self.supervisor.restarts(),
            starts: &self.start_stats,
        })
    }

    /// What changes the published snapshot: commits and the reader's state.
    fn snapshot_key(&self) -> (u64, bool, u64, Option<Micros>) {
        (
            self.commits.count,
            self.caught_up,
            self.supervisor.restarts(),
            self.reloader.status().applied_at,
        )
    }

    /// Records the reports of deliveries made after ingest stopped
    /// (`run --once`) on the tracker, and commits its state.
    pub(in crate::daemon) async fn finish_deliveries(
        &mut self,
        reports: &mut mpsc::UnboundedReceiver<DeliveryReport>,
    ) -> Result<(), StoreError> {
        while let Ok(r) = reports.try_recv() {
            self.pending.state_changed |= deliveries::record(self.pipeline.tracker_mut(), &r);
        }
        if self.dirty() {
            self.commit(None).await?;
        }
        Ok(())
    }

    /// Reads the config file again and applies what can change at run
    /// time; a broken file is refused and the running settings stay.
    async fn reload(
        &mut self,
        wake: &Wake,
        config_tx: &watch::Sender<Arc<Config>>,
    ) -> Result<ReloadOutcome, ReloadError> {
        let new = self.reloader.reload(&self.config, (self.now)()).await?;
        self.pipeline
            .tracker_mut()
            .set_settings(new.config.tracker_settings());
        self.config = new.config.clone();
        config_tx.send_replace(new.config);
        if new.changed {
            let path = self.reloader.path().display();
            tracing::info!(path = %path, "config reloaded from {path}");
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
            path: self.reloader.path().display().to_string(),
            restart_needed: new.restart,
            announced,
            delivery_problem,
        })
    }

    /// The service's loop: until `shutdown`, or (`Mode::Once`) until the
    /// reader has read everything there is. Commits what it has before it
    /// returns.
    pub(super) async fn run(
        mut self,
        source: Source,
        mut reader: Reader,
        mut ch: Channels,
        mode: Mode,
        shutdown: CancellationToken,
    ) -> Result<(Self, Channels), DaemonError> {
        let follow = mode == Mode::Follow;
        let mut published = self.snapshot_key();
        ch.status.send_replace(self.snapshot());
        loop {
            if follow && self.pruner.due() {
                let settings = self.pipeline.tracker().settings().clone();
                let retention = self.config.incidents.retention.0;
                let now = (self.now)();
                if let Some(stats) = self
                    .pruner
                    .prune(&self.store, now, retention, settings)
                    .await
                {
                    self.stats = stats;
                }
            }
            let quiet_at = if follow && self.caught_up {
                let due = self.pipeline.next_quiet_at(self.started);
                let due = match (due, self.silence_recheck) {
                    (Some(d), Some(r)) => Some(d.min(r)),
                    (d, r) => d.or(r),
                };
                self.supervisor.quiet_at(due, (self.now)())
            } else {
                None
            };
            let commit_at = self.commit_at();
            let prune_at = follow.then(|| self.pruner.next());
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                ev = reader.events.recv() => match self.event(ev, mode, &shutdown) {
                    Flow::Continue => {}
                    Flow::Finished => break,
                    Flow::Restart => {
                        reader = self.restart_reader(&source, reader, &shutdown).await?;
                    }
                },
                Some(r) = ch.reports.recv() => {
                    self.pending.state_changed |= deliveries::record(self.pipeline.tracker_mut(), &r);
                }
                Some(cmd) = ch.commands.recv() => self.command(cmd, &ch).await?,
                Some(c) = ch.control.recv() => match c {
                    Control::Reload => {
                        // Refused or not, it is logged and shown in `status`.
                        let _ = self.reload(&ch.wake, &ch.config).await;
                    }
                    Control::Watchdog(reply) => self.supervisor.ping(&reader.ctl, reply),
                },
                () = sleep_until(quiet_at), if quiet_at.is_some() => {
                    self.supervisor.sync(&reader.ctl, (self.now)());
                }
                () = sleep_until(commit_at), if commit_at.is_some() => {}
                () = sleep_until(prune_at), if prune_at.is_some() => {}
            }
            self.apply_decisions();
            // An alert commits at once (then the mailer is woken): alert
            // latency is the one thing the batch interval must not add to.
            if !self.pending.alerts.is_empty()
                || self.pending.entries >= BATCH_ENTRIES
                || self.commit_at().is_some_and(|at| at <= Instant::now())
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

    /// One event from the reader (`None`: it ended).
    fn event(&mut self, ev: Option<ReaderEvent>, mode: Mode, shutdown: &CancellationToken) -> Flow {
        match ev {
            Some(ReaderEvent::Entries(v)) => {
                self.entries(v, shutdown);
                self.supervisor.healthy();
            }
            Some(ReaderEvent::Late {
                group,
                file,
                entries,
                taken,
            }) => {
                self.late_entries(&group, LateRead { file, taken }, entries, shutdown);
                self.supervisor.healthy();
            }
            Some(ReaderEvent::Files { group, ids }) => {
                self.position
                    .files
                    .insert(group.to_string(), GroupFiles { ids, late: None });
                self.pending.files_changed.insert(group.to_string());
            }
            Some(ReaderEvent::Tail { sync }) => {
                self.caught_up = true;
                self.pipeline.caught_up();
                let held = self
                    .pipeline
                    .judge_silence_at_tail(&mut self.pending.decisions);
                self.silence_recheck = held.then(|| (self.now)() + SILENCE_RECHECK);
                if let Some(wall) = self.supervisor.tail(sync) {
                    self.pipeline
                        .advance_quiet(wall, self.started, &mut self.pending.decisions);
                }
                if self.admission.first_catch_up() {
                    // What this tail decided is queued first, so the
                    // incidents it alerted are not announced once more.
                    self.apply_decisions();
                    self.announce();
                }
            }
            Some(ReaderEvent::Pong(id)) => self.supervisor.pong(id),
            Some(ReaderEvent::Lost(n)) => {
                tracing::warn!(
                    lost = n,
                    "{n} journal entries were rotated or vacuumed away before they were read"
                );
                self.pipeline.summary_mut().entries_lost += n;
                self.pending.entries += 1;
            }
            Some(ReaderEvent::Warning(w)) => {
                if w.missing > 0 {
                    // A damaged file: counted, and kept with the next commit.
                    self.pipeline.summary_mut().entries_missing += w.missing;
                    self.pending.entries += 1;
                }
                tracing::warn!("{w}");
            }
            Some(ReaderEvent::Activity { host, at }) => {
                self.pipeline.set_now((self.now)());
                self.pipeline
                    .activity(&host, at, &mut self.pending.decisions);
            }
            Some(ReaderEvent::Failed(e)) => {
                tracing::error!("journal reader failed: {e}; restarting it from the last commit");
                return Flow::Restart;
            }
            None if mode == Mode::Once => {
                // Everything available was read: complete held lines and
                // let each host's clock reach its last entry.
                self.pipeline.finish(&mut self.pending.decisions);
                return Flow::Finished;
            }
            None => {
                tracing::error!("journal reader ended; restarting it from the last commit");
                return Flow::Restart;
            }
        }
        Flow::Continue
    }

    /// A command from the query server.
    async fn command(&mut self, cmd: Command, ch: &Channels) -> Result<(), StoreError> {
        match cmd {
            Command::Reload(reply) => {
                let r = self.reload(&ch.wake, &ch.config).await;
                let _ = reply.send(r.map_err(|e| e.to_string()));
            }
            Command::Ack(a, reply) => {
                let r = self.acknowledge(&a, &ch.wake).await?;
                let _ = reply.send(r);
            }
            Command::Wake => ch.wake.notify(),
        }
        Ok(())
    }

    async fn restart_reader(
        &mut self,
        source: &Source,
        old: Reader,
        shutdown: &CancellationToken,
    ) -> Result<Reader, DaemonError> {
        // Commit first: the new reader starts after the committed cursor, and
        // the pipeline state must be the one that cursor belongs to.
        self.commit(None).await?;
        drop(old);
        self.caught_up = false;
        self.silence_recheck = None;
        self.supervisor
            .restart(source, &self.position, shutdown)
            .await
    }
}
