//! The house rules of `src/lib.rs` and the core's `lib.rs`, checked on the
//! parsed source (syn: whole files, every item, macros' tokens too):
//!
//! - the walled core (`crates/core`, its own crate) names no edge: no crate
//!   outside its own few dependencies, no `std` item that reaches files,
//!   sockets, processes, threads, the environment or a clock, no hash map
//!   (whose order would decide decisions), no `chrono::Local` or
//!   `Utc::now`; aliases (`use std as s`, `use std::{fs, io}`) are
//!   followed. The compiler and clippy keep most of it (the core is its
//!   own crate; `crates/core/clippy.toml`); this is the second net, and the
//!   one that reads `Cargo.toml`;
//! - no module of either crate imports upward or sideways against the
//!   floors below, with `super::`, `self::`, `crate as x` and the root's
//!   re-exports resolved;
//! - no code follows a file's test module, and no file holds more than a
//!   sitting's worth of non-test code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// The edge crate's floors, bottom first. A module may import modules of
/// lower floors only; two modules on one floor may not import each other.
const FLOORS: &[&[&str]] = &[
    // The walled core (the crate `sentinel_core`, named by its path at
    // every use site): pure, no I/O, no clock.
    &["core"],
    // The wall clock and the machine's zone, and the system's users and
    // groups.
    &["clock", "users"],
    // Plain data about where entries come from and what the operator set.
    &["journal", "config"],
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

/// The core's floors, bottom first.
const CORE_FLOORS: &[&[&str]] = &[
    &["time", "keyed"],
    &["defaults"],
    &["kinds", "model"],
    &["parse"],
    &["signals", "context"],
    &["tracker"],
    &["pipeline", "picture", "advice"],
    &["testing"],
];

/// The tracker's files, bottom first (`mod` is the tracker itself: what
/// `tracker/mod.rs` defines). The same rule inside the core's busiest
/// module: a file names only files on floors below its own.
const TRACKER_FLOORS: &[&[&str]] = &[
    &["terms", "decision", "timeline", "words"],
    &["evidence", "settings", "start"],
    &["incident"],
    &["kind"],
    &["open", "hosts"],
    &["ledger"],
    &["machine", "context"],
    &["mod"],
];

/// The crates the core may name.
const CORE_CRATES: &[&str] = &[
    "std",
    "core",
    "alloc",
    "chrono",
    "serde",
    "serde_json",
    "nom",
    "memchr",
    // memchr's sibling: many words in one pass over a line, no I/O.
    "aho_corasick",
    "thiserror",
    "proptest",
];

/// Paths the core may not name (prefixes of resolved paths).
const CORE_FORBIDDEN: &[&[&str]] = &[
    &["std", "fs"],
    &["std", "net", "TcpStream"],
    &["std", "net", "TcpListener"],
    &["std", "net", "UdpSocket"],
    &["std", "net", "ToSocketAddrs"],
    &["std", "os", "unix", "net"],
    &["std", "os", "fd"],
    &["std", "process"],
    &["std", "thread"],
    &["std", "env"],
    &["std", "time", "Instant"],
    &["std", "time", "SystemTime"],
    &["std", "io", "stdin"],
    &["std", "io", "stdout"],
    &["std", "io", "stderr"],
    &["std", "io", "Stdin"],
    &["std", "io", "Stdout"],
    &["std", "io", "Stderr"],
    &["std", "collections", "HashMap"],
    &["std", "collections", "HashSet"],
    &["std", "collections", "hash_map"],
    &["std", "collections", "hash_set"],
    &["chrono", "Local"],
    &["chrono", "offset", "Local"],
    &["chrono", "Utc", "now"],
    &["chrono", "offset", "Utc", "now"],
];

/// Non-test lines a file may hold (not counting blank and comment lines).
const MAX_FILE_LINES: usize = 720;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One module of a crate: its path, its file, whether only tests build it.
#[derive(Clone)]
struct Module {
    path: Vec<String>,
    file: PathBuf,
    test_only: bool,
    ast: syn::File,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().split_whitespace().any(|t| t == "test"))
            && !a
                .meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().contains("not"))
    })
}

/// Every module of the crate whose root file is `lib`, found by following
/// its `mod` declarations (inline modules are part of their file).
fn modules(lib: &Path) -> Vec<Module> {
    let mut out = Vec::new();
    let dir = lib.parent().unwrap().to_path_buf();
    load(&dir, lib, Vec::new(), false, &mut out);
    out
}

fn load(dir: &Path, file: &Path, path: Vec<String>, test_only: bool, out: &mut Vec<Module>) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    for item in &ast.items {
        if let syn::Item::Mod(m) = item {
            if m.content.is_some() {
                continue;
            }
            let name = m.ident.to_string();
            let only_tests = test_only || is_cfg_test(&m.attrs);
            let (a, b) = (
                dir.join(format!("{name}.rs")),
                dir.join(&name).join("mod.rs"),
            );
            let (child, child_dir) = if a.exists() {
                (a, dir.join(&name))
            } else {
                (b, dir.join(&name))
            };
            let mut p = path.clone();
            p.push(name);
            load(&child_dir, &child, p, only_tests, out);
        }
    }
    out.push(Module {
        path,
        file: file.to_path_buf(),
        test_only,
        ast,
    });
}

/// What the paths of one module name, resolved: `(absolute path, in test
/// code)`. An absolute path starts with `crate` or an outside crate's name.
#[derive(Default)]
struct Names {
    here: Vec<String>,
    /// Names bound by `use` in this module: alias → absolute path.
    aliases: BTreeMap<String, Vec<String>>,
    /// Modules declared in this module (for `child::x` paths).
    children: BTreeSet<String>,
    crates: BTreeSet<String>,
    found: Vec<(Vec<String>, bool)>,
    test_depth: usize,
}

impl Names {
    /// The absolute path `segs` names from this module, if it names a
    /// module, a crate or an alias (not a local item or the prelude).
    fn resolve(&self, segs: &[String], leading_colon: bool) -> Option<Vec<String>> {
        let first = segs.first()?;
        let mut out: Vec<String>;
        let rest: &[String];
        if leading_colon {
            return Some(segs.to_vec());
        }
        match first.as_str() {
            "crate" => {
                out = vec!["crate".into()];
                rest = &segs[1..];
            }
            "self" => {
                out = std::iter::once("crate".to_string())
                    .chain(self.here.iter().cloned())
                    .collect();
                rest = &segs[1..];
            }
            "super" => {
                out = std::iter::once("crate".to_string())
                    .chain(self.here.iter().cloned())
                    .collect();
                let mut k = 0;
                while segs.get(k).is_some_and(|s| s == "super") {
                    if out.len() > 1 {
                        out.pop();
                    }
                    k += 1;
                }
                rest = &segs[k..];
            }
            name if self.aliases.contains_key(name) => {
                out = self.aliases[name].clone();
                rest = &segs[1..];
            }
            name if self.children.contains(name) => {
                out = std::iter::once("crate".to_string())
                    .chain(self.here.iter().cloned())
                    .collect();
                rest = segs;
            }
            name if self.crates.contains(name) => {
                out = Vec::new();
                rest = segs;
            }
            _ => return None,
        }
        out.extend(rest.iter().cloned());
        Some(out)
    }

    fn note(&mut self, segs: &[String], leading_colon: bool) {
        if let Some(p) = self.resolve(segs, leading_colon) {
            let test = self.test_depth > 0;
            self.found.push((p, test));
        }
    }

    /// The bindings of a `use` tree: each leaf's absolute path and name.
    fn use_tree(&mut self, prefix: &[String], tree: &syn::UseTree, leading: bool) {
        match tree {
            syn::UseTree::Path(p) => {
                let mut v = prefix.to_vec();
                v.push(p.ident.to_string());
                self.use_tree(&v, &p.tree, leading);
            }
            syn::UseTree::Name(n) => {
                let mut v = prefix.to_vec();
                let name = n.ident.to_string();
                if name != "self" {
                    v.push(name.clone());
                }
                self.bind(&v, v.last().cloned().unwrap_or(name), leading);
            }
            syn::UseTree::Rename(r) => {
                let mut v = prefix.to_vec();
                if r.ident != "self" {
                    v.push(r.ident.to_string());
                }
                self.bind(&v, r.rename.to_string(), leading);
            }
            syn::UseTree::Glob(_) => self.note(prefix, leading),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, leading);
                }
            }
        }
    }

    fn bind(&mut self, segs: &[String], name: String, leading: bool) {
        if let Some(p) = self.resolve(segs, leading) {
            let test = self.test_depth > 0;
            self.found.push((p.clone(), test));
            if name != "_" {
                self.aliases.insert(name, p);
            }
        }
    }

    /// Paths in a macro's tokens (`format!("{}", crate::x::y())`).
    fn tokens(&mut self, ts: TokenStream) {
        let toks: Vec<TokenTree> = ts.into_iter().collect();
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) => {
                    let mut segs = vec![id.to_string()];
                    let mut j = i + 1;
                    while j + 2 < toks.len() + 1
                        && matches!((&toks.get(j), &toks.get(j + 1)), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':')
                    {
                        match toks.get(j + 2) {
                            Some(TokenTree::Ident(n)) => {
                                segs.push(n.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    if segs.len() > 1 || self.aliases.contains_key(&segs[0]) {
                        self.note(&segs, false);
                    }
                    i = j;
                    continue;
                }
                TokenTree::Punct(_) | TokenTree::Literal(_) => {}
            }
            i += 1;
        }
    }
}

fn segments(p: &syn::Path) -> Vec<String> {
    p.segments.iter().map(|s| s.ident.to_string()).collect()
}

impl<'ast> Visit<'ast> for Names {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match i {
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Impl(m) => &m.attrs,
            syn::Item::Use(m) => &m.attrs,
            syn::Item::Const(m) => &m.attrs,
            syn::Item::Static(m) => &m.attrs,
            syn::Item::Struct(m) => &m.attrs,
            syn::Item::Enum(m) => &m.attrs,
            syn::Item::Trait(m) => &m.attrs,
            syn::Item::Type(m) => &m.attrs,
            syn::Item::Macro(m) => &m.attrs,
            _ => &[],
        };
        let test = is_cfg_test(attrs) || attrs.iter().any(|a| a.path().is_ident("test"));
        self.test_depth += usize::from(test);
        syn::visit::visit_item(self, i);
        self.test_depth -= usize::from(test);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let test = f.attrs.iter().any(|a| a.path().is_ident("test"));
        self.test_depth += usize::from(test);
        syn::visit::visit_item_fn(self, f);
        self.test_depth -= usize::from(test);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&[], &u.tree, u.leading_colon.is_some());
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.note(&segments(p), p.leading_colon.is_some());
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.note(&segments(&m.path), m.path.leading_colon.is_some());
        self.tokens(m.tokens.clone());
    }
}

/// The outside crates a package may name: its dependencies' names.
fn dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let doc: toml::Table = text.parse().unwrap();
    let mut out: BTreeSet<String> = ["std", "core", "alloc"].map(String::from).into();
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(t) = doc.get(section).and_then(|v| v.as_table()) {
            out.extend(t.keys().map(|k| k.replace('-', "_")));
        }
    }
    out
}

/// Every path each module names, resolved, with whether it is test code.
fn names_of(m: &Module, crates: &BTreeSet<String>) -> Vec<(Vec<String>, bool)> {
    let mut n = Names {
        here: m.path.clone(),
        crates: crates.clone(),
        ..Names::default()
    };
    n.children = m
        .ast
        .items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Mod(m) => Some(m.ident.to_string()),
            _ => None,
        })
        .collect();
    // Bind the `use`s first, wherever they stand in the file.
    for item in &m.ast.items {
        if let syn::Item::Use(u) = item {
            n.test_depth = usize::from(m.test_only || is_cfg_test(&u.attrs));
            n.visit_item_use(u);
        }
    }
    n.found.clear();
    n.test_depth = usize::from(m.test_only);
    n.visit_file(&m.ast);
    n.found
}

/// Names the crate root binds (`pub use store::{Store, …}`, the core's
/// re-exports): name → the module it comes from (`core` for the core's).
fn root_names(lib: &Module, crates: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut n = Names {
        crates: crates.clone(),
        ..Names::default()
    };
    n.children = lib
        .ast
        .items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Mod(m) => Some(m.ident.to_string()),
            _ => None,
        })
        .collect();
    for item in &lib.ast.items {
        if let syn::Item::Use(u) = item {
            n.visit_item_use(u);
        }
    }
    n.aliases
        .into_iter()
        .filter_map(|(name, p)| {
            let m = match p.first().map(String::as_str) {
                Some("crate") => p.get(1)?.clone(),
                Some("sentinel_core") => "core".to_string(),
                _ => return None,
            };
            Some((name, m))
        })
        .collect()
}

fn floor_of(floors: &[&[&str]], m: &str) -> Option<usize> {
    floors.iter().position(|f| f.contains(&m))
}

/// Imports against the floors: `(module, what it names)` for each wrong one.
fn against_floors(mods: &[Module], floors: &[&[&str]], crates: &BTreeSet<String>) -> Vec<String> {
    let lib = mods.iter().find(|m| m.path.is_empty()).unwrap();
    let mut roots = root_names(lib, crates);
    // `#[macro_export]` macros live at the crate's root but belong to the
    // module that defines them.
    for m in mods.iter().filter(|m| !m.path.is_empty()) {
        for item in &m.ast.items {
            if let syn::Item::Macro(mac) = item {
                let exported = mac.attrs.iter().any(|a| a.path().is_ident("macro_export"));
                if let (true, Some(name)) = (exported, &mac.ident) {
                    roots.insert(name.to_string(), m.path[0].clone());
                }
            }
        }
    }
    let mut wrong = BTreeSet::new();
    for m in mods.iter().filter(|m| !m.test_only && !m.path.is_empty()) {
        let from = &m.path[0];
        let Some(ff) = floor_of(floors, from) else {
            wrong.insert(format!(
                "{}: module {from} is on no floor (add it to this test's floors and to lib.rs's layout)",
                m.file.display()
            ));
            continue;
        };
        for (p, test) in names_of(m, crates) {
            if test {
                continue;
            }
            let to = match p.first().map(String::as_str) {
                Some("crate") => match p.get(1) {
                    Some(t) => roots.get(t).cloned().unwrap_or_else(|| t.clone()),
                    None => continue,
                },
                Some("sentinel_core") => "core".to_string(),
                _ => continue,
            };
            if &to == from {
                continue;
            }
            match floor_of(floors, &to) {
                None => {
                    wrong.insert(format!(
                        "{}: names crate::{}, which is on no floor",
                        m.file.display(),
                        p[1..].join("::")
                    ));
                }
                Some(tf) if tf >= ff => {
                    wrong.insert(format!(
                        "{}: {from} (floor {ff}) names {} ({to}, floor {tf})",
                        m.file.display(),
                        p.join("::")
                    ));
                }
                Some(_) => {}
            }
        }
    }
    wrong.into_iter().collect()
}

/// The tracker's imports against [`TRACKER_FLOORS`]: `(from, to)` file
/// pairs, with what was named, for each wrong one.
fn tracker_against_floors(
    mods: &[Module],
    crates: &BTreeSet<String>,
) -> BTreeMap<(String, String), String> {
    let top = mods
        .iter()
        .find(|m| m.path == ["tracker"])
        .expect("the core has a tracker");
    let children: BTreeSet<String> = top
        .ast
        .items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Mod(m) => Some(m.ident.to_string()),
            _ => None,
        })
        .collect();
    // What `tracker/mod.rs` re-exports: name -> the file it comes from.
    let mut n = Names {
        here: top.path.clone(),
        crates: crates.clone(),
        children: children.clone(),
        ..Names::default()
    };
    for item in &top.ast.items {
        if let syn::Item::Use(u) = item {
            n.visit_item_use(u);
        }
    }
    let reexports: BTreeMap<String, String> = n
        .aliases
        .into_iter()
        .filter_map(|(name, p)| {
            (p.len() > 2 && p[0] == "crate" && p[1] == "tracker" && children.contains(&p[2]))
                .then(|| (name, p[2].clone()))
        })
        .collect();
    let mut wrong = BTreeMap::new();
    for m in mods
        .iter()
        .filter(|m| !m.test_only && m.path.len() >= 2 && m.path[0] == "tracker")
    {
        let from = &m.path[1];
        let Some(ff) = floor_of(TRACKER_FLOORS, from) else {
            wrong.insert(
                (from.clone(), String::new()),
                format!("{}: tracker file {from} is on no floor", m.file.display()),
            );
            continue;
        };
        for (p, test) in names_of(m, crates) {
            if test || p.len() < 3 || p[0] != "crate" || p[1] != "tracker" {
                continue;
            }
            let to = if children.contains(&p[2]) {
                p[2].clone()
            } else {
                reexports
                    .get(&p[2])
                    .cloned()
                    .unwrap_or_else(|| "mod".to_string())
            };
            if &to == from {
                continue;
            }
            match floor_of(TRACKER_FLOORS, &to) {
                Some(tf) if tf < ff => {}
                _ => {
                    wrong
                        .entry((from.clone(), to.clone()))
                        .or_insert_with(|| format!("{}: names {}", m.file.display(), p.join("::")));
                }
            }
        }
    }
    wrong
}

/// What the core names that it may not.
fn core_edges(mods: &[Module], crates: &BTreeSet<String>) -> Vec<String> {
    let mut found = BTreeSet::new();
    for m in mods {
        for (p, _test) in names_of(m, crates) {
            let first = p.first().map_or("", String::as_str);
            if first != "crate" && !CORE_CRATES.contains(&first) {
                found.insert(format!(
                    "{}: names crate {first} ({})",
                    m.file.display(),
                    p.join("::")
                ));
            }
            for f in CORE_FORBIDDEN {
                if p.len() >= f.len() && p.iter().zip(f.iter()).all(|(a, b)| a == b) {
                    found.insert(format!("{}: names {}", m.file.display(), p.join("::")));
                }
            }
        }
    }
    found.into_iter().collect()
}

/// Items after a file's test module, and files over the size.
fn shape(mods: &[Module]) -> Vec<String> {
    let mut wrong = Vec::new();
    for m in mods.iter().filter(|m| !m.test_only) {
        let text = std::fs::read_to_string(&m.file).unwrap_or_default();
        let code: Vec<bool> = text
            .lines()
            .map(|l| {
                let t = l.trim();
                !t.is_empty() && !t.starts_with("//")
            })
            .collect();
        let mut after_tests = false;
        let mut lines = 0;
        for item in &m.ast.items {
            let (attrs, span) = item_attrs(item);
            if is_cfg_test(attrs) {
                after_tests |= matches!(item, syn::Item::Mod(_));
                continue;
            }
            if after_tests {
                wrong.push(format!(
                    "{}:{}: code after the test module",
                    m.file.display(),
                    span.start().line
                ));
            }
            lines += (span.start().line..=span.end().line)
                .filter(|l| code.get(l - 1).copied().unwrap_or(false))
                .count();
        }
        if lines > MAX_FILE_LINES {
            wrong.push(format!(
                "{}: {lines} lines of non-test items (at most {MAX_FILE_LINES})",
                m.file.display()
            ));
        }
    }
    wrong
}

fn item_attrs(item: &syn::Item) -> (&[syn::Attribute], proc_macro2::Span) {
    use syn::spanned::Spanned;
    let attrs: &[syn::Attribute] = match item {
        syn::Item::Fn(f) => &f.attrs,
        syn::Item::Mod(m) => &m.attrs,
        syn::Item::Impl(m) => &m.attrs,
        syn::Item::Use(m) => &m.attrs,
        syn::Item::Const(m) => &m.attrs,
        syn::Item::Static(m) => &m.attrs,
        syn::Item::Struct(m) => &m.attrs,
        syn::Item::Enum(m) => &m.attrs,
        syn::Item::Trait(m) => &m.attrs,
        syn::Item::Type(m) => &m.attrs,
        syn::Item::Macro(m) => &m.attrs,
        _ => &[],
    };
    (attrs, item.span())
}

fn edge_crate() -> (Vec<Module>, BTreeSet<String>) {
    (
        modules(&root().join("src/lib.rs")),
        dependencies(&root().join("Cargo.toml")),
    )
}

fn core_crate() -> (Vec<Module>, BTreeSet<String>) {
    (
        modules(&root().join("crates/core/lib.rs")),
        dependencies(&root().join("crates/core/Cargo.toml")),
    )
}

#[test]
fn the_core_names_no_edge() {
    let (mods, crates) = core_crate();
    assert!(
        mods.len() > 10,
        "crates/core holds the core: {}",
        mods.len()
    );
    let found = core_edges(&mods, &crates);
    assert!(
        found.is_empty(),
        "the core reaches an edge:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_core_depends_on_nothing_that_reaches_out() {
    let text = std::fs::read_to_string(root().join("crates/core/Cargo.toml")).unwrap();
    let doc: toml::Table = text.parse().unwrap();
    let deps = doc["dependencies"].as_table().unwrap();
    for name in deps.keys() {
        let n = name.replace('-', "_");
        assert!(
            CORE_CRATES.contains(&n.as_str()),
            "the core depends on {name}"
        );
    }
    let chrono = deps["chrono"].as_table().unwrap();
    assert_eq!(chrono["default-features"].as_bool(), Some(false));
    let features: Vec<&str> = chrono["features"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert!(
        !features.contains(&"clock"),
        "chrono's clock in the core: {features:?}"
    );
}

#[test]
fn no_module_imports_upward_or_sideways() {
    let (mods, crates) = edge_crate();
    let wrong = against_floors(&mods, FLOORS, &crates);
    assert!(
        wrong.is_empty(),
        "imports against the floors:\n{}",
        wrong.join("\n")
    );
    let (mods, crates) = core_crate();
    let wrong = against_floors(&mods, CORE_FLOORS, &crates);
    assert!(
        wrong.is_empty(),
        "the core's imports against its floors:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_tracker_file_imports_upward_or_sideways() {
    let (mods, crates) = core_crate();
    let wrong = tracker_against_floors(&mods, &crates);
    assert!(
        wrong.is_empty(),
        "the tracker's imports against its floors:\n{}",
        wrong.values().cloned().collect::<Vec<_>>().join("\n")
    );
}

/// `use super::*` outside tests: a file that takes everything of the one
/// above it says nothing of what it needs, and hides upward imports.
fn glob_imports_of_super(mods: &[Module]) -> Vec<String> {
    fn is_super_glob(t: &syn::UseTree, under_super: bool) -> bool {
        match t {
            syn::UseTree::Path(p) => is_super_glob(&p.tree, under_super || p.ident == "super"),
            syn::UseTree::Glob(_) => under_super,
            syn::UseTree::Group(g) => g.items.iter().any(|i| is_super_glob(i, under_super)),
            syn::UseTree::Name(_) | syn::UseTree::Rename(_) => false,
        }
    }
    let mut wrong = Vec::new();
    for m in mods.iter().filter(|m| !m.test_only) {
        for item in &m.ast.items {
            if let syn::Item::Use(u) = item {
                if !is_cfg_test(&u.attrs) && is_super_glob(&u.tree, false) {
                    wrong.push(format!("{}: use super::* outside tests", m.file.display()));
                }
            }
        }
    }
    wrong
}

#[test]
fn no_glob_import_of_the_module_above_outside_tests() {
    for (mods, _) in [edge_crate(), core_crate()] {
        let wrong = glob_imports_of_super(&mods);
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
    let planted =
        syn::parse_file("use super::*;\n#[cfg(test)]\nmod tests { use super::*; }").unwrap();
    let m = Module {
        path: vec!["x".into()],
        file: PathBuf::from("planted/x.rs"),
        test_only: false,
        ast: planted,
    };
    assert_eq!(glob_imports_of_super(&[m]).len(), 1);
}

#[test]
fn tests_come_last_and_no_file_is_longer_than_a_sitting() {
    for (mods, _) in [edge_crate(), core_crate()] {
        let wrong = shape(&mods);
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}

/// The reader itself, on planted breaches: each is found on its own.
mod planted {
    use super::*;

    fn module(path: &[&str], code: &str) -> Module {
        Module {
            path: path.iter().map(|s| (*s).to_string()).collect(),
            file: PathBuf::from(format!("planted/{}.rs", path.join("/"))),
            test_only: false,
            ast: syn::parse_file(code).unwrap(),
        }
    }

    fn crates() -> BTreeSet<String> {
        ["std", "core", "chrono", "serde", "tokio", "sentinel_core"]
            .map(String::from)
            .into()
    }

    #[test]
    fn a_file_read_through_a_grouped_import() {
        let m = module(
            &["model"],
            "use std::{fs, io};\npub fn f() -> io::Result<String> { fs::read_to_string(\"x\") }",
        );
        let found = core_edges(&[m], &crates());
        assert!(
            found.iter().any(|f| f.contains("std::fs::read_to_string")),
            "{found:?}"
        );
    }

    #[test]
    fn the_machines_zone_and_clock() {
        let m = module(
            &["time"],
            "pub fn f() -> i64 { chrono::Local::now().timestamp() }",
        );
        let found = core_edges(&[m], &crates());
        assert!(
            found.iter().any(|f| f.contains("chrono::Local")),
            "{found:?}"
        );
        let m = module(
            &["time"],
            "use chrono as c;\npub fn f() { let _ = c::Utc::now(); }",
        );
        let found = core_edges(&[m], &crates());
        assert!(
            found.iter().any(|f| f.contains("chrono::Utc::now")),
            "{found:?}"
        );
        let m = module(
            &["time"],
            "pub fn f() { let _ = format!(\"{:?}\", std::time::Instant::now()); }",
        );
        let found = core_edges(&[m], &crates());
        assert!(
            found.iter().any(|f| f.contains("std::time::Instant")),
            "{found:?}"
        );
    }

    #[test]
    fn an_upward_import_through_a_crate_alias() {
        let lib = module(&[], "mod store; mod pure_thing;");
        let store = module(&["store"], "pub struct Store;");
        let low = module(
            &["clock"],
            "use crate as k;\nuse k::store::Store;\npub fn f(_: Store) {}",
        );
        let wrong = against_floors(&[lib.clone(), store.clone(), low], FLOORS, &crates());
        assert!(
            wrong.iter().any(|w| w.contains("crate::store::Store")),
            "{wrong:?}"
        );
        let up = module(
            &["clock", "deep"],
            "pub fn f(_: super::super::store::Store) {}",
        );
        let wrong = against_floors(&[lib, store, up], FLOORS, &crates());
        assert!(
            wrong.iter().any(|w| w.contains("crate::store::Store")),
            "{wrong:?}"
        );
    }

    #[test]
    fn code_after_the_test_module() {
        let m = module(
            &["model"],
            "pub fn a() {}\n#[cfg(test)]\nmod tests {}\npub fn b() -> String { std::fs::read_to_string(\"x\").unwrap() }",
        );
        let wrong = shape(std::slice::from_ref(&m));
        assert!(
            wrong
                .iter()
                .any(|w| w.contains("code after the test module")),
            "{wrong:?}"
        );
        // And what follows is read, not skipped.
        let found = core_edges(&[m], &crates());
        assert!(
            found.iter().any(|f| f.contains("std::fs::read_to_string")),
            "{found:?}"
        );
    }

    #[test]
    fn a_clean_module_passes_and_its_tests_are_held_to_the_wall_too() {
        let m = module(
            &["model"],
            "use std::collections::BTreeMap;\npub fn f() -> BTreeMap<String, u8> { BTreeMap::new() }\n#[cfg(test)]\nmod tests { #[test] fn t() { assert!(super::f().is_empty()); } }",
        );
        assert!(shape(std::slice::from_ref(&m)).is_empty());
        assert!(core_edges(std::slice::from_ref(&m), &crates()).is_empty());
        let m = module(
            &["model"],
            "#[cfg(test)]\nmod tests { #[test] fn t() { let _ = std::fs::read_to_string(\"x\"); } }",
        );
        let found = core_edges(&[m], &crates());
        assert!(found.iter().any(|f| f.contains("std::fs")), "{found:?}");
    }
}
