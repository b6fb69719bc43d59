//! Request bodies: the fields the simulator honours, parsed per route.

use super::route::Route;
use crate::template::{ChatTemplate, Message};
use serde::Deserialize;
use serde_json::Value;

/// Why a request body is refused (with a 400): each message is the one the
/// server the route copies would give.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("invalid JSON body: {0}")]
    Json(serde_json::Error),
    #[error("\"messages\" is required and must not be empty")]
    NoMessages,
    #[error("\"prompt\" is required")]
    NoPrompt,
    /// TGI's own words.
    #[error("Failed to deserialize the JSON body into the target type: missing field `inputs`")]
    NoInputs,
    /// Anthropic's own words.
    #[error("max_tokens: Field required")]
    NoMaxTokens,
    #[error(
        "n is {0}: this simulated server answers one choice a request (a real one would generate {0} answers to \
         the prompt); send {0} requests, or leave n out"
    )]
    SeveralChoices(u64),
    #[error(
        "\"prompt\" is a list of {0} prompts: this simulated server answers one prompt a request (a real one would \
         answer each); send one request a prompt"
    )]
    SeveralPrompts(usize),
    #[error("n is 0: ask for at least one choice, or leave n out")]
    NoChoices,
    #[error("max_tokens is 0; ask for at least one token")]
    NoTokens,
    #[error("temperature is {0}: it must be a number of 0 or more")]
    Temperature(f64),
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
    /// OpenAI's choices a request: one is all the simulator answers.
    #[serde(default)]
    pub n: Option<u64>,
    /// Checked as a real server checks it (a negative one is refused); the
    /// simulated text does not depend on it.
    #[serde(default)]
    pub temperature: Option<f64>,
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
    /// vLLM's extension: usage on every chunk, so that a client knows each
    /// chunk's tokens.
    #[serde(default)]
    pub continuous_usage_stats: Option<bool>,
}

impl GenerationRequest {
    /// Parses and checks a body for `route`; the error's message is the
    /// message of a 400.
    pub fn parse(route: Route, body: &[u8]) -> Result<Self, RequestError> {
        let mut req: GenerationRequest = serde_json::from_slice(body).map_err(RequestError::Json)?;
        req.route = Some(route);
        match route {
            Route::Chat | Route::Messages | Route::OllamaChat if req.messages.as_ref().is_none_or(|m| m.is_empty()) => {
                Err(RequestError::NoMessages)
            }
            Route::Completions | Route::OllamaGenerate | Route::LlamaCpp if req.prompt.is_none() => {
                Err(RequestError::NoPrompt)
            }
            Route::TgiGenerate | Route::TgiGenerateStream if req.inputs.is_none() => Err(RequestError::NoInputs),
            Route::Messages if req.max_tokens.is_none() => Err(RequestError::NoMaxTokens),
            Route::Chat | Route::Completions if req.n == Some(0) => Err(RequestError::NoChoices),
            Route::Chat | Route::Completions | Route::Messages if req.max_tokens() == Some(0) => {
                Err(RequestError::NoTokens)
            }
            Route::Chat | Route::Completions | Route::Messages
                if req.temperature.is_some_and(|t| !(t >= 0.0 && t.is_finite())) =>
            {
                Err(RequestError::Temperature(req.temperature.unwrap_or_default()))
            }
            Route::Chat | Route::Completions if req.n.is_some_and(|n| n > 1) => {
                Err(RequestError::SeveralChoices(req.n.unwrap_or_default()))
            }
            Route::Completions => match &req.prompt {
                // A list of strings is several prompts; a list of token ids is one.
                Some(Value::Array(a)) if a.len() > 1 && a.iter().all(Value::is_string) => {
                    Err(RequestError::SeveralPrompts(a.len()))
                }
                _ => Ok(req),
            },
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

    /// Usage on every token chunk (vLLM's `continuous_usage_stats`), on
    /// OpenAI's routes with `include_usage`.
    pub fn continuous_usage(&self) -> bool {
        matches!(self.route, Some(Route::Chat | Route::Completions) | None)
            && self.include_usage()
            && self.stream_options.as_ref().and_then(|o| o.continuous_usage_stats).unwrap_or(false)
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
