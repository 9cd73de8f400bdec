//! The command line: the definitions ([`args`]), one file a command
//! (`commands/`), and the tables drawn from the typed answers
//! (`render.rs`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser as _;

use crate::config::{self, Config};
use crate::store::Filter;
use sentinel_core::tracker::Status;

pub(crate) mod args;
mod commands;
mod render;

pub use args::Cli;
pub(crate) use args::{Command, Exit, IncidentsArgs};
pub(crate) use commands::scan::run_scan;
pub(crate) use commands::service::run_service;

fn load_config(path: Option<&PathBuf>, err: &mut dyn Write) -> Result<Config, Exit> {
    let (p, explicit) = match path {
        Some(p) => (p.clone(), true),
        None => (PathBuf::from(config::DEFAULT_PATH), false),
    };
    Config::load(&p, explicit).map_err(|e| {
        let _ = writeln!(err, "kubelet-sentinel: {e}");
        Exit::Config
    })
}

/// The config for a query or control command: on a broken file, the error
/// is said (file, line) and the command goes on with the socket and store
/// the file names where they can be read, the defaults otherwise, so a
/// half-finished edit never takes `status`, `incidents`, `ack` or `silence`
/// away while the service runs on its old settings.
fn load_for_query(path: Option<&PathBuf>, err: &mut dyn Write) -> Config {
    load_for_query_socket(path, err).0
}

/// [`load_for_query`], and whether the socket asked is a guess (the file's
/// `[api] socket` line cannot be read): then a service that does not
/// answer there may still run elsewhere.
fn load_for_query_socket(path: Option<&PathBuf>, err: &mut dyn Write) -> (Config, bool) {
    let (p, explicit) = match path {
        Some(p) => (p.clone(), true),
        None => (PathBuf::from(config::DEFAULT_PATH), false),
    };
    let (config, problem, socket_unread) = Config::load_for_query(&p, explicit);
    if let Some(e) = problem {
        let guess = if socket_unread {
            " (its [api] socket line cannot be read: that is the default)"
        } else {
            ""
        };
        let _ = writeln!(
            err,
            "kubelet-sentinel: warning: {e}\nkubelet-sentinel: a running service keeps its \
             settings; asking it through {}{guess}",
            config.api.socket
        );
    }
    (config, socket_unread)
}

/// Parses the command line and runs the command.
#[must_use]
pub fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == commands::assets::COMMAND) {
        return packaging_assets(args.next().map(PathBuf::from)).into();
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                Exit::Usage
            } else {
                Exit::Ok
            }
            .into();
        }
    };
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let config = cli.config.as_ref();
    if let Command::Run { once } = cli.command {
        // No stderr lock held here: the service's threads log to stderr, and
        // a lock held by this thread would block them forever.
        return run_service(config, once, &mut std::io::stderr()).into();
    }
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    let exit = match cli.command {
        Command::Scan(args) => run_scan(&args, &mut out, &mut err),
        Command::Run { .. } => unreachable!("handled above"),
        Command::Incidents(a) => incidents(config, a, &mut out, &mut err),
        Command::Show { id, output, utc } => commands::query::incident(
            config,
            &id,
            output,
            crate::clock::zone(utc),
            &mut out,
            &mut err,
        ),
        Command::Starts(a) => starts(config, a, &mut out, &mut err),
        Command::Nodes { output, utc } => {
            commands::query::nodes(config, output, crate::clock::zone(utc), &mut out, &mut err)
        }
        Command::Status { output, utc } => {
            commands::query::status(config, output, crate::clock::zone(utc), &mut out, &mut err)
        }
        Command::TestEmail => commands::test_email::test_email(config, &mut out, &mut err),
        Command::Silence { action } => {
            commands::control::silence(config, action, &mut out, &mut err)
        }
        Command::Ack { id, comment } => {
            commands::control::ack(config, id, comment, &mut out, &mut err)
        }
        Command::Reload => commands::reload::reload(config, &mut out, &mut err),
        Command::CheckConfig => commands::check_config::check_config(config, &mut out, &mut err),
    };
    exit.into()
}

/// `__packaging-assets DIR`: the man pages and completions, for `make
/// assets` (see [`commands::assets`]).
fn packaging_assets(dir: Option<PathBuf>) -> Exit {
    let Some(dir) = dir else {
        eprintln!("usage: kubelet-sentinel {} DIR", commands::assets::COMMAND);
        return Exit::Usage;
    };
    match commands::assets::generate(&dir) {
        Ok(()) => {
            println!("wrote the man pages and completions to {}", dir.display());
            Exit::Ok
        }
        Err(e) => {
            eprintln!("kubelet-sentinel: writing to {}: {e}", dir.display());
            Exit::Failure
        }
    }
}

/// `incidents`: its flags read into a [`Filter`] (a time that cannot be
/// read is a usage error), then the query.
fn incidents(
    config: Option<&PathBuf>,
    a: IncidentsArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let now = crate::clock::now();
    let when = |flag: &str, v: &Option<String>| when(flag, v.as_deref(), now, a.utc);
    let (since, until) = match (when("--since", &a.since), when("--until", &a.until)) {
        (Ok(s), Ok(u)) => (s, u),
        (Err(e), _) | (_, Err(e)) => {
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            return Exit::Usage;
        }
    };
    let filter = Filter {
        node: a.node,
        open: a.open || a.status == Some(Status::Open),
        resolved: a.status == Some(Status::Resolved),
        since,
        until,
        kind: a.kind,
        verdict: a.verdict,
        cause: a.cause,
        host: a.host,
        endpoint: a.endpoint,
        // One more than shown: whether the list was cut is said.
        limit: (a.limit > 0).then(|| a.limit.saturating_add(1)),
    };
    commands::query::incidents(
        config,
        &filter,
        a.limit,
        a.output,
        crate::clock::zone(a.utc),
        out,
        err,
    )
}

fn starts(
    config: Option<&PathBuf>,
    a: args::StartsArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let since = match when("--since", a.since.as_deref(), crate::clock::now(), a.utc) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            return Exit::Usage;
        }
    };
    let filter = crate::store::StartFilter {
        node: a.node,
        since,
        verdict: a.verdict,
        // One more than shown: whether the list was cut is said.
        limit: (a.limit > 0).then(|| a.limit.saturating_add(1)),
    };
    commands::query::starts(
        config,
        &filter,
        a.limit,
        a.output,
        crate::clock::zone(a.utc),
        out,
        err,
    )
}

/// A `--since`/`--until` value as journalctl takes it, at `now`; the
/// error names the flag.
fn when(
    flag: &str,
    v: Option<&str>,
    now: sentinel_core::time::Micros,
    utc: bool,
) -> Result<Option<sentinel_core::time::Micros>, String> {
    v.map(|s| crate::clock::parse_when(s, now, utc).map_err(|e| format!("{flag} {e}")))
        .transpose()
}
