// glibc's malloc contends on its arena locks when the journal thread
// allocates entries that the ingest thread frees; catch-up spent a sixth of
// its time in futex waits. mimalloc frees across threads without a lock.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Small pages from the process's first allocation: the runtime's start
/// (`std::rt::init`, before `main`) already takes mimalloc's first arena,
/// whose first touch could fault in (and compact memory for) a huge page,
/// 0 to 40 ms of a 0.5 s scan. An `.init_array` entry runs before it.
#[allow(unsafe_code)]
#[used]
#[unsafe(link_section = ".init_array")]
static SMALL_PAGES_FIRST: extern "C" fn() = small_pages;

extern "C" fn small_pages() {
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

fn main() -> std::process::ExitCode {
    // mimalloc asks for transparent huge pages for its arenas; where the
    // system grants them on request (`madvise`, Debian's default), each
    // first touch of 2 MiB could stall in memory compaction, and sled's
    // sparse statistics tables were zeroed 2 MiB at a time: catch-up varied
    // by a third from run to run. Small pages for this process.
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    kubelet_sentinel::main()
}
