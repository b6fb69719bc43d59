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

/// Reads a dataset: ShareGPT JSON (an array of `{"conversations": [...]}`) or
/// JSONL of `{"prompt": …}` / `{"messages": …}` with optional `max_tokens`.
/// JSONL is read a line at a time, each at most
/// [`goodput_core::util::input::LINE_CAP`] (a FIFO will do); a ShareGPT array is
/// read whole, from a regular file of at most
/// [`goodput_core::util::input::DOCUMENT_CAP`].
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
    use std::io::BufRead;
    let path_buf = || path.to_path_buf();
    if super::parquet::is_parquet(path) {
        let entries = super::parquet::load(path, tokenizer, column)?;
        return if entries.is_empty() { Err(WorkloadError::Empty { path: path_buf() }) } else { Ok(entries) };
    }
    let mut lines = LineReader::open(path, "the dataset")?;
    let first =
        lines.input().fill_buf().map_err(|e| WorkloadError::DatasetRead { path: path_buf(), error: e.to_string() })?;
    // Editors on Windows begin UTF-8 files with a byte-order mark.
    let first = first.strip_prefix(BOM).unwrap_or(first);
    let entries = if first.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        drop(lines);
        let text = goodput_core::util::input::read_text(path, "the dataset", goodput_core::util::input::DOCUMENT_CAP)?;
        goodput_core::util::input::check_parse(path, "the dataset", &text)?;
        let trimmed = text.strip_prefix('\u{feff}').unwrap_or(&text).trim_start();
        let v: Value = serde_json::from_str(trimmed)
            .map_err(|e| WorkloadError::DatasetArray { path: path_buf(), error: e.to_string() })?;
        let items = v.as_array().map(Vec::as_slice).unwrap_or_default();
        if column.is_none() && items.iter().any(|i| i.get("conversations").is_some()) {
            sharegpt(&v, tokenizer).map_err(|reason| WorkloadError::ShareGpt { path: path_buf(), reason })?
        } else {
            // An array of entries, each as a JSONL line is read.
            let mut out = Vec::new();
            for (k, item) in items.iter().enumerate() {
                let at = |reason| WorkloadError::Item { path: path_buf(), place: format!("entry {}", k + 1), reason };
                out.extend(super::columns::entry_of(item, column, tokenizer).map_err(at)?);
            }
            out
        }
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
    match value {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) if !items.is_empty() => {
            items.iter().map(|i| i.as_str().map(str::to_owned).ok_or_else(bad)).collect()
        }
        Value::Array(_) => Err(EntryError::NoReference { key }),
        _ => Err(bad()),
    }
}

/// A ShareGPT array's entries, or what is wrong with it.
fn sharegpt(v: &Value, tokenizer: Option<&TokenCounter>) -> Result<Vec<DatasetEntry>, ShareGptError> {
    let arr = v.as_array().ok_or(ShareGptError::NotArray)?;
    let mut out = Vec::new();
    for item in arr {
        let Some(conv) = item.get("conversations").and_then(Value::as_array) else {
            continue;
        };
        // The first human turn is the prompt; the reply that follows sets the output length.
        let turn = |i: usize| conv.get(i).and_then(|t| t.get("value")).and_then(Value::as_str);
        let (Some(prompt), Some(reply)) = (turn(0), turn(1)) else {
            continue;
        };
        if prompt.is_empty() || reply.is_empty() {
            continue;
        }
        let reply_tokens = |reply: &str| count_tokens(reply, tokenizer);
        // Later questions, each with the answer it got, while the turns alternate.
        let follow_ups = (1..)
            .map_while(|k| Some((turn(2 * k)?, turn(2 * k + 1)?)))
            .take_while(|(q, a)| !q.is_empty() && !a.is_empty())
            .map(|(q, a)| (q.to_owned(), Some(reply_tokens(a))))
            .collect();
        out.push(DatasetEntry {
            prompt: PromptBody::Text(prompt.to_owned()),
            max_tokens: Some(reply_tokens(reply)),
            follow_ups,
            reference: Vec::new(),
            prompt_tokens: count_tokens(prompt, tokenizer),
            images: Vec::new(),
        });
    }
    if out.is_empty() && !arr.is_empty() {
        return Err(ShareGptError::NoConversation);
    }
    Ok(out)
}
