//! The CLI's side of the query socket: one HTTP/1.1 request over the Unix
//! socket (hyper), bounded in time and in the size of the answer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::Method;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

use super::query::Response;

/// Answers larger than this are refused (the whole history as JSON fits).
const MAX_ANSWER: usize = 256 << 20;
const TIMEOUT: Duration = Duration::from_secs(30);

/// Why a query could not be asked over the socket.
#[derive(Debug)]
pub enum ClientError {
    /// No socket, or nobody listening: the service is not running.
    NotRunning(std::io::Error),
    PermissionDenied(PathBuf),
    Other(String),
}

/// Asks the running service: `GET path`, or `POST` with a JSON body.
pub fn ask(
    socket: &Path,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<Response, ClientError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ClientError::Other(e.to_string()))?;
    rt.block_on(async {
        match tokio::time::timeout(TIMEOUT, request(socket, method, path, body)).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Other(format!(
                "the service did not answer on {} within {}s",
                socket.display(),
                TIMEOUT.as_secs()
            ))),
        }
    })
}

async fn request(
    socket: &Path,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<Response, ClientError> {
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
    let req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, "localhost")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| other(&e))?;
    let res = sender.send_request(req).await.map_err(|e| other(&e))?;
    let code = res.status().as_u16();
    let body = Limited::new(res.into_body(), MAX_ANSWER)
        .collect()
        .await
        .map_err(|e| other(&e))?
        .to_bytes();
    driver.abort();
    Ok(Response {
        code,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}
