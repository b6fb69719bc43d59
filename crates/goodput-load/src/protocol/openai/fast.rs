//! A fast path for the streamed chunks OpenAI-compatible servers send most:
//! one choice whose delta (or text) is a plain string, no usage, no error.
//! It reads the payload in one pass, borrowing the strings it keeps, and
//! builds the same choice serde would ([`super::parse_chunk`] then reads it
//! as ever). Anything it is not sure of (an escape in any string, a field
//! of an unexpected type, a repeated field, usage, an error, tool calls,
//! more than one choice, invalid JSON) gives `None`, and the payload goes
//! to serde_json: the fast path only ever answers where it answers as
//! serde would, which the tests check on every fixture and on odd inputs.

use super::{WireChoice, WireMessage};
use std::borrow::Cow;

/// Deeper than this, a skipped value is left to serde (its own limit is 128).
const MAX_DEPTH: u32 = 32;

/// How far [`Parser::string`] reads a string byte by byte before it
/// searches for the end instead.
const SHORT: usize = 24;

/// The bytes that end a plain string's run: its closing quote, a backslash
/// and the control characters (which JSON does not allow unescaped).
pub(super) const STOPS: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Reads `data` into `choice` (its one choice, if any) if it is a plain
/// chunk; `None`: leave it to serde (and `choice` with it). The choice is
/// built in place: a choice is a few hundred bytes, and returning it
/// through each level copied it at each.
pub(super) fn parse<'a>(data: &'a str, choice: &mut Option<WireChoice<'a>>) -> Option<()> {
    let mut p = Parser { s: data.as_bytes(), i: 0, src: data };
    let mut seen = [false; 5];
    let mut once = |k: usize| !std::mem::replace(&mut seen[k], true);
    p.object(|p, key| {
        match key {
            "choices" if once(0) => p.choices(choice)?,
            "object" if once(1) => {
                // `"object": "error"` is older vLLM's error payload: serde's.
                if p.string_or_null()? == Some("error") {
                    return None;
                }
            }
            // Usage, errors and an error's message are serde's, unless null
            // (as pydantic-built servers send them: `"usage":null`), which
            // serde reads as absent.
            "usage" if once(2) => p.null()?.then_some(())?,
            "error" if once(3) => p.null()?.then_some(())?,
            "message" if once(4) => p.null()?.then_some(())?,
            // FastAPI's error shape (`{"detail": …}`): serde's, which reads it as an error.
            "detail" => return None,
            // A repeated field: serde's error.
            "choices" | "object" | "usage" | "error" | "message" => return None,
            _ => p.skip(0)?,
        }
        Some(())
    })?;
    p.ws();
    (p.i == p.s.len()).then_some(())
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    src: &'a str,
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.i += 1)
    }

    /// An object: `field` is called with each key, the parser before its
    /// value, and must read the value.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.closes(b'}')? {
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            field(self, key)?;
            if self.ends(b'}')? {
                return Some(());
            }
        }
    }

    /// Eats `close` if it comes next: whether it did.
    fn closes(&mut self, close: u8) -> Option<bool> {
        let closed = self.peek()? == close;
        self.i += usize::from(closed);
        Some(closed)
    }

    /// After a member of an object or an array: a comma (false: another
    /// member follows) or `close` (true: the end); anything else is not JSON.
    fn ends(&mut self, close: u8) -> Option<bool> {
        match self.peek()? {
            b',' => {
                self.i += 1;
                Some(false)
            }
            b if b == close => {
                self.i += 1;
                Some(true)
            }
            _ => None,
        }
    }

    /// A string without escapes or control characters, borrowed.
    fn string(&mut self) -> Option<&'a str> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i + 1;
        let rest = &self.s[start..];
        // Most strings of a chunk are short (its keys, a token's text):
        // read byte by byte, one table look a byte, as far as `SHORT`;
        // a longer one is searched for its end and then checked.
        let mut len = 0;
        loop {
            match rest.get(len) {
                None => return None,
                Some(&b) if STOPS[b as usize] => break,
                Some(_) if len + 1 == SHORT => {
                    len = memchr::memchr2(b'"', b'\\', rest)?;
                    if rest[..len].iter().any(|&b| b < 0x20) {
                        return None;
                    }
                    break;
                }
                Some(_) => len += 1,
            }
        }
        let end = start + len;
        // A backslash (an escape) or a control character: serde's.
        if self.s[end] != b'"' {
            return None;
        }
        self.i = end + 1;
        // Quotes are ASCII: both ends lie on character boundaries.
        Some(&self.src[start..end])
    }

    fn null(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(true);
        }
        Some(false)
    }

    fn string_or_null(&mut self) -> Option<Option<&'a str>> {
        if self.null()? {
            return Some(None);
        }
        self.string().map(Some)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.s[self.i..].starts_with(word).then(|| self.i += word.len())
    }

    /// A number, checked against JSON's grammar as serde checks it.
    fn number(&mut self) -> Option<()> {
        let digits = |p: &mut Self| {
            let from = p.i;
            while p.s.get(p.i).is_some_and(u8::is_ascii_digit) {
                p.i += 1;
            }
            (p.i > from).then_some(())
        };
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.s.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => digits(self)?,
            _ => return None,
        }
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            digits(self)?;
        }
        if let Some(b'e' | b'E') = self.s.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.s.get(self.i) {
                self.i += 1;
            }
            digits(self)?;
        }
        Some(())
    }

    /// Any value, checked and passed over.
    fn skip(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|p, _| p.skip(depth + 1)),
            b'[' => {
                self.i += 1;
                if self.closes(b']')? {
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    if self.ends(b']')? {
                        return Some(());
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    /// `choices`: null, or an array of at most one choice object, read into `out`.
    fn choices(&mut self, out: &mut Option<WireChoice<'a>>) -> Option<()> {
        if self.null()? {
            return Some(());
        }
        self.eat(b'[')?;
        if self.closes(b']')? {
            return Some(());
        }
        self.choice(out.insert(WireChoice { delta: None, message: None, text: None, finish_reason: None }))?;
        self.eat(b']')
    }

    fn choice(&mut self, c: &mut WireChoice<'a>) -> Option<()> {
        let mut seen = [false; 4];
        let mut once = |k: usize| !std::mem::replace(&mut seen[k], true);
        self.object(|p, key| {
            match key {
                "delta" if once(0) => p.message(&mut c.delta)?,
                "message" if once(1) => p.message(&mut c.message)?,
                "text" if once(2) => c.text = p.string_or_null()?.map(Cow::Borrowed),
                "finish_reason" if once(3) => c.finish_reason = p.string_or_null()?.map(Cow::Borrowed),
                "delta" | "message" | "text" | "finish_reason" => return None,
                _ => p.skip(1)?,
            }
            Some(())
        })
    }

    /// A delta or message, read into `out`: null, or an object of strings (a
    /// tool or function call is serde's).
    fn message(&mut self, out: &mut Option<WireMessage<'a>>) -> Option<()> {
        if self.null()? {
            return Some(());
        }
        let m = out.insert(WireMessage::empty());
        let mut seen = [false; 7];
        let mut once = |k: usize| !std::mem::replace(&mut seen[k], true);
        self.object(|p, key| {
            let text = |p: &mut Self| p.string_or_null().map(|s| s.map(Cow::Borrowed));
            match key {
                "content" if once(0) => m.content = text(p)?.map(super::WireContent::text),
                "reasoning_content" if once(1) => m.reasoning_content = text(p)?,
                "reasoning" if once(2) => m.reasoning = text(p)?,
                "thinking" if once(3) => m.thinking = text(p)?,
                "role" if once(4) => {
                    p.skip(2)?;
                    m.role = true;
                }
                // A call is serde's; no call (null) is absent to serde too.
                "tool_calls" if once(5) => p.null()?.then_some(())?,
                "function_call" if once(6) => p.null()?.then_some(())?,
                "content" | "reasoning_content" | "reasoning" | "thinking" | "role" => return None,
                "tool_calls" | "function_call" => return None,
                _ => p.skip(2)?,
            }
            Some(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_chunk, parse_chunk_into, parse_chunk_serde, ChunkInfo, ChunkMemo};
    use super::parse;

    /// The fast path and serde agree on `data` (the same chunk, or errors
    /// alike); true when the fast path read it.
    fn same(data: &str) -> bool {
        let (got, want) = (parse_chunk(data), parse_chunk_serde(data));
        match (&got, &want) {
            (Ok(g), Ok(w)) => assert_eq!(g, w, "{data}"),
            (Err(g), Err(w)) => assert_eq!(g.to_string(), w.to_string(), "{data}"),
            _ => panic!("{data}: fast {got:?}, serde {want:?}"),
        }
        parse(data, &mut None).is_some()
    }

    fn payloads(file: &str) -> Vec<String> {
        let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        text.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_owned).collect()
    }

    /// Reads `payloads` in turn as one stream does (one memo), each as serde
    /// reads it alone; how many were read from the memo.
    fn read_in_turn<S: AsRef<str>>(payloads: &[S]) -> usize {
        let (mut memo, mut info, mut recalled) = (ChunkMemo::default(), ChunkInfo::default(), 0);
        for data in payloads.iter().map(AsRef::as_ref) {
            recalled += usize::from(memo.recall(data, &mut ChunkInfo::default()));
            let got = parse_chunk_into(data, &mut info, &mut memo).map(|()| std::mem::take(&mut info));
            match (got, parse_chunk_serde(data)) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "{data}"),
                (Err(g), Err(w)) => assert_eq!(g.to_string(), w.to_string(), "{data}"),
                (g, w) => panic!("{data}: in turn {g:?}, serde {w:?}"),
            }
        }
        recalled
    }

    #[test]
    fn a_stream_read_from_its_memo_reads_as_serde_reads_each_payload() {
        let chat = |mid: &str| {
            format!(r#"{{"id":"c","choices":[{{"index":0,"delta":{{"content":"{mid}"}},"finish_reason":null}}]}}"#)
        };
        let stream = [
            chat("a"),
            chat("b"),             // the memo's
            chat(""),              // the memo's: an empty token (vLLM counts it)
            chat("héllo 😀 世界"), // the memo's: UTF-8 between the same bytes
            chat(r#"a\"b"#),       // an escape: serde's
            chat("a\\tb"),         // an escape again
            chat("x"),             // the memo's: the escapes left it as it was
            chat("tab\there"),     // a control character: serde's error
            // The same bytes around more than a string: the quotes in
            // between send it to the parser (and two strings are not
            // remembered).
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"a","reasoning":"b"},"finish_reason":null}]}"#.into(),
            chat("y"), // the memo's
            // A role beside the string: parsed, and remembered with it.
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"a","role":"r"},"finish_reason":null}]}"#.into(),
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"","role":"r"},"finish_reason":null}]}"#.into(), // the memo's
            chat("y"),
            // Shorter than the memo's ends.
            r#"{"id":"c","choices":[]}"#.into(),
            chat("z"), // the memo's
            // Another id: parsed, and remembered.
            r#"{"id":"d","choices":[{"index":0,"delta":{"content":"z"},"finish_reason":null}]}"#.into(),
            r#"{"id":"d","choices":[{"index":0,"delta":{"content":"zz"},"finish_reason":null}]}"#.into(), // the memo's
            r#"{"id":"d","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#.into(),
            "[1]".into(),
            chat("w"),
        ];
        assert_eq!(read_in_turn(&stream), 8);

        let reasoning = |mid: &str| {
            format!(
                r#"{{"choices":[{{"delta":{{"content":null,"reasoning_content":"{mid}"}},"finish_reason":null}}]}}"#
            )
        };
        let text =
            |mid: &str| format!(r#"{{"choices":[{{"text":"{mid}","index":0,"logprobs":null,"finish_reason":null}}]}}"#);
        let role = |mid: &str| format!(r#"{{"choices":[{{"delta":{{"role":"assistant","content":"{mid}"}}}}]}}"#);
        let thinking = |mid: &str| format!(r#"{{"choices":[{{"delta":{{"thinking":"{mid}"}}}}]}}"#);
        // vLLM's own reasoning field, which its client counts as output.
        let vllm_reasoning = |mid: &str| format!(r#"{{"choices":[{{"delta":{{"reasoning":"{mid}"}}}}]}}"#);
        let shapes: [&dyn Fn(&str) -> String; 5] = [&reasoning, &text, &role, &thinking, &vllm_reasoning];
        for (f, hits) in shapes.into_iter().zip([2, 2, 2, 2, 2]) {
            assert_eq!(read_in_turn(&[f("a"), f("b"), f(""), f("\\\\")]), hits, "{}", f("a"));
        }
        // A payload whose ends do not fit in the memo is parsed every time.
        let long =
            |mid: &str| format!(r#"{{"id":"{}","choices":[{{"delta":{{"content":"{mid}"}}}}]}}"#, "i".repeat(300));
        assert_eq!(read_in_turn(&[long("a"), long("b")]), 0);
    }

    #[test]
    fn every_fixture_payload_reads_as_serde_reads_it() {
        let mut fast = 0;
        let mut all = 0;
        for file in [
            "llamacpp/chat-stream-usage.sse",
            "llamacpp/completions-stream-usage.sse",
            "llamacpp/completions-stream.sse",
        ] {
            let payloads = payloads(file);
            for data in &payloads {
                all += 1;
                fast += usize::from(same(data));
            }
            // Read in turn, llama.cpp's token chunks come from the memo.
            let recalled = read_in_turn(&payloads);
            assert!(recalled > payloads.len() / 2, "{file}: {recalled} of {}", payloads.len());
        }
        let whole =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/llamacpp/chat-nostream.json"))
                .unwrap();
        same(&whole);
        // The token chunks took the fast path; usage and [DONE] did not.
        assert!(fast > all / 2 && fast < all, "{fast} of {all}");
    }

    #[test]
    fn goodput_serves_chunks_the_fast_path_reads() {
        let chat = r#"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}"#;
        let text = r#"{"id":"cmpl-7","object":"text_completion","created":1700000000,"model":"m","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null}]}"#;
        let role = r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}"#;
        let last = r#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#;
        for data in [chat, text, role, last] {
            assert!(same(data), "{data}");
        }
        assert_eq!(parse_chunk(chat).unwrap().text, " word");
        assert_eq!(parse_chunk(last).unwrap().finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn odd_payloads_read_as_serde_reads_them() {
        let cases = [
            // Escapes and unicode.
            r#"{"choices":[{"delta":{"content":"a\"b\n"}}]}"#,
            r#"{"choices":[{"delta":{"content":"\u00e9\ud83d\ude00"}}]}"#,
            r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#,
            r#"{"choices":[{"delta":{"content":"héllo 😀 世界"}}]}"#,
            r#"{"id":"a\"b","choices":[{"delta":{"content":"x"}}]}"#,
            "{\"choices\":[{\"delta\":{\"content\":\"tab\there\"}}]}",
            // Long strings: an escape, a control character, the plain end, no end.
            r#"{"choices":[{"delta":{"content":"0123456789abcdefghijklmn\"o"}}]}"#,
            r#"{"choices":[{"delta":{"content":"0123456789abcdefghijklmnopq\n"}}]}"#,
            "{\"choices\":[{\"delta\":{\"content\":\"0123456789abcdefghijklmnop\tq\"}}]}",
            r#"{"choices":[{"delta":{"content":"0123456789abcdefghijklmnopqrstuvwxyz"}}]}"#,
            r#"{"choices":[{"delta":{"content":"0123456789abcdefghijklmn"}}]}"#,
            r#"{"choices":[{"delta":{"content":"0123456789abcdefghijklmnopqrstuvwxyz"#,
            // Where the byte-by-byte read of a string hands over to a search (24 bytes).
            "{\"choices\":[{\"delta\":{\"content\":\"0123456789abcdefghijklm\tn\"}}]}",
            "{\"choices\":[{\"delta\":{\"content\":\"0123456789abcdefghijklmn\to\"}}]}",
            "{\"choices\":[{\"delta\":{\"content\":\"0123456789abcdefghijklmno\tp\"}}]}",
            r#"{"choices":[{"delta":{"content":"0123456789abcdefghijklm\"n"}}]}"#,
            r#"{"choices":[{"delta":{"content":"0123456789abcdefghijklmn\"o"}}]}"#,
            r#"{"choices":[{"delta":{"content":"0123456789abcdefghijklm"}}]}"#,
            r#"{"choices":[{"delta":{"content":"0123456789abcdefghijklmno"}}]}"#,
            // Null and empty content, roles.
            r#"{"choices":[{"delta":{"content":null}}]}"#,
            r#"{"choices":[{"delta":{"content":""}}]}"#,
            r#"{"choices":[{"delta":{"role":null,"content":""}}]}"#,
            r#"{"choices":[{"delta":{"role":{"x":[1,2,{"y":null}]},"content":"hi"}}]}"#,
            r#"{"choices":[{"delta":null,"text":null}]}"#,
            r#"{"choices":null}"#,
            r#"{"choices":[]}"#,
            r#"{}"#,
            // Reasoning.
            r#"{"choices":[{"delta":{"reasoning_content":"hmm","content":null}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"hmm"}}]}"#,
            r#"{"choices":[{"delta":{"thinking":"hmm","reasoning":""}}]}"#,
            // Tool and function calls.
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":null,"content":"x"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[]}}]}"#,
            r#"{"choices":[{"delta":{"function_call":{"name":"f"}}}]}"#,
            r#"{"choices":[{"delta":{"function_call":null}}]}"#,
            // Nulls for a call, usage, an error or its message, as
            // pydantic-built servers send them (SGLang's chunks), and
            // repeated.
            r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":null,"content":" word","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}"#,
            r#"{"choices":[{"delta":{"content":"x","function_call":null}}],"error":null,"message":null}"#,
            r#"{"choices":[{"delta":{"content":"x","tool_calls":null,"tool_calls":null}}]}"#,
            r#"{"choices":[{"delta":{"content":"x","tool_calls":null,"tool_calls":[]}}]}"#,
            r#"{"choices":[{"delta":{"content":"x","function_call":null,"function_call":null}}]}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],"usage":null,"usage":null}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],"usage":null,"usage":{"completion_tokens":1}}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],"error":null,"error":null}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],"error":null,"error":{"message":"m"}}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],"message":null,"message":"m"}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],"choices":[]}"#,
            r#"{"object":null,"object":"chat.completion.chunk","choices":[]}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],"usage":nul}"#,
            r#"{"choices":[{"delta":{"content":"x","tool_calls":nul}}]}"#,
            // Usage, errors.
            r#"{"choices":[],"usage":{"prompt_tokens":15,"completion_tokens":24}}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],"usage":null}"#,
            r#"{"choices":[{"text":" x","finish_reason":"length"}],"usage":{"completion_tokens":3}}"#,
            r#"{"error":{"message":"out of memory","code":500}}"#,
            r#"{"error":null,"choices":[{"delta":{"content":"x"}}]}"#,
            r#"{"object":"error","message":"out of KV cache","type":"BadRequestError","code":400}"#,
            r#"{"object":"chat.completion.chunk","choices":[]}"#,
            r#"{"object":5,"choices":[]}"#,
            r#"{"message":"x","choices":[]}"#,
            // Two choices; a choice of another shape.
            r#"{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}"#,
            r#"{"choices":[{"delta":{"content":"a"}},5]}"#,
            r#"{"choices":[["x"]]}"#,
            r#"{"choices":[{"delta":["hi"]}]}"#,
            r#"{"choices":{"delta":{"content":"a"}}}"#,
            // Repeated fields.
            r#"{"choices":[],"choices":[]}"#,
            r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
            r#"{"choices":[{"delta":{"role":"a","role":"b"}}]}"#,
            r#"{"choices":[{"text":"a","text":"b"}]}"#,
            r#"{"choices":[{"index":0,"index":1,"text":"a"}]}"#,
            r#"{"x":1,"x":2,"choices":[{"text":"a"}]}"#,
            // Wrong types.
            r#"{"choices":[{"delta":{"content":5}}]}"#,
            r#"{"choices":[{"finish_reason":1}]}"#,
            r#"{"choices":[{"text":true}]}"#,
            // Numbers, literals, whitespace, depth.
            r#"{"created":-1.5e+10,"choices":[{"text":"a"}]}"#,
            r#"{"created":01,"choices":[{"text":"a"}]}"#,
            r#"{"created":1.,"choices":[{"text":"a"}]}"#,
            r#"{"created":-,"choices":[{"text":"a"}]}"#,
            r#"{"created":1e,"choices":[{"text":"a"}]}"#,
            r#"{"created":.5,"choices":[{"text":"a"}]}"#,
            r#"{"created":+1,"choices":[{"text":"a"}]}"#,
            r#"{"created":NaN,"choices":[{"text":"a"}]}"#,
            r#"{"a":true,"b":false,"c":null,"d":[],"e":{},"choices":[{"text":"a"}]}"#,
            r#"{"a":tru,"choices":[{"text":"a"}]}"#,
            r#"{"a":nul}"#,
            " \t\r\n{ \"choices\" : [ { \"text\" : \"a\" } ] } \n",
            r#"{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],"choices":[]}"#,
            "{\"choices\":[{\"text\":\"a\u{1}\"}]}",
            // Not an object, not whole, not one.
            r#"[{"choices":[]}]"#,
            r#"[[{"delta":{"content":"x"}}]]"#,
            r#"{"choices":[{"text":"a"}]} x"#,
            r#"{"choices":[{"text":"a"}]}{}"#,
            r#"{"choices":[{"text":"a"}],}"#,
            r#"{"choices":[{"text":"a"},]}"#,
            r#"{"choices":[{"text":"a"}]"#,
            r#"{"choices":[{"text":"a}]}"#,
            r#"{choices:[]}"#,
            "",
            "[DONE]",
            "null",
        ];
        for data in cases {
            same(data);
        }
    }

    #[test]
    fn the_nulls_pydantic_servers_send_take_the_fast_path() {
        // An SGLang chat chunk: every optional field written, as null.
        let sglang = r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":null,"content":" word","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}"#;
        assert!(same(sglang));
        assert!(same(r#"{"choices":[{"delta":{"content":"x","function_call":null}}],"error":null,"message":null}"#));
        // Repeated, they are serde's (its error).
        assert!(!same(r#"{"choices":[{"delta":{"content":"x"}}],"usage":null,"usage":null}"#));
        assert!(!same(r#"{"choices":[{"delta":{"content":"x","tool_calls":null,"tool_calls":null}}]}"#));
        // And such a stream is read from its memo after its first token.
        let chunk = |mid: &str| sglang.replace(" word", mid);
        assert_eq!(read_in_turn(&[chunk("a"), chunk("b"), chunk("")]), 2);
    }

    /// Pieces of OpenAI chunks, and stray bytes.
    fn piece() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just(r#"{"choices":[{"#.to_owned()),
            Just(r#""delta":{"#.to_owned()),
            Just(r#""content":"#.to_owned()),
            Just(r#""role":"#.to_owned()),
            Just(r#""text":"#.to_owned()),
            Just(r#""finish_reason":"#.to_owned()),
            Just(r#""usage":{"completion_tokens":3}"#.to_owned()),
            Just(r#""usage":"#.to_owned()),
            Just(r#""error":"#.to_owned()),
            Just(r#""tool_calls":"#.to_owned()),
            Just(r#""function_call":"#.to_owned()),
            Just(r#""index":0"#.to_owned()),
            Just(r#""a b""#.to_owned()),
            Just(r#""\n""#.to_owned()),
            Just("null".to_owned()),
            Just("12.5e3".to_owned()),
            Just("{".to_owned()),
            Just("}".to_owned()),
            Just("[".to_owned()),
            Just("]".to_owned()),
            Just(",".to_owned()),
            Just(":".to_owned()),
            Just(" ".to_owned()),
            Just(r#"}]}"#.to_owned()),
            "[ -~]{0,4}",
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
        /// Any soup of chunk pieces: the fast path reads it as serde does, or leaves it to serde.
        #[test]
        fn any_payload_reads_as_serde_reads_it(pieces in proptest::collection::vec(piece(), 0..24)) {
            same(&pieces.concat());
        }
    }
}
