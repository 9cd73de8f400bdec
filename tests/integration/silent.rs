//! Hosts gone silent (design 5.2) on a real collector directory written by
//! `systemd-journal-remote`: one host of four stops writing 25 minutes
//! before the others. `scan DIR`, `run --once` and the following service
//! find one host-silent incident for it, mailed; it resolves when the host
//! writes again.

use kubelet_sentinel::{Micros, SECOND};

use crate::collector::{klog_time, upload};
use crate::support::{Duration, Service, bin, run, subject, wait_for};

const MIN: Micros = 60 * SECOND;

fn chatter(at: Micros) -> (Micros, String) {
    (
        at,
        format!(
            "I{}    4242 kubelet.go:2450] \"SyncLoop (PLEG): event for pod\" pod=\"kube-system/kube-proxy-x7k2p\"",
            klog_time(at)
        ),
    )
}

/// A line every 30 s from `from` to `to`, and one naming the node first.
fn lines(node: &str, from: Micros, to: Micros) -> Vec<(Micros, String)> {
    let mut v = vec![(
        from,
        format!(
            "I{}    4242 kubelet_node_status.go:75] \"Successfully registered node\" node=\"{node}\"",
            klog_time(from)
        ),
    )];
    let mut t = from + 30 * SECOND;
    while t <= to {
        v.push(chatter(t));
        t += 30 * SECOND;
    }
    v
}

/// The file transport's mails (one `.eml` each).
fn mails_of(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
                .map(|e| std::fs::read_to_string(e.path()).unwrap())
                .collect()
        })
        .unwrap_or_default()
}

fn silent_of(v: &serde_json::Value) -> Vec<serde_json::Value> {
    v.as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "host-silent")
        .cloned()
        .collect()
}

/// What must agree between scan, once and follow.
fn key(i: &serde_json::Value) -> (String, String, String, String, String) {
    let s = |k: &str| i[k].as_str().unwrap_or_default().to_string();
    (
        s("id"),
        s("host"),
        s("node"),
        s("opened_at"),
        s("last_entry_at"),
    )
}

#[test]
fn a_host_that_stops_writing_is_one_host_silent_incident_until_it_writes_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("journals");
    std::fs::create_dir_all(&dir).unwrap();
    let now = kubelet_sentinel::now();
    let start = now - 40 * MIN;
    for h in 1..=3 {
        let host = format!("busy-{h}");
        let node = format!("node-busy-{h}");
        upload(
            &dir,
            &format!("remote-{host}.journal"),
            &host,
            &lines(&node, start, now - h * SECOND),
        );
    }
    let quiet_last = now - 25 * MIN;
    let quiet = lines("node-quiet-1", start, quiet_last);
    let quiet_last = quiet.last().unwrap().0;
    upload(&dir, "remote-quiet-1.journal", "quiet-1", &quiet);

    // scan: judged against the newest entry in the directory.
    let out = run(
        bin()
            .args(["scan", "-o", "json", "--silent-after", "10m"])
            .arg(&dir),
        None,
    );
    let scanned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = silent_of(&scanned["incidents"]);
    assert_eq!(found.len(), 1, "{scanned:#}");
    let i = &found[0];
    assert_eq!(i["host"], "quiet-1");
    assert_eq!(i["node"], "node-quiet-1");
    assert_eq!(i["status"], "open");
    assert_eq!(
        i["last_entry_at"].as_str().unwrap(),
        kubelet_sentinel::rfc3339(quiet_last)
    );
    assert_eq!(
        i["opened_at"].as_str().unwrap(),
        kubelet_sentinel::rfc3339(quiet_last + 10 * MIN)
    );
    // Nothing else: the busy hosts' chatter is no trouble.
    assert_eq!(scanned["incidents"].as_array().unwrap().len(), 1);

    // run --once, then the following service on the same store.
    let maildir = tmp.path().join("mail");
    std::fs::create_dir_all(&maildir).unwrap();
    let mut svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        &format!(
            "[fleet]\nsilent_incidents = true\n\
             [alert]\nto = [\"oncall@example.com\"]\ntransport = \"file\"\ngroup_wait = \"0s\"\n\
             [alert.file]\ndirectory = \"{}\"\n",
            maildir.display()
        ),
    );
    let once = svc.run_once();
    assert!(
        once.status.success(),
        "{}",
        String::from_utf8_lossy(&once.stderr)
    );
    let stored = svc.query(&["incidents", "--kind", "host-silent", "-o", "json"]);
    assert!(
        stored.status.success(),
        "{}",
        String::from_utf8_lossy(&stored.stderr)
    );
    let stored: serde_json::Value = serde_json::from_slice(&stored.stdout).unwrap();
    let stored = stored["incidents"].as_array().unwrap().clone();
    assert_eq!(stored.len(), 1, "{stored:#?}");
    assert_eq!(key(&stored[0]), key(i), "run --once differs from scan");
    let mails = mails_of(&maildir);
    assert_eq!(
        mails.len(),
        1,
        "{mails:#?} {}",
        String::from_utf8_lossy(&once.stderr)
    );
    let subj = subject(&mails[0]);
    assert!(
        subj.contains("host quiet-1 silent since") && subj.contains("node-quiet-1"),
        "{subj}"
    );

    svc.start();
    // It resumes after the once run's cursors: nothing new, the same.
    let live = svc.incidents();
    let live_silent = silent_of(&live);
    assert_eq!(live_silent.len(), 1, "{live:#}");
    assert_eq!(
        key(&live_silent[0]),
        key(i),
        "the following service differs"
    );
    assert_eq!(live.as_array().unwrap().len(), 1, "{live:#}");

    // The host writes again (its late entries, then new ones): resolved.
    let back = lines("node-quiet-1", now - 2 * MIN, now);
    upload(&dir, "remote-quiet-1.journal", "quiet-1", &back);
    wait_for(
        Duration::from_secs(20),
        || silent_of(&svc.incidents())[0]["status"] == "resolved",
        "the silent host's incident resolved",
    );
    let done = silent_of(&svc.incidents());
    assert_eq!(done.len(), 1, "{done:#?}");
    assert_eq!(done[0]["resolution"], "wrote");
    assert_eq!(
        done[0]["resolved_at"].as_str().unwrap(),
        kubelet_sentinel::rfc3339(back[0].0)
    );
    wait_for(
        Duration::from_secs(20),
        || mails_of(&maildir).len() == 2,
        "the resolved notice",
    );
    assert_eq!(svc.signal("TERM"), Some(0), "{}", svc.log());
}

/// Other units' entries, as a host's journal-upload sends them.
fn other_units(dir: &std::path::Path, file: &str, host: &str, from: Micros, to: Micros) {
    let mut out = Vec::new();
    let mut t = from;
    while t <= to {
        let at = t.to_string();
        crate::support::export_entry(
            &mut out,
            &[
                ("__REALTIME_TIMESTAMP", &at),
                ("_HOSTNAME", host),
                ("_SYSTEMD_UNIT", "containerd.service"),
                ("SYSLOG_IDENTIFIER", "containerd"),
                ("MESSAGE", "level=info msg=\"event handled\""),
            ],
        );
        t += 30 * SECOND;
    }
    crate::support::journal_remote(&out, &dir.join(file));
}

/// A healthy host whose kubelet has logged nothing for 25 minutes while
/// its other units go on writing is not silent: its journal is judged,
/// not its kubelet's lines (the collector reads how far each host's files
/// reach from their headers). One whose whole journal stopped is.
#[test]
fn a_quiet_kubelet_on_a_host_that_writes_is_not_silent() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("journals");
    std::fs::create_dir_all(&dir).unwrap();
    let now = kubelet_sentinel::now();
    let start = now - 40 * MIN;
    for h in 1..=2 {
        let host = format!("busy-{h}");
        upload(
            &dir,
            &format!("remote-{host}.journal"),
            &host,
            &lines(&format!("node-{host}"), start, now - h * SECOND),
        );
    }
    // Its kubelet went quiet 25 minutes ago; containerd still writes.
    let file = "remote-calm-1.journal";
    upload(
        &dir,
        file,
        "calm-1",
        &lines("node-calm-1", start, now - 25 * MIN),
    );
    other_units(&dir, file, "calm-1", now - 24 * MIN, now - 5 * SECOND);
    // This one's whole journal stopped.
    upload(
        &dir,
        "remote-dead-1.journal",
        "dead-1",
        &lines("node-dead-1", start, now - 25 * MIN),
    );
    let out = run(
        bin()
            .args(["scan", "-o", "json", "--silent-after", "10m"])
            .arg(&dir),
        None,
    );
    let scanned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = silent_of(&scanned["incidents"]);
    let hosts: Vec<&str> = found.iter().map(|i| i["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, ["dead-1"], "{scanned:#}");
    let svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        "[fleet]\nsilent_incidents = true\n",
    );
    let once = svc.run_once();
    assert!(
        once.status.success(),
        "{}",
        String::from_utf8_lossy(&once.stderr)
    );
    let stored = svc.query(&["incidents", "--kind", "host-silent", "-o", "json"]);
    let stored: serde_json::Value = serde_json::from_slice(&stored.stdout).unwrap();
    let stored: Vec<&str> = stored["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["host"].as_str().unwrap())
        .collect();
    assert_eq!(stored, ["dead-1"]);
}
