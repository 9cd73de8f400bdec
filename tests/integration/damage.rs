//! Damaged journal files never lose entries silently (D4): flipped bits in
//! entry objects or the entry array make libsystemd skip entries or end its
//! walk early without a word; every such copy is read in full or named with
//! what it lost (exit 4, and counted by the service).

use std::path::{Path, PathBuf};

use crate::support::{Service, bin, export_entry, journal_remote, journalctl, run};

const T0: u64 = 1_752_596_690_000_000;

/// A journal-remote file of 300 entries: two thirds the kubelet's retries
/// for seven nodes, a third containerd's.
fn journal(dir: &Path) -> PathBuf {
    let mut out = Vec::new();
    for i in 0..300u64 {
        let at = (T0 + i * 1_000_000).to_string();
        if i % 3 == 0 {
            let msg = format!("other {i}");
            export_entry(
                &mut out,
                &[
                    ("__REALTIME_TIMESTAMP", &at),
                    ("_HOSTNAME", "h1"),
                    ("_SYSTEMD_UNIT", "containerd.service"),
                    ("SYSLOG_IDENTIFIER", "containerd"),
                    ("MESSAGE", &msg),
                ],
            );
        } else {
            let msg = format!(
                "E0715 16:24:50.198000    2425 kubelet_node_status.go:535] \"Error updating node \
                 status, will retry\" err=\"error getting node \\\"w{}\\\": Get \
                 \\\"https://10.0.0.1:6443/api/v1/nodes/w1\\\": dial tcp 10.0.0.1:6443: connect: \
                 connection refused\"",
                i % 7
            );
            export_entry(
                &mut out,
                &[
                    ("__REALTIME_TIMESTAMP", &at),
                    ("_HOSTNAME", "h1"),
                    ("_SYSTEMD_UNIT", "kubelet.service"),
                    ("SYSLOG_IDENTIFIER", "kubelet"),
                    ("_PID", "2425"),
                    ("MESSAGE", &msg),
                ],
            );
        }
    }
    let file = dir.join("remote-h1.journal");
    journal_remote(&out, &file);
    file
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The entry objects (offset, size) and entry array objects (offset, size)
/// of a file, along the header's entry array chain.
/// An object's offset and size.
type Spans = Vec<(usize, usize)>;

fn objects(b: &[u8]) -> (Spans, Spans) {
    let compact = u32::from_le_bytes(b[12..16].try_into().unwrap()) & (1 << 4) != 0;
    let n = le64(b, 152) as usize;
    let item = if compact { 4 } else { 8 };
    let (mut entries, mut arrays) = (Vec::new(), Vec::new());
    let mut at = le64(b, 176) as usize;
    while at != 0 && entries.len() < n {
        let size = le64(b, at + 8) as usize;
        arrays.push((at, size));
        for k in 0..(size - 24) / item {
            let p = at + 24 + k * item;
            let e = if compact {
                u32::from_le_bytes(b[p..p + 4].try_into().unwrap()) as usize
            } else {
                le64(b, p) as usize
            };
            if e != 0 && entries.len() < n {
                entries.push((e, le64(b, e + 8) as usize));
            }
        }
        at = le64(b, at + 16) as usize;
    }
    assert_eq!(entries.len(), n, "the chain holds every entry");
    (entries, arrays)
}

/// A deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

/// `scan -o json` of a path: exit code, stderr, kubelet lines.
fn scan(path: &Path) -> (Option<i32>, String, u64) {
    let out = run(bin().args(["scan", "-q", "-o", "json"]).arg(path), None);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).to_string(),
        v["summary"]["kubelet_lines"].as_u64().unwrap_or(0),
    )
}

#[test]
fn flipped_bits_in_entries_are_read_or_reported() {
    let src = tempfile::tempdir().unwrap();
    let intact_file = journal(src.path());
    let (code, err, intact) = scan(&intact_file);
    assert_eq!(
        (code, intact),
        (Some(0), 200),
        "an intact file says nothing: {err}"
    );
    assert!(err.is_empty(), "{err}");
    let bytes = std::fs::read(&intact_file).unwrap();
    let (entries, arrays) = objects(&bytes);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut lost, mut reported) = (0, 0);
    for copy in 0..30 {
        let mut b = bytes.clone();
        // Three flipped bits, as the attack round did: in entry objects'
        // headers, times and items, or in the entry array.
        for _ in 0..3 {
            let at = if copy % 3 == 2 {
                let (a, size) = arrays[rng.below(arrays.len())];
                a + rng.below(size)
            } else {
                let (e, size) = entries[rng.below(entries.len())];
                e + rng.below(size.min(96))
            };
            b[at] ^= 1 << rng.below(8);
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("remote-h1.journal");
        std::fs::write(&file, &b).unwrap();
        // As a file, and as a collector's directory.
        for target in [&file, &dir.path().to_path_buf()] {
            let (code, err, lines) = scan(target);
            let named = err.contains(&format!("{}: damaged: ", file.display()))
                && err.contains("of the kubelet's entries it records could not be read");
            if lines < intact {
                lost += 1;
                assert!(
                    code == Some(4) && named,
                    "copy {copy} ({}) lost {} entries silently: exit {code:?}, {err}",
                    target.display(),
                    intact - lines
                );
            }
            if named {
                reported += 1;
                assert_eq!(code, Some(4), "{err}");
            }
        }
    }
    assert!(lost > 0, "some copies lose entries to the damage");
    assert!(reported >= lost, "{reported} reported, {lost} lost");
}

/// The service counts what a damaged file lost (`status`'s
/// `entries_missing`) and names it in its log; an intact one counts none.
#[test]
fn the_service_counts_entries_damage_hid() {
    let src = tempfile::tempdir().unwrap();
    let intact_file = journal(src.path());
    let mut b = std::fs::read(&intact_file).unwrap();
    let (entries, _) = objects(&b);
    // The object type of the 11th entry (a kubelet one): libsystemd skips it.
    b[entries[10].0] = 0x7f;
    for (damaged, want) in [(false, 0), (true, 1)] {
        let journals = tempfile::tempdir().unwrap();
        let file = journals.path().join("remote-h1.journal");
        if damaged {
            std::fs::write(&file, &b).unwrap();
        } else {
            std::fs::copy(&intact_file, &file).unwrap();
        }
        let svc = Service::new(
            &format!("directory = \"{}\"", journals.path().display()),
            "",
        );
        let out = svc.run_once();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert_eq!(
            err.contains(&format!("{}: damaged: 1 of the kubelet's", file.display())),
            damaged,
            "{err}"
        );
        let status = svc.query(&["status", "-o", "json"]);
        let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
        assert_eq!(status["entries_missing"], want, "{status:#}");
    }
}

/// The offsets of the items of the entry object at `e` (regular or compact
/// file), each with the payload of the data object it points to.
fn items(b: &[u8], e: usize) -> Vec<(usize, Vec<u8>)> {
    let compact = u32::from_le_bytes(b[12..16].try_into().unwrap()) & (1 << 4) != 0;
    let size = le64(b, e + 8) as usize;
    let (width, payload_at) = if compact { (4, 72) } else { (16, 64) };
    (e + 64..e + size)
        .step_by(width)
        .map(|p| {
            let d = if compact {
                u32::from_le_bytes(b[p..p + 4].try_into().unwrap()) as usize
            } else {
                le64(b, p) as usize
            };
            let end = d + le64(b, d + 8) as usize;
            (p, b[d + payload_at..end].to_vec())
        })
        .collect()
}

/// Issue 39 (D4): a flipped bit in a kubelet entry's MESSAGE item (its
/// offset now past the end of the file). libsystemd reads the entry
/// without its MESSAGE and says nothing, and the census counted it as
/// walked: a retry was lost silently (30 became 29, exit 0, while
/// `journalctl --verify` fails). The entry is passed over as one the walk
/// skipped: the file is named with what it lost, exit 4.
#[test]
fn an_entry_that_lost_its_message_to_damage_is_named() {
    let src = tempfile::tempdir().unwrap();
    let intact = journal(src.path());
    let mut b = std::fs::read(&intact).unwrap();
    let (entries, _) = objects(&b);
    let (item, _) = items(&b, entries[10].0)
        .into_iter()
        .find(|(_, payload)| payload.starts_with(b"MESSAGE=E0715"))
        .expect("a kubelet entry's MESSAGE item");
    b[item + 3] ^= 0x40;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("remote-h1.journal");
    std::fs::write(&file, &b).unwrap();
    let read_back = journalctl(&["--file", file.to_str().unwrap(), "-o", "export"]);
    assert_eq!(
        String::from_utf8_lossy(&read_back)
            .matches("\nMESSAGE=")
            .count(),
        299,
        "the damage costs one entry its MESSAGE, and only that"
    );
    let (code, err, lines) = scan(&file);
    assert_eq!((code, lines), (Some(4), 199), "{err}");
    assert!(
        err.contains(&format!(
            "{}: damaged: 1 of the kubelet's entries",
            file.display()
        )),
        "{err}"
    );
}

/// M2 of the attack round: a flipped bit that costs an entry its
/// `_HOSTNAME` item made a phantom incident for a node `unknown` (the
/// line, "exceeds retry count", names no node). journald writes
/// `_HOSTNAME` on every entry, and the entry's boot still says whose it
/// is: the incident is the host's, as in the intact file.
#[test]
fn an_entry_that_lost_its_host_to_damage_is_still_its_boots() {
    let src = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    let retry = "E0715 16:24:50.198000    2425 kubelet_node_status.go:535] \"Error updating node \
                 status, will retry\" err=\"error getting node \\\"w1\\\": Get \
                 \\\"https://10.0.0.1:6443/api/v1/nodes/w1\\\": dial tcp 10.0.0.1:6443: connect: \
                 connection refused\"";
    let exhausted = "E0715 16:25:00.000000    2425 kubelet_node_status.go:522] \"Unable to update \
                     node status\" err=\"update node status exceeds retry count\"";
    for i in 0..12u64 {
        let at = (T0 + i * 1_000_000).to_string();
        let msg = if i == 11 { exhausted } else { retry };
        export_entry(
            &mut out,
            &[
                ("__REALTIME_TIMESTAMP", &at),
                ("_BOOT_ID", "6d1a4c0e2f3b4a5d8e9f0a1b2c3d4e5f"),
                ("_HOSTNAME", "w1"),
                ("_SYSTEMD_UNIT", "kubelet.service"),
                ("SYSLOG_IDENTIFIER", "kubelet"),
                ("_PID", "2425"),
                ("MESSAGE", msg),
            ],
        );
    }
    // The same exhausted line again an hour later: a second incident
    // of w1's, alone, whose only clue to its node is its host.
    let later = (T0 + 3_600_000_000).to_string();
    export_entry(
        &mut out,
        &[
            ("__REALTIME_TIMESTAMP", &later),
            ("_BOOT_ID", "6d1a4c0e2f3b4a5d8e9f0a1b2c3d4e5f"),
            ("_HOSTNAME", "w1"),
            ("_SYSTEMD_UNIT", "kubelet.service"),
            ("SYSLOG_IDENTIFIER", "kubelet"),
            ("_PID", "2425"),
            ("MESSAGE", exhausted),
        ],
    );
    let intact = src.path().join("remote-w1.journal");
    journal_remote(&out, &intact);
    let nodes = |path: &Path| {
        let out = run(bin().args(["scan", "-q", "-o", "json"]).arg(path), None);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut nodes: Vec<String> = v["incidents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["node"].as_str().unwrap().to_string())
            .collect();
        nodes.sort();
        (nodes, String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (want, err) = nodes(&intact);
    assert_eq!(want, ["w1", "w1"], "{err}");
    let mut b = std::fs::read(&intact).unwrap();
    let (entries, _) = objects(&b);
    let last = entries
        .iter()
        .max_by_key(|(e, _)| le64(&b, e + 24))
        .unwrap()
        .0;
    let (item, _) = items(&b, last)
        .into_iter()
        .find(|(_, payload)| payload.starts_with(b"_HOSTNAME="))
        .expect("the entry has a _HOSTNAME item");
    // Its offset now points past the end of the file.
    b[item + 3] ^= 0x40;
    let dir = tempfile::tempdir().unwrap();
    let damaged = dir.path().join("remote-w1.journal");
    std::fs::write(&damaged, &b).unwrap();
    let read_back = journalctl(&[
        "--file",
        damaged.to_str().unwrap(),
        "-o",
        "export",
        "-n",
        "1",
    ]);
    assert!(
        !String::from_utf8_lossy(&read_back).contains("_HOSTNAME="),
        "the damage costs the entry its host"
    );
    let (got, err) = nodes(&damaged);
    assert_eq!(got, want, "{err}");
}

/// D32: one damaged record of the store (an incident whose deflated
/// stream is cut, a host record that is no JSON) made `incidents` fail
/// and `run` exit 65, which stops the unit for good. It is set aside,
/// named in the log and counted in `status` and the metrics; the rest of
/// the history is listed, and the service runs on.
#[test]
fn a_damaged_store_record_is_set_aside_and_the_service_runs_on() {
    let src = tempfile::tempdir().unwrap();
    journal(src.path());
    let svc = Service::new(&format!("directory = \"{}\"", src.path().display()), "");
    let out = svc.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = svc.incidents();
    assert_eq!(before.as_array().unwrap().len(), 7, "{before:#}");
    let damaged_id = before[0]["id"].as_str().unwrap().to_string();
    {
        // The service is stopped: the store is this test's to damage.
        let db = sled::open(svc.dir.path().join("store")).unwrap();
        let incidents = db.open_tree("incidents").unwrap();
        let raw = incidents.get(damaged_id.as_bytes()).unwrap().unwrap();
        assert_eq!(raw[0], 0x78, "an incident is stored deflated");
        incidents
            .insert(damaged_id.as_bytes(), &raw[..raw.len() / 2])
            .unwrap();
        db.open_tree("hosts")
            .unwrap()
            .insert("h1", &b"{\"named"[..])
            .unwrap();
        db.flush().unwrap();
    }
    let after = svc.query(&["incidents", "-o", "json"]);
    let err = String::from_utf8_lossy(&after.stderr);
    assert!(after.status.success(), "{err}");
    assert!(
        err.contains(&format!("record {damaged_id} of incidents is damaged")),
        "named: {err}"
    );
    let listed: serde_json::Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(
        listed["incidents"].as_array().unwrap().len(),
        6,
        "{listed:#}"
    );
    let out = svc.run_once();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "run --once: {err}");
    assert!(err.contains("record h1 of hosts is damaged"), "{err}");
    let status = svc.status();
    assert_eq!(status["store_damaged"], 2, "{status:#}");
    assert_eq!(svc.incidents().as_array().unwrap().len(), 6);
}
