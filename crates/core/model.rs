//! What sources produce and the pure core consumes: one [`Entry`] per
//! journal entry or saved-log line, the [`EntryFilter`] that says which
//! entries are the kubelet's, and the [`Item`]s a source yields. Both the
//! readers (`journal/`) and the core (`parse/`, `pipeline`) depend on this
//! module; it depends on nothing but `time` and `defaults`.

use crate::defaults;
use crate::time::Micros;

/// A field value that repeats across entries (host, unit, identifier,
/// stream): shared, not copied per entry.
pub type Text = std::sync::Arc<str>;

/// The longest host or node name kept (a DNS name's bound, and so a
/// Kubernetes node's): a longer one is cut here, at a character boundary,
/// before the tracker, the store, the log and the mails see it.
pub const NAME_MAX: usize = 253;

/// `name` cut to [`NAME_MAX`] bytes, if longer.
#[must_use]
pub fn bounded_name(name: &str) -> Option<&str> {
    (name.len() > NAME_MAX).then(|| cut(name, NAME_MAX))
}

/// `text` cut to at most `max` bytes, at a character boundary.
#[must_use]
pub fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One journal entry, or one line of a saved log. Its flags are journal
/// facts each (`_LINE_BREAK`, `_TRANSPORT`, pid 1 with `UNIT=`), not
/// states of one machine.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// `__REALTIME_TIMESTAMP`, or the line's own time for text logs; `None`
    /// when a text line carries no time at all.
    pub at: Option<Micros>,
    /// `__CURSOR`; journal sources only.
    pub cursor: Option<String>,
    /// `_HOSTNAME`, or the host field of a syslog-style prefix.
    pub host: Option<Text>,
    /// `_SYSTEMD_UNIT`.
    pub unit: Option<Text>,
    /// `SYSLOG_IDENTIFIER`, or the tag of a syslog-style prefix.
    pub identifier: Option<Text>,
    /// `_PID`.
    pub pid: Option<u32>,
    /// `_STREAM_ID`: continuation entries share it with the line they continue.
    pub stream: Option<Text>,
    /// True for systemd's own lines about a unit (`_PID=1` with `UNIT=`).
    pub from_systemd: bool,
    /// `UNIT=` on systemd's own lines.
    pub about_unit: Option<Text>,
    /// `CONTAINER_NAME` (Docker's journald log driver).
    #[serde(default)]
    pub container: Option<Text>,
    /// `_UID`: the writer's user, which journald sets and no client can
    /// forge. `None` for saved text logs, which carry no such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// MESSAGE, as bytes: it may be binary or invalid UTF-8.
    pub message: Vec<u8>,
    /// `_LINE_BREAK=line-max`: journald cut a line longer than `LineMax`
    /// here; the next entry of the stream goes on with the same line.
    #[serde(default)]
    pub cut: bool,
    /// A saved log's reader found a record start here although the message
    /// has no klog header (a body whose header a paste cut off): a line of
    /// its own, not a continuation.
    #[serde(default)]
    pub record: bool,
    /// The group of files a collector's reader read it from (one writer:
    /// one host): its cursor is that group's position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<Text>,
    /// `_TRANSPORT=kernel`: the kernel's own line, which journald marks
    /// and no client can forge.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kernel: bool,
}

/// Which entries belong to the kubelet (design section 4).
#[derive(Debug, Clone)]
pub struct EntryFilter {
    pub units: Vec<String>,
    pub identifiers: Vec<String>,
    /// `CONTAINER_NAME`s (a kubelet run in a container by Docker's journald
    /// log driver).
    pub containers: Vec<String>,
    /// Writers (`_UID`) whose entries count when they match by identifier
    /// or container name only (see [`EntryFilter::trusted`]).
    pub trusted_uids: Vec<u32>,
    /// Units (`_SYSTEMD_UNIT`) whose entries count when they match by
    /// identifier or container name, whoever runs them.
    pub trusted_units: Vec<String>,
    /// `[journal] context_units`: units read for context (design 5.4):
    /// systemd's lines about them and their own lines, never the kubelet's.
    pub context_units: Vec<String>,
    /// `[journal] kernel`: the kernel's lines (OOM killer, links, and what
    /// node-problem-detector's kernel monitor knows: design 5.8).
    pub kernel: bool,
}

/// Where a context line comes from (design 5.4): the unit it is about or
/// that wrote it, or the kernel, and whether it is systemd's own line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextSource {
    /// The unit (`containerd.service`), or `kernel`.
    pub unit: Text,
    /// systemd's own line about the unit (`_PID=1`).
    pub from_systemd: bool,
}

/// The `Description=` of the kubelet's units as packages ship them:
/// `/var/log/messages` and old systemd name a unit only by it (`Stopping
/// Kubernetes Kubelet Server...`, `Started kubelet: The Kubernetes Node
/// Agent.`). Read in saved text logs only, where systemd's lines carry no
/// `UNIT=`.
pub const KUBELET_DESCRIPTIONS: &[&str] = &[
    "kubelet: The Kubernetes Node Agent",
    "Kubernetes Kubelet Server",
    "Kubernetes Kubelet",
    "Kubernetes systemd kubelet",
    "Lightweight Kubernetes",
    "Rancher Kubernetes Engine v2",
    "Service for snap application microk8s.daemon-kubelite",
    "Service for snap application microk8s.daemon-kubelet",
];

/// Whether systemd's `msg` is a start, stop or failure line of the unit
/// described as `description` (the whole description, then its end).
fn names_description(msg: &str, description: &str) -> bool {
    ["Started ", "Stopping ", "Stopped ", "Failed to start "]
        .iter()
        .filter_map(|verb| msg.strip_prefix(verb))
        .filter_map(|rest| rest.strip_prefix(description))
        .any(|end| end.is_empty() || end.starts_with('.') || end.starts_with(" ("))
}

/// Identifiers a kubelet is known to log under when a saved text log has no
/// unit to go by (`klog-format.md`, `SYSLOG_IDENTIFIER` row).
pub const KNOWN_KUBELET_IDENTIFIERS: &[&str] = &[
    "kubelet",
    "kubelet-wrapper",
    "kubenswrapper",
    "hyperkube",
    "k3s",
    "k3s-agent",
    "k3s-server",
    "rke2",
    "rke2-agent",
    "rke2-server",
    "k0s",
    "k0sworker",
    "kubelite",
    "microk8s.daemon-kubelet",
    "microk8s.daemon-kubelite",
];

/// Identifiers under which only the kubelet writes (its binary, or a
/// wrapper that execs it). Other kubelet sources (k3s, rke2, kubelite, a
/// Docker daemon, `OpenShift`'s node process) also carry their own output.
pub const KUBELET_ONLY_IDENTIFIERS: &[&str] =
    &["kubelet", "kubenswrapper", "hyperkube", "kubelet-wrapper"];

/// Whether everything the entry's source writes is the kubelet's: its own
/// identifier, a container named for it, or a saved log with no identifier.
#[must_use]
pub fn kubelet_alone(e: &Entry) -> bool {
    e.container.is_some()
        || e.identifier
            .as_deref()
            .is_none_or(|i| KUBELET_ONLY_IDENTIFIERS.contains(&i))
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_string()).collect()
}

impl Default for EntryFilter {
    fn default() -> Self {
        Self {
            units: strings(defaults::UNITS),
            identifiers: strings(defaults::IDENTIFIERS),
            containers: strings(defaults::CONTAINERS),
            trusted_uids: defaults::TRUSTED_UIDS.to_vec(),
            trusted_units: Vec::new(),
            context_units: strings(defaults::CONTEXT_UNITS),
            kernel: defaults::KERNEL,
        }
    }
}

impl EntryFilter {
    /// Whether a matched entry may count as the kubelet's. Any local user
    /// can log under the identifier `kubelet` (`logger -t kubelet`, a
    /// datagram with `CONTAINER_NAME=kubelet`), but only journald sets
    /// `_SYSTEMD_UNIT`, `_PID` and `_UID`. So an entry of a configured unit
    /// (its cgroup), systemd's own line about it (`_PID=1`), or one written
    /// by a trusted uid or unit counts; any other look-alike is counted
    /// apart and never opens an incident. Saved text logs carry no `_UID`:
    /// the operator chose the file, and its lines count as today.
    #[must_use]
    pub fn trusted(&self, e: &Entry) -> bool {
        let Some(uid) = e.uid else {
            return true;
        };
        let unit_in = |v: &[String]| e.unit.as_deref().is_some_and(|u| v.iter().any(|x| x == u));
        e.from_systemd
            || unit_in(&self.units)
            || self.trusted_uids.contains(&uid)
            || unit_in(&self.trusted_units)
    }

    /// Whether an entry is a context line, and whose (design 5.4), by the
    /// same trust rules as the kubelet's: systemd's own lines only from
    /// pid 1 (`_PID=1` with `UNIT=`), a unit's lines only from that unit
    /// (`_SYSTEMD_UNIT`, set by journald from the writer's cgroup), the
    /// kernel's only from the kernel transport (`_TRANSPORT=kernel`).
    /// `logger -t kernel` or `logger -t systemd` by anyone is none of
    /// them. Saved text logs carry no such fields (no `_UID`): the
    /// operator chose the file, and their tags count.
    #[must_use]
    pub fn context_source(&self, e: &Entry) -> Option<ContextSource> {
        let listed = |u: &str| self.context_units.iter().any(|c| c == u);
        let source = |unit: &Text, from_systemd| ContextSource {
            unit: unit.clone(),
            from_systemd,
        };
        if e.from_systemd {
            return e
                .about_unit
                .as_ref()
                .filter(|u| listed(u))
                .map(|u| source(u, true));
        }
        if let Some(u) = e.unit.as_ref().filter(|u| listed(u)) {
            return Some(source(u, false));
        }
        if self.kernel && e.kernel {
            return Some(source(&Text::from("kernel"), false));
        }
        if e.uid.is_some() || e.unit.is_some() || e.pid == Some(1) {
            return None;
        }
        // A saved text log: its tag says who wrote it.
        let ident = e.identifier.as_deref()?;
        if ident == "kernel" {
            return self.kernel.then(|| source(&Text::from("kernel"), false));
        }
        if ident == "systemd" {
            let msg = crate::model::text(&e.message);
            return self
                .context_units
                .iter()
                .find(|u| msg.starts_with(&format!("{u}:")) || msg.contains(&format!(" {u} ")))
                .map(|u| source(&Text::from(u.as_str()), true));
        }
        self.context_units
            .iter()
            .find(|u| u.strip_suffix(".service") == Some(ident))
            .map(|u| source(&Text::from(u.as_str()), false))
    }

    /// The journal match: the unit, systemd's own lines about the unit, or a
    /// configured identifier. Entries from saved text logs carry no unit, so
    /// for them the known kubelet identifiers count too.
    #[must_use]
    pub fn matches(&self, e: &Entry) -> bool {
        if let Some(unit) = &e.unit {
            if self.units.iter().any(|u| **u == **unit) {
                return true;
            }
        }
        if e.from_systemd {
            if let Some(about) = &e.about_unit {
                return self.units.iter().any(|u| **u == **about);
            }
        }
        if e.container
            .as_deref()
            .is_some_and(|c| self.containers.iter().any(|x| x == c))
        {
            return true;
        }
        let Some(ident) = &e.identifier else {
            // A bare klog line (no prefix, no fields): a saved kubelet log.
            return e.unit.is_none() && !e.from_systemd;
        };
        if self.identifiers.iter().any(|i| **i == **ident) {
            return true;
        }
        if e.unit.is_some() {
            return false;
        }
        if &**ident == "systemd" {
            let msg = crate::model::text(&e.message);
            return self.units.iter().any(|u| {
                let stem = u.strip_suffix(".service").unwrap_or(u);
                msg.starts_with(&format!("{u}:"))
                    || msg.starts_with(&format!("Unit {u} "))
                    || msg.starts_with(&format!("{u} "))
                    || msg.starts_with(&format!("Failed to start {stem}"))
                    || msg.starts_with(&format!("Started {stem}"))
                    || msg.starts_with(&format!("Stopped {stem}"))
                    || msg.starts_with(&format!("Stopping {stem}"))
            }) || KUBELET_DESCRIPTIONS
                .iter()
                .any(|d| names_description(&msg, d));
        }
        KNOWN_KUBELET_IDENTIFIERS.contains(&&**ident)
            || self
                .units
                .iter()
                .any(|u| u.strip_suffix(".service") == Some(&**ident))
    }
}

/// A record of the input that could not be read as an entry: said with its
/// place, counted, and skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub place: String,
    pub reason: String,
}

/// What a source yields: entries, and the records it had to skip.
#[derive(Debug)]
pub enum Item {
    Entry(Entry),
    Malformed(Malformed),
    /// A record read with a loss, said with its place: a line or field
    /// longer than a reader keeps (its start comes as an entry, the rest is
    /// dropped), or a time that could not be read (the line's own was used).
    Damaged(Malformed),
    /// A host's journal reaches `at` (a collector's files, any unit): an
    /// observation for its silence, no entry.
    Activity {
        host: Text,
        at: Micros,
    },
}

/// Where a reader resumes: one cursor for a single journal, or one per
/// group of files (one per host) for a collector's directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Position {
    pub cursor: Option<String>,
    pub groups: std::collections::BTreeMap<String, String>,
    /// A collector's groups: the files each was read over (see
    /// [`GroupFiles`]), kept with the cursors so that a file that appears
    /// while the service is stopped is found late at the next start.
    pub files: std::collections::BTreeMap<String, GroupFiles>,
}

/// The files a collector's group (one host) was read over, by their
/// headers' file IDs (the same under any name): a file of the group whose
/// ID is not here appeared later, and its entries older than the group's
/// cursor are read from its head (an older rotated file copied in after
/// the newer one). `late`: such a file being read, and how many of its
/// entries were taken, so that a restart in the middle goes on after them
/// (none read twice, none never).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GroupFiles {
    pub ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<LateRead>,
}

/// A late file partly read (see [`GroupFiles`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LateRead {
    /// Its header's file ID.
    pub file: String,
    /// Its entries taken (those the reader hands on: read and named by
    /// the match, older than the group's position).
    pub taken: u64,
}

impl Position {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.cursor.is_none() && self.groups.is_empty()
    }

    /// Moves past `e` (an entry with a cursor); returns the group it moved,
    /// if any.
    pub fn advance<'e>(&mut self, e: &'e Entry) -> Option<&'e str> {
        let c = e.cursor.as_ref()?;
        if let Some(g) = &e.group {
            self.groups.entry(g.to_string()).or_default().clone_from(c);
            Some(g)
        } else {
            self.cursor = Some(c.clone());
            None
        }
    }

    /// In words, for the log.
    #[must_use]
    pub fn describe(&self) -> String {
        match (&self.cursor, self.groups.len()) {
            (_, n) if n > 0 => format!("{n} hosts' cursors"),
            (Some(c), _) => format!("cursor {c}"),
            (None, _) => "nothing".into(),
        }
    }
}

/// A message's text: borrowed when it is UTF-8, with U+FFFD for what is
/// not otherwise. As `String::from_utf8_lossy`, but valid text (nearly
/// every line) is checked by `str::from_utf8`, which takes ASCII a word at
/// a time where the lossy walk goes byte by byte: a tenth of the consumer's
/// time on a one-host read, for the same result.
#[must_use]
pub fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(b),
    }
}

/// FNV-1a, 64 bits, over `parts` one after another: stable across builds,
/// platforms and versions, so what it names (incident ids, which collector
/// worker reads a host, record ids) stays the same. Not `std`'s
/// `DefaultHasher`, whose output may change between Rust releases; not for
/// keys a stranger may choose to collide (nothing here is keyed by it).
/// The one copy: the core's ids and the edges' use it.
#[must_use]
pub fn fnv1a<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> u64 {
    parts
        .into_iter()
        .flatten()
        .fold(0xcbf2_9ce4_8422_2325, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// `*` matches any run of characters, `?` one; everything else itself.
///
/// Written here, not taken from a crate: `globset` and `glob-match` are
/// linear too, but read `[…]`, `{a,b}` and `**` as syntax, which would
/// change what every stored silence and route pattern means, and `globset`
/// would bring the regex engine into the core for two metacharacters;
/// `wildmatch` backtracks. The property test below holds this one to a
/// backtracking reference and the adversarial case to linear work.
///
/// Linear in pattern and name whatever either holds (a collector host can
/// claim a 1 MB `_HOSTNAME`, and a route pattern comes from a 1 MiB file):
/// the pattern is cut at its stars; the first piece must match at the
/// start, the last at the end, and each piece between is found leftmost
/// after the one before it (leftmost is never worse for what follows).
/// A piece without `?` is found with `memmem`; one with `?` with a
/// bit-parallel scan (shift-and), one pass over the name.
#[must_use]
pub fn glob(pattern: &str, s: &str) -> bool {
    let mut pieces: Vec<&str> = pattern.split('*').collect();
    if pieces.len() == 1 {
        return prefix_len(pattern, s) == Some(s.len());
    }
    let last = pieces.pop().unwrap_or_default();
    let first = pieces.first().copied().unwrap_or_default();
    let Some(start) = prefix_len(first, s) else {
        return false;
    };
    let Some(tail) = suffix_start(last, s) else {
        return false;
    };
    if tail < start {
        return false;
    }
    let mut rest = &s[start..tail];
    for piece in pieces.iter().skip(1).filter(|p| !p.is_empty()) {
        match find(piece, rest) {
            Some(end) => rest = &rest[end..],
            None => return false,
        }
    }
    true
}

/// The bytes of `s` that `piece` (no `*`) matches at its start.
fn prefix_len(piece: &str, s: &str) -> Option<usize> {
    let mut chars = s.char_indices();
    for p in piece.chars() {
        let (_, c) = chars.next()?;
        if p != '?' && p != c {
            return None;
        }
    }
    Some(chars.next().map_or(s.len(), |(i, _)| i))
}

/// Where the match of `piece` (no `*`) at the end of `s` starts.
fn suffix_start(piece: &str, s: &str) -> Option<usize> {
    let mut chars = s.char_indices().rev();
    let mut start = s.len();
    for p in piece.chars().rev() {
        let (i, c) = chars.next()?;
        if p != '?' && p != c {
            return None;
        }
        start = i;
    }
    Some(start)
}

/// The end (bytes) of the leftmost match of `piece` (no `*`) in `s`.
fn find(piece: &str, s: &str) -> Option<usize> {
    if !piece.contains('?') {
        // A match of valid UTF-8 in valid UTF-8 starts on a char boundary.
        return memchr::memmem::find(s.as_bytes(), piece.as_bytes()).map(|i| i + piece.len());
    }
    // Shift-and: bit j of `state` says the piece's first j+1 characters
    // end here. Every piece has a fixed number of characters, so the
    // leftmost end is the leftmost match.
    let p: Vec<char> = piece.chars().collect();
    let words = p.len().div_ceil(64);
    let mut any = vec![0u64; words];
    for (j, &c) in p.iter().enumerate() {
        if c == '?' {
            any[j / 64] |= 1 << (j % 64);
        }
    }
    // One mask per distinct character; ASCII ones found by table.
    let mut masks: Vec<(char, Vec<u64>)> = Vec::new();
    for (j, &c) in p.iter().enumerate() {
        if c == '?' {
            continue;
        }
        let k = if let Some(k) = masks.iter().position(|(m, _)| *m == c) {
            k
        } else {
            masks.push((c, any.clone()));
            masks.len() - 1
        };
        masks[k].1[j / 64] |= 1 << (j % 64);
    }
    let mut ascii = [usize::MAX; 128];
    let mut other = std::collections::BTreeMap::new();
    for (k, (c, _)) in masks.iter().enumerate() {
        match usize::try_from(u32::from(*c)) {
            Ok(a) if a < 128 => ascii[a] = k,
            _ => {
                other.insert(*c, k);
            }
        }
    }
    let done = (words - 1, 1u64 << ((p.len() - 1) % 64));
    let mut state = vec![0u64; words];
    for (i, c) in s.char_indices() {
        let k = if c.is_ascii() {
            ascii[c as usize]
        } else {
            other.get(&c).copied().unwrap_or(usize::MAX)
        };
        let mask = masks.get(k).map_or(&any, |(_, m)| m);
        let mut carry = 1;
        for (w, m) in state.iter_mut().zip(mask) {
            let next = *w >> 63;
            *w = ((*w << 1) | carry) & m;
            carry = next;
        }
        if state[done.0] & done.1 != 0 {
            return Some(i + c.len_utf8());
        }
    }
    None
}

#[cfg(test)]
mod fnv_tests {
    use super::fnv1a;

    /// The published FNV-1a test vectors; parts hash as their concatenation.
    #[test]
    fn fnv1a_is_fnv1a() {
        assert_eq!(fnv1a([&b""[..]]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a([&b"a"[..]]), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a([&b"foobar"[..]]), 0x8594_4171_f739_67e8);
        assert_eq!(
            fnv1a([&b"foo"[..], &b""[..], &b"bar"[..]]),
            fnv1a([&b"foobar"[..]])
        );
    }
}

#[cfg(test)]
mod glob_tests {
    use proptest::prelude::*;

    use super::glob;

    /// The matcher before the linear one: one backtrack point, linear for
    /// `*a*a*b` but O(pattern x name) for a long piece after a star.
    fn glob_backtracking(pattern: &str, s: &str) -> bool {
        let (p, s): (Vec<char>, Vec<char>) = (pattern.chars().collect(), s.chars().collect());
        let (mut pi, mut si) = (0, 0);
        let (mut star, mut mark) = (None, 0);
        while si < s.len() {
            if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
                pi += 1;
                si += 1;
            } else if pi < p.len() && p[pi] == '*' {
                star = Some(pi);
                mark = si;
                pi += 1;
            } else if let Some(st) = star {
                pi = st + 1;
                mark += 1;
                si = mark;
            } else {
                return false;
            }
        }
        while pi < p.len() && p[pi] == '*' {
            pi += 1;
        }
        pi == p.len()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn the_same_answers_as_the_backtracking_matcher(
            pattern in "[ab*?é]{0,12}",
            name in "[abé]{0,16}",
        ) {
            prop_assert_eq!(glob(&pattern, &name), glob_backtracking(&pattern, &name));
        }
    }

    #[test]
    fn long_pieces_with_and_without_question_marks() {
        // Pieces longer than one 64-bit word of the bit-parallel scan.
        let long: String = (0..150)
            .map(|i| if i % 7 == 0 { '?' } else { 'y' })
            .collect();
        let name = format!("x{}zz", "y".repeat(300));
        for pattern in [
            format!("*{long}z*"),
            format!("x*{long}*z"),
            format!("*{}z", "y".repeat(250)),
            format!("*{}q", "y".repeat(250)),
            format!("x*y?y*{long}*zz"),
        ] {
            assert_eq!(
                glob(&pattern, &name),
                glob_backtracking(&pattern, &name),
                "{pattern}"
            );
        }
    }

    /// D18: 252 bytes after a star against a 1 MB host name (what a
    /// collector host may claim) cost the backtracking matcher 0.24 s each;
    /// this one is one pass (benches/parse.rs measures it).
    #[test]
    fn a_pathological_pattern_against_a_1mb_name_is_one_pass() {
        let host = "y".repeat(1 << 20);
        for pattern in [
            format!("*{}z", "y".repeat(250)),
            format!("*{}z*", "y".repeat(250)),
            format!("*{}?z*", "y".repeat(249)),
        ] {
            assert!(!glob(&pattern, &host));
        }
        assert!(glob(&format!("*{}", "y".repeat(250)), &host));
    }
}
