//! `kubelet-sentinel run`: the service's tasks and their wiring (design
//! section 4).
//!
//! ```text
//! journal reader (OS thread, owns the !Send libsystemd handle)
//!   │ batches over a bounded tokio channel (the only backpressure)
//!   ▼
//! ingest: pipeline ─▶ tracker ─▶ ONE sled transaction per batch ──wakes──▶ mailer
//!   │ publishes a StatusSnapshot (watch)                                    │ reports deliveries
//!   ▼                                                                       ▼
//! query server (axum: Unix socket, TCP /metrics) · sd_notify · signals · config watcher
//! ```
//!
//! One cancellation token ends them all; every task is bounded, so a stop
//! finishes in seconds even mid-delivery (the commit comes first: nothing
//! is lost). If a task fails or panics, the service stops with an error
//! and systemd restarts it: it never stays up half-dead.

mod ingest;
mod systemd;
mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::api::http::{self as server, ApiState};
use crate::config::{Config, StartAt};
use crate::journal::SourceError;
use crate::journal::collector;
use crate::journal::{Mode, Reader, Start, Target};
use crate::model::Position;
use crate::notify::alertmanager::AlertmanagerTask;
use crate::notify::mailer::{Mailer, Now};
use crate::pipeline::Pipeline;
use crate::status::DeliveryStats;
use crate::store::{Channel, Loaded, Store, StoreError};
use crate::time::{Micros, SECOND};
use crate::tracker::Resolution;

pub use ingest::Ingest;

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
pub enum Control {
    /// SIGHUP, or the config file changed.
    Reload,
    /// The watchdog: answer once the reader and ingest have moved on.
    Watchdog(oneshot::Sender<()>),
}

/// Starts a journal reader after a position (or at the config's first
/// start point), following or not.
pub type Source = Arc<dyn Fn(&Position, bool) -> Result<Reader, SourceError> + Send + Sync>;

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
    pub source: Source,
    pub now: Now,
    pub systemd: bool,
    pub signals: bool,
}

impl Edges {
    /// The real journal, the system clock, `sd_notify` and signals.
    #[must_use]
    pub fn real(config: &Config) -> Self {
        Self {
            source: journal_source(config),
            now: Arc::new(crate::time::now),
            systemd: true,
            signals: true,
        }
    }
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
    Some(crate::time::now() - (secs * SECOND as f64) as Micros)
}

fn first_start(at: StartAt) -> Start {
    match at {
        StartAt::All => Start::Head,
        StartAt::Now => Start::Tail,
        StartAt::Boot => boot_time().map_or(Start::Head, |t| Start::Realtime(t.max(0) as u64)),
    }
}

/// The journal the config names, through libsystemd.
#[must_use]
pub fn journal_source(config: &Config) -> Source {
    let target = target_of(config);
    let filter = config.filter();
    let start_at = config.journal.start_at;
    Arc::new(move |position: &Position, follow| {
        let mode = if follow { Mode::Follow } else { Mode::Once };
        let first = first_start(start_at);
        crate::journal::open::follow(&target, &filter, first, position, mode)
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
            .map_err(|e| StoreError::Open {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        match r {
            Err(StoreError::Locked { .. }) if tokio::time::Instant::now() < deadline => {
                // The lock cannot wake us: look again shortly.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

/// Runs the service until `shutdown` (or, with `once`, until everything
/// available is processed and delivered once).
#[allow(clippy::too_many_lines)] // the wiring, in order
pub async fn run(
    config: Config,
    opts: RunOptions,
    edges: Edges,
    shutdown: CancellationToken,
) -> Result<(), DaemonError> {
    let stop = shutdown.child_token();
    let store = open_store(config.store_path()).await?;
    let loaded = {
        let s = store.clone();
        tokio::task::spawn_blocking(move || s.load())
            .await
            .map_err(|e| DaemonError::Task {
                task: "store",
                what: e.to_string(),
            })??
    };
    let target = target_of(&config);
    let source = crate::journal::source_id(&target);
    let mut loaded = loaded;
    let changed = changed_source(&loaded, &target, &source);
    let closed = changed.as_ref().map(|_| {
        let now = (edges.now)();
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
    if changed.is_some() || loaded.source.as_deref() != Some(source.as_str()) {
        // Before anything is read: the first commit's cursors are then
        // the new journal's.
        let (s, src, settings) = (store.clone(), source.clone(), config.tracker_settings());
        tokio::task::spawn_blocking(move || s.switch_source(&src, closed.as_deref(), &settings))
            .await
            .map_err(|e| DaemonError::Task {
                task: "store",
                what: e.to_string(),
            })??;
    }
    if let Some(old) = &changed {
        tracing::warn!(
            "the journal changed: the store's position was in {old}, the config reads {source}. \
             Its cursors are not applied to {source}: every host in it is read from [journal] \
             start_at{}",
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
        loaded.position = Position::default();
        // Held lines and per-stream bookkeeping belong to the old journal's
        // streams; the counts go on.
        loaded.state = loaded.state.map(|s| crate::pipeline::PipelineState {
            summary: s.summary,
            ..crate::pipeline::PipelineState::default()
        });
    }
    let mut pipeline = match loaded.state {
        Some(s) => Pipeline::from_state(config.filter(), s),
        None => Pipeline::new(config.filter(), config.tracker_settings()),
    };
    pipeline.tracker_mut().restore(loaded.open, loaded.origins);
    pipeline
        .tracker_mut()
        .set_settings(config.tracker_settings());
    let journal = target.to_string();
    let reader = (edges.source)(&loaded.position, !opts.once)?;
    tracing::info!(
        "reading {journal} {}",
        if loaded.position.is_empty() {
            let why = if changed.is_some() {
                "the journal changed"
            } else {
                "first start"
            };
            match config.journal.start_at {
                StartAt::Boot => format!("from the start of this boot ({why})"),
                StartAt::Now => format!("from now on ({why})"),
                StartAt::All => format!("from its beginning ({why})"),
            }
        } else {
            format!("from where it stopped ({})", loaded.position.describe())
        }
    );
    if !config.alert.delivers() {
        tracing::warn!(
            "[alert] to and [alert.alertmanager] urls are empty: incidents are recorded, nothing is delivered"
        );
    }
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
    let ingest = Ingest::new(
        config.clone(),
        opts.config_path.clone(),
        opts.config_explicit,
        store.clone(),
        pipeline,
        loaded.position,
        loaded.stats,
        journal,
        edges.now.clone(),
    );
    let channels = ingest::Channels {
        status: status_tx,
        config: config_tx,
        wake: wake.clone(),
        commands: commands_rx,
        control: control_rx,
        reports: reports_rx,
    };
    let mailer = Mailer::new(
        store.clone(),
        &config,
        mail_tx,
        reports_tx.clone(),
        edges.now.clone(),
    );
    let alertmanager =
        AlertmanagerTask::new(store.clone(), &config, am_tx, reports_tx, edges.now.clone());

    if opts.once {
        let (mut ingest, mut ch) = ingest
            .run(edges.source.clone(), reader, channels, true, stop.clone())
            .await?;
        let mut mailer = mailer;
        let mut alertmanager = alertmanager;
        let mut failed = 0;
        if config.alert.emails() {
            failed += mailer.deliver_all_once(&stop).await;
        }
        if !config.alert.alertmanager.urls.is_empty() {
            failed += alertmanager.deliver_all_once(&stop).await;
        }
        if failed > 0 {
            tracing::warn!("{failed} alert deliveries failed; they stay in the outbox");
        }
        ingest.finish_deliveries(&mut ch.reports).await?;
        return Ok(());
    }

    // The query socket and the metrics listener, before READY=1: whoever is
    // told the service is up can ask it.
    let socket = PathBuf::from(&config.api.socket);
    let unix = server::bind_socket(&socket).map_err(|source| DaemonError::Socket {
        path: socket.display().to_string(),
        source,
    })?;
    let tcp = if config.api.metrics_listen.is_empty() {
        None
    } else {
        let addr = config.api.metrics_listen.clone();
        let l = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|source| DaemonError::Metrics {
                addr: addr.clone(),
                source,
            })?;
        tracing::info!("serving /metrics on http://{addr}/metrics");
        Some(l)
    };
    if let Some(why) = crate::api::peer::missing_admin_group(&config.api.admin_group) {
        tracing::warn!("{why}");
    }
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
        admin_group: (!config.api.admin_group.is_empty()).then(|| config.api.admin_group.clone()),
    });

    let mut tasks = JoinSet::new();
    let mut names = std::collections::HashMap::new();
    let mut spawn =
        |name: &'static str,
         tasks: &mut JoinSet<Result<(), DaemonError>>,
         f: std::pin::Pin<Box<dyn Future<Output = Result<(), DaemonError>> + Send>>| {
            let id = tasks.spawn(f).id();
            names.insert(id, name);
        };
    let source = edges.source.clone();
    let st = stop.clone();
    spawn(
        "ingest",
        &mut tasks,
        Box::pin(async move {
            ingest
                .run(source, reader, channels, false, st)
                .await
                .map(|_| ())
        }),
    );
    let st = stop.clone();
    let w = wake.email.clone();
    let cr = config_rx.clone();
    spawn(
        "mailer",
        &mut tasks,
        Box::pin(async move {
            mailer.run(w, cr, st).await;
            Ok(())
        }),
    );
    let st = stop.clone();
    let w = wake.alertmanager.clone();
    spawn(
        "alertmanager",
        &mut tasks,
        Box::pin(async move {
            alertmanager.run(w, config_rx, st).await;
            Ok(())
        }),
    );
    let st = stop.clone();
    let app = server::socket_router(api.clone());
    spawn(
        "query server",
        &mut tasks,
        Box::pin(async move {
            server::serve(unix, app, st).await;
            Ok(())
        }),
    );
    if let Some(tcp) = tcp {
        let st = stop.clone();
        let app = server::metrics_router(api.clone());
        spawn(
            "metrics server",
            &mut tasks,
            Box::pin(async move {
                server::serve(tcp, app, st).await;
                Ok(())
            }),
        );
    }
    let st = stop.clone();
    let c = control_tx.clone();
    let path = opts.config_path.clone();
    spawn(
        "config watcher",
        &mut tasks,
        Box::pin(async move {
            watch::run(path, c, st).await;
            Ok(())
        }),
    );
    if edges.signals {
        let st = stop.clone();
        let c = control_tx.clone();
        spawn(
            "signals",
            &mut tasks,
            Box::pin(async move { signals(c, st).await }),
        );
    }
    if edges.systemd {
        systemd::notify(&[("READY", "1")]);
        let st = stop.clone();
        let c = control_tx.clone();
        let (status, mail, am) = (status_rx.clone(), mail_rx.clone(), am_rx.clone());
        spawn(
            "systemd",
            &mut tasks,
            Box::pin(async move {
                systemd::run(status, mail, am, c, st).await;
                Ok(())
            }),
        );
    }
    drop(control_tx);

    let mut failure: Option<DaemonError> = None;
    tokio::select! {
        () = stop.cancelled() => {}
        Some(done) = tasks.join_next_with_id() => {
            failure = match done {
                Err(e) => Some(DaemonError::Task {
                    task: names.get(&e.id()).copied().unwrap_or("a"),
                    what: if e.is_panic() { "panicked" } else { "was cancelled" }.to_string(),
                }),
                Ok((_, Err(e))) => Some(e),
                Ok((_, Ok(()))) if stop.is_cancelled() => None,
                Ok((id, Ok(()))) => Some(DaemonError::Task {
                    task: names.get(&id).copied().unwrap_or("a"),
                    what: "ended unexpectedly".into(),
                }),
            };
        }
    }
    if matches!(&failure, Some(DaemonError::Task { what, .. }) if what == "ended unexpectedly") {
        // A task that ends by itself usually does so because another one
        // failed and dropped its channels (the systemd task, the mailer and
        // the Alertmanager task when ingest stops on a full disk): say the
        // error that caused it, if it comes within a moment, rather than
        // the consequence.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        loop {
            match tokio::time::timeout_at(deadline, tasks.join_next_with_id()).await {
                Ok(Some(Ok((_, Err(e))))) if !matches!(e, DaemonError::Stopped) => {
                    failure = Some(e);
                    break;
                }
                Ok(Some(Err(e))) if e.is_panic() => {
                    failure = Some(DaemonError::Task {
                        task: names.get(&e.id()).copied().unwrap_or("a"),
                        what: "panicked".into(),
                    });
                    break;
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
    if edges.systemd {
        systemd::notify(&[("STOPPING", "1")]);
    }
    if let Some(f) = &failure {
        tracing::error!("{f}; stopping");
    } else {
        tracing::info!("stopping: committing and exiting");
    }
    stop.cancel();
    // Every task ends on the token; a bound all the same, well inside
    // TimeoutStopSec.
    let drained = tokio::time::timeout(Duration::from_secs(8), async {
        while let Some(done) = tasks.join_next_with_id().await {
            match done {
                Ok((id, Err(e))) if !matches!(e, DaemonError::Stopped) => {
                    let task = names.get(&id).copied().unwrap_or("a");
                    tracing::error!("the {task} task: {e}");
                    failure.get_or_insert(e);
                }
                Err(e) if e.is_panic() => {
                    failure.get_or_insert(DaemonError::Task {
                        task: names.get(&e.id()).copied().unwrap_or("a"),
                        what: "panicked".into(),
                    });
                }
                _ => {}
            }
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!("some tasks did not end within 8s; exiting anyway");
    }
    let _ = std::fs::remove_file(&socket);
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
