//! Argument groups shared between commands: where requests go, the load,
//! the workload, the outputs, the judging, the simulated engine.

use super::parse::*;
use clap::{Args, ValueEnum};
use goodput_core::Slo;
use goodput_load::trace::TraceFormat;
use goodput_load::{Api, LengthDist, Preset, Stamps, ThinkTime, Transport, Turns};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// --api embeddings: how many inputs each request carries; the request's prompt (its input length) is split at word boundaries into this many.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096), value_name = "N")]
    pub embed_batch: Option<u32>,
    /// --api rerank: how many documents each query comes with; the request's prompt is split at word boundaries into the query and this many documents.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096), value_name = "N")]
    pub rerank_docs: Option<u32>,
    /// Model name to send; by default the first model the server lists at /v1/models. Several, comma-separated (e.g. LoRA adapters), spread the requests over them, each request or session drawing one; the summary then has a row per model.
    #[arg(long)]
    pub model: Option<String>,
    /// API key (never written to any output), sent in the header --key-header names.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Which header carries --api-key: auto is x-api-key for --api messages at api.anthropic.com, a bearer token elsewhere.
    #[arg(long, value_enum, default_value_t = KeyHeaderArg::Auto)]
    pub key_header: KeyHeaderArg,
    /// One more request header, 'Name: value' (repeatable); {session} and {request} in the value become the session's and the request's number. The value is masked in every output where it could be a secret: always under a header whose name says it is a credential (auth, key, token, secret, cookie, pass, pwd, sig, hmac, otp, pin), else unless it is a plain word under 16 letters.
    #[arg(long, value_parser = parse_header)]
    pub header: Vec<(String, String)>,
    /// Non-streaming requests (TTFT then equals E2E).
    #[arg(long)]
    pub no_stream: bool,
    /// Do not ask for stream_options.include_usage.
    #[arg(long)]
    pub no_usage: bool,
    /// Extra JSON fields merged into every request body, e.g. '{"temperature":0}'. They are written verbatim into the result (config.client.extra_body): a secret belongs in --header, whose values are never written.
    #[arg(long)]
    pub extra_body: Option<String>,
    /// Per-request timeout.
    #[arg(long, value_parser = parse_positive_duration, default_value = "120s")]
    pub timeout: Duration,
    /// The most a server may make the client hold for one response: an SSE
    /// line or event, an NDJSON line, a whole body (e.g. 64MiB, 1GiB). Past
    /// it the request fails as invalid_response, and memory stays bounded.
    /// All streams' unended lines and all whole bodies being read together
    /// are bounded too, by an eighth of the memory available when the run
    /// starts (never under --max-buffer; GOODPUT_BUFFER_BUDGET=BYTES sets
    /// it): the response that passes it fails the same way.
    #[arg(long, value_parser = parse_bytes, default_value = "64MiB")]
    pub max_buffer: usize,
    /// Wait up to this long for the server to be ready (its /health, or its model list, answering 2xx) before the run: for a server still starting or loading its model.
    #[arg(long, value_parser = parse_duration)]
    pub wait_ready: Option<Duration>,
    /// After Ctrl-C or SIGTERM, or once --duration has ended sending, how long in-flight requests may finish before they are cancelled.
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
    /// Prometheus endpoint(s) to scrape during the run (repeat for several, e.g. the engine and a DCGM exporter). Default: <url>/metrics when it answers with Prometheus text, else <url>/prometheus/metrics (where TensorRT-LLM's trtllm-serve serves it, its /metrics being JSON).
    #[arg(long, help_heading = "Server metrics")]
    pub metrics_url: Vec<String>,
    /// Do not scrape server metrics.
    #[arg(long, conflicts_with = "metrics_url", help_heading = "Server metrics")]
    pub no_metrics: bool,
    /// Time between scrapes.
    #[arg(long, value_parser = parse_scrape_interval, default_value = "1s", help_heading = "Server metrics")]
    pub metrics_interval: Duration,
    /// Serve goodput's own live client-side metrics in Prometheus text at this address (e.g. 127.0.0.1:9464), named after OpenTelemetry's GenAI conventions.
    #[arg(long, help_heading = "Server metrics")]
    pub prometheus_listen: Option<std::net::SocketAddr>,
}

/// A run split over several client processes (docs/shards.md).
#[derive(Debug, Clone, Default, Args)]
pub struct ShardArgs {
    /// Run shard I of N (I counted from 0, e.g. 1/3) of the run the other flags describe, the same in every shard: an open loop's arrivals I, I+N, … of its one schedule; a closed loop's users I, I+N, …; sessions whole; the warm-up the same way. `goodput merge` puts the shards' results back together.
    #[arg(long, value_parser = parse_shard, value_name = "I/N", help_heading = "Sharded runs")]
    pub shard: Option<(u32, u32)>,
    /// Wait for this wall-clock instant before the first send: Unix seconds (1767225600) or RFC 3339 (2026-01-01T00:00:00Z). Give every shard the same, so that they start together.
    #[arg(long, value_parser = parse_start_at, value_name = "T", help_heading = "Sharded runs")]
    pub start_at: Option<f64>,
    /// Scrape the server's metrics in this shard too (by default only shard 0 scrapes).
    #[arg(long, requires = "shard", help_heading = "Sharded runs")]
    pub metrics_every_shard: bool,
}

/// How much load.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Closed loop: this many requests in flight at all times (default 10 when no --rate).
    #[arg(long, short = 'c')]
    pub concurrency: Option<usize>,
    /// Open loop: requests per second on a schedule drawn ahead from --seed; inf sends every request at once (as vLLM's --request-rate inf), -c capping how many are in flight.
    #[arg(long, short = 'r', value_parser = number("--rate", "requests per second", "10", Units::PerSecond))]
    pub rate: Option<f64>,
    /// Replay a trace, sent on its own clock (the first line at once): goodput's JSONL of {"timestamp": SECONDS, "input_tokens": N, "output_tokens": N[, "prefix_id": ID, "prefix_tokens": N]}, ID a whole number (not a string) that requests sharing a prefix share, Mooncake's JSONL (hash_ids become shared prompt blocks), or Azure's or BurstGPT's CSV (--trace-format).
    #[arg(long, conflicts_with = "rate")]
    pub trace: Option<PathBuf>,
    /// The --trace file's format; auto tells it from the first line.
    #[arg(long, value_enum, default_value_t = TraceFormat::Auto, requires = "trace")]
    pub trace_format: TraceFormat,
    /// Replay the trace this many times faster (2 halves every gap).
    #[arg(long, default_value_t = 1.0, requires = "trace", value_parser = number("--trace-speed", "how many times faster to replay", "2", Units::Times))]
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
    #[arg(long, value_parser = number("--burstiness", "the gamma shape", "0.5", Units::Plain))]
    pub burstiness: Option<f64>,
    /// Measured requests to send (when no --duration: 10 a user in a closed loop, at least 100; 100 in an open loop). A sweep states its own per-point default.
    #[arg(long, short = 'n')]
    pub requests: Option<u64>,
    /// Stop sending after this long (e.g. 60s).
    #[arg(long, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// Give up on this share of requests (0..1), as users who close the tab: each disconnects --cancel-after after it was sent unless its response has ended; the same requests for the same --seed. They count as cancelled, not failed.
    #[arg(long, value_parser = parse_share, requires = "cancel_after")]
    pub cancel_rate: Option<f64>,
    /// With --cancel-rate: how long after sending a request it is given up on (0s: as soon as it is sent).
    #[arg(long, value_parser = parse_duration, requires = "cancel_rate")]
    pub cancel_after: Option<Duration>,
    /// Warm-up excluded from the measurement window: a request count (10) or a time (30s); the bounds count after it.
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
    /// Seed for prompts and arrival times. By default a fresh one each run (printed, and kept in the result's config.load.seed), so that a server's prefix cache cannot serve a run from an earlier one's prompts; a sweep's points each draw their own from it. estimate and sweep --estimate, which start from an empty engine, use 0.
    #[arg(long, value_parser = parse_seed, default_value = "fresh")]
    pub seed: Seed,
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
    /// Prompts from a local file: JSONL, a JSON array (ShareGPT's too) or Parquet, each entry's prompt in the column --dataset-column names or the first found of prompt, messages, conversations (ShareGPT), conversation (LMSYS-Chat, WildChat), text, instruction, question; optional max_tokens.
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    /// The --dataset column that holds each prompt: text, OpenAI-style messages, or chat turns (role/content or from/value).
    #[arg(long, requires = "dataset")]
    pub dataset_column: Option<String>,
    /// A local Hugging Face tokenizer.json for exact input lengths and client-side counts.
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Score each answer against its dataset entry's "reference" (or "answer") with these scorers: exact, number, rouge-l, bleu, chrf (default: all that apply). Scores go into the records and summary.quality.
    #[arg(long, value_parser = parse_scorers, help_heading = "Quality")]
    pub score: Option<ScorerList>,
    /// Keep each request's prompt, answer and reference in its record (off by default: they can be private; scores and hashes are kept either way). The API key and --header values that could be secrets are masked in them, as everywhere (see --header).
    #[arg(long, help_heading = "Quality")]
    pub keep_text: bool,
    /// Send each prompt this many times within the run, the copies spread apart so they land in different batches; summary.quality.consistency says how alike they came back.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..), help_heading = "Quality")]
    pub repeat: u32,
    /// Synthetic images in each chat request, for vision-language models: drawn from the seed, every one different (no server cache serves one twice), sent as base64 data URLs in the last user message's content parts.
    #[arg(long, help_heading = "Images")]
    pub images: Option<u32>,
    /// Each --images image's size, WIDTHxHEIGHT in pixels.
    #[arg(long, default_value = "512x512", value_parser = goodput_load::workload::parse_image_size, requires = "images", help_heading = "Images")]
    pub image_size: (u32, u32),
    /// How --images are encoded: png or jpeg (quality 85).
    #[arg(long, default_value = "png", value_parser = parse_image_format, requires = "images", help_heading = "Images")]
    pub image_format: goodput_load::workload::ImageFormat,
    /// Share of requests that carry --images (drawn per request from the seed); the rest are text only, and the summary gives TTFT for each apart.
    #[arg(long, value_parser = parse_share, default_value_t = 1.0, requires = "images", help_heading = "Images")]
    pub image_share: f64,
}

fn parse_image_format(s: &str) -> Result<goodput_load::workload::ImageFormat, String> {
    s.parse()
}

impl WorkloadArgs {
    /// The files read, each with its flag.
    pub fn inputs(&self) -> Vec<(&'static str, &Path)> {
        let given = [("--dataset", &self.dataset), ("--tokenizer", &self.tokenizer)];
        given.into_iter().filter_map(|(flag, p)| Some((flag, p.as_deref()?))).collect()
    }

    /// The images --images asks for, checked.
    pub fn image_spec(&self) -> Result<Option<goodput_load::workload::ImageSpec>, String> {
        let Some(count) = self.images else { return Ok(None) };
        let (width, height) = self.image_size;
        let spec = goodput_load::workload::ImageSpec {
            count,
            width,
            height,
            format: self.image_format,
            share: self.image_share,
        };
        spec.check()?;
        Ok(Some(spec))
    }
}

/// What is written, and where.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Percentiles to report, e.g. 50,90,99.9, sorted ascending and each once (99,50,99 is 50,99).
    #[arg(long, value_parser = parse_percentiles, default_value = "50,90,95,99")]
    pub percentiles: PercentileList,
    /// Stream per-request records to this file as they complete: JSON Lines, or Parquet (one row per request, readable once the run ends) when its name ends in .parquet.
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// Write the result document (schema goodput/v1) to this JSON file; - for standard output.
    #[arg(long, short = 'o', visible_alias = "json")]
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
    /// A note kept in the result's config.meta, e.g. --meta gpu=H100 --meta vllm=0.11.0 (repeatable); compare lists the ones that differ. Written verbatim into the result and its reports: no secrets here.
    #[arg(long, value_parser = parse_meta)]
    pub meta: Vec<(String, String)>,
    /// Live view while the run goes: a full-screen view on a terminal, periodic lines otherwise.
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    pub progress: ProgressArg,
    #[command(flatten)]
    pub exports: ExportArgs,
}

impl OutputArgs {
    /// The files written, each with its flag (see
    /// [`crate::output::distinct_files`]).
    pub fn outputs(&self) -> Vec<(&'static str, Option<&Path>)> {
        let mut v = vec![("--output", self.output.as_deref()), ("--records", self.records.as_deref())];
        v.extend(self.exports.outputs());
        v
    }

    /// The outputs of a document written again from saved runs (`report`,
    /// `merge`): its percentiles, the result file and the renderings asked
    /// for; no records, live view or tags of a run of its own.
    pub fn rewriting(percentiles: Vec<f64>, output: Option<PathBuf>, exports: ExportArgs) -> OutputArgs {
        OutputArgs {
            percentiles: PercentileList(percentiles),
            records: None,
            output,
            include_requests: false,
            quiet: false,
            label: None,
            meta: Vec::new(),
            progress: ProgressArg::None,
            exports,
        }
    }
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
    /// CSV files (summary, per-request records, sweep points, server signals, engine series) into this folder, units in the headers; a name ending in .csv gets the main table alone (a run's summary, a sweep's points).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// A Markdown summary table fit for a pull request.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
}

impl ExportArgs {
    /// The renderings' destinations, each with its flag.
    pub fn outputs(&self) -> [(&'static str, Option<&Path>); 3] {
        [("--html", self.html.as_deref()), ("--markdown", self.markdown.as_deref()), ("--csv", self.csv.as_deref())]
    }

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
    /// Per-request limits and/or percentile objectives, e.g. 'ttft<=200ms,tpot<=50ms' or 'ttft:p95<=200ms' (given again, its terms join the others': --slo 'ttft<=200ms' --slo 'tpot<=50ms' is the first example); limits pass when --attainment of the requests meet them all. A request of two output tokens or more whose output came all at once (not streamed, or buffered on the way) does not meet a tpot or itl_max term: nothing of it was measured.
    #[arg(long, value_parser = parse_slo, action = clap::ArgAction::Append, help_heading = "SLOs and cost")]
    pub slo: Option<Slo>,
    /// Share of requests that must meet every per-request limit of --slo for it to pass (0.95 or 95%) [default: the SLO's own attainment>= term, else 0.9]; one that differs from --slo's own attainment>= term is refused. A percentile objective carries its own share (a p95 is 95%), so with percentile objectives alone bench, estimate, report and merge refuse it (write the share as the percentile, or attainment>= in --slo), and a sweep point must reach it besides its objectives.
    #[arg(long, value_parser = parse_attainment, help_heading = "SLOs and cost")]
    pub attainment: Option<f64>,
    /// Exit non-zero (3) when the SLO fails: a percentile objective missed, or the limits' attainment short of its target (for CI).
    #[arg(long, help_heading = "SLOs and cost")]
    pub fail_on_slo: bool,
    /// Exit non-zero (4) when the run's window was not a steady state (summary.stability: a load beyond the server, or mostly ramp-up and drain), or the client itself stalled while requests were due or in flight (client_stalls); a sweep, when it has no steady point to recommend or its client stalled in a point.
    #[arg(long, help_heading = "SLOs and cost")]
    pub fail_on_unsteady: bool,
    /// Confidence of the intervals put on every percentile, rate and attainment (0.95 or 95%; docs/metrics.md, Intervals).
    #[arg(long, value_parser = parse_confidence, default_value = "0.95", help_heading = "SLOs and cost")]
    pub confidence: f64,
    /// Price of one GPU per hour in USD, for cost per million tokens.
    #[arg(long, value_parser = parse_gpu_hour_usd, help_heading = "SLOs and cost")]
    pub gpu_hour_usd: Option<f64>,
    /// GPUs the server runs on [default: the config file's, else the simulated engine's (estimate's, or the embedded one with no --url): TP × PP × DP, or its P:D pools' GPUs; else 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), help_heading = "SLOs and cost")]
    pub gpus: Option<u32>,
    /// A TOML file with `slo`, a `[prices]` list, `price`, `gpus` and `[ratings]` thresholds; flags win over it.
    #[arg(long, help_heading = "SLOs and cost")]
    pub config: Option<PathBuf>,
    /// The entry of the config's [prices] list to use (a list of one needs no choice).
    #[arg(long, help_heading = "SLOs and cost")]
    pub price: Option<String>,
}

impl JudgeArgs {
    /// Refuses `--attainment` where `slo`, the SLO a run is judged by
    /// (`bench`, `estimate`, `report`, `merge`), has percentile objectives
    /// alone and names no attainment of its own: each objective is judged by
    /// its own percentile, and the flag had silently added a rule that
    /// `--attainment` of the requests be within every threshold, failing a
    /// `ttft:p50` objective its p50 passed. (A sweep reads the flag as the
    /// share each point must reach, and does not call this.)
    pub fn check_attainment_applies(&self, slo: Option<&Slo>) -> anyhow::Result<()> {
        let (Some(a), Some(slo)) = (self.attainment, slo) else { return Ok(()) };
        // The SLO's own share: the command line's, or the config file's
        // where that SLO is the one in use (the file's had been missed, and
        // its SLO refused for lacking the term it held).
        let own = match &self.slo {
            Some(s) => s.attainment,
            None => self
                .config
                .as_deref()
                .and_then(|p| crate::config::ConfigFile::read(p).ok()?.slo().ok()?)
                .and_then(|s| s.attainment),
        };
        if !slo.limits.is_empty() || !slo.quality_limits.is_empty() || own.is_some() {
            return Ok(());
        }
        let share = share_text(a);
        // The SLO as given: the flag's share is in it already.
        let objectives = Slo { attainment: None, ..slo.clone() }.to_string();
        anyhow::bail!(
            "--attainment {share} is the share of requests that must meet --slo's per-request limits, and the SLO \
             '{objectives}' has objectives alone, each judged by its own percentile or mean (a p95 is 95% of the \
             requests): drop --attainment, write the share as the percentile, or ask for it in the SLO \
             ('{objectives},attainment>={share}': that share of the requests within every threshold)"
        )
    }
}

/// A share as a percentage: 0.8 is `80%`, 0.995 is `99.5%`.
pub fn share_text(x: f64) -> String {
    format!("{}%", (x * 1e6).round() / 1e4)
}

/// The simulated engine: which model on which hardware, and vLLM's limits.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// Model: a catalog name (llama-3.1-8b, llama-3.1-70b, llama-3.1-405b, qwen2.5-7b, qwen2.5-72b, mixtral-8x7b, qwen3-8b, qwen3-14b, qwen3-32b, qwen3-30b-a3b, qwen3-235b-a22b, deepseek-v3 (also deepseek-r1), gpt-oss-20b, gpt-oss-120b, llama-4-scout, llama-4-maverick) or a Hugging Face config.json (or the folder that holds it).
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
    /// GPU: h100-sxm, h100-pcie, h200, a100-80gb, l40s, l4, b200, gb200, b300, gb300, rtx-pro-6000, mi300x, mi325x, mi355x.
    #[arg(long, default_value = "h100-sxm", help_heading = "Simulated engine")]
    pub gpu: String,
    /// Weight precision: bf16, fp8, int8, int4 (weight-only), fp4 (NVFP4 on Blackwell: b200, gb200, b300, gb300, rtx-pro-6000; MXFP4 on mi355x), mxfp4 (GPT-OSS's: MXFP4 experts, the rest 16-bit), or auto: the checkpoint's (a config.json's quantization_config; deepseek-v3's fp8, gpt-oss's mxfp4), else bf16.
    #[arg(long, default_value = "auto", help_heading = "Simulated engine")]
    pub precision: String,
    /// KV-cache dtype: auto (the activation dtype) or fp8.
    #[arg(long, default_value = "auto", help_heading = "Simulated engine")]
    pub kv_cache_dtype: String,
    /// Tensor-parallel degree.
    #[arg(long, default_value_t = 1, help_heading = "Simulated engine")]
    pub tp: u32,
    /// Data-parallel degree: replicas of the engine, each on --tp GPUs, behind a router.
    #[arg(long, default_value_t = 1, help_heading = "Simulated engine")]
    pub dp: u32,
    /// How the router in front of --dp replicas (or, with --pd, of each pool's instances) picks one: least-loaded (fewest requests in flight), round-robin, prefix-aware (vLLM router's and SGLang's cache_aware policy), or power-of-two (their power_of_two: the lighter of two drawn at random).
    #[arg(long, default_value = "least-loaded", help_heading = "Simulated engine")]
    pub router: String,
    /// With --router power-of-two: compare the loads polled this often instead of live counts, as SGLang's router does (its --worker-load-check-interval, 10s by default; a load is the tokens a replica's requests hold in its KV cache plus its waiting prompts, as SGLang's /get_load counts them); between polls every request of a pair goes to the replica that was lighter at the last poll.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, help_heading = "Simulated engine")]
    pub router_poll: Option<std::time::Duration>,
    /// Expert parallelism for a mixture of experts: the GPUs its experts are spread over, whole (vLLM's EP size = --tp × the --dp ranks that share them; --ep 8 --dp 8 is vLLM's --data-parallel-size 8 --enable-expert-parallel). 1: experts split by --tp.
    #[arg(long, default_value_t = 1, help_heading = "Simulated engine")]
    pub ep: u32,
    /// Pipeline parallelism: stages the layers are split over, each on --tp GPUs, with as many micro-batches in flight. GPUs = --tp × --pp × --dp.
    #[arg(long, default_value_t = 1, help_heading = "Simulated engine")]
    pub pp: u32,
    /// Share of GPU memory the engine may use (default: the scheduler's: vLLM's and TensorRT-LLM's 0.9; with --scheduler sglang, SGLang's own --mem-fraction-static, set from the GPU's memory, its chunk, its CUDA graphs and TP; outside it, SGLang's activations).
    #[arg(long, value_parser = number("--gpu-memory-utilization", "a share of GPU memory", "0.9", Units::Share), help_heading = "Simulated engine")]
    pub gpu_memory_utilization: Option<f64>,
    /// Most sequences in one batch (default: vLLM's, 1024 on GPUs of 70 GiB or more but the A100, else 256, never above the step's token budget; with --scheduler trtllm, 2048; with --scheduler sglang, SGLang's: half the KV cache's tokens, at most 2048 to 4096 by the cache over the model's context). Under the vllm scheduler one above --max-num-batched-tokens is refused, as vLLM refuses it.
    #[arg(long, help_heading = "Simulated engine")]
    pub max_num_seqs: Option<u32>,
    /// Token budget of one step [default: vLLM's, 8192 on GPUs of 70 GiB or more but the A100, else 2048; 8192 with --scheduler trtllm; with --scheduler sglang, SGLang's --chunked-prefill-size by GPU memory (2048 below 35 GiB, 4096 below 60, 8192 below 160, else 16384), which holds its prompts only, not its decodes; with --no-chunked-prefill under the vllm or sglang scheduler, the model's context, as vLLM sets it, and a smaller one is refused as vLLM refuses it].
    #[arg(long, help_heading = "Simulated engine")]
    pub max_num_batched_tokens: Option<u32>,
    /// Tokens per KV block.
    #[arg(long, default_value_t = 16, help_heading = "Simulated engine")]
    pub block_size: u32,
    /// Turn chunked prefill off.
    #[arg(long, help_heading = "Simulated engine")]
    pub no_chunked_prefill: bool,
    /// Turn prefix caching off.
    #[arg(long, help_heading = "Simulated engine")]
    pub no_prefix_caching: bool,
    /// Keep prompts and decodes in separate steps: a step that computes any prompt decodes nothing, and the running requests decode when no prompt is waiting. SGLang's default (without --enable-mixed-chunk) and vLLM V0's without chunked prefill; vLLM V1 and TensorRT-LLM mix them (the default).
    #[arg(long, help_heading = "Simulated engine")]
    pub no_mixed_batches: bool,
    /// Schedule a step ahead: step N+1 is chosen while step N runs, so a request that reaches a busy engine joins the step after next (about a step more TTFT under load; none alone). The default, as the servers run by default: vLLM's async scheduling (since 0.14; not with --pp), SGLang's overlap schedule (since 0.4) and TensorRT-LLM's overlap scheduler (its PyTorch backend, since May 2025; not on a --pd prefill instance). Given, it also holds with --pp under vLLM.
    #[arg(long, help_heading = "Simulated engine")]
    pub async_scheduling: bool,
    /// Choose each step after the one before ends: a server started with vLLM's --no-async-scheduling (and vLLM before 0.14), SGLang's --disable-overlap-schedule, TensorRT-LLM's disable_overlap_scheduler (and its TensorRT engines, NIM 1.x's).
    #[arg(long, conflicts_with = "async_scheduling", help_heading = "Simulated engine")]
    pub no_async_scheduling: bool,
    /// Whose batch scheduler to run: vllm (admits by the blocks a step needs, preempts and recomputes when the cache runs out), trtllm (TensorRT-LLM's guaranteed-no-evict: admits a request only when its prompt plus max tokens fit, never preempts; decodes before prompt chunks; 2,048 sequences by default; the KV cache a share of the memory left after the weights) or sglang (SGLang's: admits a request while its prompt and max tokens fit beside an estimated share of the running requests' remaining tokens, a share that learns; retracts the requests with the fewest tokens out when decodes run out of room; decodes not held to the token budget; add --no-mixed-batches for SGLang's default of separate prompt and decode steps).
    #[arg(long, default_value = "vllm", help_heading = "Simulated engine")]
    pub scheduler: String,
    /// SGLang's --schedule-conservativeness, with --scheduler sglang: the share of the running requests' remaining tokens admission keeps free starts at 0.7 times it (and falls to a seventh of that as decodes run). Lower admits more and retracts more.
    #[arg(long, default_value_t = 1.0, value_parser = number("--schedule-conservativeness", "a factor", "1", Units::Plain), help_heading = "Simulated engine")]
    pub schedule_conservativeness: f64,
    /// SGLang's --scheduler-recv-interval, with --scheduler sglang: new requests are taken from the front end only once this many decode steps have run since the last time (a step that computes a prompt counts as all of them; an idle engine takes them at once), as its SchedulerRecvSkipper does; they wait counted as waiting. 1, SGLang's default: every step.
    #[arg(long, default_value_t = 1, value_name = "N", help_heading = "Simulated engine")]
    pub scheduler_recv_interval: u32,
    /// SGLang's --max-prefill-tokens, with --scheduler sglang: the prompt tokens one step takes past its first prompt's (the step's budget, --max-num-batched-tokens, SGLang's --chunked-prefill-size, bounds them too). SGLang's default: 16384.
    #[arg(long, default_value_t = goodput_sim::engine::SGLANG_MAX_PREFILL_TOKENS, value_name = "TOKENS", help_heading = "Simulated engine")]
    pub max_prefill_tokens: u32,
    /// TensorRT-LLM's batch_wait_timeout_iters, with --scheduler trtllm: a step that would run prompts beside decodes holds the prompts back, for up to this many such steps in a row, until the step's tokens (each prompt counted whole) reach --batch-wait-max-tokens-ratio of its budget. 0, TensorRT-LLM's default: never held.
    #[arg(long, default_value_t = 0, value_name = "STEPS", help_heading = "Simulated engine")]
    pub batch_wait_timeout_iters: u32,
    /// TensorRT-LLM's batch_wait_max_tokens_ratio, with --scheduler trtllm: the share (0 to 1) of the step's token budget (--max-num-batched-tokens, its max_num_tokens) that a step's prompts and decodes reach to stop --batch-wait-timeout-iters holding them. 0, its default. (Without the timeout it holds nothing, as in TensorRT-LLM.)
    #[arg(long, default_value_t = 0.0, value_name = "SHARE", help_heading = "Simulated engine")]
    pub batch_wait_max_tokens_ratio: f64,
    /// With --precision mxfp4 and a mixture of experts (GPT-OSS): what its expert products multiply against. fp8: FP8 activations (W4A8, MXFP4 × MXFP8: vLLM's VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8, TensorRT-LLM on Blackwell), at the FP8 rate; needs FP4 tensor cores. bf16: 16-bit activations (W4A16: vLLM's Marlin and Triton kernels, FlashInfer's MXFP4 × BF16, AITER's A16W4 on the MI355X), at a share of the 16-bit rate (eta_w4a16_moe). Default: fp8 on GPUs with FP4 tensor cores, bf16 elsewhere.
    #[arg(long, value_name = "fp8|bf16", help_heading = "Simulated engine")]
    pub mxfp4_activations: Option<String>,
    /// SGLang's --load-balance-method, with --scheduler sglang and DP attention (a mixture of experts with more --ep than --tp: its ranks each schedule their own requests): which rank a request goes to; or, for --dp replicas of a dense model, which replica (SGLang's data-parallel controller, in --router's place). auto (SGLang's default: round-robin, and follow-bootstrap-room on a --pd prefill instance), round-robin (the ranks in turn), follow-bootstrap-room (with --pd: the rank the router's random bootstrap room names), total-requests (the fewest requests, running and waiting) or total-tokens (the fewest tokens held: the running requests' KV and the waiting ones' sequences). The last two read the loads the ranks publish (after a step that prefills, else every 15th step), at most every 20 ms, counting what they sent since. With --pd, P:D gives each pool its own (auto:total-tokens: the prefill instances' ranks by the room, the decode instances' by tokens); one method applies to each pool that has ranks.
    #[arg(long, default_value = "auto", help_heading = "Simulated engine")]
    pub load_balance_method: String,
    /// vLLM's internal load balancing, with --scheduler vllm and --dp replicas of a dense model: the replicas are one `vllm serve --data-parallel-size N`, whose front ends (--api-server-count, one a replica by default) pick the replica in --router's place: the least 4 × waiting + running requests, on the counts its coordinator publishes every 100 ms (each replica sends them after each step), each front end counting the requests it sends since as waiting where they went. Without it, the replicas are separate servers behind --router.
    #[arg(long, help_heading = "Simulated engine")]
    pub internal_lb: bool,
    /// vLLM's --api-server-count, with --internal-lb: its front ends (by default one a replica, as vLLM starts them). Each takes requests in turn, keeps its own counts between the coordinator's publications, counts each request it sends this many times (as if each of the others sent as many), and starts a tie at its own replica; so several send to the replica the last publication showed lightest before any sees the others' sends.
    #[arg(long, value_name = "N", help_heading = "Simulated engine")]
    pub api_server_count: Option<u32>,
    /// A JSON file of step-time constants overriding the GPU family's calibration: constants for every GPU ({"eta_compute": 0.45}), or an object of them per GPU family ({"hopper": {"eta_compute": 0.45}}), as estimate --validate --fit writes from your own measurements.
    #[arg(long, help_heading = "Simulated engine")]
    pub calibration: Option<PathBuf>,
    /// What the served model wraps around a chat's messages, counted in its prompts as a real server counts them: auto (the model's: llama3 for Llama 3, qwen2.5, mistral for Mistral and Mixtral, chatml otherwise), llama3, qwen2.5, chatml, mistral, or none. Raw prompts (completions, llama.cpp, TGI) get the template's BOS.
    #[arg(long, default_value = "auto", help_heading = "Simulated engine")]
    pub chat_template: String,
    /// Speculative decoding: draft tokens each decoding sequence carries a step, verified in the same pass (vLLM's num_speculative_tokens; 0: off).
    #[arg(long, default_value_t = 0, help_heading = "Simulated engine")]
    pub spec_tokens: u32,
    /// With --spec-tokens: the first draft position's acceptance, and the chance each later draft token is accepted when the ones before it were: position i is accepted in acceptance^(i+1) of proposals, so the share of all draft tokens accepted is lower (0.51 at 0.7 with 3 tokens). Take it from a live run's server_signals.window.spec_decode.acceptance_by_position[0] (vLLM's per-position counter over proposals), not its acceptance_rate [default: 0.7].
    #[arg(long, value_parser = number("--spec-acceptance", "an acceptance from 0 to 1", "0.7", Units::Share), help_heading = "Simulated engine")]
    pub spec_acceptance: Option<f64>,
    /// With --spec-tokens: the drafter's time per draft token as a share of the verifying step's (an EAGLE or MTP head: a few percent; n-gram lookup: 0) [default: 0.05].
    #[arg(long, value_parser = number("--spec-draft-cost", "a share of a step's time", "0.05", Units::Share), help_heading = "Simulated engine")]
    pub spec_draft_cost: Option<f64>,
    /// Prefill/decode disaggregation: P prefill and D decode instances (P:D, e.g. 1:1), each on --tp GPUs, the KV cache crossing from one to the other (not with --dp). Either pool may name its own TP or EP: 4xTP1:1xTP4 is four prefill instances of one GPU and one decode instance of four; 1xEP8:1xEP16 gives a mixture of experts' decode instance a wider expert-parallel group.
    #[arg(long, value_name = "P:D", help_heading = "Simulated engine")]
    pub pd: Option<String>,
    /// With --pd: the KV link's bandwidth per GPU, Gb/s (default: the GPU's NVLink when both pools fit in one NVLink domain, 8 GPUs or a GB200 NVL72's 72, else the GPU's NIC: 400 Gb/s, 200 on A100 and PCIe parts).
    #[arg(long, value_parser = number("--kv-link-gbps", "a bandwidth in Gb/s", "400", Units::GbPerSecond), help_heading = "Simulated engine")]
    pub kv_link_gbps: Option<f64>,
    /// With --pd: a KV transfer's fixed cost, µs (default: 10 within an NVLink domain, 50 across nodes).
    #[arg(long, value_parser = number("--kv-link-latency-us", "a time in microseconds", "10", Units::Microseconds), help_heading = "Simulated engine")]
    pub kv_link_latency_us: Option<f64>,
}

impl EngineHwArgs {
    /// Instances the flags run: both pools' with --pd, else --dp's.
    pub fn instances(&self) -> u32 {
        let pd = self.pd.as_deref().and_then(|t| goodput_sim::engine::Disaggregation::parse(t).ok());
        pd.map_or(self.dp, |pd| pd.instances()).max(1)
    }
}

impl Default for EngineHwArgs {
    /// The same defaults as the flags.
    fn default() -> Self {
        EngineHwArgs {
            gpu: "h100-sxm".into(),
            precision: "auto".into(),
            kv_cache_dtype: "auto".into(),
            tp: 1,
            dp: 1,
            router: "least-loaded".into(),
            router_poll: None,
            ep: 1,
            pp: 1,
            gpu_memory_utilization: None,
            max_num_seqs: None,
            max_num_batched_tokens: None,
            block_size: 16,
            no_chunked_prefill: false,
            no_prefix_caching: false,
            no_mixed_batches: false,
            async_scheduling: false,
            no_async_scheduling: false,
            scheduler: "vllm".into(),
            schedule_conservativeness: 1.0,
            scheduler_recv_interval: 1,
            max_prefill_tokens: goodput_sim::engine::SGLANG_MAX_PREFILL_TOKENS,
            batch_wait_timeout_iters: 0,
            batch_wait_max_tokens_ratio: 0.0,
            mxfp4_activations: None,
            load_balance_method: "auto".into(),
            internal_lb: false,
            api_server_count: None,
            calibration: None,
            chat_template: "auto".into(),
            spec_tokens: 0,
            spec_acceptance: None,
            spec_draft_cost: None,
            pd: None,
            kv_link_gbps: None,
            kv_link_latency_us: None,
        }
    }
}

/// The embedded server `bench` starts when there is no --url.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Embedded simulator: engine, the simulated engine (default), set by --sim-model, --sim-gpu, --sim-precision, --sim-tp, --sim-dp, --sim-router, --sim-internal-lb, --sim-api-server-count, --sim-pd and --sim-chat-template, and every other engine flag of `goodput serve --profile engine` (--pp, --ep, --spec-tokens, --max-num-seqs, --scheduler, the other limits) given in one --sim-engine '…'; or fixed, exact timings (--sim-ttft, --sim-itl, --sim-tokens-per-chunk).
    #[arg(
        long,
        value_enum,
        hide_possible_values = true,
        default_value_t = ProfileArg::Engine,
        help_heading = "Embedded simulator (no --url)"
    )]
    pub sim_profile: ProfileArg,
    /// Embedded engine: catalog model or Hugging Face config.json (or its folder).
    #[arg(long, default_value = DEFAULT_ENGINE_MODEL, help_heading = "Embedded simulator (no --url)")]
    pub sim_model: String,
    /// Embedded engine: GPU.
    #[arg(long, default_value = "h100-sxm", help_heading = "Embedded simulator (no --url)")]
    pub sim_gpu: String,
    /// Embedded engine: weight precision (auto: the checkpoint's, else bf16).
    #[arg(long, default_value = "auto", help_heading = "Embedded simulator (no --url)")]
    pub sim_precision: String,
    /// Embedded engine: tensor-parallel degree.
    #[arg(long, default_value_t = 1, help_heading = "Embedded simulator (no --url)")]
    pub sim_tp: u32,
    /// Embedded engine: data-parallel replicas, each on --sim-tp GPUs, behind a router (as --dp of serve).
    #[arg(long, default_value_t = 1, help_heading = "Embedded simulator (no --url)")]
    pub sim_dp: u32,
    /// Embedded engine: how the router in front of --sim-dp replicas picks one: least-loaded, round-robin, prefix-aware or power-of-two.
    #[arg(long, default_value = "least-loaded", help_heading = "Embedded simulator (no --url)")]
    pub sim_router: String,
    /// Embedded engine: vLLM's own balancing of the --sim-dp replicas in --sim-router's place, one `vllm serve --data-parallel-size` (as --internal-lb of serve).
    #[arg(long, help_heading = "Embedded simulator (no --url)")]
    pub sim_internal_lb: bool,
    /// Embedded engine: vLLM's --api-server-count with --sim-internal-lb, its front ends (as --api-server-count of serve).
    #[arg(long, value_name = "N", help_heading = "Embedded simulator (no --url)")]
    pub sim_api_server_count: Option<u32>,
    /// Embedded engine: prefill/decode disaggregation, P prefill and D decode instances each on --sim-tp GPUs, or on a pool's own TP (1xTP1:1xTP2) (as --pd of serve; not with --sim-dp).
    #[arg(long, value_name = "P:D", help_heading = "Embedded simulator (no --url)")]
    pub sim_pd: Option<String>,
    /// Embedded engine: the model's chat template (auto, llama3, qwen2.5, chatml, mistral, none), as --chat-template of serve.
    #[arg(long, default_value = "auto", help_heading = "Embedded simulator (no --url)")]
    pub sim_chat_template: String,
    /// Embedded engine: the rest of `goodput serve --profile engine`'s engine flags, in one quoted string, e.g. --sim-engine '--pp 2 --spec-tokens 3 --spec-acceptance 0.7 --max-num-seqs 64 --scheduler sglang' (those with a --sim-* flag above are given as it).
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true, help_heading = "Embedded simulator (no --url)")]
    pub sim_engine: Option<String>,
    /// The flags typed, set by [`super::parse_from`].
    #[arg(skip)]
    pub given: super::Given,
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

/// The embedded engine: the `--sim-*` flags given, the engine's defaults
/// for the rest.
impl From<&SimArgs> for EngineArgs {
    fn from(sim: &SimArgs) -> EngineArgs {
        sim.engine_over(EngineHwArgs::default())
    }
}

impl SimArgs {
    /// The embedded engine: the `--sim-*` flags over `rest`, which gives
    /// every other engine setting (the defaults, or `--sim-engine`'s).
    pub fn engine_over(&self, rest: EngineHwArgs) -> EngineArgs {
        EngineArgs {
            engine_model: self.sim_model.clone(),
            hw: EngineHwArgs {
                gpu: self.sim_gpu.clone(),
                precision: self.sim_precision.clone(),
                tp: self.sim_tp,
                dp: self.sim_dp,
                router: self.sim_router.clone(),
                chat_template: self.sim_chat_template.clone(),
                pd: self.sim_pd.clone(),
                internal_lb: self.sim_internal_lb,
                api_server_count: self.sim_api_server_count,
                ..rest
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    /// The simulated continuous-batching engine (--model, --gpu, --precision, --tp, engine limits).
    Engine,
    /// Exact timings: --ttft to the first chunk, then a chunk every --itl.
    Fixed,
}
