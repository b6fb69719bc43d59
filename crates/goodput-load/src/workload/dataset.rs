//! Datasets read from a local file: ShareGPT conversations, or entries of
//! JSONL, a JSON array or Parquet (docs/workloads.md), whose prompt is a
//! column named (`--dataset-column`) or found: a string, OpenAI-style
//! `messages`, ShareGPT `conversations` or LMSYS-Chat/WildChat
//! `conversation` turns.

use crate::error::{EntryError, ShareGptError, WorkloadError};
use crate::protocol::PromptBody;
use crate::tokenizer::TokenCounter;
use goodput_core::util::input::LineReader;
use serde_json::Value;
use std::path::Path;

/// One entry of a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetEntry {
    pub prompt: PromptBody,
    pub max_tokens: Option<u32>,
    /// A ShareGPT conversation's later questions, each with the length of
    /// the answer it got: the turns of a session (`--turns`).
    pub follow_ups: Vec<(String, Option<u32>)>,
    /// What a right answer is (`"reference"`, a string or a list of them;
    /// `"answer"` is read the same way): the quality scorers compare the
    /// output with it. Empty when the entry has none.
    pub reference: Vec<String>,
    /// The prompt's tokens: counted by the tokenizer when one is given,
    /// else about 4 characters a token. What `estimate` sends.
    pub prompt_tokens: u32,
    /// Images sent with the prompt (an `image` or `images` column): data
    /// URLs as given, or image files, read when the request is built.
    pub images: Vec<super::images::DatasetImage>,
}

/// Tokens of `text`: the tokenizer's count, or about 4 characters a token
/// (English) without one; at least 1.
pub(super) fn count_tokens(text: &str, tokenizer: Option<&TokenCounter>) -> u32 {
    let n = match tokenizer {
        Some(t) => t.count(text),
        None => text.len().div_ceil(4),
    };
    n.clamp(1, u32::MAX as usize) as u32
}

/// Reads a dataset: JSONL of `{"prompt": …}` / `{"messages": …}` (or any
/// prompt column of [`super::columns::DETECTED`]) with optional
/// `max_tokens`, or a JSON array of the same entries (ShareGPT's array of
/// `{"conversations": [...]}` among them). JSONL is read a line at a time,
/// each at most [`goodput_core::util::input::LINE_CAP`]; an array whole, at
/// most [`goodput_core::util::input::DOCUMENT_CAP`]. Either may come from a
/// pipe (`<(…)`, a FIFO): the input is opened once.
pub fn load_dataset(path: &Path, tokenizer: Option<&TokenCounter>) -> Result<Vec<DatasetEntry>, WorkloadError> {
    load_dataset_column(path, tokenizer, None)
}

/// [`load_dataset`] with the prompt in `column` (`--dataset-column`), or in
/// the first of [`super::columns::DETECTED`] an entry has; a `.parquet` file
/// (or one that opens with Parquet's magic bytes) is read as Parquet.
pub fn load_dataset_column(
    path: &Path,
    tokenizer: Option<&TokenCounter>,
    column: Option<&str>,
) -> Result<Vec<DatasetEntry>, WorkloadError> {
    let path_buf = || path.to_path_buf();
    let parquet = |path: &Path| {
        let entries = super::parquet::load(path, tokenizer, column)?;
        if entries.is_empty() {
            Err(WorkloadError::Empty { path: path.to_path_buf() })
        } else {
            Ok(entries)
        }
    };
    if super::parquet::has_extension(path) {
        return parquet(path);
    }
    // One open, its first bytes looked at and then read again: a pipe is
    // read once (opening it twice had waited for a second writer, or found
    // its first bytes gone).
    let mut opened = LineReader::open(path, "the dataset")?;
    let head =
        head(opened.input()).map_err(|e| WorkloadError::DatasetRead { path: path_buf(), error: e.to_string() })?;
    if super::parquet::has_magic(&head) {
        drop(opened);
        return parquet(path);
    }
    // Editors on Windows begin UTF-8 files with a byte-order mark.
    let body = head.strip_prefix(BOM).unwrap_or(&head);
    let array = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    let input =
        std::io::BufReader::with_capacity(1 << 16, std::io::Read::chain(std::io::Cursor::new(head), opened.input()));
    let mut lines = LineReader::new(input, path, "the dataset", goodput_core::util::input::LINE_CAP);
    let entries = if array {
        let text = read_whole(lines.input(), path)?;
        goodput_core::util::input::check_parse(path, "the dataset", &text)?;
        let trimmed = text.strip_prefix('\u{feff}').unwrap_or(&text).trim_start();
        let v: Value = serde_json::from_str(trimmed)
            .map_err(|e| WorkloadError::DatasetArray { path: path_buf(), error: e.to_string() })?;
        let items = v.as_array().map(Vec::as_slice).unwrap_or_default();
        // ShareGPT's array, read as vLLM's benchmarks read it: a
        // conversation whose question got no answer (and that gives no
        // max_tokens) sets no output length, and is skipped.
        let sharegpt = column.is_none() && items.iter().any(|i| i.get("conversations").is_some());
        // Each entry as a JSONL line is read.
        let mut out = Vec::new();
        for (k, item) in items.iter().enumerate() {
            let at = |reason| WorkloadError::Item { path: path_buf(), place: format!("entry {}", k + 1), reason };
            let entry = super::columns::entry_of(item, column, tokenizer).map_err(at)?;
            out.extend(entry.filter(|e| !sharegpt || e.max_tokens.is_some()));
        }
        if sharegpt && out.is_empty() {
            return Err(WorkloadError::ShareGpt { path: path_buf(), reason: ShareGptError::NoConversation });
        }
        out
    } else {
        let mut out = Vec::new();
        while let Some(line) = lines.next_line() {
            let line = line?;
            let bytes = if line.number == 1 { line.bytes.strip_prefix(BOM).unwrap_or(line.bytes) } else { line.bytes };
            if bytes.trim_ascii().is_empty() {
                continue;
            }
            let line_no = line.number;
            let v: Value = serde_json::from_slice(bytes).map_err(|e| WorkloadError::LineNotJson {
                path: path_buf(),
                line: line_no,
                error: e.to_string(),
            })?;
            out.extend(super::columns::entry_of(&v, column, tokenizer).map_err(|reason| WorkloadError::Entry {
                path: path_buf(),
                line: line_no,
                reason,
            })?);
        }
        out
    };
    let mut entries = entries;
    super::images::resolve_dataset_images(&mut entries, path)?;
    if entries.is_empty() {
        return Err(WorkloadError::Empty { path: path_buf() });
    }
    Ok(entries)
}

/// The first bytes of `input`: at least 4 and one not white space, where it
/// holds them (a pipe may give a few bytes at a time), at most about 64 KiB.
fn head<R: std::io::BufRead>(input: &mut R) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::new();
    loop {
        let got = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if got.is_empty() {
            return Ok(head);
        }
        let n = got.len();
        head.extend_from_slice(got);
        input.consume(n);
        let body = head.strip_prefix(BOM).unwrap_or(&head);
        if (head.len() >= 4 && body.iter().any(|b| !b.is_ascii_whitespace())) || head.len() >= 1 << 16 {
            return Ok(head);
        }
    }
}

/// The rest of `input` as text, at most [`goodput_core::util::input::DOCUMENT_CAP`].
fn read_whole<R: std::io::Read>(input: &mut R, path: &Path) -> Result<String, WorkloadError> {
    use goodput_core::util::input::{InputError, DOCUMENT_CAP};
    let what = "the dataset";
    let too_large = || InputError::TooLarge { path: path.to_owned(), what, cap: DOCUMENT_CAP };
    // A file's size is known before it is read (a pipe's is not).
    let size = std::fs::metadata(path).ok().filter(|m| m.is_file()).map_or(0, |m| m.len());
    if size > DOCUMENT_CAP {
        return Err(too_large().into());
    }
    let mut bytes = Vec::with_capacity(size as usize);
    std::io::Read::read_to_end(&mut std::io::Read::take(input, DOCUMENT_CAP + 1), &mut bytes)
        .map_err(|error| InputError::Io { path: path.to_owned(), what, error })?;
    if bytes.len() as u64 > DOCUMENT_CAP {
        return Err(too_large().into());
    }
    String::from_utf8(bytes).map_err(|_| InputError::NotUtf8 { path: path.to_owned(), what }.into())
}

/// The UTF-8 byte-order mark.
const BOM: &[u8] = "\u{feff}".as_bytes();

/// An entry's `"reference"` (or `"answer"`): a string, or a list of strings
/// (any of which is a right answer).
pub(super) fn reference_of(v: &Value) -> Result<Vec<String>, EntryError> {
    let (key, value) = match (v.get("reference"), v.get("answer")) {
        (Some(r), _) if !r.is_null() => ("reference", r),
        (_, Some(a)) if !a.is_null() => ("answer", a),
        _ => return Ok(Vec::new()),
    };
    let bad = || EntryError::ReferenceType { key };
    // A blank reference scores 0 against every answer (exact, ROUGE-L and
    // chrF alike), as an empty list would: refused the same way.
    let blank =
        |s: &str, list| if s.trim().is_empty() { Err(EntryError::BlankReference { key, list }) } else { Ok(()) };
    match value {
        Value::String(s) => blank(s, "").map(|()| vec![s.clone()]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|i| {
                let s = i.as_str().ok_or_else(bad)?;
                blank(s, " in its list").map(|()| s.to_owned())
            })
            .collect(),
        Value::Array(_) => Err(EntryError::NoReference { key }),
        _ => Err(bad()),
    }
}
