//! Issue 26, design 5.4: the node's other units explain the kubelet's
//! trouble. One journal written by `systemd-journal-remote` with the
//! entries journald gives (systemd's own lines from pid 1 with `UNIT=`,
//! the units' own lines with `_SYSTEMD_UNIT`, the kernel's with
//! `_TRANSPORT=kernel`), several hosts in it, read by `scan` (one handle)
//! and by `run --once` (a collector's directory, host by host): the same
//! incidents, with the context that explains them.

use kubelet_sentinel::{Micros, SECOND};

use crate::support::{Service, bin, export_entry, journal_remote, run};

const T0: Micros = 1_796_205_600_000_000; // 2026-12-02T10:00:00Z

struct J {
    out: Vec<u8>,
}

impl J {
    fn at(s: f64) -> String {
        (T0 + (s * SECOND as f64) as Micros).to_string()
    }

    fn systemd(&mut self, s: f64, host: &str, unit: &str, msg: &str) {
        export_entry(
            &mut self.out,
            &[
                ("__REALTIME_TIMESTAMP", &Self::at(s)),
                ("_HOSTNAME", host),
                ("_PID", "1"),
                ("_UID", "0"),
                ("_TRANSPORT", "journal"),
                ("_SYSTEMD_UNIT", "init.scope"),
                ("UNIT", unit),
                ("SYSLOG_IDENTIFIER", "systemd"),
                ("MESSAGE", msg),
            ],
        );
    }

    fn unit(&mut self, s: f64, host: &str, unit: &str, ident: &str, msg: &str) {
        export_entry(
            &mut self.out,
            &[
                ("__REALTIME_TIMESTAMP", &Self::at(s)),
                ("_HOSTNAME", host),
                ("_PID", "700"),
                ("_UID", "0"),
                ("_TRANSPORT", "stdout"),
                ("_SYSTEMD_UNIT", unit),
                ("SYSLOG_IDENTIFIER", ident),
                ("MESSAGE", msg),
            ],
        );
    }

    fn kernel(&mut self, s: f64, host: &str, msg: &str) {
        export_entry(
            &mut self.out,
            &[
                ("__REALTIME_TIMESTAMP", &Self::at(s)),
                ("_HOSTNAME", host),
                ("_TRANSPORT", "kernel"),
                ("SYSLOG_IDENTIFIER", "kernel"),
                ("MESSAGE", msg),
            ],
        );
    }

    /// `logger -t …` by a user: journald sets its own pid, uid, unit and
    /// transport, whatever the tag says.
    fn forged(&mut self, s: f64, host: &str, ident: &str, msg: &str) {
        export_entry(
            &mut self.out,
            &[
                ("__REALTIME_TIMESTAMP", &Self::at(s)),
                ("_HOSTNAME", host),
                ("_PID", "5555"),
                ("_UID", "1000"),
                ("_TRANSPORT", "syslog"),
                ("_SYSTEMD_UNIT", "session-3.scope"),
                ("SYSLOG_IDENTIFIER", ident),
                ("MESSAGE", msg),
            ],
        );
    }

    fn kubelet(&mut self, s: f64, host: &str, level: char, file: &str, body: &str) {
        let at = T0 + (s * SECOND as f64) as Micros;
        let klog = chrono::DateTime::from_timestamp_micros(at)
            .unwrap()
            .format("%m%d %H:%M:%S%.6f");
        export_entry(
            &mut self.out,
            &[
                ("__REALTIME_TIMESTAMP", &Self::at(s)),
                ("_HOSTNAME", host),
                ("_PID", "4242"),
                ("_UID", "0"),
                ("_TRANSPORT", "stdout"),
                ("_SYSTEMD_UNIT", "kubelet.service"),
                ("SYSLOG_IDENTIFIER", "kubelet"),
                ("MESSAGE", &format!("{level}{klog}    4242 {file}] {body}")),
            ],
        );
    }

    fn status_error(&mut self, s: f64, host: &str, err: &str) {
        self.kubelet(
            s,
            host,
            'E',
            "kubelet_node_status.go:549",
            &format!(
                r#""Error updating node status, will retry" err="error getting node \"{host}\": Get \"https://10.0.0.1:6443/api/v1/nodes/{host}?timeout=10s\": {err}""#
            ),
        );
    }

    fn healthy(&mut self, s: f64, host: &str) {
        self.kubelet(
            s,
            host,
            'I',
            "kubelet.go:2453",
            r#""SyncLoop (PLEG): event for pod" pod="default/web-0" event={"ID":"1","Type":"ContainerStarted"}"#,
        );
    }
}

const KUBELET: &str = "kubelet.service";
const CONTAINERD: &str = "containerd.service";
const OOM: &str = "Out of memory: Killed process 4242 (kubelet) total-vm:2145132kB, anon-rss:1843212kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4032kB oom_score_adj:-999";

/// The issue's journal.
fn journal() -> Vec<u8> {
    let mut j = J { out: Vec::new() };
    runtime_and_oom(&mut j);
    link_clock_bystander_forged(&mut j);
    planted_kernel_names(&mut j);
    j.out
}

fn runtime_and_oom(j: &mut J) {
    // w-runtime: containerd stopped on request, then the kubelet says the
    // runtime is down for 5 min (no incident kind of its own yet), then
    // dies on its restart because the runtime's socket is gone.
    let h = "w-runtime";
    j.systemd(
        0.0,
        h,
        CONTAINERD,
        "Stopping containerd.service - containerd container runtime...",
    );
    j.systemd(
        0.2,
        h,
        CONTAINERD,
        "containerd.service: Deactivated successfully.",
    );
    j.systemd(
        0.2,
        h,
        CONTAINERD,
        "Stopped containerd.service - containerd container runtime.",
    );
    for k in 0..30 {
        j.kubelet(
            5.0 + f64::from(k) * 10.0,
            h,
            'E',
            "kubelet.go:2412",
            r#""Skipping pod synchronization" err="container runtime is down""#,
        );
    }
    j.kubelet(
        310.0,
        h,
        'E',
        "run.go:72",
        r#""command failed" err="failed to run Kubelet: validate service connection: validate CRI v1 runtime API for endpoint \"unix:///run/containerd/containerd.sock\": rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: no such file or directory\"""#,
    );
    j.systemd(
        310.1,
        h,
        KUBELET,
        "kubelet.service: Main process exited, code=exited, status=1/FAILURE",
    );
    j.systemd(
        310.1,
        h,
        KUBELET,
        "kubelet.service: Failed with result 'exit-code'.",
    );
    // w-oom: the OOM killer kills the kubelet; systemd restarts it.
    let h = "w-oom";
    j.healthy(0.0, h);
    j.kernel(10.0, h, "kubelet invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=-999");
    j.kernel(10.0, h, "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/system.slice/kubelet.service,task=kubelet,pid=4242,uid=0");
    j.kernel(10.0, h, OOM);
    j.systemd(
        10.1,
        h,
        KUBELET,
        "kubelet.service: Main process exited, code=killed, status=9/KILL",
    );
    j.systemd(
        10.1,
        h,
        KUBELET,
        "kubelet.service: Failed with result 'signal'.",
    );
    j.systemd(
        20.1,
        h,
        KUBELET,
        "kubelet.service: Scheduled restart job, restart counter is at 1.",
    );
    j.systemd(
        20.2,
        h,
        KUBELET,
        "Started kubelet.service - kubelet: The Kubernetes Node Agent.",
    );
    for k in 0..20 {
        j.healthy(21.0 + f64::from(k) * 10.0, h);
    }
}

fn link_clock_bystander_forged(j: &mut J) {
    // w-net: networkd loses the carrier, the status updates fail for 3 min.
    let h = "w-net";
    j.unit(
        30.0,
        h,
        "systemd-networkd.service",
        "systemd-networkd",
        "eth0: Lost carrier",
    );
    for k in 0..18 {
        j.status_error(
            32.0 + f64::from(k) * 10.0,
            h,
            "dial tcp 10.0.0.1:6443: connect: network is unreachable",
        );
    }
    // w-clock: chronyd steps the clock two hours back, then x509 errors.
    let h = "w-clock";
    j.unit(
        40.0,
        h,
        "chronyd.service",
        "chronyd",
        "System clock wrong by -7200.410278 seconds",
    );
    j.unit(
        40.0,
        h,
        "chronyd.service",
        "chronyd",
        "System clock was stepped by -7200.410278 seconds",
    );
    for k in 0..18 {
        j.status_error(
            45.0 + f64::from(k) * 10.0,
            h,
            "tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-12-02T08:00:05Z is before 2026-12-02T09:00:00Z",
        );
    }
    // w-ok: containerd restarts once, the OOM killer kills java; the
    // kubelet is fine.
    let h = "w-ok";
    j.healthy(0.0, h);
    j.systemd(
        50.0,
        h,
        CONTAINERD,
        "containerd.service: Main process exited, code=killed, status=9/KILL",
    );
    j.systemd(
        50.0,
        h,
        CONTAINERD,
        "containerd.service: Failed with result 'signal'.",
    );
    j.systemd(
        55.0,
        h,
        CONTAINERD,
        "containerd.service: Scheduled restart job, restart counter is at 1.",
    );
    j.systemd(
        55.1,
        h,
        CONTAINERD,
        "Started containerd.service - containerd container runtime.",
    );
    j.kernel(60.0, h, "Out of memory: Killed process 9001 (java) total-vm:8145132kB, anon-rss:7843212kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:15032kB oom_score_adj:1000");
    for k in 0..20 {
        j.healthy(61.0 + f64::from(k) * 10.0, h);
    }
    // w-forged: a user's `logger -t kernel` and `logger -t systemd-networkd`
    // cannot make the kubelet's SIGKILL an OOM kill, nor its errors a lost link.
    let h = "w-forged";
    j.forged(70.0, h, "kernel", OOM);
    j.forged(70.0, h, "systemd-networkd", "eth0: Lost carrier");
    j.systemd(
        70.1,
        h,
        KUBELET,
        "kubelet.service: Main process exited, code=killed, status=9/KILL",
    );
    j.systemd(
        70.1,
        h,
        KUBELET,
        "kubelet.service: Failed with result 'signal'.",
    );
    for k in 0..18 {
        j.status_error(
            72.0 + f64::from(k) * 10.0,
            h,
            "dial tcp 10.0.0.1:6443: connect: network is unreachable",
        );
    }
}

/// w-planted: the kernel's own lines (transport kernel, as the kernel
/// writes them) carrying names a local user chose: a process named
/// `0 Link is Down` and one named `oom-kill:x` that segfault (the second
/// in a file named `a,pid=4242,task=kubelet`), and the user's own process
/// named `kubelet` killed in its memory cgroup. Then the real kubelet (pid
/// 4242) is killed by a signal and its status updates fail.
fn planted_kernel_names(j: &mut J) {
    let h = "w-planted";
    j.healthy(0.0, h);
    j.kernel(
        80.0,
        h,
        "0 Link is Down[31337]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in s[55d0c0a0a000+1000]",
    );
    j.kernel(
        80.5,
        h,
        "oom-kill:x[31338]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in a,pid=4242,task=kubelet[55d0c0a0a000+1000]",
    );
    j.kernel(
        81.0,
        h,
        "Memory cgroup out of memory: Killed process 31339 (kubelet) total-vm:1048576kB, anon-rss:524288kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:2048kB oom_score_adj:0",
    );
    j.systemd(
        81.5,
        h,
        KUBELET,
        "kubelet.service: Main process exited, code=killed, status=9/KILL",
    );
    j.systemd(
        81.5,
        h,
        KUBELET,
        "kubelet.service: Failed with result 'signal'.",
    );
    for k in 0..18 {
        j.status_error(
            83.0 + f64::from(k) * 10.0,
            h,
            "dial tcp 10.0.0.1:6443: connect: connection refused",
        );
    }
}

/// Names planted in the kernel's own lines change no cause and explain
/// nothing: the kubelet was killed, not by the OOM killer, and the node
/// kept its link.
fn nothing_planted_counts(inc: &[serde_json::Value]) {
    let planted = by(inc, "w-planted", "kubelet-down");
    assert_eq!(planted["cause"], "killed", "{planted:#}");
    assert_eq!(planted["context"], serde_json::json!([]), "{planted:#}");
    let planted = by(inc, "w-planted", "node-status");
    assert_eq!(planted["context"], serde_json::json!([]), "{planted:#}");
    assert!(
        !planted["diagnosis"]
            .as_str()
            .unwrap()
            .contains("lost its network"),
        "{planted:#}"
    );
}

fn by<'a>(v: &'a [serde_json::Value], host: &str, kind: &str) -> &'a serde_json::Value {
    v.iter()
        .find(|i| i["host"] == host && i["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} incident of {host}: {v:#?}"))
}

/// What both reads must agree on, incident by incident.
fn summary(v: &[serde_json::Value]) -> Vec<String> {
    let mut s: Vec<String> = v
        .iter()
        .map(|i| {
            format!(
                "{} {} {} {} {} {}",
                i["host"], i["kind"], i["cause"], i["verdict"], i["context"], i["diagnosis"]
            )
        })
        .collect();
    s.sort();
    s
}

#[test]
fn the_nodes_other_units_explain_the_kubelets_trouble() {
    let dir = tempfile::tempdir().unwrap();
    let journals = dir.path().join("remote");
    std::fs::create_dir(&journals).unwrap();
    let file = journals.join("remote-fleet.journal");
    journal_remote(&journal(), &file);
    let r = run(bin().args(["scan", "--utc", "-o", "json"]).arg(&file), None);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let inc = v["incidents"].as_array().unwrap().clone();

    // The runtime stop joins the runtime not-ready incident and the
    // kubelet-down one; the diagnosis says it was asked for.
    let nr = by(&inc, "w-runtime", "not-ready");
    assert_eq!(nr["cause"], "runtime", "{nr:#}");
    assert_eq!(nr["context"][0]["unit"], "containerd.service", "{nr:#}");
    assert_eq!(
        nr["context"][0]["text"], "Stopping containerd.service - containerd container runtime...",
        "{nr:#}"
    );
    assert!(
        nr["diagnosis"]
            .as_str()
            .unwrap()
            .contains("containerd.service was stopped on request"),
        "{nr:#}"
    );
    let rt = by(&inc, "w-runtime", "kubelet-down");
    let units: Vec<&str> = rt["context"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["unit"].as_str().unwrap())
        .collect();
    assert!(
        units.iter().all(|u| *u == "containerd.service") && !units.is_empty(),
        "{rt:#}"
    );
    assert!(
        rt["diagnosis"]
            .as_str()
            .unwrap()
            .contains("containerd.service was stopped on request"),
        "{rt:#}"
    );

    // The OOM-killed kubelet: cause oom, the kernel's line in context,
    // resolved transient.
    let oom = by(&inc, "w-oom", "kubelet-down");
    assert_eq!(
        (&oom["cause"], &oom["verdict"], &oom["status"]),
        (&"oom".into(), &"transient".into(), &"resolved".into()),
        "{oom:#}"
    );
    let ctx = oom["context"].as_array().unwrap();
    assert!(
        ctx.iter()
            .any(|c| c["unit"] == "kernel" && c["text"] == OOM),
        "{oom:#}"
    );
    assert!(
        oom["next_steps"].to_string().contains("kubeReserved"),
        "{oom:#}"
    );

    // The lost link: the node lost its network, not the API server.
    let net = by(&inc, "w-net", "node-status");
    assert_eq!(net["cause"], "api-unreachable");
    assert_eq!(net["context"][0]["unit"], "systemd-networkd.service");
    assert_eq!(net["context"][0]["text"], "eth0: Lost carrier");
    assert!(
        net["diagnosis"]
            .as_str()
            .unwrap()
            .contains("The node lost its network"),
        "{net:#}"
    );

    // The clock step: auth, with the clock named.
    let clock = by(&inc, "w-clock", "node-status");
    assert_eq!(clock["cause"], "auth");
    assert_eq!(clock["context"].as_array().unwrap().len(), 2, "{clock:#}");
    assert!(
        clock["diagnosis"]
            .as_str()
            .unwrap()
            .contains("clock was stepped"),
        "{clock:#}"
    );

    // The bystander opens nothing; the forged lines explain nothing.
    assert!(inc.iter().all(|i| i["host"] != "w-ok"), "{inc:#?}");
    let forged = by(&inc, "w-forged", "kubelet-down");
    assert_eq!(forged["cause"], "killed");
    assert_eq!(forged["context"], serde_json::json!([]));
    let forged = by(&inc, "w-forged", "node-status");
    assert_eq!(forged["context"], serde_json::json!([]));
    assert!(
        !forged["diagnosis"]
            .as_str()
            .unwrap()
            .contains("lost its network")
    );
    nothing_planted_counts(&inc);

    // run --once on the directory (a collector, host by host): the same.
    let svc = Service::new(&format!("directory = \"{}\"", journals.display()), "");
    let out = svc.run_once();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let once = svc.incidents();
    assert_eq!(summary(once.as_array().unwrap()), summary(&inc));

    // `show` has a context block with each line's delta to the start.
    let id = by(once.as_array().unwrap(), "w-net", "node-status")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let show = svc.query(&["show", &id, "--utc"]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("context (the node's other units):"), "{text}");
    assert!(
        text.contains("-2000ms") && text.contains("systemd-networkd.service"),
        "{text}"
    );
}
