//! kubelet-down incidents (design 5.1): systemd's lines about the unit and
//! the kubelet's fatal lines replayed through the pipeline.

use super::*;
use crate::signals::Cause;
use crate::testing::{End, Replay, unit_line};

const T0: Micros = 1_752_596_690_000_000; // 2025-07-15T16:24:50Z

const SWAP: &str = r#"E0715 16:24:50.000000    2425 run.go:74] "command failed" err="failed to run Kubelet: running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false. /proc/swaps contained: [Filename Type Size Used Priority /swap.img file 2009084 0 -2]""#;
const EXITED: &str = "kubelet.service: Main process exited, code=exited, status=1/FAILURE";
const FAILED: &str = "kubelet.service: Failed with result 'exit-code'.";
const STARTED: &str = "Started kubelet: The Kubernetes Node Agent.";
const STOPPED: &str = "Stopped kubelet: The Kubernetes Node Agent.";
const STOPPING: &str = "Stopping kubelet: The Kubernetes Node Agent...";
const READY: &str = r#"I0101 00:00:00.000000    1 kubelet_node_status.go:679] "Recording event message for node" node="w1" event="NodeReady""#;

fn replay(lines: &[(i64, String)], end_ms: i64) -> Replay {
    let entries = lines
        .iter()
        .map(|(ms, text)| unit_line(T0 + ms * 1000, "w1", text));
    crate::testing::replay(entries, &Settings::default(), End::At(T0 + end_ms * 1000))
}

/// `n` crash cycles 10.5 s apart: start, the fatal swap line, systemd's
/// exit, failure, restart and stop lines.
fn crash_loop(n: i64) -> Vec<(i64, String)> {
    let mut v = Vec::new();
    for k in 0..n {
        let t = k * 10_500;
        v.push((t, STARTED.to_string()));
        v.push((t + 100, SWAP.to_string()));
        v.push((t + 150, EXITED.to_string()));
        v.push((t + 151, FAILED.to_string()));
        v.push((
            t + 10_400,
            format!(
                "kubelet.service: Scheduled restart job, restart counter is at {}.",
                k + 1
            ),
        ));
        v.push((t + 10_401, STOPPED.to_string()));
    }
    v
}

#[test]
fn a_swap_crash_loop_is_one_incident_with_its_restarts() {
    // 40 restarts in 7 minutes.
    let r = replay(&crash_loop(40), 40 * 10_500);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    let i = &r.incidents[0];
    assert_eq!(i.kind(), IncidentKind::KubeletDown);
    assert_eq!(i.node, "w1");
    assert_eq!(i.restarts(), 40);
    assert_eq!(i.cause(), Cause::Swap);
    assert_eq!(i.verdict(&r.settings), Verdict::CrashLoop);
    assert_eq!(r.alert_kinds().first(), Some(&AlertKind::Opened));
    assert_eq!(
        r.alert_kinds()
            .iter()
            .filter(|a| **a == AlertKind::Opened)
            .count(),
        1
    );
    let d = i.diagnosis(&r.settings);
    assert!(d.contains("restarted it 40 times"), "{d}");
    assert!(d.contains("running with swap on is not supported"), "{d}");
    assert!(d.contains("status=1/FAILURE"), "{d}");
}

#[test]
fn a_kubelet_killed_once_and_up_again_is_transient() {
    let lines: Vec<(i64, String)> = [
        (0, STARTED),
        (
            60_000,
            "kubelet.service: Main process exited, code=killed, status=9/KILL",
        ),
        (60_001, "kubelet.service: Failed with result 'signal'."),
        (
            70_000,
            "kubelet.service: Scheduled restart job, restart counter is at 1.",
        ),
        (70_001, STOPPED),
        (70_002, STARTED),
    ]
    .iter()
    .map(|(t, s)| (*t, (*s).to_string()))
    .collect();
    let r = replay(&lines, 300_000);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    let i = &r.incidents[0];
    assert_eq!(i.status(), Status::Resolved);
    assert_eq!(i.resolution, Some(Resolution::Quiet));
    assert_eq!(i.cause(), Cause::Killed);
    assert_eq!(i.verdict(&r.settings), Verdict::Transient);
    assert_eq!(i.restarts(), 1);
    assert!(r.alert_kinds().is_empty());
}

#[test]
fn a_unit_systemd_gave_up_on_is_failed_and_alerts_at_once() {
    let mut lines = crash_loop(2);
    let t = 2 * 10_500;
    lines.push((t, STARTED.to_string()));
    lines.push((t + 100, SWAP.to_string()));
    lines.push((t + 150, EXITED.to_string()));
    lines.push((
        t + 151,
        "kubelet.service: Start request repeated too quickly.".into(),
    ));
    lines.push((
        t + 152,
        "kubelet.service: Failed with result 'start-limit-hit'.".into(),
    ));
    lines.push((
        t + 153,
        "Failed to start kubelet: The Kubernetes Node Agent.".into(),
    ));
    let r = replay(&lines, t + 600_000);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    let i = &r.incidents[0];
    assert_eq!(i.verdict(&r.settings), Verdict::Failed);
    assert_eq!(i.status(), Status::Open);
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
}

#[test]
fn an_exit_with_no_restart_for_resolve_after_is_failed() {
    let lines: Vec<(i64, String)> = [(0, STARTED), (100, EXITED), (101, FAILED)]
        .iter()
        .map(|(t, s)| (*t, (*s).to_string()))
        .collect();
    let r = replay(&lines, 120_000);
    let i = &r.incidents[0];
    assert_eq!(i.verdict(&r.settings), Verdict::Failed);
    assert_eq!(i.cause(), Cause::Unknown);
    assert_eq!(r.alert_kinds(), vec![AlertKind::Opened]);
}

#[test]
fn a_requested_stop_gives_none_and_ends_an_open_one() {
    let stop: Vec<(i64, String)> = [
        (0, STARTED),
        (60_000, STOPPING),
        (
            60_500,
            "kubelet.service: Main process exited, code=killed, status=9/KILL",
        ),
        (60_501, "kubelet.service: Failed with result 'signal'."),
        (60_502, STOPPED),
        (70_000, STARTED),
    ]
    .iter()
    .map(|(t, s)| (*t, (*s).to_string()))
    .collect();
    let r = replay(&stop, 300_000);
    assert!(r.incidents.is_empty(), "{:#?}", r.incidents);
    // A crash loop, then `systemctl stop` while it runs.
    let mut lines = crash_loop(2);
    lines.push((21_000, STARTED.to_string()));
    lines.push((25_000, STOPPING.to_string()));
    lines.push((25_001, STOPPED.to_string()));
    let r = replay(&lines, 300_000);
    assert_eq!(r.incidents.len(), 1);
    assert_eq!(r.incidents[0].resolution, Some(Resolution::Stopped));
    assert_eq!(r.incidents[0].verdict(&r.settings), Verdict::Transient);
}

/// `systemctl stop` while a crash-looping kubelet waits to be restarted
/// (first-hour recheck): systemd says `Stopped` 256 ms after the failed
/// exit, with no `Scheduled restart job` between (its own restart always
/// says that first). A stop that was asked for: the incident ends
/// `stopped`, and nothing says systemd gave up (it was judged failed and
/// paged twice: "systemd gave up", then "still failing").
#[test]
fn a_stop_while_a_crash_loop_waits_to_restart_was_asked_for() {
    let mut lines = crash_loop(4);
    lines.truncate(lines.len() - 2);
    let last = lines.last().map_or(0, |(t, _)| *t);
    lines.push((last + 256, STOPPED.to_string()));
    let r = replay(&lines, last + 600_000);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    let i = &r.incidents[0];
    assert_eq!(i.resolution, Some(Resolution::Stopped));
    assert!(i.down().is_some_and(|d| d.gave_up_at.is_none()), "{i:#?}");
    assert_ne!(i.verdict(&r.settings), Verdict::Failed);
    assert!(
        !r.alert_kinds().contains(&AlertKind::Repeat),
        "{:?}",
        r.alert_kinds()
    );
}

#[test]
fn node_ready_ends_it_and_node_status_incidents_are_apart() {
    let mut lines = crash_loop(1);
    lines.push((10_500, STARTED.to_string()));
    lines.push((11_000, READY.to_string()));
    let r = replay(&lines, 12_000);
    assert_eq!(r.incidents.len(), 1);
    assert_eq!(r.incidents[0].kind(), IncidentKind::KubeletDown);
    assert_eq!(r.incidents[0].resolution, Some(Resolution::NodeReady));
}

/// Issue 38 (5.1, watchdog): a hung kubelet killed by systemd's watchdog
/// (`WatchdogSec=1min`) five times, 70 s apart, restarted 5 s after each
/// and killed 65 s after its start (it answered a few seconds, then hung). Each kill ended before the next (five transient `killed`
/// incidents, no page); it is one crash-loop incident, cause `watchdog`,
/// paged: its quiet after a start outlasts the watchdog's limit.
#[test]
fn kills_by_the_watchdog_again_and_again_are_one_crash_loop() {
    // systemd's lines of each kill; with or without its `Killing process …`
    // line (not every version writes it).
    for killing in [false, true] {
        watchdog_kills(killing);
    }
}

fn watchdog_kills(killing: bool) {
    let line = |t: i64, s: &str| (t, s.to_string());
    let mut v = vec![line(0, STARTED)];
    for k in 0..5 {
        let t = 60_000 + k * 70_000;
        v.push(line(t, "kubelet.service: Watchdog timeout (limit 1min)!"));
        if killing {
            v.push(line(
                t + 1,
                "kubelet.service: Killing process 2425 (kubelet) with signal SIGABRT.",
            ));
        }
        v.push(line(
            t + 400,
            "kubelet.service: Main process exited, code=dumped, status=6/ABRT",
        ));
        v.push(line(
            t + 401,
            "kubelet.service: Failed with result 'watchdog'.",
        ));
        v.push(line(
            t + 5_000,
            "kubelet.service: Scheduled restart job, restart counter is at 1.",
        ));
        v.push(line(t + 5_001, STOPPED));
        v.push(line(t + 5_002, STARTED));
    }
    let r = replay(&v, 60_000 + 5 * 70_000 + 600_000);
    assert_eq!(
        r.incidents.len(),
        1,
        "killing line {killing}: {:#?}",
        r.incidents
    );
    let i = &r.incidents[0];
    assert_eq!(i.kind(), IncidentKind::KubeletDown);
    assert_eq!(i.cause(), Cause::Watchdog);
    assert_eq!(i.restarts(), 5);
    assert_eq!(i.verdict(&r.settings), Verdict::CrashLoop);
    assert_eq!(r.alert_kinds().first(), Some(&AlertKind::Opened));
    assert!(
        i.diagnosis(&r.settings).contains("watchdog"),
        "{}",
        i.diagnosis(&r.settings)
    );
    // One kill alone stays what it was: transient, not paged.
    let one: Vec<(i64, String)> = v
        .iter()
        .take(if killing { 8 } else { 7 })
        .cloned()
        .collect();
    let r = replay(&one, 600_000);
    assert_eq!(r.incidents.len(), 1, "{:#?}", r.incidents);
    assert_eq!(r.incidents[0].cause(), Cause::Watchdog);
    assert_eq!(r.incidents[0].verdict(&r.settings), Verdict::Transient);
    assert!(r.alert_kinds().is_empty(), "{:?}", r.alert_kinds());
}

#[test]
fn systemd_spans_are_read() {
    use crate::tracker::kind::systemd_span;
    assert_eq!(systemd_span("1min"), Some(60_000_000));
    assert_eq!(systemd_span("3min 20s"), Some(200_000_000));
    assert_eq!(systemd_span("500ms"), Some(500_000));
    assert_eq!(systemd_span("1h 30min"), Some(5_400_000_000));
    assert_eq!(systemd_span("soon"), None);
    assert_eq!(systemd_span(""), None);
}
