//! The service against real components: a `systemd-journald` in a private
//! namespace (written to over its native socket), journal files from
//! `systemd-journal-remote`, and a real sled store in a temp dir. Polls with
//! deadlines; no fixed sleeps where a condition can be waited for.

use std::process::Command;

use crate::support::{Duration, Journald, Service, export_entry, journal_remote, run, wait_for};

/// A klog line with the current time in its header.
fn klog(sev: char, file: &str, body: &str) -> String {
    let t = chrono::Utc::now();
    format!(
        "{sev}{} {:>7} {file}] {body}",
        t.format("%m%d %H:%M:%S%.6f"),
        4242
    )
}

fn refused(node: &str) -> String {
    klog(
        'E',
        "kubelet_node_status.go:535",
        &format!(
            r#""Error updating node status, will retry" err="error getting node \"{node}\": Get \"https://10.0.0.1:6443/api/v1/nodes/{node}?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused""#
        ),
    )
}

fn namespace_service(j: &Journald, extra: &str) -> Service {
    Service::new(
        &format!("namespace = \"{}\"\nidentifiers = [\"kubelet\"]", j.name),
        extra,
    )
}

fn retries_of(svc: &Service, node: &str) -> u64 {
    svc.incidents()
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["node"] == node)
        .map(|i| i["retries"].as_u64().unwrap())
        .sum()
}

#[test]
fn follows_a_live_journal_and_resolves_on_quiet_time() {
    let j = Journald::start("live");
    let mut svc = namespace_service(&j, "[incidents]\nresolve_after = \"3s\"\n");
    svc.start();
    j.kubelet(&[
        klog(
            'I',
            "kubelet_node_status.go:75",
            r#""Successfully registered node" node="live-1""#,
        ),
        refused("live-1"),
        refused("live-1"),
        refused("live-1"),
    ]);
    wait_for(
        Duration::from_secs(5),
        || retries_of(&svc, "live-1") == 3,
        "the incident through `incidents`",
    );
    let i = &svc.incidents()[0];
    assert_eq!(i["status"], "open");
    assert_eq!(i["cause"], "api-unreachable");
    assert!(
        i["evidence"][0]["cursor"]
            .as_str()
            .unwrap()
            .starts_with("s=")
    );
    // No more lines: wall-clock time resolves it while the service idles.
    wait_for(
        Duration::from_secs(15),
        || svc.incidents()[0]["status"] == "resolved",
        "resolution on quiet time",
    );
    assert_eq!(svc.incidents()[0]["verdict"], "transient");
    // The socket and the store print the same JSON.
    let through_socket = svc.query(&["incidents", "-o", "json"]).stdout;
    let status = svc.query(&["status", "-o", "json"]);
    let st: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(st["service"], "running");
    assert_eq!(st["caught_up"], true);
    let metrics = String::from_utf8(svc.query(&["status"]).stdout).unwrap();
    assert!(metrics.contains("service"), "{metrics}");
    assert_eq!(svc.signal("TERM"), Some(0));
    let from_store = svc.query(&["incidents", "-o", "json"]);
    assert!(from_store.status.success());
    assert_eq!(
        String::from_utf8_lossy(&from_store.stdout),
        String::from_utf8_lossy(&through_socket)
    );
    let st: serde_json::Value =
        serde_json::from_slice(&svc.query(&["status", "-o", "json"]).stdout).unwrap();
    assert_eq!(st["service"], "not running");
}

#[test]
fn restart_mid_stream_counts_every_line_once() {
    let j = Journald::start("restart");
    let mut svc = namespace_service(&j, "[incidents]\nresolve_after = \"1h\"\n");
    svc.start();
    let total = 400;
    let writer = {
        let lines: Vec<String> = (0..total).map(|_| refused("rs-1")).collect();
        let name = j.name.clone();
        std::thread::spawn(move || {
            let sock = format!("/run/systemd/journal.{name}/socket");
            let s = std::os::unix::net::UnixDatagram::unbound().unwrap();
            for l in lines {
                s.send_to(
                    format!("MESSAGE={l}\nSYSLOG_IDENTIFIER=kubelet\n").as_bytes(),
                    &sock,
                )
                .unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    wait_for(
        Duration::from_secs(10),
        || retries_of(&svc, "rs-1") >= 50,
        "the first lines",
    );
    assert_eq!(svc.signal("TERM"), Some(0), "SIGTERM exits cleanly");
    let seen_before = retries_of(&svc, "rs-1");
    assert!(seen_before < total, "stopped mid-stream");
    std::thread::sleep(Duration::from_millis(300)); // lines keep coming while it is down
    svc.start();
    writer.join().unwrap();
    wait_for(
        Duration::from_secs(20),
        || retries_of(&svc, "rs-1") >= total,
        "every line",
    );
    // Settle, then check that nothing was counted twice.
    svc.settled();
    assert_eq!(retries_of(&svc, "rs-1"), total);
    assert_eq!(svc.incidents().as_array().unwrap().len(), 1);
    assert!(svc.log().contains("from where it stopped"), "{}", svc.log());
}

#[test]
fn rotation_and_vacuum_lose_nothing_that_still_exists() {
    let j = Journald::start("rot");
    let mut svc = namespace_service(&j, "[incidents]\nresolve_after = \"1h\"\n");
    svc.start();
    let batch = |n: usize| -> Vec<String> { (0..n).map(|_| refused("rot-1")).collect() };
    j.kubelet(&batch(20));
    wait_for(
        Duration::from_secs(5),
        || retries_of(&svc, "rot-1") == 20,
        "batch 1",
    );
    j.journalctl(&["--rotate"]);
    j.kubelet(&batch(20));
    wait_for(
        Duration::from_secs(5),
        || retries_of(&svc, "rot-1") == 40,
        "batch 2 after rotation",
    );
    j.journalctl(&["--rotate"]);
    j.journalctl(&["--vacuum-files=1"]);
    j.kubelet(&batch(20));
    wait_for(
        Duration::from_secs(5),
        || retries_of(&svc, "rot-1") == 60,
        "batch 3 after vacuum",
    );
    let metrics = String::from_utf8(svc.query(&["status", "-o", "json"]).stdout).unwrap();
    let st: serde_json::Value = serde_json::from_str(&metrics).unwrap();
    assert_eq!(st["entries_lost"], 0, "nothing unread was vacuumed");

    // Now entries vacuumed before they were read: the service is down while
    // they are written, rotated into an archive and vacuumed away.
    assert_eq!(svc.signal("TERM"), Some(0));
    j.kubelet(&batch(25));
    j.journalctl(&["--rotate"]);
    j.journalctl(&["--vacuum-files=1"]);
    j.kubelet(&batch(5));
    svc.start();
    wait_for(
        Duration::from_secs(10),
        || retries_of(&svc, "rot-1") >= 65,
        "the lines that still exist",
    );
    let st: serde_json::Value =
        serde_json::from_slice(&svc.query(&["status", "-o", "json"]).stdout).unwrap();
    assert!(st["entries_lost"].as_u64().unwrap() >= 25, "{st}");
    assert!(
        svc.log().contains("vacuumed away before they were read"),
        "{}",
        svc.log()
    );
    let out = run(
        Command::new("sh").arg("-c").arg(format!(
            "{} --config {} status -o json",
            env!("CARGO_BIN_EXE_kubelet-sentinel"),
            svc.config().display()
        )),
        None,
    );
    assert!(out.status.success());
}

/// A journal of `n` entries: three nodes' kubelets (a race, an outage with
/// the retry rhythm, a deleted node) amid other units' chatter.
fn big_journal_export(n: usize) -> Vec<u8> {
    let t0: u64 = 1_795_856_400_000_000;
    let mut out = Vec::with_capacity(n * 300);
    for k in 0..n {
        let at = (t0 + k as u64 * 2_000).to_string();
        let (host, unit, msg) = match k % 10 {
            0 => ("n1", "kubelet.service", "E1128 09:00:00.000000    1111 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"n1\\\": dial tcp 10.0.0.1:6443: connect: connection refused\"".to_string()),
            1 if k % 100 == 1 => ("n2", "kubelet.service", "E1128 09:00:00.000000    2222 kubelet_node_status.go:535] Error updating node status, will retry: error getting node \"n2\": nodes \"n2\" not found".to_string()),
            2 if k % 7000 == 2 => ("n3", "kubelet.service", "I1128 09:00:00.000000    3333 kubelet_node_status.go:75] \"Successfully registered node\" node=\"n3\"".to_string()),
            3 if k % 7000 == 3 => ("n3", "kubelet.service", "E1128 09:00:00.000000    3333 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"n3\\\": node \\\"n3\\\" not found\"".to_string()),
            4 | 5 => ("n1", "kubelet.service", format!("I1128 09:00:00.000000    1111 kubelet.go:2400] \"SyncLoop (PLEG): event for pod\" pod=\"default/p{k}\"")),
            _ => ("n2", "containerd.service", format!("time=\"2026-11-28T09:00:00Z\" level=info msg=\"event {k}\"")),
        };
        let stream = format!("{host}-{unit}");
        export_entry(
            &mut out,
            &[
                ("__REALTIME_TIMESTAMP", &at),
                ("_HOSTNAME", host),
                ("_SYSTEMD_UNIT", unit),
                ("SYSLOG_IDENTIFIER", unit.trim_end_matches(".service")),
                ("_STREAM_ID", &stream),
                ("MESSAGE", &msg),
            ],
        );
    }
    out
}

#[test]
fn kill_9_during_catch_up_gives_the_same_history() {
    let dir = tempfile::tempdir().unwrap();
    let jdir = dir.path().join("journal");
    std::fs::create_dir(&jdir).unwrap();
    journal_remote(&big_journal_export(100_000), &jdir.join("big.journal"));
    let section = format!("directory = \"{}\"", jdir.display());
    let extra = "[incidents]\nresolve_after = \"30s\"\n";

    let reference = Service::new(&section, extra);
    let out = reference.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = reference.incidents();
    assert!(expected.as_array().unwrap().len() >= 3, "{expected:#}");

    let mut crashed = Service::new(&section, extra);
    let mut killed_at = Vec::new();
    // `entries` counts the kubelet's (the journal match), about 31k of the 100k.
    for threshold in [5_000u64, 14_000, 24_000] {
        crashed.start();
        // Kill it once it is past the threshold but before it is done.
        let end = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let st = crashed.query(&["status", "-o", "json"]);
            let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap_or_default();
            let read = v["entries"].as_u64().unwrap_or(0);
            if read >= threshold || v["caught_up"] == true || std::time::Instant::now() > end {
                killed_at.push((read, v["caught_up"] == true));
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let code = crashed.signal("KILL");
        assert_eq!(code, None, "killed by the signal; log: {}", crashed.log());
    }
    eprintln!("killed at (entries committed, caught up): {killed_at:?}");
    // The kills landed mid catch-up (on a very slow or fast machine one may not).
    assert!(
        killed_at
            .iter()
            .filter(|(read, done)| !done && *read < 31_000)
            .count()
            >= 2,
        "{killed_at:?}"
    );
    let out = crashed.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        crashed.incidents(),
        expected,
        "history after kill -9 x3 differs from an uninterrupted run"
    );
    // Every entry counted exactly once across the crashes.
    let status = |svc: &Service| -> serde_json::Value {
        serde_json::from_slice(&svc.query(&["status", "-o", "json"]).stdout).unwrap()
    };
    let (a, b) = (status(&reference), status(&crashed));
    for key in ["entries", "kubelet_lines", "recognized", "unparsed"] {
        assert_eq!(a[key], b[key], "{key}");
    }
    assert!(a["kubelet_lines"].as_u64().unwrap() > 30_000, "{a}");
}

#[test]
fn bad_config_exits_78_naming_key_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.toml");
    std::fs::write(&p, "[alert]\nretries = 5\nrepeat_intervall = \"4h\"\n").unwrap();
    let out = run(
        crate::support::bin()
            .arg("--config")
            .arg(&p)
            .arg("check-config"),
        None,
    );
    assert_eq!(out.status.code(), Some(78));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("repeat_intervall") && err.contains("line 3"),
        "{err}"
    );
    let out = run(
        crate::support::bin()
            .arg("--config")
            .arg(&p)
            .args(["run", "--once"]),
        None,
    );
    assert_eq!(out.status.code(), Some(78));
    let out = run(
        crate::support::bin()
            .arg("--config")
            .arg(dir.path().join("missing.toml"))
            .arg("check-config"),
        None,
    );
    assert_eq!(out.status.code(), Some(78));
}

#[test]
fn queries_say_why_when_there_is_nothing_to_ask() {
    let svc = Service::new("directory = \"/nonexistent\"", "");
    let out = svc.query(&["incidents"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not running") && err.contains("no store yet"),
        "{err}"
    );
    // A silence before the service ever ran makes the store and is kept.
    let out = svc.query(&[
        "silence",
        "add",
        "--node",
        "early-*",
        "--for",
        "2h",
        "--comment",
        "planned work",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = svc.query(&["silence", "list"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("early-*"));
    store_out_of_reach_is_said(&svc);
    // The journal is unreadable: run says which, and exits 1.
    let out = svc.run_once();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent"), "{err}");
}

/// Issue 28 (N12): a store that exists in a directory this user may not
/// look into (under systemd: `/var/lib/private`, root's) is said to be
/// out of reach, not missing. The user here is `nobody` (`setpriv`), with a
/// config of its own that points at a copy of the store under a mode-0700
/// directory.
fn store_out_of_reach_is_said(svc: &Service) {
    use std::os::unix::fs::PermissionsExt as _;
    let open = tempfile::tempdir().unwrap();
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let private = open.path().join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let copied = run(
        Command::new("cp")
            .arg("-a")
            .arg(svc.dir.path().join("store"))
            .arg(&private),
        None,
    );
    assert!(copied.status.success(), "{copied:?}");
    let config = open.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[journal]\ndirectory = \"/nonexistent\"\n[store]\npath = \"{}\"\n[api]\nsocket = \"{}\"\n",
            private.join("store").display(),
            open.path().join("query.sock").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = run(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_kubelet-sentinel"))
            .arg("--config")
            .arg(&config)
            .arg("incidents"),
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not readable by this user") && !err.contains("no store yet"),
        "{err}"
    );
}

#[test]
fn sighup_reloads_what_it_can_and_says_what_needs_a_restart() {
    let j = Journald::start("hup");
    let mut svc = namespace_service(&j, "[incidents]\nresolve_after = \"1h\"\n");
    svc.start();
    j.kubelet(&[refused("hup-1")]);
    wait_for(
        Duration::from_secs(5),
        || retries_of(&svc, "hup-1") == 1,
        "the incident",
    );
    // Shorter resolve_after (applies at once) and another journal (needs a restart).
    let text = std::fs::read_to_string(svc.config())
        .unwrap()
        .replace("resolve_after = \"1h\"", "resolve_after = \"1s\"")
        .replace("start_at = \"all\"", "start_at = \"now\"");
    std::fs::write(svc.config(), text).unwrap();
    svc.signal_only("HUP");
    wait_for(
        Duration::from_secs(10),
        || svc.incidents()[0]["status"] == "resolved",
        "resolution under the reloaded settings",
    );
    let log = svc.log();
    assert!(log.contains("config reloaded"), "{log}");
    assert!(
        log.contains("need a restart") && log.contains("[journal]"),
        "{log}"
    );
    // A broken config on SIGHUP keeps the running settings.
    std::fs::write(svc.config(), "[alert]\nretries = \"many\"\n").unwrap();
    svc.signal_only("HUP");
    wait_for(
        Duration::from_secs(5),
        || {
            svc.log()
                .contains("config refused, the running settings stay")
        },
        "the reload error",
    );
    assert_eq!(svc.signal("TERM"), Some(0));
}

#[test]
fn metrics_over_tcp() {
    let j = Journald::start("metrics");
    let mut svc = namespace_service(&j, "");
    svc.serve_metrics();
    svc.start();
    let port = svc.metrics_port();
    j.kubelet(&[refused("met-1"), refused("met-1")]);
    wait_for(
        Duration::from_secs(5),
        || retries_of(&svc, "met-1") == 2,
        "the incident",
    );
    let get_with = |path: &str, extra: &str| -> String {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n").unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        s
    };
    let get = |path: &str| get_with(path, "");
    // What Prometheus asks for: OpenMetrics.
    let open = get_with(
        "/metrics",
        "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n",
    );
    assert!(
        open.contains("application/openmetrics-text") && open.trim_end().ends_with("# EOF"),
        "{open}"
    );
    let m = get("/metrics");
    assert!(m.starts_with("HTTP/1.1 200"), "{m}");
    for name in [
        "kubelet_sentinel_entries_read_total",
        "kubelet_sentinel_unparsed_total",
        "kubelet_sentinel_open_incidents 1",
        "kubelet_sentinel_open_incident_retries{node=\"met-1\",cause=\"api-unreachable\",verdict=\"undetermined\"} 2",
        "kubelet_sentinel_incidents{verdict=\"undetermined\"} 1",
        "kubelet_sentinel_journal_lag_seconds",
        "kubelet_sentinel_outbox_length{channel=\"email\"} 0",
        "kubelet_sentinel_build_info{version=",
    ] {
        assert!(m.contains(name), "{name} missing:\n{m}");
    }
    assert!(
        get("/incidents").starts_with("HTTP/1.1 404"),
        "only /metrics over TCP"
    );
    // Prometheus's own linter takes it, and every metric the shipped rules
    // use is there.
    let body = m.split_once("\r\n\r\n").unwrap().1;
    let out = run(
        Command::new("promtool").args(["check", "metrics"]),
        Some(body.as_bytes()),
    );
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let rules = include_str!("../../packaging/prometheus/kubelet-sentinel.rules.yml");
    for word in rules.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if word.starts_with("kubelet_sentinel_") {
            assert!(
                m.contains(word),
                "the rules use {word}, which /metrics lacks"
            );
        }
    }
}

#[test]
fn alerts_older_than_max_age_are_recorded_not_mailed() {
    // The sample journal is dated 2026-11-28: older than the default max_age
    // of 24 h by the time anyone runs this. Its incidents are recorded, and
    // nothing is mailed.
    let dir = tempfile::tempdir().unwrap();
    let jdir = dir.path().join("journal");
    std::fs::create_dir(&jdir).unwrap();
    let out = run(
        Command::new(env!("CARGO")).args(["run", "--quiet", "--example", "sample_journal"]),
        None,
    );
    assert!(out.status.success());
    journal_remote(&out.stdout, &jdir.join("sample.journal"));
    let mail = dir.path().join("mail");
    std::fs::create_dir(&mail).unwrap();
    let svc = Service::new(
        &format!("directory = \"{}\"", jdir.display()),
        &format!(
            "[alert]\nto = [\"ops@example.com\"]\ntransport = \"file\"\n[alert.file]\ndirectory = \"{}\"\n",
            mail.display()
        ),
    );
    let out = svc.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(svc.incidents().as_array().unwrap().len(), 3);
    assert_eq!(
        std::fs::read_dir(&mail).unwrap().count(),
        0,
        "mailed an alert older than max_age"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("older than [alert] max_age (1d) when it was read: recorded;"),
        "{err}"
    );
}

#[test]
fn a_line_over_journald_line_max_is_one_line_again() {
    use std::io::Write;
    let j = Journald::start("linemax");
    // journald's stdout stream protocol: identifier, unit id, priority,
    // level prefix, and the forward-to flags; then the lines.
    let mut s =
        std::os::unix::net::UnixStream::connect(format!("/run/systemd/journal.{}/stdout", j.name))
            .unwrap();
    s.write_all(b"kubelet\n\n6\n0\n0\n0\n0\n").unwrap();
    let now = chrono::Utc::now().format("%m%d %H:%M:%S%.6f");
    let head = format!(
        r#"E{now}    4242 kubelet_node_status.go:535] "Error updating node status, will retry" err="failed to patch status \"{{"#
    );
    // journald cuts at LineMax (48 KiB): make the second piece start like a
    // klog header, as a cut through a status patch's image list can.
    let line_max = 48 * 1024;
    let patch = format!(
        "{}E1128 00:00:00.000000    1 fake.go:1] {}",
        "x".repeat(line_max - head.len()),
        "y".repeat(60 * 1024)
    );
    let line = format!(
        r#"{head}{patch}}}\" for node \"big-1\": Put \"https://10.0.0.1:6443/api/v1/nodes/big-1/status\": context deadline exceeded""#
    );
    s.write_all(line.as_bytes()).unwrap();
    s.write_all(b"\n").unwrap();
    drop(s);
    let mut svc = namespace_service(&j, "");
    svc.start();
    wait_for(
        Duration::from_secs(10),
        || retries_of(&svc, "big-1") == 1,
        "the cut line as one retry",
    );
    let i = &svc.incidents()[0];
    // The cause is at the end of the line, after the cuts.
    assert_eq!(i["cause"], "api-timeout", "{i}");
    let st: serde_json::Value =
        serde_json::from_slice(&svc.query(&["status", "-o", "json"]).stdout).unwrap();
    assert_eq!(st["unparsed"], 0, "no piece left over: {st}");
    assert!(
        st["entries"].as_u64().unwrap() >= 3,
        "journald cut it into pieces: {st}"
    );
}

/// Sends one entry to the namespace's socket as `uid` (a real process under
/// that user, as `logger -t kubelet` by a local user would).
fn send_as(j: &Journald, uid: u32, fields: &[(&str, &str)]) {
    let mut dgram = String::new();
    for (k, v) in fields {
        dgram.push_str(&format!("{k}={v}\n"));
    }
    let out = run(
        Command::new("setpriv")
            .arg(format!("--reuid={uid}"))
            .arg(format!("--regid={uid}"))
            .args(["--clear-groups", "/usr/bin/python3", "-c"])
            .arg(
                "import socket,sys; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); \
                 s.sendto(sys.stdin.buffer.read(), sys.argv[1])",
            )
            .arg(j.socket()),
        Some(dgram.as_bytes()),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn kubelet_look_alikes_from_other_users_open_nothing() {
    let j = Journald::start("trust");
    let mut svc = Service::new(
        &format!(
            "namespace = \"{}\"\nidentifiers = [\"kubelet\"]\ncontainers = [\"kubelet\"]",
            j.name
        ),
        "[incidents]\nresolve_after = \"1h\"\n",
    );
    svc.start();
    // A local stranger (nobody) writes kubelet lines under the kubelet's
    // identifier and container name.
    for _ in 0..6 {
        send_as(
            &j,
            65534,
            &[
                ("MESSAGE", &refused("spoofed-prod-db")),
                ("SYSLOG_IDENTIFIER", "kubelet"),
            ],
        );
        send_as(
            &j,
            65534,
            &[
                ("MESSAGE", &refused("spoofed-ctr")),
                ("CONTAINER_NAME", "kubelet"),
            ],
        );
    }
    // Root's lines (the kubelet runs as root) count.
    j.kubelet(&[refused("real-1"), refused("real-1")]);
    wait_for(
        Duration::from_secs(10),
        || retries_of(&svc, "real-1") == 2,
        "root's lines",
    );
    let status = || -> serde_json::Value {
        serde_json::from_slice(&svc.query(&["status", "-o", "json"]).stdout).unwrap()
    };
    wait_for(
        Duration::from_secs(10),
        || status()["untrusted"] == 12,
        "the look-alikes counted",
    );
    let nodes: Vec<_> = svc
        .incidents()
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["node"].clone())
        .collect();
    assert_eq!(nodes, ["real-1"], "{nodes:?}");
    // scan of the same journal agrees, and says why the others were left.
    let out = run(
        crate::support::bin().args(["scan", "--namespace", &j.name, "--identifier", "kubelet"]),
        None,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("real-1") && !text.contains("spoofed"),
        "{text}"
    );
    assert!(
        text.contains("12 untrusted look-alikes ignored (kubelet (uid 65534): 12)"),
        "{text}"
    );
    assert_eq!(svc.signal("TERM"), Some(0));
}

#[test]
fn a_broken_config_leaves_the_queries_answering() {
    let j = Journald::start("typo");
    let mut svc = namespace_service(&j, "[incidents]\nresolve_after = \"1h\"\n");
    svc.start();
    j.kubelet(&[refused("typo-1")]);
    wait_for(
        Duration::from_secs(10),
        || retries_of(&svc, "typo-1") == 1,
        "the incident",
    );
    // A half-finished edit: an unknown key in the file the service runs on.
    let text = std::fs::read_to_string(svc.config()).unwrap();
    std::fs::write(
        svc.config(),
        format!("{text}\n[alert]\nrepeat_intervall = \"2h\"\n"),
    )
    .unwrap();
    for args in [
        &["incidents"][..],
        &["status"],
        &["nodes"],
        &["silence", "list"],
    ] {
        let out = svc.query(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            err.contains("repeat_intervall") && err.contains("line") && err.contains("query.sock"),
            "{args:?}: {err}"
        );
    }
    let out = svc.query(&["incidents"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("typo-1"));
    // The file itself is still refused where it is being applied.
    assert_eq!(svc.query(&["check-config"]).status.code(), Some(78));
    // Issue 28 (D21): not even TOML any more (a string left open): the
    // socket line is still read on its own, and the running service answers.
    std::fs::write(
        svc.config(),
        format!("{text}\n[alert]\nrepeat_interval = \"2h\n"),
    )
    .unwrap();
    let out = svc.query(&["status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("line") && err.contains("query.sock"), "{err}");
    // The socket line itself broken: the socket is a guess, so "not
    // running" (3) would be a claim; it cannot be told (1).
    let broken_socket = text.replace("socket = \"", "socket = \"\"");
    assert_ne!(broken_socket, text);
    std::fs::write(svc.config(), broken_socket).unwrap();
    let out = svc.query(&["status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot tell whether the service runs"),
        "{err}"
    );
    std::fs::write(svc.config(), &text).unwrap();
    assert_eq!(svc.signal("TERM"), Some(0));
}

/// A kubelet process of its own: a child that sends `lines` to the
/// namespace's journald over the native socket, `gap` apart, then exits.
/// journald stamps them with the child's `_PID`, so each call is another
/// kubelet process (a restart).
fn kubelet_process(j: &Journald, lines: &[String], gap: Duration) {
    let script = r#"
import json, socket, sys, time
sock, gap = sys.argv[1], float(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for line in json.load(sys.stdin):
    s.sendto(("MESSAGE=%s\nSYSLOG_IDENTIFIER=kubelet\nPRIORITY=6\n" % line).encode(), sock)
    time.sleep(gap)
"#;
    let out = run(
        Command::new("/usr/bin/python3").args([
            "-c",
            script,
            &j.socket().display().to_string(),
            &gap.as_secs_f64().to_string(),
        ]),
        Some(serde_json::to_string(lines).unwrap().as_bytes()),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 17, F1, on a real journal: the start-up race (one lister miss,
/// then ready, as the first process's last line), the kubelet restarted
/// (another PID), then an outage of retries. A following service, `run
/// --once` and `scan` all find the two incidents the live service found:
/// the resolved start-up race of one retry, and the persistent outage.
/// Before the fix, `run --once` and `scan` made one persistent incident of
/// the race and the outage, and a phantom after it.
#[test]
fn a_restarted_kubelet_gives_every_reader_the_same_two_incidents() {
    let j = Journald::start("rst");
    let extra = "[incidents]\nresolve_after = \"3s\"\n";
    let mut svc = namespace_service(&j, extra);
    svc.start();
    let node = "restart-1";
    kubelet_process(
        &j,
        &[
            klog(
                'I',
                "server.go:484",
                r#""Kubelet version" kubeletVersion="v1.31.0""#,
            ),
            klog(
                'I',
                "kubelet_node_status.go:75",
                &format!(r#""Successfully registered node" node="{node}""#),
            ),
            klog(
                'E',
                "kubelet_node_status.go:535",
                &format!(
                    r#""Error updating node status, will retry" err="error getting node \"{node}\": node \"{node}\" not found""#
                ),
            ),
            klog(
                'I',
                "kubelet_node_status.go:493",
                r#""Fast updating node status as it just became ready""#,
            ),
        ],
        Duration::from_millis(100),
    );
    // The restart, once the service has read the first process to its
    // end: the new process runs into the outage.
    wait_for(
        Duration::from_secs(15),
        || {
            svc.incidents().as_array().unwrap().iter().any(|i| {
                i["node"] == node && i["verdict"] == "startup-race" && i["status"] == "resolved"
            })
        },
        "the start-up race read and resolved",
    );
    let mut outage = vec![klog(
        'I',
        "server.go:484",
        r#""Kubelet version" kubeletVersion="v1.31.0""#,
    )];
    outage.extend((0..12).map(|_| refused(node)));
    kubelet_process(&j, &outage, Duration::from_millis(100));
    let summary = |incidents: &serde_json::Value| -> Vec<(String, String, u64)> {
        incidents
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["node"] == node)
            .map(|i| {
                (
                    i["verdict"].as_str().unwrap().to_string(),
                    i["cause"].as_str().unwrap().to_string(),
                    i["retries"].as_u64().unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let mut want = vec![
        ("persistent".to_string(), "api-unreachable".to_string(), 12),
        ("startup-race".to_string(), "lister-lag".to_string(), 1),
    ];
    want.sort();
    let sorted = |mut v: Vec<(String, String, u64)>| {
        v.sort();
        v
    };
    wait_for(
        Duration::from_secs(15),
        || sorted(summary(&svc.incidents())) == want,
        "the following service's two incidents",
    );
    let race_resolved = |incidents: &serde_json::Value| {
        incidents
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["verdict"] == "startup-race" && i["status"] == "resolved")
    };
    assert!(race_resolved(&svc.incidents()));
    assert_eq!(svc.signal("TERM"), Some(0));

    let once = namespace_service(&j, extra);
    let out = once.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_once = once.incidents();
    assert_eq!(
        sorted(summary(&from_once)),
        want,
        "run --once: {from_once:#}"
    );
    assert!(race_resolved(&from_once));

    let out = run(
        crate::support::bin().args([
            "scan",
            "--namespace",
            &j.name,
            "--resolve-after",
            "3s",
            "-o",
            "json",
        ]),
        None,
    );
    let scanned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let scanned = &scanned["incidents"];
    assert_eq!(sorted(summary(scanned)), want, "scan: {scanned:#}");
    assert!(race_resolved(scanned));
}

/// Issue 17, F1, with its own timings and systemd's lines, in a journal
/// file: the start-up race, `Stopping`/`Deactivated`/`Stopped`/`Started`
/// 41 s later, then a 2-minute outage of retries every 3 s from the new
/// process. `scan`, `run --once` and a service that catches up with the file
/// while following a collector directory each find the resolved start-up
/// race of one retry and the persistent outage of 40.
#[test]
#[allow(clippy::too_many_lines)] // one scenario, in order
fn the_f1_restart_journal_gives_every_reader_the_same_two_incidents() {
    use kubelet_sentinel::SECOND;
    let t0 = kubelet_sentinel::now() - 600 * SECOND;
    let node = "worker-01";
    let klog_at = |at: i64, pid: u32, sev: char, file: &str, body: &str| {
        let t = chrono::DateTime::from_timestamp_micros(at).unwrap();
        format!(
            "{sev}{} {pid:>7} {file}] {body}",
            t.format("%m%d %H:%M:%S%.6f")
        )
    };
    let mut export = Vec::new();
    let kubelet = |out: &mut Vec<u8>, at: i64, pid: u32, msg: &str| {
        export_entry(
            out,
            &[
                ("__REALTIME_TIMESTAMP", &at.to_string()),
                ("_HOSTNAME", node),
                ("_UID", "0"),
                ("_SYSTEMD_UNIT", "kubelet.service"),
                ("SYSLOG_IDENTIFIER", "kubelet"),
                ("_PID", &pid.to_string()),
                ("_STREAM_ID", &format!("stream{pid}")),
                ("MESSAGE", msg),
            ],
        );
    };
    let systemd = |out: &mut Vec<u8>, at: i64, msg: &str| {
        export_entry(
            out,
            &[
                ("__REALTIME_TIMESTAMP", &at.to_string()),
                ("_HOSTNAME", node),
                ("_UID", "0"),
                ("_PID", "1"),
                ("_SYSTEMD_UNIT", "init.scope"),
                ("SYSLOG_IDENTIFIER", "systemd"),
                ("UNIT", "kubelet.service"),
                ("MESSAGE", msg),
            ],
        );
    };
    let version = r#""Kubelet version" kubeletVersion="v1.31.0""#;
    kubelet(
        &mut export,
        t0,
        100,
        &klog_at(t0, 100, 'I', "server.go:484", version),
    );
    let at = t0 + 100_000;
    let registered = format!(r#""Successfully registered node" node="{node}""#);
    kubelet(
        &mut export,
        at,
        100,
        &klog_at(at, 100, 'I', "kubelet_node_status.go:75", &registered),
    );
    let miss = format!(
        r#""Error updating node status, will retry" err="error getting node \"{node}\": node \"{node}\" not found""#
    );
    kubelet(
        &mut export,
        at,
        100,
        &klog_at(at, 100, 'E', "kubelet_node_status.go:535", &miss),
    );
    let at = t0 + 505_000;
    let ready = r#""Fast updating node status as it just became ready""#;
    kubelet(
        &mut export,
        at,
        100,
        &klog_at(at, 100, 'I', "kubelet_node_status.go:493", ready),
    );
    let restart = t0 + 41 * SECOND;
    let unit = "kubelet.service - kubelet: The Kubernetes Node Agent";
    systemd(&mut export, restart, &format!("Stopping {unit}..."));
    systemd(
        &mut export,
        restart + 10_000,
        "kubelet.service: Deactivated successfully.",
    );
    systemd(&mut export, restart + 10_000, &format!("Stopped {unit}."));
    systemd(&mut export, restart + 20_000, &format!("Started {unit}."));
    let at = restart + 300_000;
    kubelet(
        &mut export,
        at,
        200,
        &klog_at(at, 200, 'I', "server.go:484", version),
    );
    let refused_err = format!(
        r#""Error updating node status, will retry" err="error getting node \"{node}\": Get \"https://10.0.0.1:6443/api/v1/nodes/{node}?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused""#
    );
    for n in 0..40 {
        let at = restart + SECOND + n * 3 * SECOND;
        kubelet(
            &mut export,
            at,
            200,
            &klog_at(at, 200, 'E', "kubelet_node_status.go:535", &refused_err),
        );
    }
    let journals = tempfile::tempdir().unwrap();
    let staged = tempfile::tempdir().unwrap();
    let file = staged.path().join("remote-worker-01.journal");
    journal_remote(&export, &file);

    let summary = |incidents: &serde_json::Value| -> Vec<(String, String, u64)> {
        let mut v: Vec<_> = incidents
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["verdict"].as_str().unwrap().to_string(),
                    i["cause"].as_str().unwrap().to_string(),
                    i["retries"].as_u64().unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let want = vec![
        ("persistent".to_string(), "api-unreachable".to_string(), 40),
        ("startup-race".to_string(), "lister-lag".to_string(), 1),
    ];
    let out = run(
        crate::support::bin().args(["scan", "-o", "json", &file.display().to_string()]),
        None,
    );
    let scanned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary(&scanned["incidents"]), want, "scan: {scanned:#}");

    // A service following the directory the file then arrives in.
    let section = format!("directory = \"{}\"", journals.path().display());
    let mut svc = Service::new(&section, "");
    svc.start();
    std::fs::copy(&file, journals.path().join("remote-worker-01.journal")).unwrap();
    wait_for(
        Duration::from_secs(20),
        || summary(&svc.incidents()) == want,
        "the following service's two incidents",
    );
    assert_eq!(svc.signal("TERM"), Some(0));

    let once = Service::new(&section, "");
    let out = once.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(summary(&once.incidents()), want, "run --once");
}

#[test]
fn a_flood_of_node_names_stays_within_the_bounds() {
    let j = Journald::start("flood");
    let mut svc = namespace_service(
        &j,
        "[incidents]\nresolve_after = \"2s\"\nmax_nodes_per_host = 16\n",
    );
    svc.start();
    let lines: Vec<String> = (0..500)
        .map(|n| refused(&format!("flood-{n:03}")))
        .collect();
    j.kubelet(&lines);
    let status = || -> serde_json::Value {
        serde_json::from_slice(&svc.query(&["status", "-o", "json"]).stdout).unwrap()
    };
    wait_for(
        Duration::from_secs(20),
        || status()["evicted"] == 484,
        "the evictions",
    );
    let st = status();
    assert_eq!(st["evicted_forgotten"], 484, "{st}");
    assert!(st["open_incidents"].as_u64().unwrap() <= 16, "{st}");
    // Only what the bound kept is in the history: the flood left no trace
    // there beyond the 16 nodes it may hold.
    wait_for(
        Duration::from_secs(20),
        || status()["open_incidents"] == 0,
        "the kept ones to resolve",
    );
    let all = svc.query(&["incidents", "-o", "json", "--limit", "0"]);
    let v: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(v["incidents"].as_array().unwrap().len(), 16);
    assert_eq!(status()["incidents"], 16);
    assert_eq!(svc.signal("TERM"), Some(0));
}
