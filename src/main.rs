fn main() -> std::process::ExitCode {
    kubelet_sentinel::cli::main()
}
