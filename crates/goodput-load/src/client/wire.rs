//! The two HTTP stacks a request can go over, behind one small interface
//! ([`Wire`], [`WireResponse`]): send a request and get its head, read the
//! body one read at a time, each read with its stamp, and hand the
//! connection back for another request where it can carry one. What is
//! made of a response (whole body or stream, error bodies, caps, failure
//! kinds) is decided once, over this interface, by `Client::exchange`.
//!
//! - reqwest (hyper): https, proxies, and `--transport reqwest`.
//! - goodput's own HTTP/1.1 transport ([`Http1`]): plain http:// servers
//!   reached directly, the default there.

use super::failure::{error_chain, is_parse_error};
use super::streamer::Work;
use crate::http1::{BodyStep, Conn, Head, HeadError, Http1, ReadStamp};
use crate::reader::ResponseReader;
use std::ops::Range;
use std::time::Duration;
use tokio::time::Instant;

/// A request as every stack sends it.
pub(crate) struct Outgoing<'a> {
    /// The JSON body.
    pub body: Vec<u8>,
    /// Every header beyond `Content-Type` and `Accept`.
    pub headers: &'a [(String, String)],
    /// The `Accept` header's value, when a stream is asked for.
    pub accept: Option<&'static str>,
    /// The run's clock: every stamp is its offset from here.
    pub origin: Instant,
}

/// Why no response head came back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SendError {
    /// The stack's own time limit ran out.
    Timeout(String),
    /// Bytes came that are not a response head the stack can read.
    InvalidHead(String),
    /// The connection could not be made, or it closed or broke before the
    /// response.
    Connect(String),
}

/// A response's head, as a stack read it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ResponseHead<'a> {
    pub status: u16,
    pub retry_after: Option<&'a str>,
    /// The response's `Date` (the server's clock).
    pub date: Option<&'a str>,
    pub server: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub content_encoding: Option<&'a str>,
    /// Where a redirect points (never followed).
    pub location: Option<&'a str>,
}

/// What one step of reading a body came to.
#[derive(Debug)]
pub(crate) enum Read<'a> {
    /// A read off the connection brought bytes of the body.
    Bytes(BodyBytes<'a>),
    /// The body had ended (as its framing says, or with the connection's
    /// close) with no more bytes; `at`: when the stack knew it.
    End { at: Duration },
}

/// The bytes one read brought, and when they came. A read is the unit the
/// bytes arrive in: all of it shares one stamp, so several events in it
/// came together (however long ago the first of them was sent).
#[derive(Debug)]
pub(crate) struct BodyBytes<'a> {
    buf: &'a [u8],
    /// Where the body's bytes lie in `buf`, framing taken out: one piece
    /// per HTTP chunk the read touched, else one.
    pieces: &'a [Range<usize>],
    pub stamp: ReadStamp,
    /// The body ended as its framing says with this read (only a stack that
    /// reads the framing itself knows it with the read; otherwise a later
    /// [`Read::End`] says so).
    pub ends_body: bool,
}

impl<'a> BodyBytes<'a> {
    /// The pieces `pieces` of `buf`, as one read brought them.
    pub fn new(buf: &'a [u8], pieces: &'a [Range<usize>], stamp: ReadStamp, ends_body: bool) -> Self {
        BodyBytes { buf, pieces, stamp, ends_body }
    }

    /// The read's bytes of the body, piece by piece.
    pub fn pieces(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        let buf = self.buf;
        self.pieces.iter().map(move |r| &buf[r.clone()])
    }
}

/// One HTTP stack (a handle on it: what a response borrows outlives it).
pub(crate) trait Wire {
    type Response: WireResponse;

    /// Sends `out` and reads the response head. A request the stack sent
    /// again (provably unseen by the server the first time) is counted in
    /// `resent`.
    async fn send(self, out: Outgoing<'_>, resent: &mut u32) -> Result<Self::Response, SendError>;
}

/// A response whose head has come, its body to be read.
pub(crate) trait WireResponse {
    fn head(&self) -> ResponseHead<'_>;

    /// When the response's first bytes came.
    fn first_byte(&self) -> Duration;

    /// How long the client itself took to send the request after `sent`:
    /// from `sent` to its last byte written, less the time a fresh
    /// connection took to open (the network's). `None` where the stack
    /// does not say (reqwest).
    fn send_took(&self, sent: Duration) -> Option<Duration>;

    /// The body's next read. `Err`: the connection broke, or the body's
    /// framing is broken (why, in words).
    async fn read(&mut self) -> Result<Read<'_>, String>;

    /// Reads a streamed body into `reader`, read by read, until its framed
    /// end (`Ok(Some(when))`), until the reader stops before it
    /// (`Ok(None)`: `[DONE]`, an error event, bytes it cannot read), or
    /// until the connection breaks (`Err`, why). `deadline`: the request's,
    /// past which what already came is read and no more waited for.
    async fn stream(&mut self, reader: &mut ResponseReader, deadline: Option<Instant>) -> StreamEnd {
        read_stream(self, reader, deadline).await
    }

    /// Done with the response (its body read to the end, or given up on):
    /// the connection carries another request if the body was read to its
    /// framed end and the server keeps connections, else it is closed.
    fn release(self);

    /// Done with a response whose reading stopped before its body's end
    /// (`[DONE]` or an error event came before the framing's last chunk),
    /// its bytes so far the API's: keeps the connection where the stack
    /// can still make it fit for another request.
    async fn release_after_stop(self);
}

/// How the reading of a streamed body ended (see [`WireResponse::stream`]):
/// at its framed end or the connection's close (`Ok(Some(when))`), with the
/// reader stopping before it (`Ok(None)`), or broken (`Err`, why).
pub(crate) type StreamEnd = Result<Option<Duration>, String>;

/// How many bytes a request's own task reads past its deadline before it
/// waits no more: what sat in the socket at the deadline is read (a client
/// stopped or starved past it did not see the server time out), and that
/// is at most the socket's receive buffer (Linux's default `tcp_rmem`
/// lets it grow to 6 MiB). A server that floods the socket faster than it
/// is parsed is held to this (it had been held to 64 of the runtime's
/// polls of 128 reads each, 128 MiB, seconds of parsing past a 2 s
/// timeout), as a stream reader thread's turns hold it.
const DRAIN_BYTES: usize = 16 << 20;

/// [`WireResponse::stream`] on the request's own task, read by read. Past
/// `deadline`, once [`DRAIN_BYTES`] more have been read, it waits for
/// nothing more (the caller declares the timeout).
pub(crate) async fn read_stream<R: WireResponse + ?Sized>(
    resp: &mut R,
    reader: &mut ResponseReader,
    deadline: Option<Instant>,
) -> StreamEnd {
    let mut past_deadline = 0usize;
    loop {
        let read = resp.read().await;
        if let (Some(deadline), Ok(Read::Bytes(bytes))) = (deadline, &read) {
            if Instant::now() >= deadline {
                past_deadline = past_deadline.saturating_add(bytes.buf.len());
            }
        }
        if let Some(end) = feed_read(reader, read) {
            return end;
        }
        if past_deadline > DRAIN_BYTES {
            return std::future::pending().await;
        }
    }
}

/// Gives one read of a streamed body to `reader`: how the body's reading
/// ended, if it ended with this read. Whoever reads the body (the request's
/// task, or a stream reader thread) reads it by this rule.
pub(crate) fn feed_read(reader: &mut ResponseReader, read: Result<Read<'_>, String>) -> Option<StreamEnd> {
    match read {
        Ok(Read::Bytes(read)) => {
            for piece in read.pieces() {
                reader.feed(piece, read.stamp);
            }
            if read.ends_body {
                Some(Ok(Some(read.stamp.t)))
            } else if reader.finished() {
                Some(Ok(None))
            } else {
                None
            }
        }
        Ok(Read::End { at }) => Some(Ok(Some(at))),
        Err(m) => Some(Err(m)),
    }
}

/// A step of goodput's own transport ([`Conn::next_read`] or
/// [`Conn::try_next_read`]) as a read of the body.
pub(crate) fn read_of(conn: &Conn, step: Result<BodyStep, crate::http1::HttpError>) -> Result<Read<'_>, String> {
    match step.map_err(|e| e.to_string())? {
        BodyStep::Read { stamp, ends_body } => {
            let (buf, pieces) = conn.body_read();
            Ok(Read::Bytes(BodyBytes::new(buf, pieces, stamp, ends_body)))
        }
        BodyStep::End { at } => Ok(Read::End { at }),
    }
}

/// reqwest (hyper), for https, proxies and `--transport reqwest`.
pub(crate) struct Reqwest<'c> {
    pub http: &'c reqwest::Client,
    pub endpoint: &'c str,
}

/// A reqwest response being read.
pub(crate) struct ReqwestResponse {
    resp: reqwest::Response,
    origin: Instant,
    first_byte: Duration,
    /// The last read's bytes, and their one piece.
    bytes: bytes::Bytes,
    whole: Range<usize>,
    /// Reads so far, to number them.
    reads: u64,
}

impl Wire for Reqwest<'_> {
    type Response = ReqwestResponse;

    async fn send(self, out: Outgoing<'_>, _resent: &mut u32) -> Result<ReqwestResponse, SendError> {
        let mut req = self.http.post(self.endpoint).header("content-type", "application/json").body(out.body);
        if let Some(accept) = out.accept {
            req = req.header("accept", accept);
        }
        for (name, value) in out.headers {
            req = req.header(name, value);
        }
        match req.send().await {
            Ok(resp) => Ok(ReqwestResponse {
                resp,
                origin: out.origin,
                first_byte: out.origin.elapsed(),
                bytes: bytes::Bytes::new(),
                whole: 0..0,
                reads: 0,
            }),
            // No resend here: hyper itself sends a request again only when
            // its pooled connection closed before the request was written,
            // the one case where it provably never reached the server.
            Err(e) if e.is_timeout() => Err(SendError::Timeout(error_chain(&e))),
            // hyper refuses an oversized or broken head as a parse error.
            Err(e) if is_parse_error(&e) => {
                let chain = error_chain(&e);
                // hyper says only "invalid content-length parsed", for one
                // that is not a number and for two that differ alike.
                Err(SendError::InvalidHead(if chain.contains("content-length") {
                    format!(
                        "an invalid Content-Length, or two different Content-Length headers, in the response: where \
                         its body ends cannot be known ({chain})"
                    )
                } else {
                    chain
                }))
            }
            Err(e) => Err(SendError::Connect(error_chain(&e))),
        }
    }
}

impl WireResponse for ReqwestResponse {
    fn head(&self) -> ResponseHead<'_> {
        let header = |name: &str| self.resp.headers().get(name).and_then(|v| v.to_str().ok());
        ResponseHead {
            status: self.resp.status().as_u16(),
            retry_after: header("retry-after"),
            date: header("date"),
            server: header("server"),
            content_type: header("content-type"),
            content_encoding: header("content-encoding"),
            location: header("location"),
        }
    }

    fn first_byte(&self) -> Duration {
        self.first_byte
    }

    fn send_took(&self, _sent: Duration) -> Option<Duration> {
        None
    }

    async fn read(&mut self) -> Result<Read<'_>, String> {
        match self.resp.chunk().await {
            Ok(Some(bytes)) => {
                // Stamped before any parsing: the moment hyper handed the bytes over.
                let t = self.origin.elapsed();
                self.reads += 1;
                self.whole = 0..bytes.len();
                self.bytes = bytes;
                // hyper may have held the bytes since before its last frame:
                // when they came is not known (`since` 0).
                let stamp = ReadStamp { t, lag: None, serial: self.reads, since: Duration::ZERO };
                Ok(Read::Bytes(BodyBytes::new(&self.bytes, std::slice::from_ref(&self.whole), stamp, false)))
            }
            Ok(None) => Ok(Read::End { at: self.origin.elapsed() }),
            Err(e) => Err(error_chain(&e)),
        }
    }

    /// hyper keeps the connection when the body was read to its end.
    fn release(self) {}

    /// Dropped unread: hyper closes the connection.
    async fn release_after_stop(self) {}
}

/// A response being read over goodput's own HTTP/1.1 transport.
pub(crate) struct Http1Response<'h> {
    http: &'h Http1,
    conn: Conn,
    head: Head,
    origin: Instant,
    first_byte: Duration,
    /// The stamp of the read whose bytes are being handed out (at first,
    /// the one that completed the head).
    read: ReadStamp,
    /// How long opening the connection took (0: a kept one).
    connect: Duration,
}

impl<'h> Wire for &'h Http1 {
    type Response = Http1Response<'h>;

    async fn send(self, out: Outgoing<'_>, resent: &mut u32) -> Result<Http1Response<'h>, SendError> {
        let request = self.request(&out.body, out.headers, out.accept);
        // Stamped right after each read, before any parsing.
        let origin = out.origin;
        let mut clock = || origin.elapsed();
        loop {
            // After a failed try, a fresh connection.
            let kept = if *resent == 0 { self.checkout() } else { None };
            let reused = kept.is_some();
            let opening = origin.elapsed();
            let mut conn = match kept {
                Some(c) => c,
                None => self.connect().await.map_err(|e| SendError::Connect(e.to_string()))?,
            };
            let connect = if reused { Duration::ZERO } else { origin.elapsed().saturating_sub(opening) };
            match conn.send(&request, &mut clock).await {
                Ok((head, first_byte, read)) => {
                    return Ok(Http1Response { http: self, conn, head, origin, first_byte, read, connect })
                }
                // A kept connection the server closed as the request went
                // out (llama.cpp closes after every stream while it says
                // keep-alive): the close was on its way before the request,
                // which is sent once more on a fresh connection, and counted.
                // A fresh connection dropped before the response is the
                // server's failure, never sent again: a resend would hide it
                // and load the server with a request nobody planned.
                Err(HeadError::ClosedBeforeResponse(_)) if reused && *resent == 0 => *resent += 1,
                Err(HeadError::ClosedBeforeResponse(m)) => return Err(SendError::Connect(m)),
                Err(HeadError::Invalid(m)) => return Err(SendError::InvalidHead(m)),
            }
        }
    }
}

impl WireResponse for Http1Response<'_> {
    fn head(&self) -> ResponseHead<'_> {
        let h = &self.head;
        ResponseHead {
            status: h.status,
            retry_after: h.retry_after.as_deref(),
            date: h.date.as_deref(),
            server: h.server.as_deref(),
            content_type: h.content_type.as_deref(),
            content_encoding: h.content_encoding.as_deref(),
            location: h.location.as_deref(),
        }
    }

    fn first_byte(&self) -> Duration {
        self.first_byte
    }

    fn send_took(&self, sent: Duration) -> Option<Duration> {
        Some(self.conn.written().saturating_sub(sent).saturating_sub(self.connect))
    }

    async fn read(&mut self) -> Result<Read<'_>, String> {
        let origin = self.origin;
        let step = self.conn.next_read(&mut self.head, &mut || origin.elapsed(), &mut self.read).await;
        read_of(&self.conn, step)
    }

    async fn stream(&mut self, reader: &mut ResponseReader, deadline: Option<Instant>) -> StreamEnd {
        // A reader thread reads the body where one runs; else this task.
        let pool = match super::streamer::pool() {
            Some(pool) if self.http.stream_threads => pool,
            _ => return read_stream(self, reader, deadline).await,
        };
        let work = Work {
            conn: std::mem::replace(&mut self.conn, Conn::placeholder()),
            head: std::mem::replace(&mut self.head, Head::placeholder()),
            read: self.read,
        };
        let (work, ended) = super::streamer::hand_off(pool, work, reader, self.origin, deadline).await;
        (self.conn, self.head, self.read) = (work.conn, work.head, work.read);
        ended
    }

    fn release(self) {
        self.http.checkin(self.conn, &self.head);
    }

    /// The rest of the framing (the last chunk) normally follows at once:
    /// it is read, for up to half a second, so that the connection can
    /// carry the next request.
    async fn release_after_stop(mut self) {
        let rest = async {
            loop {
                match self.read().await {
                    Ok(Read::Bytes(r)) if !r.ends_body => {}
                    _ => break,
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_millis(500), rest).await;
        self.release();
    }
}
