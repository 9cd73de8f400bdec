//! The query commands (`incidents`, `show`, `nodes`, `status`), and how
//! every command that asks the service gets its answer: over the socket
//! while the service runs, from the store (the same query code) when it
//! does not.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{self, ClientError, Refusal, Request};
use crate::cli::args::{Exit, Output};
use crate::cli::{load_for_query, load_for_query_socket, render};
use crate::config::Config;
use crate::query::{self, IncidentList, NodeList, QueryError, StatusOut};
use crate::report::IncidentOut;
use crate::store::{Filter, Store, StoreError};
use sentinel_core::time::Zone;

/// Why a command has no answer to show.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Neither the service nor a store to read.
    NotRunning(String),
    /// The service refused this user (root or `[api] admin_group` may).
    Forbidden(String),
    Failed(String),
}

impl Failure {
    /// Says what went wrong on `err`; the exit code of a command whose
    /// only answer this is.
    pub(crate) fn report(self, err: &mut dyn Write) -> Exit {
        let (why, exit) = match self {
            Failure::NotRunning(why) | Failure::Failed(why) => (why, Exit::Failure),
            Failure::Forbidden(why) => (why, Exit::Forbidden),
        };
        let _ = writeln!(err, "kubelet-sentinel: {why}");
        exit
    }
}

/// Asks the running service; when it is not running, answers `offline`
/// from the store.
pub(crate) fn ask_or_read<T: DeserializeOwned>(
    config: &Config,
    req: &Request,
    offline: impl FnOnce(&Store) -> Result<T, QueryError>,
) -> Result<T, Failure> {
    let socket = PathBuf::from(&config.api.socket);
    let not_running = match api::ask::<T>(&socket, req) {
        Ok(answer) => return Ok(answer),
        Err(ClientError::NotRunning(e)) => e,
        Err(ClientError::PermissionDenied(p)) => {
            return Err(Failure::Failed(format!(
                "permission denied on the query socket {}: join the systemd-journal group (or run as root)",
                p.display()
            )));
        }
        Err(ClientError::Refused(Refusal::Forbidden, why)) => return Err(Failure::Forbidden(why)),
        Err(ClientError::Refused(_, why) | ClientError::Other(why)) => {
            return Err(Failure::Failed(why));
        }
    };
    let path = config.store_path();
    let opened = match (req, Store::open_existing(&path)) {
        // A silence set up before the service ever ran (before its install
        // finishes, ahead of planned work) makes the store it will use.
        (Request::AddSilence(_), Ok(None)) => Store::open(&path).map(Some),
        (_, opened) => opened,
    };
    match opened {
        Ok(Some(store)) => {
            let answer = offline(&store).map_err(|e| Failure::Failed(e.to_string()));
            for words in store.take_set_aside() {
                eprintln!("kubelet-sentinel: store {}: {words}", path.display());
            }
            answer
        }
        Ok(None) => Err(Failure::NotRunning(format!(
            "the service is not running (socket {}: {not_running}) and there is no store yet at {}",
            socket.display(),
            path.display()
        ))),
        Err(StoreError::Locked { .. }) => Err(Failure::Failed(format!(
            "the service does not answer on {} ({not_running}) and the store {} is locked by another process",
            socket.display(),
            path.display()
        ))),
        Err(e) if e.is_permission_denied() => Err(Failure::NotRunning(format!(
            "the service is not running and the store {} is not readable by this user (under \
             systemd it lives in /var/lib/private, root only): start the service, or run this as root",
            path.display()
        ))),
        Err(e) => Err(Failure::Failed(e.to_string())),
    }
}

/// An answer on stdout: its JSON (`-o json`), or the table drawn from it.
pub(crate) fn show<T: Serialize>(
    answer: &T,
    output: Output,
    table: impl FnOnce(&T) -> String,
    out: &mut dyn Write,
) -> Exit {
    let text = match output {
        Output::Json => serde_json::to_string_pretty(answer).unwrap_or_default() + "\n",
        Output::Table => table(answer),
    };
    if out.write_all(text.as_bytes()).is_err() {
        return Exit::Failure;
    }
    Exit::Ok
}

/// `incidents`: the query, cut to `limit` (0: all) with a word on stderr
/// when there were more, so a script reading `-o json` is never cut short
/// without being told.
pub(crate) fn incidents(
    config_path: Option<&PathBuf>,
    filter: &Filter,
    limit: usize,
    output: Output,
    zone: Zone,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let config = load_for_query(config_path, err);
    let req = Request::Incidents(filter.clone());
    let mut list: IncidentList =
        match ask_or_read(&config, &req, |s| query::incidents(s, None, filter)) {
            Ok(l) => l,
            Err(e) => return e.report(err),
        };
    if limit > 0 && list.incidents.len() > limit {
        list.incidents.truncate(limit);
        said_cut(err, limit);
    }
    show(&list, output, |l| render::incidents(l, zone), out)
}

/// `show ID`.
pub(crate) fn incident(
    config_path: Option<&PathBuf>,
    id: &str,
    output: Output,
    zone: Zone,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let config = load_for_query(config_path, err);
    let req = Request::Incident(id.to_string());
    match ask_or_read::<IncidentOut>(&config, &req, |s| query::incident(s, None, id)) {
        Ok(i) => show(&i, output, |i| render::incident(i, zone), out),
        Err(e) => e.report(err),
    }
}

/// `starts`, newest first: at most `limit` (0: all), and says so when
/// there were more (the fleet line is over those shown).
pub(crate) fn starts(
    config_path: Option<&PathBuf>,
    filter: &crate::store::StartFilter,
    limit: usize,
    output: Output,
    zone: Zone,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let config = load_for_query(config_path, err);
    let req = Request::Starts(filter.clone());
    let mut list: query::StartList =
        match ask_or_read(&config, &req, |s| query::starts(s, None, filter)) {
            Ok(l) => l,
            Err(e) => return e.report(err),
        };
    if limit > 0 && list.starts.len() > limit {
        list.starts.truncate(limit);
        list.fleet = crate::report::starts::StartsSummary::of(&list.starts);
        said_cut(err, limit);
    }
    show(
        &list,
        output,
        |l| crate::report::starts::table(&l.starts, zone),
        out,
    )
}

/// `nodes`.
pub(crate) fn nodes(
    config_path: Option<&PathBuf>,
    output: Output,
    zone: Zone,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let config = load_for_query(config_path, err);
    match ask_or_read::<NodeList>(&config, &Request::Nodes, |s| query::nodes(s, None)) {
        Ok(n) => show(&n, output, |n| render::nodes(n, zone), out),
        Err(e) => e.report(err),
    }
}

/// `status`, with an exit code a monitoring check can use: 0 running and
/// delivering, 3 not running (as `systemctl is-active`), 5 running but alerts
/// are not getting out, 1 when it cannot be told.
pub(crate) fn status(
    config_path: Option<&PathBuf>,
    output: Output,
    zone: Zone,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let (config, socket_guessed) = load_for_query_socket(config_path, err);
    // Not answering on a socket that is only a guess says nothing of a
    // service that may run on another: that cannot be told (1), not "not
    // running" (3).
    let cannot_tell = || {
        format!(
            "cannot tell whether the service runs: nothing answers on {}, and the config's \
             [api] socket line cannot be read (kubelet-sentinel check-config names the line; \
             or pass --config with a file that names the socket)",
            config.api.socket
        )
    };
    let s: StatusOut = match ask_or_read(&config, &Request::Status, |s| query::status(s, None)) {
        Ok(s) if socket_guessed && s.service != "running" => {
            let _ = writeln!(err, "kubelet-sentinel: {}", cannot_tell());
            return Exit::Failure;
        }
        Ok(s) => s,
        Err(Failure::NotRunning(why) | Failure::Failed(why)) if socket_guessed => {
            let _ = writeln!(err, "kubelet-sentinel: {} ({why})", cannot_tell());
            return Exit::Failure;
        }
        Err(Failure::NotRunning(why)) => {
            // No store either: nothing to show but that it is not running.
            let _ = writeln!(err, "kubelet-sentinel: {why}");
            return Exit::NotRunning;
        }
        Err(e) => {
            let _ = e.report(err);
            return Exit::Failure;
        }
    };
    if show(&s, output, |s| render::status(s, zone), out) != Exit::Ok {
        return Exit::Failure;
    }
    if output == Output::Table
        && matches!(
            config.journal.target,
            crate::config::JournalTarget::Directory(_)
        )
    {
        if let Some(on) = s.silent_incidents {
            let _ = writeln!(
                out,
                "note: host-silent {}",
                silent_incidents_words(on, &config)
            );
        }
    }
    if s.service != "running" {
        Exit::NotRunning
    } else if s.deliveries_failing {
        Exit::Degraded
    } else {
        Exit::Ok
    }
}

/// On a collector: whether a silent host opens an incident and alerts, and
/// how to change it (`status`, `check-config`).
pub(crate) fn silent_incidents_words(on: bool, config: &Config) -> String {
    let after = sentinel_core::time::human_duration(config.fleet.silent_after.0);
    if on {
        format!(
            "incidents on: a host with nothing for {after} while others write \
             opens a host-silent incident and alerts ([fleet] silent_incidents = true)"
        )
    } else {
        format!(
            "incidents off: a host with nothing for {after} is listed \
             (silent_hosts) but opens no incident and alerts nothing; set [fleet] \
             silent_incidents = true (systemctl reload applies it) to alert"
        )
    }
}

/// Says on stderr that a list was cut at `limit`.
fn said_cut(err: &mut dyn Write, limit: usize) {
    let _ = writeln!(
        err,
        "kubelet-sentinel: the newest {limit} shown; there are more (--limit 0 lists all)"
    );
}
