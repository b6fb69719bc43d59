//! Ollama's `/api/chat` and `/api/generate`: newline-delimited JSON, one
//! object per line, the last with `"done": true` and the counts.

use super::{
    decode, error_message, merge_object, one_prompt, role_messages, Api, BodyError, BodyOptions, ChunkInfo, PromptBody,
    ProtocolError, Usage,
};
use goodput_core::Channel;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// Fills `body` (which holds `model`): messages or a prompt, and the length
/// limit in `options`, where Ollama keeps it, with the `options` object of
/// `--extra-body` taken out of `extra` and added to it.
pub(super) fn fill_body(
    opts: &BodyOptions,
    prompt: &PromptBody,
    max_tokens: Option<u32>,
    body: &mut Map<String, Value>,
    extra: &mut Map<String, Value>,
) -> Result<(), BodyError> {
    if opts.api == Api::OllamaChat {
        body.insert("messages".into(), Value::Array(role_messages(prompt)));
    } else {
        body.insert("prompt".into(), Value::String(one_prompt(opts.api, prompt)?));
    }
    body.insert("stream".into(), json!(opts.stream));
    let mut options = Map::new();
    if let Some(n) = max_tokens {
        options.insert("num_predict".into(), json!(n));
    }
    merge_object(&mut options, extra, "options");
    if !options.is_empty() {
        body.insert("options".into(), Value::Object(options));
    }
    Ok(())
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
pub fn parse_ollama(data: &str) -> Result<ChunkInfo, ProtocolError> {
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

#[cfg(test)]
mod tests {
    use super::super::test_body as body;
    use super::*;

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
        let m = PromptBody::Messages(vec![serde_json::json!({"role": "user", "content": "U"})]);
        let b: Value = serde_json::from_slice(&crate::protocol::build_body(&opts, &m, None).unwrap()).unwrap();
        assert_eq!(b["prompt"], "U");
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
}
