//! The simulated servers on a socket, for `goodput serve` and for the
//! embedded server `bench` starts when there is no `--url`: the fault
//! settings, the engine's driver, what is served, and a listener with a deep
//! accept queue.

use crate::cli::FaultArgs;
use anyhow::Result;
use goodput_sim::connections::ConnectionLimits;
use goodput_sim::engine::EngineConfig;
use goodput_sim::engine_server::{EngineServer, EngineServerConfig};
use goodput_sim::faults::FaultConfig;
use goodput_sim::fixed::FixedServer;
use std::sync::Arc;

pub fn faults(f: &FaultArgs) -> Result<FaultConfig> {
    let answers = match &f.answers {
        Some(p) => {
            let text = goodput_core::util::input::read_text(p, "--answers", goodput_core::util::input::DOCUMENT_CAP)?;
            goodput_core::util::input::check_parse(p, "--answers", &text)?;
            let mut a = goodput_sim::answers::Answers::from_jsonl(&text)
                .map_err(|e| anyhow::anyhow!("--answers {}: {e}", p.display()))?;
            a.wrong_rate = f.fault_wrong_rate;
            a.diverge_rate = f.fault_diverge_rate;
            a.seed = f.fault_seed;
            Some(Arc::new(a))
        }
        None => None,
    };
    Ok(FaultConfig {
        error_rate: f.fault_error_rate,
        stream_error_rate: f.fault_stream_error_rate,
        disconnect_rate: f.fault_disconnect_rate,
        stall_rate: f.fault_stall_rate,
        stall: f.fault_stall,
        hostile: f.fault.clone(),
        trickle_gap: f.fault_trickle_gap,
        seed: f.fault_seed,
        answers,
    })
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
    /// Serves on `listener` within `limits` until `shutdown` resolves.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        limits: ConnectionLimits,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        match self {
            Served::Engine(app) => goodput_sim::server::serve_limited(listener, app, limits, shutdown).await,
            Served::Fixed(server) => goodput_sim::fixed::serve_limited(listener, server, limits, shutdown).await,
        }
    }
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
