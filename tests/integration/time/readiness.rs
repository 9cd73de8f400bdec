//! The time property's episodes of design 5.3 and 5.4: the node not ready
//! while its kubelet runs (the container network, the runtime, PLEG,
//! pressure; in structured and legacy printf forms, with supporting lines,
//! mixed causes, soon after a kubelet start or long after, ended by the
//! ready marker, a requested restart or quiet), and the node's other units
//! and the kernel (containerd stopped or failed, the OOM killer, the link,
//! the clock) beside trouble they explain and beside a healthy kubelet.
//! They share hosts, batches and pauses with the node-status episodes, so
//! scan == `run --once` == a following run is checked for them too.

use super::*;

const CONTAINERD: &str = "containerd.service";
const CONTAINERD_UNIT: &str = "containerd.service - containerd container runtime";
const KUBELET_UNIT: &str = "kubelet.service - kubelet: The Kubernetes Node Agent";

impl Host {
    /// A kubelet line now, of severity `sev` from `file`.
    fn say(&mut self, sev: char, file: &str, body: &str) {
        let t = self.t;
        self.line(klog(sev, t, file, body));
    }

    /// systemd's own line (pid 1) about another unit.
    fn about(&mut self, unit: &str, msg: &str) {
        let n = self.out.len();
        self.out.push(Written {
            written_at: self.t + self.lag,
            entry: Entry {
                at: Some(self.t),
                cursor: Some(format!("{}-{n}", self.name)),
                host: Some(self.name.as_str().into()),
                unit: Some("init.scope".into()),
                identifier: Some("systemd".into()),
                pid: Some(1),
                from_systemd: true,
                about_unit: Some(unit.into()),
                message: msg.as_bytes().to_vec(),
                ..Entry::default()
            },
        });
    }

    /// A line another unit wrote itself (its `_SYSTEMD_UNIT`).
    fn unit_says(&mut self, unit: &str, ident: &str, msg: &str) {
        let n = self.out.len();
        self.out.push(Written {
            written_at: self.t + self.lag,
            entry: Entry {
                at: Some(self.t),
                cursor: Some(format!("{}-{n}", self.name)),
                host: Some(self.name.as_str().into()),
                unit: Some(unit.into()),
                identifier: Some(ident.into()),
                pid: Some(700),
                stream: Some(format!("{}-{unit}", self.name).into()),
                message: msg.as_bytes().to_vec(),
                ..Entry::default()
            },
        });
    }

    /// The kernel's line (`_TRANSPORT=kernel`).
    fn kernel(&mut self, msg: &str) {
        let n = self.out.len();
        self.out.push(Written {
            written_at: self.t + self.lag,
            entry: Entry {
                at: Some(self.t),
                cursor: Some(format!("{}-{n}", self.name)),
                host: Some(self.name.as_str().into()),
                identifier: Some("kernel".into()),
                kernel: true,
                message: msg.as_bytes().to_vec(),
                ..Entry::default()
            },
        });
    }

    /// A cycle of failed status updates (five retries, then the give-up
    /// line) with `err` after the request.
    fn status_cycle(&mut self, err: &str) {
        let node = self.name.clone();
        for _ in 0..5 {
            self.say(
                'E',
                "kubelet_node_status.go:535",
                &format!(
                    r#""Error updating node status, will retry" err="error getting node \"{node}\": Get \"https://10.0.0.1:6443/api/v1/nodes/{node}?timeout=10s\": {err}""#
                ),
            );
            self.t += 2_000;
        }
        self.say(
            'E',
            "kubelet_node_status.go:522",
            r#""Unable to update node status" err="update node status exceeds retry count""#,
        );
    }
}

/// One not-ready trouble line of `cause`: 0 the container network, 1 the
/// runtime, 2 PLEG, 3 disk and 4 memory pressure, 5 the legacy printf
/// forms of the network, PLEG and runtime; `k` is its number in the
/// episode.
fn trouble(host: &mut Host, cause: u64, k: u64) {
    match cause {
        0 => host.say(
            'E',
            "kubelet.go:2862",
            r#""Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized""#,
        ),
        1 => {
            host.say(
                'E',
                "kubelet.go:2386",
                r#""Skipping pod synchronization" err="container runtime is down""#,
            );
            host.t += 1_000;
            host.say(
                'E',
                "kubelet.go:2853",
                r#""Container runtime not ready" runtimeReady="RuntimeReady=false reason:ContainerdNotReady message:containerd is not ready""#,
            );
        }
        2 => {
            if k == 0 {
                let node = host.name.clone();
                host.say(
                    'I',
                    "setters.go:602",
                    &format!(
                        r#""Node became not ready" node="{node}" condition={{"type":"Ready","status":"False","reason":"KubeletNotReady","message":"PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s"}}"#
                    ),
                );
                host.t += 1_000;
            }
            host.say(
                'E',
                "kubelet.go:2386",
                r#""Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s""#,
            );
        }
        3 | 4 => {
            let resource = if cause == 3 {
                "ephemeral-storage"
            } else {
                "memory"
            };
            host.say(
                'W',
                "eviction_manager.go:369",
                &format!(r#""Eviction manager: attempting to reclaim" resourceName="{resource}""#),
            );
            host.t += 1_000;
            host.say(
                'I',
                "eviction_manager.go:380",
                &format!(
                    r#""Eviction manager: must evict pod(s) to reclaim" resourceName="{resource}""#
                ),
            );
        }
        _ => match k % 3 {
            0 => host.say(
                'E',
                "kubelet.go:2187",
                "Container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:docker: network plugin is not ready: cni config uninitialized",
            ),
            1 => host.say(
                'I',
                "kubelet.go:1840",
                "skipping pod synchronization - [PLEG is not healthy: pleg was last seen active 3m10.2s ago; threshold is 3m0s, container runtime is down]",
            ),
            _ => host.say(
                'E',
                "kubelet.go:2180",
                "Container runtime not ready: RuntimeReady=false reason:DockerDaemonNotReady message:docker: failed to get docker version: Cannot connect to the Docker daemon",
            ),
        },
    }
}

/// A supporting line of `cause`: it joins an open incident and votes, it
/// never opens one.
fn support(host: &mut Host, cause: u64) {
    match cause {
        0 => host.say(
            'E',
            "cni.go:333",
            r#""Unable to update cni config" err="no networks found in /etc/cni/net.d""#,
        ),
        1 => host.say(
            'E',
            "kubelet.go:2849",
            r#""Status from runtime service failed" err="rpc error: code = Unavailable desc = connection error""#,
        ),
        _ => host.say(
            'E',
            "generic.go:205",
            r#""GenericPLEG: Unable to retrieve pods" err="rpc error: code = DeadlineExceeded desc = context deadline exceeded""#,
        ),
    }
}

/// The node not ready while its kubelet runs: sometimes right after a
/// kubelet start (a fresh process, a crash and its restart, a requested
/// restart), then up to 60 lines of one cause (now and then another's, and
/// supporting lines), a line every 1-10 s (so shorter and longer than
/// `not_ready_after`), ended by the ready marker, a requested restart or
/// nothing (quiet). A supporting line may come first, before anything is
/// open.
pub(super) fn not_ready(host: &mut Host, r: &mut Rng) {
    if r.below(2) == 0 {
        host.restart(r.below(3));
        host.t += r.below(20) as Micros * SECOND;
    }
    let cause = r.below(6);
    if r.below(4) == 0 {
        support(host, cause);
        host.t += SECOND;
    }
    let step = (1 + r.below(10)) as Micros * SECOND;
    for k in 0..=r.below(60) {
        let c = if r.below(8) == 0 { r.below(6) } else { cause };
        trouble(host, c, k);
        if r.below(4) == 0 {
            host.t += 1_000;
            support(host, c);
        }
        host.t += step;
    }
    match r.below(3) {
        0 => host.say(
            'I',
            "kubelet_node_status.go:493",
            r#""Fast updating node status as it just became ready""#,
        ),
        1 => host.restart(2),
        _ => {}
    }
}

/// Context that explains trouble (design 5.4): containerd stopped on
/// request or failed before the runtime is down; the OOM killer kills the
/// kubelet, systemd restarts it; the link lost before the status updates
/// fail with `network is unreachable`; the clock stepped before x509
/// errors.
pub(super) fn explained(host: &mut Host, r: &mut Rng) {
    match r.below(4) {
        0 => {
            if r.below(2) == 0 {
                host.about(
                    CONTAINERD,
                    "containerd.service: Main process exited, code=killed, status=9/KILL",
                );
                host.about(
                    CONTAINERD,
                    "containerd.service: Failed with result 'signal'.",
                );
            } else {
                host.about(CONTAINERD, &format!("Stopping {CONTAINERD_UNIT}..."));
                host.t += 100_000;
                host.about(CONTAINERD, "containerd.service: Deactivated successfully.");
                host.about(CONTAINERD, &format!("Stopped {CONTAINERD_UNIT}."));
            }
            host.t += (1 + r.below(30)) as Micros * SECOND;
            for k in 0..=r.below(50) {
                trouble(host, 1, k);
                host.t += 5 * SECOND;
            }
            host.about(CONTAINERD, &format!("Started {CONTAINERD_UNIT}."));
            host.unit_says(
                CONTAINERD,
                "containerd",
                r#"time="2026-11-28T09:00:00.000000000Z" level=info msg="containerd successfully booted in 0.041s""#,
            );
        }
        1 => {
            let pid = host.pid;
            host.kernel("kubelet invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=-999");
            host.kernel(&format!("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/system.slice/kubelet.service,task=kubelet,pid={pid},uid=0"));
            host.kernel(&format!("Out of memory: Killed process {pid} (kubelet) total-vm:2145132kB, anon-rss:1843212kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4032kB oom_score_adj:-999"));
            host.t += 100_000;
            host.systemd("kubelet.service: Main process exited, code=killed, status=9/KILL");
            host.systemd("kubelet.service: Failed with result 'signal'.");
            host.t += 10 * SECOND;
            host.systemd("kubelet.service: Scheduled restart job, restart counter is at 1.");
            host.systemd(&format!("Started {KUBELET_UNIT}."));
            host.pid += 1;
            host.t += 300_000;
            host.say(
                'I',
                "server.go:484",
                r#""Kubelet version" kubeletVersion="v1.31.0""#,
            );
        }
        2 => {
            if r.below(2) == 0 {
                host.unit_says(
                    "systemd-networkd.service",
                    "systemd-networkd",
                    "eth0: Lost carrier",
                );
            } else {
                host.kernel("e1000e 0000:00:1f.6 eth0: NIC Link is Down");
            }
            host.t += (1 + r.below(10)) as Micros * SECOND;
            for _ in 0..=r.below(20) {
                host.status_cycle("dial tcp 10.0.0.1:6443: connect: network is unreachable");
                host.t += 10 * SECOND;
            }
            host.unit_says(
                "systemd-networkd.service",
                "systemd-networkd",
                "eth0: Gained carrier",
            );
        }
        _ => {
            host.unit_says(
                "chronyd.service",
                "chronyd",
                "System clock wrong by -7200.410278 seconds",
            );
            host.unit_says(
                "chronyd.service",
                "chronyd",
                "System clock was stepped by -7200.410278 seconds",
            );
            host.t += (1 + r.below(10)) as Micros * SECOND;
            for _ in 0..=r.below(20) {
                host.status_cycle(
                    "tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-11-28T07:00:01Z is before 2026-11-28T08:30:00Z",
                );
                host.t += 10 * SECOND;
            }
        }
    }
}

/// Context beside a healthy kubelet: containerd restarts once and talks,
/// the OOM killer kills a java process, a pod's veth loses its carrier,
/// the clock is slewed; the kubelet goes on with its chatter. Nothing of
/// it opens anything, and it stays in the host's window for what follows.
pub(super) fn bystander(host: &mut Host, r: &mut Rng) {
    for _ in 0..=r.below(6) {
        match r.below(5) {
            0 => {
                host.about(
                    CONTAINERD,
                    "containerd.service: Main process exited, code=exited, status=1/FAILURE",
                );
                host.about(CONTAINERD, "containerd.service: Failed with result 'exit-code'.");
                host.t += 5 * SECOND;
                host.about(
                    CONTAINERD,
                    "containerd.service: Scheduled restart job, restart counter is at 1.",
                );
                host.about(CONTAINERD, &format!("Started {CONTAINERD_UNIT}."));
            }
            1 => host.kernel("Out of memory: Killed process 9001 (java) total-vm:8145132kB, anon-rss:4843212kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:9032kB oom_score_adj:0"),
            2 => host.unit_says(
                "systemd-networkd.service",
                "systemd-networkd",
                "cali4f2a9b1c3d0: Lost carrier",
            ),
            3 => host.unit_says(
                "chronyd.service",
                "chronyd",
                "Selected source 10.0.0.53 (ntp.example.com)",
            ),
            _ => {
                for _ in 0..=r.below(20) {
                    host.unit_says(
                        CONTAINERD,
                        "containerd",
                        r#"time="2026-11-28T09:00:00.000000000Z" level=info msg="ImageCreate event name:\"registry.k8s.io/pause:3.9\"""#,
                    );
                    host.t += 200_000;
                }
            }
        }
        host.t += (1 + r.below(5)) as Micros * SECOND;
        host.say(
            'I',
            "kubelet.go:2400",
            r#""SyncLoop (PLEG): event for pod" pod="default/p""#,
        );
        host.t += (1 + r.below(30)) as Micros * SECOND;
    }
}
