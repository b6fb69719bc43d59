//! `--prometheus-listen`: goodput's own live client-side metrics served in
//! Prometheus text while a run goes.

use anyhow::{Context, Result};
use std::sync::Arc;

/// Serves `live` as Prometheus text at `addr` (`/metrics`) in the background.
pub async fn serve_live(
    addr: std::net::SocketAddr,
    live: Arc<goodput_core::prometheus::live::LiveMetrics>,
) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot bind --prometheus-listen {addr} (is the port in use?)"))?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let live = live.clone();
            async move { ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")], live.render()) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(())
}
