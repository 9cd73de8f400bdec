//! The command line: one definition that clap parses, and that the man page
//! and shell completions are generated from.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::journal::{EntryFilter, Format, ReadOptions};
use crate::report;
use crate::scan::{Input, scan};
use crate::time::{Clock, Micros, parse_duration};
use crate::tracker::Settings;

/// Exit codes: 0 ok, 1 runtime failure, 2 usage, 78 config error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    Failure = 1,
    Usage = 2,
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
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Analyse journal files or directories, `journalctl -o export|json` output or saved
    /// text logs, and print the incidents found. Touches no store.
    Scan(ScanArgs),
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
    #[arg(long, default_value = "10m", value_parser = duration)]
    pub window: Micros,
    /// The kubelet's unit (repeatable).
    #[arg(long = "unit", default_values_t = vec!["kubelet.service".to_string()])]
    pub units: Vec<String>,
    /// Extra `SYSLOG_IDENTIFIER`s to read as the kubelet (repeatable), e.g. kubenswrapper, k3s.
    #[arg(long = "identifier")]
    pub identifiers: Vec<String>,
    /// The node name when neither the line nor the host's registration says.
    #[arg(long)]
    pub node_name: Option<String>,
    /// Text logs: read times as UTC instead of local time.
    #[arg(long)]
    pub utc: bool,
    /// Text logs: the year of their times (default: the latest that is not in the future).
    #[arg(long)]
    pub year: Option<i32>,
}

fn duration(s: &str) -> Result<Micros, String> {
    parse_duration(s).map_err(|e| e.to_string())
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
    let read = ReadOptions {
        format: args.format,
        clock: Clock {
            utc: args.utc,
            year: args.year,
            now: crate::time::now(),
        },
        filter: EntryFilter {
            units: args.units.clone(),
            identifiers: args.identifiers.clone(),
        },
    };
    let inputs: Vec<Input> = match (&args.namespace, args.paths.is_empty()) {
        (Some(n), _) => vec![Input::Namespace(n.clone())],
        (None, true) => vec![Input::System],
        (None, false) => args.paths.iter().cloned().map(Input::Path).collect(),
    };
    let settings = args.settings();
    let result = scan(&inputs, &read, settings.clone());
    for m in &result.malformed {
        let _ = writeln!(err, "kubelet-sentinel: skipped {}: {}", m.place, m.reason);
    }
    if result.summary.malformed > result.malformed.len() as u64 {
        let _ = writeln!(
            err,
            "kubelet-sentinel: … and {} more malformed records",
            result.summary.malformed - result.malformed.len() as u64
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
                text.push_str(&report::table(&views));
            }
            text.push_str(&report::summary_line(&result.summary, &result.incidents));
            if args.details {
                for v in &views {
                    text.push('\n');
                    text.push_str(&report::details(v));
                }
            }
            out.write_all(text.as_bytes())
        }
    };
    if written.is_err() || !result.failed.is_empty() {
        Exit::Failure
    } else {
        Exit::Ok
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
    match cli.command {
        Command::Scan(args) => run_scan(&args, &mut stdout.lock(), &mut stderr.lock()).into(),
    }
}
