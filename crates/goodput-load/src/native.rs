//! The native streaming APIs beside OpenAI's (README, "Native APIs"):
//! - Anthropic Messages (`/v1/messages`): SSE whose events are typed
//!   (`message_start`, `content_block_delta`, `message_delta`,
//!   `message_stop`, `ping`, `error`), served by Anthropic and by vLLM and
//!   SGLang beside their OpenAI routes;
//! - Ollama (`/api/chat`, `/api/generate`): newline-delimited JSON, one
//!   object per line, the last with `"done": true` and the counts;
//! - TGI (`/generate_stream`): SSE, one event per token, the last with the
//!   whole text and `details`; no `[DONE]`;
//! - llama.cpp (`/completion`): SSE, one event per piece of text, the last
//!   with `"stop": true` and the counts.
//!
//! Request bodies, and the reading of one event, line or whole response
//! into the same [`ChunkInfo`] the OpenAI reader gives.

use crate::openai::{decode, error_message, Api, BodyOptions, ChunkInfo, PromptBody, PromptTokensDetails, Usage};
use goodput_core::Channel;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// The `anthropic-version` header every Messages request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Messages requires `max_tokens`: what is sent when the workload sets no
/// output length (a dataset entry without one).
pub const MESSAGES_DEFAULT_MAX_TOKENS: u32 = 4096;

/// Fills `body` (which holds `model`) for a native API.
pub fn build_body(
    opts: &BodyOptions,
    prompt: &PromptBody,
    max_tokens: Option<u32>,
    body: &mut Map<String, Value>,
) -> Result<(), String> {
    match opts.api {
        Api::Messages => {
            let (system, messages) = match prompt {
                PromptBody::Messages(m) => split_system(m),
                other => (None, role_messages(other)),
            };
            if let Some(s) = system {
                body.insert("system".into(), Value::String(s));
            }
            body.insert("messages".into(), Value::Array(messages));
            body.insert("max_tokens".into(), json!(max_tokens.unwrap_or(MESSAGES_DEFAULT_MAX_TOKENS)));
        }
        Api::OllamaChat => {
            body.insert("messages".into(), Value::Array(role_messages(prompt)));
        }
        Api::OllamaGenerate => {
            body.insert("prompt".into(), Value::String(one_prompt(opts.api, prompt)?));
        }
        Api::Tgi | Api::LlamaCpp => {
            let field = if opts.api == Api::Tgi { "inputs" } else { "prompt" };
            body.insert(field.into(), Value::String(one_prompt(opts.api, prompt)?));
            if opts.api == Api::LlamaCpp {
                if let Some(n) = max_tokens {
                    body.insert("n_predict".into(), json!(n));
                }
                if opts.ignore_eos {
                    body.insert("ignore_eos".into(), json!(true));
                }
            }
        }
        Api::Chat | Api::Completions => unreachable!("OpenAI bodies are built in openai::build_body"),
    }
    let mut extra = opts.extra.clone();
    if opts.api == Api::Tgi {
        // The route says whether it streams; `details` brings the counts.
        body.remove("model");
        let mut parameters = Map::new();
        parameters.insert("details".into(), json!(true));
        if let Some(n) = max_tokens {
            parameters.insert("max_new_tokens".into(), json!(n));
        }
        merge_object(&mut parameters, &mut extra, "parameters");
        body.insert("parameters".into(), Value::Object(parameters));
    } else {
        body.insert("stream".into(), json!(opts.stream));
    }
    if opts.api.ndjson() {
        // Ollama's length limit lives in `options`.
        let mut options = Map::new();
        if let Some(n) = max_tokens {
            options.insert("num_predict".into(), json!(n));
        }
        merge_object(&mut options, &mut extra, "options");
        if !options.is_empty() {
            body.insert("options".into(), Value::Object(options));
        }
    }
    body.extend(extra);
    Ok(())
}

/// Moves `extra[key]`, when it is an object, into `into`: an `options` or
/// `parameters` object in --extra-body adds to goodput's own rather than
/// replacing them.
fn merge_object(into: &mut Map<String, Value>, extra: &mut Map<String, Value>, key: &str) {
    if let Some(Value::Object(more)) = extra.get(key) {
        into.extend(more.clone());
        extra.remove(key);
    }
}

/// A prompt as one text, for the APIs that take no messages.
fn one_prompt(api: Api, prompt: &PromptBody) -> Result<String, String> {
    match prompt {
        PromptBody::Text(t) => Ok(t.clone()),
        PromptBody::Turns(turns) => Ok(turns.join(crate::openai::TURN_SEPARATOR)),
        PromptBody::Messages(_) => Err(format!(
            "a dataset entry holds chat messages but --api {} takes a prompt: give the entry a \"prompt\", \
             or use an API that takes messages (chat, messages, ollama-chat)",
            api.as_str()
        )),
    }
}

/// A prompt as user and assistant messages.
fn role_messages(prompt: &PromptBody) -> Vec<Value> {
    match prompt {
        PromptBody::Text(t) => vec![json!({ "role": "user", "content": t })],
        PromptBody::Turns(turns) => {
            let roles = ["user", "assistant"].into_iter().cycle();
            turns.iter().zip(roles).map(|(t, role)| json!({ "role": role, "content": t })).collect()
        }
        PromptBody::Messages(m) => m.clone(),
    }
}

/// Messages takes the system prompt as a top-level field, not a message:
/// a dataset's `system` messages are joined into it.
fn split_system(messages: &[Value]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<String> = Vec::new();
    let mut rest = Vec::new();
    for m in messages {
        if m.get("role").and_then(Value::as_str) == Some("system") {
            match m.get("content") {
                Some(Value::String(s)) => system.push(s.clone()),
                Some(Value::Array(parts)) => {
                    system.extend(parts.iter().filter_map(|p| p.get("text")?.as_str().map(str::to_owned)))
                }
                _ => {}
            }
        } else {
            rest.push(m.clone());
        }
    }
    ((!system.is_empty()).then(|| system.join("\n")), rest)
}

#[derive(Deserialize)]
struct MsgEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    /// `message_start`: the message so far, with the prompt's counts.
    #[serde(default)]
    message: Option<MsgWhole>,
    /// `content_block_start`: a block that may open with text.
    #[serde(default, borrow)]
    content_block: Option<MsgBlock<'a>>,
    /// `content_block_delta` and `message_delta`.
    #[serde(default, borrow)]
    delta: Option<MsgDelta<'a>>,
    /// `message_delta`'s counts, and a whole message's.
    #[serde(default)]
    usage: Option<MsgUsage>,
    #[serde(default)]
    error: Option<Value>,
    /// A whole (non-streamed) message's blocks and stop reason.
    #[serde(default, borrow)]
    content: Option<Vec<MsgBlock<'a>>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct MsgWhole {
    #[serde(default)]
    usage: Option<MsgUsage>,
}

#[derive(Deserialize)]
struct MsgBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    /// A whole message's tool call arguments.
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct MsgDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Clone, Copy)]
struct MsgUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl MsgUsage {
    /// As the OpenAI-shaped [`Usage`]. Messages counts the prompt in three
    /// parts (`input_tokens` excludes what was read from or written to the
    /// cache); the prompt is their sum and the cached part is the read.
    fn usage(self, output: bool) -> Usage {
        let prompt = self
            .input_tokens
            .map(|i| i + self.cache_read_input_tokens.unwrap_or(0) + self.cache_creation_input_tokens.unwrap_or(0));
        Usage {
            prompt_tokens: prompt,
            completion_tokens: if output { self.output_tokens } else { None },
            prompt_tokens_details: self.cache_read_input_tokens.map(|c| PromptTokensDetails { cached_tokens: Some(c) }),
        }
    }
}

/// Parses one Messages event's data, or a whole non-streamed message.
pub fn parse_messages(data: &str) -> Result<ChunkInfo, String> {
    let ev: MsgEvent = decode(data)?;
    let mut info = ChunkInfo::default();
    match ev.kind.as_ref() {
        "message_start" => {
            // Its `output_tokens` is a placeholder (0 or 1) until `message_delta`.
            info.usage = ev.message.and_then(|m| m.usage).map(|u| u.usage(false));
        }
        "content_block_start" => {
            if let Some(b) = ev.content_block {
                block(&mut info, &b);
            }
        }
        "content_block_delta" => {
            if let Some(d) = ev.delta {
                match d.kind.as_deref() {
                    Some("text_delta") => info.push(Channel::Content, d.text.as_deref().unwrap_or("")),
                    Some("thinking_delta") => info.push(Channel::Reasoning, d.thinking.as_deref().unwrap_or("")),
                    Some("input_json_delta") => info.push(Channel::ToolCalls, d.partial_json.as_deref().unwrap_or("")),
                    // `signature_delta` and kinds to come carry no generated tokens.
                    _ => {}
                }
            }
        }
        "message_delta" => {
            info.finish_reason = ev.delta.and_then(|d| d.stop_reason).map(Cow::into_owned);
            info.usage = ev.usage.map(|u| u.usage(true));
        }
        "message_stop" => info.done = true,
        "error" => {
            info.error = Some(ev.error.as_ref().map_or_else(|| data.to_owned(), error_message));
        }
        "message" => {
            // A whole message: content blocks, in order, as one output.
            let blocks = ev.content.unwrap_or_default();
            for b in blocks.iter().filter(|b| b.kind == "text") {
                block(&mut info, b);
            }
            for b in blocks.iter().filter(|b| b.kind != "text") {
                block(&mut info, b);
            }
            info.finish_reason = ev.stop_reason.map(Cow::into_owned);
            info.usage = ev.usage.map(|u| u.usage(true));
            info.done = true;
        }
        // `ping`, `content_block_stop`, and event types to come.
        _ => {}
    }
    Ok(info)
}

fn block(info: &mut ChunkInfo, b: &MsgBlock) {
    match b.kind.as_ref() {
        "text" => info.push(Channel::Content, b.text.as_deref().unwrap_or("")),
        "thinking" => info.push(Channel::Reasoning, b.thinking.as_deref().unwrap_or("")),
        "tool_use" => {
            // A streamed block opens with `input: {}`; its arguments follow as deltas.
            if let Some(input) = b.input.as_ref().filter(|i| i.as_object().is_none_or(|o| !o.is_empty())) {
                info.push(Channel::ToolCalls, &input.to_string());
            }
        }
        _ => {}
    }
}

#[derive(Deserialize)]
struct OllamaLine<'a> {
    /// `/api/chat`'s message.
    #[serde(default, borrow)]
    message: Option<OllamaMessage<'a>>,
    /// `/api/generate`'s text, and its reasoning.
    #[serde(default, borrow)]
    response: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default)]
    done: bool,
    #[serde(default, borrow)]
    done_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct OllamaMessage<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
}

/// Parses one Ollama line, or a whole non-streamed response (the same
/// object, with `done` and the whole text).
///
/// `prompt_eval_count` is the whole prompt, cached or not (since ollama
/// PR #5371, 2024); versions before it left the field out when the prompt
/// was cached, and a record then counts the prompt with the tokenizer or
/// as intended. Ollama reports no cached count.
pub fn parse_ollama(data: &str) -> Result<ChunkInfo, String> {
    let line: OllamaLine = decode(data)?;
    let mut info = ChunkInfo::default();
    if let Some(e) = line.error {
        info.error = Some(error_message(&e));
        return Ok(info);
    }
    let (content, thinking, calls) = match line.message {
        Some(m) => (m.content, m.thinking, m.tool_calls),
        None => (line.response, line.thinking, None),
    };
    info.push(Channel::Content, content.as_deref().unwrap_or(""));
    info.push(Channel::Reasoning, thinking.as_deref().unwrap_or(""));
    for call in calls.iter().flatten() {
        if let Some(args) = call.pointer("/function/arguments") {
            let text = args.as_str().map_or_else(|| args.to_string(), str::to_owned);
            info.push(Channel::ToolCalls, &text);
        }
    }
    if line.done {
        info.done = true;
        info.finish_reason = Some(line.done_reason.map_or_else(|| "stop".to_owned(), Cow::into_owned));
        if line.prompt_eval_count.is_some() || line.eval_count.is_some() {
            info.usage = Some(Usage {
                prompt_tokens: line.prompt_eval_count,
                completion_tokens: line.eval_count,
                prompt_tokens_details: None,
            });
        }
    }
    Ok(info)
}

#[derive(Deserialize)]
struct TgiEvent<'a> {
    /// A streamed event's token; absent from a whole `/generate` response.
    #[serde(default, borrow)]
    token: Option<TgiToken<'a>>,
    /// The whole text: on the last event of a stream, and in a whole response.
    #[serde(default, borrow)]
    generated_text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    details: Option<TgiDetails<'a>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct TgiToken<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    special: bool,
}

#[derive(Deserialize)]
struct TgiDetails<'a> {
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    generated_tokens: Option<u64>,
    /// The prompt's length (TGI 2 and later, in streamed details; some
    /// builds name it `prompt_tokens`).
    #[serde(default, alias = "prompt_tokens")]
    input_length: Option<u64>,
}

/// Parses one TGI event, or a whole `/generate` response (an object, or a
/// list of one). Each event is one generated token; a special one (the
/// end-of-sequence token) is output, counted in `generated_tokens`, with
/// no visible text. The event with `details` is the last.
pub fn parse_tgi(data: &str) -> Result<ChunkInfo, String> {
    let trimmed = data.trim_start();
    let one;
    let data = if trimmed.starts_with('[') {
        let list: Vec<Value> = decode(trimmed)?;
        one = list.into_iter().next().unwrap_or(Value::Null).to_string();
        one.as_str()
    } else {
        data
    };
    let ev: TgiEvent = decode(data)?;
    let mut info = ChunkInfo::default();
    if let Some(e) = ev.error {
        info.error = Some(error_message(&e));
        return Ok(info);
    }
    match ev.token {
        Some(t) if t.special => info.channel = Some(Channel::Content),
        Some(t) => info.push(Channel::Content, t.text.as_deref().unwrap_or("")),
        None => info.push(Channel::Content, ev.generated_text.as_deref().unwrap_or("")),
    }
    if let Some(d) = ev.details {
        info.done = true;
        info.finish_reason = Some(d.finish_reason.map_or_else(|| "length".to_owned(), Cow::into_owned));
        info.usage = Some(Usage {
            prompt_tokens: d.input_length,
            completion_tokens: d.generated_tokens,
            prompt_tokens_details: None,
        });
    }
    Ok(info)
}

#[derive(Deserialize)]
struct LlamaCppEvent<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default)]
    stop: bool,
    #[serde(default, borrow)]
    stop_type: Option<Cow<'a, str>>,
    /// Builds before `stop_type` said why with three flags.
    #[serde(default)]
    stopped_limit: bool,
    #[serde(default)]
    stopped_eos: bool,
    #[serde(default)]
    stopped_word: bool,
    #[serde(default)]
    tokens_predicted: Option<u64>,
    #[serde(default)]
    tokens_evaluated: Option<u64>,
    #[serde(default)]
    timings: Option<LlamaCppTimings>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct LlamaCppTimings {
    /// Prompt tokens reused from the slot's cache.
    #[serde(default)]
    cache_n: Option<u64>,
}

/// Parses one llama.cpp `/completion` event, or a whole response (the same
/// object with `"stop": true`). The finish reason is llama.cpp's
/// `stop_type` (`limit`, `eos`, `word`).
pub fn parse_llamacpp(data: &str) -> Result<ChunkInfo, String> {
    let ev: LlamaCppEvent = decode(data)?;
    let mut info = ChunkInfo::default();
    if let Some(e) = ev.error {
        info.error = Some(error_message(&e));
        return Ok(info);
    }
    info.push(Channel::Content, ev.content.as_deref().unwrap_or(""));
    // Every event of a current build carries the running `tokens_predicted`,
    // so each chunk's token count is exact: a token that ends inside a UTF-8
    // character is held back and its text comes with the next one, whose
    // count then rises by 2. The closing event carries the whole request's.
    if ev.stop || ev.tokens_predicted.is_some() || ev.tokens_evaluated.is_some() {
        info.usage = Some(Usage {
            prompt_tokens: ev.tokens_evaluated,
            completion_tokens: ev.tokens_predicted,
            prompt_tokens_details: ev
                .timings
                .and_then(|t| t.cache_n)
                .map(|c| PromptTokensDetails { cached_tokens: Some(c) }),
        });
    }
    if ev.stop {
        info.done = true;
        let flagged = [(ev.stopped_limit, "limit"), (ev.stopped_eos, "eos"), (ev.stopped_word, "word")]
            .into_iter()
            .find_map(|(set, name)| set.then_some(name));
        info.finish_reason =
            Some(ev.stop_type.map(Cow::into_owned).unwrap_or_else(|| flagged.unwrap_or("stop").to_owned()));
    }
    Ok(info)
}

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
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    f(&String::from_utf8_lossy(line));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(api: Api, prompt: PromptBody, max: Option<u32>, extra: &str) -> Value {
        let opts = BodyOptions {
            api,
            model: "m".into(),
            stream: true,
            include_usage: true,
            ignore_eos: false,
            extra: serde_json::from_str(extra).unwrap(),
            ..Default::default()
        };
        serde_json::from_slice(&crate::openai::build_body(&opts, &prompt, max).unwrap()).unwrap()
    }

    #[test]
    fn messages_bodies_carry_max_tokens_and_a_top_level_system() {
        let b = body(Api::Messages, PromptBody::Text("hi".into()), Some(64), "{}");
        assert_eq!(b["messages"][0], json!({"role": "user", "content": "hi"}));
        assert_eq!((b["max_tokens"].as_u64(), b["stream"].as_bool()), (Some(64), Some(true)));
        assert!(b.get("stream_options").is_none() && b.get("system").is_none());
        let b = body(Api::Messages, PromptBody::Text("hi".into()), None, "{}");
        assert_eq!(b["max_tokens"], MESSAGES_DEFAULT_MAX_TOKENS);
        let dataset = PromptBody::Messages(vec![
            json!({"role": "system", "content": "be brief"}),
            json!({"role": "system", "content": [{"type": "text", "text": "and kind"}]}),
            json!({"role": "user", "content": "hi"}),
        ]);
        let b = body(Api::Messages, dataset, Some(8), "{}");
        assert_eq!(b["system"], "be brief\nand kind");
        assert_eq!(b["messages"], json!([{"role": "user", "content": "hi"}]));
        let turns = PromptBody::Turns(vec!["a".into(), "b".into(), "c".into()]);
        let b = body(Api::Messages, turns, Some(8), "{}");
        let roles: Vec<&str> = b["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
    }

    #[test]
    fn ollama_bodies_put_the_length_in_options_and_merge_extra_options() {
        let b = body(
            Api::OllamaChat,
            PromptBody::Text("hi".into()),
            Some(32),
            r#"{"options":{"temperature":0},"keep_alive":"5m"}"#,
        );
        assert_eq!(b["messages"][0]["content"], "hi");
        assert_eq!(b["options"], json!({"num_predict": 32, "temperature": 0}));
        assert_eq!(b["keep_alive"], "5m");
        let turns = PromptBody::Turns(vec!["a".into(), "b".into(), "c".into()]);
        let b = body(Api::OllamaGenerate, turns, None, "{}");
        assert_eq!(b["prompt"], "a\n\nb\n\nc");
        assert!(b.get("options").is_none());
        let opts = BodyOptions { api: Api::OllamaGenerate, ..Default::default() };
        let err = crate::openai::build_body(&opts, &PromptBody::Messages(vec![]), None).unwrap_err();
        assert!(err.contains("--api ollama-generate takes a prompt") && err.contains("ollama-chat"), "{err}");
    }

    #[test]
    fn messages_events() {
        let start = parse_messages(r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":30,"cache_creation_input_tokens":2}}}"#).unwrap();
        let u = start.usage.unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(44), None));
        assert_eq!(u.prompt_tokens_details.unwrap().cached_tokens, Some(30));
        assert_eq!(start.channel, None);
        let open =
            parse_messages(r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#)
                .unwrap();
        assert_eq!(open.channel, None);
        let text =
            parse_messages(r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" Hello"}}"#)
                .unwrap();
        assert_eq!((text.channel, text.text.as_str(), text.content_len), (Some(Channel::Content), " Hello", 6));
        let think = parse_messages(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
        )
        .unwrap();
        assert_eq!((think.channel, think.content_len), (Some(Channel::Reasoning), 0));
        let sig = parse_messages(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}"#,
        )
        .unwrap();
        assert_eq!(sig.channel, None);
        let tool = parse_messages(
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
        )
        .unwrap();
        assert_eq!((tool.channel, tool.text.as_str()), (Some(Channel::ToolCalls), "{\"a\":"));
        let tool_open = parse_messages(r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}"#).unwrap();
        assert_eq!(tool_open.channel, None);
        let end = parse_messages(r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":15}}"#).unwrap();
        assert_eq!(end.finish_reason.as_deref(), Some("max_tokens"));
        let merged = u.merge(end.usage.unwrap());
        assert_eq!((merged.prompt_tokens, merged.completion_tokens), (Some(44), Some(15)));
        assert!(!end.done);
        assert!(parse_messages(r#"{"type":"message_stop"}"#).unwrap().done);
        let ping = parse_messages(r#"{"type": "ping"}"#).unwrap();
        assert_eq!(ping, ChunkInfo::default());
        let err =
            parse_messages(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#).unwrap();
        assert_eq!(err.error.as_deref(), Some("Overloaded"));
        assert!(parse_messages("{nope").unwrap_err().contains("malformed JSON"));
    }

    #[test]
    fn a_whole_message() {
        let info = parse_messages(r#"{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"let me see","signature":"x"},{"type":"text","text":"Hi there"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":20}}"#).unwrap();
        assert_eq!(info.channel, Some(Channel::Content));
        assert_eq!((&info.text[..info.content_len], info.text.as_str()), ("Hi there", "Hi therelet me see"));
        assert_eq!((info.usage.unwrap().prompt_tokens, info.usage.unwrap().completion_tokens), (Some(9), Some(20)));
        assert_eq!(info.finish_reason.as_deref(), Some("end_turn"));
        assert!(info.done);
    }

    #[test]
    fn ollama_lines() {
        let chat = parse_ollama(r#"{"model":"m","created_at":"2024-08-07T03:57:33.03Z","message":{"role":"assistant","content":"Hello"},"done":false}"#).unwrap();
        assert_eq!((chat.channel, chat.text.as_str(), chat.done), (Some(Channel::Content), "Hello", false));
        let think =
            parse_ollama(r#"{"model":"m","message":{"role":"assistant","content":"","thinking":"hmm"},"done":false}"#)
                .unwrap();
        assert_eq!((think.channel, think.content_len), (Some(Channel::Reasoning), 0));
        let gen = parse_ollama(r#"{"model":"m","response":" a","done":false}"#).unwrap();
        assert_eq!((gen.channel, gen.text.as_str()), (Some(Channel::Content), " a"));
        let tool = parse_ollama(r#"{"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"city":"Oslo"}}}]},"done":false}"#).unwrap();
        assert_eq!((tool.channel, tool.text.as_str()), (Some(Channel::ToolCalls), r#"{"city":"Oslo"}"#));
        let last = parse_ollama(r#"{"model":"m","message":{"role":"assistant","content":""},"done_reason":"length","done":true,"total_duration":4353619900,"prompt_eval_count":10,"prompt_eval_duration":246847000,"eval_count":17,"eval_duration":4032296000}"#).unwrap();
        assert_eq!((last.channel, last.done, last.finish_reason.as_deref()), (None, true, Some("length")));
        assert_eq!((last.usage.unwrap().prompt_tokens, last.usage.unwrap().completion_tokens), (Some(10), Some(17)));
        let whole = parse_ollama(r#"{"model":"m","response":"That's it.","done":true}"#).unwrap();
        assert_eq!(
            (whole.channel, whole.done, whole.finish_reason.as_deref()),
            (Some(Channel::Content), true, Some("stop"))
        );
        let err = parse_ollama(r#"{"error":"model 'x' not found"}"#).unwrap();
        assert_eq!(err.error.as_deref(), Some("model 'x' not found"));
    }

    #[test]
    fn tgi_and_llamacpp_bodies() {
        let b = body(Api::Tgi, PromptBody::Text("hi".into()), Some(16), r#"{"parameters":{"temperature":0.5}}"#);
        assert_eq!(b["inputs"], "hi");
        assert_eq!(b["parameters"], json!({"details": true, "max_new_tokens": 16, "temperature": 0.5}));
        assert!(b.get("model").is_none() && b.get("stream").is_none(), "the route says it: {b}");
        assert_eq!((Api::Tgi.path(true), Api::Tgi.path(false)), ("/generate_stream", "/generate"));
        let b = body(Api::LlamaCpp, PromptBody::Turns(vec!["a".into(), "b".into(), "c".into()]), Some(16), "{}");
        assert_eq!(
            (b["prompt"].as_str(), b["n_predict"].as_u64(), b["stream"].as_bool()),
            (Some("a\n\nb\n\nc"), Some(16), Some(true))
        );
        assert!(b.get("ignore_eos").is_none());
        let opts = BodyOptions { api: Api::LlamaCpp, ignore_eos: true, ..Default::default() };
        let b: Value =
            serde_json::from_slice(&crate::openai::build_body(&opts, &PromptBody::Text("x".into()), Some(4)).unwrap())
                .unwrap();
        assert_eq!(b["ignore_eos"], true);
        let err = crate::openai::build_body(&opts, &PromptBody::Messages(vec![]), None).unwrap_err();
        assert!(err.contains("--api llamacpp takes a prompt"), "{err}");
    }

    #[test]
    fn tgi_events() {
        let tok = parse_tgi(r#"{"index":1,"token":{"id":1234,"text":" Hello","logprob":-0.3,"special":false},"generated_text":null,"details":null,"top_tokens":null}"#).unwrap();
        assert_eq!((tok.channel, tok.text.as_str(), tok.done), (Some(Channel::Content), " Hello", false));
        let eos = parse_tgi(r#"{"index":3,"token":{"id":2,"text":"</s>","logprob":-0.1,"special":true},"generated_text":" Hello world","details":{"finish_reason":"eos_token","generated_tokens":3,"seed":null,"input_length":7}}"#).unwrap();
        assert_eq!(
            (eos.channel, eos.text.as_str(), eos.done),
            (Some(Channel::Content), "", true),
            "output, with no visible text"
        );
        assert_eq!(eos.finish_reason.as_deref(), Some("eos_token"));
        assert_eq!((eos.usage.unwrap().prompt_tokens, eos.usage.unwrap().completion_tokens), (Some(7), Some(3)));
        let whole = parse_tgi(r#"{"generated_text":" Hello world","details":{"finish_reason":"length","generated_tokens":2,"seed":null,"prefill":[],"tokens":[]}}"#).unwrap();
        assert_eq!(
            (whole.text.as_str(), whole.done, whole.usage.unwrap().completion_tokens),
            (" Hello world", true, Some(2))
        );
        let listed = parse_tgi(r#"[{"generated_text":" Hi"}]"#).unwrap();
        assert_eq!(listed.text, " Hi");
        let err = parse_tgi(
            r#"{"error":"Input validation error: `inputs` must have less than 4096 tokens","error_type":"validation"}"#,
        )
        .unwrap();
        assert!(err.error.unwrap().starts_with("Input validation error"));
    }

    #[test]
    fn llamacpp_events() {
        let piece = parse_llamacpp(r#"{"index":0,"content":" Hello","tokens":[],"stop":false,"id_slot":0,"tokens_predicted":1,"tokens_evaluated":7}"#).unwrap();
        let running = Usage { prompt_tokens: Some(7), completion_tokens: Some(1), prompt_tokens_details: None };
        assert_eq!(
            (piece.channel, piece.text.as_str(), piece.done, piece.usage),
            (Some(Channel::Content), " Hello", false, Some(running)),
            "each event's running count"
        );
        let bare = parse_llamacpp(r#"{"content":" Hello","stop":false}"#).unwrap();
        assert_eq!(bare.usage, None, "older builds' events carry no counts");
        let last = parse_llamacpp(r#"{"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,"model":"m","tokens_predicted":24,"tokens_evaluated":15,"stop_type":"limit","stopping_word":"","tokens_cached":38,"timings":{"cache_n":8,"prompt_n":7,"predicted_n":24}}"#).unwrap();
        assert_eq!((last.channel, last.done, last.finish_reason.as_deref()), (None, true, Some("limit")));
        let u = last.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.prompt_tokens_details.unwrap().cached_tokens),
            (Some(15), Some(24), Some(8))
        );
        let older = parse_llamacpp(
            r#"{"content":"","stop":true,"tokens_predicted":5,"tokens_evaluated":9,"stopped_eos":false,"stopped_word":false,"stopped_limit":true}"#,
        )
        .unwrap();
        assert_eq!(older.finish_reason.as_deref(), Some("limit"), "builds before stop_type");
        let err =
            parse_llamacpp(r#"{"error":{"code":500,"message":"context shift is disabled","type":"server_error"}}"#)
                .unwrap();
        assert_eq!(err.error.as_deref(), Some("context shift is disabled"));
    }

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
}
