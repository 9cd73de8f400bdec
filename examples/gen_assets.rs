//! Generates the man page and the bash/zsh/fish completions from the CLI
//! definition (the same one clap parses), for the packages.
//!
//! Usage: `cargo run --example gen_assets -- target/assets`

use std::io::Write;
use std::path::PathBuf;

use clap::CommandFactory;
use clap_complete::{Shell, generate_to};

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "target/assets".into()),
    );
    std::fs::create_dir_all(&dir)?;
    let mut cmd = kubelet_sentinel::cli::Cli::command();
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    // Each subcommand's description and options, as sections of the one page.
    for sub in cmd.get_subcommands() {
        let mut section = Vec::new();
        writeln!(
            section,
            ".SH \"COMMAND: {}\"",
            sub.get_name().to_uppercase()
        )?;
        let man = clap_mangen::Man::new(sub.clone());
        man.render_description_section(&mut section)?;
        man.render_options_section(&mut section)?;
        page.extend_from_slice(&section);
    }
    let gz = std::fs::File::create(dir.join("kubelet-sentinel.1.gz"))?;
    let mut enc = flate2::write::GzEncoder::new(gz, flate2::Compression::best());
    enc.write_all(&page)?;
    enc.finish()?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        generate_to(shell, &mut cmd, "kubelet-sentinel", &dir)?;
    }
    println!("wrote the man page and completions to {}", dir.display());
    Ok(())
}
