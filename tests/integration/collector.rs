//! A collector: `systemd-journal-remote` writes one file set per host (as
//! `--split-mode=host` does) and the service follows the directory. Hosts
//! upload late, in bursts, out of order with each other, for the first time
//! after hours, through a rotation and across a restart of the service:
//! every kubelet entry is counted once, and the service ends with the same
//! incidents as `scan` of the final directory (and as reading the files
//! through one handle, where nothing is late).

use std::path::{Path, PathBuf};

use kubelet_sentinel::{Micros, SECOND};

use crate::support::{
    Duration, Journald, Service, bin, export_entry, journal_remote, run, wait_for,
};

/// One upload: entries of `host` (time, message) appended to its file.
pub(crate) fn upload(dir: &Path, file: &str, host: &str, lines: &[(Micros, String)]) {
    let mut out = Vec::new();
    for (at, msg) in lines {
        let at = at.to_string();
        let stream = format!("{host}-kubelet");
        export_entry(
            &mut out,
            &[
                ("__REALTIME_TIMESTAMP", &at),
                ("_HOSTNAME", host),
                ("_SYSTEMD_UNIT", "kubelet.service"),
                ("SYSLOG_IDENTIFIER", "kubelet"),
                ("_PID", "4242"),
                ("_STREAM_ID", &stream),
                ("MESSAGE", msg),
            ],
        );
        // Other units share the file, as they do on a real host.
        export_entry(
            &mut out,
            &[
                ("__REALTIME_TIMESTAMP", &at),
                ("_HOSTNAME", host),
                ("_SYSTEMD_UNIT", "containerd.service"),
                ("SYSLOG_IDENTIFIER", "containerd"),
                ("MESSAGE", "level=info msg=\"event handled\""),
            ],
        );
    }
    journal_remote(&out, &dir.join(file));
}

pub(crate) fn klog_time(at: Micros) -> String {
    let t = chrono::DateTime::from_timestamp_micros(at).unwrap();
    t.format("%m%d %H:%M:%S%.6f").to_string()
}

pub(crate) fn retry(at: Micros, node: &str) -> (Micros, String) {
    (
        at,
        format!(
            "E{}    4242 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"{node}\\\": Get \\\"https://10.0.0.1:6443/api/v1/nodes/{node}?timeout=10s\\\": dial tcp 10.0.0.1:6443: connect: connection refused\"",
            klog_time(at)
        ),
    )
}

fn chatter(at: Micros) -> (Micros, String) {
    (
        at,
        format!(
            "I{}    4242 kubelet.go:2450] \"SyncLoop (PLEG): event for pod\" pod=\"kube-system/kube-proxy-x7k2p\"",
            klog_time(at)
        ),
    )
}

/// A storm of `n` retries from `start`, 400 ms apart, with chatter after.
fn storm(start: Micros, node: &str, n: i64) -> Vec<(Micros, String)> {
    let mut v: Vec<_> = (0..n).map(|k| retry(start + k * 400_000, node)).collect();
    v.push(chatter(start + n * 400_000 + 120 * SECOND));
    v
}

/// An incident as these tests compare them: node, opening, retries.
type Seen = (String, String, u64);

/// `(node, opened_at, retries)` of every incident, sorted.
fn incidents_of(v: &serde_json::Value) -> Vec<Seen> {
    let mut out: Vec<Seen> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["node"].as_str().unwrap().to_string(),
                i["opened_at"].as_str().unwrap().to_string(),
                i["retries"].as_u64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// `scan` of a directory's files named one by one: read through one
/// handle, not host by host.
fn scan_files_of(dir: &std::path::Path) -> serde_json::Value {
    scan_files_of_with(dir, &[])
}

/// [`scan_files_of`] with more arguments before the files.
fn scan_files_of_with(dir: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path().display().to_string())
        .collect();
    files.sort();
    let refs: Vec<&str> = args
        .iter()
        .copied()
        .chain(files.iter().map(String::as_str))
        .collect();
    scan_json(&refs)
}

fn scan_json(args: &[&str]) -> serde_json::Value {
    let out = run(bin().args(["scan", "-o", "json"]).args(args), None);
    assert!(
        out.status.code() == Some(0),
        "scan: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn late_bursty_and_first_time_hosts_lose_nothing() {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let now = kubelet_sentinel::now();
    let hour = 3600 * SECOND;
    let t0 = now - 3 * hour;
    let kubelet_lines = std::cell::Cell::new(0u64);
    let up = |file: &str, host: &str, lines: Vec<(Micros, String)>| {
        kubelet_lines.set(kubelet_lines.get() + lines.len() as u64);
        upload(dir, file, host, &lines);
    };

    // Two hosts before the service starts.
    up("remote-10.0.0.1.journal", "h1", storm(t0, "h1", 8));
    up(
        "remote-10.0.0.2.journal",
        "h2",
        storm(t0 + 60 * SECOND, "h2", 3),
    );

    // The node incidents of late hosts: no endpoint incident of them
    // (issue 19), here or in scan.
    let mut svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        "[fleet]\nmin_nodes = 1000\n",
    );
    svc.start();

    // h2 runs ahead, in bursts, an hour later than anything of h1's.
    for k in 0..4 {
        up(
            "remote-10.0.0.2.journal",
            "h2",
            (0..5)
                .map(|j| chatter(t0 + hour + (k * 5 + j) * SECOND))
                .collect(),
        );
        std::thread::sleep(Duration::from_millis(150));
    }
    // h1 uploads late: a storm dated long before what h2 already sent.
    up(
        "remote-10.0.0.1.journal",
        "h1",
        storm(t0 + 30 * 60 * SECOND, "h1", 7),
    );
    // h3 uploads for the first time, hours of backlog at once: a persistent
    // incident of 26 retries.
    up(
        "remote-10.0.0.3.journal",
        "h3",
        storm(t0 + 10 * SECOND, "h3", 26),
    );

    // A restart in the middle: cursors per host survive it.
    wait_for(
        Duration::from_secs(30),
        || svc.status()["kubelet_lines"].as_u64() == Some(kubelet_lines.get()),
        "the service to read every upload before the restart",
    );
    assert_eq!(svc.signal("TERM"), Some(0));
    // While it is down: h4 appears, h1 rotates (its file is archived and a
    // new one started), h3 sends more of its incident, older than h2's.
    up(
        "remote-10.0.0.4.journal",
        "h4",
        storm(t0 + 2 * hour, "h4", 6),
    );
    std::fs::rename(
        dir.join("remote-10.0.0.1.journal"),
        dir.join("remote-10.0.0.1@0001.journal"),
    )
    .unwrap();
    up(
        "remote-10.0.0.1.journal",
        "h1",
        storm(t0 + 2 * hour + 30 * SECOND, "h1", 9),
    );
    svc.start();
    up(
        "remote-10.0.0.3.journal",
        "h3",
        storm(t0 + 20 * 60 * SECOND, "h3", 12),
    );
    for k in 0..3 {
        up(
            "remote-10.0.0.4.journal",
            "h4",
            vec![retry(t0 + 2 * hour + 200 * SECOND + k * SECOND, "h4")],
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    wait_for(
        Duration::from_secs(30),
        || svc.status()["kubelet_lines"].as_u64() == Some(kubelet_lines.get()),
        "the service to read every upload",
    );
    let status = svc.status();
    assert_eq!(status["entries_lost"], 0, "{status}");
    let scanned = scan_json(&["--min-nodes", "1000", &dir.display().to_string()]);
    // h4's last retry waits for continuations until its host's journal has
    // been quiet for a second (as scan hands it on at the end of input).
    wait_for(
        Duration::from_secs(10),
        || incidents_of(&svc.incidents()) == incidents_of(&scanned["incidents"]),
        "the last held line to be handed on",
    );
    // Stopped: the last batch committed, the history is read from the store.
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    let live = incidents_of(&svc.incidents());

    assert_eq!(
        scanned["summary"]["kubelet_lines"].as_u64(),
        Some(kubelet_lines.get())
    );
    assert_eq!(live, incidents_of(&scanned["incidents"]), "{log}");
    // Through one handle over all files (where nothing is late any more):
    // the same.
    let one_handle = scan_files_of_with(dir, &["--min-nodes", "1000"]);
    assert_eq!(live, incidents_of(&one_handle["incidents"]));
    // The incidents a person reading the uploads expects: h1's two storms
    // (and its third, after the rotation), h2's, h3's two, h4's two.
    let nodes: Vec<&str> = live.iter().map(|(n, ..)| n.as_str()).collect();
    assert_eq!(
        nodes,
        ["h1", "h1", "h1", "h2", "h3", "h3", "h4", "h4"],
        "{live:?}"
    );
    let h3: Vec<u64> = live
        .iter()
        .filter(|(n, ..)| n == "h3")
        .map(|(.., r)| *r)
        .collect();
    assert_eq!(h3, [26, 12]);
}

/// A collector nobody has uploaded to yet: journal-remote makes its
/// directory on the first upload. The service waits for it instead of
/// failing, and reads it once it is there.
#[test]
fn a_collector_directory_that_appears_later_is_read() {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path().join("remote");
    let mut svc = Service::new(&format!("directory = \"{}\"", dir.display()), "");
    svc.start();
    wait_for(
        Duration::from_secs(10),
        || svc.log().contains("does not exist yet"),
        "the service to wait for the directory",
    );
    std::fs::create_dir(&dir).unwrap();
    let now = kubelet_sentinel::now();
    let lines = storm(now - 300 * SECOND, "late", 7);
    upload(&dir, "remote-10.0.0.9.journal", "late", &lines);
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(lines.len() as u64),
        "the service to read the directory once it appeared",
    );
    let log = svc.log();
    assert!(log.contains("does not exist yet"), "{log}");
    assert!(!log.contains("journal reader failed"), "{log}");
    assert_eq!(svc.signal("TERM"), Some(0));
}

/// `[fleet] max_hosts` (issue 27): a collector of five hosts with a bound
/// of three reads three; the other two's entries are counted in `status`
/// and the metric and logged, their trouble not read.
#[test]
fn hosts_past_max_hosts_are_counted_and_logged() {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let now = kubelet_sentinel::now();
    let mut total = 0;
    for n in 0..5 {
        let lines = storm(now - 300 * SECOND, &format!("host-{n}"), 7);
        total += lines.len() as u64;
        upload(
            dir,
            &format!("remote-10.0.0.{n}.journal"),
            &format!("host-{n}"),
            &lines,
        );
    }
    let mut svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        "[fleet]\nmax_hosts = 3\n",
    );
    svc.start();
    wait_for(
        Duration::from_secs(20),
        || {
            let s = svc.status();
            s["kubelet_lines"].as_u64().unwrap_or(0) + s["hosts_refused"].as_u64().unwrap_or(0)
                == total
        },
        "the service to read or refuse every entry",
    );
    let status = svc.status();
    assert_eq!(status["hosts_refused"].as_u64(), Some(2 * 8), "{status:#}");
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    assert!(log.contains("past [fleet] max_hosts (3) not read"), "{log}");
    // The three read lose one endpoint: their incidents and the outage's.
    let nodes: Vec<String> = incidents_of(&svc.incidents())
        .into_iter()
        .map(|(n, ..)| n)
        .collect();
    // Which three is the reading order's.
    assert_eq!(nodes.len(), 4, "{nodes:?}");
    assert_eq!(nodes[0], "10.0.0.1:6443", "{nodes:?}");
}

/// Hosts come and go under new names (issue 27): with `max_hosts = 3`,
/// three hosts that wrote two days ago and then nothing, then three new
/// ones. The new ones are read (the old no longer count) and the old ones'
/// records are forgotten to make room, in the store too, so the records
/// stay within the bound whatever names come and go.
#[test]
fn hosts_gone_for_a_day_make_room_and_leave_the_store() {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let now = kubelet_sentinel::now();
    let days_ago = now - 2 * 86_400 * SECOND;
    for n in 0..3 {
        let lines = [
            chatter(days_ago + n * SECOND),
            chatter(days_ago + 10 * SECOND),
        ];
        upload(
            dir,
            &format!("remote-10.0.1.{n}.journal"),
            &format!("old-{n}"),
            &lines,
        );
    }
    let mut svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        "[fleet]\nmax_hosts = 3\n",
    );
    svc.start();
    let lines = |s: &serde_json::Value| s["kubelet_lines"].as_u64().unwrap_or(0);
    wait_for(
        Duration::from_secs(20),
        || lines(&svc.status()) == 6,
        "the old hosts read",
    );
    for n in 0..3 {
        let lines = [chatter(now - 60 * SECOND + n * SECOND)];
        upload(
            dir,
            &format!("remote-10.0.2.{n}.journal"),
            &format!("new-{n}"),
            &lines,
        );
    }
    wait_for(
        Duration::from_secs(20),
        || lines(&svc.status()) == 9,
        "the new hosts read",
    );
    let status = svc.status();
    assert_eq!(status["hosts_refused"].as_u64(), Some(0), "{status:#}");
    assert_eq!(svc.signal("TERM"), Some(0), "{}", svc.log());
    let store = kubelet_sentinel::Store::open(&svc.dir.path().join("store")).unwrap();
    let hosts: Vec<String> = store
        .load()
        .unwrap()
        .origins
        .into_iter()
        .map(|(h, _)| h)
        .collect();
    assert_eq!(hosts, ["new-0", "new-1", "new-2"]);
}

/// A host's journals copied in under names of their own are one host: read
/// in order through one handle (grouped by the machine ID in their
/// headers), so the incidents are those of reading the files in one go.
#[test]
fn a_hosts_files_under_names_of_their_own_are_one_host() {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let now = kubelet_sentinel::now();
    // An outage that goes on from one file into the next.
    upload(
        dir,
        "node1-monday.journal",
        "node1",
        &storm(now - 900 * SECOND, "node1", 4)[..4],
    );
    upload(
        dir,
        "node1-tuesday.journal",
        "node1",
        &storm(now - 899 * SECOND, "node1", 4),
    );
    let (groups, _) = kubelet_sentinel::discover(dir);
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert!(groups.keys().next().unwrap().starts_with("machine-"));
    let grouped = scan_json(&[&dir.display().to_string()]);
    let one_handle = scan_files_of(dir);
    assert_eq!(
        incidents_of(&grouped["incidents"]),
        incidents_of(&one_handle["incidents"])
    );
    assert_eq!(incidents_of(&grouped["incidents"]).len(), 1);
    assert_eq!(incidents_of(&grouped["incidents"])[0].2, 8);
}

/// The `.eml` files the file transport wrote.
fn mails_in_dir(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
                .map(|e| std::fs::read_to_string(e.path()).unwrap())
                .collect()
        })
        .unwrap_or_default()
}

/// The README's collector steps, literally: a service installed on the
/// local journal (here a journald namespace) with an incident open, then
/// `[journal] directory` set and a restart, with hosts uploading before,
/// during and after the switch. The local journal's cursor is not applied
/// to the directory (every host is read from `start_at`: nothing lost, the
/// same incidents as `scan` of the directory), and the local incident,
/// which the directory cannot confirm, is closed as source-changed with no
/// resolved mail.
#[test]
fn switching_to_collector_loses_nothing_and_mails_no_false_resolved() {
    let j = Journald::start("switch");
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let now = kubelet_sentinel::now();
    let mut dir_lines = 0u64;
    let mut up = |file: &str, host: &str, lines: Vec<(Micros, String)>| {
        dir_lines += lines.len() as u64;
        upload(dir, file, host, &lines);
    };
    // Before: a host uploaded while the service still reads the local journal.
    up(
        "remote-10.0.0.1.journal",
        "h1",
        storm(now - 900 * SECOND, "h1", 8),
    );
    let mut svc = Service::new(
        &format!("namespace = \"{}\"", j.name),
        // The mail directory does not exist: the file transport makes it.
        "[incidents]\nresolve_after = \"4s\"\n\n[alert]\nto = [\"ops@example.com\"]\n\
         transport = \"file\"\ngroup_wait = \"0s\"\n\n[alert.file]\ndirectory = \"MAILDIR\"\n",
    );
    let maildir = svc.dir.path().join("mail");
    let config = std::fs::read_to_string(svc.config())
        .unwrap()
        .replace("MAILDIR", &maildir.display().to_string());
    std::fs::write(svc.config(), &config).unwrap();
    svc.start();
    j.kubelet(
        &(0..8)
            .map(|k| retry(kubelet_sentinel::now() + k, "local-1").1)
            .collect::<Vec<_>>(),
    );
    wait_for(
        Duration::from_secs(20),
        || mails_in_dir(&maildir).len() == 1,
        "the local outage's alert",
    );
    let local_lines = svc.status()["kubelet_lines"].as_u64().unwrap();
    assert_eq!(local_lines, 8);
    // During: the config is edited (the watcher says [journal] needs a
    // restart) while another host uploads.
    std::fs::write(
        svc.config(),
        config.replace(
            &format!("namespace = \"{}\"", j.name),
            &format!("directory = \"{}\"", dir.display()),
        ),
    )
    .unwrap();
    up(
        "remote-10.0.0.2.journal",
        "h2",
        storm(now - 800 * SECOND, "h2", 7),
    );
    assert_eq!(svc.signal("TERM"), Some(0));
    up(
        "remote-10.0.0.3.journal",
        "h3",
        storm(now - 700 * SECOND, "h3", 9),
    );
    svc.start();
    // After: more of h1, and a host new to the collector.
    up(
        "remote-10.0.0.1.journal",
        "h1",
        storm(now - 300 * SECOND, "h1", 6),
    );
    up(
        "remote-10.0.0.4.journal",
        "h4",
        storm(now - 1200 * SECOND, "h4", 5),
    );
    wait_for(
        Duration::from_secs(30),
        || svc.status()["kubelet_lines"].as_u64() == Some(local_lines + dir_lines),
        "the service to read every upload",
    );
    // The local incident closed (by the switch, not by quiet time), and
    // every mail decided delivered: a false resolution would be mailed.
    wait_for(
        Duration::from_secs(20),
        || {
            svc.incidents()
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["node"] == "local-1" && i["status"] == "resolved")
        },
        "the local incident closed",
    );
    svc.settled();
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    assert!(log.contains("the journal changed"), "{log}");
    let all = svc.incidents();
    let local: Vec<&serde_json::Value> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["node"] == "local-1")
        .collect();
    assert_eq!(local.len(), 1, "{all}");
    assert_eq!(local[0]["resolution"], "source-changed", "{}", local[0]);
    let others: Vec<serde_json::Value> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["node"] != "local-1")
        .cloned()
        .collect();
    let scanned = scan_json(&[&dir.display().to_string()]);
    assert_eq!(
        scanned["summary"]["kubelet_lines"].as_u64(),
        Some(dir_lines)
    );
    assert_eq!(
        incidents_of(&serde_json::Value::Array(others)),
        incidents_of(&scanned["incidents"]),
        "{log}"
    );
    let mails = mails_in_dir(&maildir);
    assert!(
        mails
            .iter()
            .all(|m| !(m.contains("resolved") && m.contains("local-1"))),
        "a resolved mail for the local incident: {mails:?}"
    );
}

/// First-hour N15: `[journal]` changed to another journal and back. The
/// first journal resumes where the service left it: what was read (and
/// mailed) then is not read, or mailed, again; what it got meanwhile is
/// read and mailed once.
#[test]
fn a_journal_changed_back_to_resumes_where_it_was_left() {
    let (x, y) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let now = kubelet_sentinel::now();
    upload(
        x.path(),
        "remote-10.0.0.1.journal",
        "h1",
        &storm(now - 900 * SECOND, "h1", 8),
    );
    upload(
        y.path(),
        "remote-10.0.0.9.journal",
        "h9",
        &storm(now - 800 * SECOND, "h9", 8),
    );
    let svc = Service::new(
        "directory = \"JOURNAL\"",
        "[incidents]\nresolve_after = \"4s\"\n\n[alert]\nto = [\"ops@example.com\"]\n\
         transport = \"file\"\ngroup_wait = \"0s\"\n\n[alert.file]\ndirectory = \"MAILDIR\"\n",
    );
    let maildir = svc.dir.path().join("mail");
    let config = std::fs::read_to_string(svc.config())
        .unwrap()
        .replace("MAILDIR", &maildir.display().to_string());
    let read = |dir: &Path| {
        std::fs::write(
            svc.config(),
            config.replace("JOURNAL", &dir.display().to_string()),
        )
        .unwrap();
        let out = svc.run_once();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        err
    };
    read(x.path());
    let first = mails_in_dir(&maildir);
    assert!(!first.is_empty(), "the first journal's trouble is mailed");
    let old = svc.incidents()[0]["id"].as_str().unwrap().to_string();
    read(y.path());
    let second = mails_in_dir(&maildir);
    assert!(
        second.len() > first.len(),
        "the second journal's trouble is mailed"
    );
    // X got more trouble meanwhile.
    upload(
        x.path(),
        "remote-10.0.0.1.journal",
        "h1",
        &storm(now - 300 * SECOND, "h1", 6),
    );
    let log = read(x.path());
    let third = mails_in_dir(&maildir);
    let new: Vec<&String> = third.iter().filter(|m| !second.contains(m)).collect();
    let subjects: Vec<String> = new.iter().map(|m| crate::support::subject(m)).collect();
    assert!(
        subjects
            .iter()
            .any(|s| s.starts_with("[kubelet-sentinel] h1: ")),
        "the trouble X got meanwhile is mailed: {subjects:#?}"
    );
    assert!(
        !new.iter().any(|m| m.contains(&old)),
        "the old trouble ({old}) mailed again: {subjects:#?}"
    );
    assert!(log.contains("where the service left it"), "{log}");
    let h1: Vec<serde_json::Value> = svc
        .incidents()
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["node"] == "h1")
        .cloned()
        .collect();
    assert_eq!(h1.len(), 2, "the old and the new, once each: {h1:#?}");
}

/// Links in a collector's directory read nothing twice: a link to the
/// directory inside itself, a symlinked file, a loop of links (D14).
#[test]
fn links_in_the_directory_read_each_entry_once() {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let now = kubelet_sentinel::now();
    let h1 = storm(now - 600 * SECOND, "h1", 8);
    let h2 = storm(now - 500 * SECOND, "h2", 4);
    let lines = (h1.len() + h2.len()) as u64;
    upload(dir, "remote-10.0.0.1.journal", "h1", &h1);
    upload(dir, "remote-10.0.0.2.journal", "h2", &h2);
    let files = [
        dir.join("remote-10.0.0.1.journal").display().to_string(),
        dir.join("remote-10.0.0.2.journal").display().to_string(),
    ];
    let one_handle = scan_json(&[&files[0], &files[1]]);
    std::os::unix::fs::symlink(".", dir.join("loop")).unwrap();
    std::os::unix::fs::symlink("remote-10.0.0.1.journal", dir.join("remote-link.journal")).unwrap();
    std::os::unix::fs::symlink("l2.journal", dir.join("l1.journal")).unwrap();
    std::os::unix::fs::symlink("l1.journal", dir.join("l2.journal")).unwrap();

    let scanned = scan_json(&[&dir.display().to_string()]);
    assert_eq!(scanned["summary"]["kubelet_lines"].as_u64(), Some(lines));
    assert_eq!(
        incidents_of(&scanned["incidents"]),
        incidents_of(&one_handle["incidents"])
    );
    let retries: Vec<u64> = incidents_of(&scanned["incidents"])
        .iter()
        .map(|(.., r)| *r)
        .collect();
    assert_eq!(retries, [8, 4]);

    let mut svc = Service::new(&format!("directory = \"{}\"", dir.display()), "");
    svc.log_filter = Some(crate::support::SWEEPS);
    svc.start();
    // More through the link to the directory's own file, while following.
    let more = storm(now - 100 * SECOND, "h1", 3);
    upload(dir, "remote-link.journal", "h1", &more);
    let lines = lines + more.len() as u64;
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(lines),
        "the service to read every entry",
    );
    // A sweep later, still once.
    svc.swept();
    assert_eq!(svc.status()["kubelet_lines"].as_u64(), Some(lines));
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    let live = incidents_of(&svc.incidents());
    let all = scan_json(&[&files[0], &files[1]]);
    assert_eq!(live, incidents_of(&all["incidents"]), "{log}");
}

/// Fills the filesystem at `dir` with a file, to the last byte.
fn fill(dir: &Path) -> std::path::PathBuf {
    use std::io::Write as _;
    let p = dir.join("filler");
    let mut f = std::fs::File::create(&p).unwrap();
    let chunk = vec![0u8; 64 << 10];
    let mut n = chunk.len();
    while n > 0 {
        if f.write_all(&chunk[..n]).is_err() {
            n /= 2;
        }
    }
    let _ = f.sync_all();
    p
}

/// The disk under the store fills up during live follow (S15): the
/// service stops with the store's error first (D26); once space is freed
/// it starts again, whatever sled left behind (an unfinished snapshot is
/// set aside), and ends with the incidents of `scan`. Ten runs, each on a
/// small tmpfs filled at a different moment.
#[test]
fn a_full_disk_during_follow_leaves_a_store_that_reopens_equal_to_scan() {
    for run_no in 0..10i64 {
        let journals = tempfile::tempdir().unwrap();
        let dir = journals.path();
        let now = kubelet_sentinel::now();
        let lines = std::cell::Cell::new(0u64);
        let up = |k: i64, n: i64| {
            let host = format!("h{k}");
            let l = storm(now - (3000 - k * 60) * SECOND, &host, n);
            lines.set(lines.get() + l.len() as u64);
            upload(dir, &format!("remote-10.0.1.{k}.journal"), &host, &l);
        };
        for k in 0..5 {
            up(k, 8);
        }
        let mut svc = Service::new(&format!("directory = \"{}\"", dir.display()), "");
        let store = svc.dir.path().join("store");
        std::fs::create_dir(&store).unwrap();
        let mounted = run(
            std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
                .arg(&store),
            None,
        );
        assert!(mounted.status.success(), "mount: {mounted:?}");
        let unmount = scopeguard(store.clone());
        svc.start();
        wait_for(
            Duration::from_secs(20),
            || svc.status()["kubelet_lines"].as_u64() == Some(lines.get()),
            "the first uploads read",
        );
        // Full now, in the middle of reading 0 to 3 more hosts (or after a
        // few more commits), while hosts go on.
        let mut k = 5;
        while k < 5 + run_no % 4 {
            up(k, 8);
            k += 1;
        }
        let filler = fill(&store);
        let sock = svc.dir.path().join("query.sock");
        let code = loop {
            up(k, 6 + run_no);
            k += 1;
            // Until it has read this upload, or has stopped.
            let mut stopped = false;
            wait_for(
                Duration::from_secs(20),
                || {
                    stopped = std::os::unix::net::UnixStream::connect(&sock).is_err();
                    let out = svc.query(&["status", "-o", "json"]);
                    let st: serde_json::Value =
                        serde_json::from_slice(&out.stdout).unwrap_or_default();
                    stopped || st["kubelet_lines"].as_u64() == Some(lines.get())
                },
                "the upload read, or the service stopped",
            );
            if stopped || k > 60 {
                break svc.wait_exit(Duration::from_secs(20));
            }
        };
        let log = svc.log();
        assert_ne!(code, Some(0), "{log}");
        // What stopped it is the store's error, not a task it took along.
        let why = log
            .lines()
            .find(|l| l.ends_with("; stopping"))
            .unwrap_or("");
        assert!(why.contains("store"), "{log}");
        std::fs::remove_file(&filler).unwrap();
        svc.start();
        wait_for(
            Duration::from_secs(30),
            || svc.status()["kubelet_lines"].as_u64() == Some(lines.get()),
            "every upload read after the disk was freed",
        );
        let log = svc.log();
        assert_eq!(svc.signal("TERM"), Some(0), "{log}");
        let live = incidents_of(&svc.incidents());
        let scanned = scan_json(&[&dir.display().to_string()]);
        assert_eq!(
            live,
            incidents_of(&scanned["incidents"]),
            "run {run_no}: {log}"
        );
        drop(unmount);
    }
}

/// Unmounts a directory when dropped (also when the test fails).
struct Unmount(std::path::PathBuf);

fn scopeguard(p: std::path::PathBuf) -> Unmount {
    Unmount(p)
}

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// A host's journal files copied into a followed directory (read while
/// they are being written, their headers first cut short), one after
/// another in time: every entry once, as `scan` of the final directory
/// (D14).
#[test]
fn files_copied_in_while_following_are_read_once() {
    copy_in_while_following(950);
}

/// A group's files of different sequence-number IDs (separate journald or
/// journal-remote runs) overlap in time, and one is added after the group
/// was read past the start of its entries. The group resumes after one
/// cursor, and libsystemd places another sequence's files by time, so the
/// new file's entries older than the position were never read (186 of 7545
/// here, each file's first 22 s); the worker now reads a file of a new
/// sequence from its head up to the position first, as `scan` reads it.
#[test]
fn overlapping_files_copied_in_while_following_are_read_once() {
    copy_in_while_following(900);
}

/// Five files of one host, each `step` seconds after the previous (each
/// ends 922 s after it starts), copied in one after the other.
fn copy_in_while_following(step: i64) {
    let src = tempfile::tempdir().unwrap();
    let now = kubelet_sentinel::now();
    let mut lines = 0u64;
    let mut names = Vec::new();
    for f in 0..5i64 {
        let start = now - (5000 - f * step) * SECOND;
        let mut l: Vec<(Micros, String)> =
            (0..1500).map(|k| chatter(start + k * 500_000)).collect();
        l.extend(storm(start + 800 * SECOND, "n1", 6 + f));
        lines += l.len() as u64;
        let name = format!("system@0123-{f:016x}-0000000000000001.journal");
        upload(src.path(), &name, "n1", &l);
        names.push(name);
    }
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let mut svc = Service::new(&format!("directory = \"{}\"", dir.display()), "");
    svc.log_filter = Some(crate::support::SWEEPS);
    svc.start();
    // As a slow `cp` writes them: a header cut short first, then the rest
    // in pieces.
    for name in &names {
        use std::io::Write as _;
        let bytes = std::fs::read(src.path().join(name)).unwrap();
        let mut f = std::fs::File::create(dir.join(name)).unwrap();
        f.write_all(&bytes[..40]).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        for piece in bytes[40..].chunks(128 << 10) {
            f.write_all(piece).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while svc.status()["kubelet_lines"].as_u64() < Some(lines) {
        assert!(
            std::time::Instant::now() < end,
            "read {} of {lines}: {:?} {:?}",
            svc.status()["kubelet_lines"],
            incidents_of(&svc.incidents()),
            incidents_of(&scan_json(&[&dir.display().to_string()])["incidents"]),
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A sweep later (or none left to do), still once.
    svc.swept();
    assert_eq!(svc.status()["kubelet_lines"].as_u64(), Some(lines));
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    let live = incidents_of(&svc.incidents());
    let scanned = scan_json(&[&dir.display().to_string()]);
    assert_eq!(live, incidents_of(&scanned["incidents"]), "{log}");
}

/// Issue 39's S19: `cp -r` and `rsync` copy a host's `remote-h.journal`
/// before its older `remote-h@….journal` (`.` < `@`). Here journal-remote
/// rotated the host's journal on a small tmpfs, so both files are of one
/// sequence; the newer file is read first, then the older one appears. Its
/// entries, all before the group's position, were never read (a handle
/// resumed after a cursor places them before it), and at a group's end
/// the census called them damage. Now the older file is read from its head
/// up to the position, said in the log with its count, and the service
/// ends with the incidents of `scan` of both files.
#[test]
fn an_older_rotated_file_copied_in_after_the_newer_is_read() {
    let src = tempfile::tempdir().unwrap();
    let mounted = run(
        std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
            .arg(src.path()),
        None,
    );
    assert!(mounted.status.success(), "mount: {mounted:?}");
    let unmount = scopeguard(src.path().to_path_buf());
    let start = kubelet_sentinel::now() - 3600 * SECOND;
    // 1 200 lines 500 ms apart (2 400 entries: journal-remote rotates the
    // file after about 2 100 on an 8 MB filesystem), and worker-d's
    // 10-retry storm early on, in the older file.
    let mut lines: Vec<(Micros, String)> =
        (0..1200).map(|k| chatter(start + k * 500_000)).collect();
    lines.extend((0..10).map(|k| retry(start + 100 * SECOND + 250_000 + k * 400_000, "worker-d")));
    lines.sort();
    upload(src.path(), "remote-hx.journal", "hx", &lines);
    let mut names: Vec<String> = std::fs::read_dir(src.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    // As `cp -r` copies them: the active file first.
    names.sort();
    assert!(
        names.len() >= 2 && names[0] == "remote-hx.journal",
        "journal-remote rotated: {names:?}"
    );
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let copy_in = |name: &str| {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::copy(src.path().join(name), &tmp).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    };
    // Copied while journal-remote still had it open: its header says
    // online, so at the group's first end the census waits (its counts
    // move); the final copy, offline, comes with the older files.
    let mut active = std::fs::read(src.path().join(&names[0])).unwrap();
    active[16] = 1;
    std::fs::write(dir.join(&names[0]), &active).unwrap();
    let newer = scan_json(&[&dir.join(&names[0]).display().to_string()]);
    let newer_lines = newer["summary"]["kubelet_lines"].as_u64().unwrap();
    assert!(newer_lines > 0 && newer_lines < lines.len() as u64);
    let mut svc = Service::new(&format!("directory = \"{}\"", dir.display()), "");
    svc.start();
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(newer_lines),
        "the newer file read",
    );
    for name in &names[1..] {
        copy_in(name);
    }
    copy_in(&names[0]);
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(lines.len() as u64),
        "the older file read",
    );
    let log = svc.log();
    let said = log
        .lines()
        .find(|l| l.contains("appeared late"))
        .unwrap_or_else(|| panic!("no word of the late entries: {log}"));
    assert!(said.contains(&names[1]), "{said}");
    assert!(!log.contains("damaged"), "{log}");
    assert_eq!(svc.status()["entries_missing"].as_u64(), Some(0), "{log}");
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    let live = incidents_of(&svc.incidents());
    let scanned = scan_json(&[&dir.display().to_string()]);
    assert_eq!(
        scanned["summary"]["kubelet_lines"].as_u64(),
        Some(lines.len() as u64)
    );
    assert_eq!(live, incidents_of(&scanned["incidents"]), "{log}");
    drop(unmount);
}

/// A followed collector directory (`remote`, empty) mailing an aiosmtpd
/// server at once (`group_wait` 0), after its first catch-up.
fn followed_with_mail() -> (tempfile::TempDir, PathBuf, crate::support::Smtpd, Service) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("remote");
    std::fs::create_dir(&dir).unwrap();
    let smtp = crate::support::Smtpd::aiosmtpd(&tmp.path().join("md"), &[]);
    let mut svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        &crate::support::mail_to(smtp.port, "group_wait = \"0s\"\n"),
    );
    svc.start();
    wait_for(
        Duration::from_secs(30),
        || svc.status()["caught_up"] == true,
        "the first catch-up",
    );
    (tmp, dir, smtp, svc)
}

/// `scan`'s worker-d storm of the S19 tests: one incident of its 10
/// retries.
fn one_storm_of_ten(scanned: &[Seen]) {
    assert_eq!(
        scanned
            .iter()
            .filter(|(node, _, retries)| node == "worker-d" && *retries == 10)
            .count(),
        1,
        "{scanned:?}"
    );
}

/// Host hx's older file as journal-remote names a rotated one (S19).
const HX_ARCHIVED: &str =
    "remote-hx@0123456789abcdef0123456789abcdef-0000000000000001-0005e0d0d0d0d0d0.journal";

/// Host hx's journal half an hour ago: 200 lines a second apart and
/// worker-d's 10 retries from `storm` seconds in, `every` seconds apart;
/// written as two files split at 75 s into `src` (the older,
/// [`HX_ARCHIVED`]) and `newer_dir` (`remote-hx.journal`). Returns the
/// lines and how many the newer file has.
fn hx_split(src: &Path, newer_dir: &Path, storm: i64, every: i64) -> (Vec<(Micros, String)>, u64) {
    let start = kubelet_sentinel::now() - 1800 * SECOND;
    let mut lines: Vec<(Micros, String)> = (0..200).map(|k| chatter(start + k * SECOND)).collect();
    lines.extend((0..10).map(|k| {
        retry(
            start + storm * SECOND + 250_000 + k * every * SECOND,
            "worker-d",
        )
    }));
    lines.sort();
    let split = start + 75 * SECOND;
    let (older, newer): (Vec<_>, Vec<_>) = lines.iter().cloned().partition(|(at, _)| *at < split);
    upload(src, HX_ARCHIVED, "hx", &older);
    upload(newer_dir, "remote-hx.journal", "hx", &newer);
    (lines, newer.len() as u64)
}

/// hx's service on `dir`, started and through its newer file (`newer`
/// lines).
fn hx_service(dir: &Path, newer: u64) -> Service {
    let mut svc = Service::new(&format!("directory = \"{}\"", dir.display()), "");
    svc.start();
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(newer),
        "the newer file read",
    );
    svc
}

/// Once `svc` has read all `total` lines (`what`) and said a file came
/// late, stopped: its incidents and `scan`'s of `dir`, and its log.
fn late_read_then_scan(
    svc: &mut Service,
    dir: &Path,
    total: usize,
    what: &str,
) -> (Vec<Seen>, Vec<Seen>, String) {
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(total as u64),
        what,
    );
    let log = svc.log();
    assert!(log.contains("appeared late"), "{log}");
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    let live = incidents_of(&svc.incidents());
    let scanned = incidents_of(&scan_json(&[&dir.display().to_string()])["incidents"]);
    (live, scanned, log)
}

/// Issue 39's S19, case (b): a host's journal split in time across two
/// journal-remote runs (two sequences), the older named as rotated, with
/// worker-d's 10-retry storm across the split. The newer file is read
/// first; the older one's entries are read once it appears, and said. Yet
/// the tracker takes them after the newer ones, so the storm is split:
/// two incidents of 5 retries (the report's layout gave 11 of 0–1) where
/// `scan` has one persistent incident of 10. Left to do: re-derive the
/// host's state from its group's merged order.
#[test]
#[ignore = "S19 (b) for a host read before its older file came: the late entries are read \
            after the newer ones (a host that appears settles first, see \
            a_host_copied_in_newer_file_first_is_read_in_time_order_and_paged_once)"]
fn a_storm_split_across_a_late_older_file_is_one_incident() {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let src = tempfile::tempdir().unwrap();
    let (lines, newer) = hx_split(src.path(), dir, 30, 10);
    let mut svc = hx_service(dir, newer);
    std::fs::rename(src.path().join(HX_ARCHIVED), dir.join(HX_ARCHIVED)).unwrap();
    let (live, scanned, log) =
        late_read_then_scan(&mut svc, dir, lines.len(), "the older file read");
    one_storm_of_ten(&scanned);
    assert_eq!(live, scanned, "{log}");
}

/// S19's case (b), as the attack report made it: a host's files copied
/// into a followed collector the way `cp -r` copies them, the newer
/// `remote-hx.journal` first and its older `remote-hx@….journal` a second
/// later, with worker-d's 10-retry storm across the two. A host that
/// appears is read once its files settle, both files together in their
/// time order: one persistent incident of 10 retries, paged, as `scan`
/// gives (it was two incidents of five retries, and no page).
#[test]
fn a_host_copied_in_newer_file_first_is_read_in_time_order_and_paged_once() {
    let (tmp, dir, smtp, mut svc) = followed_with_mail();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let (lines, _) = hx_split(&src, &src, 30, 10);
    std::fs::rename(src.join("remote-hx.journal"), dir.join("remote-hx.journal")).unwrap();
    std::thread::sleep(Duration::from_secs(1));
    std::fs::rename(src.join(HX_ARCHIVED), dir.join(HX_ARCHIVED)).unwrap();
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(lines.len() as u64),
        "both files read",
    );
    let subjects = || smtp.subjects();
    wait_for(
        Duration::from_secs(20),
        || subjects().iter().any(|s| s.contains("worker-d")),
        "worker-d paged",
    );
    let log = svc.log();
    assert!(!log.contains("appeared late"), "{log}");
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    let live = incidents_of(&svc.incidents());
    let scanned = incidents_of(&scan_json(&[&dir.display().to_string()])["incidents"]);
    let storms: Vec<_> = live
        .iter()
        .filter(|(node, _, _)| node == "worker-d")
        .collect();
    assert_eq!(storms.len(), 1, "{live:?}");
    assert_eq!(storms[0].2, 10, "{live:?}");
    assert_eq!(live, scanned, "{log}");
    // One page (and its resolved notice, the storm being long over).
    assert_eq!(
        subjects()
            .iter()
            .filter(|s| s.contains("worker-d") && !s.contains("resolved"))
            .count(),
        1,
        "{:#?}",
        subjects()
    );
}

/// A host synced into a followed collector by `rsync` across a rotation:
/// its `remote-hx.journal` was read; journal-remote then wrote more to it,
/// renamed it to `remote-hx@….journal` and began a new
/// `remote-hx.journal`; the next sync copies the new active file first
/// (over the old one's path) and the archived one a second later, with
/// worker-d's 10-retry storm across all three parts. Every line is read
/// once, and the storm is one incident of 10, as `scan` gives.
#[test]
fn a_host_rotated_and_synced_newer_file_first_loses_nothing_and_splits_nothing() {
    let (live, scanned, log) = synced_rotation(|archived, into| {
        std::thread::sleep(Duration::from_secs(1));
        std::fs::rename(archived, into).unwrap();
    });
    assert_eq!(live, scanned, "{log}");
}

/// The same, the archived file synced 5 s after the newer one with no
/// copy of it seen meanwhile (`rsync --temp-dir`, a copy moved in
/// later): its entries written after the last sync are behind the
/// host's position when it comes, a file the group had read (by file ID)
/// in another inode now. They are read late, up to the host's position,
/// and said (they were never read).
#[test]
fn a_rotated_hosts_archived_file_synced_much_later_is_read_late() {
    let (live, _, log) = synced_rotation(|archived, into| {
        std::thread::sleep(Duration::from_secs(5));
        std::fs::rename(archived, into).unwrap();
    });
    assert!(log.contains("appeared late"), "{log}");
    // Read after the newer entries: the storm may be split (README).
    assert!(
        live.iter().any(|(node, _, _)| node == "worker-d"),
        "{live:?}"
    );
}

/// [`a_host_rotated_and_synced_newer_file_first_loses_nothing_and_splits_nothing`]
/// with the archived file copied as `rsync` copies it, under a temporary
/// name beside it (`.NAME.XXXXXX`) for 4 s, longer than a host's files
/// settle (2 s), then renamed: the host waits while it is written (its
/// new entries were behind the host's position once the newer file was
/// read, and were never read).
#[test]
fn a_rotated_hosts_archived_file_still_being_synced_is_waited_for() {
    let (live, scanned, log) = synced_rotation(|archived, into| {
        let bytes = std::fs::read(archived).unwrap();
        let temp = into.with_file_name(format!(".{HX_ARCHIVED}.Ab3xYz"));
        let mut f = std::fs::File::create(&temp).unwrap();
        for chunk in bytes.chunks(bytes.len().div_ceil(8)) {
            std::io::Write::write_all(&mut f, chunk).unwrap();
            std::thread::sleep(Duration::from_millis(500));
        }
        drop(f);
        std::fs::rename(&temp, into).unwrap();
    });
    assert_eq!(live, scanned, "{log}");
}

/// The scenario of the tests above; `sync_archived(from, to)` brings the
/// archived file in after the newer one. Once every line was read (each
/// once: `kubelet_lines`), the service's incidents, `scan`'s (one storm
/// of 10 retries) and the service's log.
fn synced_rotation(sync_archived: impl Fn(&Path, &Path)) -> (Vec<Seen>, Vec<Seen>, String) {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let src = tempfile::tempdir().unwrap();
    let start = kubelet_sentinel::now() - 1800 * SECOND;
    let mut lines: Vec<(Micros, String)> = (0..200).map(|k| chatter(start + k * SECOND)).collect();
    lines.extend(
        (0..10).map(|k| retry(start + 30 * SECOND + 250_000 + k * 10 * SECOND, "worker-d")),
    );
    lines.sort();
    let part = |from: i64, to: i64| -> Vec<(Micros, String)> {
        lines
            .iter()
            .filter(|(at, _)| *at >= start + from * SECOND && *at < start + to * SECOND)
            .cloned()
            .collect()
    };
    let (first, second, third) = (part(0, 60), part(60, 90), part(90, 1000));
    upload(dir, "remote-hx.journal", "hx", &first);
    let mut svc = Service::new(&format!("directory = \"{}\"", dir.display()), "");
    svc.start();
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(first.len() as u64),
        "the first part read",
    );
    // journal-remote goes on in the same file, then rotates it.
    let archived = src.path().join(HX_ARCHIVED);
    std::fs::copy(dir.join("remote-hx.journal"), &archived).unwrap();
    upload(src.path(), HX_ARCHIVED, "hx", &second);
    upload(src.path(), "remote-hx.journal", "hx", &third);
    // The sync: the newer file first, over the old one's path.
    std::fs::rename(
        src.path().join("remote-hx.journal"),
        dir.join("remote-hx.journal"),
    )
    .unwrap();
    sync_archived(&archived, &dir.join(HX_ARCHIVED));
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(lines.len() as u64),
        "every part read",
    );
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    let live = incidents_of(&svc.incidents());
    let scanned = incidents_of(&scan_json(&[&dir.display().to_string()])["incidents"]);
    one_storm_of_ten(&scanned);
    (live, scanned, log)
}

/// A host's journal synced into a followed collector the way `rsync` (or
/// a copy then `mv`) updates a file: the grown copy is written elsewhere
/// and renamed over the one read. The handle on the replaced file never
/// saw the new entries: they were read only at the next start. They are
/// read while following (once the host's files settle).
#[test]
fn a_file_replaced_under_its_name_by_a_sync_is_read_while_following() {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let src = tempfile::tempdir().unwrap();
    let start = kubelet_sentinel::now() - 1800 * SECOND;
    let lines: Vec<(Micros, String)> = (0..200).map(|k| chatter(start + k * SECOND)).collect();
    upload(dir, "remote-hx.journal", "hx", &lines[..100]);
    let mut svc = Service::new(&format!("directory = \"{}\"", dir.display()), "");
    svc.start();
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(100),
        "the first part read",
    );
    let copy = src.path().join("remote-hx.journal");
    std::fs::copy(dir.join("remote-hx.journal"), &copy).unwrap();
    upload(src.path(), "remote-hx.journal", "hx", &lines[100..]);
    std::fs::rename(&copy, dir.join("remote-hx.journal")).unwrap();
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(200),
        "the synced file's new entries read",
    );
    assert_eq!(svc.signal("TERM"), Some(0), "{}", svc.log());
}

/// S19 across a stop: the files each host was read over are kept with its
/// cursor, so an older file copied in while the service is stopped is
/// found late at the next start and read up to the host's position (it
/// was lost: a worker knew a group's files only while it ran). worker-d's
/// storm is in the older file only; the service ends with `scan`'s
/// incidents and every line counted once.
#[test]
fn an_older_file_copied_in_while_the_service_is_stopped_is_read_at_the_next_start() {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let src = tempfile::tempdir().unwrap();
    let (lines, newer) = hx_split(src.path(), dir, 10, 5);
    let mut svc = hx_service(dir, newer);
    assert_eq!(svc.signal("TERM"), Some(0), "{}", svc.log());
    std::fs::rename(src.path().join(HX_ARCHIVED), dir.join(HX_ARCHIVED)).unwrap();
    svc.start();
    let (live, scanned, log) = late_read_then_scan(
        &mut svc,
        dir,
        lines.len(),
        "the older file read after the restart",
    );
    assert!(
        scanned
            .iter()
            .any(|(node, _, retries)| node == "worker-d" && *retries == 10),
        "{scanned:?}"
    );
    assert_eq!(live, scanned, "{log}");
    // A third start reads nothing again: once caught up, the count holds.
    svc.start();
    wait_for(
        Duration::from_secs(20),
        || svc.status()["caught_up"] == true,
        "the third start caught up",
    );
    assert_eq!(
        svc.status()["kubelet_lines"].as_u64(),
        Some(lines.len() as u64)
    );
    assert_eq!(svc.signal("TERM"), Some(0), "{}", svc.log());
}

/// A host's file the service may not read is named in the log, and read
/// once its permissions are fixed, without a restart (F15). The service
/// runs as `nobody` here: root reads every file.
#[test]
fn an_unreadable_file_is_read_once_it_can_be() {
    use std::os::unix::fs::PermissionsExt as _;
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let now = kubelet_sentinel::now();
    let h1 = storm(now - 600 * SECOND, "h1", 6);
    let h2 = storm(now - 500 * SECOND, "h2", 7);
    upload(dir, "remote-10.0.0.1.journal", "h1", &h1);
    upload(dir, "remote-10.0.0.2.journal", "h2", &h2);
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    };
    mode(dir, 0o755);
    mode(&dir.join("remote-10.0.0.1.journal"), 0o644);
    mode(&dir.join("remote-10.0.0.2.journal"), 0o600);
    let mut svc = Service::new(&format!("directory = \"{}\"", dir.display()), "");
    let owned = run(
        std::process::Command::new("chown")
            .args(["-R", "nobody:nogroup"])
            .arg(svc.dir.path()),
        None,
    );
    assert!(owned.status.success());
    svc.start_through(&[
        "setpriv",
        "--reuid=nobody",
        "--regid=nogroup",
        "--clear-groups",
        "--",
    ]);
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(h1.len() as u64),
        "the readable host",
    );
    wait_for(
        Duration::from_secs(10),
        || {
            svc.log()
                .contains("cannot be read, its entries are missing")
        },
        "the unreadable file named in the log",
    );
    mode(&dir.join("remote-10.0.0.2.journal"), 0o644);
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some((h1.len() + h2.len()) as u64),
        "the file read once it can be",
    );
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    let live = incidents_of(&svc.incidents());
    let scanned = scan_json(&[&dir.display().to_string()]);
    assert_eq!(live, incidents_of(&scanned["incidents"]), "{log}");
}

/// Issue 27 (D28) with real files: while a collector follows two hosts
/// that are up to date, a third host's backlog of an hour ago (1 000
/// entries 200 ms apart) arrives in pieces of 50. Following gives
/// one host-silent incident, open, silent since the backlog's last entry,
/// as `scan` of the same directory does (77 at 502b51b).
#[test]
fn a_late_backlog_is_one_host_silent_incident_followed_or_scanned() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("journals");
    std::fs::create_dir_all(&dir).unwrap();
    let now = kubelet_sentinel::now();
    let mut lines = 0;
    for host in ["busy-1", "busy-2"] {
        let l: Vec<(Micros, String)> = (0..24)
            .map(|k| chatter(now - (23 - k) * 5 * SECOND))
            .collect();
        lines += l.len() as u64;
        upload(&dir, &format!("remote-{host}.journal"), host, &l);
    }
    let backlog: Vec<(Micros, String)> = (0..1000)
        .map(|k| chatter(now - 3600 * SECOND + k * 200_000))
        .collect();
    let last = now - 3600 * SECOND + 999 * 200_000;
    lines += backlog.len() as u64;
    let mut svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        "[fleet]\nsilent_incidents = true\nsilent_after = \"1m\"\n",
    );
    svc.start();
    wait_for(
        Duration::from_secs(20),
        || svc.status()["hosts"] == 2,
        "the two hosts read",
    );
    // As systemd-journal-upload sends a backlog: in pieces, appended to
    // the host's one file while the service follows.
    // Each piece read before the next comes.
    let mut read = svc.status()["kubelet_lines"].as_u64().unwrap();
    for piece in backlog.chunks(50) {
        upload(&dir, "remote-late.journal", "late", piece);
        read += piece.len() as u64;
        wait_for(
            Duration::from_secs(20),
            || svc.status()["kubelet_lines"].as_u64() == Some(read),
            "the piece read",
        );
    }
    wait_for(
        Duration::from_secs(20),
        || svc.status()["kubelet_lines"].as_u64() == Some(lines),
        "the backlog read",
    );
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    let silent = |all: &serde_json::Value| -> Vec<(String, bool, Option<i64>)> {
        all.as_array()
            .unwrap()
            .iter()
            .filter(|i| i["kind"] == "host-silent")
            .map(|i| {
                (
                    i["host"].as_str().unwrap().to_string(),
                    i["status"] == "open",
                    i["last_entry_at"]
                        .as_str()
                        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                        .map(|t| t.timestamp_micros()),
                )
            })
            .collect()
    };
    let followed = silent(&svc.incidents());
    // To the millisecond, as the JSON says times.
    let last = last / 1000 * 1000;
    assert_eq!(followed, [("late".to_string(), true, Some(last))], "{log}");
    let scanned = scan_json(&["--silent-after", "1m", &dir.display().to_string()]);
    assert_eq!(silent(&scanned["incidents"]), followed);
}

#[test]
fn a_host_gone_silent_is_named_against_the_newest_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("journals");
    std::fs::create_dir_all(&dir).unwrap();
    let now = kubelet_sentinel::now();
    let min = 60 * SECOND;
    // Two hosts write up to now; quiet-1 stopped 25 minutes before them.
    for (host, last) in [
        ("busy-1", now),
        ("busy-2", now - min),
        ("quiet-1", now - 25 * min),
    ] {
        let lines: Vec<(Micros, String)> =
            (0..5).map(|k| chatter(last - (4 - k) * SECOND)).collect();
        upload(&dir, &format!("remote-{host}.journal"), host, &lines);
    }
    // scan says so, judged against the newest entry in the directory.
    let out = run(bin().arg("scan").arg(&dir), None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("host quiet-1 went silent") && text.contains("25m"),
        "{text}"
    );
    assert!(!text.contains("host busy-2 went silent"), "{text}");
    // The service: status lists it, the metric has every host's newest entry.
    let mut svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        "[fleet]\nsilent_after = \"10m\"\n",
    );
    svc.serve_metrics();
    svc.start();
    let port = svc.metrics_port();
    wait_for(
        Duration::from_secs(20),
        || svc.status()["hosts"] == 3,
        "the three hosts read",
    );
    let st = svc.status();
    let silent = st["silent_hosts"].as_array().unwrap();
    assert_eq!(silent.len(), 1, "{st}");
    assert!(
        silent[0]
            .as_str()
            .unwrap()
            .starts_with("quiet-1 (last entry "),
        "{st}"
    );
    // In the time format people read everywhere else, not RFC 3339.
    assert!(silent[0].as_str().unwrap().ends_with(" UTC)"), "{st}");
    let metrics = {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            c,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        s
    };
    let series = metrics
        .lines()
        .filter(|l| l.starts_with("kubelet_sentinel_host_last_entry_timestamp_seconds{"))
        .count();
    assert_eq!(series, 3, "{metrics}");
    // Issue 28: status and check-config say that silent hosts open no
    // incident here, and how to turn that on.
    assert_eq!(st["silent_incidents"], false, "{st}");
    let table = String::from_utf8_lossy(&svc.query(&["status"]).stdout).into_owned();
    assert!(
        table.contains("silent_incidents       off")
            && table.contains("note: host-silent incidents off")
            && table.contains("silent_incidents = true"),
        "{table}"
    );
    let checked = String::from_utf8_lossy(&svc.query(&["check-config"]).stdout).into_owned();
    assert!(
        checked.contains("# host-silent incidents off")
            && checked.contains("silent_incidents = true"),
        "{checked}"
    );
    assert_eq!(svc.signal("TERM"), Some(0));
}

#[test]
fn many_garbage_files_give_a_bounded_number_of_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("journals");
    std::fs::create_dir_all(&dir).unwrap();
    let now = kubelet_sentinel::now();
    upload(&dir, "remote-real.journal", "real", &storm(now, "real", 6));
    for n in 0..300 {
        // Old enough not to be taken for a copy still being written.
        let p = dir.join(format!("remote-g{n}.journal"));
        std::fs::write(&p, b"not a journal file at all, just bytes").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let out = run(bin().arg("scan").arg(&dir), None);
    let err = String::from_utf8_lossy(&out.stderr);
    let lines = err.lines().count();
    // At most twenty said one by one; the rest summed up.
    assert!(lines <= 25, "{lines} lines:\n{err}");
    assert!(err.contains("more records skipped"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("real"));
}

/// Issue 19's fleet, written by `systemd-journal-remote`: six hosts, four
/// losing `10.0.0.1:6443` within seconds, one getting `Unauthorized` from
/// another endpoint, one healthy. Trouble begins `ago` before now.
pub(crate) fn outage_fleet(dir: &Path, ago: Micros) {
    let t0 = kubelet_sentinel::now() - ago;
    for n in 0..4 {
        let host = format!("ep-{n}");
        let start = t0 + n * 700_000;
        // A retry every 10 s for two minutes, as a kubelet's status loop.
        let mut lines: Vec<_> = (0..12)
            .map(|k| retry(start + k * 10 * SECOND, &host))
            .collect();
        lines.push(chatter(start + 300 * SECOND));
        upload(dir, &format!("remote-10.0.1.{n}.journal"), &host, &lines);
    }
    let lone: Vec<_> = (0..12)
        .map(|k| {
            let at = t0 + 400_000 + k * 10 * SECOND;
            (
                at,
                format!(
                    "E{}    4242 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"lone-0\\\": Get \\\"https://10.0.0.2:6443/api/v1/nodes/lone-0?timeout=10s\\\": Unauthorized\"",
                    klog_time(at)
                ),
            )
        })
        .collect();
    upload(dir, "remote-10.0.2.1.journal", "lone-0", &lone);
    let quiet: Vec<_> = (0..10).map(|k| chatter(t0 + k * 30 * SECOND)).collect();
    upload(dir, "remote-10.0.2.2.journal", "calm-0", &quiet);
}

/// The endpoint incident and the node incidents of [`outage_fleet`] in a
/// JSON `incidents` array.
pub(crate) fn check_outage(incidents: &serde_json::Value) {
    let all = incidents.as_array().unwrap();
    let endpoints: Vec<_> = all.iter().filter(|i| i["kind"] == "endpoint").collect();
    assert_eq!(endpoints.len(), 1, "{all:#?}");
    let e = endpoints[0];
    assert_eq!(e["api_endpoint"], "10.0.0.1:6443");
    assert_eq!(e["cause"], "api-unreachable");
    let mut nodes: Vec<&str> = e["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    nodes.sort_unstable();
    assert_eq!(nodes, ["ep-0", "ep-1", "ep-2", "ep-3"]);
    for n in &nodes {
        let i = all
            .iter()
            .find(|i| i["kind"] == "node-status" && i["node"] == *n)
            .unwrap_or_else(|| panic!("{n}: {all:#?}"));
        assert_eq!(i["api_endpoint"], "10.0.0.1:6443", "{n}");
        assert_eq!(i["covered_by"], e["id"], "{n}");
    }
    let lone = all.iter().find(|i| i["node"] == "lone-0").unwrap();
    assert_eq!(lone["cause"], "auth");
    assert_eq!(lone["api_endpoint"], "10.0.0.2:6443");
    assert!(lone.get("covered_by").is_none(), "{lone:#?}");
    assert!(!all.iter().any(|i| i["node"] == "calm-0"));
}

#[test]
fn an_endpoint_lost_by_four_hosts_is_one_incident_the_lone_node_its_own() {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    outage_fleet(dir, 3600 * SECOND);
    let scanned = scan_json(&[dir.to_str().unwrap()]);
    check_outage(&scanned["incidents"]);
    // Read through one handle (the files named one by one): the same.
    check_outage(&scan_files_of(dir)["incidents"]);
    // The service's catch-up, its store, `incidents --kind endpoint`.
    let svc = Service::new(&format!("directory = \"{}\"", dir.display()), "");
    let out = svc.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_outage(&svc.incidents());
    let out = svc.query(&["incidents", "--kind", "endpoint", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["incidents"].as_array().unwrap().len(), 1, "{v:#}");
    let table = svc.query(&["incidents", "--kind", "endpoint"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("10.0.0.1:6443") && table.contains("4 nodes"),
        "{table}"
    );
    let id = v["incidents"][0]["id"].as_str().unwrap();
    let show = svc.query(&["show", id]);
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(
        show.contains("4 nodes: ") && show.contains("ep-3"),
        "{show}"
    );
}

/// Issue 19's collector of 40 hosts, written by systemd-journal-remote:
/// 30 lose API endpoint 10.0.0.1:6443 within five seconds, one gets
/// `Unauthorized` from a second endpoint, one stops writing 25 minutes
/// before the others, eight are calm. `scan DIR` and `run --once` give one
/// endpoint incident naming the 30, each of their incidents carrying the
/// endpoint and covered by it, the lone node's own, and one host-silent
/// incident; the on-call's mail names the endpoint, the 30 are not paged
/// one by one.
#[test]
fn the_forty_host_collector_of_the_issue() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("remote");
    std::fs::create_dir(&dir).unwrap();
    forty_hosts(&dir, kubelet_sentinel::now() - 2 * 3600 * SECOND);
    let out = run(
        bin()
            .args(["scan", "-o", "json", "--silent-after", "10m"])
            .arg(&dir),
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let scanned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    check_forty(&scanned["incidents"]);
    // The service's catch-up, mailing through aiosmtpd.
    let smtp = crate::support::Smtpd::aiosmtpd(&tmp.path().join("md"), &[]);
    let svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        &format!(
            "[fleet]\nsilent_incidents = true\n{}",
            crate::support::mail_to(smtp.port, "max_age = \"1d\"\nretry_max = \"1s\"\n")
        ),
    );
    let out = svc.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_forty(&svc.incidents());
    wait_for(
        Duration::from_secs(20),
        || !smtp.mails().is_empty(),
        "the mails",
    );
    // run --once has delivered everything before it exits.
    let subjects: Vec<String> = smtp
        .mails()
        .iter()
        .map(|m| crate::support::subject(m))
        .collect();
    assert!(
        subjects
            .iter()
            .any(|s| s.contains("10.0.0.1:6443 unreachable from 30 nodes")),
        "{subjects:#?}"
    );
    for n in 0..30 {
        assert!(
            !subjects
                .iter()
                .any(|s| s.contains(&format!("] fleet-{n:04}"))),
            "fleet-{n:04} paged on its own: {subjects:#?}"
        );
    }
    // The outage's page and its end, the lone node's page and its end
    // (it was paged, so its end is told: an opening and its end read in
    // one batch once lost the end), the silent host's.
    assert!(subjects.len() <= 5, "{subjects:#?}");
    assert_eq!(
        subjects.iter().filter(|s| s.contains("lone-0")).count(),
        2,
        "{subjects:#?}"
    );
    assert_eq!(
        subjects
            .iter()
            .filter(|s| s.contains("resolved: 10.0.0.1:6443"))
            .count(),
        1,
        "{subjects:#?}"
    );
}

/// Issue 27: an endpoint group's members are kept one record each in the
/// store (not inside the state written at every commit). The forty-host
/// collector followed by a service stopped with half the outage's hosts
/// read (their incidents resolved by then: members of the group only) and
/// started again for the rest, then killed (SIGKILL) and started once more:
/// the incidents `scan` gives, one record a member.
#[test]
fn an_outage_followed_across_restarts_is_the_one_scan_sees() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, dir) = (tmp.path().join("src"), tmp.path().join("remote"));
    for d in [&src, &dir] {
        std::fs::create_dir(d).unwrap();
    }
    forty_hosts(&src, kubelet_sentinel::now() - 2 * 3600 * SECOND);
    let mut files: Vec<_> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    files.sort();
    let mut svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        "[fleet]\nsilent_incidents = true\n",
    );
    svc.start();
    let copy_in = |names: &[std::ffi::OsString]| {
        for n in names {
            std::fs::copy(src.join(n), dir.join(n)).unwrap();
        }
        scan_json(&[dir.to_str().unwrap()])["summary"]["kubelet_lines"]
            .as_u64()
            .unwrap()
    };
    // remote-10.1.0.N: the outage's hosts, in name order; half of them.
    let lines = copy_in(&files[..15]);
    wait_for(
        Duration::from_secs(30),
        || svc.status()["kubelet_lines"].as_u64() == Some(lines),
        "half the outage read",
    );
    assert_eq!(svc.signal("TERM"), Some(0));
    let lines = copy_in(&files[15..]);
    svc.start();
    wait_for(
        Duration::from_secs(30),
        || svc.status()["kubelet_lines"].as_u64() == Some(lines),
        "the rest read",
    );
    assert_eq!(svc.signal("KILL"), None);
    svc.start();
    svc.settled();
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    check_forty(&svc.incidents());
    let store = kubelet_sentinel::Store::open(&svc.dir.path().join("store")).unwrap();
    let loaded = store.load().unwrap();
    // The lone node is a group of its own (another endpoint and cause).
    let mut groups: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for (g, _) in &loaded.members {
        *groups.entry(g.as_str()).or_default() += 1;
    }
    assert_eq!(
        groups,
        [
            ("10.0.0.1:6443 api-unreachable", 30),
            ("10.0.0.2:6443 auth", 1)
        ]
        .into(),
        "one record a member"
    );
}

/// A service started on a collector whose files are all there already
/// reads every host during its catch-up, so at its first tail every
/// host's journal has just moved and none is judged (a late upload read as
/// it arrives would look the same). Nothing else arrives, so no other tail
/// would come: the service looks again soon after such a tail, and the
/// silent host is judged from its last entry, as `scan` judges it. Before,
/// it was never judged (and a restart that read a host's last entries
/// again lost its silence the same way).
#[test]
fn a_silent_host_is_judged_though_nothing_arrives_after_the_catch_up() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("remote");
    std::fs::create_dir(&dir).unwrap();
    forty_hosts(&dir, kubelet_sentinel::now() - 2 * 3600 * SECOND);
    let mut svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        "[fleet]\nsilent_incidents = true\n",
    );
    svc.start();
    svc.settled();
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    check_forty(&svc.incidents());
}

/// Writes issue 19's collector of 40 hosts into `dir`, from `t0` on.
fn forty_hosts(dir: &Path, t0: Micros) {
    let end = t0 + 30 * 60 * SECOND;
    let calm = |from: Micros, to: Micros| -> Vec<(Micros, String)> {
        (0..=(to - from) / (30 * SECOND))
            .map(|k| chatter(from + k * 30 * SECOND))
            .collect()
    };
    for n in 0..30 {
        let host = format!("fleet-{n:04}");
        let start = t0 + 600 * SECOND + n * 150_000;
        let mut lines = calm(t0, start - SECOND);
        lines.extend((0..12).map(|k| retry(start + k * 10 * SECOND, &host)));
        lines.extend(calm(start + 300 * SECOND, end));
        upload(dir, &format!("remote-10.1.0.{n}.journal"), &host, &lines);
    }
    let at = |k: i64| t0 + 601 * SECOND + k * 10 * SECOND;
    let mut lone: Vec<_> = (0..12)
        .map(|k| {
            (
                at(k),
                format!(
                    "E{}    4242 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"lone-0\\\": Get \\\"https://10.0.0.2:6443/api/v1/nodes/lone-0?timeout=10s\\\": Unauthorized\"",
                    klog_time(at(k))
                ),
            )
        })
        .collect();
    lone.extend(calm(at(12) + 300 * SECOND, end));
    upload(dir, "remote-10.2.0.1.journal", "lone-0", &lone);
    upload(
        dir,
        "remote-10.2.0.2.journal",
        "gone-0",
        &calm(t0, end - 25 * 60 * SECOND),
    );
    for n in 0..8 {
        let host = format!("calm-{n}");
        upload(
            dir,
            &format!("remote-10.3.0.{n}.journal"),
            &host,
            &calm(t0, end),
        );
    }
}

/// What [`forty_hosts`] must give.
fn check_forty(incidents: &serde_json::Value) {
    let all = incidents.as_array().unwrap();
    let endpoints: Vec<_> = all.iter().filter(|i| i["kind"] == "endpoint").collect();
    assert_eq!(endpoints.len(), 1, "{all:#?}");
    let e = endpoints[0];
    assert_eq!(e["api_endpoint"], "10.0.0.1:6443");
    assert_eq!(e["cause"], "api-unreachable");
    assert_eq!(e["nodes"].as_array().unwrap().len(), 30, "{e:#}");
    let members: Vec<_> = all
        .iter()
        .filter(|i| i["kind"] == "node-status" && i["node"] != "lone-0")
        .collect();
    assert_eq!(members.len(), 30, "{all:#?}");
    for i in members {
        assert_eq!(i["api_endpoint"], "10.0.0.1:6443", "{i:#}");
        assert_eq!(i["covered_by"], e["id"], "{i:#}");
    }
    let lone = all.iter().find(|i| i["node"] == "lone-0").unwrap();
    assert_eq!(
        (&lone["cause"], &lone["api_endpoint"]),
        (&"auth".into(), &"10.0.0.2:6443".into())
    );
    assert!(lone.get("covered_by").is_none(), "{lone:#}");
    let silent: Vec<_> = all.iter().filter(|i| i["kind"] == "host-silent").collect();
    assert_eq!(silent.len(), 1, "{all:#?}");
    assert_eq!(silent[0]["host"], "gone-0");
    assert_eq!(all.len(), 33, "{all:#?}");
}

/// Issue 19: a thousand hosts lose one API endpoint at once, through an
/// SMTP server that takes at most 10 MB a message (Postfix's default),
/// with the default `group_wait`: the on-call has one small mail for the
/// outage (at most three in all) within `group_wait` and a few seconds.
#[test]
fn a_thousand_hosts_losing_one_endpoint_get_one_small_page() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("remote");
    std::fs::create_dir(&dir).unwrap();
    let t0 = kubelet_sentinel::now() - 60 * SECOND;
    let mut out = Vec::new();
    for n in 0..1000 {
        let host = format!("big-{n:04}");
        let stream = format!("{host}-kubelet");
        for k in 0..8 {
            let (at, msg) = retry(t0 + n * 5_000 + k * 2 * SECOND, &host);
            let at = at.to_string();
            export_entry(
                &mut out,
                &[
                    ("__REALTIME_TIMESTAMP", &at),
                    ("_HOSTNAME", &host),
                    ("_SYSTEMD_UNIT", "kubelet.service"),
                    ("SYSLOG_IDENTIFIER", "kubelet"),
                    ("_PID", "4242"),
                    ("_STREAM_ID", &stream),
                    ("MESSAGE", &msg),
                ],
            );
        }
    }
    journal_remote(&out, &dir.join("remote-fleet.journal"));
    let smtp = crate::support::Smtpd::aiosmtpd(&tmp.path().join("md"), &["-s", "10240000"]);
    let mut svc = Service::new(
        &format!("directory = \"{}\"", dir.display()),
        &crate::support::mail_to(smtp.port, ""),
    );
    let started = std::time::Instant::now();
    svc.start();
    wait_for(
        Duration::from_secs(90),
        || !smtp.mails().is_empty(),
        "the page",
    );
    let first = started.elapsed();
    svc.settled();
    let mails = smtp.mails();
    let subjects: Vec<String> = mails.iter().map(|m| crate::support::subject(m)).collect();
    println!(
        "1000 hosts: first mail {first:?} after the start, {} mail(s), sizes {:?}: {subjects:#?}",
        mails.len(),
        mails.iter().map(String::len).collect::<Vec<_>>()
    );
    assert!(mails.len() <= 3, "{subjects:#?}");
    let page = mails
        .iter()
        .find(|m| crate::support::subject(m).contains("10.0.0.1:6443 unreachable from 1000 nodes"))
        .unwrap_or_else(|| panic!("{subjects:#?}"));
    assert!(page.len() < 500_000, "{} bytes", page.len());
    assert_eq!(svc.signal("TERM"), Some(0));
}

/// When this machine booted, as `start_at = "boot"` takes it.
fn boot_time() -> Micros {
    let up: f64 = std::fs::read_to_string("/proc/uptime")
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    kubelet_sentinel::now() - (up * SECOND as f64) as Micros
}

/// Issue 28 (N5): with `start_at = "boot"`, a host whose entries all
/// predate the boot is skipped at the first start, and stays skipped after
/// a plain restart (it has no cursor: nothing of it was read); a host first
/// seen after the restart is read from the same point: its entries from
/// before the boot are skipped too, its new ones read. One rule, whichever
/// comes first.
#[test]
fn start_at_boot_is_one_rule_for_every_host_across_a_restart() {
    let journals = tempfile::tempdir().unwrap();
    let dir = journals.path();
    let now = kubelet_sentinel::now();
    let before_boot = boot_time() - 86_400 * SECOND;
    upload(
        dir,
        "remote-10.0.0.1.journal",
        "old-1",
        &storm(before_boot, "old-1", 8),
    );
    upload(
        dir,
        "remote-10.0.0.2.journal",
        "new-1",
        &storm(now - 60 * SECOND, "new-1", 6),
    );
    let mut svc = Service::new(&format!("directory = \"{}\"", dir.display()), "");
    let config = std::fs::read_to_string(svc.config())
        .unwrap()
        .replace("start_at = \"all\"", "start_at = \"boot\"");
    std::fs::write(svc.config(), config).unwrap();
    let nodes = |svc: &Service| -> Vec<String> {
        let mut v: Vec<String> = svc
            .incidents()
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["node"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    svc.start();
    wait_for(
        Duration::from_secs(30),
        || nodes(&svc) == ["new-1"] && svc.status()["caught_up"] == true,
        "the first start to read new-1",
    );
    assert_eq!(svc.signal("TERM"), Some(0), "{}", svc.log());
    // While it is stopped: a host it never saw, with a backlog from before
    // the boot and a line of now.
    let mut late = storm(before_boot - 3600 * SECOND, "old-2", 7);
    late.extend(storm(now - 30 * SECOND, "new-2", 6));
    upload(dir, "remote-10.0.0.3.journal", "late", &late);
    svc.start();
    wait_for(
        Duration::from_secs(30),
        || nodes(&svc) == ["new-1", "new-2"] && svc.status()["caught_up"] == true,
        "the restart to read new-2",
    );
    // Whatever else it would read is in by now: the upload was complete
    // before the start, and it is caught up.
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    assert_eq!(nodes(&svc), ["new-1", "new-2"], "{log}");
    assert!(log.contains("a host with no cursor from"), "{log}");
}

/// Issue 39 (S14): a host whose clock is two days behind (trusted: no
/// earlier than kubelets, not in the future) uploads its outage once, 8
/// retries and nothing more, into a followed collector. By the wall clock
/// its trouble is two days old; by its own clock, its newest entry, it is
/// of now, and its lines arrived while the service followed: it is paged.
/// A second host two days behind uploads trouble that resolved within
/// the upload (a line two minutes later): nothing is paged for it.
#[test]
fn a_host_whose_clock_is_behind_is_paged_when_its_trouble_arrives() {
    let (tmp, dir, smtp, mut svc) = followed_with_mail();
    let behind = kubelet_sentinel::now() - 2 * 24 * 3600 * SECOND;
    // Each file whole at once (written aside, renamed in): the upload is
    // read to its end before the reader catches up.
    let rename_in = |file: &str, host: &str, lines: &[(Micros, String)]| {
        upload(tmp.path(), file, host, lines);
        std::fs::rename(tmp.path().join(file), dir.join(file)).unwrap();
    };
    rename_in("remote-hblip.journal", "hblip", &storm(behind, "hblip", 8));
    let mut outage = storm(behind, "hbehind", 8);
    outage.pop();
    rename_in("remote-hbehind.journal", "hbehind", &outage);
    let subjects = || smtp.subjects();
    wait_for(
        Duration::from_secs(30),
        || subjects().iter().any(|s| s.contains("] hbehind:")),
        "the host two days behind paged on its only upload",
    );
    // A page for hblip (read first) would be out by now.
    std::thread::sleep(Duration::from_secs(1));
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    assert!(
        !subjects().iter().any(|s| s.contains("hblip")),
        "{:#?}\n{log}",
        subjects()
    );
    let nodes: Vec<String> = svc
        .incidents()
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["node"].as_str().unwrap().to_string())
        .collect();
    assert!(
        nodes.contains(&"hblip".to_string()) && nodes.contains(&"hbehind".to_string()),
        "{nodes:?}"
    );
}

/// Issue 28 (S14): hosts whose clocks are wrong (1971, 2150) upload their
/// trouble once and nothing more; each is paged when its lines arrive, not
/// at an upload that may never come (their times place their lines; their
/// age is when they were read). Issue 27 (D29): with a third host whose
/// clock is right, all three against one endpoint, there is no outage
/// (the wrong clocks are no members of one) and each node is paged.
#[test]
fn hosts_with_wrong_clocks_are_paged_when_their_trouble_arrives() {
    let (_tmp, dir, smtp, mut svc) = followed_with_mail();
    let y1971 = chrono::DateTime::parse_from_rfc3339("1971-03-01T10:00:00Z")
        .unwrap()
        .timestamp_micros();
    let y2150 = chrono::DateTime::parse_from_rfc3339("2150-01-01T10:00:00Z")
        .unwrap()
        .timestamp_micros();
    upload(
        &dir,
        "remote-h1971.journal",
        "h1971",
        &storm(y1971, "h1971", 8),
    );
    upload(
        &dir,
        "remote-h2150.journal",
        "h2150",
        &storm(y2150, "h2150", 8),
    );
    let now = kubelet_sentinel::now();
    upload(
        &dir,
        "remote-hnow.journal",
        "hnow",
        &storm(now - 30 * SECOND, "hnow", 8),
    );
    wait_for(
        Duration::from_secs(30),
        || {
            let s: Vec<String> = smtp
                .mails()
                .iter()
                .map(|m| crate::support::subject(m))
                .collect();
            ["h1971", "h2150", "hnow"]
                .iter()
                .all(|h| s.iter().any(|s| s.contains(&format!("] {h}:"))))
        },
        "each host paged on its first and only upload",
    );
    let log = svc.log();
    assert_eq!(svc.signal("TERM"), Some(0), "{log}");
    let all = svc.incidents();
    let kinds: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert!(!kinds.contains(&"endpoint"), "{all:#}");
    let subjects: Vec<String> = smtp
        .mails()
        .iter()
        .map(|m| crate::support::subject(m))
        .collect();
    assert!(
        !subjects.iter().any(|s| s.contains("unreachable from")),
        "{subjects:#?}"
    );
}
