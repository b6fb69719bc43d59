//! The server side of the OpenAI-compatible protocol, shared by every
//! simulated backend: request bodies, streamed chunk and whole-response
//! JSON, error bodies, and the deterministic words that stand for tokens.

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
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
}

impl GenerationRequest {
    /// Parses and checks a body for `route`; the error is the message of a 400.
    pub fn parse(route: Route, body: &[u8]) -> Result<Self, String> {
        let req: GenerationRequest = serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
        match route {
            Route::Chat if req.messages.as_ref().is_none_or(|m| m.is_empty()) => {
                Err("\"messages\" is required and must not be empty".into())
            }
            Route::Completions if req.prompt.is_none() => Err("\"prompt\" is required".into()),
            _ => Ok(req),
        }
    }

    pub fn stream(&self) -> bool {
        self.stream.unwrap_or(false)
    }

    pub fn include_usage(&self) -> bool {
        self.stream_options.as_ref().and_then(|o| o.include_usage).unwrap_or(false)
    }

    pub fn max_tokens(&self) -> Option<u32> {
        self.max_completion_tokens.or(self.max_tokens)
    }

    /// The prompt's text: chat message contents joined, or the completion prompt.
    pub fn prompt_text(&self) -> String {
        let mut out = String::new();
        let mut push = |s: &str| {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(s);
        };
        if let Some(msgs) = &self.messages {
            for m in msgs {
                match m.get("content") {
                    Some(Value::String(s)) => push(s),
                    Some(Value::Array(parts)) => {
                        for p in parts {
                            if let Some(t) = p.get("text").and_then(Value::as_str) {
                                push(t);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        match &self.prompt {
            Some(Value::String(s)) => push(s),
            Some(Value::Array(a)) => {
                for p in a {
                    if let Some(s) = p.as_str() {
                        push(s);
                    }
                }
            }
            _ => {}
        }
        out
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

/// Renders streamed chunks for one response. The model name is JSON-escaped
/// once; everything else is built with plain writes because this runs for
/// every token of every stream.
pub struct ChunkWriter {
    route: Route,
    id: String,
    model_json: String,
    created: u64,
    seed: u64,
}

impl ChunkWriter {
    pub fn new(route: Route, request_id: u64, model: &str, created: u64) -> Self {
        let prefix = if route == Route::Chat { "chatcmpl" } else { "cmpl" };
        ChunkWriter {
            route,
            id: format!("{prefix}-{request_id:016x}"),
            model_json: serde_json::to_string(model).unwrap_or_else(|_| "\"model\"".into()),
            created,
            seed: request_id,
        }
    }

    fn head(&self, out: &mut String) {
        let object = if self.route == Route::Chat { "chat.completion.chunk" } else { "text_completion" };
        let _ = write!(
            out,
            "data: {{\"id\":\"{}\",\"object\":\"{object}\",\"created\":{},\"model\":{},\"choices\":",
            self.id, self.created, self.model_json
        );
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
        self.head(out);
        match self.route {
            Route::Chat => out.push_str("[{\"index\":0,\"delta\":{\"content\":\""),
            Route::Completions => out.push_str("[{\"index\":0,\"text\":\""),
        }
        for i in from..to {
            out.push(' ');
            out.push_str(word(self.seed, i));
        }
        match self.route {
            Route::Chat => out.push_str("\"},\"finish_reason\":null}]}\n\n"),
            Route::Completions => out.push_str("\",\"logprobs\":null,\"finish_reason\":null}]}\n\n"),
        }
    }

    /// What real servers send before the first token: a role-only chunk
    /// (`content: null`) and an empty delta, for chat; an empty text for completions.
    pub fn preamble(&self) -> Bytes {
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
        }
        Bytes::from(out)
    }

    /// The finish chunk, the usage chunk when asked, and `[DONE]`.
    pub fn close(&self, finish_reason: &str, usage: Option<Usage>) -> Bytes {
        let mut out = String::new();
        self.head(&mut out);
        match self.route {
            Route::Chat => {
                let _ = write!(out, "[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{finish_reason}\"}}]}}\n\n");
            }
            Route::Completions => {
                let _ = write!(
                    out,
                    "[{{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"{finish_reason}\"}}]}}\n\n"
                );
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

    /// A mid-stream error event, as vLLM sends one inside a 200 stream.
    pub fn error_event(&self, message: &str) -> Bytes {
        let body = json!({ "error": { "message": message, "type": "server_error", "code": 500 } });
        Bytes::from(format!("data: {body}\n\n"))
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
        };
        json!({
            "id": self.id,
            "object": if self.route == Route::Chat { "chat.completion" } else { "text_completion" },
            "created": self.created,
            "model": serde_json::from_str::<Value>(&self.model_json).unwrap_or(Value::Null),
            "choices": [choice],
            "usage": usage.json(),
        })
    }
}

/// An OpenAI-style error response.
pub fn error_response(status: StatusCode, message: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], error_body(status.as_u16(), message)).into_response()
}

/// The JSON body of an OpenAI-style error with HTTP status `status`.
pub fn error_body(status: u16, message: &str) -> String {
    json!({ "error": { "message": message, "type": "invalid_request_error", "code": status } }).to_string()
}

/// `/v1/models` for one served model.
pub fn models_body(model: &str) -> Value {
    json!({ "object": "list", "data": [{ "id": model, "object": "model", "created": 0, "owned_by": "goodput" }] })
}

/// Seconds since the Unix epoch, for `created` fields.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

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
