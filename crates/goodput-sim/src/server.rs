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
/// it, 408 and the connection closed; past [`MAX_BODY`], 413.
async fn body_within(req: axum::extract::Request, next: axum::middleware::Next, limit: Duration) -> Response {
    use axum::response::IntoResponse;
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(limit, axum::body::to_bytes(body, MAX_BODY)).await {
        Ok(Ok(bytes)) => next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await,
        Ok(Err(_)) => (
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONNECTION, "close")],
            format!("the request body is larger than {} MiB, or was cut short", MAX_BODY / (1024 * 1024)),
        )
            .into_response(),
        Err(_) => (
            axum::http::StatusCode::REQUEST_TIMEOUT,
            [(header::CONNECTION, "close")],
            format!("the request body did not arrive within {} s", limit.as_secs_f64()),
        )
            .into_response(),
    }
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
