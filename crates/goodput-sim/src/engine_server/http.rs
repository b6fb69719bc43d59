//! The router and the generation handler: parses a request, hands it to
//! the driver, and answers whole or streamed.

use super::progress::{Command, Progress, Ticket, Update};
use super::server::EngineServer;
use super::stream::TokenStream;
use crate::clock::sleep_until;
use crate::engine::{Error, Prompt};
use crate::faults::Fault;
use crate::openai::{
    error_response, info_body, models_body, output_ids, tags_body, unix_now, ChunkWriter, GenerationRequest, Route,
    Usage,
};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// The router: the generation routes (OpenAI's, Anthropic Messages,
/// Ollama's), `/v1/models` and `/api/tags`, `/health`, `/metrics`.
pub fn app(state: Arc<EngineServer>) -> Router {
    let mut router = Router::new();
    for route in Route::ALL {
        router = router.route(route.path(), post(move |s: State<Arc<EngineServer>>, b: Bytes| generate(s, route, b)));
    }
    for route in crate::openai::pooling::PoolRoute::ALL {
        router = router
            .route(route.path(), post(move |s: State<Arc<EngineServer>>, b: Bytes| super::pool::pool(s, route, b)));
    }
    // Requests with images run to megabytes (axum's default stops at 2 MiB);
    // the fixed profile takes as much.
    let router = router.layer(axum::extract::DefaultBodyLimit::max(crate::server::MAX_BODY));
    let router = router
        .route(
            "/v1/models",
            get(|State(s): State<Arc<EngineServer>>| async move { Json(models_body(&s.cfg.names().collect::<Vec<_>>())) }),
        )
        .route(
            "/api/tags",
            get(|State(s): State<Arc<EngineServer>>| async move { Json(tags_body(&s.cfg.names().collect::<Vec<_>>())) }),
        )
        .route("/info", get(|State(s): State<Arc<EngineServer>>| async move { Json(info_body(&s.cfg.model_name)) }))
        .route("/health", get(|| async { "ok" }))
        // vLLM's (with VLLM_SERVER_DEV_MODE=1): 200 once the cache is empty.
        .route(
            "/reset_prefix_cache",
            post(|State(s): State<Arc<EngineServer>>| async move {
                match s.reset_prefix_cache().await {
                    Some(_) => StatusCode::OK.into_response(),
                    None => (StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped").into_response(),
                }
            }),
        )
        .route(
            "/metrics",
            get(|State(s): State<Arc<EngineServer>>| async move {
                ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], s.prometheus())
            }),
        )
        // Unknown paths and methods: JSON errors, as the fixed profile and
        // vLLM answer them (axum's own had empty bodies).
        .fallback(|uri: axum::http::Uri| async move {
            crate::server::path_error(uri.path(), StatusCode::NOT_FOUND, &format!("no route for {}", uri.path()))
        })
        .layer(axum::middleware::from_fn(crate::server::json_method_not_allowed))
        .with_state(state);
    crate::server::with_server_header(router)
}

async fn generate(State(s): State<Arc<EngineServer>>, route: Route, body: Bytes) -> Response {
    let arrived = Instant::now();
    // A chat of more messages than the context has tokens never fits, and
    // parsing and rendering millions of them would take gigabytes first.
    let model = &s.cfg.engine.model;
    let within = || format!("{}'s context of {} tokens holds", model.name, model.max_context);
    if let Err(e) = GenerationRequest::check_messages(&body, model.max_context.into(), within) {
        return error_response(route, StatusCode::BAD_REQUEST, &e.to_string());
    }
    let req = match GenerationRequest::parse(route, &body) {
        Ok(r) => r,
        Err(e) => return error_response(route, StatusCode::BAD_REQUEST, &e.to_string()),
    };
    // TGI and llama.cpp serve one model and read no name; the others refuse
    // a name they do not serve, as vLLM and Ollama do.
    if let Some(name) = req.model.as_deref().filter(|_| route.names_model()) {
        if !s.cfg.names().any(|n| n == name) {
            return error_response(route, StatusCode::NOT_FOUND, &route.unknown_model(name));
        }
    }
    let (id, fault) = s.counters.next(&s.cfg.faults);
    if fault == Fault::HttpError {
        return error_response(route, StatusCode::INTERNAL_SERVER_ERROR, "injected fault: internal server error");
    }
    // `ignore_eos` and `min_tokens` need nothing: the simulated model never
    // ends early, so every response is exactly `max_tokens` long.
    let script = s.cfg.faults.answers.as_ref().and_then(|a| a.script(&req.prompt_text(), id));
    let asked = req.max_tokens().unwrap_or(s.cfg.default_max_tokens);
    // A scripted answer ends with its last word, as a model stops at its
    // end: its finish reason is then `stop`, `length` where `max_tokens` cut it.
    let n_out = script.as_ref().map_or(asked, |sc| asked.min(sc.len() as u32));
    let ended = script.as_ref().is_some_and(|sc| sc.len() < u64::from(asked));
    // Images: their tokens join the prompt (as a vision-language model's
    // placeholders do), and the encoder's work passes before the engine.
    let images = match crate::openai::images::images_of(req.messages.as_ref().map_or(&[], |m| &m.list[..])) {
        Ok(images) => images,
        Err(e) => return error_response(route, StatusCode::BAD_REQUEST, &e.0),
    };
    // Refused before anything is sized by the request: a prompt whose words
    // or images alone pass the context (an image's header may claim
    // 4294967295 × 4294967295 pixels, 2.3e16 tokens, whose ids had aborted
    // the server), and then the prompt as the template renders it. The
    // answer's token ids below (4 GB for a billion tokens) wait for the
    // same check; the engine checks again, with its KV cache.
    let context = u64::from(model.max_context);
    for (k, img) in images.iter().enumerate() {
        if img.tokens() > context {
            let message = format!(
                "image {} of the request is {}×{} pixels by its header: {} tokens, more than {}'s context of {} \
                 tokens; send a smaller image",
                k + 1,
                img.width,
                img.height,
                img.tokens(),
                model.name,
                model.max_context
            );
            return error_response(route, StatusCode::BAD_REQUEST, &message);
        }
    }
    let image_tokens = crate::openai::images::tokens_of(&images);
    // A prompt whose words alone are past the context is refused before it
    // is rendered; any other is checked below by its tokens (a long
    // max_tokens had been refused naming the prompt's words, "1 prompt +
    // 200000 output tokens", for a chat of 36 tokens).
    let words = req.prompt_words().saturating_add(image_tokens);
    if words > context {
        if let Err(message) = model.check_context(words, n_out.into()) {
            return error_response(route, StatusCode::BAD_REQUEST, &message);
        }
    }
    let mut ids = req.prompt_ids(s.cfg.engine.chat_template);
    let prompt_tokens = (ids.len() as u64).saturating_add(image_tokens);
    if let Err(message) = model.check_context(prompt_tokens, n_out.into()) {
        return error_response(route, StatusCode::BAD_REQUEST, &message);
    }
    for img in &images {
        ids.extend(crate::openai::images::placeholder_ids(img));
    }
    let encoder = encoder_time(&s.cfg.engine, &images).div_f64(s.cfg.speed);
    let mut prompt = Prompt::from_tokens(&ids, s.cfg.engine.block_size);
    if s.cfg.engine.enable_prefix_caching {
        // The answer's words (see ChunkWriter), so the blocks it fills are cached.
        prompt = prompt.followed_by(&ids, output_ids(id, n_out));
    }
    // Only the block hashes need to live through the wait below.
    drop(ids);

    // The front end's share of the latency passes before the scheduler sees
    // the request (and the images' encoder, one request's after another's).
    sleep_until(s.front_end_reach(id, arrived, prompt_tokens, encoder)).await;
    // The replica the request runs on (disaggregated, its decode instance,
    // chosen as it comes, as vLLM's proxy names both instances), counted
    // there until the ticket goes; live once the request is sent to it, so
    // a client gone while it waits for the answer still aborts it (the
    // abort follows the add in the channel).
    let (replica, commands) = s.route(&prompt);
    let mut ticket = Ticket { id, commands: commands.clone(), live: false, router: s.router.clone(), replica };
    // Disaggregated: the prefill pool first, as vLLM's proxy and
    // TensorRT-LLM's send it; SGLang's decode instance reserves for the
    // request first, and only then is it prefilled.
    let decode_first = s.cfg.engine.decode_first();
    let reserved_prompt = decode_first.then(|| prompt.clone());
    let prefilled = match s.pd.is_some() && !decode_first {
        true => match super::disagg::prefill(&s, id, &prompt, n_out, arrived).await {
            Ok(done) => Some(done),
            Err(super::disagg::Refused::Invalid(m)) => return error_response(route, StatusCode::BAD_REQUEST, &m),
            Err(super::disagg::Refused::Gone) => {
                return error_response(route, StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped")
            }
        },
        false => None,
    };
    let progress = Arc::new(Progress::default());
    // The prompt tokens the prefill instance found cached are the usage's.
    if let Some(p) = &prefilled {
        progress.cached.store(p.cached, Ordering::Release);
    }
    let (reply, answer) = oneshot::channel();
    // Prefilled elsewhere: told when its decode instance admits it to pull
    // the KV (SGLang's: reserves blocks for it).
    let (pull, pulled) = s.pd.as_ref().map(|_| oneshot::channel()).unzip();
    ticket.live = true;
    let prompt_len = prompt.len();
    let add = Command::Add {
        id,
        prompt,
        max_tokens: n_out,
        arrived,
        progress: progress.clone(),
        reply,
        pull,
        pooling: false,
    };
    if commands.send(add).is_err() {
        return engine_gone(route, &mut ticket);
    }
    match answer.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            ticket.live = false;
            let message = match e {
                Error::InvalidRequest { message, .. } => message,
                other => other.to_string(),
            };
            return error_response(route, StatusCode::BAD_REQUEST, &message);
        }
        Err(_) => return engine_gone(route, &mut ticket),
    }
    // Then its decode instance admits it and pulls its KV: only the blocks
    // its prefix cache lacks cross (vLLM's NIXL connector pulls just those).
    // In SGLang's order the prefill runs now, into the blocks reserved.
    if let Some(pulled) = pulled {
        let Ok(cached) = pulled.await else { return engine_gone(route, &mut ticket) };
        let prefilled = match (prefilled, reserved_prompt) {
            (Some(p), _) => p,
            (None, Some(prompt)) => match super::disagg::prefill(&s, id, &prompt, n_out, arrived).await {
                Ok(done) => {
                    progress.cached.store(done.cached, Ordering::Release);
                    done
                }
                // The ticket, live, gives the blocks reserved back.
                Err(super::disagg::Refused::Invalid(m)) => return error_response(route, StatusCode::BAD_REQUEST, &m),
                Err(super::disagg::Refused::Gone) => return engine_gone(route, &mut ticket),
            },
            (None, None) => return engine_gone(route, &mut ticket),
        };
        let took = super::disagg::transfer(&s, prefilled, prompt_len, cached).await;
        s.observe_kv_transfer(replica, took);
        if commands.send(Command::Landed(id)).is_err() {
            return engine_gone(route, &mut ticket);
        }
    }

    let model = req.model.clone().unwrap_or_else(|| s.cfg.model_name.clone());
    let writer = ChunkWriter::new(route, id, &model, unix_now())
        .with_lengths(prompt_tokens, n_out as u64)
        .with_continuous_usage(req.continuous_usage())
        .with_script(script)
        .ending_on_its_own(ended);
    let fault = match fault {
        Fault::Stall(d) => Fault::Stall(d.div_f64(s.cfg.speed)),
        f => f,
    };
    if !req.stream() {
        return whole(progress, ticket, writer, n_out, prompt_tokens, fault).await;
    }
    let stream = TokenStream {
        progress,
        writer,
        ticket,
        n_out,
        emitted: 0,
        produced: 0,
        half: n_out / 2,
        fault,
        stall: None,
        flushed: false,
        prompt_tokens,
        usage: req.include_usage(),
        done: false,
        burst: s.cfg.engine.spec.is_some(),
        server: s.clone(),
        pacing: None,
    };
    stream_response(route, Body::from_stream(stream))
}

/// The vision encoder's time for a request's images on the engine's GPUs:
/// its work at the GPUs' BF16 peak and the calibration's compute
/// efficiency (docs/simulator.md, "Images").
fn encoder_time(cfg: &crate::engine::EngineConfig, images: &[crate::openai::images::ImageInput]) -> Duration {
    if images.is_empty() {
        return Duration::ZERO;
    }
    let flops: f64 = images.iter().map(|i| i.encoder_flops()).sum();
    let peak = cfg.gpu.peak_flops(crate::engine::Precision::Bf16).unwrap_or(f64::INFINITY);
    Duration::from_secs_f64(flops / (peak * f64::from(cfg.tp) * cfg.calibration.eta_compute))
}

fn engine_gone(route: Route, ticket: &mut Ticket) -> Response {
    ticket.live = false;
    error_response(route, StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped")
}

/// A non-streamed response: waits for the whole output (or, for a fault,
/// for half of it), holding the ticket so a client that leaves aborts.
async fn whole(
    progress: Arc<Progress>,
    mut ticket: Ticket,
    writer: ChunkWriter,
    n_out: u32,
    prompt_tokens: u64,
    fault: Fault,
) -> Response {
    let breaks = matches!(fault, Fault::StreamError | Fault::Disconnect);
    let target = if breaks { n_out / 2 + 1 } else { n_out };
    let mut seen = 0;
    while seen < target {
        match progress.changed(seen).await {
            Update::Produced(p) => seen = p,
            Update::Closed => {
                let route = writer.route();
                return error_response(route, StatusCode::INTERNAL_SERVER_ERROR, "the engine dropped the request");
            }
        }
    }
    if breaks {
        // Dropping the live ticket aborts the rest of the generation.
        return error_response(writer.route(), StatusCode::INTERNAL_SERVER_ERROR, "injected fault: generation failed");
    }
    ticket.live = false;
    if let Fault::Stall(d) = fault {
        sleep_until(Instant::now() + d).await;
    }
    let usage = Usage {
        prompt: prompt_tokens,
        completion: n_out as u64,
        cached: Some(progress.cached.load(Ordering::Acquire) as u64),
    };
    let finish = writer.finish_reason();
    Json(writer.whole(usage, finish)).into_response()
}

/// A streamed response around `body`: `text/event-stream`, or NDJSON for Ollama's routes.
fn stream_response(route: Route, body: Body) -> Response {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(route.stream_content_type()));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}
