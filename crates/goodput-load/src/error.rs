//! What goodput-load refuses before a run, as types a caller can match;
//! each message names the problem and the fix.

use std::path::PathBuf;

/// A `--tokenizer` file that cannot count tokens.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error(
        "tokenizer file {} not found: pass the path of a local tokenizer.json (goodput never downloads one)",
        path.display()
    )]
    NotFound { path: PathBuf },
    #[error("cannot load tokenizer {}: {reason} (expected a Hugging Face tokenizer.json)", path.display())]
    Load { path: PathBuf, reason: String },
    /// It loads, but cannot turn plain text into tokens.
    #[error("tokenizer {}: {reason}", path.display())]
    Unusable { path: PathBuf, reason: String },
}

/// A request header goodput will not send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("'{name}' is not a header name: use letters, digits and - (e.g. --header 'X-Team: infra')")]
    Name { name: String },
    #[error("the value of header '{name}' holds a line break or NUL: give it on one line")]
    LineBreak { name: String },
    #[error("--header '{name}' is goodput's HTTP layer's to set (it frames every request itself): leave it out")]
    Owned { name: String },
}

/// A client that cannot be built from its settings.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid --url '{url}': {reason} (expected e.g. http://127.0.0.1:8000)")]
    Url { url: String, reason: String },
    #[error("invalid --url '{url}': the scheme must be http or https")]
    Scheme { url: String },
    #[error("cannot build the HTTP client: {0}")]
    Http(String),
    /// goodput's own HTTP/1.1 client refused the endpoint or the stamps.
    #[error("{0}")]
    Transport(String),
    #[error(
        "--stamp kernel needs goodput's own HTTP/1.1 client: an http:// URL reached directly (no proxy) and \
         --transport auto"
    )]
    KernelStamps,
    #[error(transparent)]
    Header(#[from] HeaderError),
}
