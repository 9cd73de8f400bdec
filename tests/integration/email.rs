//! Alerts: rendering (golden files, adversarial input) and delivery through
//! real SMTP servers on loopback (Debian's aiosmtpd), including STARTTLS and
//! implicit TLS with a throwaway CA, AUTH, a server that never answers, and
//! an outage across a service restart.

use std::path::Path;
use std::time::Instant;

use kubelet_sentinel::Entry;
use kubelet_sentinel::{AlertKind, Incident, Settings};
use kubelet_sentinel::{FULL, Rendered, render, render_with};
use sentinel_core::testing::{End, replay};

use crate::support::{
    BadSmtp, Duration, Journald, Port, Service, Smtpd, bin, fixture, run, subject, throwaway_tls,
    wait_for,
};

const T0: i64 = 1_795_856_400_000_000; // 2026-11-28T09:00:00Z

/// Incidents from kubelet lines at fixed times: (ms, host, line).
fn incidents(lines: &[(i64, &str, String)], end_ms: i64) -> Vec<Incident> {
    // The node incidents alone, as a group mail shows them: no endpoint
    // incident of them (issue 19).
    let settings = Settings {
        fleet_min_nodes: usize::MAX,
        ..Settings::default()
    };
    let entries = lines.iter().map(|(ms, host, text)| Entry {
        at: Some(T0 + ms * 1000),
        host: Some((*host).into()),
        unit: Some("kubelet.service".into()),
        message: text.as_bytes().to_vec(),
        ..Entry::default()
    });
    replay(entries, &settings, End::At(T0 + end_ms * 1000)).incidents
}

fn outage(
    node: &str,
    host: &'static str,
    cycles: i64,
    from_ms: i64,
) -> Vec<(i64, &'static str, String)> {
    let mut v = Vec::new();
    for c in 0..cycles {
        for n in 0..5 {
            v.push((from_ms + c * 10_000 + n, host, format!(r#"E1128 09:00:00.000000    3117 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"{node}\": Get \"https://10.0.0.10:6443/api/v1/nodes/{node}?timeout=10s\": dial tcp 10.0.0.10:6443: connect: connection refused""#)));
        }
        v.push((from_ms + c * 10_000 + 5, host, r#"E1128 09:00:00.000000    3117 kubelet_node_status.go:522] "Unable to update node status" err="update node status exceeds retry count""#.to_string()));
    }
    v
}

fn deleted(
    node: &str,
    host: &'static str,
    cycles: i64,
    from_ms: i64,
) -> Vec<(i64, &'static str, String)> {
    let mut v = Vec::new();
    for c in 0..cycles {
        for n in 0..5 {
            v.push((from_ms + c * 10_000 + n, host, format!(r#"E1128 09:00:00.000000    1272 kubelet_node_status.go:535] Error updating node status, will retry: error getting node "{node}": nodes "{node}" not found"#)));
        }
    }
    v
}

fn golden(name: &str, got: &str) {
    let path = fixture(&format!("golden/{name}"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{}: run with UPDATE_GOLDEN=1 to create", path.display()));
    assert_eq!(
        got, want,
        "{name} differs from its golden file (UPDATE_GOLDEN=1 rewrites it; review the diff)"
    );
}

fn as_file(r: &Rendered) -> String {
    format!("Subject: {}\n\n{}", r.subject, r.text)
}

#[test]
fn golden_emails() {
    let s = Settings::default();
    let one = incidents(&outage("worker-02", "worker-02", 3, 5_000), 40_000);
    let r = render(&[&one[0]], AlertKind::Opened, &s);
    assert_eq!(
        r.subject,
        "[kubelet-sentinel] worker-02: 15 node status retries in 20s (api-unreachable)"
    );
    golden("single.txt", &as_file(&r));
    golden("single.html", &r.html);

    let mut lines = outage("worker-02", "worker-02", 2, 0);
    lines.extend(deleted("worker-03", "worker-03", 2, 1_000));
    lines.extend(outage("worker-04", "worker-04", 2, 2_000));
    lines.sort_by_key(|l| l.0);
    let group = incidents(&lines, 30_000);
    let refs: Vec<&Incident> = group.iter().collect();
    let r = render(&refs, AlertKind::Opened, &s);
    assert_eq!(
        r.subject,
        "[kubelet-sentinel] worker-02, worker-03, worker-04: node status retries (api-unreachable, node-missing)"
    );
    golden("group.txt", &as_file(&r));
    golden("group.html", &r.html);

    let resolved = incidents(&outage("worker-02", "worker-02", 2, 0), 200_000);
    let r = render(&[&resolved[0]], AlertKind::Resolved, &s);
    assert_eq!(
        r.subject,
        "[kubelet-sentinel] resolved: worker-02, trouble lasted 10s (api-unreachable)"
    );
    golden("resolved.txt", &as_file(&r));
}

/// D31: node incidents against one endpoint mailed together (no
/// endpoint incident of them: fewer than `min_nodes`, or their clocks
/// apart) are not worded as one outage. N16: two incidents of one node
/// raised together are worded as one node's, not as "2 nodes at once".
#[test]
fn a_group_mail_says_what_the_history_says() {
    let s = Settings::default();
    let mut lines = outage("worker-04", "worker-04", 2, 0);
    lines.extend(outage("n1", "n1", 2, 1_000));
    lines.sort_by_key(|l| l.0);
    let two = incidents(&lines, 30_000);
    let refs: Vec<&Incident> = two.iter().collect();
    let r = render(&refs, AlertKind::Opened, &s);
    assert_eq!(
        r.subject,
        "[kubelet-sentinel] worker-04, n1: node status retries against 10.0.0.10:6443 (api-unreachable)"
    );
    assert!(!r.subject.contains("unreachable from"), "{}", r.subject);
    assert!(
        r.text.starts_with(
            "2 nodes at once against one API endpoint, 10.0.0.10:6443 (api-unreachable), each \
             its own incident: no outage by kubelet-sentinel's rules"
        ),
        "{}",
        r.text
    );
    assert!(!r.text.contains("one outage"), "{}", r.text);
    let r = render(&refs, AlertKind::Resolved, &s);
    assert_eq!(
        r.subject,
        "[kubelet-sentinel] resolved: worker-04, n1 against 10.0.0.10:6443 (api-unreachable)"
    );
    // One node, its trouble twice (a catch-up after a stop).
    let mut lines = outage("n1", "n1", 2, 0);
    lines.extend(deleted("n1", "n1", 2, 200_000));
    let one_node = incidents(&lines, 230_000);
    assert_eq!(one_node.len(), 2, "{one_node:#?}");
    let refs: Vec<&Incident> = one_node.iter().collect();
    let r = render(&refs, AlertKind::Opened, &s);
    assert!(
        r.text
            .starts_with("2 incidents of node n1 raised together (a catch-up after a stop"),
        "{}",
        r.text
    );
    assert!(!r.text.contains("nodes at once"), "{}", r.text);
    assert!(!r.text.contains("API server first"), "{}", r.text);
    // Its subject counts the node's incidents; it said "node status
    // retries", words of several nodes (the recheck's "kubelets down").
    assert!(
        r.subject
            .starts_with("[kubelet-sentinel] n1: 2 node-status incidents ("),
        "{}",
        r.subject
    );
}

#[test]
fn adversarial_names_and_texts_add_no_header_or_markup() {
    let s = Settings::default();
    let mut i = incidents(&outage("evil", "evil", 2, 0), 30_000).remove(0);
    let long = "x".repeat(10 * 1024);
    i.node = format!("evil\r\nBcc: victim@example.com\r\n<script>alert(1)</script>{long}");
    i.host = Some("h\nX-Injected: 1".into());
    for e in &mut i.evidence_head {
        e.text = format!("</pre><script>steal()</script>\r\nSubject: spoofed {long}");
    }
    let r = render(&[&i], AlertKind::Opened, &s);
    assert!(!r.subject.contains(['\r', '\n']), "{:?}", r.subject);
    assert!(r.subject.chars().count() < 260);
    assert!(
        !r.html.contains("<script"),
        "markup from a log line reached the HTML"
    );
    assert!(r.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));

    // Through a real transport: the written message's header block has
    // exactly the headers we set.
    let dir = tempfile::tempdir().unwrap();
    let cfg = kubelet_sentinel::Config::parse(
        &format!(
            "[alert]\nto = [\"ops@example.com\"]\ntransport = \"file\"\n[alert.file]\ndirectory = \"{}\"\n",
            dir.path().display()
        ),
        "t",
    )
    .unwrap();
    let d = kubelet_sentinel::EmailTransport::from_config(&cfg.alert)
        .unwrap()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let path = rt
        .block_on(d.send(&r, &kubelet_sentinel::Progress::default()))
        .unwrap();
    let raw = std::fs::read_to_string(path).unwrap();
    let head = raw.split("\r\n\r\n").next().unwrap();
    let names: Vec<&str> = head
        .split("\r\n")
        .filter(|l| !l.starts_with([' ', '\t']))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "From",
            "Subject",
            "To",
            "MIME-Version",
            "Date",
            "Content-Type"
        ],
        "{head}"
    );
    for bad in ["\r\nBcc:", "\r\nX-Injected:"] {
        if let Some(at) = raw.find(bad) {
            panic!(
                "{bad:?} at {at}: …{}…",
                &raw[at.saturating_sub(300)..(at + 100).min(raw.len())]
            );
        }
    }
}

fn mail_config(port: u16, dir: &Path, extra_smtp: &str, extra_alert: &str) -> std::path::PathBuf {
    let p = dir.join("config.toml");
    std::fs::write(
        &p,
        format!(
            "[alert]\nto = [\"oncall@example.com\"]\nfrom = \"sentinel@example.com\"\n{extra_alert}\n[alert.smtp]\nhost = \"127.0.0.1\"\nport = {port}\ntls = \"none\"\n{}{extra_smtp}\n",
            if extra_smtp.contains("timeout") { "" } else { "timeout = \"5s\"\n" }
        ),
    )
    .unwrap();
    p
}

fn test_email(config: &Path) -> (Option<i32>, String, String) {
    let out = run(bin().arg("--config").arg(config).arg("test-email"), None);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The README's `check-config && test-email` right after saving mail
/// settings into a running service's config (first-hour recheck): the
/// service applies the saved file within a moment, and `test-email` waits
/// for that before it says anything of the service. It said "the running
/// service cannot send yet … systemctl restart" when it asked first.
#[test]
fn test_email_right_after_saving_the_config_waits_for_the_service() {
    let journal = tempfile::tempdir().unwrap();
    let smtp = Smtpd::aiosmtpd(&journal.path().join("md"), &[]);
    let mut svc =
        crate::support::Service::new(&format!("directory = \"{}\"", journal.path().display()), "");
    svc.start();
    crate::support::wait_for(
        std::time::Duration::from_secs(20),
        || svc.status()["caught_up"] == true,
        "the service up",
    );
    let mut config = std::fs::read_to_string(svc.config()).unwrap();
    config.push_str(&crate::support::mail_to(smtp.port, ""));
    std::fs::write(svc.config(), config).unwrap();
    let (code, out, err) = test_email(&svc.config());
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("test alert sent"), "{out}");
    assert!(!out.contains("cannot send yet"), "{out}\n{}", svc.log());
    assert_eq!(smtp.mails().len(), 1);
}

#[test]
fn test_email_plain_and_refused() {
    let dir = tempfile::tempdir().unwrap();
    let smtp = Smtpd::aiosmtpd(&dir.path().join("md"), &[]);
    let cfg = mail_config(smtp.port, dir.path(), "", "");
    let (code, out, err) = test_email(&cfg);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("test alert sent"), "{out}");
    let mails = smtp.mails();
    assert_eq!(mails.len(), 1);
    assert!(
        subject(&mails[0])
            .starts_with("[kubelet-sentinel] test: sample-node: 6 node status retries"),
        "{}",
        subject(&mails[0])
    );
    assert!(mails[0].contains("X-RcptTo: oncall@example.com"));
    assert!(mails[0].contains("Content-Type: text/html"));
    // Who sent it, for on-call; the sample stamped with its own times.
    let uid = rustix::process::getuid().as_raw();
    assert!(mails[0].contains(&format!("(uid {uid})")), "{}", mails[0]);
    assert!(!mails[0].contains("E0101 00:00:00"), "{}", mails[0]);
    // Its footer offers no `show`/`ack` of an incident no history has
    // (first-hour N19); quoted-printable soft breaks undone to look.
    let body = mails[0].replace("=\r\n", "");
    assert!(body.contains("is a sample made for this test"), "{body}");
    assert!(!body.contains("`kubelet-sentinel ack "), "{body}");

    let refusing = Port::closed();
    let closed = mail_config(refusing.port, &dir.path().join("x").tap_mkdir(), "", "");
    let (code, _, err) = test_email(&closed);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("cannot connect to 127.0.0.1:") && err.contains("refused"),
        "{err}"
    );
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}

impl TapMkdir for std::path::PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

#[test]
fn starttls_and_implicit_tls_with_a_throwaway_ca() {
    let (_tls_dir, ca, cert, key) = throwaway_tls();
    let dir = tempfile::tempdir().unwrap();
    let (c, k) = (cert.display().to_string(), key.display().to_string());
    let starttls = Smtpd::aiosmtpd(&dir.path().join("md1"), &["--tlscert", &c, "--tlskey", &k]);
    let smtps = Smtpd::aiosmtpd(
        &dir.path().join("md2"),
        &["--smtpscert", &c, "--smtpskey", &k],
    );
    let ca_line = format!("ca_file = \"{}\"", ca.display());
    // The certificate names localhost: connect by that name, with TLS.
    let tls_config = |port: u16, sub: &str, smtp: &str| {
        let cfg = mail_config(port, &dir.path().join(sub).tap_mkdir(), smtp, "");
        let text = std::fs::read_to_string(&cfg)
            .unwrap()
            .replace("host = \"127.0.0.1\"\n", "host = \"localhost\"\n")
            .replace("tls = \"none\"\n", "");
        std::fs::write(&cfg, text).unwrap();
        cfg
    };

    let (code, _, err) = test_email(&tls_config(
        starttls.port,
        "a",
        &format!("{ca_line}\ntls = \"starttls\""),
    ));
    assert_eq!(code, Some(0), "STARTTLS: {err}");
    assert_eq!(starttls.mails().len(), 1);

    let (code, _, err) = test_email(&tls_config(
        smtps.port,
        "b",
        &format!("{ca_line}\ntls = \"tls\""),
    ));
    assert_eq!(code, Some(0), "implicit TLS: {err}");
    assert_eq!(smtps.mails().len(), 1);

    // Without the CA the certificate is not trusted: a TLS error, said so.
    let (code, _, err) = test_email(&tls_config(starttls.port, "c", "tls = \"starttls\""));
    assert_eq!(code, Some(1));
    assert!(err.contains("TLS with localhost:"), "{err}");
}

#[test]
fn auth_right_and_wrong_password() {
    let dir = tempfile::tempdir().unwrap();
    let smtp = Smtpd::with_auth(&dir.path().join("md"));
    std::fs::write(dir.path().join("good"), "s3cret\n").unwrap();
    std::fs::write(dir.path().join("bad"), "wrong\n").unwrap();
    let login_as = |password: &str| {
        mail_config(
            smtp.port,
            &dir.path().join(format!("cfg-{password}")).tap_mkdir(),
            &format!(
                "username = \"alerts\"\npassword_file = \"{}\"",
                dir.path().join(password).display()
            ),
            "",
        )
    };
    let (code, _, err) = test_email(&login_as("good"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(smtp.mails().len(), 1);
    let (code, _, err) = test_email(&login_as("bad"));
    assert_eq!(code, Some(1));
    assert!(err.contains("rejected the login"), "{err}");
    assert!(
        !err.contains("wrong"),
        "the password must never be printed: {err}"
    );
    assert_eq!(smtp.mails().len(), 1);
    // A relay that offers no login at all (first-hour N24): said so, not
    // "rejected the login".
    let plain = Smtpd::aiosmtpd(&dir.path().join("md-plain"), &[]);
    let cfg = mail_config(
        plain.port,
        &dir.path().join("cfg-plain").tap_mkdir(),
        &format!(
            "username = \"alerts\"\npassword_file = \"{}\"",
            dir.path().join("good").display()
        ),
        "",
    );
    let (code, _, err) = test_email(&cfg);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("offers no login") && !err.contains("rejected the login"),
        "{err}"
    );
}

#[test]
fn a_server_that_never_answers_does_not_stall() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (done, held_until) = std::sync::mpsc::channel::<()>();
    let held = std::thread::spawn(move || {
        // Accept and hold connections without a word, until the test ends.
        let mut conns = Vec::new();
        for c in listener.incoming().take(2) {
            conns.push(c);
        }
        let _ = held_until.recv();
    });
    let dir = tempfile::tempdir().unwrap();
    let cfg = mail_config(port, dir.path(), "timeout = \"1s\"", "");
    let start = Instant::now();
    let (code, _, err) = test_email(&cfg);
    assert_eq!(code, Some(1));
    assert!(err.contains("did not answer"), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    drop(done);
    drop(held);
}

fn refused_line(node: &str) -> String {
    let t = chrono::Utc::now();
    format!(
        r#"E{} {:>7} kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"{node}\": Get \"https://10.0.0.1:6443/api/v1/nodes/{node}?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused""#,
        t.format("%m%d %H:%M:%S%.6f"),
        4242
    )
}

fn mail_service(j: &Journald, port: u16, extra: &str) -> Service {
    mail_service_timeout(j, port, extra, "2s")
}

fn mail_service_timeout(j: &Journald, port: u16, extra: &str, timeout: &str) -> Service {
    Service::new(
        &format!("namespace = \"{}\"\nidentifiers = [\"kubelet\"]", j.name),
        &format!(
            "[alert]\nto = [\"oncall@example.com\"]\ngroup_wait = \"0s\"\nretry_max = \"1s\"\n{extra}\n[alert.smtp]\nhost = \"127.0.0.1\"\nport = {port}\ntls = \"none\"\ntimeout = \"{timeout}\"\n"
        ),
    )
}

#[test]
fn an_outage_mails_once_the_race_never_and_resolution_follows() {
    let j = Journald::start("mail");
    let dir = tempfile::tempdir().unwrap();
    let smtp = Smtpd::aiosmtpd(&dir.path().join("md"), &[]);
    let mut svc = mail_service(&j, smtp.port, "[incidents]\nresolve_after = \"3s\"\n");
    svc.start();
    // The race on one node, a persistent outage on another.
    let now = chrono::Utc::now().format("%m%d %H:%M:%S%.6f");
    j.kubelet(&[
        format!(r#"I{now}    4242 kubelet_node_status.go:75] "Successfully registered node" node="race-1""#),
        format!(r#"E{now}    4242 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"race-1\": node \"race-1\" not found""#),
    ]);
    j.kubelet(&(0..8).map(|_| refused_line("down-1")).collect::<Vec<_>>());
    wait_for(
        Duration::from_secs(10),
        || !smtp.mails().is_empty(),
        "the alert mail",
    );
    let first = subject(&smtp.mails()[0]);
    // Rendered when sent: 6 (the crossing) to 8 retries, as far as the service had read.
    assert!(
        ["6", "7", "8"].iter().any(|n| first.starts_with(&format!(
            "[kubelet-sentinel] down-1: {n} node status retries in"
        ))),
        "{first}"
    );
    assert!(first.ends_with("(api-unreachable)"), "{first}");
    let body = &smtp.mails()[0];
    assert!(body.contains("kubectl get node down-1"), "{body}");
    // Quiet: the resolved notice follows; the race never mails.
    wait_for(
        Duration::from_secs(20),
        || smtp.mails().len() >= 2,
        "the resolved notice",
    );
    assert!(
        subject(&smtp.mails()[1])
            .starts_with("[kubelet-sentinel] resolved: down-1, trouble lasted")
    );
    svc.settled();
    assert_eq!(smtp.mails().len(), 2);
    assert!(smtp.mails().iter().all(|m| !m.contains("race-1")));
    let st: serde_json::Value =
        serde_json::from_slice(&svc.query(&["status", "-o", "json"]).stdout).unwrap();
    assert_eq!(st["mails_sent"], 2, "{st}");
    assert_eq!(st["outbox"], 0, "{st}");
    let inc = svc.incidents();
    let down = inc
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["node"] == "down-1")
        .unwrap();
    assert!(down["alerted_at"].is_string(), "{down}");
    // A restart remembers the last delivery (first-hour N22: `status`
    // said `last_delivery -` a minute after a mail went out).
    let before = st["last_delivery"].clone();
    assert!(
        before
            .as_str()
            .is_some_and(|s| s.starts_with("delivered to")),
        "{st}"
    );
    assert_eq!(svc.signal("TERM"), Some(0));
    svc.start();
    let st: serde_json::Value =
        serde_json::from_slice(&svc.query(&["status", "-o", "json"]).stdout).unwrap();
    assert_eq!(st["last_delivery"], before, "{st}");
    assert!(st["last_delivery_at"].is_string(), "{st}");
}

#[test]
fn smtp_outage_and_a_restart_lose_no_alert() {
    let j = Journald::start("outage");
    let dir = tempfile::tempdir().unwrap();
    let port = Port::closed();
    let mut svc = mail_service(&j, port.port, "[incidents]\nresolve_after = \"1h\"\n");
    svc.start();
    let outbox = |svc: &Service| -> u64 {
        let st: serde_json::Value =
            serde_json::from_slice(&svc.query(&["status", "-o", "json"]).stdout).unwrap();
        st["outbox"].as_u64().unwrap_or(0)
    };
    // SMTP is down while three incidents cross the threshold.
    j.kubelet(&(0..6).map(|_| refused_line("out-1")).collect::<Vec<_>>());
    wait_for(
        Duration::from_secs(10),
        || outbox(&svc) == 1,
        "the first alert queued",
    );
    j.kubelet(&(0..6).map(|_| refused_line("out-2")).collect::<Vec<_>>());
    wait_for(
        Duration::from_secs(10),
        || outbox(&svc) == 2,
        "the second alert queued",
    );
    // The service restarts in between; the outbox is in the store.
    assert_eq!(svc.signal("TERM"), Some(0));
    svc.start();
    assert_eq!(outbox(&svc), 2);
    j.kubelet(&(0..6).map(|_| refused_line("out-3")).collect::<Vec<_>>());
    wait_for(
        Duration::from_secs(10),
        || outbox(&svc) == 3,
        "the third alert queued",
    );
    let st: serde_json::Value =
        serde_json::from_slice(&svc.query(&["status", "-o", "json"]).stdout).unwrap();
    assert!(
        st["last_delivery"]
            .as_str()
            .is_some_and(|d| d.contains("cannot connect")),
        "{st}"
    );
    // SMTP is back: every alert arrives, oldest first.
    let smtp = Smtpd::on(port, &dir.path().join("md"), &[]);
    wait_for(
        Duration::from_secs(20),
        || smtp.mails().len() >= 3,
        "all three alerts",
    );
    let subjects: Vec<String> = smtp.mails().iter().map(|m| subject(m)).collect();
    for (n, s) in subjects.iter().enumerate() {
        assert!(
            s.starts_with(&format!("[kubelet-sentinel] out-{}:", n + 1)),
            "{subjects:?}"
        );
    }
    // The server has the mail a moment before the service records it.
    wait_for(
        Duration::from_secs(10),
        || outbox(&svc) == 0,
        "the outbox emptied",
    );
    svc.settled();
    assert_eq!(smtp.mails().len(), 3, "no duplicates");
}

#[test]
fn a_slow_server_gets_the_mail_once() {
    // Every reply within the 3 s step timeout, the whole conversation
    // longer than three of them: 0.1.0 sent it again forever.
    let j = Journald::start("slow");
    let dir = tempfile::tempdir().unwrap();
    let bad = BadSmtp::start("slow", 2.0, &dir.path().join("bad"));
    let mut svc = mail_service_timeout(&j, bad.port, "[incidents]\nresolve_after = \"1h\"\n", "3s");
    svc.start();
    j.kubelet(&(0..6).map(|_| refused_line("slow-1")).collect::<Vec<_>>());
    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for(
            Duration::from_secs(60),
            || svc.status()["mails_sent"] == 1,
            "the delivery",
        );
    }));
    let st = svc.status();
    assert!(done.is_ok(), "{st}\n{}", svc.log());
    assert_eq!(st["outbox"], 0, "{st}");
    assert_eq!(st["mails_failed"], 0, "{st}");
    assert_eq!(bad.received(), 1);
}

#[test]
fn a_reply_line_that_never_ends_costs_bounded_memory() {
    let j = Journald::start("endless");
    let dir = tempfile::tempdir().unwrap();
    let bad = BadSmtp::start("endless", 0.0, &dir.path().join("bad"));
    let port = bad.port;
    let mut svc = mail_service_timeout(&j, port, "[incidents]\nresolve_after = \"1h\"\n", "5s");
    svc.start();
    j.kubelet(
        &(0..6)
            .map(|_| refused_line("endless-1"))
            .collect::<Vec<_>>(),
    );
    let mut peak = 0;
    wait_for(
        Duration::from_secs(60),
        || {
            peak = peak.max(svc.rss_kib());
            svc.status()["mails_failed"].as_u64().unwrap_or(0) >= 3
        },
        "three failed attempts",
    );
    let st = svc.status();
    eprintln!("peak RSS {peak} KiB; {}", st["last_delivery"]);
    assert!(
        st["last_delivery"]
            .as_str()
            .unwrap_or("")
            .contains("broke off: network error: the server sent more than"),
        "{st}"
    );
    // 0.1.0 grew by about 230 MB a second here.
    assert!(peak < 128 * 1024, "RSS {peak} KiB");
    // A sane server on the same port: the outbox drains.
    let smtp = Smtpd::on(bad.stop(), &dir.path().join("md"), &[]);
    wait_for(
        Duration::from_secs(30),
        || smtp.mails().len() == 1,
        "the alert from a sane server",
    );
    wait_for(
        Duration::from_secs(10),
        || svc.status()["outbox"] == 0,
        "an empty outbox",
    );
}

#[test]
fn a_server_that_never_confirms_gets_a_bounded_number_of_copies() {
    // The server takes the message and never says 250: each attempt may
    // have delivered it. Retried at most three times, counted, then dropped.
    let j = Journald::start("hang");
    let dir = tempfile::tempdir().unwrap();
    let bad = BadSmtp::start("hang", 0.0, &dir.path().join("bad"));
    let mut svc = mail_service_timeout(&j, bad.port, "[incidents]\nresolve_after = \"1h\"\n", "1s");
    svc.start();
    j.kubelet(&(0..6).map(|_| refused_line("hang-1")).collect::<Vec<_>>());
    wait_for(
        Duration::from_secs(60),
        || {
            let st = svc.status();
            st["outbox"] == 0 && st["mails_sent"] == 1
        },
        "the alert given up as probably delivered",
    );
    let st = svc.status();
    assert_eq!(st["deliveries"][0]["in_doubt"], 3, "{st}");
    assert_eq!(bad.received(), 3);
    let metrics = String::from_utf8(svc.query(&["status", "-o", "json"]).stdout).unwrap();
    assert!(metrics.contains("probably delivered"), "{metrics}");
}

#[test]
fn a_stop_during_a_hung_delivery_is_quick_and_loses_nothing() {
    let j = Journald::start("stophang");
    let dir = tempfile::tempdir().unwrap();
    let bad = BadSmtp::start("hang", 0.0, &dir.path().join("bad"));
    let mut svc =
        mail_service_timeout(&j, bad.port, "[incidents]\nresolve_after = \"1h\"\n", "30s");
    svc.start();
    j.kubelet(&(0..6).map(|_| refused_line("stop-1")).collect::<Vec<_>>());
    wait_for(
        Duration::from_secs(30),
        || bad.received() == 1,
        "the delivery in flight",
    );
    let start = Instant::now();
    assert_eq!(svc.signal("TERM"), Some(0));
    let took = start.elapsed();
    eprintln!("stopped in {took:?} during a delivery bounded by 30 s steps");
    assert!(took < Duration::from_secs(10), "{took:?}");
    // The alert is still in the outbox: at least once.
    let st: serde_json::Value =
        serde_json::from_slice(&svc.query(&["status", "-o", "json"]).stdout).unwrap();
    assert_eq!(st["outbox"], 1, "{st}");
}

#[test]
fn a_thousand_nodes_make_one_small_mail_built_in_linear_time() {
    let mut lines = Vec::new();
    for n in 0..1000 {
        let host: &'static str = Box::leak(format!("big-{n:04}").into_boxed_str());
        lines.extend(outage(host, host, 2, n));
    }
    let all = incidents(&lines, 30_000);
    assert_eq!(all.len(), 1000);
    let refs: Vec<&Incident> = all.iter().collect();
    let t = Instant::now();
    let r = render(&refs, AlertKind::Opened, &Settings::default());
    let built = t.elapsed();
    assert!(
        r.subject
            .starts_with("[kubelet-sentinel] big-0000, big-0001, big-0002 +997 more: ")
            && r.subject
                .ends_with("node status retries against 10.0.0.10:6443 (api-unreachable)"),
        "{}",
        r.subject
    );
    assert!(
        r.text
            .starts_with("1000 nodes at once against one API endpoint, 10.0.0.10:6443")
    );
    let size = r.text.len() + r.html.len();
    println!("1000-node group mail: {size} bytes (text and HTML) in {built:?}");
    assert!(size < 400_000, "{size} bytes");
    assert!(
        r.text
            .contains("… and 900 more nodes (all 1000 by cause: api-unreachable 1000)"),
        "{}",
        &r.text[..2000]
    );
    assert!(r.text.contains("The first 10 in full"));
    assert_eq!(r.text.matches("What to check next").count(), 10);
    // Smaller, for a server that refuses the size: one in full, then none.
    let one = FULL.smaller().unwrap();
    let r1 = render_with(&refs, AlertKind::Opened, &Settings::default(), one);
    assert_eq!(r1.text.matches("What to check next").count(), 1);
    let none = one.smaller().unwrap();
    let r0 = render_with(&refs, AlertKind::Opened, &Settings::default(), none);
    assert_eq!(r0.text.matches("What to check next").count(), 0);
    assert!(r0.text.len() < r1.text.len() && r1.text.len() < r.text.len());
    assert_eq!(none.smaller(), None);
}

#[test]
fn a_mail_too_big_for_the_server_goes_shorter_not_again() {
    let j = Journald::start("size");
    let dir = tempfile::tempdir().unwrap();
    // A server that takes at most 40 KB a message (Postfix-style 552 past it).
    let smtp = Smtpd::aiosmtpd(&dir.path().join("md"), &["-s", "40000"]);
    let mut svc = mail_service(&j, smtp.port, "group_wait = \"3s\"\n");
    // One group of 30 nodes: ten sections in full are more than 40 KB.
    let text = std::fs::read_to_string(svc.config())
        .unwrap()
        .replace("group_wait = \"0s\"\n", "");
    std::fs::write(svc.config(), text).unwrap();
    svc.start();
    for n in 0..30 {
        let node = format!("sz-{n:02}");
        for _ in 0..7 {
            j.kubelet(&[refused_line(&node)]);
        }
    }
    // At the same time, a lone node with another problem: a page of its own.
    let t = chrono::Utc::now().format("%m%d %H:%M:%S%.6f");
    for _ in 0..7 {
        j.kubelet(&[format!(
            r#"E{t}    4242 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"lone-1\": Unauthorized""#
        )]);
    }
    wait_for(
        Duration::from_secs(30),
        || smtp.mails().len() >= 2,
        "the shortened alert and the lone node's",
    );
    svc.settled();
    let mails = smtp.mails();
    assert_eq!(
        mails.len(),
        2,
        "one page for the outage, one for the lone node"
    );
    let outage = mails
        .iter()
        // One host's 30 nodes: no outage by the rules (one host never is),
        // so worded as the nodes' own (D31).
        .find(|m| subject(m).contains("node status retries against 10.0.0.1:6443"))
        .unwrap_or_else(|| panic!("{:?}", mails.iter().map(|m| subject(m)).collect::<Vec<_>>()));
    assert!(outage.len() < 40_000, "{}", outage.len());
    assert!(subject(outage).contains("+27 more"), "{}", subject(outage));
    assert!(
        mails
            .iter()
            .any(|m| subject(m).starts_with("[kubelet-sentinel] lone-1: "))
    );
    let log = svc.log();
    assert!(
        log.contains("refused the mail's size") && log.contains("sending it shorter"),
        "{log}"
    );
    assert_eq!(svc.signal("TERM"), Some(0));
}

/// A service on `j` reading the kubelet's lines and systemd's (which come
/// from this process, not PID 1: read by their identifier, as saved logs
/// are), mailing to `port`.
fn unit_mail_service(j: &Journald, port: u16, resolve_after: &str, group_wait: &str) -> Service {
    Service::new(
        &format!(
            "namespace = \"{}\"\nidentifiers = [\"kubelet\", \"systemd\"]",
            j.name
        ),
        &format!(
            "[incidents]\nresolve_after = \"{resolve_after}\"\n[alert]\nto = [\"oncall@example.com\"]\ngroup_wait = \"{group_wait}\"\nretry_max = \"1s\"\n[alert.smtp]\nhost = \"127.0.0.1\"\nport = {port}\ntls = \"none\"\ntimeout = \"2s\"\n"
        ),
    )
}

/// Issue 20: a kubelet that dies on swap at every start, restarted by
/// systemd, through a real journald: one kubelet-down alert naming the
/// cause and the restarts, then its resolved notice once it stays up.
#[test]
fn a_crash_looping_kubelet_mails_its_cause_and_restarts() {
    let j = Journald::start("down");
    let dir = tempfile::tempdir().unwrap();
    let smtp = Smtpd::aiosmtpd(&dir.path().join("md"), &[]);
    let mut svc = unit_mail_service(&j, smtp.port, "3s", "0s");
    svc.start();
    let systemd = |m: &str| {
        j.send(&[
            ("MESSAGE", m),
            ("SYSLOG_IDENTIFIER", "systemd"),
            ("UNIT", "kubelet.service"),
        ]);
    };
    for k in 1..=6 {
        systemd("Started kubelet.service - kubelet: The Kubernetes Node Agent.");
        let now = chrono::Utc::now().format("%m%d %H:%M:%S%.6f");
        j.kubelet(&[format!(
            r#"E{now}    4242 run.go:74] "command failed" err="failed to run Kubelet: running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false.""#
        )]);
        systemd("kubelet.service: Main process exited, code=exited, status=1/FAILURE");
        systemd("kubelet.service: Failed with result 'exit-code'.");
        systemd(&format!(
            "kubelet.service: Scheduled restart job, restart counter is at {k}."
        ));
        systemd("Stopped kubelet.service - kubelet: The Kubernetes Node Agent.");
    }
    systemd("Started kubelet.service - kubelet: The Kubernetes Node Agent.");
    wait_for(
        Duration::from_secs(10),
        || !smtp.mails().is_empty(),
        "the kubelet-down alert",
    );
    let first = subject(&smtp.mails()[0]);
    assert!(first.contains(": kubelet crash-looping, "), "{first}");
    assert!(first.ends_with("(swap)"), "{first}");
    let body = &smtp.mails()[0];
    assert!(
        body.contains("running with swap on is not supported"),
        "{body}"
    );
    assert!(body.contains("swapon --show"), "{body}");
    assert!(body.contains("restarted it"), "{body}");
    // It stays up: resolved.
    wait_for(
        Duration::from_secs(20),
        || smtp.mails().len() >= 2,
        "the resolved notice",
    );
    assert!(
        subject(&smtp.mails()[1]).starts_with("[kubelet-sentinel] resolved: "),
        "{}",
        subject(&smtp.mails()[1])
    );
    let inc = svc.incidents();
    let down: Vec<&serde_json::Value> = inc
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "kubelet-down")
        .collect();
    assert_eq!(down.len(), 1, "{inc:#}");
    assert_eq!(down[0]["restarts"], 6, "{inc:#}");
    assert_eq!(down[0]["verdict"], "crash-loop", "{inc:#}");
    assert_eq!(down[0]["status"], "resolved", "{inc:#}");
}

/// The first-hour recheck's n1: its status retries, then its kubelet
/// crash-looping seconds later, within `group_wait`: one mail about n1
/// (the design: alerts raised within `group_wait` are one email), not one
/// per kind.
#[test]
fn one_nodes_retries_and_crash_loop_within_group_wait_are_one_mail() {
    let j = Journald::start("n1both");
    let dir = tempfile::tempdir().unwrap();
    let smtp = Smtpd::aiosmtpd(&dir.path().join("md"), &[]);
    let mut svc = unit_mail_service(&j, smtp.port, "60s", "5s");
    svc.start();
    let now = chrono::Utc::now().format("%m%d %H:%M:%S%.6f");
    j.kubelet(&[format!(
        r#"I{now}    4242 kubelet_node_status.go:75] "Successfully registered node" node="n1""#
    )]);
    j.kubelet(&(0..8).map(|_| refused_line("n1")).collect::<Vec<_>>());
    let systemd = |m: &str| {
        j.send(&[
            ("MESSAGE", m),
            ("SYSLOG_IDENTIFIER", "systemd"),
            ("UNIT", "kubelet.service"),
        ]);
    };
    systemd("kubelet.service: Main process exited, code=exited, status=1/FAILURE");
    for k in 1..=5 {
        systemd(&format!(
            "kubelet.service: Scheduled restart job, restart counter is at {k}."
        ));
        systemd("Started kubelet.service - kubelet: The Kubernetes Node Agent.");
        let now = chrono::Utc::now().format("%m%d %H:%M:%S%.6f");
        j.kubelet(&[format!(
            r#"E{now}    4243 run.go:74] "command failed" err="failed to run Kubelet: running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false.""#
        )]);
        systemd("kubelet.service: Main process exited, code=exited, status=1/FAILURE");
    }
    wait_for(
        Duration::from_secs(20),
        || !smtp.mails().is_empty(),
        "the alert mail",
    );
    svc.settled();
    let subjects = smtp.subjects();
    assert_eq!(subjects.len(), 1, "{subjects:#?}");
    assert_eq!(
        subjects[0],
        "[kubelet-sentinel] n1: 2 incidents (api-unreachable, swap)"
    );
    let body = &smtp.mails()[0];
    assert!(
        body.contains("2 incidents of node n1 raised together"),
        "{body}"
    );
    assert!(
        body.contains("running with swap on is not supported"),
        "{body}"
    );
    assert!(body.contains("connection refused"), "{body}");
}

/// Issue 19: a collector where four hosts lose one API endpoint within
/// seconds and one fails alone against another: one mail for the outage,
/// naming the endpoint, the cause and the count and listing the nodes,
/// and one for the lone node; none pages the four one by one, even with
/// `group_wait = "0s"`.
#[test]
fn an_endpoint_outage_is_one_mail_naming_the_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let journals = dir.path().join("remote");
    std::fs::create_dir(&journals).unwrap();
    crate::collector::outage_fleet(&journals, 600 * kubelet_sentinel::SECOND);
    let smtp = Smtpd::aiosmtpd(&dir.path().join("md"), &[]);
    let svc = Service::new(
        &format!("directory = \"{}\"", journals.display()),
        &crate::support::mail_to(smtp.port, "group_wait = \"0s\"\nretry_max = \"1s\"\n"),
    );
    let out = svc.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for(
        Duration::from_secs(10),
        || smtp.mails().len() >= 2,
        "the mails",
    );
    let mails = smtp.mails();
    let subjects: Vec<String> = mails.iter().map(|m| subject(m)).collect();
    let outage: Vec<&String> = mails
        .iter()
        .filter(|m| subject(m).contains("] 10.0.0.1:6443 unreachable from 4 nodes"))
        .collect();
    assert_eq!(outage.len(), 1, "{subjects:#?}");
    assert!(
        subject(outage[0]).contains("api-unreachable"),
        "{subjects:#?}"
    );
    for n in 0..4 {
        assert!(outage[0].contains(&format!("ep-{n}")), "{}", outage[0]);
        assert!(
            !subjects.iter().any(|s| s.contains(&format!("] ep-{n}"))),
            "ep-{n} paged on its own: {subjects:#?}"
        );
    }
    assert!(
        subjects
            .iter()
            .any(|s| s.starts_with("[kubelet-sentinel] lone-0: ")),
        "{subjects:#?}"
    );
    // The outage's end and the lone node's page: nothing else.
    assert!(mails.len() <= 3, "{subjects:#?}");
}
