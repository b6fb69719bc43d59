//! The fixed profile's HTTP/1.1 server: just enough of the protocol for the
//! generation routes (OpenAI's, Anthropic Messages, Ollama's), with keep-alive, and streams handed to the
//! [`emitter`](super::emitter) thread.
//!
//! Why not axum: every chunk of a stream went through hyper's dispatch and a
//! tokio task wake, which at 100k chunks/s on two cores cost most of a core
//! and wrote each burst in a different order. Here a connection task reads
//! requests (parsed with `httparse`, bodies by `Content-Length`), answers the
//! small routes itself, and for a stream writes the status line, the headers
//! and the preamble, then lends a duplicate of its socket to the emitter and
//! waits until the stream has ended before it reads the next request.

use super::emitter::{frame, Emitter, End, Stream};
use super::{metrics_text, FixedServer, Plan, Reply};
use crate::connections::{serve_connections, ConnectionLimits};
use crate::faults::Fault;
use crate::openai::pooling::PoolRoute;
use crate::openai::{error_body, info_body, models_body, tags_body, Route, Usage};
use crate::server::MAX_BODY;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, OwnedSemaphorePermit};

/// The largest request head (request line and headers) accepted.
const MAX_HEAD: usize = 64 * 1024;
/// The most header fields in a request.
const MAX_HEADERS: usize = 64;

/// Serves `state` on `listener` until `shutdown` resolves, with the default
/// [`ConnectionLimits`]: accepts connections (TCP_NODELAY on each), then
/// stops accepting, closes idle connections, and gives responses in flight a
/// few seconds to finish.
pub async fn serve(
    listener: TcpListener,
    state: Arc<FixedServer>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_limited(listener, state, ConnectionLimits::default(), shutdown).await
}

/// [`serve`] within `limits`.
pub async fn serve_limited(
    listener: TcpListener,
    state: Arc<FixedServer>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let emitter = Arc::new(Emitter::start(state.clone())?);
    serve_with(listener, state, emitter, limits, shutdown).await
}

/// [`serve_limited`] with a given emitter, which tests inspect.
async fn serve_with(
    listener: TcpListener,
    state: Arc<FixedServer>,
    emitter: Arc<Emitter>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_connections(listener, limits, shutdown, |sock, permit, head_timeout, stop| {
        let c = Conn { sock, buf: Vec::with_capacity(8192), head_timeout, _permit: permit };
        connection(c, state.clone(), emitter.clone(), stop)
    })
    .await
}

/// One connection: requests one after another until either side closes.
async fn connection(mut c: Conn, state: Arc<FixedServer>, emitter: Arc<Emitter>, mut stop: watch::Receiver<bool>) {
    loop {
        let req = match c.read_request(&mut stop).await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(Reject(status, msg)) => {
                if c.respond(status, CT_JSON, error_body(status, &msg).as_bytes(), false, "").await.is_ok() {
                    c.linger().await;
                }
                return;
            }
        };
        match c.handle(req, &state, &emitter, &mut stop).await {
            Ok(true) if !*stop.borrow() => {}
            _ => return,
        }
    }
}

const CT_JSON: &str = "application/json";

/// A request refused before it is routed: the status and the message.
#[derive(Debug)]
struct Reject(u16, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Get,
    Head,
    Post,
    Other,
}

/// The routes, resolved from the path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    Generate(Route),
    /// `/v1/embeddings` or `/v1/rerank`.
    Pool(PoolRoute),
    Models,
    /// Ollama's model list.
    Tags,
    /// TGI's model information.
    Info,
    Health,
    Metrics,
    /// vLLM's `POST /reset_prefix_cache`: the fixed profile has no cache,
    /// so it answers 200 and does nothing.
    ResetPrefixCache,
    Unknown(String),
}

/// A request whose head and body are in the connection's buffer.
#[derive(Debug)]
struct Request {
    method: Method,
    target: Target,
    /// HTTP/1.1 (chunked responses, keep-alive by default); else HTTP/1.0.
    http11: bool,
    keep_alive: bool,
    /// The body's place in the buffer; its end is where the next request starts.
    body: std::ops::Range<usize>,
    /// `X-Request-Id`, for the write log.
    request_id: Option<String>,
}

/// What the head of a request says, once complete.
#[derive(Debug)]
struct Head {
    method: Method,
    target: Target,
    http11: bool,
    keep_alive: bool,
    len: usize,
    content_length: usize,
    expect_continue: bool,
    request_id: Option<String>,
}

/// Parses the head at the start of `buf`: `Ok(None)` while it is incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, Reject> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) if n <= MAX_HEAD => n,
        Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD => return Ok(None),
        Ok(_) => return Err(Reject(413, format!("the request head is larger than {} KiB", MAX_HEAD / 1024))),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Reject(413, format!("the request has more than {MAX_HEADERS} header fields")))
        }
        Err(e) => return Err(Reject(400, format!("malformed HTTP request: {e}"))),
    };
    let method = match req.method {
        Some("GET") => Method::Get,
        Some("HEAD") => Method::Head,
        Some("POST") => Method::Post,
        _ => Method::Other,
    };
    let path = req.path.unwrap_or("/");
    let path = path.split('?').next().unwrap_or(path);
    let target = match (Route::of_path(path), path) {
        (Some(route), _) => Target::Generate(route),
        (None, "/v1/models") => Target::Models,
        (None, "/api/tags") => Target::Tags,
        (None, "/info") => Target::Info,
        (None, "/health") => Target::Health,
        (None, "/metrics") => Target::Metrics,
        (None, "/reset_prefix_cache") => Target::ResetPrefixCache,
        (None, other) => match PoolRoute::of_path(other) {
            Some(route) => Target::Pool(route),
            None => Target::Unknown(other.to_owned()),
        },
    };
    let http11 = req.version == Some(1);
    let mut keep_alive = http11;
    let mut content_length: Option<usize> = None;
    let mut expect_continue = false;
    let mut request_id = None;
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = value
                .parse::<usize>()
                .ok()
                .filter(|_| value.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| Reject(400, format!("invalid Content-Length: {value:?}")))?;
            if content_length.is_some_and(|m| m != n) {
                return Err(Reject(400, "conflicting Content-Length headers".into()));
            }
            content_length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(Reject(
                400,
                format!(
                    "Transfer-Encoding {value:?} is not supported on requests: send the body with a Content-Length"
                ),
            ));
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                }
            }
        } else if h.name.eq_ignore_ascii_case("expect") && value.eq_ignore_ascii_case("100-continue") {
            expect_continue = true;
        } else if h.name.eq_ignore_ascii_case("x-request-id") {
            request_id = Some(value.to_owned());
        }
    }
    let content_length = content_length.unwrap_or(0);
    if content_length > MAX_BODY {
        return Err(Reject(413, format!("the request body is larger than {} MiB", MAX_BODY / (1024 * 1024))));
    }
    Ok(Some(Head { method, target, http11, keep_alive, len, content_length, expect_continue, request_id }))
}

struct Conn {
    sock: TcpStream,
    /// Bytes read and not yet consumed: the request being read, and any
    /// pipelined after it.
    buf: Vec<u8>,
    /// How long a request head may take, from when it is waited for.
    head_timeout: Duration,
    /// The connection's place under the server's cap.
    _permit: OwnedSemaphorePermit,
}

impl Conn {
    /// Reads more bytes into the buffer; 0 at the end of the stream.
    async fn fill(&mut self) -> std::io::Result<usize> {
        self.buf.reserve(8192);
        self.sock.read_buf(&mut self.buf).await
    }

    /// Before closing on a request it did not read whole: ends the writing
    /// half and discards what the client still sends for a moment, because
    /// closing with unread bytes resets the connection and can destroy the
    /// error response before the client has read it.
    async fn linger(&mut self) {
        if self.sock.shutdown().await.is_err() {
            return;
        }
        let mut scrap = [0u8; 8192];
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            let mut left = 1 << 20;
            while left > 0 {
                match self.sock.read(&mut scrap).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => left -= n.min(left),
                }
            }
        })
        .await;
    }

    /// Reads the next request: `Ok(None)` when the client closed the
    /// connection (or it went idle during a shutdown).
    async fn read_request(&mut self, stop: &mut watch::Receiver<bool>) -> Result<Option<Request>, Reject> {
        // A head not whole by then closes the connection, as hyper's
        // header_read_timeout does: a client that sends half a head, or
        // nothing, no longer holds the connection for ever.
        let deadline = tokio::time::Instant::now() + self.head_timeout;
        let head = loop {
            if let Some(h) = parse_head(&self.buf)? {
                break h;
            }
            let n = if self.buf.is_empty() {
                // Idle between requests: a shutdown closes the connection.
                tokio::select! {
                    r = self.fill() => r,
                    _ = stop.wait_for(|s| *s) => return Ok(None),
                    () = tokio::time::sleep_until(deadline) => return Ok(None),
                }
            } else {
                tokio::select! {
                    r = self.fill() => r,
                    () = tokio::time::sleep_until(deadline) => return Ok(None),
                }
            };
            match n {
                Ok(0) | Err(_) => return Ok(None),
                Ok(_) => {}
            }
        };
        let end = head.len + head.content_length;
        if head.expect_continue
            && head.http11
            && self.buf.len() < end
            && self.sock.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await.is_err()
        {
            return Ok(None);
        }
        // The body too, within the head's time from the head's end: one sent
        // a byte at a time had held the connection for ever.
        let deadline = tokio::time::Instant::now() + self.head_timeout;
        while self.buf.len() < end {
            let n = tokio::select! {
                r = self.fill() => r,
                () = tokio::time::sleep_until(deadline) => return Ok(None),
            };
            match n {
                Ok(0) | Err(_) => return Ok(None),
                Ok(_) => {}
            }
        }
        Ok(Some(Request {
            method: head.method,
            target: head.target,
            http11: head.http11,
            keep_alive: head.keep_alive,
            body: head.len..end,
            request_id: head.request_id,
        }))
    }

    /// Answers `req`; `Ok(true)` when the connection stays open for another.
    async fn handle(
        &mut self,
        req: Request,
        state: &FixedServer,
        emitter: &Emitter,
        stop: &mut watch::Receiver<bool>,
    ) -> std::io::Result<bool> {
        let keep = req.keep_alive;
        let head_only = req.method == Method::Head;
        let get = matches!(req.method, Method::Get | Method::Head);
        let reply = match (&req.target, req.method) {
            (Target::Generate(route), Method::Post) => {
                Some(Reply::to(state, *route, &self.buf[req.body.clone()], Instant::now(), req.request_id))
            }
            _ => None,
        };
        let pooled = match (&req.target, req.method) {
            (Target::Pool(route), Method::Post) => {
                Some((*route, super::pool_reply(state, *route, &self.buf[req.body.clone()])))
            }
            _ => None,
        };
        self.buf.drain(..req.body.end);
        if let Some((route, pooled)) = pooled {
            return match pooled {
                Ok((due, body)) => {
                    let at = crate::clock::sleep_until(tokio::time::Instant::from_std(due));
                    self.unless_gone(at).await?;
                    self.respond(200, CT_JSON, body.as_bytes(), keep, "").await.map(|()| keep)
                }
                Err((status, msg)) => {
                    let body = route.error_body(status, &msg);
                    self.respond(status, CT_JSON, body.as_bytes(), keep, "").await.map(|()| keep)
                }
            };
        }
        match (req.target, reply) {
            (Target::Generate(route), Some(Reply::Error(status, msg))) => {
                let body = route.error_body(status, &msg);
                self.respond(status, CT_JSON, body.as_bytes(), keep, "").await?
            }
            (_, Some(Reply::Error(status, msg))) => self.error(status, &msg, keep).await?,
            (_, Some(Reply::Generate(plan))) => match plan.fault {
                // Written here, raw, rather than by the emitter.
                Fault::Hostile(case) => {
                    let gap = state.profile.faults.trickle_gap;
                    return self.hostile(case, *plan, keep, req.http11, gap, stop).await;
                }
                _ if plan.stream => return self.stream(*plan, keep, req.http11, emitter).await,
                _ => self.whole(*plan, keep).await?,
            },
            (Target::Generate(_) | Target::Pool(_), None) => self.method_not_allowed("POST", keep).await?,
            (Target::Models, None) if get => {
                let body = models_body(&state.profile.names().collect::<Vec<_>>()).to_string();
                self.respond_to(head_only, 200, CT_JSON, body.as_bytes(), keep).await?
            }
            (Target::Health, None) if get => {
                self.respond_to(head_only, 200, "text/plain; charset=utf-8", b"ok", keep).await?
            }
            (Target::Metrics, None) if get => {
                let text = metrics_text(state);
                self.respond_to(head_only, 200, "text/plain; version=0.0.4", text.as_bytes(), keep).await?
            }
            (Target::Tags, None) if get => {
                let body = tags_body(&state.profile.names().collect::<Vec<_>>()).to_string();
                self.respond_to(head_only, 200, CT_JSON, body.as_bytes(), keep).await?
            }
            (Target::Info, None) if get => {
                let body = info_body(&state.profile.model).to_string();
                self.respond_to(head_only, 200, CT_JSON, body.as_bytes(), keep).await?
            }
            (Target::ResetPrefixCache, None) if req.method == Method::Post => {
                self.respond_to(false, 200, "text/plain; charset=utf-8", b"", keep).await?
            }
            (Target::ResetPrefixCache, None) => self.method_not_allowed("POST", keep).await?,
            (Target::Models | Target::Tags | Target::Info | Target::Health | Target::Metrics, None) => {
                self.method_not_allowed("GET, HEAD", keep).await?
            }
            (Target::Unknown(path), None) => self.error(404, &format!("no route for {path}"), keep).await?,
        }
        Ok(keep)
    }

    /// A whole response: it waits for the time of the last chunk, as a real
    /// server answers once the generation is done.
    async fn whole(&mut self, plan: Plan, keep: bool) -> std::io::Result<()> {
        let at = |t: Instant| crate::clock::sleep_until(tokio::time::Instant::from_std(t));
        if matches!(plan.fault, Fault::StreamError | Fault::Disconnect) {
            self.unless_gone(at(plan.due(plan.fault_at()))).await?;
            let body = plan.writer.route().error_body(500, "injected fault: generation failed");
            return self.respond(500, CT_JSON, body.as_bytes(), keep, "").await;
        }
        self.unless_gone(at(plan.due(plan.n_chunks.saturating_sub(1)))).await?;
        let body =
            plan.writer.whole(Usage::new(plan.prompt_tokens, plan.n_out), plan.writer.finish_reason()).to_string();
        self.respond(200, CT_JSON, body.as_bytes(), keep, "").await
    }

    /// Waits for `wait`, or fails once the client has closed the connection:
    /// a client that leaves a long whole response frees its connection then,
    /// not hours later when the answer would have been due.
    async fn unless_gone(&self, wait: impl Future<Output = ()>) -> std::io::Result<()> {
        let gone = async {
            let mut probe = [0u8; 1];
            match self.sock.peek(&mut probe).await {
                Ok(0) | Err(_) => {}
                // A pipelined request waits its turn; the end can no longer be seen.
                Ok(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            () = wait => Ok(()),
            () = gone => Err(std::io::ErrorKind::ConnectionReset.into()),
        }
    }

    /// A streamed response: the head and the preamble from here, the chunks
    /// from the emitter; returns when the stream has ended.
    async fn stream(&mut self, plan: Plan, keep: bool, http11: bool, emitter: &Emitter) -> std::io::Result<bool> {
        let dup = std::net::TcpStream::from(socket2::SockRef::from(&self.sock).try_clone()?);
        let keep = keep && http11;
        let extra = if http11 {
            "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
        } else {
            "Cache-Control: no-cache\r\n"
        };
        let mut out = head(200, plan.writer.route().stream_content_type(), None, keep, extra);
        let preamble = plan.writer.preamble(Usage::new(plan.prompt_tokens, 0));
        if !preamble.is_empty() {
            frame(&mut out, &preamble, http11);
        }
        self.sock.write_all(&out).await?;
        let (tx, rx) = oneshot::channel();
        emitter.submit(Stream::new(plan, dup, http11, tx)?);
        // No answer means the emitter stopped with the stream unfinished.
        let end = rx.await.unwrap_or(End { keep_alive: false });
        Ok(keep && end.keep_alive)
    }

    async fn error(&mut self, status: u16, message: &str, keep: bool) -> std::io::Result<()> {
        self.respond(status, CT_JSON, error_body(status, message).as_bytes(), keep, "").await
    }

    async fn method_not_allowed(&mut self, allow: &str, keep: bool) -> std::io::Result<()> {
        let body = error_body(405, &format!("method not allowed: use {allow}"));
        self.respond(405, CT_JSON, body.as_bytes(), keep, &format!("Allow: {allow}\r\n")).await
    }

    /// [`Conn::respond`], without the body for a HEAD request.
    async fn respond_to(
        &mut self,
        head_only: bool,
        status: u16,
        content_type: &str,
        body: &[u8],
        keep: bool,
    ) -> std::io::Result<()> {
        let mut out = head(status, content_type, Some(body.len()), keep, "");
        if !head_only {
            out.extend_from_slice(body);
        }
        self.sock.write_all(&out).await
    }

    /// A whole response with `extra` header lines (each ending in CRLF).
    async fn respond(
        &mut self,
        status: u16,
        content_type: &str,
        body: &[u8],
        keep: bool,
        extra: &str,
    ) -> std::io::Result<()> {
        let mut out = head(status, content_type, Some(body.len()), keep, extra);
        out.extend_from_slice(body);
        self.sock.write_all(&out).await
    }
}

/// The status line and headers of a response, through the blank line.
fn head(status: u16, content_type: &str, content_length: Option<usize>, keep: bool, extra: &str) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    };
    let mut h = format!("HTTP/1.1 {status} {reason}\r\nServer: goodput-sim\r\nContent-Type: {content_type}\r\n");
    if let Some(n) = content_length {
        h.push_str(&format!("Content-Length: {n}\r\n"));
    }
    if !keep {
        h.push_str("Connection: close\r\n");
    }
    h.push_str(extra);
    h.push_str("\r\n");
    h.into_bytes()
}

mod hostile;

#[cfg(test)]
mod tests;
