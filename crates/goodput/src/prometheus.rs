//! `--prometheus-listen`: goodput's own live client-side metrics served in
//! Prometheus text while a run goes.

use anyhow::{Context, Result};
use std::sync::Arc;

/// The most connections `--prometheus-listen` keeps open at once: a
/// scraper needs one or two. Without a cap, clients that opened connections
/// and held them (a slowloris, a runaway scraper) took the process's file
/// descriptors from the run's own connections and outputs.
const MAX_SCRAPE_CONNECTIONS: usize = 32;

/// How long a scraper may take to send its request head.
const SCRAPE_HEAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves `live` as Prometheus text at `addr` (`/metrics`) in the background,
/// within [`MAX_SCRAPE_CONNECTIONS`] and [`SCRAPE_HEAD_TIMEOUT`].
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
    let limits = goodput_sim::connections::ConnectionLimits {
        head_timeout: SCRAPE_HEAD_TIMEOUT,
        max_connections: MAX_SCRAPE_CONNECTIONS,
        log: None,
    };
    tokio::spawn(goodput_sim::server::serve_limited(listener, app, limits, std::future::pending()));
    Ok(())
}
