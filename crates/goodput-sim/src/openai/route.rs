//! Which protocol route a request came in on, and what that route implies
//! for paths, content types and error bodies.

use serde_json::json;

/// Which route a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Chat,
    Completions,
    /// Anthropic Messages, `/v1/messages`.
    Messages,
    /// Ollama's `/api/chat`.
    OllamaChat,
    /// Ollama's `/api/generate`.
    OllamaGenerate,
    /// TGI's `/generate` (never streamed).
    TgiGenerate,
    /// TGI's `/generate_stream` (always streamed).
    TgiGenerateStream,
    /// llama.cpp's `/completion`.
    LlamaCpp,
}

impl Route {
    /// The route of a request path, if it is a generation route.
    pub fn of_path(path: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.path() == path)
    }

    pub const ALL: [Route; 8] = [
        Route::Chat,
        Route::Completions,
        Route::Messages,
        Route::OllamaChat,
        Route::OllamaGenerate,
        Route::TgiGenerate,
        Route::TgiGenerateStream,
        Route::LlamaCpp,
    ];

    /// The request path.
    pub fn path(self) -> &'static str {
        match self {
            Route::Chat => "/v1/chat/completions",
            Route::Completions => "/v1/completions",
            Route::Messages => "/v1/messages",
            Route::OllamaChat => "/api/chat",
            Route::OllamaGenerate => "/api/generate",
            Route::TgiGenerate => "/generate",
            Route::TgiGenerateStream => "/generate_stream",
            Route::LlamaCpp => "/completion",
        }
    }

    pub(super) fn tgi(self) -> bool {
        matches!(self, Route::TgiGenerate | Route::TgiGenerateStream)
    }

    /// Ollama's: streams are newline-delimited JSON, and streaming is the default.
    pub fn ollama(self) -> bool {
        matches!(self, Route::OllamaChat | Route::OllamaGenerate)
    }

    /// The content type of a streamed response.
    pub fn stream_content_type(self) -> &'static str {
        if self.ollama() {
            "application/x-ndjson"
        } else {
            "text/event-stream"
        }
    }

    /// The request's `model` picks the model (not TGI's or llama.cpp's
    /// native routes, whose server has one).
    pub fn names_model(self) -> bool {
        !matches!(self, Route::TgiGenerate | Route::TgiGenerateStream | Route::LlamaCpp)
    }

    /// The message of a 404 for a model the server does not serve, in the
    /// words of the server this route comes from.
    pub fn unknown_model(self, name: &str) -> String {
        match self {
            Route::Messages => format!("model: {name}"),
            Route::OllamaChat | Route::OllamaGenerate => format!("model '{name}' not found"),
            _ => openai_unknown_model(name),
        }
    }

    /// The JSON body of an error response with HTTP status `status`, in
    /// this route's own shape.
    pub fn error_body(self, status: u16, message: &str) -> String {
        match self {
            Route::Messages => {
                let kind = match status {
                    404 => "not_found_error",
                    500.. => "api_error",
                    _ => "invalid_request_error",
                };
                json!({ "type": "error", "error": { "type": kind, "message": message } }).to_string()
            }
            Route::OllamaChat | Route::OllamaGenerate => json!({ "error": message }).to_string(),
            Route::TgiGenerate | Route::TgiGenerateStream => {
                let kind = if status >= 500 { "generation" } else { "validation" };
                json!({ "error": message, "error_type": kind }).to_string()
            }
            Route::Chat | Route::Completions | Route::LlamaCpp => error_body(status, message),
        }
    }
}

/// The JSON body of an OpenAI-style error with HTTP status `status`.
pub fn error_body(status: u16, message: &str) -> String {
    json!({ "error": { "message": message, "type": "invalid_request_error", "code": status } }).to_string()
}

/// OpenAI's (and vLLM's) 404 message for a model the server does not
/// serve: the generation routes' and the embeddings and rerank routes'.
pub(crate) fn openai_unknown_model(name: &str) -> String {
    format!("The model `{name}` does not exist.")
}
