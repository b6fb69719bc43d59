//! TGI's `/generate_stream` (SSE, one event per token, the last with the
//! whole text and `details`; no `[DONE]`) and `/generate`.

use super::{
    decode, error_message, merge_object, one_prompt, BodyError, BodyOptions, ChunkInfo, PromptBody, ProtocolError,
    Usage,
};
use goodput_core::Channel;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// Fills `body`: `inputs`, and `parameters` with the length and `details`
/// (which brings the counts), with the `parameters` object of `--extra-body`
/// taken out of `extra` and added to it. The route says whether it streams,
/// and TGI serves one model: the body names none.
pub(super) fn fill_body(
    opts: &BodyOptions,
    prompt: &PromptBody,
    max_tokens: Option<u32>,
    body: &mut Map<String, Value>,
    extra: &mut Map<String, Value>,
) -> Result<(), BodyError> {
    body.remove("model");
    body.insert("inputs".into(), Value::String(one_prompt(opts.api, prompt)?));
    let mut parameters = Map::new();
    parameters.insert("details".into(), json!(true));
    if let Some(n) = max_tokens {
        parameters.insert("max_new_tokens".into(), json!(n));
    }
    merge_object(&mut parameters, extra, "parameters");
    body.insert("parameters".into(), Value::Object(parameters));
    Ok(())
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
pub fn parse_tgi(data: &str) -> Result<ChunkInfo, ProtocolError> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
