//! Whole bodies outside a generation: errors, model lists, server info.

use super::route::Route;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// An error response in `route`'s shape.
pub fn error_response(route: Route, status: StatusCode, message: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], route.error_body(status.as_u16(), message)).into_response()
}

/// TGI's `/info` for one served model.
pub fn info_body(model: &str) -> Value {
    json!({ "model_id": model, "router": "goodput-sim", "version": env!("CARGO_PKG_VERSION") })
}

/// Ollama's `/api/tags` for the served models.
pub fn tags_body(models: &[&str]) -> Value {
    let models: Vec<Value> = models
        .iter()
        .map(|m| json!({ "name": m, "model": m, "size": 0, "details": { "family": "goodput-sim" } }))
        .collect();
    json!({ "models": models })
}

/// `/v1/models` for the served models.
pub fn models_body(models: &[&str]) -> Value {
    let data: Vec<Value> =
        models.iter().map(|m| json!({ "id": m, "object": "model", "created": 0, "owned_by": "goodput" })).collect();
    json!({ "object": "list", "data": data })
}

/// Seconds since the Unix epoch, for `created` fields.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}
