//! Reference rows from a measured run or sweep (`estimate --validate
//! run.json`): the engine that `estimate`'s flags describe, set against
//! each point the document measured, in the validator's CSV format, so a
//! user's own measurements can be checked, and fitted (`--fit`), as the
//! public tables are.
//!
//! Each point gives its mean TTFT, mean TPOT and output tokens/s (and its
//! joules per output token where the GPUs' energy counters were read, and
//! the KV cache's size where the server's metrics gave it), at its
//! load (a closed loop of users, started together unless it ramped up; a
//! Poisson rate; or every request at once), its warm-up sent first and
//! left out as the run left it out, and at the mean prompt and answer
//! lengths the server counted, or, where its lengths varied (drawn from
//! distributions, `--preset chat`, `lognormal:256,0.5`; or a dataset's),
//! each of its requests' own, drawn again from its seed (the dataset read
//! again) and moved by what the server counted beside them (a chat
//! template's tokens); a replayed trace at its own times, lengths and
//! prefix blocks, read again where the run read it; multi-turn sessions
//! drawn again turn by turn, each prompt the conversation so far. Points
//! are taken in the order of their loads, the
//! first, third, … for the fit (split `calibration`) and the others held
//! out to check it, where there are three or more.
//!
//! A measured grid (the frontier of `sweep --serve-grid`) gives each
//! configuration's points from the sweep its run wrote beside it, on the
//! engine with the configuration's parameters on its knobs; with three
//! configurations or more, every other one is held out whole.

use crate::cli::EngineArgs;
use anyhow::{bail, Result};
use goodput_core::RunResult;
use goodput_report::read::{read_document, Document};
use goodput_sim::engine::validate::{BlockLists, RequestLengths, SendTimes};
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

/// A measured document's rows, as [`rows_csv`] gives them.
pub struct MeasuredRows {
    /// The validator's CSV.
    pub csv: String,
    /// What the conversion chose that the user should know.
    pub notes: Vec<String>,
    /// What each point sends that CSV columns cannot carry, by the
    /// beginning its rows' ids share (`p2-concurrency-8-`).
    replays: Vec<(String, Replay)>,
}

/// What a point sends that CSV columns cannot carry.
#[derive(Clone, Debug, Default)]
struct Replay {
    /// Its requests' lengths, where they varied.
    lengths: Option<RequestLengths>,
    /// An open loop's send times, drawn again or a trace's.
    arrivals: Option<SendTimes>,
    /// A replayed trace's prefix blocks, beside `lengths`.
    blocks: Option<BlockLists>,
}

impl Replay {
    fn is_empty(&self) -> bool {
        self.lengths.is_none() && self.arrivals.is_none() && self.blocks.is_none()
    }
}

impl MeasuredRows {
    /// Gives each parsed row its point's requests' lengths, where they
    /// varied, its open loop's send times, where they were drawn again or
    /// replayed, and a trace's prefix blocks (CSV columns cannot carry
    /// them).
    pub fn attach_replays(&self, rows: &mut [goodput_sim::engine::validate::ReferenceRow]) {
        for row in rows {
            if let Some((_, r)) = self.replays.iter().find(|(stem, _)| row.id.starts_with(stem.as_str())) {
                row.lengths = r.lengths.clone();
                row.arrivals = r.arrivals.clone();
                row.prefix_blocks = r.blocks.clone();
            }
        }
    }
}

/// The rows of the document at `path` as the validator's CSV, and what the
/// conversion chose that the user should know.
pub fn rows_csv(path: &Path, e: &EngineArgs) -> Result<MeasuredRows> {
    let source = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let source = source.replace(['"', ',', '\n', '\r'], "_");
    let mut notes = Vec::new();
    let mut configs = match read_document(path)? {
        Document::Run(r) => {
            vec![Config { label: None, number: 0, engine: engine_columns(e)?, points: points(&[*r], &mut notes) }]
        }
        Document::Sweep(s) => {
            let runs: Vec<RunResult> = s.points.into_iter().map(|p| p.result).collect();
            vec![Config { label: None, number: 0, engine: engine_columns(e)?, points: points(&runs, &mut notes) }]
        }
        Document::Frontier(f) => grid_configs(path, &f, e, &mut notes)?,
    };
    // Energy counters that covered other GPUs than the configuration's (an
    // exporter of the whole node, idle GPUs included) give no J/token of it.
    for c in &mut configs {
        let mut other = Vec::new();
        for p in &mut c.points {
            if let Some(n) = p.energy_gpus.filter(|&n| n != c.engine.gpus && p.joules_per_output_token.is_some()) {
                p.joules_per_output_token = None;
                other.push((p.index, n));
            }
        }
        if let Some(&(_, n)) = other.first() {
            let which: Vec<String> = other.iter().map(|(i, _)| i.to_string()).collect();
            notes.push(format!(
                "{}point(s) {}: the energy counters covered {n} GPUs where the configuration runs on {}, so their \
                 J/token is left out (scrape only its GPUs' counters: a DCGM exporter of those GPUs alone)",
                c.prefix(),
                which.join(", "),
                c.engine.gpus
            ));
        }
    }
    // Each point's rows, kept where the validator takes them (a closed
    // loop of fewer requests than users, more users than it simulates).
    let mut kept: Vec<(&Config, Vec<(&Point, String)>)> = Vec::new();
    for c in &configs {
        let mut rows = Vec::new();
        for p in &c.points {
            let lines = p.rows(c, &source, "calibration");
            let left_out = |why: &str| format!("{}point {} left out: {why}", c.prefix(), p.index);
            match goodput_sim::engine::validate::parse_csv(&format!("{HEADER}{lines}")) {
                Ok(parsed) if !parsed.is_empty() => rows.push((p, lines)),
                Ok(_) => notes.push(left_out("it measured no TTFT, TPOT or throughput")),
                Err(goodput_sim::engine::Error::Csv { message, .. }) => notes.push(left_out(&message)),
                Err(other) => notes.push(left_out(&other.to_string())),
            }
        }
        if !rows.is_empty() {
            kept.push((c, rows));
        } else if let Some(l) = &c.label {
            notes.push(format!("{l} left out: none of its points can be set against the engine"));
        }
    }
    if kept.is_empty() {
        bail!(
            "--validate {}: no point can be set against the engine ({})",
            path.display(),
            if notes.is_empty() { "the document holds none".to_string() } else { notes.join("; ") }
        );
    }
    // Three configurations or more: every other one held out whole, so the
    // fit is checked on configurations it did not see (what `plan` asks of
    // it). Else every other point of each, where it has three or more.
    let whole = kept.len() >= 3;
    let mut csv = String::from(HEADER);
    let mut fitted_on_all = Vec::new();
    for (k, (c, rows)) in kept.iter().enumerate() {
        let by_point = !whole && rows.len() >= 3;
        for (i, (p, lines)) in rows.iter().enumerate() {
            if (whole && k % 2 == 1) || (by_point && i % 2 == 1) {
                csv.push_str(&p.rows(c, &source, "held-out"));
            } else {
                csv.push_str(lines);
            }
        }
        if !whole && !by_point {
            fitted_on_all.push((c.prefix(), rows.len()));
        }
    }
    // A grid's rows are named by their configuration's number (`c2-p1-…`).
    let legend: Vec<String> =
        kept.iter().filter_map(|(c, _)| c.label.as_ref().map(|l| format!("c{}-… {l}", c.number))).collect();
    if !legend.is_empty() {
        notes.push(format!("the rows of each configuration: {}", legend.join("; ")));
    }
    if whole {
        let held: Vec<&str> = kept.iter().skip(1).step_by(2).filter_map(|(c, _)| c.label.as_deref()).collect();
        notes.push(format!(
            "{} configurations: every other one is held out whole, to check the fit on configurations it did not \
             see ({})",
            kept.len(),
            held.join(", ")
        ));
    }
    for (prefix, n) in fitted_on_all {
        notes.push(format!(
            "{prefix}{n} point(s): all are fitted on, none held out to check (three or more hold every other one out)"
        ));
    }
    let replays = kept
        .iter()
        .flat_map(|(c, rows)| rows.iter().map(move |(p, _)| (p.stem(c), p.replay.clone())))
        .filter(|(_, r)| !r.is_empty())
        .collect();
    Ok(MeasuredRows { csv, notes, replays })
}

/// A configuration's points and the engine they are set against: a run's
/// or a sweep's one (no label), or each of a measured grid's.
struct Config {
    /// `configuration 2 (tp=2)`: where a grid has several.
    label: Option<String>,
    /// Its place in the grid, from 1 (0 where there is no grid).
    number: usize,
    engine: EngineColumns,
    points: Vec<Point>,
}

impl Config {
    /// What a note about it begins with: `configuration 2 (tp=2): ` in a
    /// grid, nothing for a run's or a sweep's one.
    fn prefix(&self) -> String {
        self.label.as_ref().map(|l| format!("{l}: ")).unwrap_or_default()
    }
}

/// The runs' points in the order of their loads; those the rows cannot
/// hold named in `notes`.
fn points(runs: &[RunResult], notes: &mut Vec<String>) -> Vec<Point> {
    let mut out = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        match point(i + 1, run) {
            Ok(p) => {
                if let Some(n) = &p.lengths_note {
                    notes.push(format!("point {}: {n}", i + 1));
                }
                out.push(p)
            }
            Err(why) => notes.push(format!("point {} left out: {why}", i + 1)),
        }
    }
    out.sort_by(|a, b| a.order().total_cmp(&b.order()));
    out
}

/// A measured grid (`sweep --serve-cmd … --serve-grid … -o FRONTIER`): each
/// configuration that ran, on the engine `e` describes with the
/// configuration's parameters on its knobs, and its points read from the
/// sweep document the grid's sweep wrote of it, in the logs folder beside
/// the frontier (`FRONTIER.logs/NN-ID.sweep.json`).
fn grid_configs(
    path: &Path,
    f: &goodput_core::doc::frontier::FrontierResult,
    e: &EngineArgs,
    notes: &mut Vec<String>,
) -> Result<Vec<Config>> {
    use crate::sweep::servers::{estimate::set_knobs, grid::Params};
    use goodput_core::doc::frontier::{ConfigStatus, FrontierSource};
    if f.source == FrontierSource::Predicted {
        bail!(
            "--validate {}: a predicted frontier holds the engine's own figures, nothing measured: give the measured \
             frontier of sweep --serve-grid (its per-configuration sweeps beside it), or a run's or a sweep's \
             document",
            path.display()
        );
    }
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "frontier".into());
    let logs = path.with_file_name(format!("{stem}.logs"));
    let mut configs = Vec::new();
    let mut missing = Vec::new();
    for (i, c) in f.configs.iter().enumerate() {
        let label = format!("configuration {} ({})", i + 1, c.id);
        if c.status != ConfigStatus::Ok {
            notes.push(format!("{label} left out: it did not run ({})", c.error.as_deref().unwrap_or("failed")));
            continue;
        }
        let params = Params(c.params.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
        let base = format!("{:02}-{}", i + 1, params.slug());
        let files = sweep_files(&logs, &base);
        if files.is_empty() {
            missing.push(format!("{base}.sweep.json"));
            continue;
        }
        let mut engine = e.clone();
        if let Some(g) = &c.gpu {
            engine.hw.gpu = g.clone();
        }
        // The memory share, no knob of a grid's prediction (a plan names none),
        // is the engine's flag: what sizes the cache a fit of memory reads.
        let share = params.0.iter().find(|(k, _)| is_memory_share(k));
        if let Some((k, v)) = share {
            match v.trim().parse::<f64>().ok().filter(|s| *s > 0.0 && *s <= 1.0) {
                Some(s) => engine.hw.gpu_memory_utilization = Some(s),
                None => {
                    notes.push(format!(
                        "{label} left out: {k}={v} is not a share of the GPU's memory (above 0, at most 1)"
                    ));
                    continue;
                }
            }
        }
        let unknown: Vec<&str> = params
            .0
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !goodput_core::doc::overlay::is_bookkeeping(k) && !is_memory_share(k))
            .filter(|k| goodput_core::doc::overlay::knob_of(k).is_none())
            .collect();
        if !unknown.is_empty() {
            notes.push(format!(
                "{label}: {} set(s) no knob of the engine, which runs as if it were not given",
                unknown.join(", ")
            ));
        }
        let columns = match set_knobs(&mut engine.hw, &params, "--validate").and_then(|()| engine_columns(&engine)) {
            Ok(columns) => columns,
            Err(why) => {
                notes.push(format!("{label} left out: {why:#}"));
                continue;
            }
        };
        let mut runs = Vec::new();
        for file in &files {
            match read_document(file)? {
                Document::Sweep(s) => runs.extend(s.points.into_iter().map(|p| p.result)),
                Document::Run(r) => runs.push(*r),
                Document::Frontier(_) => {
                    bail!("--validate: {} is a frontier, not a configuration's sweep", file.display())
                }
            }
        }
        let mut said = Vec::new();
        let points = points(&runs, &mut said);
        notes.extend(said.into_iter().map(|n| format!("{label}: {n}")));
        configs.push(Config { label: Some(label), number: i + 1, engine: columns, points });
    }
    if !missing.is_empty() {
        let message = format!(
            "the sweep of each configuration is read from the logs folder beside the frontier ({}), where sweep \
             --serve-grid writes it unless --serve-logs put it elsewhere: {} not there (move the folder beside {} \
             under that name)",
            logs.display(),
            missing.join(", "),
            path.display()
        );
        if configs.is_empty() {
            bail!("--validate {}: {message}", path.display());
        }
        notes.push(message);
    }
    Ok(configs)
}

/// Whether a grid's parameter is the engine's memory share: vLLM's
/// `--gpu-memory-utilization`, SGLang's `--mem-fraction-static`.
fn is_memory_share(param: &str) -> bool {
    matches!(goodput_core::doc::overlay::param_key(param).as_str(), "gpu_memory_utilization" | "mem_fraction_static")
}

/// The sweep documents of the configuration `base` (`01-tp=2`) in `logs`:
/// `base.sweep.json`, or, restarted for each point, `base.point00.sweep.json`
/// and on, in that order.
fn sweep_files(logs: &Path, base: &str) -> Vec<std::path::PathBuf> {
    let whole = logs.join(format!("{base}.sweep.json"));
    if whole.is_file() {
        return vec![whole];
    }
    let prefix = format!("{base}.point");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(logs)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.strip_prefix(&prefix)
                    .and_then(|rest| rest.strip_suffix(".sweep.json"))
                    .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
            })
        })
        .collect();
    files.sort();
    files
}

/// The rows' columns.
const HEADER: &str = "id,model,gpu,gpus,tp,pp,ep,precision,engine,input_tokens,output_tokens,load_kind,load_value,\
                      metric,value,unit,source,split,requests,start,mixed,max_num_seqs,max_num_batched_tokens,\
                      memory_fraction,kv_cache,client,async_scheduling,warmup,max_concurrency\n";

/// The most requests a rate's or a burst's row sends: the validator's
/// bound, past which a longer run says nothing a shorter one does not.
const MOST_REQUESTS: u64 = 100_000;

/// The columns the engine's flags give every row: before the lengths
/// (model to engine), and after the start (the limits).
struct EngineColumns {
    head: String,
    tail: String,
    /// The GPUs the configuration runs on (tp × pp × dp).
    gpus: u32,
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
        "{mixed},{seqs},{mbt},{memory},{kv},http,{ahead}",
        mixed = if hw.no_mixed_batches { "no" } else { "yes" },
        ahead = if cfg.async_scheduling { "yes" } else { "no" },
        seqs = hw.max_num_seqs.map(|v| v.to_string()).unwrap_or_default(),
        mbt = hw.max_num_batched_tokens.map(|v| v.to_string()).unwrap_or_default(),
        memory = hw.gpu_memory_utilization.map(|v| v.to_string()).unwrap_or_default(),
        kv = match cfg.kv_cache_dtype {
            goodput_sim::engine::KvCacheDtype::Auto => "auto",
            _ => "fp8",
        },
    );
    Ok(EngineColumns { head, tail, gpus })
}

/// One measured point.
struct Point {
    /// Its place in the document, from 1.
    index: usize,
    kind: &'static str,
    load: f64,
    requests: u64,
    /// Requests sent before the measured ones and left out of its figures
    /// (a closed loop's or a rate's warm-up; 0 for a burst).
    warmup: u64,
    /// The most requests a rate or a burst had in flight (`-c` beside
    /// `--rate`).
    max_concurrency: Option<u64>,
    start: &'static str,
    input_tokens: u64,
    output_tokens: u64,
    ttft_ms: Option<f64>,
    tpot_ms: Option<f64>,
    output_tokens_per_s: Option<f64>,
    /// The GPUs' energy per output token, where their counters were read
    /// (or the engine's power model gave it, for an estimate's document).
    joules_per_output_token: Option<f64>,
    /// The GPUs those counters covered, where known.
    energy_gpus: Option<u32>,
    /// The KV cache's size in tokens, all engines together, where the
    /// server gave it in its metrics (vLLM's `cache_config_info`, SGLang's
    /// `max_total_num_tokens`).
    kv_cache_tokens: Option<f64>,
    /// Each request's prompt and answer lengths (its warm-up's first), in
    /// the order the run sent them, where they varied; an open loop's send
    /// times, drawn again from its rate, arrival process, ramp-up and seed,
    /// or a trace's; a trace's prefix blocks.
    replay: Replay,
    /// Why a point whose lengths varied is set at their means.
    lengths_note: Option<String>,
}

impl Point {
    /// What its rows' ids begin with: `c2-p3-concurrency-8-`.
    fn stem(&self, config: &Config) -> String {
        // A grid's configurations each number their points apart.
        let prefix = config.label.as_ref().map(|_| format!("c{}-", config.number)).unwrap_or_default();
        format!("{prefix}p{}-{}-{}-", self.index, self.kind, self.load)
    }

    /// Its rows of the validator's CSV, each line ended: one a figure it
    /// measured.
    fn rows(&self, config: &Config, source: &str, split: &str) -> String {
        let engine = &config.engine;
        let stem = self.stem(config);
        let mut out = String::new();
        for (metric, value, unit) in [
            ("ttft_ms_mean", self.ttft_ms, "ms"),
            ("tpot_ms_mean", self.tpot_ms, "ms"),
            ("output_tokens_per_s", self.output_tokens_per_s, "tok/s"),
            ("joules_per_output_token", self.joules_per_output_token, "J"),
            ("kv_cache_tokens", self.kv_cache_tokens, "tokens"),
        ] {
            let Some(value) = value.filter(|v| v.is_finite() && *v > 0.0) else { continue };
            let _ = writeln!(
                out,
                "{stem}{metric},{head},{input},{output},{kind},{load},{metric},{value:.digits$},{unit},\
                 {source},{split},{requests},{start},{tail},{warmup},{cap}",
                // A fraction of a joule keeps its figures.
                digits = if unit == "J" { 6 } else { 3 },
                kind = self.kind,
                load = self.load,
                head = engine.head,
                input = self.input_tokens,
                output = self.output_tokens,
                requests = self.requests,
                start = self.start,
                tail = engine.tail,
                warmup = self.warmup,
                cap = self.max_concurrency.map(|c| c.to_string()).unwrap_or_default(),
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
    let (kind, value, start) = match (load.concurrency, load.rate) {
        // A trace's send times are its load (its -c a cap): its rate is set
        // when it is read again.
        _ if load.trace.is_some() => ("rate", 0.0, ""),
        (_, Some(r)) if r.is_unbounded() => ("max_throughput", 0.0, ""),
        (_, Some(r)) => ("rate", r.0, ""),
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
    // A closed loop's or a rate's warm-up is simulated as it was sent, and
    // left out as it was (a burst's rows have none).
    let warmup = if kind == "max_throughput" { 0 } else { s.requests.warmup.min(MOST_REQUESTS) };
    let (value, replay, lengths_note) = if let Some(sessions) = &load.sessions {
        let rate = load.rate.filter(|_| kind == "rate").map(|r| r.0);
        let replay = session_replay(
            sessions,
            run.config.workload.as_ref(),
            load,
            rate,
            warmup,
            requests,
            input_tokens,
            output_tokens,
        )
        .map_err(|why| format!("its multi-turn sessions cannot be sent again as they were sent: {why}"))?;
        (value, replay, None)
    } else if let Some(trace) = &load.trace {
        let (rate, replay) =
            trace_replay(trace, load, run.config.workload.as_ref(), warmup, requests, input_tokens, output_tokens)?;
        (rate, replay, None)
    } else {
        let drawn = drawn_lengths(run.config.workload.as_ref(), load, warmup, requests, input_tokens, output_tokens);
        let arrivals = match (kind, load.rate) {
            ("rate", Some(rate)) => send_times(load, rate.0, warmup.saturating_add(requests))?,
            _ => None,
        };
        let (lengths, lengths_note) = match drawn {
            Ok(l) => (l, None),
            Err(why) => (None, Some(why)),
        };
        (value, Replay { lengths, arrivals, blocks: None }, lengths_note)
    };
    Ok(Point {
        index,
        kind,
        load: value,
        requests,
        warmup,
        max_concurrency: load.concurrency.filter(|_| kind != "concurrency"),
        start,
        input_tokens,
        output_tokens,
        ttft_ms: s.ttft_ms.mean,
        tpot_ms: s.tpot_ms.mean,
        output_tokens_per_s: Some(s.throughput.output_tokens_per_s),
        joules_per_output_token: run.energy.as_ref().and_then(|e| e.joules_per_output_token),
        energy_gpus: run.energy.as_ref().and_then(|e| e.gpus),
        kv_cache_tokens: run
            .server_signals
            .as_ref()
            .and_then(|s| s.window.gauges.get(&goodput_core::prometheus::scrape::GaugeSignal::KvCacheTokens))
            .and_then(|d| d.mean),
        replay,
        lengths_note,
    })
}

/// A replayed trace's point, read again where the run read it, at its
/// speed and in its format: the requests per second it offered, and the
/// `warmup` and `sent` requests it sent first (its send times, lengths
/// and prefix blocks), each prompt moved by the tokens the server counted
/// beside the trace's and each answer scaled to the server's mean (as
/// [`drawn_lengths`] moves them). An error where it cannot be read again
/// as it was: a trace's times are the load, and no mean stands in for
/// them.
fn trace_replay(
    path: &str,
    load: &goodput_core::doc::config::LoadConfig,
    workload: Option<&goodput_core::doc::config::WorkloadConfig>,
    warmup: u64,
    sent: u64,
    input_mean: u64,
    output_mean: u64,
) -> Result<(f64, Replay), String> {
    use goodput_load::trace::TraceFormat;
    let recorded = workload.and_then(|w| w.trace.as_ref());
    let format = match recorded.and_then(|t| t.format.as_deref()) {
        None => TraceFormat::Auto,
        Some(name) => <TraceFormat as clap::ValueEnum>::from_str(name, false)
            .map_err(|_| format!("its trace's format ({name}) is not one goodput reads"))?,
    };
    let speed = load.trace_speed.unwrap_or(1.0);
    let file = Path::new(path);
    if file.exists() && !file.is_file() {
        return Err(format!("its trace {path} is not a regular file (a trace is read again from a file)"));
    }
    if !file.is_file() {
        return Err(format!(
            "its trace is not at {path}: run from where the run was (a trace's send times are its load, and no \
             mean stands in for them)"
        ));
    }
    let trace = goodput_load::trace::read_trace(file, speed, format)
        .map_err(|e| format!("its trace does not read again ({e})"))?;
    if let Some(n) = recorded.map(|t| t.requests).filter(|&n| n != trace.entries.len() as u64) {
        return Err(format!("{path} holds {} requests where the run read {n}: it changed since", trace.entries.len()));
    }
    let end = (warmup.saturating_add(sent.min(MOST_REQUESTS)) as usize).min(trace.entries.len());
    let entries = &trace.entries[..end];
    if entries.len() <= warmup as usize {
        return Err("its trace holds no request past its warm-up".into());
    }
    // Requests per second over the span they were sent in, to four
    // figures (the row's name and load; its times are the trace's).
    let four_figures = |r: f64| {
        let scale = 10f64.powi(3 - r.log10().floor() as i32);
        (r * scale).round() / scale
    };
    let Some(rate) = crate::setup::trace_rate(entries, None, 0).map(four_figures) else {
        return Err("its trace sends every request at once: no rate to set it at".into());
    };
    let drawn = entries.iter().map(|e| crate::virtual_point::virtual_request(&e.lengths)).collect();
    let blocks = entries.iter().any(|e| e.blocks.is_some()).then(|| {
        let sized = |e: &goodput_load::trace::TraceEntry| {
            e.blocks.as_ref().map(|b| goodput_load::trace::sized_blocks(b, e.lengths.input).collect())
        };
        entries.iter().map(sized).collect()
    });
    Ok((
        rate,
        Replay {
            lengths: Some(moved(drawn, warmup, input_mean, output_mean)),
            arrivals: Some(entries.iter().map(|e| e.at).collect()),
            blocks,
        },
    ))
}

/// The first `n` send times of an open loop at `rate` a second, drawn
/// again as the run drew them: its arrival process from its seed, through
/// its ramp-up. `None` for Poisson arrivals whose seed is not recorded
/// (the validator draws its own); an error for other arrivals without one,
/// which no row can hold.
fn send_times(load: &goodput_core::doc::config::LoadConfig, rate: f64, n: u64) -> Result<Option<SendTimes>, String> {
    use goodput_load::Arrival;
    // Gamma arrivals of burstiness 1 are Poisson's.
    let arrival = match (load.arrival.as_deref(), load.burstiness.filter(|&b| b != 1.0)) {
        (Some("constant"), _) => Arrival::Constant,
        (None | Some("poisson") | Some("gamma"), None) => Arrival::Poisson,
        (None | Some("gamma"), Some(burstiness)) => Arrival::Gamma { burstiness },
        (Some(other), _) => return Err(format!("its arrivals ({other}) are not a process a row can hold")),
    };
    let Some(seed) = load.seed.or((arrival == Arrival::Constant).then_some(0)) else {
        return match arrival {
            Arrival::Poisson => Ok(None),
            _ => Err(format!("its {} arrivals' seed is not recorded, so they cannot be drawn again", arrival.name())),
        };
    };
    let ramp = match load.ramp_up.as_deref().map(humantime::parse_duration) {
        Some(Ok(d)) => d,
        Some(Err(e)) => return Err(format!("its ramp-up does not parse ({e})")),
        None => std::time::Duration::ZERO,
    };
    let schedule = goodput_load::ArrivalSchedule::new(rate, arrival, seed).map_err(|e| e.to_string())?;
    let times: Vec<std::time::Duration> =
        schedule.take(n.min(MOST_REQUESTS * 2) as usize).map(|at| goodput_load::schedule::ramped(at, ramp)).collect();
    Ok((!times.is_empty()).then(|| times.into()))
}

/// The lengths of the `warmup` requests a run sent first (a count's, a
/// timed warm-up's or a ramp-up's) and the `sent` ones it measured, drawn
/// again as it drew them (its workload's distributions, from its seed),
/// each prompt moved by the tokens the server counted
/// beside the drawn ones (a chat template's), each answer scaled to the
/// mean the server counted (answers that ended early): `None` where every
/// request had the same lengths, so the means are exact; an error, said as
/// a note, where they varied and cannot be drawn again.
fn drawn_lengths(
    workload: Option<&goodput_core::doc::config::WorkloadConfig>,
    load: &goodput_core::doc::config::LoadConfig,
    warmup: u64,
    sent: u64,
    input_mean: u64,
    output_mean: u64,
) -> Result<Option<RequestLengths>, String> {
    use goodput_load::workload::{LengthDist, Workload};
    use goodput_sim::engine::VirtualRequest;
    let Some(w) = workload else { return Ok(None) };
    let at_means = |why: &str| Err(format!("its requests are set at their mean lengths: {why}"));
    let dist = |text: Option<&str>| text.map(|t| t.parse::<LengthDist>().map_err(|e| e.to_string())).transpose();
    let (input, output) = match (dist(w.input_tokens.as_deref()), dist(w.output_tokens.as_deref())) {
        (Err(e), _) | (_, Err(e)) => return at_means(&format!("its recorded lengths do not parse ({e})")),
        (Ok(i), Ok(o)) => (i, o),
    };
    let seed = load.seed;
    let copies = w.repeat.filter(|&c| c > 1);
    let workload = match (&w.dataset, input, output) {
        // A dataset's prompts, read again where the run read them, in the
        // order its seed shuffled them.
        (Some(path), _, output) => match dataset_again(w, path, output, seed) {
            Ok(workload) => workload,
            Err(why) => return at_means(&why),
        },
        (None, Some(input), Some(output)) => {
            if matches!((&input, &output), (LengthDist::Fixed(_), LengthDist::Fixed(_)))
                && w.shared_prefix.is_none()
                && copies.is_none()
            {
                return Ok(None);
            }
            match synthetic(w, input, output, seed) {
                Ok(workload) => workload,
                Err(why) => return at_means(&why),
            }
        }
        _ => return Ok(None),
    };
    // --repeat's copies of each prompt, as the run spread them: a pass of
    // its requests apart where their count was known ahead, else twice
    // the users (at least 64).
    let workload = match copies {
        Some(copies) => {
            let counted = load.requests.filter(|_| load.warmup_time.is_none()).map(|n| n + load.warmup.unwrap_or(0));
            let spread = match counted {
                Some(n) => n.div_ceil(u64::from(copies)).max(1),
                None => (2 * load.concurrency.unwrap_or(32)).max(64),
            };
            Workload::Repeated { inner: Box::new(workload), copies, spread }
        }
        None => workload,
    };
    let end = warmup.saturating_add(sent.min(MOST_REQUESTS));
    if end == warmup {
        return Ok(None);
    }
    let drawn: Option<Vec<VirtualRequest>> = (0..end)
        .map(|i| {
            workload.lengths(i).map(|l| VirtualRequest {
                // A dataset's entry sent again, --repeat's copy: the
                // prefix cache serves it as the server's did.
                prompt: workload.prompt_id(i),
                ..crate::virtual_point::virtual_request(&l)
            })
        })
        .collect();
    let Some(drawn) = drawn.filter(|d| !d.is_empty()) else {
        return at_means("some of its dataset's entries give no answer length (no max_tokens, no answer turn)");
    };
    Ok(Some(moved(drawn, warmup, input_mean, output_mean)))
}

/// The run's dataset, read again at `path` where the run read it (with its
/// tokenizer and column), in the order its `seed` shuffled it, answers of
/// `output` where it drew them; why not where it cannot be read as it was.
fn dataset_again(
    w: &goodput_core::doc::config::WorkloadConfig,
    path: &str,
    output: Option<goodput_load::LengthDist>,
    seed: Option<u64>,
) -> Result<goodput_load::Workload, String> {
    let seed = seed.ok_or("its seed is not recorded")?;
    let path = Path::new(path);
    if !path.is_file() {
        return Err(format!(
            "its dataset is not at {} (run from where the run was, or give the measurements as a CSV)",
            path.display()
        ));
    }
    let tokenizer = match &w.tokenizer {
        Some(t) => Some(
            goodput_load::TokenCounter::from_file(Path::new(t))
                .map_err(|e| format!("its tokenizer {t} does not load ({e})"))?,
        ),
        None => None,
    };
    let read = goodput_load::workload::read_dataset(path, tokenizer.as_ref(), w.dataset_column.as_deref())
        .map_err(|e| format!("its dataset does not read again ({e})"))?;
    if let Some(n) = w.dataset_entries.filter(|&n| n != read.entries.len() as u64) {
        return Err(format!(
            "{} holds {} entries where the run read {n}: it changed since",
            path.display(),
            read.entries.len()
        ));
    }
    Ok(goodput_load::Workload::dataset(read.entries, output, seed))
}

/// The run's synthetic workload: its lengths' distributions `input` and
/// `output`, its shared prefix, its seed; why not where it cannot be drawn
/// again.
fn synthetic(
    w: &goodput_core::doc::config::WorkloadConfig,
    input: goodput_load::LengthDist,
    output: goodput_load::LengthDist,
    seed: Option<u64>,
) -> Result<goodput_load::Workload, String> {
    let shared_prefix = w.shared_prefix.as_ref().map(|p| goodput_load::workload::SharedPrefix {
        tokens: p.tokens,
        ratio: p.ratio,
        count: p.count,
    });
    // What the flags refuse, a document may still say.
    if shared_prefix.is_some_and(|p| {
        p.count == 0 || !(0.0..=1.0).contains(&p.ratio) || p.tokens > goodput_load::workload::MAX_TOKENS
    }) {
        return Err("its recorded shared prefix is not one a run draws (no prefixes, or a share past 0..1)".into());
    }
    let seed = seed.ok_or("its seed is not recorded")?;
    Ok(goodput_load::Workload::Synthetic { input, output, seed, tokenizer: None, shared_prefix })
}

/// A run of multi-turn sessions (`--turns`), drawn again as it drew them
/// (`estimate`'s sessions, from its seed): each session's turns, one after
/// another, each prompt the conversation so far, each later turn after its
/// think time, until the `warmup` requests (whole sessions, the first) and
/// the `sent` ones are drawn; moved to what the server counted (as
/// [`drawn_lengths`] moves them). With `rate`, each session's send time
/// (its turns take it), drawn again as [`send_times`] draws them. An error
/// where they cannot be drawn again: at their means, a session's turns
/// would not grow, and its point is left out.
#[allow(clippy::too_many_arguments)]
fn session_replay(
    sessions: &goodput_core::doc::config::SessionsConfig,
    workload: Option<&goodput_core::doc::config::WorkloadConfig>,
    load: &goodput_core::doc::config::LoadConfig,
    rate: Option<f64>,
    warmup: u64,
    sent: u64,
    input_mean: u64,
    output_mean: u64,
) -> Result<Replay, String> {
    use goodput_load::{LengthDist, Sessions, ThinkTime, Turns};
    let shape = Sessions {
        turns: sessions.turns.parse::<Turns>().map_err(|e| format!("its recorded turns do not parse ({e})"))?,
        think: sessions.think_time.parse::<ThinkTime>().map_err(|e| format!("its think time does not parse ({e})"))?,
    };
    let w = workload.ok_or("its workload is not recorded")?;
    let dist = |text: Option<&str>, what: &str| {
        text.ok_or_else(|| format!("its {what} lengths are not recorded"))?
            .parse::<LengthDist>()
            .map_err(|e| format!("its recorded lengths do not parse ({e})"))
    };
    let seed = load.seed;
    let drawn_from = match &w.dataset {
        // A dataset's conversations, read again: each turn's question as
        // counted and the answer it got (or --output-tokens').
        Some(path) => {
            let output = w.output_tokens.as_deref().map(|_| dist(w.output_tokens.as_deref(), "answer")).transpose()?;
            dataset_again(w, path, output, seed)?
        }
        None => {
            let (input, output) =
                (dist(w.input_tokens.as_deref(), "prompt")?, dist(w.output_tokens.as_deref(), "answer")?);
            synthetic(w, input, output, seed)?
        }
    };
    let seed = seed.unwrap_or_default();
    let end = warmup.saturating_add(sent.min(MOST_REQUESTS));
    let (mut drawn, mut session_of) = (Vec::new(), Vec::new());
    let mut s = 0u64;
    while (drawn.len() as u64) < end {
        let turns =
            crate::virtual_point::session_requests(&shape, seed, s, &drawn_from).map_err(|e| e.to_string())?.ok_or(
                "a turn's lengths are not known (a dataset's question whose answer the file lacks, and no \
                 --output-tokens; or an entry of chat messages)",
            )?;
        session_of.extend(std::iter::repeat_n(s as usize, turns.len()));
        drawn.extend(turns);
        s += 1;
    }
    // A run cut short (its --duration) sent the first turns of its last
    // sessions.
    drawn.truncate(end as usize);
    session_of.truncate(end as usize);
    let arrivals = match rate {
        Some(rate) => {
            let times = send_times(load, rate, s)?.ok_or(
                "its Poisson arrivals' seed is not recorded, so its sessions' send times cannot be drawn again",
            )?;
            // (As many times as sessions: both within the bound on requests.)
            let last = times.last().copied().unwrap_or_default();
            Some(session_of.iter().map(|&k| times.get(k).copied().unwrap_or(last)).collect())
        }
        None => None,
    };
    Ok(Replay { lengths: Some(moved(drawn, warmup, input_mean, output_mean)), arrivals, blocks: None })
}

/// `drawn` (the `warmup` requests first), each prompt moved by the tokens
/// the server counted beside the drawn ones (`input_mean` over the
/// measured requests: a chat template's), each answer scaled to the mean
/// it counted (answers that ended early).
fn moved(
    drawn: Vec<goodput_sim::engine::VirtualRequest>,
    warmup: u64,
    input_mean: u64,
    output_mean: u64,
) -> RequestLengths {
    use goodput_sim::engine::VirtualRequest;
    let measured = &drawn[(warmup as usize).min(drawn.len())..];
    let mean = |f: fn(&VirtualRequest) -> u32| {
        measured.iter().map(|r| f64::from(f(r))).sum::<f64>() / measured.len().max(1) as f64
    };
    let shift = input_mean as f64 - mean(|r| r.input_tokens);
    let scale = Some(output_mean as f64 / mean(|r| r.output_tokens)).filter(|s| s.is_finite()).unwrap_or(1.0);
    drawn
        .iter()
        .map(|r| VirtualRequest {
            input_tokens: (f64::from(r.input_tokens) + shift).round().max(1.0) as u32,
            output_tokens: (f64::from(r.output_tokens) * scale).round().max(1.0) as u32,
            ..*r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configuration's sweep, or its points' under `--restart-per-point`
    /// in their order, and no other configuration's whose name begins alike.
    #[test]
    fn a_configuration_s_sweeps_are_found_by_its_name() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["01-tp=1.point01.sweep.json", "01-tp=1.point00.sweep.json", "01-tp=10.sweep.json", "01-tp=1.log"] {
            std::fs::write(dir.path().join(name), "{}").unwrap();
        }
        let names = |base: &str| -> Vec<String> {
            sweep_files(dir.path(), base)
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names("01-tp=1"), ["01-tp=1.point00.sweep.json", "01-tp=1.point01.sweep.json"]);
        assert_eq!(names("01-tp=10"), ["01-tp=10.sweep.json"]);
        assert!(names("02-tp=2").is_empty());
        assert!(is_memory_share("gpu-memory-utilization") && is_memory_share("--mem-fraction-static"));
        assert!(!is_memory_share("max_num_seqs"));
    }

    /// Lengths drawn from distributions are drawn again, moved to the
    /// means the server counted; fixed ones need nothing; a dataset's, or
    /// a run without its seed, are set at their means, with a note.
    #[test]
    fn a_run_s_drawn_lengths_are_drawn_again_and_moved_to_what_the_server_counted() {
        use goodput_core::doc::config::{LoadConfig, SharedPrefixConfig, WorkloadConfig};
        use goodput_sim::engine::VirtualRequest;
        let w = |input: &str, output: &str| WorkloadConfig {
            input_tokens: Some(input.into()),
            output_tokens: Some(output.into()),
            ..WorkloadConfig::default()
        };
        let load = LoadConfig { seed: Some(7), ..LoadConfig::default() };
        let chat = w("lognormal:256,0.5", "lognormal:512,0.5");
        let drawn = drawn_lengths(Some(&chat), &load, 3, 400, 290, 500).unwrap().unwrap();
        // The 3 warm-up requests' first, then the 400 measured, whose means
        // are the server's.
        assert_eq!(drawn.len(), 403);
        let mean = |f: fn(&VirtualRequest) -> u32| drawn[3..].iter().map(|r| f64::from(f(r))).sum::<f64>() / 400.0;
        assert!((mean(|r| r.input_tokens) - 290.0).abs() < 1.0 && (mean(|r| r.output_tokens) - 500.0).abs() < 1.0);
        // They vary, as the run's did, and are the run's own: the same again.
        assert!(drawn.iter().any(|r| r.input_tokens < 200) && drawn.iter().any(|r| r.input_tokens > 400));
        assert_eq!(drawn_lengths(Some(&chat), &load, 3, 400, 290, 500).unwrap().unwrap(), drawn);
        assert_eq!(drawn_lengths(Some(&w("256", "128")), &load, 3, 400, 290, 128).unwrap(), None);
        // A shared prefix is carried, for the engine's prefix cache.
        let prefixed = WorkloadConfig {
            shared_prefix: Some(SharedPrefixConfig { tokens: 1000, ratio: 1.0, count: 2 }),
            ..w("256", "128")
        };
        let drawn = drawn_lengths(Some(&prefixed), &load, 0, 10, 1290, 128).unwrap().unwrap();
        assert!(drawn.iter().all(|r| r.shared_prefix.is_some_and(|p| p.len == 1000) && r.input_tokens == 1290));
        let dataset = WorkloadConfig { dataset: Some("no/such/prompts.jsonl".into()), ..chat.clone() };
        let note = drawn_lengths(Some(&dataset), &load, 3, 400, 290, 500).unwrap_err();
        assert!(note.contains("mean lengths") && note.contains("not at no/such/prompts.jsonl"), "{note}");
        let seedless = LoadConfig { seed: None, ..load.clone() };
        assert!(drawn_lengths(Some(&chat), &seedless, 3, 400, 290, 500).unwrap_err().contains("seed"));
        // A document the flags would not have written: no panic, a note.
        let none =
            WorkloadConfig { shared_prefix: Some(SharedPrefixConfig { tokens: 10, ratio: 1.0, count: 0 }), ..chat };
        assert!(drawn_lengths(Some(&none), &load, 3, 10, 290, 500).unwrap_err().contains("shared prefix"));
        assert_eq!(drawn_lengths(Some(&w("lognormal:256,0.5", "64")), &load, u64::MAX, 10, 256, 64).unwrap(), None);
    }

    /// A run of sessions is drawn again turn by turn: each later turn's
    /// prompt the conversation so far; a dataset's conversations are read
    /// again, and where the file is not there the point says so.
    #[test]
    fn a_run_s_sessions_are_drawn_again_turn_by_turn() {
        use goodput_core::doc::config::{LoadConfig, SessionsConfig, WorkloadConfig};
        let w = WorkloadConfig {
            input_tokens: Some("lognormal:200,0.3".into()),
            output_tokens: Some("100".into()),
            ..WorkloadConfig::default()
        };
        let load = LoadConfig { seed: Some(3), ..LoadConfig::default() };
        let sessions = SessionsConfig { turns: "3".into(), think_time: "1s".into() };
        let r = session_replay(&sessions, Some(&w), &load, None, 3, 9, 500, 100).unwrap();
        let lengths = r.lengths.unwrap();
        assert_eq!(lengths.len(), 12);
        for (i, req) in lengths.iter().enumerate() {
            let t = req.turn.unwrap();
            assert_eq!((t.session, t.turn, t.turns), (i as u64 / 3, i as u32 % 3 + 1, 3));
            if t.turn > 1 {
                // The conversation so far: the turn before's prompt and answer, and more.
                let before = lengths[i - 1];
                assert!(req.input_tokens > before.input_tokens + before.output_tokens, "{req:?} after {before:?}");
                assert_eq!(t.think, std::time::Duration::from_secs(1));
            }
        }
        let dataset = WorkloadConfig { dataset: Some("no/such/chats.json".into()), ..w };
        let why = session_replay(&sessions, Some(&dataset), &load, None, 0, 9, 500, 100).unwrap_err();
        assert!(why.contains("its dataset is not at no/such/chats.json"), "{why}");
    }

    /// An open loop's send times are drawn again from its rate, process,
    /// ramp-up and seed; Poisson without a seed is left to the validator,
    /// another process without one cannot be drawn.
    #[test]
    fn an_open_loop_s_send_times_are_drawn_again_as_the_run_drew_them() {
        use goodput_core::doc::config::LoadConfig;
        let gamma = LoadConfig {
            arrival: Some("gamma".into()),
            burstiness: Some(0.3),
            seed: Some(11),
            ramp_up: Some("2s".into()),
            ..LoadConfig::default()
        };
        let times = send_times(&gamma, 20.0, 50).unwrap().unwrap();
        let again = goodput_load::ArrivalSchedule::new(20.0, goodput_load::Arrival::Gamma { burstiness: 0.3 }, 11)
            .unwrap()
            .take(50)
            .map(|at| goodput_load::schedule::ramped(at, std::time::Duration::from_secs(2)));
        assert!(times.len() == 50 && times.iter().copied().eq(again));
        assert_eq!(send_times(&LoadConfig::default(), 20.0, 50).unwrap(), None);
        let seedless = LoadConfig { seed: None, ..gamma.clone() };
        assert!(send_times(&seedless, 20.0, 50).unwrap_err().contains("gamma arrivals' seed is not recorded"));
        let bad = LoadConfig { ramp_up: Some("soon".into()), ..gamma };
        assert!(send_times(&bad, 20.0, 50).unwrap_err().contains("ramp-up does not parse"));
    }
}
