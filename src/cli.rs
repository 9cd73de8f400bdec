//! The command line: one definition that clap parses, and that the man page
//! and shell completions are generated from.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::api::{self, ClientError, Request, Response};
use crate::config::{self, Config};
use crate::daemon::{self, RunOptions};
use crate::journal::{EntryFilter, Format, ReadOptions};
use crate::report::{self, IncidentOut};
use crate::scan::Input;
use crate::store::{Filter, Store, StoreError};
use crate::time::{Clock, Micros, Zone, parse_duration};
use crate::tracker::Settings;

/// Exit codes: 0 ok, 1 runtime failure, 2 usage, 3 `status`: the service
/// is not running, 4 `scan` read its input with losses (what was lost is on
/// stderr and in the summary), 5 `status`: running but alerts are not
/// getting out, 65 the store cannot be read (moving it aside is the fix;
/// restarting is not), 77 the service refused a change to this user
/// (silences, acknowledgements and reload need root or `[api]
/// admin_group`; sysexits' `EX_NOPERM`), 78 config error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    Failure = 1,
    Usage = 2,
    NotRunning = 3,
    Losses = 4,
    Degraded = 5,
    Data = 65,
    Forbidden = 77,
    Config = 78,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "kubelet-sentinel",
    version,
    about = "Tells the kubelet's harmless node-registration race from real node-status trouble",
    long_about = "kubelet-sentinel reads the kubelet's journal, recognises node-status trouble \
                  (status update retries, lister misses, failed registrations), groups it into \
                  per-node incidents, and tells the harmless start-up race from real trouble \
                  (API server unreachable, Node deleted, credentials expired)."
)]
pub struct Cli {
    /// The config file [default: /etc/kubelet-sentinel/config.toml; all defaults if it is missing].
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Analyse journal files or directories, `journalctl -o export|json` output or saved
    /// text logs, and print the incidents found. Touches no store.
    Scan(ScanArgs),
    /// The service: follow the kubelet's journal, keep incident history, answer queries.
    Run {
        /// Process everything available, then exit.
        #[arg(long)]
        once: bool,
    },
    /// List incident history (from the running service, or the store when it is stopped).
    Incidents(IncidentsArgs),
    /// One incident: counters, verdict, cause, diagnosis, and its timeline drawn as a picture.
    Show {
        /// The incident's id, or a unique prefix of it.
        id: String,
        #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
        output: Output,
        /// Times in UTC (local time by default, as journalctl).
        #[arg(long)]
        utc: bool,
    },
    /// One row per node: incidents, open, retries, last trouble, last verdict.
    Nodes {
        #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
        output: Output,
    },
    /// The service: journal position and lag, entries read, open incidents.
    Status {
        #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
        output: Output,
    },
    /// Validate the config file and print the effective settings.
    CheckConfig,
    /// Apply the edited config file to the running service (what `systemctl reload` runs);
    /// fails, with the reason, when the file is broken. The service also notices edits by itself.
    /// Needs root, the service's user or `[api] admin_group` (exit 77 otherwise).
    Reload,
    /// Send a sample alert through the configured transport and say exactly what failed.
    TestEmail,
    /// Hold back deliveries (email and Alertmanager) for a node pattern and/or a cause for a
    /// while; the incidents are still recorded. Still in trouble when it ends: announced then.
    /// Adding and expiring need root or `[api] admin_group` (exit 77 otherwise); listing, the
    /// socket's group.
    Silence {
        #[command(subcommand)]
        action: SilenceCmd,
    },
    /// Acknowledge an open incident: no more reminders for it; its resolved notice still goes
    /// out and says who acknowledged it. Needs root or `[api] admin_group` (exit 77 otherwise).
    Ack {
        /// The incident's id, or a unique prefix of it.
        id: String,
        /// Why, for the others on call.
        #[arg(long, default_value = "")]
        comment: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum SilenceCmd {
    /// Add a silence (you, the calling user, are recorded as its author).
    #[command(group(clap::ArgGroup::new("what").required(true).multiple(true).args(["node", "cause", "kind"])))]
    Add {
        /// A node name or a pattern (`*` any run of characters, `?` one): `worker-*`.
        #[arg(long)]
        node: Option<String>,
        /// Only incidents of this cause (lister-lag, node-missing, api-unreachable,
        /// api-timeout, auth, conflict, etcd, unknown; kubelet-down: swap, cgroup-driver,
        /// config, credentials, runtime, port-in-use, exec, killed).
        #[arg(long)]
        cause: Option<String>,
        /// Only incidents of this kind: node-status or kubelet-down (a node being
        /// rebuilt whose kubelet crash-loops until kubeadm join).
        #[arg(long, value_parser = ["node-status", "kubelet-down"])]
        kind: Option<String>,
        /// How long: 30m, 2h, 3d (at most 31d).
        #[arg(long = "for", value_parser = silence_length)]
        duration: Micros,
        /// Why ("kernel upgrade").
        #[arg(long)]
        comment: String,
    },
    /// Silences: active, pending and recently expired.
    List {
        #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
        output: Output,
    },
    /// End a silence now (its id or a unique prefix); who did it is recorded.
    Expire { id: String },
}

/// The calling user's name: the author when the CLI writes the store
/// itself (the service stopped). Over the socket the service takes it
/// from the connection's credentials instead.
fn caller() -> String {
    api::peer::current_user()
}

#[derive(Debug, Args)]
pub struct IncidentsArgs {
    /// Only this node's incidents.
    #[arg(long)]
    pub node: Option<String>,
    /// Only incidents still open.
    #[arg(long)]
    pub open: bool,
    /// Incidents with trouble since then, as journalctl takes it: "2026-11-29 18:15",
    /// yesterday, today, -2h, 24h (that long ago), or an RFC 3339 time. Local time unless
    /// --utc or a trailing " UTC".
    #[arg(long, allow_hyphen_values = true)]
    pub since: Option<String>,
    /// Incidents that opened before then (the same forms as --since).
    #[arg(long, allow_hyphen_values = true)]
    pub until: Option<String>,
    /// Times in UTC (shown, and read in --since and --until when they carry no zone);
    /// local time by default, as journalctl.
    #[arg(long)]
    pub utc: bool,
    /// Only incidents of this kind: node-status (the node's status updates) or
    /// kubelet-down (the kubelet itself crashing, killed, or given up on by systemd).
    #[arg(long, value_parser = ["node-status", "kubelet-down"])]
    pub kind: Option<String>,
    /// Only incidents with this verdict.
    #[arg(long, value_parser = ["startup-race", "transient", "persistent", "undetermined", "crash-loop", "failed"])]
    pub verdict: Option<String>,
    /// Only incidents with this cause.
    #[arg(long, value_parser = ["lister-lag", "node-missing", "api-unreachable", "api-timeout", "auth", "conflict", "etcd", "unknown", "swap", "cgroup-driver", "config", "credentials", "runtime", "port-in-use", "exec", "killed"])]
    pub cause: Option<String>,
    /// Only open or only resolved incidents.
    #[arg(long, value_parser = ["open", "resolved"], conflicts_with = "open")]
    pub status: Option<String>,
    /// Only incidents seen on this host (a collector's hosts).
    #[arg(long)]
    pub host: Option<String>,
    /// Only incidents whose errors name this API endpoint (`10.0.0.1:6443`,
    /// `api.example.com:443`).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// At most this many, newest first (0: all); when there are more, stderr says so.
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    /// `table` for people, `json` for scripts (the `incidents` array of the JSON contract).
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Journal files or directories, export/json streams or text logs (`-` for standard
    /// input; gzip is read transparently). None: the local system journal.
    pub paths: Vec<String>,
    /// Input format; detected from the content by default.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub format: Format,
    /// Read a journald namespace instead of paths.
    #[arg(long, conflicts_with = "paths")]
    pub namespace: Option<String>,
    /// `table` for people, `json` for scripts (the JSON contract).
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Print each incident's diagnosis and its timeline (table output).
    #[arg(long)]
    pub details: bool,
    /// Quiet time after which an open incident resolves.
    #[arg(long, default_value = "60s", value_parser = duration)]
    pub resolve_after: Micros,
    /// Trouble this soon after registration may be the start-up race.
    #[arg(long, default_value = "10s", value_parser = duration)]
    pub race_window: Micros,
    /// Over threshold: more than this many retries (status updates and registrations)
    /// within --window.
    #[arg(long, default_value_t = 5)]
    pub retries: u32,
    /// The window of --retries.
    #[arg(long, default_value = "10m", value_parser = duration)]
    pub window: Micros,
    /// Another unit to read as the kubelet (repeatable), besides kubelet.service and those
    /// of k3s, rke2 and `MicroK8s`.
    #[arg(long = "unit")]
    pub units: Vec<String>,
    /// Another `SYSLOG_IDENTIFIER` to read as the kubelet (repeatable), besides kubelet,
    /// kubenswrapper, hyperkube, kubelet-wrapper and kubelite.
    #[arg(long = "identifier")]
    pub identifiers: Vec<String>,
    /// Another `CONTAINER_NAME` to read as the kubelet (repeatable), besides kubelet.
    #[arg(long = "container")]
    pub containers: Vec<String>,
    /// Another writer (`_UID`) whose lines count when they match by identifier or container
    /// name only (repeatable), besides root: any user can log as `kubelet`.
    #[arg(long = "trusted-uid")]
    pub trusted_uids: Vec<u32>,
    /// The node name when neither the line nor the host's registration says.
    #[arg(long)]
    pub node_name: Option<String>,
    /// Times in UTC: text logs' times read as UTC, and times shown in UTC (local time by
    /// default, as journalctl).
    #[arg(long)]
    pub utc: bool,
    /// Text logs: the year of their times (default: the latest that is not in the future).
    #[arg(long)]
    pub year: Option<i32>,
    /// No progress line (it is only drawn on a terminal anyway).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

fn duration(s: &str) -> Result<Micros, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// A silence's length, checked here so a wrong one is a usage error (exit 2)
/// before anything is asked of the service.
fn silence_length(s: &str) -> Result<Micros, String> {
    let d = duration(s)?;
    let max =
        i64::try_from(crate::api::query::MAX_SILENCE).unwrap_or(i64::MAX) * crate::time::SECOND;
    if d < crate::time::SECOND || d > max {
        return Err(format!(
            "from 1s to {}d",
            crate::api::query::MAX_SILENCE / 86_400
        ));
    }
    Ok(d)
}

impl ScanArgs {
    fn settings(&self) -> Settings {
        Settings {
            resolve_after: self.resolve_after,
            race_window: self.race_window,
            retries: self.retries,
            window: self.window,
            node_name: self.node_name.clone(),
            ..Settings::default()
        }
    }
}

/// Runs `scan`, writing to `out`; the exit code follows.
pub fn run_scan(args: &ScanArgs, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let zone = if args.utc { Zone::Utc } else { Zone::Local };
    let read = ReadOptions {
        format: args.format,
        clock: Clock {
            utc: args.utc,
            year: args.year,
            now: crate::time::now(),
        },
        filter: {
            // What is named comes on top of the defaults.
            let d = EntryFilter::default();
            let plus = |mut d: Vec<String>, v: &Vec<String>| {
                d.extend(
                    v.iter()
                        .filter(|x| !d.contains(x))
                        .cloned()
                        .collect::<Vec<_>>(),
                );
                d
            };
            EntryFilter {
                units: plus(d.units, &args.units),
                identifiers: plus(d.identifiers, &args.identifiers),
                containers: plus(d.containers, &args.containers),
                trusted_uids: d
                    .trusted_uids
                    .iter()
                    .chain(&args.trusted_uids)
                    .copied()
                    .collect(),
                trusted_units: d.trusted_units,
            }
        },
    };
    let inputs: Vec<Input> = match (&args.namespace, args.paths.is_empty()) {
        (Some(n), _) => vec![Input::Namespace(n.clone())],
        (None, true) => vec![Input::System],
        (None, false) => args.paths.iter().cloned().map(Input::Path).collect(),
    };
    let settings = args.settings();
    // A progress line on a terminal: entries read and the rate, redrawn at
    // most twice a second, wiped when done.
    let draw = !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let started = std::time::Instant::now();
    let mut last = started;
    let mut drawn = false;
    let mut progress = |entries: u64| {
        if !draw || entries == 0 || last.elapsed() < std::time::Duration::from_millis(500) {
            return;
        }
        last = std::time::Instant::now();
        let secs = started.elapsed().as_secs_f64().max(0.001);
        let _ = write!(
            err,
            "\r\x1b[2Kscanning: {entries} entries, {:.0}k entries/s, {:.0}s",
            entries as f64 / secs / 1000.0,
            secs
        );
        let _ = err.flush();
        drawn = true;
    };
    let result = crate::scan::scan_with_progress(&inputs, &read, settings.clone(), &mut progress);
    if drawn {
        let _ = write!(err, "\r\x1b[2K");
    }
    for m in &result.malformed {
        let _ = writeln!(err, "kubelet-sentinel: {}: {}", m.place, m.reason);
    }
    let told = result.malformed.len() as u64;
    let all = result.summary.malformed + result.summary.damaged;
    if all > told {
        let _ = writeln!(
            err,
            "kubelet-sentinel: … and {} more records skipped or read with a loss",
            all - told
        );
    }
    for f in &result.failed {
        let _ = writeln!(err, "kubelet-sentinel: {f}");
    }
    let written = match args.output {
        Output::Json => out
            .write_all(report::scan_json(&result.summary, &result.incidents, &settings).as_bytes()),
        Output::Table => {
            let views = report::views(&result.incidents, &settings);
            let mut text = String::new();
            if !views.is_empty() {
                text.push_str(&report::table(&views, zone));
            }
            text.push_str(&report::summary_line(&result.summary, &result.incidents));
            // As the service judges them: against the newest entry read.
            let judged = crate::status::StatusSnapshot {
                hosts: result.hosts.clone(),
                silent_after: crate::config::DEFAULT_SILENT_AFTER,
                ..crate::status::StatusSnapshot::default()
            };
            for (h, t) in judged.silent_hosts() {
                let newest = result.hosts.values().copied().max().unwrap_or(t);
                text.push_str(&format!(
                    "host {} went silent: its last entry {} is {} before the newest of any host\n",
                    report::terminal_text(h, 120),
                    crate::time::human(t, zone),
                    crate::time::human_duration(newest - t)
                ));
            }
            if args.details {
                for v in &views {
                    text.push('\n');
                    text.push_str(&report::details(v, zone));
                }
            }
            out.write_all(text.as_bytes())
        }
    };
    if written.is_err() || (!result.failed.is_empty() && result.summary.entries == 0) {
        Exit::Failure
    } else if !result.failed.is_empty()
        || result.summary.malformed > 0
        || result.summary.damaged > 0
    {
        Exit::Losses
    } else {
        Exit::Ok
    }
}

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
    let (p, explicit) = match path {
        Some(p) => (p.clone(), true),
        None => (PathBuf::from(config::DEFAULT_PATH), false),
    };
    let (config, problem) = Config::load_for_query(&p, explicit);
    if let Some(e) = problem {
        let _ = writeln!(
            err,
            "kubelet-sentinel: warning: {e}\nkubelet-sentinel: a running service keeps its \
             settings; asking it through {}",
            config.api.socket
        );
    }
    config
}

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
pub fn run_service(config_path: Option<&PathBuf>, once: bool, err: &mut dyn Write) -> Exit {
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
    let edges = daemon::Edges::real(&config);
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

/// Asks the running service, or reads the store when it is not running.
fn query(config: &Config, req: &Request) -> Result<Response, String> {
    let socket = PathBuf::from(&config.api.socket);
    let method = if req.is_post() {
        hyper::Method::POST
    } else {
        hyper::Method::GET
    };
    let not_running = match api::ask(&socket, method, &req.path(), req.body()) {
        Ok(r) => return Ok(r),
        Err(ClientError::PermissionDenied(p)) => {
            return Err(format!(
                "permission denied on the query socket {}: join the systemd-journal group (or run as root)",
                p.display()
            ));
        }
        Err(ClientError::Other(e)) => return Err(e),
        Err(ClientError::NotRunning(e)) => e,
    };
    let path = config.store_path();
    let opened = match (req, Store::open_existing(&path)) {
        // A silence set up before the service ever ran (before its install
        // finishes, ahead of planned work) makes the store it will use.
        (Request::AddSilence(_), Ok(None)) => Store::open(&path).map(Some),
        (_, opened) => opened,
    };
    match opened {
        Ok(Some(store)) => Ok(api::answer(&store, None, req)),
        Ok(None) => Err(format!(
            "the service is not running (socket {}: {not_running}) and there is no store yet at {}",
            socket.display(),
            path.display()
        )),
        Err(StoreError::Locked { .. }) => Err(format!(
            "the service does not answer on {} ({not_running}) and the store {} is locked by another process",
            socket.display(),
            path.display()
        )),
        Err(e) if e.is_permission_denied() => Err(format!(
            "the service is not running and the store {} is not readable by this user (under \
                 systemd it lives in /var/lib/private, root only): start the service, or run this as root",
            path.display()
        )),
        Err(e) => Err(e.to_string()),
    }
}

fn render(req: &Request, r: &Response, output: Output, zone: Zone) -> Result<String, String> {
    if !(200..300).contains(&r.code) {
        return Err(error_text(r));
    }
    if output == Output::Json {
        return Ok(r.body.clone());
    }
    let v: serde_json::Value =
        serde_json::from_str(&r.body).map_err(|e| format!("malformed answer: {e}"))?;
    let bad = |e: serde_json::Error| format!("malformed answer: {e}");
    Ok(match req {
        Request::Incidents(_) => {
            let list: Vec<IncidentOut> =
                serde_json::from_value(v["incidents"].clone()).map_err(bad)?;
            if list.is_empty() {
                "no incidents\n".to_string()
            } else {
                report::table(&list, zone)
            }
        }
        Request::Incident(_) => report::details(&serde_json::from_value(v).map_err(bad)?, zone),
        Request::Nodes => {
            let rows: Vec<api::NodeRow> =
                serde_json::from_value(v["nodes"].clone()).map_err(bad)?;
            let rows: Vec<Vec<String>> = rows
                .into_iter()
                .map(|r| {
                    vec![
                        report::terminal_text(&r.node, 80),
                        report::terminal_text(&r.hosts.join(","), 80),
                        r.incidents.to_string(),
                        r.open.to_string(),
                        r.retries.to_string(),
                        r.last_trouble_at.unwrap_or_default(),
                        r.last_verdict.unwrap_or_default(),
                    ]
                })
                .collect();
            report::columns(
                &[
                    "NODE",
                    "HOSTS",
                    "INCIDENTS",
                    "OPEN",
                    "RETRIES",
                    "LAST TROUBLE",
                    "LAST VERDICT",
                ],
                &rows,
            )
        }
        Request::Silences => {
            let list: Vec<api::SilenceOut> =
                serde_json::from_value(v["silences"].clone()).map_err(bad)?;
            if list.is_empty() {
                return Ok("no silences\n".into());
            }
            let rows: Vec<Vec<String>> = list
                .into_iter()
                .map(|s| {
                    vec![
                        s.id,
                        report::terminal_text(&s.node, 60),
                        match s.kind {
                            Some(k) => format!("{} ({k})", s.cause.as_deref().unwrap_or("any")),
                            None => s.cause.unwrap_or_else(|| "any".into()),
                        },
                        match &s.expired_by {
                            Some(by) => {
                                format!("expired by {}", report::terminal_text(by, 30))
                            }
                            None => s.state,
                        },
                        s.ends_at,
                        report::terminal_text(&s.created_by, 30),
                        report::terminal_text(&s.comment, 60),
                    ]
                })
                .collect();
            report::columns(
                &[
                    "ID",
                    "NODE",
                    "CAUSE",
                    "STATE",
                    "ENDS (UTC)",
                    "BY",
                    "COMMENT",
                ],
                &rows,
            )
        }
        Request::AddSilence(_) => {
            let s: api::SilenceOut = serde_json::from_value(v).map_err(bad)?;
            format!(
                "silence {} added: node {}{} until {} (by {})\n",
                s.id,
                report::terminal_text(&s.node, 60),
                s.cause.map(|c| format!(", cause {c}")).unwrap_or_default()
                    + &s.kind.map(|k| format!(", kind {k}")).unwrap_or_default(),
                s.ends_at,
                report::terminal_text(&s.created_by, 30)
            )
        }
        Request::ExpireSilence { .. } => {
            let s: api::SilenceOut = serde_json::from_value(v).map_err(bad)?;
            format!(
                "silence {} ended; what it held back is delivered now if still due\n",
                s.id
            )
        }
        Request::Ack(_) => {
            let i: IncidentOut = serde_json::from_value(v).map_err(bad)?;
            format!(
                "incident {} (node {}) acknowledged by {}: no more reminders; its resolved notice will say so\n",
                i.id,
                report::terminal_text(&i.node, 60),
                i.acknowledged.map(|a| a.by).unwrap_or_default()
            )
        }
        Request::Status => status_rows(&v).map_err(bad)?,
    })
}

/// `status` as rows: a key and its value a line, a line a delivery channel
/// and a line a silence (never a JSON blob in a table).
fn status_rows(v: &serde_json::Value) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    let mut row = |k: &str, shown: &str| {
        out.push_str(&format!("{k:<22} {}\n", report::terminal_text(shown, 400)));
    };
    for (k, val) in v.as_object().into_iter().flatten() {
        match (k.as_str(), val) {
            ("deliveries", serde_json::Value::Array(a)) if !a.is_empty() => {
                let list: Vec<api::query::DeliveryOut> = serde_json::from_value(val.clone())?;
                for d in list {
                    let mut line = format!(
                        "{}  {}  {}  outbox {}",
                        d.channel,
                        d.state,
                        if d.target.is_empty() { "-" } else { &d.target },
                        d.outbox
                    );
                    if let Some(w) = d.outbox_oldest_seconds {
                        line.push_str(&format!(" (oldest {w:.0}s)"));
                    }
                    line.push_str(&format!("  sent {}  failed {}", d.sent, d.failed));
                    if d.in_doubt > 0 {
                        line.push_str(&format!("  in doubt {}", d.in_doubt));
                    }
                    if let Some(r) = &d.last_result {
                        line.push_str(&format!(
                            "  last: {r}{}",
                            d.last_at
                                .as_deref()
                                .map(|t| format!(" at {t}"))
                                .unwrap_or_default()
                        ));
                    }
                    if let Some(t) = &d.last_success_at {
                        line.push_str(&format!("  last success {t}"));
                    }
                    row("delivery", &line);
                }
            }
            ("silences", serde_json::Value::Array(a)) if !a.is_empty() => {
                let list: Vec<api::SilenceOut> = serde_json::from_value(val.clone())?;
                for x in list {
                    row(
                        "silence",
                        &format!(
                            "{}  node {}  cause {}  until {}  by {}{}",
                            x.id,
                            x.node,
                            x.cause.as_deref().unwrap_or("any"),
                            x.ends_at,
                            x.created_by,
                            if x.comment.is_empty() {
                                String::new()
                            } else {
                                format!("  ({})", x.comment)
                            }
                        ),
                    );
                }
            }
            (_, serde_json::Value::String(s)) => row(k, s),
            (_, serde_json::Value::Null) => row(k, "-"),
            (_, serde_json::Value::Array(a)) if a.is_empty() => row(k, "-"),
            (_, serde_json::Value::Array(a)) => row(
                k,
                &a.iter()
                    .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            (_, serde_json::Value::Number(n)) if n.is_f64() => {
                row(k, &format!("{:.1}", n.as_f64().unwrap_or_default()));
            }
            (_, other) => row(k, &other.to_string()),
        }
    }
    Ok(out)
}

/// `incidents`: the query, cut to `limit` (0: all) with a word on stderr
/// when there were more, so a script reading `-o json` is never cut short
/// without being told.
fn incidents_cmd(
    config_path: Option<&PathBuf>,
    filter: Filter,
    limit: usize,
    output: Output,
    zone: Zone,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let config = load_for_query(config_path, err);
    let req = Request::Incidents(filter);
    let mut answer = match query(&config, &req) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            return Exit::Failure;
        }
    };
    if (200..300).contains(&answer.code) && limit > 0 {
        if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&answer.body) {
            if let Some(list) = v["incidents"].as_array_mut().filter(|l| l.len() > limit) {
                list.truncate(limit);
                let _ = writeln!(
                    err,
                    "kubelet-sentinel: the newest {limit} shown; there are more (--limit 0 lists all)"
                );
                answer.body = serde_json::to_string_pretty(&v).unwrap_or_default();
            }
        }
    }
    print(render(&req, &answer, output, zone), out, err)
}

/// Runs a query command.
pub fn run_query(
    config_path: Option<&PathBuf>,
    req: &Request,
    output: Output,
    zone: Zone,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let config = load_for_query(config_path, err);
    let answer = query(&config, req);
    if let Ok(r) = &answer {
        if r.code == 403 {
            // Not this user's to change: said as the service put it.
            let _ = writeln!(err, "kubelet-sentinel: {}", error_text(r));
            return Exit::Forbidden;
        }
    }
    print(answer.and_then(|r| render(req, &r, output, zone)), out, err)
}

/// A rendered answer to stdout, or what went wrong to stderr.
fn print(text: Result<String, String>, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    match text {
        Ok(text) => {
            if out.write_all(text.as_bytes()).is_err() {
                return Exit::Failure;
            }
            Exit::Ok
        }
        Err(e) => {
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            Exit::Failure
        }
    }
}

/// The `error` of an answer's JSON body, or the body.
fn error_text(r: &Response) -> String {
    serde_json::from_str::<serde_json::Value>(&r.body)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_string))
        .unwrap_or_else(|| r.body.clone())
}

/// `status`, with an exit code a monitoring check can use: 0 running and
/// delivering, 3 not running (as `systemctl is-active`), 5 running but alerts
/// are not getting out, 1 when it cannot be told.
pub fn status_cmd(
    config_path: Option<&PathBuf>,
    output: Output,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let config = load_for_query(config_path, err);
    let req = Request::Status;
    let answer = match query(&config, &req) {
        Ok(r) => r,
        Err(e) if e.contains("the service is not running") => {
            // No store either: nothing to show but that it is not running.
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            return Exit::NotRunning;
        }
        Err(e) => {
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            return Exit::Failure;
        }
    };
    match render(&req, &answer, output, Zone::Local) {
        Ok(text) => {
            if out.write_all(text.as_bytes()).is_err() {
                return Exit::Failure;
            }
        }
        Err(e) => {
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            return Exit::Failure;
        }
    }
    let v: serde_json::Value = serde_json::from_str(&answer.body).unwrap_or_default();
    if v["service"] != "running" {
        Exit::NotRunning
    } else if v["deliveries_failing"] == true {
        Exit::Degraded
    } else {
        Exit::Ok
    }
}

/// Sends a sample alert, built as the service builds its transport.
pub fn test_email(config_path: Option<&PathBuf>, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let config = match load_config(config_path, err) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let transport = match crate::notify::EmailTransport::from_config(&config.alert) {
        Ok(Some(t)) => t,
        Ok(None) => {
            let _ = writeln!(
                err,
                "kubelet-sentinel: [alert] to is empty: there is nobody to send to"
            );
            return Exit::Config;
        }
        Err(e) => {
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            return Exit::Config;
        }
    };
    if let Some(source) = &transport.password {
        let _ = writeln!(out, "SMTP password from {}", source.describe());
    }
    let settings = config.tracker_settings();
    let incident = crate::notify::sample_incident(crate::time::now(), &settings);
    let mut rendered =
        crate::notify::render(&[&incident], crate::tracker::AlertKind::Opened, &settings);
    rendered.subject =
        rendered
            .subject
            .replacen("[kubelet-sentinel]", "[kubelet-sentinel] test:", 1);
    let banner = "TEST ALERT from kubelet-sentinel test-email: not an incident. If you read this, alerts reach you.\n\n";
    rendered.text = format!("{banner}{}", rendered.text);
    rendered.html = format!("<p><b>{}</b></p>\n{}", banner.trim(), rendered.html);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            return Exit::Failure;
        }
    };
    let sent = rt.block_on(transport.deliver(&rendered));
    match sent {
        Ok(to) => {
            let _ = writeln!(out, "test alert sent: {to}");
            // This process read the config and the password itself; say so
            // when the running service cannot send with what it has.
            let socket = PathBuf::from(&config.api.socket);
            if let Ok(r) = api::ask(&socket, hyper::Method::GET, "/status", None) {
                let v: serde_json::Value = serde_json::from_str(&r.body).unwrap_or_default();
                if let Some(mail) = v["mail"].as_str().filter(|m| m.starts_with("disabled")) {
                    let _ = writeln!(
                        out,
                        "note: the running service cannot send yet: mail {mail} \
                         (systemctl restart kubelet-sentinel loads the password and the config)"
                    );
                }
            }
            Exit::Ok
        }
        Err(e) => {
            let _ = writeln!(err, "kubelet-sentinel: test alert not sent: {e}");
            Exit::Failure
        }
    }
}

/// `reload`: validate the file, then have the running service apply it.
pub fn reload(config_path: Option<&PathBuf>, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let config = match load_config(config_path, err) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let socket = PathBuf::from(&config.api.socket);
    match api::ask(&socket, hyper::Method::POST, "/reload", None) {
        Ok(r) if r.code == 200 => {
            let outcome: Result<crate::api::http::ReloadOutcome, _> = serde_json::from_str(&r.body);
            match outcome {
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
                }
                Err(_) => {
                    let _ = writeln!(out, "config applied");
                }
            }
            Exit::Ok
        }
        Ok(r) => {
            let msg = error_text(&r);
            if r.code == 403 {
                let _ = writeln!(err, "kubelet-sentinel: {msg}");
                return Exit::Forbidden;
            }
            let _ = writeln!(
                err,
                "kubelet-sentinel: the service refused the config: {msg}"
            );
            if r.code == 422 {
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

fn check_config(config_path: Option<&PathBuf>, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    match load_config(config_path, err) {
        Ok(c) => {
            let _ = writeln!(out, "# effective settings\n{}", c.to_toml());
            if !c.alert.smtp.username.is_empty() {
                let source = crate::notify::PasswordSource::of(&c.alert);
                let _ = writeln!(out, "# SMTP password: {}", source.describe());
            }
            if c.alert.emails() && c.alert.transport == crate::config::Transport::File {
                let dir = std::path::Path::new(&c.alert.file.directory);
                match crate::notify::transport::file_directory_state(dir) {
                    Ok(s) => {
                        let _ = writeln!(out, "# [alert.file] directory: {s}");
                    }
                    Err(e) => {
                        let _ = writeln!(out, "# [alert.file] directory: {e}");
                        let _ = writeln!(err, "kubelet-sentinel: [alert.file] directory: {e}");
                    }
                }
            }
            if !c.alert.delivers() {
                let _ = writeln!(
                    out,
                    "# [alert] to and [alert.alertmanager] urls are empty: incidents are recorded, \
                     nothing is delivered"
                );
            }
            if let Some(why) = api::peer::missing_admin_group(&c.api.admin_group) {
                let _ = writeln!(out, "# {why}");
            }
            let _ = writeln!(out, "# config OK");
            Exit::Ok
        }
        Err(e) => e,
    }
}

/// Parses the command line and runs the command.
#[must_use]
pub fn main() -> ExitCode {
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
        Command::Incidents(a) => {
            let now = crate::time::now();
            let when = |flag: &str, v: &Option<String>| {
                v.as_deref()
                    .map(|s| {
                        crate::time::parse_when(s, now, a.utc).map_err(|e| format!("{flag} {e}"))
                    })
                    .transpose()
            };
            let (since, until) = match (when("--since", &a.since), when("--until", &a.until)) {
                (Ok(s), Ok(u)) => (s, u),
                (Err(e), _) | (_, Err(e)) => {
                    let _ = writeln!(err, "kubelet-sentinel: {e}");
                    return Exit::Usage.into();
                }
            };
            let filter = Filter {
                node: a.node,
                open: a.open || a.status.as_deref() == Some("open"),
                resolved: a.status.as_deref() == Some("resolved"),
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
            incidents_cmd(
                config,
                filter,
                a.limit,
                a.output,
                if a.utc { Zone::Utc } else { Zone::Local },
                &mut out,
                &mut err,
            )
        }
        Command::Show { id, output, utc } => run_query(
            config,
            &Request::Incident(id),
            output,
            if utc { Zone::Utc } else { Zone::Local },
            &mut out,
            &mut err,
        ),
        Command::Nodes { output } => run_query(
            config,
            &Request::Nodes,
            output,
            Zone::Local,
            &mut out,
            &mut err,
        ),
        Command::Status { output } => status_cmd(config, output, &mut out, &mut err),
        Command::TestEmail => test_email(config, &mut out, &mut err),
        Command::Silence { action } => {
            let (req, output) = match action {
                SilenceCmd::Add {
                    node,
                    cause,
                    kind,
                    duration,
                    comment,
                } => (
                    Request::AddSilence(api::NewSilence {
                        node: node.unwrap_or_else(|| "*".into()),
                        cause,
                        kind,
                        seconds: (duration / crate::time::SECOND).max(1) as u64,
                        by: caller(),
                        comment,
                    }),
                    Output::Table,
                ),
                SilenceCmd::List { output } => (Request::Silences, output),
                SilenceCmd::Expire { id } => {
                    (Request::ExpireSilence { id, by: caller() }, Output::Table)
                }
            };
            run_query(config, &req, output, Zone::Local, &mut out, &mut err)
        }
        Command::Ack { id, comment } => run_query(
            config,
            &Request::Ack(api::AckRequest {
                id,
                by: caller(),
                comment,
            }),
            Output::Table,
            Zone::Local,
            &mut out,
            &mut err,
        ),
        Command::Reload => reload(config, &mut out, &mut err),
        Command::CheckConfig => check_config(config, &mut out, &mut err),
    };
    exit.into()
}
