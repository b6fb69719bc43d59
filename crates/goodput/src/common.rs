//! Pieces every command shares: turning argument groups into built objects
//! (load plan, workload, analysis options), assembling the result document,
//! and writing what was asked for.

use crate::cli::{ArrivalArg, ExportArgs, JudgeArgs, LoadArgs, OutputArgs, ShapeArgs, WarmupArg, WorkloadArgs};
use anyhow::{anyhow, bail, Context, Result};
use goodput_core::{analyze, AnalysisOptions, Compat, RequestRecord, RunResult, Target, Tool, SCHEMA};
use goodput_load::client::Cancellation;
use goodput_load::trace::TraceEntry;
use goodput_load::workload::{load_dataset, SharedPrefix};
use goodput_load::{Arrival, LengthDist, LoadPlan, TokenCounter, Workload};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
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

fn human(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// The requests the load gives up on (`--cancel-rate`), picked with the run's seed.
pub fn cancellation(s: &ShapeArgs) -> Option<Cancellation> {
    s.cancel_rate.zip(s.cancel_after).map(|(rate, after)| Cancellation { rate, after, seed: s.seed })
}

/// The arrival process the shape asks for.
pub fn arrival(s: &ShapeArgs) -> Result<Arrival> {
    if s.burstiness.is_some() && s.arrival != ArrivalArg::Gamma {
        bail!("--burstiness shapes gamma arrivals only: add --arrival gamma");
    }
    Ok(match s.arrival {
        ArrivalArg::Poisson => Arrival::Poisson,
        ArrivalArg::Gamma => Arrival::Gamma { burstiness: s.burstiness.unwrap_or(1.0) },
        ArrivalArg::Constant => Arrival::Constant,
    })
}

/// A plan of `concurrency` and/or `rate` (or a `trace`'s send times) in
/// the given shape. When neither a count, a duration nor a trace's end
/// bounds the run, a closed loop sends [`REQUESTS_PER_USER`] requests a user
/// (at least 100), an open loop 100.
pub fn shaped_plan(
    s: &ShapeArgs,
    concurrency: Option<usize>,
    rate: Option<f64>,
    trace: Option<&[TraceEntry]>,
    grace: Duration,
) -> Result<LoadPlan> {
    let arrival = arrival(s)?;
    if let Some(r) = rate {
        if r.is_nan() || r <= 0.0 {
            bail!("--rate must be a positive number of requests per second (or inf: all at once), not {r}");
        }
        if r.is_infinite() && s.requests.is_none() && s.duration.is_some() {
            bail!(
                "--rate inf sends every request at once, so --duration alone does not bound it: give -n N \
                 (-c caps how many are in flight)"
            );
        }
    }
    let plan = LoadPlan {
        requests: match (s.requests, s.duration) {
            // A trace's own end bounds it.
            (None, None) if trace.is_none() => Some(match (concurrency, rate) {
                (Some(c), None) => (REQUESTS_PER_USER * c as u64).max(100),
                _ => 100,
            }),
            (n, _) => n,
        },
        duration: s.duration,
        warmup: match s.warmup {
            WarmupArg::Requests(n) => n,
            WarmupArg::Time(_) => 0,
        },
        // What is due during a ramp-up is warm-up too: the load is not yet the one asked for.
        warmup_time: match s.warmup {
            WarmupArg::Time(d) => d,
            WarmupArg::Requests(_) => std::time::Duration::ZERO,
        }
        .max(s.ramp_up.unwrap_or_default()),
        concurrency,
        rate: rate.map(|r| (r, arrival)),
        trace: trace.map(|t| Arc::new(t.iter().map(|e| e.at).collect())),
        ramp_up: s.ramp_up.unwrap_or_default(),
        sessions: s.turns.clone().map(|turns| goodput_load::Sessions { turns, think: s.think_time }),
        seed: s.seed,
        grace,
    };
    plan.validate().map_err(|e| anyhow!(e))?;
    Ok(plan)
}

/// Requests a user of a closed loop sends by default: enough that the
/// ramp-up at the start and the drain at the end are a small part of the
/// window.
pub const REQUESTS_PER_USER: u64 = 10;

/// Below this many requests a user, a closed loop is warned about: its
/// window is mostly ramp-up and drain, not the load it names.
const FEW_PER_USER: u64 = 3;

/// The warning for a closed loop (the `load` block of a config) given too
/// few requests for its users to reach a steady state; `peak` is the most
/// requests it had in flight.
pub fn few_requests_warning(load: &Value, peak: u64) -> Option<String> {
    let open = ["rate", "trace", "duration", "sessions"].iter().any(|k| !load[k].is_null());
    let (Some(c), Some(n)) = (load["concurrency"].as_u64(), load["requests"].as_u64()) else { return None };
    if open || c < 2 || n >= FEW_PER_USER * c {
        return None;
    }
    let fix =
        format!("give --requests {} or more ({REQUESTS_PER_USER} a user) for its steady state", REQUESTS_PER_USER * c);
    Some(if n < c {
        format!("{n} requests is fewer than the {c} users of --concurrency: the load never had {c} in flight (peak {peak}); {fix}")
    } else {
        format!(
            "{n} requests over {c} users is {:.1} each: the ramp-up and the drain at the end make up much of the \
             window, so its figures are not those of {c} users at work; {fix}",
            n as f64 / c as f64
        )
    })
}

/// The trace `--trace` names, read and placed on the run's clock.
pub fn trace(l: &LoadArgs) -> Result<Option<Arc<Vec<TraceEntry>>>> {
    match &l.trace {
        Some(p) => Ok(Some(Arc::new(goodput_load::trace::load_trace(p, l.trace_speed).map_err(|e| anyhow!(e))?))),
        None => Ok(None),
    }
}

/// The load plan of `l` (with its `trace`, read by [`trace`]), with the
/// defaults a bare command gets.
pub fn plan(l: &LoadArgs, trace: Option<&[TraceEntry]>, grace: Duration) -> Result<LoadPlan> {
    arrival(&l.shape)?;
    if l.rate.is_none() && (l.shape.arrival != ArrivalArg::Poisson || l.shape.burstiness.is_some()) {
        bail!("--arrival and --burstiness shape an open-loop schedule: add --rate R");
    }
    let concurrency = match (l.concurrency, l.rate, trace) {
        (None, None, None) => Some(10),
        (c, _, _) => c,
    };
    shaped_plan(&l.shape, concurrency, l.rate, trace, grace)
}

pub fn load_config(p: &LoadPlan, l: &LoadArgs) -> Value {
    json!({
        "concurrency": p.concurrency,
        // JSON has no infinity: an unbounded rate is written "inf".
        "rate": p.rate.map(|r| if r.0.is_infinite() { json!("inf") } else { json!(r.0) }),
        "arrival": l.rate.map(|_| format!("{:?}", l.shape.arrival).to_lowercase()),
        "burstiness": l.shape.burstiness,
        "trace": l.trace.as_ref().map(|p| p.display().to_string()),
        "trace_speed": l.trace.as_ref().map(|_| l.trace_speed),
        "requests": p.requests,
        "duration": p.duration.map(human),
        "warmup": p.warmup,
        "warmup_time": (!p.warmup_time.is_zero()).then(|| human(p.warmup_time)),
        "ramp_up": (!p.ramp_up.is_zero()).then(|| human(p.ramp_up)),
        "cancel": cancellation(&l.shape).map(|c| json!({"rate": c.rate, "after": human(c.after)})),
        "sessions": p.sessions.as_ref().map(|s| json!({"turns": s.turns.to_string(), "think_time": s.think.to_string()})),
        "grace": human(p.grace),
        "seed": p.seed,
    })
}

/// The workload of `w` (or of a `trace`, which gives every request's
/// lengths) and its config block.
pub fn workload(
    w: &WorkloadArgs,
    seed: u64,
    trace: Option<Arc<Vec<TraceEntry>>>,
) -> Result<(Workload, Option<Arc<TokenCounter>>, Value)> {
    let tokenizer = match &w.tokenizer {
        Some(p) => Some(Arc::new(TokenCounter::from_file(p).map_err(|e| anyhow!(e))?)),
        None => None,
    };
    if let Some(entries) = trace {
        let given = [
            (w.input_tokens.is_some(), "--input-tokens"),
            (w.output_tokens.is_some(), "--output-tokens"),
            (w.preset.is_some(), "--preset"),
            (w.dataset.is_some(), "--dataset"),
            (w.shared_prefix_tokens > 0, "--shared-prefix-tokens"),
        ];
        if let Some((_, flag)) = given.iter().find(|g| g.0) {
            bail!("--trace gives every request's lengths and prefixes: drop {flag}");
        }
        let n = entries.len().max(1) as f64;
        let config = json!({
            "trace": {
                "requests": entries.len(),
                "input_tokens_mean": entries.iter().map(|e| e.lengths.input as f64).sum::<f64>() / n,
                "output_tokens_mean": entries.iter().map(|e| e.lengths.output as f64).sum::<f64>() / n,
                "with_prefix": entries.iter().filter(|e| e.lengths.prefix.is_some()).count(),
            },
            "tokenizer": w.tokenizer.as_ref().map(|p| p.display().to_string()),
            "ignore_eos": w.ignore_eos,
        });
        return Ok((Workload::Trace { entries, seed, tokenizer: tokenizer.clone() }, tokenizer, config));
    }
    let shared_prefix = (w.shared_prefix_tokens > 0).then_some(SharedPrefix {
        tokens: w.shared_prefix_tokens,
        ratio: w.shared_prefix_ratio,
        count: w.shared_prefixes,
    });
    if let Some(p) = &shared_prefix {
        p.validate().map_err(|e| anyhow!(e))?;
        if w.dataset.is_some() {
            bail!("--shared-prefix-tokens shapes synthetic prompts; a --dataset brings its own prompts");
        }
    }
    let preset = w.preset;
    if let (Some(p), Some(_)) = (preset, &w.dataset) {
        bail!("--preset {} shapes synthetic prompts; a --dataset brings its own (drop one of them)", p.name());
    }
    let (preset_input, preset_output) = match preset.map(|p| p.lengths()) {
        Some((i, o)) => (Some(i), Some(o)),
        None => (None, None),
    };
    let input = w.input_tokens.clone().or(preset_input).unwrap_or(LengthDist::Fixed(256));
    let output = match (&w.output_tokens, &w.dataset) {
        (Some(o), _) => Some(o.clone()),
        (None, Some(_)) => None,
        (None, None) => Some(preset_output.unwrap_or(LengthDist::Fixed(128))),
    };
    let wl = match &w.dataset {
        Some(path) => {
            let entries = load_dataset(path, tokenizer.as_deref()).map_err(|e| anyhow!(e))?;
            Workload::dataset(entries, output.clone(), seed)
        }
        None => Workload::Synthetic {
            input: input.clone(),
            output: output.clone().unwrap_or(LengthDist::Fixed(128)),
            seed,
            tokenizer: tokenizer.clone(),
            shared_prefix,
        },
    };
    let config = json!({
        "preset": preset.map(|p| p.name()),
        "input_tokens": w.dataset.is_none().then(|| input.to_string()),
        "output_tokens": output.map(|o| o.to_string()),
        "shared_prefix": shared_prefix.map(|p| json!({"tokens": p.tokens, "ratio": p.ratio, "count": p.count})),
        "dataset": w.dataset.as_ref().map(|p| p.display().to_string()),
        "tokenizer": w.tokenizer.as_ref().map(|p| p.display().to_string()),
        "ignore_eos": w.ignore_eos,
    });
    Ok((wl, tokenizer, config))
}

pub fn analysis_options(percentiles: &[f64], judge: &JudgeArgs) -> Result<AnalysisOptions> {
    analysis_options_for(percentiles, judge, 1)
}

/// [`analysis_options`] where the hardware priced defaults to `default_gpus` GPUs.
pub fn analysis_options_for(percentiles: &[f64], judge: &JudgeArgs, default_gpus: u32) -> Result<AnalysisOptions> {
    let j = crate::config::judging(judge, default_gpus)?;
    Ok(AnalysisOptions { percentiles: percentiles.to_vec(), slo: j.slo, cost: j.cost, ratings: j.ratings })
}

/// The judging settings as they were applied, for the config block.
pub fn judge_config(opts: &AnalysisOptions) -> Value {
    json!({
        "slo": opts.slo.as_ref().map(|s| s.to_string()),
        "cost": opts.cost.map(|c| json!({ "gpu_hour_usd": c.gpu_hour_usd, "gpus": c.gpus })),
        "ratings": opts.ratings,
    })
}

/// A result document from records.
pub struct Assembly<'a> {
    pub kind: &'a str,
    pub run_id: String,
    pub started_unix_s: f64,
    pub interrupted: bool,
    pub config: Value,
    pub target: Target,
    pub include_requests: bool,
}

pub fn assemble(a: Assembly<'_>, records: &[RequestRecord], opts: &AnalysisOptions) -> RunResult {
    let analysis = analyze(records, opts);
    let few = few_requests_warning(&a.config["load"], analysis.summary.in_flight.peak);
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

/// Puts `--label` and `--meta` into a run's or a sweep's config.
pub fn tag(config: &mut Value, out: &OutputArgs) {
    if let Some(l) = &out.label {
        config["label"] = json!(l);
    }
    if !out.meta.is_empty() {
        config["meta"] = Value::Object(out.meta.iter().map(|(k, v)| (k.clone(), json!(v))).collect());
    }
}

/// Checks, before a run spends any time, that every file it is asked to
/// write can be written, so that an hour's run does not end in "cannot
/// write". A missing folder is created (as `--csv` creates its own), and a
/// file is made and removed in each folder, as the writes at the end will.
pub fn check_outputs(out: &OutputArgs) -> Result<()> {
    distinct_outputs(&[
        ("--output", out.output.as_deref()),
        ("--records", out.records.as_deref()),
        ("--html", out.exports.html.as_deref()),
        ("--markdown", out.exports.markdown.as_deref()),
        ("--csv", out.exports.csv.as_deref()),
    ])?;
    if let Some(p) = &out.records {
        check_file(p, "--records")?;
    }
    if let Some(p) = &out.output {
        check_file(p, "--output")?;
    }
    check_exports(&out.exports)
}

/// Files a run holds open beside its connections: its own, the runtime's,
/// the scrapes', the outputs'.
const SPARE_FILES: u64 = 64;

/// That `concurrency` streams have the open files they need (one socket
/// each, two with the embedded server on the other end, and some to spare),
/// refused before the run, saying how many, rather than failing thousands
/// of connects on the client's own limit. The soft limit was already raised
/// to the hard one at start.
pub fn check_open_files(concurrency: usize, embedded: bool) -> Result<()> {
    let Some(limit) = open_file_limit() else { return Ok(()) };
    let need = concurrency as u64 * if embedded { 2 } else { 1 } + SPARE_FILES;
    if need > limit {
        bail!(
            "-c {concurrency} needs about {need} open files ({}one socket a stream and {SPARE_FILES} to spare), \
             and this process may open {limit}: raise the limit (ulimit -n {need}, or the hard limit in \
             /etc/security/limits.conf), or lower -c",
            if embedded { "the embedded server's end too: " } else { "" }
        );
    }
    Ok(())
}

/// Thousands of concurrent streams need as many sockets: lifts the soft
/// open-file limit to the hard one, once at start.
pub fn raise_open_file_limit() {
    #[cfg(unix)]
    if let Some(mut lim) = nofile().filter(|l| l.rlim_cur < l.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: setrlimit only reads the struct we pass.
        let _ = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
    }
}

/// The soft limit on open files, where there is one.
fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    if let Some(lim) = nofile().filter(|l| l.rlim_cur != libc::RLIM_INFINITY) {
        // rlim_t is u64 on Linux, not on every Unix.
        #[allow(clippy::unnecessary_cast)]
        return Some(lim.rlim_cur as u64);
    }
    None
}

/// The process's open-file limits.
#[cfg(unix)]
fn nofile() -> Option<libc::rlimit> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit only writes the struct we pass.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0).then_some(lim)
}

/// Refuses two outputs that name the same file (through a link, `.` or `..`
/// too, and `-` twice): the one written last would leave nothing of the
/// other.
pub fn distinct_outputs(outputs: &[(&str, Option<&Path>)]) -> Result<()> {
    let mut seen: Vec<(&str, std::path::PathBuf)> = Vec::new();
    for &(flag, path) in outputs {
        let Some(path) = path else { continue };
        let key = same_file_key(path);
        if let Some((other, _)) = seen.iter().find(|(_, k)| *k == key) {
            bail!("{other} and {flag} both name {}: give each its own file", path.display());
        }
        seen.push((flag, key));
    }
    Ok(())
}

/// What `path` names, whichever way it is spelled: the canonical path of
/// the file, or of its folder with its name where the file is yet to be
/// made.
fn same_file_key(path: &Path) -> std::path::PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match (std::fs::canonicalize(dir), path.file_name()) {
        (Ok(d), Some(name)) => d.join(name),
        _ => path.to_path_buf(),
    }
}

/// [`check_outputs`] for the renderings alone.
pub fn check_exports(e: &ExportArgs) -> Result<()> {
    if let Some(p) = &e.html {
        check_file(p, "--html")?;
    }
    if let Some(p) = &e.markdown {
        check_file(p, "--markdown")?;
    }
    if let Some(p) = &e.csv {
        if p.exists() && !p.is_dir() {
            bail!("--csv {} is a file: --csv takes a folder to write its CSV files into", p.display());
        }
        check_folder(p, "--csv")?;
    }
    Ok(())
}

/// That `path` can be written as a file by `flag`. Standard output (`-`),
/// a device and a FIFO are written in place, and need no folder.
pub fn check_file(path: &Path, flag: &str) -> Result<()> {
    if path == Path::new("-") || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Ok(());
    }
    if path.is_dir() {
        let example = match flag {
            "--records" | "--record" => "records.jsonl",
            "--html" => "report.html",
            "--markdown" => "summary.md",
            _ => "run.json",
        };
        bail!("{flag} {} is a folder: name a file in it, e.g. {}", path.display(), path.join(example).display());
    }
    check_folder(path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")), flag)
}

/// That `dir` exists, or can be made, and takes a new file.
fn check_folder(dir: &Path, flag: &str) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| {
        format!("cannot create the folder {} for {flag}; pick a folder you can write to", dir.display())
    })?;
    let probe = dir.join(format!(".goodput-probe-{}", std::process::id()));
    std::fs::File::create(&probe)
        .with_context(|| format!("cannot write in {} for {flag}; pick a folder you can write to", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Writes a result document to `path`. When that fails (the disk filled, the
/// folder went away) the document is saved in the temporary folder instead
/// and the error says where, so that a finished run is never lost.
pub fn write_document<T: serde::Serialize>(path: &Path, doc: &T, kind: &str) -> Result<()> {
    let Err(e) = goodput_report::write_json(path, doc) else {
        return Ok(());
    };
    let rescue = std::env::temp_dir().join(format!("goodput-{kind}-{}-{}.json", unix_now() as u64, std::process::id()));
    match goodput_report::write_json(&rescue, doc) {
        Ok(()) => bail!("cannot write {} ({e}); the {kind} was saved to {} instead", path.display(), rescue.display()),
        Err(_) => Err(e).with_context(|| format!("cannot write {}", path.display())),
    }
}

/// Prints the summary, writes `--output`, and picks the exit code: 1 when
/// no request succeeded, 3 when `--fail-on-slo` and an objective failed.
/// A file that could not be written is an error (exit 2) once the rest are
/// written.
pub fn finish(result: &RunResult, out: &OutputArgs, judge: &JudgeArgs, records: &[RequestRecord]) -> Result<ExitCode> {
    let summary = goodput_report::terminal::render(result);
    // With `-o -` standard output carries the document alone.
    if out.output.as_deref() == Some(Path::new("-")) {
        eprint!("{summary}");
    } else {
        say(&summary);
    }
    let mut unwritten = Vec::new();
    if let Some(p) = &out.output {
        match write_document(p, result, "result") {
            Ok(()) if !out.quiet && p != Path::new("-") => eprintln!("result written to {}", p.display()),
            Ok(()) => {}
            Err(e) => unwritten.push(e),
        }
    }
    for (format, dest) in out.exports.targets() {
        match goodput_report::export_run(format, result, &dest) {
            Ok(files) if !out.quiet => {
                for f in files {
                    eprintln!("{} written to {}", format.exporter().name(), f.display());
                }
            }
            Ok(_) => {}
            Err(e) => unwritten.push(anyhow!(e)),
        }
    }
    if let Some((last, rest)) = unwritten.split_last() {
        for e in rest {
            eprintln!("error: {e:#}");
        }
        bail!("{last:#}");
    }
    let q = &result.summary.requests;
    if q.completed == 0 {
        let first = records
            .iter()
            .find_map(|r| match &r.outcome {
                goodput_core::Outcome::Failed { kind, message } => Some(format!("{kind}: {message}")),
                _ => None,
            })
            .unwrap_or_else(|| "no request finished".into());
        eprintln!("error: no request succeeded ({} sent, {} failed); first failure: {first}", q.sent, q.failed);
        return Ok(ExitCode::from(1));
    }
    if judge.fail_on_slo && result.slo.is_none() {
        eprintln!("error: --fail-on-slo needs an SLO: give --slo, or a config with slo = \"...\"");
        return Ok(ExitCode::from(2));
    }
    if judge.fail_on_slo && result.slo.as_ref().is_some_and(|s| !s.pass) {
        eprintln!("error: the run missed its SLO objectives (--fail-on-slo)");
        return Ok(ExitCode::from(3));
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes each record as one JSON line, flushed, the moment it completes.
/// The serialising and writing happen on a thread of their own: at 1,000
/// streams in step, a thousand records of hundreds of chunks each complete
/// together, and writing them on the runtime's thread stalls the streams
/// still reading (the largest ITL error measured fell from 40–50 ms to
/// 27–31 ms with the thread). Dropping the file waits until every record
/// sent is on disk.
pub struct RecordFile {
    run_id: String,
    tx: Option<std::sync::mpsc::Sender<RequestRecord>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl RecordFile {
    /// A records file of run `run_id`, which every record written names.
    pub fn create(path: &Path, run_id: &str) -> Result<Self> {
        let f = std::fs::File::create(path)
            .with_context(|| format!("cannot create the records file {}", path.display()))?;
        let (tx, rx) = std::sync::mpsc::channel::<RequestRecord>();
        let path = path.to_owned();
        let writer = std::thread::Builder::new()
            .name("goodput-records".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::new(f);
                while let Ok(first) = rx.recv() {
                    // Whatever else is waiting goes out with it, then one flush.
                    let res = std::iter::once(first)
                        .chain(rx.try_iter())
                        .try_for_each(|r| {
                            serde_json::to_writer(&mut out, &r)
                                .map_err(std::io::Error::other)
                                .and_then(|_| out.write_all(b"\n"))
                        })
                        .and_then(|_| out.flush());
                    if let Err(e) = res {
                        eprintln!(
                            "warning: writing records to {} failed ({e}); the run goes on without it",
                            path.display()
                        );
                        return;
                    }
                }
            })
            .context("cannot start the records writer thread")?;
        Ok(RecordFile { run_id: run_id.to_owned(), tx: Some(tx), writer: Some(writer) })
    }

    pub fn write(&mut self, r: &RequestRecord) {
        if let Some(tx) = &self.tx {
            // A send fails only when the writer gave up (and said why).
            let _ = tx.send(RequestRecord { run_id: Some(self.run_id.clone()), ..r.clone() });
        }
    }
}

impl Drop for RecordFile {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

/// A new run's name: its start in nanoseconds and the process, in hex.
pub fn new_run_id() -> String {
    let ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{ns:x}-{:x}", std::process::id())
}

/// Reads records written by `RecordFile`.
/// A last line cut short (a full disk, a killed writer leave exactly that)
/// is left out with a warning, and the complete lines are read; a bad line
/// anywhere else is an error.
pub fn read_records(path: &Path) -> Result<Vec<RequestRecord>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let lines: Vec<(usize, &str)> = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).collect();
    let mut out = Vec::with_capacity(lines.len());
    for (k, &(i, l)) in lines.iter().enumerate() {
        match serde_json::from_str(l) {
            Ok(r) => out.push(r),
            // Cut: the last line, with no newline after it.
            Err(e) if k + 1 == lines.len() && !text.ends_with('\n') && e.is_eof() => eprintln!(
                "warning: {} line {} was cut short (the writer stopped mid-line); read the {} complete records \
                 before it",
                path.display(),
                i + 1,
                out.len()
            ),
            Err(e) => {
                return Err(e).with_context(|| format!("{} line {} is not a goodput record", path.display(), i + 1))
            }
        }
    }
    Ok(out)
}

/// Refuses records that another run wrote: those of `path` must name the
/// run `run_id` names (records and results from before run ids are taken
/// as they are).
pub fn check_records_belong(records: &[RequestRecord], run_id: &str, path: &Path) -> Result<()> {
    if run_id.is_empty() {
        return Ok(());
    }
    if let Some(other) = records.iter().filter_map(|r| r.run_id.as_deref()).find(|id| *id != run_id) {
        bail!(
            "{} holds records of run {other}, not of this result's run {run_id}: pass the records file written \
             with this result (--records of the same run)",
            path.display()
        );
    }
    Ok(())
}

/// Writes `text` to standard output. A reader that went away (`| head`) is
/// no reason to stop, let alone panic as `print!` does: whatever goes to
/// files is still written.
pub fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_that_cannot_be_written_is_saved_elsewhere_and_the_error_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("removed").join("run.json");
        let doc = json!({"schema": "goodput/v1", "summary": {"requests": {"completed": 3}}});
        let err = format!("{:#}", write_document(&gone, &doc, "result").unwrap_err());
        assert!(err.starts_with(&format!("cannot write {}", gone.display())), "{err}");
        let saved = err.split("saved to ").nth(1).and_then(|s| s.strip_suffix(" instead")).expect(&err);
        let back: Value = serde_json::from_slice(&std::fs::read(saved).unwrap()).unwrap();
        std::fs::remove_file(saved).unwrap();
        assert_eq!(back, doc);
        // Where the path can be written, it is, and nothing else is.
        let ok = dir.path().join("run.json");
        write_document(&ok, &doc, "result").unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&std::fs::read(&ok).unwrap()).unwrap(), doc);
    }

    #[test]
    fn output_checks_name_the_flag_and_the_fix_and_make_missing_folders() {
        let dir = tempfile::tempdir().unwrap();
        let err = format!("{:#}", check_file(dir.path(), "--html").unwrap_err());
        assert!(err.contains("--html") && err.contains("is a folder") && err.contains("report.html"), "{err}");
        let nested = dir.path().join("a").join("b").join("run.json");
        check_file(&nested, "--output").unwrap();
        assert!(nested.parent().unwrap().is_dir() && !nested.exists());
        assert_eq!(std::fs::read_dir(nested.parent().unwrap()).unwrap().count(), 0, "the probe file is removed");
        let file = dir.path().join("f.csv");
        std::fs::write(&file, "x").unwrap();
        let csv = ExportArgs { csv: Some(file), ..Default::default() };
        assert!(format!("{:#}", check_exports(&csv).unwrap_err()).contains("takes a folder"));
    }

    #[test]
    fn a_closed_loop_of_few_requests_a_user_is_warned_about_and_the_default_gives_ten() {
        let load = |c: u64, n: u64| json!({"concurrency": c, "requests": n, "rate": null, "duration": null});
        let never = few_requests_warning(&load(256, 200), 200).unwrap();
        assert!(never.contains("never had 256 in flight (peak 200)") && never.contains("--requests 2560"), "{never}");
        let few = few_requests_warning(&load(64, 150), 64).unwrap();
        assert!(few.contains("2.3 each") && few.contains("--requests 640"), "{few}");
        assert_eq!(few_requests_warning(&load(64, 192), 64), None, "three a user is enough not to warn");
        assert_eq!(few_requests_warning(&load(1, 1), 1), None, "one user");
        let mut timed = load(64, 10);
        timed["duration"] = json!("60s");
        assert_eq!(few_requests_warning(&timed, 64), None, "a duration bounds it too");
        let mut open = load(64, 10);
        open["rate"] = json!(5.0);
        assert_eq!(few_requests_warning(&open, 64), None, "an open loop's users are not a closed loop's");
        // The default: ten a user, at least 100; 100 for an open loop.
        let shape = || <crate::cli::Cli as clap::Parser>::try_parse_from(["goodput", "bench"]).unwrap();
        let crate::cli::Command::Bench(b) = shape().command else { unreachable!() };
        let requests = |c: Option<usize>, r: Option<f64>| {
            shaped_plan(&b.load.shape, c, r, None, Duration::from_secs(1)).unwrap().requests
        };
        assert_eq!(requests(Some(4), None), Some(100));
        assert_eq!(requests(Some(64), None), Some(640));
        assert_eq!(requests(Some(64), Some(10.0)), Some(100));
    }
}
