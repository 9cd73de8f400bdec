//! Bytes to [`Line`]: pure and total. Any input gives a `Line`; what is not a
//! kubelet line is [`Body::Unparsed`], never a panic or an error.
//!
//! - [`klog`]: the text header and the structured/legacy bodies;
//! - [`jsonfmt`]: the kubelet's `--logging-format=json` lines;
//! - [`join`]: continuation entries joined to the line they continue.

pub mod join;
pub mod jsonfmt;
pub mod klog;

use std::borrow::Cow;

use crate::time::{Micros, WallTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Severity {
    Info,
    Warning,
    Error,
    Fatal,
}

pub type KeyValue<'a> = (Cow<'a, str>, Cow<'a, str>);

/// A structured line's key-value pairs, parsed when first asked for: most
/// lines are read for their message alone (a line no row of the signal
/// table names is never asked for a value).
#[derive(Debug, Clone)]
pub struct Pairs<'a> {
    /// The text after the message, not yet parsed.
    rest: &'a str,
    parsed: std::cell::OnceCell<Vec<KeyValue<'a>>>,
}

impl<'a> Pairs<'a> {
    /// The pairs of `rest` (the text after a structured line's message),
    /// parsed on first use.
    #[must_use]
    pub fn lazy(rest: &'a str) -> Self {
        Self {
            rest,
            parsed: std::cell::OnceCell::new(),
        }
    }

    /// Pairs already parsed (the JSON format's).
    #[must_use]
    pub fn parsed(kv: Vec<KeyValue<'a>>) -> Self {
        Self {
            rest: "",
            parsed: std::cell::OnceCell::from(kv),
        }
    }
}

impl<'a> std::ops::Deref for Pairs<'a> {
    type Target = [KeyValue<'a>];

    fn deref(&self) -> &Self::Target {
        self.parsed.get_or_init(|| klog::pairs(self.rest))
    }
}

impl PartialEq for Pairs<'_> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Pairs<'_> {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body<'a> {
    /// `"msg" key=value ...` (InfoS/ErrorS/logr) or a JSON-format entry; the
    /// message and values unquoted.
    Structured { msg: Cow<'a, str>, kv: Pairs<'a> },
    /// printf-style text after the header.
    Legacy(Cow<'a, str>),
    /// No klog header and not the JSON format.
    Unparsed(Cow<'a, str>),
}

/// One parsed kubelet line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    pub severity: Option<Severity>,
    /// The klog header's time (no year, no zone).
    pub wall: Option<WallTime>,
    /// The JSON format's `ts`, converted to micros.
    pub ts: Option<Micros>,
    pub pid: Option<u32>,
    pub source: Option<Cow<'a, str>>,
    pub body: Body<'a>,
}

impl<'a> Line<'a> {
    /// The message: a structured line's unquoted message, a legacy line's text.
    #[must_use]
    pub fn message(&self) -> &str {
        match &self.body {
            Body::Structured { msg, .. } => msg,
            Body::Legacy(t) | Body::Unparsed(t) => t,
        }
    }

    /// The first value of `key` on a structured line.
    #[must_use]
    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "not an incident kind: the variants not named all take one path"
    )]
    pub fn value(&self, key: &str) -> Option<&str> {
        match &self.body {
            Body::Structured { kv, .. } => {
                kv.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_ref())
            }
            _ => None,
        }
    }

    #[must_use]
    pub fn is_structured(&self) -> bool {
        matches!(self.body, Body::Structured { .. })
    }

    #[must_use]
    pub fn is_parsed(&self) -> bool {
        !matches!(self.body, Body::Unparsed(_))
    }

    fn unparsed(text: &'a str) -> Self {
        Self {
            severity: None,
            wall: None,
            ts: None,
            pid: None,
            source: None,
            body: Body::Unparsed(Cow::Borrowed(text)),
        }
    }
}

/// Parses one (joined) message. Total: anything that is not a klog or JSON
/// line comes back as `Unparsed`.
#[must_use]
pub fn parse_line(text: &str) -> Line<'_> {
    if let Some((h, rest)) = klog::split_header(text) {
        return Line {
            severity: Some(h.severity),
            wall: Some(h.wall),
            ts: None,
            pid: h.pid,
            source: Some(Cow::Borrowed(h.source)),
            body: klog::body(rest),
        };
    }
    if text.starts_with('{') {
        if let Some(line) = jsonfmt::parse(text) {
            return line;
        }
    }
    if let Some((source, rest)) = klog::headless(text) {
        return Line {
            severity: None,
            wall: None,
            ts: None,
            pid: None,
            source: source.map(Cow::Borrowed),
            body: klog::body(rest),
        };
    }
    Line::unparsed(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lines_of_each_kind() {
        let l = parse_line(
            r#"E0418 22:07:55.432195    2425 kubelet_node_status.go:462] "Error getting the current node from lister" err="node \"kt2\" not found""#,
        );
        assert_eq!(l.message(), "Error getting the current node from lister");
        assert_eq!(l.value("err"), Some(r#"node "kt2" not found"#));
        let l = parse_line(
            "E0322 17:40:06.941777    1272 kubelet_node_status.go:382] Unable to update node status: update node status exceeds retry count",
        );
        assert!(matches!(l.body, Body::Legacy(_)));
        let l = parse_line("Trace[390565971]: [10.94521331s] [10.94521331s] END");
        assert!(!l.is_parsed());
        let l = parse_line("{not json");
        assert!(!l.is_parsed());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse_line(&text);
        }

        #[test]
        fn never_panics_on_klog_shaped_input(
            sev in "[IWEF]", tail in "[ -~\t\n\\\\\"=<>{}\\[\\]]{0,300}"
        ) {
            let text = format!("{sev}0101 00:00:00.000000    1 a.go:1] {tail}");
            let line = parse_line(&text);
            prop_assert!(line.is_parsed());
        }

        #[test]
        fn structured_round_trip(msg in "[ -~]{0,40}", v in "[ -~\n]{0,40}") {
            let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"));
            let text = format!("I0101 00:00:00.000000    1 a.go:1] {} err={}", quote(&msg), quote(&v));
            let line = parse_line(&text);
            prop_assert_eq!(line.message(), msg.as_str());
            prop_assert_eq!(line.value("err"), Some(v.as_str()));
        }
    }

    #[test]
    fn huge_and_invalid_input() {
        let mut big =
            b"E0101 00:00:00.000000    1 a.go:1] \"Error updating node status, will retry\" err=\""
                .to_vec();
        big.extend(std::iter::repeat_n(b'\\', 1 << 20));
        big.extend_from_slice(b"\xff\xfe");
        let text = String::from_utf8_lossy(&big);
        let line = parse_line(&text);
        assert!(line.is_parsed());
        let open_block = "I0101 00:00:00.000000 1 a.go:1] \"m\" k=<\n\tno end";
        assert_eq!(parse_line(open_block).value("k"), Some("no end"));
    }
}
