//! `sweep --serve-cmd`: the servers goodput starts, sweeps and stops, one
//! configuration at a time.

use super::parse::parse_duration;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct ServeGridArgs {
    /// Start the server for each configuration of --serve-grid with this command, sweep it, and stop it: e.g. 'vllm serve MODEL --port {port} --max-num-seqs {max_num_seqs}'. {port} is a free port goodput picks, {NAME} a grid parameter. Split into words as a shell would (quotes, backslashes), but no shell runs it; in a `sh -c` (bash, …) script, a value set among other text reaches the server as its own text, one argument (quoted bare, escaped inside the script's own quotes).
    #[arg(long, conflicts_with_all = ["url", "stages"], requires = "output", help_heading = "Server configurations")]
    pub serve_cmd: Option<String>,
    /// The configurations: 'max_num_seqs=64,128;tp=1,2' (every combination), or a .toml or .json file holding a list of parameter sets or lists to combine. A parameter named gpus sets the configuration's GPU count (else tp × pp × dp where the grid sets any, else --gpus).
    #[arg(long, requires = "serve_cmd", help_heading = "Server configurations")]
    pub serve_grid: Option<String>,
    /// Where each server's output goes, one log per configuration [default: beside -o, in a folder named after it with .logs].
    #[arg(long, requires = "serve_cmd", help_heading = "Server configurations")]
    pub serve_logs: Option<PathBuf>,
    /// The most of a server's output its log keeps, in MiB: the first half as it comes, and at most the last half of the rest, kept on disk as it comes (two files beside the log, joined into it when the server stops); a line in the log says how much was left out between.
    #[arg(long = "serve-log-max", value_name = "MIB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1 << 20), requires = "serve_cmd", help_heading = "Server configurations")]
    pub serve_log_max_mib: u64,
    /// How long a server may take to be ready (/health, else /v1/models, answering 200) before its configuration is recorded as failed.
    #[arg(long, value_parser = parse_duration, default_value = "10m", requires = "serve_cmd", help_heading = "Server configurations")]
    pub serve_ready_timeout: Duration,
    /// After SIGTERM to a server's process group and the other processes of its tree, how long before SIGKILL.
    #[arg(long, value_parser = parse_duration, default_value = "30s", requires = "serve_cmd", help_heading = "Server configurations")]
    pub serve_stop_grace: Duration,
    /// POST to this path of the server before each point, e.g. /reset_prefix_cache (vLLM's; it needs VLLM_SERVER_DEV_MODE=1), so that no point is served from an earlier point's cache. A configuration whose server refuses it fails.
    #[arg(long, requires = "serve_cmd", help_heading = "Server configurations")]
    pub serve_reset: Option<String>,
    /// Start a fresh server for every point (--concurrency or --rate lists, or --trace's speeds, only), so that no point inherits another's caches.
    #[arg(long, requires = "serve_cmd", help_heading = "Server configurations")]
    pub restart_per_point: bool,
    /// Continue a stopped sweep: keep the configurations the -o document holds, and run the rest.
    #[arg(long, requires = "serve_cmd", help_heading = "Server configurations")]
    pub resume: bool,
    /// Print each configuration's command as it would start, and the sweep's longest time, and start nothing: a check of a grid (plan --grid-out's, say) before its hours of servers.
    #[arg(long, requires = "serve_cmd", help_heading = "Server configurations")]
    pub dry_run: bool,
}
