// glibc's malloc contends on its arena locks when the journal thread
// allocates entries that the ingest thread frees; catch-up spent a sixth of
// its time in futex waits. mimalloc frees across threads without a lock.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // mimalloc asks for transparent huge pages for its arenas; where the
    // system grants them on request (`madvise`, Debian's default), each
    // first touch of 2 MiB could stall in memory compaction, and sled's
    // sparse statistics tables were zeroed 2 MiB at a time: catch-up varied
    // by a third from run to run. Small pages for this process.
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    kubelet_sentinel::main()
}
