//! The query server: axum on hyper, over the Unix socket (every route) and,
//! optionally, TCP (`/metrics` only).
//!
//! Any bytes a client sends get an answer or a closed connection, never a
//! panic or a stall of others: one task per connection (a panic ends that
//! connection only); the request head within [`HEADER_TIMEOUT`] and
//! [`MAX_HEADER_BYTES`], its body within [`BODY_TIMEOUT`] and
//! [`MAX_BODY_BYTES`], the whole connection within [`CONNECTION_TIMEOUT`].
//!
//! Architecture invariant: a client that has not sent a whole request
//! holds nothing another client needs. Accepting never waits: a
//! connection still sending its request is only counted, at most
//! [`MAX_PENDING`] per listener, the oldest closed when a new one comes;
//! a slot to build the answer in is taken once the request (head and
//! body) is in, for the time the answer takes, and the built answer holds
//! its share of the bytes waiting for their clients until it is sent
//! ([`budget`]: lists in their own queue, small answers and root's never
//! behind others' bytes). Each listener has its own budgets, so scrapers
//! on TCP and people on the socket never queue behind each other. The
//! store is read on the blocking pool.
//!
//! Architecture invariant: this is the only place that knows HTTP status
//! codes and JSON bodies. The answers come typed from [`crate::query`] and
//! from ingest ([`Command`]); [`QueryError`] and [`AckError`] get their
//! codes here, and only here.

use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Extension, Path as UrlPath, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response as HttpResponse};
use axum::routing::{get, post};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::budget::{self, Budgets};
use super::metrics;
use super::peer::{self, Peer};
use crate::query::{self, AckRequest, Live, NewSilence, QueryError};
use crate::report::IncidentOut;
use crate::status::{AckError, Command, DeliveryStats, StatusSnapshot};
use crate::store::{Channel, Filter, Store};
use sentinel_core::time::Micros;

/// Connections per listener still sending their request.
pub(crate) const MAX_PENDING: usize = 512;
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(3);
pub(crate) const BODY_TIMEOUT: Duration = Duration::from_secs(5);
pub(crate) const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);
pub(crate) const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Request bodies are small JSON (a silence, an acknowledgement).
pub(crate) const MAX_BODY_BYTES: usize = 64 * 1024;

/// Everything a handler reads.
pub(crate) struct ApiState {
    pub store: Store,
    pub status: watch::Receiver<StatusSnapshot>,
    pub deliveries: Vec<(Channel, watch::Receiver<DeliveryStats>)>,
    pub commands: mpsc::Sender<Command>,
    pub now: Box<dyn Fn() -> Micros + Send + Sync>,
    /// `[api] admin_group`: besides root, who may change what is
    /// delivered (see [`peer`]).
    pub admin_group: Option<String>,
}

impl ApiState {
    fn live(&self) -> Live {
        let now = (self.now)();
        Live {
            status: self.status.borrow().clone(),
            deliveries: self
                .deliveries
                .iter()
                .map(|(c, rx)| (*c, rx.borrow().clone()))
                .collect(),
            now,
            silences_active: self
                .store
                .silences()
                .map_or(0, |v| v.iter().filter(|s| s.active(now)).count() as u64),
            store_damaged: self.store.damaged(),
        }
    }

    /// The author of a write by `peer`, or the 403 that refuses it.
    fn author(&self, peer: Peer, what: &str) -> Result<String, Box<HttpResponse>> {
        peer::authorize(peer, self.admin_group.as_deref(), what)
            .map_err(|why| Box::new(error(StatusCode::FORBIDDEN, &why)))
    }

    /// Answers with `ask` on the blocking pool (it reads the store): `ok`
    /// and the answer as JSON, or the error's status code and its words.
    async fn answer<T, F>(&self, ok: StatusCode, ask: F) -> HttpResponse
    where
        T: Serialize + Send + 'static,
        F: FnOnce(&Store, &Live) -> Result<T, QueryError> + Send + 'static,
    {
        let store = self.store.clone();
        let live = self.live();
        match tokio::task::spawn_blocking(move || ask(&store, &live)).await {
            Ok(Ok(answer)) => json(ok, &answer),
            Ok(Err(e)) => error(query_code(&e), &e.to_string()),
            Err(e) => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("the query failed: {e}"),
            ),
        }
    }
}

/// The status code of a query that has no answer.
fn query_code(e: &QueryError) -> StatusCode {
    match e {
        QueryError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        QueryError::InvalidSilence(_) => StatusCode::BAD_REQUEST,
        QueryError::NoIncident(_)
        | QueryError::ShortPrefix(_)
        | QueryError::AmbiguousIncident(_)
        | QueryError::NoSilence(_) => StatusCode::NOT_FOUND,
        QueryError::IncidentResolved(_)
        | QueryError::TooManySilences(_)
        | QueryError::SilenceEnded(_)
        | QueryError::AmbiguousSilence(_) => StatusCode::CONFLICT,
    }
}

/// The status code of an acknowledgement the service refused.
fn ack_code(e: &AckError) -> StatusCode {
    match e {
        AckError::NotOpen(_) => StatusCode::NOT_FOUND,
        AckError::Resolved(_) | AckError::Ambiguous(_) => StatusCode::CONFLICT,
    }
}

/// An answer: pretty JSON and a newline.
fn json(code: StatusCode, v: &impl Serialize) -> HttpResponse {
    let body = serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A refusal: `{"error": "…"}`.
fn error(code: StatusCode, message: &str) -> HttpResponse {
    json(code, &serde_json::json!({ "error": message }))
}

fn bad_request(message: &str) -> HttpResponse {
    error(StatusCode::BAD_REQUEST, message)
}

/// An answer past [`budget::MAX_UNSENT_BYTES`]: refused at once, so a
/// crowd that does not read holds no more.
fn busy(full: &budget::Full) -> HttpResponse {
    let mut r = error(
        StatusCode::SERVICE_UNAVAILABLE,
        &format!(
            "this answer is large, and {} MiB of answers wait for other clients to read \
             them (at most {} MiB at a time); try again, or ask for less (--limit)",
            full.held >> 20,
            budget::MAX_UNSENT_BYTES >> 20
        ),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    r
}

/// A list that waited its turn too long behind others being built.
fn lists_busy() -> HttpResponse {
    let mut r = error(
        StatusCode::SERVICE_UNAVAILABLE,
        &format!(
            "{} lists are being made for other clients, and this one waited {} s for its \
             turn; try again, or ask for less (--limit)",
            budget::MAX_BULK_IN_FLIGHT,
            budget::BULK_WAIT.as_secs()
        ),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    r
}

fn stopping() -> HttpResponse {
    error(StatusCode::SERVICE_UNAVAILABLE, "the service is stopping")
}

type Shared = State<Arc<ApiState>>;

async fn incidents(State(st): Shared, q: Result<Query<Filter>, QueryRejection>) -> HttpResponse {
    match q {
        Ok(Query(f)) => {
            st.answer(StatusCode::OK, move |s, l| query::incidents(s, Some(l), &f))
                .await
        }
        Err(e) => bad_request(&e.body_text()),
    }
}

async fn incident(State(st): Shared, id: Result<UrlPath<String>, PathRejection>) -> HttpResponse {
    match id {
        Ok(UrlPath(id)) => {
            st.answer(StatusCode::OK, move |s, l| query::incident(s, Some(l), &id))
                .await
        }
        Err(e) => bad_request(&e.body_text()),
    }
}

async fn starts(
    State(st): Shared,
    q: Result<Query<crate::store::StartFilter>, QueryRejection>,
) -> HttpResponse {
    match q {
        Ok(Query(f)) => {
            st.answer(StatusCode::OK, move |s, l| query::starts(s, Some(l), &f))
                .await
        }
        Err(e) => bad_request(&e.body_text()),
    }
}

async fn nodes(State(st): Shared) -> HttpResponse {
    st.answer(StatusCode::OK, |s, l| query::nodes(s, Some(l)))
        .await
}

async fn status(State(st): Shared) -> HttpResponse {
    st.answer(StatusCode::OK, |s, l| query::status(s, Some(l)))
        .await
}

/// `OpenMetrics` when the scraper asks for it (Prometheus does), the classic
/// text format otherwise.
async fn metrics_page(State(st): Shared, headers: axum::http::HeaderMap) -> HttpResponse {
    let open = headers.get_all(header::ACCEPT).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.contains("application/openmetrics-text"))
    });
    if open {
        (
            [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
            metrics::render(st.live()),
        )
            .into_response()
    } else {
        (
            [(header::CONTENT_TYPE, metrics::CLASSIC_CONTENT_TYPE)],
            metrics::render_classic(st.live()),
        )
            .into_response()
    }
}

async fn reload(State(st): Shared, Extension(peer): Extension<Peer>) -> HttpResponse {
    if let Err(r) = st.author(peer, "reloads") {
        return *r;
    }
    let (tx, rx) = oneshot::channel();
    if st.commands.send(Command::Reload(tx)).await.is_err() {
        return stopping();
    }
    match rx.await {
        Ok(Ok(outcome)) => json(StatusCode::OK, &outcome),
        Ok(Err(why)) => error(StatusCode::UNPROCESSABLE_ENTITY, &why),
        Err(_) => stopping(),
    }
}

async fn silences(State(st): Shared) -> HttpResponse {
    st.answer(StatusCode::OK, |s, l| query::silences::list(s, Some(l)))
        .await
}

/// A JSON body, bounded (the server's request limit applies too).
fn body_json<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, Box<HttpResponse>> {
    serde_json::from_slice(body)
        .map_err(|e| Box::new(bad_request(&format!("the request body: {e}"))))
}

async fn add_silence(
    State(st): Shared,
    Extension(peer): Extension<Peer>,
    body: Bytes,
) -> HttpResponse {
    let by = match st.author(peer, "silences") {
        Ok(by) => by,
        Err(r) => return *r,
    };
    let mut n: NewSilence = match body_json(&body) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    // Whatever the body says (an older CLI sends its user name).
    n.by = by;
    let r = st
        .answer(StatusCode::CREATED, move |s, l| {
            query::silences::add(s, Some(l), &n)
        })
        .await;
    let _ = st.commands.send(Command::Wake).await;
    r
}

async fn expire_silence(
    State(st): Shared,
    Extension(peer): Extension<Peer>,
    id: Result<UrlPath<String>, PathRejection>,
) -> HttpResponse {
    let by = match st.author(peer, "silences") {
        Ok(by) => by,
        Err(r) => return *r,
    };
    let id = match id {
        Ok(UrlPath(id)) => id,
        Err(e) => return bad_request(&e.body_text()),
    };
    let r = st
        .answer(StatusCode::OK, move |s, l| {
            query::silences::expire(s, Some(l), &id, &by)
        })
        .await;
    let _ = st.commands.send(Command::Wake).await;
    r
}

async fn ack(
    State(st): Shared,
    Extension(peer): Extension<Peer>,
    id: Result<UrlPath<String>, PathRejection>,
    body: Bytes,
) -> HttpResponse {
    let by = match st.author(peer, "acknowledgements") {
        Ok(by) => by,
        Err(r) => return *r,
    };
    let id = match id {
        Ok(UrlPath(id)) => id,
        Err(e) => return bad_request(&e.body_text()),
    };
    let mut a: AckRequest = match body_json(&body) {
        Ok(a) => a,
        Err(r) => return *r,
    };
    a.id = id;
    a.by = by;
    if a.comment.len() > 1000 {
        return bad_request("an acknowledgement's comment: at most 1000 bytes");
    }
    let (tx, rx) = oneshot::channel();
    if st.commands.send(Command::Ack(a, tx)).await.is_err() {
        return stopping();
    }
    match rx.await {
        Ok(Ok(done)) => json(
            StatusCode::OK,
            &IncidentOut::new(&done.incident, &done.settings),
        ),
        Ok(Err(e)) => error(ack_code(&e), &e.to_string()),
        Err(_) => stopping(),
    }
}

async fn not_found() -> HttpResponse {
    error(StatusCode::NOT_FOUND, "no such path")
}

/// Every route, for the query socket.
pub(crate) fn socket_router(state: Arc<ApiState>) -> Router {
    Router::new()
        .route("/incidents", get(incidents))
        .route("/incidents/{id}", get(incident))
        .route("/nodes", get(nodes))
        .route("/starts", get(starts))
        .route("/status", get(status))
        .route("/metrics", get(metrics_page))
        .route("/reload", post(reload))
        .route("/silences", get(silences).post(add_silence))
        .route("/silences/{id}/expire", post(expire_silence))
        .route("/incidents/{id}/ack", post(ack))
        .fallback(not_found)
        .with_state(state)
}

/// `/metrics` only, for TCP: no history on the network.
pub(crate) fn metrics_router(state: Arc<ApiState>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_page))
        .fallback(not_found)
        .with_state(state)
}

/// Something that accepts connections (a Unix or a TCP listener), and
/// says who connected.
pub(crate) trait Accept: Send + 'static {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn accept(&mut self) -> impl Future<Output = std::io::Result<(Self::Io, Peer)>> + Send;
}

impl Accept for tokio::net::UnixListener {
    type Io = tokio::net::UnixStream;
    async fn accept(&mut self) -> std::io::Result<(Self::Io, Peer)> {
        let (s, _) = tokio::net::UnixListener::accept(self).await?;
        // SO_PEERCRED: the credentials the peer had when it connected,
        // from the kernel, whatever it sends later.
        let peer = s.peer_cred().map_or(Peer::Unknown, |c| Peer::Local {
            uid: c.uid(),
            gid: c.gid(),
        });
        Ok((s, peer))
    }
}

impl Accept for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;
    async fn accept(&mut self) -> std::io::Result<(Self::Io, Peer)> {
        let (s, _) = tokio::net::TcpListener::accept(self).await?;
        Ok((s, Peer::Unknown))
    }
}

/// The connections of one listener that have not sent a whole request
/// yet, oldest first: the one to close when there are too many.
#[derive(Default)]
struct Pending {
    queue: std::sync::Mutex<std::collections::VecDeque<Arc<Waiting>>>,
}

/// One connection still to send its request.
struct Waiting {
    /// Its request is in (or it ended): no longer anyone's to close.
    done: std::sync::atomic::AtomicBool,
    close: CancellationToken,
}

impl Pending {
    /// Counts a new connection; closes the oldest still waiting when
    /// [`MAX_PENDING`] are.
    fn admit(&self) -> Arc<Waiting> {
        use std::sync::atomic::Ordering;
        let w = Arc::new(Waiting {
            done: std::sync::atomic::AtomicBool::new(false),
            close: CancellationToken::new(),
        });
        let mut q = self
            .queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        q.retain(|w| !w.done.load(Ordering::Relaxed));
        while q.len() >= MAX_PENDING {
            if let Some(oldest) = q.pop_front() {
                oldest.close.cancel();
            }
        }
        q.push_back(w.clone());
        w
    }
}

/// Lets this process have as many descriptors as its hard limit allows
/// (systemd's default soft limit is 1024): held connections must not
/// starve the journal, the store or the next client of descriptors.
fn raise_fd_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let l = getrlimit(Resource::Nofile);
    if l.current < l.maximum {
        let _ = setrlimit(
            Resource::Nofile,
            rustix::process::Rlimit {
                current: l.maximum,
                maximum: l.maximum,
            },
        );
    }
}

/// Serves `app` on `listener` until `shutdown`; then gives the connections
/// in flight a moment to finish.
pub(crate) async fn serve<L: Accept>(mut listener: L, app: Router, shutdown: CancellationToken) {
    raise_fd_limit();
    let pending = Arc::new(Pending::default());
    let budgets = Arc::new(Budgets::default());
    let connections = TaskTracker::new();
    let mut backoff = Duration::from_millis(10);
    loop {
        let (io, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            r = listener.accept() => match r {
                Ok(conn) => { backoff = Duration::from_millis(10); conn }
                Err(e) => {
                    // Out of file descriptors and the like: wait, then go on.
                    tracing::warn!("query server: accepting a connection failed: {e}");
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
        };
        let waiting = pending.admit();
        let app = app.clone();
        let budgets = budgets.clone();
        connections.spawn(async move {
            let close = waiting.close.clone();
            tokio::select! {
                () = serve_connection(io, peer, app, waiting.clone(), budgets) => {}
                // Too many waiting for their request: this was the oldest.
                () = close.cancelled() => {}
            }
            waiting
                .done
                .store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }
    connections.close();
    let _ = tokio::time::timeout(Duration::from_secs(2), connections.wait()).await;
}

async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    io: S,
    peer: Peer,
    app: Router,
    waiting: Arc<Waiting>,
    budgets: Arc<Budgets>,
) {
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;
    // hyper calls this once the request head is in (within HEADER_TIMEOUT).
    let service = tower::service_fn(move |r: axum::http::Request<hyper::body::Incoming>| {
        let (app, budgets, waiting) = (app.clone(), budgets.clone(), waiting.clone());
        async move {
            let (mut parts, body) = r.into_parts();
            // Every request carries who opened the connection.
            parts.extensions.insert(peer);
            let limited = http_body_util::Limited::new(body, MAX_BODY_BYTES);
            let body = match tokio::time::timeout(BODY_TIMEOUT, limited.collect()).await {
                Ok(Ok(b)) => b.to_bytes(),
                Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
                    return Ok::<_, std::convert::Infallible>(error(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        &format!("a request body is at most {MAX_BODY_BYTES} bytes"),
                    ));
                }
                Ok(Err(e)) => return Ok(bad_request(&format!("the request body: {e}"))),
                Err(_) => {
                    return Ok(error(
                        StatusCode::REQUEST_TIMEOUT,
                        &format!(
                            "the request body did not arrive within {}s",
                            BODY_TIMEOUT.as_secs()
                        ),
                    ));
                }
            };
            // The whole request is in: nobody closes this one to make room,
            // and now it may wait its turn.
            waiting
                .done
                .store(true, std::sync::atomic::Ordering::Relaxed);
            let slot = match budgets
                .slot(peer, parts.method.as_str(), parts.uri.path())
                .await
            {
                Ok(slot) => slot,
                Err(budget::NoSlot::Closing) => return Ok(stopping()),
                Err(budget::NoSlot::Busy) => return Ok(lists_busy()),
            };
            let r = axum::http::Request::from_parts(parts, axum::body::Body::from(body));
            let Ok(answer) = app.oneshot(r).await;
            drop(slot);
            // Every answer is in memory already (a JSON or metrics text).
            let (parts, body) = answer.into_parts();
            let Ok(bytes) = body
                .collect()
                .await
                .map(http_body_util::Collected::to_bytes)
            else {
                return Ok(error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the answer failed",
                ));
            };
            Ok(match budgets.hold(peer, bytes) {
                Ok(body) => HttpResponse::from_parts(parts, body),
                Err(full) => busy(&full),
            })
        }
    });
    let service = hyper_util::service::TowerToHyperService::new(service);
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(MAX_HEADER_BYTES)
        .keep_alive(false)
        .serve_connection(TokioIo::new(io), service);
    let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
}

/// Binds the query socket: mode 0660 and, where the group exists, group
/// `systemd-journal`: whoever may read the kubelet's journal may read what
/// was derived from it. A socket left by a crash is replaced; any other
/// file at the path is not touched.
pub(crate) fn bind_socket(path: &Path) -> std::io::Result<tokio::net::UnixListener> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    format!("{} is answered by another process", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
        }
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists and is not a socket; it is left alone",
                    path.display()
                ),
            ));
        }
        Err(_) => {}
    }
    let listener = std::os::unix::net::UnixListener::bind(path)?;
    if let Some(gid) = peer::group_id("systemd-journal") {
        // Not in the group (run by hand, not as root): only we may query.
        if let Err(e) = std::os::unix::fs::chown(path, None, Some(gid)) {
            tracing::warn!(
                "query socket {}: cannot give it group systemd-journal ({e}); only this user and root can query",
                path.display()
            );
        }
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))?;
    listener.set_nonblocking(true)?;
    tokio::net::UnixListener::from_std(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_errors_keep_their_status_codes() {
        let code = |e: QueryError| query_code(&e).as_u16();
        assert_eq!(code(QueryError::InvalidSilence("x".into())), 400);
        assert_eq!(code(QueryError::NoIncident("x".into())), 404);
        assert_eq!(code(QueryError::ShortPrefix("x".into())), 404);
        assert_eq!(code(QueryError::AmbiguousIncident("x".into())), 404);
        assert_eq!(code(QueryError::NoSilence("x".into())), 404);
        assert_eq!(code(QueryError::IncidentResolved("x".into())), 409);
        assert_eq!(code(QueryError::TooManySilences(1000)), 409);
        assert_eq!(code(QueryError::SilenceEnded("x".into())), 409);
        assert_eq!(code(QueryError::AmbiguousSilence("x".into())), 409);
        assert_eq!(ack_code(&AckError::NotOpen("x".into())).as_u16(), 404);
        assert_eq!(ack_code(&AckError::Resolved("x".into())).as_u16(), 409);
        assert_eq!(ack_code(&AckError::Ambiguous("x".into())).as_u16(), 409);
    }
}
