//! The loop both delivery tasks (email and Alertmanager) run under the
//! service: look at the outbox when woken, when the next entry is due, or
//! after a reload; stop at shutdown.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::journal::Mode;
use crate::store::{Store, StoreError};
use sentinel_core::time::{Micros, SECOND};

/// A delivery task over its own outbox entries.
pub(crate) trait Deliverer {
    /// Names the outbox in log lines.
    const OUTBOX: &'static str;

    fn now(&self) -> Micros;

    /// Takes reloaded settings.
    fn configure(&mut self, config: &Config);

    /// Delivers what is due (everything, with [`Mode::Once`]); returns
    /// when next to look.
    async fn pass(
        &mut self,
        shutdown: &CancellationToken,
        mode: Mode,
    ) -> Result<Option<Micros>, StoreError>;

    /// Deliveries that failed so far.
    fn failed(&self) -> u64;
}

/// Delivers until `shutdown`. `wake` says alerts were committed; `config`
/// carries reloaded settings. A store error is logged and looked at again
/// in 5 s.
pub(crate) async fn run<D: Deliverer>(
    mut task: D,
    wake: Arc<Notify>,
    mut config: watch::Receiver<Arc<Config>>,
    shutdown: CancellationToken,
) {
    let mut next: Option<Micros> = Some(task.now());
    loop {
        let wait = next.map(|at| {
            tokio::time::Instant::now() + Duration::from_micros((at - task.now()).max(0) as u64)
        });
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = wake.notified() => {}
            () = super::sleep_until(wait) => {}
            changed = config.changed() => {
                if changed.is_err() {
                    return;
                }
                let c = config.borrow_and_update().clone();
                task.configure(&c);
            }
        }
        next = match task.pass(&shutdown, Mode::Follow).await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!("{} outbox: {e}", D::OUTBOX);
                Some(task.now() + 5 * SECOND)
            }
        };
    }
}

/// `run --once`: one attempt at everything, without waiting for
/// `group_wait` or backoff. Returns how many deliveries failed.
pub(crate) async fn deliver_all_once<D: Deliverer>(
    task: &mut D,
    shutdown: &CancellationToken,
) -> u64 {
    let before = task.failed();
    if let Err(e) = task.pass(shutdown, Mode::Once).await {
        tracing::error!("{} outbox: {e}", D::OUTBOX);
    }
    task.failed() - before
}

/// Runs `f` on the store off the async threads (sled blocks).
pub(crate) async fn on_store<T: Send + 'static>(
    store: &Store,
    f: impl FnOnce(Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    let path = store.path().to_path_buf();
    let store = store.clone();
    tokio::task::spawn_blocking(move || f(store))
        .await
        .unwrap_or_else(|e| Err(StoreError::interrupted(&path, "", &e)))
}
