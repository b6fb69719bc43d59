//! Serving an axum router (the engine profile's) on a socket: hyper's HTTP/1
//! on each connection within the cap and the head-read timeout of
//! [`ConnectionLimits`], TCP_NODELAY on every connection (SSE writes are
//! small and must not wait for Nagle), a `Server` header, and a graceful
//! shutdown. The fixed profile has a server of its own,
//! [`crate::fixed::serve`].
//!
//! Not `axum::serve`: it gives a connection no time limit for its request
//! head (hyper has one, but only with a timer, which axum does not set),
//! takes connections until the process runs out of descriptors, and then
//! logs its failing `accept` nowhere.

use crate::connections::{serve_connections, ConnectionLimits};
use axum::http::{header, HeaderValue};
use axum::response::Response;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit};

/// Adds `Server: goodput-sim` to every response of `router`.
pub fn with_server_header(router: Router) -> Router {
    router.layer(axum::middleware::map_response(add_server_header))
}

async fn add_server_header(mut r: Response) -> Response {
    r.headers_mut().insert(header::SERVER, HeaderValue::from_static("goodput-sim"));
    r
}

/// Serves `app` on `listener` until `shutdown` resolves, with the default
/// [`ConnectionLimits`].
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_limited(listener, app, ConnectionLimits::default(), shutdown).await
}

/// Serves `app` on `listener` within `limits` until `shutdown` resolves;
/// then stops accepting, closes idle connections, and gives responses in
/// flight 10 s to finish (`connections::serve_connections`).
pub async fn serve_limited(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let within = limits.head_timeout;
    let app = app.layer(axum::middleware::from_fn(move |req, next| body_within(req, next, within)));
    serve_connections(listener, limits, shutdown, |sock, permit, head_timeout, stop| {
        connection(sock, permit, app.clone(), head_timeout, stop)
    })
    .await
}

/// The most a request body may hold, on both simulated servers.
pub(crate) const MAX_BODY: usize = 64 * 1024 * 1024;

/// Reads a request's body whole within `limit` (the head's time, counted
/// from the head's end) before the route sees it: one sent a byte at a time
/// had held its connection for ever, as a late head no longer does. Past
/// it, 408 and the connection closed; past [`MAX_BODY`] (by its
/// Content-Length, or as it arrives), 413; a body that cannot be read
/// (malformed chunks), 400. Each is a JSON error in the shape of the route
/// asked for, as the route's own errors are (and the fixed profile's, and
/// vLLM's): they had been plain text, and a malformed body a 413.
async fn body_within(req: axum::extract::Request, next: axum::middleware::Next, limit: Duration) -> Response {
    use axum::http::StatusCode;
    let (parts, body) = req.into_parts();
    let refuse = |status: StatusCode, message: String| refused(parts.uri.path(), status, &message);
    let too_large = || format!("the request body is larger than {} MiB", MAX_BODY / (1024 * 1024));
    // A Content-Length past the limit is refused before the body is waited
    // for, as the fixed profile refuses it.
    if axum::body::HttpBody::size_hint(&body).lower() > MAX_BODY as u64 {
        return refuse(StatusCode::PAYLOAD_TOO_LARGE, too_large());
    }
    match tokio::time::timeout(limit, axum::body::to_bytes(body, MAX_BODY)).await {
        Ok(Ok(bytes)) => next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await,
        Ok(Err(e)) => match unreadable(&e) {
            Some(why) => refuse(
                StatusCode::BAD_REQUEST,
                format!(
                    "the request body cannot be read ({why}): send it with a Content-Length, or in well-formed chunks"
                ),
            ),
            None => refuse(StatusCode::PAYLOAD_TOO_LARGE, too_large()),
        },
        Err(_) => refuse(
            StatusCode::REQUEST_TIMEOUT,
            format!("the request body did not arrive within {} s", limit.as_secs_f64()),
        ),
    }
}

/// A request refused before its route saw it, the connection closed: the
/// JSON error of the route at `path` (Anthropic's, Ollama's, TGI's shape on
/// theirs), OpenAI's elsewhere.
/// They pass no route's layers, so they say `Server: goodput-sim` here.
fn refused(path: &str, status: axum::http::StatusCode, message: &str) -> Response {
    let mut r = path_error(path, status, message);
    let h = r.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("close"));
    h.insert(header::SERVER, HeaderValue::from_static("goodput-sim"));
    r
}

/// A JSON error in the shape of the route at `path` (Anthropic's, Ollama's,
/// TGI's, TEI's on theirs), OpenAI's elsewhere.
pub(crate) fn path_error(path: &str, status: axum::http::StatusCode, message: &str) -> Response {
    use axum::response::IntoResponse;
    let code = status.as_u16();
    let body = match (crate::openai::Route::of_path(path), crate::openai::pooling::PoolRoute::of_path(path)) {
        (Some(route), _) => route.error_body(code, message),
        (None, Some(route)) => route.error_body(code, message),
        (None, None) => crate::openai::error_body(code, message),
    };
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Says what a 405 that a router answered with an empty body means, as a
/// JSON error naming the methods to use (the fixed profile's words):
/// axum's own had no body.
pub(crate) async fn json_method_not_allowed(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let path = req.uri().path().to_owned();
    let r = next.run(req).await;
    if r.status() != axum::http::StatusCode::METHOD_NOT_ALLOWED || r.headers().contains_key(header::CONTENT_TYPE) {
        return r;
    }
    // Layered inside each route, this sees the 405 before axum adds its
    // Allow header: the routes' methods are known here.
    let posted = crate::openai::Route::of_path(&path).is_some()
        || crate::openai::pooling::PoolRoute::of_path(&path).is_some()
        || path == "/reset_prefix_cache";
    let allow = r.headers().get(header::ALLOW).cloned().unwrap_or(HeaderValue::from_static(if posted {
        "POST"
    } else {
        "GET,HEAD"
    }));
    let words = allow.to_str().unwrap_or("another method").to_owned();
    let mut out = path_error(&path, r.status(), &format!("method not allowed: use {words}"));
    out.headers_mut().insert(header::ALLOW, allow);
    out
}

/// Why hyper could not read a body (malformed chunks, or a body cut short),
/// in words; `None` where the body was refused for its length.
fn unreadable(e: &axum::Error) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(h) = s.downcast_ref::<hyper::Error>() {
            return Some(match std::error::Error::source(h) {
                Some(cause) => format!("{h}: {cause}"),
                None => h.to_string(),
            });
        }
        source = s.source();
    }
    None
}

/// One connection, holding its place under the cap (`_permit`) until it
/// ends; a shutdown lets its response in flight finish.
async fn connection(
    sock: TcpStream,
    _permit: OwnedSemaphorePermit,
    app: Router,
    head_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(head_timeout);
    let conn = http.serve_connection(TokioIo::new(sock), TowerToHyperService::new(app));
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = stop.wait_for(|s| *s) => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}
