//! CSV for spreadsheets and dataframes: `summary.csv` as one wide row (a
//! column per metric × statistic, unit in the name: `ttft_ms_p50`),
//! `requests.csv` with a row per request, `runs.csv` with a row per run of
//! `--runs N` (a sweep's: per run of each point), `points.csv` with a row per sweep
//! point (its SLO verdict and whether it was steady, then the summary
//! columns), `compare.csv` for comparisons (with `differences.csv`,
//! `verdicts.csv`, `notes.csv`, and `slo.csv`: each run's SLO and verdict);
//! `server_signals.csv` (a row per scrape) and `engine_series.csv` (a row per
//! simulated-engine sample) when the run holds those blocks.
//! Untrusted text is quoted and guarded against formula injection.

use super::{ExportError, Exporter, Rendered};
use crate::compare::Comparison;
use crate::escape::{csv_num, csv_text};
use crate::metric::{Dist, Scalar, Unit};
use goodput_core::doc::record::{CountSource, FailureKind};
use goodput_core::doc::sweep::{Load, SweepResult};
use goodput_core::{Outcome, RequestMetrics, RequestRecord, RunResult};

/// Every file `--csv` may write into its folder, whatever it renders: a
/// command checks them against the files it reads.
pub const FILE_NAMES: [&str; 11] = [
    "summary.csv",
    "runs.csv",
    "requests.csv",
    "server_signals.csv",
    "engine_series.csv",
    "points.csv",
    "compare.csv",
    "differences.csv",
    "verdicts.csv",
    "notes.csv",
    "slo.csv",
];

#[derive(Debug, Clone, Copy, Default)]
pub struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn render_run(&self, run: &RunResult) -> Result<Rendered, ExportError> {
        let ps = percentiles(std::iter::once(run));
        let fields = summary_fields(run, &ps);
        let mut files = vec![("summary.csv".to_string(), table(&names(&fields), &[cells(fields)]))];
        if let Some(rep) = &run.repeats {
            // A row per run of `--runs N`; the run id is the document's text.
            let (header, mut rows) = crate::repeats::csv_rows(rep);
            for row in &mut rows {
                row[2] = csv_text(&row[2]);
            }
            files.push(("runs.csv".to_string(), table(&header, &rows)));
        }
        if let Some(recs) = &run.requests {
            // An imported run's file cannot give some of these: their cells stay empty.
            let blank: Vec<&str> = ["ttfb_ms", "ttft_content_ms", "itl_max_ms", "client_queue_ms"]
                .into_iter()
                .filter(|c| !crate::read::peers::recomputed(run, &format!("summary.{c}")))
                .collect();
            files.push(("requests.csv".to_string(), requests_csv(recs.iter().map(|r| (None, r)), &blank)));
        }
        if let Some(s) = crate::server::of(run) {
            use crate::server::SignalsView;
            let (header, rows) = s.table();
            files.push(("server_signals.csv".to_string(), numbers(&header, rows)));
        }
        if let Some(e) = crate::engine::of(run) {
            use crate::engine::EngineView;
            let (header, rows) = e.table();
            files.push(("engine_series.csv".to_string(), numbers(&header, rows)));
        }
        Ok(Rendered::Folder(files))
    }

    fn render_sweep(&self, sweep: &SweepResult) -> Result<Rendered, ExportError> {
        let ps = percentiles(sweep.points.iter().map(|p| &p.result));
        let mut header = Vec::new();
        let mut rows = Vec::new();
        for (i, p) in sweep.points.iter().enumerate() {
            let (kind, value) = match p.load {
                Load::Concurrency(c) => ("concurrency", c as f64),
                Load::Rate(r) => ("rate", r),
            };
            let a = &sweep.analysis;
            let is =
                |x: &Option<goodput_core::doc::sweep::PointRef>| bool_cell(x.as_ref().is_some_and(|x| x.index == i));
            let mut fields = vec![
                ("point".to_string(), i.to_string()),
                ("load_kind".to_string(), kind.to_string()),
                ("load_value".to_string(), csv_num(Some(value))),
                ("origin".to_string(), csv_text(&p.origin)),
                // The SLO's verdict, and beside it whether the point was a
                // steady state: the analysis counts a point as meeting the
                // SLO only where both are true (a row of `meets_slo` true
                // had stood alone for a point it did not count).
                ("meets_slo".to_string(), opt_bool(sweep.point_meets_slo(i))),
                ("steady".to_string(), bool_cell(goodput_core::doc::sweep::steady(&p.result))),
                ("saturation".to_string(), is(&a.saturation)),
                ("recommended".to_string(), is(&a.recommended)),
            ];
            fields.extend(summary_fields(&p.result, &ps));
            if header.is_empty() {
                header = names(&fields);
            }
            rows.push(cells(fields));
        }
        if header.is_empty() {
            header = vec!["point".to_string(), "load_kind".to_string(), "load_value".to_string()];
        }
        let mut files = vec![("points.csv".to_string(), table(&header, &rows))];
        if let Some(runs) = sweep_runs(sweep) {
            files.push(("runs.csv".to_string(), runs));
        }
        if sweep.points.iter().any(|p| p.result.requests.is_some()) {
            let recs = sweep
                .points
                .iter()
                .enumerate()
                .flat_map(|(i, p)| p.result.requests.iter().flatten().map(move |r| (Some(i), r)));
            files.push(("requests.csv".to_string(), requests_csv(recs, &[])));
        }
        Ok(Rendered::Folder(files))
    }

    fn render_compare(&self, c: &Comparison, _runs: &[&RunResult]) -> Result<Rendered, ExportError> {
        let mut header = vec!["metric".to_string(), "unit".to_string()];
        for (i, l) in c.labels.iter().enumerate() {
            header.push(l.clone());
            if i > 0 {
                header.push(format!("change_{l}"));
                header.push(format!("change_pp_{l}"));
                header.push(format!("p_{l}"));
                header.push(format!("call_{l}"));
            }
        }
        let rows: Vec<Vec<String>> = c
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![csv_text(&r.metric.path()), csv_text(r.unit.name())];
                for (i, v) in r.values.iter().enumerate() {
                    row.push(csv_num(*v));
                    if i > 0 {
                        row.push(csv_num(r.changes[i]));
                        // A share's change in percentage points (blank on other figures).
                        row.push(csv_num(r.changes_pp.get(i).copied().flatten()));
                        let sig = r.significance.get(i).and_then(Option::as_ref);
                        row.push(csv_num(sig.and_then(|s| s.p_value)));
                        // A change left out because the run was judged by
                        // another SLO says so (its cell had been blank, as a
                        // missing figure's is).
                        let other = r.other_slo.contains(&i).then_some("other_slo");
                        row.push(csv_text(other.unwrap_or(sig.map_or("", |s| match s.call {
                            crate::compare::Call::Different => "different",
                            crate::compare::Call::NotShown => "not_shown",
                            crate::compare::Call::CannotTell => "cannot_tell",
                        }))));
                    }
                }
                row
            })
            .collect();
        let mut files = vec![("compare.csv".to_string(), table(&header, &rows))];
        if !c.differences.is_empty() {
            let header: Vec<String> = std::iter::once("setting".to_string()).chain(c.labels.iter().cloned()).collect();
            let rows: Vec<Vec<String>> = c
                .differences
                .iter()
                .map(|d| std::iter::once(&d.path).chain(&d.values).map(|v| csv_text(v)).collect())
                .collect();
            files.push(("differences.csv".to_string(), table(&header, &rows)));
        }
        if !c.verdicts.is_empty() {
            let header: Vec<String> =
                ["rule", "run", "baseline", "value", "change", "verdict", "reason"].map(String::from).to_vec();
            let rows: Vec<Vec<String>> = c
                .verdicts
                .iter()
                .map(|v| {
                    vec![
                        csv_text(&v.rule),
                        csv_text(c.labels.get(v.run).map(String::as_str).unwrap_or("")),
                        csv_num(v.baseline),
                        csv_num(v.value),
                        csv_num(v.change),
                        csv_text(match v.verdict {
                            crate::compare::Verdict::Pass => "pass",
                            crate::compare::Verdict::Fail => "fail",
                            crate::compare::Verdict::Unjudged => "unjudged",
                        }),
                        csv_text(&v.reason),
                    ]
                })
                .collect();
            files.push(("verdicts.csv".to_string(), table(&header, &rows)));
        }
        // Each run's SLO and its verdict: a row per run, blank where it had none.
        if !c.slo.is_empty() {
            let header: Vec<String> = ["run", "slo", "pass", "misses"].map(String::from).to_vec();
            let rows: Vec<Vec<String>> = c
                .labels
                .iter()
                .zip(&c.slo)
                .map(|(l, s)| {
                    vec![
                        csv_text(l),
                        csv_text(s.spec.as_deref().unwrap_or("")),
                        s.pass.map_or(String::new(), |p| p.to_string()),
                        csv_text(&s.misses.join("; ")),
                    ]
                })
                .collect();
            files.push(("slo.csv".to_string(), table(&header, &rows)));
        }
        // What the terminal, Markdown and HTML say above the table (other
        // work, other SLOs, a cache an earlier run warmed, a measurement
        // beside a simulation): the folder had left it out.
        if let Some(n) = &c.note {
            files.push(("notes.csv".to_string(), table(&["note".to_string()], &[vec![csv_text(n)]])));
        }
        Ok(Rendered::Folder(files))
    }
}

/// `runs.csv` of a sweep with repeated points (`sweep --runs N`): a row
/// per run of each point, its point's number and load first; the figures
/// are those any repeated point has, in `compare`'s order.
fn sweep_runs(sweep: &SweepResult) -> Option<Vec<u8>> {
    let repeated: Vec<(usize, &goodput_core::doc::sweep::SweepPoint, &goodput_core::doc::repeats::Repeats)> =
        sweep.points.iter().enumerate().filter_map(|(i, p)| Some((i, p, p.result.repeats.as_ref()?))).collect();
    if repeated.is_empty() {
        return None;
    }
    let figures: Vec<String> = crate::repeats::figures()
        .iter()
        .map(|m| m.path())
        .filter(|f| repeated.iter().any(|(_, _, rep)| rep.spread.iter().any(|s| &s.figure == f)))
        .collect();
    let mut header: Vec<String> =
        ["point", "load_kind", "load_value", "run", "seed", "run_id", "completed", "failed"].map(String::from).into();
    header.extend(figures.iter().cloned());
    let mut rows = Vec::new();
    for (i, p, rep) in repeated {
        let (kind, value) = match p.load {
            Load::Concurrency(c) => ("concurrency", c as f64),
            Load::Rate(r) => ("rate", r),
        };
        for run in &rep.runs {
            let mut row = vec![
                i.to_string(),
                kind.to_string(),
                csv_num(Some(value)),
                run.index.to_string(),
                run.seed.to_string(),
                csv_text(&run.run_id),
                run.completed.to_string(),
                run.failed.to_string(),
            ];
            row.extend(figures.iter().map(|f| csv_num(run.figures.get(f).copied())));
            rows.push(row);
        }
    }
    Some(table(&header, &rows))
}

/// Header names are ours, but compare headers carry run labels (file
/// names), so every header cell is escaped like data.
fn table(header: &[String], rows: &[Vec<String>]) -> Vec<u8> {
    let mut o = String::new();
    let h: Vec<String> = header.iter().map(|n| csv_text(n)).collect();
    o.push_str(&h.join(","));
    o.push('\n');
    for r in rows {
        o.push_str(&r.join(","));
        o.push('\n');
    }
    o.into_bytes()
}

/// A table of numbers, a missing value as an empty cell.
fn numbers(header: &[String], rows: Vec<Vec<Option<f64>>>) -> Vec<u8> {
    let rows: Vec<Vec<String>> = rows.into_iter().map(|r| r.into_iter().map(csv_num).collect()).collect();
    table(header, &rows)
}

fn names(fields: &[(String, String)]) -> Vec<String> {
    fields.iter().map(|(n, _)| n.clone()).collect()
}

fn cells(fields: Vec<(String, String)>) -> Vec<String> {
    fields.into_iter().map(|(_, v)| v).collect()
}

fn bool_cell(b: bool) -> String {
    if b { "true" } else { "false" }.to_string()
}

fn opt_bool(b: Option<bool>) -> String {
    b.map(bool_cell).unwrap_or_default()
}

/// Every percentile any of the runs was analysed with, in rising order, so
/// the rows of a sweep share one header.
fn percentiles<'a>(runs: impl Iterator<Item = &'a RunResult>) -> Vec<f64> {
    let mut ps: Vec<f64> = Vec::new();
    for r in runs {
        for d in Dist::ALL {
            for (p, _) in &d.of(&r.summary).percentiles {
                if !ps.contains(p) {
                    ps.push(*p);
                }
            }
        }
    }
    ps.sort_by(f64::total_cmp);
    ps
}

/// The wide summary row: (column, escaped cell).
fn summary_fields(r: &RunResult, ps: &[f64]) -> Vec<(String, String)> {
    let s = &r.summary;
    let q = &s.requests;
    let mut f: Vec<(String, String)> = Vec::new();
    let mut put = |name: &str, v: String| f.push((name.to_string(), v));
    put("kind", csv_text(&r.kind));
    put("model", csv_text(&r.target.model));
    put("url", csv_text(&r.target.url));
    put("api", csv_text(&r.target.api));
    put("server", csv_text(r.target.server.as_deref().unwrap_or("")));
    put("started_unix_s", csv_num(Some(r.started_unix_s)));
    put("interrupted", bool_cell(r.interrupted));
    put("window_s", csv_num(Some(r.window.duration_s)));
    put("requests_sent", q.sent.to_string());
    put("requests_completed", q.completed.to_string());
    put("requests_failed", q.failed.to_string());
    put("requests_cancelled", q.cancelled.to_string());
    put("requests_warmup", q.warmup.to_string());
    put("error_rate", csv_num(crate::metric::Metric::Scalar(Scalar::ErrorRate).value(r)));
    for k in FailureKind::ALL {
        put(&format!("failed_{}", k.as_str()), q.errors_by_kind.get(k.as_str()).copied().unwrap_or(0).to_string());
    }
    let th = &s.throughput;
    put("requests_per_s", csv_num(Some(th.requests_per_s)));
    put("input_tokens_per_s", csv_num(Some(th.input_tokens_per_s)));
    put("output_tokens_per_s", csv_num(Some(th.output_tokens_per_s)));
    put("total_tokens_per_s", csv_num(Some(th.total_tokens_per_s)));
    put("peak_output_tokens_per_s", csv_num(crate::read::peers::peak_output_tokens_per_s(r)));
    put("in_flight_mean", csv_num(Some(s.in_flight.mean)));
    put("in_flight_peak", s.in_flight.peak.to_string());
    put("input_tokens", s.tokens.input.to_string());
    put("output_tokens", s.tokens.output.to_string());
    put("output_tokens_all", s.tokens.output_all.to_string());
    put("prompt_extra_mean", csv_num(s.tokens.prompt_extra.as_ref().map(|e| e.mean)));
    let g = s.goodput.as_ref();
    put("goodput_requests_per_s", csv_num(g.map(|g| g.requests_per_s)));
    put("goodput_output_tokens_per_s", csv_num(g.map(|g| g.output_tokens_per_s)));
    put("slo_attainment", csv_num(g.map(|g| g.slo_attainment)));
    put("useful_work", csv_num(g.map(|g| g.useful_work)));
    put("good_requests", g.map(|g| g.good_requests.to_string()).unwrap_or_default());
    put("slo", csv_text(r.slo.as_ref().map_or("", |s| s.spec.as_str())));
    // The whole verdict, and the percentile objectives' alone (empty where
    // the SLO has none): the latter's column had held the whole verdict,
    // `false` for an SLO of limits alone whose attainment fell short.
    put("slo_pass", opt_bool(r.slo.as_ref().map(|s| s.pass)));
    let objectives = r.slo.as_ref().filter(|s| !s.objectives.is_empty());
    put("slo_objectives_pass", opt_bool(objectives.map(|s| s.objectives.iter().all(|o| o.pass))));
    // The limits' attainment the verdict held to its target: beside
    // objectives not `slo_attainment`, which counts every threshold (the
    // verdict's share had been in no column). Empty without limits, and
    // for a document saved before the limits were counted alone beside
    // objectives, whose verdict counted every threshold: `slo_attainment`.
    put("slo_limits_attainment", csv_num(r.slo.as_ref().and_then(|s| s.limits_attainment())));
    let c = r.cost.as_ref();
    put("gpu_hour_usd", csv_num(c.map(|c| c.gpu_hour_usd)));
    put("gpus", c.map(|c| c.gpus.to_string()).unwrap_or_default());
    put("usd_per_hour", csv_num(c.map(|c| c.usd_per_hour)));
    put("usd_per_million_output_tokens", csv_num(c.and_then(|c| c.usd_per_million_output_tokens)));
    put("usd_per_million_total_tokens", csv_num(c.and_then(|c| c.usd_per_million_total_tokens)));
    put("usd_per_million_input_tokens", csv_num(c.and_then(|c| c.usd_per_million_input_tokens)));
    put("usd_per_request", csv_num(c.and_then(|c| c.usd_per_request)));
    put("usd_per_million_good_output_tokens", csv_num(c.and_then(|c| c.usd_per_million_good_output_tokens)));
    put("usd_per_session", csv_num(c.and_then(|c| c.usd_per_session)));
    let ss = s.sessions.as_ref();
    put("sessions_started", ss.map(|s| s.started.to_string()).unwrap_or_default());
    put("sessions_completed", ss.map(|s| s.completed.to_string()).unwrap_or_default());
    put("sessions_per_s", csv_num(ss.map(|s| s.per_s)));
    let q = s.quality.as_ref();
    let mean = |m: Option<&goodput_core::quality::ScoreMean>| csv_num(m.map(|m| m.mean));
    put("quality_requests_scored", q.map(|q| q.scores.requests_scored.to_string()).unwrap_or_default());
    put("quality_exact_mean", mean(q.and_then(|q| q.scores.exact.as_ref())));
    put("quality_number_mean", mean(q.and_then(|q| q.scores.number.as_ref())));
    put("quality_rouge_l_mean", mean(q.and_then(|q| q.scores.rouge_l.as_ref())));
    put("quality_chrf_mean", mean(q.and_then(|q| q.scores.chrf.as_ref())));
    put("quality_bleu", csv_num(q.and_then(|q| q.scores.bleu)));
    put("quality_chrf_corpus", csv_num(q.and_then(|q| q.scores.chrf_corpus)));
    put("quality_identical_share", csv_num(q.and_then(|q| q.consistency.as_ref()).map(|c| c.identical_share)));
    let rt = &s.ratings;
    let band = |x: &Option<goodput_core::analysis::ratings::Rated>| {
        x.map(|x| format!("{:?}", x.band).to_lowercase()).unwrap_or_default()
    };
    put("ttft_p50_rating", band(&rt.ttft_p50));
    put("tpot_p50_rating", band(&rt.tpot_p50));
    put("times_reading_speed", csv_num(rt.times_reading_speed));
    put("shared_read_chunks", s.shared_read_chunks.to_string());
    // The client's own truth: times that are only upper bounds, and its stalls.
    put("bound_chunks", s.bound_chunks.to_string());
    put("ttft_bound_requests", s.ttft_bound_requests.to_string());
    let st = r.client_stalls.as_ref();
    put("client_stalls", st.map(|s| s.count.to_string()).unwrap_or_default());
    put("client_stalled_requests", st.map(|s| s.requests.to_string()).unwrap_or_default());
    let pc = s.tokens.per_chunk.as_ref();
    put("tokens_per_chunk_mean", csv_num(pc.map(|c| c.mean)));
    put("tokens_per_chunk_max", pc.map(|c| c.max.to_string()).unwrap_or_default());
    put("multi_token_chunk_share", csv_num(pc.map(|c| c.multi_token_share)));
    let e = r.energy.as_ref();
    put("joules_per_output_token", csv_num(e.and_then(|e| e.joules_per_output_token)));
    put("mean_power_w", csv_num(e.and_then(|e| e.mean_power_w)));
    put("output_tokens_per_s_per_provisioned_mw", csv_num(e.and_then(|e| e.output_tokens_per_s_per_provisioned_mw)));
    // Every row of the latency table, present in this run or not, so every
    // run and sweep point has the same columns: `ttft_ms_p50`, and a count
    // without the unit, `ttft_count`.
    let latency = crate::table::latency_with(s, ps);
    for row in &latency.rows {
        // `error_adjusted.ttft_ms` → `error_adjusted_ttft_ms`.
        let key = row.key.replace('.', "_");
        let stem = key.trim_end_matches("_ms");
        for (c, v) in latency.columns.iter().zip(&row.cells) {
            let name = if c.unit == Unit::Ms { &key } else { stem };
            put(&format!("{name}_{}", c.key), csv_num(v.num()));
        }
    }
    intervals_fields(&mut put, r, ps);
    f
}

/// The intervals (`summary.intervals`), every column present whether the
/// run has them or not: `confidence`, then `ttft_ms_p99_lo` and `_hi` for
/// each per-request distribution and percentile, and each rate's and
/// share's.
fn intervals_fields(put: &mut impl FnMut(&str, String), r: &RunResult, ps: &[f64]) {
    use goodput_core::analysis::interval::Interval;
    let iv = r.summary.intervals.as_ref();
    put("confidence", csv_num(iv.map(|i| i.confidence)));
    let mut pair = |name: &str, i: Option<&Interval>| {
        put(&format!("{name}_lo"), csv_num(i.and_then(|i| i.lo)));
        put(&format!("{name}_hi"), csv_num(i.and_then(|i| i.hi)));
    };
    for d in Dist::ALL {
        if !goodput_core::analysis::interval::PER_REQUEST_KEYS.contains(&d.key()) {
            continue;
        }
        let key = d.key().replace('.', "_");
        for &p in ps {
            pair(
                &format!("{key}_{}", goodput_core::analysis::stats::percentile_key(p)),
                iv.and_then(|i| i.percentile(d.key(), p)),
            );
        }
    }
    pair("requests_per_s", iv.map(|i| &i.throughput.requests_per_s));
    pair("output_tokens_per_s", iv.map(|i| &i.throughput.output_tokens_per_s));
    let g = iv.and_then(|i| i.goodput.as_ref());
    pair("goodput_requests_per_s", g.map(|g| &g.requests_per_s));
    pair("goodput_output_tokens_per_s", g.map(|g| &g.output_tokens_per_s));
    pair("slo_attainment", g.map(|g| &g.slo_attainment));
    // Beside objectives, its own; of limits alone, goodput's share's.
    let limits = match (g, r.slo.as_ref().and_then(|s| s.limits_attainment())) {
        (Some(g), Some(_)) if r.slo.as_ref().is_some_and(|s| s.attains_by_limits()) => g.limits_attainment.as_ref(),
        (Some(g), Some(_)) => Some(&g.slo_attainment),
        _ => None,
    };
    pair("slo_limits_attainment", limits);
}

fn source(s: CountSource) -> String {
    s.to_string()
}

/// One row per request; `point` is the sweep point it belongs to. The
/// columns named in `blank` are left empty.
fn requests_csv<'a>(recs: impl Iterator<Item = (Option<usize>, &'a RequestRecord)>, blank: &[&str]) -> Vec<u8> {
    let mut recs = recs.peekable();
    let with_point = recs.peek().is_some_and(|(p, _)| p.is_some());
    let with_session = recs.peek().is_some_and(|(_, r)| r.session.is_some());
    let with_model = recs.peek().is_some_and(|(_, r)| r.model.is_some());
    let mut header: Vec<String> = Vec::new();
    if with_point {
        header.push("point".into());
    }
    if with_session {
        header.extend(["session", "turn", "turns"].map(String::from));
    }
    if with_model {
        header.push("model".into());
    }
    header.extend(
        [
            "id",
            "warmup",
            "scheduled_ms",
            "sent_ms",
            "client_queue_ms",
            "ttfb_ms",
            "ttft_ms",
            "ttft_content_ms",
            "e2e_ms",
            "tpot_ms",
            "itl_max_ms",
            "chunks",
            "input_tokens",
            "output_tokens",
            "input_tokens_source",
            "output_tokens_source",
            "chunk_tokens_source",
            "bound_chunks",
            "ttft_bound",
            "client_stalled",
            "http_status",
            "finish_reason",
            "outcome",
            "failure_kind",
            "message",
        ]
        .map(String::from),
    );
    // From integer nanoseconds, so a cell reads 200.899871 rather than
    // 200.89987100000002.
    let d = |v: Option<std::time::Duration>| csv_num(v.map(|d| d.as_nanos() as f64 / 1e6));
    let rows: Vec<Vec<String>> = recs
        .map(|(point, r)| {
            let (outcome, kind, message) = match &r.outcome {
                Outcome::Success => ("success", String::new(), String::new()),
                Outcome::Failed { kind, message } => ("failed", kind.to_string(), csv_text(message)),
                Outcome::Cancelled => ("cancelled", String::new(), String::new()),
            };
            let chunk_source = serde_json::to_value(r.chunk_tokens_source)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            let mut row = Vec::with_capacity(header.len());
            if with_point {
                row.push(point.map(|p| p.to_string()).unwrap_or_default());
            }
            if with_session {
                let s = r.session;
                row.extend(
                    [s.map(|s| s.id), s.map(|s| s.turn.into()), s.map(|s| s.turns.into())]
                        .map(|v| v.map(|v: u64| v.to_string()).unwrap_or_default()),
                );
            }
            if with_model {
                row.push(r.model.as_deref().map(csv_text).unwrap_or_default());
            }
            row.extend([
                r.id.to_string(),
                bool_cell(r.warmup),
                d(Some(r.scheduled)),
                d(Some(r.sent)),
                d(Some(r.client_queue())),
                d(r.ttfb()),
                d(r.ttft()),
                d(r.ttft_content()),
                d(r.e2e()),
                d(r.tpot()),
                d(r.itl_max()),
                r.chunks.len().to_string(),
                r.input_tokens.to_string(),
                r.output_tokens.to_string(),
                source(r.input_tokens_source),
                source(r.output_tokens_source),
                csv_text(&chunk_source),
                r.bound_chunks.to_string(),
                bool_cell(r.ttft_bound),
                bool_cell(r.client_stalled),
                r.http_status.map(|s| s.to_string()).unwrap_or_default(),
                csv_text(r.finish_reason.as_deref().unwrap_or("")),
                outcome.to_string(),
                kind,
                message,
            ]);
            row
        })
        .collect();
    let mut rows = rows;
    for i in header.iter().enumerate().filter(|(_, h)| blank.contains(&h.as_str())).map(|(i, _)| i) {
        for row in &mut rows {
            row[i].clear();
        }
    }
    table(&header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::analysis::assemble::{assemble, Assembly};
    use goodput_core::analysis::stability::Stability;
    use goodput_core::doc::result::{Target, Tool};
    use goodput_core::doc::sweep::{SweepAnalysis, SweepPoint};

    /// `points.csv` has a `steady` column beside `meets_slo`: a point that
    /// met the SLO but was not steady, which the analysis does not count as
    /// meeting it, is told apart from one that was.
    #[test]
    fn points_csv_says_whether_each_point_was_steady() {
        let point = |load: f64, steady: bool| {
            let a = Assembly {
                tool: Tool { name: "goodput".into(), version: "0".into(), commit: None },
                kind: "bench",
                run_id: String::new(),
                started_unix_s: 0.0,
                interrupted: false,
                config: Default::default(),
                target: Target::default(),
                include_requests: false,
            };
            let mut result = assemble(a, &[], &Default::default());
            result.summary.requests.completed = 10;
            result.summary.stability = Some(Stability { steady, ..Stability::default() });
            SweepPoint { load: Load::Rate(load), origin: "grid".into(), result }
        };
        let sw = SweepResult {
            schema: goodput_core::SCHEMA.into(),
            tool: Tool { name: "goodput".into(), version: "0".into(), commit: None },
            kind: "sweep".into(),
            started_unix_s: 0.0,
            interrupted: false,
            config: Default::default(),
            target: Target::default(),
            points: vec![point(10.0, true), point(80.0, false)],
            analysis: SweepAnalysis::default(),
        };
        let Rendered::Folder(files) = Csv.render_sweep(&sw).unwrap() else { panic!("a folder") };
        let text = String::from_utf8(files[0].1.clone()).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = header.iter().position(|h| *h == "steady").expect("a steady column");
        let steady: Vec<String> = lines.map(|l| l.split(',').nth(col).unwrap().to_string()).collect();
        assert_eq!(steady, ["true", "false"]);
    }
}
