//! Each command's arguments, made of the shared groups.

use super::groups::*;
use super::parse::*;
use super::runs_args::RunsArgs;
use super::until::UntilArgs;
use clap::{Args, Parser, Subcommand};
use goodput_load::Api;
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
    // The shape's flags are bench's, but a sweep's points have their own defaults.
    #[command(
        mut_arg("requests", |a| a.help(SWEEP_REQUESTS_HELP)),
        mut_arg("duration", |a| a.help(SWEEP_DURATION_HELP)),
        mut_arg("warmup", |a| a.help(SWEEP_WARMUP_HELP).hide_default_value(true))
    )]
    Sweep(Box<SweepArgs>),
    /// Search deployments with the simulated engine: GPU type and count, the split (data, tensor, expert and pipeline parallel, prefill apart from decode), precision, batch limits; the frontier of output tokens/s per GPU against tokens/s per user, and the most good tokens per dollar within the SLO.
    Plan(Box<super::plan_args::PlanArgs>),
    /// Watch a running server's own metrics live, optionally with probe requests and alerts.
    Monitor(Box<MonitorArgs>),
    /// Set runs side by side; fail on a regression beyond a threshold.
    Compare(Box<CompareArgs>),
    /// Put the shards of one run (bench --shard I/N) back together: their records on one clock, every figure recomputed.
    Merge(Box<MergeArgs>),
    /// Print a shell completion script, e.g. `goodput completions bash > ~/.local/share/bash-completion/completions/goodput`.
    Completions(CompletionsArgs),
    /// Print the man page (roff), e.g. `goodput man | man -l -`; with --dir, write one page per command there.
    Man(ManArgs),
}

impl Command {
    /// The command's `--slo`, where it takes one.
    pub fn slo_mut(&mut self) -> Option<&mut Option<goodput_core::Slo>> {
        match self {
            Command::Bench(a) => Some(&mut a.judge.slo),
            Command::Estimate(a) => Some(&mut a.judge.slo),
            Command::Sweep(a) => Some(&mut a.judge.slo),
            Command::Report(a) => Some(&mut a.judge.slo),
            Command::Merge(a) => Some(&mut a.judge.slo),
            Command::Plan(a) => Some(&mut a.slo),
            Command::Compare(a) => Some(&mut a.slo),
            Command::Serve(_) | Command::Monitor(_) | Command::Completions(_) | Command::Man(_) => None,
        }
    }
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
    /// The server root (its /metrics is scraped, or /prometheus/metrics where only that serves Prometheus text, as TensorRT-LLM's trtllm-serve does) or a metrics URL ending in /metrics (or give it as --url).
    #[arg(required_unless_present = "url_flag", conflicts_with = "url_flag")]
    pub url: Option<String>,
    /// The same as the URL given positionally, as bench and sweep take it.
    #[arg(long = "url", id = "url_flag", value_name = "URL")]
    pub url_flag: Option<String>,
    /// More Prometheus endpoints to read with it (e.g. a DCGM exporter).
    #[arg(long)]
    pub metrics_url: Vec<String>,
    /// Time between scrapes; rates and quantiles are over the last interval.
    #[arg(long, value_parser = parse_scrape_interval, default_value = "2s")]
    pub interval: Duration,
    /// Send small real requests at this rate (requests/s) and show the TTFT and TPOT users see now.
    #[arg(long, value_parser = number("--probe-rate", "requests per second", "1", Units::PerSecond))]
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
    /// Alert thresholds, e.g. 'kv_cache>0.9,waiting>=10,ttft_p99>2s,probe_ttft>1s' (>, >=, <, <=): times take their unit, shares (kv_cache, prefix_hit_rate, gpu_util) a fraction or a percentage from 0 to 1; probe_* alerts need --probe-rate.
    #[arg(long)]
    pub alert: Option<String>,
    /// Watch one interval, print, and exit (4 when an alert fired): for cron and CI.
    #[arg(long)]
    pub once: bool,
    /// Stop after this long (exit 4 when an alert fired in it, as --once).
    #[arg(long, value_parser = parse_positive_duration)]
    pub duration: Option<Duration>,
    /// Write each interval's signals as one JSON line to this file.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// The most one answer may make the client hold: a scrape of a metrics URL, the model list, a probe's response (e.g. 64MiB). Past it the scrape fails, saying so, and memory stays bounded.
    #[arg(long, value_parser = parse_bytes, default_value = "64MiB")]
    pub max_buffer: usize,
    /// Serve the probes' client-side metrics in Prometheus text at this address.
    #[arg(long)]
    pub prometheus_listen: Option<std::net::SocketAddr>,
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
    pub shard: ShardArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub judge: JudgeArgs,
    #[command(flatten)]
    pub sim: SimArgs,
    #[command(flatten)]
    pub runs: RunsArgs,
    #[command(flatten)]
    pub until: UntilArgs,
}

#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// The flags typed, set by [`super::parse_from`].
    #[arg(skip)]
    pub given: super::Given,
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
    /// Once --duration has ended sending, how long requests still in flight may finish (in virtual time) before they are cancelled, as bench's --grace.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub grace: std::time::Duration,
    /// Which route the requests model: a chat route (chat, messages, ollama-chat, ollama-generate) puts the model's chat template around each prompt, as a real server does; the others put its BOS before it. Prompt lengths then exceed --input-tokens as a live bench's do.
    #[arg(long, value_parser = generation_api(), default_value = "chat")]
    pub api: Api,
    /// Instead of one run: simulate each row of a reference CSV (the format of data/validation/public.csv) and print prediction, reference and error; or set a measured run or sweep (bench -o, sweep -o: each point's mean TTFT, mean TPOT and output tokens/s at its load, sent as the run sent it: its requests' own lengths where they varied, its warm-up left out, an open loop's own send times and cap, a replayed trace's times, lengths and prefixes, multi-turn sessions as their conversations grew) against the engine these flags describe; or a measured grid (the frontier of sweep --serve-grid -o, its configurations' sweeps in the logs folder beside it), each configuration on these flags with its parameters on the engine's knobs, every other configuration held out whole where there are three or more.
    #[arg(long)]
    pub validate: Option<PathBuf>,
    /// With --validate: fit step-time constants to the CSV's rows of split calibration (every row where none is marked so), write them to this file (an object per GPU family, what --calibration reads: estimate, sweep --estimate, serve --profile engine, plan), and check them on the rows held out. Each candidate runs the rows' loads through the engine. The power model's shares and idle power (power_compute, power_memory, power_idle) fit on rows of joules per output token alone: a run whose GPUs' energy counters were read (a DCGM exporter's endpoint in --metrics-url); the memory kept from the KV cache (runtime_gib, activation_gib, sglang_preload_gib) on rows of the cache's size alone: a server that gives it in its metrics (vLLM's cache_config_info, SGLang's max_total_num_tokens, TensorRT-LLM's KV blocks). Spread is not fitted.
    #[arg(long, value_name = "FILE", requires = "validate")]
    pub fit: Option<PathBuf>,
    /// With --fit: the constants to fit, a list from eta_compute, eta_weights, eta_kv, eta_link, eta_w4a16_moe, c_layer_us, c_step_us, c_seq_us, allreduce_latency_us, frontend_overhead_ms, frontend_serial_us, frontend_serial_us_per_token, frontend_serial_us_per_output_token, power_compute, power_memory, power_idle, runtime_gib, activation_gib, sglang_preload_gib. Fit no more than the rows can tell apart: each TTFT, ITL or throughput row pins about one.
    #[arg(
        long,
        value_name = "LIST",
        requires = "fit",
        default_value = "eta_compute,eta_weights,c_step_us,frontend_overhead_ms"
    )]
    pub fit_constants: String,
    #[command(flatten)]
    pub runs: RunsArgs,
    #[command(flatten)]
    pub until: UntilArgs,
}

/// `sweep --help`'s -n: a point's length when neither bound is given.
const SWEEP_REQUESTS_HELP: &str = "Measured requests to send per point. With neither -n nor --duration each point runs 60s after a 10s warm-up, and once more for 120s when it is not yet a steady state";
/// `sweep --help`'s --duration.
const SWEEP_DURATION_HELP: &str =
    "Stop sending after this long (e.g. 60s), per point [default with neither -n nor --duration: 60s, extended to 120s when not yet a steady state]";
/// `sweep --help`'s --warmup.
const SWEEP_WARMUP_HELP: &str = "Warm-up excluded from each point's measurement window: a request count (10) or a time (30s); the bounds count after it [default: 10s with neither -n nor --duration, else 0]";

#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// The flags typed, set by [`super::parse_from`].
    #[arg(skip)]
    pub given: super::Given,
    /// Sweep the simulated engine in virtual time instead of a server (--model names a catalog model then). With --serve-cmd: run the grid in virtual time first (each parameter on the simulator's knob of that name: tp, dp, precision, gpu, max_num_seqs, max_num_batched_tokens, or a server's flag for one), and set the predicted frontier beside the measured one.
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
    /// One continuous run in stages, each load held for its time and judged like a point: open-loop rates, RATE/DURATION,… e.g. 10/2m,20/2m,40/2m; or a closed loop's users, c=USERS/DURATION,… e.g. c=8/2m,c=16/2m (users join at once, and leave as their requests end).
    #[arg(long, value_parser = parse_stages, conflicts_with_all = ["concurrency", "rate", "auto"])]
    pub stages: Option<Stages>,
    /// Rates spread between baseline and ceiling with --auto.
    #[arg(long, default_value_t = 6)]
    pub points: u32,
    /// Concurrency of the ceiling point with --auto, and the in-flight cap of open-loop points.
    #[arg(long, default_value_t = 256)]
    pub max_concurrency: u64,
    /// Extra points placed by bisection to find the highest load that meets every SLO objective.
    #[arg(long, default_value_t = 3)]
    pub search_steps: u32,
    /// Replay a trace, a point at each --trace-speed (formats as bench --trace): its requests' lengths (and shared prefixes) are the workload, its send times the load, and a point's load the requests per second it offers at that speed; as plan --trace replays it, so that a trace plan's grid is measured at its points.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["concurrency", "rate", "auto", "stages"])]
    pub trace: Option<PathBuf>,
    /// The --trace file's format; auto tells it from the first line.
    #[arg(long, value_enum, default_value_t = goodput_load::trace::TraceFormat::Auto, requires = "trace")]
    pub trace_format: goodput_load::trace::TraceFormat,
    /// Speeds to replay the --trace at, each a point (2 halves every gap) [default: 1].
    #[arg(long, value_delimiter = ',', requires = "trace", value_parser = number("--trace-speed", "how many times faster to replay", "2", Units::Times))]
    pub trace_speed: Option<Vec<f64>>,
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
    #[command(flatten)]
    pub serve: super::servegrid::ServeGridArgs,
    #[command(flatten)]
    pub runs: RunsArgs,
    #[command(flatten)]
    pub until: UntilArgs,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The flags typed, set by [`super::parse_from`].
    #[arg(skip)]
    pub given: super::Given,
    /// Address to bind (loopback unless you say otherwise).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port (0 picks a free one and prints it).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Timing model.
    #[arg(long, value_enum, default_value_t = ProfileArg::Engine)]
    pub profile: ProfileArg,
    /// The simulated engine's model: a catalog name or a Hugging Face config.json (or the folder that holds it).
    #[arg(long, default_value = DEFAULT_ENGINE_MODEL)]
    pub model: String,
    #[command(flatten)]
    pub hw: EngineHwArgs,
    /// The name the server reports at /v1/models (default: the engine's model name, or goodput-fixed). Several, comma-separated, are served alike (as LoRA adapters beside a base model); any other name is refused with 404, as vLLM refuses it (the fixed profile with no name given answers to any).
    #[arg(long)]
    pub served_model_name: Option<String>,
    /// Time scale of the engine: 2 runs twice as fast as the hardware would. The client and the network are not
    /// sped up: each wall-clock millisecond between an answer and the next request is 2 of the engine's, so a
    /// closed loop's TTFT converted back can come out a step above estimate's (docs/simulator.md).
    #[arg(long, default_value_t = 1.0, value_parser = number("--speed", "a time scale", "2", Units::Times))]
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
    /// Fixed profile: each request's first token waits a further uniform share of this (0 to --ttft-jitter), drawn from --jitter-seed and its arrival number: a noisy server whose spread is known.
    #[arg(long, value_parser = parse_duration, default_value = "0s", help_heading = "Fixed profile")]
    pub ttft_jitter: Duration,
    /// Fixed profile: the seed of --ttft-jitter's draws.
    #[arg(long, default_value_t = 0, help_heading = "Fixed profile")]
    pub jitter_seed: u64,
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
    #[arg(long, default_value_t = 0.0, value_parser = number("--fault-error-rate", "a share of requests", "0.05", Units::Share), help_heading = "Fault injection (seeded)")]
    pub fault_error_rate: f64,
    /// Share of streams that send an error event halfway through.
    #[arg(long, default_value_t = 0.0, value_parser = number("--fault-stream-error-rate", "a share of requests", "0.05", Units::Share), help_heading = "Fault injection (seeded)")]
    pub fault_stream_error_rate: f64,
    /// Share of streams whose connection drops halfway through.
    #[arg(long, default_value_t = 0.0, value_parser = number("--fault-disconnect-rate", "a share of requests", "0.05", Units::Share), help_heading = "Fault injection (seeded)")]
    pub fault_disconnect_rate: f64,
    /// Share of streams that stall once halfway through, for --fault-stall.
    #[arg(long, default_value_t = 0.0, value_parser = number("--fault-stall-rate", "a share of requests", "0.05", Units::Share), help_heading = "Fault injection (seeded)")]
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
    /// Answer every prompt found in this dataset (JSONL with "prompt" or "messages", and "reference" or "answer") with its reference, word by word on the usual schedule; other prompts get the usual synthetic words.
    #[arg(long, help_heading = "Scripted answers")]
    pub answers: Option<std::path::PathBuf>,
    /// With --answers: answer this share of requests (seeded) with another entry's reference.
    #[arg(long, value_parser = parse_share, default_value_t = 0.0, requires = "answers", help_heading = "Scripted answers")]
    pub fault_wrong_rate: f64,
    /// With --answers: each answer, independently with this probability (seeded), leaves its reference at a random word for synthetic words (a nondeterministic server).
    #[arg(long, value_parser = parse_share, default_value_t = 0.0, requires = "answers", help_heading = "Scripted answers")]
    pub fault_diverge_rate: f64,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Result documents: the first is the baseline. Or two frontier documents, one from plan and one from sweep --serve-grid: both frontiers on one chart and the prediction's error at each measured point.
    #[arg(required = true, num_args = 2..)]
    pub runs: Vec<PathBuf>,
    /// Regression rules, e.g. 'ttft_ms.p95>+10%,output_tokens_per_s<-5%' or 'quality.exact<-0.02': exit 1 when a later run breaks one against the first.
    #[arg(long)]
    pub fail_if: Option<String>,
    /// Each run's per-request records (--records), in the runs' order (repeat it), to pair their answers by prompt: the share of identical answers and each score's change with a paired interval. Runs saved with --include-requests need none.
    #[arg(long)]
    pub records: Vec<PathBuf>,
    /// Judge every run again by this one SLO, e.g. 'ttft<=200ms,tpot<=50ms' (given again, its terms join the others') (as report --slo does, from each run's records: --records, RUN.jsonl or RUN.parquet beside RUN.json, or a document saved with --include-requests), so that their goodput, attainment and SLO verdicts compare. Without it each run keeps the SLO it was judged by, and runs judged by different SLOs, or by none, are said to be.
    #[arg(long, value_parser = parse_slo, action = clap::ArgAction::Append)]
    pub slo: Option<goodput_core::Slo>,
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
    /// The run's per-request records (--records), when the document does not hold them (--include-requests) [default, to judge it again: RUN.jsonl or RUN.parquet beside RUN.json, where there is one].
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// Percentiles to report, e.g. 50,90,99.9, sorted ascending and each once (default: the run's own).
    #[arg(long, value_parser = parse_percentiles)]
    pub percentiles: Option<PercentileList>,
    /// Re-analyse only the requests sent in this stretch of the run, e.g. 30s..90s, 1m.. or ..2m (times from the run's start; a session counts by its first turn).
    #[arg(long, value_parser = parse_window)]
    pub window: Option<goodput_core::TimeSlice>,
    #[command(flatten)]
    pub judge: JudgeArgs,
    /// Write the re-analysed document to this JSON file; - for standard output.
    #[arg(long, short = 'o', visible_alias = "json")]
    pub output: Option<PathBuf>,
    /// Print only the summary, no line for each file written: a run's summary, a sweep's analysis, or a frontier's table, best point and why the rest lost (the same with or without -q).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub exports: ExportArgs,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' result documents (bench --shard I/N -o FILE), one for each index; their records files are read from where each shard wrote them, or from beside its result.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// Merge the shards given even when some are missing (the result says which).
    #[arg(long)]
    pub allow_partial: bool,
    /// Write the merged result document (schema goodput/v1) to this JSON file; - for standard output.
    #[arg(long, short = 'o', visible_alias = "json")]
    pub output: Option<PathBuf>,
    /// Write the merged records, on the merged run's clock, to this file (for report --records): JSON Lines, or Parquet when its name ends in .parquet.
    #[arg(long)]
    pub records: Option<PathBuf>,
    /// Percentiles to report, e.g. 50,90,99.9, sorted ascending and each once (default: the shards' own).
    #[arg(long, value_parser = parse_percentiles)]
    pub percentiles: Option<PercentileList>,
    /// Print only the summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub judge: JudgeArgs,
    #[command(flatten)]
    pub exports: ExportArgs,
}

/// `--api` of a command that simulates generation in virtual time
/// (estimate): its help lists the generation APIs only. The pooling ones
/// (embeddings, rerank, tei-rerank) are hidden, not refused here, so that
/// the command's own refusal says where to measure them (goodput bench).
fn generation_api() -> impl clap::builder::TypedValueParser<Value = Api> {
    use clap::builder::TypedValueParser;
    use clap::ValueEnum;
    let values = Api::ALL.iter().filter_map(|a| Some(a.to_possible_value()?.hide(a.pools())));
    clap::builder::PossibleValuesParser::new(values)
        .map(|name: String| Api::from_str(&name, false).expect("a listed API"))
}
