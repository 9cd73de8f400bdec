//! Config reload: reads the file again, keeps the keys that need a restart
//! as the process started with them, and says what changed. It returns the
//! new settings; ingest applies them (it owns the tracker's settings) and
//! hands them to the delivery tasks.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::{Config, ConfigError};
use crate::status::ConfigStatus;
use sentinel_core::time::Micros;

/// Why a reload left the running settings as they were.
#[derive(Debug, thiserror::Error)]
pub(super) enum ReloadError {
    /// The file does not load: the running settings stay.
    #[error(transparent)]
    Refused(#[from] ConfigError),
    /// The blocking read did not come back (the runtime is stopping).
    #[error("{0}")]
    Interrupted(String),
}

/// A config read again, ready to apply.
#[derive(Debug)]
pub(super) struct Reloaded {
    /// The started config with the file's runtime keys.
    pub config: Arc<Config>,
    /// It differs from the settings in force.
    pub changed: bool,
    /// Changed keys that wait for a restart.
    pub restart: Vec<String>,
}

/// The config file and what became of its last reload.
#[derive(Debug)]
pub(super) struct Reloader {
    path: PathBuf,
    /// Named on the command line (a missing file is then an error).
    explicit: bool,
    /// The config the process started with: keys that need a restart.
    started: Arc<Config>,
    status: ConfigStatus,
}

impl Reloader {
    pub(super) fn new(started: Arc<Config>, path: PathBuf, explicit: bool, now: Micros) -> Self {
        Self {
            status: ConfigStatus {
                path: path.display().to_string(),
                applied_at: Some(now),
                ..ConfigStatus::default()
            },
            path,
            explicit,
            started,
        }
    }

    /// How the running configuration came to be, for `status`.
    pub(super) fn status(&self) -> &ConfigStatus {
        &self.status
    }

    pub(super) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Reads the file again (off the async threads) and makes the settings
    /// to apply at `now`; `running` is the config in force. A broken file
    /// is refused, logged and recorded for `status`.
    pub(super) async fn reload(
        &mut self,
        running: &Config,
        now: Micros,
    ) -> Result<Reloaded, ReloadError> {
        let path = self.path.clone();
        let explicit = self.explicit;
        let loaded = tokio::task::spawn_blocking(move || Config::load(&path, explicit))
            .await
            .map_err(|e| ReloadError::Interrupted(e.to_string()))?;
        let new = match loaded {
            Ok(c) => c,
            Err(e) => {
                let why = e.to_string();
                tracing::error!(
                    path = %self.path.display(),
                    "config refused, the running settings stay: {why}"
                );
                self.status.last_error = Some(why);
                return Err(e.into());
            }
        };
        Ok(self.apply(&new, running, now))
    }

    fn apply(&mut self, new: &Config, running: &Config, now: Micros) -> Reloaded {
        let restart = self.started.needs_restart(new);
        let config = Arc::new(self.started.apply_runtime(new));
        let changed = *config != *running;
        self.status.applied_at = Some(now);
        self.status.last_error = None;
        self.status.restart_needed.clone_from(&restart);
        if !restart.is_empty() {
            tracing::warn!(
                "config changes that need a restart (systemctl restart kubelet-sentinel): {}",
                restart.join(", ")
            );
        }
        Reloaded {
            config,
            changed,
            restart,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reloader(dir: &std::path::Path, text: &str) -> (Reloader, Arc<Config>) {
        let path = dir.join("config.toml");
        std::fs::write(&path, text).unwrap();
        let started = Arc::new(Config::load(&path, true).unwrap());
        (Reloader::new(started.clone(), path, true, 1), started)
    }

    #[tokio::test]
    async fn a_broken_file_is_refused_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let (mut r, started) = reloader(dir.path(), "");
        std::fs::write(r.path(), "[incidents\n").unwrap();
        let e = r.reload(&started, 5).await.unwrap_err();
        assert!(matches!(e, ReloadError::Refused(_)), "{e}");
        assert_eq!(
            r.status().last_error.as_deref(),
            Some(e.to_string().as_str())
        );
        assert_eq!(r.status().applied_at, Some(1), "the running settings stay");
        // Mended: applied, the error cleared.
        std::fs::write(r.path(), "").unwrap();
        let ok = r.reload(&started, 7).await.unwrap();
        assert!(!ok.changed && ok.restart.is_empty());
        assert_eq!(r.status().last_error, None);
        assert_eq!(r.status().applied_at, Some(7));
    }

    #[tokio::test]
    async fn runtime_keys_apply_and_restart_keys_wait() {
        let dir = tempfile::tempdir().unwrap();
        let (mut r, started) = reloader(dir.path(), "");
        std::fs::write(
            r.path(),
            "[incidents]\nretention = \"2d\"\n\n[journal]\nstart_at = \"all\"\n",
        )
        .unwrap();
        let new = r.reload(&started, 9).await.unwrap();
        assert!(new.changed);
        assert_eq!(new.restart, ["[journal] start_at"]);
        assert_eq!(r.status().restart_needed, new.restart);
        assert_eq!(new.config.journal.start_at, started.journal.start_at);
        assert_ne!(new.config.incidents.retention, started.incidents.retention);
    }
}
