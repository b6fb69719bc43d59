//! Datasets in Parquet, as the Hugging Face hub stores them: each row a
//! record of columns, read as a JSONL line is ([`super::columns`]). Only
//! the prompt column and the columns an entry may take beside it
//! (`max_tokens`, `reference`, `answer`, Alpaca's `input`) are read.

use crate::error::WorkloadError;
use crate::tokenizer::TokenCounter;
use std::path::Path;

/// Parquet's magic bytes, at the start and the end of a file.
const MAGIC: &[u8; 4] = b"PAR1";

/// Whether `path` names a Parquet file by its extension.
pub(super) fn has_extension(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

/// Whether a file's first bytes are Parquet's.
pub(super) fn has_magic(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

#[cfg(feature = "parquet")]
pub(super) fn load(
    path: &Path,
    tokenizer: Option<&TokenCounter>,
    column: Option<&str>,
    out: &mut super::dataset::Collector,
) -> Result<(), WorkloadError> {
    use super::columns::DETECTED;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::schema::types::Type;
    use std::sync::Arc;

    let fail =
        |e: &dyn std::fmt::Display| WorkloadError::Parquet { path: path.to_owned(), error: hint(&e.to_string()) };
    // Parquet keeps its index at the end: a pipe, which cannot be read
    // from the end, is refused by name.
    let file = goodput_core::util::input::open_regular(path, "a Parquet dataset")?;
    let reader = SerializedFileReader::new(file).map_err(|e| fail(&e))?;
    let schema = reader.metadata().file_metadata().schema();
    let fields = schema.get_fields();
    let names: Vec<&str> = fields.iter().map(|f| f.name()).collect();
    let key = match column {
        Some(c) if names.contains(&c) => c,
        Some(c) => {
            let found = crate::error::EntryError::NoColumn { column: c.to_owned(), found: quoted(&names) };
            return Err(WorkloadError::Item { path: path.to_owned(), place: "schema".into(), reason: found });
        }
        None => DETECTED.into_iter().find(|k| names.contains(k)).ok_or_else(|| WorkloadError::Item {
            path: path.to_owned(),
            place: "schema".into(),
            reason: crate::error::EntryError::NoPrompt { found: quoted(&names) },
        })?,
    };
    // The image columns too: the hub's Image feature (`{bytes, path}`) comes
    // out with its bytes in base64.
    let mut wanted = vec![key, "max_tokens", "reference", "answer", "input"];
    wanted.extend(super::images::IMAGE_COLUMNS);
    let projection: Vec<Arc<Type>> = fields.iter().filter(|f| wanted.contains(&f.name())).cloned().collect();
    let projection = Type::group_type_builder(schema.name()).with_fields(projection).build().map_err(|e| fail(&e))?;
    for (i, row) in reader.get_row_iter(Some(projection)).map_err(|e| fail(&e))?.enumerate() {
        let row = row.map_err(|e| fail(&e))?;
        let place = || format!("row {}", i + 1);
        let v = row.to_json_value();
        let entry = super::columns::entry_of(&v, Some(key), tokenizer).map_err(|reason| WorkloadError::Item {
            path: path.to_owned(),
            place: place(),
            reason,
        })?;
        out.take(entry, place)?;
    }
    Ok(())
}

#[cfg(not(feature = "parquet"))]
pub(super) fn load(
    path: &Path,
    _tokenizer: Option<&TokenCounter>,
    _column: Option<&str>,
    _out: &mut super::dataset::Collector,
) -> Result<(), WorkloadError> {
    Err(WorkloadError::Parquet {
        path: path.to_owned(),
        error: "this build of goodput reads no Parquet (built without its `parquet` feature): convert the file to \
                JSONL, e.g. with `python -c \"import pandas as pd; pd.read_parquet('IN').to_json('OUT.jsonl', \
                orient='records', lines=True)\"`"
            .into(),
    })
}

/// The column names, quoted, for messages.
#[cfg(feature = "parquet")]
fn quoted(names: &[&str]) -> String {
    if names.is_empty() {
        return "none".into();
    }
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}

/// The parquet crate's message, with the fix when the file is compressed
/// with a codec this build does not read.
#[cfg(feature = "parquet")]
fn hint(error: &str) -> String {
    let lower = error.to_ascii_lowercase();
    if lower.contains("codec") || lower.contains("disabled feature") || lower.contains("compression") {
        format!(
            "{error}; goodput reads uncompressed and Snappy-compressed Parquet (pandas', pyarrow's and the hub's own \
             default): rewrite it with `python -c \"import pyarrow.parquet as pq; \
             pq.write_table(pq.read_table('IN'), 'OUT.parquet', compression='snappy')\"`"
        )
    } else {
        error.to_owned()
    }
}
