//! goodput-report: renderings of a result document. Every exporter reads the
//! same `RunResult`, so the terminal, JSON and later formats never disagree.

pub mod terminal;

use goodput_core::RunResult;
use std::io::Write;
use std::path::Path;

/// Writes `result` as pretty JSON to `path`, atomically (a temporary file
/// renamed into place) so a crash never leaves half a document.
pub fn write_json(path: &Path, result: &RunResult) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(result).map_err(std::io::Error::other)?;
    write_atomic(path, &text)
}

/// Writes `bytes` to `path` through a temporary file in the same folder.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// Reads a result document written by `write_json`.
pub fn read_json(path: &Path) -> Result<RunResult, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    match v.get("schema").and_then(|s| s.as_str()) {
        Some(goodput_core::SCHEMA) => {}
        Some(other) => {
            return Err(format!(
                "{} has schema '{other}', this goodput reads '{}'",
                path.display(),
                goodput_core::SCHEMA
            ))
        }
        None => return Err(format!("{} is not a goodput result (no \"schema\" field)", path.display())),
    }
    serde_json::from_value(v).map_err(|e| format!("{} does not match the goodput/v1 schema: {e}", path.display()))
}
