//! `goodput sweep --serve-cmd TEMPLATE --serve-grid GRID`: for each
//! configuration of the grid, start the server ([`process`]), wait for it
//! to be ready, sweep it as `sweep` sweeps one server, and stop it; then
//! set every configuration's points in one measured frontier document,
//! written after each configuration so that a stopped sweep keeps what it
//! finished and `--resume` goes on from there.

pub(crate) mod estimate;
pub(crate) mod grid;
mod points;
mod process;

use super::{start, Shared};
use crate::cli::{CountList, RateList, SweepArgs};
use crate::interrupt::Interrupt;
use anyhow::{bail, Context, Result};
use goodput_core::doc::frontier::{analyze_frontier, ConfigStatus, FrontierConfig, FrontierResult, FrontierSource};
use goodput_core::doc::sweep::{Load, SweepPoint};
use grid::{parse_grid, Params, Template};
use process::{log_tail, status_code, status_text, Server};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Lines of a failed server's log kept in the document.
const LOG_TAIL_LINES: usize = 30;
/// How long a stopped server's port may stay taken.
const PORT_WAIT: Duration = Duration::from_secs(30);
/// The most one readiness probe waits for its answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// What sweeping one configuration came to.
enum Outcome {
    Done(Box<FrontierConfig>),
    /// Stopped by Ctrl-C or SIGTERM before it finished: not recorded, so
    /// that `--resume` runs it again.
    Interrupted,
}

/// Why one server's part ended early.
struct Failure {
    error: String,
    status: Option<i32>,
    log: PathBuf,
    /// The load of the point the server exited during, when it exited
    /// mid-sweep.
    exited_during: Option<Load>,
    /// Whether it exited before it was ready.
    before_ready: bool,
}

struct Ctx {
    args: SweepArgs,
    template: Template,
    logs: PathBuf,
    interrupt: Interrupt,
    percentile: f64,
    attainment: f64,
}

pub async fn sweep(a: SweepArgs) -> Result<ExitCode> {
    let started_unix_s = crate::common::unix_now();
    let s = &a.serve;
    let template = Template::parse(s.serve_cmd.as_deref().unwrap_or_default())?;
    let grid = match &s.serve_grid {
        Some(g) => parse_grid(g)?,
        None => vec![Params(Vec::new())],
    };
    template.check(&grid)?;
    let names = template.names();
    let unused: Vec<&str> = grid
        .iter()
        .flat_map(|p| p.0.iter().map(|(k, _)| k.as_str()))
        .filter(|k| !names.contains(k) && !matches!(*k, "gpus" | "id" | "metrics" | "ports"))
        .fold(Vec::new(), |mut v, k| {
            if !v.contains(&k) {
                v.push(k);
            }
            v
        });
    // Said where two configurations do start one command: the unused
    // parameters then tell apart what is the same server. Where each
    // command is its own, they are labels, or reach the server another way
    // (plan --grid-out's `launch` script holds the knobs it names).
    let mut first_of: std::collections::HashMap<Vec<String>, usize> = std::collections::HashMap::new();
    let alike = grid.iter().enumerate().find_map(|(i, p)| match first_of.entry(template.fill(p, 0)) {
        std::collections::hash_map::Entry::Occupied(e) => Some((*e.get(), i)),
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(i);
            None
        }
    });
    if let (false, Some((j, i))) = (unused.is_empty(), alike) {
        let (it, them) = if unused.len() == 1 { ("it", "") } else { ("them", "s") };
        goodput_core::tell!(
            "warning: --serve-cmd has no {} for the grid's parameter{them} of that name: {}",
            unused.iter().map(|k| format!("{{{k}}}")).collect::<Vec<_>>().join(", "),
            if first_of.len() == 1 {
                "every configuration starts the same server".to_string()
            } else {
                format!(
                    "configurations that differ in {it} alone start the same server ({} and {})",
                    grid[j].id(),
                    grid[i].id()
                )
            }
        );
    }
    check(&a, &grid)?;
    if s.dry_run {
        crate::output::say(&dry_run(&a, &template, &grid));
        return Ok(ExitCode::SUCCESS);
    }
    let out = a
        .output
        .output
        .clone()
        .context("--serve-cmd needs -o: the frontier is written there after each configuration")?;
    // Standard output can hold one document only, and no logs beside it.
    if out.as_os_str() == "-" {
        bail!(
            "--serve-cmd writes the frontier to -o after each configuration (for --resume) and the server logs \
             beside it, so -o - cannot hold it: give -o a file (e.g. -o frontier.json) and read it when the sweep \
             ends"
        );
    }
    let logs = s.serve_logs.clone().unwrap_or_else(|| logs_beside(&out));
    std::fs::create_dir_all(&logs)
        .with_context(|| format!("cannot create the server logs' folder {}", logs.display()))?;
    let mut inputs = a.workload.inputs();
    inputs.extend(a.judge.config.as_deref().map(|p| ("--config", p)));
    if let Some(g) = s.serve_grid.as_deref().map(Path::new).filter(|p| p.is_file()) {
        inputs.push(("--serve-grid", g));
    }
    crate::output::check_outputs(&a.output, &inputs)?;
    let opts = crate::setup::analysis_options(&a.output.percentiles.0, &a.judge)?;
    crate::setup::check_fail_on_slo(&a.judge, &opts)?;
    crate::setup::check_scored(&a.workload, &opts)?;
    let percentile = points::frontier_percentile(opts.slo.as_ref());
    let attainment =
        opts.slo.as_ref().map_or(goodput_core::analysis::slo::DEFAULT_ATTAINMENT, |s| s.attainment_target());

    let measured = settings(&a, opts.slo.as_ref().map(|s| s.to_string()));
    let mut doc = if s.resume && out.exists() {
        let doc = resumed(&out)?;
        same_settings(&doc, &measured, &out)?;
        doc
    } else {
        if s.resume {
            goodput_core::tell!(
                "--resume: {} does not exist yet; starting from the first configuration",
                out.display()
            );
        }
        FrontierResult {
            started_unix_s,
            slo: opts.slo.as_ref().map(|s| s.to_string()),
            ..FrontierResult::new(crate::common::tool(), FrontierSource::Measured, attainment, percentile)
        }
    };
    doc.extra.insert(SETTINGS.into(), serde_json::Value::Object(measured));
    // A configuration whose server exited mid-point is not done: run again.
    let rerun: Vec<String> = doc.configs.iter().filter(|c| c.exited_during.is_some()).map(|c| c.id.clone()).collect();
    doc.configs.retain(|c| c.exited_during.is_none());
    if !rerun.is_empty() {
        goodput_core::tell!(
            "--resume: running again the configuration{} whose server exited during a point: {}",
            if rerun.len() == 1 { "" } else { "s" },
            goodput_report::escape::terminal(&rerun.join(", "))
        );
    }
    let todo: Vec<(usize, &Params)> =
        grid.iter().enumerate().filter(|(_, p)| !doc.configs.iter().any(|c| c.params == p.map())).collect();
    if s.resume && todo.len() < grid.len() {
        goodput_core::tell!(
            "--resume: {} of the {} configurations are in {} already; running the other {}",
            grid.len() - todo.len(),
            grid.len(),
            out.display(),
            todo.len()
        );
    }
    if !a.output.quiet {
        goodput_core::tell!("{}", upper_bound(&a, todo.len()));
    }
    // With --estimate, the grid in virtual time first: seconds, before the servers' minutes.
    let predicted = estimate::predict(&a, &grid, &logs, &out, percentile, attainment).await?;
    let interrupt = Interrupt::install("the sweep", a.target.grace);
    let mut percentiles = a.output.percentiles.0.clone();
    if !percentiles.contains(&percentile) {
        percentiles.push(percentile);
    }
    let mut args = a.clone();
    args.output.percentiles.0 = percentiles;
    args.estimate = false;
    let ctx = Ctx { args, template, logs, interrupt, percentile, attainment };
    let mut stopped = false;
    for (i, params) in todo {
        if ctx.interrupt.stopped() {
            stopped = true;
            break;
        }
        match ctx.configuration(i, grid.len(), params, &mut doc).await? {
            Outcome::Done(c) => {
                doc.configs.push(*c);
                // In the grid's order, whatever order --resume ran them in.
                let key = |c: &FrontierConfig| grid.iter().position(|p| p.map() == c.params).unwrap_or(usize::MAX);
                doc.configs.sort_by_key(key);
            }
            Outcome::Interrupted => {
                stopped = true;
                break;
            }
        }
        analyze_frontier(&mut doc);
        crate::output::write_document(&out, &doc, "frontier")?;
    }
    stopped |= ctx.interrupt.stopped();
    doc.interrupted = stopped;
    analyze_frontier(&mut doc);
    crate::output::write_document(&out, &doc, "frontier")?;
    if !ctx.args.output.quiet {
        goodput_core::tell!("frontier written to {}", out.display());
    }
    crate::output::say(&goodput_report::frontier::terminal(&doc));
    export(&doc, &ctx.args)?;
    compare(predicted, &doc, &out, &ctx.args)?;
    if stopped {
        goodput_core::tell!(
            "error: the sweep was interrupted; {} holds the configurations finished until then, and --resume runs \
             the rest",
            out.display()
        );
        return Ok(ExitCode::from(crate::output::EXIT_INTERRUPTED));
    }
    if doc.configs.iter().all(|c| c.status == ConfigStatus::Failed) {
        goodput_core::tell!("error: no configuration ran (each one's error and log tail are in {})", out.display());
        return Ok(ExitCode::from(1));
    }
    if ctx.args.judge.fail_on_slo && doc.best.is_none() {
        goodput_core::tell!("error: no point of any configuration met the SLO (--fail-on-slo)");
        return Ok(ExitCode::from(3));
    }
    // As a plain sweep fails it: a point measured by a client that stalled
    // while its requests were due or in flight (its times are bounds, not
    // the server's; it had passed here, the point carrying no client record).
    let stalled: Vec<String> = doc
        .configs
        .iter()
        .flat_map(|c| {
            c.points
                .iter()
                .filter_map(move |p| Some(format!("{} at {} ({})", c.id, p.load.label(), p.client_stalled.as_deref()?)))
        })
        .collect();
    if ctx.args.judge.fail_on_unsteady && !stalled.is_empty() {
        let all: usize = doc.configs.iter().map(|c| c.points.len()).sum();
        goodput_core::tell!(
            "error: {} of {all} points were measured by a client that stalled: {} (--fail-on-unsteady)",
            stalled.len(),
            goodput_report::escape::terminal(&stalled.join("; "))
        );
        return Ok(ExitCode::from(4));
    }
    // As a plain sweep fails it: no steady point left to pick (it had been
    // ignored here, exit 0 beside "no point was steady").
    let (unsteady, all) = doc
        .configs
        .iter()
        .flat_map(|c| &c.points)
        .fold((0, 0), |(u, n), p| (u + usize::from(p.steady == Some(false)), n + 1));
    if ctx.args.judge.fail_on_unsteady && doc.best.is_none() && unsteady > 0 {
        goodput_core::tell!(
            "error: no steady point to pick ({unsteady} of {all} point{} {} not steady) (--fail-on-unsteady)",
            if all == 1 { "" } else { "s" },
            if unsteady == 1 { "was" } else { "were" }
        );
        return Ok(ExitCode::from(4));
    }
    Ok(ExitCode::SUCCESS)
}

/// The renderings asked for: the HTML page with its chart and the CSV
/// (Markdown has no frontier form, and is refused before the sweep).
fn export(doc: &FrontierResult, a: &SweepArgs) -> Result<()> {
    for (format, dest) in a.output.exports.targets() {
        for f in goodput_report::frontier::export(format, doc, &dest)? {
            if !a.output.quiet {
                goodput_core::tell!("{} written to {}", format.exporter().name(), f.display());
            }
        }
    }
    Ok(())
}

/// With --estimate: the predicted frontier beside the measured one, in the
/// terminal, as a document beside -o (`frontier.compare.json`) and, with
/// --html, as a page beside it (`frontier.compare.html`). Nothing without.
fn compare(pred: Option<FrontierResult>, doc: &FrontierResult, out: &Path, a: &SweepArgs) -> Result<()> {
    let Some(pred) = pred else { return Ok(()) };
    let label = |p: &Path| p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned());
    let pl = label(&estimate::beside(out, "predicted", "json"));
    let c = goodput_core::doc::overlay::compare_frontiers((&pl, pred), (&label(out), doc.clone()));
    crate::output::say(&goodput_report::overlay::terminal(&c));
    let json = estimate::beside(out, "compare", "json");
    crate::output::write_document(&json, &c, "frontier comparison")?;
    let mut written = vec![json];
    if let Some(h) = &a.output.exports.html {
        let page = estimate::beside(h, "compare", "html");
        written.extend(goodput_report::overlay::export(goodput_report::Format::Html, &c, &page)?);
    }
    if !a.output.quiet {
        for w in written {
            goodput_core::tell!("predicted against measured written to {}", w.display());
        }
        // Where they differ, the measurements can set the engine's
        // constants (its sweeps are read from the logs beside -o).
        if a.serve.serve_logs.is_none() {
            goodput_core::tell!(
                "to fit the engine to these measurements (every other configuration held out to check it), then \
                 plan on the fit with plan --calibration: {}",
                estimate::fit_command(a, out)
            );
        }
    }
    Ok(())
}

/// `frontier.json` → `frontier.logs` beside it.
fn logs_beside(out: &Path) -> PathBuf {
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "frontier".into());
    out.with_file_name(format!("{stem}.logs"))
}

/// The document a stopped sweep left, to go on from.
fn resumed(out: &Path) -> Result<FrontierResult> {
    let text = goodput_core::util::input::read_text(out, "-o", 1 << 30)?;
    goodput_core::util::input::check_parse(out, "-o", &text)?;
    let doc: FrontierResult = serde_json::from_str(&text).with_context(|| {
        format!("--resume: {} is not a frontier document (goodput sweep --serve-cmd -o writes one)", out.display())
    })?;
    if doc.kind != "frontier" || doc.source != FrontierSource::Measured {
        bail!("--resume: {} is not a measured frontier (kind frontier, source measured)", out.display());
    }
    if let Some(what) = goodput_report::read::impossible_frontier(&doc) {
        bail!("--resume: {} holds figures no sweep can give ({what}): it was edited or damaged", out.display());
    }
    Ok(doc)
}

/// Whether a flag's or a variable's name says it carries a credential:
/// one of its words (split at `-`, `_` and `.`) is token, key, secret,
/// password, auth or the like (`--hf-token`, `HF_TOKEN`, `--api-key`; not
/// `--max-num-batched-tokens`, which a header name's substring test,
/// `redact::is_secret_header`, would take).
fn credential_name(name: &str) -> bool {
    const WORDS: [&str; 10] =
        ["token", "key", "apikey", "secret", "password", "passwd", "pass", "auth", "credential", "credentials"];
    name.trim_start_matches('-').split(['-', '_', '.']).any(|w| WORDS.iter().any(|c| w.eq_ignore_ascii_case(c)))
}

/// A server's command as the document and the terminal show it, its
/// credentials masked word by word: the value of a flag or a `NAME=VALUE`
/// whose name says it carries one (`--hf-token hf_…`, `HF_TOKEN=…`,
/// `--api-key=…`), and a word that is the client's key or the value of a
/// `--header` the run masks (`redact::is_secret_header`). Nothing else is touched (a
/// header value masked wherever its text stood had hidden `--max-num-seqs 1`
/// behind `X-Priority: 1`).
fn masked_command(words: &[String], t: &crate::cli::TargetArgs) -> String {
    let secret = secrets(t);
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut mask_next = false;
    for w in words {
        let shown = match !mask_next && !secret(w) && w.contains(char::is_whitespace) {
            // A script (`sh -c '…'`) or a value of several words: masked
            // within, word by word, as a shell would split it.
            true => masked_within(w, &secret),
            false => masked_word(w, &mut mask_next, &secret),
        };
        out.push(shlex::try_quote(&shown).map_or(shown.clone(), |q| q.into_owned()));
    }
    out.join(" ")
}

/// Whether a word is the client's key or the value of a `--header` the run
/// masks.
fn secrets(t: &crate::cli::TargetArgs) -> impl Fn(&str) -> bool + '_ {
    let key = t.api_key.as_deref().filter(|k| !k.is_empty());
    move |w: &str| {
        key == Some(w)
            || t.header
                .iter()
                .any(|(n, v)| !v.trim().is_empty() && goodput_core::util::redact::is_secret_header(n) && v.trim() == w)
    }
}

/// A script's text with its credentials masked as [`masked_command`] masks
/// a command's words: each run of non-blank characters, its quotes set
/// aside, is a word (`HF_TOKEN=…`, `--api-key …`, `export HF_TOKEN=…`, the
/// client's key), a quoted run of blanks within it; the blanks between and
/// everything else are kept as they stand.
fn masked_within(text: &str, secret: &dyn Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut mask_next = false;
    let mut rest = text;
    while !rest.is_empty() {
        let blank = rest.len() - rest.trim_start().len();
        out.push_str(&rest[..blank]);
        rest = &rest[blank..];
        // A word ends at a blank outside quotes: `A='t 3'` is one.
        let mut quote = None;
        let end = rest
            .char_indices()
            .find(|&(_, c)| match quote {
                Some(q) if c == q => {
                    quote = None;
                    false
                }
                Some(_) => false,
                None if c == '\'' || c == '"' => {
                    quote = Some(c);
                    false
                }
                None => c.is_whitespace(),
            })
            .map_or(rest.len(), |(i, _)| i);
        let (word, after) = rest.split_at(end);
        rest = after;
        out.push_str(&masked_word(word, &mut mask_next, secret));
    }
    out
}

/// One word as shown, judged with its quotes set aside: `***` where it is
/// a credential (the value after a flag named as one, `mask_next`; the
/// client's key or a masked header's value), `NAME=***` where it sets one
/// (`HF_TOKEN=…`, `--api-key=…`); else as it stands. Sets `mask_next` after
/// a flag named as a credential.
fn masked_word(word: &str, mask_next: &mut bool, secret: &dyn Fn(&str) -> bool) -> String {
    let bare = word.trim_matches(['\'', '"']);
    if std::mem::take(mask_next) || secret(bare) {
        return "***".into();
    }
    match bare.split_once('=') {
        Some((name, value)) if credential_name(name) || secret(value.trim_matches(['\'', '"'])) => {
            format!("{}***", &word[..word.find('=').map_or(0, |i| i + 1)])
        }
        Some(_) => word.to_string(),
        None => {
            *mask_next = bare.starts_with('-') && credential_name(bare);
            word.to_string()
        }
    }
}

/// A server's command for the terminal: [`masked_command`], escaped; a
/// script among its words (a launch of several lines) shown as `SCRIPT`
/// and then line by line below it, each line escaped (in one line its line
/// breaks had read as `\u{a}`).
fn terminal_command(words: &[String], t: &crate::cli::TargetArgs) -> String {
    let esc = goodput_report::escape::terminal;
    let Some(i) = words.iter().position(|w| w.contains('\n')) else {
        return esc(&masked_command(words, t));
    };
    let mut shown = words.to_vec();
    shown[i] = "SCRIPT".into();
    let mut o = esc(&masked_command(&shown, t)) + ", SCRIPT:";
    for line in masked_within(&words[i], &secrets(t)).lines() {
        o.push_str("\n      ");
        o.push_str(&esc(line));
    }
    o
}

/// [`masked_command`] of a template as typed (its words as the shell would
/// split them; the text itself where it does not split).
fn masked_template(template: &str, t: &crate::cli::TargetArgs) -> String {
    match shlex::split(template) {
        Some(words) => masked_command(&words, t),
        None => template.to_string(),
    }
}

/// Where the document keeps [`settings`].
const SETTINGS: &str = "measurement_settings";

/// The settings that change what a configuration measures, flag by flag, as
/// the document keeps them for --resume to compare: the template, the SLO,
/// the load, the workload and the rest of how requests are sent and priced.
/// (The grid may grow, and outputs, timeouts to start and stop a server and
/// the live view may change: none changes a point.)
fn settings(a: &SweepArgs, slo: Option<String>) -> serde_json::Map<String, serde_json::Value> {
    fn opt<T: std::fmt::Debug>(v: &Option<T>) -> String {
        v.as_ref().map_or_else(|| "not given".into(), |v| format!("{v:?}"))
    }
    let list = |v: Option<Vec<String>>| v.map_or_else(|| "not given".into(), |v| v.join(","));
    let (w, sh, t, j) = (&a.workload, &a.shape, &a.target, &a.judge);
    let pairs: Vec<(&str, String)> = vec![
        // The client's key and header values masked (a server's --api-key
        // is often the client's), as the document keeps it.
        ("--serve-cmd", masked_template(a.serve.serve_cmd.as_deref().unwrap_or_default(), t)),
        ("--slo", slo.unwrap_or_else(|| "not given".into())),
        ("--attainment", opt(&j.attainment)),
        ("--concurrency", list(a.concurrency.as_ref().map(|c| c.0.iter().map(u64::to_string).collect()))),
        ("--rate", list(a.rate.as_ref().map(|r| r.0.iter().map(f64::to_string).collect()))),
        ("--auto", a.auto.to_string()),
        ("--points", a.points.to_string()),
        ("--max-concurrency", a.max_concurrency.to_string()),
        ("--search-steps", a.search_steps.to_string()),
        ("-n/--requests", opt(&sh.requests)),
        ("--duration", sh.duration.map_or_else(|| "not given".into(), |d| humantime::format_duration(d).to_string())),
        ("--warmup", format!("{:?}", sh.warmup)),
        ("--arrival", format!("{:?}", sh.arrival)),
        ("--burstiness", opt(&sh.burstiness)),
        ("--ramp-up", opt(&sh.ramp_up)),
        ("--turns", opt(&sh.turns)),
        ("--think-time", format!("{:?}", sh.think_time)),
        // A seed drawn afresh differs from run to run by design.
        ("--seed", if sh.seed.drawn { "drawn afresh".into() } else { sh.seed.value.to_string() }),
        ("--cancel-rate", opt(&sh.cancel_rate)),
        ("--cancel-after", opt(&sh.cancel_after)),
        ("--input-tokens", w.input_tokens.as_ref().map_or_else(|| "not given".into(), |d| d.to_string())),
        ("--output-tokens", w.output_tokens.as_ref().map_or_else(|| "not given".into(), |d| d.to_string())),
        ("--preset", opt(&w.preset)),
        ("--shared-prefix-tokens", w.shared_prefix_tokens.to_string()),
        ("--shared-prefix-ratio", w.shared_prefix_ratio.to_string()),
        ("--shared-prefixes", w.shared_prefixes.to_string()),
        ("--ignore-eos", w.ignore_eos.to_string()),
        ("--dataset", opt(&w.dataset)),
        ("--dataset-column", opt(&w.dataset_column)),
        ("--tokenizer", opt(&w.tokenizer)),
        ("--score", opt(&w.score)),
        ("--repeat", w.repeat.to_string()),
        ("--images", opt(&w.images)),
        ("--image-size", format!("{:?}", w.image_size)),
        ("--image-format", format!("{:?}", w.image_format)),
        ("--image-share", w.image_share.to_string()),
        ("--model", opt(&t.model)),
        ("--api", format!("{:?}", t.api)),
        ("--no-stream", t.no_stream.to_string()),
        ("--extra-body", opt(&t.extra_body)),
        ("--timeout", humantime::format_duration(t.timeout).to_string()),
        ("--serve-reset", opt(&a.serve.serve_reset)),
        ("--restart-per-point", a.serve.restart_per_point.to_string()),
        ("--gpus", opt(&j.gpus)),
        ("--gpu-hour-usd", opt(&j.gpu_hour_usd)),
        ("--price", opt(&j.price)),
        ("--config", opt(&j.config)),
        ("--confidence", j.confidence.to_string()),
        ("--until", if a.until.until.is_empty() { "not given".into() } else { a.until.until.join(",") }),
        ("--stop-on-slo", a.until.stop_on_slo.to_string()),
        ("--runs", a.runs.runs.to_string()),
        ("--same-seed", a.runs.same_seed.to_string()),
        ("--no-usage", t.no_usage.to_string()),
        ("--transport", format!("{:?}", t.transport)),
        ("--stamp", format!("{:?}", t.stamp)),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v))).collect()
}

/// Refuses to resume a document measured with other settings: its points
/// and the new ones would sit in one frontier as if alike. (A document
/// written before the settings were kept is compared on its SLO alone.)
fn same_settings(doc: &FrontierResult, now: &serde_json::Map<String, serde_json::Value>, out: &Path) -> Result<()> {
    let then: serde_json::Map<String, serde_json::Value> = match doc.extra.get(SETTINGS) {
        Some(serde_json::Value::Object(m)) => m.clone(),
        _ => {
            let slo = doc.slo.clone().unwrap_or_else(|| "not given".into());
            [("--slo".to_string(), serde_json::Value::String(slo))].into_iter().collect()
        }
    };
    // A seed drawn afresh matches any (the sweep's own line invites giving
    // the drawn one again); a template matches by its words, however spaced
    // or quoted.
    let alike = |k: &str, was: &serde_json::Value, is: &serde_json::Value| match (k, was.as_str(), is.as_str()) {
        ("--seed", Some(a), Some(b)) => a == b || a == "drawn afresh" || b == "drawn afresh",
        ("--serve-cmd", Some(a), Some(b)) => a == b || shlex::split(a).is_some_and(|w| shlex::split(b) == Some(w)),
        _ => was == is,
    };
    for (k, was) in &then {
        let Some(is) = now.get(k) else { continue };
        if !alike(k, was, is) {
            let text = |v: &serde_json::Value| match v.as_str() {
                Some(s) => goodput_report::escape::terminal(s),
                None => goodput_report::escape::terminal(&v.to_string()),
            };
            bail!(
                "--resume: {} was measured with {k} {}, and this sweep gives {k} {}: its points and the new ones \
                 would not compare. Run with the same {k}, or write a new document (another -o, without --resume)",
                out.display(),
                text(was),
                text(is)
            );
        }
    }
    Ok(())
}

/// The arguments' consistency, before any server starts.
fn check(a: &SweepArgs, grid: &[Params]) -> Result<()> {
    // Refused here, not after every server has run.
    if a.output.exports.markdown.is_some() {
        bail!(
            "--markdown: a sweep with --serve-cmd writes a frontier, which renders to the terminal, -o (JSON), --csv \
             and --html; drop --markdown"
        );
    }
    if a.serve.restart_per_point && a.concurrency.is_none() && a.rate.is_none() && a.trace.is_none() {
        bail!(
            "--restart-per-point runs a server per point of a list: give --concurrency, --rate or --trace (not --auto)"
        );
    }
    if let Some(r) = &a.serve.serve_reset {
        if !r.starts_with('/') {
            bail!("--serve-reset takes a path on the server, e.g. /reset_prefix_cache");
        }
    }
    if a.estimate {
        estimate::check_grid(grid)?;
        estimate::check_drafts(a, grid)?;
    }
    if a.serve.serve_ready_timeout.is_zero() {
        bail!("--serve-ready-timeout must be longer than zero");
    }
    // Every configuration's count, gpus= or not: a bad tp beside gpus= had
    // passed here and ended the sweep after the configurations before it.
    for p in grid {
        let ports = match p.get("ports") {
            None => None,
            Some(n) => match n.trim().parse::<u16>() {
                Ok(n @ 1..=MAX_PORTS) => Some(n),
                _ => bail!(
                    "--serve-grid: ports={n} in {} is not a count of ports from 1 to {MAX_PORTS} (how many its server \
                     takes from {{port}} on)",
                    p.id()
                ),
            },
        };
        for u in metrics_urls(p) {
            let filled = fill_ports(&u, 8000);
            if !(filled.starts_with("http://") || filled.starts_with("https://")) || filled.contains(['{', '}']) {
                bail!(
                    "--serve-grid: metrics={} in {}: {u} is not an http:// or https:// URL (its ports given as {{port}} \
                     or {{port+N}}, the server's and the ones after it)",
                    p.get("metrics").unwrap_or_default(),
                    p.id()
                );
            }
            // A port past those the server takes is none of its own.
            if let Some((n, k)) = ports.zip(last_offset(&u)).filter(|&(n, k)| k >= n) {
                bail!(
                    "--serve-grid: metrics={} in {}: {u} names {{port+{k}}}, past the {n} ports its server takes (ports={n}: \
                     {{port}} to {{port+{}}}); name a port of its own, or give ports= the count it takes",
                    p.get("metrics").unwrap_or_default(),
                    p.id(),
                    n - 1
                );
            }
        }
        if let Some(g) = p.get("gpus") {
            if !g.parse::<u32>().is_ok_and(|n| n > 0) {
                bail!("--serve-grid: gpus={g} in {} is not a count of GPUs (1 or more)", p.id());
            }
        }
        estimate::configuration_gpus(p, a.judge.gpus).context("--serve-grid")?;
    }
    Ok(())
}

/// The most ports a configuration's `ports` may give.
const MAX_PORTS: u16 = 1024;

/// How many ports a configuration's server takes from its own on
/// (`ports`, checked before any server starts; 1 where not given).
fn ports_of(p: &Params) -> u16 {
    p.get("ports").and_then(|n| n.trim().parse::<u16>().ok()).filter(|&n| (1..=MAX_PORTS).contains(&n)).unwrap_or(1)
}

/// A configuration's own metrics endpoints (`metrics`, blank-separated),
/// as templates of [`fill_ports`].
fn metrics_urls(p: &Params) -> impl Iterator<Item = String> + '_ {
    p.get("metrics").into_iter().flat_map(|m| m.split_whitespace().map(str::to_string))
}

/// `{port}` as `port`, and `{port+N}` as the port N after it (a server's
/// own and those a script of several servers puts after it).
fn fill_ports(template: &str, port: u16) -> String {
    offsets_filled(template, |n| port.checked_add(n))
}

/// The highest N of `{port+N}` in `template` (0 for `{port}`), if any.
fn last_offset(template: &str) -> Option<u16> {
    let mut last = None;
    offsets_filled(template, |n| {
        last = last.max(Some(n));
        None
    });
    last
}

/// `template` with each `{port}` and `{port+N}` as `port(N)` gives it
/// (left as written where it gives none).
fn offsets_filled(template: &str, mut port: impl FnMut(u16) -> Option<u16>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{port") {
        out.push_str(&rest[..open]);
        let tail = &rest[open + 5..];
        let Some(close) = tail.find('}') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let n = match tail[..close].trim() {
            "" => Some(0),
            more => more.strip_prefix('+').and_then(|n| n.trim().parse::<u16>().ok()),
        };
        match n.and_then(&mut port) {
            Some(p) => out.push_str(&p.to_string()),
            None => out.push_str(&rest[open..open + 5 + close + 1]),
        }
        rest = &tail[close + 1..];
    }
    out.push_str(rest);
    out
}

/// `--dry-run`: each configuration's command, as it would start on a
/// port goodput picks (shown as 8000), its credentials masked as
/// [`masked_command`] masks them, and the sweep's longest time; nothing
/// started, nothing written.
fn dry_run(a: &SweepArgs, template: &Template, grid: &[Params]) -> String {
    let mut o = format!(
        "dry run: {} configuration{}, none started (each on a free port goodput picks, shown here as 8000, and \
         the ones after it its ports= takes):\n",
        grid.len(),
        if grid.len() == 1 { "" } else { "s" }
    );
    for (i, p) in grid.iter().enumerate() {
        // Shown as the "starting:" line shows a server's command: its
        // credentials masked.
        let command = terminal_command(&template.fill(p, 8000), &a.target);
        let id = goodput_report::escape::terminal(&p.id());
        // A server of several ports gets them all free.
        let ports = match ports_of(p) {
            1 => String::new(),
            n => format!(" (ports 8000 to {})", 8000 + n - 1),
        };
        o.push_str(&format!("  {}/{} {id}{ports}: {command}", i + 1, grid.len()));
        o.push('\n');
    }
    if a.estimate {
        o.push_str("--estimate's predictions are not run either: drop --dry-run to run them, then the servers\n");
    }
    o.push_str(&upper_bound(a, grid.len()));
    o.push('\n');
    o
}

/// The most the sweep can take, in words: each configuration's wait for
/// readiness, its points, and its stop.
fn upper_bound(a: &SweepArgs, configs: usize) -> String {
    let s = &a.serve;
    let starts = if s.restart_per_point {
        a.concurrency
            .as_ref()
            .map(|c| c.0.len())
            .or(a.rate.as_ref().map(|r| r.0.len()))
            .or(a.trace_speed.as_ref().map(Vec::len))
            .unwrap_or(1)
    } else {
        1
    };
    let per_start = s.serve_ready_timeout + s.serve_stop_grace + PORT_WAIT;
    let points = super::steady::most_duration(a);
    let s = if configs == 1 { "" } else { "s" };
    let fmt = |d: Duration| goodput_core::util::duration_text(Duration::from_secs(d.as_secs()));
    match points {
        Some(p) => {
            let each = per_start * starts as u32 + p;
            format!(
                "{configs} configuration{s}: at most {} each ({} to start and stop each server, {} of points), {} in \
                 all; a server that is ready sooner takes less",
                fmt(each),
                fmt(per_start),
                fmt(p),
                fmt(each * configs as u32)
            )
        }
        None => format!(
            "{configs} configuration{s}: at most {} each to start and stop the server, plus its points (their length \
             is not known ahead with -n; pass --duration to bound it)",
            fmt(per_start * starts as u32)
        ),
    }
}

impl Ctx {
    /// Starts, sweeps and stops the server of configuration `i`: once, or
    /// once per point with --restart-per-point.
    async fn configuration(&self, i: usize, of: usize, params: &Params, doc: &mut FrontierResult) -> Result<Outcome> {
        let id = params.id();
        let base = format!("{:02}-{}", i + 1, params.slug());
        goodput_core::tell!("\n── configuration {}/{of}: {} ──", i + 1, goodput_report::escape::terminal(&id));
        // As the prediction counts them: gpus, else tp × pp × dp.
        let (gpus, mismatch) = estimate::configuration_gpus(params, self.args.judge.gpus)?;
        if let Some(m) = mismatch {
            goodput_core::tell!("warning: {m}");
            if !doc.notes.contains(&m) {
                doc.notes.push(m);
            }
        }
        let segments: Vec<Option<Segment>> = if self.args.serve.restart_per_point {
            let loads: Vec<Segment> = match (&self.args.concurrency, &self.args.rate, &self.args.trace) {
                (Some(c), _, _) => c.0.iter().map(|&c| Segment::Load(Load::Concurrency(c))).collect(),
                (_, Some(r), _) => r.0.iter().map(|&r| Segment::Load(Load::Rate(r))).collect(),
                (_, _, Some(_)) => {
                    let speeds = self.args.trace_speed.clone().unwrap_or_else(|| vec![1.0]);
                    speeds.into_iter().map(Segment::TraceSpeed).collect()
                }
                _ => Vec::new(),
            };
            loads.into_iter().map(Some).collect()
        } else {
            vec![None]
        };
        let mut swept: Vec<SweepPoint> = Vec::new();
        let mut failure = None;
        for (k, load) in segments.into_iter().enumerate() {
            let name = if self.args.serve.restart_per_point { format!("{base}.point{k:02}") } else { base.clone() };
            let mut part = self.server_part(params, gpus, &name, load, k as u64, doc).await?;
            if self.port_was_taken(&part, params, &name, doc)? {
                part = self.server_part(params, gpus, &name, load, k as u64, doc).await?;
            }
            match part {
                Part::Points(p) => swept.extend(p),
                Part::Failed(f) => {
                    failure = Some(f);
                    break;
                }
                Part::Interrupted => return Ok(Outcome::Interrupted),
            }
        }
        let mut c = FrontierConfig::new(id, params.map(), None, gpus, self.args.judge.gpu_hour_usd);
        if let Some(f) = failure {
            goodput_core::tell!(
                "configuration {} failed: {}",
                goodput_report::escape::terminal(&c.id),
                goodput_report::escape::terminal_lines(&f.error)
            );
            c.status = ConfigStatus::Failed;
            c.error = Some(f.error);
            c.exit_status = f.status;
            c.log_tail = Some(log_tail(&f.log, LOG_TAIL_LINES));
            c.exited_during = f.exited_during;
            return Ok(Outcome::Done(Box::new(c)));
        }
        // In the order of rising load: the search's points come last from the sweep.
        let level = |p: &SweepPoint| match p.load {
            Load::Concurrency(c) => c as f64,
            Load::Rate(r) => r,
        };
        swept.sort_by(|a, b| level(a).total_cmp(&level(b)));
        c.points = swept.iter().map(|p| points::frontier_point(p, gpus, self.percentile, self.attainment)).collect();
        Ok(Outcome::Done(Box::new(c)))
    }

    /// Whether server `name`'s `part` failed because one of its ports was
    /// taken (it exited before it was ready, its log saying the address is
    /// in use), so that it is started once more on other ports: the ports
    /// are checked free and the server binds them a moment later, and
    /// another program can bind one between. The first try's log is then
    /// kept beside (`NAME.port-taken.log`), and the document notes the
    /// second start.
    fn port_was_taken(&self, part: &Part, params: &Params, name: &str, doc: &mut FrontierResult) -> Result<bool> {
        let Part::Failed(f) = part else { return Ok(false) };
        if !f.before_ready || !process::says_port_taken(&log_tail(&f.log, 200)) {
            return Ok(false);
        }
        let kept = self.logs.join(format!("{name}.port-taken.log"));
        std::fs::rename(&f.log, &kept)
            .with_context(|| format!("cannot keep the log {} as {}", f.log.display(), kept.display()))?;
        let note = format!(
            "{}: the server exited before it was ready because one of its ports was taken between goodput's check \
             and its bind (its log: {}); started once more on other ports",
            goodput_report::escape::terminal(&params.id()),
            kept.display()
        );
        goodput_core::tell!("warning: {note}");
        doc.notes.push(note);
        Ok(true)
    }

    /// One server's life: start, ready, its points (all of them, or `load`
    /// alone), stop.
    async fn server_part(
        &self,
        params: &Params,
        gpus: u32,
        name: &str,
        load: Option<Segment>,
        first_run: u64,
        doc: &mut FrontierResult,
    ) -> Result<Part> {
        let ports = ports_of(params);
        let port = process::free_ports(ports)?;
        let argv = self.template.fill(params, port);
        let log = self.logs.join(format!("{name}.log"));
        if !self.args.output.quiet {
            goodput_core::tell!("starting: {} (log: {})", terminal_command(&argv, &self.args.target), log.display());
        }
        let failure = |error: String, status: Option<i32>| Failure {
            error,
            status,
            log: log.clone(),
            exited_during: None,
            before_ready: false,
        };
        let failed = |error: String, status: Option<i32>| Ok(Part::Failed(failure(error, status)));
        let mut server = match Server::start(&argv, port, &log, self.args.serve.serve_log_max_mib << 20) {
            Ok(s) => s,
            Err(e) => return failed(format!("{e:#}"), None),
        };
        let part: Result<Part> = async {
            let base = format!("http://127.0.0.1:{port}");
            let s = &self.args.serve;
            let ready = tokio::select! {
                r = ready(&base, &server, s.serve_ready_timeout) => r,
                () = self.interrupt.wait() => Ready::Interrupted,
            };
            match ready {
                Ready::Yes => {}
                Ready::Interrupted => {
                    self.stop(&mut server).await;
                    return Ok(Part::Interrupted);
                }
                Ready::Exited => {
                    let st = server.reap().await?;
                    return Ok(Part::Failed(Failure {
                        before_ready: true,
                        ..failure(
                            format!("the server exited before it was ready ({})", status_text(st)),
                            status_code(st),
                        )
                    }));
                }
                Ready::TimedOut(last) => {
                    let st = self.stop(&mut server).await;
                    return failed(
                        format!(
                            "the server was not ready within {} (--serve-ready-timeout; last: {last})",
                            goodput_core::util::duration_text(s.serve_ready_timeout)
                        ),
                        st.and_then(status_code),
                    );
                }
            }
            // The server's sweep stops when goodput is stopped, or when the
            // server exits.
            let interrupt = self.interrupt.child();
            let watch = {
                let (i, pid) = (interrupt.clone(), server.pid());
                tokio::spawn(async move {
                    loop {
                        if process::exited(pid) {
                            i.end();
                            return true;
                        }
                        if i.stopped() {
                            return false;
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                })
            };
            let mut args = self.args.clone();
            // The server's own endpoint beside an exporter's: {port} is this
            // server's. A configuration of several servers names theirs
            // (`metrics`), which stand for the one in front of them.
            args.metrics.metrics_url.extend(metrics_urls(params).filter(|_| !args.metrics.no_metrics));
            for u in &mut args.metrics.metrics_url {
                *u = fill_ports(u, port);
            }
            args.target.url = Some(base);
            args.target.wait_ready = None;
            args.serve.serve_cmd = None;
            args.judge.gpus = Some(gpus);
            args.output.output = Some(self.logs.join(format!("{name}.sweep.json")));
            args.output.exports = Default::default();
            args.output.records = args.output.records.as_deref().map(|r| per_config(r, name));
            if let Some(l) = load {
                match l {
                    Segment::Load(Load::Concurrency(c)) => args.concurrency = Some(CountList(vec![c])),
                    Segment::Load(Load::Rate(r)) => args.rate = Some(RateList(vec![r])),
                    Segment::TraceSpeed(speed) => args.trace_speed = Some(vec![speed]),
                }
                args.search_steps = 0;
            }
            let shared = Shared { interrupt: Some(interrupt.clone()), reset: s.serve_reset.clone(), first_run };
            let measured = async {
                let mut sw = start(args, shared).await?;
                sw.measure().await?;
                Ok::<_, anyhow::Error>(sw)
            };
            // Tended each second meanwhile: its orphans that end are reaped
            // as they go, not kept as zombies until it is stopped. Its tree
            // is read on a blocking thread, the measuring going on.
            tokio::pin!(measured);
            let mut tending = tokio::time::interval(Duration::from_secs(1));
            let mut reading: Option<tokio::task::JoinHandle<process::TreeReading>> = None;
            let res = loop {
                tokio::select! {
                    r = &mut measured => break r,
                    _ = tending.tick(), if reading.is_none() => {
                        reading = Some(tokio::task::spawn_blocking(server.reading()));
                    }
                    read = async { reading.as_mut().expect("a reading under way").await }, if reading.is_some() => {
                        reading = None;
                        if let Ok(read) = read {
                            server.tend_with(read);
                        }
                    }
                }
            };
            // Whether the server ended the sweep by exiting; the watch ends
            // either way. (A finished watch is not enough: it also ends when
            // goodput is stopped.)
            let died = process::exited(server.pid()) || {
                interrupt.end();
                watch.await.unwrap_or(false)
            };
            if died {
                let st = server.reap().await?;
                // The point it exited during is not done, though the sweep
                // recorded what it had of it: the first one cut short, else
                // the last recorded (the exit may have ended it before the
                // watch saw it), else the first to run.
                let points = res.as_ref().map_or(&[][..], |sw| &sw.points[..]);
                let during = points.iter().position(|p| p.result.interrupted).unwrap_or(points.len().saturating_sub(1));
                // With no point recorded: this part's own load, else the
                // list's first, else --auto's first (its baseline of one user).
                // A trace's speed is a rate only once its trace is read: with
                // no point recorded, the replay is named by its speed.
                let (own, speed) = match load {
                    Some(Segment::Load(l)) => (Some(l), None),
                    Some(Segment::TraceSpeed(s)) => (None, Some(s)),
                    None => (None, first_speed(&self.args)),
                };
                let a = &self.args;
                let load = points.get(during).map(|p| p.load).or(own).or_else(|| {
                    a.concurrency
                        .as_ref()
                        .and_then(|c| c.0.first().map(|&c| Load::Concurrency(c)))
                        .or_else(|| a.rate.as_ref().and_then(|r| r.0.first().map(|&r| Load::Rate(r))))
                        .or(a.trace.is_none().then_some(Load::Concurrency(1)))
                });
                let done = during.min(points.len());
                let at = match (load, speed) {
                    (Some(l), _) => format!(" at {}", l.label()),
                    (None, Some(s)) => format!(" replaying the trace at {s}×"),
                    (None, None) => " replaying the trace".into(),
                };
                return Ok(Part::Failed(Failure {
                    error: format!(
                        "the server exited during the point{at} ({}), {done} point{} done before it; --resume runs \
                         the configuration again",
                        status_text(st),
                        if done == 1 { "" } else { "s" },
                    ),
                    status: status_code(st),
                    log: log.clone(),
                    exited_during: load,
                    before_ready: false,
                }));
            }
            if self.interrupt.stopped() {
                self.stop(&mut server).await;
                return Ok(Part::Interrupted);
            }
            let stopped = self.stop(&mut server).await;
            let sw = match res {
                Ok(sw) => sw,
                Err(e) => return failed(format!("{e:#}"), stopped.and_then(status_code)),
            };
            if doc.model.is_empty() {
                doc.model = sw.target.model.clone();
                doc.workload = sw.workload_config.clone();
                doc.sessions = crate::setup::sessions_config(&sw.args.shape);
            }
            Ok(Part::Points(sw.points.clone()))
        }
        .await;
        // The log is whole once its copy has ended: before its tail is read.
        let dropped = server.log_dropped().await;
        if dropped > 0 {
            let note = format!(
                "{}: the server wrote {} more than its log keeps (--serve-log-max {} MiB): {} holds its first \
                 and last lines",
                goodput_report::escape::terminal(&params.id()),
                process::amount(dropped),
                self.args.serve.serve_log_max_mib,
                log.display()
            );
            goodput_core::tell!("warning: {note}");
            doc.notes.push(note);
        }
        part
    }

    /// Stops a server, saying so when it would not go; gives its exit status.
    /// A stop signal cuts the wait short: the second when the sweep was
    /// stopped already, else the first (the first had been told to kill it
    /// now, and the wait had gone on).
    async fn stop(&self, server: &mut Server) -> Option<std::process::ExitStatus> {
        let interrupt = self.interrupt.clone();
        let again = interrupt.stopped();
        let aborted = move || interrupt.aborted() || (!again && interrupt.stopped());
        match server.stop_unless(self.args.serve.serve_stop_grace, PORT_WAIT, &aborted, again).await {
            Ok(s) => Some(s),
            Err(e) => {
                goodput_core::tell!("warning: {e:#}");
                None
            }
        }
    }
}

/// The first speed a sweep replays its trace at (1 where none is given);
/// none without a trace.
fn first_speed(a: &SweepArgs) -> Option<f64> {
    a.trace.as_ref().map(|_| a.trace_speed.as_ref().and_then(|s| s.first().copied()).unwrap_or(1.0))
}

/// The point one server of `--restart-per-point` runs: a load of the
/// list, or a speed of the trace's.
#[derive(Debug, Clone, Copy)]
enum Segment {
    Load(Load),
    TraceSpeed(f64),
}

enum Part {
    Points(Vec<SweepPoint>),
    Failed(Failure),
    Interrupted,
}

enum Ready {
    Yes,
    Exited,
    TimedOut(String),
    Interrupted,
}

/// Waits for the server's /health (or, where it has none, /v1/models) to
/// answer 200, up to `timeout`, watching that it does not exit meanwhile.
/// Each probe is bounded by [`PROBE_TIMEOUT`] and the deadline, and raced
/// against the server's exit: a server that takes connections and never
/// answers them fails at the deadline as one that refuses them does.
async fn ready(base: &str, server: &Server, timeout: Duration) -> Ready {
    use goodput_load::{Client, ClientConfig};
    let probe = Client::new(ClientConfig::probe(base.to_string(), PROBE_TIMEOUT), None);
    let http = match &probe {
        Ok(c) => c.http(),
        Err(e) => return Ready::TimedOut(format!("cannot build an HTTP client: {e}")),
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let exited = || async {
        while !server.exited() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    // One GET, given up at the probe's bound or the deadline, whichever is sooner.
    let get = |path: &'static str| {
        let req = http.get(format!("{base}{path}")).send();
        let now = tokio::time::Instant::now();
        let until = deadline.min(now + PROBE_TIMEOUT);
        let bound = goodput_core::util::duration_text(Duration::from_millis((until - now).as_millis() as u64));
        async move {
            match tokio::time::timeout_at(until, req).await {
                Ok(r) => r.map_err(|e| if e.is_connect() { "connection refused".to_string() } else { e.to_string() }),
                Err(_) => Err(format!("{path} gave no answer within {bound}")),
            }
        }
    };
    loop {
        if server.exited() {
            return Ready::Exited;
        }
        let attempt = async {
            match get("/health").await {
                Ok(r) if r.status().is_success() => Ok(()),
                Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND => match get("/v1/models").await {
                    Ok(r) if r.status().is_success() => Ok(()),
                    Ok(r) => Err(format!("/v1/models answered HTTP {}", r.status())),
                    Err(e) => Err(e),
                },
                Ok(r) => Err(format!("/health answered HTTP {}", r.status())),
                Err(e) => Err(e),
            }
        };
        let last = tokio::select! {
            r = attempt => match r {
                Ok(()) => return Ready::Yes,
                Err(e) => e,
            },
            () = exited() => return Ready::Exited,
        };
        if tokio::time::Instant::now() >= deadline {
            return Ready::TimedOut(last);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `records.jsonl` → `records.NAME.jsonl`.
fn per_config(p: &Path, name: &str) -> PathBuf {
    let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "records".into());
    let ext = p.extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_else(|| "jsonl".into());
    p.with_file_name(format!("{stem}.{name}.{ext}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{port}` and `{port+N}` are the server's port and the ones after it;
    /// anything else is left as written (and refused by the grid's check).
    #[test]
    fn a_metrics_template_names_the_ports_of_several_servers() {
        assert_eq!(fill_ports("http://127.0.0.1:{port}/metrics", 8000), "http://127.0.0.1:8000/metrics");
        assert_eq!(fill_ports("http://h:{port+2}/m http://h:{port + 3}/m", 41000), "http://h:41002/m http://h:41003/m");
        assert_eq!(fill_ports("http://h:{ports}/m {port+x} {port", 1), "http://h:{ports}/m {port+x} {port");
        assert_eq!(fill_ports("http://h:{port+2}/m", u16::MAX), "http://h:{port+2}/m");
        assert_eq!(last_offset("http://h:{port+2}/m http://h:{port}/m {port+x}"), Some(2));
        assert_eq!(last_offset("http://h:{port}/m"), Some(0));
        assert_eq!(last_offset("http://h:9/m {ports}"), None);
    }

    /// Within a script, a credential is masked where its word stands (a
    /// quoted value with blanks whole), and nothing else is touched
    /// (blanks, quotes and line breaks included).
    #[test]
    fn a_scripts_credentials_are_masked_within_it() {
        let secret = |w: &str| w == "sk-client";
        let script = "HF_TOKEN=hf_1 vllm serve m --api-key 'sk-2' \\\n  --x \"sk-client\"\nexport AUTH_TOKEN='t 3'\nrun --port \"$0\"";
        assert_eq!(
            masked_within(script, &secret),
            "HF_TOKEN=*** vllm serve m --api-key *** \\\n  --x ***\nexport AUTH_TOKEN=***\nrun --port \"$0\""
        );
    }
}
