//! Records as Parquet (`--records run.parquet`): one row per request, a
//! column per scalar field of the record, and list columns for the chunks,
//! so that pandas, polars and DuckDB read a run's records without goodput
//! (docs/result.md says how). Written with the `parquet` crate's low-level
//! column writers, row group by row group, and read back 1,024 rows at a
//! time with its column readers.
//!
//! Every field of a [`RequestRecord`] has a column of its own except
//! `quality`, whose scores and sacreBLEU statistics are one JSON text
//! (`quality_json`, as the JSONL file writes them). `outcome` is three
//! columns: `outcome` (`success`, `failed`, `cancelled`), `failure_kind`
//! and `error` (the failure's message); `session` and `counts` one column
//! per member (`session_id`, `counts_usage_prompt`, ...). Unsigned counts are
//! stored as INT64: a bit-exact round trip, and plain integers to every
//! reader.

use super::RecordsError;
use goodput_core::{Channel, Chunks, Outcome, OutputChunk, RequestRecord, SessionTurn};
use parquet::basic::{Compression, Encoding};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::types::ColumnPath;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The columns, in the order they are written.
const SCHEMA: &str = "
message goodput_record {
  required int64 id;
  optional binary run_id (STRING);
  required boolean warmup;
  required int64 scheduled_ns;
  required int64 sent_ns;
  optional int64 first_byte_ns;
  optional int64 first_choice_ns;
  optional int64 last_choice_ns;
  optional int64 stream_end_ns;
  required int64 end_ns;
  required group chunk_t_ns (LIST) { repeated group list { required int64 element; } }
  required group chunk_tokens (LIST) { repeated group list { required int64 element; } }
  required group chunk_channel (LIST) { repeated group list { required binary element (STRING); } }
  required int64 input_tokens;
  required binary input_tokens_source (STRING);
  required int64 output_tokens;
  required binary output_tokens_source (STRING);
  required binary chunk_tokens_source (STRING);
  optional int64 counts_usage_prompt;
  optional int64 counts_usage_completion;
  optional int64 counts_usage_cached_prompt;
  optional int64 counts_tokenizer_prompt;
  optional int64 counts_tokenizer_completion;
  optional int64 counts_intended_prompt;
  optional int64 counts_requested_completion;
  required int64 counts_chunks;
  optional int64 http_status;
  optional binary retry_after (STRING);
  required int64 retries;
  optional binary finish_reason (STRING);
  optional int64 read_lag_max_ns;
  required int64 shared_reads;
  optional int64 session_id;
  optional int64 session_turn;
  optional int64 session_turns;
  optional binary model (STRING);
  required boolean abandoned;
  required binary outcome (STRING);
  optional binary failure_kind (STRING);
  optional binary error (STRING);
  optional binary quality_json (STRING);
  optional binary prompt_hash (STRING);
  optional binary output_hash (STRING);
  optional int64 repeat;
  optional group output_words (LIST) { repeated group list { required int64 element; } }
  optional binary prompt_text (STRING);
  optional binary output_text (STRING);
  optional group reference (LIST) { repeated group list { required binary element (STRING); } }
}
";

/// A row group is written once this many records are buffered, or this
/// many chunks: a few MB of columns at most, whatever the records hold.
const ROW_GROUP_RECORDS: usize = 16_384;
const ROW_GROUP_CHUNKS: usize = 1 << 20;

/// One column's values and levels, buffered until the row group is written.
struct Col<T> {
    values: Vec<T>,
    def: Vec<i16>,
    rep: Vec<i16>,
}

impl<T> Default for Col<T> {
    fn default() -> Self {
        Col { values: Vec::new(), def: Vec::new(), rep: Vec::new() }
    }
}

impl<T> Col<T> {
    fn required(&mut self, v: T) {
        self.values.push(v);
    }

    fn optional(&mut self, v: Option<T>) {
        self.def.push(i16::from(v.is_some()));
        self.values.extend(v);
    }

    /// A list's items; `present` is the definition level of a list that is
    /// there (0 for a required list, 1 for an optional one).
    fn list(&mut self, items: impl IntoIterator<Item = T>, present: i16) {
        let before = self.values.len();
        for (i, v) in items.into_iter().enumerate() {
            self.values.push(v);
            self.def.push(present + 1);
            self.rep.push(i16::from(i > 0));
        }
        if self.values.len() == before {
            self.def.push(present);
            self.rep.push(0);
        }
    }

    fn optional_list(&mut self, items: Option<impl IntoIterator<Item = T>>) {
        match items {
            Some(items) => self.list(items, 1),
            None => {
                self.def.push(0);
                self.rep.push(0);
            }
        }
    }

    fn clear(&mut self) {
        self.values.clear();
        self.def.clear();
        self.rep.clear();
    }
}

fn ns(d: Duration) -> i64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX) as i64
}

fn text(s: &str) -> ByteArray {
    ByteArray::from(s.as_bytes().to_vec())
}

/// An enum's name as its JSON form writes it (`usage`, `tool_calls`).
fn name<T: serde::Serialize>(v: &T) -> ByteArray {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => text(&s),
        _ => text(""),
    }
}

fn channel_name(c: Channel) -> &'static str {
    match c {
        Channel::Content => "content",
        Channel::Reasoning => "reasoning",
        Channel::ToolCalls => "tool_calls",
    }
}

/// The columns of the records not yet written.
#[derive(Default)]
struct Columns {
    rows: usize,
    chunks: usize,
    id: Col<i64>,
    run_id: Col<ByteArray>,
    warmup: Col<bool>,
    scheduled: Col<i64>,
    sent: Col<i64>,
    first_byte: Col<i64>,
    first_choice: Col<i64>,
    last_choice: Col<i64>,
    stream_end: Col<i64>,
    end: Col<i64>,
    chunk_t: Col<i64>,
    chunk_tokens: Col<i64>,
    chunk_channel: Col<ByteArray>,
    input_tokens: Col<i64>,
    input_tokens_source: Col<ByteArray>,
    output_tokens: Col<i64>,
    output_tokens_source: Col<ByteArray>,
    chunk_tokens_source: Col<ByteArray>,
    counts: [Col<i64>; 7],
    counts_chunks: Col<i64>,
    http_status: Col<i64>,
    retry_after: Col<ByteArray>,
    retries: Col<i64>,
    finish_reason: Col<ByteArray>,
    read_lag_max: Col<i64>,
    shared_reads: Col<i64>,
    session: [Col<i64>; 3],
    model: Col<ByteArray>,
    abandoned: Col<bool>,
    outcome: Col<ByteArray>,
    failure_kind: Col<ByteArray>,
    error: Col<ByteArray>,
    quality: Col<ByteArray>,
    prompt_hash: Col<ByteArray>,
    output_hash: Col<ByteArray>,
    repeat: Col<i64>,
    output_words: Col<i64>,
    prompt_text: Col<ByteArray>,
    output_text: Col<ByteArray>,
    reference: Col<ByteArray>,
}

impl Columns {
    fn push(&mut self, r: &RequestRecord) {
        let opt_ns = |d: Option<Duration>| d.map(ns);
        let opt_text = |s: &Option<String>| s.as_deref().map(text);
        self.rows += 1;
        self.chunks += r.chunks.len();
        self.id.required(r.id as i64);
        self.run_id.optional(opt_text(&r.run_id));
        self.warmup.required(r.warmup);
        self.scheduled.required(ns(r.scheduled));
        self.sent.required(ns(r.sent));
        self.first_byte.optional(opt_ns(r.first_byte));
        self.first_choice.optional(opt_ns(r.first_choice));
        self.last_choice.optional(opt_ns(r.last_choice));
        self.stream_end.optional(opt_ns(r.stream_end));
        self.end.required(ns(r.end));
        self.chunk_t.list(r.chunks.iter().map(|c| ns(c.t)), 0);
        self.chunk_tokens.list(r.chunks.iter().map(|c| i64::from(c.tokens)), 0);
        self.chunk_channel.list(r.chunks.iter().map(|c| text(channel_name(c.channel))), 0);
        self.input_tokens.required(r.input_tokens as i64);
        self.input_tokens_source.required(name(&r.input_tokens_source));
        self.output_tokens.required(r.output_tokens as i64);
        self.output_tokens_source.required(name(&r.output_tokens_source));
        self.chunk_tokens_source.required(name(&r.chunk_tokens_source));
        let c = &r.counts;
        let counts = [
            c.usage_prompt,
            c.usage_completion,
            c.usage_cached_prompt,
            c.tokenizer_prompt,
            c.tokenizer_completion,
            c.intended_prompt,
            c.requested_completion,
        ];
        for (col, v) in self.counts.iter_mut().zip(counts) {
            col.optional(v.map(|v| v as i64));
        }
        self.counts_chunks.required(c.chunks as i64);
        self.http_status.optional(r.http_status.map(i64::from));
        self.retry_after.optional(opt_text(&r.retry_after));
        self.retries.required(i64::from(r.retries));
        self.finish_reason.optional(opt_text(&r.finish_reason));
        self.read_lag_max.optional(opt_ns(r.read_lag_max));
        self.shared_reads.required(i64::from(r.shared_reads));
        let s = r.session;
        self.session[0].optional(s.map(|s| s.id as i64));
        self.session[1].optional(s.map(|s| i64::from(s.turn)));
        self.session[2].optional(s.map(|s| i64::from(s.turns)));
        self.model.optional(opt_text(&r.model));
        self.abandoned.required(r.abandoned);
        let (status, kind, error) = match &r.outcome {
            Outcome::Success => ("success", None, None),
            Outcome::Cancelled => ("cancelled", None, None),
            Outcome::Failed { kind, message } => ("failed", Some(name(kind)), Some(text(message))),
        };
        self.outcome.required(text(status));
        self.failure_kind.optional(kind);
        self.error.optional(error);
        self.quality.optional(r.quality.as_ref().and_then(|q| serde_json::to_string(q).ok()).map(|s| text(&s)));
        self.prompt_hash.optional(opt_text(&r.prompt_hash));
        self.output_hash.optional(opt_text(&r.output_hash));
        self.repeat.optional(r.repeat.map(i64::from));
        self.output_words.optional_list(r.output_words.as_ref().map(|w| w.iter().map(|&h| i64::from(h))));
        self.prompt_text.optional(opt_text(&r.prompt_text));
        self.output_text.optional(opt_text(&r.output_text));
        self.reference.optional_list(r.reference.as_ref().map(|refs| refs.iter().map(|s| text(s))));
    }

    /// Writes the buffered records as one row group, in the schema's order.
    fn write_to<W: Write + Send>(&mut self, w: &mut SerializedFileWriter<W>) -> parquet::errors::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut rg = w.next_row_group()?;
        let g = &mut rg;
        put::<Int64Type, W>(g, &mut self.id)?;
        put::<ByteArrayType, W>(g, &mut self.run_id)?;
        put::<BoolType, W>(g, &mut self.warmup)?;
        for c in [
            &mut self.scheduled,
            &mut self.sent,
            &mut self.first_byte,
            &mut self.first_choice,
            &mut self.last_choice,
            &mut self.stream_end,
            &mut self.end,
            &mut self.chunk_t,
            &mut self.chunk_tokens,
        ] {
            put::<Int64Type, W>(g, c)?;
        }
        put::<ByteArrayType, W>(g, &mut self.chunk_channel)?;
        put::<Int64Type, W>(g, &mut self.input_tokens)?;
        put::<ByteArrayType, W>(g, &mut self.input_tokens_source)?;
        put::<Int64Type, W>(g, &mut self.output_tokens)?;
        put::<ByteArrayType, W>(g, &mut self.output_tokens_source)?;
        put::<ByteArrayType, W>(g, &mut self.chunk_tokens_source)?;
        for c in self.counts.iter_mut().chain([&mut self.counts_chunks, &mut self.http_status]) {
            put::<Int64Type, W>(g, c)?;
        }
        put::<ByteArrayType, W>(g, &mut self.retry_after)?;
        put::<Int64Type, W>(g, &mut self.retries)?;
        put::<ByteArrayType, W>(g, &mut self.finish_reason)?;
        put::<Int64Type, W>(g, &mut self.read_lag_max)?;
        put::<Int64Type, W>(g, &mut self.shared_reads)?;
        for c in &mut self.session {
            put::<Int64Type, W>(g, c)?;
        }
        put::<ByteArrayType, W>(g, &mut self.model)?;
        put::<BoolType, W>(g, &mut self.abandoned)?;
        for c in [
            &mut self.outcome,
            &mut self.failure_kind,
            &mut self.error,
            &mut self.quality,
            &mut self.prompt_hash,
            &mut self.output_hash,
        ] {
            put::<ByteArrayType, W>(g, c)?;
        }
        put::<Int64Type, W>(g, &mut self.repeat)?;
        put::<Int64Type, W>(g, &mut self.output_words)?;
        for c in [&mut self.prompt_text, &mut self.output_text, &mut self.reference] {
            put::<ByteArrayType, W>(g, c)?;
        }
        if g.next_column()?.is_some() {
            return Err(parquet::errors::ParquetError::General("a column was left unwritten".into()));
        }
        rg.close()?;
        self.rows = 0;
        self.chunks = 0;
        Ok(())
    }
}

/// Writes the next column of the row group from `col`, and clears it.
fn put<D: DataType, W: Write + Send>(
    g: &mut SerializedRowGroupWriter<'_, W>,
    col: &mut Col<D::T>,
) -> parquet::errors::Result<()> {
    let Some(mut w) = g.next_column()? else {
        return Err(parquet::errors::ParquetError::General("more columns written than the schema has".into()));
    };
    let descr = w.typed::<D>().get_descriptor().clone();
    let def = (descr.max_def_level() > 0).then_some(&col.def[..]);
    let rep = (descr.max_rep_level() > 0).then_some(&col.rep[..]);
    w.typed::<D>().write_batch(&col.values, def, rep)?;
    w.close()?;
    col.clear();
    Ok(())
}

/// A Parquet records file being written: records are buffered by column
/// and written a row group at a time; [`ParquetSink::finish`] writes the
/// last one and the footer, without which the file cannot be read.
pub struct ParquetSink<W: Write + Send> {
    writer: SerializedFileWriter<W>,
    cols: Columns,
}

impl<W: Write + Send> ParquetSink<W> {
    pub fn new(out: W) -> parquet::errors::Result<Self> {
        let schema = Arc::new(parquet::schema::parser::parse_message_type(SCHEMA)?);
        // The chunks' times rise within a request: stored as deltas, a few
        // bytes each. Every reader named in docs/result.md decodes them.
        let times = || ColumnPath::from(vec!["chunk_t_ns".to_owned(), "list".to_owned(), "element".to_owned()]);
        let props = WriterProperties::builder()
            .set_compression(Compression::UNCOMPRESSED)
            .set_column_dictionary_enabled(times(), false)
            .set_column_encoding(times(), Encoding::DELTA_BINARY_PACKED)
            .set_created_by(format!("goodput {}", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(ParquetSink { writer: SerializedFileWriter::new(out, schema, Arc::new(props))?, cols: Columns::default() })
    }

    pub fn write(&mut self, r: &RequestRecord) -> parquet::errors::Result<()> {
        self.cols.push(r);
        if self.cols.rows >= ROW_GROUP_RECORDS || self.cols.chunks >= ROW_GROUP_CHUNKS {
            self.cols.write_to(&mut self.writer)?;
        }
        Ok(())
    }

    /// Writes what is buffered and the footer; gives the output back.
    pub fn finish(mut self) -> parquet::errors::Result<W> {
        self.cols.write_to(&mut self.writer)?;
        self.writer.into_inner()
    }
}

/// The rows of a Parquet records file, read back as records a batch of
/// rows at a time: each column's values and levels for the batch are
/// decoded, then the records are put together from the columns row by row.
pub struct ParquetRows {
    path: PathBuf,
    reader: SerializedFileReader<std::fs::File>,
    /// The next row group to open.
    group: usize,
    /// The open row group's columns; its rows not yet decoded, and the
    /// decoded rows not yet read.
    cols: Vec<Column>,
    group_left: usize,
    left: usize,
    /// Rows read so far (1-based number of the last).
    row: usize,
    done: bool,
}

/// The columns a records file must have: the rest have defaults.
const REQUIRED: [&str; 9] = [
    "id",
    "scheduled_ns",
    "sent_ns",
    "end_ns",
    "input_tokens",
    "input_tokens_source",
    "output_tokens",
    "output_tokens_source",
    "outcome",
];

/// One value of a column.
#[derive(Clone)]
enum Val {
    I(i64),
    B(bool),
    S(ByteArray),
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::I(v) => write!(f, "the integer {v}"),
            Val::B(v) => write!(f, "the boolean {v}"),
            Val::S(v) => write!(f, "the text {:?}", String::from_utf8_lossy(v.data())),
        }
    }
}

/// Rows decoded at a time: a few hundred kB of columns at 64 chunks a row.
const BATCH: usize = 1024;

/// A column chunk's reader, by its type.
enum Reader {
    I64(parquet::column::reader::ColumnReaderImpl<Int64Type>),
    I32(parquet::column::reader::ColumnReaderImpl<parquet::data_type::Int32Type>),
    B(parquet::column::reader::ColumnReaderImpl<BoolType>),
    S(parquet::column::reader::ColumnReaderImpl<ByteArrayType>),
    None,
}

enum Vals {
    I(Vec<i64>),
    B(Vec<bool>),
    S(Vec<ByteArray>),
    /// A column of a type no record field has: its rows read as nulls.
    Other,
}

/// A row group's column, decoded, with where the next row begins.
struct Column {
    name: String,
    reader: Reader,
    vals: Vals,
    def: Vec<i16>,
    rep: Vec<i16>,
    max_def: i16,
    max_rep: i16,
    /// The next value and the next level.
    vi: usize,
    li: usize,
}

impl Column {
    fn value(&mut self) -> Result<Val, String> {
        let i = self.vi;
        self.vi += 1;
        let v = match &self.vals {
            Vals::I(v) => v.get(i).map(|v| Val::I(*v)),
            Vals::B(v) => v.get(i).map(|v| Val::B(*v)),
            Vals::S(v) => v.get(i).cloned().map(Val::S),
            Vals::Other => return Err(format!("column `{}` is of a type no record field has", self.name)),
        };
        v.ok_or_else(|| format!("column `{}` has fewer values than its levels say", self.name))
    }

    fn level(&mut self) -> Result<(i16, i16), String> {
        let i = self.li;
        self.li += 1;
        let def = if self.max_def > 0 { self.def.get(i).copied() } else { Some(self.max_def) };
        let rep = if self.max_rep > 0 { self.rep.get(i).copied() } else { Some(0) };
        def.zip(rep).ok_or_else(|| format!("column `{}` has fewer levels than its rows", self.name))
    }

    /// The next row's value of a column of one value a row (None: null).
    fn scalar(&mut self) -> Result<Option<Val>, String> {
        let (def, _) = self.level()?;
        if def < self.max_def || matches!(self.vals, Vals::Other) {
            return Ok(None);
        }
        self.value().map(Some)
    }

    /// The next row's items of a list column (None: a null list).
    fn list(&mut self) -> Result<Option<Vec<Val>>, String> {
        let (def, _) = self.level()?;
        if def < self.max_def - 1 || matches!(self.vals, Vals::Other) {
            self.skip_rest();
            return Ok(None);
        }
        let mut items = Vec::new();
        if def == self.max_def {
            items.push(self.value()?);
        }
        while self.rep.get(self.li).is_some_and(|&r| r > 0) {
            let (def, _) = self.level()?;
            if def == self.max_def {
                items.push(self.value()?);
            }
        }
        Ok(Some(items))
    }

    /// Passes over the rest of a row's levels.
    fn skip_rest(&mut self) {
        while self.max_rep > 0 && self.rep.get(self.li).is_some_and(|&r| r > 0) {
            self.li += 1;
        }
    }
}

/// Reads the next `rows` records of a column chunk into `vals` and the
/// levels.
fn read_column<T: DataType>(
    r: &mut parquet::column::reader::ColumnReaderImpl<T>,
    rows: usize,
    name: &str,
    (max_def, max_rep): (i16, i16),
    def: &mut Vec<i16>,
    rep: &mut Vec<i16>,
    vals: &mut Vec<T::T>,
) -> Result<(), String> {
    let mut got = 0;
    while got < rows {
        let d = if max_def > 0 { Some(&mut *def) } else { None };
        let r_ = if max_rep > 0 { Some(&mut *rep) } else { None };
        let (n, _, _) = r.read_records(rows - got, d, r_, vals).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(format!("column `{name}` ends before its row group's rows do"));
        }
        got += n;
    }
    Ok(())
}

impl Column {
    /// Decodes the column's next `rows` rows, in place of the last batch.
    fn fill(&mut self, rows: usize) -> Result<(), String> {
        let Column { name, reader, vals, def, rep, max_def, max_rep, vi, li } = self;
        (*vi, *li) = (0, 0);
        def.clear();
        rep.clear();
        let levels = (*max_def, *max_rep);
        match (reader, vals) {
            (Reader::I64(r), Vals::I(v)) => {
                v.clear();
                read_column(r, rows, name, levels, def, rep, v)
            }
            (Reader::I32(r), Vals::I(v)) => {
                let mut narrow = Vec::new();
                read_column(r, rows, name, levels, def, rep, &mut narrow)?;
                *v = narrow.into_iter().map(i64::from).collect();
                Ok(())
            }
            (Reader::B(r), Vals::B(v)) => {
                v.clear();
                read_column(r, rows, name, levels, def, rep, v)
            }
            (Reader::S(r), Vals::S(v)) => {
                v.clear();
                read_column(r, rows, name, levels, def, rep, v)
            }
            // Not decoded: each row's value is null.
            _ => {
                def.resize(rows, 0);
                Ok(())
            }
        }
    }
}

impl ParquetRows {
    pub fn open(path: &Path) -> Result<Self, RecordsError> {
        let f = std::fs::File::open(path).map_err(|err| RecordsError::Read { path: path.to_owned(), err })?;
        let bad = |why: String| RecordsError::Parquet { path: path.to_owned(), why };
        let reader = SerializedFileReader::new(f).map_err(|e| {
            bad(format!(
                "{e}. A run stopped before it closed its records (killed, or out of disk) leaves a Parquet file \
                 without its footer, which no reader can open: write --records FILE.jsonl, readable up to its last \
                 complete line, where runs may be killed"
            ))
        })?;
        let fields = reader.metadata().file_metadata().schema_descr().root_schema().get_fields().to_vec();
        for want in REQUIRED {
            if !fields.iter().any(|f| f.name() == want) {
                return Err(bad(format!(
                    "it has no column `{want}`, so it is not a goodput records file: give the file written by \
                     --records FILE.parquet"
                )));
            }
        }
        Ok(ParquetRows {
            path: path.to_owned(),
            reader,
            group: 0,
            cols: Vec::new(),
            group_left: 0,
            left: 0,
            row: 0,
            done: false,
        })
    }

    /// Opens the next row group's columns.
    fn open_group(&mut self) -> Result<(), String> {
        use parquet::column::reader::ColumnReader;
        let g = self.reader.get_row_group(self.group).map_err(|e| e.to_string())?;
        self.group += 1;
        let rows = usize::try_from(g.metadata().num_rows()).map_err(|_| "a row group of fewer than no rows")?;
        let mut cols = Vec::new();
        for i in 0..g.num_columns() {
            let descr = g.metadata().column(i).column_descr_ptr();
            let (reader, vals) = match g.get_column_reader(i).map_err(|e| e.to_string())? {
                ColumnReader::Int64ColumnReader(r) => (Reader::I64(r), Vals::I(Vec::new())),
                ColumnReader::Int32ColumnReader(r) => (Reader::I32(r), Vals::I(Vec::new())),
                ColumnReader::BoolColumnReader(r) => (Reader::B(r), Vals::B(Vec::new())),
                ColumnReader::ByteArrayColumnReader(r) => (Reader::S(r), Vals::S(Vec::new())),
                // Not decoded: a field of a newer goodput or another program.
                _ => (Reader::None, Vals::Other),
            };
            let other = matches!(reader, Reader::None);
            cols.push(Column {
                name: descr.path().parts().first().cloned().unwrap_or_default(),
                reader,
                vals,
                def: Vec::new(),
                rep: Vec::new(),
                // A column not decoded reads as one null a row.
                max_def: if other { 1 } else { descr.max_def_level() },
                max_rep: if other { 0 } else { descr.max_rep_level() },
                vi: 0,
                li: 0,
            });
        }
        self.cols = cols;
        self.group_left = rows;
        Ok(())
    }

    fn next_row(&mut self) -> Result<Option<RequestRecord>, String> {
        while self.left == 0 {
            if self.group_left == 0 {
                if self.group >= self.reader.num_row_groups() {
                    return Ok(None);
                }
                self.open_group()?;
                continue;
            }
            let n = self.group_left.min(BATCH);
            for c in &mut self.cols {
                c.fill(n)?;
            }
            (self.group_left, self.left) = (self.group_left - n, n);
        }
        self.left -= 1;
        self.row += 1;
        record_of(&mut self.cols).map(Some)
    }

    pub fn next_record(&mut self) -> Option<Result<RequestRecord, RecordsError>> {
        if self.done {
            return None;
        }
        // The reader may assert on some damage rather than err: a damaged
        // file is an error all the same.
        let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.next_row()))
            .unwrap_or_else(|_| Err("the file is damaged".into()));
        match next {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(why) => {
                self.done = true;
                let (path, row) = (self.path.clone(), self.row.max(1));
                Some(Err(RecordsError::ParquetRow { path, row, why }))
            }
        }
    }
}

fn text_of(v: &Val) -> Option<&str> {
    match v {
        Val::S(b) => std::str::from_utf8(b.data()).ok(),
        _ => None,
    }
}

/// An enum by the name its JSON form gives it (`usage`, `tool_calls`).
fn named<T: serde::de::DeserializeOwned>(v: &Val) -> Option<T> {
    text_of(v).and_then(|s| serde_json::from_value(serde_json::Value::String(s.to_owned())).ok())
}

/// The next row of `cols` as a record; the error names the column that
/// does not fit.
fn record_of(cols: &mut [Column]) -> Result<RequestRecord, String> {
    let mut r = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
    let (mut times, mut tokens, mut channels) = (Vec::new(), Vec::new(), Vec::new());
    let (mut status, mut kind, mut message) = (None, None, String::new());
    let mut session = [None; 3];
    for col in cols.iter_mut() {
        let (items, v) = if col.max_rep > 0 { (col.list()?, None) } else { (None, col.scalar()?) };
        let name = col.name.as_str();
        let wrong = |v: &Val| format!("column `{name}` holds {v}, which is not what a goodput record holds there");
        if let Some(items) = items {
            let ints = || {
                items
                    .iter()
                    .map(|v| if let Val::I(i) = v { Ok(*i) } else { Err(wrong(v)) })
                    .collect::<Result<Vec<_>, _>>()
            };
            let texts = || {
                items
                    .iter()
                    .map(|v| text_of(v).map(str::to_owned).ok_or_else(|| wrong(v)))
                    .collect::<Result<Vec<_>, _>>()
            };
            match name {
                "chunk_t_ns" => times = ints()?.into_iter().map(|v| v as u64).collect(),
                "chunk_tokens" => tokens = ints()?.into_iter().map(|v| v as u32).collect(),
                "chunk_channel" => {
                    channels = items
                        .iter()
                        .map(|v| match text_of(v) {
                            Some("content") => Ok(Channel::Content),
                            Some("reasoning") => Ok(Channel::Reasoning),
                            Some("tool_calls") => Ok(Channel::ToolCalls),
                            _ => Err(wrong(v)),
                        })
                        .collect::<Result<_, _>>()?
                }
                "output_words" => r.output_words = Some(ints()?.into_iter().map(|v| v as u32).collect()),
                "reference" => r.reference = Some(texts()?),
                // A column of a newer goodput: left to it.
                _ => {}
            }
            continue;
        }
        let Some(v) = v else { continue };
        let n = || if let Val::I(i) = v { Ok(i) } else { Err(wrong(&v)) };
        let u = || n().map(|v| v as u64);
        let u32_ = || n().map(|v| v as u32);
        let t = || u().map(Duration::from_nanos);
        let s = || text_of(&v).map(str::to_owned).ok_or_else(|| wrong(&v));
        let b = || if let Val::B(b) = v { Ok(b) } else { Err(wrong(&v)) };
        let e = || wrong(&v);
        match name {
            "id" => r.id = u()?,
            "run_id" => r.run_id = Some(s()?),
            "warmup" => r.warmup = b()?,
            "scheduled_ns" => r.scheduled = t()?,
            "sent_ns" => r.sent = t()?,
            "first_byte_ns" => r.first_byte = Some(t()?),
            "first_choice_ns" => r.first_choice = Some(t()?),
            "last_choice_ns" => r.last_choice = Some(t()?),
            "stream_end_ns" => r.stream_end = Some(t()?),
            "end_ns" => r.end = t()?,
            "input_tokens" => r.input_tokens = u()?,
            "input_tokens_source" => r.input_tokens_source = named(&v).ok_or_else(e)?,
            "output_tokens" => r.output_tokens = u()?,
            "output_tokens_source" => r.output_tokens_source = named(&v).ok_or_else(e)?,
            "chunk_tokens_source" => r.chunk_tokens_source = named(&v).ok_or_else(e)?,
            "counts_usage_prompt" => r.counts.usage_prompt = Some(u()?),
            "counts_usage_completion" => r.counts.usage_completion = Some(u()?),
            "counts_usage_cached_prompt" => r.counts.usage_cached_prompt = Some(u()?),
            "counts_tokenizer_prompt" => r.counts.tokenizer_prompt = Some(u()?),
            "counts_tokenizer_completion" => r.counts.tokenizer_completion = Some(u()?),
            "counts_intended_prompt" => r.counts.intended_prompt = Some(u()?),
            "counts_requested_completion" => r.counts.requested_completion = Some(u()?),
            "counts_chunks" => r.counts.chunks = u()?,
            "http_status" => r.http_status = Some(n()? as u16),
            "retry_after" => r.retry_after = Some(s()?),
            "retries" => r.retries = u32_()?,
            "finish_reason" => r.finish_reason = Some(s()?),
            "read_lag_max_ns" => r.read_lag_max = Some(t()?),
            "shared_reads" => r.shared_reads = u32_()?,
            "session_id" => session[0] = Some(u()?),
            "session_turn" => session[1] = Some(u()?),
            "session_turns" => session[2] = Some(u()?),
            "model" => r.model = Some(s()?),
            "abandoned" => r.abandoned = b()?,
            "outcome" => status = Some(s()?),
            "failure_kind" => kind = Some(named(&v).ok_or_else(e)?),
            "error" => message = s()?,
            "quality_json" => r.quality = Some(serde_json::from_str(&s()?).map_err(|err| format!("{}: {err}", e()))?),
            "prompt_hash" => r.prompt_hash = Some(s()?),
            "output_hash" => r.output_hash = Some(s()?),
            "repeat" => r.repeat = Some(u32_()?),
            "prompt_text" => r.prompt_text = Some(s()?),
            "output_text" => r.output_text = Some(s()?),
            // A column of a newer goodput: left to it.
            _ => {}
        }
    }
    if let [Some(id), Some(turn), Some(turns)] = session {
        r.session = Some(SessionTurn { id, turn: turn as u32, turns: turns as u32 });
    }
    r.outcome = match status.as_deref() {
        Some("success") => Outcome::Success,
        Some("cancelled") => Outcome::Cancelled,
        Some("failed") => {
            Outcome::Failed { kind: kind.ok_or("a failed request's row has no `failure_kind`")?, message }
        }
        other => return Err(format!("`outcome` is {other:?}, not success, failed or cancelled")),
    };
    if tokens.len() != times.len() || (!channels.is_empty() && channels.len() != times.len()) {
        return Err(format!(
            "`chunk_t_ns` has {} chunks, `chunk_tokens` {} and `chunk_channel` {}: each list has one item a chunk",
            times.len(),
            tokens.len(),
            channels.len()
        ));
    }
    let mut chunks = Chunks::new();
    chunks.reserve_exact(times.len());
    for (i, (t, k)) in times.into_iter().zip(tokens).enumerate() {
        let channel = channels.get(i).copied().unwrap_or(Channel::Content);
        chunks.push(OutputChunk { t: Duration::from_nanos(t), tokens: k, channel });
    }
    chunks.shrink_to_fit();
    r.chunks = chunks;
    Ok(r)
}
