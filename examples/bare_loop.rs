//! The floor for the catch-up benchmark: a bare libsystemd loop that fetches
//! only MESSAGE and the timestamp of each kubelet entry (the same match as
//! kubelet-sentinel's), and does nothing with them. Nothing can read the
//! journal faster.
//!
//! Usage: `bare_loop DIR [--every-field] [--reader-matches]`
//!
//! `--every-field` walks every field of each entry (`sd_journal_enumerate_data`,
//! as the service's reader does: it needs host, unit, identifier, stream,
//! pid, uid and boot besides the message); `--reader-matches` asks
//! libsystemd for what the reader asks with the default `[journal]`
//! settings (the kubelet's units and identifiers, its container, the
//! context units, the kernel) instead of the kubelet unit alone. Together
//! they are libsystemd's share of the reader's own work.

use systemd::journal::OpenDirectoryOptions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = args
        .first()
        .ok_or("usage: bare_loop DIR [--every-field] [--reader-matches]")?;
    let every_field = args.iter().any(|a| a == "--every-field");
    let mut j = OpenDirectoryOptions::default().open_directory(dir.as_str())?;
    if args.iter().any(|a| a == "--reader-matches") {
        kubelet_sentinel::add_matches(&mut j, &kubelet_sentinel::EntryFilter::default())?;
    } else {
        j.match_add("_SYSTEMD_UNIT", "kubelet.service")?;
        j.match_or()?;
        j.match_add("_PID", "1")?;
        j.match_add("UNIT", "kubelet.service")?;
    }
    j.seek_head()?;
    let (mut n, mut bytes, mut last) = (0u64, 0usize, 0u64);
    while j.next()? > 0 {
        if every_field {
            j.restart_data();
            while let Some(f) = j.enumerate_data()? {
                bytes += f.data().len();
            }
        } else if let Some(f) = j.get_data("MESSAGE")? {
            bytes += f.value().map_or(0, <[u8]>::len);
        }
        last = j.timestamp_usec()?;
        n += 1;
    }
    println!("{n} entries, {bytes} bytes, last at {last}");
    Ok(())
}
