//! Arbitrary bytes, huge lines and invalid UTF-8 never panic the parsers and
//! never stop a scan, in any input format.

use std::io::Write;

use kubelet_sentinel::Format;
use proptest::prelude::*;

use crate::support::{bin, run, scan_path};

fn scan_bytes(bytes: &[u8], format: Format) -> kubelet_sentinel::ScanResult {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(bytes).unwrap();
    scan_path(f.path(), format)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_bytes_in_every_format(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        for format in [Format::Auto, Format::Text, Format::Export, Format::Json] {
            let _ = scan_bytes(&bytes, format);
        }
    }

    #[test]
    fn klog_lines_with_garbage_bodies(
        bodies in proptest::collection::vec("[ -~\t\\\\\"=<>{}\\[\\]\u{80}-\u{10ffff}]{0,200}", 1..40)
    ) {
        let mut text = String::new();
        for (n, b) in bodies.iter().enumerate() {
            let sev = ["I", "W", "E", "F"][n % 4];
            text.push_str(&format!("{sev}0715 16:24:{:02}.{:06}    2425 kubelet_node_status.go:535] {b}\n", n % 60, n));
        }
        let r = scan_bytes(text.as_bytes(), Format::Auto);
        let s = &r.summary;
        prop_assert_eq!(s.kubelet_lines, s.lines + s.continuations + s.unparsed);
    }
}

#[test]
fn a_one_mebibyte_line_with_invalid_utf8() {
    let mut bytes = b"E0715 16:24:50.198000    2425 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"w1\\\": ".to_vec();
    bytes.extend(std::iter::repeat_n(b'x', 1 << 20));
    bytes.extend_from_slice(
        b"\xff\xfe\xc0 connection refused\"\nE0715 16:24:51.000000    2425 a.go:1] \xff\xff\n",
    );
    let r = scan_bytes(&bytes, Format::Auto);
    assert_eq!(r.incidents.len(), 1);
    let i = &r.incidents[0];
    assert_eq!(i.counters().retries, 1);
    assert!(i.evidence().all(|e| e.text.len() <= 2004));
    assert_eq!(r.summary.lines, 2);
}

#[test]
fn garbage_on_standard_input_is_read_to_the_end() {
    let mut bytes: Vec<u8> = (0..200_000u32)
        .map(|n| (n.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    bytes.extend_from_slice(b"\nE0715 16:24:50.198000    2425 kubelet_node_status.go:535] \"Error updating node status, will retry\" err=\"error getting node \\\"w9\\\": Unauthorized\"\n");
    let out = run(
        bin().args(["scan", "--utc", "-o", "json", "-"]),
        Some(&bytes),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["incidents"][0]["node"], "w9");
    assert_eq!(v["incidents"][0]["cause"], "auth");
}
