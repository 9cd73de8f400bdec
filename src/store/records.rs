//! The records the store keeps besides incidents: outbox entries and the
//! history's counts. They are the store's types; the layers above use them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::time::Micros;
use crate::tracker::AlertKind;

/// Which delivery an outbox entry is for. Each delivery has its own entries
/// and its own retry state, so one failing never holds back the other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Channel {
    #[default]
    Email,
    Alertmanager,
}

impl Channel {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Email => "email",
            Channel::Alertmanager => "alertmanager",
        }
    }
}

/// One alert waiting in the outbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// Assigned by the store; the outbox is ordered by it.
    pub seq: u64,
    #[serde(default)]
    pub channel: Channel,
    pub kind: AlertKind,
    pub incident: String,
    pub node: String,
    /// The entry time that raised it.
    pub raised_at: Micros,
    /// Wall-clock time it was queued (for `group_wait`).
    pub queued_at: Micros,
    pub attempts: u32,
    pub next_attempt_at: Micros,
    pub last_error: Option<String>,
    /// Attempts that failed after the server may have accepted the mail.
    #[serde(default)]
    pub in_doubt: u32,
    /// Held back by a silence until then (not an attempt; it does not hold
    /// up the entries after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_until: Option<Micros>,
}

/// An operator's silence: deliveries for what it matches are held back
/// while it lasts; the incidents are still recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Silence {
    pub id: String,
    /// A node name or a glob (`worker-*`, `*`).
    pub node: String,
    /// Only incidents of this cause; `None`: any.
    #[serde(default)]
    pub cause: Option<String>,
    /// Only incidents of this kind (`node-status`, `kubelet-down`); `None`:
    /// any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub starts_at: Micros,
    pub ends_at: Micros,
    pub created_by: String,
    pub comment: String,
    /// Who ended it early (`silence expire`), and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_at: Option<Micros>,
}

impl Silence {
    #[must_use]
    pub fn active(&self, now: Micros) -> bool {
        self.starts_at <= now && now < self.ends_at
    }

    #[must_use]
    pub fn matches(&self, kind: &str, node: &str, cause: &str) -> bool {
        glob(&self.node, node)
            && self.cause.as_deref().is_none_or(|c| c == cause)
            && self.kind.as_deref().is_none_or(|k| k == kind)
    }
}

/// `*` matches any run of characters, `?` one; everything else itself.
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
    let mut other = std::collections::HashMap::new();
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

/// Counts over the whole history, kept up to date with every commit and
/// prune, so `status` and `/metrics` never read the history to answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Incidents in the store.
    pub incidents: u64,
    /// Resolved incidents by the verdict they ended with.
    pub resolved: BTreeMap<String, u64>,
}

impl Stats {
    pub fn add(&mut self, delta: &StatsDelta) {
        self.incidents = (self.incidents + delta.opened).saturating_sub(delta.forgotten);
        for v in &delta.resolved {
            *self.resolved.entry(v.clone()).or_default() += 1;
        }
    }
}

/// What one batch adds to [`Stats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsDelta {
    pub opened: u64,
    /// The verdicts of the incidents resolved in the batch.
    pub resolved: Vec<String>,
    /// Incidents taken out of the history again.
    pub forgotten: u64,
}

impl StatsDelta {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.opened == 0 && self.resolved.is_empty() && self.forgotten == 0
    }
}

#[cfg(test)]
mod tests {
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
    /// this one is one pass. The figure is printed, not asserted.
    #[test]
    fn a_pathological_pattern_against_a_1mb_name_is_one_pass() {
        let host = "y".repeat(1 << 20);
        for pattern in [
            format!("*{}z", "y".repeat(250)),
            format!("*{}z*", "y".repeat(250)),
            format!("*{}?z*", "y".repeat(249)),
        ] {
            let start = std::time::Instant::now();
            assert!(!glob(&pattern, &host));
            eprintln!(
                "{}-byte pattern {}… against a 1 MiB name: {:?}",
                pattern.len(),
                &pattern[..4],
                start.elapsed()
            );
        }
        assert!(glob(&format!("*{}", "y".repeat(250)), &host));
    }
}
