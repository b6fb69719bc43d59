//! What both simulated servers (the engine's hyper front and the fixed
//! profile's own HTTP code) do with their connections: a cap on how many are
//! open, a time limit on sending a request head, and an accept loop that
//! outlives running out of file descriptors, saying so.
//!
//! Without them a slowloris (clients that open connections and send half a
//! request head, or nothing) held every connection forever: about 20,000 of
//! them used up the process's descriptors, `accept` failed from then on, and
//! the server answered nobody, with nothing logged.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// How long a client may take to send a request head, counted from when
/// the server starts waiting for it (a new connection, or a kept-alive one
/// after its last response). hyper's own default, and within the 20–60 s of
/// common servers; an idle kept-alive connection is closed after it too
/// (vLLM's uvicorn closes one after 5 s).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Descriptors kept back from the connection cap for the process's own
/// files: the listener, the runtime, logs and outputs.
const RESERVED_FILES: usize = 64;

/// How long a failed `accept` waits before the next try: a connection left
/// in the queue keeps the listener readable, so retrying at once spins.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// At most one log line per this long for the same trouble.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// Where a server says what goes wrong with its connections.
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// How a simulated server guards its connections.
#[derive(Clone)]
pub struct ConnectionLimits {
    /// See [`HEAD_TIMEOUT`]: a connection that has not sent a whole request
    /// head this long after the server began waiting for it is closed.
    pub head_timeout: Duration,
    /// The most connections open at once. Further clients wait in the
    /// listen queue until one closes, rather than being accepted until the
    /// process runs out of descriptors.
    pub max_connections: usize,
    /// Where the cap being reached and `accept` failing are told (stderr for
    /// `goodput serve`); nowhere when `None`.
    pub log: Option<Log>,
}

impl Default for ConnectionLimits {
    /// [`HEAD_TIMEOUT`], as many connections as the open-file limit leaves
    /// room for, and no log.
    fn default() -> Self {
        ConnectionLimits { head_timeout: HEAD_TIMEOUT, max_connections: default_max_connections(), log: None }
    }
}

impl fmt::Debug for ConnectionLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionLimits")
            .field("head_timeout", &self.head_timeout)
            .field("max_connections", &self.max_connections)
            .field("log", &self.log.is_some())
            .finish()
    }
}

/// The process's open-file limit less [`RESERVED_FILES`] (at least 16); a
/// generous fixed number where there is no limit to read.
pub fn default_max_connections() -> usize {
    match open_file_limit() {
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX).saturating_sub(RESERVED_FILES).max(16),
        None => 1 << 16,
    }
}

/// The soft limit on open files, where there is one.
fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit only writes the struct we pass.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
        // rlim_t is u64 on Linux, not on every Unix.
        #[allow(clippy::unnecessary_cast)]
        return (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur as u64);
    }
    #[cfg(not(unix))]
    None
}

/// How long the connections still busy at a shutdown get to finish.
pub const GRACE: Duration = Duration::from_secs(10);

/// Accepts connections on `listener` within `limits` until `shutdown`
/// resolves, running `connection` on each: its socket, the permit that
/// holds its place under the cap, the head timeout, and a watch that turns
/// true at the shutdown. Then it stops accepting, tells the connections,
/// and gives them [`GRACE`] to finish; those still busy are ended.
pub(crate) async fn serve_connections<F, Fut>(
    listener: TcpListener,
    limits: ConnectionLimits,
    shutdown: impl std::future::Future<Output = ()>,
    mut connection: F,
) -> std::io::Result<()>
where
    F: FnMut(TcpStream, OwnedSemaphorePermit, Duration, watch::Receiver<bool>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let head_timeout = limits.head_timeout;
    let mut acceptor = Acceptor::new(listener, limits);
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut conns = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            (sock, permit) = acceptor.accept() => {
                conns.spawn(connection(sock, permit, head_timeout, stop_rx.clone()));
            }
        }
    }
    drop(acceptor);
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(GRACE, async { while conns.join_next().await.is_some() {} }).await;
    // Dropping `conns` ends the connections still busy.
    Ok(())
}

/// A listener that hands out connections within the cap, each with the
/// permit that holds its place until it is dropped.
pub(crate) struct Acceptor {
    listener: TcpListener,
    permits: Arc<Semaphore>,
    limits: ConnectionLimits,
    /// When the log last said the cap was reached.
    said_full: Option<Instant>,
    /// When the log last said `accept` failed, and the failures since.
    said_failed: Option<Instant>,
    failures: u64,
}

impl Acceptor {
    pub(crate) fn new(listener: TcpListener, limits: ConnectionLimits) -> Acceptor {
        let max = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
        let limits = ConnectionLimits { max_connections: max, ..limits };
        Acceptor {
            listener,
            permits: Arc::new(Semaphore::new(max)),
            limits,
            said_full: None,
            said_failed: None,
            failures: 0,
        }
    }

    /// The next connection (TCP_NODELAY set: SSE writes are small and must
    /// not wait for Nagle), once the cap leaves room for it; a failed
    /// `accept` is logged and tried again after a pause. Cancel-safe.
    pub(crate) async fn accept(&mut self) -> (TcpStream, OwnedSemaphorePermit) {
        loop {
            let permit = match self.permits.clone().try_acquire_owned() {
                Ok(p) => p,
                Err(_) => {
                    self.say_full();
                    match self.permits.clone().acquire_owned().await {
                        Ok(p) => p,
                        // Never closed: this acceptor owns the semaphore.
                        Err(_) => continue,
                    }
                }
            };
            match self.listener.accept().await {
                Ok((sock, _)) => {
                    let _ = sock.set_nodelay(true);
                    return (sock, permit);
                }
                Err(e) => {
                    drop(permit);
                    self.failed(e).await;
                }
            }
        }
    }

    fn open(&self) -> usize {
        self.limits.max_connections - self.permits.available_permits()
    }

    fn log(&self, line: &str) {
        if let Some(log) = &self.limits.log {
            log(line);
        }
    }

    fn say_full(&mut self) {
        if self.said_full.is_some_and(|t| t.elapsed() < LOG_EVERY) {
            return;
        }
        self.said_full = Some(Instant::now());
        self.log(&format!(
            "{} connections are open, the most this server takes: new ones wait in the listen queue until one \
             closes (a connection that sends no request head within {} s is closed)",
            self.limits.max_connections,
            self.limits.head_timeout.as_secs_f64()
        ));
    }

    /// After a failed `accept`: a connection gone before it was accepted is
    /// nothing; anything else (out of descriptors: EMFILE, ENFILE; out of
    /// memory) is logged and waited out.
    async fn failed(&mut self, e: std::io::Error) {
        use std::io::ErrorKind::{ConnectionAborted, ConnectionReset, Interrupted};
        if matches!(e.kind(), ConnectionAborted | ConnectionReset | Interrupted) {
            return;
        }
        self.failures += 1;
        if self.said_failed.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
            self.said_failed = Some(Instant::now());
            let limit = open_file_limit().map_or(String::new(), |n| format!(", the open-file limit is {n}"));
            self.log(&format!(
                "cannot accept a connection ({e}; {} failures since the last line): {} connections are open{limit}; \
                 trying again every {} ms; raise the limit (ulimit -n) if it is too low",
                self.failures,
                self.open(),
                ACCEPT_RETRY.as_millis()
            ));
            self.failures = 0;
        }
        tokio::time::sleep(ACCEPT_RETRY).await;
    }
}
