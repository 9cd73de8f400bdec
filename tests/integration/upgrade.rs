//! A store written by the last release (kubelet-sentinel 0.1.0 at
//! 502b51b, schema 2: one flat incident for every kind) opens with this
//! build, is moved to the current schema, and answers the same, field for
//! field; the service then resumes on the same journal and changes nothing.
//!
//! `tests/fixtures/store-0.1.0/` holds that release's store and the
//! collector journal it read (seven hosts: an endpoint outage of three
//! nodes, a lone auth node, a start-up race, a crash loop, a silent host;
//! one incident acknowledged), and what its `incidents`, `show` and `nodes`
//! printed as JSON. The journal's path is part of the store's record of its
//! source, so both live where they were written: `/tmp/ks-store-0.1.0`.

use std::path::Path;
use std::process::Command;

use crate::support::{bin, fixture, run};

const HOME: &str = "/tmp/ks-store-0.1.0";

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn expected(name: &str) -> serde_json::Value {
    let text = std::fs::read(fixture(&format!("store-0.1.0/{name}"))).unwrap();
    serde_json::from_slice(&text).unwrap()
}

fn ask(config: &Path, args: &[&str]) -> serde_json::Value {
    json(&run(bin().arg("--config").arg(config).args(args), None))
}

#[test]
fn a_store_of_the_last_release_opens_and_answers_the_same() {
    let home = Path::new(HOME);
    let _ = std::fs::remove_dir_all(home);
    std::fs::create_dir_all(home.join("mail")).unwrap();
    for t in ["store.tar.gz", "journal.tar.gz"] {
        let out = run(
            Command::new("tar")
                .arg("-xzf")
                .arg(fixture(&format!("store-0.1.0/{t}")))
                .arg("-C")
                .arg(home),
            None,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let config = home.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[journal]\ndirectory = \"{HOME}/journal\"\nstart_at = \"all\"\n\
             [store]\npath = \"{HOME}/store\"\n[api]\nsocket = \"{HOME}/query.sock\"\n\
             [incidents]\nretention = \"36500d\"\n\
             [alert]\nto = [\"oncall@example.com\"]\ntransport = \"file\"\nmax_age = \"3650d\"\n\
             [alert.file]\ndirectory = \"{HOME}/mail\"\n\
             [fleet]\nsilent_incidents = true\nsilent_after = \"10m\"\n"
        ),
    )
    .unwrap();
    let want = expected("incidents.json");
    let ids: Vec<String> = want["incidents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 8, "the fixture holds every kind");
    let check = |when: &str| {
        assert_eq!(
            ask(&config, &["incidents", "--utc", "-o", "json"]),
            want,
            "incidents, {when}"
        );
        assert_eq!(
            ask(&config, &["nodes", "-o", "json"]),
            expected("nodes.json"),
            "nodes, {when}"
        );
        for id in &ids {
            assert_eq!(
                ask(&config, &["show", id, "-o", "json"]),
                expected(&format!("show-{id}.json")),
                "show {id}, {when}"
            );
        }
    };
    check("opened by this build");
    // The service resumes where that release stopped: the same journal,
    // nothing new in it, nothing changes (and nothing is mailed again).
    let out = run(
        bin().arg("--config").arg(&config).args(["run", "--once"]),
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check("after run --once");
    let mails = std::fs::read_dir(home.join("mail")).unwrap().count();
    assert_eq!(mails, 0, "nothing mailed again");
    let _ = std::fs::remove_dir_all(home);
}
