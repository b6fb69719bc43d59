//! Streamed chunks and whole-response JSON for one response, in its
//! route's protocol.

use super::route::Route;
use super::usage::Usage;
use crate::tokens::{token_id, word};
use bytes::Bytes;
use serde_json::{json, Value};
use std::fmt::Write;

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
    /// A scripted answer (`--answers`), in place of the simulator's words.
    script: Option<crate::answers::Script>,
    /// Usage on every token chunk (vLLM's `continuous_usage_stats`).
    continuous_usage: bool,
    /// The answer ended on its own (a scripted answer's last word before
    /// `max_tokens`): its finish reason is `stop`, not `length`.
    ended: bool,
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
            script: None,
            continuous_usage: false,
            ended: false,
        }
    }

    /// Whether the answer ends on its own (`stop`, in each API's words) rather
    /// than at `max_tokens` (`length`).
    pub fn ending_on_its_own(self, ended: bool) -> Self {
        ChunkWriter { ended, ..self }
    }

    /// The answer's finish reason, in OpenAI's words (each route says it in
    /// its own: Messages `end_turn`/`max_tokens`, TGI `eos_token`/`length`,
    /// llama.cpp `eos`/`limit`, Ollama `stop`/`length`).
    pub fn finish_reason(&self) -> &'static str {
        if self.ended {
            "stop"
        } else {
            "length"
        }
    }

    /// Answers with `script`'s words where it holds them.
    pub fn with_script(self, script: Option<crate::answers::Script>) -> Self {
        ChunkWriter { script, ..self }
    }

    /// Token `i`'s word, raw and as JSON string content.
    fn word_at(&self, i: u64) -> (&str, &str) {
        match self.script.as_ref().and_then(|s| s.word(i)) {
            Some(w) => w,
            None => {
                let w = word(self.seed, i);
                (w, w)
            }
        }
    }

    /// The response's prompt and output lengths, which TGI's and
    /// llama.cpp's events carry.
    pub fn with_lengths(self, prompt_tokens: u64, n_out: u64) -> Self {
        ChunkWriter { prompt_tokens, n_out, ..self }
    }

    /// Usage on every token chunk, counting the output so far (the lengths
    /// come from [`with_lengths`](Self::with_lengths)).
    pub fn with_continuous_usage(self, continuous_usage: bool) -> Self {
        ChunkWriter { continuous_usage, ..self }
    }

    /// `,"usage":{…}` with the output's first `to` tokens, when every chunk
    /// carries it.
    fn running_usage(&self, to: u64, out: &mut String) {
        if self.continuous_usage {
            let p = self.prompt_tokens;
            let _ = write!(
                out,
                ",\"usage\":{{\"prompt_tokens\":{p},\"total_tokens\":{},\"completion_tokens\":{to}}}",
                p + to
            );
        }
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
            s.push_str(self.word_at(i).0);
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
                let id = token_id(self.word_at(from).0);
                let _ = write!(out, "data:{{\"index\":{},\"token\":{{\"id\":{id},\"text\":\"", from + 1);
            }
            Route::LlamaCpp => out.push_str("data: {\"index\":0,\"content\":\""),
        }
        for i in from..to {
            out.push(' ');
            out.push_str(self.word_at(i).1);
        }
        match self.route {
            Route::Chat => {
                out.push_str("\"},\"finish_reason\":null}]");
                self.running_usage(to, out);
                out.push_str("}\n\n");
            }
            Route::Completions => {
                out.push_str("\",\"logprobs\":null,\"finish_reason\":null}]");
                self.running_usage(to, out);
                out.push_str("}\n\n");
            }
            Route::Messages => out.push_str("\"}}\n\n"),
            Route::OllamaChat => out.push_str("\"},\"done\":false}\n"),
            Route::OllamaGenerate => out.push_str("\",\"done\":false}\n"),
            // The last token's event is TGI's close: the whole text and the details.
            Route::TgiGenerate | Route::TgiGenerateStream if to >= self.n_out => {
                let text = serde_json::to_string(&self.text(0, self.n_out)).unwrap_or_default();
                let _ = write!(
                    out,
                    "\",\"logprob\":0.0,\"special\":false}},\"generated_text\":{text},\"details\":\
                     {{\"finish_reason\":\"{}\",\"generated_tokens\":{},\"seed\":null,\"input_length\":{}}}}}\n\n",
                    tgi_finish_reason(self.finish_reason()),
                    self.n_out,
                    self.prompt_tokens
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
            // With continuous usage, every chunk carries it, as vLLM's do.
            Route::Chat => {
                self.head(&mut out);
                out.push_str(
                    "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null},\"finish_reason\":null}]",
                );
                self.running_usage(0, &mut out);
                out.push_str("}\n\n");
                self.head(&mut out);
                out.push_str("[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":null}]");
                self.running_usage(0, &mut out);
                out.push_str("}\n\n");
            }
            Route::Completions => {
                self.head(&mut out);
                out.push_str("[{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":null}]");
                self.running_usage(0, &mut out);
                out.push_str("}\n\n");
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
                let _ = write!(out, "[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{finish_reason}\"}}]");
                self.running_usage(usage.map_or(self.n_out, |u| u.completion), &mut out);
                out.push_str("}\n\n");
            }
            Route::Completions => {
                self.head(&mut out);
                let _ = write!(
                    out,
                    "[{{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"{finish_reason}\"}}]"
                );
                self.running_usage(usage.map_or(self.n_out, |u| u.completion), &mut out);
                out.push_str("}\n\n");
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
                        "finish_reason": tgi_finish_reason(finish_reason), "generated_tokens": usage.completion,
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

/// TGI's name for an OpenAI finish reason.
fn tgi_finish_reason(finish_reason: &str) -> &str {
    match finish_reason {
        "stop" => "eos_token",
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
pub(super) fn rfc3339(unix_s: u64) -> String {
    // A clock past the year 9999 (which `time` does not hold) says the epoch.
    let t = i64::try_from(unix_s)
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}
