//! The man pages and the bash/zsh/fish completions, generated from the CLI
//! definition (the same one clap parses) and the shipped config, for the
//! packages: `kubelet-sentinel(1)` with every command, FILES, CONFIGURATION,
//! EXIT STATUS, EXAMPLES; `kubelet-sentinel.toml(5)` from
//! `packaging/config.toml`, so the page says what the file says.
//!
//! Run by the release binary the packages ship (`kubelet-sentinel
//! __packaging-assets DIR`, what `make assets` does), so packaging builds one
//! profile only. The command is not in the clap definition: it would
//! otherwise be in the completions and the man page it writes.

use std::io::Write;
use std::path::Path;

use clap::CommandFactory;
use clap_complete::{Shell, generate_to};

/// The first argument that runs [`generate`] instead of the command line.
pub(crate) const COMMAND: &str = "__packaging-assets";

/// The shipped config, as the package installs it.
const SHIPPED_CONFIG: &str = include_str!("../../../packaging/config.toml");

/// roff-safe text: backslashes and leading dots or quotes escaped.
fn roff(s: &str) -> String {
    let s = s.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

fn section(page: &mut Vec<u8>, title: &str, body: &str) -> std::io::Result<()> {
    writeln!(page, ".SH {title}")?;
    page.extend_from_slice(body.as_bytes());
    Ok(())
}

fn gz(path: &Path, page: &[u8]) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    let mut enc = flate2::write::GzEncoder::new(f, flate2::Compression::best());
    enc.write_all(page)?;
    enc.finish()?;
    Ok(())
}

fn main_page(cmd: &clap::Command) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    man.render_options_section(&mut page)?;
    // Every command on this one page (there are no per-command pages).
    writeln!(page, ".SH COMMANDS")?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        writeln!(page, ".SS \"kubelet\\-sentinel {}\"", roff(sub.get_name()))?;
        let sub_man = clap_mangen::Man::new(sub.clone());
        let mut part = Vec::new();
        sub_man.render_synopsis_section(&mut part)?;
        sub_man.render_description_section(&mut part)?;
        sub_man.render_options_section(&mut part)?;
        // Inside COMMANDS, a command's own sections are paragraphs.
        let part = String::from_utf8_lossy(&part)
            .replace(".SH SYNOPSIS", ".PP\n\\fBUsage:\\fR")
            .replace(".SH DESCRIPTION", ".PP")
            .replace(".SH OPTIONS", ".PP\n\\fBOptions:\\fR");
        page.extend_from_slice(part.as_bytes());
        for grand in sub.get_subcommands().filter(|s| s.get_name() != "help") {
            writeln!(
                page,
                ".TP\n\\fBkubelet\\-sentinel {} {}\\fR\n{}",
                roff(sub.get_name()),
                roff(grand.get_name()),
                roff(
                    &grand
                        .get_about()
                        .map(ToString::to_string)
                        .unwrap_or_default()
                )
            )?;
            for a in grand.get_arguments().filter(|a| a.get_long().is_some()) {
                writeln!(
                    page,
                    ".RS\n.TP\n\\fB\\-\\-{}\\fR\n{}\n.RE",
                    roff(a.get_long().unwrap_or_default()),
                    roff(&a.get_help().map(ToString::to_string).unwrap_or_default())
                )?;
            }
        }
    }
    section(
        &mut page,
        "FILES",
        ".TP\n/etc/kubelet\\-sentinel/config.toml\nThe config (see \\fBkubelet\\-sentinel.toml\\fR(5)); a conffile.\n\
         .TP\n/etc/kubelet\\-sentinel/credentials/password\nThe SMTP password, loaded as the credential \\fIsmtp_password\\fR by the unit.\n\
         .TP\n/var/lib/kubelet\\-sentinel/store\nThe incident history (sled), under \\fBStateDirectory=\\fR.\n\
         .TP\n/run/kubelet\\-sentinel/query.sock\nThe query socket (mode 0660, group systemd\\-journal).\n\
         .TP\n/usr/lib/systemd/system/kubelet\\-sentinel.service\nThe unit.\n\
         .TP\n/usr/share/kubelet\\-sentinel/prometheus/kubelet\\-sentinel.rules.yml\nPrometheus alerting rules for \\fI/metrics\\fR.\n",
    )?;
    section(
        &mut page,
        "CONFIGURATION",
        "Every key is optional and documented in \\fBkubelet\\-sentinel.toml\\fR(5) and in the shipped file. \
         \\fBsystemctl reload kubelet\\-sentinel\\fR (or an edit of the file) applies [incidents], [alert] and [node] \
         at once; [journal], [store] and [api] need \\fBsystemctl restart kubelet\\-sentinel\\fR. \
         \\fBkubelet\\-sentinel check\\-config\\fR validates the file and names the line of any error.\n",
    )?;
    section(
        &mut page,
        "WHO MAY DO WHAT",
        "The query socket is mode 0660, group systemd\\-journal: whoever may read the journal may read \
         \\fBincidents\\fR, \\fBshow\\fR, \\fBnodes\\fR, \\fBstatus\\fR and \\fBsilence list\\fR. \
         Changing what is delivered (\\fBsilence add\\fR, \\fBsilence expire\\fR, \\fBack\\fR, \\fBreload\\fR) \
         needs root or membership of the group [api] admin_group (none by default: root only); the service \
         tells who is asking from the socket's peer credentials, and records that user's name as the author \
         of a silence, an expiry or an acknowledgement, never a name the request carries. Others get exit \
         status 77 and what they would need. The TCP listener ([api] metrics_listen) serves \\fI/metrics\\fR \
         only. At most 1000 silences are in force at a time; ended ones are pruned a day after their end.\n",
    )?;
    section(
        &mut page,
        "EXIT STATUS",
        ".TP\n0\nSuccess.\n.TP\n1\nA runtime failure (an input or the service could not be reached or read).\n\
         .TP\n2\nUsage error.\n.TP\n3\n\\fBstatus\\fR: the service is not running.\n\
         .TP\n4\n\\fBscan\\fR: the input was read with losses (named on stderr, counted in the summary).\n\
         .TP\n5\n\\fBstatus\\fR: the service runs but alerts are not getting out.\n\
         .TP\n65\nThe store cannot be read (damaged, or another version's): move it aside.\n\
         .TP\n77\nThe service refused a change to this user: \\fBsilence add\\fR, \\fBsilence expire\\fR, \\fBack\\fR and \\fBreload\\fR need root or membership of [api] admin_group.\n\
         .TP\n78\nConfig error (the message names key, line and column).\n",
    )?;
    section(
        &mut page,
        "EXAMPLES",
        ".nf\n\
         kubelet\\-sentinel scan node7\\-journal.txt          # a saved log, as pasted\n\
         kubelet\\-sentinel scan /var/log/journal/remote     # a collector, host by host\n\
         kubelet\\-sentinel incidents \\-\\-since yesterday \\-\\-cause auth\n\
         kubelet\\-sentinel show 3fa2                        # a unique id prefix\n\
         kubelet\\-sentinel silence add \\-\\-node 'worker\\-*' \\-\\-for 2h \\-\\-comment \"kernel upgrade\"\n\
         kubelet\\-sentinel ack 3fa2 \\-\\-comment \"looking at it\"\n\
         kubelet\\-sentinel status || echo \"exit $?\"          # 3: not running, 5: alerts stuck\n\
         .fi\n",
    )?;
    section(
        &mut page,
        "SEE ALSO",
        "\\fBkubelet\\-sentinel.toml\\fR(5), \\fBjournalctl\\fR(1), \\fBsystemd\\-journal\\-remote\\fR(8), \\fBsystemd\\-journal\\-upload\\fR(8)\n",
    )?;
    man.render_version_section(&mut page)?;
    Ok(page)
}

/// `kubelet-sentinel.toml(5)` from the shipped config's comments and keys.
fn config_page(shipped: &str, version: &str) -> Vec<u8> {
    let mut page = format!(
        ".TH kubelet\\-sentinel.toml 5 \"\" \"kubelet\\-sentinel {version}\"\n\
         .SH NAME\nkubelet\\-sentinel.toml \\- the kubelet\\-sentinel configuration\n\
         .SH SYNOPSIS\n/etc/kubelet\\-sentinel/config.toml\n.SH DESCRIPTION\n"
    );
    // A key's comment comes before it in the file: it is the key's text.
    let mut text: Vec<String> = Vec::new();
    let paragraph = |page: &mut String, text: &mut Vec<String>| {
        if !text.is_empty() {
            page.push_str(&format!(".PP\n{}\n", roff(&text.join(" "))));
            text.clear();
        }
    };
    for line in shipped.lines() {
        let t = line.trim();
        if let Some(section) = t.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            paragraph(&mut page, &mut text);
            page.push_str(&format!(".SH \"[{}]\"\n", roff(section)));
        } else if let Some(example) = t.strip_prefix("##") {
            // A commented example (routes): shown as it is.
            paragraph(&mut page, &mut text);
            page.push_str(&format!(".nf\n{}\n.fi\n", roff(example.trim())));
        } else if let Some(kv) = t.strip_prefix('#').filter(|r| r.contains(" = ")) {
            let (k, v) = kv.split_once(" = ").unwrap_or((kv, ""));
            page.push_str(&format!(
                ".TP\n\\fB{}\\fR (default: {})\n{}\n",
                roff(k.trim()),
                roff(v.trim()),
                roff(&text.join(" "))
            ));
            text.clear();
        } else if let Some(c) = t.strip_prefix('#') {
            let c = c.trim();
            if !c.is_empty() {
                text.push(c.to_string());
            }
        } else if t.is_empty() {
            paragraph(&mut page, &mut text);
        }
    }
    paragraph(&mut page, &mut text);
    page.push_str(".SH SEE ALSO\n\\fBkubelet\\-sentinel\\fR(1)\n");
    page.into_bytes()
}

/// Writes the pages and completions into `dir` (made if missing).
pub(crate) fn generate(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut cmd = crate::Cli::command();
    gz(&dir.join("kubelet-sentinel.1.gz"), &main_page(&cmd)?)?;
    gz(
        &dir.join("kubelet-sentinel.toml.5.gz"),
        &config_page(SHIPPED_CONFIG, env!("CARGO_PKG_VERSION")),
    )?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        generate_to(shell, &mut cmd, "kubelet-sentinel", dir)?;
    }
    // clap_complete names the bash cases of a hyphenated binary's
    // subcommands `kubelet__subcmd__sentinel__…` but sets `cmd` to
    // `kubelet__sentinel__…`: no subcommand would complete. One name.
    let bash = dir.join("kubelet-sentinel.bash");
    let script = std::fs::read_to_string(&bash)?;
    std::fs::write(
        &bash,
        script.replace("kubelet__subcmd__sentinel", "kubelet__sentinel"),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_completions_are_written_and_name_every_command() {
        let dir = tempfile::tempdir().unwrap();
        generate(dir.path()).unwrap();
        for f in [
            "kubelet-sentinel.1.gz",
            "kubelet-sentinel.toml.5.gz",
            "kubelet-sentinel.bash",
            "_kubelet-sentinel",
            "kubelet-sentinel.fish",
        ] {
            assert!(dir.path().join(f).is_file(), "{f} not written");
        }
        let mut page = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(
                std::fs::File::open(dir.path().join("kubelet-sentinel.1.gz")).unwrap(),
            ),
            &mut page,
        )
        .unwrap();
        for sub in crate::Cli::command().get_subcommands() {
            assert!(
                page.contains(&format!("kubelet\\-sentinel {}", roff(sub.get_name()))),
                "the man page lacks {}",
                sub.get_name()
            );
        }
        assert!(!page.contains(COMMAND) && !page.contains("packaging\\-assets"));
        let bash = std::fs::read_to_string(dir.path().join("kubelet-sentinel.bash")).unwrap();
        assert!(!bash.contains("kubelet__subcmd__sentinel") && !bash.contains("packaging-assets"));
    }
}
