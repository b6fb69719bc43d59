//! Reference rows from a measured run or sweep (`estimate --validate
//! run.json`): the engine that `estimate`'s flags describe, set against
//! each point the document measured, in the validator's CSV format, so a
//! user's own measurements can be checked, and fitted (`--fit`), as the
//! public tables are.
//!
//! Each point gives its mean TTFT, mean TPOT and output tokens/s, at its
//! load (a closed loop of users, started together unless it ramped up; a
//! Poisson rate; or every request at once) and at the mean prompt and
//! answer lengths the server counted. Points are taken in the order of
//! their loads, the first, third, … for the fit (split `calibration`) and
//! the others held out to check it, where there are three or more.

use crate::cli::EngineArgs;
use anyhow::{bail, Result};
use goodput_core::RunResult;
use goodput_report::read::{read_document, Document};
use std::fmt::Write as _;
use std::path::Path;

/// Whether the file at `path` holds a result document (JSON: its first
/// character, past a byte-order mark and white space, is `{`) rather than
/// a CSV of rows. Only its first kilobyte is read; what cannot be read is
/// left to the CSV's reader to name.
pub fn is_document_file(path: &Path) -> bool {
    use std::io::Read;
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = Vec::with_capacity(1024);
    let Ok(file) = std::fs::File::open(path) else { return false };
    if file.take(1024).read_to_end(&mut head).is_err() {
        return false;
    }
    String::from_utf8_lossy(&head).trim_start_matches('\u{feff}').trim_start().starts_with('{')
}

/// The rows of the document at `path` as the validator's CSV, and what the
/// conversion chose that the user should know.
pub fn rows_csv(path: &Path, e: &EngineArgs) -> Result<(String, Vec<String>)> {
    let runs: Vec<RunResult> = match read_document(path)? {
        Document::Run(r) => vec![*r],
        Document::Sweep(s) => s.points.into_iter().map(|p| p.result).collect(),
        Document::Frontier(_) => bail!(
            "--validate {}: a frontier holds several configurations, each point at one percentile; measure the \
             one to check with goodput sweep (or bench) and give its document, with estimate's flags describing \
             that configuration",
            path.display()
        ),
    };
    let engine = engine_columns(e)?;
    let mut points = Vec::new();
    let mut notes = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        match point(i + 1, run) {
            Ok(p) => points.push(p),
            Err(why) => notes.push(format!("point {} left out: {why}", i + 1)),
        }
    }
    points.sort_by(|a, b| a.order().total_cmp(&b.order()));
    let source = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let source = source.replace(['"', ',', '\n', '\r'], "_");
    // Each point's rows, kept where the validator takes them (a closed
    // loop of fewer requests than users, more users than it simulates).
    let mut kept: Vec<(&Point, String)> = Vec::new();
    for p in &points {
        let lines = p.rows(&engine, &source, "calibration");
        match goodput_sim::engine::validate::parse_csv(&format!("{HEADER}{lines}")) {
            Ok(rows) if !rows.is_empty() => kept.push((p, lines)),
            Ok(_) => notes.push(format!("point {} left out: it measured no TTFT, TPOT or throughput", p.index)),
            Err(goodput_sim::engine::Error::Csv { message, .. }) => {
                notes.push(format!("point {} left out: {message}", p.index))
            }
            Err(other) => notes.push(format!("point {} left out: {other}", p.index)),
        }
    }
    if kept.is_empty() {
        bail!(
            "--validate {}: no point can be set against the engine ({})",
            path.display(),
            if notes.is_empty() { "the document holds none".to_string() } else { notes.join("; ") }
        );
    }
    let hold_out = kept.len() >= 3;
    let mut csv = String::from(HEADER);
    for (i, (p, lines)) in kept.iter().enumerate() {
        if hold_out && i % 2 == 1 {
            csv.push_str(&p.rows(&engine, &source, "held-out"));
        } else {
            csv.push_str(lines);
        }
    }
    if !hold_out {
        notes.push(format!(
            "{} point(s): all are fitted on, none held out to check (three or more hold every other one out)",
            kept.len()
        ));
    }
    Ok((csv, notes))
}

/// The rows' columns.
const HEADER: &str = "id,model,gpu,gpus,tp,pp,ep,precision,engine,input_tokens,output_tokens,load_kind,load_value,\
                      metric,value,unit,source,split,requests,start,mixed,max_num_seqs,max_num_batched_tokens,\
                      memory_fraction,kv_cache,client\n";

/// The most requests a rate's or a burst's row sends: the validator's
/// bound, past which a longer run says nothing a shorter one does not.
const MOST_REQUESTS: u64 = 100_000;

/// The columns the engine's flags give every row: before the lengths
/// (model to engine), and after the start (the limits).
struct EngineColumns {
    head: String,
    tail: String,
}

fn engine_columns(e: &EngineArgs) -> Result<EngineColumns> {
    let hw = &e.hw;
    let model = &e.engine_model;
    if goodput_sim::engine::ModelSpec::lookup(model).is_err() {
        bail!(
            "--validate with a measured run sets it against a catalog model, and --model {model} is not one: name \
             the catalog's model of the same architecture (goodput estimate --help lists them)"
        );
    }
    let mut unsupported = Vec::new();
    if hw.pd.is_some() {
        unsupported.push("--pd");
    }
    if hw.spec_tokens > 0 {
        unsupported.push("--spec-tokens");
    }
    if hw.no_chunked_prefill {
        unsupported.push("--no-chunked-prefill");
    }
    if hw.block_size != 16 {
        unsupported.push("--block-size");
    }
    if !unsupported.is_empty() {
        bail!(
            "--validate with a measured run cannot carry {} into its rows: set the measured points against a \
             configuration without them",
            unsupported.join(", ")
        );
    }
    // The engine as `estimate` runs it: `auto` resolved, the flags checked.
    let cfg = goodput_sim::engine::EngineConfig::try_from(e)?;
    let engine = match hw.scheduler.as_str() {
        "vllm" => "vllm",
        "trtllm" => "tensorrt-llm",
        "sglang" => "sglang",
        other => bail!("--scheduler {other}: give vllm, trtllm or sglang"),
    };
    let gpus = hw.tp.max(1) * hw.pp.max(1) * hw.dp.max(1);
    let head = format!(
        "{model},{gpu},{gpus},{tp},{pp},{ep},{precision},{engine}",
        gpu = hw.gpu,
        tp = hw.tp,
        pp = hw.pp,
        ep = hw.ep,
        precision = cfg.precision.as_str(),
    );
    let tail = format!(
        "{mixed},{seqs},{mbt},{memory},{kv},http",
        mixed = if hw.no_mixed_batches { "no" } else { "yes" },
        seqs = hw.max_num_seqs.map(|v| v.to_string()).unwrap_or_default(),
        mbt = hw.max_num_batched_tokens.map(|v| v.to_string()).unwrap_or_default(),
        memory = hw.gpu_memory_utilization.map(|v| v.to_string()).unwrap_or_default(),
        kv = match cfg.kv_cache_dtype {
            goodput_sim::engine::KvCacheDtype::Auto => "auto",
            _ => "fp8",
        },
    );
    Ok(EngineColumns { head, tail })
}

/// One measured point.
struct Point {
    /// Its place in the document, from 1.
    index: usize,
    kind: &'static str,
    load: f64,
    requests: u64,
    start: &'static str,
    input_tokens: u64,
    output_tokens: u64,
    ttft_ms: Option<f64>,
    tpot_ms: Option<f64>,
    output_tokens_per_s: Option<f64>,
}

impl Point {
    /// Its rows of the validator's CSV, each line ended: one a figure it
    /// measured.
    fn rows(&self, engine: &EngineColumns, source: &str, split: &str) -> String {
        let mut out = String::new();
        for (metric, value, unit) in [
            ("ttft_ms_mean", self.ttft_ms, "ms"),
            ("tpot_ms_mean", self.tpot_ms, "ms"),
            ("output_tokens_per_s", self.output_tokens_per_s, "tok/s"),
        ] {
            let Some(value) = value.filter(|v| v.is_finite() && *v > 0.0) else { continue };
            let _ = writeln!(
                out,
                "p{n}-{kind}-{load}-{metric},{head},{input},{output},{kind},{load},{metric},{value:.3},{unit},\
                 {source},{split},{requests},{start},{tail}",
                n = self.index,
                kind = self.kind,
                load = self.load,
                head = engine.head,
                input = self.input_tokens,
                output = self.output_tokens,
                requests = self.requests,
                start = self.start,
                tail = engine.tail,
            );
        }
        out
    }

    /// Closed loops by users, then rates, then all at once.
    fn order(&self) -> f64 {
        match self.kind {
            "concurrency" => self.load,
            "rate" => 1e12 + self.load,
            _ => 2e12,
        }
    }
}

fn point(index: usize, run: &RunResult) -> Result<Point, String> {
    let s = &run.summary;
    let completed = s.requests.completed;
    if completed == 0 {
        return Err("no request completed".into());
    }
    let Some(load) = run.config.load.as_ref() else { return Err("its load is not recorded".into()) };
    if load.trace.is_some() {
        return Err("a trace's load: the rows hold closed loops, Poisson rates and batches".into());
    }
    if load.sessions.is_some() {
        return Err("multi-turn sessions: each row's requests stand alone".into());
    }
    let poisson = load.arrival.as_deref().is_none_or(|a| a == "poisson") && load.burstiness.is_none_or(|b| b == 1.0);
    let (kind, value, start) = match (load.concurrency, load.rate) {
        (_, Some(r)) if r.is_unbounded() => ("max_throughput", 0.0, ""),
        (_, Some(r)) if poisson => ("rate", r.0, ""),
        (_, Some(_)) => return Err("its arrivals were not Poisson: the rows' rates are".into()),
        (Some(c), None) => ("concurrency", c as f64, if load.ramp_up.is_some() { "apart" } else { "together" }),
        (None, None) => return Err("neither a concurrency nor a rate".into()),
    };
    // The lengths the server counted (its chat template included), else
    // the workload's own.
    let input_tokens = (s.tokens.input as f64 / completed as f64).round() as u64;
    let output_tokens = (s.tokens.output as f64 / completed as f64).round() as u64;
    if input_tokens == 0 || output_tokens == 0 {
        return Err("its requests' token counts are not recorded".into());
    }
    // A rate's or a burst's rows send their requests; past the bound, the
    // bound's worth.
    let requests = if kind == "concurrency" { s.requests.sent } else { s.requests.sent.min(MOST_REQUESTS) };
    Ok(Point {
        index,
        kind,
        load: value,
        requests,
        start,
        input_tokens,
        output_tokens,
        ttft_ms: s.ttft_ms.mean,
        tpot_ms: s.tpot_ms.mean,
        output_tokens_per_s: Some(s.throughput.output_tokens_per_s),
    })
}
