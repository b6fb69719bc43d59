//! The OpenAI-compatible protocol as a benchmark client needs it: request
//! bodies for `/v1/chat/completions` and `/v1/completions`, and the reading
//! of one streamed chunk or a whole non-streamed response. The native APIs
//! beside it (Anthropic Messages, Ollama) are in [`crate::native`]; [`Api`]
//! names them all and [`parse_for`] reads any of them.

use goodput_core::Channel;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// Which endpoint to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    #[default]
    Chat,
    Completions,
    /// Anthropic Messages, `/v1/messages` (also served by vLLM and SGLang).
    Messages,
    /// Ollama's native chat, `/api/chat` (newline-delimited JSON).
    OllamaChat,
    /// Ollama's native completion, `/api/generate` (newline-delimited JSON).
    OllamaGenerate,
    /// Hugging Face TGI's native `/generate_stream` (and `/generate`, not streamed).
    Tgi,
    /// llama.cpp's native `/completion`.
    LlamaCpp,
}

impl Api {
    pub const ALL: [Api; 7] =
        [Api::Chat, Api::Completions, Api::Messages, Api::OllamaChat, Api::OllamaGenerate, Api::Tgi, Api::LlamaCpp];

    /// The request path, streamed or not (TGI streams on a route of its own).
    pub fn path(self, stream: bool) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Completions => "/v1/completions",
            Api::Messages => "/v1/messages",
            Api::OllamaChat => "/api/chat",
            Api::OllamaGenerate => "/api/generate",
            Api::Tgi if stream => "/generate_stream",
            Api::Tgi => "/generate",
            Api::LlamaCpp => "/completion",
        }
    }

    /// The name `--api` takes and results carry.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
            Api::Messages => "messages",
            Api::OllamaChat => "ollama-chat",
            Api::OllamaGenerate => "ollama-generate",
            Api::Tgi => "tgi",
            Api::LlamaCpp => "llamacpp",
        }
    }

    /// The request can force the output length (`--ignore-eos`): vLLM's and
    /// SGLang's OpenAI routes, and llama.cpp's `/completion`.
    pub fn forces_length(self) -> bool {
        matches!(self, Api::Chat | Api::Completions | Api::LlamaCpp)
    }

    /// The OpenTelemetry GenAI operation name of a request (`chat` or
    /// `text_completion`), for metrics labelled by it.
    pub fn operation(self) -> &'static str {
        if self.takes_messages() {
            "chat"
        } else {
            "text_completion"
        }
    }

    /// A stream comes as newline-delimited JSON rather than SSE.
    pub fn ndjson(self) -> bool {
        matches!(self, Api::OllamaChat | Api::OllamaGenerate)
    }

    /// The request carries role messages (a conversation keeps its roles)
    /// rather than one prompt.
    pub fn takes_messages(self) -> bool {
        matches!(self, Api::Chat | Api::Messages | Api::OllamaChat)
    }

    /// The `Accept` header of a streamed request.
    pub fn stream_accept(self) -> &'static str {
        if self.ndjson() {
            "application/x-ndjson"
        } else {
            "text/event-stream"
        }
    }

    /// The request headers that carry `api_key` (in `key_header`), and any
    /// the API requires.
    pub fn auth_headers(self, api_key: Option<&str>, key_header: KeyHeader) -> Vec<(&'static str, String)> {
        let mut h = Vec::new();
        if self == Api::Messages {
            h.push(("Anthropic-Version", crate::native::ANTHROPIC_VERSION.to_owned()));
        }
        match (api_key, key_header) {
            (Some(k), KeyHeader::Bearer) => h.push((key_header.name(), format!("Bearer {k}"))),
            (Some(k), KeyHeader::XApiKey) => h.push((key_header.name(), k.to_owned())),
            (None, _) => {}
        }
        h
    }
}

/// The header that carries the API key. Anthropic's own API takes only
/// `x-api-key` (a key sent as a bearer token is refused); vLLM's and
/// SGLang's `/v1/messages`, like every OpenAI route, take the bearer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyHeader {
    #[default]
    Bearer,
    XApiKey,
}

impl KeyHeader {
    /// The header that carries the key.
    pub fn name(self) -> &'static str {
        match self {
            KeyHeader::Bearer => "Authorization",
            KeyHeader::XApiKey => "X-Api-Key",
        }
    }
}

/// What one request asks the model.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptBody {
    Text(String),
    /// Chat messages exactly as a dataset gave them.
    Messages(Vec<Value>),
    /// A conversation so far: user and assistant turns alternating, opening
    /// and ending with the user's. Chat sends them as messages with their
    /// roles; completions, as one prompt of the turns one after another.
    Turns(Vec<String>),
}

/// How a conversation's turns join into one completions prompt.
pub const TURN_SEPARATOR: &str = "\n\n";

/// Options that shape every request body.
#[derive(Debug, Clone, Default)]
pub struct BodyOptions {
    pub api: Api,
    pub model: String,
    /// Several models to spread the requests over (`--model a,b`), each
    /// request, or each session, asking one; empty for a run of one model.
    pub models: Vec<String>,
    pub stream: bool,
    /// Ask for `stream_options.include_usage`.
    pub include_usage: bool,
    /// Send `ignore_eos` and `min_tokens` so the server generates exactly `max_tokens`.
    pub ignore_eos: bool,
    /// Extra top-level fields merged into every body (`--extra-body`).
    pub extra: Map<String, Value>,
}

/// The JSON body of one request.
pub fn build_body(opts: &BodyOptions, prompt: &PromptBody, max_tokens: Option<u32>) -> Result<Vec<u8>, String> {
    build_body_for(opts, &opts.model, prompt, max_tokens)
}

/// The JSON body of one request to `model`.
pub fn build_body_for(
    opts: &BodyOptions,
    model: &str,
    prompt: &PromptBody,
    max_tokens: Option<u32>,
) -> Result<Vec<u8>, String> {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.to_owned()));
    if !matches!(opts.api, Api::Chat | Api::Completions) {
        crate::native::build_body(opts, prompt, max_tokens, &mut body)?;
        return serde_json::to_vec(&Value::Object(body)).map_err(|e| e.to_string());
    }
    match (opts.api, prompt) {
        (Api::Chat, PromptBody::Text(t)) => {
            body.insert("messages".into(), json!([{ "role": "user", "content": t }]));
        }
        (Api::Chat, PromptBody::Messages(m)) => {
            body.insert("messages".into(), Value::Array(m.clone()));
        }
        (Api::Chat, PromptBody::Turns(turns)) => {
            let roles = ["user", "assistant"].into_iter().cycle();
            let msgs = turns.iter().zip(roles).map(|(t, role)| json!({ "role": role, "content": t })).collect();
            body.insert("messages".into(), Value::Array(msgs));
        }
        (Api::Completions, PromptBody::Turns(turns)) => {
            body.insert("prompt".into(), Value::String(turns.join(TURN_SEPARATOR)));
        }
        (Api::Completions, PromptBody::Text(t)) => {
            body.insert("prompt".into(), Value::String(t.clone()));
        }
        (Api::Completions, PromptBody::Messages(_)) => {
            return Err("a dataset entry holds chat messages but --api completions takes a prompt: \
                        use --api chat, or give the entry a \"prompt\""
                .into())
        }
        _ => unreachable!("native APIs are built above"),
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
    for (k, v) in &opts.extra {
        body.insert(k.clone(), v.clone());
    }
    serde_json::to_vec(&Value::Object(body)).map_err(|e| e.to_string())
}

/// Token counts a server reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// `prompt_tokens_details.cached_tokens`: prompt tokens served from the
    /// prefix cache (vLLM, llama.cpp, OpenAI).
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct PromptTokensDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

impl Usage {
    /// These counts, with those that `newer` reports in their place: a
    /// stream may report the prompt at its start and the output at its end
    /// (Anthropic Messages).
    pub fn merge(self, newer: Usage) -> Usage {
        Usage {
            prompt_tokens: newer.prompt_tokens.or(self.prompt_tokens),
            completion_tokens: newer.completion_tokens.or(self.completion_tokens),
            prompt_tokens_details: newer.prompt_tokens_details.or(self.prompt_tokens_details),
        }
    }
}

/// What one parsed chunk (or whole response) carried.
#[derive(Debug, Default, PartialEq)]
pub struct ChunkInfo {
    /// The output channel, when the chunk carried generated output.
    pub channel: Option<Channel>,
    /// The generated text it carried (all channels, content first).
    pub text: String,
    /// How much of `text` (bytes, from its start) is visible content: what
    /// a conversation's history carries forward.
    pub content_len: usize,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
    /// An `{"error": …}` payload: the request failed.
    pub error: Option<String>,
    /// The stream said its last word (Messages' `message_stop`, Ollama's
    /// `done`), as `[DONE]` does for OpenAI's.
    pub done: bool,
    /// An OpenAI payload with a non-empty `choices`, output or not: what
    /// vLLM's `bench serve` stamps TTFT at.
    pub choice: bool,
}

impl ChunkInfo {
    /// Adds output text on `channel`. Visible content must come before any
    /// other channel's text of the same chunk: `content_len` counts from the start.
    pub fn push(&mut self, channel: Channel, text: &str) {
        if text.is_empty() {
            return;
        }
        self.channel.get_or_insert(channel);
        self.text.push_str(text);
        if channel == Channel::Content {
            self.content_len = self.text.len();
        }
    }
}

/// Parses one streamed payload (an SSE event's data, or an NDJSON line) or
/// a whole non-streamed body of `api`.
pub fn parse_for(api: Api, data: &str) -> Result<ChunkInfo, String> {
    match api {
        Api::Chat | Api::Completions => parse_chunk(data),
        Api::Messages => crate::native::parse_messages(data),
        Api::OllamaChat | Api::OllamaGenerate => crate::native::parse_ollama(data),
        Api::Tgi => crate::native::parse_tgi(data),
        Api::LlamaCpp => crate::native::parse_llamacpp(data),
    }
}

#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<WireChoice<'a>>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
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

fn nonempty(s: Option<Cow<'_, str>>) -> Option<Cow<'_, str>> {
    s.filter(|s| !s.is_empty())
}

#[derive(Deserialize)]
struct WireMessage<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
}

/// Parses one `data:` payload of a stream, or a whole non-streamed body.
pub fn parse_chunk(data: &str) -> Result<ChunkInfo, String> {
    let wire: Wire = decode(data)?;
    let mut info = ChunkInfo { usage: wire.usage, ..Default::default() };
    if let Some(err) = wire.error {
        info.error = Some(error_message(&err));
        return Ok(info);
    }
    // Servers stream one choice per chunk (n = 1, which is what goodput sends).
    let Some(choice) = wire.choices.and_then(|c| c.into_iter().next()) else {
        return Ok(info);
    };
    info.choice = true;
    info.finish_reason = choice.finish_reason.map(Cow::into_owned);
    // Content first, then reasoning: `push` counts visible content from the start.
    info.push(Channel::Content, choice.text.as_deref().unwrap_or(""));
    if let Some(m) = choice.delta.or(choice.message) {
        info.push(Channel::Content, m.content.as_deref().unwrap_or(""));
        let reasoning = nonempty(m.reasoning_content).or(nonempty(m.reasoning)).or(nonempty(m.thinking));
        info.push(Channel::Reasoning, reasoning.as_deref().unwrap_or(""));
        if let Some(calls) = m.tool_calls.filter(|c| !c.is_empty()) {
            info.channel.get_or_insert(Channel::ToolCalls);
            for call in &calls {
                if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                    info.text.push_str(args);
                }
            }
        }
    }
    Ok(info)
}

/// Decodes one JSON payload of a response, or says it is malformed.
pub(crate) fn decode<'a, T: Deserialize<'a>>(data: &'a str) -> Result<T, String> {
    serde_json::from_str(data).map_err(|e| format!("malformed JSON in response: {e}"))
}

/// A readable message from an error payload (`{"message": …}`, a string, or anything).
pub fn error_message(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            o.get("message").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| err.to_string())
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn body_for_completions_without_stream_has_no_stream_options() {
        let opts = BodyOptions { api: Api::Completions, model: "m".into(), include_usage: true, ..Default::default() };
        let b: Value =
            serde_json::from_slice(&build_body(&opts, &PromptBody::Text("hi".into()), None).unwrap()).unwrap();
        assert_eq!(b["prompt"], "hi");
        assert_eq!(b["stream"], false);
        assert!(b.get("stream_options").is_none() && b.get("max_tokens").is_none());
        let err = build_body(&opts, &PromptBody::Messages(vec![]), None).unwrap_err();
        assert!(err.contains("--api chat"));
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
        assert!(parse_chunk("{not json").unwrap_err().contains("malformed JSON"));
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
