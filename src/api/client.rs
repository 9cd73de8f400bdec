//! The CLI's side of the query socket: one HTTP/1.1 request over the Unix
//! socket (hyper), bounded in time and in the size of the answer, and its
//! answer decoded into the type the request is for.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper::{Method, StatusCode};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;

use crate::query::{AckRequest, NewSilence};
use crate::store::Filter;

/// Answers larger than this are refused (the whole history as JSON fits).
const MAX_ANSWER: usize = 256 << 20;
const TIMEOUT: Duration = Duration::from_secs(30);
/// Times a large answer refused for the bytes others hold (503 with
/// `Retry-After`) is asked for again, a second or so apart.
const RETRIES: u32 = 5;

/// What the CLI asks the running service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    Incidents(Filter),
    Incident(String),
    Nodes,
    Starts(crate::store::StartFilter),
    Status,
    Silences,
    AddSilence(NewSilence),
    /// Ends a silence now (its id or a unique prefix); the service records
    /// who from the connection.
    ExpireSilence(String),
    /// Acknowledges an open incident (its id or a unique prefix).
    Ack(AckRequest),
    /// Applies the edited config file.
    Reload,
}

/// Percent-encodes a path segment.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Request {
    /// The request's path and query on the socket.
    #[must_use]
    pub(crate) fn path(&self) -> String {
        match self {
            Request::Incidents(f) => {
                let q = serde_urlencoded::to_string(f).unwrap_or_default();
                if q.is_empty() {
                    "/incidents".into()
                } else {
                    format!("/incidents?{q}")
                }
            }
            Request::Incident(id) => format!("/incidents/{}", encode(id)),
            Request::Nodes => "/nodes".into(),
            Request::Starts(f) => {
                let q = serde_urlencoded::to_string(f).unwrap_or_default();
                if q.is_empty() {
                    "/starts".into()
                } else {
                    format!("/starts?{q}")
                }
            }
            Request::Status => "/status".into(),
            Request::Silences | Request::AddSilence(_) => "/silences".into(),
            Request::ExpireSilence(id) => format!("/silences/{}/expire", encode(id)),
            Request::Ack(a) => format!("/incidents/{}/ack", encode(&a.id)),
            Request::Reload => "/reload".into(),
        }
    }

    /// POST for what changes something.
    fn method(&self) -> Method {
        match self {
            Request::AddSilence(_)
            | Request::ExpireSilence(_)
            | Request::Ack(_)
            | Request::Reload => Method::POST,
            _ => Method::GET,
        }
    }

    /// The JSON body a POST carries.
    fn body(&self) -> Option<String> {
        match self {
            Request::AddSilence(n) => serde_json::to_string(n).ok(),
            Request::Ack(a) => serde_json::to_string(a).ok(),
            Request::ExpireSilence(_) => Some("{}".into()),
            _ => None,
        }
    }
}

/// Why the service said no.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not this user's to change (root or `[api] admin_group` may).
    Forbidden,
    /// A reload found the config file broken; the running settings stay.
    BrokenConfig,
    /// Anything else: no such incident, a silence that cannot be, …
    Other,
}

/// Why a query has no answer over the socket.
#[derive(Debug)]
pub(crate) enum ClientError {
    /// No socket, or nobody listening: the service is not running.
    NotRunning(std::io::Error),
    PermissionDenied(PathBuf),
    /// The service answered, and refused: why, in its words.
    Refused(Refusal, String),
    Other(String),
}

/// Asks the running service, and reads its answer as a `T`.
pub(crate) fn ask<T: DeserializeOwned>(socket: &Path, req: &Request) -> Result<T, ClientError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ClientError::Other(e.to_string()))?;
    // Asking again stays within the one TIMEOUT: the last refusal is
    // the answer when the time is up.
    let (code, body) = rt.block_on(async {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        let mut tries = 0;
        loop {
            let r = match tokio::time::timeout_at(deadline, request(socket, req)).await {
                Ok(r) => r,
                Err(_) => Err(ClientError::Other(format!(
                    "the service did not answer on {} within {}s",
                    socket.display(),
                    TIMEOUT.as_secs()
                ))),
            };
            match r {
                Ok((_, Some(wait), _))
                    if tries < RETRIES && tokio::time::Instant::now() + wait < deadline =>
                {
                    tries += 1;
                    tokio::time::sleep(wait).await;
                }
                r => break r.map(|(code, _, body)| (code, body)),
            }
        }
    })?;
    if !code.is_success() {
        let why = match code {
            StatusCode::FORBIDDEN => Refusal::Forbidden,
            StatusCode::UNPROCESSABLE_ENTITY => Refusal::BrokenConfig,
            _ => Refusal::Other,
        };
        return Err(ClientError::Refused(why, error_text(&body)));
    }
    serde_json::from_slice(&body).map_err(|e| ClientError::Other(format!("malformed answer: {e}")))
}

/// The `error` of an answer's JSON body, or the body.
fn error_text(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Error {
        error: String,
    }
    serde_json::from_slice::<Error>(body)
        .map_or_else(|_| String::from_utf8_lossy(body).into_owned(), |e| e.error)
}

/// The answer's code, how long to wait before asking again (a 503 with
/// `Retry-After`), and its body.
async fn request(
    socket: &Path,
    req: &Request,
) -> Result<(StatusCode, Option<Duration>, Bytes), ClientError> {
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied => {
                ClientError::PermissionDenied(socket.to_path_buf())
            }
            std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
                ClientError::NotRunning(e)
            }
            _ => ClientError::Other(format!("{}: {e}", socket.display())),
        })?;
    let other =
        |e: &dyn std::fmt::Display| ClientError::Other(format!("{}: {e}", socket.display()));
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| other(&e))?;
    let driver = tokio::spawn(conn);
    let http = hyper::Request::builder()
        .method(req.method())
        .uri(req.path())
        .header(hyper::header::HOST, "localhost")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(req.body().unwrap_or_default())))
        .map_err(|e| other(&e))?;
    let res = sender.send_request(http).await.map_err(|e| other(&e))?;
    let code = res.status();
    let retry = (code == StatusCode::SERVICE_UNAVAILABLE)
        .then(|| res.headers().get(hyper::header::RETRY_AFTER))
        .flatten()
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .map(|s| Duration::from_secs(s.clamp(1, 5)));
    let body = Limited::new(res.into_body(), MAX_ANSWER)
        .collect()
        .await
        .map_err(|e| other(&e))?
        .to_bytes();
    driver.abort();
    Ok((code, retry, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_encode_what_they_carry() {
        let f = Filter {
            node: Some("a b&c=d/é".into()),
            open: true,
            since: Some(5),
            until: Some(9),
            kind: Some(sentinel_core::tracker::IncidentKind::KubeletDown),
            verdict: Some(sentinel_core::tracker::Verdict::StartupRace),
            cause: Some(sentinel_core::signals::Cause::Auth),
            host: Some("h 1".into()),
            endpoint: Some("[fd00::1]:6443".into()),
            resolved: false,
            limit: Some(5),
        };
        let p = Request::Incidents(f.clone()).path();
        let q = p.split_once('?').unwrap().1;
        assert_eq!(serde_urlencoded::from_str::<Filter>(q).unwrap(), f);
        assert_eq!(
            Request::Incident("../x y".into()).path(),
            "/incidents/..%2Fx%20y"
        );
    }
}
