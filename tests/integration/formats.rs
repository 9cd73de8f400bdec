//! One scenario, four renderings: a journal written by
//! `systemd-journal-remote` (read through libsystemd), `journalctl -o export`,
//! `journalctl -o json` and `journalctl -o short-iso-precise` text. All give
//! the same incidents.

use std::path::Path;

use kubelet_sentinel::Format;
use kubelet_sentinel::IncidentOut;
use kubelet_sentinel::Settings;

use crate::support::{Service, bin, export_entry, journal_remote, journalctl, run, scan_path};

const T0: u64 = 1_752_596_690_000_000; // 2025-07-15T16:24:50Z

struct Line {
    ms: u64,
    host: &'static str,
    unit: &'static str,
    ident: &'static str,
    pid: &'static str,
    msg: String,
}

fn kubelet(ms: u64, host: &'static str, msg: &str) -> Line {
    let pid = if host == "w1" { "2425" } else { "3100" };
    Line {
        ms,
        host,
        unit: "kubelet.service",
        ident: "kubelet",
        pid,
        msg: msg.to_string(),
    }
}

/// A node racing at start-up (w1), a node whose API server refuses it for
/// three status cycles (w2), a multi-line entry, systemd's own line about the
/// unit, and another unit's chatter.
fn scenario() -> Vec<Line> {
    let mut v = vec![
        kubelet(
            0,
            "w1",
            r#"I0715 16:24:50.000000    2425 server.go:484] "Kubelet version" kubeletVersion="v1.31.0""#,
        ),
        kubelet(
            100,
            "w1",
            r#"I0715 16:24:50.100000    2425 shared_informer.go:320] "Caches are synced" controller="node""#,
        ),
        kubelet(
            191,
            "w1",
            r#"I0715 16:24:50.191000    2425 kubelet_node_status.go:72] "Attempting to register node" node="w1""#,
        ),
        kubelet(
            198,
            "w1",
            r#"I0715 16:24:50.198000    2425 kubelet_node_status.go:75] "Successfully registered node" node="w1""#,
        ),
        kubelet(
            198,
            "w1",
            r#"E0715 16:24:50.198400    2425 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w1\": node \"w1\" not found""#,
        ),
        // A `key=<` block: four journal entries, one line.
        kubelet(
            250,
            "w1",
            r#"E0715 16:24:50.250000    2425 kubelet_node_status.go:535] "Error updating node status, will retry" node="w1" err=<"#,
        ),
        kubelet(250, "w1", "\terror getting node \"w1\":"),
        kubelet(250, "w1", "\tnode \"w1\" not found"),
        kubelet(250, "w1", " > attempt=1"),
        Line {
            ms: 300,
            host: "w1",
            unit: "containerd.service",
            ident: "containerd",
            pid: "900",
            msg: "time=\"2025-07-15T16:24:50Z\" level=info msg=\"node not found\"".into(),
        },
        Line {
            ms: 900,
            host: "w2",
            unit: "init.scope",
            ident: "systemd",
            pid: "1",
            msg: "Started kubelet: The Kubernetes Node Agent.".into(),
        },
    ];
    for c in 0..3u64 {
        for n in 0..5 {
            v.push(kubelet(1000 + c * 10_000 + n, "w2", r#"E0715 16:24:51.000000    3100 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"w2\": Get \"https://10.0.0.1:6443/api/v1/nodes/w2?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused""#));
        }
        v.push(kubelet(1000 + c * 10_000 + 5, "w2", r#"E0715 16:24:51.000000    3100 kubelet_node_status.go:522] "Unable to update node status" err="update node status exceeds retry count""#));
    }
    v
}

fn export_of(lines: &[Line]) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, l) in lines.iter().enumerate() {
        let at = (T0 + l.ms * 1000 + n as u64).to_string();
        let mut fields: Vec<(&str, &str)> = vec![
            ("__REALTIME_TIMESTAMP", &at),
            ("_HOSTNAME", l.host),
            ("SYSLOG_IDENTIFIER", l.ident),
            ("_PID", l.pid),
            ("MESSAGE", &l.msg),
        ];
        let stream = format!("{}-{}", l.host, l.pid);
        if l.ident == "systemd" {
            fields.push(("UNIT", "kubelet.service"));
            fields.push(("_SYSTEMD_UNIT", "init.scope"));
        } else {
            fields.push(("_SYSTEMD_UNIT", l.unit));
            fields.push(("_STREAM_ID", &stream));
        }
        export_entry(&mut out, &fields);
    }
    out
}

fn incidents_without_cursors(path: &Path, format: Format) -> serde_json::Value {
    let r = scan_path(path, format);
    let settings = Settings::default();
    let mut v = serde_json::to_value(
        r.incidents
            .iter()
            .map(|i| IncidentOut::new(i, &settings))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    for i in v.as_array_mut().unwrap() {
        for e in i["evidence"].as_array_mut().unwrap() {
            let e = e.as_object_mut().unwrap();
            e.remove("cursor");
            // journalctl's text output expands TABs: compare the words.
            let words: Vec<String> = e["text"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .map(String::from)
                .collect();
            e.insert("text".into(), words.join(" ").into());
        }
    }
    v
}

/// The scenario written by `systemd-journal-remote` into `journal/` of a
/// new temporary directory: the directory, the journal directory, the file.
fn scenario_journal() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let jdir = dir.path().join("journal");
    std::fs::create_dir(&jdir).unwrap();
    let jfile = jdir.join("remote.journal");
    journal_remote(&export_of(&scenario()), &jfile);
    (dir, jdir, jfile)
}

#[test]
fn journal_export_json_and_text_agree() {
    let (dir, jdir, jfile) = scenario_journal();
    let jpath = jfile.display().to_string();

    let export = dir.path().join("kubelet.export");
    std::fs::write(&export, journalctl(&["--file", &jpath, "-o", "export"])).unwrap();
    let json = dir.path().join("kubelet.json");
    std::fs::write(&json, journalctl(&["--file", &jpath, "-o", "json"])).unwrap();
    let text = dir.path().join("kubelet.log");
    std::fs::write(
        &text,
        journalctl(&["--file", &jpath, "-o", "short-iso-precise", "--utc"]),
    )
    .unwrap();

    let from_journal = incidents_without_cursors(&jdir, Format::Auto);
    let incidents = from_journal.as_array().unwrap();
    assert_eq!(incidents.len(), 2, "{from_journal:#}");
    assert_eq!(incidents[0]["node"], "w1");
    assert_eq!(incidents[0]["verdict"], "startup-race");
    assert_eq!(incidents[0]["retries"], 2);
    assert_eq!(incidents[1]["node"], "w2");
    assert_eq!(incidents[1]["verdict"], "persistent");
    assert_eq!(incidents[1]["cause"], "api-unreachable");
    assert_eq!(incidents[1]["retries"], 15);
    assert_eq!(incidents[1]["exhausted"], 3);
    // The block was joined into one line, its error read from the block.
    assert!(
        incidents[0]["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["text"]
                .as_str()
                .unwrap()
                .contains("error getting node \"w1\": node \"w1\" not found > attempt=1"))
    );

    for (path, format) in [
        (&export, Format::Auto),
        (&json, Format::Auto),
        (&text, Format::Auto),
        (&jfile, Format::Journal),
    ] {
        assert_eq!(
            incidents_without_cursors(path, format),
            from_journal,
            "{} differs from the journal",
            path.display()
        );
    }

    // Read through libsystemd, evidence carries journal cursors.
    let r = scan_path(&jdir, Format::Auto);
    assert!(
        r.incidents[0]
            .evidence()
            .all(|e| e.cursor.as_deref().is_some_and(|c| c.starts_with("s=")))
    );
    // Four journal entries, one line, TABs kept.
    assert!(
        r.incidents[0].evidence().any(|e| e.text.ends_with(
            "err=<\n\terror getting node \"w1\":\n\tnode \"w1\" not found\n > attempt=1"
        ))
    );
    assert_eq!(r.summary.continuations, 3);
    // The journal match (unit, or systemd's lines about it) left containerd out.
    assert_eq!(r.summary.entries, scenario().len() as u64 - 1);
}

#[test]
fn an_unreadable_journal_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let r = kubelet_sentinel::scan(
        &[kubelet_sentinel::Input::Path(
            dir.path().display().to_string(),
        )],
        &crate::support::read_options(Format::Auto),
        Settings::default(),
    );
    assert_eq!(r.failed.len(), 1);
    let msg = r.failed[0].to_string();
    assert!(msg.contains("no readable journal files"), "{msg}");
    assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
}

/// Attack report D7: one entry dated far in the future (here 2150, inside
/// what an export may carry) must not move its host's clock to the end of
/// time: the storm after it and the node an hour later keep their own times,
/// and the last node is still open at the end of the scan.
#[test]
fn one_far_future_entry_moves_no_clock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.export");
    let mut out = Vec::new();
    let retry = |node: &str| {
        format!(
            "E0715 16:24:50.000000    2425 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"{node}\\\": Get \\\"https://10.0.0.1:6443/api/v1/nodes/{node}\\\": dial tcp 10.0.0.1:6443: connect: connection refused\""
        )
    };
    let far = 5_680_281_600_000_000u64.to_string(); // 2150-01-01
    let first = retry("w0");
    export_entry(
        &mut out,
        &[
            ("__REALTIME_TIMESTAMP", &far),
            ("_HOSTNAME", "h1"),
            ("SYSLOG_IDENTIFIER", "kubelet"),
            ("_SYSTEMD_UNIT", "kubelet.service"),
            ("MESSAGE", &first),
        ],
    );
    let storm = retry("w1");
    let late = retry("w2");
    for (n, (ms, msg)) in (0..8u64)
        .map(|n| (n * 200, &storm))
        .chain([(3_600_000, &late)])
        .enumerate()
    {
        let at = (T0 + ms * 1000 + n as u64).to_string();
        export_entry(
            &mut out,
            &[
                ("__REALTIME_TIMESTAMP", &at),
                ("_HOSTNAME", "h1"),
                ("SYSLOG_IDENTIFIER", "kubelet"),
                ("_SYSTEMD_UNIT", "kubelet.service"),
                ("MESSAGE", msg),
            ],
        );
    }
    std::fs::write(&path, out).unwrap();
    let r = scan_path(&path, Format::Export);
    assert_eq!(r.summary.damaged, 1, "{:?}", r.summary);
    assert!(
        r.malformed.iter().any(|m| m.reason.contains("2150-01-01")),
        "{:?}",
        r.malformed
    );
    let settings = Settings::default();
    let by_node = |node: &str| {
        r.incidents
            .iter()
            .map(|i| IncidentOut::new(i, &settings))
            .find(|i| i.node == node)
            .unwrap_or_else(|| panic!("no incident for {node}: {:?}", r.incidents))
    };
    let storm = by_node("w1");
    assert_eq!(storm.status.as_str(), "resolved");
    assert_eq!(storm.counters.retries, 8);
    assert!(
        storm.opened_at.starts_with("2025-07-15T16:24:50"),
        "{}",
        storm.opened_at
    );
    let late = by_node("w2");
    assert_eq!(late.status.as_str(), "open");
    assert!(
        late.opened_at.starts_with("2025-07-15T17:24:50"),
        "{}",
        late.opened_at
    );
}

/// The offset of the data object holding `payload` (uncompressed), checked
/// by its type (1: data) and size: the payload starts 64 bytes in, or 72 in
/// a compact file.
fn data_object(file: &[u8], payload: &[u8]) -> usize {
    let le64 = |at: usize| u64::from_le_bytes(file[at..at + 8].try_into().unwrap());
    let mut from = 0;
    while let Some(i) = file[from..]
        .windows(payload.len())
        .position(|w| w == payload)
    {
        let p = from + i;
        for header in [72, 64] {
            if p >= header {
                let o = p - header;
                if file[o] == 1 && le64(o + 8) == (header + payload.len()) as u64 {
                    return o;
                }
            }
        }
        from = p + 1;
    }
    panic!("no data object for {}", String::from_utf8_lossy(payload));
}

/// libsystemd drops a file it cannot iterate from the handle and reads on
/// as if it had ended there (the attack report's flipped bytes: 40 of 120
/// kubelet entries through the unit match, exit 0, no word; all of them
/// without the match). The file is named as damaged, the rest of it is read
/// without the match, and the read counts as one with losses (exit 4): from
/// the file, from its directory, and by the service's catch-up, which
/// resumes from where it stopped.
#[test]
fn a_damaged_journal_file_is_named_and_read_to_its_end() {
    let (dir, jdir, jfile) = scenario_journal();
    let jpath = jfile.display().to_string();
    let clean = dir.path().join("clean.journal");
    std::fs::copy(&jfile, &clean).unwrap();
    let unit_lines =
        |p: &str| journalctl(&["--file", p, "-u", "kubelet.service", "-o", "cat"]).len();
    let intact_lines = unit_lines(&jpath);

    // Damage the entry array of `_SYSTEMD_UNIT=kubelet.service`: its
    // first entry is stored inline, the rest are behind the array.
    let mut bytes = std::fs::read(&jfile).unwrap();
    let d = data_object(&bytes, b"_SYSTEMD_UNIT=kubelet.service");
    let array = u64::from_le_bytes(bytes[d + 48..d + 56].try_into().unwrap()) as usize;
    assert_eq!(bytes[array], 6, "an entry array object");
    bytes[array] = 0x7f;
    std::fs::write(&jfile, &bytes).unwrap();
    let damaged_lines = unit_lines(&jpath);
    assert!(
        damaged_lines > 0 && damaged_lines < intact_lines / 4,
        "the damage hides entries from libsystemd: {damaged_lines} of {intact_lines} bytes"
    );

    let scan = |target: &Path| {
        let out = run(bin().args(["scan", "-q", "-o", "json"]).arg(target), None);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
            v,
        )
    };
    let (code, err, intact) = scan(&clean);
    assert_eq!(code, Some(0), "an intact copy says nothing: {err}");
    assert_eq!(intact["incidents"].as_array().unwrap().len(), 2);
    for target in [&jfile, &jdir] {
        let (code, err, v) = scan(target);
        assert_eq!(code, Some(4), "read with losses: {err}");
        assert!(err.contains(&format!("{jpath}: damaged")), "{err}");
        assert!(err.contains("journalctl --verify"), "{err}");
        assert!(err.contains("the rest is read entry by entry"), "{err}");
        assert_eq!(v["summary"]["malformed"], 1, "{v:#}");
        assert_eq!(
            v["summary"]["kubelet_lines"],
            intact["summary"]["kubelet_lines"]
        );
        assert_eq!(v["incidents"], intact["incidents"]);
    }

    // The service's catch-up reads it all too, with a position it resumes
    // from: a second run reads nothing again.
    let svc = Service::new(&format!("directory = \"{}\"", jdir.display()), "");
    for _ in 0..2 {
        let out = svc.run_once();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains(&format!("{jpath}: damaged")), "{err}");
        let status = svc.query(&["status", "-o", "json"]);
        let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
        assert_eq!(status["kubelet_lines"], intact["summary"]["kubelet_lines"]);
    }
    assert_eq!(
        svc.incidents().as_array().unwrap().len(),
        intact["incidents"].as_array().unwrap().len()
    );
}
