//! kernel incidents (design 5.8): the kernel reports what breaks the node
//! whatever its kubelet says, as node-problem-detector's permanent
//! conditions do: a file system made read-only (`readonly-fs`, NPD's
//! `ReadonlyFilesystem`, or `XfsShutdown` for XFS), tasks hung longer than
//! `[alert] not_ready_after` (`hung-tasks`, NPD's `KernelDeadlock`). Its
//! own data, its verdict (persistent from the start: it is paged at once),
//! and its diagnosis. It ends at the host's next boot, never on quiet.

use serde::{Deserialize, Serialize};

use crate::signals::Cause;
use crate::time::{Micros, SECOND, clock, human_duration};
use crate::tracker::incident::IncidentOf;
use crate::tracker::settings::Settings;
use crate::tracker::terms::{Resolution, Verdict};
use crate::tracker::words::one_line;

/// Devices and tasks a kernel incident names at most.
pub(crate) const NAMED: usize = 8;

/// node-problem-detector's condition for what the kernel reported: the
/// Alertmanager label `npd_condition`, for operators moving from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NpdCondition {
    /// `Remounting filesystem read-only` (NPD's readonly-monitor).
    ReadonlyFilesystem,
    /// `XFS … Shutting down filesystem` (NPD's kernel-monitor).
    XfsShutdown,
    /// Tasks hung (NPD's kernel-monitor's `DockerHung`, on `task docker:…
    /// blocked for more than …`; here any task blocked long enough).
    KernelDeadlock,
}

crate::kinds::spelling!(NpdCondition {
    ReadonlyFilesystem => "ReadonlyFilesystem",
    XfsShutdown => "XfsShutdown",
    KernelDeadlock => "KernelDeadlock",
});

/// A task the kernel reported hung, as a kernel incident keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HungTask {
    pub task: String,
    pub pid: u32,
    /// How long it had been blocked at its latest report.
    pub blocked_secs: u64,
}

/// A kernel incident's own data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelTrouble {
    /// The condition of the first read-only file system, if any (a
    /// read-only file system is the cause over hung tasks: tasks hang on
    /// it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readonly: Option<NpdCondition>,
    /// The devices whose file systems it made read-only (at most
    /// [`NAMED`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readonly_devices: Vec<String>,
    /// The tasks blocked longer than `not_ready_after` (at most
    /// [`NAMED`], the longest kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hung_tasks: Vec<HungTask>,
}

impl KernelTrouble {
    /// A file system made read-only (`device`, when the line names one).
    pub(crate) fn readonly(&mut self, c: NpdCondition, device: Option<&str>) {
        self.readonly.get_or_insert(c);
        if let Some(d) = device {
            if !self.readonly_devices.iter().any(|x| x == d) && self.readonly_devices.len() < NAMED
            {
                self.readonly_devices.push(d.to_string());
            }
        }
    }

    /// A task blocked `blocked_secs` by now.
    pub(crate) fn hung(&mut self, task: &str, pid: u32, blocked_secs: u64) {
        if let Some(t) = self
            .hung_tasks
            .iter_mut()
            .find(|t| t.pid == pid && t.task == task)
        {
            t.blocked_secs = t.blocked_secs.max(blocked_secs);
        } else {
            self.hung_tasks.push(HungTask {
                task: task.to_string(),
                pid,
                blocked_secs,
            });
        }
        self.hung_tasks
            .sort_by(|a, b| b.blocked_secs.cmp(&a.blocked_secs).then(a.pid.cmp(&b.pid)));
        self.hung_tasks.truncate(NAMED);
    }

    /// `readonly-fs` once a file system was made read-only, else
    /// `hung-tasks`.
    #[must_use]
    pub fn cause(&self) -> Cause {
        if self.readonly.is_some() {
            Cause::ReadonlyFs
        } else {
            Cause::HungTasks
        }
    }

    /// node-problem-detector's condition for its cause.
    #[must_use]
    pub fn npd_condition(&self) -> NpdCondition {
        self.readonly.unwrap_or(NpdCondition::KernelDeadlock)
    }

    /// Persistent from the start: what the kernel reports here does not
    /// mend itself.
    #[allow(
        clippy::unused_self,
        reason = "every kind's verdict is a method of its data"
    )]
    pub(crate) fn verdict(&self) -> Verdict {
        Verdict::Persistent
    }

    /// One paragraph: what the kernel said, since when, and how it ended.
    pub(crate) fn diagnosis<D>(&self, i: &IncidentOf<D>, s: &Settings) -> String {
        let k = self;
        let mut parts = Vec::new();
        if k.readonly.is_some() {
            let on = if k.readonly_devices.is_empty() {
                String::new()
            } else {
                format!(" on {}", k.readonly_devices.join(", "))
            };
            parts.push(format!(
                "The kernel made a file system read-only{on} on node {} at {}: pods, the \
                 container runtime and the kubelet cannot write there until it is repaired \
                 (fsck) and the node rebooted.",
                i.node,
                clock(i.opened_at)
            ));
        }
        if let Some(t) = k.hung_tasks.first() {
            let others = k.hung_tasks.len() - 1;
            parts.push(format!(
                "The kernel reports {} blocked for {} (longer than {}){}: a disk, a file system \
                 or a driver stopped answering.",
                one_line(&format!("task {}:{}", t.task, t.pid), 80),
                human_duration(
                    i64::try_from(t.blocked_secs)
                        .unwrap_or(i64::MAX)
                        .saturating_mul(SECOND)
                ),
                human_duration(s.not_ready_after),
                match others {
                    0 => String::new(),
                    1 => " and 1 other task".to_string(),
                    n => format!(" and {n} other tasks"),
                }
            ));
        }
        if let Some(e) = i.first_evidence() {
            parts.push(format!("The kernel said: {}", one_line(&e.text, 300)));
        }
        parts.push(format!(
            "node-problem-detector would set the condition {}.",
            k.npd_condition()
        ));
        match i.resolution {
            Some(Resolution::Rebooted) => parts.push(format!(
                "Resolved at {}: the host booted again.",
                clock(i.resolved_at.unwrap_or(i.last_signal_at))
            )),
            Some(
                Resolution::Evicted
                | Resolution::SourceChanged
                | Resolution::Wrote
                | Resolution::NodeReady
                | Resolution::Stopped
                | Resolution::Quiet
                | Resolution::Rotated,
            ) => parts.push("Closed without confirmation that it ended.".into()),
            None => {}
        }
        parts.join(" ")
    }

    /// When it is due on quiet: never (it ends at the host's next boot).
    #[allow(
        clippy::unused_self,
        reason = "every kind's due is a method of its data"
    )]
    pub(crate) fn due(&self) -> Option<Micros> {
        None
    }
}
