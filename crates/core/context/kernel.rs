//! The kernel's lines that node-problem-detector's kernel monitor knows
//! (design 5.8; its `config/kernel-monitor.json` and
//! `config/readonly-monitor.json`): tasks hung, file systems remounted
//! read-only or shut down, file systems' and block devices' I/O errors,
//! `unregister_netdevice` waits, the conntrack table full, oopses; and the
//! kernel's first line at boot.
//!
//! Read by their structure, never by a phrase found anywhere: a kernel
//! line also carries text any user writes. A process's name (up to 15
//! bytes) starts a segfault's line (`comm[pid]: segfault at …`), and the
//! name of the file it mapped stands near its end, before the kernel's
//! own ` likely on CPU …` or `[addr+size]`. So each line is matched from
//! its fixed start longer than a name, or whole, or by a start and an end
//! no such line has: a user's process named `INFO: task x:1 ` still ends
//! its line with the kernel's words, never with ` seconds.`.

use super::ContextKind;

/// What a kernel line says, with what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Problem {
    pub(super) kind: ContextKind,
    /// A hung task's pid.
    pub(super) pid: Option<u32>,
    /// A hung task's name.
    pub(super) task: Option<String>,
    /// A hung task's `blocked for more than N seconds`.
    pub(super) blocked_secs: Option<u64>,
    /// The device a disk or network line names.
    pub(super) device: Option<String>,
}

impl Problem {
    fn of(kind: ContextKind, device: Option<&str>) -> Self {
        Self {
            kind,
            pid: None,
            task: None,
            blocked_secs: None,
            device: device.map(str::to_string),
        }
    }
}

/// `text` without printk's time before it (`[  480.096044] `), which
/// syslog daemons write into saved kernel logs (`kernel: [  480.096044]
/// INFO: task …`).
pub(super) fn without_printk_time(text: &str) -> &str {
    let Some(rest) = text.strip_prefix('[') else {
        return text;
    };
    let Some((time, after)) = rest.split_once("] ") else {
        return text;
    };
    let time = time.trim_start();
    let stamp = time.split_once('.').is_some_and(|(s, us)| {
        !s.is_empty()
            && !us.is_empty()
            && s.bytes().all(|b| b.is_ascii_digit())
            && us.bytes().all(|b| b.is_ascii_digit())
    });
    if stamp { after } else { text }
}

/// The problem a kernel line reports, if it is one of those above.
pub(super) fn problem(text: &str) -> Option<Problem> {
    let line = text.trim_end();
    hung(line)
        .or_else(|| readonly(line))
        .or_else(|| disk(line))
        .or_else(|| network(line))
        .or_else(|| oops(line))
        .or_else(|| boot(line))
}

/// `INFO: task containerd:1187 blocked for more than 120 seconds.`: the
/// task's name (which may hold `:`, `kworker/u4:2`), its pid, and N. Since
/// 4.19 N is how long the task has been blocked; before, the timeout
/// (`hung_task_timeout_secs`) at every report.
fn hung(line: &str) -> Option<Problem> {
    let rest = line
        .strip_prefix("INFO: task ")?
        .strip_suffix(" seconds.")?;
    let (task_pid, secs) = rest.rsplit_once(" blocked for more than ")?;
    let blocked: u64 = secs.parse().ok()?;
    let (task, pid) = task_pid.rsplit_once(':')?;
    let pid: u32 = pid.parse().ok()?;
    if task.is_empty() {
        return None;
    }
    Some(Problem {
        kind: ContextKind::HungTask,
        pid: Some(pid),
        task: Some(task.to_string()),
        blocked_secs: Some(blocked),
        device: None,
    })
}

/// A device's name as the kernel writes it: one word.
fn word(s: &str) -> Option<&str> {
    (!s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/!+".contains(&b)))
    .then_some(s)
}

/// `EXT4-fs (sda1): body` (ext2, ext3, ext4): the device and the body.
fn ext(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("EXT")?;
    let rest = rest
        .strip_prefix('2')
        .or_else(|| rest.strip_prefix('3'))
        .or_else(|| rest.strip_prefix('4'))?;
    let (dev, body) = rest.strip_prefix("-fs (")?.split_once("): ")?;
    Some((word(dev)?, body))
}

/// A file system the kernel made read-only: ext's remount (NPD's
/// `ReadonlyFilesystem`: `Remounting filesystem read-only`; 2.6-era ext3
/// wrote the phrase alone), btrfs' `forced readonly`, XFS's shutdown
/// (NPD's `XfsShutdown`: `XFS .* Shutting down filesystem.?`; 6.x's
/// `Filesystem has been shut down`).
fn readonly(line: &str) -> Option<Problem> {
    const REMOUNT: &str = "Remounting filesystem read-only";
    if line == REMOUNT {
        return Some(Problem::of(ContextKind::ReadonlyFs, None));
    }
    if let Some((dev, body)) = ext(line) {
        return (body.trim_end_matches('.') == REMOUNT)
            .then(|| Problem::of(ContextKind::ReadonlyFs, Some(dev)));
    }
    // `BTRFS info (device sda1): forced readonly`, 6.x `BTRFS info (device
    // sda1: state EA): forced readonly`.
    if line.starts_with("BTRFS") && line.ends_with("): forced readonly") {
        let dev = line
            .split_once("(device ")
            .and_then(|(_, r)| r.split([')', ':']).next())
            .and_then(word);
        return Some(Problem::of(ContextKind::ReadonlyFs, dev));
    }
    // `XFS (dm-0): Corruption of in-memory data detected.  Shutting down
    // filesystem`, `XFS (sdb): Log I/O Error Detected. Shutting down
    // filesystem`, `XFS (sdb): Filesystem has been shut down due to log
    // error (0x2).`
    let (dev, body) = line.strip_prefix("XFS (")?.split_once("): ")?;
    let body = body.trim_end_matches('.');
    (body.ends_with("Shutting down filesystem")
        || body.starts_with("Filesystem has been shut down"))
    .then(|| Problem::of(ContextKind::FsShutdown, word(dev)))
}

/// A file system's error (NPD's `Ext4Error`: `EXT4-fs error (device
/// sda1): …`) or a block device's I/O error (NPD's `IOError`: `Buffer I/O
/// error on dev sda1, logical block 0, async page read`; `blk_update_request:
/// I/O error, dev sda, sector 2048 …` before 5.16, `I/O error, dev sda,
/// sector 2048 …` since; the `critical medium error` and `critical target
/// error` of the same function).
fn disk(line: &str) -> Option<Problem> {
    if let Some(rest) = line
        .strip_prefix("EXT2-fs error (device ")
        .or_else(|| line.strip_prefix("EXT3-fs error (device "))
        .or_else(|| line.strip_prefix("EXT4-fs error (device "))
    {
        let dev = rest.split(')').next().and_then(word);
        return Some(Problem::of(ContextKind::FsError, dev));
    }
    if let Some(rest) = line
        .strip_prefix("Buffer I/O error on dev ")
        .or_else(|| line.strip_prefix("Buffer I/O error on device "))
    {
        let (dev, _) = rest.split_once(", logical block ")?;
        return Some(Problem::of(ContextKind::IoError, Some(word(dev)?)));
    }
    let rest = line.strip_prefix("blk_update_request: ").unwrap_or(line);
    let rest = [
        "I/O error, dev ",
        "critical medium error, dev ",
        "critical target error, dev ",
    ]
    .iter()
    .find_map(|p| rest.strip_prefix(p))?;
    // `sda, sector 2048`: a process named `I/O error, dev ` (15 bytes)
    // starts a segfault's line, whose `[pid]:` is no device.
    let (dev, _) = rest.split_once(", sector ")?;
    Some(Problem::of(ContextKind::IoError, Some(word(dev)?)))
}

/// `unregister_netdevice: waiting for eth0 to become free. Usage count =
/// 1` (NPD's `UnregisterNetDevice`) and the conntrack table full (NPD's
/// network plugin `ConntrackFull` reads the table's use instead): the
/// whole line, as the kernel writes it, `nf_conntrack: nf_conntrack: table
/// full, dropping packet` since 4.x's net namespaces, `ip_conntrack:` in
/// 2.6.
fn network(line: &str) -> Option<Problem> {
    if let Some(rest) = line.strip_prefix("unregister_netdevice: waiting for ") {
        let (dev, _) = rest.split_once(" to become free")?;
        return Some(Problem::of(ContextKind::NetdevWait, Some(word(dev)?)));
    }
    let whole = line.trim_end_matches('.');
    [
        "nf_conntrack: table full, dropping packet",
        "nf_conntrack: nf_conntrack: table full, dropping packet",
        "ip_conntrack: table full, dropping packet",
    ]
    .contains(&whole)
    .then(|| Problem::of(ContextKind::ConntrackFull, None))
}

/// An oops: `BUG: unable to handle kernel NULL pointer dereference at …`
/// (NPD's `KernelOops`), `BUG: unable to handle page fault for address: …`,
/// and the die line that follows every oops: `Oops: 0002 [#1] SMP PTI`,
/// `divide error: 0000 [#1] SMP` (NPD's other `KernelOops`), `general
/// protection fault: 0000 [#1] SMP`, 6.x's `Oops: general protection
/// fault, probably for non-canonical address 0x…: 0000 [#1] PREEMPT SMP
/// NOPTI`. The die line is read from its end: four hex digits, `[#N]`,
/// then only the kernel's flags (a segfault's line ends with its own
/// words, whatever file name it names).
fn oops(line: &str) -> Option<Problem> {
    if line.starts_with("BUG: unable to handle ") {
        return Some(Problem::of(ContextKind::Oops, None));
    }
    // `<words>: XXXX [#N]<flags>`: `Oops` is the words of the first.
    let (head, after) = line.rsplit_once(" [#")?;
    let (count, flags) = after.split_once(']')?;
    let (words, code) = head.rsplit_once(": ")?;
    let ok = !words.is_empty()
        && code.len() == 4
        && code.bytes().all(|b| b.is_ascii_hexdigit())
        && !count.is_empty()
        && count.bytes().all(|b| b.is_ascii_digit())
        && (flags.is_empty() || flags.starts_with(' '))
        && flags
            .bytes()
            .all(|b| b == b' ' || b == b'_' || b.is_ascii_uppercase() || b.is_ascii_digit());
    ok.then(|| Problem::of(ContextKind::Oops, None))
}

/// The kernel's first line at boot: `Linux version 6.1.0-18-amd64
/// (debian-kernel@lists.debian.org) (gcc-12 …) #1 SMP PREEMPT_DYNAMIC …`.
/// A process's name gives at most one byte after `Linux version ` (14
/// bytes of its 15), so a release of three bytes or more, with a dot, and
/// ` (` after it, is the kernel's. `Command line:` is not read: a name
/// gives one byte after it too, and anything may follow.
fn boot(line: &str) -> Option<Problem> {
    let rest = line.strip_prefix("Linux version ")?;
    let (release, after) = rest.split_once(' ')?;
    let ok = release.len() >= 3
        && release.contains('.')
        && release.bytes().any(|b| b.is_ascii_digit())
        && release
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-+~".contains(&b))
        && after.starts_with('(');
    ok.then(|| Problem::of(ContextKind::Boot, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(line: &str) -> Option<ContextKind> {
        problem(line).map(|p| p.kind)
    }

    /// Real lines (kernel 3.10 to 6.x), each with what it is.
    #[test]
    #[allow(
        clippy::too_many_lines,
        reason = "the table of real lines, one row each"
    )]
    fn the_kernel_lines_npd_knows() {
        use ContextKind::{
            Boot, ConntrackFull, FsError, FsShutdown, HungTask, IoError, NetdevWait, Oops,
            ReadonlyFs,
        };
        for (line, want) in [
            (
                "INFO: task containerd:1187 blocked for more than 120 seconds.",
                HungTask,
            ),
            (
                "INFO: task kworker/u4:2:141 blocked for more than 120 seconds.",
                HungTask,
            ),
            (
                "EXT4-fs (nvme0n1p1): Remounting filesystem read-only",
                ReadonlyFs,
            ),
            (
                "EXT4-fs (dm-4): Remounting filesystem read-only",
                ReadonlyFs,
            ),
            (
                "EXT3-fs (sda1): Remounting filesystem read-only",
                ReadonlyFs,
            ),
            ("Remounting filesystem read-only", ReadonlyFs),
            (
                "BTRFS info (device sda1: state EA): forced readonly",
                ReadonlyFs,
            ),
            (
                "XFS (dm-0): Corruption of in-memory data detected.  Shutting down filesystem",
                FsShutdown,
            ),
            (
                "XFS (sdb): Log I/O Error Detected. Shutting down filesystem",
                FsShutdown,
            ),
            (
                "XFS (sdb): Filesystem has been shut down due to log error (0x2).",
                FsShutdown,
            ),
            (
                "EXT4-fs error (device dm-4): ext4_journal_check_start:56: Detected aborted journal",
                FsError,
            ),
            (
                "EXT4-fs error (device dm-4) in ext4_setattr:4562: Journal has aborted",
                FsError,
            ),
            (
                "Buffer I/O error on dev sda1, logical block 0, async page read",
                IoError,
            ),
            (
                "Buffer I/O error on device dm-4, logical block 1234",
                IoError,
            ),
            (
                "blk_update_request: I/O error, dev sda, sector 2048",
                IoError,
            ),
            (
                "blk_update_request: I/O error, dev nvme0n1, sector 4096 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0",
                IoError,
            ),
            (
                "I/O error, dev sdb, sector 1032 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 2",
                IoError,
            ),
            (
                "unregister_netdevice: waiting for eth0 to become free. Usage count = 1",
                NetdevWait,
            ),
            ("nf_conntrack: table full, dropping packet", ConntrackFull),
            (
                "nf_conntrack: nf_conntrack: table full, dropping packet",
                ConntrackFull,
            ),
            ("ip_conntrack: table full, dropping packet.", ConntrackFull),
            (
                "BUG: unable to handle kernel NULL pointer dereference at 0000000000000008",
                Oops,
            ),
            (
                "BUG: unable to handle page fault for address: ffffa0c6bd5ef000",
                Oops,
            ),
            ("Oops: 0002 [#1] SMP PTI", Oops),
            ("Oops: 0000 [#1]", Oops),
            ("divide error: 0000 [#1] SMP", Oops),
            (
                "Oops: general protection fault, probably for non-canonical address 0xdffffc0000000000: 0000 [#1] PREEMPT SMP KASAN NOPTI",
                Oops,
            ),
            (
                "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)",
                Boot,
            ),
            (
                "Linux version 3.10.0-1160.el7.x86_64 (mockbuild@kbuilder.bsys.centos.org) (gcc version 4.8.5 20150623 (Red Hat 4.8.5-44) (GCC) ) #1 SMP Mon Oct 19 16:18:59 UTC 2020",
                Boot,
            ),
        ] {
            assert_eq!(kind(line), Some(want), "{line}");
        }
    }

    #[test]
    fn printk_time_is_not_part_of_the_line() {
        assert_eq!(
            without_printk_time(
                "[  480.096044] INFO: task kworker/u4:2:141 blocked for more than 120 seconds."
            ),
            "INFO: task kworker/u4:2:141 blocked for more than 120 seconds."
        );
        assert_eq!(without_printk_time("[x] y"), "[x] y");
        assert_eq!(without_printk_time("Oops: 0000 [#1]"), "Oops: 0000 [#1]");
    }

    #[test]
    fn what_they_name_and_what_is_none_of_them() {
        let p = problem("INFO: task kworker/u4:2:141 blocked for more than 245 seconds.").unwrap();
        assert_eq!(
            (p.task.as_deref(), p.pid, p.blocked_secs),
            (Some("kworker/u4:2"), Some(141), Some(245))
        );
        let p = problem("EXT4-fs (nvme0n1p1): Remounting filesystem read-only").unwrap();
        assert_eq!(p.device.as_deref(), Some("nvme0n1p1"));
        for other in [
            "EXT4-fs (sda1): mounted filesystem with ordered data mode. Opts: (null)",
            "EXT4-fs warning (device sda1): ext4_dx_add_entry:2461: Directory index full!",
            "XFS (sda1): Mounting V5 Filesystem",
            "INFO: task containerd:1187 blocked for more than 120 seconds",
            "\"echo 0 > /proc/sys/kernel/hung_task_timeout_secs\" disables this message.",
            "nf_conntrack: falling back to vmalloc.",
            "net_ratelimit: 42 callbacks suppressed",
            "Kernel command line: BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=/dev/sda1 ro",
            "Command line: BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=/dev/sda1 ro",
        ] {
            assert_eq!(kind(other), None, "{other}");
        }
    }

    /// A process's name (15 bytes) starts a segfault's line, and the file
    /// it mapped (any name) stands near its end: planted there, as the
    /// kernel writes them, they make no kernel problem and no boot.
    #[test]
    fn names_a_stranger_plants_say_nothing() {
        for planted in [
            "INFO: task x:1 [4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in a blocked for more than 999 seconds.[55d0c0a0a000+1000]",
            "INFO: task x:1 [4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 6 in s[55d0c0a0a000+1000] likely on CPU 1 (core 1, socket 0)",
            "EXT4-fs (a): Re[4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in Remounting filesystem read-only[55d0c0a0a000+1000]",
            "s[4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in Remounting filesystem read-only[55d0c0a0a000+1000]",
            "I/O error, dev [4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in x, sector 1[55d0c0a0a000+1000]",
            "Oops: 0000 [#1][4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in s[55d0c0a0a000+1000]",
            "s[4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in x: 0000 [#1] SMP[55d0c0a0a000+1000]",
            "s[4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in x: 0000 [#1] SMP[55d0c0a0a000+1000] likely on CPU 1 (core 1, socket 0)",
            "Linux version 6[4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in 6.1 (x)[55d0c0a0a000+1000]",
            "Linux version 6 (4711): drop_caches: 3",
            "nf_conntrack: t[4711]: segfault at 0 ip 000055d0c0a0b0c0 sp 00007ffc1a2b3c40 error 4 in table full, dropping packet[55d0c0a0a000+1000]",
        ] {
            assert_eq!(problem(planted), None, "{planted}");
        }
    }
}
