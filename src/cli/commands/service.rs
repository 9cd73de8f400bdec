//! `run`: the service, with its runtime and logging.

use std::io::Write;
use std::path::PathBuf;

use crate::cli::args::Exit;
use crate::config::{self, Config};
use crate::daemon::{self, RunOptions};

fn init_tracing() {
    use std::io::IsTerminal as _;
    use tracing_subscriber::prelude::*;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Under systemd, stderr is connected to the journal: log there natively.
    if std::env::var_os("JOURNAL_STREAM").is_some() {
        if let Ok(layer) = tracing_journald::layer() {
            tracing_subscriber::registry()
                .with(filter)
                .with(layer)
                .init();
            return;
        }
    }
    tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::stderr().is_terminal())
                .with_target(false),
        )
        .init();
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    // Two workers: ingest's CPU work during catch-up never starves the
    // query server.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("kubelet-sentinel")
        .enable_all()
        .build()
}

/// Runs the service.
pub(crate) fn run_service(config_path: Option<&PathBuf>, once: bool, err: &mut dyn Write) -> Exit {
    let path = config_path.map_or_else(|| PathBuf::from(config::DEFAULT_PATH), Clone::clone);
    let config = match Config::load(&path, config_path.is_some()) {
        Ok(c) => c,
        Err(e) => {
            // Under systemd the journal names the unit: the error alone, and
            // the same as the unit's status line, for `systemctl status`.
            if std::env::var_os("JOURNAL_STREAM").is_some() {
                let _ = writeln!(err, "config error: {e}");
                let status = format!("config error: {e}");
                let _ = systemd::daemon::notify([("STATUS", status.as_str())].iter());
            } else {
                let _ = writeln!(err, "kubelet-sentinel: {e}");
            }
            return Exit::Config;
        }
    };
    init_tracing();
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the runtime: {e}");
            return Exit::Failure;
        }
    };
    let opts = RunOptions {
        once,
        config_path: config_path
            .cloned()
            .unwrap_or_else(|| PathBuf::from(config::DEFAULT_PATH)),
        config_explicit: config_path.is_some(),
    };
    let edges = daemon::Edges::real();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let result = rt.block_on(daemon::run(config, opts, edges, shutdown));
    // Tasks still blocked on the store or a socket do not hold the exit up.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    match result {
        Ok(()) => Exit::Ok,
        Err(e) => {
            tracing::error!("{e}");
            match &e {
                daemon::DaemonError::Store(s) if s.is_unreadable() => Exit::Data,
                _ => Exit::Failure,
            }
        }
    }
}
