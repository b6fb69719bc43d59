//! Answers in shapes some servers send and others do not, over real HTTP on
//! 127.0.0.1:0, on both transports: each is read as the output it is, or,
//! when it is another API's, the failure says which `--api` reads it.

use crate::common;

use goodput_core::{Channel, FailureKind, Outcome, RequestRecord};
use goodput_load::{Api, Transport};
use std::time::Duration;

const TRANSPORTS: [Transport; 2] = [Transport::Auto, Transport::Reqwest];

async fn canned(response: String) -> String {
    common::canned(response.into_bytes()).await
}

async fn request(url: &str, transport: Transport, api: Api, stream: bool) -> RequestRecord {
    let max_buffer = goodput_load::client::MAX_BUFFER;
    common::request_once(url, transport, api, stream, 16, max_buffer, Duration::from_secs(5)).await
}

fn sse(events: &[&str]) -> String {
    let mut s = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".to_owned();
    for e in events {
        s.push_str(&format!("data: {e}\n\n"));
    }
    s
}

fn json(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// An Anthropic tool call without arguments (`input: {}`) is output, on the
/// tool-call channel, streamed or whole, as OpenAI chat's `arguments: "{}"`
/// is: it had failed as `empty_output` though the server counted 12 tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_tool_call_without_arguments_is_output() {
    let streamed = sse(&[
        r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":7,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":12}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let whole = json(
        r#"{"type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":{}}],"stop_reason":"end_turn","usage":{"input_tokens":7,"output_tokens":12}}"#,
    );
    for (resp, stream) in [(streamed, true), (whole, false)] {
        let url = canned(resp).await;
        for t in TRANSPORTS {
            let r = request(&url, t, Api::Messages, stream).await;
            assert_eq!(r.outcome, Outcome::Success, "stream {stream}, {t:?}");
            assert_eq!((r.output_tokens, r.input_tokens), (12, 7), "stream {stream}, {t:?}");
            assert_eq!(r.chunks.len(), 1, "stream {stream}, {t:?}");
            assert_eq!(r.chunks.at(0).channel, Channel::ToolCalls, "stream {stream}, {t:?}");
        }
    }
}

/// Chat content as a list of parts (Mistral's, Magistral's), streamed and
/// whole: text parts are content and thinking parts reasoning; it had failed
/// every request as `invalid_response`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_content_as_a_list_of_parts_is_read() {
    let streamed = sse(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"let me see"}]}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Paris"}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":[{"type":"future_part","x":1}]},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":" it is"},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]);
    let whole = json(
        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"let me see"}]},{"type":"text","text":"Paris"}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5}}"#,
    );
    for (resp, stream) in [(streamed, true), (whole, false)] {
        let url = canned(resp).await;
        for t in TRANSPORTS {
            let r = request(&url, t, Api::Chat, stream).await;
            assert_eq!(r.outcome, Outcome::Success, "stream {stream}, {t:?}");
            assert_eq!(r.finish_reason.as_deref(), Some("stop"), "stream {stream}, {t:?}");
            let channels: Vec<Channel> = r.chunks.iter().map(|c| c.channel).collect();
            let want: &[Channel] =
                if stream { &[Channel::Reasoning, Channel::Content, Channel::Content] } else { &[Channel::Content] };
            assert_eq!(channels, want, "stream {stream}, {t:?}");
        }
    }
}

/// A server of OpenAI's chat dialect benched as TGI or llama.cpp, and
/// llama.cpp's benched as TGI: the failure says the payloads are not the
/// API's and names the `--api` that reads them (it had said only "no output
/// (finish reason: none)").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_apis_answers_name_the_api_that_reads_them() {
    let chat = sse(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Paris"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]);
    let llamacpp = sse(&[
        r#"{"content":"Paris","stop":false,"tokens_predicted":1}"#,
        r#"{"content":"","stop":true,"stop_type":"eos","tokens_predicted":1,"tokens_evaluated":3}"#,
    ]);
    let cases = [
        (chat.clone(), Api::Tgi, "--api chat or --api completions"),
        (chat, Api::LlamaCpp, "--api chat or --api completions"),
        (llamacpp, Api::Tgi, "--api llamacpp"),
    ];
    for (resp, api, want) in cases {
        let url = canned(resp).await;
        for t in TRANSPORTS {
            let r = request(&url, t, api, true).await;
            let Outcome::Failed { kind, message } = &r.outcome else { panic!("{api:?} {t:?}: {:?}", r.outcome) };
            assert!(matches!(kind, FailureKind::EmptyOutput | FailureKind::TruncatedStream), "{api:?} {t:?}");
            assert!(message.contains(&format!("in --api {}'s shape", api.as_str())), "{api:?} {t:?}: {message}");
            assert!(message.contains(want), "{api:?} {t:?}: {message}");
        }
    }
}
