//! Saved text logs as operators have them: raw klog (a kubelet run in a
//! shell, `kubectl logs`, `docker logs`), `journalctl` short, short-precise
//! and short-iso output (also with a localised month), syslog files with or
//! without `<PRI>`, the kubelet's JSON format, and all of these pasted into
//! bug reports: indented, quoted (`> `), wrapped in HTML, behind a collector's
//! or a UI's prefix, hard-wrapped by a narrow terminal, with Windows line
//! endings.
//!
//! A record starts where a journal/syslog prefix, a klog header or a JSON
//! object starts, after whatever junk comes first. What the junk tells
//! (host, identifier, time) is kept when it can be read; otherwise the klog
//! header's own time counts (placed in its year by [`Placer`]). A physical
//! line that starts no record continues the one before: joined without a
//! newline when the one before was cut at the terminal's width, handed on
//! as a continuation (joined with a newline later) otherwise. Banners,
//! comments, code fences and blank lines are skipped. One line keeps at most
//! [`MAX_LINE`] bytes; the rest is counted as cut, never kept.

mod paste;
mod prefix;
mod reader;

pub(crate) use reader::TextReader;
