//! Command-line arguments as clap parses them: raw options, checked and
//! turned into built objects by each command's module.

use clap::{Args, Parser, Subcommand, ValueEnum};
use goodput_core::cost::CostConfig;
use goodput_core::Slo;
use goodput_load::LengthDist;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(name = "goodput", version, about = "Measure, explain and predict the performance of LLM inference services")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load an OpenAI-compatible server (or, with no --url, the embedded simulator) and report what users feel.
    Bench(Box<BenchArgs>),
    /// Serve the simulated OpenAI-compatible server.
    Serve(ServeArgs),
}

/// Parses `150ms`, `2s`, `1m30s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("'{s}' is not a duration ({e}); write e.g. 150ms, 2s, 1m"))
}

fn parse_length(s: &str) -> Result<LengthDist, String> {
    s.parse()
}

/// A list of percentiles, parsed from `50,90,99.9`.
#[derive(Debug, Clone, PartialEq)]
pub struct PercentileList(pub Vec<f64>);

fn parse_percentiles(s: &str) -> Result<PercentileList, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let p: f64 = part
            .trim_start_matches('p')
            .parse()
            .map_err(|_| format!("'{part}' is not a percentile; write e.g. 50,90,99.9"))?;
        if !(0.0..=100.0).contains(&p) {
            return Err(format!("percentile {p} is outside 0..100"));
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err("give at least one percentile, e.g. 50,90,99".into());
    }
    Ok(PercentileList(out))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiArg {
    Chat,
    Completions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    Poisson,
    Gamma,
    Constant,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Server root URL (e.g. http://127.0.0.1:8000). Without it, goodput starts its embedded simulator on a loopback port.
    #[arg(long)]
    pub url: Option<String>,
    /// Which endpoint to load.
    #[arg(long, value_enum, default_value_t = ApiArg::Chat)]
    pub api: ApiArg,
    /// Model name to send; by default the first model the server lists at /v1/models.
    #[arg(long)]
    pub model: Option<String>,
    /// Bearer token (never written to any output).
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Non-streaming requests (TTFT then equals E2E).
    #[arg(long)]
    pub no_stream: bool,
    /// Do not ask for stream_options.include_usage.
    #[arg(long)]
    pub no_usage: bool,

    /// Closed loop: this many requests in flight at all times.
    #[arg(long, short = 'c')]
    pub concurrency: Option<usize>,
    /// Open loop: requests per second on a schedule drawn ahead from --seed.
    #[arg(long, short = 'r')]
    pub rate: Option<f64>,
    /// Inter-arrival process for --rate.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Poisson)]
    pub arrival: ArrivalArg,
    /// Gamma shape for --arrival gamma: 1 is Poisson, below 1 burstier, above 1 smoother.
    #[arg(long)]
    pub burstiness: Option<f64>,
    /// Measured requests to send (default 100 when no --duration).
    #[arg(long, short = 'n')]
    pub requests: Option<u64>,
    /// Stop sending after this long (e.g. 60s).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Requests sent first and excluded from the measurement window.
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// Per-request timeout.
    #[arg(long, value_parser = parse_duration, default_value = "120s")]
    pub timeout: Duration,
    /// After Ctrl-C, how long in-flight requests may finish before they are cancelled.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub grace: Duration,

    /// Input length: 128, uniform:64..256, normal:512,128 or lognormal:MEAN,SIGMA (tokens).
    #[arg(long, value_parser = parse_length, default_value = "256")]
    pub input_tokens: LengthDist,
    /// Output length, sent as max_tokens (same forms as --input-tokens).
    #[arg(long, value_parser = parse_length)]
    pub output_tokens: Option<LengthDist>,
    /// Force the output length: send ignore_eos and min_tokens (vLLM, SGLang, TGI honour them).
    #[arg(long)]
    pub ignore_eos: bool,
    /// Prompts from a file: JSONL ({"prompt": …} or {"messages": …}, optional max_tokens) or ShareGPT JSON.
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    /// A local Hugging Face tokenizer.json for exact input lengths and client-side counts.
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Extra JSON fields merged into every request body, e.g. '{"temperature":0}'.
    #[arg(long)]
    pub extra_body: Option<String>,
    /// Seed for prompts and arrival times.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Percentiles to report, e.g. 50,90,99.9.
    #[arg(long, value_parser = parse_percentiles, default_value = "50,90,95,99")]
    pub percentiles: PercentileList,
    #[command(flatten)]
    pub judge: JudgeArgs,
    /// Stream per-request records to this JSONL file as they complete.
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// Write the result document (schema goodput/v1) to this JSON file.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Also put every per-request record into the result document.
    #[arg(long)]
    pub include_requests: bool,
    /// Print only the summary (no progress lines).
    #[arg(long, short = 'q')]
    pub quiet: bool,

    /// Embedded simulator: time to first token.
    #[arg(long, value_parser = parse_duration, default_value = "150ms", help_heading = "Embedded simulator (no --url)")]
    pub sim_ttft: Duration,
    /// Embedded simulator: time between chunks.
    #[arg(long, value_parser = parse_duration, default_value = "20ms", help_heading = "Embedded simulator (no --url)")]
    pub sim_itl: Duration,
    /// Embedded simulator: tokens per chunk.
    #[arg(long, default_value_t = 2, help_heading = "Embedded simulator (no --url)")]
    pub sim_tokens_per_chunk: u32,
}

fn parse_slo(s: &str) -> Result<Slo, String> {
    s.parse()
}

/// How a run is judged: SLOs and the price of the hardware.
#[derive(Debug, Clone, Args)]
pub struct JudgeArgs {
    /// Per-request limits and/or percentile objectives, e.g. 'ttft<=200ms,tpot<=50ms' or 'ttft:p95<=200ms'.
    #[arg(long, value_parser = parse_slo, help_heading = "SLOs and cost")]
    pub slo: Option<Slo>,
    /// Exit non-zero when a percentile objective of --slo fails (for CI).
    #[arg(long, requires = "slo", help_heading = "SLOs and cost")]
    pub fail_on_slo: bool,
    /// Price of one GPU per hour in USD, for cost per million tokens.
    #[arg(long, help_heading = "SLOs and cost")]
    pub gpu_hour_usd: Option<f64>,
    /// GPUs the server runs on.
    #[arg(long, default_value_t = 1, help_heading = "SLOs and cost")]
    pub gpus: u32,
}

impl JudgeArgs {
    pub fn cost(&self) -> Result<Option<CostConfig>, String> {
        let Some(p) = self.gpu_hour_usd else { return Ok(None) };
        let c = CostConfig { gpu_hour_usd: p, gpus: self.gpus };
        c.validate()?;
        Ok(Some(c))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    /// Exact timings: --ttft to the first chunk, then a chunk every --itl.
    Fixed,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to bind (loopback unless you say otherwise).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port (0 picks a free one and prints it).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Timing model.
    #[arg(long, value_enum, default_value_t = ProfileArg::Fixed)]
    pub profile: ProfileArg,
    /// Model name the server reports and accepts.
    #[arg(long, default_value = "goodput-fixed")]
    pub model: String,
    /// Fixed profile: request arrival to first output chunk.
    #[arg(long, value_parser = parse_duration, default_value = "150ms")]
    pub ttft: Duration,
    /// Fixed profile: time between output chunks.
    #[arg(long, value_parser = parse_duration, default_value = "20ms")]
    pub itl: Duration,
    /// Fixed profile: tokens in each output chunk.
    #[arg(long, default_value_t = 2)]
    pub tokens_per_chunk: u32,
    /// Output length when a request sets no max_tokens.
    #[arg(long, default_value_t = 128)]
    pub default_max_tokens: u32,
    /// Share of requests answered with HTTP 500.
    #[arg(long, default_value_t = 0.0, help_heading = "Fault injection (seeded)")]
    pub fault_error_rate: f64,
    /// Share of streams that send an error event halfway through.
    #[arg(long, default_value_t = 0.0, help_heading = "Fault injection (seeded)")]
    pub fault_stream_error_rate: f64,
    /// Share of streams whose connection drops halfway through.
    #[arg(long, default_value_t = 0.0, help_heading = "Fault injection (seeded)")]
    pub fault_disconnect_rate: f64,
    /// Share of streams that stall once halfway through, for --fault-stall.
    #[arg(long, default_value_t = 0.0, help_heading = "Fault injection (seeded)")]
    pub fault_stall_rate: f64,
    /// Length of an injected stall.
    #[arg(long, value_parser = parse_duration, default_value = "2s", help_heading = "Fault injection (seeded)")]
    pub fault_stall: Duration,
    /// Seed for fault draws.
    #[arg(long, default_value_t = 0, help_heading = "Fault injection (seeded)")]
    pub fault_seed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_lists() {
        assert_eq!(parse_percentiles("50,90,99.9").unwrap().0, vec![50.0, 90.0, 99.9]);
        assert_eq!(parse_percentiles("p50, p99").unwrap().0, vec![50.0, 99.0]);
        assert!(parse_percentiles("101").is_err());
        assert!(parse_percentiles("x").unwrap_err().contains("50,90,99.9"));
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
