//! A Server-Sent Events reader fed raw bytes as they come off the socket.
//! Events may be split anywhere across reads; lines end in LF, CRLF or CR;
//! comments and keep-alives are dropped; multi-line `data:` joins with LF.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event type.
    pub event: Option<String>,
    pub data: String,
}

/// Incremental SSE parser (WHATWG "interpreting an event stream").
#[derive(Debug, Default)]
pub struct SseReader {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    /// The `event:` field's buffer (its value while `has_event`).
    event: String,
    has_event: bool,
    /// The previous byte was a CR: a following LF belongs to the same line end.
    after_cr: bool,
    /// Past the stream's first bytes: a byte order mark is dropped only there.
    started: bool,
    /// How many bytes of a byte order mark have come at the start, held
    /// until the mark is whole (dropped) or not (read as the stream's).
    bom_held: usize,
}

/// Each event handed out borrowed, kept as an owned [`SseEvent`] in `out`.
fn owned(out: &mut Vec<SseEvent>) -> impl FnMut(Option<&str>, &str) + '_ {
    |event, data| out.push(SseEvent { event: event.map(str::to_owned), data: data.to_owned() })
}

/// When `bytes` starts with a `data:` line (ending at `end`, a line end)
/// of UTF-8 followed by a blank line, with both line ends plainly in
/// `bytes` (LF, or CRLF): the data, and what follows the blank line.
fn whole_data_event(bytes: &[u8], end: usize) -> Option<(&str, &[u8])> {
    let value = bytes[..end].strip_prefix(b"data:")?;
    let value = value.strip_prefix(b" ").unwrap_or(value);
    let ending = match bytes[end..] {
        [b'\n', b'\n', ..] => 2,
        [b'\r', b'\n', b'\r', b'\n', ..] => 4,
        _ => return None,
    };
    let data = std::str::from_utf8(value).ok()?;
    Some((data, &bytes[end + ending..]))
}

/// The UTF-8 byte order mark, which the SSE standard drops from the start of
/// a stream (as the first event's field name it would lose that event).
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; complete events are appended to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        self.feed_each(bytes, &mut owned(out));
    }

    /// Feeds bytes; each complete event is handed to `out` as its type
    /// (`event:`) and data, borrowed: no allocation per event (the buffers
    /// keep their capacity from one event to the next).
    pub fn feed_each(&mut self, mut bytes: &[u8], out: &mut impl FnMut(Option<&str>, &str)) {
        if !self.started {
            let held = self.bom_held;
            let matched = bytes.iter().zip(&BOM[held..]).take_while(|(a, b)| a == b).count();
            if held + matched == BOM.len() {
                self.started = true;
                bytes = &bytes[matched..];
            } else if matched == bytes.len() {
                // All of it may still be the mark: wait for the rest.
                self.bom_held = held + matched;
                return;
            } else {
                // Not a mark: what was held is the stream's, then all of this.
                self.started = true;
                self.lines(&BOM[..held], out);
            }
        }
        self.lines(bytes, out);
    }

    /// Reads `bytes` into lines and events (after the start of the stream).
    fn lines(&mut self, mut bytes: &[u8], out: &mut impl FnMut(Option<&str>, &str)) {
        // An empty read must not forget a CR that ended the last one: the LF
        // of the same line end may still come (found by fuzzing).
        if bytes.is_empty() {
            return;
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', bytes) {
            if self.line.is_empty() && !self.has_data {
                // A whole one-line event in this read (what servers stream
                // a token in): handed out where it lies, not copied first.
                if let Some((data, rest)) = whole_data_event(bytes, pos) {
                    out(self.has_event.then_some(self.event.as_str()), data);
                    self.has_event = false;
                    bytes = rest;
                    continue;
                }
            }
            if self.line.is_empty() {
                // The whole line is in this read: parsed where it lies.
                self.process_line(&bytes[..pos], out);
            } else {
                self.line.extend_from_slice(&bytes[..pos]);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, out);
                self.line = line;
                self.line.clear();
            }
            if bytes[pos] == b'\r' {
                match bytes.get(pos + 1) {
                    Some(b'\n') => bytes = &bytes[pos + 2..],
                    Some(_) => bytes = &bytes[pos + 1..],
                    None => {
                        self.after_cr = true;
                        bytes = &[];
                    }
                }
            } else {
                bytes = &bytes[pos + 1..];
            }
        }
        self.line.extend_from_slice(bytes);
    }

    /// Bytes held for the line and the event not yet ended.
    pub fn pending(&self) -> usize {
        self.line.len() + self.data.len()
    }

    /// End of stream. A final event whose blank line never came is still
    /// dispatched: servers that close right after the last `data:` line mean it.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        self.finish_each(&mut owned(out));
    }

    /// [`SseReader::finish`], each event handed to `out` as by [`SseReader::feed_each`].
    pub fn finish_each(&mut self, out: &mut impl FnMut(Option<&str>, &str)) {
        if !self.started {
            // The stream ended inside what might have been a mark: it was not one.
            self.started = true;
            self.lines(&BOM[..self.bom_held], out);
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out);
        }
        self.dispatch(out);
    }

    fn process_line(&mut self, line: &[u8], out: &mut impl FnMut(Option<&str>, &str)) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return; // comment or keep-alive
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                match std::str::from_utf8(value) {
                    Ok(v) => self.data.push_str(v),
                    Err(_) => self.data.push_str(&String::from_utf8_lossy(value)),
                }
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
                self.has_event = true;
            }
            _ => {} // id, retry and unknown fields do not concern a benchmark client
        }
    }

    fn dispatch(&mut self, out: &mut impl FnMut(Option<&str>, &str)) {
        if self.has_data {
            out(self.has_event.then_some(self.event.as_str()), &self.data);
        }
        self.data.clear();
        self.has_data = false;
        self.has_event = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut r = SseReader::new();
        let mut out = Vec::new();
        for c in chunks {
            r.feed(c, &mut out);
        }
        r.finish(&mut out);
        out
    }

    fn data(s: &str) -> SseEvent {
        SseEvent { event: None, data: s.into() }
    }

    #[test]
    fn line_endings_comments_and_multiline() {
        let text =
            b": keep-alive\r\n\r\ndata: a\r\ndata:b\r\n\r\nevent: error\ndata: {\"x\":1}\n\n:\n\ndata: c\rdata: d\r\r";
        let got = parse_all(&[text]);
        assert_eq!(
            got,
            vec![data("a\nb"), SseEvent { event: Some("error".into()), data: "{\"x\":1}".into() }, data("c\nd"),]
        );
    }

    #[test]
    fn every_two_way_split_gives_the_same_events() {
        let text = b"data: one\r\n\r\n: ping\n\ndata: two\ndata: lines\n\nevent: e\ndata: [DONE]\r\n\r\n";
        let whole = parse_all(&[text]);
        assert_eq!(whole.len(), 3);
        for i in 0..=text.len() {
            assert_eq!(parse_all(&[&text[..i], &text[i..]]), whole, "split at {i}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(parse_all(&bytes), whole);
    }

    #[test]
    fn event_without_trailing_blank_line_is_dispatched_at_end() {
        assert_eq!(parse_all(&[b"data: last"]), vec![data("last")]);
        assert_eq!(parse_all(&[b"data: x\n\n: trailing comment"]), vec![data("x")]);
    }

    /// Pieces of a stream as servers send it (fields, comments, every line
    /// ending, a cut UTF-8 sequence) and arbitrary bytes.
    fn sse_piece() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop_oneof![
            Just(b"data: ".to_vec()),
            Just(b"data:".to_vec()),
            Just(b"event: error".to_vec()),
            Just(b": ping".to_vec()),
            Just(b"id: 7".to_vec()),
            Just(b"{\"x\":1}".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(vec![0xE2, 0x82]),
            Just(BOM.to_vec()),
            Just(BOM[..2].to_vec()),
            proptest::collection::vec(any::<u8>(), 0..12),
        ]
    }

    proptest::proptest! {
        // PROPTEST_CASES=N, set when running, runs N cases: a longer search.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Any bytes, split anywhere, read without panicking and to the same
        /// events as when they come whole.
        #[test]
        fn any_bytes_split_anywhere_give_the_same_events(
            pieces in proptest::collection::vec(sse_piece(), 0..40),
            cuts in proptest::collection::vec(proptest::prelude::any::<usize>(), 0..12),
        ) {
            let bytes = pieces.concat();
            let split = crate::testing::split_at_cuts(&bytes, &cuts);
            proptest::prop_assert_eq!(parse_all(&[&bytes]), parse_all(&split));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// A byte order mark at the very start of a stream (issue 29, defect
        /// 6), split from the rest anywhere, even inside the mark and with
        /// empty reads, is dropped: the same events as the stream without it.
        #[test]
        fn a_leading_byte_order_mark_is_dropped_in_any_split(
            pieces in proptest::collection::vec(sse_piece(), 0..40),
            cuts in proptest::collection::vec(proptest::prelude::any::<usize>(), 0..12),
        ) {
            let stream = pieces.concat();
            // A second mark right after the first is the stream's own, not dropped.
            proptest::prop_assume!(!stream.starts_with(BOM));
            let with_mark = [BOM, &stream].concat();
            let split = crate::testing::split_at_cuts(&with_mark, &cuts);
            proptest::prop_assert_eq!(parse_all(&split), parse_all(&[&stream]));
        }
    }

    #[test]
    fn a_byte_order_mark_only_at_the_start_and_only_whole() {
        let events = [data("a"), data("b")];
        for cut in 0..=4 {
            let s = b"\xEF\xBB\xBFdata: a\n\ndata: b\n\n";
            assert_eq!(parse_all(&[&s[..cut], &s[cut..]]), events, "cut at {cut}");
        }
        // A mark later on is the line's, as the standard says: that event's field is unknown.
        assert_eq!(parse_all(&[b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"]), [data("a")]);
        // Bytes that only begin like a mark are kept.
        assert_eq!(parse_all(&[b"\xEF", b"\xBBdata: a\n\n"]), []);
        assert_eq!(parse_all(&[b"\xEF\xBB"]), []);
        let mut r = SseReader::new();
        let mut out = Vec::new();
        r.feed(b"\xEF\xBB", &mut out);
        r.feed(b"x", &mut out);
        assert_eq!(r.pending(), 3, "the two held bytes and the next are the line's");
    }

    #[test]
    fn empty_data_field_still_dispatches() {
        assert_eq!(parse_all(&[b"data\n\n"]), vec![data("")]);
        assert_eq!(parse_all(&[b"event: only\n\n"]), vec![]);
    }
}
