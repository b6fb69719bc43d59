//! A response head: parsed from the first bytes, and what it says of the
//! body's framing and the connection.

use super::chunked::Chunked;

/// A response head larger than this is refused.
pub(super) const MAX_HEAD: usize = 64 * 1024;

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
    let mut headers = [httparse::EMPTY_HEADER; 96];
    let mut r = httparse::Response::new(&mut headers);
    let len = match r.parse(buf) {
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
