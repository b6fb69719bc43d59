//! `--runs N` and `--same-seed`: the whole measurement repeated (`bench`,
//! `estimate`; each point of a `sweep`), each run kept and each headline
//! figure's spread given.

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct RunsArgs {
    /// Repeat the whole measurement N times (sweep: each point, at the length its first run settled on), each with the next seed, keep each run's headline figures, and give each figure's run-to-run spread: mean, standard deviation, range and a Student-t interval of the mean at --confidence. The document's top level (a sweep point's result) is the first run (docs/metrics.md, "Spread across runs").
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000), help_heading = "Repeated runs")]
    pub runs: u32,
    /// With --runs: give every run the same seed (the same prompts and arrival times), so that the spread is the server's and the client's alone. Against a server with a prefix cache, leave it out: a later run's prompts are then served from the cache an earlier run filled (faster TTFT, which the spread would show as run-to-run noise; the repeats block and the warnings say so), and bench has no cache reset between runs.
    #[arg(long, requires = "runs", help_heading = "Repeated runs")]
    pub same_seed: bool,
}
