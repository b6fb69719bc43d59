//! Writes a run of N synthetic records for the records-at-scale benchmark
//! (bench/records_scale.sh): `run.json` and its records file, through the
//! real writer, the way a long open-loop soak leaves them. Each record is a
//! streamed chat request of 64 one-token chunks as goodput's client fills it
//! in (usage counts, read lag, the stream's close), sent at 100 req/s, with
//! a TTFT of 30–150 ms and inter-token gaps of 8 ms ± 1.5 ms at nanosecond
//! resolution (what a real clock gives); one request in 200 fails with a 503.
//!
//! ```sh
//! cargo run --release -p goodput-report --example records_scale -- 300000 /tmp/scale run.jsonl
//! goodput report /tmp/scale/run.json --records /tmp/scale/run.jsonl
//! ```
//!
//! A fourth argument, `I/N`, writes shard I (from 0) of a run of N shards
//! for `goodput merge` (bench/merge_scale.sh): its requests are numbered
//! I, I + N, I + 2N, …, and the result (named after the records file:
//! `s0.jsonl` beside `s0.json`) carries the shard block `merge` reads.

use goodput_core::analysis::assemble::{assemble, Assembly};
use goodput_core::{
    AnalysisOptions, Channel, ChunkTokenSource, CountSource, FailureKind, Outcome, OutputChunk, RequestRecord,
    RunConfig, Target, TokenCounts, Tool,
};
use goodput_report::read::records::RecordFile;
use std::path::PathBuf;
use std::time::Duration;

/// xorshift64*: the same records on every run without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [lo, hi).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

const TOKENS: u64 = 64;

/// Request `i` of this file, numbered `id`.
fn record(i: u64, id: u64, rng: &mut Rng) -> RequestRecord {
    let ns = Duration::from_nanos;
    let scheduled = 1_000_000 + i * 10_000_000;
    let sent = scheduled + rng.range(20_000, 200_000);
    let mut r = RequestRecord::new(id, ns(scheduled), ns(sent));
    r.input_tokens = rng.range(200, 400);
    r.input_tokens_source = CountSource::Usage;
    r.counts = TokenCounts {
        usage_prompt: Some(r.input_tokens),
        intended_prompt: Some(256),
        requested_completion: Some(TOKENS),
        ..TokenCounts::default()
    };
    if i % 200 == 199 {
        let end = sent + rng.range(1_000_000, 3_000_000);
        r.first_byte = Some(ns(end - 100_000));
        r.end = ns(end);
        r.http_status = Some(503);
        r.outcome = Outcome::Failed {
            kind: FailureKind::HttpStatus,
            message: "HTTP 503: {\"error\":\"the engine is overloaded\"}".into(),
        };
        return r;
    }
    let mut t = sent + rng.range(30_000_000, 150_000_000);
    r.first_byte = Some(ns(t - rng.range(1_000_000, 5_000_000)));
    for k in 0..TOKENS {
        if k > 0 {
            t += rng.range(6_500_000, 9_500_000);
        }
        r.chunks.push(OutputChunk { t: ns(t), tokens: 1, channel: Channel::Content });
    }
    r.stream_end = Some(ns(t + rng.range(20_000, 90_000)));
    r.end = ns(t + rng.range(100_000, 200_000));
    r.output_tokens = TOKENS;
    r.output_tokens_source = CountSource::Usage;
    r.chunk_tokens_source = ChunkTokenSource::Even;
    r.counts.usage_completion = Some(TOKENS);
    r.counts.usage_cached_prompt = Some(0);
    r.counts.chunks = TOKENS;
    r.http_status = Some(200);
    r.finish_reason = Some("length".into());
    r.read_lag_max = Some(ns(rng.range(20_000, 120_000)));
    r.outcome = Outcome::Success;
    r
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(dir), Some(file)) = (args.first(), args.get(1), args.get(2)) else {
        eprintln!("usage: records_scale N DIR RECORDS_FILE_NAME [I/N] (e.g. 300000 /tmp/scale run.jsonl)");
        std::process::exit(2);
    };
    let n: u64 = n.parse().expect("N: a number of records");
    let shard: Option<(u32, u32)> = args.get(3).map(|s| {
        let (i, c) = s.split_once('/').expect("the shard: I/N");
        (i.parse().expect("I: a number"), c.parse().expect("N: a number"))
    });
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).expect("the output folder");
    let mut run_id = format!("{:x}-bench", 0x18eb_4dca_cdad_46d5u64);
    if let Some((i, _)) = shard {
        run_id.push_str(&format!("-s{i}"));
    }
    let records_path = dir.join(file);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ u64::from(shard.map_or(0, |s| s.0)));
    // The summary of run.json comes from the first records only: the
    // benchmark times `report` recomputing it from the file, not this.
    // Its request counts are the file's, which `report` checks the file
    // against (a file of another length is refused as cut short).
    let mut head = Vec::new();
    let (mut completed, mut failed) = (0u64, 0u64);
    {
        let mut f = RecordFile::create(&records_path, &run_id).expect("the records file");
        for i in 0..n {
            let id = shard.map_or(i, |(s, c)| i * u64::from(c) + u64::from(s));
            let r = record(i, id, &mut rng);
            f.write(&r);
            if r.outcome.is_success() {
                completed += 1;
            } else {
                failed += 1;
            }
            if i < 1000 {
                head.push(r);
            }
        }
    }
    let mut result = assemble(
        Assembly {
            tool: Tool { name: "goodput".into(), version: env!("CARGO_PKG_VERSION").into(), commit: None },
            kind: "bench",
            run_id,
            started_unix_s: 1_764_000_000.0,
            interrupted: false,
            config: RunConfig::default(),
            target: Target {
                url: "http://127.0.0.1:8000".into(),
                model: "m".into(),
                api: "chat".into(),
                ..Target::default()
            },
            include_requests: false,
        },
        &head,
        &AnalysisOptions::default(),
    );
    let counts = &mut result.summary.requests;
    (counts.sent, counts.completed, counts.failed) = (n, completed, failed);
    result.shard = shard.map(|(index, count)| goodput_core::doc::shard::ShardInfo {
        run: "records-scale".into(),
        index,
        count,
        start_at_unix_s: None,
        records: Some(records_path.display().to_string()),
    });
    let json = serde_json::to_string_pretty(&result).expect("the result");
    let stem = file.split('.').next().unwrap_or("run");
    std::fs::write(dir.join(format!("{stem}.json")), json).expect("the result file");
    let bytes = std::fs::metadata(&records_path).expect("the records file").len();
    println!("{n} records, {bytes} bytes, {:.0} bytes a record: {}", bytes as f64 / n as f64, records_path.display());
}
