//! `goodput merge`: the shards of one run (`bench --shard I/N`) put back
//! together. Each shard's records are placed on one clock by its own
//! wall-clock start, and everything is recomputed from them through
//! `assemble` and the server's scrapes, as for one process (docs/shards.md).

use crate::cli::{MergeArgs, OutputArgs};
use crate::{common, output};
use anyhow::{anyhow, bail, Result};
use goodput_core::analysis::assemble::{attach_server_side, ServerSide};
use goodput_core::analysis::cost::CostConfig;
use goodput_core::doc::shard::{self, MergeInfo, MergedShard};
use goodput_core::{ClientCost, RequestRecord, RunResult};
use goodput_report::read::Document;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A shard's result, checked, and where its records are.
struct Shard {
    path: PathBuf,
    run: RunResult,
    records_path: String,
    records: ShardRecords,
}

/// A shard's records: those its result held (`--include-requests`), or
/// its records file, read a record at a time as they are merged.
enum ShardRecords {
    Held(Vec<RequestRecord>),
    File(PathBuf),
}

pub fn merge(a: MergeArgs) -> Result<ExitCode> {
    let mut outputs = vec![("--output", a.output.as_deref()), ("--records", a.records.as_deref())];
    outputs.extend(a.exports.outputs());
    let mut inputs: Vec<(&str, &Path)> = a.shards.iter().map(|s| ("a shard's result", s.as_path())).collect();
    inputs.extend(a.judge.config.as_deref().map(|p| ("--config", p)));
    // A merge never writes over a shard's own files: checked before a shard is read.
    output::distinct_files(&inputs, &outputs)?;
    // It writes what bench does: a result document and records.
    if let Some(p) = &a.output {
        output::check_named_as_written(p, "--output")?;
    }
    if let Some(p) = &a.records {
        output::check_named_as_written(p, "--records")?;
    }
    let mut runs = Vec::new();
    for path in &a.shards {
        runs.push((path.clone(), read_shard(path)?));
    }
    let mut shards = Vec::new();
    for (path, mut run) in runs {
        let (records_path, records) = shard_records(&path, &mut run)?;
        shards.push(Shard { path, run, records_path, records });
    }
    // ... and, once they are known, the shards' records files.
    inputs.extend(shards.iter().filter_map(|s| match &s.records {
        ShardRecords::File(p) => Some(("a shard's records", p.as_path())),
        ShardRecords::Held(_) => None,
    }));
    output::distinct_files(&inputs, &outputs)?;
    if let Some(p) = &a.output {
        output::check_file(p, "--output")?;
    }
    if let Some(p) = &a.records {
        output::check_file(p, "--records")?;
    }
    output::check_exports(&a.exports)?;
    let (count, missing) = check_one_run(&shards, a.allow_partial)?;
    shards.sort_by_key(|s| s.run.shard.as_ref().map_or(0, |i| i.index));
    let merged = merged_run(&a, shards, count, missing)?;
    let MergedRun { mut result, records } = merged;
    if let Some(p) = &a.records {
        goodput_report::read::records::write_records(p, &result.run_id, &records)?;
        goodput_core::tell!("records written to {}", p.display());
    }
    let mut out = OutputArgs::rewriting(
        result.config.percentiles.clone().unwrap_or_default(),
        a.output.clone(),
        a.exports.clone(),
    );
    out.records = a.records.clone();
    output::finish(&mut result, &out, &a.judge, &records)
}

/// A shard's result document, refused when it is not one.
fn read_shard(path: &Path) -> Result<RunResult> {
    match goodput_report::read::read_document(path).map_err(|e| anyhow!(e))? {
        Document::Run(run) if run.shard.is_some() => Ok(*run),
        Document::Run(_) => bail!(
            "{} is not a shard's result (it has no shard block): merge takes the results of bench --shard I/N",
            path.display()
        ),
        Document::Sweep(_) => bail!("{} is a sweep: merge takes the results of bench --shard I/N", path.display()),
        Document::Frontier(_) => {
            bail!("{} is a frontier: merge takes the results of bench --shard I/N", path.display())
        }
    }
}

/// Checks that the shards are of one run, each index once: the number of
/// shards and the indexes missing (refused unless `allow_partial`).
fn check_one_run(shards: &[Shard], allow_partial: bool) -> Result<(u32, Vec<u32>)> {
    let Some(Shard { path: first_path, run: first, .. }) = shards.first() else {
        bail!("give the shards' result files to merge")
    };
    let info = |r: &RunResult| r.shard.clone().expect("read_shard keeps shards only");
    for Shard { path, run, .. } in &shards[1..] {
        let (a, b) = (info(first), info(run));
        let (ta, tb) = (&first.target, &run.target);
        let served = |t: &goodput_core::doc::result::Target| (t.model.clone(), t.api.clone(), t.embedded);
        if served(ta) != served(tb) {
            bail!(
                "{} and {} are shards of different runs: one loaded {} ({} over {}), the other {} ({} over {}). \
                 Merge the shards of one run (the same model and API in every shard)",
                first_path.display(),
                path.display(),
                ta.url,
                ta.model,
                ta.api,
                tb.url,
                tb.model,
                tb.api
            );
        }
        if let Some(why) = shard::difference((&a, &first.config), (&b, &run.config)) {
            bail!(
                "{} and {} are shards of different runs: {why}. Merge the shards of one run (the same flags, \
                 --shard count and --start-at in every shard)",
                first_path.display(),
                path.display()
            );
        }
    }
    let count = info(first).count;
    if count > crate::cli::MAX_SHARDS {
        bail!(
            "{} says it is one of {count} shards, and a run splits into at most {} (--shard): it was edited or \
             damaged; give the shards' results as bench wrote them",
            first_path.display(),
            crate::cli::MAX_SHARDS
        );
    }
    let mut seen: Vec<Option<&Path>> = vec![None; count as usize];
    for Shard { path, run, .. } in shards {
        let i = info(run).index;
        match seen.get_mut(i as usize) {
            Some(Some(other)) => bail!(
                "shard {i}/{count} is given twice ({} and {}): give each shard's result once",
                other.display(),
                path.display()
            ),
            Some(slot) => *slot = Some(path),
            None => bail!("{} says it is shard {i} of {count}, which cannot be", path.display()),
        }
    }
    let missing: Vec<u32> = (0..count).filter(|i| seen[*i as usize].is_none()).collect();
    if !missing.is_empty() && !allow_partial {
        bail!(
            "{} of the {count} shards {} missing ({}): give every shard's result, or --allow-partial to merge \
             what is there",
            missing.len(),
            if missing.len() == 1 { "is" } else { "are" },
            missing.iter().map(|i| format!("{i}/{count}")).collect::<Vec<_>>().join(", ")
        );
    }
    Ok((count, missing))
}

/// A shard's records: those its result holds (--include-requests), taken
/// out of it, or its records file, where the shard wrote it or else beside
/// its result (JSON Lines or Parquet), to be read as they are merged.
fn shard_records(path: &Path, run: &mut RunResult) -> Result<(String, ShardRecords)> {
    if let Some(recs) = run.requests.take() {
        return Ok((path.display().to_string(), ShardRecords::Held(recs)));
    }
    let info = run.shard.as_ref().expect("read_shard keeps shards only");
    let Some(given) = info.records.as_deref() else {
        bail!(
            "{} (shard {}/{}) names no records file: rerun the shard with --records FILE",
            path.display(),
            info.index,
            info.count
        );
    };
    let given = PathBuf::from(given);
    let beside = path.parent().unwrap_or(Path::new(".")).join(given.file_name().unwrap_or_default());
    let Some(found) = [given.clone(), beside.clone()].into_iter().find(|p| p.is_file()) else {
        // Each place once, however the two are spelled: a shard that wrote
        // its records beside its result had read "looked for s1.jsonl and
        // s1.jsonl" (and `./s1.jsonl` beside an absolute path, both).
        let looked = if crate::output::same_place(&given, &beside) {
            given.display().to_string()
        } else {
            format!("{} and {}", given.display(), beside.display())
        };
        bail!(
            "the records of shard {}/{} ({}) are not there: looked for {looked}. Copy the shard's records file \
             beside its result",
            info.index,
            info.count,
            path.display()
        );
    };
    Ok((found.display().to_string(), ShardRecords::File(found)))
}

/// The request ids met so far across the shards being merged, each with
/// where it was read: the shards of one run number their requests apart
/// (docs/shards.md), so an id met twice is a shard's records given twice or
/// edited (a merge had written such a run, and `report` then refused it).
#[derive(Default)]
struct SeenIds(std::collections::HashMap<u64, String>);

impl SeenIds {
    fn check(&mut self, id: u64, at: impl FnOnce() -> String) -> Result<()> {
        use std::collections::hash_map::Entry;
        match self.0.entry(id) {
            Entry::Occupied(first) => bail!(
                "request {id} is in {} and again in {}: the shards of one run number their requests apart, so these \
                 records are one shard's given twice, or edited; give each shard's own records",
                first.get(),
                at()
            ),
            Entry::Vacant(slot) => {
                slot.insert(at());
                Ok(())
            }
        }
    }
}

impl ShardRecords {
    /// Each record, placed `by` later, onto `out`; how many there were.
    /// A file's are read one at a time and checked to be of run `run_id`;
    /// every record's request is checked to be met once across all shards
    /// (`seen`), and its times to stay on the merged clock.
    fn move_into(
        self,
        out: &mut Vec<RequestRecord>,
        by: std::time::Duration,
        s: &Shard,
        seen: &mut SeenIds,
    ) -> Result<u64> {
        use goodput_report::read::records::{check_records_belong, RecordsReader};
        let before = out.len();
        // Made only when a record is late: it had been formatted for every
        // record (with the reservation below, an eighth to a fifth of a
        // merge's CPU).
        let late = |id: u64| {
            anyhow!(
                "{} (shard started at {} s since the Unix epoch) puts request {} {} s after the merged clock's start, \
                 past the {}-year horizon of a run's clock: its started_unix_s was edited or damaged; give the shard's \
                 result as bench wrote it",
                s.path.display(),
                goodput_core::util::number_text(s.run.started_unix_s),
                id,
                goodput_core::util::number_text(by.as_secs_f64()),
                goodput_core::HORIZON.as_secs() / (365 * 24 * 3600)
            )
        };
        match self {
            ShardRecords::Held(recs) => {
                for (i, r) in recs.into_iter().enumerate() {
                    seen.check(r.id, || format!("{} (record {} it holds)", s.path.display(), i + 1))?;
                    let id = r.id;
                    out.push(shard::shifted(r, by).ok_or_else(|| late(id))?);
                }
            }
            ShardRecords::File(path) => {
                let mut reader = RecordsReader::open(&path)?;
                while let Some(r) = reader.next() {
                    let r = r?;
                    check_records_belong(std::slice::from_ref(&r), &s.run.run_id, &path)?;
                    let (unit, at) = reader.position();
                    seen.check(r.id, || format!("{} {unit} {at}", path.display()))?;
                    let id = r.id;
                    out.push(shard::shifted(r, by).ok_or_else(|| late(id))?);
                }
            }
        }
        Ok((out.len() - before) as u64)
    }
}

struct MergedRun {
    result: RunResult,
    records: Vec<RequestRecord>,
}

/// The shards' records on one clock and the result recomputed from them.
fn merged_run(a: &MergeArgs, mut shards: Vec<Shard>, count: u32, missing: Vec<u32>) -> Result<MergedRun> {
    let starts: Vec<f64> = shards.iter().map(|s| s.run.started_unix_s).collect();
    let offsets = shard::offsets(&starts);
    let start_at = shards[0].run.shard.as_ref().and_then(|s| s.start_at_unix_s);
    // A shard waits for --start-at before its clock begins: one that began
    // well before it (an hour had merged into a window of 3,607 s, every
    // rate 500 times low) was edited, or its clock stepped back meanwhile.
    if let Some(at) = start_at {
        if let Some(s) = shards.iter().find(|s| s.run.started_unix_s < at - EARLY_START_S) {
            bail!(
                "{} began {:.3} s before the run's --start-at ({}), which a shard that waited for it cannot: its \
                 started_unix_s was edited or damaged, or its machine's clock stepped back during the wait; give \
                 the shard's result as bench wrote it, or rerun that shard",
                s.path.display(),
                at - s.run.started_unix_s,
                goodput_core::util::number_text(at)
            );
        }
    }
    let first_start = starts.iter().copied().fold(f64::INFINITY, f64::min);
    let last_start = starts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut merged_shards = Vec::new();
    // Every shard's records, and no more, are held at once: assemble and
    // the diagnoses take them together.
    let mut records = Vec::new();
    // Room for the records the shards count, as `report` reserves a run's
    // (`room_for`); a reservation the allocator refuses is only a lost hint.
    let room = shards.iter().map(|s| match &s.records {
        ShardRecords::Held(recs) => recs.len(),
        ShardRecords::File(path) => goodput_report::read::records::room_for(path, s.run.summary.requests.recorded()),
    });
    let _ = records.try_reserve_exact(room.fold(0usize, usize::saturating_add));
    let mut seen = SeenIds::default();
    for (s, by) in shards.iter_mut().zip(&offsets) {
        let held = std::mem::replace(&mut s.records, ShardRecords::Held(Vec::new()));
        let requests = held.move_into(&mut records, *by, s, &mut seen)?;
        // A records file cut at a line's end had been merged as it was,
        // its missing requests dropped without a word.
        let counted = &s.run.summary.requests;
        let expected = counted.recorded();
        if requests != expected {
            bail!(
                "{} holds {requests} records, where its shard's result {} says {expected} requests were sent ({} \
                 measured, {} warm-up): the records are cut short or not that shard's; restore them from the run",
                s.records_path,
                s.path.display(),
                counted.sent,
                counted.warmup
            );
        }
        let info = s.run.shard.as_ref().expect("read_shard keeps shards only");
        merged_shards.push(MergedShard {
            index: info.index,
            result: s.path.display().to_string(),
            records: s.records_path.clone(),
            run_id: s.run.run_id.clone(),
            started_unix_s: s.run.started_unix_s,
            start_offset_s: s.run.started_unix_s - start_at.unwrap_or(first_start),
            requests,
            interrupted: s.run.interrupted,
        });
    }
    // In place (a stable sort would take half as much again): the ids of
    // one run's shards are distinct, so the order is the same each time.
    records.sort_unstable_by_key(|r| (r.end, r.id));
    let first = &shards[0].run;
    check_same_judging(a, &shards)?;
    let percentiles = match &a.percentiles {
        Some(p) => p.0.clone(),
        None => first.summary.ttft_ms.percentiles.iter().map(|(p, _)| *p).collect(),
    };
    if a.judge.gpu_hour_usd.is_none() && a.judge.config.is_none() && a.judge.price.is_none() {
        // The first shard's saved price prices the merge: checked as the flag is.
        crate::setup::check_saved_prices(first, &shards[0].path)?;
    }
    let opts = crate::setup::saved_options(first, &a.judge, &percentiles)?;
    a.judge.check_attainment_applies(opts.slo.as_ref())?;
    let mut config = first.config.clone();
    config.percentiles = Some(percentiles);
    config.judge = Some(crate::setup::judge_config(&opts));
    let run_id = goodput_report::read::records::new_run_id();
    let mut result = goodput_core::analysis::assemble::assemble(
        goodput_core::analysis::assemble::Assembly {
            tool: common::tool(),
            kind: "bench",
            run_id: run_id.clone(),
            started_unix_s: first_start,
            interrupted: shards.iter().any(|s| s.run.interrupted),
            config,
            target: first.target.clone(),
            include_requests: false,
        },
        &records,
        &opts,
    );
    // The server's side from the scrapes of the first shard that took them,
    // on the merged clock.
    let load = goodput_core::prometheus::scrape::ClientLoad::of(first.config.load.as_ref());
    let scraped =
        shards.iter().zip(&offsets).find(|(s, _)| s.run.server_signals.as_ref().is_some_and(|g| !g.samples.is_empty()));
    let scrapes_from = match scraped {
        Some((s, by)) => {
            let mut signals = s.run.server_signals.clone().expect("found with signals");
            for sample in &mut signals.samples {
                sample.t += *by;
            }
            if let Some(w) = scrapes_end_early(&signals, &result.window, &records) {
                result.warnings.push(w);
            }
            // Its histograms of too many bounds, signals of too many series,
            // and scrapes thinned over a long run, which its samples hold
            // coarsened, summed, or fewer.
            use goodput_core::prometheus::scrape::is_kept_scrapes_warning;
            let coarsened = s.run.warnings.iter().filter(|w| is_kept_scrapes_warning(w));
            result.warnings.extend(coarsened.cloned());
            attach_server_side(&mut result, ServerSide::Scraped(signals), &records, load);
            s.run.shard.as_ref().map(|i| i.index)
        }
        None => {
            attach_server_side(&mut result, ServerSide::Unscraped, &records, load);
            None
        }
    };
    result.client = client_cost(shards.iter().map(|s| s.run.client.as_ref()), &records);
    result.client_stalls = client_stalls(&shards, &offsets, &records);
    let spread = last_start - first_start;
    result.warnings.extend(merge_warnings(&shards, count, &missing, spread));
    result.merge = Some(MergeInfo {
        run: first.shard.as_ref().map(|s| s.run.clone()).unwrap_or_default(),
        count,
        start_at_unix_s: start_at,
        shards: merged_shards,
        missing,
        clock_uncertainty_s: spread,
        scrapes_from,
    });
    // What is written must read back: refused here, not on the next read.
    if let Some(what) = goodput_report::read::impossible(&result) {
        bail!(
            "the merged run has figures no run can have ({what}): a shard was edited or damaged; nothing was written"
        );
    }
    if !a.quiet {
        goodput_core::tell!(
            "merged {} shard{} of {count}: {} records; clocks began within {:.1} ms of each other",
            shards.len(),
            if shards.len() == 1 { "" } else { "s" },
            records.len(),
            spread * 1e3
        );
    }
    Ok(MergedRun { result, records })
}

/// Refuses shards judged by different SLOs, priced differently, or
/// reporting different percentiles, where merge is given none of its own
/// (`--slo`, `--gpu-hour-usd`/`--gpus`, `--percentiles`): the first
/// shard's had been used without a word.
fn check_same_judging(a: &MergeArgs, shards: &[Shard]) -> Result<()> {
    let first = &shards[0];
    let slo = |s: &Shard| s.run.config.judge.as_ref().and_then(|j| j.slo.clone());
    let pcts = |s: &Shard| s.run.summary.ttft_ms.percentiles.iter().map(|(p, _)| *p).collect::<Vec<f64>>();
    let cost = |s: &Shard| s.run.config.judge.as_ref().and_then(|j| j.cost);
    // A price of merge's own judges the merged run: a flag, or a config
    // where it gives one (one holding an SLO alone does not). Without one,
    // shards priced differently had been priced as the first, in silence.
    let own = crate::config::judging(&a.judge, 1)?;
    let price = |c: Option<CostConfig>| c.map_or("no price".to_string(), |c| format!("${}/GPU-hour", c.gpu_hour_usd));
    let gpus = |c: Option<CostConfig>| c.map_or("none".to_string(), |c| c.gpus.to_string());
    for s in &shards[1..] {
        if a.judge.slo.is_none() && slo(s) != slo(first) {
            let said = |x: Option<String>| x.map_or("none".to_string(), |x| format!("'{x}'"));
            bail!(
                "{} was judged by the SLO {} and {} by {}: pass --slo to merge to judge the merged run by one",
                first.path.display(),
                said(slo(first)),
                s.path.display(),
                said(slo(s))
            );
        }
        let (ca, cb) = (cost(first), cost(s));
        if own.cost.is_none() && ca.map(|c| c.gpu_hour_usd) != cb.map(|c| c.gpu_hour_usd) {
            bail!(
                "{} was priced at {} and {} at {}: pass --gpu-hour-usd (and --gpus) to merge to price the merged \
                 run once",
                first.path.display(),
                price(ca),
                s.path.display(),
                price(cb)
            );
        }
        if own.gpus.is_none() && ca.is_some() && cb.is_some() && ca.map(|c| c.gpus) != cb.map(|c| c.gpus) {
            bail!(
                "{} was priced for {} GPUs and {} for {}: pass --gpus to merge with the server's GPU count",
                first.path.display(),
                gpus(ca),
                s.path.display(),
                gpus(cb)
            );
        }
        if a.percentiles.is_none() && pcts(s) != pcts(first) {
            let said = |p: Vec<f64>| p.iter().map(|p| format!("p{p}")).collect::<Vec<_>>().join(",");
            bail!(
                "{} reports the percentiles {} and {} {}: pass --percentiles to merge to report the merged run at one \
                 set",
                first.path.display(),
                said(pcts(first)),
                s.path.display(),
                said(pcts(s))
            );
        }
    }
    Ok(())
}

/// The merge's own warnings: shards missing or stopped early, clocks that
/// began apart; then each shard's warning that its client was busy (`the client
/// kept ...`), named by shard.
fn merge_warnings(shards: &[Shard], count: u32, missing: &[u32], spread: f64) -> Vec<String> {
    let mut warnings = Vec::new();
    if !missing.is_empty() {
        warnings.push(format!(
            "merged {} of {count} shards: {} missing (--allow-partial), so the run holds only part of its load",
            count as usize - missing.len(),
            missing.iter().map(|i| format!("{i}/{count}")).collect::<Vec<_>>().join(", ")
        ));
    }
    for s in shards.iter().filter(|s| s.run.interrupted) {
        let i = s.run.shard.as_ref().map_or(0, |i| i.index);
        warnings.push(format!(
            "shard {i}/{count} was stopped early (Ctrl-C or SIGTERM): it holds what it measured until then"
        ));
    }
    // Shards measured by different builds: merged (the records are read
    // alike), but said, for a difference between them may be one of
    // measurement; the merged document names the first shard's build.
    let builds: std::collections::BTreeSet<String> = shards
        .iter()
        .map(|s| {
            let t = &s.run.tool;
            format!("{} {}", t.version, t.commit.as_deref().unwrap_or("(no commit)"))
        })
        .collect();
    if builds.len() > 1 {
        warnings.push(format!(
            "the shards were measured by {} goodput builds ({}): merged as one run, under the first shard's",
            builds.len(),
            builds.into_iter().map(|b| crate::output::shown(&b)).collect::<Vec<_>>().join(", ")
        ));
    }
    let urls: std::collections::BTreeSet<&str> =
        shards.iter().filter(|s| !s.run.target.embedded).map(|s| s.run.target.url.as_str()).collect();
    if urls.len() > 1 {
        warnings.push(format!(
            "the shards loaded {} addresses ({}): merged as one server's run, which holds only if they reach the \
             same server",
            urls.len(),
            urls.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    if spread > CLOCK_WARNING_S {
        warnings.push(format!(
            "the shards' clocks began up to {:.3} s apart (merge.shards[].start_offset_s says which was late): times \
             between shards are known only to within that",
            spread
        ));
    }
    for s in shards {
        let i = s.run.shard.as_ref().map_or(0, |i| i.index);
        warnings.extend(
            s.run
                .warnings
                .iter()
                .filter(|w| w.starts_with("the client kept") || w.starts_with("the client itself stalled"))
                .map(|w| format!("shard {i}: {w}")),
        );
    }
    warnings
}

/// The warning for scrapes that ended before the merged window did: the
/// scraping shard ended before the others, and the requests that ended
/// after its last scrape are outside the server's counters.
fn scrapes_end_early(
    signals: &goodput_core::prometheus::scrape::ServerSignals,
    window: &goodput_core::Window,
    records: &[RequestRecord],
) -> Option<String> {
    let last = signals.samples.last()?.t.as_secs_f64();
    let after = records.iter().filter(|r| !r.warmup && r.end.as_secs_f64() > last).count();
    (last < window.end_s && after > 0).then(|| {
        format!(
            "the server's scrapes end at {last:.2} s, before the merged window's end at {:.2} s (the scraping shard \
             finished first): {after} measured requests ended after the last scrape, outside the server's counters",
            window.end_s
        )
    })
}

/// How much earlier than `--start-at` a shard's clock may have begun (the
/// wait's timer against the wall clock) before merge refuses it.
const EARLY_START_S: f64 = 1.0;

/// Shards whose clocks began further apart than this are warned about.
const CLOCK_WARNING_S: f64 = 0.1;

/// The shards' own stalls on the merged clock: counted and summed over
/// the shards, the longest of them, and the merged records they flagged.
fn client_stalls(
    shards: &[Shard],
    offsets: &[std::time::Duration],
    records: &[RequestRecord],
) -> Option<goodput_core::ClientStalls> {
    let of = || shards.iter().filter_map(|s| s.run.client_stalls.as_ref());
    let threshold = of().map(|c| c.threshold_ms).fold(0.0, f64::max);
    let mut listed: Vec<goodput_core::ClientStall> = shards
        .iter()
        .zip(offsets)
        .filter_map(|(s, by)| Some((s.run.client_stalls.as_ref()?, *by)))
        .flat_map(|(c, by)| {
            c.stalls.iter().map(move |s| goodput_core::ClientStall { start: s.start + by, end: s.end + by })
        })
        .collect();
    listed.sort_by_key(|s| s.start);
    let mut merged =
        goodput_core::ClientStalls::over(&listed, std::time::Duration::from_secs_f64(threshold * 1e-3), records)?;
    merged.count = of().map(|c| c.count).sum();
    merged.total_ms = of().map(|c| c.total_ms).sum();
    merged.longest_ms = of().map(|c| c.longest_ms).fold(0.0, f64::max);
    Some(merged)
}

/// The client's cost summed over the shards (each its own process, often
/// its own machine): CPU and cores added up, the longest wall time, and CPU
/// per chunk and token over the merged records.
fn client_cost<'a>(
    costs: impl Iterator<Item = Option<&'a ClientCost>>,
    records: &[RequestRecord],
) -> Option<ClientCost> {
    let costs: Vec<&ClientCost> = costs.collect::<Option<Vec<_>>>()?;
    let cpu_s: f64 = costs.iter().map(|c| c.cpu_s).sum();
    let wall_s = costs.iter().map(|c| c.wall_s).fold(0.0, f64::max);
    let cores = costs.iter().map(|c| c.cores).sum();
    let cpus = costs.iter().map(|c| c.cpus).sum();
    Some(ClientCost::over(cpu_s, wall_s, cores, cpus, records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_clients_cost_is_summed_over_the_shards() {
        let cost = |cpu_s: f64, wall_s: f64| ClientCost {
            cpu_s,
            wall_s,
            cores: cpu_s / wall_s,
            cpus: 4,
            cpu_us_per_chunk: None,
            cpu_us_per_output_token: None,
        };
        let (a, b) = (cost(2.0, 10.0), cost(3.0, 12.0));
        let mut r = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.output_tokens = 1000;
        let sum = client_cost([Some(&a), Some(&b)].into_iter(), &[r]).unwrap();
        assert_eq!((sum.cpu_s, sum.wall_s, sum.cpus), (5.0, 12.0, 8));
        assert!((sum.cores - 0.45).abs() < 1e-12);
        assert_eq!(sum.cpu_us_per_output_token, Some(5000.0));
        assert_eq!(sum.cpu_us_per_chunk, None, "no chunks");
        assert_eq!(client_cost([Some(&a), None].into_iter(), &[]), None, "one shard unmetered");
    }
}
