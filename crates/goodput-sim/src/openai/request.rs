//! Request bodies: the fields the simulator honours, parsed per route.

use super::fields::{Content, Messages, Prompt};
use super::route::Route;
use crate::template::{ChatTemplate, Message};
use crate::tokens::{count_tokens, token_ids};
use serde::Deserialize;

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
    /// The output limit is 0, named as the request named it (`max_tokens`,
    /// `max_completion_tokens`, `options.num_predict`,
    /// `parameters.max_new_tokens`, `n_predict`). llama.cpp answers an
    /// `n_predict` of 0 with an empty completion; the simulator refuses it
    /// as vLLM refuses `max_tokens` 0, for the simulated model always
    /// generates.
    #[error("{0} is 0; ask for at least one token")]
    NoTokens(&'static str),
    /// A message, prompt or system prompt of the wrong shape, and where:
    /// `messages[2].role is "wizard": …`, `prompt[0] is -1: …`.
    #[error("{0}")]
    Shape(String),
    #[error("temperature is {0}: it must be a number of 0 or more")]
    Temperature(f64),
    /// vLLM's `SamplingParams` refuses it so.
    #[error("min_tokens must be less than or equal to {field}={max}, got {min}: lower min_tokens, or raise {field}")]
    MinAboveMax { min: u32, max: u32, field: &'static str },
    /// More messages than the server's context can hold: every message a
    /// chat template renders takes a token of it at least (its role header),
    /// so the list is refused before it is parsed or rendered.
    #[error(
        "the request carries {count} messages, more than {within}: a chat template gives every message one token \
         at least; send fewer messages"
    )]
    TooManyMessages {
        count: u64,
        /// What the limit is, read after "more than" (e.g. "Llama-3.1-8B's
        /// context of 131072 tokens holds").
        within: String,
    },
}

/// The length of a body's `"messages"` list, counted as it is read past:
/// nothing of it is kept.
struct MessageCount {
    messages: u64,
}

impl<'de> Deserialize<'de> for MessageCount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Elements;
        impl<'de> serde::de::Visitor<'de> for Elements {
            type Value = u64;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of messages")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
                let mut n = 0;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(n)
            }
        }
        struct Count(u64);
        impl<'de> Deserialize<'de> for Count {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_seq(Elements).map(Count)
            }
        }
        #[derive(Deserialize)]
        struct Body {
            #[serde(default)]
            messages: Option<Count>,
        }
        Ok(MessageCount { messages: Body::deserialize(d)?.messages.map_or(0, |c| c.0) })
    }
}

/// The fields of a completion request that the simulator honours.
#[derive(Debug, Clone, Deserialize)]
pub struct GenerationRequest {
    #[serde(default)]
    pub model: Option<String>,
    /// Read straight into roles and texts (see [`super::fields`]).
    #[serde(default)]
    pub messages: Option<Messages>,
    /// Text, or token ids kept as `u32`s.
    #[serde(default)]
    pub prompt: Option<Prompt>,
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
    pub system: Option<Content>,
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
    /// OpenAI's choices a request: one is all the simulator answers. A
    /// whole number written as a float (`1.0`) is taken, as vLLM's pydantic
    /// model takes it (it had been refused, every request of a run failing).
    #[serde(default, deserialize_with = "whole_number")]
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
        // A body that is not an object (serde reads a struct from an array
        // too: `[]` had been refused as having no messages).
        let first = body.iter().find(|b| !b.is_ascii_whitespace());
        if let Some(&b) = first.filter(|&&b| b != b'{') {
            let what = match b {
                b'[' => "an array",
                b'"' => "a string",
                b'-' | b'0'..=b'9' => "a number",
                _ => "not an object",
            };
            return Err(RequestError::Shape(format!(
                "the request body is {what}: it must be a JSON object, e.g. {{\"model\": …, \"messages\": […]}}"
            )));
        }
        let mut req: GenerationRequest = serde_json::from_slice(body).map_err(RequestError::Json)?;
        req.route = Some(route);
        let chat = matches!(route, Route::Chat | Route::Messages | Route::OllamaChat);
        let prompted = matches!(route, Route::Completions | Route::OllamaGenerate | Route::LlamaCpp);
        let several =
            req.prompt.as_ref().and_then(|p| p.list).filter(|k| k.len > 1 && (k.strings == k.len || k.lists == k.len));
        match route {
            _ if chat && req.messages.as_ref().is_none_or(|m| m.list.is_empty() && m.bad.is_none()) => {
                Err(RequestError::NoMessages)
            }
            _ if prompted && req.prompt.is_none() => Err(RequestError::NoPrompt),
            Route::TgiGenerate | Route::TgiGenerateStream if req.inputs.is_none() => Err(RequestError::NoInputs),
            _ if chat && req.messages.as_ref().is_some_and(|m| m.bad.is_some()) => {
                Err(RequestError::Shape(req.messages.and_then(|m| m.bad).unwrap_or_default()))
            }
            _ if prompted && req.prompt.as_ref().is_some_and(|p| p.bad.is_some()) => {
                let bad = req.prompt.and_then(|p| p.bad).unwrap_or_default();
                Err(RequestError::Shape(format!("prompt{bad}")))
            }
            Route::Messages | Route::OllamaChat | Route::OllamaGenerate
                if req.system.as_ref().is_some_and(|s| s.bad.is_some()) =>
            {
                let bad = req.system.and_then(|s| s.bad).unwrap_or_default();
                Err(RequestError::Shape(format!("system{bad}")))
            }
            Route::Messages if req.max_tokens.is_none() => Err(RequestError::NoMaxTokens),
            Route::Chat | Route::Completions if req.n == Some(0) => Err(RequestError::NoChoices),
            _ if req.max_tokens() == Some(0) => Err(RequestError::NoTokens(req.max_tokens_field())),
            Route::Chat | Route::Completions
                if req.min_tokens.zip(req.max_tokens()).is_some_and(|(min, max)| min > max) =>
            {
                let (min, max) = req.min_tokens.zip(req.max_tokens()).unwrap_or_default();
                Err(RequestError::MinAboveMax { min, max, field: req.max_tokens_field() })
            }
            Route::Chat | Route::Completions | Route::Messages
                if req.temperature.is_some_and(|t| !(t >= 0.0 && t.is_finite())) =>
            {
                Err(RequestError::Temperature(req.temperature.unwrap_or_default()))
            }
            Route::Chat | Route::Completions if req.n.is_some_and(|n| n > 1) => {
                Err(RequestError::SeveralChoices(req.n.unwrap_or_default()))
            }
            // A list of strings, or of lists of token ids, is several
            // prompts; a list of token ids is one.
            Route::Completions if several.is_some() => {
                Err(RequestError::SeveralPrompts(several.map_or(0, |k| k.len) as usize))
            }
            _ => Ok(req),
        }
    }

    /// The name of the field that set [`Self::max_tokens`], as the request
    /// wrote it.
    fn max_tokens_field(&self) -> &'static str {
        match self.route {
            Some(r) if r.ollama() => "options.num_predict",
            Some(r) if r.tgi() => "parameters.max_new_tokens",
            Some(Route::LlamaCpp) => "n_predict",
            _ if self.max_completion_tokens.is_some() => "max_completion_tokens",
            _ => "max_tokens",
        }
    }

    /// The number of messages `body` carries, where it is more than `limit`:
    /// counted before the body is parsed, so that a list of millions of
    /// empty messages (a 55 MB body of them took 1.5 GB parsed, and more
    /// rendered) is refused for what it is before it costs anything. A body
    /// under two bytes a message past `limit` (a message takes one byte and
    /// a comma at least) cannot hold more and is not read; one that is not
    /// JSON counts none, and [`Self::parse`] says what is wrong with it.
    fn messages_over(body: &[u8], limit: u64) -> Option<u64> {
        if (body.len() as u64) < limit.saturating_mul(2) {
            return None;
        }
        let count = serde_json::from_slice::<MessageCount>(body).map_or(0, |c| c.messages);
        (count > limit).then_some(count)
    }

    /// That `body` carries at most `limit` messages, counted before it is
    /// parsed ([`Self::messages_over`]); else the error both servers answer
    /// with, `within` saying what the limit is (read after "more than").
    pub fn check_messages(body: &[u8], limit: u64, within: impl FnOnce() -> String) -> Result<(), RequestError> {
        match Self::messages_over(body, limit) {
            Some(count) => Err(RequestError::TooManyMessages { count, within: within() }),
            None => Ok(()),
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
            Some(r) if r.ollama() => native_limit(self.options.as_ref().and_then(|o| o.num_predict)?),
            Some(r) if r.tgi() => self.parameters.as_ref().and_then(|p| p.max_new_tokens),
            Some(Route::LlamaCpp) => native_limit(self.n_predict?),
            _ => self.max_completion_tokens.or(self.max_tokens),
        }
    }

    /// The prompt's text: chat message contents joined, or the completion prompt.
    pub fn prompt_text(&self) -> String {
        let mut parts: Vec<&str> = Vec::new();
        parts.extend(self.system.as_ref().map(|s| s.text.as_str()));
        parts.extend(self.messages.iter().flat_map(|m| &m.list).map(|m| m.content.text.as_str()));
        parts.extend(self.inputs.as_deref());
        let prompt = self.prompt.as_ref().map(Prompt::text).unwrap_or_default();
        parts.push(&prompt);
        parts.retain(|p| !p.is_empty());
        parts.join(" ")
    }

    /// The tokens of [`Self::prompt_text`], counted without building it:
    /// the prompt's own tokens, before any chat template's. A prompt whose
    /// words alone pass a model's context is refused on this count, before
    /// its ids are built.
    pub fn prompt_words(&self) -> u64 {
        let system = self.system.as_ref().map_or(0, |s| count_tokens(&s.text));
        let messages: u64 = self.messages.iter().flat_map(|m| &m.list).map(|m| count_tokens(&m.content.text)).sum();
        let inputs = self.inputs.as_deref().map_or(0, count_tokens);
        let prompt = self.prompt.as_ref().map_or(0, Prompt::tokens);
        system + messages + inputs + prompt
    }

    /// The prompt's token ids as a server whose model has chat template `t`
    /// counts and prefills them: a chat's messages (with Messages' or
    /// Ollama's `system`, and Ollama's generate prompt unless `raw`) rendered
    /// by the template; a raw prompt after the tokenizer's BOS; a prompt of
    /// token ids as it is, one token an id (vLLM and llama.cpp add no BOS to
    /// ids, and llama.cpp adds its BOS to a list that opens with a string
    /// only).
    pub fn prompt_ids(&self, t: ChatTemplate) -> Vec<u32> {
        let generate = self.route == Some(Route::OllamaGenerate) && self.raw != Some(true);
        if !generate && !matches!(self.route, Some(Route::Chat | Route::Messages | Route::OllamaChat)) {
            let ids_first = self.prompt.as_ref().is_some_and(Prompt::opens_with_ids);
            let mut ids = if ids_first { Vec::new() } else { t.raw("") };
            if let Some(s) = &self.system {
                ids.extend(token_ids(&s.text));
            }
            for m in self.messages.iter().flat_map(|m| &m.list) {
                ids.extend(token_ids(&m.content.text));
            }
            ids.extend(self.inputs.as_deref().map(token_ids).unwrap_or_default());
            if let Some(p) = &self.prompt {
                p.extend_ids(&mut ids);
            }
            return ids;
        }
        let generated = if generate { self.prompt.as_ref().map(Prompt::text) } else { None };
        let mut messages: Vec<Message> = Vec::new();
        if let Some(s) = &self.system {
            messages.push(Message { role: "system", content: &s.text });
        }
        for m in self.messages.iter().flat_map(|m| &m.list) {
            messages.push(Message { role: &m.role, content: &m.content.text });
        }
        if let Some(p) = &generated {
            messages.push(Message { role: "user", content: p });
        }
        t.render(&messages)
    }
}

/// A count that may be written as a float of no fraction (`1.0`).
fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    use serde::de::Error;
    match Option::<serde_json::Number>::deserialize(d)? {
        None => Ok(None),
        Some(n) => match (n.as_u64(), n.as_f64()) {
            (Some(v), _) => Ok(Some(v)),
            (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => Ok(Some(f as u64)),
            _ => Err(D::Error::custom(format!("invalid value {n}: expected a whole number of 0 or more"))),
        },
    }
}

/// Ollama's `num_predict` and llama.cpp's `n_predict`: a negative one (-1,
/// "until the context ends") is no limit of the request's own; one past
/// what a u32 holds is `u32::MAX`, which the context check refuses (1e12
/// had fallen back to the default of 128 in silence).
fn native_limit(n: i64) -> Option<u32> {
    (n >= 0).then(|| u32::try_from(n).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn ids(n: usize, id: u64) -> Value {
        Value::Array(vec![Value::from(id); n])
    }

    fn parse(route: Route, body: Value) -> GenerationRequest {
        GenerationRequest::parse(route, body.to_string().as_bytes()).unwrap()
    }

    /// A prompt of token ids is as many tokens as it has ids, as vLLM counts
    /// them, on both routes that take them: 3,000 ids were 1 token (the
    /// empty text of a list of no strings, with BOS), so usage, TTFT and the
    /// context check all read one token.
    #[test]
    fn a_prompt_of_token_ids_is_one_token_an_id() {
        for route in [Route::Completions, Route::LlamaCpp] {
            let r = parse(route, serde_json::json!({ "prompt": ids(3_000, 5) }));
            assert_eq!(crate::tokens::count_tokens(&r.prompt_text()), 3_000, "{route:?}");
            for t in ChatTemplate::ALL {
                assert_eq!(r.prompt_ids(t).len(), 3_000, "{route:?}, {t}: no BOS is added to ids");
            }
            // One list of a list of ids is one prompt too.
            let r = parse(route, serde_json::json!({ "prompt": [ids(3_000, 5)] }));
            assert_eq!(r.prompt_ids(ChatTemplate::Llama3).len(), 3_000, "{route:?}");
            // 200,000 ids are 200,000 tokens, past Llama 3.1's 131,072.
            let r = parse(route, serde_json::json!({ "prompt": ids(200_000, 7) }));
            assert_eq!(r.prompt_ids(ChatTemplate::Llama3).len(), 200_000, "{route:?}");
        }
        // Equal ids are equal tokens, and other ids other tokens: a prefix
        // the cache shares is one the prompts share.
        let tokens =
            |v: Value| parse(Route::Completions, serde_json::json!({ "prompt": v })).prompt_ids(ChatTemplate::None);
        assert_eq!(tokens(serde_json::json!([1, 2, 3])), tokens(serde_json::json!([1, 2, 3])));
        assert_ne!(tokens(serde_json::json!([1, 2, 3]))[2], tokens(serde_json::json!([1, 2, 4]))[2]);
        // llama.cpp mixes ids and text in one list; a string first takes the BOS.
        let r = parse(Route::LlamaCpp, serde_json::json!({ "prompt": [12, "a b", 34] }));
        assert_eq!(r.prompt_ids(ChatTemplate::Llama3).len(), 4);
        let r = parse(Route::LlamaCpp, serde_json::json!({ "prompt": ["a b", 34] }));
        assert_eq!(r.prompt_ids(ChatTemplate::Llama3).len(), 4);
        // A string is still read as words after the BOS.
        let r = parse(Route::Completions, serde_json::json!({ "prompt": "one two three" }));
        assert_eq!(r.prompt_ids(ChatTemplate::Llama3).len(), 4);
    }

    /// A native limit past a u32 is refused by the context check, not
    /// taken as none; -1 is none.
    #[test]
    fn native_token_limits_past_a_u32_are_not_dropped() {
        let body =
            serde_json::json!({ "model": "m", "prompt": "a", "options": { "num_predict": 1_000_000_000_000i64 } });
        assert_eq!(parse(Route::OllamaGenerate, body).max_tokens(), Some(u32::MAX));
        let body = serde_json::json!({ "model": "m", "prompt": "a", "options": { "num_predict": -1 } });
        assert_eq!(parse(Route::OllamaGenerate, body).max_tokens(), None);
        let body = serde_json::json!({ "prompt": "a", "n_predict": 4_294_967_296i64 });
        assert_eq!(parse(Route::LlamaCpp, body).max_tokens(), Some(u32::MAX));
    }

    #[test]
    fn several_prompts_of_ids_are_refused_as_several_prompts_of_text_are() {
        let body = serde_json::json!({ "prompt": [[1, 2], [3]] }).to_string();
        let e = GenerationRequest::parse(Route::Completions, body.as_bytes()).unwrap_err();
        assert!(matches!(e, RequestError::SeveralPrompts(2)), "{e}");
    }

    /// The messages are counted before the body is parsed, and only where
    /// the body is long enough to hold more than the limit.
    #[test]
    fn messages_past_a_limit_are_counted_before_parsing() {
        let chat = |n: usize| {
            serde_json::json!({ "model": "m", "messages": vec![serde_json::json!({"role": "user", "content": ""}); n] })
                .to_string()
        };
        assert_eq!(GenerationRequest::messages_over(chat(100).as_bytes(), 10), Some(100));
        assert_eq!(GenerationRequest::messages_over(chat(100).as_bytes(), 100), None);
        assert_eq!(GenerationRequest::messages_over(chat(101).as_bytes(), 100), Some(101));
        // The smallest messages: one byte and a comma each.
        let tiny = format!(r#"{{"messages":[{}]}}"#, ["1"; 11].join(","));
        assert_eq!(GenerationRequest::messages_over(tiny.as_bytes(), 10), Some(11));
        // No list, or no JSON: nothing to count (parse says what is wrong).
        assert_eq!(GenerationRequest::messages_over(&[b' '; 100], 10), None);
        assert_eq!(
            GenerationRequest::messages_over(format!(r#"{{"prompt":"{}"}}"#, "a ".repeat(50)).as_bytes(), 10),
            None
        );
        let body = chat(101);
        assert!(GenerationRequest::check_messages(body.as_bytes(), 101, || unreachable!()).is_ok());
        let e = GenerationRequest::check_messages(body.as_bytes(), 100, || "m's context of 100 tokens holds".into())
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the request carries 101 messages, more than m's context of 100 tokens holds: a chat template gives \
             every message one token at least; send fewer messages"
        );
        let e = RequestError::TooManyMessages { count: 200_000, within: "m's context of 131072 tokens holds".into() };
        assert_eq!(
            e.to_string(),
            "the request carries 200000 messages, more than m's context of 131072 tokens holds: a chat template gives \
             every message one token at least; send fewer messages"
        );
    }
}
