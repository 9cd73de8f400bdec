//! Reader supervision: the questions ingest asks the journal reader (a
//! quiet check, `Sync`; a watchdog `Ping`) and their answers, and the
//! reader's restart with a backoff when it fails or ends.
//!
//! Time (design section 4.1): wall time moves a host's clock only for quiet
//! the journal confirms. When an open incident would be due, ingest asks the
//! reader to look again; only its answer, after every entry written
//! meanwhile has arrived, lets wall time count.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::super::{DaemonError, Source};
use crate::journal::{Mode, Reader, ReaderCtl};
use sentinel_core::model::Position;
use sentinel_core::time::{Micros, SECOND, human_duration};

/// Quiet checks are at least this far apart, whatever the deadlines say.
const SYNC_SPACING: Duration = Duration::from_millis(50);
/// The first wait before a reader is started again, doubled each time…
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// …up to this.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// The reader's questions in flight and its restarts.
#[derive(Debug)]
pub(super) struct Supervisor {
    next_id: u64,
    /// Watchdog pings waiting for the reader's pong.
    pongs: HashMap<u64, oneshot::Sender<()>>,
    /// A `Sync` asked of the reader and the wall time it was asked at.
    sync_pending: Option<(u64, Micros)>,
    /// When the last sync was answered: the next is asked no sooner than
    /// [`SYNC_SPACING`] after it.
    last_sync: Instant,
    restarts: u64,
    backoff: Duration,
}

impl Supervisor {
    pub(super) fn new() -> Self {
        Self {
            next_id: 1,
            pongs: HashMap::new(),
            sync_pending: None,
            last_sync: Instant::now(),
            restarts: 0,
            backoff: FIRST_BACKOFF,
        }
    }

    /// How often the reader was started again.
    pub(super) fn restarts(&self) -> u64 {
        self.restarts
    }

    fn ask(
        &mut self,
        ctl: &mpsc::UnboundedSender<ReaderCtl>,
        c: impl FnOnce(u64) -> ReaderCtl,
    ) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        // A reader that is gone says so on its event channel, where the
        // restart happens.
        let _ = ctl.send(c(id));
        id
    }

    /// The watchdog: `reply` is answered when the reader's pong comes.
    pub(super) fn ping(
        &mut self,
        ctl: &mpsc::UnboundedSender<ReaderCtl>,
        reply: oneshot::Sender<()>,
    ) {
        let id = self.ask(ctl, ReaderCtl::Ping);
        self.pongs.insert(id, reply);
    }

    pub(super) fn pong(&mut self, id: u64) {
        if let Some(reply) = self.pongs.remove(&id) {
            let _ = reply.send(());
        }
    }

    /// Asks the reader to look again, at wall time `wall`.
    pub(super) fn sync(&mut self, ctl: &mpsc::UnboundedSender<ReaderCtl>, wall: Micros) {
        let id = self.ask(ctl, ReaderCtl::Sync);
        self.sync_pending = Some((id, wall));
    }

    /// The reader reached the end having seen syncs up to `sync`: the wall
    /// time whose quiet that confirms, if it answers the pending one.
    pub(super) fn tail(&mut self, sync: u64) -> Option<Micros> {
        let (id, wall) = self.sync_pending?;
        if sync < id {
            return None;
        }
        self.sync_pending = None;
        self.last_sync = Instant::now();
        Some(wall)
    }

    /// When to ask for a quiet check, for a host due at wall time
    /// `due` (none while one is pending).
    pub(super) fn quiet_at(&self, due: Option<Micros>, now: Micros) -> Option<Instant> {
        if self.sync_pending.is_some() {
            return None;
        }
        due.map(|wall| wall_to_instant(wall, now).max(self.last_sync + SYNC_SPACING))
    }

    /// Entries came: the reader works, the next restart waits the least.
    pub(super) fn healthy(&mut self) {
        self.backoff = FIRST_BACKOFF;
    }

    /// Starts a reader after `position` again, after the backoff; until
    /// `shutdown`. Questions to the old reader are forgotten.
    pub(super) async fn restart(
        &mut self,
        source: &Source,
        position: &Position,
        shutdown: &CancellationToken,
    ) -> Result<Reader, DaemonError> {
        self.sync_pending = None;
        self.pongs.clear();
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return Err(DaemonError::Stopped),
                () = tokio::time::sleep(self.backoff) => {}
            }
            self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
            self.restarts += 1;
            match source(position, Mode::Follow) {
                Ok(r) => return Ok(r),
                Err(e) => tracing::error!(
                    restarts = self.restarts,
                    "journal reader: {e}; trying again in {}",
                    human_duration(self.backoff.as_micros() as Micros)
                ),
            }
        }
    }
}

/// The monotonic instant of a wall-clock time.
fn wall_to_instant(wall: Micros, now: Micros) -> Instant {
    Instant::now() + Duration::from_micros((wall - now).clamp(0, 365 * 86_400 * SECOND) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_answer_to_the_pending_sync_confirms_quiet() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut s = Supervisor::new();
        assert_eq!(s.tail(7), None, "nothing asked");
        s.sync(&tx, 1000);
        let Ok(ReaderCtl::Sync(id)) = rx.try_recv() else {
            panic!("no sync sent")
        };
        assert_eq!(s.quiet_at(Some(0), 0), None, "one check at a time");
        assert_eq!(s.tail(id - 1), None, "an older answer");
        assert_eq!(s.tail(id), Some(1000));
        assert_eq!(s.tail(id), None, "answered once");
        assert!(s.quiet_at(Some(0), 0).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn quiet_checks_are_spaced() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut s = Supervisor::new();
        s.sync(&tx, 0);
        s.tail(u64::MAX);
        let at = s.quiet_at(Some(0), 0).unwrap();
        assert!(at >= Instant::now() + SYNC_SPACING);
        let later = s.quiet_at(Some(5 * SECOND), 0).unwrap();
        assert!(later >= Instant::now() + Duration::from_secs(5));
        assert_eq!(s.quiet_at(None, 0), None);
    }

    #[test]
    fn a_pong_answers_its_ping() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut s = Supervisor::new();
        let (reply, mut answered) = oneshot::channel();
        s.ping(&tx, reply);
        let Ok(ReaderCtl::Ping(id)) = rx.try_recv() else {
            panic!("no ping sent")
        };
        s.pong(id + 1);
        assert!(answered.try_recv().is_err());
        s.pong(id);
        assert!(answered.try_recv().is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_reader_is_retried_with_a_growing_backoff_until_shutdown() {
        let tries = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let t = tries.clone();
        let source: Source = std::sync::Arc::new(move |_: &Position, _| {
            t.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Err(crate::journal::SourceError::Journal {
                path: "/nowhere".into(),
                message: "no journal".into(),
            })
        });
        let mut s = Supervisor::new();
        let stop = CancellationToken::new();
        let started = Instant::now();
        let r = tokio::time::timeout(
            Duration::from_secs(30),
            s.restart(&source, &Position::default(), &stop),
        )
        .await;
        assert!(r.is_err(), "still trying");
        // 0.2 + 0.4 + 0.8 + 1.6 + 3.2 + 6.4 + 10 + 10 …: seven tries in 30 s.
        assert_eq!(tries.load(std::sync::atomic::Ordering::Relaxed), 7);
        assert_eq!(s.restarts(), 7);
        assert!(started.elapsed() >= Duration::from_secs(30));
        stop.cancel();
        let r = s.restart(&source, &Position::default(), &stop).await;
        assert!(matches!(r, Err(DaemonError::Stopped)));
        s.healthy();
        assert_eq!(s.backoff, FIRST_BACKOFF);
    }
}
