//! The table itself: every recognised wording, the versions that write it,
//! and how a row matches a line. [`super`] looks lines up in it.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use super::SignalKind;
use crate::parse::Line;

/// How a row matches.
#[derive(Debug, Clone, Copy)]
pub enum Form {
    /// A structured line whose message is exactly this.
    Structured(&'static str),
    /// A structured line with this message whose `key` value contains `needle`.
    StructuredWith(&'static str, &'static str, &'static str),
    /// A legacy line that starts with this.
    LegacyPrefix(&'static str),
    /// A legacy line that is exactly this.
    LegacyExact(&'static str),
    /// A legacy line that contains this.
    LegacyContains(&'static str),
    /// A legacy line of the shape `node "X" not found` (the whole body).
    LegacyNodeNotFound,
    /// Any line of severity `F` (klog's Fatal: the process exits after it).
    FatalSeverity,
    /// A structured line with this message of the kubelet's client
    /// certificate manager: no `logger`, or one that names it
    /// (`kubernetes.io/kube-apiserver-client-kubelet`, with `.UnhandledError`
    /// for its errors). The serving certificate's manager
    /// (`kubernetes.io/kubelet-serving`) writes the same words: not a
    /// client certificate's line.
    ClientCert(&'static str),
    /// A legacy line that starts with the first and ends with the second.
    LegacyBetween(&'static str, &'static str),
}

/// The client certificate manager's name, as its lines carry it (1.20+).
const CLIENT_CERT: &str = "kubernetes.io/kube-apiserver-client-kubelet";

#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub kind: SignalKind,
    pub form: Form,
    /// Kubernetes versions that write this wording (`messages.md`): the
    /// table's documentation, checked for form by the tests, read by no code.
    #[cfg_attr(not(test), allow(dead_code))]
    pub versions: &'static str,
}

const fn row(kind: SignalKind, form: Form, versions: &'static str) -> Row {
    Row {
        kind,
        form,
        versions,
    }
}

use Form::{
    ClientCert, FatalSeverity, LegacyBetween, LegacyContains, LegacyExact, LegacyNodeNotFound,
    LegacyPrefix, Structured, StructuredWith,
};

mod api;
mod kubelet;
mod node;

/// Every recognised wording, in the order its rows are tried: first match
/// wins, so more specific rows come before the rows whose text they
/// extend (within a file; the files' wordings do not overlap), and the
/// Fatal row, which matches any `F` line, is last.
pub static TABLE: LazyLock<Vec<Row>> =
    LazyLock::new(|| [api::ROWS, node::ROWS, kubelet::ROWS].concat());

/// `node "X" not found` as a whole line: quoted (1.12-1.20), single-quoted
/// (pre-1.17 paths), or bare (2015).
fn legacy_node_not_found(t: &str) -> bool {
    let t = t.trim_end();
    // 2015: `error getting node: node X not found` (kubelet.go).
    let t = t.strip_prefix("error getting node: ").unwrap_or(t);
    (t.starts_with("node \"") && t.ends_with("\" not found"))
        || (t.starts_with("node '") && t.ends_with("' not found"))
        || t.strip_prefix("node ")
            .and_then(|r| r.strip_suffix(" not found"))
            .is_some_and(|name| !name.is_empty() && !name.contains(char::is_whitespace))
}

/// The rows a line can match, by its shape: a structured line only the
/// rows of its exact message, a legacy one only the legacy rows, any line
/// of severity `F` the Fatal rows. [`find`] looks in the line's own and
/// takes the first in table order, as a walk of the whole table would
/// (the ~100 rows were a tenth of ingest's time).
struct Index {
    structured: BTreeMap<&'static str, Vec<usize>>,
    /// By length, the first bytes of `structured`'s keys that long (a
    /// set of 256 bits): most lines are none of the table's, and most of
    /// those miss on their length and first byte alone, before the map's
    /// dozen comparisons.
    lengths: Vec<[u64; 4]>,
    /// The legacy rows, each with the word it needs in a line (its
    /// prefix, its whole text, what it contains; a pattern of `needles`,
    /// `None` for a row without one), found in one pass over the line: a
    /// legacy line tried every row, each `contains` building a searcher
    /// (a tenth of a 400-host collector's consumer).
    legacy: Vec<(usize, Option<usize>)>,
    needles: aho_corasick::AhoCorasick,
    fatal: Vec<usize>,
}

static INDEX: LazyLock<Index> = LazyLock::new(|| {
    let mut structured: BTreeMap<&'static str, Vec<usize>> = BTreeMap::new();
    let (mut legacy, mut words, mut fatal) = (Vec::new(), Vec::new(), Vec::new());
    for (i, r) in TABLE.iter().enumerate() {
        match r.form {
            Structured(m) | StructuredWith(m, ..) | ClientCert(m) => {
                structured.entry(m).or_default().push(i);
            }
            LegacyPrefix(w) | LegacyExact(w) | LegacyContains(w) | LegacyBetween(w, _) => {
                let n = words.iter().position(|&x| x == w).unwrap_or_else(|| {
                    words.push(w);
                    words.len() - 1
                });
                legacy.push((i, (n < NEEDLES_MAX).then_some(n)));
            }
            LegacyNodeNotFound => legacy.push((i, None)),
            FatalSeverity => fatal.push(i),
        }
    }
    let mut index = Index {
        structured,
        lengths: Vec::new(),
        legacy,
        needles: aho_corasick::AhoCorasick::new(&words[..words.len().min(NEEDLES_MAX)])
            .expect("the table's words"),
        fatal,
    };
    for m in index.structured.keys() {
        if index.lengths.len() <= m.len() {
            index.lengths.resize(m.len() + 1, [0; 4]);
        }
        let f = first_byte(m);
        index.lengths[m.len()][usize::from(f >> 6)] |= 1 << (f & 63);
    }
    index
});

/// Legacy rows' words found in one pass (a bit each); rows past it are
/// always tried.
const NEEDLES_MAX: usize = 128;

/// The legacy rows' words `m` holds, a bit each (see [`Index::needles`]).
fn needles_in(index: &Index, m: &str) -> u128 {
    index
        .needles
        .find_overlapping_iter(m)
        .fold(0, |seen, found| seen | 1 << found.pattern().as_usize())
}

/// The first byte of `m`, 0 for an empty one (as [`Index::lengths`] files it).
fn first_byte(m: &str) -> u8 {
    m.as_bytes().first().copied().unwrap_or(0)
}

/// The first row of [`TABLE`] that matches `line`.
pub(super) fn find(line: &Line<'_>) -> Option<&'static Row> {
    let index = &*INDEX;
    let first = |rows: &[usize]| rows.iter().copied().find(|&i| matches(TABLE[i].form, line));
    let shaped = if line.is_structured() {
        let m = line.message();
        let f = first_byte(m);
        let known = index
            .lengths
            .get(m.len())
            .is_some_and(|set| set[usize::from(f >> 6)] & (1 << (f & 63)) != 0);
        known
            .then(|| index.structured.get(m))
            .flatten()
            .and_then(|r| first(r))
    } else {
        let seen = needles_in(index, line.message());
        index
            .legacy
            .iter()
            .filter(|(_, n)| n.is_none_or(|n| seen & 1 << n != 0))
            .map(|&(i, _)| i)
            .find(|&i| matches(TABLE[i].form, line))
    };
    let fatal = (line.severity == Some(crate::parse::Severity::Fatal))
        .then(|| first(&index.fatal))
        .flatten();
    shaped.into_iter().chain(fatal).min().map(|i| &TABLE[i])
}

pub(super) fn matches(form: Form, line: &Line<'_>) -> bool {
    let structured = line.is_structured();
    let msg = line.message();
    match form {
        Structured(m) => structured && msg == m,
        StructuredWith(m, key, needle) => {
            structured && msg == m && line.value(key).is_some_and(|v| v.contains(needle))
        }
        LegacyPrefix(p) => !structured && msg.starts_with(p),
        LegacyExact(p) => !structured && msg.trim_end() == p,
        LegacyContains(p) => !structured && msg.contains(p),
        LegacyNodeNotFound => !structured && legacy_node_not_found(msg),
        ClientCert(m) => {
            structured
                && msg == m
                && line
                    .value("logger")
                    .is_none_or(|l| l.starts_with(CLIENT_CERT))
        }
        LegacyBetween(p, s) => !structured && msg.starts_with(p) && msg.trim_end().ends_with(s),
        FatalSeverity => line.severity == Some(crate::parse::Severity::Fatal),
    }
}

#[cfg(test)]
mod tests {
    /// `1.21`, the minor of a Kubernetes version.
    fn minor(v: &str) -> Option<u32> {
        v.strip_prefix("1.")?.parse().ok()
    }

    /// Every row says its versions as `all`, a year (`2015`, before
    /// versions), `1.N+`, `<=1.N` or `1.N-1.M` with N <= M.
    #[test]
    fn every_row_names_its_versions() {
        for row in super::TABLE.iter() {
            let v = row.versions;
            let ok = v == "all"
                || (v.len() == 4 && v.parse::<u32>().is_ok_and(|y| (2014..=2030).contains(&y)))
                || v.strip_suffix('+').and_then(minor).is_some()
                || v.strip_prefix("<=").and_then(minor).is_some()
                || v.split_once('-').is_some_and(
                    |(a, b)| matches!((minor(a), minor(b)), (Some(a), Some(b)) if a <= b),
                );
            assert!(ok, "{:?} {:?}: versions {v:?}", row.kind, row.form);
        }
    }
}
