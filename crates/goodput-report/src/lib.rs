//! goodput-report: renderings of the result documents. Every exporter reads
//! the same `RunResult` or `SweepResult`, so the terminal, JSON, CSV,
//! Markdown and HTML never disagree; `compare` sets runs side by side.

pub mod compare;
pub mod engine;
pub mod escape;
pub mod export;
pub mod format;
pub mod metric;
pub mod peers;
pub mod records;
pub mod schema;
pub mod series;
pub mod server;
pub mod svg;
pub mod table;
pub mod terminal;

pub use compare::{compare, parse_rules, Comparison, Rule, Verdict};
pub use export::{
    export_compare, export_run, export_run_with, export_sweep, export_sweep_with, ExportError, Exporter, Format,
    Rendered,
};
pub use metric::Metric;
pub use schema::{document_schema, document_schema_text};

use goodput_core::sweep::SweepResult;
use goodput_core::RunResult;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes a result document (a run or a sweep) as pretty JSON to `path`,
/// atomically (a temporary file renamed into place) so a crash never leaves
/// half a document.
pub fn write_json<T: Serialize>(path: &Path, result: &T) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(result).map_err(std::io::Error::other)?;
    write_atomic(path, &text)
}

/// Writes `bytes` and a final newline to `path` through a temporary file in
/// the same folder.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut v = Vec::with_capacity(bytes.len() + 1);
    v.extend_from_slice(bytes);
    v.push(b'\n');
    write_file_atomic(path, &v)
}

/// Writes exactly `bytes` to `path`. A regular file (or a new one) is
/// written through a temporary file in the same folder, synced before the
/// rename, so a crash never leaves half of it, and the temporary file is
/// removed when the write fails. A symbolic link is followed and its target
/// written, so the link stays a link. `-` is standard output, and what is
/// not a regular file (a device, a FIFO) is written in place: a rename would
/// replace it with a file.
pub(crate) fn write_file_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if path == Path::new("-") {
        let mut out = std::io::stdout().lock();
        return out.write_all(bytes).and_then(|_| out.flush());
    }
    let path = &resolve_links(path)?;
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        let mut f = std::fs::OpenOptions::new().write(true).truncate(true).open(path)?;
        return f.write_all(bytes).and_then(|_| f.flush());
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    let res = written.and_then(|_| std::fs::rename(&tmp, path));
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// `path` with every symbolic link along it followed to its target, the
/// target made whole where the link is relative; a path that does not exist
/// (yet) is itself.
fn resolve_links(path: &Path) -> std::io::Result<std::path::PathBuf> {
    let mut p = path.to_path_buf();
    // A loop of links ends in the kernel's own error when opened.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => break,
        }
    }
    Ok(p)
}

/// A saved result: one run or one sweep.
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    Run(Box<RunResult>),
    Sweep(Box<SweepResult>),
}

/// Why a result document cannot be read: each message names the file and
/// what goodput reads instead.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not to be read: not a regular file, or larger than a result may be.
    #[error(transparent)]
    Input(#[from] goodput_core::input::InputError),
    #[error("{} is a comparison (goodput compare), not a run or a sweep", path.display())]
    Comparison { path: PathBuf },
    #[error("{} does not match the goodput/v1 sweep schema: {error}", path.display())]
    SweepSchema { path: PathBuf, error: serde_json::Error },
    #[error("{} does not match the goodput/v1 schema: {error}", path.display())]
    RunSchema { path: PathBuf, error: serde_json::Error },
    /// A sweep where one run was asked for.
    #[error("{} is a sweep, not a single run", path.display())]
    Sweep { path: PathBuf },
    #[error(
        "{} is not JSON ({error}): goodput reads its own results and vLLM bench serve's, AIPerf's and GuideLLM's",
        path.display()
    )]
    NotJson { path: PathBuf, error: serde_json::Error },
    #[error("{} has schema '{schema}', this goodput reads '{}'", path.display(), goodput_core::SCHEMA)]
    OtherSchema { path: PathBuf, schema: String },
    #[error(
        "{} is not a goodput result (no \"schema\" field), nor a result of vLLM bench serve (--save-result \
         --save-detailed), AIPerf (profile_export.jsonl) or GuideLLM (benchmarks.json)",
        path.display()
    )]
    NotAResult { path: PathBuf },
    /// Another tool's result that cannot be read.
    #[error(transparent)]
    Import(#[from] peers::ImportError),
}

/// Reads a result document written by `write_json`, run or sweep, or
/// another tool's result ([`peers`]: vLLM `bench serve`, AIPerf,
/// GuideLLM) as a run.
/// The file must be a regular one, of at most
/// [`goodput_core::input::DOCUMENT_CAP`].
pub fn read_document(path: &Path) -> Result<Document, ReadError> {
    let text = goodput_core::input::read_text(path, "the result", goodput_core::input::DOCUMENT_CAP)?;
    if let Some(run) = peers::import(path, &text)? {
        return Ok(Document::Run(Box::new(run)));
    }
    let v = read_value(path, &text)?;
    if v.get("kind").and_then(|k| k.as_str()) == Some("compare") {
        return Err(ReadError::Comparison { path: path.to_owned() });
    }
    if v.get("points").is_some() {
        return serde_json::from_value(v)
            .map(|s| Document::Sweep(Box::new(s)))
            .map_err(|error| ReadError::SweepSchema { path: path.to_owned(), error });
    }
    serde_json::from_value(v)
        .map(|r| Document::Run(Box::new(r)))
        .map_err(|error| ReadError::RunSchema { path: path.to_owned(), error })
}

/// Reads a run written by `write_json`; a sweep is an error that says so.
pub fn read_json(path: &Path) -> Result<RunResult, ReadError> {
    match read_document(path)? {
        Document::Run(r) => Ok(*r),
        Document::Sweep(_) => Err(ReadError::Sweep { path: path.to_owned() }),
    }
}

fn read_value(path: &Path, text: &str) -> Result<serde_json::Value, ReadError> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|error| ReadError::NotJson { path: path.to_owned(), error })?;
    match v.get("schema").and_then(|s| s.as_str()) {
        Some(goodput_core::SCHEMA) => Ok(v),
        Some(other) => Err(ReadError::OtherSchema { path: path.to_owned(), schema: other.to_owned() }),
        None => Err(ReadError::NotAResult { path: path.to_owned() }),
    }
}
