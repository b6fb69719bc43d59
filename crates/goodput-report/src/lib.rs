//! goodput-report: renderings of the result documents. Every exporter reads
//! the same `RunResult` or `SweepResult`, so the terminal, JSON, CSV,
//! Markdown and HTML never disagree; `compare` sets runs side by side.
//!
//! - Rendering: [`terminal`], [`export`] (JSON, CSV, Markdown, HTML and its
//!   charts, [`svg`]), with what they share: [`format`], [`metric`],
//!   [`series`], [`engine`], [`server`], [`escape`].
//! - [`compare`]: runs side by side, with rules and verdicts.
//! - [`read`]: the files read in rather than rendered: result documents
//!   (goodput's own and other tools', [`read::peers`]) and the per-request
//!   records file ([`read::records`], written during a run through it too).
//! - `schema` (the `schema` feature): the documents' JSON Schema, derived
//!   from their types.

pub mod compare;
pub mod engine;
pub mod escape;
pub mod export;
pub mod format;
pub mod frontier;
pub mod intervals;
pub mod metric;
pub mod overlay;
pub mod read;
pub mod repeats;
#[cfg(feature = "schema")]
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
#[cfg(feature = "schema")]
pub use schema::{document_schema, document_schema_text};

use serde::Serialize;
use std::io::Write;
use std::path::Path;

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
