//! The server side of the protocols, shared by every simulated backend:
//! OpenAI's chat and completions, and the native APIs beside them
//! (Anthropic Messages; Ollama's `/api/chat` and `/api/generate`, whose
//! streams are newline-delimited JSON). Request bodies, streamed chunk and
//! whole-response JSON, error bodies, and the deterministic words that
//! stand for tokens.

use crate::template::{ChatTemplate, Message};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt::Write;

/// Which route a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Chat,
    Completions,
    /// Anthropic Messages, `/v1/messages`.
    Messages,
    /// Ollama's `/api/chat`.
    OllamaChat,
    /// Ollama's `/api/generate`.
    OllamaGenerate,
    /// TGI's `/generate` (never streamed).
    TgiGenerate,
    /// TGI's `/generate_stream` (always streamed).
    TgiGenerateStream,
    /// llama.cpp's `/completion`.
    LlamaCpp,
}

impl Route {
    /// The route of a request path, if it is a generation route.
    pub fn of_path(path: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.path() == path)
    }

    pub const ALL: [Route; 8] = [
        Route::Chat,
        Route::Completions,
        Route::Messages,
        Route::OllamaChat,
        Route::OllamaGenerate,
        Route::TgiGenerate,
        Route::TgiGenerateStream,
        Route::LlamaCpp,
    ];

    /// The request path.
    pub fn path(self) -> &'static str {
        match self {
            Route::Chat => "/v1/chat/completions",
            Route::Completions => "/v1/completions",
            Route::Messages => "/v1/messages",
            Route::OllamaChat => "/api/chat",
            Route::OllamaGenerate => "/api/generate",
            Route::TgiGenerate => "/generate",
            Route::TgiGenerateStream => "/generate_stream",
            Route::LlamaCpp => "/completion",
        }
    }

    fn tgi(self) -> bool {
        matches!(self, Route::TgiGenerate | Route::TgiGenerateStream)
    }

    /// Ollama's: streams are newline-delimited JSON, and streaming is the default.
    pub fn ollama(self) -> bool {
        matches!(self, Route::OllamaChat | Route::OllamaGenerate)
    }

    /// The content type of a streamed response.
    pub fn stream_content_type(self) -> &'static str {
        if self.ollama() {
            "application/x-ndjson"
        } else {
            "text/event-stream"
        }
    }

    /// The request's `model` picks the model (not TGI's or llama.cpp's
    /// native routes, whose server has one).
    pub fn names_model(self) -> bool {
        !matches!(self, Route::TgiGenerate | Route::TgiGenerateStream | Route::LlamaCpp)
    }

    /// The message of a 404 for a model the server does not serve, in the
    /// words of the server this route comes from.
    pub fn unknown_model(self, name: &str) -> String {
        match self {
            Route::Messages => format!("model: {name}"),
            Route::OllamaChat | Route::OllamaGenerate => format!("model '{name}' not found"),
            _ => format!("The model `{name}` does not exist."),
        }
    }

    /// The JSON body of an error response with HTTP status `status`, in
    /// this route's own shape.
    pub fn error_body(self, status: u16, message: &str) -> String {
        match self {
            Route::Messages => {
                let kind = match status {
                    404 => "not_found_error",
                    500.. => "api_error",
                    _ => "invalid_request_error",
                };
                json!({ "type": "error", "error": { "type": kind, "message": message } }).to_string()
            }
            Route::OllamaChat | Route::OllamaGenerate => json!({ "error": message }).to_string(),
            Route::TgiGenerate | Route::TgiGenerateStream => {
                let kind = if status >= 500 { "generation" } else { "validation" };
                json!({ "error": message, "error_type": kind }).to_string()
            }
            Route::Chat | Route::Completions | Route::LlamaCpp => error_body(status, message),
        }
    }
}

/// The fields of a completion request that the simulator honours.
#[derive(Debug, Clone, Deserialize)]
pub struct GenerationRequest {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub messages: Option<Vec<Value>>,
    #[serde(default)]
    pub prompt: Option<Value>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub max_completion_tokens: Option<u32>,
    #[serde(default)]
    pub min_tokens: Option<u32>,
    #[serde(default)]
    pub ignore_eos: Option<bool>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Messages' system prompt: a string or text blocks.
    #[serde(default)]
    pub system: Option<Value>,
    /// Ollama's generation options (`num_predict`).
    #[serde(default)]
    pub options: Option<OllamaOptions>,
    /// TGI's prompt and parameters (`max_new_tokens`).
    #[serde(default)]
    pub inputs: Option<String>,
    #[serde(default)]
    pub parameters: Option<TgiParameters>,
    /// llama.cpp's output limit; negative means none.
    #[serde(default)]
    pub n_predict: Option<i64>,
    /// Ollama's generate: the prompt goes to the model as written, with no template.
    #[serde(default)]
    pub raw: Option<bool>,
    #[serde(skip)]
    route: Option<Route>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct TgiParameters {
    #[serde(default)]
    pub max_new_tokens: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct OllamaOptions {
    /// The output limit; negative means none.
    #[serde(default)]
    pub num_predict: Option<i64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
}

impl GenerationRequest {
    /// Parses and checks a body for `route`; the error is the message of a 400.
    pub fn parse(route: Route, body: &[u8]) -> Result<Self, String> {
        let mut req: GenerationRequest = serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
        req.route = Some(route);
        match route {
            Route::Chat | Route::Messages | Route::OllamaChat if req.messages.as_ref().is_none_or(|m| m.is_empty()) => {
                Err("\"messages\" is required and must not be empty".into())
            }
            Route::Completions | Route::OllamaGenerate | Route::LlamaCpp if req.prompt.is_none() => {
                Err("\"prompt\" is required".into())
            }
            Route::TgiGenerate | Route::TgiGenerateStream if req.inputs.is_none() => {
                Err("Failed to deserialize the JSON body into the target type: missing field `inputs`".into())
            }
            Route::Messages if req.max_tokens.is_none() => Err("max_tokens: Field required".into()),
            _ => Ok(req),
        }
    }

    /// Streamed: asked for, or by default on Ollama's routes.
    pub fn stream(&self) -> bool {
        match self.route {
            Some(Route::TgiGenerateStream) => true,
            Some(Route::TgiGenerate) => false,
            route => self.stream.unwrap_or(route.is_some_and(Route::ollama)),
        }
    }

    /// The stream reports token counts: asked for on OpenAI's routes,
    /// always on the native ones.
    pub fn include_usage(&self) -> bool {
        match self.route {
            Some(Route::Chat | Route::Completions) | None => {
                self.stream_options.as_ref().and_then(|o| o.include_usage).unwrap_or(false)
            }
            Some(_) => true,
        }
    }

    pub fn max_tokens(&self) -> Option<u32> {
        match self.route {
            Some(r) if r.ollama() => u32::try_from(self.options.as_ref().and_then(|o| o.num_predict)?).ok(),
            Some(r) if r.tgi() => self.parameters.as_ref().and_then(|p| p.max_new_tokens),
            Some(Route::LlamaCpp) => u32::try_from(self.n_predict?).ok(),
            _ => self.max_completion_tokens.or(self.max_tokens),
        }
    }

    /// The prompt's text: chat message contents joined, or the completion prompt.
    pub fn prompt_text(&self) -> String {
        let mut parts = vec![content_text(self.system.as_ref())];
        parts.extend(self.messages.iter().flatten().map(|m| content_text(m.get("content"))));
        parts.extend(self.inputs.clone());
        parts.push(self.raw_prompt());
        parts.retain(|p| !p.is_empty());
        parts.join(" ")
    }

    /// The completion prompt: a string, or a list of strings joined.
    fn raw_prompt(&self) -> String {
        match &self.prompt {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
            _ => String::new(),
        }
    }

    /// The prompt's token ids as a server whose model has chat template `t`
    /// counts and prefills them: a chat's messages (with Messages' or
    /// Ollama's `system`, and Ollama's generate prompt unless `raw`) rendered
    /// by the template; a raw prompt after the tokenizer's BOS.
    pub fn prompt_ids(&self, t: ChatTemplate) -> Vec<u32> {
        let generate = self.route == Some(Route::OllamaGenerate) && self.raw != Some(true);
        if !generate && !matches!(self.route, Some(Route::Chat | Route::Messages | Route::OllamaChat)) {
            return t.raw(&self.prompt_text());
        }
        let mut owned: Vec<(&str, String)> = Vec::new();
        if self.system.is_some() {
            owned.push(("system", content_text(self.system.as_ref())));
        }
        for m in self.messages.iter().flatten() {
            owned.push((m.get("role").and_then(Value::as_str).unwrap_or("user"), content_text(m.get("content"))));
        }
        if generate {
            owned.push(("user", self.raw_prompt()));
        }
        let messages: Vec<Message> = owned.iter().map(|(role, content)| Message { role, content }).collect();
        t.render(&messages)
    }
}

/// A message's content as text: a string, or its parts' `text` joined.
fn content_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join(" ")
        }
        _ => String::new(),
    }
}

/// The simulator's tokenizer: one whitespace-separated word is one token.
pub fn count_tokens(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// The ids of the tokens [`count_tokens`] counts: one per word, a hash of
/// the word (FNV-1a), so equal words are equal ids and prompts that share
/// leading words share a cacheable prefix in the engine.
pub fn token_ids(text: &str) -> Vec<u32> {
    text.split_whitespace().map(token_id).collect()
}

/// The id of one word (see [`token_ids`]).
pub fn token_id(word: &str) -> u32 {
    word.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ b as u32).wrapping_mul(0x0100_0193))
}

/// The ids of the `n` tokens request `seed` answers with ([`word`]), as a
/// prompt that repeats the answer (the next turn of a conversation) holds them.
pub fn output_ids(seed: u64, n: u32) -> Vec<u32> {
    (0..n as u64).map(|i| token_id(word(seed, i))).collect()
}

const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
    "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray",
    "yankee", "zulu", "river", "stone", "cloud", "maple", "ember", "harbor",
];

/// Token `i` of request `seed`'s output: a deterministic word with a leading space.
pub fn word(seed: u64, i: u64) -> &'static str {
    let mut z = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^= z >> 31;
    WORDS[(z % WORDS.len() as u64) as usize]
}

/// A response's token counts, as its `usage` block reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    /// Prompt tokens served from the prefix cache, reported as vLLM does
    /// with `--enable-prompt-tokens-details` (`prompt_tokens_details`).
    pub cached: Option<u64>,
}

impl Usage {
    pub fn new(prompt: u64, completion: u64) -> Usage {
        Usage { prompt, completion, cached: None }
    }

    /// The block as JSON text, written by hand: every stream ends with one.
    fn write(&self, out: &mut String) {
        let (p, c) = (self.prompt, self.completion);
        let _ = write!(out, "{{\"prompt_tokens\":{p},\"completion_tokens\":{c},\"total_tokens\":{}", p + c);
        if let Some(cached) = self.cached {
            let _ = write!(out, ",\"prompt_tokens_details\":{{\"cached_tokens\":{cached}}}");
        }
        out.push('}');
    }

    /// Messages' usage block: `input_tokens` excludes what the prefix cache
    /// served, which is `cache_read_input_tokens`.
    fn messages_json(&self, output_tokens: u64) -> Value {
        let cached = self.cached.unwrap_or(0);
        let mut u = json!({ "input_tokens": self.prompt.saturating_sub(cached), "output_tokens": output_tokens });
        if self.cached.is_some() {
            u["cache_read_input_tokens"] = json!(cached);
        }
        u
    }

    /// llama.cpp's `timings`: the prompt tokens reused from the cache and
    /// those evaluated.
    fn llamacpp_timings(&self) -> Value {
        let cached = self.cached.unwrap_or(0);
        json!({ "cache_n": cached, "prompt_n": self.prompt.saturating_sub(cached), "predicted_n": self.completion })
    }

    fn json(&self) -> Value {
        let mut u = json!({
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.prompt + self.completion,
        });
        if let Some(c) = self.cached {
            u["prompt_tokens_details"] = json!({ "cached_tokens": c });
        }
        u
    }
}

/// Renders streamed chunks for one response, in its route's protocol. The
/// model name is JSON-escaped once; everything else is built with plain
/// writes because this runs for every token of every stream.
pub struct ChunkWriter {
    route: Route,
    id: String,
    model_json: String,
    created: u64,
    /// Ollama's `created_at` (RFC 3339, to the second); empty on the other routes.
    created_at: String,
    seed: u64,
    /// The prompt's and the whole output's lengths: TGI's last token event
    /// and llama.cpp's events carry them.
    prompt_tokens: u64,
    n_out: u64,
}

impl ChunkWriter {
    pub fn new(route: Route, request_id: u64, model: &str, created: u64) -> Self {
        let prefix = match route {
            Route::Chat => "chatcmpl",
            Route::Messages => "msg",
            _ => "cmpl",
        };
        ChunkWriter {
            route,
            id: format!("{prefix}-{request_id:016x}"),
            model_json: serde_json::to_string(model).unwrap_or_else(|_| "\"model\"".into()),
            created,
            // Only Ollama's lines carry it; the other routes skip formatting it.
            created_at: if route.ollama() { rfc3339(created) } else { String::new() },
            seed: request_id,
            prompt_tokens: 0,
            n_out: 0,
        }
    }

    /// The response's prompt and output lengths, which TGI's and
    /// llama.cpp's events carry.
    pub fn with_lengths(self, prompt_tokens: u64, n_out: u64) -> Self {
        ChunkWriter { prompt_tokens, n_out, ..self }
    }

    pub fn route(&self) -> Route {
        self.route
    }

    fn head(&self, out: &mut String) {
        let object = if self.route == Route::Chat { "chat.completion.chunk" } else { "text_completion" };
        let _ = write!(
            out,
            "data: {{\"id\":\"{}\",\"object\":\"{object}\",\"created\":{},\"model\":{},\"choices\":",
            self.id, self.created, self.model_json
        );
    }

    /// The start of one Ollama line, up to its text's opening quote.
    fn ollama_head(&self, out: &mut String) {
        let _ = write!(out, "{{\"model\":{},\"created_at\":\"{}\",", self.model_json, self.created_at);
        match self.route {
            Route::OllamaChat => out.push_str("\"message\":{\"role\":\"assistant\",\"content\":\""),
            _ => out.push_str("\"response\":\""),
        }
    }

    /// The words of tokens `from..to` of this response.
    pub fn text(&self, from: u64, to: u64) -> String {
        let mut s = String::new();
        for i in from..to {
            s.push(' ');
            s.push_str(word(self.seed, i));
        }
        s
    }

    /// A chunk carrying tokens `from..to`.
    pub fn tokens(&self, from: u64, to: u64) -> Bytes {
        let mut out = String::with_capacity(200 + 8 * to.saturating_sub(from) as usize);
        self.tokens_into(from, to, &mut out);
        Bytes::from(out)
    }

    /// Appends the chunk carrying tokens `from..to` to `out`: the same bytes as
    /// [`ChunkWriter::tokens`] without an allocation of its own, for emitters
    /// that reuse one buffer for every chunk.
    pub fn tokens_into(&self, from: u64, to: u64, out: &mut String) {
        match self.route {
            Route::Chat => {
                self.head(out);
                out.push_str("[{\"index\":0,\"delta\":{\"content\":\"");
            }
            Route::Completions => {
                self.head(out);
                out.push_str("[{\"index\":0,\"text\":\"");
            }
            Route::Messages => out.push_str(
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\
                 \"delta\":{\"type\":\"text_delta\",\"text\":\"",
            ),
            Route::OllamaChat | Route::OllamaGenerate => self.ollama_head(out),
            Route::TgiGenerate | Route::TgiGenerateStream => {
                let id = token_id(word(self.seed, from));
                let _ = write!(out, "data:{{\"index\":{},\"token\":{{\"id\":{id},\"text\":\"", from + 1);
            }
            Route::LlamaCpp => out.push_str("data: {\"index\":0,\"content\":\""),
        }
        for i in from..to {
            out.push(' ');
            out.push_str(word(self.seed, i));
        }
        match self.route {
            Route::Chat => out.push_str("\"},\"finish_reason\":null}]}\n\n"),
            Route::Completions => out.push_str("\",\"logprobs\":null,\"finish_reason\":null}]}\n\n"),
            Route::Messages => out.push_str("\"}}\n\n"),
            Route::OllamaChat => out.push_str("\"},\"done\":false}\n"),
            Route::OllamaGenerate => out.push_str("\",\"done\":false}\n"),
            // The last token's event is TGI's close: the whole text and the details.
            Route::TgiGenerate | Route::TgiGenerateStream if to >= self.n_out => {
                let text = serde_json::to_string(&self.text(0, self.n_out)).unwrap_or_default();
                let _ = write!(
                    out,
                    "\",\"logprob\":0.0,\"special\":false}},\"generated_text\":{text},\"details\":\
                     {{\"finish_reason\":\"length\",\"generated_tokens\":{},\"seed\":null,\"input_length\":{}}}}}\n\n",
                    self.n_out, self.prompt_tokens
                );
            }
            Route::TgiGenerate | Route::TgiGenerateStream => {
                out.push_str("\",\"logprob\":0.0,\"special\":false},\"generated_text\":null,\"details\":null}\n\n")
            }
            Route::LlamaCpp => {
                let _ = write!(
                    out,
                    "\",\"tokens\":[],\"stop\":false,\"id_slot\":0,\"tokens_predicted\":{to},\"tokens_evaluated\":{}}}\n\n",
                    self.prompt_tokens
                );
            }
        }
    }

    /// What real servers send before the first token: a role-only chunk
    /// (`content: null`) and an empty delta, for chat; an empty text for
    /// completions; `message_start` (with the prompt's counts, from
    /// `prompt`), the text block's start and a `ping`, for Messages;
    /// nothing, for Ollama.
    pub fn preamble(&self, prompt: Usage) -> Bytes {
        let mut out = String::new();
        match self.route {
            Route::Chat => {
                self.head(&mut out);
                out.push_str(
                    "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null},\"finish_reason\":null}]}\n\n",
                );
                self.head(&mut out);
                out.push_str("[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":null}]}\n\n");
            }
            Route::Completions => {
                self.head(&mut out);
                out.push_str("[{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":null}]}\n\n");
            }
            Route::Messages => {
                let start = json!({
                    "type": "message_start",
                    "message": {
                        "id": self.id, "type": "message", "role": "assistant", "content": [],
                        "model": self.model(), "stop_reason": null, "stop_sequence": null,
                        "usage": prompt.messages_json(1),
                    },
                });
                let _ = write!(
                    out,
                    "event: message_start\ndata: {start}\n\n\
                     event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\
                     \"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
                     event: ping\ndata: {{\"type\": \"ping\"}}\n\n"
                );
            }
            Route::OllamaChat
            | Route::OllamaGenerate
            | Route::TgiGenerate
            | Route::TgiGenerateStream
            | Route::LlamaCpp => {}
        }
        Bytes::from(out)
    }

    /// The end of a stream: the finish chunk, the usage chunk when asked and
    /// `[DONE]` (OpenAI); the block's stop, `message_delta` with the output
    /// count and `message_stop` (Messages); the `done` line with the counts (Ollama).
    pub fn close(&self, finish_reason: &str, usage: Option<Usage>) -> Bytes {
        let mut out = String::new();
        match self.route {
            Route::Chat => {
                self.head(&mut out);
                let _ = write!(out, "[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{finish_reason}\"}}]}}\n\n");
            }
            Route::Completions => {
                self.head(&mut out);
                let _ = write!(
                    out,
                    "[{{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"{finish_reason}\"}}]}}\n\n"
                );
            }
            Route::Messages => {
                let delta = json!({
                    "type": "message_delta",
                    "delta": { "stop_reason": messages_stop_reason(finish_reason), "stop_sequence": null },
                    "usage": { "output_tokens": usage.map_or(0, |u| u.completion) },
                });
                let _ = write!(
                    out,
                    "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
                     event: message_delta\ndata: {delta}\n\n\
                     event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
                );
                return Bytes::from(out);
            }
            Route::OllamaChat | Route::OllamaGenerate => {
                self.ollama_head(&mut out);
                out.push('"');
                if self.route == Route::OllamaChat {
                    out.push('}');
                }
                let _ = write!(out, ",\"done_reason\":\"{finish_reason}\",\"done\":true");
                if let Some(u) = usage {
                    let _ = write!(out, ",\"prompt_eval_count\":{},\"eval_count\":{}", u.prompt, u.completion);
                }
                out.push_str("}\n");
                return Bytes::from(out);
            }
            // Said with the last token (see `tokens_into`).
            Route::TgiGenerate | Route::TgiGenerateStream => return Bytes::new(),
            Route::LlamaCpp => {
                let u = usage.unwrap_or(Usage::new(self.prompt_tokens, self.n_out));
                let last = json!({
                    "index": 0, "content": "", "tokens": [], "id_slot": 0, "stop": true, "model": self.model(),
                    "tokens_predicted": u.completion, "tokens_evaluated": u.prompt,
                    "stop_type": llamacpp_stop_type(finish_reason), "stopping_word": "",
                    "timings": u.llamacpp_timings(),
                });
                let _ = write!(out, "data: {last}\n\n");
                return Bytes::from(out);
            }
        }
        if let Some(u) = usage {
            self.head(&mut out);
            out.push_str("[],\"usage\":");
            u.write(&mut out);
            out.push_str("}\n\n");
        }
        out.push_str("data: [DONE]\n\n");
        Bytes::from(out)
    }

    /// A stream's end with usage and no output (`--fault usage-only`): the
    /// usage chunk alone (`"choices": []`) and `[DONE]` on OpenAI's routes,
    /// the route's own close counting no output tokens elsewhere.
    pub fn usage_only(&self, prompt_tokens: u64) -> Bytes {
        let usage = Usage::new(prompt_tokens, 0);
        if !matches!(self.route, Route::Chat | Route::Completions) {
            return self.close("stop", Some(usage));
        }
        let mut out = String::new();
        self.head(&mut out);
        out.push_str("[],\"usage\":");
        usage.write(&mut out);
        out.push_str("}\n\ndata: [DONE]\n\n");
        Bytes::from(out)
    }

    /// A mid-stream error, as each server sends one inside a 200 stream:
    /// an `{"error": …}` event (vLLM), an `error` event (Messages), an
    /// `{"error": …}` line (Ollama).
    pub fn error_event(&self, message: &str) -> Bytes {
        Bytes::from(match self.route {
            Route::Chat | Route::Completions => {
                let body = json!({ "error": { "message": message, "type": "server_error", "code": 500 } });
                format!("data: {body}\n\n")
            }
            Route::Messages => format!("event: error\ndata: {}\n\n", self.route.error_body(500, message)),
            Route::OllamaChat | Route::OllamaGenerate => format!("{}\n", self.route.error_body(500, message)),
            Route::TgiGenerate | Route::TgiGenerateStream => {
                format!("data:{}\n\n", self.route.error_body(500, message))
            }
            Route::LlamaCpp => {
                let body = json!({ "error": { "code": 500, "message": message, "type": "server_error" } });
                format!("data: {body}\n\n")
            }
        })
    }

    fn model(&self) -> Value {
        serde_json::from_str::<Value>(&self.model_json).unwrap_or(Value::Null)
    }

    /// The whole non-streamed response.
    pub fn whole(&self, usage: Usage, finish_reason: &str) -> Value {
        let text = self.text(0, usage.completion);
        let choice = match self.route {
            Route::Chat => json!({
                "index": 0,
                "message": { "role": "assistant", "content": text },
                "finish_reason": finish_reason,
            }),
            Route::Completions => json!({ "index": 0, "text": text, "logprobs": null, "finish_reason": finish_reason }),
            Route::Messages => {
                return json!({
                    "id": self.id, "type": "message", "role": "assistant", "model": self.model(),
                    "content": [{ "type": "text", "text": text }],
                    "stop_reason": messages_stop_reason(finish_reason), "stop_sequence": null,
                    "usage": usage.messages_json(usage.completion),
                })
            }
            Route::OllamaChat | Route::OllamaGenerate => {
                let mut v = json!({
                    "model": self.model(), "created_at": self.created_at,
                    "done_reason": finish_reason, "done": true,
                    "prompt_eval_count": usage.prompt, "eval_count": usage.completion,
                });
                if self.route == Route::OllamaChat {
                    v["message"] = json!({ "role": "assistant", "content": text });
                } else {
                    v["response"] = json!(text);
                }
                return v;
            }
            Route::TgiGenerate | Route::TgiGenerateStream => {
                return json!({
                    "generated_text": text,
                    "details": {
                        "finish_reason": finish_reason, "generated_tokens": usage.completion,
                        "seed": null, "prefill": [], "tokens": [],
                    },
                })
            }
            Route::LlamaCpp => {
                return json!({
                    "index": 0, "content": text, "tokens": [], "id_slot": 0, "stop": true, "model": self.model(),
                    "tokens_predicted": usage.completion, "tokens_evaluated": usage.prompt,
                    "stop_type": llamacpp_stop_type(finish_reason), "stopping_word": "",
                    "timings": usage.llamacpp_timings(),
                })
            }
        };
        json!({
            "id": self.id,
            "object": if self.route == Route::Chat { "chat.completion" } else { "text_completion" },
            "created": self.created,
            "model": self.model(),
            "choices": [choice],
            "usage": usage.json(),
        })
    }
}

/// Messages' name for an OpenAI finish reason.
fn messages_stop_reason(finish_reason: &str) -> &str {
    match finish_reason {
        "length" => "max_tokens",
        "stop" => "end_turn",
        other => other,
    }
}

/// llama.cpp's name for an OpenAI finish reason.
fn llamacpp_stop_type(finish_reason: &str) -> &str {
    match finish_reason {
        "length" => "limit",
        "stop" => "eos",
        other => other,
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the Unix epoch.
fn rfc3339(unix_s: u64) -> String {
    let t = goodput_core::civil::civil_utc(unix_s as i64);
    format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", t.year, t.month, t.day, t.hour, t.minute, t.second)
}

/// An error response in `route`'s shape.
pub fn error_response(route: Route, status: StatusCode, message: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], route.error_body(status.as_u16(), message)).into_response()
}

/// The JSON body of an OpenAI-style error with HTTP status `status`.
pub fn error_body(status: u16, message: &str) -> String {
    json!({ "error": { "message": message, "type": "invalid_request_error", "code": status } }).to_string()
}

/// TGI's `/info` for one served model.
pub fn info_body(model: &str) -> Value {
    json!({ "model_id": model, "router": "goodput-sim", "version": env!("CARGO_PKG_VERSION") })
}

/// Ollama's `/api/tags` for the served models.
pub fn tags_body(models: &[&str]) -> Value {
    let models: Vec<Value> = models
        .iter()
        .map(|m| json!({ "name": m, "model": m, "size": 0, "details": { "family": "goodput-sim" } }))
        .collect();
    json!({ "models": models })
}

/// `/v1/models` for the served models.
pub fn models_body(models: &[&str]) -> Value {
    let data: Vec<Value> =
        models.iter().map(|m| json!({ "id": m, "object": "model", "created": 0, "owned_by": "goodput" })).collect();
    json!({ "object": "list", "data": data })
}

/// Seconds since the Unix epoch, for `created` fields.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_counts_its_prompt_as_a_real_server_does() {
        let t = ChatTemplate::Llama3;
        // (route, body, prompt tokens): chats get the template, raw prompts the BOS.
        let cases = [
            (Route::Chat, json!({"messages": [{"role": "user", "content": "a b c"}]}), 3 + 35),
            (
                Route::Chat,
                json!({"messages": [{"role": "system", "content": "be brief"}, {"role": "user",
                       "content": [{"type": "text", "text": "a b"}, {"type": "text", "text": "c"}]}]}),
                2 + 3 + 35,
            ),
            (
                Route::Messages,
                json!({"system": [{"type": "text", "text": "be brief"}], "max_tokens": 4,
                       "messages": [{"role": "user", "content": "a b c"}]}),
                2 + 3 + 35,
            ),
            (Route::OllamaChat, json!({"messages": [{"role": "user", "content": "a b c"}]}), 3 + 35),
            (Route::OllamaGenerate, json!({"prompt": "a b c"}), 3 + 35),
            (Route::OllamaGenerate, json!({"prompt": "a b c", "system": "be brief"}), 2 + 3 + 35),
            (Route::OllamaGenerate, json!({"prompt": "a b c", "raw": true}), 3 + 1),
            (Route::Completions, json!({"prompt": "a b c"}), 3 + 1),
            (Route::Completions, json!({"prompt": ["a b", "c"]}), 3 + 1),
            (Route::LlamaCpp, json!({"prompt": "a b c"}), 3 + 1),
            (Route::TgiGenerate, json!({"inputs": "a b c"}), 3 + 1),
        ];
        for (route, body, want) in cases {
            let req = GenerationRequest::parse(route, body.to_string().as_bytes()).unwrap();
            assert_eq!(req.prompt_ids(t).len(), want, "{route:?} {body}");
            // With no template, the words alone, as before templates.
            assert_eq!(req.prompt_ids(ChatTemplate::None).len() as u64, count_tokens(&req.prompt_text()), "{body}");
        }
    }

    #[test]
    fn chunks_are_valid_json_with_the_right_shape() {
        let w = ChunkWriter::new(Route::Chat, 7, "m\"<odd>", 1);
        let s = String::from_utf8(w.tokens(0, 2).to_vec()).unwrap();
        let v: Value = serde_json::from_str(s.strip_prefix("data: ").unwrap().trim()).unwrap();
        assert_eq!(v["model"], "m\"<odd>");
        assert_eq!(v["choices"][0]["delta"]["content"].as_str().unwrap().split_whitespace().count(), 2);
        let close = String::from_utf8(w.close("length", Some(Usage::new(3, 2))).to_vec()).unwrap();
        let parts: Vec<&str> = close.split("\n\n").filter(|p| !p.is_empty()).collect();
        assert_eq!(parts.len(), 3);
        let usage: Value = serde_json::from_str(parts[1].strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(usage["usage"]["completion_tokens"], 2);
        assert_eq!(parts[2], "data: [DONE]");
        // The exact bytes, appended after what the buffer already holds.
        let mut into = String::from("x");
        w.tokens_into(3, 5, &mut into);
        let want = format!(
            "xdata: {{\"id\":\"chatcmpl-0000000000000007\",\"object\":\"chat.completion.chunk\",\"created\":1,\
             \"model\":\"m\\\"<odd>\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" {} {}\"}},\"finish_reason\":null}}]}}\n\n",
            word(7, 3),
            word(7, 4)
        );
        assert_eq!(into, want);
        let c = ChunkWriter::new(Route::Completions, 7, "m", 1);
        let s = String::from_utf8(c.tokens(0, 1).to_vec()).unwrap();
        let v: Value = serde_json::from_str(s.strip_prefix("data: ").unwrap().trim()).unwrap();
        assert_eq!(v["choices"][0]["text"].as_str().unwrap().split_whitespace().count(), 1);
    }

    /// Each `data:` payload of an SSE text, or each line of an NDJSON text, as JSON.
    fn payloads(route: Route, b: &Bytes) -> Vec<Value> {
        let s = std::str::from_utf8(b).unwrap();
        let parse = |p: &str| serde_json::from_str::<Value>(p).unwrap_or_else(|e| panic!("{e}: {p}"));
        if route.ollama() {
            assert!(s.is_empty() || s.ends_with('\n'), "every line ends: {s:?}");
            return s.lines().map(parse).collect();
        }
        s.split("\n\n")
            .filter(|e| !e.is_empty())
            .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data:")).map(str::trim_start))
            .filter(|d| *d != "[DONE]")
            .map(parse)
            .collect()
    }

    #[test]
    fn native_streams_have_each_protocol_s_shape() {
        let w = ChunkWriter::new(Route::Messages, 7, "m\"x", 1_700_000_000);
        let pre = payloads(Route::Messages, &w.preamble(Usage { prompt: 40, completion: 0, cached: Some(32) }));
        let kinds: Vec<&str> = pre.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["message_start", "content_block_start", "ping"]);
        assert_eq!(pre[0]["message"]["model"], "m\"x");
        assert_eq!(pre[0]["message"]["usage"]["input_tokens"], 8, "the uncached part");
        assert_eq!(pre[0]["message"]["usage"]["cache_read_input_tokens"], 32);
        let delta = payloads(Route::Messages, &w.tokens(0, 2));
        assert_eq!(delta[0]["delta"]["type"], "text_delta");
        assert_eq!(delta[0]["delta"]["text"].as_str().unwrap().split_whitespace().count(), 2);
        let close = payloads(Route::Messages, &w.close("length", Some(Usage::new(40, 2))));
        let kinds: Vec<&str> = close.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["content_block_stop", "message_delta", "message_stop"]);
        assert_eq!(
            (close[1]["delta"]["stop_reason"].as_str(), close[1]["usage"]["output_tokens"].as_u64()),
            (Some("max_tokens"), Some(2))
        );
        let err = String::from_utf8(w.error_event("boom").to_vec()).unwrap();
        assert!(err.starts_with("event: error\ndata: "), "{err}");
        assert_eq!(payloads(Route::Messages, &w.error_event("boom"))[0]["error"]["message"], "boom");
        let whole = w.whole(Usage::new(40, 3), "length");
        assert_eq!((whole["type"].as_str(), whole["stop_reason"].as_str()), (Some("message"), Some("max_tokens")));
        assert_eq!(whole["content"][0]["text"].as_str().unwrap().split_whitespace().count(), 3);

        for route in [Route::OllamaChat, Route::OllamaGenerate] {
            let w = ChunkWriter::new(route, 7, "m", 1_700_000_000);
            assert!(w.preamble(Usage::new(4, 0)).is_empty(), "Ollama sends nothing before the first token");
            let line = &payloads(route, &w.tokens(0, 2))[0];
            let text = if route == Route::OllamaChat { &line["message"]["content"] } else { &line["response"] };
            assert_eq!(text.as_str().unwrap().split_whitespace().count(), 2);
            assert_eq!(
                (line["done"].as_bool(), line["created_at"].as_str()),
                (Some(false), Some("2023-11-14T22:13:20Z"))
            );
            let last = &payloads(route, &w.close("length", Some(Usage::new(4, 2))))[0];
            assert_eq!((last["done"].as_bool(), last["done_reason"].as_str()), (Some(true), Some("length")));
            assert_eq!((last["prompt_eval_count"].as_u64(), last["eval_count"].as_u64()), (Some(4), Some(2)));
            assert_eq!(payloads(route, &w.error_event("boom"))[0]["error"], "boom");
            let whole = w.whole(Usage::new(4, 3), "length");
            let text = if route == Route::OllamaChat { &whole["message"]["content"] } else { &whole["response"] };
            assert_eq!(text.as_str().unwrap().split_whitespace().count(), 3);
        }
        // TGI: one event per token; the last carries the whole text and the details.
        let w = ChunkWriter::new(Route::TgiGenerateStream, 7, "m", 1).with_lengths(4, 3);
        assert!(w.preamble(Usage::new(4, 0)).is_empty());
        let mid = &payloads(Route::TgiGenerateStream, &w.tokens(1, 2))[0];
        assert_eq!(
            (mid["index"].as_u64(), mid["token"]["special"].as_bool(), &mid["details"]),
            (Some(2), Some(false), &Value::Null)
        );
        let raw = String::from_utf8(w.tokens(2, 3).to_vec()).unwrap();
        assert!(raw.starts_with("data:{"), "TGI writes no space after data: {raw}");
        let last = &payloads(Route::TgiGenerateStream, &w.tokens(2, 3))[0];
        assert_eq!(last["generated_text"].as_str(), Some(w.text(0, 3).as_str()));
        assert_eq!(
            (last["details"]["generated_tokens"].as_u64(), last["details"]["input_length"].as_u64()),
            (Some(3), Some(4))
        );
        assert!(w.close("length", Some(Usage::new(4, 3))).is_empty(), "the last token said it");
        assert_eq!(payloads(Route::TgiGenerateStream, &w.error_event("boom"))[0]["error"], "boom");
        assert_eq!(w.whole(Usage::new(4, 3), "length")["details"]["generated_tokens"], 3);
        // llama.cpp: pieces, then a stop event with the counts and the cache's share.
        let w = ChunkWriter::new(Route::LlamaCpp, 7, "m", 1).with_lengths(40, 2);
        let piece = &payloads(Route::LlamaCpp, &w.tokens(0, 1))[0];
        assert_eq!((piece["stop"].as_bool(), piece["tokens_predicted"].as_u64()), (Some(false), Some(1)));
        let stop =
            &payloads(Route::LlamaCpp, &w.close("length", Some(Usage { prompt: 40, completion: 2, cached: Some(32) })))
                [0];
        assert_eq!(
            (stop["stop"].as_bool(), stop["stop_type"].as_str(), stop["content"].as_str()),
            (Some(true), Some("limit"), Some(""))
        );
        assert_eq!((stop["tokens_evaluated"].as_u64(), stop["timings"]["cache_n"].as_u64()), (Some(40), Some(32)));
        assert_eq!(payloads(Route::LlamaCpp, &w.error_event("boom"))[0]["error"]["message"], "boom");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn native_requests_are_checked_and_counted() {
        let m = GenerationRequest::parse(
            Route::Messages,
            br#"{"system":"be brief","messages":[{"role":"user","content":"a b"}],"max_tokens":5}"#,
        )
        .unwrap();
        assert_eq!((m.max_tokens(), m.stream(), m.include_usage()), (Some(5), false, true));
        assert_eq!(count_tokens(&m.prompt_text()), 4, "the system prompt counts");
        let no_max = GenerationRequest::parse(Route::Messages, br#"{"messages":[{"role":"user","content":"a"}]}"#);
        assert!(no_max.unwrap_err().contains("max_tokens"));
        let o = GenerationRequest::parse(
            Route::OllamaChat,
            br#"{"messages":[{"role":"user","content":"a"}],"options":{"num_predict":9}}"#,
        )
        .unwrap();
        assert_eq!((o.max_tokens(), o.stream(), o.include_usage()), (Some(9), true, true), "Ollama streams by default");
        let unlimited = GenerationRequest::parse(
            Route::OllamaGenerate,
            br#"{"prompt":"a","stream":false,"options":{"num_predict":-1}}"#,
        )
        .unwrap();
        assert_eq!((unlimited.max_tokens(), unlimited.stream()), (None, false));
        assert!(GenerationRequest::parse(Route::OllamaGenerate, br#"{"messages":[]}"#).is_err());
        assert_eq!(Route::of_path("/api/chat"), Some(Route::OllamaChat));
        assert_eq!(Route::of_path("/api/pull"), None);
        let t = GenerationRequest::parse(
            Route::TgiGenerateStream,
            br#"{"inputs":"a b","parameters":{"max_new_tokens":7}}"#,
        )
        .unwrap();
        assert_eq!(
            (t.max_tokens(), t.stream(), count_tokens(&t.prompt_text())),
            (Some(7), true, 2),
            "the route streams"
        );
        assert!(GenerationRequest::parse(Route::TgiGenerate, br#"{"prompt":"a"}"#).unwrap_err().contains("inputs"));
        let l = GenerationRequest::parse(Route::LlamaCpp, br#"{"prompt":"a","n_predict":5,"stream":true}"#).unwrap();
        assert_eq!((l.max_tokens(), l.stream()), (Some(5), true));
        let body: Value = serde_json::from_str(&Route::Messages.error_body(400, "bad")).unwrap();
        assert_eq!(
            (body["type"].as_str(), body["error"]["type"].as_str()),
            (Some("error"), Some("invalid_request_error"))
        );
        let body: Value = serde_json::from_str(&Route::OllamaChat.error_body(500, "bad")).unwrap();
        assert_eq!(body, json!({ "error": "bad" }));
    }

    #[test]
    fn requests_are_checked_and_counted() {
        let r = GenerationRequest::parse(Route::Chat, br#"{"messages":[{"role":"user","content":"a b c"}],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}"#).unwrap();
        assert_eq!((r.max_tokens(), r.stream(), r.include_usage()), (Some(4), true, true));
        assert_eq!(count_tokens(&r.prompt_text()), 3);
        let ids = token_ids(&r.prompt_text());
        assert_eq!(ids.len(), 3);
        assert_eq!(token_ids("  a\tb  c "), ids);
        assert_ne!(ids[0], ids[1]);
        assert!(GenerationRequest::parse(Route::Chat, br#"{"prompt":"x"}"#).is_err());
        assert!(GenerationRequest::parse(Route::Completions, br#"{"messages":[]}"#).is_err());
        assert!(GenerationRequest::parse(Route::Completions, b"{nope").is_err());
    }
}
