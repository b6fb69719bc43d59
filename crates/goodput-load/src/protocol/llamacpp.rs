//! llama.cpp's native `/completion`: SSE, one event per piece of text, the
//! last with `"stop": true` and the counts.

use super::{
    decode, error_message, one_prompt, BodyError, BodyOptions, ChunkInfo, PromptBody, PromptTokensDetails,
    ProtocolError, Usage,
};
use goodput_core::Channel;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// Fills `body` (which holds `model`): the prompt, `n_predict` and, asked
/// for, `ignore_eos`.
pub(super) fn fill_body(
    opts: &BodyOptions,
    prompt: &PromptBody,
    max_tokens: Option<u32>,
    body: &mut Map<String, Value>,
) -> Result<(), BodyError> {
    body.insert("prompt".into(), Value::String(one_prompt(opts.api, prompt)?));
    if let Some(n) = max_tokens {
        body.insert("n_predict".into(), json!(n));
    }
    if opts.ignore_eos {
        body.insert("ignore_eos".into(), json!(true));
    }
    body.insert("stream".into(), json!(opts.stream));
    Ok(())
}

#[derive(Deserialize)]
struct LlamaCppEvent<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default)]
    stop: bool,
    #[serde(default, borrow)]
    stop_type: Option<Cow<'a, str>>,
    /// Builds before `stop_type` said why with three flags.
    #[serde(default)]
    stopped_limit: bool,
    #[serde(default)]
    stopped_eos: bool,
    #[serde(default)]
    stopped_word: bool,
    #[serde(default)]
    tokens_predicted: Option<u64>,
    #[serde(default)]
    tokens_evaluated: Option<u64>,
    #[serde(default)]
    timings: Option<LlamaCppTimings>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct LlamaCppTimings {
    /// Prompt tokens reused from the slot's cache.
    #[serde(default)]
    cache_n: Option<u64>,
}

/// Parses one llama.cpp `/completion` event, or a whole response (the same
/// object with `"stop": true`). The finish reason is llama.cpp's
/// `stop_type` (`limit`, `eos`, `word`).
pub fn parse_llamacpp(data: &str) -> Result<ChunkInfo, ProtocolError> {
    let ev: LlamaCppEvent = decode(data)?;
    let mut info = ChunkInfo::default();
    if let Some(e) = ev.error {
        info.error = Some(error_message(&e));
        return Ok(info);
    }
    info.push(Channel::Content, ev.content.as_deref().unwrap_or(""));
    // Every event of a current build carries the running `tokens_predicted`,
    // so each chunk's token count is exact: a token that ends inside a UTF-8
    // character is held back and its text comes with the next one, whose
    // count then rises by 2. The closing event carries the whole request's.
    if ev.stop || ev.tokens_predicted.is_some() || ev.tokens_evaluated.is_some() {
        info.usage = Some(Usage {
            prompt_tokens: ev.tokens_evaluated,
            completion_tokens: ev.tokens_predicted,
            prompt_tokens_details: ev
                .timings
                .and_then(|t| t.cache_n)
                .map(|c| PromptTokensDetails { cached_tokens: Some(c) }),
        });
    }
    if ev.stop {
        info.done = true;
        let flagged = [(ev.stopped_limit, "limit"), (ev.stopped_eos, "eos"), (ev.stopped_word, "word")]
            .into_iter()
            .find_map(|(set, name)| set.then_some(name));
        info.finish_reason =
            Some(ev.stop_type.map(Cow::into_owned).unwrap_or_else(|| flagged.unwrap_or("stop").to_owned()));
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llamacpp_events() {
        let piece = parse_llamacpp(r#"{"index":0,"content":" Hello","tokens":[],"stop":false,"id_slot":0,"tokens_predicted":1,"tokens_evaluated":7}"#).unwrap();
        let running = Usage { prompt_tokens: Some(7), completion_tokens: Some(1), prompt_tokens_details: None };
        assert_eq!(
            (piece.channel, piece.text.as_str(), piece.done, piece.usage),
            (Some(Channel::Content), " Hello", false, Some(running)),
            "each event's running count"
        );
        let bare = parse_llamacpp(r#"{"content":" Hello","stop":false}"#).unwrap();
        assert_eq!(bare.usage, None, "older builds' events carry no counts");
        let last = parse_llamacpp(r#"{"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,"model":"m","tokens_predicted":24,"tokens_evaluated":15,"stop_type":"limit","stopping_word":"","tokens_cached":38,"timings":{"cache_n":8,"prompt_n":7,"predicted_n":24}}"#).unwrap();
        assert_eq!((last.channel, last.done, last.finish_reason.as_deref()), (None, true, Some("limit")));
        let u = last.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.prompt_tokens_details.unwrap().cached_tokens),
            (Some(15), Some(24), Some(8))
        );
        let older = parse_llamacpp(
            r#"{"content":"","stop":true,"tokens_predicted":5,"tokens_evaluated":9,"stopped_eos":false,"stopped_word":false,"stopped_limit":true}"#,
        )
        .unwrap();
        assert_eq!(older.finish_reason.as_deref(), Some("limit"), "builds before stop_type");
        let err =
            parse_llamacpp(r#"{"error":{"code":500,"message":"context shift is disabled","type":"server_error"}}"#)
                .unwrap();
        assert_eq!(err.error.as_deref(), Some("context shift is disabled"));
    }
}
