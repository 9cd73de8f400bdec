//! Issue 10's property: any valid kubelet line, behind any prefix a real
//! paste puts before it (and combinations), with its quotes damaged, or
//! hard-wrapped by a terminal at any width from 60 to 200 columns, with
//! Windows line endings or damaged whitespace, gives the same signals as the
//! clean line.

use std::io::Write;

use kubelet_sentinel::Format;
use kubelet_sentinel::IncidentOut;
use kubelet_sentinel::Settings;
use proptest::prelude::*;

use crate::support::scan_path;

/// Clean kubelet lines (bare klog, as the kubelet writes them) naming `{N}`,
/// one per signal and form, old wordings and new.
const TEMPLATES: &[&str] = &[
    r#"E1128 15:33:29.{US}    4813 kubelet_node_status.go:383] Error updating node status, will retry: error getting node "{N}": nodes "{N}" not found"#,
    r#"E1128 15:33:29.{US}    4813 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"{N}\": Get \"https://10.0.0.1:6443/api/v1/nodes/{N}?timeout=10s\": dial tcp 10.0.0.1:6443: connect: connection refused""#,
    r#"E1128 15:33:29.{US}    4813 kubelet_node_status.go:535] "Error updating node status, will retry" err="error getting node \"{N}\": Unauthorized""#,
    r#"E1128 15:33:29.{US}    4813 kubelet_node_status.go:442] Error updating node status, will retry: error getting node "{N}": Get https://10.0.0.1:6443/api/v1/nodes/{N}?timeout=10s: net/http: request canceled (Client.Timeout exceeded while awaiting headers)"#,
    r#"E1128 15:33:29.{US}    4813 kubelet.go:2424] "Error getting node" err="node \"{N}\" not found""#,
    r#"E1128 15:33:29.{US}    4813 kubelet.go:2266] node "{N}" not found"#,
    r#"E1128 15:33:29.{US}    4813 kubelet_node_status.go:94] "Unable to register node with API server" err="Post \"https://10.0.0.1:6443/api/v1/nodes\": dial tcp 10.0.0.1:6443: connect: connection refused" node="{N}""#,
    r#"E1128 15:33:29.{US}    4813 kubelet_node_status.go:103] Unable to register node "{N}" with API server: Post https://10.0.0.1:6443/api/v1/nodes: dial tcp 10.0.0.1:6443: connect: connection refused"#,
    r#"I1128 15:33:29.{US}    4813 kubelet.go:1000] Unable to register {N} with the apiserver: Post https://10.0.0.1:6443/api/v1/nodes: dial tcp 10.0.0.1:6443: getsockopt: connection refused"#,
    r#"E1128 15:33:29.{US}    4813 kubelet.go:2741] Error updating node status, will retry: error getting node "{N}": client: etcd cluster is unavailable or misconfigured"#,
];

/// What a journal, a collector or a UI puts before the line (the time
/// agrees with the klog header's, as it does in real logs).
const PREFIXES: &[&str] = &[
    "",
    "Nov 28 15:33:29 {H} kubelet[4813]: ",
    "11月 28 15:33:29 {H} kubelet[4813]: ",
    "Nov 28 15:33:29 {H} kubenswrapper[4813]: ",
    "Nov 28 15:33:29 {H} k3s[4813]: ",
    "Nov 28 15:33:29 {H} kubelet: ",
    "2026-11-28T15:33:29+0000 {H} kubelet[4813]: ",
    "11/28/2026 3:33:29 PM",
    "{H}: ",
    "kubelet[4813]: ",
    "2026-11-28T15:33:29.000Z {host=\"{H}\", unit=\"kubelet.service\"} ",
    "journal.log: Nov 28 15:33:29 {H} kubelet[4813]: ",
    "2026-11-28T15:33:29.100Z\t",
    "> Nov 28 15:33:29 {H} kubelet[4813]: ",
];

/// What a paste puts around every physical line.
const MARKUP: &[&str] = &["", "\t", "    ", "> ", "<span>", "* "];

fn scan_text(text: &str) -> (u64, Vec<(String, String, [u64; 6])>) {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    let r = scan_path(f.path(), Format::Text);
    let settings = Settings::default();
    let mut incidents: Vec<_> = r
        .incidents
        .iter()
        .map(|i| {
            let o = IncidentOut::new(i, &settings);
            (
                o.node,
                o.cause.to_string(),
                [
                    o.counters.retries,
                    o.counters.exhausted,
                    o.counters.lister_misses,
                    o.counters.register_failures,
                    o.counters.lease_failures,
                    o.counters.watch_failures,
                ],
            )
        })
        .collect();
    incidents.sort();
    (r.summary.recognized, incidents)
}

/// Cuts `line` into pieces of `width` characters, as a terminal does.
fn hard_wrap(line: &str, width: usize) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    chars.chunks(width).map(|c| c.iter().collect()).collect()
}

/// A paste: the lines behind a prefix, each wrapped or not, with markup
/// before every physical line.
fn paste(
    lines: &[String],
    prefix: &str,
    host: &str,
    markup: &str,
    wrap: Option<usize>,
    eol: &str,
) -> String {
    let mut out = String::new();
    for l in lines {
        let full = format!("{}{l}", prefix.replace("{H}", host));
        let pieces = match wrap {
            Some(w) => hard_wrap(&full, w),
            None => vec![full],
        };
        for p in pieces {
            out.push_str(markup);
            out.push_str(&p);
            out.push_str(eol);
        }
    }
    out
}

/// The paste lost every backslash (`err="node "w1" not found"`).
fn damage_quotes(line: &str) -> String {
    line.replace('\\', "")
}

fn node_name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,5}){0,2}(\\.[a-z]{2,6}){0,1}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_kubelet_line_reads_the_same_however_it_was_pasted(
        picks in proptest::collection::vec(0..TEMPLATES.len(), 1..4),
        node in node_name(),
        host in "[a-z][a-z0-9-]{0,11}",
        prefix in 0..PREFIXES.len(),
        markup in 0..MARKUP.len(),
        damaged in any::<bool>(),
        wrap in proptest::option::of(60usize..=200),
        junk_first in any::<bool>(),
        eol in prop_oneof![Just("\n"), Just("\r\n"), Just(" \u{a0}\r\n")],
    ) {
        let lines: Vec<String> = picks
            .iter()
            .enumerate()
            .map(|(n, &t)| {
                TEMPLATES[t]
                    .replace("{N}", &node)
                    .replace("{US}", &format!("{:06}", 100_000 + n * 1_000))
            })
            .collect();
        let clean = scan_text(&paste(&lines, "", "", "", None, "\n"));
        prop_assert_eq!(clean.0, lines.len() as u64, "every clean line is a signal");
        prop_assert!(!clean.1.is_empty());

        let shown: Vec<String> = if damaged {
            lines.iter().map(|l| damage_quotes(l)).collect()
        } else {
            lines.clone()
        };
        let mut text = String::new();
        if junk_first {
            text.push_str("$ journalctl -u kubelet --no-pager\n");
        }
        text.push_str(&paste(&shown, PREFIXES[prefix], &host, MARKUP[markup], wrap, eol));
        let got = scan_text(&text);
        prop_assert_eq!(&got, &clean, "pasted as:\n{}", text);
    }
}

#[test]
fn one_paste_of_every_kind_reads_like_the_clean_log() {
    // The deterministic corner of the property: every prefix with every
    // markup, damaged and wrapped at the narrowest width.
    let lines: Vec<String> = TEMPLATES
        .iter()
        .enumerate()
        .map(|(n, t)| {
            t.replace("{N}", "worker-7.lab")
                .replace("{US}", &format!("{:06}", 100_000 + n * 1_000))
        })
        .collect();
    let clean = scan_text(&paste(&lines, "", "", "", None, "\n"));
    assert_eq!(clean.0, TEMPLATES.len() as u64);
    for prefix in PREFIXES {
        for markup in MARKUP {
            for wrap in [None, Some(60)] {
                let damaged: Vec<String> = lines.iter().map(|l| damage_quotes(l)).collect();
                for shown in [&lines, &damaged] {
                    let text = paste(shown, prefix, "node-1", markup, wrap, "\r\n");
                    assert_eq!(scan_text(&text), clean, "pasted as:\n{text}");
                }
            }
        }
    }
}
