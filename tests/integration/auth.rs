//! Who may do what on the query socket (README "Who may do what"), with
//! real users against the running service: the CLI run as a user that is
//! not in the socket's group, as a member of it, as a member of
//! `[api] admin_group`, and as root. The author recorded is the peer's
//! user name, whatever the request body says.

use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Output};

use crate::support::{Service, bin, run};

/// Users and a group made for one test, removed when it ends.
struct Accounts {
    users: Vec<String>,
    group: String,
}

impl Accounts {
    fn new() -> Self {
        let tag = format!("kst{}", std::process::id());
        let group = format!("{tag}-adm");
        let ok = |out: Output, what: &str| {
            assert!(
                out.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        ok(run(Command::new("groupadd").arg(&group), None), "groupadd");
        let mut me = Self {
            users: Vec::new(),
            group,
        };
        for (suffix, groups) in [
            ("out", String::new()),
            ("jrn", "systemd-journal".to_string()),
            ("adm", format!("systemd-journal,{}", me.group)),
        ] {
            let name = format!("{tag}-{suffix}");
            let mut cmd = Command::new("useradd");
            cmd.args(["-M", "-N", "-s", "/usr/sbin/nologin"]);
            if !groups.is_empty() {
                cmd.args(["-G", &groups]);
            }
            ok(run(cmd.arg(&name), None), "useradd");
            me.users.push(name);
        }
        me
    }

    fn outsider(&self) -> &str {
        &self.users[0]
    }
    fn reader(&self) -> &str {
        &self.users[1]
    }
    fn admin(&self) -> &str {
        &self.users[2]
    }
}

impl Drop for Accounts {
    fn drop(&mut self) {
        for u in &self.users {
            let _ = run(Command::new("userdel").arg(u), None);
        }
        let _ = run(Command::new("groupdel").arg(&self.group), None);
    }
}

fn uid(user: &str) -> String {
    let out = run(Command::new("id").args(["-u", user]), None);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `cmd` run as `user` with the groups `/etc/group` gives it.
fn as_user(user: &str, cmd: &Command) -> Output {
    let gid = run(Command::new("id").args(["-g", user]), None);
    let mut c = Command::new("setpriv");
    c.arg("--reuid")
        .arg(user)
        .arg("--regid")
        .arg(String::from_utf8_lossy(&gid.stdout).trim())
        .arg("--init-groups")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    run(&mut c, None)
}

/// The CLI against the service, as `user` (`None`: root, this process).
fn cli(svc: &Service, user: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = bin();
    cmd.arg("--config").arg(svc.config()).args(args);
    match user {
        Some(u) => as_user(u, &cmd),
        None => run(&mut cmd, None),
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn silences(svc: &Service) -> Vec<serde_json::Value> {
    let out = cli(svc, None, &["silence", "list", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["silences"]
        .as_array()
        .unwrap()
        .clone()
}

/// A POST with a body of our own (what an older or a hostile client
/// sends), as `user`: the status line and body.
fn raw_post(svc: &Service, user: &str, path: &str, body: &str) -> String {
    let sock = svc.dir.path().join("query.sock");
    let mut c = Command::new("curl");
    c.args(["-s", "-i", "--unix-socket"])
        .arg(&sock)
        .args(["-H", "content-type: application/json", "--data", body])
        .arg(format!("http://localhost{path}"));
    let out = as_user(user, &c);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario, in order
fn only_root_and_the_admin_group_change_what_is_delivered_under_their_own_names() {
    let accounts = Accounts::new();
    let journals = tempfile::tempdir().unwrap();
    let mut svc = Service::new(
        &format!("directory = \"{}\"", journals.path().display()),
        "",
    );
    let config = std::fs::read_to_string(svc.config()).unwrap().replacen(
        "[api]\n",
        &format!(
            "[api]\nadmin_group = \"{}\"\nmetrics_listen = \"127.0.0.1:0\"\n",
            accounts.group
        ),
        1,
    );
    std::fs::write(svc.config(), config).unwrap();
    // The users reach the socket and read the config; the socket's own
    // mode (0660, group systemd-journal) is what lets them in or not.
    for p in [svc.dir.path(), journals.path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(svc.config(), std::fs::Permissions::from_mode(0o644)).unwrap();
    svc.start();
    let port = svc.metrics_port();

    // Not in the socket's group: cannot even read.
    let out = cli(&svc, Some(accounts.outsider()), &["status"]);
    assert!(
        !out.status.success() && text(&out).contains("permission denied on the query socket"),
        "{}",
        text(&out)
    );
    let out = cli(
        &svc,
        Some(accounts.outsider()),
        &[
            "silence",
            "add",
            "--node",
            "*",
            "--for",
            "1h",
            "--comment",
            "x",
        ],
    );
    assert!(!out.status.success(), "{}", text(&out));

    // In the socket's group: reads, and is refused every change, told why.
    let reader = accounts.reader();
    let out = cli(&svc, Some(reader), &["status"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let refusals = [
        (
            vec![
                "silence",
                "add",
                "--node",
                "*",
                "--for",
                "31d",
                "--comment",
                "x",
            ],
            "silences",
        ),
        (
            vec!["ack", "0123456789ab", "--comment", "mine"],
            "acknowledgements",
        ),
        (vec!["reload"], "reloads"),
    ];
    for (args, what) in &refusals {
        let out = cli(&svc, Some(reader), args);
        assert_eq!(out.status.code(), Some(77), "{args:?}: {}", text(&out));
        let want = format!(
            "{what} need root or membership of group {}; you are uid {} ({reader})",
            accounts.group,
            uid(reader)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&want),
            "{args:?}: want {want:?}\n{}",
            text(&out)
        );
    }
    // The body's `by` opens nothing either.
    let r = raw_post(
        &svc,
        reader,
        "/silences",
        r#"{"node":"*","seconds":2678400,"by":"root"}"#,
    );
    assert!(r.starts_with("HTTP/1.1 403"), "{r}");
    assert!(silences(&svc).is_empty());

    // Root may; the author is root.
    let out = cli(
        &svc,
        None,
        &[
            "silence",
            "add",
            "--node",
            "db-*",
            "--for",
            "1h",
            "--comment",
            "by root",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let by_root = silences(&svc);
    assert_eq!(by_root.len(), 1);
    assert_eq!(by_root[0]["created_by"], "root");
    let root_id = by_root[0]["id"].as_str().unwrap().to_string();
    assert_eq!(root_id.len(), 16, "64-bit ids: {root_id}");

    // An admin_group member may, under their own name whatever the body
    // claims; and expiring root's silence records who did it.
    let admin = accounts.admin();
    let out = cli(
        &svc,
        Some(admin),
        &[
            "silence",
            "add",
            "--node",
            "worker-*",
            "--for",
            "2h",
            "--comment",
            "upgrade",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("(by {admin})")),
        "{}",
        text(&out)
    );
    let r = raw_post(
        &svc,
        admin,
        "/silences",
        r#"{"node":"edge-*","seconds":60,"by":"root"}"#,
    );
    assert!(r.starts_with("HTTP/1.1 201"), "{r}");
    let out = cli(&svc, Some(admin), &["silence", "expire", &root_id[..8]]);
    assert!(out.status.success(), "{}", text(&out));
    let all = silences(&svc);
    let by_id = |node: &str| all.iter().find(|s| s["node"] == node).unwrap().clone();
    assert_eq!(by_id("worker-*")["created_by"], admin);
    assert_eq!(
        by_id("edge-*")["created_by"],
        admin,
        "the body's by is ignored"
    );
    let ended = by_id("db-*");
    assert_eq!(ended["created_by"], "root");
    assert_eq!(ended["expired_by"], admin);
    assert!(ended["expired_at"].is_string(), "{ended}");
    let table = cli(&svc, Some(reader), &["silence", "list"]);
    assert!(
        text(&table).contains(&format!("expired by {admin}")),
        "{}",
        text(&table)
    );
    // An acknowledgement passes the check (there is no such incident).
    let out = cli(&svc, Some(admin), &["ack", "0123456789ab"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no open incident"), "{}", text(&out));
    let out = cli(&svc, Some(admin), &["reload"]);
    assert!(out.status.success(), "{}", text(&out));

    // TCP serves /metrics and nothing else, to anyone.
    let tcp = |method: &str, path: &str| {
        let out = run(
            Command::new("curl")
                .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", method])
                .arg(format!("http://127.0.0.1:{port}{path}")),
            None,
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(tcp("GET", "/metrics"), "200");
    for (m, p) in [
        ("GET", "/status"),
        ("GET", "/silences"),
        ("POST", "/silences"),
        ("POST", "/reload"),
        ("GET", "/incidents"),
    ] {
        assert_eq!(tcp(m, p), "404", "{m} {p} over TCP");
    }
    assert_eq!(svc.signal("TERM"), Some(0));
}

/// Issue 28: users and groups through the name service (NSS), not read
/// from `/etc/group` by hand: an `admin_group` that only another source
/// knows lets its member change deliveries, and the author recorded is
/// that user's name from the same source. The source is Debian's
/// libnss-extrausers, in a mount namespace of the service's own whose
/// `/etc/nsswitch.conf` names it (the host's files are untouched); the
/// user and both groups exist nowhere else.
#[test]
fn an_admin_group_only_the_name_service_knows_counts() {
    assert!(
        [
            "/usr/lib/libnss_extrausers.so.2",
            "/lib/x86_64-linux-gnu/libnss_extrausers.so.2"
        ]
        .iter()
        .any(|p| std::path::Path::new(p).exists()),
        "libnss-extrausers is not installed (.ci/deps installs it)"
    );
    let tag = format!("kst{}", std::process::id());
    let (uid, gid, ops_gid) = {
        let base = 61_000 + std::process::id() % 2000 * 3;
        (base, base + 1, base + 2)
    };
    let (user, group) = (format!("{tag}-ldap"), format!("{tag}-ops"));
    for (db, key) in [("passwd", uid.to_string()), ("group", group.clone())] {
        let out = run(Command::new("getent").args([db, &key]), None);
        assert!(
            !out.status.success(),
            "{db} {key} exists on this machine already"
        );
    }
    let nss = tempfile::tempdir().unwrap();
    std::fs::set_permissions(nss.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        nss.path().join("nsswitch.conf"),
        "passwd: files extrausers\ngroup: files extrausers\nshadow: files\n",
    )
    .unwrap();
    let extra = nss.path().join("extrausers");
    std::fs::create_dir(&extra).unwrap();
    std::fs::write(
        extra.join("passwd"),
        format!("{user}:x:{uid}:{gid}::/nonexistent:/usr/sbin/nologin\n"),
    )
    .unwrap();
    std::fs::write(
        extra.join("group"),
        format!("{tag}-prim:x:{gid}:\n{group}:x:{ops_gid}:{user}\n"),
    )
    .unwrap();

    let journals = tempfile::tempdir().unwrap();
    let mut svc = Service::new(
        &format!("directory = \"{}\"", journals.path().display()),
        "",
    );
    let config = std::fs::read_to_string(svc.config()).unwrap().replacen(
        "[api]\n",
        &format!("[api]\nadmin_group = \"{group}\"\n"),
        1,
    );
    std::fs::write(svc.config(), config).unwrap();
    for p in [svc.dir.path(), journals.path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(svc.config(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let script = format!(
        "mount --bind {n}/nsswitch.conf /etc/nsswitch.conf && mount --bind {n}/extrausers \
         /var/lib/extrausers && exec \"$0\" \"$@\"",
        n = nss.path().display()
    );
    svc.start_through(&[
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        &script,
    ]);

    // The user, outside: in systemd-journal (to reach the socket) and in
    // nothing the service could learn from the connection itself.
    let journal_gid = {
        let out = run(
            Command::new("getent").args(["group", "systemd-journal"]),
            None,
        );
        String::from_utf8_lossy(&out.stdout)
            .split(':')
            .nth(2)
            .unwrap()
            .to_string()
    };
    let mut add = Command::new("setpriv");
    add.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={gid}"))
        .arg(format!("--groups={journal_gid}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_kubelet-sentinel"))
        .arg("--config")
        .arg(svc.config())
        .args([
            "silence",
            "add",
            "--node",
            "nss-*",
            "--for",
            "1h",
            "--comment",
            "nss",
        ]);
    let out = run(&mut add, None);
    assert!(out.status.success(), "{}\n{}", text(&out), svc.log());
    let list = silences(&svc);
    let ours = list.iter().find(|s| s["node"] == "nss-*").unwrap();
    assert_eq!(ours["created_by"], user.as_str(), "{ours}");
    assert_eq!(svc.signal("TERM"), Some(0));
}
