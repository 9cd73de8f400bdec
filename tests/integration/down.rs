//! Issue 20, design 5.1: when the kubelet itself is down. Real crash-loop
//! pastes from public bug reports (`fixtures/kubelet-down/`, verbatim, each
//! with its source), saved text logs in the shapes people paste them
//! (`journalctl -u kubelet`, `/var/log/messages`, `systemctl status`), and
//! a journal file with systemd's own entries (`_PID=1`, `UNIT=`) written
//! by `systemd-journal-remote`: each gives the kubelet-down incident an
//! operator expects.

use kubelet_sentinel::Format;
use kubelet_sentinel::IncidentOut;
use kubelet_sentinel::Settings;
use kubelet_sentinel::{Micros, SECOND};

use crate::support::{bin, export_entry, fixture, journal_remote, run, scan_path};

struct Expect {
    file: &'static str,
    node: &'static str,
    verdict: &'static str,
    cause: &'static str,
    restarts: u64,
    /// entries, kubelet lines, recognized, unparsed, foreign
    summary: [u64; 5],
}

fn cases() -> Vec<Expect> {
    let e = |file, node, cause, restarts, summary| Expect {
        file,
        node,
        // Each paste ends while the kubelet is still down.
        verdict: "undetermined",
        cause,
        restarts,
        summary,
    };
    vec![
        // Structured "Failed to load kubelet config file", counter 8 and
        // the next start dying the same way.
        e(
            "apache-cloudstack-5999.txt",
            "systemvm",
            "config",
            1,
            [8, 8, 8, 0, 0],
        ),
        // Old systemd's wording, the legacy cgroup-driver F line.
        e(
            "kubernetes-kubelet-9.txt",
            "master",
            "cgroup-driver",
            0,
            [4, 4, 4, 0, 0],
        ),
        // systemctl status: its header is not entries (foreign); the fatal
        // line systemctl ellipsized names no cause; its hint is foreign.
        e(
            "kubernetes-kubelet-9-status.txt",
            "master",
            "unknown",
            0,
            [12, 3, 3, 0, 9],
        ),
        // Exit 255 and no fatal line; hold-off and "Scheduled restart job"
        // are one restart; journalctl -x's catalog lines are foreign.
        e(
            "kubernetes-kubeadm-1008.txt",
            "node1",
            "unknown",
            1,
            [20, 6, 6, 0, 14],
        ),
        // Credentials, then config: one fatal line each, the latest wins.
        // The paste ends with `Stopped` right after the second failed exit
        // and no `Scheduled restart job` between: a stop job (minikube
        // stops the kubelet while it sets up), not systemd's restart; the
        // incident ends `stopped`, one restart, not judged failed.
        Expect {
            verdict: "transient",
            ..e(
                "kubernetes-minikube-9122.txt",
                "minikube",
                "config",
                1,
                [11, 11, 11, 0, 0],
            )
        },
        // 203/EXEC: the binary cannot be run; two restarts.
        e(
            "kubernetes-minikube-5690.txt",
            "localhost.localdomain",
            "exec",
            2,
            [11, 11, 11, 0, 0],
        ),
        // Structured "command failed", bootstrap kubeconfig missing.
        e(
            "easzlab-kubeasz-1257.txt",
            "k8sMaster",
            "credentials",
            0,
            [4, 4, 3, 0, 0],
        ),
        // cobra's "error: failed to run Kubelet" (no klog header), swap.
        e(
            "kubevirt-kubevirt-478.txt",
            "master",
            "swap",
            0,
            [2, 2, 2, 0, 0],
        ),
        // The runtime (docker) not answering at start; no systemd line.
        e(
            "clearlinux-distribution-1004.txt",
            "pmem-csi-clear-govm-worker1",
            "runtime",
            0,
            [6, 6, 2, 0, 0],
        ),
        // The reporter's markdown bold inside the fatal line: read without it.
        e(
            "kubernetes-website-8777.txt",
            "fed-node",
            "cgroup-driver",
            1,
            [5, 5, 5, 0, 0],
        ),
        // Port 10250 taken: the bare legacy F line of the listen error.
        e(
            "kubernetes-minikube-4500.txt",
            "localhost.localdomain",
            "port-in-use",
            0,
            [5, 5, 4, 0, 0],
        ),
        // The same, structured ("Failed to listen and serve"); the healthz
        // line before it is not fatal.
        e(
            "kubernetes-kubernetes-112364.txt",
            "node15",
            "port-in-use",
            0,
            // Recognised: the three of its exit, and image garbage
            // collection's first failure before stats (design 5.3).
            [13, 7, 4, 0, 6],
        ),
        // /var/log/messages: "systemd:" and "kubelet:" without PIDs.
        e(
            "kubernetes-kubernetes-73779.txt",
            "chgvascldp99",
            "config",
            1,
            [5, 5, 5, 0, 0],
        ),
    ]
}

#[test]
fn real_crash_loops_give_their_kubelet_down_incidents() {
    let settings = Settings::default();
    for c in cases() {
        let path = fixture(&format!("kubelet-down/{}", c.file));
        let r = scan_path(&path, Format::Auto);
        let s = &r.summary;
        assert_eq!(
            [
                s.entries,
                s.kubelet_lines,
                s.recognized,
                s.unparsed,
                s.foreign
            ],
            c.summary,
            "{}: {s:?}",
            c.file
        );
        assert_eq!(
            s.kubelet_lines,
            s.lines + s.continuations + s.unparsed,
            "{}",
            c.file
        );
        let got: Vec<IncidentOut> = r
            .incidents
            .iter()
            .map(|i| IncidentOut::new(i, &settings))
            .collect();
        assert_eq!(got.len(), 1, "{}: {got:#?}", c.file);
        let g = &got[0];
        assert_eq!(
            (
                g.kind.as_str(),
                g.node.as_str(),
                g.verdict.as_str(),
                g.cause.as_str(),
                g.restarts
            ),
            ("kubelet-down", c.node, c.verdict, c.cause, c.restarts),
            "{}: {}",
            c.file,
            g.diagnosis
        );
        assert!(!g.diagnosis.is_empty());
    }
}

/// A `journalctl -u kubelet` paste of `cycles` crash cycles `gap_s` apart:
/// the swap fatal line, systemd's exit, failure, restart and stop lines.
fn crash_paste(cycles: u32, gap_s: u32) -> String {
    let mut out = String::new();
    for k in 0..cycles {
        let t = chrono::DateTime::from_timestamp(1_754_390_968 + i64::from(k * gap_s), 0).unwrap();
        let ts = |d: i64| {
            (t + chrono::Duration::seconds(d))
                .format("%b %d %H:%M:%S")
                .to_string()
        };
        let klog = t.format("%m%d %H:%M:%S%.6f");
        let pid = 2000 + k;
        out.push_str(&format!(
            "{} w-swap systemd[1]: Started kubelet: The Kubernetes Node Agent.\n\
             {} w-swap kubelet[{pid}]: E{klog}    {pid} run.go:74] \"command failed\" err=\"failed to run Kubelet: running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false. /proc/swaps contained: [Filename\\t\\t\\t\\tType\\t\\tSize\\t\\tUsed\\t\\tPriority /swap.img                               file\\t\\t2009084\\t\\t0\\t\\t-2]\"\n\
             {} w-swap systemd[1]: kubelet.service: Main process exited, code=exited, status=1/FAILURE\n\
             {} w-swap systemd[1]: kubelet.service: Failed with result 'exit-code'.\n\
             {} w-swap systemd[1]: kubelet.service: Scheduled restart job, restart counter is at {}.\n\
             {} w-swap systemd[1]: Stopped kubelet: The Kubernetes Node Agent.\n",
            ts(0),
            ts(0),
            ts(0),
            ts(0),
            ts(i64::from(gap_s) - 1),
            k + 1,
            ts(i64::from(gap_s) - 1),
        ));
    }
    out
}

fn scan_text(text: &str) -> serde_json::Value {
    let out = run(
        bin().args(["scan", "--utc", "--year", "2025", "-o", "json", "-"]),
        Some(text.as_bytes()),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_swap_crash_loop_paste_is_one_crash_loop_with_its_restarts() {
    // 40 restarts in 7 minutes.
    let v = scan_text(&crash_paste(40, 10));
    let inc = v["incidents"].as_array().unwrap();
    assert_eq!(inc.len(), 1, "{v:#}");
    let i = &inc[0];
    assert_eq!(i["kind"], "kubelet-down");
    assert_eq!(i["node"], "w-swap");
    assert_eq!(i["verdict"], "crash-loop");
    assert_eq!(i["cause"], "swap");
    assert_eq!(i["restarts"], 40);
    assert_eq!(i["last_exit"], "code=exited, status=1/FAILURE");
    assert_eq!(v["summary"]["unparsed"], 0);
    let d = i["diagnosis"].as_str().unwrap();
    assert!(d.contains("running with swap on is not supported"), "{d}");
    let steps = i["next_steps"].to_string();
    assert!(
        steps.contains("swapon --show") && steps.contains("failSwapOn"),
        "{steps}"
    );
    assert!(d.contains("restarted it 40 times since"), "{d}");
    // incidents --kind and the table.
    let out = run(
        bin().args(["scan", "--utc", "--year", "2025", "-"]),
        Some(crash_paste(40, 10).as_bytes()),
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("crash-loop (kubelet-down)"), "{table}");
    assert!(table.contains("40 restarts"), "{table}");
}

#[test]
fn killed_once_is_transient_a_given_up_unit_failed_a_requested_stop_nothing() {
    let day = "Aug 05";
    let lines = |l: &[(&str, &str)]| -> String {
        l.iter().fold(String::new(), |mut s, (t, m)| {
            s.push_str(&format!("{day} {t} w1 {m}\n"));
            s
        })
    };
    let up = r#"kubelet[3001]: I0805 10:03:00.000000    3001 server.go:484] "Kubelet version" kubeletVersion="v1.31.0""#;
    let later = r#"kubelet[3001]: I0805 10:06:00.000000    3001 kubelet.go:2400] "SyncLoop (PLEG): event for pod" pod="default/p""#;
    // Killed during an upgrade, up again: transient, killed, resolved.
    let killed = scan_text(&lines(&[
        (
            "10:00:00",
            "systemd[1]: Started kubelet: The Kubernetes Node Agent.",
        ),
        (
            "10:02:50",
            "systemd[1]: kubelet.service: Main process exited, code=killed, status=9/KILL",
        ),
        (
            "10:02:50",
            "systemd[1]: kubelet.service: Failed with result 'signal'.",
        ),
        (
            "10:03:00",
            "systemd[1]: kubelet.service: Scheduled restart job, restart counter is at 1.",
        ),
        (
            "10:03:00",
            "systemd[1]: Stopped kubelet: The Kubernetes Node Agent.",
        ),
        (
            "10:03:00",
            "systemd[1]: Started kubelet: The Kubernetes Node Agent.",
        ),
        ("10:03:00", up),
        ("10:06:00", later),
    ]));
    let i = &killed["incidents"][0];
    assert_eq!(
        killed["incidents"].as_array().unwrap().len(),
        1,
        "{killed:#}"
    );
    assert_eq!(
        (
            &i["kind"],
            &i["verdict"],
            &i["cause"],
            &i["status"],
            &i["restarts"]
        ),
        (
            &"kubelet-down".into(),
            &"transient".into(),
            &"killed".into(),
            &"resolved".into(),
            &1.into()
        ),
        "{i:#}"
    );
    // systemd gave up: failed, and still open.
    let gave_up = scan_text(&lines(&[
        (
            "10:00:00",
            "systemd[1]: Started kubelet: The Kubernetes Node Agent.",
        ),
        (
            "10:00:01",
            "systemd[1]: kubelet.service: Main process exited, code=exited, status=1/FAILURE",
        ),
        (
            "10:00:01",
            "systemd[1]: kubelet.service: Failed with result 'exit-code'.",
        ),
        (
            "10:00:02",
            "systemd[1]: kubelet.service: Start request repeated too quickly.",
        ),
        (
            "10:00:02",
            "systemd[1]: kubelet.service: Failed with result 'start-limit-hit'.",
        ),
        (
            "10:00:02",
            "systemd[1]: Failed to start kubelet: The Kubernetes Node Agent.",
        ),
    ]));
    let i = &gave_up["incidents"][0];
    assert_eq!(
        (&i["verdict"], &i["status"]),
        (&"failed".into(), &"open".into()),
        "{i:#}"
    );
    // A requested stop and start (kubeadm upgrade): nothing.
    let stop = scan_text(&lines(&[
        (
            "10:00:00",
            "systemd[1]: Started kubelet: The Kubernetes Node Agent.",
        ),
        (
            "10:05:00",
            "systemd[1]: Stopping kubelet: The Kubernetes Node Agent...",
        ),
        (
            "10:05:00",
            "systemd[1]: kubelet.service: Deactivated successfully.",
        ),
        (
            "10:05:00",
            "systemd[1]: Stopped kubelet: The Kubernetes Node Agent.",
        ),
        (
            "10:05:01",
            "systemd[1]: Started kubelet: The Kubernetes Node Agent.",
        ),
    ]));
    assert_eq!(stop["incidents"].as_array().unwrap().len(), 0, "{stop:#}");
}

/// systemd's entries as the journal holds them: `_PID=1`, `_SYSTEMD_UNIT`
/// init.scope, `UNIT=kubelet.service`; the kubelet's from its own unit.
#[test]
fn a_journal_with_systemds_entries_gives_the_crash_loop() {
    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    let t0: Micros = 1_795_856_400_000_000;
    let systemd = |out: &mut Vec<u8>, at: Micros, msg: &str| {
        export_entry(
            out,
            &[
                ("__REALTIME_TIMESTAMP", &at.to_string()),
                ("_HOSTNAME", "w-journal"),
                ("_PID", "1"),
                ("_SYSTEMD_UNIT", "init.scope"),
                ("UNIT", "kubelet.service"),
                ("SYSLOG_IDENTIFIER", "systemd"),
                ("MESSAGE", msg),
            ],
        );
    };
    for k in 0..40i64 {
        let at = t0 + k * 10 * SECOND + k * 500_000;
        let pid = (3000 + k).to_string();
        systemd(
            &mut out,
            at,
            "Started kubelet.service - kubelet: The Kubernetes Node Agent.",
        );
        let klog = chrono::DateTime::from_timestamp_micros(at + 100_000)
            .unwrap()
            .format("%m%d %H:%M:%S%.6f");
        export_entry(
            &mut out,
            &[
                ("__REALTIME_TIMESTAMP", &(at + 100_000).to_string()),
                ("_HOSTNAME", "w-journal"),
                ("_PID", &pid),
                ("_SYSTEMD_UNIT", "kubelet.service"),
                ("SYSLOG_IDENTIFIER", "kubelet"),
                (
                    "MESSAGE",
                    &format!(
                        "E{klog}    {pid} run.go:74] \"command failed\" err=\"failed to run Kubelet: running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false.\""
                    ),
                ),
            ],
        );
        systemd(
            &mut out,
            at + 150_000,
            "kubelet.service: Main process exited, code=exited, status=1/FAILURE",
        );
        systemd(
            &mut out,
            at + 151_000,
            "kubelet.service: Failed with result 'exit-code'.",
        );
        systemd(
            &mut out,
            at + 10 * SECOND,
            &format!(
                "kubelet.service: Scheduled restart job, restart counter is at {}.",
                k + 1
            ),
        );
        systemd(
            &mut out,
            at + 10 * SECOND + 1,
            "Stopped kubelet.service - kubelet: The Kubernetes Node Agent.",
        );
    }
    let file = dir.path().join("kubelet.journal");
    journal_remote(&out, &file);
    let r = run(bin().args(["scan", "-o", "json"]).arg(&file), None);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let inc = v["incidents"].as_array().unwrap();
    assert_eq!(inc.len(), 1, "{v:#}");
    assert_eq!(
        (
            &inc[0]["kind"],
            &inc[0]["verdict"],
            &inc[0]["cause"],
            &inc[0]["restarts"]
        ),
        (
            &"kubelet-down".into(),
            &"crash-loop".into(),
            &"swap".into(),
            &40.into()
        ),
        "{v:#}"
    );
    assert_eq!(inc[0]["node"], "w-journal");
}

/// Issue 25's classes of old systemd and `/var/log/messages` (made-up
/// pastes: no real one was found with all of it): the unit named only by
/// its description, a `holdoff time over` that no start followed before
/// systemd refused, the unit gone under a restart job, and the same paste
/// through `grep -n`.
#[test]
fn old_systemd_and_description_named_units() {
    let settings = Settings::default();
    let one = |r: &kubelet_sentinel::ScanResult| -> Vec<IncidentOut> {
        r.incidents
            .iter()
            .map(|i| IncidentOut::new(i, &settings))
            .collect()
    };
    let path = fixture("kubelet-down/made-up-old-systemd-gives-up.txt");
    let r = scan_path(&path, Format::Auto);
    // Every line of the paste is recognised, systemd's by description too
    // (the fixture's two header lines are banners).
    assert_eq!((r.summary.kubelet_lines, r.summary.recognized), (19, 19));
    let got = one(&r);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(
        (
            got[0].verdict.as_str(),
            got[0].cause.as_str(),
            got[0].restarts
        ),
        ("failed", "credentials", 2),
        "{}",
        got[0].diagnosis
    );
    // Through `grep -n`: the same.
    let text = std::fs::read_to_string(&path).unwrap();
    let numbered = text
        .lines()
        .enumerate()
        .fold(String::new(), |mut out, (n, l)| {
            out.push_str(&format!("{}:{l}\n", 104_233 + n));
            out
        });
    let dir = tempfile::tempdir().unwrap();
    let grep = dir.path().join("grep-n.txt");
    std::fs::write(&grep, numbered).unwrap();
    let r = scan_path(&grep, Format::Auto);
    // Numbered, the header lines are text nobody can read: counted, not
    // recognised.
    assert_eq!((r.summary.kubelet_lines, r.summary.recognized), (21, 19));
    let again = one(&r);
    assert_eq!(
        (again.len(), again[0].restarts, again[0].verdict.as_str()),
        (1, 2, "failed")
    );
    // A stop named by description: the exit inside it was asked for.
    let r = scan_path(
        &fixture("kubelet-down/made-up-stop-by-description.txt"),
        Format::Auto,
    );
    assert!(r.incidents.is_empty(), "{:#?}", one(&r));
}

/// Issue 25's classes: the kubelet's fatal word with no klog header and no
/// time of its own (cobra's `Error: failed to run Kubelet: …` after a klog
/// line in a raw paste) is a line of its own, its cause, dated by its
/// neighbour; a Go panic with no fatal word is `killed` (design 5.1).
#[test]
fn headerless_fatal_words_and_go_panics() {
    let raw = scan_text(
        "I0303 12:00:00.000000     400 server.go:484] \"Kubelet version\" kubeletVersion=\"v1.31.0\"\n\
         Error: failed to run Kubelet: running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false.\n",
    );
    let i = &raw["incidents"][0];
    assert_eq!(
        (&i["kind"], &i["cause"]),
        (&"kubelet-down".into(), &"swap".into()),
        "{raw:#}"
    );
    assert_eq!(i["opened_at"], "2025-03-03T12:00:00.000Z", "{raw:#}");
    assert_eq!(raw["summary"]["recognized"], 2, "{raw:#}");
    let panic = scan_text(
        "Mar  3 13:00:00 node-5 systemd[1]: Started kubelet: The Kubernetes Node Agent.\n\
         Mar  3 13:00:01 node-5 kubelet[500]: I0303 13:00:01.000000     500 server.go:484] \"Kubelet version\" kubeletVersion=\"v1.31.0\"\n\
         Mar  3 13:00:05 node-5 kubelet[500]: panic: runtime error: invalid memory address or nil pointer dereference\n\
         Mar  3 13:00:05 node-5 kubelet[500]: [signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1234567]\n\
         Mar  3 13:00:05 node-5 kubelet[500]: goroutine 1 [running]:\n\
         Mar  3 13:00:05 node-5 systemd[1]: kubelet.service: Main process exited, code=exited, status=2/INVALIDARGUMENT\n\
         Mar  3 13:00:05 node-5 systemd[1]: kubelet.service: Failed with result 'exit-code'.\n\
         Mar  3 13:00:15 node-5 systemd[1]: kubelet.service: Scheduled restart job, restart counter is at 1.\n\
         Mar  3 13:00:15 node-5 systemd[1]: Started kubelet: The Kubernetes Node Agent.\n",
    );
    let i = &panic["incidents"][0];
    assert_eq!(
        (&i["kind"], &i["node"], &i["cause"], &i["restarts"]),
        (
            &"kubelet-down".into(),
            &"node-5".into(),
            &"killed".into(),
            &1.into()
        ),
        "{panic:#}"
    );
}
