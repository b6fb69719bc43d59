use super::chunks::rfc3339;
use super::*;
use crate::template::ChatTemplate;
use bytes::Bytes;
use serde_json::{json, Value};

#[test]
fn each_route_counts_its_prompt_as_a_real_server_does() {
    let t = ChatTemplate::Llama3;
    // (route, body, prompt tokens): chats get the template, raw prompts the BOS.
    let cases = [
        (Route::Chat, json!({"messages": [{"role": "user", "content": "a b c"}]}), 3 + 35),
        (
            Route::Chat,
            json!({"messages": [{"role": "system", "content": "be brief"}, {"role": "user",
                   "content": [{"type": "text", "text": "a b"}, {"type": "text", "text": "c"}]}]}),
            2 + 3 + 35,
        ),
        (
            Route::Messages,
            json!({"system": [{"type": "text", "text": "be brief"}], "max_tokens": 4,
                   "messages": [{"role": "user", "content": "a b c"}]}),
            2 + 3 + 35,
        ),
        (Route::OllamaChat, json!({"messages": [{"role": "user", "content": "a b c"}]}), 3 + 35),
        (Route::OllamaGenerate, json!({"prompt": "a b c"}), 3 + 35),
        (Route::OllamaGenerate, json!({"prompt": "a b c", "system": "be brief"}), 2 + 3 + 35),
        (Route::OllamaGenerate, json!({"prompt": "a b c", "raw": true}), 3 + 1),
        (Route::Completions, json!({"prompt": "a b c"}), 3 + 1),
        (Route::Completions, json!({"prompt": ["a b c"]}), 3 + 1),
        (Route::LlamaCpp, json!({"prompt": "a b c"}), 3 + 1),
        (Route::TgiGenerate, json!({"inputs": "a b c"}), 3 + 1),
    ];
    for (route, body, want) in cases {
        let req = GenerationRequest::parse(route, body.to_string().as_bytes()).unwrap();
        assert_eq!(req.prompt_ids(t).len(), want, "{route:?} {body}");
        // With no template, the words alone, as before templates.
        assert_eq!(req.prompt_ids(ChatTemplate::None).len() as u64, count_tokens(&req.prompt_text()), "{body}");
    }
}

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

/// Each `data:` payload of an SSE text, or each line of an NDJSON text, as JSON.
fn payloads(route: Route, b: &Bytes) -> Vec<Value> {
    let s = std::str::from_utf8(b).unwrap();
    let parse = |p: &str| serde_json::from_str::<Value>(p).unwrap_or_else(|e| panic!("{e}: {p}"));
    if route.ollama() {
        assert!(s.is_empty() || s.ends_with('\n'), "every line ends: {s:?}");
        return s.lines().map(parse).collect();
    }
    s.split("\n\n")
        .filter(|e| !e.is_empty())
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data:")).map(str::trim_start))
        .filter(|d| *d != "[DONE]")
        .map(parse)
        .collect()
}

#[test]
fn native_streams_have_each_protocol_s_shape() {
    let w = ChunkWriter::new(Route::Messages, 7, "m\"x", 1_700_000_000);
    let pre = payloads(Route::Messages, &w.preamble(Usage { prompt: 40, completion: 0, cached: Some(32) }));
    let kinds: Vec<&str> = pre.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message_start", "content_block_start", "ping"]);
    assert_eq!(pre[0]["message"]["model"], "m\"x");
    assert_eq!(pre[0]["message"]["usage"]["input_tokens"], 8, "the uncached part");
    assert_eq!(pre[0]["message"]["usage"]["cache_read_input_tokens"], 32);
    let delta = payloads(Route::Messages, &w.tokens(0, 2));
    assert_eq!(delta[0]["delta"]["type"], "text_delta");
    assert_eq!(delta[0]["delta"]["text"].as_str().unwrap().split_whitespace().count(), 2);
    let close = payloads(Route::Messages, &w.close("length", Some(Usage::new(40, 2))));
    let kinds: Vec<&str> = close.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(
        (close[1]["delta"]["stop_reason"].as_str(), close[1]["usage"]["output_tokens"].as_u64()),
        (Some("max_tokens"), Some(2))
    );
    let err = String::from_utf8(w.error_event("boom").to_vec()).unwrap();
    assert!(err.starts_with("event: error\ndata: "), "{err}");
    assert_eq!(payloads(Route::Messages, &w.error_event("boom"))[0]["error"]["message"], "boom");
    let whole = w.whole(Usage::new(40, 3), "length");
    assert_eq!((whole["type"].as_str(), whole["stop_reason"].as_str()), (Some("message"), Some("max_tokens")));
    assert_eq!(whole["content"][0]["text"].as_str().unwrap().split_whitespace().count(), 3);

    for route in [Route::OllamaChat, Route::OllamaGenerate] {
        let w = ChunkWriter::new(route, 7, "m", 1_700_000_000);
        assert!(w.preamble(Usage::new(4, 0)).is_empty(), "Ollama sends nothing before the first token");
        let line = &payloads(route, &w.tokens(0, 2))[0];
        let text = if route == Route::OllamaChat { &line["message"]["content"] } else { &line["response"] };
        assert_eq!(text.as_str().unwrap().split_whitespace().count(), 2);
        assert_eq!((line["done"].as_bool(), line["created_at"].as_str()), (Some(false), Some("2023-11-14T22:13:20Z")));
        let last = &payloads(route, &w.close("length", Some(Usage::new(4, 2))))[0];
        assert_eq!((last["done"].as_bool(), last["done_reason"].as_str()), (Some(true), Some("length")));
        assert_eq!((last["prompt_eval_count"].as_u64(), last["eval_count"].as_u64()), (Some(4), Some(2)));
        assert_eq!(payloads(route, &w.error_event("boom"))[0]["error"], "boom");
        let whole = w.whole(Usage::new(4, 3), "length");
        let text = if route == Route::OllamaChat { &whole["message"]["content"] } else { &whole["response"] };
        assert_eq!(text.as_str().unwrap().split_whitespace().count(), 3);
    }
    // TGI: one event per token; the last carries the whole text and the details.
    let w = ChunkWriter::new(Route::TgiGenerateStream, 7, "m", 1).with_lengths(4, 3);
    assert!(w.preamble(Usage::new(4, 0)).is_empty());
    let mid = &payloads(Route::TgiGenerateStream, &w.tokens(1, 2))[0];
    assert_eq!(
        (mid["index"].as_u64(), mid["token"]["special"].as_bool(), &mid["details"]),
        (Some(2), Some(false), &Value::Null)
    );
    let raw = String::from_utf8(w.tokens(2, 3).to_vec()).unwrap();
    assert!(raw.starts_with("data:{"), "TGI writes no space after data: {raw}");
    let last = &payloads(Route::TgiGenerateStream, &w.tokens(2, 3))[0];
    assert_eq!(last["generated_text"].as_str(), Some(w.text(0, 3).as_str()));
    assert_eq!(
        (last["details"]["generated_tokens"].as_u64(), last["details"]["input_length"].as_u64()),
        (Some(3), Some(4))
    );
    assert!(w.close("length", Some(Usage::new(4, 3))).is_empty(), "the last token said it");
    assert_eq!(payloads(Route::TgiGenerateStream, &w.error_event("boom"))[0]["error"], "boom");
    assert_eq!(w.whole(Usage::new(4, 3), "length")["details"]["generated_tokens"], 3);
    // llama.cpp: pieces, then a stop event with the counts and the cache's share.
    let w = ChunkWriter::new(Route::LlamaCpp, 7, "m", 1).with_lengths(40, 2);
    let piece = &payloads(Route::LlamaCpp, &w.tokens(0, 1))[0];
    assert_eq!((piece["stop"].as_bool(), piece["tokens_predicted"].as_u64()), (Some(false), Some(1)));
    let stop =
        &payloads(Route::LlamaCpp, &w.close("length", Some(Usage { prompt: 40, completion: 2, cached: Some(32) })))[0];
    assert_eq!(
        (stop["stop"].as_bool(), stop["stop_type"].as_str(), stop["content"].as_str()),
        (Some(true), Some("limit"), Some(""))
    );
    assert_eq!((stop["tokens_evaluated"].as_u64(), stop["timings"]["cache_n"].as_u64()), (Some(40), Some(32)));
    assert_eq!(payloads(Route::LlamaCpp, &w.error_event("boom"))[0]["error"]["message"], "boom");
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
}

#[test]
fn native_requests_are_checked_and_counted() {
    let m = GenerationRequest::parse(
        Route::Messages,
        br#"{"system":"be brief","messages":[{"role":"user","content":"a b"}],"max_tokens":5}"#,
    )
    .unwrap();
    assert_eq!((m.max_tokens(), m.stream(), m.include_usage()), (Some(5), false, true));
    assert_eq!(count_tokens(&m.prompt_text()), 4, "the system prompt counts");
    let no_max = GenerationRequest::parse(Route::Messages, br#"{"messages":[{"role":"user","content":"a"}]}"#);
    assert!(no_max.unwrap_err().to_string().contains("max_tokens"));
    let o = GenerationRequest::parse(
        Route::OllamaChat,
        br#"{"messages":[{"role":"user","content":"a"}],"options":{"num_predict":9}}"#,
    )
    .unwrap();
    assert_eq!((o.max_tokens(), o.stream(), o.include_usage()), (Some(9), true, true), "Ollama streams by default");
    let unlimited = GenerationRequest::parse(
        Route::OllamaGenerate,
        br#"{"prompt":"a","stream":false,"options":{"num_predict":-1}}"#,
    )
    .unwrap();
    assert_eq!((unlimited.max_tokens(), unlimited.stream()), (None, false));
    assert!(GenerationRequest::parse(Route::OllamaGenerate, br#"{"messages":[]}"#).is_err());
    assert_eq!(Route::of_path("/api/chat"), Some(Route::OllamaChat));
    assert_eq!(Route::of_path("/api/pull"), None);
    let t =
        GenerationRequest::parse(Route::TgiGenerateStream, br#"{"inputs":"a b","parameters":{"max_new_tokens":7}}"#)
            .unwrap();
    assert_eq!((t.max_tokens(), t.stream(), count_tokens(&t.prompt_text())), (Some(7), true, 2), "the route streams");
    assert!(GenerationRequest::parse(Route::TgiGenerate, br#"{"prompt":"a"}"#)
        .unwrap_err()
        .to_string()
        .contains("inputs"));
    // Several choices or prompts a request are refused, not answered as one.
    let several = |route, body: &[u8]| GenerationRequest::parse(route, body).unwrap_err().to_string();
    assert!(several(Route::Completions, br#"{"prompt":"a","n":3}"#).starts_with("n is 3: this simulated server"));
    assert!(several(Route::Chat, br#"{"messages":[{"role":"user","content":"a"}],"n":2}"#).contains("send 2 requests"));
    assert!(several(Route::Completions, br#"{"prompt":["a","b"]}"#).contains("a list of 2 prompts"));
    for one in [&br#"{"prompt":["a"],"n":1}"#[..], br#"{"prompt":"a","n":1}"#] {
        assert!(GenerationRequest::parse(Route::Completions, one).is_ok());
    }
    // No choice, no token, or a negative temperature: refused as vLLM
    // refuses them, by both profiles (the fixed one had answered them).
    assert!(several(Route::Completions, br#"{"prompt":"a","n":0}"#).starts_with("n is 0"));
    assert!(several(Route::Chat, br#"{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":0}"#)
        .starts_with("max_completion_tokens is 0"));
    assert!(several(Route::Completions, br#"{"prompt":"a","max_tokens":0}"#).starts_with("max_tokens is 0"));
    assert!(several(Route::Messages, br#"{"messages":[{"role":"user","content":"a"}],"max_tokens":0}"#)
        .contains("at least one token"));
    assert!(several(Route::Chat, br#"{"messages":[{"role":"user","content":"a"}],"temperature":-5}"#)
        .contains("temperature is -5"));
    assert!(GenerationRequest::parse(Route::Completions, br#"{"prompt":"a","temperature":0}"#).is_ok());
    let l = GenerationRequest::parse(Route::LlamaCpp, br#"{"prompt":"a","n_predict":5,"stream":true}"#).unwrap();
    assert_eq!((l.max_tokens(), l.stream()), (Some(5), true));
    let body: Value = serde_json::from_str(&Route::Messages.error_body(400, "bad")).unwrap();
    assert_eq!((body["type"].as_str(), body["error"]["type"].as_str()), (Some("error"), Some("invalid_request_error")));
    let body: Value = serde_json::from_str(&Route::OllamaChat.error_body(500, "bad")).unwrap();
    assert_eq!(body, json!({ "error": "bad" }));
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

/// A zero-token limit is refused naming the field the request set, on
/// every route: the native ones had been told "max_tokens" by the engine.
#[test]
fn a_zero_token_limit_names_the_field_sent() {
    for (route, body, field) in [
        (Route::OllamaGenerate, &br#"{"prompt":"a","options":{"num_predict":0}}"#[..], "options.num_predict"),
        (
            Route::OllamaChat,
            br#"{"messages":[{"role":"user","content":"a"}],"options":{"num_predict":0}}"#,
            "options.num_predict",
        ),
        (Route::TgiGenerate, br#"{"inputs":"a","parameters":{"max_new_tokens":0}}"#, "parameters.max_new_tokens"),
        (Route::TgiGenerateStream, br#"{"inputs":"a","parameters":{"max_new_tokens":0}}"#, "parameters.max_new_tokens"),
        (Route::LlamaCpp, br#"{"prompt":"a","n_predict":0}"#, "n_predict"),
        (Route::Messages, br#"{"messages":[{"role":"user","content":"a"}],"max_tokens":0}"#, "max_tokens"),
    ] {
        let e = GenerationRequest::parse(route, body).unwrap_err().to_string();
        assert_eq!(e, format!("{field} is 0; ask for at least one token"), "{route:?}");
    }
}

/// Prompts of the wrong shape are refused naming the element and its value
/// (vLLM refuses them too): they had been read as an empty prompt, had
/// lost the bad id in silence, or had been answered as one token.
#[test]
fn prompts_of_the_wrong_shape_name_what_is_wrong() {
    for (prompt, says) in [
        (json!([-1]), "prompt[0] is -1: a prompt is a string, a list of token ids"),
        (json!([1.5]), "prompt[0] is 1.5:"),
        (json!([null]), "prompt[0] is null:"),
        (json!([{}]), "prompt[0] is an object:"),
        (json!([[]]), "prompt[0] is an empty list: a list of token ids holds one at least"),
        (json!([[-1]]), "prompt[0][0] is -1: a token id is a whole number from 0 to 4294967295"),
        (json!([5, -1]), "prompt[1] is -1:"),
        (json!([5, 4_294_967_296u64]), "prompt[1] is 4294967296:"),
        (json!({}), "prompt is an empty object: a prompt is a string"),
        (json!(5), "prompt is the number 5:"),
        (json!(true), "prompt is true:"),
    ] {
        for route in [Route::Completions, Route::LlamaCpp] {
            let body = json!({ "prompt": prompt }).to_string();
            let e = GenerationRequest::parse(route, body.as_bytes()).unwrap_err().to_string();
            assert!(e.starts_with(says), "{route:?} {prompt}: {e}");
        }
    }
    // The good shapes still parse, and count one token an id.
    for (prompt, tokens) in [(json!([0, 7, 4_294_967_295u32]), 3), (json!([[1, 2]]), 2), (json!(["a b"]), 2)] {
        let r =
            GenerationRequest::parse(Route::Completions, json!({ "prompt": prompt }).to_string().as_bytes()).unwrap();
        assert_eq!(r.prompt_words(), tokens, "{prompt}");
        assert_eq!(r.prompt_ids(ChatTemplate::None).len() as u64, tokens, "{prompt}");
    }
}

/// Chat messages of the wrong shape are refused naming the message and what
/// is wrong, as vLLM refuses them; they had been answered.
#[test]
fn messages_of_the_wrong_shape_name_the_message() {
    for (messages, says) in [
        (json!(["hi"]), "messages[0] is \"hi\": a message is an object with a role"),
        (json!([null]), "messages[0] is null:"),
        (json!([{"content": "hi"}]), "messages[0] has no role:"),
        (json!([{"role": 5}]), "messages[0].role is 5:"),
        (json!([{"role": "user", "content": "a"}, {"role": "wizard"}]), "messages[1].role is \"wizard\":"),
        (json!([{"role": "user", "content": {"a": 1}}]), "messages[0].content is an object: a message's content"),
        (json!([{"role": "user", "content": [{"type": "video"}]}]), "messages[0].content[0] has type \"video\""),
        (json!([{"role": "user", "content": [0, 0]}]), "messages[0].content[0] is 0: a content part is an object"),
        (json!([{"role": "user", "content": [{"text": "a"}]}]), "messages[0].content[0] has no \"type\""),
        (json!([{"role": "user", "content": [{"type": "text", "text": 5}]}]), "messages[0].content[0].text is 5"),
        (json!({"role": "user"}), "\"messages\" is an object: it must be a list"),
    ] {
        for route in [Route::Chat, Route::OllamaChat] {
            let body = json!({ "messages": messages }).to_string();
            let e = GenerationRequest::parse(route, body.as_bytes()).unwrap_err().to_string();
            assert!(e.starts_with(says), "{route:?} {messages}: {e}");
        }
    }
    let e = GenerationRequest::parse(
        Route::Messages,
        json!({"max_tokens": 3, "messages": [{"role": "user", "content": "a"}], "system": [0, 0]})
            .to_string()
            .as_bytes(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("system[0] is 0: a content part is an object"), "{e}");
    // Every role vLLM takes, content absent or null (an assistant's tool
    // call), and Anthropic's blocks are taken.
    for role in crate::openai::fields::ROLES {
        let body = json!({"messages": [{"role": role, "content": "a b"}, {"role": "assistant", "content": null},
                                       {"role": "assistant", "tool_calls": []}]});
        let r = GenerationRequest::parse(Route::Chat, body.to_string().as_bytes()).unwrap();
        assert_eq!(r.prompt_words(), 2, "{role}");
    }
    let body = json!({"max_tokens": 3, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "a"}, {"type": "tool_result", "tool_use_id": "t", "content": "x"},
        {"type": "thinking", "thinking": "hmm"}]}]});
    assert_eq!(GenerationRequest::parse(Route::Messages, body.to_string().as_bytes()).unwrap().prompt_words(), 1);
}

/// With `continuous_usage_stats`, every chunk carries usage, the role and
/// empty preamble chunks and the finish chunk included, as vLLM's do.
#[test]
fn continuous_usage_is_on_every_chunk() {
    for route in [Route::Chat, Route::Completions] {
        let w = ChunkWriter::new(route, 7, "m", 1).with_lengths(4, 3).with_continuous_usage(true);
        let mut all = payloads(route, &w.preamble(Usage::new(4, 0)));
        let preamble = all.len();
        all.extend(payloads(route, &w.tokens(0, 3)));
        all.extend(payloads(route, &w.close("length", Some(Usage::new(4, 3)))));
        // The last is the usage chunk itself.
        for (i, v) in all.iter().enumerate() {
            let completion = if i < preamble { 0 } else { 3 };
            assert_eq!(
                (v["usage"]["prompt_tokens"].as_u64(), v["usage"]["completion_tokens"].as_u64()),
                (Some(4), Some(completion)),
                "{route:?} chunk {i}: {v}"
            );
        }
        // Without it, only the usage chunk carries usage.
        let w = ChunkWriter::new(route, 7, "m", 1).with_lengths(4, 3);
        let mut all = payloads(route, &w.preamble(Usage::new(4, 0)));
        all.extend(payloads(route, &w.close("length", Some(Usage::new(4, 3)))));
        assert_eq!(all.iter().filter(|v| !v["usage"].is_null()).count(), 1, "{route:?}");
    }
}

/// A body that is not a JSON object is refused as such (serde reads a
/// struct from an array too: `[]` had been refused as having no messages).
#[test]
fn a_body_that_is_not_an_object_is_refused_as_such() {
    for (body, what) in [(&b" []"[..], "an array"), (b"\"hi\"", "a string"), (b"42", "a number")] {
        let e = GenerationRequest::parse(Route::Chat, body).unwrap_err().to_string();
        assert!(e.contains(&format!("the request body is {what}: it must be a JSON object")), "{e}");
    }
    assert!(GenerationRequest::parse(Route::Chat, br#"{"messages":[{"role":"user","content":"a"}]}"#).is_ok());
}

/// `n` written as a whole float is one choice, as vLLM's pydantic model
/// takes it (`1.0` had been refused); a fraction or a negative is not.
#[test]
fn n_as_a_whole_float_is_taken() {
    let chat = |n: &str| format!(r#"{{"messages":[{{"role":"user","content":"a"}}],"n":{n}}}"#);
    assert_eq!(GenerationRequest::parse(Route::Chat, chat("1.0").as_bytes()).unwrap().n, Some(1));
    assert_eq!(GenerationRequest::parse(Route::Chat, chat("1e0").as_bytes()).unwrap().n, Some(1));
    for bad in ["1.5", "-1"] {
        let e = GenerationRequest::parse(Route::Chat, chat(bad).as_bytes()).unwrap_err().to_string();
        assert!(e.contains("whole number"), "{bad}: {e}");
    }
}
