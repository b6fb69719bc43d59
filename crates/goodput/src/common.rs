//! What every command shares: the tool's identity and the time, lists of
//! names, and the result document assembled from records.

use anyhow::{bail, Result};
use goodput_core::{analyze, AnalysisOptions, Compat, RequestRecord, RunConfig, RunResult, Target, Tool, SCHEMA};
use std::time::Duration;

/// The commit this binary was built from (build.rs): a short hash, with
/// `-modified` when the tree differed from it; empty outside a git checkout.
pub const COMMIT: &str = env!("GOODPUT_COMMIT");

pub fn tool() -> Tool {
    Tool {
        name: "goodput".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        commit: Some(COMMIT.to_string()).filter(|c| !c.is_empty()),
    }
}

/// What `--version` prints after the name: `0.1.0 (commit 1a2b3c4d5e6f)`,
/// or the bare version when built outside git.
pub fn version() -> &'static str {
    static V: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    V.get_or_init(|| match COMMIT {
        "" => env!("CARGO_PKG_VERSION").to_string(),
        c => format!("{} (commit {c})", env!("CARGO_PKG_VERSION")),
    })
}

pub fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

pub(crate) fn human(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// A result document from records.
pub struct Assembly<'a> {
    pub kind: &'a str,
    pub run_id: String,
    pub started_unix_s: f64,
    pub interrupted: bool,
    pub config: RunConfig,
    pub target: Target,
    pub include_requests: bool,
}

pub fn assemble(a: Assembly<'_>, records: &[RequestRecord], opts: &AnalysisOptions) -> RunResult {
    let analysis = analyze(records, opts);
    let peak = analysis.summary.in_flight.peak;
    let few = a.config.load.as_ref().and_then(|l| crate::setup::few_requests_warning(l, peak));
    RunResult {
        schema: SCHEMA.into(),
        tool: tool(),
        kind: a.kind.into(),
        run_id: a.run_id,
        started_unix_s: a.started_unix_s,
        interrupted: a.interrupted,
        config: a.config,
        target: a.target,
        window: analysis.window,
        summary: analysis.summary,
        slo: analysis.slo,
        cost: analysis.cost,
        compat: Compat { vllm: analysis.vllm },
        engine: None,
        server_signals: None,
        client: None,
        warnings: analysis.warnings.into_iter().chain(few).collect(),
        diagnosis: Vec::new(),
        requests: a.include_requests.then(|| records.to_vec()),
    }
}

/// The names in a comma-separated list (`--model`, `--served-model-name`),
/// trimmed, empty ones dropped.
pub fn names(list: Option<&str>) -> Vec<String> {
    list.map_or_else(Vec::new, |l| l.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect())
}

/// [`names`] of the list `flag` gave, refusing a given list that names
/// nothing (`' , '`); empty when the flag was not given.
pub fn names_of(flag: &str, list: Option<&str>) -> Result<Vec<String>> {
    let named = names(list);
    match list {
        Some(l) if named.is_empty() => {
            bail!("{flag} '{l}' names no model: give a name, or several separated by commas")
        }
        _ => Ok(named),
    }
}
