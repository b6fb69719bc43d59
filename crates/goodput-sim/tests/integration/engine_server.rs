//! The engine server over real HTTP on 127.0.0.1:0: both routes streamed and
//! whole with exact usage, models and errors, prefix-cache hits in /metrics,
//! aborts on disconnect, injected faults, and thousands of concurrent streams.

use goodput_sim::connections::ConnectionLimits;
use goodput_sim::engine::{EngineConfig, Precision, RouterPolicy};
use goodput_sim::engine_server::{app, EngineServer, EngineServerConfig};
use goodput_sim::faults::FaultConfig;
use goodput_sim::template::ChatTemplate;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Stops the server it belongs to when dropped.
struct Stop(Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for Stop {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// Llama-3.1-8B BF16 on an H100, ten times faster than real time.
fn config() -> EngineServerConfig {
    let engine = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap();
    EngineServerConfig {
        speed: 10.0,
        model_name: "sim-8b".into(),
        default_max_tokens: 7,
        ..EngineServerConfig::new(engine)
    }
}

async fn start(cfg: EngineServerConfig) -> (String, Arc<EngineServer>, Stop) {
    start_limited(cfg, ConnectionLimits::default()).await
}

async fn start_limited(cfg: EngineServerConfig, limits: ConnectionLimits) -> (String, Arc<EngineServer>, Stop) {
    let server = EngineServer::start(cfg).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(goodput_sim::server::serve_limited(listener, app(server.clone()), limits, async {
        let _ = rx.await;
    }));
    (base, server, Stop(Some(tx)))
}

#[allow(clippy::disallowed_methods)] // A test's own client of the simulator.
fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

fn post(http: &reqwest::Client, url: impl reqwest::IntoUrl, body: &Value) -> reqwest::RequestBuilder {
    http.post(url).header("content-type", "application/json").body(body.to_string())
}

fn words(n: usize, salt: &str) -> String {
    (0..n).map(|i| format!("{salt}{i}")).collect::<Vec<_>>().join(" ")
}

/// The `data:` payloads of an SSE body, `[DONE]` included.
fn events(body: &str) -> Vec<String> {
    body.split("\n\n").filter_map(|e| e.strip_prefix("data: ")).map(str::to_owned).collect()
}

/// The text a streamed chunk carries, on either route.
fn chunk_text(v: &Value) -> Option<&str> {
    let c = &v["choices"][0];
    c["delta"]["content"].as_str().or(c["text"].as_str())
}

/// How many events carry a token (not the preamble, finish, usage or `[DONE]`).
fn tokens(events: &[String]) -> usize {
    let parsed = events.iter().filter_map(|e| serde_json::from_str::<Value>(e).ok());
    parsed.filter(|v| chunk_text(v).is_some_and(|t| !t.is_empty())).count()
}

/// Waits (briefly, polling) until `f` holds.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(5), "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn metric(text: &str, prefix: &str) -> f64 {
    let line = text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix} in\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_routes_stream_and_answer_whole_with_exact_usage() {
    let (base, server, _stop) = start(config()).await;
    let http = client();
    // The model's chat template (Llama 3.1's) adds 35 tokens to a chat of
    // one message; a raw prompt gets the BOS.
    for (path, body, prompt) in [
        ("/v1/chat/completions", json!({"messages": [{"role": "user", "content": words(37, "w")}]}), 37 + 35),
        ("/v1/completions", json!({"prompt": words(37, "w")}), 37 + 1),
    ] {
        let url = format!("{base}{path}");
        // Streamed, with usage; ignore_eos and min_tokens are accepted.
        let mut b = body.clone();
        b["stream"] = json!(true);
        b["stream_options"] = json!({"include_usage": true});
        b["max_tokens"] = json!(12);
        b["ignore_eos"] = json!(true);
        b["min_tokens"] = json!(12);
        let resp = post(&http, &url, &b).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        assert_eq!(resp.headers()["server"], "goodput-sim");
        let ev = events(&resp.text().await.unwrap());
        assert_eq!(ev.last().unwrap(), "[DONE]");
        let parsed: Vec<Value> = ev[..ev.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
        let tokens: Vec<&str> = parsed.iter().filter_map(chunk_text).filter(|t| !t.is_empty()).collect();
        assert_eq!(tokens.len(), 12, "{path}: one chunk per token");
        assert!(tokens.iter().all(|t| t.split_whitespace().count() == 1));
        let finish: Vec<&Value> = parsed.iter().filter(|v| v["choices"][0]["finish_reason"].is_string()).collect();
        assert_eq!(finish.len(), 1);
        assert_eq!(finish[0]["choices"][0]["finish_reason"], "length");
        let usage = &parsed.last().unwrap()["usage"];
        assert_eq!((usage["prompt_tokens"].as_u64(), usage["completion_tokens"].as_u64()), (Some(prompt), Some(12)));
        assert_eq!(usage["total_tokens"], prompt + 12);

        // Whole, with max_completion_tokens preferred to max_tokens.
        let mut b = body.clone();
        b["max_completion_tokens"] = json!(5);
        b["max_tokens"] = json!(50);
        let v: Value =
            serde_json::from_slice(&post(&http, &url, &b).send().await.unwrap().bytes().await.unwrap()).unwrap();
        assert_eq!(
            (v["usage"]["prompt_tokens"].as_u64(), v["usage"]["completion_tokens"].as_u64()),
            (Some(prompt), Some(5))
        );
        let c = &v["choices"][0];
        let text = c["message"]["content"].as_str().or(c["text"].as_str()).unwrap();
        assert_eq!(text.split_whitespace().count(), 5);
        assert_eq!((c["finish_reason"].as_str(), v["model"].as_str()), (Some("length"), Some("sim-8b")));

        // No length given: the server's default; no usage unless asked.
        let mut b = body.clone();
        b["stream"] = json!(true);
        let ev = events(&post(&http, &url, &b).send().await.unwrap().text().await.unwrap());
        let chunks: Vec<Value> = ev[..ev.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
        assert_eq!(chunks.iter().filter_map(chunk_text).filter(|t| !t.is_empty()).count(), 7);
        assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    }
    let s = server.stats();
    assert_eq!((s.requests_finished, s.generation_tokens, s.prompt_tokens), (6, 2 * (12 + 5 + 7), 3 * 72 + 3 * 38));
    assert_eq!((s.running, s.waiting, s.kv_usage), (0, 0, 0.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_health_and_bad_requests() {
    // No chat template: with one, even an empty message is a prompt (the
    // template's own tokens), as it is to a real server.
    let mut cfg = config();
    cfg.engine.chat_template = ChatTemplate::None;
    let (base, _server, _stop) = start(cfg).await;
    let http = client();
    let v: Value =
        serde_json::from_slice(&http.get(format!("{base}/v1/models")).send().await.unwrap().bytes().await.unwrap())
            .unwrap();
    assert_eq!(v["data"][0]["id"], "sim-8b");
    assert_eq!(http.get(format!("{base}/health")).send().await.unwrap().text().await.unwrap(), "ok");
    let chat = format!("{base}/v1/chat/completions");
    let msg = |content: &str, extra: Value| {
        let mut b = json!({"messages": [{"role": "user", "content": content}]});
        b.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        b
    };
    for (body, needle) in [
        (msg("a b", json!({"max_tokens": 0})), "max_tokens is 0"),
        (msg("   ", json!({})), "prompt is empty"),
        (msg("a b", json!({"max_tokens": 200_000})), "context"),
        (json!({"messages": []}), "messages"),
    ] {
        let resp = post(&http, &chat, &body).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        assert!(v["error"]["message"].as_str().unwrap().contains(needle), "{needle}: {v}");
    }
    let resp = http.post(&chat).body("{nope").header("content-type", "application/json").send().await.unwrap();
    assert_eq!(resp.status(), 400);
}

/// A request for a billion tokens is refused at once, in the words
/// `estimate` uses, before anything is sized by it: the answer's token ids
/// alone would take 4 GB (they were built before the engine looked at the
/// length, and the server grew by gigabytes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_longer_than_the_context_is_refused_before_anything_is_built() {
    let (base, server, _stop) = start(config()).await;
    let http = client();
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1_000_000_000u32}),
        ),
        ("/v1/completions", json!({"prompt": "hi", "max_tokens": u32::MAX, "stream": true})),
        ("/v1/messages", json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1_000_000_000u32})),
    ] {
        let t0 = Instant::now();
        let resp = post(&http, format!("{base}{path}"), &body).timeout(Duration::from_secs(5)).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{path}");
        let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("exceed Llama-3.1-8B's context of 131072 tokens"), "{path}: {message}");
        assert!(message.contains("lower max_tokens"), "{message}");
        // Well under the seconds that building a billion ids takes.
        assert!(t0.elapsed() < Duration::from_secs(2), "{path}: {:?}", t0.elapsed());
    }
    // Nothing reached the engine.
    assert_eq!((server.stats().running, server.stats().waiting), (0, 0));
}

/// The JSON a request is answered with.
async fn answer(req: reqwest::RequestBuilder) -> Value {
    serde_json::from_slice(&req.send().await.unwrap().bytes().await.unwrap()).unwrap()
}

/// A prompt of token ids is one token an id, as vLLM counts it, on both
/// routes that take ids: 3,000 ids were answered as a 1-token prompt, and
/// 200,000 (past the 131,072-token context) were served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_of_token_ids_counts_one_token_an_id() {
    let (base, server, _stop) = start(config()).await;
    let http = client();
    let body = json!({"prompt": vec![5; 3_000], "max_tokens": 2});
    let v = answer(post(&http, format!("{base}/v1/completions"), &body)).await;
    assert_eq!(v["usage"]["prompt_tokens"], 3_000, "{v}");
    let v = answer(post(&http, format!("{base}/completion"), &json!({"prompt": vec![5; 3_000], "n_predict": 2}))).await;
    assert_eq!(v["tokens_evaluated"], 3_000, "{v}");
    for path in ["/v1/completions", "/completion"] {
        let body = json!({"prompt": vec![5; 200_000], "max_tokens": 2, "n_predict": 2});
        let resp = post(&http, format!("{base}{path}"), &body).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{path}");
        let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("200000 prompt + 2 output tokens exceed Llama-3.1-8B's context"), "{path}: {v}");
    }
    assert_eq!((server.stats().running, server.stats().waiting), (0, 0));
}

/// A long max_tokens beside a short chat is refused naming the prompt's
/// tokens as the template renders them, not its words ("1 prompt + 200000
/// output tokens" had been said of a 36-token chat).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_overflow_names_the_prompts_tokens() {
    let (base, _server, _stop) = start(config()).await;
    let http = client();
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 200_000});
    let resp = post(&http, format!("{base}/v1/chat/completions"), &body).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    let message = v["error"]["message"].as_str().unwrap_or_default();
    let prompt: u64 = message.split(" prompt + 200000 output tokens").next().unwrap().parse().unwrap_or(0);
    assert!(prompt > 1, "the rendered prompt's tokens: {message}");
}

/// A chat of more messages than the context has tokens is refused before
/// its messages are parsed: 1.9 million empty messages (a 62.7 MB body)
/// took the server to 1.7 GB parsing and rendering them, only for the
/// context check to refuse the prompt after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_messages_than_the_context_holds_are_refused_before_they_are_parsed() {
    let (base, server, _stop) = start(config()).await;
    let http = client();
    let messages = vec![json!({"role": "user", "content": ""}); 200_000];
    for path in ["/v1/chat/completions", "/v1/messages"] {
        let body = json!({"messages": messages, "max_tokens": 2});
        let resp = post(&http, format!("{base}{path}"), &body).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{path}");
        let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("200000 messages, more than Llama-3.1-8B's context of 131072 tokens holds"),
            "{path}: {v}"
        );
        assert!(message.contains("send fewer messages"), "{message}");
    }
    // As many as the context holds are parsed, rendered, and refused by the
    // context check as before (each renders to 5 tokens with Llama 3.1's template).
    let body = json!({"messages": vec![json!({"role": "user", "content": ""}); 131_072], "max_tokens": 2});
    let resp = post(&http, format!("{base}/v1/chat/completions"), &body).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert!(v["error"]["message"].as_str().unwrap_or_default().contains("prompt + 2 output tokens exceed"), "{v}");
    assert_eq!((server.stats().running, server.stats().waiting), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_serves_its_names_and_refuses_others_as_each_server_does() {
    let cfg = EngineServerConfig { more_model_names: vec!["lora-a".into()], ..config() };
    let (base, _server, _stop) = start(cfg).await;
    let http = client();
    let get = |path: &str| {
        let url = format!("{base}{path}");
        let http = http.clone();
        async move { serde_json::from_slice::<Value>(&http.get(url).send().await.unwrap().bytes().await.unwrap()).unwrap() }
    };
    let ids: Vec<Value> = get("/v1/models").await["data"].as_array().unwrap().iter().map(|m| m["id"].clone()).collect();
    assert_eq!(ids, [json!("sim-8b"), json!("lora-a")]);
    assert_eq!(get("/api/tags").await["models"][1]["name"], "lora-a");
    let question = json!([{"role": "user", "content": "a b"}]);
    // (path, body, status, where the message is, its words)
    let cases = [
        ("/v1/chat/completions", json!({"model": "lora-a", "messages": question, "max_tokens": 2}), 200, "", ""),
        ("/v1/chat/completions", json!({"messages": question, "max_tokens": 2}), 200, "", ""),
        (
            "/v1/chat/completions",
            json!({"model": "nope", "messages": question, "max_tokens": 2}),
            404,
            "/error/message",
            "The model `nope` does not exist.",
        ),
        (
            "/v1/messages",
            json!({"model": "nope", "messages": question, "max_tokens": 2}),
            404,
            "/error/type",
            "not_found_error",
        ),
        (
            "/api/chat",
            json!({"model": "nope", "messages": question, "stream": false}),
            404,
            "/error",
            "model 'nope' not found",
        ),
        // llama.cpp's server has one model and reads no name.
        ("/completion", json!({"model": "nope", "prompt": "a b", "n_predict": 2}), 200, "", ""),
    ];
    for (path, body, status, at, words) in cases {
        let r = post(&http, format!("{base}{path}"), &body).send().await.unwrap();
        assert_eq!(r.status().as_u16(), status, "{path} {body}");
        if status != 200 {
            let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
            assert_eq!(v.pointer(at).and_then(Value::as_str), Some(words), "{path}: {v}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chats_share_their_templates_start_in_the_prefix_cache() {
    // Llama 3.1's template opens every chat with the same 30 tokens (BOS,
    // the system block with its date lines, the user header): one full
    // block of 16 that every chat after the first finds cached, as a real
    // vLLM shows prefix-cache hits under prompts that share no text.
    let (base, server, _stop) = start(config()).await;
    let http = client();
    let mut seen = Vec::new();
    for salt in ["a", "b", "c"] {
        let body = json!({"messages": [{"role": "user", "content": words(40, salt)}], "max_tokens": 2});
        let v: Value = serde_json::from_slice(
            &post(&http, format!("{base}/v1/chat/completions"), &body).send().await.unwrap().bytes().await.unwrap(),
        )
        .unwrap();
        let u = &v["usage"];
        seen.push((
            u["prompt_tokens"].as_u64().unwrap(),
            u["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap(),
        ));
    }
    assert_eq!(seen, [(75, 0), (75, 16), (75, 16)]);
    let s = server.stats();
    assert_eq!((s.prefix_cache_queries, s.prefix_cache_hits), (3 * 75, 32));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_prefixes_show_as_prefix_cache_hits_in_metrics() {
    let (base, server, _stop) = start(config()).await;
    let http = client();
    let shared = words(200, "s");
    let mut cached = Vec::new();
    for (tail, stream) in [("a", false), ("b", false), ("c", true)] {
        let prompt = format!("{shared} {}", words(56, tail));
        let body = json!({"prompt": prompt, "max_tokens": 3, "stream": stream,
                          "stream_options": {"include_usage": true}});
        let r = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let text = r.text().await.unwrap();
        // Usage says what the prefix cache served, as vLLM's prompt_tokens_details does.
        let usage: Value = if stream {
            let usage = events(&text).into_iter().rev().nth(1).unwrap();
            serde_json::from_str::<Value>(&usage).unwrap()["usage"].clone()
        } else {
            serde_json::from_str::<Value>(&text).unwrap()["usage"].clone()
        };
        cached.push(usage["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap());
    }
    // The BOS and the 200 shared words fill 12 blocks of 16.
    assert_eq!(cached, [0, 192, 192]);
    let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    let labels = "{engine=\"0\",model_name=\"sim-8b\"}";
    // 257 tokens (the BOS and 256 words) looked up three times; the second
    // and third find the 12 full blocks of 16 inside the shared start.
    assert_eq!(metric(&text, &format!("vllm:prefix_cache_queries_total{labels}")), 771.0);
    assert_eq!(metric(&text, &format!("vllm:prefix_cache_hits_total{labels}")), 384.0);
    let s = server.stats();
    assert_eq!((s.prefix_cache_queries, s.prefix_cache_hits), (771, 384));
    assert_eq!(metric(&text, &format!("vllm:prompt_tokens_total{labels}")), 771.0);
    assert_eq!(metric(&text, &format!("vllm:generation_tokens_total{labels}")), 9.0);
    // vLLM's tokens per step: each request's prompt, whole, in the step of
    // its first token, and every token generated; one observation a step
    // (three requests one after another: a prefill and two decodes each).
    assert_eq!(metric(&text, &format!("vllm:iteration_tokens_total_sum{labels}")), 771.0 + 9.0);
    assert_eq!(metric(&text, &format!("vllm:iteration_tokens_total_count{labels}")), 9.0);
    let first = "vllm:iteration_tokens_total_bucket{engine=\"0\",model_name=\"sim-8b\",le=\"1.0\"}";
    assert_eq!(metric(&text, first), 6.0, "the decode steps made a token each");
    assert_eq!(
        metric(&text, "vllm:request_success_total{engine=\"0\",model_name=\"sim-8b\",finished_reason=\"length\"}"),
        3.0
    );
    assert_eq!(metric(&text, &format!("vllm:time_to_first_token_seconds_count{labels}")), 3.0);
    assert_eq!(metric(&text, &format!("vllm:inter_token_latency_seconds_count{labels}")), 6.0);
    assert_eq!(metric(&text, &format!("vllm:e2e_request_latency_seconds_count{labels}")), 3.0);
    assert_eq!(metric(&text, &format!("vllm:request_queue_time_seconds_count{labels}")), 3.0);
    for name in ["vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:time_to_first_token_seconds"] {
        assert!(text.contains(&format!("# HELP {name} ")) && text.contains(&format!("# TYPE {name} ")), "{name}");
    }
    assert_eq!(metric(&text, "goodput_sim_requests_total"), 3.0);
    // The speed, for a scraper to read the steps' lateness in the engine's time.
    assert_eq!(metric(&text, "goodput_sim_speed"), 10.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_prefix_cache_empties_the_cache_as_vllm_does() {
    // The same prompt three times: the second finds its prefix cached; after
    // POST /reset_prefix_cache the third finds nothing, and the hits counter
    // in /metrics does not move.
    let (base, _server, _stop) = start(config()).await;
    let http = client();
    let prompt = words(200, "r");
    let labels = "{engine=\"0\",model_name=\"sim-8b\"}";
    let hits = |text: &str| metric(text, &format!("vllm:prefix_cache_hits_total{labels}"));
    let mut cached = Vec::new();
    let mut hits_after = Vec::new();
    for reset in [false, false, true] {
        if reset {
            let r = http.post(format!("{base}/reset_prefix_cache")).send().await.unwrap();
            assert_eq!(r.status(), 200);
            // Only POST, as vLLM's route.
            assert_eq!(http.get(format!("{base}/reset_prefix_cache")).send().await.unwrap().status(), 405);
        }
        let body = json!({"prompt": prompt, "max_tokens": 3});
        let r = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        cached.push(v["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap());
        let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
        hits_after.push(hits(&text));
    }
    assert_eq!(cached[0], 0);
    assert!(cached[1] > 0, "the repeated prompt is served from the cache: {cached:?}");
    assert_eq!(cached[2], 0, "after the reset nothing is cached: {cached:?}");
    assert!(hits_after[1] > hits_after[0]);
    assert_eq!(hits_after[2], hits_after[1], "no hit after the reset: {hits_after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_parallel_replicas_each_serve_and_show_under_their_own_engine_label() {
    // Two replicas behind the prefix-aware router: prompts that share a
    // long start go to one replica (the later ones find it cached there);
    // an unrelated one, a miss, to the least-loaded replica: the other,
    // while a third of the shared prompts decodes on the first. (With
    // both idle a miss goes to the first, as the routers' least-loaded
    // takes the first on a tie.)
    let mut cfg = config();
    cfg.engine.dp = 2;
    cfg.engine.router = RouterPolicy::PrefixAware;
    let (base, server, _stop) = start(cfg).await;
    let http = client();
    let shared = words(200, "s");
    let completion = |prompt: String| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let body = json!({"prompt": prompt, "max_tokens": 3});
            let r = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
            assert_eq!(r.status(), 200);
            let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
            v["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap()
        }
    };
    let mut cached = vec![completion(format!("{shared} {}", words(56, "a"))).await];
    cached.push(completion(format!("{shared} {}", words(56, "b"))).await);
    // Held open, decoding, until the test ends.
    let long = json!({"prompt": format!("{shared} {}", words(56, "c")), "max_tokens": 20_000, "stream": true});
    let mut open = post(&http, format!("{base}/v1/completions"), &long).send().await.unwrap();
    assert!(open.chunk().await.unwrap().is_some());
    cached.push(completion(words(256, "z")).await);
    assert_eq!(cached, [0, 192, 0]);
    let replicas = server.replica_stats();
    assert_eq!(replicas.iter().map(|r| r.requests_finished).collect::<Vec<_>>(), [2, 1]);
    let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    let at = |name: &str, engine: u32| metric(&text, &format!("{name}{{engine=\"{engine}\",model_name=\"sim-8b\"}}"));
    assert_eq!((at("vllm:num_requests_running", 0), at("vllm:num_requests_running", 1)), (1.0, 0.0), "{text}");
    assert!(at("vllm:generation_tokens_total", 0) >= 7.0, "{text}");
    assert_eq!(at("vllm:generation_tokens_total", 1), 3.0, "{text}");
    assert_eq!((at("vllm:prefix_cache_hits_total", 0), at("vllm:prefix_cache_hits_total", 1)), (384.0, 0.0));
    // One HELP and TYPE a family, a series per replica.
    assert_eq!(text.matches("# TYPE vllm:num_requests_running gauge").count(), 1);
    assert_eq!(text.lines().filter(|l| l.starts_with("vllm:num_requests_running{")).count(), 2);
    drop(open);
}

/// SGLang's controller in front of a dense model's replicas, served: by
/// tokens, five short requests all go away from the replica holding a long
/// prompt, where the router (or the controller's round-robin) would have
/// split them; and once a long request has ended, its replica's snapshot
/// (it published on running out of work) shows it empty again, and the
/// first of four short ones goes back to it (without the snapshot, the
/// controller would still count the long prompt there and send all four to
/// the other). How the rest split depends on when the controller reads
/// the replicas' later snapshots, which a busy machine moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglangs_controller_sends_short_requests_away_from_a_replica_holding_a_long_one() {
    let served = |method: &'static str, long_ends: bool| async move {
        let mut cfg = config();
        cfg.engine.dp = 2;
        cfg.engine.scheduler = goodput_sim::engine::SchedulerPolicy::Sglang;
        cfg.engine.load_balance = method.parse().unwrap();
        let (base, _server, _stop) = start(cfg).await;
        let http = client();
        let body = |n: usize, salt: &str| json!({"prompt": words(n, salt), "max_tokens": 20_000, "stream": true});
        // Held open (each decodes for minutes of wall time) until the end.
        let mut open = Vec::new();
        let mut long = post(&http, format!("{base}/v1/completions"), &body(3000, "long"));
        if long_ends {
            long =
                post(&http, format!("{base}/v1/completions"), &json!({"prompt": words(3000, "long"), "max_tokens": 1}));
            assert!(long.send().await.unwrap().status().is_success());
        } else {
            let mut long = long.send().await.unwrap();
            assert!(long.chunk().await.unwrap().is_some());
            open.push(long);
        }
        // Its replica published after its prefill; the controller reads
        // 20 ms of the server's clock after its last read (2 ms of wall time).
        tokio::time::sleep(Duration::from_millis(100)).await;
        for k in 0..if long_ends { 4 } else { 5 } {
            let mut r = post(&http, format!("{base}/v1/completions"), &body(8, &format!("s{k}"))).send().await.unwrap();
            assert!(r.chunk().await.unwrap().is_some());
            open.push(r);
        }
        let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
        let running = |engine: u32| {
            metric(&text, &format!("vllm:num_requests_running{{engine=\"{engine}\",model_name=\"sim-8b\"}}"))
        };
        let mut split = [running(0), running(1)];
        split.sort_by(f64::total_cmp);
        drop(open);
        split
    };
    assert_eq!(served("total-tokens", false).await, [1.0, 5.0]);
    assert_eq!(served("round-robin", false).await, [3.0, 3.0]);
    let after = served("total-tokens", true).await;
    assert!(after[0] >= 1.0 && after[0] + after[1] == 4.0, "{after:?}");
}

/// vLLM's own balancer in front of a dense model's replicas
/// (`--internal-lb`, one API server), served: two short requests one after the other, the
/// first done before the second is sent, go one to each replica, the
/// balancer counting the first as waiting on its replica until it next
/// reads the counts (100 ms of the server's clock: 2 s of wall time at
/// 0.05×), where a router on live counts sends both to the first, idle
/// again. Once the interval has passed, the balancer reads the replicas'
/// counts (both idle, as each published on running out of work), and a
/// third request goes to the first again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllms_internal_balancer_counts_what_it_sent_until_it_reads_the_replicas_counts() {
    let served = |internal: bool| async move {
        let mut cfg = config();
        cfg.engine.dp = 2;
        cfg.engine.internal_lb = internal;
        cfg.engine.api_server_count = internal.then_some(1);
        cfg.speed = 0.05;
        let (base, server, _stop) = start(cfg).await;
        let http = client();
        let send = |k: usize| {
            let (http, base) = (http.clone(), base.clone());
            async move {
                let body = json!({"prompt": words(8, &format!("s{k}")), "max_tokens": 1});
                let r = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
                assert_eq!(r.status(), 200);
                r.text().await.unwrap();
            }
        };
        let started = std::time::Instant::now();
        send(0).await;
        send(1).await;
        let early = started.elapsed();
        let finished = || server.replica_stats().iter().map(|r| r.requests_finished).collect::<Vec<_>>();
        let two = finished();
        tokio::time::sleep(Duration::from_millis(2500)).await;
        send(2).await;
        (two, finished(), early)
    };
    let (two, three, _) = served(false).await;
    assert_eq!((two, three), (vec![2, 0], vec![3, 0]), "live counts: the first of two idle replicas");
    let (two, three, early) = served(true).await;
    // Both sent within the interval: nothing read between them.
    if early < Duration::from_millis(1900) {
        assert_eq!(two, [1, 1], "vLLM's: the first counted waiting until the next read");
    }
    assert_eq!(three.iter().sum::<u64>(), 3);
    assert_eq!(three[0], two[0] + 1, "read after the interval: both idle, the first");
}

/// Power-of-two on polled loads, served: between polls every request
/// goes to the replica that was lighter at the last poll. A first request
/// lands on either (the poll at the start saw none); after the next poll
/// (4 s of wall time at 10×), six more all go to the other replica, where
/// live counts would have split them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_of_two_on_polled_loads_sends_a_polls_interval_to_the_lighter_replica() {
    let mut cfg = config();
    cfg.engine.dp = 2;
    cfg.engine.router = RouterPolicy::PowerOfTwo;
    cfg.engine.router_poll_s = Some(40.0);
    // The server's clock starts between these two instants: its polls are
    // due 4 s apart from then.
    let started = Instant::now();
    let (base, _server, _stop) = start(cfg).await;
    let ready = Instant::now();
    let http = client();
    let long = |salt: &str| json!({"prompt": words(8, salt), "max_tokens": 20_000, "stream": true});
    // Held open (each decodes for minutes of wall time) until the test ends.
    let mut open = Vec::new();
    let mut first = post(&http, format!("{base}/v1/completions"), &long("a")).send().await.unwrap();
    assert!(first.chunk().await.unwrap().is_some());
    open.push(first);
    assert!(started.elapsed() < Duration::from_secs(4), "the first request before the second poll");
    tokio::time::sleep_until(ready + Duration::from_millis(4100)).await;
    for k in 0..6 {
        let mut r = post(&http, format!("{base}/v1/completions"), &long(&format!("b{k}"))).send().await.unwrap();
        assert!(r.chunk().await.unwrap().is_some());
        open.push(r);
    }
    // Routed after the poll at 4 s and, on any machine that answers six
    // requests in under four seconds, before the one at 8 s.
    assert!(started.elapsed() < Duration::from_secs(8), "six requests took past the next poll");
    let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    let running =
        |engine: u32| metric(&text, &format!("vllm:num_requests_running{{engine=\"{engine}\",model_name=\"sim-8b\"}}"));
    let mut split = [running(0), running(1)];
    split.sort_by(f64::total_cmp);
    assert_eq!(split, [1.0, 6.0], "{text}");
    drop(open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_aborts_its_request() {
    let (base, server, _stop) = start(config()).await;
    let http = client();
    // Streamed: read the first token, then drop the response.
    let body = json!({"prompt": words(10, "x"), "max_tokens": 20_000, "stream": true});
    let mut resp = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
    assert!(resp.chunk().await.unwrap().is_some());
    assert_eq!(server.stats().running, 1);
    drop(resp);
    eventually("the streamed request's abort", || server.stats().requests_aborted == 1).await;
    assert_eq!((server.stats().running, server.stats().kv_usage), (0, 0.0));

    // Whole: the client gives up waiting.
    let body = json!({"prompt": words(10, "y"), "max_tokens": 20_000});
    let r = post(&http, format!("{base}/v1/completions"), &body).timeout(Duration::from_millis(100)).send().await;
    assert!(r.is_err());
    eventually("the whole request's abort", || server.stats().requests_aborted == 2).await;
    let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    assert_eq!(
        metric(&text, "vllm:request_success_total{engine=\"0\",model_name=\"sim-8b\",finished_reason=\"abort\"}"),
        2.0
    );
    assert_eq!(server.stats().running, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_are_injected_and_counted() {
    let http = client();
    let faulty = |f: FaultConfig| EngineServerConfig { faults: FaultConfig { seed: 1, ..f }, ..config() };
    let body = json!({"prompt": words(8, "f"), "max_tokens": 10, "stream": true});

    let (base, server, _stop) = start(faulty(FaultConfig { error_rate: 1.0, ..Default::default() })).await;
    let resp = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
    assert_eq!(resp.status(), 500);
    assert_eq!(server.stats().requests_finished + server.stats().requests_aborted, 0);
    let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    assert_eq!(metric(&text, "goodput_sim_faults_injected_total{kind=\"http_error\"}"), 1.0);

    // Mid-stream error: half the tokens, an error event, and the rest aborted.
    let (base, server, _stop) = start(faulty(FaultConfig { stream_error_rate: 1.0, ..Default::default() })).await;
    let text = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap().text().await.unwrap();
    let ev = events(&text);
    assert_eq!(tokens(&ev[..ev.len() - 1]), 5, "{text}");
    assert!(ev.last().unwrap().contains("\"error\""), "{text}");
    eventually("the broken stream's abort", || server.stats().requests_aborted == 1).await;

    // Disconnect: the body breaks after half the tokens.
    let (base, server, _stop) = start(faulty(FaultConfig { disconnect_rate: 1.0, ..Default::default() })).await;
    let mut resp = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
    let mut got = String::new();
    let broke = loop {
        match resp.chunk().await {
            Ok(Some(b)) => got.push_str(&String::from_utf8_lossy(&b)),
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    assert!(broke, "{got}");
    assert_eq!(tokens(&events(&got)), 5, "{got}");
    eventually("the dropped stream's abort", || server.stats().requests_aborted == 1).await;

    // Stall: 300 ms simulated (30 ms at 10×) once, halfway; every token still comes.
    let stall = FaultConfig { stall_rate: 1.0, stall: Duration::from_millis(300), ..Default::default() };
    let (base, server, _stop) = start(faulty(stall)).await;
    let sent = Instant::now();
    let mut resp = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
    let mut stamps = Vec::new();
    let mut got = String::new();
    while let Some(b) = resp.chunk().await.unwrap() {
        stamps.push(Instant::now());
        got.push_str(&String::from_utf8_lossy(&b));
    }
    assert_eq!(tokens(&events(&got)), 10, "{got}");
    // The stream cannot end before the stall has passed; and the stall is
    // one gap, far longer than the others (0.8 ms unloaded), though
    // shortened by as much as the chunk before it was read late (27 ms was
    // seen with both cores kept busy).
    let whole = *stamps.last().unwrap() - sent;
    assert!(whole >= Duration::from_millis(30), "{whole:?}");
    let longest = stamps.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(longest >= Duration::from_millis(20), "{longest:?}");
    assert_eq!(server.stats().requests_finished, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_concurrent_streams_all_complete() {
    const N: usize = 2000;
    raise_open_file_limit((2 * N + 256) as _);
    let (base, server, _stop) = start(EngineServerConfig { speed: 20.0, ..config() }).await;
    #[allow(clippy::disallowed_methods)] // A test's own client of the simulator.
    let http = reqwest::Client::builder().no_proxy().pool_max_idle_per_host(0).build().unwrap();
    let url = format!("{base}/v1/chat/completions");
    let tasks: Vec<_> = (0..N)
        .map(|i| {
            let (http, url) = (http.clone(), url.clone());
            tokio::spawn(async move {
                let body = json!({
                    "messages": [{"role": "user", "content": words(8, &format!("u{i}-"))}],
                    "max_tokens": 4, "stream": true, "stream_options": {"include_usage": true},
                });
                let text = post(&http, &url, &body).send().await?.text().await?;
                Ok::<_, reqwest::Error>(events(&text))
            })
        })
        .collect();
    for t in tasks {
        let ev = t.await.unwrap().unwrap();
        assert_eq!(ev.last().map(String::as_str), Some("[DONE]"));
        let usage: Value = serde_json::from_str(&ev[ev.len() - 2]).unwrap();
        assert_eq!(usage["usage"]["completion_tokens"], 4);
    }
    let s = server.stats();
    assert_eq!((s.requests_finished, s.generation_tokens, s.requests_aborted), (N as u64, 4 * N as u64, 0));
    // They really ran side by side.
    assert!(s.max_batch_seqs >= 100, "{s:?}");
}

/// Slow clients, a slowloris: `n` connections to `base` of which half send
/// half a request head and the others nothing, and then wait.
async fn slow_clients(base: &str, n: usize) -> Vec<TcpStream> {
    let addr = base.trim_start_matches("http://");
    let mut socks = Vec::with_capacity(n);
    for i in 0..n {
        let mut s = TcpStream::connect(addr).await.unwrap();
        if i % 2 == 0 {
            s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Ty").await.unwrap();
        }
        socks.push(s);
    }
    socks
}

/// A short chat request, answered 200 by a server with room for it.
async fn answered(http: &reqwest::Client, base: &str, patience: Duration) -> reqwest::StatusCode {
    let body = json!({"messages": [{"role": "user", "content": "hello there"}], "max_tokens": 2});
    post(http, format!("{base}/v1/chat/completions"), &body).timeout(patience).send().await.unwrap().status()
}

/// Where a test's server logs, as lines.
fn log_lines() -> (Arc<Mutex<Vec<String>>>, goodput_sim::connections::Log) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    (lines, Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_owned())))
}

/// A slowloris no longer holds the server: more slow clients than its cap
/// are each closed once they have failed to send a request head in time
/// (made 1 s here), the cap is logged, and a normal request queued behind
/// them is answered. Before, a connection that sent half a head was held
/// for ever, and enough of them left the server answering nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_are_timed_out_within_a_cap_and_the_server_answers_again() {
    raise_open_file_limit(2048);
    let (lines, log) = log_lines();
    let limits = ConnectionLimits { head_timeout: Duration::from_secs(1), max_connections: 100, log: Some(log) };
    let (base, _server, _stop) = start_limited(config(), limits).await;
    let mut slow = slow_clients(&base, 300).await;
    let t0 = Instant::now();
    // Behind 300 slow clients, 100 at a time: it waits for a timeout at least.
    assert_eq!(answered(&client(), &base, Duration::from_secs(30)).await, 200);
    assert!(t0.elapsed() >= Duration::from_millis(500), "{:?}", t0.elapsed());
    // The first slow clients were closed by the server, not left hanging.
    for s in slow.iter_mut().take(20) {
        let mut b = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_secs(10), s.read(&mut b)).await.expect("still open");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }
    let said = lines.lock().unwrap().join("\n");
    assert!(said.contains("100 connections are open, the most this server takes"), "{said}");
}

/// A body that trickles in past the head's time is answered 408 and its
/// connection closed (one sent a byte at a time had held it for ever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_trickles_past_the_time_limit_is_answered_408() {
    let limits = ConnectionLimits { head_timeout: Duration::from_millis(300), ..ConnectionLimits::default() };
    let (base, _server, _stop) = start_limited(config(), limits).await;
    // Before the connection: the server's time runs from when it took it
    // (taken after the head was written, the bound failed by a fraction
    // of a millisecond on a busy machine).
    let t0 = Instant::now();
    let mut sock = TcpStream::connect(base.trim_start_matches("http://")).await.unwrap();
    sock.write_all(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{").await.unwrap();
    let mut answer = Vec::new();
    let read = async {
        let mut b = [0u8; 1024];
        loop {
            tokio::select! {
                n = sock.read(&mut b) => match n {
                    Ok(0) | Err(_) => break,
                    Ok(n) => answer.extend_from_slice(&b[..n]),
                },
                // Bytes keep coming, too slowly.
                () = tokio::time::sleep(Duration::from_millis(100)) => { let _ = sock.write_all(b" ").await; }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read).await.expect("the trickling body held the connection");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""code":408"#), "a JSON error: {answer}");
    assert!(t0.elapsed() >= Duration::from_millis(300), "{:?}", t0.elapsed());
}

/// A body past the limit, or one that cannot be read, is answered with the
/// route's JSON error, as every other refusal and vLLM's are: it had been
/// plain text ("the request body is larger than 64 MiB, or was cut short"),
/// a 413 for a malformed one too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_too_large_or_malformed_is_answered_with_a_json_error() {
    let (base, _server, _stop) = start(config()).await;
    let ask = |request: Vec<u8>| {
        let addr = base.trim_start_matches("http://").to_owned();
        async move {
            let mut sock = TcpStream::connect(addr).await.unwrap();
            sock.write_all(&request).await.unwrap();
            // The answer, read to the end its Content-Length gives.
            let mut answer = Vec::new();
            let read = async {
                let mut b = [0u8; 4096];
                loop {
                    let n = sock.read(&mut b).await.unwrap();
                    answer.extend_from_slice(&b[..n]);
                    let text = String::from_utf8_lossy(&answer);
                    if let Some((head, body)) = text.split_once("\r\n\r\n") {
                        let head = head.to_ascii_lowercase();
                        let len = head.split("content-length: ").nth(1).and_then(|l| l.lines().next());
                        if n == 0 || len.is_some_and(|l| l.parse::<usize>().unwrap() <= body.len()) {
                            return (head, body.to_owned());
                        }
                    }
                    assert!(n > 0, "closed before its answer: {text}");
                }
            };
            let (head, body) = tokio::time::timeout(Duration::from_secs(10), read).await.expect("an answer");
            let status: u16 = head[9..12].parse().unwrap();
            assert!(head.contains("content-type: application/json"), "{head}");
            // Refused before any route, it still says which server answered.
            assert!(head.contains("server: goodput-sim"), "{head}");
            (status, serde_json::from_str::<Value>(&body).unwrap_or_else(|e| panic!("{e}: {body}")))
        }
    };
    // Past 64 MiB by its Content-Length: refused before it is read.
    let big = format!("POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{{", 65 << 20);
    let (status, body) = ask(big.into_bytes()).await;
    assert_eq!(status, 413);
    assert_eq!(body["error"]["code"], 413);
    assert_eq!(body["error"]["message"], "the request body is larger than 64 MiB");
    // On Anthropic's route, Anthropic's shape.
    let big = format!("POST /v1/messages HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{{", 65 << 20);
    let (status, body) = ask(big.into_bytes()).await;
    assert_eq!((status, body["type"].as_str()), (413, Some("error")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("larger than 64 MiB"), "{body}");
    // A chunk size that is not hexadecimal.
    let bad = b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nhello\r\n0\r\n\r\n";
    let (status, body) = ask(bad.to_vec()).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], 400);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("the request body cannot be read (") && message.contains("chunk"), "{message}");
}

/// Below the cap, slow clients take nothing from the others: a request is
/// answered at once while they hang, and again after they go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_answered_while_slow_clients_hang_and_after_they_go() {
    raise_open_file_limit(2048);
    let limits = ConnectionLimits { head_timeout: Duration::from_secs(60), max_connections: 1000, log: None };
    let (base, _server, _stop) = start_limited(config(), limits).await;
    let mut slow = slow_clients(&base, 300).await;
    let http = client();
    assert_eq!(answered(&http, &base, Duration::from_secs(5)).await, 200);
    // They are still open: within their time, nothing closes them.
    let mut b = [0u8; 64];
    assert!(tokio::time::timeout(Duration::from_millis(200), slow[0].read(&mut b)).await.is_err());
    drop(slow);
    assert_eq!(answered(&http, &base, Duration::from_secs(5)).await, 200);
}

/// Two sockets a stream (client and server are in this process), more
/// than the common default soft limit of 1024.
#[cfg(unix)]
fn raise_open_file_limit(want: libc::rlim_t) {
    let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain system calls on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < want {
            l.rlim_cur = want.min(l.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

#[cfg(not(unix))]
fn raise_open_file_limit(_want: u64) {}

/// A host that holds the engine's thread (a busy machine) makes its steps
/// late against the engine's timeline, and `/metrics` says by how much
/// (`goodput_sim_step_lateness_seconds`), so a diagnosis can tell the
/// simulator's lateness from the engine's.
#[tokio::test(flavor = "current_thread")]
async fn a_held_thread_shows_as_step_lateness() {
    let (base, _server, _stop) = start(config()).await;
    let http = client();
    let body = json!({"model": "sim-8b", "prompt": words(64, "w"), "max_tokens": 200, "stream": true});
    let request = tokio::spawn(post(&http, format!("{base}/v1/completions"), &body).send());
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The only thread held for 400 ms: every step due meanwhile is late.
    std::thread::sleep(Duration::from_millis(400));
    let resp = request.await.unwrap().unwrap();
    assert!(resp.status().is_success());
    let _ = resp.bytes().await.unwrap();
    let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    let bucket = |le: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with("goodput_sim_step_lateness_seconds_bucket") && l.contains(&format!("le=\"{le}\"")))
            .unwrap_or_else(|| panic!("no bucket {le}:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (under_200ms, all) = (bucket("0.2"), bucket("+Inf"));
    assert!(all > under_200ms, "a step 200 ms late or more is counted: {under_200ms} of {all}");
}

/// Sends `bodies` to `url` together: each answer (status 200) and its time
/// from the send to its end, in the order they ended.
async fn sent_together(url: String, bodies: Vec<serde_json::Value>) -> Vec<(Duration, String)> {
    let http = client();
    let t0 = Instant::now();
    let sends: Vec<_> = bodies
        .into_iter()
        .map(|body| {
            let (http, url) = (http.clone(), url.clone());
            tokio::spawn(async move {
                let resp = post(&http, &url, &body).send().await.unwrap();
                assert_eq!(resp.status(), 200);
                let text = resp.text().await.unwrap();
                (t0.elapsed(), text)
            })
        })
        .collect();
    let mut done = Vec::new();
    for s in sends {
        done.push(s.await.unwrap());
    }
    done.sort();
    done
}

/// With `frontend_serial_us`, the front end takes requests one at a time:
/// three sent together reach the engine one slot after another, so the k-th
/// to finish cannot finish before k slots have passed.
#[tokio::test]
async fn a_serial_front_end_takes_requests_sent_together_one_at_a_time() {
    let mut cfg = config();
    // 2 s of simulated work a request: 200 ms on the wall at speed 10.
    cfg.engine.calibration.frontend_serial_us = 2_000_000.0;
    let (base, _server, _stop) = start(cfg).await;
    let bodies = (0..3).map(|i| json!({"prompt": words(8, &format!("s{i}")), "max_tokens": 1})).collect();
    let done: Vec<Duration> =
        sent_together(format!("{base}/v1/completions"), bodies).await.into_iter().map(|d| d.0).collect();
    for (k, t) in done.iter().enumerate() {
        assert!(*t >= Duration::from_millis(200 * (k as u64 + 1)), "finish {k} at {t:?}: {done:?}");
    }
}

/// With `frontend_serial_us_per_output_token`, the front end streams one
/// token at a time, every stream's: two streams of three tokens sent
/// together cannot both end before six tokens' work has passed, nor either
/// before its own three.
#[tokio::test]
async fn a_front_end_that_works_on_each_output_token_streams_them_one_at_a_time() {
    let mut cfg = config();
    // 1 s of simulated work a token: 100 ms on the wall at speed 10.
    cfg.engine.calibration.frontend_serial_us_per_output_token = 1_000_000.0;
    let (base, _server, _stop) = start(cfg).await;
    let bodies =
        (0..2).map(|i| json!({"prompt": words(8, &format!("o{i}")), "max_tokens": 3, "stream": true})).collect();
    let done = sent_together(format!("{base}/v1/completions"), bodies).await;
    assert!(done.iter().all(|(_, text)| tokens(&events(text)) == 3));
    assert!(done[0].0 >= Duration::from_millis(300), "{done:?}");
    assert!(done[1].0 >= Duration::from_millis(600), "{done:?}");
}

/// Streams a completion of five tokens from `base` (checking it), then
/// reads its `/metrics`.
async fn five_tokens_then_metrics(http: &reqwest::Client, base: &str, body: &serde_json::Value) -> String {
    let r = post(http, format!("{base}/v1/completions"), body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(tokens(&events(&r.text().await.unwrap())), 5);
    http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap()
}

/// Pools of two-stage instances, then of expert-parallel groups: the
/// decode instance streams the answer, and the layout gauge counts both
/// pools' instances and their ranks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disaggregated_pools_of_pipeline_and_expert_parallel_instances_serve_and_say_so() {
    let mut cfg = config();
    cfg.engine.pp = 2;
    cfg.engine.pd = Some(goodput_sim::engine::Disaggregation::parse("1:1").unwrap());
    cfg.engine.validate().unwrap();
    assert_eq!(cfg.engine.gpus(), 4);
    let (base, _server, _stop) = start(cfg).await;
    let http = client();
    let body = json!({"prompt": words(255, "pp-"), "max_tokens": 5, "stream": true});
    let text = five_tokens_then_metrics(&http, &base, &body).await;
    // Each instance's series say its role (engine 0 is the prefill pool's).
    let role = |engine: u32| if engine == 0 { "prefill" } else { "decode" };
    let at = |name: &str, engine: u32| {
        metric(&text, &format!("{name}{{engine=\"{engine}\",model_name=\"sim-8b\",role=\"{}\"}}", role(engine)))
    };
    assert_eq!(at("vllm:nixl_xfer_time_seconds_count", 1), 1.0);
    assert_eq!(
        metric(&text, "goodput_engine_parallel_info{tp=\"1\",pp=\"2\",dp=\"2\",ep=\"1\",ranks=\"1\"}"),
        1.0,
        "{text}"
    );
    // Pools of expert-parallel groups: two ranks an instance, four in all.
    let mut engine = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Bf16).unwrap();
    engine.ep = 2;
    engine.pd = Some(goodput_sim::engine::Disaggregation::parse("1:1").unwrap());
    let cfg = EngineServerConfig { speed: 10.0, model_name: "sim-moe".into(), ..EngineServerConfig::new(engine) };
    let (base, server, _stop) = start(cfg).await;
    let text = five_tokens_then_metrics(&http, &base, &body).await;
    assert_eq!(server.replica_stats().len(), 2);
    assert_eq!(
        metric(&text, "vllm:nixl_xfer_time_seconds_count{engine=\"1\",model_name=\"sim-moe\",role=\"decode\"}"),
        1.0
    );
    assert_eq!(
        metric(&text, "goodput_engine_parallel_info{tp=\"1\",pp=\"1\",dp=\"4\",ep=\"2\",ranks=\"2\"}"),
        1.0,
        "{text}"
    );
    // A decode pool of its own TP: its instance streams the answer, and
    // the gauge names both TPs.
    let mut cfg = config();
    cfg.engine.pd = Some(goodput_sim::engine::Disaggregation::parse("1:1xTP2").unwrap());
    cfg.engine.validate().unwrap();
    assert_eq!(cfg.engine.gpus(), 3);
    let (base, _server, _stop) = start(cfg).await;
    let text = five_tokens_then_metrics(&http, &base, &body).await;
    assert_eq!(
        metric(&text, "vllm:nixl_xfer_time_seconds_count{engine=\"1\",model_name=\"sim-8b\",role=\"decode\"}"),
        1.0
    );
    assert_eq!(
        metric(&text, "goodput_engine_parallel_info{tp=\"1\",pp=\"1\",dp=\"2\",ep=\"1\",ranks=\"1\",decode_tp=\"2\"}"),
        1.0,
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disaggregated_pools_move_the_kv_and_export_vllms_nixl_histogram() {
    // One prefill and one decode instance on a 1 Gb/s link: a 256-token
    // prompt's KV (33.5 MB) takes 268 ms of simulated time, 27 ms here.
    let mut cfg = config();
    cfg.engine.pd = Some(goodput_sim::engine::Disaggregation {
        link_gbps: Some(1.0),
        ..goodput_sim::engine::Disaggregation::parse("1:1").unwrap()
    });
    let link = goodput_sim::engine::KvLink::new(&cfg.engine).unwrap();
    let transfer = link.transfer_time(256).div_f64(cfg.speed);
    let (base, server, _stop) = start(cfg).await;
    let http = client();
    let mut tasks = Vec::new();
    for i in 0..4 {
        let (http, base) = (http.clone(), base.clone());
        tasks.push(tokio::spawn(async move {
            // 255 words and the BOS: 256 prompt tokens.
            let body = json!({"prompt": words(255, &format!("p{i}-")), "max_tokens": 5, "stream": i % 2 == 0});
            let sent = Instant::now();
            let r = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
            assert_eq!(r.status(), 200);
            let text = r.text().await.unwrap();
            (sent.elapsed(), text)
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        let (took, text) = t.await.unwrap();
        assert!(took >= transfer, "request {i} answered in {took:?}, before its KV could cross ({transfer:?})");
        if i % 2 == 0 {
            assert_eq!(tokens(&events(&text)), 5, "{text}");
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                (v["usage"]["prompt_tokens"].as_u64(), v["usage"]["completion_tokens"].as_u64()),
                (Some(256), Some(5))
            );
        }
    }
    let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    // Each instance's series say its role (engine 0 is the prefill pool's).
    let role = |engine: u32| if engine == 0 { "prefill" } else { "decode" };
    let at = |name: &str, engine: u32| {
        metric(&text, &format!("{name}{{engine=\"{engine}\",model_name=\"sim-8b\",role=\"{}\"}}", role(engine)))
    };
    // The decode instance (engine 1) took every transfer; the histogram is vLLM's.
    assert_eq!(text.matches("# TYPE vllm:nixl_xfer_time_seconds histogram").count(), 1);
    assert_eq!((at("vllm:nixl_xfer_time_seconds_count", 0), at("vllm:nixl_xfer_time_seconds_count", 1)), (0.0, 4.0));
    let sum = at("vllm:nixl_xfer_time_seconds_sum", 1);
    assert!(sum >= 4.0 * transfer.as_secs_f64(), "{sum} < 4 × {transfer:?}");
    // The client's streams are the decode instance's: its TTFT histogram
    // counts every request, the prefill instance's none; the prefill
    // instance made one token a request.
    assert_eq!(
        (at("vllm:time_to_first_token_seconds_count", 0), at("vllm:time_to_first_token_seconds_count", 1)),
        (0.0, 4.0)
    );
    assert_eq!((at("vllm:generation_tokens_total", 0), at("vllm:generation_tokens_total", 1)), (4.0, 20.0));
    // Once the transfers are done, the prefill instance holds no blocks.
    eventually("the prefill instance's blocks freed", || {
        let s = &server.replica_stats()[0];
        s.kv_blocks_free == s.kv_blocks_total
    })
    .await;
    // A prompt sent again finds its blocks in the prefill instance's prefix
    // cache: 15 of its 16 blocks (the last token is always computed).
    let body = json!({"prompt": words(255, "p1-"), "max_tokens": 2});
    let r = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64(), Some(240), "{v}");
    // The decode instance holds those 15 blocks too: only the last 16
    // tokens' KV crossed, a sixteenth of the first time's.
    let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    let again =
        metric(&text, "vllm:nixl_xfer_time_seconds_sum{engine=\"1\",model_name=\"sim-8b\",role=\"decode\"}") - sum;
    let rest = link.transfer_time(16).div_f64(10.0).as_secs_f64();
    assert!((again - rest).abs() < 1e-6 && again < 0.1 * transfer.as_secs_f64(), "{again} s against {rest} s");
}

#[tokio::test]
async fn expert_and_pipeline_parallel_engines_serve_and_say_their_layout_in_metrics() {
    // Qwen3-30B-A3B with its experts over two data-parallel ranks (EP 2) in
    // two pipeline stages: one engine for the group, one engine label.
    let mut engine = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Bf16).unwrap();
    engine.dp = 2;
    engine.ep = 2;
    engine.pp = 2;
    let cfg = EngineServerConfig { speed: 10.0, model_name: "sim-moe".into(), ..EngineServerConfig::new(engine) };
    let (base, server, _stop) = start(cfg).await;
    let http = client();
    let body = json!({"prompt": words(64, "m"), "max_tokens": 4});
    let r = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(server.replica_stats().len(), 1);
    let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    assert_eq!(metric(&text, "vllm:generation_tokens_total{engine=\"0\",model_name=\"sim-moe\"}"), 4.0);
    assert!(!text.contains("engine=\"1\""), "{text}");
    assert_eq!(
        metric(&text, "goodput_engine_parallel_info{tp=\"1\",pp=\"2\",dp=\"2\",ep=\"2\",ranks=\"2\"}"),
        1.0,
        "{text}"
    );
    // Its four GPUs (two stages of two ranks) each have an energy counter
    // and an H100's power limit (700 W) as a DCGM exporter gives them, the
    // limit ten times the TDP at speed 10, as the counter runs ten times as fast.
    for gpu in 0..4 {
        let labels = format!("{{gpu=\"{gpu}\",device=\"nvidia{gpu}\",modelName=\"H100 SXM\"}}");
        assert_eq!(metric(&text, &format!("DCGM_FI_DEV_POWER_MGMT_LIMIT{labels}")), 7000.0, "{text}");
        assert!(metric(&text, &format!("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{labels}")) > 0.0, "{text}");
    }
    assert!(!text.contains("gpu=\"4\""), "{text}");
    // The plain engine says nothing of it.
    let (base, _server, _stop) = start(config()).await;
    let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(!text.contains("goodput_engine_parallel_info"));
}

/// The GPUs' energy counters (DCGM's names) run on the power model: idle,
/// each GPU draws its idle power, S times as fast at `--speed` S, between
/// any two scrapes; serving, more. Their power is the mean since the last
/// scrape: idle, the idle watts times S exactly. And the cache's size is
/// in vLLM's `cache_config_info`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gpus_energy_counters_follow_the_power_model() {
    let mut engine = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap();
    engine.tp = 2;
    let idle_w = engine.gpu.idle_w;
    let cfg = EngineServerConfig { speed: 10.0, model_name: "sim-8b".into(), ..EngineServerConfig::new(engine) };
    let (base, server, _stop) = start(cfg).await;
    let http = client();
    let energy =
        |text: &str, gpu: u32| metric(text, &format!("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"{gpu}\",")) / 1e3;
    // Each scrape's text is made between its request's sending and its
    // answer's arrival: the joules between two are bounded by those times.
    let scrape = || async {
        let sent = Instant::now();
        let text = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
        (sent, text, Instant::now())
    };
    let (sent1, first, got1) = scrape().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (sent2, second, got2) = scrape().await;
    for gpu in 0..2 {
        let drawn = energy(&second, gpu) - energy(&first, gpu);
        let (least, most) = ((sent2 - got1).as_secs_f64(), (got2 - sent1).as_secs_f64());
        // The counter's whole millijoules.
        let slack = 2e-3;
        assert!(
            drawn >= idle_w * 10.0 * least - slack && drawn <= idle_w * 10.0 * most + slack,
            "GPU {gpu}: {drawn} J idle over {least}–{most} s at speed 10"
        );
    }
    assert!(!second.contains("gpu=\"2\""), "two GPUs for TP 2: {second}");
    let power = |text: &str, gpu: u32| metric(text, &format!("DCGM_FI_DEV_POWER_USAGE{{gpu=\"{gpu}\","));
    for gpu in 0..2 {
        let watts = power(&second, gpu);
        assert!((watts / (idle_w * 10.0) - 1.0).abs() < 1e-3, "GPU {gpu}: {watts} W idle at speed 10\n{second}");
    }
    // The cache's size as vLLM gives it, in its info metric's labels.
    let blocks = server.replica_stats()[0].kv_blocks_total;
    let info = format!("vllm:cache_config_info{{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"True\",engine=\"0\",gpu_memory_utilization=\"0.9\",num_gpu_blocks=\"{blocks}\"}} 1.0");
    assert!(blocks > 0 && second.lines().any(|l| l == info), "{info}\n{second}");
    // Serving, the GPUs draw more than idle over the same time.
    let (sent3, before, _) = scrape().await;
    let body = json!({"prompt": words(2000, "e"), "max_tokens": 256});
    let r = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let (_, after, got4) = scrape().await;
    let drawn = energy(&after, 0) - energy(&before, 0);
    let idle_most = idle_w * 10.0 * (got4 - sent3).as_secs_f64();
    assert!(drawn > idle_most, "{drawn} J serving against at most {idle_most} J idle");
    assert!(power(&after, 0) > idle_w * 10.0, "{} W serving\n{after}", power(&after, 0));
}

/// A PNG header may claim any size: 4294967295 × 4294967295 pixels is 2.3e16
/// tokens, and building their placeholder ids before the context check
/// aborted the server ("memory allocation of 94116042244224552 bytes
/// failed"); 1,000,000 × 1,000,000 took 5 GB before it was refused. Each
/// is refused at once naming the image and its size, and the server
/// serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_that_claims_more_than_the_context_is_refused_and_the_server_serves_on() {
    use base64::prelude::{Engine as _, BASE64_STANDARD};
    let (base, server, _stop) = start(config()).await;
    let http = client();
    let png = |w: u32, h: u32| {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 2, 0, 0, 0]);
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", BASE64_STANDARD.encode(b))}})
    };
    let chat = |images: Vec<Value>| {
        let mut content = vec![json!({"type": "text", "text": "what"})];
        content.extend(images);
        json!({"messages": [{"role": "user", "content": content}], "max_tokens": 2})
    };
    let url = format!("{base}/v1/chat/completions");
    for (images, says) in [
        (
            vec![png(u32::MAX, u32::MAX)],
            "image 1 of the request is 4294967295×4294967295 pixels by its header: 23529010561056102 tokens, more \
             than Llama-3.1-8B's context of 131072 tokens; send a smaller image",
        ),
        (
            vec![png(64, 64), png(1_000_000, 1_000_000)],
            "image 2 of the request is 1000000×1000000 pixels by its header: 1275561227 tokens",
        ),
        // Each within the context, together past it.
        (vec![png(5_000, 5_000); 5], "exceed Llama-3.1-8B's context of 131072 tokens"),
    ] {
        let t0 = Instant::now();
        let resp = post(&http, &url, &chat(images)).timeout(Duration::from_secs(10)).send().await.unwrap();
        assert_eq!(resp.status(), 400);
        let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{says}: {v}");
        assert!(t0.elapsed() < Duration::from_secs(2), "refused at once: {:?}", t0.elapsed());
    }
    // Still serving: an image that fits is answered, its tokens counted.
    let v = answer(post(&http, &url, &chat(vec![png(56, 56)]))).await;
    assert_eq!(v["usage"]["completion_tokens"], 2, "{v}");
    assert_eq!(v["usage"]["prompt_tokens"], 35 + 1 + 4 + 2, "the template, the word, 2×2 tokens and the markers");
    assert_eq!((server.stats().running, server.stats().waiting), (0, 0));
}

/// Unknown paths and methods are answered with JSON errors, as the fixed
/// profile answers them: the engine's had empty bodies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_and_methods_get_json_errors() {
    let (base, _server, _stop) = start(config()).await;
    let http = client();
    for (resp, status, message) in [
        (http.get(format!("{base}/nope")).send().await.unwrap(), 404, "no route for /nope"),
        (http.post(format!("{base}/v1/nope")).send().await.unwrap(), 404, "no route for /v1/nope"),
        (http.get(format!("{base}/v1/chat/completions")).send().await.unwrap(), 405, "method not allowed: use POST"),
        (http.post(format!("{base}/v1/models")).send().await.unwrap(), 405, "method not allowed: use GET,HEAD"),
    ] {
        assert_eq!(resp.status(), status, "{message}");
        assert_eq!(resp.headers()["server"], "goodput-sim");
        assert_eq!(resp.headers()["content-type"], "application/json");
        if status == 405 {
            assert!(resp.headers().contains_key("allow"), "{message}");
        }
        let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        assert_eq!((v["error"]["message"].as_str(), v["error"]["code"].as_u64()), (Some(message), Some(status as u64)));
    }
    // On Anthropic's route, Anthropic's shape.
    let resp = http.get(format!("{base}/v1/messages")).send().await.unwrap();
    let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(
        (v["type"].as_str(), v["error"]["message"].as_str()),
        (Some("error"), Some("method not allowed: use POST"))
    );
}

/// Prompts and messages of the wrong shape are refused over HTTP naming
/// the element, and prompts of ids longer than the context are refused for
/// their length, all before anything is built.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_shapes_are_refused_naming_the_element() {
    let (base, server, _stop) = start(config()).await;
    let http = client();
    for (path, body, says) in [
        // vLLM refuses it; it had been taken, the minimum ignored.
        (
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "a"}], "max_tokens": 4, "min_tokens": 9}),
            "min_tokens must be less than or equal to max_tokens=4, got 9",
        ),
        ("/v1/completions", json!({"prompt": [5, -1], "max_tokens": 2}), "prompt[1] is -1: "),
        ("/v1/completions", json!({"prompt": {}, "max_tokens": 2}), "prompt is an empty object: "),
        ("/completion", json!({"prompt": [[7, 1.5]], "n_predict": 2}), "prompt[0][1] is 1.5: "),
        ("/v1/chat/completions", json!({"messages": ["hi"]}), "messages[0] is \"hi\": "),
        ("/v1/chat/completions", json!({"messages": [{"role": "wizard", "content": "a"}]}), "messages[0].role is "),
        ("/v1/embeddings", json!({"input": [[1, -2]]}), "\"input\"[0][1] is -2: "),
        ("/v1/completions", json!({"prompt": vec![0; 140_000], "max_tokens": 2}), "140000 prompt + 2 output tokens"),
        // A pooling input alone must fit: it had been told of "1 output
        // tokens" and max_tokens, a field the route has not.
        (
            "/v1/embeddings",
            json!({"input": vec![0; 140_000]}),
            "This model's maximum context length is 131072 tokens. However, you requested 140001 tokens in the \
             input for embedding generation.",
        ),
    ] {
        let resp = post(&http, format!("{base}{path}"), &body).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{path} {says}");
        let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with(says), "{path}: {says}: {v}");
    }
    assert_eq!((server.stats().running, server.stats().waiting), (0, 0));
}

/// A prompt that fits the decode pool's cache but not a prefill instance's
/// is refused naming the prefill pool, its cache and the request's own
/// max_tokens: the prefill instance's refusal had called its 8,128 tokens
/// the engine's (the banner says 138,784) and its one token the request's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_too_long_for_the_prefill_pool_is_refused_naming_it() {
    let engine = EngineConfig::from_names("llama-3.1-8b", "l4", Precision::Bf16).unwrap();
    let mut cfg = EngineServerConfig { speed: 10.0, model_name: "sim-8b".into(), ..EngineServerConfig::new(engine) };
    cfg.engine.pd = Some(goodput_sim::engine::Disaggregation::parse("2xTP1:1xTP2").unwrap());
    cfg.engine.validate().unwrap();
    let (base, server, _stop) = start(cfg).await;
    let decode = server.capacity().tokens();
    let http = client();
    // 40,000 words: more than one L4's cache in BF16 (about 27,900
    // tokens), less than the decode instance's over two.
    let body = json!({"prompt": words(40_000, "w"), "max_tokens": 5});
    let resp = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message
            .starts_with("the 40001-token prompt (max_tokens 5) needs more KV cache than a prefill instance holds: "),
        "{message}"
    );
    assert!(message.contains(&format!("tokens at TP 1 (a decode instance's holds {decode})")), "{message}");
    assert!(message.contains("(e.g. --pd 2xTP2:1xTP2)"), "{message}");
    // A prompt that fits is served.
    let body = json!({"prompt": words(200, "w"), "max_tokens": 5});
    let v = answer(post(&http, format!("{base}/v1/completions"), &body)).await;
    assert_eq!(v["usage"]["completion_tokens"], 5, "{v}");
}

/// A scripted answer (`--answers`) that ends at its last word before
/// `max_tokens` finishes as `stop` (`end_turn` for Messages), streamed and
/// whole; one `max_tokens` cuts, `length`. Every one had said `length`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_answer_that_ends_on_its_own_says_stop() {
    let answers = goodput_sim::answers::Answers::from_jsonl(r#"{"prompt":"capital?","reference":"Paris is it"}"#);
    let mut cfg = config();
    cfg.faults = FaultConfig { answers: Some(Arc::new(answers.unwrap())), ..Default::default() };
    let (base, _server, _stop) = start(cfg).await;
    let http = client();
    for (max_tokens, want) in [(64, "stop"), (2, "length")] {
        let body = json!({"prompt": "capital?", "max_tokens": max_tokens});
        let v = answer(post(&http, format!("{base}/v1/completions"), &body)).await;
        assert_eq!(v["choices"][0]["finish_reason"], want, "{v}");
        let body = json!({"prompt": "capital?", "max_tokens": max_tokens, "stream": true});
        let text = post(&http, format!("{base}/v1/completions"), &body).send().await.unwrap().text().await.unwrap();
        assert!(text.contains(&format!("\"finish_reason\":\"{want}\"")), "{text}");
        let body = json!({"messages": [{"role": "user", "content": "capital?"}], "max_tokens": max_tokens});
        let v = answer(post(&http, format!("{base}/v1/messages"), &body)).await;
        assert_eq!(v["stop_reason"], if want == "stop" { "end_turn" } else { "max_tokens" }, "{v}");
    }
}
