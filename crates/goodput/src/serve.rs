//! `goodput serve`: the simulated OpenAI-compatible server on a socket — the
//! engine model in real time (the default), or the fixed-timing profile.

use crate::cli::{FaultArgs, ProfileArg, ProgressArg, ServeArgs};
use crate::progress::ServeStatus;
use anyhow::{anyhow, bail, Context, Result};
use goodput_sim::engine::EngineConfig;
use goodput_sim::engine_server::{EngineServer, EngineServerConfig};
use goodput_sim::faults::FaultConfig;
use goodput_sim::fixed::{FixedProfile, FixedServer};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub fn faults(f: &FaultArgs) -> FaultConfig {
    FaultConfig {
        error_rate: f.fault_error_rate,
        stream_error_rate: f.fault_stream_error_rate,
        disconnect_rate: f.fault_disconnect_rate,
        stall_rate: f.fault_stall_rate,
        stall: f.fault_stall,
        hostile: f.fault.clone(),
        trickle_gap: f.fault_trickle_gap,
        seed: f.fault_seed,
    }
}

/// Starts the engine server's driver on the current runtime, serving under
/// the `served` names (the engine's model name when none).
pub fn engine_server(
    cfg: EngineConfig,
    served: &[String],
    speed: f64,
    default_max_tokens: u32,
    faults: FaultConfig,
) -> Result<Arc<EngineServer>> {
    let mut c = EngineServerConfig::new(cfg);
    if let Some((first, more)) = served.split_first() {
        c.model_name = first.clone();
        c.more_model_names = more.to_vec();
    }
    c.speed = speed;
    c.default_max_tokens = default_max_tokens;
    c.faults = faults;
    Ok(EngineServer::start(c)?)
}

/// What `goodput serve` serves: the engine behind axum, or the fixed
/// profile on its own HTTP server.
pub enum Served {
    Engine(axum::Router),
    Fixed(Arc<FixedServer>),
}

impl Served {
    /// Serves on `listener` until `shutdown` resolves.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        match self {
            Served::Engine(app) => goodput_sim::server::serve(listener, app, shutdown).await,
            Served::Fixed(server) => goodput_sim::fixed::serve(listener, server, shutdown).await,
        }
    }
}

/// A live status line's source.
type StatusFn = Box<dyn Fn() -> ServeStatus + Send>;

pub async fn serve(a: ServeArgs) -> Result<ExitCode> {
    let served = crate::common::names_of("--served-model-name", a.served_model_name.as_deref())?;
    let (app, what, status) = match a.profile {
        ProfileArg::Engine => engine_app(&a, &served)?,
        ProfileArg::Fixed => fixed_app(&a, &served)?,
    };
    let listener = listen((a.host.as_str(), a.port))
        .await
        .with_context(|| format!("cannot bind {}:{} (is the port in use? pick another with --port)", a.host, a.port))?;
    let addr = listener.local_addr()?;
    eprintln!(
        "goodput serve · {what}\nlistening on http://{addr} (Ctrl-C to stop)\n\
         routes: /v1/chat/completions /v1/completions /v1/messages /api/chat /api/generate \
         /generate_stream /generate /completion · /v1/models /api/tags /info /health /metrics"
    );
    let stop = tokio_util::sync::CancellationToken::new();
    let view = show_status(&a, addr, status, &stop);
    let s = stop.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        s.cancel();
    });
    let res = app.serve(listener, async move { stop.cancelled().await }).await;
    if let Some(v) = view {
        let _ = v.join();
    }
    res.context("serving")?;
    Ok(ExitCode::SUCCESS)
}

/// The simulated engine's app, a line saying what it serves, and its live status.
fn engine_app(a: &ServeArgs, served: &[String]) -> Result<(Served, String, StatusFn)> {
    if a.write_log.is_some() {
        bail!("--write-log logs the fixed profile's writes: add --profile fixed");
    }
    let cfg = crate::estimate::engine_config(&a.model, &a.hw)?;
    let server = engine_server(cfg, served, a.speed, a.default_max_tokens, faults(&a.faults))?;
    let c = server.config();
    let what = format!(
        "engine: {} ({}) on {}× {} · KV cache {} tokens · max {} sequences · chat template {} · speed {}× · \
         serving '{}'",
        c.engine.model.name,
        c.engine.precision,
        c.engine.tp,
        c.engine.gpu.name,
        server.capacity().tokens(),
        server.max_num_seqs(),
        c.engine.chat_template,
        c.speed,
        c.names().collect::<Vec<_>>().join("', '")
    );
    let s = server.clone();
    let status = Box::new(move || {
        let st = s.stats();
        ServeStatus {
            lines: vec![
                format!("running {} · waiting {}", st.running, st.waiting),
                format!(
                    "{} finished · {} aborted · {} preemptions",
                    st.requests_finished, st.requests_aborted, st.preemptions
                ),
                format!(
                    "{} prompt and {} generated tokens · prefix cache {}",
                    st.prompt_tokens,
                    st.generation_tokens,
                    st.prefix_cache_hit_rate().map(|r| format!("{:.1}% hit", r * 100.0)).unwrap_or("-".into())
                ),
            ],
            tokens_total: st.generation_tokens,
            kv: Some(st.kv_usage),
        }
    });
    Ok((Served::Engine(goodput_sim::engine_server::app(server)), what, status))
}

/// The fixed profile's app, a line saying what it serves, and its live status.
fn fixed_app(a: &ServeArgs, served: &[String]) -> Result<(Served, String, StatusFn)> {
    // The fixed profile answers to any name; it lists the first.
    let name = served.first().cloned().unwrap_or_else(|| "goodput-fixed".into());
    let profile = FixedProfile {
        model: name.clone(),
        ttft: a.ttft,
        itl: a.itl,
        tokens_per_chunk: a.tokens_per_chunk,
        default_max_tokens: a.default_max_tokens,
        slow_every: a.slow_every.zip(a.slow_ttft),
        faults: faults(&a.faults),
    };
    profile.validate().map_err(|e| anyhow!(e))?;
    let server = match &a.write_log {
        None => FixedServer::new(profile),
        Some(path) => FixedServer::logging_writes(profile, path)
            .with_context(|| format!("cannot write --write-log {}", path.display()))?,
    };
    let s = server.clone();
    let status = Box::new(move || ServeStatus {
        lines: vec![format!("{} requests received", s.counters.requests.load(std::sync::atomic::Ordering::Relaxed))],
        tokens_total: 0,
        kv: None,
    });
    let mut what = format!(
        "fixed timings: TTFT {}, a chunk of {} tokens every {} · serving '{name}'",
        humantime::format_duration(a.ttft),
        a.tokens_per_chunk,
        humantime::format_duration(a.itl)
    );
    for (case, rate) in &a.faults.fault {
        what.push_str(&format!(" · --fault {case}:{rate}"));
    }
    Ok((Served::Fixed(server), what, status))
}

/// The live status: a full-screen view on a terminal, else a line every
/// 10 s while it changes; `Some` holds the view to wait for at the end.
fn show_status(
    a: &ServeArgs,
    addr: std::net::SocketAddr,
    status: StatusFn,
    stop: &tokio_util::sync::CancellationToken,
) -> Option<std::thread::JoinHandle<()>> {
    let tui = match a.progress {
        ProgressArg::Tui => true,
        ProgressArg::Auto => !a.quiet && crate::progress::on_terminal(),
        _ => false,
    };
    let mut view = None;
    if tui {
        view = crate::progress::serve_view(format!(" goodput serve · http://{addr} "), status, stop.clone());
    } else if !a.quiet && a.progress != ProgressArg::None {
        tokio::spawn(async move {
            let start = tokio::time::Instant::now();
            let mut last = String::new();
            let mut tick = tokio::time::interval_at(start + Duration::from_secs(10), Duration::from_secs(10));
            loop {
                tick.tick().await;
                let line = status().lines.join(" · ");
                // Quiet while nothing changes.
                if line != last {
                    eprintln!("[{:>7.0}s] {line}", start.elapsed().as_secs_f64());
                    last = line;
                }
            }
        });
    }
    view
}

/// How many connections may wait to be accepted (the kernel caps it at
/// `net.core.somaxconn`). A closed loop of 1,000 users connects all at once;
/// `TcpListener::bind`'s queue of 128 overflowed on a fresh server
/// (`ListenOverflows` 482–613 for 1,000 connects), and each dropped SYN came
/// back a second later: TTFB p90 over 1 s rather than 50 ms.
const LISTEN_BACKLOG: u32 = 8192;

/// A listening socket on `addr` with a deep accept queue (see
/// [`LISTEN_BACKLOG`]), the first of its addresses that binds.
pub async fn listen(addr: impl tokio::net::ToSocketAddrs) -> std::io::Result<tokio::net::TcpListener> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        let sock = if a.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
        // As std and tokio do: a restarted server can bind the port at once.
        #[cfg(unix)]
        sock.set_reuseaddr(true)?;
        match sock.bind(a).and_then(|()| sock.listen(LISTEN_BACKLOG)) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::new(std::io::ErrorKind::AddrNotAvailable, "no address to bind")))
}

#[cfg(test)]
mod tests {
    /// The accept queue is as deep as the kernel allows, up to LISTEN_BACKLOG.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_listener_queue_is_deep() {
        use std::os::fd::AsRawFd;
        let l = super::listen("127.0.0.1:0").await.unwrap();
        let somaxconn: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap().trim().parse().unwrap();
        // SAFETY: tcp_info is plain data, filled by the kernel up to `len`.
        let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        // SAFETY: a valid socket and a buffer of `len` bytes.
        let r = unsafe {
            libc::getsockopt(
                l.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                (&mut info as *mut libc::tcp_info).cast(),
                &mut len,
            )
        };
        assert_eq!(r, 0);
        // For a listening socket the kernel reports its queue limit here.
        assert_eq!(info.tcpi_sacked, somaxconn.min(super::LISTEN_BACKLOG));
    }
}
