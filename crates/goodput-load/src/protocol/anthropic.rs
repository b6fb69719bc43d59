//! Anthropic Messages (`/v1/messages`): SSE whose events are typed
//! (`message_start`, `content_block_delta`, `message_delta`, `message_stop`,
//! `ping`, `error`), served by Anthropic and by vLLM and SGLang beside their
//! OpenAI routes.

use super::{
    decode, error_message, role_messages, BodyOptions, ChunkInfo, PromptBody, PromptTokensDetails, ProtocolError, Usage,
};
use goodput_core::Channel;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// The `anthropic-version` header every Messages request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Messages requires `max_tokens`: what is sent when the workload sets no
/// output length (a dataset entry without one).
pub const MESSAGES_DEFAULT_MAX_TOKENS: u32 = 4096;

/// Fills `body` (which holds `model`): the messages, a top-level system
/// prompt, and `max_tokens`, which Messages requires.
pub(super) fn fill_body(
    opts: &BodyOptions,
    prompt: &PromptBody,
    max_tokens: Option<u32>,
    body: &mut Map<String, Value>,
) {
    let (system, messages) = match prompt {
        PromptBody::Messages(m) => split_system(m),
        other => (None, role_messages(other)),
    };
    if let Some(s) = system {
        body.insert("system".into(), Value::String(s));
    }
    body.insert("messages".into(), Value::Array(messages));
    body.insert("max_tokens".into(), json!(max_tokens.unwrap_or(MESSAGES_DEFAULT_MAX_TOKENS)));
    body.insert("stream".into(), json!(opts.stream));
}

/// Messages takes the system prompt as a top-level field, not a message:
/// a dataset's `system` messages are joined into it.
fn split_system(messages: &[Value]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<String> = Vec::new();
    let mut rest = Vec::new();
    for m in messages {
        if m.get("role").and_then(Value::as_str) == Some("system") {
            match m.get("content") {
                Some(Value::String(s)) => system.push(s.clone()),
                Some(Value::Array(parts)) => {
                    system.extend(parts.iter().filter_map(|p| p.get("text")?.as_str().map(str::to_owned)))
                }
                _ => {}
            }
        } else {
            rest.push(m.clone());
        }
    }
    ((!system.is_empty()).then(|| system.join("\n")), rest)
}

#[derive(Deserialize)]
struct MsgEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    /// `message_start`: the message so far, with the prompt's counts.
    #[serde(default)]
    message: Option<MsgWhole>,
    /// `content_block_start`: a block that may open with text.
    #[serde(default, borrow)]
    content_block: Option<MsgBlock<'a>>,
    /// `content_block_delta` and `message_delta`.
    #[serde(default, borrow)]
    delta: Option<MsgDelta<'a>>,
    /// `message_delta`'s counts, and a whole message's.
    #[serde(default)]
    usage: Option<MsgUsage>,
    #[serde(default)]
    error: Option<Value>,
    /// A whole (non-streamed) message's blocks and stop reason.
    #[serde(default, borrow)]
    content: Option<Vec<MsgBlock<'a>>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct MsgWhole {
    #[serde(default)]
    usage: Option<MsgUsage>,
}

#[derive(Deserialize)]
struct MsgBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    /// A whole message's tool call arguments.
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct MsgDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Clone, Copy)]
struct MsgUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl MsgUsage {
    /// As the OpenAI-shaped [`Usage`]. Messages counts the prompt in three
    /// parts (`input_tokens` excludes what was read from or written to the
    /// cache); the prompt is their sum and the cached part is the read.
    fn usage(self, output: bool) -> Usage {
        let prompt = self
            .input_tokens
            .map(|i| i + self.cache_read_input_tokens.unwrap_or(0) + self.cache_creation_input_tokens.unwrap_or(0));
        Usage {
            prompt_tokens: prompt,
            completion_tokens: if output { self.output_tokens } else { None },
            prompt_tokens_details: self.cache_read_input_tokens.map(|c| PromptTokensDetails { cached_tokens: Some(c) }),
        }
    }
}

/// Parses one Messages event's data, or a whole non-streamed message.
pub fn parse_messages(data: &str) -> Result<ChunkInfo, ProtocolError> {
    let ev: MsgEvent = decode(data)?;
    let mut info = ChunkInfo::default();
    match ev.kind.as_ref() {
        "message_start" => {
            // Its `output_tokens` is a placeholder (0 or 1) until `message_delta`.
            info.usage = ev.message.and_then(|m| m.usage).map(|u| u.usage(false));
        }
        "content_block_start" => {
            if let Some(b) = ev.content_block {
                block(&mut info, &b, false);
            }
        }
        "content_block_delta" => {
            if let Some(d) = ev.delta {
                match d.kind.as_deref() {
                    Some("text_delta") => info.push(Channel::Content, d.text.as_deref().unwrap_or("")),
                    Some("thinking_delta") => info.push(Channel::Reasoning, d.thinking.as_deref().unwrap_or("")),
                    Some("input_json_delta") => info.push(Channel::ToolCalls, d.partial_json.as_deref().unwrap_or("")),
                    // `signature_delta` and kinds to come carry no generated tokens.
                    _ => {}
                }
            }
        }
        "message_delta" => {
            info.finish_reason = ev.delta.and_then(|d| d.stop_reason).map(Cow::into_owned);
            info.usage = ev.usage.map(|u| u.usage(true));
        }
        "message_stop" => info.done = true,
        "error" => {
            info.error = Some(ev.error.as_ref().map_or_else(|| data.to_owned(), error_message));
        }
        "message" => {
            // A whole message: content blocks, in order, as one output.
            let blocks = ev.content.unwrap_or_default();
            for b in blocks.iter().filter(|b| b.kind == "text") {
                block(&mut info, b, true);
            }
            for b in blocks.iter().filter(|b| b.kind != "text") {
                block(&mut info, b, true);
            }
            info.finish_reason = ev.stop_reason.map(Cow::into_owned);
            info.usage = ev.usage.map(|u| u.usage(true));
            info.done = true;
        }
        // `ping`, `content_block_stop`, and event types to come.
        _ => {}
    }
    Ok(info)
}

/// One content block: of a whole message (`whole`), or a streamed
/// `content_block_start`.
fn block(info: &mut ChunkInfo, b: &MsgBlock, whole: bool) {
    match b.kind.as_ref() {
        "text" => info.push(Channel::Content, b.text.as_deref().unwrap_or("")),
        "thinking" => info.push(Channel::Reasoning, b.thinking.as_deref().unwrap_or("")),
        "tool_use" => {
            // A tool call is output even without arguments (`input: {}`), as
            // an OpenAI chat call with `arguments: "{}"` is: a streamed block's
            // opening is its first output, and its arguments follow as deltas
            // (an empty `partial_json` adds nothing); a whole message's call
            // carries its arguments in the block.
            info.channel.get_or_insert(Channel::ToolCalls);
            if whole {
                if let Some(input) = &b.input {
                    info.text.push_str(&input.to_string());
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::{test_body as body, Api};
    use super::*;

    #[test]
    fn messages_bodies_carry_max_tokens_and_a_top_level_system() {
        let b = body(Api::Messages, PromptBody::Text("hi".into()), Some(64), "{}");
        assert_eq!(b["messages"][0], json!({"role": "user", "content": "hi"}));
        assert_eq!((b["max_tokens"].as_u64(), b["stream"].as_bool()), (Some(64), Some(true)));
        assert!(b.get("stream_options").is_none() && b.get("system").is_none());
        let b = body(Api::Messages, PromptBody::Text("hi".into()), None, "{}");
        assert_eq!(b["max_tokens"], MESSAGES_DEFAULT_MAX_TOKENS);
        let dataset = PromptBody::Messages(vec![
            json!({"role": "system", "content": "be brief"}),
            json!({"role": "system", "content": [{"type": "text", "text": "and kind"}]}),
            json!({"role": "user", "content": "hi"}),
        ]);
        let b = body(Api::Messages, dataset, Some(8), "{}");
        assert_eq!(b["system"], "be brief\nand kind");
        assert_eq!(b["messages"], json!([{"role": "user", "content": "hi"}]));
        let turns = PromptBody::Turns(vec!["a".into(), "b".into(), "c".into()]);
        let b = body(Api::Messages, turns, Some(8), "{}");
        let roles: Vec<&str> = b["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
    }

    #[test]
    fn messages_events() {
        let start = parse_messages(r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":30,"cache_creation_input_tokens":2}}}"#).unwrap();
        let u = start.usage.unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(44), None));
        assert_eq!(u.prompt_tokens_details.unwrap().cached_tokens, Some(30));
        assert_eq!(start.channel, None);
        let open =
            parse_messages(r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#)
                .unwrap();
        assert_eq!(open.channel, None);
        let text =
            parse_messages(r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" Hello"}}"#)
                .unwrap();
        assert_eq!((text.channel, text.text.as_str(), text.content_len), (Some(Channel::Content), " Hello", 6));
        let think = parse_messages(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
        )
        .unwrap();
        assert_eq!((think.channel, think.content_len), (Some(Channel::Reasoning), 0));
        let sig = parse_messages(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}"#,
        )
        .unwrap();
        assert_eq!(sig.channel, None);
        let tool = parse_messages(
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
        )
        .unwrap();
        assert_eq!((tool.channel, tool.text.as_str()), (Some(Channel::ToolCalls), "{\"a\":"));
        // A call opens as output, though its arguments are still to come.
        let tool_open = parse_messages(r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}"#).unwrap();
        assert_eq!((tool_open.channel, tool_open.text.as_str()), (Some(Channel::ToolCalls), ""));
        let no_args = parse_messages(
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        )
        .unwrap();
        assert_eq!(no_args.channel, None);
        let end = parse_messages(r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":15}}"#).unwrap();
        assert_eq!(end.finish_reason.as_deref(), Some("max_tokens"));
        let merged = u.merge(end.usage.unwrap());
        assert_eq!((merged.prompt_tokens, merged.completion_tokens), (Some(44), Some(15)));
        assert!(!end.done);
        assert!(parse_messages(r#"{"type":"message_stop"}"#).unwrap().done);
        let ping = parse_messages(r#"{"type": "ping"}"#).unwrap();
        assert_eq!(ping, ChunkInfo::default());
        let err =
            parse_messages(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#).unwrap();
        assert_eq!(err.error.as_deref(), Some("Overloaded"));
        assert!(parse_messages("{nope").unwrap_err().to_string().contains("malformed JSON"));
    }

    #[test]
    fn a_whole_message() {
        let info = parse_messages(r#"{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"let me see","signature":"x"},{"type":"text","text":"Hi there"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":20}}"#).unwrap();
        assert_eq!(info.channel, Some(Channel::Content));
        assert_eq!((&info.text[..info.content_len], info.text.as_str()), ("Hi there", "Hi therelet me see"));
        assert_eq!((info.usage.unwrap().prompt_tokens, info.usage.unwrap().completion_tokens), (Some(9), Some(20)));
        assert_eq!(info.finish_reason.as_deref(), Some("end_turn"));
        assert!(info.done);
    }

    #[test]
    fn a_whole_message_whose_only_output_is_a_call_without_arguments() {
        let info = parse_messages(r#"{"type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":{}}],"stop_reason":"end_turn","usage":{"input_tokens":7,"output_tokens":12}}"#).unwrap();
        assert_eq!((info.channel, info.text.as_str(), info.content_len), (Some(Channel::ToolCalls), "{}", 0));
        let info = parse_messages(r#"{"type":"message","content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"t","name":"f","input":{"a":1}}],"stop_reason":"tool_use"}"#).unwrap();
        assert_eq!((info.channel, info.text.as_str(), info.content_len), (Some(Channel::Content), "Hi{\"a\":1}", 2));
    }
}
