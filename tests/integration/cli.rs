//! Black-box tests of the command line: exit codes, output shapes, inputs.

use std::io::Write;

use crate::support::{bin, fixture, run};

#[test]
fn scan_json_follows_the_contract() {
    let out = run(
        bin()
            .args(["scan", "--utc", "--year", "2025", "--output", "json"])
            .arg(fixture("sync-guide/problematic.log")),
        None,
    );
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "entries",
        "kubelet_lines",
        "recognized",
        "unparsed",
        "first_at",
        "last_at",
        "nodes",
    ] {
        assert!(v["summary"].get(key).is_some(), "summary.{key}");
    }
    let i = &v["incidents"][0];
    for key in [
        "id",
        "node",
        "host",
        "status",
        "verdict",
        "cause",
        "opened_at",
        "last_signal_at",
        "resolved_at",
        "retries",
        "exhausted",
        "lister_misses",
        "register_failures",
        "lease_failures",
        "watch_failures",
        "alerted_at",
        "diagnosis",
        "evidence",
    ] {
        assert!(i.get(key).is_some(), "incident.{key}");
    }
    assert_eq!(i["opened_at"], "2025-07-15T16:24:50.198Z");
    assert_eq!(v["summary"]["nodes"], serde_json::json!(["nuvlrknpcimn01"]));
    for key in ["at", "cursor", "signal", "text"] {
        assert!(i["evidence"][0].get(key).is_some(), "evidence.{key}");
    }
}

#[test]
fn table_and_details() {
    let out = run(
        bin()
            .args(["scan", "--utc", "--year", "2025", "--details"])
            .arg(fixture("sync-guide/problematic.log")),
        None,
    );
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("ID "), "{text}");
    assert!(
        text.contains("nuvlrknpcimn01  open    startup-race  lister-lag  1"),
        "{text}"
    );
    assert!(text.contains("1 incident (1 open) on 1 node"), "{text}");
    assert!(
        text.contains("-98ms  2025-07-15 16:24:50.100 UTC  caches-synced"),
        "{text}"
    );
    assert!(
        text.contains("+0ms  2025-07-15 16:24:50.198 UTC  status-retry"),
        "{text}"
    );
    // The timeline as a picture: the retry and the markers around it.
    assert!(text.contains("signals over time:"), "{text}");
    assert!(text.contains("R registered  C caches synced"), "{text}");
}

#[test]
fn several_paths_gzip_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("coreos.log.gz");
    let raw = std::fs::read(fixture("real-logs/coreos-bugs-1650.txt")).unwrap();
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&raw).unwrap();
    enc.finish().unwrap();
    let out = run(
        bin()
            .args(["scan", "--utc", "-o", "json"])
            .arg(&gz)
            .arg(fixture("real-logs/kubernetes-kubernetes-75607.txt")),
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["incidents"].as_array().unwrap().len(), 2);
    let out = run(bin().args(["scan", "--utc", "-o", "json", "-"]), Some(&raw));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["incidents"][0]["cause"], "etcd");
}

#[test]
fn errors_say_what_and_where() {
    let out = run(bin().args(["scan", "/nonexistent/kubelet.log"]), None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/kubelet.log"), "{err}");

    let out = run(bin().args(["scan", "--retries", "many"]), None);
    assert_eq!(out.status.code(), Some(2));
    let out = run(bin().args(["scan", "--window", "10"]), None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing unit"));

    // A broken JSON line is skipped with its place; the rest is read.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k.json");
    std::fs::write(
        &p,
        concat!(
            r#"{"__REALTIME_TIMESTAMP":"1752596690198000","_SYSTEMD_UNIT":"kubelet.service","_HOSTNAME":"w1","MESSAGE":"E0715 16:24:50.198000    1 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"w1\\\": Unauthorized\""}"#,
            "\n{\"__REALTIME_TIMESTAMP\":\n"
        ),
    )
    .unwrap();
    let out = run(bin().args(["scan", "-o", "json"]).arg(&p), None);
    assert_eq!(out.status.code(), Some(4), "read with losses");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:2", p.display())), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["malformed"], 1);
    assert_eq!(v["incidents"][0]["cause"], "auth");
}

#[test]
fn help_and_version() {
    let out = run(bin().arg("--version"), None);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("kubelet-sentinel "));
    let out = run(bin().args(["scan", "--help"]), None);
    assert!(out.status.success());
}

/// Text from logs printed to a terminal cannot move the cursor, recolour or
/// reorder the screen: escape sequences, carriage returns and bidirectional
/// overrides in a host or node name come out as spaces.
#[test]
fn log_text_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hostile.log");
    let evil = "w\u{1b}[31m\u{1b}]0;pwned\u{7}\r\u{202e}1";
    let mut text = String::new();
    for k in 0..7 {
        text.push_str(&format!(
            "Nov 28 09:00:0{k} host\u{1b}[2J kubelet[1]: E1128 09:00:0{k}.000000       1 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"{evil}\\\": Unauthorized\"\n"
        ));
    }
    std::fs::write(&log, text).unwrap();
    let out = run(bin().args(["scan", "--utc", "--details"]).arg(&log), None);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("Unauthorized") || shown.contains("auth"),
        "{shown}"
    );
    for bad in ['\u{1b}', '\u{7}', '\r', '\u{202e}'] {
        assert!(
            !shown.contains(bad),
            "{bad:?} reached the terminal: {shown:?}"
        );
    }
}

/// A saved text log carries no zone: with `--utc` its times are UTC
/// wherever it is read; without, they are the reading machine's wall
/// times (as journalctl's), decided by the CLI and handed to the core, so
/// the incidents move by exactly the zone's offset and nothing else.
#[test]
fn a_saved_logs_zone_is_decided_at_the_edge() {
    let scan = |tz: &str, utc: bool| -> serde_json::Value {
        let mut cmd = bin();
        cmd.env("TZ", tz)
            .args(["scan", "--year", "2025", "--output", "json"])
            .arg(fixture("sync-guide/problematic.log"));
        if utc {
            cmd.arg("--utc");
        }
        let out = run(&mut cmd, None);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let times = |v: &serde_json::Value| -> Vec<i64> {
        v["incidents"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|i| {
                let at = |k: &str| {
                    chrono::DateTime::parse_from_rfc3339(i[k].as_str().unwrap())
                        .unwrap()
                        .timestamp_millis()
                };
                [at("opened_at"), at("last_signal_at")]
            })
            .collect()
    };
    let utc_here = scan("UTC", true);
    let utc_kolkata = scan("Asia/Kolkata", true);
    assert_eq!(
        utc_here, utc_kolkata,
        "--utc: the same incidents, field for field"
    );
    let local_utc = scan("UTC", false);
    assert_eq!(local_utc, utc_here, "a machine on UTC reads UTC");
    let local_kolkata = scan("Asia/Kolkata", false);
    let (a, b) = (times(&utc_here), times(&local_kolkata));
    assert!(!a.is_empty());
    assert_eq!(a.len(), b.len());
    // Kolkata's wall time is 5 h 30 min ahead: the same wall time is that
    // much earlier in UTC.
    for (u, k) in a.iter().zip(&b) {
        assert_eq!(u - k, (5 * 60 + 30) * 60 * 1000, "{a:?} {b:?}");
    }
    for (x, y) in utc_here["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .zip(local_kolkata["incidents"].as_array().unwrap())
    {
        for k in [
            "node",
            "verdict",
            "cause",
            "retries",
            "lister_misses",
            "status",
        ] {
            assert_eq!(x[k], y[k], "{k}");
        }
    }
}
