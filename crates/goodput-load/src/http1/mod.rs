//! A lean HTTP/1.1 client for plain-text (`http://`) servers, the default for
//! them. The request's own task reads the socket, so a chunk is stamped the
//! moment its bytes come off the socket: there is no connection task and no
//! body channel in between (hyper's client path hops through both, two task
//! wakes per chunk), and a streamed chunk costs one read, a step of the
//! chunked framing and the SSE parse. At 1,000 streams that is the difference
//! between the client sharing a 2-core machine with the server and the client
//! competing with it. https and proxies go through reqwest.
//!
//! Only what a completion request needs: POST with a Content-Length body,
//! responses framed by `Transfer-Encoding: chunked`, `Content-Length` or the
//! connection's close, and keep-alive reuse of connections that ended cleanly.

mod chunked;
mod head;
mod stamp;

pub use crate::error::{ChunkedError, HttpError};
pub use chunked::Chunked;
pub use head::{parse_head, Head, HeadError};

use bytes::{Buf, BytesMut};
use head::{Framing, HEAD_TOO_LARGE, MAX_HEAD};
use smallvec::SmallVec;
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;

/// Idle connections older than this are not reused (reqwest's default too).
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes asked of each read.
const READ_SIZE: usize = 16 * 1024;
/// The most interim (1xx) heads taken before a response's final head.
/// RFC 9110 lets a server send any number; servers send none, one (`100
/// Continue`, though goodput sends no `Expect`; `103 Early Hints`) or a few
/// (`102 Processing` now and then on a long request). One more fails the
/// exchange as an invalid response: a server that sent them without end
/// had held the request, and its worker, past `--timeout` for minutes.
pub const MAX_INTERIM_HEADS: usize = 32;

/// Where requests go, and the connections kept open for the next ones.
#[derive(Debug)]
pub struct Http1 {
    host: Host,
    port: u16,
    /// `Host:` header value.
    authority: String,
    /// Path and query of the endpoint.
    target: String,
    idle: Mutex<Vec<Conn>>,
    stamps: Stamps,
    /// Streamed bodies are read on the stream reader threads, where they run
    /// (`client::streamer`), rather than by the request's task.
    pub(crate) stream_threads: bool,
}

/// When a read's bytes are taken to have come (`--stamp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Stamps {
    /// `kernel` where it is to be had (Linux, goodput's own HTTP/1.1 client), `read` elsewhere.
    #[default]
    Auto,
    /// When the client reads the bytes off the socket.
    Read,
    /// When the kernel received the bytes (`SO_TIMESTAMPNS`, Linux); an error where it cannot say.
    Kernel,
}

impl Stamps {
    /// The mode in force on this system: `Auto` resolved.
    pub fn effective(self) -> Stamps {
        match self {
            Stamps::Auto if cfg!(target_os = "linux") => Stamps::Kernel,
            Stamps::Auto => Stamps::Read,
            s => s,
        }
    }

    /// `read` or `kernel`, as the result's `config.client.stamp` names it.
    pub fn name(self) -> &'static str {
        match self.effective() {
            Stamps::Kernel => "kernel",
            _ => "read",
        }
    }
}

#[derive(Debug, Clone)]
enum Host {
    Ip(IpAddr),
    Name(String),
}

/// One open connection and the bytes read past the last response.
#[derive(Debug)]
pub struct Conn {
    /// The socket, non-blocking, read and written with plain syscalls (see
    /// [`Conn::fill`] for why not tokio's `TcpStream`): registered with
    /// tokio's reactor, except while a stream reader thread reads its body
    /// (`crate::client::streamer`).
    sock: Sock,
    buf: BytesMut,
    idle_since: Instant,
    kernel_stamps: bool,
    /// Reads so far, to number them.
    reads: u64,
    /// The floor of the next read's stamp, on the clock of the request in
    /// flight: the time its request was written, then each read's stamp. A
    /// kernel stamp is never taken earlier than it (the wall clock it is read
    /// against may be stepped back by up to a second unnoticed). Set anew by
    /// every [`Conn::send`]: a kept connection outlives its request, and the
    /// next request's clock can have another origin (each point of a sweep
    /// has its own), so a floor from an earlier request means nothing on it.
    last: Duration,
    /// The stamp of the last read that found the socket empty (or the time
    /// the request was written): see [`ReadStamp::since`].
    drained: Duration,
    /// When the last request's last byte was written, on its clock.
    written: Duration,
    /// Where the body's bytes of the last [`Conn::next_read`] lie in `buf`,
    /// and how much of `buf` that read took up (let go at the next one).
    /// In the connection itself for the usual few (see `Conn::reading_into`).
    pieces: SmallVec<[Range<usize>; 4]>,
    consumed: usize,
    /// The chunked framing broke after the payload the last step handed out.
    broken: Option<ChunkedError>,
    /// The last read found the socket drained (it returned less than it
    /// asked for): [`Conn::try_next_read`] makes no read that could only say
    /// EAGAIN until [`Conn::wet`] says bytes came (an edge-triggered poll's
    /// event).
    dry: bool,
    /// The poll said the peer closed its side, or the socket failed
    /// ([`Conn::peer_closed`]): a short read no longer means drained. That event
    /// may have come with the last bytes, and no other follows it, so the
    /// reads go on until one says so (the end of the stream or an error).
    hup: bool,
}

/// A connection's socket: registered with tokio's reactor, or not (while a
/// stream reader thread has it, or when registering it again failed).
#[derive(Debug)]
enum Sock {
    Tokio(AsyncFd<std::net::TcpStream>),
    Plain(std::net::TcpStream),
    /// Closed: registering it again failed.
    Gone,
}

impl Sock {
    fn fd(&self) -> std::os::fd::RawFd {
        match self {
            Sock::Tokio(s) => s.get_ref().as_raw_fd(),
            Sock::Plain(s) => s.as_raw_fd(),
            Sock::Gone => -1,
        }
    }

    fn tokio(&self) -> std::io::Result<&AsyncFd<std::net::TcpStream>> {
        match self {
            Sock::Tokio(s) => Ok(s),
            _ => Err(std::io::Error::other("the connection is not registered with the runtime")),
        }
    }
}

/// One read off the socket, as the client saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReadStamp {
    /// When the bytes came: the run-clock time right after the read, or with
    /// kernel stamps that time less `lag`.
    pub t: Duration,
    /// How long the read's last bytes had waited in the socket when it was
    /// made: the read's time less the kernel's receive time (Linux, where the
    /// kernel gives it). Earlier bytes of the same read waited longer.
    pub lag: Option<Duration>,
    /// The read's number on its connection, from 1 (0: not known): chunks
    /// with the same number came in one read.
    pub serial: u64,
    /// No byte of the read came before this: the stamp of the last read
    /// that found the socket empty (returned less than it asked for), or
    /// the time its request was written. Bytes read together came somewhere
    /// between this and `t`; the kernel keeps one time for them (see
    /// `reader::LATE_READ`). 0: not known.
    pub since: Duration,
}

impl Http1 {
    /// For `endpoint`, an `http://` URL.
    pub fn new(endpoint: &url::Url) -> Result<Self, HttpError> {
        let host = match endpoint.host() {
            Some(url::Host::Ipv4(a)) => Host::Ip(a.into()),
            Some(url::Host::Ipv6(a)) => Host::Ip(a.into()),
            Some(url::Host::Domain(d)) => Host::Name(d.to_owned()),
            None => return Err(HttpError::NoHost { url: endpoint.to_string() }),
        };
        let port = endpoint.port_or_known_default().unwrap_or(80);
        let host_str = endpoint.host_str().unwrap_or_default();
        let authority = match endpoint.port() {
            Some(p) => format!("{host_str}:{p}"),
            None => host_str.to_owned(),
        };
        let target = match endpoint.query() {
            Some(q) => format!("{}?{q}", endpoint.path()),
            None => endpoint.path().to_owned(),
        };
        Ok(Http1 {
            host,
            port,
            authority,
            target,
            idle: Mutex::new(Vec::new()),
            stamps: Stamps::Read,
            stream_threads: true,
        })
    }

    /// Stamps reads as `stamps` says: `Kernel` and `Auto` (on Linux) with the
    /// time the kernel received their last segment (`SO_TIMESTAMPNS`) rather
    /// than the time the read returned. `Kernel` is refused elsewhere.
    pub fn with_stamps(mut self, stamps: Stamps) -> Result<Self, HttpError> {
        if stamps == Stamps::Kernel && !cfg!(target_os = "linux") {
            return Err(HttpError::KernelStampsOffLinux);
        }
        self.stamps = stamps;
        Ok(self)
    }

    /// The stamp mode in force (`Auto` resolved).
    pub fn stamps(&self) -> Stamps {
        self.stamps.effective()
    }

    /// The whole request, head and JSON `body`, as written (and written
    /// again unchanged when it is resent).
    pub fn request(&self, body: &[u8], headers: &[(String, String)], accept: Option<&str>) -> Vec<u8> {
        let mut h = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            self.target,
            self.authority,
            body.len()
        );
        if let Some(a) = accept {
            h.push_str("Accept: ");
            h.push_str(a);
            h.push_str("\r\n");
        }
        for (name, value) in headers {
            h.push_str(name);
            h.push_str(": ");
            h.push_str(value);
            h.push_str("\r\n");
        }
        h.push_str(concat!("User-Agent: goodput/", env!("CARGO_PKG_VERSION"), "\r\n\r\n"));
        let mut req = h.into_bytes();
        req.extend_from_slice(body);
        req
    }

    /// An idle connection that still looks open, if one is kept.
    pub fn checkout(&self) -> Option<Conn> {
        loop {
            let c = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop()?;
            if c.idle_since.elapsed() > IDLE_TIMEOUT {
                continue;
            }
            // A peer that closed it, or sent bytes nobody asked for, is gone.
            let mut probe = [0u8; 1];
            let Ok(sock) = c.sock.tokio() else { continue };
            match std::io::Read::read(&mut sock.get_ref(), &mut probe) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Some(c),
                _ => continue,
            }
        }
    }

    /// A new connection, with Nagle off (requests are written whole).
    pub async fn connect(&self) -> Result<Conn, HttpError> {
        let sock = match &self.host {
            Host::Ip(ip) => tokio::net::TcpStream::connect(SocketAddr::new(*ip, self.port)).await,
            Host::Name(n) => tokio::net::TcpStream::connect((n.as_str(), self.port)).await,
        }
        .map_err(|error| HttpError::Connect { authority: self.authority.clone(), error })?;
        let _ = sock.set_nodelay(true);
        // The kernel's receive times are asked for in both stamp modes: with
        // read stamps they still tell how long each read came after its bytes
        // (the client's own lag, reported beside the latencies).
        #[cfg(target_os = "linux")]
        if let Err(e) = stamp::enable(&sock) {
            if self.stamps == Stamps::Kernel {
                return Err(HttpError::Timestamps(e));
            }
        }
        // Still non-blocking, registered anew with the reactor.
        let failed = |error: std::io::Error| HttpError::Register { authority: self.authority.clone(), error };
        let sock = sock.into_std().map_err(failed)?;
        // SAFETY: the std stream owns its descriptor and gives the same one
        // for as long as the AsyncFd holds it.
        let sock = unsafe { AsyncFd::register(sock) }.map_err(|e| failed(e.into_parts().1))?;
        Ok(Conn {
            sock: Sock::Tokio(sock),
            buf: BytesMut::with_capacity(READ_SIZE),
            kernel_stamps: self.stamps.effective() == Stamps::Kernel,
            ..Conn::placeholder()
        })
    }

    /// Keeps `conn` for a later request when `head`'s response, now read,
    /// left it fit for one; otherwise it is closed.
    pub fn checkin(&self, mut conn: Conn, head: &Head) {
        if !head.reusable() {
            return;
        }
        conn.idle_since = Instant::now();
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(conn);
    }
}

impl Conn {
    /// Reads what the socket has into the buffer: the byte count and the
    /// read's stamp (see [`ReadStamp`]).
    ///
    /// A read that returns less than it asked for has drained the socket, so
    /// its readiness is cleared there and then (tokio's own `read` does the
    /// same); without that every chunk would cost a second read that only
    /// says EAGAIN. tokio offers no such clearing around a `recvmsg` on its
    /// `TcpStream`, hence `AsyncFd`.
    ///
    /// Each read takes a unit of the task's cooperative budget, as tokio's
    /// own sockets' reads do: `AsyncFd`'s readiness takes none, and a socket
    /// that always has bytes (a server's flood) never makes the wait for
    /// them `Pending`, so a loop of reads (interim heads, a body, the
    /// chunked framing) would hold its worker without end. Its request's
    /// `--timeout` and a Ctrl-C, raced against it on the same task, then
    /// never came: a flood of `100 Continue` heads ran for minutes past a
    /// 2 s timeout and deaf to SIGINT. Spent, the budget makes the read
    /// `Pending` and the task yields (the deadline and the interrupt are
    /// polled so that a spent budget cannot hold them: see `Client::execute`).
    async fn fill(&mut self, clock: &mut impl FnMut() -> Duration) -> std::io::Result<(usize, ReadStamp)> {
        tokio::task::coop::consume_budget().await;
        self.buf.reserve(READ_SIZE);
        loop {
            let mut ready = self.sock.tokio()?.readable().await?;
            let spare = self.buf.spare_capacity_mut();
            let asked = spare.len();
            let Ok(read) = ready.try_io(|s| recv(s.get_ref().as_raw_fd(), spare)) else {
                continue; // EAGAIN: readiness was cleared, wait again.
            };
            let (n, stamp) = read?;
            if n < asked {
                ready.clear_ready();
            }
            return Ok(self.took(n, asked, stamp, clock));
        }
    }

    /// [`Conn::fill`] without waiting, for a thread that learns readiness
    /// on its own: `None` when the socket has nothing to read.
    fn try_fill(&mut self, clock: &mut impl FnMut() -> Duration) -> std::io::Result<Option<(usize, ReadStamp)>> {
        if self.dry {
            return Ok(None);
        }
        self.buf.reserve(READ_SIZE);
        loop {
            let spare = self.buf.spare_capacity_mut();
            let asked = spare.len();
            return match recv(self.sock.fd(), spare) {
                Ok((n, stamp)) => Ok(Some(self.took(n, asked, stamp, clock))),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.dry = true;
                    Ok(None)
                }
                Err(e) => Err(e),
            };
        }
    }

    /// Stamps a `recv` of `n` bytes (of `asked`) that came with the kernel's
    /// `stamp`, and keeps its bytes.
    fn took(
        &mut self,
        n: usize,
        asked: usize,
        stamp: Option<stamp::WallNs>,
        clock: &mut impl FnMut() -> Duration,
    ) -> (usize, ReadStamp) {
        // The wall clock first, then the run's: a pause between the two
        // makes `now` late and so the arrival late, never early (read
        // the other way round, a stamp could come before the server's
        // write).
        let wall = stamp::wall_now();
        let now = clock();
        let since = self.drained;
        // SAFETY: recv initialised the first n bytes of the spare capacity.
        unsafe { self.buf.set_len(self.buf.len() + n) };
        self.reads += 1;
        let lag = stamp::age(stamp, wall);
        let t = if self.kernel_stamps { arrival(now, lag, self.last) } else { now };
        self.last = t;
        // Drained: bytes not read now came after the read began, and so
        // after its own stamp (not its return, which a preemption can
        // put later).
        if n < asked {
            self.drained = t;
        }
        self.dry = n < asked && !self.hup;
        (n, ReadStamp { t, lag, serial: self.reads, since })
    }

    /// Bytes may have come since the last read found the socket drained.
    pub(crate) fn wet(&mut self) {
        self.dry = false;
    }

    /// The poll said the peer closed its side (or the socket failed): read
    /// on to the end, whatever the reads return (see `hup`).
    pub(crate) fn peer_closed(&mut self) {
        self.hup = true;
        self.dry = false;
    }

    /// Takes the socket off tokio's reactor, for a thread that polls it
    /// itself; [`Conn::attach`] puts it back.
    pub(crate) fn detach(&mut self) {
        if let Sock::Tokio(s) = std::mem::replace(&mut self.sock, Sock::Gone) {
            self.sock = Sock::Plain(s.into_inner());
        }
    }

    /// Registers the socket with tokio's reactor again (on the runtime this
    /// is called on). On failure the socket is closed: the connection's
    /// reads fail, and it is not kept for another request.
    pub(crate) fn attach(&mut self) -> std::io::Result<()> {
        if let Sock::Plain(s) = std::mem::replace(&mut self.sock, Sock::Gone) {
            // SAFETY: as in `connect`: the stream owns its descriptor.
            self.sock = Sock::Tokio(unsafe { AsyncFd::register(s) }.map_err(|e| e.into_parts().1)?);
        }
        Ok(())
    }

    /// A closed connection that stands in for one moved elsewhere for a
    /// while (and the fields of a new one before its socket).
    pub(crate) fn placeholder() -> Conn {
        Conn {
            sock: Sock::Gone,
            buf: BytesMut::new(),
            idle_since: Instant::now(),
            kernel_stamps: false,
            reads: 0,
            last: Duration::ZERO,
            drained: Duration::ZERO,
            written: Duration::ZERO,
            pieces: SmallVec::new(),
            consumed: 0,
            broken: None,
            dry: false,
            hup: false,
        }
    }

    /// The socket's descriptor.
    pub(crate) fn fd(&self) -> std::os::fd::RawFd {
        self.sock.fd()
    }

    /// When the last [`Conn::send`] finished writing its request, on that
    /// request's clock.
    pub fn written(&self) -> Duration {
        self.written
    }

    /// Writes all of `data`.
    async fn write_all(&self, mut data: &[u8]) -> std::io::Result<()> {
        while !data.is_empty() {
            let mut ready = self.sock.tokio()?.writable().await?;
            match ready.try_io(|s| std::io::Write::write(&mut s.get_ref(), data)) {
                Ok(Ok(0)) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(Ok(n)) => data = &data[n..],
                Ok(Err(e)) => return Err(e),
                Err(_) => {}
            }
        }
        Ok(())
    }

    /// Writes `request` (from [`Http1::request`]) and reads the response
    /// head; returns it with the time its first bytes came and the stamp of
    /// the read that completed it (body bytes read with the head carry it).
    pub async fn send(
        &mut self,
        request: &[u8],
        clock: &mut impl FnMut() -> Duration,
    ) -> Result<(Head, Duration, ReadStamp), HeadError> {
        self.buf.clear();
        self.pieces.clear();
        self.consumed = 0;
        self.broken = None;
        // Delayed ACKs for this response ("ping-pong" mode): the client
        // acknowledges every second small segment rather than after each
        // read, a quarter fewer loopback segments in all (measured with
        // nstat: 0.5 rather than 0.75 ACKs per streamed chunk). Data is never
        // delayed by it (the sender has Nagle off). The mode can lapse between
        // requests, so it is asked for each time.
        #[cfg(target_os = "linux")]
        if let Ok(sock) = self.sock.tokio() {
            let _ = socket2::SockRef::from(sock.get_ref()).set_tcp_quickack(false);
        }
        // No byte of the response came before the request went: the floor
        // of its stamps, on this request's clock (see `last`).
        self.last = clock();
        self.drained = self.last;
        // A write the server cut short may still have its answer waiting (a
        // 413 for a body past its limit, sent before it closed): it is read,
        // and only where none came is the failed write the error.
        let unwritten = self.write_all(request).await.err();
        let lost = |e: &dyn std::fmt::Display| match &unwritten {
            Some(w) => HeadError::ClosedBeforeResponse(format!("the request could not be written: {w}")),
            None => HeadError::ClosedBeforeResponse(format!("the connection broke before the response: {e}")),
        };
        self.written = clock();
        let mut first = None;
        let mut last = ReadStamp::default();
        let mut interim = 0usize;
        loop {
            // What is buffered first: an interim response (100 Continue) and
            // the head after it can come in one read.
            if !self.buf.is_empty() {
                match parse_head(&self.buf)? {
                    Some((len, head)) if (100..200).contains(&head.status) => {
                        interim += 1;
                        if interim > MAX_INTERIM_HEADS {
                            return Err(HeadError::Invalid(format!(
                                "the server sent {interim} interim 1xx heads before its answer (the last: HTTP {}), \
                                 more than the {MAX_INTERIM_HEADS} goodput takes: servers send one or two",
                                head.status
                            )));
                        }
                        self.buf.advance(len);
                        continue;
                    }
                    Some((len, head)) => {
                        self.buf.advance(len);
                        return Ok((head, first.unwrap_or(last.t), last));
                    }
                    None if self.buf.len() > MAX_HEAD => return Err(HeadError::Invalid(HEAD_TOO_LARGE.into())),
                    None => {}
                }
            }
            let n = match self.fill(clock).await {
                Ok((n, read)) => {
                    if n > 0 {
                        first.get_or_insert(read.t);
                    }
                    last = read;
                    n
                }
                Err(e) if self.buf.is_empty() => return Err(lost(&e)),
                Err(e) => {
                    return Err(HeadError::Invalid(format!("the connection broke inside the response head: {e}")))
                }
            };
            if n == 0 {
                return Err(if self.buf.is_empty() && unwritten.is_some() {
                    lost(&"")
                } else if self.buf.is_empty() {
                    HeadError::ClosedBeforeResponse("the server closed the connection before responding".into())
                } else {
                    HeadError::Invalid("the server closed the connection inside the response head".into())
                });
            }
        }
    }

    /// Reads the body on to the next read that brings some of it, or to its
    /// end. `read` is the stamp of the read the bytes now buffered came with
    /// (the head's, first; see [`Conn::fill`]), and is moved on with each
    /// read made. The bytes a step brought are [`Conn::body_read`]'s until
    /// the next step.
    pub async fn next_read(
        &mut self,
        head: &mut Head,
        clock: &mut impl FnMut() -> Duration,
        read: &mut ReadStamp,
    ) -> Result<BodyStep, HttpError> {
        if let Some(e) = self.begin_step() {
            return Err(e);
        }
        loop {
            if let Some(step) = self.step_buffered(head, read) {
                return step;
            }
            let (n, next) = self.fill(clock).await.map_err(HttpError::Broke)?;
            if n == 0 {
                return Self::closed(head, read);
            }
            *read = next;
        }
    }

    /// [`Conn::next_read`] without waiting, for a thread that learns the
    /// socket's readiness on its own: `None` when the step needs bytes the
    /// socket does not have yet (call again, with the same `head` and
    /// `read`, when it has).
    pub(crate) fn try_next_read(
        &mut self,
        head: &mut Head,
        clock: &mut impl FnMut() -> Duration,
        read: &mut ReadStamp,
    ) -> Option<Result<BodyStep, HttpError>> {
        if let Some(e) = self.begin_step() {
            return Some(Err(e));
        }
        loop {
            if let Some(step) = self.step_buffered(head, read) {
                return Some(step);
            }
            let (n, next) = match self.try_fill(clock) {
                Ok(Some(got)) => got,
                Ok(None) => return None,
                Err(e) => return Some(Err(HttpError::Broke(e))),
            };
            if n == 0 {
                return Some(Self::closed(head, read));
            }
            *read = next;
        }
    }

    /// Lets go of the bytes the last step handed out; the broken framing
    /// found after them, if any.
    fn begin_step(&mut self) -> Option<HttpError> {
        if let Some(e) = self.broken.take() {
            return Some(e.into());
        }
        self.buf.advance(std::mem::take(&mut self.consumed));
        self.pieces.clear();
        None
    }

    /// The step the bytes buffered make, if they make one.
    fn step_buffered(&mut self, head: &mut Head, read: &ReadStamp) -> Option<Result<BodyStep, HttpError>> {
        if head.body_done() {
            return Some(Ok(BodyStep::End { at: read.t }));
        }
        if self.buf.is_empty() {
            return None;
        }
        let pieces = &mut self.pieces;
        let consumed = match &mut head.framing {
            Framing::Chunked(c) => match c.decode_ranges(&self.buf, &mut |r| pieces.push(r)) {
                Ok(n) => n,
                // The payload before the broken framing is handed
                // out first; the error comes with the next step.
                Err(e) if !self.pieces.is_empty() => {
                    self.broken = Some(e);
                    return Some(Ok(BodyStep::Read { stamp: *read, ends_body: false }));
                }
                Err(e) => return Some(Err(e.into())),
            },
            Framing::Length(left) => {
                let take = (*left as usize).min(self.buf.len());
                if take > 0 {
                    pieces.push(0..take);
                }
                *left -= take as u64;
                take
            }
            Framing::Close => {
                pieces.push(0..self.buf.len());
                self.buf.len()
            }
        };
        if !self.pieces.is_empty() || head.body_done() {
            self.consumed = consumed;
            return Some(Ok(BodyStep::Read { stamp: *read, ends_body: head.body_done() }));
        }
        // Framing alone (a chunk's size line): nothing to hand out.
        self.buf.advance(consumed);
        None
    }

    /// Runs `f` with `shared` standing in for the connection's buffer while
    /// its own holds no bytes, and keeps in its own only what `f` leaves
    /// unread. A thread that reads many connections reads them all into
    /// one buffer, which stays in the CPU's caches and TLB, where a buffer
    /// of each connection's own is one more place in memory to reach for
    /// every read of every stream (see docs/measurement.md). What a step
    /// handed out keeps its place: the bytes left are moved whole, at the
    /// same offsets.
    pub(crate) fn reading_into<R>(&mut self, shared: &mut BytesMut, f: impl FnOnce(&mut Conn) -> R) -> R {
        if !self.buf.is_empty() {
            return f(self);
        }
        shared.clear();
        std::mem::swap(&mut self.buf, shared);
        let out = f(self);
        std::mem::swap(&mut self.buf, shared);
        if !shared.is_empty() {
            self.buf.clear();
            self.buf.extend_from_slice(shared);
            shared.clear();
        }
        out
    }

    /// The step a read of no bytes (the peer's close) makes.
    fn closed(head: &mut Head, read: &ReadStamp) -> Result<BodyStep, HttpError> {
        match head.framing {
            Framing::Close => {
                head.keep_alive = false;
                Ok(BodyStep::End { at: read.t })
            }
            _ => Err(HttpError::ClosedInBody),
        }
    }

    /// The body's bytes that the last [`Conn::next_read`] brought, its
    /// framing taken out: the buffer, and where in it lies each piece (one
    /// per chunk of a chunked body the read touched, else one).
    pub fn body_read(&self) -> (&[u8], &[Range<usize>]) {
        (&self.buf, &self.pieces)
    }
}

/// What [`Conn::next_read`] came to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BodyStep {
    /// A read brought bytes of the body ([`Conn::body_read`]), or only its
    /// framed end (`ends_body`, no bytes).
    Read {
        stamp: ReadStamp,
        /// The body ended as its framing says with this read.
        ends_body: bool,
    },
    /// The body had ended already, or ended with the connection's close:
    /// `at`, when its last bytes came.
    End { at: Duration },
}

/// A kernel-stamped read's time: the read's time `now` less the `lag` its
/// last bytes waited in the socket (none known: `now`), and never before the
/// connection's previous read at `last`. The lag is measured against the wall
/// clock, which can be stepped back unnoticed by up to a second; bytes that
/// came later cannot have arrived earlier.
fn arrival(now: Duration, lag: Option<Duration>, last: Duration) -> Duration {
    now.saturating_sub(lag.unwrap_or_default()).max(last)
}

/// One `recvmsg` into `spare`: the byte count and the time the kernel
/// received the last segment read (`SCM_TIMESTAMPNS`), when it says.
fn recv(
    fd: std::os::fd::RawFd,
    spare: &mut [std::mem::MaybeUninit<u8>],
) -> std::io::Result<(usize, Option<stamp::WallNs>)> {
    let mut iov = libc::iovec { iov_base: spare.as_mut_ptr().cast(), iov_len: spare.len() };
    // Room for one control message with a timespec, 8-byte aligned.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: the iovec points into `spare` and the control buffer into
    // `control`, both alive and of the lengths given. The system call
    // itself, not libc's wrapper: the wrapper is a thread cancellation
    // point, and its bookkeeping around each call was a percent of the
    // client's CPU; goodput never cancels a thread.
    let n = unsafe { libc::syscall(libc::SYS_recvmsg, fd, &mut msg as *mut libc::msghdr, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((n as usize, stamp::of(&msg)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8], splits: &[usize]) -> Result<(Vec<u8>, Chunked, usize), ChunkedError> {
        let mut c = Chunked::Size;
        let mut pending: Vec<u8> = Vec::new();
        let mut payload = Vec::new();
        for piece in crate::testing::split_at_cuts(input, splits) {
            pending.extend_from_slice(piece);
            let n = c.decode(&pending, &mut |p| payload.extend_from_slice(p))?;
            pending.drain(..n);
        }
        Ok((payload, c, pending.len()))
    }

    #[test]
    fn chunked_bodies_decode_at_every_split() {
        let pieces: [&[u8]; 2] = [b"data: a", b"\n\ndata: {\"x\": \"\\r\\n\"}\n\n"];
        let mut body = format!("{:x}\r\n", pieces[0].len()).into_bytes();
        body.extend_from_slice(pieces[0]);
        // A chunk extension, and upper-case hex.
        body.extend_from_slice(format!("\r\n{:X};ext=1\r\n", pieces[1].len()).as_bytes());
        body.extend_from_slice(pieces[1]);
        body.extend_from_slice(b"\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT");
        let body = &body[..];
        let want = pieces.concat();
        for i in 0..body.len() {
            for j in i..body.len() {
                let (payload, state, left) = decode_all(body, &[i, j]).unwrap();
                assert_eq!(payload, want, "splits {i} {j}");
                assert_eq!(state, Chunked::Done);
                // What follows the body stays for the next response.
                assert_eq!(left, 4, "splits {i} {j}");
            }
        }
    }

    /// A status line, headers from a set servers send (some malformed),
    /// and arbitrary bytes.
    fn head_piece() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop_oneof![
            Just(b"HTTP/1.1 200 OK\r\n".to_vec()),
            Just(b"HTTP/1.1 100 Continue\r\n\r\n".to_vec()),
            Just(b"HTTP/1.0 429 Too Many\r\n".to_vec()),
            Just(b"Content-Length: 12\r\n".to_vec()),
            Just(b"Content-Length: x\r\n".to_vec()),
            Just(b"Transfer-Encoding: chunked\r\n".to_vec()),
            Just(b"Connection: close\r\n".to_vec()),
            Just(b"Retry-After: 7\r\n".to_vec()),
            Just(b"Content-Type: text/event-stream\r\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\n".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..16),
        ]
    }

    /// A head as parsed (length, status, Retry-After, keep-alive), or the
    /// refusal's kind.
    type Parsed = Result<Option<(usize, u16, Option<String>, bool)>, String>;

    /// What parse_head makes of a buffer, in a comparable form.
    fn head_of(buf: &[u8]) -> Parsed {
        match parse_head(buf) {
            Ok(Some((len, h))) => Ok(Some((len, h.status, h.retry_after, h.keep_alive))),
            Ok(None) => Ok(None),
            // The refusal's kind: its message quotes as much of the buffer as it saw.
            Err(e) => Err(format!("{e:?}").split('(').next().unwrap_or_default().to_owned()),
        }
    }

    proptest::proptest! {
        // PROPTEST_CASES=N, set when running, runs N cases: a longer search.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// A response head read as its bytes arrive: any bytes parse without
        /// panicking, and a prefix is either not yet a head or already the
        /// same head (or the same refusal) as the whole buffer.
        #[test]
        fn any_head_bytes_parse_the_same_at_every_prefix(
            pieces in proptest::collection::vec(head_piece(), 0..16),
        ) {
            let buf = pieces.concat();
            let whole = head_of(&buf);
            let mut first: Option<Parsed> = None;
            for k in 0..=buf.len() {
                let at = head_of(&buf[..k]);
                if first.is_none() && !matches!(at, Ok(None)) {
                    first = Some(at);
                }
            }
            if let Some(first) = first {
                proptest::prop_assert_eq!(first, whole);
            }
        }
    }

    /// A read made once the task's cooperative budget is spent yields (it
    /// is `Pending`, its task woken to go on) though its socket has bytes,
    /// as tokio's own sockets' reads do. `AsyncFd`'s readiness takes no
    /// budget: a socket that always had bytes (a server's flood of `100
    /// Continue` heads) held the request's task, and its worker, with its
    /// timeout and a Ctrl-C, for as long as the flood lasted.
    #[tokio::test]
    async fn a_read_yields_once_the_task_s_budget_is_spent() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = url::Url::parse(&format!("http://{}/v1/chat/completions", listener.local_addr().unwrap())).unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            std::io::Write::write_all(&mut s, b"HTTP/1.1 200 OK\r\n").unwrap();
            // Open until the client goes.
            let _ = std::io::Read::read(&mut s, &mut [0u8; 1]);
        });
        tokio::spawn(async move {
            let http = Http1::new(&url).unwrap();
            let mut conn = http.connect().await.unwrap();
            // The bytes are in the socket (the guard, dropped, leaves it ready).
            drop(conn.sock.tokio().unwrap().readable().await.unwrap());
            let mut clock = || Duration::ZERO;
            std::future::poll_fn(|cx| {
                // Spent, as 128 reads of tokio's own sockets in one poll spend it.
                for _ in 0..1000 {
                    if !tokio::task::coop::has_budget_remaining() {
                        break;
                    }
                    let mut spend = std::pin::pin!(tokio::task::coop::consume_budget());
                    let _ = std::future::Future::poll(spend.as_mut(), cx);
                }
                assert!(!tokio::task::coop::has_budget_remaining(), "the budget is spent");
                let mut read = std::pin::pin!(conn.fill(&mut clock));
                assert!(
                    std::future::Future::poll(read.as_mut(), cx).is_pending(),
                    "a read with the budget spent yields"
                );
                std::task::Poll::Ready(())
            })
            .await;
            // At the next poll, with a budget, the bytes are read.
            let (n, _) = conn.fill(&mut clock).await.unwrap();
            assert_eq!(n, 17);
        })
        .await
        .unwrap();
        server.join().unwrap();
    }

    #[test]
    fn kernel_stamped_reads_keep_their_order() {
        let ms = Duration::from_millis;
        // The bytes waited 3 ms in the socket.
        assert_eq!(arrival(ms(100), Some(ms(3)), ms(90)), ms(97));
        // No kernel time for this read: the read's own.
        assert_eq!(arrival(ms(100), None, ms(90)), ms(100));
        // A lag that would put it before the previous read (a stepped clock) stops there.
        assert_eq!(arrival(ms(100), Some(ms(20)), ms(90)), ms(90));
        // Never before the run's origin.
        assert_eq!(arrival(ms(2), Some(ms(5)), Duration::ZERO), Duration::ZERO);
    }

    /// Pieces of a chunked body as servers send it (sizes, extensions,
    /// payload, CRLFs, trailers), a size line near the 4 KiB cap, and
    /// arbitrary bytes.
    fn chunked_piece() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop_oneof![
            Just(b"5\r\n".to_vec()),
            Just(b"A;ext=1\r\n".to_vec()),
            Just(b"0\r\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"hello".to_vec()),
            Just(b"X-Trailer: 1\r\n".to_vec()),
            Just(vec![b'0'; 2100]),
            Just(vec![b' '; 2100]),
            proptest::collection::vec(any::<u8>(), 0..16),
        ]
    }

    proptest::proptest! {
        // PROPTEST_CASES=N, set when running, runs N cases: a longer search.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// A chunked body decoded as its bytes arrive: any bytes, split
        /// anywhere, decode without panicking, and to the same payload and
        /// state (or the same refusal) as when they come whole.
        #[test]
        fn any_chunked_bytes_split_anywhere_decode_the_same(
            pieces in proptest::collection::vec(chunked_piece(), 0..12),
            cuts in proptest::collection::vec(proptest::prelude::any::<usize>(), 0..8),
        ) {
            let body = pieces.concat();
            let whole = decode_all(&body, &[]);
            let split = decode_all(&body, &cuts);
            proptest::prop_assert_eq!(whole.is_err(), split.is_err(), "{:?} / {:?}", whole, split);
            if whole.is_ok() {
                proptest::prop_assert_eq!(whole, split);
            }
        }
    }

    #[test]
    fn bad_chunk_framing_is_an_error() {
        assert!(decode_all(b"zz\r\nabc", &[]).unwrap_err().to_string().contains("invalid chunk size 'zz'"));
        assert!(decode_all(b"2\r\nabX\r\n", &[]).unwrap_err().to_string().contains("CRLF"));
        assert!(decode_all(&[b'1'; 5000], &[]).unwrap_err().to_string().contains("longer than 4 KiB"));
        // A long line is refused whether its end came in the same read or a
        // later one (the whole line once passed, and the same bytes in two
        // reads did not: found by the property test below).
        let mut long = b"0\r\n".to_vec();
        long.extend([b'0'; 4200]);
        long.extend(b"\r\n\r\n");
        for cuts in [&[][..], &[2000], &[4100]] {
            assert!(decode_all(&long, cuts).unwrap_err().to_string().contains("longer than 4 KiB"), "{cuts:?}");
        }
        let mut size = vec![b'0'; 4200];
        size.extend(b"1\r\nx\r\n0\r\n\r\n");
        assert!(decode_all(&size, &[]).unwrap_err().to_string().contains("longer than 4 KiB"));
        // At the cap, taken.
        let mut at_cap = vec![b'0'; 4094];
        at_cap.extend(b"1\r\nx\r\n0\r\n\r\n");
        assert_eq!(decode_all(&at_cap, &[]).unwrap().0, b"x");
        // Incomplete is not an error: it waits for more.
        assert_eq!(decode_all(b"5\r\nab", &[]).unwrap().1, Chunked::Data(3));
        // Trailer lines: taken up to 64 KiB in all, refused past it,
        // wherever the reads split them (they hand out no payload: without
        // end, they had kept a read loop turning with no step to show).
        let line = b"x-trailer: 1234567\r\n";
        let mut under = b"1\r\nx\r\n0\r\n".to_vec();
        under.extend(line.repeat(chunked::MAX_TRAILERS / line.len()));
        under.extend(b"\r\n");
        assert_eq!(decode_all(&under, &[]).unwrap().1, Chunked::Done);
        let mut over = b"1\r\nx\r\n0\r\n".to_vec();
        over.extend(line.repeat(chunked::MAX_TRAILERS / line.len() + 1));
        over.extend(b"\r\n");
        for cuts in [&[][..], &[10], &[40_000], &[65_000, 65_600]] {
            let e = decode_all(&over, cuts).unwrap_err();
            assert_eq!(e, ChunkedError::TrailersTooLarge, "{cuts:?}");
            assert!(e.to_string().contains("trailer lines"), "{e}");
        }
    }

    #[test]
    fn heads_are_parsed_for_framing_and_reuse() {
        let (n, h) = parse_head(b"HTTP/1.1 200 OK\r\nServer: x\r\nTransfer-Encoding: chunked\r\n\r\nrest")
            .ok()
            .flatten()
            .unwrap();
        assert_eq!((n, h.status, h.server.as_deref(), h.keep_alive), (58, 200, Some("x"), true));
        assert!(matches!(h.framing, Framing::Chunked(Chunked::Size)));
        let (_, h) =
            parse_head(b"HTTP/1.1 400 Bad\r\nContent-Length: 12\r\nConnection: close\r\n\r\n").ok().flatten().unwrap();
        assert!(matches!(h.framing, Framing::Length(12)) && !h.keep_alive);
        // No length and no chunking: the body ends with the connection.
        let (_, h) = parse_head(b"HTTP/1.0 200 OK\r\n\r\n").ok().flatten().unwrap();
        assert!(matches!(h.framing, Framing::Close) && !h.keep_alive);
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nServer: x\r\n").ok().unwrap().is_none());
        match parse_head(b"SSH-2.0-OpenSSH\r\n\r\n") {
            Err(HeadError::Invalid(m)) => assert!(m.contains("not an HTTP/1.x response"), "{m}"),
            other => panic!("{other:?}"),
        }
        match parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\n") {
            Err(HeadError::Invalid(m)) => assert!(m.contains("Content-Length 'many'"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
