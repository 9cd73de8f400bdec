//! The query server: axum on hyper, over the Unix socket (every route) and,
//! optionally, TCP (`/metrics` only).
//!
//! Any bytes a client sends get an answer or a closed connection, never a
//! panic or a stall of others: one task per connection (a panic ends that
//! connection only), at most [`MAX_CONNECTIONS`] at a time, headers within
//! [`HEADER_TIMEOUT`] and [`MAX_HEADER_BYTES`], the whole connection within
//! [`CONNECTION_TIMEOUT`]. The store is read on the blocking pool.

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
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::metrics;
use super::peer::{self, Peer};
use super::query::{Live, Request, Response, answer};
use crate::status::{DeliveryStats, StatusSnapshot};
use crate::store::{Channel, Filter, Store};
use crate::time::Micros;

pub const MAX_CONNECTIONS: usize = 128;
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// What the query server asks of the service.
#[derive(Debug)]
pub enum Command {
    /// Read the config file again and apply it; the answer says what
    /// happened, or why it was refused.
    Reload(oneshot::Sender<Result<ReloadOutcome, String>>),
    /// Acknowledge an open incident (the tracker holds open incidents).
    Ack(super::AckRequest, oneshot::Sender<Response>),
    /// Silences changed: the deliveries look at their outbox again.
    Wake,
}

/// A reload that was applied.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReloadOutcome {
    pub path: String,
    /// Changed keys that only a restart applies.
    pub restart_needed: Vec<String>,
    /// Open incidents announced because delivery became possible.
    pub announced: usize,
    /// Applied, but alerts cannot be delivered with it (why).
    #[serde(default)]
    pub delivery_problem: Option<String>,
}

/// Everything a handler reads.
pub struct ApiState {
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
        }
    }

    /// The author of a write by `peer`, or the 403 that refuses it.
    fn author(&self, peer: Peer, what: &str) -> Result<String, Box<HttpResponse>> {
        peer::authorize(peer, self.admin_group.as_deref(), what)
            .map_err(|why| Box::new(json(Response::error(403, &why))))
    }

    async fn answer(&self, req: Request) -> HttpResponse {
        let store = self.store.clone();
        let live = self.live();
        match tokio::task::spawn_blocking(move || answer(&store, Some(&live), &req)).await {
            Ok(r) => json(r),
            Err(e) => json(Response::error(500, &format!("the query failed: {e}"))),
        }
    }
}

fn json(r: Response) -> HttpResponse {
    (
        StatusCode::from_u16(r.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, "application/json")],
        r.body,
    )
        .into_response()
}

fn bad_request(message: &str) -> HttpResponse {
    json(Response::error(400, message))
}

type Shared = State<Arc<ApiState>>;

async fn incidents(State(st): Shared, q: Result<Query<Filter>, QueryRejection>) -> HttpResponse {
    match q {
        Ok(Query(f)) => st.answer(Request::Incidents(f)).await,
        Err(e) => bad_request(&e.body_text()),
    }
}

async fn incident(State(st): Shared, id: Result<UrlPath<String>, PathRejection>) -> HttpResponse {
    match id {
        Ok(UrlPath(id)) => st.answer(Request::Incident(id)).await,
        Err(e) => bad_request(&e.body_text()),
    }
}

async fn nodes(State(st): Shared) -> HttpResponse {
    st.answer(Request::Nodes).await
}

async fn status(State(st): Shared) -> HttpResponse {
    st.answer(Request::Status).await
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
        return json(Response::error(503, "the service is stopping"));
    }
    match rx.await {
        Ok(Ok(outcome)) => json(Response::json(200, &outcome)),
        Ok(Err(why)) => json(Response::error(422, &why)),
        Err(_) => json(Response::error(503, "the service is stopping")),
    }
}

async fn silences(State(st): Shared) -> HttpResponse {
    st.answer(Request::Silences).await
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
    let mut n: super::NewSilence = match body_json(&body) {
        Ok(n) => n,
        Err(r) => return *r,
    };
    // Whatever the body says (an older CLI sends its user name).
    n.by = by;
    let r = st.answer(Request::AddSilence(n)).await;
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
    let r = st.answer(Request::ExpireSilence { id, by }).await;
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
    let mut a: super::AckRequest = match body_json(&body) {
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
        return json(Response::error(503, "the service is stopping"));
    }
    match rx.await {
        Ok(r) => json(r),
        Err(_) => json(Response::error(503, "the service is stopping")),
    }
}

async fn not_found() -> HttpResponse {
    json(Response::error(404, "no such path"))
}

/// Every route, for the query socket.
pub fn socket_router(state: Arc<ApiState>) -> Router {
    Router::new()
        .route("/incidents", get(incidents))
        .route("/incidents/{id}", get(incident))
        .route("/nodes", get(nodes))
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
pub fn metrics_router(state: Arc<ApiState>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_page))
        .fallback(not_found)
        .with_state(state)
}

/// Something that accepts connections (a Unix or a TCP listener), and
/// says who connected.
pub trait Accept: Send + 'static {
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

/// Serves `app` on `listener` until `shutdown`; then gives the connections
/// in flight a moment to finish.
pub async fn serve<L: Accept>(mut listener: L, app: Router, shutdown: CancellationToken) {
    let limit = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let connections = TaskTracker::new();
    let mut backoff = Duration::from_millis(10);
    loop {
        let permit = tokio::select! {
            () = shutdown.cancelled() => break,
            p = limit.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
        };
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
        let app = app.clone();
        connections.spawn(async move {
            serve_connection(io, peer, app).await;
            drop(permit);
        });
    }
    connections.close();
    let _ = tokio::time::timeout(Duration::from_secs(2), connections.wait()).await;
}

async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    io: S,
    peer: Peer,
    app: Router,
) {
    use tower::ServiceExt as _;
    // Every request on the connection carries who opened it.
    let app = app.map_request(move |mut r: axum::http::Request<hyper::body::Incoming>| {
        r.extensions_mut().insert(peer);
        r
    });
    let service = hyper_util::service::TowerToHyperService::new(app);
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
pub fn bind_socket(path: &Path) -> std::io::Result<tokio::net::UnixListener> {
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
