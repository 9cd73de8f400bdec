//! A pressure incident is one storm, told (design 5.3): the pods the
//! eviction manager evicted, bounded, and what the host's last image
//! garbage collection did, so its diagnosis says whether deleting images
//! could have freed the disk.

use super::*;
use crate::signals::{Cause, GcOutcome};
use crate::testing::Replay;

const T0: Micros = 1_752_596_690_000_000; // 2025-07-15T16:24:50Z

const STARTED: &str = "Started kubelet: The Kubernetes Node Agent.";
const READY: &str = r#"I0715 16:24:50.000000    2001 kubelet_node_status.go:493] "Fast updating node status as it just became ready""#;
const DISK: &str = r#"W0715 16:24:50.000000    2001 eviction_manager.go:369] "Eviction manager: attempting to reclaim" resourceName="ephemeral-storage""#;
const MEMORY: &str = r#"I0715 16:24:50.000000    2001 eviction_manager.go:380] "Eviction manager: must evict pod(s) to reclaim" resourceName="memory""#;
const GC_NOT_ENOUGH: &str = r#"E0715 16:24:50.000000    2001 kubelet.go:1400] "Image garbage collection failed multiple times in a row" err="Failed to garbage collect required amount of images. Attempted to free 3077055283 bytes, but only found 0 bytes eligible to free.""#;
const REMOVING: &str = r#"I0715 16:24:50.000000    2001 image_gc_manager.go:430] "Removing image to free bytes" imageID="sha256:3f57d9401f8d42f986df300f0c69192fc41da28ccc8d797829467780db3dd741" size=1073741824 runtimeHandler="""#;
const RELIEVED: &str = r#"I0715 16:24:50.000000    2001 eviction_manager.go:383] "Eviction manager: able to reduce resource pressure without evicting pods." resourceName="ephemeral-storage""#;

fn evicted(pod: &str) -> String {
    format!(
        r#"I0715 16:24:50.000000    2001 eviction_manager.go:595] "Eviction manager: pod is evicted successfully" pod="{pod}""#
    )
}

/// The lines (ms after `T0`) as one host's journal, judged as `scan`
/// reads it and as a following service does, which must agree.
fn judged(lines: &[(i64, String)], end_ms: i64) -> Replay {
    crate::testing::judged_lines(T0, lines, end_ms)
}

fn at(v: &[(i64, &str)]) -> Vec<(i64, String)> {
    v.iter().map(|(t, s)| (*t, (*s).to_string())).collect()
}

/// The storm: the disk fills a minute after a ready start; image garbage
/// collection found nothing to delete just before and every five minutes
/// since; the eviction manager reclaims every 10 s for eight minutes and
/// evicts twenty pods. One incident, persistent, disk-pressure; it names
/// the first sixteen pods and counts twenty; images could not have freed
/// the disk.
#[test]
fn an_eviction_storm_names_its_pods_and_says_images_could_not_free_the_disk() {
    let mut journal = at(&[(0, STARTED), (5_000, READY), (55_000, GC_NOT_ENOUGH)]);
    for k in 0..48 {
        journal.push((60_000 + k * 10_000, DISK.to_string()));
    }
    for k in 0..20 {
        journal.push((61_000 + k * 20_000, evicted(&format!("default/web-{k}"))));
    }
    journal.push((355_000, GC_NOT_ENOUGH.to_string()));
    journal.sort_by_key(|(t, _)| *t);
    let r = judged(&journal, 900_000);
    let i = r.one();
    assert_eq!(i.kind(), IncidentKind::NotReady);
    assert_eq!(i.cause(), Cause::DiskPressure);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    let n = i.not_ready().unwrap();
    assert_eq!(n.evictions, 20);
    assert_eq!(n.evicted_pods.len(), EVICTED_KEPT);
    assert_eq!(n.evicted_pods[0], "default/web-0");
    // Its lines still count the trouble only.
    assert_eq!(n.not_ready_signals, 48);
    let gc = n.image_gc.as_ref().unwrap();
    assert_eq!(gc.outcome, GcOutcome::NotEnough);
    assert_eq!(gc.at, T0 + 355_000_000, "the last collection");
    assert_eq!(
        (gc.wanted_bytes, gc.freed_bytes),
        (Some(3_077_055_283), Some(0))
    );
    let d = i.diagnosis(&r.settings);
    assert!(
        d.contains("evicted 20 pods, the first 16 named: default/web-0, default/web-1")
            && d.contains("default/web-15.")
            && d.contains("had to free 2.9 GiB but found only 0 B eligible")
            && d.contains("could not have freed the disk"),
        "{d}"
    );
    // One alert, not one per eviction.
    assert_eq!(
        r.alert_kinds(),
        vec![AlertKind::Opened, AlertKind::Resolved]
    );
}

/// Images deleted in one collection add up; the eviction manager's reclaim
/// that ended the pressure without evicting is that collection's end. The
/// diagnosis: deleting images frees this disk.
#[test]
fn images_that_freed_the_disk_are_said_so() {
    let l = at(&[
        (0, STARTED),
        (5_000, READY),
        (60_000, DISK),
        (61_000, REMOVING),
        (62_000, REMOVING),
        (63_000, REMOVING),
        (64_000, RELIEVED),
    ]);
    let r = judged(&l, 900_000);
    let i = r.one();
    let gc = i.not_ready().unwrap().image_gc.clone().unwrap();
    assert_eq!(gc.outcome, GcOutcome::Freed);
    assert_eq!(gc.freed_bytes, Some(3 << 30));
    let d = i.diagnosis(&r.settings);
    assert!(
        d.contains("freed 3.0 GiB: deleting images frees this disk."),
        "{d}"
    );
    assert!(r.alert_kinds().is_empty(), "transient");
}

/// A collection before the kubelet's last start is another kubelet's: a
/// disk-pressure incident after the restart does not say it, and says it
/// knows nothing of images.
#[test]
fn a_collection_before_the_start_is_not_told() {
    let l = at(&[
        (0, GC_NOT_ENOUGH),
        (10_000, STARTED),
        (15_000, READY),
        (60_000, DISK),
    ]);
    let r = judged(&l, 900_000);
    let i = r.one();
    assert!(i.not_ready().unwrap().image_gc.is_none());
    assert!(
        i.diagnosis(&r.settings)
            .contains("whether deleting images could have freed the disk is not known"),
        "{}",
        i.diagnosis(&r.settings)
    );
}

/// Evictions and collections open nothing by themselves; under memory
/// pressure the evicted pods are told, the images not.
#[test]
fn evictions_alone_open_nothing_and_memory_pressure_says_no_images() {
    let mut journal = at(&[(0, STARTED), (5_000, READY), (60_000, GC_NOT_ENOUGH)]);
    journal.push((61_000, evicted("default/a")));
    let r = judged(&journal, 900_000);
    assert!(r.incidents.is_empty(), "{:#?}", r.incidents);

    let mut journal = at(&[(0, STARTED), (5_000, READY), (30_000, GC_NOT_ENOUGH)]);
    journal.push((60_000, MEMORY.to_string()));
    journal.push((61_000, evicted("default/a")));
    journal.push((62_000, evicted("default/a")));
    let r = judged(&journal, 900_000);
    let i = r.one();
    assert_eq!(i.cause(), Cause::MemoryPressure);
    let n = i.not_ready().unwrap();
    assert_eq!(
        (n.evictions, n.evicted_pods.clone()),
        (2, vec!["default/a".to_string()])
    );
    let d = i.diagnosis(&r.settings);
    assert!(d.contains("made 2 evictions of 1 pod: default/a."), "{d}");
    assert!(!d.contains("garbage collection"), "{d}");
}
