//! The HTTP client that turns one work item into one `RequestRecord`. The
//! byte-level reading is the pure [`ResponseReader`]; `Client::execute` adds
//! the socket, the clock and the timeout.

mod failure;
mod headers;
mod settings;

pub use failure::{error_chain, tls_hint};
pub use headers::{check_header, join_url, key_header_overridden, normalize_base, request_headers, secrets_of};
pub use settings::{Cancellation, ClientConfig, Transport, MAX_BUFFER};

use crate::error::ClientError;
use crate::http1::{HeadError, Http1, ReadStamp, Stamps};
use crate::protocol::{build_body_for, Api};
use crate::reader::ResponseReader;
use crate::tokenizer::TokenCounter;
use crate::workload::WorkItem;
use failure::{
    compressed, connect_or_resource, empty_status, foreign_content, is_parse_error, read_limited, status_failure,
    ERROR_BODY_LIMIT,
};
use goodput_core::util::redact::Secrets;
use goodput_core::{FailureKind, Outcome, RequestRecord};
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Sleeps until `at`, or forever when there is none.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Sends requests and records them.
pub struct Client {
    http: reqwest::Client,
    native: Option<Http1>,
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

impl Client {
    pub fn new(cfg: ClientConfig, tokenizer: Option<Arc<TokenCounter>>) -> Result<Self, ClientError> {
        let base = normalize_base(&cfg.base_url);
        let bad_url = |e: url::ParseError| ClientError::Url { url: cfg.base_url.clone(), reason: e.to_string() };
        let parsed = reqwest::Url::parse(&base).map_err(bad_url)?;
        if !matches!(parsed.scheme(), "http" | "https") {
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
        let native = match cfg.transport {
            Transport::Auto if parsed.scheme() == "http" && (loopback(&parsed) || !behind_proxy()) => {
                let url = reqwest::Url::parse(&endpoint).map_err(bad_url)?;
                let h = Http1::new(&url)?;
                Some(h.with_stamps(cfg.stamps)?)
            }
            _ => None,
        };
        if cfg.stamps == Stamps::Kernel && native.is_none() {
            return Err(ClientError::KernelStamps);
        }
        let headers = request_headers(cfg.body.api, cfg.api_key.as_deref(), cfg.key_header, &cfg.headers)?;
        let templated = cfg.headers.iter().any(|(_, v)| v.contains("{session}") || v.contains("{request}"));
        let secrets = secrets_of(cfg.api_key.as_deref(), &headers, &cfg.base_url);
        Ok(Client {
            http,
            native,
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

    /// Scores answers and keeps texts as `quality` says.
    pub fn with_quality(self, quality: QualityOptions) -> Self {
        Client { quality, ..self }
    }

    /// The stack that carries this client's requests, for reports.
    pub fn transport_name(&self) -> &'static str {
        if self.native.is_some() {
            "goodput http/1.1"
        } else {
            "reqwest"
        }
    }

    /// `kernel` or `read`: how this client stamps chunks, `Auto` resolved
    /// (reqwest can only stamp reads).
    pub fn stamp_name(&self) -> &'static str {
        self.native.as_ref().map_or("read", |h| h.stamps().name())
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
        rec.counts.requested_completion = item.max_tokens.map(u64::from);
        let body = match body {
            Ok(b) => b,
            Err(e) => {
                rec.outcome = Outcome::Failed { kind: FailureKind::InvalidResponse, message: e.to_string() };
                return (rec, None);
            }
        };
        let deadline = Instant::now() + self.cfg.timeout;
        let give_up = self.cfg.cancel.filter(|c| c.picks_request(id, item.session)).map(|c| Instant::now() + c.after);
        // The answer's content is always kept for its hash (and its scores).
        let mut reader = ResponseReader::new(self.tokenizer.is_some())
            .for_api(self.cfg.body.api)
            .limited(self.cfg.max_buffer)
            .keeping_reply();
        let mut early: Option<Outcome> = None;
        {
            let exchange = self.exchange(body, &headers, &mut rec, &mut reader, origin);
            tokio::select! {
                res = exchange => if let Err(o) = res { early = Some(o) },
                _ = tokio::time::sleep_until(deadline) => early = Some(Outcome::Failed {
                    kind: FailureKind::Timeout,
                    message: format!("no complete response within {:?}", self.cfg.timeout),
                }),
                _ = abort.cancelled() => early = Some(Outcome::Cancelled),
                _ = sleep_until_some(give_up) => {
                    rec.abandoned = true;
                    early = Some(Outcome::Cancelled);
                }
            }
        }
        rec.end = origin.elapsed();
        let prompt = &item.prompt;
        let reply = reader.take_reply();
        reader.into_record(&mut rec, self.tokenizer.as_deref(), prompt);
        if let Some(o) = early {
            rec.outcome = o;
        }
        if let Some(t) = rec.chunks.last().map(|c| c.t).or(rec.stream_end) {
            rec.end = rec.end.max(t);
        }
        if let Outcome::Failed { message, .. } = &mut rec.outcome {
            if let Cow::Owned(m) = self.secrets.redact(message) {
                *message = m;
            }
        }
        self.note_answer(&mut rec, item, reply.as_deref()).await;
        (rec, reply.filter(|_| keep_reply))
    }

    /// What a record keeps of the exchange's texts: the prompt's and the
    /// answer's hashes, the answer's scores against the item's reference,
    /// its words' hashes when the prompt is repeated, and the texts
    /// themselves only when asked (`--keep-text`).
    async fn note_answer(&self, rec: &mut RequestRecord, item: &WorkItem, reply: Option<&str>) {
        let prompt = prompt_text(&item.prompt);
        rec.prompt_hash = Some(goodput_core::util::hash::text_hash(&prompt));
        rec.repeat = item.repeat;
        let answer = reply.filter(|_| rec.outcome.is_success());
        if let Some(answer) = answer {
            rec.output_hash = Some(goodput_core::util::hash::text_hash(answer));
            if !item.reference.is_empty() {
                // Scoring a long answer takes a while: off the task that
                // reads streams, so it makes no other request's read late.
                let (a, refs, scorers) = (answer.to_owned(), item.reference.clone(), self.quality.scorers.clone());
                rec.quality = tokio::task::spawn_blocking(move || goodput_core::quality::score(&a, &refs, &scorers))
                    .await
                    .ok()
                    .flatten();
            }
            if item.repeat.is_some() {
                rec.output_words = Some(goodput_core::util::hash::word_hashes(answer));
            }
        }
        if self.quality.keep_text {
            rec.prompt_text = Some(prompt);
            rec.output_text = answer.map(str::to_owned);
            rec.reference = (!item.reference.is_empty()).then(|| item.reference.to_vec());
        }
    }

    /// What both transports do alike once a response's head has come: note
    /// its status, `Retry-After` and the server's name, and say how its body
    /// is to be read. `Err`: the response failed on its head alone.
    fn on_head(&self, rec: &mut RequestRecord, head: ResponseHead) -> Result<BodyRead, Outcome> {
        rec.http_status = Some(head.status);
        rec.retry_after = head.retry_after.map(str::to_owned);
        if self.server.get().is_none() {
            if let Some(s) = head.server {
                let _ = self.server.set(s.to_owned());
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

    /// The HTTP exchange. `Err` carries an outcome decided before any body.
    async fn exchange(
        &self,
        body: Vec<u8>,
        headers: &[(String, String)],
        rec: &mut RequestRecord,
        reader: &mut ResponseReader,
        origin: Instant,
    ) -> Result<(), Outcome> {
        if let Some(h) = &self.native {
            return self.exchange_native(h, body, headers, rec, reader, origin).await;
        }
        let mut req = self.http.post(&self.endpoint).header("content-type", "application/json").body(body);
        if self.cfg.body.stream {
            req = req.header("accept", self.api().stream_accept());
        }
        for (name, value) in headers {
            req = req.header(name, value);
        }
        let mut resp = match req.send().await {
            Ok(r) => r,
            // No resend here: hyper itself sends a request again only when
            // its pooled connection closed before the request was written,
            // the one case where it provably never reached the server.
            Err(e) if e.is_timeout() => {
                return Err(Outcome::Failed { kind: FailureKind::Timeout, message: error_chain(&e) })
            }
            // hyper refuses an oversized or broken head as a parse error.
            Err(e) if is_parse_error(&e) => {
                let chain = error_chain(&e);
                // hyper says only "invalid content-length parsed", for one
                // that is not a number and for two that differ alike.
                let message = if chain.contains("content-length") {
                    format!(
                        "an invalid Content-Length, or two different Content-Length headers, in the response: where \
                         its body ends cannot be known ({chain})"
                    )
                } else {
                    chain
                };
                return Err(Outcome::Failed { kind: FailureKind::InvalidResponse, message });
            }
            Err(e) => return Err(connect_or_resource(error_chain(&e))),
        };
        rec.first_byte = Some(origin.elapsed());
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok());
        let head = ResponseHead {
            status: resp.status().as_u16(),
            retry_after: header("retry-after"),
            server: header("server"),
            content_type: header("content-type"),
            content_encoding: header("content-encoding"),
        };
        let location = header("location").map(str::to_owned);
        match self.on_head(rec, head)? {
            BodyRead::ErrorMessage => {
                let text = read_limited(&mut resp, ERROR_BODY_LIMIT).await;
                return Err(status_failure(resp.status().as_u16(), &text, location.as_deref()));
            }
            BodyRead::Stream => {}
            BodyRead::Whole => {
                let mut whole = Vec::new();
                loop {
                    match resp.chunk().await {
                        Ok(Some(b)) => {
                            whole.extend_from_slice(&b);
                            // Past the cap, one byte over is enough to say so.
                            if whole.len() > self.cfg.max_buffer {
                                break;
                            }
                        }
                        Ok(None) => break,
                        Err(e) => {
                            reader.broken(format!("the connection broke while reading the body: {}", error_chain(&e)));
                            return Ok(());
                        }
                    }
                }
                reader.whole_body(&whole, origin.elapsed());
                return Ok(());
            }
        }
        let mut serial = 0;
        loop {
            match resp.chunk().await {
                Ok(Some(bytes)) => {
                    // Stamped before any parsing: the moment the bytes left the socket.
                    let t = origin.elapsed();
                    serial += 1;
                    reader.feed(&bytes, ReadStamp { t, lag: None, serial });
                    if reader.finished() {
                        break;
                    }
                }
                Ok(None) => {
                    reader.end_of_stream(origin.elapsed());
                    break;
                }
                Err(e) => {
                    reader.end_of_stream(origin.elapsed());
                    reader.broken(format!("the connection broke mid-stream: {}", error_chain(&e)));
                    break;
                }
            }
        }
        Ok(())
    }

    /// The exchange over our own HTTP/1.1 reader ([`Http1`]).
    async fn exchange_native(
        &self,
        h: &Http1,
        body: Vec<u8>,
        headers: &[(String, String)],
        rec: &mut RequestRecord,
        reader: &mut ResponseReader,
        origin: Instant,
    ) -> Result<(), Outcome> {
        let accept = self.cfg.body.stream.then(|| self.api().stream_accept());
        let request = h.request(&body, headers, accept);
        // Stamped right after each read, before any parsing.
        let mut clock = || origin.elapsed();
        let (mut conn, mut head, head_read) = loop {
            // After a failed try, a fresh connection.
            let kept = if rec.retries == 0 { h.checkout() } else { None };
            let reused = kept.is_some();
            let mut conn = match kept {
                Some(c) => c,
                None => h.connect().await.map_err(|e| connect_or_resource(e.to_string()))?,
            };
            match conn.send(&request, &mut clock).await {
                Ok((head, first, head_read)) => {
                    rec.first_byte = Some(first);
                    break (conn, head, head_read);
                }
                // A kept connection the server closed as the request went
                // out (llama.cpp closes after every stream while it says
                // keep-alive): the close was on its way before the request,
                // which is sent once more on a fresh connection, and counted.
                // A fresh connection dropped before the response is the
                // server's failure, never sent again: a resend would hide it
                // and load the server with a request nobody planned.
                Err(HeadError::ClosedBeforeResponse(_)) if reused && rec.retries == 0 => rec.retries += 1,
                Err(HeadError::ClosedBeforeResponse(m)) => return Err(connect_or_resource(m)),
                Err(HeadError::Invalid(message)) => {
                    return Err(Outcome::Failed { kind: FailureKind::InvalidResponse, message })
                }
            }
        };
        let said = ResponseHead {
            status: head.status,
            retry_after: head.retry_after.as_deref(),
            server: head.server.as_deref(),
            content_type: head.content_type.as_deref(),
            content_encoding: head.content_encoding.as_deref(),
        };
        match self.on_head(rec, said)? {
            BodyRead::ErrorMessage => {
                // The connection is kept only if the whole body was read.
                let (text, _) = conn.read_all(&mut head, &mut clock, head_read, ERROR_BODY_LIMIT).await;
                h.checkin(conn, &head);
                return Err(status_failure(
                    head.status,
                    String::from_utf8_lossy(&text).trim(),
                    head.location.as_deref(),
                ));
            }
            BodyRead::Stream => {}
            BodyRead::Whole => {
                let cap = self.cfg.max_buffer.saturating_add(1);
                let (whole, read) = conn.read_all(&mut head, &mut clock, head_read, cap).await;
                match read {
                    Ok(end) if whole.len() > self.cfg.max_buffer => reader.whole_body(&whole, end.at),
                    Ok(end) => {
                        reader.whole_body(&whole, end.at);
                        h.checkin(conn, &head);
                    }
                    Err(m) => reader.broken(format!("the connection broke while reading the body: {m}")),
                }
                return Ok(());
            }
        }
        let read = conn
            .read_body(
                &mut head,
                &mut clock,
                &mut |p, read| {
                    reader.feed(p, read);
                    !reader.finished()
                },
                head_read,
            )
            .await;
        match read {
            Ok(end) if end.complete => {
                reader.end_of_stream(end.at);
                h.checkin(conn, &head);
            }
            // Bytes that could not be read as the API's (malformed, or past
            // the cap): the connection is dropped, not drained.
            Ok(_) if reader.unreadable() => {}
            // `[DONE]` or an error event: the rest of the framing (the last
            // chunk) normally follows at once; read it so that the
            // connection can carry the next request.
            Ok(_) => {
                let mut ignore = |_: &[u8], _| true;
                let rest = conn.read_body(&mut head, &mut clock, &mut ignore, head_read);
                let _ = tokio::time::timeout(Duration::from_millis(500), rest).await;
                h.checkin(conn, &head);
            }
            Err(m) => {
                reader.end_of_stream(origin.elapsed());
                reader.broken(format!("the connection broke mid-stream: {m}"));
            }
        }
        Ok(())
    }
}

/// A response's head, as either transport read it.
struct ResponseHead<'a> {
    status: u16,
    retry_after: Option<&'a str>,
    server: Option<&'a str>,
    content_type: Option<&'a str>,
    content_encoding: Option<&'a str>,
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
