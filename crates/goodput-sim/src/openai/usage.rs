//! A response's token counts and the shapes its `usage` block takes.

use serde_json::{json, Value};
use std::fmt::Write;

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
    pub(super) fn write(&self, out: &mut String) {
        let (p, c) = (self.prompt, self.completion);
        let _ = write!(out, "{{\"prompt_tokens\":{p},\"completion_tokens\":{c},\"total_tokens\":{}", p + c);
        if let Some(cached) = self.cached {
            let _ = write!(out, ",\"prompt_tokens_details\":{{\"cached_tokens\":{cached}}}");
        }
        out.push('}');
    }

    /// Messages' usage block: `input_tokens` excludes what the prefix cache
    /// served, which is `cache_read_input_tokens`.
    pub(super) fn messages_json(&self, output_tokens: u64) -> Value {
        let cached = self.cached.unwrap_or(0);
        let mut u = json!({ "input_tokens": self.prompt.saturating_sub(cached), "output_tokens": output_tokens });
        if self.cached.is_some() {
            u["cache_read_input_tokens"] = json!(cached);
        }
        u
    }

    /// llama.cpp's `timings`: the prompt tokens reused from the cache and
    /// those evaluated.
    pub(super) fn llamacpp_timings(&self) -> Value {
        let cached = self.cached.unwrap_or(0);
        json!({ "cache_n": cached, "prompt_n": self.prompt.saturating_sub(cached), "predicted_n": self.completion })
    }

    pub(super) fn json(&self) -> Value {
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
