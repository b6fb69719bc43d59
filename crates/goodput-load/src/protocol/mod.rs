//! The protocols a benchmark client speaks: [`Api`] names them, and this
//! module builds any API's request body ([`build_body_for`]) and reads any
//! API's streamed payload or whole response into one [`ChunkInfo`]
//! ([`parse_for`]). One file per API:
//! - [`openai`]: `/v1/chat/completions` and `/v1/completions`;
//! - [`anthropic`]: Anthropic Messages (`/v1/messages`), also served by vLLM
//!   and SGLang;
//! - [`ollama`]: `/api/chat` and `/api/generate`, newline-delimited JSON;
//! - [`tgi`]: TGI's `/generate_stream` and `/generate`;
//! - [`llamacpp`]: llama.cpp's `/completion`;
//! - [`pooling`]: `/v1/embeddings` and `/v1/rerank`, answered whole.

pub mod anthropic;
pub mod llamacpp;
pub mod ollama;
pub mod openai;
pub mod pooling;
pub mod tgi;

pub use crate::error::{BodyError, ProtocolError};
use goodput_core::Channel;
pub(crate) use openai::ChunkMemo;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Which endpoint to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Api {
    /// OpenAI /v1/chat/completions.
    #[default]
    Chat,
    /// OpenAI /v1/completions.
    Completions,
    /// Anthropic Messages, /v1/messages (Anthropic; vLLM and SGLang serve it too).
    Messages,
    /// Ollama's native /api/chat (NDJSON stream).
    OllamaChat,
    /// Ollama's native /api/generate (NDJSON stream).
    OllamaGenerate,
    /// Hugging Face TGI's native /generate_stream (/generate with --no-stream).
    Tgi,
    /// llama.cpp's native /completion.
    #[cfg_attr(feature = "clap", value(name = "llamacpp"))]
    LlamaCpp,
    /// OpenAI /v1/embeddings (vLLM, TEI, SGLang serve it): never streamed.
    Embeddings,
    /// /v1/rerank (vLLM, Jina, Cohere): a query and documents, never streamed.
    Rerank,
    /// Hugging Face TEI's own /rerank: a query and `texts`, scores back as a bare list.
    TeiRerank,
}

impl Api {
    pub const ALL: [Api; 10] = [
        Api::Chat,
        Api::Completions,
        Api::Messages,
        Api::OllamaChat,
        Api::OllamaGenerate,
        Api::Tgi,
        Api::LlamaCpp,
        Api::Embeddings,
        Api::Rerank,
        Api::TeiRerank,
    ];

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
            Api::Embeddings => "/v1/embeddings",
            Api::Rerank => "/v1/rerank",
            Api::TeiRerank => "/rerank",
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
            Api::Embeddings => "embeddings",
            Api::Rerank => "rerank",
            Api::TeiRerank => "tei-rerank",
        }
    }

    /// The request can force the output length (`--ignore-eos`): vLLM's and
    /// SGLang's OpenAI routes, and llama.cpp's `/completion`.
    pub fn forces_length(self) -> bool {
        matches!(self, Api::Chat | Api::Completions | Api::LlamaCpp)
    }

    /// The answer is one pooled body (vectors or scores): never streamed,
    /// with input tokens and no output.
    pub fn pools(self) -> bool {
        matches!(self, Api::Embeddings | Api::Rerank | Api::TeiRerank)
    }

    /// A query with documents: `--rerank-docs` applies.
    pub fn reranks(self) -> bool {
        matches!(self, Api::Rerank | Api::TeiRerank)
    }

    /// The OpenTelemetry GenAI operation name of a request (`chat`,
    /// `text_completion` or `embeddings`; `rerank`, which the conventions
    /// do not name), for metrics labelled by it.
    pub fn operation(self) -> &'static str {
        if self == Api::Embeddings {
            "embeddings"
        } else if self.reranks() {
            "rerank"
        } else if self.takes_messages() {
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

    /// What ends a complete stream of this API, for the words of a
    /// truncation: each API has its own (only OpenAI's sends `[DONE]`).
    pub fn stream_end(self) -> &'static str {
        match self {
            Api::Chat | Api::Completions => "[DONE] or a finish reason",
            Api::Messages => "its message_stop event",
            Api::OllamaChat | Api::OllamaGenerate => "its line with \"done\": true",
            Api::Tgi => "its last event (the one with \"details\")",
            Api::LlamaCpp => "its event with \"stop\": true",
            Api::Embeddings | Api::Rerank | Api::TeiRerank => "its whole JSON body",
        }
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
            h.push(("Anthropic-Version", anthropic::ANTHROPIC_VERSION.to_owned()));
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
    /// `--api embeddings`: how many inputs one request's prompt is split
    /// into (`--embed-batch`; 0 counts as 1).
    pub embed_batch: u32,
    /// `--api rerank`: how many documents a query comes with
    /// (`--rerank-docs`; 0 counts as 1).
    pub rerank_docs: u32,
}

/// The JSON body of one request.
pub fn build_body(opts: &BodyOptions, prompt: &PromptBody, max_tokens: Option<u32>) -> Result<Vec<u8>, BodyError> {
    build_body_for(opts, &opts.model, prompt, max_tokens)
}

/// The JSON body of one request to `model`.
pub fn build_body_for(
    opts: &BodyOptions,
    model: &str,
    prompt: &PromptBody,
    max_tokens: Option<u32>,
) -> Result<Vec<u8>, BodyError> {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(model.to_owned()));
    let mut extra = opts.extra.clone();
    match opts.api {
        Api::Chat | Api::Completions => {
            openai::fill_body(opts, prompt, max_tokens, &mut body)?;
            // A `stream_options` object adds to goodput's own, so that
            // `{"stream_options":{"continuous_usage_stats":true}}` (vLLM's
            // usage on every chunk) keeps `include_usage`.
            if let Some(Value::Object(ours)) = body.get_mut("stream_options") {
                merge_object(ours, &mut extra, "stream_options");
            }
        }
        Api::Messages => anthropic::fill_body(opts, prompt, max_tokens, &mut body),
        Api::OllamaChat | Api::OllamaGenerate => ollama::fill_body(opts, prompt, max_tokens, &mut body, &mut extra)?,
        Api::Tgi => tgi::fill_body(opts, prompt, max_tokens, &mut body, &mut extra)?,
        Api::LlamaCpp => llamacpp::fill_body(opts, prompt, max_tokens, &mut body)?,
        Api::Embeddings | Api::Rerank | Api::TeiRerank => pooling::fill_body(opts, prompt, &mut body)?,
    }
    // `--extra-body` goes in last, for every API: a field it names replaces
    // goodput's own (an `options` or `parameters` object was merged into
    // goodput's above, see `merge_object`).
    body.extend(extra);
    serde_json::to_vec(&Value::Object(body)).map_err(BodyError::Encode)
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

/// A prompt as one text, for the APIs that take no messages: a
/// conversation's turns, or a dataset's chat messages (a system message
/// and all), one after another with a blank line between.
fn one_prompt(_api: Api, prompt: &PromptBody) -> Result<String, BodyError> {
    Ok(match prompt {
        PromptBody::Text(t) => t.clone(),
        PromptBody::Turns(turns) => turns.join(TURN_SEPARATOR),
        PromptBody::Messages(m) => joined_messages(m),
    })
}

/// Chat messages' texts (a content string, or its `text` parts joined by
/// a newline), one after another with [`TURN_SEPARATOR`] between, as a
/// conversation's turns are joined for an API that takes one prompt.
pub fn joined_messages(messages: &[Value]) -> String {
    let text = |m: &Value| match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    };
    messages.iter().map(text).filter(|t| !t.is_empty()).collect::<Vec<_>>().join(TURN_SEPARATOR)
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
    /// An OpenAI payload vLLM's `bench serve` (0.33) counts as output and
    /// stamps its TTFT and ITL on: any completions choice; a chat delta with
    /// text, reasoning or a call, or an empty `content` without a `role`.
    pub choice: bool,
    /// A pooling answer's vectors or scores, counted (`--api embeddings`
    /// and `rerank`): `None` for every other API.
    pub pooled: Option<usize>,
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
pub fn parse_for(api: Api, data: &str) -> Result<ChunkInfo, ProtocolError> {
    match api {
        Api::Chat | Api::Completions => openai::parse_chunk(data),
        Api::Messages => anthropic::parse_messages(data),
        Api::OllamaChat | Api::OllamaGenerate => ollama::parse_ollama(data),
        Api::Tgi => tgi::parse_tgi(data),
        Api::LlamaCpp => llamacpp::parse_llamacpp(data),
        Api::Embeddings | Api::Rerank | Api::TeiRerank => pooling::parse_pooled(data),
    }
}

/// [`parse_for`] into `info`, in place: an OpenAI payload's text is
/// gathered in the buffer the last one left there, so a reader that parses
/// each chunk into the same `info` allocates once a response rather than
/// once a chunk. On an error `info` holds nothing of the payload.
/// `memo`: the stream's last plain chunk (see [`ChunkMemo`]), one a stream.
pub(crate) fn parse_for_into(
    api: Api,
    data: &str,
    info: &mut ChunkInfo,
    memo: &mut ChunkMemo,
) -> Result<(), ProtocolError> {
    match api {
        Api::Chat | Api::Completions => openai::parse_chunk_into(data, info, memo),
        _ => {
            *info = ChunkInfo::default();
            *info = parse_for(api, data)?;
            Ok(())
        }
    }
}

impl ChunkInfo {
    /// Empties it for the next payload, keeping its text's buffer.
    fn reset(&mut self) {
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        *self = ChunkInfo { text, ..ChunkInfo::default() };
    }
}

/// Decodes one JSON payload of a response, or says it is malformed.
pub(crate) fn decode<'a, T: Deserialize<'a>>(data: &'a str) -> Result<T, ProtocolError> {
    serde_json::from_str(data).map_err(|e| {
        if e.classify() != serde_json::error::Category::Data {
            return ProtocolError::MalformedJson(e);
        }
        // Read again, this time keeping the path to the field at fault (the
        // first reading stays as fast as it was).
        let mut de = serde_json::Deserializer::from_str(data);
        match serde_path_to_error::deserialize::<_, T>(&mut de) {
            Err(at) if at.path().iter().next().is_some() => {
                ProtocolError::UnexpectedValue { field: at.path().to_string(), error: at.into_inner() }
            }
            _ => ProtocolError::MalformedJson(e),
        }
    })
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

/// The body `build_body` gives, as JSON, for the tests of each API.
#[cfg(test)]
pub(crate) fn test_body(api: Api, prompt: PromptBody, max: Option<u32>, extra: &str) -> Value {
    let opts = BodyOptions {
        api,
        model: "m".into(),
        stream: true,
        include_usage: true,
        ignore_eos: false,
        extra: serde_json::from_str(extra).unwrap(),
        ..Default::default()
    };
    serde_json::from_slice(&build_body(&opts, &prompt, max).unwrap()).unwrap()
}

#[cfg(test)]
mod tests {
    use super::test_body as body;
    use super::*;

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
        let b: Value = serde_json::from_slice(
            &crate::protocol::build_body(&opts, &PromptBody::Text("x".into()), Some(4)).unwrap(),
        )
        .unwrap();
        assert_eq!(b["ignore_eos"], true);
        // A dataset's chat messages are one prompt, as a conversation's turns are.
        let m = PromptBody::Messages(vec![
            serde_json::json!({"role": "system", "content": "S"}),
            serde_json::json!({"role": "user", "content": [{"type": "text", "text": "U"}]}),
        ]);
        let b: Value = serde_json::from_slice(&crate::protocol::build_body(&opts, &m, None).unwrap()).unwrap();
        assert_eq!(b["prompt"], "S\n\nU");
    }
}
