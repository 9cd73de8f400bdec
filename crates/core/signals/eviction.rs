//! What a pressure incident tells beyond its cause (design 5.3): the pods
//! the eviction manager evicted, and what image garbage collection freed
//! or failed to free, from the kubelet's own lines:
//!
//! - `"Eviction manager: pod is evicted successfully" pod="ns/name"`
//!   (1.21+), `eviction manager: pod name_ns(uid) is evicted successfully`
//!   (before; 1.4 to about 1.7 without the `is`);
//! - the periodic collection's failures (`Image garbage collection failed
//!   multiple times in a row` / `… once. Stats initialization may not have
//!   completed yet`, their `err` `Failed to garbage collect required amount
//!   of images. Attempted to free N bytes, but only found M bytes eligible
//!   to free.`) and its success after one (`Image garbage collection
//!   succeeded`);
//! - each image it deletes (`Removing image to free bytes` `size=N`,
//!   legacy `[imageGCManager]: Removing image "…" to free N bytes`);
//! - the eviction manager's own reclaim of images and dead containers
//!   before it evicts (`unexpected error when attempting to reduce resource
//!   pressure`, `wanted to free N bytes, but freed M bytes space with errors
//!   in image deletion`; `able to reduce resource pressure without evicting
//!   pods.`).

use super::sandbox::{legacy_pod, plausible_pod};
use crate::parse::parse_line;

/// The pod a `pod is evicted successfully` line names, as `namespace/name`.
#[must_use]
pub fn evicted_pod(text: &str) -> Option<String> {
    let line = parse_line(text);
    if let Some(p) = line.value("pod").filter(|p| !p.is_empty()) {
        return plausible_pod(p);
    }
    let rest = line.message().strip_prefix("eviction manager: pod ")?;
    let rest = rest.trim_end();
    let pod = rest
        .strip_suffix(" is evicted successfully")
        .or_else(|| rest.strip_suffix(" evicted successfully"))?;
    legacy_pod(pod)
}

/// What one image garbage collection line says came of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcOutcome {
    /// Images were deleted, or the collection (or the eviction manager's
    /// reclaim) ended the pressure.
    Freed,
    /// It needed more than the unused images hold: deleting images could
    /// not free the disk.
    NotEnough,
    /// It failed otherwise (the runtime refused a deletion, no stats yet).
    Failed,
}

crate::kinds::spelling!(GcOutcome {
    Freed => "freed",
    NotEnough => "not-enough",
    Failed => "failed",
});

/// One image garbage collection line read: its outcome and the bytes it
/// names (what it had to free, what it freed or found eligible).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcReport {
    pub outcome: GcOutcome,
    pub wanted_bytes: Option<u64>,
    pub freed_bytes: Option<u64>,
}

/// The number right after `after` in `text` (`free 13148397568 bytes`).
fn number_after(text: &str, after: &str) -> Option<u64> {
    let at = text.find(after)? + after.len();
    let digits: &str = &text[at..];
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// Reads an image garbage collection line (a row of kind `image-gc`):
/// `None` for the first collection's failure before the kubelet has its
/// stats (`failed once. Stats initialization may not have completed yet`
/// with another error than too few images), which every kubelet may write
/// as it starts and which says nothing of the disk.
#[must_use]
pub fn image_gc(text: &str) -> Option<GcReport> {
    let report = gc_report(text);
    let starting = report.outcome == GcOutcome::Failed
        && text.contains("Stats initialization may not have completed yet");
    (!starting).then_some(report)
}

fn gc_report(text: &str) -> GcReport {
    let line = parse_line(text);
    let msg = line.message();
    let err = line.value("err").unwrap_or(msg);
    if msg.starts_with("Removing image") || msg.starts_with("[imageGCManager]: Removing image") {
        let size = line
            .value("size")
            .and_then(|s| s.parse().ok())
            .or_else(|| number_after(msg, " to free "));
        return GcReport {
            outcome: GcOutcome::Freed,
            wanted_bytes: None,
            freed_bytes: size,
        };
    }
    if msg.contains("garbage collection succeeded") || msg.contains("without evicting pods") {
        return GcReport {
            outcome: GcOutcome::Freed,
            wanted_bytes: None,
            freed_bytes: None,
        };
    }
    let err = err.to_ascii_lowercase();
    // `Attempted to free N bytes, but only found M bytes eligible to
    // free.` (1.8+); before, `Wanted to free N bytes, but freed M bytes`.
    if err.contains("failed to garbage collect required amount of images") {
        return GcReport {
            outcome: GcOutcome::NotEnough,
            wanted_bytes: number_after(&err, "attempted to free ")
                .or_else(|| number_after(&err, "wanted to free ")),
            freed_bytes: number_after(&err, "but only found ")
                .or_else(|| number_after(&err, "but freed ")),
        };
    }
    // `wanted to free N bytes, but freed M bytes space with errors in image
    // deletion` (before 1.22: `wanted to free N, but freed M space …`).
    GcReport {
        outcome: GcOutcome::Failed,
        wanted_bytes: number_after(&err, "wanted to free "),
        freed_bytes: number_after(&err, "but freed "),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::{SignalKind, recognize};
    use super::*;

    /// Every line of the tests below (the table's every-row check).
    pub(in crate::signals) fn texts() -> impl Iterator<Item = &'static str> {
        EVICTED.iter().map(|c| c.0).chain(GC.iter().map(|c| c.0))
    }

    const EVICTED: &[(&str, &str)] = &[
        (
            r#"I1012 19:34:45.445172    2480 eviction_manager.go:595] "Eviction manager: pod is evicted successfully" pod="default/nginx""#,
            "default/nginx",
        ),
        (
            "I0603 08:12:01.000000    1234 eviction_manager.go:187] eviction manager: pod web-1_default(5f0c2b4e-6a1d-11e9-8f5a-0a58ac1f0b2a) is evicted successfully",
            "default/web-1",
        ),
        (
            // 1.4's wording, without the `is` (kubernetes/kubernetes#31939).
            "I0902 15:20:14.747890   18530 eviction_manager.go:280] eviction manager: pod guaranteed-cn933_e2e-tests-eviction-test-simple-rkrca(33a5f9aa-7142-11e6-a2e9-28d2444e470d) evicted successfully",
            "e2e-tests-eviction-test-simple-rkrca/guaranteed-cn933",
        ),
        (
            r#"{"ts":1767261600000.123,"caller":"eviction/eviction_manager.go:595","msg":"Eviction manager: pod is evicted successfully","v":0,"pod":"kube-system/coredns-1"}"#,
            "kube-system/coredns-1",
        ),
    ];

    const GC: &[(&str, GcOutcome, Option<u64>, Option<u64>)] = &[
        (
            r#"E0725 21:47:46.000000    1234 kubelet.go:1400] "Image garbage collection failed multiple times in a row" err="Failed to garbage collect required amount of images. Attempted to free 3077055283 bytes, but only found 0 bytes eligible to free.""#,
            GcOutcome::NotEnough,
            Some(3_077_055_283),
            Some(0),
        ),
        (
            "E0725 21:47:46.000000    1234 kubelet.go:1293] Image garbage collection failed multiple times in a row: failed to garbage collect required amount of images. Wanted to free 1339201945 bytes, but freed 0 bytes",
            GcOutcome::NotEnough,
            Some(1_339_201_945),
            Some(0),
        ),
        (
            "E0725 21:47:46.000000    1234 kubelet.go:1293] Image garbage collection failed once. Stats initialization may not have completed yet: Failed to garbage collect required amount of images. Attempted to free 1190983270 bytes, but only found 373573457 bytes eligible to free.",
            GcOutcome::NotEnough,
            Some(1_190_983_270),
            Some(373_573_457),
        ),
        (
            r#"E0725 21:47:46.000000    1234 kubelet.go:1400] "Image garbage collection failed once. Stats initialization may not have completed yet" err="invalid capacity 0 on image filesystem""#,
            GcOutcome::Failed,
            None,
            None,
        ),
        (
            r#"I0725 21:47:46.000000    1234 kubelet.go:1412] "Image garbage collection succeeded""#,
            GcOutcome::Freed,
            None,
            None,
        ),
        (
            "I0725 21:47:46.000000    1234 kubelet.go:1302] Image garbage collection succeeded",
            GcOutcome::Freed,
            None,
            None,
        ),
        (
            r#"I0725 21:47:46.000000    1234 image_gc_manager.go:430] "Removing image to free bytes" imageID="sha256:3f57d9401f8d42f986df300f0c69192fc41da28ccc8d797829467780db3dd741" size=6123872 runtimeHandler="""#,
            GcOutcome::Freed,
            None,
            Some(6_123_872),
        ),
        (
            r#"I0725 21:47:46.000000    1234 image_gc_manager.go:324] [imageGCManager]: Removing image "sha256:da86e6ba6ca197bf6bc5e9d900febd906b133eaa4750e6bed647b0fbe50ed43e" to free 742472 bytes"#,
            GcOutcome::Freed,
            None,
            Some(742_472),
        ),
        (
            r#"I0725 21:47:46.000000    1234 eviction_manager.go:366] "Eviction manager: unexpected error when attempting to reduce resource pressure" resourceName="ephemeral-storage" err="wanted to free 9223372036854775807 bytes, but freed 0 bytes space with errors in image deletion: rpc error: code = Unknown desc = image is in use""#,
            GcOutcome::Failed,
            Some(9_223_372_036_854_775_807),
            Some(0),
        ),
        (
            "W0725 21:47:46.000000    1234 eviction_manager.go:336] eviction manager: unexpected error when attempting to reduce nodefs pressure: wanted to free 9223372036854775807, but freed 0 space with errors in image deletion: [rpc error: code = Unknown desc = Error response from daemon: conflict: unable to delete 3f57d9401f8d (cannot be forced) - image is being used by running container 9c0d1aeb4f0b]",
            GcOutcome::Failed,
            Some(9_223_372_036_854_775_807),
            Some(0),
        ),
        (
            r#"I0725 21:47:46.000000    1234 eviction_manager.go:383] "Eviction manager: able to reduce resource pressure without evicting pods." resourceName="ephemeral-storage""#,
            GcOutcome::Freed,
            None,
            None,
        ),
        (
            "I0725 21:47:46.000000    1234 eviction_manager.go:346] eviction manager: able to reduce nodefs pressure without evicting pods.",
            GcOutcome::Freed,
            None,
            None,
        ),
    ];

    /// Every wording, in each format, is recognised as its kind and read.
    #[test]
    fn eviction_and_image_gc_lines_are_read() {
        for &(text, pod) in EVICTED {
            let s = recognize(&parse_line(text)).expect(text);
            assert_eq!(s.kind, SignalKind::PodEvicted, "{text}");
            assert_eq!(s.cause, None, "{text}");
            assert_eq!(evicted_pod(text).as_deref(), Some(pod), "{text}");
        }
        for &(text, outcome, wanted, freed) in GC {
            let s = recognize(&parse_line(text)).expect(text);
            assert_eq!(s.kind, SignalKind::ImageGc, "{text}");
            assert_eq!(s.cause, None, "{text}");
            assert_eq!(
                gc_report(text),
                GcReport {
                    outcome,
                    wanted_bytes: wanted,
                    freed_bytes: freed
                },
                "{text}"
            );
            // The start-up failure says nothing of the disk.
            assert_eq!(
                image_gc(text).is_none(),
                text.contains("invalid capacity 0"),
                "{text}"
            );
        }
    }

    /// A pod name that is not one (spaces, quotes, nothing) is no pod.
    #[test]
    fn an_evicted_pod_must_look_like_one() {
        assert_eq!(
            evicted_pod(
                r#"I0101 10:00:00.000000 1 eviction_manager.go:595] "Eviction manager: pod is evicted successfully" pod="a b""#
            ),
            None
        );
        assert_eq!(
            evicted_pod(
                "I0101 10:00:00.000000 1 eviction_manager.go:187] eviction manager: pod  is evicted successfully"
            ),
            None
        );
    }
}
