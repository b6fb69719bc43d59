//! OpenAI's `/v1/chat/completions` and `/v1/completions`: the request body,
//! and the reading of one streamed chunk or a whole non-streamed response.

mod fast;

use super::{
    decode, error_message, role_messages, Api, BodyError, BodyOptions, ChunkInfo, PromptBody, ProtocolError, Usage,
    TURN_SEPARATOR,
};
use goodput_core::Channel;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// Fills `body` (which holds `model`) for the chat or completions route.
pub(super) fn fill_body(
    opts: &BodyOptions,
    prompt: &PromptBody,
    max_tokens: Option<u32>,
    body: &mut Map<String, Value>,
) -> Result<(), BodyError> {
    match (opts.api, prompt) {
        (Api::Chat, _) => {
            body.insert("messages".into(), Value::Array(role_messages(prompt)));
        }
        (Api::Completions, PromptBody::Turns(turns)) => {
            body.insert("prompt".into(), Value::String(turns.join(TURN_SEPARATOR)));
        }
        (Api::Completions, PromptBody::Text(t)) => {
            body.insert("prompt".into(), Value::String(t.clone()));
        }
        // A dataset's chat messages, one prompt as a conversation's turns are.
        (Api::Completions, PromptBody::Messages(m)) => {
            body.insert("prompt".into(), Value::String(super::joined_messages(m)));
        }
        _ => unreachable!("the native APIs have files of their own"),
    }
    if let Some(n) = max_tokens {
        body.insert("max_tokens".into(), json!(n));
        if opts.ignore_eos {
            body.insert("ignore_eos".into(), json!(true));
            body.insert("min_tokens".into(), json!(n));
        }
    }
    body.insert("stream".into(), json!(opts.stream));
    if opts.stream && opts.include_usage {
        body.insert("stream_options".into(), json!({ "include_usage": true }));
    }
    Ok(())
}

#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<WireChoice<'a>>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
    /// `"error"` in older vLLM's error payload, whose words are in `message`.
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default)]
    message: Option<Value>,
    /// FastAPI's error shape, `{"detail": …}`, which a server built on it
    /// may stream when a request fails after its first chunk.
    #[serde(default)]
    detail: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<WireMessage<'a>>,
    #[serde(default, borrow)]
    message: Option<WireMessage<'a>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

fn nonempty<'s>(s: &'s Option<Cow<'_, str>>) -> Option<&'s str> {
    s.as_deref().filter(|s| !s.is_empty())
}

#[derive(Deserialize)]
struct WireMessage<'a> {
    #[serde(default, borrow)]
    content: Option<WireContent<'a>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
    /// Whether the delta names a `role` (the opening metadata chunk does),
    /// whatever its value.
    #[serde(default, deserialize_with = "present")]
    role: bool,
    #[serde(default)]
    function_call: Option<Value>,
}

/// A message's `content`: a string, as most servers send it, or a list of
/// parts, as Mistral's (Magistral's) do: `{"type": "text", "text": …}` is
/// content, `{"type": "thinking", "thinking": [{"type": "text", …}]}`
/// reasoning, and a part of another type is passed over. A string is
/// borrowed from the payload as it was; only a list takes the slower path.
#[derive(Debug, Default, PartialEq)]
struct WireContent<'a> {
    text: Cow<'a, str>,
    /// The thinking parts' text.
    reasoning: String,
}

impl<'a> WireContent<'a> {
    fn text(text: Cow<'a, str>) -> Self {
        WireContent { text, reasoning: String::new() }
    }

    /// Adds one part of a list.
    fn part(&mut self, part: &Value) {
        match part.get("type").and_then(Value::as_str) {
            Some("text") => self.text.to_mut().push_str(part.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("thinking") => match part.get("thinking") {
                Some(Value::String(s)) => self.reasoning.push_str(s),
                Some(Value::Array(inner)) => {
                    for p in inner.iter().filter(|p| p.get("type").and_then(Value::as_str) == Some("text")) {
                        self.reasoning.push_str(p.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
}

impl std::ops::Deref for WireContent<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for WireContent<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = WireContent<'a>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of content parts")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(WireContent::text(Cow::Borrowed(s)))
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(WireContent::text(Cow::Owned(s.to_owned())))
            }

            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(WireContent::text(Cow::Owned(s)))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut content = WireContent::default();
                while let Some(part) = seq.next_element::<Value>()? {
                    content.part(&part);
                }
                Ok(content)
            }
        }
        d.deserialize_any(Visit(std::marker::PhantomData))
    }
}

/// True for a field that is there, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

impl WireMessage<'_> {
    /// A message with no field.
    const fn empty() -> Self {
        WireMessage {
            content: None,
            reasoning_content: None,
            reasoning: None,
            thinking: None,
            tool_calls: None,
            role: false,
            function_call: None,
        }
    }

    /// Whether vLLM's `bench serve` (0.33, `_choice_has_streamed_output`)
    /// counts a chat delta as output, to stamp its TTFT and ITL on: text,
    /// `reasoning` (not `reasoning_content`), a tool or function call, or an
    /// empty `content` without a `role` (a token that decodes to nothing);
    /// the opening chunk, which names the role, is not.
    fn vllm_output(&self) -> bool {
        let some = |s: Option<&str>| s.is_some_and(|t| !t.is_empty());
        some(self.content.as_deref())
            || some(self.reasoning.as_deref())
            || self.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
            || self.function_call.as_ref().is_some_and(|f| !f.is_null() && f.as_object().is_none_or(|o| !o.is_empty()))
            || (self.content.as_deref() == Some("") && !self.role)
    }
}

/// Parses one `data:` payload of a stream, or a whole non-streamed body.
/// The plain chunks most servers stream (one choice of plain strings) are
/// read by a fast path of their own ([`fast`]); all else by serde_json.
pub fn parse_chunk(data: &str) -> Result<ChunkInfo, ProtocolError> {
    let mut info = ChunkInfo::default();
    parse_chunk_into(data, &mut info, &mut ChunkMemo::default())?;
    Ok(info)
}

/// [`parse_chunk`] into `info`, in place (see [`super::parse_for_into`]),
/// with `memo` remembering the shape of a stream's plain chunks.
pub(super) fn parse_chunk_into(data: &str, info: &mut ChunkInfo, memo: &mut ChunkMemo) -> Result<(), ProtocolError> {
    info.reset();
    if memo.recall(data, info) {
        return Ok(());
    }
    let mut choice = None;
    match fast::parse(data, &mut choice) {
        Some(()) => {
            memo.remember(data, choice.as_ref());
            read_choice(choice.as_ref(), info);
        }
        None => *info = parse_chunk_serde(data)?,
    }
    Ok(())
}

/// The most bytes of a payload a [`ChunkMemo`] keeps: the payload less its
/// one string (a vLLM chunk with a long model name keeps about 200).
const MEMO_BYTES: usize = 256;

/// Which string of a plain chunk's one choice varies from chunk to chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
enum MemoField {
    Content,
    ReasoningContent,
    Reasoning,
    Thinking,
    Text,
}

/// The last plain chunk of a stream, less its one string: a server streams
/// the same bytes around each token (`{"id":…,"choices":[{"index":0,
/// "delta":{"content":"` and `"},"finish_reason":null}]}`), and a payload
/// whose bytes before and after its string are those of the last one, with
/// no quote, backslash or control character between them, is that chunk
/// with another string: the parse of the one before reads it to the byte,
/// so it is read without parsing (issue 30: the parse was a fifth of the
/// stream reader's CPU).
///
/// Why that is exact: a JSON parser's state at a byte depends only on the
/// bytes before it, so the same prefix brings it to the string's opening
/// quote as before; a string with none of those bytes ends at the first
/// quote after it, the suffix's first byte, as the last one's did; and the
/// same suffix then ends the payload as before. Only chunks of one choice
/// whose delta (or text) has that one string (and perhaps a role), and no
/// call, finish reason or message, are remembered; anything else is parsed.
#[derive(Debug, Clone)]
pub(crate) struct ChunkMemo {
    /// The prefix, then the suffix.
    bytes: [u8; MEMO_BYTES],
    prefix: u16,
    suffix: u16,
    field: Option<MemoField>,
    /// The delta names a role (SGLang writes `"role":null` in every chunk).
    role: bool,
}

impl Default for ChunkMemo {
    fn default() -> Self {
        ChunkMemo { bytes: [0; MEMO_BYTES], prefix: 0, suffix: 0, field: None, role: false }
    }
}

impl ChunkMemo {
    /// Whether `data` is the remembered chunk with its own string; if so,
    /// what it carried is set in `info` (just reset), as [`read_choice`]
    /// sets it from the choice the parse would build, without building one.
    fn recall(&self, data: &str, info: &mut ChunkInfo) -> bool {
        let Some(field) = self.field else { return false };
        let (p, s) = (usize::from(self.prefix), usize::from(self.suffix));
        let b = data.as_bytes();
        let Some(mid_end) = b.len().checked_sub(s) else { return false };
        if mid_end < p || b[..p] != self.bytes[..p] || b[mid_end..] != self.bytes[p..p + s] {
            return false;
        }
        if b[p..mid_end].iter().any(|&c| fast::STOPS[usize::from(c)]) {
            return false;
        }
        // Both ends are next to an ASCII quote: character boundaries.
        let text = &data[p..mid_end];
        // vLLM's rule (`WireMessage::vllm_output`) for a choice of this one
        // string: any completions choice; a delta's content when it has text
        // or names no role; `reasoning` with text; never the other two.
        info.choice = match field {
            MemoField::Text => true,
            MemoField::Content => !text.is_empty() || !self.role,
            MemoField::Reasoning => !text.is_empty(),
            MemoField::ReasoningContent | MemoField::Thinking => false,
        };
        let channel = match field {
            MemoField::Text | MemoField::Content => Channel::Content,
            _ => Channel::Reasoning,
        };
        info.push(channel, text);
        true
    }

    /// Remembers `data`, which the fast path read into `choice`, if it is a
    /// plain chunk of one string; else the memo stays as it was (what it
    /// holds was read as it says whatever came after it: a token with an
    /// escape, which serde reads, or the last chunk, leaves it for the next).
    fn remember(&mut self, data: &str, choice: Option<&WireChoice<'_>>) {
        let Some((field, text, role)) = choice.and_then(memo_field) else {
            return;
        };
        let start = (text.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize);
        let end = start + text.len();
        let b = data.as_bytes();
        // The string is borrowed from `data`, between its quotes.
        if end >= b.len() || start == 0 || b[start - 1] != b'"' || b[end] != b'"' {
            return;
        }
        let (p, s) = (start, b.len() - end);
        if p + s > MEMO_BYTES {
            return;
        }
        self.bytes[..p].copy_from_slice(&b[..p]);
        self.bytes[p..p + s].copy_from_slice(&b[end..]);
        (self.prefix, self.suffix, self.field, self.role) = (p as u16, s as u16, Some(field), role);
    }
}

/// The one string of a plain chunk's choice, which it is, and whether the
/// delta names a role: `None` for any other choice.
fn memo_field<'c>(c: &'c WireChoice<'_>) -> Option<(MemoField, &'c str, bool)> {
    let borrowed = |s: Option<&'c Cow<'_, str>>| match s {
        Some(Cow::Borrowed(t)) => Some(*t),
        _ => None,
    };
    if c.message.is_some() || c.finish_reason.is_some() {
        return None;
    }
    match (&c.delta, &c.text) {
        (None, Some(_)) => Some((MemoField::Text, borrowed(c.text.as_ref())?, false)),
        (Some(m), None) => {
            if m.tool_calls.is_some() || m.function_call.is_some() {
                return None;
            }
            // A list of parts (the fast path leaves it to serde) is no plain string.
            if m.content.as_ref().is_some_and(|c| !c.reasoning.is_empty()) {
                return None;
            }
            let fields = [
                (MemoField::Content, m.content.as_ref().map(|c| &c.text)),
                (MemoField::ReasoningContent, m.reasoning_content.as_ref()),
                (MemoField::Reasoning, m.reasoning.as_ref()),
                (MemoField::Thinking, m.thinking.as_ref()),
            ];
            let mut some = fields.iter().filter(|(_, s)| s.is_some());
            let (field, s) = some.next()?;
            if some.next().is_some() {
                return None;
            }
            Some((*field, borrowed(*s)?, m.role))
        }
        _ => None,
    }
}

/// [`parse_chunk`] by serde_json alone: the reference the fast path is held to.
fn parse_chunk_serde(data: &str) -> Result<ChunkInfo, ProtocolError> {
    let wire: Wire = decode(data)?;
    let mut info = ChunkInfo { usage: wire.usage, ..Default::default() };
    if let Some(err) = wire.error {
        info.error = Some(error_message(&err));
        return Ok(info);
    }
    // Older vLLM (before 0.6) streams its errors as an OpenAI error object
    // of its own: `{"object": "error", "message": …, "type": …, "code": …}`.
    if wire.object.as_deref() == Some("error") {
        info.error = Some(wire.message.as_ref().map_or_else(|| data.to_owned(), error_message));
        return Ok(info);
    }
    // FastAPI's `{"detail": …}`, with no choice and no usage: an error too
    // (it had been skipped, and the request counted a success).
    if let Some(detail) = wire.detail.as_ref().filter(|d| !d.is_null()) {
        if wire.choices.is_none() && info.usage.is_none() {
            info.error = Some(error_message(detail));
            return Ok(info);
        }
    }
    // Servers stream one choice per chunk (n = 1, which is what goodput sends).
    read_choice(wire.choices.as_ref().and_then(|c| c.first()), &mut info);
    Ok(info)
}

/// Adds to `info` what a payload's first choice carried.
fn read_choice(choice: Option<&WireChoice<'_>>, info: &mut ChunkInfo) {
    let Some(choice) = choice else {
        return;
    };
    // vLLM's client counts any completions choice, and a chat delta by its rule.
    info.choice = choice.delta.as_ref().is_none_or(WireMessage::vllm_output);
    info.finish_reason = choice.finish_reason.as_deref().map(str::to_owned);
    // Content first, then reasoning: `push` counts visible content from the start.
    info.push(Channel::Content, choice.text.as_deref().unwrap_or(""));
    if let Some(m) = choice.delta.as_ref().or(choice.message.as_ref()) {
        info.push(Channel::Content, m.content.as_deref().unwrap_or(""));
        let parts = m.content.as_ref().map(|c| c.reasoning.as_str()).filter(|r| !r.is_empty());
        let reasoning = nonempty(&m.reasoning_content).or(nonempty(&m.reasoning)).or(nonempty(&m.thinking)).or(parts);
        info.push(Channel::Reasoning, reasoning.unwrap_or(""));
        if let Some(calls) = m.tool_calls.as_ref().filter(|c| !c.is_empty()) {
            info.channel.get_or_insert(Channel::ToolCalls);
            for call in calls {
                if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                    info.text.push_str(args);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::build_body;
    use super::*;

    /// Which payloads vLLM 0.33's client counts (`_choice_has_streamed_output`).
    #[test]
    fn payloads_vllm_counts_as_output() {
        let counts = |delta: &str| {
            let data = format!(r#"{{"choices":[{{"index":0,"delta":{delta},"finish_reason":null}}]}}"#);
            parse_chunk(&data).unwrap().choice
        };
        assert!(!counts(r#"{"role":"assistant","content":""}"#), "the opening chunk names the role");
        assert!(!counts(r#"{"role":"assistant","content":null}"#));
        assert!(!counts(r#"{"role":null,"content":""}"#), "a role key, even null, marks the opening chunk");
        assert!(counts(r#"{"content":""}"#), "an empty content without a role: a token that decodes to nothing");
        assert!(!counts(r#"{"content":null}"#));
        assert!(counts(r#"{"content":"hi"}"#));
        assert!(counts(r#"{"role":"assistant","content":"hi"}"#));
        assert!(counts(r#"{"reasoning":"hmm"}"#));
        assert!(!counts(r#"{"reasoning_content":"hmm"}"#), "vLLM 0.33 reads `reasoning` only");
        assert!(counts(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}"#));
        assert!(!counts(r#"{"tool_calls":[]}"#));
        assert!(counts(r#"{"function_call":{"name":"f"}}"#));
        assert!(!counts(r#"{}"#));
        // Completions: any choice; no choices (a usage chunk): none.
        assert!(parse_chunk(r#"{"choices":[{"index":0,"text":""}]}"#).unwrap().choice);
        assert!(!parse_chunk(r#"{"choices":[],"usage":{"completion_tokens":3}}"#).unwrap().choice);
    }

    #[test]
    fn body_for_chat_with_usage_and_ignore_eos() {
        let opts = BodyOptions {
            api: Api::Chat,
            model: "m".into(),
            stream: true,
            include_usage: true,
            ignore_eos: true,
            extra: serde_json::from_str(r#"{"temperature": 0}"#).unwrap(),
            ..Default::default()
        };
        let b: Value =
            serde_json::from_slice(&build_body(&opts, &PromptBody::Text("hi".into()), Some(64)).unwrap()).unwrap();
        assert_eq!(b["messages"][0]["content"], "hi");
        assert_eq!(b["max_tokens"], 64);
        assert_eq!(b["min_tokens"], 64);
        assert_eq!(b["ignore_eos"], true);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["temperature"], 0);
    }

    #[test]
    fn stream_options_in_extra_body_add_to_include_usage() {
        let opts = BodyOptions {
            api: Api::Chat,
            model: "m".into(),
            stream: true,
            include_usage: true,
            extra: serde_json::from_str(r#"{"stream_options":{"continuous_usage_stats":true}}"#).unwrap(),
            ..Default::default()
        };
        let b: Value =
            serde_json::from_slice(&build_body(&opts, &PromptBody::Text("hi".into()), Some(8)).unwrap()).unwrap();
        assert_eq!(b["stream_options"], serde_json::json!({"include_usage": true, "continuous_usage_stats": true}));
        // --no-usage: no options of goodput's to add to; the user's go in whole.
        let opts = BodyOptions { include_usage: false, ..opts };
        let b: Value =
            serde_json::from_slice(&build_body(&opts, &PromptBody::Text("hi".into()), Some(8)).unwrap()).unwrap();
        assert_eq!(b["stream_options"], serde_json::json!({"continuous_usage_stats": true}));
    }

    #[test]
    fn body_for_completions_without_stream_has_no_stream_options() {
        let opts = BodyOptions { api: Api::Completions, model: "m".into(), include_usage: true, ..Default::default() };
        let b: Value =
            serde_json::from_slice(&build_body(&opts, &PromptBody::Text("hi".into()), None).unwrap()).unwrap();
        assert_eq!(b["prompt"], "hi");
        assert_eq!(b["stream"], false);
        assert!(b.get("stream_options").is_none() && b.get("max_tokens").is_none());
        let m = PromptBody::Messages(vec![
            json!({"role": "system", "content": "S"}),
            json!({"role": "user", "content": "U"}),
        ]);
        let b: Value = serde_json::from_slice(&build_body(&opts, &m, None).unwrap()).unwrap();
        assert_eq!(b["prompt"], "S\n\nU");
    }

    #[test]
    fn a_conversation_is_messages_for_chat_and_one_prompt_for_completions() {
        let turns = PromptBody::Turns(vec!["hi".into(), "hello there".into(), "and then?".into()]);
        let opts = BodyOptions { api: Api::Chat, model: "m".into(), ..Default::default() };
        let b: Value = serde_json::from_slice(&build_body(&opts, &turns, None).unwrap()).unwrap();
        let roles: Vec<&str> = b["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(b["messages"][1]["content"], "hello there");
        let opts = BodyOptions { api: Api::Completions, ..opts };
        let b: Value = serde_json::from_slice(&build_body(&opts, &turns, None).unwrap()).unwrap();
        assert_eq!(b["prompt"], "hi\n\nhello there\n\nand then?");
    }

    #[test]
    fn the_content_of_a_chunk_is_told_from_its_reasoning() {
        let both = parse_chunk(r#"{"choices":[{"delta":{"content":"yes","reasoning_content":"hmm"}}]}"#).unwrap();
        assert_eq!((&both.text[..both.content_len], both.text.as_str()), ("yes", "yeshmm"));
        let reasoning = parse_chunk(r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#).unwrap();
        assert_eq!(reasoning.content_len, 0);
        let text = parse_chunk(r#"{"choices":[{"text":" ok"}]}"#).unwrap();
        assert_eq!(&text.text[..text.content_len], " ok");
    }

    #[test]
    fn chunk_kinds() {
        // Role-only, empty delta and usage-only chunks carry no output.
        let role = parse_chunk(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#).unwrap();
        assert_eq!(role.channel, None);
        let empty = parse_chunk(r#"{"choices":[{"index":0,"delta":{"content":""}}]}"#).unwrap();
        assert_eq!(empty.channel, None);
        let usage = parse_chunk(r#"{"choices":[],"usage":{"prompt_tokens":15,"completion_tokens":24}}"#).unwrap();
        assert_eq!((usage.channel, usage.usage.unwrap().completion_tokens), (None, Some(24)));
        let content = parse_chunk(r#"{"choices":[{"delta":{"content":" Su"}}]}"#).unwrap();
        assert_eq!((content.channel, content.text.as_str()), (Some(Channel::Content), " Su"));
        let reasoning = parse_chunk(r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#).unwrap();
        assert_eq!(reasoning.channel, Some(Channel::Reasoning));
        let reasoning2 = parse_chunk(r#"{"choices":[{"delta":{"reasoning":"hmm"}}]}"#).unwrap();
        assert_eq!(reasoning2.channel, Some(Channel::Reasoning));
        let thinking = parse_chunk(r#"{"choices":[{"delta":{"thinking":"hmm"}}]}"#).unwrap();
        assert_eq!(thinking.channel, Some(Channel::Reasoning));
        let tool =
            parse_chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}"#)
                .unwrap();
        assert_eq!((tool.channel, tool.text.as_str()), (Some(Channel::ToolCalls), "{\"a\":"));
        let text =
            parse_chunk(r#"{"choices":[{"text":" x","finish_reason":"length"}],"usage":{"completion_tokens":3}}"#)
                .unwrap();
        assert_eq!(text.channel, Some(Channel::Content));
        assert_eq!(text.finish_reason.as_deref(), Some("length"));
        let escaped = parse_chunk(r#"{"choices":[{"delta":{"content":"a\"b\n"}}]}"#).unwrap();
        assert_eq!(escaped.text, "a\"b\n");
    }

    #[test]
    fn error_payloads() {
        let e = parse_chunk(r#"{"error":{"message":"out of memory","code":500}}"#).unwrap();
        assert_eq!(e.error.as_deref(), Some("out of memory"));
        let e = parse_chunk(r#"{"error":"boom"}"#).unwrap();
        assert_eq!(e.error.as_deref(), Some("boom"));
        let e = parse_chunk(r#"{"object":"error","message":"out of KV cache","type":"BadRequestError","code":400}"#);
        assert_eq!(e.unwrap().error.as_deref(), Some("out of KV cache"));
        // An object of another kind is no error.
        assert_eq!(parse_chunk(r#"{"object":"chat.completion.chunk","choices":[]}"#).unwrap().error, None);
        assert!(parse_chunk("{not json").unwrap_err().to_string().contains("malformed JSON"));
        // FastAPI's shape, a string or a list of problems; beside a choice or a usage it is no error.
        let e = parse_chunk(r#"{"detail":"Internal Server Error"}"#).unwrap();
        assert_eq!(e.error.as_deref(), Some("Internal Server Error"));
        let e = parse_chunk(r#"{"detail":[{"loc":["body"],"msg":"bad"}]}"#).unwrap();
        assert_eq!(e.error.as_deref(), Some(r#"[{"loc":["body"],"msg":"bad"}]"#));
        let ok = parse_chunk(r#"{"detail":"x","choices":[{"delta":{"content":"a"}}]}"#).unwrap();
        assert_eq!((ok.error, ok.text.as_str()), (None, "a"));
        assert_eq!(parse_chunk(r#"{"detail":null,"choices":[]}"#).unwrap().error, None);
    }

    #[test]
    fn a_field_of_an_unexpected_type_is_named() {
        for (usage, value) in [("-5", "integer `-5`"), ("5.0", "floating point `5.0`"), (r#""5""#, "string \"5\"")] {
            let data = format!(r#"{{"choices":[],"usage":{{"prompt_tokens":{usage},"completion_tokens":3}}}}"#);
            let e = parse_chunk(&data).unwrap_err().to_string();
            assert!(e.starts_with("the server sent usage.prompt_tokens as a value goodput cannot read"), "{e}");
            assert!(e.contains(value), "{e}");
        }
        // Not JSON at all stays malformed JSON.
        assert!(parse_chunk("data: {}").unwrap_err().to_string().starts_with("malformed JSON"));
    }

    /// Mistral's (Magistral's) content as a list of parts: text is content,
    /// thinking reasoning, other parts passed over; it had failed every
    /// request as a value goodput cannot read.
    #[test]
    fn content_as_a_list_of_parts() {
        let text = parse_chunk(r#"{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Paris"}]}}]}"#);
        let text = text.unwrap();
        assert_eq!((text.channel, text.text.as_str(), text.content_len), (Some(Channel::Content), "Paris", 5));
        assert!(text.choice);
        let think = parse_chunk(
            r#"{"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hmm"}]}]}}]}"#,
        )
        .unwrap();
        assert_eq!((think.channel, think.text.as_str(), think.content_len), (Some(Channel::Reasoning), "hmm", 0));
        let odd = parse_chunk(
            r#"{"choices":[{"index":0,"delta":{"content":[{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"a\"b"},"plain",7]}}]}"#,
        )
        .unwrap();
        assert_eq!((odd.channel, odd.text.as_str()), (Some(Channel::Content), "a\"b"));
        let none = parse_chunk(r#"{"choices":[{"index":0,"delta":{"content":[{"type":"reference","ids":[1]}]}}]}"#);
        assert_eq!(none.unwrap().channel, None);
        let whole = parse_chunk(
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"so "}]},{"type":"text","text":"Paris"}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
        )
        .unwrap();
        assert_eq!((whole.channel, whole.text.as_str(), whole.content_len), (Some(Channel::Content), "Parisso ", 5));
        assert_eq!(whole.finish_reason.as_deref(), Some("stop"));
        // Content of another type still says what it is.
        let e = parse_chunk(r#"{"choices":[{"delta":{"content":5}}]}"#).unwrap_err().to_string();
        assert!(e.contains("content") && e.contains("integer `5`"), "{e}");
    }

    #[test]
    fn whole_non_streamed_message() {
        let body =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/llamacpp/chat-nostream.json"))
                .unwrap();
        let info = parse_chunk(&body).unwrap();
        assert_eq!(info.channel, Some(Channel::Content));
        assert!(!info.text.is_empty());
        assert!(info.usage.unwrap().completion_tokens.unwrap() > 0);
    }
}
