//! A kernel incident's words (design 5.8): the kernel made a file system
//! read-only, or tasks hung for minutes. Paged at once, with
//! node-problem-detector's condition as the label `npd_condition` (for
//! operators moving from it); what to check is the core's advice (dmesg,
//! `mount | grep ro,`, fsck, the disk's health, `hung_task_timeout_secs`,
//! the blocked task's stack).

use sentinel_core::advice::header_text;
use sentinel_core::signals::Cause;
use sentinel_core::time::human_duration;
use sentinel_core::tracker::{AlertKind, Incident, KernelTrouble, Settings};

use super::KindWords;

/// The alertname of kernel incidents, with the labels `cause`
/// (`readonly-fs`, `hung-tasks`) and `npd_condition`
/// (`ReadonlyFilesystem`, `XfsShutdown`, `KernelDeadlock`).
pub(crate) const ALERTNAME_KERNEL: &str = "KubeletNodeKernelProblem";

/// What the kernel did, for a subject: "file system read-only (nvme0n1p1)",
/// "tasks hung (containerd:1187 for 12m5s)".
fn what(k: &KernelTrouble) -> String {
    if k.cause() == Cause::ReadonlyFs {
        let devs = header_text(&k.readonly_devices.join(", "), 100);
        if devs.is_empty() {
            "file system read-only".to_string()
        } else {
            format!("file system read-only ({devs})")
        }
    } else {
        match k.hung_tasks.first() {
            Some(t) => format!(
                "tasks hung ({}:{} for {})",
                header_text(&t.task, 40),
                t.pid,
                human_duration(
                    i64::try_from(t.blocked_secs)
                        .unwrap_or(i64::MAX)
                        .saturating_mul(1_000_000)
                )
            ),
            None => "tasks hung".to_string(),
        }
    }
}

impl KindWords for KernelTrouble {
    fn subject(&self, i: &Incident, kind: AlertKind) -> String {
        let node = header_text(&i.node, 100);
        match kind {
            AlertKind::Resolved => {
                format!(
                    "[kubelet-sentinel] resolved: {node} rebooted ({})",
                    what(self)
                )
            }
            AlertKind::Opened | AlertKind::Repeat => {
                format!("[kubelet-sentinel] {node}: kernel: {}", what(self))
            }
        }
    }

    fn counters(&self, _i: &Incident) -> String {
        let mut parts = Vec::new();
        if !self.readonly_devices.is_empty() {
            parts.push(format!(
                "read-only: {}",
                header_text(&self.readonly_devices.join(", "), 200)
            ));
        }
        let hung: Vec<String> = self
            .hung_tasks
            .iter()
            .map(|t| {
                format!(
                    "{}:{} {}",
                    header_text(&t.task, 40),
                    t.pid,
                    human_duration(
                        i64::try_from(t.blocked_secs)
                            .unwrap_or(i64::MAX)
                            .saturating_mul(1_000_000)
                    )
                )
            })
            .collect();
        if !hung.is_empty() {
            parts.push(format!("hung: {}", hung.join(", ")));
        }
        parts.push(format!("node-problem-detector: {}", self.npd_condition()));
        parts.join("; ")
    }

    fn count_cell(&self) -> String {
        (self.readonly_devices.len() + self.hung_tasks.len()).to_string()
    }

    fn count_label(&self) -> &'static str {
        "file systems, tasks"
    }

    fn group_words(&self) -> &'static str {
        "kernel problems"
    }

    fn persistent(&self, s: &Settings) -> String {
        format!(
            "persistent: a file system read-only, or a task blocked longer than {}, stays so until \
             the node reboots",
            human_duration(s.not_ready_after)
        )
    }

    fn alertname(&self) -> &'static str {
        ALERTNAME_KERNEL
    }

    /// A read-only file system or a hung kernel does not mend itself.
    fn severity(&self, _i: &Incident) -> &'static str {
        "critical"
    }

    fn summary(&self, i: &Incident) -> String {
        format!(
            "kernel of node {}: {} (node-problem-detector: {})",
            sentinel_core::tracker::one_line(&i.node, 200),
            what(self),
            self.npd_condition()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sentinel_core::testing::{End, kernel, replay};
    use sentinel_core::time::SECOND;
    use sentinel_core::tracker::Detail;

    fn of(lines: Vec<sentinel_core::model::Entry>) -> Incident {
        replay(lines, &Settings::default(), End::Finish)
            .one()
            .clone()
    }

    /// The subject says what the kernel did, on which device or task, and
    /// the resolved one that the host rebooted.
    #[test]
    fn subjects_say_what_the_kernel_did() {
        let i = of(vec![kernel(
            0,
            "w1",
            "EXT4-fs (nvme0n1p1): Remounting filesystem read-only",
        )]);
        let Detail::Kernel(k) = &i.detail else {
            panic!("{i:#?}")
        };
        assert_eq!(
            k.subject(&i, AlertKind::Opened),
            "[kubelet-sentinel] w1: kernel: file system read-only (nvme0n1p1)"
        );
        assert!(
            k.counters(&i)
                .ends_with("node-problem-detector: ReadonlyFilesystem")
        );
        let i = of(vec![kernel(
            0,
            "w1",
            "INFO: task containerd:1187 blocked for more than 725 seconds.",
        )]);
        let Detail::Kernel(k) = &i.detail else {
            panic!("{i:#?}")
        };
        assert_eq!(
            k.subject(&i, AlertKind::Opened),
            "[kubelet-sentinel] w1: kernel: tasks hung (containerd:1187 for 12m5s)"
        );
        let i = of(vec![
            kernel(0, "w1", "EXT4-fs (sda1): Remounting filesystem read-only"),
            kernel(
                600 * SECOND,
                "w1",
                "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) (gcc-12) #1 SMP",
            ),
        ]);
        let Detail::Kernel(k) = &i.detail else {
            panic!("{i:#?}")
        };
        assert!(
            k.subject(&i, AlertKind::Resolved)
                .starts_with("[kubelet-sentinel] resolved: w1 rebooted"),
            "{}",
            k.subject(&i, AlertKind::Resolved)
        );
    }
}
