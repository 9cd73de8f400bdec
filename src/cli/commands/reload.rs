//! `reload`: have the running service apply the edited config file.

use std::io::Write;
use std::path::PathBuf;

use crate::api::{self, ClientError, Refusal, Request};
use crate::cli::args::Exit;
use crate::cli::load_config;
use crate::status::ReloadOutcome;

/// `reload`: validate the file, then have the running service apply it.
pub(crate) fn reload(
    config_path: Option<&PathBuf>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let config = match load_config(config_path, err) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let socket = PathBuf::from(&config.api.socket);
    match api::ask::<ReloadOutcome>(&socket, &Request::Reload) {
        Ok(o) => {
            let _ = writeln!(out, "config applied from {}", o.path);
            if !o.restart_needed.is_empty() {
                let _ = writeln!(
                    out,
                    "these changes need a restart (systemctl restart kubelet-sentinel): {}",
                    o.restart_needed.join(", ")
                );
            }
            if o.announced > 0 {
                let _ = writeln!(
                    out,
                    "{} open incident{} over threshold announced",
                    o.announced,
                    if o.announced == 1 { "" } else { "s" }
                );
            }
            if let Some(p) = o.delivery_problem {
                let _ = writeln!(
                    err,
                    "kubelet-sentinel: but email alerts cannot be sent: {p}"
                );
                return Exit::Failure;
            }
            Exit::Ok
        }
        Err(ClientError::Refused(Refusal::Forbidden, msg)) => {
            let _ = writeln!(err, "kubelet-sentinel: {msg}");
            Exit::Forbidden
        }
        Err(ClientError::Refused(why, msg)) => {
            let _ = writeln!(
                err,
                "kubelet-sentinel: the service refused the config: {msg}"
            );
            if why == Refusal::BrokenConfig {
                Exit::Config
            } else {
                Exit::Failure
            }
        }
        Err(ClientError::NotRunning(e)) => {
            let _ = writeln!(
                err,
                "kubelet-sentinel: the service is not running ({}: {e}); the config is valid",
                socket.display()
            );
            Exit::Failure
        }
        Err(ClientError::PermissionDenied(p)) => {
            let _ = writeln!(
                err,
                "kubelet-sentinel: permission denied on the query socket {}",
                p.display()
            );
            Exit::Failure
        }
        Err(ClientError::Other(e)) => {
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            Exit::Failure
        }
    }
}
