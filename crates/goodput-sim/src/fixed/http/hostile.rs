//! The hostile cases of `--fault CASE:RATE` ([`Hostile`]): responses the
//! connection task writes itself, as raw bytes, rather than through the
//! emitter. The parts of a response that are still valid keep the plan's
//! times (the preamble on arrival, each token chunk when due), so what a
//! client measures before the fault is measured as usual; the fault comes
//! where the older injected faults come, halfway through the output.

use super::{head, Conn, CT_JSON};
use crate::faults::Hostile;
use crate::fixed::emitter::frame;
use crate::fixed::Plan;
use crate::openai::Usage;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

/// The padding header of `oversized-header`: far past any client's limit on
/// a response head (goodput's is 64 KiB, hyper's about 400 KiB).
const HEAD_PADDING: usize = 1 << 20;
/// Each write of an endless line.
const ENDLESS_WRITE: usize = 64 * 1024;
/// An endless line pauses a millisecond after every this many bytes, so a
/// client that reads without end still gets no more than about a gigabyte a
/// second, and the server never spins.
const ENDLESS_BURST: usize = 1 << 20;
/// The bytes `non-utf8` puts into a token's text.
const NOT_UTF8: &[u8] = b"\xff\xfe";
/// The page `html-200` answers with: a login form, as a proxy in front of
/// the API would send.
const HTML: &str = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\
                    <body><form action=\"/login\" method=\"post\">Please sign in to continue.</form></body></html>\n";
/// How long `close-after-response` waits, after its response, for the
/// client's next request before closing the connection.
const CLOSE_AFTER: Duration = Duration::from_millis(100);
/// The end of a chunked body.
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// What a hostile stream writes: pieces `..upto` (the fault's piece, `mid`,
/// replaced by `changed` when there is one), then `after`, then `ending`.
struct StreamScript {
    upto: usize,
    mid: usize,
    changed: Option<Vec<u8>>,
    after: Vec<Piece>,
    ending: Ending,
}

impl StreamScript {
    /// The script of the streamed case `case` on `plan`.
    fn of(case: Hostile, plan: &Plan) -> StreamScript {
        let route = plan.writer.route();
        // Piece 0 is the preamble, piece i + 1 token chunk i, the last the
        // close; each made when it is written, as the emitter makes them.
        let count = plan.n_chunks as usize + 2;
        let mid = 1 + plan.fault_at() as usize;
        let fault = piece(plan, mid);
        let last_at = piece_at(plan, count - 1);
        let k = plan.tokens_per_chunk;
        let from = plan.fault_at() * k;
        let text = plan.writer.text(from, (from + k).min(plan.n_out));
        // What is written: pieces `..upto`, the fault's piece changed, then
        // `after`, then the ending.
        let mut upto = count;
        let mut changed = None;
        let mut after = Vec::new();
        let mut ending = Ending::Complete;
        match case {
            Hostile::MalformedJson => {
                let mut payload = fault.payload;
                break_json(&mut payload);
                changed = Some(payload);
            }
            Hostile::NonUtf8 => {
                let mut payload = fault.payload;
                insert_before(&mut payload, text.as_bytes(), NOT_UTF8);
                changed = Some(payload);
            }
            Hostile::DataAfterDone => {
                for i in 0..2 {
                    let payload = plan.writer.tokens(plan.n_out + i, plan.n_out + i + 1).to_vec();
                    after.push(Piece { at: last_at, payload });
                }
            }
            Hostile::UsageOnly => {
                upto = 1;
                after.push(Piece { at: last_at, payload: plan.writer.usage_only(plan.prompt_tokens).to_vec() });
            }
            Hostile::EventError => {
                upto = mid;
                let message = "injected fault: the engine failed mid-stream";
                let payload = if route.ollama() {
                    format!("{}\n", route.error_body(500, message))
                } else {
                    format!("event: error\ndata: {}\n\n", route.error_body(500, message))
                };
                after.push(Piece { at: fault.at, payload: payload.into_bytes() });
            }
            Hostile::ResetDuring => {
                upto = mid;
                ending = Ending::Reset(fault.at);
            }
            Hostile::BrokenChunked => {
                upto = mid;
                let mut broken = b"zz\r\n".to_vec();
                broken.extend_from_slice(&fault.payload);
                ending = Ending::Broken(fault.at, broken);
            }
            Hostile::EndlessLine => {
                upto = mid;
                let mut start = fault.payload;
                start.truncate(find(&start, text.as_bytes()).unwrap_or(start.len()));
                ending = Ending::Endless(fault.at, start);
            }
            // Played as they are: the trickle's pace and the close after
            // the response are in how they are written.
            Hostile::Trickle | Hostile::CloseAfterResponse => {}
            // Answered before the body (see `hostile`).
            Hostile::ResetBefore
            | Hostile::NeverAnswer
            | Hostile::OversizedHeader
            | Hostile::TooManyRequests
            | Hostile::Unavailable
            | Hostile::Html200 => {}
        }
        StreamScript { upto, mid, changed, after, ending }
    }
}

/// One payload of a response and when it is due.
struct Piece {
    at: Instant,
    payload: Vec<u8>,
}

/// How a hostile stream ends once its pieces are written.
enum Ending {
    /// The body's end (the last chunk of the chunked framing).
    Complete,
    /// No end: the connection reset at the time of the fault.
    Reset(Instant),
    /// At the time of the fault, these bytes where a chunk size should be,
    /// then the connection closed.
    Broken(Instant, Vec<u8>),
    /// At the time of the fault, this start of a line, then `a`s without end.
    Endless(Instant, Vec<u8>),
}

impl Conn {
    /// Answers a request that drew the hostile case `case`; `Ok(true)` when
    /// the connection stays open for another request.
    pub(super) async fn hostile(
        &mut self,
        case: Hostile,
        plan: Plan,
        keep: bool,
        http11: bool,
        trickle_gap: Duration,
        stop: &mut watch::Receiver<bool>,
    ) -> std::io::Result<bool> {
        let route = plan.writer.route();
        match case {
            Hostile::ResetBefore => {
                self.reset();
                return Ok(false);
            }
            Hostile::NeverAnswer => {
                self.hold(stop).await;
                return Ok(false);
            }
            Hostile::OversizedHeader => {
                let padding = format!("X-Padding: {}\r\n", "a".repeat(HEAD_PADDING));
                let out = head(200, route.stream_content_type(), Some(0), false, &padding);
                self.sock.write_all(&out).await?;
                return Ok(false);
            }
            Hostile::TooManyRequests | Hostile::Unavailable => {
                let (status, message) = match case {
                    Hostile::TooManyRequests => (429, "injected fault: rate limit reached, retry after 1 s"),
                    _ => (503, "injected fault: the server is overloaded, retry after 1 s"),
                };
                let body = route.error_body(status, message);
                self.respond(status, CT_JSON, body.as_bytes(), keep, "Retry-After: 1\r\n").await?;
                return Ok(keep);
            }
            Hostile::Html200 => {
                self.respond(200, "text/html; charset=utf-8", HTML.as_bytes(), keep, "").await?;
                return Ok(keep);
            }
            _ => {}
        }
        if plan.stream {
            self.hostile_stream(case, &plan, keep, http11, trickle_gap, stop).await
        } else {
            self.hostile_whole(case, &plan, keep, trickle_gap, stop).await
        }
    }

    /// The streamed cases.
    async fn hostile_stream(
        &mut self,
        case: Hostile,
        plan: &Plan,
        keep: bool,
        http11: bool,
        trickle_gap: Duration,
        stop: &mut watch::Receiver<bool>,
    ) -> std::io::Result<bool> {
        let route = plan.writer.route();
        let chunked = http11;
        // Without chunked framing (an HTTP/1.0 client) the body ends at the close.
        let keep = keep && chunked;
        let StreamScript { upto, mid, changed, after, ending } = StreamScript::of(case, plan);
        let extra = if chunked {
            "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
        } else {
            "Cache-Control: no-cache\r\n"
        };
        let head = head(200, route.stream_content_type(), None, keep, extra);
        let pieces = (0..upto)
            .map(|i| match &changed {
                Some(payload) if i == mid => Piece { at: piece_at(plan, i), payload: payload.clone() },
                _ => piece(plan, i),
            })
            .chain(after);
        let trickle = (case == Hostile::Trickle).then_some(trickle_gap);
        let mut w = Writer { out: head, trickle: trickle.map(|gap| (Instant::now(), gap, 0)) };
        for p in pieces {
            if w.trickle.is_none() && p.at > Instant::now() {
                w.flush(&mut self.sock).await?;
                sleep_until(p.at).await;
            }
            frame(&mut w.out, &p.payload, chunked);
            if w.trickle.is_some() {
                w.flush(&mut self.sock).await?;
            }
        }
        self.end_stream(w, ending, case, keep, chunked, stop).await
    }

    /// Writes a hostile stream's `ending` after its pieces.
    async fn end_stream(
        &mut self,
        mut w: Writer,
        ending: Ending,
        case: Hostile,
        keep: bool,
        chunked: bool,
        stop: &mut watch::Receiver<bool>,
    ) -> std::io::Result<bool> {
        match ending {
            Ending::Complete => {
                if chunked {
                    w.out.extend_from_slice(LAST_CHUNK);
                }
                w.flush(&mut self.sock).await?;
                if case == Hostile::CloseAfterResponse {
                    self.close_soon().await;
                    return Ok(false);
                }
                Ok(keep)
            }
            Ending::Reset(at) => {
                w.flush(&mut self.sock).await?;
                sleep_until(at).await;
                self.reset();
                Ok(false)
            }
            Ending::Broken(at, bytes) => {
                w.flush(&mut self.sock).await?;
                sleep_until(at).await;
                self.sock.write_all(&bytes).await?;
                let _ = self.sock.shutdown().await;
                Ok(false)
            }
            Ending::Endless(at, start) => {
                w.flush(&mut self.sock).await?;
                sleep_until(at).await;
                self.endless(&start, chunked, stop).await;
                Ok(false)
            }
        }
    }

    /// The cases on a whole (non-streamed) response: the same faults in the
    /// one JSON body, at the time the whole response is due.
    async fn hostile_whole(
        &mut self,
        case: Hostile,
        plan: &Plan,
        keep: bool,
        trickle_gap: Duration,
        stop: &mut watch::Receiver<bool>,
    ) -> std::io::Result<bool> {
        let route = plan.writer.route();
        sleep_until(plan.due(plan.n_chunks.saturating_sub(1))).await;
        let mut body = plan
            .writer
            .whole(Usage::new(plan.prompt_tokens, plan.n_out), plan.writer.finish_reason())
            .to_string()
            .into_bytes();
        let text = plan.writer.text(0, plan.n_out);
        let half = body.len() / 2;
        match case {
            Hostile::MalformedJson => break_json(&mut body),
            Hostile::NonUtf8 => insert_before(&mut body, text.as_bytes(), NOT_UTF8),
            Hostile::UsageOnly => {
                body = plan.writer.whole(Usage::new(plan.prompt_tokens, 0), "stop").to_string().into_bytes();
            }
            Hostile::EventError => {
                body = route.error_body(500, "injected fault: the engine failed").into_bytes();
            }
            Hostile::ResetDuring => {
                let mut out = head(200, CT_JSON, Some(body.len()), keep, "");
                out.extend_from_slice(&body[..half]);
                self.sock.write_all(&out).await?;
                self.reset();
                return Ok(false);
            }
            Hostile::BrokenChunked => {
                let mut out = head(200, CT_JSON, None, keep, "Transfer-Encoding: chunked\r\n");
                frame(&mut out, &body[..half], true);
                out.extend_from_slice(b"zz\r\n");
                out.extend_from_slice(&body[half..]);
                self.sock.write_all(&out).await?;
                let _ = self.sock.shutdown().await;
                return Ok(false);
            }
            Hostile::EndlessLine => {
                let cut = find(&body, text.as_bytes()).unwrap_or(body.len());
                self.sock.write_all(&head(200, CT_JSON, None, false, "")).await?;
                self.endless(&body[..cut], false, stop).await;
                return Ok(false);
            }
            Hostile::Trickle => {
                let mut w = Writer {
                    out: head(200, CT_JSON, Some(body.len()), keep, ""),
                    trickle: Some((Instant::now(), trickle_gap, 0)),
                };
                w.out.extend_from_slice(&body);
                w.flush(&mut self.sock).await?;
                return Ok(keep);
            }
            // `[DONE]` is a stream's: a whole response is answered as it is.
            Hostile::DataAfterDone | Hostile::CloseAfterResponse => {}
            Hostile::ResetBefore
            | Hostile::NeverAnswer
            | Hostile::OversizedHeader
            | Hostile::TooManyRequests
            | Hostile::Unavailable
            | Hostile::Html200 => {}
        }
        self.respond(200, CT_JSON, &body, keep, "").await?;
        if case == Hostile::CloseAfterResponse {
            self.close_soon().await;
            return Ok(false);
        }
        Ok(keep)
    }

    /// Writes `start`, then `a`s in chunks until the client hangs up or the
    /// server shuts down.
    async fn endless(&mut self, start: &[u8], chunked: bool, stop: &mut watch::Receiver<bool>) {
        let mut out = Vec::with_capacity(ENDLESS_WRITE + 16);
        frame(&mut out, start, chunked);
        if self.sock.write_all(&out).await.is_err() {
            return;
        }
        let fill = vec![b'a'; ENDLESS_WRITE];
        out.clear();
        frame(&mut out, &fill, chunked);
        let mut burst = 0;
        loop {
            tokio::select! {
                r = self.sock.write_all(&out) => if r.is_err() { return },
                _ = stop.wait_for(|s| *s) => return,
            }
            burst += fill.len();
            if burst >= ENDLESS_BURST {
                burst = 0;
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }

    /// Holds the connection without a word until the client closes it (or
    /// the server shuts down), discarding what it sends.
    async fn hold(&mut self, stop: &mut watch::Receiver<bool>) {
        let mut scrap = [0u8; 4096];
        loop {
            tokio::select! {
                r = self.sock.read(&mut scrap) => if matches!(r, Ok(0) | Err(_)) { return },
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }

    /// After a response that said keep-alive: waits until the client's next
    /// request has come, or [`CLOSE_AFTER`], so that the close (left to the
    /// caller) meets a request already on its way, unread: the race a pooled
    /// client meets with a server that closes after every response
    /// (llama-server), played every time rather than now and then.
    async fn close_soon(&mut self) {
        let _ = tokio::time::timeout(CLOSE_AFTER, self.sock.readable()).await;
    }

    /// Makes the connection's close a reset (RST): `SO_LINGER` 0.
    fn reset(&self) {
        let _ = socket2::SockRef::from(&self.sock).set_linger(Some(Duration::ZERO));
    }
}

/// Piece `i` of the stream `plan` describes: the preamble on arrival
/// (`i` = 0), token chunk `i` − 1 when due, and the close with the last.
fn piece(plan: &Plan, i: usize) -> Piece {
    let w = &plan.writer;
    let payload = match i as u64 {
        0 => w.preamble(Usage::new(plan.prompt_tokens, 0)),
        i if i <= plan.n_chunks => {
            let k = plan.tokens_per_chunk;
            w.tokens((i - 1) * k, (i * k).min(plan.n_out))
        }
        _ => w.close(w.finish_reason(), plan.usage.map(|(prompt, n)| Usage::new(prompt, n))),
    };
    Piece { at: piece_at(plan, i), payload: payload.to_vec() }
}

/// When piece `i` of the stream is due (see [`piece`]).
fn piece_at(plan: &Plan, i: usize) -> Instant {
    match i as u64 {
        0 => plan.t0,
        i => plan.due((i - 1).min(plan.n_chunks.saturating_sub(1))),
    }
}

/// Bytes on their way to the socket: written as they are, or a byte at a
/// time on a trickle's schedule.
struct Writer {
    out: Vec<u8>,
    /// The trickle's start, gap, and bytes written so far.
    trickle: Option<(Instant, Duration, u32)>,
}

impl Writer {
    /// Writes what is buffered: at once, or one byte every gap on a fixed
    /// schedule from the trickle's start (a late wake-up is caught up, so
    /// the whole takes a gap a byte).
    async fn flush(&mut self, sock: &mut tokio::net::TcpStream) -> std::io::Result<()> {
        match &mut self.trickle {
            None => sock.write_all(&self.out).await?,
            Some((start, gap, n)) => {
                for b in &self.out {
                    if *n > 0 {
                        sleep_until(*start + gap.saturating_mul(*n)).await;
                    }
                    sock.write_all(std::slice::from_ref(b)).await?;
                    *n = n.saturating_add(1);
                }
            }
        }
        self.out.clear();
        Ok(())
    }
}

/// Malformed JSON: the payload's last closing brace taken out, its line
/// end kept.
fn break_json(payload: &mut Vec<u8>) {
    if let Some(i) = payload.iter().rposition(|&b| b == b'}') {
        payload.remove(i);
    }
}

/// Puts `bytes` before the first `what` in `payload` (at its start when
/// `what` is not in it).
fn insert_before(payload: &mut Vec<u8>, what: &[u8], bytes: &[u8]) {
    let at = find(payload, what).unwrap_or(0);
    payload.splice(at..at, bytes.iter().copied());
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn sleep_until(t: Instant) -> crate::clock::Sleep {
    crate::clock::sleep_until(tokio::time::Instant::from_std(t))
}
