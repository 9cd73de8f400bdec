//! What the node's other units say (design 5.4): the container runtime's
//! unit stopping, failing or restarting, the kernel's OOM killer, the
//! host's own link going down, the clock being stepped. Such a line never
//! opens an incident: [`classify`] says what it is, each host keeps a
//! bounded [`Window`] of them (by journal time and by count), and
//! [`explain`] picks the ones that explain a kind of trouble.
//!
//! Only the lines that can explain something are kept: a chatty
//! containerd's own info lines are read and dropped here, so the window,
//! and the store it is written to, stay as they are. A run of alike lines
//! (a conntrack table full for minutes, an I/O error a sector) keeps its
//! first and its latest line, the rest counted in the latest
//! ([`ContextLine::repeats`]): a flood neither grows the window nor pushes
//! out the lines before it.
//!
//! The kernel's lines node-problem-detector's kernel monitor knows (design
//! 5.8: hung tasks, read-only file systems, I/O errors, a full conntrack
//! table, `unregister_netdevice`, oopses, the boot marker) are read in
//! [`kernel`].

mod kernel;

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::time::{Micros, SECOND};

/// How far back a host's window reaches from its newest context line.
pub const WINDOW_SPAN: Micros = 30 * 60 * SECOND;
/// Lines a host's window keeps at most (the newest).
pub const WINDOW_LINES: usize = 32;
/// Context lines an incident keeps at most (design 3.3: bounded).
pub const INCIDENT_LINES: usize = 8;
/// Longest context text kept, in bytes.
pub const TEXT_MAX: usize = 500;

/// How long before the kubelet's exit an OOM kill explains it.
pub const OOM_BEFORE: Micros = 30 * SECOND;
/// How long before trouble began a runtime's stop or failure explains it.
pub const RUNTIME_BEFORE: Micros = 5 * 60 * SECOND;
/// How long before trouble began a lost link explains it.
pub const LINK_BEFORE: Micros = 5 * 60 * SECOND;
/// How long before trouble began a clock step explains certificate errors.
pub const CLOCK_BEFORE: Micros = 30 * 60 * SECOND;
/// How long before trouble began the kernel's hung tasks,
/// `unregister_netdevice` waits and oopses explain it (a task is reported
/// two minutes after it blocked, and PLEG calls itself unhealthy three
/// minutes after its last relist).
pub const KERNEL_BEFORE: Micros = 10 * 60 * SECOND;
/// How long before trouble began a read-only file system or an I/O error
/// explains it: the whole window (a file system stays read-only until it
/// is repaired).
pub const DISK_BEFORE: Micros = WINDOW_SPAN;
/// Alike lines this close together are one run (see [`Window::push`]).
pub const RUN_GAP: Micros = 60 * SECOND;
/// How long after the latest trouble a line still explains it (the
/// kernel's and systemd's lines about one event may arrive in either
/// order).
pub const AFTER: Micros = 10 * SECOND;

/// What a context line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ContextKind {
    /// systemd stops the runtime's unit as asked (`Stopping …`).
    RuntimeStopping,
    /// systemd says the runtime's unit stopped (`Stopped …`).
    RuntimeStopped,
    /// The runtime died: a failed exit, `Failed with result`, a fatal line.
    RuntimeFailed,
    /// systemd restarts the runtime after it died (`Scheduled restart job`).
    RuntimeRestarting,
    /// systemd started the runtime's unit.
    RuntimeStarted,
    /// The kernel's OOM killer killed a process.
    OomKill,
    /// A physical interface lost its link or carrier.
    LinkLost,
    /// The clock was stepped (or found that far off).
    ClockStep,
    // The kernel's lines that node-problem-detector's kernel monitor
    // knows (design 5.8); only from the kernel transport.
    /// `INFO: task X:N blocked for more than N seconds.`
    HungTask,
    /// A file system remounted read-only (`EXT4-fs (sda1): Remounting
    /// filesystem read-only`, btrfs' `forced readonly`).
    ReadonlyFs,
    /// XFS shut a file system down (`Corruption of in-memory data
    /// detected.  Shutting down filesystem`, `Log I/O Error Detected.
    /// Shutting down filesystem`).
    FsShutdown,
    /// A file system's error (`EXT4-fs error (device sda1): …`).
    FsError,
    /// A block device's I/O error (`Buffer I/O error on dev …`,
    /// `blk_update_request: I/O error, dev …`, `I/O error, dev …`).
    IoError,
    /// `unregister_netdevice: waiting for X to become free. Usage count = N`
    NetdevWait,
    /// `nf_conntrack: table full, dropping packet`
    ConntrackFull,
    /// A kernel oops (`BUG: unable to handle …`, `Oops: 0002 [#1] SMP`).
    Oops,
    /// The kernel's first line at boot (`Linux version 6.1.0-18-amd64
    /// (…) #1 SMP …`): the host booted.
    Boot,
}

crate::spelling!(ContextKind {
    RuntimeStopping => "runtime-stopping",
    RuntimeStopped => "runtime-stopped",
    RuntimeFailed => "runtime-failed",
    RuntimeRestarting => "runtime-restarting",
    RuntimeStarted => "runtime-started",
    OomKill => "oom-kill",
    LinkLost => "link-lost",
    ClockStep => "clock-step",
    HungTask => "hung-task",
    ReadonlyFs => "readonly-fs",
    FsShutdown => "fs-shutdown",
    FsError => "fs-error",
    IoError => "io-error",
    NetdevWait => "netdev-wait",
    ConntrackFull => "conntrack-full",
    Oops => "oops",
    Boot => "boot",
});

impl ContextKind {
    /// A line about the container runtime's unit.
    #[must_use]
    pub fn is_runtime(self) -> bool {
        matches!(
            self,
            ContextKind::RuntimeStopping
                | ContextKind::RuntimeStopped
                | ContextKind::RuntimeFailed
                | ContextKind::RuntimeRestarting
                | ContextKind::RuntimeStarted
        )
    }
}

impl ContextKind {
    /// A line about the node's disks: a file system read-only or shut
    /// down, a file system's error, an I/O error.
    #[must_use]
    pub fn is_disk(self) -> bool {
        matches!(
            self,
            ContextKind::ReadonlyFs
                | ContextKind::FsShutdown
                | ContextKind::FsError
                | ContextKind::IoError
        )
    }

    /// A file system the kernel made read-only (remounted, or shut down):
    /// a `kernel` incident (`readonly-fs`).
    #[must_use]
    pub fn is_readonly(self) -> bool {
        matches!(self, ContextKind::ReadonlyFs | ContextKind::FsShutdown)
    }
}

/// One context line (design 3.3 `context`: `at`, `unit`, `text`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextLine {
    pub at: Micros,
    /// The unit it is about or that wrote it, or `kernel`.
    pub unit: String,
    pub text: String,
    pub kind: ContextKind,
    /// An OOM kill's victim: its pid and name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// A hung task's report: the `N` of `blocked for more than N seconds`
    /// (the task's name and pid in `process` and `pid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_secs: Option<u64>,
    /// The device a disk line names (`sda1`, `dm-4`, `nvme0n1p1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Alike lines folded into this one since the first of its run (see
    /// [`Window::push`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeats: u32,
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if"
)]
fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl ContextLine {
    /// Whether `other` says the same as this one: its unit, kind, pid,
    /// process and device (an I/O error of another sector is alike; an OOM
    /// kill of another process is not).
    #[must_use]
    pub fn alike(&self, other: &ContextLine) -> bool {
        self.unit == other.unit
            && self.kind == other.kind
            && self.pid == other.pid
            && self.process == other.process
            && self.device == other.device
    }
}

/// Where `line` goes on a run of alike lines in `lines` (oldest first):
/// the index of the run's latest line, which `line` replaces, when the
/// newest two lines alike to it are a run (the latest folded already, or
/// within [`RUN_GAP`] of the first) and `line` follows the latest within
/// [`RUN_GAP`]. The run keeps its first line and its latest; those between
/// are counted in [`ContextLine::repeats`].
#[must_use]
pub fn run_end(lines: &[ContextLine], line: &ContextLine) -> Option<usize> {
    let mut alike = lines
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, l)| l.alike(line));
    let (i, latest) = alike.next()?;
    let (_, first) = alike.next()?;
    let run = latest.repeats > 0 || latest.at - first.at <= RUN_GAP;
    (run && line.at >= latest.at && line.at - latest.at <= RUN_GAP).then_some(i)
}

/// A host's recent context lines, oldest first: at most [`WINDOW_LINES`],
/// none more than [`WINDOW_SPAN`] older than the newest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    lines: VecDeque<ContextLine>,
}

impl Window {
    /// Takes a line (journal order; a line older than the window's span
    /// behind the newest is dropped as it would have expired). A line that
    /// goes on a run of alike ones replaces the run's latest (see
    /// [`run_end`]): a flood keeps two lines, not the window.
    pub fn push(&mut self, mut line: ContextLine) {
        if let Some(i) = run_end(self.lines.make_contiguous(), &line) {
            if let Some(latest) = self.lines.remove(i) {
                line.repeats = line.repeats.max(latest.repeats.saturating_add(1));
            }
        }
        let newest = self.lines.back().map_or(line.at, |l| l.at.max(line.at));
        self.lines.push_back(line);
        while self.lines.len() > WINDOW_LINES
            || self
                .lines
                .front()
                .is_some_and(|l| newest - l.at > WINDOW_SPAN)
        {
            self.lines.pop_front();
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    pub fn lines(&self) -> impl Iterator<Item = &ContextLine> {
        self.lines.iter()
    }

    /// The host booted: what its kernel and units said before explains
    /// nothing after.
    pub fn clear(&mut self) {
        self.lines.clear();
    }
}

/// What kind of trouble is being explained, with what [`explain`] needs
/// of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trouble {
    /// The kubelet went down (kubelet-down): the runtime's unit around it,
    /// an OOM kill of the kubelet before an exit by signal, the kernel's
    /// read-only file systems, I/O errors and oopses.
    KubeletDown {
        /// The kubelet's pid on the host, when known.
        pid: Option<u32>,
    },
    /// The container runtime is down or slow (a `runtime`/`pleg` not-ready
    /// incident): the runtime's unit around it, and the kernel's hung
    /// tasks, `unregister_netdevice` waits, oopses, read-only file systems
    /// and I/O errors.
    Runtime,
    /// Pods' sandboxes keep failing on a Ready node (pod-sandbox, design
    /// 5.6): what explains a slow or stuck runtime ([`Trouble::Runtime`]).
    /// The pod-sandbox kind's `trouble` returns it.
    Sandbox,
    /// The node is not ready for another reason (CNI, pressure, unknown):
    /// the kernel's read-only file systems and I/O errors.
    Disk,
    /// The kubelet cannot reach the API server (api-unreachable,
    /// api-timeout): the host's own link lost, its conntrack table full.
    Network,
    /// Certificates look expired or not yet valid: a clock step before.
    Clock,
    /// The kernel's own trouble (a `kernel` incident): its I/O errors, file
    /// systems' errors, `unregister_netdevice` waits and oopses around it.
    Kernel,
}

/// The lines of `window` that explain `trouble` over `from..=to` (the
/// incident's first and latest trouble), oldest first. Pure: the same
/// window and span give the same lines. The not-ready kind calls it with
/// [`Trouble::Runtime`] or [`Trouble::Disk`].
#[must_use]
pub fn explain(trouble: Trouble, from: Micros, to: Micros, window: &Window) -> Vec<&ContextLine> {
    let within = |l: &ContextLine, before: Micros| l.at >= from - before && l.at <= to + AFTER;
    // A runtime that stopped or died long before and was not started again
    // since is still down when the trouble begins.
    let still_down = |l: &ContextLine| {
        l.kind != ContextKind::RuntimeStarted
            && l.at <= to + AFTER
            && !window
                .lines()
                .any(|n| n.kind == ContextKind::RuntimeStarted && n.unit == l.unit && n.at >= l.at)
    };
    // A runtime's start explains something only as the end of its stop or
    // failure: alone (a boot's, minutes before the kubelet's own trouble)
    // it is a healthy runtime.
    let after_trouble = |l: &ContextLine| {
        l.kind != ContextKind::RuntimeStarted
            || window.lines().any(|p| {
                p.unit == l.unit
                    && p.kind.is_runtime()
                    && p.kind != ContextKind::RuntimeStarted
                    && p.at <= l.at
                    && l.at - p.at <= RUNTIME_BEFORE
            })
    };
    let runtime = |l: &ContextLine| {
        l.kind.is_runtime() && after_trouble(l) && (within(l, RUNTIME_BEFORE) || still_down(l))
    };
    let disk = |l: &ContextLine| l.kind.is_disk() && within(l, DISK_BEFORE);
    let oops = |l: &ContextLine| l.kind == ContextKind::Oops && within(l, KERNEL_BEFORE);
    let stuck = |l: &ContextLine| {
        matches!(l.kind, ContextKind::HungTask | ContextKind::NetdevWait)
            && within(l, KERNEL_BEFORE)
    };
    window
        .lines()
        .filter(|l| match trouble {
            Trouble::KubeletDown { pid } => {
                runtime(l)
                    || disk(l)
                    || oops(l)
                    || (l.kind == ContextKind::OomKill
                        && within(l, OOM_BEFORE)
                        && kills_kubelet(l, pid))
            }
            Trouble::Runtime | Trouble::Sandbox => runtime(l) || stuck(l) || disk(l) || oops(l),
            Trouble::Disk => disk(l),
            Trouble::Network => {
                matches!(l.kind, ContextKind::LinkLost | ContextKind::ConntrackFull)
                    && within(l, LINK_BEFORE)
            }
            Trouble::Clock => l.kind == ContextKind::ClockStep && within(l, CLOCK_BEFORE),
            Trouble::Kernel => {
                (matches!(l.kind, ContextKind::FsError | ContextKind::IoError) && disk(l))
                    || (l.kind == ContextKind::NetdevWait && within(l, KERNEL_BEFORE))
                    || oops(l)
            }
        })
        .collect()
}

/// Whether an OOM kill is the kubelet's: the pid the OOM killer names is
/// the one the kubelet writes as on that host. Never by a name: anybody
/// can name a process `kubelet`.
#[must_use]
pub fn kills_kubelet(l: &ContextLine, pid: Option<u32>) -> bool {
    l.kind == ContextKind::OomKill && pid.is_some() && l.pid == pid
}

/// The container runtimes' units (by name stem).
const RUNTIMES: &[&str] = &["containerd", "docker", "crio", "cri-docker", "cri-o"];

/// Whether `unit` is a container runtime's. The journal match takes only
/// systemd's lines about those (their stop, failure, restart), not what
/// they write: a runtime's own output is chatty (a third of a busy node's
/// journal) and says nothing systemd's lines do not.
#[must_use]
pub fn is_runtime_unit(unit: &str) -> bool {
    let stem = unit.strip_suffix(".service").unwrap_or(unit);
    RUNTIMES.contains(&stem)
}

/// What a context line says, if it can explain anything: `unit` is the
/// unit it is about or that wrote it (`kernel` for the kernel's),
/// `from_systemd` whether it is systemd's own line about the unit.
#[must_use]
pub fn classify(unit: &str, from_systemd: bool, text: &str) -> Option<ContextLine> {
    // A saved syslog's kernel lines may carry printk's own time
    // (`[  480.096044] INFO: task …`); the journal's never do.
    let text = if unit == "kernel" {
        kernel::without_printk_time(text)
    } else {
        text
    };
    if unit == "kernel" {
        if let Some(p) = kernel::problem(text) {
            return Some(ContextLine {
                at: 0,
                unit: unit.to_string(),
                text: bounded(text),
                kind: p.kind,
                pid: p.pid,
                process: p.task,
                blocked_secs: p.blocked_secs,
                device: p.device,
                repeats: 0,
            });
        }
    }
    let (kind, pid, process) = if unit == "kernel" {
        kernel(text)?
    } else if from_systemd {
        (
            is_runtime_unit(unit).then(|| systemd_runtime(text))??,
            None,
            None,
        )
    } else if is_runtime_unit(unit) {
        (runtime_own(text)?, None, None)
    } else {
        (daemon(text)?, None, None)
    };
    Some(ContextLine {
        at: 0,
        unit: unit.to_string(),
        text: bounded(text),
        kind,
        pid,
        process,
        blocked_secs: None,
        device: None,
        repeats: 0,
    })
}

fn bounded(text: &str) -> String {
    let kept = crate::model::cut(text, TEXT_MAX);
    let mut t = kept.trim_end().to_string();
    if kept.len() < text.len() {
        t.push('…');
    }
    t
}

/// systemd's words about a runtime's unit.
fn systemd_runtime(text: &str) -> Option<ContextKind> {
    // `containerd.service: Main process exited, code=exited, status=1/FAILURE`
    let body = text.split_once(": ").map_or(text, |(_, b)| b);
    if text.starts_with("Stopping ") {
        Some(ContextKind::RuntimeStopping)
    } else if text.starts_with("Stopped ") {
        Some(ContextKind::RuntimeStopped)
    } else if text.starts_with("Started ") {
        Some(ContextKind::RuntimeStarted)
    } else if body.starts_with("Scheduled restart job") {
        Some(ContextKind::RuntimeRestarting)
    } else if (body.starts_with("Main process exited")
        && !body.contains("status=0/SUCCESS")
        && !body.contains("status=15/TERM"))
        || body.starts_with("Failed with result")
        || text.starts_with("Failed to start ")
        || body.starts_with("Start request repeated too quickly")
    {
        Some(ContextKind::RuntimeFailed)
    } else {
        None
    }
}

/// A runtime's own words that it is dying (logrus' `level=fatal`).
fn runtime_own(text: &str) -> Option<ContextKind> {
    (text.contains("level=fatal") || text.contains("level=panic"))
        .then_some(ContextKind::RuntimeFailed)
}

/// A network or time daemon's words: a lost link, a stepped clock.
fn daemon(text: &str) -> Option<ContextKind> {
    const STEPS: &[&str] = &[
        // chronyd
        "System clock wrong by ",
        "System clock was stepped by ",
        // systemd-timesyncd
        "System clock time unset or jumped backwards",
        "Initial clock synchronization to ",
        // ntpd
        "step time server ",
        "time reset ",
    ];
    if STEPS.iter().any(|s| text.contains(s)) {
        return Some(ContextKind::ClockStep);
    }
    // systemd-networkd: `eth0: Lost carrier`; NetworkManager:
    // `device (eth0): state change: activated -> unavailable (reason
    // 'carrier-changed' …)`, `device (eth0): carrier: link disconnected`.
    let iface = if let Some(i) = text.find(": Lost carrier") {
        Some(last_word(&text[..i]))
    } else if text.contains("-> unavailable") || text.contains("link disconnected") {
        text.split_once("device (")
            .and_then(|(_, r)| r.split_once(')'))
            .map(|(i, _)| i)
    } else {
        None
    };
    iface.filter(|i| physical(i)).map(|_| ContextKind::LinkLost)
}

/// The last whitespace-separated word of `s`, without a trailing `:`.
fn last_word(s: &str) -> &str {
    s.trim_end()
        .rsplit(char::is_whitespace)
        .next()
        .unwrap_or("")
        .trim_end_matches(':')
}

/// Whether an interface is the host's own link, not one of the virtual
/// ones pods, bridges and tunnels come and go with.
fn physical(iface: &str) -> bool {
    const VIRTUAL: &[&str] = &[
        "veth",
        "cali",
        "flannel",
        "cni",
        "docker",
        "br-",
        "virbr",
        "vxlan",
        "tunl",
        "tun",
        "tap",
        "kube-",
        "lxc",
        "cilium",
        "weave",
        "vnet",
        "genev",
        "dummy",
        "nodelocaldns",
        "lo",
    ];
    !iface.is_empty() && !VIRTUAL.iter().any(|v| iface.starts_with(v))
}

/// The kernel's OOM-killer and link lines ([`kernel::problem`] reads the
/// others it keeps); every other kernel line is dropped by a cheap look at
/// a few words first.
///
/// Read by their structure, never by a word found anywhere: a kernel line
/// also carries text any user writes (a segfaulting process's name, up to
/// 15 bytes, at the start of its line; the file of the mapping; the name
/// of the process the OOM killer took), so each is matched from its fixed
/// start (or, for a link, its fixed end), and the pid is read where the
/// kernel writes it, after the user's text for `oom-kill:`.
fn kernel(text: &str) -> Option<(ContextKind, Option<u32>, Option<String>)> {
    if let Some(rest) = killed_process(text) {
        // `4242 (kubelet) total-vm:…`: the pid, then the name in
        // parentheses (which may hold any byte, `)` too).
        let (pid, rest) = rest.split_once(' ')?;
        let pid: u32 = pid.parse().ok()?;
        let name = rest.strip_prefix('(').and_then(|r| {
            r.rfind(") total-vm:")
                .or_else(|| r.rfind(')'))
                .map(|e| r[..e].to_string())
        });
        return Some((ContextKind::OomKill, Some(pid), name));
    }
    if let Some(fields) = text.strip_prefix("oom-kill:constraint=") {
        // `oom-kill:constraint=…,task_memcg=/system.slice/kubelet.service,task=kubelet,pid=4242,uid=0`:
        // the task's name and cgroup are anybody's text, the pid and uid
        // the line's last two fields.
        let (rest, uid) = fields.rsplit_once(",uid=")?;
        uid.parse::<u32>().ok()?;
        let (rest, pid) = rest.rsplit_once(",pid=")?;
        let pid: u32 = pid.parse().ok()?;
        let task = rest.rsplit_once(",task=").map(|(_, t)| t.to_string());
        return Some((ContextKind::OomKill, Some(pid), task));
    }
    // `e1000e 0000:00:1f.6 eno1: NIC Link is Down`: the driver's words end
    // the line.
    let line = text.trim_end();
    let line = line.strip_suffix('.').unwrap_or(line);
    let phrase = ["Link is Down", "Link is down", "Link down"]
        .iter()
        .find(|p| line.ends_with(*p))?;
    let before = line[..line.len() - phrase.len()].trim_end();
    let iface = last_word(before.trim_end_matches("NIC").trim_end());
    physical(iface).then_some((ContextKind::LinkLost, None, None))
}

/// What follows `Killed process ` when the line is the OOM killer's:
/// `Out of memory: `, `Memory cgroup out of memory: ` or
/// `Out of memory (oom_kill_allocating_task): ` before it, or nothing
/// (older kernels).
fn killed_process(text: &str) -> Option<&str> {
    let rest = [
        "Out of memory: ",
        "Memory cgroup out of memory: ",
        "Out of memory (oom_kill_allocating_task): ",
    ]
    .iter()
    .find_map(|p| text.strip_prefix(p))
    .unwrap_or(text);
    rest.strip_prefix("Killed process ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(unit: &str, systemd: bool, text: &str) -> Option<ContextKind> {
        classify(unit, systemd, text).map(|l| l.kind)
    }

    #[test]
    fn systemd_lines_about_the_runtime() {
        let c = "containerd.service";
        for (text, want) in [
            (
                "Stopping containerd.service - containerd container runtime...",
                Some(ContextKind::RuntimeStopping),
            ),
            (
                "Stopped containerd.service - containerd container runtime.",
                Some(ContextKind::RuntimeStopped),
            ),
            (
                "containerd.service: Main process exited, code=killed, status=9/KILL",
                Some(ContextKind::RuntimeFailed),
            ),
            (
                "containerd.service: Failed with result 'signal'.",
                Some(ContextKind::RuntimeFailed),
            ),
            (
                "containerd.service: Scheduled restart job, restart counter is at 1.",
                Some(ContextKind::RuntimeRestarting),
            ),
            (
                "Started containerd.service - containerd container runtime.",
                Some(ContextKind::RuntimeStarted),
            ),
            ("containerd.service: Deactivated successfully.", None),
            (
                "containerd.service: Main process exited, code=exited, status=0/SUCCESS",
                None,
            ),
        ] {
            assert_eq!(kind(c, true, text), want, "{text}");
        }
        // systemd's lines about a time daemon are no runtime's.
        assert_eq!(
            kind("chronyd.service", true, "Stopping chronyd.service..."),
            None
        );
        // The runtime's own chatter is dropped; its fatal line is kept.
        assert_eq!(
            kind(
                c,
                false,
                "time=\"2026-12-02T10:00:00Z\" level=info msg=\"loading plugin\""
            ),
            None
        );
        assert_eq!(
            kind(c, false, "time=\"x\" level=fatal msg=\"failed to load\""),
            Some(ContextKind::RuntimeFailed)
        );
    }

    #[test]
    fn kernel_oom_and_link_lines_and_nothing_else() {
        let l = classify(
            "kernel",
            false,
            "Out of memory: Killed process 4242 (kubelet) total-vm:2048000kB, anon-rss:1536000kB, \
             file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4000kB oom_score_adj:-999",
        )
        .unwrap();
        assert_eq!(
            (l.kind, l.pid, l.process.as_deref()),
            (ContextKind::OomKill, Some(4242), Some("kubelet"))
        );
        let l = classify(
            "kernel",
            false,
            "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,\
             global_oom,task_memcg=/system.slice/kubelet.service,task=kubelet,pid=4242,uid=0",
        )
        .unwrap();
        assert_eq!((l.pid, l.process.as_deref()), (Some(4242), Some("kubelet")));
        assert_eq!(
            kind(
                "kernel",
                false,
                "e1000e 0000:00:1f.6 eno1: NIC Link is Down"
            ),
            Some(ContextKind::LinkLost)
        );
        assert_eq!(
            kind("kernel", false, "virtio_net virtio0 eth0: Link is Down"),
            Some(ContextKind::LinkLost)
        );
        for other in [
            "cni0: port 3(veth1a2b3c4d) entered disabled state",
            "veth1a2b3c4d: Link is Down",
            "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
            "EXT4-fs (sda1): mounted filesystem with ordered data mode.",
            "java invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
        ] {
            assert_eq!(kind("kernel", false, other), None, "{other}");
        }
    }

    /// The kernel's lines carry text any user writes: a segfaulting
    /// process's name (up to 15 bytes) starts its line, and the file of
    /// the mapping and the OOM killer's victim's name stand inside others.
    /// Planted there, as the kernel writes them, they name no link, no OOM
    /// kill and no pid.
    #[test]
    fn names_a_stranger_plants_in_kernel_lines_say_nothing() {
        for planted in [
            // prctl(PR_SET_NAME, "0 Link is Down"); then a segfault.
            "0 Link is Down[4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in s[55d0c0a0a000+1000]",
            "eth0: Link is Down[4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 6 likely on CPU 1 (core 1, socket 0)",
            // A process named `oom-kill:x`, its mapping a file named
            // `a,pid=4242,task=kubelet`.
            "oom-kill:x[4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in a,pid=4242,task=kubelet[55d0c0a0a000+1000]",
            "Killed process [4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in s[55d0c0a0a000+1000]",
            "s[4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in Killed process 4242 (kubelet)[55d0c0a0a000+1000]",
        ] {
            assert_eq!(classify("kernel", false, planted), None, "{planted}");
        }
        // The OOM killer's own line, whose task and cgroup a user named:
        // the pid is the one the kernel writes last, not one in the name.
        let l = classify(
            "kernel",
            false,
            "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,\
             oom_memcg=/user.slice/user-1000.slice,task_memcg=/user.slice/a,pid=4242,uid=0,\
             task=a,pid=4242,pid=999,uid=1000",
        )
        .unwrap();
        assert_eq!((l.kind, l.pid), (ContextKind::OomKill, Some(999)));
        let l = classify(
            "kernel",
            false,
            "Memory cgroup out of memory: Killed process 999 (kubelet) total-vm:1kB, anon-rss:0kB",
        )
        .unwrap();
        assert_eq!((l.pid, l.process.as_deref()), (Some(999), Some("kubelet")));
        // A user's own process named `kubelet`, killed in its cgroup, is
        // not the kubelet (pid 4242): never by a name alone.
        assert!(!kills_kubelet(&l, Some(4242)));
        assert!(!kills_kubelet(&l, None));
        // A name holding `) total-vm:` leaves the pid where it is.
        let l = classify(
            "kernel",
            false,
            "Out of memory: Killed process 77 (a) total-vm:) total-vm:1kB, anon-rss:0kB",
        )
        .unwrap();
        assert_eq!(l.pid, Some(77));
    }

    #[test]
    fn network_and_time_daemons() {
        let n = "systemd-networkd.service";
        assert_eq!(
            kind(n, false, "eth0: Lost carrier"),
            Some(ContextKind::LinkLost)
        );
        assert_eq!(kind(n, false, "veth9f8e7d6c: Lost carrier"), None);
        assert_eq!(kind(n, false, "eth0: Gained carrier"), None);
        assert_eq!(
            kind(
                "NetworkManager.service",
                false,
                "<info>  [1764669600.1234] device (ens3): state change: activated -> unavailable \
                 (reason 'carrier-changed', sys-iface-state: 'managed')"
            ),
            Some(ContextKind::LinkLost)
        );
        let c = "chronyd.service";
        assert_eq!(
            kind(c, false, "System clock wrong by -7200.410000 seconds"),
            Some(ContextKind::ClockStep)
        );
        assert_eq!(
            kind(c, false, "System clock was stepped by -7200.410000 seconds"),
            Some(ContextKind::ClockStep)
        );
        assert_eq!(
            kind(c, false, "Selected source 192.0.2.1 (2.pool.ntp.org)"),
            None
        );
    }

    fn line(at: Micros, kind: ContextKind) -> ContextLine {
        ContextLine {
            at,
            unit: "u".into(),
            text: String::new(),
            kind,
            pid: None,
            process: None,
            blocked_secs: None,
            device: None,
            repeats: 0,
        }
    }

    #[test]
    fn the_window_is_bounded_by_count_and_time() {
        let mut w = Window::default();
        for i in 0..100 {
            // Not alike (another victim each): no run folds them.
            w.push(ContextLine {
                pid: u32::try_from(i).ok(),
                ..line(i * SECOND, ContextKind::OomKill)
            });
        }
        assert_eq!(w.lines().count(), WINDOW_LINES);
        w.push(line(100 * SECOND + WINDOW_SPAN, ContextKind::ClockStep));
        assert_eq!(w.lines().count(), 1);
    }

    #[test]
    fn explain_picks_by_kind_and_time() {
        let mut w = Window::default();
        w.push(line(0, ContextKind::LinkLost));
        w.push(line(SECOND, ContextKind::RuntimeStopping));
        let oom = ContextLine {
            process: Some("java".into()),
            pid: Some(7),
            ..line(2 * SECOND, ContextKind::OomKill)
        };
        w.push(oom);
        let t = 10 * SECOND;
        assert_eq!(explain(Trouble::Network, t, t, &w).len(), 1);
        assert_eq!(explain(Trouble::Clock, t, t, &w).len(), 0);
        let down = Trouble::KubeletDown { pid: Some(42) };
        // java's OOM kill does not explain the kubelet's exit.
        assert_eq!(explain(down, t, t, &w).len(), 1);
        let by_pid = Trouble::KubeletDown { pid: Some(7) };
        assert_eq!(explain(by_pid, t, t, &w).len(), 2);
        // Lines after the trouble's latest time, or long before it, do not.
        let early = -AFTER - SECOND;
        assert_eq!(explain(Trouble::Network, early, early, &w).len(), 0);
        // A runtime stopped long before and not started since is still down;
        // one started again since is not.
        let long = RUNTIME_BEFORE * 2;
        assert_eq!(explain(Trouble::Runtime, long, long, &w).len(), 1);
        w.push(line(3 * SECOND, ContextKind::RuntimeStarted));
        assert_eq!(explain(Trouble::Runtime, long, long, &w).len(), 0);
        let late = LINK_BEFORE + SECOND;
        assert_eq!(explain(Trouble::Network, late, late, &w).len(), 0);
    }
}
