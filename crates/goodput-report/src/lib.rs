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

/// Writes a result document (a run or a sweep) as pretty JSON and a final
/// newline to `path`, as [`write_atomic`] writes bytes: atomically (a
/// temporary file renamed into place) so a crash never leaves half a
/// document. The JSON is streamed into the file as it is serialized, never
/// held whole in memory: a run's records can run to gigabytes of it.
pub fn write_json<T: Serialize>(path: &Path, result: &T) -> std::io::Result<()> {
    let json = |w: &mut dyn Write| write_json_to(w, result);
    if writes_in_place(path) {
        // What is written in place (standard output, a FIFO) cannot be
        // taken back: a document that cannot be serialized fails here,
        // before any of it is written, as it did when it was serialized
        // whole first. The pass writes nothing and holds nothing.
        serde_json::to_writer(std::io::sink(), result).map_err(json_error)?;
    }
    write_file_atomic_with(path, json)
}

/// `result` as [`write_json`] writes it (pretty JSON and a final newline),
/// into `w`, unbuffered.
pub fn write_json_to<T: Serialize>(w: &mut dyn Write, result: &T) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, result).map_err(json_error)?;
    w.write_all(b"\n")
}

/// serde_json's error as an I/O error: a write's own error as it was (a
/// full disk is `StorageFull`), a document that cannot be serialized as
/// an error of its own.
fn json_error(e: serde_json::Error) -> std::io::Error {
    if e.is_io() {
        std::io::Error::from(e)
    } else {
        std::io::Error::other(e)
    }
}

/// Writes `bytes` and a final newline to `path` through a temporary file in
/// the same folder.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_file_atomic_with(path, |w| {
        w.write_all(bytes)?;
        w.write_all(b"\n")
    })
}

/// Writes exactly `bytes` to `path` (see [`write_file_atomic_with`]).
pub(crate) fn write_file_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_file_atomic_with(path, |w| w.write_all(bytes))
}

/// The buffer between a writer and its file: large enough that a document
/// of gigabytes takes few system calls.
const WRITE_BUFFER: usize = 1 << 20;

/// Writes what `fill` writes to `path`, buffered. A regular file (or a new
/// one) is written through a temporary file in the same folder, synced
/// before the rename, so a crash never leaves half of it, and the
/// temporary file is removed when the write fails. A symbolic link is
/// followed and its target written, so the link stays a link. `-` is
/// standard output, and what is not a regular file (a device, a FIFO) is
/// written in place: a rename would replace it with a file.
fn write_file_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let buffered = |w: &mut dyn Write| {
        let mut b = std::io::BufWriter::with_capacity(WRITE_BUFFER, w);
        fill(&mut b)?;
        b.flush()
    };
    if path == Path::new("-") {
        return buffered(&mut std::io::stdout().lock());
    }
    let path = &resolve_links(path)?;
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        let mut f = std::fs::OpenOptions::new().write(true).truncate(true).open(path)?;
        return buffered(&mut f);
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Each write its own temporary name (two threads of one process
    // writing the same path had shared one, and one's rename failed), made
    // anew (O_EXCL): a file or link left under the name is not written
    // through.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
    // What is left under the name is not this write's to remove.
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
    let res = buffered(&mut f).and_then(|_| f.sync_all()).and_then(|_| std::fs::rename(&tmp, path));
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// Whether [`write_file_atomic_with`] writes `path` in place, where a
/// failed write leaves what it wrote: standard output, and what is not a
/// regular file (through its links).
fn writes_in_place(path: &Path) -> bool {
    path == Path::new("-") || std::fs::metadata(path).is_ok_and(|m| !m.is_file())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A small document with what pretty printing indents: nested objects
    /// and arrays, empty ones, escapes, numbers of each kind, and a map of
    /// no stated length that serializes itself (a `Distribution`).
    fn small_document() -> (serde_json::Value, goodput_core::Distribution) {
        let mut d = goodput_core::Distribution::from_samples(&mut [3.5, 1.25, 2.0], &[50.0, 99.9]);
        d.percentiles.push((99.99, None));
        let doc = json!({
            "schema": "goodput/v1",
            "label": "quote \" backslash \\ tab \t newline \n control \u{1} é ✓",
            "n": [0, -1, 18446744073709551615u64, 1.5e-300, 2.0, -0.0, 0.1, 1e21],
            "empty": {}, "none": [], "null": null, "yes": true,
            "nested": {"a": [{"b": [[], [1, {"c": {}}]]}]},
        });
        (doc, d)
    }

    /// What a document was written as when it was serialized whole: the
    /// pretty JSON, then `write_atomic`'s final newline.
    fn as_before<T: Serialize>(doc: &T) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(doc).unwrap();
        v.push(b'\n');
        v
    }

    /// A document whose serialization fails past the write buffer: some of
    /// it has reached the file when it fails.
    struct FailsLate;

    impl Serialize for FailsLate {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::{Error, SerializeSeq};
            let mut seq = s.serialize_seq(None)?;
            seq.serialize_element(&"x".repeat(3 * WRITE_BUFFER))?;
            Err(S::Error::custom("this document cannot be written"))
        }
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        let names = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned());
        names.filter(|n| n.contains(".tmp-")).collect()
    }

    #[test]
    fn a_streamed_document_is_the_bytes_it_was_when_serialized_whole() {
        let dir = tempfile::tempdir().unwrap();
        let doc = small_document();
        let path = dir.path().join("run.json");
        write_json(&path, &doc).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), as_before(&doc));
        // Larger than the write buffer, in pieces of every size.
        let big: Vec<serde_json::Value> = (0..40_000).map(|i| json!({"id": i, "t_ns": [i, i * 3]})).collect();
        write_json(&path, &big).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), as_before(&big));
        // write_atomic: the bytes and one newline.
        write_atomic(&path, b"{}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
        write_file_atomic(&path, b"exact").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"exact");
        assert!(leftovers(dir.path()).is_empty());
        // The file is made as any new file is, whatever it replaced.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode();
            let made = dir.path().join("made");
            std::fs::File::create(&made).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            write_json(&path, &doc).unwrap();
            assert_eq!(mode(&path), mode(&made));
        }
    }

    /// Threads of one process writing one path at once: each write
    /// succeeds, the file is one of them whole, and nothing is left beside
    /// it. They had shared a temporary name, and all but one failed.
    #[test]
    fn writes_of_one_path_at_once_each_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let docs: Vec<serde_json::Value> = (0..8).map(|i| json!({"n": i, "pad": "x".repeat(1 << 16)})).collect();
        std::thread::scope(|s| {
            for doc in &docs {
                let path = &path;
                s.spawn(move || write_json(path, doc).unwrap());
            }
        });
        let back: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(docs.contains(&back));
        assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
    }

    #[test]
    fn a_document_that_fails_midway_leaves_the_file_it_would_replace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        std::fs::write(&path, "the last run\n").unwrap();
        let e = write_json(&path, &FailsLate).unwrap_err();
        assert!(e.to_string().contains("cannot be written"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "the last run\n");
        assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
        // None made where there was none.
        let new = dir.path().join("new.json");
        write_json(&new, &FailsLate).unwrap_err();
        assert!(!new.exists() && leftovers(dir.path()).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_write_that_fails_gives_its_own_error() {
        // /dev/full is written in place (a device, not replaced by a file),
        // and takes nothing: the error is the disk's, not serde's.
        let full = Path::new("/dev/full");
        if !full.exists() {
            return;
        }
        let e = write_json(full, &small_document()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "{e}");
        // What is written in place is not written at all when the document
        // cannot be serialized: that is found before the first byte.
        let e = write_json(full, &FailsLate).unwrap_err();
        assert!(e.to_string().contains("cannot be written"), "{e}");
    }
}
