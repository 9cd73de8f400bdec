// glibc's malloc contends on its arena locks when the journal thread
// allocates entries that the ingest thread frees; catch-up spent a sixth of
// its time in futex waits. mimalloc frees across threads without a lock.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    kubelet_sentinel::cli::main()
}
