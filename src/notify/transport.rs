//! The configured email transport (SMTP, sendmail or files), built from
//! `[alert]`, and where the SMTP password comes from. `run` and
//! `test-email` build it the same way, so a test mail proves what the
//! service will do.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{
    AsyncFileTransport, AsyncSendmailTransport, AsyncTransport as _, Message, Tokio1Executor,
};

use super::smtp::{Progress, Security, SmtpServer, implicit_tls_config};
use super::{DeliveryError, Rendered, SetupError};
use crate::config::{AlertConfig, Tls, Transport};

/// Where the shipped unit's credential directory is; outside systemd (the
/// CLI run by root) the file is read directly.
pub(crate) const UNIT_CREDENTIALS: &str = "/etc/kubelet-sentinel/credentials";

/// Where the SMTP password comes from, first match wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasswordSource {
    /// `[alert.smtp] password_file`.
    File(PathBuf),
    /// The systemd credential (`$CREDENTIALS_DIRECTORY/smtp-password` or
    /// `smtp_password`, what the unit makes of `credentials/password`).
    Credential(PathBuf),
    /// Not under systemd: the file the unit would load as the credential.
    UnitFile(PathBuf),
    /// Under systemd, the unit's password file exists but was not there
    /// when the service started: a restart loads it.
    NotLoaded(PathBuf),
    /// Under systemd, no password credential was loaded, and whether the
    /// unit's file exists now cannot be told: its directory is root's
    /// alone (mode 0700) and the service runs as its own user. Never said
    /// to exist when it cannot be seen.
    NotLoadedUnseen(PathBuf),
    /// None of them exists.
    None,
}

impl PasswordSource {
    /// The password source `[alert]` and the environment give.
    #[must_use]
    pub fn of(cfg: &AlertConfig) -> Self {
        let credentials = std::env::var_os("CREDENTIALS_DIRECTORY").map(PathBuf::from);
        Self::resolve(cfg, credentials.as_deref(), Path::new(UNIT_CREDENTIALS))
    }

    /// [`PasswordSource::of`] with the credential directory systemd gave
    /// (`$CREDENTIALS_DIRECTORY`, if any) and the directory the unit loads
    /// them from.
    fn resolve(cfg: &AlertConfig, credentials: Option<&Path>, unit_dir: &Path) -> Self {
        if let Some(file) = &cfg.smtp.password_file {
            return PasswordSource::File(file.clone());
        }
        let unit = unit_dir.join("password");
        let Some(dir) = credentials else {
            return if unit.exists() {
                PasswordSource::UnitFile(unit)
            } else {
                PasswordSource::None
            };
        };
        let found = ["smtp-password", "smtp_password"]
            .iter()
            .map(|n| dir.join(n))
            .find(|p| p.exists());
        if let Some(p) = found {
            return PasswordSource::Credential(p);
        }
        // The unit loads credentials when it starts: a password file put
        // there since is not loaded yet. Only a file that is seen is said
        // to be there; a directory this user may not look into tells
        // nothing either way.
        match std::fs::metadata(&unit) {
            Ok(_) => PasswordSource::NotLoaded(unit),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => PasswordSource::None,
            Err(_) => PasswordSource::NotLoadedUnseen(unit),
        }
    }

    /// In words, for `check-config`, `test-email` and errors.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            PasswordSource::File(p) => format!("password_file {}", p.display()),
            PasswordSource::Credential(p) => format!("the systemd credential {}", p.display()),
            PasswordSource::UnitFile(p) => {
                format!("{} (the service's credential)", p.display())
            }
            PasswordSource::NotLoaded(p) => format!(
                "{} exists but was created after the service started; systemctl restart kubelet-sentinel loads it",
                p.display()
            ),
            PasswordSource::NotLoadedUnseen(p) => format!(
                "none loaded: the service had no smtp_password credential when it started; \
                 put the password in {} (mode 0600) and systemctl restart kubelet-sentinel, \
                 or set [alert.smtp] password_file",
                p.display()
            ),
            PasswordSource::None => format!(
                "none found (set [alert.smtp] password_file, or put it in {UNIT_CREDENTIALS}/password)"
            ),
        }
    }

    /// The password, if there is one. Never logged.
    pub fn read(&self) -> Result<Option<String>, SetupError> {
        let path = match self {
            PasswordSource::File(p)
            | PasswordSource::Credential(p)
            | PasswordSource::UnitFile(p) => p,
            PasswordSource::None
            | PasswordSource::NotLoaded(_)
            | PasswordSource::NotLoadedUnseen(_) => return Ok(None),
        };
        std::fs::read_to_string(path)
            .map(|s| Some(s.trim_end_matches(['\r', '\n']).to_string()).filter(|p| !p.is_empty()))
            .map_err(|e| SetupError::Password {
                source_: self.describe(),
                detail: if e.kind() == std::io::ErrorKind::PermissionDenied {
                    format!("{e} (it is readable by root only; run this as root)")
                } else {
                    e.to_string()
                },
            })
    }
}

enum Kind {
    Smtp(SmtpServer),
    Sendmail(AsyncSendmailTransport<Tokio1Executor>),
    File(AsyncFileTransport<Tokio1Executor>, PathBuf),
}

/// A configured transport with its envelope.
pub struct EmailTransport {
    kind: Kind,
    from: Mailbox,
    to: Vec<Mailbox>,
    step_timeout: Duration,
    /// Where mail goes, in words ("smtp 127.0.0.1:25").
    pub target: String,
    /// Where the SMTP password came from (SMTP with a username only).
    pub password: Option<PasswordSource>,
}

/// Whether the file transport can write to `dir`, in words for
/// `check-config`: it exists and is a directory this user may write to, or
/// the nearest existing parent lets it be created on the first delivery.
pub(crate) fn file_directory_state(dir: &std::path::Path) -> Result<String, String> {
    use rustix::fs::{Access, access};
    let writable = |d: &std::path::Path| access(d, Access::WRITE_OK | Access::EXEC_OK).is_ok();
    if dir.is_dir() {
        return if writable(dir) {
            Ok(format!("{} exists and is writable", dir.display()))
        } else {
            Err(format!("{} is not writable by this user", dir.display()))
        };
    }
    if dir.exists() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    match dir.ancestors().skip(1).find(|a| a.is_dir()) {
        Some(p) if writable(p) => Ok(format!(
            "{} does not exist yet; it is created on the first delivery",
            dir.display()
        )),
        Some(p) => Err(format!(
            "{} does not exist and cannot be created ({} is not writable by this user)",
            dir.display(),
            p.display()
        )),
        None => Err(format!("{} cannot be created", dir.display())),
    }
}

impl EmailTransport {
    /// Builds the transport the config names. `Ok(None)` when `to` is
    /// empty: incidents are recorded and nothing is mailed.
    pub fn from_config(cfg: &AlertConfig) -> Result<Option<Arc<Self>>, SetupError> {
        if !cfg.emails() {
            return Ok(None);
        }
        let from: Mailbox = cfg
            .from
            .parse()
            .map_err(|e| SetupError::Invalid(format!("from {:?}: {e}", cfg.from)))?;
        let to = cfg
            .to
            .iter()
            .map(|t| {
                t.parse()
                    .map_err(|e| SetupError::Invalid(format!("to {t:?}: {e}")))
            })
            .collect::<Result<Vec<Mailbox>, _>>()?;
        let step_timeout = cfg.smtp.timeout.std().max(Duration::from_secs(1));
        let s = &cfg.smtp;
        let mut password = None;
        let (kind, target) = match cfg.transport {
            Transport::File => {
                let dir = PathBuf::from(&cfg.file.directory);
                let target = format!("file {}", dir.display());
                (Kind::File(AsyncFileTransport::new(&dir), dir), target)
            }
            Transport::Sendmail => (
                Kind::Sendmail(AsyncSendmailTransport::new()),
                "sendmail".to_string(),
            ),
            Transport::Smtp => {
                let mut extra = Vec::new();
                let mut params = TlsParameters::builder(s.host.clone());
                if let Some(ca_file) = &s.ca_file {
                    let ca_err = |detail: String| SetupError::Ca {
                        path: ca_file.display().to_string(),
                        detail,
                    };
                    let pem = std::fs::read(ca_file).map_err(|e| ca_err(e.to_string()))?;
                    let cert = Certificate::from_pem(&pem).map_err(|e| ca_err(e.to_string()))?;
                    params = params.add_root_certificate(cert);
                    for der in pem_certificates(&pem) {
                        extra.push(der);
                    }
                    if extra.is_empty() {
                        return Err(ca_err("no PEM certificate in it".into()));
                    }
                }
                let security = match s.tls {
                    Tls::Starttls => Security::StartTls(
                        params
                            .build()
                            .map_err(|e| SetupError::Invalid(format!("TLS parameters: {e}")))?,
                    ),
                    Tls::Tls => Security::Implicit(
                        implicit_tls_config(extra)
                            .map_err(|e| SetupError::Invalid(format!("TLS parameters: {e}")))?,
                    ),
                    Tls::None => Security::None,
                };
                let credentials = if let Some(username) = &s.username {
                    let source = PasswordSource::of(cfg);
                    let Some(pass) = source.read()? else {
                        return Err(SetupError::Password {
                            source_: source.describe(),
                            detail: format!(
                                "[alert.smtp] username {username:?} is set but there is no password; \
                                 an empty one is never sent"
                            ),
                        });
                    };
                    password = Some(source);
                    Some(Credentials::new(username.clone(), pass))
                } else {
                    None
                };
                let server = SmtpServer {
                    host: s.host.clone(),
                    port: s.port,
                    security,
                    credentials,
                    timeout: step_timeout,
                    hello: ClientId::default(),
                };
                let target = format!("smtp {}", server.name());
                (Kind::Smtp(server), target)
            }
        };
        Ok(Some(Arc::new(Self {
            kind,
            from,
            to,
            step_timeout,
            target,
            password,
        })))
    }

    /// A bound on one whole delivery: a server answering each step within
    /// the step timeout still gets a slow conversation through.
    #[must_use]
    pub fn delivery_timeout(&self) -> Duration {
        self.step_timeout * 10
    }

    fn message(&self, r: &Rendered) -> Result<Message, DeliveryError> {
        fn crlf(s: &str) -> String {
            let mut out = String::with_capacity(s.len() + s.len() / 32);
            for line in s.split_inclusive('\n') {
                match line.strip_suffix('\n') {
                    Some(l) => {
                        out.push_str(l.strip_suffix('\r').unwrap_or(l));
                        out.push_str("\r\n");
                    }
                    None => out.push_str(line),
                }
            }
            out
        }
        let mut b = Message::builder()
            .from(self.from.clone())
            .subject(r.subject.clone());
        // A route's recipients, or `[alert] to`.
        let routed: Vec<Mailbox> =
            r.to.iter()
                .map(|t| {
                    t.parse()
                        .map_err(|e| DeliveryError::Other(format!("recipient {t:?}: {e}")))
                })
                .collect::<Result<_, _>>()?;
        let to = if routed.is_empty() { &self.to } else { &routed };
        if to.is_empty() {
            return Err(DeliveryError::Other("no recipients".into()));
        }
        for t in to {
            b = b.to(t.clone());
        }
        // Line ends as SMTP has them already: lettre would otherwise insert
        // a CR before every LF in place, one shift of the rest each time,
        // which is quadratic in a big group's mail.
        b.multipart(MultiPart::alternative_plain_html(
            crlf(&r.text),
            crlf(&r.html),
        ))
        .map_err(|e| DeliveryError::Other(format!("building the message: {e}")))
    }

    /// [`EmailTransport::send`] bounded by [`EmailTransport::delivery_timeout`],
    /// on a task of its own: a panic in the SMTP client is a failed
    /// delivery, not a dead mailer. Dropping the future ends the delivery.
    pub async fn deliver(self: &Arc<Self>, r: &Rendered) -> Result<String, DeliveryError> {
        let progress = Progress::default();
        let this = self.clone();
        let rendered = r.clone();
        let p = progress.clone();
        let limit = self.delivery_timeout();
        let task =
            tokio::spawn(
                async move { tokio::time::timeout(limit, this.send(&rendered, &p)).await },
            );
        let abort = task.abort_handle();
        // Dropped (shutdown) before the task ends: end it too.
        let _guard = AbortOnDrop(abort);
        match task.await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(DeliveryError::Timeout {
                server: self.target.clone(),
                seconds: limit.as_secs(),
                in_doubt: progress.get() == super::smtp::Phase::Accepting,
            }),
            Err(e) => Err(DeliveryError::Other(format!(
                "the delivery to {} failed: {}",
                self.target,
                if e.is_panic() {
                    "the mail client panicked"
                } else {
                    "cancelled"
                }
            ))),
        }
    }

    /// Sends one rendered alert. Returns where it went (the server, or the
    /// `.eml` path). `progress` says how far an SMTP delivery got.
    pub async fn send(&self, r: &Rendered, progress: &Progress) -> Result<String, DeliveryError> {
        let msg = self.message(r)?;
        match &self.kind {
            Kind::File(t, dir) => {
                // Made if missing (as journal-remote makes its own): a
                // missing directory would fail every delivery.
                tokio::fs::create_dir_all(dir).await.map_err(|e| {
                    DeliveryError::Other(format!("creating {}: {e}", dir.display()))
                })?;
                t.send(msg)
                    .await
                    .map(|id| dir.join(format!("{id}.eml")).display().to_string())
                    .map_err(|e| DeliveryError::Other(format!("writing to {}: {e}", dir.display())))
            }
            Kind::Sendmail(t) => t
                .send(msg)
                .await
                .map(|()| "sendmail".to_string())
                .map_err(|e| DeliveryError::Other(format!("sendmail: {e}"))),
            Kind::Smtp(server) => {
                let envelope = msg.envelope().clone();
                server
                    .send(&envelope, &msg.formatted(), progress)
                    .await
                    .map(|()| server.name())
            }
        }
    }
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The certificates of a PEM file (a private CA), or why not.
pub(crate) fn read_ca(
    path: &Path,
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let certs = pem_certificates(&pem);
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate in it", path.display()));
    }
    Ok(certs)
}

/// The DER certificates of a PEM file.
fn pem_certificates(pem: &[u8]) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject as _;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn alert(extra: &str) -> AlertConfig {
        Config::parse(&format!("[alert.smtp]\nusername = \"u\"\n{extra}"), "t")
            .unwrap()
            .alert
    }

    /// Under systemd with no credential loaded: the unit's file is said to
    /// exist only when it is seen; not there, or not to be looked at (its
    /// directory is root's alone), it is never "created after the start".
    #[test]
    fn a_password_file_is_said_to_exist_only_when_it_is_seen() {
        let t = tempfile::tempdir().unwrap();
        let creds = t.path().join("run-credentials");
        let unit = t.path().join("credentials");
        std::fs::create_dir_all(&creds).unwrap();
        std::fs::create_dir_all(&unit).unwrap();
        let cfg = alert("");
        let under_systemd = |unit: &Path| PasswordSource::resolve(&cfg, Some(&creds), unit);

        // Empty credential directory and an empty unit directory: none.
        let none = under_systemd(&unit);
        assert_eq!(none, PasswordSource::None);
        assert!(!none.describe().contains("exists"), "{}", none.describe());

        // A directory that cannot be looked into (here a file where the
        // directory should be: any error but "not found"): unseen.
        let blocked = t.path().join("blocked");
        std::fs::write(&blocked, "").unwrap();
        let unseen = under_systemd(&blocked);
        assert_eq!(
            unseen,
            PasswordSource::NotLoadedUnseen(blocked.join("password"))
        );
        let said = unseen.describe();
        assert!(
            !said.contains("exists") && !said.contains("created after"),
            "{said}"
        );
        assert!(
            said.contains("systemctl restart kubelet-sentinel"),
            "{said}"
        );
        assert_eq!(unseen.read().unwrap(), None);

        // The file is there but was not loaded: a restart loads it.
        std::fs::write(unit.join("password"), "pw\n").unwrap();
        let not_loaded = under_systemd(&unit);
        assert_eq!(not_loaded, PasswordSource::NotLoaded(unit.join("password")));
        assert!(
            not_loaded
                .describe()
                .contains("exists but was created after")
        );

        // Loaded as the credential: that one.
        std::fs::write(creds.join("smtp_password"), "pw\n").unwrap();
        let loaded = under_systemd(&unit);
        assert_eq!(
            loaded,
            PasswordSource::Credential(creds.join("smtp_password"))
        );
        assert_eq!(loaded.read().unwrap().as_deref(), Some("pw"));

        // Outside systemd: the unit's file itself, or none.
        assert_eq!(
            PasswordSource::resolve(&cfg, None, &unit),
            PasswordSource::UnitFile(unit.join("password"))
        );
        assert_eq!(
            PasswordSource::resolve(&cfg, None, &blocked),
            PasswordSource::None
        );
        // password_file first, wherever it runs.
        let file = alert("password_file = \"/x/pw\"");
        assert_eq!(
            PasswordSource::resolve(&file, Some(&creds), &unit),
            PasswordSource::File(PathBuf::from("/x/pw"))
        );
    }
}
