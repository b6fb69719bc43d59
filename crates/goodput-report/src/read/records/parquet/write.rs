//! Writing: the records buffered by column, a row group at a time.

use super::{channel_name, ROW_GROUP_CHUNKS, ROW_GROUP_RECORDS, SCHEMA};
use goodput_core::{Outcome, RequestRecord};
use parquet::basic::{Compression, Encoding};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DataType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::types::ColumnPath;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

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
    retry_after_date: Col<ByteArray>,
    retries: Col<i64>,
    finish_reason: Col<ByteArray>,
    read_lag_max: Col<i64>,
    shared_reads: Col<i64>,
    bound_chunks: Col<i64>,
    ttft_bound: Col<bool>,
    client_stalled: Col<bool>,
    images: Col<i64>,
    image_bytes: Col<i64>,
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
        self.retry_after_date.optional(opt_text(&r.retry_after_date));
        self.retries.required(i64::from(r.retries));
        self.finish_reason.optional(opt_text(&r.finish_reason));
        self.read_lag_max.optional(opt_ns(r.read_lag_max));
        self.shared_reads.required(i64::from(r.shared_reads));
        self.bound_chunks.required(i64::from(r.bound_chunks));
        self.ttft_bound.required(r.ttft_bound);
        self.client_stalled.required(r.client_stalled);
        self.images.required(i64::from(r.images));
        self.image_bytes.required(i64::try_from(r.image_bytes).unwrap_or(i64::MAX));
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
        put::<ByteArrayType, W>(g, &mut self.retry_after_date)?;
        put::<Int64Type, W>(g, &mut self.retries)?;
        put::<ByteArrayType, W>(g, &mut self.finish_reason)?;
        put::<Int64Type, W>(g, &mut self.read_lag_max)?;
        put::<Int64Type, W>(g, &mut self.shared_reads)?;
        put::<Int64Type, W>(g, &mut self.bound_chunks)?;
        put::<BoolType, W>(g, &mut self.ttft_bound)?;
        put::<BoolType, W>(g, &mut self.client_stalled)?;
        put::<Int64Type, W>(g, &mut self.images)?;
        put::<Int64Type, W>(g, &mut self.image_bytes)?;
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
