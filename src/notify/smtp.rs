//! One SMTP delivery on lettre's async connection, with three bounds that
//! lettre's transport does not give (`rust-stack.md` trip-up 5, and the
//! attack report's S4 and S5):
//!
//! - every step (connect, greeting, TLS, each command) is bounded by
//!   `timeout`; the whole delivery by the caller;
//! - a server may send at most [`READ_BUDGET`] bytes in one delivery: lettre
//!   reads a reply line until its line ending, so a reply that never ends
//!   would otherwise grow memory without bound. The budget sits under TLS,
//!   so it holds before STARTTLS and after;
//! - the caller learns the [`Phase`] a failure happened in: a failure while
//!   waiting for the answer to the message body may come after the server
//!   accepted the mail ([`DeliveryError::in_doubt`]), and is retried only a
//!   bounded number of times.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use lettre::address::Envelope;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, AsyncTokioStream, TlsParameters};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::{ClientId, Extension, MailBodyParameter, MailParameter};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::DeliveryError;

/// Bytes a server may send in one delivery: replies are at most 100 kB
/// (lettre's own limit per response), a TLS handshake some kilobytes.
pub(crate) const READ_BUDGET: usize = 1 << 20;

/// Where a delivery got to; a failure is reported with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    Connect = 0,
    Greeting = 1,
    Tls = 2,
    Login = 3,
    Envelope = 4,
    /// The message body was sent; the server's answer is awaited. A failure
    /// here may come after the server accepted the mail.
    Accepting = 5,
    Done = 6,
}

impl Phase {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => Phase::Connect,
            1 => Phase::Greeting,
            2 => Phase::Tls,
            3 => Phase::Login,
            4 => Phase::Envelope,
            5 => Phase::Accepting,
            _ => Phase::Done,
        }
    }
}

/// Shared with the caller, so the phase is known even when the delivery
/// future is dropped on a timeout or at shutdown.
#[derive(Debug, Default, Clone)]
pub struct Progress(Arc<AtomicU8>);

impl Progress {
    fn set(&self, p: Phase) {
        self.0.store(p as u8, Ordering::Relaxed);
    }

    #[must_use]
    pub fn get(&self) -> Phase {
        Phase::from_u8(self.0.load(Ordering::Relaxed))
    }
}

/// How the connection is secured.
#[derive(Clone)]
pub(crate) enum Security {
    /// Plain text (loopback only; the config enforces it).
    None,
    /// STARTTLS, required: no plain-text fallback.
    StartTls(TlsParameters),
    /// TLS from the first byte (port 465).
    Implicit(Arc<rustls::ClientConfig>),
}

/// A configured SMTP server.
#[derive(Clone)]
pub(crate) struct SmtpServer {
    pub host: String,
    pub port: u16,
    pub security: Security,
    pub credentials: Option<Credentials>,
    /// Bound on each step.
    pub timeout: Duration,
    pub hello: ClientId,
}

impl SmtpServer {
    #[must_use]
    pub(crate) fn name(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    fn timeout_error(&self, phase: Phase) -> DeliveryError {
        DeliveryError::Timeout {
            server: self.name(),
            seconds: self.timeout.as_secs().max(1),
            in_doubt: phase == Phase::Accepting,
        }
    }

    /// One step of the conversation, bounded by the timeout for each of the
    /// server's `replies` in it (lettre's greeting reads the banner and the
    /// EHLO answer; STARTTLS and AUTH take two or three).
    async fn step<T, E>(
        &self,
        progress: &Progress,
        phase: Phase,
        fut: impl Future<Output = Result<T, E>>,
        err: impl FnOnce(E) -> DeliveryError,
    ) -> Result<T, DeliveryError> {
        progress.set(phase);
        let replies = match phase {
            Phase::Greeting | Phase::Tls => 2,
            Phase::Login => 3,
            _ => 1,
        };
        match tokio::time::timeout(self.timeout * replies, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(err(e)),
            Err(_) => Err(self.timeout_error(phase)),
        }
    }

    /// Delivers one message. `progress` says how far it got, also when the
    /// future is dropped.
    pub(crate) async fn send(
        &self,
        envelope: &Envelope,
        message: &[u8],
        progress: &Progress,
    ) -> Result<(), DeliveryError> {
        let server = self.name();
        let tcp = self
            .step(
                progress,
                Phase::Connect,
                TcpStream::connect((self.host.as_str(), self.port)),
                |e| DeliveryError::Connect {
                    server: server.clone(),
                    detail: e.to_string(),
                },
            )
            .await?;
        let peer = tcp.peer_addr().ok();
        let bounded = Bounded {
            inner: tcp,
            left: READ_BUDGET,
            peer,
        };
        let stream: Box<dyn AsyncTokioStream> = match &self.security {
            Security::Implicit(config) => {
                let name =
                    rustls::pki_types::ServerName::try_from(self.host.clone()).map_err(|e| {
                        DeliveryError::Tls {
                            server: server.clone(),
                            detail: e.to_string(),
                        }
                    })?;
                let connector = tokio_rustls::TlsConnector::from(config.clone());
                let tls = self
                    .step(
                        progress,
                        Phase::Tls,
                        connector.connect(name, bounded),
                        |e| DeliveryError::Tls {
                            server: server.clone(),
                            detail: e.to_string(),
                        },
                    )
                    .await?;
                Box::new(Tls { inner: tls, peer })
            }
            _ => Box::new(bounded),
        };
        let mut conn = self
            .step(
                progress,
                Phase::Greeting,
                AsyncSmtpConnection::connect_with_transport(stream, &self.hello),
                |e| self.classify(Phase::Greeting, &e),
            )
            .await?;
        let result = self.converse(&mut conn, envelope, message, progress).await;
        if result.is_ok() {
            // The mail is accepted; a server slow to say goodbye changes nothing.
            let _ = tokio::time::timeout(self.timeout, conn.quit()).await;
        }
        // On failure the connection is just dropped: lettre's abort() writes
        // QUIT to a stream a failed STARTTLS has taken away, and panics.
        result
    }

    async fn converse(
        &self,
        conn: &mut AsyncSmtpConnection,
        envelope: &Envelope,
        message: &[u8],
        progress: &Progress,
    ) -> Result<(), DeliveryError> {
        if let Security::StartTls(params) = &self.security {
            if !conn.server_info().supports_feature(Extension::StartTls) {
                return Err(DeliveryError::Tls {
                    server: self.name(),
                    detail: "STARTTLS is not supported on this server".into(),
                });
            }
            self.step(
                progress,
                Phase::Tls,
                conn.starttls(params.clone(), &self.hello),
                |e| self.classify(Phase::Tls, &e),
            )
            .await?;
        }
        if let Some(creds) = &self.credentials {
            let offered = [Mechanism::Plain, Mechanism::Login]
                .into_iter()
                .any(|m| conn.server_info().supports_auth_mechanism(m));
            if !offered {
                // Not a refused login: the server offers none this side
                // can use (on this port, or before STARTTLS).
                return Err(DeliveryError::NoLogin {
                    server: self.name(),
                });
            }
            self.step(
                progress,
                Phase::Login,
                conn.auth(&[Mechanism::Plain, Mechanism::Login], creds),
                |e| self.classify(Phase::Login, &e),
            )
            .await?;
        }
        let mut options = Vec::new();
        if !message.is_ascii() && conn.server_info().supports_feature(Extension::EightBitMime) {
            options.push(MailParameter::Body(MailBodyParameter::EightBitMime));
        }
        self.step(
            progress,
            Phase::Envelope,
            conn.command(Mail::new(envelope.from().cloned(), options)),
            |e| self.classify(Phase::Envelope, &e),
        )
        .await?;
        for to in envelope.to() {
            self.step(
                progress,
                Phase::Envelope,
                conn.command(Rcpt::new(to.clone(), Vec::new())),
                |e| self.classify(Phase::Envelope, &e),
            )
            .await?;
        }
        self.step(progress, Phase::Envelope, conn.command(Data), |e| {
            self.classify(Phase::Envelope, &e)
        })
        .await?;
        self.step(progress, Phase::Accepting, conn.message(message), |e| {
            self.classify(Phase::Accepting, &e)
        })
        .await?;
        progress.set(Phase::Done);
        Ok(())
    }

    /// An operator's words for a lettre error, from lettre's own
    /// classification and the phase it happened in (never from matching
    /// words in the server's text).
    fn classify(&self, phase: Phase, e: &lettre::transport::smtp::Error) -> DeliveryError {
        let server = self.name();
        let detail = error_chain(e);
        if e.is_timeout() {
            return self.timeout_error(phase);
        }
        if e.status().is_some() && e.is_permanent() {
            // 552: "exceeded storage allocation", what a server says of a
            // message over its size limit (Postfix: "552 5.3.4 Message size
            // exceeds fixed limit").
            if e.status().is_some_and(|c| c.to_string() == "552") {
                return DeliveryError::TooBig { server, detail };
            }
            return match phase {
                Phase::Login => DeliveryError::Auth { server, detail },
                _ => DeliveryError::Rejected { server, detail },
            };
        }
        match phase {
            Phase::Tls => DeliveryError::Tls { server, detail },
            Phase::Login => DeliveryError::Auth { server, detail },
            Phase::Accepting if e.status().is_none() => DeliveryError::InDoubt { server, detail },
            _ if e.is_transient() => DeliveryError::Deferred { server, detail },
            _ => DeliveryError::Lost { server, detail },
        }
    }
}

/// An error and its sources in one line, each said once: lettre's errors
/// already print their source, and nest (`Connection error: Connection
/// error: invalid peer certificate`).
#[must_use]
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !more.is_empty() && !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in text.split(": ") {
        if parts.last() != Some(&part) {
            parts.push(part);
        }
    }
    parts.join(": ")
}

/// A TCP stream that fails once the server has sent `left` bytes.
#[derive(Debug)]
struct Bounded {
    inner: TcpStream,
    left: usize,
    peer: Option<SocketAddr>,
}

impl AsyncRead for Bounded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.left == 0 {
            return Poll::Ready(Err(io::Error::other(format!(
                "the server sent more than {READ_BUDGET} bytes in one delivery"
            ))));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        let got = buf.filled().len() - before;
        this.left = this.left.saturating_sub(got);
        poll
    }
}

impl AsyncWrite for Bounded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl AsyncTokioStream for Bounded {
    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.peer.ok_or_else(|| io::Error::other("no peer address"))
    }
}

/// Implicit TLS over the bounded stream.
#[derive(Debug)]
struct Tls {
    inner: tokio_rustls::client::TlsStream<Bounded>,
    peer: Option<SocketAddr>,
}

impl AsyncRead for Tls {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Tls {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl AsyncTokioStream for Tls {
    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.peer.ok_or_else(|| io::Error::other("no peer address"))
    }
}

/// The rustls configuration for implicit TLS: the platform's trust store,
/// plus `extra` roots (a private CA).
pub(crate) fn implicit_tls_config(
    extra: Vec<rustls::pki_types::CertificateDer<'static>>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = if extra.is_empty() {
        rustls_platform_verifier::Verifier::new(provider.clone())
    } else {
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider.clone())
    }
    .map_err(|e| e.to_string())?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(Arc::new(config))
}
