//! The kernel under the node (design 5.8): its lines replayed through the
//! pipeline, scan and following alike: `kernel` incidents (a read-only
//! file system, tasks hung long) and the kernel's lines as the context of
//! the incidents they explain.

use super::*;
use crate::context::{ContextKind, WINDOW_LINES};
use crate::model::Entry;
use crate::signals::Cause;
use crate::testing::{End, Replay};
use crate::time::SECOND;

const T0: Micros = 1_796_205_600_000_000; // 2026-12-02T10:00:00Z

const REMOUNT: &str = "EXT4-fs (nvme0n1p1): Remounting filesystem read-only";
const JOURNAL_ABORTED: &str = "EXT4-fs error (device nvme0n1p1): ext4_journal_check_start:83: comm containerd: Detected aborted journal";
const BOOT: &str = "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)";
const TABLE_FULL: &str = "nf_conntrack: nf_conntrack: table full, dropping packet";
const PLEG: &str = r#"E1202 10:00:00.000000    2001 kubelet.go:2386] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s""#;
const TIMEOUT: &str = r#"E1202 10:00:00.000000    2001 kubelet_node_status.go:549] "Error updating node status, will retry" err="error getting node \"w1\": Get \"https://10.0.0.1:6443/api/v1/nodes/w1?resourceVersion=0&timeout=10s\": net/http: request canceled (Client.Timeout exceeded while awaiting headers)""#;
const INFO: &str = r#"I1202 10:00:00.000000    2001 kubelet.go:2480] "SyncLoop (housekeeping)""#;

fn hung(task: &str, pid: u32, secs: u64) -> String {
    format!("INFO: task {task}:{pid} blocked for more than {secs} seconds.")
}

fn kernel(s: i64, text: &str) -> Entry {
    crate::testing::kernel(T0 + s * SECOND, "w1", text)
}

fn kubelet(s: i64, text: &str) -> Entry {
    crate::testing::kubelet(T0 + s * SECOND, "w1", text)
}

/// The entries (in order) scanned and followed, ended at `end_s`: the two
/// must agree; the scan's.
fn judged(entries: &[Entry], end_s: i64) -> Replay {
    crate::testing::judged(entries, &Settings::default(), End::At(T0 + end_s * SECOND))
}

fn of(r: &Replay, kind: IncidentKind) -> Vec<&Incident> {
    r.incidents.iter().filter(|i| i.kind() == kind).collect()
}

/// The kubelet's info line every 10 s over `from..to`: a healthy kubelet
/// that goes on writing.
fn healthy(from: i64, to: i64) -> Vec<Entry> {
    (from..to).step_by(10).map(|s| kubelet(s, INFO)).collect()
}

fn merged(mut a: Vec<Entry>, b: Vec<Entry>) -> Vec<Entry> {
    a.extend(b);
    a.sort_by_key(|e| e.at);
    a
}

/// A read-only remount is a kernel incident at once: `readonly-fs`,
/// persistent, paged, NPD's `ReadonlyFilesystem`; the file system's error
/// before it is its context. The kubelet, still writing, says nothing of
/// it, and quiet never ends it.
#[test]
fn a_readonly_remount_is_a_kernel_incident_and_pages() {
    let entries = merged(
        healthy(0, 3600),
        vec![kernel(100, JOURNAL_ABORTED), kernel(100, REMOUNT)],
    );
    let r = judged(&entries, 3600);
    let i = r.one();
    assert_eq!(i.kind(), IncidentKind::Kernel);
    assert_eq!(i.node, "w1");
    assert_eq!(i.cause(), Cause::ReadonlyFs);
    assert_eq!(i.verdict(&r.settings), Verdict::Persistent);
    assert_eq!(i.status(), Status::Open);
    assert_eq!(i.opened_at, T0 + 100 * SECOND);
    let k = i.kernel().unwrap();
    assert_eq!(k.npd_condition(), NpdCondition::ReadonlyFilesystem);
    assert_eq!(k.readonly_devices, vec!["nvme0n1p1".to_string()]);
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
    assert_eq!(i.first_evidence().unwrap().text, REMOUNT);
    assert_eq!(i.context.len(), 1);
    assert_eq!(i.context[0].kind, ContextKind::FsError);
    let d = i.diagnosis(&r.settings);
    assert!(d.contains("read-only on nvme0n1p1"), "{d}");
}

/// XFS's shutdown is NPD's `XfsShutdown`, the same cause.
#[test]
fn an_xfs_shutdown_is_readonly_too() {
    let l = "XFS (dm-0): Corruption of in-memory data detected.  Shutting down filesystem";
    let r = judged(&[kubelet(0, INFO), kernel(5, l)], 60);
    let i = r.one();
    assert_eq!(i.cause(), Cause::ReadonlyFs);
    assert_eq!(
        i.kernel().unwrap().npd_condition(),
        NpdCondition::XfsShutdown
    );
}

/// containerd hung for twelve minutes (kernel 4.19+: each report says how
/// long) while PLEG is unhealthy: the not-ready incident (pleg) carries a
/// hung-task line in its context, and the kernel's own incident
/// (`hung-tasks`, NPD's `KernelDeadlock`) opens once the task has been
/// blocked longer than `not_ready_after` (3 min), paged at once.
#[test]
fn twelve_minutes_of_hung_tasks_beside_a_pleg_not_ready() {
    let mut lines = healthy(0, 120);
    for n in 1..=6 {
        // Reported every two minutes: blocked 120 s, 241 s, 362 s, …
        let secs = 120 * n + (n - 1);
        lines.push(kernel(
            i64::try_from(120 * n).unwrap(),
            &hung("containerd", 1187, secs),
        ));
    }
    lines.extend((180..=720).step_by(10).map(|s| kubelet(s, PLEG)));
    let r = judged(&merged(lines, Vec::new()), 730);
    let nr = of(&r, IncidentKind::NotReady);
    assert_eq!(nr.len(), 1, "{:#?}", r.incidents);
    assert_eq!(nr[0].cause(), Cause::Pleg);
    assert!(
        nr[0]
            .context
            .iter()
            .any(|c| c.kind == ContextKind::HungTask),
        "{:#?}",
        nr[0].context
    );
    let words = nr[0].diagnosis(&r.settings);
    assert!(words.contains("tasks hung"), "{words}");
    let kernels = of(&r, IncidentKind::Kernel);
    assert_eq!(kernels.len(), 1);
    let k = kernels[0];
    assert_eq!(k.cause(), Cause::HungTasks);
    assert_eq!(k.verdict(&r.settings), Verdict::Persistent);
    assert_eq!(
        k.kernel().unwrap().npd_condition(),
        NpdCondition::KernelDeadlock
    );
    // The second report (241 s blocked, at 240 s) is past 3 minutes.
    assert_eq!(k.opened_at, T0 + 240 * SECOND);
    let t = &k.kernel().unwrap().hung_tasks;
    assert_eq!((t[0].task.as_str(), t[0].pid), ("containerd", 1187));
    assert_eq!(t[0].blocked_secs, 725);
    assert!(
        r.alerts()
            .iter()
            .any(|(a, id)| *a == AlertKind::Opened && *id == k.id)
    );
}

/// Before 4.19 the kernel wrote its timeout at every report (120, 120,
/// …): reports of the same task two minutes apart add up all the same.
#[test]
fn old_kernels_reports_of_one_task_add_up() {
    let mut e = healthy(0, 600);
    e.extend([
        kernel(120, &hung("dockerd", 14148, 120)),
        kernel(240, &hung("dockerd", 14148, 120)),
    ]);
    let r = judged(&merged(e, Vec::new()), 600);
    let k = r.one();
    assert_eq!(k.kind(), IncidentKind::Kernel);
    assert_eq!(k.opened_at, T0 + 240 * SECOND);
    // Another task's report, or the same task after it ran again, does
    // not add to it.
    let mut e = healthy(0, 1200);
    e.extend([
        kernel(120, &hung("dockerd", 14148, 120)),
        kernel(240, &hung("containerd", 900, 120)),
        kernel(900, &hung("dockerd", 14148, 120)),
    ]);
    let r = judged(&merged(e, Vec::new()), 1200);
    assert!(r.incidents.is_empty(), "{:#?}", r.incidents);
}

/// One report of a task blocked two minutes, on a healthy node: nothing.
/// One report of four minutes counts its four minutes.
#[test]
fn one_two_minute_hung_task_opens_nothing() {
    let e = merged(
        healthy(0, 600),
        vec![kernel(130, &hung("kworker/u4:2", 141, 120))],
    );
    let r = judged(&e, 600);
    assert!(r.incidents.is_empty(), "{:#?}", r.incidents);
    assert!(r.alerts().is_empty());
    let e = merged(
        healthy(0, 600),
        vec![kernel(130, &hung("jbd2/nvme0n1p1-8", 363, 245))],
    );
    assert_eq!(judged(&e, 600).one().cause(), Cause::HungTasks);
}

/// Five minutes of a full conntrack table beside api-timeout retries: the
/// node-status incident carries the `table full` line in its context, and
/// its diagnosis says the node's own table dropped the connections.
#[test]
fn a_full_conntrack_table_explains_api_timeouts() {
    let mut e: Vec<Entry> = (0..300).step_by(2).map(|s| kernel(s, TABLE_FULL)).collect();
    e.extend((60..300).step_by(10).map(|s| kubelet(s, TIMEOUT)));
    let r = judged(&merged(e, Vec::new()), 300);
    let i = r.one();
    assert_eq!(i.kind(), IncidentKind::NodeStatus);
    assert_eq!(i.cause(), Cause::ApiTimeout);
    assert!(
        i.context.iter().any(|c| c.text == TABLE_FULL),
        "{:#?}",
        i.context
    );
    // A run of 150 alike lines is two: its first and its latest.
    assert_eq!(i.context.len(), 2, "{:#?}", i.context);
    let d = i.diagnosis(&r.settings);
    assert!(d.contains("conntrack table was full"), "{d}");
    assert!(d.contains("and 149 more like it"), "{d}");
}

/// A flood of alike kernel lines neither grows the host's window nor
/// pushes out the lines before it: a lost link stays in the context of
/// the api-unreachable trouble after it.
#[test]
fn a_flood_keeps_the_lines_before_it() {
    let mut p =
        crate::pipeline::Pipeline::new(crate::model::EntryFilter::default(), Settings::default());
    let mut out = Vec::new();
    p.push(
        kernel(0, "e1000e 0000:00:1f.6 eno1: NIC Link is Down"),
        &mut out,
    );
    for k in 0..5000 {
        p.push(
            crate::testing::kernel(T0 + SECOND + k * 10_000, "w1", TABLE_FULL),
            &mut out,
        );
    }
    p.flush(&mut out);
    let w: Vec<_> = p
        .tracker()
        .hosts
        .get("w1")
        .unwrap()
        .context
        .lines()
        .cloned()
        .collect();
    assert_eq!(w.len(), 3, "{w:#?}");
    assert!(w.len() < WINDOW_LINES);
    assert_eq!(w[0].kind, ContextKind::LinkLost);
    assert_eq!(w[2].repeats, 4998);
}

/// The host's next boot (the kernel's `Linux version` line) resolves it,
/// with a resolved notice, and forgets the hung tasks of the boot before.
#[test]
fn the_next_boot_resolves_it() {
    let e = merged(
        healthy(0, 1200),
        vec![
            kernel(100, REMOUNT),
            kernel(110, &hung("containerd", 1187, 120)),
            kernel(900, BOOT),
            // The first report of the new boot: two minutes, nothing.
            kernel(1100, &hung("containerd", 1187, 120)),
        ],
    );
    let r = judged(&e, 1200);
    let i = r.one();
    assert_eq!(i.kind(), IncidentKind::Kernel);
    assert_eq!(i.resolution, Some(Resolution::Rebooted));
    assert_eq!(i.resolved_at, Some(T0 + 900 * SECOND));
    assert_eq!(
        r.alert_kinds(),
        vec![AlertKind::Opened, AlertKind::Resolved]
    );
    assert!(i.diagnosis(&r.settings).contains("the host booted again"));
}

/// A saved log may say anything: an absurd `N` is a task blocked for
/// ever, not an overflow.
#[test]
fn an_absurd_report_is_no_overflow() {
    for n in ["18446744073709551615", "9223372036854775807", "0"] {
        let e = vec![
            kubelet(0, INFO),
            kernel(
                10,
                &format!("INFO: task x:1 blocked for more than {n} seconds."),
            ),
        ];
        let r = judged(&e, 60);
        assert_eq!(r.incidents.len(), usize::from(n != "0"), "{n}");
        for i in &r.incidents {
            assert!(!i.diagnosis(&r.settings).is_empty());
        }
    }
}
