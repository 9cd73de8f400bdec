//! A store written by the last release (kubelet-sentinel 0.1.0 at
//! 502b51b, schema 2: one flat incident for every kind) opens with this
//! build, is moved to the current schema, and answers the same, field for
//! field (every field it answered, with its value; fields added since may
//! be there too); the service then resumes on the same journal and changes
//! nothing.
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
    without_words(serde_json::from_slice(&out.stdout).unwrap())
}

fn expected(name: &str) -> serde_json::Value {
    let text = std::fs::read(fixture(&format!("store-0.1.0/{name}"))).unwrap();
    without_words(serde_json::from_slice(&text).unwrap())
}

/// The answers without their `diagnosis`: a paragraph for a person, whose
/// wording a release may improve (it is made from the stored data each
/// time it is shown, never stored); every other field is data and must
/// be the same.
fn without_words(mut v: serde_json::Value) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                if o.contains_key("diagnosis") {
                    o.insert("diagnosis".into(), serde_json::Value::Null);
                }
                o.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// Every field `want` has, `got` has with the same value (the JSON
/// contract adds fields, never renames or changes one); arrays alike,
/// element by element.
fn holds(want: &serde_json::Value, got: &serde_json::Value, at: &str) {
    use serde_json::Value;
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, v) in w {
                let Some(gv) = g.get(k) else {
                    panic!("{at}: {k} is gone");
                };
                holds(v, gv, &format!("{at}.{k}"));
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            assert_eq!(w.len(), g.len(), "{at}: {g:#?}");
            for (n, (a, b)) in w.iter().zip(g).enumerate() {
                holds(a, b, &format!("{at}[{n}]"));
            }
        }
        _ => assert_eq!(want, got, "{at}"),
    }
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
        holds(
            &want,
            &ask(&config, &["incidents", "--utc", "-o", "json"]),
            &format!("incidents, {when}"),
        );
        holds(
            &expected("nodes.json"),
            &ask(&config, &["nodes", "-o", "json"]),
            &format!("nodes, {when}"),
        );
        for id in &ids {
            holds(
                &expected(&format!("show-{id}.json")),
                &ask(&config, &["show", id, "-o", "json"]),
                &format!("show {id}, {when}"),
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
