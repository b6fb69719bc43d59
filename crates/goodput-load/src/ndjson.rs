//! Newline-delimited JSON framing (Ollama's streams).

/// Splits a byte stream into lines for NDJSON: lines may be split anywhere
/// across reads and end in LF or CRLF; blank lines are skipped.
#[derive(Debug, Default)]
pub struct LineReader {
    partial: Vec<u8>,
}

impl LineReader {
    /// Feeds bytes; each complete non-blank line is passed to `f`.
    pub fn feed(&mut self, mut bytes: &[u8], f: &mut impl FnMut(&str)) {
        while let Some(pos) = memchr::memchr(b'\n', bytes) {
            if self.partial.is_empty() {
                emit(&bytes[..pos], f);
            } else {
                self.partial.extend_from_slice(&bytes[..pos]);
                let line = std::mem::take(&mut self.partial);
                emit(&line, f);
            }
            bytes = &bytes[pos + 1..];
        }
        self.partial.extend_from_slice(bytes);
    }

    /// Bytes held for the line not yet ended.
    pub fn pending(&self) -> usize {
        self.partial.len()
    }

    /// End of stream: a last line without its newline still counts.
    pub fn finish(&mut self, f: &mut impl FnMut(&str)) {
        let line = std::mem::take(&mut self.partial);
        emit(&line, f);
    }
}

fn emit(line: &[u8], f: &mut impl FnMut(&str)) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // A byte order mark (at the stream's start) is no part of the JSON.
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    f(&String::from_utf8_lossy(line));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_anywhere() {
        let stream = b"{\"a\":1}\n\r\n{\"b\":\"x y\"}\r\n\n{\"c\":3}";
        let want = ["{\"a\":1}", "{\"b\":\"x y\"}", "{\"c\":3}"];
        for cut1 in 0..=stream.len() {
            for cut2 in cut1..=stream.len() {
                let mut r = LineReader::default();
                let mut got = Vec::new();
                let mut f = |l: &str| got.push(l.to_owned());
                r.feed(&stream[..cut1], &mut f);
                r.feed(&stream[cut1..cut2], &mut f);
                r.feed(&stream[cut2..], &mut f);
                r.finish(&mut f);
                assert_eq!(got, want, "cut at {cut1} and {cut2}");
            }
        }
    }

    /// The lines `parts`, fed in turn, give.
    fn lines_of(parts: &[&[u8]]) -> Vec<String> {
        let mut r = LineReader::default();
        let mut got = Vec::new();
        let mut f = |l: &str| got.push(l.to_owned());
        for p in parts {
            r.feed(p, &mut f);
        }
        r.finish(&mut f);
        got
    }

    proptest::proptest! {
        // PROPTEST_CASES=N, set when running, runs N cases: a longer search.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Any bytes (lines, blank ones, CRLFs, cut UTF-8 and arbitrary
        /// bytes), split anywhere, read without panicking and to the same
        /// lines as when they come whole.
        #[test]
        fn any_bytes_split_anywhere_give_the_same_lines(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just(b"{\"done\":false}".to_vec()),
                    proptest::strategy::Just(b"\n".to_vec()),
                    proptest::strategy::Just(b"\r\n".to_vec()),
                    proptest::strategy::Just(b" \t".to_vec()),
                    proptest::strategy::Just(vec![0xE2, 0x82]),
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
                ],
                0..40,
            ),
            cuts in proptest::collection::vec(proptest::prelude::any::<usize>(), 0..12),
        ) {
            let bytes = pieces.concat();
            let split = crate::testing::split_at_cuts(&bytes, &cuts);
            proptest::prop_assert_eq!(lines_of(&[&bytes]), lines_of(&split));
        }
    }
}
