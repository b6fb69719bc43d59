//! Serving an axum router (the engine profile's) on a socket: TCP_NODELAY on
//! every connection (SSE writes are small and must not wait for Nagle), a
//! `Server` header, and a graceful shutdown. The fixed profile has a server
//! of its own, [`crate::fixed::serve`].

use axum::http::{header, HeaderValue};
use axum::response::Response;
use axum::serve::ListenerExt;
use axum::Router;
use std::future::Future;
use tokio::net::TcpListener;

/// Adds `Server: goodput-sim` to every response of `router`.
pub fn with_server_header(router: Router) -> Router {
    router.layer(axum::middleware::map_response(add_server_header))
}

async fn add_server_header(mut r: Response) -> Response {
    r.headers_mut().insert(header::SERVER, HeaderValue::from_static("goodput-sim"));
    r
}

/// Serves `app` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}
