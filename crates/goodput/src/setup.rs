//! Argument groups turned into built objects: the load plan, the workload
//! and its tokenizer, the analysis options, and their config blocks.

use crate::cli::{ArrivalArg, JudgeArgs, LoadArgs, OutputArgs, ShapeArgs, WarmupArg, WorkloadArgs};
use anyhow::{bail, Result};
use goodput_core::analysis::energy::EnergySource;
use goodput_core::doc::config::{JudgeConfig, SharedPrefixConfig, TraceWorkload, WorkloadConfig};
use goodput_core::AnalysisOptions;
use goodput_load::client::Cancellation;
use goodput_load::trace::TraceEntry;
use goodput_load::workload::{read_dataset, SharedPrefix};
use goodput_load::{Arrival, LengthDist, LoadPlan, TokenCounter, Workload};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The requests the load gives up on (`--cancel-rate`), picked with the run's seed.
pub fn cancellation(s: &ShapeArgs) -> Option<Cancellation> {
    s.cancel_rate.zip(s.cancel_after).map(|(rate, after)| Cancellation { rate, after, seed: s.seed.value })
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

/// The requests `--warmup N` leaves out of the measurement (0 for a
/// warm-up by time).
pub fn warmup_requests(s: &ShapeArgs) -> u64 {
    match s.warmup {
        WarmupArg::Requests(n) => n,
        WarmupArg::Time(_) => 0,
    }
}

/// A plan of `concurrency` and/or `rate` (or a `trace`'s send times) in
/// the given shape. When neither a count, a duration nor a trace's end
/// bounds the run, a closed loop sends [`goodput_core::analysis::assemble::REQUESTS_PER_USER`] requests a user
/// (at least 100), an open loop 100.
pub fn shaped_plan(
    s: &ShapeArgs,
    concurrency: Option<usize>,
    rate: Option<f64>,
    trace: Option<&[TraceEntry]>,
    grace: Duration,
) -> Result<LoadPlan> {
    let arrival = arrival(s)?;
    if let (Some(t), WarmupArg::Requests(w)) = (trace, s.warmup) {
        // A trace's requests are its lines: -n and --duration only cut it short.
        if w >= t.len() as u64 {
            bail!(
                "--warmup {w} takes all {} requests of the trace, leaving none to measure: give a --warmup below {} \
                 (or --warmup 0), or a longer trace",
                t.len(),
                t.len()
            );
        }
    }
    if let Some(r) = rate {
        if r.is_nan() || r <= 0.0 {
            bail!("--rate must be a positive number of requests per second (or inf: all at once), not {r}");
        }
        if r < goodput_load::schedule::min_rate() {
            bail!(goodput_load::error::ScheduleError::RateTooLow(r));
        }
        // A count at a rate that takes longer than any run: its sends would
        // stop at the horizon, short of the count.
        let units = s.requests.map(|n| n.saturating_add(if let WarmupArg::Requests(w) = s.warmup { w } else { 0 }));
        if let Some(n) = units.filter(|_| s.duration.is_none() && r.is_finite() && trace.is_none()) {
            let span = n as f64 / r + s.ramp_up.unwrap_or_default().as_secs_f64() / 2.0;
            if span > goodput_core::HORIZON.as_secs_f64() {
                bail!(
                    "{n} requests at --rate {} take about {:.0} years to send, and a run lasts at most 100 years: \
                     give a higher --rate or fewer -n",
                    goodput_load::schedule::shown(r),
                    span / (365.0 * 24.0 * 3600.0)
                );
            }
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
                (Some(c), None) => (goodput_core::analysis::assemble::REQUESTS_PER_USER * c as u64).max(100),
                _ => 100,
            }),
            // More than the trace holds: it ends first, and the run says
            // so (it had recorded and shown the -n asked, 20 for 8 sent).
            (Some(n), _) if trace.is_some_and(|t| n.saturating_add(warmup_requests(s)) > t.len() as u64) => {
                let t = trace.map_or(0, |t| t.len() as u64);
                let left = t.saturating_sub(warmup_requests(s));
                goodput_core::tell!("{}", trace_cut_note(n, t, warmup_requests(s)));
                Some(left)
            }
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
        trace_source: None,
        ramp_up: s.ramp_up.unwrap_or_default(),
        sessions: sessions(s),
        seed: s.seed.value,
        grace,
        shard: None,
        user_steps: Vec::new(),
        cancel: cancellation(s),
    };
    plan.validate()?;
    Ok(plan)
}

/// `--turns` and `--think-time`'s sessions, where given.
pub fn sessions(s: &crate::cli::ShapeArgs) -> Option<goodput_load::Sessions> {
    s.turns.clone().map(|turns| goodput_load::Sessions { turns, think: s.think_time })
}

/// `--turns` and `--think-time` as a document keeps them, where given.
pub fn sessions_config(s: &crate::cli::ShapeArgs) -> Option<goodput_core::doc::config::SessionsConfig> {
    sessions(s).as_ref().map(goodput_load::Sessions::config)
}

/// A wait before a send longer than this is said before the run starts
/// (`--rate 1e-6`, `--ramp-up 1000h`): a run that waits days in silence
/// looks hung.
pub const LONG_WAIT: Duration = Duration::from_secs(3600);

/// A wait in words, to the second: `11 days 13 h 46 min 40 s`.
pub fn human_wait(d: Duration) -> String {
    goodput_core::util::duration_text(Duration::from_secs(d.as_secs()))
}

/// What a run will wait for longer than [`LONG_WAIT`] before its first or
/// second request, in words, if anything: an open loop's first two send
/// times (a trace's, or the rate's ramped schedule), a closed loop's second
/// user joining over its ramp-up.
pub fn long_wait(plan: &LoadPlan) -> Option<String> {
    let long = |d: Duration| d > LONG_WAIT;
    if let Ok(Some(mut times)) = plan.send_times() {
        let first = times.next()?;
        if long(first) {
            return Some(format!("the first request is due {} after the start", human_wait(first)));
        }
        let more = plan.total_requests().is_none_or(|n| n > 1);
        let second = times.next().filter(|_| more)?;
        let end = plan.sending_time();
        let gap = second.saturating_sub(first);
        if long(gap) && end.is_none_or(|e| second < e) {
            let why = match plan.rate {
                Some((r, _)) if 1.0 / r > LONG_WAIT.as_secs_f64() => format!(
                    "--rate {} sends one every {} on average",
                    goodput_load::schedule::shown(r),
                    human_wait(Duration::from_secs_f64(1.0 / r))
                ),
                Some(_) => "the rate climbs from 0 over the --ramp-up".into(),
                None => "the trace's timestamps say so".into(),
            };
            return Some(format!(
                "the next request after the first is due {} later ({why}); the run waits meanwhile (Ctrl-C stops it)",
                human_wait(gap)
            ));
        }
        return None;
    }
    let users = u32::try_from(plan.concurrency?).unwrap_or(u32::MAX);
    let join = plan.ramp_up / users.max(1);
    (users > 1 && long(join)).then(|| {
        format!(
            "users join one every {} over the --ramp-up; the run waits meanwhile (Ctrl-C stops it)",
            human_wait(join)
        )
    })
}

/// The note of a `--requests n` beyond what a trace of `total` requests
/// holds after a `warmup` of requests: the count it replays is the one
/// after the warm-up (it had named the total as the count "after its
/// warm-up": "more than the trace's 20 request(s) after its warm-up: the
/// run replays the trace's 15").
fn trace_cut_note(n: u64, total: u64, warmup: u64) -> String {
    let left = total.saturating_sub(warmup);
    if warmup > 0 {
        format!(
            "note: --requests {n} asks more than the trace's {left} request(s) after its warm-up of {warmup} ({total} \
             in all): the run replays those {left}, and records --requests {left}"
        )
    } else {
        format!(
            "note: --requests {n} asks more than the trace's {total} request(s): the run replays the trace's \
             {total}, and records --requests {total}"
        )
    }
}

/// The warning of the rows a trace read left out (BurstGPT's failures, rows
/// of 0 response tokens), or `None` when none was: a dataset's skips are
/// told, and these had been only in the result's
/// `config.workload.trace.skipped`.
fn trace_skipped_note(path: &Path, kept: usize, skipped: u64) -> Option<String> {
    (skipped > 0).then(|| {
        format!(
            "warning: trace {} holds {} rows, {skipped} skipped: BurstGPT's failed requests (0 Response tokens), \
             which got no answer to replay; the run replays the other {kept}",
            path.display(),
            kept as u64 + skipped
        )
    })
}

/// The gap between requests above which a trace's timestamps in seconds
/// look like milliseconds: a minute, at its median (a production trace's
/// requests come seconds apart or less; milliseconds read as seconds put
/// a 150 ms gap at 150 s).
const MEDIAN_GAP_LIKE_MS: f64 = 60.0;

/// A warning when a trace whose format takes seconds has a median gap of
/// over [`MEDIAN_GAP_LIKE_MS`] between its requests on the run's clock (at
/// its --trace-speed, which may already undo the units): its timestamps
/// look like milliseconds, and the replay would take 1000 times as long as
/// meant, with no word.
fn trace_units_warning(
    path: &Path,
    entries: &[TraceEntry],
    speed: f64,
    format: goodput_load::trace::TraceFormat,
) -> Option<String> {
    // Mooncake's are milliseconds, and read as such.
    if format == goodput_load::trace::TraceFormat::Mooncake || entries.len() < 3 {
        return None;
    }
    let mut gaps: Vec<f64> = entries.windows(2).map(|w| (w[1].at - w[0].at).as_secs_f64()).collect();
    gaps.sort_by(f64::total_cmp);
    let median = gaps[gaps.len() / 2];
    let span = entries.last()?.at.as_secs_f64();
    (median > MEDIAN_GAP_LIKE_MS).then(|| {
        format!(
            "warning: trace {} has a median gap of {median:.0} s between its {} requests, and its replay takes {} \
             ({span:.0} s at this --trace-speed): its timestamps look like milliseconds, where the {} format takes \
             seconds; divide them by 1000, or replay it with --trace-speed {} (1000 times faster)",
            path.display(),
            entries.len(),
            goodput_core::util::duration_text(Duration::from_secs(span as u64)),
            format.name(),
            goodput_load::schedule::shown(speed * 1000.0)
        )
    })
}

/// The requests per second `entries` offer at speed 1: those a run replays
/// (with `requests`, the trace's first `requests` after `warmup`: the whole
/// trace's rate had labelled a prefix that came at another pace) over the
/// span they are sent in; the whole trace's over its span where the first
/// come at once; `None` where every request comes at once.
pub fn trace_rate(entries: &[TraceEntry], requests: Option<u64>, warmup: u64) -> Option<f64> {
    let last = entries.iter().map(|e| e.at).max()?;
    let replayed = trace_replayed(entries.len(), requests, warmup);
    let prefix = entries[replayed - 1].at;
    match (prefix.is_zero(), last.is_zero()) {
        (false, _) => Some(replayed as f64 / prefix.as_secs_f64()),
        (true, false) => Some(entries.len() as f64 / last.as_secs_f64()),
        (true, true) => None,
    }
}

/// The requests a replay of a trace of `len` sends, its warm-up's
/// included: `requests` after `warmup` where given (at least one), else
/// every one.
pub fn trace_replayed(len: usize, requests: Option<u64>, warmup: u64) -> usize {
    requests.map_or(len, |n| usize::try_from(n.saturating_add(warmup)).unwrap_or(usize::MAX).clamp(1, len))
}

/// A trace read for a run: its requests, and what the result's config
/// says of it.
#[derive(Debug, Clone)]
pub struct LoadedTrace {
    pub entries: Arc<Vec<TraceEntry>>,
    pub format: goodput_load::trace::TraceFormat,
    pub skipped: u64,
    pub reused_prefix_tokens: u64,
    /// What reading it left out ([`trace_skipped_note`]), and what its
    /// times look like ([`trace_units_warning`]), in words: the run tells
    /// them with its other warnings.
    pub notes: Vec<String>,
}

impl std::ops::Deref for LoadedTrace {
    type Target = Vec<TraceEntry>;

    fn deref(&self) -> &Vec<TraceEntry> {
        &self.entries
    }
}

/// The trace `--trace` names, in `--trace-format` (or the one its first
/// line shows), read and placed on the run's clock.
pub fn trace(l: &LoadArgs) -> Result<Option<LoadedTrace>> {
    let Some(p) = &l.trace else { return Ok(None) };
    read_trace(p, l.trace_speed, l.trace_format).map(Some)
}

/// The trace at `path`, read and placed on the run's clock at `speed`.
pub fn read_trace(path: &Path, speed: f64, format: goodput_load::trace::TraceFormat) -> Result<LoadedTrace> {
    let t = goodput_load::trace::read_trace(path, speed, format)?;
    let reused_prefix_tokens = t.reused_prefix_tokens();
    let notes = trace_skipped_note(path, t.entries.len(), t.skipped)
        .into_iter()
        .chain(trace_units_warning(path, &t.entries, speed, t.format))
        .collect();
    Ok(LoadedTrace { entries: Arc::new(t.entries), format: t.format, skipped: t.skipped, reused_prefix_tokens, notes })
}

/// The load plan of `l` (with its `trace`, read by [`trace`]), with the
/// defaults a bare command gets.
pub fn plan(l: &LoadArgs, trace: Option<&[TraceEntry]>, grace: Duration) -> Result<LoadPlan> {
    arrival(&l.shape)?;
    if l.rate.is_none() && (l.shape.arrival != ArrivalArg::Poisson || l.shape.burstiness.is_some()) {
        if l.trace.is_some() {
            // --rate is refused with --trace: its send times are the trace's.
            bail!(
                "--arrival and --burstiness shape a schedule of their own, and --trace replays the trace's send \
                 times: drop --arrival and --burstiness (--trace-speed scales the trace's gaps)"
            );
        }
        bail!("--arrival and --burstiness shape an open-loop schedule: add --rate R");
    }
    let concurrency = match (l.concurrency, l.rate, trace) {
        (None, None, None) => Some(10),
        (c, _, _) => c,
    };
    let mut plan = shaped_plan(&l.shape, concurrency, l.rate, trace, grace)?;
    plan.trace_source = l
        .trace
        .as_ref()
        .map(|p| goodput_load::runner::TraceSource { file: p.display().to_string(), speed: l.trace_speed });
    Ok(plan)
}

/// The workload of `w` (or of a `trace`, which gives every request's
/// lengths) and its config block.
/// A synthetic prompt's length: `--input-tokens`, the preset's, or 256.
pub fn synthetic_input(w: &WorkloadArgs) -> LengthDist {
    w.input_tokens.clone().or(w.preset.map(|p| p.lengths().0)).unwrap_or(LengthDist::Fixed(256))
}

pub fn workload(
    w: &WorkloadArgs,
    seed: u64,
    trace: Option<LoadedTrace>,
) -> Result<(Workload, Option<Arc<TokenCounter>>, WorkloadConfig)> {
    let (workload, tokenizer, config, warnings) = workload_warned(w, seed, trace)?;
    for m in warnings {
        goodput_core::tell!("{m}");
    }
    Ok((workload, tokenizer, config))
}

/// A workload, its tokenizer, its config block and the warnings reading it
/// gave.
pub type Warned = (Workload, Option<Arc<TokenCounter>>, WorkloadConfig, Vec<String>);

/// [`workload`], with the warnings reading it gave (a dataset's skipped or
/// mended entries), told by none: a run puts them in its result.
pub fn workload_warned(w: &WorkloadArgs, seed: u64, trace: Option<LoadedTrace>) -> Result<Warned> {
    let mut warnings = Vec::new();
    let tokenizer = match &w.tokenizer {
        Some(p) => Some(Arc::new(TokenCounter::from_file(p)?)),
        None => None,
    };
    if let Some(trace) = trace {
        let entries = trace.entries.clone();
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
        let config = WorkloadConfig {
            trace: Some(TraceWorkload {
                requests: entries.len() as u64,
                input_tokens_mean: entries.iter().map(|e| e.lengths.input as f64).sum::<f64>() / n,
                output_tokens_mean: entries.iter().map(|e| e.lengths.output as f64).sum::<f64>() / n,
                with_prefix: entries.iter().filter(|e| e.lengths.prefix.is_some() || e.blocks.is_some()).count() as u64,
                format: Some(trace.format.name().into()),
                skipped: (trace.skipped > 0).then_some(trace.skipped),
                reused_prefix_tokens: Some(trace.reused_prefix_tokens),
            }),
            tokenizer: w.tokenizer.as_ref().map(|p| p.display().to_string()),
            ignore_eos: w.ignore_eos,
            ..Default::default()
        };
        warnings.extend(trace.notes);
        return Ok((Workload::Trace { entries, seed, tokenizer: tokenizer.clone() }, tokenizer, config, warnings));
    }
    let shared_prefix = (w.shared_prefix_tokens > 0).then_some(SharedPrefix {
        tokens: w.shared_prefix_tokens,
        ratio: w.shared_prefix_ratio,
        count: w.shared_prefixes,
    });
    if let Some(p) = &shared_prefix {
        p.validate()?;
        if w.dataset.is_some() {
            bail!("--shared-prefix-tokens shapes synthetic prompts; a --dataset brings its own prompts");
        }
    }
    let preset = w.preset;
    if let (Some(p), Some(_)) = (preset, &w.dataset) {
        bail!("--preset {} shapes synthetic prompts; a --dataset brings its own (drop one of them)", p.name());
    }
    // A dataset's prompts are its own; --output-tokens still caps answers.
    if w.input_tokens.is_some() && w.dataset.is_some() {
        bail!(
            "--input-tokens shapes synthetic prompts, and a --dataset brings its own (their lengths are the \
             dataset's): drop --input-tokens"
        );
    }
    let preset_output = preset.map(|p| p.lengths().1);
    let input = synthetic_input(w);
    let output = match (&w.output_tokens, &w.dataset) {
        (Some(o), _) => Some(o.clone()),
        (None, Some(_)) => None,
        (None, None) => Some(preset_output.unwrap_or(LengthDist::Fixed(128))),
    };
    if w.score.is_some() && w.dataset.is_none() {
        bail!("--score scores answers against a dataset's references: give --dataset FILE.jsonl whose lines carry \"reference\" (or \"answer\")");
    }
    let mut dataset_skipped = None;
    let wl = match &w.dataset {
        Some(path) => {
            let read = read_dataset(path, tokenizer.as_deref(), w.dataset_column.as_deref())?;
            warnings.extend(read.warnings(path));
            dataset_skipped = Some(read.skipped_count()).filter(|&n| n > 0);
            let entries = read.entries;
            // An answer forced to its length needs one: an entry without
            // max_tokens or an answer had been sent with neither, unforced.
            let no_length = entries.iter().filter(|e| e.max_tokens.is_none()).count();
            if w.ignore_eos && output.is_none() && no_length > 0 {
                bail!(
                    "--ignore-eos forces each answer to its output length, and {no_length} of the {} entries of {} give \
                     none (no \"max_tokens\", no answer turn): add --output-tokens N (or a distribution such as \
                     uniform:64..512) to give every request one, or drop --ignore-eos",
                    entries.len(),
                    path.display()
                );
            }
            if w.score.is_some() && entries.iter().all(|e| e.reference.is_empty()) {
                bail!(
                    "--score: no entry of {} carries a \"reference\" (or \"answer\") to score against; add them, or drop --score",
                    path.display()
                );
            }
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
    let config = WorkloadConfig {
        preset: preset.map(|p| p.name().to_string()),
        input_tokens: w.dataset.is_none().then(|| input.to_string()),
        output_tokens: output.map(|o| o.to_string()),
        shared_prefix: shared_prefix.map(|p| SharedPrefixConfig { tokens: p.tokens, ratio: p.ratio, count: p.count }),
        dataset: w.dataset.as_ref().map(|p| p.display().to_string()),
        dataset_column: w.dataset_column.clone(),
        dataset_entries: match &wl {
            Workload::Dataset { entries, .. } => Some(entries.len() as u64),
            _ => None,
        },
        dataset_skipped,
        tokenizer: w.tokenizer.as_ref().map(|p| p.display().to_string()),
        ignore_eos: w.ignore_eos,
        score: w.score.as_ref().map(|s| s.0.iter().map(|x| x.to_string()).collect()),
        keep_text: w.keep_text,
        repeat: (w.repeat > 1).then_some(w.repeat),
        ..Default::default()
    };
    Ok((wl, tokenizer, config, warnings))
}

/// Refuses the quality flags where no answer is generated (the simulated
/// engine in virtual time counts tokens, it writes no text).
pub fn no_answers(w: &WorkloadArgs, command: &str) -> Result<()> {
    let given = [(w.score.is_some(), "--score"), (w.keep_text, "--keep-text"), (w.repeat > 1, "--repeat")];
    if let Some((_, flag)) = given.iter().find(|g| g.0) {
        bail!("{flag}: {command} simulates timings in virtual time and writes no answers; score answers with goodput bench against a server (drop {flag})");
    }
    Ok(())
}

/// How answers are scored and what records keep of them.
pub fn quality_options(w: &WorkloadArgs) -> goodput_load::QualityOptions {
    goodput_load::QualityOptions { scorers: w.score.clone().map(|s| s.0).unwrap_or_default(), keep_text: w.keep_text }
}

/// `workload` sending each prompt `--repeat` times: the copies of a prompt
/// go a whole pass of the run's prompts apart when the run's size is known,
/// else twice the users apart (at least 64 requests), so no two are in
/// flight together.
pub fn repeated(workload: Workload, w: &WorkloadArgs, plan: &LoadPlan) -> Result<Workload> {
    if w.repeat <= 1 {
        return Ok(workload);
    }
    if plan.sessions.is_some() {
        bail!("--repeat sends single prompts again; it cannot repeat multi-turn sessions (drop --turns or --repeat)");
    }
    if plan.trace.is_some() {
        bail!("--repeat sends prompts again; a --trace gives each request its own (drop one of them)");
    }
    let copies = u64::from(w.repeat);
    let spread = match plan.total_requests() {
        Some(n) => n.div_ceil(copies).max(1),
        None => (2 * plan.concurrency.unwrap_or(32) as u64).max(64),
    };
    if let Some(note) = plan.total_requests().and_then(|n| uneven_repeat_note(n, w.repeat)) {
        goodput_core::tell!("{note}");
    }
    Ok(Workload::Repeated { inner: Box::new(workload), copies: w.repeat, spread })
}

/// A note where `copies` (`--repeat`) does not divide the run's `n`
/// requests: some prompts are sent once fewer than the others, or (with
/// fewer requests than copies) each is sent fewer times than asked.
/// Request `i` sends prompt `i % spread` ([`repeat_slot`] within one block
/// of `spread · copies`, which `n` never passes), so each is sent `n /
/// spread` times and the first `n % spread` once more.
///
/// [`repeat_slot`]: goodput_load::workload::repeat_slot
pub fn uneven_repeat_note(n: u64, copies: u32) -> Option<String> {
    let c = u64::from(copies);
    if c <= 1 || n == 0 || n.is_multiple_of(c) {
        return None;
    }
    let spread = n.div_ceil(c);
    let (base, more) = (n / spread, n % spread);
    let prompts = if spread == 1 { "prompt".to_string() } else { format!("{spread} prompts") };
    let sent = if more == 0 {
        let each = if spread == 1 { "" } else { "each " };
        format!("sends its {prompts} {each}{base} times, not {copies}")
    } else {
        format!("of its {prompts}, {more} are sent {} times and the other {} {base} times", base + 1, spread - more)
    };
    Some(format!(
        "note: --repeat {copies} does not divide the {n} requests: {sent}; give a multiple of {copies} requests for \
         even repeats"
    ))
}

/// Refuses a dataset with images where requests are only lengths in
/// virtual time.
pub fn no_dataset_images(workload: &Workload, command: &str) -> Result<()> {
    if workload.has_images() {
        bail!(
            "the dataset's images are not modelled in {command} yet: its requests would be their text alone; \
             measure them against a server (or goodput serve), or give a dataset without an image column"
        );
    }
    Ok(())
}

/// Refuses `--images` where requests are only lengths in virtual time.
pub fn no_images(w: &WorkloadArgs, command: &str) -> Result<()> {
    if w.images.is_some() {
        bail!(
            "--images is not modelled in {command} yet: the simulated engine charges images where it serves them \
             (goodput serve, or bench against its embedded server); drop --images here"
        );
    }
    Ok(())
}

/// `workload` with `--images` in its requests: chat only (the images go in
/// OpenAI's content parts), lone requests only.
pub fn with_images(
    workload: Workload,
    w: &WorkloadArgs,
    sessions: bool,
    api: goodput_load::Api,
    seed: u64,
) -> Result<Workload> {
    if workload.has_images() && api != goodput_load::Api::Chat {
        bail!(
            "the dataset's images go in chat messages' content parts (OpenAI's image_url): use --api chat (the \
             default), not --api {}",
            api.as_str()
        );
    }
    let Some(images) = w.image_spec().map_err(anyhow::Error::msg)? else { return Ok(workload) };
    if api != goodput_load::Api::Chat {
        bail!(
            "--images go in chat messages' content parts (OpenAI's image_url): use --api chat (the default), not --api {}",
            api.as_str()
        );
    }
    if sessions {
        bail!("--images puts images in single requests; multi-turn sessions with images are not built yet: drop --turns or --images");
    }
    Ok(Workload::WithImages { inner: Box::new(workload), images, seed })
}

pub fn analysis_options(percentiles: &[f64], judge: &JudgeArgs) -> Result<AnalysisOptions> {
    analysis_options_for(percentiles, judge, 1)
}

/// [`analysis_options`] where the hardware priced defaults to `default_gpus` GPUs.
pub fn analysis_options_for(percentiles: &[f64], judge: &JudgeArgs, default_gpus: u32) -> Result<AnalysisOptions> {
    Ok(options_of(percentiles, judge, crate::config::judging(judge, default_gpus)?))
}

/// The analysis options of settings already resolved by [`crate::config::judging`].
fn options_of(percentiles: &[f64], judge: &JudgeArgs, j: crate::config::Judging) -> AnalysisOptions {
    AnalysisOptions {
        percentiles: percentiles.to_vec(),
        slo: j.slo,
        cost: j.cost,
        ratings: j.ratings,
        confidence: Some(judge.confidence),
        stability: Default::default(),
    }
}

/// The SLO's quality terms, refused before the first request where no
/// answer can be scored by them: no --dataset (no references), or a
/// `--score` list without the term's scorer. (After the run each such term
/// fails the SLO; a long run had found that out at its end.)
pub fn check_scored(w: &WorkloadArgs, opts: &AnalysisOptions) -> Result<()> {
    check_scored_in(w, opts, None)
}

/// [`check_scored`] for `command`, which writes no answers (the simulated
/// engine in virtual time) when given: any quality term is refused.
pub fn check_scored_in(w: &WorkloadArgs, opts: &AnalysisOptions, no_answers: Option<&str>) -> Result<()> {
    if let Some(command) = no_answers {
        return refuse_quality_terms(opts.slo.as_ref(), command);
    }
    let Some(slo) = &opts.slo else { return Ok(()) };
    let terms = slo.quality_terms();
    let Some((term, _)) = terms.first() else { return Ok(()) };
    if w.dataset.is_none() {
        bail!(
            "--slo {term} judges answers against their references, and this run has none: give --dataset FILE.jsonl \
             whose lines carry \"reference\" (or \"answer\"), or drop the term"
        );
    }
    if let Some(list) = &w.score {
        if let Some((term, m)) = terms.iter().find(|(_, m)| !list.0.contains(&m.scorer())) {
            bail!(
                "--slo {term} needs the {} scorer, which --score leaves out: add it to --score, or leave --score out \
                 (every scorer that applies runs)",
                m.scorer().as_str()
            );
        }
    }
    Ok(())
}

/// The SLO's quality terms refused for `command`, which simulates timings
/// and writes no answers (a term would judge none, and fail every point).
pub fn refuse_quality_terms(slo: Option<&goodput_core::Slo>, command: &str) -> Result<()> {
    if let Some((term, _)) = slo.and_then(|s| s.quality_terms().into_iter().next()) {
        bail!(
            "--slo {term}: {command} simulates timings in virtual time and writes no answers to score; judge answers \
             with goodput bench against a server (drop the term)"
        );
    }
    Ok(())
}

/// `--fail-on-slo` with nothing to fail on, refused before the first
/// request rather than after the run (`report` and `merge` may find the
/// SLO in the saved run, so they check after reading it).
pub fn check_fail_on_slo(judge: &JudgeArgs, opts: &AnalysisOptions) -> Result<()> {
    if judge.fail_on_slo && opts.slo.is_none() {
        anyhow::bail!("--fail-on-slo needs an SLO: give --slo, or a config with slo = \"...\"");
    }
    Ok(())
}

/// The judging settings as they were applied, for the config block.
pub fn judge_config(opts: &AnalysisOptions) -> JudgeConfig {
    JudgeConfig {
        slo: opts.slo.as_ref().map(|s| s.to_string()),
        cost: opts.cost,
        ratings: opts.ratings,
        extra: Default::default(),
    }
}

/// `--label` and `--meta`, for a run's or a sweep's config.
pub fn tags(out: &OutputArgs) -> (Option<String>, Option<BTreeMap<String, String>>) {
    let meta = (!out.meta.is_empty()).then(|| out.meta.iter().cloned().collect());
    (out.label.clone(), meta)
}

/// Refuses a price read back from a saved document (`file`) that the flag
/// would refuse (`price_fault`: below zero, not a number, dearer than any
/// GPU, or below a millionth of a dollar), naming the file and the field: a
/// document's price had been trusted, and `report` printed a negative cost,
/// or a 300-digit one. Negative zero is no fault (it reads as zero).
pub fn check_saved_prices(run: &goodput_core::RunResult, file: &std::path::Path) -> Result<()> {
    use goodput_core::analysis::cost::{price_fault, price_text, CostError, MAX_GPU_HOUR_USD};
    let saved = [
        ("cost.gpu_hour_usd", run.cost.as_ref().map(|c| c.gpu_hour_usd)),
        ("config.judge.cost.gpu_hour_usd", run.config.judge.as_ref().and_then(|j| j.cost).map(|c| c.gpu_hour_usd)),
    ];
    for (field, usd) in saved {
        let Some(usd) = usd else { continue };
        let why = match price_fault(usd) {
            None => continue,
            Some(CostError::Dear(_)) => format!("more than a GPU costs an hour (at most {MAX_GPU_HOUR_USD})"),
            Some(CostError::Tiny(_)) => "less than a millionth of a dollar an hour".to_owned(),
            Some(_) => "not a price per GPU-hour: that is a number of USD, zero or more".to_owned(),
        };
        bail!(
            "{}: {field} = {} is {why}; the document was edited or written by another tool: give the price anew \
             (--gpu-hour-usd USD)",
            file.display(),
            price_text(usd)
        );
    }
    Ok(())
}

/// The analysis options of a saved run re-analysed: `judge`'s where given,
/// the run's own SLO, price and rating thresholds where not. A price given
/// anew (`--gpu-hour-usd`, a config's) is for the run's own GPUs unless
/// `--gpus` or the config says otherwise; a count other than a saved
/// estimate's engine ran on is refused, as `estimate` refuses it.
pub fn saved_options(
    run: &goodput_core::RunResult,
    judge: &crate::cli::JudgeArgs,
    percentiles: &[f64],
) -> Result<goodput_core::AnalysisOptions> {
    let j = crate::config::judging(judge, saved_gpus(run))?;
    let gpus_given = j.gpus;
    // A simulated engine's GPUs are what it ran on: another count would
    // price it (and its energy) as another deployment (report had taken it).
    if let (Some(n), Some(g)) = (engine_gpus(run), gpus_given) {
        if g != n {
            bail!(
                "--gpus {g} (or the config's gpus) contradicts the saved estimate's simulated engine, which ran on \
                 {n} GPU(s), and its cost and energy count those: drop it (the engine's count is priced), or \
                 estimate the deployment of {g} GPU(s) anew"
            );
        }
    }
    let mut opts = options_of(percentiles, judge, j);
    let saved = run.config.judge.as_ref();
    if opts.slo.is_none() {
        // Keep the run's own SLO when no other is given, on the command line
        // or in a config file (the file's had lost to the saved one).
        if let Some(spec) = saved.and_then(|j| j.slo.as_deref()) {
            opts.slo =
                Some(spec.parse().map_err(|e: goodput_core::SloError| anyhow::anyhow!("the saved SLO '{spec}': {e}"))?);
        }
    }
    if let (Some(import), Some(slo)) = (goodput_report::read::peers::import_info(run), &opts.slo) {
        goodput_report::read::peers::check_slo(import, slo)?;
    }
    if opts.cost.is_none() {
        // The saved price, for the GPUs `--gpus` or a config names where one
        // does (merge's --gpus had been refused as needed, then ignored).
        let saved_cost = run.cost.as_ref().map(|c| (c.gpu_hour_usd, c.gpus));
        let judged = saved.and_then(|j| j.cost).map(|c| (c.gpu_hour_usd, c.gpus));
        if let Some((gpu_hour_usd, gpus)) = saved_cost.or(judged) {
            let gpus = gpus_given.unwrap_or(gpus);
            opts.cost = Some(goodput_core::analysis::cost::CostConfig { gpu_hour_usd, gpus });
        }
    }
    if judge.config.is_none() {
        // Keep the run's own rating thresholds when no config gives others.
        if let Some(j) = saved {
            opts.ratings = j.ratings;
        }
    }
    Ok(opts)
}

/// The GPUs a saved run was priced on, or ran on: its cost's, its config's
/// cost's, or its energy's (a simulated engine's own count); else one.
pub fn saved_gpus(run: &goodput_core::RunResult) -> u32 {
    let judged = run.config.judge.as_ref().and_then(|j| j.cost.as_ref()).map(|c| c.gpus);
    run.cost.as_ref().map(|c| c.gpus).or(judged).or(engine_gpus(run)).filter(|&g| g > 0).unwrap_or(1)
}

/// The GPUs a saved estimate's simulated engine ran on (its energy's
/// count); `None` for a measured run.
fn engine_gpus(run: &goodput_core::RunResult) -> Option<u32> {
    run.energy.as_ref().filter(|e| e.source == EnergySource::Model).and_then(|e| e.gpus)
}

/// Draws a length check takes from a fixed seed: enough for a mean and a
/// share within a few tenths of a percent, in a few milliseconds.
const CHECK_DRAWS: usize = 100_000;

/// The seed of a length check's draws: the same whatever the run's seed
/// or size, so a spec is judged the same way by every command and run.
const CHECK_SEED: u64 = 0x5eed;

/// Sends a burst check reads at most.
const BURST_DRAWS: u64 = 100_000;

/// Warnings, before a run, where its draws miss what was asked: a length
/// distribution whose draws, rounded and held to 1..2 Mi tokens, have a
/// mean more than 5 % from the one given (`normal:50,100` draws a mean of
/// about 70), and gamma arrivals so bursty that the run's sends collapse
/// into a small part of the time its rate asks. The lengths are judged on
/// the distribution (a fixed seed's 100,000 draws, see [`length_check`]),
/// the bursts on this run's own sends.
///
/// A length spec whose draws are mostly held at 1 token (a median of 1
/// where the mean asked is 2 or more: `lognormal:256,5`) is no workload a
/// run can keep: refused.
pub fn draw_warnings(workload: &Workload, plan: &LoadPlan) -> Result<Vec<String>> {
    let mut out = length_checks(workload)?;
    if let Some((rate, Arrival::Gamma { burstiness })) = plan.rate {
        if let Some(w) = burst_warning(rate, burstiness, plan.seed, plan.total_requests().unwrap_or(20_000)) {
            out.push(w);
        }
    }
    Ok(out)
}

/// [`length_check`] of a synthetic workload's two length distributions
/// (through `--repeat` and `--images`): the warnings, or the refusal.
/// Every command that draws synthetic lengths (bench, estimate, sweep,
/// plan) judges them here.
pub fn length_checks(workload: &Workload) -> Result<Vec<String>> {
    let mut out = Vec::new();
    if let Some((input, output)) = synthetic_lengths(workload) {
        for (d, flag) in [(input, "--input-tokens"), (output, "--output-tokens")] {
            if let Some(w) = length_check(d, flag)? {
                out.push(w);
            }
        }
    }
    Ok(out)
}

/// A normal or lognormal length distribution `d` judged on a fixed seed's
/// 100,000 draws, rounded and held to 1..[`MAX_TOKENS`] as a run draws
/// them: refused where most are held at 1 token and the mean asked is 2
/// or more (the run would send next to nothing); a warning where holding
/// them moves their mean more than 5 % from the mean asked. Sampling noise
/// in a run's own few draws is no fault of the spec, and says nothing.
///
/// [`MAX_TOKENS`]: goodput_load::workload::MAX_TOKENS
pub fn length_check(d: &LengthDist, flag: &str) -> Result<Option<String>> {
    if !matches!(d, LengthDist::Normal { .. } | LengthDist::LogNormal { .. }) {
        return Ok(None);
    }
    let draws = goodput_load::workload::seeded_draws(d, CHECK_DRAWS, CHECK_SEED);
    let shown = |x: f64| goodput_load::schedule::shown((x * 10.0).round() / 10.0);
    let share = |v: u32| draws.iter().filter(|&&x| x == v).count() as f64 / draws.len() as f64;
    let asked = d.mean();
    let drawn = draws.iter().map(|&x| f64::from(x)).sum::<f64>() / draws.len() as f64;
    let (at_one, at_max) = (share(1), share(goodput_load::workload::MAX_TOKENS));
    if asked >= 2.0 && at_one >= 0.5 {
        bail!(
            "{flag} {d}: {:.0} % of its draws are held at 1 token (each is rounded and held to at least 1), so they \
             have a mean of about {}, not {}, and a median of 1: give a smaller std (or sigma: lognormal's stays \
             near its mean below about 1.5), or bounded lengths (uniform:LO..HI)",
            at_one * 100.0,
            shown(drawn),
            goodput_load::schedule::shown(asked)
        );
    }
    if (drawn - asked).abs() <= 0.05 * asked {
        return Ok(None);
    }
    // Whole percents, or a bound's few draws to a thousandth of one.
    let percent = |share: f64| {
        let p = share * 100.0;
        goodput_load::schedule::shown(if p >= 1.0 { p.round() } else { (p * 1000.0).round() / 1000.0 })
    };
    let mut held = format!("{} % of them at 1 token", percent(at_one));
    if at_max > 0.0 {
        held += &format!(" and {} % at {}", percent(at_max), goodput_load::workload::MAX_TOKENS);
    }
    Ok(Some(format!(
        "warning: {flag} {d} asks a mean of {} tokens, but its draws have a mean of about {}: each is rounded and \
         held to 1..{} tokens, and so wide a spread puts {held}; give a smaller std (or sigma), or bounded lengths \
         (uniform:LO..HI)",
        goodput_load::schedule::shown(asked),
        shown(drawn),
        goodput_load::workload::MAX_TOKENS
    )))
}

/// The synthetic workload's length distributions, through `--repeat` and
/// `--images`.
fn synthetic_lengths(w: &Workload) -> Option<(&LengthDist, &LengthDist)> {
    match w {
        Workload::Synthetic { input, output, .. } => Some((input, output)),
        Workload::Repeated { inner, .. } | Workload::WithImages { inner, .. } => synthetic_lengths(inner),
        _ => None,
    }
}

/// The warning for gamma arrivals whose sends, as this run draws them
/// (`seed`, its first `n`), span under a tenth of the time the rate asks
/// for them: at so small a burstiness the long-run rate is kept, but
/// within a run this long the requests go out in a few bursts, at a rate
/// far above `rate`. Bursts that keep the run's rate near the one asked
/// (a burstiness of 0.1 or 0.05, as real traces have) say nothing.
pub fn burst_warning(rate: f64, burstiness: f64, seed: u64, n: u64) -> Option<String> {
    let n = n.clamp(2, BURST_DRAWS) as usize;
    let sched = goodput_load::schedule::ArrivalSchedule::new(rate, Arrival::Gamma { burstiness }, seed).ok()?;
    let times: Vec<f64> = sched.take(n).map(|t| t.as_secs_f64()).collect();
    if times.len() < 2 {
        return None;
    }
    let gaps = (times.len() - 1) as f64;
    let (span, asked) = (times[times.len() - 1] - times[0], gaps / rate);
    if span >= 0.1 * asked {
        return None;
    }
    let achieved = if span > 0.0 {
        format!(
            "over {} s, not the {} s the rate asks (about {} requests/s)",
            goodput_load::schedule::shown(span),
            goodput_load::schedule::shown(asked),
            goodput_load::schedule::shown(gaps / span)
        )
    } else {
        format!("all at the same instant, not over the {} s the rate asks", goodput_load::schedule::shown(asked))
    };
    Some(format!(
        "warning: --arrival gamma --burstiness {} at --rate {}: at so small a burstiness requests come in bursts, \
         and this run's first {} sends go out {achieved}; the long-run rate is kept, but a run this short sees a \
         burst, not the rate: more requests or a larger burstiness (1 is Poisson) bring the run's rate near {}/s",
        goodput_load::schedule::shown(burstiness),
        goodput_load::schedule::shown(rate),
        times.len(),
        goodput_load::schedule::shown(rate)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_loop_gives_ten_requests_a_user_by_default() {
        // Ten a user, at least 100; 100 for an open loop.
        let shape = || <crate::cli::Cli as clap::Parser>::try_parse_from(["goodput", "bench"]).unwrap();
        let crate::cli::Command::Bench(b) = shape().command else { unreachable!() };
        let requests = |c: Option<usize>, r: Option<f64>| {
            shaped_plan(&b.load.shape, c, r, None, Duration::from_secs(1)).unwrap().requests
        };
        assert_eq!(requests(Some(4), None), Some(100));
        assert_eq!(requests(Some(64), None), Some(640));
        assert_eq!(requests(Some(64), Some(10.0)), Some(100));
    }

    #[test]
    fn clamped_lengths_are_warned_of_with_the_mean_drawn() {
        let check = |spec: &str| length_check(&spec.parse().unwrap(), "--input-tokens");
        let w = check("normal:50,100").unwrap().unwrap();
        assert!(
            w.contains("--input-tokens normal:50,100 asks a mean of 50 tokens, but its draws have a mean of about 7")
        );
        assert!(
            w.contains("about 70.3") && w.contains("puts 31 % of them at 1 token;"),
            "a third at 1: warned, not refused: {w}"
        );
        // A third at 1 token, whatever the run's draws: always warned of
        // (a 4-request run had been refused in some seeds only).
        let w = check("normal:4,6").unwrap().unwrap();
        assert!(w.contains("a mean of about 5.2") && w.contains("puts 34 % of them at 1 token"), "{w}");
        // Most draws at 1 token: refused, whatever the run's seed or size.
        for spec in ["lognormal:256,5", "lognormal:256,20"] {
            let r = check(spec).unwrap_err().to_string();
            assert!(r.contains(&format!("--input-tokens {spec}: ")) && r.contains("and a median of 1"), "{r}");
        }
    }

    #[test]
    fn the_presets_and_the_readme_s_specs_are_not_warned_of() {
        // A run's own few draws had been judged at ±5 %: sampling noise
        // warned of `--preset chat` and `code` with their defaults, and of
        // `normal:512,128` in half the seeds at -n 30.
        for p in goodput_load::workload::Preset::ALL {
            let (input, output) = p.lengths();
            let preset = p.name();
            assert_eq!(length_check(&input, "--input-tokens").unwrap(), None, "{preset}");
            assert_eq!(length_check(&output, "--output-tokens").unwrap(), None, "{preset}");
        }
        for spec in ["normal:512,128", "lognormal:256,0.5", "lognormal:512,0.5", "lognormal:1024,0.8"] {
            assert_eq!(length_check(&spec.parse().unwrap(), "--input-tokens").unwrap(), None, "{spec}");
        }
    }

    #[test]
    fn bursts_of_gamma_arrivals_are_warned_of() {
        let w = burst_warning(5.0, 1e-6, 1, 20).unwrap();
        assert!(w.contains("--burstiness 1e-6 at --rate 5") && w.contains("this run's first 20 sends go out"), "{w}");
        assert!(w.contains("the long-run rate is kept") && !w.contains("not 5/s"), "{w}");
        assert_eq!(burst_warning(5.0, 1.0, 1, 2000), None, "Poisson");
        // The burstiness real traces have (and the one the warning had
        // recommended, yet warned of) keeps a run's rate near the one asked.
        for b in [0.25, 0.1, 0.05] {
            for seed in 0..5 {
                assert_eq!(burst_warning(5.0, b, seed, 2000), None, "{b} seed {seed}");
            }
        }
    }

    #[test]
    fn a_trace_cut_short_names_the_count_after_its_warm_up() {
        let n = trace_cut_note(20, 20, 5);
        assert!(n.contains("more than the trace's 15 request(s) after its warm-up of 5 (20 in all)"), "{n}");
        assert!(n.contains("replays those 15, and records --requests 15"), "{n}");
        let n = trace_cut_note(30, 20, 0);
        assert!(n.contains("more than the trace's 20 request(s): the run replays the trace's 20"), "{n}");
    }

    /// BurstGPT's failure rows are left out of a replay, and the run says
    /// so, as it says a dataset's skips.
    #[test]
    fn a_burstgpt_trace_s_skipped_failures_are_told() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("burst.csv");
        std::fs::write(
            &path,
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
             5,ChatGPT,472,18,490,Conversation log\n6,ChatGPT,100,0,100,Conversation log\n\
             7,GPT-4,84,0,84,API log\n",
        )
        .unwrap();
        let t = read_trace(&path, 1.0, goodput_load::trace::TraceFormat::Auto).unwrap();
        assert_eq!((t.entries.len(), t.skipped), (1, 2));
        let note = t.notes[0].clone();
        assert!(note.contains("holds 3 rows, 2 skipped: BurstGPT's failed requests"), "{note}");
        assert!(note.contains("replays the other 1"), "{note}");
        let w = <crate::cli::Cli as clap::Parser>::try_parse_from(["goodput", "bench"]).unwrap();
        let crate::cli::Command::Bench(b) = w.command else { unreachable!() };
        let (_, _, _, warnings) = workload_warned(&b.workload, 0, Some(t)).unwrap();
        assert_eq!(warnings, vec![note], "the run tells it");
        assert_eq!(trace_skipped_note(&path, 3, 0), None);
    }

    /// A trace whose timestamps are milliseconds read as seconds is warned
    /// of; one of seconds is not.
    #[test]
    fn a_trace_of_millisecond_timestamps_is_warned_of() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let write = |step: f64| {
            let lines: String = (0..20)
                .map(|i| format!("{{\"timestamp\": {}, \"input_tokens\": 5, \"output_tokens\": 5}}\n", i as f64 * step))
                .collect();
            std::fs::write(&path, lines).unwrap();
        };
        write(150.0);
        let t = read_trace(&path, 1.0, goodput_load::trace::TraceFormat::Auto).unwrap();
        let w = t.notes.join("\n");
        assert!(w.contains("median gap of 150 s") && w.contains("look like milliseconds"), "{w}");
        assert!(w.contains("--trace-speed 1000"), "{w}");
        // Replayed 1000 times faster, the gaps are what was meant: no word.
        let t = read_trace(&path, 1000.0, goodput_load::trace::TraceFormat::Auto).unwrap();
        assert!(t.notes.is_empty(), "{:?}", t.notes);
        write(0.15);
        let t = read_trace(&path, 1.0, goodput_load::trace::TraceFormat::Auto).unwrap();
        assert!(t.notes.is_empty(), "{:?}", t.notes);
    }

    #[test]
    fn uneven_repeats_are_noted() {
        let n = uneven_repeat_note(10, 3).unwrap();
        assert!(n.contains("of its 4 prompts, 2 are sent 3 times and the other 2 2 times"), "{n}");
        assert_eq!(uneven_repeat_note(9, 3), None);
        assert_eq!(uneven_repeat_note(10, 1), None);
        // Fewer requests than copies: `-n 3 --repeat 5` had been said to
        // send its prompt 4 times; it is sent 3.
        let n = uneven_repeat_note(3, 5).unwrap();
        assert!(n.contains("sends its prompt 3 times, not 5"), "{n}");
        let n = uneven_repeat_note(7, 5).unwrap();
        assert!(n.contains("of its 2 prompts, 1 are sent 4 times and the other 1 3 times"), "{n}");
        // Each count is what the workload's slots send.
        for (n, c) in [(3u64, 5u32), (7, 5), (10, 3), (12, 5), (101, 4)] {
            let spread = n.div_ceil(u64::from(c));
            let mut sent = vec![0u64; spread as usize];
            for i in 0..n {
                sent[goodput_load::workload::repeat_slot(i, c, spread).0 as usize] += 1;
            }
            let (lo, hi) = (*sent.iter().min().unwrap(), *sent.iter().max().unwrap());
            let note = uneven_repeat_note(n, c).unwrap();
            assert!(note.contains(&format!(" {lo} times")) && note.contains(&format!(" {hi} times")), "{note}");
        }
    }
}
