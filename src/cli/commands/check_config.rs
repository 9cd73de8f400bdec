//! `check-config`: validate the file and show the effective settings.

use std::io::Write;
use std::path::PathBuf;

use crate::api;
use crate::cli::args::Exit;
use crate::cli::load_config;

pub(crate) fn check_config(
    config_path: Option<&PathBuf>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    match load_config(config_path, err) {
        Ok(c) => {
            let _ = writeln!(out, "# effective settings\n{}", c.to_toml());
            if c.alert.smtp.username.is_some() {
                let source = crate::notify::PasswordSource::of(&c.alert);
                let _ = writeln!(out, "# SMTP password: {}", source.describe());
            }
            if c.alert.emails() && c.alert.transport == crate::config::Transport::File {
                let dir = std::path::Path::new(&c.alert.file.directory);
                match crate::notify::transport::file_directory_state(dir) {
                    Ok(s) => {
                        let _ = writeln!(out, "# [alert.file] directory: {s}");
                    }
                    Err(e) => {
                        let _ = writeln!(out, "# [alert.file] directory: {e}");
                        let _ = writeln!(err, "kubelet-sentinel: [alert.file] directory: {e}");
                    }
                }
            }
            if !c.alert.delivers() {
                let _ = writeln!(
                    out,
                    "# [alert] to and [alert.alertmanager] urls are empty: incidents are recorded, \
                     nothing is delivered"
                );
            }
            if let Some(why) = c
                .api
                .admin_group
                .as_deref()
                .and_then(api::peer::missing_admin_group)
            {
                let _ = writeln!(out, "# {why}");
            }
            if matches!(c.journal.target, crate::config::JournalTarget::Directory(_)) {
                let words = super::query::silent_incidents_words(c.fleet.silent_incidents, &c);
                let _ = writeln!(out, "# host-silent {words}");
            }
            let _ = writeln!(out, "# config OK");
            Exit::Ok
        }
        Err(e) => e,
    }
}
