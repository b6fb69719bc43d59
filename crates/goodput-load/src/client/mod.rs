//! The HTTP client that turns one work item into one `RequestRecord`. The
//! byte-level reading is the pure [`ResponseReader`]; `Client::execute` adds
//! the socket, the clock and the timeout.

mod failure;
mod headers;
mod settings;
mod streamer;
mod wire;

pub use failure::{error_chain, tls_hint};
pub use headers::{check_header, join_url, key_header_overridden, normalize_base, request_headers, secrets_of};
pub use settings::{Cancellation, ClientConfig, Transport, MAX_BUFFER};

use crate::error::ClientError;
use crate::http1::{Http1, Stamps};
use crate::protocol::{build_body_for, Api};
use crate::reader::{BodyHold, ResponseReader};
use crate::tokenizer::TokenCounter;
use crate::workload::WorkItem;
use failure::{compressed, connect_or_resource, empty_status, foreign_content, status_failure, ERROR_BODY_LIMIT};
use goodput_core::util::redact::Secrets;
use goodput_core::{FailureKind, Outcome, RequestRecord};
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::task::coop::unconstrained;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use wire::{Outgoing, Read, Reqwest, ResponseHead, SendError, Wire, WireResponse};

/// Sleeps until `at`, or forever when there is none.
pub(crate) async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// How many times an exchange past its deadline is polled, yielding between,
/// to read what already came before a timeout is declared: each poll reads
/// until the socket would block or the runtime's budget for one poll (128
/// reads, each taking a unit: `Conn::fill`; a stream reader thread's job, a
/// turn's 16) is spent, so this reads far more than any socket buffer
/// holds. A server that floods the socket holds the request no longer than
/// the reader's own bound past the deadline (`wire::read_stream`'s bytes, a
/// reader thread's turns).
const DRAIN_POLLS: usize = 64;

/// An exchange whose deadline passed, run on only as far as what already sits
/// in its socket takes it: its result if that completes it, `None` once it
/// would wait for the server. A client that was stopped or starved past the
/// deadline while its whole response waited in the socket did not see the
/// server time out; a server that sent nothing more times out as before.
async fn read_what_came<F: std::future::Future>(mut exchange: std::pin::Pin<&mut F>) -> Option<F::Output> {
    for _ in 0..DRAIN_POLLS {
        let polled = std::future::poll_fn(|cx| std::task::Poll::Ready(exchange.as_mut().poll(cx))).await;
        if let std::task::Poll::Ready(out) = polled {
            return Some(out);
        }
        tokio::task::yield_now().await;
    }
    None
}

/// Runs `exchange` until it ends, `abort` is cancelled, `give_up` (a
/// `--cancel`'s time) or `deadline` comes: the outcome decided other than by
/// the exchange's own success (`None`), and whether the request was given
/// up on. Past the deadline, what already came is read ([`read_what_came`])
/// before `timeout()` is declared.
///
/// The exchange first: when the client wakes late (a stopped or starved
/// process) to find both its response and its deadline come, the response
/// wins. An exchange whose socket always has bytes (a server's flood) spends
/// the task's cooperative budget on its reads (`Conn::fill`) and yields each
/// poll; the timers are polled outside that budget, as
/// `tokio::time::timeout` polls its own: spent by the exchange, it kept
/// them `Pending` poll after poll, and the deadline never came. (A
/// cancellation token takes no budget.)
async fn race<F: std::future::Future<Output = Result<(), Outcome>>>(
    mut exchange: std::pin::Pin<&mut F>,
    abort: &CancellationToken,
    give_up: Option<Instant>,
    deadline: Instant,
    timeout: impl FnOnce() -> Outcome,
) -> (Option<Outcome>, bool) {
    tokio::select! {
        biased;
        res = &mut exchange => (res.err(), false),
        _ = abort.cancelled() => (Some(Outcome::Cancelled), false),
        _ = unconstrained(sleep_until_some(give_up)) => (Some(Outcome::Cancelled), true),
        _ = unconstrained(tokio::time::sleep_until(deadline)) => match read_what_came(exchange.as_mut()).await {
            Some(res) => (res.err(), false),
            None => (Some(timeout()), false),
        },
    }
}

/// Sends requests and records them.
pub struct Client {
    http: reqwest::Client,
    /// goodput's own HTTP/1.1 transport, where it carries the requests
    /// (else reqwest does).
    http1: Option<Http1>,
    endpoint: String,
    /// Every request's headers beyond the body's: the key, those the API
    /// requires, and the configured ones.
    headers: Vec<(String, String)>,
    /// A configured header names `{session}` or `{request}`.
    templated: bool,
    cfg: ClientConfig,
    tokenizer: Option<Arc<TokenCounter>>,
    server: OnceLock<String>,
    /// The key, the credential headers and the URL's userinfo: masked in
    /// every message a server's text goes into.
    secrets: Secrets,
    /// How answers are scored and what of them records keep.
    quality: QualityOptions,
}

/// How a client scores answers against their references, and what of the
/// texts its records keep.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QualityOptions {
    /// The scorers to apply (`--score`); empty: all that apply.
    pub scorers: Vec<goodput_core::quality::Scorer>,
    /// Keep the prompt, the answer and the reference in each record
    /// (`--keep-text`).
    pub keep_text: bool,
}

fn loopback(url: &reqwest::Url) -> bool {
    matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]" | "::1"))
}

/// A proxy is configured for plain-HTTP requests (reqwest honours it).
fn behind_proxy() -> bool {
    ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
}

/// `host:port` or `host:port/path`, with no `scheme://`.
fn no_scheme(url: &str) -> bool {
    let url = host_port(url);
    !url.contains("://")
        && url.split_once(':').is_some_and(|(host, rest)| {
            !host.is_empty()
                && rest.split('/').next().is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// `url` up to its query or fragment (which may hold a key, and are not
/// part of the address to suggest).
fn host_port(url: &str) -> &str {
    let url = url.trim();
    url.split(['?', '#']).next().unwrap_or(url)
}

impl Client {
    pub fn new(cfg: ClientConfig, tokenizer: Option<Arc<TokenCounter>>) -> Result<Self, ClientError> {
        let base = normalize_base(&cfg.base_url);
        let bad_url = |e: url::ParseError| ClientError::Url { url: cfg.base_url.clone(), reason: e.to_string() };
        let parsed = reqwest::Url::parse(&base).map_err(bad_url)?;
        if !matches!(parsed.scheme(), "http" | "https") {
            // `localhost:8000` parses as the scheme `localhost`: it is a
            // host and port with no scheme, as `127.0.0.1:8000` is.
            if no_scheme(&cfg.base_url) {
                // Its query's values masked, as a URL's are wherever one is shown.
                let shown = goodput_core::util::redact::redact_url(&format!("http://{}", cfg.base_url.trim()));
                return Err(ClientError::NoScheme {
                    url: shown.trim_start_matches("http://").to_string(),
                    host_port: host_port(&cfg.base_url).trim_end_matches('/').to_string(),
                });
            }
            return Err(ClientError::Scheme { url: cfg.base_url.clone() });
        }
        // A fragment is never sent: everything would go to the path before
        // it, and a `#` meant inside a value (a key) would cut it there.
        if parsed.fragment().is_some() {
            return Err(ClientError::Fragment { url: cfg.base_url.clone() });
        }
        // No redirect is followed: reqwest would carry every `--header` and
        // an `x-api-key` to whatever server the `Location` names (it strips
        // only `Authorization`), and turn a 301/302's POST into a GET whose
        // answer is another server's. A 3xx fails, naming where it pointed.
        #[allow(clippy::disallowed_methods)] // The one place a reqwest client is built (clippy.toml).
        let mut builder = reqwest::Client::builder()
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none());
        if loopback(&parsed) {
            builder = builder.no_proxy();
        }
        let http = builder.build().map_err(|e| ClientError::Http(e.to_string()))?;
        let endpoint = join_url(&base, cfg.body.api.path(cfg.body.stream));
        let http1 = match cfg.transport {
            Transport::Auto if parsed.scheme() == "http" && (loopback(&parsed) || !behind_proxy()) => {
                let url = reqwest::Url::parse(&endpoint).map_err(bad_url)?;
                let h = Http1::new(&url)?;
                Some(h.with_stamps(cfg.stamps)?)
            }
            _ => None,
        };
        if cfg.stamps == Stamps::Kernel && http1.is_none() {
            return Err(ClientError::KernelStamps);
        }
        let headers = request_headers(cfg.body.api, cfg.api_key.as_deref(), cfg.key_header, &cfg.headers)?;
        let templated = cfg.headers.iter().any(|(_, v)| v.contains("{session}") || v.contains("{request}"));
        let secrets = secrets_of(cfg.api_key.as_deref(), &headers, &cfg.headers, &cfg.base_url);
        Ok(Client {
            http,
            http1,
            endpoint,
            headers,
            templated,
            cfg,
            tokenizer,
            server: OnceLock::new(),
            secrets,
            quality: QualityOptions::default(),
        })
    }

    /// The model request `id` asks, when the run spreads its requests over
    /// several: drawn from the request's number, or its session's, so that
    /// a conversation stays with one model.
    fn pick_model(&self, id: u64, session: Option<u64>) -> Option<&str> {
        let models = &self.cfg.body.models;
        if models.len() < 2 {
            return None;
        }
        // Mixed: neighbouring numbers land on unrelated models.
        let z =
            goodput_core::util::hash::mix64(session.unwrap_or(id).wrapping_add(goodput_core::util::hash::GOLDEN_GAMMA));
        Some(&models[(z % models.len() as u64) as usize])
    }

    /// Request `id`'s headers: the configured ones, with `{session}` (the
    /// session the request is a turn of, or the request itself outside
    /// sessions) and `{request}` filled in where a value names them, e.g.
    /// for a router that keeps a session on one replica.
    fn headers_for(&self, id: u64, session: Option<u64>) -> Cow<'_, [(String, String)]> {
        if !self.templated {
            return Cow::Borrowed(&self.headers);
        }
        let session = session.unwrap_or(id).to_string();
        let request = id.to_string();
        Cow::Owned(
            self.headers
                .iter()
                .map(|(n, v)| (n.clone(), v.replace("{session}", &session).replace("{request}", &request)))
                .collect(),
        )
    }

    /// Streamed bodies over goodput's own HTTP/1.1 transport are read on
    /// the stream reader threads (`on`, the default) or by each request's
    /// own task, as every other transport's are. The threads read a chunk
    /// for a fraction of the CPU a task's wake costs, and keep reading
    /// while the runtime's threads are busy; `GOODPUT_STREAM_THREADS=0`
    /// turns them off for the whole process.
    pub fn with_stream_threads(mut self, on: bool) -> Self {
        if let Some(h) = &mut self.http1 {
            h.stream_threads = on;
        }
        self
    }

    /// Scores answers and keeps texts as `quality` says.
    pub fn with_quality(self, quality: QualityOptions) -> Self {
        Client { quality, ..self }
    }

    /// The stack that carries this client's requests, for reports.
    pub fn transport_name(&self) -> &'static str {
        if self.http1.is_some() {
            "goodput http/1.1"
        } else {
            "reqwest"
        }
    }

    /// `kernel` or `read`: how this client stamps chunks, `Auto` resolved
    /// (reqwest can only stamp reads).
    pub fn stamp_name(&self) -> &'static str {
        self.http1.as_ref().map_or("read", |h| h.stamps().name())
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub fn api(&self) -> Api {
        self.cfg.body.api
    }

    /// The `Server` header of the first response, if any came.
    pub fn server_header(&self) -> Option<String> {
        self.server.get().cloned()
    }

    /// Sends one request and records it. `abort` ends it early as `Cancelled`.
    pub async fn execute(
        &self,
        id: u64,
        item: &WorkItem,
        scheduled: Duration,
        origin: Instant,
        abort: &CancellationToken,
    ) -> RequestRecord {
        self.execute_keeping(id, item, scheduled, origin, abort, false).await.0
    }

    /// [`Client::execute`], also returning the answer's visible content when
    /// `keep_reply` (a conversation carries it into its next turn).
    pub async fn execute_keeping(
        &self,
        id: u64,
        item: &WorkItem,
        scheduled: Duration,
        origin: Instant,
        abort: &CancellationToken,
        keep_reply: bool,
    ) -> (RequestRecord, Option<String>) {
        let session = item.session.map(|s| s.id);
        let model = self.pick_model(id, session);
        let body = build_body_for(&self.cfg.body, model.unwrap_or(&self.cfg.body.model), &item.prompt, item.max_tokens);
        let headers = self.headers_for(id, session);
        let sent = origin.elapsed();
        let mut rec = RequestRecord::new(id, scheduled, sent);
        rec.model = model.map(str::to_owned);
        rec.counts.intended_prompt = item.intended_input_tokens;
        (rec.images, rec.image_bytes) = (item.media.images, item.media.image_bytes);
        // A pooling request asks for no output.
        rec.counts.requested_completion = item.max_tokens.map(u64::from).filter(|_| !self.api().pools());
        let body = match body {
            Ok(b) => b,
            Err(e) => {
                rec.outcome = Outcome::Failed { kind: FailureKind::InvalidResponse, message: e.to_string() };
                return (rec, None);
            }
        };
        let deadline = Instant::now() + self.cfg.timeout;
        let give_up = self.cfg.cancel.filter(|c| c.picks_request(id, item.session)).map(|c| Instant::now() + c.after);
        // The answer's content is always hashed; it is kept where something
        // reads it: the conversation's next turn, the scorers, the repeated
        // prompt's words, `--keep-text`.
        let reader =
            ResponseReader::new(self.tokenizer.is_some()).for_api(self.cfg.body.api).limited(self.cfg.max_buffer);
        let keep_text = keep_reply || self.quality.keep_text || !item.reference.is_empty() || item.repeat.is_some();
        let reader = if keep_text { reader.keeping_reply() } else { reader.hashing_reply() };
        let mut reader =
            reader.expecting(item.max_tokens.filter(|_| self.cfg.body.stream)).streamed(self.cfg.body.stream);
        // A token of this request's own: waiting on it locks its own waiter
        // list at each wake (each read of the stream), where the run's
        // token, shared by every request, took one lock for all of them.
        let abort = abort.child_token();
        let (early, abandoned) = {
            let exchange = std::pin::pin!(self.exchange(body, &headers, &mut rec, &mut reader, origin, deadline));
            let timeout = || Outcome::Failed {
                kind: FailureKind::Timeout,
                message: format!("no complete response within {:?}", self.cfg.timeout),
            };
            race(exchange, &abort, give_up, deadline, timeout).await
        };
        rec.abandoned |= abandoned;
        rec.end = origin.elapsed();
        let prompt = &item.prompt;
        let reply_hash = reader.reply_hash();
        let reply = reader.take_reply();
        reader.into_record(&mut rec, self.tokenizer.as_deref(), prompt);
        if let Some(o) = early {
            rec.outcome = o;
        }
        if let Some(t) = rec.chunks.last().map(|c| c.t).or(rec.stream_end) {
            rec.end = rec.end.max(t);
        }
        // Every text of the server's that the record keeps: a server may
        // echo a secret into any of them (a key as the `finish_reason`).
        let texts = [rec.finish_reason.as_mut(), rec.retry_after.as_mut(), rec.retry_after_date.as_mut()];
        let message = match &mut rec.outcome {
            Outcome::Failed { message, .. } => Some(message),
            _ => None,
        };
        for text in texts.into_iter().chain([message]).flatten() {
            if let Cow::Owned(m) = self.secrets.redact(text) {
                *text = m;
            }
        }
        if rec.outcome.is_success() {
            rec.output_hash = reply_hash;
        }
        self.note_answer(&mut rec, item, reply.as_deref()).await;
        (rec, reply.filter(|_| keep_reply))
    }

    /// What a record keeps of the exchange's texts, beside the answer's
    /// hash (set by the caller): the prompt's hash, the answer's scores
    /// against the item's reference, its words' hashes when the prompt is
    /// repeated, and the texts themselves only when asked (`--keep-text`).
    async fn note_answer(&self, rec: &mut RequestRecord, item: &WorkItem, reply: Option<&str>) {
        let prompt = prompt_text(&item.prompt);
        rec.prompt_hash = Some(goodput_core::util::hash::text_hash(&prompt));
        rec.repeat = item.repeat;
        let answer = reply.filter(|_| rec.outcome.is_success());
        if let Some(answer) = answer {
            if !item.reference.is_empty() {
                // Scoring a long answer takes a while: off the task that
                // reads streams, so it makes no other request's read late.
                let (a, refs, scorers) = (answer.to_owned(), item.reference.clone(), self.quality.scorers.clone());
                rec.quality = tokio::task::spawn_blocking(move || goodput_core::quality::score(&a, &refs, &scorers))
                    .await
                    .ok()
                    .flatten()
                    .map(Box::new);
            }
            if item.repeat.is_some() {
                rec.output_words = Some(goodput_core::util::hash::word_hashes(answer));
            }
        }
        if self.quality.keep_text {
            // The key and header values stay out of what is kept as of
            // everything written: a server may echo them in its answer.
            let kept = |t: &str| goodput_core::util::redact::scrub_secrets(t).into_owned();
            rec.prompt_text = Some(kept(&prompt));
            rec.output_text = answer.map(kept);
            rec.reference = (!item.reference.is_empty()).then(|| item.reference.iter().map(|r| kept(r)).collect());
        }
    }

    /// What both transports do alike once a response's head has come: note
    /// its status, `Retry-After` and the server's name, and say how its body
    /// is to be read. `Err`: the response failed on its head alone.
    fn on_head(&self, rec: &mut RequestRecord, head: ResponseHead) -> Result<BodyRead, Outcome> {
        rec.http_status = Some(head.status);
        rec.retry_after = head.retry_after.map(str::to_owned);
        // A `Retry-After` date is read against the server's clock, where the
        // response gives it (RFC 9110 §10.2.3): kept only beside one.
        rec.retry_after_date = head
            .date
            .filter(|_| rec.retry_after.as_deref().is_some_and(|v| !v.trim().bytes().all(|b| b.is_ascii_digit())))
            .map(str::to_owned);
        if self.server.get().is_none() {
            if let Some(s) = head.server {
                let _ = self.server.set(self.secrets.redact(s).into_owned());
            }
        }
        if !(200..300).contains(&head.status) {
            return Ok(BodyRead::ErrorMessage);
        }
        if let Some(o) = empty_status(head.status).or_else(|| compressed(head.content_encoding)) {
            return Err(o);
        }
        if let Some(o) = foreign_content(head.content_type) {
            return Err(o);
        }
        let is_json = head.content_type.is_some_and(|c| c.starts_with("application/json"));
        Ok(if !self.cfg.body.stream || is_json { BodyRead::Whole } else { BodyRead::Stream })
    }

    /// The HTTP exchange, over whichever transport carries this client's
    /// requests. `Err` carries an outcome decided before any body.
    async fn exchange(
        &self,
        body: Vec<u8>,
        headers: &[(String, String)],
        rec: &mut RequestRecord,
        reader: &mut ResponseReader,
        origin: Instant,
        deadline: Instant,
    ) -> Result<(), Outcome> {
        let accept = self.cfg.body.stream.then(|| self.api().stream_accept());
        let out = Outgoing { body, headers, accept, origin };
        match &self.http1 {
            Some(h) => self.exchange_over(h, out, rec, reader, Some(deadline)).await,
            None => {
                let wire = Reqwest { http: &self.http, endpoint: &self.endpoint };
                self.exchange_over(wire, out, rec, reader, Some(deadline)).await
            }
        }
    }

    /// The one reading of a response, whatever carries it: the head judged,
    /// then an error body for its message, a whole body, or a stream read
    /// by read, each read with its stamp.
    async fn exchange_over<W: Wire>(
        &self,
        wire: W,
        out: Outgoing<'_>,
        rec: &mut RequestRecord,
        reader: &mut ResponseReader,
        deadline: Option<Instant>,
    ) -> Result<(), Outcome> {
        let origin = out.origin;
        let sent = wire.send(out, &mut rec.retries).await;
        let mut resp = sent.map_err(|e| match e {
            SendError::Timeout(message) => Outcome::Failed { kind: FailureKind::Timeout, message },
            SendError::InvalidHead(message) => Outcome::Failed { kind: FailureKind::InvalidResponse, message },
            SendError::Connect(message) => connect_or_resource(message),
        })?;
        rec.first_byte = Some(resp.first_byte());
        // A client slow to send (starved between stamping `sent` and
        // writing) makes every time from `sent` late by as much.
        rec.ttft_bound |= resp.send_took(rec.sent).is_some_and(|d| d > crate::reader::LATE_READ);
        let head = resp.head();
        let (status, location) = (head.status, head.location.map(str::to_owned));
        match self.on_head(rec, head)? {
            BodyRead::ErrorMessage => {
                // What came before a break is message enough.
                let (Ok((text, _)) | Err((text, _))) = read_up_to(&mut resp, ERROR_BODY_LIMIT, None).await;
                // The connection is kept only if the whole body was read.
                resp.release();
                let text = String::from_utf8_lossy(&text);
                Err(status_failure(status, text.trim(), location.as_deref()))
            }
            BodyRead::Whole => {
                // Past the cap, one byte over is enough to say so.
                let hold = (&mut BodyHold::default(), self.cfg.max_buffer);
                match read_up_to(&mut resp, self.cfg.max_buffer.saturating_add(1), Some(hold)).await {
                    Ok((whole, at)) if whole.len() > self.cfg.max_buffer => reader.whole_body(&whole, at),
                    Ok((whole, at)) => {
                        reader.whole_body(&whole, at);
                        resp.release();
                    }
                    Err((_, Cut::OverBudget(m, at))) => reader.over_budget(m, at),
                    Err((_, Cut::Broken(m))) => {
                        reader.broken(format!("the connection broke while reading the body: {m}"))
                    }
                }
                Ok(())
            }
            BodyRead::Stream => {
                let ended = resp.stream(reader, deadline).await;
                match ended {
                    Ok(Some(at)) => {
                        reader.end_of_stream(at);
                        resp.release();
                    }
                    // Bytes that could not be read as the API's (malformed,
                    // or past the cap): the connection is dropped, not drained.
                    Ok(None) if reader.unreadable() => {}
                    // `[DONE]` or an error event before the body's end.
                    Ok(None) => resp.release_after_stop().await,
                    Err(m) => {
                        reader.end_of_stream(origin.elapsed());
                        reader.broken(format!("the connection broke mid-stream: {m}"));
                    }
                }
                Ok(())
            }
        }
    }
}

/// Why a body was left unread.
enum Cut {
    /// The connection broke.
    Broken(String),
    /// The process's budget for answers was passed, at the time given
    /// ([`BodyHold`]).
    OverBudget(String, Duration),
}

/// Reads a body into one buffer, stopping at its end or once it holds
/// `limit` bytes or more: the bytes and when the last of them came, or,
/// where the connection broke or `hold` (a body's count in the process's
/// budget, and its cap) said the budget was passed, the bytes so far and
/// why.
async fn read_up_to<R: WireResponse>(
    resp: &mut R,
    limit: usize,
    mut hold: Option<(&mut BodyHold, usize)>,
) -> Result<(Vec<u8>, Duration), (Vec<u8>, Cut)> {
    let mut body = Vec::new();
    loop {
        match resp.read().await {
            Ok(Read::Bytes(read)) => {
                for piece in read.pieces() {
                    body.extend_from_slice(piece);
                }
                if read.ends_body || body.len() >= limit {
                    return Ok((body, read.stamp.t));
                }
                if let Some(m) = hold.as_mut().and_then(|(h, cap)| h.hold(body.len(), *cap)) {
                    return Err((Vec::new(), Cut::OverBudget(m, read.stamp.t)));
                }
            }
            Ok(Read::End { at }) => return Ok((body, at)),
            Err(m) => return Err((body, Cut::Broken(m))),
        }
    }
}

/// How a response's body is read, once its head has been judged.
enum BodyRead {
    /// A failed status: the body is read, up to a limit, for its message.
    ErrorMessage,
    /// Whole (not streamed, or JSON where a stream was asked), up to `--max-buffer`.
    Whole,
    /// As a stream, chunk by chunk.
    Stream,
}

/// The prompt as one text: its own, a conversation's turns one per line
/// (separated by U+001E), or chat messages as JSON.
fn prompt_text(prompt: &crate::protocol::PromptBody) -> String {
    use crate::protocol::PromptBody;
    match prompt {
        PromptBody::Text(t) => t.clone(),
        PromptBody::Turns(turns) => turns.join("\u{1e}"),
        PromptBody::Messages(m) => serde_json::to_string(m).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    //! The reading policy over a scripted transport: what is made of each
    //! read, and what becomes of the connection, with no server. The real
    //! servers' tests (tests/hostile.rs, tests/http1.rs) drive both stacks.

    use super::wire::BodyBytes;
    use super::*;
    use crate::http1::ReadStamp;
    use crate::protocol::BodyOptions;
    use std::collections::VecDeque;
    use std::ops::Range;
    use std::sync::Mutex;

    /// One scripted step of a body: the pieces of one read (its stamp in
    /// ms, and whether it ended the body), the end, or a break.
    enum Step {
        Read(Vec<&'static [u8]>, u64, bool),
        End(u64),
        Broke,
    }

    /// What became of the connection, and how many reads were made.
    #[derive(Debug, Default, PartialEq)]
    struct Log {
        reads: usize,
        released: Option<&'static str>,
    }

    struct Fake {
        status: u16,
        content_type: &'static str,
        location: Option<&'static str>,
        steps: Mutex<Option<VecDeque<Step>>>,
        /// Past the script, reads of these bytes without end.
        endless: &'static [u8],
        log: Mutex<Log>,
    }

    struct FakeResponse<'f> {
        fake: &'f Fake,
        steps: VecDeque<Step>,
        buf: Vec<u8>,
        pieces: Vec<Range<usize>>,
        serial: u64,
    }

    impl<'f> Wire for &'f Fake {
        type Response = FakeResponse<'f>;

        async fn send(self, _: Outgoing<'_>, _: &mut u32) -> Result<FakeResponse<'f>, SendError> {
            let steps = self.steps.lock().unwrap().take().unwrap();
            Ok(FakeResponse { fake: self, steps, buf: Vec::new(), pieces: Vec::new(), serial: 0 })
        }
    }

    impl WireResponse for FakeResponse<'_> {
        fn head(&self) -> ResponseHead<'_> {
            ResponseHead {
                status: self.fake.status,
                content_type: Some(self.fake.content_type),
                location: self.fake.location,
                ..Default::default()
            }
        }

        fn first_byte(&self) -> Duration {
            Duration::from_millis(1)
        }

        fn send_took(&self, _sent: Duration) -> Option<Duration> {
            None
        }

        async fn read(&mut self) -> Result<Read<'_>, String> {
            self.fake.log.lock().unwrap().reads += 1;
            self.serial += 1;
            let step = match self.steps.pop_front() {
                Some(s) => s,
                None if !self.fake.endless.is_empty() => Step::Read(vec![self.fake.endless], 1000, false),
                None => Step::End(1000),
            };
            let (pieces, ms, ends) = match step {
                Step::Read(pieces, ms, ends) => (pieces, ms, ends),
                Step::End(ms) => return Ok(Read::End { at: Duration::from_millis(ms) }),
                Step::Broke => return Err("reset by peer".into()),
            };
            self.buf.clear();
            self.pieces.clear();
            for p in pieces {
                self.pieces.push(self.buf.len()..self.buf.len() + p.len());
                self.buf.extend_from_slice(p);
            }
            let stamp =
                ReadStamp { t: Duration::from_millis(ms), lag: None, serial: self.serial, since: Duration::ZERO };
            Ok(Read::Bytes(BodyBytes::new(&self.buf, &self.pieces, stamp, ends)))
        }

        fn release(self) {
            self.fake.log.lock().unwrap().released = Some("kept if it can be");
        }

        async fn release_after_stop(self) {
            self.fake.log.lock().unwrap().released = Some("after the rest is read");
        }
    }

    fn fake(status: u16, content_type: &'static str, steps: Vec<Step>) -> Fake {
        Fake {
            status,
            content_type,
            location: None,
            steps: Mutex::new(Some(steps.into())),
            endless: b"",
            log: Mutex::default(),
        }
    }

    /// A client (it sends nothing itself here) and the record and reader of
    /// one exchange over `wire`.
    async fn exchange(wire: &Fake, stream: bool, max_buffer: usize) -> (RequestRecord, Result<(), Outcome>) {
        let body = BodyOptions { model: "m".into(), stream, ..Default::default() };
        let cfg = ClientConfig {
            base_url: "http://127.0.0.1:9".into(),
            api_key: None,
            body,
            timeout: Duration::from_secs(1),
            transport: Transport::Reqwest,
            stamps: Stamps::Read,
            key_header: Default::default(),
            headers: vec![],
            cancel: None,
            max_buffer,
        };
        let client = Client::new(cfg, None).unwrap();
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        let mut reader = ResponseReader::new(false).limited(max_buffer);
        let out = Outgoing { body: vec![], headers: &[], accept: None, origin: Instant::now() };
        let res = client.exchange_over(wire, out, &mut rec, &mut reader, None).await;
        reader.into_record(&mut rec, None, &crate::protocol::PromptBody::Text(String::new()));
        (rec, res)
    }

    const A: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
    const DONE: &[u8] = b"data: [DONE]\n\n";

    #[tokio::test]
    async fn a_stream_is_stamped_by_read_and_its_connection_kept_when_the_framing_ended() {
        // Two chunks in one read (two HTTP chunks' pieces), then [DONE]
        // with the body's framed end.
        let steps =
            vec![Step::Read(vec![A], 5, false), Step::Read(vec![A, A], 9, false), Step::Read(vec![DONE], 12, true)];
        let wire = fake(200, "text/event-stream", steps);
        let (rec, res) = exchange(&wire, true, MAX_BUFFER).await;
        assert_eq!((res, &rec.outcome), (Ok(()), &Outcome::Success));
        let ms = |c: goodput_core::OutputChunk| c.t.as_millis();
        assert_eq!(rec.chunks.iter().map(ms).collect::<Vec<_>>(), [5, 9, 9]);
        assert_eq!(rec.shared_reads, 1, "the second read brought two chunks");
        assert_eq!(rec.stream_end, Some(Duration::from_millis(12)));
        assert_eq!(*wire.log.lock().unwrap(), Log { reads: 3, released: Some("kept if it can be") });
    }

    #[tokio::test]
    async fn a_stream_stopped_before_its_end_is_drained_unless_unreadable() {
        // [DONE] before the framing's last chunk: the rest is read.
        let wire = fake(200, "text/event-stream", vec![Step::Read(vec![A, DONE], 5, false)]);
        let (rec, _) = exchange(&wire, true, MAX_BUFFER).await;
        assert_eq!(rec.outcome, Outcome::Success);
        assert_eq!(wire.log.lock().unwrap().released, Some("after the rest is read"));
        // Malformed bytes: nothing after them is waited for.
        let wire = fake(200, "text/event-stream", vec![Step::Read(vec![b"data: {oops\n\n"], 5, false)]);
        let (rec, _) = exchange(&wire, true, MAX_BUFFER).await;
        assert_eq!(rec.outcome.failure_kind(), Some(FailureKind::InvalidResponse));
        assert_eq!(*wire.log.lock().unwrap(), Log { reads: 1, released: None });
        // A break mid-stream: truncated, at the break.
        let wire = fake(200, "text/event-stream", vec![Step::Read(vec![A], 5, false), Step::Broke]);
        let (rec, _) = exchange(&wire, true, MAX_BUFFER).await;
        assert_eq!(rec.outcome.failure_kind(), Some(FailureKind::TruncatedStream));
        assert_eq!(wire.log.lock().unwrap().released, None);
    }

    #[tokio::test]
    async fn an_endless_error_body_is_read_to_its_cap_and_a_redirect_names_where() {
        let mut wire = fake(500, "text/plain", vec![]);
        wire.endless = Box::leak(vec![b'x'; 16 * 1024].into_boxed_slice());
        let (rec, res) = exchange(&wire, true, MAX_BUFFER).await;
        assert_eq!(rec.http_status, Some(500));
        let Err(Outcome::Failed { kind, message }) = res else { panic!("{res:?}") };
        assert_eq!(kind, FailureKind::HttpStatus);
        assert!(message.starts_with("HTTP 500 Internal Server Error: xxx"), "{message}");
        // 64 KiB in reads of 16 KiB.
        assert_eq!(*wire.log.lock().unwrap(), Log { reads: 4, released: Some("kept if it can be") });
        let mut wire = fake(302, "text/html", vec![]);
        wire.location = Some("http://elsewhere/v1");
        let (_, res) = exchange(&wire, true, MAX_BUFFER).await;
        let Err(Outcome::Failed { kind, message }) = res else { panic!("{res:?}") };
        assert_eq!(kind, FailureKind::HttpStatus);
        assert!(message.contains("a redirect to http://elsewhere/v1, not followed"), "{message}");
    }

    #[tokio::test]
    async fn a_whole_body_is_read_to_its_end_or_one_byte_past_the_cap() {
        let body: &[u8] = b"{\"choices\":[{\"message\":{\"content\":\"hi\"}}]}";
        let (head, tail) = body.split_at(10);
        let wire =
            fake(200, "application/json", vec![Step::Read(vec![head], 5, false), Step::Read(vec![tail], 7, false)]);
        let (rec, _) = exchange(&wire, false, MAX_BUFFER).await;
        assert_eq!(rec.outcome, Outcome::Success);
        assert_eq!(rec.stream_end, Some(Duration::from_millis(1000)), "when the end was known");
        assert_eq!(*wire.log.lock().unwrap(), Log { reads: 3, released: Some("kept if it can be") });
        // A cap of 12 bytes: the second read passes it, and no more is read.
        let wire =
            fake(200, "application/json", vec![Step::Read(vec![head], 5, false), Step::Read(vec![tail], 7, false)]);
        let (rec, _) = exchange(&wire, false, 12).await;
        assert_eq!(rec.outcome.failure_kind(), Some(FailureKind::InvalidResponse));
        assert_eq!(rec.stream_end, Some(Duration::from_millis(7)));
        assert_eq!(*wire.log.lock().unwrap(), Log { reads: 2, released: None });
    }

    /// An exchange whose every poll spends the task's cooperative budget
    /// (reads of a socket that always has bytes: a server's flood) still
    /// meets its deadline, its `--cancel` time and a cancel. The timers had
    /// been polled within the spent budget, which kept them `Pending` poll
    /// after poll: the request outlived its timeout as long as the flood
    /// lasted. (The watchdog is `tokio::time::timeout`, which polls its
    /// timer outside a budget its future spent.)
    #[tokio::test]
    async fn an_exchange_that_spends_its_budget_meets_its_deadline_and_its_cancel() {
        tokio::spawn(async {
            async fn flood() -> Result<(), Outcome> {
                loop {
                    tokio::task::coop::consume_budget().await;
                }
            }
            let timeout = || Outcome::Failed { kind: FailureKind::Timeout, message: "timed out".into() };
            let (soon, watchdog) = (Duration::from_millis(100), Duration::from_secs(30));
            let far = Instant::now() + Duration::from_secs(3600);
            let never = CancellationToken::new();
            let deadline = Instant::now() + soon;
            let out =
                tokio::time::timeout(watchdog, race(std::pin::pin!(flood()), &never, None, deadline, timeout)).await;
            assert!(matches!(out, Ok((Some(Outcome::Failed { kind: FailureKind::Timeout, .. }), false))), "{out:?}");
            let give_up = Some(Instant::now() + soon);
            let out =
                tokio::time::timeout(watchdog, race(std::pin::pin!(flood()), &never, give_up, far, timeout)).await;
            assert!(matches!(out, Ok((Some(Outcome::Cancelled), true))), "{out:?}");
            let abort = CancellationToken::new();
            let cancel = abort.clone();
            let canceller = tokio::spawn(async move {
                tokio::time::sleep(soon).await;
                cancel.cancel();
            });
            let out = tokio::time::timeout(watchdog, race(std::pin::pin!(flood()), &abort, None, far, timeout)).await;
            assert!(matches!(out, Ok((Some(Outcome::Cancelled), false))), "{out:?}");
            canceller.await.unwrap();
        })
        .await
        .unwrap();
    }
}
