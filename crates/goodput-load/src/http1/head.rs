//! A response head: parsed from the first bytes, and what it says of the
//! body's framing and the connection.

use super::chunked::Chunked;

/// A response head larger than this is refused.
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// What a head past [`MAX_HEAD`] fails with, in one long line or many short ones.
pub(super) const HEAD_TOO_LARGE: &str = "the response head is larger than 64 KiB";

/// Why no response head came back.
#[derive(Debug)]
pub enum HeadError {
    /// The connection closed (or broke) before a single byte of the response:
    /// the request may be sent again.
    ClosedBeforeResponse(String),
    /// Some bytes came but they are not an HTTP/1.x response head.
    Invalid(String),
}

/// The parts of a response head the client uses.
#[derive(Debug, Clone)]
pub struct Head {
    pub status: u16,
    pub server: Option<String>,
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub retry_after: Option<String>,
    /// The response's `Date`: the server's clock, that a `Retry-After`
    /// date is read against.
    pub date: Option<String>,
    /// Where a redirect points (never followed).
    pub location: Option<String>,
    pub(super) framing: Framing,
    pub(super) keep_alive: bool,
}

/// How the body ends.
#[derive(Debug, Clone)]
pub(super) enum Framing {
    Chunked(Chunked),
    Length(u64),
    Close,
}

impl Head {
    /// A head that stands in for one moved elsewhere for a while (and the
    /// fields of a parsed one before its headers are read).
    pub(crate) fn placeholder() -> Head {
        Head {
            status: 0,
            server: None,
            content_type: None,
            content_encoding: None,
            retry_after: None,
            date: None,
            location: None,
            framing: Framing::Close,
            keep_alive: false,
        }
    }

    /// The body ended as its framing says.
    pub(super) fn body_done(&self) -> bool {
        matches!(self.framing, Framing::Chunked(Chunked::Done) | Framing::Length(0))
    }

    /// The connection may carry another request once this body is read.
    pub fn reusable(&self) -> bool {
        self.keep_alive && self.body_done()
    }
}

/// Parses a complete response head at the start of `buf`: its length and
/// parts, or `None` when more bytes are needed. Public for the fuzz targets
/// (fuzz/), which feed it whatever a server might send.
pub fn parse_head(buf: &[u8]) -> Result<Option<(usize, Head)>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; HEADERS];
    let mut r = httparse::Response::new(&mut headers);
    match r.parse(buf) {
        // More headers than the array holds: as many as the head has lines,
        // which MAX_HEAD bounds (a server that sent 200 had been refused as
        // "not an HTTP/1.x response").
        Err(httparse::Error::TooManyHeaders) => {
            let lines = buf[..buf.len().min(MAX_HEAD)].iter().filter(|&&b| b == b'\n').count();
            let mut many = vec![httparse::EMPTY_HEADER; lines];
            let mut r = httparse::Response::new(&mut many);
            match r.parse(buf) {
                // Still more: the head goes on past MAX_HEAD's lines, which is
                // what a server sent, not a response that is no HTTP.
                Err(httparse::Error::TooManyHeaders) => Err(HeadError::Invalid(HEAD_TOO_LARGE.into())),
                parsed => read_head(buf, &r, parsed),
            }
        }
        parsed => read_head(buf, &r, parsed),
    }
}

/// How many headers a response head is parsed for at first, on the stack.
const HEADERS: usize = 96;

/// The parts of a head `r` holds, once `parsed`.
fn read_head(
    buf: &[u8],
    r: &httparse::Response<'_, '_>,
    parsed: httparse::Result<usize>,
) -> Result<Option<(usize, Head)>, HeadError> {
    let len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => {
            let start: String = String::from_utf8_lossy(&buf[..buf.len().min(60)]).into_owned();
            return Err(HeadError::Invalid(format!("not an HTTP/1.x response ({e}): {start:?}")));
        }
    };
    let status = r.code.unwrap_or(0);
    let mut head = Head { status, keep_alive: r.version == Some(1), ..Head::placeholder() };
    let mut chunked = false;
    let mut length = None;
    for h in r.headers.iter() {
        let v = || String::from_utf8_lossy(h.value).trim().to_owned();
        match h.name.to_ascii_lowercase().as_str() {
            "server" => head.server = Some(v()),
            "content-type" => head.content_type = Some(v()),
            "content-encoding" => head.content_encoding = Some(v()),
            "retry-after" => head.retry_after = Some(v()),
            "date" => head.date = Some(v()),
            "location" => head.location = Some(v()),
            "transfer-encoding" => chunked = v().to_ascii_lowercase().split(',').any(|e| e.trim() == "chunked"),
            "content-length" => {
                let n = v()
                    .parse::<u64>()
                    .map_err(|_| HeadError::Invalid(format!("invalid Content-Length '{}' in the response", v())))?;
                // The same length twice is one (RFC 9110, 8.6); two differ
                // and where the body ends cannot be known.
                if let Some(first) = length.filter(|&l| l != n) {
                    return Err(HeadError::Invalid(format!(
                        "the response has two different Content-Length headers ({first} and {n}): where its body \
                         ends cannot be known"
                    )));
                }
                length = Some(n);
            }
            "connection" => {
                let c = v().to_ascii_lowercase();
                if c.split(',').any(|t| t.trim() == "close") {
                    head.keep_alive = false;
                } else if c.split(',').any(|t| t.trim() == "keep-alive") {
                    head.keep_alive = true;
                }
            }
            _ => {}
        }
    }
    head.framing = if matches!(status, 204 | 304) {
        Framing::Length(0)
    } else if chunked {
        Framing::Chunked(Chunked::Size)
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        head.keep_alive = false;
        Framing::Close
    };
    Ok(Some((len, head)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head of `n` headers besides its content type, and a body.
    fn head_with(n: usize) -> Vec<u8> {
        let mut h = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n".to_vec();
        for i in 0..n {
            h.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
        }
        h.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
        h
    }

    #[test]
    fn a_head_of_more_headers_than_the_first_array_holds_is_read_whole() {
        for n in [0, HEADERS - 2, HEADERS, 200, 2000] {
            let buf = head_with(n);
            let (len, head) = parse_head(&buf).unwrap().unwrap();
            assert_eq!((len, head.status), (buf.len() - 2, 200), "{n} headers");
            assert_eq!(head.content_type.as_deref(), Some("text/event-stream"), "{n} headers");
            assert!(matches!(head.framing, Framing::Length(2)), "{n} headers: the length after them is read");
        }
        // Not yet whole: more bytes are waited for.
        let buf = head_with(300);
        assert!(parse_head(&buf[..buf.len() - 30]).unwrap().is_none());
    }
}
