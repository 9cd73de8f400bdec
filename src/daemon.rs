//! `kubelet-sentinel run`: wiring, signals, `sd_notify`, shutdown.
//!
//! One main loop owns the pipeline. The journal lives on its own thread
//! (its handle is !Send) and hands over batches through a bounded channel;
//! the query socket is served from another thread that only reads sled and a
//! snapshot of [`Live`]. Effects and the cursor commit together: whatever a
//! batch of entries changed, and the cursor of its last entry, go into one
//! sled transaction, so after a crash the service resumes exactly after the
//! last committed batch.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::api::{self, Live, SharedLive};
use crate::config::{Config, StartAt};
use crate::journal::SourceError;
use crate::journal::sd::{self, Msg, Spec, Start, Target};
use crate::notify::{Delivered, Delivery, Mailer, OutboxEntry};
use crate::pipeline::Pipeline;
use crate::store::{Batch, Store, StoreError};
use crate::time::{Micros, SECOND, now};
use crate::tracker::Decision;

/// A batch commits after this many entries…
const BATCH_ENTRIES: u64 = 20_000;
/// …or this long after the previous commit, whichever comes first.
const BATCH_INTERVAL: Duration = Duration::from_millis(500);
/// A line held for continuations is complete once its stream is this quiet.
/// journald stores the lines of one kubelet write together, so the
/// continuations of a caught-up reader's last line come within this.
const HOLD_LINES: Duration = Duration::from_millis(50);
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Journal(#[from] SourceError),
    #[error("query socket {path}: {source}")]
    Socket {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Alert(#[from] crate::notify::SetupError),
    #[error("metrics listener {addr}: {source}")]
    Metrics {
        addr: String,
        #[source]
        source: std::io::Error,
    },
}

/// Set by signal handlers (or by tests): stop, and reload the config.
#[derive(Debug, Clone, Default)]
pub struct Control {
    pub stop: Arc<AtomicBool>,
    pub reload: Arc<AtomicBool>,
}

impl Control {
    /// SIGTERM and SIGINT set `stop`; SIGHUP sets `reload`.
    pub fn from_signals() -> std::io::Result<Self> {
        let c = Self::default();
        for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            signal_hook::flag::register(sig, c.stop.clone())?;
        }
        signal_hook::flag::register(signal_hook::consts::SIGHUP, c.reload.clone())?;
        Ok(c)
    }
}

#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Process everything available, then exit.
    pub once: bool,
    /// The config file, for reloads.
    pub config_path: Option<PathBuf>,
}

/// Which journal the config names.
#[must_use]
pub fn target_of(config: &Config) -> Target {
    if !config.journal.namespace.is_empty() {
        Target::Namespace(config.journal.namespace.clone())
    } else if !config.journal.directory.is_empty() {
        Target::Directory(PathBuf::from(&config.journal.directory))
    } else {
        Target::System
    }
}

/// When this machine booted, from `/proc/uptime`.
fn boot_time() -> Option<Micros> {
    let up = std::fs::read_to_string("/proc/uptime").ok()?;
    let secs: f64 = up.split_whitespace().next()?.parse().ok()?;
    Some(now() - (secs * SECOND as f64) as Micros)
}

fn first_start(at: StartAt) -> Start {
    match at {
        StartAt::All => Start::Head,
        StartAt::Now => Start::Tail,
        StartAt::Boot => boot_time().map_or(Start::Head, |t| Start::Realtime(t.max(0) as u64)),
    }
}

fn notify(state: &[(&str, &str)]) {
    let _ = systemd::daemon::notify(state.iter());
}

struct Reader {
    rx: Receiver<Msg>,
    handle: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl Reader {
    fn start(config: &Config, cursor: Option<&str>, follow: bool) -> Result<Self, SourceError> {
        let start = cursor.map_or_else(
            || first_start(config.journal.start_at),
            |c| Start::After(c.to_string()),
        );
        let spec = Spec {
            target: target_of(config),
            filter: config.filter(),
            start,
            follow,
            batch: 1024,
        };
        let stop = Arc::new(AtomicBool::new(false));
        // 16 batches in flight at most: the reader waits when we are slow.
        let (rx, handle) = sd::spawn(spec, stop.clone(), 16)?;
        Ok(Self {
            rx,
            handle: Some(handle),
            stop,
        })
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Unblock a reader waiting on a full channel.
        while self.rx.try_recv().is_ok() {}
        if let Some(h) = self.handle.take() {
            while !h.is_finished() {
                while self.rx.try_recv().is_ok() {}
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = h.join();
        }
    }
}

/// The service state the loop carries between commits.
struct Service {
    config: Config,
    store: Store,
    pipeline: Pipeline,
    live: SharedLive,
    decisions: Vec<Decision>,
    changed: BTreeSet<String>,
    /// Alerts raised since the last commit.
    alerts: Vec<OutboxEntry>,
    mail_enabled: bool,
    /// Tells the mailer an alert was committed.
    wake_mailer: Option<std::sync::mpsc::Sender<()>>,
    /// The cursor of the last entry pushed into the pipeline.
    cursor: Option<String>,
    uncommitted: u64,
    last_commit: Instant,
    caught_up: bool,
}

impl Service {
    fn take_decisions(&mut self) {
        let decisions = std::mem::take(&mut self.decisions);
        for d in decisions {
            match d {
                Decision::OpenIncident { id }
                | Decision::UpdateIncident { id }
                | Decision::ResolveIncident { id } => {
                    self.changed.insert(id);
                }
                Decision::QueueAlert { id, kind, at } => self.queue_alert(id, kind, at),
            }
        }
    }

    fn queue_alert(&mut self, id: String, kind: crate::tracker::AlertKind, at: Micros) {
        let node = self
            .pipeline
            .tracker()
            .incident(&id)
            .map(|i| i.node.clone())
            .unwrap_or_default();
        if !self.mail_enabled {
            tracing::info!(
                "alert for {node} ({kind:?}) recorded; [alert] to is empty, nothing is mailed"
            );
            return;
        }
        let t = now();
        if t - at > self.config.alert.max_age.0 {
            tracing::info!(
                "alert for {node} ({kind:?}) is older than [alert] max_age: recorded, not mailed"
            );
            return;
        }
        self.changed.insert(id.clone());
        self.alerts.push(OutboxEntry {
            seq: 0,
            kind,
            incident: id,
            node,
            raised_at: at,
            queued_at: t,
            attempts: 0,
            next_attempt_at: t,
            last_error: None,
        });
    }

    /// The mailer delivered: record when (open incidents through the
    /// tracker, so the next commit keeps it; resolved ones directly).
    fn delivered(&mut self, d: Delivered) {
        for id in d.incidents {
            if self
                .pipeline
                .tracker()
                .incident(&id)
                .is_some_and(|i| i.resolved_at.is_none())
            {
                self.pipeline.tracker_mut().mark_alerted(&id, d.at);
                self.changed.insert(id);
            } else if let Err(e) = self.store.mark_alerted(&id, d.at) {
                tracing::warn!("recording the delivery for {id}: {e}");
            }
        }
    }

    fn dirty(&self) -> bool {
        self.uncommitted > 0 || !self.changed.is_empty()
    }

    /// Writes what changed since the last commit, and the cursor, in one
    /// transaction. Only after it returns is the batch's effect durable.
    fn commit(&mut self) -> Result<(), StoreError> {
        self.take_decisions();
        let mut incidents = self.pipeline.tracker_mut().take_resolved();
        let resolved: BTreeSet<String> = incidents.iter().map(|i| i.id.clone()).collect();
        for id in &self.changed {
            if resolved.contains(id) {
                continue;
            }
            if let Some(i) = self.pipeline.tracker().incident(id) {
                incidents.push(i.clone());
            }
        }
        let batch = Batch {
            cursor: self.cursor.clone(),
            state: Some(self.pipeline.state()),
            incidents,
            alerts: std::mem::take(&mut self.alerts),
        };
        self.store.commit(&batch)?;
        self.changed.clear();
        self.uncommitted = 0;
        self.last_commit = Instant::now();
        self.update_live(true);
        Ok(())
    }

    fn update_live(&self, committed: bool) {
        let Ok(mut l) = self.live.lock() else { return };
        l.cursor.clone_from(&self.cursor);
        l.summary = self.pipeline.summary().clone();
        l.last_entry_at = l.summary.last_at;
        l.caught_up = self.caught_up;
        l.open_incidents = self.pipeline.tracker().open_incidents().count();
        l.retries_by_node = self
            .pipeline
            .tracker()
            .open_incidents()
            .map(|i| (i.node.clone(), i.counted_retries()))
            .collect();
        l.settings = self.pipeline.tracker().settings().clone();
        if committed {
            l.commits += 1;
            l.last_commit_at = Some(now());
        }
    }

    fn status_line(&self) -> String {
        let s = self.pipeline.summary();
        let open = self.pipeline.tracker().open_incidents().count();
        format!(
            "{} {}: {} entries read, {} open incident{}",
            if self.caught_up {
                "following"
            } else {
                "catching up on"
            },
            target_of(&self.config),
            s.entries,
            open,
            if open == 1 { "" } else { "s" }
        )
    }

    fn reload(&mut self, path: &Path) {
        match Config::load(path, true) {
            Ok(new) => {
                let restart = self.config.needs_restart(&new);
                if !restart.is_empty() {
                    tracing::warn!(
                        "config reloaded; these changes need a restart and are not applied yet: {}",
                        restart.join(", ")
                    );
                }
                self.pipeline
                    .tracker_mut()
                    .set_settings(new.tracker_settings());
                let keep = (
                    self.config.journal.clone(),
                    self.config.store.clone(),
                    self.config.api.clone(),
                );
                self.config = Config {
                    journal: keep.0,
                    store: keep.1,
                    api: keep.2,
                    ..new
                };
                tracing::info!("config reloaded from {}", path.display());
            }
            Err(e) => tracing::error!("config reload failed, keeping the running settings: {e}"),
        }
    }
}

/// Opens the store, waiting a little while it is locked: a query command
/// reading it directly (while no service answered) holds it for a moment.
fn open_store(path: &Path) -> Result<Store, StoreError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match Store::open(path) {
            Err(StoreError::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// Runs the service until `control.stop` (or, with `once`, until everything
/// available is processed).
pub fn run(config: Config, control: &Control, opts: &RunOptions) -> Result<(), DaemonError> {
    let store = open_store(&config.store_path())?;
    let (cursor, state) = store.load()?;
    let mut pipeline = match state {
        Some(s) => Pipeline::from_state(config.filter(), s),
        None => Pipeline::new(config.filter(), config.tracker_settings()),
    };
    pipeline
        .tracker_mut()
        .set_settings(config.tracker_settings());
    let mut reader = Reader::start(&config, cursor.as_deref(), !opts.once)?;
    tracing::info!(
        "reading {} from {}",
        target_of(&config),
        cursor.as_deref().map_or_else(
            || format!("{:?} (first start)", config.journal.start_at),
            |c| format!("cursor {c}")
        )
    );
    let live: SharedLive = Arc::new(Mutex::new(Live {
        started_at: now(),
        journal: target_of(&config).to_string(),
        settings: pipeline.tracker().settings().clone(),
        summary: pipeline.summary().clone(),
        cursor: cursor.clone(),
        ..Live::default()
    }));
    let api_stop = Arc::new(AtomicBool::new(false));
    let mut api_threads = Vec::new();
    if !opts.once {
        let path = PathBuf::from(&config.api.socket);
        let listener = api::bind_socket(&path).map_err(|source| DaemonError::Socket {
            path: path.display().to_string(),
            source,
        })?;
        let (s, l, stop) = (store.clone(), live.clone(), api_stop.clone());
        api_threads.push(std::thread::spawn(move || {
            api::serve_unix(&listener, &s, &l, &stop);
        }));
        if !config.api.metrics_listen.is_empty() {
            let addr = config.api.metrics_listen.clone();
            let tcp =
                std::net::TcpListener::bind(&addr).map_err(|source| DaemonError::Metrics {
                    addr: addr.clone(),
                    source,
                })?;
            let (s, l, stop) = (store.clone(), live.clone(), api_stop.clone());
            api_threads.push(std::thread::spawn(move || {
                api::serve_metrics(&tcp, &s, &l, &stop);
            }));
        }
    }
    let retention = config.incidents.retention.0;
    let delivery = Delivery::from_config(&config.alert)?;
    if delivery.is_none() {
        tracing::warn!("[alert] to is empty: incidents are recorded, nothing is mailed");
    }
    let (delivered_tx, delivered_rx) = std::sync::mpsc::channel::<Delivered>();
    let mailer = delivery.map(|d| Mailer {
        store: store.clone(),
        delivery: d,
        group_wait: config.alert.group_wait.0,
        retry_max: config.alert.retry_max.0,
        live: live.clone(),
        delivered: delivered_tx,
    });
    if let Ok(mut l) = live.lock() {
        l.mail.enabled = mailer.is_some();
    }
    let live_settings = {
        let live = live.clone();
        move || live.lock().map(|l| l.settings.clone()).unwrap_or_default()
    };
    let mailer = mailer.map(Arc::new);
    let mailer_stop = Arc::new(AtomicBool::new(false));
    let (wake_tx, wake_rx) = std::sync::mpsc::channel::<()>();
    let mailer_thread = match (&mailer, opts.once) {
        (Some(m), false) => {
            let (m, stop, settings) = (m.clone(), mailer_stop.clone(), live_settings.clone());
            Some(std::thread::spawn(move || {
                m.run(&stop, &settings, &wake_rx);
            }))
        }
        _ => None,
    };
    let mut svc = Service {
        config,
        store,
        pipeline,
        live,
        decisions: Vec::new(),
        changed: BTreeSet::new(),
        alerts: Vec::new(),
        mail_enabled: mailer.is_some(),
        wake_mailer: mailer.is_some().then_some(wake_tx),
        cursor,
        uncommitted: 0,
        last_commit: Instant::now(),
        caught_up: false,
    };
    let pruned = svc.store.prune(now() - retention)?;
    if pruned > 0 {
        tracing::info!("pruned {pruned} resolved incidents older than the retention");
    }
    let mut last_prune = Instant::now();
    // Ready once the journal is open and the store loaded.
    notify(&[("READY", "1"), ("STATUS", &svc.status_line())]);
    let watchdog = systemd::daemon::watchdog_enabled()
        .ok()
        .filter(|us| *us > 0)
        .map(|us| Duration::from_micros(us / 2));
    let mut last_ping = Instant::now();
    let mut last_status = Instant::now();
    let mut status_sent = String::new();
    let mut last_entry = Instant::now();
    let result = main_loop(
        &mut svc,
        &mut reader,
        control,
        opts,
        &delivered_rx,
        &mut |svc| {
            if let Some(every) = watchdog {
                if last_ping.elapsed() >= every {
                    notify(&[("WATCHDOG", "1")]);
                    last_ping = Instant::now();
                }
            }
            // One line of health for `systemctl status`, when it changes
            // (at most once a second).
            if last_status.elapsed() >= Duration::from_secs(1) {
                let health = svc.status_line();
                if health != status_sent {
                    notify(&[("STATUS", &health)]);
                    status_sent = health;
                }
                last_status = Instant::now();
            }
            if last_prune.elapsed() >= PRUNE_EVERY {
                last_prune = Instant::now();
                match svc.store.prune(now() - retention) {
                    Ok(n) if n > 0 => tracing::info!("pruned {n} resolved incidents"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!("pruning: {e}"),
                }
            }
        },
        &mut last_entry,
    );
    notify(&[("STOPPING", "1")]);
    reader.stop();
    // Whatever was read is committed before exit, also after an error.
    let committed = svc.commit();
    mailer_stop.store(true, Ordering::Relaxed);
    if let Some(t) = mailer_thread {
        let _ = t.join();
    }
    if let (Some(m), true, Ok(())) = (&mailer, opts.once, &committed) {
        let failed = m.deliver_all_once(&live_settings);
        while let Ok(d) = delivered_rx.try_recv() {
            svc.delivered(d);
        }
        let _ = svc.commit();
        if failed > 0 {
            tracing::warn!("{failed} alert mails could not be delivered; they stay in the outbox");
        }
    }
    api_stop.store(true, Ordering::Relaxed);
    for t in api_threads {
        let _ = t.join();
    }
    if !opts.once {
        let _ = std::fs::remove_file(&svc.config.api.socket);
    }
    result.and(committed.map_err(DaemonError::from))
}

fn main_loop(
    svc: &mut Service,
    reader: &mut Reader,
    control: &Control,
    opts: &RunOptions,
    delivered: &Receiver<Delivered>,
    tick: &mut dyn FnMut(&Service),
    last_entry: &mut Instant,
) -> Result<(), DaemonError> {
    let mut backoff = Duration::from_millis(200);
    loop {
        if control.stop.load(Ordering::Relaxed) {
            tracing::info!("stopping: committing and exiting");
            return Ok(());
        }
        if control.reload.swap(false, Ordering::Relaxed) {
            if let Some(p) = &opts.config_path {
                svc.reload(p);
            }
        }
        // While a line is held for continuations, tick fast enough to hand it
        // on after HOLD_LINES.
        let tick_every = if svc.pipeline.holds_lines() { 10 } else { 100 };
        match reader.rx.recv_timeout(Duration::from_millis(tick_every)) {
            Ok(Msg::Entries(entries)) => {
                let n = entries.len() as u64;
                for e in entries {
                    if let Some(c) = &e.cursor {
                        svc.cursor = Some(c.clone());
                    }
                    svc.pipeline.push(e, &mut svc.decisions);
                }
                svc.uncommitted += n;
                *last_entry = Instant::now();
                backoff = Duration::from_millis(200);
            }
            Ok(Msg::CaughtUp) => {
                if !svc.caught_up {
                    tracing::info!("caught up: {}", svc.status_line());
                }
                svc.caught_up = true;
            }
            Ok(Msg::Lost(n)) => {
                tracing::warn!(
                    "{n} journal entries were rotated or vacuumed away before they were read"
                );
                if let Ok(mut l) = svc.live.lock() {
                    l.entries_lost += n;
                }
            }
            Ok(Msg::Failed(e)) => {
                tracing::error!("journal reader failed: {e}; restarting it from the last commit");
                restart_reader(svc, reader, &mut backoff)?;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                if opts.once {
                    // Everything available was read: complete held lines and
                    // let wall-clock time resolve what has gone quiet.
                    svc.pipeline.flush(&mut svc.decisions);
                    svc.pipeline.advance(now(), &mut svc.decisions);
                    return Ok(());
                }
                tracing::error!("journal reader ended; restarting it from the last commit");
                restart_reader(svc, reader, &mut backoff)?;
            }
        }
        if svc.caught_up {
            // Live: wall-clock time drives the tracker, so incidents resolve
            // on quiet time while the service idles.
            if svc.pipeline.holds_lines() && last_entry.elapsed() >= HOLD_LINES {
                svc.pipeline.flush(&mut svc.decisions);
            }
            svc.pipeline.advance(now(), &mut svc.decisions);
        }
        while let Ok(d) = delivered.try_recv() {
            svc.delivered(d);
        }
        svc.take_decisions();
        // An alert commits at once (then the mailer is woken): alert latency
        // is the one thing the batch interval must not add to.
        let alerting = !svc.alerts.is_empty();
        if alerting
            || svc.uncommitted >= BATCH_ENTRIES
            || (svc.dirty() && svc.last_commit.elapsed() >= BATCH_INTERVAL)
        {
            svc.commit()?;
            if alerting {
                if let Some(w) = &svc.wake_mailer {
                    let _ = w.send(());
                }
            }
        } else {
            svc.update_live(false);
        }
        tick(svc);
    }
}

fn restart_reader(
    svc: &mut Service,
    reader: &mut Reader,
    backoff: &mut Duration,
) -> Result<(), DaemonError> {
    // Commit first: the new reader starts after the committed cursor, and
    // the pipeline state must be the one that cursor belongs to.
    svc.commit()?;
    reader.stop();
    std::thread::sleep(*backoff);
    *backoff = (*backoff * 2).min(Duration::from_secs(10));
    *reader = Reader::start(&svc.config, svc.cursor.as_deref(), true)?;
    if let Ok(mut l) = svc.live.lock() {
        l.reader_restarts += 1;
    }
    Ok(())
}
