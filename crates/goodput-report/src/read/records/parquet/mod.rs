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

mod read;
mod write;

pub use read::ParquetRows;
pub use write::ParquetSink;

use goodput_core::Channel;

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
  optional binary retry_after_date (STRING);
  required int64 retries;
  optional binary finish_reason (STRING);
  optional int64 read_lag_max_ns;
  required int64 shared_reads;
  required int64 bound_chunks;
  required boolean ttft_bound;
  required boolean client_stalled;
  required int64 images;
  required int64 image_bytes;
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

/// Rows decoded at a time: a few hundred kB of columns at 64 chunks a row.
const BATCH: usize = 1024;

fn channel_name(c: Channel) -> &'static str {
    match c {
        Channel::Content => "content",
        Channel::Reasoning => "reasoning",
        Channel::ToolCalls => "tool_calls",
    }
}

/// A chunk's channel by the name [`channel_name`] gives it.
fn channel_of(name: &str) -> Option<Channel> {
    match name {
        "content" => Some(Channel::Content),
        "reasoning" => Some(Channel::Reasoning),
        "tool_calls" => Some(Channel::ToolCalls),
        _ => None,
    }
}
