//! The floor for the catch-up benchmark: a bare libsystemd loop that fetches
//! only MESSAGE and the timestamp of each kubelet entry (the same match as
//! kubelet-sentinel's), and does nothing with them. Nothing can read the
//! journal faster.
//!
//! Usage: `bare_loop DIR`

use systemd::journal::OpenDirectoryOptions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: bare_loop DIR")?;
    let mut j = OpenDirectoryOptions::default().open_directory(dir.as_str())?;
    j.match_add("_SYSTEMD_UNIT", "kubelet.service")?;
    j.match_or()?;
    j.match_add("_PID", "1")?;
    j.match_add("UNIT", "kubelet.service")?;
    j.seek_head()?;
    let (mut n, mut bytes, mut last) = (0u64, 0usize, 0u64);
    while j.next()? > 0 {
        if let Some(f) = j.get_data("MESSAGE")? {
            bytes += f.value().map_or(0, <[u8]>::len);
        }
        last = j.timestamp_usec()?;
        n += 1;
    }
    println!("{n} entries, {bytes} message bytes, last at {last}");
    Ok(())
}
