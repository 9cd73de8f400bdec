//! `test-email`: a sample alert through the configured transport.

use std::io::Write;
use std::path::PathBuf;

use crate::api::{self, Request};
use crate::cli::args::Exit;
use crate::cli::load_config;
use crate::query::{Delivery, StatusOut};

/// Sends a sample alert, built as the service builds its transport.
pub(crate) fn test_email(
    config_path: Option<&PathBuf>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let config = match load_config(config_path, err) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let transport = match crate::notify::EmailTransport::from_config(&config.alert) {
        Ok(Some(t)) => t,
        Ok(None) => {
            let _ = writeln!(
                err,
                "kubelet-sentinel: [alert] to is empty: there is nobody to send to"
            );
            return Exit::Config;
        }
        Err(e) => {
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            return Exit::Config;
        }
    };
    if let Some(source) = &transport.password {
        let _ = writeln!(out, "SMTP password from {}", source.describe());
    }
    let settings = config.tracker_settings();
    let incident = crate::notify::sample_incident(crate::clock::now(), &settings);
    let mut rendered = crate::notify::render(
        &[&incident],
        sentinel_core::tracker::AlertKind::Opened,
        &settings,
    );
    rendered.subject =
        rendered
            .subject
            .replacen("[kubelet-sentinel]", "[kubelet-sentinel] test:", 1);
    // Anyone who may read the config may send this: it is no privilege (the
    // relay takes the same mail from them directly, and one that wants a
    // login needs the root-only password). The mail says who sent it, so
    // on-call knows whom to ask.
    let uid = rustix::process::getuid().as_raw();
    let who = crate::users::user_of_id(uid).map_or_else(
        || format!("uid {uid}"),
        |u| format!("{} (uid {uid})", u.name),
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let banner = format!(
        "TEST ALERT from kubelet-sentinel test-email, sent by {who} on {}: not an incident. \
         If you read this, alerts reach you.\n\n",
        sentinel_core::tracker::one_line(host.trim(), 253)
    );
    // Its incident is a sample, in no history: no `show`/`ack` to offer.
    let footer = crate::notify::render::footer(&incident.id);
    let sample = format!(
        "incident {} is a sample made for this test and kept nowhere: `show` and `ack` do not \
         know it.",
        incident.id
    );
    rendered.text = format!("{banner}{}", rendered.text.replace(&footer, &sample));
    rendered.html = rendered.html.replace(
        &crate::notify::render::html_escape(&footer),
        &crate::notify::render::html_escape(&sample),
    );
    rendered.html = format!(
        "<p><b>{}</b></p>\n{}",
        crate::notify::render::html_escape(banner.trim()),
        rendered.html
    );
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(err, "kubelet-sentinel: {e}");
            return Exit::Failure;
        }
    };
    let sent = rt.block_on(transport.deliver(&rendered));
    match sent {
        Ok(to) => {
            let _ = writeln!(out, "test alert sent: {to} (it says it was sent by {who})");
            // This process read the config and the password itself; say so
            // when the running service cannot send with what it has. A
            // config saved a moment ago is being applied (the service
            // watches the file): its answer is waited for a few seconds.
            let socket = PathBuf::from(&config.api.socket);
            if let Some(off) = service_mail_off(&socket) {
                let _ = writeln!(
                    out,
                    "note: the running service cannot send yet: mail {off} \
                     (systemctl restart kubelet-sentinel loads the password and the config)",
                );
            }
            Exit::Ok
        }
        Err(e) => {
            let _ = writeln!(err, "kubelet-sentinel: test alert not sent: {e}");
            Exit::Failure
        }
    }
}

/// How long a running service may take to apply a config saved just
/// before `test-email` (its watcher waits for the writes to settle).
const APPLY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The running service's mail delivery when it is disabled, still so after
/// [`APPLY_WAIT`]; `None` when it can send or no service answers.
fn service_mail_off(socket: &std::path::Path) -> Option<Delivery> {
    let until = std::time::Instant::now() + APPLY_WAIT;
    loop {
        let s = api::ask::<StatusOut>(socket, &Request::Status).ok()?;
        match s.mail {
            Some(off @ Delivery::Disabled { .. }) if std::time::Instant::now() >= until => {
                return Some(off);
            }
            Some(Delivery::Disabled { .. }) => {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            _ => return None,
        }
    }
}
