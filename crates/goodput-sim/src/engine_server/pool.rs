//! The pooling handler: `/v1/embeddings` and `/v1/rerank` on the engine
//! profile. Each sequence of the request (an input, or a query–document
//! pair) is one engine request, a pooling pass: the prefill step that ends
//! it is the whole pass, and no decode step follows. As vLLM's, `/metrics`
//! counts its prompt tokens, no generation token and no TTFT, and finishes
//! it as `stop`. The answer comes once the last sequence's prefill is done.

use super::progress::{Command, Progress, Ticket, Update};
use super::server::EngineServer;
use crate::clock::sleep_until;
use crate::engine::{Error, Prompt};
use crate::faults::Fault;
use crate::openai::pooling::{PoolRequest, PoolRoute, MAX_EMBED_DIM, MAX_TEXTS};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// Engine request ids of pooling sequences: above every generation's
/// arrival number, request `n`'s sequence `k` at `BASE + n * MAX_TEXTS + k`.
const POOL_ID_BASE: u64 = 1 << 62;

fn error(route: PoolRoute, status: StatusCode, message: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], route.error_body(status.as_u16(), message)).into_response()
}

pub(super) async fn pool(State(s): State<Arc<EngineServer>>, route: PoolRoute, body: Bytes) -> Response {
    let arrived = Instant::now();
    let req = match PoolRequest::parse(route, &body) {
        Ok(r) => r,
        Err(e) => return error(route, StatusCode::BAD_REQUEST, &e),
    };
    if let Some(name) = req.model.as_deref() {
        if !s.cfg.names().any(|n| n == name) {
            return error(route, StatusCode::NOT_FOUND, &crate::openai::openai_unknown_model(name));
        }
    }
    let (n, fault) = s.counters.next(&s.cfg.faults);
    if fault == Fault::HttpError {
        return error(route, StatusCode::INTERNAL_SERVER_ERROR, "injected fault: internal server error");
    }
    // A raw prompt each, after the tokenizer's BOS (an encoder's CLS),
    // checked against the context before its ids are built.
    let template = s.cfg.engine.chat_template;
    // A pooling pass has no output: the input alone must fit (vLLM's own
    // words, which name a rerank's input as an embedding's too; it had
    // been told of "1 output tokens" and max_tokens, a field the route
    // has not).
    let model = &s.cfg.engine.model;
    for tokens in req.sequence_tokens(template) {
        if tokens > u64::from(model.max_context) {
            let message = format!(
                "This model's maximum context length is {} tokens. However, you requested {tokens} tokens in the \
                 input for embedding generation. Please reduce the length of the input.",
                model.max_context,
            );
            return error(route, StatusCode::BAD_REQUEST, &message);
        }
    }
    let ids = req.sequence_ids(template);
    let prompt_tokens: u64 = ids.iter().map(|i| i.len() as u64).sum();
    // The front end's share, as for a generation.
    sleep_until(s.front_end_reach(n, arrived, prompt_tokens, std::time::Duration::ZERO)).await;

    let mut tickets = Vec::with_capacity(ids.len());
    let mut pending = Vec::with_capacity(ids.len());
    for (k, seq) in ids.iter().enumerate() {
        let id = POOL_ID_BASE + n * MAX_TEXTS as u64 + k as u64;
        let prompt = Prompt::from_tokens(seq, s.cfg.engine.block_size);
        let progress = Arc::new(Progress::default());
        let (reply, answer) = oneshot::channel();
        let (replica, commands) = s.route(&prompt);
        tickets.push(Ticket { id, commands: commands.clone(), live: true, router: s.router.clone(), replica });
        let add = Command::Add {
            id,
            prompt,
            max_tokens: 1,
            arrived,
            progress: progress.clone(),
            reply,
            pull: None,
            pooling: true,
        };
        if commands.send(add).is_err() {
            return gone(route, &mut tickets);
        }
        pending.push((progress, answer));
    }
    for (i, (progress, answer)) in pending.into_iter().enumerate() {
        match answer.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tickets[i].live = false;
                let message = match e {
                    Error::InvalidRequest { message, .. } => message,
                    other => other.to_string(),
                };
                return error(route, StatusCode::BAD_REQUEST, &message);
            }
            Err(_) => return gone(route, &mut tickets),
        }
        // The one token: the sequence's prefill is done.
        if let Update::Closed = progress.changed(0).await {
            return error(route, StatusCode::INTERNAL_SERVER_ERROR, "the engine dropped the request");
        }
        tickets[i].live = false;
    }
    if let Fault::Stall(d) = fault {
        sleep_until(Instant::now() + d.div_f64(s.cfg.speed)).await;
    }
    let model = req.model.clone().unwrap_or_else(|| s.cfg.model_name.clone());
    let dim = (s.cfg.engine.model.hidden_size as usize).clamp(1, MAX_EMBED_DIM);
    Json(req.answer(&model, &ids, dim, n)).into_response()
}

fn gone(route: PoolRoute, tickets: &mut [Ticket]) -> Response {
    for t in tickets {
        t.live = false;
    }
    error(route, StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped")
}
