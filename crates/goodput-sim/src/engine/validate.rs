//! The check of the engine model against published measurements: parses the
//! reference CSV (validation/public.csv's format), predicts each row in
//! virtual time, and reports the relative errors and their median.

use super::calibration::Calibration;
use super::catalog::{GpuFamily, GpuSpec, KvCacheDtype, ModelSpec, Precision};
use super::config::EngineConfig;
use super::error::Error;
use super::roofline::kv_capacity;
use super::virtual_time::{simulate, VirtualLoad, VirtualRequest};
use goodput_core::{percentile, RequestMetrics};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How the reference was loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReferenceLoad {
    /// Every request queued at once; output tokens over the whole run.
    MaxThroughput,
    /// A closed loop of this many users.
    Concurrency(u32),
}

/// The metrics a reference row may give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    OutputTokensPerS,
    E2eMsMean,
    TtftMsMean,
    TtftMsP50,
    TpotMsMean,
    TpotMsP50,
}

impl Metric {
    const ALL: [Metric; 6] = [
        Metric::OutputTokensPerS,
        Metric::E2eMsMean,
        Metric::TtftMsMean,
        Metric::TtftMsP50,
        Metric::TpotMsMean,
        Metric::TpotMsP50,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::OutputTokensPerS => "output_tokens_per_s",
            Metric::E2eMsMean => "e2e_ms_mean",
            Metric::TtftMsMean => "ttft_ms_mean",
            Metric::TtftMsP50 => "ttft_ms_p50",
            Metric::TpotMsMean => "tpot_ms_mean",
            Metric::TpotMsP50 => "tpot_ms_p50",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Metric::OutputTokensPerS => "tok/s",
            _ => "ms",
        }
    }
}

/// The engine that produced a reference number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReferenceEngine {
    Vllm,
    Sglang,
    TensorRtLlm,
}

/// One row of the reference CSV.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferenceRow {
    /// 1-based line in the file.
    pub line: usize,
    pub id: String,
    pub model: String,
    pub gpu: String,
    pub gpus: u32,
    pub tp: u32,
    pub precision: Precision,
    pub engine: ReferenceEngine,
    pub input_tokens: u32,
    pub output_tokens: u32,
    pub load: ReferenceLoad,
    pub metric: Metric,
    pub value: f64,
    pub source: String,
}

const COLUMNS: [&str; 15] = [
    "id",
    "model",
    "gpu",
    "gpus",
    "tp",
    "precision",
    "engine",
    "input_tokens",
    "output_tokens",
    "load_kind",
    "load_value",
    "metric",
    "value",
    "unit",
    "source",
];

/// Parses the reference CSV: a header naming the columns (any order), then
/// one measurement per line. Blank lines and lines starting with `#` are
/// skipped; fields may be quoted, with `""` for a quote.
pub fn parse_csv(text: &str) -> Result<Vec<ReferenceRow>, Error> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let Some((header_line, header)) = lines.next() else {
        return Err(Error::Csv { line: 1, message: "the file is empty; expected a header line".into() });
    };
    let names = split_fields(header, header_line)?;
    let mut at = [0usize; COLUMNS.len()];
    for (k, col) in COLUMNS.iter().enumerate() {
        at[k] = names.iter().position(|n| n.trim() == *col).ok_or_else(|| Error::Csv {
            line: header_line,
            message: format!("missing column `{col}`; the header needs {}", COLUMNS.join(",")),
        })?;
    }
    lines
        .map(|(line, text)| {
            let fields = split_fields(text, line)?;
            if fields.len() != names.len() {
                return Err(Error::Csv {
                    line,
                    message: format!("{} fields where the header has {}", fields.len(), names.len()),
                });
            }
            let cols: Vec<&str> = at.iter().map(|&k| fields[k].trim()).collect();
            parse_row(line, &cols)
        })
        .collect()
}

/// `cols` holds the fields in `COLUMNS` order.
fn parse_row(line: usize, cols: &[&str]) -> Result<ReferenceRow, Error> {
    let f = |k: usize| cols[k];
    let err = |message: String| Error::Csv { line, message };
    let count = |k: usize| -> Result<u32, Error> {
        f(k).parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| err(format!("`{}` must be a positive integer, got `{}`", COLUMNS[k], f(k))))
    };
    let precision = f(5).parse::<Precision>().map_err(|e| err(e.to_string()))?;
    let engine = match f(6).to_ascii_lowercase().as_str() {
        "vllm" => ReferenceEngine::Vllm,
        "sglang" => ReferenceEngine::Sglang,
        "tensorrt-llm" | "trt-llm" | "trtllm" => ReferenceEngine::TensorRtLlm,
        other => return Err(err(format!("unknown engine `{other}`; known: vllm, sglang, tensorrt-llm"))),
    };
    let load = match f(9) {
        "max_throughput" => ReferenceLoad::MaxThroughput,
        "concurrency" => ReferenceLoad::Concurrency(count(10)?),
        other => return Err(err(format!("unknown load_kind `{other}`; known: max_throughput, concurrency"))),
    };
    let metric = Metric::ALL.into_iter().find(|m| m.as_str() == f(11)).ok_or_else(|| {
        let known: Vec<&str> = Metric::ALL.iter().map(|m| m.as_str()).collect();
        err(format!("unknown metric `{}`; known: {}", f(11), known.join(", ")))
    })?;
    if f(13) != metric.unit() {
        return Err(err(format!("{} is measured in {}, not `{}`", metric.as_str(), metric.unit(), f(13))));
    }
    let value = f(12)
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| err(format!("`value` must be a positive number, got `{}`", f(12))))?;
    Ok(ReferenceRow {
        line,
        id: f(0).to_string(),
        model: f(1).to_string(),
        gpu: f(2).to_string(),
        gpus: count(3)?,
        tp: count(4)?,
        precision,
        engine,
        input_tokens: count(7)?,
        output_tokens: count(8)?,
        load,
        metric,
        value,
        source: f(14).to_string(),
    })
}

fn split_fields(line: &str, line_no: usize) -> Result<Vec<String>, Error> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if field.trim().is_empty() => {
                field.clear();
                quoted = true;
            }
            (',', false) => fields.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    if quoted {
        return Err(Error::Csv { line: line_no, message: "a quoted field is not closed".into() });
    }
    fields.push(field);
    Ok(fields)
}

/// How predictions are made.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidationOptions {
    /// Calibration per GPU family; families not listed use the shipped one.
    pub calibrations: BTreeMap<GpuFamily, Calibration>,
    /// KV-cache dtype for TensorRT-LLM rows. NVIDIA's published FP8 numbers
    /// exceed what a 16-bit cache could stream (see docs/simulator.md, "Calibration"), so the
    /// default is FP8; `Auto` shows what stock vLLM settings would give.
    pub tensorrt_llm_kv_cache: KvCacheDtype,
}

impl Default for ValidationOptions {
    fn default() -> Self {
        ValidationOptions { calibrations: BTreeMap::new(), tensorrt_llm_kv_cache: KvCacheDtype::Fp8 }
    }
}

/// One row's prediction beside its reference, with what the engine saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub row: ReferenceRow,
    pub predicted: f64,
    /// (predicted − reference) / reference.
    pub rel_error: f64,
    /// Sequences per step, averaged over the run (one replica).
    pub mean_batch_seqs: f64,
    pub preemptions: u64,
    pub kv_capacity_tokens: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ValidationReport {
    pub predictions: Vec<Prediction>,
    pub median_abs_rel_error: Option<f64>,
}

/// The engine configuration a row describes: one replica of `tp` GPUs.
pub fn row_config(row: &ReferenceRow, options: &ValidationOptions) -> Result<EngineConfig, Error> {
    let gpu = GpuSpec::lookup(&row.gpu)?;
    let mut cfg = EngineConfig::new(ModelSpec::lookup(&row.model)?, gpu.clone(), row.precision);
    cfg.tp = row.tp;
    if let Some(c) = options.calibrations.get(&gpu.family) {
        cfg.calibration = c.clone();
    }
    if row.engine == ReferenceEngine::TensorRtLlm {
        cfg.kv_cache_dtype = options.tensorrt_llm_kv_cache;
    }
    Ok(cfg)
}

/// Predicts one row's metric. Several replicas (gpus / tp) serve a load
/// split evenly between them.
pub fn predict(row: &ReferenceRow, options: &ValidationOptions) -> Result<Prediction, Error> {
    let bad = |message: String| Error::Csv { line: row.line, message };
    if !row.gpus.is_multiple_of(row.tp) {
        return Err(bad(format!("{} GPUs is not a whole number of tensor-parallel groups of {}", row.gpus, row.tp)));
    }
    let replicas = row.gpus / row.tp;
    let cfg = row_config(row, options)?;
    let request = VirtualRequest::new(row.input_tokens, row.output_tokens);
    let load = match row.load {
        ReferenceLoad::MaxThroughput => {
            // Enough requests for about ten generations of a full batch, so
            // the drain at the end weighs little (trtllm-bench uses 1,000 to
            // 30,000 for the same reason).
            let cap = kv_capacity(&cfg)?;
            let per_request = (row.input_tokens + row.output_tokens) as u64;
            let batch = (cap.tokens() / per_request).clamp(1, cfg.resolved_max_num_seqs() as u64);
            let n = (10 * batch).clamp(1000, 30_000) as usize;
            VirtualLoad::burst(vec![request; n])
        }
        ReferenceLoad::Concurrency(c) => {
            if c % replicas != 0 {
                return Err(bad(format!("concurrency {c} does not split evenly over {replicas} replicas")));
            }
            let users = c / replicas;
            let n = (25 * users as usize).max(200);
            VirtualLoad::closed_loop(vec![request; n], users)
        }
    };
    let run = simulate(&cfg, &load)?;
    let predicted = metric_value(row, &run.records, replicas)?;
    Ok(Prediction {
        row: row.clone(),
        predicted,
        rel_error: (predicted - row.value) / row.value,
        mean_batch_seqs: run.engine.mean_batch_seqs,
        preemptions: run.engine.preemptions,
        kv_capacity_tokens: run.engine.kv_capacity_tokens,
    })
}

fn metric_value(row: &ReferenceRow, records: &[goodput_core::RequestRecord], replicas: u32) -> Result<f64, Error> {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let mut samples: Vec<f64> = match row.metric {
        Metric::OutputTokensPerS => {
            let first = records.iter().map(|r| r.sent).min().unwrap_or_default();
            let last = records.iter().map(|r| r.end).max().unwrap_or_default();
            let tokens: u64 = records.iter().map(|r| r.output_tokens).sum();
            let span = (last - first).as_secs_f64();
            return Ok(tokens as f64 / span * replicas as f64);
        }
        Metric::E2eMsMean => records.iter().filter_map(|r| r.e2e()).map(ms).collect(),
        Metric::TtftMsMean | Metric::TtftMsP50 => records.iter().filter_map(|r| r.ttft()).map(ms).collect(),
        Metric::TpotMsMean | Metric::TpotMsP50 => records.iter().filter_map(|r| r.tpot()).map(ms).collect(),
    };
    if samples.is_empty() {
        return Err(Error::Csv {
            line: row.line,
            message: format!("{} is undefined for this load", row.metric.as_str()),
        });
    }
    let value = match row.metric {
        Metric::TtftMsP50 | Metric::TpotMsP50 => {
            samples.sort_by(f64::total_cmp);
            percentile(&samples, 50.0).unwrap_or(f64::NAN)
        }
        _ => samples.iter().sum::<f64>() / samples.len() as f64,
    };
    Ok(value)
}

/// Predicts every row and summarises the errors.
pub fn validate(rows: &[ReferenceRow], options: &ValidationOptions) -> Result<ValidationReport, Error> {
    let predictions = rows.iter().map(|row| predict(row, options)).collect::<Result<Vec<_>, Error>>()?;
    let mut abs: Vec<f64> = predictions.iter().map(|p| p.rel_error.abs()).collect();
    abs.sort_by(f64::total_cmp);
    Ok(ValidationReport { median_abs_rel_error: percentile(&abs, 50.0), predictions })
}

impl ValidationReport {
    /// A Markdown table of the rows, then the median absolute error.
    pub fn to_markdown(&self) -> String {
        let mut s = String::from(
            "| id | engine | metric | reference | predicted | error | mean batch | preemptions | KV tokens |\n\
             |---|---|---|---:|---:|---:|---:|---:|---:|\n",
        );
        for p in &self.predictions {
            let engine = match p.row.engine {
                ReferenceEngine::Vllm => "vllm",
                ReferenceEngine::Sglang => "sglang",
                ReferenceEngine::TensorRtLlm => "tensorrt-llm",
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} {} | {:.0} | {:+.1} % | {:.0} | {} | {} |",
                p.row.id,
                engine,
                p.row.metric.as_str(),
                p.row.value,
                p.row.metric.unit(),
                p.predicted,
                p.rel_error * 100.0,
                p.mean_batch_seqs,
                p.preemptions,
                p.kv_capacity_tokens
            );
        }
        if let Some(m) = self.median_abs_rel_error {
            let _ = writeln!(s, "\nmedian |error|: {:.1} %", m * 100.0);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,metric,value,unit,source
# a comment
a,llama-3.1-8b,h200,1,1,bf16,vllm,32,16,concurrency,2,e2e_ms_mean,150,ms,\"CI, build 1\"
b,llama-3.1-8b,h100-sxm,1,1,fp8,tensorrt-llm,128,128,max_throughput,,output_tokens_per_s,28312,tok/s,docs
";

    #[test]
    fn parses_the_public_format_with_quotes_and_comments() {
        let rows = parse_csv(SAMPLE).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].source, "CI, build 1");
        assert_eq!(rows[0].load, ReferenceLoad::Concurrency(2));
        assert_eq!(rows[0].line, 3);
        assert_eq!(rows[1].load, ReferenceLoad::MaxThroughput);
        assert_eq!(rows[1].engine, ReferenceEngine::TensorRtLlm);
        assert_eq!(rows[1].precision, Precision::Fp8);
    }

    #[test]
    fn bad_rows_name_their_line_and_problem() {
        let header = SAMPLE.lines().next().unwrap();
        let cases = [
            ("x,llama-3.1-8b,h200,1,1,bf16,vllm,32,16,open,2,e2e_ms_mean,1,ms,s", "load_kind"),
            ("x,llama-3.1-8b,h200,1,1,bf16,vllm,32,16,concurrency,2,e2e_ms_mean,1,s,s", "measured in ms"),
            ("x,llama-3.1-8b,h200,1,1,bf16,vllm,0,16,concurrency,2,e2e_ms_mean,1,ms,s", "input_tokens"),
            ("x,llama-3.1-8b,h200,1,1,bf16,tgi,32,16,concurrency,2,e2e_ms_mean,1,ms,s", "engine"),
            ("x,llama-3.1-8b,h200,1,1,bf16,vllm,32,16,concurrency,2,p99,1,ms,s", "metric"),
            ("x,llama-3.1-8b,h200,1", "fields"),
        ];
        for (row, needle) in cases {
            let err = parse_csv(&format!("{header}\n{row}\n")).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("line 2") && text.contains(needle), "{row}: {text}");
        }
        assert!(parse_csv("id,model\n").unwrap_err().to_string().contains("gpu"));
    }

    #[test]
    fn predicts_a_small_closed_loop_row_and_reports_its_error() {
        let rows = parse_csv(SAMPLE).unwrap();
        let report = validate(&rows[..1], &ValidationOptions::default()).unwrap();
        let p = &report.predictions[0];
        assert!(p.predicted > 50.0 && p.predicted < 500.0, "{}", p.predicted);
        assert_eq!(p.rel_error, (p.predicted - 150.0) / 150.0);
        assert_eq!(report.median_abs_rel_error, Some(p.rel_error.abs()));
        assert!(report.to_markdown().contains("| a | vllm | e2e_ms_mean | 150 ms |"));
    }

    #[test]
    fn replicas_split_the_load() {
        let header = SAMPLE.lines().next().unwrap();
        let row = "r,llama-3.1-8b,h200,2,1,bf16,vllm,32,16,concurrency,3,e2e_ms_mean,1,ms,s";
        let rows = parse_csv(&format!("{header}\n{row}\n")).unwrap();
        let err = predict(&rows[0], &ValidationOptions::default()).unwrap_err();
        assert!(err.to_string().contains("replicas"), "{err}");
    }
}
