//! Reading: each column decoded a batch of rows at a time, and the
//! records put together from the columns row by row.

use super::{channel_of, BATCH, REQUIRED};
use crate::read::records::RecordsError;
use goodput_core::{Channel, Chunks, FailureKind, Outcome, OutputChunk, RequestRecord, SessionTurn};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, Int64Type};
use parquet::file::reader::{FileReader, SerializedFileReader};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// Why a row of a records file cannot be read as a record. Its text
/// follows "FILE row N is not a goodput record: " (RecordsError::ParquetRow).
#[derive(Debug, thiserror::Error)]
enum ParquetFault {
    #[error("{0}")]
    Library(#[from] parquet::errors::ParquetError),
    /// The reader asserted rather than erred.
    #[error("the file is damaged")]
    Damaged,
    #[error("a row group of fewer than no rows")]
    NegativeRows,
    #[error("column `{0}` ends before its row group's rows do")]
    ShortColumn(String),
    #[error("column `{0}` has fewer levels than its rows")]
    FewerLevels(String),
    #[error("column `{0}` has fewer values than its levels say")]
    FewerValues(String),
    #[error("column `{0}` is of a type no record field has")]
    Untyped(String),
    /// A value of the wrong type, or not one of the names the field has.
    #[error("column `{column}` holds {value}, which is not what a goodput record holds there")]
    Mistyped { column: String, value: Val },
    #[error("column `{column}` holds {value}, which is not what a goodput record holds there: {err}")]
    BadJson { column: String, value: Val, err: serde_json::Error },
    #[error("a failed request's row has no `failure_kind`")]
    NoFailureKind,
    /// Times in an order no request has ([`RequestRecord::time_fault`]).
    #[error("request {0}'s {1}: the file was edited or damaged")]
    OutOfOrder(u64, String),
    #[error("`outcome` is {0:?}, not success, failed or cancelled")]
    BadOutcome(Option<String>),
    #[error(
        "`chunk_t_ns` has {times} chunks, `chunk_tokens` {tokens} and `chunk_channel` {channels}: each list has one \
         item a chunk"
    )]
    ChunkLists { times: usize, tokens: usize, channels: usize },
}

/// One value of a column.
#[derive(Clone, Debug)]
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
    fn value(&mut self) -> Result<Val, ParquetFault> {
        let i = self.vi;
        self.vi += 1;
        let v = match &self.vals {
            Vals::I(v) => v.get(i).map(|v| Val::I(*v)),
            Vals::B(v) => v.get(i).map(|v| Val::B(*v)),
            Vals::S(v) => v.get(i).cloned().map(Val::S),
            Vals::Other => return Err(ParquetFault::Untyped(self.name.clone())),
        };
        v.ok_or_else(|| ParquetFault::FewerValues(self.name.clone()))
    }

    fn level(&mut self) -> Result<(i16, i16), ParquetFault> {
        let i = self.li;
        self.li += 1;
        let def = if self.max_def > 0 { self.def.get(i).copied() } else { Some(self.max_def) };
        let rep = if self.max_rep > 0 { self.rep.get(i).copied() } else { Some(0) };
        def.zip(rep).ok_or_else(|| ParquetFault::FewerLevels(self.name.clone()))
    }

    /// The next row's value of a column of one value a row (None: null).
    fn scalar(&mut self) -> Result<Option<Val>, ParquetFault> {
        let (def, _) = self.level()?;
        if def < self.max_def || matches!(self.vals, Vals::Other) {
            return Ok(None);
        }
        self.value().map(Some)
    }

    /// The next row's items of a list column (None: a null list).
    fn list(&mut self) -> Result<Option<Vec<Val>>, ParquetFault> {
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
) -> Result<(), ParquetFault> {
    let mut got = 0;
    while got < rows {
        let d = if max_def > 0 { Some(&mut *def) } else { None };
        let r_ = if max_rep > 0 { Some(&mut *rep) } else { None };
        let (n, _, _) = r.read_records(rows - got, d, r_, vals)?;
        if n == 0 {
            return Err(ParquetFault::ShortColumn(name.to_owned()));
        }
        got += n;
    }
    Ok(())
}

impl Column {
    /// Decodes the column's next `rows` rows, in place of the last batch.
    fn fill(&mut self, rows: usize) -> Result<(), ParquetFault> {
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
        let f = goodput_core::util::input::open_regular(path, "the Parquet records file")?;
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
    fn open_group(&mut self) -> Result<(), ParquetFault> {
        use parquet::column::reader::ColumnReader;
        let g = self.reader.get_row_group(self.group)?;
        self.group += 1;
        let rows = usize::try_from(g.metadata().num_rows()).map_err(|_| ParquetFault::NegativeRows)?;
        let mut cols = Vec::new();
        for i in 0..g.num_columns() {
            let descr = g.metadata().column(i).column_descr_ptr();
            let (reader, vals) = match g.get_column_reader(i)? {
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

    fn next_row(&mut self) -> Result<Option<RequestRecord>, ParquetFault> {
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

    /// Rows read so far: the row of the record last read, from 1.
    pub fn rows_read(&self) -> usize {
        self.row
    }

    pub fn next_record(&mut self) -> Option<Result<RequestRecord, RecordsError>> {
        if self.done {
            return None;
        }
        // The reader may assert on some damage rather than err: a damaged
        // file is an error all the same.
        let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.next_row()))
            .unwrap_or_else(|_| Err(ParquetFault::Damaged));
        match next {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(fault) => {
                self.done = true;
                let why = fault.to_string();
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
fn record_of(cols: &mut [Column]) -> Result<RequestRecord, ParquetFault> {
    let mut r = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
    let mut parts = Parts::default();
    for col in cols.iter_mut() {
        if col.max_rep > 0 {
            if let Some(items) = col.list()? {
                list_field(&mut r, &mut parts, &col.name, &items)?;
            }
        } else if let Some(v) = col.scalar()? {
            scalar_field(&mut r, &mut parts, &col.name, v)?;
        }
    }
    parts.put_into(&mut r)?;
    match r.time_fault() {
        Some(what) => Err(ParquetFault::OutOfOrder(r.id, what)),
        None => Ok(r),
    }
}

/// What a row's columns give that is put into its record once the whole
/// row is read: the chunks' lists, the outcome's columns and the
/// session's members.
#[derive(Default)]
struct Parts {
    times: Vec<u64>,
    tokens: Vec<u32>,
    channels: Vec<Channel>,
    status: Option<String>,
    kind: Option<FailureKind>,
    message: String,
    session: [Option<u64>; 3],
}

impl Parts {
    /// The session, the outcome and the chunks of `r`.
    fn put_into(self, r: &mut RequestRecord) -> Result<(), ParquetFault> {
        let Parts { times, tokens, channels, status, kind, message, session } = self;
        if let [Some(id), Some(turn), Some(turns)] = session {
            r.session = Some(SessionTurn { id, turn: turn as u32, turns: turns as u32 });
        }
        r.outcome = match status.as_deref() {
            Some("success") => Outcome::Success,
            Some("cancelled") => Outcome::Cancelled,
            Some("failed") => Outcome::Failed { kind: kind.ok_or(ParquetFault::NoFailureKind)?, message },
            _ => return Err(ParquetFault::BadOutcome(status)),
        };
        if tokens.len() != times.len() || (!channels.is_empty() && channels.len() != times.len()) {
            let (times, tokens, channels) = (times.len(), tokens.len(), channels.len());
            return Err(ParquetFault::ChunkLists { times, tokens, channels });
        }
        let mut chunks = Chunks::new();
        chunks.reserve_exact(times.len());
        for (i, (t, k)) in times.into_iter().zip(tokens).enumerate() {
            let channel = channels.get(i).copied().unwrap_or(Channel::Content);
            chunks.push(OutputChunk { t: Duration::from_nanos(t), tokens: k, channel });
        }
        chunks.shrink_to_fit();
        r.chunks = chunks;
        Ok(())
    }
}

fn mistyped(column: &str, v: &Val) -> ParquetFault {
    ParquetFault::Mistyped { column: column.to_owned(), value: v.clone() }
}

/// The items of list column `name` into `r` or `parts`.
fn list_field(r: &mut RequestRecord, parts: &mut Parts, name: &str, items: &[Val]) -> Result<(), ParquetFault> {
    let ints = || {
        items
            .iter()
            .map(|v| if let Val::I(i) = v { Ok(*i) } else { Err(mistyped(name, v)) })
            .collect::<Result<Vec<_>, _>>()
    };
    let texts = || {
        items
            .iter()
            .map(|v| text_of(v).map(str::to_owned).ok_or_else(|| mistyped(name, v)))
            .collect::<Result<Vec<_>, _>>()
    };
    match name {
        "chunk_t_ns" => parts.times = ints()?.into_iter().map(|v| v as u64).collect(),
        "chunk_tokens" => parts.tokens = ints()?.into_iter().map(|v| v as u32).collect(),
        "chunk_channel" => {
            parts.channels = items
                .iter()
                .map(|v| text_of(v).and_then(channel_of).ok_or_else(|| mistyped(name, v)))
                .collect::<Result<_, _>>()?
        }
        "output_words" => r.output_words = Some(ints()?.into_iter().map(|v| v as u32).collect()),
        "reference" => r.reference = Some(texts()?),
        // A column of a newer goodput: left to it.
        _ => {}
    }
    Ok(())
}

/// The value of column `name` into `r` or `parts`.
fn scalar_field(r: &mut RequestRecord, parts: &mut Parts, name: &str, v: Val) -> Result<(), ParquetFault> {
    let e = || mistyped(name, &v);
    let n = || if let Val::I(i) = v { Ok(i) } else { Err(e()) };
    let u = || n().map(|v| v as u64);
    let u32_ = || n().map(|v| v as u32);
    let t = || u().map(Duration::from_nanos);
    let s = || text_of(&v).map(str::to_owned).ok_or_else(e);
    let b = || if let Val::B(b) = v { Ok(b) } else { Err(e()) };
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
        "retry_after_date" => r.retry_after_date = Some(s()?),
        "retries" => r.retries = u32_()?,
        "finish_reason" => r.finish_reason = Some(s()?),
        "read_lag_max_ns" => r.read_lag_max = Some(t()?),
        "shared_reads" => r.shared_reads = u32_()?,
        "bound_chunks" => r.bound_chunks = u32_()?,
        "ttft_bound" => r.ttft_bound = b()?,
        "client_stalled" => r.client_stalled = b()?,
        "images" => r.images = u32_()?,
        "image_bytes" => r.image_bytes = u()?,
        "session_id" => parts.session[0] = Some(u()?),
        "session_turn" => parts.session[1] = Some(u()?),
        "session_turns" => parts.session[2] = Some(u()?),
        "model" => r.model = Some(s()?),
        "abandoned" => r.abandoned = b()?,
        "outcome" => parts.status = Some(s()?),
        "failure_kind" => parts.kind = Some(named(&v).ok_or_else(e)?),
        "error" => parts.message = s()?,
        "quality_json" => {
            let bad = |err| ParquetFault::BadJson { column: name.to_owned(), value: v.clone(), err };
            r.quality = Some(serde_json::from_str(&s()?).map_err(bad)?)
        }
        "prompt_hash" => r.prompt_hash = Some(s()?),
        "output_hash" => r.output_hash = Some(s()?),
        "repeat" => r.repeat = Some(u32_()?),
        "prompt_text" => r.prompt_text = Some(s()?),
        "output_text" => r.output_text = Some(s()?),
        // A column of a newer goodput: left to it.
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::writer::SerializedFileWriter;
    use std::sync::Arc;

    /// One row's value of a column: a number, a text, or a list of numbers.
    enum Cell {
        I(i64),
        S(&'static str),
        L(&'static [i64]),
    }

    /// A one-row Parquet file of the columns `cells` (the required ones of
    /// a records file and more), each required; read back, its error text.
    fn row_error(cells: &[(&str, Cell)]) -> String {
        let fields: String = cells
            .iter()
            .map(|(name, c)| match c {
                Cell::I(_) => format!("required int64 {name};"),
                Cell::S(_) => format!("required binary {name} (STRING);"),
                Cell::L(_) => {
                    format!("required group {name} (LIST) {{ repeated group list {{ required int64 element; }} }}")
                }
            })
            .collect();
        let schema =
            Arc::new(parquet::schema::parser::parse_message_type(&format!("message m {{ {fields} }}")).unwrap());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.parquet");
        let mut w =
            SerializedFileWriter::new(std::fs::File::create(&path).unwrap(), schema, Default::default()).unwrap();
        let mut g = w.next_row_group().unwrap();
        for (_, c) in cells {
            let mut col = g.next_column().unwrap().unwrap();
            match c {
                Cell::I(v) => col.typed::<Int64Type>().write_batch(&[*v], None, None),
                Cell::S(v) => col.typed::<ByteArrayType>().write_batch(&[ByteArray::from(*v)], None, None),
                Cell::L(v) => {
                    let (def, rep): (Vec<i16>, Vec<i16>) = (0..v.len()).map(|i| (1, i16::from(i > 0))).unzip();
                    col.typed::<Int64Type>().write_batch(v, Some(&def), Some(&rep))
                }
            }
            .unwrap();
            col.close().unwrap();
        }
        g.close().unwrap();
        w.close().unwrap();
        let mut rows = ParquetRows::open(&path).unwrap();
        let e = rows.next_record().expect("a row").expect_err("a row that is no record").to_string();
        assert!(rows.next_record().is_none(), "nothing after the error");
        e.split_once("r.parquet ").map(|(_, rest)| rest.to_owned()).unwrap_or(e)
    }

    /// The columns every records file has, with `outcome` as given.
    fn required(outcome: &'static str) -> Vec<(&'static str, Cell)> {
        vec![
            ("id", Cell::I(7)),
            ("scheduled_ns", Cell::I(0)),
            ("sent_ns", Cell::I(1)),
            ("end_ns", Cell::I(2)),
            ("input_tokens", Cell::I(3)),
            ("input_tokens_source", Cell::S("usage")),
            ("output_tokens", Cell::I(4)),
            ("output_tokens_source", Cell::S("usage")),
            ("outcome", Cell::S(outcome)),
        ]
    }

    #[test]
    fn a_row_that_is_no_record_is_refused_saying_which_column_and_why() {
        let mut cols = required("success");
        cols[0].1 = Cell::S("seven");
        assert_eq!(
            row_error(&cols),
            "row 1 is not a goodput record: column `id` holds the text \"seven\", which is not what a goodput \
             record holds there"
        );
        cols = required("success");
        cols[5].1 = Cell::S("guessed");
        assert_eq!(
            row_error(&cols),
            "row 1 is not a goodput record: column `input_tokens_source` holds the text \"guessed\", which is not \
             what a goodput record holds there"
        );
        assert_eq!(
            row_error(&required("finished")),
            "row 1 is not a goodput record: `outcome` is Some(\"finished\"), not success, failed or cancelled"
        );
        assert_eq!(
            row_error(&required("failed")),
            "row 1 is not a goodput record: a failed request's row has no `failure_kind`"
        );
        cols = required("success");
        cols.push(("chunk_t_ns", Cell::L(&[10, 20])));
        cols.push(("chunk_tokens", Cell::L(&[1])));
        assert_eq!(
            row_error(&cols),
            "row 1 is not a goodput record: `chunk_t_ns` has 2 chunks, `chunk_tokens` 1 and `chunk_channel` 0: each \
             list has one item a chunk"
        );
        // Times in an order no request has, as the JSON Lines reader refuses them.
        cols = required("success");
        cols[3].1 = Cell::I(0);
        assert_eq!(
            row_error(&cols),
            "row 1 is not a goodput record: request 7's end_ns 0 came before its sent_ns 1: the file was edited or \
             damaged"
        );
        cols = required("success");
        cols.push(("quality_json", Cell::S("{")));
        let e = row_error(&cols);
        assert!(
            e.starts_with(
                "row 1 is not a goodput record: column `quality_json` holds the text \"{\", which is not what a \
                 goodput record holds there: EOF"
            ),
            "{e}"
        );
    }
}
