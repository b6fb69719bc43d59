//! `Transfer-Encoding: chunked`, decoded as the bytes come, split anywhere.

use crate::error::ChunkedError;
use std::ops::Range;

/// The longest chunk-size or trailer line taken, a CR before its LF included.
const MAX_LINE: usize = 4096;

/// The most bytes of trailer lines taken after the last chunk (as a head,
/// [`super::head::MAX_HEAD`]). Trailers hand out no payload, so a server
/// that sent them without end kept a read loop turning with nothing to
/// show: a stream reader thread's turn, which counts steps that bring
/// payload, never ended.
pub(crate) const MAX_TRAILERS: usize = 64 * 1024;

/// The incremental decoder of `Transfer-Encoding: chunked`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunked {
    Size,
    Data(u64),
    DataEnd,
    /// After the last chunk: the bytes of trailer lines so far.
    Trailer(usize),
    Done,
}

impl Chunked {
    /// Decodes what it can of `input`, handing each piece of payload to `out`;
    /// returns the bytes consumed (an incomplete size or trailer line is left).
    pub fn decode(&mut self, input: &[u8], out: &mut impl FnMut(&[u8])) -> Result<usize, ChunkedError> {
        self.decode_ranges(input, &mut |r| out(&input[r]))
    }

    /// [`Chunked::decode`], handing `out` where each piece of payload lies in
    /// `input` rather than the piece (so that the pieces can be kept while
    /// `input` is borrowed no more).
    pub fn decode_ranges(&mut self, input: &[u8], out: &mut impl FnMut(Range<usize>)) -> Result<usize, ChunkedError> {
        let mut i = 0;
        loop {
            let rest = &input[i..];
            match *self {
                Chunked::Done => return Ok(i),
                Chunked::Size | Chunked::Trailer(_) => {
                    // The cap holds for the line whether its newline came
                    // in this read or not, so that where the reads split
                    // the body cannot change what is refused.
                    let nl = rest.iter().position(|&b| b == b'\n');
                    if nl.unwrap_or(rest.len()) > MAX_LINE {
                        return Err(ChunkedError::LineTooLong);
                    }
                    let Some(nl) = nl else { return Ok(i) };
                    let line = rest[..nl].strip_suffix(b"\r").unwrap_or(&rest[..nl]);
                    i += nl + 1;
                    if let Chunked::Trailer(seen) = *self {
                        let seen = seen + nl + 1;
                        *self = if line.is_empty() {
                            Chunked::Done
                        } else if seen > MAX_TRAILERS {
                            return Err(ChunkedError::TrailersTooLarge);
                        } else {
                            Chunked::Trailer(seen)
                        };
                        continue;
                    }
                    let size = line.split(|&b| b == b';').next().unwrap_or_default();
                    let n = match plain_hex(size) {
                        Some(n) => n,
                        None => {
                            let size = std::str::from_utf8(size).ok().map(str::trim).unwrap_or("");
                            u64::from_str_radix(size, 16)
                                .map_err(|_| ChunkedError::BadSize(String::from_utf8_lossy(line).into_owned()))?
                        }
                    };
                    *self = if n == 0 { Chunked::Trailer(0) } else { Chunked::Data(n) };
                }
                Chunked::Data(left) => {
                    if rest.is_empty() {
                        return Ok(i);
                    }
                    let take = (left as usize).min(rest.len());
                    out(i..i + take);
                    i += take;
                    *self = if take as u64 == left { Chunked::DataEnd } else { Chunked::Data(left - take as u64) };
                }
                Chunked::DataEnd => match rest {
                    [] | [b'\r'] => return Ok(i),
                    [b'\r', b'\n', ..] => {
                        i += 2;
                        *self = Chunked::Size;
                    }
                    [b'\n', ..] => {
                        i += 1;
                        *self = Chunked::Size;
                    }
                    _ => return Err(ChunkedError::NoCrlf),
                },
            }
        }
    }
}

/// A size line of 1 to 16 hex digits and nothing else (what servers write),
/// read without the general path's UTF-8 check and trim; `None` for any
/// other line, which that path reads.
fn plain_hex(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| Some(n << 4 | u64::from((b as char).to_digit(16)?)))
}

#[cfg(test)]
mod tests {
    use super::plain_hex;

    /// Wherever the plain reading answers, it answers as the general path
    /// (UTF-8, trimmed, base 16) does.
    fn general(b: &[u8]) -> Option<u64> {
        u64::from_str_radix(std::str::from_utf8(b).ok()?.trim(), 16).ok()
    }

    #[test]
    fn plain_sizes_read_as_the_general_path_reads_them() {
        for b in [&b"0"[..], b"1a", b"FFFF", b"ffffffffffffffff"] {
            assert_eq!(plain_hex(b), general(b), "{:?}", String::from_utf8_lossy(b));
        }
        // Left to the general path: signs, spaces, empty, too long, not hex.
        for b in [&b"+1"[..], b" 1", b"1 ", b"", b"00000000000000001", b"g", b"\xc2\xa01"] {
            assert_eq!(plain_hex(b), None, "{:?}", String::from_utf8_lossy(b));
        }
    }

    proptest::proptest! {
        #[test]
        fn any_size_line_the_plain_reading_takes_reads_the_same(b in proptest::collection::vec(
            proptest::sample::select(b"0123456789abcdefABCDEFgx +-; \t".to_vec()), 0..20)) {
            if let Some(n) = plain_hex(&b) {
                proptest::prop_assert_eq!(Some(n), general(&b));
            }
        }
    }
}
