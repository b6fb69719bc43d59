//! Command-line arguments as clap parses them: raw options in groups shared
//! between commands, checked and turned into built objects by each command's
//! module.

use clap::{Args, Parser, Subcommand, ValueEnum};
use goodput_core::Slo;
use goodput_load::{Api, LengthDist, Preset, Stamps, ThinkTime, Transport, Turns};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(name = "goodput", version = crate::common::version(), propagate_version = true, about = "Measure, explain and predict the performance of LLM inference services")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load an OpenAI-compatible server (or, with no --url, the embedded simulator) and report what users feel.
    Bench(Box<BenchArgs>),
    /// Predict a run with the simulated engine in virtual time (no HTTP, no GPU).
    Estimate(Box<EstimateArgs>),
    /// Serve the simulated server: OpenAI routes, and Anthropic's, Ollama's, TGI's and llama.cpp's native APIs.
    Serve(Box<ServeArgs>),
    /// Re-analyse a saved run: other SLOs, percentiles or price.
    Report(Box<ReportArgs>),
    /// Run a series of loads: the latency–throughput curve, saturation, best goodput under the SLO, and the point to pick.
    Sweep(Box<SweepArgs>),
    /// Watch a running server's own metrics live, optionally with probe requests and alerts.
    Monitor(Box<MonitorArgs>),
    /// Set runs side by side; fail on a regression beyond a threshold.
    Compare(Box<CompareArgs>),
    /// Print a shell completion script, e.g. `goodput completions bash > ~/.local/share/bash-completion/completions/goodput`.
    Completions(CompletionsArgs),
    /// Print the man page (roff), e.g. `goodput man | man -l -`; with --dir, write one page per command there.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write goodput.1 and a goodput-COMMAND.1 per command into this folder instead of printing goodput.1.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// The server root (its /metrics is scraped) or a metrics URL ending in /metrics.
    pub url: String,
    /// More Prometheus endpoints to read with it (e.g. a DCGM exporter).
    #[arg(long)]
    pub metrics_url: Vec<String>,
    /// Time between scrapes; rates and quantiles are over the last interval.
    #[arg(long, value_parser = parse_positive_duration, default_value = "2s")]
    pub interval: Duration,
    /// Send small real requests at this rate (requests/s) and show the TTFT and TPOT users see now.
    #[arg(long)]
    pub probe_rate: Option<f64>,
    /// Model for probe requests (default: the first at /v1/models, or the server's own list for a native --api). Several, comma-separated (LoRA adapters), spread the probes over them, and each is shown apart.
    #[arg(long)]
    pub model: Option<String>,
    /// Which endpoint probes use (as bench's --api).
    #[arg(long, value_enum, default_value_t = Api::Chat)]
    pub api: Api,
    /// API key for probes (never written anywhere).
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Which header carries --api-key (as bench's --key-header).
    #[arg(long, value_enum, default_value_t = KeyHeaderArg::Auto)]
    pub key_header: KeyHeaderArg,
    /// One more header for probes, 'Name: value' (repeatable).
    #[arg(long, value_parser = parse_header)]
    pub header: Vec<(String, String)>,
    /// Alert thresholds, e.g. 'kv_cache>0.9,waiting>10,ttft_p99>2s,probe_ttft>1s'.
    #[arg(long)]
    pub alert: Option<String>,
    /// Watch one interval, print, and exit (4 when an alert fired): for cron and CI.
    #[arg(long)]
    pub once: bool,
    /// Stop after this long.
    #[arg(long, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// Write each interval's signals as one JSON line to this file.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Serve the probes' client-side metrics in Prometheus text at this address.
    #[arg(long)]
    pub prometheus_listen: Option<std::net::SocketAddr>,
}

/// Parses `150ms`, `2s`, `1m30s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("'{s}' is not a duration ({e}); write e.g. 150ms, 2s, 1m"))
}

/// A duration that must be more than nothing: a timeout, a run's length, a
/// scrape interval.
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!("'{s}' is no time at all; give a positive duration, e.g. 150ms, 2s, 1m")),
        d => Ok(d),
    }
}

/// A share, 0 to 1.
/// A size in bytes: a number, optionally with K/KiB, M/MiB or G/GiB
/// (powers of 1,024 all).
pub fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("'{s}' is not a size: give bytes, or a number with KiB, MiB or GiB (64MiB)")),
    };
    let n: usize = num.parse().map_err(|_| format!("'{s}' is not a size: give e.g. 64MiB"))?;
    match n.checked_mul(1 << shift) {
        Some(0) => Err(format!("'{s}' holds nothing: give at least 1KiB")),
        Some(b) => Ok(b),
        None => Err(format!("'{s}' is more than this machine can address")),
    }
}

pub fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a share: give a number from 0 to 1, e.g. 0.1 for a tenth")),
    }
}

/// `--meta KEY=VALUE`.
pub fn parse_meta(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(format!("'{s}' is not a note: write KEY=VALUE, e.g. gpu=H100")),
    }
}

/// `--label NAME`: something to show, not blank.
pub fn parse_label(s: &str) -> Result<String, String> {
    match s.trim() {
        "" => Err("a label is a name to show for the run: give some text, e.g. --label vllm-0.11-h100".into()),
        t => Ok(t.to_owned()),
    }
}

/// `--header 'Name: value'`.
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let (name, value) =
        s.split_once(':').ok_or_else(|| format!("'{s}' is not a header: write 'Name: value', e.g. 'X-Team: infra'"))?;
    let (name, value) = (name.trim(), value.trim());
    goodput_load::client::check_header(name, value)?;
    Ok((name.to_owned(), value.to_owned()))
}

/// `--window`: `FROM..TO`, either end left open.
pub fn parse_window(s: &str) -> Result<goodput_core::TimeSlice, String> {
    let hint = "write FROM..TO with times from the run's start, e.g. 30s..90s, 1m.. or ..2m";
    let (from, to) = s.split_once("..").ok_or_else(|| format!("'{s}' is not a window: {hint}"))?;
    let at = |t: &str| -> Result<Option<Duration>, String> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(None);
        }
        humantime::parse_duration(t)
            .map(Some)
            .map_err(|e| format!("'{t}' in --window '{s}' is not a time ({e}): {hint}"))
    };
    let (from, to) = (at(from)?.unwrap_or_default(), at(to)?);
    if to.is_some_and(|to| to <= from) {
        return Err(format!("--window '{s}' ends before it starts: {hint}"));
    }
    Ok(goodput_core::TimeSlice { from, to })
}

/// `--window` as it was given, in humantime's words.
pub fn window_text(w: &goodput_core::TimeSlice) -> String {
    let t = |d: Duration| humantime::format_duration(d).to_string();
    format!("{}..{}", t(w.from), w.to.map(t).unwrap_or_default())
}

/// `--warmup`: a request count or a time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WarmupArg {
    Requests(u64),
    Time(Duration),
}

fn parse_warmup(s: &str) -> Result<WarmupArg, String> {
    if let Ok(n) = s.trim().parse::<u64>() {
        return Ok(WarmupArg::Requests(n));
    }
    humantime::parse_duration(s.trim())
        .map(WarmupArg::Time)
        .map_err(|_| format!("invalid warm-up '{s}': give a request count (10) or a time (30s)"))
}

fn parse_length(s: &str) -> Result<LengthDist, String> {
    s.parse()
}

fn parse_turns(s: &str) -> Result<Turns, String> {
    s.parse()
}

fn parse_think_time(s: &str) -> Result<ThinkTime, String> {
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

fn parse_slo(s: &str) -> Result<Slo, String> {
    s.parse()
}

/// `--key-header`: which header carries the API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KeyHeaderArg {
    /// x-api-key for --api messages at api.anthropic.com, a bearer token everywhere else.
    Auto,
    /// Authorization: Bearer (OpenAI routes, vLLM, SGLang, TGI, llama.cpp, Ollama behind a proxy).
    Bearer,
    /// x-api-key (Anthropic's own API).
    XApiKey,
}

impl KeyHeaderArg {
    pub fn resolve(self, api: goodput_load::Api, base: &str) -> goodput_load::KeyHeader {
        use goodput_load::KeyHeader;
        match self {
            KeyHeaderArg::Bearer => KeyHeader::Bearer,
            KeyHeaderArg::XApiKey => KeyHeader::XApiKey,
            KeyHeaderArg::Auto => {
                let host = reqwest::Url::parse(base).ok().and_then(|u| u.host_str().map(str::to_owned));
                if api == goodput_load::Api::Messages && host.as_deref() == Some("api.anthropic.com") {
                    KeyHeader::XApiKey
                } else {
                    KeyHeader::Bearer
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalArg {
    Poisson,
    Gamma,
    Constant,
}

/// Where requests go and how they are sent.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Server root URL (e.g. http://127.0.0.1:8000). Without it, goodput starts its embedded simulator on a loopback port.
    #[arg(long)]
    pub url: Option<String>,
    /// Which endpoint to load.
    #[arg(long, value_enum, default_value_t = Api::Chat)]
    pub api: Api,
    /// Model name to send; by default the first model the server lists at /v1/models. Several, comma-separated (e.g. LoRA adapters), spread the requests over them, each request or session drawing one; the summary then has a row per model.
    #[arg(long)]
    pub model: Option<String>,
    /// API key (never written to any output), sent in the header --key-header names.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Which header carries --api-key: auto is x-api-key for --api messages at api.anthropic.com, a bearer token elsewhere.
    #[arg(long, value_enum, default_value_t = KeyHeaderArg::Auto)]
    pub key_header: KeyHeaderArg,
    /// One more request header, 'Name: value' (repeatable); {session} and {request} in the value become the session's and the request's number. The value is never written to any output.
    #[arg(long, value_parser = parse_header)]
    pub header: Vec<(String, String)>,
    /// Non-streaming requests (TTFT then equals E2E).
    #[arg(long)]
    pub no_stream: bool,
    /// Do not ask for stream_options.include_usage.
    #[arg(long)]
    pub no_usage: bool,
    /// Extra JSON fields merged into every request body, e.g. '{"temperature":0}'.
    #[arg(long)]
    pub extra_body: Option<String>,
    /// Per-request timeout.
    #[arg(long, value_parser = parse_positive_duration, default_value = "120s")]
    pub timeout: Duration,
    /// The most a server may make the client hold for one response: an SSE
    /// line or event, an NDJSON line, a whole body (e.g. 64MiB, 1GiB). Past
    /// it the request fails as invalid_response, and memory stays bounded.
    #[arg(long, value_parser = parse_bytes, default_value = "64MiB")]
    pub max_buffer: usize,
    /// Wait up to this long for the server to be ready (its /health, or its model list, answering 2xx) before the run: for a server still starting or loading its model.
    #[arg(long, value_parser = parse_duration)]
    pub wait_ready: Option<Duration>,
    /// After Ctrl-C, how long in-flight requests may finish before they are cancelled.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub grace: Duration,
    /// HTTP stack: `auto` reads http:// servers with goodput's own HTTP/1.1 client (each stream's task reads its socket) and uses reqwest for https and proxies; `reqwest` uses reqwest for everything.
    #[arg(long, value_enum, default_value_t = Transport::Auto)]
    pub transport: Transport,
    /// When a chunk is stamped: `kernel`, when the kernel received its bytes (Linux, http:// with --transport auto), which keeps the client's own scheduling delays out of every time; `read`, when the client read them off the socket (docs/metrics.md); `auto` (the default), kernel where it is to be had and read elsewhere. The result's config.client.stamp says which was used.
    #[arg(long, value_enum, default_value_t = Stamps::Auto)]
    pub stamp: Stamps,
}

/// The server's own metrics, scraped during the run.
#[derive(Debug, Clone, Args)]
pub struct MetricsArgs {
    /// Prometheus endpoint(s) to scrape during the run (repeat for several, e.g. the engine and a DCGM exporter). Default: <url>/metrics when it answers.
    #[arg(long, help_heading = "Server metrics")]
    pub metrics_url: Vec<String>,
    /// Do not scrape server metrics.
    #[arg(long, conflicts_with = "metrics_url", help_heading = "Server metrics")]
    pub no_metrics: bool,
    /// Time between scrapes.
    #[arg(long, value_parser = parse_positive_duration, default_value = "1s", help_heading = "Server metrics")]
    pub metrics_interval: Duration,
    /// Serve goodput's own live client-side metrics in Prometheus text at this address (e.g. 127.0.0.1:9464), named after OpenTelemetry's GenAI conventions.
    #[arg(long, help_heading = "Server metrics")]
    pub prometheus_listen: Option<std::net::SocketAddr>,
}

/// How much load.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Closed loop: this many requests in flight at all times (default 10 when no --rate).
    #[arg(long, short = 'c')]
    pub concurrency: Option<usize>,
    /// Open loop: requests per second on a schedule drawn ahead from --seed; inf sends every request at once (as vLLM's --request-rate inf), -c capping how many are in flight.
    #[arg(long, short = 'r')]
    pub rate: Option<f64>,
    /// Replay a trace: JSONL of {"timestamp": SECONDS, "input_tokens": N, "output_tokens": N[, "prefix_id": ID, "prefix_tokens": N]}, sent on its own clock (the first line at once).
    #[arg(long, conflicts_with = "rate")]
    pub trace: Option<PathBuf>,
    /// Replay the trace this many times faster (2 halves every gap).
    #[arg(long, default_value_t = 1.0, requires = "trace")]
    pub trace_speed: f64,
    #[command(flatten)]
    pub shape: ShapeArgs,
}

/// The shape of a load, shared by a single run and each point of a sweep:
/// arrivals, bounds, warm-up and seed.
#[derive(Debug, Clone, Args)]
pub struct ShapeArgs {
    /// Inter-arrival process of open-loop (--rate) loads.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Poisson)]
    pub arrival: ArrivalArg,
    /// Gamma shape for --arrival gamma: 1 is Poisson, below 1 burstier, above 1 smoother.
    #[arg(long)]
    pub burstiness: Option<f64>,
    /// Measured requests to send, per point in a sweep (when no --duration: 10 a user in a closed loop, at least 100; 100 in an open loop).
    #[arg(long, short = 'n')]
    pub requests: Option<u64>,
    /// Stop sending after this long (e.g. 60s), per point in a sweep.
    #[arg(long, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// Give up on this share of requests (0..1), as users who close the tab: each disconnects --cancel-after after it was sent unless its response has ended; the same requests for the same --seed. They count as cancelled, not failed.
    #[arg(long, value_parser = parse_share, requires = "cancel_after")]
    pub cancel_rate: Option<f64>,
    /// With --cancel-rate: how long after sending a request it is given up on (0s: as soon as it is sent).
    #[arg(long, value_parser = parse_duration, requires = "cancel_rate")]
    pub cancel_after: Option<Duration>,
    /// Warm-up excluded from the measurement window: a request count (10) or a time (30s); the bounds count after it (per point in a sweep).
    #[arg(long, value_parser = parse_warmup, default_value = "0")]
    pub warmup: WarmupArg,
    /// Climb to the load linearly over this long (e.g. 30s): users join one by one, or the rate ramps from 0. What is due meanwhile is warm-up.
    #[arg(long, value_parser = parse_duration)]
    pub ramp_up: Option<Duration>,
    /// Multi-turn sessions of this many turns (3, uniform:2..6, …; with a ShareGPT --dataset at most its conversation's, or `all` of them): each question is asked after the answer before it, with the whole conversation so far. Users (-c) hold one session at a time, --rate starts sessions per second, and -n and --warmup N count sessions.
    #[arg(long, value_parser = parse_turns, help_heading = "Sessions")]
    pub turns: Option<Turns>,
    /// Pause between an answer and the session's next question: 2s, uniform:1s..5s or exponential:2s (mean).
    #[arg(long, value_parser = parse_think_time, requires = "turns", default_value = "0s", help_heading = "Sessions")]
    pub think_time: ThinkTime,
    /// Seed for prompts and arrival times.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// What each request asks.
#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    /// Input length: 128, uniform:64..256, normal:512,128 or lognormal:MEAN,SIGMA (tokens; default 256, or the preset's).
    #[arg(long, value_parser = parse_length)]
    pub input_tokens: Option<LengthDist>,
    /// Output length, sent as max_tokens (same forms as --input-tokens; default 128, or the preset's).
    #[arg(long, value_parser = parse_length)]
    pub output_tokens: Option<LengthDist>,
    /// A named request shape; --input-tokens and --output-tokens given beside it win.
    #[arg(long, value_enum)]
    pub preset: Option<Preset>,
    /// Tokens of a system prompt shared by requests, added before each prompt (exercises prefix caching).
    #[arg(long, default_value_t = 0)]
    pub shared_prefix_tokens: u32,
    /// Share of requests that carry a shared prefix.
    #[arg(long, value_parser = parse_share, default_value_t = 1.0, requires = "shared_prefix_tokens")]
    pub shared_prefix_ratio: f64,
    /// How many distinct shared prefixes requests draw from.
    #[arg(long, default_value_t = 1, requires = "shared_prefix_tokens")]
    pub shared_prefixes: u32,
    /// Force the output length: send ignore_eos and min_tokens (vLLM and SGLang honour them; --api llamacpp sends ignore_eos).
    #[arg(long)]
    pub ignore_eos: bool,
    /// Prompts from a file: JSONL ({"prompt": …} or {"messages": …}, optional max_tokens) or ShareGPT JSON.
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    /// A local Hugging Face tokenizer.json for exact input lengths and client-side counts.
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
}

/// What is written, and where.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Percentiles to report, e.g. 50,90,99.9.
    #[arg(long, value_parser = parse_percentiles, default_value = "50,90,95,99")]
    pub percentiles: PercentileList,
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
    /// A name for the run, kept as config.label: reports show it and compare uses it instead of the file name.
    #[arg(long, value_parser = parse_label)]
    pub label: Option<String>,
    /// A note kept in the result's config.meta, e.g. --meta gpu=H100 --meta vllm=0.11.0 (repeatable); compare lists the ones that differ.
    #[arg(long, value_parser = parse_meta)]
    pub meta: Vec<(String, String)>,
    /// Live view while the run goes: a full-screen view on a terminal, periodic lines otherwise.
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    pub progress: ProgressArg,
    #[command(flatten)]
    pub exports: ExportArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressArg {
    /// Full screen on a terminal, plain lines when not a terminal, nothing with --quiet.
    Auto,
    Tui,
    Plain,
    #[value(alias = "off")]
    None,
}

/// Renderings of the result besides JSON.
#[derive(Debug, Clone, Default, Args)]
pub struct ExportArgs {
    /// A self-contained HTML report (charts inline, no network fetch).
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// CSV files (summary, per-request records, sweep points, server signals, engine series) into this folder, units in the headers.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// A Markdown summary table fit for a pull request.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
}

impl ExportArgs {
    /// The formats asked for, with their destinations.
    pub fn targets(&self) -> Vec<(goodput_report::Format, PathBuf)> {
        use goodput_report::Format;
        let mut v = Vec::new();
        if let Some(p) = &self.html {
            v.push((Format::Html, p.clone()));
        }
        if let Some(p) = &self.csv {
            v.push((Format::Csv, p.clone()));
        }
        if let Some(p) = &self.markdown {
            v.push((Format::Markdown, p.clone()));
        }
        v
    }
}

/// How a run is judged: SLOs and the price of the hardware.
#[derive(Debug, Clone, Args)]
pub struct JudgeArgs {
    /// Per-request limits and/or percentile objectives, e.g. 'ttft<=200ms,tpot<=50ms' or 'ttft:p95<=200ms'.
    #[arg(long, value_parser = parse_slo, help_heading = "SLOs and cost")]
    pub slo: Option<Slo>,
    /// Exit non-zero (3) when a percentile objective of --slo fails (for CI).
    #[arg(long, help_heading = "SLOs and cost")]
    pub fail_on_slo: bool,
    /// Price of one GPU per hour in USD, for cost per million tokens.
    #[arg(long, help_heading = "SLOs and cost")]
    pub gpu_hour_usd: Option<f64>,
    /// GPUs the server runs on [default: the config file's, else the simulated engine's --tp, else 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), help_heading = "SLOs and cost")]
    pub gpus: Option<u32>,
    /// A TOML file with `slo`, a `[prices]` list, `price`, `gpus` and `[ratings]` thresholds; flags win over it.
    #[arg(long, help_heading = "SLOs and cost")]
    pub config: Option<PathBuf>,
    /// The entry of the config's [prices] list to use (a list of one needs no choice).
    #[arg(long, help_heading = "SLOs and cost")]
    pub price: Option<String>,
}

/// The simulated engine: which model on which hardware, and vLLM's limits.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// Model: a catalog name (llama-3.1-8b, llama-3.1-70b, llama-3.1-405b, qwen2.5-7b, qwen2.5-72b, mixtral-8x7b) or a Hugging Face config.json.
    #[arg(long = "model", default_value = DEFAULT_ENGINE_MODEL, help_heading = "Simulated engine")]
    pub engine_model: String,
    #[command(flatten)]
    pub hw: EngineHwArgs,
}

pub const DEFAULT_ENGINE_MODEL: &str = "llama-3.1-8b";

/// The simulated engine's hardware and limits (the model is named apart, as
/// `--model` means the served model in commands that talk to a server).
#[derive(Debug, Clone, Args)]
pub struct EngineHwArgs {
    /// GPU: h100-sxm, h100-pcie, h200, a100-80gb, l40s, l4, b200, mi300x.
    #[arg(long, default_value = "h100-sxm", help_heading = "Simulated engine")]
    pub gpu: String,
    /// Weight precision: bf16, fp8, int8, int4 (weight-only).
    #[arg(long, default_value = "bf16", help_heading = "Simulated engine")]
    pub precision: String,
    /// KV-cache dtype: auto (the activation dtype) or fp8.
    #[arg(long, default_value = "auto", help_heading = "Simulated engine")]
    pub kv_cache_dtype: String,
    /// Tensor-parallel degree.
    #[arg(long, default_value_t = 1, help_heading = "Simulated engine")]
    pub tp: u32,
    /// Share of GPU memory the engine may use.
    #[arg(long, default_value_t = 0.9, help_heading = "Simulated engine")]
    pub gpu_memory_utilization: f64,
    /// Most sequences in one batch (default: 1024 on GPUs with ≥70 GiB, else 256).
    #[arg(long, help_heading = "Simulated engine")]
    pub max_num_seqs: Option<u32>,
    /// Token budget of one step.
    #[arg(long, default_value_t = 8192, help_heading = "Simulated engine")]
    pub max_num_batched_tokens: u32,
    /// Tokens per KV block.
    #[arg(long, default_value_t = 16, help_heading = "Simulated engine")]
    pub block_size: u32,
    /// Turn chunked prefill off.
    #[arg(long, help_heading = "Simulated engine")]
    pub no_chunked_prefill: bool,
    /// Turn prefix caching off.
    #[arg(long, help_heading = "Simulated engine")]
    pub no_prefix_caching: bool,
    /// A JSON file of step-time constants overriding the GPU family's calibration.
    #[arg(long, help_heading = "Simulated engine")]
    pub calibration: Option<PathBuf>,
    /// What the served model wraps around a chat's messages, counted in its prompts as a real server counts them: auto (the model's: llama3 for Llama 3, qwen2.5, mistral for Mistral and Mixtral, chatml otherwise), llama3, qwen2.5, chatml, mistral, or none. Raw prompts (completions, llama.cpp, TGI) get the template's BOS.
    #[arg(long, default_value = "auto", help_heading = "Simulated engine")]
    pub chat_template: String,
}

impl Default for EngineHwArgs {
    /// The same defaults as the flags.
    fn default() -> Self {
        EngineHwArgs {
            gpu: "h100-sxm".into(),
            precision: "bf16".into(),
            kv_cache_dtype: "auto".into(),
            tp: 1,
            gpu_memory_utilization: 0.9,
            max_num_seqs: None,
            max_num_batched_tokens: 8192,
            block_size: 16,
            no_chunked_prefill: false,
            no_prefix_caching: false,
            calibration: None,
            chat_template: "auto".into(),
        }
    }
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub metrics: MetricsArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub judge: JudgeArgs,
    #[command(flatten)]
    pub sim: SimArgs,
}

/// The embedded server `bench` starts when there is no --url.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Embedded simulator: the simulated engine (default) or exact fixed timings.
    #[arg(long, value_enum, default_value_t = ProfileArg::Engine, help_heading = "Embedded simulator (no --url)")]
    pub sim_profile: ProfileArg,
    /// Embedded engine: catalog model or Hugging Face config.json.
    #[arg(long, default_value = DEFAULT_ENGINE_MODEL, help_heading = "Embedded simulator (no --url)")]
    pub sim_model: String,
    /// Embedded engine: GPU.
    #[arg(long, default_value = "h100-sxm", help_heading = "Embedded simulator (no --url)")]
    pub sim_gpu: String,
    /// Embedded engine: weight precision.
    #[arg(long, default_value = "bf16", help_heading = "Embedded simulator (no --url)")]
    pub sim_precision: String,
    /// Embedded engine: tensor-parallel degree.
    #[arg(long, default_value_t = 1, help_heading = "Embedded simulator (no --url)")]
    pub sim_tp: u32,
    /// Embedded engine: the model's chat template (auto, llama3, qwen2.5, chatml, mistral, none), as --chat-template of serve.
    #[arg(long, default_value = "auto", help_heading = "Embedded simulator (no --url)")]
    pub sim_chat_template: String,
    /// Fixed profile: time to first token.
    #[arg(long, value_parser = parse_duration, default_value = "150ms", help_heading = "Embedded simulator (no --url)")]
    pub sim_ttft: Duration,
    /// Fixed profile: time between chunks.
    #[arg(long, value_parser = parse_duration, default_value = "20ms", help_heading = "Embedded simulator (no --url)")]
    pub sim_itl: Duration,
    /// Fixed profile: tokens per chunk.
    #[arg(long, default_value_t = 2, help_heading = "Embedded simulator (no --url)")]
    pub sim_tokens_per_chunk: u32,
}

#[derive(Debug, Args)]
pub struct EstimateArgs {
    #[command(flatten)]
    pub engine: EngineArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub judge: JudgeArgs,
    /// Which route the requests model: a chat route (chat, messages, ollama-chat, ollama-generate) puts the model's chat template around each prompt, as a real server does; the others put its BOS before it. Prompt lengths then exceed --input-tokens as a live bench's do.
    #[arg(long, value_enum, default_value_t = Api::Chat)]
    pub api: Api,
    /// Instead of one run: simulate each row of a reference CSV (the format of validation/public.csv) and print prediction, reference and error.
    #[arg(long)]
    pub validate: Option<PathBuf>,
}

fn parse_list<T: std::str::FromStr>(s: &str) -> Result<Vec<T>, String> {
    let v: Result<Vec<T>, _> = s.split(',').map(str::trim).filter(|p| !p.is_empty()).map(str::parse).collect();
    match v {
        Ok(v) if !v.is_empty() => Ok(v),
        _ => Err(format!("'{s}' is not a comma-separated list of numbers, e.g. 1,2,4,8")),
    }
}

/// A list of concurrencies.
#[derive(Debug, Clone, PartialEq)]
pub struct CountList(pub Vec<u64>);
/// A list of rates.
#[derive(Debug, Clone, PartialEq)]
pub struct RateList(pub Vec<f64>);

fn parse_counts(s: &str) -> Result<CountList, String> {
    let v: Vec<u64> = parse_list(s)?;
    if v.contains(&0) {
        return Err("a concurrency must be at least 1".into());
    }
    Ok(CountList(v))
}

fn parse_rates(s: &str) -> Result<RateList, String> {
    let v: Vec<f64> = parse_list(s)?;
    if v.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return Err("a rate must be a positive number of requests per second".into());
    }
    Ok(RateList(v))
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Sweep the simulated engine in virtual time instead of a server (--model names a catalog model then).
    #[arg(long)]
    pub estimate: bool,
    /// Closed-loop points: a list of concurrencies, e.g. 1,2,4,8,16,32.
    #[arg(long, value_parser = parse_counts, conflicts_with_all = ["rate", "auto"])]
    pub concurrency: Option<CountList>,
    /// Open-loop points: a list of rates in requests/s, e.g. 1,2,4,8.
    #[arg(long, value_parser = parse_rates, conflicts_with = "auto")]
    pub rate: Option<RateList>,
    /// A synchronous baseline, then the throughput ceiling, then open-loop rates spread between.
    #[arg(long)]
    pub auto: bool,
    /// Rates spread between baseline and ceiling with --auto.
    #[arg(long, default_value_t = 6)]
    pub points: u32,
    /// Concurrency of the ceiling point with --auto, and the in-flight cap of open-loop points.
    #[arg(long, default_value_t = 256)]
    pub max_concurrency: u64,
    /// Extra points placed by bisection to find the highest load that meets every SLO objective.
    #[arg(long, default_value_t = 3)]
    pub search_steps: u32,
    /// Share of requests that must be good, beside every objective passing, for a point to meet the SLO.
    #[arg(long, default_value_t = 0.9)]
    pub attainment: f64,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub metrics: MetricsArgs,
    #[command(flatten)]
    pub hw: EngineHwArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub judge: JudgeArgs,
    #[command(flatten)]
    pub sim: SimArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    /// The simulated continuous-batching engine (--model, --gpu, --precision, --tp, engine limits).
    Engine,
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
    #[arg(long, value_enum, default_value_t = ProfileArg::Engine)]
    pub profile: ProfileArg,
    /// The simulated engine's model: a catalog name or a Hugging Face config.json.
    #[arg(long, default_value = DEFAULT_ENGINE_MODEL)]
    pub model: String,
    #[command(flatten)]
    pub hw: EngineHwArgs,
    /// The name the server reports at /v1/models (default: the engine's model name, or goodput-fixed). Several, comma-separated, are served alike (as LoRA adapters beside a base model); the engine refuses any other name with 404, as vLLM does.
    #[arg(long)]
    pub served_model_name: Option<String>,
    /// Time scale of the engine: 2 runs twice as fast as the hardware would.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Fixed profile: request arrival to first output chunk.
    #[arg(long, value_parser = parse_duration, default_value = "150ms", help_heading = "Fixed profile")]
    pub ttft: Duration,
    /// Fixed profile: time between output chunks.
    #[arg(long, value_parser = parse_duration, default_value = "20ms", help_heading = "Fixed profile")]
    pub itl: Duration,
    /// Fixed profile: tokens in each output chunk.
    #[arg(long, default_value_t = 2, help_heading = "Fixed profile")]
    pub tokens_per_chunk: u32,
    /// Fixed profile: every N-th request (the first included) waits --slow-ttft longer for its first token.
    #[arg(long, requires = "slow_ttft", help_heading = "Fixed profile")]
    pub slow_every: Option<u64>,
    /// Fixed profile: the extra wait of --slow-every requests.
    #[arg(long, value_parser = parse_duration, help_heading = "Fixed profile")]
    pub slow_ttft: Option<Duration>,
    /// Fixed profile: log when each token chunk of every stream was written, one JSON line per stream with its X-Request-Id (bench: --header 'X-Request-Id: {request}'), to split a client's inter-token error into the server's share and its own (bench/client_overhead.sh).
    #[arg(long, help_heading = "Fixed profile")]
    pub write_log: Option<PathBuf>,
    /// Output length when a request sets no max_tokens.
    #[arg(long, default_value_t = 128)]
    pub default_max_tokens: u32,
    /// Print no periodic status lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Live view: full screen on a terminal, status lines every 10 s otherwise.
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    pub progress: ProgressArg,
    #[command(flatten)]
    pub faults: FaultArgs,
}

#[derive(Debug, Clone, Args)]
pub struct FaultArgs {
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
    /// Fixed profile: play a hostile server's misbehaviour on this share of requests, e.g. reset-during:0.1 (repeatable, one case each). Cases: malformed-json, non-utf8, endless-line, oversized-header, reset-before, reset-during, never-answer, trickle, broken-chunked, data-after-done, usage-only, event-error, 429, 503, html-200, close-after-response (docs/hostile-servers.md says what each does and what goodput records).
    #[arg(long = "fault", value_name = "CASE:RATE", value_parser = goodput_sim::faults::parse_fault, help_heading = "Fault injection (seeded)")]
    pub fault: Vec<(goodput_sim::faults::Hostile, f64)>,
    /// Between two bytes of a --fault trickle response.
    #[arg(long, value_parser = parse_duration, default_value = "1ms", help_heading = "Fault injection (seeded)")]
    pub fault_trickle_gap: Duration,
    /// Seed for fault draws.
    #[arg(long, default_value_t = 0, help_heading = "Fault injection (seeded)")]
    pub fault_seed: u64,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Result documents: the first is the baseline.
    #[arg(required = true, num_args = 2..)]
    pub runs: Vec<PathBuf>,
    /// Regression rules, e.g. 'ttft_ms.p95>+10%,output_tokens_per_s<-5%': exit 1 when a later run breaks one against the first.
    #[arg(long)]
    pub fail_if: Option<String>,
    /// Write the comparison as a JSON document (schema goodput/v1, kind compare) to this file; - for standard output.
    #[arg(long, short = 'o', visible_alias = "json")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub exports: ExportArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A result document written by bench, estimate or sweep (-o).
    pub run: PathBuf,
    /// The run's per-request records (--records), when the document does not hold them (--include-requests).
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// Percentiles to report, e.g. 50,90,99.9 (default: the run's own).
    #[arg(long, value_parser = parse_percentiles)]
    pub percentiles: Option<PercentileList>,
    /// Re-analyse only the requests sent in this stretch of the run, e.g. 30s..90s, 1m.. or ..2m (times from the run's start; a session counts by its first turn).
    #[arg(long, value_parser = parse_window)]
    pub window: Option<goodput_core::TimeSlice>,
    #[command(flatten)]
    pub judge: JudgeArgs,
    /// Write the re-analysed document to this JSON file.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub exports: ExportArgs,
}

/// Parses the command line. clap reads a value such as `-1` or `-5s` as an
/// unknown flag and says only "unexpected argument"; this names the option
/// it was meant for and why it was refused.
pub fn parse() -> Cli {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    Cli::try_parse_from(&args).unwrap_or_else(|e| {
        if let Some(msg) = negative_value_message(&e, &args) {
            eprintln!("error: {msg}");
            std::process::exit(2);
        }
        e.exit()
    })
}

fn negative_value_message(e: &clap::Error, args: &[std::ffi::OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else { return None };
    if !bad.strip_prefix('-').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '.')) {
        return None;
    }
    // The whole value as typed (clap may name only its first short flag).
    let at = args.iter().position(|a| a.to_str().is_some_and(|a| a.starts_with(bad.as_str())))?;
    let value = args[at].to_string_lossy();
    let option = at.checked_sub(1).map(|i| args[i].to_string_lossy()).filter(|o| o.starts_with("--"));
    Some(match option {
        Some(option) => {
            format!("{option} {value}: a negative value makes no sense here; see --help for what {option} takes")
        }
        None => format!("'{value}' is not an option (a negative number?); see --help"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_header_is_x_api_key_only_for_anthropic_s_own_messages_api() {
        use goodput_load::{Api, KeyHeader};
        let auto = KeyHeaderArg::Auto;
        assert_eq!(auto.resolve(Api::Messages, "https://api.anthropic.com"), KeyHeader::XApiKey);
        assert_eq!(auto.resolve(Api::Messages, "http://127.0.0.1:8000"), KeyHeader::Bearer);
        assert_eq!(auto.resolve(Api::Chat, "https://api.anthropic.com"), KeyHeader::Bearer);
        assert_eq!(KeyHeaderArg::XApiKey.resolve(Api::Chat, "http://h"), KeyHeader::XApiKey);
    }

    #[test]
    fn headers() {
        assert_eq!(parse_header("X-Team:  infra ").unwrap(), ("X-Team".into(), "infra".into()));
        assert_eq!(parse_header("X-Empty:").unwrap().1, "");
        assert!(parse_header("no colon").unwrap_err().contains("'Name: value'"));
        assert!(parse_header("Bad Name: x").unwrap_err().contains("not a header name"));
    }

    #[test]
    fn windows() {
        let w = parse_window("30s..1m30s").unwrap();
        assert_eq!((w.from, w.to), (Duration::from_secs(30), Some(Duration::from_secs(90))));
        assert_eq!(window_text(&w), "30s..1m 30s");
        assert_eq!(parse_window("..2m").unwrap().from, Duration::ZERO);
        assert_eq!(parse_window("1m..").unwrap().to, None);
        assert!(parse_window("30s").unwrap_err().contains("e.g. 30s..90s"));
        assert!(parse_window("30s..soon").unwrap_err().contains("'soon'"));
        assert!(parse_window("90s..30s").unwrap_err().contains("ends before it starts"));
    }

    #[test]
    fn percentile_lists() {
        assert_eq!(parse_percentiles("50,90,99.9").unwrap().0, vec![50.0, 90.0, 99.9]);
        assert_eq!(parse_percentiles("p50, p99").unwrap().0, vec![50.0, 99.0]);
        assert!(parse_percentiles("101").is_err());
        assert!(parse_percentiles("x").unwrap_err().contains("50,90,99.9"));
    }

    #[test]
    fn engine_defaults_match_the_flags() {
        let cli = Cli::try_parse_from(["goodput", "serve"]).unwrap();
        let Command::Serve(a) = cli.command else { panic!() };
        let d = EngineHwArgs::default();
        assert_eq!(format!("{:?}", a.hw), format!("{d:?}"));
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
