//! The command line's definitions: one that clap parses, and that the man
//! page and shell completions are generated from; and the exit codes.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::clock::parse_duration;
use crate::journal::Format;
use sentinel_core::kinds::Spelling;
use sentinel_core::signals::Cause;
use sentinel_core::time::Micros;
use sentinel_core::tracker::{IncidentKind, Settings, StartVerdict, Status, Verdict};

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
    about = "Tells the kubelet's harmless start-up race from real trouble, and alerts on it",
    long_about = "kubelet-sentinel reads the kubelet's journal, recognises its trouble (status \
                  update retries, lister misses, failed registrations; a kubelet that crash-loops \
                  or that systemd gave up on; a node not ready while its kubelet runs; a Ready \
                  node whose pod sandboxes keep failing; the client certificate near expiry or \
                  its rotation refused; the kernel's read-only file systems and hung tasks; one \
                  API endpoint lost by many nodes; a collector's host gone silent), groups it into \
                  per-node incidents with the other units that explain them, tells the harmless \
                  start-up race from real trouble (API server unreachable, Node deleted, \
                  credentials expired), and alerts by email or Alertmanager."
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
        /// `table` for people, `json` for scripts (field names are a contract).
        #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
        output: Output,
        /// Times in UTC (local time by default, as journalctl).
        #[arg(long)]
        utc: bool,
    },
    /// Each kubelet start: how long to Ready, which phase was slow, its verdict, and the
    /// incidents that opened during it; with the fleet's median and p90 under the table.
    Starts(StartsArgs),
    /// One row per node: incidents, open, retries, last trouble, last verdict.
    Nodes {
        /// `table` for people, `json` for scripts (field names are a contract).
        #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
        output: Output,
        /// Times in UTC (local time by default, as journalctl; JSON is always UTC).
        #[arg(long)]
        utc: bool,
    },
    /// The service: journal position and lag, entries read, open incidents.
    Status {
        /// `table` for people, `json` for scripts (field names are a contract).
        #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
        output: Output,
        /// Times in UTC (local time by default, as journalctl; JSON is always UTC).
        #[arg(long)]
        utc: bool,
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
        /// Only incidents of this cause (kubelet-down incidents have their own: swap,
        /// cgroup-driver, config, credentials, runtime, port-in-use, exec, killed).
        #[arg(long, value_parser = spelled::<Cause>())]
        cause: Option<Cause>,
        /// Only incidents of this kind (kubelet-down: a node being rebuilt whose kubelet
        /// crash-loops until kubeadm join).
        #[arg(long, value_parser = spelled::<IncidentKind>())]
        kind: Option<IncidentKind>,
        /// How long: 30m, 2h, 3d (at most 31d).
        #[arg(long = "for", value_parser = silence_length)]
        duration: Micros,
        /// Why ("kernel upgrade").
        #[arg(long)]
        comment: String,
    },
    /// Silences: active, pending and recently expired.
    List {
        /// `table` for people, `json` for scripts (field names are a contract).
        #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
        output: Output,
        /// Times in UTC (local time by default, as journalctl; JSON is always UTC).
        #[arg(long)]
        utc: bool,
    },
    /// End a silence now (its id or a unique prefix); who did it is recorded.
    Expire {
        /// The silence's id (as `silence list` shows it), or a unique prefix of it.
        id: String,
    },
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
    /// Only incidents of this kind: node-status (the node's status updates),
    /// kubelet-down (the kubelet itself crashing, killed, or given up on by
    /// systemd), not-ready (the node not ready while its kubelet runs: the
    /// CNI, the runtime, PLEG, pressure), pod-sandbox (a Ready node whose pods' sandboxes keep
    /// failing: no IP address left, the CNI, the runtime), certificate (the kubelet's client
    /// certificate near expiry or its rotation refused), kernel (a file system made read-only,
    /// tasks hung: the kernel's own lines), host-silent (a collector's host that stopped
    /// writing) or endpoint (one API endpoint lost by several nodes at once).
    #[arg(long, value_parser = spelled::<IncidentKind>())]
    pub kind: Option<IncidentKind>,
    /// Only incidents with this verdict.
    #[arg(long, value_parser = spelled::<Verdict>())]
    pub verdict: Option<Verdict>,
    /// Only incidents with this cause.
    #[arg(long, value_parser = spelled::<Cause>())]
    pub cause: Option<Cause>,
    /// Only open or only resolved incidents.
    #[arg(long, value_parser = spelled::<Status>(), conflicts_with = "open")]
    pub status: Option<Status>,
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

#[derive(Debug, Args)]
pub struct StartsArgs {
    /// Only this node's starts (a name or a pattern: `worker-*`; a host name too).
    #[arg(long)]
    pub node: Option<String>,
    /// Starts since then, as journalctl takes it: "2026-11-29 18:15", yesterday, today, -2h,
    /// 24h (that long ago), or an RFC 3339 time.
    #[arg(long, allow_hyphen_values = true)]
    pub since: Option<String>,
    /// Only starts with this verdict.
    #[arg(long, value_parser = spelled::<StartVerdict>())]
    pub verdict: Option<StartVerdict>,
    /// At most this many, newest first (0: all); when there are more, stderr says so.
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    /// Times in UTC (shown, and read in --since when it carries no zone); local time by
    /// default, as journalctl.
    #[arg(long)]
    pub utc: bool,
    /// `table` for people, `json` for scripts (the `starts` array of the JSON contract).
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

#[derive(Debug, Args)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is one of scan's switches, as clap reads them"
)]
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
    /// Also print each kubelet start found: its phases, time to Ready and verdict, and the
    /// fleet line (table output; the JSON always has them).
    #[arg(long)]
    pub starts: bool,
    /// A kubelet start Ready later than this is slow; one not Ready by then, never-ready.
    #[arg(long, default_value = sentinel_core::defaults::START_BUDGET_TEXT, value_parser = duration)]
    pub start_budget: Micros,
    /// Quiet time after which an open incident resolves.
    #[arg(long, default_value = sentinel_core::defaults::RESOLVE_AFTER_TEXT, value_parser = duration)]
    pub resolve_after: Micros,
    /// A directory (a collector's): a host this far behind the newest entry
    /// of any host is a host-silent incident, as `[fleet] silent_incidents`
    /// makes it for the service (e.g. 10m; 0s: none).
    #[arg(long, default_value = "0s", value_parser = duration)]
    pub silent_after: Micros,
    /// Trouble this soon after registration may be the start-up race.
    #[arg(long, default_value = sentinel_core::defaults::RACE_WINDOW_TEXT, value_parser = duration)]
    pub race_window: Micros,
    /// Over threshold: more than this many retries (status updates and registrations)
    /// within --window.
    #[arg(long, default_value_t = sentinel_core::defaults::RETRIES)]
    pub retries: u32,
    /// The window of --retries.
    #[arg(long, default_value = sentinel_core::defaults::WINDOW_TEXT, value_parser = duration)]
    pub window: Micros,
    /// This many nodes (of as many hosts) in trouble against one API endpoint
    /// are one endpoint incident (`[fleet] min_nodes`).
    #[arg(long, default_value_t = sentinel_core::defaults::FLEET_MIN_NODES, value_parser = clap::value_parser!(u32).range(2..))]
    pub min_nodes: u32,
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
        i64::try_from(crate::query::MAX_SILENCE).unwrap_or(i64::MAX) * sentinel_core::time::SECOND;
    if d < sentinel_core::time::SECOND || d > max {
        return Err(format!(
            "from 1s to {}d",
            crate::query::MAX_SILENCE / 86_400
        ));
    }
    Ok(d)
}

impl ScanArgs {
    pub(crate) fn settings(&self) -> Settings {
        Settings {
            resolve_after: self.resolve_after,
            race_window: self.race_window,
            retries: self.retries,
            window: self.window,
            node_name: self.node_name.clone(),
            silent_after: self.silent_after,
            fleet_min_nodes: self.min_nodes as usize,
            start_budget: self.start_budget,
            ..Settings::default()
        }
    }
}

/// A parser for one of the core's spelled kinds (cause, kind, verdict,
/// status): its names are the possible values clap shows in `--help`, the
/// man page and the completions.
fn spelled<T: Spelling>() -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(T::NAMES)
        .map(|s: String| T::from_name(&s).expect("clap accepts only the possible values"))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    /// Every option and argument of every command says what it is for
    /// (`--help` and the man page are generated from these).
    #[test]
    fn every_argument_has_help() {
        fn check(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                check(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        check(&super::Cli::command(), "kubelet-sentinel", &mut missing);
        assert!(missing.is_empty(), "no help for: {missing:?}");
    }
}
