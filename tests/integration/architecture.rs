//! The house rules of `src/lib.rs`, checked on the source: the walled core
//! names no edge (store, tokio, sled, lettre, files, sockets, clocks), no
//! module imports upward or in a circle, and no file grows past the size a
//! newcomer can read in one sitting.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, bottom first. A module may import modules of lower floors
/// only; two modules on one floor may not import each other.
const FLOORS: &[&[&str]] = &[
    // The walled core: pure, no I/O, no clock.
    &["pure"],
    // The wall clock, and the system's users and groups.
    &["clock", "users"],
    // Plain data about where entries come from and what the operator set.
    &["clock", "journal", "config"],
    // sled: every key layout, one transaction per batch.
    &["store"],
    // What the service's tasks publish and tell each other.
    &["status"],
    // Delivery, and the JSON contract and tables.
    &["notify", "report"],
    // Typed answers, and the `scan` driver.
    &["query", "scan"],
    // The only place that knows HTTP.
    &["api"],
    // The service's wiring.
    &["daemon"],
    // The command line.
    &["cli"],
];

/// Names a core file may not hold outside its tests: the edges.
const EDGES: &[&str] = &[
    "tokio::",
    "sled::",
    "lettre::",
    "hyper::",
    "axum::",
    "systemd::",
    "rustix::",
    "std::fs",
    "std::net::Tcp",
    "std::net::Udp",
    "std::os::unix::net",
    "std::process",
    "std::thread",
    "std::env",
    "SystemTime",
    "Instant::now",
    "Utc::now",
    "Local::now",
    "File::open",
];

/// Non-test lines a file may hold.
const MAX_FILE_LINES: usize = 720;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A file's code before its test module, without comments; test-only
/// files (`tests.rs`, `*_tests.rs`) have none.
fn code(path: &Path) -> String {
    let name = path.file_name().unwrap().to_string_lossy();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") && !line.starts_with(' ') {
            break;
        }
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A line with its string literals emptied (a kubelet's name is no edge).
fn without_strings(line: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    let mut escaped = false;
    for c in line.chars() {
        if inside {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => {
                    inside = false;
                    out.push(c);
                }
                _ => escaped = false,
            }
        } else {
            inside = c == '"';
            out.push(c);
        }
    }
    out
}

/// The top-level module a file belongs to (`src/pure/tracker/mod.rs` →
/// `pure`, `src/status.rs` → `status`).
fn module_of(path: &Path) -> Option<String> {
    let rel = path.strip_prefix(src()).unwrap();
    let first = rel
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .to_string();
    let m = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (m != "lib" && m != "main").then_some(m)
}

/// The crate's top-level modules a piece of code names (`crate::x`,
/// `crate::{x, y::z}`), mapped through the root's re-exports of the core.
fn imports(code: &str, walled: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |name: &str| {
        let n = name.trim();
        if n.is_empty() || n == "self" {
            return;
        }
        out.insert(if walled.contains(n) {
            "pure".to_string()
        } else {
            n.to_string()
        });
    };
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::b, c}`: the first segment of each top-level item.
            let mut depth = 0usize;
            let mut item = String::new();
            let mut first = true;
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        add(&item);
                        item.clear();
                        first = true;
                        continue;
                    }
                    ':' if depth == 0 => first = false,
                    _ => {}
                }
                if first && depth == 0 && (ch.is_alphanumeric() || ch == '_') {
                    item.push(ch);
                }
            }
            add(&item);
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            add(&name);
        }
    }
    out
}

/// The modules `src/lib.rs` re-exports from the core (`pub use pure::{…}`).
fn core_reexports() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let start = lib
        .find("use pure::{")
        .expect("src/lib.rs re-exports the core")
        + "use pure::{".len();
    let end = start + lib[start..].find('}').unwrap();
    lib[start..end]
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn floor(m: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&m))
}

#[test]
fn the_core_names_no_edge() {
    let core = core_reexports();
    let mut files = Vec::new();
    rust_files(&src().join("pure"), &mut files);
    assert!(!files.is_empty(), "src/pure holds the core");
    let mut found = Vec::new();
    for f in &files {
        let c = code(f);
        for line in c.lines() {
            let line = &without_strings(line);
            for edge in EDGES {
                if line.contains(edge) {
                    found.push(format!("{}: {edge}: {}", f.display(), line.trim()));
                }
            }
        }
        // Inside the core, `crate::x` may only name the core's own modules.
        for m in imports(&c, &BTreeSet::new()) {
            if m != "pure" && !core.contains(&m) {
                found.push(format!(
                    "{}: imports crate::{m}, outside the core",
                    f.display()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the core reaches an edge:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_module_imports_upward_or_in_a_circle() {
    let core = core_reexports();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let Some(m) = module_of(f) else { continue };
        for to in imports(&code(f), &core) {
            if to != m {
                edges.entry(m.clone()).or_default().insert(to);
            }
        }
    }
    let mut wrong = Vec::new();
    for (from, tos) in &edges {
        let Some(ff) = floor(from) else {
            wrong.push(format!("src/{from} is on no floor of this test (add it to FLOORS and to src/lib.rs's layout)"));
            continue;
        };
        for to in tos {
            match floor(to) {
                None => wrong.push(format!("{from} imports {to}, which is on no floor")),
                Some(tf) if tf >= ff => {
                    wrong.push(format!("{from} (floor {ff}) imports {to} (floor {tf})"));
                }
                Some(_) => {}
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the floors:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_file_is_longer_than_a_sitting() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long: Vec<String> = files
        .iter()
        .map(|f| (code(f).lines().filter(|l| !l.trim().is_empty()).count(), f))
        .filter(|(n, _)| *n > MAX_FILE_LINES)
        .map(|(n, f)| format!("{}: {n} lines of non-test code", f.display()))
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_import_reader_reads_groups_and_paths() {
    let core: BTreeSet<String> = ["tracker".to_string()].into();
    let got = imports(
        "use crate::{store::{Store, Filter}, time};\nlet x = crate::tracker::Settings::default();",
        &core,
    );
    assert_eq!(got, ["pure", "store", "time"].map(String::from).into());
}
