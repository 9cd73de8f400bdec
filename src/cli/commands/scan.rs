//! `scan`: offline analysis of journals and saved logs.

use std::io::Write;

use crate::cli::args::{Exit, Output, ScanArgs};
use crate::journal::{EntryFilter, ReadOptions};
use crate::report;
use crate::scan::Input;
use sentinel_core::time::{Clock, Zone};

/// Runs `scan`, writing to `out`; the exit code follows.
pub(crate) fn run_scan(args: &ScanArgs, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let zone = crate::clock::zone(args.utc);
    let read = ReadOptions {
        format: args.format,
        clock: Clock {
            zone,
            year: args.year,
            now: crate::clock::now(),
        },
        filter: entry_filter(args),
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
        Output::Json => out.write_all(
            report::scan_json(
                &result.summary,
                &result.incidents,
                &result.starts,
                &settings,
            )
            .as_bytes(),
        ),
        Output::Table => out.write_all(table(&result, &settings, args, zone).as_bytes()),
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

/// The entries scan reads as the kubelet's: what is named comes on top of
/// the defaults.
fn entry_filter(args: &ScanArgs) -> EntryFilter {
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
        context_units: d.context_units,
        kernel: d.kernel,
    }
}

/// The incidents found as a table, the summary line, the hosts that went
/// silent and, with `--details`, each incident's details.
fn table(
    result: &crate::scan::ScanResult,
    settings: &sentinel_core::tracker::Settings,
    args: &ScanArgs,
    zone: Zone,
) -> String {
    let views = report::views(&result.incidents, settings);
    let mut text = String::new();
    if !views.is_empty() {
        text.push_str(&report::table(&views, zone));
    }
    text.push_str(&report::summary_line(
        &result.summary,
        &result.incidents,
        zone,
    ));
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
            sentinel_core::time::human(t, zone),
            sentinel_core::time::human_duration(newest - t)
        ));
    }
    if args.starts {
        let mut starts: Vec<report::starts::StartOut> = result
            .starts
            .iter()
            .map(report::starts::StartOut::new)
            .collect();
        starts.sort_by(|a, b| (&b.started_at, &a.host).cmp(&(&a.started_at, &b.host)));
        text.push('\n');
        text.push_str(&report::starts::table(&starts, zone));
    }
    if args.details {
        for v in &views {
            text.push('\n');
            text.push_str(&report::details(v, zone));
        }
    }
    text
}
