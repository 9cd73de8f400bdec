//! The service's tasks: named, on one `JoinSet`, each in a span of its
//! own. The first to fail (or panic, or end by itself) stops the others;
//! the drain at shutdown is bounded, well inside `TimeoutStopSec`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::{Id, JoinError, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::ingest::{self, Ingest, Mode};
use super::{Control, DaemonError, Source, systemd, watch as config_watch};
use crate::api::http::{self as server, ApiState};
use crate::config::Config;
use crate::journal::Reader;
use crate::notify::Wake;
use crate::notify::alertmanager::AlertmanagerTask;
use crate::notify::mailer::Mailer;
use crate::status::{DeliveryStats, StatusSnapshot};

/// How long the tasks have to end once told to.
const DRAIN: Duration = Duration::from_secs(8);
/// How long a task that ended by itself waits for the error that caused it.
const CAUSE_WAIT: Duration = Duration::from_secs(1);

type TaskResult = Result<(), DaemonError>;

/// The named tasks.
#[derive(Default)]
pub(super) struct Tasks {
    set: JoinSet<TaskResult>,
    names: HashMap<Id, &'static str>,
}

/// Everything the running service is made of, built by `daemon::run`.
pub(super) struct Parts {
    pub ingest: Ingest,
    pub source: Source,
    pub reader: Reader,
    pub channels: ingest::Channels,
    pub mailer: Mailer,
    pub alertmanager: AlertmanagerTask,
    pub wake: Wake,
    pub config: watch::Receiver<Arc<Config>>,
    pub unix: tokio::net::UnixListener,
    pub tcp: Option<tokio::net::TcpListener>,
    pub api: Arc<ApiState>,
    pub config_path: PathBuf,
    pub control: mpsc::Sender<Control>,
    /// Handles signals (SIGTERM, SIGINT, SIGHUP).
    pub signals: bool,
    /// Talks to systemd, from what these publish.
    pub systemd: Option<Published>,
}

/// What the tasks publish, for the systemd task.
pub(super) struct Published {
    pub status: watch::Receiver<StatusSnapshot>,
    pub mail: watch::Receiver<DeliveryStats>,
    pub alertmanager: watch::Receiver<DeliveryStats>,
}

impl Tasks {
    /// Runs `f` as the task `name`, in `span`.
    pub(super) fn spawn(
        &mut self,
        name: &'static str,
        span: tracing::Span,
        f: impl Future<Output = TaskResult> + Send + 'static,
    ) {
        let id = self.set.spawn(f.instrument(span)).id();
        self.names.insert(id, name);
    }

    fn name(&self, id: Id) -> &'static str {
        self.names.get(&id).copied().unwrap_or("a")
    }

    fn panicked(&self, e: &JoinError) -> DaemonError {
        DaemonError::Task {
            task: self.name(e.id()),
            what: "panicked".into(),
        }
    }

    /// Starts every task of the service; they end on `stop`.
    pub(super) fn start(p: Parts, stop: &CancellationToken) -> Self {
        use tracing::info_span;
        let mut t = Self::default();
        let st = stop.clone();
        let (ingest, source, reader, channels) = (p.ingest, p.source, p.reader, p.channels);
        t.spawn("ingest", info_span!("ingest"), async move {
            ingest
                .run(source, reader, channels, Mode::Follow, st)
                .await
                .map(|_| ())
        });
        let (st, w, cr) = (stop.clone(), p.wake.email.clone(), p.config.clone());
        t.spawn("mailer", info_span!("mailer"), async move {
            p.mailer.run(w, cr, st).await;
            Ok(())
        });
        let (st, w, cr) = (stop.clone(), p.wake.alertmanager.clone(), p.config);
        t.spawn("alertmanager", info_span!("alertmanager"), async move {
            p.alertmanager.run(w, cr, st).await;
            Ok(())
        });
        let (st, app) = (stop.clone(), server::socket_router(p.api.clone()));
        t.spawn("query server", info_span!("query_server"), async move {
            server::serve(p.unix, app, st).await;
            Ok(())
        });
        if let Some(tcp) = p.tcp {
            let (st, app) = (stop.clone(), server::metrics_router(p.api.clone()));
            t.spawn("metrics server", info_span!("metrics_server"), async move {
                server::serve(tcp, app, st).await;
                Ok(())
            });
        }
        let (st, c, path) = (stop.clone(), p.control.clone(), p.config_path);
        t.spawn("config watcher", info_span!("config_watcher"), async move {
            config_watch::run(path, c, st).await;
            Ok(())
        });
        if p.signals {
            let (st, c) = (stop.clone(), p.control.clone());
            t.spawn("signals", info_span!("signals"), super::signals(c, st));
        }
        if let Some(pb) = p.systemd {
            systemd::notify(&[("READY", "1")]);
            let (st, c) = (stop.clone(), p.control.clone());
            t.spawn("systemd", info_span!("systemd"), async move {
                systemd::run(pb.status, pb.mail, pb.alertmanager, c, st).await;
                Ok(())
            });
        }
        t
    }

    /// Runs until `stop` or the first failure, then stops every task:
    /// why the service stopped, if not because it was told to.
    pub(super) async fn run(
        mut self,
        stop: &CancellationToken,
        systemd: bool,
    ) -> Option<DaemonError> {
        let mut failure = self.first_failure(stop).await;
        if systemd {
            systemd::notify(&[("STOPPING", "1")]);
        }
        if let Some(f) = &failure {
            tracing::error!("{f}; stopping");
        } else {
            tracing::info!("stopping: committing and exiting");
        }
        self.drain(stop, &mut failure).await;
        failure
    }

    /// Waits for `stop` or the first task to end; returns why the service
    /// stops, if not because it was told to.
    pub(super) async fn first_failure(&mut self, stop: &CancellationToken) -> Option<DaemonError> {
        let done = tokio::select! {
            () = stop.cancelled() => return None,
            Some(done) = self.set.join_next_with_id() => done,
        };
        let failure = match done {
            Err(e) if e.is_panic() => self.panicked(&e),
            Err(e) => DaemonError::Task {
                task: self.name(e.id()),
                what: "was cancelled".into(),
            },
            Ok((_, Err(e))) => return Some(e),
            Ok((_, Ok(()))) if stop.is_cancelled() => return None,
            Ok((id, Ok(()))) => DaemonError::Task {
                task: self.name(id),
                what: "ended unexpectedly".into(),
            },
        };
        if !matches!(&failure, DaemonError::Task { what, .. } if what == "ended unexpectedly") {
            return Some(failure);
        }
        // A task that ends by itself usually does so because another one
        // failed and dropped its channels (the systemd task, the mailer and
        // the Alertmanager task when ingest stops on a full disk): say the
        // error that caused it, if it comes within a moment, rather than
        // the consequence.
        let deadline = tokio::time::Instant::now() + CAUSE_WAIT;
        loop {
            match tokio::time::timeout_at(deadline, self.set.join_next_with_id()).await {
                Ok(Some(Ok((_, Err(e))))) if !matches!(e, DaemonError::Stopped) => return Some(e),
                Ok(Some(Err(e))) if e.is_panic() => return Some(self.panicked(&e)),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return Some(failure),
            }
        }
    }

    /// Tells every task to end (`stop`) and waits for them, at most
    /// [`DRAIN`]; the first error met is kept in `failure`.
    pub(super) async fn drain(
        &mut self,
        stop: &CancellationToken,
        failure: &mut Option<DaemonError>,
    ) {
        stop.cancel();
        // Every task ends on the token; a bound all the same, well inside
        // TimeoutStopSec.
        let drained = tokio::time::timeout(DRAIN, async {
            while let Some(done) = self.set.join_next_with_id().await {
                match done {
                    Ok((id, Err(e))) if !matches!(e, DaemonError::Stopped) => {
                        let task = self.name(id);
                        tracing::error!(task, "the {task} task: {e}");
                        failure.get_or_insert(e);
                    }
                    Err(e) if e.is_panic() => {
                        failure.get_or_insert(self.panicked(&e));
                    }
                    _ => {}
                }
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                "some tasks did not end within {}s; exiting anyway",
                DRAIN.as_secs()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_error_stops_the_service_and_names_its_cause() {
        let stop = CancellationToken::new();
        let mut t = Tasks::default();
        let st = stop.clone();
        t.spawn("waits", tracing::Span::none(), async move {
            st.cancelled().await;
            Ok(())
        });
        // A task that ends by itself, then the one whose error caused it.
        t.spawn("ends", tracing::Span::none(), async { Ok(()) });
        t.spawn("fails", tracing::Span::none(), async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err(DaemonError::Task {
                task: "fails",
                what: "broke".into(),
            })
        });
        let f = t.first_failure(&stop).await.unwrap();
        assert_eq!(f.to_string(), "the fails task broke");
        let mut failure = Some(f);
        t.drain(&stop, &mut failure).await;
        assert!(t.set.is_empty());
        assert_eq!(failure.unwrap().to_string(), "the fails task broke");
    }

    #[tokio::test]
    async fn a_panic_is_reported_by_name_and_a_stop_is_no_failure() {
        let stop = CancellationToken::new();
        let mut t = Tasks::default();
        t.spawn("boom", tracing::Span::none(), async { panic!("boom") });
        let f = t.first_failure(&stop).await.unwrap();
        assert_eq!(f.to_string(), "the boom task panicked");
        let mut t = Tasks::default();
        let st = stop.clone();
        t.spawn("waits", tracing::Span::none(), async move {
            st.cancelled().await;
            Err(DaemonError::Stopped)
        });
        stop.cancel();
        assert!(t.first_failure(&stop).await.is_none());
        let mut failure = None;
        t.drain(&stop, &mut failure).await;
        assert!(failure.is_none());
    }
}
