//! Issue 37, design 5.5: every kubelet start as a record. The issue's
//! six-node journal (`sentinel_core::testing::six_starts`), written by
//! `systemd-journal-remote` one file a host as a collector keeps them:
//! `scan` and `run --once` give the same seven starts; a store read in two
//! runs (the journal growing between them) gives them too; `starts`,
//! `show` and the metrics say them.

use std::collections::BTreeMap;
use std::path::Path;

use kubelet_sentinel::Micros;
use sentinel_core::model::Entry;
use sentinel_core::testing::six_starts;

use crate::support::{Service, bin, export_entry, journal_remote, run};

const T0: Micros = 1_796_374_800_000_000; // 2026-12-04T09:00:00Z

/// `e` in export form, as the journal has the kubelet's lines and
/// systemd's about its unit.
fn export(e: &Entry, out: &mut Vec<u8>) {
    let at = e.at.unwrap().to_string();
    let host = e.host.as_deref().unwrap();
    let msg = String::from_utf8_lossy(&e.message).into_owned();
    let pid = e.pid.unwrap_or(1).to_string();
    let stream = format!("{host}-{pid}");
    if e.from_systemd {
        export_entry(
            out,
            &[
                ("__REALTIME_TIMESTAMP", &at),
                ("_HOSTNAME", host),
                ("_PID", "1"),
                ("_UID", "0"),
                ("_TRANSPORT", "journal"),
                ("_SYSTEMD_UNIT", "init.scope"),
                ("UNIT", "kubelet.service"),
                ("SYSLOG_IDENTIFIER", "systemd"),
                ("MESSAGE", &msg),
            ],
        );
    } else {
        export_entry(
            out,
            &[
                ("__REALTIME_TIMESTAMP", &at),
                ("_HOSTNAME", host),
                ("_PID", &pid),
                ("_UID", "0"),
                ("_TRANSPORT", "stdout"),
                ("_SYSTEMD_UNIT", "kubelet.service"),
                ("SYSLOG_IDENTIFIER", "kubelet"),
                ("_STREAM_ID", &stream),
                ("MESSAGE", &msg),
            ],
        );
    }
}

/// Writes `entries` (those `keep` takes) into one journal file a host.
fn write(dir: &Path, entries: &[Entry], keep: impl Fn(&Entry) -> bool) {
    let mut by_host: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for e in entries.iter().filter(|e| keep(e)) {
        export(
            e,
            by_host
                .entry(e.host.as_deref().unwrap().to_string())
                .or_default(),
        );
    }
    for (host, bytes) in by_host {
        journal_remote(&bytes, &dir.join(format!("remote-{host}.journal")));
    }
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = run(bin().args(args), None);
    assert!(
        out.status.success() || out.status.code() == Some(65),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Starts by host and start time, as JSON values.
fn by_key(starts: &serde_json::Value) -> BTreeMap<(String, String), serde_json::Value> {
    starts
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                (
                    s["host"].as_str().unwrap().to_string(),
                    s["started_at"].as_str().unwrap().to_string(),
                ),
                s.clone(),
            )
        })
        .collect()
}

fn service(dir: &Path) -> Service {
    Service::new(&format!("directory = \"{}\"", dir.display()), "")
}

#[test]
fn scan_and_run_once_give_the_same_seven_starts() {
    let dir = tempfile::tempdir().unwrap();
    let entries = six_starts(T0);
    write(dir.path(), &entries, |_| true);
    let scanned = json(&["scan", "-o", "json", &dir.path().display().to_string()]);
    let starts = by_key(&scanned["starts"]);
    assert_eq!(starts.len(), 7, "{starts:#?}");
    let of = |h: &str| -> Vec<&serde_json::Value> {
        starts
            .iter()
            .filter(|((host, _), _)| host == h)
            .map(|(_, s)| s)
            .collect()
    };
    let healthy = of("healthy")[0];
    assert_eq!(healthy["verdict"], "ready");
    assert_eq!(healthy["slowest"], "network");
    assert_eq!(healthy["time_to_ready_ms"], 12_000);
    assert_eq!(healthy["kubelet_version"], "v1.31.2");
    let race = of("race")[0];
    assert_eq!(
        (race["slowest"].as_str(), race["time_to_ready_ms"].as_i64()),
        (Some("init"), Some(1_420))
    );
    let race_incident = race["incidents"][0].as_str().unwrap().to_string();
    let incident = scanned["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == race_incident.as_str())
        .expect("the race's incident is listed on its start");
    assert_eq!(incident["verdict"], "startup-race");
    assert_eq!(incident["start"]["phase"], "ready");
    assert_eq!(of("refused")[0]["slowest"], "register");
    assert_eq!(of("cni")[0]["verdict"], "slow");
    assert_eq!(of("runtime")[0]["verdict"], "never-ready");
    assert_eq!(of("restarted").len(), 2);
    let table = run(
        bin().args([
            "scan",
            "--starts",
            "--utc",
            &dir.path().display().to_string(),
        ]),
        None,
    );
    let table = String::from_utf8_lossy(&table.stdout);
    eprintln!("{table}");
    assert!(
        table.contains("7 starts, 6 Ready; time to Ready median 5.0s, p90 366.0s"),
        "{table}"
    );

    // run --once, its store read back.
    let svc = service(dir.path());
    let out = svc.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cfg = svc.config().display().to_string();
    let stored = json(&["--config", &cfg, "starts", "-o", "json", "--limit", "0"]);
    assert_eq!(
        by_key(&stored["starts"]),
        starts,
        "run --once differs from scan"
    );
    assert_eq!(stored["fleet"]["starts"], 7);
    let table = run(bin().args(["--config", &cfg, "starts", "--utc"]), None);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("slowest phase most often: network"),
        "{table}"
    );
    let slow = json(&[
        "--config",
        &cfg,
        "starts",
        "-o",
        "json",
        "--verdict",
        "slow",
    ]);
    assert_eq!(slow["starts"].as_array().unwrap().len(), 1);
    let shown = run(
        bin().args(["--config", &cfg, "show", &race_incident, "--utc"]),
        None,
    );
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("start: opened 0 ms after registration, in the ready phase of the start at 09:00:00.000 UTC"),
        "{shown}"
    );
}

/// The journal read in two runs, growing between them (the starts under
/// way at the first run's end are the hosts' records in the store), gives
/// what one read gives.
#[test]
fn a_store_read_in_two_runs_gives_the_starts_of_one_read() {
    let entries = six_starts(T0);
    let whole = tempfile::tempdir().unwrap();
    write(whole.path(), &entries, |_| true);
    let scanned = json(&["scan", "-o", "json", &whole.path().display().to_string()]);

    let dir = tempfile::tempdir().unwrap();
    let cut = T0 + 30_000_000;
    write(dir.path(), &entries, |e| e.at.unwrap() < cut);
    let svc = service(dir.path());
    let out = svc.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cfg = svc.config().display().to_string();
    let first = json(&["--config", &cfg, "starts", "-o", "json", "--limit", "0"]);
    assert!(
        first["starts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["verdict"] == "starting"),
        "{first:#}"
    );
    // The rest, appended to the same files (a collector's files grow).
    write(dir.path(), &entries, |e| e.at.unwrap() >= cut);
    let out = svc.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second = json(&["--config", &cfg, "starts", "-o", "json", "--limit", "0"]);
    assert_eq!(by_key(&second["starts"]), by_key(&scanned["starts"]));
}

/// The journal rendered as `journalctl -o export`, `-o json` and
/// `-o short-iso-precise` text (one rendering of every host's file):
/// the same starts as the journal files read through libsystemd.
#[test]
fn every_format_gives_the_same_starts() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal");
    std::fs::create_dir(&journal).unwrap();
    write(&journal, &six_starts(T0), |_| true);
    let d = journal.display().to_string();
    let from_journal = by_key(&json(&["scan", "-o", "json", &d])["starts"]);
    assert_eq!(from_journal.len(), 7);
    for (name, args) in [
        ("export", &["-o", "export"][..]),
        ("json", &["-o", "json"][..]),
        ("text", &["-o", "short-iso-precise", "--utc"][..]),
    ] {
        let path = dir.path().join(name);
        let mut a = vec!["-D", d.as_str()];
        a.extend_from_slice(args);
        std::fs::write(&path, crate::support::journalctl(&a)).unwrap();
        let starts = by_key(&json(&["scan", "-o", "json", &path.display().to_string()])["starts"]);
        assert_eq!(starts, from_journal, "{name} differs from the journal");
    }
}

/// A collector's journals holding the nodes' own kubelet-sentinel events
/// (as the service writes them: `kubelet-sentinel.service`'s entries with
/// `MESSAGE_ID` and the `KUBELET_SENTINEL_*` fields, their messages naming
/// the kubelet's words) give the incidents and starts they give without.
#[test]
fn the_nodes_own_events_in_a_collectors_journals_change_nothing() {
    let entries = six_starts(T0);
    let plain = tempfile::tempdir().unwrap();
    write(plain.path(), &entries, |_| true);
    let with = tempfile::tempdir().unwrap();
    write(with.path(), &entries, |_| true);
    for host in ["healthy", "race", "refused"] {
        let mut out = Vec::new();
        for (k, (id, event, msg)) in [
            ("aea17aef24704ef7876e52c35c89e46b", "opened", format!("node-status incident 0123456789ab opened for node {host}: \"Error updating node status, will retry\" err=\"error getting node \\\"{host}\\\": node \\\"{host}\\\" not found\"")),
            ("4c5887387c3b46729e84d68e630ff796", "over-threshold", format!("kubelet-down incident 0123456789ac of node {host} is over its threshold (swap): failed to run Kubelet: running with swap on is not supported")),
            ("41390a88e37e4dad8ea9e7befff580cb", "start", format!("node {host} started: Ready in 1420 ms (ready, slowest phase init)")),
        ]
        .into_iter()
        .enumerate()
        {
            let at = (T0 + 200_000_000 + k as i64 * 1000).to_string();
            export_entry(
                &mut out,
                &[
                    ("__REALTIME_TIMESTAMP", &at),
                    ("_HOSTNAME", host),
                    ("_PID", "4242"),
                    ("_UID", "0"),
                    ("_TRANSPORT", "journal"),
                    ("_SYSTEMD_UNIT", "kubelet-sentinel.service"),
                    ("SYSLOG_IDENTIFIER", "kubelet-sentinel"),
                    ("MESSAGE_ID", id),
                    ("PRIORITY", "5"),
                    ("KUBELET_SENTINEL_EVENT", event),
                    ("KUBELET_SENTINEL_NODE", host),
                    ("MESSAGE", &msg),
                ],
            );
        }
        journal_remote(
            &out,
            &with.path().join(format!("remote-{host}@events.journal")),
        );
    }
    let strip = |v: serde_json::Value| {
        let mut v = v;
        for i in v["incidents"].as_array_mut().unwrap() {
            // Cursors differ between the two directories' files.
            for e in i["evidence"].as_array_mut().unwrap() {
                e.as_object_mut().unwrap().remove("cursor");
            }
        }
        (v["incidents"].clone(), v["starts"].clone())
    };
    let a = strip(json(&[
        "scan",
        "-o",
        "json",
        &plain.path().display().to_string(),
    ]));
    let b = strip(json(&[
        "scan",
        "-o",
        "json",
        &with.path().display().to_string(),
    ]));
    assert_eq!(a.1.as_array().unwrap().len(), 7);
    assert_eq!(a, b);
    // Exported (no journal match: every entry is read), the events are
    // read and are no kubelet line.
    let d = with.path().display().to_string();
    let export = with.path().join("all.export");
    std::fs::write(
        &export,
        crate::support::journalctl(&["-D", &d, "-o", "export"]),
    )
    .unwrap();
    let all = json(&["scan", "-o", "json", &export.display().to_string()]);
    let plain_all = json(&["scan", "-o", "json", &plain.path().display().to_string()]);
    assert_eq!(
        all["summary"]["kubelet_lines"], plain_all["summary"]["kubelet_lines"],
        "{:#}",
        all["summary"]
    );
    assert!(all["summary"]["entries"].as_u64() > plain_all["summary"]["entries"].as_u64());
    assert_eq!(strip(all), a);
}
