//! `kubelet-sentinel run`: the service's tasks and their wiring (design
//! section 4).
//!
//! ```text
//! journal reader (OS thread, owns the !Send libsystemd handle)
//!   │ batches over a bounded tokio channel (the only backpressure)
//!   ▼
//! ingest: pipeline ─▶ tracker ─▶ ONE sled transaction per batch ──wakes──▶ mailer, Alertmanager task
//!   │ publishes a StatusSnapshot (watch)                                    │ report deliveries
//!   ▼                                                                       ▼
//! query server (axum: Unix socket, TCP /metrics) · sd_notify · signals · config watcher
//! ```
//!
//! [`run`] builds the parts (the store resumed, the reader started, the
//! channels between the tasks) and hands them to `tasks.rs`, which runs
//! each as a named task in a span of its own. `ingest/` is the single
//! writer of incidents, tracker state and cursors.
//!
//! One cancellation token ends them all; every task is bounded, so a stop
//! finishes in seconds even mid-delivery (the commit comes first: nothing
//! is lost). If a task fails or panics, the service stops with an error
//! and systemd restarts it: it never stays up half-dead.

mod ingest;
mod systemd;
mod tasks;
mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::api::http::{self as server, ApiState};
use crate::config::{Config, JournalTarget, StartAt};
use crate::journal::SourceError;
use crate::journal::collector;
use crate::journal::{Reader, Start, Target};
use crate::notify::alertmanager::AlertmanagerTask;
use crate::notify::mailer::Mailer;
use crate::status::DeliveryStats;
use crate::status::Now;
use crate::store::{Channel, Loaded, ReadFrom, Store, StoreError};
use sentinel_core::model::Position;
use sentinel_core::pipeline::Pipeline;
use sentinel_core::time::{Micros, SECOND};
use sentinel_core::tracker::Resolution;

use ingest::{Ingest, Mode};
use tasks::Tasks;

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
    #[error("metrics listener {addr}: {source}")]
    Metrics {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the {task} task {what}")]
    Task { task: &'static str, what: String },
    #[error("stopped")]
    Stopped,
}

/// What the small tasks ask of ingest.
#[derive(Debug)]
pub(crate) enum Control {
    /// SIGHUP, or the config file changed.
    Reload,
    /// The watchdog: answer once the reader and ingest have moved on.
    Watchdog(oneshot::Sender<()>),
}

/// Starts a journal reader after a position (or at the config's first
/// start point), following or reading once.
pub type Source = Arc<dyn Fn(&Position, Mode) -> Result<Reader, SourceError> + Send + Sync>;

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Process everything available, deliver what is due, then exit.
    pub once: bool,
    /// The config file, for reloads.
    pub config_path: PathBuf,
    /// Named on the command line (a missing file is then an error).
    pub config_explicit: bool,
}

/// The service's edges: where entries come from, the clock, and whether it
/// talks to systemd and handles signals. Tests pass their own.
pub struct Edges {
    /// Where entries come from; `None`: the journal the config names, read
    /// from where the store says (its cursors, and for what has none the
    /// store's [`ReadFrom`]).
    pub source: Option<Source>,
    pub now: Now,
    pub systemd: bool,
    pub signals: bool,
}

impl Edges {
    /// The real journal, the system clock, `sd_notify` and signals.
    #[must_use]
    pub fn real() -> Self {
        Self {
            source: None,
            now: Arc::new(crate::clock::now),
            systemd: true,
            signals: true,
        }
    }
}

/// Which journal the config names.
#[must_use]
pub(crate) fn target_of(config: &Config) -> Target {
    match &config.journal.target {
        JournalTarget::Namespace(n) => Target::Namespace(n.clone()),
        JournalTarget::Directory(d) => Target::Directory(d.clone()),
        JournalTarget::System => Target::System,
    }
}

/// When this machine booted, from `/proc/uptime`.
fn boot_time() -> Option<Micros> {
    let up = std::fs::read_to_string("/proc/uptime").ok()?;
    let secs: f64 = up.split_whitespace().next()?.parse().ok()?;
    Some(crate::clock::now() - (secs * SECOND as f64) as Micros)
}

/// `[journal] start_at` as a point in the journal, taken now: kept by the
/// store at a journal's first start (see [`ReadFrom`]).
fn origin_now(at: StartAt, now: Micros) -> ReadFrom {
    match at {
        StartAt::All => ReadFrom::Head,
        StartAt::Now => ReadFrom::Since(now),
        StartAt::Boot => boot_time().map_or(ReadFrom::Head, ReadFrom::Since),
    }
}

fn start_of(origin: ReadFrom) -> Start {
    match origin {
        ReadFrom::Head => Start::Head,
        ReadFrom::Since(t) => Start::Realtime(t.max(0) as u64),
    }
}

/// The journal the config names, through libsystemd; what has no cursor
/// (the journal, or a collector's host) starts at `origin`, whether it is
/// there at the first start, appears later or is first read after a
/// restart: one rule.
#[must_use]
pub(crate) fn journal_source(config: &Config, origin: ReadFrom) -> Source {
    let target = target_of(config);
    let filter = config.filter();
    Arc::new(move |position: &Position, mode| {
        crate::journal::open::follow(&target, &filter, start_of(origin), position, mode)
    })
}

/// The journal the store's cursors belong to when it is not `source`, the
/// one the config names (in words, for the log). Stores written before the
/// source was recorded tell by their cursors: per-host cursors are a
/// collector's, and a single cursor belongs to a directory only if one of
/// its files has the cursor's sequence-number ID.
fn changed_source(loaded: &Loaded, target: &Target, source: &str) -> Option<String> {
    let p = &loaded.position;
    if p.is_empty() {
        return None;
    }
    if let Some(s) = &loaded.source {
        return (s != source).then(|| s.clone());
    }
    match (target, &p.cursor) {
        (Target::Directory(dir), Some(c))
            if p.groups.is_empty() && !collector::holds_cursor(dir, c) =>
        {
            Some("another journal (its cursor is of none of the directory's files)".into())
        }
        (Target::Directory(_), _) => None,
        _ if !p.groups.is_empty() => Some("a collector's directory (per-host cursors)".into()),
        _ => None,
    }
}

/// Opens the store, waiting a little while it is locked: a query command
/// reading it directly (while no service answered) holds it for a moment.
async fn open_store(path: PathBuf) -> Result<Store, StoreError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let p = path.clone();
        let r = tokio::task::spawn_blocking(move || Store::open(&p))
            .await
            .map_err(|e| StoreError::interrupted(&path, "", &e))?;
        match r {
            Err(StoreError::Locked { .. }) if tokio::time::Instant::now() < deadline => {
                // The lock cannot wake us: look again shortly.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

/// What the store gives the service to resume with, once the journal it
/// belongs to is checked.
struct Resumed {
    loaded: Loaded,
    pipeline: Pipeline,
    /// The store's position was in another journal: read from `start_at`.
    journal_changed: bool,
}

/// Loads the store and checks its journal is the one the config names; if
/// not, the old journal's open incidents are closed and its cursors and
/// held lines forgotten (the counts go on).
async fn resume(
    store: &Store,
    config: &Config,
    target: &Target,
    now: &Now,
) -> Result<Resumed, DaemonError> {
    let task = |e: tokio::task::JoinError| DaemonError::Task {
        task: "store",
        what: e.to_string(),
    };
    let s = store.clone();
    let mut loaded = tokio::task::spawn_blocking(move || s.load())
        .await
        .map_err(task)??;
    let source = crate::journal::source_id(target);
    let changed = changed_source(&loaded, target, &source);
    let closed = changed.as_ref().map(|_| {
        let now = now();
        let mut closed = std::mem::take(&mut loaded.open);
        for i in &mut closed {
            i.resolved_at = Some(now.max(i.last_signal_at));
            i.resolution = Some(Resolution::SourceChanged);
        }
        closed
    });
    let ids: Vec<String> = closed
        .iter()
        .flatten()
        .map(|i| format!("{} ({})", &i.id, i.node))
        .collect();
    // Where what has no cursor starts: taken once, at the journal's first
    // start (or the first start that keeps it), and kept.
    let origin = match loaded.origin {
        Some(o) if changed.is_none() => o,
        _ => origin_now(config.journal.start_at, now()),
    };
    // A journal read before, changed back to: where it was left.
    let mut back: Option<(Position, crate::store::ReadFrom)> = None;
    if changed.is_some()
        || loaded.source.as_deref() != Some(source.as_str())
        || loaded.origin != Some(origin)
    {
        // Before anything is read: the first commit's cursors are then
        // the new journal's.
        let (s, src, settings) = (store.clone(), source.clone(), config.tracker_settings());
        back = tokio::task::spawn_blocking(move || {
            s.switch_source(&src, origin, closed.as_deref(), &settings)
        })
        .await
        .map_err(task)??;
        loaded.origin = Some(back.as_ref().map_or(origin, |(_, o)| *o));
    }
    if let Some(old) = &changed {
        let from = if back.is_some() {
            "where the service left it when it last read it (what it got since is read; what \
             was read then is not read, or mailed, again)"
        } else {
            "[journal] start_at"
        };
        tracing::warn!(
            closed = ids.len(),
            "the journal changed: the store's position was in {old}, the config reads {source}. \
             The old journal's cursors are kept aside (for a change back), not applied to \
             {source}: every host in it is read from {from}{}",
            if ids.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} open incident(s) of the old journal closed as source-changed, \
                     not resolved (no resolved notice): {}",
                    ids.len(),
                    ids.join(", ")
                )
            }
        );
        loaded.position = back.map(|(p, _)| p).unwrap_or_default();
        // Held lines and per-stream bookkeeping belong to the old journal's
        // streams; the counts go on.
        loaded.held.clear();
        loaded.state = loaded
            .state
            .map(|s| sentinel_core::pipeline::PipelineState {
                summary: s.summary,
                ..sentinel_core::pipeline::PipelineState::default()
            });
    }
    let mut pipeline = match loaded.state.take() {
        Some(s) => Pipeline::from_state(config.filter(), s),
        None => Pipeline::new(config.filter(), config.tracker_settings()),
    };
    pipeline.tracker_mut().restore(
        std::mem::take(&mut loaded.open),
        std::mem::take(&mut loaded.origins),
    );
    pipeline
        .tracker_mut()
        .restore_members(std::mem::take(&mut loaded.members));
    pipeline.track_held_writes();
    pipeline.restore_held(std::mem::take(&mut loaded.held));
    pipeline
        .tracker_mut()
        .set_settings(config.tracker_settings());
    pipeline.set_fleet(matches!(target_of(config), Target::Directory(_)));
    if changed.is_some() {
        // How far the old journal's hosts got says nothing of the new one's.
        pipeline.tracker_mut().forget_journal_times();
    }
    Ok(Resumed {
        loaded,
        pipeline,
        journal_changed: changed.is_some(),
    })
}

/// Where the reader starts, in words for the log.
fn reading_from(
    position: &Position,
    origin: ReadFrom,
    collector: bool,
    journal_changed: bool,
) -> String {
    let from = match origin {
        ReadFrom::Head => "its beginning".to_string(),
        ReadFrom::Since(t) => sentinel_core::time::human(t, sentinel_core::time::Zone::Utc),
    };
    if !position.is_empty() {
        let rest = if collector {
            format!(
                "; a host with no cursor from {from}, [journal] start_at at the journal's first start"
            )
        } else {
            String::new()
        };
        return format!("from where it stopped ({}){rest}", position.describe());
    }
    let why = if journal_changed {
        "the journal changed"
    } else {
        "first start"
    };
    let hosts = if collector {
        "; every host with no cursor starts there, whenever it appears and after a restart"
    } else {
        ""
    };
    format!("from {from} ({why}: [journal] start_at){hosts}")
}

/// The query socket and the metrics listener.
async fn listen(
    config: &Config,
) -> Result<(tokio::net::UnixListener, Option<tokio::net::TcpListener>), DaemonError> {
    let socket = PathBuf::from(&config.api.socket);
    let unix = server::bind_socket(&socket).map_err(|source| DaemonError::Socket {
        path: socket.display().to_string(),
        source,
    })?;
    let tcp = if let Some(addr) = config.api.metrics_listen {
        let l = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| DaemonError::Metrics {
                addr: addr.to_string(),
                source,
            })?;
        // Port 0 asks the kernel for one: say the one it gave.
        let addr = l.local_addr().unwrap_or(addr);
        tracing::info!(addr = %addr, "serving /metrics on http://{addr}/metrics");
        Some(l)
    } else {
        None
    };
    if let Some(why) = config
        .api
        .admin_group
        .as_deref()
        .and_then(crate::api::peer::missing_admin_group)
    {
        tracing::warn!("{why}");
    }
    Ok((unix, tcp))
}

/// Warnings about settings that work, but not as one may think.
fn warn_about(config: &Config) {
    if !config.alert.delivers() {
        tracing::warn!(
            "[alert] to and [alert.alertmanager] urls are empty: incidents are recorded, nothing is delivered"
        );
    }
}

/// `run --once`: ingest until everything available is read, one delivery
/// attempt for everything due, and the deliveries recorded.
async fn run_once(
    ingest: Ingest,
    source: Source,
    reader: Reader,
    channels: ingest::Channels,
    (mut mailer, mut alertmanager): (Mailer, AlertmanagerTask),
    stop: &CancellationToken,
) -> Result<(), DaemonError> {
    let (mut ingest, mut ch) = ingest
        .run(source, reader, channels, Mode::Once, stop.clone())
        .instrument(tracing::info_span!("ingest"))
        .await?;
    let config = ch.config.borrow().clone();
    let mut failed = 0;
    if config.alert.emails() {
        failed += mailer.deliver_all_once(stop).await;
    }
    if !config.alert.alertmanager.urls.is_empty() {
        failed += alertmanager.deliver_all_once(stop).await;
    }
    if failed > 0 {
        tracing::warn!(
            failed,
            "{failed} alert deliveries failed; they stay in the outbox"
        );
    }
    ingest.finish_deliveries(&mut ch.reports).await?;
    Ok(())
}

/// Runs the service until `shutdown` (or, with `once`, until everything
/// available is processed and delivered once).
pub async fn run(
    config: Config,
    opts: RunOptions,
    edges: Edges,
    shutdown: CancellationToken,
) -> Result<(), DaemonError> {
    let stop = shutdown.child_token();
    let store = open_store(config.store_path()).await?;
    let target = target_of(&config);
    let Resumed {
        loaded,
        pipeline,
        journal_changed,
    } = resume(&store, &config, &target, &edges.now).await?;
    let journal = target.to_string();
    let source = edges
        .source
        .clone()
        .unwrap_or_else(|| journal_source(&config, loaded.origin.unwrap_or(ReadFrom::Head)));
    let mode = if opts.once { Mode::Once } else { Mode::Follow };
    let reader = source(&loaded.position, mode)?;
    let from = reading_from(
        &loaded.position,
        loaded.origin.unwrap_or(ReadFrom::Head),
        matches!(target, Target::Directory(_)),
        journal_changed,
    );
    tracing::info!(journal = %journal, "reading {journal} {from}");
    warn_about(&config);
    let config = Arc::new(config);
    let (status_tx, status_rx) =
        tokio::sync::watch::channel(crate::status::StatusSnapshot::default());
    let (config_tx, config_rx) = tokio::sync::watch::channel(config.clone());
    let (mail_tx, mail_rx) = tokio::sync::watch::channel(DeliveryStats::default());
    let (am_tx, am_rx) = tokio::sync::watch::channel(DeliveryStats::default());
    let (reports_tx, reports_rx) = mpsc::unbounded_channel();
    let (commands_tx, commands_rx) = mpsc::channel(16);
    let (control_tx, control_rx) = mpsc::channel(16);
    let wake = crate::notify::Wake::default();
    let ingest = Ingest::new(ingest::Start {
        config: config.clone(),
        config_path: opts.config_path.clone(),
        config_explicit: opts.config_explicit,
        store: store.clone(),
        pipeline,
        position: loaded.position,
        stats: loaded.stats,
        journal,
        now: edges.now.clone(),
    });
    let channels = ingest::Channels {
        status: status_tx,
        config: config_tx,
        wake: wake.clone(),
        commands: commands_rx,
        control: control_rx,
        reports: reports_rx,
    };
    let delivery = (
        Mailer::new(
            store.clone(),
            &config,
            mail_tx,
            reports_tx.clone(),
            edges.now.clone(),
        ),
        AlertmanagerTask::new(store.clone(), &config, am_tx, reports_tx, edges.now.clone()),
    );
    if mode == Mode::Once {
        // Boxed: the ingest it holds (the pipeline's maps of hosts) is
        // past clippy's large-future bound on the stack.
        return Box::pin(run_once(
            ingest,
            source.clone(),
            reader,
            channels,
            delivery,
            &stop,
        ))
        .await;
    }
    let (mailer, alertmanager) = delivery;
    // The query socket and the metrics listener, before READY=1: whoever is
    // told the service is up can ask it.
    let (unix, tcp) = listen(&config).await?;
    let now = edges.now.clone();
    let api = Arc::new(ApiState {
        store: store.clone(),
        status: status_rx.clone(),
        deliveries: vec![
            (Channel::Email, mail_rx.clone()),
            (Channel::Alertmanager, am_rx.clone()),
        ],
        commands: commands_tx,
        now: Box::new(move || now()),
        admin_group: config.api.admin_group.clone(),
    });
    let parts = tasks::Parts {
        ingest,
        source: source.clone(),
        reader,
        channels,
        mailer,
        alertmanager,
        wake,
        config: config_rx,
        unix,
        tcp,
        api,
        config_path: opts.config_path.clone(),
        control: control_tx,
        signals: edges.signals,
        systemd: edges.systemd.then(|| tasks::Published {
            status: status_rx,
            mail: mail_rx,
            alertmanager: am_rx,
        }),
    };
    let failure = Tasks::start(parts, &stop).run(&stop, edges.systemd).await;
    let _ = std::fs::remove_file(&config.api.socket);
    let s = store.clone();
    let _ = tokio::task::spawn_blocking(move || s.flush()).await;
    failure.map_or(Ok(()), Err)
}

/// SIGTERM and SIGINT stop the service; SIGHUP reloads the config.
async fn signals(
    control: mpsc::Sender<Control>,
    stop: CancellationToken,
) -> Result<(), DaemonError> {
    use tokio::signal::unix::{SignalKind, signal};
    let err = |e: std::io::Error| DaemonError::Task {
        task: "signals",
        what: format!("cannot install handlers: {e}"),
    };
    let mut term = signal(SignalKind::terminate()).map_err(err)?;
    let mut int = signal(SignalKind::interrupt()).map_err(err)?;
    let mut hup = signal(SignalKind::hangup()).map_err(err)?;
    loop {
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            _ = term.recv() => { stop.cancel(); return Ok(()) }
            _ = int.recv() => { stop.cancel(); return Ok(()) }
            _ = hup.recv() => { let _ = control.send(Control::Reload).await; }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stores from before the source was recorded: told by their cursors.
    #[test]
    fn a_cursor_of_another_journal_is_a_changed_source() {
        let empty = tempfile::tempdir().unwrap();
        let dir = Target::Directory(empty.path().to_path_buf());
        let local = Loaded {
            position: Position {
                cursor: Some("s=c108335b;i=4d2;b=1;m=2;t=3;x=4".into()),
                ..Position::default()
            },
            ..Loaded::default()
        };
        let collector = Loaded {
            position: Position {
                groups: [("remote-10.0.0.5".to_string(), "s=ab;i=1".to_string())].into(),
                ..Position::default()
            },
            ..Loaded::default()
        };
        let id = |t: &Target| crate::journal::source_id(t);
        // A local cursor is of none of the directory's files.
        assert!(changed_source(&local, &dir, &id(&dir)).is_some());
        assert!(changed_source(&local, &Target::System, &id(&Target::System)).is_none());
        // A collector's per-host cursors on a single journal.
        assert!(changed_source(&collector, &Target::System, &id(&Target::System)).is_some());
        assert!(changed_source(&collector, &dir, &id(&dir)).is_none());
        // Recorded: compared as recorded, a trailing slash aside.
        let recorded = Loaded {
            source: Some(id(&dir)),
            ..collector
        };
        let slash = Target::Directory(PathBuf::from(format!("{}/", empty.path().display())));
        assert!(changed_source(&recorded, &slash, &id(&slash)).is_none());
        assert!(changed_source(&recorded, &Target::System, &id(&Target::System)).is_some());
        // Nothing read yet: nothing to carry over.
        assert!(changed_source(&Loaded::default(), &dir, &id(&dir)).is_none());
    }
}
